/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * "sluice run": confine one command's network to a policy, in its own cgroup, and log it. The
 * second half of a run's life (streaming records until the run ends, then ending it) is shared
 * with "sluice resume" (resume.c), which takes over a run whose writer died.
 */
#ifndef SLUICE_RUN_H
#define SLUICE_RUN_H

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "cgroup.h"
#include "journal.h"
#include "note.h"
#include "records.h"
#include "util.h"

/* Exit statuses of sluice itself, apart from the command's own (docker/env convention). */
/* the log could not be written at some point (lines, records perhaps, are not in it) */
#define RUN_EXIT_LOG_INCOMPLETE 123
#define RUN_EXIT_SLUICE_ERROR 125 /* sluice could not set up or tear down the run */
#define RUN_EXIT_CANNOT_EXEC 126
#define RUN_EXIT_NOT_FOUND 127

/* a container's id (64 characters) and the -N of its next run (a container started again) */
#define RUN_ID_MAX 72
/* addresses the resolver may hand out, per family (a resumed writer's switch sizes by it too) */
#define RUN_LEARNED_MAX LOADER_LEARNED_MAX
#define RUN_RINGBUF_KIB 1024   /* the ring buffer, unless --ringbuf-kib */
#define RUN_HOST_KEY "/etc/sluice/host.key"
#define RUN_CERT_MAX 1024 /* the host key's note certifying the run key */
#define RUN_UPSTREAM_MAX 64 /* "[IPv6]:PORT" */

struct sandbox_seccomp;

struct run_args {
	const char *cmd_name; /* "sluice run" or "sluice resume", for messages */
	const char *policy_path;
	const char *run_id;
	const char *task;
	const char *mode;
	const char *log_path;
	const char *cgroup_parent;
	const char *cgroup_path; /* a daemon's attach: an existing cgroup (attached run) */
	const char *source;	 /* a daemon's attach: what asked ("pid:N", "oci-hook", …) */
	const char *netns;
	const char *upstream;
	const char *user;
	const char *alerts;
	const char *key_path; /* --key, $SLUICE_KEY or RUN_HOST_KEY */
	unsigned long checkpoint_lines;
	unsigned long checkpoint_secs;
	int checkpoint_fd; /* --checkpoint-fd, or -1 */
	unsigned long rotate_kib;
	bool dns_ttl;
	bool strict_evidence;
	bool allow_root; /* no --user: CMD as full root instead of a confined one */
	/* an attach: the operator says its workload holds no CAP_NET_ADMIN (attach --reset-peers) */
	bool reset_peers;
	unsigned long ringbuf_kib;
	bool verbose;
	bool standalone;     /* --standalone: never hand the run to a daemon (handoff.c) */
	const char *socket;  /* --socket: the daemon's socket to hand the run to */
	char **cmd;
	int n_cmd;
};

struct run {
	struct run_args args;
	char run_id[RUN_ID_MAX + 1];
	char log_path[PATH_MAX];
	struct policy *policy;
	struct policy_compiled *compiled;
	const char *switch_by; /* who asked for the switch under way (a daemon client), or NULL */
	struct loader *loader;
	struct run_cgroup cg;
	struct events *events;
	struct journal *journal;
	struct resolver *resolver;
	struct hostnames *hosts; /* the names the resolver learns addresses for */
	struct records rec; /* the log's lines; borrows the pointers above */
	int netns_fd;
	struct note_signer *run_key; /* signs this run's checkpoints, certified by the host key */
	char host_vkey[NOTE_VKEY_MAX + 1];
	char cert[RUN_CERT_MAX];
	char upstream[RUN_UPSTREAM_MAX]; /* where the resolver asks, as run_start names it */
	struct sockaddr_storage upstream_ss; /* the same; upstream_len 0: none */
	socklen_t upstream_len;
	uid_t uid; /* what CMD runs as */
	gid_t gid;
	bool no_backstop;      /* selftests: the packet checks are off */
	struct sandbox_seccomp *seccomp; /* the workload's socket-family filter; NULL: none (a
					    resume, or the selftests' SLUICE_SELFTEST_NO_SECCOMP) */
	char host_side[256];   /* the veth peers the tc program watches, "" for none */
	/*
	 * The cgroup is someone else's (a daemon attached to it): its processes are never killed
	 * nor the cgroup removed; the run ends when the cgroup goes, or on detach.
	 */
	bool attached;
	/* every line as it is logged (journal_opts.on_line): a daemon's live view; NULL: none */
	void (*on_line)(const char *line, size_t len, void *ctx);
	void *line_ctx;
	bool still_running; /* processes survived the kill: enforcement must stay in place */
	bool started;	    /* the log holds the run's first line */
	/* a resume that has not taken the run over: its end leaves it exactly as it was */
	bool hands_off;
	struct pool *pool;    /* a daemon's spares, which run_setup may take from; NULL: none */
	bool from_spare;      /* the programs are a spare's */
	const char *spare_why; /* else why not (static) */
	struct loader_opts setup_lo; /* the programs' options, from run_setup_begin to _end */
	/* the host side attaching on a thread of its own, from run_setup_attach to _serve */
	struct util_job host_side_job;
	bool host_side_attaching;
};

/* argv starts after "run". Returns the process exit status. */
int run_main(int argc, char **argv);

