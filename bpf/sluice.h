/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice ABI: the one header shared by the BPF programs and userspace.
 *
 * Rules, so that userspace and BPF read one layout: no includes, fixed-width types only,
 * explicit padding, a size assertion after every struct, every ring-buffer record starts with
 * struct sl_event_hdr, and codes are never reused: add new ones at the end, never renumber.
 *
 * Users of this header must provide __u8 … __u64 and __s32 (vmlinux.h in BPF, <linux/types.h>
 * in userspace) before including it.
 */
#ifndef SLUICE_H
#define SLUICE_H

/*
 * Each record type's layout has a version of its own, carried in sl_event_hdr.version: a change
 * to a type's layout takes its next version, so that a writer reads every version of a type it
 * knows and refuses (counts as malformed) one it does not, never misreading it. A writer older
 * than a run's programs (sluice resume) thus refuses their newer flow records rather than log a
 * would-be denial as an allowed flow, and still logs their decisions.
 */
#define SL_ABI_VERSION 1  /* decision and TLS records */
#define SL_FLOW_VERSION 3 /* flow records; 2: sl_flow.deny_reason and era (in 1, zero pad bytes,
			     except in the builds that set deny_reason without this version);
			     3: era 32 bits wide, at the end (104 bytes before) */

/* Record types (struct sl_event_hdr.type). */
enum sl_event_type {
	SL_EV_DECISION = 1, /* a connect/sendmsg was judged: struct sl_decision_event */
	SL_EV_TLS = 2,	    /* a TLS flow's server name was judged: struct sl_tls_event */
	SL_EV_FLOW = 3,	    /* a flow that went ahead ended (its socket was released): allowed, or
			       denied in report mode only (sl_flow.deny_reason): struct sl_flow_event */
};

/* Hooks that judge or observe; also the index of the per-hook loss counters. */
enum sl_hook {
	SL_HOOK_NONE = 0,
	SL_HOOK_CONNECT4 = 1,
	SL_HOOK_CONNECT6 = 2,
	SL_HOOK_SENDMSG4 = 3,
	SL_HOOK_SENDMSG6 = 4,
	SL_HOOK_EGRESS = 5,	 /* cgroup_skb egress: the TLS server-name check, header checks */
	SL_HOOK_SOCK_CREATE = 6, /* cgroup/sock_create: socket kinds */
	SL_HOOK_SETSOCKOPT = 7,	 /* cgroup/setsockopt: options that reroute packets */
	SL_HOOK_SOCK_RELEASE = 8, /* cgroup/sock_release: a flow's record */
	SL_HOOK_TC = 9,		  /* tc ingress on the host side of the run's veth; sock_cookie
				     carries the ifindex there */
	SL_HOOK_LSM = 10,	  /* BPF LSM on the run's cgroup: sockets the other hooks miss */
	SL_HOOK_SECCOMP = 11,	  /* the workload's seccomp filter (userspace/sandbox_seccomp.c):
				     socket families no hook judges; sluice writes its lines, no
				     program records it */
	SL_HOOK_MAX, /* array size, not a hook; recvmsg/getpeername rewrite and record nothing */
};

enum sl_verdict {
	SL_VERDICT_ALLOW = 1,
	SL_VERDICT_DENY = 2,
};

