// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/json.c, the strict reader of OCI state and config documents: nested
 * documents read back member by member, and malformed input (truncated, trailing bytes, bad
 * escapes, invalid UTF-8, duplicate keys, too deep, NUL in a string) refused with the byte where
 * it went wrong; and the builders and writer (a config.json edited and written back): what was
 * read comes out with its meaning, numbers in their own text, with the added values where they
 * were put. Expectations are written out by hand.
 *
 * Usage: test_json        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/json.h"
#include "tap.h"

static char why[WHY_LEN];

static bool nested_state(void)
{
	static const char doc[] =
		"{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"pid\":4242,\"bundle\":\"/b\",\n"
		" \"annotations\":{\"io.sluice.policy\":\"/p.yaml\",\n"
		" \"x\":\"\\u00e9\\ud83d\\ude00\"},\n"
		" \"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":"
		"\"/run/netns/a\"}]},\"n\":null,\"t\":true,\"f\":false,\"neg\":-12,\"fr\":1.5e3,"
		"\"big\":9223372036854775807,\"esc\":\"a\\\"b\\\\c\\/d\\n\"}";
	struct json *j;
	const struct json *ns;
	char msg[256];
	int64_t v;
	int err;

	err = json_parse(doc, strlen(doc), &j, msg, sizeof(msg));
	EXPECT(!err, "parse: %d %s", err, msg);
	EXPECT(j->type == JSON_OBJECT && j->n == 13, "an object of 13 members, got type %d n %zu",
	       j->type, j->n);
	EXPECT(!strcmp(json_str(json_get(j, "id")), "c1"), "id");
	EXPECT(!json_int(json_get(j, "pid"), &v) && v == 4242, "pid");
	EXPECT(!strcmp(json_str(json_get(json_get(j, "annotations"), "io.sluice.policy")),
		       "/p.yaml"), "annotation");
	EXPECT(!strcmp(json_str(json_get(json_get(j, "annotations"), "x")),
		       "\xc3\xa9\xf0\x9f\x98\x80"), "\\u escapes and a surrogate pair as UTF-8");
	ns = json_get(json_get(j, "linux"), "namespaces");
	EXPECT(ns && ns->type == JSON_ARRAY && ns->n == 2, "namespaces array of 2");
	EXPECT(!strcmp(json_str(json_get(json_at(ns, 1), "path")), "/run/netns/a"), "ns path");
	EXPECT(!json_at(ns, 2), "no element 2");
	EXPECT(json_get(j, "n")->type == JSON_NULL, "null");
	EXPECT(json_get(j, "t")->b && !json_get(j, "f")->b, "booleans");
	EXPECT(!json_int(json_get(j, "neg"), &v) && v == -12, "negative");
	EXPECT(json_int(json_get(j, "fr"), &v) == -EINVAL, "a fraction is not an integer");
	EXPECT(!json_int(json_get(j, "big"), &v) && v == INT64_MAX, "INT64_MAX");
	EXPECT(json_int(json_get(j, "absent"), &v) == -ENOENT, "absent member");
	EXPECT(json_int(json_get(j, "id"), &v) == -EINVAL, "a string is not an integer");
	EXPECT(!json_str(json_get(j, "pid")), "a number is not a string");
	EXPECT(!strcmp(json_str(json_get(j, "esc")), "a\"b\\c/d\n"), "escapes");
	EXPECT(!json_get(ns, "type"), "json_get on an array");
	json_free(j);
	return true;
}

static bool out_of_range(void)
{
	static const char doc[] = "[9223372036854775808,-9223372036854775808,99999999999999999999]";
	struct json *j;
	char msg[256];
	int64_t v;

	EXPECT(!json_parse(doc, strlen(doc), &j, msg, sizeof(msg)), "parse: %s", msg);
	EXPECT(json_int(json_at(j, 0), &v) == -ERANGE, "INT64_MAX + 1");
	EXPECT(!json_int(json_at(j, 1), &v) && v == INT64_MIN, "INT64_MIN");
	EXPECT(json_int(json_at(j, 2), &v) == -ERANGE, "20 digits");
	json_free(j);
	return true;
}

