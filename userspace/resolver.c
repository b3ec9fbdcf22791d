// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The run's resolver. One thread accepts (UDP datagrams, TCP connections) and queues them; a few
 * workers answer, each query with blocking I/O bounded by timeouts, so a slow upstream delays
 * only the queries that need it. Sockets are bound inside the run's network namespace by the
 * thread that creates the resolver; the threads themselves, and so every upstream socket, live in
 * sluice's own namespace.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../bpf/addr.bpf.h"
#include "dns.h"
#include "resolver.h"
#include "hostnames.h"
#include "sockdiag.h"
#include "util.h"

#define N_WORKERS 4
/* the resolver's own ports: privileged, so the run cannot bind them (see bind_listeners) */
#define RESOLVER_PORT_LO 600
#define RESOLVER_PORT_HI 1024
#define MAX_QUEUED 256
#define UPSTREAM_TIMEOUT_MS 2000
#define UPSTREAM_TRIES 2
#define TCP_CLIENT_TIMEOUT_S 5
#define TCP_MAX_QUERIES 64
#define MAX_CHAIN 8

enum transport { T_UDP, T_TCP };

struct job {
	struct job *next;
	enum transport transport;
	int fd;	       /* UDP: the listener to answer from; TCP: the accepted connection */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	size_t len;
	uint8_t msg[DNS_MSG_MAX];
};

struct resolver {
	struct resolver_opts o;
	struct loader *loader;
	int udp[2], tcp[2]; /* [0] IPv4, [1] IPv6; -1 when that family has no loopback */
	uint16_t port;
	int stop_fd;
	int diag_fd;		/* NETLINK_SOCK_DIAG in the run's netns, to name query senders */
	pthread_mutex_t diag_lock; /* one request in flight on it at a time */

	pthread_t acceptor;
	pthread_t workers[N_WORKERS];
	int n_workers;
	bool acceptor_started;
	bool halted;

	pthread_mutex_t lock; /* the queue, stopping */
	pthread_cond_t cond;
	/*
	 * o.policy and the loader's programs: each query is answered (decided and learned) under
	 * one policy. Held shared for a whole answer, exclusively by a switch (resolver_lock).
	 */
	pthread_rwlock_t policy_lock;
	struct job *head, *tail;
	size_t queued;
	bool stopping;
};

/* An answer being assembled for one query. */
struct outcome {
	const char *decision;
	bool enforced; /* false: report mode let through what enforcing would refuse */
	const char *rule;
	uint8_t rcode;
	char why[256];
	char chain[MAX_CHAIN][DNS_NAME_MAX];
	size_t n_chain;
	struct dns_rr addrs[RESOLVER_MAX_ADDRS];
	size_t n_addrs;
};

static int close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
	return -1;
}

int resolver_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *port_s = NULL;
	unsigned long port = 53;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || (size_t)(close - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = '\0';
		if (close[1] == ':')
			port_s = close + 2;
		else if (close[1])
			return -EINVAL;
	} else {
		const char *colon = strchr(s, ':');

		/* one colon: ADDR:PORT; several: a bare IPv6 address */
		if (colon && !strchr(colon + 1, ':')) {
			if ((size_t)(colon - s) >= sizeof(host))
				return -EINVAL;
			memcpy(host, s, (size_t)(colon - s));
			host[colon - s] = '\0';
			port_s = colon + 1;
		} else if (util_copy(host, sizeof(host), s)) {
			return -EINVAL;
		}
	}
	if (port_s) {
		errno = 0;
		port = strtoul(port_s, &end, 10);
		if (errno || *end || !*port_s || port == 0 || port > 65535)
			return -EINVAL;
	}
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
		*len = sizeof(struct sockaddr_in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		*len = sizeof(struct sockaddr_in6);
		return 0;
	}
	return -EINVAL;
}

int resolver_format_addr(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		return util_fmt(buf, len, "%s:%u", host, ntohs(sin->sin_port));
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		return util_fmt(buf, len, "[%s]:%u", host, ntohs(sin6->sin6_port));
	}
	return -EAFNOSUPPORT;
}

int resolver_upstream_from_file(const char *path, struct sockaddr_storage *ss, socklen_t *len)
{
	char line[512], addr[INET6_ADDRSTRLEN + 1];
	FILE *f = fopen(path, "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " nameserver %46s", addr) != 1)
			continue;
		/* a scoped link-local nameserver ("fe80::1%eth0") cannot be named as ADDR */
		if (strchr(addr, '%'))
			continue;
		if (!strchr(addr, ':'))
			err = resolver_parse_addr(addr, ss, len);
		else {
			char bracketed[INET6_ADDRSTRLEN + 3];

			err = util_fmt(bracketed, sizeof(bracketed), "[%s]", addr);
			if (!err)
				err = resolver_parse_addr(bracketed, ss, len);
		}
		if (!err)
			break;
	}
	fclose(f);
	return err;
}

/* --- listeners ------------------------------------------------------------------------------ */