/* Why a verdict was reached. */
enum sl_reason {
	SL_REASON_RULE = 1,	    /* allowed by policy rule rule_id */
	SL_REASON_DEFAULT_ALLOW = 2, /* no rule matched, policy default is allow */
	SL_REASON_DEFAULT_DENY = 3,  /* no rule matched, policy default is deny */
	SL_REASON_BLACKHOLE = 4,     /* fixed metadata/link-local blackhole, in any form */
	SL_REASON_PROTOCOL = 5,	     /* socket protocol is neither TCP nor UDP: cannot classify */
	SL_REASON_DNS_REDIRECT = 6,  /* port 53: sent to the run's resolver instead (allowed) */
	SL_REASON_SNI_OK = 7,	     /* ClientHello names a host resolved to this address */
	SL_REASON_SNI_MISMATCH = 8,  /* ClientHello names a host not resolved to this address */
	SL_REASON_SNI_MISSING = 9,   /* ClientHello without a server name */
	SL_REASON_SNI_UNPARSEABLE = 10, /* first payload is not a whole, parseable ClientHello */
	SL_REASON_SOCKET_KIND = 11,  /* raw, packet, ping, SCTP, MPTCP…: only TCP and UDP */
	SL_REASON_SOURCE_ROUTE = 12, /* IP options / IPv6 routing header: the packet would go elsewhere */
	SL_REASON_V4_RELAY = 13,     /* 6to4, Teredo, ISATAP, local NAT64: an IPv4 host behind a relay */
	SL_REASON_HOST_CAP = 14,     /* the host's byte total for the run has reached the rule's cap */
	SL_REASON_UNRECORDED = 15,   /* strict evidence: the allow could not be recorded (never logged,
					counted as loss) */
	SL_REASON_SOCKET_FAMILY = 16, /* seccomp: a socket family no hook judges (vsock, packet…),
					 or a way to make one the filter cannot see (io_uring) */
	SL_REASON_LOG_UNWRITABLE = 17, /* strict evidence: the run's log cannot be written (a full
					  disk, an I/O error): nothing goes ahead unrecorded */
	/* 18, 19: assigned to other work */
	SL_REASON_PREEXISTING_UNNAMED = 20, /* a flow made before the run's programs were attached,
					       that only a host rule could allow: its name was never
					       resolved by the run, so no rule can vouch for it */
	SL_REASON_SNI_UNCHECKED = 21, /* a switch left a TCP flow allowed through a name alone,
					 and no ClientHello of it was ever checked (it went ahead
					 under a CIDR rule, the default, or as a report-mode
					 denial): the server-name check cannot vouch for it */
	SL_REASON_FLOW_UNREADABLE = 22, /* a switch could not read an open flow's state in the
					   kernel (pidfd_getfd failed), and the new policy allows it
					   only with state the kernel must keep for it (the
					   server-name check, its rule's caps): fail closed */
	SL_REASON_FLOW_NO_STATE = 23, /* a connect() that would go ahead, whose flow's state the
					 kernel would not keep (socket storage is charged to the
					 socket's option memory, which the workload can fill up to
					 net.core.optmem_max first): a flow that could be neither
					 counted, capped nor recorded is refused */
	SL_REASON_SNI_PORT = 24, /* ClientHello names a host resolved to this address, but none
				    of the rules that name was learned under allows the flow's port
				    and protocol (an address shared by names of different rules) */
	SL_REASON_SNI_CHANGED = 25, /* a later ClientHello of the flow (after a HelloRetryRequest,
				       or sent again) names a server resolved to this address,
				       but not the one the first ClientHello passed with (or the
				       first passed with none: report mode let it through) */
};

/* Policy modes (struct sl_cfg's mode). */
enum sl_mode {
	SL_MODE_ENFORCE = 0,
	SL_MODE_REPORT = 1, /* log would-be denials, allow them; the blackhole is still enforced */
};

/* Protocol bits in struct sl_port_rule.protocols. */
#define SL_PROTO_TCP 0x01
#define SL_PROTO_UDP 0x02
#define SL_PROTO_ICMP 0x04 /* ICMP and ICMPv6 (ping and raw sockets the policy allows); no ports */

/* Socket kinds a policy may allow beyond TCP and UDP (policy "sockets:"). */
#define SL_SOCKETS_PING 0x01 /* ICMP echo sockets */
#define SL_SOCKETS_RAW 0x02  /* raw IP sockets: every packet judged by the backstop */
#define SL_SOCKETS_IO_URING 0x04 /* io_uring_setup is allowed: io_uring can create sockets of any
				    family unseen by the seccomp filter (connect and sendmsg of inet
				    sockets are still judged by the cgroup hooks) */

/* rule_id 0 is the policy default; rules are numbered from 1 in policy order. */
#define SL_RULE_DEFAULT 0

