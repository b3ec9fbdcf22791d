// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "journal.h"
#include "jsonline.h"
#include "note.h"
#include "seqset.h"
#include "tlog.h"
#include "verify.h"

/* The largest string a line can carry, decoded (a cert or a checkpoint note). */
#define FIELD_MAX (JSONLINE_MAX + 1)
#define READ_CHUNK (64 * 1024)
/* A checkpoint note: three text lines and a few signature lines, far below this. */
#define EXT_NOTE_MAX 4096
#define LINE_REF_MAX 64

static const char *const log_start_keys[] = {
	"seq",
	"prev",
	"ts",
	"type",
	"origin",
	"run_id",
	"key",
	"host_key",
	"cert",
	"checkpoint_lines",
	"checkpoint_secs",
	"format",
};
static const char *const checkpoint_keys[] = {
	"seq", "prev", "ts", "type", "reason", "size", "root", "note",
};
static const char *const writer_restart_keys[] = {
	"seq", "prev", "ts", "type", "origin", "key", "cert", "torn", "unsealed", "kseq_below",
};
static const char *const reasons[] = {
	"lines", "time", "heartbeat", "loss", "anomaly", "rotate", "restart", "final",
};

/* A line reader over a plain file (read) or a gzip one (zlib). */
struct reader {
	gzFile gz;   /* a .gz segment */
	int fd;	     /* a plain file; -1 when gz */
	mode_t mode; /* the file's type, when reader_open refused it */
	const char *path;
	uint64_t line; /* lines returned so far */
	size_t start, end;
	bool eof;
	char buf[READ_CHUNK + JSONLINE_MAX + 1];
};

enum read_result {
	READ_LINE = 1,
	READ_EOF = 0,
	READ_PARTIAL = 2, /* bytes at the end with no "\n" */
};

struct ext_checkpoint {
	uint64_t size;
	uint8_t root[TLOG_HASH_SIZE];
	unsigned int file;  /* index in opts->checkpoints */
	uint64_t file_line; /* where its note starts */
	/*
	 * The note, kept only when log_start's run key does not sign it: a run key that a later
	 * writer_restart names may, and which one is in force for size is known only once the log
	 * reaches it (ext_signed). NULL when log_start's key signs it.
	 */
	char *note;
	uint32_t len, text_len;
	int err; /* note_open()'s under log_start's key */
};

/* A run key of the log: log_start's, then each writer_restart's. */
struct run_key {
	uint32_t hash;
	uint8_t pub[32];
	uint64_t line; /* 1-based: of log_start or of the writer_restart */
};

struct verifier {
	const struct verify_opts *o;
	struct verify_result *r;
	struct note_verifier host, run; /* run: the run key in force (the last of keys) */
	bool have_run;
	uint64_t checkpoint_secs;
	struct run_key *keys;
	size_t n_keys, keys_cap;
	char first_file[PATH_MAX]; /* the file holding line 1 (log_start), for errors there */

	struct tlog_tree tree;
	uint8_t prev[TLOG_HASH_SIZE];
	uint64_t lines;

	/* where the current line is, for errors */
	const char *file;
	uint64_t file_line;

	int64_t last_cp_ts;    /* of the last checkpoint, or of log_start */
	uint64_t last_cp_line; /* 1-based, 0: none yet */
	bool last_cp_final;
	uint64_t rotate_line; /* the current line, if a rotate checkpoint; else 0 */
	/*
	 * A rotate checkpoint with more lines after it in its file (1-based; 0: none since the last
	 * writer_restart): the rename failed, and that writer rotates no more.
	 */
	uint64_t rotation_stopped;
	uint64_t run_end_line;
	char run_end_file[PATH_MAX];
	uint64_t run_end_file_line;
	uint64_t lost; /* run_end.lost */

	struct ext_checkpoint *ext;
	size_t n_ext, next_ext;
	/*
	 * An exported note of size S matched the lines so far, and the log goes on: the writer
	 * exports notes of its checkpoint lines only (and one of the seal line), so line seq S must
	 * be a checkpoint. ext[cp_due - 1] is that note; 0: none due.
	 */
	size_t cp_due;
	/* a loss or anomaly line (its 1-based line) needs a checkpoint of that reason next */
	const char *cp_after_type;
	uint64_t cp_after_line;

	/* the last writer_restart (1-based line, 0: none), and its kseq_below */
	uint64_t restart_line;
	uint64_t restart_below;
	bool restart_cp_due; /* it was the last line: a "restart" checkpoint must come next */
	/*
	 * The policy in force: run_start's digest and mode (each "" where it names none), then
	 * each policy_change's; pol_line is the line that set them (0: run_start or none).
	 */
	char pol_sha[65];
	char pol_mode[8];
	uint64_t pol_line;
	/*
	 * A switch announced (policy_switch_begin, its 1-based line; 0: none open) and not yet
	 * closed by its policy_change or a policy_switch_abort: its digest, mode and generation.
	 * era_high: the highest generation a begin or a policy_change named (1: run_start's).
	 */
	uint64_t sw_line;
	char sw_sha[65];
	char sw_mode[8];
	uint64_t sw_era;
	uint64_t era_high;
	/*
	 * The generation in force: run_start's (1), then each policy_change's; 0: unknown (a
	 * segment without the run_start, a policy_change that names no era). A begin's prev_era
	 * must be it: the writer that takes over a switch cut short trusts prev_era to tell an
	 * aborted switch from one that happened.
	 */
	uint64_t era_now;
	uint64_t loss_before_restart; /* the loss declared before it */
	/*
	 * The missing kseq values reported so far below the last writer_restart's kseq_below, and
	 * at or above it: run_end.restart_gap can lie only in the first (what dead writers took).
	 */
	uint64_t gap_below, gap_above;
	/*
	 * A line that is not canonical, held: it is a torn line if the next one is a writer_restart
	 * saying so (torn_accept), else the log is invalid there with its parse error. It is in the
	 * tree, prev and lines already.
	 */
	struct {
		bool pending;
		uint64_t line, file_line;
		size_t len, off;
		const char *why;
	} torn;
	uint64_t torn_before; /* the current line follows a torn line of that many bytes; 0: not */
	/* resume: LOG's last bytes without "\n", a whole line (newline_missing) or a torn one */
	bool newline_missing;
	uint64_t log_dev, log_ino, log_size; /* LOG as read (plain: it is never compressed) */
	uint64_t torn_last;

	/* kernel sequence numbers seen, and the first ranges of those no line carries */
	struct seqset kseqs;
	struct seqset_list missing;
	/* the largest loss.kseq_below so far, and its line (0: none yet) */
	uint64_t loss_below;
	uint64_t loss_below_line;
	/* the loss_ranges record (line 0: none), compared with missing at the end */
	uint64_t lr_line;
	char lr_file[PATH_MAX];
	uint64_t lr_file_line;
	uint64_t lr_missing;
	bool lr_truncated;
	size_t lr_n;
	struct seqset_range lr[SEQSET_RANGES_LISTED];

	struct jsonline jl;
	char field[FIELD_MAX];
	char text[FIELD_MAX];
};

static int verr(struct verifier *v, int status, uint64_t line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Record the first error: status 1 (invalid) or 4 (could not verify), at log line `line`
 * (1-based; 0 for none) of the current file.
 */
static int verr(struct verifier *v, int status, uint64_t line, const char *fmt, ...)
{
	struct verify_result *r = v->r;
	va_list ap;

	if (r->status == VERIFY_INVALID || r->status == VERIFY_ERROR)
		return -ECANCELED;
	r->status = status;
	r->err_line = line;
	r->err_has_seq = line > 0;
	r->err_seq = line ? line - 1 : 0;
	snprintf(r->err_file, sizeof(r->err_file), "%s", v->file ? v->file : "");
	r->err_file_line = v->file_line;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return -ECANCELED;
}

/* An error at the current line. */
#define BAD(v, ...) verr((v), VERIFY_INVALID, (v)->lines + 1, __VA_ARGS__)

const char *verify_file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFIFO:
		return "a FIFO";
	case S_IFDIR:
		return "a directory";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	default:
		return "not a regular file";
	}
}

/*
 * Open path for reading, as gzip (gz) or as it is. Only a regular file: opened with O_NONBLOCK so
 * a FIFO planted at the path cannot hang open() (nor gzopen's read, which would wait for a
 * writer), then checked with fstat. -EINVAL with rd->mode set when it is not a regular file;
 * -EMEDIUMTYPE when gz and the file is not gzip (zlib would pass it through as it is).
 */
static int reader_open(struct reader *rd, const char *path, bool gz)
{
	struct stat st;
	int fd, flags, err;

	memset(rd, 0, offsetof(struct reader, buf));
	rd->fd = -1;
	rd->path = path;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rd->mode = st.st_mode;
		err = -EINVAL;
		goto out_close;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
		err = -errno;
		goto out_close;
	}
	if (!gz) {
		rd->fd = fd;
		return 0;
	}
	rd->gz = gzdopen(fd, "rb");
	if (!rd->gz) {
		err = -ENOMEM;
		goto out_close;
	}
	gzbuffer(rd->gz, READ_CHUNK);
	/* reads the header; 1 when zlib found no gzip stream and would copy the bytes */
	if (gzdirect(rd->gz)) {
		gzclose_r(rd->gz);
		rd->gz = NULL;
		return -EMEDIUMTYPE;
	}
	return 0;
out_close:
	close(fd);
	return err;
}

static void reader_close(struct reader *rd)
{
	if (rd->gz)
		gzclose_r(rd->gz);
	else if (rd->fd >= 0)
		close(rd->fd);
	rd->gz = NULL;
	rd->fd = -1;
}

/* Up to n bytes into buf: their count, 0 at the end; -EIO (read error) or -EBADMSG (corrupt). */
static int reader_fill(struct reader *rd, char *buf, unsigned int n, const char **why)
{
	ssize_t got;
	int zerr;

	if (rd->gz) {
		got = gzread(rd->gz, buf, n);
		if (got < 0 || (got == 0 && gzerror(rd->gz, &zerr) && zerr != Z_OK)) {
			*why = gzerror(rd->gz, &zerr);
			if (zerr == Z_ERRNO) {
				*why = strerror(errno);
				return -EIO;
			}
			return -EBADMSG;
		}
		return (int)got;
	}
	do
		got = read(rd->fd, buf, n);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		*why = strerror(errno);
		return -EIO;
	}
	return (int)got;
}

/*
 * The next line (without its "\n") into *line and *len. A line longer than JSONLINE_MAX is returned
 * as its first JSONLINE_MAX + 1 bytes, for the parser to refuse. -EIO with *why on a read error
 * (a truncated or corrupt compressed segment).
 */
static int reader_next(struct reader *rd, const char **line, size_t *len, const char **why)
{
	for (;;) {
		char *nl = memchr(rd->buf + rd->start, '\n', rd->end - rd->start);
		size_t have = rd->end - rd->start;
		int n;

		if (nl) {
			*line = rd->buf + rd->start;
			*len = (size_t)(nl - *line);
			rd->start += *len + 1;
			rd->line++;
			return READ_LINE;
		}
		if (have > JSONLINE_MAX) {
			*line = rd->buf + rd->start;
			*len = have;
			rd->line++;
			return READ_LINE;
		}
		if (rd->eof) {
			if (!have)
				return READ_EOF;
			*line = rd->buf + rd->start;
			*len = have;
			rd->start = rd->end;
			rd->line++;
			return READ_PARTIAL;
		}
		memmove(rd->buf, rd->buf + rd->start, have);
		rd->start = 0;
		rd->end = have;
		n = reader_fill(rd, rd->buf + rd->end, READ_CHUNK, why);
		if (n < 0)
			return n;
		if (n == 0)
			rd->eof = true;
		rd->end += (size_t)n;
	}
}

