// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness for userspace/dns.c. Every input goes to both parsers, which must return 0
 * or a documented error and, on success, hand back only bounded, printable, lower-case names.
 * What parses is then built again and must parse back the same:
 *   - a query: a reply (CNAME, A, AAAA, and some more A records) into 512 bytes, which must parse
 *     as a response holding whole records in order, TC set exactly when some were left out;
 *     and the upstream query, which must parse as a query;
 *   - a response: a reply carrying its decoded answers, over TCP size, which must parse back with
 *     every answer equal.
 * The same bytes are also read as a recipe for a reply (question, up to 64 answers whose names
 * nest and repeat over a two-letter alphabet, a size limit): the compressor gets names no parser
 * would hand it in that shape, and the reply must still parse back.
 * A broken property is abort(), which libFuzzer reports as a crash.
 *
 * clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -I. selftests/fuzz/fuzz_dns.c \
 *	userspace/dns.c -o /tmp/fuzz_dns
 * cp -r selftests/unit/dns-corpus /tmp/dns-corpus
 * /tmp/fuzz_dns -max_len=1024 -max_total_time=300 /tmp/dns-corpus
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "userspace/dns.h"

#define REPLY_MAX DNS_UDP_MIN
#define EXTRA_A_MAX 40

static void fail(const char *what, int ret)
{
	fprintf(stderr, "fuzz_dns: %s (%d)\n", what, ret);
	abort();
}

/* A name from a parser: terminated, no upper case, only the bytes a label may hold. */
static void check_name(const char *name)
{
	size_t len = strnlen(name, DNS_NAME_MAX);

	if (len >= DNS_NAME_MAX)
		fail("name not terminated", (int)len);
	if (len && (name[0] == '.' || name[len - 1] == '.' || strstr(name, "..")))
		fail("empty label in a name", (int)len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x21 || c > 0x7e || c == '\\' || (c >= 'A' && c <= 'Z'))
			fail("bad byte in a name", c);
	}
}

static bool rr_equal(const struct dns_rr *a, const struct dns_rr *b)
{
	if (strcmp(a->name, b->name) || a->type != b->type || a->rclass != b->rclass ||
	    a->ttl != b->ttl || a->decoded != b->decoded)
		return false;
	switch (a->type) {
	case DNS_TYPE_A:
		return !memcmp(a->data.a, b->data.a, sizeof(a->data.a));
	case DNS_TYPE_AAAA:
		return !memcmp(a->data.aaaa, b->data.aaaa, sizeof(a->data.aaaa));
	default:
		return !strcmp(a->data.target, b->data.target);
	}
}

static void set_rr(struct dns_rr *rr, uint16_t type, const char *name, uint32_t ttl)
{
	memset(rr, 0, sizeof(*rr));
	rr->type = type;
	rr->rclass = DNS_CLASS_IN;
	rr->ttl = ttl;
	rr->decoded = true;
	if ((size_t)snprintf(rr->name, sizeof(rr->name), "%s", name) >= sizeof(rr->name))
		fail("owner does not fit", 0);
}

/* The reply must parse, hold the question and a prefix of answers, TC iff something was cut. */
static void check_reply(const uint8_t *out, size_t len, size_t max_len, const struct dns_query *q,
			const struct dns_rr *answers, size_t n)
{
	static struct dns_response back;
	char why[128] = "";
	int ret;

	if (len > max_len || len < 12)
		fail("reply length out of bounds", (int)len);
	ret = dns_parse_response(out, len, &back, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "fuzz_dns: reply does not parse: %s\n", why);
		abort();
	}
	if (strcmp(back.qname, q->name) || back.qtype != q->qtype || back.id != q->id)
		fail("reply question differs", 0);
	if (back.n_answers > n)
		fail("reply has more answers than given", (int)back.n_answers);
	if (!(back.flags & DNS_FLAG_TC) != (back.n_answers == n))
		fail("TC does not match the answers kept", (int)back.n_answers);
	for (size_t i = 0; i < back.n_answers; i++)
		if (!rr_equal(&answers[i], &back.answers[i]))
			fail("reply answer differs", (int)i);
}

