// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/dns.c: the strict query and response parsers, the reply and query
 * builders, and a run over the seed corpus in selftests/unit/dns-corpus (the fuzzer's seeds).
 * Needs no root and no network: every message is written out here, byte by byte; the dig
 * queries were captured from dig sending to a listener on 127.0.0.1.
 *
 * Usage: test_dns [REPO_ROOT]           TAP 13; exits 1 if any test failed, 0 otherwise
 *        test_dns --write-corpus DIR    writes every table message to DIR, one file each
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "userspace/dns.h"
#include "tap.h"

#define REASON_LEN 128

/* Wire-format building blocks for the tables. */
#define U16(v) (((v) >> 8) & 0xff), ((v)&0xff)
#define U32(v) (((v) >> 24) & 0xff), (((v) >> 16) & 0xff), (((v) >> 8) & 0xff), ((v)&0xff)
#define HDR(id, flags, qd, an, ns, ar) U16(id), U16(flags), U16(qd), U16(an), U16(ns), U16(ar)
#define BYTES(...)                                                                                 \
	.msg = (const uint8_t[]){__VA_ARGS__}, .len = sizeof((const uint8_t[]){__VA_ARGS__})
/* The first n bytes only. */
#define BYTES_N(n, ...) .msg = (const uint8_t[]){__VA_ARGS__}, .len = (n)
#define PTR(off) (0xc0 | ((off) >> 8)), ((off)&0xff)
#define OPT(size, ttl, rdlen) 0, U16(41), U16(size), U32(ttl), U16(rdlen)
#define RR(type, ttl, rdlen) U16(type), U16(1), U32(ttl), U16(rdlen)
#define QFLAGS 0x0100 /* RD */
#define RFLAGS 0x8180 /* QR RD RA */
/* 13 bytes at offset 12..24; the question ends at 29. */
#define EXAMPLE_COM 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0
#define Q_EXAMPLE_COM(type) EXAMPLE_COM, U16(type), U16(1)

static const char *err_name(int err)
{
	switch (err) {
	case 0:
		return "0";
	case -EBADMSG:
		return "-EBADMSG";
	case -E2BIG:
		return "-E2BIG";
	case -EINVAL:
		return "-EINVAL";
	case -ENOSPC:
		return "-ENOSPC";
	default:
		return "another error";
	}
}

/* A message built in code, for those too long or too regular to write out. */
struct pkt {
	uint8_t b[8192];
	size_t len;
};

static void p8(struct pkt *p, unsigned int v)
{
	if (p->len < sizeof(p->b))
		p->b[p->len++] = (uint8_t)v;
}

static void p16(struct pkt *p, unsigned int v)
{
	p8(p, v >> 8 & 0xff);
	p8(p, v & 0xff);
}

static void p32(struct pkt *p, uint32_t v)
{
	p16(p, v >> 16);
	p16(p, v & 0xffff);
}

static void phdr(struct pkt *p, unsigned int flags, unsigned int qd, unsigned int an,
		 unsigned int ns, unsigned int ar)
{
	p->len = 0;
	p16(p, 0x1234);
	p16(p, flags);
	p16(p, qd);
	p16(p, an);
	p16(p, ns);
	p16(p, ar);
}

/* n labels of label_len 'a's, then the root. */
static void pname_labels(struct pkt *p, unsigned int n, unsigned int label_len)
{
	for (unsigned int i = 0; i < n; i++) {
		p8(p, label_len);
		for (unsigned int j = 0; j < label_len; j++)
			p8(p, 'a' + i % 26);
	}
	p8(p, 0);
}

/* Wire length 255: three labels of 63 and one of 61 (253 characters). */
static void gen_query_name_255(struct pkt *p)
{
	phdr(p, QFLAGS, 1, 0, 0, 0);
	for (int i = 0; i < 3; i++) {
		p8(p, 63);
		for (int j = 0; j < 63; j++)
			p8(p, 'x');
	}
	p8(p, 61);
	for (int j = 0; j < 61; j++)
		p8(p, 'y');
	p8(p, 0);
	p16(p, DNS_TYPE_A);
	p16(p, DNS_CLASS_IN);
}

/* Wire length 256: four labels of 63, and the root. */
static void gen_query_name_256(struct pkt *p)
{
	phdr(p, QFLAGS, 1, 0, 0, 0);
	pname_labels(p, 4, 63);
	p16(p, DNS_TYPE_A);
	p16(p, DNS_CLASS_IN);
}

/* Five labels of 63: 321 octets, the limit passed in the middle of a label run. */
static void gen_query_name_321(struct pkt *p)
{
	phdr(p, QFLAGS, 1, 0, 0, 0);
	pname_labels(p, 5, 63);
	p16(p, DNS_TYPE_A);
	p16(p, DNS_CLASS_IN);
}

/* A response for example.com A with n answers, ns authority and ar additional records. */
static void gen_response_counts(struct pkt *p, unsigned int an, unsigned int ns, unsigned int ar)
{
	phdr(p, RFLAGS, 1, an, ns, ar);
	p8(p, 7);
	for (const char *s = "example"; *s; s++)
		p8(p, (uint8_t)*s);
	p8(p, 3);
	for (const char *s = "com"; *s; s++)
		p8(p, (uint8_t)*s);
	p8(p, 0);
	p16(p, DNS_TYPE_A);
	p16(p, DNS_CLASS_IN);
	for (unsigned int i = 0; i < an + ns + ar; i++) {
		p16(p, 0xc00c);
		p16(p, DNS_TYPE_A);
		p16(p, DNS_CLASS_IN);
		p32(p, 60);
		p16(p, 4);
		p32(p, 0xc0000200 | (i & 0xff));
	}
}

static void gen_response_64_answers(struct pkt *p)
{
	gen_response_counts(p, 64, 0, 0);
}

static void gen_response_65_answers(struct pkt *p)
{
	gen_response_counts(p, 65, 0, 0);
}

static void gen_response_65_authority(struct pkt *p)
{
	gen_response_counts(p, 1, 65, 0);
}

static void gen_response_65_additional(struct pkt *p)
{
	gen_response_counts(p, 1, 0, 65);
}

/*
 * A chain of pointers: an unknown-type record whose rdata is a root label followed by pointers,
 * each to the one before it (the first to the root label); the next record's owner points at the
 * last, for `hops` pointers followed in all.
 */
static void gen_pointer_chain(struct pkt *p, unsigned int hops)
{
	size_t prev;

	phdr(p, RFLAGS, 1, 2, 0, 0);
	p8(p, 0); /* root question */
	p16(p, DNS_TYPE_A);
	p16(p, DNS_CLASS_IN);
	p8(p, 0); /* answer 1: root owner, type 99 */
	p16(p, 99);
	p16(p, DNS_CLASS_IN);
	p32(p, 60);
	p16(p, 1 + 2 * (hops - 1));
	prev = p->len;
	p8(p, 0);
	for (unsigned int i = 1; i < hops; i++) {
		size_t here = p->len;

		p16(p, 0xc000 | (unsigned int)prev);
		prev = here;
	}
	p16(p, 0xc000 | (unsigned int)prev); /* answer 2's owner */
	p16(p, 99);
	p16(p, DNS_CLASS_IN);
	p32(p, 60);
	p16(p, 0);
}

/*
 * Question "x" (at 12); answer 0 of an unknown type holds "a.a.(40 times).x" at 31; answers 1 to
 * 40 are A records owned by its suffixes with 1 to 40 labels "a", each only two pointers deep
 * here. Written back in order, each owner is its predecessor with one more label: a compressor
 * that always takes the longest suffix builds a pointer chain one hop deeper per name.
 */
static void gen_nested_owners(struct pkt *p)
{
	const unsigned int n = 40, name = 31;

	phdr(p, RFLAGS, 1, n + 1, 0, 0);
	p8(p, 1);
	p8(p, 'x');
	p8(p, 0);
	p16(p, DNS_TYPE_A);
	p16(p, DNS_CLASS_IN);
	p16(p, 0xc00c);
	p16(p, 99);
	p16(p, DNS_CLASS_IN);
	p32(p, 60);
	p16(p, 2 * n + 2);
	for (unsigned int i = 0; i < n; i++) {
		p8(p, 1);
		p8(p, 'a');
	}
	p16(p, 0xc00c);
	for (unsigned int k = 1; k <= n; k++) {
		p16(p, 0xc000 | (name + 2 * (n - k)));
		p16(p, DNS_TYPE_A);
		p16(p, DNS_CLASS_IN);
		p32(p, 60);
		p16(p, 4);
		p32(p, 0xc0000200 | k);
	}
}

static void gen_pointer_chain_32(struct pkt *p)
{
	gen_pointer_chain(p, 32);
}

static void gen_pointer_chain_33(struct pkt *p)
{
	gen_pointer_chain(p, 33);
}

static bool name_is(const char *got, const char *want, const char *what, char *why)
{
	EXPECT(!strcmp(got, want), "expected %s \"%s\", got \"%s\"", what, want, got);
	return true;
}

/* Queries. */

static bool check_dig_norec(const void *parsed, char *why)
{
	const struct dns_query *q = parsed;

	EXPECT(q->id == 0x294d, "expected id 0x294d, got %#x", q->id);
	EXPECT(!(q->flags & DNS_FLAG_RD) && (q->flags & DNS_FLAG_AD),
	       "expected RD clear (+norec) and AD set, got flags %#x", q->flags);
	if (!name_is(q->name, "example.com", "name", why) ||
	    !name_is(q->name_orig, "example.com", "name_orig", why))
		return false;
	EXPECT(q->qtype == DNS_TYPE_A && q->qclass == DNS_CLASS_IN, "expected A IN, got %u %u",
	       q->qtype, q->qclass);
	EXPECT(q->edns && q->edns_udp_size == 1232 && !q->edns_do,
	       "expected EDNS 1232 without DO, got edns %d size %u do %d", q->edns,
	       q->edns_udp_size, q->edns_do);
	return true;
}

static bool check_dig_upper(const void *parsed, char *why)
{
	const struct dns_query *q = parsed;

	if (!name_is(q->name, "www.example.com", "name", why) ||
	    !name_is(q->name_orig, "WWW.Example.COM", "name_orig", why))
		return false;
	EXPECT(q->qtype == DNS_TYPE_AAAA, "expected AAAA, got %u", q->qtype);
	EXPECT(q->flags & DNS_FLAG_RD, "expected RD, got flags %#x", q->flags);
	EXPECT(q->edns && q->edns_do, "expected EDNS with DO, got edns %d do %d", q->edns,
	       q->edns_do);
	return true;
}

static bool check_dig_https(const void *parsed, char *why)
{
	const struct dns_query *q = parsed;

	if (!name_is(q->name, "pypi.org", "name", why))
		return false;
	EXPECT(q->qtype == DNS_TYPE_HTTPS, "expected HTTPS (65), got %u", q->qtype);
	EXPECT(!q->edns && !q->edns_udp_size, "expected no EDNS, got edns %d size %u", q->edns,
	       q->edns_udp_size);
	return true;
}

static bool check_root(const void *parsed, char *why)
{
	const struct dns_query *q = parsed;

	if (!name_is(q->name, "", "name", why))
		return false;
	EXPECT(q->qtype == DNS_TYPE_NS, "expected NS, got %u", q->qtype);
	return true;
}

static bool check_srv(const void *parsed, char *why)
{
	const struct dns_query *q = parsed;

	if (!name_is(q->name, "_sip._tcp.example.com", "name", why))
		return false;
	EXPECT(q->qtype == DNS_TYPE_SRV && !q->edns, "expected SRV without EDNS, got %u edns %d",
	       q->qtype, q->edns);
	return true;
}

static bool check_udp_512(const void *parsed, char *why)
{
	const struct dns_query *q = parsed;

	EXPECT(q->edns && q->edns_udp_size == 512, "expected EDNS size 512, got edns %d size %u",
	       q->edns, q->edns_udp_size);
	return true;
}

static bool check_udp_4096(const void *parsed, char *why)
{
	const struct dns_query *q = parsed;

	EXPECT(q->edns && q->edns_udp_size == 4096, "expected EDNS size 4096, got edns %d size %u",
	       q->edns, q->edns_udp_size);
	return true;
}

static bool check_name_253(const void *parsed, char *why)
{
	const struct dns_query *q = parsed;

	EXPECT(strlen(q->name) == 253, "expected a 253-character name, got %zu", strlen(q->name));
	return true;
}

struct msg_case {
	const char *name;
	const uint8_t *msg;
	size_t len;
	void (*gen)(struct pkt *p); /* instead of msg */
	int want;
	const char *reason; /* with want: what the reason must contain */
	bool (*check)(const void *parsed, char *why);
};

static const struct msg_case query_cases[] = {
	/* dig @127.0.0.1 +norec example.com A: EDNS 1232 with a client cookie. */
	{"query: dig +norec example.com A with EDNS and a cookie",
	 BYTES(0x29, 0x4d, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x07, 0x65,
	       0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00,
	       0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x0a,
	       0x00, 0x08, 0xc5, 0xab, 0x93, 0x92, 0xda, 0x36, 0xb5, 0x06),
	 .check = check_dig_norec},
	/* dig @127.0.0.1 +dnssec WWW.Example.COM AAAA */
	{"query: dig +dnssec WWW.Example.COM AAAA is lower-cased, DO noted",
	 BYTES(0x0c, 0xdb, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x57,
	       0x57, 0x57, 0x07, 0x45, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x03, 0x43, 0x4f, 0x4d,
	       0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x80, 0x00,
	       0x00, 0x0c, 0x00, 0x0a, 0x00, 0x08, 0x81, 0xcc, 0x36, 0xef, 0x62, 0x9e, 0x3f, 0xb8),
	 .check = check_dig_upper},
	/* dig @127.0.0.1 +noedns pypi.org HTTPS */
	{"query: dig +noedns pypi.org HTTPS",
	 BYTES(0x29, 0xc9, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x70,
	       0x79, 0x70, 0x69, 0x03, 0x6f, 0x72, 0x67, 0x00, 0x00, 0x41, 0x00, 0x01),
	 .check = check_dig_https},
	/* dig @127.0.0.1 . NS */
	{"query: root name (dig . NS)",
	 BYTES(0x41, 0x5f, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	       0x02, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c,
	       0x00, 0x0a, 0x00, 0x08, 0x1d, 0x28, 0xcf, 0x48, 0x59, 0x8b, 0xc6, 0x3f),
	 .check = check_root},
	{"query: underscores allowed (_sip._tcp.example.com SRV)",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 4, '_', 's', 'i', 'p', 4, '_', 't', 'c', 'p',
	       EXAMPLE_COM, U16(33), U16(1)),
	 .check = check_srv},
	{"query: EDNS size 100 is read as 512",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), OPT(100, 0, 0)),
	 .check = check_udp_512},
	{"query: EDNS size 65000 is clamped to 4096",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), OPT(65000, 0, 0)),
	 .check = check_udp_4096},
	{"query: EDNS with two options",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), OPT(1232, 0, 9), U16(10), U16(1), 0xaa,
	       U16(8), U16(0))},
	{"query: name of 255 octets on the wire (253 characters)", .gen = gen_query_name_255,
	 .check = check_name_253},

	{"query: empty message", .msg = (const uint8_t[]){0}, .len = 0, .want = -EBADMSG},
	{"query: truncated header (11 bytes)", BYTES_N(11, HDR(1, QFLAGS, 1, 0, 0, 0)),
	 .want = -EBADMSG},
	{"query: header only, qdcount 1", BYTES(HDR(1, QFLAGS, 1, 0, 0, 0)), .want = -EBADMSG},
	{"query: truncated in a label", BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 7, 'e', 'x', 'a'),
	 .want = -EBADMSG},
	{"query: truncated before the class",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), EXAMPLE_COM, U16(1)), .want = -EBADMSG},
	{"query: OPT truncated", BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), 0, U16(41)),
	 .want = -EBADMSG},
	{"query: arcount 1, nothing there", BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1)),
	 .want = -EBADMSG},
	{"query: OPT rdlength past the end",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), OPT(1232, 0, 4), U16(10)),
	 .want = -EBADMSG},
	{"query: EDNS option longer than the OPT rdata",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), OPT(1232, 0, 6), U16(10), U16(8), 0xaa,
	       0xbb),
	 .want = -EBADMSG},
	{"query: EDNS option header cut",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), OPT(1232, 0, 2), U16(10)),
	 .want = -EBADMSG},
	{"query: EDNS version 1",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), OPT(1232, 0x00010000, 0)),
	 .want = -EBADMSG, .reason = "version"},
	{"query: OPT with a non-root owner",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), 1, 'a', OPT(1232, 0, 0)),
	 .want = -EBADMSG},
	{"query: OPT owner a pointer to the root",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), PTR(24), U16(41), U16(1232), U32(0),
	       U16(0)),
	 .want = -EBADMSG},
	{"query: additional record that is not an OPT",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), 0, RR(1, 0, 4), 1, 2, 3, 4),
	 .want = -EBADMSG},
	{"query: two OPT records",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 2), Q_EXAMPLE_COM(1), OPT(1232, 0, 0), OPT(1232, 0, 0)),
	 .want = -EBADMSG},
	{"query: QR set", BYTES(HDR(1, 0x8100, 1, 0, 0, 0), Q_EXAMPLE_COM(1)), .want = -EBADMSG},
	{"query: opcode 1 (IQUERY)", BYTES(HDR(1, 0x0900, 1, 0, 0, 0), Q_EXAMPLE_COM(1)),
	 .want = -EBADMSG},
	{"query: opcode 2 (STATUS)", BYTES(HDR(1, 0x1000, 1, 0, 0, 0), Q_EXAMPLE_COM(1)),
	 .want = -EBADMSG},
	{"query: qdcount 0", BYTES(HDR(1, QFLAGS, 0, 0, 0, 0)), .want = -EBADMSG},
	{"query: qdcount 2",
	 BYTES(HDR(1, QFLAGS, 2, 0, 0, 0), Q_EXAMPLE_COM(1), PTR(12), U16(28), U16(1)),
	 .want = -EBADMSG},
	{"query: ancount 1",
	 BYTES(HDR(1, QFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 0, 4), 1, 2, 3, 4),
	 .want = -EBADMSG},
	{"query: nscount 1",
	 BYTES(HDR(1, QFLAGS, 1, 0, 1, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 0, 4), 1, 2, 3, 4),
	 .want = -EBADMSG},
	{"query: class ANY refused",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), EXAMPLE_COM, U16(1), U16(255)), .want = -EBADMSG,
	 .reason = "class not IN"},
	{"query: class CH refused", BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), EXAMPLE_COM, U16(16), U16(3)),
	 .want = -EBADMSG},
	{"query: qtype OPT refused", BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), Q_EXAMPLE_COM(41)),
	 .want = -EBADMSG},
	{"query: trailing garbage", BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), Q_EXAMPLE_COM(1), 0),
	 .want = -EBADMSG, .reason = "trailing"},
	{"query: trailing garbage after the OPT",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), OPT(1232, 0, 0), 0xde, 0xad),
	 .want = -EBADMSG},
	{"query: label length 64 (type bits 01, reserved)",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 64, 'a', 0, U16(1), U16(1)), .want = -EBADMSG,
	 .reason = "reserved label type"},
	{"query: label length 0x80 (type bits 10, reserved)",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 0x80, 'a', 0, U16(1), U16(1)), .want = -EBADMSG},
	{"query: name of 256 octets", .gen = gen_query_name_256, .want = -EBADMSG,
	 .reason = "longer than 255"},
	{"query: name of 321 octets", .gen = gen_query_name_321, .want = -EBADMSG,
	 .reason = "longer than 255"},
	{"query: pointer to itself", BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), PTR(12), U16(1), U16(1)),
	 .want = -EBADMSG, .reason = "not backwards"},
	{"query: pointer forward",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), PTR(14), 1, 'a', 0, U16(1), U16(1)), .want = -EBADMSG,
	 .reason = "not backwards"},
	{"query: label, then a pointer back to the name's start",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 1, 'a', PTR(12), U16(1), U16(1)), .want = -EBADMSG,
	 .reason = "not backwards"},
	{"query: pointer past the end",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), PTR(0x3fff), U16(1), U16(1)), .want = -EBADMSG,
	 .reason = "not backwards"},
	{"query: pointer into the header",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), PTR(4), U16(1), U16(1)), .want = -EBADMSG,
	 .reason = "into the header"},
	{"query: pointer cut after its first byte", BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 0xc0),
	 .want = -EBADMSG},
	{"query: '.' inside a label (a\\.b) refused",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 3, 'a', '.', 'b', 3, 'c', 'o', 'm', 0, U16(1), U16(1)),
	 .want = -EBADMSG, .reason = "label holds"},
	{"query: '\\' inside a label refused",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 3, 'a', '\\', 'b', 0, U16(1), U16(1)), .want = -EBADMSG},
	{"query: space inside a label refused",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 3, 'a', ' ', 'b', 0, U16(1), U16(1)), .want = -EBADMSG},
	{"query: DEL inside a label refused",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 3, 'a', 0x7f, 'b', 0, U16(1), U16(1)), .want = -EBADMSG},
	{"query: UTF-8 inside a label refused",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 3, 'a', 0xc3, 0xa9, 0, U16(1), U16(1)),
	 .want = -EBADMSG},
	{"query: NUL inside a label refused",
	 BYTES(HDR(1, QFLAGS, 1, 0, 0, 0), 3, 'a', 0, 'b', 0, U16(1), U16(1)), .want = -EBADMSG},
};