static int bind_loopback(int family, int type, uint16_t port, uint16_t *bound)
{
	struct sockaddr_storage ss = {};
	socklen_t len;
	int fd, one = 1, err;

	fd = socket(family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin->sin_port = htons(port);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		/* v6-only: mapped v4 queries go to the v4 listener, as the redirect sends them */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6addr_loopback;
		sin6->sin6_port = htons(port);
		len = sizeof(*sin6);
	}
	if (type == SOCK_STREAM)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) ||
	    (type == SOCK_STREAM && listen(fd, 64))) {
		err = -errno;
		close(fd);
		return err;
	}
	if (bound) {
		len = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &len)) {
			err = -errno;
			close(fd);
			return err;
		}
		*bound = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
						   ((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	return fd;
}

/* Close every listener bound so far. */
static void close_listeners(struct resolver *r)
{
	int k;

	for (k = 0; k < 2; k++) {
		r->udp[k] = close_fd(r->udp[k]);
		r->tcp[k] = close_fd(r->tcp[k]);
	}
}

/*
 * All four listeners on one port: UDP and TCP on 127.0.0.1 and, where the namespace has it, ::1
 * (without it, v6 DNS fails closed: nothing listens where the redirect sends it). port 0: the
 * kernel's pick for the first. -EADDRINUSE if another socket holds it on any of them.
 */
static int bind_at(struct resolver *r, uint16_t port)
{
	int fd;

	fd = bind_loopback(AF_INET, SOCK_DGRAM, port, &r->port);
	if (fd < 0)
		return fd == -EADDRNOTAVAIL ? -ENETDOWN : fd;
	r->udp[0] = fd;
	fd = bind_loopback(AF_INET, SOCK_STREAM, r->port, NULL);
	if (fd < 0)
		goto fail;
	r->tcp[0] = fd;
	fd = bind_loopback(AF_INET6, SOCK_DGRAM, r->port, NULL);
	if (fd == -EADDRNOTAVAIL || fd == -EAFNOSUPPORT)
		return 0;
	if (fd < 0)
		goto fail;
	r->udp[1] = fd;
	fd = bind_loopback(AF_INET6, SOCK_STREAM, r->port, NULL);
	if (fd < 0)
		goto fail;
	r->tcp[1] = fd;
	return 0;
fail:
	close_listeners(r);
	return fd;
}

/*
 * The port: the one given (the one a resumed run's programs send DNS to), or a free one from
 * 600 up, below the namespace's ip_unprivileged_port_start (1024 by default), that no entry of
 * the services database names: an unprivileged process of the run cannot bind it, so were
 * sluice to die, the run could not take its resolver's place for a resume. (A process with
 * CAP_NET_BIND_SERVICE in the namespace — the owner of a user namespace it belongs to, in a
 * rootless container — still could.) Failing that, the kernel's pick, and a word on stderr.
 */
static int bind_listeners(struct resolver *r)
{
	char buf[32];
	uint16_t start, i, port;
	long hi = RESOLVER_PORT_HI;
	int err, attempt;

	if (r->o.port)
		return bind_at(r, r->o.port);
	/* in the namespace the listeners are made in: ports below this need CAP_NET_BIND_SERVICE */
	if (util_read_file("/proc/sys/net/ipv4/ip_unprivileged_port_start", buf, sizeof(buf)) > 0 &&
	    strtol(buf, NULL, 10) < hi)
		hi = strtol(buf, NULL, 10);
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (uint16_t)getpid();
	for (i = 0; hi > RESOLVER_PORT_LO && i < hi - RESOLVER_PORT_LO; i++) {
		port = (uint16_t)(RESOLVER_PORT_LO + (start + i) % (hi - RESOLVER_PORT_LO));
		/* a port a service of the host is known by stays free for it */
		if (getservbyport(htons(port), NULL))
			continue;
		err = bind_at(r, port);
		if (err != -EADDRINUSE)
			return err;
	}
	fprintf(stderr, "sluice: no free port below %ld (ip_unprivileged_port_start) from %d on: "
			"the run's resolver listens on one an unprivileged process of the run could "
			"bind were sluice to die\n",
		hi, RESOLVER_PORT_LO);
	for (attempt = 0; attempt < 16; attempt++) {
		err = bind_at(r, 0);
		if (err != -EADDRINUSE)
			return err;
	}
	return -EADDRINUSE;
}

struct resolver *resolver_new(const struct resolver_opts *o)
{
	struct resolver *r;
	int self_ns = -1, err = 0;

	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->o = *o;
	r->udp[0] = r->udp[1] = r->tcp[0] = r->tcp[1] = -1;
	r->stop_fd = -1;
	r->diag_fd = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->diag_lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	{
		pthread_rwlockattr_t a;

		/* a switch must not starve behind a stream of queries */
		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&r->policy_lock, &a);
		pthread_rwlockattr_destroy(&a);
	}
	if (!o->names) {
		free(r);
		errno = EINVAL;
		return NULL;
	}
	if (o->netns_fd >= 0) {
		self_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (self_ns < 0 || setns(o->netns_fd, CLONE_NEWNET)) {
			err = -errno;
			goto out;
		}
	}
	err = bind_listeners(r);
	/* Without sock_diag queries are still answered, just not attributed to a process. */
	r->diag_fd = sockdiag_open();
	if (self_ns >= 0 && setns(self_ns, CLONE_NEWNET)) {
		/* stuck in the run's namespace: nothing this process does next would be safe */
		fprintf(stderr, "sluice: cannot return to own network namespace: %s\n",
			strerror(errno));
		abort();
	}
	if (err)
		goto out;
	r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->stop_fd < 0)
		err = -errno;
out:
	close_fd(self_ns);
	if (err) {
		resolver_stop(r);
		errno = -err;
		return NULL;
	}
	return r;
}

uint16_t resolver_port(const struct resolver *r)
{
	return r->port;
}

/* --- upstream ------------------------------------------------------------------------------- */

