// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of bpf/addr.bpf.h in userspace: the one address classifier the kernel programs, the
 * run's resolver (rebinding answers, P8) and the policy compiler (a rule inside the blackhole)
 * share. A table of addresses written out by hand, each form an IPv6 address can carry an IPv4
 * one in, with the class and embedded IPv4 address expected; and, over random addresses in each
 * of those forms, the resolver's "blackhole" is exactly what the kernel programs blackhole
 * (v4_is_blackholed, v6_blackholed_any), so no answer is handed out that a connect() could only
 * meet in the blackhole. And host_bytes_spent, the one rule for a host's spent byte budget.
 *
 * Usage: test_addr        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/addr.bpf.h"
#include "tap.h"

struct addr_case {
	const char *addr;
	enum sl_addr_class want;
	const char *embeds; /* the embedded IPv4 address that decides, or NULL */
};

#define PUB SL_ADDR_PUBLIC
#define PRIV SL_ADDR_PRIVATE
#define BH SL_ADDR_BLACKHOLE

static const struct addr_case addr_cases[] = {
	/* IPv4 */
	{"169.254.169.254", BH, NULL},
	{"169.254.0.0", BH, NULL},
	{"169.254.255.255", BH, NULL},
	{"169.253.255.255", PUB, NULL},
	{"169.255.0.0", PUB, NULL},
	{"0.0.0.0", PRIV, NULL},
	{"10.1.2.3", PRIV, NULL},
	{"100.64.0.1", PRIV, NULL},
	{"100.127.255.255", PRIV, NULL},
	{"100.128.0.0", PUB, NULL},
	{"127.0.0.1", PRIV, NULL},
	{"172.16.0.1", PRIV, NULL},
	{"172.31.255.255", PRIV, NULL},
	{"172.32.0.0", PUB, NULL},
	{"192.168.1.1", PRIV, NULL},
	{"224.0.0.1", PRIV, NULL},
	{"255.255.255.255", PRIV, NULL},
	{"198.51.100.10", PUB, NULL},
	{"8.8.8.8", PUB, NULL},
	/* IPv6, native */
	{"fe80::1", BH, NULL},
	{"febf:ffff::1", BH, NULL},
	{"fec0::1", PUB, NULL},
	{"fd00:ec2::254", BH, NULL},
	{"fd00:ec3::1", PRIV, NULL},
	{"fd12:3456::1", PRIV, NULL},
	{"fc00::1", PRIV, NULL},
	{"ff02::1", PRIV, NULL},
	{"::1", PRIV, NULL},
	{"::", PRIV, NULL},
	{"2001:db8::1", PUB, NULL},
	{"2606:4700::6810:84e5", PUB, NULL},
	/* the policy's embeddings: v4-mapped, well-known NAT64, IPv4-compatible */
	{"::ffff:169.254.169.254", BH, "169.254.169.254"},
	{"::ffff:10.1.2.3", PRIV, "10.1.2.3"},
	{"::ffff:198.51.100.10", PUB, NULL},
	{"64:ff9b::a9fe:a9fe", BH, "169.254.169.254"},
	{"64:ff9b::7f00:1", PRIV, "127.0.0.1"},
	{"64:ff9b::c633:640a", PUB, NULL},
	{"::a9fe:a9fe", BH, "169.254.169.254"},
	{"::c0a8:101", PRIV, "192.168.1.1"},
	/* lax translators: SIIT ::ffff:0:V4, the rest of 64:ff9b::/32 */
	{"::ffff:0:a9fe:a9fe", BH, "169.254.169.254"},
	{"::ffff:0:a01:203", PRIV, "10.1.2.3"},
	{"64:ff9b:5::a9fe:a9fe", BH, "169.254.169.254"},
	{"64:ff9b:5::a01:203", PUB, NULL}, /* its place is not fixed: not read as private */
	/* 6to4 */
	{"2002:a9fe:a9fe::1", BH, "169.254.169.254"},
	{"2002:a9fe:a9fe::", BH, "169.254.169.254"},
	{"2002:a01:203::1", PRIV, "10.1.2.3"},
	{"2002:7f00:1::", PRIV, "127.0.0.1"},
	{"2002:c633:640a::1", PUB, NULL},
	/* Teredo: server in bits 32-63, client inverted in the last 32 */
	{"2001:0:a9fe:a9fe::1", BH, "169.254.169.254"},
	{"2001:0:4136:e378:8000:63bf:5601:5601", BH, "169.254.169.254"},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", PUB, NULL}, /* RFC 4380's: 192.0.2.45 */
	{"2001:0:a01:203::ffff:ffff", PRIV, "10.1.2.3"},
	{"2001:0:4136:e378:8000:63bf:f5fe:fdfc", PRIV, "10.1.2.3"},
	/* ISATAP interface ids */
	{"2001:db8::5efe:a9fe:a9fe", BH, "169.254.169.254"},
	{"2001:db8::200:5efe:a9fe:a9fe", BH, "169.254.169.254"},
	{"2001:db8::5efe:a01:203", PRIV, "10.1.2.3"},
	{"2001:db8::5efe:c633:640a", PUB, NULL},
	/* the local-use NAT64 prefix: every RFC 6052 position for the blackhole, none private */
	{"64:ff9b:1::a9fe:a9fe", BH, "169.254.169.254"},
	{"64:ff9b:1:a9fe:a9:fe00::", BH, "169.254.169.254"},
	{"64:ff9b:1:a9:fe:a9fe::", BH, "169.254.169.254"},
	{"64:ff9b:1:0:a9:fea9:fe00:0", BH, "169.254.169.254"},
	{"64:ff9b:1::c633:640a", PUB, NULL},
	{"64:ff9b:1::a01:203", PUB, NULL},
	{"64:ff9b:1:808:64:6400::", PUB, NULL}, /* 8.8.100.100 at /48: 100.100.0.0 at /64 */
	/* two blackholed addresses: the kernel's order names the last 32 bits (decide_v6's eff_addr) */
	{"64:ff9b:1:a9fe:1:0:a9fe:a9fe", BH, "169.254.169.254"}, /* /48 reads 169.254.1.0 */
	{"2002:a9fe:101::5efe:a9fe:a9fe", BH, "169.254.1.1"},	  /* 6to4 before ISATAP */
};