/* Common header of every ring-buffer record. */
struct sl_event_hdr {
	__u16 type;    /* enum sl_event_type */
	__u8 version;  /* SL_ABI_VERSION; SL_FLOW_VERSION for SL_EV_FLOW */
	__u8 pad0;
	__u32 size;    /* whole record, header included */
	__u64 ts_ns;   /* CLOCK_BOOTTIME */
	__u64 seq;     /* per-run kernel sequence, taken before the record is queued */
};
_Static_assert(sizeof(struct sl_event_hdr) == 24, "sl_event_hdr ABI");

/*
 * One judged connect()/sendmsg(). addr holds the destination as the program saw it: 4 bytes for
 * AF_INET, 16 for AF_INET6 (network order). eff_addr is the IPv4 address the decision was taken
 * on when a v6 address embeds one (v4-mapped, NAT64); otherwise zero.
 */
struct sl_decision_event {
	struct sl_event_hdr hdr;
	__u64 cgroup_id;   /* cgroup of the calling task (a descendant of the run's cgroup) */
	__u64 sock_cookie;
	__u32 pid;         /* thread id */
	__u32 tgid;        /* process id */
	__u16 port;        /* destination port, host order; SL_HOOK_SOCK_CREATE: the socket type;
			      SL_HOOK_SETSOCKOPT: the option name */
	__u16 rule_id;     /* matching rule, or SL_RULE_DEFAULT; SL_HOOK_SOCK_CREATE: the protocol */
	__u8 family;       /* AF_INET (2) or AF_INET6 (10) */
	__u8 protocol;     /* IPPROTO_* of the socket; SL_HOOK_SETSOCKOPT: the option level */
	__u8 hook;         /* enum sl_hook */
	__u8 verdict;      /* enum sl_verdict: what the policy says */
	__u8 reason;       /* enum sl_reason */
	__u8 enforced;     /* 1 if the verdict was applied, 0 in report mode */
	__u8 embedded_v4;  /* 1 if eff_addr was extracted from a v6 address */
	__u8 pad1;
	__u32 host_id;     /* name the run's resolver learned this address for, or 0 */
	__u8 addr[16];
	__u8 eff_addr[4];
	__u32 era;         /* the policy generation (sl_cfg.era) that judged it; 0 (a run of an
			      older build, where this was padding): none, named by its time */
	char comm[16];
};
_Static_assert(sizeof(struct sl_decision_event) == 104, "sl_decision_event ABI");
_Static_assert(__builtin_offsetof(struct sl_decision_event, addr) == 64, "sl_decision_event ABI");

/* Keys of the policy LPM tries (sl_dst4, sl_dst6). */
struct sl_lpm4_key {
	__u32 prefixlen;
	__u8 addr[4];
};
_Static_assert(sizeof(struct sl_lpm4_key) == 8, "sl_lpm4_key ABI");

struct sl_lpm6_key {
	__u32 prefixlen;
	__u8 addr[16];
};
_Static_assert(sizeof(struct sl_lpm6_key) == 20, "sl_lpm6_key ABI");

/* One (port range, protocols) → rule entry. A port range of 0-65535 means any port. */
struct sl_port_rule {
	__u16 port_lo;
	__u16 port_hi;
	__u16 rule_id;
	__u8 protocols; /* SL_PROTO_* bits */
	__u8 pad;
};
_Static_assert(sizeof(struct sl_port_rule) == 8, "sl_port_rule ABI");

/*
 * Value of the LPM tries. An LPM lookup returns only the longest matching prefix, so the compiler
 * folds into each prefix's value the entries of every shorter prefix that contains it: the
 * longest match then carries every rule that covers the address.
 */
#define SL_MAX_PORT_RULES 16
struct sl_dst_rules {
	__u32 count;
	__u32 pad;
	struct sl_port_rule e[SL_MAX_PORT_RULES];
};
_Static_assert(sizeof(struct sl_dst_rules) == 136, "sl_dst_rules ABI");

/*
 * An address the run's resolver produced for a listed name (sl_learned4/6 values). A name may
 * be allowed by several rules and an address shared by several names (CDNs): up to
 * SL_LEARNED_RULES distinct rules are kept; the ports of each come from sl_rule_ports[rule_id].
 */
