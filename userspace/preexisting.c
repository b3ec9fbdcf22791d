// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Judging the sockets a cgroup's processes held before a run's programs were attached: see
 * preexisting.h.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>
#include <linux/tcp.h>
#include <linux/sockios.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "../bpf/addr.bpf.h"
#include "loader.h"
#include "netdev.h"
#include "netlink.h"
#include "preexisting.h"
#include "run.h"
#include "sockdiag.h"
#include "util.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* linux/pidfd.h (6.9), which clashes with fcntl.h */
#endif

/* TCP states (include/net/tcp_states.h) */
#define ST_ESTABLISHED 1
#define ST_TIME_WAIT 6
#define ST_CLOSE 7
#define ST_LISTEN 10
#define ST_NEW_SYN_RECV 12

/* Bounds on what one scan holds: a cgroup past them is refused, never half judged in silence. */
#define MAX_SOCKS 65536
#define MAX_NETNS 256
#define MAX_DEPTH 64

struct preexisting_sock {
	struct records_preexisting rec;
	struct inet_diag_sockid id; /* as the dump gave it: what SOCK_DESTROY names */
	int ns;			    /* index into netns_fds; -1 until a dump finds it */
	int fd;			    /* its number in the first holder's table */
	uint32_t tid;		    /* that table is a thread's own (see struct held), else 0 */
};

/* A socket fd of a process, before the dumps: inode, who, where. */
struct held {
	uint64_t inode;
	uint32_t pid;
	uint32_t tid; /* the fd is in this thread's own table (unshare(CLONE_FILES), or the leader
			 exited); 0: the process's (/proc/PID/fd) */
	int fd;
	uint64_t netns;
	char comm[16];
};

struct held_list {
	struct held *h;
	size_t n, cap;
	uint64_t *netns; /* distinct namespaces, with a process of each */
	uint32_t *netns_pid;
	size_t n_netns;
	unsigned int pids;
	/*
	 * Inode → the last process that added it (open addressing, power-of-two size): a process
	 * holding one socket under many fds (dup) adds it once, so a workload cannot make the
	 * scan give up, and an enforce attach fail, with copies of one connection.
	 */
	struct { uint64_t inode; uint32_t pid; } *seen;
	size_t seen_cap, seen_n;
	char *err;
	size_t err_len;
};

struct records_preexisting *preexisting_rec(struct preexisting_scan *s, size_t i)
{
	return &s->socks[i].rec;
}

