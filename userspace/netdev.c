// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/nsfs.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include "netdev.h"
#include "netlink.h"
#include "util.h"

#define NETNS_RUN_DIR "/run/netns"

int netdev_in_netns(int netns_fd, int (*fn)(void *arg), void *arg)
{
	int self, err;

	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	if (setns(netns_fd, CLONE_NEWNET)) {
		err = -errno;
		close(self);
		return err;
	}
	err = fn(arg);
	/* Failing to come back would leave sluice judging from the wrong place: that is fatal. */
	if (setns(self, CLONE_NEWNET))
		abort();
	close(self);
	return err;
}

/* path is the namespace dev/ino names: its fd, else -1. */
static int netns_if(const char *path, uint64_t dev, uint64_t ino)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && (fstat(fd, &st) || st.st_dev != dev || st.st_ino != ino)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int netdev_netns_find(uint64_t dev, uint64_t ino)
{
	const char *const dirs[] = { NETNS_RUN_DIR, "/proc" };
	char path[PATH_MAX];
	struct dirent *e;
	int fd = netns_if("/proc/thread-self/ns/net", dev, ino), i;
	DIR *d;

	for (i = 0; fd < 0 && i < 2; i++) {
		d = opendir(dirs[i]);
		while (d && fd < 0 && (e = readdir(d))) {
			if (e->d_name[0] == '.' || (i && (e->d_name[0] < '0' || e->d_name[0] > '9')))
				continue;
			if (!util_fmt(path, sizeof(path), i ? "/proc/%s/ns/net" : NETNS_RUN_DIR "/%s",
				      e->d_name))
				fd = netns_if(path, dev, ino);
		}
		if (d)
			closedir(d);
	}
	return fd;
}

static int open_rtnl(void *arg)
{
	int *fd = arg;

	*fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	return *fd < 0 ? -errno : 0;
}

static const struct rtattr *rta_find(const struct rtattr *rta, int len, unsigned short type)
{
	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type == type)
			return rta;
	return NULL;
}

static bool link_is_veth(const struct rtattr *attrs, int len)
{
	const struct rtattr *info = rta_find(attrs, len, IFLA_LINKINFO), *kind;

	if (!info)
		return false;
	kind = rta_find(RTA_DATA(info), (int)RTA_PAYLOAD(info), IFLA_INFO_KIND);
	return kind && RTA_PAYLOAD(kind) >= 5 && !memcmp(RTA_DATA(kind), "veth", 5);
}

struct veth_link {
	int peer_ifindex;
	int32_t peer_nsid;
};

struct veths {
	struct veth_link *out;
	int n, max;
	bool full;  /* a veth with its peer outside found no room in out */
	bool other; /* a link that is neither the loopback nor such a veth */
};

static int on_link(const struct nlmsghdr *h, void *ctx)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	const struct rtattr *link, *nsid;
	struct veths *v = ctx;
	int alen;

	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return 0;
	alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
	if (!link_is_veth(IFLA_RTA(ifi), alen)) {
		v->other |= !(ifi->ifi_flags & IFF_LOOPBACK);
		return 0;
	}
	link = rta_find(IFLA_RTA(ifi), alen, IFLA_LINK);
	nsid = rta_find(IFLA_RTA(ifi), alen, IFLA_LINK_NETNSID);
	if (!link || !nsid || RTA_PAYLOAD(link) < 4 || RTA_PAYLOAD(nsid) < 4) {
		v->other = true; /* both ends inside the sandbox */
		return 0;
	}
	if (v->n == v->max) {
		v->full = true;
		return 0;
	}
	memcpy(&v->out[v->n].peer_ifindex, RTA_DATA(link), 4);
	memcpy(&v->out[v->n].peer_nsid, RTA_DATA(nsid), 4);
	v->n++;
	return 0;
}

/*
 * The veths of the namespace rtnl speaks for whose peer is in another namespace, in v (its out
 * and max set), and whether it has any other link but its loopback; 0 or -errno.
 */
static int dump_links(int rtnl, struct veths *v)
{
	struct {
		struct nlmsghdr nlh;
		struct ifinfomsg ifi;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.ifi = { .ifi_family = AF_UNSPEC },
	};

	return nl_dump(rtnl, &req.nlh, on_link, v);
}

/* The veths of the namespace rtnl speaks for whose peer is in another namespace: how many. */
static int dump_veths(int rtnl, struct veth_link *out, int max)
{
	struct veths v = { .out = out, .max = max };
	int err = dump_links(rtnl, &v);

	return err ? err : v.full ? -E2BIG : v.n;
}

/* The id the namespace rtnl speaks for gives the namespace netns_fd; -1 if none. */
static int32_t nsid_of(int rtnl, int netns_fd)
{
	struct {
		struct nlmsghdr nlh;
		struct rtgenmsg g;
		char pad[3];
		struct rtattr fd_attr;
		uint32_t fd;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETNSID,
			 .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 2 },
		.g = { .rtgen_family = AF_UNSPEC },
		.fd_attr = { .rta_len = RTA_LENGTH(4), .rta_type = NETNSA_FD },
		.fd = (uint32_t)netns_fd,
	};
	char buf[1024] __attribute__((aligned(4)));
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	const struct rtattr *a;
	int32_t id;
	ssize_t len;

	if (nl_send(rtnl, &req.nlh))
		return -1;
	len = recv(rtnl, buf, sizeof(buf), 0);
	if (len < 0 || !NLMSG_OK(h, (size_t)len) || h->nlmsg_type != RTM_NEWNSID ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtgenmsg)))
		return -1;
	a = rta_find((const struct rtattr *)((char *)NLMSG_DATA(h) +
					     NLMSG_ALIGN(sizeof(struct rtgenmsg))),
		     (int)(h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct rtgenmsg)))),
		     NETNSA_NSID);
	if (!a || RTA_PAYLOAD(a) < 4)
		return -1;
	memcpy(&id, RTA_DATA(a), 4);
	return id;
}

