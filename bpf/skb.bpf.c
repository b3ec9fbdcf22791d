// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Packet layer (cgroup_skb on the run's cgroup): the TLS server-name check.
 *
 * connect() allowed a flow to an address because the run's resolver produced it for a listed
 * name; an address may serve many names (CDNs), so every ClientHello of such a flow must name a
 * host that resolved to this very address in this run, on whatever port (TLS runs on any). On
 * the TLS port (443) the first payload must be a ClientHello; on another port, a first payload
 * whose first byte is not that of a TLS record is not TLS, and the flow is left alone.
 * A ClientHello must be held whole in its first record, with one server name; anything else —
 * another name, no name, a record that does not parse, a ClientHello cut across records or
 * segments — denies the flow: the packet is dropped, every later data packet too, and userspace
 * destroys the socket so the client fails at once.
 *
 * A TLS 1.3 server may answer with a HelloRetryRequest, after which the client sends a second
 * ClientHello that the server then serves. So the check does not stop at the first ClientHello:
 * the ingress program reads the server's first handshake record, and only a real ServerHello
 * ends the checking; after a HelloRetryRequest the next client handshake record must again be a
 * ClientHello that passes.
 *
 * Only flows the decision layer marked (socket storage sl_sk_tls) are looked at; every other
 * packet costs one storage lookup.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice.h"
#include "events.bpf.h"
#include "tls.bpf.h"
#include "packet.bpf.h"
#include "nsflows.bpf.h"
#include "net.bpf.h"
#include "resets.bpf.h"
#include "judged.bpf.h"

#define TLS_CONTENT_CHANGE_CIPHER_SPEC 0x14
#define TLS_CONTENT_ALERT 0x15
#define TLS_CONTENT_HANDSHAKE 0x16
#define TLS_CONTENT_APPLICATION_DATA 0x17
#define TLS_CONTENT_HEARTBEAT 0x18
#define TLS_MAX_WATCHED_PAYLOADS 16 /* client payloads before the server must have answered */
#define TLS_HANDSHAKE_CLIENT_HELLO 0x01
#define TLS_HANDSHAKE_SERVER_HELLO 0x02
#define TLS_MAX_RECORDS 8 /* records looked at in one packet */
#define TLS_EXT_SERVER_NAME 0
#define TLS_MAX_EXTENSIONS 32
#define SKB_PASS 1
#define TCP_FLAG_SYN_BYTE 0x02 /* in the TCP header's 14th byte */
#define TCP_FLAG_ACK_BYTE 0x10
#define TCP_FLAG_RST_BYTE 0x04
#define SKB_DROP 0

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The run's mode, its resolver on loopback (sl_cfg.dns_port, see sock_addr.bpf.c: the one place
 * redirected DNS goes), and sl_cfg.backstop (0 only for the selftest that shows what the backstop
 * catches, see the README): struct sl_cfg (cfg.bpf.h).
 */
/*
 * 1 where the kernel has bpf_cast_to_kern_ctx (6.3+; the loader looks in its BTF): the TLS check
 * can then see that a packet's pages are still the sender's (see frags_mutable). Elsewhere the
 * kfunc is left unresolved (weak) and the code that calls it is dead to the verifier.
 */
const volatile __u8 sl_cfg_frag_check = 0;

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;

#define LOOPBACK4 0x7f000001

SL_JUDGED_MAP(sl_judged); /* a flowless TCP socket's allows (judged.bpf.h) */

/* The events are larger than is comfortable on the BPF stack: build them in per-CPU scratch. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_tls_event);
} sl_tls_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_flow_event);
} sl_flow_scratch SEC(".maps");

/*
 * The sockets sluice is destroying right now (their cookies): userspace puts a socket's cookie
 * here just before it destroys the socket and takes it out just after (loader_kill_socket), and
 * only for a run with a host side, which puts the RST into its fixed form (resets.bpf.h). The
 * kernel's abort sends the peer a RST while the destroy is under way (tcp_abort ->
 * tcp_send_active_reset), in that call; the socket's flow is denied, so without this the RST is
 * dropped and the peer's end stays established for good. See destroy_reset.
 *
 * The value (sl_reset_note) names the network namespace userspace judged the RST's ways out of,
 * and is where that socket's RST is written down for the host side: its own, so that kills
 * running at once (two daemon threads, a softirq's send on the CPU a program was preempted on)
 * never share one buffer. userspace writes the rest zeroed; only the RST of the socket the destroy
 * holds locked writes to it, so no two programs write one entry at once.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* socket cookie */
	__type(value, struct sl_reset_note);
} sl_destroying SEC(".maps");

/* The server-name check's map key (see sni_resolved_here). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_sni_key);
} sl_sni_scratch SEC(".maps");

/* Offset of the TCP payload, and the destination, of an unfragmented IPv4/IPv6 TCP packet. */
static __always_inline int tcp_header(struct __sk_buff *skb, __u32 *off, __u8 daddr[16],
				      __u8 *family, struct tcphdr *th_out)
{
	struct tcphdr th;
	__u32 l4;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (skb_read(skb, 0, &ip, sizeof(ip)) || ip.protocol != IPPROTO_TCP ||
		    ip.ihl < 5 || (ip.frag_off & bpf_htons(0x3fff)))
			return -1;
		__builtin_memcpy(daddr, &ip.daddr, 4);
		*family = AF_INET;
		l4 = ip.ihl * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		/* our own TCP sockets send no extension headers */
		if (skb_read(skb, 0, &ip6, sizeof(ip6)) || ip6.nexthdr != IPPROTO_TCP)
			return -1;
		__builtin_memcpy(daddr, &ip6.daddr, 16);
		*family = AF_INET6;
		l4 = sizeof(ip6);
	} else {
		return -1;
	}
	if (skb_read(skb, l4, &th, sizeof(th)) || th.doff < 5)
		return -1;
	*off = l4 + th.doff * 4;
	if (th_out)
		__builtin_memcpy(th_out, &th, sizeof(th));
	return 0;
}

static __always_inline int tcp_payload(struct __sk_buff *skb, __u32 *off, __u8 daddr[16],
				       __u8 *family)
{
	return tcp_header(skb, off, daddr, family, NULL);
}

/* A flow just cut: its record, now (end_ns 0 marks the cut), built in per-CPU scratch. */
static __always_inline void flow_cut_record(struct __sk_buff *skb, const struct sl_flow *f)
{
	__u32 zero = 0;
	struct sl_flow_event *ev = bpf_map_lookup_elem(&sl_flow_scratch, &zero);

	if (!ev)
		return;
	__builtin_memcpy(&ev->flow, f, sizeof(ev->flow));
	ev->end_ns = 0;
	ev->cgroup_id = bpf_skb_cgroup_id(skb);
	ev->sock_cookie = bpf_get_socket_cookie(skb);
	event_hdr_init(&ev->hdr, SL_EV_FLOW, sizeof(*ev));
	event_submit(ev, sizeof(*ev), SL_HOOK_EGRESS, true);
}