/* Responses. */

static bool rr_a_is(const struct dns_rr *rr, const char *name, uint32_t ttl, const uint8_t a[4],
		    char *why)
{
	if (!name_is(rr->name, name, "owner", why))
		return false;
	EXPECT(rr->type == DNS_TYPE_A && rr->rclass == DNS_CLASS_IN && rr->decoded,
	       "expected a decoded A IN, got type %u class %u decoded %d", rr->type, rr->rclass,
	       rr->decoded);
	EXPECT(rr->ttl == ttl, "expected TTL %u, got %u", ttl, rr->ttl);
	EXPECT(!memcmp(rr->data.a, a, 4), "expected %u.%u.%u.%u, got %u.%u.%u.%u", a[0], a[1], a[2],
	       a[3], rr->data.a[0], rr->data.a[1], rr->data.a[2], rr->data.a[3]);
	return true;
}

static bool rr_cname_is(const struct dns_rr *rr, const char *name, const char *target, char *why)
{
	if (!name_is(rr->name, name, "owner", why))
		return false;
	EXPECT(rr->type == DNS_TYPE_CNAME && rr->decoded, "expected a decoded CNAME, got type %u",
	       rr->type);
	return name_is(rr->data.target, target, "target", why);
}

static bool check_resp_a(const void *parsed, char *why)
{
	static const uint8_t addr[4] = {93, 184, 216, 34};
	const struct dns_response *r = parsed;

	EXPECT(r->id == 0xbeef && r->flags == RFLAGS, "expected id 0xbeef flags %#x, got %#x %#x",
	       RFLAGS, r->id, r->flags);
	if (!name_is(r->qname, "example.com", "qname", why))
		return false;
	EXPECT(r->qtype == DNS_TYPE_A && r->qclass == DNS_CLASS_IN, "expected A IN, got %u %u",
	       r->qtype, r->qclass);
	EXPECT(r->n_answers == 1, "expected 1 answer, got %zu", r->n_answers);
	EXPECT(r->min_ttl_soa == 0, "expected no SOA TTL, got %u", r->min_ttl_soa);
	return rr_a_is(&r->answers[0], "example.com", 300, addr, why);
}

