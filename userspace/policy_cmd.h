/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* "sluice policy …": validate a policy and say what it will and will not enforce. */
#ifndef SLUICE_POLICY_CMD_H
#define SLUICE_POLICY_CMD_H

/* argv starts at "policy". Returns the exit status: 0 valid, 1 invalid, 2 usage. */
int policy_cmd_main(int argc, char **argv);

#endif /* SLUICE_POLICY_CMD_H */
