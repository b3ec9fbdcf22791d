// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice attach (--cgroup PATH | --pid PID | --container NAME-OR-ID | --unit NAME) --policy FILE
 *               --run-id ID [--task T] [--mode report|enforce] [--netns PATH|none] [--log PATH]
 *               [--upstream ADDR] [--socket PATH] [--dry-run] [--reset-peers]
 *
 * A client of the daemon: finds the cgroup (and network namespace) of what it is told to attach
 * to (locate.c), makes every path absolute (the daemon has its own working directory), asks the
 * daemon to attach, and prints what the daemon attached or why it would not.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_cmd.h"
#include "runopts.h"
#include "cgroup.h"
#include "control.h"
#include "locate.h"
#include "records.h"
#include "run.h"
#include "util.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice attach (--cgroup PATH | --pid PID | --container NAME-OR-ID |\n"
		"                      --unit NAME) --policy FILE --run-id ID [--task TASK]\n"
		"                     [--mode report|enforce] [--netns PATH|none] [--log FILE]\n"
		"                     [--upstream ADDR[:PORT]] [--socket PATH] [--dry-run]\n"
		"                     [--reset-peers]\n"
		"\n"
		"Asks the sluice daemon to confine an existing cgroup under the policy: every\n"
		"process in it, now and later, and the sockets they already hold.\n"
		"  --cgroup PATH     that cgroup (absolute, under the cgroup v2 mount)\n"
		"  --pid PID         the cgroup of that process (\"0::\" in /proc/PID/cgroup)\n"
		"  --container NAME  a running container, by name, id or unique id prefix,\n"
		"                    found in its runtime's own state: runc (/run/runc),\n"
		"                    Docker (/run/docker/runtime-runc/moby, names from\n"
		"                    /var/lib/docker), containerd (/run/containerd/runc/NS;\n"
		"                    NS/ID names the namespace), crun (/run/crun), podman\n"
		"                    (podman container inspect). A name matching two\n"
		"                    containers is refused, both listed\n"
		"  --unit NAME       a systemd unit's ControlGroup (a unit with none is refused)\n"
		"  --netns PATH      the run's network namespace: its resolver listens on its\n"
		"                    loopback, the host side of its veths gets the packet checks.\n"
		"                    Default with --pid/--container/--unit: /proc/PID/ns/net of\n"
		"                    the process found, when it is not sluice's own; 'none':\n"
		"                    no netns. sluice attach opens it and sends the daemon\n"
		"                    the namespace itself: the process may go once it is open\n"
		"  --log FILE        the run's log (default: the daemon's choice)\n"
		"  --upstream ADDR   where the run's resolver asks for listed names\n"
		"  --socket PATH     the daemon's socket (default: $SLUICE_SOCKET, else\n"
		"                    " CONTROL_SOCKET_DEFAULT ")\n"
		"  --dry-run         print the request instead of sending it\n"
		"  --reset-peers     the workload holds no CAP_NET_ADMIN (your word): a socket\n"
		"                    sluice destroys has its peer reset (with --netns)\n"
		"Exit status: 0 attached (or printed, with --dry-run); 1 the daemon refused (its\n"
		"error is printed); 2 bad arguments; 3 the target was not found or is ambiguous;\n"
		"4 no daemon answers at the socket.\n");
}

/* An absolute version of path (prefixed with the working directory), into buf. */
static int absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];

	if (path[0] == '/')
		return util_copy(buf, len, path);
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	return util_fmt(buf, len, "%s/%s", cwd, path);
}

static int check_text(const char *field, const char *v, size_t max, char *why, size_t why_len)
{
	const unsigned char *p;

	if (strlen(v) > max) {
		util_fmt(why, why_len, "%s: longer than %zu bytes", field, max);
		return -EINVAL;
	}
	for (p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f) {
			util_fmt(why, why_len, "%s: holds a control character", field);
			return -EINVAL;
		}
	return 0;
}

