// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/seqset.c: which sequence numbers never came. Every expectation is either
 * written out by hand or computed by a model written here the plain way (an array of flags over
 * all the numbers, ranges read off it at the end), never by the code under test.
 *
 * Usage: test_seqset        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/seqset.h"
#include "tap.h"

#define W ((uint64_t)SEQSET_WINDOW)
#define MAX_GOT (1u << 20)

/* What the callback received, in order. */
struct got {
	struct seqset_range *r;
	size_t n;
	bool overflow;
};

static void got_add(const struct seqset_range *m, void *ctx)
{
	struct got *g = ctx;

	if (g->n == MAX_GOT) {
		g->overflow = true;
		return;
	}
	g->r[g->n++] = *m;
}

static struct got g_got;
static struct seqset g_set;

static bool start(char *why)
{
	g_got.n = 0;
	g_got.overflow = false;
	seqset_free(&g_set);
	EXPECT(!seqset_init(&g_set, got_add, &g_got), "seqset_init failed");
	return true;
}

/* The ranges received so far are exactly want[0..n), and the count is `missing`. */
static bool expect_ranges(const uint64_t (*want)[2], size_t n, uint64_t missing, char *why)
{
	EXPECT(!g_got.overflow, "more ranges than the test can hold");
	EXPECT(g_got.n == n, "expected %zu ranges, got %zu (first: %" PRIu64 "..%" PRIu64 ")", n,
	       g_got.n, g_got.n ? g_got.r[0].first : 0, g_got.n ? g_got.r[0].last : 0);
	for (size_t i = 0; i < n; i++)
		EXPECT(g_got.r[i].first == want[i][0] && g_got.r[i].last == want[i][1],
		       "range %zu: expected %" PRIu64 "..%" PRIu64 ", got %" PRIu64 "..%" PRIu64, i,
		       want[i][0], want[i][1], g_got.r[i].first, g_got.r[i].last);
	EXPECT(g_set.missing == missing, "expected %" PRIu64 " missing, got %" PRIu64, missing,
	       g_set.missing);
	return true;
}

static bool add_all(const uint64_t *ks, size_t n, char *why)
{
	for (size_t i = 0; i < n; i++) {
		int err = seqset_add(&g_set, ks[i]);

		EXPECT(!err, "seqset_add(%" PRIu64 ") = %d, expected 0", ks[i], err);
	}
	return true;
}

static bool t_empty(char *why)
{
	static const uint64_t want[][2] = {{0, 9}};

	if (!start(why))
		return false;
	seqset_finish(&g_set, 0);
	if (!expect_ranges(want, 0, 0, why))
		return false;
	if (!start(why))
		return false;
	seqset_finish(&g_set, 10);
	return expect_ranges(want, 1, 10, why);
}

static bool t_in_order(char *why)
{
	uint64_t ks[100];

	for (size_t i = 0; i < ARRAY_SIZE(ks); i++)
		ks[i] = i;
	if (!start(why) || !add_all(ks, ARRAY_SIZE(ks), why))
		return false;
	EXPECT(g_set.low == 100 && g_set.high == 100,
	       "expected low = high = 100, got %" PRIu64 ", %" PRIu64, g_set.low, g_set.high);
	seqset_finish(&g_set, 100);
	return expect_ranges(NULL, 0, 0, why);
}

/* Out of order, with gaps: 3 1 0 7 5 9, finish at 12: missing 2, 4, 6, 8, 10-11. */
static bool t_gaps_out_of_order(char *why)
{
	static const uint64_t ks[] = {3, 1, 0, 7, 5, 9};
	static const uint64_t want[][2] = {{2, 2}, {4, 4}, {6, 6}, {8, 8}, {10, 11}};

	if (!start(why) || !add_all(ks, ARRAY_SIZE(ks), why))
		return false;
	EXPECT(g_set.low == 2 && g_set.high == 10,
	       "expected low 2, high 10, got %" PRIu64 ", %" PRIu64, g_set.low, g_set.high);
	/* nothing is known missing before the end: every gap may still fill */
	if (!expect_ranges(want, 0, 0, why))
		return false;
	seqset_finish(&g_set, 12);
	return expect_ranges(want, ARRAY_SIZE(want), 6, why);
}