/*
 * The payload at off begins with a TLS record of any content type (or cannot be read: judged
 * then). Not only a handshake record: a server may read past records that come before the
 * ClientHello (Go's drops warning alerts), so a flow opening with an alert or a
 * ChangeCipherSpec is TLS too, and judged (it is denied: the first record must be a hello).
 */
static __always_inline bool starts_like_tls(struct __sk_buff *skb, __u32 off)
{
	__u8 type;

	return bpf_skb_load_bytes(skb, off, &type, 1) ||
	       (type >= TLS_CONTENT_CHANGE_CIPHER_SPEC && type <= TLS_CONTENT_HEARTBEAT);
}

/* This packet's new payload bytes in its direction: TCP by sequence number, UDP whole. *pay:
   where the packet's TCP payload starts. */
static __always_inline __u32 flow_new_bytes(struct __sk_buff *skb, struct sl_flow *f, bool out,
					    __u32 *next_end, __u32 *pay)
{
	__u8 addr[16], family;
	struct tcphdr th;
	__u32 off, len, start, end, next;

	if (f->protocol == IPPROTO_UDP) {
		off = 40;
		if (skb->protocol == bpf_htons(ETH_P_IP)) {
			__u8 v;

			if (bpf_skb_load_bytes(skb, 0, &v, 1))
				return 0;
			off = (v & 0x0f) * 4;
		}
		return skb->len > off + 8 ? skb->len - off - 8 : 0;
	}
	if (tcp_header(skb, &off, addr, &family, &th))
		return 0;
	start = bpf_ntohl(th.seq) + (th.syn ? 1 : 0); /* a SYN takes one sequence number */
	/* The SYN (and SYN-ACK) says where each direction's bytes start. */
	if (th.syn) {
		if (out) {
			f->snd_next = start;
			f->snd_init |= SL_FLOW_SND_SET;
		} else {
			f->rcv_next = start;
			f->rcv_init = 1;
		}
	}
	if (off >= skb->len)
		return 0;
	*pay = off;
	len = skb->len - off;
	end = start + len;
	if (!(out ? f->snd_init & SL_FLOW_SND_SET : f->rcv_init)) {
		*next_end = end;
		return len;
	}
	next = out ? f->snd_next : f->rcv_next;
	if ((__s32)(end - next) <= 0)
		return 0; /* a retransmission: nothing new */
	/*
	 * Counted up to the highest sequence number seen, holes included: a segment past a loss
	 * counts the missing bytes before it too, and their retransmission then counts nothing.
	 * (Counting only its own length would never count the hole: the flow would carry more
	 * than its line and its cap say.)
	 */
	*next_end = end;
	return end - next;
}

/*
 * Count this packet's payload into its flow, once (retransmissions add nothing), unless it
 * would take the flow past its rule's cap: then the flow is cut — this packet and every later
 * one that carries data are dropped, and a record goes out at once so userspace can end the
 * socket. Returns SKB_PASS or SKB_DROP.
 */
/*
 * Take n bytes from the flow's host budget for the run (rules with max_total_*): false when
 * they do not fit, or the host cannot be counted (map full). Added first and given back on
 * overrun, so concurrent flows to one host never pass more than the cap between them.
 */
static __always_inline bool host_total_take(const struct sl_flow *f, bool out, __u32 n)
{
	struct sl_rule_caps *caps;
	struct sl_host_bytes *b;
	struct sl_host_key k;
	__u32 rid = f->rule_id;
	__u64 cap, old, *total;

	caps = bpf_map_lookup_elem(&sl_rule_caps, &rid);
	if (!caps)
		return true;
	cap = out ? caps->max_total_req : caps->max_total_resp;
	if (!cap)
		return true;
	host_key_of(&k, rule_budget(f->rule_id), f->host_id, f->family, f->addr);
	b = host_bytes_get(&k);
	if (!b)
		return false;
	total = out ? &b->req_bytes : &b->resp_bytes;
	old = __sync_fetch_and_add(total, (__u64)n);
	if (old + n > cap - 1) { /* caps are stored plus one */
		__sync_fetch_and_add(total, -(__u64)n);
		b->spent = 1;
		return false;
	}
	return true;
}

static __always_inline int flow_count(struct __sk_buff *skb, struct sl_flow *f, bool out)
{
	__u64 *bytes = out ? &f->req_bytes : &f->resp_bytes;
	__u64 cap = out ? f->max_req : f->max_resp;
	__u32 next_end = 0, n, pay = 0;

	if (f->cut)
		return flow_new_bytes(skb, f, out, &next_end, &pay) ? SKB_DROP : SKB_PASS;
	n = flow_new_bytes(skb, f, out, &next_end, &pay);
	if (!n)
		return SKB_PASS;
	/*
	 * What a TCP flow's first payload began with, watched or not: a switch that puts the flow
	 * under the server-name check judges it by that, as its connect() would have been judged
	 * (off the TLS port, a first payload that is not TLS is never checked).
	 */
	if (out && f->protocol == IPPROTO_TCP &&
	    !(f->snd_init & (SL_FLOW_FIRST_PLAIN | SL_FLOW_FIRST_TLS)))
		f->snd_init |= starts_like_tls(skb, pay) ? SL_FLOW_FIRST_TLS : SL_FLOW_FIRST_PLAIN;
	/*
	 * Added first and given back on overrun, as the host totals are: sends on several CPUs
	 * (connected UDP, TCP receive before the socket lock) never pass more than the cap.
	 */
	if (__sync_fetch_and_add(bytes, (__u64)n) + n > cap - 1 && cap) { /* stored plus one */
		__sync_fetch_and_add(bytes, -(__u64)n);
		f->cut = out ? SL_CUT_REQUEST : SL_CUT_RESPONSE;
		flow_cut_record(skb, f);
		return SKB_DROP;
	}
	/*
	 * A flow of another policy generation, not judged again yet (the backstop does at its next
	 * packet out, the switch's re-judge if it finds the socket): its rule number is another
	 * policy's, which would count its bytes against the budget of whatever rule has that
	 * number now. Its own caps still hold; a received segment before its next packet out
	 * (which for TCP is the ACK of it) is not taken from the host's total.
	 */
	if (f->totals && f->era == sl_cfg.era && !host_total_take(f, out, n)) {
		__sync_fetch_and_add(bytes, -(__u64)n);
		f->cut = out ? SL_CUT_TOTAL_REQUEST : SL_CUT_TOTAL_RESPONSE;
		flow_cut_record(skb, f);
		return SKB_DROP;
	}
	if (f->protocol != IPPROTO_UDP) {
		if (out) {
			f->snd_next = next_end;
			f->snd_init |= SL_FLOW_SND_SET;
		} else {
			f->rcv_next = next_end;
			f->rcv_init = 1;
		}
	}
	return SKB_PASS;
}

static __always_inline int load_be16(struct __sk_buff *skb, __u32 off, __u32 *v)
{
	__u16 x;

	if (bpf_skb_load_bytes(skb, off, &x, sizeof(x)))
		return -1;
	*v = bpf_ntohs(x);
	return 0;
}

