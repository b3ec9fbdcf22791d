// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decision layer: cgroup sock_addr programs that judge every connect() and unconnected sendmsg()
 * of a run against its allowlist (and a connected UDP send with a control message, by its peer:
 * see judge_peer), at syscall time, and return an immediate errno on denial.
 *
 * One instance of this object is loaded per run and attached (bpf_link) at the run's cgroup, the
 * way systemd loads socket-bind per unit. The kernel runs a cgroup's effective programs for every
 * socket created in its subtree, so a process that makes a child cgroup is still judged by its
 * run's programs and maps; one run's maps can never open anything for another run.
 *
 * Order of checks: the fixed blackhole (every form) first; then DNS (port 53, TCP and UDP, to any
 * address) is redirected to the run's resolver; then the socket protocol, the policy's CIDR tries,
 * the addresses the run's resolver learned for listed names, and the policy default. What cannot
 * be classified is denied.
 *
 * The redirect is hidden from the client: the original server is kept in socket storage and put
 * back by the recvmsg and getpeername programs, so resolvers that check where an answer came from
 * (glibc, musl, Go) accept it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice.h"
#include "addr.bpf.h"
#include "events.bpf.h"
#include "logstate.bpf.h"
#include "tls.bpf.h"
#include "policy.bpf.h"
#include "net.bpf.h"
#include "resets.bpf.h" /* declared here only to be the run's one (share_maps) */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The run's mode, errno, resolver port (on 127.0.0.1 and ::1; 0: no resolver, no redirect),
 * strict evidence (a connection whose allow cannot be recorded is refused: see finish()):
 * struct sl_cfg, written by the loader after load (cfg.bpf.h).
 */

#define DNS_PORT 53
#define LOOPBACK4 0x7f000001

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

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sl_dns_orig);
} sl_sk_dns SEC(".maps");


struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64); /* socket cookie */
	__type(value, struct sl_dns_client);
} sl_dns_clients SEC(".maps");

/* Host names by host_id, for a resumed writer (see struct sl_host_name); no program reads it. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SL_HOSTS_MAX);
	__type(key, struct sl_hosts_key);
	__type(value, struct sl_host_name);
} sl_hosts SEC(".maps");

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

/*
 * A TCP connection to an address learned for a name, on any port: the packet layer will require
 * a ClientHello in it to name a host the resolver produced this address for (on the TLS port,
 * the first payload must be one). Returns false when the flow cannot be marked (no storage):
 * the caller then denies the connect.
 */
static __always_inline bool tls_expect_server_name(struct bpf_sock_addr *ctx,
						   const struct sl_decision_event *ev)
{
	struct sl_sk_tls *t;

	if (!ctx->sk)
		return false;
	t = bpf_sk_storage_get(&sl_sk_tls, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!t)
		return false;
	t->state = SL_TLS_PENDING;
	t->payloads = 0;
	t->tls_port = ev->port == SL_TLS_PORT;
	t->deny_reason = 0;
	t->host_id = ev->host_id;
	t->sni_host_id = 0;
	t->pid = ev->pid;
	t->tgid = ev->tgid;
	__builtin_memcpy(t->comm, ev->comm, sizeof(t->comm));
	return true;
}

/*
 * The flow state of a connect() that goes ahead: the socket's, created if it has none (zeroed:
 * start_ns 0). NULL when the kernel keeps none for it (see SL_REASON_FLOW_NO_STATE): the caller
 * refuses the flow. Nothing is written to it until the connect's record is queued: a connect
 * refused after all (strict evidence) leaves the socket's flow as it was.
 */
