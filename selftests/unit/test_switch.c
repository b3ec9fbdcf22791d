// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/switch_rules.c: how a live switch (sluice replace-policy) carries a
 * learned address over to the new policy. Its rule ids become those of the new policy's rules
 * that list its names (as many as an entry holds, none repeated), a name the new policy does not
 * list keeps nothing in enforce mode, and report mode keeps every name.
 * And which old rule's host budgets (max_total_*) each new rule takes over: a named rule its
 * namesake's; an unnamed rule an unnamed one's that allows the same destinations (order,
 * repeats, merged ports and IPv4-embedding CIDRs aside; caps do not count), the k-th of equal
 * ones the k-th; never one by its place (an unnamed rule inserted ahead takes nothing), and
 * nothing when none matches.
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
	int n = switch_add_rules(e.rule_ids, p, "b.example");

	EXPECT(n == 2, "expected 2 rules added, got %d", n);
	EXPECT(e.host_id == 7 && e.expires_ns == 99, "host_id and expiry must stay");
	return ids_are(&e, want, why);
}

/* A second name of the same address adds its rules after, without repeating rule 4. */
static bool t_sibling_merged(char *why)
{
	struct sl_learned e = {};
	const __u16 want[SL_LEARNED_RULES] = { 2, 4, 3 };

	switch_add_rules(e.rule_ids, p, "b.example");
	EXPECT(switch_add_rules(e.rule_ids, p, "c.example") == 0,
	       "c.example's rule 4 is there already");
	EXPECT(switch_add_rules(e.rule_ids, p, "x.a.example") == 1, "x.a.example adds rule 3");
	return ids_are(&e, want, why);
}

