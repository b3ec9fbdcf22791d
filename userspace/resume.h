/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* "sluice resume": take over a run whose writer died, continue its log, end it. */
#ifndef SLUICE_RESUME_H
#define SLUICE_RESUME_H

struct run;

/*
 * Take over run r->run_id, whose writer died, from its log r->log_path: reopen its pinned
 * programs and maps, verify the log, start its resolver again and continue the log with a
 * writer_restart line, declaring what could not have been seen. r comes from run_init with
 * run_id, log_path and args (key_path, verbose) set; on success the run is ready for run_step
 * and run_finish. On failure msg says why and the run is left exactly as it was.
 */
int resume_take(struct run *r, char *msg, size_t msg_len);

/* argv starts after "resume". Returns the process exit status. */
int resume_main(int argc, char **argv);

#endif /* SLUICE_RESUME_H */
