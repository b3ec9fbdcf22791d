// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/switch_rules.c: how a live switch (sluice replace-policy) carries a
 * learned address over to the new policy. Its rule ids become those of the new policy's rules
 * that list its names (as many as an entry holds, none repeated), a name the new policy does not
 * list keeps nothing in enforce mode, and report mode keeps every name.
 *
 * Usage: test_switch   TAP 13; exits 1 if any test failed. Needs no root.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "userspace/switch.h"
#include "tap.h"

/* The old policy numbered a.example 1 and b.example 2; the new one lists them elsewhere. */
static const char new_yaml[] =
	"default: deny\n"
	"rules:\n"
	"  - name: other\n"
	"    hosts: [\"other.example\"]\n"
	"    ports: [81]\n"
	"  - name: b-first\n"
	"    hosts: [\"b.example\"]\n"
	"    ports: [80]\n"
	"  - name: a-wild\n"
	"    hosts: [\"*.a.example\"]\n"
	"    ports: [443]\n"
	"  - name: b-again\n"
	"    hosts: [\"b.example\", \"c.example\"]\n"
	"    ports: [8080]\n"
	"  - name: many-1\n"
	"    hosts: [\"m.example\"]\n"
	"    ports: [1]\n"
	"  - name: many-2\n"
	"    hosts: [\"m.example\"]\n"
	"    ports: [2]\n"
	"  - name: many-3\n"
	"    hosts: [\"m.example\"]\n"
	"    ports: [3]\n"
	"  - name: many-4\n"
	"    hosts: [\"m.example\"]\n"
	"    ports: [4]\n"
	"  - name: many-5\n"
	"    hosts: [\"m.example\"]\n"
	"    ports: [5]\n";

static struct policy *p;

static bool ids_are(const struct sl_learned *e, const __u16 want[SL_LEARNED_RULES], char *why)
{
	for (int i = 0; i < SL_LEARNED_RULES; i++)
		EXPECT(e->rule_ids[i] == want[i],
		       "expected rule_ids {%u,%u,%u,%u}, got {%u,%u,%u,%u}", want[0], want[1],
		       want[2], want[3], e->rule_ids[0], e->rule_ids[1], e->rule_ids[2],
		       e->rule_ids[3]);
	return true;
}

/* b.example, learned under the old rule 2: the new policy's rules 2 and 4 list it. */
static bool t_renumbered(char *why)
{
	struct sl_learned e = { .host_id = 7, .expires_ns = 99 };
	const __u16 want[SL_LEARNED_RULES] = { 2, 4 };
	int n = switch_add_rules(&e, p, "b.example");

	EXPECT(n == 2, "expected 2 rules added, got %d", n);
	EXPECT(e.host_id == 7 && e.expires_ns == 99, "host_id and expiry must stay");
	return ids_are(&e, want, why);
}

/* A second name of the same address adds its rules after, without repeating rule 4. */
static bool t_sibling_merged(char *why)
{
	struct sl_learned e = {};
	const __u16 want[SL_LEARNED_RULES] = { 2, 4, 3 };

	switch_add_rules(&e, p, "b.example");
	EXPECT(switch_add_rules(&e, p, "c.example") == 0, "c.example's rule 4 is there already");
	EXPECT(switch_add_rules(&e, p, "x.a.example") == 1, "x.a.example adds rule 3");
	return ids_are(&e, want, why);
}

/* A name the new policy does not list gets no rule: enforce drops it, report keeps it. */
static bool t_unlisted(char *why)
{
	struct sl_learned e = {};

	EXPECT(switch_add_rules(&e, p, "a.example") == 0,
	       "a.example: *.a.example does not list it");
	EXPECT(switch_no_rule(&e), "expected no rule");
	EXPECT(!switch_name_kept(p, SL_MODE_ENFORCE, "a.example"), "enforce keeps no unlisted name");
	EXPECT(switch_name_kept(p, SL_MODE_REPORT, "a.example"), "report keeps every name");
	return true;
}

/* Five rules list m.example: the first four fill the entry, as the resolver learns them. */
static bool t_full(char *why)
{
	struct sl_learned e = {};
	const __u16 want[SL_LEARNED_RULES] = { 5, 6, 7, 8 };
	int n = switch_add_rules(&e, p, "m.example");

	EXPECT(n == 4, "expected 4 added, got %d", n);
	EXPECT(!switch_no_rule(&e), "expected rules");
	return ids_are(&e, want, why);
}

int main(void)
{
	static const struct {
		const char *name;
		bool (*fn)(char *why);
	} tests[] = {
		{ "a name's rules are renumbered to the new policy's that list it", t_renumbered },
		{ "a sibling name adds its rules, none twice", t_sibling_merged },
		{ "a name the new policy does not list keeps no rule (enforce drops it)", t_unlisted },
		{ "an entry keeps at most SL_LEARNED_RULES rules, the first ones", t_full },
	};
	char why[WHY_LEN], err[256];

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	if (policy_load_buffer(new_yaml, strlen(new_yaml), "new.yaml", &p, err, sizeof(err))) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
		why[0] = '\0';
		report(tests[i].fn(why), tests[i].name, why);
	}
	policy_free(p);
	return tap_status();
}
