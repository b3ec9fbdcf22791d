// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/jsonline.c and userspace/verify.c: the canonical-line grammar (a table of
 * accepted and refused lines, each refusal at a given byte, and a property test: every byte string
 * the spec's escaping writes parses back to itself, and every other spelling of it is refused),
 * then the verifier against logs this test writes itself with tlog/note — a tiny writer that
 * follows the evidence spec (log_start with the host-signed cert, records, checkpoints, run_end,
 * final seal) — and then tampers with: each case names the exit status and the first bad line.
 * Last, a 200 000-line log verifies in bounded memory.
 *
 * Usage: test_verify        TAP 13; exits 1 if any test failed, 0 otherwise. Needs no root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "userspace/jsonline.h"
#include "userspace/note.h"
#include "userspace/tlog.h"
#include "userspace/verify.h"
#include "tap.h"


static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	return strcpy(xmalloc(strlen(s) + 1), s);
}

/* ========================================================================================== */
/* The grammar                                                                                 */

#define Z63 "000000000000000000000000000000000000000000000000000000000000000"
#define Z64 Z63 "0"
#define HDR "{\"seq\":0,\"prev\":\"" Z64 "\",\"ts\":1,\"type\":\"t\""

struct grammar_case {
	const char *name;
	const char *line;
	size_t len;	/* 0: strlen(line) */
	const char *at; /* NULL: accepted; else refused at the first occurrence of at */
};

static const struct grammar_case grammar_cases[] = {
	/* accepted */
	{"header only", HDR "}", 0, NULL},
	{"every short escape", HDR ",\"s\":\"a\\\"b\\\\c\\nd\\te\"}", 0, NULL},
	{"\\u00xx for controls and DEL",
	 HDR ",\"s\":\"\\u0000\\u0001\\u001f\\u007f\\u000d\\u0008\"}", 0, NULL},
	{"raw UTF-8, 2 to 4 bytes, U+0080 and U+10FFFF",
	 HDR ",\"s\":\"\xc2\x80 \xc3\xa9 \xe2\x82\xac \xef\xbf\xbf \xf0\x9d\x84\x9e "
	     "\xf4\x8f\xbf\xbf\"}",
	 0, NULL},
	{"invalid UTF-8 bytes escaped", HDR ",\"s\":\"\\u00ff\\u0080\\u00c0\\u0080\"}", 0, NULL},
	{"lead byte escaped before ASCII", HDR ",\"s\":\"\\u00c3A\"}", 0, NULL},
	{"incomplete sequence escaped", HDR ",\"s\":\"\\u00e2\\u0082\"}", 0, NULL},
	{"escaped lead before a raw sequence", HDR ",\"s\":\"\\u00c3\xc2\xa9\"}", 0, NULL},
	{"surrogate bytes escaped", HDR ",\"s\":\"\\u00ed\\u00a0\\u0080\"}", 0, NULL},
	{"above U+10FFFF escaped", HDR ",\"s\":\"\\u00f4\\u0090\\u0080\\u0080\"}", 0, NULL},
	{"overlong 3-byte escaped", HDR ",\"s\":\"\\u00e0\\u0080\\u0080\"}", 0, NULL},
	{"integers 0, -1, uint64 max, int64 min",
	 HDR ",\"a\":0,\"b\":-1,\"c\":18446744073709551615,\"d\":-9223372036854775808}", 0, NULL},
	{"true false null", HDR ",\"a\":true,\"b\":false,\"c\":null}", 0, NULL},
	{"arrays", HDR ",\"a\":[],\"b\":[\"x\",1,-2,\"\"],\"c\":[0]}", 0, NULL},
	{"empty string, key with digits and _", HDR ",\"k_2\":\"\"}", 0, NULL},
	{"negative ts", "{\"seq\":7,\"prev\":\"" Z64 "\",\"ts\":-5,\"type\":\"\"}", 0, NULL},

	/* refused: whitespace */
	{"space after {", "{ \"seq\":0}", 0, " "},
	{"space before :", HDR ",\"a\" :1}", 0, " :"},
	{"space after :", HDR ",\"a\": 1}", 0, " 1"},
	{"space after ,", HDR ", \"a\":1}", 0, " \"a"},
	{"space before }", HDR ",\"a\":1 }", 0, " }"},
	{"space in array", HDR ",\"a\":[1, 2]}", 0, " 2"},
	{"trailing space", HDR "} ", 0, " "},
	{"leading space", " " HDR "}", 0, " "},
	{"tab between members", HDR ",\t\"a\":1}", 0, "\t"},
	{"CR at the end (CRLF)", HDR "}\r", 0, "\r"},
	/* refused: structure */
	{"empty line", "", 0, ""},
	{"empty object", "{}", 0, "}"},
	{"not an object", "[1]", 0, "["},
	{"garbage after the object", HDR "}x", 0, "x"},
	{"two objects", HDR "}{}", 0, "{}"},
	{"unterminated object", HDR, 0, ""},
	{"nested object", HDR ",\"a\":{}}", 0, "{}"},
	{"nested array", HDR ",\"a\":[[1]]}", 0, "[1]]"},
	{"true in an array", HDR ",\"a\":[true]}", 0, "true"},
	{"trailing comma", HDR ",}", 0, "}"},
	{"trailing comma in array", HDR ",\"a\":[1,]}", 0, "]}"},
	/* refused: keys */
	{"upper-case key", HDR ",\"Key\":1}", 0, "Key"},
	{"key with -", HDR ",\"a-b\":1}", 0, "-b"},
	{"empty key", HDR ",\"\":1}", 0, "\"\":"},
	{"escaped key", HDR ",\"a\\u0062\":1}", 0, "\\u"},
	{"duplicate key", HDR ",\"a\":1,\"a\":2}", 0, "\"a\":2"},
	{"duplicate header key", HDR ",\"seq\":1}", 0, "\"seq\":1}"},
	/* refused: integers */
	{"fraction", HDR ",\"a\":1.5}", 0, ".5"},
	{"exponent", HDR ",\"a\":1e3}", 0, "e3"},
	{"plus sign", HDR ",\"a\":+1}", 0, "+1"},
	{"-0", HDR ",\"a\":-0}", 0, "-0"},
	{"leading zero", HDR ",\"a\":01}", 0, "01"},
	{"uint64 overflow", HDR ",\"a\":18446744073709551616}", 0, "18446744073709551616"},
	{"int64 underflow", HDR ",\"a\":-9223372036854775809}", 0, "-9223372036854775809"},
	{"bare word", HDR ",\"a\":yes}", 0, "yes"},
	{"single quotes", HDR ",\"a\":'x'}", 0, "'x'"},
	/* refused: string escapes */
	{"\\/", HDR ",\"s\":\"a\\/b\"}", 0, "\\/"},
	{"\\b", HDR ",\"s\":\"\\b\"}", 0, "\\b"},
	{"\\f", HDR ",\"s\":\"\\f\"}", 0, "\\f"},
	{"\\r", HDR ",\"s\":\"\\r\"}", 0, "\\r"},
	{"\\u of a printable byte", HDR ",\"s\":\"\\u0041\"}", 0, "\\u0041"},
	{"\\u of a quote", HDR ",\"s\":\"\\u0022\"}", 0, "\\u0022"},
	{"\\u000a instead of \\n", HDR ",\"s\":\"\\u000a\"}", 0, "\\u000a"},
	{"\\u0009 instead of \\t", HDR ",\"s\":\"\\u0009\"}", 0, "\\u0009"},
	{"upper-case hex", HDR ",\"s\":\"\\u00E9\"}", 0, "E9"},
	{"\\u above 0xff", HDR ",\"s\":\"\\u0100\"}", 0, "\\u0100"},
	{"\\u20ac for a code point", HDR ",\"s\":\"\\u20ac\"}", 0, "\\u20ac"},
	{"truncated \\u", HDR ",\"s\":\"\\u00\"}", 0, "\"}"},
	{"escaped UTF-8 sequence (2 bytes)", HDR ",\"s\":\"x\\u00c3\\u00a9\"}", 0, "\\u00c3"},
	{"escaped UTF-8 sequence (3 bytes)", HDR ",\"s\":\"\\u00e2\\u0082\\u00ac\"}", 0, "\\u00e2"},
	{"escaped UTF-8 sequence (4 bytes)", HDR ",\"s\":\"\\u00f0\\u009d\\u0084\\u009e\"}", 0,
	 "\\u00f0"},
	{"unterminated string", HDR ",\"s\":\"abc}", 0, ""},
	/* refused: raw bytes */
	{"raw control byte", HDR ",\"s\":\"a\x01\"}", 0, "\x01"},
	{"raw tab", HDR ",\"s\":\"a\tb\"}", 0, "\t"},
	{"raw DEL", HDR ",\"s\":\"\x7f\"}", 0, "\x7f"},
	{"raw lone continuation byte", HDR ",\"s\":\"\x80\"}", 0, "\x80"},
	{"raw lead without continuation", HDR ",\"s\":\"\xc3(\"}", 0, "\xc3"},
	{"raw overlong 2-byte", HDR ",\"s\":\"\xc0\x80\"}", 0, "\xc0"},
	{"raw overlong 3-byte", HDR ",\"s\":\"\xe0\x80\x80\"}", 0, "\xe0"},
	{"raw surrogate", HDR ",\"s\":\"\xed\xa0\x80\"}", 0, "\xed"},
	{"raw above U+10FFFF", HDR ",\"s\":\"\xf4\x90\x80\x80\"}", 0, "\xf4"},
	{"raw 0xf5", HDR ",\"s\":\"\xf5\x80\x80\x80\"}", 0, "\xf5"},
	{"raw NUL", HDR ",\"s\":\"a\0b\"}", sizeof(HDR ",\"s\":\"a\0b\"}") - 1, ""},
	/* refused: the header */
	{"seq not first", "{\"prev\":\"" Z64 "\",\"seq\":0,\"ts\":1,\"type\":\"t\"}", 0, "\"prev"},
	{"prev not second", "{\"seq\":0,\"ts\":1,\"prev\":\"" Z64 "\",\"type\":\"t\"}", 0, "\"ts"},
	{"type not fourth", "{\"seq\":0,\"prev\":\"" Z64 "\",\"ts\":1,\"x\":1,\"type\":\"t\"}", 0,
	 "\"x"},
	{"header cut short", "{\"seq\":0,\"prev\":\"" Z64 "\",\"ts\":1}", 0, "}"},
	{"negative seq", "{\"seq\":-1,\"prev\":\"" Z64 "\",\"ts\":1,\"type\":\"t\"}", 0, "-1"},
	{"seq a string", "{\"seq\":\"0\",\"prev\":\"" Z64 "\",\"ts\":1,\"type\":\"t\"}", 0,
	 "\"0\""},
	{"prev upper-case", "{\"seq\":0,\"prev\":\"A" Z63 "\",\"ts\":1,\"type\":\"t\"}", 0, "A0"},
	{"ts a string", "{\"seq\":0,\"prev\":\"" Z64 "\",\"ts\":\"1\",\"type\":\"t\"}", 0, "\"1\""},
	{"ts above int64",
	 "{\"seq\":0,\"prev\":\"" Z64 "\",\"ts\":9223372036854775808,"
	 "\"type\":\"t\"}",
	 0, "9223372036854775808"},
	{"type not a string", "{\"seq\":0,\"prev\":\"" Z64 "\",\"ts\":1,\"type\":1}", 0, "1}"},
};

static bool run_grammar_case(const struct grammar_case *c, char *why)
{
	static struct jsonline jl;
	size_t len = c->len ? c->len : strlen(c->line), off = 0, want;
	const char *reason = NULL;
	int err;

	err = jsonline_parse(&jl, c->line, len, &off, &reason);
	if (!c->at) {
		EXPECT(!err, "expected accepted, refused at byte %zu: %s", off, reason);
		return true;
	}
	/* "": at the end of the line, or at its first NUL */
	want = c->at[0] ? (size_t)(strstr(c->line, c->at) - c->line) : strlen(c->line);
	EXPECT(err == -EBADMSG, "expected refused at byte %zu, accepted", want);
	EXPECT(off == want, "expected refused at byte %zu, refused at %zu (%s)", want, off, reason);
	return true;
}

/* prev of 63 digits, built here: the table cannot cut a macro. */
static bool check_prev_63(char *why)
{
	static struct jsonline jl;
	char line[256];
	const char *reason;
	size_t off;

	snprintf(line, sizeof(line), "{\"seq\":0,\"prev\":\"%.63s\",\"ts\":1,\"type\":\"t\"}", Z64);
	EXPECT(jsonline_parse(&jl, line, strlen(line), &off, &reason) == -EBADMSG && off == 16,
	       "expected refused at byte 16");
	return true;
}

static bool check_line_max(char *why)
{
	static struct jsonline jl;
	static char line[JSONLINE_MAX + 2];
	const char *reason;
	size_t off, n;

	n = (size_t)snprintf(line, sizeof(line), HDR ",\"s\":\"");
	memset(line + n, 'x', sizeof(line) - n);
	/* exactly JSONLINE_MAX bytes: accepted */
	memcpy(line + JSONLINE_MAX - 2, "\"}", 2);
	EXPECT(!jsonline_parse(&jl, line, JSONLINE_MAX, &off, &reason),
	       "a %d-byte line refused: %s", JSONLINE_MAX, reason);
	memcpy(line + JSONLINE_MAX - 2, "x\"}", 3);
	EXPECT(jsonline_parse(&jl, line, JSONLINE_MAX + 1, &off, &reason) == -EBADMSG,
	       "a %d-byte line accepted", JSONLINE_MAX + 1);
	return true;
}

static bool check_accessors(char *why)
{
	static struct jsonline jl;
	const char line[] = "{\"seq\":42,\"prev\":\"" Z64 "\",\"ts\":-7,\"type\":\"loss\","
			    "\"count\":18446744073709551615,\"n\":-3,\"s\":\"a\\\"\\\\\\n\\t\\u0001"
			    "\\u00ff\xc3\xa9\",\"v\":[\"x\\n\",12],\"b\":true}";
	struct jsonline_value e;
	const char *reason;
	char buf[64];
	uint64_t u;
	int64_t i;
	size_t off, pos = 0;
	int n;

	EXPECT(!jsonline_parse(&jl, line, strlen(line), &off, &reason), "refused at %zu: %s", off,
	       reason);
	EXPECT(jl.seq == 42 && jl.ts == -7 && jl.n == 9,
	       "header seq %" PRIu64 " ts %" PRId64 " n %zu", jl.seq, jl.ts, jl.n);
	EXPECT(jsonline_type_is(&jl, "loss") && !jsonline_type_is(&jl, "los"), "type");
	EXPECT(!jsonline_u64(&jl, "count", &u) && u == UINT64_MAX, "count");
	EXPECT(jsonline_u64(&jl, "n", &u) == -EINVAL, "negative read as u64");
	EXPECT(!jsonline_i64(&jl, "n", &i) && i == -3, "n");
	EXPECT(jsonline_i64(&jl, "count", &i) == -EINVAL, "uint64 max read as int64");
	EXPECT(jsonline_u64(&jl, "nope", &u) == -ENOENT, "absent key");
	n = jsonline_str(&jl, "s", buf, sizeof(buf));
	EXPECT(n == 9 && !memcmp(buf, "a\"\\\n\t\x01\xff\xc3\xa9", 9), "decoded s (%d bytes)", n);
	EXPECT(jsonline_str(&jl, "s", buf, 9) == -ENOSPC, "short buffer");
	EXPECT(jsonline_str(&jl, "b", buf, sizeof(buf)) == -EINVAL, "bool read as string");
	EXPECT(jsonline_array_next(&jl, &jsonline_get(&jl, "v")->v, &pos, &e) == 1 &&
		       e.kind == JSONLINE_STRING &&
		       jsonline_decode(&jl, &e, buf, sizeof(buf)) == 2 && !strcmp(buf, "x\n"),
	       "array element 0");
	EXPECT(jsonline_array_next(&jl, &jsonline_get(&jl, "v")->v, &pos, &e) == 1 &&
		       e.kind == JSONLINE_INT && e.u == 12,
	       "array element 1");
	EXPECT(jsonline_array_next(&jl, &jsonline_get(&jl, "v")->v, &pos, &e) == 0, "array end");
	return true;
}

/* The spec's UTF-8 rule, written independently of jsonline.c: code point arithmetic. */
static size_t spec_utf8_len(const unsigned char *s, size_t avail)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] >= 0xf0 && s[0] < 0xf8) {
		n = 4;
		cp = s[0] & 0x07;
	} else if (s[0] >= 0xe0 && s[0] < 0xf0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xc0 && s[0] < 0xe0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000))
		return 0;
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* The spec's escaping (section 1). alt >= 0: spell the byte or sequence at alt another way. */
static size_t spec_escape(const unsigned char *s, size_t n, char *out, long alt, bool *altered)
{
	size_t i = 0, o = 0, k;

	while (i < n) {
		unsigned char c = s[i];

		k = c >= 0x80 ? spec_utf8_len(s + i, n - i) : 0;
		if ((long)i == alt || (alt >= 0 && k && (long)i < alt && alt < (long)(i + k))) {
			/* a non-canonical spelling: \u00xx for what has another form */
			size_t j, m = k ? k : 1;

			if (c == '"' || c == '\\' || (c >= 0x20 && c < 0x7f) || c == '\n' ||
			    c == '\t' || k) {
				for (j = 0; j < m; j++)
					o += (size_t)sprintf(out + o, "\\u00%02x", s[i + j]);
				*altered = true;
				i += m;
				continue;
			}
		}
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c == '\n') {
			o += (size_t)sprintf(out + o, "\\n");
		} else if (c == '\t') {
			o += (size_t)sprintf(out + o, "\\t");
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !k)) {
			o += (size_t)sprintf(out + o, "\\u00%02x", c);
		} else if (k) {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
			continue;
		} else {
			out[o++] = (char)c;
		}
		i++;
	}
	out[o] = '\0';
	return o;
}

static void random_bytes(unsigned char *s, size_t n)
{
	static const char *const seqs[] = {"\xc3\xa9", "\xe2\x82\xac",	   "\xf0\x9d\x84\x9e",
					   "\xc2\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"};
	size_t i = 0;

	while (i < n) {
		int r = rand() % 8;

		if (r == 0 && i + 4 <= n) {
			const char *q = seqs[rand() % ARRAY_SIZE(seqs)];

			memcpy(s + i, q, strlen(q));
			i += strlen(q);
		} else if (r <= 2) {
			s[i++] = (unsigned char)(0x80 + rand() % 0x80);
		} else if (r == 3) {
			s[i++] = (unsigned char)(rand() % 0x20);
		} else {
			s[i++] = (unsigned char)(0x20 + rand() % 0x60);
		}
	}
}

/*
 * Every byte string, escaped as the spec says, parses and decodes back to itself; the same string
 * with one byte or sequence spelled another way is refused.
 */
static bool check_escape_property(char *why)
{
	static struct jsonline jl;
	unsigned char s[48], back[64];
	char enc[48 * 6 + 1], line[512];
	const char *reason;
	size_t off;
	int iter, n;

	srand(1);
	for (iter = 0; iter < 20000; iter++) {
		size_t len = (size_t)(rand() % 40);
		bool altered = false;

		random_bytes(s, len);
		spec_escape(s, len, enc, -1, &altered);
		snprintf(line, sizeof(line), HDR ",\"s\":\"%s\"}", enc);
		EXPECT(!jsonline_parse(&jl, line, strlen(line), &off, &reason),
		       "canonical spelling refused at byte %zu (%s): %s", off, reason, line);
		n = jsonline_str(&jl, "s", (char *)back, sizeof(back));
		EXPECT(n == (int)len && !memcmp(back, s, len), "decode differs: %s", line);
		if (!len)
			continue;
		spec_escape(s, len, enc, rand() % (long)len, &altered);
		if (!altered)
			continue;
		snprintf(line, sizeof(line), HDR ",\"s\":\"%s\"}", enc);
		EXPECT(jsonline_parse(&jl, line, strlen(line), &off, &reason) == -EBADMSG,
		       "non-canonical spelling accepted: %s", line);
	}
	return true;
}

/* ========================================================================================== */
/* A writer of spec-conformant logs                                                            */

struct log {
	char **l; /* lines, without "\n" */
	size_t n, cap;
	bool no_last_newline; /* the last line is cut (a writer killed mid-line) */
	char *cps;	      /* exported checkpoints, sidecar format */
	size_t cps_len;
};

struct tw {
	struct log *log; /* lines kept here, or */
	FILE *out;	 /* streamed here */
	struct tlog_tree tree;
	uint8_t prev[TLOG_HASH_SIZE];
	uint64_t seq;
	int64_t ts, step;
	char origin[NOTE_NAME_MAX + 1];
	const struct note_signer *run;
	uint64_t last_cp;   /* 1-based line of the last checkpoint, 0: none */
	uint64_t kseq_high; /* 1 + the largest kseq written, 0: none */
	/* the exported copy of the next checkpoint signed by this key instead (NULL: the run's) */
	const struct note_signer *export_as;
	/* the next checkpoint's note also signed by this key: in the log line, in its copy */
	const struct note_signer *cosign_log, *cosign_copy;
};

