// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_resolve NAME [tcp|udp]: resolve NAME with the C library's getaddrinfo() and print one
 * address per line, or "err EAI_NAME". Built against glibc and, statically, against musl: the
 * two C-library resolvers differ (musl queries every nameserver in parallel, glibc one after another;
 * musl checks that answers come from the server asked), so the run's resolver must satisfy both.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static const char *eai_name(int err)
{
	switch (err) {
	case EAI_NONAME:
		return "EAI_NONAME";
	case EAI_AGAIN:
		return "EAI_AGAIN";
	case EAI_FAIL:
		return "EAI_FAIL";
#ifdef EAI_NODATA
	case EAI_NODATA:
		return "EAI_NODATA";
#endif
	}
	return "EAI_OTHER";
}

int main(int argc, char **argv)
{
	struct addrinfo hints, *res = NULL, *ai;
	char buf[INET6_ADDRSTRLEN];
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s NAME\n", argv[0]);
		return 2;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	err = getaddrinfo(argv[1], NULL, &hints, &res);
	if (err) {
		printf("err %s\n", eai_name(err));
		return 1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		const void *a = ai->ai_family == AF_INET ?
					(const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr :
					(const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;

		if (inet_ntop(ai->ai_family, a, buf, sizeof(buf)))
			printf("%s\n", buf);
	}
	freeaddrinfo(res);
	return 0;
}