static bool check_resp_chain(const void *parsed, char *why)
{
	static const uint8_t addr[4] = {192, 0, 2, 1};
	static const uint8_t addr6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
	const struct dns_response *r = parsed;
	const struct dns_rr *rr = &r->answers[3];

	if (!name_is(r->qname, "www.example.com", "qname", why))
		return false;
	EXPECT(r->n_answers == 4, "expected 4 answers, got %zu", r->n_answers);
	if (!rr_cname_is(&r->answers[0], "www.example.com", "a.cdn.net", why) ||
	    !rr_cname_is(&r->answers[1], "a.cdn.net", "b.cdn.net", why) ||
	    !rr_a_is(&r->answers[2], "b.cdn.net", 20, addr, why) ||
	    !name_is(rr->name, "b.cdn.net", "owner", why))
		return false;
	EXPECT(rr->type == DNS_TYPE_AAAA && rr->decoded && !memcmp(rr->data.aaaa, addr6, 16),
	       "expected AAAA 2001:db8::1, got type %u decoded %d", rr->type, rr->decoded);
	return true;
}

static bool check_resp_soa_300(const void *parsed, char *why)
{
	const struct dns_response *r = parsed;

	EXPECT(DNS_RCODE(r->flags) == DNS_RCODE_NXDOMAIN, "expected NXDOMAIN, got rcode %u",
	       DNS_RCODE(r->flags));
	if (!name_is(r->qname, "nx.example.com", "qname", why))
		return false;
	EXPECT(r->n_answers == 0, "expected no answers, got %zu", r->n_answers);
	EXPECT(r->min_ttl_soa == 300, "expected min(3600, MINIMUM 300) = 300, got %u",
	       r->min_ttl_soa);
	return true;
}

static bool check_resp_soa_60(const void *parsed, char *why)
{
	const struct dns_response *r = parsed;

	EXPECT(r->min_ttl_soa == 60, "expected min(TTL 60, 86400) = 60, got %u", r->min_ttl_soa);
	return true;
}

static bool check_resp_skipped(const void *parsed, char *why)
{
	const struct dns_response *r = parsed;

	EXPECT(r->n_answers == 2, "expected 2 answers, got %zu", r->n_answers);
	EXPECT(r->answers[0].type == DNS_TYPE_MX && !r->answers[0].decoded,
	       "expected MX not decoded, got type %u decoded %d", r->answers[0].type,
	       r->answers[0].decoded);
	EXPECT(r->answers[1].type == DNS_TYPE_HTTPS && !r->answers[1].decoded &&
		       r->answers[1].ttl == 7,
	       "expected HTTPS TTL 7 not decoded, got type %u ttl %u decoded %d",
	       r->answers[1].type, r->answers[1].ttl, r->answers[1].decoded);
	return true;
}

static bool check_resp_ns_opt(const void *parsed, char *why)
{
	const struct dns_response *r = parsed;

	EXPECT(r->n_answers == 1 && r->min_ttl_soa == 0,
	       "expected 1 answer and no SOA TTL, got %zu and %u", r->n_answers, r->min_ttl_soa);
	return true;
}

static bool check_resp_ttl_msb(const void *parsed, char *why)
{
	const struct dns_response *r = parsed;

	EXPECT(r->n_answers == 1 && r->answers[0].ttl == 0,
	       "expected TTL 0x80000000 read as 0, got %u", r->answers[0].ttl);
	return true;
}

static bool check_resp_64(const void *parsed, char *why)
{
	const struct dns_response *r = parsed;

	EXPECT(r->n_answers == 64 && r->answers[63].data.a[3] == 63,
	       "expected 64 answers, the last 192.0.2.63, got %zu", r->n_answers);
	return true;
}

static bool check_resp_nested(const void *parsed, char *why)
{
	const struct dns_response *r = parsed;

	EXPECT(r->n_answers == 41, "expected 41 answers, got %zu", r->n_answers);
	EXPECT(strlen(r->answers[40].name) == 81, "expected the last owner 81 characters, got %zu",
	       strlen(r->answers[40].name));
	return true;
}

static bool check_resp_upper(const void *parsed, char *why)
{
	const struct dns_response *r = parsed;

	EXPECT(r->n_answers == 1, "expected 1 answer, got %zu", r->n_answers);
	return rr_cname_is(&r->answers[0], "ww.example.com", "cd.example.com", why);
}

