/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Evidence: what one or more signed run logs show, as a model the decision tools read
 * (sluice policy suggest, sluice policy replay, sluice report).
 *
 * Every log is verified first, with verify_log() (the same result and words `sluice verify`
 * prints), and its lines are read through verify's on_line callback: only lines that passed
 * the checks are in the model. A log that does not verify is still added, with its verdict and
 * the lines before the bad one; what to do with it is the caller's decision (suggest refuses it
 * unless --unverified, the report prints it in red). A log verify cannot read at all (missing,
 * not a regular file, no host key) is an error.
 *
 * The model: one struct ev_run per log; endpoints (struct ev_endpoint), one per host name as the
 * run's resolver saw it (decision.host, lower-case) and one per address reached without a name;
 * per endpoint the (port, protocol) pairs seen (struct ev_port) and the runs that used it
 * (struct ev_use); and the lists of things a reader looks at one by one: denials and would-be
 * denials (struct ev_denial), DNS answers (struct ev_dns), byte caps hit (struct ev_cut) and
 * alerts (struct ev_alert). Every array is owned by the struct evidence and valid until
 * evidence_free(); strings are decoded from the log (they may hold any byte but NUL: escape
 * them when printing).
 *
 * "Needed" traffic (EV_NEEDED): a connection the run made that went ahead, i.e. a decision
 * allow, or a report-mode deny (enforced false: it would have been denied under enforce but
 * was not). DNS redirects to the run's resolver (rule "dns"), the seccomp surface filter and
 * tls/flow_cut lines are not connections and are not counted as such.
 *
 * API stability: this header is shared with sluice report; members and functions are only
 * ever added.
 */
#ifndef SLUICE_EVIDENCE_H
#define SLUICE_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verify.h"

/* One log: its run, how it verified (as sluice verify says it), what its lines say of the run. */
struct ev_run {
	size_t idx; /* position in evidence.runs */
	char *path; /* the LOG as given */
	int status; /* enum verify_status of the log */
	/*
	 * The verdict in words, one line, as sluice verify's last line says it:
	 * "OK: intact and complete", "UNSEALED: intact, but the last 3 lines …",
	 * "LOSS: intact and sealed; 2 kernel records were lost …",
	 * "INVALID: line 12 (seq 11): why" (the where and why of verify_result).
	 */
	char *verdict;
	const char *verdict_word; /* "intact and sealed", "unsealed", "declared loss", "tampered" */
	struct verify_result *vr; /* verify's full result */
	bool verified;		  /* status is VERIFY_OK or VERIFY_LOSS */

	/* log_start's key: the run's own verifier key (one per run; NULL when none) */
	char *run_key;
	/* from run_start (NULL/0 when the log has none) */
	char *run_id;
	char *task;	       /* NULL when null in the log */
	char *policy;	       /* the policy file's path as the run named it */
	char *policy_sha256;   /* 64 hex digits */
	char *mode;	       /* "enforce" or "report" */
	char *default_verdict; /* "allow" or "deny" */
	char **argv;	       /* the command, n_argv words */
	size_t n_argv;
	int64_t start_ts; /* microseconds since the epoch: run_start's ts (else log_start's) */
	int64_t end_ts;	  /* the last line's ts */
	/* from run_end */
	bool has_run_end;
	char *end_why;
	bool has_exit_status;
	int64_t exit_status;
	uint64_t duration_ms;
	uint64_t lost; /* run_end.lost, or the loss lines' counts when there is no run_end */
	/* policy_change lines: the last one's policy, sha256 and mode (NULL: none) */
	size_t policy_changes;
	char *last_policy_sha256;
	char *last_mode;

	/* counts over the run's lines */
	uint64_t connections; /* connection decisions (see EV_NEEDED above), any verdict */
	uint64_t allowed;     /* ... decision allow */
	uint64_t denied;      /* ... denied and enforced */
	uint64_t would_deny;  /* ... denied, not enforced (report mode) */
	uint64_t blackholed;  /* ... reason blackhole (enforced in either mode) */
	uint64_t flows;	      /* flow lines */
	uint64_t dns_queries; /* dns lines */
	uint64_t cuts;	      /* flow_cut lines */
	uint64_t alerts;      /* alert lines */
	uint64_t would_deny_flows; /* flow lines of report-mode denials (decision deny) */
	/*
	 * How to name the run to a reader: its run id, or "ID (log N)" when another of the logs
	 * given has the same id (distinct runs may choose one: a CI job's fixed --run-id), N its
	 * place among them from 1; the path when it has no id. Set by evidence_sort: read it
	 * through ev_run_label.
	 */
	char *label;
};

static inline const char *ev_run_label(const struct ev_run *r)
{
	return r->label ? r->label : r->run_id ? r->run_id : r->path;
}

