// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The daemon's small clients: see client_cmd.h. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_cmd.h"
#include "control.h"
#include "util.h"

#define EXIT_REFUSED 1
#define EXIT_USAGE 2
#define EXIT_NO_DAEMON 3

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice detach --run-id ID [--socket PATH]\n"
		"       sluice status [--json] [--socket PATH]\n"
		"       sluice set-mode --run-id ID enforce|report [--socket PATH]\n"
		"       sluice replace-policy --run-id ID FILE [--socket PATH]\n"
		"\n"
		"Requests to the sluice daemon (root only).\n"
		"  detach          end the run: its programs are detached, its log sealed; the\n"
		"                  cgroup's processes go on, unconfined\n"
		"  status          every attached run: mode, policy and its SHA-256, log, lines,\n"
		"                  denials, records lost, resolver; then each run being attached\n"
		"                  (\"attaching\"); --json: one JSON object per run\n"
		"  set-mode        switch a run between report and enforce, atomically, recorded in\n"
		"                  its log\n"
		"  replace-policy  put FILE in force for the run, atomically, recorded in its log\n"
		"\n"
		"  --socket PATH   the daemon's socket (default $SLUICE_SOCKET, else %s)\n"
		"\n"
		"Exit status: 0 done, 1 the daemon refused (it says why), 2 usage, 3 no daemon answers.\n",
		CONTROL_SOCKET_DEFAULT);
}

/* Send m, print the daemon's refusal if it refuses. Returns the fd (for what follows) or -1. */
static int call(const char *socket_path, struct control_msg *m, char *reply, size_t len,
		int *status)
{
	char why[1024];
	int fd, err;

	if (control_msg_end(m)) {
		fprintf(stderr, "sluice: request too long\n");
		*status = EXIT_USAGE;
		return -1;
	}
	fd = control_connect(socket_path);
	if (fd < 0) {
		fprintf(stderr, "sluice: no sluice daemon answers on %s: %s\n", socket_path,
			fd == -EPERM ? "the process listening there is not a privileged sluice daemon"
				     : strerror(-fd));
		*status = EXIT_NO_DAEMON;
		return -1;
	}
	err = control_call(fd, m->buf, reply, len);
	if (err == -EPROTO) {
		control_reply_error(reply, why, sizeof(why));
		fprintf(stderr, "sluice: the daemon refused: %s\n", why);
		*status = EXIT_REFUSED;
	} else if (err) {
		fprintf(stderr, "sluice: talking to the daemon on %s: %s\n", socket_path,
			strerror(-err));
		*status = EXIT_NO_DAEMON;
	}
	if (err) {
		close(fd);
		return -1;
	}
	*status = 0;
	return fd;
}

