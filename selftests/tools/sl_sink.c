// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_sink: the receiving test host of the selftest topology.
 *
 *   sl_sink --log FILE --pidfile FILE [--tcp PORT[,PORT…]] [--udp PORT[,PORT…]] [--reply]
 *
 * Listens on [::]:PORT (dual stack, free bind, so it receives for every address the netns owns)
 * and writes one line per observation to the log, flushed at once because tests read it while
 * the sink runs:
 *
 *   tcp-accept DST DPORT SRC         when a TCP connection is accepted
 *   tcp DST DPORT SRC BYTES          when it closes; BYTES = bytes received
 *   udp DST DPORT SRC BYTES          for every datagram
 *
 * DST is the address the peer connected/sent to (getsockname, or the datagram's packet info);
 * v4-mapped addresses are written as plain IPv4. The close line is written before the socket is
 * closed, so a client that waits for the sink's EOF knows its line is in the log.
 *
 * With --reply, TCP answers the first chunk with a tiny HTTP/1.0 response (enough for curl) and
 * UDP echoes each datagram from the address it was sent to.
 *
 * The pid file is created (atomically) only once every socket is bound and listening: tests wait
 * for it. SIGTERM/SIGINT end the sink cleanly; open connections are logged as closed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SINK_MAX_PORTS 16
#define SINK_BACKLOG 128
#define SINK_BUF_SIZE 65536

static const char sink_http_reply[] = "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n";

static volatile sig_atomic_t sink_stop;

enum sink_kind {
	SINK_TCP_LISTEN,
	SINK_TCP_CONN,
	SINK_UDP,
};

struct sink_sock {
	int fd;
	enum sink_kind kind;
	unsigned int dport; /* local port */
	/* SINK_TCP_CONN only */
	char dst[INET6_ADDRSTRLEN];
	char src[INET6_ADDRSTRLEN];
	unsigned long long bytes;
	bool replied;
};

struct sink_ports {
	unsigned short port[SINK_MAX_PORTS];
	size_t n;
};

struct sink {
	FILE *log;
	bool reply;
	struct sink_sock *socks;
	size_t n_socks;
	size_t cap_socks;
	struct pollfd *pfds; /* cap_socks entries, rebuilt for each poll */
	unsigned char *buf;
};

static void sink_on_signal(int sig)
{
	(void)sig;
	sink_stop = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: sl_sink --log FILE --pidfile FILE [--tcp PORT[,PORT...]] "
			"[--udp PORT[,PORT...]] [--reply]\n");
}

/* "80,443,8080" → ports; every element must be a decimal 1-65535. */
static int parse_ports(const char *s, struct sink_ports *out)
{
	const char *p = s;

	if (!*p)
		return -EINVAL;
	for (;;) {
		unsigned long v;
		char *end;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v == 0 || v > 65535)
			return -EINVAL;
		if (out->n >= SINK_MAX_PORTS)
			return -E2BIG;
		out->port[out->n++] = (unsigned short)v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

/* Text form of an address; v4-mapped IPv6 is written as plain IPv4. */
static int addr_text(const struct sockaddr_storage *ss, char *buf, size_t len, unsigned int *port)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	const void *a;
	int af;

	switch (ss->ss_family) {
	case AF_INET:
		af = AF_INET;
		a = &sin->sin_addr;
		if (port)
			*port = ntohs(sin->sin_port);
		break;
	case AF_INET6:
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			af = AF_INET;
			a = &sin6->sin6_addr.s6_addr[12];
		} else {
			af = AF_INET6;
			a = &sin6->sin6_addr;
		}
		if (port)
			*port = ntohs(sin6->sin6_port);
		break;
	default:
		return -EAFNOSUPPORT;
	}
	if (!inet_ntop(af, a, buf, (socklen_t)len))
		return -errno;
	return 0;
}