static __always_inline struct sl_flow *flow_storage(struct bpf_sock_addr *ctx)
{
	return bpf_sk_storage_get(&sl_sk_flow, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
}

/*
 * A socket connected again (a UDP socket re-aimed; TCP after connect(AF_UNSPEC)) ends the flow
 * it had: its record, with what it carried, goes out (into room reserved before the connect's
 * own record) before the storage starts the new one. The socket's cookie and the caller's
 * cgroup, as sl_sock_release records a flow.
 */
static __always_inline void flow_end_record(struct sl_flow_event *rec, const struct sl_flow *f,
					    const struct sl_decision_event *ev, __u64 now)
{
	__builtin_memcpy(&rec->flow, f, sizeof(rec->flow));
	rec->end_ns = now;
	rec->cgroup_id = ev->cgroup_id;
	rec->sock_cookie = ev->sock_cookie;
	rec->hdr.pad0 = 0; /* the ring buffer's room is not zeroed */
	event_hdr_init_at(&rec->hdr, SL_EV_FLOW, sizeof(*rec), now);
	event_commit(rec);
}

/*
 * Begin counting a flow that goes ahead: an allowed one, or a report-mode denial (marked with
 * its reason, and capped by no rule unless it was denied for its rule's host budget). A socket
 * connected again starts a new flow, under the caps of the rule that allowed the new connect
 * (per-flow caps are per connection: sluice-policy(5)); the old one was recorded first
 * (flow_end_record).
 */
static __always_inline void flow_start(struct sl_flow *f, const struct sl_decision_event *ev,
				       __u8 deny_reason, const struct sl_rule_caps *caps, __u64 now)
{
	__builtin_memset(f, 0, sizeof(*f));
	f->start_ns = now;
	f->family = ev->family;
	f->protocol = ev->protocol;
	f->port = ev->port;
	f->rule_id = ev->rule_id;
	f->host_id = ev->host_id;
	f->pid = ev->pid;
	f->tgid = ev->tgid;
	__builtin_memcpy(f->addr, ev->addr, sizeof(f->addr));
	__builtin_memcpy(f->comm, ev->comm, sizeof(f->comm));
	f->deny_reason = deny_reason;
	f->era = sl_cfg.era; /* judged by this policy: the packet layer trusts it in this one only */
	/*
	 * A would-be denial is capped by no rule, except one for a host whose budget is spent: its
	 * rule's caps and totals go on applying, so that after a switch to enforce the flow (which
	 * the rule lets through packet by packet) is cut rather than left uncapped.
	 */
	if (deny_reason && deny_reason != SL_REASON_HOST_CAP)
		return;
	flow_caps_set(f, caps);
}

/* The rule's caps (NULL: none), looked up once per connect() for the budget and the flow. */
static __always_inline const struct sl_rule_caps *rule_caps_of(__u16 rule_id)
{
	__u32 rid = rule_id;

	return bpf_map_lookup_elem(&sl_rule_caps, &rid);
}

/* The host's budget under its rule's total caps is spent (addr.bpf.h, host_bytes_spent). */
static __always_inline bool host_budget_spent(const struct sl_decision_event *ev, __u16 rule_id,
					      const struct sl_rule_caps *caps)
{
	struct sl_host_bytes *b;
	struct sl_host_key k;

	if (!caps || (!caps->max_total_req && !caps->max_total_resp))
		return false;
	host_key_of(&k, rule_budget(rule_id), ev->host_id, ev->family, ev->addr);
	b = bpf_map_lookup_elem(&sl_host_bytes, &k);
	if (!b)
		return false;
	return host_bytes_spent(caps, b);
}

/*
 * Strict evidence: the connection would go ahead, but its record found no room in the ring
 * buffer (the loss is counted). Undo what the allow set up on the socket and refuse it: the
 * flow storage only when this connect created it (new_flow; a socket connected before keeps
 * the flow it has, which the kernel leaves it connected to).
 */
static __always_inline int refuse_unrecorded(struct bpf_sock_addr *ctx, bool is_sendmsg,
					     bool new_flow)
{
	struct bpf_sock *sk = ctx->sk; /* read once: the verifier allows no offset on ctx */
	struct sl_sk_last_dst *last;

	if (sk) {
		if (is_sendmsg) {
			last = bpf_sk_storage_get(&sl_sk_last, sk, 0, 0);
			if (last)
				last->valid = 0; /* the next datagram there must be recorded again */
		} else {
			if (new_flow)
				bpf_sk_storage_delete(&sl_sk_flow, sk);
			bpf_sk_storage_delete(&sl_sk_tls, sk);
		}
	}
	if (sl_cfg.deny_errno != EPERM)
		bpf_set_retval(-sl_cfg.deny_errno);
	return 0;
}

/*
 * Keep the denial of a UDP connect() in the socket's storage; the egress program drops the
 * socket's datagrams (the send fails with EPERM) and records the denial at the first one.
 * Without storage the connect is denied at once instead.
 */
static __always_inline bool hold_udp_denial(struct bpf_sock_addr *ctx,
					    const struct sl_decision_event *ev)
{
	struct sl_sk_held *h = bpf_sk_storage_get(&sl_sk_held, ctx->sk, 0,
						  BPF_SK_STORAGE_GET_F_CREATE);

	if (!h)
		return false;
	__builtin_memcpy(&h->ev, ev, sizeof(h->ev));
	h->ev.era = sl_cfg.era; /* the generation that judged it, whichever records it */
	h->recorded = 0;
	return true;
}

/* Record the decision and turn it into the program's return value. */
static __always_inline int finish(struct bpf_sock_addr *ctx, struct sl_decision_event *ev,
				  struct verdict *v, __u8 hook, bool is_sendmsg)
{
	__u64 id = bpf_get_current_pid_tgid(), now = 0;
	const struct sl_rule_caps *caps = NULL;
	struct sl_flow_event *ended = NULL; /* the record of the flow this connect ends */
	bool holds_ended = false;	     /* ended is reserved: it must be committed or dropped */
	struct sl_flow *f = NULL;
	bool deny, enforce, new_flow = false;

	ev->pid = (__u32)id;
	ev->tgid = id >> 32;
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->sock_cookie = bpf_get_socket_cookie(ctx);
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));

	if (!is_sendmsg && ctx->protocol == IPPROTO_TCP && ctx->sk) {
		/*
		 * TLS runs on any port: every flow to a learned address is marked, and one that
		 * cannot be would escape the server-name check: refuse it, as a flow the kernel
		 * keeps no state for (its state is charged where the flow's is). (The kernel runs
		 * this hook on an unconnected TCP socket only: the state written here belongs to
		 * no live connection.)
		 */
		if (v->learned) {
			if (!tls_expect_server_name(ctx, ev))
				set_verdict(v, SL_VERDICT_DENY, SL_REASON_FLOW_NO_STATE,
					    v->rule_id);
		} else if (bpf_sk_storage_get(&sl_sk_tls, ctx->sk, 0, 0)) {
			/*
			 * A socket connected again must not carry an earlier flow's TLS state.
			 * Looked up first: the delete takes a reference on the socket even when
			 * there is nothing to delete, the case of every fresh socket.
			 */
			bpf_sk_storage_delete(&sl_sk_tls, ctx->sk);
		}
	}

	/* the caps of the rule that lets it through, for its budget and its flow */
	if (!is_sendmsg && v->verdict == SL_VERDICT_ALLOW) {
		caps = rule_caps_of(v->rule_id);
		if (v->reason == SL_REASON_RULE && host_budget_spent(ev, v->rule_id, caps))
			set_verdict(v, SL_VERDICT_DENY, SL_REASON_HOST_CAP, v->rule_id);
	}

	deny = v->verdict == SL_VERDICT_DENY;
	/* Report mode lets denials through, except the blackhole, which no mode or policy opens. */
	enforce = deny && (cfg_enforcing() || v->reason == SL_REASON_BLACKHOLE);
	/*
	 * Strict evidence, and the log cannot be written: whatever would go ahead (an allow, a
	 * DNS redirect, a report-mode denial) is refused, at once, with the denial's errno.
	 */
	if (sl_cfg.strict && !enforce && log_unwritable()) {
		set_verdict(v, SL_VERDICT_DENY, SL_REASON_LOG_UNWRITABLE, v->rule_id);
		deny = enforce = true;
	}
	ev->verdict = v->verdict;
	ev->reason = v->reason;
	ev->rule_id = v->rule_id;
	ev->enforced = enforce || !deny;
	ev->hook = hook;
	ev->protocol = ctx->protocol;

	/* A UDP connect() sends nothing: hold its denial until the socket sends. */
	if (ctx->protocol == IPPROTO_UDP && ctx->sk && enforce && !is_sendmsg &&
	    v->reason != SL_REASON_BLACKHOLE && v->reason != SL_REASON_LOG_UNWRITABLE &&
	    hold_udp_denial(ctx, ev))
		return 1;

	/*
	 * A connect() that goes ahead starts a flow, a report-mode denial too (its bytes are the
	 * evidence for deciding on it); the redirect to the resolver is not one.
	 */
	if (!enforce && !is_sendmsg && ctx->sk && v->reason != SL_REASON_DNS_REDIRECT &&
	    (ctx->protocol == IPPROTO_TCP || ctx->protocol == IPPROTO_UDP)) {
		/* the flow starts when its decision is recorded: one clock read for both */
		now = bpf_ktime_get_boot_ns();
		f = flow_storage(ctx);
		if (!f) {
			/*
			 * No state for the flow: it would go uncounted, uncapped and unrecorded.
			 * Refused as the policy's denials are; in report mode it goes ahead, on
			 * record as such, unless the evidence must be whole (strict evidence: its
			 * flow line could not be).
			 */
			set_verdict(v, SL_VERDICT_DENY, SL_REASON_FLOW_NO_STATE, v->rule_id);
			deny = true;
			enforce = cfg_enforcing() || sl_cfg.strict;
			ev->verdict = v->verdict;
			ev->reason = v->reason;
			ev->enforced = enforce;
		} else if (f->start_ns) {
			/*
			 * Connected again: the flow it had ends, and its record must go out. Under
			 * strict evidence, without room for it the connect is refused (the kernel
			 * then leaves the socket as it was: its flow goes on, recorded at release).
			 */
			ended = event_reserve(sizeof(*ended), hook);
			/*
			 * Later tests are of this flag, never of ended again: 6.1's verifier takes
			 * a reservation it knows is not NULL to be NULL on the other side of a
			 * test, and refuses the program for leaving it unreleased there. Set
			 * opaquely (barrier_var), or the compiler turns it back into a test of
			 * ended.
			 */
			if (ended) {
				holds_ended = true;
				barrier_var(holds_ended);
			} else if (sl_cfg.strict) {
				return refuse_unrecorded(ctx, false, false);
			}
		} else {
			new_flow = true;
		}
	}

	if (deny || !is_sendmsg || !sendmsg_allow_already_recorded(ctx, ev)) {
		event_hdr_init_at(&ev->hdr, SL_EV_DECISION, sizeof(*ev),
				  now ? now : bpf_ktime_get_boot_ns());
		/* (redirected DNS is logged by the resolver, not by this record) */
		if (!event_submit(ev, sizeof(*ev), hook, deny) && !enforce && sl_cfg.strict &&
		    v->reason != SL_REASON_DNS_REDIRECT) {
			if (holds_ended)
				event_drop(ended);
			return refuse_unrecorded(ctx, is_sendmsg, new_flow);
		}
	}

	/* It goes ahead (or is refused, recorded): only now is the socket's state changed. */
	if (f) {
		if (holds_ended)
			flow_end_record(ended, f, ev, now);
		flow_start(f, ev, deny ? v->reason : 0, caps, now);
	}
	/* allowed: an earlier connect's held denial no longer applies (looked up first: a delete
	 * of nothing still takes a reference on the socket) */
	if (!deny && ctx->protocol == IPPROTO_UDP && ctx->sk &&
	    bpf_sk_storage_get(&sl_sk_held, ctx->sk, 0, 0))
		bpf_sk_storage_delete(&sl_sk_held, ctx->sk);

	if (!enforce)
		return 1;
	/* bpf_set_retval (5.18+) picks the errno; without it the kernel returns EPERM. */
	if (sl_cfg.deny_errno != EPERM)
		bpf_set_retval(-sl_cfg.deny_errno);
	return 0;
}

