// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The lines of a run's log, in the words a reader needs: each record of the kernel, each query
 * the run's resolver answered, each loss the kernel counted, and the end of the run. Denials are
 * also said on stderr as they happen, and the policy's alert_on conditions raised.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include "../bpf/addr.bpf.h"
#include "decision.h"
#include "hosttotals.h"
#include "records.h"
#include "util.h"

/*
 * Kernel-record lines given to the journal whose place in the file is not known yet (still in
 * its buffer): a line counts as logged only once the file holds it.
 */
#define PENDING_MAX 4096

/* The kernel sequence numbers that have a line, and the first ranges of those that have none. */
struct records_kseqs {
	struct seqset set;
	struct seqset_list missing;
	struct {
		uint64_t seq, kseq; /* the line's seq, the record's kseq */
	} pending[PENDING_MAX];
	size_t head, n;
};

static struct timespec boot_to_realtime(const struct records *r, uint64_t boot_ns)
{
	int64_t real = (int64_t)boot_ns + r->boot_to_real_ns;
	struct timespec ts = { .tv_sec = real / 1000000000, .tv_nsec = real % 1000000000 };

	return ts;
}

/* Terminal-safe copy for stderr: control characters become '?'. */
static void safe_text(char *out, size_t len, const char *in)
{
	size_t i;

	for (i = 0; i + 1 < len && in[i]; i++)
		out[i] = (unsigned char)in[i] < 0x20 || in[i] == 0x7f ? '?' : in[i];
	out[i] = '\0';
}

/* A notice for stderr, built whole and written with one write(): threads never interleave. */
struct notice {
	char buf[2048];
	size_t len;
};

static void notice_add(struct notice *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void notice_add(struct notice *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (n->len >= sizeof(n->buf) - 1)
		return;
	va_start(ap, fmt);
	k = vsnprintf(n->buf + n->len, sizeof(n->buf) - n->len, fmt, ap);
	va_end(ap);
	/* Truncated notices are still written: a cut line beats no line. */
	if (k > 0)
		n->len = n->len + (size_t)k < sizeof(n->buf) ? n->len + (size_t)k : sizeof(n->buf) - 1;
}

/* request_access with {host} replaced by the percent-encoded destination. */
static void notice_request_access(struct notice *n, const char *tmpl, const char *host)
{
	static const char unreserved[] = "-._~";
	const char *p;

	notice_add(n, "to request access: ");
	for (p = tmpl; *p; p++) {
		const char *h;

		if (strncmp(p, "{host}", 6)) {
			notice_add(n, "%c", (unsigned char)*p < 0x20 ? '?' : *p);
			continue;
		}
		for (h = host; *h; h++) {
			if (isalnum((unsigned char)*h) || strchr(unreserved, *h))
				notice_add(n, "%c", *h);
			else
				notice_add(n, "%%%02X", (unsigned char)*h);
		}
		p += 5;
	}
	notice_add(n, "\n");
}

static void notice_write(struct notice *n)
{
	/* a truncated notice still ends its line */
	if (n->len && n->buf[n->len - 1] != '\n')
		n->buf[n->len - 1] = '\n';
	if (write(STDERR_FILENO, n->buf, n->len) < 0)
		return; /* stderr gone: the log still has every line */
}


/*
 * An alert_on condition held: the alert goes to stderr, into the log, and to --alerts, a
 * stream a security team can tail apart from the run's own output.
 */
static void raise_alert(struct records *r, const char *condition, const char *what)
{
	struct journal_line l;
	struct timespec now;
	struct notice n = { .len = 0 };

	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "alert", &now);
	journal_line_str(&l, "condition", condition);
	journal_line_str(&l, "what", what);
	if (r->alerts_fd >= 0 && !journal_line_finish(&l)) {
		/* one write per line, O_APPEND: tailing readers never see half of one */
		if (write(r->alerts_fd, l.buf, l.len) != (ssize_t)l.len)
			fprintf(stderr, "sluice: writing alerts %s: %s\n", r->alerts_path,
				strerror(errno));
		l.len -= 2; /* reopen the object for the log's own copy */
	}
	records_write(r, &l);
	notice_add(&n, "sluice alert (%s): %s\n", condition, what);
	notice_write(&n);
}

/* A denial's notice, and the "deny" alerts it raises (its first line says what was denied). */
static void notice_denial(struct records *r, struct notice *n)
{
	char first[512];
	size_t i, len;

	notice_write(n);
	len = strcspn(n->buf, "\n");
	if (len >= sizeof(first))
		len = sizeof(first) - 1;
	memcpy(first, n->buf, len);
	first[len] = '\0';
	for (i = 0; i < r->policy->n_alert_on; i++)
		if (r->policy->alerts[i].kind == POLICY_ALERT_DENY)
			raise_alert(r, r->policy->alert_on[i], first);
}

void records_journal_error(struct records *r, int err)
{
	if (r->journal_failed)
		return;
	r->journal_failed = true;
	fprintf(stderr, "sluice: writing log %s: %s; %s\n", r->log_path, strerror(-err),
		r->strict ? "--strict-evidence: new connections are refused from now on" :
			    "enforcement continues, what cannot be written is counted");
}

void records_log_failed(int err, void *ctx)
{
	struct records *r = ctx;
	struct loader *lo = __atomic_load_n(&r->loader, __ATOMIC_ACQUIRE);
	int e;

	(void)err;
	__atomic_store_n(&r->log_broke, true, __ATOMIC_RELAXED);
	/* the decision layer refuses at once (with --strict-evidence), whichever thread wrote */
	e = lo ? loader_log_unwritable(lo) : -ENODEV;
	if (e && r->strict)
		fprintf(stderr, "sluice: cannot tell the decision layer that the log failed: %s\n",
			strerror(-e));
}

void records_line(struct records *r, struct journal_line *l, const char *type,
		  const struct timespec *ts)
{
	journal_line_begin(l, type, ts);
	journal_line_str(l, "run_id", r->run_id);
	journal_line_str(l, "task", r->task);
}

static void kseq_logged(struct records *r, uint64_t kseq);
static void kseqs_settle(struct records *r);

/* A kernel record's line, given the seq: logged once the file holds that seq (kseqs_settle). */
static void kseq_pending(struct records *r, uint64_t seq, uint64_t kseq)
{
	struct records_kseqs *k = r->kseqs;

	if (k->n == PENDING_MAX) {
		kseqs_settle(r);
		if (k->n == PENDING_MAX) {
			journal_flush(r->journal);
			kseqs_settle(r);
		}
	}
	k->pending[(k->head + k->n) % PENDING_MAX].seq = seq;
	k->pending[(k->head + k->n) % PENDING_MAX].kseq = kseq;
	k->n++;
}

/*
 * The pending lines the file now holds are logged; while the log has failed, the rest never
 * will be (the journal cut them off or refused them): the records are unwritten. The journal
 * goes on only through declare_unwritten, on this thread, after a settle: a seq it hands out
 * again then is never confused with a line that was cut off.
 */
static void kseqs_settle(struct records *r)
{
	struct records_kseqs *k = r->kseqs;
	/*
	 * The failure first: a failed log's file does not grow (only journal_retry, on this
	 * thread, ends a failure), so every line it lacks then is lost. Read the other way
	 * round, lines a flush wrote between the two reads would be taken for lost.
	 */
	bool failed = journal_failure(r->journal, NULL) != 0;
	uint64_t written = journal_lines_written(r->journal);

	while (k->n && k->pending[k->head].seq < written) {
		uint64_t kseq = k->pending[k->head].kseq;

		k->head = (k->head + 1) % PENDING_MAX;
		k->n--;
		kseq_logged(r, kseq);
	}
	while (failed && k->n) {
		k->head = (k->head + 1) % PENDING_MAX;
		k->n--;
		r->unwritten++;
	}
}

/*
 * Write l; kseq: the sequence number of the kernel record it is the line of, or NULL. Returns
 * 0 or the journal's error (the line is then not in the log).
 */
