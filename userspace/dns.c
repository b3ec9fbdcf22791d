// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * DNS wire format for the per-run resolver (see dns.h for the contract).
 *
 * Reading goes through a cursor (struct reader) whose every step checks the bytes it needs
 * against the end of the message before touching them; the end can be narrowed to a record's
 * rdata so a name inside rdata cannot run into the next record. Names are read iteratively: a
 * compression pointer must point strictly before the start of the label run that holds it, so
 * successive jumps go strictly backwards and cannot loop; a hop limit bounds the work besides.
 *
 * Writing goes through struct writer, which refuses to pass its capacity, and compresses names
 * against a table of the labels it has already written (each entry knows the entry for the rest
 * of its name, so a suffix is matched label by label, right to left, without decoding).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dns.h"

#define DNS_HDR_LEN 12
#define DNS_RR_FIXED 10		      /* type, class, TTL, rdlength after the owner */
#define DNS_RR_MIN (1 + DNS_RR_FIXED) /* root owner, empty rdata */
#define DNS_OPT_LEN DNS_RR_MIN	      /* the OPT record we write: root owner, no options */
#define DNS_WIRE_NAME_MAX 255	      /* RFC 1035 3.1, on the wire, root label included */
#define DNS_LABEL_MAX 63
#define DNS_LABELS_MAX 127 /* (255 - 1) / 2 */
#define DNS_PTR_HOPS_MAX 32
#define DNS_PTR_FLAG 0xc0
#define DNS_PTR_OFF_MAX 0x3fff
#define DNS_SOA_FIXED 20 /* serial, refresh, retry, expire, minimum */
#define DNS_EDNS_UDP_MAX 4096
#define DNS_EDNS_UDP_OURS 1232 /* the DNS flag day 2020 size: no IP fragmentation */
#define DNS_EDNS_DO 0x8000     /* in the low 16 bits of the OPT TTL */
#define DNS_TTL_MAX 0x7fffffffu
#define DNS_COMP_MAX 256 /* labels remembered for compression; later ones are written in full */

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct reader {
	const uint8_t *msg;
	size_t len; /* end of what may be read: the message, or a record's rdata */
	size_t off; /* always <= len */
	const char *why;
};

struct header {
	uint16_t id, flags, qdcount, ancount, nscount, arcount;
};

struct rr_hdr {
	size_t owner; /* offset of the owner name */
	uint16_t type;
	uint16_t rclass;
	uint32_t ttl;
	uint16_t rdlength;
	size_t rdata; /* offset of the rdata, rdlength bytes of which are inside the message */
};

static int fail(struct reader *r, int err, const char *why)
{
	r->why = why;
	return err;
}

/* Copy a reason into the caller's buffer; a reason cut short by a small buffer is still one. */
static void set_why(char *why, size_t why_len, const char *reason)
{
	size_t n;

	if (!why || !why_len)
		return;
	if (!reason)
		reason = "invalid";
	n = strnlen(reason, why_len - 1);
	memcpy(why, reason, n);
	why[n] = '\0';
}

static uint16_t load16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int get16(struct reader *r, uint16_t *v)
{
	if (r->len - r->off < 2)
		return fail(r, -EBADMSG, "message truncated");
	*v = load16(r->msg + r->off);
	r->off += 2;
	return 0;
}

/* RFC 2181 8: a TTL with the most significant bit set is to be read as zero. */
static uint32_t ttl_clamp(uint32_t ttl)
{
	return ttl > DNS_TTL_MAX ? 0 : ttl;
}