struct name_arg {
	int ifindex;
	char *name;
};

static int name_of_index(void *arg)
{
	struct name_arg *a = arg;

	return if_indextoname((unsigned int)a->ifindex, a->name) ? 0 : -errno;
}

/* Find the namespace with this id among ours and those under /run/netns; fill p's netns and name. */
static int resolve_peer(int rtnl, int32_t nsid, int ifindex, struct netdev_peer *p)
{
	struct name_arg na = { .ifindex = ifindex, .name = p->ifname };
	struct dirent *de;
	DIR *d;
	int fd, err;

	/* the calling thread's namespace: setns works per thread */
	fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && nsid_of(rtnl, fd) == nsid) {
		p->netns[0] = '\0';
		goto found;
	}
	if (fd >= 0)
		close(fd);
	d = opendir(NETNS_RUN_DIR);
	if (!d)
		return -ENOENT;
	fd = -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (nsid_of(rtnl, fd) == nsid &&
		    !util_copy(p->netns, sizeof(p->netns), de->d_name))
			break;
		close(fd);
		fd = -1;
	}
	closedir(d);
	if (fd < 0)
		return -ENOENT;
found:
	p->ifindex = ifindex;
	p->netns_fd = fd;
	err = netdev_in_netns(fd, name_of_index, &na);
	if (err) {
		close(fd);
		p->netns_fd = -1;
	}
	return err;
}

int netdev_veth_peers(int run_netns_fd, struct netdev_peer *out, int max)
{
	struct veth_link links[NETDEV_PEERS_MAX];
	int rtnl = -1, n, i, err;

	err = netdev_in_netns(run_netns_fd, open_rtnl, &rtnl);
	if (err)
		return err;
	n = dump_veths(rtnl, links, max < NETDEV_PEERS_MAX ? max : NETDEV_PEERS_MAX);
	for (i = 0; i < n; i++) {
		err = resolve_peer(rtnl, links[i].peer_nsid, links[i].peer_ifindex, &out[i]);
		if (err) {
			netdev_peers_free(out, i);
			n = err;
			break;
		}
	}
	close(rtnl);
	return n;
}

int netdev_only_peers(int netns_fd, const struct netdev_peer *peers, int n)
{
	struct veth_link links[NETDEV_PEERS_MAX];
	struct veths v = { .out = links, .max = NETDEV_PEERS_MAX };
	int32_t nsids[NETDEV_PEERS_MAX];
	int rtnl = -1, i, j, err;

	if (n > NETDEV_PEERS_MAX)
		return -E2BIG;
	err = netdev_in_netns(netns_fd, open_rtnl, &rtnl);
	if (err)
		return err;
	/* the dump first: it gives each peer's namespace an id as seen from here, if it had none */
	err = dump_links(rtnl, &v);
	for (j = 0; !err && j < n; j++)
		nsids[j] = peers[j].netns_fd >= 0 ? nsid_of(rtnl, peers[j].netns_fd) : -1;
	close(rtnl);
	if (err)
		return err;
	if (v.other || v.full)
		return 0;
	for (i = 0; i < v.n; i++) {
		for (j = 0; j < n; j++)
			if (nsids[j] >= 0 && links[i].peer_nsid == nsids[j] &&
			    links[i].peer_ifindex == peers[j].ifindex)
				break;
		if (j == n)
			return 0;
	}
	return 1;
}

void netdev_peers_free(struct netdev_peer *p, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (p[i].netns_fd >= 0)
			close(p[i].netns_fd);
		p[i].netns_fd = -1;
	}
}

/* each priority is dumped once with handle 0, then once per filter */
static int on_filter(const struct nlmsghdr *h, void *ctx)
{
	const struct tcmsg *t = NLMSG_DATA(h);

	if (h->nlmsg_type == RTM_NEWTFILTER && h->nlmsg_len >= NLMSG_LENGTH(sizeof(*t)) &&
	    t->tcm_handle)
		++*(int *)ctx;
	return 0;
}

/* Filters under one clsact attach point (parent) of ifindex, in the calling thread's namespace. */
static int count_filters(int rtnl, int ifindex, uint32_t parent)
{
	struct {
		struct nlmsghdr nlh;
		struct tcmsg tcm;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETTFILTER,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 3 },
		.tcm = { .tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex, .tcm_parent = parent },
	};
	int n = 0, err = nl_dump(rtnl, &req.nlh, on_filter, &n);

	return err ? err : n;
}

int netdev_clsact_filters(int ifindex)
{
	int rtnl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), in, out;

	if (rtnl < 0)
		return -errno;
	in = count_filters(rtnl, ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS));
	out = in < 0 ? in : count_filters(rtnl, ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS));
	close(rtnl);
	return in < 0 ? in : out < 0 ? out : in + out;
}

int netdev_netns_owner_is_ours(int netns_fd)
{
	struct stat owner, ours;
	int u = ioctl(netns_fd, NS_GET_USERNS), err;

	if (u < 0)
		return -errno;
	err = fstat(u, &owner) ? -errno : 0;
	close(u);
	if (!err && stat("/proc/self/ns/user", &ours))
		err = -errno;
	if (err)
		return err;
	return owner.st_dev == ours.st_dev && owner.st_ino == ours.st_ino;
}
