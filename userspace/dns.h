/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DNS wire format (RFC 1035, 3596, 6891) for the per-run resolver: strict parsing of the queries
 * the run sends and of the answers upstream returns, and building of the replies we send back.
 *
 * Nothing from the wire is trusted: every length is checked against the message, compression
 * pointers must point strictly backwards (no loops) and are limited in number, names are limited
 * to 255 octets on the wire, record counts are capped. A message that fails any check is refused
 * with -EBADMSG (or -E2BIG for a cap) and a reason, never partially used.
 *
 * Names are handled in presentation form, lower-cased, without the trailing dot ("pypi.org");
 * the root name is "". Labels holding '.', '\\' or bytes outside printable ASCII are refused
 * (-EBADMSG): no policy can name them, and refusing them keeps every name printable in logs.
 */
#ifndef SLUICE_DNS_H
#define SLUICE_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_NAME_MAX 254     /* presentation form, NUL included: 253 characters */
#define DNS_MSG_MAX 65535    /* TCP carries up to this; UDP less */
#define DNS_UDP_MIN 512      /* the size every client accepts without EDNS */
#define DNS_MAX_ANSWERS 64   /* more answer records than this: -E2BIG */
#define DNS_MAX_SECTION 64   /* more authority or additional records than this: -E2BIG */

#define DNS_CLASS_IN 1

enum dns_type {
	DNS_TYPE_A = 1,
	DNS_TYPE_NS = 2,
	DNS_TYPE_CNAME = 5,
	DNS_TYPE_SOA = 6,
	DNS_TYPE_PTR = 12,
	DNS_TYPE_MX = 15,
	DNS_TYPE_TXT = 16,
	DNS_TYPE_AAAA = 28,
	DNS_TYPE_SRV = 33,
	DNS_TYPE_OPT = 41,
	DNS_TYPE_SVCB = 64,
	DNS_TYPE_HTTPS = 65,
	DNS_TYPE_ANY = 255,
};

enum dns_rcode {
	DNS_RCODE_NOERROR = 0,
	DNS_RCODE_FORMERR = 1,
	DNS_RCODE_SERVFAIL = 2,
	DNS_RCODE_NXDOMAIN = 3,
	DNS_RCODE_NOTIMP = 4,
	DNS_RCODE_REFUSED = 5,
};

/* Header flag bits (host order of the 16-bit flags word). */
#define DNS_FLAG_QR 0x8000
#define DNS_FLAG_AA 0x0400
#define DNS_FLAG_TC 0x0200
#define DNS_FLAG_RD 0x0100
#define DNS_FLAG_RA 0x0080
#define DNS_FLAG_AD 0x0020
#define DNS_FLAG_CD 0x0010
#define DNS_OPCODE(flags) (((flags) >> 11) & 0xf)
#define DNS_RCODE(flags) ((flags) & 0xf)

/* A query from a client: exactly one question; EDNS noted if present. */
struct dns_query {
	uint16_t id;
	uint16_t flags;
	char name[DNS_NAME_MAX];
	/*
	 * The same name as the client cased it on the wire. Replies echo it (RFC 4343 4.1: clients
	 * using 0x20 case randomisation drop replies whose question differs in case). If empty or
	 * not equal to name ignoring case, dns_build_reply() uses name.
	 */
	char name_orig[DNS_NAME_MAX];
	uint16_t qtype;
	uint16_t qclass;
	bool edns;		   /* an OPT record was present in the additional section */
	uint16_t edns_udp_size;	   /* its advertised UDP payload size (>= 512 once clamped) */
	bool edns_do;		   /* DNSSEC OK bit */
};

/* One answer-section record, decoded for the types the resolver uses. */
struct dns_rr {
	char name[DNS_NAME_MAX];
	uint16_t type;
	uint16_t rclass;
	uint32_t ttl;
	union {
		uint8_t a[4];
		uint8_t aaaa[16];
		char target[DNS_NAME_MAX]; /* CNAME */
	} data;
	/* other types are skipped: parsed for length and compression only, not decoded */
	bool decoded;
};

struct dns_response {
	uint16_t id;
	uint16_t flags;
	char qname[DNS_NAME_MAX];
	uint16_t qtype;
	uint16_t qclass;
	struct dns_rr answers[DNS_MAX_ANSWERS];
	size_t n_answers;
	uint32_t min_ttl_soa; /* negative-caching TTL from an SOA in authority, or 0 */
};

/*
 * Parse a query. why (may be NULL) receives a short reason on failure. Refuses responses (QR
 * set), opcodes other than QUERY, qdcount != 1, answer or authority records, class other than IN
 * (ANY included), qtype OPT, truncated or trailing bytes, an additional record that is not the one
 * OPT record (root owner, EDNS version 0, well-formed options). Returns 0, -EBADMSG, or -EINVAL
 * for NULL arguments; on failure *q is zeroed.
 */
int dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q, char *why, size_t why_len);

/*
 * Parse a response: header (QR set, opcode QUERY), the one question, and up to DNS_MAX_ANSWERS
 * answers (A, AAAA and CNAME decoded, others skipped). Authority is read only for an SOA
 * (min_ttl_soa: the smallest min(SOA TTL, MINIMUM)), additional is skipped but for checking it
 * holds at most one OPT, with the root owner. More than DNS_MAX_ANSWERS answers or more than
 * DNS_MAX_SECTION authority or additional records is -E2BIG. Every record must lie inside the
 * message and nothing may follow the last one (-EBADMSG). Names in skipped records are checked
 * for structure only (lengths, pointers), not for their bytes. TTLs with the top bit set read as
 * 0 (RFC 2181 8). On failure *r is zeroed.
 */
int dns_parse_response(const uint8_t *msg, size_t len, struct dns_response *r, char *why,
		       size_t why_len);

/*
 * Build a reply to q with rcode and the given answer records (CNAME, A, AAAA; others refused
 * with -EINVAL), names compressed against the question. max_len is the client's limit (512, its
 * EDNS size, or DNS_MSG_MAX over TCP): if the answers do not fit, as many whole records as fit
 * are kept and TC is set. An OPT record is echoed when the query had one. Flags: QR, RA, and RD
 * and CD copied from the query. Returns 0 and *out_len.
 *
 * out must hold max_len bytes (values above DNS_MSG_MAX are clamped). -EINVAL: a NULL argument,
 * rcode > 15, a class other than IN, an invalid name (a label empty, over 63 octets, or holding
 * '\\' or bytes outside 0x21..0x7e; the name over 253 characters). -E2BIG: n_answers over
 * DNS_MAX_ANSWERS. -ENOSPC: not even the header, question and OPT fit in max_len.
 */
int dns_build_reply(const struct dns_query *q, uint8_t rcode, const struct dns_rr *answers,
		    size_t n_answers, uint8_t *out, size_t max_len, size_t *out_len);

/*
 * Build the query sent upstream for q, with a new id, RD set, and EDNS (UDP size 1232, DO copied
 * from q). -EINVAL as for dns_build_reply(), -ENOSPC if cap is too small.
 */
int dns_build_query(const struct dns_query *q, uint16_t id, uint8_t *out, size_t cap,
		    size_t *out_len);

/*
 * Presentation name of a type for logs ("A", "AAAA", "TYPE99"). Known types return a constant
 * string and ignore buf; others are formatted into buf. NULL and errno (EINVAL, ENOSPC) if buf
 * is NULL or too small for them ("TYPE65535" needs 10 bytes).
 */
const char *dns_type_name(uint16_t type, char *buf, size_t len);

#endif /* SLUICE_DNS_H */
