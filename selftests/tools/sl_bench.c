// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_bench: the load generator of make bench (selftests/bench.sh).
 *
 *   sl_bench serve PORT                 accept TCP connections on [::]:PORT; read each to EOF
 *   sl_bench connect ADDR PORT N        N connect()s one after another; prints the latency of
 *                                       each connect() call, in ns, one per line
 *   sl_bench stream ADDR PORT SECONDS   send as fast as possible on one connection; prints
 *                                       "bytes SECONDS_NS"
 *   sl_bench udpflood ADDR PORT N       N datagrams, each from a new socket (so each is a new
 *                                       allow record); prints "N ELAPSED_NS"
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

static int bench_connect(struct sockaddr_storage *ss, socklen_t len, long n)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	long i;

	for (i = 0; i < n; i++) {
		int fd = socket(ss->ss_family, SOCK_STREAM, 0);
		int64_t t0, t1;

		if (fd < 0) {
			perror("socket");
			return 2;
		}
		t0 = now_ns();
		if (connect(fd, (struct sockaddr *)ss, len)) {
			perror("connect");
			return 2;
		}
		t1 = now_ns();
		printf("%lld\n", (long long)(t1 - t0));
		/* a reset, not a FIN: no TIME_WAIT pile-up skews the later connects */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
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

static int bench_udpflood(struct sockaddr_storage *ss, socklen_t len, long n)
{
	int64_t t0 = now_ns();
	long i;

	for (i = 0; i < n; i++) {
		int fd = socket(ss->ss_family, SOCK_DGRAM, 0);

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
	if (argc == 5 && !sl_parse_addr(argv[2], argv[3], &ss, &len)) {
		if (!strcmp(argv[1], "connect"))
			return bench_connect(&ss, len, atol(argv[4]));
		if (!strcmp(argv[1], "stream"))
			return bench_stream(&ss, len, atof(argv[4]));
		if (!strcmp(argv[1], "udpflood"))
			return bench_udpflood(&ss, len, atol(argv[4]));
	}
	fprintf(stderr, "usage: sl_bench serve PORT | connect ADDR PORT N | stream ADDR PORT SECONDS"
			" | udpflood ADDR PORT N\n");
	return 2;
}
