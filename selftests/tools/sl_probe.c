// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_probe: the workload-side probe client of the selftests.
 *
 *   sl_probe tcp|udp-sendto|udp-sendmsg|udp-sendmmsg|udp-connect ADDR PORT [--v6] [--timeout-ms N]
 *   sl_probe daemon ADDR PORT INTERVAL_MS PIDFILE [RESULTFILE]
 *   sl_probe cgroup-escape CGROUP_DIR ADDR PORT [--v6] [--timeout-ms N]
 *
 * Every operation prints exactly one line on stdout: "ok", or "err ERRNO_NAME ELAPSED_MS"
 * ("err EPERM 0"). udp-sendmmsg sends three datagrams in one call and prints one line per
 * datagram. Exit status: 0 if every operation succeeded, 1 if one failed, 2 on a usage or setup
 * error (nothing was probed, or the setup step of a mode failed).
 *
 * ADDR is numeric: IPv4, IPv6, "::ffff:a.b.c.d", "64:ff9b::a.b.c.d", "fe80::1%ifname". --v6 uses
 * an AF_INET6 socket for an IPv4 literal (as its v4-mapped form).
 *
 * tcp connects without blocking (poll up to --timeout-ms, default 3000), sends "probe\n", shuts its
 * side down and waits (up to the same timeout) for the server to close: against sl_sink that
 * guarantees the sink has logged the connection when the probe prints "ok".
 *
 * daemon double-forks (setsid) a process that outlives the command, writes its pid to PIDFILE
 * before the command returns, and makes a tcp probe every INTERVAL_MS forever, appending each
 * result line to RESULTFILE when given.
 *
 * cgroup-escape creates CGROUP_DIR/child, moves itself there, then makes a tcp probe; a failed
 * move is a setup error (exit 2), reported on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_PAYLOAD "probe\n"
#define PROBE_MMSG_COUNT 3
#define PROBE_DEFAULT_TIMEOUT_MS 3000

struct probe_dst {
	union { /* a union, so the stores through sin6 alias ss */
		struct sockaddr_storage ss;
		struct sockaddr_in6 sin6;
	};
	socklen_t len;
};

struct probe_opts {
	bool v6;
	int timeout_ms;
};

/* Positional arguments after MODE, and the options. */
struct probe_args {
	char **argv;
	int argc;
	struct probe_opts o;
};

struct probe_mode {
	const char *name;
	int nargs_min;
	int nargs_max;
	const char *usage;
	/* 0, or -errno on a setup error; *failed counts operations that failed */
	int (*run)(const struct probe_args *a, int *failed);
};

static const struct {
	int err;
	const char *name;
} errno_names[] = {
	{EPERM, "EPERM"},
	{EACCES, "EACCES"},
	{ECONNREFUSED, "ECONNREFUSED"},
	{ENETUNREACH, "ENETUNREACH"},
	{EHOSTUNREACH, "EHOSTUNREACH"},
	{ETIMEDOUT, "ETIMEDOUT"},
	{EINVAL, "EINVAL"},
	{EAFNOSUPPORT, "EAFNOSUPPORT"},
	{EADDRNOTAVAIL, "EADDRNOTAVAIL"},
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One result line: "ok" or "err NAME ELAPSED_MS"; err is 0 or -errno. */
static void result_line(FILE *f, int err, long long start_ms)
{
	size_t i;

	if (!err) {
		fprintf(f, "ok\n");
	} else {
		const char *name = NULL;

		for (i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
			if (errno_names[i].err == -err)
				name = errno_names[i].name;
		if (name)
			fprintf(f, "err %s %lld\n", name, now_ms() - start_ms);
		else
			fprintf(f, "err %d %lld\n", -err, now_ms() - start_ms);
	}
	fflush(f);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	long v;
	char *end;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int parse_dst(const char *addr, const char *port, bool v6, struct probe_dst *d)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	int p, r;

	if (parse_int(port, 1, 65535, &p)) {
		fprintf(stderr, "sl_probe: bad port \"%s\"\n", port);
		return -EINVAL;
	}
	r = getaddrinfo(addr, port, &hints, &ai);
	if (r) {
		fprintf(stderr, "sl_probe: bad address \"%s\": %s\n", addr, gai_strerror(r));
		return -EINVAL;
	}
	if (ai->ai_addrlen > sizeof(d->ss) ||
	    (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)) {
		freeaddrinfo(ai);
		return -EAFNOSUPPORT;
	}
	memset(&d->ss, 0, sizeof(d->ss));
	if (ai->ai_family == AF_INET && v6) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ai->ai_addr;

		d->sin6.sin6_family = AF_INET6;
		d->sin6.sin6_port = sin->sin_port;
		d->sin6.sin6_addr.s6_addr[10] = 0xff;
		d->sin6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&d->sin6.sin6_addr.s6_addr[12], &sin->sin_addr, 4);
		d->len = sizeof(d->sin6);
	} else {
		memcpy(&d->ss, ai->ai_addr, ai->ai_addrlen);
		d->len = ai->ai_addrlen;
	}
	freeaddrinfo(ai);
	return 0;
}

