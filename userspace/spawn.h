/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Starts the workload inside the run's cgroup from its first instruction: clone3 with
 * CLONE_INTO_CGROUP, so there is no moment where it runs unjudged and no race with a later move.
 */
#ifndef SLUICE_SPAWN_H
#define SLUICE_SPAWN_H

#include <signal.h>
#include <sys/types.h>

/*
 * Run argv (PATH searched) in the cgroup given by cgroup_fd, with the signal mask the caller had
 * before it blocked signals for its own loop (child_mask), inside the network namespace netns_fd
 * (-1: sluice's own). Returns 0 and the pid, or -errno: the
 * exec failure of the child is reported here, not as exit status 127 later.
 */
int spawn_in_cgroup(int cgroup_fd, int netns_fd, char *const argv[], const sigset_t *child_mask,
		    pid_t *pid);

#endif /* SLUICE_SPAWN_H */
