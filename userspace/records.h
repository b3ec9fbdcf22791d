/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a run's log says: every kernel record, DNS answer and loss count becomes a line (and a
 * denial a notice on stderr, an alert where the policy's alert_on asks), and the run ends with
 * its host totals, the kernel sequence numbers that have no line, and run_end. Shared by the two
 * writers a run's log can have: sluice run, and sluice resume after the first one died — which
 * first rebuilds this state from the lines the dead writer left (records_restore_line).
 */
#ifndef SLUICE_RECORDS_H
#define SLUICE_RECORDS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <linux/types.h>

#include "../bpf/sluice.h"
#include "../policy/policy.h"
#include "dns.h"
#include "events.h"
#include "journal.h"
#include "jsonline.h"
#include "loader.h"
#include "hostnames.h"
#include "resolver.h"
#include "sandbox_seccomp.h"
#include "seqset.h"

#define RECORDS_TASK_MAX 256

/* What names a kernel record's line: its type, kseq, socket (or ifindex), process, destination. */
struct records_mark {
	char type[16];
	uint64_t kseq, cookie, pid;
	uint64_t port;
	char dst[64];
};

struct hosttotals;
struct sni_slot;
struct records_kseqs;

/*
 * A policy generation a live switch ended (switch.c): its policy, the generation (sl_flow.era of
 * the flows it judged), the mode it was in force in, and the CLOCK_BOOTTIME the next one took
 * over. A set-mode keeps the policy (borrowed: the run's, or a later generation's, which owns it).
 */
struct records_kill; /* records.c */

struct records_era {
	struct policy *policy;
	bool owned;
	int mode;
	uint32_t era;
	uint64_t until_ns;
};

struct records {
	/* Set by the writer before use; borrowed. */
	const char *run_id;
	const char *task;	 /* --task, or NULL */
	const char *log_path;	 /* for messages */
	const char *alerts_path; /* --alerts, or NULL */
	const struct policy *policy;
	/*
	 * The generation policy stands for (sl_cfg.era of the programs that judge under it; 0:
	 * unknown): a switch sets both at once, before it reads what the new programs recorded.
	 */
	uint32_t era;
	struct hostnames *hosts; /* the run's host names; may be NULL: hosts are then unnamed */
	struct loader *loader;
	struct events *events;
	struct journal *journal;
	/*
	 * Ends a denied or cut flow's socket: the run's to do (run.c), not the log's; the line
	 * says what became of it. 0, -EOPNOTSUPP (the kernel cannot), -errno. NULL: nothing is.
	 */
	int (*kill_socket)(void *ctx, uint64_t cookie, uint32_t tgid);
	void *kill_ctx;
	/*
	 * The sockets to end, with their records' lines, which say what became of each: queued
	 * by the drain, ended (and the lines written) by records_kill_queued after it. A walk of
	 * the socket table inside the drain held every record and DNS answer behind it.
	 */
	struct records_kill *kills;
	size_t n_kills;
	/* records one records_drain takes at most (0: all): a daemon's runs share one loop */
	size_t drain_max;
	int alerts_fd; /* --alerts, or -1 */
	struct timespec started_at; /* run_start's time, for run_end's duration */
	bool strict; /* --strict-evidence: a failed log refuses new connections (for messages) */

	/* Kept here. */
	char task_text[RECORDS_TASK_MAX + 1]; /* the task made safe for stderr notices, or "-" */
	pthread_mutex_t notice_lock; /* the last DNS denial announced, shared with resolver threads */
	char last_denied_name[DNS_NAME_MAX];
	int64_t last_denied_ns;
	int64_t boot_to_real_ns; /* CLOCK_REALTIME - CLOCK_BOOTTIME, to date kernel timestamps */
	uint64_t lost_reported[SL_HOOK_MAX];
	uint64_t denials;
	uint64_t unlogged; /* decision records the policy's log: setting leaves out */
	struct records_kseqs *kseqs; /* the ring-buffer reader's (main) thread only */
	bool journal_failed;
	bool log_broke; /* the log failed at some point of the run (records_log_failed) */
	/* kernel records read from the ring buffer that never reached the log, and those declared */
	uint64_t unwritten;
	uint64_t unwritten_reported;
	struct sni_slot *sni_cache; /* server names of open TLS flows, for their flow lines */
	struct hosttotals *totals;  /* bytes per (rule, host), for the host_total lines */
	uint64_t totals_unwritten;  /* host_total lines a full disk had no room for */
	/* the policies switches replaced, oldest first: a flow's rule is named by the one in force
	   at its connect() (records_policy_replaced) */
	struct records_era *eras;
	size_t n_eras;

	/* A resumed writer: what the dead one's lines account for (records_restore_line). */
	bool resumed;
	uint64_t restored_records; /* lines of kernel records (those with a kseq) */
	/* the dead writer's last kernel-record line, for the first record read (see below) */
	struct records_mark last;
	bool check_first;
};

