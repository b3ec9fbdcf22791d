/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run's cgroup: created under a sluice-owned parent in the cgroup v2 hierarchy (found through
 * /proc/self/mountinfo), killed as a whole with cgroup.kill, removed with every child the workload
 * made inside it.
 */
#ifndef SLUICE_CGROUP_H
#define SLUICE_CGROUP_H

#include <limits.h>
#include <stdint.h>

struct run_cgroup {
	char path[PATH_MAX]; /* absolute path of the run's cgroup directory */
	int fd;		     /* O_RDONLY|O_DIRECTORY fd, for attach and CLONE_INTO_CGROUP; -1 if none */
	uint64_t id;	     /* cgroup id (inode number), as bpf_get_current_cgroup_id() reports it */
	int level;	     /* depth below the root of the hierarchy (the root is 0) */
};

/* Mount point of the cgroup v2 hierarchy, from /proc/self/mountinfo. */
int cgroup_v2_mount(char *buf, size_t len);

/* mkdir <v2 mount>/<parent>/<run_id>; fails with -EEXIST if a run of that id exists. */
int cgroup_create_run(const char *parent, const char *run_id, struct run_cgroup *cg);

/*
 * Open the existing cgroup of a run (sluice resume) at path, which must be
 * <v2 mount>/<parent…>/<run_id>: -EINVAL for any other.
 */
int cgroup_open_path(const char *path, const char *run_id, struct run_cgroup *cg);

/*
 * Open a cgroup that something else made (a container's, a unit's), for a daemon to attach to:
 * path must be absolute, below the v2 mount and not the root itself (-EINVAL otherwise). It is
 * never killed or removed by sluice.
 */
int cgroup_open_existing(const char *path, struct run_cgroup *cg);
/*
 * Whether the cgroup was removed (1) or is still there (0), from its open directory (no path
 * lookup: the daemon asks every turn of its loop), or -errno.
 */
int cgroup_is_removed(const struct run_cgroup *cg);
/* Whether a cgroup of this id still exists (anywhere in the hierarchy): 1, 0, or -errno. */
int cgroup_id_exists(uint64_t id);

/* Kill every process in the subtree (cgroup.kill) and wait up to timeout_ms for it to empty. */
int cgroup_kill_and_wait(const struct run_cgroup *cg, int timeout_ms);

/* True while any process is in the subtree (cgroup.events "populated 1"). */
int cgroup_is_populated(const struct run_cgroup *cg);

/* Remove the run's cgroup and every descendant, deepest first. Closes cg->fd. */
int cgroup_remove(struct run_cgroup *cg);

#endif /* SLUICE_CGROUP_H */
