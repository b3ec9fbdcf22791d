// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The log writer. Lines are composed by the callers without seq and prev; under the journal's
 * lock each gets the next seq and the hash of the line before it, becomes a leaf of the Merkle
 * tree, and goes into a write buffer that reaches the file in whole lines. Checkpoints sign the
 * tree's root with the run key and are copied to the sidecar and the export descriptor only once
 * the log holding them is on disk (fdatasync), so no copy ever covers more than the log does.
 * The fdatasync runs on a thread of its own (the syncer), which copies the notes it covered:
 * the writer hands a checkpoint over and goes on writing lines while the disk catches up.
 *
 * Rotation renames the live file to PATH.NNNNNN (atomic: the segment is whole under one name or
 * the other) and goes on in a new PATH at once; a closed segment never changes, so a compressor
 * thread turns it into PATH.NNNNNN.gz later, outside the lock: writers never wait for zlib.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cjson.h"
#include "journal.h"
#include "tlog.h"
#include "util.h"

#define WBUF_SIZE (64 * 1024)
#define LINE_HEAD_MAX 102 /* {"seq":<at most 20 digits>,"prev":"<64 hex>", */
#define NOTE_MAX 1024	  /* a checkpoint or certificate note: origin, size, root, one signature */
#define SEGMENT_MAX 999999 /* LOG.000001.gz … LOG.999999.gz */
/*
 * Room on disk taken ahead of the lines (fallocate, the file's size unchanged): a disk that
 * fills up fails the log while the run's last lines — the declaration of what could not be
 * written, host_total, loss_ranges (8 KiB at most), run_end and the seal — still fit in it.
 * Taken in steps, so that a flush rarely needs a fallocate.
 */
#define RESERVE_BYTES (32 * 1024)
#define RESERVE_STEP (256 * 1024)
/* A sidecar holds a note per checkpoint: a few hundred bytes per thousand lines of log. */
#define SIDECAR_MAX (256 * 1024 * 1024)
#define SYNC_SLOTS JOURNAL_SYNC_MAX

/*
 * A thread of the journal's own (the syncer, the compressor): its work is handed over under lock
 * and wake tells it there is more, or that it is to stop; it finishes what is queued, then ends.
 * What it does and how its failures are told stay its own (the syncer's reach the writer, the
 * compressor's only stderr).
 */
struct worker {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* for the thread: work queued, or stop */
	pthread_t thread;
	bool started;
	bool stop;
};

/*
 * Checkpoints handed to the syncer: each waits for an fdatasync that starts after its line was
 * written, then its note is copied. One fdatasync covers every checkpoint queued before it
 * began. The writer waits only when SYNC_SLOTS are waiting (a disk that cannot keep up), or
 * for a rotation, the seal, a retry, a restart and the close. Lock order: journal.lock, then
 * copy_lock or sync.w.lock (never both); the thread takes journal.lock only to report a failed
 * sync, holding nothing else.
 */
struct sync_slot {
	int fd;		/* the live segment the line is in */
	bool sidecar_only; /* a dead writer's note a resume adds to the sidecar (the export's is new) */
	uint64_t seq;	/* the log's next seq when it was handed over (for the failure's report) */
	/* the segment's bytes [cached_from, cached_to) the sync puts on disk (see sync_pass) */
	uint64_t cached_from, cached_to;
	bool drop; /* those bytes leave the page cache once on disk (drop_behind) */
	size_t len;
	char note[NOTE_MAX + 1];
};

struct syncer {
	struct worker w; /* w.lock guards all below; w.wake: a checkpoint queued, or stop */
	pthread_cond_t done; /* for the writer: a sync ended (slots free, or the one it waits for) */
	bool start_failed; /* no thread: each checkpoint is synced on the writer's thread */
	uint64_t queued; /* checkpoints handed over so far; slot k % SYNC_SLOTS */
	uint64_t synced; /* of those, synced and copied (or dropped after a failed sync) */
	/* a sync failed: it and everything after it is never copied; reported once (reported) */
	int err;
	uint64_t err_seq;
	bool reported; /* with journal.lock */
	struct sync_slot slots[SYNC_SLOTS];
	/* the last pass's synced bytes, in behind_fd, still cached (drop_behind; its caller's) */
	int behind_fd;
	uint64_t behind_from, behind_to;
};

/*
 * Rotated segments wait here to be compressed, in order, by one thread started at the first
 * rotation. Lock order: journal.lock, then gz.w.lock; the thread takes only gz.w.lock.
 */
struct compressor {
	struct worker w;	/* w.lock guards all below; w.stop: journal_close's */
	unsigned int next;	/* the next segment to compress */
	unsigned int closed;	/* segments below this are closed (renamed) */
	bool failed;		/* one failure is reported; its segment stays plain */
};

struct journal {
	pthread_mutex_t lock; /* the resolver's threads write too: one chain, never interleaved */
	int fd;		      /* the live segment */
	int sidecar_fd;
	int export_fd;
	/* the copies' writes (the syncer's notes, log_failed's message), never interleaved */
	pthread_mutex_t copy_lock;
	struct syncer sync;
	/*
	 * The log's failure, 0 while it can be written: nothing is appended while it is set. A
	 * lack of space (ENOSPC, EDQUOT) whose write was cut back cleanly can be undone by
	 * journal_retry; anything else (dead) stays for the rest of the run.
	 */
	int err;
	bool dead;
	bool retrying; /* journal_retry's own lines may be appended, and fail quietly */
	uint64_t unwritten; /* lines refused or cut off since the log failed */
	void (*on_fail)(int err, void *ctx);
	void *fail_ctx;
	void (*on_line)(const char *line, size_t len, void *ctx);
	void *line_ctx;
	/* a failed copy stops (reported once, on stderr); the log goes on */
	bool export_failed;
	bool sealed;
	const struct note_signer *signer;
	char origin[NOTE_NAME_MAX + 1];
	char path[PATH_MAX];
	char sidecar_path[PATH_MAX];

	uint64_t format;		/* log_start's: what a line's prev is (tlog_append_line) */
	uint64_t seq;			/* of the next line */
	uint8_t prev[TLOG_HASH_SIZE];	/* hash of the last line */
	struct tlog_tree tree;

	uint64_t checkpoint_lines;
	unsigned int checkpoint_secs;
	uint64_t since_checkpoint; /* lines written after the last checkpoint line */
	/*
	 * CLOCK_BOOTTIME: it goes on during suspend, as the realtime ts gaps a verifier checks do,
	 * so a resumed run writes its overdue heartbeat at once.
	 */
	struct timespec last_checkpoint;

	uint64_t rotate_bytes;
	uint64_t file_bytes; /* of the live segment, buffered bytes included */
	unsigned int segment; /* number of the next rotated segment */
	bool keep_plain;      /* selftests: rotated segments are not compressed */
	struct compressor gz;

	char wbuf[WBUF_SIZE];
	size_t wlen;
	uint64_t wlines; /* whole lines in wbuf */
	uint64_t file_off; /* bytes of the live segment on disk */
	/* the live segment's bytes from here on: no checkpoint's sync drops them yet (sync_pass) */
	uint64_t cached_from;
	uint64_t reserved_end; /* the live segment's blocks are allocated up to here */
	bool no_reserve;       /* the file system cannot allocate ahead (no fallocate) */
	bool final;	       /* the run's last lines: they may use the reserve (journal_final) */
	/*
	 * The chain as the file holds it (wbuf empty): a failed write cuts the file back to
	 * file_off and the chain back to this, so the next line follows the last one on disk.
	 */
	uint64_t disk_seq; /* read without the lock: journal_lines_written */
	uint8_t disk_prev[TLOG_HASH_SIZE];
	struct tlog_tree disk_tree;

	struct journal_line cp;		 /* a checkpoint being built */
};

/* ------------------------------------------------------------------------------------------ */
/* Lines */

