/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The evidence path on the BPF side: one ring buffer per run, a run-wide sequence number taken
 * before every reservation, and per-CPU, per-hook counters of reservations that failed. Userspace
 * turns counter increases into loss records, so nothing is ever dropped silently.
 */
#ifndef SLUICE_EVENTS_BPF_H
#define SLUICE_EVENTS_BPF_H

#include "sluice.h"
#include "cfg.bpf.h"

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

/* The run's next kernel sequence number. */
static __always_inline __u64 event_seq_take(void)
{
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&sl_seq, &zero);

	/* an array lookup of index 0 cannot fail; the check is for the verifier */
	return seq ? __sync_fetch_and_add(seq, 1) : ~0ULL;
}

/*
 * ts_ns: CLOCK_BOOTTIME, read by the caller when it needs the same instant for something else
 * too (a flow's start or end): one clock read instead of two on the connect() and close() paths.
 */
static __always_inline void event_hdr_init_at(struct sl_event_hdr *h, __u16 type, __u32 size,
					      __u64 ts_ns)
{
	h->type = type;
	h->version = type == SL_EV_FLOW ? SL_FLOW_VERSION : SL_ABI_VERSION;
	h->size = size;
	h->ts_ns = ts_ns;
	/*
	 * The generation that judged a decision, so that its rule is named by that policy even
	 * when the reader meets it after a switch: a held denial (sl_sk_held) keeps the one that
	 * judged it at connect(), stamped there.
	 */
	if (type == SL_EV_DECISION && !((struct sl_decision_event *)h)->era)
		((struct sl_decision_event *)h)->era = sl_cfg.era;
	h->seq = event_seq_take();
}

static __always_inline void event_hdr_init(struct sl_event_hdr *h, __u16 type, __u32 size)
{
	event_hdr_init_at(h, type, size, bpf_ktime_get_boot_ns());
}

static __always_inline void event_count_loss(__u32 hook)
{
	__u64 *n = bpf_map_lookup_elem(&sl_lost, &hook);

	/* sock_addr programs can be preempted on PREEMPT kernels: keep the per-CPU add atomic. */
	if (n)
		__sync_fetch_and_add(n, 1);
}

/*
 * Where the reader had to get for another forced wake-up to be useful: the producer position
 * when the last one was sent (slot 0). Its own map so that every object of the run shares it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sl_wake SEC(".maps");

/*
 * Hot-path records (allows) do not wake the reader: it polls on a short timer. Urgent records
 * (denials, which the user is waiting to read on stderr) always wake it (an IRQ-work already
 * pending takes them for free). Allow records that find the buffer past sl_cfg.wakeup_bytes
 * wake it too, but at most once per consumer advance: a forced wake-up costs an IRQ-work
 * interrupt on this CPU, and a reader that has not yet consumed what was queued at the last one
 * is awake or about to be. Those records carry no flag rather than BPF_RB_NO_WAKEUP: the kernel
 * then wakes the reader itself if, at commit, the reader has caught up to exactly this record.
 * A record whose producer was preempted between the check and the commit can still find the
 * reader asleep past it; an allow record then waits for the reader's timer, never a denial.
 */
static __always_inline __u64 event_wakeup_flags(bool urgent)
{
	__u32 zero = 0;
	__u64 *woken, at;

	if (urgent)
		return BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_query(&sl_events, BPF_RB_AVAIL_DATA) < sl_cfg.wakeup_bytes)
		return BPF_RB_NO_WAKEUP;
	woken = bpf_map_lookup_elem(&sl_wake, &zero);
	if (!woken)
		return BPF_RB_FORCE_WAKEUP;
	at = *woken;
	if (bpf_ringbuf_query(&sl_events, BPF_RB_CONS_POS) < at)
		return 0;
	/* one producer of those that saw the same advance sends it */
	if (__sync_val_compare_and_swap(woken, at,
					bpf_ringbuf_query(&sl_events, BPF_RB_PROD_POS)) != at)
		return 0;
	return BPF_RB_FORCE_WAKEUP;
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

/*
 * Room for a record that must go out only if what it depends on is recorded too (the record of
 * a flow that a connect() ends, which must not go out for a connect that is then refused): fill
 * it (event_hdr_init_at first) and send it with event_commit, or give it back with event_drop.
 * Its sequence number is taken when it is filled, so one given back leaves no gap. NULL when the
 * ring buffer has no room: that is a lost record, counted and numbered as event_submit's is.
 */
static __always_inline void *event_reserve(__u32 size, __u32 hook)
{
	void *rec = bpf_ringbuf_reserve(&sl_events, size, 0);

	if (!rec) {
		event_seq_take();
		event_count_loss(hook);
	}
	return rec;
}

/*
 * Sent with no flag: such records are not urgent, and the kernel still wakes a reader that has
 * caught up to this one (event_wakeup_flags is not inlined twice into one program for them).
 */
static __always_inline void event_commit(void *rec)
{
	bpf_ringbuf_submit(rec, 0);
}

static __always_inline void event_drop(void *rec)
{
	bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
}

#endif /* SLUICE_EVENTS_BPF_H */
