/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * "sluice daemon": one process per host that owns every attached run — its programs, resolver
 * and log writer — in one poll loop, and answers the control socket (control.h). Runs outlive
 * it: they are pinned, so a daemon that stops or dies leaves each one enforced with its names
 * failing closed, and the next daemon takes every one of them over (resume.c) and declares the
 * gap in its log.
 */
#ifndef SLUICE_DAEMON_H
#define SLUICE_DAEMON_H

#define DAEMON_STATE_DIR "/var/lib/sluice"
#define DAEMON_LOG_DIR "/var/log/sluice"

/* argv starts after "daemon". Returns the process exit status. */
int daemon_main(int argc, char **argv);

#endif /* SLUICE_DAEMON_H */
