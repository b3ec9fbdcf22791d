/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Address classification shared by every layer: the fixed blackhole and the IPv4 addresses that
 * IPv6 destinations embed. All addresses are in network order, as the kernel hands them to us.
 * Pure functions of their arguments, plain C over words and bytes: userspace includes this header
 * too (hosttotals.c; the resolver and the policy compiler through addr_class()), so that what the
 * kernel blackholes and what the resolver refuses to hand out are decided by the same code. The
 * host a byte-total cap counts under, and when its budget is spent, are here for the same reason.
 */
#ifndef SLUICE_ADDR_BPF_H
#define SLUICE_ADDR_BPF_H

#ifdef __bpf__
#include "net.bpf.h" /* AF_INET, AF_INET6 */
#else
#include <linux/types.h>
#include <stdbool.h>
#include <string.h>
#include <sys/cdefs.h> /* __always_inline */
#include <sys/socket.h>
#endif
#include <bpf/bpf_endian.h>
#include "sluice.h" /* struct sl_host_key */

/*
 * 169.254.0.0/16: link-local, home of every cloud's metadata service. It needs no DNS, so a
 * name-based control never sees it; it is refused here whatever the policy says.
 */
static __always_inline bool v4_is_blackholed(__u32 addr)
{
	return (addr & bpf_htonl(0xffff0000)) == bpf_htonl(0xa9fe0000);
}

/*
 * fe80::/10, link-local: the one definition, for the blackhole below and for the host-side tc
 * program, which lets neighbour discovery to it through (bpf/tc.bpf.c, link_control).
 */
static __always_inline bool v6_is_link_local(const __u32 w[4])
{
	return (w[0] & bpf_htonl(0xffc00000)) == bpf_htonl(0xfe800000);
}

/* fe80::/10 (link-local, where some clouds also answer) and fd00:ec2::/32 (AWS IMDS over IPv6). */
static __always_inline bool v6_native_is_blackholed(const __u32 w[4])
{
	if (v6_is_link_local(w))
		return true;
	return w[0] == bpf_htonl(0xfd000ec2);
}

/*
 * ::ffff:0:0/96, the IPv4-mapped form: the one IPv6 destination the kernel itself turns into
 * IPv4 (a dual-stack socket's connect() to ::ffff:a.b.c.d sends IPv4 packets to a.b.c.d, w[3]).
 */
static __always_inline bool v6_is_v4_mapped(const __u32 w[4])
{
	return w[0] == 0 && w[1] == 0 && w[2] == bpf_htonl(0x0000ffff);
}

/*
 * IPv6 forms whose traffic ends up at an IPv4 address the policy must judge as IPv4: the kernel
 * turns ::ffff:a.b.c.d into an IPv4 connect, a NAT64 gateway turns 64:ff9b::a.b.c.d into one, and
 * ::a.b.c.d is the deprecated IPv4-compatible form (RFC 4291) that some stacks still translate.
 * ::, ::1 are not embeddings. Returns true and the IPv4 address in *v4.
 */
static __always_inline bool v6_embeds_v4_for_policy(const __u32 w[4], __u32 *v4)
{
	if (w[1] != 0 || w[2] & ~bpf_htonl(0x0000ffff))
		return false;
	if (v6_is_v4_mapped(w)) {
		*v4 = w[3];
		return true;
	}
	if (w[2] != 0)
		return false;
	if (w[0] == bpf_htonl(0x0064ff9b) ||
	    (w[0] == 0 && w[3] != 0 && w[3] != bpf_htonl(1))) {
		*v4 = w[3];
		return true;
	}
	return false;
}

/*
 * The key of a flow's host: its name when the resolver produced the address, else the address.
 * Shared with userspace (hosttotals.c), so that the host_total lines count hosts as the caps
 * do: the includer provides struct sl_host_key (sluice.h) and AF_INET/AF_INET6.
 */