static int check_path(const char *field, const char *v, char *why, size_t why_len)
{
	if (v[0] != '/') {
		util_fmt(why, why_len, "%s: expected an absolute path, got \"%s\"", field, v);
		return -EINVAL;
	}
	return check_text(field, v, PATH_MAX - 1, why, why_len);
}

int attach_build(const struct attach_req *r, struct control_msg *m, char *why, size_t why_len)
{
	/* the run's options, as sluice run's handoff sends its own (runopts_request) */
	const struct run_args shared = {
		.policy_path = r->policy, .run_id = r->run_id, .task = r->task, .mode = r->mode,
		.netns = r->netns,	  .log_path = r->log,  .upstream = r->upstream,
	};
	int err;

	if (!r->cgroup || !r->policy || !r->run_id) {
		util_fmt(why, why_len, "%s is required",
			 !r->cgroup ? "the cgroup" : !r->policy ? "the policy" : "the run id");
		return -EINVAL;
	}
	if (run_check_id(r->run_id)) {
		util_fmt(why, why_len, "run id: expected 1-%d characters of [A-Za-z0-9_-], not "
				       "starting with '-'", RUN_ID_MAX);
		return -EINVAL;
	}
	if (r->mode && strcmp(r->mode, "report") && strcmp(r->mode, "enforce")) {
		util_fmt(why, why_len, "mode: expected report or enforce");
		return -EINVAL;
	}
	err = check_path("cgroup", r->cgroup, why, why_len);
	if (!err)
		err = check_path("policy", r->policy, why, why_len);
	if (!err && r->netns)
		err = check_path("netns", r->netns, why, why_len);
	if (!err && r->log)
		err = check_path("log", r->log, why, why_len);
	if (!err && r->task)
		err = check_text("task", r->task, RECORDS_TASK_MAX, why, why_len);
	if (!err && r->upstream)
		err = check_text("upstream", r->upstream, RUN_UPSTREAM_MAX - 1, why, why_len);
	if (err)
		return err;
	control_msg_begin(m);
	control_msg_str(m, "op", "attach");
	control_msg_str(m, "cgroup", r->cgroup);
	runopts_request(m, &shared);
	if (r->source)
		control_msg_str(m, "source", r->source);
	if (r->reset_peers)
		control_msg_bool(m, "reset_peers", true);
	if (r->next_free_id)
		control_msg_bool(m, "next_free_id", true);
	if (control_msg_end(m)) {
		util_fmt(why, why_len, "the request does not fit a line of %d bytes",
			 CONTROL_LINE_MAX);
		return -EMSGSIZE;
	}
	return 0;
}

int attach_send(const char *cmd, const char *socket, struct control_msg *m, int netns_fd)
{
	const char *path = control_socket_path(socket);
	char *reply = malloc(CONTROL_LINE_MAX), err_text[1024];
	struct control_obj *o = malloc(sizeof(*o));
	int fd = -1, err, ret;

	if (!reply || !o) {
		fprintf(stderr, "%s: out of memory\n", cmd);
		ret = ATTACH_EXIT_NO_DAEMON;
		goto out;
	}
	fd = control_connect(path);
	if (fd < 0) {
		fprintf(stderr, "%s: no sluice daemon at %s: %s%s\n", cmd, path, strerror(-fd),
			fd == -ENOENT || fd == -ECONNREFUSED ? " (start one: sluice daemon)" : "");
		ret = ATTACH_EXIT_NO_DAEMON;
		goto out;
	}
	err = control_call_fd(fd, m->buf, netns_fd, reply, CONTROL_LINE_MAX, NULL);
	if (err == -EPROTO) {
		control_reply_error(reply, err_text, sizeof(err_text));
		fprintf(stderr, "%s: the daemon refused: %s\n", cmd, err_text);
		ret = ATTACH_EXIT_REFUSED;
		goto out;
	}
	if (err) {
		fprintf(stderr, "%s: talking to the daemon at %s: %s\n", cmd, path, strerror(-err));
		ret = ATTACH_EXIT_NO_DAEMON;
		goto out;
	}
	ret = ATTACH_EXIT_OK;
	if (!control_parse(o, reply, strlen(reply), err_text, sizeof(err_text))) {
		const char *id = control_str(o, "run_id", NULL);
		const char *cg = control_str(o, "cgroup", NULL);
		const char *log = control_str(o, "log", NULL);

		printf("attached run %s to %s, logging to %s\n", id ? id : "?", cg ? cg : "?",
		       log ? log : "?");
	} else {
		printf("%s\n", reply);
	}
out:
	if (fd >= 0)
		close(fd);
	free(reply);
	free(o);
	return ret;
}