static bool label_byte_ok(uint8_t c)
{
	return c >= 0x21 && c <= 0x7e && c != '.' && c != '\\';
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/*
 * Read the name at r->off, leaving r->off after it as it sits there (after its root label or its
 * first pointer). With out, the name is stored in presentation form, lower-cased (and as cased in
 * orig, if given), and its labels must hold only printable bytes other than '.' and '\\'; without
 * out only its structure is checked. Both buffers hold DNS_NAME_MAX bytes.
 *
 * Bounds: a label is at most 63 bytes, the name at most 255 on the wire; a pointer must point
 * past the header and strictly before the start of the label run it ends (the name's start, or
 * the previous pointer's target), which makes every jump go backwards; at most 32 of them.
 */
static int read_name(struct reader *r, char *out, char *orig)
{
	size_t pos = r->off, run = r->off, end = 0, wire = 0, o = 0;
	unsigned int hops = 0;

	for (;;) {
		uint8_t c;

		if (pos >= r->len)
			return fail(r, -EBADMSG, "name truncated");
		c = r->msg[pos];
		if ((c & DNS_PTR_FLAG) == DNS_PTR_FLAG) {
			size_t target;

			if (r->len - pos < 2)
				return fail(r, -EBADMSG, "name truncated in a pointer");
			target = load16(r->msg + pos) & DNS_PTR_OFF_MAX;
			if (target < DNS_HDR_LEN)
				return fail(r, -EBADMSG, "compression pointer into the header");
			if (target >= run)
				return fail(r, -EBADMSG, "compression pointer not backwards");
			if (++hops > DNS_PTR_HOPS_MAX)
				return fail(r, -EBADMSG, "too many compression pointers");
			if (!end)
				end = pos + 2;
			pos = run = target;
			continue;
		}
		if (c & DNS_PTR_FLAG)
			return fail(r, -EBADMSG, "reserved label type");
		if (!c)
			break;
		/* c <= 63 and pos < len: neither sum can wrap. */
		if (r->len - pos - 1 < c)
			return fail(r, -EBADMSG, "name truncated in a label");
		/* This label, its length byte, and the root label still to come. */
		wire += 1 + (size_t)c;
		if (wire + 1 > DNS_WIRE_NAME_MAX)
			return fail(r, -EBADMSG, "name longer than 255 octets");
		if (out) {
			const uint8_t *l = r->msg + pos + 1;

			/* wire - 1 <= 253 characters are written, then the NUL: fits 254. */
			if (o) {
				out[o] = '.';
				if (orig)
					orig[o] = '.';
				o++;
			}
			for (size_t i = 0; i < c; i++) {
				if (!label_byte_ok(l[i]))
					return fail(r, -EBADMSG,
						    "label holds '.', '\\' or unprintable byte");
				out[o] = lower((char)l[i]);
				if (orig)
					orig[o] = (char)l[i];
				o++;
			}
		}
		pos += 1 + (size_t)c;
	}
	if (out) {
		out[o] = '\0';
		if (orig)
			orig[o] = '\0';
	}
	r->off = end ? end : pos + 1;
	return 0;
}

static int read_header(struct reader *r, struct header *h)
{
	if (r->len < DNS_HDR_LEN)
		return fail(r, -EBADMSG, "header truncated");
	if (r->len > DNS_MSG_MAX)
		return fail(r, -EBADMSG, "message longer than 65535 octets");
	h->id = load16(r->msg);
	h->flags = load16(r->msg + 2);
	h->qdcount = load16(r->msg + 4);
	h->ancount = load16(r->msg + 6);
	h->nscount = load16(r->msg + 8);
	h->arcount = load16(r->msg + 10);
	r->off = DNS_HDR_LEN;
	return 0;
}

/* The owner (stored if owner is not NULL), the fixed fields, and a check that the rdata fits. */
static int read_rr_hdr(struct reader *r, char *owner, struct rr_hdr *h)
{
	int err;

	h->owner = r->off;
	err = read_name(r, owner, NULL);
	if (err)
		return err;
	if (r->len - r->off < DNS_RR_FIXED)
		return fail(r, -EBADMSG, "record truncated");
	h->type = load16(r->msg + r->off);
	h->rclass = load16(r->msg + r->off + 2);
	h->ttl = load32(r->msg + r->off + 4);
	h->rdlength = load16(r->msg + r->off + 8);
	r->off += DNS_RR_FIXED;
	if (r->len - r->off < h->rdlength)
		return fail(r, -EBADMSG, "rdata truncated");
	h->rdata = r->off;
	return 0;
}

/* A cursor over just the rdata of h: names in it may point back anywhere, never past it. */
static struct reader rdata_reader(const struct reader *r, const struct rr_hdr *h)
{
	struct reader sub = {
		.msg = r->msg,
		.len = h->rdata + h->rdlength,
		.off = h->rdata,
	};

	return sub;
}

/* The OPT record of a query: root owner, version 0, options each inside the rdata. */
static int read_query_opt(struct reader *r, struct dns_query *q)
{
	struct reader opts;
	struct rr_hdr h;
	int err;

	if (r->off >= r->len)
		return fail(r, -EBADMSG, "additional record truncated");
	if (r->msg[r->off] != 0)
		return fail(r, -EBADMSG, "additional record is not an OPT with the root owner");
	err = read_rr_hdr(r, NULL, &h);
	if (err)
		return err;
	if (h.type != DNS_TYPE_OPT)
		return fail(r, -EBADMSG, "additional record is not an OPT");
	if ((h.ttl >> 16 & 0xff) != 0)
		return fail(r, -EBADMSG, "EDNS version not 0");
	opts = rdata_reader(r, &h);
	/* Options are code, length, value: each must end inside the rdata. */
	while (opts.off < opts.len) {
		uint16_t olen;

		if (opts.len - opts.off < 4)
			return fail(r, -EBADMSG, "EDNS option truncated");
		olen = load16(opts.msg + opts.off + 2);
		opts.off += 4;
		if (opts.len - opts.off < olen)
			return fail(r, -EBADMSG, "EDNS option truncated");
		opts.off += olen;
	}
	q->edns = true;
	q->edns_udp_size = h.rclass < DNS_UDP_MIN	 ? DNS_UDP_MIN
			   : h.rclass > DNS_EDNS_UDP_MAX ? DNS_EDNS_UDP_MAX
							 : h.rclass;
	q->edns_do = h.ttl & DNS_EDNS_DO;
	r->off = h.rdata + h.rdlength;
	return 0;
}

/*
 * The end of a parse: a message must be used up exactly; on any failure the output is wiped (a
 * half-filled struct is never handed on) and the reason reported.
 */
static int parse_end(struct reader *r, int err, void *out, size_t out_size, char *why,
		     size_t why_len)
{
	if (!err && r->off != r->len) {
		err = -EBADMSG;
		r->why = "trailing bytes after the message";
	}
	if (err) {
		memset(out, 0, out_size);
		set_why(why, why_len, r->why);
	}
	return err;
}

int dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q, char *why, size_t why_len)
{
	struct reader r = {.msg = msg, .len = len};
	struct header h;
	int err;

	if (!q || (!msg && len)) {
		set_why(why, why_len, "invalid argument");
		return -EINVAL;
	}
	memset(q, 0, sizeof(*q));
	err = read_header(&r, &h);
	if (err)
		goto out;
	err = -EBADMSG;
	if (h.flags & DNS_FLAG_QR) {
		r.why = "QR set in a query";
		goto out;
	}
	if (DNS_OPCODE(h.flags) != 0) {
		r.why = "opcode not QUERY";
		goto out;
	}
	if (h.qdcount != 1) {
		r.why = "qdcount not 1";
		goto out;
	}
	if (h.ancount || h.nscount) {
		r.why = "answer or authority records in a query";
		goto out;
	}
	if (h.arcount > 1) {
		r.why = "more than one additional record in a query";
		goto out;
	}
	q->id = h.id;
	q->flags = h.flags;
	err = read_name(&r, q->name, q->name_orig);
	if (err)
		goto out;
	err = get16(&r, &q->qtype);
	if (!err)
		err = get16(&r, &q->qclass);
	if (err) {
		r.why = "question truncated";
		goto out;
	}
	err = -EBADMSG;
	if (q->qclass != DNS_CLASS_IN) {
		r.why = "class not IN";
		goto out;
	}
	if (q->qtype == DNS_TYPE_OPT) {
		r.why = "qtype OPT";
		goto out;
	}
	if (h.arcount) {
		err = read_query_opt(&r, q);
		if (err)
			goto out;
	}
	err = 0;
out:
	return parse_end(&r, err, q, sizeof(*q), why, why_len);
}