/* Initialise the writer's own state (after the fields above are set). Returns 0 or -errno. */
int records_init(struct records *r);
/*
 * A switch ended a policy generation old_era: old, in force in mode old_mode, until CLOCK_BOOTTIME
 * since_ns; flows judged in it are still named by old's rules, and their denials said enforced
 * as old_mode says. owned: old was replaced (the records now own it, and free it); else it is
 * still in force (a set-mode: its mode changed), and owned by the run.
 */
int records_policy_replaced(struct records *r, struct policy *old, bool owned, int old_mode,
			    uint32_t old_era,
			    uint64_t since_ns);

/* Free what records_init and the records made. Accepts a zeroed struct. */
void records_free(struct records *r);

/* The ring-buffer handlers (ctx: the struct records). */
extern const struct events_handlers records_handlers;
/* The resolver's per-query callback (ctx: the struct records). */
void records_on_dns(const struct resolver_event *ev, void *ctx);

/*
 * A call the workload's seccomp filter refused, as sluice answered it (ctx: the struct
 * records): a decision line with hook "seccomp" (no kseq: sluice, not a program, records it),
 * a notice on stderr, deny alerts.
 */
void records_on_refusal(const struct sandbox_refusal *ref, void *ctx);

/*
 * A socket the run's processes held before its programs were attached (preexisting.c), as
 * judged: one "preexisting" line, and for a denial a notice on stderr and deny alerts.
 */
struct records_preexisting {
	uint32_t pid;	  /* the first process found holding it */
	uint32_t holders; /* how many of the run's processes hold it */
	char comm[16];
	uint8_t family;	  /* AF_INET, AF_INET6 */
	uint8_t protocol; /* IPPROTO_TCP, IPPROTO_UDP */
	uint8_t state;	  /* TCP_ESTABLISHED…, as sock_diag reports it */
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint64_t cookie;
	uint64_t inode;
	uint64_t netns; /* the inode of its network namespace */
	/* the judgment */
	uint8_t verdict; /* SL_VERDICT_* */
	uint8_t reason;	 /* SL_REASON_* */
	long rule;	 /* 0-based rule index, or -1 (default, blackhole) */
	bool enforced;	 /* false: a report-mode denial */
	bool has_v4;	 /* an IPv6 destination embeds the IPv4 address that was judged */
	bool by_name;	 /* allowed through a learned address alone (no CIDR rule covers it) */
	uint8_t v4[4];
	uint32_t sni_host; /* a switch put it under the rule of the name its ClientHello named
			      (host_id, its flow's host from then on); 0: not so */
	const char *flow; /* what became of it: "open", "destroyed", "left open (…)" */
	const char *unread; /* a switch could not read its state in the kernel: why; else NULL */
};

void records_preexisting(struct records *r, const struct records_preexisting *p);

/* Start a line of the run: ts, type, run_id and task. */
void records_line(struct records *r, struct journal_line *l, const char *type,
		  const struct timespec *ts);
/*
 * Write a line; a failure of the log is said once on stderr (enforcement goes on, or with
 * --strict-evidence new connections are refused). Returns 0 or the journal's error.
 */
int records_write(struct records *r, struct journal_line *l);
/* The first failure of the log (err < 0), said once. */
void records_journal_error(struct records *r, int err);

/*
 * The journal's on_fail (ctx: the struct records): the decision layer is told at once
 * (loader_log_unwritable), so that --strict-evidence refuses new connections.
 */
void records_log_failed(int err, void *ctx);
/* The log failed at some point of the run: a line, a record perhaps, could not be written. */
bool records_log_incomplete(const struct records *r);

/*
 * Read what the ring buffer holds, turn new loss counts into loss lines, flush the log. A log
 * that ran out of space is retried first: a "loss" line of hook "log" declares the records
 * that could not be written, and the log goes on.
 */
void records_drain(struct records *r);
/*
 * End the sockets of the denied and cut flows records_drain queued, and write their lines
 * (with what became of each). After every records_drain, on the run's loop, with no lock held:
 * a socket table's walk can take long. Before run_end and before a switch's policy_change.
 */
void records_kill_queued(struct records *r);

/*
 * The end of the run, after the last drain: host_total lines, loss_ranges, run_end. status is
 * the command's exit status; has_status false writes null (a resumed writer cannot know it).
 */
void records_end(struct records *r, bool has_status, int status, const char *why);

/*
 * A resumed writer, before anything new is written: fold one line of the dead writer's log
 * (verified, in order) into the state the records keep — the kernel sequence numbers that have
 * a line, the loss counts already declared, the denials, the server names of TLS flows still
 * open and the bytes of finished flows per host. The first record read after it is not
 * written again when it is the dead writer's last kernel-record line — the same kseq, type,
 * socket, process and destination: libbpf moves the ring buffer's consumer position only once
 * a record's handler returns, and a line can be on disk before that (a checkpoint inside the
 * handler), so the writer may have died in between. A line that only claims that kseq (an
 * edit of the unsigned tail) does not hide the record: it is written, and verify finds the
 * kseq twice.
 */
void records_restore_line(struct records *r, const struct jsonline *jl);

#endif /* SLUICE_RECORDS_H */
