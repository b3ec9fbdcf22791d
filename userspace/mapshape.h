/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A map's shape: what the kernel copies in and out of it, and what this build's structs must
 * match before a map of a run this process did not load (a take-over's, found through the run's
 * pins and links) is read into them. A run another build of sluice started (a daemon upgraded
 * under it) may hold a map of the same name laid out otherwise: a value the kernel copies into a
 * narrower stack variable of this build overflows it. Type, key and value sizes and flags are
 * compared, and for a map of maps the same of a map it holds. A struct of the same size laid out
 * otherwise is not told apart (sluice.8).
 */
#ifndef SLUICE_MAPSHAPE_H
#define SLUICE_MAPSHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct map_kind {
	__u32 type, key_size, value_size, map_flags;
};

struct map_shape {
	struct map_kind map;
	/*
	 * A map of maps: the maps it holds. Known for this build's (its inner map template); for a
	 * run's, from a map it holds, if it holds one (an empty one is read as nothing, and the
	 * kernel refuses to put into it a map of another shape than its own template).
	 */
	bool inner_known;
	struct map_kind inner;
};

/*
 * 0 when the run's map name (run) has this build's shape (build); else -EPROTO, with err (may
 * be NULL) naming the map and both shapes.
 */
int map_shape_check(const char *name, const struct map_shape *run, const struct map_shape *build,
		    char *err, size_t err_len);

#endif
