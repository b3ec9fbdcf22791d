// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Egress policy: the strict YAML parser and the LPM compiler (contract in policy.h).
 *
 * The parser is a small recursive descent over libyaml's event stream that knows the schema: each
 * key, type and value is checked at the moment it is read, so an unexpected shape fails at its own
 * line and column before libyaml has looked any further, and no document tree is ever built.
 * Memory therefore tracks what the policy keeps, and the limits in policy.h bound that.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <yaml.h>

#include "../bpf/addr.bpf.h"
#include "policy.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Longest piece of a scalar quoted back in a message: keeps every message on one short line. */
#define ERR_VALUE_MAX 64
#define QUOTE_LEN (ERR_VALUE_MAX * 4 + 8)
#define WHERE_LEN 128
/* "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128" plus the NUL. */
#define CIDR_STR_LEN (INET6_ADDRSTRLEN + 4)
/* Items shown per list in the summary: a 100k-CIDR policy must not print 100k lines. */
#define SUMMARY_LIST_MAX 32

static const char *const blackhole_text =
	"169.254.0.0/16, fe80::/10, fd00:ec2::/32 and every IPv6 form that embeds 169.254.0.0/16 "
	"(v4-mapped, IPv4-compatible, NAT64, SIIT, 6to4, Teredo, ISATAP)";

struct pos {
	unsigned int line;
	unsigned int column;
};

struct pctx {
	yaml_parser_t parser;
	yaml_event_t ev; /* the current event, valid while have_ev */
	bool have_ev;
	const char *name;
	const unsigned char *buf;
	size_t len;
	char *err;
	size_t err_len;
	struct policy *p;
	size_t rules_cap;
	struct pos *name_pos; /* per rule, where "name:" is; line 0 when the rule has none */
	size_t name_pos_cap;
	size_t n_items; /* sequence elements so far, against POLICY_MAX_ITEMS */
	size_t n_cidrs;
};

static const char *const top_keys[] = {
	"default", "mode", "deny_errno", "rules", "log", "alert_on", "request_access", "sockets",
	"require",
};
enum {
	TOP_DEFAULT,
	TOP_MODE,
	TOP_DENY_ERRNO,
	TOP_RULES,
	TOP_LOG,
	TOP_ALERT_ON,
	TOP_REQUEST,
	TOP_SOCKETS,
	TOP_REQUIRE,
};

static const char *const rule_keys[] = {
	"name",
	"hosts",
	"cidrs",
	"ports",
	"protocols",
	"methods",
	"max_request_bytes",
	"max_response_bytes",
	"max_total_request_bytes",
	"max_total_response_bytes",
};
enum {
	R_NAME,
	R_HOSTS,
	R_CIDRS,
	R_PORTS,
	R_PROTOCOLS,
	R_METHODS,
	R_MAX_REQ,
	R_MAX_RESP,
	R_MAX_TOTAL_REQ,
	R_MAX_TOTAL_RESP,
};

static const char *const default_words[] = {"deny", "allow"};
static const char *const mode_words[] = {"enforce", "report"};
static const char *const log_words[] = {"allow", "deny"};
static const char *const proto_words[] = {"tcp", "udp", "icmp"};
static const unsigned int proto_bits[] = {SL_PROTO_TCP, SL_PROTO_UDP, SL_PROTO_ICMP};
/*
 * Socket kinds beyond TCP and UDP (packet sockets cannot be allowed: no hook judges them), and
 * io_uring, which the seccomp filter refuses unless listed: it creates sockets unseen by it.
 */
static const char *const socket_words[] = {"ping", "raw", "io_uring"};
static const unsigned int socket_bits[] = {SL_SOCKETS_PING, SL_SOCKETS_RAW, SL_SOCKETS_IO_URING};
/* Layers a run must have, or it does not start. */
static const char *const require_words[] = {"lsm"};
static const unsigned int require_bits[] = {POLICY_REQUIRE_LSM};
static const char *const method_words[] = {
	"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
};

static const struct {
	const char *name;
	int err;
} errno_names[] = {
	{"EPERM", EPERM},
	{"EACCES", EACCES},
	{"ECONNREFUSED", ECONNREFUSED},
	{"ENETUNREACH", ENETUNREACH},
	{"EHOSTUNREACH", EHOSTUNREACH},
};

/*
 * Plain scalars other YAML tools read as null or as a boolean (YAML 1.1 included, since libyaml
 * and PyYAML speak it). In a string field they are refused: the same file must not mean a string
 * here and "false" to the next tool that reads it.
 */
static const char *const null_words[] = {"~", "null", "Null", "NULL"};
static const char *const bool_words[] = {
	"true", "True", "TRUE", "false", "False", "FALSE", "yes", "Yes", "YES",
	"no",	"No",	"NO",	"on",	 "On",	  "ON",	   "off", "Off", "OFF",
};

static void set_err(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(struct pctx *x, const yaml_mark_t *m, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int where_fmt(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Messages longer than err_len are cut: the caller chose the size, and the line stays one line. */
static void set_err(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !err_len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
}

static int where_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

static bool words_has(const char *const *words, size_t n, const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(words[i]) == len && !memcmp(words[i], s, len))
			return true;
	return false;
}

/* "a, b, c" into buf; a list that does not fit ends in "...". */
static const char *join_words(const char *const *words, size_t n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", words[i]);

		if (w < 0 || (size_t)w >= len - off) {
			if (len > 4)
				memcpy(buf + len - 4, "...", 4);
			break;
		}
		off += (size_t)w;
	}
	return buf;
}

/*
 * A scalar quoted for a message: at most ERR_VALUE_MAX bytes, everything outside printable ASCII
 * escaped, so a hostile value can neither break the line nor drive the user's terminal.
 */
static const char *quote(const unsigned char *s, size_t len, char *buf, size_t buf_len)
{
	size_t off = 0, n = len < ERR_VALUE_MAX ? len : ERR_VALUE_MAX;

	buf[off++] = '"';
	for (size_t i = 0; i < n && off + 6 < buf_len; i++) {
		unsigned char ch = s[i];

		if (ch == '"' || ch == '\\') {
			buf[off++] = '\\';
			buf[off++] = (char)ch;
		} else if (ch >= 0x20 && ch < 0x7f) {
			buf[off++] = (char)ch;
		} else {
			off += (size_t)snprintf(buf + off, buf_len - off, "\\x%02x", ch);
		}
	}
	if (n < len && off + 5 < buf_len) {
		memcpy(buf + off, "...", 3);
		off += 3;
	}
	buf[off++] = '"';
	buf[off] = '\0';
	return buf;
}

static const char *describe(const yaml_event_t *ev, char *buf, size_t len)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.length)
			return "an empty value";
		return quote(ev->data.scalar.value, ev->data.scalar.length, buf, len);
	case YAML_SEQUENCE_START_EVENT:
		return "a sequence";
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return "the end of the collection";
	default:
		return "the end of the document";
	}
}

static int perr(struct pctx *x, const yaml_mark_t *m, const char *where, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	set_err(x->err, x->err_len, "%s:%zu:%zu: %s: %s", x->name, m->line + 1, m->column + 1,
		where, msg);
	return -EINVAL;
}

/* "expected WHAT, got VALUE" about the current event, at its start. */
static int expected(struct pctx *x, const char *where, const char *what)
{
	char q[QUOTE_LEN];

	return perr(x, &x->ev.start_mark, where, "expected %s, got %s", what,
		    describe(&x->ev, q, sizeof(q)));
}

static int oom(struct pctx *x)
{
	set_err(x->err, x->err_len, "%s: out of memory", x->name);
	return -ENOMEM;
}

static int syntax_error(struct pctx *x)
{
	const yaml_parser_t *ps = &x->parser;
	const char *problem = ps->problem ? ps->problem : "malformed YAML";
	size_t line = 1, column = 1;

	switch (ps->error) {
	case YAML_MEMORY_ERROR:
		return oom(x);
	case YAML_READER_ERROR:
		/* The reader reports a byte offset, not a mark: count the lines up to it. */
		for (size_t i = 0; i < ps->problem_offset && i < x->len; i++) {
			column++;
			if (x->buf[i] == '\n') {
				line++;
				column = 1;
			}
		}
		set_err(x->err, x->err_len, "%s:%zu:%zu: syntax error: %s", x->name, line, column,
			problem);
		return -EINVAL;
	default:
		if (ps->context)
			set_err(x->err, x->err_len, "%s:%zu:%zu: syntax error: %s (%s at line %zu)",
				x->name, ps->problem_mark.line + 1, ps->problem_mark.column + 1,
				problem, ps->context, ps->context_mark.line + 1);
		else
			set_err(x->err, x->err_len, "%s:%zu:%zu: syntax error: %s", x->name,
				ps->problem_mark.line + 1, ps->problem_mark.column + 1, problem);
		return -EINVAL;
	}
}

/*
 * Advance to the next event. Aliases are refused (a policy is plain data, and aliases are how a
 * few hundred bytes of YAML expand into gigabytes); anchors and tags go with them, since an anchor
 * only exists to be aliased and a tag could change what a scalar means.
 */
static int next(struct pctx *x, const char *where)
{
	const yaml_char_t *anchor = NULL, *tag = NULL;
	char q[QUOTE_LEN];

	if (x->have_ev) {
		yaml_event_delete(&x->ev);
		x->have_ev = false;
	}
	if (!yaml_parser_parse(&x->parser, &x->ev))
		return syntax_error(x);
	x->have_ev = true;

	switch (x->ev.type) {
	case YAML_ALIAS_EVENT:
		return perr(
			x, &x->ev.start_mark, where,
			"expected plain data, got the alias *%s (aliases can expand exponentially)",
			x->ev.data.alias.anchor);
	case YAML_SCALAR_EVENT:
		anchor = x->ev.data.scalar.anchor;
		tag = x->ev.data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = x->ev.data.sequence_start.anchor;
		tag = x->ev.data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = x->ev.data.mapping_start.anchor;
		tag = x->ev.data.mapping_start.tag;
		break;
	default:
		break;
	}
	if (anchor)
		return perr(
			x, &x->ev.start_mark, where,
			"expected plain data, got the anchor &%s (anchors and aliases are refused)",
			anchor);
	if (tag)
		return perr(x, &x->ev.start_mark, where,
			    "expected plain data, got the tag %s (tags are refused)",
			    quote(tag, strlen((const char *)tag), q, sizeof(q)));
	return 0;
}

/*
 * Read the next key of the mapping at where. Returns 1 with *idx set, 0 at the end of the mapping.
 * first_line[] remembers where each key was seen, for the duplicate-key message.
 */
