// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A small strict JSON reader: see json.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cjson.h"
#include "json.h"
#include "util.h"

struct parser {
	const char *s;
	size_t len, pos;
	char *why;
	size_t why_len;
	int err; /* the first failure: later ones keep its message */
};

static int fail(struct parser *p, const char *what)
{
	if (!p->err) {
		util_fmt(p->why, p->why_len, "byte %zu: %s", p->pos, what);
		p->err = -EINVAL;
	}
	return p->err;
}

static int oom(struct parser *p)
{
	if (!p->err) {
		util_fmt(p->why, p->why_len, "out of memory");
		p->err = -ENOMEM;
	}
	return p->err;
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

void json_free(struct json *j)
{
	while (j) {
		struct json *next = j->next;

		json_free(j->child);
		free(j->key);
		free(j->str);
		free(j);
		j = next;
	}
}

/* Not cjson_hexval: RFC 8259 takes either case here, the canonical form only lower case. */
static int hexval(char h)
{
	if (h >= '0' && h <= '9')
		return h - '0';
	if (h >= 'a' && h <= 'f')
		return h - 'a' + 10;
	if (h >= 'A' && h <= 'F')
		return h - 'A' + 10;
	return -1;
}

static int hex4(struct parser *p, size_t at, unsigned int *v)
{
	int i, h;

	if (at + 4 > p->len)
		return fail(p, "short \\u escape");
	*v = 0;
	for (i = 0; i < 4; i++) {
		h = hexval(p->s[at + i]);
		if (h < 0)
			return fail(p, "bad \\u escape");
		*v = *v * 16 + (unsigned int)h;
	}
	return 0;
}

static size_t put_utf8(char *out, unsigned int cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The string at p->pos (its opening quote), decoded into a new buffer *out. */
static int parse_string(struct parser *p, char **out)
{
	size_t start = p->pos + 1, end, o = 0;
	char *buf;

	*out = NULL;
	if (p->pos >= p->len || p->s[p->pos] != '"')
		return fail(p, "expected a string");
	/* Decoded is never longer than encoded: size the buffer by the closing quote. */
	for (end = start; end < p->len && p->s[end] != '"'; end++)
		if (p->s[end] == '\\')
			end++;
	if (end >= p->len) {
		p->pos = p->len;
		return fail(p, "unterminated string");
	}
	buf = malloc(end - start + 1);
	if (!buf)
		return oom(p);
	p->pos = start;
	while (p->pos < end) {
		unsigned char ch = (unsigned char)p->s[p->pos];
		unsigned int cp, lo;
		size_t k;

		if (ch < 0x20) {
			fail(p, "control character in a string");
			goto bad;
		}
		if (ch >= 0x80) {
			/* valid UTF-8 is one definition, the canonical writer's (RFC 3629) */
			k = cjson_utf8_len((const unsigned char *)p->s + p->pos, end - p->pos);
			if (!k) {
				fail(p, "invalid UTF-8 in a string");
				goto bad;
			}
			memcpy(buf + o, p->s + p->pos, k);
			o += k;
			p->pos += k;
			continue;
		}
		if (ch != '\\') {
			buf[o++] = (char)ch;
			p->pos++;
			continue;
		}
		switch (p->s[p->pos + 1]) {
		case '"': case '\\': case '/':
			buf[o++] = p->s[p->pos + 1];
			break;
		case 'b': buf[o++] = '\b'; break;
		case 'f': buf[o++] = '\f'; break;
		case 'n': buf[o++] = '\n'; break;
		case 'r': buf[o++] = '\r'; break;
		case 't': buf[o++] = '\t'; break;
		case 'u':
			if (hex4(p, p->pos + 2, &cp))
				goto bad;
			if (cp == 0) {
				fail(p, "\\u0000 in a string");
				goto bad;
			}
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				fail(p, "lone low surrogate");
				goto bad;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (p->pos + 12 > end || p->s[p->pos + 6] != '\\' ||
				    p->s[p->pos + 7] != 'u' || hex4(p, p->pos + 8, &lo) ||
				    lo < 0xdc00 || lo > 0xdfff) {
					fail(p, "high surrogate without its low surrogate");
					goto bad;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p->pos += 6;
			}
			/* six bytes of escape (twelve for a pair) make at most four */
			o += put_utf8(buf + o, cp);
			p->pos += 4;
			break;
		default:
			fail(p, "unknown escape");
			goto bad;
		}
		p->pos += 2;
	}
	buf[o] = '\0';
	p->pos = end + 1;
	*out = buf;
	return 0;
bad:
	free(buf);
	return p->err;
}

static int parse_number(struct parser *p, struct json *j)
{
	size_t start = p->pos;

	if (p->pos < p->len && p->s[p->pos] == '-')
		p->pos++;
	if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
		return fail(p, "bad number");
	if (p->s[p->pos] == '0')
		p->pos++;
	else
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
			p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
			return fail(p, "bad number: no digit after '.'");
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
			return fail(p, "bad number: no digit in the exponent");
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
			p->pos++;
	}
	j->type = JSON_NUMBER;
	j->str = strndup(p->s + start, p->pos - start);
	return j->str ? 0 : oom(p);
}

static int parse_value(struct parser *p, struct json *j, int depth);

/* The elements (or members) of an array (object) at p->pos, its opening bracket. */
static int parse_container(struct parser *p, struct json *j, int depth)
{
	bool obj = p->s[p->pos] == '{';
	char close = obj ? '}' : ']';
	struct json **tail = &j->child;

	if (depth >= JSON_DEPTH_MAX)
		return fail(p, "nested too deep");
	j->type = obj ? JSON_OBJECT : JSON_ARRAY;
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		struct json *c = calloc(1, sizeof(*c));
		const struct json *d;

		if (!c)
			return oom(p);
		*tail = c;
		tail = &c->next;
		j->n++;
		skip_ws(p);
		if (obj) {
			size_t at = p->pos;

			if (parse_string(p, &c->key))
				return p->err;
			for (d = j->child; d != c; d = d->next)
				if (!strcmp(d->key, c->key)) {
					p->pos = at;
					return fail(p, "the same key twice in an object");
				}
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return fail(p, "expected ':'");
			p->pos++;
		}
		if (parse_value(p, c, depth + 1))
			return p->err;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			return 0;
		}
		return fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int parse_value(struct parser *p, struct json *j, int depth)
{
	skip_ws(p);
	if (p->pos >= p->len)
		return fail(p, "expected a value, found the end");
	switch (p->s[p->pos]) {
	case '{':
	case '[':
		return parse_container(p, j, depth);
	case '"':
		j->type = JSON_STRING;
		return parse_string(p, &j->str);
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = { "true", "false", "null" };
		size_t i, n;

		for (i = 0; i < 3; i++) {
			n = strlen(words[i]);
			if (p->len - p->pos >= n && !memcmp(p->s + p->pos, words[i], n)) {
				j->type = i == 2 ? JSON_NULL : JSON_BOOL;
				j->b = i == 0;
				p->pos += n;
				return 0;
			}
		}
		return fail(p, "unknown literal");
	}
	default:
		return parse_number(p, j);
	}
}

