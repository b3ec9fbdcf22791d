// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * "sluice daemon": see daemon.h. One thread runs the loop: the control socket's clients, every
 * run's ring buffer and checkpoints, the signals. A run's resolver answers on threads of its
 * own, as in sluice run. Requests are answered in order. An attach takes a spare set of
 * programs, verified in advance on the spares' thread (pool.c), when its policy fits one (a few
 * milliseconds). Otherwise its programs, and a switch's (set_mode, replace_policy), are loaded
 * and verified on a thread of their own (bg_load), seconds on a loaded machine, while the loop
 * goes on with every run and client; the attach, or the switch, is committed on the loop.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "daemon.h"
#include "handoff.h"
#include "sandbox_seccomp.h"
#include "cgroup.h"
#include "metrics.h"
#include "version.h"
#include "journal.h"
#include "loader.h"
#include "pool.h"
#include "preexisting.h"
#include "records.h"
#include "resume.h"
#include "run.h"
#include "runopts.h"
#include "switch.h"
#include "util.h"

#define DAEMON_RUNS_MAX 256
/* every handed run holds two (its connection, its events stream), and root's tools need room */
#define DAEMON_CLIENTS_MAX (2 * DAEMON_RUNS_MAX + 64)
#define DAEMON_PASSED_FDS_MAX 16 /* descriptors one read takes in (one is ever expected) */
#define DAEMON_POLL_MS 100	     /* as sluice run: how late an allow record may reach the log */
#define DAEMON_CLIENT_IDLE_MS 10000 /* a client that sends no whole request in this long */
#define DAEMON_STREAM_SNDBUF (4 << 20)
/*
 * Records a run's turn of the loop takes at most (about 30 ms of writing): a workload that
 * floods its ring buffer (denials in a loop) must not hold every other run and client.
 */
#define DAEMON_DRAIN_MAX 1024
#define DAEMON_TEXTFILE_MS 15000 /* --metrics-textfile: how often it is rewritten */
#define DAEMON_SPARES 2		 /* --spares */
#define DAEMON_SPARES_MAX 16
/*
 * Loads verified at once, each on a thread of its own (bg_load): switches' and attaches' alike,
 * one limit for both, in the order they were asked; more wait their turn. A load keeps a CPU
 * busy and the kernel's BTF parsed (tens of MiB) while it lasts, whichever asked for it: more
 * at once would only share the CPUs, and a burst (a fleet's set-mode, a node's containers
 * starting) must not take the host's memory. The spares' thread (pool.c) loads apart, one at a
 * time, at nice 19.
 */
#define DAEMON_LOAD_THREADS 2
/*
 * A spare's policy maps: runs whose policy has more CIDRs per family, or more rules, load their
 * own. The tries allocate per entry (nothing up front); the rule arrays are allocated whole
 * (168 bytes a rule). The ring buffer and learned-address maps are an attach's (it has no
 * options for them).
 */
#define DAEMON_SPARE_CIDRS 16384
#define DAEMON_SPARE_RULES 256

struct daemon;

struct client {
	int fd;
	bool stream; /* an "events" viewer: lines are pushed to it */
	bool dead;   /* to be closed by the loop (a viewer that fell behind, a bad request) */
	struct drun *only; /* a viewer of one run; NULL: every run */
	int64_t since_ms;
	char who[128]; /* "pid N (comm), loginuid U", read at accept, for the log of a switch */
	struct drun *owns; /* a run handed over by sluice run (op "run"): it ends when this closes */
	int passed_fd;	   /* the descriptor the last request carried (SCM_RIGHTS), or -1 */
	/*
	 * Its last request is answered later (a switch, or a detach or run_end waiting for one):
	 * no other request of it is read meanwhile (answers in order), nor is it idle.
	 */
	bool waiting;
	size_t len;
	char buf[CONTROL_LINE_MAX];
};

/* An attached run and the request strings it keeps (struct run borrows them). */
struct drun {
	struct run r;
	struct daemon *d;
	char *cgroup, *policy, *task, *mode, *netns, *upstream, *source;
	/* a run handed over by sluice run: its own key, alerts file, user, and command line */
	char *key, *alerts, *cgroup_parent, *user;
	char **argv, *argv_buf;
	char state_path[PATH_MAX];
	int64_t attached_ms; /* the time the attach took */
	/*
	 * A load of the run's in flight (bg_load), NULL: none. A run in daemon.runs: a switch's;
	 * a run in daemon.attaching (not attached yet): its attach's.
	 */
	struct bg_load *bg;
	/*
	 * The run's end, come while its switch was in flight: the switch thread reads the run's
	 * loader until it is joined, so the end waits for that (switch_finish), the switch is
	 * dropped, and the run ends as asked (at once when the switch had no thread yet). end_why NULL: no end pending. end_client (NULL: none, or
	 * gone) waits for the reply to its detach (end_detach) or run_end (end_status).
	 */
	const char *end_why;
	char end_why_buf[64];
	bool end_detach, end_has_status;
	int end_status;
	struct client *end_client;
};

/*
 * A load in flight: a switch of dr (BG_SWITCH), or dr's attach (BG_ATTACH). Its thread loads and
 * verifies the programs, then writes this struct's address into the daemon's load_done pipe;
 * the loop joins it there (load_finish) and commits, or drops, the switch (switch_finish) or the
 * attach (attach_finish). An attach's run is the thread's alone meanwhile (run_setup_load): it
 * is in no run table the loop drains, only in daemon.attaching, whose entries the loop reads
 * (their id, cgroup and policy, for status and for refusing a second attach of them) but never
 * changes. What a switch's thread reads meanwhile is switch.h's to say (switch_load):
 * the run's loader, read only but for the era it draws, and the policy switch_prepare chose; the
 * loop keeps off the rest of it for as long: one switch per run (a second is refused), and the
 * run's end waits (drun.end_why); the run's ring buffer, resolver and log go on, through map
 * descriptors and objects the thread does not change. libbpf keeps nothing global that two
 * loads (or a load and a lookup) on distinct objects share unsafely: the spares' thread
 * (pool.c) loads beside the load threads likewise, and the loader's libbpf_hush is
 * per thread.
 */
struct bg_load {
	struct daemon *d;
	enum { BG_SWITCH, BG_ATTACH } kind;
	struct drun *dr;
	struct switch_job *job; /* BG_SWITCH's */
	struct client *client; /* waiting for the answer; NULL once it is gone */
	char who[128];	       /* its client_who, for the policy_change line */
	struct bg_load *next;  /* queued behind DAEMON_LOAD_THREADS others: the next one */
	bool started;	       /* its thread runs (or ran): to be joined */
	pthread_t thread;
	int ret;	       /* switch_load's or run_setup_load's, and why not in err */
	char err[1024];
	int64_t asked_ms;      /* when its request came */
	int64_t load_ms;       /* how long the load took */
};

/* An op's return: the reply comes later (client.waiting), not now. */
#define REPLY_LATER 1

struct daemon {
	const char *socket_path;
	const char *state_dir;
	const char *log_dir;
	const char *key_path;
	bool verbose;
	int lock_fd, sock_lock_fd, listen_fd, sig_fd;
	struct drun *runs[DAEMON_RUNS_MAX];
	size_t n_runs;
	struct client *clients[DAEMON_CLIENTS_MAX];
	size_t n_clients;
	/* the viewers, as the journal's writers (any run's, any thread) reach them */
	pthread_mutex_t tap_lock;
	/* counters of every line written (their own lock), served over HTTP and/or a textfile */
	struct metrics *metrics;
	struct metrics_http *http;
	const char *metrics_listen, *metrics_textfile;
	int64_t textfile_due_ms;
	bool textfile_failed;
	unsigned int spares; /* --spares */
	struct pool *pool;   /* NULL: --spares 0 */
	int load_done[2];	    /* load threads -> loop: a struct bg_load * per finished load */
	struct bg_load *load_queue; /* loads waiting for a thread, first first */
	unsigned int loads_running; /* threads started and not joined */
	/* runs whose attach loads their programs (bg_load): in no other table until committed */
	struct drun *attaching[DAEMON_RUNS_MAX];
	size_t n_attaching;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice daemon [--socket PATH] [--state-dir DIR] [--log-dir DIR] [--key FILE]\n"
		"                     [-v]\n"
		"\n"
		"One process per host that attaches policies to cgroups other software made (a\n"
		"container's, a unit's, a CI job's) on request, and writes each run's signed log.\n"
		"Clients: sluice attach, detach, status, set-mode, replace-policy, events, oci-hook,\n"
		"and sluice run, which hands its run over (set up from a spare, logged here).\n"
		"It stays in the foreground; stopping it leaves every run enforced, and the next daemon\n"
		"takes them over.\n"
		"An attach also judges the connections the cgroup's processes already hold (TCP,\n"
		"connected UDP): each is a \"preexisting\" line; in enforce mode a denied one is\n"
		"destroyed.\n"
		"\n"
		"  --socket PATH    the control socket (default %s; $SLUICE_SOCKET): root only\n"
		"  --state-dir DIR  which runs it owns, for the next daemon (default %s); one daemon\n"
		"                   per state directory, and per socket\n"
		"  --log-dir DIR    where a run's log goes when the attach names none (default %s)\n"
		"  --key FILE       the host key that certifies each run's key (default $SLUICE_KEY,\n"
		"                   else %s)\n"
		"  --metrics-listen ADDR  serve Prometheus metrics of every run's lines at\n"
		"                   http://ADDR/metrics (IP:PORT, [IPv6]:PORT, PORT: 127.0.0.1)\n"
		"  --metrics-textfile PATH  write them to PATH every 15 s, atomically (for\n"
		"                   node-exporter's textfile collector: a .prom file)\n"
		"  --spares N       keep N sets of programs loaded and verified in advance, so\n"
		"                   that an attach whose policy fits one (at most %d CIDRs per\n"
		"                   family, %d rules) takes milliseconds (default %d,\n"
		"                   at most %d; 0: every attach loads its own)\n"
		"  -v, --verbose    libbpf's messages\n"
		"\n"
		"Exit status: 0 stopped by a signal (runs left enforced), 125 could not start.\n",
		CONTROL_SOCKET_DEFAULT, DAEMON_STATE_DIR, DAEMON_LOG_DIR, RUN_HOST_KEY,
		DAEMON_SPARE_CIDRS, DAEMON_SPARE_RULES - 1, DAEMON_SPARES, DAEMON_SPARES_MAX);
}

/* ------------------------------------------------------------------------------------------ */
/* Viewers */

/* journal_opts.on_line: push the line to every viewer of the run, never waiting for one. */
static void tap_line(const char *line, size_t len, void *ctx)
{
	struct drun *dr = ctx;
	struct daemon *d = dr->d;
	size_t i;

	if (d->metrics)
		metrics_observe_raw(d->metrics, line, len);
	pthread_mutex_lock(&d->tap_lock);
	for (i = 0; i < d->n_clients; i++) {
		struct client *c = d->clients[i];
		ssize_t n;

		if (!c->stream || c->dead || (c->only && c->only != dr))
			continue;
		n = send(c->fd, line, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		/* a viewer that cannot keep up is dropped: its cut line tells it so */
		if (n != (ssize_t)len)
			c->dead = true;
	}
	pthread_mutex_unlock(&d->tap_lock);
}

/* ------------------------------------------------------------------------------------------ */
/* Runs */

/* The run of that id among runs[0..n-1] (the attached ones, or those being attached), or NULL. */
static struct drun *find_in(struct drun *const *runs, size_t n, const char *run_id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(runs[i]->r.run_id, run_id))
			return runs[i];
	return NULL;
}

static struct drun *find_run(struct daemon *d, const char *run_id)
{
	return find_in(d->runs, d->n_runs, run_id);
}

static struct drun *find_attaching(struct daemon *d, const char *run_id)
{
	return find_in(d->attaching, d->n_attaching, run_id);
}

static void drun_free(struct drun *dr)
{
	if (!dr)
		return;
	free(dr->cgroup);
	free(dr->policy);
	free(dr->task);
	free(dr->mode);
	free(dr->netns);
	free(dr->upstream);
	free(dr->source);
	free(dr->key);
	free(dr->alerts);
	free(dr->cgroup_parent);
	free(dr->user);
	free(dr->argv);
	free(dr->argv_buf);
	free(dr);
}

/* The state file that tells the next daemon where the run's log is. */
static int state_path(const struct daemon *d, const char *run_id, char *buf, size_t len)
{
	return util_fmt(buf, len, "%s/runs/%s", d->state_dir, run_id);
}

/* The log of a run whose client named none: the daemon's log directory's RUN_ID.jsonl. */
#define DEFAULT_LOG_EXT ".jsonl"
static int default_log_path(const struct daemon *d, const char *run_id, char *buf, size_t len)
{
	return util_fmt(buf, len, "%s/%s" DEFAULT_LOG_EXT, d->log_dir, run_id);
}

/* Whether something is pinned under run_id (its path, into pins, for the message). */
static bool run_pinned(const char *run_id, char *pins, size_t len)
{
	return util_fmt(pins, len, "%s/sluice/%s", LOADER_BPFFS, run_id) || !access(pins, F_OK);
}

/*
 * The state file: the run's log path and "\n"; while the attach is under way, "attaching\n"
 * after it. It is written before anything is pinned, so that a daemon killed at any moment of
 * an attach leaves the next one a name for every pin: it takes the run over, or, for an attach
 * its client was never told "ok" of, undoes it (adopt_runs). Each form is written whole under
 * a temporary name (".ID.new", ".ID.done": no run id starts with '.', adopt_runs skips and
 * removes them), fsynced, and renamed into place: a crash of the host finds either form whole,
 * never a name with its data missing.
 */
#define STATE_ATTACHING "attaching\n"
#define STATE_TMP_ATTACHING ".new"
#define STATE_TMP_DONE ".done"

static int state_tmp_path(const struct drun *dr, const char *suffix, char *buf, size_t len)
{
	return util_fmt(buf, len, "%s/runs/.%s%s", dr->d->state_dir, dr->r.run_id, suffix);
}