static int read_key(struct pctx *x, const char *where, const char *const *keys, size_t n_keys,
		    unsigned int *first_line, size_t *idx)
{
	char list[256], q[QUOTE_LEN];
	const unsigned char *s;
	size_t len;
	int err;

	err = next(x, where);
	if (err)
		return err;
	if (x->ev.type == YAML_MAPPING_END_EVENT)
		return 0;
	if (x->ev.type != YAML_SCALAR_EVENT)
		return expected(x, where, "a key");

	s = x->ev.data.scalar.value;
	len = x->ev.data.scalar.length;
	for (size_t i = 0; i < n_keys; i++) {
		if (strlen(keys[i]) != len || memcmp(keys[i], s, len))
			continue;
		if (first_line[i])
			return perr(x, &x->ev.start_mark, where,
				    "duplicate key '%s' (first at line %u)", keys[i],
				    first_line[i]);
		first_line[i] = (unsigned int)x->ev.start_mark.line + 1;
		*idx = i;
		return 1;
	}
	return perr(x, &x->ev.start_mark, where, "unknown key, expected one of %s, got %s",
		    join_words(keys, n_keys, list, sizeof(list)), describe(&x->ev, q, sizeof(q)));
}

/* Control characters (C0, DEL, and C1 as UTF-8) never belong in a policy string. */
static bool has_control(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] < 0x20 || s[i] == 0x7f)
			return true;
		if (s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
			return true;
	}
	return false;
}

/* The current event as a non-empty string: a scalar, not null or a boolean, no control bytes. */
static int string_value(struct pctx *x, const char *where, const char *what,
			const unsigned char **s, size_t *len)
{
	const yaml_event_t *ev = &x->ev;
	char q[QUOTE_LEN];

	if (ev->type != YAML_SCALAR_EVENT || !ev->data.scalar.length)
		return expected(x, where, what);
	*s = ev->data.scalar.value;
	*len = ev->data.scalar.length;
	if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		bool is_null = words_has(null_words, ARRAY_SIZE(null_words), *s, *len);

		if (is_null || words_has(bool_words, ARRAY_SIZE(bool_words), *s, *len))
			return perr(x, &ev->start_mark, where,
				    "expected %s, got %s (YAML reads it as %s; quote it to mean "
				    "the string)",
				    what, quote(*s, *len, q, sizeof(q)),
				    is_null ? "null" : "a boolean");
	}
	if (has_control(*s, *len))
		return perr(x, &ev->start_mark, where,
			    "expected %s without control characters, got %s", what,
			    quote(*s, *len, q, sizeof(q)));
	return 0;
}

static int dup_string(struct pctx *x, const unsigned char *s, size_t len, char **out)
{
	char *d;

	if (len == SIZE_MAX)
		return oom(x);
	d = malloc(len + 1);
	if (!d)
		return oom(x);
	memcpy(d, s, len);
	d[len] = '\0';
	*out = d;
	return 0;
}

/* Make room for need elements of size bytes in *arr, doubling; every product is checked. */
static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 4;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return -ENOMEM;
	n = realloc(*arr, ncap * size);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

/* Is the current event one of words (case-insensitively if nocase)? *idx is its index. */
static bool match_word(const struct pctx *x, const char *const *words, size_t n, bool nocase,
		       size_t *idx)
{
	const unsigned char *s;
	size_t len;

	if (x->ev.type != YAML_SCALAR_EVENT)
		return false;
	s = x->ev.data.scalar.value;
	len = x->ev.data.scalar.length;
	for (size_t i = 0; i < n; i++) {
		if (strlen(words[i]) != len)
			continue;
		if (nocase ? !strncasecmp(words[i], (const char *)s, len)
			   : !memcmp(words[i], s, len)) {
			*idx = i;
			return true;
		}
	}
	return false;
}

static int keyword(struct pctx *x, const char *where, const char *const *words, size_t n,
		   bool nocase, size_t *idx)
{
	char list[160], what[180];

	if (match_word(x, words, n, nocase, idx))
		return 0;
	snprintf(what, sizeof(what), "one of %s", join_words(words, n, list, sizeof(list)));
	return expected(x, where, what);
}

static int seq_start(struct pctx *x, const char *where, const char *what)
{
	if (x->ev.type != YAML_SEQUENCE_START_EVENT)
		return expected(x, where, what);
	return 0;
}

/*
 * Advance to element i of the sequence at where, whose path is written to iw. Returns 1 with the
 * element current, 0 at the end of the sequence.
 */
static int seq_item(struct pctx *x, const char *where, size_t i, char *iw, size_t iw_len)
{
	int err;

	err = where_fmt(iw, iw_len, "%s[%zu]", where, i);
	if (err)
		return perr(x, &x->ev.start_mark, where, "path too long");
	err = next(x, iw);
	if (err)
		return err;
	if (x->ev.type == YAML_SEQUENCE_END_EVENT)
		return 0;
	if (i >= POLICY_MAX_LIST)
		return perr(x, &x->ev.start_mark, where, "expected at most %d elements, got more",
			    POLICY_MAX_LIST);
	if (x->n_items >= POLICY_MAX_ITEMS)
		return perr(x, &x->ev.start_mark, where,
			    "expected at most %d list elements in the whole policy, got more",
			    POLICY_MAX_ITEMS);
	x->n_items++;
	return 1;
}

static int empty_seq(struct pctx *x, const yaml_mark_t *m, const char *where, const char *what)
{
	return perr(
		x, m, where,
		"expected a non-empty sequence of %s (an empty list would be ambiguous), got []",
		what);
}

static bool parse_port(const unsigned char *s, size_t len, uint16_t *out)
{
	unsigned int v = 0;

	/* A leading zero is refused: YAML 1.1 tools read "0443" as octal. */
	if (!len || len > 5 || s[0] == '0')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned int)(s[i] - '0');
	}
	if (v > 65535)
		return false;
	*out = (uint16_t)v;
	return true;
}

/* A YAML integer with optional underscores between digits: 500_000_000. */
static int parse_u64(const unsigned char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (!len || s[0] < '0' || s[0] > '9' || s[len - 1] == '_')
		return -EINVAL;
	if (s[0] == '0' && len > 1)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned int d;

		if (s[i] == '_') {
			if (s[i - 1] == '_')
				return -EINVAL;
			continue;
		}
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned int)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static void cidr_mask(struct policy_cidr *c)
{
	size_t n = c->family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < n; i++) {
		unsigned int bits = (unsigned int)i * 8;

		if (bits >= c->prefixlen)
			c->addr[i] = 0;
		else if (c->prefixlen - bits < 8)
			c->addr[i] &= (uint8_t)(0xff << (8 - (c->prefixlen - bits)));
	}
	if (c->family == AF_INET)
		memset(c->addr + 4, 0, 12);
}

/* Does addr/plen lie inside the prefix p/pp (addresses of the same length)? */
static bool in_prefix(const uint8_t *addr, unsigned int plen, const uint8_t *p, unsigned int pp)
{
	unsigned int full = pp / 8, rest = pp % 8;

	if (plen < pp)
		return false;
	if (memcmp(addr, p, full))
		return false;
	return !rest || !((addr[full] ^ p[full]) & (uint8_t)(0xff << (8 - rest)));
}

/*
 * Whether every address of c is blackholed, as the kernel programs decide it (bpf/addr.bpf.h):
 * its first and its last one are. Each form of the blackhole is a range of addresses over which
 * the embedded IPv4 address only grows (or, Teredo's inverted client, only shrinks), so a CIDR
 * whose two ends are in it lies inside it whole.
 */
bool policy_cidr_in_blackhole(const struct policy_cidr *c)
{
	uint8_t first[16], last[16];
	unsigned int len, i;
	bool emb;
	__u32 v4;

	if (!c || (c->family != AF_INET && c->family != AF_INET6))
		return false;
	len = c->family == AF_INET ? 4 : 16;
	for (i = 0; i < len; i++) {
		unsigned int fixed = c->prefixlen > i * 8 ? c->prefixlen - i * 8 : 0;
		uint8_t mask = fixed >= 8 ? 0xff : (uint8_t)(0xff << (8 - fixed));

		first[i] = c->addr[i] & mask;
		last[i] = (uint8_t)(c->addr[i] | ~mask);
	}
	return addr_class(c->family, first, &v4, &emb) == SL_ADDR_BLACKHOLE &&
	       addr_class(c->family, last, &v4, &emb) == SL_ADDR_BLACKHOLE;
}

int policy_cidr_format(const struct policy_cidr *c, char *buf, size_t buf_len)
{
	char a[INET6_ADDRSTRLEN];
	int n;

	if (!c || (c->family != AF_INET && c->family != AF_INET6))
		return -EINVAL;
	if (!inet_ntop(c->family, c->addr, a, sizeof(a)))
		return -errno;
	n = snprintf(buf, buf_len, "%s/%u", a, c->prefixlen);
	if (n < 0 || (size_t)n >= buf_len)
		return -ENOSPC;
	return 0;
}

const char *policy_errno_name(int err)
{
	for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++)
		if (errno_names[i].err == err)
			return errno_names[i].name;
	return NULL;
}

/* Parse "ADDR[/LEN]" into c, or write why not (the tail of a message) into why. */
static int parse_cidr(const unsigned char *s, size_t len, struct policy_cidr *c, char *why,
		      size_t why_len)
{
	static const char *const shape = "expected a CIDR like 10.0.0.0/8 or 2001:db8::/32";
	char a[CIDR_STR_LEN], q[QUOTE_LEN], fixed[CIDR_STR_LEN];
	unsigned int max, plen = 0;
	char *slash;
	struct policy_cidr m;

	quote(s, len, q, sizeof(q));
	if (len >= sizeof(a) || memchr(s, '\0', len)) {
		snprintf(why, why_len, "%s, got %s", shape, q);
		return -EINVAL;
	}
	memcpy(a, s, len);
	a[len] = '\0';
	memset(c, 0, sizeof(*c));
	c->family = strchr(a, ':') ? AF_INET6 : AF_INET;
	max = c->family == AF_INET ? 32 : 128;

	slash = strchr(a, '/');
	if (slash) {
		const char *d = slash + 1;
		size_t dl = strlen(d);

		*slash = '\0';
		if (!dl || dl > 3 || (d[0] == '0' && dl > 1))
			goto bad_len;
		for (size_t i = 0; i < dl; i++) {
			if (d[i] < '0' || d[i] > '9')
				goto bad_len;
			plen = plen * 10 + (unsigned int)(d[i] - '0');
		}
		if (plen > max)
			goto bad_len;
	} else {
		plen = max;
	}
	/* glibc's inet_pton takes only dotted quads and refuses leading zeros and zone ids. */
	if (inet_pton(c->family, a, c->addr) != 1) {
		snprintf(why, why_len, "%s, got %s", shape, q);
		return -EINVAL;
	}
	c->prefixlen = (uint8_t)plen;

	m = *c;
	cidr_mask(&m);
	if (memcmp(m.addr, c->addr, sizeof(c->addr))) {
		/* Strict: a silently widened 10.0.0.1/8 is an allowlist nobody meant to write. */
		if (policy_cidr_format(&m, fixed, sizeof(fixed)))
			fixed[0] = '\0';
		snprintf(why, why_len,
			 "expected a network address, %.*s has host bits set (did you mean %s?)",
			 (int)len, (const char *)s, fixed);
		return -EINVAL;
	}
	if (policy_cidr_in_blackhole(c)) {
		snprintf(why, why_len,
			 "no policy can allow the blackhole (169.254.0.0/16, fe80::/10, "
			 "fd00:ec2::/32 in every form), got %s",
			 q);
		return -EINVAL;
	}
	return 0;

bad_len:
	snprintf(why, why_len, "expected a prefix length 0-%u, got %s", max, q);
	return -EINVAL;
}

