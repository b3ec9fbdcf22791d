// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of policy/policy.c: the strict YAML parser, the LPM compiler and the summary.
 * Needs no root. Usage: test_policy REPO_ROOT (the example policies are read from
 * REPO_ROOT/policy/examples). Prints TAP 13; exits 1 if any test failed, 0 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/policy.h"
#include "tap.h"

#define ERR_LEN 1024

static const char *root;
static bool example_path(const char *file, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/policy/examples/%s", root, file);

	return n > 0 && (size_t)n < len;
}

static bool cidr_is(const struct policy_cidr *c, const char *want)
{
	char buf[INET6_ADDRSTRLEN + 4];

	return !policy_cidr_format(c, buf, sizeof(buf)) && !strcmp(buf, want);
}

static const char *cidr_str(const struct policy_cidr *c, char *buf, size_t len)
{
	if (policy_cidr_format(c, buf, len))
		snprintf(buf, len, "(unformattable)");
	return buf;
}

/* Accepted inputs: each loads, and check() looks at the parsed fields. */

static bool check_seed(const struct policy *p, char *why)
{
	static const unsigned int lines[] = {4, 7, 9, 10, 12};
	const struct policy_rule *r;

	EXPECT(p->default_verdict == POLICY_DEFAULT_DENY, "expected default deny, got %d",
	       p->default_verdict);
	EXPECT(p->mode == SL_MODE_ENFORCE, "expected mode enforce, got %d", p->mode);
	EXPECT(p->deny_errno == EPERM, "expected deny_errno EPERM, got %d", p->deny_errno);
	EXPECT(p->n_rules == 5, "expected 5 rules, got %zu", p->n_rules);
	for (size_t i = 0; i < 5; i++) {
		EXPECT(p->rules[i].line == lines[i], "expected rule %zu at line %u, got %u", i + 1,
		       lines[i], p->rules[i].line);
		EXPECT(!p->rules[i].n_cidrs && !p->rules[i].name,
		       "expected rule %zu without cidrs and name, got %zu cidrs", i + 1,
		       p->rules[i].n_cidrs);
		EXPECT(p->rules[i].protocols == SL_PROTO_TCP,
		       "expected rule %zu protocols tcp (hosts, none given), got %#x", i + 1,
		       p->rules[i].protocols);
	}
	r = &p->rules[0];
	EXPECT(r->n_hosts == 3 && !strcmp(r->hosts[0], "registry.npmjs.org") &&
		       !strcmp(r->hosts[2], "files.pythonhosted.org"),
	       "expected 3 hosts starting registry.npmjs.org, got %zu", r->n_hosts);
	EXPECT(r->n_methods == 2 && !strcmp(r->methods[0], "GET") && !strcmp(r->methods[1], "HEAD"),
	       "expected methods GET, HEAD, got %zu methods", r->n_methods);
	EXPECT(r->has_max_response_bytes && r->max_response_bytes == 500000000ull,
	       "expected max_response_bytes 500000000, got %llu",
	       (unsigned long long)r->max_response_bytes);
	EXPECT(!r->has_max_request_bytes, "expected no max_request_bytes in rule 1, got one");
	EXPECT(!p->rules[2].n_methods, "expected rule 3 without methods, got %zu",
	       p->rules[2].n_methods);
	r = &p->rules[4];
	EXPECT(r->has_max_request_bytes && r->max_request_bytes == 65536,
	       "expected max_request_bytes 65536, got %llu",
	       (unsigned long long)r->max_request_bytes);
	EXPECT(p->log_allow && p->log_deny, "expected log allow and deny, got %d/%d", p->log_allow,
	       p->log_deny);
	EXPECT(p->n_alert_on == 2 && !strcmp(p->alert_on[0], "deny") &&
		       !strcmp(p->alert_on[1], "allow where request_bytes > 10_000_000"),
	       "expected the two alert_on strings verbatim, got %zu", p->n_alert_on);
	EXPECT(!p->request_access, "expected no request_access, got \"%s\"", p->request_access);
	return true;
}

static bool check_demo(const struct policy *p, char *why)
{
	const struct policy_rule *r = &p->rules[0];
	char a[64], b[64];

	EXPECT(p->n_rules == 2, "expected 2 rules, got %zu", p->n_rules);
	EXPECT(p->rules[1].n_hosts == 2 && !strcmp(p->rules[1].hosts[0], "registry.npmjs.org") &&
		       !strcmp(p->rules[1].hosts[1], "pypi.org") && !p->rules[1].n_cidrs,
	       "expected rule 2 to list registry.npmjs.org and pypi.org, got %zu hosts",
	       p->rules[1].n_hosts);
	EXPECT(r->name && !strcmp(r->name, "test-host"), "expected name test-host, got %s",
	       r->name ? r->name : "(none)");
	EXPECT(r->n_cidrs == 2 && cidr_is(&r->cidrs[0], "198.51.100.10/32") &&
		       cidr_is(&r->cidrs[1], "2001:db8::10/128"),
	       "expected 198.51.100.10/32 and 2001:db8::10/128, got %s and %s",
	       cidr_str(&r->cidrs[0], a, sizeof(a)), cidr_str(&r->cidrs[1], b, sizeof(b)));
	EXPECT(r->n_ports == 2 && r->ports[0].lo == 80 && r->ports[0].hi == 80 &&
		       r->ports[1].lo == 443 && r->ports[1].hi == 443,
	       "expected ports 80 and 443, got %zu ports", r->n_ports);
	EXPECT(r->protocols == SL_PROTO_TCP, "expected protocols tcp, got %#x", r->protocols);
	EXPECT(p->mode == SL_MODE_ENFORCE && p->default_verdict == POLICY_DEFAULT_DENY,
	       "expected enforce/deny, got %d/%d", p->mode, p->default_verdict);
	EXPECT(p->request_access && !strcmp(p->request_access,
					    "https://tooling.example/egress/request?host={host}"),
	       "expected the request_access template, got %s",
	       p->request_access ? p->request_access : "(none)");
	return true;
}

static bool check_integers(const struct policy *p, char *why)
{
	const struct policy_rule *r = &p->rules[0], *r2 = &p->rules[1];

	EXPECT(r->has_max_request_bytes && r->max_request_bytes == 1000,
	       "expected max_request_bytes 1000, got %llu",
	       (unsigned long long)r->max_request_bytes);
	EXPECT(r->has_max_response_bytes && r->max_response_bytes == 0,
	       "expected max_response_bytes 0, got %llu",
	       (unsigned long long)r->max_response_bytes);
	EXPECT(r2->max_request_bytes == UINT64_MAX, "expected UINT64_MAX, got %llu",
	       (unsigned long long)r2->max_request_bytes);
	EXPECT(r2->max_response_bytes == 12345678ull, "expected 12345678, got %llu",
	       (unsigned long long)r2->max_response_bytes);
	return true;
}

static bool check_totals(const struct policy *p, char *why)
{
	const struct policy_rule *r = &p->rules[0], *r2 = &p->rules[1];
	struct policy_compiled *c = NULL;
	char err[256];
	bool ok;

	EXPECT(r->has_max_total_request_bytes && r->max_total_request_bytes == 100000,
	       "expected max_total_request_bytes 100000, got %llu",
	       (unsigned long long)r->max_total_request_bytes);
	EXPECT(!r->has_max_total_response_bytes, "expected no max_total_response_bytes in rule 1");
	EXPECT(r2->has_max_total_response_bytes && r2->max_total_response_bytes == 0,
	       "expected max_total_response_bytes 0 in rule 2, got %llu",
	       (unsigned long long)r2->max_total_response_bytes);
	EXPECT(!policy_compile(p, &c, err, sizeof(err)), "compile failed: %s", err);
	/* stored plus one, so that 0 means "no cap" and a cap of 0 still counts */
	ok = c->rule_caps[1].max_total_req == 100001 && c->rule_caps[1].max_total_resp == 0 &&
	     c->rule_caps[2].max_total_req == 0 && c->rule_caps[2].max_total_resp == 1 &&
	     c->rule_caps[1].max_req == 0;
	snprintf(why, WHY_LEN, "compiled caps: rule 1 total %llu/%llu, rule 2 total %llu/%llu",
		 (unsigned long long)c->rule_caps[1].max_total_req,
		 (unsigned long long)c->rule_caps[1].max_total_resp,
		 (unsigned long long)c->rule_caps[2].max_total_req,
		 (unsigned long long)c->rule_caps[2].max_total_resp);
	policy_compiled_free(c);
	return ok;
}

static bool check_uring(const struct policy *p, char *why)
{
	EXPECT(p->sockets == SL_SOCKETS_IO_URING, "expected sockets io_uring, got %#x", p->sockets);
	EXPECT(p->require == POLICY_REQUIRE_LSM, "expected require lsm, got %#x", p->require);
	return true;
}

static bool check_icmp(const struct policy *p, char *why)
{
	EXPECT(p->sockets == (SL_SOCKETS_PING | SL_SOCKETS_RAW), "expected sockets ping|raw, got %#x",
	       p->sockets);
	EXPECT(p->rules[0].protocols == (SL_PROTO_ICMP | SL_PROTO_TCP),
	       "expected protocols icmp|tcp, got %#x", p->rules[0].protocols);
	EXPECT(p->rules[1].protocols == (SL_PROTO_TCP | SL_PROTO_UDP),
	       "expected the default tcp|udp (not icmp) without protocols:, got %#x",
	       p->rules[1].protocols);
	return true;
}

static bool check_ports(const struct policy *p, char *why)
{
	static const struct policy_port_range want[] = {
		{22, 22}, {8000, 8080}, {1, 1024}, {65535, 65535}, {443, 443}, {7, 7},
	};
	const struct policy_rule *r = &p->rules[0];

	EXPECT(r->n_ports == ARRAY_SIZE(want), "expected %zu ports, got %zu", ARRAY_SIZE(want),
	       r->n_ports);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		EXPECT(r->ports[i].lo == want[i].lo && r->ports[i].hi == want[i].hi,
		       "expected ports[%zu] = %u-%u, got %u-%u", i, want[i].lo, want[i].hi,
		       r->ports[i].lo, r->ports[i].hi);
	return true;
}

/* A rule with hosts gets tcp when it says nothing (QUIC's server name cannot be checked). */
static bool check_host_protocols(const struct policy *p, char *why)
{
	static const unsigned int want[] = {
		SL_PROTO_TCP, SL_PROTO_UDP, SL_PROTO_TCP | SL_PROTO_UDP, SL_PROTO_TCP,
		SL_PROTO_TCP | SL_PROTO_UDP,
	};

	EXPECT(p->n_rules == ARRAY_SIZE(want), "expected %zu rules, got %zu", ARRAY_SIZE(want),
	       p->n_rules);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		EXPECT(p->rules[i].protocols == want[i], "expected rule %zu protocols %#x, got %#x",
		       i + 1, want[i], p->rules[i].protocols);
	return true;
}