/* Question nx.example.com A (12..27, example.com at 15), then one SOA in authority at 32. */
#define SOA_RESPONSE(ttl, minimum)                                                                 \
	HDR(0x5151, 0x8183, 1, 0, 1, 0), 2, 'n', 'x', EXAMPLE_COM, U16(1), U16(1), PTR(15),        \
		RR(6, ttl, 39), 3, 'n', 's', '1', PTR(15), 10, 'h', 'o', 's', 't', 'm', 'a', 's',  \
		't', 'e', 'r', PTR(15), U32(2024010101), U32(7200), U32(900), U32(1209600),        \
		U32(minimum)

/* Question example.com A, ends at 29; an answer of an unknown type whose rdata is at 41. */
#define UNKNOWN_AT_41(...)                                                                         \
	HDR(1, RFLAGS, 1, 2, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(99, 0, 4), __VA_ARGS__

static const struct msg_case response_cases[] = {
	{"response: A for example.com",
	 BYTES(HDR(0xbeef, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 300, 4), 93, 184,
	       216, 34),
	 .check = check_resp_a},
	/*
	 * www.example.com at 12..28, question ends at 33. Answer 1 (33): CNAME, rdata at 45:
	 * a(45) cdn(47) net(51). Answer 2 (56): owner -> 45, rdata at 68: b(68), -> 47. Answer 3
	 * (72) and 4 (88): owner -> 68.
	 */
	{"response: CNAME chain to A and AAAA, compressed inside rdata",
	 BYTES(HDR(2, RFLAGS, 1, 4, 0, 0), 3, 'w', 'w', 'w', EXAMPLE_COM, U16(1), U16(1), PTR(12),
	       RR(5, 60, 11), 1, 'a', 3, 'c', 'd', 'n', 3, 'n', 'e', 't', 0, PTR(45), RR(5, 60, 4),
	       1, 'b', PTR(47), PTR(68), RR(1, 20, 4), 192, 0, 2, 1, PTR(68), RR(28, 20, 16), 0x20,
	       0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1),
	 .check = check_resp_chain},
	{"response: NXDOMAIN with SOA in authority (negative TTL from MINIMUM)",
	 BYTES(SOA_RESPONSE(3600, 300)), .check = check_resp_soa_300},
	{"response: SOA TTL below MINIMUM gives the negative TTL", BYTES(SOA_RESPONSE(60, 86400)),
	 .check = check_resp_soa_60},
	{"response: MX and HTTPS answers are skipped, not decoded",
	 BYTES(HDR(3, RFLAGS, 1, 2, 0, 0), Q_EXAMPLE_COM(15), PTR(12), RR(15, 60, 4), U16(10),
	       PTR(12), PTR(12), RR(65, 7, 3), U16(1), 0),
	 .check = check_resp_skipped},
	{"response: NS in authority and OPT in additional are skipped",
	 BYTES(HDR(4, RFLAGS, 1, 1, 1, 1), Q_EXAMPLE_COM(1), PTR(12), RR(1, 60, 4), 1, 2, 3, 4,
	       PTR(12), RR(2, 60, 6), 3, 'n', 's', '1', PTR(12), OPT(1232, 0, 0)),
	 .check = check_resp_ns_opt},
	{"response: TTL with the top bit set reads as 0",
	 BYTES(HDR(5, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 0x80000000, 4), 1, 2, 3,
	       4),
	 .check = check_resp_ttl_msb},
	{"response: 64 answers", .gen = gen_response_64_answers, .check = check_resp_64},
	{"response: 65 answers is -E2BIG", .gen = gen_response_65_answers, .want = -E2BIG,
	 .reason = "more than 64 answer"},
	{"response: 65 authority records is -E2BIG", .gen = gen_response_65_authority,
	 .want = -E2BIG},
	{"response: 65 additional records is -E2BIG", .gen = gen_response_65_additional,
	 .want = -E2BIG},
	{"response: 32 pointer hops", .gen = gen_pointer_chain_32},
	{"response: 40 owners nested one label deeper each", .gen = gen_nested_owners,
	 .check = check_resp_nested},
	{"response: 33 pointer hops refused", .gen = gen_pointer_chain_33, .want = -EBADMSG,
	 .reason = "too many compression pointers"},

	{"response: A with rdlength 5",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 60, 5), 1, 2, 3, 4, 5),
	 .want = -EBADMSG, .reason = "A rdlength not 4"},
	{"response: AAAA with rdlength 4",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(28), PTR(12), RR(28, 60, 4), 1, 2, 3, 4),
	 .want = -EBADMSG},
	{"response: truncated header", BYTES_N(5, HDR(6, RFLAGS, 1, 1, 0, 0)), .want = -EBADMSG},
	{"response: truncated question", BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), EXAMPLE_COM, U16(1)),
	 .want = -EBADMSG},
	{"response: truncated record header",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), 3, 'w', 'w', 'w', PTR(12), U16(1),
	       U16(1), U16(0)),
	 .want = -EBADMSG, .reason = "record truncated"},
	{"response: truncated rdata",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 60, 4), 1, 2),
	 .want = -EBADMSG},
	{"response: ancount 2, one answer present",
	 BYTES(HDR(6, RFLAGS, 1, 2, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 60, 4), 1, 2, 3, 4),
	 .want = -EBADMSG},
	{"response: ancount 2, one AAAA present (long enough for two minimal records)",
	 BYTES(HDR(6, RFLAGS, 1, 2, 0, 0), Q_EXAMPLE_COM(28), PTR(12), RR(28, 60, 16), U32(1),
	       U32(2), U32(3), U32(4)),
	 .want = -EBADMSG, .reason = "name truncated"},
	{"response: ancount 1000, one answer present",
	 BYTES(HDR(6, RFLAGS, 1, 1000, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 60, 4), 1, 2, 3, 4),
	 .want = -EBADMSG, .reason = "counts exceed"},
	{"response: arcount 65535 in a short message",
	 BYTES(HDR(6, RFLAGS, 1, 0, 0, 65535), Q_EXAMPLE_COM(1)), .want = -EBADMSG},
	{"response: trailing garbage",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(1, 60, 4), 1, 2, 3, 4,
	       0xff),
	 .want = -EBADMSG, .reason = "trailing"},
	{"response: QR clear", BYTES(HDR(6, 0x0180, 1, 0, 0, 0), Q_EXAMPLE_COM(1)),
	 .want = -EBADMSG},
	{"response: opcode 1", BYTES(HDR(6, 0x8980, 1, 0, 0, 0), Q_EXAMPLE_COM(1)),
	 .want = -EBADMSG},
	{"response: qdcount 0", BYTES(HDR(6, 0x8182, 0, 0, 0, 0)), .want = -EBADMSG},
	{"response: qdcount 2",
	 BYTES(HDR(6, RFLAGS, 2, 0, 0, 0), Q_EXAMPLE_COM(1), PTR(12), U16(28), U16(1)),
	 .want = -EBADMSG},
	{"response: CNAME rdlength past the end of the message",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(5, 60, 5), 1, 'a', 0),
	 .want = -EBADMSG},
	{"response: CNAME rdata with a byte after the name",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(5, 60, 4), 1, 'a', 0, 0),
	 .want = -EBADMSG, .reason = "CNAME rdata longer"},
	{"response: CNAME name running past its rdlength",
	 BYTES(HDR(6, RFLAGS, 1, 2, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(5, 60, 2), 1, 'a', 0,
	       RR(1, 60, 4), 1, 2, 3, 4),
	 .want = -EBADMSG, .reason = "name truncated"},
	{"response: CNAME target with '.' inside a label",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(12), RR(5, 60, 5), 3, 'a', '.',
	       'b', 0),
	 .want = -EBADMSG},
	{"response: upper-case owner and target are lower-cased",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(5), 2, 'W', 'w', PTR(12), RR(5, 60, 5), 2,
	       'C', 'D', PTR(12)),
	 .check = check_resp_upper},
	{"response: OPT in the answer section",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), OPT(1232, 0, 0)), .want = -EBADMSG},
	{"response: two OPT records",
	 BYTES(HDR(6, RFLAGS, 1, 0, 0, 2), Q_EXAMPLE_COM(1), OPT(1232, 0, 0), OPT(1232, 0, 0)),
	 .want = -EBADMSG},
	{"response: OPT with a non-root owner",
	 BYTES(HDR(6, RFLAGS, 1, 0, 0, 1), Q_EXAMPLE_COM(1), PTR(12), U16(41), U16(1232), U32(0),
	       U16(0)),
	 .want = -EBADMSG},
	{"response: SOA rdata longer than its fields",
	 BYTES(HDR(6, 0x8183, 1, 0, 1, 0), Q_EXAMPLE_COM(1), PTR(12), RR(6, 60, 25), PTR(12),
	       PTR(12), U32(1), U32(2), U32(3), U32(4), U32(5), 0),
	 .want = -EBADMSG},
	{"response: SOA rdata shorter than its fields",
	 BYTES(HDR(6, 0x8183, 1, 0, 1, 0), Q_EXAMPLE_COM(1), PTR(12), RR(6, 60, 23), PTR(12),
	       PTR(12), U32(1), U32(2), U32(3), U32(4), U16(5), 0xff),
	 .want = -EBADMSG},
	/* The loops: each pointer on its own points backwards from where it sits. */
	{"response: two pointers pointing at each other",
	 BYTES(UNKNOWN_AT_41(PTR(43), PTR(41), PTR(41), RR(1, 60, 4), 1, 2, 3, 4)),
	 .want = -EBADMSG, .reason = "not backwards"},
	{"response: pointer to a pointer to itself",
	 BYTES(UNKNOWN_AT_41(PTR(43), PTR(43), PTR(43), RR(1, 60, 4), 1, 2, 3, 4)),
	 .want = -EBADMSG, .reason = "not backwards"},
	{"response: label, then a pointer to its own start",
	 BYTES(UNKNOWN_AT_41(1, 'a', PTR(41), PTR(41), RR(1, 60, 4), 1, 2, 3, 4)), .want = -EBADMSG,
	 .reason = "not backwards"},
	{"response: backward pointers that are not a loop",
	 BYTES(UNKNOWN_AT_41(1, 'a', PTR(12), PTR(41), RR(1, 60, 4), 1, 2, 3, 4))},
	{"response: owner pointer forward",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(43), RR(1, 60, 4), 1, 2, 3, 4),
	 .want = -EBADMSG},
	{"response: owner pointer past the end",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), PTR(0x3000), RR(1, 60, 4), 1, 2, 3, 4),
	 .want = -EBADMSG},
	{"response: reserved label type 0x80 in an owner",
	 BYTES(HDR(6, RFLAGS, 1, 1, 0, 0), Q_EXAMPLE_COM(1), 0x81, 'a', 0, RR(1, 60, 4), 1, 2, 3,
	       4),
	 .want = -EBADMSG},
	{"response: reserved label type in a skipped authority owner",
	 BYTES(HDR(6, RFLAGS, 1, 0, 1, 0), Q_EXAMPLE_COM(1), 0x41, 'a', 0, RR(2, 60, 2), PTR(12)),
	 .want = -EBADMSG},
};