static __always_inline int load_u8(struct __sk_buff *skb, __u32 off, __u32 *v)
{
	__u8 x;

	if (bpf_skb_load_bytes(skb, off, &x, sizeof(x)))
		return -1;
	*v = x;
	return 0;
}

/*
 * Find the server name of the ClientHello in the record at off and copy it into ev->sni. Returns
 * SL_REASON_SNI_OK when a name was found (matching is the caller's), _MISSING or _UNPARSEABLE.
 * The whole ClientHello must lie in this one record, and every length is checked against the
 * end of what contains it: a ClientHello spread over records, or cut short by the end of the
 * segment, does not parse.
 */
static __always_inline __u8 client_hello_sni(struct __sk_buff *skb, __u32 off,
					     struct sl_tls_event *ev)
{
	__u8 hdr[9];
	__u32 p, n, end, ext_end, type, len, sn = 0, sn_len = 0, list;
	int i;

	/* record: type, version (2), length (2); handshake: type, length (3) */
	if (bpf_skb_load_bytes(skb, off, hdr, sizeof(hdr)) || hdr[0] != TLS_CONTENT_HANDSHAKE ||
	    hdr[1] != 0x03 || hdr[5] != TLS_HANDSHAKE_CLIENT_HELLO)
		return SL_REASON_SNI_UNPARSEABLE;
	len = ((__u32)hdr[3] << 8) | hdr[4];
	n = ((__u32)hdr[6] << 16) | ((__u32)hdr[7] << 8) | hdr[8];
	if (n + 4 > len)
		return SL_REASON_SNI_UNPARSEABLE;
	end = off + 9 + n; /* end of the ClientHello */
	/* past client_version (2) and random (32) */
	p = off + 9 + 2 + 32;
	if (load_u8(skb, p, &n) || n > 32)
		return SL_REASON_SNI_UNPARSEABLE;
	p += 1 + n;
	if (load_be16(skb, p, &n))
		return SL_REASON_SNI_UNPARSEABLE;
	p += 2 + n;
	if (load_u8(skb, p, &n))
		return SL_REASON_SNI_UNPARSEABLE;
	p += 1 + n;
	if (p == end)
		return SL_REASON_SNI_MISSING; /* a ClientHello without extensions */
	if (p + 2 > end || load_be16(skb, p, &n))
		return SL_REASON_SNI_UNPARSEABLE;
	p += 2;
	ext_end = p + n;
	if (ext_end > end)
		return SL_REASON_SNI_UNPARSEABLE;
	/*
	 * Every extension is read: a second server_name extension is refused, since which of the
	 * two a server takes is its own choice (most refuse the hello, a lax one may take the
	 * last), and the name checked must be the one served.
	 */
	for (i = 0; i < TLS_MAX_EXTENSIONS; i++) {
		if (p == ext_end)
			break;
		if (p + 4 > ext_end || load_be16(skb, p, &type) || load_be16(skb, p + 2, &len))
			return SL_REASON_SNI_UNPARSEABLE;
		if (p + 4 + len > ext_end)
			return SL_REASON_SNI_UNPARSEABLE;
		if (type == TLS_EXT_SERVER_NAME) {
			if (sn)
				return SL_REASON_SNI_UNPARSEABLE;
			sn = p;
			sn_len = len;
		}
		p += 4 + len;
	}
	if (p != ext_end)
		return SL_REASON_SNI_UNPARSEABLE; /* more extensions than we read */
	if (!sn)
		return SL_REASON_SNI_MISSING;
	p = sn;
	len = sn_len;
	/*
	 * server_name_list length (2), name_type (1, host_name = 0), name length (2), name: the
	 * list must hold that one name alone (a second one would again be the server's choice).
	 */
	if (len < 5 || load_be16(skb, p + 4, &list) || load_u8(skb, p + 6, &type) || type != 0 ||
	    load_be16(skb, p + 7, &n))
		return SL_REASON_SNI_UNPARSEABLE;
	if (n < 1 || n > SL_SNI_MAX || 5 + n != len || list != len - 2)
		return SL_REASON_SNI_UNPARSEABLE;
	/* ((n - 1) & 0xff) + 1 == n here; the form shows the verifier a length of 1..256 */
	if (bpf_skb_load_bytes(skb, p + 9, ev->sni, ((n - 1) & 0xff) + 1))
		return SL_REASON_SNI_UNPARSEABLE;
	ev->sni_len = n;
	return SL_REASON_SNI_OK;
}

/* Lower-case the name in place: names are compared as the resolver keeps them. */
static __always_inline void sni_lower(struct sl_tls_event *ev)
{
	int i;

	for (i = 0; i < SL_SNI_MAX; i++) {
		__u8 c;

		if (i >= ev->sni_len)
			break;
		c = ev->sni[i];
		if (c >= 'A' && c <= 'Z')
			ev->sni[i] = c + ('a' - 'A');
	}
}

/*
 * Did the run's resolver produce daddr for the (lower-cased) name in ev? An exact match on the
 * whole name: the key (280 bytes, more than is comfortable on the stack) is built in per-CPU
 * scratch, zeroed first, since every byte of it is compared. ev->sni is zero past sni_len.
 */
static __always_inline struct sl_sni_name *sni_resolved_here(const struct sl_tls_event *ev,
							     const __u8 daddr[16])
{
	struct sl_sni_key *key;
	__u32 zero = 0;

	key = bpf_map_lookup_elem(&sl_sni_scratch, &zero);
	if (!key)
		return NULL;
	__builtin_memset(key, 0, sizeof(*key));
	__builtin_memcpy(key->addr, daddr, sizeof(key->addr));
	key->name_len = ev->sni_len;
	__builtin_memcpy(key->name, ev->sni, sizeof(key->name));
	return bpf_map_lookup_elem(&sl_sni_ok, key);
}

/* Where a watched flow's packet goes, for its TLS record: read once per packet (tls_egress). */
struct tls_dst {
	__u8 addr[16];
	__u16 port; /* host order */
	__u8 family;
};

/*
 * The packet's socket's flow (sl_egress's; a function of its own, not an argument: a BPF call
 * takes five, and judge_client_hello has them). NULL: none.
 */
static __always_inline struct sl_flow *skb_flow(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;

	if (sk)
		sk = bpf_sk_fullsock(sk);
	return sk ? bpf_sk_storage_get(&sl_sk_flow, sk, 0, 0) : NULL;
}

/*
 * The flow f (NULL: the kernel kept no state for it, or a later ClientHello, which only judges)
 * names n, a name answered for its address: it must go on under one of the rules n was learned
 * under there, not under whichever rule of the names sharing the address its connect() got
 * (learned_match cannot tell them apart). Under one of them already: it stays there. Else it is
 * put under the first of n's rules (userspace writes them strictest first) that allows its port
 * over TCP, as its connect() would have been had only n been answered there, with that rule's
 * caps; none does, under a policy whose default allows: under the default, uncapped, as n alone
 * on that port would have been. Either way it counts against n's host budget from now on (keyed
 * by the rule's budget id and the name: f's rule_id and host_id; at connect() host_id is the
 * address's first answered name), before the ClientHello's bytes are counted (sl_egress counts
 * them after the check), so that no byte of n's goes under another name's caps or budget. False
 * when none of n's rules allows the port and the default denies (SL_REASON_SNI_PORT). A name
 * learned under no rule (report mode, an unlisted name) passes and moves nothing, as any
 * answered name did before names carried rules. A flow of another policy generation (no
 * backstop restamped it: selftests only) is only judged: its rule number is another policy's.
 */