/*
 * Validate a host name or "*.suffix" and return it lower-cased without a trailing dot. Only the
 * name shape is checked here; what it resolves to is the resolver's business.
 */
static int parse_host(struct pctx *x, const char *where, char **out)
{
	static const char *const what = "a host name like \"pypi.org\" or \"*.example.com\"";
	const unsigned char *s;
	size_t len, start = 0, label = 0;
	bool digits_only = true;
	unsigned char tmp[16];
	char q[QUOTE_LEN], *h;
	int err;

	err = string_value(x, where, what, &s, &len);
	if (err)
		return err;
	quote(s, len, q, sizeof(q));
	if (len > 1 && s[len - 1] == '.')
		len--;
	if (len > 253)
		return perr(x, &x->ev.start_mark, where,
			    "expected a host name of at most 253 characters, got %s", q);
	if (memchr(s, ':', len)) {
		char a[INET6_ADDRSTRLEN];

		if (len < sizeof(a)) {
			memcpy(a, s, len);
			a[len] = '\0';
			if (inet_pton(AF_INET6, a, tmp) == 1)
				goto address;
		}
		return expected(x, where, what);
	}
	if (len >= 2 && s[0] == '*' && s[1] == '.')
		start = 2;
	if (start == len)
		return expected(x, where, what);

	for (size_t i = start; i <= len; i++) {
		unsigned char ch = i < len ? s[i] : '.';

		if (ch == '.') {
			if (!label || label > 63 || s[i - 1] == '-')
				return expected(x, where, what);
			label = 0;
			continue;
		}
		if (!label) {
			if (ch == '-')
				return expected(x, where, what);
			digits_only = true;
		}
		label++;
		if (ch >= '0' && ch <= '9')
			continue;
		digits_only = false;
		if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z')
			continue;
		if (ch == '-')
			continue;
		return expected(x, where, what);
	}
	/* No top-level domain is numeric: "10.0.0.1" or "10.1" is an address, not a name. */
	if (digits_only)
		goto address;

	err = dup_string(x, s, len, &h);
	if (err)
		return err;
	for (size_t i = 0; i < len; i++)
		if (h[i] >= 'A' && h[i] <= 'Z')
			h[i] = (char)(h[i] | 0x20);
	*out = h;
	return 0;

address:
	return perr(x, &x->ev.start_mark, where,
		    "expected a host name, got the address %s (addresses belong in cidrs)", q);
}

static int parse_method(struct pctx *x, const char *where, char **out)
{
	char list[160], what[200];
	size_t idx;

	if (!match_word(x, method_words, ARRAY_SIZE(method_words), true, &idx)) {
		snprintf(what, sizeof(what), "an HTTP method (%s)",
			 join_words(method_words, ARRAY_SIZE(method_words), list, sizeof(list)));
		return expected(x, where, what);
	}
	*out = strdup(method_words[idx]);
	return *out ? 0 : oom(x);
}

static int parse_alert(struct pctx *x, const char *where, char **out)
{
	struct policy_alert a;
	const unsigned char *s;
	char why[160], q[QUOTE_LEN];
	size_t len;
	int err;

	err = string_value(x, where, "an alert condition (a string)", &s, &len);
	if (err)
		return err;
	err = dup_string(x, s, len, out);
	if (err)
		return err;
	/* An alert that cannot be evaluated would stay silent forever: refuse it now. */
	if (policy_alert_parse(*out, &a, why, sizeof(why)))
		return perr(x, &x->ev.start_mark, where,
			    "expected \"deny\" or \"allow where FIELD OP NUMBER\" (FIELD: "
			    "request_bytes, response_bytes, bytes, duration_ms; OP: > >= < <= ==), "
			    "got %s: %s", quote(s, len, q, sizeof(q)), why);
	return 0;
}

/* One word of an alert condition: letters, digits, '_' or operator characters. */
static const char *alert_word(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	while (*s == ' ')
		s++;
	while (*s && *s != ' ' && n + 1 < len)
		buf[n++] = *s++;
	buf[n] = '\0';
	return s;
}

int policy_alert_parse(const char *s, struct policy_alert *out, char *why, size_t why_len)
{
	static const char *const fields[] = { NULL, "request_bytes", "response_bytes", "bytes",
					       "duration_ms" };
	static const char *const ops[] = { NULL, ">", ">=", "<", "<=", "==" };
	char w[6][32];
	unsigned int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < 6; i++)
		s = alert_word(s, w[i], sizeof(w[i]));
	if (!strcmp(w[0], "deny") && !w[1][0]) {
		out->kind = POLICY_ALERT_DENY;
		return 0;
	}
	if (strcmp(w[0], "allow") || strcmp(w[1], "where") || !w[4][0] || w[5][0] || *s) {
		set_err(why, why_len, "not one of the two forms");
		return -EINVAL;
	}
	out->kind = POLICY_ALERT_FLOW;
	for (i = 1; i < ARRAY_SIZE(fields); i++)
		if (!strcmp(w[2], fields[i]))
			out->field = (enum policy_alert_field)i;
	for (i = 1; i < ARRAY_SIZE(ops); i++)
		if (!strcmp(w[3], ops[i]))
			out->op = (enum policy_alert_op)i;
	if (!out->field || !out->op) {
		set_err(why, why_len, "unknown %s \"%s\"", !out->field ? "field" : "operator",
			!out->field ? w[2] : w[3]);
		return -EINVAL;
	}
	if (parse_u64((const unsigned char *)w[4], strlen(w[4]), &out->value)) {
		set_err(why, why_len, "\"%s\" is not a whole number", w[4]);
		return -EINVAL;
	}
	return 0;
}

bool policy_alert_flow_matches(const struct policy_alert *a, uint64_t req_bytes,
			       uint64_t resp_bytes, uint64_t duration_ms)
{
	uint64_t v;

	if (a->kind != POLICY_ALERT_FLOW)
		return false;
	switch (a->field) {
	case POLICY_FIELD_REQUEST_BYTES:
		v = req_bytes;
		break;
	case POLICY_FIELD_RESPONSE_BYTES:
		v = resp_bytes;
		break;
	case POLICY_FIELD_BYTES:
		v = req_bytes + resp_bytes;
		break;
	default:
		v = duration_ms;
	}
	switch (a->op) {
	case POLICY_OP_GT:
		return v > a->value;
	case POLICY_OP_GE:
		return v >= a->value;
	case POLICY_OP_LT:
		return v < a->value;
	case POLICY_OP_LE:
		return v <= a->value;
	default:
		return v == a->value;
	}
}

/* A sequence of strings, each read by item(); the sequence must be non-empty unless allow_empty. */
static int parse_string_list(struct pctx *x, const char *where, const char *what,
			     int (*item)(struct pctx *x, const char *where, char **out),
			     bool allow_empty, char ***arr, size_t *n)
{
	yaml_mark_t start = x->ev.start_mark;
	char iw[WHERE_LEN], seq_what[160];
	size_t cap = 0;
	int err;

	snprintf(seq_what, sizeof(seq_what), "a sequence of %s", what);
	err = seq_start(x, where, seq_what);
	if (err)
		return err;
	for (size_t i = 0;; i++) {
		char *s = NULL;

		err = seq_item(x, where, i, iw, sizeof(iw));
		if (err < 0)
			return err;
		if (!err)
			break;
		if (grow((void **)arr, &cap, *n + 1, sizeof(**arr)))
			return oom(x);
		err = item(x, iw, &s);
		if (err)
			return err;
		(*arr)[(*n)++] = s;
	}
	if (!*n && !allow_empty)
		return empty_seq(x, &start, where, what);
	return 0;
}

static int parse_cidrs(struct pctx *x, const char *where, struct policy_rule *r)
{
	yaml_mark_t start = x->ev.start_mark;
	char iw[WHERE_LEN], why[512];
	size_t cap = 0;
	int err;

	err = seq_start(x, where, "a sequence of CIDRs");
	if (err)
		return err;
	for (size_t i = 0;; i++) {
		const unsigned char *s;
		size_t len;

		err = seq_item(x, where, i, iw, sizeof(iw));
		if (err < 0)
			return err;
		if (!err)
			break;
		err = string_value(x, iw, "a CIDR like 10.0.0.0/8 or 2001:db8::/32", &s, &len);
		if (err)
			return err;
		if (x->n_cidrs >= POLICY_MAX_CIDRS)
			return perr(x, &x->ev.start_mark, iw,
				    "expected at most %d CIDRs in the whole policy, got more",
				    POLICY_MAX_CIDRS);
		if (grow((void **)&r->cidrs, &cap, r->n_cidrs + 1, sizeof(*r->cidrs)))
			return oom(x);
		if (parse_cidr(s, len, &r->cidrs[r->n_cidrs], why, sizeof(why)))
			return perr(x, &x->ev.start_mark, iw, "%s", why);
		r->n_cidrs++;
		x->n_cidrs++;
	}
	if (!r->n_cidrs)
		return empty_seq(x, &start, where, "CIDRs");
	return 0;
}

static int parse_ports(struct pctx *x, const char *where, struct policy_rule *r)
{
	static const char *const what = "a port 1-65535 or a range LO-HI";
	yaml_mark_t start = x->ev.start_mark;
	char iw[WHERE_LEN], q[QUOTE_LEN];
	size_t cap = 0;
	int err;

	err = seq_start(x, where, "a sequence of ports");
	if (err)
		return err;
	for (size_t i = 0;; i++) {
		const unsigned char *s, *dash;
		uint16_t lo, hi;
		size_t len;

		err = seq_item(x, where, i, iw, sizeof(iw));
		if (err < 0)
			return err;
		if (!err)
			break;
		/* Quoted or not: "8000-8080" has to be a string anyway, so both spell a port. */
		if (x->ev.type != YAML_SCALAR_EVENT)
			return expected(x, iw, what);
		s = x->ev.data.scalar.value;
		len = x->ev.data.scalar.length;
		dash = memchr(s, '-', len);
		if (!dash) {
			if (!parse_port(s, len, &lo))
				return expected(x, iw, what);
			hi = lo;
		} else {
			size_t ll = (size_t)(dash - s);

			if (!parse_port(s, ll, &lo) || !parse_port(dash + 1, len - ll - 1, &hi))
				return expected(x, iw, what);
			if (lo > hi)
				return perr(x, &x->ev.start_mark, iw,
					    "expected a range LO-HI with LO <= HI, got %s",
					    quote(s, len, q, sizeof(q)));
		}
		if (grow((void **)&r->ports, &cap, r->n_ports + 1, sizeof(*r->ports)))
			return oom(x);
		r->ports[r->n_ports].lo = lo;
		r->ports[r->n_ports].hi = hi;
		r->n_ports++;
	}
	if (!r->n_ports)
		return empty_seq(x, &start, where, "ports");
	return 0;
}

