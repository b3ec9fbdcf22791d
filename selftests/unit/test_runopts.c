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
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/netdev.h"
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

/*
 * Our own network namespace is owned by our user namespace; one a child made under a user
 * namespace of its own (a rootless container's) is not: the destroy's RST never leaves there
 * (loader.c resets_fixed), whatever the run says of its workload.
 */
static bool netns_owner(void)
{
	int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), go[2], ready[2], fd = -1;
	int r_own, r_child = -100, st;
	char path[64], c = 0;
	pid_t pid;

	EXPECT(own >= 0 && !pipe(go) && !pipe(ready), "open/pipe: %s", strerror(errno));
	r_own = netdev_netns_owner_is_ours(own);
	close(own);
	pid = fork();
	EXPECT(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		c = unshare(CLONE_NEWUSER | CLONE_NEWNET) ? 'e' : 'k';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	if (read(ready[0], &c, 1) == 1 && c == 'k') {
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		r_child = fd >= 0 ? netdev_netns_owner_is_ours(fd) : -errno;
		if (fd >= 0)
			close(fd);
	}
	if (write(go[1], "x", 1) != 1)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	EXPECT(r_own == 1, "our own netns: 1; got %d", r_own);
	if (c == 'e') {
		snprintf(why, WHY_LEN, "SKIP unshare(CLONE_NEWUSER) refused here");
		return true;
	}
	EXPECT(r_child == 0, "a child user namespace's netns: 0; got %d", r_child);
	return true;
}

int main(void)
{
	printf("TAP version 13\n1..3\n");
	report(symlink_followed(), "netns path ending in a symlink or magic link: followed", why);
	report(o_path_refused(), "netns descriptor sent O_PATH: refused, saying what to send", why);
	report(netns_owner(), "netns owned by our user namespace: 1; by a child one: 0", why);
	return tap_status();
}