static int io_wait(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

static int read_full(int fd, uint8_t *buf, size_t len, int timeout_ms)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n;
		int err = io_wait(fd, POLLIN, timeout_ms);

		if (err)
			return err;
		n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, buf + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* The response must answer the question we asked, with the id we chose. */
static bool response_matches(const struct dns_response *resp, uint16_t id, const char *name,
			     uint16_t qtype)
{
	return resp->id == id && resp->qtype == qtype && resp->qclass == DNS_CLASS_IN &&
	       !strcmp(resp->qname, name) && (resp->flags & DNS_FLAG_QR);
}

static int query_tcp(struct resolver *r, const uint8_t *q, size_t qlen, uint8_t *buf,
		     size_t *len)
{
	uint8_t hdr[2] = { (uint8_t)(qlen >> 8), (uint8_t)qlen };
	socklen_t elen = sizeof(int);
	int fd, err, soerr = 0;
	size_t rlen;

	fd = socket(r->o.upstream.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&r->o.upstream, r->o.upstream_len) &&
	    errno != EINPROGRESS) {
		err = -errno;
		goto out;
	}
	err = io_wait(fd, POLLOUT, UPSTREAM_TIMEOUT_MS);
	if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen))
		err = -errno;
	if (!err && soerr)
		err = -soerr;
	if (!err)
		err = write_full(fd, hdr, 2);
	if (!err)
		err = write_full(fd, q, qlen);
	if (!err)
		err = read_full(fd, hdr, 2, UPSTREAM_TIMEOUT_MS);
	if (err)
		goto out;
	rlen = ((size_t)hdr[0] << 8) | hdr[1];
	err = read_full(fd, buf, rlen, UPSTREAM_TIMEOUT_MS);
	*len = rlen;
out:
	close(fd);
	return err;
}

/* Ask upstream name/qtype: UDP with a retry, then TCP when the answer was truncated. */
static int ask_upstream(struct resolver *r, const char *name, uint16_t qtype,
			struct dns_response *resp, char *why, size_t why_len)
{
	struct dns_query q = { .qtype = qtype, .qclass = DNS_CLASS_IN };
	uint8_t out[512], *in;
	size_t qlen, rlen = 0;
	uint16_t id;
	int fd = -1, err, attempt;

	in = malloc(DNS_MSG_MAX);
	if (!in)
		return -ENOMEM;
	if (util_copy(q.name, sizeof(q.name), name) ||
	    getrandom(&id, sizeof(id), 0) != sizeof(id)) {
		err = -EINVAL;
		goto out;
	}
	err = dns_build_query(&q, id, out, sizeof(out), &qlen);
	if (err)
		goto out;
	fd = socket(r->o.upstream.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&r->o.upstream, r->o.upstream_len)) {
		err = -errno;
		util_fmt(why, why_len, "upstream unreachable: %s", strerror(errno));
		goto out;
	}
	err = -ETIMEDOUT;
	for (attempt = 0; attempt < UPSTREAM_TRIES && err; attempt++) {
		if (send(fd, out, qlen, 0) < 0) {
			err = -errno;
			continue;
		}
		/* Wait for the matching answer; stray or malformed datagrams are ignored. */
		for (;;) {
			ssize_t n;

			err = io_wait(fd, POLLIN, UPSTREAM_TIMEOUT_MS);
			if (err)
				break;
			n = recv(fd, in, DNS_MSG_MAX, 0);
			if (n < 0) {
				err = -errno;
				break;
			}
			err = dns_parse_response(in, (size_t)n, resp, why, why_len);
			if (!err && response_matches(resp, id, name, qtype))
				break;
			err = -EAGAIN;
		}
	}
	if (err) {
		if (!why[0])
			util_fmt(why, why_len, "upstream did not answer: %s", strerror(-err));
		goto out;
	}
	if (resp->flags & DNS_FLAG_TC) {
		err = query_tcp(r, out, qlen, in, &rlen);
		if (!err)
			err = dns_parse_response(in, rlen, resp, why, why_len);
		if (!err && !response_matches(resp, id, name, qtype))
			err = -EBADMSG;
		if (err && !why[0])
			util_fmt(why, why_len, "upstream TCP retry failed: %s", strerror(-err));
	}
out:
	close_fd(fd);
	free(in);
	return err;
}

/* --- answers -------------------------------------------------------------------------------- */

/* Advance cur along the CNAME records of one response; records off the chain are ignored. */
static int follow_chain(const struct dns_response *resp, char *cur, struct outcome *oc)
{
	bool advanced = true;
	size_t i;

	while (advanced) {
		advanced = false;
		for (i = 0; i < resp->n_answers; i++) {
			const struct dns_rr *rr = &resp->answers[i];

			if (rr->type != DNS_TYPE_CNAME || !rr->decoded || strcmp(rr->name, cur))
				continue;
			if (oc->n_chain >= MAX_CHAIN) {
				util_fmt(oc->why, sizeof(oc->why), "CNAME chain longer than %d",
					 MAX_CHAIN);
				return -ELOOP;
			}
			util_copy(oc->chain[oc->n_chain++], DNS_NAME_MAX, rr->data.target);
			util_copy(cur, DNS_NAME_MAX, rr->data.target);
			advanced = true;
			break;
		}
	}
	return 0;
}

/*
 * Resolve qname: follow its CNAME chain, asking upstream again for the last name when an answer
 * stops at a CNAME without addresses, and collect the addresses at the end of the chain.
 */
