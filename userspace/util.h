/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Small checked helpers: formatting that reports truncation, whole-file reads and writes. */
#ifndef SLUICE_UTIL_H
#define SLUICE_UTIL_H

#include <sys/types.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* snprintf that returns -ENAMETOOLONG on truncation and -EINVAL on an encoding error. */
int util_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * util_fmt onto the end of the string already in buf (cut at len, as util_fmt cuts): for a why
 * that grows as more goes wrong. A buf with no NUL within len is left as it is (-ENAMETOOLONG).
 */
int util_fmt_append(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* why, or strerror(-err) when why says nothing: what a failure is reported with. */
const char *util_why(const char *why, int err);

/*
 * clk's time in ns. CLOCK_BOOTTIME is the clock the BPF programs stamp with
 * (bpf_ktime_get_boot_ns): what a time compared with a map's or an event's must be read on.
 */
int64_t util_clock_ns(clockid_t clk);

/* CLOCK_MONOTONIC in ms: what a wait's deadline counts in. */
int64_t util_mono_ms(void);

/* strcpy into a bounded buffer; -ENAMETOOLONG if it does not fit. */
int util_copy(char *dst, size_t len, const char *src);

/* Read a small file into buf, NUL-terminated; returns bytes read or -errno. */
int util_read_file(const char *path, char *buf, size_t len);

/* Write a string to an existing file (cgroupfs, sysfs); returns 0 or -errno. */
int util_write_file(const char *path, const char *s);

/*
 * Replace path with len bytes of buf, whole or not at all: written to ".BASE.XXXXXX" beside it
 * (the same filesystem; a name no "*.prom"-style reader picks up), fsynced, given mode, and
 * renamed over it. On failure path is left as it was and no temporary file stays. 0 or -errno.
 */
int util_replace_file(const char *path, const char *buf, size_t len, mode_t mode);

/*
 * open() a path that must be a regular file (else -EINVAL): a FIFO or a device at the path is
 * neither waited on nor opened for real (O_NONBLOCK until it is known to be a file). Adds
 * O_CLOEXEC; mode is for O_CREAT. Returns the fd or -errno.
 */
int util_open_regular(const char *path, int flags, mode_t mode);

/* Lower-case hex of n bytes into out (2n + 1 bytes with the NUL); -ENOSPC if it does not fit. */
int util_hex(const void *in, size_t n, char *out, size_t size);

/* Undo the octal escapes (\040 for a space, …) that /proc/self/mountinfo uses in paths. */
int util_unescape_mountinfo(char *s);

/*
 * pthread_create(3) with every signal blocked in the new thread: signals are for a process's
 * loop (its signalfd), never for a worker, whatever mask the caller's thread has. 0 or -errno.
 */
int util_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg);
/*
 * fn(arg) run beside its caller, for a wait (a kernel's grace period, a disk's flush) that
 * others may share: on a thread of its own where one can be started, else at once on the
 * caller's. Every started job is waited for; util_job_wait returns what fn returned.
 */
struct util_job {
	int (*fn)(void *arg);
	void *arg;
	int ret;
	bool threaded;
	pthread_t thread;
};

void util_job_start(struct util_job *job, int (*fn)(void *arg), void *arg);
int util_job_wait(struct util_job *job);

#endif /* SLUICE_UTIL_H */