static int write_record(struct records *r, struct journal_line *l, const uint64_t *kseq)
{
	struct journal_line a, *w = l;
	int err = journal_write(r->journal, l);

	if (err == -E2BIG) {
		/* The record does not fit a line: say so in one that does, never drop it silently. */
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		records_line(r, &a, "anomaly", &now);
		journal_line_str(&a, "what", "record too long for a log line");
		journal_line_u64(&a, "size", l->len);
		if (kseq)
			journal_line_u64(&a, "kseq", *kseq); /* the record's line is this one */
		err = journal_write(r->journal, &a);
		w = &a;
	}
	/* refused or cut off, the line's seq says where it stands: kseqs_settle tells */
	if (kseq && err != -E2BIG)
		kseq_pending(r, w->seq, *kseq);
	if (err)
		records_journal_error(r, err);
	return err;
}

int records_write(struct records *r, struct journal_line *l)
{
	return write_record(r, l, NULL);
}

/* A kernel record's line: its "kseq" last, and the number noted as having a line. */
static void write_kernel_line(struct records *r, struct journal_line *l, uint64_t kseq)
{
	journal_line_u64(l, "kseq", kseq);
	write_record(r, l, &kseq);
}

/*
 * kseq has its line. The numbers that never get one are listed at the end (loss_ranges); one
 * that comes twice, or too late to be told from a lost one, is an anomaly (and makes the log
 * fail verification at its line).
 */
static void kseq_logged(struct records *r, uint64_t kseq)
{
	struct journal_line l;
	struct timespec now;
	int err = seqset_add(&r->kseqs->set, kseq);

	if (!err)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "anomaly", &now);
	journal_line_str(&l, "what", err == -EEXIST ? "kernel sequence number seen twice" :
				     "kernel sequence number repeated or too far out of order");
	journal_line_u64(&l, "record_kseq", kseq);
	records_write(r, &l);
}

/*
 * A denied or cut TCP flow whose socket is to be ended, and its record's line, written once the
 * line can say what became of it (records_kill_queued).
 */
struct records_kill {
	uint64_t cookie, kseq;
	uint32_t tgid;
	int err; /* the kill's result, once done */
	struct journal_line *line;
};

/* at most this many wait for the end of a drain; a full queue is ended at once */
#define KILLS_MAX 256

static int kill_now(struct records *r, uint64_t cookie, uint32_t tgid)
{
	return r->kill_socket ? r->kill_socket(r->kill_ctx, cookie, tgid) : -EOPNOTSUPP;
}

/* What became of the flow, for the log's "flow": "destroyed" only if a socket was. */
static const char *kill_outcome(int err)
{
	return !err ? "destroyed" :
	       err == -ENOENT ? "closed before it could be destroyed" :
	       err == -EOPNOTSUPP ? "dropped (kernel cannot destroy sockets)" : "dropped";
}

/*
 * l, the line of kernel record kseq, names a TCP flow whose socket is to be ended: queued, and
 * written by records_kill_queued with what became of it. The packet layer drops the flow's
 * packets meanwhile; ending the socket only makes the client fail now rather than after its
 * retransmissions give up.
 */
static void kill_flow(struct records *r, uint64_t cookie, uint32_t tgid, struct journal_line *l,
		      uint64_t kseq)
{
	struct records_kill *k = NULL;

	if (r->n_kills == KILLS_MAX)
		records_kill_queued(r);
	if (!r->kills && r->kill_socket)
		r->kills = calloc(KILLS_MAX, sizeof(*r->kills));
	if (r->kills && r->kill_socket) {
		k = &r->kills[r->n_kills];
		k->line = malloc(sizeof(*l));
	}
	if (!k || !k->line) {
		/* nothing to end it with, or no memory to wait: here */
		journal_line_str(l, "flow", kill_outcome(kill_now(r, cookie, tgid)));
		write_kernel_line(r, l, kseq);
		return;
	}
	memcpy(k->line, l, sizeof(*l));
	k->cookie = cookie;
	k->tgid = tgid;
	k->kseq = kseq;
	r->n_kills++;
}

/*
 * The first record a resumed writer reads, if it is the dead writer's last kernel-record line
 * (records_restore_line): that writer died after the line was on disk, before libbpf moved past
 * the record. Only the first, and only with every field of its mark equal.
 */
static bool written_before(struct records *r, const char *type, uint64_t kseq, uint64_t cookie,
			   uint64_t pid, uint64_t port, const char *dst)
{
	const struct records_mark *m = &r->last;

	if (!r->check_first)
		return false;
	r->check_first = false;
	return !strcmp(m->type, type) && m->kseq == kseq && m->cookie == cookie && m->pid == pid &&
	       m->port == port && !strcmp(m->dst, dst);
}

static const struct policy *policy_of_era(const struct records *r, uint32_t era, uint64_t ns,
					  int *mode);

/*
 * The host of a line about a learned destination. The kernel's record names one name per
 * address (sl_learned.host_id: the one the run's byte budgets count it under, the first it was
 * answered for), but an address a CDN serves for several names may have been connected to for
 * any of them: the line names a host only when the address had been answered for that one
 * name by the record's time (at_ns, CLOCK_BOOTTIME), and otherwise lists such names, the
 * kernel's first, in "hosts" ("host" null), and how many it does not list in "hosts_more".
 * Never a guess. The list is bounded twice: HOSTS_LISTED names, and HOSTS_BYTES of log line
 * (a name is up to 253 bytes, each of which JSON may write as 6), so that a line that lists
 * them still fits JOURNAL_LINE_MAX with everything else it says.
 */
#define HOSTS_LISTED 16
#define HOSTS_BYTES 2048
_Static_assert(HOSTS_LISTED < HOSTNAMES_KEPT, "the kernel's name and 16 others are kept");
_Static_assert(HOSTS_BYTES >= 2 + 6 * (DNS_NAME_MAX - 1), "the kernel's name always fits");

struct line_hosts {
	const char *host;	      /* the one name, or NULL: none, or several */
	char *hosts[HOSTS_LISTED];    /* several: those listed (HOSTS_LISTED, HOSTS_BYTES) */
	size_t n_hosts;
	size_t more;		      /* several: how many are not listed */
	char names[HOSTS_LISTED][DNS_NAME_MAX];
};

static void line_hosts_of(struct records *r, struct line_hosts *lh, uint32_t host_id, int family,
			  const uint8_t *addr, uint64_t at_ns)
{
	uint32_t ids[HOSTNAMES_KEPT];
	uint8_t key[16];
	size_t n, listed, i, total, fit;
	bool kernels_indexed = false;

	lh->n_hosts = 0;
	lh->more = 0;
	lh->host = hostnames_name(r->hosts, host_id, lh->names[0], sizeof(lh->names[0]));
	if (!lh->host)
		return;
	/* keyed as the resolver wrote it: an IPv4 address asked in an IPv6 form is the IPv4 one */
	hostnames_addr_key(family, addr, key);
	/* n counts every name by at_ns, ids holds the kept ones among them (listed) */
	n = hostnames_sharing(r->hosts, key, at_ns, ids, HOSTNAMES_KEPT, &listed);
	if (!n || (n == 1 && listed == 1 && ids[0] == host_id))
		return;
	for (i = 0; i < listed; i++)
		kernels_indexed |= ids[i] == host_id;
	total = n + !kernels_indexed;
	lh->host = NULL;
	lh->hosts[lh->n_hosts++] = lh->names[0];
	for (i = 0; i < listed && lh->n_hosts < HOSTS_LISTED; i++) {
		char *name = lh->names[lh->n_hosts];

		if (ids[i] != host_id && hostnames_name(r->hosts, ids[i], name, DNS_NAME_MAX))
			lh->hosts[lh->n_hosts++] = name;
	}
	/* the kernel's name always (it fits HOSTS_BYTES alone), the others as the budget lets */
	fit = journal_strv_fit(lh->hosts, lh->n_hosts, HOSTS_BYTES);
	lh->n_hosts = fit ? fit : 1;
	lh->more = total - lh->n_hosts;
}

/* "host" and, for a shared address, "hosts" and "hosts_more" (line_hosts_of). */
static void line_hosts_put(struct journal_line *l, const struct line_hosts *lh)
{
	journal_line_str(l, "host", lh->host);
	if (lh->n_hosts)
		journal_line_strv(l, "hosts", lh->hosts, lh->n_hosts);
	if (lh->more)
		journal_line_u64(l, "hosts_more", lh->more);
}

/*
 * The names of lh for a notice: "a.example" or "one of a.example, b.example (and 3 more)",
 * into buf, cut at its end.
 */
