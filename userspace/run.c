// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The life of a run, in order: parse the policy, load and attach the programs to a new cgroup,
 * start the command inside it, stream decisions into the log and denials onto stderr, and when
 * the command ends (or sluice is told to stop) kill the whole cgroup, drain the last records,
 * account for every lost one, detach, and remove what was created.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "decision.h"
#include "dns.h"
#include "events.h"
#include "hosttotals.h"
#include "journal.h"
#include "loader.h"
#include "note.h"
#include "resolver.h"
#include "run.h"
#include "seqset.h"
#include "spawn.h"
#include "util.h"

#define RUN_ID_MAX 64
#define TASK_MAX 256
#define POLL_INTERVAL_MS 100	/* upper bound on how late an allow record reaches the log */
#define KILL_TIMEOUT_MS 5000
#define RUN_LEARNED_MAX 65536	/* addresses the resolver may hand out, per family */
#define RUN_HOST_KEY "/etc/sluice/host.key"
#define RUN_CERT_MAX 1024	/* the host key's note certifying the run key */
/*
 * A checkpoint every 1000 lines or 10 s: a crash leaves at most that much unsigned, for one
 * Ed25519 signature and two small writes per thousand lines.
 */
#define RUN_CHECKPOINT_LINES 1000
#define RUN_CHECKPOINT_SECS 10

struct run_args {
	const char *policy_path;
	const char *run_id;
	const char *task;
	const char *mode;
	const char *log_path;
	const char *cgroup_parent;
	const char *netns;
	const char *upstream;
	const char *user;
	const char *alerts;
	const char *key_path;	/* --key, $SLUICE_KEY or RUN_HOST_KEY */
	unsigned long checkpoint_lines;
	unsigned long checkpoint_secs;
	int checkpoint_fd;	/* --checkpoint-fd, or -1 */
	unsigned long rotate_kib;
	bool dns_ttl;
	bool strict_evidence;
	unsigned long ringbuf_kib;
	bool verbose;
	char **cmd;
	int n_cmd;
};

/* The kernel sequence numbers that have a line, and the first ranges of those that have none. */
struct run_kseqs {
	struct seqset set;
	struct seqset_list missing;
};

struct run {
	struct run_args args;
	char run_id[RUN_ID_MAX + 1];
	char task_text[TASK_MAX + 1]; /* --task made safe for stderr notices, or "-" */
	char log_path[PATH_MAX];
	struct policy *policy;
	struct policy_compiled *compiled;
	struct loader *loader;
	struct run_cgroup cg;
	struct events *events;
	struct journal *journal;
	struct resolver *resolver;
	int netns_fd;
	int alerts_fd;	/* --alerts, or -1 */
	struct note_signer *run_key; /* signs this run's checkpoints, certified by the host key */
	char host_vkey[NOTE_VKEY_MAX + 1];
	char cert[RUN_CERT_MAX];
	bool still_running; /* processes survived the kill: enforcement must stay in place */
	uid_t uid;	    /* what CMD runs as */
	gid_t gid;
	pthread_mutex_t notice_lock; /* the last DNS denial announced, shared with resolver threads */
	char last_denied_name[DNS_NAME_MAX];
	int64_t last_denied_ns;
	int64_t boot_to_real_ns; /* CLOCK_REALTIME - CLOCK_BOOTTIME, to date kernel timestamps */
	uint64_t lost_reported[SL_HOOK_MAX];
	uint64_t denials;
	uint64_t unlogged; /* decision records the policy's log: setting leaves out */
	/* the ring-buffer reader's (main) thread only; NULL until first needed */
	struct run_kseqs *kseqs;
	bool kseqs_failed; /* could not be tracked: no loss_ranges record */
	bool journal_failed;
	bool no_backstop;	  /* selftests: the packet checks are off */
	char host_side[256];	  /* the veth peers the tc program watches, "" for none */
	struct sni_slot *sni_cache; /* server names of open TLS flows, for their flow lines */
	struct hosttotals *totals;  /* bytes per (rule, host), for the host_total lines */
	bool started; /* run_start was written */
	struct timespec started_at;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice run --policy FILE [--run-id ID] [--task TASK] [--mode enforce|report]\n"
		"                  [--log FILE] [--netns PATH] [--upstream ADDR[:PORT]] [--dns-ttl]\n"
		"                  [--user USER[:GROUP]] [--alerts FILE]\n"
		"                  [--key FILE] [--checkpoint-lines N] [--checkpoint-secs T]\n"
		"                  [--checkpoint-fd FD] [--log-rotate-kib N] [--strict-evidence]\n"
		"                  [--cgroup-parent NAME] [--ringbuf-kib N] [-v] -- CMD [ARG…]\n"
		"\n"
		"Runs CMD in a new cgroup whose connect() and sendmsg() calls are judged in the kernel\n"
		"against the policy. Denials fail at once and are printed on stderr; every decision is\n"
		"written to the log (default ./sluice-RUN_ID.jsonl). Exits with CMD's status.\n"
		"\n"
		"  --netns PATH     start CMD in this network namespace (/run/netns/NAME); the run's\n"
		"                   resolver listens there, on loopback\n"
		"  --upstream ADDR  where the run's resolver asks for listed names (default: the first\n"
		"                   nameserver in /etc/resolv.conf), reached from sluice's namespace\n"
		"  --dns-ttl        learned addresses expire with their DNS TTL (default: with the run)\n"
		"  --user U[:G]     run CMD as this user (and group), with no_new_privs: the\n"
		"                   guarantees assume an unprivileged workload (default: as root)\n"
		"  --alerts FILE    also append the policy's alert_on alerts to FILE (JSON lines)\n"
		"\n"
		"The log is signed: a fresh key for the run, certified in the log's first line by the\n"
		"host key, signs a checkpoint of it every N lines or T seconds, after any loss or\n"
		"anomaly, and at the end; the checkpoints also go to LOG.checkpoints.\n"
		"  --key FILE       the host's signer key (default: $SLUICE_KEY, else\n"
		"                   " RUN_HOST_KEY "; create it with 'sluice keygen FILE')\n"
		"  --checkpoint-lines N  (default %d)    --checkpoint-secs T  (default %d)\n"
		"  --checkpoint-fd FD  also write each checkpoint to this inherited descriptor (a pipe\n"
		"                   to a supervisor, a file the run cannot reach); not passed to CMD\n"
		"  --log-rotate-kib N  past N KiB, compress the log into LOG.000001.gz, … and go on in\n"
		"                   a new LOG (default 0: never)\n"
		"  --strict-evidence  refuse a connection whose allow the ring buffer has no room to\n"
		"                   record (the loss is counted, the connect fails with EPERM)\n",
		RUN_CHECKPOINT_LINES, RUN_CHECKPOINT_SECS);
}

static int64_t ts_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec boot_to_realtime(const struct run *r, uint64_t boot_ns)
{
	int64_t real = (int64_t)boot_ns + r->boot_to_real_ns;
	struct timespec ts = { .tv_sec = real / 1000000000, .tv_nsec = real % 1000000000 };

	return ts;
}