/* A name of state_tmp_path's (".ID" and a suffix of theirs). */
static bool state_tmp_name(const char *name)
{
	size_t n = strlen(name), a = strlen(STATE_TMP_ATTACHING), b = strlen(STATE_TMP_DONE);

	return name[0] == '.' &&
	       ((n > a + 1 && !strcmp(name + n - a, STATE_TMP_ATTACHING)) ||
		(n > b + 1 && !strcmp(name + n - b, STATE_TMP_DONE)));
}

/* The state file's content written to tmp, fsynced; on failure tmp is removed. */
static int state_write_tmp(const struct drun *dr, const char *tmp, bool attaching)
{
	int fd, err = 0;
	size_t len = strlen(dr->r.log_path);
	size_t alen = attaching ? strlen(STATE_ATTACHING) : 0;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, dr->r.log_path, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
	    (alen && write(fd, STATE_ATTACHING, alen) != (ssize_t)alen) || fsync(fd))
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* The state file, in the form attaching says, renamed into place. */
static int write_state(struct drun *dr, bool attaching)
{
	char tmp[PATH_MAX + 16];
	int err;

	if (state_tmp_path(dr, attaching ? STATE_TMP_ATTACHING : STATE_TMP_DONE, tmp, sizeof(tmp)))
		return -ENAMETOOLONG;
	err = state_write_tmp(dr, tmp, attaching);
	if (!err && rename(tmp, dr->state_path)) {
		err = -errno;
		unlink(tmp);
	}
	return err;
}

/* Take the run out of the table (the viewers of it stop) and free it. */
static void remove_run(struct daemon *d, struct drun *dr)
{
	size_t i;

	pthread_mutex_lock(&d->tap_lock);
	for (i = 0; i < d->n_clients; i++) {
		if (d->clients[i]->only == dr) {
			d->clients[i]->only = NULL;
			d->clients[i]->dead = true;
		}
		if (d->clients[i]->owns == dr)
			d->clients[i]->owns = NULL;
	}
	for (i = 0; i < d->n_runs; i++)
		if (d->runs[i] == dr) {
			d->runs[i] = d->runs[--d->n_runs];
			break;
		}
	pthread_mutex_unlock(&d->tap_lock);
	drun_free(dr);
}

/*
 * The run is over (detached, its cgroup gone, its sluice run's command ended or its client gone):
 * its log is sealed, its state forgotten. A handed run's processes are killed first, as sluice
 * run's are; rep (or NULL) gets whether the log is complete and the cgroup emptied.
 */
static void end_run_status(struct daemon *d, struct drun *dr, bool has_status, int status,
			   const char *why, struct control_msg *rep)
{
	int err;

	run_finish(&dr->r, has_status, status, why);
	if (rep) {
		control_msg_bool(rep, "log_incomplete", records_log_incomplete(&dr->r.rec));
		control_msg_bool(rep, "still_running", dr->r.still_running);
		control_msg_str(rep, "log", dr->r.log_path);
	}
	err = run_close(&dr->r);
	fprintf(stderr, "sluice daemon: run %s ended (%s)%s; log %s\n", dr->r.run_id, why,
		err ? ", not cleaned up completely" : "", dr->r.log_path);
	if (!dr->r.still_running && unlink(dr->state_path) && errno != ENOENT)
		fprintf(stderr, "sluice daemon: remove %s: %s\n", dr->state_path, strerror(errno));
	remove_run(d, dr);
}

static void end_run(struct daemon *d, struct drun *dr, const char *why)
{
	end_run_status(d, dr, false, 0, why, NULL);
}

/*
 * An end that came by itself (the cgroup gone, the run's client gone) while the run switches:
 * kept for switch_finish, the first one only. Returns whether it was kept (then the run goes on
 * until the switch thread is joined, or, the switch still queued, until the loop drops it,
 * within this turn: loads_start).
 */
static bool end_after_switch(struct drun *dr, const char *why)
{
	if (!dr->bg)
		return false;
	if (!dr->end_why)
		dr->end_why = why;
	return true;
}

/*
 * The end a detach or run_end asked for (dr->end_*, set by the op): the run ends, and rep (NULL:
 * none) gets the reply's members.
 */
static void end_requested(struct daemon *d, struct drun *dr, struct control_msg *rep)
{
	char log[PATH_MAX];
	bool detach = dr->end_detach;

	util_copy(log, sizeof(log), dr->r.log_path);
	if (rep)
		control_msg_str(rep, "run_id", dr->r.run_id);
	end_run_status(d, dr, dr->end_has_status, dr->end_status, dr->end_why,
		       detach ? NULL : rep);
	if (rep && detach)
		control_msg_str(rep, "log", log);
}

/*
 * A detach or run_end of a run whose switch is in flight: c is answered once the switch thread
 * is joined (switch_finish), or, the switch still queued for a thread, at once (loads_start);
 * the switch is then dropped. REPLY_LATER, or -EBUSY when another client's end is queued
 * already.
 */
static int end_queue(struct drun *dr, struct client *c, bool detach, bool has_status,
		     int status, const char *why, char *err, size_t err_len)
{
	if (dr->end_client) {
		util_fmt(err, err_len, "run %s is ending already (%s, asked by another client, "
				       "once its switch's programs are verified)",
			 dr->r.run_id, dr->end_why);
		return -EBUSY;
	}
	util_copy(dr->end_why_buf, sizeof(dr->end_why_buf), why);
	dr->end_why = dr->end_why_buf;
	dr->end_detach = detach;
	dr->end_has_status = has_status;
	dr->end_status = status;
	dr->end_client = c;
	c->waiting = true;
	return REPLY_LATER;
}

static int add_run(struct daemon *d, struct drun *dr)
{
	if (d->n_runs == DAEMON_RUNS_MAX)
		return -ENOSPC;
	pthread_mutex_lock(&d->tap_lock);
	d->runs[d->n_runs++] = dr;
	pthread_mutex_unlock(&d->tap_lock);
	return 0;
}

/* a is b, or one holds the other: two policies on one process would both judge it. */
static bool cgroups_overlap(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = la < lb ? la : lb;

	return !strncmp(a, b, n) && (la == lb || (la < lb ? b[n] : a[n]) == '/');
}

/*
 * Whether a new run (an attach, a handed run) may have run_id and cgroup: no run of the daemon's,
 * attached or being attached, has the id or a cgroup that holds the new one or lies in it, and
 * there is room. 0, or -errno with err saying whose they are.
 */
static int run_taken(struct daemon *d, const char *run_id, const char *cgroup, char *err,
		     size_t err_len)
{
	const struct drun *dr = find_run(d, run_id);
	size_t i;

	if (dr)
		return util_fmt(err, err_len, "run %s is attached already (to %s)", run_id,
				dr->r.cg.path), -EEXIST;
	dr = find_attaching(d, run_id);
	if (dr)
		return util_fmt(err, err_len, "run %s is being attached already (to %s, asked %"
					      PRId64 " ms ago, its programs being verified)",
				run_id, dr->r.cg.path, util_mono_ms() - dr->bg->asked_ms), -EEXIST;
	for (i = 0; i < d->n_runs + d->n_attaching; i++) {
		dr = i < d->n_runs ? d->runs[i] : d->attaching[i - d->n_runs];
		if (cgroups_overlap(dr->r.cg.path, cgroup))
			return util_fmt(err, err_len, "cgroup %s overlaps run %s's %s%s: one policy "
						      "per process", cgroup, dr->r.run_id,
					dr->r.cg.path, i < d->n_runs ? "" : " (being attached)"),
			       -EEXIST;
	}
	if (d->n_runs + d->n_attaching >= DAEMON_RUNS_MAX)
		return util_fmt(err, err_len, "%d runs are attached%s: no room for more",
				DAEMON_RUNS_MAX, d->n_attaching ? " or being attached" : ""),
		       -ENOSPC;
	return 0;
}

/*
 * The network namespace a request names (netns, or NULL) and the descriptor that came with it
 * (fd, or -1; SCM_RIGHTS): both or neither, an absolute path, a network namespace. The path is
 * never opened here: renamed or replaced between the client's open and the daemon's, it would
 * name another namespace than the one the client meant (sluice run's command enters its
 * descriptor; an attach's --pid process may be gone and its pid reused). Nor is it compared
 * with the descriptor: in the client's mount namespace it may name another file than in the
 * daemon's (a bind mount over a plain file); netns_what logs the namespace's inode instead.
 */
static int check_netns(const char *netns, int fd, char *err, size_t err_len)
{
	const char *why;

	if (netns && netns[0] != '/')
		return util_fmt(err, err_len, "netns: expected an absolute path, got \"%s\"",
				netns), -EINVAL;
	if (netns && fd < 0)
		return util_fmt(err, err_len, "netns %s: the namespace's descriptor must come with "
					      "the request (SCM_RIGHTS): the client opens it, the "
					      "daemon does not", netns), -EINVAL;
	if (!netns && fd >= 0)
		return util_fmt(err, err_len, "a descriptor came with a request that names no "
					      "netns"), -EINVAL;
	why = netns ? runopts_netns_why_not(fd) : NULL;
	if (why)
		return util_fmt(err, err_len, "netns %s: the descriptor sent is refused: %s", netns,
				why), -EINVAL;
	return 0;
}

/* "; netns PATH, inode N" for the log line of a run set up in a namespace, else "". */
static void netns_what(const struct drun *dr, char *buf, size_t len)
{
	struct stat st;

	buf[0] = '\0';
	if (dr->netns && dr->r.netns_fd >= 0 && !fstat(dr->r.netns_fd, &st))
		snprintf(buf, len, "; netns %s, inode %llu", dr->netns,
			 (unsigned long long)st.st_ino);
}

static char *dup_opt(const char *s, bool *oom)
{
	char *c;

	if (!s)
		return NULL;
	c = strdup(s);
	if (!c)
		*oom = true;
	return c;
}

struct member_kind {
	const char *key;
	enum control_kind kind;
};

/* Every member a known key of the right kind; anything else refused, by name. */
static int check_typed(const struct control_obj *o, const struct member_kind *allowed,
		       char *err, size_t err_len)
{
	size_t i, j;

	for (i = 0; i < o->n; i++) {
		for (j = 0; allowed[j].key; j++)
			if (!strcmp(o->m[i].key, allowed[j].key))
				break;
		if (!allowed[j].key)
			return util_fmt(err, err_len, "unknown member \"%s\"", o->m[i].key), -EINVAL;
		if (o->m[i].kind != allowed[j].kind)
			return util_fmt(err, err_len, "member \"%s\" must be %s", o->m[i].key,
					allowed[j].kind == CONTROL_STR ? "a string" :
					allowed[j].kind == CONTROL_INT ? "an integer" : "true or false"),
			       -EINVAL;
	}
	return 0;
}

/* The members a request may have, by op: anything else is refused, by name. */
static int check_members(const struct control_obj *o, const char *const *allowed, char *err,
			 size_t err_len)
{
	size_t i, j;

	for (i = 0; i < o->n; i++) {
		for (j = 0; allowed[j]; j++)
			if (!strcmp(o->m[i].key, allowed[j]))
				break;
		if (!allowed[j])
			return util_fmt(err, err_len, "unknown member \"%s\"", o->m[i].key), -EINVAL;
		if (o->m[i].kind != CONTROL_STR)
			return util_fmt(err, err_len, "member \"%s\" must be a string", o->m[i].key),
			       -EINVAL;
	}
	return 0;
}

static const char *need(const struct control_obj *o, const char *key, char *err, size_t len)
{
	const char *v = control_str(o, key, NULL);

	if (!v || !*v)
		util_fmt(err, len, "attach needs \"%s\"", key);
	return v && *v ? v : NULL;
}

/* A file a request names: regular, never a FIFO nor a device. */
static int check_file(const char *path, const char *what, char *err, size_t len)
{
	struct stat st;
	int ret;

	if (stat(path, &st)) {
		ret = -errno;
		return util_fmt(err, len, "%s %s: %s", what, path, strerror(-ret)), ret;
	}
	if (!S_ISREG(st.st_mode))
		return util_fmt(err, len, "%s %s: not a regular file", what, path), -EINVAL;
	return 0;
}

/* What an attached run (op attach) and a handed one (op run) both take from their request. */
static void drun_args(struct drun *dr, const char *run_id)
{
	dr->r.args.policy_path = dr->policy;
	dr->r.args.run_id = run_id;
	dr->r.args.task = dr->task;
	dr->r.args.mode = dr->mode;
	dr->r.args.netns = dr->netns;
	dr->r.args.upstream = dr->upstream;
	dr->r.args.verbose = dr->d->verbose;
	dr->r.on_line = tap_line;
	dr->r.line_ctx = dr;
}

/* An attach that failed, or was dropped: nothing of it stays; the cgroup is as it was found. */
static void attach_undo(struct drun *dr)
{
	if (dr->r.started)
		run_finish(&dr->r, false, 0, "attach failed");
	/* something left pinned: the state file says "attaching", for the next daemon to undo */
	if (!run_close(&dr->r))
		unlink(dr->state_path);
	drun_free(dr);
}

/*
 * The attach's last step, on the loop, its programs loaded (a spare's, or verified off the loop
 * in load_ms): attached, its log started, the sockets its processes hold judged, the run added
 * and rep filled. On failure (err says why) the caller undoes it (attach_undo).
 */
static int attach_commit(struct daemon *d, struct drun *dr, int64_t t0, int64_t load_ms,
			 struct control_msg *rep, char *err, size_t err_len)
{
	char pre_err[256] = "", ns_what[PATH_MAX + 64], how[64] = "a spare", done[PATH_MAX + 16];
	int n_pre, done_ret = -ECANCELED, ret = run_setup_attach(&dr->r, err, err_len);

