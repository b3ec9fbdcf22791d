/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Socket state shared by the decision layer and the packet layer: the TLS server-name check,
 * held UDP denials and per-flow byte counts. Both objects declare these maps; the loader makes the second reuse the
 * first's, so they are one.
 */
#ifndef SLUICE_TLS_BPF_H
#define SLUICE_TLS_BPF_H

#include "sluice.h"
#include "addr.bpf.h"
#include "net.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sl_sk_tls);
} sl_sk_tls SEC(".maps");

/* Keys of 280 bytes: allocated as the resolver learns, not up front for the whole capacity. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* resized by the loader */
	__type(key, struct sl_sni_key);
	__type(value, struct sl_sni_name);
} sl_sni_ok SEC(".maps");

/* Denials of UDP connect() held until the first send (see struct sl_sk_held). */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sl_sk_held);
} sl_sk_held SEC(".maps");

/* Allowed connected flows and their byte counts (see struct sl_flow). */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sl_flow);
} sl_sk_flow SEC(".maps");

/* Each rule's byte caps, indexed by rule_id (n_rules + 1 entries; see struct sl_rule_caps). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by the loader */
	__type(key, __u32);
	__type(value, struct sl_rule_caps);
} sl_rule_caps SEC(".maps");

/*
 * Each rule's budget id, indexed by rule_id: what keys its hosts' totals (sl_host_key.rule_id).
 * The rule's own number at the start; a switch gives a rule of the new policy the id of the
 * old policy's rule it is (the same name; unnamed, the same destinations), a fresh one if there
 * is none, so that a budget follows the rule, never reset or handed to another by a renumbering
 * (userspace/switch_rules.c, switch_budget_matches).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by the loader */
	__type(key, __u32);
	__type(value, __u32);
} sl_rule_budget SEC(".maps");

/* The budget id of rule_id (the rule's number where none is set). */
static __always_inline __u16 rule_budget(__u16 rule_id)
{
	__u32 rid = rule_id, *id = bpf_map_lookup_elem(&sl_rule_budget, &rid);

	return id && *id ? (__u16)*id : rule_id;
}

/*
 * Byte totals per (rule, host) for rules with max_total_*. Not an LRU: an evicted total would
 * reopen a spent budget. A host that finds the map full, or no memory for its entry, cannot be
 * counted, and is refused (host_bytes_get: NULL). Allocated on use: preallocated, the map held
 * 1.75 MiB from its creation in every run of such a policy and every spare (256 KiB of buckets
 * now). Entries are never deleted, so a value pointer stays valid for the run.
 */
#define SL_HOST_TOTALS_MAX 16384

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SL_HOST_TOTALS_MAX);
	__type(key, struct sl_host_key);
	__type(value, struct sl_host_bytes);
} sl_host_bytes SEC(".maps");

/* The host's totals, created at zero; NULL when the map is full. */
static __always_inline struct sl_host_bytes *host_bytes_get(const struct sl_host_key *k)
{
	struct sl_host_bytes zero = {}, *b = bpf_map_lookup_elem(&sl_host_bytes, k);

	if (b)
		return b;
	bpf_map_update_elem(&sl_host_bytes, k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&sl_host_bytes, k);
}

#endif /* SLUICE_TLS_BPF_H */
