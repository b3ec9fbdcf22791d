/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The RST of a socket sluice destroys, which the packet layer lets out (skb.bpf.c
 * destroy_reset), must pass the run's host side too (tc.bpf.c), which sees the frame without
 * its socket and cannot tell it from one an AF_PACKET socket made. So the packet layer writes
 * down the frame it let out, its IP and TCP headers whole (it has no payload), under its
 * 5-tuple; the host side passes a frame only if it is that one byte for byte, and only once
 * (it takes the entry), and only in a fixed form it writes over it (tc.bpf.c reset_fix): the
 * kernel's RST carries fields the workload chose (IP_TOS, IP_TTL, a flow label, SO_RCVBUF's
 * window, TCP_MD5SIG's digest), which must not reach a destination the policy denies. A frame
 * forged to pass is the kernel's own RST, to the peer of a connection sluice just destroyed, and
 * leaves in that form all the same. Only a run with a host side on every way out, whose workload
 * holds no CAP_NET_ADMIN (its sequence numbers: TCP_REPAIR), lets the RST out at all (the packet
 * layer's cgroup programs cannot write to a frame: loader_kill_socket).
 *
 * Declared by the decision layer as well, only so that the loader makes it one map for the run's
 * objects (share_maps, and a switch's new set keeps it). An LRU: an entry whose frame never
 * reached the host side (a run without one, a frame lost on the way) ages out.
 */
#ifndef SLUICE_RESETS_BPF_H
#define SLUICE_RESETS_BPF_H

#include "sluice.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, struct sl_ns_flow_key);
	__type(value, struct sl_reset_frame);
} sl_resets SEC(".maps");

#endif /* SLUICE_RESETS_BPF_H */