static int sink_logf(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int sink_logf(struct sink *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vfprintf(s->log, fmt, ap);
	va_end(ap);
	if (n < 0 || fflush(s->log) == EOF) {
		fprintf(stderr, "sl_sink: write log: %s\n", strerror(errno));
		return -EIO;
	}
	return 0;
}

static int sink_add(struct sink *s, const struct sink_sock *ss)
{
	if (s->n_socks == s->cap_socks) {
		size_t cap = s->cap_socks ? s->cap_socks * 2 : 32;
		struct sink_sock *n;
		struct pollfd *p;

		if (cap > SIZE_MAX / sizeof(*n) || cap > SIZE_MAX / sizeof(*p))
			return -ENOMEM;
		n = realloc(s->socks, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->socks = n;
		p = realloc(s->pfds, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->pfds = p;
		s->cap_socks = cap;
	}
	s->socks[s->n_socks++] = *ss;
	return 0;
}

/* Remove entry i; the last entry takes its place. */
static void sink_del(struct sink *s, size_t i)
{
	close(s->socks[i].fd);
	s->socks[i] = s->socks[--s->n_socks];
}

static int set_opt(int fd, int level, int name, const char *what)
{
	int one = 1;

	if (setsockopt(fd, level, name, &one, sizeof(one)) < 0) {
		int err = -errno;

		fprintf(stderr, "sl_sink: setsockopt %s: %s\n", what, strerror(-err));
		return err;
	}
	return 0;
}

static int sink_listen(struct sink *s, int type, unsigned short port)
{
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(port),
		.sin6_addr = IN6ADDR_ANY_INIT,
	};
	struct sink_sock ss = {.fd = -1};
	int zero = 0;
	int fd, err;

	fd = socket(AF_INET6, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "sl_sink: socket: %s\n", strerror(-err));
		return err;
	}
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0) {
		err = -errno;
		fprintf(stderr, "sl_sink: setsockopt IPV6_V6ONLY: %s\n", strerror(-err));
		goto err_close;
	}
	err = set_opt(fd, SOL_SOCKET, SO_REUSEADDR, "SO_REUSEADDR");
	if (!err)
		err = set_opt(fd, IPPROTO_IP, IP_FREEBIND, "IP_FREEBIND");
	if (!err)
		err = set_opt(fd, IPPROTO_IPV6, IPV6_FREEBIND, "IPV6_FREEBIND");
	if (!err && type == SOCK_DGRAM)
		err = set_opt(fd, IPPROTO_IP, IP_PKTINFO, "IP_PKTINFO");
	if (!err && type == SOCK_DGRAM)
		err = set_opt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, "IPV6_RECVPKTINFO");
	if (err)
		goto err_close;
	if (bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) < 0) {
		err = -errno;
		fprintf(stderr, "sl_sink: bind [::]:%u/%s: %s\n", port,
			type == SOCK_STREAM ? "tcp" : "udp", strerror(-err));
		goto err_close;
	}
	if (type == SOCK_STREAM && listen(fd, SINK_BACKLOG) < 0) {
		err = -errno;
		fprintf(stderr, "sl_sink: listen [::]:%u: %s\n", port, strerror(-err));
		goto err_close;
	}
	ss.fd = fd;
	ss.dport = port;
	ss.kind = type == SOCK_STREAM ? SINK_TCP_LISTEN : SINK_UDP;
	err = sink_add(s, &ss);
	if (err)
		goto err_close;
	return 0;

err_close:
	close(fd);
	return err;
}

static int sink_accept(struct sink *s, int lfd)
{
	for (;;) {
		struct sockaddr_storage peer, local;
		socklen_t plen = sizeof(peer), llen = sizeof(local);
		struct sink_sock c = {.kind = SINK_TCP_CONN};
		int fd, err;

		fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
			    errno == ECONNABORTED)
				return 0;
			err = -errno;
			fprintf(stderr, "sl_sink: accept: %s\n", strerror(-err));
			return err;
		}
		c.fd = fd;
		if (plen > sizeof(peer) || getsockname(fd, (struct sockaddr *)&local, &llen) < 0 ||
		    llen > sizeof(local)) {
			fprintf(stderr, "sl_sink: getsockname/peer address: bad length or error\n");
			close(fd);
			continue;
		}
		if (addr_text(&local, c.dst, sizeof(c.dst), &c.dport) ||
		    addr_text(&peer, c.src, sizeof(c.src), NULL)) {
			fprintf(stderr, "sl_sink: cannot format a TCP peer address\n");
			close(fd);
			continue;
		}
		err = sink_add(s, &c);
		if (err) {
			fprintf(stderr, "sl_sink: too many connections: %s\n", strerror(-err));
			close(fd);
			return err;
		}
		err = sink_logf(s, "tcp-accept %s %u %s\n", c.dst, c.dport, c.src);
		if (err)
			return err;
	}
}

