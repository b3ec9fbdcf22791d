// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/report_html.c: the escaping of the log's strings into sluice report's
 * page (each attack written out by hand with the exact output expected, then random bytes
 * checked against the properties the page relies on, judged by a decoder written here) and the
 * geometry of the SVG charts (lengths and positions worked out by hand).
 *
 * Usage: test_report_html        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/report_html.h"
#include "tap.h"

static char why[WHY_LEN];

/* The escaped form of n bytes of s, malloc'd. */
static char *esc(const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	report_html_textn(f, s, n);
	fclose(f);
	return buf;
}

struct esc_case {
	const char *name, *in;
	size_t n; /* 0: strlen(in) */
	const char *out;
};

static const struct esc_case esc_cases[] = {
	{"script element", "<script>alert(1)</script>", 0, "&lt;script&gt;alert(1)&lt;/script&gt;"},
	{"attribute breakout, double quote", "\" onload=\"x", 0, "&quot; onload=&quot;x"},
	{"attribute breakout, single quote", "' onload='x", 0, "&#39; onload=&#39;x"},
	{"end of the style element", "</style><b>", 0, "&lt;/style&gt;&lt;b&gt;"},
	{"a character reference stays text", "&#60;&lt;", 0, "&amp;#60;&amp;lt;"},
	{"backslash doubled", "a\\x41", 0, "a\\\\x41"},
	{"ESC and newline", "\x1b[31m\n", 0, "\\x1b[31m\\x0a"},
	{"NUL and DEL", "a\0b\x7f", 4, "a\\x00b\\x7f"},
	{"lone continuation and 0xff", "\x80\xff", 0, "\\x80\\xff"},
	{"truncated sequence at the end", "ok\xc3", 0, "ok\\xc3"},
	{"overlong slash", "\xc0\xaf", 0, "\\xc0\\xaf"},
	{"surrogate", "\xed\xa0\x80", 0, "\\xed\\xa0\\x80"},
	{"beyond U+10FFFF", "\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80"},
	{"well-formed UTF-8 kept", "caf\xc3\xa9 \xf0\x9f\x90\xb3", 0,
	 "caf\xc3\xa9 \xf0\x9f\x90\xb3"},
	{"right-to-left override", "moc.\xe2\x80\xaelive", 0, "moc.\\xe2\\x80\\xaelive"},
	{"C1 control", "\xc2\x9b", 0, "\\xc2\\x9b"},
	{"BOM", "\xef\xbb\xbfx", 0, "\\xef\\xbb\\xbfx"},
	{"NUL inside a sequence", "\xe2\x80\0", 3, "\\xe2\\x80\\x00"},
};

static bool check_cases(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(esc_cases); i++) {
		const struct esc_case *c = &esc_cases[i];
		char *got = esc(c->in, c->n ? c->n : strlen(c->in));
		bool ok = !strcmp(got, c->out);

		if (!ok)
			snprintf(why, WHY_LEN, "%s: expected \"%s\", got \"%s\"", c->name, c->out,
				 got);
		free(got);
		if (!ok)
			return false;
	}
	return true;
}

