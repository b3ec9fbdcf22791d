// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of preexisting_verdict (userspace/preexisting.c): a connection made before the
 * attach judged as the decision layer judges a connect() — the blackhole in every form, embedded
 * IPv4 addresses, relays, CIDR rules with ports and protocols, learned addresses, the default,
 * host rules (preexisting_unnamed) and what report mode enforces; and how a switch that cannot
 * read a flow's state in the kernel fails closed (preexisting_unreadable). Needs no root.
 * Prints TAP 13.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "policy/policy.h"
#include "userspace/hostnames.h"
#include "userspace/loader.h"
#include "userspace/preexisting.h"
#include "tap.h"

/* What preexisting.c calls beyond the verdict: not reached by this test. */
void records_preexisting(struct records *r, const struct records_preexisting *p)
{
	(void)r;
	(void)p;
}

int loader_kill_socket(struct loader *l, uint64_t cookie, int netns_fd, uint32_t pid)
{
	(void)l;
	(void)cookie;
	(void)netns_fd;
	(void)pid;
	return -EOPNOTSUPP;
}

uint16_t loader_dns_port(const struct loader *l)
{
	(void)l;
	return 0;
}

int loader_learned(const struct loader *l, int family, const uint8_t *addr,
		   struct sl_learned *out)
{
	(void)l;
	(void)family;
	(void)addr;
	(void)out;
	return -ENOENT;
}

int loader_rule_budget(const struct loader *l, uint16_t rule_id, uint16_t *id, char *err,
		       size_t err_len)
{
	(void)l;
	(void)err;
	(void)err_len;
	*id = rule_id;
	return 0;
}

bool loader_host_spent(const struct loader *l, uint16_t rule_id, const struct sl_host_key *k)
{
	(void)l;
	(void)rule_id;
	(void)k;
	return false;
}

const char *hostnames_name(struct hostnames *h, uint32_t host_id, char *buf, size_t len)
{
	(void)h;
	(void)host_id;
	(void)buf;
	(void)len;
	return NULL;
}

uint32_t loader_era(const struct loader *l)
{
	(void)l;
	return 1;
}

int loader_sni_get(const struct loader *l, int family, const uint8_t *addr, const char *name,
		   struct sl_sni_name *out)
{
	(void)l;
	(void)family;
	(void)addr;
	(void)name;
	(void)out;
	return -ENOENT;
}

int loader_rule_caps(const struct loader *l, uint16_t rule_id, struct sl_rule_caps *out)
{
	(void)l;
	(void)rule_id;
	(void)out;
	return -ENOENT;
}

int loader_sock_state(const struct loader *l, int sock_fd, struct sl_flow *flow,
		      struct sl_sk_tls *tls)
{
	(void)l;
	(void)sock_fd;
	(void)flow;
	(void)tls;
	return 0;
}

int loader_sock_tls_deny(const struct loader *l, int sock_fd)
{
	(void)l;
	(void)sock_fd;
	return -ENOENT;
}

int loader_sock_tls_set(const struct loader *l, int sock_fd, const struct sl_sk_tls *t)
{
	(void)l;
	(void)sock_fd;
	(void)t;
	return -ENOENT;
}

int loader_sock_flow_set(const struct loader *l, int sock_fd, const struct sl_flow *flow)
{
	(void)l;
	(void)sock_fd;
	(void)flow;
	return -ENOENT;
}

static const char deny_yaml[] = "default: deny\n"
				"rules:\n"
				"  - name: web\n"
				"    cidrs: [198.51.100.10/32, \"2001:db8::10/128\"]\n"
				"    ports: [80]\n"
				"  - name: dns\n"
				"    cidrs: [198.51.100.53/32]\n"
				"    protocols: [udp]\n"
				"  - name: names\n"
				"    hosts: [pypi.org]\n"
				"    ports: [443]\n";
static const char allow_yaml[] = "default: allow\nrules: []\n";

struct vcase {
	const char *name;
	bool allow_policy;
	enum sl_mode mode;
	int proto; /* IPPROTO_TCP, IPPROTO_UDP */
	const char *dst;
	uint16_t port;
	uint16_t learned_rule; /* 1-based; 0: nothing learned */
	uint8_t verdict, reason;
	long rule;
	bool enforced;
	const char *v4; /* dst_v4, or NULL */
};

#define A SL_VERDICT_ALLOW
#define D SL_VERDICT_DENY
#define E SL_MODE_ENFORCE
#define R SL_MODE_REPORT
#define TCP IPPROTO_TCP
#define UDP IPPROTO_UDP

