/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Whether the run's log can be written, for strict evidence: the layers that let a connection go
 * ahead (the decision layer, and the LSM layer for sockets handed into the run) refuse what they
 * would let through once it cannot, since its record could not reach the log. One map for the
 * run: the loader makes every object that declares it share the decision layer's.
 */
#ifndef SLUICE_LOGSTATE_BPF_H
#define SLUICE_LOGSTATE_BPF_H

#include "sluice.h"

/*
 * Index 0 is set (to 1) by userspace the moment the run's log cannot be written: with strict
 * evidence, what would go ahead is then refused, since its record could not reach the log.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sl_log_state SEC(".maps");

static __always_inline bool log_unwritable(void)
{
	__u32 zero = 0;
	__u32 *down = bpf_map_lookup_elem(&sl_log_state, &zero);

	return down && *down;
}

#endif /* SLUICE_LOGSTATE_BPF_H */
