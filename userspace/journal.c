// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"

struct journal {
	FILE *f;
	int err; /* first write error, sticky: the caller reports it once */
	pthread_mutex_t lock; /* the resolver's threads write too: whole lines, never interleaved */
};

struct journal *journal_open(const char *path)
{
	struct journal *j;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		goto err_close;
	j->f = fdopen(fd, "w");
	if (!j->f)
		goto err_free;
	pthread_mutex_init(&j->lock, NULL);
	return j;

err_free:
	free(j);
err_close:
	{
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return NULL;
}

static void put(struct journal_line *l, const char *s, size_t n)
{
	if (l->overflow || n >= sizeof(l->buf) - l->len) {
		l->overflow = true;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void putf(struct journal_line *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void putf(struct journal_line *l, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		l->overflow = true;
		return;
	}
	put(l, tmp, (size_t)n);
}

/* JSON string with every control character, quote and backslash escaped (RFC 8259). */
static void put_json_string(struct journal_line *l, const char *s)
{
	put(l, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"')
			put(l, "\\\"", 2);
		else if (c == '\\')
			put(l, "\\\\", 2);
		else if (c == '\n')
			put(l, "\\n", 2);
		else if (c == '\t')
			put(l, "\\t", 2);
		else if (c < 0x20 || c == 0x7f)
			putf(l, "\\u%04x", c);
		else
			put(l, (const char *)&c, 1);
	}
	put(l, "\"", 1);
}

static void put_key(struct journal_line *l, const char *key)
{
	put(l, ",", 1);
	put_json_string(l, key);
	put(l, ":", 1);
}

void journal_line_begin(struct journal_line *l, const char *type, const struct timespec *ts)
{
	struct tm tm;
	char when[32];

	l->len = 0;
	l->overflow = false;
	gmtime_r(&ts->tv_sec, &tm);
	if (!strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm))
		l->overflow = true;
	putf(l, "{\"ts\":\"%s.%06ldZ\"", when, ts->tv_nsec / 1000);
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
	putf(l, "%" PRIu64, val);
}

void journal_line_i64(struct journal_line *l, const char *key, int64_t val)
{
	put_key(l, key);
	putf(l, "%" PRId64, val);
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

int journal_line_finish(struct journal_line *l)
{
	put(l, "}\n", 2);
	return l->overflow ? -E2BIG : 0;
}

int journal_write(struct journal *j, struct journal_line *l)
{
	int err;

	if (journal_line_finish(l))
		return -E2BIG;
	pthread_mutex_lock(&j->lock);
	if (!j->err && fwrite(l->buf, 1, l->len, j->f) != l->len)
		j->err = errno ? -errno : -EIO;
	err = j->err;
	pthread_mutex_unlock(&j->lock);
	return err;
}

int journal_flush(struct journal *j)
{
	int err;

	pthread_mutex_lock(&j->lock);
	if (!j->err && fflush(j->f))
		j->err = -errno;
	err = j->err;
	pthread_mutex_unlock(&j->lock);
	return err;
}

int journal_close(struct journal *j)
{
	int err;

	if (!j)
		return 0;
	err = journal_flush(j);
	if (!err && fsync(fileno(j->f)))
		err = -errno;
	if (fclose(j->f) && !err)
		err = -errno;
	pthread_mutex_destroy(&j->lock);
	free(j);
	return err;
}