#define SL_LEARNED_RULES 4
struct sl_learned {
	__u16 rule_ids[SL_LEARNED_RULES]; /* 0: unused slot */
	__u32 host_id;			  /* the first name this address was learned for */
	__u32 pad;
	__u64 expires_ns;		  /* CLOCK_BOOTTIME; 0: valid for the whole run */
};
_Static_assert(sizeof(struct sl_learned) == 24, "sl_learned ABI");

struct sl_learned6_key {
	__u8 addr[16];
};
_Static_assert(sizeof(struct sl_learned6_key) == 16, "sl_learned6_key ABI");

/*
 * A slot of a judged cache (bpf/judged.bpf.h): the whole key of a packet judged allowed. Here
 * for the BPF_PROG_RUN selftest, which plants slots and reads them back.
 */
#define SL_JUDGED_SLOTS 256 /* 2^8: a cookie's low bits, a hash's top 8 */

struct sl_judged {
	__u64 cookie;	/* the socket's; 0 in the host side's, keyed by destination alone */
	__u8 addr[16] __attribute__((aligned(8))); /* v4 in the first 4 bytes */
	__u32 era;	/* the policy generation that judged it (sl_cfg.era) */
	__u16 port;	/* host order */
	__u8 proto;	/* IPPROTO_TCP or IPPROTO_UDP */
	__u8 family;
	__u32 seq;	/* odd: being written */
	__u32 pad;
};
_Static_assert(sizeof(struct sl_judged) == 40, "sl_judged ABI");

/* The host side's slot of a destination (a[]: its address as four words, in memory order). */
#define SL_JUDGED_DST_SLOT(a, port, proto)                                                         \
	((((a)[0] ^ (a)[1] ^ (a)[2] ^ (a)[3] ^ ((__u32)(port) << 16 | (proto))) * 0x9e3779b1U) >> 24)

/*
 * Where a socket's DNS traffic really went before the redirect to the run's resolver, kept in
 * socket storage so recvmsg/getpeername can show the client the server it asked.
 */
struct sl_dns_orig {
	__u8 addr[16];	 /* v4 in the first 4 bytes for AF_INET */
	__u16 port;	 /* network order, as in sockaddr */
	__u8 family;
	__u8 valid;
	__u32 pad;
};
_Static_assert(sizeof(struct sl_dns_orig) == 24, "sl_dns_orig ABI");

/*
 * Who sent a redirected DNS query: kept per client socket cookie (sl_dns_clients) so the
 * resolver, which only sees a loopback source port, can name the querying process.
 */
struct sl_dns_client {
	__u32 pid;  /* thread id */
	__u32 tgid; /* process id */
	char comm[16];
};
_Static_assert(sizeof(struct sl_dns_client) == 24, "sl_dns_client ABI");

/*
 * TCP flows subject to the server-name check: set in socket storage by connect when the
 * destination was allowed as an address the resolver learned for a name, whatever the port;
 * read by the egress program on the first payload. On the TLS port that payload must be a
 * ClientHello; on any other port only a payload that starts like TLS (a record of any TLS
 * content type, first byte 0x14-0x18) is judged, and anything else ends the check.
 */
enum sl_tls_state {
	SL_TLS_PENDING = 1,	 /* no payload seen yet */
	SL_TLS_ALLOWED = 2,	 /* the server answered a checked ClientHello: no more checks */
	SL_TLS_DENIED = 3,	 /* every further data packet is dropped */
	SL_TLS_AWAIT_SERVER = 4, /* ClientHello checked; until the ServerHello, any other is too */
	SL_TLS_EXPECT_CH2 = 5,	 /* the server sent a HelloRetryRequest: a second ClientHello follows */
	SL_TLS_NOT_TLS = 6,	 /* not the TLS port, and the first payload is not TLS: unchecked */
};

