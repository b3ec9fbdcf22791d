// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hosttotals.h"

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

/* The host's key, as bpf/tls.bpf.h host_key_of() forms it (v4 embedded forms as v4). */
static void key_of(const struct sl_flow *f, struct hosttotal *k)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t zero[12], one[4] = { 0, 0, 0, 1 }, none[4];

	memset(k, 0, sizeof(*k));
	k->rule_id = f->rule_id;
	k->host_id = f->host_id;
	if (f->host_id)
		return;
	if (f->family == AF_INET6 &&
	    (!memcmp(f->addr, mapped, 12) || !memcmp(f->addr, nat64, 12) ||
	     /* IPv4-compatible ::a.b.c.d, but not :: or ::1 */
	     (!memcmp(f->addr, zero, 12) && memcmp(f->addr + 12, none, 4) &&
	      memcmp(f->addr + 12, one, 4)))) {
		k->family = AF_INET;
		memcpy(k->addr, f->addr + 12, 4);
		return;
	}
	k->family = f->family;
	memcpy(k->addr, f->addr, f->family == AF_INET ? 4 : 16);
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

int hosttotals_add(struct hosttotals *t, const struct sl_flow *f)
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
