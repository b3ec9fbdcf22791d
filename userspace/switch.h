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
 * A switch in three steps, so that a daemon's loop goes on serving its other runs while the new
 * programs are verified (a second or so, much more on a loaded machine):
 *
 * switch_prepare: switch r to the policy file policy_path (NULL: keep the run's) and mode
 * (SL_MODE_ENFORCE, SL_MODE_REPORT, or -1: keep the run's). Reads and checks the policy and the
 * run's budget ids; changes nothing of the run. 0 and *out, or -errno (err says why). From the
 * thread that drives the run's records.
 *
 * switch_load: load and verify the new programs beside the run's (loader_next_load). Any thread,
 * while the run's thread goes on draining its records and its resolver answering, provided that
 * nothing else switches, ends or frees the run meanwhile: it reads the run's loader (the old
 * objects' maps, found by name, and its configuration), the policy switch_prepare chose, and
 * writes only the job and the loader's era_high, which nothing but a switch reads. 0 or -errno.
 *
 * switch_commit: from the run's thread again: the learned addresses carried over, every hook
 * moved to the new programs, the resolver and records on the new policy, a policy_change line
 * in the log. On failure nothing changed (the old programs stay attached) and err says why;
 * except -ENOTRECOVERABLE: the hooks could be moved neither back nor forward, some run the new
 * programs, and the log's policy_switch_begin stays open: the caller must write nothing more to
 * the run's log and leave the run pinned as it is (a next writer refuses it while it is so).
 *
 * switch_free: the end of a switch at any step; a set loaded and not committed is freed, the old
 * programs stay. Accepts NULL.
 */
struct switch_job;
int switch_prepare(struct run *r, const char *policy_path, int mode, struct switch_job **out,
		   char *err, size_t err_len);
int switch_load(struct switch_job *j, char *err, size_t err_len);
int switch_commit(struct switch_job *j, char *err, size_t err_len);
void switch_free(struct switch_job *j);

/*
 * The log's lines of a switch (sluice-log(5)), for switch_commit and for a writer that took over a
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
 * Add to rule_ids (a learned address's, or a server-name pair's: sl_learned, sl_sni_name) the
 * rules (1-based) of p whose hosts list name, after those it holds and without repeating one, as
 * many as there are free slots. Returns how many were added.
 */
int switch_add_rules(__u16 rule_ids[SL_LEARNED_RULES], const struct policy *p, const char *name);

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