/* Whether h's socket is already listed for its process; otherwise remember it. */
static int held_seen(struct held_list *hl, const struct held *h, bool *seen)
{
	size_t i, mask;

	if (hl->seen_n * 2 >= hl->seen_cap) {
		size_t cap = hl->seen_cap ? hl->seen_cap * 2 : 256, j;
		__typeof__(hl->seen) n = calloc(cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (j = 0; j < hl->seen_cap; j++) {
			if (!hl->seen[j].inode)
				continue;
			for (i = (hl->seen[j].inode * 0x9e3779b97f4a7c15ull) & (cap - 1);
			     n[i].inode; i = (i + 1) & (cap - 1))
				;
			n[i] = hl->seen[j];
		}
		free(hl->seen);
		hl->seen = n;
		hl->seen_cap = cap;
	}
	mask = hl->seen_cap - 1;
	for (i = (h->inode * 0x9e3779b97f4a7c15ull) & mask; hl->seen[i].inode; i = (i + 1) & mask)
		if (hl->seen[i].inode == h->inode)
			break;
	*seen = hl->seen[i].inode == h->inode && hl->seen[i].pid == h->pid;
	if (!hl->seen[i].inode)
		hl->seen_n++;
	hl->seen[i].inode = h->inode;
	hl->seen[i].pid = h->pid;
	return 0;
}

static int held_add(struct held_list *hl, const struct held *h)
{
	bool seen;
	int err = held_seen(hl, h, &seen);

	if (err || seen)
		return err;
	if (hl->n == hl->cap) {
		size_t cap = hl->cap ? hl->cap * 2 : 64;
		struct held *n;

		if (cap > MAX_SOCKS) {
			util_fmt(hl->err, hl->err_len, "more than %d sockets held in the cgroup",
				 MAX_SOCKS);
			return -E2BIG;
		}
		n = realloc(hl->h, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		hl->h = n;
		hl->cap = cap;
	}
	hl->h[hl->n++] = *h;
	return 0;
}

static int netns_add(struct held_list *hl, uint64_t ino, uint32_t pid)
{
	size_t i;

	for (i = 0; i < hl->n_netns; i++)
		if (hl->netns[i] == ino)
			return 0;
	if (hl->n_netns == MAX_NETNS) {
		util_fmt(hl->err, hl->err_len, "the cgroup's processes live in more than %d "
			 "network namespaces", MAX_NETNS);
		return -E2BIG;
	}
	if (!hl->netns) {
		hl->netns = calloc(MAX_NETNS, sizeof(*hl->netns));
		hl->netns_pid = calloc(MAX_NETNS, sizeof(*hl->netns_pid));
		if (!hl->netns || !hl->netns_pid)
			return -ENOMEM;
	}
	hl->netns[hl->n_netns] = ino;
	hl->netns_pid[hl->n_netns++] = pid;
	return 0;
}

/* The socket fds in one fd table (/proc/PID/fd or /proc/PID/task/TID/fd): true if any. */
static int scan_fds(struct held_list *hl, struct held *h, const char *dir, bool *found)
{
	char link[64];
	struct dirent *de;
	DIR *d;
	int err = 0;
	ssize_t n;

	d = opendir(dir);
	if (!d)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno;
	while (!err && (de = readdir(d))) {
		unsigned long long ino;

		n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (sscanf(link, "socket:[%llu]", &ino) != 1)
			continue;
		h->inode = ino;
		h->fd = atoi(de->d_name);
		err = held_add(hl, h);
		*found = true;
	}
	closedir(d);
	return err;
}

/* Whether thread tid's fd table is one of the n already read (kcmp KCMP_FILES). */
static bool table_seen(uint32_t tid, const uint32_t *tables, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!syscall(SYS_kcmp, (pid_t)tables[i], (pid_t)tid, KCMP_FILES, 0, 0))
			return true;
	return false;
}

/*
 * The socket fds of one process: of each of its fd tables. A thread can hold its own
 * (unshare(CLONE_FILES)), and one whose leader exited with SYS_exit holds the process's sockets
 * while /proc/PID/fd lists none: each thread's /proc/PID/task/TID/fd is read unless it shares a
 * table already read. Each table goes with the network namespace of its thread (setns is per
 * thread). A process that exits meanwhile is skipped: its sockets are closed with it (or held
 * by another process, which is looked at too).
 */
static int scan_pid(struct held_list *hl, uint32_t pid)
{
	char path[96];
	struct held h = { .pid = pid };
	uint32_t tables[8];
	size_t n_read = 0;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, err = 0;
	ssize_t n;

	util_fmt(path, sizeof(path), "/proc/%u/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, h.comm, sizeof(h.comm) - 1);
		close(fd);
		if (n > 0 && h.comm[n - 1] == '\n')
			h.comm[n - 1] = '\0';
	}
	util_fmt(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno;
	hl->pids++;
	while (!err && (de = readdir(d))) {
		unsigned int tid;
		bool found = false;

		if (sscanf(de->d_name, "%u", &tid) != 1)
			continue;
		/* the leader's table is the process's; another thread's, if it is its own */
		if (tid != pid && table_seen(tid, tables, n_read))
			continue;
		util_fmt(path, sizeof(path), "/proc/%u/task/%u/ns/net", pid, tid);
		if (stat(path, &st))
			continue; /* exited meanwhile (or a zombie leader: no namespace) */
		h.netns = st.st_ino;
		h.tid = tid == pid ? 0 : tid;
		util_fmt(path, sizeof(path), "/proc/%u/task/%u/fd", pid, tid);
		err = scan_fds(hl, &h, path, &found);
		if (!err && n_read < sizeof(tables) / sizeof(tables[0]))
			tables[n_read++] = tid;
		if (!err && found)
			err = netns_add(hl, h.netns, tid);
	}
	closedir(d);
	return err;
}

/* cgroup.procs of dir_fd, then every child cgroup, depth first. Consumes dir_fd. */
static int scan_cgroup(struct held_list *hl, int dir_fd, int depth)
{
	struct dirent *de;
	unsigned int pid;
	int fd, err = 0;
	DIR *d;
	FILE *f;

	if (depth > MAX_DEPTH) {
		close(dir_fd);
		util_fmt(hl->err, hl->err_len, "cgroups nested deeper than %d", MAX_DEPTH);
		return -ELOOP;
	}
	fd = openat(dir_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		close(dir_fd);
		/* removed under us: nothing of it is left to judge */
		return err == -ENOENT || err == -ENODEV ? 0 : err;
	}
	while (!err && fscanf(f, "%u", &pid) == 1)
		err = scan_pid(hl, pid);
	fclose(f);
	d = fdopendir(dir_fd);
	if (!d) {
		err = err ? err : -errno;
		close(dir_fd);
		return err;
	}
	while (!err && (de = readdir(d))) {
		int child;

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		child = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (child < 0)
			continue; /* removed meanwhile */
		err = scan_cgroup(hl, child, depth + 1);
	}
	closedir(d);
	return err;
}

static int cmp_held(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* What one namespace's dumps fill in. */
struct dump_ctx {
	struct preexisting_scan *s;
	int ns;
	uint64_t netns_ino;
	uint8_t protocol;
};

static int cmp_sock_inode(const void *key, const void *elem)
{
	uint64_t k = *(const uint64_t *)key, e = ((const struct preexisting_sock *)elem)->rec.inode;

	return k < e ? -1 : k > e;
}

static int on_sock(const struct nlmsghdr *h, void *arg)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	struct dump_ctx *c = arg;
	struct preexisting_sock *ps;
	struct records_preexisting *r;
	uint64_t ino;
	size_t alen;

	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)) ||
	    !m->idiag_inode)
		return 0;
	if (m->idiag_family != AF_INET && m->idiag_family != AF_INET6)
		return 0;
	ino = m->idiag_inode;
	ps = bsearch(&ino, c->s->socks, c->s->n, sizeof(*ps), cmp_sock_inode);
	if (!ps || ps->ns >= 0)
		return 0;
	r = &ps->rec;
	alen = m->idiag_family == AF_INET ? 4 : 16;
	ps->ns = c->ns;
	ps->id = m->id;
	r->family = m->idiag_family;
	r->protocol = c->protocol;
	r->state = m->idiag_state;
	memcpy(r->src, m->id.idiag_src, alen);
	memcpy(r->dst, m->id.idiag_dst, alen);
	r->sport = ntohs(m->id.idiag_sport);
	r->dport = ntohs(m->id.idiag_dport);
	r->cookie = (uint64_t)m->id.idiag_cookie[0] | ((uint64_t)m->id.idiag_cookie[1] << 32);
	r->netns = c->netns_ino;
	return 0;
}