static void roundtrip_query(const struct dns_query *q, const uint8_t *data, size_t size)
{
	static struct dns_rr answers[3 + EXTRA_A_MAX];
	static uint8_t out[REPLY_MAX];
	static const char target[] = "t.example";
	struct dns_query back;
	size_t n = 0, len = 0, extra = size ? data[size - 1] % (EXTRA_A_MAX + 1) : 0;
	int ret;

	set_rr(&answers[n++], DNS_TYPE_CNAME, q->name, 60);
	snprintf(answers[0].data.target, sizeof(answers[0].data.target), "%s", target);
	set_rr(&answers[n], DNS_TYPE_A, target, 30);
	memcpy(answers[n++].data.a, (const uint8_t[]){192, 0, 2, 1}, 4);
	set_rr(&answers[n], DNS_TYPE_AAAA, q->name, 0x7fffffff);
	answers[n++].data.aaaa[15] = 1;
	for (size_t i = 0; i < extra; i++) {
		set_rr(&answers[n], DNS_TYPE_A, i & 1 ? q->name : target, (uint32_t)i);
		answers[n++].data.a[3] = (uint8_t)i;
	}
	ret = dns_build_reply(q, DNS_RCODE_NOERROR, answers, n, out, sizeof(out), &len);
	if (ret)
		fail("reply to a parsed query refused", ret);
	check_reply(out, len, sizeof(out), q, answers, n);

	ret = dns_build_reply(q, DNS_RCODE_NXDOMAIN, NULL, 0, out, sizeof(out), &len);
	if (ret)
		fail("NXDOMAIN reply refused", ret);
	check_reply(out, len, sizeof(out), q, NULL, 0);

	ret = dns_build_query(q, 0x5a5a, out, sizeof(out), &len);
	if (ret)
		fail("upstream query refused", ret);
	ret = dns_parse_query(out, len, &back, NULL, 0);
	if (ret)
		fail("upstream query does not parse", ret);
	if (strcmp(back.name, q->name) || back.qtype != q->qtype || back.edns_do != q->edns_do ||
	    back.id != 0x5a5a || !back.edns || back.edns_udp_size != 1232)
		fail("upstream query differs", 0);
}

/* Answer with what a parsed response decoded, over TCP size: everything must come back. */
static void roundtrip_response(const struct dns_response *r)
{
	static struct dns_rr answers[DNS_MAX_ANSWERS];
	static uint8_t out[DNS_MSG_MAX];
	struct dns_query q = {.id = r->id, .qtype = r->qtype, .qclass = DNS_CLASS_IN};
	size_t n = 0, len = 0;
	int ret;

	if (r->qtype == DNS_TYPE_OPT)
		return;
	memcpy(q.name, r->qname, sizeof(q.name));
	for (size_t i = 0; i < r->n_answers; i++) {
		const struct dns_rr *rr = &r->answers[i];

		if (rr->decoded && rr->rclass == DNS_CLASS_IN)
			answers[n++] = *rr;
	}
	ret = dns_build_reply(&q, DNS_RCODE(r->flags), answers, n, out, sizeof(out), &len);
	if (ret)
		fail("reply from a parsed response refused", ret);
	check_reply(out, len, sizeof(out), &q, answers, n);
}

struct recipe {
	const uint8_t *p, *end;
	char names[1 + 2 * DNS_MAX_ANSWERS][DNS_NAME_MAX];
	size_t n_names;
};

static unsigned int take(struct recipe *rc)
{
	return rc->p < rc->end ? *rc->p++ : 0;
}