static bool check_protocols(const struct policy *p, char *why)
{
	EXPECT(p->n_rules == 3, "expected 3 rules, got %zu", p->n_rules);
	EXPECT(p->rules[0].protocols == SL_PROTO_UDP, "expected udp, got %#x",
	       p->rules[0].protocols);
	EXPECT(p->rules[1].protocols == (SL_PROTO_TCP | SL_PROTO_UDP),
	       "expected tcp|udp from [TCP, Udp], got %#x", p->rules[1].protocols);
	EXPECT(p->rules[2].protocols == (SL_PROTO_TCP | SL_PROTO_UDP),
	       "expected tcp|udp when absent, got %#x", p->rules[2].protocols);
	return true;
}

static bool check_hosts(const struct policy *p, char *why)
{
	static const char *const want[] = {
		"*.example.com", "pypi.org", "a-b.c0.io", "localhost", "x.y",
	};
	const struct policy_rule *r = &p->rules[0];

	EXPECT(r->n_hosts == ARRAY_SIZE(want), "expected %zu hosts, got %zu", ARRAY_SIZE(want),
	       r->n_hosts);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		EXPECT(!strcmp(r->hosts[i], want[i]), "expected hosts[%zu] = %s, got %s", i,
		       want[i], r->hosts[i]);
	EXPECT(r->n_methods == 3 && !strcmp(r->methods[0], "GET") &&
		       !strcmp(r->methods[1], "POST") && !strcmp(r->methods[2], "OPTIONS"),
	       "expected methods GET, POST, OPTIONS, got %zu", r->n_methods);
	return true;
}

static bool check_cidrs(const struct policy *p, char *why)
{
	static const char *const want[] = {
		"10.0.0.0/8",	   "192.0.2.7/32", "0.0.0.0/0",		  "2001:db8::/32",
		"2001:db8::1/128", "::/0",	   "::ffff:10.0.0.0/104", "169.254.0.0/15",
		"fe80::/9",	   "64:ff9b::/96",
	};
	static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8};
	const struct policy_rule *r = &p->rules[0];
	char buf[64];

	EXPECT(r->n_cidrs == ARRAY_SIZE(want), "expected %zu cidrs, got %zu", ARRAY_SIZE(want),
	       r->n_cidrs);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		EXPECT(cidr_is(&r->cidrs[i], want[i]), "expected cidrs[%zu] = %s, got %s", i,
		       want[i], cidr_str(&r->cidrs[i], buf, sizeof(buf)));
	EXPECT(r->cidrs[0].family == AF_INET && r->cidrs[0].addr[0] == 10 &&
		       r->cidrs[0].prefixlen == 8,
	       "expected AF_INET 10/8 in network order, got family %u", r->cidrs[0].family);
	EXPECT(r->cidrs[3].family == AF_INET6 && !memcmp(r->cidrs[3].addr, v6, 16),
	       "expected 2001:db8:: bytes in network order, got family %u", r->cidrs[3].family);
	return true;
}

static bool check_log_deny(const struct policy *p, char *why)
{
	EXPECT(!p->log_allow && p->log_deny, "expected log deny only, got allow=%d deny=%d",
	       p->log_allow, p->log_deny);
	return true;
}

static bool check_log_none(const struct policy *p, char *why)
{
	EXPECT(!p->log_allow && !p->log_deny, "expected no logging, got allow=%d deny=%d",
	       p->log_allow, p->log_deny);
	EXPECT(p->n_alert_on == 0, "expected no alert_on, got %zu", p->n_alert_on);
	return true;
}

static bool check_top(const struct policy *p, char *why)
{
	EXPECT(p->mode == SL_MODE_REPORT, "expected mode report, got %d", p->mode);
	EXPECT(p->default_verdict == POLICY_DEFAULT_ALLOW, "expected default allow, got %d",
	       p->default_verdict);
	EXPECT(p->deny_errno == ECONNREFUSED, "expected ECONNREFUSED, got %d", p->deny_errno);
	EXPECT(p->n_rules == 0, "expected no rules, got %zu", p->n_rules);
	EXPECT(p->n_alert_on == 2 && !strcmp(p->alert_on[0], "deny") &&
		       !strcmp(p->alert_on[1], "allow where request_bytes > 10_000_000"),
	       "expected alert_on kept verbatim, got %zu", p->n_alert_on);
	EXPECT(p->alerts && p->alerts[0].kind == POLICY_ALERT_DENY &&
		       p->alerts[1].kind == POLICY_ALERT_FLOW &&
		       p->alerts[1].field == POLICY_FIELD_REQUEST_BYTES &&
		       p->alerts[1].op == POLICY_OP_GT && p->alerts[1].value == 10000000,
	       "expected alert_on parsed as deny and request_bytes > 10000000, got kind %d",
	       p->alerts ? (int)p->alerts[0].kind : -1);
	EXPECT(policy_alert_flow_matches(&p->alerts[1], 10000001, 0, 0) &&
		       !policy_alert_flow_matches(&p->alerts[1], 10000000, 5, 5),
	       "expected request_bytes > 10000000 to hold for 10000001 only, got %d",
	       policy_alert_flow_matches(&p->alerts[1], 10000000, 5, 5));
	EXPECT(p->request_access && !strcmp(p->request_access, "mailto:sec@example.com?s={host}"),
	       "expected request_access verbatim, got %s",
	       p->request_access ? p->request_access : "(none)");
	return true;
}

static bool check_defaults(const struct policy *p, char *why)
{
	EXPECT(p->mode == SL_MODE_ENFORCE && p->default_verdict == POLICY_DEFAULT_DENY &&
		       p->deny_errno == EPERM && p->log_allow && p->log_deny && !p->n_rules,
	       "expected enforce, deny, EPERM, log both, no rules; got %d %d %d %d %d %zu", p->mode,
	       p->default_verdict, p->deny_errno, p->log_allow, p->log_deny, p->n_rules);
	return true;
}

static bool check_flow(const struct policy *p, char *why)
{
	EXPECT(p->n_rules == 2 && p->rules[0].n_cidrs == 1 && p->rules[1].n_hosts == 1,
	       "expected 2 rules from flow style, got %zu", p->n_rules);
	EXPECT(p->deny_errno == EHOSTUNREACH, "expected EHOSTUNREACH, got %d", p->deny_errno);
	EXPECT(p->rules[1].name && !strcmp(p->rules[1].name, "b\xc3\xbc"
							     "cher"),
	       "expected the UTF-8 name kept, got %s", p->rules[1].name ? p->rules[1].name : "-");
	return true;
}

struct accept_case {
	const char *name;
	const char *file; /* under policy/examples, or NULL for yaml */
	const char *yaml;
	bool (*check)(const struct policy *p, char *why);
};

static const struct accept_case accept_cases[] = {
	{"accept: seed-003.yaml loads unchanged", "seed-003.yaml", NULL, check_seed},
	{"accept: demo.yaml", "demo.yaml", NULL, check_demo},
	{"accept: underscored and boundary integers", NULL,
	 "rules:\n"
	 "  - hosts: [a.example]\n"
	 "    max_request_bytes: 1_000\n"
	 "    max_response_bytes: 0\n"
	 "  - hosts: [b.example]\n"
	 "    max_request_bytes: 18446744073709551615\n"
	 "    max_response_bytes: 12_345_678\n",
	 check_integers},
	{"accept: icmp rules and ping/raw sockets", NULL,
	 "sockets: [ping, raw, PING]\n"
	 "rules:\n"
	 "  - cidrs: [\"10.0.0.0/8\"]\n"
	 "    protocols: [icmp, tcp]\n"
	 "  - cidrs: [\"10.0.0.0/8\"]\n",
	 check_icmp},
	{"accept: io_uring opted in, the LSM layer required", NULL,
	 "sockets: [io_uring]\n"
	 "require: [lsm]\n",
	 check_uring},
	{"accept: byte totals per run and host", NULL,
	 "rules:\n"
	 "  - hosts: [a.example]\n"
	 "    max_total_request_bytes: 100_000\n"
	 "  - cidrs: [\"10.0.0.0/8\"]\n"
	 "    max_total_response_bytes: 0\n",
	 check_totals},
	{"accept: ports, ranges, quoted and unquoted", NULL,
	 "rules:\n"
	 "  - cidrs: [\"10.0.0.0/8\"]\n"
	 "    ports: [22, \"8000-8080\", 1-1024, 65535, \"443\", '7']\n",
	 check_ports},
	{"accept: protocols mask, case-insensitive", NULL,
	 "rules:\n"
	 "  - {cidrs: [\"10.0.0.0/8\"], protocols: [UDP]}\n"
	 "  - {cidrs: [\"10.0.0.0/8\"], protocols: [TCP, Udp]}\n"
	 "  - {cidrs: [\"10.0.0.0/8\"]}\n",
	 check_protocols},
	{"accept: host rules default to tcp, cidr rules to tcp and udp", NULL,
	 "rules:\n"
	 "  - {hosts: [a.example]}\n"
	 "  - {hosts: [a.example], protocols: [udp]}\n"
	 "  - {hosts: [a.example], protocols: [tcp, udp]}\n"
	 "  - {hosts: [a.example], cidrs: [\"10.0.0.0/8\"]}\n"
	 "  - {cidrs: [\"10.0.0.0/8\"]}\n",
	 check_host_protocols},
	{"accept: hosts lower-cased, trailing dot stripped, methods upper-cased", NULL,
	 "rules:\n"
	 "  - hosts: [\"*.Example.COM.\", PyPI.org, a-b.c0.io, localhost, \"x.y\"]\n"
	 "    methods: [get, Post, OPTIONS]\n",
	 check_hosts},
	{"accept: v4/v6 CIDRs, bare addresses, supersets of the blackhole", NULL,
	 "rules:\n"
	 "  - cidrs: [\"10.0.0.0/8\", 192.0.2.7, \"0.0.0.0/0\", \"2001:DB8::/32\", "
	 "\"2001:db8::1\",\n"
	 "            \"::/0\", \"::ffff:10.0.0.0/104\", \"169.254.0.0/15\", \"fe80::/9\",\n"
	 "            \"64:ff9b::/96\"]\n",
	 check_cidrs},
	{"accept: log [deny]", NULL, "log: [deny]\n", check_log_deny},
	{"accept: log [] and alert_on []", NULL, "log: []\nalert_on: []\n", check_log_none},
	{"accept: mode, default, deny_errno, alert_on verbatim, request_access", NULL,
	 "mode: report\n"
	 "default: allow\n"
	 "deny_errno: ECONNREFUSED\n"
	 "rules: []\n"
	 "alert_on:\n"
	 "  - \"deny\"\n"
	 "  - allow where request_bytes > 10_000_000\n"
	 "request_access: mailto:sec@example.com?s={host}\n",
	 check_top},
	{"accept: explicit document markers, defaults", NULL,
	 "%YAML 1.1\n---\n# only defaults\ndefault: deny\n...\n", check_defaults},
	{"accept: flow style, UTF-8 name", NULL,
	 "{deny_errno: EHOSTUNREACH, rules: [{cidrs: ['192.0.2.0/24']},\n"
	 " {\"name\": \"b\xc3\xbc"
	 "cher\", hosts: [x.example]}]}\n",
	 check_flow},
};