static const char *line_hosts_text(const struct line_hosts *lh, char *buf, size_t len)
{
	size_t i, used;

	if (!lh->n_hosts)
		return lh->host;
	used = (size_t)snprintf(buf, len, "one of");
	for (i = 0; i < lh->n_hosts && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s %s", i ? "," : "",
					 lh->hosts[i]);
	if (lh->more && used < len)
		snprintf(buf + used, len - used, " (and %zu more)", lh->more);
	return buf;
}

static int on_decision(const struct sl_decision_event *ev, void *ctx)
{
	struct records *r = ctx;
	struct journal_line l;
	struct decision_view v;
	struct timespec ts = boot_to_realtime(r, ev->hdr.ts_ns);
	struct line_hosts lh;
	const char *host;
	char host_buf[512];
	bool killed;
	int mode;
	/* named by the policy of the programs that judged it (a switch may have ended it) */
	const struct policy *p = policy_of_era(r, ev->era, ev->hdr.ts_ns, &mode);

	if (decision_view_init(&v, ev, p)) {
		records_line(r, &l, "anomaly", &ts);
		journal_line_str(&l, "what", "decision record with out-of-range fields");
		write_kernel_line(r, &l, ev->hdr.seq);
		return 0;
	}

	if (written_before(r, "decision", ev->hdr.seq, ev->sock_cookie,
			   ev->hook == SL_HOOK_TC ? 0 : ev->tgid, v.surface ? 0 : ev->port,
			   v.surface ? "" : v.dst))
		return 0;
	/* an allow the policy's log: list leaves out needs no names: nothing prints it */
	if (!v.deny && !p->log_allow) {
		r->unlogged++; /* the policy's log: list leaves it out; run_end counts it */
		return 0;
	}
	/* the address judged: the IPv4 one an IPv6 form embeds, as the kernel looked it up */
	line_hosts_of(r, &lh, ev->host_id, ev->embedded_v4 ? AF_INET : ev->family,
		      ev->embedded_v4 ? ev->eff_addr : ev->addr, ev->hdr.ts_ns);
	/*
	 * The backstop dropped a TCP socket's packet (to an address the policy denies: one passed
	 * in from outside the run, or a flow a switch could not find to judge again): the socket
	 * keeps the denial; ending it makes the sender fail now rather than after its
	 * retransmissions give up.
	 */
	killed = v.deny && v.enforced && ev->hook == SL_HOOK_EGRESS && !v.surface &&
		 ev->protocol == IPPROTO_TCP && ev->sock_cookie;
	if (v.deny) {
		struct notice n = { .len = 0 };
		const char *what = v.enforced ? "egress denied" : "egress would be denied (report mode)";

		__atomic_fetch_add(&r->denials, 1, __ATOMIC_RELAXED);
		host = line_hosts_text(&lh, host_buf, sizeof(host_buf));
		if (host)
			notice_add(&n, "%s: %s [%s] (rule: %s) run_id=%s task=%s\n", what, host,
				   v.dst_port, v.rule, r->run_id, r->task_text);
		else
			notice_add(&n, "%s: %s (rule: %s) run_id=%s task=%s\n", what, v.dst_port,
				   v.rule, r->run_id, r->task_text);
		if (p->request_access && ev->reason != SL_REASON_BLACKHOLE && !v.surface)
			notice_request_access(&n, p->request_access, lh.host ? lh.host : v.dst);
		notice_denial(r, &n);
	}
	if (v.deny && !p->log_deny) {
		r->unlogged++;
		return 0;
	}

	records_line(r, &l, "decision", &ts);
	journal_line_str(&l, "hook", v.hook);
	journal_line_str(&l, "decision", v.decision);
	journal_line_bool(&l, "enforced", v.enforced);
	journal_line_str(&l, "rule", v.rule);
	journal_line_str(&l, "reason", v.reason);
	journal_line_str(&l, "family", v.family);
	journal_line_str(&l, "proto", v.proto);
	line_hosts_put(&l, &lh);
	if (v.surface) {
		/* a socket kind or option: no destination, say what was refused instead */
		journal_line_str(&l, "what", v.dst_port);
	} else {
		journal_line_str(&l, "dst", v.dst);
		if (v.dst_v4[0])
			journal_line_str(&l, "dst_v4", v.dst_v4);
		journal_line_u64(&l, "port", ev->port);
	}
	if (ev->hook == SL_HOOK_TC) {
		/* a frame on the run's interface: no process or socket to name */
		journal_line_u64(&l, "ifindex", ev->sock_cookie);
	} else {
		journal_line_u64(&l, "pid", ev->tgid);
		journal_line_u64(&l, "tid", ev->pid);
		journal_line_str(&l, "comm", v.comm);
		journal_line_u64(&l, "cgroup_id", ev->cgroup_id);
		journal_line_u64(&l, "sock_cookie", ev->sock_cookie);
	}
	if (killed)
		kill_flow(r, ev->sock_cookie, ev->tgid, &l, ev->hdr.seq);
	else
		write_kernel_line(r, &l, ev->hdr.seq);
	return 0;
}

/*
 * The server name a TLS flow's ClientHello carried, kept by socket cookie until the flow's line
 * is written. Direct-mapped and bounded: a flow whose slot was reused by another gets "sni":null
 * (never another flow's name: the cookie is compared).
 */
#define SNI_SLOTS 1024

struct sni_slot {
	uint64_t cookie;
	char sni[SL_SNI_MAX + 1];
};

static void sni_remember(struct records *r, uint64_t cookie, const char *sni)
{
	if (!r->sni_cache)
		r->sni_cache = calloc(SNI_SLOTS, sizeof(*r->sni_cache));
	if (!r->sni_cache)
		return;
	r->sni_cache[cookie % SNI_SLOTS].cookie = cookie;
	util_copy(r->sni_cache[cookie % SNI_SLOTS].sni, sizeof(r->sni_cache->sni), sni);
}

/* The flow's server name, or NULL; the slot is freed. Copies into buf. */
static const char *sni_take(struct records *r, uint64_t cookie, char *buf, size_t len)
{
	struct sni_slot *s = r->sni_cache ? &r->sni_cache[cookie % SNI_SLOTS] : NULL;

	if (!s || !cookie || s->cookie != cookie || util_copy(buf, len, s->sni))
		return NULL;
	s->cookie = 0;
	return buf;
}

/* What a ClientHello denied for reason did wrong, after "named NAME," in a denial's notice. */
static const char *tls_denial_why(unsigned int reason)
{
	switch (reason) {
	case SL_REASON_SNI_PORT: /* an address names of different rules share */
		return "which resolved there, but no rule of it allows this port";
	case SL_REASON_SNI_CHANGED:
		return "which resolved there, but is not the server the flow's first ClientHello "
		       "passed with";
	case SL_REASON_SNI_MISSING:
		return "and a TLS flow must name its server";
	case SL_REASON_SNI_UNPARSEABLE:
		return "in a payload that is not one whole ClientHello sluice can read";
	default:
		return "which did not resolve there";
	}
}

/*
 * A TLS flow's server name was judged. A denial is enforced by dropping; destroying the socket
 * makes the client fail now rather than after its retransmissions give up.
 */
