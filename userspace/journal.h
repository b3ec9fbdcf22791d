/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run's log, as evidence: one canonical JSON object per line (the README's "Evidence"
 * section), chained and signed.
 *
 *   {"seq":N,"prev":"<leaf hash of line N-1>","ts":<µs since the epoch>,"type":"…",…}
 *
 * A line is built in a fixed buffer (struct journal_line) without its seq and prev, which the
 * journal assigns under its lock when it writes the line, so threads writing at once still
 * produce one contiguous chain. Every line is a leaf of the log's Merkle tree; checkpoint lines
 * carry the tree's root signed by the run's key, and go to a sidecar file and an optional
 * inherited descriptor too. Lines are written whole (a full disk never leaves half a record on
 * disk: the file is cut back to the last whole line), and a log that ran out of space can go on
 * once there is room again (journal_retry).
 */
#ifndef SLUICE_JOURNAL_H
#define SLUICE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "note.h"
#include "tlog.h"

#define JOURNAL_LINE_MAX 8192 /* a whole line, its "\n" included */
/*
 * log_start's "format" of a new log: 2, each line's prev is the previous line's leaf hash; in 1
 * (sluice before it) its SHA-256 (tlog_append_line). Both are verified, and a resumed log goes
 * on in its own.
 */
#define JOURNAL_FORMAT 2
#define JOURNAL_TYPE_MAX 32
/*
 * Checkpoints whose fdatasync may be in flight at once: the writer hands each to a sync thread
 * and goes on writing lines, and waits only when this many wait. The copies (sidecar, export)
 * thus lag the log by at most this many notes; sluice resume adds the sidecar's back from the
 * log's checkpoint lines.
 */
#define JOURNAL_SYNC_MAX 32

struct journal;

struct journal_line {
	char buf[JOURNAL_LINE_MAX]; /* {"ts":…,"type":…,… without seq and prev */
	size_t len;
	bool overflow; /* a field did not fit: journal_write() refuses the line */
	char type[JOURNAL_TYPE_MAX]; /* "loss" and "anomaly" lines are followed by a checkpoint */
	uint64_t seq; /* set by journal_write: the seq the line was given */
};

struct journal_opts {
	const char *path;		/* the log; created, never overwritten */
	const char *run_id;
	/* The run key, named the log's origin ("sluice/RUN_ID"); borrowed until journal_close. */
	const struct note_signer *signer;
	const char *host_vkey;		/* the host's verifier key, for log_start */
	const char *cert;		/* the host key's signed note certifying the run key */
	uint64_t checkpoint_lines;	/* a checkpoint after this many lines (> 0) */
	unsigned int checkpoint_secs;	/* … or after this many seconds (> 0), see journal_tick */
	uint64_t rotate_bytes;		/* rotate past this size; 0: never */
	/*
	 * Selftests only: rotated segments stay plain PATH.NNNNNN, the state a crash leaves
	 * between a rotation and the compression of its segment.
	 */
	bool keep_plain;
	int export_fd;			/* checkpoints are written here too; -1: nowhere */
	/*
	 * Called (with the journal's lock held, from whichever thread wrote, or the sync thread
	 * for a failed sync) the moment the log fails: a write or sync error, ENOSPC included.
	 * NULL: nobody is told.
	 */
	void (*on_fail)(int err, void *ctx);
	void *fail_ctx;
	/*
	 * Called for every line the moment it is added to the log (its "\n" included; with the
	 * journal's lock held, from whichever thread wrote): a daemon's live view. Must not block
	 * nor call into the journal. NULL: nobody.
	 */
	void (*on_line)(const char *line, size_t len, void *ctx);
	void *line_ctx;
};

/*
 * Create the log and its sidecar PATH.checkpoints (neither may exist, nor PATH.000001.gz or
 * PATH.000001: evidence is never overwritten; opened without following symlinks, mode 0640) and
 * write log_start as line 0. Sets errno and returns NULL on failure, leaving no file behind.
 *
 * Failures of a checkpoint copy (sidecar, export fd) or of compressing a rotated segment are
 * not the log's: the journal reports each once on stderr and goes on; they are never returned.
 */
struct journal *journal_open(const struct journal_opts *o);

/*
 * Whether rest, what follows a log's path in a file's name, makes the file one of that log's
 * as a reader takes it: the log itself (""), its sidecar (.checkpoints), a rotated segment
 * (.NNNNNN, .NNNNNN.gz). journal_open refuses a path any such file exists for. A compressor's
 * stray .NNNNNN.gz.tmp is not one: no reader takes it, and a compression that meets it leaves
 * its segment plain, said once.
 */