static int collect(struct resolver *r, const char *qname, uint16_t qtype, struct outcome *oc)
{
	struct dns_response *resp;
	char cur[DNS_NAME_MAX], before[DNS_NAME_MAX];
	int err = 0, hop;
	size_t i;

	resp = malloc(sizeof(*resp));
	if (!resp)
		return -ENOMEM;
	util_copy(cur, sizeof(cur), qname);
	oc->rcode = DNS_RCODE_SERVFAIL;
	for (hop = 0;; hop++) {
		if (hop > MAX_CHAIN) {
			util_fmt(oc->why, sizeof(oc->why), "CNAME chain not resolved in %d queries",
				 MAX_CHAIN);
			err = -ELOOP;
			goto out;
		}
		memset(resp, 0, sizeof(*resp));
		err = ask_upstream(r, cur, qtype, resp, oc->why, sizeof(oc->why));
		if (err)
			goto out;
		if (DNS_RCODE(resp->flags) == DNS_RCODE_NXDOMAIN) {
			oc->rcode = DNS_RCODE_NXDOMAIN;
			goto out;
		}
		if (DNS_RCODE(resp->flags) != DNS_RCODE_NOERROR) {
			util_fmt(oc->why, sizeof(oc->why), "upstream answered rcode %u",
				 DNS_RCODE(resp->flags));
			err = -EREMOTEIO;
			goto out;
		}
		util_copy(before, sizeof(before), cur);
		err = follow_chain(resp, cur, oc);
		if (err)
			goto out;
		for (i = 0; i < resp->n_answers && oc->n_addrs < RESOLVER_MAX_ADDRS; i++) {
			const struct dns_rr *rr = &resp->answers[i];

			if (rr->type == qtype && rr->decoded && !strcmp(rr->name, cur))
				oc->addrs[oc->n_addrs++] = *rr;
		}
		/* Addresses, or an answer that does not move the chain (no data): done. */
		if (oc->n_addrs || !strcmp(before, cur))
			break;
	}
	oc->rcode = DNS_RCODE_NOERROR;
out:
	free(resp);
	return err;
}

static void addr_string(const struct dns_rr *rr, char *buf, size_t len)
{
	inet_ntop(rr->type == DNS_TYPE_A ? AF_INET : AF_INET6, rr->data.aaaa, buf, (socklen_t)len);
}

/*
 * Refuse the whole answer if any address points where a public name must not: the blackhole
 * ("never"), or private space (loopback, RFC 1918, ULA, …: only if a cidrs rule lists the
 * address), in every form an IPv6 address can carry an IPv4 one. Classified by the kernel
 * programs' own code (bpf/addr.bpf.h), so that no answer is handed out that the kernel would
 * only blackhole at connect().
 */
static bool answer_refused(struct resolver *r, const char *qname, struct outcome *oc,
			   bool *blackhole)
{
	size_t i;

	for (i = 0; i < oc->n_addrs; i++) {
		const struct dns_rr *rr = &oc->addrs[i];
		int family = rr->type == DNS_TYPE_A ? AF_INET : AF_INET6;
		char a[INET6_ADDRSTRLEN], emb[INET_ADDRSTRLEN + 16] = "";
		enum sl_addr_class cls;
		bool embedded;
		__u32 v4;

		cls = addr_class(family, rr->data.aaaa, &v4, &embedded);
		if (cls == SL_ADDR_PUBLIC ||
		    (cls == SL_ADDR_PRIVATE &&
		     policy_cidr_covers(r->o.policy, family, rr->data.aaaa)))
			continue;
		addr_string(rr, a, sizeof(a));
		if (embedded) {
			memcpy(emb, ", embeds ", 9);
			inet_ntop(AF_INET, &v4, emb + 9, sizeof(emb) - 9);
		}
		*blackhole = cls == SL_ADDR_BLACKHOLE;
		util_fmt(oc->why, sizeof(oc->why), "upstream answered %s for %s (%s address%s%s)",
			 a, qname, *blackhole ? "blackhole" : "private",
			 *blackhole ? "" : " no cidrs rule lists", emb);
		return true;
	}
	return false;
}

/* "a, b, c": the rules rule_ids names (SL_RULE_DEFAULT ones skipped), into buf. */
static const char *rule_list(const struct policy *p, const uint16_t *rule_ids, size_t n,
			     char *buf, size_t len)
{
	char name[128];
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < n && used < len; i++) {
		if (rule_ids[i] == SL_RULE_DEFAULT)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
					 policy_rule_id_name(p, rule_ids[i], name, sizeof(name)));
	}
	return buf;
}

/*
 * Why rr cannot be learned for qname under rule_ids: a learned address carries at most
 * SL_LEARNED_RULES rules, however many of the names that share it (a CDN's) bring them. Says the
 * address, the name, the limit and the rules that take the slots, so that the operator can tell
 * it from the map being full and knows which rules to merge.
 */
static void why_rules_full(struct resolver *r, const char *qname, const struct dns_rr *rr,
			   const uint16_t *rule_ids, size_t n_rules, struct outcome *oc)
{
	char a[INET6_ADDRSTRLEN], held[128] = "", mine[128];
	struct sl_learned cur;

	addr_string(rr, a, sizeof(a));
	rule_list(r->o.policy, rule_ids, n_rules, mine, sizeof(mine));
	if (!loader_learned(r->loader, rr->type == DNS_TYPE_A ? AF_INET : AF_INET6, rr->data.aaaa,
			    &cur))
		rule_list(r->o.policy, cur.rule_ids, SL_LEARNED_RULES, held, sizeof(held));
	if (n_rules > SL_LEARNED_RULES)
		util_fmt(oc->why, sizeof(oc->why),
			 "cannot record learned address %s for %s: an address carries at most %d "
			 "rules (SL_LEARNED_RULES), and at least %d list the name (%s)",
			 a, qname, SL_LEARNED_RULES, SL_LEARNED_RULES + 1, mine);
	else
		util_fmt(oc->why, sizeof(oc->why),
			 "cannot record learned address %s for %s: an address carries at most %d "
			 "rules (SL_LEARNED_RULES), it has %s already and the name needs %s",
			 a, qname, SL_LEARNED_RULES, held[0] ? held : "none", mine);
}