static struct {
	struct note_signer *host, *other_host;
	struct note_signer *run_a, *run_a2, *run_b; /* run_a2: run-a's name, another key */
	struct note_signer *run_r1, *run_r2;	    /* run-a's name: the keys of its restarts */
	char host_vkey[NOTE_VKEY_MAX + 1], other_vkey[NOTE_VKEY_MAX + 1];
	char dir[64];
	int file_n;
	/* log_start's host_key, when not the key that signs the cert (NULL: that key) */
	const char *host_key_field;
	struct note_signer *witness; /* a C2SP cosigner of checkpoints, a key of no run */
	bool cert_cosigned;	     /* log_start's cert also signed by the witness */
	bool run_start;		     /* a run_start line after log_start (--corpus: sl_logcheck) */
	uint64_t format;	     /* log_start's format (2, the writer's; 1, before it) */
	uint64_t chain;		     /* the prev written follows this format (0: format's) */
} g = {.format = 2};

static void log_push(struct log *l, const char *line)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 32;
		l->l = realloc(l->l, l->cap * sizeof(*l->l));
		if (!l->l)
			exit(2);
	}
	l->l[l->n++] = xstrdup(line);
}

static void log_free(struct log *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->l[i]);
	free(l->l);
	free(l->cps);
	memset(l, 0, sizeof(*l));
}

static void cps_append(struct log *l, const char *s, size_t n)
{
	l->cps = realloc(l->cps, l->cps_len + n + 1);
	if (!l->cps)
		exit(2);
	memcpy(l->cps + l->cps_len, s, n);
	l->cps_len += n;
	l->cps[l->cps_len] = '\0';
}

static void hexs(const uint8_t *h, char *out)
{
	for (int i = 0; i < TLOG_HASH_SIZE; i++)
		sprintf(out + 2 * i, "%02x", h[i]);
}

/*
 * Add a signature line by s to the signed note in note (NUL-terminated, size bytes): a C2SP
 * cosignature, as a witness adds one to a copy of a checkpoint.
 */
static void cosign(char *note, size_t size, const struct note_signer *s)
{
	char signed_by_s[2048], *text_end = strstr(note, "\n\n");
	size_t len, tlen = text_end ? (size_t)(text_end - note) + 1 : 0;

	if (!text_end || note_sign(s, note, tlen, signed_by_s, sizeof(signed_by_s), &len) ||
	    strlen(note) + len - tlen > size - 1) {
		fprintf(stderr, "test writer: cannot cosign\n");
		exit(2);
	}
	/* signed_by_s is the text, a blank line and s's signature line */
	strcat(note, signed_by_s + tlen + 1);
}

/* Escape s (NUL-terminated) as the spec says. */
static void jstr(const char *s, char *out)
{
	bool altered = false;

	spec_escape((const unsigned char *)s, strlen(s), out, -1, &altered);
}

/*
 * The prev of the line after line, as the spec says: in format 2 SHA-256(0x00 || line) (its
 * leaf hash), in format 1 SHA-256(line). g.chain, else g.format.
 */
static void next_prev(const char *line, size_t len, uint8_t out[TLOG_HASH_SIZE])
{
	char *leaf;

	if ((g.chain ? g.chain : g.format) == 1) {
		tlog_sha256(line, len, out);
		return;
	}
	leaf = malloc(len + 1);
	if (!leaf)
		exit(2);
	leaf[0] = 0x00;
	memcpy(leaf + 1, line, len);
	tlog_sha256(leaf, len + 1, out);
	free(leaf);
}

static void tw_emit(struct tw *w, const char *line)
{
	size_t len = strlen(line);

	if (len > JSONLINE_MAX) {
		fprintf(stderr, "test writer: line too long\n");
		exit(2);
	}
	tlog_append(&w->tree, line, len);
	next_prev(line, len, w->prev);
	w->seq++;
	if (w->log)
		log_push(w->log, line);
	else
		fprintf(w->out, "%s\n", line);
}

static void tw_line(struct tw *w, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One record: the header, then fmt (the members after "type", without the leading comma). */
static void tw_line(struct tw *w, const char *type, const char *fmt, ...)
{
	char line[JSONLINE_MAX + 2], prev[65];
	va_list ap;
	int n;

	w->ts += w->step;
	hexs(w->prev, prev);
	n = snprintf(line, sizeof(line),
		     "{\"seq\":%" PRIu64 ",\"prev\":\"%s\",\"ts\":%" PRId64 ",\"type\":\"%s\"",
		     w->seq, prev, w->ts, type);
	if (fmt[0]) {
		line[n++] = ',';
		va_start(ap, fmt);
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	snprintf(line + n, sizeof(line) - (size_t)n, "}");
	tw_emit(w, line);
}

static void tw_start(struct tw *w, struct log *log, FILE *out, const char *run_id,
		     const struct note_signer *host, const struct note_signer *run, uint64_t secs)
{
	char text[512], note[2048], cert[4096], key[NOTE_VKEY_MAX + 1], hkey[NOTE_VKEY_MAX + 1];
	size_t len;

	memset(w, 0, sizeof(*w));
	w->log = log;
	w->out = out;
	tlog_init(&w->tree);
	w->ts = 1700000000000000;
	w->step = 100000;
	snprintf(w->origin, sizeof(w->origin), "sluice/%s", run_id);
	w->run = run;
	note_signer_vkey(run, key, sizeof(key));
	note_signer_vkey(host, hkey, sizeof(hkey));
	if (g.host_key_field)
		snprintf(hkey, sizeof(hkey), "%s", g.host_key_field);
	snprintf(text, sizeof(text), "sluice run key\n%s\n%s\n", w->origin, key);
	if (note_sign(host, text, strlen(text), note, sizeof(note), &len)) {
		fprintf(stderr, "test writer: cannot sign the cert\n");
		exit(2);
	}
	if (g.cert_cosigned)
		cosign(note, sizeof(note), g.witness);
	jstr(note, cert);
	tw_line(w, "log_start",
		"\"origin\":\"%s\",\"run_id\":\"%s\",\"key\":\"%s\",\"host_key\":\"%s\","
		"\"cert\":\"%s\",\"checkpoint_lines\":5,\"checkpoint_secs\":%" PRIu64
		",\"format\":%" PRIu64,
		w->origin, run_id, key, hkey, cert, secs, g.format);
	if (g.run_start)
		tw_line(w, "run_start", "\"mode\":\"enforce\",\"default\":\"deny\"");
}

/* A checkpoint note for the tree as it is, signed by s (the run key, or another). */
static void tw_note(struct tw *w, const struct note_signer *s, char *note, size_t size,
		    char *root_b64)
{
	uint8_t root[TLOG_HASH_SIZE];
	char text[512];
	size_t len;

	tlog_root(&w->tree, root);
	note_base64_encode(root, sizeof(root), root_b64, 64);
	if (checkpoint_text(w->origin, w->tree.size, root, text, sizeof(text)) < 0 ||
	    note_sign(s, text, strlen(text), note, size, &len)) {
		fprintf(stderr, "test writer: cannot sign a checkpoint\n");
		exit(2);
	}
}

/* A checkpoint whose note s signs (the run key, or another). */
static void tw_checkpoint_by(struct tw *w, const char *reason, const struct note_signer *s)
{
	char note[2048], esc[4096], root[64];

	tw_note(w, s, note, sizeof(note), root);
	if (w->log) {
		char copy[2048];

		if (w->export_as)
			tw_note(w, w->export_as, copy, sizeof(copy), root);
		else
			strcpy(copy, note);
		if (w->cosign_copy)
			cosign(copy, sizeof(copy), w->cosign_copy);
		w->export_as = NULL;
		w->cosign_copy = NULL;
		cps_append(w->log, copy, strlen(copy));
		cps_append(w->log, "\n", 1);
	}
	if (w->cosign_log)
		cosign(note, sizeof(note), w->cosign_log);
	w->cosign_log = NULL;
	jstr(note, esc);
	w->last_cp = w->seq + 1;
	tw_line(w, "checkpoint",
		"\"reason\":\"%s\",\"size\":%" PRIu64 ",\"root\":\"%s\",\"note\":\"%s\"", reason,
		w->seq, root, esc);
}

static void tw_checkpoint(struct tw *w, const char *reason)
{
	char note[2048], root[64];

	tw_checkpoint_by(w, reason, w->run);
	/* the writer exports one more note after the seal: the one covering the seal line */
	if (w->log && !strcmp(reason, "final")) {
		tw_note(w, w->run, note, sizeof(note), root);
		cps_append(w->log, note, strlen(note));
		cps_append(w->log, "\n", 1);
	}
}

static void tw_rec(struct tw *w, uint64_t kseq)
{
	if (kseq >= w->kseq_high)
		w->kseq_high = kseq + 1;
	tw_line(w, "decision",
		"\"hook\":\"connect4\",\"decision\":\"deny\",\"dst\":\"10.0.0.%" PRIu64
		"\",\"comm\":\"cu\\u0001rl \xc3\xa9\\u00ff\",\"argv\":[\"a\",\"b "
		"c\"],\"kseq\":%" PRIu64,
		kseq % 250, kseq);
}

static void tw_loss(struct tw *w, uint64_t count, uint64_t total)
{
	tw_line(w, "loss", "\"hook\":\"connect4\",\"count\":%" PRIu64 ",\"total\":%" PRIu64, count,
		total);
	tw_checkpoint(w, "loss");
}

static void tw_end_unlogged(struct tw *w, uint64_t kseq_next, uint64_t lost, uint64_t unlogged)
{
	if (unlogged)
		tw_line(w, "run_end",
			"\"why\":\"exited\",\"exit_status\":0,\"lost\":%" PRIu64
			",\"unlogged\":%" PRIu64 ",\"kseq_next\":%" PRIu64,
			lost, unlogged, kseq_next);
	else
		tw_line(w, "run_end",
			"\"why\":\"exited\",\"exit_status\":0,\"lost\":%" PRIu64
			",\"kseq_next\":%" PRIu64,
			lost, kseq_next);
	tw_checkpoint(w, "final");
}

static void tw_end(struct tw *w, uint64_t kseq_next, uint64_t lost)
{
	tw_end_unlogged(w, kseq_next, lost, 0);
}

/*
 * The standard log, 18 lines:
 *   1 log_start | 2-6 kseq 0-4 | 7 checkpoint (size 6) | 8-12 kseq 5-9 |
 *   13 checkpoint (size 12) | 14-16 kseq 10-12 | 17 run_end | 18 final (size 17)
 */
static void build_run(struct log *l, const char *run_id, const struct note_signer *host,
		      const struct note_signer *run)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, run_id, host, run, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_end(&w, k, 0);
}

static void build_basic(struct log *l)
{
	build_run(l, "run-a", g.host, g.run_a);
}

/* The run in format 1, sluice's before format 2: prev the SHA-256 of the line before. */
static void build_format1(struct log *l)
{
	g.format = 1;
	build_basic(l);
	g.format = 2;
}

/* Format 2 with format 1's prevs, and the other way round: each refused at line 1's next. */
static void build_format2_sha_prevs(struct log *l)
{
	g.chain = 1;
	build_basic(l);
	g.chain = 0;
}

static void build_format1_leaf_prevs(struct log *l)
{
	g.format = 1;
	g.chain = 2;
	build_basic(l);
	g.chain = 0;
	g.format = 2;
}

/* A format this sluice does not know (a later one's): refused at log_start, not read on. */
static void build_format3(struct log *l)
{
	g.format = 3;
	build_basic(l);
	g.format = 2;
}

/* Run B: another run id and key, same host. */
static void build_run_b(struct log *l)
{
	build_run(l, "run-b", g.host, g.run_b);
}

/* Run A's id again, with another key (a second run given the same id). */
static void build_run_a2(struct log *l)
{
	build_run(l, "run-a", g.host, g.run_a2);
}

static void build_other_host(struct log *l)
{
	build_run(l, "run-a", g.other_host, g.run_a);
}

/* A fork: the same run key signing different lines (a writer that kept its key). */
static void build_fork(struct log *l)
{
	struct tw w;
	uint64_t k;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (k = 0; k < 5; k++)
		tw_rec(&w, k + 100);
	tw_checkpoint(&w, "lines");
	tw_end(&w, 0, 0);
}

/* 1 log_start | 2-6 kseq 0-4 | 7 loss 3 | 8 checkpoint | 9-10 kseq 8,9 | 11 run_end | 12 final */
static void build_loss(struct log *l)
{
	struct tw w;
	uint64_t k;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_loss(&w, 3, 3);
	tw_rec(&w, 8);
	tw_rec(&w, 9);
	tw_end(&w, 10, 3);
}

/*
 * The log could not be written for a while (P25): the writer's loss line of hook "log", with
 * the lines it did not get besides the records. 1 log_start | 2-6 kseq 0-4 | 7 loss (log, 3,
 * lines LINES) | 8 checkpoint | 9-10 kseq 8,9 | 11 run_end | 12 final
 */
static void build_log_loss_lines(struct log *l, uint64_t count, uint64_t lines)
{
	struct tw w;
	uint64_t k;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_line(&w, "loss",
		"\"hook\":\"log\",\"count\":%" PRIu64 ",\"total\":%" PRIu64
		",\"kseq_below\":8,\"why\":\"No space left on device\",\"lines\":%" PRIu64,
		count, count, lines);
	tw_checkpoint(&w, "loss");
	for (k = 5 + count; k < 10; k++)
		tw_rec(&w, k);
	tw_end(&w, 10, count);
}

static void build_log_loss(struct log *l)
{
	build_log_loss_lines(l, 3, 4);
}

/* only lines that are not records (DNS answers) were lost: still not a complete log */
static void build_log_loss_no_records(struct log *l)
{
	build_log_loss_lines(l, 0, 2);
}

/* fewer lines than records */
static void build_log_loss_few_lines(struct log *l)
{
	build_log_loss_lines(l, 3, 2);
}

/* Records with the kseqs given, then run_end (kseq_next, declared loss) and the seal. */
static void build_kseqs(struct log *l, const uint64_t *ks, size_t n, uint64_t next, uint64_t loss)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (size_t i = 0; i < n; i++)
		tw_rec(&w, ks[i]);
	if (loss)
		tw_loss(&w, loss, loss);
	tw_end(&w, next, loss);
}

/* 1 log_start | 2-4 kseq 0,1,3 | 5 run_end (kseq_next 4) | 6 final */
static void build_gap(struct log *l)
{
	static const uint64_t ks[] = {0, 1, 3};

	build_kseqs(l, ks, ARRAY_SIZE(ks), 4, 0);
}

/* kseq 0,1,3 and run_end counting one record not logged by policy: nothing undeclared */
static void build_unlogged(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_rec(&w, 1);
	tw_rec(&w, 3);
	tw_end_unlogged(&w, 4, 0, 1);
}

/* the same, counting two: 1 log_start | 2-4 | 5 run_end */
static void build_overunlogged(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_rec(&w, 1);
	tw_rec(&w, 3);
	tw_end_unlogged(&w, 4, 0, 2);
}

/* 1 log_start | 2-3 kseq 0,1 | 4 loss 2 | 5 checkpoint | 6 run_end (kseq_next 3) | 7 final */
static void build_overdeclared(struct log *l)
{
	static const uint64_t ks[] = {0, 1};

	build_kseqs(l, ks, ARRAY_SIZE(ks), 3, 2);
}

/* 1 log_start | 2-4 kseq 0,1,1 | ... */
static void build_dup(struct log *l)
{
	static const uint64_t ks[] = {0, 1, 1};

	build_kseqs(l, ks, ARRAY_SIZE(ks), 2, 0);
}

static void build_dup2(struct log *l)
{
	static const uint64_t ks[] = {0, 2, 2};

	build_kseqs(l, ks, ARRAY_SIZE(ks), 3, 0);
}

static void build_out_of_order(struct log *l)
{
	static const uint64_t ks[] = {1, 0, 3, 2, 4};

	build_kseqs(l, ks, ARRAY_SIZE(ks), 5, 0);
}

/* kseq 0..2, run_end says kseq_next 2: line 5 (run_end) */
static void build_next_low(struct log *l)
{
	static const uint64_t ks[] = {0, 1, 2};

	build_kseqs(l, ks, ARRAY_SIZE(ks), 2, 0);
}

/* Checkpoints gap seconds apart: 1 log_start | 2 kseq 0 | 3 cp | 4 kseq 1 | 5 cp | 6 run_end | 7 */
static void build_gap_secs(struct log *l, int64_t gap_us)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_checkpoint(&w, "lines");
	w.step = gap_us - 100000;
	tw_rec(&w, 1);
	w.step = 100000;
	tw_checkpoint(&w, "heartbeat");
	tw_end(&w, 2, 0);
}

static void build_heartbeat_21s(struct log *l)
{
	build_gap_secs(l, 21000000);
}

static void build_heartbeat_gap(struct log *l)
{
	build_gap_secs(l, 21000001);
}

/* A writer SIGKILLed: 1 log_start | 2-4 kseq 0-2 | 5 cp | 6-9 kseq 3-6 */
static void build_killed(struct log *l)
{
	struct tw w;
	uint64_t k;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (k = 0; k < 3; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 7; k++)
		tw_rec(&w, k);
}

/* Killed after a declared loss: 1 | 2 kseq 0 | 3 loss 2 | 4 cp | 5 kseq 3 */
static void build_killed_loss(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_loss(&w, 2, 2);
	tw_rec(&w, 3);
}

/* A loss record with its kseq_below, and its checkpoint. */
static void tw_loss_below(struct tw *w, uint64_t count, uint64_t total, uint64_t below)
{
	tw_line(w, "loss",
		"\"hook\":\"connect4\",\"count\":%" PRIu64 ",\"total\":%" PRIu64
		",\"kseq_below\":%" PRIu64,
		count, total, below);
	tw_checkpoint(w, "loss");
}

/*
 * kseq 0,1,3,6,7 of 10: missing 2, 4-5, 8-9 (5 values), all declared lost.
 *   1 log_start | 2-6 kseq | 7 loss 5 (kseq_below 10) | 8 checkpoint | 9 loss_ranges (the
 *   members given; none if NULL) | 10 run_end (kseq_next 10) | 11 final
 */
static void build_lr(struct log *l, const char *members)
{
	static const uint64_t ks[] = {0, 1, 3, 6, 7};
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (size_t i = 0; i < ARRAY_SIZE(ks); i++)
		tw_rec(&w, ks[i]);
	tw_loss_below(&w, 5, 5, 10);
	if (members)
		tw_line(&w, "loss_ranges", "%s", members);
	tw_end(&w, 10, 5);
}

#define BUILD_LR(name, members)                                                                    \
	static void name(struct log *l)                                                            \
	{                                                                                          \
		build_lr(l, members);                                                              \
	}

BUILD_LR(build_lr_ok, "\"missing\":5,\"ranges\":[2,2,4,5,8,9],\"truncated\":false")
BUILD_LR(build_lr_none, NULL)
/* the first two of three ranges, truncated: a valid shorter listing */
BUILD_LR(build_lr_first2, "\"missing\":5,\"ranges\":[2,2,4,5],\"truncated\":true")
/* 4-5 left out, truncated to hide it */
BUILD_LR(build_lr_omit, "\"missing\":5,\"ranges\":[2,2,8,9],\"truncated\":true")
/* 4-5 left out, the count lowered to match */
BUILD_LR(build_lr_omit_count, "\"missing\":3,\"ranges\":[2,2,8,9],\"truncated\":false")
/* kseq 0 (which has its line) added */
BUILD_LR(build_lr_add, "\"missing\":6,\"ranges\":[0,0,2,2,4,5,8,9],\"truncated\":false")
/* 8-9 moved to 7-8: the same count */
BUILD_LR(build_lr_shift, "\"missing\":5,\"ranges\":[2,2,4,5,7,8],\"truncated\":false")
/* inconsistent in itself */
BUILD_LR(build_lr_sum, "\"missing\":5,\"ranges\":[2,2,4,5],\"truncated\":false")
BUILD_LR(build_lr_trunc_all, "\"missing\":5,\"ranges\":[2,2,4,5,8,9],\"truncated\":true")
BUILD_LR(build_lr_adjacent, "\"missing\":5,\"ranges\":[2,2,3,3,8,10],\"truncated\":false")
BUILD_LR(build_lr_reversed, "\"missing\":5,\"ranges\":[2,2,5,4,8,9],\"truncated\":false")
BUILD_LR(build_lr_odd, "\"missing\":5,\"ranges\":[2,2,4,5,8],\"truncated\":false")
BUILD_LR(build_lr_string, "\"missing\":5,\"ranges\":[2,2,4,5,8,\"9\"],\"truncated\":false")
BUILD_LR(build_lr_no_trunc, "\"missing\":5,\"ranges\":[2,2,4,5,8,9]")

/* 257 ranges listed: more than a loss_ranges record may hold (line 9) */
static void build_lr_257(struct log *l)
{
	char members[4096];
	int n = snprintf(members, sizeof(members), "\"missing\":257,\"ranges\":[");

	for (int i = 0; i < 257; i++)
		n += snprintf(members + n, sizeof(members) - (size_t)n, "%s%d,%d", i ? "," : "",
			      100 + 2 * i, 100 + 2 * i);
	snprintf(members + n, sizeof(members) - (size_t)n, "],\"truncated\":false");
	build_lr(l, members);
}