static const char *class_name(enum sl_addr_class c)
{
	return c == BH ? "blackhole" : c == PRIV ? "private" : "public";
}

/* One row: class and embedded address; for IPv6, the kernel's predicate agrees on the blackhole. */
static bool run_addr_case(const struct addr_case *c, char *why)
{
	unsigned char a[16];
	char got_v4[INET_ADDRSTRLEN] = "-";
	int family = strchr(c->addr, ':') ? AF_INET6 : AF_INET;
	enum sl_addr_class cls;
	bool embedded, kernel;
	__u32 v4, w[4];

	EXPECT(inet_pton(family, c->addr, a) == 1, "cannot parse %s", c->addr);
	cls = addr_class(family, a, &v4, &embedded);
	if (embedded)
		inet_ntop(AF_INET, &v4, got_v4, sizeof(got_v4));
	EXPECT(cls == c->want && embedded == !!c->embeds &&
		       (!c->embeds || !strcmp(got_v4, c->embeds)),
	       "%s: expected %s (embeds %s), got %s (embeds %s)", c->addr, class_name(c->want),
	       c->embeds ? c->embeds : "-", class_name(cls), got_v4);
	memcpy(w, a, family == AF_INET ? 4 : 16);
	kernel = family == AF_INET ? v4_is_blackholed(w[0]) : v6_blackholed_any(w);
	EXPECT(kernel == (cls == BH), "%s: the kernel programs' blackhole says %d, addr_class %s",
	       c->addr, kernel, class_name(cls));
	return true;
}

/*
 * Random addresses in every form (and around it): the resolver's blackhole is the kernel's.
 * The IPv4 addresses are drawn half from 169.254/16, so that each form is met with both.
 */
