// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sluice run handed to a running daemon: see handoff.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "confine.h"
#include "control.h"
#include "events_cmd.h"
#include "handoff.h"
#include "jsonline.h"
#include "../policy/policy.h"
#include "runopts.h"
#include "sandbox_seccomp.h"
#include "util.h"

extern char **environ;

int handoff_argv_encode(char *const *argv, int n, char *out, size_t len)
{
	size_t used = 0;
	int i;

	for (i = 0; i < n; i++) {
		size_t alen = strlen(argv[i]);
		int k = snprintf(out + used, len - used, "%zu:", alen);

		if (k < 0 || (size_t)k >= len - used || len - used - (size_t)k <= alen)
			return -ENOSPC;
		used += (size_t)k;
		memcpy(out + used, argv[i], alen);
		used += alen;
	}
	if (used >= len)
		return -ENOSPC;
	out[used] = '\0';
	return 0;
}

int handoff_argv_decode(const char *s, char ***argv, int *n, char **buf)
{
	size_t total = strlen(s), count = 0, pos = 0, out = 0;
	char **v = NULL, *b = NULL;

	/* each argument costs at least "0:": at most total / 2 of them */
	v = calloc(total / 2 + 2, sizeof(*v));
	b = malloc(total + 1);
	if (!v || !b)
		goto bad;
	while (pos < total) {
		char *end;
		unsigned long alen;

		if (s[pos] < '0' || s[pos] > '9')
			goto bad;
		errno = 0;
		alen = strtoul(s + pos, &end, 10);
		if (errno || *end != ':' || alen > total - (size_t)(end + 1 - s))
			goto bad;
		pos = (size_t)(end + 1 - s);
		v[count++] = b + out;
		memcpy(b + out, s + pos, alen);
		out += alen;
		b[out++] = '\0';
		pos += alen;
	}
	if (!count)
		goto bad;
	v[count] = NULL;
	*argv = v;
	*n = (int)count;
	*buf = b;
	return 0;
bad:
	free(v);
	free(b);
	return -EINVAL;
}

/* An absolute version of path (the daemon has its own working directory). */
static int absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];

	if (path[0] == '/')
		return util_copy(buf, len, path);
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	return util_fmt(buf, len, "%s/%s", cwd, path);
}

/* What only a standalone run does: the reason, or NULL when the daemon can take the run. */
static const char *standalone_only(const struct run *r)
{
	char **e;

	if (r->args.checkpoint_fd >= 0)
		return "--checkpoint-fd (a descriptor of this process)";
	if (r->args.verbose)
		return "-v (libbpf's messages, from the process that loads)";
	/* the selftests' switches change how a run is set up: the process that sets up reads them */
	for (e = environ; *e; e++)
		if (!strncmp(*e, "SLUICE_SELFTEST_", strlen("SLUICE_SELFTEST_")))
			return "a SLUICE_SELFTEST_ variable";
	return NULL;
}

struct handoff {
	struct run *r;
	int fd;	       /* the run's connection: closing it ends the run */
	int events_fd; /* the run's lines, for the denials on stderr; -1: none */
	/*
	 * --netns, opened once: sent with the request (the daemon sets the run up in it) and
	 * entered by the command, so both are one namespace whatever the path names meanwhile
	 */
	int netns_fd;
	char ev_buf[CONTROL_LINE_MAX];
	size_t ev_len;
	bool ev_overlong;
	struct jsonline jl;
	char reply[CONTROL_LINE_MAX];
	struct control_msg m;
	char argv_enc[CONTROL_LINE_MAX];
	char policy[PATH_MAX], log[PATH_MAX], key[PATH_MAX], netns[PATH_MAX], alerts[PATH_MAX];
};

