/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Caches of packets judged allowed, so that a packet to where an earlier one was judged is not
 * judged again: the tries, the port table and the learned addresses walked for the same answer.
 *
 * - The backstop's (skb.bpf.c, sl_judged): a TCP socket that has no flow state of its own (an
 *   accepted connection; a socket whose connect() keeps none), by socket cookie: its packet to
 *   where its last one was judged allowed.
 * - The host side's (tc.bpf.c, sl_tc_judged): a frame's destination alone (cookie 0: a socket's
 *   is never 0), by a hash of it; the tc program judges every frame of the sandbox in full
 *   otherwise, established flows' too.
 *
 * Per CPU, direct-mapped (SL_JUDGED_SLOTS slots), each slot the whole key of one judgment: the
 * socket's cookie (never reused while the kernel runs), the packet's destination (family,
 * address, port, transport protocol: TCP and UDP, never a fragment) and the policy generation
 * (sl_cfg.era, never handed out twice in a run) that judged it. A packet is served by a slot only
 * when every field of the key is its own: keys that share a slot evict one another and never take
 * each other's verdict, and after a switch (a new era) every slot is stale, whether or not the
 * new programs share the map. What is judged is a function of that key alone (packet_judge reads
 * nothing else of the packet), and only what no time or state of the run can take back is noted:
 * an allow by the policy's addresses or its default, never one of an address learned for a name
 * (it expires with its DNS TTL, and a flow to it is held to the server-name check, which keeps
 * state of its own), never a denial.
 *
 * Per CPU is not alone enough: on one CPU a program can be interrupted by another run of it (a
 * softirq's ACK or retransmission over a process's send, or preemption where the kernel allows
 * it), half-way through reading or writing a slot. So a slot has a sequence number: a writer
 * takes it from even to odd with a compare-and-swap (or leaves the slot alone: another writer
 * has it) and back to even when the key is whole; a reader serves the slot only if it read the
 * same even number before and after the key. A slot read half-written is a miss, never a
 * mixture of two keys.
 */
#ifndef SLUICE_JUDGED_BPF_H
#define SLUICE_JUDGED_BPF_H

#include "sluice.h"
#include "cfg.bpf.h"
#include "packet.bpf.h"

/* A cache of slots (struct sl_judged, sluice.h): each object that keeps one declares its own. */
#define SL_JUDGED_MAP(name)                                                                        \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                           \
		__uint(max_entries, SL_JUDGED_SLOTS);                                              \
		__type(key, __u32);                                                                \
		__type(value, struct sl_judged);                                                   \
	} name SEC(".maps")

/* the compiler keeps the key's loads and stores between the sequence number's */
#define judged_barrier() asm volatile("" ::: "memory")

/* What can be noted and served: a whole TCP or UDP header, its ports read. */
static __always_inline bool judged_cacheable(const struct packet_dst *d)
{
	return !d->fragment && (d->proto == IPPROTO_TCP || d->proto == IPPROTO_UDP);
}

/* A socket's slot: its cookie's low bits. */
static __always_inline struct sl_judged *judged_slot_of_cookie(void *map, __u64 cookie)
{
	__u32 i = cookie & (SL_JUDGED_SLOTS - 1);

	return bpf_map_lookup_elem(map, &i);
}

/* A destination's slot: a hash of it (whatever it is, a slot is only ever served whole). */
static __always_inline struct sl_judged *judged_slot_of_dst(void *map, const struct packet_dst *d)
{
	const __u32 *a = (const __u32 *)d->addr;
	__u32 i = SL_JUDGED_DST_SLOT(a, d->port, d->proto);

	return bpf_map_lookup_elem(map, &i);
}

/* The packet to d (of the socket cookie, or 0) was judged allowed under the policy in force. */
static __always_inline bool judged_allowed(const struct sl_judged *j, __u64 cookie,
					   const struct packet_dst *d)
{
	const __u64 *a = (const __u64 *)d->addr, *b = (const __u64 *)j->addr;
	__u32 seq = *(volatile const __u32 *)&j->seq;
	bool same;

	if (seq & 1)
		return false;
	judged_barrier();
	same = j->cookie == cookie && j->era == sl_cfg.era && j->port == d->port &&
	       j->proto == d->proto && j->family == d->family && a[0] == b[0] && a[1] == b[1];
	judged_barrier();
	return same && *(volatile const __u32 *)&j->seq == seq;
}

/* Note the allow of the packet to d (of cookie), unless another writer holds the slot. */
static __always_inline void judged_note(struct sl_judged *j, __u64 cookie,
					const struct packet_dst *d)
{
	__u32 seq = *(volatile const __u32 *)&j->seq;

	if (seq & 1 || __sync_val_compare_and_swap(&j->seq, seq, seq + 1) != seq)
		return;
	judged_barrier();
	j->cookie = cookie;
	__builtin_memcpy(j->addr, d->addr, sizeof(j->addr));
	j->era = sl_cfg.era;
	j->port = d->port;
	j->proto = d->proto;
	j->family = d->family;
	judged_barrier();
	*(volatile __u32 *)&j->seq = seq + 2;
}

#endif /* SLUICE_JUDGED_BPF_H */
