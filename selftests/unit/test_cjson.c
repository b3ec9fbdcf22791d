// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/cjson.c, the one canonical JSON form: what the log writer
 * (journal_line_*) emits, the log parser (jsonline_parse, jsonline_decode) reads back byte for
 * byte, and so does the daemon socket's parser (control_parse) from the socket's builder
 * (control_msg_*); the two writers put a string in the same bytes, and a number too. Nasty
 * strings by hand (control bytes, DEL, invalid UTF-8 of every kind, U+2028, UTF-16 surrogates
 * as CESU-8, the longest code point, strings as long as a line holds) and random byte strings.
 *
 * Usage: test_cjson        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "userspace/cjson.h"
#include "userspace/control.h"
#include "userspace/journal.h"
#include "userspace/jsonline.h"
#include "tap.h"

static const char *const nasty[] = {
	"",
	"plain ascii",
	"quote \" backslash \\ slash /",
	"\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x1f",
	"DEL \x7f and ESC \x1b[31m",
	"\\u0041 is not an escape here, nor \\n",
	"lone continuation \x80, lone lead \xc3, overlong \xc0\xaf and \xe0\x80\xaf",
	"truncated at the end \xe2\x82",
	"truncated \xe2\x82 in the middle",
	"surrogate as CESU-8 \xed\xa0\x80\xed\xb0\x80",
	"above U+10FFFF \xf4\x90\x80\x80 and \xf5\x80\x80\x80 and \xff\xfe",
	"U+2028 \xe2\x80\xa8 U+2029 \xe2\x80\xa9 U+FEFF \xef\xbb\xbf",
	"valid: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xa9 \xf4\x8f\xbf\xbf",
	"escaped look-alikes: \xc3\\u00a9",
	"\xc3\xc3\xa9",
};

/* The log writer's line for one string member, as a log line (seq and prev put in front). */
static int log_line(const char *val, char *out, size_t size)
{
	static struct journal_line l;
	struct timespec ts = {.tv_sec = 1, .tv_nsec = 0};
	int n;

	journal_line_begin(&l, "t", &ts);
	journal_line_str(&l, "v", val);
	journal_line_i64(&l, "i", INT64_MIN);
	journal_line_u64(&l, "u", UINT64_MAX);
	if (journal_line_finish(&l))
		return -E2BIG;
	n = snprintf(out, size, "{\"seq\":0,\"prev\":\"%064d\",%.*s", 0, (int)l.len - 2,
		     l.buf + 1);
	return n < 0 || (size_t)n >= size ? -E2BIG : n;
}

/* The string's bytes in the log writer's line, between its quotes. */
static bool log_string(const char *line, size_t len, const char **s, size_t *n)
{
	const char *at = strstr(line, "\"v\":\"");
	const char *end = at ? memmem(line, len, "\",\"i\":", 6) : NULL;

	if (!at || !end)
		return false;
	*s = at + 5;
	*n = (size_t)(end - *s);
	return true;
}

