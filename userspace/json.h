/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small strict JSON reader for the documents other programs write and sluice only reads: an OCI
 * runtime's container state (stdin of a hook, runc's state.json), a bundle's config.json, podman's
 * inspect output. RFC 8259 and nothing more: no comments, no trailing commas, no bytes after the
 * value, valid UTF-8, no duplicate keys in an object (two readers could disagree on which one
 * counts), no NUL in a string (it is handed on as a C string), nesting at most JSON_DEPTH_MAX.
 * A failure says at which byte and why.
 *
 * And, for the one document sluice changes (a bundle's config.json, oci_runtime.c), builders
 * and a writer: what it read and did not touch is written back with the same meaning (members
 * in their order, numbers in their own text; strings in cjson's canonical form).
 */
#ifndef SLUICE_JSON_H
#define SLUICE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH_MAX 64
#define JSON_FILE_MAX (16u << 20) /* the most json_read_file reads */

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
	enum json_type type;
	char *key;	   /* as a member of an object: its key (decoded); else NULL */
	char *str;	   /* JSON_STRING: decoded, NUL-terminated; JSON_NUMBER: its text */
	bool b;		   /* JSON_BOOL */
	size_t n;	   /* JSON_ARRAY, JSON_OBJECT: how many elements or members */
	struct json *child; /* the first element or member */
	struct json *next;  /* the next sibling */
};

/* Parse len bytes. Returns 0 and *out (free with json_free), or -EINVAL with why, or -ENOMEM. */
int json_parse(const char *text, size_t len, struct json **out, char *why, size_t why_len);

/* Read and parse a regular file of at most JSON_FILE_MAX bytes. -errno; why says why. */
int json_read_file(const char *path, struct json **out, char *why, size_t why_len);

void json_free(struct json *j);

/* The member key of object j; NULL when j is not an object or has no such member. */
const struct json *json_get(const struct json *j, const char *key);
/* Element i of array j, or NULL. */
const struct json *json_at(const struct json *j, size_t i);
/* The string j holds, or NULL when j is NULL or not a string. */
const char *json_str(const struct json *j);
/*
 * The integer j holds: 0, -ENOENT when j is NULL, -EINVAL when j is not a number or not an
 * integer, -ERANGE when it does not fit an int64_t.
 */
int json_int(const struct json *j, int64_t *v);

/* A new value: str is copied for a JSON_STRING or JSON_NUMBER (a number's text). NULL: no memory. */
struct json *json_new(enum json_type type, const char *str);

/*
 * Add v to object or array parent, first or last; key (copied) names it in an object. 0, or
 * -EINVAL (parent not an object or array, a key for an array, none for an object), -EEXIST (the
 * object has that key already), -ENOMEM; on failure v stays the caller's.
 */
int json_add(struct json *parent, const char *key, struct json *v, bool first);

/* Write j as compact JSON to f (check f's error state after). */
void json_write(FILE *f, const struct json *j);

#endif /* SLUICE_JSON_H */
