// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <sys/socket.h>

#include "netlink.h"

#define NL_BUF 32768

int nl_send(int fd, const struct nlmsghdr *nlh)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	if (sendto(fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}

int nl_dump(int fd, const struct nlmsghdr *nlh, int (*fn)(const struct nlmsghdr *h, void *ctx),
	    void *ctx)
{
	/* on the caller's stack: the resolver and the records thread may dump at once */
	char buf[NL_BUF] __attribute__((aligned(4)));
	int err = nl_send(fd, nlh);

	if (err)
		return err;
	for (;;) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (len < 0)
			return -errno;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != nlh->nlmsg_seq)
				continue;
			/* the set changed while it was dumped: the answer may have missed some */
			if (h->nlmsg_flags & NLM_F_DUMP_INTR)
				return -EINTR;
			if (h->nlmsg_type == NLMSG_DONE) {
				/* a dump that failed part-way says so in its DONE */
				if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) &&
				    *(const int *)NLMSG_DATA(h) < 0)
					return *(const int *)NLMSG_DATA(h);
				return 0;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EBADMSG;
				return e->error ? e->error : -EPROTO;
			}
			err = fn(h, ctx);
			if (err)
				return err;
		}
	}
}
