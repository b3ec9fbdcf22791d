// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * make bench's record source for the writer (selftests/tools/sl_feed.c): allow records put into
 * a live run's ring buffer by a program run with BPF_PROG_TEST_RUN, so that the writer (sluice
 * run, unchanged) reads, renders, signs and writes them as it does a workload's, while the
 * sender is no longer the limit (a connect or a datagram per record tops out far below what the
 * writer can take). Each record takes the run's next kernel sequence number (its sl_seq, before
 * the reservation, as the run's programs do) and a failed reservation is counted here, as the
 * kernel's losses are by the run's programs: records lost.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "sluice.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* the run's, by the pins bench.py names (bpf_map__reuse_fd): sizes are the run's */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} sl_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sl_seq SEC(".maps");

struct sl_feed_args {
	struct sl_decision_event tmpl; /* every field but the sequence, time and socket */
	__u32 n;		       /* records this run */
};

/* what was fed and lost, read by sl_feed after the runs */
struct sl_feed_counts {
	__u64 fed, lost;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_feed_counts);
} sl_feed_counts SEC(".maps");

struct sl_decision_event tmpl;

static long feed_one(__u64 i, void *unused)
{
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&sl_seq, &zero), kseq;
	struct sl_feed_counts *c = bpf_map_lookup_elem(&sl_feed_counts, &zero);
	struct sl_decision_event *e;

	if (!seq || !c)
		return 1;
	kseq = __sync_fetch_and_add(seq, 1);
	e = bpf_ringbuf_reserve(&sl_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&c->lost, 1);
		return 0;
	}
	__builtin_memcpy(e, &tmpl, sizeof(*e));
	e->hdr.seq = kseq;
	e->hdr.ts_ns = bpf_ktime_get_boot_ns();
	e->sock_cookie = kseq + 1;
	bpf_ringbuf_submit(e, 0);
	__sync_fetch_and_add(&c->fed, 1);
	return 0;
}

SEC("syscall")
int sl_feed(struct sl_feed_args *a)
{
	tmpl = a->tmpl;
	bpf_loop(a->n, feed_one, NULL, 0);
	return 0;
}
