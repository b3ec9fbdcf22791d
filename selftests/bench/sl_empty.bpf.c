// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * make bench's baseline for the per-packet figure (selftests/bench.py, packets): programs that
 * do nothing, attached at the hooks where a run's programs see every packet of a flow (the
 * cgroup's egress and ingress, the host-side peer's tcx ingress) and measured the same way, so
 * that what the kernel's run-time statistics add to every program run (two clock reads) and the
 * call itself are subtracted from the run's figures.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("cgroup_skb/egress")
int sl_empty_egress(struct __sk_buff *skb)
{
	return 1;
}

SEC("cgroup_skb/ingress")
int sl_empty_ingress(struct __sk_buff *skb)
{
	return 1;
}

/* TCX_NEXT, as the run's host-side program answers a frame it allows */
SEC("tcx/ingress")
int sl_empty_tc(struct __sk_buff *skb)
{
	return -1;
}