/* Read what is there. Returns 1 when the connection is finished (logged, to be closed). */
static int sink_conn_read(struct sink *s, struct sink_sock *c)
{
	for (;;) {
		ssize_t n = read(c->fd, s->buf, SINK_BUF_SIZE);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			break; /* ECONNRESET and friends: the connection is over */
		}
		if (n == 0)
			break;
		c->bytes += (unsigned long long)n;
		if (s->reply && !c->replied) {
			ssize_t w = send(c->fd, sink_http_reply, sizeof(sink_http_reply) - 1,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w != (ssize_t)(sizeof(sink_http_reply) - 1))
				fprintf(stderr, "sl_sink: short reply to %s\n", c->src);
			c->replied = true;
		}
	}
	if (sink_logf(s, "tcp %s %u %s %llu\n", c->dst, c->dport, c->src, c->bytes))
		return -EIO;
	return 1;
}

/* A datagram's destination, from IPV6_PKTINFO (v4 traffic arrives v4-mapped) or IP_PKTINFO. */
struct sink_dgram_dst {
	union { /* a union, so the family stores below alias addr.ss.ss_family */
		struct sockaddr_storage ss; /* ss_family AF_UNSPEC if unknown */
		struct sockaddr_in sin;
		struct sockaddr_in6 sin6;
	} addr;
	struct in6_pktinfo pi6;
	bool have_pi6;
};

static void udp_dst_from_cmsg(struct msghdr *msg, struct sink_dgram_dst *dd)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(dd->pi6))) {
			memcpy(&dd->pi6, CMSG_DATA(cm), sizeof(dd->pi6));
			dd->have_pi6 = true;
			dd->addr.sin6.sin6_family = AF_INET6;
			dd->addr.sin6.sin6_addr = dd->pi6.ipi6_addr;
		} else if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO &&
			   cm->cmsg_len >= CMSG_LEN(sizeof(struct in_pktinfo)) && !dd->have_pi6) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			dd->addr.sin.sin_family = AF_INET;
			dd->addr.sin.sin_addr = pi.ipi_addr;
		}
	}
}

/* Echo a datagram back, from the address it was sent to. */
static void udp_echo(int fd, const struct sockaddr_storage *peer, socklen_t plen, const void *data,
		     size_t len, const struct sink_dgram_dst *dd, const char *peer_text)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
	struct msghdr r = {
		.msg_name = (void *)peer,
		.msg_namelen = plen,
		.msg_iov = &iov,
		.msg_iovlen = 1,
	};

	if (dd->have_pi6) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		r.msg_control = ctl.buf;
		r.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&r);
		cm->cmsg_level = IPPROTO_IPV6;
		cm->cmsg_type = IPV6_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(dd->pi6));
		memcpy(CMSG_DATA(cm), &dd->pi6, sizeof(dd->pi6));
	}
	if (sendmsg(fd, &r, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		fprintf(stderr, "sl_sink: echo to %s: %s\n", peer_text, strerror(errno));
}

static int sink_udp_read(struct sink *s, int fd, unsigned int dport)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) +
				 CMSG_SPACE(sizeof(struct in_pktinfo))];
			struct cmsghdr align;
		} ctl;
		struct sockaddr_storage peer;
		struct iovec iov = {.iov_base = s->buf, .iov_len = SINK_BUF_SIZE};
		struct msghdr msg = {
			.msg_name = &peer,
			.msg_namelen = sizeof(peer),
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		struct sink_dgram_dst dd = {.have_pi6 = false};
		char dtext[INET6_ADDRSTRLEN], stext[INET6_ADDRSTRLEN];
		ssize_t n;

		n = recvmsg(fd, &msg, MSG_TRUNC);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			fprintf(stderr, "sl_sink: recvmsg: %s\n", strerror(errno));
			return 0;
		}
		if (msg.msg_namelen > sizeof(peer) || addr_text(&peer, stext, sizeof(stext), NULL))
			continue;
		dd.addr.ss.ss_family = AF_UNSPEC;
		udp_dst_from_cmsg(&msg, &dd);
		if (dd.addr.ss.ss_family == AF_UNSPEC ||
		    addr_text(&dd.addr.ss, dtext, sizeof(dtext), NULL))
			strcpy(dtext, "?");
		if (sink_logf(s, "udp %s %u %s %zd\n", dtext, dport, stext, n))
			return -EIO;
		if (s->reply)
			udp_echo(fd, &peer, msg.msg_namelen, s->buf,
				 (size_t)n < SINK_BUF_SIZE ? (size_t)n : SINK_BUF_SIZE, &dd, stext);
	}
}