static int probe_socket(const struct probe_dst *d, int type)
{
	int fd = socket(d->ss.ss_family, type | SOCK_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

/* Wait for events on fd until the deadline; 0 when ready, -ETIMEDOUT, or -errno. */
static int wait_fd(int fd, short events, long long deadline_ms)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		long long left = deadline_ms - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* connect, send the payload, shut down, wait for the server's close. 0 or -errno. */
static int op_tcp(const struct probe_dst *d, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	int fd, err = 0, soerr = 0;
	socklen_t sl = sizeof(soerr);
	char buf[512];

	fd = probe_socket(d, SOCK_STREAM | SOCK_NONBLOCK);
	if (fd < 0)
		return fd;
	if (connect(fd, (const struct sockaddr *)&d->ss, d->len) < 0) {
		if (errno != EINPROGRESS) {
			err = -errno;
			goto out;
		}
		err = wait_fd(fd, POLLOUT, deadline);
		if (err)
			goto out;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
			err = -errno;
			goto out;
		}
		if (soerr) {
			err = -soerr;
			goto out;
		}
	}
	if (send(fd, PROBE_PAYLOAD, strlen(PROBE_PAYLOAD), MSG_NOSIGNAL) < 0) {
		err = -errno;
		goto out;
	}
	shutdown(fd, SHUT_WR);
	/* Drain until the server closes; a silent server only costs the timeout. */
	while (!wait_fd(fd, POLLIN, deadline)) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			break;
	}
out:
	close(fd);
	return err;
}

static int op_udp_sendto(int fd, const struct probe_dst *d)
{
	if (sendto(fd, PROBE_PAYLOAD, strlen(PROBE_PAYLOAD), 0, (const struct sockaddr *)&d->ss,
		   d->len) < 0)
		return -errno;
	return 0;
}

static int op_udp_sendmsg(int fd, const struct probe_dst *d)
{
	struct iovec iov = {.iov_base = (void *)PROBE_PAYLOAD, .iov_len = strlen(PROBE_PAYLOAD)};
	struct msghdr msg = {
		.msg_name = (void *)&d->ss,
		.msg_namelen = d->len,
		.msg_iov = &iov,
		.msg_iovlen = 1,
	};

	if (sendmsg(fd, &msg, 0) < 0)
		return -errno;
	return 0;
}

/* The common frame of the single-datagram UDP modes. */
static int run_udp_one(const struct probe_args *a, int *failed,
		       int (*op)(int fd, const struct probe_dst *d))
{
	struct probe_dst d;
	long long start;
	int fd, err;

	err = parse_dst(a->argv[0], a->argv[1], a->o.v6, &d);
	if (err)
		return err;
	start = now_ms();
	fd = probe_socket(&d, SOCK_DGRAM);
	err = fd < 0 ? fd : op(fd, &d);
	result_line(stdout, err, start);
	if (err)
		(*failed)++;
	if (fd >= 0)
		close(fd);
	return 0;
}

/* One tcp probe and its result line. */
static void tcp_once(const struct probe_dst *d, int timeout_ms, int *failed)
{
	long long start = now_ms();
	int err = op_tcp(d, timeout_ms);

	result_line(stdout, err, start);
	if (err)
		(*failed)++;
}

static int mode_tcp(const struct probe_args *a, int *failed)
{
	struct probe_dst d;
	int err;

	err = parse_dst(a->argv[0], a->argv[1], a->o.v6, &d);
	if (err)
		return err;
	tcp_once(&d, a->o.timeout_ms, failed);
	return 0;
}

static int mode_udp_sendto(const struct probe_args *a, int *failed)
{
	return run_udp_one(a, failed, op_udp_sendto);
}

static int mode_udp_sendmsg(const struct probe_args *a, int *failed)
{
	return run_udp_one(a, failed, op_udp_sendmsg);
}

static int op_udp_connect(int fd, const struct probe_dst *d)
{
	if (connect(fd, (const struct sockaddr *)&d->ss, d->len) < 0)
		return -errno;
	if (send(fd, PROBE_PAYLOAD, strlen(PROBE_PAYLOAD), 0) < 0)
		return -errno;
	return 0;
}