static int on_tls(const struct sl_tls_event *ev, void *ctx)
{
	struct records *r = ctx;
	struct journal_line l;
	struct timespec ts = boot_to_realtime(r, ev->hdr.ts_ns);
	char sni[SL_SNI_MAX + 1], host_buf[512], dst[INET6_ADDRSTRLEN], comm[64];
	bool deny = ev->verdict == SL_VERDICT_DENY;
	struct line_hosts lh;
	const char *host;
	size_t i;

	for (i = 0; i < ev->sni_len; i++)
		sni[i] = ev->sni[i] >= 0x20 && ev->sni[i] < 0x7f && ev->sni[i] != '"' ?
				 ev->sni[i] : '?';
	sni[i] = '\0';
	inet_ntop(ev->family == AF_INET6 ? AF_INET6 : AF_INET, ev->addr, dst, sizeof(dst));
	if (written_before(r, "tls", ev->hdr.seq, ev->sock_cookie, ev->tgid, ev->port, dst))
		return 0;
	decision_safe_comm(comm, sizeof(comm), ev->comm);
	line_hosts_of(r, &lh, ev->host_id, ev->family == AF_INET6 ? AF_INET6 : AF_INET, ev->addr,
		      ev->hdr.ts_ns);
	host = line_hosts_text(&lh, host_buf, sizeof(host_buf));

	records_line(r, &l, "tls", &ts);
	journal_line_str(&l, "decision", deny ? "deny" : "allow");
	journal_line_bool(&l, "enforced", ev->enforced);
	journal_line_str(&l, "reason", decision_reason_name(ev->reason));
	line_hosts_put(&l, &lh);
	journal_line_str(&l, "sni", ev->sni_len ? sni : NULL);
	if (!deny && ev->sni_len)
		sni_remember(r, ev->sock_cookie, sni);
	journal_line_str(&l, "dst", dst);
	journal_line_u64(&l, "port", ev->port);
	journal_line_u64(&l, "pid", ev->tgid);
	journal_line_str(&l, "comm", comm);
	journal_line_u64(&l, "sock_cookie", ev->sock_cookie);
	if (deny && ev->enforced)
		kill_flow(r, ev->sock_cookie, ev->tgid, &l, ev->hdr.seq);
	else
		write_kernel_line(r, &l, ev->hdr.seq);

	if (deny) {
		struct notice n = { .len = 0 };

		__atomic_fetch_add(&r->denials, 1, __ATOMIC_RELAXED);
		notice_add(&n, "%s: TLS to %s%s%s:%u named \"%s\", %s (resolved for %s; %s) "
			       "run_id=%s task=%s\n",
			   ev->enforced ? "egress denied" : "egress would be denied (report mode)",
			   ev->family == AF_INET6 ? "[" : "", dst, ev->family == AF_INET6 ? "]" : "",
			   ev->port, ev->sni_len ? sni : "(no server name)", tls_denial_why(ev->reason),
			   host ? host : "?", decision_reason_name(ev->reason), r->run_id,
			   r->task_text);
		notice_denial(r, &n);
	}
	return 0;
}

/* "allow where …" alerts on a finished flow. */
static void flow_alerts(struct records *r, const struct sl_flow *f, const char *host, const char *dst,
			const char *proto, uint64_t duration_ms)
{
	char what[512];
	size_t i;

	for (i = 0; i < r->policy->n_alert_on; i++) {
		if (!policy_alert_flow_matches(&r->policy->alerts[i], f->req_bytes, f->resp_bytes,
					       duration_ms))
			continue;
		util_fmt(what, sizeof(what),
			 "flow to %s%s%s:%u/%s sent %llu bytes, received %llu, in %llu ms",
			 host ? host : "", host ? " " : "", dst, f->port, proto,
			 (unsigned long long)f->req_bytes, (unsigned long long)f->resp_bytes,
			 (unsigned long long)duration_ms);
		raise_alert(r, r->policy->alert_on[i], what);
	}
}

static const char *cut_name(unsigned int cut)
{
	return cut == SL_CUT_REQUEST ? "max_request_bytes" :
	       cut == SL_CUT_RESPONSE ? "max_response_bytes" :
	       cut == SL_CUT_TOTAL_REQUEST ? "max_total_request_bytes" :
	       cut == SL_CUT_TOTAL_RESPONSE ? "max_total_response_bytes" : NULL;
}

static const struct policy *policy_of_flow(const struct records *r, const struct sl_flow *f,
					   int *mode);

/* The cap a cut flow went past: its own (kept in the flow), or its host's total for the run. */
static uint64_t cut_limit(const struct records *r, const struct sl_flow *f)
{
	int mode;
	const struct policy *p = policy_of_flow(r, f, &mode);
	const struct policy_rule *rule = policy_rule_of(p, f->rule_id);

	switch (f->cut) {
	case SL_CUT_REQUEST:
		return f->max_req - 1;
	case SL_CUT_RESPONSE:
		return f->max_resp - 1;
	case SL_CUT_TOTAL_REQUEST:
		return rule ? rule->max_total_request_bytes : 0;
	default:
		return rule ? rule->max_total_response_bytes : 0;
	}
}

/*
 * A flow that went past its rule's byte cap: the packet layer drops what would pass it; ending
 * the socket makes the client fail now instead of retransmitting into the drop.
 */
static void flow_cut(struct records *r, const struct sl_flow_event *ev,
		     const struct line_hosts *lh, const char *host, const char *dst,
		     const char *proto, const char *rule)
{
	const struct sl_flow *f = &ev->flow;
	struct timespec ts = boot_to_realtime(r, ev->hdr.ts_ns);
	struct notice n = { .len = 0 };
	struct journal_line l;
	uint64_t cap = cut_limit(r, f);
	bool out = f->cut == SL_CUT_REQUEST || f->cut == SL_CUT_TOTAL_REQUEST;
	bool total = f->cut == SL_CUT_TOTAL_REQUEST || f->cut == SL_CUT_TOTAL_RESPONSE;

	records_line(r, &l, "flow_cut", &ts);
	line_hosts_put(&l, lh);
	journal_line_str(&l, "dst", dst);
	journal_line_u64(&l, "port", f->port);
	journal_line_str(&l, "proto", proto);
	journal_line_str(&l, "rule", rule);
	journal_line_str(&l, "cap", cut_name(f->cut));
	journal_line_u64(&l, "limit", cap);
	journal_line_u64(&l, "req_bytes", f->req_bytes);
	journal_line_u64(&l, "resp_bytes", f->resp_bytes);
	journal_line_u64(&l, "pid", f->tgid);
	journal_line_u64(&l, "sock_cookie", ev->sock_cookie);
	if (f->protocol == IPPROTO_TCP) {
		kill_flow(r, ev->sock_cookie, f->tgid, &l, ev->hdr.seq);
	} else {
		journal_line_str(&l, "flow", "dropped");
		write_kernel_line(r, &l, ev->hdr.seq);
	}

	__atomic_fetch_add(&r->denials, 1, __ATOMIC_RELAXED);
	notice_add(&n, "egress cut: %s%s%s:%u/%s after %llu bytes %s%s (%s: %llu) run_id=%s task=%s\n",
		   host ? host : "", host ? " " : "", dst, f->port, proto,
		   (unsigned long long)(out ? f->req_bytes : f->resp_bytes), out ? "sent" : "received",
		   total ? " on this flow, the host's total for the run reached" : "",
		   cut_name(f->cut), (unsigned long long)cap, r->run_id, r->task_text);
	notice_denial(r, &n);
}