/* Length of a well-formed UTF-8 sequence at s (the plain table of RFC 3629), or 0. */
static size_t model_utf8(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	cp = s[0] & (0xff >> (len + 1));
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * Random strings (biased to the bytes that matter): the output is valid UTF-8, holds no control
 * byte, no < > " ' and no & that does not start one of the four references written.
 */
static bool check_random(void)
{
	static const char hot[] = "<>&\"'\\/\x00\x1b\n\x7f\x80\xc3\xe2\xed\xf0\xff";
	unsigned char in[64];
	unsigned int seed = 13;
	int round;

	for (round = 0; round < 20000; round++) {
		size_t n = (size_t)(rand_r(&seed) % 64), i, k;
		char *got;

		for (i = 0; i < n; i++)
			in[i] = rand_r(&seed) % 3 ? (unsigned char)hot[rand_r(&seed) % 17]
						  : (unsigned char)rand_r(&seed);
		got = esc((const char *)in, n);
		for (k = 0; got[k];) {
			const unsigned char *g = (const unsigned char *)got + k;
			size_t len = model_utf8(g, strlen(got) - k);

			if (!len || *g < 0x20 || *g == 0x7f || strchr("<>\"'", *g) ||
			    (*g == '&' && strncmp((const char *)g, "&amp;", 5) &&
			     strncmp((const char *)g, "&lt;", 4) &&
			     strncmp((const char *)g, "&gt;", 4) &&
			     strncmp((const char *)g, "&quot;", 6) &&
			     strncmp((const char *)g, "&#39;", 5))) {
				snprintf(why, WHY_LEN, "round %d: byte 0x%02x at %zu of \"%s\"",
					 round, *g, k, got);
				free(got);
				return false;
			}
			k += len;
		}
		free(got);
	}
	return true;
}

/* For sluice's own text in a <pre>: newlines kept, everything else as in text. */
static bool check_lines(void)
{
	static const char in[] = "a: <b>\n\tc\x1b\n";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool ok;

	if (!f)
		abort();
	report_html_lines(f, in, sizeof(in) - 1);
	fclose(f);
	ok = !strcmp(buf, "a: &lt;b&gt;\n\\x09c\\x1b\n");
	if (!ok)
		snprintf(why, WHY_LEN, "got \"%s\"", buf);
	free(buf);
	return ok;
}

static bool check_bar_len(void)
{
	static const struct {
		uint64_t v, max;
		unsigned int w, want;
	} c[] = {
		{0, 100, 360, 0},			/* nothing: no bar */
		{100, 100, 360, 360},			/* the largest: full width */
		{50, 100, 360, 180},			/* half */
		{1, 1000, 360, 1},			/* 0.36 rounds to 0, but stays visible */
		{1, UINT64_MAX, 360, 1},		/* and with a huge max */
		{UINT64_MAX / 2, UINT64_MAX, 360, 180}, /* no overflow */
		{5, 0, 360, 0},				/* no max */
		{200, 100, 360, 360},			/* never past the width */
		{1, 3, 360, 120},
		{2, 3, 100, 67}, /* 66.67 rounds up */
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(c); i++) {
		unsigned int got = report_bar_len(c[i].v, c[i].max, c[i].w);

		EXPECT(got == c[i].want,
		       "bar_len(%" PRIu64 ", %" PRIu64 ", %u): expected %u, got %u", c[i].v,
		       c[i].max, c[i].w, c[i].want, got);
	}
	return true;
}

static bool check_time_x(void)
{
	static const struct {
		int64_t t, t0, t1;
		unsigned int want;
	} c[] = {
		{1500, 1000, 2000, 320},  {1000, 1000, 2000, 0},	  {2000, 1000, 2000, 640},
		{500, 1000, 2000, 0},	 /* before the run: clamped */
		{9000, 1000, 2000, 640}, /* after: clamped */
		{1500, 2000, 1000, 0},	 /* no duration */
		{1500, 1000, 1000, 0},	  {0, INT64_MIN, INT64_MAX, 320}, /* the whole range: no
									     overflow */
		{1001, 1000, 1000001, 0},				  /* 0.00064: floor */
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(c); i++) {
		unsigned int got = report_time_x(c[i].t, c[i].t0, c[i].t1, 640);

		EXPECT(got == c[i].want,
		       "time_x(%" PRId64 ", %" PRId64 ", %" PRId64 "): expected %u, got %u", c[i].t,
		       c[i].t0, c[i].t1, c[i].want, got);
	}
	return true;
}

static char *render_bars(const struct report_bar *b, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	report_bar_chart(f, b, n);
	fclose(f);
	return buf;
}

/* The chart: each bar's rect at the right place and width, and the labels escaped. */
static bool check_bar_chart(void)
{
	static const struct report_bar b[] = {
		{"a.example", 100, 50},
		{"<script>x</script>", 0, 200},
	};
	/* row = 2 * 12 + 8 = 32; y = 2 + 32 i; sent at y, received at y + 12; x = 220 */
	static const char *const want[] = {
		"<rect class=\"sent\" x=\"220\" y=\"2\" width=\"180\" height=\"12\"/>",
		"<rect class=\"recv\" x=\"220\" y=\"14\" width=\"90\" height=\"12\"/>",
		"<rect class=\"sent\" x=\"220\" y=\"34\" width=\"0\" height=\"12\"/>",
		"<rect class=\"recv\" x=\"220\" y=\"46\" width=\"360\" height=\"12\"/>",
		">&lt;script&gt;x&lt;/script&gt;</text>",
		"height=\"68\"",
		">200 B received</text>",
	};
	char *svg = render_bars(b, 2);
	size_t i;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		if (!strstr(svg, want[i])) {
			snprintf(why, WHY_LEN, "no \"%s\" in %s", want[i], svg);
			free(svg);
			return false;
		}
	}
	i = strstr(svg, "<script") != NULL;
	free(svg);
	EXPECT(!i, "a script element in the chart");
	return true;
}