	/*
	 * The state file the attach ends with, written and fsynced while the host side attaches
	 * (run_setup_attach: the tcx link's grace period; with no host side, nothing to share,
	 * below), and renamed into place below, where the old one always was: after every layer
	 * is attached and pinned and run_start is written, before the reply. Until the rename the
	 * state says "attaching": a daemon killed before it has the attach undone by the next one,
	 * after it taken over. Only the fsync of the file's data comes sooner, which a SIGKILL
	 * does not need (the next daemon reads the page cache) and a crash of the host does before
	 * the rename, as it gets it.
	 */
	if (!ret && dr->r.host_side_attaching)
		done_ret = state_tmp_path(dr, STATE_TMP_DONE, done, sizeof(done)) ?
				   -ENAMETOOLONG : state_write_tmp(dr, done, false);
	ret = run_setup_serve(&dr->r, ret, err, err_len);
	/*
	 * a state file that could not be written fails the attach before run_start and before
	 * the scan's kills: its workload's connections are not cut for a run that is undone
	 */
	if (!ret && done_ret && done_ret != -ECANCELED) {
		util_fmt(err, err_len, "write %s: %s", dr->state_path, strerror(-done_ret));
		ret = done_ret;
	}
	if (ret)
		goto out;
	run_write_start(&dr->r);
	/*
	 * The programs judge every connect() from now on; the connections the cgroup's
	 * processes made before are judged here (preexisting.c). A scan that fails leaves
	 * them unjudged, not the run unattached: said on stderr and in the reply.
	 */
	n_pre = preexisting_judge(&dr->r, pre_err, sizeof(pre_err));
	if (n_pre < 0)
		fprintf(stderr, "sluice daemon: run %s: the sockets its processes already held were "
				"not judged: %s\n", dr->r.run_id, pre_err);
	/*
	 * A workload can make the scan give up (more socket fds than it holds, dup'd ones
	 * too): in enforce mode that would leave its denied connections open, and one made
	 * outside the cgroup is seen by no program. Fail closed: no attach.
	 */
	if (n_pre < 0 && dr->r.policy->mode == SL_MODE_ENFORCE) {
		util_fmt(err, err_len, "the sockets the cgroup's processes already hold could not "
				       "be judged (%s): refusing to attach in enforce mode with them "
				       "left open", pre_err);
		ret = n_pre;
		goto out;
	}
	if (done_ret == -ECANCELED)
		ret = write_state(dr, false);
	else
		ret = done_ret ? done_ret : rename(done, dr->state_path) ? -errno : 0;
	if (ret)
		util_fmt(err, err_len, "write %s: %s", dr->state_path, strerror(-ret));
out:
	if (ret && !done_ret)
		unlink(done);
	if (ret)
		return ret;
	add_run(d, dr);
	dr->r.rec.drain_max = DAEMON_DRAIN_MAX;
	dr->attached_ms = util_mono_ms() - t0;
	if (!dr->r.from_spare)
		util_fmt(how, sizeof(how), "verified off the loop in %" PRId64 " ms: ", load_ms);
	netns_what(dr, ns_what, sizeof(ns_what));
	fprintf(stderr, "sluice daemon: run %s attached to %s (%s, %" PRId64 " ms, %s%s); log "
			"%s%s\n", dr->r.run_id, dr->r.cg.path,
		dr->r.policy->mode == SL_MODE_REPORT ? "report" : "enforce", dr->attached_ms, how,
		dr->r.from_spare ? "" : dr->r.spare_why, dr->r.log_path, ns_what);
	control_msg_str(rep, "run_id", dr->r.run_id);
	control_msg_str(rep, "cgroup", dr->r.cg.path);
	control_msg_str(rep, "log", dr->r.log_path);
	control_msg_str(rep, "mode", dr->r.policy->mode == SL_MODE_REPORT ? "report" : "enforce");
	control_msg_u64(rep, "attach_ms", (uint64_t)dr->attached_ms);
	control_msg_bool(rep, "spare", dr->r.from_spare);
	if (!dr->r.from_spare) {
		control_msg_str(rep, "spare_why", dr->r.spare_why);
		control_msg_u64(rep, "load_ms", (uint64_t)load_ms);
	}
	if (n_pre >= 0)
		control_msg_u64(rep, "preexisting", (uint64_t)n_pre);
	else
		control_msg_str(rep, "preexisting_error", pre_err);
	return 0;
}

/* Queue a load of dr's (bg_load) for c, to be started by the loop (loads_start). */
static int load_enqueue(struct daemon *d, struct drun *dr, struct client *c, int kind,
			struct switch_job *job, char *err, size_t err_len)
{
	struct bg_load *bg = calloc(1, sizeof(*bg)), **q;

	if (!bg)
		return util_fmt(err, err_len, "out of memory"), -ENOMEM;
	*bg = (struct bg_load){ .d = d, .kind = kind, .dr = dr, .job = job, .client = c,
				.asked_ms = util_mono_ms() };
	util_copy(bg->who, sizeof(bg->who), c->who);
	dr->bg = bg;
	c->waiting = true;
	/* started by the loop (loads_start), never from inside a request's handling */
	for (q = &d->load_queue; *q; q = &(*q)->next)
		;
	*q = bg;
	return REPLY_LATER;
}

/*
 * The runs whose cgroup overlaps cgroup and has been removed by its owner, ended now, as the
 * loop's next turn would end them: a container stopped and started again (docker restart) has
 * its cgroup made again at the same path, and its attach must not be refused as an overlap with
 * a run that is over. A run switching keeps its end for the switch (end_after_switch) and still
 * overlaps.
 */
static void end_removed_overlapping(struct daemon *d, const char *cgroup)
{
	size_t i;

	for (i = 0; i < d->n_runs;) {
		struct drun *dr = d->runs[i];

		/* (as run_step: an attached run's cgroup is its owner's, a handed run's is not) */
		if (dr->r.attached && cgroups_overlap(dr->r.cg.path, cgroup) &&
		    cgroup_is_removed(&dr->r.cg) == 1 && !end_after_switch(dr, "cgroup removed")) {
			end_run(d, dr, "cgroup removed");
			continue; /* the table moved its last run here */
		}
		i++;
	}
}

/* NEXT_FREE_MAX - 1 ids after a taken one are tried: ID-2 … ID-NEXT_FREE_MAX */
#define NEXT_FREE_MAX 999

/*
 * Which of run_id, run_id-2 … run_id-NEXT_FREE_MAX have a file of a default log in the daemon's
 * log directory (journal_file_suffix: the log, its sidecar, any rotated segment), into
 * logs[1], logs[2] … logs[NEXT_FREE_MAX]. One read of the directory for all of them: it may hold
 * every log the daemon ever wrote, and this runs on the loop. 0, or -errno.
 */
static int ids_with_logs(const struct daemon *d, const char *run_id, bool *logs)
{
	size_t n = strlen(run_id);
	const char *rest;
	struct dirent *e;
	char *end;
	long k;
	DIR *dir = opendir(d->log_dir);

	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(dir))) {
		if (strncmp(e->d_name, run_id, n))
			continue;
		rest = e->d_name + n;
		k = 1;
		if (rest[0] == '-' && rest[1] >= '1' && rest[1] <= '9') {
			k = strtol(rest + 1, &end, 10);
			if (k < 2 || k > NEXT_FREE_MAX)
				continue;
			rest = end;
		}
		if (strncmp(rest, DEFAULT_LOG_EXT, strlen(DEFAULT_LOG_EXT)))
			continue;
		if (journal_file_suffix(rest + strlen(DEFAULT_LOG_EXT)))
			logs[k] = true;
	}
	closedir(dir);
	return 0;
}

/*
 * Whether run id id is taken for a new run whose log is the daemon's choice: 1 if a run of the
 * daemon's has it, something is pinned under it, its state file exists or a file of its log
 * does (has_log, from ids_with_logs: a run's log is never overwritten); 0 if not;
 * -ENAMETOOLONG if its state file's or log's names would not fit a path (no run can have it:
 * not "taken", which would send next_free_id through every other id).
 */
static int id_taken(struct daemon *d, const char *id, bool has_log)
{
	/* room for write_state's longest temporary name (".ID.done") and the log's (a segment's) */
	char pins[PATH_MAX], state[PATH_MAX - sizeof(STATE_TMP_DONE)],
		log[PATH_MAX - sizeof(JOURNAL_LONGEST_SUFFIX) + 1];

	if (state_path(d, id, state, sizeof(state)) || default_log_path(d, id, log, sizeof(log)))
		return -ENAMETOOLONG;
	return has_log || find_run(d, id) || find_attaching(d, id) ||
	       run_pinned(id, pins, sizeof(pins)) || !access(state, F_OK);
}

/*
 * The run id of an attach that asked for the next free one (an OCI hook: a container started
 * again keeps its id, whose first run's log exists): run_id if it is free, else the first free
 * of run_id-2 … run_id-NEXT_FREE_MAX, into out. 0, or -errno with err saying why none is.
 */
static int next_free_id(struct daemon *d, const char *run_id, char *out, size_t len, char *err,
			size_t err_len)
{
	bool logs[NEXT_FREE_MAX + 1] = { false };
	int k, taken, ret = ids_with_logs(d, run_id, logs);

	if (ret)
		return util_fmt(err, err_len, "read log directory %s: %s", d->log_dir,
				strerror(-ret)),
		       ret;
	taken = id_taken(d, run_id, logs[1]);
	if (!taken)
		return util_copy(out, len, run_id);
	for (k = 2; taken > 0 && k <= NEXT_FREE_MAX; k++) {
		if (util_fmt(out, len, "%s-%d", run_id, k) || run_check_id(out))
			return util_fmt(err, err_len, "run id %s is taken (a run's, a log's or a "
						      "pin's), and %s-%d would be longer than %d "
						      "characters", run_id, run_id, k, RUN_ID_MAX),
			       -ENAMETOOLONG;
		taken = id_taken(d, out, logs[k]);
		if (!taken)
			return 0;
	}
	if (taken < 0)
		return util_fmt(err, err_len, "run id %s: its state file's or log's name under %s "
					      "or %s would be longer than a path can be",
				k == 2 ? run_id : out, d->state_dir, d->log_dir),
		       taken;
	return util_fmt(err, err_len, "run id %s and %s-2 to %s-%d are all taken (a run's, a "
				      "log's or a pin's)", run_id, run_id, run_id, NEXT_FREE_MAX),
	       -EEXIST;
}

/*
 * attach {cgroup, policy, run_id, …}: the run's programs attached to an existing cgroup. With a
 * spare that fits, answered at once; else its programs are loaded and verified off the loop
 * (bg_load) and c is answered when the attach is committed (attach_finish). With netns, the
 * request carries the namespace the client opened (*netns_fd taken, -1; check_netns).
 */