static __always_inline void host_key_of(struct sl_host_key *k, __u16 rule_id, __u32 host_id,
					__u8 family, const __u8 addr[16])
{
	__u32 v4 = 0;

	__builtin_memset(k, 0, sizeof(*k));
	k->rule_id = rule_id;
	k->host_id = host_id;
	if (host_id)
		return;
	/* one budget per host whatever form its address was asked in (::ffff:a.b.c.d, NAT64) */
	if (family == AF_INET6 && v6_embeds_v4_for_policy((const __u32 *)addr, &v4)) {
		k->family = AF_INET;
		__builtin_memcpy(k->addr, &v4, 4);
		return;
	}
	k->family = family;
	__builtin_memcpy(k->addr, addr, 16);
}

/*
 * A host whose total for the run has reached its rule's cap gets no new flow: once a flow was cut
 * for it, what is left of the budget is smaller than the packet that did not fit. One rule for the
 * connect hooks (sock_addr.bpf.c) and for the switch's re-judge of open flows (loader.c's
 * loader_host_spent, reading the same maps), so that the two cannot disagree on a host.
 */
static __always_inline bool host_bytes_spent(const struct sl_rule_caps *caps,
					     const struct sl_host_bytes *b)
{
	if (!caps->max_total_req && !caps->max_total_resp)
		return false;
	/* caps are stored plus one: spent when not one more byte fits, or once a flow was cut */
	return b->spent || (caps->max_total_req && b->req_bytes >= caps->max_total_req - 1) ||
	       (caps->max_total_resp && b->resp_bytes >= caps->max_total_resp - 1);
}

static __always_inline __u32 bytes_to_v4(__u8 a, __u8 b, __u8 c, __u8 d)
{
	return bpf_htonl(((__u32)a << 24) | ((__u32)b << 16) | ((__u32)c << 8) | d);
}

/* The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215). */
static __always_inline bool v6_is_local_nat64(const __u32 w[4])
{
	return w[0] == bpf_htonl(0x0064ff9b) && (bpf_ntohl(w[1]) >> 16) == 0x0001;
}

/*
 * Other places an IPv4 address hides in an IPv6 one, checked against the blackhole only (the v6
 * policy still applies to them): 6to4 2002:V4::/48, Teredo 2001:0::/32 (server in bits 32-63,
 * client inverted in the last 32 bits), ISATAP interface ids ::[02]00:5efe:V4, and the RFC 6052
 * positions (/48, /56, /64, /96) inside the local-use NAT64 prefix 64:ff9b:1::/48.
 * Their addresses into cand, the four NAT64 positions last (at most 5 in all: ISATAP's interface
 * id can come with any of the others, which exclude each other); their number.
 */
static __always_inline int v6_relay_v4s(const __u32 w[4], __u32 cand[6])
{
	__u32 h0 = bpf_ntohl(w[0]), h1 = bpf_ntohl(w[1]), h2 = bpf_ntohl(w[2]), h3 = bpf_ntohl(w[3]);
	int n = 0;

	if ((h0 >> 16) == 0x2002)
		cand[n++] = bpf_htonl((h0 << 16) | (h1 >> 16));
	if (h0 == 0x20010000) {
		cand[n++] = w[1];
		cand[n++] = ~w[3];
	}
	if ((h2 & 0xfdffffff) == 0x00005efe)
		cand[n++] = w[3];
	if (v6_is_local_nat64(w)) {
		/* /48: bits 48-63 and 72-87 (bits 64-71 are the RFC 6052 u octet) */
		cand[n++] = bpf_htonl(((h1 & 0xffff) << 16) | ((h2 >> 8) & 0xffff));
		/* /56: bits 56-63, 72-95 */
		cand[n++] = bpf_htonl(((h1 & 0xff) << 24) | (h2 & 0xffffff));
		/* /64: bits 72-103 */
		cand[n++] = bpf_htonl((h2 << 8) | (h3 >> 24));
		/* /96: the last 32 bits */
		cand[n++] = w[3];
	}
	return n;
}

