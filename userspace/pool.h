/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice daemon's spares: whole sets of a run's programs loaded and verified in advance, on a
 * thread of their own at the lowest priority, so that an attach whose policy fits one only
 * writes its configuration and policy and attaches (milliseconds, not the verifier's seconds).
 * A spare serves one run and ends with it: no state of one run can reach another. Spares are
 * never attached nor pinned, so a daemon's death frees them with it.
 */
#ifndef SLUICE_POOL_H
#define SLUICE_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "loader.h"

struct pool;

/*
 * Keep want spares (0: none, pool_new gives NULL and 0), each with maps sized caps, loading
 * them on a background thread from now on. Returns 0 or -errno.
 */
int pool_new(unsigned int want, const struct loader_caps *caps, bool verbose, struct pool **out);

/* The fd to poll for POLLIN: a spare is loaded (or failed to be); then pool_collect. -1: none. */
int pool_fd(const struct pool *p);

/* Take in what the thread finished; never blocks. A failure is said on stderr, once in a row. */
void pool_collect(struct pool *p);

/*
 * A spare made the run's (loader_take), or NULL: none ready, or none fits the run (then load
 * afresh; *why says which, a static string). Each take starts loading a replacement.
 */
struct loader *pool_take(struct pool *p, const struct policy *pol,
			 const struct policy_compiled *c, const struct loader_opts *opts,
			 const char **why);

/* Spares ready now, and wanted. */
size_t pool_ready(const struct pool *p);
unsigned int pool_want(const struct pool *p);

/* Stop the thread (waiting for a load under way) and free every spare. Accepts NULL. */
void pool_free(struct pool *p);

#endif /* SLUICE_POOL_H */