/* One (port, protocol) of an endpoint. */
struct ev_port {
	uint16_t port;
	char proto[8];	      /* "tcp", "udp", … as the log says */
	uint64_t connections; /* connection decisions, any verdict */
	uint64_t allowed, denied, would_deny, blackholed;
	uint64_t flows;			/* flow lines */
	uint64_t req_bytes, resp_bytes; /* the flows' sums */
	uint64_t max_req, max_resp;	/* the largest single flow each way */
	int64_t first_ts, last_ts;	/* of any line naming it */
};

/* One run's use of an endpoint. */
struct ev_use {
	size_t run; /* index into evidence.runs */
	uint64_t connections, needed, flows;
	uint64_t req_bytes, resp_bytes; /* the run's flows' sums: what a max_total_* cap judges */
	int64_t first_ts, last_ts;
};

enum ev_endpoint_kind {
	EV_HOST = 1, /* a name the run's resolver learned (decision.host) */
	EV_ADDR = 2, /* an address reached without a name (decision.host null) */
};

struct ev_endpoint {
	enum ev_endpoint_kind kind;
	char *name; /* EV_HOST: the name, lower-case; EV_ADDR: the address as the log writes it */
	/* EV_HOST: the CNAME chain the resolver followed under this asked name, in order */
	char **cnames;
	size_t n_cnames;
	/* EV_HOST: the addresses the resolver handed out for it; EV_ADDR: none */
	char **answers;
	size_t n_answers;
	/*
	 * EV_HOST: the addresses its connections went to; EV_ADDR: the names the run's resolver
	 * had answered it for when the log could not tell which one a line was for ("hosts")
	 */
	char **dsts;
	size_t n_dsts;
	uint64_t names_more; /* EV_ADDR: the most names a line said it did not list ("hosts_more") */
	struct ev_port *ports;
	size_t n_ports;
	struct ev_use *uses; /* one per run that named it, in run order */
	size_t n_uses;
	/* sums over ports */
	uint64_t connections, allowed, denied, would_deny, blackholed, flows;
	uint64_t req_bytes, resp_bytes, max_req, max_resp;
	uint64_t needed; /* allowed + would_deny: the connections that went ahead */
	uint64_t dns_queries, dns_denied; /* dns lines asking this name, and those not allow */
	uint64_t cuts;			  /* flow_cut lines */
	int64_t first_ts, last_ts;
	/* the rules the log named for it (decision.rule), comma-separated, NULL if none */
	char *rules;
	/* of its flows, those of report-mode denials, and what they carried */
	uint64_t would_deny_flows, would_deny_req_bytes, would_deny_resp_bytes;
};

enum ev_denial_kind {
	EV_DENY_CONNECT = 1, /* a decision or preexisting line with decision deny */
	EV_DENY_DNS = 2,     /* a dns line with decision deny/refused */
	EV_DENY_TLS = 3,     /* a tls line with decision deny */
	EV_DENY_SURFACE = 4, /* a seccomp/socket-family/setsockopt denial: no destination */
};

/* A denial or a would-be denial (enforced false), in log order. */
struct ev_denial {
	size_t run;
	enum ev_denial_kind kind;
	int64_t ts;
	uint64_t seq; /* the line's seq */
	bool enforced;
	char *type; /* the line's type: decision, dns, tls, preexisting */
	char *hook; /* NULL when the line has none */
	char *host; /* NULL when none */
	/* host NULL: the names the run's resolver had answered dst for ("hosts"), lower-case */
	char **hosts;
	size_t n_hosts;
	uint64_t hosts_more; /* and how many more it had ("hosts_more") */
	char *dst;	     /* NULL when none */
	uint16_t port;
	char *proto;  /* NULL when none */
	char *rule;   /* the rule named, or "default", "blackhole"; NULL when none */
	char *reason; /* decision.reason, tls.reason, dns.why; NULL when none */
	char *comm;
	int64_t pid; /* -1 when none */
	char *what;  /* surface denials: the line's "what" */
};

/* A dns line: what the run's resolver answered. */
struct ev_dns {
	size_t run;
	int64_t ts;
	char *host; /* the asked name */
	char *qtype;
	char *decision; /* allow, deny, refused, error */
	bool enforced;
	char *rule;
	char *rcode;
	char *comm;
	char **answers;
	size_t n_answers;
	char **cname;
	size_t n_cname;
	char *why; /* NULL when none */
};

/* A flow_cut line: a byte cap that cut a flow. */
struct ev_cut {
	size_t run;
	int64_t ts;
	char *host; /* NULL when none */
	char *dst;
	uint16_t port;
	char *proto;
	char *rule;
	char *cap; /* max_request_bytes, max_response_bytes, max_total_… */
	uint64_t limit, req_bytes, resp_bytes;
};

