// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/policy_diff.c: two policies compared, each difference a reviewer must
 * see said in its own line (default, mode, hosts and CIDRs added and removed, ports, protocols,
 * caps, settings), and nothing said when only the order or the rule a host sits in changed
 * without changing what it gets.
 *
 * Usage: test_policy_diff        TAP 13; exits 1 if any test failed. Needs no root.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "userspace/policy_tools.h"
#include "tap.h"

static struct policy *load(const char *text)
{
	struct policy *p = NULL;
	char err[512];

	if (policy_load_buffer(text, strlen(text), "t.yaml", &p, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	return p;
}

/* The diff of a and b as text, and its count. */
static size_t diff(const char *a, const char *b, char **text)
{
	struct policy *pa = load(a), *pb = load(b);
	size_t len, n;
	FILE *f = open_memstream(text, &len);

	if (!f)
		exit(2);
	n = policy_diff_write(pa, pb, f);
	fclose(f);
	policy_free(pa);
	policy_free(pb);
	return n;
}

static const char old_p[] = "default: deny\n"
			    "rules:\n"
			    "  - name: pkgs\n"
			    "    hosts: [\"pkgs.example\", \"old.example\"]\n"
			    "    ports: [80]\n"
			    "  - name: api\n"
			    "    hosts: [\"api.example\"]\n"
			    "    ports: [443]\n"
			    "    max_response_bytes: 5000\n"
			    "  - cidrs: [\"10.0.0.0/8\"]\n"
			    "    ports: [22]\n";

static bool check_changes(char *why)
{
	static const char new_p[] = "default: allow\n"
				    "mode: report\n"
				    "alert_on: [deny]\n"
				    "rules:\n"
				    "  - name: api\n"
				    "    hosts: [\"api.example\"]\n"
				    "    ports: [443, 8443]\n"
				    "    max_response_bytes: 1000\n"
				    "    max_request_bytes: 10\n"
				    "  - name: pkgs\n"
				    "    hosts: [\"pkgs.example\", \"*.cdn.example\"]\n"
				    "    ports: [80]\n"
				    "  - cidrs: [\"203.0.113.0/24\"]\n"
				    "    protocols: [udp]\n";
	static const char *const want[] = {
		"~ default: deny -> allow (connections no rule covers are now ALLOWED)\n",
		"~ mode: enforce -> report (denials are only logged from now on, NOT enforced)\n",
		"~ host api.example: 443/tcp -> 443, 8443/tcp\n",
		"~ host api.example: max_request_bytes none -> 10 (tighter)\n",
		"~ host api.example: max_response_bytes 5000 -> 1000 (tighter)\n",
		"+ host *.cdn.example: now allowed on 80/tcp (rule \"pkgs\"): a wildcard, every "
		"name "
		"below it\n",
		"- host old.example: no longer allowed (was 80/tcp, rule \"pkgs\")\n",
		"+ cidr 203.0.113.0/24: now allowed on any port/udp (rule 3)\n",
		"- cidr 10.0.0.0/8: no longer allowed (was 22/tcp, udp, rule 3)\n",
		"+ alert_on \"deny\"\n",
	};
	char *text = NULL;
	size_t n = diff(old_p, new_p, &text), i;

	for (i = 0; i < ARRAY_SIZE(want); i++)
		EXPECT(strstr(text, want[i]), "the line\n%sin\n%s", want[i], text);
	EXPECT(n == ARRAY_SIZE(want), "%zu differences, got %zu:\n%s", ARRAY_SIZE(want), n, text);
	/* pkgs.example kept what it had: not a difference */
	EXPECT(!strstr(text, "host pkgs.example"), "pkgs.example unchanged, got\n%s", text);
	free(text);
	return true;
}

static bool check_same(char *why)
{
	/* the same rules, reordered and renamed: every host and CIDR gets what it got */
	static const char moved[] = "default: deny\n"
				    "rules:\n"
				    "  - cidrs: [\"10.0.0.0/8\"]\n"
				    "    ports: [22]\n"
				    "  - name: api-renamed\n"
				    "    hosts: [\"api.example\"]\n"
				    "    ports: [443]\n"
				    "    max_response_bytes: 5000\n"
				    "  - hosts: [\"old.example\", \"pkgs.example\"]\n"
				    "    ports: [80]\n";
	char *text = NULL;
	size_t n = diff(old_p, moved, &text);

	EXPECT(n == 0 && !text[0], "no difference, got %zu:\n%s", n, text);
	free(text);
	return true;
}

static bool check_shadowed(char *why)
{
	/*
	 * A host listed in two rules gets the first one's ports (the resolver tags its addresses
	 * with the first rule listing it): putting a narrower rule first is a change.
	 */
	static const char a[] = "rules:\n"
				"  - hosts: [\"x.example\"]\n"
				"    ports: [443]\n";
	static const char b[] = "rules:\n"
				"  - name: narrow\n"
				"    hosts: [\"x.example\"]\n"
				"    ports: [80]\n"
				"  - hosts: [\"x.example\"]\n"
				"    ports: [443]\n";
	char *text = NULL;
	size_t n = diff(a, b, &text);

	EXPECT(n == 1 && strstr(text, "~ host x.example: 443/tcp -> 80/tcp\n"),
	       "the first rule counts, got %zu:\n%s", n, text);
	free(text);
	return true;
}

/*
 * Replay judges a v6 destination as the programs do (bpf/policy.bpf.h): the forms that embed an
 * IPv4 address by the IPv4 host's rules, and an IPv4 host behind a relay denied unless the
 * default is allow. Judged by family alone, "cidrs: [10.0.0.0/8]" seemed to deny
 * ::ffff:10.1.2.3, which the run allows, and a v6 rule seemed to allow a 6to4 address.
 */
static bool check_replay_v6(char *why)
{
	struct policy *p = load("default: deny\n"
				"rules:\n"
				"  - cidrs: [\"10.0.0.0/8\"]\n"
				"    ports: [443]\n"
				"  - cidrs: [\"2002::/16\", \"2001:db8::/32\"]\n"
				"    ports: [443]\n");
	struct policy *a = load("default: allow\n"
				"rules: []\n");

	EXPECT(replay_allows(p, NULL, "10.1.2.3", 443, "tcp"), "v4 allowed");
	EXPECT(replay_allows(p, NULL, "::ffff:10.1.2.3", 443, "tcp"), "v4-mapped allowed");
	EXPECT(replay_allows(p, NULL, "64:ff9b::a01:203", 443, "tcp"), "NAT64 allowed");
	EXPECT(replay_allows(p, NULL, "::10.1.2.3", 443, "tcp"), "v4-compatible allowed");
	EXPECT(!replay_allows(p, NULL, "::ffff:10.1.2.3", 80, "tcp"), "v4-mapped, other port");
	EXPECT(!replay_allows(p, NULL, "::ffff:11.1.2.3", 443, "tcp"), "v4-mapped, outside");
	EXPECT(replay_allows(p, NULL, "2001:db8::1", 443, "tcp"), "native v6 allowed");
	EXPECT(!replay_allows(p, NULL, "2002:a01:203::1", 443, "tcp"),
	       "6to4 denied though a v6 rule covers it");
	EXPECT(replay_allows(a, NULL, "2002:a01:203::1", 443, "tcp"), "6to4 under default allow");
	policy_free(p);
	policy_free(a);
	return true;
}

/* Policies as large as a careless generator writes them: the diff is right, and not quadratic. */
static char *big_policy(unsigned int n_cidrs, unsigned int n_ports, unsigned int skip_port)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	unsigned int i;

	if (!f)
		exit(2);
	fprintf(f, "default: deny\nrules:\n  - name: many\n    cidrs: [");
	for (i = 0; i < n_cidrs; i++)
		fprintf(f, "%s\"10.%u.%u.%u/32\"", i ? ", " : "", i >> 16, (i >> 8) & 0xff, i & 0xff);
	fprintf(f, "]\n    ports: [");
	for (i = 1; i <= n_ports; i++)
		if (i != skip_port)
			fprintf(f, "%s%u", i > 1 ? ", " : "", i);
	fprintf(f, "]\n");
	fclose(f);
	return text;
}

static bool check_big(char *why)
{
	char *a = big_policy(99000, 1000, 0), *b = big_policy(98999, 1000, 900), *text = NULL;
	size_t n = diff(a, b, &text);

	/*
	 * one CIDR removed; port 900 gone from the list (every CIDR's) whose line is cut long
	 * before it: a line each
	 */
	EXPECT(n == 99000 && strstr(text, "- cidr 10.1.130.183/32: no longer allowed") &&
		       strstr(text, "~ cidr 10.1.130.182/32: its ports changed past what fits on a "
				    "line (1000 -> 999"),
	       "99,000 differences, got %zu:\n%.2000s", n, text);
	free(a);
	free(b);
	free(text);
	return true;
}

int main(void)
{
	char why[WHY_LEN];

	printf("TAP version 13\n1..5\n");
	report(check_changes(why), "diff: every kind of change said, in its own line", why);
	report(check_same(why), "diff: reordered and renamed rules are no difference", why);
	report(check_shadowed(why), "diff: a host judged by the first rule listing it", why);
	report(check_replay_v6(why), "replay: v6 forms judged as the programs judge them", why);
	report(check_big(why),
	       "diff: 99,000 CIDRs and 1,000 ports, one of each removed: both said (sorted, not "
	       "searched)",
	       why);
	return tap_status();
}