/*
 * An answer refused after its first n pairs were written (hostnames_answer_pair): the pairs and
 * index names it added go, so that no pair lets TLS name the server on an address the client
 * was not given for it. One that cannot go is said in oc->why after the refusal.
 */
static void unanswer_pairs(struct resolver *r, const char *qname, uint32_t host_id,
			   const struct loader_learn_addr *addrs,
			   const struct hostnames_added *added, size_t n, struct outcome *oc)
{
	char a[INET6_ADDRSTRLEN];
	int err;

	while (n--) {
		err = hostnames_unanswer_pair(r->o.names, r->loader, addrs[n].family,
					      addrs[n].addr, qname, host_id, &added[n]);
		if (!err || err == -ENOENT)
			continue;
		addr_string(&oc->addrs[n], a, sizeof(a));
		util_fmt_append(oc->why, sizeof(oc->why),
				"; and cannot take back its server-name pair for %s: %s", a,
				strerror(-err));
	}
}

/*
 * Write every address into the run's maps before the client can see any of them, under every
 * rule that lists the name (each may allow other ports). An answer one of whose addresses
 * cannot take all those rules is refused whole: none of its addresses is then learned for the
 * name, under some of its rules or all (loader_learn_answer checks and writes them as one step).
 */
static int learn(struct resolver *r, const char *qname, long first_rule, struct outcome *oc)
{
	uint32_t host_id = hostnames_intern(r->o.names, r->loader, qname);
	int intern_err = host_id ? 0 : errno ? errno : EINVAL;
	/* one rule more than an address can carry already says that it cannot */
	uint16_t rule_ids[SL_LEARNED_RULES + 1];
	struct loader_learn_addr addrs[RESOLVER_MAX_ADDRS];
	struct hostnames_added added[RESOLVER_MAX_ADDRS];
	struct sl_sni_name sni;
	char a[INET6_ADDRSTRLEN];
	uint64_t now = (uint64_t)util_clock_ns(CLOCK_BOOTTIME);
	size_t n_rules = 0, i, failed;
	long rule;
	int err = 0;

	/* report mode, unlisted (first_rule -1): under no rule, so that decisions name the host */
	for (rule = first_rule; rule >= 0 && n_rules < SL_LEARNED_RULES + 1;
	     rule = policy_match_host_from(r->o.policy, qname, (size_t)rule + 1))
		rule_ids[n_rules++] = policy_rule_id((size_t)rule);
	for (i = 0; i < oc->n_addrs; i++) {
		const struct dns_rr *rr = &oc->addrs[i];

		addrs[i] = (struct loader_learn_addr){
			.family = rr->type == DNS_TYPE_A ? AF_INET : AF_INET6,
			.addr = rr->data.aaaa,
			.expires_ns = r->o.ttl_mode ? now + (uint64_t)rr->ttl * 1000000000ull : 0,
		};
	}
	/*
	 * A name without a number would pass a ClientHello with host id 0, which the packet layer
	 * and a switch's re-judge read as "no hello passed", have its byte totals kept per address
	 * instead of per name, and be left out of the names its addresses were answered for. So it
	 * is refused, as any answer that cannot be learned is: in report mode too, since a switch
	 * to enforce keeps what report mode learned for a listed name.
	 */
	if (!host_id && oc->n_addrs) {
		if (intern_err == ENOSPC)
			util_fmt(oc->why, sizeof(oc->why), "cannot number the name %s: the run has "
				 "numbered %d names, the most it keeps (SL_HOSTS_MAX)", qname,
				 SL_HOSTS_MAX);
		else
			util_fmt(oc->why, sizeof(oc->why), "cannot number the name %s: %s", qname,
				 strerror(intern_err));
		return -intern_err;
	}
	/* a first look, so that an answer refused for its rules leaves not even its pairs */
	err = loader_learn_fits(r->loader, addrs, oc->n_addrs, rule_ids, n_rules, &failed);
	if (err == -EXFULL) {
		why_rules_full(r, qname, &oc->addrs[failed], rule_ids, n_rules, oc);
		return err;
	}
	if (err) {
		util_fmt(oc->why, sizeof(oc->why), "cannot record learned addresses for %s: %s",
			 qname, strerror(-err));
		return err;
	}
	/*
	 * The pairs carry the name's own rules, not the address's union of every name's: a
	 * ClientHello naming it is put under one of them (skb.bpf.c judge_client_hello). More
	 * than fit were refused by the first look above (unless there is no address to learn).
	 */
	err = loader_sni_name(r->loader, &sni, host_id, rule_ids, n_rules);
	if (err == -EXFULL && oc->n_addrs) {
		why_rules_full(r, qname, &oc->addrs[0], rule_ids, n_rules, oc);
		return err;
	}
	if (err && oc->n_addrs) {
		util_fmt(oc->why, sizeof(oc->why), "cannot order the rules of %s by their caps "
			 "(the run's sl_rule_caps): %s", qname, strerror(-err));
		return err;
	}
	for (i = 0; i < oc->n_addrs; i++) {
		/*
		 * First the (address, name) pair and the name among those the address was
		 * answered for (one step: hostnames_answer_pair), before the kernel can judge a
		 * connect() by the address: a record of one lists every name it could be for
		 * (hostnames_sharing). Alone the pair allows nothing (a connect() needs the
		 * learned address), so a full sl_sni_ok leaves no address learned for an answer
		 * the client is refused (SERVFAIL).
		 */
		err = hostnames_answer_pair(r->o.names, r->loader, addrs[i].family, addrs[i].addr,
					    qname, &sni, &added[i]);
		if (err) {
			addr_string(&oc->addrs[i], a, sizeof(a));
			util_fmt(oc->why, sizeof(oc->why),
				 "cannot record learned address %s for %s: %s%s", a, qname,
				 strerror(-err), err == -E2BIG ? " (server-name map full)" : "");
			unanswer_pairs(r, qname, host_id, addrs, added, i, oc);
			return err;
		}
	}
	err = loader_learn_answer(r->loader, addrs, oc->n_addrs, rule_ids, n_rules, host_id,
				  &failed);
	if (!err)
		return 0;
	/* -EXFULL: another answer took the slots since the first look */
	if (err == -EXFULL) {
		why_rules_full(r, qname, &oc->addrs[failed], rule_ids, n_rules, oc);
	} else {
		addr_string(&oc->addrs[failed], a, sizeof(a));
		util_fmt(oc->why, sizeof(oc->why), "cannot record learned address %s for %s: %s%s",
			 a, qname, strerror(-err),
			 err == -E2BIG ? " (learned-address map full)" : "");
	}
	unanswer_pairs(r, qname, host_id, addrs, added, oc->n_addrs, oc);
	return err;
}