static int print_status(int fd, const char *reply, bool json)
{
	struct control_obj *o = malloc(sizeof(*o));
	char *line = malloc(CONTROL_LINE_MAX), why[256];
	const struct control_member *n, *a;
	int64_t i, n_lines;
	int status = 0;

	if (!o || !line)
		goto oom;
	if (control_parse(o, reply, strlen(reply), why, sizeof(why)) ||
	    !(n = control_get(o, "runs")) || n->kind != CONTROL_INT || n->i < 0) {
		fprintf(stderr, "sluice status: the daemon's reply is not a status: %s\n", reply);
		status = EXIT_NO_DAEMON;
		goto out;
	}
	/* the runs being attached (their programs being verified) follow the attached ones */
	a = control_get(o, "attaching");
	n_lines = n->i + (a && a->kind == CONTROL_INT && a->i > 0 ? a->i : 0);
	if (!json)
		printf("%-24s %-8s %8s %8s %6s %-9s %s\n", "RUN", "MODE", "LINES", "DENIALS",
		       "LOST", "RESOLVER", "CGROUP");
	for (i = 0; i < n_lines; i++) {
		ssize_t len = control_read_line(fd, line, CONTROL_LINE_MAX);
		const struct control_member *v;

		if (len <= 0 || control_parse(o, line, (size_t)len, why, sizeof(why))) {
			fprintf(stderr, "sluice status: the daemon's answer was cut short\n");
			status = EXIT_NO_DAEMON;
			goto out;
		}
		if (json) {
			printf("%s\n", line);
			continue;
		}
		printf("%-24s %-8s", control_str(o, "run_id", NULL) ?: "?",
		       control_str(o, "mode", NULL) ?: "?");
		if (control_bool(o, "attaching") == 1) {
			printf(" %8s %8s %6s %-9s %s\n", "-", "-", "-", "attaching",
			       control_str(o, "cgroup", NULL) ?: "?");
			continue;
		}
		v = control_get(o, "lines");
		printf(" %8" PRId64, v && v->kind == CONTROL_INT ? v->i : -1);
		v = control_get(o, "denials");
		printf(" %8" PRId64, v && v->kind == CONTROL_INT ? v->i : -1);
		v = control_get(o, "lost");
		printf(" %6" PRId64, v && v->kind == CONTROL_INT ? v->i : -1);
		printf(" %-9s %s\n", control_str(o, "resolver", NULL) ?: "?",
		       control_str(o, "cgroup", NULL) ?: "?");
	}
	goto out;
oom:
	fprintf(stderr, "sluice status: out of memory\n");
	status = EXIT_NO_DAEMON;
out:
	free(o);
	free(line);
	return status;
}

int client_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "run-id", required_argument, NULL, 'r' },
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *cmd = argv[0], *run_id = NULL, *socket_path = NULL;
	struct control_msg *m = malloc(sizeof(*m));
	char reply[CONTROL_LINE_MAX], path[PATH_MAX];
	bool json = false;
	int c, fd, status = EXIT_USAGE;

	if (!m)
		return EXIT_NO_DAEMON;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			run_id = optarg;
			break;
		case 's':
			socket_path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			free(m);
			return 0;
		default:
			goto usage;
		}
	}
	socket_path = control_socket_path(socket_path);
	control_msg_begin(m);
	if (!strcmp(cmd, "status")) {
		if (optind != argc)
			goto usage;
		control_msg_str(m, "op", "status");
		fd = call(socket_path, m, reply, sizeof(reply), &status);
		if (fd >= 0) {
			status = print_status(fd, reply, json);
			close(fd);
		}
		goto out;
	}
	if (!run_id) {
		fprintf(stderr, "sluice %s: --run-id is required\n", cmd);
		goto usage;
	}
	control_msg_str(m, "run_id", run_id);
	if (!strcmp(cmd, "detach")) {
		if (optind != argc)
			goto usage;
		control_msg_str(m, "op", "detach");
	} else if (!strcmp(cmd, "set-mode")) {
		if (optind + 1 != argc || (strcmp(argv[optind], "enforce") &&
					   strcmp(argv[optind], "report"))) {
			fprintf(stderr, "sluice set-mode: expected enforce or report\n");
			goto usage;
		}
		control_msg_str(m, "op", "set_mode");
		control_msg_str(m, "mode", argv[optind]);
	} else {
		if (optind + 1 != argc)
			goto usage;
		/* the daemon reads the file: name it as the daemon sees it */
		if (!realpath(argv[optind], path)) {
			fprintf(stderr, "sluice replace-policy: %s: %s\n", argv[optind],
				strerror(errno));
			status = EXIT_USAGE;
			goto out;
		}
		control_msg_str(m, "op", "replace_policy");
		control_msg_str(m, "policy", path);
	}
	fd = call(socket_path, m, reply, sizeof(reply), &status);
	if (fd >= 0) {
		printf("%s\n", reply);
		close(fd);
	}
	goto out;
usage:
	usage(stderr);
	status = EXIT_USAGE;
out:
	free(m);
	return status;
}
