/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Socket cookies through NETLINK_SOCK_DIAG: the resolver sees a query's loopback source address
 * and port, and needs the cookie of the client socket behind it to find out which process sent
 * it (sl_dns_clients is keyed by cookie). The netlink socket must be opened in the network
 * namespace the client lives in. And, where BPF cannot destroy sockets, destroying one.
 */
#ifndef SLUICE_SOCKDIAG_H
#define SLUICE_SOCKDIAG_H

#include <stdint.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>

/* A NETLINK_SOCK_DIAG socket in the calling thread's network namespace, or -errno. */
int sockdiag_open(void);

/*
 * The cookie of the socket (TCP or UDP, by protocol) at client that talks to server (both of
 * the same family). Returns 0, -ENOENT when no such socket exists, or -errno.
 */
int sockdiag_cookie(int fd, int protocol, const struct sockaddr_storage *client,
		    const struct sockaddr_storage *server, uint64_t *cookie);

/*
 * Destroy the TCP socket with this cookie (SOCK_DESTROY, CONFIG_INET_DIAG_DESTROY), in the
 * calling thread's network namespace: found in a dump, then named exactly. The way to end a
 * denied flow where the kernel has no bpf_sock_destroy (before 6.5). Returns 0, -ENOENT (no
 * such socket), -EOPNOTSUPP (the kernel cannot), or -errno.
 */
int sockdiag_destroy_tcp(uint64_t cookie);

/*
 * SOCK_DESTROY of the socket a dump named (id: its cookie is checked by the kernel), on fd:
 * 0, or the kernel's -errno (-EOPNOTSUPP: no CONFIG_INET_DIAG_DESTROY, or no such diag module).
 */
int sockdiag_destroy(int fd, uint8_t family, uint8_t protocol, const struct inet_diag_sockid *id);

#endif /* SLUICE_SOCKDIAG_H */