/* A connection decision (decision or preexisting line, not a DNS redirect or surface), in order. */
struct ev_conn {
	size_t run;
	int64_t ts;
	uint64_t seq;
	size_t endpoint; /* index into evidence.endpoints (kept right by evidence_sort) */
	char *type;	 /* decision or preexisting */
	char *hook;	 /* connect4, sendmsg6, tc, …; NULL for preexisting */
	char *host;	 /* NULL: reached without a name, or one of several (hosts) */
	/* host NULL: the names the run's resolver had answered dst for ("hosts"), lower-case */
	char **hosts;
	size_t n_hosts;
	uint64_t hosts_more; /* names it had too that the line does not list ("hosts_more") */
	char *dst;
	uint16_t port;
	char *proto;
	bool allow; /* decision allow */
	bool enforced;
	bool needed; /* allow, or a deny not enforced: it went ahead */
	char *rule;
	char *reason;
	char *comm;
	int64_t pid; /* -1 when none */
};

/*
 * A flow line: one connected flow that went ahead, when its socket was released: allowed, or
 * denied in report mode only (would_deny; logs of older sluices have no such lines).
 */
struct ev_flow {
	size_t run;
	int64_t ts;
	size_t endpoint; /* index into evidence.endpoints */
	char *host;	 /* NULL: no name, or one of several (hosts) */
	char **hosts;	 /* as ev_conn's */
	size_t n_hosts;
	uint64_t hosts_more;
	char *dst;
	uint16_t port;
	char *proto;
	char *rule;
	uint64_t req_bytes, resp_bytes, duration_ms;
	bool cut;
	char *comm;
	bool would_deny; /* decision deny, enforced false: a report-mode denial's flow */
};

/* An alert line. */
struct ev_alert {
	size_t run;
	int64_t ts;
	char *condition;
	char *what;
};

struct evidence {
	struct ev_run *runs;
	size_t n_runs;
	struct ev_endpoint
		*endpoints; /* hosts first (by name), then addresses; see evidence_sort */
	size_t n_endpoints;
	struct ev_denial *denials;
	size_t n_denials;
	struct ev_dns *dns;
	size_t n_dns;
	struct ev_cut *cuts;
	size_t n_cuts;
	struct ev_alert *alerts;
	size_t n_alerts;
	struct ev_conn *conns;
	size_t n_conns;
	struct ev_flow *flows;
	size_t n_flows;
	size_t lines; /* lines read into the model, all logs */
	/* private: hash of endpoint keys */
	void *priv;
};

/* An empty model (all zero). Returns 0 or -ENOMEM. */
int evidence_new(struct evidence **out);

/*
 * Verify the log at path with the host verifier key host_vkey (the key itself, as in its .pub
 * file: see evidence_read_pub) and add it as a run. Returns 0 when the log was added, whatever
 * its verdict (the run's status says it); -errno when it could not be read at all (verify's
 * VERIFY_ERROR, or no memory), with err saying which file and why. Runs are numbered in the
 * order added.
 */
int evidence_add_log(struct evidence *ev, const char *path, const char *host_vkey, char *err,
		     size_t err_len);

/*
 * r, the run just added, is one ev holds already (the same file, a copy, another segment): the
 * same run key, certified in both verified log_start lines. err then says which.
 */
bool evidence_same_run(const struct evidence *ev, const struct ev_run *r, char *err, size_t len);

/* Sort endpoints: names A-Z, then addresses A-Z; ports ascending. Call after the last add. */
void evidence_sort(struct evidence *ev);

void evidence_free(struct evidence *ev);

/* The endpoint of kind and name, or NULL. */
const struct ev_endpoint *evidence_find(const struct evidence *ev, enum ev_endpoint_kind kind,
					const char *name);

/*
 * A host verifier key: the path given (--key), else $SLUICE_PUB, else /etc/sluice/host.key.pub,
 * read as sluice verify reads it, into buf (NUL-terminated). 0, or -errno with err saying why
 * ("no host key: give --key PUB …", "read host key F: …").
 */
int evidence_read_pub(const char *opt, char *buf, size_t size, char *err, size_t err_len);

/*
 * What the decision commands share: a model of the logs paths[0..n), verified with the host key
 * of evidence_read_pub(key_opt). A log that cannot be read, or (unless unverified) one whose
 * status is not VERIFY_OK or VERIFY_LOSS, is refused: a message on stderr starting with prog
 * names the file and why (verify's verdict, with line), and every log is still tried so all
 * refusals are said at once. 0 and *out (sorted), or -errno (-EBADMSG: a log was refused).
 */
int evidence_load(const char *prog, char *const *paths, size_t n, const char *key_opt,
		  bool unverified, struct evidence **out);

/*
 * A string from a log, made safe for one line of text (a YAML comment, a table cell): bytes
 * outside printable ASCII, and backslash, as \xNN. Writes into buf, truncating with "...".
 */
const char *evidence_safe(const char *s, char *buf, size_t size);

/* "2026-12-02 04:31:04Z" for a ts in microseconds since the epoch. */
void evidence_utc(int64_t ts_us, char *buf, size_t size);

#endif /* SLUICE_EVIDENCE_H */
