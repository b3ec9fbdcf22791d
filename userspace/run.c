// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The life of a run, in order: parse the policy, load and attach the programs to a new cgroup,
 * start the command inside it, stream decisions into the log and denials onto stderr, and when
 * the command ends (or sluice is told to stop) kill the whole cgroup, drain the last records,
 * account for every lost one, detach, and remove what was created. The second half (from
 * streaming on) is also how sluice resume ends a run whose first writer died.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "confine.h"
#include "control.h"
#include "events.h"
#include "handoff.h"
#include "journal.h"
#include "loader.h"
#include "note.h"
#include "records.h"
#include "resolver.h"
#include "pool.h"
#include "run.h"
#include "runopts.h"
#include "sandbox_seccomp.h"
#include "spawn.h"
#include "tlog.h"
#include "util.h"

#define POLL_INTERVAL_MS 100	/* upper bound on how late an allow record reaches the log */
#define KILL_TIMEOUT_MS 5000
/*
 * A checkpoint every 1000 lines or 10 s: a crash leaves at most that much unsigned, for one
 * Ed25519 signature and two small writes per thousand lines.
 */
#define RUN_CHECKPOINT_LINES 1000
#define RUN_CHECKPOINT_SECS 10

/* A cgroup's name below the v2 hierarchy (--cgroup-parent): a safe path component. */
int run_check_component(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > RUN_ID_MAX || name[0] == '.' || name[0] == '-')
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '-' && name[i] != '_' &&
		    name[i] != '.')
			return -EINVAL;
	return 0;
}

/*
 * Run ids name a cgroup and a bpffs directory: a safe path component, and no '.', which bpffs
 * refuses in every name (EPERM).
 */
int run_check_id(const char *id)
{
	return run_check_component(id) || strchr(id, '.') ? -EINVAL : 0;
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
       OPT_LOG_ROTATE_KIB, OPT_STRICT_EVIDENCE, OPT_ALLOW_ROOT, OPT_STANDALONE,
       OPT_SOCKET };

/*
 * records.kill_socket: a flow the packet layer denied fails at once, in the run's namespace where
 * --netns named one; else in the process's own (a container below an attached parent cgroup has
 * its own, which a resumed writer's netns_fd, its own namespace then, is not).
 */
static int kill_socket(void *ctx, uint64_t cookie, uint32_t tgid)
{
	struct run *r = ctx;

	return loader_kill_socket(r->loader, cookie,
				  loader_run_cfg(r->loader)->netns_given ? r->netns_fd : -1, tgid);
}