static void hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel sequence numbers */

/* A range of kseq values that no line carries (seqset_missing_fn). */
static void missing_range(const struct seqset_range *m, void *ctx)
{
	struct verifier *v = ctx;
	struct verify_result *r = v->r;
	uint64_t below = 0;

	/*
	 * Ranges come in ascending order, each below the largest kseq read when it is reported. A
	 * writer_restart's kseq_below is above every kseq before it, so what was reported before it
	 * lies below it (writer_restart moves gap_above to gap_below): only a range reported after
	 * the last one can straddle its kseq_below.
	 */
	if (v->restart_line && m->first < v->restart_below)
		below = (m->last < v->restart_below ? m->last + 1 : v->restart_below) - m->first;
	v->gap_below += below;
	v->gap_above += m->last - m->first + 1 - below;
	if (r->n_missing < VERIFY_RANGES_MAX) {
		r->missing[r->n_missing].first = m->first;
		r->missing[r->n_missing].last = m->last;
		r->n_missing++;
	} else {
		r->more_missing = true;
	}
	seqset_list_add(m, &v->missing);
}

static int kseq_add(struct verifier *v, uint64_t k)
{
	switch (seqset_add(&v->kseqs, k)) {
	case 0:
		return 0;
	case -ERANGE:
		return BAD(v,
			   "kseq %" PRIu64 " repeats an earlier record's (or arrives more than %u "
			   "records out of order)",
			   k, VERIFY_KSEQ_WINDOW);
	case -EEXIST:
		return BAD(v, "kseq %" PRIu64 " appears twice", k);
	default:
		return BAD(v, "kseq %" PRIu64 " out of range", k);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Run keys */

static int run_key_add(struct verifier *v, const struct note_verifier *k, uint64_t line)
{
	struct run_key *n;

	/* log_start's and one per restart; check_writer_restart() refuses one more first */
	if (v->n_keys >= VERIFY_RESTARTS_MAX + 1)
		return -E2BIG;
	if (v->n_keys == v->keys_cap) {
		size_t c = v->keys_cap ? v->keys_cap * 2 : 4;

		if (c > VERIFY_RESTARTS_MAX + 1)
			c = VERIFY_RESTARTS_MAX + 1;
		n = realloc(v->keys, c * sizeof(*n));
		if (!n)
			return -ENOMEM;
		v->keys = n;
		v->keys_cap = c;
	}
	n = &v->keys[v->n_keys++];
	n->hash = k->hash;
	memcpy(n->pub, k->pub, sizeof(n->pub));
	n->line = line;
	return 0;
}

/* Run key i as a verifier: every run key is named as the origin. */
static void run_key_verifier(const struct verifier *v, size_t i, struct note_verifier *out)
{
	snprintf(out->name, sizeof(out->name), "%s", v->r->origin);
	out->hash = v->keys[i].hash;
	memcpy(out->pub, v->keys[i].pub, sizeof(out->pub));
}

/*
 * The first of run keys 0..below-1 with a valid signature on note, or -1. From a writer_restart
 * on only its key signs, so such a signature was made by a key whose writer was gone: a fork.
 * The hashes on the note's signature lines are read first, so that a note costs one pass and a
 * note_open() per signature line of an earlier key, not one per key of the log.
 */
static ssize_t earlier_signer(const struct verifier *v, size_t below, const char *note, size_t len)
{
	static const char dash[] = "\xe2\x80\x94 ";
	size_t dash_len = strlen(dash), olen = strlen(v->r->origin), pos = 0, tlen, i;
	struct note_verifier k;

	while (pos < len) {
		const char *line = note + pos, *eol = memchr(line, '\n', len - pos);
		size_t llen = eol ? (size_t)(eol - line) : len - pos, pre = dash_len + olen + 1;
		uint8_t sig[4 + 64 + 4];
		uint32_t hash;

		pos += llen + 1;
		if (llen <= pre || memcmp(line, dash, dash_len) ||
		    memcmp(line + dash_len, v->r->origin, olen) || line[pre - 1] != ' ' ||
		    note_base64_decode(line + pre, llen - pre, sig, sizeof(sig)) < 4)
			continue;
		hash = (uint32_t)sig[0] << 24 | (uint32_t)sig[1] << 16 | (uint32_t)sig[2] << 8 |
		       sig[3];
		for (i = 0; i < below; i++) {
			if (v->keys[i].hash != hash)
				continue;
			run_key_verifier(v, i, &k);
			if (!note_open(&k, note, len, &tlen))
				return (ssize_t)i;
		}
	}
	return -1;
}

/* Where run key i came from, for errors: "log_start" or "the writer_restart at line N". */
static const char *run_key_origin(const struct verifier *v, size_t i, char *buf, size_t size)
{
	if (!i)
		return "log_start";
	snprintf(buf, size, "the writer_restart at line %" PRIu64, v->keys[i].line);
	return buf;
}

/* ------------------------------------------------------------------------------------------ */
/* Exported checkpoints */

static int ext_check(struct verifier *v);

static int ext_cmp(const void *a, const void *b)
{
	const struct ext_checkpoint *x = a, *y = b;

	return x->size < y->size ? -1 : x->size > y->size;
}

static int ext_push(struct verifier *v, const struct ext_checkpoint *e, size_t *cap)
{
	struct ext_checkpoint *n;

	if (v->n_ext == *cap) {
		size_t c = *cap ? *cap * 2 : 64;

		if (c > SIZE_MAX / sizeof(*n))
			return -ENOMEM;
		n = realloc(v->ext, c * sizeof(*n));
		if (!n)
			return -ENOMEM;
		v->ext = n;
		*cap = c;
	}
	v->ext[v->n_ext++] = *e;
	return 0;
}

static const char *ext_sig_err(int err)
{
	return err == -ENOKEY	      ? "no signature by it"
	       : err == -EKEYREJECTED ? "signature does not verify"
				      : "malformed note";
}

/*
 * One note of a checkpoint file, text and signatures, as the sidecar holds it. A note from
 * another origin, or that is not a signed note at all, is refused at line 1: the log_start line
 * is then the one that does not belong with the checkpoints (a replayed log). A note that
 * log_start's run key does not sign is kept for ext_signed(): a writer_restart before the line
 * of its size may name the key that does.
 */
static int ext_note(struct verifier *v, unsigned int file, uint64_t note_line, const char *note,
		    size_t len, size_t text_len, size_t *cap)
{
	const char *path = v->o->checkpoints[file];
	struct ext_checkpoint e = {.file = file, .file_line = note_line};
	char origin[NOTE_NAME_MAX + 1];
	size_t tlen;
	int err;

	err = checkpoint_parse(note, text_len, origin, sizeof(origin), &e.size, e.root);
	if (err) {
		v->file = path;
		v->file_line = note_line;
		return verr(v, VERIFY_INVALID, 0, "not a checkpoint (origin, size, root): %s",
			    strerror(-err));
	}
	if (strcmp(origin, v->r->origin))
		return verr(v, VERIFY_INVALID, 1,
			    "the log's origin \"%s\" differs from the origin \"%s\" of the "
			    "exported checkpoint at %s:%" PRIu64 " (another run's log?)",
			    v->r->origin, origin, path, note_line);
	err = note_open(&v->run, note, len, &tlen);
	if (err && err != -ENOKEY && err != -EKEYREJECTED)
		return verr(v, VERIFY_INVALID, 1,
			    "the exported checkpoint at %s:%" PRIu64
			    " is not signed by the run key "
			    "of this log (%s; another run's log?)",
			    path, note_line, ext_sig_err(err));
	if (!err && tlen != text_len) {
		v->file = path;
		v->file_line = note_line;
		return verr(v, VERIFY_INVALID, 0, "the note's text is not the checkpoint's text");
	}
	if (err) {
		/* len < EXT_NOTE_MAX */
		e.note = malloc(len);
		if (!e.note)
			return verr(v, VERIFY_ERROR, 0, "exported checkpoints: %s",
				    strerror(ENOMEM));
		memcpy(e.note, note, len);
		e.len = (uint32_t)len;
		e.text_len = (uint32_t)text_len;
		e.err = err;
	}
	err = ext_push(v, &e, cap);
	if (err) {
		free(e.note);
		return verr(v, VERIFY_ERROR, 0, "exported checkpoints: %s", strerror(-err));
	}
	v->r->ext_checkpoints++;
	return 0;
}

/*
 * A checkpoint file: notes back to back, each "text lines, blank line, signature lines, blank
 * line". Parsed strictly: nothing else may be in it.
 */
static int ext_load_file(struct verifier *v, unsigned int file, size_t *cap)
{
	static const char write_failed[] = "sluice: log write failed at seq ";
	const char *path = v->o->checkpoints[file];
	const char *saved_file = v->file, *why = NULL;
	uint64_t saved_line = v->file_line, note_line = 0;
	enum { TEXT, SIGS, NOTICE } state = TEXT;
	struct reader *rd;
	char *note = NULL;
	size_t len = 0, text_len = 0, n_sigs = 0;
	const char *line;
	size_t llen;
	int err, res;

	rd = malloc(sizeof(*rd));
	note = malloc(EXT_NOTE_MAX);
	if (!rd || !note) {
		err = verr(v, VERIFY_ERROR, 0, "exported checkpoints: %s", strerror(ENOMEM));
		goto out;
	}
	v->file = path;
	v->file_line = 0;
	err = reader_open(rd, path, false);
	if (err) {
		err = verr(v, VERIFY_ERROR, 0, "cannot open: %s",
			   err == -EINVAL ? verify_file_kind(rd->mode) : strerror(-err));
		goto out_free;
	}
	for (;;) {
		res = reader_next(rd, &line, &llen, &why);
		v->file = path;
		v->file_line = rd->line;
		if (res < 0) {
			err = verr(v, res == -EIO ? VERIFY_ERROR : VERIFY_INVALID, 0,
				   "cannot read: %s", why);
			goto out_close;
		}
		if (res == READ_EOF)
			break;
		if (res == READ_PARTIAL) {
			err = verr(v, VERIFY_INVALID, 0, "file ends inside a line");
			goto out_close;
		}
		if (state == NOTICE) {
			if (llen) {
				err = verr(v, VERIFY_INVALID, 0,
					   "expected a blank line after the "
					   "writer's failure notice");
				goto out_close;
			}
			state = TEXT;
			continue;
		}
		/* The writer's notice that the log could not be written (journal.c log_failed). */
		if (state == TEXT && !len && llen > strlen(write_failed) &&
		    !memcmp(line, write_failed, strlen(write_failed))) {
			if (!v->r->ext_write_failure[0])
				snprintf(v->r->ext_write_failure, sizeof(v->r->ext_write_failure),
					 "%.*s", (int)llen, line);
			state = NOTICE;
			continue;
		}
		if (!len)
			note_line = rd->line;
		if (llen) {
			if (state == SIGS && (llen < 4 || memcmp(line, "\xe2\x80\x94 ", 4))) {
				err = verr(v, VERIFY_INVALID, 0,
					   "expected a signature line (\"— NAME SIG\") or a blank "
					   "line");
				goto out_close;
			}
			if (len + llen + 1 >= EXT_NOTE_MAX) {
				err = verr(v, VERIFY_INVALID, 0,
					   "checkpoint note longer than %d bytes", EXT_NOTE_MAX);
				goto out_close;
			}
			memcpy(note + len, line, llen);
			len += llen;
			note[len++] = '\n';
			if (state == SIGS)
				n_sigs++;
			continue;
		}
		/* a blank line: ends the text, or the note */
		if (state == TEXT) {
			if (!len) {
				err = verr(v, VERIFY_INVALID, 0,
					   "blank line where a note should start");
				goto out_close;
			}
			text_len = len;
			note[len++] = '\n';
			state = SIGS;
			continue;
		}
		if (!n_sigs) {
			err = verr(v, VERIFY_INVALID, 0, "note without a signature line");
			goto out_close;
		}
		v->file = saved_file;
		v->file_line = saved_line;
		err = ext_note(v, file, note_line, note, len, text_len, cap);
		if (err)
			goto out_close;
		len = 0;
		n_sigs = 0;
		state = TEXT;
	}
	if (state == NOTICE) {
		err = verr(v, VERIFY_INVALID, 0, "file ends inside the writer's failure notice");
		goto out_close;
	}
	if (len) {
		err = verr(v, VERIFY_INVALID, 0, "file ends inside a note (%s)",
			   state == TEXT ? "no signatures" : "no blank line after the signatures");
		goto out_close;
	}
	err = 0;
out_close:
	reader_close(rd);
out_free:
	v->file = saved_file;
	v->file_line = saved_line;
out:
	free(note);
	free(rd);
	return err;
}

static int ext_load(struct verifier *v)
{
	size_t cap = 0;
	unsigned int i;
	int err;

	for (i = 0; i < v->o->n_checkpoints; i++) {
		err = ext_load_file(v, i, &cap);
		if (err)
			return err;
	}
	if (v->n_ext)
		qsort(v->ext, v->n_ext, sizeof(*v->ext), ext_cmp);
	return ext_check(v);
}

/*
 * An exported note of size S, now that the log reached S: it must be signed by the run key in
 * force for the checkpoint line of seq S, log_start's up to the first writer_restart's seq, then
 * the key of the last writer_restart before line S (the one in force now, with lines 1..S read),
 * and by no earlier run key. A note that log_start's key does not sign, when no writer_restart
 * came before S, is refused at line 1 as before (another run's log); with one, at line S.
 */
static int ext_signed(struct verifier *v, const struct ext_checkpoint *e)
{
	const char *path = v->o->checkpoints[e->file];
	char from[64];
	size_t tlen, cur = v->n_keys - 1;
	ssize_t i;
	int err;

	if (!cur) {
		if (!e->note)
			return 0;
		v->file = v->first_file;
		v->file_line = 1;
		return verr(v, VERIFY_INVALID, 1,
			    "the exported checkpoint at %s:%" PRIu64
			    " is not signed by the run key "
			    "of this log (%s; another run's log?)",
			    path, e->file_line, ext_sig_err(e->err));
	}
	if (!e->note)
		return verr(v, VERIFY_INVALID, v->lines,
			    "the exported checkpoint at %s:%" PRIu64 " (size %" PRIu64
			    ") is signed by log_start's run key, which signs nothing after the "
			    "writer_restart at line %" PRIu64,
			    path, e->file_line, e->size, v->keys[1].line);
	err = note_open(&v->run, e->note, e->len, &tlen);
	i = earlier_signer(v, cur, e->note, e->len);
	if (i >= 0)
		return verr(v, VERIFY_INVALID, v->lines,
			    "the exported checkpoint at %s:%" PRIu64 " (size %" PRIu64
			    ") is signed by the run key of %s, which signs nothing after the "
			    "writer_restart at line %" PRIu64,
			    path, e->file_line, e->size,
			    run_key_origin(v, (size_t)i, from, sizeof(from)), v->keys[i + 1].line);
	if (err)
		return verr(v, VERIFY_INVALID, v->lines,
			    "the exported checkpoint at %s:%" PRIu64
			    " is not signed by the run key "
			    "of this log (%s; another run's log?)",
			    path, e->file_line, ext_sig_err(err));
	if (tlen != e->text_len) {
		v->file = path;
		v->file_line = e->file_line;
		return verr(v, VERIFY_INVALID, 0, "the note's text is not the checkpoint's text");
	}
	return 0;
}

/*
 * Compare the tree of the lines so far with every exported checkpoint of that size, once its
 * signature holds. Called after each line is appended (and once before any, for size 0): sizes
 * come up in order.
 */
static int ext_check(struct verifier *v)
{
	uint8_t root[TLOG_HASH_SIZE];

	if (v->next_ext >= v->n_ext || v->ext[v->next_ext].size != v->tree.size)
		return 0;
	if (!v->tree.size) {
		const struct ext_checkpoint *e = &v->ext[v->next_ext];

		return verr(v, VERIFY_INVALID, 1,
			    "the exported checkpoint at %s:%" PRIu64 " has size 0: the writer "
			    "exports none (line 1 is log_start, not a checkpoint)",
			    v->o->checkpoints[e->file], e->file_line);
	}
	tlog_root(&v->tree, root);
	for (; v->next_ext < v->n_ext && v->ext[v->next_ext].size == v->tree.size; v->next_ext++) {
		const struct ext_checkpoint *e = &v->ext[v->next_ext];
		int err = ext_signed(v, e);

		if (err)
			return err;
		if (memcmp(root, e->root, sizeof(root)))
			return verr(v, VERIFY_INVALID, v->lines,
				    "lines 1..%" PRIu64
				    " are not the ones the exported checkpoint at "
				    "%s:%" PRIu64 " signed (its root differs)",
				    e->size, v->o->checkpoints[e->file], e->file_line);
		v->cp_due = v->next_ext + 1;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Lines */

/* The members after the header must be exactly keys[4..n). */
static int check_keys(struct verifier *v, const char *type, const char *const *keys, size_t n)
{
	const struct jsonline *jl = &v->jl;
	size_t i;

	for (i = 4; i < n; i++) {
		if (!jsonline_key_is(jl, i, keys[i]))
			return BAD(v, "%s: member %zu is not \"%s\" (column %u)", type, i + 1,
				   keys[i], i < jl->n ? jl->m[i].key_off : (unsigned int)jl->len);
	}
	if (jl->n != n)
		return BAD(v, "%s: unexpected member after \"%s\" (column %u)", type, keys[n - 1],
			   jl->m[n].key_off);
	return 0;
}

static int str_field(struct verifier *v, const char *type, const char *key, char *buf, size_t size)
{
	int n = jsonline_str(&v->jl, key, buf, size);

	if (n == -ENOSPC)
		return BAD(v, "%s: %s too long", type, key);
	if (n < 0)
		return BAD(v, "%s: %s is not a string", type, key);
	if (strlen(buf) != (size_t)n)
		return BAD(v, "%s: %s contains a NUL byte", type, key);
	return n;
}

static int u64_field(struct verifier *v, const char *type, const char *key, uint64_t *out)
{
	if (jsonline_u64(&v->jl, key, out))
		return BAD(v, "%s: %s is not a non-negative integer", type, key);
	return 0;
}

static bool run_id_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > VERIFY_RUN_ID_MAX)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static const char *note_err(int err)
{
	switch (err) {
	case -ENOKEY:
		return "has no signature by that key";
	case -EKEYREJECTED:
		return "has a signature by that key that does not verify";
	case -ENOTUNIQ:
		return "carries a signature line besides that key's (the writer signs with that "
		       "key alone)";
	default:
		return "is not a well-formed signed note";
	}
}

static int check_log_start(struct verifier *v)
{
	static const char prefix[] = "sluice/";
	struct verify_result *r = v->r;
	char run_id[80], key[NOTE_VKEY_MAX + 1], host_key[NOTE_VKEY_MAX + 1];
	struct note_verifier claimed;
	uint64_t format, lines;
	size_t text_len;
	int n, err;

	if (!jsonline_type_is(&v->jl, "log_start"))
		return BAD(v, "the first line is not a log_start record");
	err = check_keys(v, "log_start", log_start_keys, sizeof(log_start_keys) / sizeof(char *));
	if (err)
		return err;
	if (str_field(v, "log_start", "origin", r->origin, sizeof(r->origin)) < 0 ||
	    str_field(v, "log_start", "run_id", run_id, sizeof(run_id)) < 0 ||
	    str_field(v, "log_start", "key", key, sizeof(key)) < 0 ||
	    str_field(v, "log_start", "host_key", host_key, sizeof(host_key)) < 0 ||
	    u64_field(v, "log_start", "checkpoint_lines", &lines) ||
	    u64_field(v, "log_start", "checkpoint_secs", &v->checkpoint_secs) ||
	    u64_field(v, "log_start", "format", &format))
		return -ECANCELED;
	r->format = format;
	/* a third format must say here, and in tlog_append_line, how its lines chain */
	_Static_assert(JOURNAL_FORMAT == 2, "formats 1 and 2 are the ones read");
	if (format < 1 || format > JOURNAL_FORMAT)
		return BAD(v, "log_start: format %" PRIu64 " (this verifier reads formats 1 to %d)",
			   format, JOURNAL_FORMAT);
	if (!run_id_valid(run_id))
		return BAD(v, "log_start: run_id is not [A-Za-z0-9._-]{1,%d}", VERIFY_RUN_ID_MAX);
	if (strncmp(r->origin, prefix, strlen(prefix)) ||
	    strcmp(r->origin + strlen(prefix), run_id))
		return BAD(v, "log_start: origin \"%s\" is not sluice/<run_id>", r->origin);
	if (note_verifier_parse(key, &v->run))
		return BAD(v, "log_start: key is not a verifier key");
	if (strcmp(v->run.name, r->origin))
		return BAD(v, "log_start: the run key is named \"%s\", not the origin",
			   v->run.name);
	if (note_verifier_parse(host_key, &claimed))
		return BAD(v, "log_start: host_key is not a verifier key");
	v->have_run = true;

	n = str_field(v, "log_start", "cert", v->field, sizeof(v->field));
	if (n < 0)
		return n;
	err = note_open_sole(&v->host, v->field, (size_t)n, &text_len);
	if (err) {
		if (err == -ENOKEY &&
		    (claimed.hash != v->host.hash || strcmp(claimed.name, v->host.name)))
			return BAD(v,
				   "log_start: the run key's certificate is not signed by the host "
				   "key \"%s\" (the log names host key \"%s\")",
				   v->host.name, host_key);
		return BAD(v, "log_start: the run key's certificate %s of the host key \"%s\"",
			   note_err(err), v->host.name);
	}
	err = snprintf(v->text, sizeof(v->text), "sluice run key\n%s\n%s\n", r->origin, key);
	if (err < 0 || (size_t)err != text_len || memcmp(v->text, v->field, text_len))
		return BAD(v, "log_start: the certificate does not name this origin and run key");
	/* the certificate binds the run key, not this field: it must name the key given too */
	if (strcmp(host_key, v->o->host_vkey))
		return BAD(v, "log_start: host_key \"%s\" is not the host key given (\"%s\")",
			   host_key, v->o->host_vkey);
	r->cert_verified = true;
	r->start_ts = v->jl.ts;
	r->run_key_hash = v->run.hash;
	r->last_key_hash = v->run.hash;
	/* the run expected: the host key certifies every run of its host */
	if (v->o->run_id && strcmp(run_id, v->o->run_id))
		return BAD(v, "this is the log of run \"%s\", not \"%s\"", run_id, v->o->run_id);
	if (v->o->origin && strcmp(r->origin, v->o->origin))
		return BAD(v, "this is the log of run \"%s\" (origin \"%s\"), not of origin \"%s\"",
			   run_id, r->origin, v->o->origin);
	if (run_key_add(v, &v->run, 1))
		return verr(v, VERIFY_ERROR, 0, "%s", strerror(ENOMEM));
	snprintf(v->first_file, sizeof(v->first_file), "%s", v->file);
	return ext_load(v);
}

/*
 * The floors every kseq_below (a loss record's, a writer_restart's) must not go under: the
 * kernel's next sequence number never goes down, so not under an earlier loss record's or
 * writer_restart's, and the records declared lost so far each took a number below it. One
 * check for both lines, so a floor cannot be added to one and forgotten in the other.
 */
static int kseq_below_floors(struct verifier *v, const char *type, uint64_t below)
{
	if (v->loss_below_line && below < v->loss_below)
		return BAD(v,
			   "%s: kseq_below %" PRIu64 " is below the %" PRIu64
			   " of the loss record at line %" PRIu64,
			   type, below, v->loss_below, v->loss_below_line);
	if (v->restart_line && below < v->restart_below)
		return BAD(v,
			   "%s: kseq_below %" PRIu64 " is below the %" PRIu64
			   " of the writer_restart at line %" PRIu64,
			   type, below, v->restart_below, v->restart_line);
	if (below < v->r->declared_loss)
		return BAD(v,
			   "%s: %" PRIu64 " records declared lost so far cannot all have a kseq "
			   "below kseq_below %" PRIu64,
			   type, v->r->declared_loss, below);
	return 0;
}

/*
 * A writer_restart: a restarted writer's fresh run key, certified by the host key for the same
 * origin, and what it found (the torn line before it, the lines no checkpoint covers, the
 * kernel's next kseq). From this line on its key alone signs; the next line must be its
 * "restart" checkpoint.
 */
static int check_writer_restart(struct verifier *v)
{
	struct verify_result *r = v->r;
	char origin[NOTE_NAME_MAX + 1], key[NOTE_VKEY_MAX + 1];
	uint64_t torn, unsealed, below, line = v->lines + 1;
	struct note_verifier nk;
	size_t text_len, i;
	int n, err;

	if (v->run_end_line)
		return BAD(v, "writer_restart after run_end (line %" PRIu64 ")", v->run_end_line);
	err = check_keys(v, "writer_restart", writer_restart_keys,
			 sizeof(writer_restart_keys) / sizeof(char *));
	if (err)
		return err;
	if (str_field(v, "writer_restart", "origin", origin, sizeof(origin)) < 0 ||
	    str_field(v, "writer_restart", "key", key, sizeof(key)) < 0 ||
	    u64_field(v, "writer_restart", "torn", &torn) ||
	    u64_field(v, "writer_restart", "unsealed", &unsealed) ||
	    u64_field(v, "writer_restart", "kseq_below", &below))
		return -ECANCELED;
	if (strcmp(origin, r->origin))
		return BAD(v, "writer_restart: origin \"%s\" is not log_start's \"%s\"", origin,
			   r->origin);
	if (r->restarts >= VERIFY_RESTARTS_MAX)
		return BAD(v,
			   "writer_restart: more than %d writer restarts (the most this verifier "
			   "reads)",
			   VERIFY_RESTARTS_MAX);
	if (note_verifier_parse(key, &nk))
		return BAD(v, "writer_restart: key is not a verifier key");
	if (strcmp(nk.name, r->origin))
		return BAD(v, "writer_restart: the run key is named \"%s\", not the origin",
			   nk.name);
	for (i = 0; i < v->n_keys; i++)
		if (v->keys[i].hash == nk.hash)
			return BAD(v,
				   "writer_restart: the run key's hash %08x is that of the run key "
				   "of line %" PRIu64 " (a restart never reuses a key)",
				   nk.hash, v->keys[i].line);

	n = str_field(v, "writer_restart", "cert", v->field, sizeof(v->field));
	if (n < 0)
		return n;
	err = note_open_sole(&v->host, v->field, (size_t)n, &text_len);
	if (err == -ENOKEY)
		return BAD(v,
			   "writer_restart: the run key's certificate is not signed by the host "
			   "key \"%s\" (the one that certified log_start's)",
			   v->host.name);
	if (err)
		return BAD(v, "writer_restart: the run key's certificate %s of the host key \"%s\"",
			   note_err(err), v->host.name);
	err = snprintf(v->text, sizeof(v->text), "sluice run key\n%s\n%s\n", r->origin, key);
	if (err < 0 || (size_t)err != text_len || memcmp(v->text, v->field, text_len))
		return BAD(v,
			   "writer_restart: the certificate does not name this origin and run key");

	/* the torn line itself was accepted by torn_accept(), which set torn_before */
	if (torn != v->torn_before) {
		if (!v->torn_before)
			return BAD(v,
				   "writer_restart: torn %" PRIu64 ", but line %" PRIu64
				   " before it is a whole line, not a torn one",
				   torn, v->lines);
		return BAD(v,
			   "writer_restart: torn %" PRIu64 ", but the torn line before it (line "
			   "%" PRIu64 ") has %" PRIu64 " bytes",
			   torn, v->lines, v->torn_before);
	}
	if (unsealed != v->lines - v->last_cp_line) {
		if (!v->last_cp_line)
			return BAD(v,
				   "writer_restart: unsealed %" PRIu64 ", but no checkpoint covers "
				   "the %" PRIu64 " lines before it (there is none)",
				   unsealed, v->lines);
		return BAD(v,
			   "writer_restart: unsealed %" PRIu64 ", but %" PRIu64
			   " lines before it follow the last checkpoint (line %" PRIu64 ")",
			   unsealed, v->lines - v->last_cp_line, v->last_cp_line);
	}

	/* the kernel's next kseq: above every record before, and it never goes down */
	if (below < v->kseqs.high)
		return BAD(v,
			   "writer_restart: kseq_below %" PRIu64 ", but kseq %" PRIu64
			   " was recorded before it",
			   below, v->kseqs.high - 1);
	err = kseq_below_floors(v, "writer_restart", below);
	if (err)
		return err;

	err = run_key_add(v, &nk, line);
	if (err)
		return verr(v, VERIFY_ERROR, 0, "%s", strerror(-err));
	v->run = nk;
	v->rotation_stopped = 0; /* the new writer rotates afresh */
	/* every missing range reported so far lies below the kseqs read, so below this one */
	v->gap_below += v->gap_above;
	v->gap_above = 0;
	v->restart_below = below;
	v->restart_line = line;
	v->restart_cp_due = true;
	v->loss_before_restart = r->declared_loss;
	/* a loss or anomaly line the dead writer did not sign: the restart checkpoint covers it */
	v->cp_after_type = NULL;
	if (!r->restarts)
		r->first_restart_line = line;
	r->restarts++;
	r->restart_unsealed += unsealed;
	r->last_key_hash = nk.hash;
	return 0;
}

static int check_checkpoint(struct verifier *v)
{
	const struct jsonline *jl = &v->jl;
	uint8_t root[TLOG_HASH_SIZE], field_root[TLOG_HASH_SIZE], note_root[TLOG_HASH_SIZE];
	char origin[NOTE_NAME_MAX + 1], reason[16], from[64];
	uint64_t size, note_size;
	size_t text_len, i;
	ssize_t signer;
	bool restart;
	int n, err;

	err = check_keys(v, "checkpoint", checkpoint_keys,
			 sizeof(checkpoint_keys) / sizeof(char *));
	if (err)
		return err;
	if (str_field(v, "checkpoint", "reason", reason, sizeof(reason)) < 0)
		return -ECANCELED;
	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (!strcmp(reason, reasons[i]))
			break;
	if (i == sizeof(reasons) / sizeof(reasons[0]))
		return BAD(v, "checkpoint: unknown reason \"%s\"", reason);
	restart = !strcmp(reason, "restart");
	if (v->restart_cp_due && !restart)
		return BAD(v,
			   "checkpoint: reason \"%s\", but it follows the writer_restart record at "
			   "line %" PRIu64 " (reason \"restart\" expected)",
			   reason, v->restart_line);
	if (!v->restart_cp_due && restart)
		return BAD(v, "checkpoint: reason \"restart\", but the line before it is not a "
			      "writer_restart record");
	if (v->cp_after_type && strcmp(reason, v->cp_after_type))
		return BAD(v,
			   "checkpoint: reason \"%s\", but it follows the %s record at line "
			   "%" PRIu64 " (reason \"%s\" expected)",
			   reason, v->cp_after_type, v->cp_after_line, v->cp_after_type);
	if (u64_field(v, "checkpoint", "size", &size))
		return -ECANCELED;
	if (size != jl->seq)
		return BAD(v, "checkpoint: size %" PRIu64 " is not the line's seq %" PRIu64, size,
			   jl->seq);
	tlog_root(&v->tree, root);
	n = str_field(v, "checkpoint", "root", v->field, sizeof(v->field));
	if (n < 0)
		return n;
	if (note_base64_decode(v->field, (size_t)n, field_root, sizeof(field_root)) !=
	    TLOG_HASH_SIZE)
		return BAD(v, "checkpoint: root is not the base64 of 32 bytes");
	if (memcmp(field_root, root, sizeof(root)))
		return BAD(v,
			   "checkpoint: root is not the root of lines 1..%" PRIu64
			   " (an earlier line was changed)",
			   size);
	n = str_field(v, "checkpoint", "note", v->field, sizeof(v->field));
	if (n < 0)
		return n;
	err = note_open_sole(&v->run, v->field, (size_t)n, &text_len);
	/* from a writer_restart on its key alone signs: an earlier one's signature is a fork */
	signer = v->n_keys > 1 ? earlier_signer(v, v->n_keys - 1, v->field, (size_t)n) : -1;
	if (signer >= 0)
		return BAD(
			v,
			"checkpoint: the note is signed by the run key of %s, which signs nothing "
			"after the writer_restart at line %" PRIu64,
			run_key_origin(v, (size_t)signer, from, sizeof(from)),
			v->keys[signer + 1].line);
	if (err && v->n_keys > 1)
		return BAD(v,
			   "checkpoint: the note %s of the run key \"%s\" (%08x) of the "
			   "writer_restart at line %" PRIu64,
			   note_err(err), v->run.name, v->run.hash, v->keys[v->n_keys - 1].line);
	if (err)
		return BAD(v, "checkpoint: the note %s of the run key \"%s\"", note_err(err),
			   v->run.name);
	err = checkpoint_parse(v->field, text_len, origin, sizeof(origin), &note_size, note_root);
	if (err)
		return BAD(v,
			   "checkpoint: the signed text is not a checkpoint (origin, size, root)");
	if (strcmp(origin, v->r->origin))
		return BAD(v, "checkpoint: the note is for origin \"%s\", not \"%s\"", origin,
			   v->r->origin);
	if (note_size != size || memcmp(note_root, root, sizeof(root)))
		return BAD(v, "checkpoint: the signed size and root are not this line's");
	/*
	 * The time from the checkpoint before a restart one is the writer's downtime: reported, not
	 * held to the heartbeat rule. The next checkpoint is, measured from the restart one.
	 */
	if (restart && jl->ts > v->last_cp_ts &&
	    (uint64_t)(jl->ts - v->last_cp_ts) > v->r->restart_downtime_us)
		v->r->restart_downtime_us = (uint64_t)(jl->ts - v->last_cp_ts);
	if (!restart && v->checkpoint_secs && jl->ts > v->last_cp_ts &&
	    (uint64_t)(jl->ts - v->last_cp_ts) > (2 * v->checkpoint_secs + 1) * 1000000)
		return BAD(v,
			   "heartbeat gap: %" PRId64 ".%06" PRId64 " s since %s (line %" PRIu64
			   "), more than 2*%" PRIu64 "+1 s",
			   (jl->ts - v->last_cp_ts) / 1000000, (jl->ts - v->last_cp_ts) % 1000000,
			   v->last_cp_line ? "the previous checkpoint" : "log_start",
			   v->last_cp_line ? v->last_cp_line : 1, v->checkpoint_secs);
	if (!strcmp(reason, "final") && !v->run_end_line)
		return BAD(v, "checkpoint: final seal without a run_end record before it");
	/* after run_end the writer signs on only as time and size ask, then seals */
	if (v->run_end_line && strcmp(reason, "final") && strcmp(reason, "lines") &&
	    strcmp(reason, "time") && strcmp(reason, "heartbeat") && strcmp(reason, "rotate"))
		return BAD(v,
			   "checkpoint: reason \"%s\" after run_end (line %" PRIu64 "): only "
			   "\"lines\", \"time\", \"heartbeat\", \"rotate\" and the final seal "
			   "come after it",
			   reason, v->run_end_line);
	if (!strcmp(reason, "rotate") && v->rotation_stopped)
		return BAD(v,
			   "checkpoint: reason \"rotate\", but the rotate checkpoint at line "
			   "%" PRIu64 " is not the last line of its file: its rename failed and "
			   "that writer rotates no more (only a writer_restart's writer may)",
			   v->rotation_stopped);
	/*
	 * A rotated segment must end with one (the boundary is signed); one inside a file is
	 * allowed once per writer: when renaming the file (or creating the next) fails, the writer
	 * stops rotating and goes on appending to it (check_line() notes it, writer_restart ends
	 * it).
	 */
	v->rotate_line = !strcmp(reason, "rotate") ? v->lines + 1 : 0;
	v->last_cp_final = !strcmp(reason, "final");
	v->cp_after_type = NULL;
	v->restart_cp_due = false;
	v->last_cp_ts = jl->ts;
	v->last_cp_line = v->lines + 1;
	v->r->checkpoints++;
	v->r->last_checkpoint_size = size;
	return 0;
}

static int check_run_end(struct verifier *v)
{
	const struct jsonline_member *m;
	uint64_t gap;
	int err;

	if (v->run_end_line)
		return BAD(v, "a second run_end record (the first is line %" PRIu64 ")",
			   v->run_end_line);
	if (u64_field(v, "run_end", "kseq_next", &v->r->kseq_next))
		return -ECANCELED;
	if (v->kseqs.high > v->r->kseq_next)
		return BAD(v, "run_end: kseq_next %" PRIu64 " but kseq %" PRIu64 " was recorded",
			   v->r->kseq_next, v->kseqs.high - 1);
	if (v->loss_below_line && v->loss_below > v->r->kseq_next)
		return BAD(v,
			   "run_end: kseq_next %" PRIu64 " is below the kseq_below %" PRIu64
			   " of the loss record at line %" PRIu64,
			   v->r->kseq_next, v->loss_below, v->loss_below_line);
	/* every loss line comes before run_end, which sums them */
	if (u64_field(v, "run_end", "lost", &v->lost))
		return -ECANCELED;
	if (v->lost != v->r->declared_loss)
		return BAD(v,
			   "run_end: lost %" PRIu64 " differs from the sum %" PRIu64
			   " of the loss records' counts",
			   v->lost, v->r->declared_loss);
	/* records the policy says not to log (log: [deny]) are counted, not written */
	err = jsonline_u64(&v->jl, "unlogged", &v->r->unlogged);
	if (err == -EINVAL)
		return BAD(v, "run_end: unlogged is not a non-negative integer");
	if (v->restart_line && v->restart_below > v->r->kseq_next)
		return BAD(v,
			   "run_end: kseq_next %" PRIu64 " is below the kseq_below %" PRIu64
			   " of the writer_restart at line %" PRIu64,
			   v->r->kseq_next, v->restart_below, v->restart_line);
	/* what the dead writers took and never wrote, and what their log: setting left out */
	err = jsonline_u64(&v->jl, "restart_gap", &gap);
	if (err == -EINVAL)
		return BAD(v, "run_end: restart_gap is not a non-negative integer");
	if (!err && !v->restart_line)
		return BAD(v, "run_end: restart_gap without a writer_restart record before it");
	if (err == -ENOENT && v->restart_line)
		return BAD(v,
			   "run_end: no restart_gap after the writer_restart at line %" PRIu64
			   " (a restarted writer always writes it)",
			   v->restart_line);
	if (!err)
		v->r->restart_gap = gap;
	/* the restarted writer is not the command's parent: its exit status died with the first */
	m = jsonline_get(&v->jl, "exit_status");
	if (v->restart_line && m && m->v.kind != JSONLINE_NULL)
		return BAD(v,
			   "run_end: exit_status after a writer_restart (line %" PRIu64
			   ") is not null (the restarted writer cannot know it)",
			   v->restart_line);
	v->run_end_line = v->lines + 1;
	snprintf(v->run_end_file, sizeof(v->run_end_file), "%s", v->file);
	v->run_end_file_line = v->file_line;
	v->r->has_run_end = true;
	return 0;
}

/*
 * A loss record: its count adds to the declared loss. Its kseq_below (optional) bounds the
 * numbers of the records it counts: the writer reads the kernel's next sequence number after
 * the loss counters, so the values never go down, and every record counted so far (each took
 * its own number) lies below it.
 */
static int check_loss(struct verifier *v)
{
	const struct jsonline_member *hook;
	struct verify_result *r = v->r;
	uint64_t count, below;
	int err;

	if (u64_field(v, "loss", "count", &count))
		return -ECANCELED;
	if (count > UINT64_MAX - r->declared_loss)
		return BAD(v, "loss: the counts overflow");
	r->declared_loss += count;
	/* the writer's own: records it read but could not write, the log being unwritable */
	hook = jsonline_get(&v->jl, "hook");
	if (hook && hook->v.kind == JSONLINE_STRING && jsonline_str_is(&v->jl, &hook->v, "log")) {
		uint64_t lines;

		if (u64_field(v, "loss", "lines", &lines))
			return -ECANCELED;
		if (lines < count)
			return BAD(v,
				   "loss: %" PRIu64 " records of hook log not written, but only "
				   "%" PRIu64 " lines",
				   count, lines);
		r->unwritten += count;
		r->unwritten_lines += lines < UINT64_MAX - r->unwritten_lines ? lines : 0;
		r->log_failures++;
	}
	err = jsonline_u64(&v->jl, "kseq_below", &below);
	if (err == -ENOENT)
		return 0;
	if (err)
		return BAD(v, "loss: kseq_below is not a non-negative integer");
	err = kseq_below_floors(v, "loss", below);
	if (err)
		return err;
	if (v->run_end_line && below > r->kseq_next)
		return BAD(v, "loss: kseq_below %" PRIu64 " is past run_end's kseq_next %" PRIu64,
			   below, r->kseq_next);
	v->loss_below = below;
	v->loss_below_line = v->lines + 1;
	return 0;
}

/*
 * The writer's list of the kseq values missing from the log: "missing" (how many),
 * "ranges" (first,last pairs, ascending, at most SEQSET_RANGES_LISTED) and "truncated" (more
 * ranges exist than listed). Checked for consistency here and against the log at the end.
 */
static int check_loss_ranges(struct verifier *v)
{
	const struct jsonline_member *m;
	struct jsonline_value e;
	uint64_t first = 0, listed = 0;
	size_t pos = 0, n = 0;
	int res;

	if (v->lr_line)
		return BAD(v, "a second loss_ranges record (the first is line %" PRIu64 ")",
			   v->lr_line);
	if (v->run_end_line)
		return BAD(v, "loss_ranges after run_end (line %" PRIu64 ")", v->run_end_line);
	if (u64_field(v, "loss_ranges", "missing", &v->lr_missing))
		return -ECANCELED;
	m = jsonline_get(&v->jl, "ranges");
	if (!m || m->v.kind != JSONLINE_ARRAY)
		return BAD(v, "loss_ranges: ranges is not an array");
	while ((res = jsonline_array_next(&v->jl, &m->v, &pos, &e)) > 0) {
		struct seqset_range *rg;

		if (e.kind != JSONLINE_INT || e.neg)
			return BAD(v, "loss_ranges: ranges holds a value that is not a "
				      "non-negative integer");
		if (!(n++ % 2)) {
			first = e.u;
			continue;
		}
		if (n / 2 > SEQSET_RANGES_LISTED)
			return BAD(v, "loss_ranges: lists more than %d ranges",
				   SEQSET_RANGES_LISTED);
		if (first > e.u)
			return BAD(v,
				   "loss_ranges: range %zu (%" PRIu64 "..%" PRIu64 ") is reversed",
				   n / 2, first, e.u);
		/* maximal and ascending: a kseq that is not missing lies between two ranges */
		if (v->lr_n &&
		    (first <= v->lr[v->lr_n - 1].last || first - v->lr[v->lr_n - 1].last < 2))
			return BAD(v,
				   "loss_ranges: range %zu (%" PRIu64 "..%" PRIu64
				   ") does not start past the previous one's end + 1",
				   n / 2, first, e.u);
		if (e.u - first >= v->lr_missing - listed)
			return BAD(v,
				   "loss_ranges: the ranges hold more than the %" PRIu64
				   " missing values the record counts",
				   v->lr_missing);
		listed += e.u - first + 1;
		rg = &v->lr[v->lr_n++];
		rg->first = first;
		rg->last = e.u;
	}
	if (n % 2)
		return BAD(v, "loss_ranges: ranges has an odd number of values");
	m = jsonline_get(&v->jl, "truncated");
	if (!m || (m->v.kind != JSONLINE_TRUE && m->v.kind != JSONLINE_FALSE))
		return BAD(v, "loss_ranges: truncated is not true or false");
	v->lr_truncated = m->v.kind == JSONLINE_TRUE;
	if (!v->lr_truncated && listed != v->lr_missing)
		return BAD(v,
			   "loss_ranges: counts %" PRIu64 " missing values, but its ranges (not "
			   "truncated) hold %" PRIu64,
			   v->lr_missing, listed);
	if (v->lr_truncated && listed == v->lr_missing)
		return BAD(v, "loss_ranges: truncated, but its ranges hold all %" PRIu64 " values",
			   listed);
	v->lr_line = v->lines + 1;
	snprintf(v->lr_file, sizeof(v->lr_file), "%s", v->file);
	v->lr_file_line = v->file_line;
	return 0;
}

/*
 * At the end of a sealed log: the loss_ranges record must list exactly the ranges of kseq
 * values in [0, kseq_next) that no line carries, the first ones if truncated, and count them
 * all. Compared range by range with the first SEQSET_RANGES_LISTED the verifier found itself.
 */
static int check_loss_ranges_end(struct verifier *v)
{
	const struct seqset_list *have = &v->missing;
	size_t i;

	v->file = v->lr_file;
	v->file_line = v->lr_file_line;
	if (v->lr_missing != v->kseqs.missing)
		return verr(v, VERIFY_INVALID, v->lr_line,
			    "loss_ranges: says %" PRIu64 " kseq values are missing, but %" PRIu64
			    " of [0, kseq_next %" PRIu64 ") have no line",
			    v->lr_missing, v->kseqs.missing, v->r->kseq_next);
	for (i = 0; i < v->lr_n; i++) {
		const struct seqset_range *said = &v->lr[i];

		if (i >= have->n)
			return verr(v, VERIFY_INVALID, v->lr_line,
				    "loss_ranges: range %zu (%" PRIu64 "..%" PRIu64 ") is not "
				    "missing: the log lacks only %" PRIu64 " ranges",
				    i + 1, said->first, said->last, have->total);
		if (said->first != have->r[i].first || said->last != have->r[i].last)
			return verr(v, VERIFY_INVALID, v->lr_line,
				    "loss_ranges: range %zu is %" PRIu64 "..%" PRIu64
				    ", but the log's missing range %zu is %" PRIu64 "..%" PRIu64,
				    i + 1, said->first, said->last, i + 1, have->r[i].first,
				    have->r[i].last);
	}
	if (!v->lr_truncated && have->total != v->lr_n)
		return verr(v, VERIFY_INVALID, v->lr_line,
			    "loss_ranges: lists %zu ranges and is not truncated, but the log lacks "
			    "%" PRIu64 " ranges",
			    v->lr_n, have->total);
	if (v->lr_truncated && have->total == v->lr_n)
		return verr(
			v, VERIFY_INVALID, v->lr_line,
			"loss_ranges: truncated, but the log lacks no range past the %zu listed",
			v->lr_n);
	v->r->loss_ranges_line = v->lr_line;
	return 0;
}

/* run_start: the policy it names, for the first policy_change to start from (optional here). */
static void note_run_start(struct verifier *v)
{
	if (jsonline_str(&v->jl, "policy_sha256", v->pol_sha, sizeof(v->pol_sha)) != 64)
		v->pol_sha[0] = '\0';
	if (jsonline_str(&v->jl, "mode", v->pol_mode, sizeof(v->pol_mode)) < 0)
		v->pol_mode[0] = '\0';
	v->pol_line = 0;
	v->era_high = 1; /* a run's programs start at generation 1 (a switch's are above) */
	v->era_now = 1;
}

static bool sha256_hex(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static bool mode_valid(const char *s)
{
	return !strcmp(s, "enforce") || !strcmp(s, "report");
}

static int check_change_era(struct verifier *v, const char *sha, const char *mode);

/*
 * A live run switched policy or mode (sluice set-mode, replace-policy): the new policy's path,
 * digest and mode, and the previous ones, which must be those in force (run_start's, or the
 * last policy_change's) where the log names them.
 */
static int check_policy_change(struct verifier *v)
{
	static const char *const T = "policy_change";
	char sha[80], mode[16], prev_sha[80], prev_mode[16], where[48];
	const struct jsonline_member *m = jsonline_get(&v->jl, "policy");
	int err;

	if (!m || (m->v.kind != JSONLINE_STRING && m->v.kind != JSONLINE_NULL))
		return BAD(v, "%s: policy is not a string or null", T);
	m = jsonline_get(&v->jl, "requested_by");
	if (m && m->v.kind != JSONLINE_STRING)
		return BAD(v, "%s: requested_by is not a string", T);
	if (str_field(v, T, "policy_sha256", sha, sizeof(sha)) < 0 ||
	    str_field(v, T, "mode", mode, sizeof(mode)) < 0 ||
	    str_field(v, T, "prev_policy_sha256", prev_sha, sizeof(prev_sha)) < 0 ||
	    str_field(v, T, "prev_mode", prev_mode, sizeof(prev_mode)) < 0)
		return -ECANCELED;
	if (!sha256_hex(sha) || !sha256_hex(prev_sha))
		return BAD(v, "%s: %s is not 64 lower-case hex digits", T,
			   sha256_hex(sha) ? "prev_policy_sha256" : "policy_sha256");
	if (!mode_valid(mode) || !mode_valid(prev_mode))
		return BAD(v, "%s: %s is neither \"enforce\" nor \"report\"", T,
			   mode_valid(mode) ? "prev_mode" : "mode");
	if (v->pol_line)
		snprintf(where, sizeof(where), "the policy_change at line %" PRIu64, v->pol_line);
	else
		snprintf(where, sizeof(where), "run_start");
	if (v->pol_sha[0] && strcmp(prev_sha, v->pol_sha))
		return BAD(v, "%s: prev_policy_sha256 %s is not the policy of %s (%s)", T, prev_sha,
			   where, v->pol_sha);
	if (v->pol_mode[0] && strcmp(prev_mode, v->pol_mode))
		return BAD(v, "%s: prev_mode %s is not the mode of %s (%s)", T, prev_mode, where,
			   v->pol_mode);
	err = check_change_era(v, sha, mode);
	if (err)
		return err;
	memcpy(v->pol_sha, sha, 65);
	memcpy(v->pol_mode, mode, strlen(mode) + 1);
	v->pol_line = v->lines + 1;
	return 0;
}

/*
 * A switch announced before its commit (switch.c): the policy, digest, mode and generation its
 * programs will have. Generations are never handed out twice: above every one named before.
 * One at a time: a begin is closed by its policy_change or a policy_switch_abort.
 */
static int check_switch_begin(struct verifier *v)
{
	static const char *const T = "policy_switch_begin";
	const struct jsonline_member *m = jsonline_get(&v->jl, "policy");
	char sha[80], mode[16];
	uint64_t era, prev_era;

	if (!m || (m->v.kind != JSONLINE_STRING && m->v.kind != JSONLINE_NULL))
		return BAD(v, "%s: policy is not a string or null", T);
	m = jsonline_get(&v->jl, "requested_by");
	if (m && m->v.kind != JSONLINE_STRING)
		return BAD(v, "%s: requested_by is not a string", T);
	if (str_field(v, T, "policy_sha256", sha, sizeof(sha)) < 0 ||
	    str_field(v, T, "mode", mode, sizeof(mode)) < 0 || u64_field(v, T, "era", &era) ||
	    u64_field(v, T, "prev_era", &prev_era))
		return -ECANCELED;
	if (!sha256_hex(sha))
		return BAD(v, "%s: policy_sha256 is not 64 lower-case hex digits", T);
	if (!mode_valid(mode))
		return BAD(v, "%s: mode is neither \"enforce\" nor \"report\"", T);
	if (v->sw_line)
		return BAD(v, "%s: the switch announced at line %" PRIu64 " is still open (neither "
			      "its policy_change nor a policy_switch_abort came)", T, v->sw_line);
	if (era <= v->era_high || prev_era >= era)
		return BAD(v, "%s: era %" PRIu64 " is not above every generation named before "
			      "(%" PRIu64 ") and its prev_era %" PRIu64 ": a generation handed out "
			      "twice", T, era, v->era_high, prev_era);
	if (v->era_now && prev_era != v->era_now && v->pol_line)
		return BAD(v, "%s: prev_era %" PRIu64 " is not the generation in force (%" PRIu64
			      ", the policy_change's at line %" PRIu64 ")", T, prev_era, v->era_now,
			   v->pol_line);
	if (v->era_now && prev_era != v->era_now)
		return BAD(v, "%s: prev_era %" PRIu64 " is not the generation in force (%" PRIu64
			      ", run_start's)", T, prev_era, v->era_now);
	memcpy(v->sw_sha, sha, 65);
	memcpy(v->sw_mode, mode, strlen(mode) + 1);
	v->sw_era = era;
	v->sw_line = v->lines + 1;
	v->era_high = era;
	return 0;
}

/*
 * A policy_change closes the switch announced before it: the very policy, mode and generation
 * (a hand-made change, or a begin that names another policy, is refused). Without a begin (a
 * sluice that wrote none), its era, where it names one, is above every one before.
 */
static int check_change_era(struct verifier *v, const char *sha, const char *mode)
{
	static const char *const T = "policy_change";
	const struct jsonline_member *m = jsonline_get(&v->jl, "era");
	uint64_t era = 0;

	if (m && u64_field(v, T, "era", &era))
		return -ECANCELED;
	if (v->sw_line) {
		if (strcmp(sha, v->sw_sha))
			return BAD(v, "%s: policy_sha256 %s is not the policy the switch announced at "
				      "line %" PRIu64 " named (%s)", T, sha, v->sw_line, v->sw_sha);
		if (strcmp(mode, v->sw_mode))
			return BAD(v, "%s: mode %s is not the mode the switch announced at line "
				      "%" PRIu64 " named (%s)", T, mode, v->sw_line, v->sw_mode);
		if (!m || era != v->sw_era)
			return BAD(v, "%s: era %s%" PRIu64 " is not the generation the switch "
				      "announced at line %" PRIu64 " named (%" PRIu64 ")", T,
				      m ? "" : "(none) ", era, v->sw_line, v->sw_era);
		v->sw_line = 0;
		v->era_now = era;
		return 0;
	}
	if (m && era <= v->era_high)
		return BAD(v, "%s: era %" PRIu64 " is not above every generation named before "
			      "(%" PRIu64 "): a generation handed out twice", T, era, v->era_high);
	if (m)
		v->era_high = era;
	v->era_now = era; /* 0 (unknown) where it names none */
	return 0;
}

/* A switch announced whose commit did not happen (it failed, or its writer died before it). */
static int check_switch_abort(struct verifier *v)
{
	static const char *const T = "policy_switch_abort";
	char why[512];
	uint64_t era;

	if (u64_field(v, T, "era", &era) || str_field(v, T, "why", why, sizeof(why)) < 0)
		return -ECANCELED;
	if (!v->sw_line)
		return BAD(v, "%s: no switch is open (no policy_switch_begin without its "
			      "policy_change before it)", T);
	if (era != v->sw_era)
		return BAD(v, "%s: era %" PRIu64 " is not the generation the switch announced at "
			      "line %" PRIu64 " named (%" PRIu64 ")", T, era, v->sw_line, v->sw_era);
	v->sw_line = 0;
	return 0;
}

static int check_record(struct verifier *v)
{
	const struct jsonline *jl = &v->jl;
	uint64_t k;
	int err;

	if (!v->lines)
		return check_log_start(v);
	if (jsonline_type_is(jl, "log_start"))
		return BAD(v, "log_start record after the first line");
	if (jsonline_type_is(jl, "checkpoint"))
		return check_checkpoint(v);
	/*
	 * A loss or anomaly line before it the dead writer could not sign: the restart does. So
	 * with a writer_restart whose own checkpoint never came (that writer died too): the next
	 * one's covers both, and the key of the one before signed nothing.
	 */
	if (jsonline_type_is(jl, "writer_restart"))
		return check_writer_restart(v);
	if (v->restart_cp_due)
		return BAD(v,
			   "the writer_restart record at line %" PRIu64
			   " is not followed at once by "
			   "a checkpoint (reason \"restart\")",
			   v->restart_line);
	/* the writer signs a loss or an anomaly at once, in the same locked write */
	if (v->cp_after_type)
		return BAD(v,
			   "the %s record at line %" PRIu64 " is not followed at once by a "
			   "checkpoint (reason \"%s\")",
			   v->cp_after_type, v->cp_after_line, v->cp_after_type);
	/* run_end is the last record: its counts are final (a second one or loss_ranges say so) */
	if (v->run_end_line && !jsonline_type_is(jl, "run_end") &&
	    !jsonline_type_is(jl, "loss_ranges")) {
		char type[32];

		if (jsonline_decode(jl, &jl->m[3].v, type, sizeof(type)) < 0)
			snprintf(type, sizeof(type), "(long type)");
		return BAD(v,
			   "a \"%s\" record after run_end (line %" PRIu64 "): only checkpoints "
			   "come between run_end and the final seal",
			   type, v->run_end_line);
	}
	/* a writer that took over closes the switch its dead predecessor left open, first */
	if (v->sw_line && v->restart_line > v->sw_line && !jsonline_type_is(jl, "policy_change") &&
	    !jsonline_type_is(jl, "policy_switch_abort"))
		return BAD(v, "the switch announced at line %" PRIu64 " is still open after the "
			      "writer_restart at line %" PRIu64 ": the writer that took over closes "
			      "it first (policy_change or policy_switch_abort)",
			   v->sw_line, v->restart_line);
	if (jsonline_type_is(jl, "run_end") && v->sw_line)
		return BAD(v, "run_end: the switch announced at line %" PRIu64 " was never closed "
			      "(neither its policy_change nor a policy_switch_abort came)", v->sw_line);
	if (jsonline_type_is(jl, "run_end")) {
		err = check_run_end(v);
		if (err)
			return err;
	} else if (jsonline_type_is(jl, "loss")) {
		err = check_loss(v);
		if (err)
			return err;
		v->cp_after_type = "loss";
		v->cp_after_line = v->lines + 1;
	} else if (jsonline_type_is(jl, "loss_ranges")) {
		err = check_loss_ranges(v);
		if (err)
			return err;
	} else if (jsonline_type_is(jl, "run_start")) {
		note_run_start(v);
	} else if (jsonline_type_is(jl, "policy_change")) {
		err = check_policy_change(v);
		if (err)
			return err;
	} else if (jsonline_type_is(jl, "policy_switch_begin")) {
		err = check_switch_begin(v);
		if (err)
			return err;
	} else if (jsonline_type_is(jl, "policy_switch_abort")) {
		err = check_switch_abort(v);
		if (err)
			return err;
	} else if (jsonline_type_is(jl, "anomaly")) {
		v->r->anomalies++;
		v->cp_after_type = "anomaly";
		v->cp_after_line = v->lines + 1;
	}
	err = jsonline_u64(jl, "kseq", &k);
	if (err == -EINVAL)
		return BAD(v, "kseq is not a non-negative integer");
	if (!err) {
		if (v->run_end_line && k >= v->r->kseq_next)
			return BAD(v, "kseq %" PRIu64 " at or past run_end's kseq_next %" PRIu64, k,
				   v->r->kseq_next);
		return kseq_add(v, k);
	}
	return 0;
}

/* An exported note of size S matched: line seq S (at line, not a checkpoint) had to be one. */
static int cp_due_refuse(struct verifier *v, uint64_t line)
{
	const struct ext_checkpoint *e = &v->ext[v->cp_due - 1];

	return verr(v, VERIFY_INVALID, line,
		    "not a checkpoint, but the exported checkpoint at %s:%" PRIu64
		    " has size %" PRIu64 " (the writer exports the notes of its "
		    "checkpoint lines, and one covering the seal line: a line of "
		    "seq %" PRIu64 " must be that checkpoint)",
		    v->o->checkpoints[e->file], e->file_line, e->size, e->size);
}

/* The line held as torn is not one: invalid there, with its parse error. */
static int torn_refuse(struct verifier *v)
{
	v->file_line = v->torn.file_line;
	return verr(v, VERIFY_INVALID, v->torn.line, "not canonical at column %zu: %s",
		    v->torn.off + 1, v->torn.why);
}

/* Append a line's bytes to the tree and the chain (a torn line's too). */
static void chain_append(struct verifier *v, const char *line, size_t len)
{
	tlog_append_line(&v->tree, line, len, v->r->format, v->prev);
	v->lines++;
}

/*
 * A line that is not canonical. It may be the torn line a writer killed inside a write() left,
 * if a writer_restart follows at once to say so: held (in the tree, prev and lines already, as
 * the writer_restart's seq and prev count it) until the next line tells. It can never be line 1
 * or 2 (log_start and run_start: no writer can resume without them), longer than a line, nor
 * the line after run_end (no writer_restart may follow): refused at once. (After a writer_restart it is that restart's checkpoint, torn: another restart follows.)
 */
static int torn_hold(struct verifier *v, const char *line, size_t len, size_t off, const char *why)
{
	if (v->lines < 2 || len > JSONLINE_MAX || v->run_end_line)
		return BAD(v, "not canonical at column %zu: %s", off + 1, why);
	v->torn.pending = true;
	v->torn.line = v->lines + 1;
	v->torn.file_line = v->file_line;
	v->torn.len = len;
	v->torn.off = off;
	v->torn.why = why;
	v->rotate_line = 0;
	chain_append(v, line, len);
	return 0;
}

/*
 * The line after a held one, parsed: the held line is a torn line if this is a writer_restart
 * with a torn length (check_writer_restart compares it), else the log is invalid at the held
 * line. Once accepted, the torn line gets the checks a line gets after its append, at its line.
 */
static int torn_accept(struct verifier *v)
{
	uint64_t torn, file_line = v->file_line;
	int err;

	v->torn.pending = false;
	if (!jsonline_type_is(&v->jl, "writer_restart") || jsonline_u64(&v->jl, "torn", &torn) ||
	    !torn)
		return torn_refuse(v);
	v->file_line = v->torn.file_line;
	if (v->cp_due)
		return cp_due_refuse(v, v->torn.line);
	err = ext_check(v);
	if (err)
		return err;
	v->file_line = file_line;
	v->torn_before = v->torn.len;
	v->r->restart_torn++;
	return 0;
}

static int check_line(struct verifier *v, const char *line, size_t len)
{
	char want[2 * TLOG_HASH_SIZE + 1];
	const char *why;
	size_t off;
	int err;

	if (v->last_cp_final)
		return BAD(v, "line after the final seal (line %" PRIu64 ")", v->last_cp_line);
	/* the line before was a rotate checkpoint, in this file: not renamed, rotation stopped */
	if (v->rotate_line)
		v->rotation_stopped = v->rotate_line;
	if (jsonline_parse(&v->jl, line, len, &off, &why)) {
		/* two lines in a row that are not canonical: the first is no torn line */
		if (v->torn.pending)
			return torn_refuse(v);
		return torn_hold(v, line, len, off, why);
	}
	if (v->torn.pending) {
		err = torn_accept(v);
		if (err)
			return err;
	}
	if (v->jl.seq != v->lines)
		return BAD(v,
			   "seq %" PRIu64 ", expected %" PRIu64 " (lines deleted, inserted or "
			   "reordered)",
			   v->jl.seq, v->lines);
	hex(v->prev, sizeof(v->prev), want);
	if (memcmp(v->jl.prev, want, 64)) {
		if (!v->lines)
			return BAD(v, "prev of the first line is not 64 zeros");
		return BAD(v,
			   "prev is not the %s of line %" PRIu64 " (a line before it changed, or "
			   "this line was moved)",
			   v->r->format >= 2 ? "leaf hash" : "SHA-256", v->lines);
	}
	if (v->cp_due) {
		if (!jsonline_type_is(&v->jl, "checkpoint"))
			return cp_due_refuse(v, v->lines + 1);
		v->cp_due = 0;
	}
	v->rotate_line = 0;
	err = check_record(v);
	if (err)
		return err;
	v->torn_before = 0;
	chain_append(v, line, len);
	if (v->lines == 1)
		v->last_cp_ts = v->jl.ts;
	err = ext_check(v);
	if (err)
		return err;
	if (v->o->on_line)
		v->o->on_line(&v->jl, v->o->ctx);
	return 0;
}

/*
 * Resume: LOG's last bytes, without "\n". A whole line that only lacks its newline is checked as
 * one (sluice resume appends the "\n"); anything else is the torn line resume keeps as a line of
 * its own, followed by its writer_restart: in the tree, prev and lines, as check_line() would
 * put it.
 */
static int resume_tail(struct verifier *v, const char *line, size_t len)
{
	const char *why;
	size_t off;
	int err;

	if (!jsonline_parse(&v->jl, line, len, &off, &why)) {
		err = check_line(v, line, len);
		if (!err)
			v->newline_missing = true;
		return err;
	}
	if (v->torn.pending)
		return torn_refuse(v);
	if (!v->lines)
		return BAD(v, "not canonical at column %zu: %s", off + 1, why);
	if (v->rotate_line)
		v->rotation_stopped = v->rotate_line;
	if (v->cp_due)
		return cp_due_refuse(v, v->lines + 1);
	v->rotate_line = 0;
	chain_append(v, line, len);
	v->torn_last = len;
	return ext_check(v);
}

/* ------------------------------------------------------------------------------------------ */

int verify_segment_path(const char *log, unsigned int k, bool gz, char *buf, size_t size)
{
	int n = snprintf(buf, size, gz ? "%s.%06u.gz" : "%s.%06u", log, k);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/*
 * Whether path exists (as anything, a dangling symlink too); an error other than ENOENT says
 * yes, so that opening it reports the error.
 */
static bool path_exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st) || errno != ENOENT;
}

/* Open a file of the log; an error (exit 4, or 1 for a .gz that is not gzip) if it cannot be. */
static int file_open(struct verifier *v, struct reader *rd, const char *path, bool gz)
{
	int err = reader_open(rd, path, gz);

	if (!err)
		return 0;
	v->file = path;
	v->file_line = 0;
	if (err == -EMEDIUMTYPE) {
		v->file_line = 1;
		return BAD(v, "not in gzip format (a rotated segment's .gz is its gzip)");
	}
	return verr(v, VERIFY_ERROR, 0, "cannot open: %s",
		    err == -EINVAL ? verify_file_kind(rd->mode) : strerror(-err));
}

/*
 * The copy's next line must be the same as line (segment k in both forms, plain and gzip: the
 * writer removes the plain one only after the gzip one is complete under its name).
 */
static int copy_same(struct verifier *v, const struct reader *rd, struct reader *copy,
		     const char *line, size_t len, int res)
{
	const char *cline, *why = NULL;
	size_t clen;
	int cres = reader_next(copy, &cline, &clen, &why);

	if (cres == res && (res == READ_EOF || (clen == len && !memcmp(cline, line, len))))
		return 0;
	v->file = copy->path;
	v->file_line = copy->line;
	if (cres < 0) {
		v->file_line = copy->line + 1;
		return BAD(v, "cannot read the rest of the file: %s (a corrupt gzip copy of %s)",
			   why, rd->path);
	}
	if (res == READ_EOF)
		return BAD(v, "holds more lines than %s, of which it is the gzip copy", rd->path);
	return BAD(v,
		   "differs from %s, of which it is the gzip copy (both must hold the same "
		   "bytes)",
		   rd->path);
}

/*
 * One file of the log; *last says whether it is LOG itself (not a rotated segment). copy, when
 * not NULL, is the segment's gzip form, read alongside and compared line by line.
 */
static int verify_file(struct verifier *v, struct reader *rd, const char *path, bool gz, bool last,
		       struct reader *copy)
{
	const char *line, *why = NULL;
	struct stat st;
	size_t len;
	int res, err;

	err = file_open(v, rd, path, gz);
	if (err)
		return err;
	v->file = path;
	v->file_line = 0;
	v->r->segments++;
	for (;;) {
		res = reader_next(rd, &line, &len, &why);
		v->file_line = rd->line;
		if (res == -EIO) {
			err = verr(v, VERIFY_ERROR, 0, "read error: %s", why);
			goto out;
		}
		if (res < 0) {
			v->file_line = rd->line + 1;
			err = BAD(v, "cannot read the rest of the file: %s", why);
			goto out;
		}
		if (copy) {
			err = copy_same(v, rd, copy, line, len, res);
			if (err)
				goto out;
			v->file = path;
			v->file_line = rd->line;
		}
		if (res == READ_EOF)
			break;
		if (res == READ_PARTIAL && last && v->o->resume && !v->last_cp_final) {
			err = resume_tail(v, line, len);
			if (err)
				goto out;
			break;
		}
		if (res == READ_PARTIAL) {
			if (v->torn.pending) {
				err = torn_refuse(v);
				goto out;
			}
			/* the writer died inside a line: only at the very end of the log */
			if (!last || v->last_cp_final) {
				err = BAD(v, "the file ends inside a line (no newline)");
				goto out;
			}
			v->r->partial_line = true;
			break;
		}
		err = check_line(v, line, len);
		if (err)
			goto out;
	}
	/* a line held as torn, no writer_restart after it (one never follows in another file) */
	if (v->torn.pending) {
		err = torn_refuse(v);
		goto out;
	}
	err = 0;
	if (!last) {
		if (!v->rotate_line)
			err = verr(v, VERIFY_INVALID, v->lines,
				   "the segment does not end with a rotate checkpoint");
		v->rotate_line = 0;
	}
out:
	/* what a resumed writer must find when it opens LOG to append: the file verified */
	if (last && rd->fd >= 0 && !fstat(rd->fd, &st)) {
		v->log_dev = st.st_dev;
		v->log_ino = st.st_ino;
		v->log_size = (uint64_t)st.st_size;
	}
	reader_close(rd);
	return err;
}

/*
 * Segment k: LOG.k.gz, or the plain LOG.k a crash left before (or during) its compression. When
 * both exist (a crash after the .gz got its name, before the plain one was removed), the plain
 * one is read: it is the file the writer wrote and synced, the .gz only its copy; the .gz must
 * still decompress to the same bytes, else the log is invalid (the writer names the .gz only
 * once it is complete and synced, so a corrupt one did not come from it).
 */
static int verify_segment(struct verifier *v, struct reader *rd, unsigned int k, bool *found)
{
	char gz[PATH_MAX], plain[PATH_MAX];
	struct reader *copy = NULL;
	bool have_gz, have_plain;
	int err;

	*found = false;
	if (verify_segment_path(v->o->log, k, true, gz, sizeof(gz)) ||
	    verify_segment_path(v->o->log, k, false, plain, sizeof(plain))) {
		v->file = v->o->log;
		return verr(v, VERIFY_ERROR, 0, "path too long");
	}
	have_gz = path_exists(gz);
	have_plain = path_exists(plain);
	if (!have_gz && !have_plain)
		return 0;
	*found = true;
	if (!have_plain)
		return verify_file(v, rd, gz, true, false, NULL);
	if (!have_gz)
		return verify_file(v, rd, plain, false, false, NULL);
	copy = malloc(sizeof(*copy));
	if (!copy)
		return verr(v, VERIFY_ERROR, 0, "%s", strerror(ENOMEM));
	err = file_open(v, copy, gz, true);
	if (!err) {
		err = verify_file(v, rd, plain, false, false, copy);
		reader_close(copy);
	}
	free(copy);
	return err;
}

static int verify_end(struct verifier *v)
{
	struct verify_result *r = v->r;
	uint64_t accounted, room;
	const char *how;

	if (!v->lines) {
		v->file_line = 1;
		return BAD(v, "the log is empty (no log_start)");
	}
	/* ext_check() took every exported checkpoint up to this size */
	if (v->next_ext < v->n_ext) {
		const struct ext_checkpoint *e = &v->ext[v->n_ext - 1];

		v->file_line++;
		return verr(v, VERIFY_INVALID, v->lines + 1,
			    "log truncated below an exported checkpoint of size %" PRIu64
			    " (%s:%" PRIu64 "): the log has %" PRIu64 " lines",
			    e->size, v->o->checkpoints[e->file], e->file_line, v->lines);
	}
	/*
	 * A note of size lines that is not the seal's own: the checkpoint line it was made for
	 * (seq lines) was written and synced before the note left, and is gone.
	 */
	if (v->cp_due && (!v->last_cp_final || r->partial_line)) {
		const struct ext_checkpoint *e = &v->ext[v->cp_due - 1];

		v->file_line++;
		return verr(v, VERIFY_INVALID, v->lines + 1,
			    "log truncated: the exported checkpoint at %s:%" PRIu64
			    " has size %" PRIu64 ", the note of a checkpoint line of seq %" PRIu64
			    " that the log lacks",
			    v->o->checkpoints[e->file], e->file_line, e->size, e->size);
	}
	r->lines = v->lines;
	/*
	 * The seal line itself is signed only by the note the writer exports after it (size =
	 * lines): with exported checkpoints given, a seal they do not cover may be forged (a log
	 * cut after a checkpoint, its reason edited to "final").
	 */
	if (v->last_cp_final && !r->partial_line && v->o->n_checkpoints &&
	    !(v->n_ext && v->ext[v->n_ext - 1].size == v->lines)) {
		r->seal_uncovered = true;
		seqset_finish(&v->kseqs, v->kseqs.high);
		r->missing_kseq = v->kseqs.missing;
		r->unsealed_lines = 1;
		r->status = VERIFY_UNSEALED;
		return 0;
	}
	if (!v->last_cp_final || r->partial_line) {
		seqset_finish(&v->kseqs, v->kseqs.high);
		r->missing_kseq = v->kseqs.missing;
		r->unsealed_lines = v->lines - v->last_cp_line + r->partial_line;
		r->status = VERIFY_UNSEALED;
		return 0;
	}
	r->sealed = true;
	seqset_finish(&v->kseqs, r->kseq_next);
	r->missing_kseq = v->kseqs.missing;
	if (v->lr_line && check_loss_ranges_end(v))
		return -ECANCELED;
	v->file = v->run_end_file;
	v->file_line = v->run_end_file_line;
	/*
	 * A kernel record is either in the log, declared lost, counted as not logged, or one a dead
	 * writer took and never wrote (run_end.restart_gap).
	 */
	if (r->declared_loss > UINT64_MAX - r->unlogged ||
	    r->declared_loss + r->unlogged > UINT64_MAX - r->restart_gap)
		return verr(v, VERIFY_INVALID, v->run_end_line, "run_end: unlogged overflows");
	accounted = r->declared_loss + r->unlogged + r->restart_gap;
	how = r->restart_gap ? (r->unlogged ? ", not logged or unaccounted across a writer restart"
					    : " or unaccounted across a writer restart")
	      : r->unlogged  ? " or not logged"
			     : "";
	if (r->missing_kseq > accounted)
		return verr(v, VERIFY_INVALID, v->run_end_line,
			    "%" PRIu64 " kernel records missing from the log (first kseq %" PRIu64
			    "), only %" PRIu64 " declared lost%s",
			    r->missing_kseq, r->missing[0].first, accounted, how);
	if (r->missing_kseq < accounted)
		return verr(v, VERIFY_INVALID, v->run_end_line,
			    "%" PRIu64 " kernel records declared lost%s, but %" PRIu64
			    " kseq values are missing",
			    accounted, how, r->missing_kseq);
	/*
	 * The gap lies in what the dead writers took: kseqs below the last writer_restart's
	 * kseq_below. The loss declared before that writer_restart lies there too (each record it
	 * counts took its kseq before the counters were read, before the restarted writer read the
	 * kernel's next one), so the gap is at most what is missing there besides.
	 */
	room = v->gap_below > v->loss_before_restart ? v->gap_below - v->loss_before_restart : 0;
	if (r->restart_gap > room)
		return verr(v, VERIFY_INVALID, v->run_end_line,
			    "run_end: restart_gap %" PRIu64 ", but only %" PRIu64
			    " kseq values below the kseq_below %" PRIu64
			    " of the last writer_restart "
			    "(line %" PRIu64 ") are missing and not declared lost before it (the "
			    "gap can only lie in what the dead writers took)",
			    r->restart_gap, room, v->restart_below, v->restart_line);
	r->status = r->declared_loss || r->restart_gap || r->log_failures ? VERIFY_LOSS : VERIFY_OK;
	return 0;
}

int verify_log(const struct verify_opts *o, struct verify_result *r)
{
	struct verifier *v;
	struct reader *rd = NULL;
	unsigned int k;
	int err;

	memset(r, 0, sizeof(*r));
	v = calloc(1, sizeof(*v));
	if (!v) {
		r->status = VERIFY_ERROR;
		snprintf(r->why, sizeof(r->why), "%s", strerror(ENOMEM));
		return r->status;
	}
	v->o = o;
	v->r = r;
	tlog_init(&v->tree);
	rd = malloc(sizeof(*rd));
	if (!rd || seqset_init(&v->kseqs, missing_range, v)) {
		verr(v, VERIFY_ERROR, 0, "%s", strerror(ENOMEM));
		goto out;
	}
	if (note_verifier_parse(o->host_vkey, &v->host)) {
		verr(v, VERIFY_ERROR, 0, "the host key is not a verifier key (NAME+HASH+KEY)");
		goto out;
	}
	snprintf(r->host_key_name, sizeof(r->host_key_name), "%s", v->host.name);
	for (k = 1;; k++) {
		bool found;

		err = verify_segment(v, rd, k, &found);
		if (err)
			goto out;
		if (!found)
			break;
	}
	/*
	 * Segments without LOG: a crash between rotation's rename of LOG and the creation of the
	 * next one (the last segment ends with its rotate checkpoint): unsealed, not unreadable.
	 */
	if (k > 1 && !path_exists(o->log))
		r->log_missing = true;
	else if (verify_file(v, rd, o->log, false, true, NULL))
		goto out;
	verify_end(v);
	if (o->resume && o->state && r->status == VERIFY_UNSEALED) {
		struct verify_state *st = o->state;

		memset(st, 0, sizeof(*st));
		st->format = r->format;
		st->tree = v->tree;
		memcpy(st->prev, v->prev, sizeof(st->prev));
		st->lines = v->lines;
		st->segments = k - 1;
		st->log_missing = r->log_missing;
		st->newline_missing = v->newline_missing;
		st->torn = v->torn_last;
		st->unsealed = v->lines - v->last_cp_line;
		st->kseq_high = v->kseqs.high;
		st->log_dev = v->log_dev;
		st->log_ino = v->log_ino;
		st->log_size = v->log_size;
	}
out:
	r->kseq_words_scanned = v->kseqs.words_scanned;
	if (r->status == VERIFY_INVALID || r->status == VERIFY_ERROR)
		r->lines = v->lines;
	for (size_t i = 0; i < v->n_ext; i++)
		free(v->ext[i].note);
	free(v->ext);
	free(v->keys);
	seqset_free(&v->kseqs);
	free(rd);
	free(v);
	return r->status;
}