struct sl_sk_tls {
	__u8 state;	/* enum sl_tls_state */
	__u8 payloads;	/* client payloads seen while watching, to bound the watch */
	__u8 tls_port;	/* the flow goes to the TLS port: its first payload must be TLS */
	__u8 deny_reason; /* the enum sl_reason of the first ClientHello the check denied (in
			     report mode too), copied into the socket's flow (sl_flow.deny_reason)
			     so that its record says the denial; 0: none */
	__u32 host_id;	/* the name the destination was learned for */
	__u32 pid;	/* who connected, for the record */
	__u32 tgid;
	char comm[16];
	__u32 sni_host_id; /* the name the last ClientHello that passed named (sl_sni_ok's host_id),
			      for a switch's re-judge of the open flow; 0: none passed */
	__u32 pad2;
};
_Static_assert(sizeof(struct sl_sk_tls) == 40, "sl_sk_tls ABI");

/*
 * A UDP socket connect()ed to a destination the policy denies: connect() itself sends nothing
 * (glibc connects a UDP socket to every candidate address just to sort them), so the connect is
 * let through and the denial held here, to be applied and recorded at the socket's first send.
 */
struct sl_sk_held {
	struct sl_decision_event ev; /* the denial, recorded when the first datagram is dropped */
	__u8 recorded;
	__u8 pad[7];
};
_Static_assert(sizeof(struct sl_sk_held) == 112, "sl_sk_held ABI");

#define SL_SNI_MAX 255

/*
 * (destination, server name) pairs the run's resolver produced; value: struct sl_sni_name. The
 * whole name is the key, so the lookup is an exact match: a hash of it would let a workload send
 * a name computed to collide with a listed one (a hash is not a name). Every byte counts, so a
 * key is zeroed before it is filled.
 */
struct sl_sni_key {
	__u8 addr[16];	/* v4 in the first 4 bytes, the rest zero */
	__u16 name_len; /* bytes of name, 1..SL_SNI_MAX */
	__u8 pad[6];
	char name[SL_SNI_MAX + 1]; /* lower case, zero-padded, not NUL-terminated when full */
};
_Static_assert(sizeof(struct sl_sni_key) == 280, "sl_sni_key ABI");

/*
 * What the resolver learned a name for at an address (sl_sni_ok's value): the name, and the
 * rules it was learned under there (the answer's name's own, not the union the address's
 * sl_learned entry holds for every name that shares it), so that a ClientHello naming it puts
 * its flow under one of that name's rules (skb.bpf.c judge_client_hello).
 */
struct sl_sni_name {
	__u32 host_id;
	__u16 rule_ids[SL_LEARNED_RULES]; /* 0: unused slot; none at all: learned under no rule
					     (report mode, an unlisted name) */
	__u32 pad;
};
_Static_assert(sizeof(struct sl_sni_name) == 16, "sl_sni_name ABI");

/* One judged TLS ClientHello. sni holds sni_len bytes (not NUL-terminated), lower-cased. */
struct sl_tls_event {
	struct sl_event_hdr hdr;
	__u64 cgroup_id;
	__u64 sock_cookie;
	__u32 pid;	  /* from connect time */
	__u32 tgid;
	__u16 port;
	__u8 family;
	__u8 verdict;
	__u8 reason;
	__u8 enforced;
	__u16 sni_len;
	__u32 host_id;	  /* the name the destination was learned for */
	__u32 pad;
	__u8 addr[16];
	char comm[16];
	char sni[256];
};
_Static_assert(sizeof(struct sl_tls_event) == 352, "sl_tls_event ABI");

/*
 * A connected flow that went ahead, kept in socket storage from connect() to the socket's
 * release: an allowed one, or in report mode one the policy denies (deny_reason set), so that a
 * report-only phase measures what the policy would refuse too. Payload bytes are counted once:
 * TCP by sequence number (a retransmission adds nothing), UDP per datagram.
 */
