/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* sluice verify LOG [--key PUB] [--checkpoints FILE]… [--json]; exits with a verify_status. */
#ifndef SLUICE_VERIFY_CMD_H
#define SLUICE_VERIFY_CMD_H

#include <stddef.h>

int verify_cmd_main(int argc, char **argv);

/*
 * Read a verifier key file (the key and at most one "\n"; a symlink is fine, anything but a
 * regular file is not) into buf, NUL-terminated. 0, or -errno with *why saying why when it is
 * not about the file system (-EFBIG: larger than a key file). Shared with policy suggest.
 */
int verify_pub_read(const char *path, char *buf, size_t size, const char **why);

#endif /* SLUICE_VERIFY_CMD_H */