static void run_accept(const struct accept_case *tc)
{
	char err[ERR_LEN], why[WHY_LEN], path[4096];
	struct policy *p = NULL;
	int ret;

	if (tc->file) {
		if (!example_path(tc->file, path, sizeof(path))) {
			report(false, tc->name, "expected a short path, got a truncated one");
			return;
		}
		ret = policy_load_file(path, &p, err, sizeof(err));
	} else {
		ret = policy_load_buffer(tc->yaml, strlen(tc->yaml), "inline.yaml", &p, err,
					 sizeof(err));
	}
	if (ret) {
		snprintf(why, sizeof(why), "expected 0, got %d: %s", ret, err);
		report(false, tc->name, why);
		return;
	}
	report(tc->check(p, why), tc->name, why);
	policy_free(p);
}

/* Rejected inputs: each fails with -EINVAL at line:col with a message containing substr. */

struct reject_case {
	const char *name;
	const char *yaml;
	unsigned int line, col;
	const char *substr;
};

static const struct reject_case reject_cases[] = {
	{"reject: alert_on a condition it cannot evaluate", "alert_on:\n  - \"deny where host: x\"\n",
	 2, 5, "alert_on[0]: expected \"deny\" or \"allow where FIELD OP NUMBER\""},
	{"reject: alert_on an unknown field", "alert_on: [\"allow where rows > 5\"]\n", 1, 12,
	 "unknown field \"rows\""},
	{"reject: alert_on an unknown operator", "alert_on: [\"allow where bytes >> 5\"]\n", 1, 12,
	 "unknown operator \">>\""},
	{"reject: alert_on a number that is not one", "alert_on: [\"allow where bytes > 5MB\"]\n", 1,
	 12, "\"5MB\" is not a whole number"},
	{"reject: unknown top-level key", "default: deny\nfoo: 1\n", 2, 1,
	 "top level: unknown key, expected one of default, mode"},
	{"reject: unknown key in a rule", "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    port: [1]\n", 3,
	 5, "rules[0]: unknown key, expected one of name, hosts"},
	{"reject: bad CIDR address", "rules:\n  - cidrs: [\"10.0.0.256/32\"]\n", 2, 13,
	 "rules[0].cidrs[0]: expected a CIDR like 10.0.0.0/8"},
	{"reject: CIDR with a zone id", "rules:\n  - cidrs: [\"fe81::1%eth0/128\"]\n", 2, 13,
	 "expected a CIDR like"},
	{"reject: CIDR prefix too long", "rules:\n  - cidrs: [\"10.0.0.0/33\"]\n", 2, 13,
	 "expected a prefix length 0-32, got \"10.0.0.0/33\""},
	{"reject: CIDR prefix with a leading zero", "rules:\n  - cidrs: [\"10.0.0.0/08\"]\n", 2, 13,
	 "expected a prefix length 0-32"},
	{"reject: v4 host bits set", "rules:\n  - cidrs: [\"10.0.0.1/8\"]\n", 2, 13,
	 "expected a network address, 10.0.0.1/8 has host bits set (did you mean 10.0.0.0/8?)"},
	{"reject: v6 host bits set", "rules:\n  - cidrs:\n      - 2001:db8::1/32\n", 3, 9,
	 "2001:db8::1/32 has host bits set (did you mean 2001:db8::/32?)"},
	{"reject: port 0", "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: [0]\n", 3, 13,
	 "rules[0].ports[0]: expected a port 1-65535 or a range LO-HI, got \"0\""},
	{"reject: port 70000", "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: [443, 70000]\n", 3,
	 18, "rules[0].ports[1]: expected a port 1-65535 or a range LO-HI, got \"70000\""},
	{"reject: port with a leading zero",
	 "rules:\n  - hosts: [x.example]\n    ports: [\"080\"]\n", 3, 13,
	 "expected a port 1-65535"},
	{"reject: reversed port range",
	 "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: [443-80]\n", 3, 13,
	 "expected a range LO-HI with LO <= HI, got \"443-80\""},
	{"reject: half-open port range",
	 "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: [\"80-\"]\n", 3, 13,
	 "expected a port 1-65535 or a range LO-HI"},
	{"reject: port by service name", "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: [http]\n",
	 3, 13, "got \"http\""},
	{"reject: ports as a scalar", "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: 443\n", 3,
	 12, "rules[0].ports: expected a sequence of ports, got \"443\""},
	{"reject: ports as a mapping", "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: {a: 1}\n",
	 3, 12, "expected a sequence of ports, got a mapping"},
	{"reject: a sequence where a port is expected",
	 "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: [[80]]\n", 3, 13,
	 "expected a port 1-65535 or a range LO-HI, got a sequence"},
	{"reject: empty ports", "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: []\n", 3, 12,
	 "expected a non-empty sequence of ports"},
	{"reject: rules as a mapping", "rules: {cidrs: x}\n", 1, 8,
	 "rules: expected a sequence of rules, got a mapping"},
	{"reject: a rule as a scalar", "rules:\n  - pypi.org\n", 2, 5,
	 "rules[0]: expected a rule (a mapping with hosts or cidrs), got \"pypi.org\""},
	{"reject: hosts as a scalar", "rules:\n  - hosts: pypi.org\n", 2, 12,
	 "rules[0].hosts: expected a sequence of host names, got \"pypi.org\""},
	{"reject: name as a sequence", "rules:\n  - name: [a]\n    hosts: [x.example]\n", 2, 11,
	 "rules[0].name: expected a rule name (a string), got a sequence"},
	{"reject: name that YAML reads as null", "rules:\n  - name: ~\n    hosts: [x.example]\n", 2,
	 11, "YAML reads it as null"},
	{"reject: host that YAML reads as a boolean", "rules:\n  - hosts: [yes]\n", 2, 13,
	 "YAML reads it as a boolean"},
	{"reject: control character in a name",
	 "rules:\n  - name: \"a\\eb\"\n    hosts: [x.example]\n", 2, 11,
	 "without control characters, got \"a\\x1bb\""},
	{"reject: NUL escape in a CIDR", "rules:\n  - cidrs: [\"10.0.0.0/8\\0\"]\n", 2, 13,
	 "without control characters"},
	{"reject: duplicate top-level key", "default: deny\nmode: enforce\ndefault: allow\n", 3, 1,
	 "top level: duplicate key 'default' (first at line 1)"},
	{"reject: duplicate key in a rule",
	 "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: [1]\n    ports: [2]\n", 4, 5,
	 "rules[0]: duplicate key 'ports' (first at line 3)"},
	{"reject: duplicate rule name",
	 "rules:\n  - name: a\n    hosts: [x.example]\n  - name: a\n    hosts: [y.example]\n", 4,
	 11, "rules[1].name: expected a unique rule name, got \"a\" again (first at line 2)"},
	{"reject: alias", "default: *deny\n", 1, 10, "got the alias *deny"},
	{"reject: anchor", "rules:\n  - &r {hosts: [x.example]}\n", 2, 5,
	 "got the anchor &r (anchors and aliases are refused)"},
	{"reject: tag", "default: !!str deny\n", 1, 10, "got the tag"},
	{"reject: complex key", "? [a]\n: b\n", 1, 3, "expected a key, got a sequence"},
	{"reject: multiple documents", "default: deny\n---\ndefault: allow\n", 2, 1,
	 "expected one YAML document, got a second one"},
	{"reject: empty file", "", 1, 1, "got an empty document"},
	{"reject: comments only", "# nothing here\n", 2, 1, "got an empty document"},
	{"reject: empty document marker", "---\n", 2, 1, "got an empty document"},
	{"reject: top level is a sequence", "- default: deny\n", 1, 1,
	 "top level: expected a mapping of policy keys"},
	{"reject: rule without hosts or cidrs", "rules:\n  - ports: [443]\n", 2, 5,
	 "rules[0]: expected hosts or cidrs in every rule (for any destination: cidrs: "
	 "[\"0.0.0.0/0\", \"::/0\"]), got neither"},
	{"reject: empty rule", "rules:\n  - {}\n", 2, 5,
	 "rules[0]: expected a rule with hosts or cidrs, got an empty mapping"},
	{"reject: empty hosts", "rules:\n  - hosts: []\n", 2, 12,
	 "expected a non-empty sequence of host names"},
	{"reject: blackhole 169.254.169.254/32", "rules:\n  - cidrs: [\"169.254.169.254/32\"]\n", 2,
	 13, "no policy can allow the blackhole (169.254.0.0/16"},
	{"reject: blackhole 169.254.0.0/16",
	 "rules:\n  - cidrs: [\"10.0.0.0/8\", 169.254.0.0/16]\n", 2, 27,
	 "rules[0].cidrs[1]: no policy can allow the blackhole"},
	{"reject: blackhole fe80::1/128", "rules:\n  - cidrs: [\"fe80::1/128\"]\n", 2, 13,
	 "no policy can allow the blackhole"},
	{"reject: blackhole ::ffff:169.254.1.1/128",
	 "rules:\n  - cidrs: [\"::ffff:169.254.1.1/128\"]\n", 2, 13,
	 "no policy can allow the blackhole"},
	{"reject: blackhole fd00:ec2::254", "rules:\n  - cidrs: [\"fd00:ec2::254\"]\n", 2, 13,
	 "no policy can allow the blackhole"},
	{"reject: blackhole NAT64 64:ff9b::a9fe:a9fe",
	 "rules:\n  - cidrs: [\"64:ff9b::169.254.169.254/128\"]\n", 2, 13,
	 "no policy can allow the blackhole"},
	{"reject: blackhole IPv4-compatible ::169.254.0.1",
	 "rules:\n  - cidrs: [\"::169.254.0.1/128\"]\n", 2, 13,
	 "no policy can allow the blackhole"},
	{"reject: hostname starting with '-'", "rules:\n  - hosts: [\"-bad.example.com\"]\n", 2, 13,
	 "rules[0].hosts[0]: expected a host name like \"pypi.org\" or \"*.example.com\", got "
	 "\"-bad.example.com\""},
	{"reject: hostname with an empty label", "rules:\n  - hosts: [\"a..b\"]\n", 2, 13,
	 "expected a host name like"},
	{"reject: hostname with '_'", "rules:\n  - hosts: [exa_mple.com]\n", 2, 13,
	 "expected a host name like"},
	{"reject: wildcard not leading", "rules:\n  - hosts: [\"*.*.example.com\"]\n", 2, 13,
	 "expected a host name like"},
	{"reject: partial wildcard", "rules:\n  - hosts: [\"foo*.example.com\"]\n", 2, 13,
	 "expected a host name like"},
	{"reject: bare wildcard", "rules:\n  - hosts: [\"*\"]\n", 2, 13,
	 "expected a host name like"},
	{"reject: 64-character label",
	 "rules:\n  - hosts: "
	 "[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com]\n",
	 2, 13, "expected a host name like"},
	{"reject: hostname longer than 253",
	 "rules:\n  - hosts: "
	 "[aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa."
	 "aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa."
	 "aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.aaaaaaaaa."
	 "aaaaaaaaa.aaaaaaaaa.aaaaaaaaa.com]\n",
	 2, 13, "at most 253 characters"},
	{"reject: IPv4 address in hosts", "rules:\n  - hosts: [10.0.0.1]\n", 2, 13,
	 "got the address \"10.0.0.1\" (addresses belong in cidrs)"},
	{"reject: IPv6 address in hosts", "rules:\n  - hosts: [\"2001:db8::1\"]\n", 2, 13,
	 "addresses belong in cidrs"},
	{"reject: bad method", "rules:\n  - hosts: [x.example]\n    methods: [GET, FETCH]\n", 3, 20,
	 "rules[0].methods[1]: expected an HTTP method (GET, HEAD, POST, PUT, DELETE, PATCH, "
	 "OPTIONS, CONNECT, TRACE), got \"FETCH\""},
	{"reject: negative bytes", "rules:\n  - hosts: [x.example]\n    max_request_bytes: -1\n", 3,
	 24,
	 "rules[0].max_request_bytes: expected a non-negative integer like 500_000_000, got "
	 "\"-1\""},
	{"reject: float bytes", "rules:\n  - hosts: [x.example]\n    max_response_bytes: 1.5\n", 3,
	 25, "expected a non-negative integer like 500_000_000, got \"1.5\""},
	{"reject: exponent bytes", "rules:\n  - hosts: [x.example]\n    max_response_bytes: 1e6\n",
	 3, 25, "got \"1e6\""},
	{"reject: octal-looking bytes",
	 "rules:\n  - hosts: [x.example]\n    max_response_bytes: 010\n", 3, 25, "got \"010\""},
	{"reject: doubled underscore",
	 "rules:\n  - hosts: [x.example]\n    max_response_bytes: 1__0\n", 3, 25, "got \"1__0\""},
	{"reject: trailing underscore",
	 "rules:\n  - hosts: [x.example]\n    max_response_bytes: 10_\n", 3, 25, "got \"10_\""},
	{"reject: quoted bytes", "rules:\n  - hosts: [x.example]\n    max_response_bytes: \"10\"\n",
	 3, 25, "expected an unquoted non-negative integer"},
	{"reject: bytes overflow",
	 "rules:\n  - hosts: [x.example]\n    max_response_bytes: 18_446_744_073_709_551_616\n", 3,
	 25, "expected an integer at most 18446744073709551615"},
	{"reject: unknown deny_errno", "deny_errno: ENOENT\n", 1, 13,
	 "deny_errno: expected one of EPERM, EACCES, ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, got "
	 "\"ENOENT\""},
	{"reject: unknown default", "default: maybe\n", 1, 10,
	 "default: expected one of deny, allow, got \"maybe\""},
	{"reject: mode is case-sensitive", "mode: Enforce\n", 1, 7,
	 "mode: expected one of enforce, report"},
	{"reject: unknown log kind", "log: [allow, info]\n", 1, 14,
	 "log[1]: expected one of allow, deny, got \"info\""},
	{"reject: unknown protocol", "rules:\n  - cidrs: [\"10.0.0.0/8\"]\n    protocols: [sctp]\n",
	 3, 17, "rules[0].protocols[0]: expected one of tcp, udp, icmp, got \"sctp\""},
	{"reject: unknown socket kind", "sockets: [ping, packet]\n", 1, 17,
	 "sockets[1]: expected one of ping, raw, io_uring, got \"packet\""},
	{"reject: sockets not a sequence", "sockets: ping\n", 1, 10,
	 "sockets: expected a sequence of socket kinds (ping, raw, io_uring), got \"ping\""},
	{"reject: unknown required layer", "require: [lsm, tc]\n", 1, 16,
	 "require[1]: expected one of lsm, got \"tc\""},
	{"reject: require not a sequence", "require: lsm\n", 1, 10,
	 "require: expected a sequence of layers (lsm), got \"lsm\""},
	{"reject: alert_on item as a mapping", "alert_on: [{a: b}]\n", 1, 12,
	 "alert_on[0]: expected an alert condition (a string), got a mapping"},
	{"reject: request_access empty", "request_access: \"\"\n", 1, 17,
	 "request_access: expected a URL template (a string), got \"\""},
	{"reject: syntax error, unterminated quote", "default: \"deny\n", 2, 1,
	 "syntax error: found unexpected end of stream"},
	{"reject: syntax error, tab indentation", "rules:\n\t- hosts: [x]\n", 2, 1,
	 "syntax error: found character that cannot start any token"},
	{"reject: syntax error, nested mapping value", "default: deny\nmode: enforce: x\n", 2, 14,
	 "syntax error: mapping values are not allowed in this context"},
	{"reject: syntax error, bad indentation",
	 "rules:\n  - hosts: [x.example]\n   cidrs: [\"10.0.0.0/8\"]\n", 3, 4,
	 "syntax error: did not find expected '-' indicator (while parsing a block collection at "
	 "line 2)"},
	{"reject: reader error, control byte", "default: deny\n\x01\n", 2, 1,
	 "syntax error: control characters are not allowed"},
	{"reject: reader error, invalid UTF-8", "default: \xff\n", 1, 10,
	 "syntax error: invalid leading UTF-8 octet"},
};

