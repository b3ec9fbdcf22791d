/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a packet really goes, read from its headers, and the run's allowlist applied to that:
 * the backstop of the cgroup_skb egress program and the host-side tc program both judge what
 * they see here, whatever the socket that sent it was allowed to reach.
 */
#ifndef SLUICE_PACKET_BPF_H
#define SLUICE_PACKET_BPF_H

#include "sluice.h"
#include "policy.bpf.h"
#include "net.bpf.h"

#define PACKET_MAX_EXT_HDRS 3
#define PACKET_DIRECT_MAX 512 /* offsets read in place (skb_read); beyond, by the helper */

/*
 * len bytes at off from skb->data (the network header for cgroup_skb, the Ethernet header for
 * tc), as bpf_skb_load_bytes() reads them: in place where they lie in the packet's linear part
 * (every header the stack builds), through the helper otherwise (paged data). The same bytes
 * either way; in place spares a helper call, which costs more per packet than the parsing
 * around it (issue 15). 0, or nonzero where the packet ends first.
 */
static __always_inline int skb_read(struct __sk_buff *skb, __u32 off, void *to, __u32 len)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;

	if (off <= PACKET_DIRECT_MAX && data + off + len <= end) {
		__builtin_memcpy(to, data + off, len);
		return 0;
	}
	return bpf_skb_load_bytes(skb, off, to, len);
}

struct packet_dst {
	__u8 addr[16] __attribute__((aligned(8))); /* v4 in the first 4 bytes */
	__u8 saddr[16] __attribute__((aligned(8))); /* the source, likewise (sl_ns_flows) */
	__u8 family;
	__u8 proto;	/* IPPROTO_* of the transport header (after IPv6 extension headers) */
	__u16 port;	/* destination port, host order; 0 without one */
	__u16 sport;	/* source port, likewise */
	__u32 l4;	/* offset of the transport header */
	__u8 hop_limit;
	__u8 icmp6_type; /* ICMPv6 only */
	bool fragment;	/* an IPv4/IPv6 fragment: the transport header may be elsewhere */
};

/*
 * Parse the IP header at l3 (skb->protocol names it): destination, transport protocol and port.
 * IPv6 hop-by-hop and destination options are skipped; more than PACKET_MAX_EXT_HDRS of them,
 * or a header that cannot be read, fails (-1): the caller cannot judge the packet.
 *
 * A global function, which the verifier walks once on its own, not at every caller: the reads
 * in place or through the helper (skb_read) would otherwise double the caller's paths at each
 * read (the backstop's walk passed the verifier's limit). d must not be NULL.
 */
__noinline int packet_dst(struct __sk_buff *skb, __u32 l3, struct packet_dst *d)
{
	__u32 l4;
	__u8 b[2];
	int i;

	if (!d)
		return -1;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (skb_read(skb, l3, &ip, sizeof(ip)) || ip.ihl < 5)
			return -1;
		d->family = AF_INET;
		d->proto = ip.protocol;
		d->hop_limit = ip.ttl;
		__builtin_memcpy(d->addr, &ip.daddr, 4);
		__builtin_memcpy(d->saddr, &ip.saddr, 4);
		d->fragment = ip.frag_off & bpf_htons(0x3fff);
		l4 = l3 + ip.ihl * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		__u8 fixed[8], next; /* version to hop limit; the addresses go straight into d */

		if (skb_read(skb, l3, fixed, sizeof(fixed)) ||
		    skb_read(skb, l3 + __builtin_offsetof(struct ipv6hdr, saddr), d->saddr, 16) ||
		    skb_read(skb, l3 + __builtin_offsetof(struct ipv6hdr, daddr), d->addr, 16))
			return -1;
		d->family = AF_INET6;
		next = fixed[__builtin_offsetof(struct ipv6hdr, nexthdr)];
		d->hop_limit = fixed[__builtin_offsetof(struct ipv6hdr, hop_limit)];
		l4 = l3 + sizeof(struct ipv6hdr);
		for (i = 0; i < PACKET_MAX_EXT_HDRS; i++) {
			if (next != IPPROTO_HOPOPTS && next != IPPROTO_DSTOPTS)
				break;
			if (skb_read(skb, l4, b, 2))
				return -1;
			next = b[0];
			l4 += 8 * (b[1] + 1);
		}
		if (next == IPPROTO_HOPOPTS || next == IPPROTO_DSTOPTS)
			return -1;
		d->fragment = next == IPPROTO_FRAGMENT;
		d->proto = next;
	} else {
		return -1;
	}
	d->port = 0;
	d->sport = 0;
	d->l4 = l4;
	if (d->fragment)
		return 0;
	if (d->proto == IPPROTO_TCP || d->proto == IPPROTO_UDP) {
		__be16 ports[2];

		if (skb_read(skb, l4, ports, sizeof(ports)))
			return -1;
		d->port = bpf_ntohs(ports[1]);
		d->sport = bpf_ntohs(ports[0]);
	} else if (d->proto == IPPROTO_ICMPV6) {
		if (skb_read(skb, l4, &d->icmp6_type, 1))
			return -1;
	}
	return 0;
}

/*
 * The run's allowlist applied to the packet's destination, as the decision layer applies it to
 * a connect(): the blackhole in every form, CIDR rules, learned addresses, the default. ev gets
 * what a decision record needs (a fragment has no port: only a default-allow policy passes it).
 */
static __always_inline void packet_judge(const struct packet_dst *d, struct verdict *v,
					 struct sl_decision_event *ev)
{
	__u8 proto = 0;

	if (!d->fragment && (d->proto == IPPROTO_TCP || d->proto == IPPROTO_UDP))
		proto = proto_bit(d->proto);
	else if (!d->fragment && (d->proto == IPPROTO_ICMP || d->proto == IPPROTO_ICMPV6))
		proto = SL_PROTO_ICMP;

	ev->family = d->family;
	ev->protocol = d->proto;
	ev->port = d->port;
	__builtin_memcpy(ev->addr, d->addr, 16);
	decide_dst(v, ev, proto);
}

#endif /* SLUICE_PACKET_BPF_H */