static void report(struct resolver *r, const struct dns_query *q, enum transport t,
		   const struct sl_dns_client *who, const struct outcome *oc)
{
	char addrs[RESOLVER_MAX_ADDRS][INET6_ADDRSTRLEN], type[16];
	const char *answers[RESOLVER_MAX_ADDRS], *chain[MAX_CHAIN];
	static const char *const rcodes[] = { "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN",
					      "NOTIMP", "REFUSED" };
	struct resolver_event ev = {
		.name = q->name,
		.qtype = dns_type_name(q->qtype, type, sizeof(type)),
		.decision = oc->decision,
		.enforced = oc->enforced,
		.rule = oc->rule,
		.rcode = oc->rcode < 6 ? rcodes[oc->rcode] : "SERVFAIL",
		.why = oc->why[0] ? oc->why : NULL,
		.transport = t == T_UDP ? "udp" : "tcp",
		.who = who,
		.answers = answers,
		.chain = chain,
	};
	size_t i;

	if (oc->n_addrs) {
		for (i = 0; i < oc->n_addrs; i++) {
			addr_string(&oc->addrs[i], addrs[i], sizeof(addrs[i]));
			answers[ev.n_answers++] = addrs[i];
		}
	}
	for (i = 0; i < oc->n_chain; i++)
		chain[ev.n_chain++] = oc->chain[i];
	if (r->o.on_event)
		r->o.on_event(&ev, r->o.ctx);
}

/* The process behind a query from peer, through its socket cookie; false if unknown. */
static bool who_asked(struct resolver *r, enum transport t, const struct sockaddr_storage *peer,
		      struct sl_dns_client *who)
{
	struct sockaddr_storage server = { .ss_family = peer->ss_family };
	uint64_t cookie;
	int err;

	if (r->diag_fd < 0)
		return false;
	if (peer->ss_family == AF_INET) {
		((struct sockaddr_in *)&server)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		((struct sockaddr_in *)&server)->sin_port = htons(r->port);
	} else {
		((struct sockaddr_in6 *)&server)->sin6_addr = in6addr_loopback;
		((struct sockaddr_in6 *)&server)->sin6_port = htons(r->port);
	}
	pthread_mutex_lock(&r->diag_lock);
	err = sockdiag_cookie(r->diag_fd, t == T_TCP ? IPPROTO_TCP : IPPROTO_UDP, peer, &server,
			      &cookie);
	pthread_mutex_unlock(&r->diag_lock);
	return !err && !loader_dns_client(r->loader, cookie, who);
}

/* The client gets SERVFAIL and no address; a refused answer's chain stays in the log. */
static void refuse_answer(struct outcome *oc)
{
	if (!strcmp(oc->decision, "allow") || !strcmp(oc->decision, "deny"))
		oc->decision = "error"; /* learning failed */
	oc->rcode = DNS_RCODE_SERVFAIL;
	oc->n_addrs = 0;
	oc->n_chain = strcmp(oc->decision, "refused") ? 0 : oc->n_chain;
}

