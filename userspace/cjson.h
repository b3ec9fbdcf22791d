/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Canonical JSON: the one string form and the one integer form that sluice writes (the log,
 * journal.c; the daemon's socket, control.c) and the one grammar that reads them back
 * (jsonline.c for log lines, control.c for requests and replies). One writer and one reader of
 * each, so that what is written always reads back byte for byte, and a line has one accepted
 * form (evidence spec section 1, sluice-log.5):
 *
 *   string  = '"' *(raw | escape) '"'
 *     raw: 0x20..0x7e except '"' and '\', or a well-formed shortest-form UTF-8 sequence
 *     (U+0080..U+10FFFF, no surrogates);
 *     escape: \" \\ \n (0x0a) \t (0x09) and \u00xx (lowercase hex) for the other bytes below
 *     0x20, for 0x7f, and for a byte >= 0x80 that does not start a well-formed UTF-8 sequence:
 *     \u00xx stands for the byte xx, so any byte string survives, invalid UTF-8 included.
 *   integer = "0" | ["-"] [1-9] *[0-9]             uint64, or int64 when negative; no "-0"
 */
#ifndef SLUICE_CJSON_H
#define SLUICE_CJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The longest integer text: "-9223372036854775808" or "18446744073709551615". */
#define CJSON_INT_MAX 20

/*
 * The length (2..4) of the well-formed, shortest-form UTF-8 sequence of a code point in
 * U+0080..U+10FFFF other than a surrogate at s (avail bytes there), or 0 if none starts there.
 */
size_t cjson_utf8_len(const unsigned char *s, size_t avail);

/* Where the writer puts bytes; ctx is the caller's buffer. */
typedef void cjson_put_fn(void *ctx, const char *s, size_t n);

/* Write the NUL-terminated byte string s in the canonical form, quotes included. */
void cjson_put_string(cjson_put_fn *put, void *ctx, const char *s);

/* Bytes a string keeps as they are: printable ASCII but the quote and the backslash. */
extern const bool cjson_plain_ascii[256];

/*
 * The common case of cjson_put_string in one pass, for a writer into a buffer of its own: when
 * s is all printable ASCII that needs no escape (what every key and most values are) and its
 * quoted form fits in cap bytes, that form is written to out and its length returned; otherwise
 * 0 and out's contents are undefined (cjson_put_string then writes it). Inline: the log writer
 * puts a dozen keys and strings per line this way (make bench measures the writer).
 */
static inline size_t cjson_put_plain(char *out, size_t cap, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;

	for (n = 0; cjson_plain_ascii[s[n]]; n++) {
		if (n + 2 >= cap)
			return 0;
		out[n + 1] = (char)s[n];
	}
	if (s[n] || n + 2 > cap)
		return 0;
	out[0] = '"';
	out[n + 1] = '"';
	return n + 2;
}

/* The same onto a stdio stream (the JSON outputs of verify and policy replay). */
void cjson_fput_string(FILE *f, const char *s);

/* The value of a lower-case hex digit (the one form the log writes), or -1. */
int cjson_hexval(unsigned char c);

/* The canonical text of an integer in out (CJSON_INT_MAX bytes, not NUL-terminated); its length. */
size_t cjson_fmt_u64(char *out, uint64_t v);
size_t cjson_fmt_i64(char *out, int64_t v);

/*
 * Read the string whose opening quote is at s[*pos] (len bytes in s). Returns 0 with *pos past
 * the closing quote and *escaped set when it holds an escape; -EBADMSG when it is not
 * canonical, with *err_off the offset of the first violation and *why what it is.
 */
int cjson_scan_string(const unsigned char *s, size_t len, size_t *pos, bool *escaped,
		      size_t *err_off, const char **why);

/* Read the integer at s[*pos]: as cjson_scan_string, with the magnitude in *u and *neg. */
int cjson_scan_int(const unsigned char *s, size_t len, size_t *pos, uint64_t *u, bool *neg,
		   size_t *err_off, const char **why);

/*
 * Decode the n bytes between the quotes of a string cjson_scan_string accepted into buf,
 * NUL-terminated (the bytes may themselves hold NUL). Its length, or -ENOSPC.
 */
int cjson_decode(const unsigned char *s, size_t n, char *buf, size_t size);

#endif /* SLUICE_CJSON_H */
