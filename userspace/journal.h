/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run's log: one compact JSON object per line, keys in a fixed order, starting with
 * "ts" (UTC, microseconds) and "type". A line is built in a fixed buffer (struct journal_line) and
 * written whole, so a full disk or a crash never leaves half a record behind another.
 */
#ifndef SLUICE_JOURNAL_H
#define SLUICE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define JOURNAL_LINE_MAX 8192

struct journal;

struct journal_line {
	char buf[JOURNAL_LINE_MAX];
	size_t len;
	bool overflow; /* a field did not fit: journal_write() refuses the line */
};

/*
 * Create the log file. It must not exist: evidence is never overwritten. Opened without
 * following symlinks, mode 0640. Sets errno and returns NULL on failure.
 */
struct journal *journal_open(const char *path);

/* Start a line: {"ts":"…","type":"…" — ts is CLOCK_REALTIME. */
void journal_line_begin(struct journal_line *l, const char *type, const struct timespec *ts);
void journal_line_str(struct journal_line *l, const char *key, const char *val); /* NULL: null */
void journal_line_u64(struct journal_line *l, const char *key, uint64_t val);
void journal_line_i64(struct journal_line *l, const char *key, int64_t val);
void journal_line_bool(struct journal_line *l, const char *key, bool val);
void journal_line_strv(struct journal_line *l, const char *key, char *const *vals, size_t n);

/* Close the object ("}\n"): the line is then complete in l->buf. -E2BIG if it did not fit. */
int journal_line_finish(struct journal_line *l);

/* Close the object and append it to the log (buffered; see journal_flush). */
int journal_write(struct journal *j, struct journal_line *l);
int journal_flush(struct journal *j);
/* Flush, fsync and close. Accepts NULL. */
int journal_close(struct journal *j);

#endif /* SLUICE_JOURNAL_H */