static int build_request(struct handoff *h, const struct spawn_opts *so)
{
	const struct run_args *a = &h->r->args;
	struct control_msg *m = &h->m;
	/* the options an attach sends too, with the paths made absolute (runopts_request) */
	struct run_args shared = *a;

	if (!realpath(a->policy_path, h->policy)) {
		fprintf(stderr, "sluice run: --policy %s: %s\n", a->policy_path, strerror(errno));
		return -errno;
	}
	if (absolute(h->r->log_path, h->log, sizeof(h->log)) ||
	    absolute(run_key_path(a), h->key, sizeof(h->key)) ||
	    (a->netns && absolute(a->netns, h->netns, sizeof(h->netns))) ||
	    (a->alerts && absolute(a->alerts, h->alerts, sizeof(h->alerts))))
		return -ENAMETOOLONG;
	if (handoff_argv_encode(a->cmd, a->n_cmd, h->argv_enc, sizeof(h->argv_enc)))
		return -EMSGSIZE;
	shared.policy_path = h->policy;
	shared.run_id = h->r->run_id;
	shared.log_path = h->log;
	shared.netns = a->netns ? h->netns : NULL;
	control_msg_begin(m);
	control_msg_str(m, "op", "run");
	runopts_request(m, &shared);
	control_msg_str(m, "key", h->key);
	control_msg_str(m, "cgroup_parent", a->cgroup_parent);
	control_msg_str(m, "argv", h->argv_enc);
	control_msg_u64(m, "uid", so->uid);
	control_msg_u64(m, "gid", so->gid);
	if (a->user)
		control_msg_str(m, "user", a->user);
	control_msg_bool(m, "allow_root", a->allow_root);
	if (a->alerts)
		control_msg_str(m, "alerts", h->alerts);
	control_msg_bool(m, "dns_ttl", a->dns_ttl);
	control_msg_bool(m, "strict_evidence", a->strict_evidence);
	control_msg_u64(m, "ringbuf_kib", a->ringbuf_kib);
	control_msg_u64(m, "checkpoint_lines", a->checkpoint_lines);
	control_msg_u64(m, "checkpoint_secs", a->checkpoint_secs);
	control_msg_u64(m, "rotate_kib", a->rotate_kib);
	return control_msg_end(m);
}

/* The run's events stream: denials and alerts go to stderr as they happen. */
static void open_events(struct handoff *h, const char *path)
{
	int fd = control_connect(path);

	h->events_fd = -1;
	if (fd < 0)
		goto fail;
	control_msg_begin(&h->m);
	control_msg_str(&h->m, "op", "events");
	control_msg_str(&h->m, "run_id", h->r->run_id);
	if (control_msg_end(&h->m) || control_call(fd, h->m.buf, h->reply, sizeof(h->reply))) {
		close(fd);
		goto fail;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	h->events_fd = fd;
	return;
fail:
	fprintf(stderr, "sluice run: the daemon's stream of run %s: not open; denials are in the "
			"log only\n", h->r->run_id);
}

static void show_line(struct handoff *h, const char *line, size_t len)
{
	char text[2048], decision[16];
	const char *why;
	size_t off;

	if (jsonline_parse(&h->jl, line, len, &off, &why))
		return;
	/* what a standalone run says on stderr: its denials and alerts */
	if (!jsonline_type_is(&h->jl, "alert") &&
	    (jsonline_str(&h->jl, "decision", decision, sizeof(decision)) < 0 ||
	     strcmp(decision, "deny")))
		return;
	if (events_compact(&h->jl, text, sizeof(text)) < 0 && !text[0])
		return;
	fprintf(stderr, "sluice: %s\n", text);
}

/* Read what the stream has; false at its end. */
static bool read_events(struct handoff *h)
{
	for (;;) {
		ssize_t n = read(h->events_fd, h->ev_buf + h->ev_len, sizeof(h->ev_buf) - h->ev_len);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) {
			close(h->events_fd);
			h->events_fd = -1;
			return false;
		}
		h->ev_len += (size_t)n;
		while ((nl = memchr(h->ev_buf, '\n', h->ev_len))) {
			size_t line = (size_t)(nl - h->ev_buf);

			if (!h->ev_overlong)
				show_line(h, h->ev_buf, line);
			h->ev_overlong = false;
			memmove(h->ev_buf, nl + 1, h->ev_len - line - 1);
			h->ev_len -= line + 1;
		}
		if (h->ev_len == sizeof(h->ev_buf)) {
			h->ev_len = 0;
			h->ev_overlong = true;
		}
	}
}

/* The stream's last lines: the daemon closes it once the run has ended. */
static void drain_events(struct handoff *h)
{
	while (h->events_fd >= 0) {
		struct pollfd p = { .fd = h->events_fd, .events = POLLIN };

		if (poll(&p, 1, 2000) <= 0)
			break;
		read_events(h);
	}
}