/* A flow ended: one line with what it carried, in the seed's shape. */
static int on_flow(const struct sl_flow_event *ev, void *ctx)
{
	struct records *r = ctx;
	const struct sl_flow *f = &ev->flow;
	struct timespec ts = boot_to_realtime(r, ev->hdr.ts_ns);
	char host_buf[512], dst[INET6_ADDRSTRLEN], comm[64], rule[128], proto[16];
	char sni_buf[SL_SNI_MAX + 1];
	struct line_hosts lh;
	const char *host;
	const char *sni = ev->end_ns ? sni_take(r, ev->sock_cookie, sni_buf, sizeof(sni_buf)) :
				       NULL;
	int mode;
	const struct policy *p = policy_of_flow(r, f, &mode);
	struct journal_line l;

	if ((f->family != AF_INET && f->family != AF_INET6) || f->rule_id > p->n_rules ||
	    f->cut > SL_CUT_TOTAL_RESPONSE || (!ev->end_ns && !f->cut) ||
	    (f->deny_reason && !strcmp(decision_reason_name(f->deny_reason), "unknown"))) {
		records_line(r, &l, "anomaly", &ts);
		journal_line_str(&l, "what", "flow record with out-of-range fields");
		write_kernel_line(r, &l, ev->hdr.seq);
		return 0;
	}
	inet_ntop(f->family, f->addr, dst, sizeof(dst));
	if (written_before(r, ev->end_ns ? "flow" : "flow_cut", ev->hdr.seq, ev->sock_cookie,
			   f->tgid, f->port, dst))
		return 0;
	decision_safe_comm(comm, sizeof(comm), f->comm);
	/* the names the address had at connect(): the flow was for one of those */
	line_hosts_of(r, &lh, f->host_id, f->family, f->addr, f->start_ns);
	host = line_hosts_text(&lh, host_buf, sizeof(host_buf));
	policy_rule_id_name(p, f->rule_id, rule, sizeof(rule));
	if (f->protocol == IPPROTO_TCP || f->protocol == IPPROTO_UDP)
		util_copy(proto, sizeof(proto), f->protocol == IPPROTO_TCP ? "tcp" : "udp");
	else
		util_fmt(proto, sizeof(proto), "ip-%u", f->protocol);

	if (!ev->end_ns) {
		flow_cut(r, ev, &lh, host, dst, proto, rule);
		return 0;
	}
	records_line(r, &l, "flow", &ts);
	line_hosts_put(&l, &lh);
	journal_line_str(&l, "sni", sni);
	journal_line_str(&l, "dst", dst);
	journal_line_u64(&l, "port", f->port);
	journal_line_str(&l, "proto", proto);
	/*
	 * A denied flow: a report-mode denial (said as its decision line said it), or one a switch
	 * judged again and denied (era), enforced as the mode that switch put in force says
	 */
	journal_line_str(&l, "decision", f->deny_reason ? "deny" : "allow");
	if (f->deny_reason) {
		journal_line_bool(&l, "enforced", mode == SL_MODE_ENFORCE ||
							  f->deny_reason == SL_REASON_BLACKHOLE);
		journal_line_str(&l, "reason", decision_reason_name(f->deny_reason));
	}
	journal_line_str(&l, "rule", rule);
	journal_line_u64(&l, "req_bytes", f->req_bytes);
	journal_line_u64(&l, "resp_bytes", f->resp_bytes);
	journal_line_u64(&l, "duration_ms",
			 ev->end_ns > f->start_ns ? (ev->end_ns - f->start_ns) / 1000000 : 0);
	if (f->cut)
		journal_line_str(&l, "cut", cut_name(f->cut));
	journal_line_u64(&l, "pid", f->tgid);
	journal_line_str(&l, "comm", comm);
	journal_line_u64(&l, "sock_cookie", ev->sock_cookie);
	write_kernel_line(r, &l, ev->hdr.seq);
	if (r->totals)
		hosttotals_add(r->totals, f, lh.n_hosts > 0);
	/* "allow where …" is about allowed flows */
	if (!f->deny_reason)
		flow_alerts(r, f, host, dst, proto,
			    ev->end_ns > f->start_ns ? (ev->end_ns - f->start_ns) / 1000000 : 0);
	return 0;
}

/* True unless the same name was announced within the last two seconds. */
static bool notice_name_is_new(struct records *r, const char *name)
{
	int64_t now = util_clock_ns(CLOCK_MONOTONIC);
	bool fresh;

	pthread_mutex_lock(&r->notice_lock);
	fresh = strcmp(r->last_denied_name, name) || now - r->last_denied_ns > 2000000000LL;
	if (fresh) {
		util_copy(r->last_denied_name, sizeof(r->last_denied_name), name);
		r->last_denied_ns = now;
	}
	pthread_mutex_unlock(&r->notice_lock);
	return fresh;
}

/* One query the run's resolver answered (called from its threads). */
void records_on_dns(const struct resolver_event *ev, void *ctx)
{
	struct records *r = ctx;
	struct journal_line l;
	struct timespec now;
	char name[DNS_NAME_MAX];
	bool deny = !strcmp(ev->decision, "deny"), refused = !strcmp(ev->decision, "refused");
	struct notice n = { .len = 0 };
	const char *what;

	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "dns", &now);
	journal_line_str(&l, "host", ev->name);
	journal_line_str(&l, "qtype", ev->qtype);
	journal_line_str(&l, "decision", ev->decision);
	journal_line_bool(&l, "enforced", ev->enforced);
	journal_line_str(&l, "rule", ev->rule);
	journal_line_str(&l, "rcode", ev->rcode);
	journal_line_str(&l, "transport", ev->transport);
	if (ev->who) {
		char comm[64];

		decision_safe_comm(comm, sizeof(comm), ev->who->comm);
		journal_line_u64(&l, "pid", ev->who->tgid);
		journal_line_u64(&l, "tid", ev->who->pid);
		journal_line_str(&l, "comm", comm);
	}
	journal_line_strv(&l, "answers", (char *const *)ev->answers, ev->n_answers);
	journal_line_strv(&l, "cname", (char *const *)ev->chain, ev->n_chain);
	if (ev->why)
		journal_line_str(&l, "why", ev->why);
	records_write(r, &l);

	if (!deny && !refused)
		return;
	__atomic_fetch_add(&r->denials, 1, __ATOMIC_RELAXED);
	/* A client asks for A and AAAA at once: one notice per name, the log keeps both. */
	if (!notice_name_is_new(r, ev->name))
		return;
	safe_text(name, sizeof(name), ev->name);
	what = ev->enforced ? "egress denied" : "egress would be denied (report mode)";
	if (deny) {
		notice_add(&n, "%s: %s (rule: %s) run_id=%s task=%s\n", what, name, ev->rule,
			   r->run_id, r->task_text);
		if (r->policy->request_access)
			notice_request_access(&n, r->policy->request_access, name);
	} else {
		notice_add(&n, "%s: %s (answer refused: %s) run_id=%s task=%s\n", what, name,
			   ev->why ? ev->why : "", r->run_id, r->task_text);
	}
	notice_denial(r, &n);
}

void records_on_refusal(const struct sandbox_refusal *ref, void *ctx)
{
	struct records *r = ctx;
	struct journal_line l;
	struct timespec now;
	struct notice n = { .len = 0 };
	char comm[64], what[sizeof(ref->what)];

	clock_gettime(CLOCK_REALTIME, &now);
	decision_safe_comm(comm, sizeof(comm), ref->comm);
	records_line(r, &l, "decision", &now);
	journal_line_str(&l, "hook", decision_hook_name(SL_HOOK_SECCOMP));
	journal_line_str(&l, "decision", "deny");
	journal_line_bool(&l, "enforced", true);
	journal_line_str(&l, "rule", "surface");
	journal_line_str(&l, "reason", decision_reason_name(SL_REASON_SOCKET_FAMILY));
	journal_line_str(&l, "family", ref->family);
	journal_line_str(&l, "what", ref->what);
	journal_line_str(&l, "abi", ref->abi);
	journal_line_str(&l, "errno", strerrorname_np(ref->err));
	if (ref->known) {
		journal_line_u64(&l, "pid", ref->tgid);
		journal_line_u64(&l, "tid", ref->tid);
		journal_line_str(&l, "comm", comm);
	} else {
		/* the caller died before its answer: its pid may be another's by now */
		journal_line_str(&l, "pid", NULL);
		journal_line_u64(&l, "tid", ref->tid);
		journal_line_str(&l, "comm", NULL);
	}
	records_write(r, &l);

	__atomic_fetch_add(&r->denials, 1, __ATOMIC_RELAXED);
	safe_text(what, sizeof(what), ref->what);
	notice_add(&n, "egress denied: %s (rule: surface, %s) pid=%u comm=%s run_id=%s task=%s\n",
		   what, ref->abi, ref->known ? ref->tgid : ref->tid, ref->known ? comm : "?",
		   r->run_id, r->task_text);
	notice_denial(r, &n);
}

/* The kernel's TCP state names (include/net/tcp_states.h), as ss prints them. */
static const char *tcp_state_name(uint8_t state)
{
	static const char *const names[] = {
		[1] = "established", [2] = "syn_sent",	[3] = "syn_recv",   [4] = "fin_wait1",
		[5] = "fin_wait2",   [6] = "time_wait", [7] = "close",	    [8] = "close_wait",
		[9] = "last_ack",    [10] = "listen",	[11] = "closing",
	};

	return state < sizeof(names) / sizeof(names[0]) && names[state] ? names[state] : "unknown";
}