struct sl_flow {
	__u64 start_ns;	  /* CLOCK_BOOTTIME at connect() */
	__u64 req_bytes;  /* payload sent */
	__u64 resp_bytes; /* payload received */
	__u32 snd_next;	  /* TCP: sequence number after the last new byte sent */
	__u32 rcv_next;	  /* TCP: sequence number after the last new byte received */
	__u8 snd_init;	  /* SL_FLOW_SND_SET: snd_next is set; TCP, SL_FLOW_FIRST_*: what the
			     flow's first payload began with, whether or not anything watched it
			     (a switch judges an open flow by it as connect() would have) */
	__u8 rcv_init;	  /* rcv_next is set */
	__u8 family;
	__u8 protocol;
	__u16 port;	  /* destination, host order */
	__u16 rule_id;
	__u32 host_id;
	__u32 pid;
	__u32 tgid;
	__u8 cut;	  /* enum sl_cut: the flow exceeded a cap and was cut */
	__u8 totals;	  /* its rule caps the host's totals: count them in sl_host_bytes */
	__u8 deny_reason; /* report mode: the enum sl_reason the policy denies it for (no rule
			     allows it, so no cap applies); 0: allowed */
	__u8 pad;	  /* (the 8-bit era of version 2) */
	__u8 addr[16];
	char comm[16];
	__u64 max_req;	  /* the rule's caps plus one; 0: none (see struct sl_rule_caps) */
	__u64 max_resp;
	__u32 era;	  /* the policy generation (sl_cfg.era) that judged the flow: at connect(),
			     or when a switch judged the open flow again (userspace/preexisting.c).
			     The packet layer trusts the flow's state only in the current one.
			     0: none (policy of start_ns). 32 bits: a generation never comes back */
	__u32 pad2;
};
_Static_assert(sizeof(struct sl_flow) == 112, "sl_flow ABI");

#define SL_FLOW_SND_SET 0x01
#define SL_FLOW_FIRST_PLAIN 0x02 /* its first byte does not begin a TLS record */
#define SL_FLOW_FIRST_TLS 0x04	 /* it does (a record type, 0x14-0x18), or could not be read */

enum sl_cut {
	SL_CUT_NONE = 0,
	SL_CUT_REQUEST = 1,  /* max_request_bytes */
	SL_CUT_RESPONSE = 2, /* max_response_bytes */
	SL_CUT_TOTAL_REQUEST = 3,  /* max_total_request_bytes: the host's total for the run */
	SL_CUT_TOTAL_RESPONSE = 4, /* max_total_response_bytes */
};

/*
 * A rule's byte caps (sl_rule_caps, indexed by rule_id), each stored as the cap plus one so that
 * 0 means "no cap" while a cap of 0 bytes is still expressible.
 */
struct sl_rule_caps {
	__u64 max_req;	      /* per flow */
	__u64 max_resp;
	__u64 max_total_req;  /* per (run, host): the sum over the run's flows to one host */
	__u64 max_total_resp;
};
_Static_assert(sizeof(struct sl_rule_caps) == 32, "sl_rule_caps ABI");

/*
 * A flow takes its rule's caps (NULL: a rule without any): at connect() (sock_addr.bpf.c
 * flow_start), when the packet layer puts the flow under another rule (a ClientHello naming
 * another name of a shared address, a switch's restamp: skb.bpf.c), and when a policy switch
 * re-judges an open flow (userspace/preexisting.c): one definition of what taking them sets.
 * Which caps a denied flow takes is each caller's: flow_start and the re-judge keep them for a
 * spent host budget (SL_REASON_HOST_CAP), the restamp for no denial.
 */
static inline __attribute__((always_inline)) void flow_caps_set(struct sl_flow *f,
								const struct sl_rule_caps *caps)
{
	f->max_req = caps ? caps->max_req : 0;
	f->max_resp = caps ? caps->max_resp : 0;
	f->totals = caps && (caps->max_total_req || caps->max_total_resp);
}

/*
 * A host's byte totals over the run, for rules with max_total_*: a name the resolver learned
 * (host_id set, addr zero) or, for CIDR rules, one address.
 */
struct sl_host_key {
	__u8 addr[16];
	__u32 host_id;
	__u16 rule_id;	/* the rule's budget id (sl_rule_budget): its number until a switch */
	__u8 family;
	__u8 pad;
};
_Static_assert(sizeof(struct sl_host_key) == 24, "sl_host_key ABI");

struct sl_host_bytes {
	__u64 req_bytes;
	__u64 resp_bytes;
	__u8 spent;	/* a flow went past a total cap: the host gets no new flow */
	__u8 pad[7];
};
_Static_assert(sizeof(struct sl_host_bytes) == 24, "sl_host_bytes ABI");

