/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `sluice attach` and `sluice oci-hook` name, found on the host: the cgroup (an absolute path
 * under the cgroup v2 mount) and, when it has its own, the network namespace of a process, of a
 * container (through its runtime's own state: runc's state.json under runc's, Docker's and
 * containerd's state roots, podman's inspect, crun's status; never guessed from a name; a
 * containerd container also as NAMESPACE/ID, its ids being unique only within a namespace), or of
 * a systemd unit (its ControlGroup). A name that matches more than one thing is refused with the
 * candidates listed.
 */
#ifndef SLUICE_LOCATE_H
#define SLUICE_LOCATE_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define LOCATE_NAME_MAX 253 /* a container name or id, a unit name */
#define LOCATE_WHY_MAX 2048 /* room for a refusal that lists candidates */

struct locate {
	char cgroup[PATH_MAX]; /* absolute path under the v2 mount */
	char netns[PATH_MAX];  /* /proc/PID/ns/net when it is not sluice's own netns; else "" */
	int netns_fd;	       /* that namespace, opened while pid was still the process found; -1 */
	pid_t pid;	       /* a process in it (a container's init, a unit's main), or 0 */
	char id[LOCATE_NAME_MAX + 1]; /* a container's full id; else "" */
	char source[LOCATE_NAME_MAX + 16]; /* "pid:N", "container:ID", "unit:NAME" */
};

/* The cgroup v2 path of pid (its "0::" line in /proc/PID/cgroup), made absolute. */
int locate_cgroup_of_pid(pid_t pid, char *buf, size_t len, char *why, size_t why_len);

/* When pid started (field 22 of /proc/PID/stat, clock ticks since boot): who holds the pid now. */
int locate_pid_start(pid_t pid, unsigned long long *start);

/*
 * pid's network namespace, opened into *fd, and "/proc/PID/ns/net" into buf, when it differs from
 * the caller's (else *fd = -1 and buf ""). The process must still be the one that started at start
 * once the namespace is open: a pid reused since it was found is refused (-ESRCH), as the path
 * would name another process's namespace.
 */
int locate_netns_of_pid(pid_t pid, unsigned long long start, int *fd, char *buf, size_t len,
			char *why, size_t why_len);

/* Each fills l (l->netns_fd: -1 or open, closed by locate_release) or fails with why. */
int locate_pid(pid_t pid, struct locate *l, char *why, size_t why_len);
int locate_container(const char *name, struct locate *l, char *why, size_t why_len);
int locate_unit(const char *unit, struct locate *l, char *why, size_t why_len);
void locate_release(struct locate *l);

/*
 * An OCI config's linux.cgroupsPath as an absolute path under the v2 mount at mnt: a cgroupfs
 * path ("/a/b", or "a/b", which runc takes relative to its own cgroup: refused here, as the hook
 * cannot know it), or systemd's "SLICE:PREFIX:NAME" (→ <mnt>/<SLICE expanded>/PREFIX-NAME.scope,
 * a-b.slice expanding to a.slice/a-b.slice; an empty SLICE is system.slice; NAME ending in
 * ".slice" is that slice itself). -EINVAL with why for anything else.
 */
int locate_cgroups_path(const char *mnt, const char *spec, char *buf, size_t len, char *why,
			size_t why_len);

/* Whether s is a container name or id as runtimes allow them: [A-Za-z0-9][A-Za-z0-9_.-]*. */
int locate_check_name(const char *s);

#endif /* SLUICE_LOCATE_H */