static void run_reject(const struct reject_case *tc)
{
	char err[ERR_LEN], why[WHY_LEN], prefix[64];
	struct policy *p = NULL;
	int ret;

	ret = policy_load_buffer(tc->yaml, strlen(tc->yaml), "bad.yaml", &p, err, sizeof(err));
	snprintf(prefix, sizeof(prefix), "bad.yaml:%u:%u: ", tc->line, tc->col);
	if (ret != -EINVAL || p) {
		snprintf(why, sizeof(why), "expected -EINVAL, got %d: %s", ret, err);
		policy_free(p);
		report(false, tc->name, why);
		return;
	}
	if (strncmp(err, prefix, strlen(prefix)) || !strstr(err, tc->substr) || strchr(err, '\n')) {
		snprintf(why, sizeof(why), "expected one line \"%s...%s...\", got \"%s\"", prefix,
			 tc->substr, err);
		report(false, tc->name, why);
		return;
	}
	report(true, tc->name, "");
}

/* Compiler cases. */

static const struct policy_lpm4_entry *find4(const struct policy_compiled *c, const char *cidr)
{
	struct policy_cidr pc = {.family = AF_INET};
	char a[32];

	for (size_t i = 0; i < c->n_v4; i++) {
		pc.prefixlen = (uint8_t)c->v4[i].key.prefixlen;
		memcpy(pc.addr, c->v4[i].key.addr, 4);
		if (!policy_cidr_format(&pc, a, sizeof(a)) && !strcmp(a, cidr))
			return &c->v4[i];
	}
	return NULL;
}

static const struct policy_lpm6_entry *find6(const struct policy_compiled *c, const char *cidr)
{
	struct policy_cidr pc = {.family = AF_INET6};
	char a[64];

	for (size_t i = 0; i < c->n_v6; i++) {
		pc.prefixlen = (uint8_t)c->v6[i].key.prefixlen;
		memcpy(pc.addr, c->v6[i].key.addr, 16);
		if (!policy_cidr_format(&pc, a, sizeof(a)) && !strcmp(a, cidr))
			return &c->v6[i];
	}
	return NULL;
}

/* "rule:lo-hi:proto rule:lo-hi:proto ...", the way the expectations below are written. */
static const char *val_str(const struct sl_dst_rules *v, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (__u32 i = 0; i < v->count && i < SL_MAX_PORT_RULES; i++) {
		int n = snprintf(buf + off, len - off, "%s%u:%u-%u:%u", i ? " " : "",
				 v->e[i].rule_id, v->e[i].port_lo, v->e[i].port_hi,
				 v->e[i].protocols);

		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
	}
	return buf;
}

static bool val_is(const struct sl_dst_rules *v, const char *want, char *why, const char *pfx)
{
	char got[512];

	val_str(v, got, sizeof(got));
	EXPECT(!strcmp(got, want), "expected %s = \"%s\", got \"%s\"", pfx, want, got);
	for (__u32 i = 0; i < v->count; i++)
		EXPECT(!v->e[i].pad, "expected zero padding in %s, got %u", pfx, v->e[i].pad);
	EXPECT(!v->pad, "expected zero value padding in %s, got %u", pfx, v->pad);
	return true;
}

#define T SL_PROTO_TCP
#define U SL_PROTO_UDP

static bool check_fold(const struct policy_compiled *c, char *why)
{
	const struct policy_lpm4_entry *all = find4(c, "0.0.0.0/0"), *ten = find4(c, "10.0.0.0/8");

	EXPECT(c->n_v4 == 2 && c->n_v6 == 0, "expected 2 v4 and 0 v6 entries, got %zu and %zu",
	       c->n_v4, c->n_v6);
	EXPECT(all && ten, "expected entries for 0.0.0.0/0 and 10.0.0.0/8, got %p and %p",
	       (const void *)all, (const void *)ten);
	EXPECT(all->key.prefixlen == 0 && ten->key.prefixlen == 8 && ten->key.addr[0] == 10,
	       "expected keys /0 and 10/8, got /%u and %u/%u", all->key.prefixlen, ten->key.addr[0],
	       ten->key.prefixlen);
	return val_is(&all->val, "1:443-443:3", why, "0.0.0.0/0") &&
	       val_is(&ten->val, "1:443-443:3 2:22-22:1", why, "10.0.0.0/8");
}