static bool check_timeline(void)
{
	static const struct report_span s[] = {
		{"whole:443", 1000000, 2000000, REPORT_SPAN_ALLOWED},
		{"denied:80", 1500000, 1500000, REPORT_SPAN_DENIED},
		{"cut:443", 1250000, 1750000, REPORT_SPAN_CUT},
	};
	/* row 14: y = 14 i + 2, height 10; x = 220 + the time's place on 640 */
	static const char *const want[] = {
		"<rect class=\"allow\" x=\"220\" y=\"2\" width=\"640\" height=\"10\"/>",
		/* a point is 3 wide */
		"<rect class=\"deny\" x=\"540\" y=\"16\" width=\"3\" height=\"10\"/>",
		"<rect class=\"cut\" x=\"380\" y=\"30\" width=\"320\" height=\"10\"/>",
		">1970-01-01 00:00:01.000 UTC</text>",
		">1970-01-01 00:00:02.000 UTC</text>",
	};
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	report_timeline(f, s, 3, 1000000, 2000000);
	fclose(f);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		if (!strstr(buf, want[i])) {
			snprintf(why, WHY_LEN, "no \"%s\" in %s", want[i], buf);
			free(buf);
			return false;
		}
	}
	free(buf);
	return true;
}

/* Past REPORT_TL_MAX_ROWS, the rest is counted, not drawn. */
static bool check_timeline_rows(void)
{
	size_t n = REPORT_TL_MAX_ROWS + 5, i, rects = 0;
	struct report_span *s = calloc(n, sizeof(*s));
	char *buf = NULL, *p;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!s || !f)
		abort();
	for (i = 0; i < n; i++)
		s[i] = (struct report_span){"x", 10, 20, REPORT_SPAN_ALLOWED};
	report_timeline(f, s, n, 0, 100);
	fclose(f);
	for (p = buf; (p = strstr(p, "<rect")); p++)
		rects++;
	i = strstr(buf, "5 more connections are not drawn") != NULL;
	free(buf);
	free(s);
	EXPECT(rects == REPORT_TL_MAX_ROWS, "expected %d rects, got %zu", REPORT_TL_MAX_ROWS,
	       rects);
	EXPECT(i, "no caption for the 5 not drawn");
	return true;
}

/* The head: the policy that forbids every fetch and every script, and an escaped title. */
static bool check_head(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool csp, title, script;

	if (!f)
		abort();
	report_page_head(f, "</title><script>x</script>");
	fclose(f);
	csp = strstr(buf, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
			  "'none'; style-src 'unsafe-inline'; img-src data:\">") != NULL;
	title = strstr(buf, "<title>&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;</title>") != NULL;
	script = strstr(buf, "<script") != NULL;
	free(buf);
	EXPECT(csp, "no CSP meta");
	EXPECT(title, "title not escaped");
	EXPECT(!script, "a script element in the head");
	return true;
}

static bool check_verdicts(void)
{
	struct verify_result r = {0};
	static const struct {
		int status;
		bool unverified;
		const char *word, *cls;
	} c[] = {
		{VERIFY_OK, false, "VERIFIED", "ok"},
		{VERIFY_LOSS, false, "LOSS DECLARED", "warn"},
		{VERIFY_UNSEALED, false, "UNSEALED", "warn"},
		{VERIFY_INVALID, false, "TAMPERED", "bad"},
		{VERIFY_ERROR, false, "NOT VERIFIED", "bad"},
		{VERIFY_INVALID, true, "UNVERIFIED", "bad"},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(c); i++) {
		int v;

		r.status = c[i].status;
		v = report_verdict_of(&r, c[i].unverified);
		EXPECT(!strcmp(report_verdict_word(v), c[i].word) &&
			       !strcmp(report_verdict_class(v), c[i].cls),
		       "status %d%s: expected %s/%s, got %s/%s", c[i].status,
		       c[i].unverified ? " unverified" : "", c[i].word, c[i].cls,
		       report_verdict_word(v), report_verdict_class(v));
	}
	return true;
}

int main(void)
{
	static const struct {
		const char *name;
		bool (*fn)(void);
	} tests[] = {
		{"escaping: each attack, written out", check_cases},
		{"escaping: random bytes give valid UTF-8 without markup", check_random},
		{"lines: newlines kept for a <pre>, the rest escaped", check_lines},
		{"bar length: scale, rounding, tiny values visible, no overflow", check_bar_len},
		{"time axis: place, clamping, no overflow", check_time_x},
		{"bar chart: rects where and as wide as computed, labels escaped", check_bar_chart},
		{"timeline: spans and points where computed, axis times", check_timeline},
		{"timeline: rows past the limit counted, not drawn", check_timeline_rows},
		{"page head: CSP forbids fetches and scripts, title escaped", check_head},
		{"verdicts: words and classes", check_verdicts},
	};
	size_t i;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		why[0] = '\0';
		report(tests[i].fn(), tests[i].name, why);
	}
	return tap_status();
}