static void message_of(const struct msg_case *c, struct pkt *p, const uint8_t **msg, size_t *len)
{
	if (c->gen) {
		c->gen(p);
		*msg = p->b;
		*len = p->len;
	} else {
		*msg = c->msg;
		*len = c->len;
	}
}

static void run_query_case(const struct msg_case *c)
{
	static struct pkt p;
	char why[WHY_LEN] = "", reason[REASON_LEN] = "";
	struct dns_query q;
	const uint8_t *msg;
	size_t len;
	int ret;

	message_of(c, &p, &msg, &len);
	ret = dns_parse_query(msg, len, &q, reason, sizeof(reason));
	if (ret != c->want)
		snprintf(why, WHY_LEN, "expected %s, got %s (%d) \"%s\"", err_name(c->want),
			 err_name(ret), ret, ret ? reason : "");
	else if (ret && (!reason[0] || (c->reason && !strstr(reason, c->reason))))
		snprintf(why, WHY_LEN, "expected a reason with %s%s%s, got \"%s\"", err_name(ret),
			 c->reason ? " saying " : "", c->reason ? c->reason : "", reason);
	else if (!ret && c->check)
		c->check(&q, why);
	report(!why[0], c->name, why);
}

static void run_response_case(const struct msg_case *c)
{
	static struct dns_response r;
	static struct pkt p;
	char why[WHY_LEN] = "", reason[REASON_LEN] = "";
	const uint8_t *msg;
	size_t len;
	int ret;

	message_of(c, &p, &msg, &len);
	ret = dns_parse_response(msg, len, &r, reason, sizeof(reason));
	if (ret != c->want)
		snprintf(why, WHY_LEN, "expected %s, got %s (%d) \"%s\"", err_name(c->want),
			 err_name(ret), ret, ret ? reason : "");
	else if (ret && (!reason[0] || (c->reason && !strstr(reason, c->reason))))
		snprintf(why, WHY_LEN, "expected a reason with %s%s%s, got \"%s\"", err_name(ret),
			 c->reason ? " saying " : "", c->reason ? c->reason : "", reason);
	else if (ret && r.n_answers)
		snprintf(why, WHY_LEN, "expected nothing kept on failure, got %zu answers",
			 r.n_answers);
	else if (!ret && c->check)
		c->check(&r, why);
	report(!why[0], c->name, why);
}

/* Builders. */

/* The dig +dnssec WWW.Example.COM AAAA query (RD, EDNS 1232, DO). */
static bool parse_dig_upper(struct dns_query *q, char *why)
{
	const struct msg_case *c = &query_cases[1];
	char reason[REASON_LEN] = "";
	int ret = dns_parse_query(c->msg, c->len, q, reason, sizeof(reason));

	EXPECT(!ret, "expected the dig query to parse, got %d \"%s\"", ret, reason);
	return true;
}

static bool parse_reply(const uint8_t *msg, size_t len, struct dns_response *r, char *why)
{
	char reason[REASON_LEN] = "";
	int ret = dns_parse_response(msg, len, r, reason, sizeof(reason));

	EXPECT(!ret, "expected the reply to parse back, got %d \"%s\"", ret, reason);
	return true;
}

static bool rr_equal(const struct dns_rr *a, const struct dns_rr *b, size_t i, char *why)
{
	EXPECT(!strcmp(a->name, b->name) && a->type == b->type && a->rclass == b->rclass &&
		       a->ttl == b->ttl && a->decoded == b->decoded,
	       "expected answer %zu %s type %u ttl %u, got %s type %u ttl %u", i, a->name, a->type,
	       a->ttl, b->name, b->type, b->ttl);
	switch (a->type) {
	case DNS_TYPE_A:
		EXPECT(!memcmp(a->data.a, b->data.a, 4), "expected answer %zu's address equal", i);
		break;
	case DNS_TYPE_AAAA:
		EXPECT(!memcmp(a->data.aaaa, b->data.aaaa, 16),
		       "expected answer %zu's address equal", i);
		break;
	default:
		EXPECT(!strcmp(a->data.target, b->data.target),
		       "expected answer %zu's target %s, got %s", i, a->data.target,
		       b->data.target);
	}
	return true;
}

static struct dns_rr rr_a(const char *name, uint32_t ttl, uint8_t last)
{
	struct dns_rr rr = {
		.type = DNS_TYPE_A, .rclass = DNS_CLASS_IN, .ttl = ttl, .decoded = true};

	snprintf(rr.name, sizeof(rr.name), "%s", name);
	rr.data.a[0] = 198;
	rr.data.a[1] = 51;
	rr.data.a[2] = 100;
	rr.data.a[3] = last;
	return rr;
}

static struct dns_rr rr_aaaa(const char *name, uint32_t ttl)
{
	struct dns_rr rr = {
		.type = DNS_TYPE_AAAA, .rclass = DNS_CLASS_IN, .ttl = ttl, .decoded = true};

	snprintf(rr.name, sizeof(rr.name), "%s", name);
	rr.data.aaaa[0] = 0x20;
	rr.data.aaaa[1] = 0x01;
	rr.data.aaaa[2] = 0x0d;
	rr.data.aaaa[3] = 0xb8;
	rr.data.aaaa[15] = 0x10;
	return rr;
}

static struct dns_rr rr_cname(const char *name, const char *target)
{
	struct dns_rr rr = {
		.type = DNS_TYPE_CNAME, .rclass = DNS_CLASS_IN, .ttl = 60, .decoded = true};

	snprintf(rr.name, sizeof(rr.name), "%s", name);
	snprintf(rr.data.target, sizeof(rr.data.target), "%s", target);
	return rr;
}

static bool build_nxdomain(char *why)
{
	static const uint8_t opt[] = {OPT(1232, 0x8000, 0)};
	const struct msg_case *c = &query_cases[1];
	uint8_t out[512];
	struct dns_response r;
	struct dns_query q;
	size_t len = 0, qlen = 17 + 4; /* WWW.Example.COM AAAA IN */
	int ret;

	if (!parse_dig_upper(&q, why))
		return false;
	ret = dns_build_reply(&q, DNS_RCODE_NXDOMAIN, NULL, 0, out, sizeof(out), &len);
	EXPECT(!ret, "expected 0, got %d", ret);
	EXPECT(len == 12 + qlen + sizeof(opt), "expected %zu bytes, got %zu",
	       12 + qlen + sizeof(opt), len);
	EXPECT(out[0] == 0x0c && out[1] == 0xdb, "expected id 0cdb, got %02x%02x", out[0], out[1]);
	EXPECT(out[2] == 0x81 && out[3] == 0x83,
	       "expected flags 8183 (QR RD RA NXDOMAIN), got %02x%02x", out[2], out[3]);
	EXPECT(!memcmp(out + 4, (const uint8_t[]){U16(1), U16(0), U16(0), U16(1)}, 8),
	       "expected counts 1 0 0 1, got %u %u %u %u", out[5], out[7], out[9], out[11]);
	EXPECT(!memcmp(out + 12, c->msg + 12, qlen),
	       "expected the question echoed byte for byte (WWW.Example.COM)");
	EXPECT(!memcmp(out + 12 + qlen, opt, sizeof(opt)),
	       "expected OPT 1232 with DO and no options");
	if (!parse_reply(out, len, &r, why))
		return false;
	EXPECT(DNS_RCODE(r.flags) == DNS_RCODE_NXDOMAIN && r.n_answers == 0 &&
		       !strcmp(r.qname, "www.example.com") && r.qtype == DNS_TYPE_AAAA,
	       "expected NXDOMAIN for www.example.com AAAA, got rcode %u %s %u", DNS_RCODE(r.flags),
	       r.qname, r.qtype);
	return true;
}

