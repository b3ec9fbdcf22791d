// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int util_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int util_fmt_append(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	va_list ap;
	int n;

	if (used >= len) /* not a string that fits: nothing to add to */
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	n = vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len - used)
		return -ENAMETOOLONG;
	return 0;
}

const char *util_why(const char *why, int err)
{
	return why && why[0] ? why : strerror(-err);
}

int64_t util_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t util_mono_ms(void)
{
	return util_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

int util_copy(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

int util_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, err = 0;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	return (int)n;
}

int util_replace_file(const char *path, const char *buf, size_t len, mode_t mode)
{
	const char *base = strrchr(path, '/');
	char tmp[PATH_MAX];
	int fd, err = 0;

	if (base ? util_fmt(tmp, sizeof(tmp), "%.*s/.%s.XXXXXX", (int)(base - path), path, base + 1)
		 : util_fmt(tmp, sizeof(tmp), ".%s.XXXXXX", path))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (!err && len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno != EINTR)
			err = -errno;
		else if (w > 0) {
			buf += w;
			len -= (size_t)w;
		}
	}
	/* mkostemp made it 0600 */
	if (!err && fchmod(fd, mode))
		err = -errno;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static void *job_main(void *arg)
{
	struct util_job *job = arg;

	job->ret = job->fn(job->arg);
	return NULL;
}

int util_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

void util_job_start(struct util_job *job, int (*fn)(void *arg), void *arg)
{
	*job = (struct util_job){ .fn = fn, .arg = arg };
	job->threaded = !util_thread_create(&job->thread, job_main, job);
	if (!job->threaded)
		job_main(job);
}

int util_job_wait(struct util_job *job)
{
	if (job->threaded)
		pthread_join(job->thread, NULL);
	job->threaded = false;
	return job->ret;
}

int util_write_file(const char *path, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	close(fd);
	return err;
}

int util_unescape_mountinfo(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return 0;
}

int util_hex(const void *in, size_t n, char *out, size_t size)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *d = in;
	size_t i;

	if (size < 2 * n + 1)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
	return 0;
}

int util_open_regular(const char *path, int flags, mode_t mode)
{
	struct stat st;
	int fd, fl, err;

	/* O_NONBLOCK: a FIFO or a device put at the path is never waited on, nor set going */
	fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}
