// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/runopts.c's network namespace checks, on this process's own namespace:
 * a path that ends in a symlink is not followed when nobody vouched for it (nofollow: the path a
 * log names, resume.c), and a descriptor sent O_PATH is refused saying what to send instead.
 *
 * Usage: test_runopts        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/runopts.h"
#include "tap.h"

static char why[WHY_LEN];

/* A symlink to our own namespace's file: followed by default, refused with nofollow. */
static bool symlink_nofollow(void)
{
	char dir[] = "/tmp/sl-runopts-XXXXXX", link[PATH_MAX], err[PATH_MAX + 64] = "";
	int fd, fd_nofollow;

	EXPECT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(link, sizeof(link), "%s/ns", dir);
	if (symlink("/proc/self/ns/net", link)) {
		snprintf(why, WHY_LEN, "symlink: %s", strerror(errno));
		rmdir(dir);
		return false;
	}
	fd = runopts_open_netns(link, false, err, sizeof(err));
	if (fd >= 0)
		close(fd);
	fd_nofollow = runopts_open_netns(link, true, err, sizeof(err));
	if (fd_nofollow >= 0)
		close(fd_nofollow);
	unlink(link);
	rmdir(dir);
	EXPECT(fd >= 0, "the symlink followed: a descriptor; got %d", fd);
	EXPECT(fd_nofollow == -EINVAL && strstr(err, "not a namespace file (nsfs)"),
	       "nofollow: -EINVAL, not a namespace file; got %d (%s)", fd_nofollow, err);
	return true;
}

/* Our own namespace's file: opened for reading it will do; O_PATH, it will not, and says so. */
static bool o_path_refused(void)
{
	int rd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int op = open("/proc/self/ns/net", O_PATH | O_CLOEXEC);
	const char *w_rd = rd >= 0 ? runopts_netns_why_not(rd) : "(open failed)";
	const char *w_op = op >= 0 ? runopts_netns_why_not(op) : "(open failed)";

	if (rd >= 0)
		close(rd);
	if (op >= 0)
		close(op);
	EXPECT(!w_rd, "O_RDONLY: NULL; got \"%s\"", w_rd);
	EXPECT(w_op && strstr(w_op, "an O_PATH descriptor") && strstr(w_op, "(O_RDONLY)"),
	       "O_PATH: what is wrong and what to send; got \"%s\"", w_op ? w_op : "NULL");
	return true;
}

int main(void)
{
	printf("TAP version 13\n1..2\n");
	report(symlink_nofollow(), "netns path ending in a symlink: not followed with nofollow", why);
	report(o_path_refused(), "netns descriptor sent O_PATH: refused, saying what to send", why);
	return tap_status();
}