/* Returns true and the embedded address in *v4 when one of v6_relay_v4s() is in the blackhole. */
static __always_inline bool v6_embeds_blackholed_v4(const __u32 w[4], __u32 *v4)
{
	__u32 cand[6];
	int n = v6_relay_v4s(w, cand), i;

	for (i = 0; i < 6; i++) {
		if (i >= n)
			break;
		if (v4_is_blackholed(cand[i])) {
			*v4 = cand[i];
			return true;
		}
	}
	return false;
}

/*
 * IPv6 destinations that reach an IPv4 host through a relay or translator: 6to4 (2002::/16),
 * Teredo (2001:0::/32), ISATAP interface ids, the local-use NAT64 prefix (64:ff9b:1::/48) and the
 * rest of 64:ff9b::/32. The v6 policy cannot speak for the IPv4 host behind them.
 */
static __always_inline bool v6_is_v4_relay(const __u32 w[4])
{
	__u32 h0 = bpf_ntohl(w[0]), h2 = bpf_ntohl(w[2]);

	return (h0 >> 16) == 0x2002 || h0 == 0x20010000 || (h2 & 0xfdffffff) == 0x00005efe ||
	       h0 == 0x0064ff9b;
}

/*
 * The last 32 bits as an IPv4 address, for forms a lax translator may map that way: anything in
 * 64:ff9b::/32 and anything under ::/64 (SIIT's ::ffff:0:a.b.c.d among them).
 */
static __always_inline bool v6_tail_is_blackholed(const __u32 w[4])
{
	bool translated = w[0] == bpf_htonl(0x0064ff9b) || (w[0] == 0 && w[1] == 0);

	return translated && v4_is_blackholed(w[3]);
}

enum sl_v6_route {
	SL_V6_OWN,	    /* judged by the v6 rules */
	SL_V6_AS_V4,	    /* an IPv4 host the policy judges as IPv4: *v4 (::ffff:, NAT64 /96, ::V4) */
	SL_V6_RELAY,	    /* an IPv4 host behind a relay: the v6 rules cannot speak for it */
	SL_V6_BLACKHOLE,    /* fe80::/10, fd00:ec2::/32 */
	SL_V6_BLACKHOLE_V4, /* carries the blackholed IPv4 address *v4 */
};

/*
 * Where a v6 destination goes: the one answer the kernel programs (decide_v6), the resolver
 * and the policy compiler (addr_class), the preexisting-socket scan and policy replay all act
 * on, so that none can blackhole, translate or name an embedded address differently. The order
 * is the kernel's and decides which embedded address is named when several are in the
 * blackhole: native, the policy's embedding, the last 32 bits for a lax translator, then the
 * relays (6to4, Teredo server then client, ISATAP, the local-use NAT64 positions /48 to /96).
 * *v4 is set for SL_V6_AS_V4 and SL_V6_BLACKHOLE_V4 only.
 */
static __always_inline enum sl_v6_route v6_route(const __u32 w[4], __u32 *v4)
{
	__u32 e = 0;

	if (v6_native_is_blackholed(w))
		return SL_V6_BLACKHOLE;
	if (v6_embeds_v4_for_policy(w, &e)) {
		*v4 = e;
		return v4_is_blackholed(e) ? SL_V6_BLACKHOLE_V4 : SL_V6_AS_V4;
	}
	if (v6_tail_is_blackholed(w)) {
		*v4 = w[3];
		return SL_V6_BLACKHOLE_V4;
	}
	if (v6_embeds_blackholed_v4(w, &e)) {
		*v4 = e;
		return SL_V6_BLACKHOLE_V4;
	}
	return v6_is_v4_relay(w) ? SL_V6_RELAY : SL_V6_OWN;
}

enum sl_dst_fate {
	SL_DST_V4,	  /* the IPv4 rules judge *v4: the address, or the one it carries */
	SL_DST_V6,	  /* the IPv6 rules judge the address */
	SL_DST_BLACKHOLE, /* denied in every mode, whatever the policy says */
	SL_DST_RELAY,	  /* an IPv4 host behind a relay, and the default denies: denied */
};