static int mode_udp_connect(const struct probe_args *a, int *failed)
{
	return run_udp_one(a, failed, op_udp_connect);
}

/*
 * Three datagrams in one sendmmsg(). The kernel stops at the first failing message and reports
 * the count sent so far (or -1 if the first failed), so the remainder is resent until every
 * datagram has its own result.
 */
static int mode_udp_sendmmsg(const struct probe_args *a, int *failed)
{
	static const char *payloads[PROBE_MMSG_COUNT] = {"probe 1\n", "probe 2\n", "probe 3\n"};
	struct iovec iov[PROBE_MMSG_COUNT];
	struct mmsghdr mm[PROBE_MMSG_COUNT];
	struct probe_dst d;
	long long start;
	unsigned int i = 0, k;
	int fd, err;

	err = parse_dst(a->argv[0], a->argv[1], a->o.v6, &d);
	if (err)
		return err;
	memset(mm, 0, sizeof(mm));
	for (k = 0; k < PROBE_MMSG_COUNT; k++) {
		iov[k].iov_base = (void *)payloads[k];
		iov[k].iov_len = strlen(payloads[k]);
		mm[k].msg_hdr.msg_name = &d.ss;
		mm[k].msg_hdr.msg_namelen = d.len;
		mm[k].msg_hdr.msg_iov = &iov[k];
		mm[k].msg_hdr.msg_iovlen = 1;
	}
	start = now_ms();
	fd = probe_socket(&d, SOCK_DGRAM);
	if (fd < 0) {
		for (k = 0; k < PROBE_MMSG_COUNT; k++)
			result_line(stdout, fd, start);
		*failed += PROBE_MMSG_COUNT;
		return 0;
	}
	while (i < PROBE_MMSG_COUNT) {
		int n = sendmmsg(fd, &mm[i], PROBE_MMSG_COUNT - i, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			result_line(stdout, -errno, start);
			(*failed)++;
			i++;
			continue;
		}
		if (n == 0 || (unsigned int)n > PROBE_MMSG_COUNT - i) {
			/* cannot happen; do not loop on it */
			result_line(stdout, -EIO, start);
			(*failed)++;
			i++;
			continue;
		}
		for (k = 0; k < (unsigned int)n; k++)
			result_line(stdout, 0, start);
		i += (unsigned int)n;
	}
	close(fd);
	return 0;
}