void records_preexisting(struct records *r, const struct records_preexisting *p)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], v4[INET_ADDRSTRLEN], comm[64];
	char rule[128], fam[8];
	const char *proto = p->protocol == IPPROTO_TCP ? "tcp" : "udp";
	bool deny = p->verdict == SL_VERDICT_DENY;
	struct notice n = { .len = 0 };
	struct journal_line l;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	inet_ntop(p->family, p->src, src, sizeof(src));
	inet_ntop(p->family, p->dst, dst, sizeof(dst));
	decision_safe_comm(comm, sizeof(comm), p->comm);
	if (p->rule >= 0)
		policy_rule_name(r->policy, (size_t)p->rule, rule, sizeof(rule));
	else
		util_copy(rule, sizeof(rule),
			  p->reason == SL_REASON_BLACKHOLE	  ? "blackhole" :
			  p->reason == SL_REASON_DNS_REDIRECT ? "dns" :
								"default");
	util_copy(fam, sizeof(fam), p->family == AF_INET ? "ipv4" : "ipv6");

	records_line(r, &l, "preexisting", &now);
	journal_line_str(&l, "decision", deny ? "deny" : "allow");
	journal_line_bool(&l, "enforced", p->enforced);
	journal_line_str(&l, "rule", rule);
	journal_line_str(&l, "reason", decision_reason_name(p->reason));
	journal_line_str(&l, "family", fam);
	journal_line_str(&l, "proto", proto);
	journal_line_str(&l, "state", p->protocol == IPPROTO_TCP ? tcp_state_name(p->state) :
								   "connected");
	journal_line_str(&l, "src", src);
	journal_line_u64(&l, "sport", p->sport);
	journal_line_str(&l, "dst", dst);
	if (p->has_v4) {
		inet_ntop(AF_INET, p->v4, v4, sizeof(v4));
		journal_line_str(&l, "dst_v4", v4);
	}
	journal_line_u64(&l, "port", p->dport);
	journal_line_u64(&l, "pid", p->pid);
	journal_line_str(&l, "comm", comm);
	journal_line_u64(&l, "holders", p->holders);
	journal_line_u64(&l, "netns", p->netns);
	journal_line_u64(&l, "sock_cookie", p->cookie);
	journal_line_str(&l, "flow", p->flow);
	if (p->unread)
		journal_line_str(&l, "unread", p->unread);
	records_write(r, &l);

	if (!deny)
		return;
	__atomic_fetch_add(&r->denials, 1, __ATOMIC_RELAXED);
	notice_add(&n, "%s: %s%s%s:%u/%s held since before the attach (rule: %s, %s) pid=%u "
		       "comm=%s: %s run_id=%s task=%s\n",
		   p->enforced ? "egress denied" : "egress would be denied (report mode)",
		   p->family == AF_INET6 ? "[" : "", dst, p->family == AF_INET6 ? "]" : "",
		   p->dport, proto, rule, decision_reason_name(p->reason), p->pid, comm, p->flow,
		   r->run_id, r->task_text);
	notice_denial(r, &n);
}

static void on_malformed(const char *why, size_t size, void *ctx)
{
	struct records *r = ctx;
	struct journal_line l;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "anomaly", &now);
	journal_line_str(&l, "what", "malformed ring-buffer record");
	journal_line_str(&l, "why", why);
	journal_line_u64(&l, "size", size);
	records_write(r, &l);
}

/*
 * Turn any increase of the kernel's failed-reservation counters into loss records. Each says
 * which numbers the records it counts can have: all are below its "kseq_below".
 */
static void report_loss(struct records *r)
{
	uint64_t lost[SL_HOOK_MAX], below, all = 0;
	struct journal_line l;
	struct timespec now;
	bool changed = false;
	int hook, err;

	err = loader_lost_counts(r->loader, lost);
	if (err) {
		clock_gettime(CLOCK_REALTIME, &now);
		records_line(r, &l, "anomaly", &now);
		journal_line_str(&l, "what", "cannot read the loss counters");
		journal_line_str(&l, "why", strerror(-err));
		records_write(r, &l);
		return;
	}
	for (hook = 0; hook < SL_HOOK_MAX; hook++) {
		changed |= lost[hook] != r->lost_reported[hook];
		all += lost[hook];
	}
	if (!changed)
		return;
	/*
	 * The next sequence number, read AFTER the counters, is above every record they count: a
	 * program takes its number (event_hdr_init's fetch-and-add, fully ordered) before its
	 * reservation fails and the counter goes up (event_count_loss), so a failure we saw
	 * counted had taken its number before our first read, and the second read sees it. The
	 * fence keeps our two reads in that order on weakly ordered CPUs. Read the other way
	 * round, a failure between the reads would be counted with a number at or above the bound.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	below = loader_next_seq(r->loader);
	for (hook = 0; hook < SL_HOOK_MAX; hook++) {
		if (lost[hook] == r->lost_reported[hook])
			continue;
		clock_gettime(CLOCK_REALTIME, &now);
		records_line(r, &l, "loss", &now);
		journal_line_str(&l, "hook", decision_hook_name(hook));
		journal_line_u64(&l, "count", lost[hook] - r->lost_reported[hook]);
		journal_line_u64(&l, "total", lost[hook]);
		/* each counted record has its own number below it; 0 means the read failed */
		if (below >= all)
			journal_line_u64(&l, "kseq_below", below);
		/* not in the log: declared by a later line, once the log can be written again */
		if (records_write(r, &l))
			continue;
		fprintf(stderr, "sluice: %llu %s records lost (ring buffer full); counted in the log\n",
			(unsigned long long)(lost[hook] - r->lost_reported[hook]),
			decision_hook_name(hook));
		r->lost_reported[hook] = lost[hook];
	}
}

/*
 * The log failed for lack of space: try to go on with a "loss" line of hook "log" that declares
 * the kernel records read but never written (and, in "lines", every line the log did not get).
 * It bounds their kseqs as a kernel loss line does: each was read from the ring buffer, so
 * took its number before the kernel's next one, read now. Returns true when the log goes on.
 */
static bool declare_unwritten(struct records *r, bool final)
{
	struct journal_line l;
	struct timespec now;
	bool dead;
	int err = journal_failure(r->journal, &dead);

	if (!err)
		return true;
	kseqs_settle(r);
	if (dead)
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "loss", &now);
	journal_line_str(&l, "hook", "log");
	journal_line_u64(&l, "count", r->unwritten - r->unwritten_reported);
	journal_line_u64(&l, "total", r->unwritten);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	journal_line_u64(&l, "kseq_below", loader_next_seq(r->loader));
	journal_line_str(&l, "why", strerror(-err));
	if (journal_retry(r->journal, &l))
		return false;
	if (final)
		fprintf(stderr, "sluice: log %s ends in the room kept for the end of the run; %" PRIu64
				" kernel records could not be written, declared in it\n",
			r->log_path, r->unwritten - r->unwritten_reported);
	else
		fprintf(stderr, "sluice: log %s can be written again; %" PRIu64 " kernel records "
				"could not be written, declared in it\n",
			r->log_path, r->unwritten - r->unwritten_reported);
	r->unwritten_reported = r->unwritten;
	r->journal_failed = false;
	return true;
}

void records_drain(struct records *r)
{
	int err = events_consume_max(r->events, r->drain_max);

	if (err < 0 && err != -EINTR)
		fprintf(stderr, "sluice: reading ring buffer: %s\n", strerror(-err));
	/* what was lost while the log could not be written first, then the kernel's losses */
	err = journal_flush(r->journal);
	if (err)
		records_journal_error(r, err);
	kseqs_settle(r);
	if (!declare_unwritten(r, false))
		return;
	report_loss(r);
	err = journal_flush(r->journal);
	if (err)
		records_journal_error(r, err);
	kseqs_settle(r);
}

void records_kill_queued(struct records *r)
{
	struct records_kill *k;
	size_t i, j;
	int err;

	if (!r->n_kills)
		return;
	for (i = 0; i < r->n_kills; i++) {
		k = &r->kills[i];
		/* the same socket denied again in the batch (a retransmission): one walk for it */
		for (j = 0; j < i && r->kills[j].cookie != k->cookie; j++)
			;
		k->err = j < i ? r->kills[j].err : kill_now(r, k->cookie, k->tgid);
		journal_line_str(k->line, "flow", kill_outcome(k->err));
		write_kernel_line(r, k->line, k->kseq);
		free(k->line);
		k->line = NULL;
	}
	r->n_kills = 0;
	err = journal_flush(r->journal);
	if (err)
		records_journal_error(r, err);
	kseqs_settle(r);
}

bool records_log_incomplete(const struct records *r)
{
	return __atomic_load_n(&r->log_broke, __ATOMIC_RELAXED);
}
/*
 * The kernel sequence numbers below next_seq that have no line, as ranges a verifier compares
 * with the log: lost in the kernel (the loss records count them), left out by the policy's
 * log: setting, or malformed (run_end's unlogged counts those two), so "missing" is lost +
 * unlogged. Written once, after the last drain, when no record is in flight; only when some
 * number is missing. The first ranges, as many as fit the line (at most SEQSET_RANGES_LISTED);
 * "truncated" says more exist.
 */
