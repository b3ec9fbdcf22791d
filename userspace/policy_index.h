/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A policy's matching as an index, for judging many recorded connections against one policy
 * (sluice policy replay). The answers are those of the policy module's own functions
 * (policy_match_host, policy_rule_takes, policy_cidr_match: the ones the resolver and the
 * preexisting-socket scan use), found without walking the policy's lists: a rule listing every
 * port one by one, or 100,000 CIDRs, or as many names, would otherwise make each connection cost
 * the whole list. Built in time proportional to the policy; each lookup then costs about the
 * logarithm of a rule's port list, one hash probe per label of a name and one per prefix length
 * the policy uses, plus, for a CIDR lookup, the rules that share the very prefix found and do
 * not take the port (rules sharing one prefix are tried in policy order).
 *
 * steps counts the work lookups did (probes, comparisons, rules tried): tests bound it.
 */
#ifndef SLUICE_POLICY_INDEX_H
#define SLUICE_POLICY_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../policy/policy.h"

struct policy_index;

/* Index p (which must outlive it). 0 and *out, or -ENOMEM. */
int policy_index_new(const struct policy *p, struct policy_index **out);
void policy_index_free(struct policy_index *x);

/* policy_match_host(p, name): the first rule whose hosts match name, or -1. */
long policy_index_host(struct policy_index *x, const char *name);

/* policy_rule_takes(&p->rules[rule], port, proto). */
bool policy_index_takes(struct policy_index *x, size_t rule, uint16_t port, uint8_t proto);

/* policy_cidr_match(p, family, addr, port, proto). */
long policy_index_cidr(struct policy_index *x, int family, const uint8_t *addr, uint16_t port,
		       uint8_t proto);

/* The work done by lookups so far. */
uint64_t policy_index_steps(const struct policy_index *x);

#endif /* SLUICE_POLICY_INDEX_H */