static int write_pidfile(const char *path, pid_t pid)
{
	char tmp[PATH_MAX];
	FILE *f;
	int n, err = 0;

	n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	if (fprintf(f, "%d\n", (int)pid) < 0)
		err = -EIO;
	if (fclose(f) == EOF && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* The daemon proper: detached from the command's stdio, probing until killed. */
__attribute__((noreturn)) static void daemon_loop(const struct probe_dst *d, int interval_ms,
						  int timeout_ms, const char *result_path)
{
	struct timespec ts = {
		.tv_sec = interval_ms / 1000,
		.tv_nsec = (long)(interval_ms % 1000) * 1000000L,
	};
	FILE *res = NULL;
	int fd;

	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (result_path)
		res = fopen(result_path, "ae");
	for (;;) {
		long long start = now_ms();
		int err = op_tcp(d, timeout_ms);

		if (res)
			result_line(res, err, start);
		nanosleep(&ts, NULL);
	}
}

static int mode_daemon(const struct probe_args *a, int *failed)
{
	const char *result_path = a->argc > 4 ? a->argv[4] : NULL;
	struct probe_dst d;
	int interval, status, err;
	pid_t mid, pid;

	err = parse_dst(a->argv[0], a->argv[1], a->o.v6, &d);
	if (err)
		return err;
	if (parse_int(a->argv[2], 1, 3600 * 1000, &interval)) {
		fprintf(stderr, "sl_probe: bad interval \"%s\"\n", a->argv[2]);
		return -EINVAL;
	}
	fflush(NULL);
	mid = fork();
	if (mid < 0)
		return -errno;
	if (mid == 0) {
		if (setsid() < 0)
			_exit(1);
		pid = fork();
		if (pid < 0)
			_exit(1);
		if (pid == 0)
			daemon_loop(&d, interval, a->o.timeout_ms, result_path);
		/* The pid file exists before the command's own process returns. */
		if (write_pidfile(a->argv[3], pid)) {
			kill(pid, SIGKILL);
			_exit(1);
		}
		_exit(0);
	}
	while (waitpid(mid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "sl_probe: daemon: could not start or write %s\n", a->argv[3]);
		return -ECHILD;
	}
	result_line(stdout, 0, 0);
	(void)failed;
	return 0;
}

/* The cgroup v2 path of this process ("0::/sluice/x/child"), without the "0::" prefix. */
static int own_cgroup(char *buf, size_t len)
{
	char line[PATH_MAX + 8];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t n;

		if (strncmp(line, "0::", 3))
			continue;
		n = strcspn(line + 3, "\n");
		if (n >= len) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(buf, line + 3, n);
		buf[n] = '\0';
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

static int cgroup_move_to_child(const char *cg_dir)
{
	char path[PATH_MAX], pid[32], now[PATH_MAX];
	size_t plen, nlen;
	int n, fd, err = 0;

	n = snprintf(path, sizeof(path), "%s/child", cg_dir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		err = -errno;
		fprintf(stderr, "sl_probe: mkdir %s: %s\n", path, strerror(-err));
		return err;
	}
	n = snprintf(path, sizeof(path), "%s/child/cgroup.procs", cg_dir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(pid))
		return -EOVERFLOW;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "sl_probe: open %s: %s\n", path, strerror(-err));
		return err;
	}
	if (write(fd, pid, (size_t)n) != n) {
		err = errno ? -errno : -EIO;
		fprintf(stderr, "sl_probe: move to %s: %s\n", path, strerror(-err));
	}
	close(fd);
	if (err)
		return err;
	err = own_cgroup(now, sizeof(now));
	if (err)
		return err;
	/* Must now be in a cgroup whose path ends in "/child". */
	plen = strlen("/child");
	nlen = strlen(now);
	if (nlen < plen || strcmp(now + nlen - plen, "/child")) {
		fprintf(stderr, "sl_probe: still in cgroup %s after the move\n", now);
		return -EIO;
	}
	fprintf(stderr, "sl_probe: cgroup-escape: now in %s\n", now);
	return 0;
}

static int mode_cgroup_escape(const struct probe_args *a, int *failed)
{
	struct probe_dst d;
	int err;

	err = parse_dst(a->argv[1], a->argv[2], a->o.v6, &d);
	if (err)
		return err;
	err = cgroup_move_to_child(a->argv[0]);
	if (err)
		return err;
	tcp_once(&d, a->o.timeout_ms, failed);
	return 0;
}

static const struct probe_mode modes[] = {
	{"tcp", 2, 2, "tcp ADDR PORT", mode_tcp},
	{"udp-sendto", 2, 2, "udp-sendto ADDR PORT", mode_udp_sendto},
	{"udp-sendmsg", 2, 2, "udp-sendmsg ADDR PORT", mode_udp_sendmsg},
	{"udp-sendmmsg", 2, 2, "udp-sendmmsg ADDR PORT", mode_udp_sendmmsg},
	{"udp-connect", 2, 2, "udp-connect ADDR PORT", mode_udp_connect},
	{"daemon", 4, 5, "daemon ADDR PORT INTERVAL_MS PIDFILE [RESULTFILE]", mode_daemon},
	{"cgroup-escape", 3, 3, "cgroup-escape CGROUP_DIR ADDR PORT", mode_cgroup_escape},
};

static void usage(void)
{
	size_t i;

	fprintf(stderr, "usage:\n");
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(stderr, "  sl_probe %s [--v6] [--timeout-ms N]\n", modes[i].usage);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"v6", no_argument, NULL, '6'},
		{"timeout-ms", required_argument, NULL, 't'},
		{NULL, 0, NULL, 0},
	};
	struct probe_args a = {.o = {.timeout_ms = PROBE_DEFAULT_TIMEOUT_MS}};
	const struct probe_mode *m = NULL;
	int c, err, failed = 0;
	size_t i;

	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case '6':
			a.o.v6 = true;
			break;
		case 't':
			if (parse_int(optarg, 1, 600000, &a.o.timeout_ms)) {
				fprintf(stderr, "sl_probe: bad --timeout-ms \"%s\"\n", optarg);
				return 2;
			}
			break;
		default:
			usage();
			return 2;
		}
	}
	if (optind >= argc) {
		usage();
		return 2;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[optind], modes[i].name))
			m = &modes[i];
	a.argv = argv + optind + 1;
	a.argc = argc - optind - 1;
	if (!m || a.argc < m->nargs_min || a.argc > m->nargs_max) {
		usage();
		return 2;
	}
	err = m->run(&a, &failed);
	if (err) {
		fprintf(stderr, "sl_probe: %s: %s\n", m->name, strerror(-err));
		return 2;
	}
	return failed ? 1 : 0;
}