static void write_loss_ranges(struct records *r, uint64_t next_seq)
{
	/* what a line holds besides the body built here: {"seq":N,"prev":"<64 hex>", */
	static const size_t head = 128, tail = sizeof(",\"ranges\":[],\"truncated\":false}\n");
	struct records_kseqs *k = r->kseqs;
	uint64_t vals[2 * SEQSET_RANGES_LISTED];
	struct journal_line l;
	struct timespec now;
	size_t n, room;
	char num[48];

	seqset_finish(&k->set, next_seq);
	if (!k->set.missing)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "loss_ranges", &now);
	journal_line_u64(&l, "missing", k->set.missing);
	room = l.len + head + tail < JOURNAL_LINE_MAX ? JOURNAL_LINE_MAX - l.len - head - tail : 0;
	for (n = 0; n < k->missing.n; n++) {
		int w = snprintf(num, sizeof(num), ",%" PRIu64 ",%" PRIu64, k->missing.r[n].first,
				 k->missing.r[n].last);

		if (w < 0 || (size_t)w > room)
			break;
		room -= (size_t)w;
		vals[2 * n] = k->missing.r[n].first;
		vals[2 * n + 1] = k->missing.r[n].last;
	}
	journal_line_u64v(&l, "ranges", vals, 2 * n);
	journal_line_bool(&l, "truncated", n < k->missing.total);
	records_write(r, &l);
}

static void write_host_total(const struct hosttotal *h, void *ctx)
{
	struct records *r = ctx;
	char host_buf[256], dst[INET6_ADDRSTRLEN], rule[128];
	const char *host = h->host_id ? hostnames_name(r->hosts, h->host_id, host_buf,
						      sizeof(host_buf)) : NULL;
	struct journal_line l;
	struct timespec now;

	/*
	 * A full disk: the room kept for the end is for the seal and what precedes it, not for
	 * a line per host (a workload can make thousands of hosts): the rest are counted.
	 */
	if (r->totals_unwritten || !journal_room_for(r->journal, JSONLINE_MAX + 1)) {
		r->totals_unwritten++;
		return;
	}
	policy_rule_id_name(r->policy, h->rule_id, rule, sizeof(rule));
	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "host_total", &now);
	journal_line_str(&l, "host", host);
	if (h->host_id)
		journal_line_str(&l, "dst", NULL);
	else
		journal_line_str(&l, "dst", inet_ntop(h->family, h->addr, dst, sizeof(dst)));
	journal_line_str(&l, "rule", rule);
	journal_line_u64(&l, "flows", h->flows);
	journal_line_u64(&l, "req_bytes", h->req_bytes);
	journal_line_u64(&l, "resp_bytes", h->resp_bytes);
	if (h->shared)
		journal_line_bool(&l, "shared", true);
	records_write(r, &l);
}

/*
 * One line per (rule, host) the run's finished flows went to, with what they carried in all:
 * the per-(run, host) counts, whether or not the rule caps them.
 */
static void write_host_totals(struct records *r)
{
	struct journal_line l;
	struct timespec now;

	if (!r->totals)
		return;
	hosttotals_each(r->totals, write_host_total, r);
	if (r->totals_unwritten) {
		clock_gettime(CLOCK_REALTIME, &now);
		records_line(r, &l, "anomaly", &now);
		journal_line_str(&l, "what", "host_total lines the disk had no room for");
		journal_line_u64(&l, "hosts", r->totals_unwritten);
		records_write(r, &l);
	}
	if (!hosttotals_untracked(r->totals))
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "anomaly", &now);
	journal_line_str(&l, "what", "flows to more hosts than host_total lines are kept for");
	journal_line_u64(&l, "flows", hosttotals_untracked(r->totals));
	records_write(r, &l);
}

/*
 * Kernel records no line and no count accounts for, across a writer restart: records a dead
 * writer took from the ring buffer and never wrote, and those its log: setting left out (its
 * unlogged count died with it). After the last drain, from the numbers that have no line.
 */
static uint64_t restart_gap(const struct records *r, uint64_t lost, uint64_t unlogged)
{
	uint64_t explained = lost + unlogged;

	return r->kseqs->set.missing > explained ? r->kseqs->set.missing - explained : 0;
}

void records_end(struct records *r, bool has_status, int status, const char *why)
{
	const struct events_stats *st = events_stats(r->events);
	struct journal_line l;
	struct timespec now;
	uint64_t lost = 0, next_seq;
	int hook;

	/*
	 * The last lines pending are settled, and what never reached the log declared: into the
	 * room taken ahead on disk, if the disk is still full.
	 */
	journal_final(r->journal);
	journal_flush(r->journal);
	kseqs_settle(r);
	declare_unwritten(r, true);
	write_host_totals(r);
	for (hook = 0; hook < SL_HOOK_MAX; hook++)
		lost += r->lost_reported[hook];
	/*
	 * Every sequence number the kernel handed out is a record received, malformed or counted
	 * lost; anything else means records vanished without being counted. (A resumed writer
	 * cannot tell: what the dead one received died with it, and restart_gap says what is left.)
	 */
	next_seq = loader_next_seq(r->loader);
	if (!r->resumed && next_seq != st->received + st->malformed + lost) {
		clock_gettime(CLOCK_REALTIME, &now);
		records_line(r, &l, "anomaly", &now);
		journal_line_str(&l, "what", "records unaccounted for");
		journal_line_u64(&l, "kseq_next", next_seq);
		journal_line_u64(&l, "accounted", st->received + st->malformed + lost);
		records_write(r, &l);
	}
	/* from here on, the kernel's losses and the log's own are one count, as in the loss lines */
	lost += r->unwritten_reported;
	journal_flush(r->journal);
	kseqs_settle(r);
	write_loss_ranges(r, next_seq);
	clock_gettime(CLOCK_REALTIME, &now);
	records_line(r, &l, "run_end", &now);
	journal_line_str(&l, "why", why);
	if (has_status)
		journal_line_i64(&l, "exit_status", status);
	else
		journal_line_str(&l, "exit_status", NULL);
	journal_line_u64(&l, "records", r->restored_records + st->received);
	journal_line_u64(&l, "lost", lost);
	journal_line_u64(&l, "malformed", st->malformed);
	/* kernel records with no line of their own: left out by the policy's log:, or malformed */
	journal_line_u64(&l, "unlogged", r->unlogged + st->malformed);
	if (r->resumed)
		journal_line_u64(&l, "restart_gap",
				 restart_gap(r, lost, r->unlogged + st->malformed));
	journal_line_u64(&l, "denials", r->denials);
	journal_line_u64(&l, "kseq_next", next_seq);
	journal_line_i64(&l, "duration_ms",
			 (now.tv_sec - r->started_at.tv_sec) * 1000 +
				 (now.tv_nsec - r->started_at.tv_nsec) / 1000000);
	records_write(r, &l);
}

const struct events_handlers records_handlers = {
	.decision = on_decision,
	.tls = on_tls,
	.flow = on_flow,
	.malformed = on_malformed,
};

int records_init(struct records *r)
{
	int err;

	err = -pthread_mutex_init(&r->notice_lock, NULL);
	if (err)
		return err;
	util_copy(r->task_text, sizeof(r->task_text), "-");
	if (r->task)
		safe_text(r->task_text, sizeof(r->task_text), r->task);
	r->boot_to_real_ns = util_clock_ns(CLOCK_REALTIME) - util_clock_ns(CLOCK_BOOTTIME);
	r->totals = hosttotals_new();
	r->kseqs = calloc(1, sizeof(*r->kseqs));
	err = r->totals && r->kseqs ? 0 : -ENOMEM;
	if (!err)
		err = seqset_init(&r->kseqs->set, seqset_list_add, &r->kseqs->missing);
	if (err) {
		free(r->kseqs);
		r->kseqs = NULL;
		hosttotals_free(r->totals);
		r->totals = NULL;
		pthread_mutex_destroy(&r->notice_lock);
	}
	return err;
}