/*
 * Wait for the command (or a signal), showing denials. Returns the status; *why says what
 * ended it. The daemon going away (stopped, killed) leaves the run pinned and judged: its next
 * daemon takes it over and ends it when the cgroup empties, so the command goes on
 * (daemon_gone).
 */
static int supervise(struct handoff *h, pid_t child, int sig_fd, const char **why,
		     bool *daemon_gone)
{
	for (;;) {
		struct pollfd pfd[3];
		struct signalfd_siginfo si;
		int wstatus, n = 0, i_conn = -1, i_ev = -1;
		pid_t got;

		pfd[n++] = (struct pollfd){ .fd = sig_fd, .events = POLLIN };
		if (!*daemon_gone) {
			i_conn = n;
			pfd[n++] = (struct pollfd){ .fd = h->fd, .events = POLLIN };
		}
		if (h->events_fd >= 0) {
			i_ev = n;
			pfd[n++] = (struct pollfd){ .fd = h->events_fd, .events = POLLIN };
		}
		if (poll(pfd, (nfds_t)n, 1000) < 0 && errno != EINTR) {
			*why = "sluice error";
			return RUN_EXIT_SLUICE_ERROR;
		}
		if (i_ev >= 0 && pfd[i_ev].revents)
			read_events(h);
		if (i_conn >= 0 && pfd[i_conn].revents) {
			*daemon_gone = true;
			fprintf(stderr, "sluice run: the daemon closed run %s's connection (stopped or "
					"died): the run stays enforced, its log %s is not ended; %s "
					"goes on\n", h->r->run_id, h->log, h->r->args.cmd[0]);
		}
		while (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			fprintf(stderr, "sluice: %s received, ending run %s\n",
				strsignal((int)si.ssi_signo), h->r->run_id);
			*why = "signal";
			return 128 + (int)si.ssi_signo;
		}
		got = waitpid(child, &wstatus, WNOHANG);
		if (got == child) {
			*why = "command exited";
			return run_status_of(wstatus);
		}
		if (got < 0 && errno != EINTR) {
			*why = "command lost";
			return RUN_EXIT_SLUICE_ERROR;
		}
	}
}

/*
 * The daemon went away before the run's end (stopped, or died): nothing wrote run_end. Said with
 * what happens to the log, for sluice run exits RUN_EXIT_SLUICE_ERROR, not the command's status
 * (status, why: what the run_end it did not write would have said).
 */
static void say_daemon_gone(const struct handoff *h, int status, const char *why)
{
	fprintf(stderr, "sluice run: run %s lost its daemon before its end: the log %s has no "
			"run_end and is not sealed. The run stays pinned and enforced; a restarted "
			"sluice daemon takes it over (where none will run: sluice resume %s --log %s) "
			"and ends the log once the run's cgroup is empty (\"why\":\"cgroup emptied\", "
			"no exit status). The run's end: %s, status %d; sluice run exits %d\n",
		h->r->run_id, h->log, h->r->run_id, h->log, why, status, RUN_EXIT_SLUICE_ERROR);
}

/* run_end: the daemon ends the run as sluice run would. Returns the status to exit with. */
static int end_run(struct handoff *h, int status, const char *why)
{
	struct control_obj *o = malloc(sizeof(*o));
	char err[1024];
	int ret;

	control_msg_begin(&h->m);
	control_msg_str(&h->m, "op", "run_end");
	control_msg_str(&h->m, "run_id", h->r->run_id);
	control_msg_u64(&h->m, "status", (uint64_t)status);
	control_msg_str(&h->m, "why", why);
	ret = control_msg_end(&h->m);
	if (!ret)
		ret = control_call(h->fd, h->m.buf, h->reply, sizeof(h->reply));
	if (ret) {
		if (ret == -EPROTO)
			control_reply_error(h->reply, err, sizeof(err));
		fprintf(stderr, "sluice run: ending run %s at the daemon: %s\n", h->r->run_id,
			ret == -EPROTO ? err : strerror(-ret));
		/* refused, the daemon is there still; otherwise it went away with the run */
		if (ret != -EPROTO && ret != -EMSGSIZE)
			say_daemon_gone(h, status, why);
		free(o);
		return RUN_EXIT_SLUICE_ERROR;
	}
	drain_events(h);
	if (o && !control_parse(o, h->reply, strlen(h->reply), err, sizeof(err))) {
		if (control_bool(o, "still_running") == 1)
			status = RUN_EXIT_SLUICE_ERROR;
		else if (control_bool(o, "log_incomplete") == 1) {
			fprintf(stderr, "sluice: run %s: the log could not be written at some point: "
					"exit %d\n", h->r->run_id, RUN_EXIT_LOG_INCOMPLETE);
			status = RUN_EXIT_LOG_INCOMPLETE;
		}
	}
	free(o);
	return status;
}

