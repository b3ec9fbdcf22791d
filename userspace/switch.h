/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Switch a live run to another mode or policy without a restart (sluice set-mode,
 * sluice replace-policy): a second set of the run's programs is loaded with the new
 * configuration, the addresses and server names the run learned are carried over under the new
 * policy's rules (those it does not allow are dropped), and every hook of the run moves to the
 * new programs atomically (loader_next_commit). The log records it in a policy_change line.
 */
#ifndef SLUICE_SWITCH_H
#define SLUICE_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
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

/*
 * Which rule of o (the run's policy) each rule of p (the one switched to) takes its host budgets
 * (max_total_*) over from: match[i] (p->n_rules of them) is that rule's index in o, or -1 for a
 * fresh budget. A named rule takes the budgets of o's rule of the same name; an unnamed one
 * those of an unnamed rule of o that is the same rule (policy_rule_identity: its destinations,
 * ports and protocols), the k-th such rule of p the k-th such of o, in policy order. Never by
 * place: a rule inserted or removed ahead of another moves no budget. No rule of o is matched
 * twice. 0 or -ENOMEM.
 */
int switch_budget_matches(const struct policy *o, const struct policy *p, long *match);

#endif /* SLUICE_SWITCH_H */
