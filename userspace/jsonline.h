/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A strict parser for one canonical log line (evidence spec section 1): it accepts exactly the
 * bytes the writer produces and nothing else, so that a line has one accepted form and a verifier
 * can refuse any other. The grammar:
 *
 *   line    = "{" member *("," member) "}"         no whitespace, nothing after "}"
 *   member  = key ":" value                        key: "[a-z0-9_]+", no key twice
 *   value   = string | integer | true | false | null | "[" [elem *("," elem)] "]"
 *   elem    = string | integer
 *   integer = "0" | ["-"] [1-9] *[0-9]             uint64, or int64 when negative; no "-0"
 *   string  = '"' *(raw | escape) '"'
 *     raw: 0x20..0x7e except '"' and '\', or a well-formed shortest-form UTF-8 sequence
 *     (U+0080..U+10FFFF, no surrogates);
 *     escape: \" \\ \n (0x0a) \t (0x09) and \u00xx (lowercase hex) for the other bytes below
 *     0x20, for 0x7f, and for a byte >= 0x80 that does not start a well-formed UTF-8 sequence.
 *
 * and the first four members are "seq" (non-negative integer), "prev" (64 lowercase hex
 * digits), "ts" (integer) and "type" (string), in that order.
 *
 * The parse keeps offsets into the caller's line, which must outlive the struct jsonline; it
 * allocates nothing.
 */
#ifndef SLUICE_JSONLINE_H
#define SLUICE_JSONLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A line's bytes, without its "\n"; the spec caps a line at 8192 bytes with it. */
#define JSONLINE_MAX 8191
/* The most members a line that short can hold ("a":0 and a comma: 6 bytes each). */
#define JSONLINE_MAX_MEMBERS (JSONLINE_MAX / 6 + 1)

enum jsonline_kind {
	JSONLINE_STRING,
	JSONLINE_INT,
	JSONLINE_TRUE,
	JSONLINE_FALSE,
	JSONLINE_NULL,
	JSONLINE_ARRAY,
};

struct jsonline_value {
	uint16_t off; /* STRING: first byte inside the quotes; others: first byte of the value */
	uint16_t len; /* STRING: bytes between the quotes, escaped; ARRAY: "[" to "]" inclusive */
	uint8_t kind; /* enum jsonline_kind */
	bool neg;     /* INT: negative (then it is -(int64_t)u, u <= 2^63) */
	bool escaped; /* STRING: contains at least one escape */
	uint64_t u;   /* INT: the magnitude */
};

struct jsonline_member {
	uint16_t key_off, key_len;
	struct jsonline_value v;
};

struct jsonline {
	const char *line;
	size_t len;
	size_t n; /* members */
	/* The header, for convenience. */
	uint64_t seq;
	int64_t ts;
	const char *prev; /* 64 hex digits inside line */
	struct jsonline_member m[JSONLINE_MAX_MEMBERS];
};

/*
 * Parse line (len bytes, no "\n"). 0 when canonical; -EBADMSG otherwise, with *err_off the
 * 0-based byte offset of the first violation and *why saying what it is (a static string).
 */
int jsonline_parse(struct jsonline *jl, const char *line, size_t len, size_t *err_off,
		   const char **why);

/* The member named key, or NULL. */
const struct jsonline_member *jsonline_get(const struct jsonline *jl, const char *key);

/* True when v is a string whose escaped bytes are exactly s (s needs no escaping). */
bool jsonline_str_is(const struct jsonline *jl, const struct jsonline_value *v, const char *s);
/* True when the line's "type" is type. */
bool jsonline_type_is(const struct jsonline *jl, const char *type);
/* True when member i exists and is named key. */
bool jsonline_key_is(const struct jsonline *jl, size_t i, const char *key);

/*
 * Decode a string value into buf (NUL-terminated; the value may itself contain NUL bytes).
 * Returns its length, -EINVAL if v is not a string, -ENOSPC if buf is too small.
 */
int jsonline_decode(const struct jsonline *jl, const struct jsonline_value *v, char *buf,
		    size_t size);

/*
 * Typed lookups: 0, -ENOENT when the key is absent, -EINVAL when the value has another kind
 * (or, for u64, is negative; for i64, does not fit).
 */
int jsonline_u64(const struct jsonline *jl, const char *key, uint64_t *out);
int jsonline_i64(const struct jsonline *jl, const char *key, int64_t *out);
/* A string member decoded into buf, as jsonline_decode; -ENOENT when absent. */
int jsonline_str(const struct jsonline *jl, const char *key, char *buf, size_t size);

/*
 * Walk an array's elements: start with *pos = 0; each call fills *elem and returns 1, or 0 at
 * the end, or -EINVAL if v is not an array.
 */
int jsonline_array_next(const struct jsonline *jl, const struct jsonline_value *v, size_t *pos,
			struct jsonline_value *elem);

#endif /* SLUICE_JSONLINE_H */