int json_parse(const char *text, size_t len, struct json **out, char *why, size_t why_len)
{
	struct parser p = { .s = text, .len = len, .why = why, .why_len = why_len };
	struct json *j;

	*out = NULL;
	if (why_len)
		why[0] = '\0';
	j = calloc(1, sizeof(*j));
	if (!j)
		return oom(&p);
	if (!parse_value(&p, j, 0)) {
		skip_ws(&p);
		if (p.pos != len)
			fail(&p, "bytes after the value");
	}
	if (p.err) {
		json_free(j);
		return p.err;
	}
	*out = j;
	return 0;
}

int json_read_file(const char *path, struct json **out, char *why, size_t why_len)
{
	size_t cap = 65536, len = 0;
	char *buf = NULL, *nb;
	int fd, err = 0;
	ssize_t n;

	*out = NULL;
	fd = util_open_regular(path, O_RDONLY, 0);
	if (fd < 0) {
		util_fmt(why, why_len, "%s", strerror(-fd));
		return fd;
	}
	for (;;) {
		if (!buf || len == cap) {
			if (buf)
				cap *= 2;
			if (cap > JSON_FILE_MAX + 1)
				cap = JSON_FILE_MAX + 1;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				util_fmt(why, why_len, "out of memory");
				goto out;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			util_fmt(why, why_len, "read: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > JSON_FILE_MAX) {
			err = -EFBIG;
			util_fmt(why, why_len, "longer than %u bytes", JSON_FILE_MAX);
			goto out;
		}
	}
	err = json_parse(buf, len, out, why, why_len);
out:
	free(buf);
	close(fd);
	return err;
}

const struct json *json_get(const struct json *j, const char *key)
{
	const struct json *c;

	if (!j || j->type != JSON_OBJECT)
		return NULL;
	for (c = j->child; c; c = c->next)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

const struct json *json_at(const struct json *j, size_t i)
{
	const struct json *c;

	if (!j || j->type != JSON_ARRAY)
		return NULL;
	for (c = j->child; c && i; c = c->next)
		i--;
	return c;
}

const char *json_str(const struct json *j)
{
	return j && j->type == JSON_STRING ? j->str : NULL;
}

int json_int(const struct json *j, int64_t *v)
{
	const char *s;
	bool neg;
	uint64_t u = 0;

	if (!j)
		return -ENOENT;
	if (j->type != JSON_NUMBER)
		return -EINVAL;
	s = j->str;
	neg = *s == '-';
	if (neg)
		s++;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL; /* a fraction or an exponent */
		if (u > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		u = u * 10 + (uint64_t)(*s - '0');
	}
	if (u > (uint64_t)INT64_MAX + neg)
		return -ERANGE;
	*v = neg ? (int64_t)(0 - u) : (int64_t)u;
	return 0;
}

struct json *json_new(enum json_type type, const char *str)
{
	struct json *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->type = type;
	if ((type == JSON_STRING || type == JSON_NUMBER) && !(j->str = strdup(str ? str : ""))) {
		free(j);
		return NULL;
	}
	return j;
}

int json_add(struct json *parent, const char *key, struct json *v, bool first)
{
	struct json **at;

	if (!parent || (parent->type != JSON_OBJECT && parent->type != JSON_ARRAY) ||
	    !key != (parent->type == JSON_ARRAY))
		return -EINVAL;
	if (key && json_get(parent, key))
		return -EEXIST;
	if (key && !(v->key = strdup(key)))
		return -ENOMEM;
	at = &parent->child;
	if (!first)
		while (*at)
			at = &(*at)->next;
	v->next = *at;
	*at = v;
	parent->n++;
	return 0;
}

void json_write(FILE *f, const struct json *j)
{
	const struct json *c;

	switch (j->type) {
	case JSON_NULL:
		fputs("null", f);
		break;
	case JSON_BOOL:
		fputs(j->b ? "true" : "false", f);
		break;
	case JSON_NUMBER:
		fputs(j->str, f); /* the text it was read as: no precision lost */
		break;
	case JSON_STRING:
		cjson_fput_string(f, j->str);
		break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		fputc(j->type == JSON_ARRAY ? '[' : '{', f);
		for (c = j->child; c; c = c->next) {
			if (c != j->child)
				fputc(',', f);
			if (j->type == JSON_OBJECT) {
				cjson_fput_string(f, c->key);
				fputc(':', f);
			}
			json_write(f, c);
		}
		fputc(j->type == JSON_ARRAY ? ']' : '}', f);
		break;
	}
}
