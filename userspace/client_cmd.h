/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon's small clients: "sluice detach", "sluice status", "sluice set-mode" and
 * "sluice replace-policy". Each sends one request (control.h) and prints the answer.
 */
#ifndef SLUICE_CLIENT_CMD_H
#define SLUICE_CLIENT_CMD_H

/* argv starts at the command's name. Exit: 0 done, 1 the daemon refused, 2 usage, 3 no daemon. */
int client_cmd_main(int argc, char **argv);

#endif /* SLUICE_CLIENT_CMD_H */
