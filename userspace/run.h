/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* "sluice run": confine one command's network to a policy, in its own cgroup, and log it. */
#ifndef SLUICE_RUN_H
#define SLUICE_RUN_H

/* Exit statuses of sluice itself, apart from the command's own (docker/env convention). */
#define RUN_EXIT_SLUICE_ERROR 125 /* sluice could not set up or tear down the run */
#define RUN_EXIT_CANNOT_EXEC 126
#define RUN_EXIT_NOT_FOUND 127

/* argv starts after "run". Returns the process exit status. */
int run_main(int argc, char **argv);

#endif /* SLUICE_RUN_H */
