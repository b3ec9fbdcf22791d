// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "seqset.h"

_Static_assert(SEQSET_WINDOW % (64 * 64) == 0, "the window is whole summary words");

static bool seen(const struct seqset *s, uint64_t k)
{
	uint64_t i = k % SEQSET_WINDOW;

	return s->bits[i / 64] >> (i % 64) & 1;
}

/* Flip number k's bit, and keep the summary bit of its word in step. */
static void flip(struct seqset *s, uint64_t k)
{
	uint64_t i = k % SEQSET_WINDOW, w = i / 64;

	s->bits[w] ^= 1ull << (i % 64);
	if (s->bits[w])
		s->summary[w / 64] |= 1ull << (w % 64);
	else
		s->summary[w / 64] &= ~(1ull << (w % 64));
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

/* The first bitmap word at or after word w (of this lap of the window) that is not zero. */
static uint64_t next_word(struct seqset *s, uint64_t w)
{
	while (w < SEQSET_WORDS) {
		uint64_t m = s->summary[w / 64] >> (w % 64);

		s->words_scanned++;
		if (m)
			return w + (uint64_t)__builtin_ctzll(m);
		w = (w / 64 + 1) * 64;
	}
	return SEQSET_WORDS;
}

/*
 * The first number seen in [k, end), or end. The numbers of one bitmap word are consecutive,
 * and the bits of numbers already resolved are clear, so a bit found past the window's wrap
 * belongs to no number below end. Zero words are skipped through the summary: a scan costs at
 * most a few hundred words (two laps of SEQSET_SUMMARY_WORDS), however far apart the numbers
 * seen are, not SEQSET_WORDS.
 */
static uint64_t next_seen(struct seqset *s, uint64_t k, uint64_t end)
{
	while (k < end) {
		uint64_t i = k % SEQSET_WINDOW, w = i / 64, bits = s->bits[w] >> (i % 64), step;

		s->words_scanned++;
		if (bits) {
			k += (uint64_t)__builtin_ctzll(bits);
			return k < end ? k : end;
		}
		/* to the next word, then over the zero words after it (to the lap's end at most) */
		step = 64 - i % 64 + (next_word(s, w + 1) - (w + 1)) * 64;
		if (end - k <= step)
			return end;
		k += step;
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
	s->bits = calloc(SEQSET_WORDS, sizeof(*s->bits));
	s->summary = calloc(SEQSET_SUMMARY_WORDS, sizeof(*s->summary));
	if (!s->bits || !s->summary) {
		seqset_free(s);
		return -ENOMEM;
	}
	s->fn = fn;
	s->ctx = ctx;
	return 0;
}

void seqset_free(struct seqset *s)
{
	free(s->bits);
	free(s->summary);
	s->bits = NULL;
	s->summary = NULL;
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
