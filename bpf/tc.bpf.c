// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Host-side layer: a tc program on the host-side peer of every veth of the run's network
 * namespace (tcx ingress where the kernel has it, a clsact ingress filter otherwise). It sees
 * every frame the sandbox emits, whoever made it — including frames of AF_PACKET sockets, which
 * leave without passing any cgroup hook or the sandbox's own qdiscs — and applies the run's
 * allowlist and the blackhole to each, attributed to the run by interface. Where runs share the
 * namespace, a frame another run's cgroup sent is left to that run (nsflows.bpf.h).
 *
 * What passes without a rule: ARP, IPv6 neighbour discovery (ICMPv6 133-137, hop limit 255) to
 * link-local or link-scope addresses or to the host side itself, and MLD/IGMP membership to
 * link-scope groups; the sandbox needs them to reach its gateway, and none of them is forwarded. Other multicast and broadcast is
 * judged like any destination: it reaches whatever listens on the host side. Everything else must
 * be IPv4 or IPv6 to an allowed destination: other ethertypes, VLAN tags, and IP fragments (whose
 * ports cannot be judged) are dropped in enforce mode. Report mode drops only the blackhole.
 * (IPv4 options and IPv6 routing headers are not looked at here: the host side's own kernel
 * refuses source routing by default, accept_source_route=0 and seg6_enabled=0.)
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice.h"
#include "events.bpf.h"
#include "packet.bpf.h"
#include "addr.bpf.h" /* v6_is_link_local */
#include "nsflows.bpf.h"
#include "net.bpf.h"
#include "judged.bpf.h"

/*
 * An allowed frame goes on to whatever else the host runs here (TCX_NEXT / TC_ACT_UNSPEC), so
 * sluice neither ends the chain early nor needs to be last; it is attached first.
 */
#define TC_PASS -1
#define TC_DROP 2 /* TC_ACT_SHOT / TCX_DROP */
#define REPORT_INTERVAL_NS 1000000000ULL
#define ND_FIRST 133 /* router solicitation … redirect */
#define ND_LAST 137
#define MLD_FIRST 130 /* query, report, done */
#define MLD_LAST 132
#define MLD2_REPORT 143

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * A frame flood to one destination must not become a record flood: denials are recorded once a
 * second per (destination, port, protocol); the drops themselves are never limited.
 */
struct tc_report_key {
	__u8 addr[16];
	__u16 port;
	__u8 family;
	__u8 proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct tc_report_key);
	__type(value, __u64);
} sl_tc_reported SEC(".maps");

SL_JUDGED_MAP(sl_tc_judged); /* destinations judged allowed (judged.bpf.h) */

/* The packet is for the host side itself (an address of the peer's namespace), not forwarded. */
static __always_inline bool for_host_side(struct __sk_buff *skb, const struct packet_dst *d)
{
	struct bpf_fib_lookup p = {};

	p.family = AF_INET6;
	p.ifindex = skb->ingress_ifindex;
	__builtin_memcpy(p.ipv6_dst, d->addr, 16);
	return bpf_fib_lookup(skb, &p, sizeof(p), 0) == BPF_FIB_LKUP_RET_NOT_FWDED;
}

/*
 * The link's own control traffic, which the sandbox needs to reach its gateway: IPv6 neighbour
 * discovery to a link-local or link-scope multicast address or to the host side's own address
 * (hop limit 255 only says the sender was on-link; a router forwards such a packet to any other
 * address like any other, so that is judged), and MLD and IGMP membership to link-scope groups.
 * Anything else to a multicast or broadcast address — UDP to ff02::1 or 255.255.255.255 reaches
 * whatever listens on the host side — is judged like any destination.
 */
