/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Egress policy: the strict YAML parser (policy_load_*) and the compiler that turns a parsed policy
 * into the entries of the BPF LPM tries (policy_compile).
 *
 * Parsing is strict: unknown keys, duplicate keys, wrong types, bad CIDRs, out-of-range ports and
 * CIDRs inside the fixed blackhole are errors; the message names the file, line and column and
 * what was expected ("policy.yaml:7:12: rules[2].ports[0]: expected a port 1-65535 or a range
 * LO-HI, got \"70000\"").
 */
#ifndef SLUICE_POLICY_H
#define SLUICE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>

#include "../bpf/sluice.h"

enum policy_default {
	POLICY_DEFAULT_DENY = 0,
	POLICY_DEFAULT_ALLOW = 1,
};

/* Bits of struct policy.require ("require:"). */
#define POLICY_REQUIRE_LSM 0x01 /* the BPF-LSM layer must load, or the run does not start */

struct policy_cidr {
	uint8_t family;	   /* AF_INET or AF_INET6 */
	uint8_t prefixlen; /* 0-32 or 0-128 */
	uint8_t addr[16];  /* network order, host bits cleared; 4 bytes used for AF_INET */
};

struct policy_port_range {
	uint16_t lo;
	uint16_t hi; /* inclusive; lo == hi for a single port */
};

struct policy_rule {
	char *name;	    /* from "name:", or NULL; see policy_rule_name() */
	unsigned int line;  /* 1-based position of the rule in the file */
	unsigned int column;

	char **hosts; /* exact names ("pypi.org") or wildcards ("*.example.com"), lower-cased */
	size_t n_hosts;
	struct policy_cidr *cidrs;
	size_t n_cidrs;
	struct policy_port_range *ports; /* none: any port */
	size_t n_ports;
	uint8_t protocols; /* SL_PROTO_* bits; "protocols:" absent means TCP|UDP */
	char **methods;	   /* upper-cased HTTP methods; not enforceable in the kernel */
	size_t n_methods;
	bool has_max_request_bytes;
	uint64_t max_request_bytes;
	bool has_max_response_bytes;
	uint64_t max_response_bytes;
	/* the sum over the run's flows to one host (a name, or an address for CIDR rules) */
	bool has_max_total_request_bytes;
	uint64_t max_total_request_bytes;
	bool has_max_total_response_bytes;
	uint64_t max_total_response_bytes;
};

/*
 * An alert_on condition: "deny" (every denial: connect, name, TLS flow, byte cap), or
 * "allow where FIELD OP NUMBER" on finished allowed flows, FIELD one of request_bytes,
 * response_bytes, bytes (both ways), duration_ms; OP one of > >= < <= ==; NUMBER may use
 * underscores (10_000_000).
 */
enum policy_alert_kind {
	POLICY_ALERT_DENY = 1,
	POLICY_ALERT_FLOW = 2,
};

enum policy_alert_field {
	POLICY_FIELD_REQUEST_BYTES = 1,
	POLICY_FIELD_RESPONSE_BYTES = 2,
	POLICY_FIELD_BYTES = 3,
	POLICY_FIELD_DURATION_MS = 4,
};

enum policy_alert_op {
	POLICY_OP_GT = 1,
	POLICY_OP_GE = 2,
	POLICY_OP_LT = 3,
	POLICY_OP_LE = 4,
	POLICY_OP_EQ = 5,
};

struct policy_alert {
	enum policy_alert_kind kind;
	enum policy_alert_field field; /* POLICY_ALERT_FLOW only */
	enum policy_alert_op op;
	uint64_t value;
};

/* Parse one alert_on string; -EINVAL with a reason in why. */
int policy_alert_parse(const char *s, struct policy_alert *out, char *why, size_t why_len);

/* Does a finished allowed flow with these counts meet the condition? */
bool policy_alert_flow_matches(const struct policy_alert *a, uint64_t req_bytes,
			       uint64_t resp_bytes, uint64_t duration_ms);

struct policy {
	char *path; /* as given to policy_load_file, or the name given to policy_load_buffer */
	enum policy_default default_verdict;
	enum sl_mode mode;
	int deny_errno; /* positive errno returned to a denied connect/sendmsg; EPERM by default */
	struct policy_rule *rules;
	size_t n_rules;
	bool log_allow; /* "log:" absent means both */
	bool log_deny;
	char **alert_on; /* verbatim, as written */
	struct policy_alert *alerts; /* alert_on, parsed: alerts[i] is alert_on[i] */
	size_t n_alert_on;
	char *request_access; /* URL template; "{host}" is replaced by the denied destination */
	unsigned int sockets; /* SL_SOCKETS_*: kinds beyond TCP and UDP the run may create */
	unsigned int require; /* POLICY_REQUIRE_*: layers without which the run does not start */
	/* SHA-256 of the policy's bytes: run_start names it, sluice resume checks it */
	unsigned char sha256[32];
};

