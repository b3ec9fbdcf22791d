// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test-only object for selftests/test_progrun.sh: the packet layer's own source, compiled whole,
 * and one more program that BPF_PROG_RUN can drive through its TLS server-name check.
 *
 * The real sl_egress reads the flow's state from socket storage that connect() set; the socket
 * BPF_PROG_RUN hands a cgroup_skb program is a fresh dummy one each run, so no state could be
 * there. t_tls_egress puts the state the test asks for (t_in) on that socket, then calls the
 * very tls_egress() sl_egress calls, and leaves what the check concluded in t_out. Nothing else
 * differs: the parser, the name match against sl_sni_ok (shared with the loader's, filled by
 * loader_sni_learn) and the verdict are the packet layer's. t_flow_backstop does the same for
 * the backstop: the flow's connect() state (t_flow), then the very backstop() sl_backstop calls;
 * t_judged_backstop for its judged cache, on a socket with no flow.
 */
#include "skb.bpf.c"
#include "progrun.h"

struct t_tls_in t_in = {};
struct t_tls_out t_out = {};
struct t_flow_in t_flow = {};
struct t_judged_in t_judged = {};

/* The test socket, whole (a drop without a record when none: the driver counts it a failure). */
static __always_inline struct bpf_sock *test_sock(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;

	return sk ? bpf_sk_fullsock(sk) : NULL;
}

SEC("cgroup_skb/egress")
int t_flow_backstop(struct __sk_buff *skb)
{
	struct bpf_sock *sk = test_sock(skb);
	struct sl_sk_tls *t;
	struct sl_flow *f;
	int ret;

	if (!sk)
		return SKB_DROP;
	f = bpf_sk_storage_get(&sl_sk_flow, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!f)
		return SKB_DROP;
	__builtin_memset(f, 0, sizeof(*f));
	__builtin_memcpy(f->addr, t_flow.addr, sizeof(f->addr));
	f->port = t_flow.port;
	f->family = t_flow.family;
	f->protocol = t_flow.proto;
	f->era = t_flow.era;
	if (t_flow.tls_state) {
		t = bpf_sk_storage_get(&sl_sk_tls, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (!t)
			return SKB_DROP;
		__builtin_memset(t, 0, sizeof(*t));
		t->state = t_flow.tls_state;
		t->deny_reason = t_flow.tls_deny_reason;
	} else {
		bpf_sk_storage_delete(&sl_sk_tls, sk);
	}
	ret = backstop(skb, sk, f);
	t = bpf_sk_storage_get(&sl_sk_tls, sk, 0, 0);
	t_flow.tls_deny_after = t ? t->deny_reason : 0xff;
	return ret;
}

/*
 * The backstop on a packet of a TCP socket without a flow, its judged-cache slot planted first
 * as the test asks (a key of its own or one differing in a single field), then what the slot
 * holds after: the very backstop() sl_backstop calls, with no flow.
 */
SEC("cgroup_skb/egress")
int t_judged_backstop(struct __sk_buff *skb)
{
	struct bpf_sock *sk = test_sock(skb);
	struct packet_dst d = {};
	struct sl_judged *j;
	__u64 cookie;
	int ret;

	if (!sk)
		return SKB_DROP;
	cookie = bpf_get_socket_cookie(skb);
	j = judged_slot_of_cookie(&sl_judged, cookie);
	if (!j)
		return SKB_DROP;
	if (t_judged.plant) {
		j->cookie = cookie ^ t_judged.cookie_xor;
		__builtin_memcpy(j->addr, t_judged.addr, sizeof(j->addr));
		j->era = sl_cfg.era + t_judged.era_delta;
		j->port = t_judged.port;
		j->proto = t_judged.proto;
		j->family = t_judged.family;
		j->seq = t_judged.odd_seq ? 1 : 0;
	}
	ret = backstop(skb, sk, NULL);
	t_judged.noted = !packet_dst(skb, 0, &d) && judged_allowed(j, cookie, &d);
	return ret;
}

SEC("cgroup_skb/egress")
int t_tls_egress(struct __sk_buff *skb)
{
	struct bpf_sock *sk = test_sock(skb);
	struct sl_tls_event *ev;
	struct sl_sk_tls *t, *seen;
	struct sl_flow *f = NULL;
	__u32 zero = 0;
	int ret;

	t_out.error = 1;
	if (!sk)
		return SKB_DROP;
	if (t_in.flow_rule) {
		/* as connect() starts it, under its rule, with no caps (the case looks for one) */
		f = bpf_sk_storage_get(&sl_sk_flow, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (!f)
			return SKB_DROP;
		__builtin_memset(f, 0, sizeof(*f));
		f->protocol = IPPROTO_TCP;
		f->rule_id = t_in.flow_rule;
		f->host_id = t_in.host_id;
		f->era = sl_cfg.era;
	}
	t = bpf_sk_storage_get(&sl_sk_tls, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	ev = bpf_map_lookup_elem(&sl_tls_scratch, &zero);
	if (!t || !ev)
		return SKB_DROP;
	t_out.error = 0;
	t->state = t_in.state;
	t->tls_port = t_in.tls_port;
	t->payloads = t_in.payloads;
	t->host_id = t_in.host_id;
	t->sni_host_id = t_in.sni_host_id;
	t->deny_reason = 0;
	/* judge_client_hello zeroes the scratch record: a reason here is this packet's */
	ev->reason = 0;
	ev->sni_len = 0;
	ret = tls_egress(skb, sk, &seen);
	t_out.state = t->state;
	t_out.reason = ev->reason;
	t_out.sni_len = ev->sni_len;
	__builtin_memcpy(t_out.sni, ev->sni, sizeof(t_out.sni));
	f = bpf_sk_storage_get(&sl_sk_flow, sk, 0, 0);
	t_out.flow_rule = f ? f->rule_id : 0;
	t_out.flow_host = f ? f->host_id : 0;
	t_out.flow_max_req = f ? f->max_req : 0;
	/* as sl_egress reads it (judge_client_hello is global: any number to the verifier) */
	return ret == SKB_DROP ? SKB_DROP : SKB_PASS;
}
