/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Starts the workload inside the run's cgroup from its first instruction: clone3 with
 * CLONE_INTO_CGROUP, so there is no moment where it runs unjudged and no race with a later move.
 */
#ifndef SLUICE_SPAWN_H
#define SLUICE_SPAWN_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "confine.h"

struct sandbox_seccomp;

struct spawn_opts {
	int cgroup_fd;		   /* the run's cgroup */
	int netns_fd;		   /* network namespace to enter, or -1 for sluice's own */
	bool drop;		   /* become uid:gid, with no_new_privs, before exec */
	uid_t uid;
	gid_t gid;
	/* CMD as a confined root (confine.h): own namespaces, cut capabilities; NULL: not */
	const struct confine *confine;
	const sigset_t *child_mask; /* the signal mask sluice had before blocking its own */
	struct sandbox_seccomp *seccomp; /* the socket-family filter to install last before exec
					    (its listener is taken on success), or NULL */
	/*
	 * Descriptors of sluice's closed first thing in the child: the confined root's init never
	 * execs, so close-on-exec alone would leave them open in it for the whole run (a handed
	 * run's connection to the daemon, whose closing tells the daemon sluice run is gone).
	 */
	const int *close_fds;
	int n_close_fds;
};

/*
 * Run argv (PATH searched) as o says. Returns 0 and the pid, or -errno: a failure of the child
 * before or at exec is reported here, not as exit status 127 later.
 */
int spawn_in_cgroup(const struct spawn_opts *o, char *const argv[], pid_t *pid);

/* "USER[:GROUP]", names or numbers; without GROUP, the user's primary group. */
int spawn_parse_user(const char *spec, uid_t *uid, gid_t *gid);

#endif /* SLUICE_SPAWN_H */