/*
 * A flow's record: at its socket's release (end_ns set), or at once when it is cut (end_ns 0;
 * flow.cut says which cap), so that userspace can end it.
 */
struct sl_flow_event {
	struct sl_event_hdr hdr;
	__u64 cgroup_id;
	__u64 sock_cookie;
	__u64 end_ns; /* CLOCK_BOOTTIME at release; 0 for a cut */
	struct sl_flow flow;
};
_Static_assert(sizeof(struct sl_flow_event) == 160, "sl_flow_event ABI");

/*
 * The name a host_id stands for (sl_hosts: key host_id, written by the run's resolver before it
 * hands out the name's first address). No program reads it: it keeps the names in the kernel
 * with the run, so that a writer resuming a dead one's log names the hosts of the records it
 * reads as the dead one would have. host_ids count from 1, densely, up to SL_HOSTS_MAX.
 */
#define SL_HOSTS_MAX 100000
#define SL_HOST_NAME_MAX 256 /* a DNS name (at most 253 bytes) and its NUL */

/*
 * sl_hosts is an LPM trie used as an exact-match map (prefixlen always 32): a trie allocates a
 * node per name kept and nothing before, where a hash of SL_HOSTS_MAX entries holds 2 MiB of
 * buckets from its creation, in every run and every spare, whether it resolves a name or not.
 */
struct sl_hosts_key {
	__u32 prefixlen; /* always 32 */
	__u32 host_id;
};

struct sl_host_name {
	__u8 name[SL_HOST_NAME_MAX]; /* NUL-terminated, lower case */
};
_Static_assert(sizeof(struct sl_host_name) == 256, "sl_host_name ABI");

/*
 * What a run was started with that sluice resume takes over from the kernel rather than from
 * the log (a dead writer may not have signed its first lines): the run's configuration map
 * holds it (struct sl_cfg's run), no program reads it.
 */
struct sl_run_cfg {
	__u8 policy_sha256[32]; /* of the policy file's bytes, as parsed */
	__u8 upstream_addr[16]; /* where the run's resolver asks (4 bytes for AF_INET) */
	__u16 upstream_port;	/* host order */
	__u8 upstream_family;	/* AF_INET, AF_INET6; 0: none */
	__u8 dns_ttl;		/* learned addresses expire with their TTL */
	__u8 netns_given;	/* --netns named the namespace below; 0: it is sluice's own */
	/*
	 * The workload is confined to hold no CAP_NET_ADMIN (no --allow-root), so none of its
	 * sockets was in TCP_REPAIR: only then may the RST of a socket sluice destroys leave
	 * (loader_kill_socket). 0 (a pin of a build before it): never.
	 */
	__u8 no_net_admin;
	__u8 pad[2];
	__u64 netns_dev; /* where the run's resolver listens: st_dev and st_ino of its netns */
	__u64 netns_ino;
};
_Static_assert(sizeof(struct sl_run_cfg) == 72, "sl_run_cfg ABI");

/*
 * A run's configuration, read by every layer of its programs: one map (the section ".data.cfg",
 * which the loader makes every object of the run share), written after the programs are loaded
 * and before any link of theirs exists, so that a set verified in advance (sluice daemon's
 * spares) can serve any run. Pinned with the run ("map-cfg"): sluice resume reads it back.
 * What is the same for every run of a build and kernel stays a constant of the programs: the
 * TLS port (SL_TLS_PORT, below), whether fragments can be checked (.rodata, set at load).
 */
/*
 * The port whose flows to learned addresses must open with a ClientHello (tls.bpf.h); on other
 * ports only a first payload that starts like TLS is judged. A compile-time constant, read by the
 * programs and userspace (preexisting.c) alike, so that the two cannot judge a port differently.
 */
#define SL_TLS_PORT 443

#define SL_CFG_VERSION 3 /* the layout of struct sl_cfg: a pinned run of another is refused;
			    2: era; 3: era 32 bits wide */