/* Run ids name a cgroup and a bpffs directory: keep them to a safe path component. */
static int check_run_id(const char *id)
{
	size_t i, n = strlen(id);

	if (n == 0 || n > RUN_ID_MAX || id[0] == '.' || id[0] == '-')
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && id[i] != '-' && id[i] != '_' && id[i] != '.')
			return -EINVAL;
	return 0;
}

/*
 * run-<16 hex digits>: 64 random bits, so that the origin "sluice/<run_id>" a log's checkpoints
 * name is unique (C2SP tlog-checkpoint) across every run of a host, not just likely to be.
 */
static int make_run_id(char *buf, size_t len)
{
	uint64_t rnd;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -errno;
	return util_fmt(buf, len, "run-%016" PRIx64, rnd);
}

enum { OPT_KEY = 256, OPT_CHECKPOINT_LINES, OPT_CHECKPOINT_SECS, OPT_CHECKPOINT_FD,
       OPT_LOG_ROTATE_KIB, OPT_STRICT_EVIDENCE };

/* A decimal number in [min, max] for option opt. */
static int parse_ulong(const char *opt, const char *s, unsigned long min, unsigned long max,
		       unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || *out < min || *out > max) {
		fprintf(stderr, "sluice run: %s: expected a number from %lu to %lu, got \"%s\"\n", opt,
			min, max, s);
		return -EINVAL;
	}
	return 0;
}

/*
 * The checkpoint descriptor must be open for writing now, and stays sluice's own: close-on-exec,
 * so the workload cannot write to (or truncate) the copy meant to catch it.
 */
static int take_checkpoint_fd(const char *s, int *out)
{
	unsigned long fd;
	int fl;

	if (parse_ulong("--checkpoint-fd", s, 0, INT_MAX, &fd))
		return -EINVAL;
	if (fd <= STDERR_FILENO) {
		fprintf(stderr, "sluice run: --checkpoint-fd: %lu is the command's stdio too; give a "
				"descriptor of its own (e.g. 3>FILE --checkpoint-fd 3)\n", fd);
		return -EINVAL;
	}
	fl = fcntl((int)fd, F_GETFL);
	if (fl < 0 || fcntl((int)fd, F_GETFD) < 0) {
		fprintf(stderr, "sluice run: --checkpoint-fd: %lu is not an open descriptor\n", fd);
		return -EBADF;
	}
	if ((fl & O_ACCMODE) == O_RDONLY) {
		fprintf(stderr, "sluice run: --checkpoint-fd: %lu is open read-only\n", fd);
		return -EBADF;
	}
	if (fcntl((int)fd, F_SETFD, FD_CLOEXEC)) {
		fprintf(stderr, "sluice run: --checkpoint-fd: %lu: %s\n", fd, strerror(errno));
		return -errno;
	}
	*out = (int)fd;
	return 0;
}

/*
 * The run's own key, certified by the host key: the long-lived host secret is in memory only for
 * the one signature over "sluice run key\n" ORIGIN "\n" RUN_VKEY "\n", and the run key can only
 * ever sign this run's log (its name is the log's origin).
 */
static int make_run_key(struct run *r, char *msg, size_t msg_len)
{
	const char *path = r->args.key_path;
	char skey[NOTE_SKEY_MAX + 2], origin[NOTE_NAME_MAX + 1], vkey[NOTE_VKEY_MAX + 1];
	char text[NOTE_NAME_MAX + NOTE_VKEY_MAX + 32];
	struct note_signer *host = NULL;
	size_t len;
	int err;

	if (!path) {
		path = getenv("SLUICE_KEY");
		if (!path || !*path)
			path = RUN_HOST_KEY;
	}
	err = note_key_file_read(path, skey, sizeof(skey));
	if (err) {
		util_fmt(msg, msg_len, "host key %s: %s; the log is signed with it: create one with "
				       "'sluice keygen %s' (or give --key FILE, or set SLUICE_KEY)",
			 path, strerror(-err), path);
		goto out;
	}
	err = note_signer_parse(skey, &host);
	explicit_bzero(skey, sizeof(skey));
	if (err) {
		util_fmt(msg, msg_len, "host key %s: not a signer key (PRIVATE+KEY+NAME+HASH+KEY, as "
				       "'sluice keygen' writes)", path);
		goto out;
	}
	err = note_signer_vkey(host, r->host_vkey, sizeof(r->host_vkey));
	if (!err)
		err = util_fmt(origin, sizeof(origin), "sluice/%s", r->run_id);
	if (!err)
		err = note_signer_generate(origin, &r->run_key);
	if (!err)
		err = note_signer_vkey(r->run_key, vkey, sizeof(vkey));
	if (!err)
		err = util_fmt(text, sizeof(text), "sluice run key\n%s\n%s\n", origin, vkey);
	if (!err)
		err = note_sign(host, text, strlen(text), r->cert, sizeof(r->cert), &len);
	if (err)
		util_fmt(msg, msg_len, "cannot make the run's key: %s", strerror(-err));
out:
	note_signer_free(host);
	return err;
}