static bool build_cname_a_aaaa(char *why)
{
	struct dns_rr answers[] = {
		rr_cname("www.example.com", "edge.cdn.example.com"),
		rr_cname("edge.cdn.example.com", "pool.cdn.example.net"),
		rr_a("pool.cdn.example.net", 30, 1),
		rr_a("pool.cdn.example.net", 30, 2),
		rr_aaaa("pool.cdn.example.net", 31),
	};
	uint8_t out[512];
	struct dns_response r;
	struct dns_query q;
	size_t len = 0, qend = 12 + 17 + 4;
	int ret;

	if (!parse_dig_upper(&q, why))
		return false;
	ret = dns_build_reply(&q, DNS_RCODE_NOERROR, answers, ARRAY_SIZE(answers), out, sizeof(out),
			      &len);
	EXPECT(!ret, "expected 0, got %d", ret);
	EXPECT(out[qend] == 0xc0 && out[qend + 1] == 0x0c,
	       "expected the first owner as pointer c00c, got %02x%02x", out[qend], out[qend + 1]);
	/*
	 * 33 to the question; CNAME 12 + "edge.cdn" -> example.com 11; CNAME owner pointer 12 +
	 * pool.cdn.example.net 22; A 16, A 16, AAAA 28 (owners pointers); OPT 11.
	 */
	EXPECT(len == 33 + 23 + 34 + 16 + 16 + 28 + 11, "expected %d bytes, got %zu",
	       33 + 23 + 34 + 16 + 16 + 28 + 11, len);
	if (!parse_reply(out, len, &r, why))
		return false;
	EXPECT(!(r.flags & DNS_FLAG_TC) && DNS_RCODE(r.flags) == 0,
	       "expected NOERROR without TC, got flags %#x", r.flags);
	EXPECT(r.n_answers == ARRAY_SIZE(answers), "expected %zu answers, got %zu",
	       ARRAY_SIZE(answers), r.n_answers);
	for (size_t i = 0; i < ARRAY_SIZE(answers); i++)
		if (!rr_equal(&answers[i], &r.answers[i], i, why))
			return false;
	return true;
}

/* 64 A records of 16 bytes each against 512: 40 bytes of header, question and OPT leave 472. */
static bool build_truncated(char *why)
{
	static struct dns_rr answers[DNS_MAX_ANSWERS];
	static struct dns_response r;
	struct dns_query q = {.id = 7, .qtype = DNS_TYPE_A, .qclass = DNS_CLASS_IN};
	uint8_t out[DNS_UDP_MIN + 64];
	size_t len = 0;
	int ret;

	memset(out, 0xee, sizeof(out));
	snprintf(q.name, sizeof(q.name), "example.com");
	for (size_t i = 0; i < DNS_MAX_ANSWERS; i++)
		answers[i] = rr_a("example.com", 60, (uint8_t)i);
	for (int edns = 1; edns >= 0; edns--) {
		size_t want = edns ? 29 : 30;

		q.edns = edns;
		ret = dns_build_reply(&q, 0, answers, DNS_MAX_ANSWERS, out, DNS_UDP_MIN, &len);
		EXPECT(!ret, "expected 0, got %d", ret);
		EXPECT(len <= DNS_UDP_MIN, "expected at most 512 bytes, got %zu", len);
		EXPECT(out[DNS_UDP_MIN] == 0xee, "expected nothing written past max_len");
		if (!parse_reply(out, len, &r, why))
			return false;
		EXPECT(r.flags & DNS_FLAG_TC, "expected TC, got flags %#x", r.flags);
		EXPECT(r.n_answers == want, "expected %zu whole answers (edns %d), got %zu", want,
		       edns, r.n_answers);
		for (size_t i = 0; i < want; i++)
			if (!rr_equal(&answers[i], &r.answers[i], i, why))
				return false;
		EXPECT(out[11] == edns, "expected arcount %d, got %u", edns, out[11]);
	}
	return true;
}

static bool build_no_truncation(char *why)
{
	static struct dns_rr answers[DNS_MAX_ANSWERS];
	static struct dns_response r;
	static uint8_t out[4096];
	struct dns_query q = {.qtype = DNS_TYPE_A, .qclass = DNS_CLASS_IN, .edns = true};
	size_t len = 0;
	int ret;

	snprintf(q.name, sizeof(q.name), "example.com");
	for (size_t i = 0; i < DNS_MAX_ANSWERS; i++)
		answers[i] = rr_a("example.com", 60, (uint8_t)i);
	ret = dns_build_reply(&q, 0, answers, DNS_MAX_ANSWERS, out, sizeof(out), &len);
	EXPECT(!ret, "expected 0, got %d", ret);
	EXPECT(len == 40 + 64 * 16, "expected %d bytes, got %zu", 40 + 64 * 16, len);
	if (!parse_reply(out, len, &r, why))
		return false;
	EXPECT(!(r.flags & DNS_FLAG_TC) && r.n_answers == DNS_MAX_ANSWERS,
	       "expected 64 answers without TC, got %zu flags %#x", r.n_answers, r.flags);
	return true;
}

static bool build_root(char *why)
{
	struct dns_query q = {.id = 9, .qtype = DNS_TYPE_NS, .qclass = DNS_CLASS_IN};
	struct dns_rr answers[] = {rr_cname("", "root.example")};
	struct dns_response r;
	uint8_t out[512];
	size_t len = 0;
	int ret = dns_build_reply(&q, 0, answers, 1, out, sizeof(out), &len);

	EXPECT(!ret, "expected 0, got %d", ret);
	EXPECT(len == 12 + 5 + 11 + 14, "expected %d bytes, got %zu", 12 + 5 + 11 + 14, len);
	if (!parse_reply(out, len, &r, why))
		return false;
	EXPECT(!r.qname[0] && r.n_answers == 1, "expected root question and 1 answer, got %s %zu",
	       r.qname, r.n_answers);
	return rr_equal(&answers[0], &r.answers[0], 0, why);
}

static bool build_flags(char *why)
{
	struct dns_query q = {.id = 1, .flags = 0x0130, .qtype = 1, .qclass = DNS_CLASS_IN};
	uint8_t out[512];
	size_t len = 0;
	int ret;

	snprintf(q.name, sizeof(q.name), "a.b");
	ret = dns_build_reply(&q, DNS_RCODE_REFUSED, NULL, 0, out, sizeof(out), &len);
	EXPECT(!ret, "expected 0, got %d", ret);
	/* RD and CD copied, AD not; QR and RA set; no OPT without EDNS. */
	EXPECT(out[2] == 0x81 && out[3] == 0x95, "expected flags 8195, got %02x%02x", out[2],
	       out[3]);
	EXPECT(len == 12 + 5 + 4 && out[11] == 0, "expected 21 bytes without OPT, got %zu", len);
	return true;
}

static bool build_refusals(char *why)
{
	static const char *const bad_names[] = {
		"a..b",
		".a",
		"a.",
		".",
		"a b",
		"a\\.b",
		"a\\b",
		"a\x7f",
		"a\xc3\xa9",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", /* 64 */
	};
	static struct dns_rr many[DNS_MAX_ANSWERS + 1];
	struct dns_query q = {.qtype = 1, .qclass = DNS_CLASS_IN};
	struct dns_rr rr = rr_a("example.com", 1, 1);
	uint8_t out[512];
	size_t len = 0;
	int ret;

	snprintf(q.name, sizeof(q.name), "example.com");
	rr.type = DNS_TYPE_MX;
	ret = dns_build_reply(&q, 0, &rr, 1, out, sizeof(out), &len);
	EXPECT(ret == -EINVAL, "expected -EINVAL for an MX answer, got %d", ret);
	rr = rr_a("example.com", 1, 1);
	rr.rclass = 3;
	ret = dns_build_reply(&q, 0, &rr, 1, out, sizeof(out), &len);
	EXPECT(ret == -EINVAL, "expected -EINVAL for class CH, got %d", ret);
	for (size_t i = 0; i < ARRAY_SIZE(bad_names); i++) {
		rr = rr_a(bad_names[i], 1, 1);
		ret = dns_build_reply(&q, 0, &rr, 1, out, sizeof(out), &len);
		EXPECT(ret == -EINVAL, "expected -EINVAL for owner \"%s\", got %d", bad_names[i],
		       ret);
		rr = rr_cname("example.com", bad_names[i]);
		ret = dns_build_reply(&q, 0, &rr, 1, out, sizeof(out), &len);
		EXPECT(ret == -EINVAL, "expected -EINVAL for target \"%s\", got %d", bad_names[i],
		       ret);
		snprintf(q.name, sizeof(q.name), "%s", bad_names[i]);
		ret = dns_build_query(&q, 1, out, sizeof(out), &len);
		EXPECT(ret == -EINVAL, "expected -EINVAL for query name \"%s\", got %d",
		       bad_names[i], ret);
		snprintf(q.name, sizeof(q.name), "example.com");
	}
	memset(q.name, 'a', sizeof(q.name)); /* no NUL */
	ret = dns_build_reply(&q, 0, NULL, 0, out, sizeof(out), &len);
	EXPECT(ret == -EINVAL, "expected -EINVAL for an unterminated name, got %d", ret);
	snprintf(q.name, sizeof(q.name), "example.com");
	ret = dns_build_reply(&q, 16, NULL, 0, out, sizeof(out), &len);
	EXPECT(ret == -EINVAL, "expected -EINVAL for rcode 16, got %d", ret);
	for (size_t i = 0; i < ARRAY_SIZE(many); i++)
		many[i] = rr_a("example.com", 1, 1);
	ret = dns_build_reply(&q, 0, many, ARRAY_SIZE(many), out, sizeof(out), &len);
	EXPECT(ret == -E2BIG, "expected -E2BIG for 65 answers, got %d", ret);
	ret = dns_build_reply(&q, 0, many, 1, out, 20, &len);
	EXPECT(ret == -ENOSPC, "expected -ENOSPC for 20 bytes, got %d", ret);
	ret = dns_build_query(&q, 1, out, 38, &len);
	EXPECT(ret == -ENOSPC, "expected -ENOSPC for a 38-byte query buffer, got %d", ret);
	q.qclass = 255;
	ret = dns_build_reply(&q, 0, NULL, 0, out, sizeof(out), &len);
	EXPECT(ret == -EINVAL, "expected -EINVAL for a class ANY question, got %d", ret);
	return true;
}

