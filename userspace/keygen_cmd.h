/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* "sluice keygen": create the Ed25519 key pair that signs a host's logs (note.h formats). */
#ifndef SLUICE_KEYGEN_CMD_H
#define SLUICE_KEYGEN_CMD_H

/* argv starts at "keygen". Returns the exit status: 0 written, 1 failure, 2 usage. */
int keygen_cmd_main(int argc, char **argv);

#endif /* SLUICE_KEYGEN_CMD_H */
