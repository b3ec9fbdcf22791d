/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Byte totals per (rule, host) over a run, summed from its finished flows, for the log's
 * host_total lines. A host is the name the run's resolver produced the address for, else the
 * address (an IPv4 address asked as ::ffff:a.b.c.d or through NAT64 counts as the IPv4 one, as
 * the kernel's caps count it). Bounded: past HOSTTOTALS_MAX hosts, flows are counted as
 * untracked instead.
 */
#ifndef SLUICE_HOSTTOTALS_H
#define SLUICE_HOSTTOTALS_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "../bpf/sluice.h"

#define HOSTTOTALS_MAX 65536

struct hosttotal {
	uint16_t rule_id;
	uint32_t host_id; /* 0: the address names the host */
	uint8_t family;
	uint8_t addr[16];
	uint64_t flows;
	uint64_t req_bytes;
	uint64_t resp_bytes;
	bool shared; /* a flow counted here went to an address other names shared */
};

struct hosttotals;

struct hosttotals *hosttotals_new(void);
/*
 * Add one finished flow; shared: its address had been answered for other names too (its flow
 * line lists them), so that the host's line says its total may hold flows made for them.
 * -ENOSPC (counted in untracked) when the table is full.
 */
int hosttotals_add(struct hosttotals *t, const struct sl_flow *f, bool shared);
/* Flows that did not fit. */
uint64_t hosttotals_untracked(const struct hosttotals *t);
/* Call fn for every host, in the order each was first seen. */
void hosttotals_each(const struct hosttotals *t, void (*fn)(const struct hosttotal *h, void *ctx),
		     void *ctx);
void hosttotals_free(struct hosttotals *t);

#endif /* SLUICE_HOSTTOTALS_H */
