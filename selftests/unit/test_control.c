// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/control.c, the daemon's request format: what it accepts, decoded as
 * written out here by hand; what it refuses, with the byte it names; and the builder's
 * output read back by the parser (strings with every byte that needs escaping).
 *
 * Usage: test_control        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/control.h"
#include "tap.h"

static struct control_obj g_obj;

struct accept_case {
	const char *name, *line, *key, *str;
	int64_t i;
	int b; /* -1: not a bool */
	size_t n;
};

static const struct accept_case accepts[] = {
	{ "empty object", "{}", NULL, NULL, 0, -1, 0 },
	{ "one string", "{\"op\":\"ping\"}", "op", "ping", 0, -1, 1 },
	{ "spaces around", " { \"op\" : \"ping\" } ", "op", "ping", 0, -1, 1 },
	{ "escapes decoded", "{\"p\":\"a\\\"b\\\\c/d\\n\\t\\u0001\"}", "p", "a\"b\\c/d\n\t\x01", 0, -1,
	  1 },
	/* \u00xx is a byte (cjson.h), for bytes that are not UTF-8: the log's form */
	{ "a byte that starts no UTF-8 sequence", "{\"p\":\"caf\\u00e9\"}", "p", "caf\xe9", 0, -1, 1 },
	{ "raw UTF-8", "{\"p\":\"caf\xc3\xa9\"}", "p", "caf\xc3\xa9", 0, -1, 1 },
	{ "integer", "{\"op\":\"x\",\"n\":-42}", "n", NULL, -42, -1, 2 },
	{ "true", "{\"f\":true}", "f", NULL, 0, 1, 1 },
	{ "false", "{\"f\":false}", "f", NULL, 0, 0, 1 },
	{ "largest integer", "{\"n\":9223372036854775807}", "n", NULL, INT64_MAX, -1, 1 },
};

struct refuse_case {
	const char *name, *line, *why;
};

static const struct refuse_case refuses[] = {
	{ "nothing", "", "byte 0: expected '{'" },
	{ "not an object", "[1]", "byte 0: expected '{'" },
	{ "unterminated", "{\"op\":\"pi", "unterminated string" },
	{ "no closing brace", "{\"op\":\"ping\"", "byte 12: expected ',' or '}'" },
	{ "trailing bytes", "{}x", "byte 2: bytes after the object" },
	{ "two objects", "{}{}", "bytes after the object" },
	{ "uppercase key", "{\"Op\":\"x\"}", "[a-z0-9_]" },
	{ "empty key", "{\"\":\"x\"}", "[a-z0-9_]" },
	{ "key too long", "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1}", "[a-z0-9_]" },
	{ "duplicate key", "{\"a\":1,\"a\":2}", "the same key twice" },
	{ "nested object", "{\"a\":{}}", "expected a string, an integer, true or false" },
	{ "array", "{\"a\":[1]}", "expected a string, an integer, true or false" },
	{ "null", "{\"a\":null}", "expected a string, an integer, true or false" },
	{ "NUL escape", "{\"a\":\"\\u0000\"}", "NUL" },
	{ "escaped UTF-8", "{\"a\":\"\\u00c3\\u00a9\"}", "well-formed UTF-8 sequence (must be raw)" },
	{ "escape above a byte", "{\"a\":\"\\u2028\"}", "above \\u00ff" },
	{ "escaped ASCII", "{\"a\":\"\\u0041\"}", "printable ASCII" },
	{ "upper-case hex", "{\"a\":\"\\u001F\"}", "upper-case hex" },
	{ "bad escape", "{\"a\":\"\\x41\"}", "escape other than" },
	{ "escaped slash", "{\"a\":\"\\/\"}", "escape other than" },
	{ "raw control byte", "{\"a\":\"\x01\"}", "unescaped control byte" },
	{ "raw invalid UTF-8", "{\"a\":\"\xff\"}", "not well-formed UTF-8" },
	{ "integer overflow", "{\"n\":9223372036854775808}", "out of range" },
	{ "lone minus", "{\"n\":-}", "expected a digit" },
	{ "leading zero", "{\"n\":007}", "leading zero" },
	{ "minus zero", "{\"n\":-0}", "-0 is not canonical" },
	{ "trailing comma", "{\"a\":1,}", "expected a string" },
};

