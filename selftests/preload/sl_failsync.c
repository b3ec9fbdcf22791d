// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_failsync.so: an LD_PRELOAD shim for test_journal.sh. fdatasync() fails with EIO once
 * SL_FAILSYNC_AFTER calls to it have succeeded: a disk that stops taking the log's data, as the
 * writer's sync thread sees it (what a failing device or a lost writeback reports). With
 * SL_FAILSYNC_DELAY_MS the first failing call takes that long before it fails, as a dying disk's
 * timeout does, so that the writer queues more checkpoints behind it. Without
 * SL_FAILSYNC_AFTER it is the real fdatasync.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int fdatasync(int fd)
{
	static int calls;
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	const char *after = getenv("SL_FAILSYNC_AFTER"), *delay = getenv("SL_FAILSYNC_DELAY_MS");
	int n = after ? __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED) : -1;

	if (after && n >= atoi(after)) {
		if (delay && n == atoi(after))
			usleep((useconds_t)atoi(delay) * 1000);
		errno = EIO;
		return -1;
	}
	return real ? real(fd) : (errno = ENOSYS, -1);
}
