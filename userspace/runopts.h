/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The options that sluice run, sluice resume and sluice attach share (--policy, --run-id,
 * --task, --mode, --log, --netns, --upstream, --alerts, --key, --checkpoint-fd,
 * --log-rotate-kib, --verbose): each spelled, given its short letter and checked here once, so
 * that a value one command refuses no other takes, and -p means --policy to all of them. Each
 * command names the shared options it takes and adds its own.
 */
#ifndef SLUICE_RUNOPTS_H
#define SLUICE_RUNOPTS_H

#include <getopt.h>

#include "run.h"

enum runopt {
	RUNOPT_POLICY = 'p',
	RUNOPT_RUN_ID = 'r',
	RUNOPT_TASK = 't',
	RUNOPT_MODE = 'm',
	RUNOPT_LOG = 'l',
	RUNOPT_NETNS = 'n',
	RUNOPT_UPSTREAM = 'u',
	RUNOPT_ALERTS = 'A',
	RUNOPT_VERBOSE = 'v',
	/* long only; above the commands' own long-only codes (256…) */
	RUNOPT_KEY = 0x1000,
	RUNOPT_CHECKPOINT_FD,
	RUNOPT_LOG_ROTATE_KIB,
};

#define RUNOPTS_MAX 48

/* A command's getopt_long tables. */
struct runopts_table {
	struct option opts[RUNOPTS_MAX];
	char shortopts[2 * RUNOPTS_MAX + 2];
};

/*
 * Build t from the shared options in shared (0-terminated) and the command's own (own, ended
 * by an all-zero entry; own_short, its short letters, may start with "+"). -E2BIG if too many.
 */
int runopts_build(struct runopts_table *t, const int *shared, const struct option *own,
		  const char *own_short);

/*
 * Take shared option c with argument arg into a (a->cmd_name names the command in messages).
 * 0; -ENOENT when c is not a shared option; -EINVAL after saying on stderr what is wrong.
 */
int runopts_take(struct run_args *a, int c, const char *arg);

struct control_msg;

/*
 * Append to m what a request that starts a run at the daemon (op attach from sluice attach and
 * oci-hook, op run from sluice run's handoff) says of these options: policy, run_id, task, mode,
 * netns, log, upstream, from a (paths as the daemon must read them: absolute; NULL ones left
 * out). Both requests are built through here, as the daemon reads both back in one place
 * (daemon.c, drun_args): an option added here reaches both, and cannot be forgotten in one.
 */
void runopts_request(struct control_msg *m, const struct run_args *a);

/*
 * The network namespace at path (a --netns, a request's netns, the one a log names), opened: by
 * the client that sends a request (sluice run's handoff, sluice attach, oci-hook), whose
 * descriptor goes with it (SCM_RIGHTS), so that the daemon sets the run up in the namespace the
 * client meant, whatever the path names by the time the daemon reads it (daemon.c,
 * check_netns); by a standalone run's resolver and a resume. Every netns path is opened here:
 * nothing but a file of nsfs is ever opened (a FIFO's open would block, a device's has effects
 * of its own). A path ending in a symlink is followed: /proc/PID/ns/net is
 * one (a magic link), and what is opened is judged by what it is (nsfs, network), and by the
 * caller by its identity (resume.c, is_run_netns), not by its name. The descriptor, or
 * -errno with why not in err ("netns PATH: ...": no such file; not a namespace file; not a
 * network namespace).
 */
int runopts_open_netns(const char *path, char *err, size_t err_len);
/*
 * Why the descriptor fd will not do as a network namespace's (a descriptor a request carried),
 * or NULL: it will. Asks nsfs's ioctl only of a file of nsfs, and only of a descriptor opened
 * for reading (an O_PATH one is refused, saying what to send instead).
 */
const char *runopts_netns_why_not(int fd);

#endif /* SLUICE_RUNOPTS_H */
