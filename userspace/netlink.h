/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The netlink request/answer loop that rtnetlink (netdev: veths, tc filters) and sock_diag
 * (sockdiag: finding a socket to destroy) share: send a request, read its answer message by
 * message until NLMSG_DONE or an error.
 */
#ifndef SLUICE_NETLINK_H
#define SLUICE_NETLINK_H

#include <linux/netlink.h>

/* Send nlh (nlmsg_len and nlmsg_seq set) to the kernel. 0 or -errno. */
int nl_send(int fd, const struct nlmsghdr *nlh);

/*
 * Send the dump request nlh, then call fn for each message of its answer (messages of another
 * seq are skipped: a late answer to an earlier request). Returns 0 at NLMSG_DONE, the kernel's
 * error, or fn's first non-zero return (the rest of the answer is then left unread: close fd).
 */
int nl_dump(int fd, const struct nlmsghdr *nlh, int (*fn)(const struct nlmsghdr *h, void *ctx),
	    void *ctx);

#endif /* SLUICE_NETLINK_H */