static int open_diag(void *arg)
{
	int fd = sockdiag_open();

	if (fd < 0)
		return fd;
	*(int *)arg = fd;
	return 0;
}

/* TCP in any state a flow sends in (not LISTEN, CLOSE; TIME_WAIT has no holder), UDP connected. */
static int dump_netns(struct dump_ctx *c, int netns_fd)
{
	static const uint8_t families[] = { AF_INET, AF_INET6 };
	static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	int fd = -1, err;
	size_t i, k;

	err = netdev_in_netns(netns_fd, open_diag, &fd);
	if (err)
		return err;
	for (i = 0; !err && i < sizeof(families); i++) {
		for (k = 0; !err && k < sizeof(protos); k++) {
			memset(&req, 0, sizeof(req));
			req.nlh.nlmsg_len = sizeof(req);
			req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
			req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
			req.nlh.nlmsg_seq = (__u32)(i * 2 + k + 1);
			req.r.sdiag_family = families[i];
			req.r.sdiag_protocol = protos[k];
			req.r.idiag_states =
				protos[k] == IPPROTO_UDP ?
					1u << ST_ESTABLISHED :
					0xfffu & ~(1u << ST_LISTEN | 1u << ST_CLOSE |
						   1u << ST_TIME_WAIT | 1u << ST_NEW_SYN_RECV);
			c->protocol = protos[k];
			err = nl_dump(fd, &req.nlh, on_sock, c);
		}
	}
	close(fd);
	return err;
}

/*
 * The network namespace of the inet socket at fd_num in pid's table, if it is one (1; *ns_fd
 * open), else 0: a copy of the descriptor (pidfd_getfd) asked with SIOCGSKNS, and closed again
 * (the holder's socket is untouched). A process that left or closed the fd meanwhile: 0.
 */
/*
 * A copy of the descriptor fd_num of pid (pidfd_getfd), or -errno: of thread tid's own table
 * (a thread's pidfd, PIDFD_THREAD) when the scan found it there, else the process's.
 */
static int sock_dup(uint32_t pid, uint32_t tid, int fd_num)
{
	int pidfd, fd;

	pidfd = (int)syscall(SYS_pidfd_open, tid ? tid : pid, tid ? PIDFD_THREAD : 0);
	if (pidfd < 0)
		return -errno;
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, fd_num, 0);
	if (fd < 0)
		fd = -errno;
	close(pidfd);
	return fd;
}

static int sock_netns(uint32_t pid, uint32_t tid, int fd_num, int *ns_fd)
{
	int fd, dom = 0, ret = 0;
	socklen_t len = sizeof(dom);

	fd = sock_dup(pid, tid, fd_num);
	if (fd < 0)
		return 0;
	if (!getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) &&
	    (dom == AF_INET || dom == AF_INET6)) {
		*ns_fd = ioctl(fd, SIOCGSKNS);
		ret = *ns_fd >= 0;
	}
	close(fd);
	return ret;
}

/*
 * Sockets the dumps did not find: not inet ones (unix, netlink…), or inet ones made in a
 * namespace none of their holders lives in — before a setns, or passed in over a unix socket.
 * The packet programs never see the latter (they are attached to the cgroup the socket was
 * made in), so they are looked for too: their namespace is dumped.
 */
static int scan_other_netns(struct preexisting_scan *s)
{
	size_t i, k;
	int err;

	for (i = 0; i < s->n; i++) {
		struct preexisting_sock *ps = &s->socks[i];
		struct dump_ctx c = { .s = s };
		struct stat st;
		int ns_fd = -1;

		if (ps->ns >= 0 || !sock_netns(ps->rec.pid, ps->tid, ps->fd, &ns_fd))
			continue;
		if (fstat(ns_fd, &st)) {
			close(ns_fd);
			continue;
		}
		for (k = 0; k < s->n_netns; k++)
			if (s->netns_ino[k] == st.st_ino)
				break;
		/* a namespace already dumped: a state not judged (listening, unconnected UDP) */
		if (k < s->n_netns || s->n_netns == MAX_NETNS) {
			close(ns_fd);
			continue;
		}
		c.ns = (int)s->n_netns;
		c.netns_ino = st.st_ino;
		s->netns_ino[s->n_netns] = st.st_ino;
		s->netns_fds[s->n_netns++] = ns_fd;
		err = dump_netns(&c, ns_fd);
		if (err)
			return err;
	}
	return 0;
}

void preexisting_scan_free(struct preexisting_scan *s)
{
	size_t i;

	for (i = 0; i < s->n_netns; i++)
		if (s->netns_fds[i] >= 0)
			close(s->netns_fds[i]);
	free(s->netns_fds);
	free(s->netns_ino);
	free(s->socks);
	memset(s, 0, sizeof(*s));
}

