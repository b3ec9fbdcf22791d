// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/util.c's formatting and clocks: util_fmt and util_fmt_append at and
 * around the buffer's end (what each leaves in the buffer, and what it returns), util_why, and
 * the clocks against clock_gettime read beside them. Every expected string is written out by hand.
 *
 * Usage: test_util        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "userspace/util.h"
#include "tap.h"

static bool t_fmt_fits(char *why)
{
	char buf[8];
	int ret = util_fmt(buf, sizeof(buf), "%s-%d", "ab", 42);

	EXPECT(ret == 0 && !strcmp(buf, "ab-42"), "expected 0 and \"ab-42\", got %d and \"%s\"", ret,
	       buf);
	/* exactly full: 7 characters and the NUL */
	ret = util_fmt(buf, sizeof(buf), "%s", "1234567");
	EXPECT(ret == 0 && !strcmp(buf, "1234567"), "expected 0 and \"1234567\", got %d and \"%s\"",
	       ret, buf);
	return true;
}

static bool t_fmt_cut(char *why)
{
	char buf[8];
	int ret = util_fmt(buf, sizeof(buf), "%s", "12345678");

	EXPECT(ret == -ENAMETOOLONG && !strcmp(buf, "1234567"),
	       "expected -ENAMETOOLONG and \"1234567\", got %d and \"%s\"", ret, buf);
	return true;
}

static bool t_append(char *why)
{
	char buf[16] = "first";
	int ret = util_fmt_append(buf, sizeof(buf), "; %s %u", "then", 2u);

	EXPECT(ret == 0 && !strcmp(buf, "first; then 2"),
	       "expected 0 and \"first; then 2\", got %d and \"%s\"", ret, buf);
	/* onto an empty buffer: util_fmt's result */
	buf[0] = '\0';
	ret = util_fmt_append(buf, sizeof(buf), "%s", "x");
	EXPECT(ret == 0 && !strcmp(buf, "x"), "expected 0 and \"x\", got %d and \"%s\"", ret, buf);
	return true;
}

static bool t_append_to_the_end(char *why)
{
	char buf[8] = "abc";
	int ret = util_fmt_append(buf, sizeof(buf), "%s", "defg");

	EXPECT(ret == 0 && !strcmp(buf, "abcdefg"), "exactly full: expected 0 and \"abcdefg\", got %d "
	       "and \"%s\"", ret, buf);
	/* nothing more fits: cut, the buffer unchanged and still a string */
	ret = util_fmt_append(buf, sizeof(buf), "%s", "h");
	EXPECT(ret == -ENAMETOOLONG && !strcmp(buf, "abcdefg"),
	       "full: expected -ENAMETOOLONG and \"abcdefg\", got %d and \"%s\"", ret, buf);
	/* an empty addition to a full buffer fits */
	ret = util_fmt_append(buf, sizeof(buf), "%s", "");
	EXPECT(ret == 0 && !strcmp(buf, "abcdefg"), "empty: expected 0 and \"abcdefg\", got %d and "
	       "\"%s\"", ret, buf);
	return true;
}

static bool t_append_cut(char *why)
{
	char buf[8] = "abc";
	int ret = util_fmt_append(buf, sizeof(buf), "%s", "defghij");

	EXPECT(ret == -ENAMETOOLONG && !strcmp(buf, "abcdefg"),
	       "expected -ENAMETOOLONG and \"abcdefg\" (cut at the end), got %d and \"%s\"", ret, buf);
	return true;
}

static bool t_append_no_nul(char *why)
{
	char buf[8] = { 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h' };
	/* given 4 bytes of it, none of them a NUL: those 4 are not a string to add to */
	int ret = util_fmt_append(buf, 4, "%s", "x");

	EXPECT(ret == -ENAMETOOLONG && !memcmp(buf, "abcdefgh", 8),
	       "expected -ENAMETOOLONG and all 8 bytes untouched, got %d and \"%.8s\"", ret, buf);
	return true;
}

static bool t_why(char *why)
{
	const char *got = util_why("the map is full", -ENOSPC);

	EXPECT(!strcmp(got, "the map is full"), "a why given: expected it, got \"%s\"", got);
	got = util_why("", -ENOSPC);
	EXPECT(!strcmp(got, strerror(ENOSPC)), "an empty why: expected \"%s\", got \"%s\"",
	       strerror(ENOSPC), got);
	got = util_why(NULL, -EPERM);
	EXPECT(!strcmp(got, strerror(EPERM)), "no why: expected \"%s\", got \"%s\"",
	       strerror(EPERM), got);
	return true;
}

/* util_clock_ns(clk) lies between two clock_gettime(clk) readings taken around it. */
static bool clock_between(clockid_t clk, const char *name, char *why)
{
	struct timespec a, b;
	int64_t lo, hi, got;

	clock_gettime(clk, &a);
	got = util_clock_ns(clk);
	clock_gettime(clk, &b);
	lo = (int64_t)a.tv_sec * 1000000000 + a.tv_nsec;
	hi = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec;
	EXPECT(lo <= got && got <= hi, "%s: expected %" PRId64 " in [%" PRId64 ", %" PRId64 "]", name,
	       got, lo, hi);
	return true;
}

static bool t_clocks(char *why)
{
	struct timespec a, b;
	int64_t lo, hi, got;

	if (!clock_between(CLOCK_BOOTTIME, "CLOCK_BOOTTIME", why) ||
	    !clock_between(CLOCK_MONOTONIC, "CLOCK_MONOTONIC", why) ||
	    !clock_between(CLOCK_REALTIME, "CLOCK_REALTIME", why))
		return false;
	clock_gettime(CLOCK_MONOTONIC, &a);
	got = util_mono_ms();
	clock_gettime(CLOCK_MONOTONIC, &b);
	lo = (int64_t)a.tv_sec * 1000 + a.tv_nsec / 1000000;
	hi = (int64_t)b.tv_sec * 1000 + b.tv_nsec / 1000000;
	EXPECT(lo <= got && got <= hi, "util_mono_ms: expected %" PRId64 " in [%" PRId64 ", %" PRId64
	       "]", got, lo, hi);
	return true;
}

static const struct tap_case cases[] = {
	{"util_fmt: what fits, up to exactly full", t_fmt_fits},
	{"util_fmt: one character too many is cut and said", t_fmt_cut},
	{"util_fmt_append: onto a string and onto an empty one", t_append},
	{"util_fmt_append: to exactly full, then nothing more fits", t_append_to_the_end},
	{"util_fmt_append: too long is cut at the end and said", t_append_cut},
	{"util_fmt_append: a buffer with no NUL is not written", t_append_no_nul},
	{"util_why: the why given, else the error's own text", t_why},
	{"util_clock_ns and util_mono_ms read the clock they name", t_clocks},
};

int main(void)
{
	return tap_run(cases, ARRAY_SIZE(cases));
}
