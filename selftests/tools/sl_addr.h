/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The test tools' "ADDR PORT" arguments: a numeric IPv4 or IPv6 address and a port 1-65535. */
#ifndef SL_ADDR_H
#define SL_ADDR_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int sl_parse_addr(const char *s, const char *port, struct sockaddr_storage *ss,
			 socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char *end;
	long p = strtol(port, &end, 10);

	if (*end || p < 1 || p > 65535)
		return -1;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)p);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*sin6);
		return 0;
	}
	return -1;
}

#endif /* SL_ADDR_H */