int preexisting_scan(const char *cgroup_path, uint64_t cgroup_id, struct preexisting_scan *s,
		     char *err, size_t err_len)
{
	struct held_list hl = { .err = err, .err_len = err_len };
	struct stat st;
	size_t i, k, out;
	int dir_fd, ret = 0;

	memset(s, 0, sizeof(*s));
	err[0] = '\0';
	dir_fd = open(cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		ret = -errno;
		util_fmt(err, err_len, "cgroup %s: %s", cgroup_path, strerror(errno));
		return ret;
	}
	/* the path must still be the cgroup the programs were attached to, not a new one */
	if (cgroup_id && (fstat(dir_fd, &st) || st.st_ino != cgroup_id)) {
		close(dir_fd);
		util_fmt(err, err_len, "cgroup %s is no longer the cgroup of id %llu", cgroup_path,
			 (unsigned long long)cgroup_id);
		return -ESTALE;
	}
	ret = scan_cgroup(&hl, dir_fd, 0);
	if (ret)
		goto out;
	s->pids = hl.pids;

	/* one entry per socket: the first holder by pid, and how many processes hold it */
	qsort(hl.h, hl.n, sizeof(*hl.h), cmp_held);
	s->socks = calloc(hl.n ? hl.n : 1, sizeof(*s->socks));
	s->netns_fds = calloc(MAX_NETNS, sizeof(*s->netns_fds));
	s->netns_ino = calloc(MAX_NETNS, sizeof(*s->netns_ino));
	if (!s->socks || !s->netns_fds || !s->netns_ino) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0, out = 0; i < hl.n; i = k) {
		struct preexisting_sock *ps = &s->socks[out++];

		ps->ns = -1;
		ps->fd = hl.h[i].fd;
		ps->tid = hl.h[i].tid;
		ps->rec.inode = hl.h[i].inode;
		ps->rec.pid = hl.h[i].pid;
		memcpy(ps->rec.comm, hl.h[i].comm, sizeof(ps->rec.comm));
		ps->rec.holders = 1;
		for (k = i + 1; k < hl.n && hl.h[k].inode == hl.h[i].inode; k++)
			if (hl.h[k].pid != hl.h[k - 1].pid)
				ps->rec.holders++;
	}
	s->n = out;

	for (i = 0; i < hl.n_netns; i++) {
		struct dump_ctx c = { .s = s, .ns = (int)i, .netns_ino = hl.netns[i] };
		char path[64];
		struct stat nst;
		int fd;

		util_fmt(path, sizeof(path), "/proc/%u/ns/net", hl.netns_pid[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		s->netns_ino[s->n_netns] = hl.netns[i];
		s->netns_fds[s->n_netns++] = fd;
		/* the process left (or changed namespace): its sockets went with it */
		if (fd < 0 || fstat(fd, &nst) || nst.st_ino != hl.netns[i])
			continue;
		ret = dump_netns(&c, fd);
		if (ret) {
			util_fmt(err, err_len,
				 "sock_diag dump in the network namespace of pid %u: %s",
				 hl.netns_pid[i], strerror(-ret));
			goto out;
		}
	}
	ret = scan_other_netns(s);
	if (ret) {
		util_fmt(err, err_len, "sock_diag dump in a namespace a socket was made in: %s",
			 strerror(-ret));
		goto out;
	}
	/* keep what the dumps found: inet sockets of the namespaces; the rest are not inet */
	for (i = 0, out = 0; i < s->n; i++)
		if (s->socks[i].ns >= 0)
			s->socks[out++] = s->socks[i];
	s->n = out;
out:
	free(hl.h);
	free(hl.netns);
	free(hl.seen);
	free(hl.netns_pid);
	if (ret) {
		if (!err[0])
			util_fmt(err, err_len, "scanning cgroup %s: %s", cgroup_path,
				 strerror(-ret));
		preexisting_scan_free(s);
	}
	return ret;
}

static void set(struct records_preexisting *s, uint8_t verdict, uint8_t reason, long rule)
{
	s->verdict = verdict;
	s->reason = reason;
	s->rule = rule;
}

/*
 * The rule rule_id names allows the port over proto (SL_PROTO_*), as rules_match judges its
 * entries; a rule this policy does not have allows nothing.
 */
static bool rule_id_takes(const struct policy *p, uint32_t rule_id, uint16_t port, uint8_t proto)
{
	const struct policy_rule *r = policy_rule_of(p, rule_id);

	return r && policy_rule_takes(r, port, proto);
}

/*
 * A learned address allows the port and protocol if one of the rules it was learned for does:
 * the first that does, as the programs' learned_match takes it (bpf/policy.bpf.h; the entry's
 * rules are written strictest first: policy_rules_strictest).
 */
static long learned_rule(const struct policy *p, const struct sl_learned *l, uint16_t port,
			 uint8_t proto)
{
	size_t i;

	for (i = 0; l && i < SL_LEARNED_RULES && l->rule_ids[i]; i++)
		if (rule_id_takes(p, l->rule_ids[i], port, proto))
			return policy_rule_index(p, l->rule_ids[i]);
	return -1;
}

void preexisting_verdict(const struct policy *p, enum sl_mode mode,
			 const struct sl_learned *learned, struct records_preexisting *s)
{
	uint8_t proto = s->protocol == IPPROTO_TCP ? SL_PROTO_TCP : SL_PROTO_UDP;
	bool default_allow = p->default_verdict == POLICY_DEFAULT_ALLOW, embedded;
	const uint8_t *addr = s->dst;
	int family = s->family;
	enum sl_dst_fate fate;
	__u32 v4;
	long rule;

	s->by_name = false;
	/* what the address decides, as the programs' decide_v4 and decide_v6 (dst_fate) */
	fate = dst_fate(family, s->dst, default_allow, &v4, &embedded);
	s->has_v4 = embedded;
	if (embedded) {
		memcpy(s->v4, &v4, 4);
		family = AF_INET;
		addr = s->v4;
	}
	switch (fate) {
	case SL_DST_BLACKHOLE:
		set(s, SL_VERDICT_DENY, SL_REASON_BLACKHOLE, -1);
		goto out;
	case SL_DST_RELAY:
		set(s, SL_VERDICT_DENY, SL_REASON_V4_RELAY, -1);
		goto out;
	case SL_DST_V4:
	case SL_DST_V6:
		break;
	}
	rule = policy_cidr_match(p, family, addr, s->dport, proto);
	if (rule < 0) {
		rule = learned_rule(p, learned, s->dport, proto);
		s->by_name = rule >= 0;
	}
	if (rule >= 0)
		set(s, SL_VERDICT_ALLOW, SL_REASON_RULE, rule);
	else if (p->default_verdict == POLICY_DEFAULT_ALLOW)
		set(s, SL_VERDICT_ALLOW, SL_REASON_DEFAULT_ALLOW, -1);
	else if (policy_host_rule_takes(p, s->dport, proto) >= 0)
		set(s, SL_VERDICT_DENY, SL_REASON_PREEXISTING_UNNAMED, -1);
	else
		set(s, SL_VERDICT_DENY, SL_REASON_DEFAULT_DENY, -1);
out:
	/* report mode logs what it would deny, but the blackhole is enforced in every mode */
	s->enforced = s->verdict == SL_VERDICT_DENY &&
		      (mode == SL_MODE_ENFORCE || s->reason == SL_REASON_BLACKHOLE);
}

/*
 * SOCK_DESTROY of the socket the dump named (id, its cookie checked by the kernel), in the
 * namespace it lives in: UDP (udp_diag) has no BPF way to be destroyed.
 */
struct destroy_req {
	const struct preexisting_sock *ps;
};

static int destroy_here(void *arg)
{
	const struct preexisting_sock *ps = ((struct destroy_req *)arg)->ps;
	int fd = sockdiag_open(), err;

	if (fd < 0)
		return fd;
	err = sockdiag_destroy(fd, ps->rec.family, ps->rec.protocol, &ps->id);
	close(fd);
	return err;
}

static int destroy_sock(struct run *r, const struct preexisting_scan *s,
			const struct preexisting_sock *ps)
{
	struct destroy_req req = { .ps = ps };
	int netns_fd = s->netns_fds[ps->ns];

	/* TCP the way every other denied flow is ended (bpf_sock_destroy, else sock_diag) */
	if (ps->rec.protocol == IPPROTO_TCP && r && r->loader)
		return loader_kill_socket(r->loader, ps->rec.cookie, netns_fd, ps->rec.pid);
	return netdev_in_netns(netns_fd, destroy_here, &req);
}

/* What the line says became of a denied socket. */
static const char *destroy_outcome(int err, char *buf, size_t len)
{
	if (!err)
		return "destroyed";
	if (err == -ENOENT)
		return "closed before it could be destroyed";
	if (err == -EOPNOTSUPP)
		return "left open (kernel cannot destroy sockets of this protocol); its packets "
		       "are dropped";
	util_fmt(buf, len, "left open (destroying failed: %s); its packets are dropped",
		 strerror(-err));
	return buf;
}

/*
 * The run's resolver (loopback, on its port), where the decision layer sends every port-53
 * connect: a socket connected there between the attach and the scan was sent there by it.
 */
static bool to_resolver(const struct records_preexisting *s, uint16_t dns_port)
{
	static const uint8_t lo6[16] = { [15] = 1 };
	static const uint8_t mapped_lo[16] = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 };
	static const uint8_t lo4[4] = { 127, 0, 0, 1 };

	if (!dns_port || s->dport != dns_port)
		return false;
	if (s->family == AF_INET)
		return !memcmp(s->dst, lo4, 4);
	return !memcmp(s->dst, lo6, 16) || !memcmp(s->dst, mapped_lo, 16);
}