/* One string through both writers and both parsers. */
static bool roundtrip(const char *val, char *why)
{
	static char line[JOURNAL_LINE_MAX + 128], back[CONTROL_LINE_MAX];
	static struct jsonline jl;
	static struct control_msg m;
	static struct control_obj o;
	const struct jsonline_member *v;
	const char *reason, *ls, *cs;
	size_t off, ln, vlen = strlen(val);
	int64_t i;
	uint64_t u;
	int n, ret;
	char err[256];

	n = log_line(val, line, sizeof(line));
	EXPECT(n > 0, "the log writer refused a string of %zu bytes", vlen);
	ret = jsonline_parse(&jl, line, (size_t)n, &off, &reason);
	EXPECT(!ret, "the log parser refused the writer's line at byte %zu: %s", off, reason);
	v = jsonline_get(&jl, "v");
	EXPECT(v, "no member v");
	n = jsonline_decode(&jl, &v->v, back, sizeof(back));
	EXPECT(n == (int)vlen && !memcmp(back, val, vlen),
	       "the log parser read %d bytes back, not the %zu written", n, vlen);
	EXPECT(!jsonline_i64(&jl, "i", &i) && i == INT64_MIN, "INT64_MIN did not read back");
	EXPECT(!jsonline_u64(&jl, "u", &u) && u == UINT64_MAX, "UINT64_MAX did not read back");

	control_msg_begin(&m);
	control_msg_str(&m, "v", val);
	control_msg_u64(&m, "u", (uint64_t)INT64_MAX);
	EXPECT(!control_msg_end(&m), "the socket's builder refused a string of %zu bytes", vlen);
	ret = control_parse(&o, m.buf, m.len, err, sizeof(err));
	EXPECT(!ret, "the socket's parser refused its builder's line: %s", err);
	cs = control_str(&o, "v", NULL);
	EXPECT(cs && strlen(cs) == vlen && !memcmp(cs, val, vlen),
	       "the socket's parser read another string back");

	/* one escaper: the same bytes on the socket as in the log */
	EXPECT(log_string(line, strlen(line), &ls, &ln), "cannot find the string in the log line");
	EXPECT(m.len > 6 + ln && !memcmp(m.buf, "{\"v\":\"", 6) && !memcmp(m.buf + 6, ls, ln) &&
		       m.buf[6 + ln] == '"',
	       "the socket's builder and the log writer escape differently");
	return true;
}

static bool check_nasty(char *why)
{
	for (size_t k = 0; k < ARRAY_SIZE(nasty); k++)
		if (!roundtrip(nasty[k], why))
			return false;
	return true;
}

/* As long as a log line holds: every byte value 1..255 repeated, ending mid-sequence. */
static bool check_long(char *why)
{
	static char s[JOURNAL_LINE_MAX];
	size_t n = 0;
	bool ok;

	/* \u00xx is 6 bytes: a string of n bytes needs at most 6n in the line */
	for (; n < (JOURNAL_LINE_MAX - 200) / 6; n++)
		s[n] = (char)(1 + n % 255);
	s[n] = '\0';
	ok = roundtrip(s, why);
	if (!ok)
		return false;
	memset(s, 'a', JOURNAL_LINE_MAX - 200);
	s[JOURNAL_LINE_MAX - 200] = '\0';
	return roundtrip(s, why);
}

/* Random byte strings, weighted toward bytes >= 0x80 so that UTF-8 sequences, whole and not, occur. */
static bool check_random(char *why)
{
	unsigned int seed = 16;
	char s[256];

	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)rand_r(&seed) % (sizeof(s) - 1);

		for (size_t i = 0; i < n; i++) {
			unsigned int r = (unsigned int)rand_r(&seed);

			s[i] = (char)(r % 3 ? 0x80 + (r >> 8) % 0x78 : 1 + (r >> 8) % 0xff);
			if (r % 7 == 0)
				s[i] = (char)(0xc2 + (r >> 8) % 0x33);
		}
		s[n] = '\0';
		if (!roundtrip(s, why))
			return false;
	}
	return true;
}

static void buf_put(void *ctx, const char *s, size_t n)
{
	char **at = ctx;

	memcpy(*at, s, n);
	*at += n;
}

/*
 * The one-pass copy of a plain string (cjson_put_plain) writes cjson_put_string's bytes or
 * nothing: never for a string with a byte to escape, never past cap, always when it fits.
 */
static bool plain_matches(const char *val, char *why)
{
	static char ref[8 * 256 + 2], out[8 * 256 + 2];
	char *at = ref;
	size_t vlen = strlen(val), rlen, cap, n;
	bool plain;

	cjson_put_string(buf_put, &at, val);
	rlen = (size_t)(at - ref);
	plain = true;
	for (n = 0; n < vlen; n++)
		plain &= val[n] >= 0x20 && val[n] < 0x7f && val[n] != '"' && val[n] != '\\';
	for (cap = 0; cap <= rlen + 2; cap++) {
		n = cjson_put_plain(out, cap, val);
		EXPECT(n <= cap, "%zu bytes written into %zu", n, cap);
		EXPECT(!n || (plain && n == rlen && !memcmp(out, ref, n)),
		       "a %zu-byte string copied other than cjson_put_string writes it", vlen);
		EXPECT(n || !plain || cap < rlen, "a plain string that fits %zu bytes was refused",
		       cap);
	}
	return true;
}