void run_init(struct run *r, const char *cmd_name)
{
	/*
	 * The run key lives in this process's memory: no core dump may carry it out (with it, a
	 * fork of the log could be signed). A workload's exec resets the flag for itself.
	 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	memset(r, 0, sizeof(*r));
	r->args.cmd_name = cmd_name;
	r->args.cgroup_parent = "sluice";
	r->args.checkpoint_fd = -1;
	r->args.ringbuf_kib = RUN_RINGBUF_KIB;
	r->args.checkpoint_lines = RUN_CHECKPOINT_LINES;
	r->args.checkpoint_secs = RUN_CHECKPOINT_SECS;
	r->cg.fd = -1;
	r->netns_fd = -1;
	r->rec.alerts_fd = -1;
	r->rec.kill_socket = kill_socket;
	r->rec.kill_ctx = r;
}

int run_parse_ulong(const struct run_args *a, const char *opt, const char *s, unsigned long min,
		    unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || *out < min || *out > max) {
		fprintf(stderr, "%s: %s: expected a number from %lu to %lu, got \"%s\"\n",
			a->cmd_name, opt, min, max, s);
		return -EINVAL;
	}
	return 0;
}

/*
 * The checkpoint descriptor must be open for writing now, and stays sluice's own: close-on-exec,
 * so the workload cannot write to (or truncate) the copy meant to catch it.
 */
int run_take_checkpoint_fd(const struct run_args *a, const char *s, int *out)
{
	unsigned long fd;
	int fl;

	if (run_parse_ulong(a, "--checkpoint-fd", s, 0, INT_MAX, &fd))
		return -EINVAL;
	if (fd <= STDERR_FILENO) {
		fprintf(stderr, "%s: --checkpoint-fd: %lu is the command's stdio too; give a "
				"descriptor of its own (e.g. 3>FILE --checkpoint-fd 3)\n",
			a->cmd_name, fd);
		return -EINVAL;
	}
	fl = fcntl((int)fd, F_GETFL);
	if (fl < 0 || fcntl((int)fd, F_GETFD) < 0) {
		fprintf(stderr, "%s: --checkpoint-fd: %lu is not an open descriptor\n", a->cmd_name,
			fd);
		return -EBADF;
	}
	if ((fl & O_ACCMODE) == O_RDONLY) {
		fprintf(stderr, "%s: --checkpoint-fd: %lu is open read-only\n", a->cmd_name, fd);
		return -EBADF;
	}
	if (fcntl((int)fd, F_SETFD, FD_CLOEXEC)) {
		fprintf(stderr, "%s: --checkpoint-fd: %lu: %s\n", a->cmd_name, fd, strerror(errno));
		return -errno;
	}
	*out = (int)fd;
	return 0;
}

const char *run_key_path(const struct run_args *a)
{
	const char *path = a->key_path;

	if (!path) {
		path = getenv("SLUICE_KEY");
		if (!path || !*path)
			path = RUN_HOST_KEY;
	}
	return path;
}

/*
 * The run's own key, certified by the host key: the long-lived host secret is in memory only for
 * the one signature over "sluice run key\n" ORIGIN "\n" RUN_VKEY "\n", and the run key can only
 * ever sign this run's log (its name is the log's origin). A resumed writer makes a fresh one
 * the same way: the dead writer's key died with it.
 */
int run_make_key(struct run *r, char *msg, size_t msg_len)
{
	const char *path = run_key_path(&r->args);
	char skey[NOTE_SKEY_MAX + 2], origin[NOTE_NAME_MAX + 1], vkey[NOTE_VKEY_MAX + 1];
	char text[NOTE_NAME_MAX + NOTE_VKEY_MAX + 32];
	struct note_signer *host = NULL;
	size_t len;
	int err;

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

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice run --policy FILE [--run-id ID] [--task TASK] [--mode enforce|report]\n"
		"                  [--log FILE] [--netns PATH] [--upstream ADDR[:PORT]] [--dns-ttl]\n"
		"                  [--user USER[:GROUP] | --allow-root] [--alerts FILE]\n"
		"                  [--key FILE] [--checkpoint-lines N] [--checkpoint-secs T]\n"
		"                  [--checkpoint-fd FD] [--log-rotate-kib N] [--strict-evidence]\n"
		"                  [--cgroup-parent NAME] [--ringbuf-kib N] [-v]\n"
		"                  [--standalone | --socket PATH] -- CMD [ARG…]\n"
		"\n"
		"Runs CMD in a new cgroup whose connect() and sendmsg() calls are judged in the kernel\n"
		"against the policy. Denials fail at once and are printed on stderr; every decision is\n"
		"written to the log (default ./sluice-RUN_ID.jsonl). Exits with CMD's status.\n"
		"CMD runs with no_new_privs under a seccomp filter that refuses (and logs) socket\n"
		"families no hook judges (vsock, packet, …) and io_uring (unless the policy lists\n"
		"sockets: [io_uring]).\n"
		"\n"
		"  --netns PATH     start CMD in this network namespace (/run/netns/NAME); the run's\n"
		"                   resolver listens there, on loopback\n"
		"  --upstream ADDR  where the run's resolver asks for listed names (default: the first\n"
		"                   nameserver in /etc/resolv.conf), reached from sluice's namespace\n"
		"  --dns-ttl        learned addresses expire with their DNS TTL (default: with the run)\n"
		"  --user U[:G]     run CMD as this user (and group), with no_new_privs: the\n"
		"                   guarantees assume an unprivileged workload (recommended)\n"
		"  --allow-root     run CMD as full root, able to undo the run (logged, warned)\n"
		"                   Default: root confined: few capabilities, no_new_privs, its own\n"
		"                   PID, mount and cgroup namespaces, no bpffs, read-only /sys\n"
		"  --alerts FILE    also append the policy's alert_on alerts to FILE (JSON lines)\n"
		"\n"
		"When a sluice daemon answers at its socket, the run is handed to it: the daemon\n"
		"attaches programs it verified in advance (milliseconds instead of seconds), writes\n"
		"the log, and ends the run (killing what is left) when CMD ends or sluice run dies;\n"
		"sluice run still starts and confines CMD itself. --checkpoint-fd, -v and the\n"
		"selftests' SLUICE_SELFTEST_* variables run standalone.\n"
		"  --socket PATH    the daemon's socket (default: $SLUICE_SOCKET, else\n"
		"                   /run/sluice/sluice.sock)\n"
		"  --standalone     never hand the run to a daemon: load the programs here\n"
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
		"                   record (the loss is counted, the connect fails with EPERM), and\n"
		"                   every new connection once the log cannot be written\n"
		"Exit status: CMD's; 123 if the log could not be written at some point; 125 if\n"
		"sluice failed; 126/127 if CMD could not be run.\n",
		RUN_CHECKPOINT_LINES, RUN_CHECKPOINT_SECS);
}