bool journal_file_suffix(const char *rest);

/* The longest name a log's file takes past its path: the compressor's temporary of a segment. */
#define JOURNAL_LONGEST_SUFFIX ".000001.gz.tmp"

/* Where the log of a writer that died stands, as sluice resume read and verified it. */
struct journal_tail {
	uint64_t format;		/* log_start's */
	uint64_t lines;			/* lines on disk, a torn one included: the next seq */
	uint8_t prev[TLOG_HASH_SIZE];	/* what the next line's prev is (the log's format) */
	struct tlog_tree tree;
	unsigned int segments;		/* rotated segments: the next one is segments + 1 */
	bool log_missing;		/* segments, but no PATH: the next file is started */
	bool newline_missing;		/* the last line lacks its "\n" (whole or torn) */
	uint64_t torn;			/* bytes of a torn last line; 0: none */
	uint64_t unsealed;		/* lines no checkpoint covers (writer_restart's "unsealed") */
	uint64_t kseq_below;		/* the kernel's next sequence number, now */
	uint64_t log_dev, log_ino, log_size; /* the live file as verified (not log_missing) */
	/*
	 * The log's last checkpoint lines, at most JOURNAL_SYNC_MAX, oldest first (n_cp of them):
	 * their sizes and notes, the last one's size (cp_size; 0: none) and the size of the one
	 * before the first of them (cp_size_before; 0: none). See below.
	 */
	uint64_t cp_size, cp_size_before;
	size_t n_cp;
	uint64_t cp_sizes[JOURNAL_SYNC_MAX];
	const char *cp_notes[JOURNAL_SYNC_MAX];
};

/*
 * Go on with the log of a writer that died (sluice resume): the live file is opened to append
 * (created when t->log_missing), a missing "\n" after its last line is added (a torn line stays
 * as it is, a line of its own), and o->signer, a fresh run key that o->cert certifies for the
 * same origin, writes writer_restart and a "restart" checkpoint covering everything before it.
 * The live file must be the one verified (t->log_dev, log_ino, log_size), else ESTALE. The
 * sidecar is appended to: a note cut off by the crash is removed, and the notes of the last
 * checkpoint lines the crash kept from it (at most JOURNAL_SYNC_MAX: their syncs were in
 * flight) are added, after the restart checkpoint's sync; a sidecar that ends further back (it
 * had failed) is not written to again, one that holds a checkpoint the log
 * lacks (the log was cut back) fails the resume (ESTALE). Rotated segments left plain by the
 * crash are compressed. Sets errno and returns NULL on failure; the log is as it was then
 * (the sidecar's mending may have happened: it only ever agrees with the log).
 */
struct journal *journal_resume(const struct journal_opts *o, const struct journal_tail *t);

/* Start a line: {"ts":<CLOCK_REALTIME in µs>,"type":"…" */
void journal_line_begin(struct journal_line *l, const char *type, const struct timespec *ts);
void journal_line_str(struct journal_line *l, const char *key, const char *val); /* NULL: null */
void journal_line_u64(struct journal_line *l, const char *key, uint64_t val);
void journal_line_i64(struct journal_line *l, const char *key, int64_t val);
void journal_line_bool(struct journal_line *l, const char *key, bool val);
void journal_line_strv(struct journal_line *l, const char *key, char *const *vals, size_t n);
/*
 * How many of the first vals journal_line_strv writes as an array of at most budget bytes
 * (brackets, quotes, escapes and commas counted): for a list a line must not let grow past
 * JOURNAL_LINE_MAX, whatever its strings hold.
 */
size_t journal_strv_fit(char *const *vals, size_t n, size_t budget);
void journal_line_u64v(struct journal_line *l, const char *key, const uint64_t *vals, size_t n);

/*
 * Close the object ("}\n"): the line, without seq and prev, is then complete in l->buf (what
 * --alerts gets). -E2BIG if it did not fit.
 */
int journal_line_finish(struct journal_line *l);