static bool check_plain(char *why)
{
	unsigned int seed = 15;
	char s[256];

	for (size_t k = 0; k < ARRAY_SIZE(nasty); k++)
		if (strlen(nasty[k]) < sizeof(s) && !plain_matches(nasty[k], why))
			return false;
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)rand_r(&seed) % (sizeof(s) - 1);

		/* mostly printable ASCII, sometimes a byte to escape */
		for (size_t i = 0; i < n; i++) {
			unsigned int r = (unsigned int)rand_r(&seed);

			s[i] = (char)(r % 50 ? 0x20 + (r >> 8) % 0x5f : 1 + (r >> 8) % 0xff);
		}
		s[n] = '\0';
		if (!plain_matches(s, why))
			return false;
	}
	return true;
}

/*
 * The log writer's limit is the same for a plain string (copied in one pass) as for one that is
 * escaped byte by byte: a line is taken exactly when it and its newline fit JOURNAL_LINE_MAX - 1.
 */
static bool check_line_limit(char *why)
{
	static char s[JOURNAL_LINE_MAX + 8];
	static struct journal_line l;
	struct timespec ts = {.tv_sec = 1, .tv_nsec = 0};
	/* {"ts":1000000,"type":"t","v":"…"} and "\n": 33 bytes around the string */
	size_t around = 33, len;

	for (len = JOURNAL_LINE_MAX - around - 4; len < JOURNAL_LINE_MAX - around + 4; len++) {
		for (int esc = 0; esc < 2; esc++) {
			memset(s, 'a', len);
			if (esc)
				s[len / 2] = '\x7f'; /* \u007f: 5 bytes more */
			s[len] = '\0';
			journal_line_begin(&l, "t", &ts);
			journal_line_str(&l, "v", s);
			bool fits = len + around + (esc ? 5 : 0) <= JOURNAL_LINE_MAX - 1;
			int ret = journal_line_finish(&l);

			EXPECT(fits ? !ret && l.len == len + around + (esc ? 5 : 0) : ret == -E2BIG,
			       "a line of %zu bytes (escape: %d): %d, %zu bytes", len + around, esc,
			       ret, l.len);
		}
	}
	return true;
}

/* The number format: the one text for an integer, both signs and both ends. */
static bool check_numbers(char *why)
{
	static const struct {
		int64_t v;
		const char *text;
	} cases[] = {
		{0, "0"}, {-1, "-1"}, {42, "42"}, {INT64_MAX, "9223372036854775807"},
		{INT64_MIN, "-9223372036854775808"},
	};
	char buf[CJSON_INT_MAX + 1];
	size_t n;

	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		n = cjson_fmt_i64(buf, cases[k].v);
		buf[n] = '\0';
		EXPECT(!strcmp(buf, cases[k].text), "%s printed as %s", cases[k].text, buf);
	}
	n = cjson_fmt_u64(buf, UINT64_MAX);
	buf[n] = '\0';
	EXPECT(!strcmp(buf, "18446744073709551615"), "UINT64_MAX printed as %s", buf);
	/* every length, each power of ten and its neighbours, and random values, against printf */
	for (int k = 0; k < 20000; k++) {
		static unsigned int seed = 17;
		uint64_t v, p10 = 1;
		char ref[CJSON_INT_MAX + 1];

		for (int e = 0; e < k % 20; e++)
			p10 *= 10;
		v = k < 60 ? p10 - 1 + (uint64_t)(k / 20) : ((uint64_t)rand_r(&seed) << 33 ^
							   (uint64_t)rand_r(&seed) << 11 ^
							   (uint64_t)rand_r(&seed)) >> (k % 64);
		snprintf(ref, sizeof(ref), "%llu", (unsigned long long)v);
		n = cjson_fmt_u64(buf, v);
		buf[n] = '\0';
		EXPECT(!strcmp(buf, ref), "%s printed as %s", ref, buf);
	}
	return true;
}