/*
 * A sequence of keywords, each adding its bit to *mask (protocols, socket kinds, log kinds).
 * what: the expected value, for errors ("a sequence of protocols (tcp, udp, icmp)").
 */
static int parse_keyword_set(struct pctx *x, const char *where, const char *what,
			     const char *const *words, const unsigned int *bits, size_t n,
			     bool nocase, unsigned int *mask)
{
	char iw[WHERE_LEN];
	int err;

	err = seq_start(x, where, what);
	if (err)
		return err;
	for (size_t i = 0;; i++) {
		size_t idx;

		err = seq_item(x, where, i, iw, sizeof(iw));
		if (err < 0)
			return err;
		if (!err)
			return 0;
		err = keyword(x, iw, words, n, nocase, &idx);
		if (err)
			return err;
		*mask |= bits[idx];
	}
}

static int parse_protocols(struct pctx *x, const char *where, struct policy_rule *r)
{
	yaml_mark_t start = x->ev.start_mark;
	unsigned int mask = 0;
	int err;

	err = parse_keyword_set(x, where, "a sequence of protocols (tcp, udp, icmp)", proto_words,
				proto_bits, ARRAY_SIZE(proto_words), true, &mask);
	if (err)
		return err;
	r->protocols |= mask;
	if (!r->protocols)
		return empty_seq(x, &start, where, "protocols");
	return 0;
}

static int parse_bytes(struct pctx *x, const char *where, uint64_t *out)
{
	static const char *const what = "a non-negative integer like 500_000_000";
	const yaml_event_t *ev = &x->ev;
	char q[QUOTE_LEN];
	int err;

	/* Unquoted only: a quoted number is a string to every other YAML reader. */
	if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return expected(x, where, "an unquoted non-negative integer like 500_000_000");
	err = parse_u64(ev->data.scalar.value, ev->data.scalar.length, out);
	if (err == -ERANGE)
		return perr(x, &ev->start_mark, where, "expected an integer at most %llu, got %s",
			    (unsigned long long)UINT64_MAX,
			    quote(ev->data.scalar.value, ev->data.scalar.length, q, sizeof(q)));
	if (err)
		return expected(x, where, what);
	return 0;
}

static int parse_rule(struct pctx *x, const char *where, size_t idx)
{
	struct policy_rule *r = &x->p->rules[idx];
	unsigned int first[ARRAY_SIZE(rule_keys)] = {0};
	yaml_mark_t start = x->ev.start_mark;
	char kw[WHERE_LEN];
	bool any = false;
	size_t key;
	int err;

	if (x->ev.type != YAML_MAPPING_START_EVENT)
		return expected(x, where, "a rule (a mapping with hosts or cidrs)");
	r->line = (unsigned int)start.line + 1;
	r->column = (unsigned int)start.column + 1;

	while ((err = read_key(x, where, rule_keys, ARRAY_SIZE(rule_keys), first, &key)) == 1) {
		any = true;
		err = where_fmt(kw, sizeof(kw), "%s.%s", where, rule_keys[key]);
		if (err)
			return perr(x, &x->ev.start_mark, where, "path too long");
		err = next(x, kw);
		if (err)
			return err;
		switch (key) {
		case R_NAME: {
			const unsigned char *s;
			size_t len;

			err = string_value(x, kw, "a rule name (a string)", &s, &len);
			if (!err && len > 255)
				err = perr(
					x, &x->ev.start_mark, kw,
					"expected a rule name of at most 255 bytes, got %zu bytes",
					len);
			if (!err)
				err = dup_string(x, s, len, &r->name);
			x->name_pos[idx].line = (unsigned int)x->ev.start_mark.line + 1;
			x->name_pos[idx].column = (unsigned int)x->ev.start_mark.column + 1;
			break;
		}
		case R_HOSTS:
			err = parse_string_list(x, kw, "host names", parse_host, false, &r->hosts,
						&r->n_hosts);
			break;
		case R_CIDRS:
			err = parse_cidrs(x, kw, r);
			break;
		case R_PORTS:
			err = parse_ports(x, kw, r);
			break;
		case R_PROTOCOLS:
			err = parse_protocols(x, kw, r);
			break;
		case R_METHODS:
			err = parse_string_list(x, kw, "HTTP methods", parse_method, false,
						&r->methods, &r->n_methods);
			break;
		case R_MAX_REQ:
			err = parse_bytes(x, kw, &r->max_request_bytes);
			r->has_max_request_bytes = !err;
			break;
		case R_MAX_RESP:
			err = parse_bytes(x, kw, &r->max_response_bytes);
			r->has_max_response_bytes = !err;
			break;
		case R_MAX_TOTAL_REQ:
			err = parse_bytes(x, kw, &r->max_total_request_bytes);
			r->has_max_total_request_bytes = !err;
			break;
		case R_MAX_TOTAL_RESP:
			err = parse_bytes(x, kw, &r->max_total_response_bytes);
			r->has_max_total_response_bytes = !err;
			break;
		}
		if (err)
			return err;
	}
	if (err)
		return err;
	if (!any)
		return perr(x, &start, where,
			    "expected a rule with hosts or cidrs, got an empty mapping");
	if (!r->n_hosts && !r->n_cidrs)
		return perr(x, &start, where,
			    "expected hosts or cidrs in every rule (for any destination: "
			    "cidrs: [\"0.0.0.0/0\", \"::/0\"]), got neither");
	/*
	 * A rule naming hosts defaults to TCP only: the server-name check binds a TLS flow to the
	 * names resolved for its address, but nothing in the kernel can read the server name of
	 * QUIC (encrypted in its Initial), so UDP to a shared address would reach any name it
	 * serves. UDP there must be asked for (and policy check says what it means).
	 */
	if (!first[R_PROTOCOLS])
		r->protocols = r->n_hosts ? SL_PROTO_TCP : SL_PROTO_TCP | SL_PROTO_UDP;
	return 0;
}

static int parse_rules(struct pctx *x, const char *where)
{
	struct policy *p = x->p;
	char iw[WHERE_LEN];
	int err;

	err = seq_start(x, where, "a sequence of rules");
	if (err)
		return err;
	for (size_t i = 0;; i++) {
		err = seq_item(x, where, i, iw, sizeof(iw));
		if (err < 0)
			return err;
		if (!err)
			break;
		if (p->n_rules >= POLICY_MAX_RULES)
			return perr(x, &x->ev.start_mark, where,
				    "expected at most %d rules, got more", POLICY_MAX_RULES);
		if (grow((void **)&p->rules, &x->rules_cap, p->n_rules + 1, sizeof(*p->rules)) ||
		    grow((void **)&x->name_pos, &x->name_pos_cap, p->n_rules + 1,
			 sizeof(*x->name_pos)))
			return oom(x);
		/* Counted before it is filled, so policy_free() releases a half-parsed rule. */
		memset(&p->rules[p->n_rules], 0, sizeof(*p->rules));
		memset(&x->name_pos[p->n_rules], 0, sizeof(*x->name_pos));
		p->n_rules++;
		err = parse_rule(x, iw, p->n_rules - 1);
		if (err)
			return err;
	}
	return 0;
}

static int parse_log(struct pctx *x, const char *where)
{
	static const unsigned int log_bits[] = {1, 2};
	unsigned int mask = 0;
	int err;

	err = parse_keyword_set(x, where, "a sequence of allow, deny", log_words, log_bits,
				ARRAY_SIZE(log_words), false, &mask);
	if (err)
		return err;
	x->p->log_allow = mask & 1;
	x->p->log_deny = mask & 2;
	return 0;
}

static int parse_sockets(struct pctx *x, const char *where)
{
	return parse_keyword_set(x, where, "a sequence of socket kinds (ping, raw, io_uring)",
				 socket_words, socket_bits, ARRAY_SIZE(socket_words), true,
				 &x->p->sockets);
}

static int parse_require(struct pctx *x, const char *where)
{
	return parse_keyword_set(x, where, "a sequence of layers (lsm)", require_words,
				 require_bits, ARRAY_SIZE(require_words), true, &x->p->require);
}

static int parse_top(struct pctx *x)
{
	static const char *const where = "top level";
	unsigned int first[ARRAY_SIZE(top_keys)] = {0};
	struct policy *p = x->p;
	const unsigned char *s;
	size_t key, idx, len;
	int err;

	while ((err = read_key(x, where, top_keys, ARRAY_SIZE(top_keys), first, &key)) == 1) {
		const char *kw = top_keys[key];

		err = next(x, kw);
		if (err)
			return err;
		switch (key) {
		case TOP_DEFAULT:
			err = keyword(x, kw, default_words, ARRAY_SIZE(default_words), false, &idx);
			if (!err)
				p->default_verdict =
					idx ? POLICY_DEFAULT_ALLOW : POLICY_DEFAULT_DENY;
			break;
		case TOP_MODE:
			err = keyword(x, kw, mode_words, ARRAY_SIZE(mode_words), false, &idx);
			if (!err)
				p->mode = idx ? SL_MODE_REPORT : SL_MODE_ENFORCE;
			break;
		case TOP_DENY_ERRNO: {
			const char *names[ARRAY_SIZE(errno_names)];

			for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++)
				names[i] = errno_names[i].name;
			err = keyword(x, kw, names, ARRAY_SIZE(names), false, &idx);
			if (!err)
				p->deny_errno = errno_names[idx].err;
			break;
		}
		case TOP_RULES:
			err = parse_rules(x, kw);
			break;
		case TOP_LOG:
			err = parse_log(x, kw);
			break;
		case TOP_ALERT_ON:
			err = parse_string_list(x, kw, "alert conditions", parse_alert, true,
						&p->alert_on, &p->n_alert_on);
			break;
		case TOP_REQUEST:
			err = string_value(x, kw, "a URL template (a string)", &s, &len);
			if (!err)
				err = dup_string(x, s, len, &p->request_access);
			break;
		case TOP_SOCKETS:
			err = parse_sockets(x, kw);
			break;
		case TOP_REQUIRE:
			err = parse_require(x, kw);
			break;
		}
		if (err)
			return err;
	}
	return err;
}

