/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The host side of a run's network namespace: for every veth inside it whose peer lives in
 * another namespace, that peer (its index and name there, and an fd of that namespace), found
 * over rtnetlink: the link's IFLA_LINK and IFLA_LINK_NETNSID, and RTM_GETNSID to tell which of
 * the namespaces we can name (our own, those under /run/netns) that id is.
 */
#ifndef SLUICE_NETDEV_H
#define SLUICE_NETDEV_H

#include <net/if.h>
#include <stdint.h>

#define NETDEV_PEERS_MAX 8

struct netdev_peer {
	int ifindex;		  /* in the peer's namespace */
	char ifname[IF_NAMESIZE]; /* there */
	char netns[64];		  /* "" for our own namespace, else the /run/netns name */
	int netns_fd;		  /* the peer's namespace; close it (netdev_peers_free) */
};

/*
 * Fill out with the host-side peers of run_netns_fd's veths; returns how many, or -errno.
 * -ENOENT: a veth whose peer's namespace we cannot name.
 */
int netdev_veth_peers(int run_netns_fd, struct netdev_peer *out, int max);
void netdev_peers_free(struct netdev_peer *p, int n);

/*
 * How many tc filters the clsact qdisc of ifindex holds (ingress and egress), in the calling
 * thread's namespace (0 also when there is no clsact qdisc), or -errno.
 */
int netdev_clsact_filters(int ifindex);

/*
 * The network namespace of that identity (its nsfs device and inode): the calling thread's, one
 * named under /run/netns, or a process's; an fd to it, or -1 when none is found (gone).
 */
int netdev_netns_find(uint64_t dev, uint64_t ino);

/*
 * Whether every link of netns_fd but its loopback is a veth whose peer is one of peers (the same
 * ifindex in the same namespace; one with netns_fd -1 matches none): 1, else 0 (a macvlan,
 * ipvlan, tunnel, dummy or physical device, or a veth added later whose peer is elsewhere: a
 * way out that none of those peers sees), or -errno.
 */
int netdev_only_peers(int netns_fd, const struct netdev_peer *peers, int n);

/*
 * Whether netns_fd is owned by the calling process's own user namespace: 1, else 0, or -errno.
 * A namespace owned by a child user namespace (a rootless container's; docker's userns-remap,
 * podman's --userns=auto) is another's to administer: a process of ours whose euid owns that
 * child holds every capability over it (CAP_NET_ADMIN among them), whatever its own set.
 */
int netdev_netns_owner_is_ours(int netns_fd);

/* Run fn(arg) with the calling thread in netns_fd, then return to the thread's namespace. */
int netdev_in_netns(int netns_fd, int (*fn)(void *arg), void *arg);

#endif /* SLUICE_NETDEV_H */