static bool check_accept(const struct accept_case *c, char *why)
{
	char err[256] = "";
	const struct control_member *m;
	int ret = control_parse(&g_obj, c->line, strlen(c->line), err, sizeof(err));

	EXPECT(ret == 0, "expected it accepted, got %d: %s", ret, err);
	EXPECT(g_obj.n == c->n, "expected %zu members, got %zu", c->n, g_obj.n);
	if (!c->key)
		return true;
	m = control_get(&g_obj, c->key);
	EXPECT(m, "member %s missing", c->key);
	if (c->str)
		EXPECT(m->kind == CONTROL_STR && !strcmp(m->str, c->str),
		       "expected string \"%s\", got kind %d \"%s\"", c->str, m->kind,
		       m->kind == CONTROL_STR ? m->str : "");
	else if (c->b >= 0)
		EXPECT(m->kind == CONTROL_BOOL && m->b == (c->b == 1), "expected bool %d", c->b);
	else
		EXPECT(m->kind == CONTROL_INT && m->i == c->i, "expected %lld, got %lld",
		       (long long)c->i, (long long)m->i);
	return true;
}

static bool check_refuse(const struct refuse_case *c, char *why)
{
	char err[256] = "";
	int ret = control_parse(&g_obj, c->line, strlen(c->line), err, sizeof(err));

	EXPECT(ret == -EINVAL, "expected -EINVAL, got %d", ret);
	EXPECT(strstr(err, c->why), "expected a reason containing \"%s\", got \"%s\"", c->why, err);
	return true;
}

/* Every byte 0x01..0x7f in a string survives build then parse. */
static bool check_roundtrip(char *why)
{
	static struct control_msg m;
	char s[128], err[256] = "";
	int i, ret;

	for (i = 1; i < 128; i++)
		s[i - 1] = (char)i;
	s[127] = '\0';
	control_msg_begin(&m);
	control_msg_str(&m, "op", "attach");
	control_msg_str(&m, "path", s);
	control_msg_u64(&m, "n", 18446744073709551615ULL);
	control_msg_bool(&m, "t", true);
	EXPECT(control_msg_end(&m) == 0, "control_msg_end failed");
	/* the integer is out of the parser's range: the message must be refused, not wrapped */
	ret = control_parse(&g_obj, m.buf, m.len, err, sizeof(err));
	EXPECT(ret == -EINVAL && strstr(err, "integer"), "u64 max: expected refused, got %d %s",
	       ret, err);
	control_msg_begin(&m);
	control_msg_str(&m, "path", s);
	control_msg_bool(&m, "t", false);
	EXPECT(control_msg_end(&m) == 0, "control_msg_end failed");
	EXPECT(!strchr(m.buf, '\n'), "a built line holds a raw newline");
	ret = control_parse(&g_obj, m.buf, m.len, err, sizeof(err));
	EXPECT(ret == 0, "parse of built line: %d %s", ret, err);
	EXPECT(!strcmp(control_str(&g_obj, "path", NULL), s), "the string came back changed");
	EXPECT(control_bool(&g_obj, "t") == 0, "the bool came back changed");
	return true;
}

/* A message that does not fit is refused whole, never cut. */
static bool check_overflow(char *why)
{
	static struct control_msg m;
	static char big[CONTROL_LINE_MAX];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	control_msg_begin(&m);
	control_msg_str(&m, "op", "x");
	control_msg_str(&m, "big", big);
	EXPECT(control_msg_end(&m) == -EMSGSIZE, "expected -EMSGSIZE");
	return true;
}

/* The reply's error text, and the whole line when it has none. */
static bool check_reply_error(char *why)
{
	char buf[128];

	control_reply_error("{\"ok\":false,\"error\":\"no \\\"run\\\"\"}", buf, sizeof(buf));
	EXPECT(!strcmp(buf, "no \"run\""), "got \"%s\"", buf);
	control_reply_error("garbage", buf, sizeof(buf));
	EXPECT(!strcmp(buf, "garbage"), "got \"%s\"", buf);
	return true;
}

int main(void)
{
	char why[WHY_LEN], name[256];
	size_t i;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(accepts) + ARRAY_SIZE(refuses) + 3);
	for (i = 0; i < ARRAY_SIZE(accepts); i++) {
		snprintf(name, sizeof(name), "accepts: %s", accepts[i].name);
		report(check_accept(&accepts[i], why), name, why);
	}
	for (i = 0; i < ARRAY_SIZE(refuses); i++) {
		snprintf(name, sizeof(name), "refuses: %s", refuses[i].name);
		report(check_refuse(&refuses[i], why), name, why);
	}
	report(check_roundtrip(why), "every ASCII byte survives the builder and the parser", why);
	report(check_overflow(why), "a message too long for a line is refused whole", why);
	report(check_reply_error(why), "a refusal's error text is extracted", why);
	return tap_status();
}
