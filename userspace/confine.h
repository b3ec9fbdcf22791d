/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The default workload (no --user, no --allow-root): still uid 0, but without the power to undo
 * the run. uid 0 keeps owning root-owned files even without capabilities, so dropping
 * capabilities is not enough on its own; the command also gets namespaces of its own:
 *  - a cgroup namespace rooted at the run's cgroup: the kernel refuses to migrate a process to a
 *    cgroup outside it, so cgroup.procs of the root (mode 644, root's) no longer lets it leave;
 *  - a PID namespace: sluice has no pid the command can name, so kill() cannot reach it (same
 *    uid, no CAP_KILL needed otherwise); a small init forks CMD and passes its status through;
 *  - a mount namespace (slave of sluice's, nothing propagates back) in which every bpffs is
 *    unmounted (a pinned link opened with BPF_OBJ_GET can be detached by its owner, no
 *    capability needed), /sys and every cgroupfs are read-only (cgroup.kill, cgroup.freeze,
 *    uevent_helper…), /proc is the new PID namespace's own with /proc/sys and
 *    /proc/sysrq-trigger read-only (core_pattern and sysctls are writable by uid 0 without
 *    capabilities), the host key reads empty, the log cannot be written, renamed or
 *    unlinked (it is a read-only mount point there), and the daemon's socket directory is an
 *    empty read-only tmpfs (uid 0 owns /run/sluice: it could replace the socket with its own);
 *  - an IPC namespace: root-owned SysV IPC objects and message queues of the host stay out of
 *    reach;
 * and finally a bounding set cut to CONFINE_KEEP_CAPS, no ambient or inheritable capabilities,
 * and no_new_privs.
 */
#ifndef SLUICE_CONFINE_H
#define SLUICE_CONFINE_H

#include <limits.h>

#define CONFINE_PATHS_MAX 256
#define CONFINE_FILES_MAX 8

/* Prepared by the parent (it reads /proc/self/mountinfo); only read in the child. */
struct confine {
	const char *umount[CONFINE_PATHS_MAX]; /* bpffs mounts, in mountinfo order */
	int n_umount;
	const char *ro[CONFINE_PATHS_MAX]; /* /sys and below, cgroupfs anywhere */
	int n_ro;
	const char *hide[CONFINE_FILES_MAX]; /* files that read empty (the host key) */
	int n_hide;
	const char *protect[CONFINE_FILES_MAX]; /* files that stay read-only (the log) */
	int n_protect;
	const char *mask[CONFINE_FILES_MAX]; /* directories under an empty read-only tmpfs */
	int n_mask;
	char buf[32768]; /* the paths above point in here */
	size_t used;
};

/* Fill c from this process's mount table. */
int confine_prepare(struct confine *c);
/* In CMD's mount namespace, path reads empty (bound to /dev/null). */
int confine_hide(struct confine *c, const char *path);
/* In CMD's mount namespace, path is a read-only mount point: no write, rename or unlink. */
int confine_protect(struct confine *c, const char *path);

/*
 * In CMD's mount namespace, the directory path is an empty read-only tmpfs: nothing in it can be
 * reached, unlinked or replaced (the daemon's socket).
 */
int confine_mask(struct confine *c, const char *path);

/*
 * In the clone3 child (CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWIPC), before
 * exec: set up the mounts, drop the capabilities, fork CMD's process and return 0 in it. The
 * clone3 child becomes the namespace's init: it closes every descriptor but 0-2 (the exec-error
 * pipe, so that only CMD's copy is left; the pin directory's lock, links and maps, which would
 * keep a killed writer's run looking alive), reaps every orphan, and exits with CMD's status (128+N when CMD
 * died of signal N: the number sluice exits with either way). Only async-signal-safe calls;
 * returns -errno (in the init, before any fork) on failure.
 */
int confine_child(const struct confine *c);

#endif /* SLUICE_CONFINE_H */