static int op_attach(struct daemon *d, struct client *c, const struct control_obj *o,
		     int *netns_fd, struct control_msg *rep, char *err, size_t err_len)
{
	static const struct member_kind allowed[] = {
		{ "op", CONTROL_STR },	   { "cgroup", CONTROL_STR },  { "policy", CONTROL_STR },
		{ "run_id", CONTROL_STR }, { "task", CONTROL_STR },    { "mode", CONTROL_STR },
		{ "netns", CONTROL_STR },  { "log", CONTROL_STR },     { "upstream", CONTROL_STR },
		{ "source", CONTROL_STR }, { "reset_peers", CONTROL_BOOL },
		{ "next_free_id", CONTROL_BOOL }, {},
	};
	const char *cgroup, *policy, *run_id, *mode, *log, *netns;
	char pins[PATH_MAX], free_id[RUN_ID_MAX + 1];
	struct drun *dr;
	int64_t t0 = util_mono_ms();
	bool oom = false, need_load;
	int ret;

	ret = check_typed(o, allowed, err, err_len);
	if (ret)
		return ret;
	if (!(cgroup = need(o, "cgroup", err, err_len)) ||
	    !(policy = need(o, "policy", err, err_len)) ||
	    !(run_id = need(o, "run_id", err, err_len)))
		return -EINVAL;
	log = control_str(o, "log", NULL);
	/* the state file hands the log's path to the next daemon, whose directory may differ */
	if (cgroup[0] != '/' || policy[0] != '/' || (log && log[0] != '/'))
		return util_fmt(err, err_len, "\"%s\" must be an absolute path",
				cgroup[0] != '/' ? "cgroup" : policy[0] != '/' ? "policy" : "log"),
		       -EINVAL;
	if (run_check_id(run_id))
		return util_fmt(err, err_len, "run_id: expected 1-%d characters of [A-Za-z0-9_-] "
					      "not starting with '-' (no '.': bpffs, where the run's "
					      "programs are pinned under its id, refuses it)",
				RUN_ID_MAX), -EINVAL;
	mode = control_str(o, "mode", NULL);
	if (mode && strcmp(mode, "report") && strcmp(mode, "enforce"))
		return util_fmt(err, err_len, "mode: expected \"report\" or \"enforce\""), -EINVAL;
	if (control_str(o, "task", NULL) && strlen(control_str(o, "task", NULL)) > RECORDS_TASK_MAX)
		return util_fmt(err, err_len, "task: longer than %d bytes", RECORDS_TASK_MAX),
		       -EINVAL;
	netns = control_str(o, "netns", NULL);
	ret = check_netns(netns, *netns_fd, err, err_len);
	if (ret)
		return ret;
	/*
	 * The loop that drains every run opens it: a FIFO (or a device) would hold it in open()
	 * or read() for as long as its other end likes.
	 */
	ret = check_file(policy, "policy", err, err_len);
	if (ret)
		return ret;
	end_removed_overlapping(d, cgroup);
	if (control_bool(o, "next_free_id") == 1) {
		if (log)
			return util_fmt(err, err_len, "next_free_id and log: a log named by the "
						      "client is its own to keep free"), -EINVAL;
		ret = next_free_id(d, run_id, free_id, sizeof(free_id), err, err_len);
		if (ret)
			return ret;
		run_id = free_id;
	}
	ret = run_taken(d, run_id, cgroup, err, err_len);
	if (ret)
		return ret;

	dr = calloc(1, sizeof(*dr));
	if (!dr)
		return util_fmt(err, err_len, "out of memory"), -ENOMEM;
	dr->d = d;
	run_init(&dr->r, "sluice daemon");
	dr->cgroup = dup_opt(cgroup, &oom);
	dr->policy = dup_opt(policy, &oom);
	dr->task = dup_opt(control_str(o, "task", NULL), &oom);
	dr->mode = dup_opt(mode, &oom);
	dr->netns = dup_opt(netns, &oom);
	dr->upstream = dup_opt(control_str(o, "upstream", NULL), &oom);
	dr->source = dup_opt(control_str(o, "source", NULL), &oom);
	if (oom) {
		drun_free(dr);
		return util_fmt(err, err_len, "out of memory"), -ENOMEM;
	}
	dr->r.attached = true;
	drun_args(dr, run_id);
	dr->r.args.reset_peers = control_bool(o, "reset_peers") == 1;
	dr->r.args.cgroup_path = dr->cgroup;
	dr->r.args.source = dr->source;
	dr->r.args.key_path = d->key_path;
	dr->r.pool = d->pool;
	util_copy(dr->r.run_id, sizeof(dr->r.run_id), run_id);
	if ((log ? util_fmt(dr->r.log_path, sizeof(dr->r.log_path), "%s", log) :
		   default_log_path(d, run_id, dr->r.log_path, sizeof(dr->r.log_path))) ||
	    state_path(d, run_id, dr->state_path, sizeof(dr->state_path))) {
		drun_free(dr);
		return util_fmt(err, err_len, "log or state path too long"), -ENAMETOOLONG;
	}
	if (!log && mkdir(d->log_dir, 0750) && errno != EEXIST) {
		ret = -errno;
		util_fmt(err, err_len, "create log directory %s: %s", d->log_dir, strerror(-ret));
		drun_free(dr);
		return ret;
	}

	/* pins no run of ours owns (a sluice run's, one to resume): never ours to take or undo */
	if (run_pinned(run_id, pins, sizeof(pins))) {
		drun_free(dr);
		return util_fmt(err, err_len, "run id %s is pinned already (%s), by no run of this "
					      "daemon", run_id, pins), -EEXIST;
	}
	ret = write_state(dr, true);
	if (ret) {
		util_fmt(err, err_len, "write %s: %s", dr->state_path, strerror(-ret));
		drun_free(dr);
		return ret;
	}
	/* the run's from here: run_close closes it */
	dr->r.netns_fd = *netns_fd;
	*netns_fd = -1;
	ret = run_setup_begin(&dr->r, &need_load, err, err_len);
	if (!ret && need_load) {
		ret = load_enqueue(d, dr, c, BG_ATTACH, NULL, err, err_len);
		if (ret == REPLY_LATER) {
			d->attaching[d->n_attaching++] = dr;
			return ret;
		}
	}
	if (!ret)
		ret = attach_commit(d, dr, t0, -1, rep, err, err_len);
	if (ret)
		attach_undo(dr);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* Runs handed over by sluice run (handoff.h) */

/* An integer member in [min, max]; def when absent. */
static int int_member(const struct control_obj *o, const char *key, int64_t min, int64_t max,
		      int64_t def, int64_t *out, char *err, size_t err_len)
{
	const struct control_member *m = control_get(o, key);

	*out = m ? m->i : def;
	if (*out < min || *out > max)
		return util_fmt(err, err_len, "%s: expected %" PRId64 " to %" PRId64, key, min, max),
		       -EINVAL;
	return 0;
}

/*
 * run {run_id, policy, log, key, argv, uid, gid, …}: sluice run's options. The daemon sets the run
 * up as sluice run would (its own cgroup under cgroup_parent, a spare's programs where the
 * policy fits one, the log at the path sluice run chose, signed with the key it names), writes
 * run_start, and replies with the cgroup's descriptor: the command starts in it by clone3.
 * This client owns the run from now on. With netns, the request carries the namespace sluice run
 * opened, and the run is set up in that one (*netns_fd taken, -1; check_netns): the one its
 * command enters.
 */
static int op_run(struct daemon *d, struct client *c, const struct control_obj *o,
		  int *netns_fd, struct control_msg *rep, int *reply_fd, char *err, size_t err_len)
{
	static const struct member_kind allowed[] = {
		{ "op", CONTROL_STR }, { "run_id", CONTROL_STR }, { "policy", CONTROL_STR },
		{ "log", CONTROL_STR }, { "key", CONTROL_STR }, { "cgroup_parent", CONTROL_STR },
		{ "argv", CONTROL_STR }, { "uid", CONTROL_INT }, { "gid", CONTROL_INT },
		{ "user", CONTROL_STR }, { "allow_root", CONTROL_BOOL }, { "task", CONTROL_STR },
		{ "mode", CONTROL_STR }, { "netns", CONTROL_STR }, { "upstream", CONTROL_STR },
		{ "alerts", CONTROL_STR }, { "dns_ttl", CONTROL_BOOL },
		{ "strict_evidence", CONTROL_BOOL }, { "ringbuf_kib", CONTROL_INT },
		{ "checkpoint_lines", CONTROL_INT }, { "checkpoint_secs", CONTROL_INT },
		{ "rotate_kib", CONTROL_INT }, {},
	};
	const char *run_id, *policy, *log, *key, *parent, *argv, *mode, *netns, *alerts, *task;
	char pins[PATH_MAX], mnt[PATH_MAX], cg[PATH_MAX], digest[65], ns_what[PATH_MAX + 64];
	int64_t uid, gid, rb, cl, cs, rk;
	struct drun *dr;
	int64_t t0 = util_mono_ms();
	bool oom = false;
	int ret;

	/*
	 * The selftests' switches weaken how a run is set up (no filter, no backstop, plain
	 * segments): sluice run never hands a run while it has one, and a daemon that has one
	 * takes none, or the client would start its command under less than it asked for.
	 */
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, "SLUICE_SELFTEST_", strlen("SLUICE_SELFTEST_")))
			return util_fmt(err, err_len, "this daemon runs with %.*s set (selftests "
					"only): it takes no run", (int)strcspn(*e, "="), *e), -EPERM;
	if (c->owns)
		return util_fmt(err, err_len, "this connection has run %s already",
				c->owns->r.run_id), -EBUSY;
	ret = check_typed(o, allowed, err, err_len);
	if (ret)
		return ret;
	if (!(run_id = need(o, "run_id", err, err_len)) ||
	    !(policy = need(o, "policy", err, err_len)) || !(log = need(o, "log", err, err_len)) ||
	    !(key = need(o, "key", err, err_len)) || !(argv = need(o, "argv", err, err_len)))
		return -EINVAL;
	parent = control_str(o, "cgroup_parent", NULL);
	if (!parent)
		parent = "sluice";
	mode = control_str(o, "mode", NULL);
	netns = control_str(o, "netns", NULL);
	alerts = control_str(o, "alerts", NULL);
	task = control_str(o, "task", NULL);
	if (policy[0] != '/' || log[0] != '/' || key[0] != '/' || (netns && netns[0] != '/') ||
	    (alerts && alerts[0] != '/'))
		return util_fmt(err, err_len, "policy, log, key, netns and alerts must be absolute "
					      "paths"), -EINVAL;
	ret = check_netns(netns, *netns_fd, err, err_len);
	if (ret)
		return ret;
	if (run_check_id(run_id))
		return util_fmt(err, err_len, "run_id: expected 1-%d characters of [A-Za-z0-9_-] "
					      "not starting with '-'", RUN_ID_MAX), -EINVAL;
	if (run_check_component(parent))
		return util_fmt(err, err_len, "cgroup_parent: expected one path component of "
					      "[A-Za-z0-9._-]"), -EINVAL;
	if (mode && strcmp(mode, "report") && strcmp(mode, "enforce"))
		return util_fmt(err, err_len, "mode: expected \"report\" or \"enforce\""), -EINVAL;
	if (task && strlen(task) > RECORDS_TASK_MAX)
		return util_fmt(err, err_len, "task: longer than %d bytes", RECORDS_TASK_MAX),
		       -EINVAL;
	if (int_member(o, "uid", 0, UINT32_MAX - 1, -1, &uid, err, err_len) ||
	    int_member(o, "gid", 0, UINT32_MAX - 1, -1, &gid, err, err_len) ||
	    int_member(o, "ringbuf_kib", 4, 1 << 20, RUN_RINGBUF_KIB, &rb, err, err_len) ||
	    int_member(o, "checkpoint_lines", 1, 1LL << 32, 1000, &cl, err, err_len) ||
	    int_member(o, "checkpoint_secs", 1, 86400, 10, &cs, err, err_len) ||
	    int_member(o, "rotate_kib", 0, INT64_MAX / 1024, 0, &rk, err, err_len))
		return -EINVAL;
	if (rb & (rb - 1))
		return util_fmt(err, err_len, "ringbuf_kib: expected a power of two"), -EINVAL;
	ret = check_file(policy, "policy", err, err_len);
	if (ret)
		return ret;
	ret = cgroup_v2_mount(mnt, sizeof(mnt));
	if (!ret && util_fmt(cg, sizeof(cg), "%s/%s/%s", mnt, parent, run_id))
		ret = -ENAMETOOLONG;
	if (ret)
		return util_fmt(err, err_len, "the cgroup v2 mount: %s", strerror(-ret)), ret;
	/* an attached run's cgroup holding the new one: two policies would judge one process */
	ret = run_taken(d, run_id, cg, err, err_len);
	if (ret)
		return ret;
	if (run_pinned(run_id, pins, sizeof(pins)))
		return util_fmt(err, err_len, "run id %s is pinned already (%s)", run_id, pins),
		       -EEXIST;

	dr = calloc(1, sizeof(*dr));
	if (!dr)
		return util_fmt(err, err_len, "out of memory"), -ENOMEM;
	dr->d = d;
	run_init(&dr->r, "sluice daemon");
	if (handoff_argv_decode(argv, &dr->argv, &dr->r.args.n_cmd, &dr->argv_buf)) {
		drun_free(dr);
		return util_fmt(err, err_len, "argv: expected LEN:BYTES…, one or more"), -EINVAL;
	}
	dr->policy = dup_opt(policy, &oom);
	dr->task = dup_opt(task, &oom);
	dr->mode = dup_opt(mode, &oom);
	dr->netns = dup_opt(netns, &oom);
	dr->upstream = dup_opt(control_str(o, "upstream", NULL), &oom);
	dr->key = dup_opt(key, &oom);
	dr->alerts = dup_opt(alerts, &oom);
	dr->cgroup_parent = dup_opt(parent, &oom);
	dr->user = dup_opt(control_str(o, "user", NULL), &oom);
	if (oom) {
		drun_free(dr);
		return util_fmt(err, err_len, "out of memory"), -ENOMEM;
	}
	drun_args(dr, run_id);
	dr->r.args.cmd = dr->argv;
	dr->r.args.cgroup_parent = dr->cgroup_parent;
	dr->r.args.key_path = dr->key;
	dr->r.args.alerts = dr->alerts;
	dr->r.args.user = dr->user;
	dr->r.args.allow_root = control_bool(o, "allow_root") == 1;
	dr->r.args.dns_ttl = control_bool(o, "dns_ttl") == 1;
	dr->r.args.strict_evidence = control_bool(o, "strict_evidence") == 1;
	dr->r.args.ringbuf_kib = (unsigned long)rb;
	dr->r.args.checkpoint_lines = (unsigned long)cl;
	dr->r.args.checkpoint_secs = (unsigned long)cs;
	dr->r.args.rotate_kib = (unsigned long)rk;
	dr->r.uid = (uid_t)uid;
	dr->r.gid = (gid_t)gid;
	dr->r.pool = d->pool;
	util_copy(dr->r.run_id, sizeof(dr->r.run_id), run_id);
	if (util_copy(dr->r.log_path, sizeof(dr->r.log_path), log) ||
	    state_path(d, run_id, dr->state_path, sizeof(dr->state_path))) {
		drun_free(dr);
		return util_fmt(err, err_len, "log or state path too long"), -ENAMETOOLONG;
	}
	ret = write_state(dr, true);
	if (ret) {
		util_fmt(err, err_len, "write %s: %s", dr->state_path, strerror(-ret));
		drun_free(dr);
		return ret;
	}
	/* the run's from here: run_close closes it */
	dr->r.netns_fd = *netns_fd;
	*netns_fd = -1;
	ret = run_setup(&dr->r, err, err_len);
	if (!ret) {
		run_write_start(&dr->r);
		ret = write_state(dr, false);
		if (ret)
			util_fmt(err, err_len, "write %s: %s", dr->state_path, strerror(-ret));
	}
	if (ret) {
		if (dr->r.started)
			run_finish(&dr->r, false, 0, "setup failed");
		if (!run_close(&dr->r))
			unlink(dr->state_path);
		drun_free(dr);
		return ret;
	}
	add_run(d, dr);
	c->owns = dr;
	dr->r.rec.drain_max = DAEMON_DRAIN_MAX;
	dr->attached_ms = util_mono_ms() - t0;
	netns_what(dr, ns_what, sizeof(ns_what));
	fprintf(stderr, "sluice daemon: run %s handed over by %s: %s (%s, %" PRId64 " ms, %s%s); "
			"log %s%s\n", dr->r.run_id, c->who, dr->r.cg.path,
		dr->r.policy->mode == SL_MODE_REPORT ? "report" : "enforce", dr->attached_ms,
		dr->r.from_spare ? "a spare" : "loaded: ", dr->r.from_spare ? "" : dr->r.spare_why,
		dr->r.log_path, ns_what);
	util_hex(dr->r.policy->sha256, sizeof(dr->r.policy->sha256), digest, sizeof(digest));
	control_msg_str(rep, "run_id", dr->r.run_id);
	control_msg_str(rep, "cgroup", dr->r.cg.path);
	control_msg_str(rep, "log", dr->r.log_path);
	control_msg_str(rep, "policy_sha256", digest);
	control_msg_bool(rep, "seccomp", dr->r.seccomp != NULL);
	control_msg_u64(rep, "setup_ms", (uint64_t)dr->attached_ms);
	control_msg_bool(rep, "spare", dr->r.from_spare);
	*reply_fd = dr->r.cg.fd;
	return 0;
}