/* 1 | 2-6 | 7 loss | 8 cp | 9 loss_ranges | 10 loss_ranges again | 11 run_end | 12 final */
static void build_lr_twice(struct log *l)
{
	static const uint64_t ks[] = {0, 1, 3, 6, 7};
	static const char m[] = "\"missing\":5,\"ranges\":[2,2,4,5,8,9],\"truncated\":false";
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (size_t i = 0; i < ARRAY_SIZE(ks); i++)
		tw_rec(&w, ks[i]);
	tw_loss_below(&w, 5, 5, 10);
	tw_line(&w, "loss_ranges", "%s", m);
	tw_line(&w, "loss_ranges", "%s", m);
	tw_end(&w, 10, 5);
}

/* 1 | 2-6 | 7 loss | 8 cp | 9 run_end | 10 loss_ranges | 11 final */
static void build_lr_after_end(struct log *l)
{
	static const uint64_t ks[] = {0, 1, 3, 6, 7};
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (size_t i = 0; i < ARRAY_SIZE(ks); i++)
		tw_rec(&w, ks[i]);
	tw_loss_below(&w, 5, 5, 10);
	tw_line(&w, "run_end", "\"why\":\"exited\",\"exit_status\":0,\"lost\":5,\"kseq_next\":10");
	tw_line(&w, "loss_ranges", "\"missing\":5,\"ranges\":[2,2,4,5,8,9],\"truncated\":false");
	tw_checkpoint(&w, "final");
}

/*
 * Two loss records: kseq 0,1 | loss 2 (kseq_below b1) | kseq 4,5 | loss 2 (kseq_below b2) |
 * run_end (kseq_next next). Lines: 1 | 2-3 | 4 loss | 5 cp | 6-7 | 8 loss | 9 cp | 10 run_end
 * | 11 final. Missing 2-3 and 6-7 (next 8).
 */
static void build_below(struct log *l, uint64_t b1, uint64_t b2, uint64_t next)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_rec(&w, 1);
	tw_loss_below(&w, 2, 2, b1);
	tw_rec(&w, 4);
	tw_rec(&w, 5);
	tw_loss_below(&w, 2, 4, b2);
	tw_end(&w, next, 4);
}

static void build_below_ok(struct log *l)
{
	build_below(l, 4, 8, 8);
}

static void build_below_down(struct log *l)
{
	build_below(l, 6, 5, 8);
}

/* two records declared by kseq_below 1: impossible (each has its own number below it) */
static void build_below_few(struct log *l)
{
	build_below(l, 1, 8, 8);
}

static void build_below_past_end(struct log *l)
{
	build_below(l, 4, 9, 8);
}

/* Rotated at lines 7 and 13: 1 | 2-6 | 7 rotate | 8-12 | 13 rotate | 14-16 | 17 run_end | 18 */
static void build_rotated(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "rotate");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "rotate");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_end(&w, k, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Writer restarts                                                                             */

/*
 * The line the writer would write next, cut in half and written so, without its end: the torn
 * line of a writer killed inside a write(). A "time" checkpoint (its note never exported: the
 * writer exports a note only once its line is on disk) or the record of kseq k. Its length.
 */
static size_t tw_torn(struct tw *w, bool checkpoint, uint64_t k)
{
	struct log scratch = {0};
	struct tw t = *w;
	size_t len;

	t.log = &scratch;
	t.out = NULL;
	if (checkpoint)
		tw_checkpoint(&t, "time");
	else
		tw_rec(&t, k);
	len = strlen(scratch.l[0]) / 2;
	scratch.l[0][len] = '\0';
	w->ts = t.ts;
	tw_emit(w, scratch.l[0]);
	log_free(&scratch);
	return len;
}

/*
 * A writer_restart: key the new run key (from this line on it signs), its cert by host naming
 * cert_key, and the members given. The caller writes the restart checkpoint.
 */
static void tw_restart_full(struct tw *w, const struct note_signer *key,
			    const struct note_signer *host, const struct note_signer *cert_key,
			    const char *origin, uint64_t torn, uint64_t unsealed, uint64_t below)
{
	char text[512], note[2048], cert[4096], vkey[NOTE_VKEY_MAX + 1], ckey[NOTE_VKEY_MAX + 1];
	size_t len;

	note_signer_vkey(key, vkey, sizeof(vkey));
	note_signer_vkey(cert_key, ckey, sizeof(ckey));
	snprintf(text, sizeof(text), "sluice run key\n%s\n%s\n", w->origin, ckey);
	if (note_sign(host, text, strlen(text), note, sizeof(note), &len)) {
		fprintf(stderr, "test writer: cannot sign the restart's cert\n");
		exit(2);
	}
	jstr(note, cert);
	tw_line(w, "writer_restart",
		"\"origin\":\"%s\",\"key\":\"%s\",\"cert\":\"%s\",\"torn\":%" PRIu64
		",\"unsealed\":%" PRIu64 ",\"kseq_below\":%" PRIu64,
		origin ? origin : w->origin, vkey, cert, torn, unsealed, below);
	w->run = key;
}

/* A correct writer_restart and its restart checkpoint, torn the length of a torn line before. */
static void tw_restart(struct tw *w, const struct note_signer *key, uint64_t torn, uint64_t below)
{
	tw_restart_full(w, key, g.host, key, NULL, torn, w->seq - w->last_cp, below);
	tw_checkpoint(w, "restart");
}

static void tw_end_restarted(struct tw *w, uint64_t kseq_next, uint64_t lost, uint64_t gap)
{
	tw_line(w, "run_end",
		"\"why\":\"cgroup emptied\",\"exit_status\":null,\"lost\":%" PRIu64
		",\"unlogged\":0,\"restart_gap\":%" PRIu64 ",\"kseq_next\":%" PRIu64,
		lost, gap, kseq_next);
	tw_checkpoint(w, "final");
}

/* Keys by name, so that the scenarios below can be static tables: 0 is each knob's default. */
enum { K_DEFAULT, K_A, K_A2, K_R1, K_R2 };

static const struct note_signer *key_of(int k, const struct note_signer *dflt)
{
	switch (k) {
	case K_A:
		return g.run_a;
	case K_A2:
		return g.run_a2;
	case K_R1:
		return g.run_r1;
	case K_R2:
		return g.run_r2;
	default:
		return dflt;
	}
}

enum { TORN_NONE, TORN_CP, TORN_REC };
/* how a restarted writer died before its restart checkpoint: not, after its writer_restart, in it */
enum { DIED_NONE, DIED_AFTER_RESTART, DIED_IN_CP };

/* How a restarted log departs from the standard one (build_rs); all zero: the standard one. */
struct rs {
	int torn;	      /* TORN_CP: a "time" checkpoint torn; TORN_REC: kseq 7's record */
	long torn_delta;      /* added to writer_restart.torn */
	bool torn_zero;	      /* writer_restart.torn 0 (after a torn line) */
	uint64_t torn_force;  /* writer_restart.torn this (without a torn line) */
	bool no_restart;      /* after the torn line a record, no writer_restart */
	long unsealed_delta;  /* added to writer_restart.unsealed */
	int key, cert_key;    /* the new run key (R1), the key its cert names (the same) */
	bool cert_other_host; /* the cert signed by the other host key */
	const char *origin;   /* writer_restart.origin (log_start's) */
	long below_delta;     /* added to writer_restart.kseq_below (the kernel's next kseq) */
	int restart_cp_key;   /* the key signing the restart checkpoint (the new one) */
	const char *restart_cp_reason; /* its reason ("restart") */
	bool no_restart_cp;	       /* a record where the restart checkpoint should be */
	int restart_died; /* DIED_*: then another writer_restart (key R2) restarts it */
	bool no_gap_member; /* run_end without restart_gap */
	int next_cp_key;	       /* the key signing the checkpoint after it (the new one) */
	int64_t next_step;  /* microseconds between the lines after the restart checkpoint */
	bool after_run_end; /* the dead writer wrote run_end (not its seal); the restart after */
	bool loss_last;	    /* the dead writer's last line: a loss (kseq 7) without checkpoint */
	bool gap;	    /* the dead writer took kseq 7 and never wrote it: restart_gap 1 */
	long gap_delta;	    /* added to run_end.restart_gap */
	bool exit_zero;	    /* run_end.exit_status 0, not null */
	bool two;	    /* a second restart (key R2, or second_key) */
	int second_key;
	int export_key;	     /* the exported copy of the restart checkpoint signed by it */
	int export_dead_key; /* the exported copy of the dead writer's checkpoint signed by it */
	bool rotate;	     /* the dead writer's checkpoint rotates the log */
};

/*
 * The standard restarted log, 16 lines:
 *   1 log_start | 2-6 kseq 0-4 | 7 checkpoint (size 6) | 8-9 kseq 5,6 (the dead writer's
 *   unsigned tail) | 10 writer_restart (unsealed 2, kseq_below 7), after 30 s | 11 checkpoint
 *   "restart" (size 10) | 12-13 kseq 7,8 | 14 checkpoint (size 13) | 15 run_end | 16 final
 * A torn line or the dead writer's loss line comes in as line 10 and moves the rest down one.
 */
static void build_rs(struct log *l, const struct rs *o)
{
	const struct note_signer *key = key_of(o->key, g.run_r1);
	uint64_t k = 0, torn = 0, lost = 0, below, gap = o->gap || o->torn == TORN_REC;
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	w.export_as = o->export_dead_key ? key_of(o->export_dead_key, NULL) : NULL;
	tw_checkpoint(&w, o->rotate ? "rotate" : "lines");
	for (; k < 7; k++)
		tw_rec(&w, k);
	if (o->after_run_end) {
		tw_line(&w, "run_end",
			"\"why\":\"exited\",\"exit_status\":0,\"lost\":0,\"kseq_next\":7");
	}
	if (o->loss_last) {
		tw_line(&w, "loss",
			"\"hook\":\"connect4\",\"count\":1,\"total\":1,\"kseq_below\":8");
		lost = 1;
		k++;
	}
	if (o->torn)
		torn = tw_torn(&w, o->torn == TORN_CP, k);
	if (gap)
		k++;
	if (o->no_restart) {
		tw_rec(&w, k++);
		tw_end(&w, k, 0);
		return;
	}
	below = (uint64_t)((long)k + o->below_delta);
	w.step = 30000000;
	tw_restart_full(&w, key, o->cert_other_host ? g.other_host : g.host,
			key_of(o->cert_key, key), o->origin,
			o->torn_force  ? o->torn_force
			: o->torn_zero ? 0
				       : (uint64_t)((long)torn + o->torn_delta),
			(uint64_t)((long)(w.seq - w.last_cp) + o->unsealed_delta), below);
	w.step = 100000;
	if (o->restart_died) {
		size_t torn2 = o->restart_died == DIED_IN_CP ? tw_torn(&w, true, k) : 0;

		tw_restart_full(&w, g.run_r2, g.host, g.run_r2, NULL, torn2, w.seq - w.last_cp,
				below);
	}
	if (o->no_restart_cp) {
		tw_rec(&w, k++);
	} else {
		w.export_as = o->export_key ? key_of(o->export_key, NULL) : NULL;
		tw_checkpoint_by(&w, o->restart_cp_reason ? o->restart_cp_reason : "restart",
				 key_of(o->restart_cp_key, w.run));
	}
	if (o->next_step)
		w.step = o->next_step;
	for (uint64_t n = k + 2; k < n; k++)
		tw_rec(&w, k);
	tw_checkpoint_by(&w, "lines", key_of(o->next_cp_key, w.run));
	w.step = 100000;
	if (o->two) {
		for (uint64_t n = k + 2; k < n; k++)
			tw_rec(&w, k);
		tw_restart(&w, key_of(o->second_key, g.run_r2), 0, k);
		tw_rec(&w, k++);
		tw_checkpoint(&w, "lines");
	}
	if (o->exit_zero) {
		tw_line(&w, "run_end",
			"\"why\":\"cgroup emptied\",\"exit_status\":0,\"lost\":0,\"unlogged\":0,"
			"\"restart_gap\":0,\"kseq_next\":%" PRIu64,
			k);
		tw_checkpoint(&w, "final");
		return;
	}
	if (o->no_gap_member) {
		tw_line(&w, "run_end",
			"\"why\":\"cgroup emptied\",\"exit_status\":null,\"lost\":0,"
			"\"unlogged\":0,\"kseq_next\":%" PRIu64,
			k);
		tw_checkpoint(&w, "final");
		return;
	}
	tw_end_restarted(&w, k, lost, (uint64_t)((long)gap + o->gap_delta));
}

#define BUILD_RS(name, ...)                                                                        \
	static void name(struct log *l)                                                            \
	{                                                                                          \
		static const struct rs o = {__VA_ARGS__};                                          \
		build_rs(l, &o);                                                                   \
	}

BUILD_RS(build_rs_ok, .torn = TORN_NONE)
BUILD_RS(build_rs_torn, .torn = TORN_CP)
BUILD_RS(build_rs_torn_rec, .torn = TORN_REC)
BUILD_RS(build_rs_two, .two = true)
BUILD_RS(build_rs_two_torn, .two = true, .torn = TORN_CP)
BUILD_RS(build_rs_gap, .gap = true)
BUILD_RS(build_rs_gap_above, .gap = true, .below_delta = -1)
BUILD_RS(build_rs_gap_more, .gap = true, .gap_delta = 1)
BUILD_RS(build_rs_reuse_a, .key = K_A)
BUILD_RS(build_rs_reuse_r1, .two = true, .second_key = K_R1)
BUILD_RS(build_rs_cert_host, .cert_other_host = true)
BUILD_RS(build_rs_cert_key, .cert_key = K_R2)
BUILD_RS(build_rs_origin, .origin = "sluice/run-b")
BUILD_RS(build_rs_unsealed, .unsealed_delta = 1)
BUILD_RS(build_rs_torn_wrong, .torn = TORN_CP, .torn_delta = 1)
BUILD_RS(build_rs_torn_zero, .torn = TORN_CP, .torn_zero = true)
BUILD_RS(build_rs_torn_none, .torn_force = 40)
BUILD_RS(build_rs_torn_alone, .torn = TORN_CP, .no_restart = true)
BUILD_RS(build_rs_no_cp, .no_restart_cp = true)
BUILD_RS(build_rs_died, .restart_died = DIED_AFTER_RESTART)
BUILD_RS(build_rs_died_torn, .restart_died = DIED_IN_CP)
BUILD_RS(build_rs_no_gap, .no_gap_member = true)

/* A torn line where run_start belongs, then a writer_restart: line 2, its parse error. */
static void build_torn_run_start(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_restart_full(&w, g.run_r1, g.host, g.run_r1, NULL, tw_torn(&w, false, 0), 2, 0);
	tw_checkpoint(&w, "restart");
}
BUILD_RS(build_rs_cp_reason, .restart_cp_reason = "lines")
BUILD_RS(build_rs_cp_old, .restart_cp_key = K_A)
BUILD_RS(build_rs_next_old, .next_cp_key = K_A)
BUILD_RS(build_rs_next_stranger, .next_cp_key = K_A2)
BUILD_RS(build_rs_below_low, .below_delta = -2)
BUILD_RS(build_rs_after_end, .after_run_end = true)
BUILD_RS(build_rs_loss, .loss_last = true)
BUILD_RS(build_rs_loss_torn, .loss_last = true, .torn = TORN_CP)
BUILD_RS(build_rs_exit_zero, .exit_zero = true)
BUILD_RS(build_rs_next_gap, .next_step = 7000001)
BUILD_RS(build_rs_export_stranger, .export_key = K_A2)
BUILD_RS(build_rs_export_old, .export_key = K_A)
BUILD_RS(build_rs_export_dead, .export_dead_key = K_A2)
BUILD_RS(build_rs_export_early, .export_dead_key = K_R1)
BUILD_RS(build_rs_rotated, .rotate = true)

/*
 * A run switched twice (sluice set-mode, replace-policy): 1 log_start | 2-6 kseq 0-4 | 7 cp |
 * 8 policy_change (enforce -> report, policy A -> B) | 9-13 | 14 cp | 15 policy_change (report
 * -> enforce, B -> C) | 16-18 | 19 run_end | 20 final. (The corpus's run_start, mode enforce,
 * names no digest.) bad: 0 none; 1 line 8's mode "audit"; 2 line 15's prev_policy_sha256 is A's;
 * 3 line 15's prev_mode enforce; 4 line 8's policy_sha256 not hex.
 */
static void build_pc(struct log *l, int bad)
{
	static const char a[] = "1111111111111111111111111111111111111111111111111111111111111111";
	static const char b[] = "2222222222222222222222222222222222222222222222222222222222222222";
	static const char c[] = "3333333333333333333333333333333333333333333333333333333333333333";
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	tw_line(&w, "policy_change",
		"\"run_id\":\"run-a\",\"policy\":\"/etc/b.yaml\",\"policy_sha256\":\"%s\","
		"\"mode\":\"%s\",\"prev_policy_sha256\":\"%s\",\"prev_mode\":\"enforce\"",
		bad == 4 ? "B" : b, bad == 1 ? "audit" : "report", a);
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	tw_line(&w, "policy_change",
		"\"run_id\":\"run-a\",\"policy\":\"/etc/c.yaml\",\"policy_sha256\":\"%s\","
		"\"mode\":\"enforce\",\"prev_policy_sha256\":\"%s\",\"prev_mode\":\"%s\"",
		c, bad == 2 ? a : b, bad == 3 ? "enforce" : "report");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_end(&w, k, 0);
}

static void build_pc_ok(struct log *l) { build_pc(l, 0); }
static void build_pc_mode(struct log *l) { build_pc(l, 1); }
static void build_pc_prev_sha(struct log *l) { build_pc(l, 2); }
static void build_pc_prev_mode(struct log *l) { build_pc(l, 3); }
static void build_pc_sha(struct log *l) { build_pc(l, 4); }

/*
 * A switch announced before its commit (policy_switch_begin) and closed by its policy_change, then
 * a second one whose writer died before the commit: the writer that took over closes it with a
 * policy_switch_abort. 1 log_start | 2-6 kseq 0-4 | 7 cp | 8 begin (A -> B, era 2) | 9 kseq 5 |
 * 10 policy_change (B, era 2) | 11 kseq 6 | 12 cp | 13 begin (B -> C, era 3) | 14 writer_restart |
 * 15 cp "restart" | 16 abort (era 3) | 17-18 kseq 7-8 | 19 cp | 20 run_end | 21 final.
 * bad: 0 none; 1 line 8's begin names a digest no policy_change repeats; 2 line 13's era is 2
 * again; 3 a record before the abort (line 16); 4 the abort names era 4; 5 no restart, no abort:
 * run_end with the begin open; 6 line 10's policy_change names era 3; 7 line 13's prev_era is 1
 * (below its era, but not the generation in force); 8 with a run_start (line 2): line 9's
 * prev_era is 0.
 */
static void build_sw(struct log *l, int bad)
{
	static const char a[] = "1111111111111111111111111111111111111111111111111111111111111111";
	static const char b[] = "2222222222222222222222222222222222222222222222222222222222222222";
	static const char c[] = "3333333333333333333333333333333333333333333333333333333333333333";
	static const char d[] = "4444444444444444444444444444444444444444444444444444444444444444";
	struct tw w;
	uint64_t k = 0;

	bool run_start = g.run_start;

	g.run_start = run_start || bad == 8; /* run_start's generation is the one in force */
	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	g.run_start = run_start;
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	tw_line(&w, "policy_switch_begin",
		"\"run_id\":\"run-a\",\"policy\":\"/etc/b.yaml\",\"policy_sha256\":\"%s\","
		"\"mode\":\"report\",\"default\":\"deny\",\"era\":2,\"prev_era\":%d",
		bad == 1 ? d : b, bad == 8 ? 0 : 1);
	tw_rec(&w, k++);
	tw_line(&w, "policy_change",
		"\"run_id\":\"run-a\",\"policy\":\"/etc/b.yaml\",\"policy_sha256\":\"%s\","
		"\"mode\":\"report\",\"default\":\"deny\",\"era\":%d,"
		"\"prev_policy_sha256\":\"%s\",\"prev_mode\":\"enforce\"",
		b, bad == 6 ? 3 : 2, a);
	tw_rec(&w, k++);
	tw_checkpoint(&w, "lines");
	tw_line(&w, "policy_switch_begin",
		"\"run_id\":\"run-a\",\"policy\":\"/etc/c.yaml\",\"policy_sha256\":\"%s\","
		"\"mode\":\"enforce\",\"default\":\"deny\",\"era\":%d,\"prev_era\":%d",
		c, bad == 2 ? 2 : 3, bad == 7 ? 1 : 2);
	if (bad == 5) {
		for (; k < 9; k++)
			tw_rec(&w, k);
		tw_end(&w, k, 0);
		return;
	}
	w.step = 30000000;
	tw_restart_full(&w, g.run_r1, g.host, g.run_r1, NULL, 0, w.seq - w.last_cp, k);
	w.step = 100000;
	tw_checkpoint_by(&w, "restart", w.run);
	if (bad == 3)
		tw_rec(&w, k++);
	tw_line(&w, "policy_switch_abort",
		"\"run_id\":\"run-a\",\"era\":%d,\"why\":\"the writer died before the commit\"",
		bad == 4 ? 4 : 3);
	for (uint64_t n = k + 2; k < n; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	tw_end_restarted(&w, k, 0, 0);
}

static void build_sw_ok(struct log *l) { build_sw(l, 0); }
static void build_sw_sha(struct log *l) { build_sw(l, 1); }
static void build_sw_era_again(struct log *l) { build_sw(l, 2); }
static void build_sw_not_first(struct log *l) { build_sw(l, 3); }
static void build_sw_abort_era(struct log *l) { build_sw(l, 4); }
static void build_sw_open_end(struct log *l) { build_sw(l, 5); }
static void build_sw_change_era(struct log *l) { build_sw(l, 6); }
static void build_sw_prev_era(struct log *l) { build_sw(l, 7); }
static void build_sw_prev_era_start(struct log *l) { build_sw(l, 8); }

/* The standard log whose run_end has a restart_gap, without any writer_restart: line 17. */
static void build_gap_no_restart(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_end_restarted(&w, k, 0, 0);
}

/*
 * Kseqs a window apart before the restart, so that the window reports 1..W missing before the
 * writer_restart, and all of what is missing is the dead writer's doing: 1 log_start | 2-4 kseq
 * 0, W+1, 2W+2 | 5 cp | 6 writer_restart (kseq_below 2W+3) | 7 cp | 8 kseq 2W+3 | 9 run_end
 * (restart_gap 2W) | 10 final
 */
static void build_rs_window(struct log *l)
{
	const uint64_t W = VERIFY_KSEQ_WINDOW;
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_rec(&w, W + 1);
	tw_rec(&w, 2 * W + 2);
	tw_checkpoint(&w, "lines");
	tw_restart(&w, g.run_r1, 0, 2 * W + 3);
	tw_rec(&w, 2 * W + 3);
	tw_end_restarted(&w, 2 * W + 4, 0, 2 * W);
}

/* A "restart" checkpoint with no writer_restart before it: 1 | 2-6 | 7 restart cp | … */
static void build_restart_cp_alone(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "restart");
	tw_end(&w, k, 0);
}

/* The killed writer's log (build_killed) and a line that is not canonical after it: line 10. */
static void build_killed_garbage(struct log *l)
{
	build_killed(l);
	log_push(l, "{\"seq\":9,\"prev\":\"");
}

/* ------------------------------------------------------------------------------------------ */
/* Tampering                                                                                   */

/* Rewrite seq and prev of lines from..n-1 so the chain holds again (an attacker without the key).
 */
static void rechain(struct log *l, size_t from)
{
	uint8_t h[TLOG_HASH_SIZE];
	char prev[65], *line, *rest;

	for (size_t i = from; i < l->n; i++) {
		next_prev(l->l[i - 1], strlen(l->l[i - 1]), h);
		hexs(h, prev);
		rest = strstr(l->l[i], "\",\"ts\":");
		if (asprintf(&line, "{\"seq\":%zu,\"prev\":\"%s%s", i, prev, rest) < 0)
			exit(2);
		free(l->l[i]);
		l->l[i] = line;
	}
}

/* Line 9 (index 8, kseq 6): its dst 10.0.0.6 becomes 10.0.0.7. */
static void m_edit_byte(struct log *l)
{
	char *p = strstr(l->l[8], "\"dst\":\"10.0.0.6\"");

	p[strlen("\"dst\":\"10.0.0.")] = '7';
}

static void m_edit_rechain(struct log *l)
{
	m_edit_byte(l);
	rechain(l, 9);
}

static void m_delete(struct log *l)
{
	free(l->l[8]);
	memmove(&l->l[8], &l->l[9], (l->n - 9) * sizeof(*l->l));
	l->n--;
}

static void m_swap(struct log *l)
{
	char *t = l->l[8];

	l->l[8] = l->l[9];
	l->l[9] = t;
}

static void m_insert(struct log *l)
{
	log_push(l, "");
	memmove(&l->l[10], &l->l[9], (l->n - 10) * sizeof(*l->l));
	l->l[9] = xstrdup(l->l[8]);
}

/* A record repeated after itself, renumbered and rechained: its kseq repeats. */
static void m_insert_rechain(struct log *l)
{
	m_insert(l);
	rechain(l, 9);
}

/* A forged record (no kseq) inserted, renumbered, rechained: checkpoint line 14 fails. */
static void m_forge_rechain(struct log *l)
{
	m_insert(l);
	free(l->l[9]);
	l->l[9] = xstrdup("{\"seq\":0,\"prev\":\"" Z64 "\",\"ts\":1700000000900000,"
			  "\"type\":\"note\",\"what\":\"nothing happened\"}");
	rechain(l, 9);
}

static void m_truncate(struct log *l, size_t keep)
{
	while (l->n > keep)
		free(l->l[--l->n]);
}

static void m_keep_12(struct log *l)
{
	m_truncate(l, 12);
}

static void m_keep_13(struct log *l)
{
	m_truncate(l, 13);
}

static void m_keep_10(struct log *l)
{
	m_truncate(l, 10);
}

static void m_keep_11(struct log *l)
{
	m_truncate(l, 11);
}

static void m_keep_16(struct log *l)
{
	m_truncate(l, 16);
}

static void m_keep_17(struct log *l)
{
	m_truncate(l, 17);
}

/* 15 lines and half of line 16, with no newline */
static void m_cut_mid_line(struct log *l)
{
	m_truncate(l, 16);
	l->l[15][strlen(l->l[15]) / 2] = '\0';
	l->no_last_newline = true;
}

/* A complete last line without its newline: still not a line. */
static void m_no_final_newline(struct log *l)
{
	l->no_last_newline = true;
}

/* Line 7's checkpoint: one base64 character of the signature changed. */
static void m_replace_sig(struct log *l)
{
	char *p = strstr(l->l[6], "\xe2\x80\x94 sluice/run-a ");

	p += strlen("\xe2\x80\x94 sluice/run-a ") + 20;
	*p = *p == 'A' ? 'B' : 'A';
}

/* Line 7's note replaced by one of the same text signed by another key of the same name. */
static void m_sig_other_key(struct log *l)
{
	struct tw w = {0};
	char note[2048], esc[4096], root[64], *line, *p;

	tlog_init(&w.tree);
	for (int i = 0; i < 6; i++)
		tlog_append(&w.tree, l->l[i], strlen(l->l[i]));
	snprintf(w.origin, sizeof(w.origin), "sluice/run-a");
	tw_note(&w, g.run_a2, note, sizeof(note), root);
	jstr(note, esc);
	p = strstr(l->l[6], ",\"note\":\"");
	*p = '\0';
	if (asprintf(&line, "%s,\"note\":\"%s\"}", l->l[6], esc) < 0)
		exit(2);
	free(l->l[6]);
	l->l[6] = line;
}

/* Line 7's root field changed to the root of another tree (the note still signs the right one) */
static void m_checkpoint_root(struct log *l)
{
	char *p = strstr(l->l[6], "\"root\":\"") + 8;

	*p = *p == 'A' ? 'B' : 'A';
}

static void m_space(struct log *l)
{
	char *line;

	if (asprintf(&line, "{\"seq\": %s", l->l[8] + strlen("{\"seq\":")) < 0)
		exit(2);
	free(l->l[8]);
	l->l[8] = line;
}

static void m_crlf(struct log *l)
{
	char *line;

	if (asprintf(&line, "%s\r", l->l[4]) < 0)
		exit(2);
	free(l->l[4]);
	l->l[4] = line;
}

/* A non-canonical escape in line 3's comm: the raw UTF-8 of é written as \u00c3\u00a9. */
static void m_escape(struct log *l)
{
	char *p = strstr(l->l[2], "\xc3\xa9"), *line;

	*p = '\0';
	if (asprintf(&line, "%s\\u00c3\\u00a9%s", l->l[2], p + 2) < 0)
		exit(2);
	free(l->l[2]);
	l->l[2] = line;
}

/* A canonical record after the seal, chained properly: line 19. */
static void m_after_final(struct log *l)
{
	log_push(l, l->l[l->n - 3]);
	rechain(l, l->n - 1);
}

static void m_not_log_start(struct log *l)
{
	char *p = strstr(l->l[0], "\"log_start\"");

	memcpy(p, "\"log_stbrt\"", 11);
}

static void m_empty(struct log *l)
{
	m_truncate(l, 0);
}

/* log_start's key replaced by another key of the same name: the cert names a different one. */
static void m_cert_key(struct log *l)
{
	char key_a[NOTE_VKEY_MAX + 1], key_a2[NOTE_VKEY_MAX + 1], *p, *line;

	note_signer_vkey(g.run_a, key_a, sizeof(key_a));
	note_signer_vkey(g.run_a2, key_a2, sizeof(key_a2));
	p = strstr(l->l[0], key_a);
	*p = '\0';
	if (asprintf(&line, "%s%s%s", l->l[0], key_a2, p + strlen(key_a)) < 0)
		exit(2);
	free(l->l[0]);
	l->l[0] = line;
	rechain(l, 1);
}

/* A loss record deleted and the chain rebuilt: the checkpoint after it (line 7) fails. */
static void m_hide_loss(struct log *l)
{
	free(l->l[6]);
	memmove(&l->l[6], &l->l[7], (l->n - 7) * sizeof(*l->l));
	l->n--;
	rechain(l, 6);
}

static void cps_garbage(struct log *l)
{
	cps_append(l, "garbage\n", 8);
}

/* The first exported note's size changed: its signature no longer holds. */
static void cps_bad_sig(struct log *l)
{
	char *p = strstr(l->cps, "\n6\n");

	p[1] = '7';
}

/* The writer's notice that the log failed, between notes (journal.c log_failed). */
static void cps_notice(struct log *l)
{
	static const char notice[] =
		"sluice: log write failed at seq 18: No space left on device\n\n";

	cps_append(l, notice, strlen(notice));
}

static void cps_notice_cut(struct log *l)
{
	cps_notice(l);
	l->cps[--l->cps_len] = '\0';
}

static void cps_no_blank(struct log *l)
{
	l->cps[--l->cps_len] = '\0';
}

/* Keep the first n notes of the exported copy (each note: text, blank line, signatures, blank). */
static void cps_keep(struct log *l, size_t n)
{
	size_t blanks = 0;

	for (size_t i = 0; i + 1 < l->cps_len; i++) {
		if (l->cps[i] != '\n' || l->cps[i + 1] != '\n')
			continue;
		if (++blanks == 2 * n) {
			l->cps_len = i + 2;
			l->cps[l->cps_len] = '\0';
			return;
		}
	}
}

static size_t cps_count(const struct log *l)
{
	size_t blanks = 0;

	for (size_t i = 0; i + 1 < l->cps_len; i++)
		blanks += l->cps[i] == '\n' && l->cps[i + 1] == '\n';
	return blanks / 2;
}

/* The copies without their last note (the one covering the seal line) */
static void cps_drop_1(struct log *l)
{
	cps_keep(l, cps_count(l) - 1);
}

/* … and without the seal's own note either */
static void cps_drop_2(struct log *l)
{
	cps_keep(l, cps_count(l) - 2);
}

static void cps_keep_2(struct log *l)
{
	cps_keep(l, 2);
}

/* A note of size 0 (the empty tree), signed by the run key: the writer makes none. */
static void cps_size_0(struct log *l)
{
	struct tw w = {0};
	char note[2048], root[64];

	tlog_init(&w.tree);
	snprintf(w.origin, sizeof(w.origin), "sluice/run-a");
	tw_note(&w, g.run_a, note, sizeof(note), root);
	cps_append(l, note, strlen(note));
	cps_append(l, "\n", 1);
}

/* The seal (line 18) replaced by a record of its seq, chained on: a forged last line. */
static void m_forge_seal(struct log *l)
{
	free(l->l[--l->n]);
	log_push(l, "{\"seq\":0,\"prev\":\"" Z64 "\",\"ts\":1700000001900000,"
		    "\"type\":\"note\",\"what\":\"nothing happened\"}");
	rechain(l, l->n - 1);
}

/*
 * run_end then a "lines" checkpoint then the seal: 1 log_start | 2-6 kseq 0-4 | 7 cp | 8-12
 * kseq 5-9 | 13 cp | 14-16 kseq 10-12 | 17 run_end | 18 cp "lines" | 19 final
 */
static void build_cp_before_seal(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_line(&w, "run_end", "\"why\":\"exited\",\"exit_status\":0,\"lost\":0,\"kseq_next\":13");
	tw_checkpoint(&w, "lines");
	tw_checkpoint(&w, "final");
}

/* The seal dropped and the "lines" checkpoint before it (now the last line) made "final". */
static void m_promote_seal(struct log *l)
{
	char *p;

	free(l->l[--l->n]);
	p = strstr(l->l[l->n - 1], "\"reason\":\"lines\"");
	memcpy(p + strlen("\"reason\":\""), "final", 5);
}

static void m_keep_3(struct log *l)
{
	m_truncate(l, 3);
}

/* 1 log_start | 2 kseq 0 | 3 loss 1, no checkpoint | 4 kseq 2 | 5 run_end | 6 final */
static void build_loss_no_cp(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_line(&w, "loss", "\"hook\":\"connect4\",\"count\":1,\"total\":1");
	tw_rec(&w, 2);
	tw_end(&w, 3, 1);
}

/* 1 log_start | 2 kseq 0 | 3 anomaly | 4 checkpoint (reason) | 5 run_end | 6 final */
static void build_anomaly_reason(struct log *l, const char *reason)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_line(&w, "anomaly", "\"what\":\"something odd\"");
	tw_checkpoint(&w, reason);
	tw_end(&w, 1, 0);
}

