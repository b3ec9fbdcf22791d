// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/runopts.c's network namespace checks, on this process's own namespace:
 * a path that ends in a symlink or a magic link (/proc/PID/ns/net) is opened, and a descriptor
 * sent O_PATH is refused saying what to send instead.
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

/*
 * A path nobody vouched for (the one a log names) that ends in a symlink is followed and judged
 * by what it opens: /proc/self/ns/net is itself a magic link, and a symlink to it works too.
 */
static bool symlink_followed(void)
{
	char dir[] = "/tmp/sl-runopts-XXXXXX", link[PATH_MAX], err[PATH_MAX + 64] = "";
	int fd, fd_magic;

	EXPECT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(link, sizeof(link), "%s/ns", dir);
	if (symlink("/proc/self/ns/net", link)) {
		snprintf(why, WHY_LEN, "symlink: %s", strerror(errno));
		rmdir(dir);
		return false;
	}
	fd = runopts_open_netns(link, err, sizeof(err));
	if (fd >= 0)
		close(fd);
	fd_magic = runopts_open_netns("/proc/self/ns/net", err, sizeof(err));
	if (fd_magic >= 0)
		close(fd_magic);
	unlink(link);
	rmdir(dir);
	EXPECT(fd >= 0, "the symlink followed: a descriptor; got %d (%s)", fd, err);
	EXPECT(fd_magic >= 0, "/proc/self/ns/net: a descriptor; got %d (%s)", fd_magic, err);
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
	report(symlink_followed(), "netns path ending in a symlink or magic link: followed", why);
	report(o_path_refused(), "netns descriptor sent O_PATH: refused, saying what to send", why);
	return tap_status();
}