/* A run id names a cgroup and a bpffs directory: 1-72 of [A-Za-z0-9_-], not "-" first. */
int run_check_id(const char *id);

/* A cgroup's name below the v2 hierarchy (--cgroup-parent): one safe path component. */
int run_check_component(const char *name);

/* A waitpid status as sluice run exits with it: the exit code, 128+N for signal N. */
int run_status_of(int wstatus);

struct confine;
/*
 * The default root workload's mount table (confine.h): the host key hidden, the log, its
 * checkpoints and the alerts file read-only.
 */
int run_confine(const struct run *r, struct confine *c);

/* A run as the commands start it: nothing created yet, every descriptor -1. */
void run_init(struct run *r, const char *cmd_name);

/* A decimal option value in [min, max]; says why not on stderr. */
int run_parse_ulong(const struct run_args *a, const char *opt, const char *s, unsigned long min,
		    unsigned long max, unsigned long *out);
/* --checkpoint-fd: an inherited descriptor open for writing, made close-on-exec. */
int run_take_checkpoint_fd(const struct run_args *a, const char *s, int *out);

/*
 * The run's own key, certified by the host key (args.key_path, $SLUICE_KEY or RUN_HOST_KEY):
 * r->run_key, r->host_vkey, r->cert.
 */
int run_make_key(struct run *r, char *msg, size_t msg_len);
/* The host key's path: --key, else $SLUICE_KEY, else RUN_HOST_KEY. */
const char *run_key_path(const struct run_args *a);

/*
 * Bind the run's resolver (in r->netns_fd, else in args.netns if given) on port (0: one of its
 * own), asking r->upstream_ss if set, else args.upstream or /etc/resolv.conf's first
 * nameserver; it serves from resolver_serve on.
 */
int run_start_resolver(struct run *r, uint16_t port, char *err, size_t err_len);

/* The run's host-name registry (r->hosts, named by its records), made once. Returns 0 or -errno. */
int run_new_hostnames(struct run *r);


/* What the programs keep for a resume: the policy's digest, upstream, dns_ttl, the netns. */
int run_cfg_of(const struct run *r, struct sl_run_cfg *cfg);

/*
 * Load the policy, start the resolver, load and attach the programs (to a new cgroup, or to
 * args.cgroup_path for an attached run), open the log. Says why not in err.
 */
int run_setup(struct run *r, char *err, size_t err_len);

/*
 * run_setup in its three steps, for a daemon that verifies a run's programs off its loop.
 * run_setup_begin: what comes before the programs' load (the policy, the key, the resolver
 * bound, not serving; a spare taken where one fits): *need_load says whether run_setup_load
 * must follow. run_setup_load: the programs loaded and verified (seconds): from any thread,
 * it writes r->loader only and reads what begin left (r->setup_lo, the policy), which nothing
 * else may change meanwhile. run_setup_end: from begin's thread again: the programs attached,
 * the ring buffer, the log, the resolver serving. A failure at any step leaves the run to
 * run_close, as run_setup's.
 */
int run_setup_begin(struct run *r, bool *need_load, char *err, size_t err_len);
int run_setup_load(struct run *r, char *err, size_t err_len);
int run_setup_end(struct run *r, char *err, size_t err_len);

/*
 * run_setup_end in two halves, for a caller with work of its own to do while the host side
 * attaches (the daemon's state file). run_setup_attach: the cgroup's programs attached, the
 * host side attaching on a thread of its own (a new tcx link waits out an RCU grace period in
 * the kernel), the ring buffer and the log opened meanwhile. run_setup_serve: the host side
 * waited for, then the resolver serving. Every attach is followed by a serve, given attach's
 * return, failed or not; it returns the first failure (the host side's before the log's).
 */
int run_setup_attach(struct run *r, char *err, size_t err_len);
int run_setup_serve(struct run *r, int ret, char *err, size_t err_len);

/* The log's run_start line: how the run was started (after run_setup). */
void run_write_start(struct run *r);

/* The descriptors a poll loop watches for the run (ring buffer, seccomp); returns how many. */
int run_poll_fds(const struct run *r, struct pollfd *pfd, int max);

/*
 * One turn of the run's loop, after a poll: answer the seccomp filter, drain the ring buffer,
 * write due checkpoints. Returns true when the run has ended by itself (an attached run's
 * cgroup is gone; a resumed run's cgroup is empty), with *why saying so.
 */
bool run_step(struct run *r, const char **why);

/* --alerts, opened for appending. */
int run_open_alerts(struct run *r, char *err, size_t err_len);

/* The signals that end a run, blocked and readable from *sig_fd; old gets the previous mask. */
int run_block_signals(sigset_t *old, int *sig_fd);

/*
 * Stream records until the run ends: the command child exits (child > 0; *has_status then
 * true), or, with child -1, the run's cgroup is empty; or sluice gets SIGINT, SIGTERM, SIGHUP.
 * Returns the status to exit with; *why says which.
 */
int run_supervise(struct run *r, pid_t child, int sig_fd, bool *has_status, const char **why);

/*
 * End the run: kill what is left in its cgroup, stop the resolver, detach the programs (if no
 * process survived), drain the last records, write host totals, loss ranges and run_end, seal.
 */
void run_finish(struct run *r, bool has_status, int status, const char *why);

/* Undo whatever was set up, close the log. Returns 0, or -errno if something was left. */
int run_close(struct run *r);

#endif /* SLUICE_RUN_H */
