// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_uring: connect() and sendmsg() through io_uring (P11), which enters the kernel's socket
 * code without the connect()/sendmsg() system calls.
 *
 *   sl_uring connect ADDR PORT     TCP connect, then "probe\n" with a plain send, then close
 *   sl_uring sendmsg ADDR PORT     one UDP datagram from an unconnected socket (msg_name set)
 *
 * ADDR is a numeric IPv4 or IPv6 address. Prints one line: "ok", or "err ERRNO_NAME" for the
 * io_uring operation's result. Exit status 0 ok, 1 the operation failed, 2 usage or setup error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sl_addr.h"

/* Submit the one prepared operation and return its result (negative errno on failure). */
static int run_one(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int res, err;

	err = io_uring_submit(ring);
	if (err < 0)
		return err;
	err = io_uring_wait_cqe(ring, &cqe);
	if (err < 0)
		return err;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct msghdr msg = {};
	struct iovec iov = { .iov_base = "probe\n", .iov_len = 6 };
	socklen_t len;
	bool tcp;
	int fd, res, err;

	if (argc != 4 || (strcmp(argv[1], "connect") && strcmp(argv[1], "sendmsg")) ||
	    sl_parse_addr(argv[2], argv[3], &ss, &len)) {
		fprintf(stderr, "usage: sl_uring connect|sendmsg ADDR PORT\n");
		return 2;
	}
	tcp = !strcmp(argv[1], "connect");
	fd = socket(ss.ss_family, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 2;
	}
	err = io_uring_queue_init(4, &ring, 0);
	if (err < 0) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-err));
		return 2;
	}
	sqe = io_uring_get_sqe(&ring);
	if (tcp) {
		io_uring_prep_connect(sqe, fd, (struct sockaddr *)&ss, len);
	} else {
		msg.msg_name = &ss;
		msg.msg_namelen = len;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		io_uring_prep_sendmsg(sqe, fd, &msg, 0);
	}
	res = run_one(&ring);
	if (res >= 0 && tcp && send(fd, "probe\n", 6, 0) != 6)
		res = -errno;
	io_uring_queue_exit(&ring);
	close(fd);
	if (res < 0) {
		printf("err %s\n", strerrorname_np(-res) ? strerrorname_np(-res) : "?");
		return 1;
	}
	printf("ok\n");
	return 0;
}
