/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice run, handed to a running daemon: the daemon sets the run up from a spare set of
 * programs it verified in advance (milliseconds, where loading takes seconds), creates the run's
 * cgroup, writes and seals the log; sluice run starts and confines the command exactly as a
 * standalone run does (clone3 into the cgroup it receives, namespaces, capabilities, --user,
 * seccomp), prints the run's denials, and tells the daemon how the command ended.
 *
 * The protocol, on one connection that stays open for the run (control.h):
 *   {"op":"run",…}           the run's options; reply with the cgroup's descriptor (SCM_RIGHTS)
 *   {"op":"run_started",…}   the command runs; its seccomp listener goes with it (SCM_RIGHTS)
 *   {"op":"run_end",…}       its status; the daemon ends the run as sluice run would, and says
 *                            whether the log is complete and the cgroup emptied
 * A connection that closes before run_end (sluice run killed) ends the run: the daemon kills
 * the cgroup's processes and seals the log ("client gone"). Denials come on a second
 * connection, the run's events stream.
 */
#ifndef SLUICE_HANDOFF_H
#define SLUICE_HANDOFF_H

#include <signal.h>

#include "run.h"
#include "spawn.h"

/* handoff_run's answer when the run is not handed over: run it standalone. */
#define HANDOFF_STANDALONE (-1)

/*
 * Hand r (parsed, with its id and log path; so: its user) to the daemon at --socket,
 * $SLUICE_SOCKET or the default, start and supervise the command. Returns the status sluice run
 * exits with, or HANDOFF_STANDALONE: no daemon answers there, or the run has an option the
 * daemon cannot honour (--checkpoint-fd, -v, SLUICE_SELFTEST_* variables, a command line
 * longer than a request line).
 */
int handoff_run(struct run *r, struct spawn_opts *so, const sigset_t *child_mask, int sig_fd);

/*
 * The command line in a request's "argv": each argument as LEN ":" BYTES, one after the other.
 * encode: 0 or -ENOSPC. decode: a NULL-terminated vector whose strings live in the returned
 * buffer (*buf; free both), or -EINVAL for a string that is not such a list.
 */
int handoff_argv_encode(char *const *argv, int n, char *out, size_t len);
int handoff_argv_decode(const char *s, char ***argv, int *n, char **buf);

#endif /* SLUICE_HANDOFF_H */