/* The run this client owns, by the request's run_id. */
static struct drun *owned_run(struct client *c, const struct control_obj *o, char *err,
			      size_t err_len)
{
	const char *id = control_str(o, "run_id", NULL);

	if (!c->owns || !id || strcmp(id, c->owns->r.run_id)) {
		util_fmt(err, err_len, "run %s is not this connection's (it ended, or another "
				       "client started it)", id ? id : "?");
		return NULL;
	}
	return c->owns;
}

/* run_started {run_id, pid} + the command's seccomp listener: answered and logged from now on. */
static int op_run_started(struct client *c, const struct control_obj *o, char *err,
			  size_t err_len)
{
	static const struct member_kind allowed[] = {
		{ "op", CONTROL_STR }, { "run_id", CONTROL_STR }, { "pid", CONTROL_INT }, {},
	};
	struct drun *dr;
	int ret = check_typed(o, allowed, err, err_len), fd = c->passed_fd;

	c->passed_fd = -1;
	if (!ret && !(dr = owned_run(c, o, err, err_len)))
		ret = -ENOENT;
	if (!ret && !dr->r.seccomp && fd >= 0) {
		util_fmt(err, err_len, "run %s has no seccomp filter to answer for", dr->r.run_id);
		ret = -EINVAL;
	}
	if (!ret && dr->r.seccomp && fd < 0) {
		util_fmt(err, err_len, "run_started needs the seccomp listener (SCM_RIGHTS)");
		ret = -EINVAL;
	}
	if (!ret && dr->r.seccomp) {
		ret = sandbox_seccomp_give(dr->r.seccomp, fd);
		if (ret)
			util_fmt(err, err_len, "run %s has its listener already", dr->r.run_id);
		else
			fd = -1;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

/* run_end {run_id, status, why}: the command ended; the run ends as sluice run ends it. */
static int op_run_end(struct daemon *d, struct client *c, const struct control_obj *o,
		      struct control_msg *rep, char *err, size_t err_len)
{
	static const struct member_kind allowed[] = {
		{ "op", CONTROL_STR }, { "run_id", CONTROL_STR }, { "status", CONTROL_INT },
		{ "why", CONTROL_STR }, {},
	};
	const char *why = control_str(o, "why", NULL);
	struct drun *dr;
	int64_t status;
	int ret = check_typed(o, allowed, err, err_len);

	if (ret)
		return ret;
	if (int_member(o, "status", 0, 255, -1, &status, err, err_len))
		return -EINVAL;
	if (!(dr = owned_run(c, o, err, err_len)))
		return -ENOENT;
	/* the run's end line names it: one of sluice run's own reasons, never free text */
	if (!why || (strcmp(why, "command exited") && strcmp(why, "signal") &&
		     strcmp(why, "command not started") && strcmp(why, "command lost") &&
		     strcmp(why, "sluice error")))
		return util_fmt(err, err_len, "why: expected one of sluice run's reasons"), -EINVAL;
	if (dr->bg)
		return end_queue(dr, c, false, true, (int)status, why, err, err_len);
	util_copy(dr->end_why_buf, sizeof(dr->end_why_buf), why);
	dr->end_why = dr->end_why_buf;
	dr->end_has_status = true;
	dr->end_status = (int)status;
	end_requested(d, dr, rep);
	return 0;
}

static struct drun *need_run(struct daemon *d, const struct control_obj *o, char *err,
			     size_t err_len)
{
	const char *id = control_str(o, "run_id", NULL);
	struct drun *dr;

	if (!id || !*id) {
		util_fmt(err, err_len, "needs \"run_id\"");
		return NULL;
	}
	dr = find_run(d, id);
	if (!dr && find_attaching(d, id))
		util_fmt(err, err_len, "run %s is being attached (its programs being verified): ask "
				       "again once the attach is answered", id);
	else if (!dr)
		util_fmt(err, err_len, "no run %s is attached", id);
	return dr;
}

/*
 * A detach of a run pinned but managed by no one (its writer dead): a previous daemon's run
 * whose take-over was refused (adopt_runs left its state file), or a sluice run's whose writer
 * was killed (before its log or its host side, there is nothing a resume could take over). No
 * writer ends its log: its programs are detached and its pins removed (loader_purge), its token
 * left out of its namespace; its state file goes. Its log, if any, stays as the dead writer
 * left it (unsealed, no run_end). A run whose writer is alive is refused (-EBUSY).
 */
static int detach_unmanaged(struct daemon *d, const char *id, struct control_msg *rep,
			    char *err, size_t err_len)
{
	char state[PATH_MAX], log[PATH_MAX] = "";
	int ret;

	if (state_path(d, id, state, sizeof(state))) {
		util_fmt(err, err_len, "no run %s is attached", id);
		return -ENOENT;
	}
	/*
	 * Nothing pinned (-ENOENT, gone before the purge or never there) is no detach of this
	 * daemon's: never answered as one, nor its log said to end unsealed.
	 */
	ret = loader_purge(id);
	if (ret == -ENOENT) {
		util_fmt(err, err_len, "no run %s is attached", id);
		return ret;
	}
	if (ret) {
		util_fmt(err, err_len, "run %s (pinned, managed by no one): %s", id,
			 ret == -EBUSY ? "its writer (sluice run or resume) is alive: end it there" :
					 strerror(-ret));
		return ret;
	}
	if (util_read_file(state, log, sizeof(log)) <= 0)
		log[0] = '\0';
	log[strcspn(log, "\n")] = '\0';
	unlink(state);
	fprintf(stderr, "sluice daemon: run %s, which no writer had taken over, is detached%s%s%s\n",
		id, log[0] ? "; its log " : "", log, log[0] ? " ends unsealed" : "");
	control_msg_str(rep, "run_id", id);
	if (log[0])
		control_msg_str(rep, "log", log);
	control_msg_bool(rep, "taken_over", false);
	return 0;
}

static int op_detach(struct daemon *d, struct client *c, const struct control_obj *o,
		     struct control_msg *rep, char *err, size_t err_len)
{
	static const char *const allowed[] = { "op", "run_id", NULL };
	const char *id;
	struct drun *dr;
	int ret = check_members(o, allowed, err, err_len);

	if (ret)
		return ret;
	id = control_str(o, "run_id", NULL);
	/* (a run being attached is this daemon's: need_run says so) */
	if (id && !find_run(d, id) && !find_attaching(d, id) && !run_check_id(id))
		return detach_unmanaged(d, id, rep, err, err_len);
	dr = need_run(d, o, err, err_len);
	if (!dr)
		return -ENOENT;
	if (dr->bg)
		return end_queue(dr, c, true, false, 0, "detached", err, err_len);
	dr->end_why = "detached";
	dr->end_detach = true;
	end_requested(d, dr, rep);
	return 0;
}

/*
 * Selftests only (test_attach_bg.sh): while the file SLUICE_SELFTEST_LOAD_HOLD names exists, a
 * finished load stays in flight, so a test acts inside the window by construction, not by timing.
 */
static void selftest_load_hold(void)
{
	const char *hold = getenv("SLUICE_SELFTEST_LOAD_HOLD");
	struct stat st;

	while (hold && !stat(hold, &st) && !st.st_uid)
		usleep(10000);
}

/* A load's thread: the programs loaded and verified, then the loop told (bg_load). */
static void *load_thread(void *arg)
{
	struct bg_load *sw = arg;
	int64_t t0 = util_mono_ms();
	ssize_t n;

	if (sw->kind == BG_SWITCH)
		sw->ret = switch_load(sw->job, sw->err, sizeof(sw->err));
	else
		sw->ret = run_setup_load(&sw->dr->r, sw->err, sizeof(sw->err));
	sw->load_ms = util_mono_ms() - t0;
	selftest_load_hold();
	/*
	 * A pointer is written whole (less than PIPE_BUF), and the pipe holds far more of them
	 * than there can be runs: this does not wait. It cannot fail but for a closed pipe, which
	 * the daemon closes only after joining every load thread (leave_runs).
	 */
	while ((n = write(sw->d->load_done[1], &sw, sizeof(sw))) < 0 && errno == EINTR)
		;
	return NULL;
}

/*
 * set_mode {run_id, mode} and replace_policy {run_id, policy}: the run switches at once, with no
 * instant where neither policy applies, and its log says so (switch.c); on failure nothing
 * changed. The new programs are verified on a thread of the switch's own (bg_load) while the
 * loop serves every run; the client is answered when the switch is committed (switch_finish).
 * One switch per run at a time: a second is refused while one is in flight.
 */
static int op_switch(struct daemon *d, struct client *c, const struct control_obj *o,
		     bool replace, char *err, size_t err_len)
{
	static const char *const mode_allowed[] = { "op", "run_id", "mode", NULL };
	static const char *const policy_allowed[] = { "op", "run_id", "policy", NULL };
	const char *mode = NULL, *policy = NULL;
	struct switch_job *job;
	struct drun *dr;
	int ret = check_members(o, replace ? policy_allowed : mode_allowed, err, err_len);

	if (ret)
		return ret;
	dr = need_run(d, o, err, err_len);
	if (!dr)
		return -ENOENT;
	if (replace) {
		policy = control_str(o, "policy", NULL);
		if (!policy || policy[0] != '/')
			return util_fmt(err, err_len, "replace_policy needs \"policy\", an absolute "
						      "path"), -EINVAL;
	} else {
		mode = control_str(o, "mode", NULL);
		if (!mode || (strcmp(mode, "report") && strcmp(mode, "enforce")))
			return util_fmt(err, err_len, "set_mode needs \"mode\": \"report\" or "
						      "\"enforce\""), -EINVAL;
	}
	if (dr->bg) {
		util_fmt(err, err_len, "run %s is switching already (asked by %s %" PRId64 " ms "
				       "ago, its new programs being verified): ask again once that "
				       "switch is answered",
			 dr->r.run_id, dr->bg->who, util_mono_ms() - dr->bg->asked_ms);
		return -EBUSY;
	}
	ret = switch_prepare(&dr->r, policy,
			     !mode ? -1 : strcmp(mode, "report") ? SL_MODE_ENFORCE : SL_MODE_REPORT,
			     &job, err, err_len);
	if (ret) {
		fprintf(stderr, "sluice daemon: run %s: switch refused: %s\n", dr->r.run_id, err);
		return ret;
	}
	ret = load_enqueue(d, dr, c, BG_SWITCH, job, err, err_len);
	if (ret != REPLY_LATER)
		switch_free(job);
	return ret;
}

static uint64_t run_lost(const struct run *r)
{
	uint64_t n = r->rec.unwritten;
	int h;

	for (h = 0; h < SL_HOOK_MAX; h++)
		n += r->rec.lost_reported[h];
	return n;
}

/* One line per run after the reply: {"run_id":…,"cgroup":…,"mode":…,…}. */
static int send_status_lines(struct daemon *d, struct client *c)
{
	struct control_msg *m = malloc(sizeof(*m));
	char digest[65];
	size_t i;
	int err = 0;

	if (!m)
		return -ENOMEM;
	for (i = 0; i < d->n_runs && !err; i++) {
		const struct run *r = &d->runs[i]->r;

		util_hex(r->policy->sha256, sizeof(r->policy->sha256), digest, sizeof(digest));
		control_msg_begin(m);
		control_msg_str(m, "run_id", r->run_id);
		control_msg_str(m, "cgroup", r->cg.path);
		control_msg_str(m, "mode", r->policy->mode == SL_MODE_REPORT ? "report" : "enforce");
		control_msg_str(m, "policy", r->args.policy_path);
		control_msg_str(m, "policy_sha256", digest);
		control_msg_str(m, "log", r->log_path);
		if (r->args.task)
			control_msg_str(m, "task", r->args.task);
		control_msg_u64(m, "lines", journal_lines_written(r->journal));
		control_msg_u64(m, "denials", r->rec.denials);
		control_msg_u64(m, "lost", run_lost(r));
		control_msg_str(m, "resolver", r->resolver ? "serving" : "none");
		control_msg_bool(m, "log_ok", !r->rec.log_broke);
		/* its new programs are being verified: the switch is not in force yet */
		control_msg_bool(m, "switching", d->runs[i]->bg != NULL);
		/* its end asked (a detach, its cgroup gone), waiting for that switch */
		if (d->runs[i]->end_why)
			control_msg_str(m, "ending", d->runs[i]->end_why);
		if (control_msg_end(m)) {
			err = -EMSGSIZE;
			break;
		}
		m->buf[m->len++] = '\n';
		if (send(c->fd, m->buf, m->len, MSG_NOSIGNAL) != (ssize_t)m->len)
			err = -EPIPE;
	}
	/* then one per run being attached: what its request named, nothing enforced yet */
	for (i = 0; i < d->n_attaching && !err; i++) {
		const struct drun *dr = d->attaching[i];

		control_msg_begin(m);
		control_msg_str(m, "run_id", dr->r.run_id);
		control_msg_str(m, "cgroup", dr->r.cg.path);
		control_msg_str(m, "mode", dr->r.policy->mode == SL_MODE_REPORT ? "report" :
									 "enforce");
		control_msg_str(m, "policy", dr->r.args.policy_path);
		control_msg_str(m, "log", dr->r.log_path);
		control_msg_bool(m, "attaching", true);
		control_msg_u64(m, "attaching_ms", (uint64_t)(util_mono_ms() - dr->bg->asked_ms));
		if (control_msg_end(m)) {
			err = -EMSGSIZE;
			break;
		}
		m->buf[m->len++] = '\n';
		if (send(c->fd, m->buf, m->len, MSG_NOSIGNAL) != (ssize_t)m->len)
			err = -EPIPE;
	}
	free(m);
	return err;
}

/* ------------------------------------------------------------------------------------------ */
/* Clients */

/* The reply line; fd (>= 0) goes with it (SCM_RIGHTS): a handed run's cgroup. */
static void send_reply_fd(struct client *c, struct control_msg *rep, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (control_msg_end(rep)) {
		control_msg_begin(rep);
		control_msg_bool(rep, "ok", false);
		control_msg_str(rep, "error", "reply too long");
		control_msg_end(rep);
		fd = -1;
	}
	rep->buf[rep->len++] = '\n';
	iov = (struct iovec){ .iov_base = rep->buf, .iov_len = rep->len };
	if (fd >= 0) {
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	/* replies are small and clients read them: a client that does not is dropped */
	if (sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)rep->len)
		c->dead = true;
}

static void send_reply(struct client *c, struct control_msg *rep)
{
	send_reply_fd(c, rep, -1);
}

static void reply_error(struct client *c, struct control_msg *rep, const char *why)
{
	control_msg_begin(rep);
	control_msg_bool(rep, "ok", false);
	control_msg_str(rep, "error", why);
	send_reply(c, rep);
}

static void handle_request(struct daemon *d, struct client *c, const char *line, size_t len)
{
	struct control_obj *o = malloc(sizeof(*o));
	struct control_msg *rep = malloc(sizeof(*rep));
	char err[1024] = "", why[256];
	const char *op;
	bool status = false;
	int ret, reply_fd = -1;

	if (!o || !rep) {
		c->dead = true;
		goto out;
	}
	if (control_parse(o, line, len, why, sizeof(why))) {
		util_fmt(err, sizeof(err), "malformed request: %s", why);
		reply_error(c, rep, err);
		goto out;
	}
	op = control_str(o, "op", NULL);
	if (!op) {
		reply_error(c, rep, "request has no \"op\" string");
		goto out;
	}
	control_msg_begin(rep);
	control_msg_bool(rep, "ok", true);
	if (!strcmp(op, "ping")) {
		static const char *const allowed[] = { "op", NULL };

		ret = check_members(o, allowed, err, sizeof(err));
		control_msg_u64(rep, "pid", (uint64_t)getpid());
		control_msg_u64(rep, "runs", d->n_runs);
		control_msg_u64(rep, "spares", pool_ready(d->pool));
		control_msg_u64(rep, "spares_wanted", d->spares);
	} else if (!strcmp(op, "attach") || !strcmp(op, "run")) {
		int netns_fd = c->passed_fd;

		c->passed_fd = -1;
		if (!strcmp(op, "attach"))
			ret = op_attach(d, c, o, &netns_fd, rep, err, sizeof(err));
		else
			ret = op_run(d, c, o, &netns_fd, rep, &reply_fd, err, sizeof(err));
		if (netns_fd >= 0)
			close(netns_fd);
	} else if (!strcmp(op, "detach")) {
		ret = op_detach(d, c, o, rep, err, sizeof(err));
	} else if (!strcmp(op, "run_started")) {
		ret = op_run_started(c, o, err, sizeof(err));
	} else if (!strcmp(op, "run_end")) {
		ret = op_run_end(d, c, o, rep, err, sizeof(err));
	} else if (!strcmp(op, "set_mode") || !strcmp(op, "replace_policy")) {
		ret = op_switch(d, c, o, !strcmp(op, "replace_policy"), err, sizeof(err));
	} else if (!strcmp(op, "status")) {
		static const char *const allowed[] = { "op", NULL };

		ret = check_members(o, allowed, err, sizeof(err));
		if (!ret) {
			control_msg_u64(rep, "runs", d->n_runs);
			control_msg_u64(rep, "attaching", d->n_attaching);
			control_msg_u64(rep, "spares", pool_ready(d->pool));
			control_msg_u64(rep, "spares_wanted", d->spares);
		}
		status = !ret;
	} else if (!strcmp(op, "events")) {
		static const char *const allowed[] = { "op", "run_id", NULL };
		struct drun *dr = NULL;
		int sz = DAEMON_STREAM_SNDBUF;

		ret = check_members(o, allowed, err, sizeof(err));
		if (!ret && control_str(o, "run_id", NULL) &&
		    !(dr = need_run(d, o, err, sizeof(err))))
			ret = -ENOENT;
		if (!ret) {
			setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
			pthread_mutex_lock(&d->tap_lock);
			send_reply(c, rep);
			c->stream = true;
			c->only = dr;
			pthread_mutex_unlock(&d->tap_lock);
			goto out;
		}
	} else {
		util_fmt(err, sizeof(err), "unknown op \"%s\"", op);
		ret = -EINVAL;
	}
	if (ret == REPLY_LATER)
		goto out;
	if (ret) {
		reply_error(c, rep, util_why(err, ret));
		goto out;
	}
	send_reply_fd(c, rep, reply_fd);
	if (status && send_status_lines(d, c))
		c->dead = true;
out:
	/*
	 * A descriptor belongs to the request it came with: one no request took (a status, a
	 * set_mode that carried one) is closed here, or a later run that names a netns and sends
	 * none would be set up in it.
	 */
	if (c->passed_fd >= 0) {
		close(c->passed_fd);
		c->passed_fd = -1;
	}
	free(o);
	free(rep);
}

/* The whole requests in c's buffer, in order, until one is answered later (c->waiting). */
static void client_lines(struct daemon *d, struct client *c)
{
	char *nl;

	while (!c->dead && !c->waiting && (nl = memchr(c->buf, '\n', c->len))) {
		size_t line = (size_t)(nl - c->buf);

		/* a viewer sends nothing more; what it sends is ignored */
		if (!c->stream)
			handle_request(d, c, c->buf, line);
		memmove(c->buf, nl + 1, c->len - line - 1);
		c->len -= line + 1;
		c->since_ms = util_mono_ms();
	}
}

static void client_read(struct daemon *d, struct client *c)
{
	struct control_msg *rep;
	ssize_t n;

	{
		/*
		 * A handed run's seccomp listener comes with its run_started request: one descriptor.
		 * Room for many, so that a request carrying more (or several messages of them) is
		 * read whole: every descriptor that arrived is closed but a lone one, or the daemon
		 * would run out of them, one request at a time.
		 */
		char cbuf[CMSG_SPACE(sizeof(int) * DAEMON_PASSED_FDS_MAX)];
		struct iovec iov = { .iov_base = c->buf + c->len, .iov_len = sizeof(c->buf) - c->len };
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cbuf,
			.msg_controllen = sizeof(cbuf),
		};
		struct cmsghdr *cm;
		int kept = -1, n_fds = 0;

		n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);
		for (cm = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; cm; cm = CMSG_NXTHDR(&msg, cm)) {
			size_t i, count;

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
			    cm->cmsg_len < CMSG_LEN(0))
				continue;
			count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < count; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (kept >= 0)
					close(kept);
				kept = fd;
				n_fds++;
			}
		}
		/* more than one, or cut short (MSG_CTRUNC: the kernel closed the rest): none kept */
		if (kept >= 0 && (n_fds > 1 || (msg.msg_flags & MSG_CTRUNC))) {
			close(kept);
			kept = -1;
		}
		if (kept >= 0) {
			/* one at a time: an unclaimed one is replaced */
			if (c->passed_fd >= 0)
				close(c->passed_fd);
			c->passed_fd = kept;
		}
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* a request cut short by the end of the stream is answered, not dropped in silence */
		if (n == 0 && c->len && !c->stream) {
			rep = malloc(sizeof(*rep));
			if (rep) {
				reply_error(c, rep, "truncated request: the stream ended before its "
						    "newline");
				free(rep);
			}
		}
		c->dead = true;
		return;
	}
	c->len += (size_t)n;
	client_lines(d, c);
	if (c->len == sizeof(c->buf)) {
		rep = malloc(sizeof(*rep));
		if (rep) {
			reply_error(c, rep, "request longer than " "65536 bytes");
			free(rep);
		}
		c->dead = true;
	}
}