static int read_answer(struct reader *r, struct dns_rr *rr)
{
	struct reader rd;
	struct rr_hdr h;
	int err;

	err = read_rr_hdr(r, rr->name, &h);
	if (err)
		return err;
	rr->type = h.type;
	rr->rclass = h.rclass;
	rr->ttl = ttl_clamp(h.ttl);
	switch (h.type) {
	case DNS_TYPE_A:
		if (h.rdlength != sizeof(rr->data.a))
			return fail(r, -EBADMSG, "A rdlength not 4");
		memcpy(rr->data.a, r->msg + h.rdata, sizeof(rr->data.a));
		rr->decoded = true;
		break;
	case DNS_TYPE_AAAA:
		if (h.rdlength != sizeof(rr->data.aaaa))
			return fail(r, -EBADMSG, "AAAA rdlength not 16");
		memcpy(rr->data.aaaa, r->msg + h.rdata, sizeof(rr->data.aaaa));
		rr->decoded = true;
		break;
	case DNS_TYPE_CNAME:
		rd = rdata_reader(r, &h);
		err = read_name(&rd, rr->data.target, NULL);
		if (err)
			return fail(r, err, rd.why);
		if (rd.off != rd.len)
			return fail(r, -EBADMSG, "CNAME rdata longer than its name");
		rr->decoded = true;
		break;
	case DNS_TYPE_OPT:
		return fail(r, -EBADMSG, "OPT record outside the additional section");
	default:
		break;
	}
	r->off = h.rdata + h.rdlength;
	return 0;
}