/* A 253-character CNAME target next to a 253-character owner: the largest names, compressed. */
static bool build_long_names(char *why)
{
	struct dns_query q = {.qtype = 1, .qclass = DNS_CLASS_IN, .edns = true};
	struct dns_rr answers[3];
	struct dns_response r;
	char name[DNS_NAME_MAX];
	uint8_t out[1024];
	size_t len = 0;
	int ret;

	memset(name, 'a', 253);
	for (int i = 1; i < 253; i += 2)
		name[i] = '.';
	name[253] = '\0';
	snprintf(q.name, sizeof(q.name), "%s", name);
	answers[0] = rr_cname(name, name + 2);
	answers[1] = rr_cname(name + 2, name + 200);
	answers[2] = rr_a(name + 200, 5, 5);
	ret = dns_build_reply(&q, 0, answers, 3, out, sizeof(out), &len);
	EXPECT(!ret, "expected 0, got %d", ret);
	/* Question 271; two CNAMEs, all pointers, 14 each; A 16; OPT 11. */
	EXPECT(len == 271 + 14 + 14 + 16 + 11, "expected %d bytes, got %zu",
	       271 + 14 + 14 + 16 + 11, len);
	if (!parse_reply(out, len, &r, why))
		return false;
	EXPECT(r.n_answers == 3, "expected 3 answers, got %zu", r.n_answers);
	for (size_t i = 0; i < 3; i++)
		if (!rr_equal(&answers[i], &r.answers[i], i, why))
			return false;
	return true;
}

/*
 * The answers of the nested-owners response, answered again: each owner is the one before with a
 * label more, so compression against the longest written suffix alone would chain a pointer
 * more per name, past the 32 hops a parser follows. The reply must parse back.
 */
static bool build_nested_owners(char *why)
{
	static struct dns_response r, back;
	static struct dns_rr answers[DNS_MAX_ANSWERS];
	static uint8_t out[DNS_MSG_MAX];
	struct dns_query q = {.qtype = DNS_TYPE_A, .qclass = DNS_CLASS_IN};
	static struct pkt p;
	char reason[REASON_LEN] = "";
	size_t len = 0, n = 0;
	int ret;

	gen_nested_owners(&p);
	ret = dns_parse_response(p.b, p.len, &r, reason, sizeof(reason));
	EXPECT(!ret, "expected the response to parse, got %d \"%s\"", ret, reason);
	for (size_t i = 0; i < r.n_answers; i++)
		if (r.answers[i].decoded)
			answers[n++] = r.answers[i];
	snprintf(q.name, sizeof(q.name), "%s", r.qname);
	ret = dns_build_reply(&q, 0, answers, n, out, sizeof(out), &len);
	EXPECT(!ret, "expected 0, got %d", ret);
	ret = dns_parse_response(out, len, &back, reason, sizeof(reason));
	EXPECT(!ret, "expected the reply to parse back, got %d \"%s\"", ret, reason);
	EXPECT(back.n_answers == n, "expected %zu answers, got %zu", n, back.n_answers);
	for (size_t i = 0; i < n; i++)
		if (!rr_equal(&answers[i], &back.answers[i], i, why))
			return false;
	return true;
}

/*
 * 64 CNAMEs with distinct 251-character owners, each pointing at the one before: more labels than
 * the compression table holds, and names past offset 0x3fff, where no pointer can reach.
 */
static bool build_many_long_names(char *why)
{
	static struct dns_rr answers[DNS_MAX_ANSWERS];
	static struct dns_response back;
	static uint8_t out[DNS_MSG_MAX];
	struct dns_query q = {.qtype = DNS_TYPE_A, .qclass = DNS_CLASS_IN};
	size_t len = 0;
	int ret;

	snprintf(q.name, sizeof(q.name), "start.example");
	for (size_t i = 0; i < DNS_MAX_ANSWERS; i++) {
		char *name = answers[i].name;

		memset(name, 'x', 251);
		for (size_t l = 0; l < 4; l++) {
			name[l * 63] = (char)('a' + i % 26);
			name[l * 63 + 1] = (char)('a' + i / 26);
			name[l * 63 + 2] = (char)('0' + l);
			if (l)
				name[l * 63 - 1] = '.';
		}
		name[251] = '\0';
		answers[i].type = DNS_TYPE_CNAME;
		answers[i].rclass = DNS_CLASS_IN;
		answers[i].ttl = (uint32_t)i;
		answers[i].decoded = true;
		snprintf(answers[i].data.target, sizeof(answers[i].data.target), "%s",
			 i ? answers[i - 1].name : q.name);
	}
	ret = dns_build_reply(&q, 0, answers, DNS_MAX_ANSWERS, out, sizeof(out), &len);
	EXPECT(!ret, "expected 0, got %d", ret);
	EXPECT(len > 0x4000, "expected a reply past 0x3fff, got %zu bytes", len);
	if (!parse_reply(out, len, &back, why))
		return false;
	EXPECT(back.n_answers == DNS_MAX_ANSWERS, "expected 64 answers, got %zu", back.n_answers);
	for (size_t i = 0; i < DNS_MAX_ANSWERS; i++)
		if (!rr_equal(&answers[i], &back.answers[i], i, why))
			return false;
	return true;
}

static bool build_query_roundtrip(char *why)
{
	struct dns_query q, back;
	char reason[REASON_LEN] = "";
	uint8_t out[512];
	size_t len = 0;
	int ret;

	if (!parse_dig_upper(&q, why))
		return false;
	ret = dns_build_query(&q, 0x4242, out, sizeof(out), &len);
	EXPECT(!ret, "expected 0, got %d", ret);
	EXPECT(len == 12 + 17 + 4 + 11, "expected 44 bytes, got %zu", len);
	ret = dns_parse_query(out, len, &back, reason, sizeof(reason));
	EXPECT(!ret, "expected the query to parse back, got %d \"%s\"", ret, reason);
	EXPECT(back.id == 0x4242 && back.flags == DNS_FLAG_RD,
	       "expected id 0x4242 and flags RD, got %#x %#x", back.id, back.flags);
	if (!name_is(back.name, "www.example.com", "name", why) ||
	    !name_is(back.name_orig, "www.example.com", "name sent upstream", why))
		return false;
	EXPECT(back.qtype == DNS_TYPE_AAAA && back.qclass == DNS_CLASS_IN,
	       "expected AAAA IN, got %u %u", back.qtype, back.qclass);
	EXPECT(back.edns && back.edns_udp_size == 1232 && back.edns_do,
	       "expected EDNS 1232 with DO, got edns %d size %u do %d", back.edns,
	       back.edns_udp_size, back.edns_do);
	q.edns_do = false;
	ret = dns_build_query(&q, 1, out, sizeof(out), &len);
	EXPECT(!ret && !dns_parse_query(out, len, &back, NULL, 0) && !back.edns_do,
	       "expected DO clear when the client's was, got %d do %d", ret, back.edns_do);
	return true;
}

static bool misc_type_name(char *why)
{
	static const struct {
		uint16_t type;
		const char *want;
	} cases[] = {
		{1, "A"},    {28, "AAAA"},   {5, "CNAME"},	   {65, "HTTPS"}, {64, "SVCB"},
		{99, "SPF"}, {98, "TYPE98"}, {65535, "TYPE65535"}, {0, "TYPE0"},
	};
	char buf[16];
	const char *s;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		s = dns_type_name(cases[i].type, buf, sizeof(buf));
		EXPECT(s && !strcmp(s, cases[i].want), "expected %s, got %s", cases[i].want,
		       s ? s : "NULL");
	}
	errno = 0;
	s = dns_type_name(65535, buf, 9);
	EXPECT(!s && errno == ENOSPC, "expected NULL and ENOSPC for 9 bytes, got %s errno %d",
	       s ? s : "NULL", errno);
	s = dns_type_name(1, NULL, 0);
	EXPECT(s && !strcmp(s, "A"), "expected A without a buffer, got %s", s ? s : "NULL");
	errno = 0;
	s = dns_type_name(1000, NULL, 0);
	EXPECT(!s && errno == EINVAL, "expected NULL and EINVAL without a buffer, got errno %d",
	       errno);
	return true;
}

