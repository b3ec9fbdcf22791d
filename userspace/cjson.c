// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Canonical JSON strings and integers, written and read: see cjson.h. */
#include <errno.h>
#include <string.h>

#include "cjson.h"

static int fail(size_t *err_off, const char **why, size_t off, const char *what)
{
	*err_off = off;
	*why = what;
	return -EBADMSG;
}

size_t cjson_utf8_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (avail < n)
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* shorter forms of U+0000..U+07FF */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates U+D800..U+DFFF */
	else if (c == 0xf0)
		lo = 0x90; /* shorter forms of U+0000..U+FFFF */
	else if (c == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* Bytes written as they are: printable ASCII but the quote and the backslash. */
const bool cjson_plain_ascii[256] = {
	[0x20 ... 0x21] = true, /* '"' is 0x22 */
	[0x23 ... 0x5b] = true, /* '\\' is 0x5c */
	[0x5d ... 0x7e] = true,
};

static const char hex[] = "0123456789abcdef";

void cjson_put_string(cjson_put_fn *put, void *ctx, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	char esc[6] = {'\\', 'u', '0', '0'};

	put(ctx, "\"", 1);
	while (*s) {
		size_t n;

		/* the common case, a run of printable ASCII that needs no escape, in one copy */
		for (n = 0; cjson_plain_ascii[s[n]]; n++)
			;
		if (n) {
			put(ctx, (const char *)s, n);
			s += n;
			continue;
		}
		if (*s == '"') {
			put(ctx, "\\\"", 2);
		} else if (*s == '\\') {
			put(ctx, "\\\\", 2);
		} else if (*s == '\n') {
			put(ctx, "\\n", 2);
		} else if (*s == '\t') {
			put(ctx, "\\t", 2);
		} else if (*s >= 0x80 && (n = cjson_utf8_len(s, strnlen((const char *)s, 4)))) {
			put(ctx, (const char *)s, n);
			s += n;
			continue;
		} else {
			/* other control bytes, DEL, a byte that starts no UTF-8 sequence */
			esc[4] = hex[*s >> 4];
			esc[5] = hex[*s & 0xf];
			put(ctx, esc, 6);
		}
		s++;
	}
	put(ctx, "\"", 1);
}

static void fput_cb(void *f, const char *s, size_t n)
{
	fwrite(s, 1, n, f);
}

void cjson_fput_string(FILE *f, const char *s)
{
	cjson_put_string(fput_cb, f, s);
}

size_t cjson_fmt_u64(char *out, uint64_t v)
{
	/* "00" "01" … "99": two digits per division */
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
				    "31323334353637383940414243444546474849505152535455565758596061"
				    "62636465666768697071727374757677787980818283848586878889909192"
				    "93949596979899";
	char tmp[CJSON_INT_MAX];
	size_t n = sizeof(tmp), i;

	/* without printf: a log line carries a dozen integers (make bench measures the writer) */
	while (v >= 100) {
		i = (size_t)(v % 100) * 2;
		v /= 100;
		tmp[--n] = pairs[i + 1];
		tmp[--n] = pairs[i];
	}
	if (v >= 10) {
		tmp[--n] = pairs[v * 2 + 1];
		tmp[--n] = pairs[v * 2];
	} else {
		tmp[--n] = (char)('0' + v);
	}
	memcpy(out, tmp + n, sizeof(tmp) - n);
	return sizeof(tmp) - n;
}

size_t cjson_fmt_i64(char *out, int64_t v)
{
	if (v >= 0)
		return cjson_fmt_u64(out, (uint64_t)v);
	out[0] = '-';
	return 1 + cjson_fmt_u64(out + 1, (uint64_t)0 - (uint64_t)v);
}

int cjson_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The byte a "\u00xx" at s (avail bytes there) stands for, or -1 if s is not one. */
static int u00_byte(const unsigned char *s, size_t avail)
{
	int hi, lo;

	if (avail < 6 || s[0] != '\\' || s[1] != 'u' || s[2] != '0' || s[3] != '0')
		return -1;
	hi = cjson_hexval(s[4]);
	lo = cjson_hexval(s[5]);
	if (hi < 0 || lo < 0)
		return -1;
	return hi << 4 | lo;
}

/* A byte the writer escapes as \u00xx: it has no shorter escape and is not printable ASCII. */
static bool needs_u00(unsigned int b)
{
	return (b < 0x20 && b != '\n' && b != '\t') || b == 0x7f || b >= 0x80;
}

/* The escape at s[pos] (a backslash): its length, or -EBADMSG. */
static int scan_escape(const unsigned char *s, size_t len, size_t pos, size_t *err_off,
		       const char **why)
{
	size_t avail = len - pos, n = 1;
	unsigned char seq[4];
	int b, i;

	s += pos;
	if (avail < 2)
		return fail(err_off, why, pos, "unterminated string");
	switch (s[1]) {
	case '"':
	case '\\':
	case 'n':
	case 't':
		return 2;
	case 'u':
		break;
	default:
		return fail(err_off, why, pos, "escape other than \\\" \\\\ \\n \\t \\u00xx");
	}
	if (avail < 6)
		return fail(err_off, why, pos, "truncated \\u escape");
	if (s[2] != '0' || s[3] != '0')
		return fail(err_off, why, pos, "\\u escape above \\u00ff");
	for (i = 4; i < 6; i++)
		if (cjson_hexval(s[i]) < 0)
			return fail(err_off, why, pos + i,
				    (s[i] >= 'A' && s[i] <= 'F') ? "upper-case hex in \\u escape"
								 : "bad hex digit in \\u escape");
	b = u00_byte(s, avail);
	if (!needs_u00((unsigned int)b))
		return fail(err_off, why, pos,
			    b == '\n' || b == '\t' ? "\\u escape of a byte that has a short escape"
						   : "\\u escape of a printable ASCII byte");
	if (b >= 0x80) {
		/*
		 * The writer escapes a byte >= 0x80 only when no well-formed UTF-8 sequence starts
		 * there. Its continuation bytes, if any, would be escaped too (a raw one is
		 * refused on its own), so look at the escapes that follow.
		 */
		seq[0] = (unsigned char)b;
		while (n < 4 && avail >= 6 * (n + 1)) {
			int c = u00_byte(s + 6 * n, avail - 6 * n);

			if (c < 0)
				break;
			seq[n++] = (unsigned char)c;
		}
		if (cjson_utf8_len(seq, n))
			return fail(err_off, why, pos,
				    "escaped bytes form a well-formed UTF-8 sequence (must be raw)");
	}
	return 6;
}

int cjson_scan_string(const unsigned char *s, size_t len, size_t *pos, bool *escaped,
		      size_t *err_off, const char **why)
{
	size_t p = *pos + 1;

	*escaped = false;
	for (;;) {
		unsigned char c;
		size_t n;
		int e;

		if (p >= len)
			return fail(err_off, why, p, "unterminated string");
		c = s[p];
		if (c == '"')
			break;
		if (c == '\\') {
			*escaped = true;
			e = scan_escape(s, len, p, err_off, why);
			if (e < 0)
				return e;
			p += (size_t)e;
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			return fail(err_off, why, p, "unescaped control byte in string");
		if (c < 0x80) {
			p++;
			continue;
		}
		n = cjson_utf8_len(s + p, len - p);
		if (!n)
			return fail(err_off, why, p,
				    "raw byte that is not well-formed UTF-8 (must be \\u00xx)");
		p += n;
	}
	*pos = p + 1;
	return 0;
}

int cjson_scan_int(const unsigned char *s, size_t len, size_t *pos, uint64_t *u, bool *neg,
		   size_t *err_off, const char **why)
{
	size_t start = *pos, p = *pos;

	*u = 0;
	*neg = p < len && s[p] == '-';
	if (*neg)
		p++;
	if (p >= len || s[p] < '0' || s[p] > '9')
		return fail(err_off, why, p, "expected a digit");
	if (s[p] == '0') {
		if (*neg)
			return fail(err_off, why, start, "-0 is not canonical");
		p++;
		if (p < len && s[p] >= '0' && s[p] <= '9')
			return fail(err_off, why, start, "integer with a leading zero");
	} else {
		while (p < len && s[p] >= '0' && s[p] <= '9') {
			unsigned int d = s[p] - '0';

			if (*u > (UINT64_MAX - d) / 10)
				return fail(err_off, why, start, "integer does not fit 64 bits");
			*u = *u * 10 + d;
			p++;
		}
	}
	if (*neg && *u > (uint64_t)INT64_MAX + 1)
		return fail(err_off, why, start, "negative integer does not fit int64");
	if (p < len && (s[p] == '.' || s[p] == 'e' || s[p] == 'E'))
		return fail(err_off, why, p, "integer with a fraction or exponent");
	*pos = p;
	return 0;
}

int cjson_decode(const unsigned char *s, size_t n, char *buf, size_t size)
{
	size_t i = 0, o = 0;

	while (i < n) {
		unsigned char c = s[i];

		if (o + 1 >= size)
			return -ENOSPC;
		if (c != '\\') {
			buf[o++] = (char)c;
			i++;
			continue;
		}
		/* the scan checked every escape */
		switch (s[i + 1]) {
		case 'n':
			buf[o++] = '\n';
			i += 2;
			break;
		case 't':
			buf[o++] = '\t';
			i += 2;
			break;
		case 'u':
			buf[o++] = (char)u00_byte(s + i, n - i);
			i += 6;
			break;
		default: /* \" and \\ */
			buf[o++] = (char)s[i + 1];
			i += 2;
			break;
		}
	}
	if (o >= size)
		return -ENOSPC;
	buf[o] = '\0';
	return (int)o;
}