static bool check_same_blackhole(char *why)
{
	static const unsigned char prefixes[][16] = {
		{0},						      /* ::/64, ::ffff: */
		{0x00, 0x64, 0xff, 0x9b},			      /* 64:ff9b::/32 */
		{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01},		      /* 64:ff9b:1::/48 */
		{0x20, 0x02},					      /* 6to4 */
		{0x20, 0x01, 0x00, 0x00},			      /* Teredo */
		{0x20, 0x01, 0x0d, 0xb8},			      /* ISATAP's iid */
		{0xfe, 0x80},					      /* link-local */
		{0xfd, 0x00, 0x0e, 0xc2},			      /* AWS IMDS */
	};
	static const unsigned int keep[] = {8, 4, 6, 2, 4, 4, 2, 4};
	unsigned int seed = 11;

	for (int round = 0; round < 200000; round++) {
		unsigned int p = (unsigned int)rand_r(&seed) % ARRAY_SIZE(prefixes);
		unsigned char a[16];
		enum sl_addr_class cls;
		__u32 v4, w[4];
		bool emb;

		for (int i = 0; i < 16; i++)
			a[i] = (unsigned char)rand_r(&seed);
		memcpy(a, prefixes[p], keep[p]);
		if (p == 0 && rand_r(&seed) % 2) {
			memset(a + 8, 0, 4);
			a[10] = a[11] = 0xff;
		}
		if (p == 5) {
			a[8] = rand_r(&seed) % 2 ? 0x02 : 0x00;
			a[9] = 0x00;
			a[10] = 0x5e;
			a[11] = 0xfe;
		}
		/* put 169.254 where one of the forms reads an IPv4 address */
		if (rand_r(&seed) % 2) {
			static const unsigned int at[] = {2, 4, 6, 7, 9, 12};
			unsigned int k = at[(unsigned int)rand_r(&seed) % ARRAY_SIZE(at)];

			/* /56 reads bits 56-63, then 72-95: byte 8 is the u octet */
			a[k] = 169;
			a[k == 7 ? 9 : k + 1] = 254;
			if (p == 4 && rand_r(&seed) % 2) {
				a[12] = (unsigned char)~169;
				a[13] = (unsigned char)~254;
			}
		}
		cls = addr_class(AF_INET6, a, &v4, &emb);
		memcpy(w, a, 16);
		if (v6_blackholed_any(w) != (cls == BH)) {
			char s[INET6_ADDRSTRLEN];

			inet_ntop(AF_INET6, a, s, sizeof(s));
			EXPECT(false, "%s: the kernel programs' blackhole says %d, addr_class %s",
			       s, v6_blackholed_any(w), class_name(cls));
		}
	}
	for (unsigned int x = 0; x < 1u << 16; x++) {
		unsigned char a[4] = {(unsigned char)(x >> 8), (unsigned char)x,
				      (unsigned char)rand_r(&seed), (unsigned char)rand_r(&seed)};
		__u32 v4, w;
		bool emb;

		memcpy(&w, a, 4);
		EXPECT(v4_is_blackholed(w) == (addr_class(AF_INET, a, &v4, &emb) == BH),
		       "%u.%u.%u.%u: the kernel and addr_class disagree", a[0], a[1], a[2], a[3]);
	}
	return true;
}

/*
 * dst_fate, what an address decides before any rule in the kernel programs (decide_v4,
 * decide_v6), the preexisting-socket scan and replay: the blackhole in every form, an embedded
 * IPv4 host judged as IPv4, a relayed one denied unless the default allows.
 */
struct fate_case {
	const char *addr;
	bool default_allow;
	enum sl_dst_fate want;
	const char *v4; /* the IPv4 address judged or blackholed, when one is embedded */
};

static const struct fate_case fate_cases[] = {
	{"198.51.100.10", false, SL_DST_V4, NULL},
	{"169.254.169.254", true, SL_DST_BLACKHOLE, NULL},
	{"2001:db8::10", false, SL_DST_V6, NULL},
	{"fe80::1", true, SL_DST_BLACKHOLE, NULL},
	{"fd00:ec2::254", true, SL_DST_BLACKHOLE, NULL},
	{"::ffff:198.51.100.10", false, SL_DST_V4, "198.51.100.10"},
	{"64:ff9b::c633:640a", false, SL_DST_V4, "198.51.100.10"},
	{"::ffff:169.254.169.254", true, SL_DST_BLACKHOLE, "169.254.169.254"},
	{"64:ff9b::a9fe:a9fe", true, SL_DST_BLACKHOLE, "169.254.169.254"},
	{"2002:a9fe:a9fe::1", true, SL_DST_BLACKHOLE, "169.254.169.254"},
	{"2002:c633:640a::1", false, SL_DST_RELAY, NULL},
	{"2002:c633:640a::1", true, SL_DST_V6, NULL},
};

