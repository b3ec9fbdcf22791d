// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hardening layer (BPF LSM, where the kernel runs it: CONFIG_BPF_LSM and "bpf" in the active
 * LSMs). Optional: the loader probes it, and a run without it says so in run_start.
 *
 * socket_create, as an lsm_cgroup program on the run's cgroup (judged by the creating task's
 * cgroup): the cgroup sock_create hook sees inet sockets only, so packet sockets (frames that
 * pass no cgroup hook, P13), vsock (a path to the hypervisor), TIPC, RDS and every other family
 * would be created unseen. Only unix, netlink and inet sockets may be created; inet kinds are
 * then narrowed by the surface layer.
 *
 * socket_connect and socket_sendmsg, as global LSM programs that act only for tasks inside the
 * run's cgroup: the cgroup sock_addr hooks judge a socket by the cgroup that created it, so a
 * socket created outside the run and handed in (SCM_RIGHTS, an inherited fd) would be judged by
 * nobody. Here it is judged by the task that uses it, against the run's allowlist. Sockets
 * created inside the run are left to the decision layer, which has judged them already.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "sluice.h"
#include "events.bpf.h"
#include "logstate.bpf.h"
#include "policy.bpf.h"
#include "net.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The mode, errno and the run's cgroup (its id and depth below the root, written at attach) are
 * the run's configuration (struct sl_cfg, shared with the other layers).
 */

/* The run's cgroup, for bpf_current_task_under_cgroup(). */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sl_run_cgroup SEC(".maps");

static __always_inline bool family_allowed(int family)
{
	return family == AF_UNIX || family == AF_NETLINK || family == AF_INET ||
	       family == AF_INET6;
}

static __always_inline void fill_task(struct sl_decision_event *ev)
{
	__u64 id = bpf_get_current_pid_tgid();

	ev->pid = (__u32)id;
	ev->tgid = id >> 32;
	ev->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
}

SEC("lsm_cgroup/socket_create")
int BPF_PROG(sl_lsm_socket_create, int family, int type, int protocol, int kern)
{
	struct sl_decision_event ev = {};

	if (kern || family_allowed(family))
		return 1;
	ev.family = (__u8)family;
	ev.port = (__u16)type;
	ev.rule_id = (__u16)protocol;
	ev.protocol = (__u8)protocol;
	ev.hook = SL_HOOK_LSM;
	ev.verdict = SL_VERDICT_DENY;
	ev.reason = SL_REASON_SOCKET_KIND;
	ev.enforced = 1;
	fill_task(&ev);
	event_hdr_init(&ev.hdr, SL_EV_DECISION, sizeof(ev));
	event_submit(&ev, sizeof(ev), SL_HOOK_LSM, true);
	return 0;
}

/*
 * The socket was created inside the run (its cgroup is the run's or below it).
 * The run's level is read into a local before it indexes ancestors[]: everything inside
 * BPF_CORE_READ's arguments is a CO-RE access, so sl_cfg.cgroup_level there becomes a
 * relocation against struct sl_cfg, a type no kernel's BTF has, which libbpf turns into a
 * poisoned call (the verifier: "invalid func unknown#195896080") on every kernel.
 */
static __always_inline bool socket_of_run(struct socket *sock)
{
	struct cgroup *cg = BPF_CORE_READ(sock, sk, sk_cgrp_data.cgroup), *anc;
	int run_level = sl_cfg.cgroup_level;

	if (!cg || BPF_CORE_READ(cg, level) < run_level)
		return false;
	anc = BPF_CORE_READ(cg, ancestors[run_level & 0xff]);
	return anc && BPF_CORE_READ(anc, kn, id) == sl_cfg.cgroup_id;
}

/* A socket handed into the run from outside, used by a task of the run. */
static __always_inline bool foreign_socket_in_run(struct socket *sock)
{
	if (bpf_current_task_under_cgroup(&sl_run_cgroup, 0) != 1)
		return false;
	return !socket_of_run(sock);
}

/*
 * The policy's errno as an LSM hook's return. Newer kernels (6.12 here) refuse an LSM program
 * unless they can prove R0 is in [-4095, 0]; 6.12's verifier loses a negated value (w = -w
 * leaves an unknown scalar) and checks R0 as 64 bits, which an int return's 32-bit move
 * zero-extends. So each errno a policy may name (policy.c's errno_names; a new one there gets
 * EPERM here until it is added) is a constant of its own, and the hooks return long.
 */
static __always_inline long deny_retval(void)
{
	switch (sl_cfg.deny_errno) {
	case EACCES:
		return -EACCES;
	case ECONNREFUSED:
		return -ECONNREFUSED;
	case ENETUNREACH:
		return -ENETUNREACH;
	case EHOSTUNREACH:
		return -EHOSTUNREACH;
	default:
		return -EPERM;
	}
}