/* An authority record: an SOA lowers *soa_ttl to min(TTL, MINIMUM); others are skipped. */
static int read_authority(struct reader *r, uint32_t *soa_ttl, bool *have_soa)
{
	struct reader rd;
	struct rr_hdr h;
	uint32_t minimum, ttl;
	int err;

	err = read_rr_hdr(r, NULL, &h);
	if (err)
		return err;
	if (h.type == DNS_TYPE_OPT)
		return fail(r, -EBADMSG, "OPT record outside the additional section");
	if (h.type == DNS_TYPE_SOA) {
		rd = rdata_reader(r, &h);
		err = read_name(&rd, NULL, NULL);
		if (!err)
			err = read_name(&rd, NULL, NULL);
		if (err)
			return fail(r, err, rd.why);
		if (rd.len - rd.off != DNS_SOA_FIXED)
			return fail(r, -EBADMSG, "SOA rdata length wrong");
		minimum = ttl_clamp(load32(r->msg + rd.off + DNS_SOA_FIXED - 4));
		ttl = ttl_clamp(h.ttl);
		if (minimum < ttl)
			ttl = minimum;
		if (!*have_soa || ttl < *soa_ttl)
			*soa_ttl = ttl;
		*have_soa = true;
	}
	r->off = h.rdata + h.rdlength;
	return 0;
}

/* An additional record: skipped, but an OPT must be the only one and have the root owner. */
static int read_additional(struct reader *r, unsigned int *n_opt)
{
	struct rr_hdr h;
	int err;

	err = read_rr_hdr(r, NULL, &h);
	if (err)
		return err;
	if (h.type == DNS_TYPE_OPT) {
		if (r->msg[h.owner] != 0)
			return fail(r, -EBADMSG, "OPT owner not the root");
		if (++*n_opt > 1)
			return fail(r, -EBADMSG, "more than one OPT record");
	}
	r->off = h.rdata + h.rdlength;
	return 0;
}

