// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The policy generation a switch's new set is loaded with (loader_era_next): above the one in
 * force and above every one loaded before, committed or not; never 0 (no generation), never one
 * handed out before, over more switches than an 8-bit counter had (it wrapped at 255); after
 * the last one, 0 (none left), never a wrap.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tap.h"
#include "../../userspace/loader.h"

/* Generations are handed out as switch.c does: in force moves on only when a commit succeeds. */
static bool t_failed_commit(char *why)
{
	uint32_t in_force = 1, high = 0, failed;

	failed = loader_era_next(in_force, high); /* loaded, then the commit failed */
	high = failed;
	EXPECT(failed == 2, "the first switch's generation is 2, got %u", failed);
	in_force = loader_era_next(in_force, high);
	EXPECT(in_force != failed && in_force == 3,
	       "the next switch after a failed commit never reuses its generation %u: got %u",
	       failed, in_force);
	return true;
}

static bool t_no_wrap(char *why)
{
	uint32_t in_force = 1, high = 0, next, i;

	for (i = 0; i < 1000; i++) {
		next = loader_era_next(in_force, high);
		EXPECT(next > in_force && next > high,
		       "switch %u: generation %u is not above %u in force and %u loaded", i, next,
		       in_force, high);
		high = next;
		if (i % 3) /* two of three commits succeed */
			in_force = next;
	}
	EXPECT(high == 1001, "1000 switches from 1: the last generation is 1001, got %u", high);
	return true;
}

static bool t_resume_gap(char *why)
{
	/* a resumed writer starts above whatever the dead one may have loaded */
	uint32_t next = loader_era_next(300, 300 + LOADER_ERA_RESUME_GAP);

	EXPECT(next == 301 + LOADER_ERA_RESUME_GAP, "got %u", next);
	return true;
}

/*
 * The last generation handed out (in force, or loaded and failed): none is left, never a wrap
 * to 1, which the programs would take for the run's first policy's (its flows, still open,
 * passed as judged now).
 */
static bool t_last(char *why)
{
	EXPECT(loader_era_next(UINT32_MAX - 1, 0) == UINT32_MAX, "the last one is 2^32 - 1");
	EXPECT(loader_era_next(UINT32_MAX, 0) == 0, "after 2^32 - 1 in force: none (0), got %u",
	       loader_era_next(UINT32_MAX, 0));
	EXPECT(loader_era_next(5, UINT32_MAX) == 0, "after 2^32 - 1 loaded: none (0), got %u",
	       loader_era_next(5, UINT32_MAX));
	return true;
}

static const struct tap_case cases[] = {
	{"a failed commit's generation is never the next switch's", t_failed_commit},
	{"1000 switches, a third failing: every generation above all before (no wrap)", t_no_wrap},
	{"a resumed writer's first generation is past the dead writer's gap", t_resume_gap},
	{"after the last generation none is handed out (the switch is refused), no wrap", t_last},
};

int main(void)
{
	return tap_run(cases, ARRAY_SIZE(cases));
}