/*
 * The command, and everything in its cgroup, killed now: the daemon refused to answer for it, or
 * is gone before it took the start, so nothing is sure to judge what it does. The confined
 * init's death ends its PID namespace; cgroup.kill takes whatever else is in the cgroup.
 */
static void kill_command(pid_t child, int cg_fd) /* child: -1 once reaped */
{
	int fd;

	if (child > 0)
		kill(child, SIGKILL);
	fd = openat(cg_fd, "cgroup.kill", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			fprintf(stderr, "sluice run: cgroup.kill: %s\n", strerror(errno));
		close(fd);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
}

/* After the "run" reply: the command in the cgroup, supervised, the run ended. */
static int start_and_wait(struct handoff *h, struct spawn_opts *so, int cg_fd, bool seccomp,
			  const struct policy *p, int sig_fd)
{
	struct run *r = h->r;
	struct sandbox_seccomp *ss = NULL;
	struct confine *conf = NULL;
	const char *why = "command not started";
	bool daemon_gone = false;
	int status, ret, listener, close_fds[2];
	pid_t child;

	if (seccomp) {
		ret = sandbox_seccomp_new(p->sockets, &ss);
		if (ret) {
			fprintf(stderr, "sluice run: build the workload's seccomp filter: %s\n",
				strerror(-ret));
			return end_run(h, RUN_EXIT_SLUICE_ERROR, "sluice error");
		}
	}
	if (r->args.allow_root) {
		fprintf(stderr, "sluice: WARNING: --allow-root: %s runs as full root and can undo "
				"this run (leave its cgroup, detach its programs, kill sluice): nothing "
				"it sends is sure to be judged\n", r->args.cmd[0]);
	} else if (!r->args.user) {
		conf = malloc(sizeof(*conf));
		ret = conf ? run_confine(r, conf) : -ENOMEM;
		if (ret) {
			fprintf(stderr, "sluice run: cannot confine %s (its mount table): %s\n",
				r->args.cmd[0], strerror(-ret));
			status = end_run(h, RUN_EXIT_SLUICE_ERROR, "sluice error");
			goto out;
		}
		so->confine = conf;
	}
	so->netns_fd = h->netns_fd;
	so->cgroup_fd = cg_fd;
	so->seccomp = ss;
	close_fds[0] = h->fd;
	close_fds[1] = h->events_fd;
	so->close_fds = close_fds;
	so->n_close_fds = h->events_fd >= 0 ? 2 : 1;
	ret = spawn_in_cgroup(so, r->args.cmd, &child);
	if (ret) {
		fprintf(stderr, "sluice run: cannot execute %s: %s\n", r->args.cmd[0],
			strerror(-ret));
		status = end_run(h, ret == -ENOENT ? RUN_EXIT_NOT_FOUND : RUN_EXIT_CANNOT_EXEC,
				 "command not started");
		goto out;
	}
	/* the daemon answers (and logs) the filter's refusals from now on */
	listener = sandbox_seccomp_release(ss);
	control_msg_begin(&h->m);
	control_msg_str(&h->m, "op", "run_started");
	control_msg_str(&h->m, "run_id", r->run_id);
	control_msg_u64(&h->m, "pid", (uint64_t)child);
	ret = control_msg_end(&h->m);
	if (!ret)
		ret = control_call_fd(h->fd, h->m.buf, listener, h->reply, sizeof(h->reply), NULL);
	if (listener >= 0)
		close(listener);
	if (ret) {
		/*
		 * A command no one answers for (refused, or the daemon gone before it took the
		 * start and the seccomp listener): killed before it does anything more, the run
		 * ended, the cgroup with it.
		 */
		fprintf(stderr, "sluice run: the daemon did not take run %s's start: %s: the command "
				"is killed\n", r->run_id, ret == -EPROTO ? h->reply : strerror(-ret));
		kill_command(child, cg_fd);
		status = end_run(h, RUN_EXIT_SLUICE_ERROR, "sluice error");
		goto out;
	}
	status = supervise(h, child, sig_fd, &why, &daemon_gone);
	if (daemon_gone) {
		/*
		 * What the daemon's run_end would have done: nothing of the run outlives CMD, and
		 * the next daemon, finding its cgroup empty, ends the log at once.
		 */
		kill_command(waitpid(child, NULL, WNOHANG) == 0 ? child : -1, cg_fd);
		say_daemon_gone(h, status, why);
		status = RUN_EXIT_SLUICE_ERROR;
		goto out;
	}
	ret = end_run(h, status, why);
	/* the run was not ended (or the daemon says its cgroup still runs): nothing left runs */
	if (ret == RUN_EXIT_SLUICE_ERROR && status != RUN_EXIT_SLUICE_ERROR)
		kill_command(waitpid(child, NULL, WNOHANG) == 0 ? child : -1, cg_fd);
	else
		waitpid(child, NULL, WNOHANG);
	status = ret;
out:
	so->netns_fd = -1;
	sandbox_seccomp_free(ss);
	free(conf);
	return status;
}

/*
 * The cgroup the daemon sent is the run's own: <v2 mount>/<cgroup_parent>/<run_id>, opened here
 * by name and compared by inode. A descriptor is whatever the peer chose to send (the hierarchy's
 * root, a cgroup v1 directory): the command would run where nothing is attached.
 */
static int check_cgroup(const struct run *r, int cg_fd, char *err, size_t err_len)
{
	char mnt[PATH_MAX], path[PATH_MAX];
	struct stat got, want;
	struct statfs fs;
	int fd, ret;

	ret = cgroup_v2_mount(mnt, sizeof(mnt));
	if (ret) {
		util_fmt(err, err_len, "no cgroup v2 hierarchy: %s", strerror(-ret));
		return ret;
	}
	if (util_fmt(path, sizeof(path), "%s/%s/%s", mnt, r->args.cgroup_parent, r->run_id)) {
		util_fmt(err, err_len, "path too long");
		return -ENAMETOOLONG;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		util_fmt(err, err_len, "%s: %s", path, strerror(errno));
		return ret;
	}
	ret = fstat(fd, &want) || fstat(cg_fd, &got) || fstatfs(cg_fd, &fs) ? -errno : 0;
	close(fd);
	if (ret) {
		util_fmt(err, err_len, "%s", strerror(-ret));
		return ret;
	}
	if (fs.f_type != CGROUP2_SUPER_MAGIC || got.st_dev != want.st_dev ||
	    got.st_ino != want.st_ino) {
		util_fmt(err, err_len, "the descriptor sent is not %s", path);
		return -EPERM;
	}
	return 0;
}

int handoff_run(struct run *r, struct spawn_opts *so, const sigset_t *child_mask, int sig_fd)
{
	const char *path = control_socket_path(r->args.socket);
	struct handoff *h = NULL;
	struct control_obj *o = NULL;
	struct policy *p = NULL;
	char err[1024], digest[65];
	const char *why, *got;
	int fd, cg_fd = -1, status = RUN_EXIT_SLUICE_ERROR, ret;

	why = standalone_only(r);
	if (why)
		return HANDOFF_STANDALONE;
	fd = control_connect(path);
	if (fd == -EPERM) {
		/*
		 * Something that is not a privileged sluice (a confined workload that replaced the
		 * socket: uid 0 without capabilities) listens where the daemon should: it would
		 * answer "ok" with a cgroup that judges nothing. Said loudly, and nothing runs.
		 */
		fprintf(stderr, "sluice run: the listener at %s is not a privileged sluice daemon "
				"(see above): not started; stop it, or run with --standalone\n", path);
		return RUN_EXIT_SLUICE_ERROR;
	}
	if (fd < 0) {
		/* none runs: the run is as it always was */
		if (fd != -ENOENT && fd != -ECONNREFUSED)
			fprintf(stderr, "sluice run: no daemon to hand the run to at %s (%s): "
					"standalone\n", path, strerror(-fd));
		return HANDOFF_STANDALONE;
	}
	h = calloc(1, sizeof(*h));
	o = malloc(sizeof(*o));
	if (!h || !o) {
		fprintf(stderr, "sluice run: out of memory\n");
		goto out_free;
	}
	h->r = r;
	h->fd = fd;
	h->events_fd = -1;
	h->netns_fd = -1;
	ret = build_request(h, so);
	if (ret == -EMSGSIZE) {
		/* a command line no request line holds: loaded here instead */
		status = HANDOFF_STANDALONE;
		goto out_free;
	}
	if (ret) {
		if (ret != -ENOENT)
			fprintf(stderr, "sluice run: %s\n", strerror(-ret));
		goto out_free;
	}
	/* the filter is built from the policy this process reads: the daemon must read the same */
	ret = policy_load_file(h->policy, &p, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "sluice run: %s\n", err);
		goto out_free;
	}
	if (r->args.netns) {
		h->netns_fd = runopts_open_netns(h->netns, err, sizeof(err));
		if (h->netns_fd < 0) {
			fprintf(stderr, "sluice run: %s\n", err);
			goto out_free;
		}
	}
	ret = control_call_fd(fd, h->m.buf, h->netns_fd, h->reply, sizeof(h->reply), &cg_fd);
	if (ret == -EPROTO)
		control_reply_error(h->reply, err, sizeof(err));
	/*
	 * A daemon at its client limit answers at accept, before reading anything, and closes:
	 * the request was never read (the reply, or the close racing the request's send). The
	 * run is loaded here instead: as strongly enforced, without the daemon.
	 */
	if (ret == -EPIPE || ret == -ECONNRESET ||
	    (ret == -EPROTO && !strcmp(err, "too many clients"))) {
		fprintf(stderr, "sluice run: the daemon at %s took no more clients (%s): "
				"standalone\n", path, ret == -EPROTO ? err : strerror(-ret));
		status = HANDOFF_STANDALONE;
		goto out_free;
	}
	if (ret == -EPROTO) {
		fprintf(stderr, "sluice run: %s\n", err);
		goto out_free;
	}
	if (ret) {
		fprintf(stderr, "sluice run: handing the run to the daemon at %s: %s\n", path,
			strerror(-ret));
		goto out_free;
	}
	if (control_parse(o, h->reply, strlen(h->reply), err, sizeof(err))) {
		fprintf(stderr, "sluice run: the daemon's reply: %s\n", err);
		status = end_run(h, RUN_EXIT_SLUICE_ERROR, "sluice error");
		goto out_free;
	}
	util_hex(p->sha256, sizeof(p->sha256), digest, sizeof(digest));
	got = control_str(o, "policy_sha256", NULL);
	if (cg_fd < 0 || !got || strcmp(got, digest)) {
		fprintf(stderr, "sluice run: %s\n", cg_fd < 0 ? "the daemon sent no cgroup" :
				"the policy changed while the daemon read it: not started");
		status = end_run(h, RUN_EXIT_SLUICE_ERROR, "sluice error");
		goto out_free;
	}
	if (control_bool(o, "seccomp") != 1) {
		/* every handed run has its filter; a daemon weakened for a selftest is no daemon */
		fprintf(stderr, "sluice run: the daemon at %s gave run %s no seccomp filter: not "
				"started\n", path, r->run_id);
		status = end_run(h, RUN_EXIT_SLUICE_ERROR, "sluice error");
		goto out_free;
	}
	ret = check_cgroup(r, cg_fd, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "sluice run: the daemon's cgroup for run %s: %s: not started\n",
			r->run_id, err);
		status = end_run(h, RUN_EXIT_SLUICE_ERROR, "sluice error");
		goto out_free;
	}
	open_events(h, path);
	so->child_mask = child_mask;
	status = start_and_wait(h, so, cg_fd, true, p, sig_fd);
out_free:
	if (cg_fd >= 0)
		close(cg_fd);
	if (h && h->events_fd >= 0)
		close(h->events_fd);
	if (h && h->netns_fd >= 0)
		close(h->netns_fd);
	close(fd);
	policy_free(p);
	free(h);
	free(o);
	return status;
}