/*
 * Close the object, give it the next seq (l->seq) and the previous line's hash, and append it
 * to the log (buffered; see journal_flush). Automatic checkpoints follow: after a "loss" or
 * "anomaly" line, and every checkpoint_lines lines. -E2BIG if the line does not fit
 * JOURNAL_LINE_MAX (nothing written); -EPIPE once the log is sealed; otherwise the log's
 * failure, while it lasts (the line is refused and counted as unwritten).
 *
 * A line is in the file only once journal_lines_written() has passed its seq: a write that
 * fails cuts the file back to where it started, and every line it held is then unwritten
 * (counted; the chain goes back to the last line on disk, and the next line takes that seq).
 */
int journal_write(struct journal *j, struct journal_line *l);

/*
 * The run's last lines follow: they may use the room taken ahead on disk (writes take it
 * RESERVE_BYTES ahead of the lines, so a disk that fills fails the log while they still fit).
 * A log that failed for lack of space is then retried into it (journal_retry).
 */
void journal_final(struct journal *j);

/* Lines in the file now (wholly written, not necessarily synced). Any thread, no lock. */
uint64_t journal_lines_written(const struct journal *j);

/*
 * The log's failure (0: none); *dead (may be NULL): it cannot be retried (not a lack of space,
 * a sync that failed, a file that could not be cut back). A lack of space is retried by
 * journal_retry.
 */
int journal_failure(struct journal *j, bool *dead);

/*
 * The run's last lines (after journal_final): is there room on disk for bytes more past what is
 * written and buffered, and for JOURNAL_TAIL_BYTES after them (loss_ranges, run_end, the seal)?
 * Taken ahead if it can be. True on a file system that cannot take room ahead.
 */
#define JOURNAL_TAIL_BYTES (16 * 1024)
bool journal_room_for(struct journal *j, size_t bytes);

/*
 * A log that ran out of space: try to go on with l, the line that declares what could not be
 * written, to which "lines" (every line refused or cut off since the failure) is added; a
 * checkpoint of l's type follows when it is "loss" or "anomaly", synced. 0: written, the log
 * goes on; otherwise the failure stays (l and its checkpoint are cut off again: nothing on
 * disk changes). A log that has not failed: 0 and l is not written.
 */
int journal_retry(struct journal *j, struct journal_line *l);

/*
 * Write a checkpoint line now. reason: "lines", "time", "heartbeat", "loss", "anomaly",
 * "rotate", "restart" or "final". The log is flushed and the checkpoint handed to the sync
 * thread, which fdatasyncs the log, then appends the note to the sidecar and the export fd; the
 * writer goes on meanwhile, and a failed sync is the log's failure (on_fail, then returned by
 * the next call). "final" waits for its sync, and seals the log: nothing can be written after
 * it; the copies then get one more note, of size S + 1 (S: the seal's seq), which covers the
 * seal line.
 */
int journal_checkpoint(struct journal *j, const char *reason);

/*
 * Called from the run's loop (at least every second): a "time" checkpoint when checkpoint_secs
 * have passed (on CLOCK_BOOTTIME, which counts a suspend too) since the last one and lines were
 * written since, a "heartbeat" when none were.
 */
int journal_tick(struct journal *j);

int journal_flush(struct journal *j);
/*
 * Returns once no on_fail call is in progress (they run under the journal's lock, some on its
 * sync thread): what the callback's context points at may then be changed or freed, provided a
 * later call finds it changed. Accepts NULL.
 */
void journal_fail_barrier(struct journal *j);
/*
 * Flush, wait for the checkpoints' syncs, fsync and close; waits for the compression of rotated
 * segments still in flight. Returns the log's error only. Accepts NULL.
 */
int journal_close(struct journal *j);
/* Close and remove the files journal_open created: for a run that never started. NULL ok. */
void journal_discard(struct journal *j);

/*
 * Length of the well-formed UTF-8 sequence at s (shortest form, no surrogates, at most
 * U+10FFFF), or 0: what the canonical string form keeps raw (bytes >= 0x80 outside such a
 * sequence it writes as \u00xx). For printing decoded strings the same way.
 */
size_t journal_utf8_len(const char *s);

/* The code point of the well-formed n-byte UTF-8 sequence at s (journal_utf8_len's n). */
uint32_t journal_utf8_cp(const char *s, size_t n);

/*
 * Code points that change how the text around them reads, for whoever shows a log's strings to
 * a person (a terminal, a page): C1 controls, the bidirectional marks, overrides and isolates (a
 * host name that displays reversed), line and paragraph separators, the BOM and zero-width
 * no-break space.
 */
bool journal_cp_misleads(uint32_t cp);

#endif /* SLUICE_JOURNAL_H */