static __always_inline bool sni_rule_take(const struct sl_sni_name *n, struct sl_flow *f,
					  __u16 port)
{
	bool current = f && f->era == sl_cfg.era;
	__u16 rule_id = SL_RULE_DEFAULT;
	__u32 rid;
	int i;

	if (!n->rule_ids[0])
		return true;
	for (i = 0; current && i < SL_LEARNED_RULES; i++) {
		if (!n->rule_ids[i])
			break;
		if (n->rule_ids[i] == f->rule_id) {
			f->host_id = n->host_id;
			return true;
		}
	}
	for (i = 0; i < SL_LEARNED_RULES; i++) {
		rid = n->rule_ids[i];
		if (!rid)
			break;
		if (rules_match(bpf_map_lookup_elem(&sl_rule_ports, &rid), port, SL_PROTO_TCP,
				&rule_id))
			break;
	}
	if (rule_id == SL_RULE_DEFAULT && !sl_cfg.default_allow)
		return false;
	if (current) {
		rid = rule_id;
		f->rule_id = rule_id;
		f->host_id = n->host_id;
		flow_caps_set(f, rule_id == SL_RULE_DEFAULT ?
					 NULL : bpf_map_lookup_elem(&sl_rule_caps, &rid));
	}
	return true;
}

/*
 * Judge the ClientHello at off (~0U: none could be found). A recheck (a later ClientHello, or a
 * retransmission of the first) is recorded only when it denies: the flow's allow is on record.
 * A global function, so that the verifier checks it once, on its own: inlined, it was verified
 * again at each of its six places, one of them in every round of judge_records' loop. The
 * verifier lets a global function's pointer arguments be NULL (they never are): such a call
 * drops, as one that cannot be judged.
 */
__noinline int judge_client_hello(struct __sk_buff *skb, struct sl_sk_tls *t, __u32 off,
				  const struct tls_dst *dst, bool recheck)
{
	struct sl_sni_name *named;
	struct sl_tls_event *ev;
	__u32 zero = 0, named_before;
	__u8 reason;
	bool deny, enforce;

	if (!t || !dst)
		return SKB_DROP;
	ev = bpf_map_lookup_elem(&sl_tls_scratch, &zero);
	if (!ev)
		return SKB_DROP;
	__builtin_memset(ev, 0, sizeof(*ev));
	reason = client_hello_sni(skb, off, ev);
	/* what a switch to another policy must find allowed still (userspace/preexisting.c) */
	named_before = t->sni_host_id;
	t->sni_host_id = 0;
	if (reason == SL_REASON_SNI_OK) {
		sni_lower(ev);
		named = sni_resolved_here(ev, dst->addr);
		/*
		 * A later ClientHello (after a HelloRetryRequest) must name the server the first
		 * named (RFC 8446 4.1.2), and never moves the flow: the first's name chose its
		 * rule, and a server that routes on the first hello's name serves that one. A
		 * first hello that did not pass (report mode) named none: no later one passes
		 * either, or a switch to enforce would find the later name and keep the flow.
		 */
		if (!named)
			reason = SL_REASON_SNI_MISMATCH;
		else if (recheck && named->host_id != named_before)
			reason = SL_REASON_SNI_CHANGED;
		else if (!sni_rule_take(named, recheck ? NULL : skb_flow(skb), dst->port))
			reason = SL_REASON_SNI_PORT;
		else
			t->sni_host_id = named->host_id;
	}
	deny = reason != SL_REASON_SNI_OK;
	enforce = deny && cfg_enforcing();
	if (deny && !t->deny_reason)
		t->deny_reason = reason; /* for the flow's record (sl_egress) */
	/* Passed (or report mode): keep watching until the server answers with a ServerHello. */
	t->state = enforce ? SL_TLS_DENIED : SL_TLS_AWAIT_SERVER;

	ev->family = dst->family;
	__builtin_memcpy(ev->addr, dst->addr, 16);
	ev->port = dst->port;
	ev->verdict = deny ? SL_VERDICT_DENY : SL_VERDICT_ALLOW;
	ev->reason = reason;
	ev->enforced = enforce || !deny;
	ev->host_id = t->host_id;
	ev->pid = t->pid;
	ev->tgid = t->tgid;
	__builtin_memcpy(ev->comm, t->comm, sizeof(ev->comm));
	ev->cgroup_id = bpf_skb_cgroup_id(skb);
	ev->sock_cookie = bpf_get_socket_cookie(skb);
	if (deny || !recheck) {
		event_hdr_init(&ev->hdr, SL_EV_TLS, sizeof(*ev));
		event_submit(ev, sizeof(*ev), SL_HOOK_EGRESS, deny);
	}
	return enforce ? SKB_DROP : SKB_PASS;
}

/*
 * A client payload of a watched flow, before the server's first answer: it must consist of
 * whole records, each a ClientHello that passes, a ChangeCipherSpec, an alert, or (before any
 * HelloRetryRequest) early data. Anything else — a record cut by the segment end, a record type
 * or handshake message that has no business here, more records than we look at — is a flow that
 * cannot be judged, and is denied: a ClientHello could hide in what we did not read.
 */
static __always_inline int judge_records(struct __sk_buff *skb, struct sl_sk_tls *t, __u32 off,
					 const struct tls_dst *dst)
{
	bool first = t->state == SL_TLS_PENDING;
	__u8 hdr[6];
	int i;

	for (i = 0; i < TLS_MAX_RECORDS; i++) {
		__u32 end;

		if (off == skb->len)
			return SKB_PASS;
		if (bpf_skb_load_bytes(skb, off, hdr, sizeof(hdr)))
			break;
		end = off + 5 + (((__u32)hdr[3] << 8) | hdr[4]);
		if (end > skb->len)
			break;
		if (hdr[0] == TLS_CONTENT_HANDSHAKE && hdr[5] == TLS_HANDSHAKE_CLIENT_HELLO) {
			if (judge_client_hello(skb, t, off, dst, !first) == SKB_DROP)
				return SKB_DROP;
			first = false;
		} else if (first || (hdr[0] != TLS_CONTENT_CHANGE_CIPHER_SPEC &&
				     hdr[0] != TLS_CONTENT_ALERT &&
				     (hdr[0] != TLS_CONTENT_APPLICATION_DATA ||
				      t->state == SL_TLS_EXPECT_CH2))) {
			break;
		}
		off = end;
	}
	return judge_client_hello(skb, t, ~0U, dst, !first);
}

