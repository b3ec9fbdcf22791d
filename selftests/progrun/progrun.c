// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF_PROG_RUN tests of sluice's programs: crafted packets and destinations, one TAP line each,
 * no topology and no traffic (root: it loads BPF). Run by selftests/test_progrun.sh.
 *
 * Each policy below is parsed, compiled and loaded by the library's own loader_load(), which
 * fills the LPM tries and port maps exactly as a run's are filled; loader_learn() and
 * loader_sni_learn() add what a run's resolver would. Then:
 *
 *   frames  the host-side tc program (sl_tc_ingress) and the cgroup_skb backstop (sl_backstop),
 *           as loaded, each given the same frame: its verdict, and the reason of the record it
 *           wrote (read from the run's ring buffer);
 *   reset   the host side on the RST of a socket sluice destroys, written down in sl_resets as
 *           the packet layer writes it: once, in its fixed form, or refused (reset_tests);
 *   flows   the backstop on a packet of a connected flow of this policy generation or another
 *           (progrun_skb.bpf.c's t_flow_backstop puts the flow's state on the test socket);
 *   judged  the backstop's judged cache on a socket without a flow (t_judged_backstop plants
 *           the slot of the test socket's cookie), and the host side's, by destination (its
 *           slot planted from here);
 *   tls     the packet layer's TLS server-name check (tls_egress of skb.bpf.c, compiled into
 *           progrun_skb.bpf.c, which puts the flow's state on the test socket first);
 *   decide  the decision layer's verdict functions (decide_dst4/decide_dst6 of policy.bpf.h,
 *           through progrun_decide.bpf.c): this kernel cannot BPF_PROG_RUN a cgroup sock_addr
 *           program;
 *   hook    so the loaded connect4/6 and sendmsg4/6 themselves are also driven by real calls, from
 *           a child in a cgroup of the test's own and a network namespace with nothing up (below).
 *
 * Adding a case is one entry in one of the tables (frame_cases, flow_cases, judged_cases,
 * tc_judged_cases, tls_cases, decide_cases, hook_cases). Not covered here: the ingress program
 * (the server's answer to a checked hello), flow byte counting and caps, report mode and strict
 * evidence (the root selftests cover them).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "userspace/loader.h"
#include "policy/policy.h"
#include "userspace/cgroup.h"
#include "selftests/unit/tap.h"
#include "selftests/progrun/progrun.h"
#include "progrun_skb.skel.h"
#include "progrun_decide.skel.h"

static char why[WHY_LEN];

#define ETH_LEN 14

/* ------------------------------------------------------------------------------------------ */
/* The policies, and what the run's resolver learned under them */

/* Rule ids are 1-based in policy order (the log's rule_id). */
enum { R_WEB = 1, R_UDP = 2, R_PING = 3, R_NAMES = 4, R_WIDE = 5, R_SSH = 6, R_MANY = 7 };

static const char deny_policy[] = "default: deny\n"
				  "rules:\n"
				  "  - name: web\n"
				  "    cidrs: [\"198.51.100.10/32\", \"2001:db8::10/128\"]\n"
				  "    ports: [80, 443, \"8000-8100\"]\n"
				  "    protocols: [tcp]\n"
				  "  - name: udp-range\n"
				  "    cidrs: [\"203.0.113.0/24\", \"2001:db8:1::/48\"]\n"
				  "    ports: [\"5000-5010\"]\n"
				  "    protocols: [udp]\n"
				  "  - name: ping\n"
				  "    cidrs: [\"198.51.100.30/32\", \"2001:db8::30/128\"]\n"
				  "    protocols: [icmp]\n"
				  "  - name: names\n"
				  "    hosts: [\"example.com\"]\n"
				  "    ports: [443]\n"
				  "    max_request_bytes: 1024\n"
				  "  - name: wide\n"
				  "    cidrs: [\"10.0.0.0/8\"]\n"
				  "  - name: ssh\n"
				  "    cidrs: [\"10.1.0.0/16\"]\n"
				  "    ports: [22]\n"
				  "    protocols: [tcp]\n"
				  /* rv2 attacker: 16 port entries, rules_match's whole table */
				  "  - name: many\n"
				  "    cidrs: [\"192.0.2.128/25\", \"2001:db8:2::/48\"]\n"
				  "    ports: [1001, 1003, 1005, 1007, 1009, 1011, 1013, 1015, 1017, 1019,"
				  " 1021, 1023, 1025, 1027, 1029, 1031]\n"
				  "    protocols: [tcp]\n";

static const char allow_policy[] = "default: allow\nrules: []\n";

/* default: allow with names of two rules, for the server-name check's fall back to the default */
enum { RA_NAMES = 1, RA_ALT = 2 };
static const char allow_names_policy[] = "default: allow\n"
					 "rules:\n"
					 "  - name: names\n"
					 "    hosts: [\"names.example\"]\n"
					 "    ports: [443]\n"
					 "    max_request_bytes: 1024\n"
					 "  - name: alt\n"
					 "    hosts: [\"alt.example\"]\n"
					 "    ports: [\"8000-8100\"]\n";

enum { P_DENY, P_ALLOW, P_ALLOW_NAMES, P_MAX };

#define DNS_PORT 5353 /* the run's resolver, as the decision layer redirects to it */
#define HOST_EXAMPLE 7
#define HOST_EXAMPLE6 8
#define HOST_NAMES 9 /* names.example: a name of the names rule alone (443, capped) */
#define HOST_SSH 10  /* ssh.example: of the ssh rule alone (22) */
#define HOST_UNLISTED 11 /* unlisted.example: answered under no rule (report mode) */
#define LONG_NAME_LEN 255

struct run {
	struct policy *p;
	struct policy_compiled *c;
	struct loader *l;
	struct ring_buffer *rb;
	struct sl_progrun_skb *skb;
	struct sl_progrun_decide *dec;
	int tc_fd, backstop_fd, tc_reported_fd;
	size_t tc_reported_key;
};

static struct run runs[P_MAX];

/* The last decision record the programs wrote (frames), from the ring buffer. */
static struct sl_decision_event last_ev;
static int n_ev;

static int on_event(void *ctx, void *data, size_t size)
{
	const struct sl_event_hdr *h = data;

	(void)ctx;
	if (size >= sizeof(last_ev) && h->type == SL_EV_DECISION) {
		memcpy(&last_ev, data, sizeof(last_ev));
		n_ev++;
	}
	return 0;
}

/* A name of n bytes, the same every time: labels of up to 63 letters. */
static void long_name(char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (i % 64 == 63) ? '.' : (char)('a' + i % 26);
	buf[n] = '\0';
}

static int addr_of(const char *s, int *family, uint8_t a[16])
{
	memset(a, 0, 16);
	if (inet_pton(AF_INET, s, a) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a) == 1) {
		*family = AF_INET6;
		return 0;
	}
	fprintf(stderr, "sl_progrun: bad address in a case: %s\n", s);
	return -EINVAL;
}

/* Each map of obj that the decision layer also declares becomes the loader's (share_maps). */
static int share_loader_maps(struct bpf_object *obj, struct loader *l)
{
	struct bpf_object *ours = loader_object(l, "sock_addr");
	struct bpf_map *map, *m;
	int err;

	bpf_object__for_each_map(map, obj)
	{
		m = bpf_object__find_map_by_name(ours, bpf_map__name(map));
		if (!m)
			continue;
		err = bpf_map__reuse_fd(map, bpf_map__fd(m));
		if (err)
			return err;
	}
	return 0;
}

/* Only the test programs load: the layers' own were loaded (and verified) by the loader. */
static void autoload_only_tests(struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
		bpf_program__set_autoload(prog, !strncmp(bpf_program__name(prog), "t_", 2));
}

static int learn(struct loader *l, const char *addr, uint16_t rule, uint32_t host,
		 uint64_t expires_ns)
{
	uint8_t a[16];
	int family;

	if (addr_of(addr, &family, a))
		return -EINVAL;
	return loader_learn(l, family, a, &rule, 1, host, expires_ns);
}

/*
 * A server-name pair, learned for host under rule (the web rule: its ports, 80, 443 and
 * 8000-8100, are those the TLS cases send to).
 */
static int sni_learn_as(struct loader *l, const char *addr, const char *name, uint32_t host,
			uint16_t rule)
{
	struct sl_sni_name v;
	uint8_t a[16];
	int family, e;

	if (addr_of(addr, &family, a))
		return -EINVAL;
	e = loader_sni_name(l, &v, host, &rule, 1);
	return e ? e : loader_sni_learn(l, family, a, name, &v);
}

static int sni_learn(struct loader *l, const char *addr, const char *name)
{
	return sni_learn_as(l, addr, name, HOST_EXAMPLE, R_WEB);
}

/* As the loader decides sl_cfg_frag_check: the kernel's BTF names bpf_cast_to_kern_ctx (6.3+). */
static bool has_kern_ctx_kfunc(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool found;

	if (!vmlinux)
		return false;
	found = btf__find_by_name_kind(vmlinux, "bpf_cast_to_kern_ctx", BTF_KIND_FUNC) > 0;
	btf__free(vmlinux);
	return found;
}

static int run_up(struct run *r, const char *text, int policy)
{
	struct loader_opts o = {.ringbuf_bytes = 1 << 20,
				.wakeup_bytes = 1 << 18,
				.dns_port = DNS_PORT,
				.learned_max = 64};
	char err[512], name[LONG_NAME_LEN + 1];
	struct bpf_map *m;
	int e;

	e = policy_load_buffer(text, strlen(text), "progrun.yaml", &r->p, err, sizeof(err));
	if (!e)
		e = policy_compile(r->p, &r->c, err, sizeof(err));
	if (e) {
		fprintf(stderr, "sl_progrun: policy: %s\n", err);
		return e;
	}
	r->l = loader_load(r->p, r->c, &o);
	if (!r->l) {
		e = -errno;
		fprintf(stderr, "sl_progrun: load: %s\n", loader_explain(-e));
		return e;
	}
	r->tc_fd = bpf_program__fd(
		bpf_object__find_program_by_name(loader_object(r->l, "tc"), "sl_tc_ingress"));
	r->backstop_fd = bpf_program__fd(
		bpf_object__find_program_by_name(loader_object(r->l, "skb"), "sl_backstop"));
	m = bpf_object__find_map_by_name(loader_object(r->l, "tc"), "sl_tc_reported");
	r->tc_reported_fd = bpf_map__fd(m);
	r->tc_reported_key = m ? bpf_map__key_size(m) : 0;
	r->rb = ring_buffer__new(loader_events_fd(r->l), on_event, NULL, NULL);
	if (r->tc_fd < 0 || r->backstop_fd < 0 || r->tc_reported_fd < 0 || !r->rb)
		return -ENOENT;

	/*
	 * What a run's resolver would have learned: names' addresses, and their server names. Only
	 * where a rule lists a name: a policy that lists none learns nothing when enforced (its
	 * learned maps have one entry, which the first address would overflow).
	 */
	long_name(name, LONG_NAME_LEN);
	if (policy == P_DENY && /* allow_policy lists no name */
	    ((e = learn(r->l, "198.51.100.50", R_NAMES, HOST_EXAMPLE, 0)) ||
	     (e = learn(r->l, "2001:db8::50", R_NAMES, HOST_EXAMPLE6, 0)) ||
	     (e = learn(r->l, "198.51.100.51", R_NAMES, HOST_EXAMPLE, 1)) || /* long expired */
	     /* rv2 attacker: one address, two rules: learned_match's second slot */
	     (e = learn(r->l, "198.51.100.52", R_SSH, HOST_EXAMPLE, 0)) ||
	     (e = learn(r->l, "198.51.100.52", R_NAMES, HOST_EXAMPLE, 0)) ||
	     /* a shared address: an uncapped rule's name answered first, then a capped one's */
	     (e = learn(r->l, "198.51.100.53", R_WEB, HOST_EXAMPLE, 0)) ||
	     (e = learn(r->l, "198.51.100.53", R_NAMES, HOST_NAMES, 0)) ||
	     (e = sni_learn(r->l, "198.51.100.10", "example.com")) ||
	     (e = sni_learn_as(r->l, "198.51.100.10", "names.example", HOST_NAMES, R_NAMES)) ||
	     (e = sni_learn_as(r->l, "198.51.100.10", "ssh.example", HOST_SSH, R_SSH)) ||
	     (e = sni_learn_as(r->l, "198.51.100.10", "unlisted.example", HOST_UNLISTED,
			       SL_RULE_DEFAULT)) ||
	     (e = sni_learn(r->l, "198.51.100.10", "api.example.com")) ||
	     (e = sni_learn(r->l, "198.51.100.10", name)) ||
	     (e = sni_learn(r->l, "2001:db8::10", "example.com")))) {
		fprintf(stderr, "sl_progrun: learn: %s\n", strerror(-e));
		return e;
	}
	/* a shared address of allow_names_policy's two names */
	if (policy == P_ALLOW_NAMES &&
	    ((e = sni_learn_as(r->l, "198.51.100.10", "names.example", HOST_NAMES, RA_NAMES)) ||
	     (e = sni_learn_as(r->l, "198.51.100.10", "alt.example", HOST_EXAMPLE, RA_ALT)))) {
		fprintf(stderr, "sl_progrun: learn: %s\n", strerror(-e));
		return e;
	}

	/* the test objects, configured as load_packet_layer() configures the packet layer */
	r->skb = sl_progrun_skb__open();
	r->dec = sl_progrun_decide__open();
	if (!r->skb || !r->dec)
		return -errno;
	autoload_only_tests(r->skb->obj);
	/* the TLS cases run under the policies that list names only */
	bpf_program__set_autoload(r->skb->progs.t_tls_egress, policy != P_ALLOW);
	autoload_only_tests(r->dec->obj);
	r->skb->rodata->sl_cfg_frag_check = has_kern_ctx_kfunc();
	/* the run's configuration (default, resolver port) is the loader's map, shared by name */
	if ((e = share_loader_maps(r->skb->obj, r->l)) ||
	    (e = share_loader_maps(r->dec->obj, r->l)))
		return e;
	/* the ns attribution maps' slots stay empty: no shared namespace (token 0) */
	if ((e = sl_progrun_skb__load(r->skb)) || (e = sl_progrun_decide__load(r->dec))) {
		fprintf(stderr, "sl_progrun: loading the test objects: %s\n", strerror(-e));
		return e;
	}
	return 0;
}

static void run_down(struct run *r)
{
	ring_buffer__free(r->rb);
	sl_progrun_skb__destroy(r->skb);
	sl_progrun_decide__destroy(r->dec);
	loader_destroy(r->l);
	policy_compiled_free(r->c);
	policy_free(r->p);
}

/* Run prog on data; *ret its return value. */
static bool prog_run(int fd, const void *data, size_t len, uint32_t *ret)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = data, .data_size_in = (uint32_t)len);

	if (bpf_prog_test_run_opts(fd, &o)) {
		snprintf(why, WHY_LEN, "BPF_PROG_RUN failed: %s", strerror(errno));
		return false;
	}
	*ret = o.retval;
	return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Packets */

struct pkt {
	uint8_t b[2048];
	size_t len;
};

static void put(struct pkt *p, const void *d, size_t n)
{
	if (p->len + n > sizeof(p->b))
		n = sizeof(p->b) - p->len;
	memcpy(p->b + p->len, d, n);
	p->len += n;
}

static void put8(struct pkt *p, unsigned v)
{
	if (p->len < sizeof(p->b))
		p->b[p->len++] = (uint8_t)v;
}

static void put16(struct pkt *p, unsigned v)
{
	put8(p, v >> 8);
	put8(p, v);
}

static void put24(struct pkt *p, unsigned v)
{
	put8(p, v >> 16);
	put16(p, v & 0xffff);
}

static void set16(uint8_t *at, unsigned v)
{
	at[0] = (uint8_t)(v >> 8);
	at[1] = (uint8_t)v;
}

static void put_hex(struct pkt *p, const char *hex)
{
	unsigned v;

	while (hex[0] && hex[1] && sscanf(hex, "%2x", &v) == 1) {
		put8(p, v);
		hex += 2;
	}
}

/* Ethernet header for ethertype */
static void put_eth(struct pkt *p, unsigned ethertype)
{
	static const uint8_t macs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};

	put(p, macs, sizeof(macs));
	put16(p, ethertype);
}