/*
 * Parse a policy. On error returns -EINVAL (or -ENOMEM, -errno of the read) and writes a one-line
 * message with file:line:column into err; *out is untouched.
 */
int policy_load_file(const char *path, struct policy **out, char *err, size_t err_len);
/*
 * Read an open policy file to its end into a malloc()ed *out (*out_len bytes), at most
 * POLICY_MAX_BYTES (else -EFBIG); nothing is parsed. name is for err. 0 or -errno.
 */
int policy_read_fd(int fd, const char *name, char **out, size_t *out_len, char *err,
		   size_t err_len);
int policy_load_buffer(const char *buf, size_t len, const char *name, struct policy **out,
		       char *err, size_t err_len);
void policy_free(struct policy *p);

/* "name" if the rule has one, else "rule N" (1-based), written into buf. */
const char *policy_rule_name(const struct policy *p, size_t rule_idx, char *buf, size_t buf_len);

/*
 * The two numberings of a rule, converted here only: its index in p->rules (0-based, -1: none)
 * and its rule_id, the kernel's and the maps' (bpf/sluice.h: 1-based, SL_RULE_DEFAULT = 0 for
 * the policy's default). policy_rule_index and policy_rule_of refuse (-1, NULL) the default and
 * any rule_id p has no rule for (a record made under another policy, or a forged one), so no
 * caller can index p->rules with one. policy_rule_id_name: the name a log line gives a rule_id,
 * "default" for SL_RULE_DEFAULT.
 */
uint16_t policy_rule_id(size_t rule_idx);
long policy_rule_index(const struct policy *p, uint32_t rule_id);
const struct policy_rule *policy_rule_of(const struct policy *p, uint32_t rule_id);
const char *policy_rule_id_name(const struct policy *p, uint32_t rule_id, char *buf,
				size_t buf_len);

/*
 * Put a learned address's (or a server name's) rule_ids strictest first, in place: the smallest
 * per-flow request cap (no cap counts as the largest), then the smallest total request cap
 * (max_total_request_bytes), then the smallest response cap, then the order they were in (the
 * order they were added). caps[i] is rule_ids[i]'s, as the programs hold them (plus one, 0 for
 * none: struct sl_rule_caps); the list ends at the first 0. The programs take the first rule
 * that allows a flow's port (bpf/policy.bpf.h learned_match): on an address several names share,
 * the strictest of theirs, whichever name was answered first. Every writer of an sl_learned
 * entry's or an sl_sni_name's rules orders them here.
 */
void policy_rules_strictest(__u16 rule_ids[SL_LEARNED_RULES],
			    const struct sl_rule_caps caps[SL_LEARNED_RULES]);

/*
 * What rule r is, apart from its name: the SHA-256 of a canonical form of the destinations it
 * allows, into out. Its hosts, CIDRs (each as the tries judge it: ::ffff:10.0.0.0/104 is
 * 10.0.0.0/8), ports (merged: "80, 81" is "80-81"; none is any port, not 1-65535) and protocols,
 * each a set: their order and repeats in the file do not change it. Its caps, methods, place
 * and line do not enter it: a rule whose cap is raised or lowered is the same rule. A live
 * switch carries an unnamed rule's host budgets (max_total_*) to the new policy's rule with the
 * same identity (userspace/switch_rules.c, sluice-policy.5): a field added to struct policy_rule
 * that widens or narrows what the rule allows belongs here. 0, or -ENOMEM.
 */
int policy_rule_identity(const struct policy_rule *r, unsigned char out[32]);

/* Map entries for the BPF LPM tries: one per distinct prefix, shorter covering prefixes folded in. */
struct policy_lpm4_entry {
	struct sl_lpm4_key key;
	struct sl_dst_rules val;
};

struct policy_lpm6_entry {
	struct sl_lpm6_key key;
	struct sl_dst_rules val;
};

struct policy_compiled {
	struct policy_lpm4_entry *v4;
	size_t n_v4;
	struct policy_lpm6_entry *v6;
	size_t n_v6;
	struct sl_dst_rules *rule_ports; /* indexed by rule_id; [0] (the default) is empty */
	struct sl_rule_caps *rule_caps;	 /* indexed by rule_id, n_rule_ports of them */
	size_t n_rule_ports;		 /* n_rules + 1 */
};