static const struct vcase cases[] = {
	{ "cidr rule, its port", 0, E, TCP, "198.51.100.10", 80, 0, A, SL_REASON_RULE, 0, 0, NULL },
	{ "cidr rule, another port", 0, E, TCP, "198.51.100.10", 8080, 0, D,
	  SL_REASON_DEFAULT_DENY, -1, 1, NULL },
	{ "cidr rule, v6", 0, E, TCP, "2001:db8::10", 80, 0, A, SL_REASON_RULE, 0, 0, NULL },
	{ "udp-only rule, udp", 0, E, UDP, "198.51.100.53", 53, 0, A, SL_REASON_RULE, 1, 0, NULL },
	{ "udp-only rule, tcp", 0, E, TCP, "198.51.100.53", 53, 0, D, SL_REASON_DEFAULT_DENY, -1,
	  1, NULL },
	{ "v4-mapped judged as IPv4", 0, E, TCP, "::ffff:198.51.100.10", 80, 0, A, SL_REASON_RULE,
	  0, 0, "198.51.100.10" },
	{ "NAT64 judged as IPv4", 0, E, TCP, "64:ff9b::c633:640a", 80, 0, A, SL_REASON_RULE, 0, 0,
	  "198.51.100.10" },
	{ "a host rule's port: unnamed", 0, E, TCP, "203.0.113.7", 443, 0, D,
	  SL_REASON_PREEXISTING_UNNAMED, -1, 1, NULL },
	{ "a host rule's port over udp: default", 0, E, UDP, "203.0.113.7", 443, 0, D,
	  SL_REASON_DEFAULT_DENY, -1, 1, NULL },
	{ "learned for the host rule", 0, E, TCP, "203.0.113.7", 443, 3, A, SL_REASON_RULE, 2, 0,
	  NULL },
	{ "learned, another port", 0, E, TCP, "203.0.113.7", 80, 3, D, SL_REASON_DEFAULT_DENY, -1,
	  1, NULL },
	{ "report: would deny", 0, R, TCP, "203.0.113.7", 80, 0, D, SL_REASON_DEFAULT_DENY, -1, 0,
	  NULL },
	{ "blackhole v4", 1, E, TCP, "169.254.169.254", 80, 0, D, SL_REASON_BLACKHOLE, -1, 1,
	  NULL },
	{ "blackhole in report mode is enforced", 0, R, UDP, "169.254.169.254", 53, 0, D,
	  SL_REASON_BLACKHOLE, -1, 1, NULL },
	{ "blackhole v4-mapped", 1, E, TCP, "::ffff:169.254.169.254", 80, 0, D,
	  SL_REASON_BLACKHOLE, -1, 1, "169.254.169.254" },
	{ "blackhole NAT64", 1, E, TCP, "64:ff9b::a9fe:a9fe", 80, 0, D, SL_REASON_BLACKHOLE, -1, 1,
	  "169.254.169.254" },
	{ "blackhole 6to4", 1, E, TCP, "2002:a9fe:a9fe::1", 80, 0, D, SL_REASON_BLACKHOLE, -1, 1,
	  "169.254.169.254" },
	{ "blackhole fe80::", 1, E, TCP, "fe80::1", 80, 0, D, SL_REASON_BLACKHOLE, -1, 1, NULL },
	{ "blackhole fd00:ec2::254", 1, E, TCP, "fd00:ec2::254", 80, 0, D, SL_REASON_BLACKHOLE, -1,
	  1, NULL },
	{ "6to4 relay under default deny", 0, E, TCP, "2002:c633:640a::1", 80, 0, D,
	  SL_REASON_V4_RELAY, -1, 1, NULL },
	{ "6to4 relay under default allow", 1, E, TCP, "2002:c633:640a::1", 80, 0, A,
	  SL_REASON_DEFAULT_ALLOW, -1, 0, NULL },
	{ "default allow", 1, E, UDP, "203.0.113.7", 9999, 0, A, SL_REASON_DEFAULT_ALLOW, -1, 0,
	  NULL },
};