/* Frame flags */
#define F_FRAG_FIRST 0x01 /* IPv4 MF set, offset 0 / IPv6 fragment header, offset 0, M */
#define F_FRAG_LATER 0x02 /* offset 1480 */
#define F_IPOPT 0x04	  /* IPv4: 4 bytes of options (IHL 6) */
#define F_IHL4 0x08	  /* IPv4: IHL 4, less than a header */
#define F_HL255 0x10	  /* hop limit / TTL 255 */
#define F_SHORT 0x20	  /* the transport header cut after 2 bytes */
#define F_VLAN 0x40	  /* an 802.1Q tag before the IP header */
#define F_DF 0x80	  /* IPv4 don't-fragment (not a fragment) */

/*
 * An IPv4/IPv6 frame to dst: transport proto with destination port (ICMP: the type), after the
 * IPv6 extension headers ext names ("0 60": hop-by-hop, then destination options; 43 routing,
 * 44 fragment), carrying, for an ICMP error, the header of a packet to inner.
 */
static int build_frame(struct pkt *p, const char *dst, unsigned proto, unsigned port,
		       const char *ext, const char *inner, unsigned flags)
{
	uint8_t a[16], src4[4] = {10, 200, 1, 2}, src6[16] = {0xfd, 0x10, 0x02, 0x00, 0, 1};
	size_t l3, l4;
	int family;
	unsigned nh[8], n_ext = 0, i;

	src6[15] = 2;
	p->len = 0;
	if (!strcmp(dst, "arp")) {
		/* who-has 10.200.1.1 tell 10.200.1.2 */
		put_eth(p, 0x0806);
		put_hex(p, "0001080006040001"
			   "020000000001"
			   "0ac80102"
			   "000000000000"
			   "0ac80101");
		return 0;
	}
	if (addr_of(dst, &family, a))
		return -EINVAL;
	if (flags & F_VLAN) {
		put_eth(p, 0x8100);
		put16(p, 1);
		put16(p, family == AF_INET ? 0x0800 : 0x86dd);
	} else {
		put_eth(p, family == AF_INET ? 0x0800 : 0x86dd);
	}
	l3 = p->len;
	if (family == AF_INET) {
		unsigned ihl = flags & F_IPOPT ? 6 : flags & F_IHL4 ? 4 : 5, frag = 0;

		if (flags & F_FRAG_FIRST)
			frag = 0x2000;
		if (flags & F_FRAG_LATER)
			frag = 185; /* 1480 / 8 */
		if (flags & F_DF)
			frag = 0x4000;
		put8(p, 0x40 | ihl);
		put8(p, 0);
		put16(p, 0); /* total length, set below */
		put16(p, 1);
		put16(p, frag);
		put8(p, flags & F_HL255 ? 255 : 64);
		put8(p, proto);
		put16(p, 0);
		put(p, src4, 4);
		put(p, a, 4);
		if (flags & F_IPOPT)
			put_hex(p, "01010100"); /* NOP NOP NOP EOL */
	} else {
		const char *s = ext ? ext : "";
		char *end;

		while (*s && n_ext < 8) {
			nh[n_ext++] = (unsigned)strtoul(s, &end, 10);
			if (end == s)
				break;
			s = end;
		}
		put8(p, 0x60);
		put24(p, 0);
		put16(p, 0); /* payload length, set below */
		put8(p, n_ext ? nh[0] : proto);
		put8(p, flags & F_HL255 ? 255 : 64);
		put(p, src6, 16);
		put(p, a, 16);
		for (i = 0; i < n_ext; i++) {
			unsigned next = i + 1 < n_ext ? nh[i + 1] : proto;

			put8(p, next);
			if (nh[i] == 44) {
				put8(p, 0);
				put16(p, (flags & F_FRAG_LATER ? 1480 : 0) |
						 (flags & F_FRAG_FIRST ? 1 : 0));
				put_hex(p, "00000001");
			} else {
				put8(p, 0); /* 8 bytes */
				put_hex(p, nh[i] == 43 ? "000100000000" : "010400000000");
			}
		}
	}
	l4 = p->len;
	if (proto == IPPROTO_TCP || proto == IPPROTO_UDP) {
		put16(p, 40000);
		put16(p, port);
		if (!(flags & F_SHORT)) {
			if (proto == IPPROTO_TCP)
				put_hex(p, "00000001"
					   "00000000"
					   "5002"
					   "2000"
					   "0000"
					   "0000");
			else
				put_hex(p, "00080000");
		}
		if (flags & F_SHORT)
			p->len = l4 + 2;
	} else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		put8(p, port);
		put8(p, 0);
		put16(p, 0);
		put_hex(p, "00000000");
		if (inner) {
			struct pkt in = {};

			/* the header of the packet the error is about, as an ICMP error quotes it
			 */
			if (build_frame(&in, inner, IPPROTO_TCP, 443, NULL, NULL, 0))
				return -EINVAL;
			put(p, in.b + ETH_LEN, in.len - ETH_LEN);
		}
	} else {
		put_hex(p, "0000000000000000");
	}
	if (family == AF_INET)
		set16(p->b + l3 + 2, (unsigned)(p->len - l3));
	else
		set16(p->b + l3 + 4, (unsigned)(p->len - l3 - 40));
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Frames: the host-side tc program and the backstop */

#define PASS 0
#define DROP(reason) (0x100 | (reason))
#define RB SL_REASON_BLACKHOLE
#define RD SL_REASON_DEFAULT_DENY
#define RP SL_REASON_PROTOCOL
#define RS SL_REASON_SOURCE_ROUTE
#define RR SL_REASON_V4_RELAY
#define TCP IPPROTO_TCP
#define UDP IPPROTO_UDP
#define ICMP IPPROTO_ICMP
#define ICMP6 IPPROTO_ICMPV6
#define D P_DENY
#define A P_ALLOW

struct frame_case {
	const char *name;
	int policy;	 /* P_DENY, P_ALLOW */
	const char *dst; /* an address, or "arp" */
	unsigned proto;
	unsigned port;	   /* ICMP: the type */
	unsigned flags;	   /* F_* */
	const char *ext;   /* IPv6 extension headers, by number */
	const char *inner; /* ICMP error: where the quoted packet went */
	int tc, bs;	   /* what the tc program and the backstop do: PASS or DROP(reason) */
};