/*
 * A list a line holds by a byte budget (journal_strv_fit): a flow line about an address shared
 * by 16 names, each 253 quotes (the longest DNS name, each byte written as 2), with everything
 * else such a line says at its longest, still fits a log line whole, and the list is as long
 * as the budget lets it be. All 16 names would not fit (the line would be refused for an
 * "anomaly: record too long" one, its destination and bytes lost).
 */
static bool check_strv_budget(char *why)
{
	static struct journal_line l;
	static char names[16][254], rule[128], comm[64];
	char *v[16];
	struct timespec ts = { .tv_sec = 1 };
	size_t i, fit, all;
	int err;

	for (i = 0; i < 16; i++) {
		memset(names[i], '"', 253);
		v[i] = names[i];
	}
	memset(rule, '"', sizeof(rule) - 1);
	memset(comm, '\x01', sizeof(comm) - 1);
	fit = journal_strv_fit(v, 16, 2048);
	all = journal_strv_fit(v, 16, SIZE_MAX);
	journal_line_begin(&l, "flow", &ts);
	journal_line_str(&l, "host", NULL);
	journal_line_strv(&l, "hosts", v, fit);
	journal_line_u64(&l, "hosts_more", 16 - fit);
	journal_line_str(&l, "sni", names[0]);
	journal_line_str(&l, "dst", "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255");
	journal_line_u64(&l, "port", 65535);
	journal_line_str(&l, "proto", "tcp");
	journal_line_str(&l, "decision", "deny");
	journal_line_bool(&l, "enforced", false);
	journal_line_str(&l, "reason", "host_total_cap");
	journal_line_str(&l, "rule", rule);
	journal_line_u64(&l, "req_bytes", UINT64_MAX);
	journal_line_u64(&l, "resp_bytes", UINT64_MAX);
	journal_line_u64(&l, "duration_ms", UINT64_MAX);
	journal_line_u64(&l, "pid", UINT32_MAX);
	journal_line_str(&l, "comm", comm);
	journal_line_u64(&l, "sock_cookie", UINT64_MAX);
	journal_line_u64(&l, "kseq", UINT64_MAX);
	err = journal_line_finish(&l);
	snprintf(why, WHY_LEN, "%zu of 16 names fit 2048 bytes (all fit an unbounded budget: %zu); "
		 "the line: %zu bytes, finish %d", fit, all, l.len, err);
	/* 2 + 4 * (2 + 2 * 253) + 3 = 2037: a fifth name would pass 2048 */
	return fit == 4 && all == 16 && !err && l.len + 128 < JOURNAL_LINE_MAX &&
	       journal_strv_fit(v, 16, 2037) == 4 && journal_strv_fit(v, 16, 2036) == 3 &&
	       journal_strv_fit(v, 0, 2) == 0;
}

int main(void)
{
	char why[WHY_LEN];

	printf("TAP version 13\n1..7\n");
	why[0] = '\0';
	report(check_nasty(why),
	       "nasty strings: the log and the socket read back what they wrote, in one form", why);
	why[0] = '\0';
	report(check_long(why), "strings as long as a log line holds read back", why);
	why[0] = '\0';
	report(check_random(why), "20000 random byte strings read back through both", why);
	why[0] = '\0';
	report(check_numbers(why), "one number format", why);
	why[0] = '\0';
	report(check_plain(why), "a plain string's one-pass copy is cjson_put_string's bytes or none",
	       why);
	why[0] = '\0';
	report(check_line_limit(why), "a line's size limit is the same for plain and escaped strings",
	       why);
	why[0] = '\0';
	report(check_strv_budget(why),
	       "a flow line listing 16 longest quote-filled names by a byte budget fits whole", why);
	return tap_status();
}