struct sl_cfg {
	__u32 version;	    /* SL_CFG_VERSION */
	__u32 wakeup_bytes; /* force a reader wake-up once this much is queued */
	__s32 deny_errno;   /* what a denied connect() or sendmsg() returns */
	__u16 dns_port;	    /* the run's resolver on loopback; 0: no resolver, no redirect */
	__u8 mode;	    /* enum sl_mode */
	__u8 default_allow; /* the policy's default verdict is allow */
	__u8 strict;	    /* --strict-evidence: an allow that cannot be recorded is refused */
	__u8 sockets;	    /* SL_SOCKETS_* the policy allows */
	__u8 backstop;	    /* the packet checks are on (off: selftests only) */
	__u8 pad;
	__u32 era;	    /* the policy generation: 1 at the start, higher for each policy a
			       switch loads (never one a set was loaded with before, committed or
			       not: loader_era_next); stamped into sl_flow.era */
	__u64 ns_token;	    /* the run's token among its namespace's (nsflows.bpf.h); 0: none */
	__u64 cgroup_id;    /* the run's cgroup (the LSM layer's check; set at attach) */
	__s32 cgroup_level; /* its depth below the root */
	__u32 pad2;
	struct sl_run_cfg run; /* for sluice resume; no program reads it */
};
_Static_assert(sizeof(struct sl_cfg) == 120, "sl_cfg ABI");

/*
 * A frame's addresses and ports, as the packet layer and the host side both read them from its
 * headers: the key of sl_ns_flows, where the runs sharing a network namespace record what their
 * cgroups let out (value: the run's token), so that each run's host-side program judges its own
 * frames and those no run sent, and leaves the other runs' frames to them.
 */
struct sl_ns_flow_key {
	__u8 saddr[16]; /* v4 in the first 4 bytes, the rest zero */
	__u8 daddr[16];
	__u16 sport;	/* host order; 0 for a protocol without ports, or a fragment */
	__u16 dport;
	__u8 family;
	__u8 proto;
	__u8 pad[2];
};
_Static_assert(sizeof(struct sl_ns_flow_key) == 40, "sl_ns_flow_key ABI");

/*
 * The sizes of a namespace's two shared maps (nsflows.bpf.h): the programs' inner-map templates
 * and the loader's maps must have one shape, or the loader could not put them in the slots. The
 * flows are an LRU (preallocated: 112 bytes a flow, held by the namespace, not per run).
 */
#define SL_NS_FLOWS_MAX 16384
#define SL_NS_RUNS_MAX 256

/*
 * sl_kill's value (destroy.bpf.c) before the socket iterator's walk: still there after it, no
 * socket had the cookie (it was closed already); else bpf_sock_destroy's result (0 or -errno).
 */
#define SL_KILL_PENDING 1

/* An IPv6 header (40) and a TCP header with the most options (60), rounded up to 8. */
#define SL_RESET_FRAME_MAX 104

/* The RST of a socket sluice destroys, as the packet layer let it out (resets.bpf.h). */
struct sl_reset_frame {
	__u32 len; /* the frame's bytes from its IP header on; the rest of bytes[] is zero */
	__u32 pad;
	__u8 bytes[SL_RESET_FRAME_MAX] __attribute__((aligned(8))); /* read as words */
};
_Static_assert(sizeof(struct sl_reset_frame) == 112, "sl_reset_frame ABI");

/*
 * sl_destroying's value (skb.bpf.c destroy_reset), under the cookie of a socket sluice is
 * destroying. userspace writes it (loader_kill_socket) with netns_ino, the nsfs inode number of
 * the network namespace whose ways out it judged (resets_fixed), the rest zero: the packet layer
 * lets the socket's RST out only if the socket lives in that namespace (a socket of the run's
 * cgroup in a namespace of its own leaves by ways no one judged). The packet layer writes the
 * rest, the RST it let out, for the host side.
 */
struct sl_reset_note {
	__u64 netns_ino;
	struct sl_ns_flow_key k;
	struct sl_reset_frame f;
};
_Static_assert(sizeof(struct sl_reset_note) == 160, "sl_reset_note ABI");

#endif /* SLUICE_H */