struct named {
	const char *name;
	size_t idx;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Rule names go into every log line: two rules with one name would make the log ambiguous.
 * Sorting keeps the check O(n log n) for the largest policy.
 */
/* alert_on, parsed once for the run (every string was checked as it was read). */
static int compile_alerts(struct pctx *x)
{
	struct policy *p = x->p;
	char why[160];
	size_t i;

	if (!p->n_alert_on)
		return 0;
	p->alerts = calloc(p->n_alert_on, sizeof(*p->alerts));
	if (!p->alerts)
		return oom(x);
	for (i = 0; i < p->n_alert_on; i++)
		if (policy_alert_parse(p->alert_on[i], &p->alerts[i], why, sizeof(why)))
			return -EINVAL;
	return 0;
}

static int check_rule_names(struct pctx *x)
{
	const struct policy *p = x->p;
	struct named *v = NULL;
	size_t n = 0;
	int err = 0;

	if (p->n_rules < 2)
		return 0;
	v = calloc(p->n_rules, sizeof(*v));
	if (!v)
		return oom(x);
	for (size_t i = 0; i < p->n_rules; i++)
		if (p->rules[i].name)
			v[n++] = (struct named){.name = p->rules[i].name, .idx = i};
	qsort(v, n, sizeof(*v), cmp_named);
	for (size_t i = 1; i < n; i++) {
		const struct pos *second = &x->name_pos[v[i].idx];
		char where[WHERE_LEN], q[QUOTE_LEN];
		yaml_mark_t m = {0};

		if (strcmp(v[i - 1].name, v[i].name))
			continue;
		m.line = second->line - 1;
		m.column = second->column - 1;
		snprintf(where, sizeof(where), "rules[%zu].name", v[i].idx);
		err = perr(x, &m, where,
			   "expected a unique rule name, got %s again (first at line %u)",
			   quote((const unsigned char *)v[i].name, strlen(v[i].name), q, sizeof(q)),
			   x->name_pos[v[i - 1].idx].line);
		break;
	}
	free(v);
	return err;
}

static int parse_stream(struct pctx *x)
{
	static const char *const where = "top level";
	static const char *const what =
		"a mapping of policy keys (default, mode, deny_errno, rules, log, alert_on, "
		"request_access)";
	int err;

	err = next(x, where); /* stream start */
	if (err)
		return err;
	err = next(x, where);
	if (err)
		return err;
	if (x->ev.type == YAML_STREAM_END_EVENT)
		return perr(x, &x->ev.start_mark, where, "expected %s, got an empty document",
			    what);
	err = next(x, where); /* the document's root */
	if (err)
		return err;
	if (x->ev.type == YAML_SCALAR_EVENT && !x->ev.data.scalar.length &&
	    x->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		return perr(x, &x->ev.start_mark, where, "expected %s, got an empty document",
			    what);
	if (x->ev.type != YAML_MAPPING_START_EVENT)
		return expected(x, where, what);
	err = parse_top(x);
	if (err)
		return err;
	err = next(x, where); /* document end */
	if (err)
		return err;
	err = next(x, where);
	if (err)
		return err;
	if (x->ev.type == YAML_DOCUMENT_START_EVENT)
		return perr(x, &x->ev.start_mark, where,
			    "expected one YAML document, got a second one");
	return 0;
}

int policy_load_buffer(const char *buf, size_t len, const char *name, struct policy **out,
		       char *err, size_t err_len)
{
	struct policy *p = NULL;
	bool parser_ok = false;
	struct pctx x;
	int ret;

	memset(&x, 0, sizeof(x));
	x.name = name ? name : "<buffer>";
	x.err = err;
	x.err_len = err_len;
	if (err && err_len)
		err[0] = '\0';
	if (!out || (!buf && len)) {
		set_err(err, err_len, "%s: invalid arguments", x.name);
		return -EINVAL;
	}
	if (len > POLICY_MAX_BYTES) {
		set_err(err, err_len, "%s: the policy is %zu bytes, more than the limit of %u",
			x.name, len, POLICY_MAX_BYTES);
		return -EFBIG;
	}
	/* libyaml asserts on a NULL input even when it is empty. */
	x.buf = buf ? (const unsigned char *)buf : (const unsigned char *)"";
	x.len = len;

	ret = -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto out_oom;
	p->path = strdup(x.name);
	if (!p->path)
		goto out_oom;
	p->default_verdict = POLICY_DEFAULT_DENY;
	p->mode = SL_MODE_ENFORCE;
	p->deny_errno = EPERM;
	p->log_allow = true;
	p->log_deny = true;
	x.p = p;
	/* the bytes parsed are the bytes named: no window between the digest and the parse */
	if (!EVP_Digest(x.buf, x.len, p->sha256, NULL, EVP_sha256(), NULL))
		goto out_oom;

	if (!yaml_parser_initialize(&x.parser))
		goto out_oom;
	parser_ok = true;
	yaml_parser_set_input_string(&x.parser, x.buf, x.len);

	ret = parse_stream(&x);
	if (!ret)
		ret = check_rule_names(&x);
	if (!ret)
		ret = compile_alerts(&x);
	goto out;

out_oom:
	ret = oom(&x);
out:
	if (x.have_ev)
		yaml_event_delete(&x.ev);
	if (parser_ok)
		yaml_parser_delete(&x.parser);
	free(x.name_pos);
	if (ret) {
		policy_free(p);
		return ret;
	}
	*out = p;
	return 0;
}

int policy_read_fd(int fd, const char *name, char **out, size_t *out_len, char *err,
		   size_t err_len)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int ret;

	/* Read to EOF whatever the file claims to be: st_size lies for pipes and procfs. */
	for (;;) {
		ssize_t n;

		if (len == cap) {
			/* One byte past the limit is enough to know the file is too large. */
			size_t want = cap ? cap * 2 : 65536;
			char *nb;

			if (cap > POLICY_MAX_BYTES) {
				set_err(err, err_len, "%s: the policy is more than %u bytes", name,
					POLICY_MAX_BYTES);
				ret = -EFBIG;
				goto fail;
			}
			if (want > (size_t)POLICY_MAX_BYTES + 1)
				want = (size_t)POLICY_MAX_BYTES + 1;
			nb = realloc(buf, want);
			if (!nb) {
				set_err(err, err_len, "%s: out of memory", name);
				ret = -ENOMEM;
				goto fail;
			}
			buf = nb;
			cap = want;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			set_err(err, err_len, "%s: read: %s", name, strerror(-ret));
			goto fail;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	*out = buf;
	*out_len = len;
	return 0;
fail:
	free(buf);
	return ret;
}

int policy_load_file(const char *path, struct policy **out, char *err, size_t err_len)
{
	size_t len = 0;
	char *buf = NULL;
	int fd, ret;

	if (err && err_len)
		err[0] = '\0';
	if (!path || !out) {
		set_err(err, err_len, "policy: invalid arguments");
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		set_err(err, err_len, "%s: %s", path, strerror(-ret));
		return ret;
	}
	ret = policy_read_fd(fd, path, &buf, &len, err, err_len);
	close(fd);
	if (!ret)
		ret = policy_load_buffer(buf, len, path, out, err, err_len);
	free(buf);
	return ret;
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_rules; i++) {
		struct policy_rule *r = &p->rules[i];

		free(r->name);
		free_strings(r->hosts, r->n_hosts);
		free(r->cidrs);
		free(r->ports);
		free_strings(r->methods, r->n_methods);
	}
	free(p->rules);
	free_strings(p->alert_on, p->n_alert_on);
	free(p->alerts);
	free(p->request_access);
	free(p->path);
	free(p);
}

uint16_t policy_rule_id(size_t rule_idx)
{
	return (uint16_t)(rule_idx + 1);
}

long policy_rule_index(const struct policy *p, uint32_t rule_id)
{
	if (!p || rule_id == SL_RULE_DEFAULT || rule_id > p->n_rules)
		return -1;
	return (long)rule_id - 1;
}

const struct policy_rule *policy_rule_of(const struct policy *p, uint32_t rule_id)
{
	long i = policy_rule_index(p, rule_id);

	return i < 0 ? NULL : &p->rules[i];
}

const char *policy_rule_id_name(const struct policy *p, uint32_t rule_id, char *buf,
				size_t buf_len)
{
	if (rule_id == SL_RULE_DEFAULT) {
		snprintf(buf, buf_len, "default");
		return buf;
	}
	/* out of range: "rule N", as policy_rule_name names a rule without a name */
	return policy_rule_name(p, (size_t)rule_id - 1, buf, buf_len);
}

const char *policy_rule_name(const struct policy *p, size_t rule_idx, char *buf, size_t buf_len)
{
	if (!buf || !buf_len)
		return "";
	if (p && rule_idx < p->n_rules && p->rules[rule_idx].name) {
		/* (on every record's path: a copy, not snprintf) */
		size_t n = strnlen(p->rules[rule_idx].name, buf_len - 1);

		memcpy(buf, p->rules[rule_idx].name, n);
		buf[n] = '\0';
	} else {
		snprintf(buf, buf_len, "rule %zu", rule_idx + 1);
	}
	return buf;
}

/* Compiler. */

struct citem {
	uint8_t addr[16]; /* host bits cleared; bytes 4-15 zero for IPv4 */
	uint8_t plen;
	uint32_t rule;
};

struct centry {
	uint8_t addr[16];
	uint8_t plen;
	struct sl_dst_rules val;
};

/* A rule's ports, sorted and with overlapping or adjacent ranges merged. */
struct rule_ports {
	struct policy_port_range *r;
	size_t n;
};

struct cctx {
	const struct policy *p;
	struct rule_ports *rp;
	struct sl_port_rule
		*tmp; /* the entries of the prefix being folded, before the size check */
	size_t tmp_cap;
	char *err;
	size_t err_len;
};

static int cmp_range(const void *a, const void *b)
{
	const struct policy_port_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int cmp_item(const void *a, const void *b)
{
	const struct citem *x = a, *y = b;
	int c = memcmp(x->addr, y->addr, sizeof(x->addr));

	if (c)
		return c;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

/* rule_id first: a scan that stops at the first match reports the first rule in policy order. */
static int cmp_entry(const void *a, const void *b)
{
	const struct sl_port_rule *x = a, *y = b;

	if (x->rule_id != y->rule_id)
		return x->rule_id < y->rule_id ? -1 : 1;
	if (x->protocols != y->protocols)
		return x->protocols < y->protocols ? -1 : 1;
	if (x->port_lo != y->port_lo)
		return x->port_lo < y->port_lo ? -1 : 1;
	return x->port_hi < y->port_hi ? -1 : x->port_hi > y->port_hi;
}

/* Sort ranges and merge those that overlap or touch (80-90 and 91-100 become 80-100). */
static size_t merge_ranges(struct policy_port_range *r, size_t n)
{
	size_t out = 0;

	if (!n)
		return 0;
	qsort(r, n, sizeof(*r), cmp_range);
	for (size_t i = 1; i < n; i++) {
		if ((unsigned int)r[i].lo <= (unsigned int)r[out].hi + 1) {
			if (r[i].hi > r[out].hi)
				r[out].hi = r[i].hi;
		} else {
			r[++out] = r[i];
		}
	}
	return out + 1;
}

/* Same as merge_ranges, per (rule_id, protocols), over port-rule entries. */
static size_t merge_entries(struct sl_port_rule *e, size_t n)
{
	size_t out = 0;

	if (!n)
		return 0;
	qsort(e, n, sizeof(*e), cmp_entry);
	for (size_t i = 1; i < n; i++) {
		struct sl_port_rule *o = &e[out];

		if (e[i].rule_id == o->rule_id && e[i].protocols == o->protocols &&
		    (unsigned int)e[i].port_lo <= (unsigned int)o->port_hi + 1) {
			if (e[i].port_hi > o->port_hi)
				o->port_hi = e[i].port_hi;
		} else {
			e[++out] = e[i];
		}
	}
	return out + 1;
}

static bool item_contains(const struct centry *q, const struct citem *p)
{
	return in_prefix(p->addr, p->plen, q->addr, q->plen);
}

static int too_many(struct cctx *c, int family, const struct citem *it, size_t n)
{
	struct policy_cidr pc = {.family = (uint8_t)family, .prefixlen = it->plen};
	char pfx[CIDR_STR_LEN], names[512], nb[300];
	size_t off = 0;

	memcpy(pc.addr, it->addr, sizeof(pc.addr));
	if (policy_cidr_format(&pc, pfx, sizeof(pfx)))
		snprintf(pfx, sizeof(pfx), "?");
	names[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w;

		if (i && c->tmp[i].rule_id == c->tmp[i - 1].rule_id)
			continue;
		policy_rule_id_name(c->p, c->tmp[i].rule_id, nb, sizeof(nb));
		w = snprintf(names + off, sizeof(names) - off, "%s%s", off ? ", " : "", nb);
		if (w < 0 || (size_t)w >= sizeof(names) - off) {
			memcpy(names + sizeof(names) - 4, "...", 4);
			break;
		}
		off += (size_t)w;
	}
	set_err(c->err, c->err_len,
		"%s: %s is covered by %zu port-rule entries, at most %d fit one LPM entry "
		"(rules: %s); merge port ranges or narrow the overlapping rules",
		c->p->path ? c->p->path : "policy", pfx, n, SL_MAX_PORT_RULES, names);
	return -E2BIG;
}

/*
 * Fold one family's prefixes. Sorted by (address, length), a prefix comes after every prefix that
 * contains it, and the prefixes containing the current one form a chain: a stack holds that chain,
 * and each prefix's value is its parent's already-folded value plus its own rules. O(n log n).
 */
static int fold_family(struct cctx *c, int family, struct citem *items, size_t n,
		       struct centry **out, size_t *n_out)
{
	size_t stack[129], sp = 0, no = 0;
	struct centry *e = NULL;
	int err = 0;

	*out = NULL;
	*n_out = 0;
	if (!n)
		return 0;
	qsort(items, n, sizeof(*items), cmp_item);
	e = calloc(n, sizeof(*e));
	if (!e)
		goto out_oom;

	for (size_t i = 0, j; i < n; i = j) {
		size_t nt = 0;

		for (j = i + 1; j < n && items[j].plen == items[i].plen &&
				!memcmp(items[j].addr, items[i].addr, sizeof(items[i].addr));
		     j++)
			;
		while (sp && !item_contains(&e[stack[sp - 1]], &items[i]))
			sp--;
		if (sp) {
			const struct sl_dst_rules *pv = &e[stack[sp - 1]].val;

			if (grow((void **)&c->tmp, &c->tmp_cap, pv->count, sizeof(*c->tmp)))
				goto out_oom;
			memcpy(c->tmp, pv->e, pv->count * sizeof(*c->tmp));
			nt = pv->count;
		}
		for (size_t k = i; k < j; k++) {
			const struct rule_ports *rp = &c->rp[items[k].rule];

			if (k > i && items[k].rule == items[k - 1].rule)
				continue;
			if (nt > SIZE_MAX - rp->n ||
			    grow((void **)&c->tmp, &c->tmp_cap, nt + rp->n, sizeof(*c->tmp)))
				goto out_oom;
			for (size_t r = 0; r < rp->n; r++) {
				c->tmp[nt++] = (struct sl_port_rule){
					.port_lo = rp->r[r].lo,
					.port_hi = rp->r[r].hi,
					.rule_id = policy_rule_id(items[k].rule),
					.protocols = c->p->rules[items[k].rule].protocols,
				};
			}
		}
		nt = merge_entries(c->tmp, nt);
		if (nt > SL_MAX_PORT_RULES) {
			err = too_many(c, family, &items[i], nt);
			goto out;
		}
		memcpy(e[no].addr, items[i].addr, sizeof(e[no].addr));
		e[no].plen = items[i].plen;
		e[no].val.count = (uint32_t)nt;
		memcpy(e[no].val.e, c->tmp, nt * sizeof(*c->tmp));
		/* Nested prefixes are strictly longer, so the chain holds at most 129 of them. */
		if (sp < ARRAY_SIZE(stack))
			stack[sp++] = no;
		no++;
	}
	*out = e;
	*n_out = no;
	return 0;

out_oom:
	set_err(c->err, c->err_len, "%s: out of memory", c->p->path ? c->p->path : "policy");
	err = -ENOMEM;
out:
	free(e);
	return err;
}

/*
 * A v6 CIDR inside ::ffff:0:0/96 (v4-mapped), 64:ff9b::/96 (NAT64) or ::/96 (IPv4-compatible)
 * names IPv4 destinations: the v6 programs judge those addresses by the IPv4 trie, so such a
 * CIDR is compiled to its IPv4 equivalent there (::ffff:10.0.0.0/104 becomes 10.0.0.0/8); left in
 * the v6 trie it would never match. Decided by bpf/addr.bpf.h's v6_prefix_embeds_v4, the
 * programs' own predicate on the CIDR's ends (:: and ::1 are not embeddings, so an
 * IPv4-compatible CIDR that covers them stays IPv6).
 */
static bool v4_mapped(const struct policy_cidr *pc, struct citem *it)
{
	unsigned int plen;
	__u32 w[4], v4;

	if (pc->family != AF_INET6)
		return false;
	memcpy(w, pc->addr, sizeof(w));
	if (!v6_prefix_embeds_v4(w, pc->prefixlen, &v4, &plen))
		return false;
	memset(it->addr, 0, sizeof(it->addr));
	memcpy(it->addr, &v4, 4);
	it->plen = (uint8_t)plen;
	return true;
}

/*
 * Whether CIDR c covers addr (4 or 16 bytes, by family) as the compiled tries judge it: an
 * address the programs judge as IPv4 (v6_route) against the IPv4 trie, where a CIDR that names
 * IPv4 destinations (v4_mapped) is. policy_cidr_match and policy_cidr_covers (the preexisting
 * scan, replay, the resolver's private-space check) ask through here, so that none of them can
 * read ::ffff:10.0.0.0/104 or ::ffff:10.1.2.3 otherwise than the kernel does.
 */
int policy_judged_addr(int family, const uint8_t *addr, uint8_t out[16])
{
	__u32 w[4], v4 = 0;
	enum sl_v6_route route;

	memset(out, 0, 16);
	if (family == AF_INET6) {
		memcpy(w, addr, sizeof(w));
		route = v6_route(w, &v4);
		if (route == SL_V6_AS_V4 || route == SL_V6_BLACKHOLE_V4) {
			memcpy(out, &v4, 4);
			return AF_INET;
		}
		memcpy(out, addr, 16);
		return AF_INET6;
	}
	memcpy(out, addr, 4);
	return AF_INET;
}

static bool cidr_covers_judged(const struct policy_cidr *c, int family, const uint8_t *addr)
{
	struct citem it;
	uint8_t a[16];

	family = policy_judged_addr(family, addr, a);
	if (v4_mapped(c, &it))
		return family == AF_INET && in_prefix(a, 32, it.addr, it.plen);
	return c->family == family &&
	       in_prefix(a, family == AF_INET ? 32 : 128, c->addr, c->prefixlen);
}

static int check_rule(const struct policy *p, size_t i, char *err, size_t err_len)
{
	const struct policy_rule *r = &p->rules[i];
	const char *path = p->path ? p->path : "policy";

	if (!r->protocols || (r->protocols & ~(SL_PROTO_TCP | SL_PROTO_UDP | SL_PROTO_ICMP)))
		goto bad;
	if (r->n_cidrs && !r->cidrs)
		goto bad;
	if (r->n_ports && !r->ports)
		goto bad;
	for (size_t k = 0; k < r->n_ports; k++)
		if (r->ports[k].lo > r->ports[k].hi)
			goto bad;
	for (size_t k = 0; k < r->n_cidrs; k++) {
		const struct policy_cidr *pc = &r->cidrs[k];

		if (pc->family == AF_INET && pc->prefixlen <= 32)
			continue;
		if (pc->family == AF_INET6 && pc->prefixlen <= 128)
			continue;
		goto bad;
	}
	return 0;
bad:
	/* The parser never builds such a rule: this guards policies assembled by hand. */
	set_err(err, err_len, "%s: rule %zu is malformed", path, i + 1);
	return -EINVAL;
}

/*
 * The ports and protocols of every rule, indexed by rule_id: addresses the run's resolver learns
 * for a host rule are judged against these (sl_rule_ports); and every rule's byte caps, which
 * flows copy at connect() (sl_rule_caps).
 */
static int compile_rule_ports(const struct policy *p, struct policy_compiled *pc, char *err,
			      size_t err_len)
{
	const char *path = p->path ? p->path : "policy";

	pc->n_rule_ports = p->n_rules + 1;
	pc->rule_ports = calloc(pc->n_rule_ports, sizeof(*pc->rule_ports));
	pc->rule_caps = calloc(pc->n_rule_ports, sizeof(*pc->rule_caps));
	if (!pc->rule_ports || !pc->rule_caps) {
		set_err(err, err_len, "%s: out of memory", path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct policy_rule *r = &p->rules[i];
		struct sl_port_rule e[SL_MAX_PORT_RULES + 1];
		struct policy_port_range any = {.lo = 0, .hi = 65535};
		const struct policy_port_range *ports = r->n_ports ? r->ports : &any;
		size_t n_ports = r->n_ports ? r->n_ports : 1, n = 0;
		struct policy_port_range *merged;

		merged = calloc(n_ports, sizeof(*merged));
		if (!merged) {
			set_err(err, err_len, "%s: out of memory", path);
			return -ENOMEM;
		}
		memcpy(merged, ports, n_ports * sizeof(*merged));
		n_ports = merge_ranges(merged, n_ports);
		if (n_ports > SL_MAX_PORT_RULES) {
			free(merged);
			set_err(err, err_len,
				"%s:%u:%u: rules[%zu]: %zu port ranges, at most %d fit the kernel's "
				"per-rule table", path, r->line, r->column, i, n_ports,
				SL_MAX_PORT_RULES);
			return -E2BIG;
		}
		for (size_t k = 0; k < n_ports; k++)
			e[n++] = (struct sl_port_rule){.port_lo = merged[k].lo,
						       .port_hi = merged[k].hi,
						       .rule_id = policy_rule_id(i),
						       .protocols = r->protocols};
		free(merged);
		pc->rule_ports[i + 1].count = (uint32_t)n;
		memcpy(pc->rule_ports[i + 1].e, e, n * sizeof(e[0]));
		/* stored plus one, so that 0 can mean "no cap" and a cap of 0 bytes still counts */
		pc->rule_caps[i + 1].max_req = r->has_max_request_bytes ? r->max_request_bytes + 1 : 0;
		pc->rule_caps[i + 1].max_resp =
			r->has_max_response_bytes ? r->max_response_bytes + 1 : 0;
		pc->rule_caps[i + 1].max_total_req =
			r->has_max_total_request_bytes ? r->max_total_request_bytes + 1 : 0;
		pc->rule_caps[i + 1].max_total_resp =
			r->has_max_total_response_bytes ? r->max_total_response_bytes + 1 : 0;
	}
	return 0;
}

int policy_compile(const struct policy *p, struct policy_compiled **out, char *err, size_t err_len)
{
	struct citem *i4 = NULL, *i6 = NULL;
	struct centry *e4 = NULL, *e6 = NULL;
	struct policy_compiled *pc = NULL;
	struct cctx c = {.p = p, .err = err, .err_len = err_len};
	size_t n4 = 0, n6 = 0, ne4 = 0, ne6 = 0, total = 0;
	const char *path;
	int ret;

	if (err && err_len)
		err[0] = '\0';
	if (!p || !out || (p->n_rules && !p->rules)) {
		set_err(err, err_len, "policy: invalid arguments");
		return -EINVAL;
	}
	path = p->path ? p->path : "policy";
	if (p->n_rules > POLICY_MAX_RULES) {
		set_err(err, err_len, "%s: %zu rules, at most %d fit a rule_id", path, p->n_rules,
			POLICY_MAX_RULES);
		return -E2BIG;
	}
	for (size_t i = 0; i < p->n_rules; i++) {
		ret = check_rule(p, i, err, err_len);
		if (ret)
			return ret;
		total += p->rules[i].n_cidrs;
		if (total > POLICY_MAX_CIDRS) {
			set_err(err, err_len, "%s: more than %d CIDRs", path, POLICY_MAX_CIDRS);
			return -E2BIG;
		}
	}

	ret = -ENOMEM;
	if (p->n_rules) {
		c.rp = calloc(p->n_rules, sizeof(*c.rp));
		if (!c.rp)
			goto out_oom;
	}
	if (total) {
		i4 = calloc(total, sizeof(*i4));
		i6 = calloc(total, sizeof(*i6));
		if (!i4 || !i6)
			goto out_oom;
	}
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct policy_rule *r = &p->rules[i];
		struct rule_ports *rp = &c.rp[i];

		/* Host rules have no kernel entries until the resolver fills them: fail closed. */
		if (!r->n_cidrs)
			continue;
		rp->n = r->n_ports ? r->n_ports : 1;
		rp->r = calloc(rp->n, sizeof(*rp->r));
		if (!rp->r)
			goto out_oom;
		if (r->n_ports)
			memcpy(rp->r, r->ports, r->n_ports * sizeof(*rp->r));
		else
			rp->r[0] = (struct policy_port_range){.lo = 0, .hi = 65535};
		rp->n = merge_ranges(rp->r, rp->n);

		for (size_t k = 0; k < r->n_cidrs; k++) {
			const struct policy_cidr *cd = &r->cidrs[k];
			struct policy_cidr m = *cd;
			struct citem it = {.rule = (uint32_t)i};

			if (v4_mapped(cd, &it)) {
				i4[n4++] = it;
				continue;
			}
			cidr_mask(&m);
			memcpy(it.addr, m.addr, sizeof(it.addr));
			it.plen = m.prefixlen;
			if (m.family == AF_INET)
				i4[n4++] = it;
			else
				i6[n6++] = it;
		}
	}

	ret = fold_family(&c, AF_INET, i4, n4, &e4, &ne4);
	if (!ret)
		ret = fold_family(&c, AF_INET6, i6, n6, &e6, &ne6);
	if (ret)
		goto out;

	ret = -ENOMEM;
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		goto out_oom;
	if (ne4) {
		pc->v4 = calloc(ne4, sizeof(*pc->v4));
		if (!pc->v4)
			goto out_oom;
	}
	if (ne6) {
		pc->v6 = calloc(ne6, sizeof(*pc->v6));
		if (!pc->v6)
			goto out_oom;
	}
	for (size_t i = 0; i < ne4; i++) {
		pc->v4[i].key.prefixlen = e4[i].plen;
		memcpy(pc->v4[i].key.addr, e4[i].addr, sizeof(pc->v4[i].key.addr));
		pc->v4[i].val = e4[i].val;
	}
	for (size_t i = 0; i < ne6; i++) {
		pc->v6[i].key.prefixlen = e6[i].plen;
		memcpy(pc->v6[i].key.addr, e6[i].addr, sizeof(pc->v6[i].key.addr));
		pc->v6[i].val = e6[i].val;
	}
	pc->n_v4 = ne4;
	pc->n_v6 = ne6;
	ret = compile_rule_ports(p, pc, err, err_len);
	if (ret)
		goto out;
	*out = pc;
	pc = NULL;
	ret = 0;
	goto out;

out_oom:
	set_err(err, err_len, "%s: out of memory", path);
	ret = -ENOMEM;
out:
	policy_compiled_free(pc);
	if (c.rp)
		for (size_t i = 0; i < p->n_rules; i++)
			free(c.rp[i].r);
	free(c.rp);
	free(c.tmp);
	free(i4);
	free(i6);
	free(e4);
	free(e6);
	return ret;
}

void policy_compiled_free(struct policy_compiled *c)
{
	if (!c)
		return;
	free(c->rule_ports);
	free(c->rule_caps);
	free(c->v4);
	free(c->v6);
	free(c);
}

/* Summary. */

static void print_strings(FILE *f, char *const *v, size_t n)
{
	for (size_t i = 0; i < n && i < SUMMARY_LIST_MAX; i++)
		fprintf(f, "%s%s", i ? ", " : "", v[i]);
	if (n > SUMMARY_LIST_MAX)
		fprintf(f, " and %zu more", n - SUMMARY_LIST_MAX);
}

static void print_rule(FILE *f, const struct policy *p, size_t i)
{
	const struct policy_rule *r = &p->rules[i];
	char nb[300], cb[CIDR_STR_LEN];

	fprintf(f, "\nrule %zu: %s (line %u)\n", i + 1, policy_rule_name(p, i, nb, sizeof(nb)),
		r->line);
	fprintf(f, "  enforced in the kernel:\n");
	if (r->n_hosts) {
		fprintf(f, "    hosts: ");
		print_strings(f, r->hosts, r->n_hosts);
		fprintf(f, "\n      (through the run's resolver: only listed names resolve, and only "
			   "the addresses it answered are reachable;\n       TLS to them, on any "
			   "port (on 443 every flow must be TLS), must name, in its ClientHello, a "
			   "host\n       that resolved to that address)\n");
	}
	if (r->n_cidrs) {
		fprintf(f, "    cidrs: ");
		for (size_t k = 0; k < r->n_cidrs && k < SUMMARY_LIST_MAX; k++) {
			struct citem it;

			if (policy_cidr_format(&r->cidrs[k], cb, sizeof(cb)))
				snprintf(cb, sizeof(cb), "?");
			fprintf(f, "%s%s", k ? ", " : "", cb);
			if (v4_mapped(&r->cidrs[k], &it)) {
				struct policy_cidr v4 = {.family = AF_INET, .prefixlen = it.plen};

				memcpy(v4.addr, it.addr, 4);
				if (!policy_cidr_format(&v4, cb, sizeof(cb)))
					fprintf(f, " (as IPv4 %s)", cb);
			}
		}
		if (r->n_cidrs > SUMMARY_LIST_MAX)
			fprintf(f, " and %zu more", r->n_cidrs - SUMMARY_LIST_MAX);
		fprintf(f, "\n");
	}
	fprintf(f, "    ports: ");
	if (!r->n_ports)
		fprintf(f, "any");
	for (size_t k = 0; k < r->n_ports && k < SUMMARY_LIST_MAX; k++) {
		if (r->ports[k].lo == r->ports[k].hi)
			fprintf(f, "%s%u", k ? ", " : "", r->ports[k].lo);
		else
			fprintf(f, "%s%u-%u", k ? ", " : "", r->ports[k].lo,
				r->ports[k].hi);
	}
	if (r->n_ports > SUMMARY_LIST_MAX)
		fprintf(f, " and %zu more", r->n_ports - SUMMARY_LIST_MAX);
	fprintf(f, "\n    protocols:");
	for (size_t k = 0, n = 0; k < ARRAY_SIZE(proto_words); k++)
		if (r->protocols & proto_bits[k])
			fprintf(f, "%s %s", n++ ? "," : "", proto_words[k]);
	fprintf(f, "%s\n", r->protocols & SL_PROTO_ICMP ? " (icmp: any type, no ports)" : "");
	if (r->has_max_request_bytes)
		fprintf(f, "    max_request_bytes: %llu per flow\n",
			(unsigned long long)r->max_request_bytes);
	if (r->has_max_response_bytes)
		fprintf(f, "    max_response_bytes: %llu per flow\n",
			(unsigned long long)r->max_response_bytes);
	if (r->has_max_total_request_bytes)
		fprintf(f, "    max_total_request_bytes: %llu per host, over the run (connected flows)\n",
			(unsigned long long)r->max_total_request_bytes);
	if (r->has_max_total_response_bytes)
		fprintf(f, "    max_total_response_bytes: %llu per host, over the run (connected flows)\n",
			(unsigned long long)r->max_total_response_bytes);
	if (!r->n_methods && !(r->n_hosts && (r->protocols & SL_PROTO_UDP)))
		return;
	fprintf(f, "  not enforced:\n");
	if (r->n_hosts && (r->protocols & SL_PROTO_UDP))
		fprintf(f, "    udp to these hosts' addresses: the server name is not checked: "
			   "QUIC (HTTP/3) carries it in\n      its Initial packet, encrypted, and "
			   "the kernel cannot bind it to the name without decrypting\n      the "
			   "Initial; UDP to an address learned for these names may reach any name "
			   "that\n      address serves (on a shared CDN address: any site there). "
			   "Leave udp out unless that is meant\n");
	if (!r->n_methods)
		return;
	fprintf(f, "    methods ");
	print_strings(f, r->methods, r->n_methods);
	fprintf(f, ": cannot be enforced in the kernel: HTTP methods are inside TLS\n");
}

void policy_print_summary(const struct policy *p, const struct policy_compiled *c, FILE *out)
{
	const char *en, *log = "nothing";

	if (!p || !out)
		return;
	en = policy_errno_name(p->deny_errno);
	fprintf(out, "policy: %s\n", p->path ? p->path : "(unnamed)");
	if (p->mode == SL_MODE_REPORT)
		fprintf(out, "mode: report (nothing is denied: would-be denials are logged; the "
			     "blackhole is still enforced)\n");
	else
		fprintf(out, "mode: enforce (denied connections fail with %s)\n", en ? en : "?");
	fprintf(out, "default: %s\n",
		p->default_verdict == POLICY_DEFAULT_ALLOW
			? "allow (connections no rule matches are allowed)"
			: "deny (connections no rule allows are denied)");
	fprintf(out, "deny errno: %s\n", en ? en : "?");
	fprintf(out, "blackhole: always blackholed, whatever the policy: %s\n", blackhole_text);
	if (p->log_allow && p->log_deny)
		log = "allow, deny";
	else if (p->log_allow || p->log_deny)
		log = p->log_allow ? "allow" : "deny";
	fprintf(out, "log: %s\n", log);
	if (p->n_alert_on) {
		fprintf(out, "alert_on (raised on stderr, in the log and in --alerts): ");
		for (size_t i = 0; i < p->n_alert_on && i < SUMMARY_LIST_MAX; i++)
			fprintf(out, "%s\"%s\"", i ? ", " : "", p->alert_on[i]);
		if (p->n_alert_on > SUMMARY_LIST_MAX)
			fprintf(out, " and %zu more", p->n_alert_on - SUMMARY_LIST_MAX);
		fprintf(out, "\n");
	}
	if (p->request_access)
		fprintf(out, "request_access: %s\n", p->request_access);
	fprintf(out, "sockets: tcp, udp (and unix, netlink)");
	for (size_t k = 0; k < ARRAY_SIZE(socket_words); k++)
		if (p->sockets & socket_bits[k] & ~SL_SOCKETS_IO_URING)
			fprintf(out, ", %s", socket_words[k]);
	fprintf(out, "%s\n", p->sockets & ~SL_SOCKETS_IO_URING ?
			" (their packets are judged one by one by the backstop, against rules that "
			"list their protocol)" : "");
	fprintf(out, "socket families: unix, inet, inet6, netlink; any other (vsock, packet, …) is "
		     "refused by the workload's seccomp filter (EAFNOSUPPORT, logged)\n");
	if (p->sockets & SL_SOCKETS_IO_URING)
		fprintf(out, "io_uring: allowed (sockets: [io_uring]); what it costs: io_uring can "
			     "create sockets of any family (vsock, packet, …) unseen by the seccomp "
			     "filter, so only the BPF-LSM layer (when it loads) still refuses those; "
			     "connect and sendmsg of inet sockets are still judged by the cgroup "
			     "hooks\n");
	else
		fprintf(out, "io_uring: refused (io_uring_setup fails with ENOSYS, logged): it can "
			     "create sockets of any family unseen by the seccomp filter; "
			     "sockets: [io_uring] allows it\n");
	if (p->require & POLICY_REQUIRE_LSM)
		fprintf(out, "require: lsm (a run fails before starting the command if the BPF-LSM "
			     "layer does not load)\n");
	fprintf(out, "rules: %zu\n", p->n_rules);
	for (size_t i = 0; i < p->n_rules; i++)
		print_rule(out, p, i);
	if (c)
		fprintf(out, "\nkernel LPM entries: %zu IPv4, %zu IPv6\n", c->n_v4, c->n_v6);
	else
		fprintf(out, "\nkernel LPM entries: not compiled\n");
}

/* Matching names and addresses against the policy, for the resolver. */

static bool host_matches(const char *pattern, const char *name)
{
	size_t pl, nl;

	if (strncmp(pattern, "*.", 2))
		return !strcmp(pattern, name);
	/* "*.example.com": name must end in ".example.com" with at least one label before it. */
	pattern += 1;
	pl = strlen(pattern);
	nl = strlen(name);
	return nl > pl && !strcmp(name + nl - pl, pattern);
}

long policy_match_host(const struct policy *p, const char *name)
{
	return policy_match_host_from(p, name, 0);
}

long policy_match_host_from(const struct policy *p, const char *name, size_t start)
{
	for (size_t i = start; i < p->n_rules; i++)
		for (size_t k = 0; k < p->rules[i].n_hosts; k++)
			if (host_matches(p->rules[i].hosts[k], name))
				return (long)i;
	return -1;
}

void policy_cidr_judged_form(const struct policy_cidr *c, struct policy_cidr *out)
{
	struct citem it;

	*out = *c;
	if (!v4_mapped(c, &it))
		return;
	memset(out->addr, 0, sizeof(out->addr));
	memcpy(out->addr, it.addr, 4);
	out->family = AF_INET;
	out->prefixlen = it.plen;
}

bool policy_cidr_covers(const struct policy *p, int family, const uint8_t *addr)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		for (size_t k = 0; k < p->rules[i].n_cidrs; k++) {
			if (cidr_covers_judged(&p->rules[i].cidrs[k], family, addr))
				return true;
		}
	}
	return false;
}

bool policy_rule_takes(const struct policy_rule *r, uint16_t port, uint8_t proto)
{
	if (!(r->protocols & proto))
		return false;
	if (!r->n_ports || proto == SL_PROTO_ICMP)
		return true;
	for (size_t i = 0; i < r->n_ports; i++)
		if (port >= r->ports[i].lo && port <= r->ports[i].hi)
			return true;
	return false;
}

long policy_cidr_match(const struct policy *p, int family, const uint8_t *addr, uint16_t port,
		       uint8_t proto)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		if (!policy_rule_takes(&p->rules[i], port, proto))
			continue;
		for (size_t k = 0; k < p->rules[i].n_cidrs; k++) {
			if (cidr_covers_judged(&p->rules[i].cidrs[k], family, addr))
				return (long)i;
		}
	}
	return -1;
}