/*
 * Who a client is, for the log: every client is root, so the process and the login it acts for
 * (the audit loginuid, which sudo keeps) say who asked. Read at accept: it may be gone later.
 */
static void client_who(const struct ucred *cred, char *out, size_t size)
{
	char path[64], comm[32] = "?", uid[16] = "";

	util_fmt(path, sizeof(path), "/proc/%d/comm", (int)cred->pid);
	if (util_read_file(path, comm, sizeof(comm)) < 0)
		util_copy(comm, sizeof(comm), "?");
	comm[strcspn(comm, "\n")] = '\0';
	util_fmt(path, sizeof(path), "/proc/%d/loginuid", (int)cred->pid);
	if (util_read_file(path, uid, sizeof(uid)) < 0)
		uid[0] = '\0';
	/* 4294967295: no login (a service, a test) */
	if (uid[0] && strcmp(uid, "4294967295"))
		util_fmt(out, size, "pid %d (%s), loginuid %s", (int)cred->pid, comm, uid);
	else
		util_fmt(out, size, "pid %d (%s)", (int)cred->pid, comm);
}

static void client_accept(struct daemon *d)
{
	char why[160];
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	int fd;

	fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	/*
	 * Root with CAP_SYS_ADMIN only: the socket's mode keeps other uids out, but a confined
	 * workload (sluice run's default) is uid 0 without capabilities, and must not switch its
	 * own run to report mode or detach another tenant's.
	 */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    control_peer_check(fd, why, sizeof(why))) {
		static const char msg[] = "{\"ok\":false,\"error\":\"the sluice daemon answers "
					  "root only, with CAP_SYS_ADMIN\"}\n";

		if (send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
			/* nothing more to tell it */
		}
		close(fd);
		return;
	}
	if (d->n_clients == DAEMON_CLIENTS_MAX) {
		static const char msg[] = "{\"ok\":false,\"error\":\"too many clients\"}\n";

		if (send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
			/* nothing more to tell it */
		}
		close(fd);
		return;
	}
	c = malloc(sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	client_who(&cred, c->who, sizeof(c->who));
	c->fd = fd;
	c->stream = false;
	c->dead = false;
	c->only = NULL;
	c->owns = NULL;
	c->passed_fd = -1;
	c->waiting = false;
	c->len = 0;
	c->since_ms = util_mono_ms();
	pthread_mutex_lock(&d->tap_lock);
	d->clients[d->n_clients++] = c;
	pthread_mutex_unlock(&d->tap_lock);
}

/*
 * A client gone before its answer: the switch or the end it waits for answers nobody, and the
 * attach is dropped (attach_finish).
 */
static void client_forget(struct daemon *d, const struct client *c)
{
	size_t i;

	for (i = 0; i < d->n_attaching; i++)
		if (d->attaching[i]->bg->client == c)
			d->attaching[i]->bg->client = NULL;
	for (i = 0; i < d->n_runs; i++) {
		struct drun *dr = d->runs[i];

		if (dr->bg && dr->bg->client == c)
			dr->bg->client = NULL;
		if (dr->end_client == c)
			dr->end_client = NULL;
	}
}

static void clients_reap(struct daemon *d)
{
	int64_t now = util_mono_ms();
	size_t i;

	/*
	 * A handed run whose sluice run is gone (killed, crashed) before telling how its command
	 * ended: nobody supervises the command any more, so the run ends as a signal would end it,
	 * its processes killed, its log sealed.
	 */
	for (i = 0; i < d->n_clients; i++) {
		struct client *c = d->clients[i];

		if (c->dead && c->owns) {
			struct drun *dr = c->owns;

			fprintf(stderr, "sluice daemon: run %s: its sluice run (%s) is gone: ending "
					"it\n", dr->r.run_id, c->who);
			if (!end_after_switch(dr, "client gone"))
				end_run(d, dr, "client gone");
		}
	}

	pthread_mutex_lock(&d->tap_lock);
	for (i = 0; i < d->n_clients;) {
		struct client *c = d->clients[i];

		/*
		 * half a request and nothing more, or nothing at all (a client that connected and
		 * went quiet, or keeps its connection after its reply): not worth one of the slots
		 * an oci-hook may need
		 */
		if (!c->stream && !c->dead && !c->owns && !c->waiting &&
		    now - c->since_ms > DAEMON_CLIENT_IDLE_MS)
			c->dead = true;
		if (!c->dead) {
			i++;
			continue;
		}
		if (c->waiting)
			client_forget(d, c);
		close(c->fd);
		if (c->passed_fd >= 0)
			close(c->passed_fd);
		free(c);
		d->clients[i] = d->clients[--d->n_clients];
	}
	pthread_mutex_unlock(&d->tap_lock);
}

/* ------------------------------------------------------------------------------------------ */
/* Loads in flight (bg_load): switches and attaches */

static const char *mode_name(int mode)
{
	return mode == SL_MODE_REPORT ? "report" : "enforce";
}

static void leave_run(struct daemon *d, struct drun *dr);

/*
 * A switch's load is over (load_finish: its thread joined, or it never started). The switch is
 * committed and its client answered, or, should the run have ended meanwhile (end_why) or the
 * daemon be stopping, dropped (the old programs stay) and the client told so. A run's end that
 * waited for the switch follows (not when stopping: the run is left for the next daemon, and
 * whoever asked for its end is told so), then each client's next requests.
 */