int attach_cmd_main(int argc, char **argv)
{
	static const int shared[] = { RUNOPT_POLICY, RUNOPT_RUN_ID, RUNOPT_TASK, RUNOPT_MODE,
				      RUNOPT_NETNS, RUNOPT_LOG, RUNOPT_UPSTREAM, 0 };
	static const struct option own[] = {
		{ "cgroup", required_argument, NULL, 'c' },
		{ "pid", required_argument, NULL, 'P' },
		{ "container", required_argument, NULL, 'C' },
		{ "unit", required_argument, NULL, 'U' },
		{ "socket", required_argument, NULL, 's' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "reset-peers", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	static struct runopts_table t;
	struct run_args ra = { .cmd_name = "sluice attach", .checkpoint_fd = -1 };
	const char *cgroup = NULL, *pid_s = NULL, *container = NULL, *unit = NULL;
	const char *policy = NULL, *netns = NULL, *log = NULL, *socket = NULL;
	static char policy_abs[PATH_MAX], log_abs[PATH_MAX], netns_abs[PATH_MAX];
	static char cg_abs[PATH_MAX], mnt[PATH_MAX];
	static struct control_msg m;
	struct attach_req r = { 0 };
	char why[LOCATE_WHY_MAX];
	struct locate *l = NULL;
	bool dry_run = false;
	int c, n_targets, err, ret = ATTACH_EXIT_USAGE;

	if (runopts_build(&t, shared, own, "h"))
		return ATTACH_EXIT_USAGE;
	optind = 1;
	while ((c = getopt_long(argc, argv, t.shortopts, t.opts, NULL)) != -1) {
		switch (c) {
		case 'c': cgroup = optarg; break;
		case 'P': pid_s = optarg; break;
		case 'C': container = optarg; break;
		case 'U': unit = optarg; break;
		case 's': socket = optarg; break;
		case 'D': dry_run = true; break;
		case 'R': r.reset_peers = true; break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			err = runopts_take(&ra, c, optarg);
			if (err == -ENOENT)
				usage(stderr);
			if (err)
				return ATTACH_EXIT_USAGE;
		}
	}
	policy = ra.policy_path;
	r.run_id = ra.run_id;
	r.task = ra.task;
	r.mode = ra.mode;
	netns = ra.netns;
	log = ra.log_path;
	r.upstream = ra.upstream;
	if (optind < argc) {
		fprintf(stderr, "sluice attach: unexpected argument \"%s\"\n", argv[optind]);
		return ATTACH_EXIT_USAGE;
	}
	n_targets = !!cgroup + !!pid_s + !!container + !!unit;
	if (n_targets != 1) {
		fprintf(stderr, "sluice attach: give exactly one of --cgroup, --pid, --container, "
				"--unit\n");
		return ATTACH_EXIT_USAGE;
	}
	if (!policy || !r.run_id) {
		fprintf(stderr, "sluice attach: --policy FILE and --run-id ID are required\n");
		return ATTACH_EXIT_USAGE;
	}
	/* The daemon reads the policy itself: name the file, resolved, not our view of it. */
	if (!realpath(policy, policy_abs)) {
		fprintf(stderr, "sluice attach: --policy %s: %s\n", policy, strerror(errno));
		return ATTACH_EXIT_USAGE;
	}
	r.policy = policy_abs;
	if (log) {
		if (absolute(log, log_abs, sizeof(log_abs))) {
			fprintf(stderr, "sluice attach: --log %s: path too long\n", log);
			return ATTACH_EXIT_USAGE;
		}
		r.log = log_abs;
	}

	l = calloc(1, sizeof(*l));
	if (!l)
		return ATTACH_EXIT_USAGE;
	l->netns_fd = -1; /* (--cgroup: no namespace found) */
	if (cgroup) {
		err = cgroup_v2_mount(mnt, sizeof(mnt));
		if (err) {
			fprintf(stderr, "sluice attach: no cgroup v2 mount: %s\n", strerror(-err));
			goto out;
		}
		/* canonical (no "..", no symlink), and below the v2 mount, not the mount itself */
		if (!realpath(cgroup, cg_abs)) {
			fprintf(stderr, "sluice attach: --cgroup %s: %s\n", cgroup,
				strerror(errno));
			ret = ATTACH_EXIT_NOT_FOUND;
			goto out;
		}
		if (strncmp(cg_abs, mnt, strlen(mnt)) || cg_abs[strlen(mnt)] != '/') {
			fprintf(stderr, "sluice attach: --cgroup %s: not a cgroup below the cgroup "
					"v2 mount %s\n", cgroup, mnt);
			goto out;
		}
		util_copy(l->cgroup, sizeof(l->cgroup), cg_abs);
		util_fmt(l->source, sizeof(l->source), "cgroup");
	} else {
		if (pid_s) {
			char *end;
			long pid;

			errno = 0;
			pid = strtol(pid_s, &end, 10);
			if (errno || *end || end == pid_s || pid <= 0 || pid > INT32_MAX) {
				fprintf(stderr, "sluice attach: --pid: expected a process id, got "
						"\"%s\"\n", pid_s);
				goto out;
			}
			err = locate_pid((pid_t)pid, l, why, sizeof(why));
		} else if (container) {
			err = locate_container(container, l, why, sizeof(why));
		} else {
			err = locate_unit(unit, l, why, sizeof(why));
		}
		if (err) {
			fprintf(stderr, "sluice attach: %s\n", why);
			ret = err == -EINVAL && (container || unit) && !strncmp(why, "--", 2) ?
				      ATTACH_EXIT_USAGE : ATTACH_EXIT_NOT_FOUND;
			goto out;
		}
	}
	r.cgroup = l->cgroup;
	r.source = l->source[0] && strcmp(l->source, "cgroup") ? l->source : NULL;
	/*
	 * The namespace is sent open, not by path: the daemon never opens the path (runopts.h).
	 * The one found with the target was opened while its process was the one found (locate.h).
	 */
	if (netns) {
		locate_release(l);
		if (strcmp(netns, "none")) {
			if (absolute(netns, netns_abs, sizeof(netns_abs))) {
				fprintf(stderr, "sluice attach: --netns %s: path too long\n", netns);
				goto out;
			}
			r.netns = netns_abs;
		}
	} else {
		r.netns = l->netns[0] ? l->netns : NULL;
	}
	if (attach_build(&r, &m, why, sizeof(why))) {
		fprintf(stderr, "sluice attach: %s\n", why);
		goto out;
	}
	if (dry_run) {
		printf("%s\n", m.buf);
		ret = ATTACH_EXIT_OK;
		goto out;
	}
	if (r.netns && l->netns_fd < 0) {
		l->netns_fd = runopts_open_netns(r.netns, why, sizeof(why));
		if (l->netns_fd < 0) {
			fprintf(stderr, "sluice attach: %s\n", why);
			goto out;
		}
	}
	ret = attach_send("sluice attach", socket, &m, l->netns_fd);
out:
	if (l)
		locate_release(l);
	free(l);
	return ret;
}