static __always_inline bool link_control(struct __sk_buff *skb, const struct packet_dst *d)
{
	const __u8 *a = d->addr;
	bool link_scope = a[0] == 0xff && (a[1] & 0x0f) == 0x02;	  /* ff02::/16 */
	bool link_local = v6_is_link_local((const __u32 *)d->addr);

	if (d->family == AF_INET)
		return d->proto == IPPROTO_IGMP && a[0] == 224 && a[1] == 0 && a[2] == 0;
	if (d->proto != IPPROTO_ICMPV6 || d->fragment)
		return false;
	if (d->hop_limit == 255 && d->icmp6_type >= ND_FIRST && d->icmp6_type <= ND_LAST)
		return link_scope || link_local || for_host_side(skb, d);
	/* MLD query, report, done, v2 report: to ff02::/16 only */
	return link_scope && ((d->icmp6_type >= MLD_FIRST && d->icmp6_type <= MLD_LAST) ||
			      d->icmp6_type == MLD2_REPORT);
}

static __always_inline bool report_due(const struct packet_dst *d)
{
	struct tc_report_key key = { .port = d->port, .family = d->family, .proto = d->proto };
	__u64 now = bpf_ktime_get_boot_ns(), *last;

	__builtin_memcpy(key.addr, d->addr, 16);
	last = bpf_map_lookup_elem(&sl_tc_reported, &key);
	if (last && now - *last < REPORT_INTERVAL_NS)
		return false;
	bpf_map_update_elem(&sl_tc_reported, &key, &now, BPF_ANY);
	return true;
}

static __always_inline int drop(struct __sk_buff *skb, struct sl_decision_event *ev,
				const struct packet_dst *d, __u8 reason, __u16 rule_id)
{
	if (!report_due(d))
		return TC_DROP;
	ev->hook = SL_HOOK_TC;
	ev->verdict = SL_VERDICT_DENY;
	ev->reason = reason;
	ev->rule_id = rule_id;
	ev->enforced = 1;
	/* no process or socket: the frame is the run's because it came in on its interface */
	ev->port = d->port;
	ev->protocol = d->proto;
	ev->sock_cookie = skb->ifindex;
	event_hdr_init(&ev->hdr, SL_EV_DECISION, sizeof(*ev));
	event_submit(ev, sizeof(*ev), SL_HOOK_TC, true);
	return TC_DROP;
}

SEC("tcx/ingress")
int sl_tc_ingress(struct __sk_buff *skb)
{
	struct sl_decision_event ev = {};
	struct packet_dst d = {};
	struct verdict v = {};
	bool enforce = cfg_enforcing();
	struct sl_judged *judged;
	void *ns_flows;

	if (skb->protocol == bpf_htons(ETH_P_ARP))
		return TC_PASS;
	if (packet_dst(skb, ETH_HLEN, &d)) {
		/* not IPv4/IPv6 (or unreadable): the sandbox has nothing else to send */
		if (!enforce)
			return TC_PASS;
		d.family = 0;
		return drop(skb, &ev, &d, SL_REASON_PROTOCOL, SL_RULE_DEFAULT);
	}
	if (link_control(skb, &d))
		return TC_PASS;
	/* another run in this namespace sent it: that run's programs judge it (nsflows.bpf.h) */
	ns_flows = ns_flows_shared();
	if (ns_flows &&
	    (ns_flow_of_other_run(ns_flows, &d) || ns_icmp_error_of_other_run(ns_flows, skb, &d)))
		return TC_PASS;
	/* a frame to where one was judged allowed in this generation: allowed (judged.bpf.h) */
	judged = judged_cacheable(&d) ? judged_slot_of_dst(&sl_tc_judged, &d) : NULL;
	if (judged && judged_allowed(judged, 0, &d))
		return TC_PASS;
	packet_judge(&d, &v, &ev);
	if (judged && v.verdict == SL_VERDICT_ALLOW && !v.learned)
		judged_note(judged, 0, &d);
	if (v.verdict != SL_VERDICT_DENY)
		return TC_PASS;
	if (!enforce && v.reason != SL_REASON_BLACKHOLE)
		return TC_PASS;
	return drop(skb, &ev, &d, v.reason, v.rule_id);
}