/*
 * What a v6 destination's address decides before any rule is read: v6_route's answer acted on,
 * by the kernel programs (decide_v6), the preexisting-socket scan and policy replay alike, so
 * that none can open, deny or translate an address the others judge otherwise. The blackhole
 * in every form (natively or in an IPv4 address it carries) is denied; an IPv4 host it carries
 * for the policy is the IPv4 rules'; one behind a relay is not what a v6 rule speaks for: only
 * default allow opens it (then the v6 rules judge, as for any other). *v4 is the IPv4 address
 * judged or blackholed, and *embedded says whether there is one.
 */
static __always_inline enum sl_dst_fate v6_fate(const __u32 w[4], bool default_allow, __u32 *v4,
						bool *embedded)
{
	*embedded = false;
	switch (v6_route(w, v4)) {
	case SL_V6_BLACKHOLE:
		return SL_DST_BLACKHOLE;
	case SL_V6_BLACKHOLE_V4:
		*embedded = true;
		return SL_DST_BLACKHOLE;
	case SL_V6_AS_V4:
		*embedded = true;
		return SL_DST_V4;
	case SL_V6_RELAY:
		return default_allow ? SL_DST_V6 : SL_DST_RELAY;
	default:
		return SL_DST_V6;
	}
}

/*
 * v6_fate for either family (a: 4 or 16 bytes): an IPv4 destination is blackholed or the IPv4
 * rules' (decide_v4), *v4 the address itself and *embedded false.
 */
static __always_inline enum sl_dst_fate dst_fate(int family, const __u8 *a, bool default_allow,
						 __u32 *v4, bool *embedded)
{
	__u32 w[4];

	*v4 = 0;
	*embedded = false;
	if (family == AF_INET) {
		__builtin_memcpy(v4, a, 4);
		return v4_is_blackholed(*v4) ? SL_DST_BLACKHOLE : SL_DST_V4;
	}
	__builtin_memcpy(w, a, 16);
	return v6_fate(w, default_allow, v4, embedded);
}

/* The blackhole in any form a v6 destination can take. */
static __always_inline bool v6_blackholed_any(const __u32 w[4])
{
	__u32 v4 = 0;
	enum sl_v6_route r = v6_route(w, &v4);

	return r == SL_V6_BLACKHOLE || r == SL_V6_BLACKHOLE_V4;
}

/*
 * A v6 CIDR (network w, prefix length plen) that names IPv4 destinations: every address in it
 * is one v6_embeds_v4_for_policy() judges as IPv4, so the compiler puts it in the IPv4 trie as
 * *v4 / *v4_plen (::ffff:10.0.0.0/104 is 10.0.0.0/8). The forms are /96 prefixes, so the
 * first and the last address decide: a CIDR under ::/96 that covers :: or ::1 (not embeddings)
 * stays IPv6. Everything else stays IPv6 too, and never matches an embedding address.
 */
static __always_inline bool v6_prefix_embeds_v4(const __u32 w[4], unsigned int plen, __u32 *v4,
						unsigned int *v4_plen)
{
	__u32 first[4], last[4], host, a = 0, b = 0;

	if (plen < 96 || plen > 128)
		return false;
	host = plen == 128 ? 0 : 0xffffffffu >> (plen - 96);
	__builtin_memcpy(first, w, 16);
	__builtin_memcpy(last, w, 16);
	first[3] = w[3] & ~bpf_htonl(host);
	last[3] = w[3] | bpf_htonl(host);
	if (!v6_embeds_v4_for_policy(first, &a) || !v6_embeds_v4_for_policy(last, &b))
		return false;
	*v4 = a;
	*v4_plen = plen - 96;
	return true;
}