void records_free(struct records *r)
{
	if (!r->totals)
		return; /* never initialised */
	free(r->sni_cache);
	r->sni_cache = NULL;
	/* a run closed with lines still queued (records_kill_queued not called): not written */
	while (r->n_kills)
		free(r->kills[--r->n_kills].line);
	free(r->kills);
	r->kills = NULL;
	if (r->kseqs)
		seqset_free(&r->kseqs->set);
	free(r->kseqs);
	r->kseqs = NULL;
	hosttotals_free(r->totals);
	r->totals = NULL;
	while (r->n_eras) {
		r->n_eras--;
		if (r->eras[r->n_eras].owned)
			policy_free(r->eras[r->n_eras].policy);
	}
	free(r->eras);
	r->eras = NULL;
	pthread_mutex_destroy(&r->notice_lock);
}

int records_policy_replaced(struct records *r, struct policy *old, bool owned, int old_mode,
			    uint32_t old_era,
			    uint64_t since_ns)
{
	struct records_era *e = realloc(r->eras, (r->n_eras + 1) * sizeof(*e));

	if (!e)
		return -ENOMEM;
	r->eras = e;
	e[r->n_eras].policy = old;
	e[r->n_eras].owned = owned;
	e[r->n_eras].mode = old_mode;
	e[r->n_eras].era = old_era;
	e[r->n_eras++].until_ns = since_ns;
	return 0;
}

/* The policy in force at CLOCK_BOOTTIME ns (a flow's connect()), and its mode then. */
static const struct policy *policy_at(const struct records *r, uint64_t ns, int *mode)
{
	size_t i;

	for (i = 0; i < r->n_eras; i++) {
		if (ns < r->eras[i].until_ns) {
			*mode = r->eras[i].mode;
			return r->eras[i].policy;
		}
	}
	*mode = r->policy->mode;
	return r->policy;
}

/*
 * The policy that names a flow's rule, and the mode that says whether its denial was enforced:
 * the generation of the flow (sl_flow.era): the one in force if it is r->policy's (r->era),
 * else an ended one's (eras[k].era); a record without one (0, or one not seen here: a writer that
 * resumed a run holds no eras) by the generation in force at its connect().
 */
static const struct policy *policy_of_flow(const struct records *r, const struct sl_flow *f,
					   int *mode)
{
	return policy_of_era(r, f->era, f->start_ns, mode);
}

/* The generation era's policy and mode; era 0 or one not seen here: the one in force at ns. */
static const struct policy *policy_of_era(const struct records *r, uint32_t era, uint64_t ns,
					  int *mode)
{
	size_t k;

	if (!era)
		return policy_at(r, ns, mode);
	if (r->era && era == r->era) {
		*mode = r->policy->mode;
		return r->policy;
	}
	for (k = r->n_eras; k-- > 0;)
		if (r->eras[k].era == era) {
			*mode = r->eras[k].mode;
			return r->eras[k].policy;
		}
	return policy_at(r, ns, mode);
}

/* ------------------------------------------------------------------------------------------ */
/* A resumed writer: the state the dead writer's lines leave */

static bool type_is(const struct jsonline *jl, const char *type)
{
	return jsonline_type_is(jl, type);
}

static bool str_is(const struct jsonline *jl, const char *key, const char *val)
{
	const struct jsonline_member *m = jsonline_get(jl, key);

	return m && m->v.kind == JSONLINE_STRING && jsonline_str_is(jl, &m->v, val);
}

/* The rule a log line names (its "rule"), as a rule id: 1-based, 0 for "default"; -1 unknown. */
static long rule_id_named(const struct records *r, const struct jsonline *jl)
{
	char name[128], want[128];
	size_t i;

	if (jsonline_str(jl, "rule", name, sizeof(name)) < 0)
		return -1;
	if (!strcmp(name, "default"))
		return 0;
	for (i = 0; i < r->policy->n_rules; i++)
		if (policy_rule_name(r->policy, i, want, sizeof(want)) && !strcmp(want, name))
			return policy_rule_id(i);
	return -1;
}

/* The first name of a line's "hosts" (line_hosts_put) into buf: false if it has none. */
static bool first_of_hosts(const struct jsonline *jl, char *buf, size_t len)
{
	const struct jsonline_member *m = jsonline_get(jl, "hosts");
	struct jsonline_value first;
	size_t pos = 0;

	return m && jsonline_array_next(jl, &m->v, &pos, &first) == 1 &&
	       first.kind == JSONLINE_STRING && jsonline_decode(jl, &first, buf, len) > 0;
}

/* A flow line's bytes, for its host's host_total line. */
static void restore_flow_total(struct records *r, const struct jsonline *jl)
{
	struct sl_flow f = {};
	bool shared = false;
	char host[DNS_NAME_MAX], dst[INET6_ADDRSTRLEN];
	uint64_t req, resp;
	long rule = rule_id_named(r, jl);

	if (rule < 0 || jsonline_u64(jl, "req_bytes", &req) || jsonline_u64(jl, "resp_bytes", &resp))
		return;
	f.rule_id = (__u16)rule;
	f.req_bytes = req;
	f.resp_bytes = resp;
	if (jsonline_str(jl, "host", host, sizeof(host)) > 0) {
		f.host_id = hostnames_id(r->hosts, host);
	} else if (first_of_hosts(jl, host, sizeof(host))) {
		/* a shared address: counted, as the kernel counts it, under the first name */
		f.host_id = hostnames_id(r->hosts, host);
		shared = true;
	}
	if (jsonline_str(jl, "dst", dst, sizeof(dst)) > 0) {
		if (inet_pton(AF_INET, dst, f.addr) == 1)
			f.family = AF_INET;
		else if (inet_pton(AF_INET6, dst, f.addr) == 1)
			f.family = AF_INET6;
	}
	if (f.host_id || f.family)
		hosttotals_add(r->totals, &f, shared);
}

/* The mark of a kernel record's line (written_before): the last one read is kept. */
static void restore_mark(struct records *r, const struct jsonline *jl, uint64_t kseq)
{
	struct records_mark *m = &r->last;

	memset(m, 0, sizeof(*m));
	m->kseq = kseq;
	if (jsonline_str(jl, "type", m->type, sizeof(m->type)) < 0)
		m->type[0] = '\0';
	if (jsonline_u64(jl, "sock_cookie", &m->cookie))
		jsonline_u64(jl, "ifindex", &m->cookie); /* a tc decision */
	jsonline_u64(jl, "pid", &m->pid);
	jsonline_u64(jl, "port", &m->port);
	if (jsonline_str(jl, "dst", m->dst, sizeof(m->dst)) < 0)
		m->dst[0] = '\0';
	r->check_first = true;
}

void records_restore_line(struct records *r, const struct jsonline *jl)
{
	char sni[SL_SNI_MAX + 1], hook[32];
	uint64_t kseq, total, cookie;
	int h;

	r->resumed = true;
	if (!jsonline_u64(jl, "kseq", &kseq)) {
		r->restored_records++;
		/* verify accepted the log: every number comes once, within the window */
		seqset_add(&r->kseqs->set, kseq);
		restore_mark(r, jl, kseq);
	}
	if (type_is(jl, "loss")) {
		/* the counters live in the kernel: the new writer declares only what is new */
		if (jsonline_str(jl, "hook", hook, sizeof(hook)) < 0 || jsonline_u64(jl, "total", &total))
			return;
		for (h = 0; h < SL_HOOK_MAX; h++)
			if (!strcmp(decision_hook_name((unsigned int)h), hook))
				r->lost_reported[h] = total;
		/* records the dead writer could not write, and declared */
		if (!strcmp(hook, "log"))
			r->unwritten = r->unwritten_reported = total;
		return;
	}
	if ((type_is(jl, "decision") && str_is(jl, "decision", "deny")) ||
	    (type_is(jl, "tls") && str_is(jl, "decision", "deny")) || type_is(jl, "flow_cut") ||
	    (type_is(jl, "preexisting") && str_is(jl, "decision", "deny")) ||
	    (type_is(jl, "dns") && (str_is(jl, "decision", "deny") ||
				    str_is(jl, "decision", "refused")))) {
		r->denials++;
		return;
	}
	if (type_is(jl, "tls") && !jsonline_u64(jl, "sock_cookie", &cookie) &&
	    jsonline_str(jl, "sni", sni, sizeof(sni)) > 0) {
		sni_remember(r, cookie, sni);
		return;
	}
	if (type_is(jl, "flow")) {
		if (!jsonline_u64(jl, "sock_cookie", &cookie))
			sni_take(r, cookie, sni, sizeof(sni));
		restore_flow_total(r, jl);
	}
}