/*
 * IPv4 options (source routing) or an IPv6 routing header send a packet to a first hop other
 * than the destination connect()/sendmsg() judged. setsockopt() of them is refused by the
 * surface layer; a per-datagram control message (IP_RETOPTS, IPV6_RTHDR cmsg) is caught here.
 */
static __always_inline bool reroutes(struct __sk_buff *skb)
{
	__u32 next = 6, hdr = 40; /* the next-header byte, and where the header it names starts */
	__u8 b[2];
	int i;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (skb_read(skb, 0, b, 1))
			return true;
		return (b[0] & 0x0f) > 5;
	}
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return false;
	/*
	 * A routing header, possibly behind hop-by-hop or destination options: the next-header
	 * byte of the fixed header and of each option header packet_dst() reads past, so that a
	 * chain it judges is looked through whole (not "source-routed" for its last option header).
	 */
	for (i = 0; i <= PACKET_MAX_EXT_HDRS; i++) {
		if (bpf_skb_load_bytes(skb, next, b, 1) || b[0] == IPPROTO_ROUTING)
			return true;
		if (b[0] != IPPROTO_HOPOPTS && b[0] != IPPROTO_DSTOPTS)
			return false;
		if (bpf_skb_load_bytes(skb, hdr, b, 2))
			return true;
		next = hdr;
		hdr += 8 * (b[1] + 1);
	}
	return true; /* more option headers than we look through: cannot be judged */
}

/* A packet the backstop cannot judge as sent: source-routed (SOURCE_ROUTE) or unreadable (PROTOCOL). */
static __always_inline int drop_unjudged(struct __sk_buff *skb, __u8 reason)
{
	struct sl_decision_event ev = {};

	ev.family = skb->protocol == bpf_htons(ETH_P_IP) ? AF_INET : AF_INET6;
	ev.hook = SL_HOOK_EGRESS;
	ev.verdict = SL_VERDICT_DENY;
	ev.reason = reason;
	ev.enforced = 1;
	ev.cgroup_id = bpf_skb_cgroup_id(skb);
	ev.sock_cookie = bpf_get_socket_cookie(skb);
	event_hdr_init(&ev.hdr, SL_EV_DECISION, sizeof(ev));
	event_submit(&ev, sizeof(ev), SL_HOOK_EGRESS, true);
	return SKB_DROP;
}

/*
 * The RST the kernel sends when sluice destroys the socket (see sl_destroying), which alone of a
 * denied flow's packets leaves: it carries no payload, and it ends the peer's end of a connection
 * that really existed (the host side writes over what the workload chose in it, and userspace marks
 * the socket only where the workload holds no CAP_NET_ADMIN: loader_kill_socket). Everything about
 * it is the kernel's TCP: a TCP stream socket (a raw socket's frames are never its socket's RST,
 * whatever its protocol; AF_PACKET frames pass no cgroup hook), being destroyed by sluice at this
 * moment, from the socket's own port to its peer's (and so between their addresses: the kernel's
 * TCP writes its socket's), an unfragmented TCP header (with the options the kernel writes: a
 * timestamp) and nothing after it, with RST set and nothing but ACK besides (a frame longer than an
 * IPv6 and a full TCP header is none). Read from its copy in the socket's note, not with tcp_header
 * or packet_dst, which would add a copy of themselves to the programs. A static function of its
 * own: both egress programs ask it, and only on their drop paths.
 * The socket lives in the network namespace whose ways out userspace judged (the note's
 * netns_ino: resets_fixed). A socket of the run's cgroup may live in another (a workload's own
 * user and network namespace, or one it was handed): its RST would leave by ways no host side
 * sees, as the kernel wrote it. Its namespace is read through the socket's kernel struct
 * (bpf_skc_to_tcp_sock; no helper gives a cgroup skb program its namespace before 6.15).
 * The destroy holds the socket locked, but the mark is there from before it to after it: the
 * workload may send a RST of its own meanwhile (a close with SO_LINGER 0 of a socket bound to a
 * port by hand, which keeps its port through the close). It is a RST of that very connection,
 * which passes here as the destroy's would, and the host side puts it into the same fixed form.
 * Never toward the blackhole (169.254.0.0/16 and its IPv6 and embedded forms, as the policy
 * judges them: v4_is_blackholed, v6_blackholed_any), whatever its flow's record says: nothing of
 * a run goes there, not even a RST. Asked here, not by each caller, so that none can leave it
 * out (the host side refuses it too: tc.bpf.c sl_tc_ingress).
 */
static __noinline bool destroy_reset(struct __sk_buff *skb, struct bpf_sock *sk)
{
	struct sl_reset_note *n;
	struct tcp_sock *tp;
	__u32 len, l4;
	__u64 cookie;
	__u8 *b, *th;

	if (!sk || sk->protocol != IPPROTO_TCP || sk->type != SOCK_STREAM)
		return false;
	cookie = bpf_get_socket_cookie(skb);
	n = bpf_map_lookup_elem(&sl_destroying, &cookie);
	if (!n)
		return false;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp || !n->netns_ino ||
	    tp->inet_conn.icsk_inet.sk.__sk_common.skc_net.net->ns.inum != n->netns_ino)
		return false;
	/* the whole frame, read once: looked at here, and written down for the host side */
	len = skb->len;
	if (len < 40 || len > SL_RESET_FRAME_MAX)
		return false;
	__builtin_memset(&n->k, 0, sizeof(n->k));
	__builtin_memset(&n->f, 0, sizeof(n->f));
	b = n->f.bytes;
	if (bpf_skb_load_bytes(skb, 0, b, len))
		return false;
	/* (read again, not kept across the call: 6.1's verifier loses a spilled u32's bounds) */
	len = skb->len;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		/* no IP options, not a fragment (DF is fine) */
		if (b[0] != 0x45 || b[9] != IPPROTO_TCP || (b[6] & 0x3f) || b[7])
			return false;
		l4 = 20;
		n->k.family = AF_INET;
		*(__u32 *)n->k.saddr = *(__u32 *)(b + 12);
		*(__u32 *)n->k.daddr = *(__u32 *)(b + 16);
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6) && b[6] == IPPROTO_TCP) {
		l4 = 40;
		n->k.family = AF_INET6;
		/* (the addresses lie 8-aligned in both: words, not bytes) */
		((__u64 *)n->k.saddr)[0] = ((__u64 *)b)[1];
		((__u64 *)n->k.saddr)[1] = ((__u64 *)b)[2];
		((__u64 *)n->k.daddr)[0] = ((__u64 *)b)[3];
		((__u64 *)n->k.daddr)[1] = ((__u64 *)b)[4];
	} else {
		return false;
	}
	th = b + l4;
	if (th[12] < 0x50 || len != l4 + (th[12] >> 4) * 4 ||
	    (th[13] & ~TCP_FLAG_ACK_BYTE) != TCP_FLAG_RST_BYTE)
		return false;
	n->k.sport = (__u16)th[0] << 8 | th[1];
	n->k.dport = (__u16)th[2] << 8 | th[3];
	if (n->k.sport != sk->src_port || n->k.dport != bpf_ntohs((__u16)sk->dst_port))
		return false;
	if (n->k.family == AF_INET ? v4_is_blackholed(*(__u32 *)n->k.daddr) :
				     v6_blackholed_any((__u32 *)n->k.daddr))
		return false;
	/*
	 * The host side must let it through as well, and sees it without its socket: the frame is
	 * written down for it, whole, under its 5-tuple (resets.bpf.h), where it is put into its
	 * fixed form or refused.
	 */
	n->f.len = len;
	n->k.proto = IPPROTO_TCP;
	bpf_map_update_elem(&sl_resets, &n->k, &n->f, BPF_ANY);
	return true;
}

