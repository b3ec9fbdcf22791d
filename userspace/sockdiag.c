// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "netlink.h"
#include "sockdiag.h"

int sockdiag_open(void)
{
	struct timeval tv = { .tv_sec = 1 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0)
		return -errno;
	/* A lookup must never hold a resolver worker for long. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static uint64_t cookie_of(const struct inet_diag_sockid *id)
{
	return (uint64_t)id->idiag_cookie[0] | ((uint64_t)id->idiag_cookie[1] << 32);
}

static void put_endpoint(const struct sockaddr_storage *ss, __be16 *port, __be32 addr[4])
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		*port = sin->sin_port;
		addr[0] = sin->sin_addr.s_addr;
	} else {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		*port = sin6->sin6_port;
		memcpy(addr, &sin6->sin6_addr, 16);
	}
}

int sockdiag_cookie(int fd, int protocol, const struct sockaddr_storage *client,
		    const struct sockaddr_storage *server, uint64_t *cookie)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr nlh;
		char buf[8192];
	} resp;
	static __u32 seq; /* callers serialise on one socket */
	const struct sockaddr_storage *src, *dst;
	struct inet_diag_msg *msg;
	ssize_t n;

	if (client->ss_family != server->ss_family ||
	    (client->ss_family != AF_INET && client->ss_family != AF_INET6))
		return -EAFNOSUPPORT;
	/*
	 * The kernel's exact lookups read the id differently: TCP finds the socket whose local end
	 * is idiag_src; UDP swaps them ("for historical reasons", udp_diag.c) and finds the socket
	 * whose local end is idiag_dst.
	 */
	src = protocol == IPPROTO_TCP ? client : server;
	dst = protocol == IPPROTO_TCP ? server : client;

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (__u8)client->ss_family;
	req.r.sdiag_protocol = (__u8)protocol;
	req.r.idiag_states = ~0U;
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	put_endpoint(src, &req.r.id.idiag_sport, req.r.id.idiag_src);
	put_endpoint(dst, &req.r.id.idiag_dport, req.r.id.idiag_dst);

	/* A reply that arrives after its request timed out must not answer the next request. */
	req.nlh.nlmsg_seq = ++seq;
	if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		return -errno;
	do {
		n = recv(fd, &resp, sizeof(resp), 0);
		if (n < 0)
			return -errno;
		if ((size_t)n < sizeof(struct nlmsghdr) || resp.nlh.nlmsg_len > (size_t)n)
			return -EBADMSG;
	} while (resp.nlh.nlmsg_seq != req.nlh.nlmsg_seq);
	if (resp.nlh.nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(&resp.nlh);

		if (resp.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
			return -EBADMSG;
		return e->error ? e->error : -ENOENT;
	}
	if (resp.nlh.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    resp.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(*msg)))
		return -EBADMSG;
	msg = NLMSG_DATA(&resp.nlh);
	*cookie = cookie_of(&msg->id);
	return 0;
}

struct tcp_find {
	uint64_t cookie;
	struct inet_diag_sockid *id;
	bool found;
};

static int on_tcp(const struct nlmsghdr *h, void *ctx)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	struct tcp_find *f = ctx;

	if (f->found || h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return 0;
	if (cookie_of(&m->id) == f->cookie) {
		*f->id = m->id;
		f->found = true;
	}
	return 0;
}

/* One TCP dump of a family: the id of the socket whose cookie is this one (1), or 0, or -errno. */
static int find_tcp(int fd, __u8 family, uint64_t cookie, __u32 seq, struct inet_diag_sockid *id)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = seq },
		.r = { .sdiag_family = family, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0U },
	};
	struct tcp_find f = { .cookie = cookie, .id = id };
	int err = nl_dump(fd, &req.nlh, on_tcp, &f);

	return err ? err : f.found;
}

int sockdiag_destroy(int fd, uint8_t family, uint8_t protocol, const struct inet_diag_sockid *id)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DESTROY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = 3 },
		.r = { .sdiag_family = family, .sdiag_protocol = protocol, .idiag_states = ~0U,
		       .id = *id },
	};
	union {
		struct nlmsghdr nlh;
		char buf[1024];
	} resp;
	ssize_t n;

	if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		return -errno;
	do {
		n = recv(fd, &resp, sizeof(resp), 0);
		if (n < 0)
			return -errno;
	} while ((size_t)n >= sizeof(struct nlmsghdr) && resp.nlh.nlmsg_seq != req.nlh.nlmsg_seq);
	if ((size_t)n < NLMSG_LENGTH(sizeof(struct nlmsgerr)) || resp.nlh.nlmsg_type != NLMSG_ERROR)
		return -EBADMSG;
	return ((const struct nlmsgerr *)NLMSG_DATA(&resp.nlh))->error;
}

int sockdiag_destroy_tcp(uint64_t cookie)
{
	static const __u8 families[] = { AF_INET, AF_INET6 };
	struct inet_diag_sockid id;
	int fd = sockdiag_open(), err = 0;
	__u8 family = 0;
	size_t i;

	if (fd < 0)
		return fd;
	for (i = 0, err = 0; !err && i < sizeof(families); i++) {
		err = find_tcp(fd, families[i], cookie, (__u32)(i + 1), &id);
		if (err == 1)
			family = families[i];
	}
	/* a dump that fails with ENOENT: the kernel has no TCP sock_diag (tcp_diag) */
	if (err <= 0)
		err = !err ? -ENOENT : err == -ENOENT ? -EOPNOTSUPP : err;
	else
		/* the exact lookup of SOCK_DESTROY: the dump's id, its cookie checked by the kernel */
		err = sockdiag_destroy(fd, family, IPPROTO_TCP, &id);
	close(fd);
	return err;
}