static bool check_fates(char *why)
{
	static const char *const names[] = {"v4", "v6", "blackhole", "relay"};

	for (size_t i = 0; i < ARRAY_SIZE(fate_cases); i++) {
		const struct fate_case *c = &fate_cases[i];
		int family = strchr(c->addr, ':') ? AF_INET6 : AF_INET;
		char got_v4[INET_ADDRSTRLEN] = "-";
		enum sl_dst_fate fate;
		unsigned char a[16];
		bool embedded;
		__u32 v4;

		EXPECT(inet_pton(family, c->addr, a) == 1, "cannot parse %s", c->addr);
		fate = dst_fate(family, a, c->default_allow, &v4, &embedded);
		if (embedded)
			inet_ntop(AF_INET, &v4, got_v4, sizeof(got_v4));
		EXPECT(fate == c->want && embedded == !!c->v4 && (!c->v4 || !strcmp(got_v4, c->v4)),
		       "%s, default %s: expected %s (v4 %s), got %s (v4 %s)", c->addr,
		       c->default_allow ? "allow" : "deny", names[c->want], c->v4 ? c->v4 : "-",
		       names[fate], got_v4);
		EXPECT(family == AF_INET6 || !memcmp(&v4, a, 4),
		       "%s: an IPv4 destination's judged address is not itself", c->addr);
	}
	return true;
}

/*
 * host_bytes_spent, the rule the connect hooks and the switch's re-judge share: a total cap of N
 * bytes (stored N + 1) is spent at N, not at N - 1; a rule without total caps never; a host whose
 * flow was cut, at once.
 */
struct spent_case {
	__u64 total_req, total_resp; /* the caps as policy says them; ~0: none */
	__u64 req, resp;
	__u8 cut;
	bool want;
};

#define NONE (~(__u64)0)

static const struct spent_case spent_cases[] = {
	{100, NONE, 99, 0, 0, false},
	{100, NONE, 100, 0, 0, true},
	{100, NONE, 101, 0, 0, true},
	{NONE, 100, 5000, 99, 0, false},
	{NONE, 100, 0, 100, 0, true},
	{0, NONE, 0, 0, 0, true},	   /* a cap of 0 bytes: spent before the first */
	{100, 200, 99, 199, 0, false},
	{100, 200, 99, 200, 0, true},
	{100, NONE, 0, 0, 1, true},	   /* cut: spent whatever is left */
	{NONE, NONE, 1 << 30, 1 << 30, 0, false},
	{NONE, NONE, 0, 0, 1, false},	   /* no total caps: the flag is not the rule's */
};

static bool check_spent(char *why)
{
	for (size_t i = 0; i < ARRAY_SIZE(spent_cases); i++) {
		const struct spent_case *c = &spent_cases[i];
		struct sl_rule_caps caps = {
			.max_total_req = c->total_req == NONE ? 0 : c->total_req + 1,
			.max_total_resp = c->total_resp == NONE ? 0 : c->total_resp + 1,
		};
		struct sl_host_bytes b = {.req_bytes = c->req, .resp_bytes = c->resp,
					  .spent = c->cut};

		EXPECT(host_bytes_spent(&caps, &b) == c->want,
		       "case %zu: caps %lld/%lld, %llu/%llu bytes, cut %u: want %s", i,
		       c->total_req == NONE ? -1LL : (long long)c->total_req,
		       c->total_resp == NONE ? -1LL : (long long)c->total_resp,
		       (unsigned long long)c->req, (unsigned long long)c->resp, c->cut,
		       c->want ? "spent" : "not spent");
	}
	return true;
}

int main(void)
{
	char why[WHY_LEN], name[96];

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(addr_cases) + 3);
	for (size_t i = 0; i < ARRAY_SIZE(addr_cases); i++) {
		const struct addr_case *c = &addr_cases[i];

		why[0] = '\0';
		snprintf(name, sizeof(name), "%s is %s%s%s", c->addr, class_name(c->want),
			 c->embeds ? ", embedding " : "", c->embeds ? c->embeds : "");
		report(run_addr_case(c, why), name, why);
	}
	why[0] = '\0';
	report(check_same_blackhole(why),
	       "random addresses in every form: the resolver's blackhole is the kernel programs'",
	       why);
	why[0] = '\0';
	report(check_fates(why),
	       "dst_fate: the blackhole in every form, embedded IPv4 hosts, relays by the default",
	       why);
	why[0] = '\0';
	report(check_spent(why),
	       "host_bytes_spent: a total cap of N bytes is spent at N, a cut at once", why);
	return tap_status();
}
