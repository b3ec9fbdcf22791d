// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The re-numbering of a run's learned addresses under a new policy (switch.h). */
#include "switch.h"

int switch_add_rules(struct sl_learned *e, const struct policy *p, const char *name)
{
	long rule;
	int added = 0, i;

	for (rule = policy_match_host(p, name); rule >= 0;
	     rule = policy_match_host_from(p, name, (size_t)rule + 1)) {
		__u16 id = policy_rule_id((size_t)rule);

		for (i = 0; i < SL_LEARNED_RULES; i++) {
			if (e->rule_ids[i] == id)
				break;
			if (!e->rule_ids[i]) {
				e->rule_ids[i] = id;
				added++;
				break;
			}
		}
		if (i == SL_LEARNED_RULES)
			break; /* full: as loader_learn, the first rules that list it are kept */
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