struct bad {
	const char *name;
	const char *text;
	size_t len; /* 0: strlen */
	const char *why; /* the start of the message */
};

static const struct bad bad_cases[] = {
	{ "empty input", "", 0, "byte 0: expected a value" },
	{ "truncated object", "{\"a\":1", 0, "byte 6: expected ',' or '}'" },
	{ "truncated string", "{\"a\":\"xy", 0, "byte 8: unterminated string" },
	{ "trailing comma", "{\"a\":1,}", 0, "byte 7: expected a string" },
	{ "trailing bytes", "{} x", 0, "byte 3: bytes after the value" },
	{ "two values", "{}{}", 0, "byte 2: bytes after the value" },
	{ "duplicate key", "{\"a\":1,\"a\":2}", 0, "byte 7: the same key twice" },
	{ "bad escape", "[\"\\x\"]", 0, "byte 2: unknown escape" },
	{ "short \\u", "[\"\\u12\"]", 0, "byte 2: bad \\u escape" },
	{ "\\u0000", "[\"a\\u0000\"]", 0, "byte 3: \\u0000 in a string" },
	{ "lone high surrogate", "[\"\\ud800x\"]", 0, "byte 2: high surrogate" },
	{ "lone low surrogate", "[\"\\udc00\"]", 0, "byte 2: lone low surrogate" },
	{ "raw NUL", "[\"a\0b\"]", 6, "byte 3: control character" },
	{ "raw newline", "[\"a\nb\"]", 0, "byte 3: control character" },
	{ "invalid UTF-8", "[\"\xc3\x28\"]", 0, "byte 2: invalid UTF-8" },
	{ "overlong UTF-8", "[\"\xc0\xaf\"]", 0, "byte 2: invalid UTF-8" },
	{ "UTF-8 surrogate", "[\"\xed\xa0\x80\"]", 0, "byte 2: invalid UTF-8" },
	{ "overlong 3-byte UTF-8", "[\"\xe0\x80\xaf\"]", 0, "byte 2: invalid UTF-8" },
	{ "overlong 4-byte UTF-8", "[\"\xf0\x8f\xbf\xbf\"]", 0, "byte 2: invalid UTF-8" },
	{ "UTF-8 above U+10FFFF", "[\"\xf4\x90\x80\x80\"]", 0, "byte 2: invalid UTF-8" },
	{ "UTF-8 cut by the closing quote", "[\"\xe2\x82\"]", 0, "byte 2: invalid UTF-8" },
	{ "leading zero", "[01]", 0, "byte 2: expected ',' or ']'" },
	{ "bare minus", "[-]", 0, "byte 2: bad number" },
	{ "fraction without digits", "[1.]", 0, "byte 3: bad number" },
	{ "single quotes", "{'a':1}", 0, "byte 1: expected a string" },
	{ "comment", "{/*x*/}", 0, "byte 1: expected a string" },
	{ "unknown literal", "[tru]", 0, "byte 1: unknown literal" },
	{ "missing colon", "{\"a\" 1}", 0, "byte 5: expected ':'" },
	{ "non-string key", "{1:2}", 0, "byte 1: expected a string" },
};

static bool malformed(const struct bad *c)
{
	size_t len = c->len ? c->len : strlen(c->text);
	struct json *j = (struct json *)1;
	char msg[256];
	int err;

	err = json_parse(c->text, len, &j, msg, sizeof(msg));
	EXPECT(err == -EINVAL, "-EINVAL, got %d", err);
	EXPECT(!j, "no document on failure");
	EXPECT(!strncmp(msg, c->why, strlen(c->why)), "\"%s…\", got \"%s\"", c->why, msg);
	return true;
}