/*
 * Space a public name must not point into unless a cidrs rule lists it (the resolver's refusal
 * of rebinding answers; the kernel programs do not use these): 0/8, RFC 1918, CGNAT 100.64/10,
 * loopback, multicast and reserved 224/3.
 */
static __always_inline bool v4_is_private(__u32 addr)
{
	__u32 h = bpf_ntohl(addr);

	return (h >> 24) == 0 || (h >> 24) == 10 || (h & 0xffc00000) == 0x64400000 ||
	       (h >> 24) == 127 || (h & 0xfff00000) == 0xac100000 || (h >> 16) == 0xc0a8 ||
	       (h >> 29) == 7;
}

/* :: and ::1, ULA fc00::/7, multicast ff00::/8. */
static __always_inline bool v6_native_is_private(const __u32 w[4])
{
	__u32 h0 = bpf_ntohl(w[0]);

	if (!w[0] && !w[1] && !w[2] && (!w[3] || w[3] == bpf_htonl(1)))
		return true;
	return (h0 >> 25) == (0xfc000000 >> 25) || (h0 >> 24) == 0xff;
}

enum sl_addr_class {
	SL_ADDR_PUBLIC,
	SL_ADDR_PRIVATE,   /* v4_is_private(), v6_native_is_private(), or one embedded */
	SL_ADDR_BLACKHOLE, /* what the kernel programs refuse whatever the policy says */
};

/*
 * What an address points at, in every form it can take. The blackhole: as the kernel programs
 * judge it (v4_is_blackholed, v6_blackholed_any): natively, in the IPv4 address an IPv6 one
 * carries for the policy (::ffff:, 64:ff9b::/96, ::a.b.c.d), through a relay (6to4, Teredo server
 * and client, ISATAP, every RFC 6052 position in the local-use NAT64 prefix) or for a lax
 * translator (the last 32 bits under 64:ff9b::/32 and ::/64). Private space: natively, or in
 * those embedded IPv4 addresses whose place the address fixes — not the local-use NAT64
 * positions nor the last 32 bits of 64:ff9b::/32 beyond /96, whose place depends on a prefix
 * length the address does not carry (read at every place, any public IPv4 address would look
 * private at one of them). The blackhole wins over private space. a is 4 or 16 bytes (family);
 * *v4 gets the embedded IPv4 address that decided, and *embedded whether one did.
 */
static __always_inline enum sl_addr_class addr_class(int family, const __u8 *a, __u32 *v4,
						     bool *embedded)
{
	__u32 w[4], fixed[8], e = 0;
	int n_fixed, i;

	*embedded = false;
	*v4 = 0;
	if (family == AF_INET) {
		__builtin_memcpy(w, a, 4);
		if (v4_is_blackholed(w[0]))
			return SL_ADDR_BLACKHOLE;
		return v4_is_private(w[0]) ? SL_ADDR_PRIVATE : SL_ADDR_PUBLIC;
	}
	__builtin_memcpy(w, a, 16);
	switch (v6_route(w, &e)) {
	case SL_V6_BLACKHOLE:
		return SL_ADDR_BLACKHOLE;
	case SL_V6_BLACKHOLE_V4:
		*v4 = e;
		*embedded = true;
		return SL_ADDR_BLACKHOLE;
	default:
		break;
	}
	n_fixed = v6_relay_v4s(w, fixed);
	if (v6_is_local_nat64(w))
		n_fixed -= 4;
	if (v6_embeds_v4_for_policy(w, &e))
		fixed[n_fixed++] = e;
	if (!w[0] && !w[1])
		fixed[n_fixed++] = w[3];
	if (v6_native_is_private(w))
		return SL_ADDR_PRIVATE;
	for (i = 0; i < n_fixed; i++) {
		if (v4_is_private(fixed[i])) {
			*v4 = fixed[i];
			*embedded = true;
			return SL_ADDR_PRIVATE;
		}
	}
	return SL_ADDR_PUBLIC;
}

#endif /* SLUICE_ADDR_BPF_H */
