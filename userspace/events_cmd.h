/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice events: the security team's view of the log (a file, followed as it grows and rotates,
 * or the daemon's live stream), filtered, as the lines themselves or one compact human line per
 * record; and sluice metrics: the Prometheus metrics of finished logs. Not the ring-buffer
 * reader (events.c).
 */
#ifndef SLUICE_EVENTS_CMD_H
#define SLUICE_EVENTS_CMD_H

#include <stdbool.h>
#include <stddef.h>

#include "jsonline.h"

/* What a line must be to be shown; NULL members match anything. */
struct events_filter {
	const char *run_id;   /* the line's run_id, exactly */
	const char *decision; /* the line's decision, exactly (allow, deny; dns: refused, error) */
	const char *host;     /* fnmatch glob, case-insensitive, on host, sni, name or dst */
	const char *types;    /* the line's type: one, or several separated by commas */
};

bool events_filter_match(const struct events_filter *f, const struct jsonline *jl);

/*
 * One record as a human line (no "\n"): UTC time, run, type, verdict, what it was about
 * (host, dst:port/proto, or what), then rule=, reason=, … and pid/comm where the line has
 * them. Bytes from the log outside printable ASCII (and spaces) are shown as \xHH, so a line
 * can neither split a column nor reach the terminal. Returns the length, or -ENOSPC (buf then
 * holds as much as fits).
 */
int events_compact(const struct jsonline *jl, char *buf, size_t size);

int events_cmd_main(int argc, char **argv);
int metrics_cmd_main(int argc, char **argv, const char *version);

#endif /* SLUICE_EVENTS_CMD_H */