static bool too_deep(void)
{
	char doc[2 * JSON_DEPTH_MAX + 8];
	struct json *j;
	char msg[256];
	int i, err;

	/* JSON_DEPTH_MAX arrays nest: fine; one more is refused */
	for (i = 0; i < JSON_DEPTH_MAX; i++) {
		doc[i] = '[';
		doc[JSON_DEPTH_MAX + i] = ']';
	}
	err = json_parse(doc, 2 * JSON_DEPTH_MAX, &j, msg, sizeof(msg));
	EXPECT(!err, "%d levels: %s", JSON_DEPTH_MAX, msg);
	json_free(j);
	for (i = 0; i <= JSON_DEPTH_MAX; i++) {
		doc[i] = '[';
		doc[JSON_DEPTH_MAX + 1 + i] = ']';
	}
	err = json_parse(doc, 2 * JSON_DEPTH_MAX + 2, &j, msg, sizeof(msg));
	EXPECT(err == -EINVAL && strstr(msg, "nested too deep"), "%d levels: got %d %s",
	       JSON_DEPTH_MAX + 1, err, msg);
	return true;
}

/* Every prefix of a valid document is refused (never read past len, never accepted). */
static bool every_prefix(void)
{
	static const char doc[] = "{\"a\":[1,\"b\\u00e9\",{\"c\":null}],\"d\":-1.5e-3}";
	struct json *j;
	char msg[256];
	size_t n;

	for (n = 0; n < strlen(doc); n++) {
		char *cut = malloc(n ? n : 1);

		memcpy(cut, doc, n);
		EXPECT(json_parse(cut, n, &j, msg, sizeof(msg)) == -EINVAL,
		       "prefix of %zu bytes accepted", n);
		free(cut);
	}
	EXPECT(!json_parse(doc, strlen(doc), &j, msg, sizeof(msg)), "whole: %s", msg);
	json_free(j);
	return true;
}

/* Read, add a member first and an element last, write: the bytes expected, and they read back. */
static bool edit_and_write(void)
{
	static const char doc[] = "{\"n\":[1,-2.50e+3,18446744073709551616],\"s\":\"\\u00e9\\n\\u0001\","
				  "\"o\":{\"t\":true,\"f\":false,\"z\":null},\"e\":[]}";
	static const char want[] = "{\"first\":\"a\\\"b\",\"n\":[1,-2.50e+3,18446744073709551616],"
				   "\"s\":\"\xc3\xa9\\n\\u0001\",\"o\":{\"t\":true,\"f\":false,\"z\":null},"
				   "\"e\":[7]}";
	struct json *j, *again, *first, *seven;
	char msg[256], *out = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	EXPECT(!json_parse(doc, strlen(doc), &j, msg, sizeof(msg)), "parse: %s", msg);
	first = json_new(JSON_STRING, "a\"b");
	seven = json_new(JSON_NUMBER, "7");
	EXPECT(first && seven, "json_new");
	EXPECT(json_add(j, NULL, first, true) == -EINVAL, "an object member needs a key");
	EXPECT(json_add(j, "n", first, true) == -EEXIST, "a key the object has: -EEXIST");
	EXPECT(json_add((struct json *)json_get(j, "e"), "k", seven, false) == -EINVAL,
	       "an array element has no key");
	EXPECT(!json_add(j, "first", first, true), "add first");
	EXPECT(!json_add((struct json *)json_get(j, "e"), NULL, seven, false), "add last");
	EXPECT(j->n == 5 && json_get(j, "e")->n == 1, "counts: %zu %zu", j->n, json_get(j, "e")->n);
	f = open_memstream(&out, &len);
	EXPECT(f, "open_memstream");
	json_write(f, j);
	fclose(f);
	json_free(j);
	err = strcmp(out, want);
	if (!err) {
		err = json_parse(out, len, &again, msg, sizeof(msg));
		json_free(again);
	}
	EXPECT(!err, "wrote\n#  %s\n# want\n#  %s\n# (%s)", out, want, msg);
	free(out);
	return true;
}

int main(void)
{
	size_t i;
	char name[128];

	printf("TAP version 13\n1..%zu\n", 5 + ARRAY_SIZE(bad_cases));
	report(nested_state(), "nested state document read member by member", why);
	report(out_of_range(), "integers beyond int64 refused by json_int", why);
	report(too_deep(), "nesting beyond JSON_DEPTH_MAX refused", why);
	report(every_prefix(), "every truncation of a document refused", why);
	report(edit_and_write(), "a document edited and written back: its meaning kept", why);
	for (i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		snprintf(name, sizeof(name), "malformed: %s", bad_cases[i].name);
		report(malformed(&bad_cases[i]), name, why);
	}
	return tap_status();
}
