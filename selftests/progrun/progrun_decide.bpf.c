// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test-only object for selftests/test_progrun.sh: the decision layer's own source, compiled
 * whole, and one tc program through which BPF_PROG_RUN can ask it for a verdict.
 *
 * This kernel (6.18) cannot BPF_PROG_RUN a cgroup sock_addr program (ENOTSUPP: the type has no
 * test_run), so connect4/6 and sendmsg4/6 cannot be driven with a crafted context. What they
 * decide with is decide_dst4()/decide_dst6() (policy.bpf.h: the blackhole in every form, the
 * relay prefixes, the CIDR tries, the learned addresses, the default); t_decide calls them
 * (decide_dst), against the loader's own maps, with the destination the test asks about (t_q,
 * read from the packet) in the record's family, addr and port, and proto_bit() of its protocol,
 * as judge4()/judge6() do. What this does not reach is judge4/judge6 themselves (reading the
 * context, the DNS redirect) and finish() (report mode, strict evidence, held UDP denials, host
 * caps, the record): the root selftests cover those.
 */
#include "sock_addr.bpf.c"
#include "progrun.h"

struct t_answer t_a = {};

/* The query follows an Ethernet header, where a tc program's test packet must start. */
SEC("tc")
int t_decide(struct __sk_buff *skb)
{
	struct sl_decision_event ev = {};
	struct verdict v = {};
	struct t_query q;
	__u8 proto;

	__builtin_memset(&t_a, 0, sizeof(t_a));
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &q, sizeof(q))) {
		t_a.error = 1;
		return 0;
	}
	proto = proto_bit(q.proto);
	ev.family = q.family;
	ev.port = q.port;
	__builtin_memcpy(ev.addr, q.addr, sizeof(ev.addr));
	decide_dst(&v, &ev, proto);
	t_a.verdict = v.verdict;
	t_a.reason = v.reason;
	t_a.rule_id = v.rule_id;
	t_a.learned = v.learned;
	t_a.embedded_v4 = ev.embedded_v4;
	__builtin_memcpy(t_a.eff_addr, ev.eff_addr, 4);
	t_a.host_id = ev.host_id;
	return 0;
}
