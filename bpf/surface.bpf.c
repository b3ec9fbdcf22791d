// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Surface layer: what a run may create and configure, before any address is involved.
 *
 * sock_create: the decision layer judges TCP and UDP (the sock_addr hooks exist for them only),
 * so every other socket of the IP families is refused at creation, unless the policy's
 * "sockets:" allows ping or raw sockets, whose packets the backstop then judges one by one: raw (needs CAP_NET_RAW, but a
 * root workload has it), ping (needs no capability where net.ipv4.ping_group_range allows the
 * user, and its sendto() is judged by no hook), SCTP, MPTCP (its extra subflows are connected by
 * the kernel, not by a judged connect()). Packet sockets and other families are refused too
 * where the kernel runs this hook for them.
 *
 * setsockopt: IPv4 options (source routing) and IPv6 routing headers make the kernel send a
 * packet to a first hop other than the address connect()/sendmsg() judged; they are refused.
 * Per-datagram control messages bypass this hook: the egress program drops such packets too.
 * IP_FREEBIND/IPV6_FREEBIND (unprivileged) let an IPv6 socket bind or send (IPV6_PKTINFO) from
 * any source address: a packet "from" another run's destination to this namespace's own address
 * gets an answer from the kernel (a TCP reset, an ICMP error) that carries that run's flow and
 * that its host side lets out (nsflows.bpf.h). So they are refused too (the transparent options
 * need CAP_NET_ADMIN, which a run does not have).
 * SO_ZEROCOPY is refused too: MSG_ZEROCOPY sends the caller's own pages, which it can rewrite
 * after the TLS check read them and before the receiver copies them (see skb.bpf.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "sluice.h"
#include "events.bpf.h"
#include "net.bpf.h"

#define IP_OPTIONS 4
#define IPV6_2292RTHDR 5
#define IPV6_RTHDR 57
#define IP_FREEBIND 15
#define IPV6_FREEBIND 78
#define SOL_SOCKET 1
#define SO_ZEROCOPY 60

char LICENSE[] SEC("license") = "Dual BSD/GPL";


/*
 * The kinds the decision layer can judge, and ping and raw sockets where the policy allows them
 * ("sockets:"): no sock_addr hook sees their sends, but the backstop judges every packet they
 * emit by its own headers.
 */
static __always_inline bool socket_kind_allowed(__u32 family, __u32 type, __u32 protocol)
{
	if (family == AF_UNIX || family == AF_NETLINK)
		return true; /* local to the machine: nothing leaves through them */
	if (family != AF_INET && family != AF_INET6)
		return false;
	if ((sl_cfg.sockets & SL_SOCKETS_PING) && type == SOCK_DGRAM &&
	    ((family == AF_INET && protocol == IPPROTO_ICMP) ||
	     (family == AF_INET6 && protocol == IPPROTO_ICMPV6)))
		return true;
	if ((sl_cfg.sockets & SL_SOCKETS_RAW) && type == SOCK_RAW)
		return true;
	return (type == SOCK_STREAM && protocol == IPPROTO_TCP) ||
	       (type == SOCK_DGRAM && protocol == IPPROTO_UDP);
}

static __always_inline void record_refusal(__u8 hook, __u8 reason, __u32 family, __u32 kind,
					   __u32 protocol)
{
	struct sl_decision_event ev = {};
	__u64 id = bpf_get_current_pid_tgid();

	ev.family = (__u8)family;
	ev.protocol = (__u8)protocol;
	/* protocols above 255 exist (MPTCP is 262): the full value rides in rule_id */
	ev.rule_id = (__u16)protocol;
	ev.port = (__u16)kind;
	ev.hook = hook;
	ev.verdict = SL_VERDICT_DENY;
	ev.reason = reason;
	ev.enforced = 1;
	ev.pid = (__u32)id;
	ev.tgid = id >> 32;
	ev.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	event_hdr_init(&ev.hdr, SL_EV_DECISION, sizeof(ev));
	event_submit(&ev, sizeof(ev), hook, true);
}

SEC("cgroup/sock_create")
int sl_sock_create(struct bpf_sock *ctx)
{
	if (socket_kind_allowed(ctx->family, ctx->type, ctx->protocol))
		return 1;
	record_refusal(SL_HOOK_SOCK_CREATE, SL_REASON_SOCKET_KIND, ctx->family, ctx->type,
		       ctx->protocol);
	return 0;
}

SEC("cgroup/setsockopt")
int sl_setsockopt(struct bpf_sockopt *ctx)
{
	/* Each field read once, as a plain load: the verifier refuses ctx pointer arithmetic. */
	__s32 level = ctx->level, optname = ctx->optname, optlen = ctx->optlen;
	struct bpf_sock *sk = ctx->sk;
	bool reroutes, zerocopy;

	barrier_var(level);
	barrier_var(optname);
	reroutes = (level == SOL_IP && optname == IP_OPTIONS) ||
		   (level == IPPROTO_IPV6 && (optname == IPV6_RTHDR || optname == IPV6_2292RTHDR));
	/* any value: both set one flag of the socket, which an IPv6 socket honours either way */
	if ((level == SOL_IP && optname == IP_FREEBIND) ||
	    (level == IPPROTO_IPV6 && optname == IPV6_FREEBIND)) {
		record_refusal(SL_HOOK_SETSOCKOPT, SL_REASON_SOURCE_ROUTE, sk ? sk->family : 0,
			       optname, level);
		return 0;
	}
	/* Any value: the kernel's own check (an int) comes after this hook. */
	zerocopy = level == SOL_SOCKET && optname == SO_ZEROCOPY;
	/* Clearing them (an empty value) is harmless. */
	if ((!reroutes && !zerocopy) || optlen == 0) {
		/* 1 with optlen untouched: the kernel uses the caller's own buffer */
		return 1;
	}
	record_refusal(SL_HOOK_SETSOCKOPT,
		       zerocopy ? SL_REASON_SOCKET_KIND : SL_REASON_SOURCE_ROUTE,
		       sk ? sk->family : 0, optname, level);
	return 0;
}
