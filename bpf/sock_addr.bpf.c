// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decision layer: cgroup sock_addr programs that judge every connect() and unconnected sendmsg()
 * of a run against its allowlist, at syscall time, and return an immediate errno on denial.
 *
 * One instance of this object is loaded per run and attached (bpf_link) at the run's cgroup, the
 * way systemd loads socket-bind per unit. The kernel runs a cgroup's effective programs for every
 * socket created in its subtree, so a process that makes a child cgroup is still judged by its
 * run's programs and maps; one run's maps can never open anything for another run.
 *
 * Order of checks: the fixed blackhole (every form) first, then the socket protocol, then the
 * policy's LPM tries, then the policy default. What cannot be classified is denied.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice.h"
#include "addr.bpf.h"
#include "events.bpf.h"

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define EPERM 1

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load. */
const volatile __u8 sl_cfg_mode = SL_MODE_ENFORCE;
const volatile __u8 sl_cfg_default_allow = 0;
const volatile __s32 sl_cfg_deny_errno = EPERM;

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
 * Last destination an unconnected UDP socket was allowed to reach. A DNS client or a game of
 * sendto() would otherwise produce one allow record per datagram; we record an allow once per
 * (socket, destination) change. Denials are always recorded, per datagram.
 */
struct sl_sk_last_dst {
	__u8 addr[16] __attribute__((aligned(8)));
	__u16 port;
	__u8 valid;
	__u8 pad[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sl_sk_last_dst);
} sl_sk_last SEC(".maps");

struct verdict {
	__u8 verdict;
	__u8 reason;
	__u16 rule_id;
};

static __always_inline __u8 proto_bit(__u32 protocol)
{
	if (protocol == IPPROTO_TCP)
		return SL_PROTO_TCP;
	if (protocol == IPPROTO_UDP)
		return SL_PROTO_UDP;
	return 0;
}

/* First entry of the longest matching prefix that covers this port and protocol. */
static __always_inline bool rules_match(const struct sl_dst_rules *r, __u16 port, __u8 proto,
					__u16 *rule_id)
{
	int i;

	if (!r)
		return false;
	for (i = 0; i < SL_MAX_PORT_RULES; i++) {
		const struct sl_port_rule *e = &r->e[i];

		if (i >= r->count)
			break;
		if ((e->protocols & proto) && port >= e->port_lo && port <= e->port_hi) {
			*rule_id = e->rule_id;
			return true;
		}
	}
	return false;
}

static __always_inline void policy_default(struct verdict *v, __u8 proto)
{
	v->rule_id = SL_RULE_DEFAULT;
	if (sl_cfg_default_allow) {
		v->verdict = SL_VERDICT_ALLOW;
		v->reason = SL_REASON_DEFAULT_ALLOW;
	} else {
		v->verdict = SL_VERDICT_DENY;
		v->reason = proto ? SL_REASON_DEFAULT_DENY : SL_REASON_PROTOCOL;
	}
}

static __always_inline void decide_v4(struct verdict *v, __u32 addr, __u16 port, __u8 proto)
{
	struct sl_lpm4_key key = { .prefixlen = 32 };

	if (v4_is_blackholed(addr)) {
		v->verdict = SL_VERDICT_DENY;
		v->reason = SL_REASON_BLACKHOLE;
		v->rule_id = SL_RULE_DEFAULT;
		return;
	}
	__builtin_memcpy(key.addr, &addr, 4);
	if (proto && rules_match(bpf_map_lookup_elem(&sl_dst4, &key), port, proto, &v->rule_id)) {
		v->verdict = SL_VERDICT_ALLOW;
		v->reason = SL_REASON_RULE;
		return;
	}
	policy_default(v, proto);
}

static __always_inline void decide_v6(struct verdict *v, struct sl_decision_event *ev,
				      const __u32 w[4], __u16 port, __u8 proto)
{
	struct sl_lpm6_key key = { .prefixlen = 128 };
	__u32 v4 = 0;

	if (v6_native_is_blackholed(w)) {
		v->verdict = SL_VERDICT_DENY;
		v->reason = SL_REASON_BLACKHOLE;
		v->rule_id = SL_RULE_DEFAULT;
		return;
	}
	if (v6_embeds_v4_for_policy(w, &v4)) {
		ev->embedded_v4 = 1;
		__builtin_memcpy(ev->eff_addr, &v4, 4);
		decide_v4(v, v4, port, proto);
		return;
	}
	if (v6_embeds_blackholed_v4(w, &v4)) {
		ev->embedded_v4 = 1;
		__builtin_memcpy(ev->eff_addr, &v4, 4);
		v->verdict = SL_VERDICT_DENY;
		v->reason = SL_REASON_BLACKHOLE;
		v->rule_id = SL_RULE_DEFAULT;
		return;
	}
	__builtin_memcpy(key.addr, w, 16);
	if (proto && rules_match(bpf_map_lookup_elem(&sl_dst6, &key), port, proto, &v->rule_id)) {
		v->verdict = SL_VERDICT_ALLOW;
		v->reason = SL_REASON_RULE;
		return;
	}
	policy_default(v, proto);
}