static bool t_errors(char *why)
{
	static const uint64_t ks[] = {0, 1, 5};
	static const uint64_t want[][2] = {{2, 4}};
	int err;

	if (!start(why) || !add_all(ks, ARRAY_SIZE(ks), why))
		return false;
	err = seqset_add(&g_set, 5);
	EXPECT(err == -EEXIST, "a repeat in the window: expected -EEXIST, got %d", err);
	err = seqset_add(&g_set, 1);
	EXPECT(err == -ERANGE, "a repeat below low: expected -ERANGE, got %d", err);
	err = seqset_add(&g_set, UINT64_MAX);
	EXPECT(err == -EOVERFLOW, "UINT64_MAX: expected -EOVERFLOW, got %d", err);
	EXPECT(g_set.low == 2 && g_set.high == 6,
	       "errors changed the set: low %" PRIu64 ", high %" PRIu64, g_set.low, g_set.high);
	seqset_finish(&g_set, 6);
	return expect_ranges(want, 1, 3, why);
}

/*
 * The window slides: 0-4, 100, then W + 200 forces every number up to 200 to be resolved. 5-99
 * is reported at once (100 ends it); 101-200 is pending, and grows at the end up to 300.
 */
static bool t_slide(char *why)
{
	static const uint64_t ks[] = {0, 1, 2, 3, 4, 100, W + 200};
	static const uint64_t want[][2] = {{5, 99}, {101, W + 199}, {W + 201, W + 299}};
	int err;

	if (!start(why) || !add_all(ks, ARRAY_SIZE(ks), why))
		return false;
	EXPECT(g_set.low == 201, "expected low 201, got %" PRIu64, g_set.low);
	if (!expect_ranges(want, 1, 95 + 100, why))
		return false;
	/* a number resolved missing that arrives late is refused, and stays missing */
	err = seqset_add(&g_set, 150);
	EXPECT(err == -ERANGE, "a late arrival: expected -ERANGE, got %d", err);
	seqset_finish(&g_set, W + 300);
	return expect_ranges(want, 3, 95 + (W + 199 - 101 + 1) + 99, why);
}

/* Numbers far apart: the counts are exact without walking the gaps. */
static bool t_huge_gap(char *why)
{
	static const uint64_t t = 1ull << 40;
	static const uint64_t ks[] = {0, t, t + 2};
	static const uint64_t want[][2] = {{1, (1ull << 40) - 1},
					   {(1ull << 40) + 1, (1ull << 40) + 1},
					   {(1ull << 40) + 3, (1ull << 40) + 4}};

	if (!start(why) || !add_all(ks, ARRAY_SIZE(ks), why))
		return false;
	seqset_finish(&g_set, t + 5);
	return expect_ranges(want, 3, t - 1 + 1 + 2, why);
}

/* finish below numbers seen: only what is below upto is reported; high is left for the caller. */
static bool t_finish_below_seen(char *why)
{
	static const uint64_t ks[] = {0, 3, 8};
	static const uint64_t want[][2] = {{1, 2}, {4, 4}};

	if (!start(why) || !add_all(ks, ARRAY_SIZE(ks), why))
		return false;
	seqset_finish(&g_set, 5);
	EXPECT(g_set.high == 9, "expected high 9 (kseq 8 seen), got %" PRIu64, g_set.high);
	return expect_ranges(want, 2, 3, why);
}

/* A range the window resolves in several steps is reported once, whole. */
static bool t_merge_steps(char *why)
{
	static const uint64_t want[][2] = {{1, W + 9}};
	uint64_t k;

	if (!start(why) || seqset_add(&g_set, 0))
		return false;
	/* each of these moves low by one, resolving one more missing number */
	for (k = W + 10; k < W + 20; k++)
		EXPECT(!seqset_add(&g_set, k), "seqset_add(%" PRIu64 ") failed", k);
	EXPECT(g_got.n == 0, "a range reported before it was whole: %" PRIu64 "..%" PRIu64,
	       g_got.r[0].first, g_got.r[0].last);
	seqset_finish(&g_set, W + 20);
	return expect_ranges(want, 1, W + 9, why);
}