static void put(struct journal_line *l, const char *s, size_t n)
{
	if (l->overflow || n >= sizeof(l->buf) - l->len) {
		l->overflow = true;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void put_u64(struct journal_line *l, uint64_t v)
{
	char tmp[CJSON_INT_MAX];

	/* straight into the line when any integer fits (put keeps one byte free) */
	if (!l->overflow && sizeof(l->buf) - l->len > CJSON_INT_MAX) {
		l->len += cjson_fmt_u64(l->buf + l->len, v);
		return;
	}
	put(l, tmp, cjson_fmt_u64(tmp, v));
}

static void put_i64(struct journal_line *l, int64_t v)
{
	char tmp[CJSON_INT_MAX];

	put(l, tmp, cjson_fmt_i64(tmp, v));
}

/* The NUL terminator is never a continuation byte, so this stops at it. */
uint32_t journal_utf8_cp(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp = s[0] & (0x7f >> n);
	size_t i;

	for (i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	return cp;
}

bool journal_cp_misleads(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

size_t journal_utf8_len(const char *str)
{
	/* the NUL terminator is never a continuation byte: the check stops at it */
	return cjson_utf8_len((const unsigned char *)str, strnlen(str, 4));
}

/* The one canonical string form (cjson.h), shared with the daemon's socket. */
static void put_cb(void *l, const char *s, size_t n)
{
	put(l, s, n);
}

/*
 * A line is a dozen keys and strings, nearly all plain ASCII: those are copied into the line in
 * one pass (cjson_put_plain), the rest go through the byte-wise writer. Both give the same bytes.
 */
static void put_json_string(struct journal_line *l, const char *str)
{
	size_t n;

	if (l->overflow)
		return;
	/* put() keeps one byte of the buffer free: so does this */
	n = cjson_put_plain(l->buf + l->len, sizeof(l->buf) - l->len - 1, str);
	if (n)
		l->len += n;
	else
		cjson_put_string(put_cb, l, str);
}

static void put_key(struct journal_line *l, const char *key)
{
	size_t room = sizeof(l->buf) - l->len, n;

	/* ,"key": in one copy when the key is plain and fits (with the byte put() keeps free) */
	if (!l->overflow && room > 3 && (n = cjson_put_plain(l->buf + l->len + 1, room - 3, key))) {
		l->buf[l->len] = ',';
		l->buf[l->len + 1 + n] = ':';
		l->len += n + 2;
		return;
	}
	put(l, ",", 1);
	put_json_string(l, key);
	put(l, ":", 1);
}

void journal_line_begin(struct journal_line *l, const char *type, const struct timespec *ts)
{
	l->len = 0;
	l->overflow = util_copy(l->type, sizeof(l->type), type) != 0;
	put(l, "{\"ts\":", 6);
	put_i64(l, (int64_t)ts->tv_sec * 1000000 + ts->tv_nsec / 1000);
	put_key(l, "type");
	put_json_string(l, type);
}

void journal_line_str(struct journal_line *l, const char *key, const char *val)
{
	put_key(l, key);
	if (val)
		put_json_string(l, val);
	else
		put(l, "null", 4);
}

void journal_line_u64(struct journal_line *l, const char *key, uint64_t val)
{
	put_key(l, key);
	put_u64(l, val);
}

void journal_line_i64(struct journal_line *l, const char *key, int64_t val)
{
	put_key(l, key);
	put_i64(l, val);
}

void journal_line_bool(struct journal_line *l, const char *key, bool val)
{
	put_key(l, key);
	put(l, val ? "true" : "false", val ? 4 : 5);
}

void journal_line_strv(struct journal_line *l, const char *key, char *const *vals, size_t n)
{
	size_t i;

	put_key(l, key);
	put(l, "[", 1);
	for (i = 0; i < n; i++) {
		if (i)
			put(l, ",", 1);
		put_json_string(l, vals[i]);
	}
	put(l, "]", 1);
}

static void count_bytes(void *ctx, const char *s, size_t n)
{
	(void)s;
	*(size_t *)ctx += n;
}

size_t journal_strv_fit(char *const *vals, size_t n, size_t budget)
{
	size_t i, bytes = 2; /* [] */

	for (i = 0; i < n; i++) {
		bytes += !!i;
		cjson_put_string(count_bytes, &bytes, vals[i]);
		if (bytes > budget)
			break;
	}
	return i;
}

void journal_line_u64v(struct journal_line *l, const char *key, const uint64_t *vals, size_t n)
{
	size_t i;

	put_key(l, key);
	put(l, "[", 1);
	for (i = 0; i < n; i++) {
		if (i)
			put(l, ",", 1);
		put_u64(l, vals[i]);
	}
	put(l, "]", 1);
}

int journal_line_finish(struct journal_line *l)
{
	put(l, "}\n", 2);
	return l->overflow ? -E2BIG : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Writing (all with j->lock held, or before any other thread has the journal) */

/* write() of a whole buffer; returns bytes written and sets *err on failure. */
static size_t write_all(int fd, const char *buf, size_t len, int *err)
{
	size_t done = 0;

	*err = 0;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*err = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	return done;
}

/*
 * A write to the export descriptor: a pipe whose reader left must fail with EPIPE, not kill the
 * enforcer with SIGPIPE, so the signal is blocked and any pending one taken back.
 */
static int write_export(struct journal *j, const char *buf, size_t len)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t pipe_set, old;
	int err;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	write_all(j->export_fd, buf, len, &err);
	if (err == -EPIPE && !sigismember(&old, SIGPIPE))
		sigtimedwait(&pipe_set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/*
 * A checkpoint copy failed: that copy stops (a torn note could only be its last thing), the log
 * goes on. Said here, once per copy, in words of its own: the log did not fail, and a later
 * failure of the log must still be reported as one.
 */
static void export_failed(struct journal *j, int err)
{
	j->export_failed = true;
	fprintf(stderr,
		"sluice: exporting checkpoints to descriptor %d: %s; the export stops, the log "
		"goes on\n",
		j->export_fd, strerror(-err));
}

static void sidecar_failed(struct journal *j, int err)
{
	close(j->sidecar_fd);
	j->sidecar_fd = -1;
	fprintf(stderr, "sluice: writing checkpoints to %s: %s; that copy stops, the log goes on\n",
		j->sidecar_path, strerror(-err));
}

/*
 * The log failed: remember it, say so in the export stream where a supervisor reads, and tell
 * the run (--strict-evidence refuses new connections from now on). A lack of space can be
 * retried (journal_retry); journal_retry's own failures are not news.
 */
static void log_failed(struct journal *j, uint64_t seq, int err, bool space)
{
	char msg[256];
	int n, e;

	if (!space || (err != -ENOSPC && err != -EDQUOT))
		j->dead = true;
	if (j->err)
		return;
	j->err = err;
	if (j->on_fail)
		j->on_fail(err, j->fail_ctx);
	n = snprintf(msg, sizeof(msg), "sluice: log write failed at seq %" PRIu64 ": %s\n\n", seq,
		     strerror(-err));
	pthread_mutex_lock(&j->copy_lock);
	if (j->export_fd >= 0 && !j->export_failed && n > 0 && (size_t)n < sizeof(msg)) {
		e = write_export(j, msg, (size_t)n);
		if (e)
			export_failed(j, e);
	}
	pthread_mutex_unlock(&j->copy_lock);
}

/* The file holds every line so far: what a failed write goes back to. */
static void disk_state_save(struct journal *j)
{
	__atomic_store_n(&j->disk_seq, j->seq, __ATOMIC_RELEASE);
	memcpy(j->disk_prev, j->prev, sizeof(j->prev));
	j->disk_tree = j->tree;
}

/*
 * Room for len more bytes and RESERVE_BYTES after them, taken before they are written: a lack
 * of space then fails the log with nothing written, the reserve intact.
 */
static int reserve_locked(struct journal *j, size_t len)
{
	uint64_t need = j->file_off + len + RESERVE_BYTES;
	int err;

	if (j->no_reserve || j->final || need <= j->reserved_end)
		return 0;
	if (!fallocate(j->fd, FALLOC_FL_KEEP_SIZE, (off_t)j->file_off,
		       (off_t)(len + RESERVE_BYTES + RESERVE_STEP))) {
		j->reserved_end = need + RESERVE_STEP;
		return 0;
	}
	err = -errno;
	if ((err == -ENOSPC || err == -EDQUOT) &&
	    !fallocate(j->fd, FALLOC_FL_KEEP_SIZE, (off_t)j->file_off, (off_t)(len + RESERVE_BYTES))) {
		j->reserved_end = need;
		return 0;
	}
	if (err == -ENOSPC || err == -EDQUOT)
		return err;
	/* a file system that cannot: the log is written as it comes, and cut back on a failure */
	j->no_reserve = true;
	return 0;
}

/* The blocks taken beyond the end of the live segment, given back (best effort). */
static void reserve_release(struct journal *j)
{
	/* to a page boundary (64 KiB: any page size), or the last page taken would stay */
	uint64_t end = (j->reserved_end + 0xffff) & ~(uint64_t)0xffff;

	if (j->reserved_end > j->file_off)
		fallocate(j->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)j->file_off,
			  (off_t)(end - j->file_off));
	j->reserved_end = 0;
}

/*
 * Write the buffer out. On a failure the file is cut back to where this write started: the
 * lines before it are untouched, none of this write's is left (whole or torn), and the chain
 * goes back to the last line on disk, so that the log can go on after it once there is room
 * again. The lines cut off are counted as unwritten.
 */
static int flush_locked(struct journal *j)
{
	size_t done;
	int err;

	if (j->err && !j->retrying)
		return j->err;
	if (!j->wlen)
		return 0;
	err = reserve_locked(j, j->wlen);
	done = err ? 0 : write_all(j->fd, j->wbuf, j->wlen, &err);
	if (!err) {
		j->file_off += done;
		j->wlen = 0;
		j->wlines = 0;
		disk_state_save(j);
		return 0;
	}
	if (!j->retrying)
		j->unwritten += j->wlines;
	j->wlen = 0;
	j->wlines = 0;
	j->seq = j->disk_seq;
	memcpy(j->prev, j->disk_prev, sizeof(j->prev));
	j->tree = j->disk_tree;
	j->file_bytes = j->file_off;
	if (done)
		j->reserved_end = 0; /* cutting back may give back what was taken ahead */
	/* (with O_APPEND, as after a resume, the offset follows the size by itself) */
	if (done && (ftruncate(j->fd, (off_t)j->file_off) ||
		     lseek(j->fd, (off_t)j->file_off, SEEK_SET) < 0)) {
		fprintf(stderr, "sluice: cutting log %s back to its last whole line: %s\n", j->path,
			strerror(errno));
		log_failed(j, j->seq, err, false);
		return err;
	}
	log_failed(j, j->seq, err, true);
	return err;
}

/*
 * Give the line in body ({"ts":…}\n, as journal_line_finish left it) its seq and prev, add it to
 * the tree and the write buffer.
 */
static int append_locked(struct journal *j, const struct journal_line *body)
{
	char head[LINE_HEAD_MAX], *line;
	size_t n, total;
	int err;

	if (j->err && !j->retrying)
		return j->err;
	if (j->sealed)
		return -EPIPE;
	memcpy(head, "{\"seq\":", 7);
	n = 7 + cjson_fmt_u64(head + 7, j->seq);
	memcpy(head + n, ",\"prev\":\"", 9);
	n += 9;
	util_hex(j->prev, TLOG_HASH_SIZE, head + n, sizeof(head) - n); /* fits: LINE_HEAD_MAX */
	n += 2 * TLOG_HASH_SIZE;
	memcpy(head + n, "\",", 2);
	n += 2;
	/* body starts with "{" and ends with "}\n"; the whole line fits JOURNAL_LINE_MAX */
	if (body->len < 3 || body->buf[0] != '{' || body->len - 1 > JOURNAL_LINE_MAX - n)
		return -E2BIG;
	total = n + body->len - 1;

	if (total > sizeof(j->wbuf) - j->wlen) {
		err = flush_locked(j);
		if (err) {
			/* this line is lost with the buffer's: counted with them (not in a retry) */
			if (!j->retrying)
				j->unwritten++;
			return err;
		}
	}
	/* composed where it is written from: one copy of the body */
	line = j->wbuf + j->wlen;
	memcpy(line, head, n);
	memcpy(line + n, body->buf + 1, body->len - 1);
	tlog_append_line(&j->tree, line, total - 1, j->format, j->prev);
	j->wlen += total;
	j->wlines++;
	j->seq++;
	j->file_bytes += total;
	j->since_checkpoint++;
	if (j->on_line)
		j->on_line(line, total, j->line_ctx);
	return 0;
}

static bool reason_valid(const char *reason)
{
	static const char *const reasons[] = { "lines", "time", "heartbeat", "loss", "anomaly",
					       "rotate", "restart", "final" };
	size_t i;

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (!strcmp(reason, reasons[i]))
			return true;
	return false;
}

/*
 * The note then one blank line, to the sidecar and the export fd (with copy_lock). A failure
 * stops that copy only, and is not the log's: it is reported by itself, never returned as a
 * log error.
 */
static void copy_note(struct journal *j, char *note, size_t len, bool sidecar_only)
{
	int e;

	note[len] = '\n'; /* note has room: NOTE_MAX + 1 */
	if (j->sidecar_fd >= 0) {
		write_all(j->sidecar_fd, note, len + 1, &e);
		if (e)
			sidecar_failed(j, e);
	}
	if (j->export_fd >= 0 && !j->export_failed && !sidecar_only) {
		e = write_export(j, note, len + 1);
		if (e)
			export_failed(j, e);
	}
	note[len] = '\0';
}

/* ------------------------------------------------------------------------------------------ */
/* The journal's threads */

static void worker_init(struct worker *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
}

static void worker_destroy(struct worker *w)
{
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
}

/* Start w's thread, fn(arg): 0 or -errno. Takes no lock; sets nothing (the caller says started). */
static int worker_start(struct worker *w, void *(*fn)(void *), void *arg)
{
	return util_thread_create(&w->thread, fn, arg);
}

/*
 * End w's thread once it has done what is queued (without w->lock; at the journal's end, with no
 * writer left to queue more).
 */
static void worker_stop(struct worker *w)
{
	bool started;

	pthread_mutex_lock(&w->lock);
	w->stop = true;
	started = w->started;
	w->started = false;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	if (started)
		pthread_join(w->thread, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* The syncer */

/*
 * A failed sync, said once (with j->lock): the lines written since the last sync that
 * succeeded may not be on disk, so the log stops for good, as a failed write that cannot be
 * cut back does. Called by whichever of the writer and the syncer gets there first.
 */
static int sync_failure_locked(struct journal *j)
{
	struct syncer *s = &j->sync;
	uint64_t seq;
	int err;

	pthread_mutex_lock(&s->w.lock);
	err = s->err;
	seq = s->err_seq;
	pthread_mutex_unlock(&s->w.lock);
	if (err && !s->reported) {
		s->reported = true;
		log_failed(j, seq, err, false);
	}
	return err;
}

/*
 * The log's bytes [from, to), on disk now, leave the page cache: the writer never reads them
 * back, and a log written at hundreds of MB/s would otherwise push everything else out of the
 * cache, and make each write take a fresh page (make bench measured the writer's write() at a
 * quarter of its CPU, most of it the copy into new pages; reused ones cost a fifth of that). A
 * reader further behind than drop_behind keeps (sluice verify) reads them from disk. Advice only: a page still dirty
 * or partly written stays, and a failure changes nothing. From the page that holds from (the
 * last pass left it, partly written then).
 */
static void drop_synced(int fd, uint64_t from, uint64_t to)
{
	from &= ~(uint64_t)0xffff; /* a page boundary, whatever the page size */
	if (to > from)
		posix_fadvise(fd, (off_t)from, (off_t)(to - from), POSIX_FADV_DONTNEED);
}

/*
 * One pass behind: what the previous pass synced leaves the cache now, what this one synced
 * stays until the next, so that a reader trailing the writer by up to a checkpoint (sluice
 * events -f on the file, a log shipper) still reads it from memory. Not while the log rotates:
 * its cache is bounded by one segment, which the compressor reads back right after the
 * rotation and then removes.
 */
static void drop_behind(struct syncer *s, int fd, uint64_t from, uint64_t to)
{
	const struct sync_slot *last = &s->slots[(to - 1) % SYNC_SLOTS];

	if (s->behind_to && s->behind_fd == fd)
		drop_synced(fd, s->behind_from, s->behind_to);
	s->behind_to = 0;
	if (!last->drop)
		return;
	s->behind_fd = fd;
	s->behind_from = s->slots[from % SYNC_SLOTS].cached_from;
	s->behind_to = last->cached_to;
}

/*
 * Sync the checkpoints queued, then copy their notes; with s->w.lock held (dropped around the
 * I/O). Returns 0, or the sync's error: none of them is copied, nor anything queued later.
 */
static int sync_pass(struct journal *j)
{
	struct syncer *s = &j->sync;
	uint64_t from = s->synced, to = s->queued, k;
	/* one file for all: a rotation waits for its checkpoint's sync before it changes files */
	int fd = s->slots[(to - 1) % SYNC_SLOTS].fd, err = s->err;

	if (!err) {
		/* the slots [from, to) stay the syncer's until synced moves: no lock for them */
		pthread_mutex_unlock(&s->w.lock);
		err = fdatasync(fd) ? -errno : 0;
		if (!err) {
			drop_behind(s, fd, from, to);
			pthread_mutex_lock(&j->copy_lock);
			for (k = from; k < to; k++) {
				struct sync_slot *sl = &s->slots[k % SYNC_SLOTS];

				copy_note(j, sl->note, sl->len, sl->sidecar_only);
			}
			pthread_mutex_unlock(&j->copy_lock);
		}
		pthread_mutex_lock(&s->w.lock);
		if (err && !s->err) {
			s->err = err;
			s->err_seq = s->slots[from % SYNC_SLOTS].seq; /* the first not on disk */
		}
	}
	/*
	 * A failure ends every wait: what was queued behind the failed sync is never copied, and
	 * nothing more is queued (sync_queue_locked checks err). Leaving it queued would deadlock
	 * a writer in sync_wait_locked (it holds j->lock) against this thread's report of the
	 * failure (it takes j->lock).
	 */
	s->synced = err ? s->queued : to;
	pthread_cond_broadcast(&s->done);
	return err;
}

static void *syncer_main(void *arg)
{
	struct journal *j = arg;
	struct syncer *s = &j->sync;

	pthread_mutex_lock(&s->w.lock);
	for (;;) {
		if (s->synced == s->queued) {
			if (s->w.stop)
				break;
			pthread_cond_wait(&s->w.wake, &s->w.lock);
			continue;
		}
		if (sync_pass(j)) {
			/* told at once, not at the writer's next line: the run may be idle */
			pthread_mutex_unlock(&s->w.lock);
			pthread_mutex_lock(&j->lock);
			sync_failure_locked(j);
			pthread_mutex_unlock(&j->lock);
			pthread_mutex_lock(&s->w.lock);
		}
	}
	pthread_mutex_unlock(&s->w.lock);
	return NULL;
}

/* Start the syncer (with j->lock). No thread: checkpoints are synced on the writer's. */
static void syncer_start(struct journal *j)
{
	struct syncer *s = &j->sync;
	int err = worker_start(&s->w, syncer_main, j);

	pthread_mutex_lock(&s->w.lock);
	s->w.started = !err;
	s->start_failed = !!err;
	pthread_mutex_unlock(&s->w.lock);
	if (err)
		fprintf(stderr, "sluice: starting the log's sync thread: %s; the writer syncs each "
				"checkpoint itself\n",
			strerror(-err));
}

/*
 * Hand a checkpoint's note over (with j->lock, its line written to the file): it is copied
 * once an fdatasync that starts after now has returned. Waits only while SYNC_SLOTS wait.
 * Returns a sync's failure, if one happened since.
 */
static int sync_queue_locked(struct journal *j, const char *note, size_t len, bool sidecar_only)
{
	struct syncer *s = &j->sync;
	struct sync_slot *sl;
	int err;

	if (!s->w.started && !s->start_failed)
		syncer_start(j);
	pthread_mutex_lock(&s->w.lock);
	while (!s->err && s->queued - s->synced >= SYNC_SLOTS)
		pthread_cond_wait(&s->done, &s->w.lock);
	err = s->err;
	if (!err) {
		sl = &s->slots[s->queued % SYNC_SLOTS];
		sl->fd = j->fd;
		sl->sidecar_only = sidecar_only;
		sl->seq = j->seq;
		sl->cached_from = j->cached_from;
		sl->cached_to = j->file_off;
		sl->drop = !j->rotate_bytes;
		j->cached_from = j->file_off;
		sl->len = len;
		memcpy(sl->note, note, len);
		s->queued++;
		if (s->w.started)
			pthread_cond_signal(&s->w.wake);
		else
			sync_pass(j);
		err = s->err;
	}
	pthread_mutex_unlock(&s->w.lock);
	return err ? sync_failure_locked(j) : 0;
}

/* Wait until every checkpoint handed over is synced and copied (with j->lock). */
static int sync_wait_locked(struct journal *j)
{
	struct syncer *s = &j->sync;

	pthread_mutex_lock(&s->w.lock);
	while (s->synced != s->queued && !s->err)
		pthread_cond_wait(&s->done, &s->w.lock);
	pthread_mutex_unlock(&s->w.lock);
	return sync_failure_locked(j);
}

/* The signed checkpoint note of the tree as it is now, in note (NOTE_MAX + 1 bytes). */
static int sign_tree(struct journal *j, uint8_t root[TLOG_HASH_SIZE], char *note, size_t *note_len)
{
	char text[NOTE_MAX];
	int len;

	tlog_root(&j->tree, root);
	len = checkpoint_text(j->origin, j->tree.size, root, text, sizeof(text));
	if (len < 0)
		return len;
	return note_sign(j->signer, text, (size_t)len, note, NOTE_MAX, note_len);
}

static int checkpoint_locked(struct journal *j, const char *reason)
{
	bool final = !strcmp(reason, "final");
	uint8_t root[TLOG_HASH_SIZE];
	char note[NOTE_MAX + 1], root64[64];
	struct timespec now;
	size_t note_len;
	int len, err;

	if (j->err && !j->retrying)
		return j->err;
	if (j->sealed)
		return -EPIPE;
	err = sign_tree(j, root, note, &note_len);
	if (err)
		return err;
	len = note_base64_encode(root, sizeof(root), root64, sizeof(root64));
	if (len < 0)
		return len;

	clock_gettime(CLOCK_REALTIME, &now);
	journal_line_begin(&j->cp, "checkpoint", &now);
	journal_line_str(&j->cp, "reason", reason);
	journal_line_u64(&j->cp, "size", j->tree.size);
	journal_line_str(&j->cp, "root", root64);
	journal_line_str(&j->cp, "note", note);
	err = journal_line_finish(&j->cp);
	if (!err)
		err = append_locked(j, &j->cp);
	/*
	 * Every checkpoint line, and all lines before it, are on disk before any copy claims
	 * them: an exported note must never cover more than a crash leaves of the log. The line
	 * is written now; the syncer copies its note after an fdatasync that starts later.
	 */
	if (!err)
		err = flush_locked(j);
	if (!err)
		err = sync_queue_locked(j, note, note_len, false);
	if (err)
		return err;
	j->since_checkpoint = 0;
	clock_gettime(CLOCK_BOOTTIME, &j->last_checkpoint);
	if (!final)
		return 0;
	/*
	 * The seal line S is covered by no signature in the log (a checkpoint covers the lines
	 * before it). The copies get one more note, of size S + 1, so that an exported stream
	 * authenticates the seal itself: its reason and ts. The log does not hold it.
	 */
	err = sign_tree(j, root, note, &note_len);
	if (err)
		fprintf(stderr, "sluice: signing the checkpoint of the seal for %s and the export: "
				"%s; the copies end one line short\n",
			j->sidecar_path, strerror(-err));
	else if ((err = sync_queue_locked(j, note, note_len, false)))
		return err;
	/* the run ends after the seal: it is on disk, or the run hears why not */
	err = sync_wait_locked(j);
	if (err)
		return err;
	j->sealed = true;
	return 0;
}

static int fsync_dir_of(const char *path)
{
	char copy[PATH_MAX];
	int fd, err = 0;

	if (util_copy(copy, sizeof(copy), path))
		return -ENAMETOOLONG;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		err = -errno;
	close(fd);
	return err;
}

/* rename() that never replaces a file: evidence is never overwritten. */
static int rename_noreplace(const char *from, const char *to)
{
	if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* a file system without RENAME_NOREPLACE: link() refuses an existing name too */
	if (link(from, to))
		return -errno;
	if (unlink(from)) {
		int err = -errno;

		unlink(to);
		return err;
	}
	return 0;
}

/* What zlib says went wrong with gz: errno only when it says the error was the file's. */
static int gz_err(gzFile gz)
{
	int zerr;

	gzerror(gz, &zerr);
	if (zerr == Z_ERRNO)
		return errno ? -errno : -EIO;
	return zerr == Z_MEM_ERROR ? -ENOMEM : -EIO;
}

/* gzip src into dst (created, never overwritten), fsynced. On failure dst is removed. */
static int compress_file(const char *src, const char *dst)
{
	char buf[64 * 1024];
	int in = -1, out = -1, gfd = -1, err = 0, zret;
	gzFile gz = NULL;
	ssize_t n;

	in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (out < 0) {
		err = -errno;
		goto out_in;
	}
	/* gzclose closes the descriptor it was given: keep ours for the fsync. */
	gfd = dup(out);
	if (gfd < 0) {
		err = -errno;
		goto out_remove;
	}
	gz = gzdopen(gfd, "wb9");
	if (!gz) {
		close(gfd);
		err = -ENOMEM;
		goto out_remove;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (gzwrite(gz, buf, (unsigned int)n) != (int)n) {
			err = gz_err(gz);
			break;
		}
	}
	/* the last block and the trailer, while gzerror can still say why they failed */
	if (!err && gzflush(gz, Z_FINISH) != Z_OK)
		err = gz_err(gz);
	zret = gzclose(gz);
	if (!err && zret != Z_OK)
		err = zret == Z_ERRNO && errno ? -errno : zret == Z_MEM_ERROR ? -ENOMEM : -EIO;
	if (!err && fsync(out))
		err = -errno;
out_remove:
	close(out);
	if (err)
		unlink(dst);
out_in:
	close(in);
	return err;
}

/* 0 when the gzip file gz decompresses to exactly the bytes of plain; -EEXIST when not. */
static int gz_holds(const char *gz, const char *plain)
{
	char a[16 * 1024], b[sizeof(a)];
	gzFile z = gzopen(gz, "rbe");
	int fd = open(plain, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), err = 0;
	ssize_t n;
	int m;

	if (!z || fd < 0) {
		err = errno ? -errno : -ENOMEM;
		goto out;
	}
	do {
		n = read(fd, a, sizeof(a));
		m = gzread(z, b, (unsigned int)sizeof(b));
		if (n < 0 || m < 0 || n != m || memcmp(a, b, (size_t)n))
			err = -EEXIST;
	} while (!err && n > 0);
out:
	if (z)
		gzclose(z);
	if (fd >= 0)
		close(fd);
	return err;
}

/*
 * Compress segment k: PATH.k → PATH.k.gz.tmp (fsynced) → renamed PATH.k.gz → directory fsynced
 * → PATH.k removed. At every step the disk holds the whole segment under a name a verifier
 * reads (PATH.k.gz, else PATH.k; *.tmp is never read). On failure PATH.k stays, plain.
 */
static int compress_segment(const char *path, unsigned int k)
{
	char plain[PATH_MAX], tmp[PATH_MAX], gz[PATH_MAX];
	int err;

	if (util_fmt(plain, sizeof(plain), "%s.%06u", path, k) ||
	    util_fmt(tmp, sizeof(tmp), "%s.%06u.gz.tmp", path, k) ||
	    util_fmt(gz, sizeof(gz), "%s.%06u.gz", path, k))
		return -ENAMETOOLONG;
	/*
	 * What a writer that died in the middle left (journal_resume queues every segment): a
	 * segment already compressed, or a .gz whose plain copy was still to be removed (only if
	 * it holds the same bytes: a .gz of anything else stays, and so does the segment).
	 */
	if (access(plain, F_OK))
		return errno == ENOENT ? 0 : -errno;
	if (!access(gz, F_OK)) {
		err = gz_holds(gz, plain);
		return err ? err : unlink(plain) ? -errno : 0;
	}
	err = compress_file(plain, tmp);
	if (err)
		return err;
	err = rename_noreplace(tmp, gz);
	if (err) {
		unlink(tmp);
		return err;
	}
	/* The .gz's name is on disk before the plain copy goes. */
	err = fsync_dir_of(gz);
	if (err)
		return err;
	if (unlink(plain))
		return -errno;
	/*
	 * The removal need not reach the disk: a crash that undoes it leaves the plain copy next
	 * to the .gz, the same lines, and a verifier reads the .gz.
	 */
	return 0;
}

static void *compressor_main(void *arg)
{
	struct journal *j = arg;
	struct compressor *c = &j->gz;

	pthread_mutex_lock(&c->w.lock);
	for (;;) {
		while (c->next < c->closed) {
			unsigned int k = c->next;
			int err;

			pthread_mutex_unlock(&c->w.lock);
			err = compress_segment(j->path, k); /* j->path never changes */
			pthread_mutex_lock(&c->w.lock);
			c->next = k + 1;
			if (err && !c->failed) {
				c->failed = true;
				fprintf(stderr,
					"sluice: compressing %s.%06u: %s; the segment stays "
					"uncompressed (it verifies as it is)\n",
					j->path, k, strerror(-err));
			}
		}
		if (c->w.stop)
			break;
		pthread_cond_wait(&c->w.wake, &c->w.lock);
	}
	pthread_mutex_unlock(&c->w.lock);
	return NULL;
}

/* Queue the segments below j->segment; with j->lock held. */
static void compressor_queue(struct journal *j)
{
	struct compressor *c = &j->gz;
	int err;

	if (j->keep_plain)
		return;
	pthread_mutex_lock(&c->w.lock);
	if (!c->w.started && !c->failed) {
		err = worker_start(&c->w, compressor_main, j);
		c->w.started = !err;
		if (err) {
			c->failed = true;
			fprintf(stderr, "sluice: starting the log compressor: %s; rotated segments "
					"stay uncompressed\n",
				strerror(-err));
		}
	}
	c->closed = j->segment;
	pthread_cond_signal(&c->w.wake);
	pthread_mutex_unlock(&c->w.lock);
}

/* The rotation stops (the log goes on in PATH, a "rotate" checkpoint mid-file); said once. */
static int rotation_stops(struct journal *j, const char *what, int err)
{
	j->rotate_bytes = 0;
	fprintf(stderr, "sluice: rotating log %s: %s: %s; rotation stops, the log goes on\n",
		j->path, what, strerror(-err));
	return 0;
}

/*
 * Close the live segment with a "rotate" checkpoint (on disk before anything else happens),
 * rename it to PATH.NNNNNN, and go on in a new PATH; seq, prev and the tree go on too. The
 * compressor turns PATH.NNNNNN into PATH.NNNNNN.gz later. On disk, in order (evidence spec 6):
 *   PATH (ends with the rotate checkpoint)
 *   PATH.NNNNNN, no PATH     (a crash here: unsealed, the segment whole)
 *   PATH.NNNNNN + new PATH
 * A failed rename stops rotation; the lines stay in PATH, which the writer keeps appending to.
 */
static int rotate_locked(struct journal *j)
{
	char seg[PATH_MAX];
	const char *what;
	int err, fd;

	if (j->segment > SEGMENT_MAX)
		return 0;
	if (util_fmt(seg, sizeof(seg), "%s.%06u", j->path, j->segment))
		return rotation_stops(j, "segment name", -ENAMETOOLONG);
	err = checkpoint_locked(j, "rotate");
	/* the segment whole on disk before its name changes, and its notes copied from its fd */
	if (!err)
		err = sync_wait_locked(j);
	if (err)
		return err;
	err = rename_noreplace(j->path, seg);
	if (err)
		return rotation_stops(j, seg, err);
	/* The rename is on disk before the new PATH is (or, after a crash, the log looks gone). */
	err = fsync_dir_of(j->path);
	if (err) {
		log_failed(j, j->seq, err, false);
		return err;
	}
	fd = open(j->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		err = -errno;
		what = "create the next segment";
		goto back;
	}
	/*
	 * The next segment's room is taken before the old one's is given back: whatever keeps
	 * the disk full (the workload, if it can write there) takes what is given back, and the
	 * run's last lines would have nowhere to go. No room for it: stay in the old segment.
	 */
	if (!j->no_reserve && fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, RESERVE_BYTES)) {
		err = -errno;
		if (err == -ENOSPC || err == -EDQUOT) {
			close(fd);
			if (unlink(j->path)) {
				err = -errno;
				log_failed(j, j->seq, err, false);
				return err;
			}
			what = "room for the next segment";
			goto back;
		}
		j->no_reserve = true; /* a file system that cannot (see reserve_locked) */
	}
	err = fsync_dir_of(j->path);
	if (err) {
		close(fd);
		log_failed(j, j->seq, err, false);
		return err;
	}
	reserve_release(j);
	close(j->fd);
	j->fd = fd;
	j->file_off = 0;
	j->cached_from = 0;
	j->file_bytes = 0;
	j->reserved_end = j->no_reserve ? 0 : RESERVE_BYTES;
	j->segment++;
	compressor_queue(j);
	return 0;

back:
	/*
	 * Back under its name, to go on in it (a rotate checkpoint mid-file is valid), and that on
	 * disk before more lines are: appended to PATH.NNNNNN they would not be.
	 */
	if (rename_noreplace(seg, j->path) || fsync_dir_of(j->path)) {
		log_failed(j, j->seq, err, false);
		return err;
	}
	return rotation_stops(j, what, err);
}

/* After lines were appended: the checkpoints and rotation they call for. */
static int after_lines_locked(struct journal *j, const char *type)
{
	int err = 0;

	if (!strcmp(type, "loss"))
		err = checkpoint_locked(j, "loss");
	else if (!strcmp(type, "anomaly"))
		err = checkpoint_locked(j, "anomaly");
	else if (j->since_checkpoint >= j->checkpoint_lines)
		err = checkpoint_locked(j, "lines");
	if (!err && j->rotate_bytes && j->file_bytes >= j->rotate_bytes && !j->sealed)
		err = rotate_locked(j);
	return err;
}

/* ------------------------------------------------------------------------------------------ */
/* API */

int journal_write(struct journal *j, struct journal_line *l)
{
	int err;

	if (journal_line_finish(l))
		return -E2BIG;
	pthread_mutex_lock(&j->lock);
	if (j->err && !j->sealed)
		j->unwritten++;
	l->seq = j->seq;
	err = append_locked(j, l);
	if (!err)
		err = after_lines_locked(j, l->type);
	pthread_mutex_unlock(&j->lock);
	return err;
}

int journal_retry(struct journal *j, struct journal_line *l)
{
	int err;

	pthread_mutex_lock(&j->lock);
	err = j->err;
	if (!err || j->dead || j->sealed)
		goto out;
	journal_line_u64(l, "lines", j->unwritten);
	if (journal_line_finish(l)) {
		err = -E2BIG;
		goto out;
	}
	/* the line and its checkpoint, synced; a failure cuts them off again, quietly */
	j->retrying = true;
	err = append_locked(j, l);
	if (!err)
		err = after_lines_locked(j, l->type);
	if (!err)
		err = sync_wait_locked(j);
	j->retrying = false;
	if (err) {
		err = j->err;
		goto out;
	}
	j->err = 0;
	j->unwritten = 0;
out:
	pthread_mutex_unlock(&j->lock);
	return err;
}

void journal_final(struct journal *j)
{
	pthread_mutex_lock(&j->lock);
	j->final = true;
	pthread_mutex_unlock(&j->lock);
}

int journal_failure(struct journal *j, bool *dead)
{
	int err;

	pthread_mutex_lock(&j->lock);
	err = j->err;
	if (dead)
		*dead = j->dead;
	pthread_mutex_unlock(&j->lock);
	return err;
}

bool journal_room_for(struct journal *j, size_t bytes)
{
	uint64_t need;
	bool ok = true;

	pthread_mutex_lock(&j->lock);
	need = j->file_off + j->wlen + bytes + JOURNAL_TAIL_BYTES;
	if (!j->no_reserve && need > j->reserved_end) {
		ok = !fallocate(j->fd, FALLOC_FL_KEEP_SIZE, (off_t)j->file_off,
				(off_t)(need - j->file_off));
		if (ok)
			j->reserved_end = need;
	}
	pthread_mutex_unlock(&j->lock);
	return ok;
}

uint64_t journal_lines_written(const struct journal *j)
{
	return __atomic_load_n(&j->disk_seq, __ATOMIC_ACQUIRE);
}

int journal_checkpoint(struct journal *j, const char *reason)
{
	int err;

	if (!reason_valid(reason))
		return -EINVAL;
	pthread_mutex_lock(&j->lock);
	err = checkpoint_locked(j, reason);
	pthread_mutex_unlock(&j->lock);
	return err;
}

int journal_tick(struct journal *j)
{
	struct timespec now;
	int64_t ms;
	int err = 0;

	clock_gettime(CLOCK_BOOTTIME, &now);
	pthread_mutex_lock(&j->lock);
	ms = (int64_t)(now.tv_sec - j->last_checkpoint.tv_sec) * 1000 +
	     (now.tv_nsec - j->last_checkpoint.tv_nsec) / 1000000;
	if (!j->err && !j->sealed && ms >= (int64_t)j->checkpoint_secs * 1000) {
		err = checkpoint_locked(j, j->since_checkpoint ? "time" : "heartbeat");
		if (!err && j->rotate_bytes && j->file_bytes >= j->rotate_bytes)
			err = rotate_locked(j);
	}
	pthread_mutex_unlock(&j->lock);
	return err;
}

void journal_fail_barrier(struct journal *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	pthread_mutex_unlock(&j->lock);
}

int journal_flush(struct journal *j)
{
	int err;

	pthread_mutex_lock(&j->lock);
	err = flush_locked(j);
	pthread_mutex_unlock(&j->lock);
	return err;
}

static int write_log_start(struct journal *j, const struct journal_opts *o)
{
	char vkey[NOTE_VKEY_MAX + 1];
	struct timespec now;
	int err;

	err = note_signer_vkey(o->signer, vkey, sizeof(vkey));
	if (err)
		return err;
	clock_gettime(CLOCK_REALTIME, &now);
	journal_line_begin(&j->cp, "log_start", &now);
	journal_line_str(&j->cp, "origin", j->origin);
	journal_line_str(&j->cp, "run_id", o->run_id);
	journal_line_str(&j->cp, "key", vkey);
	journal_line_str(&j->cp, "host_key", o->host_vkey);
	journal_line_str(&j->cp, "cert", o->cert);
	journal_line_u64(&j->cp, "checkpoint_lines", o->checkpoint_lines);
	journal_line_u64(&j->cp, "checkpoint_secs", o->checkpoint_secs);
	journal_line_u64(&j->cp, "format", j->format);
	err = journal_line_finish(&j->cp);
	if (!err)
		err = append_locked(j, &j->cp);
	if (!err)
		err = flush_locked(j);
	return err;
}

static void journal_free(struct journal *j);

/* A journal for o, its files not opened yet. Sets errno and returns NULL on failure. */
static struct journal *journal_new(const struct journal_opts *o)
{
	struct journal *j;
	int err;

	if (!o->signer || !o->host_vkey || !o->cert || !o->run_id || !o->checkpoint_lines ||
	    !o->checkpoint_secs) {
		errno = EINVAL;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->fd = -1;
	j->sidecar_fd = -1;
	j->export_fd = o->export_fd;
	j->signer = o->signer;
	j->format = JOURNAL_FORMAT; /* a resumed log's own (journal_resume) */
	j->checkpoint_lines = o->checkpoint_lines;
	j->checkpoint_secs = o->checkpoint_secs;
	j->rotate_bytes = o->rotate_bytes;
	j->keep_plain = o->keep_plain;
	j->segment = 1;
	j->gz.next = 1;
	j->gz.closed = 1;
	j->on_fail = o->on_fail;
	j->fail_ctx = o->fail_ctx;
	j->on_line = o->on_line;
	j->line_ctx = o->line_ctx;
	tlog_init(&j->tree);
	disk_state_save(j);
	pthread_mutex_init(&j->lock, NULL);
	worker_init(&j->gz.w);
	pthread_mutex_init(&j->copy_lock, NULL);
	worker_init(&j->sync.w);
	pthread_cond_init(&j->sync.done, NULL);
	err = util_copy(j->origin, sizeof(j->origin), note_signer_name(o->signer));
	if (!err)
		err = util_copy(j->path, sizeof(j->path), o->path);
	if (!err)
		err = util_fmt(j->sidecar_path, sizeof(j->sidecar_path), "%s.checkpoints", o->path);
	if (err) {
		journal_free(j);
		errno = -err;
		return NULL;
	}
	return j;
}

bool journal_file_suffix(const char *rest)
{
	size_t digits;

	if (!*rest || !strcmp(rest, ".checkpoints"))
		return true;
	if (*rest++ != '.')
		return false;
	digits = strspn(rest, "0123456789");
	rest += digits;
	return digits >= 6 && (!*rest || !strcmp(rest, ".gz"));
}

/*
 * Whether path's directory holds a file of a log at path (journal_file_suffix): 1, 0, or
 * -errno if the directory cannot be read (not ENOENT: creating the log then says why). Every
 * segment is looked for, not only the first: an old log's later segments would meet the new
 * log's rotation, and a verifier would read them as its own.
 */
static int log_files_exist(const char *path)
{
	char dir[PATH_MAX], base[PATH_MAX];
	const char *name;
	struct dirent *e;
	size_t n;
	int found = 0;
	DIR *d;

	if (util_copy(dir, sizeof(dir), path) || util_copy(base, sizeof(base), path))
		return -ENAMETOOLONG;
	d = opendir(dirname(dir));
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	name = basename(base);
	n = strlen(name);
	while (!found && (e = readdir(d)))
		found = !strncmp(e->d_name, name, n) && journal_file_suffix(e->d_name + n);
	closedir(d);
	return found;
}

struct journal *journal_open(const struct journal_opts *o)
{
	struct journal *j = journal_new(o);
	int err;

	if (!j)
		return NULL;
	/* every name the log will take fits (the compressor's is the longest) */
	if (strlen(o->path) + sizeof(JOURNAL_LONGEST_SUFFIX) > PATH_MAX) {
		err = -ENAMETOOLONG;
		goto err_free;
	}
	err = log_files_exist(o->path);
	if (err) {
		err = err < 0 ? err : -EEXIST;
		goto err_free;
	}

	j->fd = open(o->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (j->fd < 0) {
		err = -errno;
		goto err_free;
	}
	j->sidecar_fd = open(j->sidecar_path,
			     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0640);
	if (j->sidecar_fd < 0) {
		err = -errno;
		goto err_unlink_log;
	}
	/* the log's name on disk, not only its lines (a crash must not lose the file itself) */
	err = fsync_dir_of(j->path);
	if (err)
		goto err_unlink_sidecar;
	clock_gettime(CLOCK_BOOTTIME, &j->last_checkpoint);
	err = write_log_start(j, o);
	if (err)
		goto err_unlink_sidecar;
	return j;

err_unlink_sidecar:
	close(j->sidecar_fd);
	unlink(j->sidecar_path);
err_unlink_log:
	close(j->fd);
	unlink(j->path);
err_free:
	journal_free(j);
	errno = -err;
	return NULL;
}

/*
 * Where the whole notes of a sidecar end, and the size the last one states: notes back to back,
 * each its text, a blank line, its signature lines and a blank line (as copy_note writes them).
 */
static void sidecar_scan(const char *buf, size_t len, size_t *end, uint64_t *size)
{
	size_t pos = 0, note = 0, text_end = 0;
	bool sigs = false;
	char origin[NOTE_NAME_MAX + 1];
	uint8_t root[TLOG_HASH_SIZE];
	uint64_t sz;

	*end = 0;
	*size = 0;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);

		if (!nl)
			break;
		if (nl == buf + pos) { /* a blank line: the end of the text, or of the note */
			if (!sigs) {
				text_end = pos;
				sigs = true;
			} else {
				if (!checkpoint_parse(buf + note, text_end - note, origin,
						      sizeof(origin), &sz, root))
					*size = sz;
				*end = pos + 1;
				note = pos + 1;
				sigs = false;
			}
		}
		pos = (size_t)(nl - buf) + 1;
	}
}

/*
 * The sidecar a writer that died left: its last note possibly cut off (removed here: the log's
 * checkpoint line holds it whole), possibly up to JOURNAL_SYNC_MAX notes short of the log (the
 * crash came while their syncs were in flight: *mend is the first of t->cp_notes to add, which
 * write_restart queues behind the restart checkpoint's sync; t->n_cp: none). Returns the
 * sidecar's fd, or -1: that copy stops (said on stderr), the log goes on. *fatal: the sidecar
 * holds a checkpoint the log lacks — the log was cut back since — and nothing may be written.
 */
static int sidecar_resume(struct journal *j, const struct journal_tail *t, size_t *mend,
			  int *fatal)
{
	char *buf = NULL;
	size_t end = 0, len, k;
	uint64_t have = 0;
	int fd, n, err = 0;
	struct stat st;

	*fatal = 0;
	*mend = t->n_cp;
	fd = util_open_regular(j->sidecar_path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW, 0640);
	if (fd < 0 || fstat(fd, &st)) {
		err = fd < 0 ? fd : -errno;
		fd = fd < 0 ? -1 : fd;
		goto stop;
	}
	/* only a file of the writer's own is ever cut: no link to another, no one else's */
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid() ||
	    st.st_size > SIDECAR_MAX) {
		err = st.st_size > SIDECAR_MAX ? -EFBIG : -EPERM;
		goto stop;
	}
	len = (size_t)st.st_size;
	buf = malloc(len + 1);
	if (!buf) {
		err = -ENOMEM;
		goto stop;
	}
	n = len ? (int)pread(fd, buf, len, 0) : 0;
	if (n < 0 || (size_t)n != len) {
		err = n < 0 ? -errno : -EIO;
		goto stop;
	}
	sidecar_scan(buf, len, &end, &have);
	free(buf);
	buf = NULL;
	if (have > t->cp_size) {
		fprintf(stderr, "sluice: %s holds a checkpoint of size %" PRIu64 ", the log's last "
				"is of size %" PRIu64 ": the log was cut back since it was written\n",
			j->sidecar_path, have, t->cp_size);
		*fatal = -ESTALE;
		close(fd);
		return -1;
	}
	if (end < len) {
		/* a note cut short is shorter than a note; anything longer is not the writer's */
		if (len - end > 2 * NOTE_MAX) {
			err = -EBADMSG;
			goto stop;
		}
		fprintf(stderr, "sluice: %s ends inside a note (its writer died writing it): cut "
				"off, the log's checkpoint line holds it whole\n",
			j->sidecar_path);
		if (ftruncate(fd, (off_t)end)) {
			err = -errno;
			goto stop;
		}
	}
	if (have == t->cp_size)
		return fd;
	for (k = 0; k < t->n_cp; k++) {
		if (have != (k ? t->cp_sizes[k - 1] : t->cp_size_before))
			continue;
		*mend = k;
		for (; k < t->n_cp; k++)
			if (strlen(t->cp_notes[k]) > NOTE_MAX)
				break; /* not a note the writer wrote (verified all the same) */
		if (k == t->n_cp)
			return fd;
		*mend = t->n_cp;
		break;
	}
	fprintf(stderr, "sluice: %s ends at a checkpoint of size %" PRIu64 ", the log's last one "
			"has size %" PRIu64 " (that copy had stopped): it stays as it is\n",
		j->sidecar_path, have, t->cp_size);
	close(fd);
	return -1;
stop:
	free(buf);
	fprintf(stderr, "sluice: reopening %s: %s; that copy stops, the log goes on\n",
		j->sidecar_path, strerror(-err));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The restarted writer's first line: its key, certified by the host key, and what it took on. */
static int write_restart(struct journal *j, const struct journal_opts *o,
			 const struct journal_tail *t, size_t mend)
{
	char vkey[NOTE_VKEY_MAX + 1];
	struct timespec now;
	int err;

	err = note_signer_vkey(o->signer, vkey, sizeof(vkey));
	if (err)
		return err;
	clock_gettime(CLOCK_REALTIME, &now);
	journal_line_begin(&j->cp, "writer_restart", &now);
	journal_line_str(&j->cp, "origin", j->origin);
	journal_line_str(&j->cp, "key", vkey);
	journal_line_str(&j->cp, "cert", o->cert);
	journal_line_u64(&j->cp, "torn", t->torn);
	journal_line_u64(&j->cp, "unsealed", t->unsealed);
	journal_line_u64(&j->cp, "kseq_below", t->kseq_below);
	err = journal_line_finish(&j->cp);
	if (!err)
		err = append_locked(j, &j->cp);
	/*
	 * The notes the sidecar lacks: copied once a sync that starts now has returned (the
	 * dead writer's lines are in the file; whether they are on disk, only a sync says).
	 */
	for (; !err && mend < t->n_cp; mend++)
		err = sync_queue_locked(j, t->cp_notes[mend], strlen(t->cp_notes[mend]), true);
	/* everything before it, the dead writer's unsigned tail included, under the new key */
	if (!err)
		err = checkpoint_locked(j, "restart");
	if (!err)
		err = sync_wait_locked(j);
	return err;
}

struct journal *journal_resume(const struct journal_opts *o, const struct journal_tail *t)
{
	struct journal *j = journal_new(o);
	bool queue = false;
	struct stat st;
	unsigned int k;
	size_t mend;
	int err = 0;

	if (!j)
		return NULL;
	/* the log goes on in its own format: its chain is checked by the one its log_start names */
	if (t->format < 1 || t->format > JOURNAL_FORMAT) {
		err = -EPROTO;
		goto err_free;
	}
	j->format = t->format;
	j->seq = t->lines;
	memcpy(j->prev, t->prev, sizeof(j->prev));
	j->tree = t->tree;
	disk_state_save(j);
	j->segment = t->segments + 1;
	j->gz.closed = j->segment;
	/* (a FIFO put in the live file's place since the verify is not waited on) */
	j->fd = t->log_missing ? util_open_regular(o->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
						    0640) :
				 util_open_regular(o->path, O_WRONLY | O_APPEND | O_NOFOLLOW, 0);
	if (j->fd < 0) {
		err = j->fd;
		j->fd = -1;
		goto err_free;
	}
	if (fstat(j->fd, &st)) {
		err = -errno;
		goto err_free;
	}
	/* the very file verified, as long as it was: not one put in its place since */
	if (!S_ISREG(st.st_mode) ||
	    (!t->log_missing && (st.st_dev != t->log_dev || st.st_ino != t->log_ino ||
				 (uint64_t)st.st_size != t->log_size))) {
		err = S_ISREG(st.st_mode) ? -ESTALE : -EINVAL;
		goto err_free;
	}
	if (t->log_missing && (err = fsync_dir_of(o->path)))
		goto err_free;
	j->file_off = (uint64_t)st.st_size;
	j->file_bytes = (uint64_t)st.st_size;
	/*
	 * The last line's end (a torn line stays as it is, a line of its own), in the one write()
	 * of writer_restart and its checkpoint: an ended torn line with nothing after it to say so
	 * would be a log no resume could take on again.
	 */
	if (t->newline_missing) {
		j->wbuf[0] = '\n';
		j->wlen = 1;
		j->file_bytes++;
	}
	j->sidecar_fd = sidecar_resume(j, t, &mend, &err);
	if (err)
		goto err_free;
	clock_gettime(CLOCK_BOOTTIME, &j->last_checkpoint);
	pthread_mutex_lock(&j->lock);
	err = write_restart(j, o, t, j->sidecar_fd >= 0 ? mend : t->n_cp);
	pthread_mutex_unlock(&j->lock);
	if (err) {
		/* the log as it was: a "\n" after a torn line with nothing after it would be a log
		 * no later resume could take on */
		if (ftruncate(j->fd, st.st_size))
			fprintf(stderr, "sluice: cutting %s back to %lld bytes: %s\n", o->path,
				(long long)st.st_size, strerror(errno));
		goto err_free;
	}
	/*
	 * Segments a crash left plain are compressed now; a .gz.tmp beside one is the dead
	 * writer's half-done compression, never part of the log.
	 */
	for (k = 1; k < j->segment; k++) {
		char plain[PATH_MAX], tmp[PATH_MAX];

		if (util_fmt(plain, sizeof(plain), "%s.%06u", o->path, k) ||
		    util_fmt(tmp, sizeof(tmp), "%s.gz.tmp", plain) || access(plain, F_OK))
			continue;
		unlink(tmp);
		queue = true;
	}
	if (queue) {
		pthread_mutex_lock(&j->lock);
		compressor_queue(j);
		pthread_mutex_unlock(&j->lock);
	}
	return j;

err_free:
	worker_stop(&j->sync.w);
	if (j->fd >= 0)
		close(j->fd);
	if (j->sidecar_fd >= 0)
		close(j->sidecar_fd);
	journal_free(j);
	errno = -err;
	return NULL;
}

static void journal_free(struct journal *j)
{
	worker_stop(&j->sync.w);
	pthread_cond_destroy(&j->sync.done);
	worker_destroy(&j->sync.w);
	pthread_mutex_destroy(&j->copy_lock);
	worker_destroy(&j->gz.w);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

int journal_close(struct journal *j)
{
	int err, e;

	if (!j)
		return 0;
	pthread_mutex_lock(&j->lock);
	err = flush_locked(j);
	/* the checkpoints handed over: synced and copied before the file is closed */
	e = sync_wait_locked(j);
	if (!err)
		err = e;
	reserve_release(j);
	if (!err && fsync(j->fd)) {
		err = -errno;
		log_failed(j, j->seq, err, false);
	}
	pthread_mutex_unlock(&j->lock);
	worker_stop(&j->sync.w);
	if (close(j->fd) && !err)
		err = -errno;
	/* the segments still queued are compressed before the run ends */
	worker_stop(&j->gz.w);
	if (j->sidecar_fd >= 0) {
		e = fsync(j->sidecar_fd) ? -errno : 0;
		if (e)
			sidecar_failed(j, e); /* the sidecar's own failure, not the log's */
		else if (close(j->sidecar_fd))
			fprintf(stderr, "sluice: closing %s: %s\n", j->sidecar_path,
				strerror(errno));
	}
	journal_free(j);
	return err;
}

void journal_discard(struct journal *j)
{
	if (!j)
		return;
	worker_stop(&j->sync.w);
	worker_stop(&j->gz.w);
	close(j->fd);
	if (j->sidecar_fd >= 0)
		close(j->sidecar_fd);
	unlink(j->path);
	unlink(j->sidecar_path);
	journal_free(j);
}