static void build_anomaly(struct log *l)
{
	build_anomaly_reason(l, "anomaly");
}

static void build_anomaly_lines_cp(struct log *l)
{
	build_anomaly_reason(l, "lines");
}

/* log_start's host_key names the other host's key; the cert is signed by the host's. */
static void build_host_key_field(struct log *l)
{
	g.host_key_field = g.other_vkey;
	build_basic(l);
	g.host_key_field = NULL;
}

/* Line 7's note replaced by one for origin sluice/run-b (same size and root, run A's key). */
static void m_note_origin(struct log *l)
{
	struct tw w = {0};
	char note[2048], esc[4096], root[64], *line, *p;

	tlog_init(&w.tree);
	for (int i = 0; i < 6; i++)
		tlog_append(&w.tree, l->l[i], strlen(l->l[i]));
	snprintf(w.origin, sizeof(w.origin), "sluice/run-b");
	tw_note(&w, g.run_a, note, sizeof(note), root);
	jstr(note, esc);
	p = strstr(l->l[6], ",\"note\":\"");
	*p = '\0';
	if (asprintf(&line, "%s,\"note\":\"%s\"}", l->l[6], esc) < 0)
		exit(2);
	free(l->l[6]);
	l->l[6] = line;
}

/* ------------------------------------------------------------------------------------------ */
/* What an independent verifier written from the README found unsaid or unchecked (issue 11)   */

/* A record of kseq k whose line is exactly want bytes (a "pad" string fills it). */
static void tw_rec_len(struct tw *w, uint64_t k, size_t want)
{
	struct log scratch = {0};
	struct tw t = *w;
	size_t len;
	char *pad;

	t.log = &scratch;
	t.out = NULL;
	tw_line(&t, "decision", "\"pad\":\"\",\"kseq\":%" PRIu64, k);
	len = strlen(scratch.l[0]);
	log_free(&scratch);
	pad = xmalloc(want - len + 1);
	memset(pad, 'x', want - len);
	pad[want - len] = '\0';
	tw_line(w, "decision", "\"pad\":\"%s\",\"kseq\":%" PRIu64, pad, k);
	free(pad);
	if (k >= w->kseq_high)
		w->kseq_high = k + 1;
}

/* build_run's log, line 9 (kseq 6) exactly JSONLINE_MAX bytes: 8192 with its "\n". */
static void build_line_max(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	tw_rec(&w, k++);
	tw_rec_len(&w, k++, JSONLINE_MAX);
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_end(&w, k, 0);
}

/* The padded line one byte longer: 8192 bytes, 8193 with its "\n". */
static void m_line_8192(struct log *l)
{
	for (size_t i = 0; i < l->n; i++) {
		char *p = strstr(l->l[i], "\"pad\":\"x"), *line;

		if (!p)
			continue;
		p += strlen("\"pad\":\"");
		if (asprintf(&line, "%.*sx%s", (int)(p - l->l[i]), l->l[i], p) < 0)
			exit(2);
		free(l->l[i]);
		l->l[i] = line;
	}
}

/*
 * One rotate checkpoint inside the file: its rename failed, rotation stopped, the writer went
 * on in the same file. 1 | 2-6 | 7 rotate | 8-12 | 13 lines | 14-16 | 17 run_end | 18 final
 */
static void build_rotate_stopped(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "rotate");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_end(&w, k, 0);
}

/*
 * Rotation stopped (line 7), the writer died; the restarted one rotates again (line 13).
 * 1 | 2-6 | 7 rotate | 8-9 | 10 writer_restart | 11 restart | 12 | 13 rotate | 14 | 15 run_end |
 * 16 final
 */
static void build_rotate_restart(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "rotate");
	for (; k < 7; k++)
		tw_rec(&w, k);
	w.step = 30000000;
	tw_restart(&w, g.run_r1, 0, k);
	w.step = 100000;
	tw_rec(&w, k++);
	tw_checkpoint(&w, "rotate");
	tw_rec(&w, k++);
	tw_end_restarted(&w, k, 0, 0);
}

/* run_end (line 7), then what the writer may still sign before its seal. */
static void tw_run_end(struct tw *w, uint64_t lost, uint64_t kseq_next)
{
	tw_line(w, "run_end",
		"\"why\":\"exited\",\"exit_status\":0,\"lost\":%" PRIu64 ",\"kseq_next\":%" PRIu64,
		lost, kseq_next);
}