/*
 * A flow a rule allows, to a host whose budget for the run is spent (max_total_*): the connect
 * programs would refuse it (host_total_cap), so a flow report mode let through for it is
 * denied here too, and destroyed after a switch to enforce (its caps would cut it at its next
 * byte anyway: bpf/sock_addr.bpf.c flow_start). The host is keyed as the kernel keys it.
 */
static void judge_budget(const struct loader *l, enum sl_mode mode, const struct sl_learned *lp,
			 struct records_preexisting *rec)
{
	struct sl_host_key k;
	uint8_t addr[16] = {};
	uint16_t budget;

	if (rec->verdict != SL_VERDICT_ALLOW || rec->reason != SL_REASON_RULE || rec->rule < 0)
		return;
	/* unreadable: the flow's next byte meets the kernel's own check (flow_start) */
	if (loader_rule_budget(l, policy_rule_id((size_t)rec->rule), &budget, NULL, 0))
		return;
	memcpy(addr, rec->dst, rec->family == AF_INET ? 4 : 16);
	host_key_of(&k, budget, lp ? lp->host_id : 0, rec->family, addr);
	if (!loader_host_spent(l, policy_rule_id((size_t)rec->rule), &k))
		return;
	set(rec, SL_VERDICT_DENY, SL_REASON_HOST_CAP, rec->rule);
	rec->enforced = mode == SL_MODE_ENFORCE;
}

/* The destination as the egress program reads it from the packet: a v4-mapped one as IPv4. */
static const uint8_t *packet_daddr(const struct records_preexisting *rec, int *family)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	*family = rec->family;
	if (rec->family == AF_INET6 && !memcmp(rec->dst, mapped, sizeof(mapped))) {
		*family = AF_INET;
		return rec->dst + 12;
	}
	return rec->dst;
}

