/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Switch a live run to another mode or policy without a restart (sluice set-mode,
 * sluice replace-policy): a second set of the run's programs is loaded with the new
 * configuration, the addresses and server names the run learned are carried over under the new
 * policy's rules (those it does not allow are dropped), and every hook of the run moves to the
 * new programs atomically (loader_next_commit). The log announces it in a policy_switch_begin line
 * before the commit and records it in a policy_change line after (policy_switch_abort if the
 * commit failed).
 */
#ifndef SLUICE_SWITCH_H
#define SLUICE_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "../bpf/sluice.h"
#include "../policy/policy.h"

struct run;

/*
 * Switch r to the policy file policy_path (NULL: keep the run's) and mode (SL_MODE_ENFORCE,
 * SL_MODE_REPORT, or -1: keep the run's). On success the run's programs, resolver and records
 * follow the new policy and the log has a policy_change line. On failure nothing changed (the
 * old programs stay attached) and err says why. Returns 0 or -errno. From the thread that
 * drives the run's records.
 */
int run_switch(struct run *r, const char *policy_path, int mode, char *err, size_t err_len);

/*
 * The log's lines of a switch (sluice-log(5)), for run_switch and for a writer that took over a
 * run whose writer died inside one (resume.c). switch_log_change: policy_change, the run's
 * policy, path and mode now in force (r->policy, r->args.policy_path) and the programs'
 * generation, after prev_sha256 (hex) in prev_mode; learned: the addresses kept and dropped, or
 * NULL (not known); after_restart: written by the writer that took over. switch_log_abort:
 * policy_switch_abort, the switch whose policy_switch_begin announced generation era never
 * took effect, and why.
 */
void switch_log_change(struct run *r, const char *prev_sha256, int prev_mode,
		       const uint64_t *learned, bool after_restart);
void switch_log_abort(struct run *r, uint32_t era, const char *why);

/* --- The pure part (switch_rules.c), unit-tested --------------------------------------------- */

/*
 * Add to e->rule_ids the rules (1-based) of p whose hosts list name, after those e holds and
 * without repeating one, as many as there are free slots. Returns how many were added.
 */
int switch_add_rules(struct sl_learned *e, const struct policy *p, const char *name);

/* The name stays reachable under p in mode: report keeps every name, enforce those p lists. */
bool switch_name_kept(const struct policy *p, int mode, const char *name);

/* e carries no rule (every slot 0). */
bool switch_no_rule(const struct sl_learned *e);

#endif /* SLUICE_SWITCH_H */