static bool check_tree(const struct policy_compiled *c, char *why)
{
	static const struct {
		const char *cidr, *val;
	} want[] = {
		{"10.0.0.0/8", "1:1-1:3"},
		{"10.1.0.0/16", "1:1-1:3 2:2-2:3"},
		{"10.1.1.0/24", "1:1-1:3 2:2-2:3 4:4-4:3"},
		{"10.2.0.0/16", "1:1-1:3 3:3-3:3"},
		{"11.0.0.0/8", "5:5-5:3"},
		{"10.1.1.128/25", "1:1-1:3 2:2-2:3 4:4-4:3 6:6-6:3"},
	};

	EXPECT(c->n_v4 == ARRAY_SIZE(want), "expected %zu v4 entries, got %zu", ARRAY_SIZE(want),
	       c->n_v4);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const struct policy_lpm4_entry *e = find4(c, want[i].cidr);

		EXPECT(e, "expected an entry for %s, got none", want[i].cidr);
		if (!val_is(&e->val, want[i].val, why, want[i].cidr))
			return false;
	}
	return true;
}

static bool check_dedup(const struct policy_compiled *c, char *why)
{
	const struct policy_lpm4_entry *all = find4(c, "0.0.0.0/0"), *ten = find4(c, "10.0.0.0/8");

	EXPECT(c->n_v4 == 2, "expected 2 v4 entries, got %zu", c->n_v4);
	EXPECT(all && ten, "expected 0.0.0.0/0 and 10.0.0.0/8, got %p %p", (const void *)all,
	       (const void *)ten);
	return val_is(&all->val, "1:443-443:1", why, "0.0.0.0/0") &&
	       val_is(&ten->val, "1:443-443:1 2:79-90:2", why, "10.0.0.0/8");
}

static bool check_sixteen(const struct policy_compiled *c, char *why)
{
	EXPECT(c->n_v4 == 1 && c->v4[0].val.count == SL_MAX_PORT_RULES,
	       "expected one entry with %d port rules, got %zu entries", SL_MAX_PORT_RULES,
	       c->n_v4);
	return true;
}

static bool check_none(const struct policy_compiled *c, char *why)
{
	EXPECT(c->n_v4 == 0 && c->n_v6 == 0 && !c->v4 && !c->v6,
	       "expected no entries for host rules, got %zu v4 and %zu v6", c->n_v4, c->n_v6);
	return true;
}

static bool check_mapped(const struct policy_compiled *c, char *why)
{
	const struct policy_lpm4_entry *all = find4(c, "0.0.0.0/0"), *ten = find4(c, "10.0.0.0/8");
	const struct policy_lpm4_entry *one = find4(c, "192.0.2.1/32");

	EXPECT(c->n_v4 == 3 && c->n_v6 == 0, "expected 3 v4 and 0 v6 entries, got %zu and %zu",
	       c->n_v4, c->n_v6);
	EXPECT(all && ten && one, "expected 0.0.0.0/0, 10.0.0.0/8 and 192.0.2.1/32, got %p %p %p",
	       (const void *)all, (const void *)ten, (const void *)one);
	return val_is(&all->val, "1:443-443:1", why, "0.0.0.0/0") &&
	       val_is(&ten->val, "1:443-443:1 2:22-22:1", why, "10.0.0.0/8") &&
	       val_is(&one->val, "1:443-443:1 3:0-65535:2", why, "192.0.2.1/32");
}

static bool check_v6(const struct policy_compiled *c, char *why)
{
	static const __u8 db8[16] = {0x20, 0x01, 0x0d, 0xb8};
	const struct policy_lpm6_entry *all = find6(c, "::/0"), *doc = find6(c, "2001:db8::/32");

	EXPECT(c->n_v6 == 2 && c->n_v4 == 1, "expected 2 v6 and 1 v4 entries, got %zu and %zu",
	       c->n_v6, c->n_v4);
	EXPECT(all && doc, "expected ::/0 and 2001:db8::/32, got %p %p", (const void *)all,
	       (const void *)doc);
	EXPECT(doc->key.prefixlen == 32 && !memcmp(doc->key.addr, db8, 16),
	       "expected key 2001:db8::/32 in network order, got prefixlen %u", doc->key.prefixlen);
	return val_is(&all->val, "1:443-443:3", why, "::/0") &&
	       val_is(&doc->val, "1:443-443:3 2:0-65535:2", why, "2001:db8::/32") &&
	       val_is(&c->v4[0].val, "1:443-443:3", why, "0.0.0.0/0");
}

static bool check_demo_compiled(const struct policy_compiled *c, char *why)
{
	static const __u8 v4[4] = {198, 51, 100, 10};

	EXPECT(c->n_v4 == 1 && c->n_v6 == 1, "expected 1 v4 and 1 v6 entry, got %zu and %zu",
	       c->n_v4, c->n_v6);
	EXPECT(c->v4[0].key.prefixlen == 32 && !memcmp(c->v4[0].key.addr, v4, 4),
	       "expected key 198.51.100.10/32, got prefixlen %u", c->v4[0].key.prefixlen);
	EXPECT(c->v6[0].key.prefixlen == 128, "expected a /128 v6 key, got /%u",
	       c->v6[0].key.prefixlen);
	return val_is(&c->v4[0].val, "1:80-80:1 1:443-443:1", why, "198.51.100.10/32") &&
	       val_is(&c->v6[0].val, "1:80-80:1 1:443-443:1", why, "2001:db8::10/128");
}

struct compile_case {
	const char *name;
	const char *file;
	const char *yaml;
	int err;	    /* expected policy_compile() result */
	const char *substr; /* in the message when err != 0 */
	bool (*check)(const struct policy_compiled *c, char *why);
};

#define R16(i) "  - {cidrs: [\"10.0.0.0/8\"], ports: [" #i "0]}\n"

static const struct compile_case compile_cases[] = {
	{"compile: 0.0.0.0/0:443 folds into 10.0.0.0/8:22", NULL,
	 "rules:\n"
	 "  - {cidrs: [\"0.0.0.0/0\"], ports: [443]}\n"
	 "  - {cidrs: [\"10.0.0.0/8\"], ports: [22], protocols: [tcp]}\n",
	 0, NULL, check_fold},
	{"compile: nested and sibling prefixes fold along their chain only", NULL,
	 "rules:\n"
	 "  - {cidrs: [\"10.0.0.0/8\"], ports: [1]}\n"
	 "  - {cidrs: [\"10.1.0.0/16\"], ports: [2]}\n"
	 "  - {cidrs: [\"10.2.0.0/16\"], ports: [3]}\n"
	 "  - {cidrs: [\"10.1.1.0/24\"], ports: [4]}\n"
	 "  - {cidrs: [\"11.0.0.0/8\"], ports: [5]}\n"
	 "  - {cidrs: [\"10.1.1.128/25\"], ports: [6]}\n",
	 0, NULL, check_tree},
	{"compile: duplicate prefixes and entries are merged", NULL,
	 "rules:\n"
	 "  - {cidrs: [\"0.0.0.0/0\", \"10.0.0.0/8\", \"10.0.0.0/8\"], ports: [443], protocols: "
	 "[tcp]}\n"
	 "  - {cidrs: [\"10.0.0.0/8\"], ports: [80, 80, 79, 81-90], protocols: [udp]}\n",
	 0, NULL, check_dedup},
	{"compile: exactly 16 port rules fit", NULL,
	 "rules:\n" R16(1) R16(2) R16(3) R16(4) R16(5) R16(6) R16(7) R16(8) R16(9) R16(10) R16(11)
		 R16(12) R16(13) R16(14) R16(15) R16(16),
	 0, NULL, check_sixteen},
	{"compile: 17 port rules on one prefix is E2BIG", NULL,
	 "rules:\n" R16(1) R16(2) R16(3) R16(4) R16(5) R16(6) R16(7) R16(8) R16(9) R16(10) R16(11)
		 R16(12) R16(13) R16(14) R16(15) R16(16) R16(17),
	 -E2BIG, "10.0.0.0/8 is covered by 17 port-rule entries, at most 16", NULL},
	{"compile: E2BIG through folding names the prefix and both rules", NULL,
	 "rules:\n"
	 "  - {name: wide, cidrs: [\"0.0.0.0/0\"], ports: [1, 3, 5, 7, 9, 11, 13, 15, 17]}\n"
	 "  - {cidrs: [\"10.0.0.0/8\"], ports: [2, 4, 6, 8, 10, 12, 14, 16]}\n",
	 -E2BIG,
	 "10.0.0.0/8 is covered by 17 port-rule entries, at most 16 fit one LPM entry "
	 "(rules: wide, rule 2)",
	 NULL},
	{"compile: host-only rules produce no entries", "seed-003.yaml", NULL, 0, NULL, check_none},
	{"compile: v4-mapped CIDRs become IPv4 entries", NULL,
	 "rules:\n"
	 "  - {cidrs: [\"::ffff:0:0/96\"], ports: [443], protocols: [tcp]}\n"
	 "  - {cidrs: [\"::ffff:10.0.0.0/104\"], ports: [22], protocols: [tcp]}\n"
	 "  - {cidrs: [\"::ffff:192.0.2.1\"], protocols: [udp]}\n",
	 0, NULL, check_mapped},
	{"compile: v6 prefixes fold, any port is 0-65535", NULL,
	 "rules:\n"
	 "  - {cidrs: [\"::/0\", \"0.0.0.0/0\"], ports: [443]}\n"
	 "  - {cidrs: [\"2001:db8::/32\"], protocols: [udp]}\n",
	 0, NULL, check_v6},
	{"compile: demo.yaml", "demo.yaml", NULL, 0, NULL, check_demo_compiled},
};

static void run_compile(const struct compile_case *tc)
{
	char err[ERR_LEN], why[WHY_LEN], path[4096];
	struct policy_compiled *c = NULL;
	struct policy *p = NULL;
	bool ok = false;
	int ret;

	if (tc->file) {
		if (!example_path(tc->file, path, sizeof(path))) {
			report(false, tc->name, "expected a short path, got a truncated one");
			return;
		}
		ret = policy_load_file(path, &p, err, sizeof(err));
	} else {
		ret = policy_load_buffer(tc->yaml, strlen(tc->yaml), "c.yaml", &p, err,
					 sizeof(err));
	}
	if (ret) {
		snprintf(why, sizeof(why), "expected the policy to load, got %d: %s", ret, err);
		goto out;
	}
	ret = policy_compile(p, &c, err, sizeof(err));
	if (ret != tc->err) {
		snprintf(why, sizeof(why), "expected compile to return %d, got %d: %s", tc->err,
			 ret, err);
		goto out;
	}
	if (ret) {
		ok = strstr(err, tc->substr) && !c;
		snprintf(why, sizeof(why), "expected a message containing \"%s\", got \"%s\"",
			 tc->substr, err);
		goto out;
	}
	ok = tc->check(c, why);
out:
	report(ok, tc->name, why);
	policy_compiled_free(c);
	policy_free(p);
}