long policy_host_rule_takes(const struct policy *p, uint16_t port, uint8_t proto)
{
	for (size_t i = 0; i < p->n_rules; i++)
		if (p->rules[i].n_hosts && policy_rule_takes(&p->rules[i], port, proto))
			return (long)i;
	return -1;
}

static int cmp_host_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_cidr(const void *a, const void *b)
{
	const struct policy_cidr *x = a, *y = b;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (x->prefixlen != y->prefixlen)
		return x->prefixlen < y->prefixlen ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

/*
 * Each element goes into the digest after a tag of its kind and is self-delimiting (a host with
 * its NUL, a CIDR and a port range of fixed size): no two rules' forms run together alike.
 */
static bool digest_item(EVP_MD_CTX *md, char tag, const void *p, size_t len)
{
	return EVP_DigestUpdate(md, &tag, 1) == 1 && EVP_DigestUpdate(md, p, len) == 1;
}

int policy_rule_identity(const struct policy_rule *r, unsigned char out[32])
{
	static const char version[] = "sluice rule identity 1";
	const char **hosts = calloc(r->n_hosts ? r->n_hosts : 1, sizeof(*hosts));
	struct policy_cidr *cidrs = calloc(r->n_cidrs ? r->n_cidrs : 1, sizeof(*cidrs));
	struct policy_port_range *ports = calloc(r->n_ports ? r->n_ports : 1, sizeof(*ports));
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t i, n_ports = 0;
	bool ok;

	ok = hosts && cidrs && ports && md;
	if (ok) {
		memcpy(hosts, r->hosts, r->n_hosts * sizeof(*hosts));
		qsort(hosts, r->n_hosts, sizeof(*hosts), cmp_host_ptr);
		for (i = 0; i < r->n_cidrs; i++)
			policy_cidr_judged_form(&r->cidrs[i], &cidrs[i]);
		qsort(cidrs, r->n_cidrs, sizeof(*cidrs), cmp_cidr);
		if (r->n_ports) {
			memcpy(ports, r->ports, r->n_ports * sizeof(*ports));
			n_ports = merge_ranges(ports, r->n_ports);
		}
		ok = EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
		     digest_item(md, 'V', version, sizeof(version)) &&
		     digest_item(md, 'T', &r->protocols, sizeof(r->protocols));
	}
	for (i = 0; ok && i < r->n_hosts; i++)
		if (!i || strcmp(hosts[i - 1], hosts[i]))
			ok = digest_item(md, 'H', hosts[i], strlen(hosts[i]) + 1);
	for (i = 0; ok && i < r->n_cidrs; i++) {
		uint8_t c[18];

		if (i && !cmp_cidr(&cidrs[i - 1], &cidrs[i]))
			continue;
		c[0] = cidrs[i].family == AF_INET ? 4 : 6;
		c[1] = cidrs[i].prefixlen;
		memcpy(c + 2, cidrs[i].addr, 16);
		ok = digest_item(md, 'C', c, sizeof(c));
	}
	for (i = 0; ok && i < n_ports; i++) {
		uint8_t pr[4] = { (uint8_t)(ports[i].lo >> 8), (uint8_t)ports[i].lo,
				  (uint8_t)(ports[i].hi >> 8), (uint8_t)ports[i].hi };

		ok = digest_item(md, 'P', pr, sizeof(pr));
	}
	if (ok)
		ok = EVP_DigestFinal_ex(md, out, NULL) == 1;
	EVP_MD_CTX_free(md);
	free(hosts);
	free(cidrs);
	free(ports);
	return ok ? 0 : -ENOMEM;
}

/* a cap as an order: stored plus one, so none (0) becomes the largest */
static bool caps_stricter(const struct sl_rule_caps *a, const struct sl_rule_caps *b)
{
	if (a->max_req != b->max_req)
		return a->max_req - 1 < b->max_req - 1;
	if (a->max_total_req != b->max_total_req)
		return a->max_total_req - 1 < b->max_total_req - 1;
	return a->max_resp - 1 < b->max_resp - 1;
}

void policy_rules_strictest(__u16 rule_ids[SL_LEARNED_RULES],
			    const struct sl_rule_caps caps[SL_LEARNED_RULES])
{
	struct sl_rule_caps c[SL_LEARNED_RULES], tc;
	size_t i, j, n;
	__u16 t;

	for (n = 0; n < SL_LEARNED_RULES && rule_ids[n]; n++)
		c[n] = caps[n];
	/* insertion sort, moving only past a strictly looser rule: equals keep their order */
	for (i = 1; i < n; i++) {
		for (j = i; j > 0 && caps_stricter(&c[j], &c[j - 1]); j--) {
			tc = c[j];
			c[j] = c[j - 1];
			c[j - 1] = tc;
			t = rule_ids[j];
			rule_ids[j] = rule_ids[j - 1];
			rule_ids[j - 1] = t;
		}
	}
}
