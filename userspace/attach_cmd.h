/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* "sluice attach": put an existing cgroup (a process's, a container's, a unit's) under a policy. */
#ifndef SLUICE_ATTACH_CMD_H
#define SLUICE_ATTACH_CMD_H

#include <stdbool.h>
#include <stddef.h>

#include "control.h"

/* Exit statuses of sluice attach and sluice oci-hook (their --help says the same). */
#define ATTACH_EXIT_OK 0
#define ATTACH_EXIT_REFUSED 1	/* the daemon answered with an error */
#define ATTACH_EXIT_USAGE 2	/* bad arguments or input */
#define ATTACH_EXIT_NOT_FOUND 3 /* the target could not be located, or is ambiguous */
#define ATTACH_EXIT_NO_DAEMON 4 /* no daemon at the socket, or the exchange failed */

/* An attach request; NULL members are left out. Every one is checked by attach_build. */
struct attach_req {
	const char *cgroup; /* absolute, under the cgroup v2 mount */
	const char *policy; /* absolute */
	const char *run_id;
	const char *task;
	const char *mode;   /* "report" | "enforce" */
	const char *netns;  /* absolute path */
	const char *log;    /* absolute path */
	const char *upstream;
	const char *source; /* "pid:N", "container:ID", "unit:NAME", "oci-hook" */
	bool reset_peers;   /* --reset-peers: the workload holds no CAP_NET_ADMIN */
	/*
	 * run_id, or the daemon's first free run_id-N when it is taken (its log exists): a
	 * container started again keeps its id (no log may be given)
	 */
	bool next_free_id;
};

/* Check r and build its request line. 0, or -EINVAL with why naming the field. */
int attach_build(const struct attach_req *r, struct control_msg *m, char *why, size_t why_len);

/*
 * Send the request built in m to the daemon at socket (NULL: $SLUICE_SOCKET or the default),
 * with the request's network namespace, already open (netns_fd, the caller's to close; -1: none),
 * passed along, and report the outcome as cmd on stdout (attached) or stderr (why not).
 * Returns an ATTACH_EXIT_*.
 */
int attach_send(const char *cmd, const char *socket, struct control_msg *m, int netns_fd);

/* argv starts at "attach". Returns the exit status. */
int attach_cmd_main(int argc, char **argv);

#endif /* SLUICE_ATTACH_CMD_H */
