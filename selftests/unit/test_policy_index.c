// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/policy_index.c, the index sluice policy replay judges connections
 * through: on random policies (hosts exact and wildcard, CIDRs of both families and the forms
 * that name IPv4 destinations, overlapping port lists and ranges, protocols) every answer equals
 * the policy module's own (policy_match_host, policy_rule_takes, policy_cidr_match) for random
 * names, addresses and ports; and on the policies an attacker or a careless generator writes (a
 * rule listing all 65,535 ports one by one, 30,000 ranges, 100,000 CIDRs, 50,000 names) a lookup
 * costs a bounded number of steps, not the length of a list.
 *
 * Usage: test_policy_index     TAP 13; exits 1 if any test failed. Needs no root.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/policy.h"
#include "userspace/policy_index.h"
#include "tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* A growing text buffer. */
struct buf {
	char *s;
	size_t n, cap;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (n >= 0 && b->n + (size_t)n < b->cap)
			break;
		b->cap = b->cap ? b->cap * 2 : 4096;
		b->s = realloc(b->s, b->cap);
		if (!b->s)
			exit(2);
	}
	b->n += (size_t)n;
}

static const char *const labels[] = {"a", "b", "pkgs", "api", "cdn", "x"};
static const char *const parents[] = {"example", "example.com", "b.example", "test"};

static void random_name(char *out, size_t len)
{
	snprintf(out, len, "%s%s%s.%s", rnd(3) ? labels[rnd(ARRAY_SIZE(labels))] : "",
		 rnd(2) ? "." : "", labels[rnd(ARRAY_SIZE(labels))],
		 parents[rnd(ARRAY_SIZE(parents))]);
	if (out[0] == '.')
		memmove(out, out + 1, strlen(out));
}

static void clear_host_bits(uint8_t *a, unsigned int bytes, unsigned int plen)
{
	unsigned int i;

	for (i = 0; i < bytes; i++, plen = plen >= 8 ? plen - 8 : 0)
		if (plen < 8)
			a[i] &= (uint8_t)(0xff00 >> plen);
}

/* A network-aligned CIDR in a small space, so that rules overlap and addresses hit them. */
static void random_cidr(char *out, size_t len)
{
	uint8_t a[16] = {0};
	unsigned int plen;
	int n;

	switch (rnd(4)) {
	case 0:
		plen = 8 + rnd(25);
		a[0] = 10;
		a[1] = (uint8_t)rnd(5);
		a[2] = (uint8_t)rnd(5);
		a[3] = (uint8_t)rnd(256);
		clear_host_bits(a, 4, plen);
		inet_ntop(AF_INET, a, out, (socklen_t)len);
		break;
	case 1:
		/* ::ffff:10.0.0.0/104 or 64:ff9b::10.0.0.0/104 and longer: IPv4 destinations */
		plen = 104 + rnd(25);
		if (rnd(2)) {
			a[10] = a[11] = 0xff;
		} else {
			a[1] = 0x64;
			a[2] = 0xff;
			a[3] = 0x9b;
		}
		a[12] = 10;
		a[13] = (uint8_t)rnd(5);
		a[14] = (uint8_t)rnd(5);
		a[15] = (uint8_t)rnd(256);
		clear_host_bits(a, 16, plen);
		inet_ntop(AF_INET6, a, out, (socklen_t)len);
		break;
	case 2:
		plen = 32 + rnd(3) * 16;
		a[0] = 0x20;
		a[1] = 0x01;
		a[2] = 0x0d;
		a[3] = 0xb8;
		a[5] = (uint8_t)rnd(4);
		clear_host_bits(a, 16, plen);
		inet_ntop(AF_INET6, a, out, (socklen_t)len);
		break;
	default:
		snprintf(out, len, "%s", rnd(2) ? "0.0.0.0/0" : "::/0");
		return;
	}
	n = (int)strlen(out);
	snprintf(out + n, len - (size_t)n, "/%u", plen);
}

static struct policy *random_policy(char *why)
{
	struct buf b = {0};
	struct policy *p = NULL;
	char err[512], s[128];
	size_t r, k, n_rules = 1 + rnd(12);

