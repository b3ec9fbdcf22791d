// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>

#include "cjson.h"
#include "jsonline.h"

struct parser {
	const unsigned char *s;
	size_t len, pos;
	size_t err_off;
	const char *why;
};

static const char *const header_keys[] = {"seq", "prev", "ts", "type"};

static int fail(struct parser *p, size_t off, const char *why)
{
	p->err_off = off;
	p->why = why;
	return -EBADMSG;
}

static bool at(const struct parser *p, char c)
{
	return p->pos < p->len && p->s[p->pos] == (unsigned char)c;
}

/* A string at p->pos ('"'), in the one canonical grammar (cjson.c): fills v->off/len/escaped. */
static int parse_string(struct parser *p, struct jsonline_value *v)
{
	size_t start = p->pos + 1;

	v->kind = JSONLINE_STRING;
	if (cjson_scan_string(p->s, p->len, &p->pos, &v->escaped, &p->err_off, &p->why))
		return -EBADMSG;
	v->off = (uint16_t)start;
	v->len = (uint16_t)(p->pos - 1 - start);
	return 0;
}

static int parse_int(struct parser *p, struct jsonline_value *v)
{
	size_t start = p->pos;

	v->kind = JSONLINE_INT;
	if (cjson_scan_int(p->s, p->len, &p->pos, &v->u, &v->neg, &p->err_off, &p->why))
		return -EBADMSG;
	v->off = (uint16_t)start;
	v->len = (uint16_t)(p->pos - start);
	return 0;
}

static int parse_word(struct parser *p, struct jsonline_value *v, const char *word,
		      enum jsonline_kind kind)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n))
		return fail(p, p->pos, "expected a value");
	v->kind = kind;
	v->off = (uint16_t)p->pos;
	v->len = (uint16_t)n;
	p->pos += n;
	return 0;
}