/* policy_cidr_in_blackhole() directly. */

struct blackhole_case {
	const char *cidr;
	bool inside;
};

static const struct blackhole_case blackhole_cases[] = {
	{"169.254.169.254/32", true},
	{"169.254.0.0/16", true},
	{"169.254.128.0/17", true},
	{"169.254.0.0/15", false},
	{"169.0.0.0/8", false},
	{"0.0.0.0/0", false},
	{"fe80::/10", true},
	{"febf:ffff::1/128", true},
	{"fe80::/9", false},
	{"fec0::/10", false},
	{"fd00:ec2::254/128", true},
	{"fd00:ec2::/32", true},
	{"fd00:ec3::/32", false},
	{"::ffff:169.254.0.0/112", true},
	{"::ffff:169.254.1.1/128", true},
	{"::ffff:169.0.0.0/104", false},
	{"::169.254.0.0/112", true},
	{"64:ff9b::169.254.169.254/128", true},
	{"64:ff9b::a9fe:0/112", true},
	{"64:ff9b::/96", false},
	{"::/0", false},
	{"2001:db8::/32", false},
	/* the forms the kernel also blackholes (bpf/addr.bpf.h): 6to4, Teredo, ISATAP, SIIT, NAT64 */
	{"2002:a9fe::/32", true},
	{"2002:a9fe:a9fe::/48", true},
	{"2002:a9fe::/31", false},
	{"2002::/16", false},
	{"2001:0:a9fe::/48", true},
	{"2001::/32", false},
	{"2001:db8::5efe:a9fe:0/112", true},
	{"2001:db8::5efe:0:0/96", false},
	{"::ffff:0:a9fe:0/112", true},
	{"64:ff9b:1::a9fe:a9fe/128", true},
	{"64:ff9b:1:a9fe::/64", true},
	{"64:ff9b:1::/48", false},
};

static bool parse_cidr_text(const char *s, struct policy_cidr *c)
{
	char a[64], *slash;

	snprintf(a, sizeof(a), "%s", s);
	slash = strchr(a, '/');
	if (!slash)
		return false;
	*slash = '\0';
	memset(c, 0, sizeof(*c));
	c->family = strchr(a, ':') ? AF_INET6 : AF_INET;
	c->prefixlen = (uint8_t)atoi(slash + 1);
	return inet_pton(c->family, a, c->addr) == 1;
}

static void run_blackhole(const struct blackhole_case *tc)
{
	char name[128], why[WHY_LEN];
	struct policy_cidr c;
	bool got;

	snprintf(name, sizeof(name), "blackhole: %s is %s", tc->cidr,
		 tc->inside ? "inside" : "not inside");
	if (!parse_cidr_text(tc->cidr, &c)) {
		report(false, name, "expected a parsable test CIDR, got a typo");
		return;
	}
	got = policy_cidr_in_blackhole(&c);
	snprintf(why, sizeof(why), "expected %d, got %d", tc->inside, got);
	report(got == tc->inside, name, why);
}

/* Everything else. */

static bool misc_free_null(char *why)
{
	policy_free(NULL);
	policy_compiled_free(NULL);
	EXPECT(!policy_cidr_in_blackhole(NULL), "expected false for NULL, got true");
	return true;
}

static bool misc_rule_name(char *why)
{
	static const char *y =
		"rules:\n  - {name: web, hosts: [x.example]}\n  - {hosts: [y.example]}\n";
	char err[ERR_LEN], b[32];
	struct policy *p = NULL;
	bool ok = false;

	if (policy_load_buffer(y, strlen(y), "n.yaml", &p, err, sizeof(err))) {
		snprintf(why, WHY_LEN, "expected the policy to load, got \"%s\"", err);
		return false;
	}
	if (strcmp(policy_rule_name(p, 0, b, sizeof(b)), "web"))
		snprintf(why, WHY_LEN, "expected \"web\", got \"%s\"", b);
	else if (strcmp(policy_rule_name(p, 1, b, sizeof(b)), "rule 2"))
		snprintf(why, WHY_LEN, "expected \"rule 2\", got \"%s\"", b);
	else
		ok = true;
	policy_free(p);
	return ok;
}

static bool misc_errno_name(char *why)
{
	EXPECT(policy_errno_name(EACCES) && !strcmp(policy_errno_name(EACCES), "EACCES"),
	       "expected \"EACCES\", got %s", policy_errno_name(EACCES));
	EXPECT(!policy_errno_name(ENOENT), "expected NULL for ENOENT, got %s",
	       policy_errno_name(ENOENT));
	return true;
}

/* What policy check prints for an example file, or for yaml when file is NULL; NULL on error. */
static char *summary_text(const char *file, const char *yaml, char *why)
{
	char err[ERR_LEN] = "", path[4096], *text = NULL;
	struct policy_compiled *c = NULL;
	struct policy *p = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	if (file)
		ret = example_path(file, path, sizeof(path)) ?
			      policy_load_file(path, &p, err, sizeof(err)) : -ENAMETOOLONG;
	else
		ret = policy_load_buffer(yaml, strlen(yaml), "summary.yaml", &p, err, sizeof(err));
	if (ret || policy_compile(p, &c, err, sizeof(err))) {
		snprintf(why, WHY_LEN, "expected %s to load and compile, got \"%s\"",
			 file ? file : "the policy", err);
		goto out;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		snprintf(why, WHY_LEN, "expected a memstream, got %s", strerror(errno));
		goto out;
	}
	policy_print_summary(p, c, f);
	fclose(f);
out:
	policy_compiled_free(c);
	policy_free(p);
	return text;
}

static bool summary_has(const char *file, const char *const *want, size_t n, char *why)
{
	char *text = summary_text(file, NULL, why);
	bool ok = text != NULL;

	for (size_t i = 0; ok && i < n; i++) {
		if (!strstr(text, want[i])) {
			snprintf(why, WHY_LEN,
				 "expected the summary to contain \"%s\", got %zu bytes "
				 "without it",
				 want[i], strlen(text));
			ok = false;
		}
	}
	free(text);
	return ok;
}

static bool misc_summary_seed(char *why)
{
	static const char *const want[] = {
		"mode: enforce",
		"default: deny",
		"EPERM",
		"hosts: registry.npmjs.org, pypi.org, files.pythonhosted.org\n"
		"      (through the run's resolver: only listed names resolve",
		"TLS to them, on any port (on 443 every flow must be TLS), must name, in its "
		"ClientHello, a host\n       that resolved to that address",
		"methods GET, HEAD: cannot be enforced in the kernel: HTTP methods are inside TLS",
		"max_response_bytes: 500000000 per flow",
		"max_request_bytes: 65536 per flow",
		"always blackholed, whatever the policy: 169.254.0.0/16, fe80::/10, fd00:ec2::/32 "
		"and every IPv6 form that embeds 169.254.0.0/16 (v4-mapped, IPv4-compatible, NAT64, "
		"SIIT, 6to4, Teredo, ISATAP)",
		"kernel LPM entries: 0 IPv4, 0 IPv6",
	};

	return summary_has("seed-003.yaml", want, ARRAY_SIZE(want), why);
}

static bool misc_summary_demo(char *why)
{
	static const char *const want[] = {
		"rule 1: test-host",
		"cidrs: 198.51.100.10/32, 2001:db8::10/128",
		"ports: 80, 443",
		"protocols: tcp\n",
		"request_access: https://tooling.example/egress/request?host={host}",
		"kernel LPM entries: 1 IPv4, 1 IPv6",
	};

	return summary_has("demo.yaml", want, ARRAY_SIZE(want), why);
}

/*
 * UDP to a name's addresses is not name-checked (QUIC): a host rule gets it only when asked
 * (protocols: [udp]), and the summary says, for that rule only, what it means.
 */
static bool misc_summary_udp_hosts(char *why)
{
	static const char yaml[] = "rules:\n"
				   "  - {name: quic, hosts: [q.example], protocols: [udp]}\n"
				   "  - {name: web, hosts: [w.example]}\n"
				   "  - {name: net, cidrs: [\"10.0.0.0/8\"]}\n";
	static const char quic[] = "udp to these hosts' addresses: the server name is not "
				   "checked: QUIC (HTTP/3) carries it in\n      its Initial "
				   "packet, encrypted, and the kernel cannot bind it to the name "
				   "without decrypting\n      the Initial";
	char *text = summary_text(NULL, yaml, why), *at, *web, *net;
	bool ok = false;

	if (!text)
		return false;
	at = strstr(text, quic);
	web = strstr(text, "rule 2: web");
	net = strstr(text, "rule 3: net");
	if (!at || !web || !net || at > web)
		snprintf(why, WHY_LEN, "expected rule 1 (quic) to explain QUIC: \"%s\"; got:\n%s",
			 quic, text);
	else if (strstr(at + sizeof(quic) - 1, "QUIC"))
		snprintf(why, WHY_LEN, "expected no QUIC note for rules 2 (tcp) and 3 (cidrs); got:"
			 "\n%s", web);
	else if (!strstr(web, "protocols: tcp\n") || strstr(web, "protocols: tcp\n") > net ||
		 !strstr(net, "protocols: tcp, udp\n"))
		snprintf(why, WHY_LEN, "expected rule 2 tcp, rule 3 tcp, udp; got:\n%s", web);
	else
		ok = true;
	free(text);
	return ok;
}

/* Host matching: exact names, wildcards strictly below their domain, first rule wins. */
static bool misc_host_match(char *why)
{
	static const char yaml[] = "rules:\n"
				   "  - name: exact\n"
				   "    hosts: [\"pypi.org\", \"Registry.NPMJS.org.\"]\n"
				   "  - name: wild\n"
				   "    hosts: [\"*.githubusercontent.com\", \"*.pypi.org\"]\n";
	static const struct {
		const char *name;
		long want;
	} cases[] = {
		{ "pypi.org", 0 },
		{ "registry.npmjs.org", 0 },
		{ "a.pypi.org", 1 },
		{ "raw.githubusercontent.com", 1 },
		{ "a.b.githubusercontent.com", 1 },
		{ "githubusercontent.com", -1 },
		{ "xgithubusercontent.com", -1 },
		{ "pypi.org.evil.example", -1 },
		{ "evilpypi.org", -1 },
		{ "", -1 },
	};
	char err[ERR_LEN];
	struct policy *p = NULL;
	size_t i;
	int ret;

	ret = policy_load_buffer(yaml, sizeof(yaml) - 1, "hosts.yaml", &p, err, sizeof(err));
	EXPECT(!ret, "expected the policy to load, got %d \"%s\"", ret, err);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		long got = policy_match_host(p, cases[i].name);

		if (got != cases[i].want) {
			snprintf(why, WHY_LEN, "expected \"%s\" to match rule %ld, got %ld",
				 cases[i].name, cases[i].want, got);
			policy_free(p);
			return false;
		}
	}
	policy_free(p);
	return true;
}

