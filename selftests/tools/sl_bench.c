// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_bench: the load generator of make bench (selftests/bench.sh).
 *
 *   sl_bench serve PORT                 accept TCP connections on [::]:PORT; read each to EOF
 *   sl_bench spin PORT                  accept TCP connections on [::]:PORT and close them, in a
 *                                       busy loop on a non-blocking socket: the server never
 *                                       sleeps, so no wake-up of it blurs a client's figures
 *   sl_bench connect ADDR PORT N [SPREAD]
 *                                       N connect()s one after another; prints the latency of
 *                                       each connect() call and of its close(), in ns, one pair
 *                                       per line. SPREAD > 1 (IPv4): the i-th goes to ADDR +
 *                                       i % SPREAD, so lookups end at many different prefixes
 *   sl_bench proxy PADDR PPORT ADDR PORT N [SPREAD]
 *                                       as connect, each through the HTTP proxy at PADDR:PPORT
 *                                       (CONNECT ADDR:PORT, up to its reply's blank line)
 *   sl_bench stream ADDR PORT SECONDS   send as fast as possible on one connection; prints
 *                                       "bytes SECONDS_NS"
 *   sl_bench packets ADDR PORT N SIZE   N writes of SIZE bytes on one connection with TCP_NODELAY
 *                                       (a packet each, unless the stack merges some); prints
 *                                       "N ELAPSED_NS"
 *   sl_bench udpflood ADDR PORT N [PER_SECOND]
 *                                       N datagrams, each from a new socket (so each is a new
 *                                       allow record), at most PER_SECOND a second if given;
 *                                       prints "N ELAPSED_NS"
 *
 * ADDR is a numeric IPv4 or IPv6 address. Exit status 0, or 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sl_addr.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *drain(void *arg)
{
	int fd = (int)(intptr_t)arg;
	static char buf[1 << 16];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return NULL;
}

static int serve(const char *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	int fd = socket(AF_INET6, SOCK_STREAM, 0), one = 1, zero = 0;

	a.sin6_port = htons((uint16_t)atoi(port));
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4096)) {
		perror("serve");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pthread_t t;
		int c = accept(fd, NULL, NULL);

		if (c < 0)
			continue;
		if (pthread_create(&t, NULL, drain, (void *)(intptr_t)c))
			close(c);
		else
			pthread_detach(t);
	}
}

static int spin(const char *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1, zero = 0;

	a.sin6_port = htons((uint16_t)atoi(port));
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4096)) {
		perror("spin");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK);

		if (c >= 0)
			close(c);
	}
}

/* The i-th destination: ADDR + i % spread (IPv4), so that a spread run visits many prefixes. */
static void dest_of(struct sockaddr_storage *dst, const struct sockaddr_storage *ss, long i,
		    long spread)
{
	*dst = *ss;
	if (spread > 1 && ss->ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)dst;

		in->sin_addr.s_addr = htonl(ntohl(in->sin_addr.s_addr) + (uint32_t)(i % spread));
	}
}

/* CONNECT to dst through the proxy already connected on fd; 0 once its reply said 200. */
static int proxy_connect(int fd, const struct sockaddr_storage *dst)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)dst;
	char req[128], addr[INET_ADDRSTRLEN], buf[512];
	size_t got = 0;
	int n;

	if (!inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr)))
		return -1;
	n = snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", addr,
		     ntohs(in->sin_port), addr, ntohs(in->sin_port));
	if (write(fd, req, (size_t)n) != n)
		return -1;
	while (got < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			return strncmp(buf + 8, " 200", 4) ? -1 : 0;
	}
	return -1;
}

/*
 * connect() (and, through a proxy, the CONNECT exchange) and close(), each timed. proxy: NULL,
 * or the proxy's address, which every socket connects to instead of the destination.
 */
static int bench_connect(const struct sockaddr_storage *ss, socklen_t len, long n, long spread,
			 const struct sockaddr_storage *proxy)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	long i;

	for (i = 0; i < n; i++) {
		struct sockaddr_storage dst;
		int fd = socket(ss->ss_family, SOCK_STREAM, 0);
		int64_t t0, t1, t2;

		if (fd < 0) {
			perror("socket");
			return 2;
		}
		dest_of(&dst, ss, i, spread);
		t0 = now_ns();
		if (connect(fd, (struct sockaddr *)(proxy ? proxy : &dst), len)) {
			perror("connect");
			return 2;
		}
		if (proxy && proxy_connect(fd, &dst)) {
			fprintf(stderr, "proxy: CONNECT refused or failed\n");
			return 2;
		}
		t1 = now_ns();
		/* a reset, not a FIN: no TIME_WAIT pile-up skews the later connects */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
		t2 = now_ns();
		printf("%lld %lld\n", (long long)(t1 - t0), (long long)(t2 - t1));
	}
	return 0;
}

