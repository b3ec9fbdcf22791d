// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "seqset.h"

_Static_assert(SEQSET_WINDOW % 64 == 0, "the window is whole bitmap words");

static bool seen(const struct seqset *s, uint64_t k)
{
	uint64_t i = k % SEQSET_WINDOW;

	return s->bits[i / 64] >> (i % 64) & 1;
}

static void flip(struct seqset *s, uint64_t k)
{
	uint64_t i = k % SEQSET_WINDOW;

	s->bits[i / 64] ^= 1ull << (i % 64);
}

/* A number was seen right after the pending range: it cannot grow any more. */
static void pend_flush(struct seqset *s)
{
	if (!s->has_pend)
		return;
	s->has_pend = false;
	if (s->fn)
		s->fn(&s->pend, s->ctx);
}

/*
 * first..last are missing. Ranges come in ascending order; one that continues the pending range
 * extends it (the window can resolve a run of missing numbers in several steps).
 */
static void pend_add(struct seqset *s, uint64_t first, uint64_t last)
{
	s->missing += last - first + 1;
	if (s->has_pend && s->pend.last + 1 == first) {
		s->pend.last = last;
		return;
	}
	pend_flush(s);
	s->pend.first = first;
	s->pend.last = last;
	s->has_pend = true;
}

/*
 * The first number seen in [k, end), or end. Word by word: the numbers of one bitmap word are
 * consecutive, and the bits of numbers already resolved are clear, so a bit found past the
 * window's wrap belongs to no number below end.
 */
static uint64_t next_seen(const struct seqset *s, uint64_t k, uint64_t end)
{
	while (k < end) {
		uint64_t i = k % SEQSET_WINDOW;
		uint64_t w = s->bits[i / 64] >> (i % 64);

		if (w) {
			k += (uint64_t)__builtin_ctzll(w);
			return k < end ? k : end;
		}
		k += 64 - i % 64;
	}
	return end;
}

/* Resolve every number below new_low: those seen leave the window, the others are missing. */
static void resolve(struct seqset *s, uint64_t new_low)
{
	uint64_t end = s->high < new_low ? s->high : new_low;
	uint64_t k = s->low;

	if (new_low <= s->low)
		return;
	while (k < end) {
		uint64_t j;

		if (seen(s, k)) {
			flip(s, k);
			pend_flush(s);
			k++;
			continue;
		}
		j = next_seen(s, k, end);
		pend_add(s, k, j - 1);
		k = j;
	}
	/* nothing at or above high was seen */
	if (k < new_low)
		pend_add(s, k, new_low - 1);
	s->low = new_low;
	if (s->high < new_low)
		s->high = new_low;
}

int seqset_init(struct seqset *s, seqset_missing_fn fn, void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->bits = calloc(SEQSET_WINDOW / 64, sizeof(*s->bits));
	if (!s->bits)
		return -ENOMEM;
	s->fn = fn;
	s->ctx = ctx;
	return 0;
}

void seqset_free(struct seqset *s)
{
	free(s->bits);
	s->bits = NULL;
}

int seqset_add(struct seqset *s, uint64_t k)
{
	if (k < s->low)
		return -ERANGE;
	if (k == UINT64_MAX)
		return -EOVERFLOW;
	if (k - s->low < SEQSET_WINDOW && seen(s, k))
		return -EEXIST;
	if (k - s->low >= SEQSET_WINDOW)
		resolve(s, k - SEQSET_WINDOW + 1);
	flip(s, k);
	if (k >= s->high)
		s->high = k + 1;
	if (k != s->low)
		return 0;
	while (s->low < s->high && seen(s, s->low)) {
		flip(s, s->low);
		s->low++;
	}
	pend_flush(s);
	return 0;
}

void seqset_finish(struct seqset *s, uint64_t upto)
{
	resolve(s, upto);
	pend_flush(s);
}

void seqset_list_add(const struct seqset_range *m, void *list)
{
	struct seqset_list *l = list;

	if (l->n < SEQSET_RANGES_LISTED)
		l->r[l->n++] = *m;
	l->total++;
}