static bool run_case(const struct policy *p, const struct vcase *c, char *why)
{
	struct records_preexisting s = { .protocol = (uint8_t)c->proto, .dport = c->port };
	struct sl_learned l = { .rule_ids = { c->learned_rule } };
	char v4[INET_ADDRSTRLEN] = "";

	s.family = strchr(c->dst, ':') ? AF_INET6 : AF_INET;
	EXPECT(inet_pton(s.family, c->dst, s.dst) == 1, "expected an address, got %s", c->dst);
	preexisting_verdict(p, c->mode, c->learned_rule ? &l : NULL, &s);
	if (s.has_v4)
		inet_ntop(AF_INET, s.v4, v4, sizeof(v4));
	EXPECT(s.verdict == c->verdict && s.reason == c->reason && s.rule == c->rule &&
		       s.enforced == c->enforced && !strcmp(v4, c->v4 ? c->v4 : ""),
	       "expected verdict %u reason %u rule %ld enforced %d v4 \"%s\", got %u %u %ld %d "
	       "\"%s\"",
	       c->verdict, c->reason, c->rule, c->enforced, c->v4 ? c->v4 : "", s.verdict, s.reason,
	       s.rule, s.enforced, v4);
	return true;
}

/*
 * A switch that cannot read a flow's state in the kernel (preexisting_unreadable): it fails
 * closed for what the new policy allows only with kernel state (the server-name check, caps).
 */
struct ucase {
	const char *name;
	enum sl_mode mode;
	int proto;
	bool by_name, capped;
	uint8_t verdict_in, reason_in;
	uint8_t verdict, reason;
	bool enforced;
};

static const struct ucase ucases[] = {
	{ "tcp through a name alone", E, TCP, 1, 0, A, SL_REASON_RULE, D,
	  SL_REASON_FLOW_UNREADABLE, 1 },
	{ "tcp through a name alone, report mode", R, TCP, 1, 0, A, SL_REASON_RULE, D,
	  SL_REASON_FLOW_UNREADABLE, 0 },
	{ "udp through a name, no caps", E, UDP, 1, 0, A, SL_REASON_RULE, A, SL_REASON_RULE, 0 },
	{ "an address rule without caps", E, TCP, 0, 0, A, SL_REASON_RULE, A, SL_REASON_RULE, 0 },
	{ "an address rule with caps", E, UDP, 0, 1, A, SL_REASON_RULE, D,
	  SL_REASON_FLOW_UNREADABLE, 1 },
	{ "the default", E, TCP, 0, 0, A, SL_REASON_DEFAULT_ALLOW, A, SL_REASON_DEFAULT_ALLOW, 0 },
	{ "a denial stays one", E, TCP, 1, 1, D, SL_REASON_DEFAULT_DENY, D,
	  SL_REASON_DEFAULT_DENY, 1 },
};

static bool run_ucase(const struct ucase *c, char *why)
{
	struct records_preexisting s = { .protocol = (uint8_t)c->proto, .by_name = c->by_name,
					 .verdict = c->verdict_in, .reason = c->reason_in,
					 .rule = 2, .enforced = c->verdict_in == D };
	struct sl_rule_caps caps = { .max_req = 1001 };

	preexisting_unreadable(c->mode, c->capped ? &caps : NULL, &s);
	EXPECT(s.verdict == c->verdict && s.reason == c->reason && s.enforced == c->enforced &&
		       s.rule == 2,
	       "expected verdict %u reason %u enforced %d rule 2, got %u %u %d %ld", c->verdict,
	       c->reason, c->enforced, s.verdict, s.reason, s.enforced, s.rule);
	return true;
}

int main(void)
{
	struct policy *deny = NULL, *allow = NULL;
	char err[512];
	size_t i;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(cases) + ARRAY_SIZE(ucases));
	if (policy_load_buffer(deny_yaml, sizeof(deny_yaml) - 1, "deny.yaml", &deny, err,
			       sizeof(err)) ||
	    policy_load_buffer(allow_yaml, sizeof(allow_yaml) - 1, "allow.yaml", &allow, err,
			       sizeof(err))) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char why[WHY_LEN] = "";
		char name[256];

		snprintf(name, sizeof(name), "%s: %s port %u", cases[i].name, cases[i].dst,
			 cases[i].port);
		report(run_case(cases[i].allow_policy ? allow : deny, &cases[i], why), name, why);
	}
	for (i = 0; i < ARRAY_SIZE(ucases); i++) {
		char why[WHY_LEN] = "";
		char name[256];

		snprintf(name, sizeof(name), "state unreadable at a switch: %s", ucases[i].name);
		report(run_ucase(&ucases[i], why), name, why);
	}
	policy_free(deny);
	policy_free(allow);
	return tap_status();
}
