/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run's allowlist and how a destination is judged against it, shared by every layer that
 * judges one: the decision layer at connect()/sendmsg(), the backstop on every packet the run's
 * sockets send, and the tc program on the host side of the run's network namespace. Each object
 * declares the maps; the loader makes the other layers reuse the decision layer's, so there is
 * one allowlist per run and the layers can never disagree about it.
 */
#ifndef SLUICE_POLICY_BPF_H
#define SLUICE_POLICY_BPF_H

#include "sluice.h"
#include "addr.bpf.h"
#include "net.bpf.h"
#include "cfg.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1); /* resized by the loader to the compiled policy */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_lpm4_key);
	__type(value, struct sl_dst_rules);
} sl_dst4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_lpm6_key);
	__type(value, struct sl_dst_rules);
} sl_dst6 SEC(".maps");

/*
 * Addresses the run's resolver answered for listed names, and the ports of each host rule.
 * Allocated on use, not for their whole capacity at load (12 MiB a run): only the resolver
 * (userspace) adds to them, the programs only look up. An address the kernel has no memory for
 * is not learned: the resolver refuses the answer and says why, so the client never gets an
 * address that connect() would not find.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct sl_learned);
} sl_learned4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_learned6_key);
	__type(value, struct sl_learned);
} sl_learned6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* n_rules + 1, indexed by rule_id */
	__type(key, __u32);
	__type(value, struct sl_dst_rules);
} sl_rule_ports SEC(".maps");

struct verdict {
	__u8 verdict;
	__u8 reason;
	__u16 rule_id;
	bool learned; /* allowed because the run's resolver produced the address */
};

static __always_inline __u8 proto_bit(__u32 protocol)
{
	if (protocol == IPPROTO_TCP)
		return SL_PROTO_TCP;
	if (protocol == IPPROTO_UDP)
		return SL_PROTO_UDP;
	/* ping sockets pass through connect() too (their sends meet only the backstop) */
	if (protocol == IPPROTO_ICMP || protocol == IPPROTO_ICMPV6)
		return SL_PROTO_ICMP;
	return 0;
}

/*
 * First entry of the longest matching prefix that covers this port and protocol. A global
 * function, so that the verifier walks its loop once, on its own: inlined, the loop was walked
 * again for the CIDR rules and for each of a learned address's rules, on every path into them.
 * r may be NULL (no prefix matched); rule_id never is, but the verifier lets it be.
 */
__noinline bool rules_match(const struct sl_dst_rules *r, __u32 port, __u32 proto, __u16 *rule_id)
{
	int i;

	if (!r || !rule_id)
		return false;
	for (i = 0; i < SL_MAX_PORT_RULES; i++) {
		const struct sl_port_rule *e = &r->e[i];

		if (i >= r->count)
			break;
		/* ICMP has no ports: a rule that lists it covers all of it */
		if ((e->protocols & proto) &&
		    (proto == SL_PROTO_ICMP || (port >= e->port_lo && port <= e->port_hi))) {
			*rule_id = e->rule_id;
			return true;
		}
	}
	return false;
}

static __always_inline void policy_default(struct verdict *v, __u8 proto)
{
	v->rule_id = SL_RULE_DEFAULT;
	if (sl_cfg.default_allow) {
		v->verdict = SL_VERDICT_ALLOW;
		v->reason = SL_REASON_DEFAULT_ALLOW;
	} else {
		v->verdict = SL_VERDICT_DENY;
		v->reason = proto ? SL_REASON_DEFAULT_DENY : SL_REASON_PROTOCOL;
	}
}

/*
 * An address the resolver learned: allowed if one of the rules it was learned under covers it,
 * under the first that does. Userspace writes an address's rules strictest first
 * (loader_rules_strictest: smallest per-flow, then total request cap, then response cap), so
 * that on an address several names share (a CDN's) a flow no name tells apart (plain HTTP, UDP)
 * gets the strictest caps of those names, whichever was answered first; a TLS flow is put under
 * its server name's own rule at its ClientHello (skb.bpf.c judge_client_hello). Ordered here, the
 * rank cost every inlined copy of the decision some hundred instructions.
 */
static __always_inline bool learned_match(const struct sl_learned *l, __u16 port, __u8 proto,
					  __u16 *rule_id)
{
	int i;

	if (!l)
		return false;
	if (l->expires_ns && l->expires_ns < bpf_ktime_get_boot_ns())
		return false;
	for (i = 0; i < SL_LEARNED_RULES; i++) {
		__u32 rid = l->rule_ids[i];

		if (!rid)
			break;
		if (rules_match(bpf_map_lookup_elem(&sl_rule_ports, &rid), port, proto, rule_id))
			return true;
	}
	return false;
}

static __always_inline void set_verdict(struct verdict *v, __u8 verdict, __u8 reason,
					__u16 rule_id)
{
	v->verdict = verdict;
	v->reason = reason;
	v->rule_id = rule_id;
}

/*
 * CIDR rules first, then the addresses the run's resolver learned, then the policy default. The
 * learned entry names the host even when a CIDR rule allows: the log shows the name either way.
 */