/*
 * The first rule (0-based index) whose hosts match name, or -1. "example.com" matches only
 * itself; "*.example.com" matches any name below example.com (a.example.com, a.b.example.com)
 * but not example.com itself. Names are compared lower-case, without a trailing dot.
 */
long policy_match_host(const struct policy *p, const char *name);

/* The next rule at or after index start whose hosts match name, or -1. */
long policy_match_host_from(const struct policy *p, const char *name, size_t start);

/* True if some CIDR rule of the policy covers addr (4 or 16 bytes, by family), as the tries do. */
bool policy_cidr_covers(const struct policy *p, int family, const uint8_t *addr);

/*
 * The first rule (0-based) with a CIDR covering addr (4 or 16 bytes, by family) that lists port
 * and protocol proto (one SL_PROTO_* bit), or -1: whether the compiled LPM tries allow it (they
 * hold every covering prefix's rules), judged without them (connections made before a run's
 * programs were attached). An address or CIDR that embeds IPv4 is read as the tries hold it
 * (bpf/addr.bpf.h: ::ffff:10.1.2.3 and ::ffff:10.0.0.0/104 are IPv4); the blackhole and relays
 * are the caller's (v6_route); host rules are not looked at.
 */
long policy_cidr_match(const struct policy *p, int family, const uint8_t *addr, uint16_t port,
		       uint8_t proto);

/*
 * Whether rule r lists this port (no ports: any; ICMP has none) and protocol proto (one
 * SL_PROTO_* bit): what the kernel's rule_ports entry of the rule holds.
 */
bool policy_rule_takes(const struct policy_rule *r, uint16_t port, uint8_t proto);

/* The first rule with hosts that lists port and protocol proto (SL_PROTO_*), or -1. */
long policy_host_rule_takes(const struct policy *p, uint16_t port, uint8_t proto);

/*
 * Compile the CIDR/port/protocol rules (host rules produce no entries: they allow nothing until
 * the resolver fills them). rule_id in the entries is the 1-based rule index. Fails with -E2BIG and
 * a message naming the prefix when more than SL_MAX_PORT_RULES entries would cover one prefix.
 */
int policy_compile(const struct policy *p, struct policy_compiled **out, char *err, size_t err_len);
void policy_compiled_free(struct policy_compiled *c);

/*
 * The human summary printed by "sluice policy check": what is enforced in the kernel, what is not
 * (methods on TLS, host rules until the resolver lands), and the fixed blackhole.
 */
void policy_print_summary(const struct policy *p, const struct policy_compiled *c, FILE *out);

/*
 * The CIDR c as the compiled tries hold it: a v6 CIDR naming IPv4 destinations (::ffff:10.0.0.0/104,
 * 64:ff9b::/96 and ::/96 forms) as its IPv4 prefix (10.0.0.0/8), any other as it is.
 */
void policy_cidr_judged_form(const struct policy_cidr *c, struct policy_cidr *out);

/*
 * Where the compiled tries look addr (4 or 16 bytes, by family) up: the family returned, the
 * address in out (4 bytes used for AF_INET). An IPv6 address the programs judge as the IPv4 one
 * it carries (bpf/addr.bpf.h, v6_route) is that IPv4 address.
 */
int policy_judged_addr(int family, const uint8_t *addr, uint8_t out[16]);

/* The fixed blackhole, shared with the BPF side's inline checks and with the parser's refusal. */
bool policy_cidr_in_blackhole(const struct policy_cidr *c);

/*
 * Limits of the parser. Inputs and counts beyond them are refused with a message, so nothing a
 * policy file says can make the parser or the compiler grow without bound.
 */
#define POLICY_MAX_BYTES (16u << 20) /* policy_load_* fail with -EFBIG above this size */
#define POLICY_MAX_RULES 65535	     /* rule_id is a __u16 and 0 is SL_RULE_DEFAULT */
#define POLICY_MAX_CIDRS 100000	     /* in the whole policy */
#define POLICY_MAX_LIST 100000	     /* elements of any one sequence */
#define POLICY_MAX_ITEMS 1000000     /* elements of all sequences together */

/* "10.0.0.0/8", "2001:db8::/32". Returns 0, -EINVAL for a bad family or -ENOSPC if buf is short. */
int policy_cidr_format(const struct policy_cidr *c, char *buf, size_t buf_len);

/* "EPERM" for EPERM and the other errnos a policy may name in deny_errno; NULL for any other. */
const char *policy_errno_name(int err);

#endif /* SLUICE_POLICY_H */