/*
 * Judge (family, address, port) for this socket's protocol; returns the LSM verdict. Strict
 * evidence holds here as in the decision layer (sock_addr.bpf.c, finish()): with the log
 * unwritable, what would go ahead is refused, reason log_unwritable; and what would go ahead but
 * whose record finds no room in the ring buffer is refused (the loss is counted).
 */
static __always_inline long judge(struct socket *sock, struct sl_decision_event *ev, __u8 hook)
{
	__u16 sk_protocol = BPF_CORE_READ(sock, sk, sk_protocol);
	__u8 proto = sk_protocol == IPPROTO_TCP ? SL_PROTO_TCP :
		     sk_protocol == IPPROTO_UDP ? SL_PROTO_UDP : 0;
	struct verdict v = {};
	bool deny, enforce;

	decide_dst(&v, ev, proto);
	deny = v.verdict == SL_VERDICT_DENY;
	enforce = deny && (cfg_enforcing() || v.reason == SL_REASON_BLACKHOLE);
	if (sl_cfg.strict && !enforce && log_unwritable()) {
		set_verdict(&v, SL_VERDICT_DENY, SL_REASON_LOG_UNWRITABLE, v.rule_id);
		deny = enforce = true;
	}
	ev->protocol = (__u8)sk_protocol;
	ev->hook = hook;
	ev->verdict = v.verdict;
	ev->reason = v.reason;
	ev->rule_id = v.rule_id;
	ev->enforced = enforce || !deny;
	fill_task(ev);
	ev->sock_cookie = 0;
	event_hdr_init(&ev->hdr, SL_EV_DECISION, sizeof(*ev));
	if (!event_submit(ev, sizeof(*ev), SL_HOOK_LSM, deny) && !enforce && sl_cfg.strict)
		return deny_retval();
	return enforce ? deny_retval() : 0;
}

/* Read a kernel copy of a sockaddr into ev; false if it is not inet. */
static __always_inline bool read_sockaddr(const void *addr, struct sl_decision_event *ev)
{
	__u16 family;

	if (!addr || bpf_probe_read_kernel(&family, sizeof(family), addr))
		return false;
	if (family == AF_INET) {
		struct sockaddr_in sin;

		if (bpf_probe_read_kernel(&sin, sizeof(sin), addr))
			return false;
		ev->family = AF_INET;
		ev->port = bpf_ntohs(sin.sin_port);
		__builtin_memcpy(ev->addr, &sin.sin_addr.s_addr, 4);
		return true;
	}
	if (family == AF_INET6) {
		struct sockaddr_in6 sin6;

		if (bpf_probe_read_kernel(&sin6, sizeof(sin6), addr))
			return false;
		ev->family = AF_INET6;
		ev->port = bpf_ntohs(sin6.sin6_port);
		__builtin_memcpy(ev->addr, &sin6.sin6_addr, 16);
		return true;
	}
	return false;
}

SEC("lsm/socket_connect")
long BPF_PROG(sl_lsm_connect, struct socket *sock, struct sockaddr *address, int addrlen)
{
	struct sl_decision_event ev = {};

	if (!foreign_socket_in_run(sock) || !read_sockaddr(address, &ev))
		return 0;
	return judge(sock, &ev, SL_HOOK_LSM);
}

SEC("lsm/socket_sendmsg")
long BPF_PROG(sl_lsm_sendmsg, struct socket *sock, struct msghdr *msg, int size)
{
	struct sl_decision_event ev = {};
	struct sock *sk;
	__u16 family;

	if (!foreign_socket_in_run(sock))
		return 0;
	sk = BPF_CORE_READ(sock, sk);
	/*
	 * TCP ignores msg_name once connected (the data goes to the peer, whatever address is
	 * passed): judge the peer. msg_name counts only for datagrams, and for a TCP socket not
	 * yet connected (MSG_FASTOPEN).
	 */
	if ((BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP ||
	     !BPF_CORE_READ(sk, __sk_common.skc_dport)) &&
	    read_sockaddr(BPF_CORE_READ(msg, msg_name), &ev))
		return judge(sock, &ev, SL_HOOK_LSM);
	/* no address given, or a connected stream: where the socket is connected */
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family == AF_INET) {
		__u32 daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		ev.family = AF_INET;
		__builtin_memcpy(ev.addr, &daddr, 4);
	} else if (family == AF_INET6) {
		BPF_CORE_READ_INTO(&ev.addr, sk, __sk_common.skc_v6_daddr);
		ev.family = AF_INET6;
	} else {
		return 0;
	}
	ev.port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (!ev.port)
		return 0; /* not connected: the send fails without us (EDESTADDRREQ) */
	return judge(sock, &ev, SL_HOOK_LSM);
}