/* Answer one query into out; returns the reply length, or 0 to send nothing. */
static size_t answer_locked(struct resolver *r, const uint8_t *msg, size_t len, enum transport t,
		     const struct sl_dns_client *who, uint8_t *out, size_t cap)
{
	struct dns_query q;
	struct outcome *oc;
	struct dns_rr *rrs = NULL;
	char rule_name[128], why[128] = "";
	size_t max_len, out_len = 0, n = 0, i;
	long rule;
	bool report_mode = r->o.policy->mode == SL_MODE_REPORT;

	if (dns_parse_query(msg, len, &q, why, sizeof(why))) {
		struct resolver_event ev = { .name = "", .qtype = "", .decision = "error",
					     .rule = "default", .rcode = "none", .why = why,
					     .transport = t == T_UDP ? "udp" : "tcp", .who = who };

		/* Not a query we can answer, or even echo: drop it, but say so. */
		if (r->o.on_event)
			r->o.on_event(&ev, r->o.ctx);
		return 0;
	}
	max_len = t == T_TCP ? cap : (q.edns ? q.edns_udp_size : DNS_UDP_MIN);
	if (max_len > cap)
		max_len = cap;

	oc = calloc(1, sizeof(*oc));
	if (!oc)
		return 0;
	rule = policy_match_host(r->o.policy, q.name);
	oc->decision = "allow";
	oc->rule = "default";
	oc->enforced = true;
	if (rule >= 0)
		oc->rule = policy_rule_name(r->o.policy, (size_t)rule, rule_name, sizeof(rule_name));
	if (r->loader && loader_strict(r->loader) && loader_log_down(r->loader)) {
		/*
		 * Strict evidence and the log failed: a socket connected to port 53 before that
		 * still reaches us without any hook, and a query carried upstream is traffic out
		 * (a listed wildcard is a channel: <data>.name). Refuse it, ask nobody.
		 */
		oc->decision = "deny";
		oc->rcode = DNS_RCODE_REFUSED;
		util_copy(oc->why, sizeof(oc->why), "log_unwritable: --strict-evidence");
	} else if (rule < 0 && !report_mode) {
		oc->decision = "deny";
		oc->rcode = DNS_RCODE_NXDOMAIN;
	} else if (q.qtype == DNS_TYPE_A || q.qtype == DNS_TYPE_AAAA) {
		bool blackhole = false;

		/*
		 * Report mode answers unlisted names too, and hands out private answers, so the
		 * run works as it would unconfined while the log says what enforcing would refuse.
		 * Only the blackhole stays refused.
		 */
		if (rule < 0) {
			oc->decision = "deny";
			oc->enforced = false;
		}
		if (collect(r, q.name, q.qtype, oc)) {
			oc->decision = "error";
		} else if (answer_refused(r, q.name, oc, &blackhole)) {
			oc->decision = "refused";
			oc->enforced = !report_mode || blackhole;
		}
		if (!strcmp(oc->decision, "error") || (oc->enforced && strcmp(oc->decision, "allow")))
			refuse_answer(oc);
		else if (learn(r, q.name, rule, oc))
			refuse_answer(oc);
	} else if (rule < 0) {
		/* report mode, a type other than addresses: what enforcing would have said */
		oc->decision = "deny";
		oc->enforced = false;
	}
	/* (other types of a listed name get no data: only addresses are ever passed on) */

	/* The reply: the CNAME chain from the asked name, then the addresses at its end. */
	if (oc->rcode == DNS_RCODE_NOERROR) {
		rrs = calloc(MAX_CHAIN + RESOLVER_MAX_ADDRS, sizeof(*rrs));
		if (!rrs)
			goto out;
		for (i = 0; i < oc->n_chain; i++) {
			struct dns_rr *c = &rrs[n++];

			util_copy(c->name, sizeof(c->name), i ? oc->chain[i - 1] : q.name);
			c->type = DNS_TYPE_CNAME;
			c->rclass = DNS_CLASS_IN;
			c->ttl = oc->n_addrs ? oc->addrs[0].ttl : 60;
			c->decoded = true;
			util_copy(c->data.target, sizeof(c->data.target), oc->chain[i]);
		}
		for (i = 0; i < oc->n_addrs; i++)
			rrs[n++] = oc->addrs[i];
	}
	if (dns_build_reply(&q, oc->rcode, rrs, n, out, max_len, &out_len))
		out_len = 0;
	report(r, &q, t, who, oc);
out:
	free(rrs);
	free(oc);
	return out_len;
}

static size_t answer(struct resolver *r, const uint8_t *msg, size_t len, enum transport t,
		     const struct sl_dns_client *who, uint8_t *out, size_t cap)
{
	size_t n;

	pthread_rwlock_rdlock(&r->policy_lock);
	n = answer_locked(r, msg, len, t, who, out, cap);
	pthread_rwlock_unlock(&r->policy_lock);
	return n;
}

void resolver_lock(struct resolver *r)
{
	if (r)
		pthread_rwlock_wrlock(&r->policy_lock);
}

void resolver_unlock(struct resolver *r)
{
	if (r)
		pthread_rwlock_unlock(&r->policy_lock);
}

void resolver_set_policy(struct resolver *r, const struct policy *p)
{
	if (r)
		r->o.policy = p;
}

/* --- threads -------------------------------------------------------------------------------- */

/* Milliseconds left before deadline; 0 (poll returns at once) once it has passed. */
static int deadline_left(int64_t deadline)
{
	int64_t left = deadline - util_mono_ms();

	return left > 0 ? (int)left : 0;
}

static void serve_tcp(struct resolver *r, int fd, const struct sockaddr_storage *peer,
		      uint8_t *out)
{
	struct sl_dns_client who;
	bool known = who_asked(r, T_TCP, peer, &who);
	struct timeval tv = { .tv_sec = TCP_CLIENT_TIMEOUT_S };
	uint8_t hdr[2], *msg;
	int64_t deadline;
	int i;

	msg = malloc(DNS_MSG_MAX);
	if (!msg)
		return;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* One deadline for the whole connection: a trickling client cannot hold a worker (or halt). */
	deadline = util_mono_ms() + TCP_CLIENT_TIMEOUT_S * 1000;
	for (i = 0; i < TCP_MAX_QUERIES; i++) {
		size_t len, out_len;

		if (read_full(fd, hdr, 2, deadline_left(deadline)))
			break;
		len = ((size_t)hdr[0] << 8) | hdr[1];
		if (read_full(fd, msg, len, deadline_left(deadline)))
			break;
		out_len = answer(r, msg, len, T_TCP, known ? &who : NULL, out + 2, DNS_MSG_MAX);
		if (!out_len)
			break;
		out[0] = (uint8_t)(out_len >> 8);
		out[1] = (uint8_t)out_len;
		if (write_full(fd, out, out_len + 2))
			break;
	}
	free(msg);
}