/* 1 | 2-6 | 7 run_end | 8 lines | 9 time | 10 heartbeat | 11 rotate | 12 final */
static void build_end_cps(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (uint64_t k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_run_end(&w, 0, 5);
	tw_checkpoint(&w, "lines");
	tw_checkpoint(&w, "time");
	tw_checkpoint(&w, "heartbeat");
	tw_checkpoint(&w, "rotate");
	tw_checkpoint(&w, "final");
}

/* 1 | 2-6 kseq 0-4 | 7 run_end (kseq_next 6) | 8 kseq 5 | 9 final */
static void build_end_record(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (uint64_t k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_run_end(&w, 0, 6);
	tw_rec(&w, 5);
	tw_checkpoint(&w, "final");
}

/* 1 | 2-6 kseq 0-4 | 7 run_end (lost 0, kseq_next 6) | 8 loss 1 | 9 loss cp | 10 final */
static void build_end_loss(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (uint64_t k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_run_end(&w, 0, 6);
	tw_loss(&w, 1, 1);
	tw_checkpoint(&w, "final");
}

/* 1 | 2-6 | 7 run_end | 8 checkpoint "anomaly" (no anomaly record) | 9 final */
static void build_end_anomaly_cp(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (uint64_t k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_run_end(&w, 0, 5);
	tw_checkpoint(&w, "anomaly");
	tw_checkpoint(&w, "final");
}

/* build_loss (3 declared, kseq 5-7 missing), run_end saying lost 2: line 11 */
static void build_lost_short(struct log *l)
{
	struct tw w;
	uint64_t k;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_loss_below(&w, 3, 3, 8);
	tw_rec(&w, 8);
	tw_rec(&w, 9);
	tw_end(&w, 10, 2);
}

/* run_end saying lost 1, no loss record, kseq 5 missing: line 7 */
static void build_lost_undeclared(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (uint64_t k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_end(&w, 6, 1);
}

/* run_end without lost: line 7 */
static void build_lost_absent(struct log *l)
{
	struct tw w;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (uint64_t k = 0; k < 5; k++)
		tw_rec(&w, k);
	tw_line(&w, "run_end", "\"why\":\"exited\",\"exit_status\":0,\"kseq_next\":5");
	tw_checkpoint(&w, "final");
}

/* The seal's note (line 18) with a witness's signature line after the run key's. */
static void build_seal_cosigned(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	w.cosign_log = g.witness;
	tw_end(&w, k, 0);
}

/* The same for checkpoint line 7, in the log and in its exported copy. */
static void build_cp_cosigned(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	w.cosign_log = g.witness;
	w.cosign_copy = g.witness;
	tw_checkpoint(&w, "lines");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_end(&w, k, 0);
}

/* log_start's certificate also signed by the witness: line 1 */
static void build_cert_cosigned(struct log *l)
{
	g.cert_cosigned = true;
	build_basic(l);
	g.cert_cosigned = false;
}

/* The exported copies of checkpoint line 7 and of the seal cosigned by a witness (C2SP). */
static void build_copies_cosigned(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	w.cosign_copy = g.witness;
	tw_checkpoint(&w, "lines");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	w.cosign_copy = g.witness;
	tw_end(&w, k, 0);
}

/* The exported copy of checkpoint line 7 signed by the witness alone, not by the run key. */
static void build_copies_witness_only(struct log *l)
{
	struct tw w;
	uint64_t k = 0;

	tw_start(&w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (; k < 5; k++)
		tw_rec(&w, k);
	w.export_as = g.witness;
	tw_checkpoint(&w, "lines");
	for (; k < 10; k++)
		tw_rec(&w, k);
	tw_checkpoint(&w, "lines");
	for (; k < 13; k++)
		tw_rec(&w, k);
	tw_end(&w, k, 0);
}

/* The seal cut off: an unsealed log. */
static void m_drop_seal(struct log *l)
{
	m_truncate(l, l->n - 1);
}

/* The exported copy of checkpoint line 7: the witness's signature named as the run key. */
static void cps_witness_as_run(struct log *l)
{
	char *sig = strstr(l->cps, "\xe2\x80\x94 sluice/run-a ");
	char text[512], note[2048], *end, *out;
	size_t tlen = (size_t)(strstr(l->cps, "\n\n") - l->cps) + 1, len;
	struct note_signer *impostor;

	/* a key named as the run's (its hash differs) signs in the run key's line's place */
	if (note_signer_generate("sluice/run-a", &impostor))
		exit(2);
	memcpy(text, l->cps, tlen);
	if (note_sign(impostor, text, tlen, note, sizeof(note), &len))
		exit(2);
	note_signer_free(impostor);
	end = strchr(sig, '\n');
	if (asprintf(&out, "%.*s%s%s", (int)(sig - l->cps), l->cps, note + tlen + 1, end + 1) < 0)
		exit(2);
	free(l->cps);
	l->cps = out;
	l->cps_len = strlen(out);
}

/* ------------------------------------------------------------------------------------------ */

enum {
	SEGMENTS = 1,	   /* write rotated segments: split after each rotate checkpoint */
	DROP_SEG2 = 2,	   /* then remove LOG.000002.gz */
	TRUNC_SEG1 = 4,	   /* then cut LOG.000001.gz short */
	SPLIT_AT_5 = 8,	   /* one segment of lines 1-5 (no rotate checkpoint), then LOG */
	PLAIN_SEG1 = 16,   /* segment 1 as the plain LOG.000001 (its compression not done) */
	BOTH_SEG1 = 32,	   /* segment 1 as LOG.000001 and LOG.000001.gz (plain not removed) */
	EDIT_GZ_SEG1 = 64, /* LOG.000001.gz: line 3 with a byte changed (not in LOG.000001) */
	NO_LOG = 128,	   /* then remove LOG (crash between rotation's rename and create) */
	TMP_FILES = 256,   /* garbage in LOG.000001.gz.tmp and LOG.000003.gz.tmp (ignored) */
	GZ_IS_PLAIN = 512, /* LOG.000001.gz holds the segment uncompressed */
};

struct verify_case {
	const char *name;
	void (*build)(struct log *);
	void (*mutate)(struct log *);
	void (*cps_from)(struct log *); /* exported checkpoints: this run's */
	void (*cps_mutate)(struct log *);
	unsigned int flags;
	int status;
	uint64_t line;	  /* expected err_line (status 1), 0 for none */
	int64_t unsealed; /* expected unsealed_lines (status 2), -1: not checked */
	const char *why;  /* a substring of the reason (status 1) */
};

static const struct verify_case verify_cases[] = {
	{"intact log: exit 0", build_basic, NULL, NULL, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"intact log in format 1 (prev the SHA-256): exit 0", build_format1, NULL, NULL, NULL, 0,
	 VERIFY_OK, 0, -1, NULL},
	{"format 2 with SHA-256 prevs: line 2", build_format2_sha_prevs, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 2, -1, "prev is not the leaf hash of line 1"},
	{"format 1 with leaf hash prevs: line 2", build_format1_leaf_prevs, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 2, -1, "prev is not the SHA-256 of line 1"},
	{"format 3: line 1", build_format3, NULL, NULL, NULL, 0, VERIFY_INVALID, 1, -1,
	 "format 3 (this verifier reads formats 1 to 2)"},
	{"intact log with its exported checkpoints: exit 0", build_basic, NULL, build_basic, NULL,
	 0, VERIFY_OK, 0, -1, NULL},
	{"a byte edited in line 9: line 10's prev", build_basic, m_edit_byte, NULL, NULL, 0,
	 VERIFY_INVALID, 10, -1, "prev is not the leaf hash of line 9"},
	{"a byte edited, chain rebuilt: checkpoint line 13", build_basic, m_edit_rechain, NULL,
	 NULL, 0, VERIFY_INVALID, 13, -1, "root is not the root of lines 1..12"},
	{"line 9 deleted", build_basic, m_delete, NULL, NULL, 0, VERIFY_INVALID, 9, -1,
	 "seq 9, expected 8"},
	{"lines 9 and 10 swapped", build_basic, m_swap, NULL, NULL, 0, VERIFY_INVALID, 9, -1,
	 "seq 9, expected 8"},
	{"line 9 repeated after itself", build_basic, m_insert, NULL, NULL, 0, VERIFY_INVALID, 10,
	 -1, "seq 8, expected 9"},
	{"a record repeated, renumbered and rechained: line 10", build_basic, m_insert_rechain,
	 NULL, NULL, 0, VERIFY_INVALID, 10, -1, "kseq 6 repeats"},
	{"a line forged, renumbered and rechained: checkpoint line 14", build_basic,
	 m_forge_rechain, NULL, NULL, 0, VERIFY_INVALID, 14, -1,
	 "size 12 is not the line's seq 13"},
	{"tail cut after line 12: unsealed, 5 lines", build_basic, m_keep_12, NULL, NULL, 0,
	 VERIFY_UNSEALED, 0, 5, NULL},
	{"tail cut after checkpoint line 13: unsealed, 0 lines", build_basic, m_keep_13, NULL, NULL,
	 0, VERIFY_UNSEALED, 0, 0, NULL},
	{"final seal cut (run_end kept): unsealed, 4 lines", build_basic, m_keep_17, NULL, NULL, 0,
	 VERIFY_UNSEALED, 0, 4, NULL},
	{"tail cut inside line 16: unsealed, 3 lines", build_basic, m_cut_mid_line, NULL, NULL, 0,
	 VERIFY_UNSEALED, 0, 3, NULL},
	{"seal without its newline: unsealed, 5 lines", build_basic, m_no_final_newline, NULL, NULL,
	 0, VERIFY_UNSEALED, 0, 5, NULL},
	{"cut to 10 lines, below exported checkpoints: line 11", build_basic, m_keep_10,
	 build_basic, NULL, 0, VERIFY_INVALID, 11, -1,
	 "log truncated below an exported checkpoint of size 18"},
	{"seal cut, below the note covering it: line 18", build_basic, m_keep_17, build_basic, NULL,
	 0, VERIFY_INVALID, 18, -1, "log truncated below an exported checkpoint of size 18"},
	{"seal cut, the copies without the seal's own note: line 18", build_basic, m_keep_17,
	 build_basic, cps_drop_1, 0, VERIFY_INVALID, 18, -1,
	 "log truncated: the exported checkpoint at"},
	{"run_end cut, below the exported seal: line 17", build_basic, m_keep_16, build_basic, NULL,
	 0, VERIFY_INVALID, 17, -1, "log truncated below an exported checkpoint of size 18"},
	{"cut before checkpoint line 13, whose note is the copies' last: line 13", build_basic,
	 m_keep_12, build_basic, cps_keep_2, 0, VERIFY_INVALID, 13, -1,
	 "has size 12, the note of a checkpoint line of seq 12 that the log lacks"},
	{"seal replaced by a forged record, full copies: line 18", build_basic, m_forge_seal,
	 build_basic, NULL, 0, VERIFY_INVALID, 18, -1,
	 "not a checkpoint, but the exported checkpoint at"},
	{"seal replaced by a forged record, copies ending at the seal's size: line 18", build_basic,
	 m_forge_seal, build_basic, cps_drop_1, 0, VERIFY_INVALID, 18, -1,
	 "has size 17 (the writer exports the notes of its checkpoint lines"},
	{"the copies lack the note covering the seal: unsealed, the seal line", build_basic, NULL,
	 build_basic, cps_drop_1, 0, VERIFY_UNSEALED, 0, 1, NULL},
	{"seal dropped, the checkpoint before it made \"final\": exit 0 without copies",
	 build_cp_before_seal, m_promote_seal, NULL, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"seal dropped, the checkpoint before it made \"final\", full copies: line 18",
	 build_cp_before_seal, m_promote_seal, build_cp_before_seal, NULL, 0, VERIFY_INVALID, 18,
	 -1, "lines 1..18 are not the ones the exported checkpoint"},
	{"seal dropped, the checkpoint before it made \"final\", copies up to it: unsealed",
	 build_cp_before_seal, m_promote_seal, build_cp_before_seal, cps_drop_2, 0, VERIFY_UNSEALED,
	 0, 1, NULL},
	{"an exported note of size 0: line 1", build_basic, NULL, build_basic, cps_size_0, 0,
	 VERIFY_INVALID, 1, -1, "has size 0"},
	{"checkpoint signature altered: line 7", build_basic, m_replace_sig, NULL, NULL, 0,
	 VERIFY_INVALID, 7, -1, "signature by that key that does not verify"},
	{"checkpoint signed by another key of the run's name: line 7", build_basic, m_sig_other_key,
	 NULL, NULL, 0, VERIFY_INVALID, 7, -1, "has no signature by that key"},
	{"checkpoint root field altered: line 7", build_basic, m_checkpoint_root, NULL, NULL, 0,
	 VERIFY_INVALID, 7, -1, "root is not"},
	{"run B's log with run A's exported checkpoints: line 1", build_run_b, NULL, build_basic,
	 NULL, 0, VERIFY_INVALID, 1, -1, "differs from the origin \"sluice/run-a\""},
	{"run A's id, another run key, A's checkpoints: line 1", build_run_a2, NULL, build_basic,
	 NULL, 0, VERIFY_INVALID, 1, -1, "not signed by the run key"},
	{"run B's log alone: intact (nothing to compare with)", build_run_b, NULL, NULL, NULL, 0,
	 VERIFY_OK, 0, -1, NULL},
	{"cert signed by another host key: line 1", build_other_host, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 1, -1, "not signed by the host key"},
	{"log_start names a key the cert does not: line 1", build_basic, m_cert_key, NULL, NULL, 0,
	 VERIFY_INVALID, 1, -1, "does not name this origin and run key"},
	{"same run key, other lines than exported: line 6", build_fork, NULL, build_basic, NULL, 0,
	 VERIFY_INVALID, 6, -1, "lines 1..6 are not the ones"},
	{"space after {\"seq\": in line 9", build_basic, m_space, NULL, NULL, 0, VERIFY_INVALID, 9,
	 -1, "not canonical at column 8: whitespace"},
	{"CRLF ending on line 5", build_basic, m_crlf, NULL, NULL, 0, VERIFY_INVALID, 5, -1,
	 "whitespace after the object"},
	{"escaped UTF-8 in line 3", build_basic, m_escape, NULL, NULL, 0, VERIFY_INVALID, 3, -1,
	 "must be raw"},
	{"a record after the final seal: line 19", build_basic, m_after_final, NULL, NULL, 0,
	 VERIFY_INVALID, 19, -1, "after the final seal"},
	{"first line not log_start: line 1", build_basic, m_not_log_start, NULL, NULL, 0,
	 VERIFY_INVALID, 1, -1, "not a log_start"},
	{"empty log: line 1", build_basic, m_empty, NULL, NULL, 0, VERIFY_INVALID, 1, -1, "empty"},
	{"loss declared and signed: exit 3", build_loss, NULL, NULL, NULL, 0, VERIFY_LOSS, 0, -1,
	 NULL},
	{"loss record deleted, chain rebuilt: line 7", build_loss, m_hide_loss, NULL, NULL, 0,
	 VERIFY_INVALID, 7, -1, "size 7 is not the line's seq 6"},
	{"kseq gap not declared: run_end line 5", build_gap, NULL, NULL, NULL, 0, VERIFY_INVALID, 5,
	 -1, "1 kernel records missing from the log (first kseq 2), only 0 declared"},
	{"more loss declared than missing: run_end line 6", build_overdeclared, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 6, -1, "2 kernel records declared lost, but 1"},
	{"a kseq gap counted in run_end.unlogged (log: [deny]): exit 0", build_unlogged, NULL, NULL,
	 NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"P25: records the log could not hold, declared (hook log): exit 3", build_log_loss, NULL,
	 NULL, NULL, 0, VERIFY_LOSS, 0, -1, NULL},
	{"P25: only lines that are not records unwritten (hook log, count 0): exit 3, not 0",
	 build_log_loss_no_records, NULL, NULL, NULL, 0, VERIFY_LOSS, 0, -1, NULL},
	{"P25: a loss of hook log with fewer lines than records: line 7", build_log_loss_few_lines,
	 NULL, NULL, NULL, 0, VERIFY_INVALID, 7, -1, "records of hook log not written, but only"},
	{"run_end.unlogged above the gap: run_end line 5", build_overunlogged, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 5, -1, "2 kernel records declared lost or not logged, but 1"},
	{"a kseq twice: line 4", build_dup, NULL, NULL, NULL, 0, VERIFY_INVALID, 4, -1,
	 "kseq 1 repeats"},
	{"a kseq twice above a gap: line 4", build_dup2, NULL, NULL, NULL, 0, VERIFY_INVALID, 4, -1,
	 "kseq 2 appears twice"},
	{"kseqs out of order, none missing: exit 0", build_out_of_order, NULL, NULL, NULL, 0,
	 VERIFY_OK, 0, -1, NULL},
	{"run_end kseq_next below a recorded kseq: line 5", build_next_low, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 5, -1, "kseq_next 2 but kseq 2 was recorded"},
	{"loss_ranges listing exactly the missing kseqs: exit 3", build_lr_ok, NULL, NULL, NULL, 0,
	 VERIFY_LOSS, 0, -1, NULL},
	{"no loss_ranges record (optional): exit 3", build_lr_none, NULL, NULL, NULL, 0,
	 VERIFY_LOSS, 0, -1, NULL},
	{"loss_ranges listing the first 2 of 3 ranges, truncated: exit 3", build_lr_first2, NULL,
	 NULL, NULL, 0, VERIFY_LOSS, 0, -1, NULL},
	{"loss_ranges omitting a range (truncated): line 9", build_lr_omit, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "range 2 is 8..9, but the log's missing range 2 is 4..5"},
	{"loss_ranges omitting a range and its count: line 9", build_lr_omit_count, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 9, -1, "says 3 kseq values are missing, but 5"},
	{"loss_ranges adding a range: line 9", build_lr_add, NULL, NULL, NULL, 0, VERIFY_INVALID,
	 9, -1, "says 6 kseq values are missing, but 5"},
	{"loss_ranges with a range moved: line 9", build_lr_shift, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "range 3 is 7..8, but the log's missing range 3 is 8..9"},
	{"loss_ranges whose ranges do not add up to its count: line 9", build_lr_sum, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 9, -1, "counts 5 missing values, but its ranges (not truncated) "
	 "hold 3"},
	{"loss_ranges truncated, yet holding all: line 9", build_lr_trunc_all, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "truncated, but its ranges hold all 5"},
	{"loss_ranges with ranges touching: line 9", build_lr_adjacent, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "range 2 (3..3) does not start past"},
	{"loss_ranges with a reversed range: line 9", build_lr_reversed, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "range 2 (5..4) is reversed"},
	{"loss_ranges with an odd number of values: line 9", build_lr_odd, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "odd number of values"},
	{"loss_ranges with a string in ranges: line 9", build_lr_string, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "not a non-negative integer"},
	{"loss_ranges without truncated: line 9", build_lr_no_trunc, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "truncated is not true or false"},
	{"loss_ranges listing 257 ranges: line 9", build_lr_257, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 9, -1, "lists more than 256 ranges"},
	{"a second loss_ranges: line 10", build_lr_twice, NULL, NULL, NULL, 0, VERIFY_INVALID, 10,
	 -1, "a second loss_ranges record (the first is line 9)"},
	{"loss_ranges after run_end: line 10", build_lr_after_end, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 10, -1, "loss_ranges after run_end (line 9)"},
	{"loss records' kseq_below rising to kseq_next: exit 3", build_below_ok, NULL, NULL, NULL,
	 0, VERIFY_LOSS, 0, -1, NULL},
	{"a loss record's kseq_below going down: line 8", build_below_down, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 8, -1, "kseq_below 5 is below the 6 of the loss record at line 4"},
	{"kseq_below below the records declared: line 4", build_below_few, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 4, -1, "2 records declared lost so far cannot all have a kseq below "
	 "kseq_below 1"},
	{"kseq_below past run_end's kseq_next: run_end line 10", build_below_past_end, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 10, -1, "kseq_next 8 is below the kseq_below 9 of the loss "
	 "record at line 8"},
	{"checkpoints 2T+1 s apart: exit 0", build_heartbeat_21s, NULL, NULL, NULL, 0, VERIFY_OK, 0,
	 -1, NULL},
	{"heartbeat gap over 2T+1 s: line 5", build_heartbeat_gap, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 5, -1, "heartbeat gap: 21.000001 s"},
	{"killed writer: unsealed, 4 lines", build_killed, NULL, NULL, NULL, 0, VERIFY_UNSEALED, 0,
	 4, NULL},
	{"killed after a loss: unsealed (2) wins over loss (3)", build_killed_loss, NULL, NULL,
	 NULL, 0, VERIFY_UNSEALED, 0, 1, NULL},
	{"rotated segments verify across the boundaries", build_rotated, NULL, build_rotated, NULL,
	 SEGMENTS, VERIFY_OK, 0, -1, NULL},
	{"a plain segment LOG.000001 (compression not done) reads the same", build_rotated, NULL,
	 build_rotated, NULL, SEGMENTS | PLAIN_SEG1, VERIFY_OK, 0, -1, NULL},
	{"middle segment deleted: line 8 (LOG line 1)", build_rotated, NULL, NULL, NULL,
	 SEGMENTS | DROP_SEG2, VERIFY_INVALID, 8, -1, "seq 13, expected 7"},
	{"first segment's gzip cut short", build_rotated, NULL, NULL, NULL, SEGMENTS | TRUNC_SEG1,
	 VERIFY_INVALID, 7, -1, "cannot read the rest of the file"},
	{"segment not ending with a rotate checkpoint: line 5", build_rotated, NULL, NULL, NULL,
	 SPLIT_AT_5, VERIFY_INVALID, 5, -1, "does not end with a rotate checkpoint"},
	{"two rotate checkpoints inside one file, one writer: the second, line 13", build_rotated,
	 NULL, NULL, NULL, 0, VERIFY_INVALID, 13, -1,
	 "the rotate checkpoint at line 7 is not the last line of its file"},
	{"a rotate checkpoint inside its file (the rename failed): exit 0", build_rotate_stopped,
	 NULL, NULL, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"rotation stopped, the writer restarted, the new writer rotates: exit 0",
	 build_rotate_restart, NULL, NULL, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"segment 1 in both forms, the same bytes: exit 0", build_rotated, NULL, build_rotated,
	 NULL, SEGMENTS | BOTH_SEG1, VERIFY_OK, 0, -1, NULL},
	{"segment 1 in both forms, the .gz cut short: line 7", build_rotated, NULL, NULL, NULL,
	 SEGMENTS | BOTH_SEG1 | TRUNC_SEG1, VERIFY_INVALID, 7, -1, "a corrupt gzip copy of"},
	{"segment 1 in both forms, the .gz's line 3 differs: line 3", build_rotated, NULL, NULL,
	 NULL, SEGMENTS | BOTH_SEG1 | EDIT_GZ_SEG1, VERIFY_INVALID, 3, -1,
	 "of which it is the gzip copy"},
	{"segment 1 .gz holding plain text: line 1", build_rotated, NULL, NULL, NULL,
	 SEGMENTS | GZ_IS_PLAIN, VERIFY_INVALID, 1, -1, "not in gzip format"},
	{"stray .gz.tmp files are never read: exit 0", build_rotated, NULL, NULL, NULL,
	 SEGMENTS | TMP_FILES, VERIFY_OK, 0, -1, NULL},
	{"segments without LOG: unsealed, 0 lines", build_rotated, m_keep_13, NULL, NULL,
	 SEGMENTS | NO_LOG, VERIFY_UNSEALED, 0, 0, NULL},
	{"segments without LOG, below the exported checkpoints: line 14", build_rotated, m_keep_13,
	 build_rotated, NULL, SEGMENTS | NO_LOG, VERIFY_INVALID, 14, -1,
	 "log truncated below an exported checkpoint of size 18"},
	{"a loss record not followed by its checkpoint: line 4", build_loss_no_cp, NULL, NULL, NULL,
	 0, VERIFY_INVALID, 4, -1,
	 "the loss record at line 3 is not followed at once by a checkpoint"},
	{"an anomaly followed by a \"lines\" checkpoint: line 4", build_anomaly_lines_cp, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 4, -1,
	 "reason \"lines\", but it follows the anomaly record at line 3"},
	{"an anomaly followed by its checkpoint: exit 0", build_anomaly, NULL, NULL, NULL, 0,
	 VERIFY_OK, 0, -1, NULL},
	{"a killed writer after a loss record, before its checkpoint: unsealed", build_loss_no_cp,
	 m_keep_3, NULL, NULL, 0, VERIFY_UNSEALED, 0, 3, NULL},
	{"log_start naming another host key, cert by the one given: line 1", build_host_key_field,
	 NULL, NULL, NULL, 0, VERIFY_INVALID, 1, -1, "is not the host key given"},
	{"a checkpoint note for another origin: line 7, both quoted", build_basic, m_note_origin,
	 NULL, NULL, 0, VERIFY_INVALID, 7, -1,
	 "the note is for origin \"sluice/run-b\", not \"sluice/run-a\""},
	{"exported checkpoints with trailing garbage", build_basic, NULL, build_basic, cps_garbage,
	 0, VERIFY_INVALID, 0, -1, "file ends inside a note"},
	{"exported checkpoint altered: line 1", build_basic, NULL, build_basic, cps_bad_sig, 0,
	 VERIFY_INVALID, 1, -1, "signature does not verify"},
	{"the writer's failure notice in the exported stream is read", build_basic, NULL,
	 build_basic, cps_notice, 0, VERIFY_OK, 0, -1, NULL},
	{"the writer's failure notice without its blank line", build_basic, NULL, build_basic,
	 cps_notice_cut, 0, VERIFY_INVALID, 0, -1, "inside the writer's failure notice"},
	{"exported checkpoints without the last blank line", build_basic, NULL, build_basic,
	 cps_no_blank, 0, VERIFY_INVALID, 0, -1, "no blank line after the signatures"},
	/* line length: at most 8191 bytes, 8192 with the "\n" */
	{"a line of 8191 bytes (8192 with its newline): exit 0", build_line_max, NULL, NULL, NULL,
	 0, VERIFY_OK, 0, -1, NULL},
	{"a line of 8192 bytes (8193 with its newline): line 9", build_line_max, m_line_8192, NULL,
	 NULL, 0, VERIFY_INVALID, 9, -1, "line longer than 8191 bytes"},
	/* what stands between run_end and the seal: checkpoints of these reasons */
	{"run_end, then lines, time, heartbeat and rotate checkpoints, the seal: exit 0",
	 build_end_cps, NULL, NULL, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"a record after run_end: line 8", build_end_record, NULL, NULL, NULL, 0, VERIFY_INVALID, 8,
	 -1, "a \"decision\" record after run_end (line 7)"},
	{"a loss record after run_end: line 8", build_end_loss, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 8, -1, "a \"loss\" record after run_end (line 7)"},
	{"an anomaly checkpoint after run_end: line 8", build_end_anomaly_cp, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 8, -1, "reason \"anomaly\" after run_end (line 7)"},
	/* run_end.lost is the sum of the loss records' counts */
	{"run_end.lost 2, loss records 3: run_end line 11", build_lost_short, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 11, -1, "run_end: lost 2 differs from the sum 3"},
	{"... the seal cut off: still run_end line 11, not unsealed", build_lost_short, m_drop_seal,
	 NULL, NULL, 0, VERIFY_INVALID, 11, -1, "run_end: lost 2 differs from the sum 3"},
	{"run_end.lost 1, no loss record: run_end line 7", build_lost_undeclared, NULL, NULL, NULL,
	 0, VERIFY_INVALID, 7, -1, "run_end: lost 1 differs from the sum 0"},
	{"run_end without lost: line 7", build_lost_absent, NULL, NULL, NULL, 0, VERIFY_INVALID, 7,
	 -1, "run_end: lost is not a non-negative integer"},
	/* the log's notes carry the writer's one signature; copies may gather cosignatures */
	{"the seal's note with a witness's signature line too: line 18", build_seal_cosigned, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 18, -1, "carries a signature line besides that key's"},
	{"a checkpoint's note with a witness's signature line too: line 7", build_cp_cosigned, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 7, -1, "carries a signature line besides that key's"},
	{"log_start's certificate with a witness's signature line too: line 1",
	 build_cert_cosigned, NULL, NULL, NULL, 0, VERIFY_INVALID, 1, -1,
	 "carries a signature line besides that key's"},
	{"exported copies cosigned by a witness (C2SP cosignatures): exit 0", build_basic, NULL,
	 build_copies_cosigned, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"an exported copy signed by the witness instead of the run key: line 1", build_basic, NULL,
	 build_copies_witness_only, NULL, 0, VERIFY_INVALID, 1, -1,
	 "is not signed by the run key of this log (no signature by it"},
	{"an exported copy whose run-key line another key of that name signed: line 1",
	 build_basic, NULL, build_basic, cps_witness_as_run, 0, VERIFY_INVALID, 1, -1,
	 "is not signed by the run key of this log (no signature by it"},
	/* a live run's switches of policy and mode (sluice set-mode, replace-policy) */
	{"two policy_change lines, each after the policy in force: exit 0", build_pc_ok, NULL,
	 NULL, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"policy_change with mode \"audit\": line 8", build_pc_mode, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 8, -1, "policy_change: mode is neither"},
	{"policy_change with a policy_sha256 that is no digest: line 8", build_pc_sha, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 8, -1, "policy_change: policy_sha256 is not 64 lower-case hex"},
	{"policy_change whose prev_policy_sha256 is not the policy in force: line 15",
	 build_pc_prev_sha, NULL, NULL, NULL, 0, VERIFY_INVALID, 15, -1,
	 "is not the policy of the policy_change at line 8"},
	{"policy_change whose prev_mode is not the mode in force: line 15", build_pc_prev_mode,
	 NULL, NULL, NULL, 0, VERIFY_INVALID, 15, -1,
	 "prev_mode enforce is not the mode of the policy_change at line 8 (report)"},
	/* a switch announced before its commit, closed by its change or its abort */
	{"a switch closed by its policy_change, one by a taker's abort: exit 0", build_sw_ok, NULL,
	 NULL, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"policy_switch_begin naming a digest its policy_change does not: line 10", build_sw_sha,
	 NULL, NULL, NULL, 0, VERIFY_INVALID, 10, -1,
	 "is not the policy the switch announced at line 8 named (4444"},
	{"policy_switch_begin reusing a generation: line 13", build_sw_era_again, NULL, NULL, NULL,
	 0, VERIFY_INVALID, 13, -1, "era 2 is not above every generation named before (2)"},
	{"a taker's record before it closes the open switch: line 16", build_sw_not_first, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 16, -1,
	 "the switch announced at line 13 is still open after the writer_restart at line 14"},
	{"policy_switch_abort naming another generation: line 16", build_sw_abort_era, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 16, -1, "policy_switch_abort: era 4 is not the generation"},
	{"run_end while a switch is open: its line", build_sw_open_end, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 16, -1, "run_end: the switch announced at line 13 was never closed"},
	{"policy_change naming another generation than its begin: line 10", build_sw_change_era,
	 NULL, NULL, NULL, 0, VERIFY_INVALID, 10, -1,
	 "policy_change: era 3 is not the generation the switch announced at line 8 named (2)"},
	{"policy_switch_begin whose prev_era is not the generation in force: line 13",
	 build_sw_prev_era, NULL, NULL, NULL, 0, VERIFY_INVALID, 13, -1,
	 "prev_era 1 is not the generation in force (2, the policy_change's at line 10)"},
	{"policy_switch_begin whose prev_era is not run_start's generation: line 9",
	 build_sw_prev_era_start, NULL, NULL, NULL, 0, VERIFY_INVALID, 9, -1,
	 "prev_era 0 is not the generation in force (1, run_start's)"},
	/* writer restarts */
	{"restarted log (writer_restart, restart checkpoint 30 s on): exit 0", build_rs_ok, NULL,
	 NULL, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"restarted log with its exported checkpoints, the new key's included: exit 0", build_rs_ok,
	 NULL, build_rs_ok, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"restarted after a torn line (a checkpoint cut in half): exit 0", build_rs_torn, NULL,
	 build_rs_torn, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"two restarts, two fresh keys: exit 0", build_rs_two, NULL, build_rs_two, NULL, 0,
	 VERIFY_OK, 0, -1, NULL},
	{"two restarts, the first after a torn line: exit 0", build_rs_two_torn, NULL, NULL, NULL,
	 0, VERIFY_OK, 0, -1, NULL},
	{"a restarted writer that died before its restart checkpoint, restarted again: exit 0",
	 build_rs_died, NULL, build_rs_died, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"... that died writing its restart checkpoint (torn), restarted again: exit 0",
	 build_rs_died_torn, NULL, build_rs_died_torn, NULL, 0, VERIFY_OK, 0, -1, NULL},
	{"run_end after a restart without restart_gap: run_end line 15", build_rs_no_gap, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 15, -1,
	 "no restart_gap after the writer_restart at line 10"},
	{"a torn line where run_start belongs: line 2, not canonical", build_torn_run_start, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 2, -1, "not canonical at column"},
	{"restarted across a rotation (the dead writer's checkpoint rotated): exit 0",
	 build_rs_rotated, NULL, build_rs_rotated, NULL, SEGMENTS, VERIFY_OK, 0, -1, NULL},
	{"a record the dead writer took and never wrote, as run_end.restart_gap: exit 3",
	 build_rs_gap, NULL, NULL, NULL, 0, VERIFY_LOSS, 0, -1, NULL},
	{"a torn record, its kseq as run_end.restart_gap: exit 3", build_rs_torn_rec, NULL, NULL,
	 NULL, 0, VERIFY_LOSS, 0, -1, NULL},
	{"restart_gap over kseqs the window reported missing before the restart: exit 3",
	 build_rs_window, NULL, NULL, NULL, 0, VERIFY_LOSS, 0, -1, NULL},
	{"restart_gap on a kseq at or above the restart's kseq_below: run_end line 15",
	 build_rs_gap_above, NULL, NULL, NULL, 0, VERIFY_INVALID, 15, -1,
	 "restart_gap 1, but only 0 kseq values below the kseq_below 7 of the last "
	 "writer_restart (line 10)"},
	{"restart_gap above the kseqs missing: run_end line 15", build_rs_gap_more, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 15, -1,
	 "2 kernel records declared lost or unaccounted across a writer restart, but 1"},
	{"restart_gap without a writer_restart: run_end line 17", build_gap_no_restart, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 17, -1, "restart_gap without a writer_restart record"},
	{"writer_restart reusing log_start's key: line 10", build_rs_reuse_a, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 10, -1, "is that of the run key of line 1 (a restart never reuses"},
	{"a second writer_restart reusing the first's key: line 17", build_rs_reuse_r1, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 17, -1, "is that of the run key of line 10"},
	{"writer_restart's cert by another host key: line 10", build_rs_cert_host, NULL, NULL, NULL,
	 0, VERIFY_INVALID, 10, -1, "certificate is not signed by the host key"},
	{"writer_restart's cert naming another key: line 10", build_rs_cert_key, NULL, NULL, NULL,
	 0, VERIFY_INVALID, 10, -1,
	 "writer_restart: the certificate does not name this origin and run key"},
	{"writer_restart for another origin: line 10", build_rs_origin, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 10, -1, "origin \"sluice/run-b\" is not log_start's \"sluice/run-a\""},
	{"writer_restart with a wrong unsealed: line 10", build_rs_unsealed, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 10, -1,
	 "unsealed 3, but 2 lines before it follow the last checkpoint (line 7)"},
	{"writer_restart with a torn length that is not the torn line's: line 11",
	 build_rs_torn_wrong, NULL, NULL, NULL, 0, VERIFY_INVALID, 11, -1,
	 "but the torn line before it (line 10) has"},
	{"writer_restart with torn 40 after a whole line: line 10", build_rs_torn_none, NULL, NULL,
	 NULL, 0, VERIFY_INVALID, 10, -1,
	 "torn 40, but line 9 before it is a whole line, not a torn one"},
	{"a torn line, the writer_restart after it saying torn 0: line 10, its parse error",
	 build_rs_torn_zero, NULL, NULL, NULL, 0, VERIFY_INVALID, 10, -1,
	 "not canonical at column"},
	{"a line that is not canonical, a record after it: line 10, its parse error",
	 build_rs_torn_alone, NULL, NULL, NULL, 0, VERIFY_INVALID, 10, -1,
	 "not canonical at column"},
	{"a line that is not canonical at the end of the log: line 10, its parse error",
	 build_killed_garbage, NULL, NULL, NULL, 0, VERIFY_INVALID, 10, -1,
	 "not canonical at column 18"},
	{"writer_restart not followed by its checkpoint: line 11", build_rs_no_cp, NULL, NULL, NULL,
	 0, VERIFY_INVALID, 11, -1,
	 "the writer_restart record at line 10 is not followed at once by a checkpoint "
	 "(reason \"restart\")"},
	{"writer_restart followed by a \"lines\" checkpoint: line 11", build_rs_cp_reason, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 11, -1,
	 "reason \"lines\", but it follows the writer_restart record at line 10"},
	{"a \"restart\" checkpoint without a writer_restart: line 7", build_restart_cp_alone, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 7, -1,
	 "reason \"restart\", but the line before it is not a writer_restart"},
	{"the restart checkpoint signed by the old key: line 11", build_rs_cp_old, NULL, NULL, NULL,
	 0, VERIFY_INVALID, 11, -1,
	 "signed by the run key of log_start, which signs nothing after the writer_restart at "
	 "line 10"},
	{"a checkpoint after the restart signed by the old key: line 14", build_rs_next_old, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 14, -1,
	 "signed by the run key of log_start, which signs nothing after the writer_restart at "
	 "line 10"},
	{"a checkpoint after the restart signed by a key of no writer_restart: line 14",
	 build_rs_next_stranger, NULL, NULL, NULL, 0, VERIFY_INVALID, 14, -1,
	 "has no signature by that key of the run key \"sluice/run-a\""},
	{"writer_restart's kseq_below below a kseq before it: line 10", build_rs_below_low, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 10, -1, "kseq_below 5, but kseq 6 was recorded before it"},
	{"writer_restart after run_end: line 11", build_rs_after_end, NULL, NULL, NULL, 0,
	 VERIFY_INVALID, 11, -1, "writer_restart after run_end (line 10)"},
	{"the resumed writer's run_end with an exit status: line 15", build_rs_exit_zero, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 15, -1, "exit_status after a writer_restart (line 10)"},
	{"the dead writer's loss line followed at once by writer_restart: exit 3", build_rs_loss,
	 NULL, NULL, NULL, 0, VERIFY_LOSS, 0, -1, NULL},
	{"the dead writer's loss line, its checkpoint torn, writer_restart: exit 3",
	 build_rs_loss_torn, NULL, NULL, NULL, 0, VERIFY_LOSS, 0, -1, NULL},
	{"the checkpoint after the restart one, 21.000003 s on: line 14", build_rs_next_gap, NULL,
	 NULL, NULL, 0, VERIFY_INVALID, 14, -1,
	 "heartbeat gap: 21.000003 s since the previous checkpoint (line 11)"},
	{"the restart checkpoint exported signed by a key of no writer_restart: line 10",
	 build_rs_ok, NULL, build_rs_export_stranger, NULL, 0, VERIFY_INVALID, 10, -1,
	 "is not signed by the run key of this log (no signature by it; another run's log?)"},
	{"the restart checkpoint exported signed by the old key: line 10", build_rs_ok, NULL,
	 build_rs_export_old, NULL, 0, VERIFY_INVALID, 10, -1,
	 "(size 10) is signed by log_start's run key, which signs nothing after the "
	 "writer_restart at line 10"},
	{"the dead writer's checkpoint exported signed by another key: line 1", build_rs_ok, NULL,
	 build_rs_export_dead, NULL, 0, VERIFY_INVALID, 1, -1,
	 "is not signed by the run key of this log (no signature by it; another run's log?)"},
	{"the dead writer's checkpoint exported signed by the later key: line 1", build_rs_ok, NULL,
	 build_rs_export_early, NULL, 0, VERIFY_INVALID, 1, -1,
	 "is not signed by the run key of this log"},
	{"a restarted log cut after its writer_restart: unsealed, 3 lines", build_rs_ok, m_keep_10,
	 NULL, NULL, 0, VERIFY_UNSEALED, 0, 3, NULL},
	{"a restarted log cut after its restart checkpoint: unsealed, 0 lines", build_rs_ok,
	 m_keep_11, NULL, NULL, 0, VERIFY_UNSEALED, 0, 0, NULL},
	{"the restarted log cut below its exported restart checkpoint: line 11", build_rs_ok,
	 m_keep_10, build_rs_ok, NULL, 0, VERIFY_INVALID, 11, -1,
	 "log truncated below an exported checkpoint"},
};

static int write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		return -1;
	return 0;
}

/* Write lines [from, to) to path, gzip-compressed or plain. */
static int write_lines(const char *path, const struct log *l, size_t from, size_t to, bool gz)
{
	gzFile z = NULL;
	FILE *f = NULL;

	if (gz)
		z = gzopen(path, "wb");
	else
		f = fopen(path, "w");
	if (!z && !f)
		return -1;
	for (size_t i = from; i < to; i++) {
		bool nl = !(i == l->n - 1 && l->no_last_newline);

		if (z) {
			gzputs(z, l->l[i]);
			if (nl)
				gzputc(z, '\n');
		} else {
			fputs(l->l[i], f);
			if (nl)
				fputc('\n', f);
		}
	}
	return z ? (gzclose(z) == Z_OK ? 0 : -1) : fclose(f);
}

static int cut_file(const char *path, long drop)
{
	FILE *f = fopen(path, "r+");
	long size;

	if (!f || fseek(f, 0, SEEK_END))
		return -1;
	size = ftell(f);
	fclose(f);
	return truncate(path, size - drop);
}

static bool run_verify_case(const struct verify_case *c, char *why)
{
	static struct verify_result r;
	struct log l = {0}, cl = {0};
	char log[128], cps[128], seg[160];
	const char *cp_list[1];
	struct verify_opts o = {0};
	size_t from = 0, k = 1;

	g.file_n++;
	snprintf(log, sizeof(log), "%s/case%d.jsonl", g.dir, g.file_n);
	snprintf(cps, sizeof(cps), "%s/case%d.checkpoints", g.dir, g.file_n);
	c->build(&l);
	if (c->mutate)
		c->mutate(&l);
	if (c->flags & (SEGMENTS | SPLIT_AT_5)) {
		for (size_t i = 0; i < l.n; i++) {
			bool end = (c->flags & SPLIT_AT_5)
					   ? i == 4
					   : strstr(l.l[i], "\"reason\":\"rotate\"") != NULL;

			if (!end)
				continue;
			if (k > 1 || !(c->flags & PLAIN_SEG1)) {
				bool plain = k == 1 && c->flags & GZ_IS_PLAIN;
				char *saved = l.l[2];

				verify_segment_path(log, (unsigned int)k, true, seg, sizeof(seg));
				if (k == 1 && c->flags & EDIT_GZ_SEG1) {
					l.l[2] = xstrdup(saved);
					l.l[2][strlen(l.l[2]) - 3] ^= 1;
				}
				EXPECT(!write_lines(seg, &l, from, i + 1, !plain),
				       "cannot write %s", seg);
				if (l.l[2] != saved) {
					free(l.l[2]);
					l.l[2] = saved;
				}
			}
			if (k == 1 && c->flags & (PLAIN_SEG1 | BOTH_SEG1)) {
				verify_segment_path(log, 1, false, seg, sizeof(seg));
				EXPECT(!write_lines(seg, &l, from, i + 1, false), "cannot write %s",
				       seg);
			}
			from = i + 1;
			k++;
		}
	}
	EXPECT(!write_lines(log, &l, from, l.n, false), "cannot write %s", log);
	if (c->flags & DROP_SEG2) {
		verify_segment_path(log, 2, true, seg, sizeof(seg));
		EXPECT(!unlink(seg), "cannot remove %s", seg);
	}
	if (c->flags & TRUNC_SEG1) {
		verify_segment_path(log, 1, true, seg, sizeof(seg));
		EXPECT(!cut_file(seg, 30), "cannot cut %s", seg);
	}
	if (c->flags & NO_LOG)
		EXPECT(!unlink(log), "cannot remove %s", log);
	if (c->flags & TMP_FILES) {
		for (unsigned int t = 1; t <= 3; t += 2) {
			snprintf(seg, sizeof(seg), "%s.%06u.gz.tmp", log, t);
			EXPECT(!write_file(seg, "garbage\n", 8), "cannot write %s", seg);
		}
	}
	o.log = log;
	o.host_vkey = g.host_vkey;
	if (c->cps_from) {
		c->cps_from(&cl);
		if (c->cps_mutate)
			c->cps_mutate(&cl);
		EXPECT(!write_file(cps, cl.cps, cl.cps_len), "cannot write %s", cps);
		cp_list[0] = cps;
		o.checkpoints = cp_list;
		o.n_checkpoints = 1;
	}
	verify_log(&o, &r);
	log_free(&l);
	log_free(&cl);
	EXPECT(r.status == c->status, "expected exit %d, got %d (line %" PRIu64 ", %s: %s)",
	       c->status, r.status, r.err_line, r.err_file, r.why);
	if (c->status == VERIFY_INVALID) {
		EXPECT(r.err_line == c->line,
		       "expected first bad line %" PRIu64 ", got %" PRIu64 " (%s line %" PRIu64
		       ": %s)",
		       c->line, r.err_line, r.err_file, r.err_file_line, r.why);
		EXPECT(!c->why || strstr(r.why, c->why),
		       "expected the reason to say \"%s\", got: %s", c->why, r.why);
		if (c->line)
			EXPECT(r.err_seq == c->line - 1, "expected seq %" PRIu64 ", got %" PRIu64,
			       c->line - 1, r.err_seq);
	} else {
		EXPECT(!r.why[0], "no error expected, got: %s", r.why);
	}
	if (c->unsealed >= 0)
		EXPECT(r.unsealed_lines == (uint64_t)c->unsealed,
		       "expected %" PRId64 " unsealed lines, got %" PRIu64, c->unsealed,
		       r.unsealed_lines);
	if (c->status != VERIFY_INVALID)
		EXPECT(r.sealed == (c->status != VERIFY_UNSEALED), "sealed is %d for exit %d",
		       r.sealed, c->status);
	return true;
}

/* Details the table does not check: counts, ranges and where in which file. */
static bool check_result_details(char *why)
{
	static struct verify_result r;
	const struct verify_case *seg = NULL, *loss = NULL;
	char want[160];

	for (size_t i = 0; i < ARRAY_SIZE(verify_cases); i++) {
		if (verify_cases[i].flags == (SEGMENTS | DROP_SEG2))
			seg = &verify_cases[i];
		if (verify_cases[i].build == build_loss && !verify_cases[i].mutate)
			loss = &verify_cases[i];
	}
	/* the deleted-segment case again: the bad line is LOG's first */
	if (!run_verify_case(seg, why))
		return false;
	{
		struct verify_opts o = {.host_vkey = g.host_vkey};
		char log[128];

		snprintf(log, sizeof(log), "%s/case%d.jsonl", g.dir, g.file_n);
		o.log = log;
		verify_log(&o, &r);
		EXPECT(!strcmp(r.err_file, log) && r.err_file_line == 1,
		       "expected %s line 1, got %s line %" PRIu64, log, r.err_file,
		       r.err_file_line);
		EXPECT(r.segments == 2, "expected 2 files read, got %u", r.segments);
	}
	if (!run_verify_case(loss, why))
		return false;
	{
		struct verify_opts o = {.host_vkey = g.host_vkey};
		char log[128];

		snprintf(log, sizeof(log), "%s/case%d.jsonl", g.dir, g.file_n);
		o.log = log;
		verify_log(&o, &r);
		EXPECT(r.declared_loss == 3 && r.missing_kseq == 3 && r.n_missing == 1 &&
			       r.missing[0].first == 5 && r.missing[0].last == 7,
		       "expected 3 declared, kseq 5-7 missing; got %" PRIu64 " declared, %" PRIu64
		       " missing",
		       r.declared_loss, r.missing_kseq);
		EXPECT(r.lines == 12 && r.checkpoints == 2 && r.last_checkpoint_size == 11,
		       "expected 12 lines, 2 checkpoints, last of size 11; got %" PRIu64
		       ", %" PRIu64 ", %" PRIu64,
		       r.lines, r.checkpoints, r.last_checkpoint_size);
		snprintf(want, sizeof(want), "sluice/run-a");
		EXPECT(!strcmp(r.origin, want), "origin %s", r.origin);
	}
	/* P25: the records the log could not hold are told apart from the kernel's losses */
	for (size_t i = 0; i < ARRAY_SIZE(verify_cases); i++)
		if (verify_cases[i].build == build_log_loss)
			loss = &verify_cases[i];
	if (!run_verify_case(loss, why))
		return false;
	{
		struct verify_opts o = {.host_vkey = g.host_vkey};
		char log[128];

		snprintf(log, sizeof(log), "%s/case%d.jsonl", g.dir, g.file_n);
		o.log = log;
		verify_log(&o, &r);
		EXPECT(r.declared_loss == 3 && r.unwritten == 3 && r.unwritten_lines == 4 &&
			       r.log_failures == 1,
		       "expected 3 declared, 3 unwritten, 4 lines, 1 failure; got %" PRIu64 ", %" PRIu64
		       ", %" PRIu64 ", %" PRIu64,
		       r.declared_loss, r.unwritten, r.unwritten_lines, r.log_failures);
	}
	return true;
}

/* The line of a loss_ranges record that matched is reported; none when there is none. */
static bool check_loss_ranges_line(char *why)
{
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey};
	void (*builds[])(struct log *) = {build_lr_ok, build_lr_none};
	uint64_t want[] = {9, 0};
	char log[128];

	for (size_t i = 0; i < ARRAY_SIZE(builds); i++) {
		struct log l = {0};

		g.file_n++;
		snprintf(log, sizeof(log), "%s/case%d.jsonl", g.dir, g.file_n);
		builds[i](&l);
		EXPECT(!write_lines(log, &l, 0, l.n, false), "cannot write %s", log);
		log_free(&l);
		o.log = log;
		verify_log(&o, &r);
		EXPECT(r.status == VERIFY_LOSS && r.loss_ranges_line == want[i] &&
			       r.missing_kseq == 5 && r.n_missing == 3 && r.missing[1].first == 4 &&
			       r.missing[1].last == 5,
		       "case %zu: expected exit 3, loss_ranges line %" PRIu64 ", 5 missing in 3 "
		       "ranges (the second 4..5); got exit %d, line %" PRIu64 ", %" PRIu64
		       " in %zu (%s)",
		       i, want[i], r.status, r.loss_ranges_line, r.missing_kseq, r.n_missing, r.why);
	}
	return true;
}

static bool check_errors_exit_4(char *why)
{
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey};
	const char *cp_list[] = {"/nonexistent/cps"};
	char log[128];

	snprintf(log, sizeof(log), "%s/missing.jsonl", g.dir);
	o.log = log;
	EXPECT(verify_log(&o, &r) == VERIFY_ERROR && strstr(r.why, "cannot open"),
	       "missing log: exit %d (%s)", r.status, r.why);
	snprintf(log, sizeof(log), "%s/case1.jsonl", g.dir);
	o.host_vkey = "not a key";
	EXPECT(verify_log(&o, &r) == VERIFY_ERROR, "bad host key: exit %d", r.status);
	o.host_vkey = g.host_vkey;
	o.checkpoints = cp_list;
	o.n_checkpoints = 1;
	EXPECT(verify_log(&o, &r) == VERIFY_ERROR && !strcmp(r.err_file, cp_list[0]),
	       "missing checkpoints file: exit %d (%s: %s)", r.status, r.err_file, r.why);
	return true;
}

/* Write l as dir/caseN.jsonl; its path in log. */
static bool write_case(struct log *l, char *log, size_t size, char *why)
{
	g.file_n++;
	snprintf(log, size, "%s/case%d.jsonl", g.dir, g.file_n);
	EXPECT(!write_lines(log, l, 0, l->n, false), "cannot write %s", log);
	return true;
}

/* --run-id / --origin: the run expected. Another run's complete log of the same host is refused. */
static bool check_run_pinned(char *why)
{
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey};
	struct log a = {0}, b = {0};
	char log_a[128], log_b[128];
	bool ok = write_case((build_basic(&a), &a), log_a, sizeof(log_a), why) &&
		  write_case((build_run_b(&b), &b), log_b, sizeof(log_b), why);

	log_free(&a);
	log_free(&b);
	if (!ok)
		return false;
	o.log = log_b;
	EXPECT(verify_log(&o, &r) == VERIFY_OK, "run B's log alone: exit %d (%s)", r.status, r.why);
	o.run_id = "run-a";
	EXPECT(verify_log(&o, &r) == VERIFY_INVALID && r.err_line == 1 &&
		       strstr(r.why, "this is the log of run \"run-b\", not \"run-a\""),
	       "run B's log with --run-id run-a: expected exit 1 at line 1, got exit %d at line "
	       "%" PRIu64 ": %s",
	       r.status, r.err_line, r.why);
	EXPECT(r.cert_verified, "the refused log's certificate did verify: cert_verified false");
	o.run_id = NULL;
	o.origin = "sluice/run-a";
	EXPECT(verify_log(&o, &r) == VERIFY_INVALID &&
		       strstr(r.why, "not of origin \"sluice/run-a\""),
	       "run B's log with origin sluice/run-a: exit %d: %s", r.status, r.why);
	o.log = log_a;
	EXPECT(verify_log(&o, &r) == VERIFY_OK, "run A's log, origin sluice/run-a: exit %d (%s)",
	       r.status, r.why);
	o.run_id = "run-a";
	EXPECT(verify_log(&o, &r) == VERIFY_OK, "run A's log, run id run-a too: exit %d (%s)",
	       r.status, r.why);
	return true;
}

/* cert_verified, the start time and the run key's hash; none of them when the cert failed. */
static bool check_run_identity(char *why)
{
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey};
	struct note_verifier run;
	char log[128], vkey[NOTE_VKEY_MAX + 1];
	struct log l = {0};
	bool ok;

	note_signer_vkey(g.run_a, vkey, sizeof(vkey));
	EXPECT(!note_verifier_parse(vkey, &run), "cannot parse run A's key");
	ok = write_case((build_basic(&l), &l), log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	o.log = log;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_OK && r.cert_verified && r.start_ts == 1700000000100000 &&
		       r.run_key_hash == run.hash && r.last_key_hash == run.hash,
	       "run A: expected exit 0, certified, ts 1700000000100000, key hash %08x (also the "
	       "last); got exit %d, %d, %" PRId64 ", %08x, %08x",
	       run.hash, r.status, r.cert_verified, r.start_ts, r.run_key_hash, r.last_key_hash);
	ok = write_case((build_other_host(&l), &l), log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_INVALID && !r.cert_verified && !r.start_ts && !r.run_key_hash,
	       "another host's cert: expected exit 1, not certified, no ts or hash; got exit %d, "
	       "%d, %" PRId64 ", %08x",
	       r.status, r.cert_verified, r.start_ts, r.run_key_hash);
	return true;
}

/* The restart counts: restarts, lines first signed at a restart, torn lines, gap, downtime. */
static bool check_restart_details(char *why)
{
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey};
	struct note_verifier first, last;
	char log[128], vkey[NOTE_VKEY_MAX + 1];
	struct log l = {0};
	bool ok;

	note_signer_vkey(g.run_a, vkey, sizeof(vkey));
	EXPECT(!note_verifier_parse(vkey, &first), "cannot parse run A's key");
	note_signer_vkey(g.run_r2, vkey, sizeof(vkey));
	EXPECT(!note_verifier_parse(vkey, &last), "cannot parse the second restart's key");
	/* 1 | 2-6 | 7 cp | 8-9 | 10 torn | 11 writer_restart | 12 restart cp | 13-14 | 15 cp |
	 * 16-17 | 18 writer_restart | 19 restart cp | 20 | 21 cp | 22 run_end | 23 final */
	ok = write_case((build_rs_two_torn(&l), &l), log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	o.log = log;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_OK && r.lines == 23 && r.restarts == 2 &&
		       r.restart_unsealed == 5 && r.restart_torn == 1 && r.restart_gap == 0 &&
		       r.first_restart_line == 11 && r.restart_downtime_us == 30400000 &&
		       r.run_key_hash == first.hash && r.last_key_hash == last.hash,
	       "two restarts, one torn line: expected exit 0, 23 lines, 2 restarts, 3+2 unsealed, "
	       "1 torn, no gap, first at line 11, downtime 30.4 s, key %08x then %08x; got exit "
	       "%d, %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64
	       ", %" PRIu64 " us, %08x then %08x (%s)",
	       first.hash, last.hash, r.status, r.lines, r.restarts, r.restart_unsealed,
	       r.restart_torn, r.restart_gap, r.first_restart_line, r.restart_downtime_us,
	       r.run_key_hash, r.last_key_hash, r.why);
	ok = write_case((build_rs_torn_rec(&l), &l), log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_LOSS && r.restart_gap == 1 && r.declared_loss == 0 &&
		       r.missing_kseq == 1 && r.n_missing == 1 && r.missing[0].first == 7,
	       "a torn record: expected exit 3, restart_gap 1, nothing declared, kseq 7 missing; "
	       "got exit %d, %" PRIu64 ", %" PRIu64 ", %" PRIu64 " (%s)",
	       r.status, r.restart_gap, r.declared_loss, r.missing_kseq, r.why);
	ok = write_case((build_basic(&l), &l), log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_OK && !r.restarts && !r.first_restart_line &&
		       !r.restart_downtime_us,
	       "a log without restarts: expected no restart counts, got %" PRIu64 " restarts",
	       r.restarts);
	return true;
}

