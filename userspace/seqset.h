/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which sequence numbers never came: a set of the kernel sequence numbers seen so far, in
 * bounded memory, that reports the numbers missing from it as maximal ranges in ascending order.
 * The writer (run.c) feeds it every kseq it gives a line, the verifier (verify.c) every kseq it
 * reads, and both get the same ranges: the `loss_ranges` record the writer signs is compared
 * with what the verifier finds.
 *
 * Numbers may arrive out of order (the BPF programs take a number before they reserve ring-buffer
 * space, so two CPUs can queue theirs the other way round). Everything below `low` is resolved:
 * seen, or reported missing; a bitmap window of SEQSET_WINDOW numbers from `low` up holds the
 * ones seen out of order. A number more than SEQSET_WINDOW behind the largest one seen is
 * resolved as missing before it arrives; it is then refused (-ERANGE) like a repeat.
 */
#ifndef SLUICE_SEQSET_H
#define SLUICE_SEQSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Numbers tracked above the lowest one not yet seen (a bit each: 128 KiB). */
#define SEQSET_WINDOW (1u << 20)
/* The bitmap's 64-bit words, and the summary's: bit w of the summary says word w is not zero. */
#define SEQSET_WORDS (SEQSET_WINDOW / 64)
#define SEQSET_SUMMARY_WORDS (SEQSET_WORDS / 64)
/*
 * The most ranges a `loss_ranges` record lists (evidence spec): the first ones, ascending; its
 * "missing" count is exact however many there are.
 */
#define SEQSET_RANGES_LISTED 256

struct seqset_range {
	uint64_t first, last; /* inclusive */
};

/*
 * Called with each maximal range of missing numbers, once, in ascending order, as soon as the
 * range is known to be whole: when a number after it was seen, or at seqset_finish().
 */
typedef void (*seqset_missing_fn)(const struct seqset_range *m, void *ctx);

struct seqset {
	uint64_t low;	  /* every number below is resolved */
	uint64_t high;	  /* one past the largest number seen or resolved */
	uint64_t missing; /* numbers resolved as missing so far (reported or about to be) */
	/*
	 * Bitmap and summary words examined while looking for the next number seen: the work the
	 * window does, so a test can bound it (a crafted run of numbers far apart must not cost a
	 * scan of the whole window per number).
	 */
	uint64_t words_scanned;
	/* private */
	uint64_t *bits;		  /* SEQSET_WINDOW bits: number k is bit k % SEQSET_WINDOW */
	uint64_t *summary;	  /* SEQSET_WORDS bits: word w of bits is not zero */
	struct seqset_range pend; /* a missing range that may still grow */
	bool has_pend;
	seqset_missing_fn fn;
	void *ctx;
};

/* An empty set (nothing seen, nothing missing yet). -ENOMEM. */
int seqset_init(struct seqset *s, seqset_missing_fn fn, void *ctx);
/* Accepts a set never initialised (zeroed) or already freed. */
void seqset_free(struct seqset *s);

/*
 * k was seen. -EEXIST when it was seen before; -ERANGE when it is below low (seen before, or
 * already reported missing: it arrives more than SEQSET_WINDOW behind a later one); -EOVERFLOW
 * for UINT64_MAX. The set is unchanged on error.
 */
int seqset_add(struct seqset *s, uint64_t k);

/*
 * The end: every number below upto not seen is reported missing (numbers seen at or above upto
 * are left alone; the caller can compare upto with high). Call it once.
 */
void seqset_finish(struct seqset *s, uint64_t upto);

/* A missing-range callback that keeps the first SEQSET_RANGES_LISTED ranges and counts all. */
struct seqset_list {
	struct seqset_range r[SEQSET_RANGES_LISTED];
	size_t n;	/* listed */
	uint64_t total; /* ranges reported, listed or not */
};

void seqset_list_add(const struct seqset_range *m, void *list);

#endif /* SLUICE_SEQSET_H */