static int parse_args(int argc, char **argv, struct run_args *a)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "run-id", required_argument, NULL, 'r' },
		{ "task", required_argument, NULL, 't' },
		{ "mode", required_argument, NULL, 'm' },
		{ "log", required_argument, NULL, 'l' },
		{ "cgroup-parent", required_argument, NULL, 'c' },
		{ "ringbuf-kib", required_argument, NULL, 'b' },
		{ "netns", required_argument, NULL, 'n' },
		{ "upstream", required_argument, NULL, 'u' },
		{ "dns-ttl", no_argument, NULL, 'T' },
		{ "user", required_argument, NULL, 'U' },
		{ "alerts", required_argument, NULL, 'A' },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "checkpoint-lines", required_argument, NULL, OPT_CHECKPOINT_LINES },
		{ "checkpoint-secs", required_argument, NULL, OPT_CHECKPOINT_SECS },
		{ "checkpoint-fd", required_argument, NULL, OPT_CHECKPOINT_FD },
		{ "log-rotate-kib", required_argument, NULL, OPT_LOG_ROTATE_KIB },
		{ "strict-evidence", no_argument, NULL, OPT_STRICT_EVIDENCE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	a->cgroup_parent = "sluice";
	a->ringbuf_kib = 1024;
	a->checkpoint_lines = RUN_CHECKPOINT_LINES;
	a->checkpoint_secs = RUN_CHECKPOINT_SECS;
	a->checkpoint_fd = -1;
	optind = 1;
	/* "+": stop at the first non-option, so CMD's own options are never ours. */
	while ((c = getopt_long(argc, argv, "+p:r:t:m:l:c:b:n:u:U:A:Tvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			a->policy_path = optarg;
			break;
		case 'r':
			a->run_id = optarg;
			break;
		case 't':
			a->task = optarg;
			break;
		case 'm':
			a->mode = optarg;
			break;
		case 'l':
			a->log_path = optarg;
			break;
		case 'c':
			a->cgroup_parent = optarg;
			break;
		case 'b':
			errno = 0;
			a->ringbuf_kib = strtoul(optarg, &end, 10);
			/* A ring buffer is a power-of-two number of pages. */
			if (errno || *end || a->ringbuf_kib < 4 || a->ringbuf_kib > (1UL << 20) ||
			    (a->ringbuf_kib & (a->ringbuf_kib - 1))) {
				fprintf(stderr, "sluice run: --ringbuf-kib: expected a power of two "
						"from 4 to 1048576, got \"%s\"\n", optarg);
				return -EINVAL;
			}
			break;
		case 'n':
			a->netns = optarg;
			break;
		case 'u':
			a->upstream = optarg;
			break;
		case 'T':
			a->dns_ttl = true;
			break;
		case 'U':
			a->user = optarg;
			break;
		case 'A':
			a->alerts = optarg;
			break;
		case OPT_KEY:
			a->key_path = optarg;
			break;
		case OPT_CHECKPOINT_LINES:
			if (parse_ulong("--checkpoint-lines", optarg, 1, 1UL << 32,
					&a->checkpoint_lines))
				return -EINVAL;
			break;
		case OPT_CHECKPOINT_SECS:
			if (parse_ulong("--checkpoint-secs", optarg, 1, 86400, &a->checkpoint_secs))
				return -EINVAL;
			break;
		case OPT_CHECKPOINT_FD:
			if (take_checkpoint_fd(optarg, &a->checkpoint_fd))
				return -EINVAL;
			break;
		case OPT_LOG_ROTATE_KIB:
			/* up to 1 TiB; a line is at most 8 KiB, so smaller sizes rotate every line */
			if (parse_ulong("--log-rotate-kib", optarg, 0, 1UL << 30, &a->rotate_kib))
				return -EINVAL;
			break;
		case OPT_STRICT_EVIDENCE:
			a->strict_evidence = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (!a->policy_path) {
		fprintf(stderr, "sluice run: --policy FILE is required\n");
		return -EINVAL;
	}
	if (a->mode && strcmp(a->mode, "enforce") && strcmp(a->mode, "report")) {
		fprintf(stderr, "sluice run: --mode: expected enforce or report, got \"%s\"\n",
			a->mode);
		return -EINVAL;
	}
	if (a->task && strlen(a->task) > TASK_MAX) {
		fprintf(stderr, "sluice run: --task: longer than %d bytes\n", TASK_MAX);
		return -EINVAL;
	}
	if (check_run_id(a->cgroup_parent)) {
		fprintf(stderr, "sluice run: --cgroup-parent: expected one path component of "
				"[A-Za-z0-9._-], got \"%s\"\n", a->cgroup_parent);
		return -EINVAL;
	}
	if (optind >= argc) {
		fprintf(stderr, "sluice run: no command given (sluice run --policy FILE -- CMD)\n");
		return -EINVAL;
	}
	a->cmd = argv + optind;
	a->n_cmd = argc - optind;
	return 0;
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

static void write_line(struct run *r, struct journal_line *l);
static void line_run_fields(struct run *r, struct journal_line *l, const char *type,
			    const struct timespec *ts);

/*
 * An alert_on condition held: the alert goes to stderr, into the log, and to --alerts, a
 * stream a security team can tail apart from the run's own output.
 */
static void raise_alert(struct run *r, const char *condition, const char *what)
{
	struct journal_line l;
	struct timespec now;
	struct notice n = { .len = 0 };

	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "alert", &now);
	journal_line_str(&l, "condition", condition);
	journal_line_str(&l, "what", what);
	if (r->alerts_fd >= 0 && !journal_line_finish(&l)) {
		/* one write per line, O_APPEND: tailing readers never see half of one */
		if (write(r->alerts_fd, l.buf, l.len) != (ssize_t)l.len)
			fprintf(stderr, "sluice: writing alerts %s: %s\n", r->args.alerts,
				strerror(errno));
		l.len -= 2; /* reopen the object for the log's own copy */
	}
	write_line(r, &l);
	notice_add(&n, "sluice alert (%s): %s\n", condition, what);
	notice_write(&n);
}

/* A denial's notice, and the "deny" alerts it raises (its first line says what was denied). */
static void notice_denial(struct run *r, struct notice *n)
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

static void journal_error(struct run *r, int err)
{
	if (r->journal_failed)
		return;
	r->journal_failed = true;
	fprintf(stderr, "sluice: writing log %s: %s; enforcement continues\n", r->log_path,
		strerror(-err));
}

static void line_run_fields(struct run *r, struct journal_line *l, const char *type,
			    const struct timespec *ts)
{
	journal_line_begin(l, type, ts);
	journal_line_str(l, "run_id", r->run_id);
	journal_line_str(l, "task", r->args.task);
}

static void kseq_logged(struct run *r, uint64_t kseq);

/* Write l; kseq: the sequence number of the kernel record it is the line of, or NULL. */
static void write_record(struct run *r, struct journal_line *l, const uint64_t *kseq)
{
	int err = journal_write(r->journal, l);

	if (err == -E2BIG) {
		/* The record does not fit a line: say so in one that does, never drop it silently. */
		struct journal_line a;
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		line_run_fields(r, &a, "anomaly", &now);
		journal_line_str(&a, "what", "record too long for a log line");
		journal_line_u64(&a, "size", l->len);
		if (kseq)
			journal_line_u64(&a, "kseq", *kseq); /* the record's line is this one */
		err = journal_write(r->journal, &a);
	}
	if (err)
		journal_error(r, err);
	else if (kseq)
		kseq_logged(r, *kseq);
}

static void write_line(struct run *r, struct journal_line *l)
{
	write_record(r, l, NULL);
}

/* A kernel record's line: its "kseq" last, and the number noted as having a line. */
static void write_kernel_line(struct run *r, struct journal_line *l, uint64_t kseq)
{
	journal_line_u64(l, "kseq", kseq);
	write_record(r, l, &kseq);
}

/* The writer's account of kernel sequence numbers, made at its first use. */
static struct run_kseqs *run_kseqs(struct run *r)
{
	struct journal_line l;
	struct timespec now;
	int err = -ENOMEM;

	if (r->kseqs || r->kseqs_failed)
		return r->kseqs;
	r->kseqs = calloc(1, sizeof(*r->kseqs));
	if (r->kseqs)
		err = seqset_init(&r->kseqs->set, seqset_list_add, &r->kseqs->missing);
	if (!err)
		return r->kseqs;
	free(r->kseqs);
	r->kseqs = NULL;
	r->kseqs_failed = true;
	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "anomaly", &now);
	journal_line_str(&l, "what", "cannot track kernel sequence numbers: no loss_ranges record");
	journal_line_str(&l, "why", strerror(-err));
	write_line(r, &l);
	return NULL;
}

/*
 * kseq has its line. The numbers that never get one are listed at the end (loss_ranges); one
 * that comes twice, or too late to be told from a lost one, is an anomaly (and makes the log
 * fail verification at its line).
 */
static void kseq_logged(struct run *r, uint64_t kseq)
{
	struct run_kseqs *k = run_kseqs(r);
	struct journal_line l;
	struct timespec now;
	int err;

	if (!k)
		return;
	err = seqset_add(&k->set, kseq);
	if (!err)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "anomaly", &now);
	journal_line_str(&l, "what", err == -EEXIST ? "kernel sequence number seen twice" :
				     "kernel sequence number repeated or too far out of order");
	journal_line_u64(&l, "record_kseq", kseq);
	write_line(r, &l);
}

static int on_decision(const struct sl_decision_event *ev, void *ctx)
{
	struct run *r = ctx;
	struct journal_line l;
	struct decision_view v;
	struct timespec ts = boot_to_realtime(r, ev->hdr.ts_ns);
	char host_buf[256];
	const char *host;

	if (decision_view_init(&v, ev, r->policy)) {
		line_run_fields(r, &l, "anomaly", &ts);
		journal_line_str(&l, "what", "decision record with out-of-range fields");
		write_kernel_line(r, &l, ev->hdr.seq);
		return 0;
	}

	host = resolver_host(r->resolver, ev->host_id, host_buf, sizeof(host_buf));
	if (v.deny) {
		struct notice n = { .len = 0 };
		const char *what = v.enforced ? "egress denied" : "egress would be denied (report mode)";

		__atomic_fetch_add(&r->denials, 1, __ATOMIC_RELAXED);
		if (host)
			notice_add(&n, "%s: %s [%s] (rule: %s) run_id=%s task=%s\n", what, host,
				   v.dst_port, v.rule, r->run_id, r->task_text);
		else
			notice_add(&n, "%s: %s (rule: %s) run_id=%s task=%s\n", what, v.dst_port,
				   v.rule, r->run_id, r->task_text);
		if (r->policy->request_access && ev->reason != SL_REASON_BLACKHOLE && !v.surface)
			notice_request_access(&n, r->policy->request_access, host ? host : v.dst);
		notice_denial(r, &n);
	}
	if (v.deny ? !r->policy->log_deny : !r->policy->log_allow) {
		r->unlogged++; /* the policy's log: list leaves it out; run_end counts it */
		return 0;
	}

	line_run_fields(r, &l, "decision", &ts);
	journal_line_str(&l, "hook", v.hook);
	journal_line_str(&l, "decision", v.decision);
	journal_line_bool(&l, "enforced", v.enforced);
	journal_line_str(&l, "rule", v.rule);
	journal_line_str(&l, "reason", v.reason);
	journal_line_str(&l, "family", v.family);
	journal_line_str(&l, "proto", v.proto);
	journal_line_str(&l, "host", host);
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

static void sni_remember(struct run *r, uint64_t cookie, const char *sni)
{
	if (!r->sni_cache)
		r->sni_cache = calloc(SNI_SLOTS, sizeof(*r->sni_cache));
	if (!r->sni_cache)
		return;
	r->sni_cache[cookie % SNI_SLOTS].cookie = cookie;
	util_copy(r->sni_cache[cookie % SNI_SLOTS].sni, sizeof(r->sni_cache->sni), sni);
}

/* The flow's server name, or NULL; the slot is freed. Copies into buf. */
static const char *sni_take(struct run *r, uint64_t cookie, char *buf, size_t len)
{
	struct sni_slot *s = r->sni_cache ? &r->sni_cache[cookie % SNI_SLOTS] : NULL;

	if (!s || !cookie || s->cookie != cookie || util_copy(buf, len, s->sni))
		return NULL;
	s->cookie = 0;
	return buf;
}

/*
 * A TLS flow's server name was judged. A denial is enforced by dropping; destroying the socket
 * makes the client fail now rather than after its retransmissions give up.
 */
static int on_tls(const struct sl_tls_event *ev, void *ctx)
{
	struct run *r = ctx;
	struct journal_line l;
	struct timespec ts = boot_to_realtime(r, ev->hdr.ts_ns);
	char sni[SL_SNI_MAX + 1], host_buf[256], dst[INET6_ADDRSTRLEN], comm[64];
	const char *host = resolver_host(r->resolver, ev->host_id, host_buf, sizeof(host_buf));
	bool deny = ev->verdict == SL_VERDICT_DENY;
	const char *killed = NULL;
	size_t i;

	for (i = 0; i < ev->sni_len; i++)
		sni[i] = ev->sni[i] >= 0x20 && ev->sni[i] < 0x7f && ev->sni[i] != '"' ?
				 ev->sni[i] : '?';
	sni[i] = '\0';
	inet_ntop(ev->family == AF_INET6 ? AF_INET6 : AF_INET, ev->addr, dst, sizeof(dst));
	decision_safe_comm(comm, sizeof(comm), ev->comm);

	if (deny && ev->enforced) {
		int err = loader_kill_socket(r->loader, ev->sock_cookie, r->netns_fd, ev->tgid);

		killed = !err ? "destroyed" : err == -EOPNOTSUPP ? "dropped (kernel cannot destroy "
								     "sockets)" : "dropped";
	}

	line_run_fields(r, &l, "tls", &ts);
	journal_line_str(&l, "decision", deny ? "deny" : "allow");
	journal_line_bool(&l, "enforced", ev->enforced);
	journal_line_str(&l, "reason", decision_reason_name(ev->reason));
	journal_line_str(&l, "host", host);
	journal_line_str(&l, "sni", ev->sni_len ? sni : NULL);
	if (!deny && ev->sni_len)
		sni_remember(r, ev->sock_cookie, sni);
	journal_line_str(&l, "dst", dst);
	journal_line_u64(&l, "port", ev->port);
	journal_line_u64(&l, "pid", ev->tgid);
	journal_line_str(&l, "comm", comm);
	journal_line_u64(&l, "sock_cookie", ev->sock_cookie);
	if (killed)
		journal_line_str(&l, "flow", killed);
	write_kernel_line(r, &l, ev->hdr.seq);

	if (deny) {
		struct notice n = { .len = 0 };

		__atomic_fetch_add(&r->denials, 1, __ATOMIC_RELAXED);
		notice_add(&n, "%s: TLS to %s%s%s:%u named \"%s\", which did not resolve there "
			       "(resolved for %s; %s) run_id=%s task=%s\n",
			   ev->enforced ? "egress denied" : "egress would be denied (report mode)",
			   ev->family == AF_INET6 ? "[" : "", dst, ev->family == AF_INET6 ? "]" : "",
			   ev->port, ev->sni_len ? sni : "(no server name)", host ? host : "?",
			   decision_reason_name(ev->reason), r->run_id, r->task_text);
		notice_denial(r, &n);
	}
	return 0;
}

/* "allow where …" alerts on a finished flow. */
static void flow_alerts(struct run *r, const struct sl_flow *f, const char *host, const char *dst,
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

/* The cap a cut flow went past: its own (kept in the flow), or its host's total for the run. */
static uint64_t cut_limit(const struct run *r, const struct sl_flow *f)
{
	const struct policy_rule *rule = f->rule_id ? &r->policy->rules[f->rule_id - 1] : NULL;

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
static void flow_cut(struct run *r, const struct sl_flow_event *ev, const char *host,
		     const char *dst, const char *proto, const char *rule)
{
	const struct sl_flow *f = &ev->flow;
	struct timespec ts = boot_to_realtime(r, ev->hdr.ts_ns);
	struct notice n = { .len = 0 };
	struct journal_line l;
	const char *how = "dropped";
	uint64_t cap = cut_limit(r, f);
	bool out = f->cut == SL_CUT_REQUEST || f->cut == SL_CUT_TOTAL_REQUEST;
	bool total = f->cut == SL_CUT_TOTAL_REQUEST || f->cut == SL_CUT_TOTAL_RESPONSE;

	if (f->protocol == IPPROTO_TCP) {
		int err = loader_kill_socket(r->loader, ev->sock_cookie, r->netns_fd, f->tgid);

		how = !err ? "destroyed" : "dropped";
	}
	line_run_fields(r, &l, "flow_cut", &ts);
	journal_line_str(&l, "host", host);
	journal_line_str(&l, "dst", dst);
	journal_line_u64(&l, "port", f->port);
	journal_line_str(&l, "proto", proto);
	journal_line_str(&l, "rule", rule);
	journal_line_str(&l, "cap", cut_name(f->cut));
	journal_line_u64(&l, "limit", cap);
	journal_line_u64(&l, "req_bytes", f->req_bytes);
	journal_line_u64(&l, "resp_bytes", f->resp_bytes);
	journal_line_str(&l, "flow", how);
	journal_line_u64(&l, "pid", f->tgid);
	journal_line_u64(&l, "sock_cookie", ev->sock_cookie);
	write_kernel_line(r, &l, ev->hdr.seq);

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
	struct run *r = ctx;
	const struct sl_flow *f = &ev->flow;
	struct timespec ts = boot_to_realtime(r, ev->hdr.ts_ns);
	char host_buf[256], dst[INET6_ADDRSTRLEN], comm[64], rule[128], proto[16];
	char sni_buf[SL_SNI_MAX + 1];
	const char *host = resolver_host(r->resolver, f->host_id, host_buf, sizeof(host_buf));
	const char *sni = ev->end_ns ? sni_take(r, ev->sock_cookie, sni_buf, sizeof(sni_buf)) :
				       NULL;
	struct journal_line l;

	if ((f->family != AF_INET && f->family != AF_INET6) || f->rule_id > r->policy->n_rules ||
	    f->cut > SL_CUT_TOTAL_RESPONSE || (!ev->end_ns && !f->cut)) {
		line_run_fields(r, &l, "anomaly", &ts);
		journal_line_str(&l, "what", "flow record with out-of-range fields");
		write_kernel_line(r, &l, ev->hdr.seq);
		return 0;
	}
	inet_ntop(f->family, f->addr, dst, sizeof(dst));
	decision_safe_comm(comm, sizeof(comm), f->comm);
	if (f->rule_id)
		policy_rule_name(r->policy, f->rule_id - 1, rule, sizeof(rule));
	else
		util_copy(rule, sizeof(rule), "default");
	if (f->protocol == IPPROTO_TCP || f->protocol == IPPROTO_UDP)
		util_copy(proto, sizeof(proto), f->protocol == IPPROTO_TCP ? "tcp" : "udp");
	else
		util_fmt(proto, sizeof(proto), "ip-%u", f->protocol);

	if (!ev->end_ns) {
		flow_cut(r, ev, host, dst, proto, rule);
		return 0;
	}
	line_run_fields(r, &l, "flow", &ts);
	journal_line_str(&l, "host", host);
	journal_line_str(&l, "sni", sni);
	journal_line_str(&l, "dst", dst);
	journal_line_u64(&l, "port", f->port);
	journal_line_str(&l, "proto", proto);
	journal_line_str(&l, "decision", "allow");
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
		hosttotals_add(r->totals, f);
	flow_alerts(r, f, host, dst, proto,
		    ev->end_ns > f->start_ns ? (ev->end_ns - f->start_ns) / 1000000 : 0);
	return 0;
}

/* True unless the same name was announced within the last two seconds. */
static bool notice_name_is_new(struct run *r, const char *name)
{
	int64_t now = ts_ns(CLOCK_MONOTONIC);
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
static void on_dns(const struct resolver_event *ev, void *ctx)
{
	struct run *r = ctx;
	struct journal_line l;
	struct timespec now;
	char name[DNS_NAME_MAX];
	bool deny = !strcmp(ev->decision, "deny"), refused = !strcmp(ev->decision, "refused");
	struct notice n = { .len = 0 };
	const char *what;

	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "dns", &now);
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
	write_line(r, &l);

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

static void on_malformed(const char *why, size_t size, void *ctx)
{
	struct run *r = ctx;
	struct journal_line l;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "anomaly", &now);
	journal_line_str(&l, "what", "malformed ring-buffer record");
	journal_line_str(&l, "why", why);
	journal_line_u64(&l, "size", size);
	write_line(r, &l);
}

/*
 * Turn any increase of the kernel's failed-reservation counters into loss records. Each says
 * which numbers the records it counts can have: all are below its "kseq_below".
 */
static void report_loss(struct run *r)
{
	uint64_t lost[SL_HOOK_MAX], below, all = 0;
	struct journal_line l;
	struct timespec now;
	bool changed = false;
	int hook, err;

	err = loader_lost_counts(r->loader, lost);
	if (err) {
		clock_gettime(CLOCK_REALTIME, &now);
		line_run_fields(r, &l, "anomaly", &now);
		journal_line_str(&l, "what", "cannot read the loss counters");
		journal_line_str(&l, "why", strerror(-err));
		write_line(r, &l);
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
		line_run_fields(r, &l, "loss", &now);
		journal_line_str(&l, "hook", decision_hook_name(hook));
		journal_line_u64(&l, "count", lost[hook] - r->lost_reported[hook]);
		journal_line_u64(&l, "total", lost[hook]);
		/* each counted record has its own number below it; 0 means the read failed */
		if (below >= all)
			journal_line_u64(&l, "kseq_below", below);
		write_line(r, &l);
		fprintf(stderr, "sluice: %llu %s records lost (ring buffer full); counted in the log\n",
			(unsigned long long)(lost[hook] - r->lost_reported[hook]),
			decision_hook_name(hook));
		r->lost_reported[hook] = lost[hook];
	}
}

static void drain(struct run *r)
{
	int err = events_consume(r->events);

	if (err < 0 && err != -EINTR)
		fprintf(stderr, "sluice: reading ring buffer: %s\n", strerror(-err));
	report_loss(r);
	err = journal_flush(r->journal);
	if (err)
		journal_error(r, err);
}

static void write_run_start(struct run *r)
{
	const char *lsm_why;
	struct journal_line l;
	int err;

	clock_gettime(CLOCK_REALTIME, &r->started_at);
	r->started = true;
	line_run_fields(r, &l, "run_start", &r->started_at);
	journal_line_str(&l, "mode", r->policy->mode == SL_MODE_REPORT ? "report" : "enforce");
	journal_line_str(&l, "default",
			 r->policy->default_verdict == POLICY_DEFAULT_ALLOW ? "allow" : "deny");
	journal_line_str(&l, "policy", r->args.policy_path);
	journal_line_str(&l, "cgroup", r->cg.path);
	journal_line_u64(&l, "cgroup_id", r->cg.id);
	journal_line_strv(&l, "argv", r->args.cmd, (size_t)r->args.n_cmd);
	journal_line_u64(&l, "uid", r->uid);
	journal_line_u64(&l, "gid", r->gid);
	if (r->args.strict_evidence)
		journal_line_bool(&l, "strict_evidence", true);
	journal_line_str(&l, "host_side", r->host_side[0] ? r->host_side : NULL);
	if (loader_lsm_active(r->loader, &lsm_why))
		journal_line_bool(&l, "lsm", true);
	else
		journal_line_str(&l, "lsm", lsm_why); /* why the hardening layer is absent */
	if (r->no_backstop)
		journal_line_bool(&l, "backstop", false);
	err = journal_write(r->journal, &l);
	if (err == -E2BIG) {
		/* A huge command line must not cost the record: keep the program name only. */
		line_run_fields(r, &l, "run_start", &r->started_at);
		journal_line_str(&l, "mode", r->policy->mode == SL_MODE_REPORT ? "report" : "enforce");
		journal_line_str(&l, "policy", r->args.policy_path);
		journal_line_str(&l, "cgroup", r->cg.path);
		journal_line_strv(&l, "argv", r->args.cmd, 1);
		journal_line_bool(&l, "argv_truncated", true);
		err = journal_write(r->journal, &l);
	}
	if (err)
		journal_error(r, err);
}

/*
 * The kernel sequence numbers below next_seq that have no line, as ranges a verifier compares
 * with the log: lost in the kernel (the loss records count them), left out by the policy's
 * log: setting, or malformed (run_end's unlogged counts those two), so "missing" is lost +
 * unlogged. Written once, after the last drain, when no record is in flight; only when some
 * number is missing. The first ranges, as many as fit the line (at most SEQSET_RANGES_LISTED);
 * "truncated" says more exist.
 */
static void write_loss_ranges(struct run *r, uint64_t next_seq)
{
	/* what a line holds besides the body built here: {"seq":N,"prev":"<64 hex>", */
	static const size_t head = 128, tail = sizeof(",\"ranges\":[],\"truncated\":false}\n");
	struct run_kseqs *k = run_kseqs(r);
	uint64_t vals[2 * SEQSET_RANGES_LISTED];
	struct journal_line l;
	struct timespec now;
	size_t n, room;
	char num[48];

	if (!k)
		return;
	seqset_finish(&k->set, next_seq);
	if (!k->set.missing)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "loss_ranges", &now);
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
	write_line(r, &l);
}

static void write_host_total(const struct hosttotal *h, void *ctx)
{
	struct run *r = ctx;
	char host_buf[256], dst[INET6_ADDRSTRLEN], rule[128];
	const char *host = h->host_id ? resolver_host(r->resolver, h->host_id, host_buf,
						      sizeof(host_buf)) : NULL;
	struct journal_line l;
	struct timespec now;

	if (h->rule_id)
		policy_rule_name(r->policy, h->rule_id - 1, rule, sizeof(rule));
	else
		util_copy(rule, sizeof(rule), "default");
	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "host_total", &now);
	journal_line_str(&l, "host", host);
	if (h->host_id)
		journal_line_str(&l, "dst", NULL);
	else
		journal_line_str(&l, "dst", inet_ntop(h->family, h->addr, dst, sizeof(dst)));
	journal_line_str(&l, "rule", rule);
	journal_line_u64(&l, "flows", h->flows);
	journal_line_u64(&l, "req_bytes", h->req_bytes);
	journal_line_u64(&l, "resp_bytes", h->resp_bytes);
	write_line(r, &l);
}

/*
 * One line per (rule, host) the run's finished flows went to, with what they carried in all:
 * the per-(run, host) counts, whether or not the rule caps them.
 */
static void write_host_totals(struct run *r)
{
	struct journal_line l;
	struct timespec now;

	if (!r->totals)
		return;
	hosttotals_each(r->totals, write_host_total, r);
	if (!hosttotals_untracked(r->totals))
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "anomaly", &now);
	journal_line_str(&l, "what", "flows to more hosts than host_total lines are kept for");
	journal_line_u64(&l, "flows", hosttotals_untracked(r->totals));
	write_line(r, &l);
}

static void write_run_end(struct run *r, int status, const char *why)
{
	const struct events_stats *st = events_stats(r->events);
	struct journal_line l;
	struct timespec now;
	uint64_t lost = 0, next_seq;
	int hook;

	for (hook = 0; hook < SL_HOOK_MAX; hook++)
		lost += r->lost_reported[hook];
	/*
	 * Every sequence number the kernel handed out is a record received, malformed or counted
	 * lost; anything else means records vanished without being counted.
	 */
	next_seq = loader_next_seq(r->loader);
	if (next_seq != st->received + st->malformed + lost) {
		clock_gettime(CLOCK_REALTIME, &now);
		line_run_fields(r, &l, "anomaly", &now);
		journal_line_str(&l, "what", "records unaccounted for");
		journal_line_u64(&l, "kseq_next", next_seq);
		journal_line_u64(&l, "accounted", st->received + st->malformed + lost);
		write_line(r, &l);
	}
	write_loss_ranges(r, next_seq);
	clock_gettime(CLOCK_REALTIME, &now);
	line_run_fields(r, &l, "run_end", &now);
	journal_line_str(&l, "why", why);
	journal_line_i64(&l, "exit_status", status);
	journal_line_u64(&l, "records", st->received);
	journal_line_u64(&l, "lost", lost);
	journal_line_u64(&l, "malformed", st->malformed);
	/* kernel records with no line of their own: left out by the policy's log:, or malformed */
	journal_line_u64(&l, "unlogged", r->unlogged + st->malformed);
	journal_line_u64(&l, "denials", r->denials);
	journal_line_u64(&l, "kseq_next", next_seq);
	journal_line_i64(&l, "duration_ms",
			 (now.tv_sec - r->started_at.tv_sec) * 1000 +
				 (now.tv_nsec - r->started_at.tv_nsec) / 1000000);
	write_line(r, &l);
}

static int status_of(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return RUN_EXIT_SLUICE_ERROR;
}

/*
 * Wait for the command while streaming records. Returns the exit status to report; *why says
 * whether the command ended or sluice was told to stop.
 */
static int supervise(struct run *r, pid_t child, int sig_fd, const char **why)
{
	struct pollfd pfd[2] = {
		{ .fd = events_fd(r->events), .events = POLLIN },
		{ .fd = sig_fd, .events = POLLIN },
	};

	for (;;) {
		struct signalfd_siginfo si;
		int wstatus, err;
		pid_t got;

		if (poll(pfd, 2, POLL_INTERVAL_MS) < 0 && errno != EINTR) {
			fprintf(stderr, "sluice: poll: %s\n", strerror(errno));
			*why = "sluice error";
			return RUN_EXIT_SLUICE_ERROR;
		}
		drain(r);
		/* time and heartbeat checkpoints: an idle run still proves it was alive */
		err = journal_tick(r->journal);
		if (err)
			journal_error(r, err);
		while (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			/* SIGINT, SIGTERM, SIGHUP: the run ends now, whole cgroup included. */
			fprintf(stderr, "sluice: %s received, ending run %s\n",
				strsignal((int)si.ssi_signo), r->run_id);
			*why = "signal";
			return 128 + (int)si.ssi_signo;
		}
		got = waitpid(child, &wstatus, WNOHANG);
		if (got == child) {
			*why = "command exited";
			return status_of(wstatus);
		}
		if (got < 0 && errno != EINTR) {
			*why = "command lost";
			return RUN_EXIT_SLUICE_ERROR;
		}
	}
}

/* Undo in reverse order whatever was set up; every step tolerates "not done". */
/*
 * End the run's processes. Returns 0 once the cgroup is empty; otherwise the programs must stay
 * attached: a process that survived the kill would leave with an unjudged network.
 */
static int end_processes(struct run *r)
{
	int err;

	if (r->cg.fd < 0)
		return 0;
	err = cgroup_kill_and_wait(&r->cg, KILL_TIMEOUT_MS);
	if (err) {
		r->still_running = true;
		fprintf(stderr, "sluice: run %s: processes still alive in %s after %d ms (%s); its "
				"programs stay attached and pinned under %s/sluice/%s\n",
			r->run_id, r->cg.path, KILL_TIMEOUT_MS, strerror(-err), LOADER_BPFFS, r->run_id);
	}
	return err;
}

/* Undo in reverse order whatever was set up; every step tolerates "not done". */
static int teardown(struct run *r)
{
	int err, ret = end_processes(r);

	/* The resolver writes into the loader's maps: stop it first. */
	resolver_stop(r->resolver);
	r->resolver = NULL;
	if (!r->still_running)
		loader_detach(r->loader);
	loader_destroy(r->loader);
	r->loader = NULL;
	if (r->netns_fd >= 0)
		close(r->netns_fd);
	r->netns_fd = -1;
	if (r->cg.path[0] && !r->still_running) {
		err = cgroup_remove(&r->cg);
		if (err) {
			fprintf(stderr, "sluice: remove cgroup %s: %s\n", r->cg.path, strerror(-err));
			ret = err;
		}
	}
	events_free(r->events);
	r->events = NULL;
	policy_compiled_free(r->compiled);
	policy_free(r->policy);
	free(r->sni_cache);
	r->sni_cache = NULL;
	if (r->kseqs)
		seqset_free(&r->kseqs->set);
	free(r->kseqs);
	r->kseqs = NULL;
	hosttotals_free(r->totals);
	r->totals = NULL;
	return ret;
}

static bool policy_has_hosts(const struct policy *p)
{
	size_t i;

	for (i = 0; i < p->n_rules; i++)
		if (p->rules[i].n_hosts)
			return true;
	return false;
}

/* Bind the run's resolver (in the run's netns, if it has one); it serves once the maps exist. */
static int start_resolver(struct run *r, char *err, size_t err_len)
{
	struct resolver_opts o = {
		.policy = r->policy,
		.netns_fd = -1,
		.ttl_mode = r->args.dns_ttl,
		.on_event = on_dns,
		.ctx = r,
	};
	int ret;

	if (r->args.netns) {
		r->netns_fd = open(r->args.netns, O_RDONLY | O_CLOEXEC);
		if (r->netns_fd < 0) {
			ret = -errno;
			util_fmt(err, err_len, "--netns %s: %s", r->args.netns, strerror(-ret));
			return ret;
		}
		o.netns_fd = r->netns_fd;
	}
	if (r->args.upstream) {
		ret = resolver_parse_addr(r->args.upstream, &o.upstream, &o.upstream_len);
		if (ret) {
			util_fmt(err, err_len, "--upstream: expected ADDR, ADDR:PORT or [ADDR6]:PORT, "
					       "got \"%s\"", r->args.upstream);
			return ret;
		}
	} else {
		ret = resolver_upstream_from_file("/etc/resolv.conf", &o.upstream, &o.upstream_len);
		/* Without host rules the resolver only ever answers NXDOMAIN: no upstream needed. */
		if (ret && policy_has_hosts(r->policy)) {
			util_fmt(err, err_len, "no upstream resolver for the policy's host rules: "
					       "/etc/resolv.conf names none (%s); give --upstream",
				 strerror(-ret));
			return ret;
		}
	}
	r->resolver = resolver_new(&o);
	if (!r->resolver) {
		ret = -errno;
		util_fmt(err, err_len, "bind the run's resolver on loopback%s: %s%s",
			 r->args.netns ? " in the run's netns" : "", strerror(-ret),
			 ret == -ENETDOWN ? " (is lo up in that namespace?)" : "");
		return ret;
	}
	return 0;
}

static int setup(struct run *r, char *err, size_t err_len)
{
	static const struct events_handlers handlers = {
		.decision = on_decision,
		.tls = on_tls,
		.flow = on_flow,
		.malformed = on_malformed,
	};
	struct loader_opts lo = {
		.ringbuf_bytes = (uint32_t)(r->args.ringbuf_kib * 1024),
		.wakeup_bytes = (uint32_t)(r->args.ringbuf_kib * 1024 / 4),
		.verbose = r->args.verbose,
		/* selftests only, and said on stderr and in run_start: see selftests/test_backstop.sh */
		.no_backstop = getenv("SLUICE_SELFTEST_NO_BACKSTOP") != NULL,
		.tc_clsact = getenv("SLUICE_SELFTEST_TC_CLSACT") != NULL,
		.strict_evidence = r->args.strict_evidence,
	};
	struct journal_opts jo = {
		.run_id = r->run_id,
		.host_vkey = r->host_vkey,
		.cert = r->cert,
		.checkpoint_lines = r->args.checkpoint_lines,
		.checkpoint_secs = (unsigned int)r->args.checkpoint_secs,
		.rotate_bytes = (uint64_t)r->args.rotate_kib * 1024,
		/* selftests only, and said on stderr: see selftests/test_journal.sh */
		.keep_plain = getenv("SLUICE_SELFTEST_KEEP_PLAIN") != NULL,
		.export_fd = r->args.checkpoint_fd,
	};
	int ret;

	ret = policy_load_file(r->args.policy_path, &r->policy, err, err_len);
	if (ret)
		return ret;
	if (r->args.mode)
		r->policy->mode = strcmp(r->args.mode, "report") ? SL_MODE_ENFORCE : SL_MODE_REPORT;
	ret = policy_compile(r->policy, &r->compiled, err, err_len);
	if (ret)
		return ret;

	if (geteuid() != 0) {
		util_fmt(err, err_len, "sluice run needs root: it creates a cgroup, loads BPF "
				       "programs and pins them in bpffs (CAP_SYS_ADMIN, CAP_BPF, "
				       "CAP_NET_ADMIN)");
		return -EPERM;
	}
	/* Before anything is created: a run that cannot sign its log does not start. */
	ret = make_run_key(r, err, err_len);
	if (ret)
		return ret;
	jo.signer = r->run_key;

	ret = start_resolver(r, err, err_len);
	if (ret)
		return ret;
	lo.dns_port = resolver_port(r->resolver);
	lo.learned_max = RUN_LEARNED_MAX;

	r->loader = loader_load(r->policy, r->compiled, &lo);
	if (!r->loader) {
		ret = -errno;
		util_fmt(err, err_len, "load BPF programs: %s", loader_explain(-ret));
		return ret;
	}

	ret = cgroup_create_run(r->args.cgroup_parent, r->run_id, &r->cg);
	if (ret) {
		util_fmt(err, err_len, "create cgroup %s/%s for the run: %s%s",
			 r->args.cgroup_parent, r->run_id, strerror(-ret),
			 ret == -EEXIST ? " (a run with this id exists)" :
			 ret == -ENOENT ? " (no cgroup v2 hierarchy is mounted)" : "");
		return ret;
	}

	ret = loader_attach(r->loader, r->cg.fd, r->cg.id, r->cg.level, r->run_id);
	if (ret) {
		util_fmt(err, err_len, "attach to cgroup %s: %s", r->cg.path, strerror(-ret));
		return ret;
	}
	r->no_backstop = lo.no_backstop;
	if (r->no_backstop)
		fprintf(stderr, "sluice: SLUICE_SELFTEST_NO_BACKSTOP is set: packet checks are off\n");
	if (jo.keep_plain)
		fprintf(stderr, "sluice: SLUICE_SELFTEST_KEEP_PLAIN is set: rotated log segments are "
				"not compressed\n");
	if (r->netns_fd >= 0 && !r->no_backstop) {
		ret = loader_attach_tc(r->loader, r->netns_fd, r->host_side, sizeof(r->host_side));
		if (ret < 0) {
			util_fmt(err, err_len, "attach tc to the host side of %s: %s%s",
				 r->args.netns, strerror(-ret),
				 ret == -ENOENT ? " (a veth peer in a namespace sluice cannot name)" : "");
			return ret;
		}
	}

	r->events = events_new(loader_events_fd(r->loader), &handlers, r);
	if (!r->events) {
		ret = -errno;
		util_fmt(err, err_len, "open ring buffer: %s", strerror(-ret));
		return ret;
	}
	r->boot_to_real_ns = ts_ns(CLOCK_REALTIME) - ts_ns(CLOCK_BOOTTIME);
	r->totals = hosttotals_new();
	if (!r->totals) {
		util_fmt(err, err_len, "out of memory");
		return -ENOMEM;
	}

	/* Last, so that a failed setup leaves no empty log behind. */
	jo.path = r->log_path;
	r->journal = journal_open(&jo);
	if (!r->journal) {
		ret = -errno;
		util_fmt(err, err_len, "create log %s (and %s.checkpoints): %s%s", r->log_path,
			 r->log_path, strerror(-ret),
			 ret == -EEXIST ? " (logs are never overwritten)" : "");
		return ret;
	}
	if (r->args.alerts) {
		r->alerts_fd = open(r->args.alerts,
				    O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0640);
		if (r->alerts_fd < 0) {
			ret = -errno;
			util_fmt(err, err_len, "open alerts file %s: %s", r->args.alerts,
				 strerror(-ret));
			return ret;
		}
	}
	/* The log exists: from here on the resolver may report queries into it. */
	ret = resolver_serve(r->resolver, r->loader);
	if (ret)
		util_fmt(err, err_len, "start the run's resolver: %s", strerror(-ret));
	return ret;
}

int run_main(int argc, char **argv)
{
	struct run r = { .cg = { .fd = -1 }, .netns_fd = -1, .alerts_fd = -1,
			 .notice_lock = PTHREAD_MUTEX_INITIALIZER };
	sigset_t block, old;
	const char *why = "sluice error";
	char err[1024] = "";
	int sig_fd = -1, status = RUN_EXIT_SLUICE_ERROR, ret;
	struct spawn_opts so = { .cgroup_fd = -1, .netns_fd = -1 };
	pid_t child;

	if (parse_args(argc, argv, &r.args))
		return RUN_EXIT_SLUICE_ERROR;
	safe_text(r.task_text, sizeof(r.task_text), r.args.task ? r.args.task : "-");
	/* Resolved now: name lookups are not safe between clone3 and exec. */
	if (r.args.user) {
		ret = spawn_parse_user(r.args.user, &so.uid, &so.gid);
		if (ret) {
			fprintf(stderr, "sluice run: --user: no user (or group) \"%s\": %s\n",
				r.args.user, strerror(-ret));
			return RUN_EXIT_SLUICE_ERROR;
		}
		so.drop = true;
	} else {
		so.uid = geteuid();
		so.gid = getegid();
	}
	r.uid = so.uid;
	r.gid = so.gid;
	if (r.args.run_id) {
		if (check_run_id(r.args.run_id)) {
			fprintf(stderr, "sluice run: --run-id: expected 1-%d characters of "
					"[A-Za-z0-9._-] not starting with '.' or '-', got \"%s\"\n",
				RUN_ID_MAX, r.args.run_id);
			return RUN_EXIT_SLUICE_ERROR;
		}
		util_copy(r.run_id, sizeof(r.run_id), r.args.run_id);
	} else if (make_run_id(r.run_id, sizeof(r.run_id))) {
		fprintf(stderr, "sluice run: cannot make a run id: %s\n", strerror(errno));
		return RUN_EXIT_SLUICE_ERROR;
	}
	if (util_fmt(r.log_path, sizeof(r.log_path), "%s",
		     r.args.log_path ? r.args.log_path : "") ||
	    (!r.args.log_path &&
	     util_fmt(r.log_path, sizeof(r.log_path), "sluice-%s.jsonl", r.run_id))) {
		fprintf(stderr, "sluice run: --log: path too long\n");
		return RUN_EXIT_SLUICE_ERROR;
	}

	/* Signals are read from a signalfd in the loop; the command gets the original mask. */
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);

	ret = setup(&r, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "sluice run: %s\n", err);
		goto out;
	}
	sig_fd = signalfd(-1, &block, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sig_fd < 0) {
		fprintf(stderr, "sluice run: signalfd: %s\n", strerror(errno));
		goto out;
	}

	write_run_start(&r);
	so.cgroup_fd = r.cg.fd;
	so.netns_fd = r.netns_fd;
	so.child_mask = &old;
	ret = spawn_in_cgroup(&so, r.args.cmd, &child);
	if (ret) {
		fprintf(stderr, "sluice run: cannot execute %s: %s\n", r.args.cmd[0],
			strerror(-ret));
		status = ret == -ENOENT ? RUN_EXIT_NOT_FOUND : RUN_EXIT_CANNOT_EXEC;
		why = "command not started";
	} else {
		status = supervise(&r, child, sig_fd, &why);
	}

	/* The run is the cgroup: daemons the command left behind end with it. */
	end_processes(&r);
	if (!ret)
		waitpid(child, NULL, WNOHANG);
	/*
	 * Nothing may be recorded after run_end: the resolver finishes its last queries, and the
	 * programs are detached (when no process is left for them to judge) before the last drain.
	 */
	resolver_halt(r.resolver);
	if (!r.still_running)
		loader_detach(r.loader);
	drain(&r);
	write_host_totals(&r);
	write_run_end(&r, r.still_running ? RUN_EXIT_SLUICE_ERROR : status, why);
	/* The seal: the last line, signing everything before it. */
	ret = journal_checkpoint(r.journal, "final");
	if (ret)
		journal_error(&r, ret);
	if (r.still_running)
		status = RUN_EXIT_SLUICE_ERROR;

out:
	if (teardown(&r))
		fprintf(stderr, "sluice: run %s was not cleaned up completely\n", r.run_id);
	/* A run that never started leaves no empty log to block a retry with the same id. */
	if (!r.started) {
		journal_discard(r.journal);
	} else {
		ret = journal_close(r.journal);
		if (ret && !r.journal_failed)
			fprintf(stderr, "sluice: closing log %s: %s\n", r.log_path, strerror(-ret));
	}
	if (sig_fd >= 0)
		close(sig_fd);
	if (r.alerts_fd >= 0)
		close(r.alerts_fd);
	note_signer_free(r.run_key);
	if (r.args.checkpoint_fd >= 0)
		close(r.args.checkpoint_fd);
	return status;
}