/* A name the new policy does not list gets no rule: enforce drops it, report keeps it. */
static bool t_unlisted(char *why)
{
	struct sl_learned e = {};

	EXPECT(switch_add_rules(e.rule_ids, p, "a.example") == 0,
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
	int n = switch_add_rules(e.rule_ids, p, "m.example");

	EXPECT(n == 4, "expected 4 added, got %d", n);
	EXPECT(!switch_no_rule(&e), "expected rules");
	return ids_are(&e, want, why);
}

/*
 * switch_budget_matches from the rules of old_rules to those of new_rules (YAML sequences under
 * "rules:") is want (one per new rule: the old rule's index, -1 for a fresh budget).
 */
static bool budgets_are(const char *old_rules, const char *new_rules, const long *want, size_t n,
			char *why)
{
	struct policy *o = NULL, *np = NULL;
	char yaml[4096], err[256], got_s[256] = "", want_s[256] = "";
	long got[16];
	bool ok = false;
	size_t i;

	snprintf(yaml, sizeof(yaml), "default: deny\nrules:\n%s", old_rules);
	if (policy_load_buffer(yaml, strlen(yaml), "old.yaml", &o, err, sizeof(err))) {
		snprintf(why, WHY_LEN, "%s", err);
		return false;
	}
	snprintf(yaml, sizeof(yaml), "default: deny\nrules:\n%s", new_rules);
	if (policy_load_buffer(yaml, strlen(yaml), "new.yaml", &np, err, sizeof(err))) {
		snprintf(why, WHY_LEN, "%s", err);
		goto out;
	}
	if (np->n_rules != n || n > ARRAY_SIZE(got)) {
		snprintf(why, WHY_LEN, "expected %zu new rules, parsed %zu", n, np->n_rules);
		goto out;
	}
	if (switch_budget_matches(o, np, got)) {
		snprintf(why, WHY_LEN, "switch_budget_matches failed");
		goto out;
	}
	ok = !memcmp(got, want, n * sizeof(*got));
	for (i = 0; i < n; i++) {
		snprintf(got_s + strlen(got_s), sizeof(got_s) - strlen(got_s), " %ld", got[i]);
		snprintf(want_s + strlen(want_s), sizeof(want_s) - strlen(want_s), " %ld", want[i]);
	}
	if (!ok)
		snprintf(why, WHY_LEN, "expected old rules {%s }, got {%s }", want_s, got_s);
out:
	policy_free(np);
	policy_free(o);
	return ok;
}

#define CAPPED_10                                                                                  \
	"  - cidrs: [\"198.51.100.10/32\"]\n    ports: [8080]\n"                                     \
	"    max_total_request_bytes: 1000\n"
#define CAPPED_20                                                                                  \
	"  - cidrs: [\"198.51.100.20/32\"]\n    ports: [8080]\n"                                     \
	"    max_total_request_bytes: 1000\n"

/* The attack: an unnamed rule inserted ahead would take the spent budget's id by its place. */
static bool t_budget_inserted(char *why)
{
	static const long want[] = { -1, 0 };

	return budgets_are(CAPPED_10, CAPPED_20 CAPPED_10, want, ARRAY_SIZE(want), why);
}

static bool t_budget_same_rule(char *why)
{
	static const long want[] = { 0, 1 };

	return budgets_are("  - hosts: [\"a.example\", \"b.example\"]\n"
			   "    ports: [80, 81, 443]\n"
			   "    max_total_request_bytes: 1000\n"
			   "  - cidrs: [\"10.0.0.0/8\"]\n",
			   "  - hosts: [\"B.example\", \"a.example\", \"b.example\"]\n"
			   "    ports: [443, 80-81]\n"
			   "    max_total_request_bytes: 5000\n"
			   "    max_request_bytes: 10\n"
			   "  - cidrs: [\"::ffff:10.0.0.0/104\", \"10.0.0.0/8\"]\n",
			   want, ARRAY_SIZE(want), why);
}

static bool t_budget_other_rule(char *why)
{
	static const long want[] = { -1, -1, -1, -1 };

	return budgets_are("  - hosts: [\"a.example\"]\n    ports: [443]\n"
			   "  - cidrs: [\"10.0.0.0/8\"]\n    ports: [80]\n"
			   "    protocols: [tcp]\n"
			   "  - cidrs: [\"10.1.0.0/16\"]\n",
			   "  - hosts: [\"a.example\"]\n    ports: [443, 8443]\n"
			   "  - cidrs: [\"10.0.0.0/8\"]\n    ports: [80]\n"
			   "    protocols: [tcp, udp]\n"
			   "  - cidrs: [\"10.1.0.0/17\"]\n"
			   "  - hosts: [\"a.example\", \"c.example\"]\n    ports: [443]\n",
			   want, ARRAY_SIZE(want), why);
}

/* Three of one rule (and another), then two of it: they keep theirs in order, the last is gone. */
static bool t_budget_duplicates(char *why)
{
	static const long want3[] = { 1, 0, 2, 3 }, want2[] = { 0, 2 };

	if (!budgets_are(CAPPED_10 CAPPED_20 CAPPED_10 CAPPED_10,
			 CAPPED_20 CAPPED_10 CAPPED_10 CAPPED_10, want3, ARRAY_SIZE(want3), why))
		return false;
	return budgets_are(CAPPED_10 CAPPED_20 CAPPED_10 CAPPED_10, CAPPED_10 CAPPED_10, want2,
			   ARRAY_SIZE(want2), why);
}

static bool t_budget_named(char *why)
{
	static const long want[] = { 1, -1, -1 };

	return budgets_are("  - name: api\n    cidrs: [\"198.51.100.10/32\"]\n"
			   "  - name: web\n    cidrs: [\"198.51.100.20/32\"]\n"
			   "  - cidrs: [\"198.51.100.30/32\"]\n",
			   "  - name: web\n    cidrs: [\"203.0.113.0/24\"]\n"
			   "  - cidrs: [\"198.51.100.10/32\"]\n"
			   "  - name: other\n    cidrs: [\"198.51.100.30/32\"]\n",
			   want, ARRAY_SIZE(want), why);
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
		{ "budgets: an unnamed rule inserted ahead takes none; the rule behind keeps its own",
		  t_budget_inserted },
		{ "budgets: an unnamed rule is the same rule whatever the order, repeats or caps",
		  t_budget_same_rule },
		{ "budgets: other ports, protocols or destinations are another rule (fresh)",
		  t_budget_other_rule },
		{ "budgets: identical unnamed rules pair off in order, the k-th with the k-th",
		  t_budget_duplicates },
		{ "budgets: a named rule by its name alone; a name added or dropped is fresh",
		  t_budget_named },
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
