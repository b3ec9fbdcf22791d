/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The unit tests' TAP 13 harness. A check is a function returning bool that, when it fails,
 * says in why (WHY_LEN bytes) what it expected and what it got: EXPECT does both. report()
 * prints one TAP line per check (and the why as a diagnostic), counting failures; a test's
 * main prints "TAP version 13" and its plan first, and returns tap_status() at the end, or
 * hands a table of checks to tap_run, which does all of that.
 */
#ifndef SLUICE_TAP_H
#define SLUICE_TAP_H

#include <stdbool.h>
#include <stdio.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define WHY_LEN 8192

/* Fail the current check with an "expected … got …" diagnostic. */
#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			snprintf(why, WHY_LEN, __VA_ARGS__);                                       \
			return false;                                                              \
		}                                                                                  \
	} while (0)

static int n_test, n_failed;

static inline void report(bool ok, const char *name, const char *why)
{
	n_test++;
	printf("%sok %d - %s\n", ok ? "" : "not ", n_test, name);
	if (!ok) {
		printf("# %s\n", why);
		n_failed++;
	}
	/* a test that then crashes must not take the lines before it along */
	fflush(stdout);
}

/* A check that could not run here: TAP's SKIP directive, with the reason (not a pass). */
static inline void report_skip(const char *name, const char *reason)
{
	n_test++;
	printf("ok %d - %s # SKIP %s\n", n_test, name, reason);
	fflush(stdout);
}

/* The exit status: 1 if any check failed. */
static inline int tap_status(void)
{
	return n_failed ? 1 : 0;
}

/* A check: its TAP name, and the function that runs it (false, why filled in: it failed). */
struct tap_case {
	const char *name;
	bool (*fn)(char *why);
};

/* TAP 13 for n cases, in order, the plan first; returns the exit status (tap_status). */
static inline int tap_run(const struct tap_case *cases, size_t n)
{
	char why[WHY_LEN];

	printf("TAP version 13\n1..%zu\n", n);
	for (size_t i = 0; i < n; i++) {
		why[0] = '\0';
		report(cases[i].fn(why), cases[i].name, why);
	}
	return tap_status();
}

#endif /* SLUICE_TAP_H */
