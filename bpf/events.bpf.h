/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The evidence path on the BPF side: one ring buffer per run, a run-wide sequence number taken
 * before every reservation, and per-CPU, per-hook counters of reservations that failed. Userspace
 * turns counter increases into loss records, so nothing is ever dropped silently.
 */
#ifndef SLUICE_EVENTS_BPF_H
#define SLUICE_EVENTS_BPF_H

#include "sluice.h"

/* Set by the loader before load. */
const volatile __u32 sl_cfg_wakeup_bytes = 64 * 1024;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by the loader */
} sl_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SL_HOOK_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sl_lost SEC(".maps");

/*
 * Next kernel sequence number; userspace sees a gap for every lost record. A map rather than a
 * global so that every object of the run (sock_addr, skb) shares one sequence.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sl_seq SEC(".maps");

static __always_inline void event_hdr_init(struct sl_event_hdr *h, __u16 type, __u32 size)
{
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&sl_seq, &zero);

	h->type = type;
	h->version = SL_ABI_VERSION;
	h->size = size;
	h->ts_ns = bpf_ktime_get_boot_ns();
	/* an array lookup of index 0 cannot fail; the check is for the verifier */
	h->seq = seq ? __sync_fetch_and_add(seq, 1) : ~0ULL;
}

static __always_inline void event_count_loss(__u32 hook)
{
	__u64 *n = bpf_map_lookup_elem(&sl_lost, &hook);

	/* sock_addr programs can be preempted on PREEMPT kernels: keep the per-CPU add atomic. */
	if (n)
		__sync_fetch_and_add(n, 1);
}

/*
 * Hot-path records (allows) do not wake the reader: it polls on a short timer, and we force a
 * wake-up only when the buffer fills past sl_cfg_wakeup_bytes. Urgent records (denials, which the
 * user is waiting to read on stderr) always wake it; under a flood the kernel coalesces those
 * wake-ups into one pending irq_work.
 */
static __always_inline __u64 event_wakeup_flags(bool urgent)
{
	if (urgent)
		return BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_query(&sl_events, BPF_RB_AVAIL_DATA) >= sl_cfg_wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* Queue a record; false (and counted) when the ring buffer had no room for it. */
static __always_inline bool event_submit(void *ev, __u32 size, __u32 hook, bool urgent)
{
	if (bpf_ringbuf_output(&sl_events, ev, size, event_wakeup_flags(urgent))) {
		event_count_loss(hook);
		return false;
	}
	return true;
}

#endif /* SLUICE_EVENTS_BPF_H */