int dns_parse_response(const uint8_t *msg, size_t len, struct dns_response *resp, char *why,
		       size_t why_len)
{
	struct reader r = {.msg = msg, .len = len};
	unsigned int n_opt = 0;
	bool have_soa = false;
	struct header h;
	size_t i;
	int err;

	if (!resp || (!msg && len)) {
		set_why(why, why_len, "invalid argument");
		return -EINVAL;
	}
	memset(resp, 0, sizeof(*resp));
	err = read_header(&r, &h);
	if (err)
		goto out;
	err = -EBADMSG;
	if (!(h.flags & DNS_FLAG_QR)) {
		r.why = "QR clear in a response";
		goto out;
	}
	if (DNS_OPCODE(h.flags) != 0) {
		r.why = "opcode not QUERY";
		goto out;
	}
	if (h.qdcount != 1) {
		r.why = "qdcount not 1";
		goto out;
	}
	resp->id = h.id;
	resp->flags = h.flags;
	err = read_name(&r, resp->qname, NULL);
	if (err)
		goto out;
	err = get16(&r, &resp->qtype);
	if (!err)
		err = get16(&r, &resp->qclass);
	if (err) {
		r.why = "question truncated";
		goto out;
	}
	/* Counts first against what the message could hold at all, then against the caps. */
	err = -EBADMSG;
	if (((size_t)h.ancount + h.nscount + h.arcount) * DNS_RR_MIN > r.len - r.off) {
		r.why = "record counts exceed the message";
		goto out;
	}
	err = -E2BIG;
	if (h.ancount > DNS_MAX_ANSWERS) {
		r.why = "more than 64 answer records";
		goto out;
	}
	if (h.nscount > DNS_MAX_SECTION || h.arcount > DNS_MAX_SECTION) {
		r.why = "more than 64 authority or additional records";
		goto out;
	}
	for (i = 0; i < h.ancount; i++) {
		err = read_answer(&r, &resp->answers[i]);
		if (err)
			goto out;
	}
	resp->n_answers = h.ancount;
	for (i = 0; i < h.nscount; i++) {
		err = read_authority(&r, &resp->min_ttl_soa, &have_soa);
		if (err)
			goto out;
	}
	for (i = 0; i < h.arcount; i++) {
		err = read_additional(&r, &n_opt);
		if (err)
			goto out;
	}
	err = 0;
out:
	return parse_end(&r, err, resp, sizeof(*resp), why, why_len);
}

/* Building. */

struct comp_entry {
	uint16_t off;	 /* where the label's length byte was written */
	int16_t next;	 /* entry of the rest of the name, -1 for the root */
	int16_t sibling; /* the entry added before it with the same rest, or -1 */
	int16_t child;	 /* the latest entry whose rest is this one, or -1 */
	uint8_t depth;	 /* pointers a reader follows from this label to the root */
};

struct writer {
	uint8_t *buf;
	size_t len;
	size_t cap;
	struct comp_entry comp[DNS_COMP_MAX];
	size_t n_comp;
	int16_t root_child; /* the latest entry whose rest is the root, or -1 */
};

static void writer_init(struct writer *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->len = 0;
	w->cap = cap > DNS_MSG_MAX ? DNS_MSG_MAX : cap;
	w->n_comp = 0;
	w->root_child = -1;
}

/* The list of entries whose rest is entry (-1: the root), newest first. */
static int16_t *comp_children(struct writer *w, int entry)
{
	return entry < 0 ? &w->root_child : &w->comp[entry].child;
}

/* Forget the entries from n on, newest first: each is the head of its list when it goes. */
static void comp_truncate(struct writer *w, size_t n)
{
	while (w->n_comp > n) {
		const struct comp_entry *e = &w->comp[--w->n_comp];

		*comp_children(w, e->next) = e->sibling;
	}
}

/* A presentation name in wire form, uncompressed. */
struct wire_name {
	uint8_t b[DNS_WIRE_NAME_MAX];
	size_t len;
	uint8_t starts[DNS_LABELS_MAX]; /* offset in b of each label's length byte */
	size_t n_labels;
};