/* VERIFY_RESTARTS_MAX restarts are read; one more is refused at its line. */
static bool check_restart_bound(char *why)
{
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey};
	struct note_signer *key = NULL, *old = NULL;
	struct log l = {0};
	char log[128];
	struct tw w;
	bool ok;

	/* 1 log_start | 2 kseq 0 | 3 cp | then writer_restart i at line 4 + 2i, its cp after */
	tw_start(&w, &l, NULL, "run-a", g.host, g.run_a, 10);
	tw_rec(&w, 0);
	tw_checkpoint(&w, "lines");
	for (int i = 0; i <= VERIFY_RESTARTS_MAX; i++) {
		if (note_signer_generate("sluice/run-a", &key)) {
			note_signer_free(old);
			log_free(&l);
			EXPECT(false, "cannot make a key");
		}
		tw_restart(&w, key, 0, 1);
		note_signer_free(old);
		old = key;
	}
	note_signer_free(old);
	ok = write_case(&l, log, sizeof(log), why);
	if (ok) {
		o.log = log;
		verify_log(&o, &r);
		m_truncate(&l, l.n - 2);
		ok = write_case(&l, log, sizeof(log), why);
	}
	log_free(&l);
	if (!ok)
		return false;
	EXPECT(r.status == VERIFY_INVALID && r.err_line == 4 + 2 * VERIFY_RESTARTS_MAX &&
		       strstr(r.why, "more than 1024 writer restarts"),
	       "%d restarts: expected exit 1 at line %d, got exit %d at line %" PRIu64 ": %s",
	       VERIFY_RESTARTS_MAX + 1, 4 + 2 * VERIFY_RESTARTS_MAX, r.status, r.err_line, r.why);
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_UNSEALED && r.restarts == VERIFY_RESTARTS_MAX &&
		       r.unsealed_lines == 0,
	       "%d restarts: expected exit 2 with all of them read, got exit %d, %" PRIu64
	       " restarts (line %" PRIu64 ": %s)",
	       VERIFY_RESTARTS_MAX, r.status, r.restarts, r.err_line, r.why);
	return true;
}