/* A name: 0 to 3 new labels ("a", "bab", ...) in front of the root or of an earlier name. */
static const char *recipe_name(struct recipe *rc)
{
	unsigned int op = take(rc), labels = op >> 4 & 3;
	const char *base = "";
	char *out = rc->names[rc->n_names], buf[DNS_NAME_MAX];
	size_t len = 0;

	/* 0: from the root; 1: on the latest name (runs of one byte nest deeper and deeper); 2: on
	 * an earlier name; 3: an earlier name as it is. */
	if (rc->n_names && (op & 3) == 1)
		base = rc->names[rc->n_names - 1];
	else if (rc->n_names && (op & 3))
		base = rc->names[take(rc) % rc->n_names];
	if ((op & 3) == 3)
		return base;
	for (unsigned int l = 0; l < labels; l++) {
		unsigned int b = take(rc), n = 1 + (b & 3);

		if (len + n + 1 >= sizeof(buf))
			break;
		for (unsigned int i = 0; i < n; i++)
			buf[len++] = (char)('a' + (b >> (2 + i) & 1));
		buf[len++] = '.';
	}
	if (!len || len + strlen(base) >= DNS_NAME_MAX)
		return base;
	if (!base[0])
		len--; /* no trailing dot before the root */
	buf[len] = '\0';
	if ((size_t)snprintf(out, DNS_NAME_MAX, "%s%s", buf, base) >= DNS_NAME_MAX)
		return base;
	if (rc->n_names + 1 < sizeof(rc->names) / sizeof(rc->names[0]))
		rc->n_names++;
	return out;
}

static void fuzz_builder(const uint8_t *data, size_t size)
{
	static struct dns_rr answers[DNS_MAX_ANSWERS];
	static uint8_t out[DNS_MSG_MAX];
	static struct recipe rc;
	struct dns_query q = {.qclass = DNS_CLASS_IN, .qtype = DNS_TYPE_A};
	size_t n, len = 0, max_len, need;
	const char *name;
	int ret;

	if (size < 4)
		return;
	rc.p = data;
	rc.end = data + size;
	rc.n_names = 0;
	max_len = take(&rc) << 8 | take(&rc);
	n = take(&rc) % (DNS_MAX_ANSWERS + 1);
	q.edns = n & 1;
	q.id = (uint16_t)size;
	snprintf(q.name, sizeof(q.name), "%s", recipe_name(&rc));
	for (size_t i = 0; i < n; i++) {
		unsigned int t = take(&rc) % 3;

		name = recipe_name(&rc);
		set_rr(&answers[i],
		       t == 0	? DNS_TYPE_A
		       : t == 1 ? DNS_TYPE_AAAA
				: DNS_TYPE_CNAME,
		       name, take(&rc));
		if (t == 2)
			snprintf(answers[i].data.target, DNS_NAME_MAX, "%s", recipe_name(&rc));
		else
			answers[i].data.aaaa[0] = (uint8_t)i;
	}
	ret = dns_build_reply(&q, 0, answers, n, out, max_len, &len);
	/* Header, question (name on the wire: length + 2, or 1 for the root), OPT. */
	need = 12 + (q.name[0] ? strlen(q.name) + 2 : 1) + 4 + (q.edns ? 11 : 0);
	if (ret == -ENOSPC && max_len < need)
		return;
	if (ret)
		fail("reply from a recipe refused", ret);
	check_reply(out, len, max_len, &q, answers, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dns_response r;
	struct dns_query q;
	char why[64];
	int ret;

	ret = dns_parse_response(data, size, &r, why, sizeof(why));
	if (ret && ret != -EBADMSG && ret != -E2BIG)
		fail("response parser returned an undocumented error", ret);
	if (!ret) {
		if (r.n_answers > DNS_MAX_ANSWERS)
			fail("too many answers", (int)r.n_answers);
		check_name(r.qname);
		for (size_t i = 0; i < r.n_answers; i++) {
			check_name(r.answers[i].name);
			if (r.answers[i].type == DNS_TYPE_CNAME)
				check_name(r.answers[i].data.target);
			if (r.answers[i].ttl > 0x7fffffff)
				fail("TTL over 2^31 - 1", 0);
		}
		roundtrip_response(&r);
	}

	ret = dns_parse_query(data, size, &q, why, sizeof(why));
	if (ret && ret != -EBADMSG)
		fail("query parser returned an undocumented error", ret);
	if (!ret) {
		check_name(q.name);
		if (strcasecmp(q.name, q.name_orig))
			fail("name_orig differs from name beyond case", 0);
		if (q.qclass != DNS_CLASS_IN ||
		    (q.edns && (q.edns_udp_size < 512 || q.edns_udp_size > 4096)))
			fail("query class or EDNS size out of bounds", q.edns_udp_size);
		roundtrip_query(&q, data, size);
	}
	fuzz_builder(data, size);
	return 0;
}
