/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The policy commands that work from evidence (signed run logs) and between policies:
 *   sluice policy suggest LOG…   (suggest.c)      a policy from what the runs did
 *   sluice policy replay POLICY LOG…  (replay.c)  what a policy would have done to them
 *   sluice policy diff OLD NEW   (policy_diff.c)  two policies compared, in words
 * argv starts at the subcommand ("suggest", …); each returns its exit status.
 */
#ifndef SLUICE_POLICY_TOOLS_H
#define SLUICE_POLICY_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "../policy/policy.h"

int policy_suggest_main(int argc, char **argv);
int policy_replay_main(int argc, char **argv);
int policy_diff_main(int argc, char **argv);

/*
 * What sluice policy suggest writes for the model ev, into a malloc()ed *text (*len bytes),
 * parsed and compiled as policy check would (name: the file's name in an error). min_runs 0:
 * the default (2 when there are several runs, else 1). 0, or -errno with err saying why.
 */
struct evidence;
int suggest_text(const struct evidence *ev, size_t min_runs, bool unverified, const char *name,
		 char **text, size_t *len, char *err, size_t err_len);

/* A telemetry/analytics-looking name: the word or vendor domain that made it look so, or NULL. */
const char *suggest_telemetry_match(const char *host);

/*
 * Write what changed from old to new, in sentences a reviewer reads ("+ host pkgs.example
 * allowed on 443/tcp (rule pkgs)"); returns how many differences were written.
 */
size_t policy_diff_write(const struct policy *old, const struct policy *new, FILE *out);

#endif /* SLUICE_POLICY_TOOLS_H */