/* Validate a presentation name (no trailing dot, "" for the root) and convert it. */
static int name_to_wire(const char *name, struct wire_name *w)
{
	size_t n = strnlen(name, DNS_NAME_MAX), i = 0;

	if (n >= DNS_NAME_MAX)
		return -EINVAL;
	w->len = 0;
	w->n_labels = 0;
	while (i < n) {
		size_t l = 0;

		while (i + l < n && name[i + l] != '.')
			l++;
		if (!l || l > DNS_LABEL_MAX)
			return -EINVAL;
		/* n <= 253 and n + 2 <= 255, so neither the label nor the root overflow b. */
		w->starts[w->n_labels++] = (uint8_t)w->len;
		w->b[w->len++] = (uint8_t)l;
		for (size_t j = 0; j < l; j++) {
			uint8_t c = (uint8_t)name[i + j];

			if (!label_byte_ok(c))
				return -EINVAL;
			w->b[w->len++] = c;
		}
		i += l;
		if (i < n && ++i == n) /* a trailing dot is an empty last label */
			return -EINVAL;
	}
	w->b[w->len++] = 0;
	return 0;
}

static int put(struct writer *w, const void *p, size_t n)
{
	if (w->cap - w->len < n)
		return -ENOSPC;
	memcpy(w->buf + w->len, p, n);
	w->len += n;
	return 0;
}

static int put16(struct writer *w, uint16_t v)
{
	uint8_t b[2] = {v >> 8, v & 0xff};

	return put(w, b, sizeof(b));
}

static int put32(struct writer *w, uint32_t v)
{
	uint8_t b[4] = {v >> 24, v >> 16 & 0xff, v >> 8 & 0xff, v & 0xff};

	return put(w, b, sizeof(b));
}

static bool label_equal(const uint8_t *a, const uint8_t *b)
{
	if (a[0] != b[0])
		return false;
	for (size_t i = 1; i <= a[0]; i++)
		if (lower((char)a[i]) != lower((char)b[i]))
			return false;
	return true;
}

/*
 * Write name, compressed: find the longest suffix already written (label by label from the
 * right, each label's entry pointing at the entry of the rest), write the labels before it and
 * a pointer to it, or the whole name with its root label. The labels written are remembered
 * while the table has room and their offset fits a pointer.
 *
 * Pointing at a suffix costs one hop more than reaching the root from it already does, so a
 * suffix that is itself DNS_PTR_HOPS_MAX pointers deep is not used: names each one label longer
 * than the last would otherwise chain a pointer per name, past what any reader (ours included)
 * follows. Depth never decreases as the suffix grows, so the first too deep one ends the search.
 */
static int put_name(struct writer *w, const struct wire_name *n)
{
	size_t split = n->n_labels, start = w->len, i;
	unsigned int depth;
	int match = -1, err;

	while (split > 0) {
		const uint8_t *label = n->b + n->starts[split - 1];
		int found = -1;

		/* A label written again after a too deep match has twins: take the shallowest. */
		for (int e = *comp_children(w, match); e >= 0; e = w->comp[e].sibling) {
			if ((found < 0 || w->comp[e].depth <= w->comp[found].depth) &&
			    label_equal(w->buf + w->comp[e].off, label))
				found = e;
		}
		if (found < 0 || w->comp[found].depth >= DNS_PTR_HOPS_MAX)
			break;
		match = found;
		split--;
	}
	if (match < 0) {
		err = put(w, n->b, n->len);
	} else {
		size_t head = n->starts[split]; /* the labels before the match */

		if (w->cap - w->len < head + 2)
			return -ENOSPC;
		err = put(w, n->b, head);
		if (!err)
			err = put16(w, (uint16_t)(DNS_PTR_FLAG << 8 | w->comp[match].off));
	}
	if (err)
		return err;
	/* Remember the labels just written, right to left, each pointing at the one after it. */
	depth = match < 0 ? 0 : w->comp[match].depth + 1;
	for (i = split; i > 0; i--) {
		size_t off = start + n->starts[i - 1];

		if (w->n_comp >= DNS_COMP_MAX || off > DNS_PTR_OFF_MAX)
			break;
		w->comp[w->n_comp] = (struct comp_entry){
			.off = (uint16_t)off,
			.next = (int16_t)match,
			.sibling = *comp_children(w, match),
			.child = -1,
			.depth = (uint8_t)depth,
		};
		*comp_children(w, match) = (int16_t)w->n_comp;
		match = (int)w->n_comp++;
	}
	return 0;
}

static void patch16(struct writer *w, size_t off, uint16_t v)
{
	w->buf[off] = v >> 8;
	w->buf[off + 1] = v & 0xff;
}