/* A datagram of a UDP socket whose connect() was denied: drop it, record the denial once. */
static __always_inline int drop_held(struct sl_sk_held *held)
{
	if (!held->recorded) {
		held->recorded = 1;
		event_hdr_init(&held->ev.hdr, SL_EV_DECISION, sizeof(held->ev));
		event_submit(&held->ev, sizeof(held->ev), held->ev.hook, true);
	}
	return SKB_DROP;
}

/*
 * The packet's payload lies (in part) in pages the sender can still write: sendfile(), splice()
 * and vmsplice() put page-cache or user pages in the packet (SKBFL_SHARED_FRAG), MSG_ZEROCOPY and
 * io_uring's send_zc the sender's own buffer (SKBFL_ZEROCOPY_ENABLE). The receiving stack copies
 * those bytes only when its reader reads them, so what was judged here is not what the server
 * reads: a workload rewrites the page right after the check. A coalesced packet may mix copied
 * and shared pages; it is one packet, judged as a whole. The flags live in skb_shared_info, at
 * head + end of the kernel's sk_buff, which only bpf_cast_to_kern_ctx reaches (6.3+).
 */
static __always_inline bool frags_mutable(struct __sk_buff *skb)
{
	struct sk_buff *kskb;
	struct skb_shared_info *shinfo;
	__u8 flags = 0;

	if (!sl_cfg_frag_check)
		return false;
	kskb = bpf_cast_to_kern_ctx(skb);
	shinfo = (struct skb_shared_info *)(kskb->head + kskb->end);
	if (bpf_probe_read_kernel(&flags, sizeof(flags), &shinfo->flags))
		return true; /* cannot be read: cannot be judged */
	return flags & (SKBFL_SHARED_FRAG | SKBFL_ZEROCOPY_ENABLE);
}

/*
 * The TLS server-name check on a packet of a marked flow (see the top of the file). *tp: the
 * flow's TLS state, NULL if it has none.
 */
static __always_inline int tls_egress(struct __sk_buff *skb, struct bpf_sock *sk,
				      struct sl_sk_tls **tp)
{
	struct sl_sk_tls *t;
	struct tls_dst dst = {};
	struct tcphdr th;
	__u32 off;

	t = bpf_sk_storage_get(&sl_sk_tls, sk, 0, 0);
	*tp = t;
	if (!t || t->state == SL_TLS_ALLOWED || t->state == SL_TLS_NOT_TLS)
		return SKB_PASS;
	dst.port = bpf_ntohs((__u16)(sk->dst_port));
	if (tcp_header(skb, &off, dst.addr, &dst.family, &th)) {
		if (t->state == SL_TLS_DENIED)
			return SKB_DROP;
		/* a packet that does not parse is a flow that cannot be judged */
		return judge_client_hello(skb, t, ~0U, &dst, t->state != SL_TLS_PENDING);
	}
	/*
	 * The port the segment goes to, which a name's rules are judged on (sni_rule_take): its
	 * socket's, read from the header the check reads anyway (BPF_PROG_RUN's test socket has
	 * no peer).
	 */
	dst.port = bpf_ntohs(th.dest);
	if (off >= skb->len)
		return SKB_PASS; /* SYN, pure ACK, a denied flow's bare FIN or RST: nothing to carry */
	if (t->state == SL_TLS_DENIED)
		return SKB_DROP;
	/*
	 * Bytes the sender can still change after this check (see frags_mutable): not judged, the
	 * flow is denied. TLS clients copy their handshake (send, write); and this comes before
	 * the not-TLS decision below, since a first payload that reads as plain text here could
	 * read as a ClientHello by the time the server reads it.
	 */
	if (frags_mutable(skb))
		return judge_client_hello(skb, t, ~0U, &dst, t->state != SL_TLS_PENDING);
	/*
	 * Off the TLS port, a first payload that does not begin a TLS record (plain HTTP, SSH…)
	 * is not TLS and is not judged. One that does, even by its first byte only, is TLS and
	 * must be a whole ClientHello like any on the TLS port: a hello cut into small segments
	 * is denied, not waved through.
	 */
	if (t->state == SL_TLS_PENDING && !t->tls_port && !starts_like_tls(skb, off)) {
		t->state = SL_TLS_NOT_TLS;
		return SKB_PASS;
	}
	/*
	 * Urgent data: the receiving stack takes the urgent byte out of the stream (unless the
	 * server reads it inline), so the server would not read the bytes judged here, and a hello
	 * can be built to read as another name one byte off. TLS never sends urgent data.
	 */
	if (th.urg)
		return judge_client_hello(skb, t, ~0U, &dst, t->state != SL_TLS_PENDING);
	/* A server that never answers with a readable ServerHello: stop watching, closed. */
	if (t->payloads >= TLS_MAX_WATCHED_PAYLOADS)
		return judge_client_hello(skb, t, ~0U, &dst, true);
	t->payloads++;
	return judge_records(skb, t, off, &dst);
}

/* The run's resolver, where the decision layer sends every port-53 packet. */
static __always_inline bool dst_is_resolver(const struct packet_dst *d)
{
	const __u32 *w = (const __u32 *)d->addr;

	if (!sl_cfg.dns_port || d->port != sl_cfg.dns_port ||
	    (d->proto != IPPROTO_TCP && d->proto != IPPROTO_UDP))
		return false;
	if (d->family == AF_INET)
		return w[0] == bpf_htonl(LOOPBACK4);
	return w[0] == 0 && w[1] == 0 && w[2] == 0 && w[3] == bpf_htonl(1);
}

/*
 * The packet goes where its socket's allowed flow was connected. A report-mode denial's flow
 * (deny_reason) vouches for nothing: its packets are judged in full, so that after a switch to
 * enforce they are dropped even if the socket could not be destroyed. Nor does a flow judged
 * under another policy (era): a switch judges again the open flows it finds in the run's fd
 * tables, but a socket held in none then (in flight in an SCM_RIGHTS message, an io_uring fixed
 * file) keeps the old judgment; its packets are judged in full under the policy in force.
 * A dual-stack socket connect()ed to ::ffff:a.b.c.d keeps that address in its flow while the
 * kernel sends its packets as IPv4 to a.b.c.d: that is the flow's own destination too (the
 * connect hook judged it as a.b.c.d, v6_route's SL_V6_AS_V4), or such a flow would never be
 * re-judged at its packets, and would be judged in full at every one. A function of its own
 * (not inlined): the backstop asks it twice, and its budget has no room for two copies.
 */