static __always_inline void decide_by_rules(struct verdict *v, struct sl_decision_event *ev,
					    const struct sl_dst_rules *cidr,
					    const struct sl_learned *learned, __u16 port, __u8 proto)
{
	if (learned)
		ev->host_id = learned->host_id;
	if (proto && rules_match(cidr, port, proto, &v->rule_id)) {
		set_verdict(v, SL_VERDICT_ALLOW, SL_REASON_RULE, v->rule_id);
		return;
	}
	if (proto && learned_match(learned, port, proto, &v->rule_id)) {
		set_verdict(v, SL_VERDICT_ALLOW, SL_REASON_RULE, v->rule_id);
		v->learned = true;
		return;
	}
	policy_default(v, proto);
}

static __always_inline void decide_v4(struct verdict *v, struct sl_decision_event *ev, __u32 addr,
				      __u16 port, __u8 proto)
{
	struct sl_lpm4_key key = { .prefixlen = 32 };

	if (v4_is_blackholed(addr)) {
		set_verdict(v, SL_VERDICT_DENY, SL_REASON_BLACKHOLE, SL_RULE_DEFAULT);
		return;
	}
	__builtin_memcpy(key.addr, &addr, 4);
	decide_by_rules(v, ev, bpf_map_lookup_elem(&sl_dst4, &key),
			bpf_map_lookup_elem(&sl_learned4, &addr), port, proto);
}

static __always_inline void decide_v6(struct verdict *v, struct sl_decision_event *ev,
				      const __u32 w[4], __u16 port, __u8 proto)
{
	struct sl_lpm6_key key = { .prefixlen = 128 };
	bool embedded;
	__u32 v4 = 0;

	/* what the address decides is addr.bpf.h's v6_fate, the userspace judges' too */
	switch (v6_fate(w, sl_cfg.default_allow, &v4, &embedded)) {
	case SL_DST_BLACKHOLE:
		if (!embedded) {
			set_verdict(v, SL_VERDICT_DENY, SL_REASON_BLACKHOLE, SL_RULE_DEFAULT);
			return;
		}
		/*
		 * The IPv4 address it carries is blackholed: decide_v4 denies it. One inlined copy
		 * of decide_v4 for both cases (two cost connect6 30 instructions).
		 */
		/* fallthrough */
	case SL_DST_V4:
		ev->embedded_v4 = 1;
		__builtin_memcpy(ev->eff_addr, &v4, 4);
		decide_v4(v, ev, v4, port, proto);
		return;
	case SL_DST_RELAY:
		set_verdict(v, SL_VERDICT_DENY, SL_REASON_V4_RELAY, SL_RULE_DEFAULT);
		return;
	case SL_DST_V6:
		break;
	}
	__builtin_memcpy(key.addr, w, 16);
	decide_by_rules(v, ev, bpf_map_lookup_elem(&sl_dst6, &key),
			bpf_map_lookup_elem(&sl_learned6, key.addr), port, proto);
}

/*
 * The verdict on ev's destination (ev->addr, ev->port) for proto (proto_bit), into *v and ev's
 * host_id, embedded_v4 and eff_addr: decide_dst4 for an IPv4 one, decide_dst6 for an IPv6 one,
 * decide_dst for either (by ev->family). Every program decides through these. Global functions,
 * so that the verifier checks each once, on its own: inlined, every path through them (the
 * blackhole and embedded-v4 forms of v6_fate, the rule and learned-address loops) went on
 * through the caller's record, caps and redirect code and was verified there again (connect6:
 * 280k instructions processed). Their callers learn nothing of what they wrote (the verifier
 * takes the memory passed as overwritten) and need not. The verifier lets a global function's
 * pointer arguments be NULL: the checks are for it.
 */
/* A global function's NULL arguments (unreachable: callers pass their stack): a denial if any. */
static __always_inline int deny_unjudged(struct verdict *v)
{
	if (v) {
		v->verdict = SL_VERDICT_DENY;
		v->reason = SL_REASON_DEFAULT_DENY;
	}
	return 0;
}

__noinline int decide_dst4(struct verdict *v, struct sl_decision_event *ev, __u32 proto)
{
	__u32 addr;

	if (!v || !ev)
		return deny_unjudged(v);
	__builtin_memcpy(&addr, ev->addr, 4);
	decide_v4(v, ev, addr, ev->port, proto);
	return 0;
}

__noinline int decide_dst6(struct verdict *v, struct sl_decision_event *ev, __u32 proto)
{
	__u32 w[4];

	if (!v || !ev)
		return deny_unjudged(v);
	__builtin_memcpy(w, ev->addr, 16);
	decide_v6(v, ev, w, ev->port, proto);
	return 0;
}

static __always_inline void decide_dst(struct verdict *v, struct sl_decision_event *ev,
				       __u32 proto)
{
	if (ev->family == AF_INET)
		decide_dst4(v, ev, proto);
	else
		decide_dst6(v, ev, proto);
}

#endif /* SLUICE_POLICY_BPF_H */