/* Write the pid to path atomically: tests treat the file's existence as "ready". */
static int write_pidfile(const char *path)
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
	if (fprintf(f, "%d\n", (int)getpid()) < 0)
		err = -EIO;
	if (fclose(f) == EOF && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static int sink_loop(struct sink *s, const sigset_t *waitmask)
{
	while (!sink_stop) {
		size_t i, n = s->n_socks;
		int r;

		for (i = 0; i < n; i++) {
			s->pfds[i].fd = s->socks[i].fd;
			s->pfds[i].events = POLLIN;
			s->pfds[i].revents = 0;
		}
		r = ppoll(s->pfds, n, NULL, waitmask);
		if (r < 0) {
			r = -errno;
			if (r == -EINTR)
				continue;
			fprintf(stderr, "sl_sink: poll: %s\n", strerror(-r));
			return r;
		}
		/*
		 * Walk backwards: sink_del() moves the last entry into the freed slot, and entries
		 * appended by accept (index >= n) are not in this round's pollfd set.
		 */
		for (i = n; i-- > 0;) {
			short re = s->pfds[i].revents;
			int err = 0;

			if (!re)
				continue;
			switch (s->socks[i].kind) {
			case SINK_TCP_LISTEN:
				err = sink_accept(s, s->socks[i].fd);
				break;
			case SINK_UDP:
				err = sink_udp_read(s, s->socks[i].fd, s->socks[i].dport);
				break;
			case SINK_TCP_CONN:
				err = sink_conn_read(s, &s->socks[i]);
				if (err == 1) {
					sink_del(s, i);
					err = 0;
				}
				break;
			}
			if (err == -EIO)
				return err;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sink s = {.log = NULL};
	struct sink_ports tcp = {.n = 0}, udp = {.n = 0};
	const char *log_path = NULL, *pid_path = NULL;
	struct sigaction sa = {.sa_handler = sink_on_signal};
	sigset_t block, waitmask;
	int err = 0, i;
	size_t k;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--reply")) {
			s.reply = true;
			continue;
		}
		if (!v) {
			usage();
			return 2;
		}
		if (!strcmp(a, "--log"))
			log_path = v;
		else if (!strcmp(a, "--pidfile"))
			pid_path = v;
		else if (!strcmp(a, "--tcp"))
			err = parse_ports(v, &tcp);
		else if (!strcmp(a, "--udp"))
			err = parse_ports(v, &udp);
		else
			err = -EINVAL;
		if (err) {
			fprintf(stderr, "sl_sink: bad argument %s %s\n", a, v);
			usage();
			return 2;
		}
		i++;
	}
	if (!log_path || !pid_path || (!tcp.n && !udp.n)) {
		usage();
		return 2;
	}

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	if (sigprocmask(SIG_BLOCK, &block, &waitmask) < 0)
		return 1;
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);

	s.log = fopen(log_path, "ae");
	if (!s.log) {
		fprintf(stderr, "sl_sink: open %s: %s\n", log_path, strerror(errno));
		return 1;
	}
	s.buf = malloc(SINK_BUF_SIZE);
	if (!s.buf) {
		err = -ENOMEM;
		goto out;
	}
	for (k = 0; k < tcp.n && !err; k++)
		err = sink_listen(&s, SOCK_STREAM, tcp.port[k]);
	for (k = 0; k < udp.n && !err; k++)
		err = sink_listen(&s, SOCK_DGRAM, udp.port[k]);
	if (err)
		goto out;
	err = write_pidfile(pid_path);
	if (err) {
		fprintf(stderr, "sl_sink: write %s: %s\n", pid_path, strerror(-err));
		goto out;
	}

	err = sink_loop(&s, &waitmask);

	/* Connections still open at shutdown are logged as closed with what they sent. */
	for (k = 0; k < s.n_socks; k++) {
		struct sink_sock *c = &s.socks[k];

		if (c->kind == SINK_TCP_CONN)
			sink_logf(&s, "tcp %s %u %s %llu\n", c->dst, c->dport, c->src, c->bytes);
	}
out:
	while (s.n_socks)
		sink_del(&s, s.n_socks - 1);
	free(s.socks);
	free(s.pfds);
	free(s.buf);
	fclose(s.log);
	return err ? 1 : 0;
}