static __noinline bool dst_is_flows(const struct packet_dst *d, const struct sl_flow *f)
{
	const __u32 *a = (const __u32 *)d->addr, *b = (const __u32 *)f->addr;

	if (f->port != d->port || f->protocol != d->proto)
		return false;
	if (d->family == AF_INET6)
		return f->family == AF_INET6 && a[0] == b[0] && a[1] == b[1] && a[2] == b[2] &&
		       a[3] == b[3];
	if (f->family == AF_INET6)
		return v6_is_v4_mapped(b) && a[0] == b[3];
	return a[0] == b[0];
}

static __always_inline bool dst_is_flow_dst(const struct packet_dst *d, const struct sl_flow *f)
{
	return f && !f->deny_reason && f->era == sl_cfg.era && dst_is_flows(d, f);
}

/*
 * A flow judged under another policy generation that no switch judged again (its socket was in
 * no fd table the switch's scan read: in flight in an SCM_RIGHTS message, an io_uring fixed
 * file), at its first packet to its own destination under the policy in force: v is that
 * policy's judgment of the packet, as a connect() there now would get it, and the flow takes it,
 * as the switch's re-judge would have written it (userspace/preexisting.c flow_rejudge): the
 * rule by its new number, that rule's caps and host totals, the host, a denial's reason. Its old
 * caps and server-name state were another policy's. A TCP flow the new policy allows through a
 * name alone must be held to the server-name check as a connect() would be: one never watched
 * is watched from now on (on the TLS port only if it has sent nothing), one whose first payload
 * was plain off the TLS port, or that has sent nothing yet, or that is denied already, keeps its
 * state; one whose ClientHello passed under the old policy's names is denied (sni_unchecked):
 * the names it may use now are looked up by name, which the switch's re-judge does for the
 * flows it finds, and this program cannot.
 */