static bool misc_missing_file(char *why)
{
	char err[ERR_LEN], path[4096];
	struct policy *p = NULL;
	int ret;

	if (!example_path("does-not-exist.yaml", path, sizeof(path))) {
		snprintf(why, WHY_LEN, "expected a short path, got a truncated one");
		return false;
	}
	ret = policy_load_file(path, &p, err, sizeof(err));
	EXPECT(ret == -ENOENT && !p && strstr(err, "does-not-exist.yaml: "),
	       "expected -ENOENT naming the file, got %d \"%s\"", ret, err);
	return true;
}

static bool misc_too_big(char *why)
{
	size_t len = (size_t)POLICY_MAX_BYTES + 1;
	char err[ERR_LEN], *buf = malloc(len);
	struct policy *p = NULL;
	int ret;

	EXPECT(buf, "expected %zu bytes of memory, got none", len);
	memset(buf, ' ', len);
	ret = policy_load_buffer(buf, len, "big.yaml", &p, err, sizeof(err));
	free(buf);
	EXPECT(ret == -EFBIG && !p && strstr(err, "big.yaml: "), "expected -EFBIG, got %d \"%s\"",
	       ret, err);
	return true;
}

/* A policy of n repetitions of item after head, built in memory. */
static char *repeat(const char *head, const char *item, size_t n, size_t *len)
{
	size_t hl = strlen(head), il = strlen(item);
	char *buf = malloc(hl + il * n + 1);

	if (!buf)
		return NULL;
	memcpy(buf, head, hl);
	for (size_t i = 0; i < n; i++)
		memcpy(buf + hl + i * il, item, il);
	*len = hl + il * n;
	buf[*len] = '\0';
	return buf;
}

static bool limit_case(const char *head, const char *item, size_t n, int want, const char *substr,
		       char *why)
{
	char err[ERR_LEN], *buf;
	struct policy *p = NULL;
	size_t len;
	int ret;

	buf = repeat(head, item, n, &len);
	EXPECT(buf, "expected memory for %zu items, got none", n);
	ret = policy_load_buffer(buf, len, "lim.yaml", &p, err, sizeof(err));
	free(buf);
	policy_free(p);
	EXPECT(ret == want && (!want || strstr(err, substr)),
	       "expected %d with \"%s\" for %zu items, got %d \"%s\"", want, substr ? substr : "",
	       n, ret, err);
	return true;
}

static bool misc_rule_limit(char *why)
{
	return limit_case("rules:\n", "- {hosts: [a.b]}\n", POLICY_MAX_RULES, 0, NULL, why) &&
	       limit_case("rules:\n", "- {hosts: [a.b]}\n", POLICY_MAX_RULES + 1, -EINVAL,
			  "rules: expected at most 65535 rules, got more", why);
}

static bool misc_cidr_limit(char *why)
{
	static const char *const two = "- {cidrs: [10.0.0.0/8, 10.0.0.0/8]}\n";

	/* Two per rule, so the per-policy limit is hit, not the per-list one. */
	return limit_case("rules:\n", two, POLICY_MAX_CIDRS / 2, 0, NULL, why) &&
	       limit_case(
		       "rules:\n", two, POLICY_MAX_CIDRS / 2 + 1, -EINVAL,
		       "rules[50000].cidrs[0]: expected at most 100000 CIDRs in the whole policy",
		       why) &&
	       limit_case("rules:\n- cidrs:\n", "  - 10.0.0.0/8\n", POLICY_MAX_LIST + 1, -EINVAL,
			  "rules[0].cidrs: expected at most 100000 elements, got more", why);
}

/*
 * Every prefix of the seed either loads or fails with a one-line "name:line:col: " message: no
 * crash, no leak (under -fsanitize=address), no message without a position.
 */
static bool misc_truncations(char *why)
{
	char err[ERR_LEN], path[4096], buf[4096];
	size_t len = 0;
	FILE *f;

	if (!example_path("seed-003.yaml", path, sizeof(path)) || !(f = fopen(path, "r"))) {
		snprintf(why, WHY_LEN, "expected to open seed-003.yaml, got %s", strerror(errno));
		return false;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (size_t n = 0; n <= len; n++) {
		struct policy *p = NULL;
		unsigned int l, c;
		int ret = policy_load_buffer(buf, n, "cut.yaml", &p, err, sizeof(err));

		policy_free(p);
		if (!ret)
			continue;
		EXPECT(ret == -EINVAL && sscanf(err, "cut.yaml:%u:%u: ", &l, &c) == 2 &&
			       !strchr(err, '\n'),
		       "expected -EINVAL with a position at cut %zu, got %d \"%s\"", n, ret, err);
	}
	return true;
}

/*
 * policy_cidr_match: a covering CIDR rule that lists the port and protocol, first in the
 * policy's order; a longer prefix without the port does not hide a shorter one with it (the
 * compiled tries fold covering prefixes in). policy_host_rule_takes: host rules by port and
 * protocol (TCP only unless protocols: says otherwise).
 */
static bool misc_cidr_match(char *why)
{
	static const char yaml[] = "rules:\n"
				   "  - name: web\n"
				   "    cidrs: [10.0.0.0/8]\n"
				   "    ports: [80, 8000-8099]\n"
				   "  - name: narrow\n"
				   "    cidrs: [10.1.0.0/16]\n"
				   "    ports: [443]\n"
				   "  - name: dns\n"
				   "    cidrs: [\"2001:db8::/32\"]\n"
				   "    protocols: [udp]\n"
				   "  - name: names\n"
				   "    hosts: [pypi.org]\n"
				   "    ports: [443]\n"
				   "  - name: mapped\n"
				   "    cidrs: [\"::ffff:192.0.2.0/120\", \"64:ff9b::c633:6400/120\"]\n"
				   "    ports: [22]\n"
				   "  - name: any6\n"
				   "    cidrs: [\"::/0\"]\n"
				   "    ports: [9]\n";
	static const struct {
		int family;
		const char *addr;
		uint16_t port;
		uint8_t proto;
		long want;
	} cases[] = {
		{ AF_INET, "10.2.3.4", 80, SL_PROTO_TCP, 0 },
		{ AF_INET, "10.2.3.4", 8050, SL_PROTO_UDP, 0 },
		{ AF_INET, "10.1.3.4", 80, SL_PROTO_TCP, 0 },
		{ AF_INET, "10.1.3.4", 443, SL_PROTO_TCP, 1 },
		{ AF_INET, "10.2.3.4", 443, SL_PROTO_TCP, -1 },
		{ AF_INET, "11.2.3.4", 80, SL_PROTO_TCP, -1 },
		{ AF_INET6, "2001:db8::1", 53, SL_PROTO_UDP, 2 },
		{ AF_INET6, "2001:db8::1", 53, SL_PROTO_TCP, -1 },
		{ AF_INET6, "2001:db9::1", 53, SL_PROTO_UDP, -1 },
		/* a prefix holds only its own addresses, whatever the family */
		{ AF_INET, "192.168.1.1", 80, SL_PROTO_TCP, -1 },
		{ AF_INET, "192.168.1.1", 8050, SL_PROTO_UDP, -1 },
		/*
		 * As the compiled tries judge them: a v6 CIDR naming IPv4 destinations is the IPv4
		 * prefix it names, and an address embedding an IPv4 one is that IPv4 address
		 */
		{ AF_INET, "192.0.2.7", 22, SL_PROTO_TCP, 4 },
		{ AF_INET, "198.51.100.9", 22, SL_PROTO_TCP, 4 },
		{ AF_INET, "192.0.3.7", 22, SL_PROTO_TCP, -1 },
		{ AF_INET6, "::ffff:192.0.2.7", 22, SL_PROTO_TCP, 4 },
		{ AF_INET6, "::ffff:10.2.3.4", 80, SL_PROTO_TCP, 0 },
		{ AF_INET6, "64:ff9b::a02:304", 80, SL_PROTO_TCP, 0 },
		{ AF_INET6, "::10.2.3.4", 80, SL_PROTO_TCP, 0 },
		{ AF_INET6, "::ffff:11.2.3.4", 80, SL_PROTO_TCP, -1 },
		{ AF_INET6, "::ffff:192.168.1.1", 80, SL_PROTO_TCP, -1 },
		/* ::/0 stays in the IPv6 trie: it does not hold the IPv4 space */
		{ AF_INET6, "2001:db8::1", 9, SL_PROTO_TCP, 5 },
		{ AF_INET6, "::ffff:10.2.3.4", 9, SL_PROTO_TCP, -1 },
		{ AF_INET, "10.2.3.4", 9, SL_PROTO_TCP, -1 },
	};
	char err[ERR_LEN];
	struct policy *p = NULL;
	uint8_t a[16];
	bool covers;
	size_t i;
	int ret;

	ret = policy_load_buffer(yaml, sizeof(yaml) - 1, "cidrs.yaml", &p, err, sizeof(err));
	EXPECT(!ret, "expected the policy to load, got %d \"%s\"", ret, err);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		long got;

		inet_pton(cases[i].family, cases[i].addr, a);
		got = policy_cidr_match(p, cases[i].family, a, cases[i].port, cases[i].proto);
		if (got != cases[i].want) {
			snprintf(why, WHY_LEN, "expected rule %ld for %s port %u proto %u, got %ld",
				 cases[i].want, cases[i].addr, cases[i].port, cases[i].proto, got);
			policy_free(p);
			return false;
		}
	}
	inet_pton(AF_INET, "198.51.100.9", a);
	covers = policy_cidr_covers(p, AF_INET, a);
	inet_pton(AF_INET6, "::ffff:10.9.9.9", a);
	covers = covers && policy_cidr_covers(p, AF_INET6, a);
	inet_pton(AF_INET, "192.168.1.1", a);
	covers = covers && !policy_cidr_covers(p, AF_INET, a);
	ret = policy_host_rule_takes(p, 443, SL_PROTO_TCP) == 3 &&
	      policy_host_rule_takes(p, 443, SL_PROTO_UDP) == -1 &&
	      policy_host_rule_takes(p, 80, SL_PROTO_TCP) == -1;
	policy_free(p);
	EXPECT(ret, "expected host rule 3 for 443/tcp only");
	EXPECT(covers, "expected policy_cidr_covers to cover 198.51.100.9 (64:ff9b::c633:6400/120) "
		       "and ::ffff:10.9.9.9 (10.0.0.0/8), not 192.168.1.1");
	return true;
}