static bool misc_null_args(char *why)
{
	static uint8_t big[DNS_MSG_MAX + 1];
	static struct dns_response r;
	struct dns_query q;
	char reason[4] = "xxx";
	int ret;

	ret = dns_parse_query(NULL, 10, &q, NULL, 0);
	EXPECT(ret == -EINVAL, "expected -EINVAL for a NULL query, got %d", ret);
	ret = dns_parse_response((const uint8_t *)"", 0, NULL, NULL, 0);
	EXPECT(ret == -EINVAL, "expected -EINVAL for a NULL response, got %d", ret);
	ret = dns_parse_response(NULL, 0, &r, reason, sizeof(reason));
	EXPECT(ret == -EBADMSG && strlen(reason) == 3,
	       "expected -EBADMSG and a reason cut to 3 characters, got %d \"%s\"", ret, reason);
	ret = dns_parse_query(big, DNS_MSG_MAX + 1, &q, NULL, 0);
	EXPECT(ret == -EBADMSG, "expected -EBADMSG for 65536 bytes, got %d", ret);
	ret = dns_build_reply(NULL, 0, NULL, 0, NULL, 0, NULL);
	EXPECT(ret == -EINVAL, "expected -EINVAL for NULL, got %d", ret);
	ret = dns_build_query(NULL, 0, NULL, 0, NULL);
	EXPECT(ret == -EINVAL, "expected -EINVAL for NULL, got %d", ret);
	return true;
}

/* Every prefix of the CNAME chain is refused cleanly, and nothing is kept. */
static bool misc_prefixes(char *why)
{
	static struct dns_response r;
	const struct msg_case *c = &response_cases[1];
	struct dns_query q;

	for (size_t n = 0; n < c->len; n++) {
		int ret = dns_parse_response(c->msg, n, &r, NULL, 0);

		EXPECT(ret == -EBADMSG && !r.n_answers && !r.qname[0],
		       "expected -EBADMSG and nothing kept at cut %zu, got %d", n, ret);
	}
	c = &query_cases[0];
	for (size_t n = 0; n < c->len; n++) {
		int ret = dns_parse_query(c->msg, n, &q, NULL, 0);

		EXPECT(ret == -EBADMSG && !q.name[0] && !q.qtype,
		       "expected -EBADMSG and nothing kept at cut %zu, got %d", n, ret);
	}
	return true;
}

struct misc_case {
	const char *name;
	bool (*fn)(char *why);
};

static const struct misc_case misc_cases[] = {
	{"build: NXDOMAIN reply echoes the question (as cased) and EDNS with DO", build_nxdomain},
	{"build: CNAME+CNAME+A+A+AAAA reply parses back identically", build_cname_a_aaaa},
	{"build: truncation at 512 keeps whole records and sets TC", build_truncated},
	{"build: 64 answers in 4096 bytes, no TC", build_no_truncation},
	{"build: reply for the root name", build_root},
	{"build: reply flags QR RA, RD and CD copied, rcode", build_flags},
	{"build: 253-character names compress and parse back", build_long_names},
	{"build: compression never chains more than 32 pointers", build_nested_owners},
	{"build: full compression table, names past 0x3fff", build_many_long_names},
	{"build: refuses bad types, classes, names, rcode, counts, space", build_refusals},
	{"build: upstream query parses back as a query", build_query_roundtrip},
	{"misc: dns_type_name", misc_type_name},
	{"misc: NULL arguments, a short reason buffer, 65536 bytes", misc_null_args},
	{"misc: every prefix of a good message is refused, nothing kept", misc_prefixes},
};

/*
 * The corpus: every file goes to both parsers, which must return 0 or a documented error; a query
 * that parses is answered and the answer must parse. Under -fsanitize=address this is the
 * fuzzer's regression run.
 */
static bool corpus_file(const uint8_t *buf, size_t len, const char *file, char *why)
{
	static struct dns_response r;
	static uint8_t out[DNS_UDP_MIN];
	struct dns_rr rr = rr_a("", 1, 1);
	struct dns_query q;
	size_t out_len = 0;
	int ret;

	ret = dns_parse_response(buf, len, &r, NULL, 0);
	EXPECT(!ret || ret == -EBADMSG || ret == -E2BIG,
	       "expected 0, -EBADMSG or -E2BIG from the response parser for %s, got %d", file, ret);
	ret = dns_parse_query(buf, len, &q, NULL, 0);
	EXPECT(!ret || ret == -EBADMSG,
	       "expected 0 or -EBADMSG from the query parser for %s, got %d", file, ret);
	if (ret)
		return true;
	snprintf(rr.name, sizeof(rr.name), "%s", q.name);
	ret = dns_build_reply(&q, 0, &rr, 1, out, sizeof(out), &out_len);
	EXPECT(!ret, "expected a reply to %s, got %d", file, ret);
	ret = dns_parse_response(out, out_len, &r, NULL, 0);
	EXPECT(!ret && r.n_answers == 1, "expected the reply to %s to parse, got %d", file, ret);
	return true;
}

static void run_corpus(const char *root)
{
	static uint8_t buf[DNS_MSG_MAX + 1];
	char why[WHY_LEN] = "", dir[2048], path[2048 + 258], name[64];
	struct dirent *de;
	size_t n_files = 0;
	DIR *d = NULL;
	int n;

	n = snprintf(dir, sizeof(dir), "%s/selftests/unit/dns-corpus", root);
	if (n < 0 || (size_t)n >= sizeof(dir)) {
		snprintf(why, WHY_LEN, "expected a corpus path under 2048 bytes, got %d", n);
		goto out;
	}
	d = opendir(dir);
	if (!d) {
		snprintf(why, WHY_LEN, "expected to open %s, got %s", dir, strerror(errno));
		goto out;
	}
	while ((de = readdir(d))) {
		struct stat st;
		size_t len;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			snprintf(why, WHY_LEN, "expected a path under %zu bytes for %s",
				 sizeof(path), de->d_name);
			goto out;
		}
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		f = fopen(path, "rb");
		if (!f) {
			snprintf(why, WHY_LEN, "expected to read %s, got %s", path,
				 strerror(errno));
			goto out;
		}
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		n_files++;
		if (!corpus_file(buf, len, de->d_name, why))
			goto out;
	}
	if (!n_files)
		snprintf(why, WHY_LEN, "expected seed files in %s, got none", dir);
out:
	if (d)
		closedir(d);
	n = snprintf(name, sizeof(name), "corpus: %zu files, no crash", n_files);
	if (n < 0 || (size_t)n >= sizeof(name))
		snprintf(name, sizeof(name), "corpus");
	report(!why[0], name, why);
}

/* "query: pointer to itself" -> "pointer-to-itself", at most len - 1 characters. */
static void slug(const char *name, char *buf, size_t len)
{
	const char *s = strchr(name, ':');
	size_t o = 0;

	for (s = s ? s + 1 : name; *s && o + 1 < len; s++) {
		if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))
			buf[o++] = *s;
		else if (*s >= 'A' && *s <= 'Z')
			buf[o++] = (char)(*s - 'A' + 'a');
		else if (o && buf[o - 1] != '-')
			buf[o++] = '-';
	}
	while (o && buf[o - 1] == '-')
		o--;
	buf[o] = '\0';
}

/* Seeds for the corpus: every table message, one file each, named for its case. */
static int write_corpus(const char *dir)
{
	static const struct {
		const char *prefix;
		const struct msg_case *cases;
		size_t n;
	} tables[] = {
		{"q", query_cases, ARRAY_SIZE(query_cases)},
		{"r", response_cases, ARRAY_SIZE(response_cases)},
	};
	static struct pkt p;

	for (size_t t = 0; t < ARRAY_SIZE(tables); t++) {
		for (size_t i = 0; i < tables[t].n; i++) {
			const struct msg_case *c = &tables[t].cases[i];
			char path[4096], name[48];
			const uint8_t *msg;
			size_t len;
			FILE *f;
			int n;

			message_of(c, &p, &msg, &len);
			slug(c->name, name, sizeof(name));
			n = snprintf(path, sizeof(path), "%s/%s-%02zu-%s", dir, tables[t].prefix, i,
				     name);
			if (n < 0 || (size_t)n >= sizeof(path)) {
				fprintf(stderr, "corpus path too long: %s\n", dir);
				return 1;
			}
			f = fopen(path, "wb");
			if (!f || fwrite(msg, 1, len, f) != len) {
				fprintf(stderr, "write %s: %s\n", path, strerror(errno));
				if (f)
					fclose(f);
				return 1;
			}
			if (fclose(f)) {
				fprintf(stderr, "close %s: %s\n", path, strerror(errno));
				return 1;
			}
		}
	}
	return 0;
}

#ifndef SLUICE_SRC_DIR
#define SLUICE_SRC_DIR "."
#endif

int main(int argc, char **argv)
{
	size_t plan =
		ARRAY_SIZE(query_cases) + ARRAY_SIZE(response_cases) + ARRAY_SIZE(misc_cases) + 1;
	const char *root;

	if (argc == 3 && !strcmp(argv[1], "--write-corpus"))
		return write_corpus(argv[2]);
	/* The Makefile bakes in the source tree; an argument overrides it (prove passes none). */
	if (argc > 2) {
		fprintf(stderr, "usage: %s [REPO_ROOT] | --write-corpus DIR\n", argv[0]);
		return 2;
	}
	root = argc == 2 ? argv[1] : SLUICE_SRC_DIR;
	printf("TAP version 13\n1..%zu\n", plan);
	for (size_t i = 0; i < ARRAY_SIZE(query_cases); i++)
		run_query_case(&query_cases[i]);
	for (size_t i = 0; i < ARRAY_SIZE(response_cases); i++)
		run_response_case(&response_cases[i]);
	for (size_t i = 0; i < ARRAY_SIZE(misc_cases); i++) {
		char why[WHY_LEN] = "";

		report(misc_cases[i].fn(why), misc_cases[i].name, why);
	}
	run_corpus(root);
	return tap_status();
}