static int put_header(struct writer *w, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an,
		      uint16_t ns, uint16_t ar)
{
	int err = put16(w, id);

	if (!err)
		err = put16(w, flags);
	if (!err)
		err = put16(w, qd);
	if (!err)
		err = put16(w, an);
	if (!err)
		err = put16(w, ns);
	if (!err)
		err = put16(w, ar);
	return err;
}

static int put_question(struct writer *w, const struct wire_name *name, uint16_t qtype)
{
	int err = put_name(w, name);

	if (!err)
		err = put16(w, qtype);
	if (!err)
		err = put16(w, DNS_CLASS_IN);
	return err;
}

static int put_opt(struct writer *w, bool edns_do)
{
	int err = put(w, "", 1); /* root owner */

	if (!err)
		err = put16(w, DNS_TYPE_OPT);
	if (!err)
		err = put16(w, DNS_EDNS_UDP_OURS);
	if (!err)
		err = put32(w, edns_do ? DNS_EDNS_DO : 0); /* extended rcode 0, version 0 */
	if (!err)
		err = put16(w, 0);
	return err;
}

/* One answer record, whole or not at all (the caller rolls back on -ENOSPC). */
static int put_answer(struct writer *w, const struct dns_rr *rr, const struct wire_name *owner,
		      const struct wire_name *target)
{
	size_t rdlen_off;
	int err;

	err = put_name(w, owner);
	if (!err)
		err = put16(w, rr->type);
	if (!err)
		err = put16(w, DNS_CLASS_IN);
	if (!err)
		err = put32(w, rr->ttl);
	rdlen_off = w->len;
	if (!err)
		err = put16(w, 0);
	if (err)
		return err;
	switch (rr->type) {
	case DNS_TYPE_A:
		err = put(w, rr->data.a, sizeof(rr->data.a));
		break;
	case DNS_TYPE_AAAA:
		err = put(w, rr->data.aaaa, sizeof(rr->data.aaaa));
		break;
	default: /* CNAME, checked by the caller */
		err = put_name(w, target);
		break;
	}
	if (err)
		return err;
	/* At most 255 bytes of rdata. */
	patch16(w, rdlen_off, (uint16_t)(w->len - rdlen_off - 2));
	return 0;
}

/* The question's name: as the client cased it if that is consistent, else as parsed. */
static int question_name(const struct dns_query *q, struct wire_name *n)
{
	size_t len = strnlen(q->name, DNS_NAME_MAX);

	if (len < DNS_NAME_MAX && strnlen(q->name_orig, DNS_NAME_MAX) == len && len &&
	    !strncasecmp(q->name, q->name_orig, len) && !name_to_wire(q->name_orig, n))
		return 0;
	return name_to_wire(q->name, n);
}

