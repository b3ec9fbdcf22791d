/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Runs that share a network namespace (--netns) each put a host-side program on the same veth
 * peers, and each would apply its own allowlist to every frame there: the runs would drop each
 * other's traffic. So the frames are attributed. The packet layer of each run (cgroup_skb egress,
 * which knows its run: it is attached to the run's cgroup) records the addresses and ports of
 * every packet it lets out in sl_ns_flows, under the run's token; a run's host-side program
 * leaves a frame recorded by another run that is alive (sl_ns_runs) to that run, whose cgroup
 * judged it already and whose own host-side program judges it again. Every other frame — the
 * run's own, a frame no run's cgroup sent (AF_PACKET, a process outside every run, a packet the
 * kernel made, other than an ICMP error about a run's flow), a fragment — is judged by every
 * run's host-side program, so it passes only if every run there allows it.
 *
 * The two maps are pinned per namespace (<bpffs>/sluice/netns@<dev>-<ino>, see loader.c) and
 * shared by its runs. The programs reach them through a one-slot map of maps each, which the
 * loader fills when a run takes the set, after its load: a set verified in advance (sluice
 * daemon's spares) can serve a run in any namespace. Token 0: the run has no host side (no
 * --netns), nothing is recorded, the slots stay empty.
 *
 * The flows exist only while two runs or more are alive in the namespace. A run alone there has
 * nothing to attribute — every frame its host side sees is its own or no run's, and it judges
 * both — so its flows slot stays empty: the packet layer records nothing (no map write per
 * connect(), no 1.75 MiB LRU). The loader of a run that joins makes the map and puts it into the
 * slots of the runs there before its host side is attached, and into its own slot (with its
 * token into sl_ns_runs) only after: from then on each run's packet layer records what it lets
 * out, and a run killed before its host side existed has its frames judged by the others. The
 * last but one to leave empties the slot of the run that stays (loader.c, ns_sync, ns_join).
 *
 * A slot found empty fails closed. The packet layer records nothing: the frame is then judged by
 * every run's host side, its own run's too. The host side finds no other run's flow: it judges
 * the frame itself. Either way no frame is left unjudged. (A frame of a run's flow that left
 * before a second run joined, and an ICMP error about such a flow, are judged by the newcomer's
 * host side as well: a frame of that flow leaving after the join is recorded again.)
 */
#ifndef SLUICE_NSFLOWS_BPF_H
#define SLUICE_NSFLOWS_BPF_H

#include "sluice.h"
#include "packet.bpf.h"
#include "cfg.bpf.h" /* sl_cfg.ns_token: the run's in sl_ns_runs (random, never 0) */

/* The inner maps' shape: the loader makes (or finds pinned) maps of exactly this one. */
struct sl_ns_flows_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SL_NS_FLOWS_MAX);
	/*
	 * By size, key and value both (the kernel takes BTF for both or neither): the BTF of a
	 * map nested in another names its key struct only as declared.
	 */
	__uint(key_size, sizeof(struct sl_ns_flow_key));
	__uint(value_size, sizeof(__u64)); /* the token of the run whose cgroup sent it */
};

struct sl_ns_runs_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SL_NS_RUNS_MAX);
	__type(key, __u64); /* a run's token, while the run is alive */
	__type(value, __u8);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct sl_ns_flows_map);
} sl_ns_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct sl_ns_runs_map);
} sl_ns_runs SEC(".maps");

static __always_inline void *ns_map(void *outer)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(outer, &zero);
}

static __always_inline void ns_flow_key(struct sl_ns_flow_key *k, const struct packet_dst *d)
{
	__builtin_memset(k, 0, sizeof(*k));
	__builtin_memcpy(k->saddr, d->saddr, 16);
	__builtin_memcpy(k->daddr, d->addr, 16);
	k->sport = d->sport;
	k->dport = d->port;
	k->family = d->family;
	k->proto = d->proto;
}

/*
 * The flows the packet layer records into: the namespace's, while the run shares it with
 * another run; NULL when the run has no host side or is alone in its namespace (nothing to
 * record: its frames are judged by its own host side, the only one there).
 */
static __always_inline void *ns_flows_shared(void)
{
	return sl_cfg.ns_token ? ns_map(&sl_ns_flows) : NULL;
}

/*
 * The packet layer: this packet leaves the run's cgroup; its frame is the run's. flows: from
 * ns_flows_shared, asked first so that a run alone pays nothing more. opening: the packet opens
 * its 5-tuple (a TCP SYN of a new flow), which the map cannot hold for this run yet: it is
 * written without the lookup, which would miss (a walk of a cold bucket on every connect()).
 * What the write leaves is the same either way: the run's token under the key.
 */
static __always_inline void ns_flow_note(void *flows, const struct packet_dst *d, bool opening)
{
	struct sl_ns_flow_key k;
	__u64 token = sl_cfg.ns_token, *owner;

	ns_flow_key(&k, d);
	if (!opening) {
		owner = bpf_map_lookup_elem(flows, &k);
		if (owner && *owner == token)
			return;
	}
	bpf_map_update_elem(flows, &k, &token, BPF_ANY);
}

static __always_inline bool ns_key_of_other_run(void *flows, const struct sl_ns_flow_key *k)
{
	void *runs = ns_map(&sl_ns_runs);
	__u64 *owner;

	/* no runs map: the frame is judged here */
	if (!runs)
		return false;
	owner = bpf_map_lookup_elem(flows, k);
	if (!owner || *owner == sl_cfg.ns_token)
		return false;
	return bpf_map_lookup_elem(runs, owner) != NULL;
}

/*
 * The host side: a frame another living run's cgroup sent, for that run's program to judge.
 * flows: from ns_flows_shared (a run alone in its namespace judges every frame there).
 */
static __always_inline bool ns_flow_of_other_run(void *flows, const struct packet_dst *d)
{
	struct sl_ns_flow_key k;

	ns_flow_key(&k, d);
	return ns_key_of_other_run(flows, &k);
}

/*
 * An ICMP error the namespace's kernel sends about a packet it received — a port unreachable
 * for an answer to a socket already closed — belongs to the run whose flow that packet answered:
 * the quoted header's key with its ends swapped. (Outer and quoted header have one family.)
 */
static __always_inline bool ns_icmp_error_of_other_run(void *flows, struct __sk_buff *skb,
						       const struct packet_dst *d)
{
	struct packet_dst q = {};
	struct sl_ns_flow_key k;
	__u8 type;

	if (d->fragment)
		return false;
	if (d->family == AF_INET && d->proto == IPPROTO_ICMP) {
		/* unreachable, source quench, redirect, time exceeded, parameter problem */
		if (bpf_skb_load_bytes(skb, d->l4, &type, 1) ||
		    (type != 3 && type != 4 && type != 5 && type != 11 && type != 12))
			return false;
	} else if (d->family != AF_INET6 || d->proto != IPPROTO_ICMPV6 || d->icmp6_type > 4 ||
		   !d->icmp6_type) {
		return false; /* ICMPv6 errors: unreachable, too big, time exceeded, parameter */
	}
	if (packet_dst(skb, d->l4 + 8, &q) || q.family != d->family)
		return false;
	__builtin_memset(&k, 0, sizeof(k));
	__builtin_memcpy(k.saddr, q.addr, 16);
	__builtin_memcpy(k.daddr, q.saddr, 16);
	k.sport = q.port;
	k.dport = q.sport;
	k.family = q.family;
	k.proto = q.proto;
	return ns_key_of_other_run(flows, &k);
}

#endif /* SLUICE_NSFLOWS_BPF_H */