static void *worker(void *arg)
{
	struct resolver *r = arg;
	uint8_t *out = malloc(DNS_MSG_MAX + 2);

	for (;;) {
		struct job *j;

		pthread_mutex_lock(&r->lock);
		while (!r->head && !r->stopping)
			pthread_cond_wait(&r->cond, &r->lock);
		if (r->stopping && !r->head) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		j = r->head;
		r->head = j->next;
		if (!r->head)
			r->tail = NULL;
		r->queued--;
		pthread_mutex_unlock(&r->lock);

		if (out && j->transport == T_UDP) {
			struct sl_dns_client who;
			bool known = who_asked(r, T_UDP, &j->peer, &who);
			size_t n = answer(r, j->msg, j->len, T_UDP, known ? &who : NULL, out,
					  DNS_MSG_MAX);

			if (n)
				sendto(j->fd, out, n, 0, (struct sockaddr *)&j->peer, j->peer_len);
		} else if (out) {
			serve_tcp(r, j->fd, &j->peer, out);
		}
		if (j->transport == T_TCP)
			close(j->fd);
		free(j);
	}
	free(out);
	return NULL;
}

static void enqueue(struct resolver *r, struct job *j)
{
	pthread_mutex_lock(&r->lock);
	if (r->queued >= MAX_QUEUED) {
		pthread_mutex_unlock(&r->lock);
		/* Overloaded: the client retries; a dropped query never leaks anything. */
		if (j->transport == T_TCP)
			close(j->fd);
		free(j);
		return;
	}
	if (r->tail)
		r->tail->next = j;
	else
		r->head = j;
	r->tail = j;
	r->queued++;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void *acceptor(void *arg)
{
	struct resolver *r = arg;
	struct pollfd p[5];
	int n = 0, i;

	p[n++] = (struct pollfd){ .fd = r->stop_fd, .events = POLLIN };
	for (i = 0; i < 2; i++) {
		if (r->udp[i] >= 0)
			p[n++] = (struct pollfd){ .fd = r->udp[i], .events = POLLIN };
		if (r->tcp[i] >= 0)
			p[n++] = (struct pollfd){ .fd = r->tcp[i], .events = POLLIN };
	}
	for (;;) {
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents)
			break;
		for (i = 1; i < n; i++) {
			struct job *j;
			bool udp = p[i].fd == r->udp[0] || p[i].fd == r->udp[1];
			ssize_t len;

			if (!(p[i].revents & POLLIN))
				continue;
			j = calloc(1, sizeof(*j));
			if (!j)
				continue;
			j->peer_len = sizeof(j->peer);
			if (udp) {
				len = recvfrom(p[i].fd, j->msg, sizeof(j->msg), MSG_DONTWAIT,
					       (struct sockaddr *)&j->peer, &j->peer_len);
				if (len < 0) {
					free(j);
					continue;
				}
				j->transport = T_UDP;
				j->fd = p[i].fd;
				j->len = (size_t)len;
			} else {
				j->fd = accept4(p[i].fd, (struct sockaddr *)&j->peer, &j->peer_len,
						SOCK_CLOEXEC);
				if (j->fd < 0) {
					free(j);
					continue;
				}
				j->transport = T_TCP;
			}
			enqueue(r, j);
		}
	}
	return NULL;
}

int resolver_serve(struct resolver *r, struct loader *loader)
{
	int err, i;

	/*
	 * A run resumed or taken over: its loader reopened the run's pins, and the maps no pin
	 * holds (sl_rule_caps, which orders a shared address's rules) are found through its
	 * programs, collected here, before any worker learns an answer (a no-op for a run loaded
	 * here)
	 */
	err = loader_run_maps(loader);
	if (err)
		return err;
	r->loader = loader;
	for (i = 0; i < N_WORKERS; i++) {
		err = util_thread_create(&r->workers[i], worker, r);
		if (err)
			return err;
		r->n_workers++;
	}
	err = util_thread_create(&r->acceptor, acceptor, r);
	if (err)
		return err;
	r->acceptor_started = true;
	return 0;
}

void resolver_halt(struct resolver *r)
{
	uint64_t one = 1;
	struct job *j;
	int k;

	if (!r || r->halted)
		return;
	r->halted = true;
	if (r->acceptor_started) {
		if (write(r->stop_fd, &one, sizeof(one)) != sizeof(one))
			pthread_cancel(r->acceptor);
		pthread_join(r->acceptor, NULL);
	}
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	/* queued work is dropped: the run is over, nobody is left to answer */
	while ((j = r->head)) {
		r->head = j->next;
		if (j->transport == T_TCP)
			close(j->fd);
		free(j);
	}
	r->tail = NULL;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	for (k = 0; k < r->n_workers; k++)
		pthread_join(r->workers[k], NULL);
	close_listeners(r);
	r->stop_fd = close_fd(r->stop_fd);
	r->diag_fd = close_fd(r->diag_fd);
}

void resolver_stop(struct resolver *r)
{
	if (!r)
		return;
	resolver_halt(r);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->diag_lock);
	pthread_cond_destroy(&r->cond);
	pthread_rwlock_destroy(&r->policy_lock);
	free(r);
}