static void switch_finish(struct daemon *d, struct bg_load *sw, bool stopping)
{
	struct drun *dr = sw->dr;
	struct client *c = sw->client, *ec = NULL;
	struct control_msg *rep = malloc(sizeof(*rep));
	char err[1024] = "", digest[65];
	int64_t t0 = util_mono_ms();
	int ret;

	if (!sw->started && !sw->ret && !stopping && !dr->end_why) {
		/* loads_start makes sure of that: never committed unverified */
		sw->ret = -EINVAL;
		util_fmt(sw->err, sizeof(sw->err), "the switch's programs were never loaded");
	}
	dr->bg = NULL;
	ret = sw->ret;
	if (ret) {
		util_copy(err, sizeof(err), sw->err);
	} else if (stopping) {
		util_fmt(err, sizeof(err), "the daemon stopped while run %s's new programs were "
					   "being verified: the switch was not made; the run stays on "
					   "%s (%s) for the next daemon",
			 dr->r.run_id, dr->r.args.policy_path, mode_name(dr->r.policy->mode));
		ret = -ECANCELED;
	} else if (dr->end_why) {
		util_fmt(err, sizeof(err), "run %s ended (%s) while its new programs %s: the switch "
					   "was not made; the run ended on %s (%s)",
			 dr->r.run_id, dr->end_why, sw->started ? "were being verified" :
			 "waited for a thread to verify them", dr->r.args.policy_path,
			 mode_name(dr->r.policy->mode));
		ret = -ECANCELED;
	} else {
		dr->r.switch_by = sw->who;
		ret = switch_commit(sw->job, err, sizeof(err));
		dr->r.switch_by = NULL;
	}
	switch_free(sw->job);
	if (!ret) {
		fprintf(stderr, "sluice daemon: run %s switched to %s (%s): new programs verified "
				"off the loop in %" PRId64 " ms, committed in %" PRId64 " ms\n",
			dr->r.run_id, dr->r.args.policy_path, mode_name(dr->r.policy->mode),
			sw->load_ms, util_mono_ms() - t0);
	} else if (ret == -ECANCELED) {
		fprintf(stderr, "sluice daemon: %s\n", err);
	} else {
		/* (the client hears it too; the daemon's log must, where no client is left) */
		fprintf(stderr, "sluice daemon: run %s: switch refused: %s\n", dr->r.run_id, err);
	}
	if (c) {
		c->waiting = false;
		c->since_ms = util_mono_ms();
		if (!rep) {
			c->dead = true;
		} else if (ret) {
			reply_error(c, rep, err);
		} else {
			util_hex(dr->r.policy->sha256, sizeof(dr->r.policy->sha256), digest,
				 sizeof(digest));
			control_msg_begin(rep);
			control_msg_bool(rep, "ok", true);
			control_msg_str(rep, "run_id", dr->r.run_id);
			control_msg_str(rep, "mode", mode_name(dr->r.policy->mode));
			control_msg_str(rep, "policy", dr->r.args.policy_path);
			control_msg_str(rep, "policy_sha256", digest);
			send_reply(c, rep);
		}
	}
	free(sw);
	if (ret == -ENOTRECOVERABLE) {
		/*
		 * The switch's commit could move the run's hooks neither back nor forward: some run
		 * the new programs, and the log's policy_switch_begin stays open. Nothing more is
		 * written to the log (no line could name what enforces now); the run is left pinned
		 * as it is, as a daemon that died there would leave it, with the new set staged: the
		 * next daemon (or sluice resume) finishes the move to it, which the log announced.
		 */
		fprintf(stderr, "sluice daemon: run %s: %s. The run is left pinned as it stands, its "
				"log unsealed, the new programs staged; a next daemon or sluice resume "
				"finishes moving its hooks to them\n", dr->r.run_id, err);
		ec = dr->end_client;
		dr->end_client = NULL;
		if (ec) {
			ec->waiting = false;
			ec->since_ms = util_mono_ms();
			if (rep) {
				util_fmt(err, sizeof(err), "run %s was not ended: its switch failed "
							   "half-way and the daemon left it",
					 dr->r.run_id);
				reply_error(ec, rep, err);
			} else {
				ec->dead = true;
			}
		}
		leave_run(d, dr);
		free(rep);
		if (c)
			client_lines(d, c);
		if (ec)
			client_lines(d, ec);
		return;
	}
	if (dr->end_why) {
		ec = dr->end_client;
		dr->end_client = NULL;
		if (ec) {
			ec->waiting = false;
			ec->since_ms = util_mono_ms();
		}
		if (stopping) {
			if (ec && rep) {
				util_fmt(err, sizeof(err), "run %s was not ended: the daemon stopped "
							   "first; the next daemon takes it over",
					 dr->r.run_id);
				reply_error(ec, rep, err);
			}
		} else {
			if (rep) {
				control_msg_begin(rep);
				control_msg_bool(rep, "ok", true);
			}
			/* dr is freed here */
			end_requested(d, dr, ec && rep ? rep : NULL);
			if (ec && rep)
				send_reply(ec, rep);
		}
		if (ec && !rep)
			ec->dead = true;
	}
	free(rep);
	if (stopping)
		return;
	if (c)
		client_lines(d, c);
	if (ec)
		client_lines(d, ec);
}

/*
 * An attach's load is done (or, stopping, about to be: waited for; or it never started). The
 * attach is committed and its client answered; or, its load failed, the daemon stopping, or its
 * client gone (nobody was told the run is attached, so nobody would detach it: an oci-hook that
 * timed out failed its container), it is undone and said so. Then its client's next requests.
 */
static void attach_finish(struct daemon *d, struct bg_load *bg, bool stopping)
{
	struct drun *dr = bg->dr;
	struct client *c = bg->client;
	struct control_msg *rep = malloc(sizeof(*rep));
	char err[1024] = "";
	size_t i;
	int ret = bg->ret;

	for (i = 0; i < d->n_attaching; i++)
		if (d->attaching[i] == dr) {
			d->attaching[i] = d->attaching[--d->n_attaching];
			break;
		}
	dr->bg = NULL;
	if (ret) {
		util_copy(err, sizeof(err), bg->err);
	} else if (stopping || !c || c->dead) {
		util_fmt(err, sizeof(err), "run %s was not attached: %s while its programs %s; "
					   "nothing of it stays",
			 dr->r.run_id, stopping ? "the daemon stopped" : "its client went away",
			 bg->started ? "were being verified" : "waited for a thread to verify them");
		ret = -ECANCELED;
	} else if (rep) {
		control_msg_begin(rep);
		control_msg_bool(rep, "ok", true);
		ret = attach_commit(d, dr, bg->asked_ms, bg->load_ms, rep, err, sizeof(err));
	} else {
		util_fmt(err, sizeof(err), "out of memory");
		ret = -ENOMEM;
	}
	if (ret == -ECANCELED)
		fprintf(stderr, "sluice daemon: %s\n", err);
	else if (ret)
		fprintf(stderr, "sluice daemon: run %s: the attach failed: %s\n", dr->r.run_id, err);
	if (ret)
		attach_undo(dr);
	if (c) {
		c->waiting = false;
		c->since_ms = util_mono_ms();
		if (!rep)
			c->dead = true;
		else if (ret)
			reply_error(c, rep, err);
		else
			send_reply(c, rep);
	}
	free(rep);
	free(bg);
	if (c && !stopping)
		client_lines(d, c);
}

/*
 * A load is over: its thread joined (stopping: waited for, a load cannot be stopped; libbpf has
 * no way to), then the switch or the attach finished.
 */
static void load_finish(struct daemon *d, struct bg_load *bg, bool stopping)
{
	if (bg->started) {
		pthread_join(bg->thread, NULL);
		d->loads_running--;
	}
	if (bg->kind == BG_SWITCH)
		switch_finish(d, bg, stopping);
	else
		attach_finish(d, bg, stopping);
}

/* A queued load with no one left to use it: a switch of a run that ended, an attach whose client
   went away. */
static bool load_unwanted(const struct bg_load *bg)
{
	/* a client that hung up is dead before it is forgotten (clients_reap): gone all the same */
	return bg->kind == BG_SWITCH ? bg->dr->end_why != NULL : !bg->client || bg->client->dead;
}

/*
 * The loads queued: each unwanted one dropped unloaded at once (the run's end, or its client,
 * is answered now, not when a thread frees up), the others started in order while fewer than
 * DAEMON_LOAD_THREADS load. From the loop only, as load_finish: it answers clients and reads
 * their next requests, which must not happen inside the handling of one.
 */
static void loads_start(struct daemon *d)
{
	struct bg_load **q = &d->load_queue, *bg;

	while ((bg = *q)) {
		int err = 0;

		if (!load_unwanted(bg) && d->loads_running >= DAEMON_LOAD_THREADS) {
			q = &bg->next;
			continue;
		}
		*q = bg->next;
		bg->next = NULL;
		if (!load_unwanted(bg)) {
			err = -util_thread_create(&bg->thread, load_thread, bg);
			if (!err) {
				bg->started = true;
				d->loads_running++;
				continue;
			}
			bg->ret = -err;
			util_fmt(bg->err, sizeof(bg->err), "start the thread that loads run %s's "
							   "programs: %s", bg->dr->r.run_id,
				 strerror(err));
		}
		load_finish(d, bg, false);
		/* its clients' next requests may have queued more, or ended runs: from the top */
		q = &d->load_queue;
	}
}

/* The load threads that are done. */
static void loads_collect(struct daemon *d)
{
	struct bg_load *bg;

	while (read(d->load_done[0], &bg, sizeof(bg)) == sizeof(bg))
		load_finish(d, bg, false);
}

/* ------------------------------------------------------------------------------------------ */
/* Start and stop */

static int parse_args(int argc, char **argv, struct daemon *d)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "log-dir", required_argument, NULL, 'L' },
		{ "key", required_argument, NULL, 'k' },
		{ "metrics-listen", required_argument, NULL, 'M' },
		{ "metrics-textfile", required_argument, NULL, 'T' },
		{ "spares", required_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			d->socket_path = optarg;
			break;
		case 'S':
			d->state_dir = optarg;
			break;
		case 'L':
			d->log_dir = optarg;
			break;
		case 'k':
			d->key_path = optarg;
			break;
		case 'M': {
			struct sockaddr_in6 sa;
			unsigned int len;

			if (metrics_http_parse_addr(optarg, &sa, &len)) {
				fprintf(stderr, "sluice daemon: --metrics-listen %s: want IP:PORT, "
						"[IPv6]:PORT or PORT\n", optarg);
				return -EINVAL;
			}
			d->metrics_listen = optarg;
			break;
		}
		case 'T':
			d->metrics_textfile = optarg;
			break;
		case 'P': {
			char *end;
			unsigned long n;

			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' ||
			    n > DAEMON_SPARES_MAX) {
				fprintf(stderr, "sluice daemon: --spares %s: want a number "
						"from 0 to %d\n", optarg, DAEMON_SPARES_MAX);
				return -EINVAL;
			}
			d->spares = (unsigned int)n;
			break;
		}
		case 'v':
			d->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "sluice daemon: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	d->socket_path = control_socket_path(d->socket_path);
	return 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	char *p;

	if (util_copy(buf, sizeof(buf), path))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* One daemon per state directory (its runs) and per socket: a second one says who has them. */
static int take_lock(struct daemon *d)
{
	char path[PATH_MAX], pid[32] = "";
	int err;

	if (mkdir_p(d->state_dir, 0700) || util_fmt(path, sizeof(path), "%s/runs", d->state_dir) ||
	    mkdir_p(path, 0700)) {
		fprintf(stderr, "sluice daemon: create state directory %s: %s\n", d->state_dir,
			strerror(errno));
		return -EIO;
	}
	if (util_fmt(path, sizeof(path), "%s/daemon.lock", d->state_dir))
		return -ENAMETOOLONG;
	d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (d->lock_fd < 0) {
		err = -errno;
		fprintf(stderr, "sluice daemon: open %s: %s\n", path, strerror(-err));
		return err;
	}
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		if (pread(d->lock_fd, pid, sizeof(pid) - 1, 0) < 0)
			pid[0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fprintf(stderr, "sluice daemon: another sluice daemon (pid %s) owns %s: one daemon "
				"per host\n", pid[0] ? pid : "?", d->state_dir);
		return err == -EWOULDBLOCK ? -EBUSY : err;
	}
	if (ftruncate(d->lock_fd, 0) == 0 && dprintf(d->lock_fd, "%d\n", (int)getpid()) < 0)
		fprintf(stderr, "sluice daemon: write %s: %s\n", path, strerror(errno));
	return 0;
}