static bool t_list(char *why)
{
	struct seqset s;
	struct seqset_list *l = calloc(1, sizeof(*l));
	uint64_t k;

	EXPECT(l, "no memory");
	EXPECT(!seqset_init(&s, seqset_list_add, l), "seqset_init failed");
	for (k = 0; k < 2 * 300; k += 2)
		seqset_add(&s, k + 1); /* 0, 2, 4, … missing: 300 ranges of one */
	seqset_finish(&s, 600);
	seqset_free(&s);
	seqset_free(&s); /* twice is fine */
	EXPECT(l->n == SEQSET_RANGES_LISTED && l->total == 300 && s.missing == 300,
	       "expected %d listed of 300, 300 missing; got %zu of %" PRIu64 ", %" PRIu64,
	       SEQSET_RANGES_LISTED, l->n, l->total, s.missing);
	for (size_t i = 0; i < l->n; i++)
		EXPECT(l->r[i].first == 2 * i && l->r[i].last == 2 * i,
		       "listed range %zu: %" PRIu64 "..%" PRIu64, i, l->r[i].first, l->r[i].last);
	free(l);
	return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Against a model: random arrivals (drops, local shuffles, repeats, very late ones). */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static bool t_model(uint64_t seed, uint64_t n, unsigned int drop_pct, uint64_t shuffle,
		    unsigned int late_permille, char *why)
{
	uint64_t *order = malloc(n * 2 * sizeof(*order));
	bool *seen = calloc(n, sizeof(*seen));
	uint64_t m = 0, max_acc = 0, missing = 0, i, k, nr = 0;
	bool any = false, ok = false;

	rng_state = seed;
	if (!order || !seen) {
		snprintf(why, WHY_LEN, "no memory");
		goto out;
	}
	/* the arrival order: each number once (unless dropped), some repeated */
	for (k = 0; k < n; k++) {
		if (rnd() % 100 < drop_pct)
			continue;
		order[m++] = k;
		if (rnd() % 1000 == 0)
			order[m++] = k; /* a repeat */
	}
	/* shuffle locally: swap with a neighbour up to `shuffle` places on */
	for (i = 0; shuffle && i < m; i++) {
		uint64_t j = i + rnd() % (shuffle + 1), t;

		if (j >= m)
			continue;
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	/* some swap with one W + a few places on: that one far too early, this far too late */
	for (i = 0; late_permille && i + W + 8 < m; i++) {
		uint64_t j = i + W + 1 + rnd() % 8, t;

		if (rnd() % 1000 >= late_permille)
			continue;
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	if (!start(why))
		goto out;
	for (i = 0; i < m; i++) {
		int err = seqset_add(&g_set, order[i]), want;

		k = order[i];
		/* refused: seen before, or W or more behind a number accepted before it */
		if (seen[k])
			want = -EEXIST;
		else if (any && k + W <= max_acc)
			want = -ERANGE;
		else
			want = 0;
		if (err != want && !(want == -EEXIST && err == -ERANGE)) {
			snprintf(why, WHY_LEN,
				 "seed %" PRIu64 ": seqset_add(%" PRIu64 ") at %" PRIu64
				 " = %d, model says %d",
				 seed, k, i, err, want);
			goto out;
		}
		if (err)
			continue;
		seen[k] = true;
		if (!any || k > max_acc)
			max_acc = k;
		any = true;
	}
	seqset_finish(&g_set, n);
	/* the model's ranges, compared as they are read off */
	for (k = 0; k < n;) {
		uint64_t first;

		if (seen[k]) {
			k++;
			continue;
		}
		for (first = k; k < n && !seen[k]; k++)
			;
		missing += k - first;
		if (nr >= g_got.n || g_got.r[nr].first != first || g_got.r[nr].last != k - 1) {
			snprintf(why, WHY_LEN,
				 "seed %" PRIu64 ": range %" PRIu64 " should be %" PRIu64
				 "..%" PRIu64 ", got %s%" PRIu64 "..%" PRIu64,
				 seed, nr, first, k - 1, nr >= g_got.n ? "none " : "",
				 nr < g_got.n ? g_got.r[nr].first : 0,
				 nr < g_got.n ? g_got.r[nr].last : 0);
			goto out;
		}
		nr++;
	}
	if (nr != g_got.n || missing != g_set.missing) {
		snprintf(why, WHY_LEN,
			 "seed %" PRIu64 ": %" PRIu64 " ranges, %" PRIu64
			 " missing expected; got %zu, "
			 "%" PRIu64,
			 seed, nr, missing, g_got.n, g_set.missing);
		goto out;
	}
	ok = true;
out:
	free(order);
	free(seen);
	return ok;
}

static bool t_model_small(char *why)
{
	for (uint64_t seed = 1; seed <= 200; seed++)
		if (!t_model(seed * 0x9e3779b97f4a7c15ull, 1000 + seed * 37, seed % 50, seed % 20,
			     0, why))
			return false;
	return true;
}

static bool t_model_window(char *why)
{
	/* three windows' worth: 1% dropped, shuffled up to 64 places; 5%, 1000 places, 1 in 1000
	 * swapped with one a window away */
	return t_model(0x243f6a8885a308d3ull, 3 * W, 1, 64, 0, why) &&
	       t_model(0x13198a2e03707344ull, 3 * W + 17, 5, 1000, 1, why);
}

/*
 * Numbers far apart (a crafted log's kseqs): every one pushes the window past the one before, so
 * each add resolves a window of W numbers holding a single bit. The work must stay a few hundred
 * words per number (the summary skips zero words 64 at a time), not the W / 64 = 16384 words a
 * word-by-word scan costs; the counts stay exact. Patterns: W apart, W - 1 apart (the bit sits
 * anywhere in the window), and W / 2 + 7 apart (two bits in the window).
 */
static bool t_sparse_work(char *why)
{
	static const uint64_t gaps[] = {W, W - 1, W / 2 + 7};
	const uint64_t n = 3000, per_add = 3 * SEQSET_SUMMARY_WORDS;

	for (size_t g = 0; g < ARRAY_SIZE(gaps); g++) {
		uint64_t k;

		if (!start(why))
			return false;
		for (k = 0; k < n; k++)
			EXPECT(!seqset_add(&g_set, k * gaps[g]),
			       "gap %" PRIu64 ": add %" PRIu64 " failed", gaps[g], k * gaps[g]);
		seqset_finish(&g_set, (n - 1) * gaps[g] + 1);
		EXPECT(g_set.missing == (n - 1) * (gaps[g] - 1) && g_got.n == n - 1,
		       "gap %" PRIu64 ": expected %" PRIu64 " missing in %" PRIu64
		       " ranges, got %" PRIu64 " in %zu",
		       gaps[g], (n - 1) * (gaps[g] - 1), n - 1, g_set.missing, g_got.n);
		EXPECT(g_set.words_scanned <= n * per_add,
		       "gap %" PRIu64 ": %" PRIu64 " words scanned for %" PRIu64
		       " numbers (%" PRIu64 " each), expected at most %" PRIu64 " each",
		       gaps[g], g_set.words_scanned, n, g_set.words_scanned / n, per_add);
	}
	return true;
}

static const struct tap_case cases[] = {
	{"an empty set: nothing below 0, all of 0..9 below 10", t_empty},
	{"numbers in order: nothing missing", t_in_order},
	{"out of order with gaps: the gaps, and only at the end", t_gaps_out_of_order},
	{"repeats, a number below the window and UINT64_MAX are refused, nothing changes",
	 t_errors},
	{"the window slides: a range is reported as soon as it is whole; late arrivals refused",
	 t_slide},
	{"a gap of 2^40: exact counts", t_huge_gap},
	{"finish below numbers seen", t_finish_below_seen},
	{"a range resolved in steps is reported once", t_merge_steps},
	{"seqset_list keeps the first 256 ranges and counts all", t_list},
	{"200 random small runs against the model", t_model_small},
	{"runs over three windows, shuffled and very late arrivals, against the model",
	 t_model_window},
	{"3000 numbers a window apart: a few hundred words scanned each, not the whole window",
	 t_sparse_work},
};

int main(void)
{
	int status;

	g_got.r = calloc(MAX_GOT, sizeof(*g_got.r));
	if (!g_got.r) {
		fprintf(stderr, "no memory\n");
		return 1;
	}
	status = tap_run(cases, ARRAY_SIZE(cases));
	seqset_free(&g_set);
	free(g_got.r);
	return status;
}