	put(&b, "default: deny\nrules:\n");
	for (r = 0; r < n_rules; r++) {
		put(&b, "  - name: r%zu\n", r);
		if (rnd(2)) {
			put(&b, "    hosts: [");
			for (k = 0; k < 1 + rnd(4); k++) {
				random_name(s, sizeof(s));
				put(&b, "%s\"%s%s\"", k ? ", " : "", rnd(3) ? "" : "*.", s);
			}
			put(&b, "]\n");
		} else {
			put(&b, "    cidrs: [");
			for (k = 0; k < 1 + rnd(4); k++) {
				random_cidr(s, sizeof(s));
				put(&b, "%s\"%s\"", k ? ", " : "", s);
			}
			put(&b, "]\n");
		}
		if (rnd(4)) {
			put(&b, "    ports: [");
			for (k = 0; k < 1 + rnd(6); k++) {
				unsigned int lo = 1 + rnd(40);

				if (rnd(2))
					put(&b, "%s%u", k ? ", " : "", lo);
				else
					put(&b, "%s%u-%u", k ? ", " : "", lo, lo + rnd(20));
			}
			put(&b, "]\n");
		}
		if (rnd(2))
			put(&b, "    protocols: [%s]\n",
			    rnd(3) == 0 ? "udp" : rnd(2) ? "tcp" : "tcp, udp, icmp");
	}
	if (policy_load_buffer(b.s, b.n, "random.yaml", &p, err, sizeof(err))) {
		snprintf(why, WHY_LEN, "a random policy does not load: %s\n%s", err, b.s);
		p = NULL;
	}
	free(b.s);
	return p;
}

static void random_addr(int *family, uint8_t a[16])
{
	char s[64];

	switch (rnd(4)) {
	case 0:
		snprintf(s, sizeof(s), "10.%u.%u.%u", rnd(5), rnd(5), rnd(256));
		break;
	case 1:
		snprintf(s, sizeof(s), "%s10.%u.%u.%u", rnd(3) == 0 ? "::" : rnd(2) ? "::ffff:" :
										 "64:ff9b::",
			 rnd(5), rnd(5), rnd(256));
		break;
	case 2:
		snprintf(s, sizeof(s), "2001:db8:%u::%x", rnd(4), rnd(65536));
		break;
	default:
		snprintf(s, sizeof(s), "%s", rnd(2) ? "192.0.2.1" : "2002:a00:1::1");
		break;
	}
	*family = strchr(s, ':') ? AF_INET6 : AF_INET;
	inet_pton(*family, s, a);
}

/* The index answers every question as the policy module does. */
static bool check_same_answers(char *why)
{
	static const uint8_t protos[] = {SL_PROTO_TCP, SL_PROTO_UDP, SL_PROTO_ICMP};
	unsigned int host_hits = 0, cidr_hits = 0, queries = 0;
	int round, q;

	for (round = 0; round < 300; round++) {
		struct policy_index *x = NULL;
		struct policy *p = random_policy(why);

		if (!p)
			return false;
		EXPECT(!policy_index_new(p, &x), "index");
		for (q = 0; q < 400; q++) {
			char name[128];
			uint8_t a[16], proto = protos[rnd(3)];
			uint16_t port = (uint16_t)rnd(70);
			int family;
			long want, got;
			size_t r = rnd((uint32_t)p->n_rules);

			queries++;
			random_name(name, sizeof(name));
			want = policy_match_host(p, name);
			host_hits += want >= 0;
			got = policy_index_host(x, name);
			EXPECT(want == got, "host %s: policy says rule %ld, the index %ld", name, want,
			       got);
			EXPECT(policy_rule_takes(&p->rules[r], port, proto) ==
				       policy_index_takes(x, r, port, proto),
			       "rule %zu, port %u, proto %u: the index differs", r, port, proto);
			random_addr(&family, a);
			want = policy_cidr_match(p, family, a, port, proto);
			got = policy_index_cidr(x, family, a, port, proto);
			cidr_hits += want >= 0;
			if (want != got) {
				char s[64];

				inet_ntop(family, a, s, sizeof(s));
				EXPECT(false, "%s port %u proto %u: policy says rule %ld, the index %ld",
				       s, port, proto, want, got);
			}
		}
		policy_index_free(x);
		policy_free(p);
	}
	/* not a comparison of two "no match"es: the random inputs hit the random rules */
	EXPECT(host_hits * 50 > queries && cidr_hits * 10 > queries,
	       "too few matches to compare: %u names, %u addresses of %u", host_hits, cidr_hits,
	       queries);
	return true;
}

/*
 * The lists a policy can hold at its limits cost a lookup a few dozen steps, not their length:
 * all 65,535 ports listed one by one, 30,000 ranges, 99,000 CIDRs (one prefix length), 50,000
 * names, and 1,000 rules sharing one CIDR on other ports before the one that takes the port.
 */
