// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What a live switch carries over to the new policy: learned addresses, budgets (switch.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "switch.h"

int switch_add_rules(__u16 rule_ids[SL_LEARNED_RULES], const struct policy *p, const char *name)
{
	long rule;
	int added = 0, i;

	for (rule = policy_match_host(p, name); rule >= 0;
	     rule = policy_match_host_from(p, name, (size_t)rule + 1)) {
		__u16 id = policy_rule_id((size_t)rule);

		for (i = 0; i < SL_LEARNED_RULES; i++) {
			if (rule_ids[i] == id)
				break;
			if (!rule_ids[i]) {
				rule_ids[i] = id;
				added++;
				break;
			}
		}
		if (i == SL_LEARNED_RULES)
			/*
			 * full: the first rules that list it are kept. The resolver refuses an
			 * answer that would not fit (loader_learn); an address learned under the
			 * old policy is narrowed instead: the rules left out allow nothing here.
			 */
			break;
	}
	return added;
}

bool switch_name_kept(const struct policy *p, int mode, const char *name)
{
	return mode == SL_MODE_REPORT || policy_match_host(p, name) >= 0;
}

bool switch_no_rule(const struct sl_learned *e)
{
	int i;

	for (i = 0; i < SL_LEARNED_RULES; i++)
		if (e->rule_ids[i])
			return false;
	return true;
}

/* A rule of a policy as switch_budget_matches sorts them: by name, or by identity. */
struct budget_key {
	const char *name;
	unsigned char id[32];
	size_t idx;
};

static int cmp_by_name(const void *a, const void *b)
{
	return strcmp(((const struct budget_key *)a)->name, ((const struct budget_key *)b)->name);
}

/* By identity, then by place: equal ones stay in policy order, for the k-th to meet the k-th. */
static int cmp_by_id(const void *a, const void *b)
{
	const struct budget_key *x = a, *y = b;
	int c = memcmp(x->id, y->id, sizeof(x->id));

	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The named rules of p in *named (by name), the unnamed in *unnamed (by identity). */
static int budget_keys(const struct policy *p, struct budget_key **named, size_t *n_named,
		       struct budget_key **unnamed, size_t *n_unnamed)
{
	size_t i;

	*n_named = *n_unnamed = 0;
	*named = calloc(p->n_rules ? p->n_rules : 1, sizeof(**named));
	*unnamed = calloc(p->n_rules ? p->n_rules : 1, sizeof(**unnamed));
	if (!*named || !*unnamed)
		return -ENOMEM;
	for (i = 0; i < p->n_rules; i++) {
		if (p->rules[i].name) {
			(*named)[(*n_named)++] = (struct budget_key){ .name = p->rules[i].name,
								     .idx = i };
			continue;
		}
		(*unnamed)[*n_unnamed].idx = i;
		if (policy_rule_identity(&p->rules[i], (*unnamed)[(*n_unnamed)++].id))
			return -ENOMEM;
	}
	qsort(*named, *n_named, sizeof(**named), cmp_by_name);
	qsort(*unnamed, *n_unnamed, sizeof(**unnamed), cmp_by_id);
	return 0;
}

int switch_budget_matches(const struct policy *o, const struct policy *p, long *match)
{
	struct budget_key *on = NULL, *ou = NULL, *pn = NULL, *pu = NULL, *hit;
	size_t n_on, n_ou, n_pn, n_pu, i, j;
	int ret;

	for (i = 0; i < p->n_rules; i++)
		match[i] = -1;
	ret = budget_keys(o, &on, &n_on, &ou, &n_ou);
	if (!ret)
		ret = budget_keys(p, &pn, &n_pn, &pu, &n_pu);
	if (ret)
		goto out;
	/* names are unique in a policy (the parser refuses a second one) */
	for (i = 0; i < n_pn; i++) {
		hit = bsearch(&pn[i], on, n_on, sizeof(*on), cmp_by_name);
		if (hit)
			match[pn[i].idx] = (long)hit->idx;
	}
	/* both sorted by identity: a run of equal identities pairs off in policy order */
	for (i = j = 0; i < n_ou && j < n_pu;) {
		int c = memcmp(ou[i].id, pu[j].id, sizeof(ou[i].id));

		if (!c)
			match[pu[j++].idx] = (long)ou[i++].idx;
		else if (c < 0)
			i++;
		else
			j++;
	}
out:
	free(on);
	free(ou);
	free(pn);
	free(pu);
	return ret;
}
