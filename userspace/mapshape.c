// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>

#include "mapshape.h"
#include "util.h"

static bool kind_equal(const struct map_kind *a, const struct map_kind *b)
{
	return a->type == b->type && a->key_size == b->key_size &&
	       a->value_size == b->value_size && a->map_flags == b->map_flags;
}

int map_shape_check(const char *name, const struct map_shape *run, const struct map_shape *build,
		    char *err, size_t err_len)
{
	const struct map_kind *r = &run->map, *b = &build->map;
	const char *what = "is";

	if (kind_equal(r, b)) {
		/* (the same type: both hold maps, or neither) */
		if (!run->inner_known || !build->inner_known ||
		    kind_equal(&run->inner, &build->inner))
			return 0;
		r = &run->inner;
		b = &build->inner;
		what = "holds maps";
	}
	if (err && err_len)
		util_fmt(err, err_len,
			 "the run's map %s %s of another build (type %u, key %u, value %u bytes, "
			 "flags %#x; this build's %u, %u, %u, %#x): use the build that started the "
			 "run, or detach it and attach it again",
			 name, what, r->type, r->key_size, r->value_size, r->map_flags, b->type,
			 b->key_size, b->value_size, b->map_flags);
	return -EPROTO;
}