/* Payload bytes the TCP socket at fd has put on the wire (retransmissions too). 0 or -errno. */
static int tcp_bytes_sent(int fd, uint64_t *sent)
{
	struct tcp_info ti = {};
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return -errno;
	if (len < offsetof(struct tcp_info, tcpi_bytes_sent) + sizeof(ti.tcpi_bytes_sent))
		return -EOPNOTSUPP; /* a kernel before 4.19 */
	*sent = ti.tcpi_bytes_sent;
	return 0;
}

/*
 * A flow that went ahead without the server-name check (a CIDR rule, the default, a report-mode
 * denial) and that the new policy allows through a name alone: it is held to the check from now
 * on, as a connect() to its destination would be (bpf/sock_addr.bpf.c tls_expect_server_name).
 * Off the TLS port its next payload is judged as a first one: one that does not start like TLS
 * passes (plain HTTP goes on), one that does must be a ClientHello naming an allowed host. On
 * the TLS port only a flow that has sent nothing can still be: one that already sent data never
 * had its ClientHello checked (sni_unchecked). Bytes sent between the look and the mark, while
 * the mark is still pending, went out unchecked too. Off the TLS port, a flow that has sent data
 * is judged by what its first payload began with, which the packet layer keeps for every TCP
 * flow (seen: its state, NULL if it has none): plain, it is left alone, as its connect() would
 * have left it (a later payload that begins like TLS is not a first one); like TLS, it was a
 * ClientHello no name check saw (sni_unchecked). 0, or -errno when the flow cannot be held to the
 * check (its state cannot be written): the caller denies it.
 */
static int watch_from_now(struct run *r, int fd, uint32_t host_id, const struct sl_flow *seen,
			  struct records_preexisting *rec)
{
	struct sl_sk_tls t = { .state = SL_TLS_PENDING }, now;
	struct sl_flow flow;
	uint64_t sent = 0;
	int err;

	t.tls_port = rec->dport == SL_TLS_PORT; /* as tls_expect_server_name judges it */
	t.host_id = host_id;
	t.pid = rec->pid;
	t.tgid = rec->pid;
	memcpy(t.comm, rec->comm, sizeof(t.comm));
	if (!t.tls_port && seen && seen->snd_init & SL_FLOW_FIRST_TLS) {
		set(rec, SL_VERDICT_DENY, SL_REASON_SNI_UNCHECKED, rec->rule);
		return 0;
	}
	if (!t.tls_port && seen && seen->snd_init & SL_FLOW_FIRST_PLAIN)
		t.state = SL_TLS_NOT_TLS;
	if (t.tls_port) {
		err = tcp_bytes_sent(fd, &sent);
		if (err)
			return err;
		if (sent) {
			set(rec, SL_VERDICT_DENY, SL_REASON_SNI_UNCHECKED, rec->rule);
			return 0;
		}
	}
	err = loader_sock_tls_set(r->loader, fd, &t);
	if (err)
		return err;
	if (!t.tls_port)
		return 0;
	err = tcp_bytes_sent(fd, &sent);
	if (err)
		return err;
	if (sent && loader_sock_state(r->loader, fd, &flow, &now) > 0 &&
	    now.state == SL_TLS_PENDING)
		set(rec, SL_VERDICT_DENY, SL_REASON_SNI_UNCHECKED, rec->rule);
	return 0;
}

/*
 * The rule (0-based) a TCP flow to port under rule (-1: none) goes on under once its ClientHello
 * named n, as the packet layer puts it (skb.bpf.c sni_rule_take): rule itself when it is one of
 * n's, else the first of n's (strictest first) that allows the port; none does: -1 (the
 * default) under a policy whose default allows, else SNI_RULE_NONE (sni_port).
 */
#define SNI_RULE_NONE (-2L)
static long sni_name_rule(const struct policy *p, const struct sl_sni_name *n, long rule,
			  uint16_t port)
{
	size_t i;

	for (i = 0; rule >= 0 && i < SL_LEARNED_RULES && n->rule_ids[i]; i++)
		if (n->rule_ids[i] == policy_rule_id((size_t)rule))
			return rule;
	for (i = 0; i < SL_LEARNED_RULES && n->rule_ids[i]; i++)
		if (rule_id_takes(p, n->rule_ids[i], port, SL_PROTO_TCP))
			return policy_rule_index(p, n->rule_ids[i]);
	return p->default_verdict == POLICY_DEFAULT_ALLOW ? -1 : SNI_RULE_NONE;
}

/*
 * After a switch, a TCP flow the new policy allows through a name alone is one a connect() now
 * would have put under the server-name check, and is judged as one: what it said in its
 * ClientHello must pass under the new policy's names. One whose ClientHello passed must have
 * named a host that resolved to this address and that the new policy still allows (sl_sni_ok,
 * carried over by the switch for allowed names only), and goes on under one of that name's own
 * rules there (sni_name_rule; sni_port when none allows its port); one not yet past its first
 * payload (pending) is checked by the new programs; one whose first payload was not TLS off the
 * TLS port is left as a connect() would leave it; one that was never watched is watched from
 * now on (watch_from_now). A denial names the rule that allows the address.
 */
static void judge_server_name(struct run *r, int fd, const struct sl_sk_tls *t, bool has_tls,
			      const struct sl_flow *flow, uint32_t host_id,
			      struct records_preexisting *rec)
{
	struct sl_sni_name named;
	const uint8_t *addr;
	long rule;
	char buf[256];
	const char *name;
	int family, err;