static int bench_stream(struct sockaddr_storage *ss, socklen_t len, double secs)
{
	static char buf[1 << 16];
	int fd = socket(ss->ss_family, SOCK_STREAM, 0);
	int64_t t0, end;
	long long bytes = 0;

	if (fd < 0 || connect(fd, (struct sockaddr *)ss, len)) {
		perror("stream");
		return 2;
	}
	t0 = now_ns();
	end = t0 + (int64_t)(secs * 1e9);
	while (now_ns() < end) {
		ssize_t w = write(fd, buf, sizeof(buf));

		if (w < 0) {
			perror("write");
			return 2;
		}
		bytes += w;
	}
	printf("%lld %lld\n", bytes, (long long)(now_ns() - t0));
	close(fd);
	return 0;
}

/* Many small packets of one established flow: what a program per packet costs (make bench). */
static int bench_packets(struct sockaddr_storage *ss, socklen_t len, long n, long size)
{
	static char buf[1 << 16];
	int fd = socket(ss->ss_family, SOCK_STREAM, 0), one = 1;
	int64_t t0;
	long i;

	if (size < 1 || size > (long)sizeof(buf) || fd < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    connect(fd, (struct sockaddr *)ss, len)) {
		perror("packets");
		return 2;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		if (write(fd, buf, (size_t)size) != size) {
			perror("write");
			return 2;
		}
	}
	printf("%ld %lld\n", n, (long long)(now_ns() - t0));
	close(fd);
	return 0;
}

/* rate > 0: paced at rate datagrams per second (from the start, so a late one is not owed). */
static int bench_udpflood(struct sockaddr_storage *ss, socklen_t len, long n, long rate)
{
	int64_t t0 = now_ns();
	long i;

	for (i = 0; i < n; i++) {
		int fd;

		if (rate > 0) {
			int64_t due = t0 + (int64_t)((double)i * 1e9 / (double)rate), left;

			while ((left = due - now_ns()) > 0) {
				struct timespec ts = { 0, left > 50000 ? left - 20000 : 0 };

				if (ts.tv_nsec)
					nanosleep(&ts, NULL);
			}
		}
		fd = socket(ss->ss_family, SOCK_DGRAM, 0);

		if (fd < 0 || sendto(fd, "x", 1, 0, (struct sockaddr *)ss, len) != 1) {
			perror("udpflood");
			return 2;
		}
		close(fd);
	}
	printf("%ld %lld\n", n, (long long)(now_ns() - t0));
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;

	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "spin"))
		return spin(argv[2]);
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "proxy")) {
		struct sockaddr_storage px;
		socklen_t plen;

		if (!sl_parse_addr(argv[2], argv[3], &px, &plen) &&
		    !sl_parse_addr(argv[4], argv[5], &ss, &len) && px.ss_family == AF_INET &&
		    ss.ss_family == AF_INET)
			return bench_connect(&ss, len, atol(argv[6]), argc == 8 ? atol(argv[7]) : 1,
					     &px);
	}
	if (argc == 6 && !strcmp(argv[1], "connect") && !sl_parse_addr(argv[2], argv[3], &ss, &len))
		return bench_connect(&ss, len, atol(argv[4]), atol(argv[5]), NULL);
	if (argc == 6 && !strcmp(argv[1], "packets") && !sl_parse_addr(argv[2], argv[3], &ss, &len))
		return bench_packets(&ss, len, atol(argv[4]), atol(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "udpflood") && !sl_parse_addr(argv[2], argv[3], &ss, &len))
		return bench_udpflood(&ss, len, atol(argv[4]), atol(argv[5]));
	if (argc == 5 && !sl_parse_addr(argv[2], argv[3], &ss, &len)) {
		if (!strcmp(argv[1], "connect"))
			return bench_connect(&ss, len, atol(argv[4]), 1, NULL);
		if (!strcmp(argv[1], "stream"))
			return bench_stream(&ss, len, atof(argv[4]));
		if (!strcmp(argv[1], "udpflood"))
			return bench_udpflood(&ss, len, atol(argv[4]), 0);
	}
	fprintf(stderr, "usage: sl_bench serve PORT | spin PORT | connect ADDR PORT N [SPREAD]"
			 " | proxy PADDR PPORT ADDR PORT N [SPREAD] | stream ADDR PORT SECONDS"
			" | packets ADDR PORT N SIZE"
			" | udpflood ADDR PORT N [PER_SECOND]\n");
	return 2;
}