static int listen_socket(struct daemon *d)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[PATH_MAX], *slash;
	int fd, err;

	if (strlen(d->socket_path) >= sizeof(sun.sun_path) ||
	    util_copy(dir, sizeof(dir), d->socket_path))
		return fprintf(stderr, "sluice daemon: socket path too long\n"), -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		err = mkdir_p(dir, 0700);
		if (err) {
			fprintf(stderr, "sluice daemon: create %s: %s\n", dir, strerror(-err));
			return err;
		}
	}
	/*
	 * Two daemons starting at once (other state directories, one socket) would both find
	 * nobody answering, and the second would unlink the first's socket: the lock decides.
	 */
	if (util_fmt(dir, sizeof(dir), "%s.lock", d->socket_path))
		return -ENAMETOOLONG;
	d->sock_lock_fd = open(dir, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (d->sock_lock_fd < 0 || flock(d->sock_lock_fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		fprintf(stderr, "sluice daemon: %s: %s\n", dir,
			err == -EWOULDBLOCK ? "another sluice daemon holds this socket: one daemon "
					      "per host" : strerror(-err));
		return err == -EWOULDBLOCK ? -EBUSY : err;
	}
	/* a daemon answering there already (with another state directory) keeps it */
	fd = control_connect(d->socket_path);
	if (fd >= 0) {
		close(fd);
		fprintf(stderr, "sluice daemon: another sluice daemon is serving %s: one daemon per "
				"host\n", d->socket_path);
		return -EBUSY;
	}
	unlink(d->socket_path); /* a dead daemon's */
	memcpy(sun.sun_path, d->socket_path, strlen(d->socket_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* created 0600 from the first instant: no window in which anyone else could connect */
	{
		mode_t old = umask(0177);

		err = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
		umask(old);
	}
	if (!err && listen(fd, 64))
		err = -errno;
	if (err) {
		fprintf(stderr, "sluice daemon: listen on %s: %s\n", d->socket_path, strerror(-err));
		close(fd);
		return err;
	}
	d->listen_fd = fd;
	return 0;
}

/*
 * An attach a daemon died during: its client was never told "ok" (its oci-hook failed the
 * container), so nothing of it may stay. The pins are the links' last holders: removing them
 * detaches the programs.
 */
static void undo_attach(struct daemon *d, const char *run_id, const char *log)
{
	struct loader *l = loader_reopen(run_id, NULL, d->verbose);
	int err;

	if (l) {
		loader_detach(l);
		loader_destroy(l);
	}
	/*
	 * What reopen could not take (the daemon died halfway through pinning, or before the run's
	 * host side): its pins, and its place in the namespace's maps
	 */
	err = loader_purge(run_id);
	if (err && err != -ENOENT)
		fprintf(stderr, "sluice daemon: remove the pins of run %s: %s\n", run_id,
			strerror(-err));
	fprintf(stderr, "sluice daemon: run %s: its attach never completed (a daemon died during "
			"it): undone; its log, if any, is %s\n", run_id, log);
}

/* Every run a previous daemon owned and left pinned: taken over, its gap declared. */
static void adopt_runs(struct daemon *d)
{
	char dirpath[PATH_MAX], log[PATH_MAX], msg[1024];
	struct dirent *e;
	DIR *dir;

	if (util_fmt(dirpath, sizeof(dirpath), "%s/runs", d->state_dir))
		return;
	dir = opendir(dirpath);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		struct drun *dr;
		char *attaching;
		int n, err;

		if (e->d_name[0] == '.') {
			/* a state file a killed daemon was writing: never renamed into place */
			if (state_tmp_name(e->d_name) && unlinkat(dirfd(dir), e->d_name, 0))
				fprintf(stderr, "sluice daemon: remove %s/%s: %s\n", dirpath,
					e->d_name, strerror(errno));
			continue;
		}
		if (run_check_id(e->d_name))
			continue;
		dr = calloc(1, sizeof(*dr));
		if (!dr)
			break;
		dr->d = d;
		run_init(&dr->r, "sluice daemon");
		util_copy(dr->r.run_id, sizeof(dr->r.run_id), e->d_name);
		dr->r.args.run_id = dr->r.run_id;
		dr->r.args.key_path = d->key_path;
		dr->r.args.verbose = d->verbose;
		dr->r.on_line = tap_line;
		dr->r.line_ctx = dr;
		state_path(d, e->d_name, dr->state_path, sizeof(dr->state_path));
		n = util_read_file(dr->state_path, log, sizeof(log));
		if (n <= 1 || log[n - 1] != '\n') {
			fprintf(stderr, "sluice daemon: %s: not a log path; run %s left as it is\n",
				dr->state_path, e->d_name);
			drun_free(dr);
			continue;
		}
		log[n - 1] = '\0';
		attaching = strchr(log, '\n');
		if (attaching && !strncmp(attaching + 1, STATE_ATTACHING, strlen(attaching + 1)) &&
		    strlen(attaching + 1) == strlen(STATE_ATTACHING) - 1) {
			*attaching = '\0';
			undo_attach(d, e->d_name, log);
			unlink(dr->state_path);
			drun_free(dr);
			continue;
		}
		util_copy(dr->r.log_path, sizeof(dr->r.log_path), log);
		err = resume_take(&dr->r, msg, sizeof(msg));
		if (err || add_run(d, dr)) {
			/* not taken: left exactly as it was found, pinned, for a next try */
			dr->r.hands_off = true;
			fprintf(stderr, "sluice daemon: take over run %s: %s\n", e->d_name,
				err ? msg : "too many runs");
			if (err == -ENOENT) {
				/* nothing is pinned: nothing left to enforce nor to take */
				fprintf(stderr, "sluice daemon: run %s is not pinned any more; its log "
						"%s ends unsealed\n", e->d_name, log);
				unlink(dr->state_path);
			}
			run_close(&dr->r);
			drun_free(dr);
			continue;
		}
		dr->r.rec.drain_max = DAEMON_DRAIN_MAX;
		if (d->metrics)
			metrics_adopt(d->metrics, dr->r.run_id,
				      dr->r.policy->mode == SL_MODE_REPORT);
		fprintf(stderr, "sluice daemon: took over run %s (%s); log %s\n", dr->r.run_id,
			dr->r.cg.path[0] ? dr->r.cg.path : "cgroup gone", dr->r.log_path);
		/* a cgroup removed while no daemon ran: the run's end is all that is missing */
		if (!dr->r.cg.path[0])
			end_run(d, dr, "cgroup removed");
	}
	closedir(dir);
}

/*
 * Stop serving: every run stays attached and pinned, its resolver stops (names fail closed),
 * its log is flushed unsealed, for the next daemon to take over and continue.
 */
static void leave_run(struct daemon *d, struct drun *dr)
{
	dr->r.hands_off = true;
	dr->r.rec.drain_max = 0; /* all that is there, for the log the next daemon continues */
	records_drain(&dr->r.rec);
	records_kill_queued(&dr->r.rec);
	run_close(&dr->r);
	remove_run(d, dr);
}

static void leave_runs(struct daemon *d)
{
	/* every load is some run's (drun.bg): each is dropped below, started or not */
	d->load_queue = NULL;
	while (d->n_attaching) {
		struct drun *dr = d->attaching[d->n_attaching - 1];

		if (dr->bg->started)
			fprintf(stderr, "sluice daemon: run %s: waiting for its attach's programs to "
					"be verified (a load cannot be stopped), to drop them\n",
				dr->r.run_id);
		load_finish(d, dr->bg, true);
	}
	while (d->n_runs) {
		struct drun *dr = d->runs[d->n_runs - 1];

		if (dr->bg) {
			fprintf(stderr, "sluice daemon: run %s: waiting for its switch's programs to "
					"be verified (a load cannot be stopped), to drop them\n",
				dr->r.run_id);
			load_finish(d, dr->bg, true);
		}
		leave_run(d, dr);
	}
}

static int block_signals(struct daemon *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGPIPE);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	d->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return d->sig_fd < 0 ? -errno : 0;
}

/* --metrics-textfile: rewritten every DAEMON_TEXTFILE_MS, and once more at the end. */
static void textfile(struct daemon *d, bool now)
{
	int err;

	if (!d->metrics_textfile || (!now && util_mono_ms() < d->textfile_due_ms))
		return;
	d->textfile_due_ms = util_mono_ms() + DAEMON_TEXTFILE_MS;
	err = metrics_write_textfile(d->metrics, d->metrics_textfile);
	if (err && !d->textfile_failed)
		fprintf(stderr, "sluice daemon: writing the metrics to %s: %s (said once)\n",
			d->metrics_textfile, strerror(-err));
	d->textfile_failed = err != 0;
}

/* The spares' thread (after block_signals: it must take none of the loop's signals). */
static int start_spares(struct daemon *d)
{
	/* the sizes an attach's run has (run_setup), for a policy up to the spares' */
	const struct loader_caps caps = {
		.v4 = DAEMON_SPARE_CIDRS,
		.v6 = DAEMON_SPARE_CIDRS,
		.rules = DAEMON_SPARE_RULES,
		.ringbuf_bytes = RUN_RINGBUF_KIB * 1024,
		.learned_max = RUN_LEARNED_MAX,
		.host_totals = true,
	};
	int err = pool_new(d->spares, &caps, d->verbose, &d->pool);

	if (err)
		fprintf(stderr, "sluice daemon: start the spares' thread: %s\n", strerror(-err));
	return err;
}

static void loop(struct daemon *d)
{
	enum { FIXED = 4 };
	struct pollfd pfd[FIXED + DAEMON_CLIENTS_MAX + 2 * DAEMON_RUNS_MAX + METRICS_HTTP_POLLFDS];

	for (;;) {
		struct signalfd_siginfo si;
		size_t i, n_clients;
		int n = FIXED, http0, timeout;

		pfd[0] = (struct pollfd){ .fd = d->listen_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = d->sig_fd, .events = POLLIN };
		/* a spare loaded (-1 without spares: poll skips it) */
		pfd[2] = (struct pollfd){ .fd = pool_fd(d->pool), .events = POLLIN };
		pfd[3] = (struct pollfd){ .fd = d->load_done[0], .events = POLLIN };
		n_clients = d->n_clients;
		/* a waiting client is not read (its hang-up still shows) until it is answered */
		for (i = 0; i < n_clients; i++)
			pfd[n++] = (struct pollfd){ .fd = d->clients[i]->fd,
						    .events = d->clients[i]->waiting ? 0 : POLLIN };
		for (i = 0; i < d->n_runs; i++)
			n += run_poll_fds(&d->runs[i]->r, pfd + n, 2);
		http0 = n;
		timeout = DAEMON_POLL_MS;
		if (d->http) {
			int t = metrics_http_timeout_ms(d->http);

			n += (int)metrics_http_pollfds(d->http, pfd + n, METRICS_HTTP_POLLFDS);
			if (t >= 0 && t < timeout)
				timeout = t;
		}
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "sluice daemon: poll: %s\n", strerror(errno));
			return;
		}
		while (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGPIPE)
				continue;
			fprintf(stderr, "sluice daemon: %s received: stopping; %zu run%s stay "
					"enforced for the next daemon\n", strsignal((int)si.ssi_signo),
				d->n_runs, d->n_runs == 1 ? "" : "s");
			return;
		}
		for (i = 0; i < n_clients; i++)
			if (pfd[FIXED + i].revents)
				client_read(d, d->clients[i]);
		if (pfd[0].revents & POLLIN)
			client_accept(d);
		if (pfd[2].revents & POLLIN)
			pool_collect(d->pool);
		if (pfd[3].revents & POLLIN)
			loads_collect(d);
		loads_start(d);
		for (i = 0; i < d->n_runs;) {
			struct drun *dr = d->runs[i];
			const char *why;

			if (run_step(&dr->r, &why) && !end_after_switch(dr, why)) {
				end_run(d, dr, why);
				continue; /* the table moved its last run here */
			}
			i++;
		}
		clients_reap(d);
		/* the loads of runs that just ended, or of clients just gone: dropped now */
		loads_start(d);
		if (d->http)
			metrics_http_handle(d->http, pfd + http0, (size_t)(n - http0));
		textfile(d, false);
	}
}

int daemon_main(int argc, char **argv)
{
	struct daemon d = {
		.state_dir = DAEMON_STATE_DIR,
		.log_dir = DAEMON_LOG_DIR,
		.lock_fd = -1,
		.sock_lock_fd = -1,
		.listen_fd = -1,
		.sig_fd = -1,
		.spares = DAEMON_SPARES,
		.load_done = { -1, -1 },
	};
	int status = RUN_EXIT_SLUICE_ERROR;

	if (parse_args(argc, argv, &d))
		return RUN_EXIT_SLUICE_ERROR;
	if (geteuid() != 0) {
		fprintf(stderr, "sluice daemon needs root: it loads BPF programs, attaches them to "
				"cgroups and pins them in bpffs\n");
		return RUN_EXIT_SLUICE_ERROR;
	}
	{
		/*
		 * DAEMON_CLIENTS_MAX connections and DAEMON_RUNS_MAX runs (maps, links, logs each)
		 * outgrow the usual soft limit of 1024 descriptors: take the hard limit, so that the
		 * client limit, not EMFILE at accept (a connection left unanswered), is what a
		 * client meets.
		 */
		struct rlimit nofile;

		if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
			nofile.rlim_cur = nofile.rlim_max;
			setrlimit(RLIMIT_NOFILE, &nofile);
		}
	}
	pthread_mutex_init(&d.tap_lock, NULL);
	d.metrics = malloc(sizeof(*d.metrics));
	if (!d.metrics) {
		fprintf(stderr, "sluice daemon: out of memory\n");
		goto out;
	}
	metrics_init(d.metrics, SLUICE_VERSION);
	if (d.metrics_listen) {
		int err = metrics_http_new(&d.http, d.metrics_listen, d.metrics);

		if (err) {
			fprintf(stderr, "sluice daemon: --metrics-listen %s: %s\n",
				d.metrics_listen, strerror(-err));
			goto out;
		}
	}
	if (block_signals(&d)) {
		fprintf(stderr, "sluice daemon: signalfd: %s\n", strerror(errno));
		goto out;
	}
	if (pipe2(d.load_done, O_CLOEXEC) || fcntl(d.load_done[0], F_SETFL, O_NONBLOCK)) {
		fprintf(stderr, "sluice daemon: pipe: %s\n", strerror(errno));
		goto out;
	}
	if (take_lock(&d) || listen_socket(&d) || start_spares(&d))
		goto out;
	adopt_runs(&d);
	/* what a writer killed in an attach left in a namespace's maps, its token unknown */
	loader_ns_collect_all();
	if (getenv("SLUICE_SELFTEST_LOAD_HOLD"))
		fprintf(stderr, "sluice daemon: SLUICE_SELFTEST_LOAD_HOLD is set: loads are held "
				"while %s exists (root's)\n", getenv("SLUICE_SELFTEST_LOAD_HOLD"));
	fprintf(stderr, "sluice daemon: serving %s (pid %d, %zu run%s taken over)\n",
		d.socket_path, (int)getpid(), d.n_runs, d.n_runs == 1 ? "" : "s");
	loop(&d);
	leave_runs(&d);
	textfile(&d, true);
	status = 0;
out:
	while (d.n_clients) {
		close(d.clients[d.n_clients - 1]->fd);
		free(d.clients[--d.n_clients]);
	}
	if (d.listen_fd >= 0) {
		close(d.listen_fd);
		unlink(d.socket_path);
	}
	if (d.sig_fd >= 0)
		close(d.sig_fd);
	/* every load thread is joined (leave_runs) */
	if (d.load_done[0] >= 0)
		close(d.load_done[0]);
	if (d.load_done[1] >= 0)
		close(d.load_done[1]);
	if (d.lock_fd >= 0)
		close(d.lock_fd);
	if (d.sock_lock_fd >= 0)
		close(d.sock_lock_fd);
	/* never attached nor pinned: the spares go with the daemon */
	pool_free(d.pool);
	pthread_mutex_destroy(&d.tap_lock);
	metrics_http_free(d.http);
	if (d.metrics)
		metrics_free(d.metrics);
	free(d.metrics);
	return status;
}