	if (rec->protocol != IPPROTO_TCP || rec->verdict != SL_VERDICT_ALLOW || !rec->by_name)
		return;
	if (!has_tls) {
		err = watch_from_now(r, fd, host_id, flow, rec);
		if (err) {
			fprintf(stderr, "sluice: run %s: socket %llu cannot be held to the "
				"server-name check: %s; denied\n", r->run_id,
				(unsigned long long)rec->cookie, strerror(-err));
			set(rec, SL_VERDICT_DENY, SL_REASON_SNI_UNCHECKED, rec->rule);
		}
		return;
	}
	if (t->state != SL_TLS_ALLOWED && t->state != SL_TLS_AWAIT_SERVER &&
	    t->state != SL_TLS_EXPECT_CH2)
		return;
	addr = packet_daddr(rec, &family);
	name = t->sni_host_id ? hostnames_name(r->hosts, t->sni_host_id, buf, sizeof(buf)) : NULL;
	if (!name || loader_sni_get(r->loader, family, addr, name, &named)) {
		set(rec, SL_VERDICT_DENY, SL_REASON_SNI_MISMATCH, rec->rule);
		return;
	}
	/*
	 * Under one of the name's own rules and its host budget, as the packet layer puts it
	 * (sni_rule_take); a name learned under no rule (report mode, unlisted) moves nothing.
	 */
	if (!named.rule_ids[0])
		return;
	rule = sni_name_rule(r->policy, &named, rec->rule, rec->dport);
	if (rule == SNI_RULE_NONE) {
		set(rec, SL_VERDICT_DENY, SL_REASON_SNI_PORT, rec->rule);
	} else {
		rec->rule = rule;
		rec->sni_host = named.host_id;
	}
}

void preexisting_unreadable(enum sl_mode mode, const struct sl_rule_caps *new_caps,
			    struct records_preexisting *rec)
{
	bool capped = new_caps && (new_caps->max_req || new_caps->max_resp ||
				   new_caps->max_total_req || new_caps->max_total_resp);

	if (rec->verdict != SL_VERDICT_ALLOW)
		return;
	if ((rec->protocol == IPPROTO_TCP && rec->by_name) || capped) {
		set(rec, SL_VERDICT_DENY, SL_REASON_FLOW_UNREADABLE, rec->rule);
		rec->enforced = mode == SL_MODE_ENFORCE;
	}
}

/* Why the switch could not read the socket the scan found (sock_dup's error, or 0: reused). */
static const char *unread_why(int err)
{
	if (!err)
		return "its fd now names another file";
	if (err == -EPERM)
		return "pidfd_getfd: Operation not permitted (Yama ptrace_scope, an LSM)";
	if (err == -ESRCH)
		return "pidfd_getfd: its holder exited";
	return strerror(-err);
}

/*
 * After a switch, the flow's state in the kernel is the new policy's judgment: its rule (the
 * new policy's number for it), its caps and host totals, the host it goes to, and for a
 * denial its reason (the backstop then judges its packets in full, and drops them in enforce
 * mode should the socket outlive its destruction). Its generation (era) becomes the new
 * policy's: the packet layer trusts the flow's state again, and its record names the rule by
 * the new policy. learned: what the run learned for the address, whatever its TTL (as
 * connect() names the host).
 */
static void flow_rejudge(struct run *r, const struct sl_learned *learned,
			 const struct records_preexisting *rec, struct sl_flow *f)
{
	struct sl_rule_caps caps = {};
	bool allow = rec->verdict == SL_VERDICT_ALLOW;
	uint16_t rid = rec->rule >= 0 ? policy_rule_id((size_t)rec->rule) : SL_RULE_DEFAULT;

	f->rule_id = rid;
	/* under the rule of its ClientHello's name: that name's host budget (sni_rule_take) */
	f->host_id = rec->sni_host ? rec->sni_host : learned ? learned->host_id : 0;
	f->deny_reason = allow ? 0 : rec->reason;
	f->era = loader_era(r->loader); /* the packet layer trusts it again */
	/* as flow_start (bpf/sock_addr.bpf.c): a denial keeps caps only for a spent budget */
	flow_caps_set(f, (allow || rec->reason == SL_REASON_HOST_CAP) &&
				 !loader_rule_caps(r->loader, rid, &caps) ? &caps : NULL);
}

/*
 * A ClientHello the old policy's names denied in report mode left its reason on the socket
 * (sl_sk_tls.deny_reason), which the egress program copies into a flow recorded as allowed: a
 * flow the new policy allows would be recorded denied again at its next packet, and judged in
 * full at every one. The reason goes with the old judgment; a socket the check denied for good
 * (SL_TLS_DENIED: its data is still dropped) keeps it, as does a flow denied now (its own reason
 * is in the flow already). Read again just before the write, as the flow is.
 */
static void tls_deny_forget(struct run *r, int fd, const struct records_preexisting *rec)
{
	struct sl_sk_tls t;
	struct sl_flow f;
	int state, err;

	if (rec->verdict != SL_VERDICT_ALLOW || rec->protocol != IPPROTO_TCP)
		return;
	state = loader_sock_state(r->loader, fd, &f, &t);
	if (state < 0 || !(state & LOADER_SOCK_TLS) || !t.deny_reason ||
	    t.state == SL_TLS_DENIED)
		return;
	t.deny_reason = 0;
	err = loader_sock_tls_set(r->loader, fd, &t);
	if (err && err != -ENOENT)
		fprintf(stderr, "sluice: run %s: socket %llu keeps its old server-name denial on "
			"record: %s\n", r->run_id, (unsigned long long)rec->cookie,
			strerror(-err));
}