static __always_inline void flow_restamp(struct bpf_sock *sk, struct sl_flow *f, struct verdict *v,
					 const struct sl_decision_event *ev)
{
	struct sl_sk_tls *t;
	__u32 rid;

	if (v->verdict == SL_VERDICT_ALLOW && v->learned && f->protocol == IPPROTO_TCP) {
		t = bpf_sk_storage_get(&sl_sk_tls, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (t && !t->state) {
			/*
			 * Never watched (a CIDR rule, the default allowed it): judged by its first
			 * payload, as at a connect(): none yet, watched from now; on the TLS port,
			 * or one that began like TLS, a ClientHello no name check saw; plain, off
			 * the TLS port, never checked.
			 */
			t->tls_port = f->port == SL_TLS_PORT;
			t->state = f->snd_init & SL_FLOW_FIRST_PLAIN && !t->tls_port ?
					   SL_TLS_NOT_TLS : SL_TLS_PENDING;
			t->payloads = 0;
			t->deny_reason = 0;
			t->host_id = ev->host_id;
			t->sni_host_id = 0;
			t->pid = f->pid;
			t->tgid = f->tgid;
			__builtin_memcpy(t->comm, f->comm, sizeof(t->comm));
			if ((t->tls_port && f->req_bytes) || f->snd_init & SL_FLOW_FIRST_TLS)
				set_verdict(v, SL_VERDICT_DENY, SL_REASON_SNI_UNCHECKED, v->rule_id);
		} else if (!t || (t->state != SL_TLS_PENDING && t->state != SL_TLS_NOT_TLS &&
				  t->state != SL_TLS_DENIED)) {
			set_verdict(v, SL_VERDICT_DENY, SL_REASON_SNI_UNCHECKED, v->rule_id);
		}
	}
	/*
	 * A ClientHello the old policy's names denied in report mode left its reason on the
	 * socket, which sl_egress copies into the flow: the flow now allowed would be recorded
	 * denied and judged in full at every packet. One the check denied for good (enforce mode)
	 * keeps it: its data is still dropped.
	 */
	if (v->verdict == SL_VERDICT_ALLOW && f->protocol == IPPROTO_TCP) {
		t = bpf_sk_storage_get(&sl_sk_tls, sk, 0, 0);
		if (t && t->state != SL_TLS_DENIED)
			t->deny_reason = 0;
	}
	f->era = sl_cfg.era;
	f->rule_id = v->rule_id;
	f->host_id = ev->host_id;
	f->deny_reason = v->verdict == SL_VERDICT_DENY ? v->reason : 0;
	rid = v->rule_id;
	flow_caps_set(f, v->verdict == SL_VERDICT_ALLOW ? bpf_map_lookup_elem(&sl_rule_caps, &rid) :
							  NULL);
}

/*
 * The first packet of a TCP flow connect() started: a SYN without ACK, before the flow counted
 * any (snd_init: flow_new_bytes sets it at the SYN). Its flags are read only then, so a flow's
 * later packets pay nothing for the check.
 */
static __always_inline bool flow_opening(struct __sk_buff *skb, const struct packet_dst *d,
					 const struct sl_flow *f)
{
	__u8 flags;

	if (!f || f->protocol != IPPROTO_TCP || f->snd_init || d->proto != IPPROTO_TCP || d->fragment)
		return false;
	if (bpf_skb_load_bytes(skb, d->l4 + 13, &flags, 1))
		return false;
	return (flags & (TCP_FLAG_SYN_BYTE | TCP_FLAG_ACK_BYTE)) == TCP_FLAG_SYN_BYTE;
}

/*
 * The backstop: whatever connect() or sendmsg() judged, the packet's own destination must be one
 * the run's allowlist admits. A packet of an allowed flow that goes where the flow was connected
 * costs one comparison, a TCP socket without a flow's packet to where its last one was judged
 * allowed one slot's (judged.bpf.h); anything else is judged in full. A mismatch is dropped and
 * recorded; a connected socket keeps the denial (every later packet is dropped too, as for a
 * held UDP denial, and it is recorded once). Only the RST of the socket's destroy leaves
 * (destroy_reset).
 */
static __always_inline int backstop(struct __sk_buff *skb, struct bpf_sock *sk,
				    struct sl_flow *flow)
{
	struct packet_dst d = {};
	struct sl_decision_event ev = {};
	struct verdict v = {};
	struct sl_sk_held *h;
	struct sl_flow *opener = flow; /* the flow this packet may open (flow_opening) */
	struct sl_judged *judged = NULL; /* a flowless TCP socket's slot (judged.bpf.h) */
	__u64 cookie = 0;
	void *ns_flows;

	/*
	 * Headers that cannot be read (a raw socket's IHL below 5, a transport header cut short):
	 * the kernel's own TCP and UDP never send such a packet, and one that cannot be judged
	 * must not leave.
	 */
	if (packet_dst(skb, 0, &d))
		return drop_unjudged(skb, SL_REASON_PROTOCOL);
	if (dst_is_resolver(&d))
		return SKB_PASS;
	if (dst_is_flow_dst(&d, flow))
		goto pass;
	if (!flow && d.proto == IPPROTO_TCP && judged_cacheable(&d)) {
		cookie = bpf_get_socket_cookie(skb);
		judged = judged_slot_of_cookie(&sl_judged, cookie);
		if (judged && judged_allowed(judged, cookie, &d))
			goto pass;
	}
	packet_judge(&d, &v, &ev);
	if (judged && v.verdict == SL_VERDICT_ALLOW && !v.learned)
		judged_note(judged, cookie, &d);
	if (flow && flow->era != sl_cfg.era && dst_is_flows(&d, flow))
		flow_restamp(sk, flow, &v, &ev);
	if (v.verdict != SL_VERDICT_DENY ||
	    (!cfg_enforcing() && v.reason != SL_REASON_BLACKHOLE) || destroy_reset(skb, sk)) {
		opener = NULL; /* not where its flow goes: it opens none */
		goto pass;
	}
	ev.hook = SL_HOOK_EGRESS;
	ev.verdict = SL_VERDICT_DENY;
	ev.reason = v.reason;
	ev.rule_id = v.rule_id;
	ev.enforced = 1;
	ev.cgroup_id = bpf_skb_cgroup_id(skb);
	ev.sock_cookie = bpf_get_socket_cookie(skb);
	if (flow) {
		ev.pid = flow->pid;
		ev.tgid = flow->tgid;
		__builtin_memcpy(ev.comm, flow->comm, sizeof(ev.comm));
	}
	/*
	 * A connected flow keeps the denial (its later packets go to the same wrong place); a
	 * socket without one (ping, raw, unconnected UDP) is judged packet by packet.
	 */
	h = flow ? bpf_sk_storage_get(&sl_sk_held, sk, 0, BPF_SK_STORAGE_GET_F_CREATE) : NULL;
	if (!h) {
		event_hdr_init(&ev.hdr, SL_EV_DECISION, sizeof(ev));
		event_submit(&ev, sizeof(ev), SL_HOOK_EGRESS, true);
		return SKB_DROP;
	}
	__builtin_memcpy(&h->ev, &ev, sizeof(ev));
	h->ev.era = sl_cfg.era; /* the generation that judged it, whichever records it */
	h->recorded = 0;
	return drop_held(h);
pass:
	/* one place, not one per way out: the program's budget has no room for two copies */
	ns_flows = ns_flows_shared();
	if (ns_flows)
		ns_flow_note(ns_flows, &d, flow_opening(skb, &d, opener));
	return SKB_PASS;
}

/*
 * The backstop is a program of its own, attached before sl_egress on the same hook (the kernel
 * runs both; a packet leaves only if both pass): one program holding both checks is more than
 * the verifier will walk. A socket already holding a denial is left to sl_egress, which drops
 * and records it (all but its destroy's RST).
 */
SEC("cgroup_skb/egress")
int sl_backstop(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk, *full;
	struct packet_dst d = {};
	void *ns_flows;

	if (!cfg_backstop())
		return SKB_PASS;
	if (reroutes(skb))
		return drop_unjudged(skb, SL_REASON_SOURCE_ROUTE);
	if (!sk)
		return SKB_PASS;
	/* request and time-wait sockets: a listener's answer, a closed flow's last ACK */
	full = bpf_sk_fullsock(sk);
	if (!full) {
		/* still the run's: its host-side program judges them, not the other runs' */
		ns_flows = ns_flows_shared();
		if (ns_flows && !packet_dst(skb, 0, &d))
			ns_flow_note(ns_flows, &d, false);
		return SKB_PASS;
	}
	if (bpf_sk_storage_get(&sl_sk_held, full, 0, 0))
		return SKB_PASS;
	return backstop(skb, full, bpf_sk_storage_get(&sl_sk_flow, full, 0, 0));
}

SEC("cgroup_skb/egress")
int sl_egress(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct sl_sk_held *held;
	struct sl_sk_tls *t = NULL;
	struct sl_flow *flow;
	int ret;

	if (!sk)
		return SKB_PASS;
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return SKB_PASS;
	held = bpf_sk_storage_get(&sl_sk_held, sk, 0, 0);
	if (held)
		return destroy_reset(skb, sk) ? SKB_PASS : drop_held(held);
	/* What leaves is counted; what the TLS check drops is not. */
	flow = bpf_sk_storage_get(&sl_sk_flow, sk, 0, 0);
	ret = tls_egress(skb, sk, &t);
	/*
	 * A flow the server-name check denied (enforced, or in report mode) is a denied flow: its
	 * record says so, with the reason, not the allow its connect() got.
	 */
	if (flow && t && t->deny_reason && !flow->deny_reason)
		flow->deny_reason = t->deny_reason;
	if (ret == SKB_DROP)
		return SKB_DROP;
	return flow ? flow_count(skb, flow, true) : SKB_PASS;
}

/*
 * SHA-256("HelloRetryRequest"): the ServerHello.random that marks a HelloRetryRequest (RFC 8446),
 * as four little-endian words, the way the program loads it.
 */
static const __u64 hrr_random[4] = {
	0x11619ae574ad21cfULL, 0x91b8651e028c1dbeULL, 0x5e8cbb7a1611a2c2ULL, 0x9c33a8c8e2099e07ULL,
};

/*
 * Ingress counts a flow's received bytes (dropping what would pass max_response_bytes), and
 * reads the server's first handshake record of a checked flow: a ServerHello ends the checking,
 * a HelloRetryRequest makes the next ClientHello subject to it again. What does not parse leaves
 * the flow being watched.
 */
SEC("cgroup_skb/ingress")
int sl_ingress(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct sl_flow *flow;
	struct sl_sk_tls *t;
	__u8 addr[16] = {}, family = 0, hdr[6];
	__u64 random[4];
	__u32 off;

	if (!sk)
		return SKB_PASS;
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return SKB_PASS;
	flow = bpf_sk_storage_get(&sl_sk_flow, sk, 0, 0);
	if (flow && flow_count(skb, flow, false) == SKB_DROP)
		return SKB_DROP; /* past max_response_bytes: the run never reads it */
	t = bpf_sk_storage_get(&sl_sk_tls, sk, 0, 0);
	if (!t || t->state != SL_TLS_AWAIT_SERVER)
		return SKB_PASS;
	if (tcp_payload(skb, &off, addr, &family) || off >= skb->len)
		return SKB_PASS;
	if (bpf_skb_load_bytes(skb, off, hdr, sizeof(hdr)) || hdr[0] != TLS_CONTENT_HANDSHAKE ||
	    hdr[5] != TLS_HANDSHAKE_SERVER_HELLO)
		return SKB_PASS;
	/* record header (5), handshake header (4), legacy_version (2), then random (32) */
	if (bpf_skb_load_bytes(skb, off + 11, random, sizeof(random)))
		return SKB_PASS;
	if (random[0] == hrr_random[0] && random[1] == hrr_random[1] &&
	    random[2] == hrr_random[2] && random[3] == hrr_random[3])
		t->state = SL_TLS_EXPECT_CH2;
	else
		t->state = SL_TLS_ALLOWED;
	return SKB_PASS;
}