static bool check_bounded(char *why)
{
	struct buf b = {0};
	struct policy *p = NULL;
	struct policy_index *x = NULL;
	char err[512];
	uint8_t a[16];
	unsigned int i;
	uint64_t steps;
	long got;

	put(&b, "default: deny\nrules:\n  - name: every-port\n    hosts: [\"a.example\"]\n"
		 "    ports: [");
	for (i = 1; i <= 65535; i++)
		put(&b, "%s%u", i > 1 ? ", " : "", i);
	put(&b, "]\n  - name: ranges\n    hosts: [\"b.example\"]\n    ports: [");
	for (i = 0; i < 30000; i++)
		put(&b, "%s%u-%u", i ? ", " : "", 2 * i + 1, 2 * i + 1);
	put(&b, "]\n  - name: many-cidrs\n    cidrs: [");
	for (i = 0; i < 99000; i++)
		put(&b, "%s\"10.%u.%u.%u/32\"", i ? ", " : "", i >> 16, (i >> 8) & 0xff, i & 0xff);
	put(&b, "]\n    ports: [443]\n  - name: many-names\n    hosts: [");
	for (i = 0; i < 50000; i++)
		put(&b, "%s\"h%u.example\"", i ? ", " : "", i);
	put(&b, "]\n");
	for (i = 0; i < 1000; i++)
		put(&b, "  - cidrs: [\"192.0.2.0/24\"]\n    ports: [%u]\n", 1000 + i);
	EXPECT(!policy_load_buffer(b.s, b.n, "big.yaml", &p, err, sizeof(err)), "loads: %s", err);
	free(b.s);
	EXPECT(!policy_index_new(p, &x), "index");
	for (i = 0; i < 10000; i++) {
		uint16_t port = (uint16_t)(1 + rnd(65535));

		EXPECT(policy_index_takes(x, 0, port, SL_PROTO_TCP), "every port: %u", port);
		EXPECT(policy_index_takes(x, 1, port, SL_PROTO_TCP) == (port <= 59999 && port % 2),
		       "ranges: %u", port);
	}
	steps = policy_index_steps(x);
	EXPECT(steps <= 20000 * 20, "20,000 port lookups took %" PRIu64 " steps (a walk: 65,535 "
				    "or 30,000 each)",
	       steps);

	for (i = 0; i < 10000; i++) {
		uint32_t n = rnd(99000);

		inet_pton(AF_INET, "10.0.0.0", a);
		a[1] = (uint8_t)(n >> 16);
		a[2] = (uint8_t)(n >> 8);
		a[3] = (uint8_t)n;
		got = policy_index_cidr(x, AF_INET, a, 443, SL_PROTO_TCP);
		EXPECT(got == 2, "10.%u.%u.%u: rule 2, got %ld", a[1], a[2], a[3], got);
	}
	steps = policy_index_steps(x) - steps;
	EXPECT(steps <= 10000 * 8, "10,000 lookups among 99,000 CIDRs took %" PRIu64 " steps",
	       steps);

	steps = policy_index_steps(x);
	for (i = 0; i < 10000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "h%u.example", rnd(60000));
		got = policy_index_host(x, name);
		EXPECT(got == (strtoul(name + 1, NULL, 10) < 50000 ? 3 : -1), "%s: got %ld", name,
		       got);
	}
	steps = policy_index_steps(x) - steps;
	EXPECT(steps <= 10000 * 8, "10,000 lookups among 50,000 names took %" PRIu64 " steps",
	       steps);

	/* rules sharing one prefix are tried in order: this one is the bound's exception */
	inet_pton(AF_INET, "192.0.2.9", a);
	EXPECT(policy_index_cidr(x, AF_INET, a, 1999, SL_PROTO_TCP) == 1003, "the 1000th rule");
	EXPECT(policy_index_cidr(x, AF_INET, a, 80, SL_PROTO_TCP) == -1, "none on port 80");
	policy_index_free(x);
	policy_free(p);
	return true;
}

int main(void)
{
	char why[WHY_LEN];

	printf("TAP version 13\n1..2\n");
	report(check_same_answers(why),
	       "policy_index answers as policy_match_host, policy_rule_takes, policy_cidr_match",
	       why);
	report(check_bounded(why),
	       "policy_index: 65,535 ports, 30,000 ranges, 100,000 CIDRs, 50,000 names: lookups "
	       "in bounded steps",
	       why);
	return tap_status();
}