static int judge(struct run *r, bool rejudge, char *err, size_t err_len)
{
	struct preexisting_scan s;
	enum sl_mode mode = r->policy->mode;
	uint64_t now_boot;
	char why[160];
	size_t i;
	int ret;

	ret = preexisting_scan(r->cg.path, r->cg.id, &s, err, err_len);
	if (ret)
		return ret;
	now_boot = (uint64_t)util_clock_ns(CLOCK_BOOTTIME);
	for (i = 0; i < s.n; i++) {
		struct preexisting_sock *ps = &s.socks[i];
		struct records_preexisting *rec = &ps->rec;
		struct sl_learned learned, *lp = NULL, *named = NULL;
		int family, fd = -1, state = 0, dup_err = 0;
		struct sl_flow flow;
		struct sl_sk_tls tls;
		uint8_t a[16];

		/* the learned entry of the address the programs judge (an IPv4 one it carries) */
		family = policy_judged_addr(rec->family, rec->dst, a);
		/*
		 * As the kernel: an entry past its TTL allows nothing, after a switch too (the
		 * backstop judges a report-mode denial's packets by it, and a connect() now would
		 * be refused); it still names the host.
		 */
		if (r->loader && !loader_learned(r->loader, family, a, &learned)) {
			named = &learned;
			if (!learned.expires_ns || learned.expires_ns > now_boot)
				lp = &learned;
		}
		/* a switch: what the kernel keeps on the socket is judged and rewritten too */
		if (rejudge && r->loader) {
			struct stat st;

			/* the very socket the scan found, not one that took its fd number since */
			fd = sock_dup(rec->pid, ps->tid, ps->fd);
			dup_err = fd < 0 ? fd : 0;
			if (fd >= 0 && (fstat(fd, &st) || st.st_ino != rec->inode)) {
				close(fd);
				fd = -1;
			}
			if (fd < 0)
				rec->unread = unread_why(dup_err);
			state = fd >= 0 ? loader_sock_state(r->loader, fd, &flow, &tls) : 0;
			if (state < 0)
				state = 0;
		}
		if (r->loader && to_resolver(rec, loader_dns_port(r->loader)))
			set(rec, SL_VERDICT_ALLOW, SL_REASON_DNS_REDIRECT, -1);
		else
			preexisting_verdict(r->policy, mode, lp, rec);
		if (r->loader)
			judge_budget(r->loader, mode, lp, rec);
		if (rejudge && r->loader && fd < 0) {
			struct sl_rule_caps caps;
			bool has_caps = rec->rule >= 0 &&
					!loader_rule_caps(r->loader,
							  policy_rule_id((size_t)rec->rule), &caps);

			preexisting_unreadable(mode, has_caps ? &caps : NULL, rec);
			fprintf(stderr, "sluice: run %s: socket %llu (pid %u, fd %d): its state in the "
				"kernel cannot be read (%s): %s\n", r->run_id,
				(unsigned long long)rec->cookie, rec->pid, ps->fd, rec->unread,
				rec->verdict == SL_VERDICT_DENY ? "denied" :
				"left as the new policy judges it");
		} else if (rejudge && r->loader) {
			judge_server_name(r, fd, &tls, state & LOADER_SOCK_TLS,
					  state & LOADER_SOCK_FLOW ? &flow : NULL,
					  named ? named->host_id : 0, rec);
			rec->enforced = rec->verdict == SL_VERDICT_DENY &&
					(mode == SL_MODE_ENFORCE ||
					 rec->reason == SL_REASON_BLACKHOLE);
			if (state & LOADER_SOCK_FLOW) {
				struct sl_sk_tls now;
				int again;

				/*
				 * Its counts as they are now, not as before the judging above: what
				 * the programs count between this read and the write is lost to the
				 * flow (no partial write of socket storage), a window of two calls.
				 */
				again = loader_sock_state(r->loader, fd, &flow, &now);
				if (again < 0 || !(again & LOADER_SOCK_FLOW))
					state &= ~LOADER_SOCK_FLOW;
			}
			if (state & LOADER_SOCK_FLOW) {
				/* first: a packet between the writes must not copy it back */
				tls_deny_forget(r, fd, rec);
				flow_rejudge(r, named, rec, &flow);
				ret = loader_sock_flow_set(r->loader, fd, &flow);
				if (ret && ret != -ENOENT)
					fprintf(stderr, "sluice: run %s: the flow of socket %llu "
						"keeps its old policy's rule: %s\n", r->run_id,
						(unsigned long long)rec->cookie, strerror(-ret));
			}
			/*
			 * Should the socket outlive its destruction, its data still goes nowhere:
			 * the backstop drops a denied flow's packets only where the new policy
			 * denies their address, not for a server name or a spent budget.
			 */
			if (rec->enforced && rec->protocol == IPPROTO_TCP && fd >= 0)
				loader_sock_tls_deny(r->loader, fd);
		}
		if (fd >= 0)
			close(fd);
		if (rec->verdict == SL_VERDICT_ALLOW)
			rec->flow = "open";
		else if (!rec->enforced)
			rec->flow = "left open (would deny: report mode)";
		else
			rec->flow = destroy_outcome(destroy_sock(r, &s, ps), why, sizeof(why));
		records_preexisting(&r->rec, rec);
	}
	ret = (int)s.n;
	preexisting_scan_free(&s);
	return ret;
}

int preexisting_judge(struct run *r, char *err, size_t err_len)
{
	return judge(r, false, err, err_len);
}

int preexisting_rejudge(struct run *r, char *err, size_t err_len)
{
	return judge(r, true, err, err_len);
}
