/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* "sluice resume": take over a run whose writer died, continue its log, end it. */
#ifndef SLUICE_RESUME_H
#define SLUICE_RESUME_H

/* argv starts after "resume". Returns the process exit status. */
int resume_main(int argc, char **argv);

#endif /* SLUICE_RESUME_H */