/*
 * policy_cidr_match and policy_cidr_covers read an address or CIDR that embeds IPv4 as the
 * compiled tries hold it (bpf/addr.bpf.h): ::ffff:10.0.0.0/104 is compiled to 10.0.0.0/8, so it
 * covers 10.1.2.3 and ::ffff:10.1.2.3 (the program judges both by the IPv4 trie), and 10/8
 * covers 64:ff9b::a01:203. A CIDR under ::/96 that covers :: and ::1 stays IPv6: it covers
 * ::1, not ::0.0.0.5, which the programs judge as 0.0.0.5. The preexisting-socket scan and
 * replay judge by the first, the resolver's private-space check by the second.
 */
static bool misc_cidr_match_embedded(char *why)
{
	static const char yaml[] = "rules:\n"
				   "  - name: mapped\n"
				   "    cidrs: [\"::ffff:10.0.0.0/104\"]\n"
				   "    ports: [80]\n"
				   "  - name: nat64\n"
				   "    cidrs: [\"64:ff9b::c633:6400/120\"]\n"
				   "    ports: [443]\n"
				   "  - name: plain\n"
				   "    cidrs: [192.168.0.0/16]\n"
				   "    ports: [22]\n"
				   "  - name: compat\n"
				   "    cidrs: [\"::/120\"]\n"
				   "    ports: [7]\n";
	static const struct {
		int family;
		const char *addr;
		uint16_t port;
		long want;
	} cases[] = {
		{ AF_INET, "10.1.2.3", 80, 0 },
		{ AF_INET6, "::ffff:10.1.2.3", 80, 0 },
		{ AF_INET6, "64:ff9b::a01:203", 80, 0 },
		{ AF_INET6, "::ffff:11.1.2.3", 80, -1 },
		{ AF_INET, "198.51.100.7", 443, 1 },
		{ AF_INET6, "::ffff:198.51.100.7", 443, 1 },
		{ AF_INET6, "::ffff:192.168.1.1", 22, 2 },
		{ AF_INET6, "64:ff9b::c0a8:101", 22, 2 },
		{ AF_INET6, "::1", 7, 3 },
		{ AF_INET6, "::0.0.0.5", 7, -1 },
		{ AF_INET, "0.0.0.5", 7, -1 },
	};
	char err[ERR_LEN];
	struct policy *p = NULL;
	uint8_t a[16];
	bool covers;
	size_t i;
	int ret;

	ret = policy_load_buffer(yaml, sizeof(yaml) - 1, "embedded.yaml", &p, err, sizeof(err));
	EXPECT(!ret, "expected the policy to load, got %d \"%s\"", ret, err);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		long got;

		inet_pton(cases[i].family, cases[i].addr, a);
		got = policy_cidr_match(p, cases[i].family, a, cases[i].port, SL_PROTO_TCP);
		covers = policy_cidr_covers(p, cases[i].family, a);
		if (got != cases[i].want || covers != (cases[i].want >= 0)) {
			snprintf(why, WHY_LEN, "%s port %u: expected rule %ld (covered: %d), got %ld "
				 "(covered: %d)", cases[i].addr, cases[i].port, cases[i].want,
				 cases[i].want >= 0, got, covers);
			policy_free(p);
			return false;
		}
	}
	policy_free(p);
	return true;
}

/*
 * The rule numberings (policy.h): rule_id is the index plus one, SL_RULE_DEFAULT is no rule,
 * and an id past the policy's rules (a record from another policy) gives no rule to index.
 */
static bool misc_rule_ids(char *why)
{
	static const char yaml[] = "rules:\n"
				   "  - name: web\n"
				   "    cidrs: [10.0.0.0/8]\n"
				   "  - cidrs: [10.1.0.0/16]\n";
	char err[ERR_LEN], buf[64];
	struct policy *p = NULL;
	bool ok;
	int ret;

	ret = policy_load_buffer(yaml, sizeof(yaml) - 1, "ids.yaml", &p, err, sizeof(err));
	EXPECT(!ret, "expected the policy to load, got %d \"%s\"", ret, err);
	ok = policy_rule_id(0) == 1 && policy_rule_id(1) == 2 &&
	     policy_rule_index(p, SL_RULE_DEFAULT) == -1 && policy_rule_index(p, 1) == 0 &&
	     policy_rule_index(p, 2) == 1 && policy_rule_index(p, 3) == -1 &&
	     policy_rule_index(p, 65535) == -1 && policy_rule_index(NULL, 1) == -1 &&
	     policy_rule_of(p, 2) == &p->rules[1] && !policy_rule_of(p, 3) &&
	     !policy_rule_of(p, SL_RULE_DEFAULT) &&
	     !strcmp(policy_rule_id_name(p, SL_RULE_DEFAULT, buf, sizeof(buf)), "default") &&
	     !strcmp(policy_rule_id_name(p, 1, buf, sizeof(buf)), "web") &&
	     !strcmp(policy_rule_id_name(p, 2, buf, sizeof(buf)), "rule 2") &&
	     !strcmp(policy_rule_id_name(p, 7, buf, sizeof(buf)), "rule 7");
	policy_free(p);
	EXPECT(ok, "a rule numbering converted wrong");
	return true;
}

struct misc_case {
	const char *name;
	bool (*fn)(char *why);
};

/*
 * policy_rules_strictest: a shared address's rules strictest first, which is the rule the
 * programs' first match takes (caps as the programs hold them: plus one, 0 for none).
 */
static bool misc_rules_strictest(char *why)
{
	/* rule 1 uncapped, 2: request 100, 3: request 100 + total 50, 4: response 10 only */
	__u16 ids[SL_LEARNED_RULES] = { 1, 2, 3, 4 };
	const struct sl_rule_caps caps[SL_LEARNED_RULES] = {
		{ 0 },
		{ .max_req = 101 },
		{ .max_req = 101, .max_total_req = 51 },
		{ .max_resp = 11 },
	};
	const __u16 want[SL_LEARNED_RULES] = { 3, 2, 4, 1 };
	/* equal caps keep the order they were added; the list ends at its first 0 */
	__u16 tie[SL_LEARNED_RULES] = { 5, 6, 0, 0 };
	const struct sl_rule_caps tie_caps[SL_LEARNED_RULES] = {
		{ .max_req = 8 }, { .max_req = 8 }, { .max_req = 1 }, { .max_req = 1 },
	};
	__u16 resp[SL_LEARNED_RULES] = { 7, 8, 0, 0 };
	const struct sl_rule_caps resp_caps[SL_LEARNED_RULES] = {
		{ .max_resp = 0 }, { .max_resp = 5 },
	};

	policy_rules_strictest(ids, caps);
	EXPECT(!memcmp(ids, want, sizeof(ids)), "expected 3 2 4 1, got %u %u %u %u", ids[0], ids[1],
	       ids[2], ids[3]);
	policy_rules_strictest(tie, tie_caps);
	EXPECT(tie[0] == 5 && tie[1] == 6 && !tie[2] && !tie[3], "expected 5 6 0 0, got %u %u %u %u",
	       tie[0], tie[1], tie[2], tie[3]);
	policy_rules_strictest(resp, resp_caps);
	EXPECT(resp[0] == 8 && resp[1] == 7, "a response cap is stricter than none: expected 8 7, "
	       "got %u %u", resp[0], resp[1]);
	return true;
}

static const struct misc_case misc_cases[] = {
	{"misc: policy_rules_strictest: request cap, total request cap, response cap, then order",
	 misc_rules_strictest},
	{"misc: *_free(NULL) and NULL blackhole are safe", misc_free_null},
	{"misc: policy_rule_name", misc_rule_name},
	{"misc: policy_errno_name", misc_errno_name},
	{"misc: summary of seed-003.yaml says what is not enforced", misc_summary_seed},
	{"misc: summary of demo.yaml", misc_summary_demo},
	{"misc: summary explains UDP on a host rule (QUIC is not name-checked)",
	 misc_summary_udp_hosts},
	{"misc: host matching (exact, wildcard below its domain only, first rule)", misc_host_match},
	{"misc: missing file is -ENOENT", misc_missing_file},
	{"misc: input over POLICY_MAX_BYTES is -EFBIG", misc_too_big},
	{"misc: POLICY_MAX_RULES rules load, one more is refused", misc_rule_limit},
	{"misc: POLICY_MAX_CIDRS and POLICY_MAX_LIST are enforced", misc_cidr_limit},
	{"misc: every truncation of the seed fails cleanly", misc_truncations},
	{"misc: policy_cidr_match and policy_host_rule_takes (ports, protocols, first rule)",
	 misc_cidr_match},
	{"misc: policy_cidr_match/covers read embedded IPv4 as the compiled tries do",
	 misc_cidr_match_embedded},
	{"misc: rule_id and rule index convert in one place, out-of-range ids name no rule",
	 misc_rule_ids},
};

#ifndef SLUICE_SRC_DIR
#define SLUICE_SRC_DIR "."
#endif

int main(int argc, char **argv)
{
	size_t plan = ARRAY_SIZE(accept_cases) + ARRAY_SIZE(reject_cases) +
		      ARRAY_SIZE(compile_cases) + ARRAY_SIZE(blackhole_cases) +
		      ARRAY_SIZE(misc_cases);

	/* The Makefile bakes in the source tree; an argument overrides it (prove passes none). */
	if (argc > 2) {
		fprintf(stderr, "usage: %s [REPO_ROOT]\n", argv[0]);
		return 2;
	}
	root = argc == 2 ? argv[1] : SLUICE_SRC_DIR;
	printf("TAP version 13\n1..%zu\n", plan);
	for (size_t i = 0; i < ARRAY_SIZE(accept_cases); i++)
		run_accept(&accept_cases[i]);
	for (size_t i = 0; i < ARRAY_SIZE(reject_cases); i++)
		run_reject(&reject_cases[i]);
	for (size_t i = 0; i < ARRAY_SIZE(compile_cases); i++)
		run_compile(&compile_cases[i]);
	for (size_t i = 0; i < ARRAY_SIZE(blackhole_cases); i++)
		run_blackhole(&blackhole_cases[i]);
	for (size_t i = 0; i < ARRAY_SIZE(misc_cases); i++) {
		char why[WHY_LEN] = "";

		report(misc_cases[i].fn(why), misc_cases[i].name, why);
	}
	return tap_status();
}