static int parse_args(int argc, char **argv, struct run_args *a)
{
	static const int shared[] = { RUNOPT_POLICY, RUNOPT_RUN_ID, RUNOPT_TASK, RUNOPT_MODE,
				      RUNOPT_LOG, RUNOPT_NETNS, RUNOPT_UPSTREAM, RUNOPT_ALERTS,
				      RUNOPT_KEY, RUNOPT_CHECKPOINT_FD, RUNOPT_LOG_ROTATE_KIB,
				      RUNOPT_VERBOSE, 0 };
	static const struct option own[] = {
		{ "cgroup-parent", required_argument, NULL, 'c' },
		{ "ringbuf-kib", required_argument, NULL, 'b' },
		{ "dns-ttl", no_argument, NULL, 'T' },
		{ "user", required_argument, NULL, 'U' },
		{ "checkpoint-lines", required_argument, NULL, OPT_CHECKPOINT_LINES },
		{ "checkpoint-secs", required_argument, NULL, OPT_CHECKPOINT_SECS },
		{ "strict-evidence", no_argument, NULL, OPT_STRICT_EVIDENCE },
		{ "allow-root", no_argument, NULL, OPT_ALLOW_ROOT },
		{ "standalone", no_argument, NULL, OPT_STANDALONE },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	static struct runopts_table t;
	char *end;
	int c, err;

	a->ringbuf_kib = RUN_RINGBUF_KIB;
	a->checkpoint_lines = RUN_CHECKPOINT_LINES;
	a->checkpoint_secs = RUN_CHECKPOINT_SECS;
	optind = 1;
	if (runopts_build(&t, shared, own, "+c:b:U:Th"))
		return -E2BIG;
	/* "+": stop at the first non-option, so CMD's own options are never ours. */
	while ((c = getopt_long(argc, argv, t.shortopts, t.opts, NULL)) != -1) {
		switch (c) {
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
		case 'T':
			a->dns_ttl = true;
			break;
		case 'U':
			a->user = optarg;
			break;
		case OPT_CHECKPOINT_LINES:
			if (run_parse_ulong(a, "--checkpoint-lines", optarg, 1, 1UL << 32,
					&a->checkpoint_lines))
				return -EINVAL;
			break;
		case OPT_CHECKPOINT_SECS:
			if (run_parse_ulong(a, "--checkpoint-secs", optarg, 1, 86400, &a->checkpoint_secs))
				return -EINVAL;
			break;
		case OPT_STRICT_EVIDENCE:
			a->strict_evidence = true;
			break;
		case OPT_ALLOW_ROOT:
			a->allow_root = true;
			break;
		case OPT_STANDALONE:
			a->standalone = true;
			break;
		case OPT_SOCKET:
			a->socket = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			err = runopts_take(a, c, optarg);
			if (err == -ENOENT)
				usage(stderr);
			if (err)
				return -EINVAL;
		}
	}
	if (!a->policy_path) {
		fprintf(stderr, "sluice run: --policy FILE is required\n");
		return -EINVAL;
	}
	if (run_check_component(a->cgroup_parent)) {
		fprintf(stderr, "sluice run: --cgroup-parent: expected one path component of "
				"[A-Za-z0-9._-], got \"%s\"\n", a->cgroup_parent);
		return -EINVAL;
	}
	if (a->allow_root && a->user) {
		fprintf(stderr, "sluice run: --allow-root and --user: choose one (--user runs CMD "
				"unprivileged, --allow-root as full root)\n");
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


/* The fields a resumed writer needs to take the run over, in both forms of run_start. */
static void run_start_resume_fields(struct run *r, struct journal_line *l)
{
	char digest[2 * sizeof(r->policy->sha256) + 1];

	util_hex(r->policy->sha256, sizeof(r->policy->sha256), digest, sizeof(digest));
	journal_line_str(l, "policy_sha256", digest);
	journal_line_str(l, "cgroup", r->cg.path);
	journal_line_u64(l, "cgroup_id", r->cg.id);
}

void run_write_start(struct run *r)
{
	const char *lsm_why;
	struct journal_line l;
	int err;

	clock_gettime(CLOCK_REALTIME, &r->rec.started_at);
	r->started = true;
	records_line(&r->rec, &l, "run_start", &r->rec.started_at);
	journal_line_str(&l, "mode", r->policy->mode == SL_MODE_REPORT ? "report" : "enforce");
	journal_line_str(&l, "default",
			 r->policy->default_verdict == POLICY_DEFAULT_ALLOW ? "allow" : "deny");
	journal_line_str(&l, "policy", r->args.policy_path);
	run_start_resume_fields(r, &l);
	if (r->attached) {
		/* a cgroup someone else started: what asked for the attach, not a command */
		journal_line_bool(&l, "attached", true);
		journal_line_str(&l, "source", r->args.source);
	} else {
		journal_line_strv(&l, "argv", r->args.cmd, (size_t)r->args.n_cmd);
		journal_line_u64(&l, "uid", r->uid);
		journal_line_u64(&l, "gid", r->gid);
	}
	/* root without --user: confined (false), or full root that can undo the run (true) */
	if (!r->args.user && !r->attached)
		journal_line_bool(&l, "allow_root", r->args.allow_root);
	journal_line_str(&l, "netns", r->args.netns);
	journal_line_str(&l, "upstream", r->upstream[0] ? r->upstream : NULL);
	journal_line_bool(&l, "dns_ttl", r->args.dns_ttl);
	if (r->args.strict_evidence)
		journal_line_bool(&l, "strict_evidence", true);
	journal_line_str(&l, "host_side", r->host_side[0] ? r->host_side : NULL);
	if (loader_lsm_active(r->loader, &lsm_why))
		journal_line_bool(&l, "lsm", true);
	else
		journal_line_str(&l, "lsm", lsm_why); /* why the hardening layer is absent */
	if (r->no_backstop)
		journal_line_bool(&l, "backstop", false);
	/* the socket-family filter: the command runs only if it was installed */
	journal_line_bool(&l, "seccomp", r->seccomp != NULL);
	err = journal_write(r->journal, &l);
	if (err == -E2BIG) {
		/* A huge command line must not cost the record: keep the program name only. */
		records_line(&r->rec, &l, "run_start", &r->rec.started_at);
		journal_line_str(&l, "mode", r->policy->mode == SL_MODE_REPORT ? "report" : "enforce");
		journal_line_str(&l, "policy", r->args.policy_path);
		run_start_resume_fields(r, &l);
		journal_line_strv(&l, "argv", r->args.cmd, 1);
		journal_line_bool(&l, "argv_truncated", true);
		if (!r->args.user)
			journal_line_bool(&l, "allow_root", r->args.allow_root);
		journal_line_str(&l, "netns", r->args.netns);
		journal_line_str(&l, "upstream", r->upstream[0] ? r->upstream : NULL);
		journal_line_bool(&l, "dns_ttl", r->args.dns_ttl);
		journal_line_bool(&l, "seccomp", r->seccomp != NULL);
		err = journal_write(r->journal, &l);
	}
	/*
	 * On file before the command starts, not at the supervisor's first drain (up to a poll
	 * interval later): a writer killed once the command runs leaves a log that sluice resume
	 * can take over, and resume refuses a log without run_start.
	 */
	if (!err)
		err = journal_flush(r->journal);
	if (err)
		records_journal_error(&r->rec, err);
}

int run_status_of(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return RUN_EXIT_SLUICE_ERROR;
}

int run_block_signals(sigset_t *old, int *sig_fd)
{
	sigset_t block;

	/* Signals are read from a signalfd in the loop; the command gets the original mask. */
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, old);
	*sig_fd = signalfd(-1, &block, SFD_NONBLOCK | SFD_CLOEXEC);
	return *sig_fd < 0 ? -errno : 0;
}

int run_poll_fds(const struct run *r, struct pollfd *pfd, int max)
{
	int n = 0;

	if (n < max && r->events)
		pfd[n++] = (struct pollfd){ .fd = events_fd(r->events), .events = POLLIN };
	if (n < max && sandbox_seccomp_fd(r->seccomp) >= 0)
		pfd[n++] = (struct pollfd){ .fd = sandbox_seccomp_fd(r->seccomp), .events = POLLIN };
	return n;
}

bool run_step(struct run *r, const char **why)
{
	int err;

	/* refused socket families wait for their answer: first */
	if (sandbox_seccomp_fd(r->seccomp) >= 0) {
		struct pollfd p = { .fd = sandbox_seccomp_fd(r->seccomp), .events = POLLIN };

		if (poll(&p, 1, 0) > 0) {
			err = sandbox_seccomp_answer(r->seccomp, records_on_refusal, &r->rec);
			if (err < 0)
				fprintf(stderr, "sluice: answering the seccomp filter: %s; its refused "
						"calls now fail with ENOSYS\n", strerror(-err));
			if (err < 0 || sandbox_seccomp_fd(r->seccomp) < 0) {
				sandbox_seccomp_free(r->seccomp);
				r->seccomp = NULL;
			}
		}
	}
	records_drain(&r->rec);
	records_kill_queued(&r->rec);
	/* time and heartbeat checkpoints: an idle run still proves it was alive */
	err = journal_tick(r->journal);
	if (err)
		records_journal_error(&r->rec, err);
	if (r->attached) {
		/* a container's or unit's cgroup: the run ends when its owner removes it */
		if (cgroup_is_removed(&r->cg) == 1) {
			*why = "cgroup removed";
			return true;
		}
	} else if (r->rec.resumed && cgroup_is_populated(&r->cg) == 0) {
		/* a resumed run: the command is not our child; the cgroup says when it ends */
		*why = "cgroup emptied";
		return true;
	}
	return false;
}

int run_supervise(struct run *r, pid_t child, int sig_fd, bool *has_status, const char **why)
{
	struct pollfd pfd[3];

	*has_status = false;
	for (;;) {
		struct signalfd_siginfo si;
		int wstatus, n;
		pid_t got;

		pfd[0] = (struct pollfd){ .fd = sig_fd, .events = POLLIN };
		n = 1 + run_poll_fds(r, pfd + 1, 2);
		if (poll(pfd, (nfds_t)n, POLL_INTERVAL_MS) < 0 && errno != EINTR) {
			fprintf(stderr, "sluice: poll: %s\n", strerror(errno));
			*why = "sluice error";
			return RUN_EXIT_SLUICE_ERROR;
		}
		if (run_step(r, why))
			return 0;
		while (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			/* SIGINT, SIGTERM, SIGHUP: the run ends now, whole cgroup included. */
			fprintf(stderr, "sluice: %s received, ending run %s\n",
				strsignal((int)si.ssi_signo), r->run_id);
			*why = "signal";
			return 128 + (int)si.ssi_signo;
		}
		if (child < 0)
			continue;
		got = waitpid(child, &wstatus, WNOHANG);
		if (got == child) {
			*why = "command exited";
			*has_status = true;
			return run_status_of(wstatus);
		}
		if (got < 0 && errno != EINTR) {
			*why = "command lost";
			return RUN_EXIT_SLUICE_ERROR;
		}
	}
}

/*
 * End the run's processes. Returns 0 once the cgroup is empty; otherwise the programs must stay
 * attached: a process that survived the kill would leave with an unjudged network.
 */
static int end_processes(struct run *r)
{
	int err;

	/* an attached run's processes are its owner's: the run ends, they do not */
	if (r->cg.fd < 0 || r->attached)
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

void run_finish(struct run *r, bool has_status, int status, const char *why)
{
	int err;

	/* every record to the last: no loop shares this turn */
	r->rec.drain_max = 0;
	/* The run is the cgroup: daemons the command left behind end with it. */
	end_processes(r);
	/*
	 * Nothing may be recorded after run_end: the resolver finishes its last queries, and the
	 * programs are detached (when no process is left for them to judge) before the last drain.
	 */
	resolver_halt(r->resolver);
	if (!r->still_running)
		loader_detach(r->loader);
	records_drain(&r->rec);
	records_kill_queued(&r->rec);
	/* a resumed writer never knows the command's status, survivors or not */
	if (r->still_running && !r->rec.resumed) {
		has_status = true;
		status = RUN_EXIT_SLUICE_ERROR;
	}
	records_end(&r->rec, has_status, status,
		    r->still_running && r->rec.resumed ? "processes survived the kill" : why);
	/* The seal: the last line, signing everything before it. */
	err = journal_checkpoint(r->journal, "final");
	if (err)
		records_journal_error(&r->rec, err);
}

/* The host side's attach waited for, if under way; 0 or what it failed with (err says). */
static int host_side_wait(struct run *r, char *err, size_t err_len)
{
	int ret;

	if (!r->host_side_attaching)
		return 0;
	r->host_side_attaching = false;
	ret = util_job_wait(&r->host_side_job);
	if (ret < 0)
		util_fmt(err, err_len, "attach tc to the host side of %s: %s%s", r->args.netns,
			 strerror(-ret), ret == -ENOENT ? " (a veth peer in a namespace sluice "
							 "cannot name)" : "");
	return ret < 0 ? ret : 0;
}

/* Undo in reverse order whatever was set up; every step tolerates "not done". */
static int teardown(struct run *r)
{
	char tc_err[512];
	int err, ret;

	/* a host side still attaching (a setup that failed before run_setup_serve) writes r */
	host_side_wait(r, tc_err, sizeof(tc_err));
	ret = r->hands_off ? 0 : end_processes(r);

	if (r->hands_off)
		r->still_running = true; /* not ours to end: attached, pinned, its cgroup kept */
	/* The resolver writes into the loader's maps: stop it first. */
	resolver_stop(r->resolver);
	r->resolver = NULL;
	if (!r->still_running)
		loader_detach(r->loader);
	/* the log's failure callback (records_log_failed, also from its sync thread) uses it */
	__atomic_store_n(&r->rec.loader, NULL, __ATOMIC_RELEASE);
	journal_fail_barrier(r->journal);
	loader_destroy(r->loader);
	r->loader = NULL;
	if (r->netns_fd >= 0)
		close(r->netns_fd);
	r->netns_fd = -1;
	if (r->cg.path[0] && !r->still_running && !r->attached) {
		err = cgroup_remove(&r->cg);
		if (err) {
			fprintf(stderr, "sluice: remove cgroup %s: %s\n", r->cg.path, strerror(-err));
			ret = err;
		}
	} else if (r->cg.fd >= 0) {
		close(r->cg.fd);
		r->cg.fd = -1;
	}
	events_free(r->events);
	r->events = NULL;
	sandbox_seccomp_free(r->seccomp);
	r->seccomp = NULL;
	records_free(&r->rec);
	hostnames_free(r->hosts);
	r->hosts = NULL;
	policy_compiled_free(r->compiled);
	policy_free(r->policy);
	return ret;
}

int run_close(struct run *r)
{
	int ret = teardown(r), err;

	if (ret)
		fprintf(stderr, "sluice: run %s was not cleaned up completely\n", r->run_id);
	/* A run that never started leaves no empty log to block a retry with the same id. */
	if (!r->started) {
		journal_discard(r->journal);
	} else {
		err = journal_close(r->journal);
		if (err && !r->rec.journal_failed)
			fprintf(stderr, "sluice: closing log %s: %s\n", r->log_path, strerror(-err));
	}
	r->journal = NULL;
	if (r->rec.alerts_fd >= 0)
		close(r->rec.alerts_fd);
	r->rec.alerts_fd = -1;
	note_signer_free(r->run_key);
	r->run_key = NULL;
	if (r->args.checkpoint_fd >= 0)
		close(r->args.checkpoint_fd);
	r->args.checkpoint_fd = -1;
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

int run_new_hostnames(struct run *r)
{
	if (!r->hosts) {
		r->hosts = hostnames_new();
		if (!r->hosts)
			return -errno;
	}
	r->rec.hosts = r->hosts;
	return 0;
}

int run_start_resolver(struct run *r, uint16_t port, char *err, size_t err_len)
{
	struct resolver_opts o = {
		.policy = r->policy,
		.netns_fd = -1,
		.port = port,
		.ttl_mode = r->args.dns_ttl,
		.on_event = records_on_dns,
		.ctx = &r->rec,
	};
	int ret;

	if (r->netns_fd < 0 && r->args.netns) {
		r->netns_fd = runopts_open_netns(r->args.netns, err, err_len);
		if (r->netns_fd < 0) {
			ret = r->netns_fd;
			r->netns_fd = -1;
			return ret;
		}
	}
	o.netns_fd = r->netns_fd;
	if (r->upstream_len) {
		o.upstream = r->upstream_ss;
		o.upstream_len = r->upstream_len;
	} else if (r->args.upstream) {
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
	r->upstream_ss = o.upstream;
	r->upstream_len = o.upstream_len;
	if (o.upstream_len)
		resolver_format_addr(&o.upstream, r->upstream, sizeof(r->upstream));
	ret = run_new_hostnames(r);
	if (ret) {
		util_fmt(err, err_len, "the run's host names: %s", strerror(-ret));
		return ret;
	}
	o.names = r->hosts;
	r->resolver = resolver_new(&o);
	if (!r->resolver) {
		ret = -errno;
		util_fmt(err, err_len, "bind the run's resolver on loopback%s%s: %s%s",
			 r->args.netns ? " in the run's netns" : "",
			 port ? " on the port its programs send DNS to" : "", strerror(-ret),
			 ret == -ENETDOWN ? " (is lo up in that namespace?)" : "");
		return ret;
	}
	return 0;
}

int run_open_alerts(struct run *r, char *err, size_t err_len)
{
	int ret;

	r->rec.alerts_path = r->args.alerts;
	if (!r->args.alerts)
		return 0;
	r->rec.alerts_fd = open(r->args.alerts,
				O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (r->rec.alerts_fd < 0) {
		ret = -errno;
		util_fmt(err, err_len, "open alerts file %s: %s", r->args.alerts, strerror(-ret));
		return ret;
	}
	return 0;
}

int run_cfg_of(const struct run *r, struct sl_run_cfg *cfg)
{
	struct stat st;

	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->policy_sha256, r->policy->sha256, sizeof(cfg->policy_sha256));
	if (r->upstream_ss.ss_family == AF_INET && r->upstream_len) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&r->upstream_ss;

		cfg->upstream_family = AF_INET;
		memcpy(cfg->upstream_addr, &sin->sin_addr, 4);
		cfg->upstream_port = ntohs(sin->sin_port);
	} else if (r->upstream_ss.ss_family == AF_INET6 && r->upstream_len) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&r->upstream_ss;

		cfg->upstream_family = AF_INET6;
		memcpy(cfg->upstream_addr, &sin6->sin6_addr, 16);
		cfg->upstream_port = ntohs(sin6->sin6_port);
	}
	cfg->dns_ttl = r->args.dns_ttl;
	/*
	 * The RST of a socket sluice destroys is let out only for a workload that cannot choose
	 * its sequence numbers (TCP_REPAIR needs CAP_NET_ADMIN over its namespace): sluice run's
	 * confined one (not --allow-root). An attached run's workload is someone else's (a
	 * rootless container's root owns its namespace): only on the operator's word.
	 */
	cfg->no_net_admin = r->attached ? r->args.reset_peers : !r->args.allow_root;
	/* the namespace the resolver listens in: the run's, or sluice's own without --netns */
	cfg->netns_given = r->netns_fd >= 0;
	if (r->netns_fd >= 0 ? fstat(r->netns_fd, &st) : stat("/proc/thread-self/ns/net", &st))
		return -errno;
	cfg->netns_dev = st.st_dev;
	cfg->netns_ino = st.st_ino;
	return 0;
}

int run_setup_begin(struct run *r, bool *need_load, char *err, size_t err_len)
{
	struct loader_opts *lo = &r->setup_lo;
	int ret;

	*need_load = false;
	*lo = (struct loader_opts){
		.ringbuf_bytes = (uint32_t)(r->args.ringbuf_kib * 1024),
		.wakeup_bytes = (uint32_t)(r->args.ringbuf_kib * 1024 / 4),
		.verbose = r->args.verbose,
		/* selftests only, and said on stderr and in run_start: see selftests/test_backstop.sh */
		.no_backstop = getenv("SLUICE_SELFTEST_NO_BACKSTOP") != NULL,
		.tc_clsact = getenv("SLUICE_SELFTEST_TC_CLSACT") != NULL,
		.strict_evidence = r->args.strict_evidence,
	};

	/* first what is cheap to check: loading the programs takes a second */
	if (r->attached) {
		ret = cgroup_open_existing(r->args.cgroup_path, &r->cg);
		if (ret) {
			util_fmt(err, err_len, "open cgroup %s: %s%s", r->args.cgroup_path,
				 strerror(-ret), ret == -EINVAL ? " (not a cgroup below the v2 "
				 "hierarchy's root)" : "");
			return ret;
		}
	}
	ret = policy_load_file(r->args.policy_path, &r->policy, err, err_len);
	if (ret)
		return ret;
	if (r->args.mode)
		r->policy->mode = strcmp(r->args.mode, "report") ? SL_MODE_ENFORCE : SL_MODE_REPORT;
	ret = policy_compile(r->policy, &r->compiled, err, err_len);
	if (ret)
		return ret;
	/*
	 * An attached cgroup's processes were started by someone else: no filter can be put on
	 * them now (run_start says "seccomp":false; the README says what that leaves open).
	 */
	if (r->attached) {
		/* nothing to install */
	} else if (getenv("SLUICE_SELFTEST_NO_SECCOMP")) {
		/* selftests only, and said on stderr and in run_start: see test_seccomp.sh */
		fprintf(stderr, "sluice: SLUICE_SELFTEST_NO_SECCOMP is set: socket families are not "
				"filtered\n");
	} else {
		ret = sandbox_seccomp_new(r->policy->sockets, &r->seccomp);
		if (ret) {
			util_fmt(err, err_len, "build the workload's seccomp filter: %s%s",
				 strerror(-ret), ret == -EOPNOTSUPP ?
				 " (it knows no system call numbers for this architecture)" : "");
			return ret;
		}
	}

	if (geteuid() != 0) {
		util_fmt(err, err_len, "%s needs root: it creates a cgroup, loads BPF "
				       "programs and pins them in bpffs (CAP_SYS_ADMIN, CAP_BPF, "
				       "CAP_NET_ADMIN)", r->args.cmd_name);
		return -EPERM;
	}
	/* Before anything is created: a run that cannot sign its log does not start. */
	ret = run_make_key(r, err, err_len);
	if (ret)
		return ret;
	r->rec.run_id = r->run_id;
	r->rec.task = r->args.task;
	r->rec.log_path = r->log_path;
	r->rec.policy = r->policy;
	r->rec.strict = r->args.strict_evidence;
	ret = records_init(&r->rec);
	if (ret) {
		util_fmt(err, err_len, "%s", strerror(-ret));
		return ret;
	}

	ret = run_start_resolver(r, 0, err, err_len);
	if (ret)
		return ret;
	lo->dns_port = resolver_port(r->resolver);
	/* the host side is attached only with --netns (and the packet checks on) */
	lo->ns_share = r->netns_fd >= 0 && !lo->no_backstop;
	lo->learned_max = RUN_LEARNED_MAX;
	ret = run_cfg_of(r, &lo->run_cfg);
	if (ret) {
		util_fmt(err, err_len, "--netns %s: %s", r->args.netns, strerror(-ret));
		return ret;
	}

	/* a daemon's spare (already verified) where one fits, else a set loaded for the run */
	r->loader = pool_take(r->pool, r->policy, r->compiled, lo, &r->spare_why);
	r->from_spare = r->loader != NULL;
	*need_load = !r->loader;
	return 0;
}

int run_setup_load(struct run *r, char *err, size_t err_len)
{
	int ret;

	r->loader = loader_load(r->policy, r->compiled, &r->setup_lo);
	if (!r->loader) {
		ret = -errno;
		util_fmt(err, err_len, "load BPF programs: %s", loader_explain(-ret));
		return ret;
	}
	return 0;
}

/* The host side's attach, on a thread of its own (run_setup_attach says why). */
static int attach_host_side(void *arg)
{
	struct run *r = arg;

	return loader_attach_tc(r->loader, r->netns_fd, r->host_side, sizeof(r->host_side));
}

/* The ring buffer, then the log and its alerts file: what the records need. */
static int open_records(struct run *r, struct journal_opts *jo, char *err, size_t err_len)
{
	int ret;

	r->events = events_new(loader_events_fd(r->loader), &records_handlers, &r->rec);
	if (!r->events) {
		ret = -errno;
		util_fmt(err, err_len, "open ring buffer: %s", strerror(-ret));
		return ret;
	}
	r->rec.events = r->events;
	/* Every layer is loaded: libbpf parsed the kernel's BTF for each object and freed it,
	   about 11 MiB of heap the writer would otherwise hold, unused, for the whole run. */
	malloc_trim(0);

	jo->path = r->log_path;
	r->journal = journal_open(jo);
	if (!r->journal) {
		ret = -errno;
		util_fmt(err, err_len, "create log %s (and %s.checkpoints): %s%s", r->log_path,
			 r->log_path, strerror(-ret),
			 ret == -EEXIST ? " (logs are never overwritten)" : "");
		return ret;
	}
	r->rec.journal = r->journal;
	return run_open_alerts(r, err, err_len);
}

int run_setup_attach(struct run *r, char *err, size_t err_len)
{
	const struct loader_opts *lo = &r->setup_lo;
	const char *lsm_why;
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
		.on_fail = records_log_failed,
		.fail_ctx = &r->rec,
		.on_line = r->on_line,
		.line_ctx = r->line_ctx,
		.signer = r->run_key,
	};
	int ret;

	if (!r->loader) {
		util_fmt(err, err_len, "the run's programs were never loaded");
		return -EINVAL;
	}
	r->rec.loader = r->loader;
	r->rec.era = loader_era(r->loader);

	ret = r->attached ? 0 : cgroup_create_run(r->args.cgroup_parent, r->run_id, &r->cg);
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
	if ((r->policy->require & POLICY_REQUIRE_LSM) && !loader_lsm_active(r->loader, &lsm_why)) {
		util_fmt(err, err_len, "the policy requires the BPF-LSM layer (require: [lsm]), "
				       "which is absent: %s", lsm_why[0] ? lsm_why : "not loaded");
		return -EOPNOTSUPP;
	}
	r->no_backstop = lo->no_backstop;
	if (r->no_backstop)
		fprintf(stderr, "sluice: SLUICE_SELFTEST_NO_BACKSTOP is set: packet checks are off\n");
	if (jo.keep_plain)
		fprintf(stderr, "sluice: SLUICE_SELFTEST_KEEP_PLAIN is set: rotated log segments are "
				"not compressed\n");
	/*
	 * The host side, after the cgroup's links (a take-over reads that order from the pins:
	 * loader_reopen), on a thread of its own while this one opens the ring buffer and the log,
	 * and the caller does its own part before run_setup_serve: the kernel makes a new tcx link
	 * wait out an RCU grace period (the device's program array is swapped: ~10 ms however idle
	 * the device), the log waits for its directory's fsync, and neither needs the other.
	 * Waited for (run_setup_serve) before anything uses the host side (run_start names it),
	 * before the resolver serves, and before the reply that says the run is attached. A host
	 * side that fails after the log was created leaves no log: the run never started
	 * (run_close discards it); killed meanwhile, a run may leave one with its log_start alone,
	 * as one killed before its run_start always could.
	 */
	if (r->netns_fd >= 0 && !r->no_backstop) {
		util_job_start(&r->host_side_job, attach_host_side, r);
		r->host_side_attaching = true;
	}
	return open_records(r, &jo, err, err_len);
}

int run_setup_serve(struct run *r, int ret, char *err, size_t err_len)
{
	/* the host side's failure says why, before the log's (it came first) */
	int tc_ret = host_side_wait(r, err, err_len);

	if (tc_ret)
		return tc_ret;
	if (ret)
		return ret;
	/* The log exists: from here on the resolver may report queries into it. */
	ret = resolver_serve(r->resolver, r->loader);
	if (ret)
		util_fmt(err, err_len, "start the run's resolver: %s", strerror(-ret));
	return ret;
}

int run_setup_end(struct run *r, char *err, size_t err_len)
{
	return run_setup_serve(r, run_setup_attach(r, err, err_len), err, err_len);
}

int run_setup(struct run *r, char *err, size_t err_len)
{
	bool need_load;
	int ret = run_setup_begin(r, &need_load, err, err_len);

	if (!ret && need_load)
		ret = run_setup_load(r, err, err_len);
	return ret ? ret : run_setup_end(r, err, err_len);
}

/*
 * The daemon's socket, out of the workload's reach: it is uid 0, and the socket (0600, root's)
 * would otherwise let it talk to the daemon, or replace it with a listener of its own. Its
 * directory is masked; a shared scratch directory (sticky, like /tmp) or / cannot be, so the
 * socket alone is covered there (a mount point: no unlink, no rename over it).
 */
static int mask_socket(struct confine *c, const char *sock)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	if (util_copy(dir, sizeof(dir), sock) || dir[0] != '/')
		return confine_hide(c, sock);
	slash = strrchr(dir, '/');
	*slash = '\0';
	if (!dir[0] || !strcmp(dir, CONTROL_SOCKET_DIR))
		return dir[0] ? 0 : confine_hide(c, sock);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || (st.st_mode & S_ISVTX))
		return confine_hide(c, sock);
	return confine_mask(c, dir);
}