int dns_build_reply(const struct dns_query *q, uint8_t rcode, const struct dns_rr *answers,
		    size_t n_answers, uint8_t *out, size_t max_len, size_t *out_len)
{
	struct wire_name qname, owner, target;
	struct writer w;
	uint16_t flags;
	size_t i, reserve, kept = 0;
	int err;

	if (!q || !out || !out_len || rcode > 0xf || (n_answers && !answers))
		return -EINVAL;
	if (n_answers > DNS_MAX_ANSWERS)
		return -E2BIG;
	if (q->qclass != DNS_CLASS_IN || q->qtype == DNS_TYPE_OPT)
		return -EINVAL;
	err = question_name(q, &qname);
	if (err)
		return err;
	/* Every record is checked before any is written: the outcome does not depend on max_len. */
	for (i = 0; i < n_answers; i++) {
		const struct dns_rr *rr = &answers[i];

		if (rr->type != DNS_TYPE_A && rr->type != DNS_TYPE_AAAA &&
		    rr->type != DNS_TYPE_CNAME)
			return -EINVAL;
		if (rr->rclass != DNS_CLASS_IN || name_to_wire(rr->name, &owner))
			return -EINVAL;
		if (rr->type == DNS_TYPE_CNAME && name_to_wire(rr->data.target, &target))
			return -EINVAL;
	}

	if (max_len > DNS_MSG_MAX)
		max_len = DNS_MSG_MAX;
	/* The OPT record is written last, into room kept for it from the start. */
	reserve = q->edns ? DNS_OPT_LEN : 0;
	if (max_len < reserve)
		return -ENOSPC;
	writer_init(&w, out, max_len - reserve);
	flags = DNS_FLAG_QR | DNS_FLAG_RA | (q->flags & (DNS_FLAG_RD | DNS_FLAG_CD)) | rcode;
	err = put_header(&w, q->id, flags, 1, 0, 0, q->edns);
	if (!err)
		err = put_question(&w, &qname, q->qtype);
	if (err)
		return err;
	for (i = 0; i < n_answers; i++) {
		size_t len = w.len, n_comp = w.n_comp;

		name_to_wire(answers[i].name, &owner); /* checked above */
		if (answers[i].type == DNS_TYPE_CNAME)
			name_to_wire(answers[i].data.target, &target);
		err = put_answer(&w, &answers[i], &owner, &target);
		if (err == -ENOSPC) {
			/* Drop the partial record and what it taught the compressor. */
			w.len = len;
			comp_truncate(&w, n_comp);
			flags |= DNS_FLAG_TC;
			break;
		}
		if (err)
			return err;
		kept++;
	}
	w.cap = max_len;
	if (q->edns) {
		err = put_opt(&w, q->edns_do);
		if (err)
			return err;
	}
	patch16(&w, 2, flags);
	patch16(&w, 6, (uint16_t)kept);
	*out_len = w.len;
	return 0;
}

int dns_build_query(const struct dns_query *q, uint16_t id, uint8_t *out, size_t cap,
		    size_t *out_len)
{
	struct wire_name qname;
	struct writer w;
	int err;

	if (!q || !out || !out_len)
		return -EINVAL;
	if (q->qclass != DNS_CLASS_IN || q->qtype == DNS_TYPE_OPT)
		return -EINVAL;
	err = name_to_wire(q->name, &qname);
	if (err)
		return err;
	writer_init(&w, out, cap);
	err = put_header(&w, id, DNS_FLAG_RD, 1, 0, 0, 1);
	if (!err)
		err = put_question(&w, &qname, q->qtype);
	if (!err)
		err = put_opt(&w, q->edns_do);
	if (err)
		return err;
	*out_len = w.len;
	return 0;
}

const char *dns_type_name(uint16_t type, char *buf, size_t len)
{
	static const struct {
		uint16_t type;
		const char *name;
	} names[] = {
		{DNS_TYPE_A, "A"},
		{DNS_TYPE_NS, "NS"},
		{DNS_TYPE_CNAME, "CNAME"},
		{DNS_TYPE_SOA, "SOA"},
		{DNS_TYPE_PTR, "PTR"},
		{DNS_TYPE_MX, "MX"},
		{DNS_TYPE_TXT, "TXT"},
		{DNS_TYPE_AAAA, "AAAA"},
		{DNS_TYPE_SRV, "SRV"},
		{DNS_TYPE_OPT, "OPT"},
		{DNS_TYPE_SVCB, "SVCB"},
		{DNS_TYPE_HTTPS, "HTTPS"},
		{DNS_TYPE_ANY, "ANY"},
		{13, "HINFO"},
		{35, "NAPTR"},
		{39, "DNAME"},
		{43, "DS"},
		{46, "RRSIG"},
		{47, "NSEC"},
		{48, "DNSKEY"},
		{50, "NSEC3"},
		{51, "NSEC3PARAM"},
		{52, "TLSA"},
		{99, "SPF"},
		{250, "TSIG"},
		{251, "IXFR"},
		{252, "AXFR"},
		{257, "CAA"},
	};
	int n;

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].type == type)
			return names[i].name;
	if (!buf || !len) {
		errno = EINVAL;
		return NULL;
	}
	n = snprintf(buf, len, "TYPE%u", type);
	if (n < 0 || (size_t)n >= len) {
		errno = ENOSPC;
		return NULL;
	}
	return buf;
}