struct lines_seen {
	uint64_t n;
	char first[32], last[32];
};

static void count_line(const struct jsonline *jl, void *ctx)
{
	struct lines_seen *s = ctx;
	const struct jsonline_member *m = jsonline_get(jl, "type");

	if (!s->n)
		jsonline_decode(jl, &m->v, s->first, sizeof(s->first));
	jsonline_decode(jl, &m->v, s->last, sizeof(s->last));
	s->n++;
}

/* The tree root and last line hash of l's first n lines. */
static void lines_state(const struct log *l, size_t n, uint8_t root[TLOG_HASH_SIZE],
			uint8_t prev[TLOG_HASH_SIZE])
{
	struct tlog_tree t;

	tlog_init(&t);
	for (size_t i = 0; i < n; i++)
		tlog_append(&t, l->l[i], strlen(l->l[i]));
	tlog_root(&t, root);
	next_prev(l->l[n - 1], strlen(l->l[n - 1]), prev);
}

/*
 * Resume the log l: verify_log in resume mode; exit 2 expected, and the state: lines (the
 * torn one counted), torn, newline_missing, unsealed and kseq_high as given, the tree and prev
 * those of l's lines, on_line called for every line but a torn one.
 */
static bool resume_expect(struct log *l, const char *what, uint64_t lines, uint64_t torn,
			  bool newline_missing, uint64_t unsealed, uint64_t kseq_high,
			  struct verify_state *st, char *why)
{
	static struct verify_result r;
	struct lines_seen seen = {0};
	struct verify_opts o = {.host_vkey = g.host_vkey,
				.resume = true,
				.on_line = count_line,
				.ctx = &seen,
				.state = st};
	uint8_t root[TLOG_HASH_SIZE], want_root[TLOG_HASH_SIZE], want_prev[TLOG_HASH_SIZE];
	char log[128];

	if (!write_case(l, log, sizeof(log), why))
		return false;
	o.log = log;
	memset(st, 0xa5, sizeof(*st));
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_UNSEALED, "%s: expected exit 2, got %d (line %" PRIu64 ": %s)",
	       what, r.status, r.err_line, r.why);
	EXPECT(st->format == g.format, "%s: the state's format is %" PRIu64 ", not %" PRIu64, what,
	       st->format, g.format);
	EXPECT(st->lines == lines && st->torn == torn && st->newline_missing == newline_missing &&
		       st->unsealed == unsealed && st->kseq_high == kseq_high && !st->segments &&
		       !st->log_missing,
	       "%s: expected %" PRIu64 " lines, torn %" PRIu64 ", newline_missing %d, unsealed "
	       "%" PRIu64 ", kseq_high %" PRIu64 ", no segments; got %" PRIu64 ", %" PRIu64
	       ", %d, %" PRIu64 ", %" PRIu64 ", %u segments, log_missing %d",
	       what, lines, torn, newline_missing, unsealed, kseq_high, st->lines, st->torn,
	       st->newline_missing, st->unsealed, st->kseq_high, st->segments, st->log_missing);
	EXPECT(r.unsealed_lines == unsealed && !r.partial_line && r.lines == lines,
	       "%s: expected the result to say %" PRIu64 " lines, %" PRIu64 " unsealed, no "
	       "partial line; got %" PRIu64 ", %" PRIu64 ", %d",
	       what, lines, unsealed, r.lines, r.unsealed_lines, r.partial_line);
	lines_state(l, (size_t)lines, want_root, want_prev);
	tlog_root(&st->tree, root);
	EXPECT(st->tree.size == lines && !memcmp(root, want_root, sizeof(root)),
	       "%s: the state's tree (size %" PRIu64 ") is not that of the %" PRIu64 " lines", what,
	       st->tree.size, lines);
	EXPECT(!memcmp(st->prev, want_prev, sizeof(want_prev)),
	       "%s: the state's prev is not the leaf hash of line %" PRIu64, what, lines);
	EXPECT(seen.n == lines - (torn > 0) && !strcmp(seen.first, "log_start"),
	       "%s: on_line called %" PRIu64 " times (first \"%s\"), expected %" PRIu64
	       " from log_start",
	       what, seen.n, seen.first, lines - (torn > 0));
	return true;
}

/* A killed writer's log, and a torn record (kseq 7's) after it: 1 | 2-4 | 5 cp | 6-9 | 10 */
static size_t build_killed_torn(struct log *l, struct tw *w)
{
	uint64_t k;

	tw_start(w, l, NULL, "run-a", g.host, g.run_a, 10);
	for (k = 0; k < 3; k++)
		tw_rec(w, k);
	tw_checkpoint(w, "lines");
	for (; k < 7; k++)
		tw_rec(w, k);
	l->no_last_newline = true;
	return tw_torn(w, false, 7);
}

/*
 * Resume mode (sluice resume): the state after a clean cut, after a whole last line without its
 * newline, after a torn last line, and after a checkpoint; the same log without resume.
 */
static bool check_resume_state(char *why)
{
	static struct verify_state st;
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey};
	struct log l = {0};
	char log[128];
	struct tw w;
	size_t torn;
	bool ok;

	/* build_killed: 1 log_start | 2-4 kseq 0-2 | 5 cp | 6-9 kseq 3-6 */
	build_killed(&l);
	ok = resume_expect(&l, "a clean cut", 9, 0, false, 4, 7, &st, why);
	log_free(&l);
	if (!ok)
		return false;

	build_killed(&l);
	l.no_last_newline = true;
	ok = resume_expect(&l, "a whole last line without \"\\n\"", 9, 0, true, 4, 7, &st, why);
	log_free(&l);
	if (!ok)
		return false;
	/* without resume, the same bytes are an incomplete line, counted unsealed */
	o.log = log;
	snprintf(log, sizeof(log), "%s/case%d.jsonl", g.dir, g.file_n);
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_UNSEALED && r.partial_line && r.lines == 8 &&
		       r.unsealed_lines == 4,
	       "the same without resume: expected exit 2, a partial line, 8 lines, 4 unsealed; "
	       "got exit %d, %d, %" PRIu64 ", %" PRIu64,
	       r.status, r.partial_line, r.lines, r.unsealed_lines);

	torn = build_killed_torn(&l, &w);
	ok = resume_expect(&l, "a torn last line", 10, torn, false, 5, 7, &st, why);
	log_free(&l);
	if (!ok)
		return false;

	build_killed(&l);
	m_truncate(&l, 5);
	ok = resume_expect(&l, "cut after a checkpoint", 5, 0, false, 0, 3, &st, why);
	log_free(&l);
	if (!ok)
		return false;

	/* a sealed log: verified as such, the state left alone (the caller refuses it) */
	ok = write_case((build_basic(&l), &l), log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	o.resume = true;
	o.state = &st;
	memset(&st, 0xa5, sizeof(st));
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_OK && st.lines == 0xa5a5a5a5a5a5a5a5ull,
	       "a sealed log in resume mode: expected exit 0 and the state untouched; got exit "
	       "%d, state lines %" PRIu64,
	       r.status, st.lines);

	/* a torn first line: never a torn line */
	log_push(&l, "{\"seq\":0,\"prev\":\"");
	l.no_last_newline = true;
	ok = write_case(&l, log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_INVALID && r.err_line == 1 && strstr(r.why, "not canonical"),
	       "a torn first line in resume mode: expected exit 1 at line 1, got exit %d at line "
	       "%" PRIu64 ": %s",
	       r.status, r.err_line, r.why);
	return true;
}

