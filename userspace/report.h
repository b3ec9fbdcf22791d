/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice report LOG... [--key PUB] [--unverified] -o FILE: one self-contained HTML page of what
 * signed run logs show, for the security team and the run's owner. Exit 0 when every log
 * verified (intact; sealed, or with loss or an unsigned tail said in the header), 1 when the
 * page was written but a log does not verify (its header says TAMPERED, or UNVERIFIED with
 * --unverified), 2 on a usage error, 4 when no page could be written (a log or the key could not
 * be read, the output could not be written).
 */
#ifndef SLUICE_REPORT_H
#define SLUICE_REPORT_H

int report_main(int argc, char **argv);

#endif /* SLUICE_REPORT_H */
