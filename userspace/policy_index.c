// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The policy's matching as an index (policy_index.h). Each answer is defined by the policy
 * module's function of the same job; the unit test test_policy_index compares them on random
 * policies and inputs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../bpf/addr.bpf.h"
#include "policy_index.h"

/* A rule's ports, sorted and merged: policy_rule_takes without the walk. */
struct pi_rule {
	struct policy_port_range *ports;
	size_t n_ports;
	uint8_t protocols;
	bool any_port;
};

/* Names: the first rule listing each exact name, and each wildcard's ".suffix". */
struct pi_str {
	const char *s; /* in the policy; NULL: empty slot */
	long rule;
};

struct pi_strtab {
	struct pi_str *slots;
	size_t n_slots; /* a power of two, at least twice the entries */
};

/* One prefix, as the tries hold it, and the rules listing it, in policy order. */
struct pi_prefix {
	bool used;
	uint8_t family, plen;
	uint8_t addr[16];
	size_t *rules;
	size_t n_rules, cap;
};

struct policy_index {
	const struct policy *p;
	struct pi_rule *rules;
	struct pi_strtab exact, wild;
	struct pi_prefix *prefixes;
	size_t n_prefix_slots;
	/* the prefix lengths the policy uses, per family */
	uint8_t plens4[33], plens6[129];
	size_t n_plens4, n_plens6;
	uint64_t steps;
};