static const struct frame_case frame_cases[] = {
	/* allowed vs unlisted: address, port, protocol */
	{"v4 TCP to a listed host and port", D, "198.51.100.10", TCP, 80, 0, 0, 0, PASS, PASS},
	{"v4 TCP to a listed host, unlisted port", D, "198.51.100.10", TCP, 81, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"v4 TCP to an unlisted host", D, "198.51.100.20", TCP, 80, 0, 0, 0, DROP(RD), DROP(RD)},
	{"v4 UDP to a TCP-only rule's port", D, "198.51.100.10", UDP, 80, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"v4 TCP port 0", D, "198.51.100.10", TCP, 0, 0, 0, 0, DROP(RD), DROP(RD)},
	{"v6 TCP to a listed host and port", D, "2001:db8::10", TCP, 443, 0, 0, 0, PASS, PASS},
	{"v6 TCP to an unlisted host", D, "2001:db8::20", TCP, 443, 0, 0, 0, DROP(RD), DROP(RD)},
	{"v6 UDP to a TCP-only rule", D, "2001:db8::10", UDP, 443, 0, 0, 0, DROP(RD), DROP(RD)},
	{"v4 SCTP to a listed host", D, "198.51.100.10", 132, 80, 0, 0, 0, DROP(RP), DROP(RP)},
	{"v6 no next header", D, "2001:db8::10", 59, 0, 0, 0, 0, DROP(RP), DROP(RP)},
	{"v6 no next header, default allow", A, "2001:db8::10", 59, 0, 0, 0, 0, PASS, PASS},
	{"v6 GRE to a listed host", D, "2001:db8::10", 47, 0, 0, 0, 0, DROP(RP), DROP(RP)},
	{"v4 in v4 to a listed host", D, "198.51.100.10", 4, 0, 0, 0, 0, DROP(RP), DROP(RP)},
	{"v4 don't-fragment is not a fragment", D, "198.51.100.10", TCP, 80, F_DF, 0, 0, PASS,
	 PASS},
	/* every boundary of the ranges 8000-8100/tcp and 5000-5010/udp */
	{"TCP port 7999 (below 8000-8100)", D, "198.51.100.10", TCP, 7999, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"TCP port 8000 (range start)", D, "198.51.100.10", TCP, 8000, 0, 0, 0, PASS, PASS},
	{"TCP port 8001", D, "198.51.100.10", TCP, 8001, 0, 0, 0, PASS, PASS},
	{"TCP port 8099", D, "198.51.100.10", TCP, 8099, 0, 0, 0, PASS, PASS},
	{"TCP port 8100 (range end)", D, "198.51.100.10", TCP, 8100, 0, 0, 0, PASS, PASS},
	{"TCP port 8101 (above)", D, "198.51.100.10", TCP, 8101, 0, 0, 0, DROP(RD), DROP(RD)},
	{"v6 TCP port 8100", D, "2001:db8::10", TCP, 8100, 0, 0, 0, PASS, PASS},
	{"v6 TCP port 8101", D, "2001:db8::10", TCP, 8101, 0, 0, 0, DROP(RD), DROP(RD)},
	{"UDP port 4999 (below 5000-5010)", D, "203.0.113.7", UDP, 4999, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"UDP port 5000 (range start)", D, "203.0.113.7", UDP, 5000, 0, 0, 0, PASS, PASS},
	{"UDP port 5010 (range end)", D, "203.0.113.7", UDP, 5010, 0, 0, 0, PASS, PASS},
	{"UDP port 5011 (above)", D, "203.0.113.7", UDP, 5011, 0, 0, 0, DROP(RD), DROP(RD)},
	{"TCP to a UDP-only range", D, "203.0.113.7", TCP, 5000, 0, 0, 0, DROP(RD), DROP(RD)},
	{"v6 UDP port 5000 in 2001:db8:1::/48", D, "2001:db8:1::7", UDP, 5000, 0, 0, 0, PASS, PASS},
	{"v6 UDP port 5011 in 2001:db8:1::/48", D, "2001:db8:1::7", UDP, 5011, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"v6 UDP just outside 2001:db8:1::/48", D, "2001:db8:2::7", UDP, 5000, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"any-port rule: TCP port 1", D, "10.2.3.4", TCP, 1, 0, 0, 0, PASS, PASS},
	{"any-port rule: UDP port 65535", D, "10.2.3.4", UDP, 65535, 0, 0, 0, PASS, PASS},
	{"any-port rule covers a longer prefix's host", D, "10.1.2.3", UDP, 53, 0, 0, 0, PASS,
	 PASS},
	{"longer prefix's own rule: TCP 22", D, "10.1.2.3", TCP, 22, 0, 0, 0, PASS, PASS},
	{"just outside 10.0.0.0/8", D, "11.0.0.1", TCP, 22, 0, 0, 0, DROP(RD), DROP(RD)},
	{"ICMP echo to a tcp/udp rule's host", D, "10.2.3.4", ICMP, 8, 0, 0, 0, DROP(RD), DROP(RD)},
	{"ICMP echo to an icmp rule's host", D, "198.51.100.30", ICMP, 8, 0, 0, 0, PASS, PASS},
	{"ICMP echo to a TCP rule's host", D, "198.51.100.10", ICMP, 8, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"ICMPv6 echo to an icmp rule's host", D, "2001:db8::30", ICMP6, 128, 0, 0, 0, PASS, PASS},
	{"ICMPv6 echo to a TCP rule's host", D, "2001:db8::10", ICMP6, 128, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"TCP to an icmp rule's host", D, "198.51.100.30", TCP, 80, 0, 0, 0, DROP(RD), DROP(RD)},
	/* ICMP errors: the outer destination is judged, whatever the quoted header says */
	{"ICMP error to an unlisted host quoting a listed one", D, "198.51.100.20", ICMP, 3, 0, 0,
	 "198.51.100.10", DROP(RD), DROP(RD)},
	{"ICMP error to the metadata address", A, "169.254.169.254", ICMP, 3, 0, 0, "198.51.100.10",
	 DROP(RB), DROP(RB)},
	{"ICMP error to an icmp rule's host quoting the metadata address", D, "198.51.100.30", ICMP,
	 3, 0, 0, "169.254.169.254", PASS, PASS},
	{"ICMPv6 error to an unlisted host quoting a listed one", D, "2001:db8::20", ICMP6, 1, 0, 0,
	 "2001:db8::10", DROP(RD), DROP(RD)},
	{"ICMPv6 error to fe80::1", A, "fe80::1", ICMP6, 1, 0, 0, "2001:db8::10", DROP(RB),
	 DROP(RB)},
	/* fragments: no port to judge */
	{"v4 first fragment to a listed host and port", D, "198.51.100.10", TCP, 80, F_FRAG_FIRST,
	 0, 0, DROP(RP), DROP(RP)},
	{"v4 later fragment to a listed host", D, "198.51.100.10", TCP, 80, F_FRAG_LATER, 0, 0,
	 DROP(RP), DROP(RP)},
	{"v4 fragment under default allow", A, "198.51.100.20", UDP, 80, F_FRAG_FIRST, 0, 0, PASS,
	 PASS},
	{"v4 fragment to the metadata address, default allow", A, "169.254.169.254", UDP, 80,
	 F_FRAG_LATER, 0, 0, DROP(RB), DROP(RB)},
	{"v6 first fragment to a listed host and port", D, "2001:db8::10", TCP, 443, F_FRAG_FIRST,
	 "44", 0, DROP(RP), DROP(RP)},
	{"v6 later fragment to a listed host", D, "2001:db8::10", TCP, 443, F_FRAG_LATER, "44", 0,
	 DROP(RP), DROP(RP)},
	{"v6 fragment behind hop-by-hop", D, "2001:db8::10", TCP, 443, F_FRAG_FIRST, "0 44", 0,
	 DROP(RP), DROP(RP)},
	{"v6 fragment under default allow", A, "2001:db8::20", UDP, 53, F_FRAG_FIRST, "44", 0, PASS,
	 PASS},
	{"v6 fragment to fe80::1, default allow", A, "fe80::1", UDP, 53, F_FRAG_LATER, "44", 0,
	 DROP(RB), DROP(RB)},
	/* IPv6 extension-header chains */
	{"v6 hop-by-hop, then TCP to a listed port", D, "2001:db8::10", TCP, 443, 0, "0", 0, PASS,
	 PASS},
	{"v6 hop-by-hop, dst options, then TCP", D, "2001:db8::10", TCP, 443, 0, "0 60", 0, PASS,
	 PASS},
	{"v6 three option headers, then TCP", D, "2001:db8::10", TCP, 443, 0, "0 60 60", 0, PASS,
	 PASS},
	{"v6 three option headers, then an unlisted port", D, "2001:db8::10", TCP, 444, 0,
	 "0 60 60", 0, DROP(RD), DROP(RD)},
	{"v6 four option headers: not judged", D, "2001:db8::10", TCP, 443, 0, "0 60 60 60", 0,
	 DROP(RP), DROP(RS)},
	{"v6 three option headers, then a routing header", D, "2001:db8::10", TCP, 443, 0,
	 "0 60 60 43", 0, DROP(RP), DROP(RS)},
	{"v6 routing header", D, "2001:db8::10", TCP, 443, 0, "43", 0, DROP(RP), DROP(RS)},
	{"v6 routing header behind dst options", D, "2001:db8::10", TCP, 443, 0, "60 43", 0,
	 DROP(RP), DROP(RS)},
	{"v6 dst options, then UDP to an allowed range", D, "2001:db8:1::9", UDP, 5005, 0, "60", 0,
	 PASS, PASS},
	/* IPv4 header oddities */
	{"v4 with options (IHL 6)", D, "198.51.100.10", TCP, 80, F_IPOPT, 0, 0, PASS, DROP(RS)},
	{"v4 with options to an unlisted port", D, "198.51.100.10", TCP, 81, F_IPOPT, 0, 0,
	 DROP(RD), DROP(RS)},
	{"v4 IHL 4", D, "198.51.100.10", TCP, 80, F_IHL4, 0, 0, DROP(RP), DROP(RP)},
	{"v4 TCP header cut short", D, "198.51.100.10", TCP, 80, F_SHORT, 0, 0, DROP(RP), DROP(RP)},
	{"v6 UDP header cut short", D, "2001:db8:1::7", UDP, 5000, F_SHORT, 0, 0, DROP(RP),
	 DROP(RP)},
	{"802.1Q-tagged frame", A, "198.51.100.10", TCP, 80, F_VLAN, 0, 0, DROP(RP), DROP(RP)},
	/* link control: passes the host side only */
	{"ARP", D, "arp", 0, 0, 0, 0, 0, PASS, DROP(RP)},
	{"neighbour solicitation to ff02::1:ff00:1, hop limit 255", D, "ff02::1:ff00:1", ICMP6, 135,
	 F_HL255, 0, 0, PASS, DROP(RD)},
	{"neighbour solicitation to fe80::1, hop limit 255", D, "fe80::1", ICMP6, 135, F_HL255, 0,
	 0, PASS, DROP(RB)},
	/* the edges of fe80::/10 (addr.bpf.h, v6_is_link_local): inside, ND passes the host side */
	{"solicitation to fe7f:ffff:…:ffff (below fe80::/10), hop limit 255", D,
	 "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ICMP6, 135, F_HL255, 0, 0, DROP(RD), DROP(RD)},
	{"solicitation to fe80:: (start of fe80::/10), hop limit 255", D, "fe80::", ICMP6,
	 135, F_HL255, 0, 0, PASS, DROP(RB)},
	{"solicitation to febf:ffff:…:ffff (end of fe80::/10), hop limit 255", D,
	 "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ICMP6, 135, F_HL255, 0, 0, PASS, DROP(RB)},
	{"solicitation to fec0:: (past fe80::/10), hop limit 255", D, "fec0::", ICMP6, 135,
	 F_HL255, 0, 0, DROP(RD), DROP(RD)},
	{"neighbour solicitation to fe80::1, hop limit 64", D, "fe80::1", ICMP6, 135, 0, 0, 0,
	 DROP(RB), DROP(RB)},
	{"ND type as a fragment to fe80::1", D, "fe80::1", ICMP6, 135, F_HL255 | F_FRAG_FIRST, "44",
	 0, DROP(RB), DROP(RB)},
	{"MLDv2 report to ff02::16", D, "ff02::16", ICMP6, 143, 0, 0, 0, PASS, DROP(RD)},
	{"MLDv2 report to ff05::16 (not link scope)", D, "ff05::16", ICMP6, 143, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"UDP to ff02::1", D, "ff02::1", UDP, 5000, 0, 0, 0, DROP(RD), DROP(RD)},
	{"IGMP to 224.0.0.22", D, "224.0.0.22", IPPROTO_IGMP, 0, 0, 0, 0, PASS, DROP(RP)},
	{"IGMP to 239.1.1.1", D, "239.1.1.1", IPPROTO_IGMP, 0, 0, 0, 0, DROP(RP), DROP(RP)},
	{"UDP broadcast 255.255.255.255:67", D, "255.255.255.255", UDP, 67, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	/* the run's resolver on loopback: the backstop's one exception */
	{"UDP to the run's resolver 127.0.0.1", D, "127.0.0.1", UDP, DNS_PORT, 0, 0, 0, DROP(RD),
	 PASS},
	{"TCP to the run's resolver ::1", D, "::1", TCP, DNS_PORT, 0, 0, 0, DROP(RD), PASS},
	{"UDP to 127.0.0.1, another port", D, "127.0.0.1", UDP, DNS_PORT + 1, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	{"UDP to 127.0.0.2, the resolver's port", D, "127.0.0.2", UDP, DNS_PORT, 0, 0, 0, DROP(RD),
	 DROP(RD)},
	/* the blackhole, in every form, under either policy */
	{"169.254.169.254 TCP 80", D, "169.254.169.254", TCP, 80, 0, 0, 0, DROP(RB), DROP(RB)},
	{"169.254.169.254 TCP 80, default allow", A, "169.254.169.254", TCP, 80, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"169.254.0.0 UDP 53, default allow", A, "169.254.0.0", UDP, 53, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"169.254.255.255 ICMP, default allow", A, "169.254.255.255", ICMP, 8, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"169.253.255.255 (below), default allow", A, "169.253.255.255", TCP, 80, 0, 0, 0, PASS,
	 PASS},
	{"169.255.0.0 (above), default allow", A, "169.255.0.0", TCP, 80, 0, 0, 0, PASS, PASS},
	{"v4-mapped ::ffff:169.254.169.254", A, "::ffff:169.254.169.254", TCP, 80, 0, 0, 0,
	 DROP(RB), DROP(RB)},
	{"v4-compatible ::169.254.169.254", A, "::169.254.169.254", TCP, 80, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"SIIT ::ffff:0:169.254.169.254", A, "::ffff:0:a9fe:a9fe", TCP, 80, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"NAT64 64:ff9b::169.254.169.254", A, "64:ff9b::a9fe:a9fe", TCP, 80, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"NAT64 64:ff9b::169.254.0.1, UDP", A, "64:ff9b::a9fe:1", UDP, 53, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"64:ff9b::/32 past /96, tail 169.254.169.254", A, "64:ff9b:0:0:1::a9fe:a9fe", TCP, 80, 0,
	 0, 0, DROP(RB), DROP(RB)},
	{"local NAT64 /48 position", A, "64:ff9b:1:a9fe:a9:fe00::", TCP, 80, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"local NAT64 /96 position", A, "64:ff9b:1::a9fe:a9fe", TCP, 80, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"6to4 2002:a9fe:a9fe::1", A, "2002:a9fe:a9fe::1", TCP, 80, 0, 0, 0, DROP(RB), DROP(RB)},
	{"6to4 of 169.254.0.0 with a subnet", A, "2002:a9fe:0:5::1", UDP, 53, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"Teredo server 169.254.169.254", A, "2001:0:a9fe:a9fe::1", TCP, 80, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"Teredo client 169.254.169.254 (inverted)", A, "2001:0:c633:640a::5601:5601", TCP, 80, 0,
	 0, 0, DROP(RB), DROP(RB)},
	{"ISATAP ::5efe:169.254.169.254", A, "2001:db8::5efe:a9fe:a9fe", TCP, 80, 0, 0, 0, DROP(RB),
	 DROP(RB)},
	{"ISATAP ::200:5efe:169.254.169.254", A, "2001:db8::200:5efe:a9fe:a9fe", TCP, 80, 0, 0, 0,
	 DROP(RB), DROP(RB)},
	{"fe7f:ffff:…:ffff (below fe80::/10)", A, "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", TCP,
	 80, 0, 0, 0, PASS, PASS},
	{"fe80:: (start of fe80::/10)", A, "fe80::", TCP, 80, 0, 0, 0, DROP(RB), DROP(RB)},
	{"fe80::1 (link-local v6)", A, "fe80::1", TCP, 80, 0, 0, 0, DROP(RB), DROP(RB)},
	{"febf:ffff:…:ffff (end of fe80::/10)", A, "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", TCP,
	 80, 0, 0, 0, DROP(RB), DROP(RB)},
	{"febf::1 (end of fe80::/10)", A, "febf::1", TCP, 80, 0, 0, 0, DROP(RB), DROP(RB)},
	{"fec0::1 (past fe80::/10)", A, "fec0::1", TCP, 80, 0, 0, 0, PASS, PASS},
	{"fd00:ec2::254 (IMDS v6)", A, "fd00:ec2::254", TCP, 80, 0, 0, 0, DROP(RB), DROP(RB)},
	/* IPv4 hosts behind a relay: the v6 policy does not speak for them */
	{"6to4 of a listed v4 host, default deny", D, "2002:c633:640a::1", TCP, 80, 0, 0, 0,
	 DROP(RR), DROP(RR)},
	{"6to4 of a v4 host, default allow", A, "2002:c633:640a::1", TCP, 80, 0, 0, 0, PASS, PASS},
	{"Teredo, default deny", D, "2001:0:c633:640a::1", TCP, 80, 0, 0, 0, DROP(RR), DROP(RR)},
	{"local NAT64 of a listed host, default deny", D, "64:ff9b:1::c633:640a", TCP, 80, 0, 0, 0,
	 DROP(RR), DROP(RR)},
	{"NAT64 /96 of a listed host: judged as it", D, "64:ff9b::c633:640a", TCP, 80, 0, 0, 0,
	 PASS, PASS},
	{"NAT64 /96 of a listed host, unlisted port", D, "64:ff9b::c633:640a", TCP, 81, 0, 0, 0,
	 DROP(RD), DROP(RD)},
	{"v4-mapped listed host: judged as it", D, "::ffff:198.51.100.10", TCP, 8100, 0, 0, 0, PASS,
	 PASS},
};

static void map_clear(int fd, size_t key_size)
{
	uint8_t key[64], next[64];

	if (key_size > sizeof(key))
		return;
	while (!bpf_map_get_next_key(fd, NULL, next)) {
		memcpy(key, next, key_size);
		if (bpf_map_delete_elem(fd, key))
			break;
	}
}

static const char *verdict_str(int v, char *buf, size_t len)
{
	if (v == PASS)
		snprintf(buf, len, "pass");
	else
		snprintf(buf, len, "drop (reason %d)", v & 0xff);
	return buf;
}

/* Run one program on the frame: its verdict, and for a drop the reason it recorded. */
static bool frame_check(struct run *r, int fd, bool is_tc, const struct pkt *p, int want)
{
	char w[32], g[32];
	uint32_t ret;
	int got;

	map_clear(r->tc_reported_fd, r->tc_reported_key);
	ring_buffer__consume(r->rb);
	n_ev = 0;
	if (!prog_run(fd, p->b, p->len, &ret))
		return false;
	ring_buffer__consume(r->rb);
	if (is_tc)
		got = ret == (uint32_t)-1 ? PASS : ret == 2 ? DROP(0) : -1;
	else
		got = ret == 1 ? PASS : ret == 0 ? DROP(0) : -1;
	EXPECT(got != -1, "unexpected return value %u", ret);
	if (got != PASS) {
		EXPECT(n_ev == 1, "expected one decision record of the drop, got %d", n_ev);
		EXPECT(last_ev.hook == (is_tc ? SL_HOOK_TC : SL_HOOK_EGRESS) &&
			       last_ev.verdict == SL_VERDICT_DENY,
		       "the record says hook %u verdict %u", last_ev.hook, last_ev.verdict);
		got = DROP(last_ev.reason);
	}
	EXPECT(got == want, "expected %s, got %s", verdict_str(want, w, sizeof(w)),
	       verdict_str(got, g, sizeof(g)));
	return true;
}

static void frame_tests(void)
{
	char name[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(frame_cases); i++) {
		const struct frame_case *c = &frame_cases[i];
		struct run *r = &runs[c->policy];
		struct pkt p = {};
		bool ok;

		ok = !build_frame(&p, c->dst, c->proto, c->port, c->ext, c->inner, c->flags);
		snprintf(why, WHY_LEN, "the case's frame could not be built");
		snprintf(name, sizeof(name), "tc: %s", c->name);
		report(ok && frame_check(r, r->tc_fd, true, &p, c->tc), name, why);
		snprintf(name, sizeof(name), "backstop: %s", c->name);
		report(ok && frame_check(r, r->backstop_fd, false, &p, c->bs), name, why);
	}
}

/*
 * The backstop on a packet of a connected flow, where the flow was connected (the policy of
 * frame_cases, deny by default): a flow judged under the policy in force (its generation,
 * sl_cfg.era) vouches for its destination; one judged under another (a switch since, which did
 * not find its socket to judge it again) does not, and the packet is judged in full. A
 * dual-stack socket connected to ::ffff:a.b.c.d sends IPv4 packets to a.b.c.d: its own
 * destination; no other embedding (NAT64) is, the kernel never sends one as IPv4.
 */
struct flow_case {
	const char *name;
	const char *dst; /* where the packet goes, and the flow was connected unless flow_dst */
	unsigned port;
	int era;	 /* 0: the current generation; 1: the one before; -1: sl_flow.era 0 */
	int bs;
	const char *flow_dst; /* where the flow was connected, if not dst */
	unsigned flow_port;   /* its port, if not port */
	int tls_state;	      /* its server-name check's state (0: never watched) */
	int tls_deny;	      /* the reason that check recorded, and that it keeps after (-1: none) */
	int tls_deny_after;
};

static const struct flow_case flow_cases[] = {
	{"this generation's flow to an unlisted host: vouched for", "198.51.100.20", 80, 0, PASS,
	 NULL, 0, 0, 0, 0},
	{"an older generation's flow to an unlisted host: judged, dropped", "198.51.100.20", 80, 1,
	 DROP(RD), NULL, 0, 0, 0, 0},
	{"an older generation's flow to a listed host: judged, passes", "198.51.100.10", 80, 1,
	 PASS, NULL, 0, 0, 0, 0},
	{"a flow without a generation to an unlisted host: judged, dropped", "198.51.100.20", 80,
	 -1, DROP(RD), NULL, 0, 0, 0, 0},
	{"an older generation's v6 flow to an unlisted host: judged, dropped", "2001:db8::20", 443,
	 1, DROP(RD), NULL, 0, 0, 0, 0},
	{"an older generation's v6 flow to a listed host: judged, passes", "2001:db8::10", 443, 1,
	 PASS, NULL, 0, 0, 0, 0},
	{"this generation's ::ffff: flow, its IPv4 packet to an unlisted host: vouched for",
	 "198.51.100.20", 80, 0, PASS, "::ffff:198.51.100.20", 0, 0, 0, 0},
	{"an older generation's ::ffff: flow, its IPv4 packet to an unlisted host: judged, dropped",
	 "198.51.100.20", 80, 1, DROP(RD), "::ffff:198.51.100.20", 0, 0, 0, 0},
	{"an older generation's ::ffff: flow, its IPv4 packet to a listed host: judged, passes",
	 "198.51.100.10", 80, 1, PASS, "::ffff:198.51.100.10", 0, 0, 0, 0},
	{"a ::ffff: flow's IPv4 packet to another host: judged, dropped", "198.51.100.20", 80, 0,
	 DROP(RD), "::ffff:198.51.100.10", 0, 0, 0, 0},
	{"a ::ffff: flow's IPv4 packet to another port: judged, dropped", "198.51.100.20", 81, 0,
	 DROP(RD), "::ffff:198.51.100.20", 80, 0, 0, 0},
	{"a NAT64 flow's IPv4 packet to its embedded host: not its own, dropped", "198.51.100.20",
	 80, 0, DROP(RD), "64:ff9b::198.51.100.20", 0, 0, 0, 0},
	{"an IPv4 flow's packet to the host's ::ffff: form: not its own, dropped",
	 "::ffff:198.51.100.20", 80, 0, DROP(RD), "198.51.100.20", 0, 0, 0, 0},
	/*
	 * A server-name denial recorded under the old policy (report mode: the flow went on) is
	 * the old judgment's: the flow the new one allows by address must not take it back
	 * (sl_egress copies it into the flow). One the check denied for good keeps it.
	 */
	{"an older generation's flow a report-mode name check denied, allowed now: reason cleared",
	 "198.51.100.10", 443, 1, PASS, NULL, 0, SL_TLS_ALLOWED, SL_REASON_SNI_MISMATCH, 0},
	{"... one still waiting for the server: reason cleared", "198.51.100.10", 443, 1, PASS,
	 NULL, 0, SL_TLS_AWAIT_SERVER, SL_REASON_SNI_MISMATCH, 0},
	{"... one the check denied for good (enforce): reason kept", "198.51.100.10", 443, 1, PASS,
	 NULL, 0, SL_TLS_DENIED, SL_REASON_SNI_MISMATCH, SL_REASON_SNI_MISMATCH},
	{"... one the new policy denies: its reason is the flow's, the check's kept",
	 "198.51.100.20", 443, 1, DROP(RD), NULL, 0, SL_TLS_ALLOWED, SL_REASON_SNI_MISMATCH,
	 SL_REASON_SNI_MISMATCH},
	{"this generation's flow: not judged again, the check's reason kept",
	 "198.51.100.10", 443, 0, PASS, NULL, 0, SL_TLS_ALLOWED, SL_REASON_SNI_MISMATCH,
	 SL_REASON_SNI_MISMATCH},
};

static void flow_tests(void)
{
	struct run *r = &runs[P_DENY];
	int fd = bpf_program__fd(r->skb->progs.t_flow_backstop);
	uint32_t cur = loader_era(r->l);
	char name[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(flow_cases); i++) {
		const struct flow_case *c = &flow_cases[i];
		struct t_flow_in *in = &r->skb->bss->t_flow;
		struct pkt p = {};
		bool ok;

		const char *flow_dst = c->flow_dst ? c->flow_dst : c->dst;

		memset(in, 0, sizeof(*in));
		in->family = strchr(flow_dst, ':') ? AF_INET6 : AF_INET;
		in->proto = TCP;
		in->port = (uint16_t)(c->flow_port ? c->flow_port : c->port);
		/* another generation: one less, or (the first) one more */
		in->era = c->era < 0 ? 0 : c->era ? (cur == 1 ? 2 : cur - 1) : cur;
		in->tls_state = (uint8_t)c->tls_state;
		in->tls_deny_reason = (uint8_t)(c->tls_state ? c->tls_deny : 0);
		ok = inet_pton(in->family, flow_dst, in->addr) == 1 &&
		     !build_frame(&p, c->dst, TCP, c->port, 0, 0, 0);
		snprintf(why, WHY_LEN, "the case's frame could not be built");
		snprintf(name, sizeof(name), "backstop flow: %s", c->name);
		ok = ok && frame_check(r, fd, false, &p, c->bs);
		if (ok && c->tls_state && in->tls_deny_after != c->tls_deny_after) {
			snprintf(why, WHY_LEN, "the server-name check's reason is %u after, not %d",
				 in->tls_deny_after, c->tls_deny_after);
			ok = false;
		}
		report(ok, name, why);
	}
}

/*
 * The backstop's judged cache (bpf/judged.bpf.h), on a packet of a TCP socket without a flow (the
 * policy of frame_cases, deny by default): each BPF_PROG_RUN's socket is a new one, so a slot a
 * case needs is planted first, at the slot of the socket's own cookie; the destinations planted
 * are ones the policy denies, so that a slot served shows as a pass. Only a key that is the
 * packet's own in every field is served: one differing in any (another socket's cookie in the
 * same slot, another policy generation, address, port, protocol, family) is not, nor a slot
 * half-written; and only a policy's allow is noted (not a denial, not a learned address's).
 */
struct judged_case {
	const char *name;
	const char *dst; /* where the packet goes (TCP) */
	unsigned port;
	bool plant;	      /* plant a key first: the packet's own unless changed below */
	const char *key_dst;  /* the planted key's address and family, if not dst's */
	unsigned key_port;    /* its port, if not port */
	unsigned key_proto;   /* its protocol, if not TCP */
	uint64_t cookie_xor;  /* its cookie: the socket's, these bits flipped */
	int era_delta;	      /* its era: the one in force plus this */
	bool odd_seq;	      /* being written */
	int bs;		      /* what the backstop does */
	bool noted;	      /* the slot holds this socket's judgment after */
};

static const struct judged_case judged_cases[] = {
	{"an allowed packet, empty slot: judged, passes, noted", "198.51.100.10", 80, false, NULL,
	 0, 0, 0, 0, false, PASS, true},
	{"a denied packet: dropped, not noted", "198.51.100.20", 80, false, NULL, 0, 0, 0, 0, false,
	 DROP(RD), false},
	{"a learned address's allow: passes, not noted (it expires)", "198.51.100.50", 443, false,
	 NULL, 0, 0, 0, 0, false, PASS, false},
	{"its own key: served (the unlisted host passes)", "198.51.100.20", 80, true, NULL, 0, 0, 0,
	 0, false, PASS, true},
	{"its own v6 key: served", "2001:db8::20", 443, true, NULL, 0, 0, 0, 0, false, PASS, true},
	{"another socket's key in the same slot (cookie + 256): judged, dropped", "198.51.100.20",
	 80, true, NULL, 0, 0, 256, 0, false, DROP(RD), false},
	{"a cookie differing in its top bit: judged, dropped", "198.51.100.20", 80, true, NULL, 0, 0,
	 1ULL << 63, 0, false, DROP(RD), false},
	{"a cookie differing in its lowest bit: judged, dropped", "198.51.100.20", 80, true, NULL, 0,
	 0, 1, 0, false, DROP(RD), false},
	{"the generation before: judged, dropped", "198.51.100.20", 80, true, NULL, 0, 0, 0, -1,
	 false, DROP(RD), false},
	{"the generation after: judged, dropped", "198.51.100.20", 80, true, NULL, 0, 0, 0, 1, false,
	 DROP(RD), false},
	{"another port: judged, dropped", "198.51.100.20", 80, true, NULL, 81, 0, 0, 0, false,
	 DROP(RD), false},
	{"another address: judged, dropped", "198.51.100.20", 80, true, "198.51.100.21", 0, 0, 0, 0,
	 false, DROP(RD), false},
	{"another v6 address, last byte: judged, dropped", "2001:db8::20", 443, true, "2001:db8::21",
	 0, 0, 0, 0, false, DROP(RD), false},
	{"another v6 address, first byte: judged, dropped", "2001:db8::20", 443, true,
	 "3001:db8::20", 0, 0, 0, 0, false, DROP(RD), false},
	{"UDP: judged, dropped", "198.51.100.20", 80, true, NULL, 0, UDP, 0, 0, false, DROP(RD),
	 false},
	{"a v4 packet, a v6 key of its bytes: judged, dropped", "198.51.100.20", 80, true,
	 "c633:6414::", 0, 0, 0, 0, false, DROP(RD), false},
	{"its own key half-written (odd sequence): judged, dropped", "198.51.100.20", 80, true, NULL,
	 0, 0, 0, 0, true, DROP(RD), false},
	{"an allowed packet over another socket's key: noted in its place", "198.51.100.10", 80,
	 true, NULL, 0, 0, 256, 0, false, PASS, true},
};

static void judged_tests(void)
{
	struct run *r = &runs[P_DENY];
	int fd = bpf_program__fd(r->skb->progs.t_judged_backstop);
	char name[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(judged_cases); i++) {
		const struct judged_case *c = &judged_cases[i];
		struct t_judged_in *in = &r->skb->bss->t_judged;
		const char *key_dst = c->key_dst ? c->key_dst : c->dst;
		struct pkt p = {};
		int family;
		bool ok;

		memset(in, 0, sizeof(*in));
		in->plant = c->plant;
		in->port = (uint16_t)(c->key_port ? c->key_port : c->port);
		in->proto = (uint8_t)(c->key_proto ? c->key_proto : TCP);
		in->cookie_xor = c->cookie_xor;
		in->era_delta = c->era_delta;
		in->odd_seq = c->odd_seq;
		ok = !addr_of(key_dst, &family, in->addr) &&
		     !build_frame(&p, c->dst, TCP, c->port, 0, 0, 0);
		in->family = (uint8_t)family;
		snprintf(why, WHY_LEN, "the case's frame could not be built");
		snprintf(name, sizeof(name), "backstop judged: %s", c->name);
		ok = ok && frame_check(r, fd, false, &p, c->bs);
		if (ok && in->noted != c->noted) {
			snprintf(why, WHY_LEN, "the slot %s the socket's judgment after",
				 in->noted ? "holds" : "does not hold");
			ok = false;
		}
		report(ok, name, why);
	}
}

/*
 * The host side's judged cache (bpf/judged.bpf.h, sl_tc_judged): by destination alone, so its
 * slot is planted here, on every CPU (BPF_PROG_RUN runs on this one), and read back; each case
 * starts from an empty slot. As in judged_cases, the destinations planted are ones the policy
 * denies, and a key that differs from the frame's in any field is not served; a fragment (no
 * port was read) never is.
 */
struct tc_judged_case {
	const char *name;
	const char *dst;
	unsigned proto;
	unsigned port;
	unsigned flags;	     /* F_* of the frame */
	bool plant;	     /* plant a key first: the frame's own unless changed below */
	const char *key_dst; /* its address and family, if not dst's */
	unsigned key_port;   /* its port, if not port */
	unsigned key_proto;  /* its protocol, if not proto */
	uint64_t cookie;     /* its cookie (the host side's are 0) */
	int era_delta;	     /* its era: the one in force plus this */
	bool odd_seq;	     /* being written */
	int tc;		     /* what the tc program does */
	bool noted;	     /* the frame's own key is in its slot after */
};

static const struct tc_judged_case tc_judged_cases[] = {
	{"an allowed frame, empty slot: judged, passes, noted", "198.51.100.10", TCP, 80, 0, false,
	 NULL, 0, 0, 0, 0, false, PASS, true},
	{"an allowed v6 UDP frame: noted", "2001:db8:1::7", UDP, 5000, 0, false, NULL, 0, 0, 0, 0,
	 false, PASS, true},
	{"a denied frame: dropped, not noted", "198.51.100.20", TCP, 80, 0, false, NULL, 0, 0, 0, 0,
	 false, DROP(RD), false},
	{"a learned address's allow: passes, not noted (it expires)", "198.51.100.50", TCP, 443, 0,
	 false, NULL, 0, 0, 0, 0, false, PASS, false},
	{"an allowed fragment: not noted", "198.51.100.10", TCP, 80, F_FRAG_FIRST, false, NULL, 0,
	 0, 0, 0, false, DROP(RP), false},
	{"its own key: served (the unlisted host passes)", "198.51.100.20", TCP, 80, 0, true, NULL,
	 0, 0, 0, 0, false, PASS, true},
	{"its own v6 key: served", "2001:db8::20", TCP, 443, 0, true, NULL, 0, 0, 0, 0, false, PASS,
	 true},
	{"its own key, the frame a fragment: not served, judged, dropped", "198.51.100.20", TCP, 80,
	 F_FRAG_FIRST, true, NULL, 0, 0, 0, 0, false, DROP(RP), true},
	{"a socket's key (a cookie): judged, dropped", "198.51.100.20", TCP, 80, 0, true, NULL, 0, 0,
	 1, 0, false, DROP(RD), false},
	{"the generation before: judged, dropped", "198.51.100.20", TCP, 80, 0, true, NULL, 0, 0, 0,
	 -1, false, DROP(RD), false},
	{"the generation after: judged, dropped", "198.51.100.20", TCP, 80, 0, true, NULL, 0, 0, 0,
	 1, false, DROP(RD), false},
	{"another port: judged, dropped", "198.51.100.20", TCP, 80, 0, true, NULL, 81, 0, 0, 0,
	 false, DROP(RD), false},
	{"another address: judged, dropped", "198.51.100.20", TCP, 80, 0, true, "198.51.100.21", 0,
	 0, 0, 0, false, DROP(RD), false},
	{"another v6 address, last byte: judged, dropped", "2001:db8::20", TCP, 443, 0, true,
	 "2001:db8::21", 0, 0, 0, 0, false, DROP(RD), false},
	{"UDP for a TCP frame: judged, dropped", "198.51.100.20", TCP, 80, 0, true, NULL, 0, UDP, 0,
	 0, false, DROP(RD), false},
	{"a v6 key of a v4 frame's bytes: judged, dropped", "198.51.100.20", TCP, 80, 0, true,
	 "c633:6414::", 0, 0, 0, 0, false, DROP(RD), false},
	{"its own key half-written (odd sequence): judged, dropped", "198.51.100.20", TCP, 80, 0,
	 true, NULL, 0, 0, 0, 0, true, DROP(RD), false},
};

/* The frame's slot on every CPU: emptied, or planted with k. */
static int tc_judged_put(int map_fd, uint32_t slot, const struct sl_judged *k)
{
	int n = libbpf_num_possible_cpus(), i, err;
	struct sl_judged *v;

	if (n <= 0)
		return -EINVAL;
	v = calloc((size_t)n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; k && i < n; i++)
		v[i] = *k;
	err = bpf_map_update_elem(map_fd, &slot, v, BPF_ANY) ? -errno : 0;
	free(v);
	return err;
}

/* Some CPU's slot holds k whole, not being written. */
static bool tc_judged_holds(int map_fd, uint32_t slot, const struct sl_judged *k)
{
	int n = libbpf_num_possible_cpus(), i;
	struct sl_judged *v;
	bool found = false;

	if (n <= 0)
		return false;
	v = calloc((size_t)n, sizeof(*v));
	if (!v || bpf_map_lookup_elem(map_fd, &slot, v)) {
		free(v);
		return false;
	}
	for (i = 0; i < n && !found; i++)
		found = !(v[i].seq & 1) && v[i].cookie == k->cookie && v[i].era == k->era &&
			v[i].port == k->port && v[i].proto == k->proto &&
			v[i].family == k->family && !memcmp(v[i].addr, k->addr, 16);
	free(v);
	return found;
}

static void tc_judged_tests(void)
{
	struct run *r = &runs[P_DENY];
	int map_fd = bpf_map__fd(
		bpf_object__find_map_by_name(loader_object(r->l, "tc"), "sl_tc_judged"));
	uint32_t cur = loader_era(r->l);
	char name[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(tc_judged_cases); i++) {
		const struct tc_judged_case *c = &tc_judged_cases[i];
		struct sl_judged own = {}, key;
		struct pkt p = {};
		uint32_t slot, a[4];
		int family;
		bool ok;

		ok = map_fd >= 0 && !addr_of(c->dst, &family, own.addr) &&
		     !build_frame(&p, c->dst, c->proto, c->port, 0, 0, c->flags);
		own.family = (uint8_t)family;
		own.port = (uint16_t)c->port;
		own.proto = (uint8_t)c->proto;
		own.era = cur;
		key = own;
		if (ok && c->key_dst)
			ok = !addr_of(c->key_dst, &family, key.addr);
		key.family = (uint8_t)family;
		key.port = (uint16_t)(c->key_port ? c->key_port : c->port);
		key.proto = (uint8_t)(c->key_proto ? c->key_proto : c->proto);
		key.cookie = c->cookie;
		key.era = cur + (uint32_t)c->era_delta;
		key.seq = c->odd_seq ? 1 : 0;
		memcpy(a, own.addr, sizeof(a));
		slot = SL_JUDGED_DST_SLOT(a, own.port, own.proto);
		snprintf(why, WHY_LEN, "the case's frame or slot could not be made");
		ok = ok && !tc_judged_put(map_fd, slot, c->plant ? &key : NULL);
		snprintf(name, sizeof(name), "tc judged: %s", c->name);
		ok = ok && frame_check(r, r->tc_fd, true, &p, c->tc);
		if (ok && tc_judged_holds(map_fd, slot, &own) != c->noted) {
			snprintf(why, WHY_LEN, "the slot %s the frame's key after",
				 c->noted ? "does not hold" : "holds");
			ok = false;
		}
		report(ok, name, why);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* TLS: the packet layer's server-name check */

/* A name with %XX escapes (a NUL, a byte past ASCII), _ for a space; #N: long_name() of N bytes. */
static size_t name_decode(const char *s, size_t n, char *out, size_t out_len)
{
	size_t i, o = 0;
	unsigned v;

	if (n > 1 && s[0] == '#') {
		size_t len = strtoul(s + 1, NULL, 10);

		if (len >= out_len)
			len = out_len - 1;
		long_name(out, len);
		return len;
	}
	for (i = 0; i < n && o + 1 < out_len; i++) {
		if (s[i] == '%' && i + 2 < n && sscanf(s + i + 1, "%2x", &v) == 1) {
			out[o++] = (char)v;
			i += 2;
		} else {
			out[o++] = s[i] == '_' ? ' ' : s[i];
		}
	}
	out[o] = '\0';
	return o;
}

/* One server_name extension entry list: entries "T:NAME" or "NAME", comma-separated. */
static void put_sni(struct pkt *e, const char *list, size_t n)
{
	struct pkt body = {};
	char name[512];
	size_t len;

	for (;;) {
		const char *comma = memchr(list, ',', n), *colon;
		size_t item = comma ? (size_t)(comma - list) : n;
		unsigned type = 0;

		colon = memchr(list, ':', item);
		if (colon) {
			type = (unsigned)strtoul(list, NULL, 16);
			item -= (size_t)(colon + 1 - list);
			n -= (size_t)(colon + 1 - list);
			list = colon + 1;
		}
		len = name_decode(list, item, name, sizeof(name));
		put8(&body, type);
		put16(&body, (unsigned)len);
		put(&body, name, len);
		list += item;
		n -= item;
		if (!n)
			break;
		list++;
		n--;
	}
	put16(e, 0x0000);
	put16(e, (unsigned)body.len + 2);
	put16(e, (unsigned)body.len);
	put(e, body.b, body.len);
}

/*
 * A ClientHello as spec says (tokens, space-separated), in a TCP segment. Extensions, in order:
 *   sni:NAME[,NAME…]  one server_name extension (an entry "T:NAME" has name type T, hex)
 *   ext:TTTT[:N]      extension TTTT (hex) with N zero bytes;  exts:K:TTTT  K of them
 *   sniraw:HEX        a server_name extension with this body;  noext  no extensions at all
 * The record and the hello: rtype: rver: cver: htype: (hex) rlen: hlen: elen: (+/- bytes to the
 * length field) sid:N (session id bytes) cslen:N (cipher suites length field)
 * The segment: pre:HEX post:HEX (bytes around the record) split:N (the handshake message in two
 * records, the first N bytes long) cut:N (the first N bytes of the payload; -N: all but N)
 * then:NAME (a second ClientHello record naming NAME) raw:HEX (this payload, no hello)
 * plain:TEXT (this text as payload; _ a space) urg (TCP urgent flag) v6 (to 2001:db8::10)
 * tcpopt (12 bytes of TCP options) ipopt (4 bytes of IPv4 options)
 * The flow: port:N (tls_port is N == 443) state:N payloads:N (struct sl_sk_tls before it);
 * past the first hello (state 4 or 5), the name it passed with is example.com's, or none with
 * unnamed (a first hello report mode let through denied).
 */
struct hello {
	struct pkt ext;
	unsigned rtype, rver, cver, htype, sid, cslen;
	int rlen, hlen, elen, cut, split;
	bool noext, urg, v6, cslen_set, have_payload, tcpopt, ipopt;
	struct pkt pre, post, payload;
	char then[300];
	unsigned port, state, payloads;
	bool unnamed;
};

static void hello_record(struct pkt *out, const struct hello *h, const struct pkt *exts, bool whole)
{
	struct pkt m = {}, hs = {};
	size_t i;

	put16(&m, h->cver);
	for (i = 0; i < 32; i++)
		put8(&m, i);
	put8(&m, h->sid);
	for (i = 0; i < h->sid; i++)
		put8(&m, 0xaa);
	put16(&m, h->cslen_set ? h->cslen : 6);
	put_hex(&m, "130113021303");
	put_hex(&m, "0100");
	if (!h->noext) {
		put16(&m, (unsigned)((int)exts->len + (whole ? h->elen : 0)));
		put(&m, exts->b, exts->len);
	}
	put8(&hs, whole ? h->htype : 1);
	put24(&hs, (unsigned)((int)m.len + (whole ? h->hlen : 0)));
	put(&hs, m.b, m.len);
	if (whole && h->split > 0 && (size_t)h->split < hs.len) {
		put8(out, h->rtype);
		put16(out, h->rver);
		put16(out, (unsigned)h->split);
		put(out, hs.b, (size_t)h->split);
		put8(out, 0x16);
		put16(out, h->rver);
		put16(out, (unsigned)(hs.len - (size_t)h->split));
		put(out, hs.b + h->split, hs.len - (size_t)h->split);
		return;
	}
	put8(out, whole ? h->rtype : 0x16);
	put16(out, whole ? h->rver : 0x0301);
	put16(out, (unsigned)((int)hs.len + (whole ? h->rlen : 0)));
	put(out, hs.b, hs.len);
}

static int hello_parse(struct hello *h, const char *spec)
{
	char tok[600], *v;
	const char *s = spec;

	memset(h, 0, sizeof(*h));
	h->rtype = 0x16;
	h->rver = 0x0301;
	h->cver = 0x0303;
	h->htype = 1;
	h->sid = 32;
	h->port = 443;
	h->state = SL_TLS_PENDING;
	while (*s) {
		size_t n = strcspn(s, " ");

		if (n >= sizeof(tok))
			return -EINVAL;
		memcpy(tok, s, n);
		tok[n] = '\0';
		s += n + (s[n] == ' ');
		if (!n)
			continue;
		v = strchr(tok, ':');
		v = v ? v + 1 : tok + n;
		if (!strncmp(tok, "sni:", 4)) {
			put_sni(&h->ext, v, strlen(v));
		} else if (!strncmp(tok, "ext:", 4) || !strncmp(tok, "exts:", 5)) {
			unsigned k = 1, type, len = 0, i;
			char *c;

			if (tok[3] == 's') {
				k = (unsigned)strtoul(v, &c, 10);
				v = c + 1;
			}
			type = (unsigned)strtoul(v, &c, 16);
			if (*c == ':')
				len = (unsigned)strtoul(c + 1, NULL, 10);
			for (; k; k--) {
				put16(&h->ext, type);
				put16(&h->ext, len);
				for (i = 0; i < len; i++)
					put8(&h->ext, 0);
			}
		} else if (!strncmp(tok, "sniraw:", 7)) {
			struct pkt b = {};

			put_hex(&b, v);
			put16(&h->ext, 0);
			put16(&h->ext, (unsigned)b.len);
			put(&h->ext, b.b, b.len);
		} else if (!strcmp(tok, "noext")) {
			h->noext = true;
		} else if (!strncmp(tok, "rtype:", 6)) {
			h->rtype = (unsigned)strtoul(v, NULL, 16);
		} else if (!strncmp(tok, "rver:", 5)) {
			h->rver = (unsigned)strtoul(v, NULL, 16);
		} else if (!strncmp(tok, "cver:", 5)) {
			h->cver = (unsigned)strtoul(v, NULL, 16);
		} else if (!strncmp(tok, "htype:", 6)) {
			h->htype = (unsigned)strtoul(v, NULL, 16);
		} else if (!strncmp(tok, "rlen:", 5)) {
			h->rlen = (int)strtol(v, NULL, 10);
		} else if (!strncmp(tok, "hlen:", 5)) {
			h->hlen = (int)strtol(v, NULL, 10);
		} else if (!strncmp(tok, "elen:", 5)) {
			h->elen = (int)strtol(v, NULL, 10);
		} else if (!strncmp(tok, "sid:", 4)) {
			h->sid = (unsigned)strtoul(v, NULL, 10);
		} else if (!strncmp(tok, "cslen:", 6)) {
			h->cslen = (unsigned)strtoul(v, NULL, 10);
			h->cslen_set = true;
		} else if (!strncmp(tok, "pre:", 4)) {
			put_hex(&h->pre, v);
		} else if (!strncmp(tok, "post:", 5)) {
			put_hex(&h->post, v);
		} else if (!strncmp(tok, "split:", 6)) {
			h->split = (int)strtol(v, NULL, 10);
		} else if (!strncmp(tok, "cut:", 4)) {
			h->cut = (int)strtol(v, NULL, 10);
		} else if (!strncmp(tok, "then:", 5)) {
			snprintf(h->then, sizeof(h->then), "%s", v);
		} else if (!strncmp(tok, "raw:", 4)) {
			put_hex(&h->payload, v);
			h->have_payload = true;
		} else if (!strncmp(tok, "plain:", 6)) {
			char text[600];
			size_t len = name_decode(v, strlen(v), text, sizeof(text));

			put(&h->payload, text, len);
			h->have_payload = true;
		} else if (!strcmp(tok, "urg")) {
			h->urg = true;
		} else if (!strcmp(tok, "tcpopt")) {
			h->tcpopt = true;
		} else if (!strcmp(tok, "ipopt")) {
			h->ipopt = true;
		} else if (!strcmp(tok, "v6")) {
			h->v6 = true;
		} else if (!strncmp(tok, "port:", 5)) {
			h->port = (unsigned)strtoul(v, NULL, 10);
		} else if (!strncmp(tok, "state:", 6)) {
			h->state = (unsigned)strtoul(v, NULL, 10);
		} else if (!strncmp(tok, "payloads:", 9)) {
			h->payloads = (unsigned)strtoul(v, NULL, 10);
		} else if (!strcmp(tok, "unnamed")) {
			h->unnamed = true;
		} else {
			fprintf(stderr, "sl_progrun: unknown token in a TLS case: %s\n", tok);
			return -EINVAL;
		}
	}
	return 0;
}

/* The TCP segment (IPv4 or IPv6, Ethernet first) that carries the hello h describes. */
static int build_tls(struct pkt *p, const struct hello *h)
{
	struct pkt pay = {};
	uint8_t a[16];
	size_t l3;
	int family;

	if (h->have_payload) {
		pay = h->payload;
	} else {
		put(&pay, h->pre.b, h->pre.len);
		hello_record(&pay, h, &h->ext, true);
		if (h->then[0]) {
			struct pkt e2 = {};

			put_sni(&e2, h->then, strlen(h->then));
			hello_record(&pay, h, &e2, false);
		}
		put(&pay, h->post.b, h->post.len);
	}
	if (h->cut > 0 && (size_t)h->cut < pay.len)
		pay.len = (size_t)h->cut;
	else if (h->cut < 0 && (size_t)-h->cut <= pay.len)
		pay.len -= (size_t)-h->cut;

	if (addr_of(h->v6 ? "2001:db8::10" : "198.51.100.10", &family, a))
		return -EINVAL;
	p->len = 0;
	put_eth(p, family == AF_INET ? 0x0800 : 0x86dd);
	l3 = p->len;
	if (family == AF_INET) {
		put_hex(p, h->ipopt ? "46000000" : "45000000");
		put_hex(p, "00014000"
			   "40060000"
			   "0ac80102");
		put(p, a, 4);
		if (h->ipopt)
			put_hex(p, "01010100");
	} else {
		put_hex(p, "60000000"
			   "00000640"
			   "fd100200000100000000000000000002");
		put(p, a, 16);
	}
	put16(p, 40000);
	put16(p, h->port);
	put_hex(p, "00000001"
		   "00000001");
	put8(p, h->tcpopt ? 0x80 : 0x50);
	put8(p, h->urg ? 0x38 : 0x18); /* ACK PSH (URG) */
	put_hex(p, "2000"
		   "0000");
	put16(p, h->urg ? 1 : 0);
	if (h->tcpopt)
		put_hex(p, "0101080a0000000100000002"); /* NOP NOP timestamps */
	put(p, pay.b, pay.len);
	if (family == AF_INET)
		set16(p->b + l3 + 2, (unsigned)(p->len - l3));
	else
		set16(p->b + l3 + 4, (unsigned)(p->len - l3 - 40));
	return p->len > sizeof(p->b) - 1 ? -E2BIG : 0;
}

#define OK SL_REASON_SNI_OK
#define MIS SL_REASON_SNI_MISMATCH
#define CHG SL_REASON_SNI_CHANGED
#define MISS SL_REASON_SNI_MISSING
#define UNP SL_REASON_SNI_UNPARSEABLE
#define S_AWAIT SL_TLS_AWAIT_SERVER
#define S_DENIED SL_TLS_DENIED
#define S_NOT_TLS SL_TLS_NOT_TLS

struct tls_case {
	const char *name;
	const char *spec; /* the segment and the flow: see hello_parse */
	int pass;	  /* the packet passes (1) or is dropped (0) */
	unsigned reason;  /* the judged ClientHello's sl_reason; 0: none was judged */
	const char *sni;  /* the name read (lower-cased, %XX escapes); NULL: not checked */
	unsigned state;	  /* the flow's state after it; 0: not checked */
};

#define HELLO "ext:000a:4 ext:000d:8 ext:002b:3 " /* groups, signature algs, versions */

static const struct tls_case tls_cases[] = {
	/* names */
	{"a name resolved to this address", HELLO "sni:example.com", 1, OK, "example.com", S_AWAIT},
	{"another name resolved here", "sni:api.example.com", 1, OK, "api.example.com", S_AWAIT},
	{"a name not resolved here", "sni:evil.example", 0, MIS, "evil.example", S_DENIED},
	{"a suffix of an allowed name", "sni:xample.com", 0, MIS, "xample.com", S_DENIED},
	{"an allowed name as a suffix", "sni:evil-example.com", 0, MIS, NULL, S_DENIED},
	{"upper case is lowered", "sni:EXAMPLE.COM", 1, OK, "example.com", S_AWAIT},
	{"mixed case is lowered", "sni:Api.Example.Com", 1, OK, "api.example.com", S_AWAIT},
	{"a trailing dot is another name", "sni:example.com.", 0, MIS, "example.com.", S_DENIED},
	{"a NUL after the name", "sni:example.com%00", 0, MIS, "example.com%00", S_DENIED},
	{"a NUL inside the name", "sni:exam%00ple.com", 0, MIS, NULL, S_DENIED},
	{"a NUL before the name", "sni:%00example.com", 0, MIS, NULL, S_DENIED},
	{"a byte past ASCII", "sni:b%c3%bccher.example", 0, MIS, NULL, S_DENIED},
	{"an empty name", "sni:", 0, UNP, NULL, S_DENIED},
	{"the longest name (255 bytes), resolved here", "sni:#255", 1, OK, "#255", S_AWAIT},
	{"254 bytes, not resolved here", "sni:#254", 0, MIS, NULL, S_DENIED},
	{"256 bytes: longer than a name can be", "sni:#256", 0, UNP, NULL, S_DENIED},
	{"to v6, a name resolved there", "v6 sni:example.com", 1, OK, "example.com", S_AWAIT},
	{"to v6, a name resolved only for v4", "v6 sni:api.example.com", 0, MIS, NULL, S_DENIED},
	/* the server_name extension and its list */
	{"no server_name extension", HELLO, 0, MISS, NULL, S_DENIED},
	{"no extensions at all", "noext", 0, MISS, NULL, S_DENIED},
	{"two names in one list", "sni:example.com,evil.example", 0, UNP, NULL, S_DENIED},
	{"an allowed name after another", "sni:evil.example,example.com", 0, UNP, NULL, S_DENIED},
	{"two server_name extensions, same name", "sni:example.com sni:example.com", 0, UNP, NULL,
	 S_DENIED},
	{"two server_name extensions, other name last",
	 "sni:example.com ext:0010:3 sni:evil.example", 0, UNP, NULL, S_DENIED},
	{"name type 1 (not host_name)", "sni:1:example.com", 0, UNP, NULL, S_DENIED},
	{"name type ff", "sni:ff:example.com", 0, UNP, NULL, S_DENIED},
	{"host_name, then an entry of type 1", "sni:example.com,1:x", 0, UNP, NULL, S_DENIED},
	{"list length one too long", "sniraw:000f00000b6578616d706c652e636f6d", 0, UNP, NULL,
	 S_DENIED},
	{"list length one too short", "sniraw:000d00000b6578616d706c652e636f6d", 0, UNP, NULL,
	 S_DENIED},
	{"name length past the extension", "sniraw:000e00000c6578616d706c652e636f6d", 0, UNP, NULL,
	 S_DENIED},
	{"the same bytes, well formed", "sniraw:000e00000b6578616d706c652e636f6d", 1, OK,
	 "example.com", S_AWAIT},
	{"a bare list length", "sniraw:0000", 0, UNP, NULL, S_DENIED},
	{"an empty server_name extension", "sniraw:", 0, UNP, NULL, S_DENIED},
	/* extensions around it: order, GREASE, ECH, count */
	{"server_name first", "sni:example.com " HELLO, 1, OK, "example.com", S_AWAIT},
	{"server_name last", HELLO "ext:0010:5 ext:0015:40 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"GREASE before and after", "ext:0a0a ext:1a1a:1 sni:example.com ext:fafa:2", 1, OK, NULL,
	 S_AWAIT},
	{"ECH with an allowed outer name", "sni:example.com ext:fe0d:64", 1, OK, "example.com",
	 S_AWAIT},
	{"ECH with another outer name", "sni:public.example ext:fe0d:64", 0, MIS, NULL, S_DENIED},
	{"ECH without an outer name", "ext:fe0d:64 " HELLO, 0, MISS, NULL, S_DENIED},
	{"an extension of 0xffff", "ext:ffff:1 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"32 extensions with server_name", "exts:31:0a0a sni:example.com", 1, OK, NULL, S_AWAIT},
	{"33 extensions: more than are read", "exts:32:0a0a sni:example.com", 0, UNP, NULL,
	 S_DENIED},
	{"33 extensions, server_name first", "sni:example.com exts:32:0a0a", 0, UNP, NULL,
	 S_DENIED},
	/* versions */
	{"record version 3.0 (SSL 3.0)", "rver:0300 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"record version 3.1 (TLS 1.0)", "rver:0301 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"record version 3.2 (TLS 1.1)", "rver:0302 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"record version 3.3 (TLS 1.2)", "rver:0303 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"record version 3.4", "rver:0304 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"record version 2.0", "rver:0200 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"record version 0x1603", "rver:1603 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"hello version TLS 1.0", "cver:0301 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"hello version TLS 1.1", "cver:0302 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"hello version TLS 1.2 (and 1.3 by extension)", HELLO "cver:0303 sni:example.com", 1, OK,
	 NULL, S_AWAIT},
	{"hello version TLS 1.0, another name", "cver:0301 sni:evil.example", 0, MIS, NULL,
	 S_DENIED},
	/* what the first record is */
	{"an application-data record first", "rtype:17 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"an alert first", "rtype:15 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"a change-cipher-spec record first", "pre:140303000101 sni:example.com", 0, UNP, NULL,
	 S_DENIED},
	{"a heartbeat record first", "rtype:18 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"a ServerHello from the client", "htype:02 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"a Certificate message first", "htype:0b sni:example.com", 0, UNP, NULL, S_DENIED},
	{"plain HTTP on the TLS port", "plain:GET_/_HTTP/1.1%0d%0a", 0, UNP, NULL, S_DENIED},
	/* lengths that lie */
	{"record length one past the segment", "rlen:+1 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"record length 65535", "rlen:+65000 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"record length one short", "rlen:-1 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"handshake length one past the record", "hlen:+1 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"handshake length one short", "hlen:-1 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"handshake length 2^24 - 1", "hlen:+16777000 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"extensions length one too long", "elen:+1 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"extensions length one too short", "elen:-1 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"session id of 33 bytes", "sid:33 sni:example.com", 0, UNP, NULL, S_DENIED},
	{"no session id", "sid:0 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"cipher suites length past the hello", "cslen:65534 sni:example.com", 0, UNP, NULL,
	 S_DENIED},
	{"cipher suites length one short", "cslen:5 sni:example.com", 0, UNP, NULL, S_DENIED},
	/* records and segments */
	{"the hello cut by the segment end", "sni:example.com cut:-1", 0, UNP, NULL, S_DENIED},
	{"only the record header in this segment", "sni:example.com cut:5", 0, UNP, NULL, S_DENIED},
	{"three bytes of a record header", "sni:example.com cut:3", 0, UNP, NULL, S_DENIED},
	{"the hello split across two records", "sni:example.com split:40", 0, UNP, NULL, S_DENIED},
	{"split after the handshake header", "sni:example.com split:4", 0, UNP, NULL, S_DENIED},
	{"a second hello, also allowed", "sni:example.com then:api.example.com", 1, OK, NULL,
	 S_AWAIT},
	{"a second hello with another name", "sni:example.com then:evil.example", 0, MIS,
	 "evil.example", S_DENIED},
	{"a change-cipher-spec after the hello", "sni:example.com post:140303000101", 1, OK, NULL,
	 S_AWAIT},
	{"early data after the hello", "sni:example.com post:170303000400000000", 1, OK, NULL,
	 S_AWAIT},
	{"a second record cut short after the hello", "sni:example.com post:1703030004000000", 0,
	 UNP, NULL, S_DENIED},
	{"a stray handshake record after the hello", "sni:example.com post:160303000400000000", 0,
	 UNP, NULL, S_DENIED},
	{"nine records: more than are read",
	 "sni:example.com "
	 "post:"
	 "14030300010114030300010114030300010114030300010114030300010114030300010114030300010114030"
	 "3000101",
	 0, UNP, NULL, S_DENIED},
	{"TCP options before the payload", "tcpopt sni:example.com", 1, OK, "example.com", S_AWAIT},
	{"TCP options, another name", "tcpopt sni:evil.example", 0, MIS, "evil.example", S_DENIED},
	{"IPv4 options before TCP", "ipopt sni:example.com", 1, OK, "example.com", S_AWAIT},
	{"IPv4 options, another name", "ipopt sni:evil.example", 0, MIS, "evil.example", S_DENIED},
	{"urgent data", "urg sni:example.com", 0, UNP, NULL, S_DENIED},
	{"a pure ACK", "raw:", 1, 0, NULL, SL_TLS_PENDING},
	/* other ports: only what starts like TLS is judged */
	{"port 80, plain HTTP: not TLS", "port:80 plain:GET_/_HTTP/1.1%0d%0a", 1, 0, NULL,
	 S_NOT_TLS},
	{"port 80, an allowed hello", "port:80 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"port 80, a hello with another name", "port:80 sni:evil.example", 0, MIS, NULL, S_DENIED},
	{"port 80, a hello cut short", "port:80 sni:example.com cut:-1", 0, UNP, NULL, S_DENIED},
	{"port 80, one byte 0x16", "port:80 raw:16", 0, UNP, NULL, S_DENIED},
	{"port 80, an alert first", "port:80 pre:15030300020230 sni:example.com", 0, UNP, NULL,
	 S_DENIED},
	{"port 80, a first byte past TLS's (0x19)", "port:80 raw:19030100", 1, 0, NULL, S_NOT_TLS},
	{"port 80, a first byte below TLS's (0x13)", "port:80 raw:13030100", 1, 0, NULL, S_NOT_TLS},
	/* an SSLv2-format hello carries no name: off the TLS port it is not TLS, like plain text */
	{"port 80, an SSLv2-format hello", "port:80 raw:802e0103010015000000100000040000ff", 1, 0,
	 NULL, S_NOT_TLS},
	{"an SSLv2-format hello on the TLS port", "raw:802e0103010015000000100000040000ff", 0, UNP,
	 NULL, S_DENIED},
	/* later packets of the flow */
	{"a denied flow's next data", "state:3 sni:example.com", 0, 0, NULL, S_DENIED},
	{"an allowed flow: not looked at", "state:2 sni:evil.example", 1, 0, NULL, SL_TLS_ALLOWED},
	{"not TLS: not looked at", "state:6 port:80 sni:evil.example", 1, 0, NULL, S_NOT_TLS},
	{"awaiting the server: early data", "state:4 raw:170303000400000000", 1, 0, NULL, S_AWAIT},
	{"awaiting the server: a retransmitted hello", "state:4 sni:example.com", 1, OK, NULL,
	 S_AWAIT},
	{"awaiting the server: a hello with another name", "state:4 sni:evil.example", 0, MIS, NULL,
	 S_DENIED},
	{"awaiting the server: a hello naming another server resolved here: sni_changed",
	 "state:4 sni:names.example", 0, CHG, "names.example", S_DENIED},
	{"after a HelloRetryRequest: CCS, then the hello",
	 "state:5 pre:140303000101 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"after a HelloRetryRequest: another name", "state:5 pre:140303000101 sni:evil.example", 0,
	 MIS, NULL, S_DENIED},
	{"after a HelloRetryRequest: another server resolved here: sni_changed",
	 "state:5 pre:140303000101 sni:names.example", 0, CHG, NULL, S_DENIED},
	{"after a HelloRetryRequest, a first hello that named none (report mode let it through): "
	 "a listed name now: denied, sni_changed",
	 "state:5 unnamed pre:140303000101 sni:example.com", 0, CHG, NULL, S_DENIED},
	{"after a HelloRetryRequest: a CCS alone", "state:5 raw:140303000101", 1, 0, NULL,
	 SL_TLS_EXPECT_CH2},
	{"after a HelloRetryRequest: an alert alone", "state:5 raw:15030300020230", 1, 0, NULL,
	 SL_TLS_EXPECT_CH2},
	{"after a HelloRetryRequest: a Finished-like record", "state:5 raw:160303000414000000", 0,
	 UNP, NULL, S_DENIED},
	{"after a HelloRetryRequest: early data", "state:5 raw:170303000400000000", 0, UNP, NULL,
	 S_DENIED},
	{"the 16th watched payload", "state:4 payloads:15 sni:example.com", 1, OK, NULL, S_AWAIT},
	{"past 16 watched payloads", "state:4 payloads:16 sni:example.com", 0, UNP, NULL, S_DENIED},
};

/*
 * Run t_tls_egress on segment p of a flow whose socket holds in (host example.com), and check
 * its verdict: passed or dropped, and the reason the judged ClientHello got.
 */
static bool tls_judged(struct run *r, const struct pkt *p, struct t_tls_in in, int pass,
		       unsigned reason)
{
	struct sl_progrun_skb *o = r->skb;
	uint32_t ret;

	in.host_id = HOST_EXAMPLE;
	o->bss->t_in = in;
	if (!prog_run(bpf_program__fd(o->progs.t_tls_egress), p->b, p->len, &ret))
		return false;
	EXPECT(!o->bss->t_out.error, "the test program found no socket or storage");
	EXPECT(ret == (pass ? 1u : 0u), "expected the packet %s, got it %s (reason %u)",
	       pass ? "passed" : "dropped", ret ? "passed" : "dropped", o->bss->t_out.reason);
	EXPECT(o->bss->t_out.reason == reason, "expected reason %u, got %u", reason,
	       o->bss->t_out.reason);
	return true;
}

static bool tls_check(struct run *r, const struct tls_case *c)
{
	struct sl_progrun_skb *o = r->skb;
	char want_sni[512], got[SL_SNI_MAX + 1];
	struct hello h;
	struct pkt p;
	size_t want_len;

	EXPECT(!hello_parse(&h, c->spec) && !build_tls(&p, &h),
	       "the case's segment could not be built");
	/* past the first hello, the name it passed with (none: "unnamed") */
	if (!tls_judged(r, &p,
			(struct t_tls_in){
				.state = (__u8)h.state,
				.tls_port = h.port == SL_TLS_PORT,
				.payloads = (__u8)h.payloads,
				.sni_host_id = (h.state == SL_TLS_AWAIT_SERVER ||
						h.state == SL_TLS_EXPECT_CH2) && !h.unnamed ?
						       HOST_EXAMPLE :
						       0,
			},
			c->pass, c->reason))
		return false;
	EXPECT(!c->state || o->bss->t_out.state == c->state, "expected state %u after it, got %u",
	       c->state, o->bss->t_out.state);
	if (c->sni) {
		want_len = name_decode(c->sni, strlen(c->sni), want_sni, sizeof(want_sni));
		memcpy(got, o->bss->t_out.sni, sizeof(got));
		got[o->bss->t_out.sni_len <= SL_SNI_MAX ? o->bss->t_out.sni_len : SL_SNI_MAX] =
			'\0';
		EXPECT(o->bss->t_out.sni_len == want_len &&
			       !memcmp(o->bss->t_out.sni, want_sni, want_len),
		       "expected the name \"%s\" (%zu bytes), read \"%s\" (%u bytes)", c->sni,
		       want_len, got, o->bss->t_out.sni_len);
	}
	return true;
}

/*
 * A ClientHello on a flow connect() put under one rule, naming a name learned at the address
 * under another (a shared address): the flow goes on under the name's own rule, with its cap,
 * or is denied when none of the name's rules allows the port (sni_port).
 */
struct sni_rule_case {
	const char *name;
	const char *spec;      /* the segment (hello_parse) */
	__u16 flow_rule;       /* the rule connect() put the flow under */
	int pass;
	unsigned reason;
	__u16 want_rule;       /* the flow's rule after it */
	__u32 want_host;       /* … its host */
	__u64 want_max_req;    /* … its request cap (plus one) */
};

static const struct sni_rule_case sni_rule_cases[] = {
	{"another name's rule: put under the name's, its cap taken", "sni:names.example", R_WEB, 1,
	 OK, R_NAMES, HOST_NAMES, 1025},
	/* its rule left as it is, but its host budget the name's (connect() took the first name's) */
	{"the name's own rule already: left as it is, the name's host", "sni:names.example", R_NAMES,
	 1, OK, R_NAMES, HOST_NAMES, 0},
	/* RFC 8446 4.1.2: a second hello names the first's server; it never moves the flow */
	{"a second hello naming another name of the address: denied, left under the first's",
	 "sni:names.example then:example.com", R_WEB, 0, CHG, R_NAMES, HOST_NAMES, 1025},
	/* learned under no rule (report mode, an unlisted name): named is enough, as before */
	{"a name learned under no rule: passes, left as it is", "sni:unlisted.example", R_WEB, 1, OK,
	 R_WEB, HOST_EXAMPLE, 0},
	{"no rule of the name allows the port: sni_port", "sni:ssh.example", R_WEB, 0,
	 SL_REASON_SNI_PORT, R_WEB, HOST_EXAMPLE, 0},
	{"the name's rule, but not on this port: sni_port", "port:80 sni:names.example", R_WEB, 0,
	 SL_REASON_SNI_PORT, R_WEB, HOST_EXAMPLE, 0},
	{"a name not resolved here: the flow is left as it is", "sni:evil.example", R_WEB, 0, MIS,
	 R_WEB, HOST_EXAMPLE, 0},
};

/*
 * Under default: allow (allow_names_policy): a name whose rules do not allow the port is no
 * denial, the flow goes on under the default as that name alone there would have.
 */
static const struct sni_rule_case sni_rule_allow_cases[] = {
	{"default allows: no rule of the name allows the port: under the default, uncapped",
	 "port:8000 sni:names.example", RA_ALT, 1, OK, SL_RULE_DEFAULT, HOST_NAMES, 0},
	{"default allows: the name's own rule: left as it is", "port:8000 sni:alt.example", RA_ALT,
	 1, OK, RA_ALT, HOST_EXAMPLE, 0},
};

static bool sni_rule_check(struct run *r, const struct sni_rule_case *c)
{
	struct sl_progrun_skb *o = r->skb;
	struct hello h;
	struct pkt p;

	EXPECT(!hello_parse(&h, c->spec) && !build_tls(&p, &h),
	       "the case's segment could not be built");
	if (!tls_judged(r, &p,
			(struct t_tls_in){ .state = SL_TLS_PENDING,
					   .tls_port = h.port == SL_TLS_PORT,
					   .flow_rule = c->flow_rule },
			c->pass, c->reason))
		return false;
	EXPECT(o->bss->t_out.flow_rule == c->want_rule && o->bss->t_out.flow_host == c->want_host &&
		       o->bss->t_out.flow_max_req == c->want_max_req,
	       "expected the flow under rule %u, host %u, request cap %llu; got %u, %u, %llu",
	       c->want_rule, c->want_host, (unsigned long long)c->want_max_req,
	       o->bss->t_out.flow_rule, o->bss->t_out.flow_host,
	       (unsigned long long)o->bss->t_out.flow_max_req);
	return true;
}

/*
 * rv2 attacker: tls_egress's call of judge_client_hello when tcp_header() fails (off ~0U, the
 * tls_dst filled only as far as the header went): the packet is dropped and the flow denied.
 */
static bool rv2_tls_unparsed(struct run *r, size_t at, unsigned byte, unsigned state,
			     unsigned want_state)
{
	struct sl_progrun_skb *o = r->skb;
	struct hello h;
	struct pkt p;

	EXPECT(!hello_parse(&h, "sni:example.com") && !build_tls(&p, &h), "no segment");
	p.b[at] = (uint8_t)byte;
	if (!tls_judged(r, &p, (struct t_tls_in){ .state = (__u8)state, .tls_port = 1 }, 0,
			SL_REASON_SNI_UNPARSEABLE))
		return false;
	EXPECT(o->bss->t_out.state == want_state, "expected state %u, got %u", want_state,
	       o->bss->t_out.state);
	return true;
}

static void tls_tests(void)
{
	char name[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(tls_cases); i++) {
		snprintf(name, sizeof(name), "tls: %s", tls_cases[i].name);
		report(tls_check(&runs[P_DENY], &tls_cases[i]), name, why);
	}
	for (i = 0; i < ARRAY_SIZE(sni_rule_cases); i++) {
		snprintf(name, sizeof(name), "tls: shared address: %s", sni_rule_cases[i].name);
		report(sni_rule_check(&runs[P_DENY], &sni_rule_cases[i]), name, why);
	}
	for (i = 0; i < ARRAY_SIZE(sni_rule_allow_cases); i++) {
		snprintf(name, sizeof(name), "tls: shared address: %s",
			 sni_rule_allow_cases[i].name);
		report(sni_rule_check(&runs[P_ALLOW_NAMES], &sni_rule_allow_cases[i]), name, why);
	}
	/* 14: the Ethernet header; 14 + 9: IPv4 protocol; 14 + 20 + 12: TCP data offset */
	report(rv2_tls_unparsed(&runs[P_DENY], 14 + 20 + 12, 0x40, SL_TLS_PENDING, SL_TLS_DENIED),
	       "tls: rv2: TCP data offset 4, pending flow", why);
	report(rv2_tls_unparsed(&runs[P_DENY], 14 + 9, 17, SL_TLS_PENDING, SL_TLS_DENIED),
	       "tls: rv2: not TCP, pending flow", why);
	report(rv2_tls_unparsed(&runs[P_DENY], 14 + 20 + 12, 0x40, SL_TLS_AWAIT_SERVER,
				SL_TLS_DENIED),
	       "tls: rv2: TCP data offset 4, awaiting the server", why);
}

/* ------------------------------------------------------------------------------------------ */
/* The decision layer's verdict: decide_dst4/decide_dst6, as connect4/6 and sendmsg4/6 call them */

#define ALLOW SL_VERDICT_ALLOW
#define DENY SL_VERDICT_DENY
#define RULE SL_REASON_RULE
#define DEFALLOW SL_REASON_DEFAULT_ALLOW
#define ANY_RULE -1

struct decide_case {
	const char *name;
	int policy;
	const char *addr;
	unsigned proto; /* the socket's IPPROTO_* */
	unsigned port;
	unsigned verdict;
	unsigned reason;
	int rule_id;	  /* ANY_RULE: not checked */
	const char *eff;  /* the IPv4 address decided on for a v6 one that embeds it; NULL: none */
	unsigned host_id; /* the name the address was learned for; 0: none */
};

static const struct decide_case decide_cases[] = {
	{"connect4 to a listed host and port", D, "198.51.100.10", TCP, 443, ALLOW, RULE, R_WEB, 0,
	 0},
	{"connect4 to the range start", D, "198.51.100.10", TCP, 8000, ALLOW, RULE, R_WEB, 0, 0},
	{"connect4 to the range end", D, "198.51.100.10", TCP, 8100, ALLOW, RULE, R_WEB, 0, 0},
	{"connect4 below the range", D, "198.51.100.10", TCP, 7999, DENY, RD, 0, 0, 0},
	{"connect4 above the range", D, "198.51.100.10", TCP, 8101, DENY, RD, 0, 0, 0},
	{"sendmsg4 UDP to a TCP-only rule", D, "198.51.100.10", UDP, 80, DENY, RD, 0, 0, 0},
	{"sendmsg4 UDP range start", D, "203.0.113.200", UDP, 5000, ALLOW, RULE, R_UDP, 0, 0},
	{"sendmsg4 UDP range end", D, "203.0.113.200", UDP, 5010, ALLOW, RULE, R_UDP, 0, 0},
	{"sendmsg4 UDP past the range", D, "203.0.113.200", UDP, 5011, DENY, RD, 0, 0, 0},
	{"sendmsg4 UDP just outside the /24", D, "203.0.114.1", UDP, 5000, DENY, RD, 0, 0, 0},
	{"connect4 any-port rule, port 65535", D, "10.255.255.255", TCP, 65535, ALLOW, RULE, R_WIDE,
	 0, 0},
	{"connect4 longer prefix, its own port", D, "10.1.0.1", TCP, 22, ALLOW, RULE, ANY_RULE, 0,
	 0},
	{"connect4 longer prefix, the wider rule's", D, "10.1.0.1", UDP, 22, ALLOW, RULE, R_WIDE, 0,
	 0},
	{"connect4 0.0.0.0", D, "0.0.0.0", TCP, 80, DENY, RD, 0, 0, 0},
	{"ping socket to an icmp rule's host", D, "198.51.100.30", ICMP, 0, ALLOW, RULE, R_PING, 0,
	 0},
	{"ping6 socket to an icmp rule's host", D, "2001:db8::30", ICMP6, 0, ALLOW, RULE, R_PING, 0,
	 0},
	{"ping socket to a TCP rule's host", D, "198.51.100.10", ICMP, 0, DENY, RD, 0, 0, 0},
	{"SCTP to a listed host: cannot be classified", D, "198.51.100.10", 132, 80, DENY, RP, 0, 0,
	 0},
	{"SCTP under default allow", A, "198.51.100.10", 132, 80, ALLOW, DEFALLOW, 0, 0, 0},
	{"connect4 unlisted, default allow", A, "198.51.100.20", TCP, 80, ALLOW, DEFALLOW, 0, 0, 0},
	/* addresses the run's resolver learned for a name */
	{"connect4 to a learned address, the rule's port", D, "198.51.100.50", TCP, 443, ALLOW,
	 RULE, R_NAMES, 0, HOST_EXAMPLE},
	{"connect4 to a learned address, another port", D, "198.51.100.50", TCP, 80, DENY, RD, 0, 0,
	 HOST_EXAMPLE},
	{"sendmsg4 UDP to a learned address (hosts rules: TCP)", D, "198.51.100.50", UDP, 443, DENY,
	 RD, 0, 0, HOST_EXAMPLE},
	{"connect4 to an expired learned address", D, "198.51.100.51", TCP, 443, DENY, RD, 0, 0,
	 HOST_EXAMPLE},
	{"connect6 to a learned address", D, "2001:db8::50", TCP, 443, ALLOW, RULE, R_NAMES, 0,
	 HOST_EXAMPLE6},
	{"connect6 v4-mapped learned address", D, "::ffff:198.51.100.50", TCP, 443, ALLOW, RULE,
	 R_NAMES, "198.51.100.50", HOST_EXAMPLE},
	/* v6 forms of v4 hosts */
	{"connect6 v4-mapped listed host", D, "::ffff:198.51.100.10", TCP, 80, ALLOW, RULE, R_WEB,
	 "198.51.100.10", 0},
	{"connect6 v4-compatible listed host", D, "::198.51.100.10", TCP, 80, ALLOW, RULE, R_WEB,
	 "198.51.100.10", 0},
	{"connect6 NAT64 listed host", D, "64:ff9b::198.51.100.10", TCP, 80, ALLOW, RULE, R_WEB,
	 "198.51.100.10", 0},
	{"connect6 NAT64 listed host, unlisted port", D, "64:ff9b::198.51.100.10", TCP, 81, DENY,
	 RD, 0, "198.51.100.10", 0},
	{"connect6 ::", D, "::", TCP, 80, DENY, RD, 0, 0, 0},
	{"connect6 ::1", D, "::1", TCP, 80, DENY, RD, 0, 0, 0},
	{"connect6 6to4, default deny", D, "2002:c633:640a::1", TCP, 80, DENY, RR, 0, 0, 0},
	{"connect6 6to4, default allow", A, "2002:c633:640a::1", TCP, 80, ALLOW, DEFALLOW, 0, 0, 0},
	{"connect6 Teredo, default deny", D, "2001:0:c633:640a::1", TCP, 80, DENY, RR, 0, 0, 0},
	{"connect6 ISATAP, default deny", D, "2001:db8::5efe:c633:640a", TCP, 80, DENY, RR, 0, 0,
	 0},
	{"connect6 local NAT64, default deny", D, "64:ff9b:1::c633:640a", TCP, 80, DENY, RR, 0, 0,
	 0},
	/* the blackhole, whatever the policy */
	{"connect4 169.254.169.254", D, "169.254.169.254", TCP, 80, DENY, RB, 0, 0, 0},
	{"connect4 169.254.169.254, default allow", A, "169.254.169.254", TCP, 80, DENY, RB, 0, 0,
	 0},
	{"sendmsg4 169.254.0.0, default allow", A, "169.254.0.0", UDP, 53, DENY, RB, 0, 0, 0},
	{"connect4 169.253.255.255, default allow", A, "169.253.255.255", TCP, 80, ALLOW, DEFALLOW,
	 0, 0, 0},
	{"connect4 169.255.0.0, default allow", A, "169.255.0.0", TCP, 80, ALLOW, DEFALLOW, 0, 0,
	 0},
	{"connect6 v4-mapped metadata", A, "::ffff:169.254.169.254", TCP, 80, DENY, RB, 0,
	 "169.254.169.254", 0},
	{"connect6 v4-compatible metadata", A, "::169.254.169.254", TCP, 80, DENY, RB, 0,
	 "169.254.169.254", 0},
	{"connect6 NAT64 metadata", A, "64:ff9b::169.254.169.254", TCP, 80, DENY, RB, 0,
	 "169.254.169.254", 0},
	{"connect6 SIIT metadata", A, "::ffff:0:a9fe:a9fe", TCP, 80, DENY, RB, 0, "169.254.169.254",
	 0},
	{"connect6 6to4 metadata", A, "2002:a9fe:a9fe::1", TCP, 80, DENY, RB, 0, "169.254.169.254",
	 0},
	{"connect6 Teredo server metadata", A, "2001:0:a9fe:a9fe::1", TCP, 80, DENY, RB, 0,
	 "169.254.169.254", 0},
	{"connect6 Teredo client metadata", A, "2001:0:c633:640a::5601:5601", TCP, 80, DENY, RB, 0,
	 "169.254.169.254", 0},
	{"connect6 ISATAP metadata", A, "2001:db8::5efe:a9fe:a9fe", TCP, 80, DENY, RB, 0,
	 "169.254.169.254", 0},
	{"connect6 local NAT64 /48 metadata", A, "64:ff9b:1:a9fe:a9:fe00::", TCP, 80, DENY, RB, 0,
	 "169.254.169.254", 0},
	{"connect6 fe80::1", A, "fe80::1", TCP, 80, DENY, RB, 0, 0, 0},
	{"connect6 fd00:ec2::254", A, "fd00:ec2::254", TCP, 80, DENY, RB, 0, 0, 0},
	{"connect6 fd00:ec3::254 (not IMDS)", A, "fd00:ec3::254", TCP, 80, ALLOW, DEFALLOW, 0, 0,
	 0},
	{"sendmsg6 NAT64 metadata, UDP, default deny", D, "64:ff9b::a9fe:a9fe", UDP, 53, DENY, RB,
	 0, "169.254.169.254", 0},
	/* rv2 attacker: rules_match's bounds, learned_match's later slots, through decide_dst */
	{"rv2: 16th port entry", D, "192.0.2.200", TCP, 1031, ALLOW, RULE, R_MANY, 0, 0},
	{"rv2: 1st port entry", D, "192.0.2.129", TCP, 1001, ALLOW, RULE, R_MANY, 0, 0},
	{"rv2: between entries", D, "192.0.2.200", TCP, 1030, DENY, RD, 0, 0, 0},
	{"rv2: past the 16th", D, "192.0.2.200", TCP, 1033, DENY, RD, 0, 0, 0},
	{"rv2: 16th entry, UDP", D, "192.0.2.200", UDP, 1031, DENY, RD, 0, 0, 0},
	{"rv2: just below the /25", D, "192.0.2.127", TCP, 1031, DENY, RD, 0, 0, 0},
	{"rv2: v6 16th port entry", D, "2001:db8:2::1", TCP, 1031, ALLOW, RULE, R_MANY, 0, 0},
	{"rv2: v6 past the 16th", D, "2001:db8:2::1", TCP, 1032, DENY, RD, 0, 0, 0},
	{"rv2: v4-mapped 16th port entry", D, "::ffff:192.0.2.200", TCP, 1031, ALLOW, RULE, R_MANY,
	 "192.0.2.200", 0},
	{"rv2: NAT64 past the 16th", D, "64:ff9b::192.0.2.200", TCP, 1032, DENY, RD, 0,
	 "192.0.2.200", 0},
	{"rv2: learned, first rule's port", D, "198.51.100.52", TCP, 22, ALLOW, RULE, R_SSH, 0,
	 HOST_EXAMPLE},
	{"rv2: learned, second rule's port", D, "198.51.100.52", TCP, 443, ALLOW, RULE, R_NAMES, 0,
	 HOST_EXAMPLE},
	{"rv2: learned, neither rule's port", D, "198.51.100.52", TCP, 80, DENY, RD, 0, 0,
	 HOST_EXAMPLE},
	/*
	 * The entry's rules as userspace writes them, strictest first (the web rule was answered
	 * first; names' is capped). The host is the first answered name's: connect() knows no
	 * other (the known limit sluice-policy(5) states); a ClientHello re-keys it to its name's.
	 */
	{"shared address: the rule with the smallest request cap", D, "198.51.100.53", TCP, 443,
	 ALLOW, RULE, R_NAMES, 0, HOST_EXAMPLE},
	{"shared address: the only rule for the port", D, "198.51.100.53", TCP, 8000, ALLOW, RULE,
	 R_WEB, 0, HOST_EXAMPLE},
	{"rv2: learned, UDP to TCP rules", D, "198.51.100.52", UDP, 22, DENY, RD, 0, 0,
	 HOST_EXAMPLE},
	{"rv2: learned v4-mapped, second rule's port", D, "::ffff:198.51.100.52", TCP, 443, ALLOW,
	 RULE, R_NAMES, "198.51.100.52", HOST_EXAMPLE},
	{"rv2: v4-mapped metadata, ICMPv6, default allow", A, "::ffff:169.254.169.254", ICMP6,
	 0, DENY, RB, 0, "169.254.169.254", 0},
};

static bool decide_check(struct run *r, const struct decide_case *c)
{
	struct sl_progrun_decide *o = r->dec;
	struct pkt p = {};
	uint8_t a[16], eff[4] = {};
	int family;
	uint32_t ret;
	char g[INET_ADDRSTRLEN];

	EXPECT(!addr_of(c->addr, &family, a) && (!c->eff || inet_pton(AF_INET, c->eff, eff) == 1),
	       "bad address in the case");
	put_eth(&p, 0x0800);
	put(&p, a, 16);
	put(&p, &(uint16_t){(uint16_t)c->port}, 2);
	put8(&p, (unsigned)family);
	put8(&p, c->proto);
	put_hex(&p, "0000000000000000000000000000000000000000"); /* a frame's least */
	if (!prog_run(bpf_program__fd(o->progs.t_decide), p.b, p.len, &ret))
		return false;
	EXPECT(!o->bss->t_a.error, "the test program could not read the query");
	EXPECT(o->bss->t_a.verdict == c->verdict && o->bss->t_a.reason == c->reason,
	       "expected verdict %u reason %u, got verdict %u reason %u (rule %u)", c->verdict,
	       c->reason, o->bss->t_a.verdict, o->bss->t_a.reason, o->bss->t_a.rule_id);
	EXPECT(c->rule_id == ANY_RULE || o->bss->t_a.rule_id == c->rule_id,
	       "expected rule %d, got %u", c->rule_id, o->bss->t_a.rule_id);
	inet_ntop(AF_INET, o->bss->t_a.eff_addr, g, sizeof(g));
	EXPECT(o->bss->t_a.embedded_v4 == !!c->eff && !memcmp(o->bss->t_a.eff_addr, eff, 4),
	       "expected the v4 address decided on %s, got %s (embedded %u)",
	       c->eff ? c->eff : "none", g, o->bss->t_a.embedded_v4);
	EXPECT(o->bss->t_a.host_id == c->host_id, "expected host_id %u, got %u", c->host_id,
	       o->bss->t_a.host_id);
	EXPECT(o->bss->t_a.learned == (c->verdict == ALLOW && c->reason == RULE && c->host_id),
	       "learned is %u", o->bss->t_a.learned);
	return true;
}

static void decide_tests(void)
{
	char name[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(decide_cases); i++) {
		snprintf(name, sizeof(name), "decide: %s", decide_cases[i].name);
		report(decide_check(&runs[decide_cases[i].policy], &decide_cases[i]), name, why);
	}
}

/* ------------------------------------------------------------------------------------------ */
/*
 * The decision layer's programs themselves. BPF_PROG_RUN cannot run a cgroup sock_addr program,
 * so these cases make the real call: a child process joins a cgroup of the test's own, where the
 * loaded connect4/6 and sendmsg4/6 are attached, and a network namespace of its own with no
 * device up, so an allowed call fails for want of a route (ENETUNREACH) and nothing leaves; a
 * denied one fails with the policy's errno first. The verdict is read from the record the
 * program wrote. This covers judge4/judge6 and finish() (the DNS redirect, the blackhole before
 * it, the v4-mapped path), which the decide cases cannot reach.
 */

struct hook_case {
	const char *name;
	int policy;
	int type;	  /* SOCK_STREAM: connect(); SOCK_DGRAM: sendto() */
	int family;	  /* of the socket */
	const char *addr; /* the destination, in the socket's family's form */
	unsigned port;
	int err; /* the call's errno, or NOROUTE */
	unsigned hook, verdict, reason;
};

#define C4 SL_HOOK_CONNECT4
#define C6 SL_HOOK_CONNECT6
#define S4 SL_HOOK_SENDMSG4
#define S6 SL_HOOK_SENDMSG6
#define RDNS SL_REASON_DNS_REDIRECT
#define ST SOCK_STREAM
#define DG SOCK_DGRAM
#define V4 AF_INET
#define V6 AF_INET6
#define NOROUTE (-1) /* allowed: then no route (ENETUNREACH) or no source (EADDRNOTAVAIL) */

static const struct hook_case hook_cases[] = {
	{"connect4 to a listed host and port", D, ST, V4, "198.51.100.10", 80, NOROUTE, C4, ALLOW,
	 RULE},
	{"connect4 to an unlisted port", D, ST, V4, "198.51.100.10", 81, EPERM, C4, DENY, RD},
	{"connect4 to the range end", D, ST, V4, "198.51.100.10", 8100, NOROUTE, C4, ALLOW, RULE},
	{"connect4 past the range end", D, ST, V4, "198.51.100.10", 8101, EPERM, C4, DENY, RD},
	{"connect4 to a learned address", D, ST, V4, "198.51.100.50", 443, NOROUTE, C4, ALLOW,
	 RULE},
	{"connect4 to the metadata address", A, ST, V4, "169.254.169.254", 80, EPERM, C4, DENY, RB},
	{"connect4 unlisted, default allow", A, ST, V4, "198.51.100.20", 80, NOROUTE, C4, ALLOW,
	 DEFALLOW},
	{"connect4 to port 53: the run's resolver", D, ST, V4, "198.51.100.20", 53, NOROUTE, C4,
	 ALLOW, RDNS},
	{"connect4 to the metadata address's port 53", D, ST, V4, "169.254.169.254", 53, EPERM, C4,
	 DENY, RB},
	{"sendmsg4 to a UDP range", D, DG, V4, "203.0.113.7", 5010, NOROUTE, S4, ALLOW, RULE},
	{"sendmsg4 past a UDP range", D, DG, V4, "203.0.113.7", 5011, EPERM, S4, DENY, RD},
	{"sendmsg4 to a TCP-only rule", D, DG, V4, "198.51.100.10", 80, EPERM, S4, DENY, RD},
	{"sendmsg4 DNS to another resolver", D, DG, V4, "192.0.2.53", 53, NOROUTE, S4, ALLOW, RDNS},
	{"sendmsg4 to 169.254.0.1, default allow", A, DG, V4, "169.254.0.1", 123, EPERM, S4, DENY,
	 RB},
	{"connect6 to a listed host", D, ST, V6, "2001:db8::10", 443, NOROUTE, C6, ALLOW, RULE},
	{"connect6 to an unlisted host", D, ST, V6, "2001:db8::20", 443, EPERM, C6, DENY, RD},
	{"connect6 to a learned address", D, ST, V6, "2001:db8::50", 443, NOROUTE, C6, ALLOW, RULE},
	{"connect6 v4-mapped listed host", D, ST, V6, "::ffff:198.51.100.10", 80, NOROUTE, C6,
	 ALLOW, RULE},
	{"connect6 v4-mapped metadata", A, ST, V6, "::ffff:169.254.169.254", 80, EPERM, C6, DENY,
	 RB},
	{"connect6 NAT64 metadata", A, ST, V6, "64:ff9b::a9fe:a9fe", 80, EPERM, C6, DENY, RB},
	{"connect6 6to4 metadata", A, ST, V6, "2002:a9fe:a9fe::1", 80, EPERM, C6, DENY, RB},
	{"connect6 Teredo, default deny", D, ST, V6, "2001:0:c633:640a::1", 80, EPERM, C6, DENY,
	 RR},
	{"connect6 fe80::1", A, ST, V6, "fe80::1", 80, EPERM, C6, DENY, RB},
	{"connect6 NAT64 metadata's port 53", D, ST, V6, "64:ff9b::a9fe:a9fe", 53, EPERM, C6, DENY,
	 RB},
	{"sendmsg6 to a UDP range", D, DG, V6, "2001:db8:1::7", 5000, NOROUTE, S6, ALLOW, RULE},
	{"sendmsg6 past a UDP range", D, DG, V6, "2001:db8:1::7", 5011, EPERM, S6, DENY, RD},
	{"sendmsg6 DNS to another resolver", D, DG, V6, "2001:db8::53", 53, NOROUTE, S6, ALLOW,
	 RDNS},
	{"sendmsg6 fd00:ec2::254", A, DG, V6, "fd00:ec2::254", 53, EPERM, S6, DENY, RB},
	{"sendmsg6 v4-mapped metadata (the kernel's sendmsg4)", A, DG, V6, "::ffff:169.254.169.254",
	 80, EPERM, S4, DENY, RB},
};

static char hook_cg[4096];
static int hook_cg_fd = -1;

/* The child: into the cgroup, into a namespace with nothing up, then the one call. */
static int hook_call(const struct hook_case *c)
{
	struct sockaddr_storage ss = {};
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	socklen_t len = c->family == AF_INET ? sizeof(*in4) : sizeof(*in6);
	char path[4200];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/cgroup.procs", hook_cg);
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, "0", 1) != 1 || unshare(CLONE_NEWNET))
		return 255;
	close(fd);
	ss.ss_family = (sa_family_t)c->family;
	if (c->family == AF_INET) {
		in4->sin_port = htons((uint16_t)c->port);
		inet_pton(AF_INET, c->addr, &in4->sin_addr);
	} else {
		in6->sin6_port = htons((uint16_t)c->port);
		inet_pton(AF_INET6, c->addr, &in6->sin6_addr);
	}
	fd = socket(c->family, c->type, 0);
	if (fd < 0)
		return 254;
	if (c->type == SOCK_STREAM)
		rc = connect(fd, (struct sockaddr *)&ss, len);
	else
		rc = (int)sendto(fd, "q", 1, 0, (struct sockaddr *)&ss, len);
	return rc ? errno : 0;
}

static bool hook_check(struct run *r, const struct hook_case *c)
{
	int status, got;
	pid_t pid;

	ring_buffer__consume(r->rb);
	n_ev = 0;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		EXPECT(false, "fork: %s", strerror(errno));
	if (!pid)
		_exit(hook_call(c));
	EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status), "the child did not exit");
	EXPECT(WEXITSTATUS(status) < 254, "the child could not join the cgroup and namespace");
	ring_buffer__consume(r->rb);
	got = WEXITSTATUS(status);
	EXPECT(c->err == NOROUTE ? got == ENETUNREACH || got == EADDRNOTAVAIL : got == c->err,
	       "expected the call to fail with %s, got %s",
	       c->err == NOROUTE ? "no route or no address" : strerror(c->err),
	       got ? strerror(got) : "success");
	EXPECT(n_ev == 1, "expected one decision record, got %d", n_ev);
	EXPECT(last_ev.hook == c->hook && last_ev.verdict == c->verdict &&
		       last_ev.reason == c->reason,
	       "expected hook %u verdict %u reason %u, the record says hook %u verdict %u reason "
	       "%u",
	       c->hook, c->verdict, c->reason, last_ev.hook, last_ev.verdict, last_ev.reason);
	return true;
}

static const char *const hook_progs[] = {"sl_connect4", "sl_connect6", "sl_sendmsg4",
					 "sl_sendmsg6"};

static void hook_tests(void)
{
	struct bpf_link *links[P_MAX][ARRAY_SIZE(hook_progs)] = {};
	char root[4096], name[256];
	size_t i, k;
	int p;

	if (cgroup_v2_mount(root, sizeof(root)) ||
	    snprintf(hook_cg, sizeof(hook_cg), "%s/sl-progrun-%d", root, getpid()) >=
		    (int)sizeof(hook_cg) ||
	    mkdir(hook_cg, 0700) || (hook_cg_fd = open(hook_cg, O_RDONLY | O_DIRECTORY)) < 0) {
		for (i = 0; i < ARRAY_SIZE(hook_cases); i++)
			printf("ok %d - hook: %s # SKIP no cgroup v2 directory of our own\n",
			       ++n_test, hook_cases[i].name);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(hook_cases); i++) {
		const struct hook_case *c = &hook_cases[i];
		struct run *r = &runs[c->policy];
		bool ok = true;

		/* one policy's programs on the cgroup at a time */
		for (p = 0; p < P_MAX; p++) {
			for (k = 0; k < ARRAY_SIZE(hook_progs); k++) {
				struct bpf_program *prog = bpf_object__find_program_by_name(
					loader_object(runs[p].l, "sock_addr"), hook_progs[k]);

				if (p != c->policy && links[p][k]) {
					bpf_link__destroy(links[p][k]);
					links[p][k] = NULL;
				}
				if (p == c->policy && !links[p][k]) {
					links[p][k] = bpf_program__attach_cgroup(prog, hook_cg_fd);
					if (!links[p][k]) {
						snprintf(why, WHY_LEN, "attach %s: %s",
							 hook_progs[k], strerror(errno));
						ok = false;
					}
				}
			}
		}
		snprintf(name, sizeof(name), "hook: %s", c->name);
		report(ok && hook_check(r, c), name, why);
	}
	for (p = 0; p < P_MAX; p++)
		for (k = 0; k < ARRAY_SIZE(hook_progs); k++)
			bpf_link__destroy(links[p][k]);
	close(hook_cg_fd);
	rmdir(hook_cg);
}

/* ------------------------------------------------------------------------------------------ */
/*
 * The RST of a socket sluice destroys, at the host side (tc.bpf.c destroy_reset_frame,
 * reset_fix): a frame the packet layer wrote down in sl_resets passes once, in its fixed form;
 * one whose TCP data offset byte is not exactly its length's (a reserved or AE bit, or a length
 * that says timestamps where the offset does not) is refused.
 */
static unsigned csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	return sum;
}

/* An IPv4 TCP RST|ACK 10.200.1.2:40000 -> 203.0.113.99:80 with what a workload chose in it. */
static void rst_frame(struct pkt *p, unsigned doff_byte, bool stamps)
{
	uint8_t *ip, *th;
	size_t tl = stamps ? 32 : 20;
	uint32_t sum;

	p->len = 0;
	put_eth(p, 0x0800);
	ip = p->b + p->len;
	put_hex(p, "45b8"); /* TOS 0xb8 */
	put16(p, 20 + tl);
	put_hex(p, "12340000" "0706" "0000" "0ac80102" "cb007163"); /* ID, no DF, TTL 7 */
	th = p->b + p->len;
	put_hex(p, "9c400050" "01020304" "05060708");
	put8(p, doff_byte);
	put_hex(p, "14" "0480" "0000" "0001"); /* RST|ACK, window 1152, urgent pointer 1 */
	if (stamps)
		put_hex(p, "0101080a" "11223344" "55667788");
	set16(ip + 10, ~csum_fold(csum_add(0, ip, 20)) & 0xffff);
	sum = csum_add(csum_add(0, ip + 12, 8), th, tl) + 6 + tl;
	set16(th + 16, ~csum_fold(sum) & 0xffff);
}

static bool rst_put(struct run *r, int fd, const struct pkt *p)
{
	struct sl_ns_flow_key k = {.sport = 40000, .dport = 80, .family = AF_INET,
				   .proto = 6};
	struct sl_reset_frame v = {.len = (uint32_t)(p->len - ETH_LEN)};

	(void)r;
	memcpy(k.saddr, p->b + ETH_LEN + 12, 4);
	memcpy(k.daddr, p->b + ETH_LEN + 16, 4);
	memcpy(v.bytes, p->b + ETH_LEN, v.len);
	EXPECT(!bpf_map_update_elem(fd, &k, &v, BPF_ANY), "write sl_resets: %s", strerror(errno));
	return true;
}

/* Run the host side on p; *passed, and the frame as it left in out. */
static bool rst_run(struct run *r, const struct pkt *p, struct pkt *out, bool *passed)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b, .data_size_in = (uint32_t)p->len,
		    .data_out = out->b, .data_size_out = sizeof(out->b));

	map_clear(r->tc_reported_fd, r->tc_reported_key);
	EXPECT(!bpf_prog_test_run_opts(r->tc_fd, &o), "BPF_PROG_RUN failed: %s", strerror(errno));
	ring_buffer__consume(r->rb);
	EXPECT(o.retval == (uint32_t)-1 || o.retval == 2, "unexpected return value %u", o.retval);
	*passed = o.retval == (uint32_t)-1;
	out->len = o.data_size_out;
	return true;
}

static bool rst_fixed_once(struct run *r, int fd)
{
	static const uint8_t nops[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	struct pkt p = {}, out = {};
	const uint8_t *ip = out.b + ETH_LEN, *th = ip + 20;
	bool passed;

	rst_frame(&p, 0x80, true);
	if (!rst_put(r, fd, &p) || !rst_run(r, &p, &out, &passed))
		return false;
	EXPECT(passed, "the RST written down was dropped");
	EXPECT(out.len == p.len, "%zu bytes left, not %zu", out.len, p.len);
	EXPECT(ip[1] == 0 && ip[4] == 0 && ip[5] == 0 && ip[6] == 0x40 && ip[7] == 0 && ip[8] == 64,
	       "IPv4 fields: tos %u id %02x%02x frag %02x%02x ttl %u", ip[1], ip[4], ip[5], ip[6],
	       ip[7], ip[8]);
	EXPECT(th[12] == 0x80 && th[13] == 0x14 && th[14] == 0 && th[15] == 0 && th[18] == 0 &&
		       th[19] == 0 && !memcmp(th + 20, nops, 12),
	       "TCP fields: offset %02x flags %02x window %02x%02x urg %02x%02x opt %02x", th[12],
	       th[13], th[14], th[15], th[18], th[19], th[22]);
	EXPECT(!memcmp(th, p.b + ETH_LEN + 20, 12), "ports or sequence numbers changed");
	EXPECT(csum_fold(csum_add(0, ip, 20)) == 0xffff, "the IPv4 checksum is wrong");
	EXPECT(csum_fold(csum_add(csum_add(0, ip + 12, 8), th, 32) + 6 + 32) == 0xffff,
	       "the TCP checksum is wrong");
	EXPECT(rst_run(r, &p, &out, &passed) && !passed, "the same frame passed twice");
	return true;
}

static bool rst_refused(struct run *r, int fd, unsigned doff_byte, bool stamps)
{
	struct pkt p = {}, out = {};
	bool passed;

	rst_frame(&p, doff_byte, stamps);
	if (!rst_put(r, fd, &p) || !rst_run(r, &p, &out, &passed))
		return false;
	EXPECT(!passed, "passed");
	return true;
}

static void reset_tests(void)
{
	struct run *r = &runs[P_DENY];
	struct bpf_map *m = bpf_object__find_map_by_name(loader_object(r->l, "tc"), "sl_resets");
	int fd = m ? bpf_map__fd(m) : -1;
	bool ok = fd >= 0 && bpf_map__value_size(m) == sizeof(struct sl_reset_frame);

	snprintf(why, WHY_LEN, "no sl_resets of the value size this test knows");
	report(ok && rst_fixed_once(r, fd),
	       "reset: a RST written down passes once, in its fixed form, checksums right", why);
	report(ok && rst_refused(r, fd, 0x81, true),
	       "reset: one with a reserved bit in its data offset byte (AE) is refused", why);
	report(ok && rst_refused(r, fd, 0x50, true),
	       "reset: one whose offset says 5 words, 8 long (timestamps by length): refused",
	       why);
	report(ok && rst_refused(r, fd, 0x58, false),
	       "reset: one with a reserved bit and no options is refused", why);
}

int main(void)
{
	int err = 0, i;

	printf("TAP version 13\n");
	if (geteuid()) {
		printf("1..0 # SKIP loading BPF programs needs root\n");
		return 0;
	}
	err = run_up(&runs[P_DENY], deny_policy, P_DENY);
	if (!err)
		err = run_up(&runs[P_ALLOW], allow_policy, P_ALLOW);
	if (!err)
		err = run_up(&runs[P_ALLOW_NAMES], allow_names_policy, P_ALLOW_NAMES);
	if (err) {
		printf("Bail out! cannot load the programs: %s\n", strerror(-err));
		return 1;
	}
	printf("1..%zu\n", 2 * ARRAY_SIZE(frame_cases) + ARRAY_SIZE(flow_cases) +
				   ARRAY_SIZE(judged_cases) + ARRAY_SIZE(tc_judged_cases) +
				   ARRAY_SIZE(tls_cases) + ARRAY_SIZE(sni_rule_cases) +
				   ARRAY_SIZE(sni_rule_allow_cases) + 3 + 4 +
				   ARRAY_SIZE(decide_cases) + ARRAY_SIZE(hook_cases));
	frame_tests();
	reset_tests();
	flow_tests();
	judged_tests();
	tc_judged_tests();
	tls_tests();
	decide_tests();
	hook_tests();
	for (i = 0; i < P_MAX; i++)
		run_down(&runs[i]);
	return tap_status();
}
