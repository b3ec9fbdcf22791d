// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hosttotals.h"
#include "../bpf/addr.bpf.h"

#define BUCKETS 4096

struct node {
	struct hosttotal h;
	struct node *next;	 /* in its bucket */
	struct node *next_seen;	 /* in the order hosts were first seen */
};

struct hosttotals {
	struct node *bucket[BUCKETS];
	struct node *first, *last;
	size_t n;
	uint64_t untracked;
};

struct hosttotals *hosttotals_new(void)
{
	return calloc(1, sizeof(struct hosttotals));
}

/* The host's key, formed by the same code as the kernel's caps (v4 embedded forms as v4). */
static void key_of(const struct sl_flow *f, struct hosttotal *k)
{
	struct sl_host_key hk;

	host_key_of(&hk, f->rule_id, f->host_id, f->family, f->addr);
	memset(k, 0, sizeof(*k));
	k->rule_id = hk.rule_id;
	k->host_id = hk.host_id;
	k->family = hk.family;
	memcpy(k->addr, hk.addr, sizeof(k->addr));
}

static bool same_host(const struct hosttotal *a, const struct hosttotal *b)
{
	return a->rule_id == b->rule_id && a->host_id == b->host_id && a->family == b->family &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr));
}

static size_t bucket_of(const struct hosttotal *k)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a over the key's fields */
	const uint8_t *p = k->addr;
	size_t i;

	h = (h ^ k->rule_id) * 1099511628211ULL;
	h = (h ^ k->host_id) * 1099511628211ULL;
	h = (h ^ k->family) * 1099511628211ULL;
	for (i = 0; i < sizeof(k->addr); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return (size_t)(h % BUCKETS);
}

int hosttotals_add(struct hosttotals *t, const struct sl_flow *f, bool shared)
{
	struct hosttotal k;
	struct node *n;
	size_t b;

	key_of(f, &k);
	b = bucket_of(&k);
	for (n = t->bucket[b]; n; n = n->next)
		if (same_host(&n->h, &k))
			break;
	if (!n) {
		if (t->n == HOSTTOTALS_MAX || !(n = calloc(1, sizeof(*n)))) {
			t->untracked++;
			return -ENOSPC;
		}
		n->h = k;
		n->next = t->bucket[b];
		t->bucket[b] = n;
		if (t->last)
			t->last->next_seen = n;
		else
			t->first = n;
		t->last = n;
		t->n++;
	}
	n->h.flows++;
	n->h.shared |= shared;
	n->h.req_bytes += f->req_bytes;
	n->h.resp_bytes += f->resp_bytes;
	return 0;
}

uint64_t hosttotals_untracked(const struct hosttotals *t)
{
	return t->untracked;
}

void hosttotals_each(const struct hosttotals *t, void (*fn)(const struct hosttotal *h, void *ctx),
		     void *ctx)
{
	const struct node *n;

	for (n = t->first; n; n = n->next_seen)
		fn(&n->h, ctx);
}

void hosttotals_free(struct hosttotals *t)
{
	struct node *n, *next;

	if (!t)
		return;
	for (n = t->first; n; n = next) {
		next = n->next_seen;
		free(n);
	}
	free(t);
}
