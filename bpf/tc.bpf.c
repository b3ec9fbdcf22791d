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
 * One frame to a denied destination passes: the RST of a socket sluice destroyed, which the
 * run's packet layer let out and wrote down, byte for byte (resets.bpf.h), in a fixed form
 * (reset_fix); never one to the blackhole.
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
#include "resets.bpf.h"
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

/*
 * The RST of a socket sluice destroyed leaves in a fixed form (resets.bpf.h): whatever the
 * workload set on the socket before the destroy (IP_TOS, IP_TTL, IP_MTU_DISCOVER, IPV6_TCLASS,
 * IPV6_FLOWLABEL_MGR, IPV6_UNICAST_HOPS, SO_RCVBUF, TCP_MD5SIG, TCP_AO_ADD_KEY, urgent data)
 * must not reach a destination the policy denies. So every field it could choose is written
 * over: IPv4 TOS 0, IP ID 0, DF alone, TTL SL_RESET_HOPS; IPv6 traffic class and flow label 0,
 * hop limit SL_RESET_HOPS; TCP window 0, urgent pointer 0, flags RST|ACK, the data offset's
 * byte (its reserved and AE bits 0), and the options, which may be the timestamps alone as the
 * kernel lays them out (NOP, NOP, TS: written over with NOPs) or none: the data offset must say
 * exactly the frame's length (5 or 8 words), and that length is what says which. A RST with
 * other options (MD5, TCP-AO, SACK blocks) is refused: their length is the workload's choice
 * too. What is left is the addresses, the ports, whether the connection negotiated timestamps,
 * and the sequence and acknowledgement numbers the connection was at: under the confinement a
 * RST is let out for (loader_kill_socket: no CAP_NET_ADMIN, so no TCP_REPAIR) they only move
 * with what was sent and acknowledged. b is the frame as matched, from its IP header on, and is
 * written over in place: the checksums' differences are summed over it before and after (a
 * seed carried from one bpf_csum_diff to the next), so no second copy is on the stack. The
 * csum helpers leave a CHECKSUM_PARTIAL frame's TCP checksum to be completed later, as it must.
 */
#define SL_RESET_HOPS 64

static __always_inline bool reset_fix(struct __sk_buff *skb, __u8 *b, __u64 len)
{
	__s64 l3 = 0, l4sum;
	bool stamps;
	__u32 l4;
	__u8 *th;

	if (b[0] == 0x45) {
		l4 = 20;
		/* (the checksum field, in both sums, cancels out) */
		l3 = bpf_csum_diff((__be32 *)b, 12, NULL, 0, 0);
		if (l3 < 0)
			return false;
		b[1] = 0;		 /* TOS */
		b[4] = b[5] = 0;	 /* IP ID */
		b[6] = 0x40, b[7] = 0; /* DF alone */
		b[8] = SL_RESET_HOPS;
	} else if ((b[0] >> 4) == 6) {
		l4 = 40;
		b[0] = 0x60, b[1] = b[2] = b[3] = 0; /* traffic class, flow label */
		b[7] = SL_RESET_HOPS;
	} else {
		return false;
	}
	th = b + l4;
	/* the data offset says the frame's length, exactly: 5 words, or 8 with the timestamps */
	if (th[12] == 0x80 && len == l4 + 32)
		stamps = true;
	else if (th[12] == 0x50 && len == l4 + 20)
		stamps = false;
	else
		return false;
	if (th[13] != 0x14) /* RST|ACK, as the kernel's abort sends it */
		return false;
	if (stamps && (th[20] != 1 || th[21] != 1 || th[22] != 8 || th[23] != 10))
		return false; /* not NOP, NOP, timestamps (kind 8, length 10) */
	if (stamps)
		l4sum = bpf_csum_diff((__be32 *)th, 32, NULL, 0, 0);
	else
		l4sum = bpf_csum_diff((__be32 *)th, 20, NULL, 0, 0);
	if (l4sum < 0)
		return false;
	th[14] = th[15] = 0; /* window */
	th[18] = th[19] = 0; /* urgent pointer */
	if (stamps) {
		((__u32 *)th)[5] = 0x01010101; /* all NOPs */
		((__u32 *)th)[6] = 0x01010101;
		((__u32 *)th)[7] = 0x01010101;
	}
	/*
	 * Both bounds again, here: 6.12's verifier loses the lower one of len (checked by the
	 * caller) on some paths and refuses the store for a length that could be 0.
	 */
	if (len < 40 || len > SL_RESET_FRAME_MAX || bpf_skb_store_bytes(skb, ETH_HLEN, b, len, 0))
		return false;
	if (stamps)
		l4sum = bpf_csum_diff(NULL, 0, (__be32 *)th, 32, (__u32)l4sum);
	else
		l4sum = bpf_csum_diff(NULL, 0, (__be32 *)th, 20, (__u32)l4sum);
	if (l4sum < 0 || bpf_l4_csum_replace(skb, ETH_HLEN + l4 + 16, 0, l4sum, 0))
		return false;
	if (l4 == 20) {
		l3 = bpf_csum_diff(NULL, 0, (__be32 *)b, 12, (__u32)l3);
		if (l3 < 0 || bpf_l3_csum_replace(skb, ETH_HLEN + 10, 0, l3, 0))
			return false;
	}
	return true;
}