static uint64_t fnv(const void *data, size_t n, uint64_t h)
{
	const unsigned char *b = data;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static size_t slots_for(size_t n)
{
	size_t s = 16;

	while (s < 2 * n + 2)
		s *= 2;
	return s;
}

static int range_cmp(const void *a, const void *b)
{
	const struct policy_port_range *x = a, *y = b;

	return x->lo != y->lo ? (x->lo < y->lo ? -1 : 1) : (x->hi < y->hi ? -1 : x->hi > y->hi);
}

static int rule_build(struct pi_rule *pr, const struct policy_rule *r)
{
	size_t i, n = 0;

	pr->protocols = r->protocols;
	pr->any_port = !r->n_ports;
	if (!r->n_ports)
		return 0;
	pr->ports = calloc(r->n_ports, sizeof(*pr->ports));
	if (!pr->ports)
		return -ENOMEM;
	memcpy(pr->ports, r->ports, r->n_ports * sizeof(*pr->ports));
	qsort(pr->ports, r->n_ports, sizeof(*pr->ports), range_cmp);
	for (i = 0; i < r->n_ports; i++) {
		if (n && (uint32_t)pr->ports[i].lo <= (uint32_t)pr->ports[n - 1].hi + 1) {
			if (pr->ports[i].hi > pr->ports[n - 1].hi)
				pr->ports[n - 1].hi = pr->ports[i].hi;
			continue;
		}
		pr->ports[n++] = pr->ports[i];
	}
	pr->n_ports = n;
	return 0;
}

/* Keep the first (lowest) rule for s. */
static void str_put(struct pi_strtab *t, const char *s, long rule)
{
	size_t h = (size_t)fnv(s, strlen(s), 1469598103934665603ULL) & (t->n_slots - 1);

	for (; t->slots[h].s; h = (h + 1) & (t->n_slots - 1))
		if (!strcmp(t->slots[h].s, s))
			return;
	t->slots[h].s = s;
	t->slots[h].rule = rule;
}

static long str_get(struct policy_index *x, const struct pi_strtab *t, const char *s)
{
	size_t h = (size_t)fnv(s, strlen(s), 1469598103934665603ULL) & (t->n_slots - 1);

	for (; t->slots[h].s; h = (h + 1) & (t->n_slots - 1)) {
		x->steps++;
		if (!strcmp(t->slots[h].s, s))
			return t->slots[h].rule;
	}
	x->steps++;
	return -1;
}

static void mask(uint8_t *addr, unsigned int plen)
{
	unsigned int i;

	for (i = 0; i < 16; i++) {
		if (plen >= 8) {
			plen -= 8;
			continue;
		}
		addr[i] &= (uint8_t)(0xff00 >> plen);
		plen = 0;
	}
}

static size_t prefix_hash(uint8_t family, uint8_t plen, const uint8_t addr[16])
{
	uint8_t k[18];

	k[0] = family;
	k[1] = plen;
	memcpy(k + 2, addr, 16);
	return (size_t)fnv(k, sizeof(k), 1469598103934665603ULL);
}

static struct pi_prefix *prefix_find(struct policy_index *x, uint8_t family, uint8_t plen,
				     const uint8_t addr[16], bool add)
{
	size_t h = prefix_hash(family, plen, addr) & (x->n_prefix_slots - 1);
	struct pi_prefix *e;

	for (;; h = (h + 1) & (x->n_prefix_slots - 1)) {
		e = &x->prefixes[h];
		x->steps += !add;
		if (!e->used)
			break;
		if (e->family == family && e->plen == plen && !memcmp(e->addr, addr, 16))
			return e;
	}
	if (!add)
		return NULL;
	e->used = true;
	e->family = family;
	e->plen = plen;
	memcpy(e->addr, addr, 16);
	return e;
}

static int prefix_add(struct policy_index *x, const struct policy_cidr *c, size_t rule)
{
	struct policy_cidr j;
	struct pi_prefix *e;
	uint8_t addr[16] = {0};

	policy_cidr_judged_form(c, &j);
	memcpy(addr, j.addr, j.family == AF_INET ? 4 : 16);
	mask(addr, j.prefixlen);
	e = prefix_find(x, j.family, j.prefixlen, addr, true);
	if (e->n_rules && e->rules[e->n_rules - 1] == rule)
		return 0;
	if (e->n_rules == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 2, *r = reallocarray(e->rules, cap, sizeof(*r));

		if (!r)
			return -ENOMEM;
		e->rules = r;
		e->cap = cap;
	}
	e->rules[e->n_rules++] = rule;
	if (j.family == AF_INET) {
		size_t i;

		for (i = 0; i < x->n_plens4 && x->plens4[i] != j.prefixlen; i++)
			;
		if (i == x->n_plens4)
			x->plens4[x->n_plens4++] = j.prefixlen;
	} else {
		size_t i;

		for (i = 0; i < x->n_plens6 && x->plens6[i] != j.prefixlen; i++)
			;
		if (i == x->n_plens6)
			x->plens6[x->n_plens6++] = j.prefixlen;
	}
	return 0;
}

int policy_index_new(const struct policy *p, struct policy_index **out)
{
	struct policy_index *x = calloc(1, sizeof(*x));
	size_t i, k, n_hosts = 0, n_cidrs = 0;

	if (!x)
		return -ENOMEM;
	x->p = p;
	for (i = 0; i < p->n_rules; i++) {
		n_hosts += p->rules[i].n_hosts;
		n_cidrs += p->rules[i].n_cidrs;
	}
	x->rules = calloc(p->n_rules ? p->n_rules : 1, sizeof(*x->rules));
	x->exact.n_slots = x->wild.n_slots = slots_for(n_hosts);
	x->exact.slots = calloc(x->exact.n_slots, sizeof(*x->exact.slots));
	x->wild.slots = calloc(x->wild.n_slots, sizeof(*x->wild.slots));
	x->n_prefix_slots = slots_for(n_cidrs);
	x->prefixes = calloc(x->n_prefix_slots, sizeof(*x->prefixes));
	if (!x->rules || !x->exact.slots || !x->wild.slots || !x->prefixes)
		goto nomem;
	for (i = 0; i < p->n_rules; i++) {
		const struct policy_rule *r = &p->rules[i];

		if (rule_build(&x->rules[i], r))
			goto nomem;
		for (k = 0; k < r->n_hosts; k++) {
			const char *h = r->hosts[k];

			/* "*.example.com" matches a name ending in ".example.com" (host_matches) */
			if (!strncmp(h, "*.", 2))
				str_put(&x->wild, h + 1, (long)i);
			else
				str_put(&x->exact, h, (long)i);
		}
		for (k = 0; k < r->n_cidrs; k++)
			if (prefix_add(x, &r->cidrs[k], i))
				goto nomem;
	}
	x->steps = 0;
	*out = x;
	return 0;
nomem:
	policy_index_free(x);
	return -ENOMEM;
}

void policy_index_free(struct policy_index *x)
{
	size_t i;

	if (!x)
		return;
	if (x->rules)
		for (i = 0; i < x->p->n_rules; i++)
			free(x->rules[i].ports);
	free(x->rules);
	free(x->exact.slots);
	free(x->wild.slots);
	if (x->prefixes)
		for (i = 0; i < x->n_prefix_slots; i++)
			free(x->prefixes[i].rules);
	free(x->prefixes);
	free(x);
}

long policy_index_host(struct policy_index *x, const char *name)
{
	long best = str_get(x, &x->exact, name), r;
	const char *d;

	/* every ".suffix" with at least one character before it */
	for (d = name[0] ? strchr(name + 1, '.') : NULL; d; d = strchr(d + 1, '.')) {
		r = str_get(x, &x->wild, d);
		if (r >= 0 && (best < 0 || r < best))
			best = r;
	}
	return best;
}

bool policy_index_takes(struct policy_index *x, size_t rule, uint16_t port, uint8_t proto)
{
	const struct pi_rule *r = &x->rules[rule];
	size_t lo = 0, hi = r->n_ports;

	x->steps++;
	if (!(r->protocols & proto))
		return false;
	if (r->any_port || proto == SL_PROTO_ICMP)
		return true;
	/* the last range starting at or below port */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		x->steps++;
		if (r->ports[mid].lo <= port)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && port <= r->ports[lo - 1].hi;
}

long policy_index_cidr(struct policy_index *x, int family, const uint8_t *addr, uint16_t port,
		       uint8_t proto)
{
	uint8_t a[16], m[16];
	const uint8_t *plens;
	size_t n_plens, i, k;
	long best = -1;

	/* where the programs look it up, as policy_cidr_match does */
	family = policy_judged_addr(family, addr, a);
	plens = family == AF_INET ? x->plens4 : x->plens6;
	n_plens = family == AF_INET ? x->n_plens4 : x->n_plens6;
	for (i = 0; i < n_plens; i++) {
		const struct pi_prefix *e;

		memcpy(m, a, sizeof(m));
		mask(m, plens[i]);
		e = prefix_find(x, (uint8_t)family, plens[i], m, false);
		if (!e)
			continue;
		/* in policy order: the first that takes the port is this prefix's answer */
		for (k = 0; k < e->n_rules; k++) {
			if (best >= 0 && e->rules[k] >= (size_t)best)
				break;
			if (policy_index_takes(x, e->rules[k], port, proto)) {
				best = (long)e->rules[k];
				break;
			}
		}
	}
	return best;
}

uint64_t policy_index_steps(const struct policy_index *x)
{
	return x->steps;
}
