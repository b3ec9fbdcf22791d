/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the BPF_PROG_RUN test programs (progrun_*.bpf.c) and their driver (progrun.c) exchange
 * through the test objects' global data. Include after __u8 … __u32 and bpf/sluice.h.
 */
#ifndef SLUICE_PROGRUN_H
#define SLUICE_PROGRUN_H

/* The TLS check: the flow's state put on the test socket before the packet… */
struct t_tls_in {
	__u8 state;    /* enum sl_tls_state before this packet */
	__u8 tls_port; /* the flow goes to the TLS port */
	__u8 payloads; /* client payloads already watched */
	__u8 pad;
	__u32 host_id;
	__u16 flow_rule; /* the socket's flow, of this generation, under this rule; 0: no flow */
	__u16 pad2;
	__u32 sni_host_id; /* the name the flow's first ClientHello passed with; 0: none */
};

/* … and what the check left. */
struct t_tls_out {
	__u8 state;  /* enum sl_tls_state after it */
	__u8 reason; /* the last judged ClientHello's sl_reason; 0: none was judged */
	__u16 sni_len;
	__u32 error; /* the harness itself failed (no socket, no storage) */
	char sni[SL_SNI_MAX + 1];
	__u16 flow_rule; /* the flow's after it (0: no flow) … */
	__u16 pad;
	__u32 flow_host; /* … its host … */
	__u64 flow_max_req; /* … and its request cap (plus one; 0: none) */
};

/* The backstop on a packet of a connected flow: the flow's state put on the test socket. */
struct t_flow_in {
	__u8 addr[16]; /* where connect() judged it (4 bytes for AF_INET) */
	__u16 port;    /* host order */
	__u8 family;
	__u8 proto;
	__u32 era;     /* the policy generation that judged it (sl_flow.era) */
	__u8 tls_state;       /* its sl_sk_tls.state (0: none on the socket) */
	__u8 tls_deny_reason; /* its sl_sk_tls.deny_reason */
	__u8 tls_deny_after;  /* out: sl_sk_tls.deny_reason after the backstop (0xff: none) */
};

/*
 * The backstop's judged cache (bpf/judged.bpf.h) on a TCP socket without a flow: a slot put
 * where the test socket's cookie falls before the packet, and what the slot holds after.
 */
struct t_judged_in {
	__u8 plant;    /* put this key in the socket's slot first (0: leave the slot as it is) */
	__u8 family;
	__u8 proto;
	__u8 odd_seq;  /* … as if another run of the program were half-way through writing it */
	__u16 port;    /* host order */
	__u16 pad;
	__u8 addr[16]; /* 4 bytes for AF_INET */
	__u64 cookie_xor; /* the planted cookie: the socket's, these bits flipped */
	__s32 era_delta;  /* the planted era: sl_cfg.era plus this */
	__u8 noted;	  /* out: the slot serves the socket's packet, after (its whole key) */
	__u8 pad2[3];
};

/* The decision layer: a destination, after an Ethernet header in the test packet… */
struct t_query {
	__u8 addr[16]; /* 4 bytes for AF_INET */
	__u16 port;    /* host order */
	__u8 family;
	__u8 proto; /* IPPROTO_* of the socket */
};

/* … and the verdict on it. */
struct t_answer {
	__u8 verdict;
	__u8 reason;
	__u16 rule_id;
	__u8 learned;
	__u8 embedded_v4;
	__u8 eff_addr[4];
	__u32 host_id;
	__u32 error; /* the query could not be read */
};

#endif /* SLUICE_PROGRUN_H */