static __always_inline bool dns_redirectable(__u16 port, __u8 proto)
{
	return sl_cfg.dns_port && port == DNS_PORT && proto;
}

/* Name the process behind a redirected query for the resolver's log (best effort: LRU). */
static __always_inline void dns_note_client(struct bpf_sock_addr *ctx)
{
	__u64 cookie = bpf_get_socket_cookie(ctx), id = bpf_get_current_pid_tgid();
	struct sl_dns_client c = { .pid = (__u32)id, .tgid = id >> 32 };

	bpf_get_current_comm(c.comm, sizeof(c.comm));
	bpf_map_update_elem(&sl_dns_clients, &cookie, &c, BPF_ANY);
}

/* Remember where the client meant to go, for recvmsg/getpeername to show it the same server. */
static __always_inline bool dns_save_orig(struct bpf_sock_addr *ctx, __u8 family,
					  const __u8 addr[16])
{
	struct sl_dns_orig *o;

	if (!ctx->sk)
		return false;
	o = bpf_sk_storage_get(&sl_sk_dns, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return false;
	__builtin_memcpy(o->addr, addr, 16);
	o->port = (__u16)ctx->user_port;
	o->family = family;
	o->valid = 1;
	dns_note_client(ctx);
	return true;
}

static __always_inline void verdict_dns(struct verdict *v)
{
	set_verdict(v, SL_VERDICT_ALLOW, SL_REASON_DNS_REDIRECT, SL_RULE_DEFAULT);
}

/*
 * No storage for the original server means a reply the client would reject: deny instead, the
 * query fails at once rather than timing out.
 */
static __always_inline void verdict_dns_failed(struct verdict *v)
{
	set_verdict(v, SL_VERDICT_DENY, SL_REASON_DEFAULT_DENY, SL_RULE_DEFAULT);
}

/*
 * A send of a UDP socket whose connect() was let through with its denial held: refuse it, and
 * record the held denial once (as the egress program does for the socket's plain sends).
 */
static __always_inline int refuse_held(struct sl_sk_held *h)
{
	if (!h->recorded) {
		h->recorded = 1;
		event_hdr_init(&h->ev.hdr, SL_EV_DECISION, sizeof(h->ev));
		event_submit(&h->ev, sizeof(h->ev), h->ev.hook, true);
	}
	if (sl_cfg.deny_errno != EPERM)
		bpf_set_retval(-sl_cfg.deny_errno);
	return 0;
}

/* The socket's peer is the run's resolver, where connect() redirected a DNS server. */
static __always_inline struct sl_dns_orig *peer_is_resolver(struct bpf_sock *sk, __u16 port,
							     const __u32 w[4], __u8 family)
{
	struct sl_dns_orig *o;
	bool lo;

	if (!sl_cfg.dns_port || port != sl_cfg.dns_port)
		return NULL;
	lo = family == AF_INET ? w[0] == bpf_htonl(LOOPBACK4) :
				 w[0] == 0 && w[1] == 0 && w[2] == 0 && w[3] == bpf_htonl(1);
	if (!lo)
		return NULL;
	o = bpf_sk_storage_get(&sl_sk_dns, sk, 0, 0);
	return o && o->valid ? o : NULL;
}

/*
 * A connected UDP socket that sends with an IP-level control message (IP_PKTINFO, IP_TOS, IP_TTL,
 * IPV6_PKTINFO, IPV6_HOPLIMIT, IPV6_TCLASS…: QUIC stacks send ECN this way) reaches the sendmsg
 * programs without an address: the kernel hands them a zeroed one (AF_UNSPEC, port 0) and sends
 * to the socket's connected peer. (A send that names its destination never has port 0: the
 * kernel refuses that before.) Such a send is judged by that peer, the way connect() judged it:
 * a held denial still holds, a redirect to the run's resolver stays one, anything else meets the
 * blackhole and the policy. Without a peer it is denied (0.0.0.0 or ::, port 0, default_deny).
 * (A v6 socket's v4-mapped peer is not seen here: the kernel hands such a send to the sendmsg4
 * programs with the peer's address.)
 */
static __always_inline int judge_peer(struct bpf_sock_addr *ctx, __u8 hook)
{
	struct sl_decision_event ev = {};
	struct verdict v = {};
	struct bpf_sock *sk = ctx->sk;
	struct sl_dns_orig *o;
	struct sl_sk_held *h;
	__u8 proto = proto_bit(ctx->protocol);
	__u32 w[4] = {}, ip4;

	ev.family = hook == SL_HOOK_SENDMSG4 ? AF_INET : AF_INET6;
	if (!sk) {
		set_verdict(&v, SL_VERDICT_DENY, SL_REASON_DEFAULT_DENY, SL_RULE_DEFAULT);
		return finish(ctx, &ev, &v, hook, true);
	}
	h = bpf_sk_storage_get(&sl_sk_held, sk, 0, 0);
	if (h)
		return refuse_held(h);
	/* each field is read at its own offset: the verifier allows no arithmetic on sk */
	ip4 = sk->dst_ip4;
	w[0] = sk->dst_ip6[0];
	w[1] = sk->dst_ip6[1];
	w[2] = sk->dst_ip6[2];
	w[3] = sk->dst_ip6[3];
	ev.family = sk->family == AF_INET ? AF_INET : AF_INET6;
	ev.port = bpf_ntohs((__u16)sk->dst_port);
	if (ev.family == AF_INET) {
		w[0] = ip4;
		w[1] = 0;
		w[2] = 0;
		w[3] = 0;
	}
	__builtin_memcpy(ev.addr, w, 16);
	if (!ev.port || !(w[0] | w[1] | w[2] | w[3])) {
		set_verdict(&v, SL_VERDICT_DENY, SL_REASON_DEFAULT_DENY, SL_RULE_DEFAULT);
		return finish(ctx, &ev, &v, hook, true);
	}
	o = peer_is_resolver(sk, ev.port, w, ev.family);
	if (o) {
		/* recorded as the redirect was: the server the client asked */
		ev.family = o->family;
		ev.port = bpf_ntohs(o->port);
		__builtin_memcpy(ev.addr, o->addr, 16);
		verdict_dns(&v);
		return finish(ctx, &ev, &v, hook, true);
	}
	decide_dst(&v, &ev, proto);
	return finish(ctx, &ev, &v, hook, true);
}

static __always_inline int judge4(struct bpf_sock_addr *ctx, __u8 hook, bool is_sendmsg)
{
	struct sl_decision_event ev = {};
	struct verdict v = {};
	__u32 addr = ctx->user_ip4;
	__u8 proto = proto_bit(ctx->protocol);

	if (is_sendmsg && !ctx->user_port)
		return judge_peer(ctx, hook);
	ev.family = AF_INET;
	ev.port = bpf_ntohs((__u16)ctx->user_port);
	__builtin_memcpy(ev.addr, &addr, 4);
	if (!v4_is_blackholed(addr) && dns_redirectable(ev.port, proto)) {
		if (dns_save_orig(ctx, AF_INET, ev.addr)) {
			ctx->user_ip4 = bpf_htonl(LOOPBACK4);
			ctx->user_port = bpf_htons(sl_cfg.dns_port);
			verdict_dns(&v);
		} else {
			verdict_dns_failed(&v);
		}
	} else {
		decide_dst4(&v, &ev, proto);
	}
	/* one call site: finish() is inlined once per program */
	return finish(ctx, &ev, &v, hook, is_sendmsg);
}

/* A v4-mapped destination goes out over IPv4: send it to the v4 listener, mapped. */
static __always_inline void dns_rewrite6(struct bpf_sock_addr *ctx, const __u32 w[4])
{
	bool mapped = w[0] == 0 && w[1] == 0 && w[2] == bpf_htonl(0x0000ffff);

	ctx->user_ip6[0] = 0;
	ctx->user_ip6[1] = 0;
	ctx->user_ip6[2] = mapped ? bpf_htonl(0x0000ffff) : 0;
	ctx->user_ip6[3] = mapped ? bpf_htonl(LOOPBACK4) : bpf_htonl(1);
	ctx->user_port = bpf_htons(sl_cfg.dns_port);
}

static __always_inline int judge6(struct bpf_sock_addr *ctx, __u8 hook, bool is_sendmsg)
{
	struct sl_decision_event ev = {};
	struct verdict v = {};
	__u32 w[4];
	__u8 proto = proto_bit(ctx->protocol);

	if (is_sendmsg && !ctx->user_port)
		return judge_peer(ctx, hook);
	/* The context only allows 4-byte loads of user_ip6. */
	w[0] = ctx->user_ip6[0];
	w[1] = ctx->user_ip6[1];
	w[2] = ctx->user_ip6[2];
	w[3] = ctx->user_ip6[3];
	ev.family = AF_INET6;
	ev.port = bpf_ntohs((__u16)ctx->user_port);
	__builtin_memcpy(ev.addr, w, 16);
	if (dns_redirectable(ev.port, proto) && !v6_blackholed_any(w)) {
		if (dns_save_orig(ctx, AF_INET6, ev.addr)) {
			dns_rewrite6(ctx, w);
			verdict_dns(&v);
		} else {
			verdict_dns_failed(&v);
		}
	} else {
		decide_dst6(&v, &ev, proto);
	}
	return finish(ctx, &ev, &v, hook, is_sendmsg); /* (inlined once, as in judge4) */
}

/*
 * recvmsg and getpeername: an answer or peer that is the run's resolver is shown as the server
 * the client asked. These hooks must return 1; they only rewrite.
 */
static __always_inline int unredirect4(struct bpf_sock_addr *ctx)
{
	struct sl_dns_orig *o;

	if (!sl_cfg.dns_port || ctx->user_ip4 != bpf_htonl(LOOPBACK4) ||
	    ctx->user_port != bpf_htons(sl_cfg.dns_port) || !ctx->sk)
		return 1;
	o = bpf_sk_storage_get(&sl_sk_dns, ctx->sk, 0, 0);
	if (!o || !o->valid || o->family != AF_INET)
		return 1;
	ctx->user_ip4 = *(__u32 *)o->addr;
	ctx->user_port = o->port;
	return 1;
}

static __always_inline int unredirect6(struct bpf_sock_addr *ctx)
{
	struct sl_dns_orig *o;
	__u32 w0, w1, w2, w3;
	bool mapped_lo;

	if (!sl_cfg.dns_port || ctx->user_port != bpf_htons(sl_cfg.dns_port) || !ctx->sk)
		return 1;
	w0 = ctx->user_ip6[0];
	w1 = ctx->user_ip6[1];
	w2 = ctx->user_ip6[2];
	w3 = ctx->user_ip6[3];
	if (w0 || w1)
		return 1;
	mapped_lo = w2 == bpf_htonl(0x0000ffff) && w3 == bpf_htonl(LOOPBACK4);
	if (!mapped_lo && !(w2 == 0 && w3 == bpf_htonl(1)))
		return 1;
	o = bpf_sk_storage_get(&sl_sk_dns, ctx->sk, 0, 0);
	if (!o || !o->valid)
		return 1;
	if (o->family == AF_INET) {
		/* a v4 destination the v4 hook redirected, seen by a dual-stack socket */
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0x0000ffff);
		ctx->user_ip6[3] = *(__u32 *)o->addr;
	} else {
		ctx->user_ip6[0] = *(__u32 *)&o->addr[0];
		ctx->user_ip6[1] = *(__u32 *)&o->addr[4];
		ctx->user_ip6[2] = *(__u32 *)&o->addr[8];
		ctx->user_ip6[3] = *(__u32 *)&o->addr[12];
	}
	ctx->user_port = o->port;
	return 1;
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

SEC("cgroup/recvmsg4")
int sl_recvmsg4(struct bpf_sock_addr *ctx)
{
	return unredirect4(ctx);
}

SEC("cgroup/recvmsg6")
int sl_recvmsg6(struct bpf_sock_addr *ctx)
{
	return unredirect6(ctx);
}

SEC("cgroup/getpeername4")
int sl_getpeername4(struct bpf_sock_addr *ctx)
{
	return unredirect4(ctx);
}

SEC("cgroup/getpeername6")
int sl_getpeername6(struct bpf_sock_addr *ctx)
{
	return unredirect6(ctx);
}

/* The socket is gone: its flow, with what it carried, becomes one record. */
SEC("cgroup/sock_release")
int sl_sock_release(struct bpf_sock *sk)
{
	struct sl_flow_event ev = {};
	struct sl_flow *f = bpf_sk_storage_get(&sl_sk_flow, sk, 0, 0);

	if (!f)
		return 1;
	__builtin_memcpy(&ev.flow, f, sizeof(ev.flow));
	ev.end_ns = bpf_ktime_get_boot_ns();
	ev.cgroup_id = bpf_get_current_cgroup_id();
	ev.sock_cookie = bpf_get_socket_cookie(sk);
	event_hdr_init_at(&ev.hdr, SL_EV_FLOW, sizeof(ev), ev.end_ns);
	/* (the storage goes with the socket: this program may not delete it, and need not) */
	event_submit(&ev, sizeof(ev), SL_HOOK_SOCK_RELEASE, false);
	return 1;
}
