// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options run, resume and attach share: see runopts.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <linux/nsfs.h>

#include "control.h"
#include "records.h"
#include "runopts.h"
#include "util.h"

static const struct option shared_opts[] = {
	{ "policy", required_argument, NULL, RUNOPT_POLICY },
	{ "run-id", required_argument, NULL, RUNOPT_RUN_ID },
	{ "task", required_argument, NULL, RUNOPT_TASK },
	{ "mode", required_argument, NULL, RUNOPT_MODE },
	{ "log", required_argument, NULL, RUNOPT_LOG },
	{ "netns", required_argument, NULL, RUNOPT_NETNS },
	{ "upstream", required_argument, NULL, RUNOPT_UPSTREAM },
	{ "alerts", required_argument, NULL, RUNOPT_ALERTS },
	{ "verbose", no_argument, NULL, RUNOPT_VERBOSE },
	{ "key", required_argument, NULL, RUNOPT_KEY },
	{ "checkpoint-fd", required_argument, NULL, RUNOPT_CHECKPOINT_FD },
	{ "log-rotate-kib", required_argument, NULL, RUNOPT_LOG_ROTATE_KIB },
};

int runopts_build(struct runopts_table *t, const int *shared, const struct option *own,
		  const char *own_short)
{
	size_t n = 0, s = 0, i;

	memset(t, 0, sizeof(*t));
	if (own_short[0] == '+')
		t->shortopts[s++] = *own_short++;
	for (; *shared; shared++) {
		for (i = 0; i < sizeof(shared_opts) / sizeof(shared_opts[0]); i++)
			if (shared_opts[i].val == *shared)
				break;
		if (i == sizeof(shared_opts) / sizeof(shared_opts[0]) || n + 1 >= RUNOPTS_MAX)
			return -E2BIG;
		t->opts[n++] = shared_opts[i];
		if (*shared < 0x100) {
			t->shortopts[s++] = (char)*shared;
			if (shared_opts[i].has_arg == required_argument)
				t->shortopts[s++] = ':';
		}
	}
	for (; own->name; own++) {
		if (n + 1 >= RUNOPTS_MAX)
			return -E2BIG;
		t->opts[n++] = *own;
	}
	if (s + strlen(own_short) >= sizeof(t->shortopts))
		return -E2BIG;
	memcpy(t->shortopts + s, own_short, strlen(own_short) + 1);
	return 0;
}

/* A value that goes into the log and the daemon's state: bounded, no control characters. */
static int check_text(const struct run_args *a, const char *opt, const char *v, size_t max)
{
	const unsigned char *p;

	if (strlen(v) > max) {
		fprintf(stderr, "%s: --%s: longer than %zu bytes\n", a->cmd_name, opt, max);
		return -EINVAL;
	}
	for (p = (const unsigned char *)v; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "%s: --%s: holds a control character\n", a->cmd_name, opt);
			return -EINVAL;
		}
	}
	return 0;
}

void runopts_request(struct control_msg *m, const struct run_args *a)
{
	const struct {
		const char *key, *val;
	} members[] = {
		{ "policy", a->policy_path }, { "run_id", a->run_id }, { "task", a->task },
		{ "mode", a->mode },	      { "netns", a->netns },   { "log", a->log_path },
		{ "upstream", a->upstream },
	};

	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
		if (members[i].val)
			control_msg_str(m, members[i].key, members[i].val);
}

const char *runopts_netns_why_not(int fd)
{
	struct statfs fs;
	int fl;

	/* an ioctl means what the file's driver says: nsfs's is asked only of a file of nsfs */
	if (fstatfs(fd, &fs) || fs.f_type != NSFS_MAGIC)
		return "not a namespace file (nsfs)";
	/* neither nsfs's ioctl nor setns(2) takes one (EBADF), whatever namespace it is of */
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_PATH))
		return "an O_PATH descriptor, which setns(2) cannot enter: send a network namespace's "
		       "file opened for reading (O_RDONLY), e.g. /run/netns/NAME or /proc/PID/ns/net";
	return ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET ? NULL : "not a network namespace";
}

/*
 * The path is looked at before it is opened for reading: a FIFO would block the open, and a
 * device's open has effects of its own. Only a file of nsfs is opened, through its O_PATH.
 */
int runopts_open_netns(const char *path, char *err, size_t err_len)
{
	int pfd = open(path, O_PATH | O_CLOEXEC), fd, ret;
	const char *why;
	char self[64];
	struct statfs fs;

	if (pfd < 0) {
		ret = -errno;
		util_fmt(err, err_len, "netns %s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstatfs(pfd, &fs) || fs.f_type != NSFS_MAGIC) {
		util_fmt(err, err_len, "netns %s: not a namespace file (nsfs)", path);
		close(pfd);
		return -EINVAL;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC);
	ret = -errno;
	close(pfd);
	if (fd < 0) {
		util_fmt(err, err_len, "netns %s: %s", path, strerror(-ret));
		return ret;
	}
	why = runopts_netns_why_not(fd);
	if (why) {
		util_fmt(err, err_len, "netns %s: %s", path, why);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int runopts_take(struct run_args *a, int c, const char *arg)
{
	switch (c) {
	case RUNOPT_POLICY:
		a->policy_path = arg;
		return 0;
	case RUNOPT_RUN_ID:
		if (run_check_id(arg)) {
			fprintf(stderr, "%s: --run-id: expected 1-%d characters of [A-Za-z0-9_-] not "
					"starting with '-' (bpffs refuses '.'), got \"%s\"\n",
				a->cmd_name, RUN_ID_MAX, arg);
			return -EINVAL;
		}
		a->run_id = arg;
		return 0;
	case RUNOPT_TASK:
		a->task = arg;
		return check_text(a, "task", arg, RECORDS_TASK_MAX);
	case RUNOPT_MODE:
		if (strcmp(arg, "enforce") && strcmp(arg, "report")) {
			fprintf(stderr, "%s: --mode: expected enforce or report, got \"%s\"\n",
				a->cmd_name, arg);
			return -EINVAL;
		}
		a->mode = arg;
		return 0;
	case RUNOPT_LOG:
		a->log_path = arg;
		return 0;
	case RUNOPT_NETNS:
		a->netns = arg;
		return 0;
	case RUNOPT_UPSTREAM:
		a->upstream = arg;
		return check_text(a, "upstream", arg, RUN_UPSTREAM_MAX - 1);
	case RUNOPT_ALERTS:
		a->alerts = arg;
		return 0;
	case RUNOPT_VERBOSE:
		a->verbose = true;
		return 0;
	case RUNOPT_KEY:
		a->key_path = arg;
		return 0;
	case RUNOPT_CHECKPOINT_FD:
		return run_take_checkpoint_fd(a, arg, &a->checkpoint_fd) ? -EINVAL : 0;
	case RUNOPT_LOG_ROTATE_KIB:
		/* up to 1 TiB; a line is at most 8 KiB, so smaller sizes rotate every line */
		return run_parse_ulong(a, "--log-rotate-kib", arg, 0, 1UL << 30, &a->rotate_kib) ?
			       -EINVAL : 0;
	default:
		return -ENOENT;
	}
}