/*
 * The resume round trip: a writer continued from the state a resume-mode verify gives (the torn
 * line ended with "\n", a writer_restart saying torn and unsealed, its checkpoint, the run's
 * end) writes a log that verifies, torn line and all.
 */
static bool check_resume_continue(char *why)
{
	static struct verify_state st;
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey, .resume = true, .state = &st};
	struct log l = {0};
	char log[128];
	struct tw w;

	build_killed_torn(&l, &w);
	if (!write_case(&l, log, sizeof(log), why)) {
		log_free(&l);
		return false;
	}
	o.log = log;
	verify_log(&o, &r);
	if (r.status != VERIFY_UNSEALED || st.format != g.format) {
		log_free(&l);
		EXPECT(false, "resume: expected exit 2 and format %" PRIu64 ", got %d and %" PRIu64
		       ": %s", g.format, r.status, st.format, r.why);
	}
	/* the writer as sluice resume would set it up from the state */
	w.tree = st.tree;
	memcpy(w.prev, st.prev, sizeof(w.prev));
	w.seq = st.lines;
	w.last_cp = st.lines - st.unsealed;
	l.no_last_newline = false;
	/* kseq 7 went with the torn line: the kernel's next is 8, and 7 is the restart's gap */
	tw_restart(&w, g.run_r1, st.torn, st.kseq_high + 1);
	tw_rec(&w, 8);
	tw_end_restarted(&w, 9, 0, 1);
	o.resume = false;
	o.state = NULL;
	if (!write_case(&l, log, sizeof(log), why)) {
		log_free(&l);
		return false;
	}
	log_free(&l);
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_LOSS && r.restarts == 1 && r.restart_torn == 1 &&
		       r.restart_unsealed == 5 && r.restart_gap == 1 && r.first_restart_line == 11,
	       "the continued log: expected exit 3, 1 restart at line 11 after 1 torn line, 5 "
	       "unsealed, gap 1; got exit %d, %" PRIu64 ", line %" PRIu64 ", %" PRIu64 ", %" PRIu64
	       ", %" PRIu64 " (line %" PRIu64 ": %s)",
	       r.status, r.restarts, r.first_restart_line, r.restart_torn, r.restart_unsealed,
	       r.restart_gap, r.err_line, r.why);
	return true;
}

/* The same round trip on a log of format 1: the state says format 1, and its prev goes on. */
static bool check_resume_continue_format1(char *why)
{
	bool ok;

	g.format = 1;
	ok = check_resume_continue(why);
	g.format = 2;
	return ok;
}

/* Resume on rotated segments: the segments counted, and LOG missing said. */
static bool check_resume_segments(char *why)
{
	static struct verify_state st;
	static struct verify_result r;
	struct verify_opts o = {.host_vkey = g.host_vkey, .resume = true, .state = &st};
	struct log l = {0};
	char log[128], seg[160];
	bool ok = true;

	/* build_rotated: rotate checkpoints at lines 7 and 13; LOG is lines 14-18 */
	build_rotated(&l);
	m_truncate(&l, 15);
	g.file_n++;
	snprintf(log, sizeof(log), "%s/case%d.jsonl", g.dir, g.file_n);
	verify_segment_path(log, 1, true, seg, sizeof(seg));
	ok = !write_lines(seg, &l, 0, 7, true);
	verify_segment_path(log, 2, true, seg, sizeof(seg));
	ok = ok && !write_lines(seg, &l, 7, 13, true) && !write_lines(log, &l, 13, 15, false);
	if (!ok) {
		log_free(&l);
		EXPECT(false, "cannot write %s and its segments", log);
	}
	o.log = log;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_UNSEALED && st.segments == 2 && !st.log_missing &&
		       st.lines == 15 && st.unsealed == 2,
	       "two segments and LOG: expected exit 2, 2 segments, 15 lines, 2 unsealed; got exit "
	       "%d, %u, %" PRIu64 ", %" PRIu64 " (%s)",
	       r.status, st.segments, st.lines, st.unsealed, r.why);
	EXPECT(!unlink(log), "cannot remove %s", log);
	log_free(&l);
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_UNSEALED && st.segments == 2 && st.log_missing &&
		       st.lines == 13 && st.unsealed == 0,
	       "two segments, no LOG: expected exit 2, 2 segments, LOG missing, 13 lines; got "
	       "exit %d, %u, %d, %" PRIu64 " (%s)",
	       r.status, st.segments, st.log_missing, st.lines, r.why);
	return true;
}

/* on_line without resume: every line, in order. */
static bool check_on_line(char *why)
{
	static struct verify_result r;
	struct lines_seen seen = {0};
	struct verify_opts o = {.host_vkey = g.host_vkey, .on_line = count_line, .ctx = &seen};
	struct log l = {0};
	char log[128];
	bool ok = write_case((build_rs_torn(&l), &l), log, sizeof(log), why);

	log_free(&l);
	if (!ok)
		return false;
	o.log = log;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_OK && seen.n == 16 && !strcmp(seen.first, "log_start") &&
		       !strcmp(seen.last, "checkpoint"),
	       "a restarted log of 17 lines, one torn: expected exit 0 and 16 lines from log_start "
	       "to the seal; got exit %d, %" PRIu64 " lines, \"%s\" to \"%s\"",
	       r.status, seen.n, seen.first, seen.last);
	return true;
}

/*
 * verify_log in a child that SIGALRM ends after 10 s: a FIFO must not hang it. The child's exit
 * status is verify's; the why is passed back through a pipe.
 */
static int verify_bounded(const struct verify_opts *o, char *out, size_t size)
{
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		static struct verify_result r;

		close(pfd[0]);
		alarm(10);
		verify_log(o, &r);
		if (write(pfd[1], r.why, strlen(r.why)) < 0)
			_exit(100);
		_exit(r.status);
	}
	close(pfd[1]);
	n = read(pfd[0], out, size - 1);
	out[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status)) {
		snprintf(out, size, "killed by signal %d (hung?)", WTERMSIG(status));
		return -1;
	}
	return WEXITSTATUS(status);
}

/* A FIFO at LOG, at a segment and as the checkpoints file: exit 4 at once, saying what it is. */
static bool check_fifo(char *why)
{
	struct verify_opts o = {.host_vkey = g.host_vkey};
	char log[128], fifo[160], got[VERIFY_WHY_MAX];
	const char *cp_list[] = {fifo};
	struct log l = {0};
	int rc;
	bool ok;

	g.file_n++;
	snprintf(log, sizeof(log), "%s/case%d.jsonl", g.dir, g.file_n);
	EXPECT(!mkfifo(log, 0600), "mkfifo %s: %s", log, strerror(errno));
	o.log = log;
	rc = verify_bounded(&o, got, sizeof(got));
	EXPECT(rc == VERIFY_ERROR && strstr(got, "a FIFO"), "a FIFO at LOG: exit %d (%s)", rc, got);

	ok = write_case((build_rotated(&l), &l), log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	verify_segment_path(log, 1, false, fifo, sizeof(fifo));
	EXPECT(!mkfifo(fifo, 0600), "mkfifo %s: %s", fifo, strerror(errno));
	o.log = log;
	rc = verify_bounded(&o, got, sizeof(got));
	EXPECT(rc == VERIFY_ERROR && strstr(got, "a FIFO"), "a FIFO at LOG.000001: exit %d (%s)",
	       rc, got);
	EXPECT(!unlink(fifo), "unlink %s", fifo);

	snprintf(fifo, sizeof(fifo), "%s/case%d.fifo", g.dir, g.file_n);
	EXPECT(!mkfifo(fifo, 0600), "mkfifo %s: %s", fifo, strerror(errno));
	o.checkpoints = cp_list;
	o.n_checkpoints = 1;
	rc = verify_bounded(&o, got, sizeof(got));
	EXPECT(rc == VERIFY_ERROR && strstr(got, "a FIFO"), "a FIFO as --checkpoints: exit %d (%s)",
	       rc, got);
	return true;
}

/*
 * 3000 kernel records whose kseqs lie a whole window apart (a crafted log): each one pushes the
 * window past the one before. Verifying must cost a few hundred bitmap words per record, not the
 * window's 16384 (which took seconds), and the accounting stays exact.
 */
static bool check_sparse_kseqs(char *why)
{
	static struct verify_result r;
	const uint64_t n = 3000, gap = VERIFY_KSEQ_WINDOW, per = 3 * SEQSET_SUMMARY_WORDS;
	struct verify_opts o = {.host_vkey = g.host_vkey};
	struct log l = {0};
	char log[128];
	struct tw w;
	bool ok;

	tw_start(&w, &l, NULL, "run-a", g.host, g.run_a, 10);
	for (uint64_t i = 0; i < n; i++) {
		tw_rec(&w, i * gap);
		if (i % 100 == 99)
			tw_checkpoint(&w, "lines");
	}
	tw_loss(&w, (n - 1) * (gap - 1), (n - 1) * (gap - 1));
	tw_end(&w, (n - 1) * gap + 1, (n - 1) * (gap - 1));
	ok = write_case(&l, log, sizeof(log), why);
	log_free(&l);
	if (!ok)
		return false;
	o.log = log;
	verify_log(&o, &r);
	EXPECT(r.status == VERIFY_LOSS && r.missing_kseq == (n - 1) * (gap - 1),
	       "expected exit 3 with %" PRIu64 " missing, got exit %d, %" PRIu64 " (%s)",
	       (n - 1) * (gap - 1), r.status, r.missing_kseq, r.why);
	EXPECT(r.kseq_words_scanned <= n * per,
	       "%" PRIu64 " bitmap words scanned for %" PRIu64 " records (%" PRIu64 " each), "
	       "expected at most %" PRIu64 " each",
	       r.kseq_words_scanned, n, r.kseq_words_scanned / n, per);
	return true;
}

/*
 * A 200 000-line log, with a checkpoint every 1000 lines, kseqs out of order, and a loss past
 * the kseq window: verifying it must not grow the process by more than 2 MiB. In a child, so
 * the peak RSS measured is this check's alone.
 */
#define BIG_LINES 200000
static bool check_big_log(char *why)
{
	char log[128];
	int status;
	pid_t pid;

	snprintf(log, sizeof(log), "%s/big.jsonl", g.dir);
	fflush(stdout);
	pid = fork();
	EXPECT(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		static struct verify_result r;
		struct verify_opts o = {.log = log, .host_vkey = g.host_vkey};
		struct rusage before, after;
		struct tw w;
		uint64_t k = 0;
		int rc = 0;

		FILE *out = fopen(log, "w");

		if (!out)
			_exit(3);
		tw_start(&w, NULL, out, "run-a", g.host, g.run_a2, 10);
		w.step = 1000;
		while (w.seq < BIG_LINES - 3) {
			if (w.seq % 1000 == 999) {
				tw_checkpoint(&w, "lines");
				continue;
			}
			/* pairs swapped: 1 0 3 2 … */
			tw_rec(&w, k ^ 1);
			k++;
			if (k == 100000) {
				tw_loss(&w, 2000000, 2000000);
				k += 2000000;
			}
		}
		if (k & 1) {
			tw_rec(&w, k ^ 1);
			k++;
		}
		tw_end(&w, k, 2000000);
		fclose(w.out);
		getrusage(RUSAGE_SELF, &before);
		verify_log(&o, &r);
		getrusage(RUSAGE_SELF, &after);
		if (r.status != VERIFY_LOSS || r.lines < BIG_LINES) {
			printf("# big log: exit %d, %" PRIu64 " lines: %s (line %" PRIu64 ")\n",
			       r.status, r.lines, r.why, r.err_line);
			rc = 1;
		}
		if (after.ru_maxrss - before.ru_maxrss > 2048) {
			printf("# big log: peak RSS grew by %ld KiB while verifying\n",
			       after.ru_maxrss - before.ru_maxrss);
			rc = 1;
		}
		printf("# big log: %" PRIu64 " lines, %" PRIu64 " checkpoints, peak RSS +%ld KiB\n",
		       r.lines, r.checkpoints, after.ru_maxrss - before.ru_maxrss);
		fflush(stdout);
		unlink(log);
		_exit(rc);
	}
	EXPECT(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "expected a 200000-line log with declared loss to verify (exit 3) in under 2 MiB");
	return true;
}

static const struct {
	const char *name;
	bool (*fn)(char *why);
} misc_cases[] = {
	{"prev of 63 digits refused", check_prev_63},
	{"line length: 8191 bytes accepted, 8192 refused", check_line_max},
	{"accessors: typed lookups, decoding, arrays", check_accessors},
	{"20000 random strings: the spec's escaping round-trips, other spellings refused",
	 check_escape_property},
};

static const struct {
	const char *name;
	bool (*fn)(char *why);
} late_cases[] = {
	{"result details: missing ranges, counts, file and line of the error",
	 check_result_details},
	{"result details: the loss_ranges line that matched", check_loss_ranges_line},
	{"unreadable log, bad host key, missing checkpoints file: exit 4", check_errors_exit_4},
	{"the run pinned (run id, origin): another run's whole log is refused", check_run_pinned},
	{"certified: the run's start time and key hash, none when the cert fails",
	 check_run_identity},
	{"a FIFO at LOG, at a segment, as the checkpoints file: exit 4, not a hang", check_fifo},
	{"writer restarts: restarts, unsealed and torn lines, gap, downtime",
	 check_restart_details},
	{"resume mode: the state after a clean cut, a line without \"\\n\", a torn line",
	 check_resume_state},
	{"resume mode: a writer continued from the state writes a log that verifies",
	 check_resume_continue},
	{"resume mode: the same in format 1 (the state's format and prev are format 1's)",
	 check_resume_continue_format1},
	{"resume mode: rotated segments counted, LOG missing said", check_resume_segments},
	{"on_line: every line but a torn one, in order", check_on_line},
	{"1024 writer restarts read, the 1025th refused", check_restart_bound},
	{"3000 kseqs a window apart: a few hundred bitmap words each, exact accounting",
	 check_sparse_kseqs},
	{"a 200000-line log verifies in bounded memory", check_big_log},
};

static int setup(void)
{
	if (note_signer_generate("test-host", &g.host) ||
	    note_signer_generate("test-host", &g.other_host) ||
	    note_signer_generate("sluice/run-a", &g.run_a) ||
	    note_signer_generate("sluice/run-a", &g.run_a2) ||
	    note_signer_generate("sluice/run-b", &g.run_b) ||
	    note_signer_generate("sluice/run-a", &g.run_r1) ||
	    note_signer_generate("sluice/run-a", &g.run_r2) ||
	    note_signer_generate("witness.example", &g.witness))
		return -1;
	note_signer_vkey(g.host, g.host_vkey, sizeof(g.host_vkey));
	note_signer_vkey(g.other_host, g.other_vkey, sizeof(g.other_vkey));
	snprintf(g.dir, sizeof(g.dir), "%s/sl-verify.XXXXXX", getenv("TMPDIR") ?: "/tmp");
	return mkdtemp(g.dir) ? 0 : -1;
}

static void teardown(void)
{
	char cmd[128];

	/* the directory holds only files this test wrote */
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", g.dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", g.dir);
	note_signer_free(g.host);
	note_signer_free(g.other_host);
	note_signer_free(g.run_a);
	note_signer_free(g.run_a2);
	note_signer_free(g.run_b);
	note_signer_free(g.run_r1);
	note_signer_free(g.run_r2);
	note_signer_free(g.witness);
}

/*
 * test_verify --corpus DIR: the corpus cases' logs, each with a run_start line after log_start
 * as the writer writes it, into DIR/NAME.jsonl, the host key into DIR/host.pub, and
 * DIR/cases.tsv: one line per log, "FILE<TAB>STATUS<TAB>LINE<TAB>NAME" (the exit status
 * sluice verify must give and the first bad line, 0 for none). test_verify.sh runs sluice
 * verify and the independent sl_logcheck.py on them: both must find what this table says.
 */
/*
 * The cases also in the corpus: one file, no exported checkpoints, mutations that find their line
 * by its content (a run_start line moves the others).
 */
static bool in_corpus(const struct verify_case *c)
{
	static const struct {
		void (*build)(struct log *);
		void (*mutate)(struct log *);
	} corpus[] = {
		{build_basic, NULL},
		{build_format1, NULL},
		{build_format3, NULL},
		{build_pc_ok, NULL},
		{build_pc_mode, NULL},
		{build_pc_sha, NULL},
		{build_pc_prev_sha, NULL},
		{build_pc_prev_mode, NULL},
		{build_sw_ok, NULL},
		{build_sw_prev_era, NULL},
		{build_rotated, NULL},
		{build_rotate_stopped, NULL},
		{build_rotate_restart, NULL},
		{build_line_max, NULL},
		{build_line_max, m_line_8192},
		{build_end_cps, NULL},
		{build_end_record, NULL},
		{build_end_loss, NULL},
		{build_end_anomaly_cp, NULL},
		{build_lost_short, NULL},
		{build_lost_short, m_drop_seal},
		{build_lost_undeclared, NULL},
		{build_lost_absent, NULL},
		{build_seal_cosigned, NULL},
		{build_cp_cosigned, NULL},
		{build_cert_cosigned, NULL},
	};

	if (c->flags || c->cps_from)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(corpus); i++)
		if (c->build == corpus[i].build && c->mutate == corpus[i].mutate)
			return true;
	return false;
}

static int write_corpus(const char *dir)
{
	char path[PATH_MAX], pub[NOTE_VKEY_MAX + 2];
	FILE *tsv;
	int n = 0;

	snprintf(pub, sizeof(pub), "%s\n", g.host_vkey);
	snprintf(path, sizeof(path), "%s/host.pub", dir);
	if (write_file(path, pub, strlen(pub)))
		return -1;
	snprintf(path, sizeof(path), "%s/cases.tsv", dir);
	tsv = fopen(path, "w");
	if (!tsv)
		return -1;
	g.run_start = true;
	for (size_t i = 0; i < ARRAY_SIZE(verify_cases); i++) {
		const struct verify_case *c = &verify_cases[i];
		struct log l = {0};

		if (!in_corpus(c))
			continue;
		c->build(&l);
		if (c->mutate)
			c->mutate(&l);
		snprintf(path, sizeof(path), "%s/case%02zu.jsonl", dir, i);
		if (write_lines(path, &l, 0, l.n, false)) {
			log_free(&l);
			fclose(tsv);
			return -1;
		}
		log_free(&l);
		/* the run_start line moves every line after line 1 down one */
		fprintf(tsv, "%s\t%d\t%" PRIu64 "\t%s\n", path, c->status,
			c->line > 1 ? c->line + 1 : c->line, c->name);
		n++;
	}
	g.run_start = false;
	return fclose(tsv) || !n ? -1 : 0;
}

int main(int argc, char **argv)
{
	size_t plan = ARRAY_SIZE(grammar_cases) + ARRAY_SIZE(misc_cases) +
		      ARRAY_SIZE(verify_cases) + ARRAY_SIZE(late_cases);
	char why[WHY_LEN];

	if (setup()) {
		printf("Bail out! cannot create keys or a temporary directory\n");
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "--corpus")) {
		int err = write_corpus(argv[2]);

		if (err)
			fprintf(stderr, "test_verify: cannot write the corpus into %s\n", argv[2]);
		teardown();
		return err ? 1 : 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--corpus DIR]\n", argv[0]);
		teardown();
		return 2;
	}
	printf("TAP version 13\n1..%zu\n", plan);
	for (size_t i = 0; i < ARRAY_SIZE(grammar_cases); i++) {
		why[0] = '\0';
		report(run_grammar_case(&grammar_cases[i], why), grammar_cases[i].name, why);
	}
	for (size_t i = 0; i < ARRAY_SIZE(misc_cases); i++) {
		why[0] = '\0';
		report(misc_cases[i].fn(why), misc_cases[i].name, why);
	}
	for (size_t i = 0; i < ARRAY_SIZE(verify_cases); i++) {
		why[0] = '\0';
		report(run_verify_case(&verify_cases[i], why), verify_cases[i].name, why);
	}
	for (size_t i = 0; i < ARRAY_SIZE(late_cases); i++) {
		why[0] = '\0';
		report(late_cases[i].fn(why), late_cases[i].name, why);
	}
	teardown();
	return tap_status();
}