/* clang does not lower memcmp for BPF. */
static __always_inline bool addr16_equal(const __u8 *a, const __u8 *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1];
}

/* True when this allowed datagram goes where the socket's last allowed one went. */
static __always_inline bool sendmsg_allow_already_recorded(struct bpf_sock_addr *ctx,
							   const struct sl_decision_event *ev)
{
	struct sl_sk_last_dst *last;
	struct bpf_sock *sk = ctx->sk;

	if (!sk)
		return false;
	last = bpf_sk_storage_get(&sl_sk_last, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!last)
		return false;
	if (last->valid && last->port == ev->port && addr16_equal(last->addr, ev->addr))
		return true;
	__builtin_memcpy(last->addr, ev->addr, sizeof(last->addr));
	last->port = ev->port;
	last->valid = 1;
	return false;
}

/* Record the decision and turn it into the program's return value. */
static __always_inline int finish(struct bpf_sock_addr *ctx, struct sl_decision_event *ev,
				  const struct verdict *v, __u8 hook, bool is_sendmsg)
{
	bool deny = v->verdict == SL_VERDICT_DENY;
	/* Report mode lets denials through, except the blackhole, which no mode or policy opens. */
	bool enforce = deny && (sl_cfg_mode == SL_MODE_ENFORCE || v->reason == SL_REASON_BLACKHOLE);
	__u64 id = bpf_get_current_pid_tgid();

	ev->verdict = v->verdict;
	ev->reason = v->reason;
	ev->rule_id = v->rule_id;
	ev->enforced = enforce || !deny;
	ev->hook = hook;
	ev->protocol = ctx->protocol;
	ev->pid = (__u32)id;
	ev->tgid = id >> 32;
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->sock_cookie = bpf_get_socket_cookie(ctx);
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));

	if (deny || !is_sendmsg || !sendmsg_allow_already_recorded(ctx, ev)) {
		event_hdr_init(&ev->hdr, SL_EV_DECISION, sizeof(*ev));
		event_submit(ev, sizeof(*ev), hook, deny);
	}

	if (!enforce)
		return 1;
	/* bpf_set_retval (5.18+) picks the errno; without it the kernel returns EPERM. */
	if (sl_cfg_deny_errno != EPERM)
		bpf_set_retval(-sl_cfg_deny_errno);
	return 0;
}

static __always_inline int judge4(struct bpf_sock_addr *ctx, __u8 hook, bool is_sendmsg)
{
	struct sl_decision_event ev = {};
	struct verdict v = {};
	__u32 addr = ctx->user_ip4;
	__u8 proto = proto_bit(ctx->protocol);

	ev.family = AF_INET;
	ev.port = bpf_ntohs((__u16)ctx->user_port);
	__builtin_memcpy(ev.addr, &addr, 4);
	decide_v4(&v, addr, ev.port, proto);
	return finish(ctx, &ev, &v, hook, is_sendmsg);
}

static __always_inline int judge6(struct bpf_sock_addr *ctx, __u8 hook, bool is_sendmsg)
{
	struct sl_decision_event ev = {};
	struct verdict v = {};
	__u32 w[4];
	__u8 proto = proto_bit(ctx->protocol);

	/* The context only allows 4-byte loads of user_ip6. */
	w[0] = ctx->user_ip6[0];
	w[1] = ctx->user_ip6[1];
	w[2] = ctx->user_ip6[2];
	w[3] = ctx->user_ip6[3];
	ev.family = AF_INET6;
	ev.port = bpf_ntohs((__u16)ctx->user_port);
	__builtin_memcpy(ev.addr, w, 16);
	decide_v6(&v, &ev, w, ev.port, proto);
	return finish(ctx, &ev, &v, hook, is_sendmsg);
}

SEC("cgroup/connect4")
int sl_connect4(struct bpf_sock_addr *ctx)
{
	return judge4(ctx, SL_HOOK_CONNECT4, false);
}

SEC("cgroup/connect6")
int sl_connect6(struct bpf_sock_addr *ctx)
{
	return judge6(ctx, SL_HOOK_CONNECT6, false);
}

SEC("cgroup/sendmsg4")
int sl_sendmsg4(struct bpf_sock_addr *ctx)
{
	return judge4(ctx, SL_HOOK_SENDMSG4, true);
}

SEC("cgroup/sendmsg6")
int sl_sendmsg6(struct bpf_sock_addr *ctx)
{
	return judge6(ctx, SL_HOOK_SENDMSG6, true);
}