static int parse_array(struct parser *p, struct jsonline_value *v)
{
	size_t start = p->pos++;
	struct jsonline_value e;
	int err;

	v->kind = JSONLINE_ARRAY;
	if (!at(p, ']')) {
		for (;;) {
			if (at(p, '"'))
				err = parse_string(p, &e);
			else if (at(p, '-') ||
				 (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9'))
				err = parse_int(p, &e);
			else if (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
				return fail(p, p->pos, "whitespace outside a string");
			else
				return fail(p, p->pos,
					    "array element that is not a string or integer");
			if (err)
				return err;
			if (at(p, ']'))
				break;
			if (!at(p, ','))
				return fail(p, p->pos,
					    p->pos < p->len && (p->s[p->pos] == ' ')
						    ? "whitespace outside a string"
						    : "expected , or ] in array");
			p->pos++;
		}
	}
	p->pos++;
	v->off = (uint16_t)start;
	v->len = (uint16_t)(p->pos - start);
	return 0;
}

static int parse_value(struct parser *p, struct jsonline_value *v)
{
	if (p->pos >= p->len)
		return fail(p, p->pos, "line ends where a value should be");
	switch (p->s[p->pos]) {
	case '"':
		return parse_string(p, v);
	case '[':
		return parse_array(p, v);
	case 't':
		return parse_word(p, v, "true", JSONLINE_TRUE);
	case 'f':
		return parse_word(p, v, "false", JSONLINE_FALSE);
	case 'n':
		return parse_word(p, v, "null", JSONLINE_NULL);
	case '{':
		return fail(p, p->pos, "nested object");
	case ' ':
	case '\t':
	case '\r':
	case '\n':
		return fail(p, p->pos, "whitespace outside a string");
	default:
		if (p->s[p->pos] == '-' || (p->s[p->pos] >= '0' && p->s[p->pos] <= '9'))
			return parse_int(p, v);
		return fail(p, p->pos, "expected a value");
	}
}

static bool key_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int parse_key(struct parser *p, struct jsonline *jl, struct jsonline_member *m)
{
	size_t start, i;

	if (p->pos >= p->len)
		return fail(p, p->pos, "line ends where a key should be");
	if (p->s[p->pos] != '"')
		return fail(p, p->pos,
			    p->s[p->pos] == ' ' || p->s[p->pos] == '\t'
				    ? "whitespace outside a string"
				    : "expected a key");
	start = ++p->pos;
	while (p->pos < p->len && key_char(p->s[p->pos]))
		p->pos++;
	if (p->pos >= p->len)
		return fail(p, p->pos, "unterminated key");
	if (p->s[p->pos] != '"')
		return fail(p, p->pos, "key character outside [a-z0-9_]");
	if (p->pos == start)
		return fail(p, start - 1, "empty key");
	m->key_off = (uint16_t)start;
	m->key_len = (uint16_t)(p->pos - start);
	for (i = 0; i < jl->n; i++)
		if (jl->m[i].key_len == m->key_len &&
		    !memcmp(p->s + jl->m[i].key_off, p->s + start, m->key_len))
			return fail(p, start - 1, "duplicate key");
	p->pos++;
	if (!at(p, ':'))
		return fail(p, p->pos,
			    p->pos < p->len && p->s[p->pos] == ' ' ? "whitespace outside a string"
								   : "expected : after a key");
	p->pos++;
	return 0;
}

/* Where a value starts: a string's opening quote. */
static size_t value_start(const struct jsonline_value *v)
{
	return v->kind == JSONLINE_STRING ? (size_t)v->off - 1 : v->off;
}

/* The fixed header: seq, prev, ts, type, as members 0..3. */
static int check_header_key(struct parser *p, const struct jsonline *jl,
			    const struct jsonline_member *m)
{
	const char *want;

	if (jl->n >= 4)
		return 0;
	want = header_keys[jl->n];
	if (m->key_len != strlen(want) || memcmp(p->s + m->key_off, want, m->key_len))
		return fail(p, m->key_off - 1,
			    jl->n == 0	 ? "first key is not \"seq\""
			    : jl->n == 1 ? "second key is not \"prev\""
			    : jl->n == 2 ? "third key is not \"ts\""
					 : "fourth key is not \"type\"");
	return 0;
}

static int check_header_value(struct parser *p, struct jsonline *jl,
			      const struct jsonline_member *m)
{
	const struct jsonline_value *v = &m->v;
	size_t i;

	switch (jl->n) {
	case 0:
		if (v->kind != JSONLINE_INT || v->neg)
			return fail(p, value_start(v), "seq is not a non-negative integer");
		jl->seq = v->u;
		break;
	case 1:
		if (v->kind != JSONLINE_STRING || v->len != 64)
			return fail(p, value_start(v), "prev is not 64 hex digits");
		for (i = 0; i < 64; i++)
			if (cjson_hexval(p->s[v->off + i]) < 0)
				return fail(p, v->off + i, "prev is not 64 lowercase hex digits");
		jl->prev = (const char *)p->s + v->off;
		break;
	case 2:
		if (v->kind != JSONLINE_INT)
			return fail(p, value_start(v), "ts is not an integer");
		if (!v->neg && v->u > INT64_MAX)
			return fail(p, value_start(v), "ts does not fit int64");
		jl->ts = v->neg ? (int64_t)(0 - v->u) : (int64_t)v->u;
		break;
	case 3:
		if (v->kind != JSONLINE_STRING)
			return fail(p, value_start(v), "type is not a string");
		break;
	}
	return 0;
}

int jsonline_parse(struct jsonline *jl, const char *line, size_t len, size_t *err_off,
		   const char **why)
{
	struct parser p = {.s = (const unsigned char *)line, .len = len};
	int err = 0;

	jl->line = line;
	jl->len = len;
	jl->n = 0;
	jl->prev = NULL;
	if (len > JSONLINE_MAX) {
		err = fail(&p, JSONLINE_MAX, "line longer than 8191 bytes");
		goto out;
	}
	if (!at(&p, '{')) {
		err = fail(&p, 0,
			   len && (line[0] == ' ' || line[0] == '\t')
				   ? "whitespace outside a string"
				   : "line does not start with {");
		goto out;
	}
	p.pos++;
	for (;;) {
		struct jsonline_member *m = &jl->m[jl->n];

		/* unreachable with lines <= JSONLINE_MAX, kept as the bound of m[] */
		if (jl->n >= JSONLINE_MAX_MEMBERS) {
			err = fail(&p, p.pos, "too many members");
			goto out;
		}
		err = parse_key(&p, jl, m);
		if (!err)
			err = check_header_key(&p, jl, m);
		if (!err)
			err = parse_value(&p, &m->v);
		if (!err)
			err = check_header_value(&p, jl, m);
		if (err)
			goto out;
		jl->n++;
		if (at(&p, '}'))
			break;
		if (!at(&p, ',')) {
			err = fail(&p, p.pos,
				   p.pos >= p.len ? "line ends inside the object"
				   : (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\r')
					   ? "whitespace outside a string"
					   : "expected , or }");
			goto out;
		}
		p.pos++;
	}
	if (jl->n < 4) {
		err = fail(&p, p.pos, "object ends before the header seq, prev, ts, type");
		goto out;
	}
	p.pos++;
	if (p.pos != len)
		err = fail(&p, p.pos,
			   (line[p.pos] == ' ' || line[p.pos] == '\t' || line[p.pos] == '\r')
				   ? "whitespace after the object"
				   : "bytes after the object");
out:
	if (err) {
		*err_off = p.err_off;
		*why = p.why;
	}
	return err;
}

const struct jsonline_member *jsonline_get(const struct jsonline *jl, const char *key)
{
	size_t n = strlen(key), i;

	for (i = 0; i < jl->n; i++)
		if (jl->m[i].key_len == n && !memcmp(jl->line + jl->m[i].key_off, key, n))
			return &jl->m[i];
	return NULL;
}

bool jsonline_str_is(const struct jsonline *jl, const struct jsonline_value *v, const char *s)
{
	/* Canonical encoding is unique, so comparing encoded bytes compares values. */
	return v->kind == JSONLINE_STRING && v->len == strlen(s) &&
	       !memcmp(jl->line + v->off, s, v->len);
}

bool jsonline_type_is(const struct jsonline *jl, const char *type)
{
	return jl->n >= 4 && jsonline_str_is(jl, &jl->m[3].v, type);
}

bool jsonline_key_is(const struct jsonline *jl, size_t i, const char *key)
{
	return i < jl->n && jl->m[i].key_len == strlen(key) &&
	       !memcmp(jl->line + jl->m[i].key_off, key, jl->m[i].key_len);
}

int jsonline_decode(const struct jsonline *jl, const struct jsonline_value *v, char *buf,
		    size_t size)
{
	if (v->kind != JSONLINE_STRING)
		return -EINVAL;
	return cjson_decode((const unsigned char *)jl->line + v->off, v->len, buf, size);
}

int jsonline_u64(const struct jsonline *jl, const char *key, uint64_t *out)
{
	const struct jsonline_member *m = jsonline_get(jl, key);

	if (!m)
		return -ENOENT;
	if (m->v.kind != JSONLINE_INT || m->v.neg)
		return -EINVAL;
	*out = m->v.u;
	return 0;
}

int jsonline_i64(const struct jsonline *jl, const char *key, int64_t *out)
{
	const struct jsonline_member *m = jsonline_get(jl, key);

	if (!m)
		return -ENOENT;
	if (m->v.kind != JSONLINE_INT || (!m->v.neg && m->v.u > INT64_MAX))
		return -EINVAL;
	*out = m->v.neg ? (int64_t)(0 - m->v.u) : (int64_t)m->v.u;
	return 0;
}

int jsonline_str(const struct jsonline *jl, const char *key, char *buf, size_t size)
{
	const struct jsonline_member *m = jsonline_get(jl, key);

	if (!m)
		return -ENOENT;
	return jsonline_decode(jl, &m->v, buf, size);
}

int jsonline_array_next(const struct jsonline *jl, const struct jsonline_value *v, size_t *pos,
			struct jsonline_value *elem)
{
	struct parser p = {.s = (const unsigned char *)jl->line, .len = (size_t)v->off + v->len};

	if (v->kind != JSONLINE_ARRAY)
		return -EINVAL;
	p.pos = *pos ? *pos : (size_t)v->off + 1;
	if (at(&p, ']'))
		return 0;
	if (at(&p, ','))
		p.pos++;
	/* the parse validated the array: an element is a string or an integer */
	if (at(&p, '"') ? parse_string(&p, elem) : parse_int(&p, elem))
		return -EINVAL;
	*pos = p.pos;
	return 1;
}
