/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* sluice verify LOG [--key PUB] [--checkpoints FILE]… [--json]; exits with a verify_status. */
#ifndef SLUICE_VERIFY_CMD_H
#define SLUICE_VERIFY_CMD_H

int verify_cmd_main(int argc, char **argv);

#endif /* SLUICE_VERIFY_CMD_H */