/*
 * What the default root workload must not reach of its own run: the host key reads empty, the
 * log, its checkpoints and the alerts file are read-only mount points it cannot replace.
 */
int run_confine(const struct run *r, struct confine *c)
{
	char sidecar[PATH_MAX];
	int err;

	err = confine_prepare(c);
	if (!err)
		err = confine_hide(c, run_key_path(&r->args));
	if (!err)
		err = confine_protect(c, r->log_path);
	if (!err)
		err = util_fmt(sidecar, sizeof(sidecar), "%s.checkpoints", r->log_path);
	if (!err)
		err = confine_protect(c, sidecar);
	if (!err && r->args.alerts)
		err = confine_protect(c, r->args.alerts);
	if (!err)
		err = confine_mask(c, CONTROL_SOCKET_DIR);
	if (!err)
		err = mask_socket(c, control_socket_path(r->args.socket));
	return err;
}

int run_main(int argc, char **argv)
{
	struct run r;
	sigset_t old;
	const char *why = "sluice error";
	char err[1024] = "";
	int sig_fd = -1, status = RUN_EXIT_SLUICE_ERROR, ret;
	struct spawn_opts so = { .cgroup_fd = -1, .netns_fd = -1 };
	struct confine *conf = NULL;
	bool has_status = true;
	pid_t child;

	run_init(&r, "sluice run");
	if (parse_args(argc, argv, &r.args))
		return RUN_EXIT_SLUICE_ERROR;
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
		/* checked by runopts_take */
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

	if (run_block_signals(&old, &sig_fd)) {
		fprintf(stderr, "sluice run: signalfd: %s\n", strerror(errno));
		goto out;
	}
	/* a daemon's verified spares: the run in milliseconds, confined the same (handoff.c) */
	if (!r.args.standalone) {
		ret = handoff_run(&r, &so, &old, sig_fd);
		if (ret != HANDOFF_STANDALONE) {
			status = ret;
			goto out;
		}
	}
	ret = run_setup(&r, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "sluice run: %s\n", err);
		goto out;
	}

	if (r.args.allow_root) {
		fprintf(stderr, "sluice: WARNING: --allow-root: %s runs as full root and can undo "
				"this run (leave its cgroup, detach its programs, kill sluice): nothing "
				"it sends is sure to be judged\n", r.args.cmd[0]);
	} else if (!r.args.user) {
		/* read now: the mount table as it is with the run's bpffs in it */
		conf = malloc(sizeof(*conf));
		ret = conf ? run_confine(&r, conf) : -ENOMEM;
		if (ret) {
			fprintf(stderr, "sluice run: cannot confine %s (its mount table): %s\n",
				r.args.cmd[0], strerror(-ret));
			goto out;
		}
		so.confine = conf;
	}
	run_write_start(&r);
	so.cgroup_fd = r.cg.fd;
	so.netns_fd = r.netns_fd;
	so.child_mask = &old;
	so.seccomp = r.seccomp;
	ret = spawn_in_cgroup(&so, r.args.cmd, &child);
	if (ret) {
		fprintf(stderr, "sluice run: cannot execute %s: %s\n", r.args.cmd[0],
			strerror(-ret));
		status = ret == -ENOENT ? RUN_EXIT_NOT_FOUND : RUN_EXIT_CANNOT_EXEC;
		why = "command not started";
	} else {
		status = run_supervise(&r, child, sig_fd, &has_status, &why);
		/* a signal or an error ended the run: its status is what sluice exits with */
		has_status = true;
	}
	run_finish(&r, has_status, status, why);
	if (!ret)
		waitpid(child, NULL, WNOHANG);
	if (records_log_incomplete(&r.rec)) {
		fprintf(stderr, "sluice: run %s: the log could not be written at some point: exit "
				"%d\n", r.run_id, RUN_EXIT_LOG_INCOMPLETE);
		status = RUN_EXIT_LOG_INCOMPLETE;
	}
	if (r.still_running)
		status = RUN_EXIT_SLUICE_ERROR;

out:
	run_close(&r);
	free(conf);
	if (sig_fd >= 0)
		close(sig_fd);
	return status;
}