/*
 * The RST of a socket sluice destroyed, as the run's packet layer let it out (resets.bpf.h):
 * this very frame, byte for byte from its IP header on, once, put into its fixed form
 * (reset_fix). The entry is copied to the stack first and everything after is done with the
 * copy: an LRU's node may be taken and reused by another CPU at any moment, so the map's value
 * could change between the comparison and the rewrite. Once is the delete's: of two frames that
 * match, only the one whose delete takes the entry passes. A frame that is not it is judged as
 * any; it, if it cannot be put into that form, is dropped (its entry taken: a copy of it would
 * be the same).
 */
static __noinline bool destroy_reset_frame(struct __sk_buff *skb, const struct packet_dst *d)
{
	struct sl_ns_flow_key k __attribute__((aligned(8))); /* its addresses copied as words */
	struct sl_reset_frame f;
	struct sl_reset_frame *entry;
	__u64 w, len; /* (64 bits: 6.1's verifier keeps no bounds of a 32-bit spill) */
	__u32 i, n;

	if (!d || d->proto != IPPROTO_TCP || d->fragment)
		return false;
	ns_flow_key(&k, d);
	entry = bpf_map_lookup_elem(&sl_resets, &k);
	if (!entry)
		return false;
	__builtin_memcpy(&f, entry, sizeof(f));
	len = f.len;
	if (len < 40 || len > SL_RESET_FRAME_MAX || skb->len != ETH_HLEN + len)
		return false;
	/* 8 bytes at a time; the last word's bytes past the frame are zero on both sides */
	if (len & 3)
		return false;
#pragma clang loop unroll(disable)
	for (i = 0; i < SL_RESET_FRAME_MAX / 8; i++) {
		if (i * 8 >= len)
			break;
		/* (the frame's length is a multiple of 4: its headers') */
		n = 8;
		if (i * 8 + 8 > len)
			n = 4;
		w = 0;
		if (bpf_skb_load_bytes(skb, ETH_HLEN + i * 8, &w, n) || w != ((__u64 *)f.bytes)[i])
			return false;
	}
	if (bpf_map_delete_elem(&sl_resets, &k))
		return false;
	return reset_fix(skb, f.bytes, len);
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
	if (v.reason != SL_REASON_BLACKHOLE && (!enforce || destroy_reset_frame(skb, &d)))
		return TC_PASS;
	return drop(skb, &ev, &d, v.reason, v.rule_id);
}
