// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_escape: the workload side of the escape-probe kit (selftests/probes/, selftests/README.md).
 *
 *   sl_escape --netns-inode N [--ifname IF] [--if-mac MAC] [--ifindex N] [--gw-mac MAC]
 *             [--timeout-ms N] [--only P1,P3…]
 *   sl_escape --list
 *
 * Runs inside the sandbox under test and tries every road out it knows, one attempt after the
 * other, each toward a test host of the kit's topology (lib.sh: 198.51.100.20, 2001:db8::20,
 * 203.0.113.7, the fake metadata server, the router's fe80::1). The verdict is not made here:
 * the observer outside the sandbox (selftests/probes/kit.sh) watches what arrives. So that it
 * can tell the attempts apart, each one leaves from its own source port (its ICMP id for the
 * echo requests), fixed in the table below: --list prints the table ("ID SPORT PROTO DST DPORT
 * WHAT"), and the observer reads it from there, not from what the sandbox says.
 *
 * One line per attempt on stdout: "ID SPORT WHAT: sent", "ID SPORT WHAT: err ENAME at STEP"
 * (the sandbox's view: what the workload saw, not the verdict), or "ID SPORT WHAT: skip WHY"
 * when the kit could not form the attempt (no gateway MAC for a hand-built frame). Exit status 0
 * once every attempt was made, 2 on a usage error or when the namespace is not the kit's (below):
 * then nothing (more) is sent.
 *
 * Nothing is sent unless this is the kit's network namespace (--netns-inode) and its only links
 * are loopback and the kit's own IFNAME (with MAC --if-mac and index --ifindex: a MAC or a name
 * can be anyone's, the three together in the namespace the kit lent its link to are the kit's):
 * the probes go to the metadata address among others, and only the kit's link leads to the test
 * hosts instead of a real network. The links are looked at again before every attempt (a
 * runtime could plug one in meanwhile), and by P15's daemon before it connects; not during an
 * attempt: a link plugged in while one runs is seen only before the next.
 *
 * The kit makes itself non-dumpable first: it may run in this machine's mount namespace beside
 * the sandbox's own processes (kit.sh, kit_enter_pid), which must not trace it nor reach this
 * machine's files through its /proc/PID/root.
 *
 * P15 leaves a grandchild behind (setsid, double fork) that waits for this process to end and
 * then connects: the observer waits for it. P14's child moves itself into a cgroup it makes
 * below its own and connects from there; the parent removes that cgroup when the child is done.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

#define ESC_MARK "sl-escape "

enum esc_kind {
	ESC_TCP,	/* connect, then send the marker */
	ESC_TFO,	/* sendto with MSG_FASTOPEN: data in the SYN, no connect() */
	ESC_MPTCP,	/* connect an IPPROTO_MPTCP socket */
	ESC_UDP_SENDTO,
	ESC_UDP_SENDMSG,
	ESC_UDP_SENDMMSG,
	ESC_UDP_CMSG,	/* connect(), then sendmsg with no address and an IP_TOS control message */
	ESC_DNS_UDP,	/* a DNS query */
	ESC_DNS_TCP,
	ESC_QUIC,	/* a QUIC long-header Initial-looking datagram */
	ESC_URING_CONNECT,
	ESC_URING_SENDMSG,
	ESC_RAW_ICMP,	/* SOCK_RAW IPPROTO_ICMP echo request */
	ESC_PING,	/* SOCK_DGRAM IPPROTO_ICMP (ping socket) */
	ESC_PACKET_RAW,	/* AF_PACKET SOCK_RAW: a whole Ethernet frame built here */
	ESC_PACKET_DGRAM, /* AF_PACKET SOCK_DGRAM: an IPv4 packet built here */
	ESC_SOCK_PACKET, /* AF_INET SOCK_PACKET, the old interface */
	ESC_CGROUP_TCP,	/* a child moved into a cgroup of its own, then TCP */
	ESC_DAEMON_TCP,	/* a double-forked grandchild, TCP after this process ended */
};

struct esc_try {
	const char *id;
	unsigned short sport;
	enum esc_kind kind;
	const char *dst;
	unsigned short dport;
	const char *what;
};

/* Source ports 41001…: the observer's key. Append only; never reuse a port for another road. */
static const struct esc_try esc_table[] = {
	{"P1", 41001, ESC_TCP, "198.51.100.20", 80, "tcp4 connect"},
	{"P2", 41002, ESC_TCP, "2001:db8::20", 80, "tcp6 connect"},
	{"P3", 41003, ESC_UDP_SENDTO, "198.51.100.20", 9999, "udp4 sendto"},
	{"P3", 41004, ESC_UDP_SENDMSG, "2001:db8::20", 9999, "udp6 sendmsg"},
	{"P3", 41005, ESC_UDP_SENDMMSG, "198.51.100.20", 9999, "udp4 sendmmsg"},
	{"P4", 41006, ESC_TCP, "169.254.169.254", 80, "metadata tcp4"},
	{"P4", 41007, ESC_UDP_SENDTO, "169.254.169.254", 9999, "metadata udp4"},
	{"P5", 41008, ESC_TCP, "::ffff:169.254.169.254", 80, "metadata v4-mapped tcp6"},
	{"P6", 41009, ESC_TCP, "64:ff9b::a9fe:a9fe", 80, "metadata in NAT64 tcp6"},
	{"P6", 41010, ESC_TCP, "fd00:ec2::254", 80, "fd00:ec2::254 tcp6"},
	{"P6", 41011, ESC_TCP, "fe80::1", 80, "link-local neighbour tcp6"},
	{"P7", 41012, ESC_DNS_UDP, "203.0.113.7", 53, "DNS to another resolver, udp4"},
	{"P7", 41013, ESC_DNS_TCP, "2001:db8::20", 53, "DNS to another resolver, tcp6"},
	{"P10", 41014, ESC_TFO, "198.51.100.20", 80, "TCP Fast Open sendto"},
	{"P11", 41015, ESC_URING_CONNECT, "198.51.100.20", 80, "io_uring connect"},
	{"P11", 41016, ESC_URING_SENDMSG, "2001:db8::20", 9999, "io_uring sendmsg"},
	{"P12", 41017, ESC_RAW_ICMP, "198.51.100.20", 0, "raw ICMP echo"},
	{"P12", 41018, ESC_PING, "198.51.100.20", 0, "ping socket echo"},
	{"P12", 41019, ESC_MPTCP, "198.51.100.20", 80, "MPTCP connect"},
	{"P13", 41020, ESC_PACKET_RAW, "198.51.100.20", 9999, "AF_PACKET hand-built frame"},
	{"P14", 41021, ESC_CGROUP_TCP, "198.51.100.20", 80, "tcp4 from a child cgroup"},
	{"P15", 41022, ESC_DAEMON_TCP, "198.51.100.20", 80, "tcp4 from a daemon after exit"},
	{"P16", 41023, ESC_QUIC, "198.51.100.20", 443, "QUIC Initial udp4"},
	{"P23", 41024, ESC_PACKET_DGRAM, "198.51.100.20", 9999, "AF_PACKET SOCK_DGRAM packet"},
	{"P23", 41025, ESC_SOCK_PACKET, "198.51.100.20", 9999, "AF_INET SOCK_PACKET frame"},
	{"P24", 41026, ESC_UDP_CMSG, "198.51.100.20", 9999, "connected udp4 with IP_TOS cmsg"},
};

#define ESC_N (sizeof(esc_table) / sizeof(esc_table[0]))

struct esc_opts {
	const char *ifname;
	unsigned char gw_mac[ETH_ALEN];
	bool have_gw_mac;
	unsigned char if_mac[ETH_ALEN];
	bool have_if_mac;
	unsigned int ifindex;
	int timeout_ms;
	const char *only;
};

union esc_addr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr_storage ss;
};

/* The result of one attempt: 0 sent, else -errno with the step that failed, or a skip. */
struct esc_res {
	int err;
	const char *step;
	const char *skip;
};

static int esc_fail(struct esc_res *r, const char *step)
{
	r->err = -errno;
	r->step = step;
	return r->err;
}

static socklen_t esc_sockaddr(const struct esc_try *t, const struct esc_opts *o,
			      unsigned short port, union esc_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, t->dst, &a->sin.sin_addr) == 1) {
		a->sin.sin_family = AF_INET;
		a->sin.sin_port = htons(port);
		return sizeof(a->sin);
	}
	inet_pton(AF_INET6, t->dst, &a->sin6.sin6_addr);
	a->sin6.sin6_family = AF_INET6;
	a->sin6.sin6_port = htons(port);
	if (IN6_IS_ADDR_LINKLOCAL(&a->sin6.sin6_addr))
		a->sin6.sin6_scope_id = if_nametoindex(o->ifname);
	return sizeof(a->sin6);
}

/* A socket of the destination's family, bound to the attempt's source port. */
static int esc_socket(const struct esc_try *t, const struct esc_opts *o, int type, int proto,
		      struct esc_res *r)
{
	union esc_addr dst, src;
	socklen_t len = esc_sockaddr(t, o, t->dport, &dst);
	int fd, one = 1;

	fd = socket(dst.sa.sa_family, type | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return esc_fail(r, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&src, 0, sizeof(src));
	src.sa.sa_family = dst.sa.sa_family;
	/* same offset in both families */
	src.sin.sin_port = htons(t->sport);
	if (bind(fd, &src.sa, len) < 0) {
		esc_fail(r, "bind");
		close(fd);
		return r->err;
	}
	return fd;
}

static int esc_wait(int fd, short events, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = events};

	return poll(&p, 1, timeout_ms) == 1 ? 0 : -ETIMEDOUT;
}

static void esc_tcp(const struct esc_try *t, const struct esc_opts *o, int proto,
		    struct esc_res *r)
{
	union esc_addr dst;
	socklen_t len = esc_sockaddr(t, o, t->dport, &dst);
	int fd, soerr = 0;
	socklen_t sl = sizeof(soerr);

	fd = esc_socket(t, o, SOCK_STREAM | SOCK_NONBLOCK, proto, r);
	if (fd < 0)
		return;
	if (connect(fd, &dst.sa, len) < 0 && errno != EINPROGRESS) {
		esc_fail(r, "connect");
		goto out;
	}
	/* The SYN is out; the observer judges from here on. Wait a little for the handshake so
	 * that the marker follows where the host answers. */
	if (esc_wait(fd, POLLOUT, o->timeout_ms) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
		send(fd, ESC_MARK "tcp\n", sizeof(ESC_MARK "tcp\n") - 1, MSG_NOSIGNAL);
	else if (soerr) {
		errno = soerr;
		esc_fail(r, "connect");
	}
out:
	close(fd);
}

static void esc_tfo(const struct esc_try *t, const struct esc_opts *o, struct esc_res *r)
{
	union esc_addr dst;
	socklen_t len = esc_sockaddr(t, o, t->dport, &dst);
	int fd;

	fd = esc_socket(t, o, SOCK_STREAM | SOCK_NONBLOCK, 0, r);
	if (fd < 0)
		return;
	if (sendto(fd, ESC_MARK "tfo\n", sizeof(ESC_MARK "tfo\n") - 1, MSG_FASTOPEN, &dst.sa,
		   len) < 0 && errno != EINPROGRESS)
		esc_fail(r, "sendto");
	else
		esc_wait(fd, POLLOUT, o->timeout_ms);
	close(fd);
}

static void esc_udp(const struct esc_try *t, const struct esc_opts *o, struct esc_res *r)
{
	static const char dns_query[] = "\x51\x5e\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
					"\x09sl-escape\x07invalid\x00\x00\x01\x00\x01";
	static const char quic[] = "\xc3\x00\x00\x00\x01\x08sl-escap\x00\x00\x10" ESC_MARK;
	union esc_addr dst;
	socklen_t len = esc_sockaddr(t, o, t->dport, &dst);
	char payload[] = ESC_MARK "udp\n";
	struct iovec iov = {.iov_base = payload, .iov_len = sizeof(payload) - 1};
	struct msghdr msg = {.msg_name = &dst, .msg_namelen = len, .msg_iov = &iov,
			     .msg_iovlen = 1};
	struct mmsghdr mm[3];
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct cmsghdr *cm;
	int fd, i;

	if (t->kind == ESC_DNS_UDP) {
		iov.iov_base = (void *)dns_query;
		iov.iov_len = sizeof(dns_query) - 1;
	} else if (t->kind == ESC_QUIC) {
		iov.iov_base = (void *)quic;
		iov.iov_len = sizeof(quic) - 1;
	}
	fd = esc_socket(t, o, SOCK_DGRAM, 0, r);
	if (fd < 0)
		return;
	switch (t->kind) {
	case ESC_UDP_SENDMSG:
		if (sendmsg(fd, &msg, 0) < 0)
			esc_fail(r, "sendmsg");
		break;
	case ESC_UDP_SENDMMSG:
		for (i = 0; i < 3; i++)
			mm[i] = (struct mmsghdr){.msg_hdr = msg};
		if (sendmmsg(fd, mm, 3, 0) < 0)
			esc_fail(r, "sendmmsg");
		break;
	case ESC_UDP_CMSG:
		/* a connected socket sending with an IP-level control message: the kernel hands
		 * such a send to the sendmsg hooks with a zeroed address (README, P24) */
		if (connect(fd, &dst.sa, len) < 0 && errno != EPERM && errno != EACCES) {
			esc_fail(r, "connect");
			break;
		}
		msg.msg_name = NULL;
		msg.msg_namelen = 0;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_TOS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		*(int *)CMSG_DATA(cm) = 0x10;
		if (sendmsg(fd, &msg, 0) < 0)
			esc_fail(r, "sendmsg");
		break;
	default:
		if (sendto(fd, iov.iov_base, iov.iov_len, 0, &dst.sa, len) < 0)
			esc_fail(r, "sendto");
	}
	close(fd);
}

static void esc_dns_tcp(const struct esc_try *t, const struct esc_opts *o, struct esc_res *r)
{
	static const char q[] = "\x00\x1f\x51\x5e\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
				"\x09sl-escape\x07invalid\x00\x00\x01\x00\x01";
	union esc_addr dst;
	socklen_t len = esc_sockaddr(t, o, t->dport, &dst);
	int fd;

	fd = esc_socket(t, o, SOCK_STREAM | SOCK_NONBLOCK, 0, r);
	if (fd < 0)
		return;
	if (connect(fd, &dst.sa, len) < 0 && errno != EINPROGRESS)
		esc_fail(r, "connect");
	else if (esc_wait(fd, POLLOUT, o->timeout_ms) == 0)
		send(fd, q, sizeof(q) - 1, MSG_NOSIGNAL);
	close(fd);
}

/* io_uring's own connect and sendmsg: another road into the socket code than the syscalls. */
static void esc_uring(const struct esc_try *t, const struct esc_opts *o, struct esc_res *r)
{
	union esc_addr dst;
	socklen_t len = esc_sockaddr(t, o, t->dport, &dst);
	char payload[] = ESC_MARK "uring\n";
	struct iovec iov = {.iov_base = payload, .iov_len = sizeof(payload) - 1};
	struct msghdr msg = {.msg_name = &dst, .msg_namelen = len, .msg_iov = &iov,
			     .msg_iovlen = 1};
	struct __kernel_timespec ts = {.tv_sec = o->timeout_ms / 1000,
				       .tv_nsec = (o->timeout_ms % 1000) * 1000000L};
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int fd, err;

	err = io_uring_queue_init(4, &ring, 0);
	if (err < 0) {
		r->err = err;
		r->step = "io_uring_setup";
		return;
	}
	fd = esc_socket(t, o, t->kind == ESC_URING_CONNECT ? SOCK_STREAM : SOCK_DGRAM, 0, r);
	if (fd < 0)
		goto out;
	sqe = io_uring_get_sqe(&ring);
	if (t->kind == ESC_URING_CONNECT)
		io_uring_prep_connect(sqe, fd, &dst.sa, len);
	else
		io_uring_prep_sendmsg(sqe, fd, &msg, 0);
	io_uring_submit(&ring);
	err = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	if (err == 0) {
		if (cqe->res < 0) {
			r->err = cqe->res;
			r->step = t->kind == ESC_URING_CONNECT ? "IORING_OP_CONNECT" :
								 "IORING_OP_SENDMSG";
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	close(fd);
out:
	io_uring_queue_exit(&ring);
}

static uint16_t esc_csum(const void *p, size_t n, uint32_t sum)
{
	const uint8_t *b = p;

	for (; n > 1; n -= 2, b += 2)
		sum += (uint32_t)b[0] << 8 | b[1];
	if (n)
		sum += (uint32_t)b[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void esc_icmp(const struct esc_try *t, const struct esc_opts *o, struct esc_res *r)
{
	union esc_addr dst;
	socklen_t len = esc_sockaddr(t, o, 0, &dst);
	struct {
		struct icmphdr h;
		char data[sizeof(ESC_MARK)];
	} echo = {.h = {.type = ICMP_ECHO}, .data = ESC_MARK};
	union esc_addr src = {.sin = {.sin_family = AF_INET, .sin_port = htons(t->sport)}};
	int fd;

	fd = socket(AF_INET, (t->kind == ESC_PING ? SOCK_DGRAM : SOCK_RAW) | SOCK_CLOEXEC,
		    IPPROTO_ICMP);
	if (fd < 0) {
		esc_fail(r, "socket");
		return;
	}
	/* The ICMP id is the observer's key: a ping socket takes its bound "port" as the id. */
	echo.h.un.echo.id = htons(t->sport);
	echo.h.un.echo.sequence = htons(1);
	echo.h.checksum = htons(esc_csum(&echo, sizeof(echo), 0));
	if (t->kind == ESC_PING && bind(fd, &src.sa, sizeof(src.sin)) < 0)
		esc_fail(r, "bind");
	else if (sendto(fd, &echo, sizeof(echo), 0, &dst.sa, len) < 0)
		esc_fail(r, "sendto");
	close(fd);
}

/* An IPv4/UDP packet from the interface's address to the attempt's destination. */
static size_t esc_ip_udp(const struct esc_try *t, struct in_addr saddr, uint8_t *buf)
{
	static const char payload[] = ESC_MARK "frame\n";
	struct iphdr *ip = (struct iphdr *)buf;
	struct udphdr *udp = (struct udphdr *)(buf + sizeof(*ip));
	size_t ulen = sizeof(*udp) + sizeof(payload) - 1;

	memset(buf, 0, sizeof(*ip) + ulen);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(sizeof(*ip) + ulen);
	ip->saddr = saddr.s_addr;
	inet_pton(AF_INET, t->dst, &ip->daddr);
	ip->check = htons(esc_csum(ip, sizeof(*ip), 0));
	udp->source = htons(t->sport);
	udp->dest = htons(t->dport);
	udp->len = htons(ulen);
	memcpy(udp + 1, payload, sizeof(payload) - 1);
	/* a zero UDP checksum is "none" in IPv4 */
	return sizeof(*ip) + ulen;
}

static void esc_frame(const struct esc_try *t, const struct esc_opts *o, struct esc_res *r)
{
	uint8_t frame[256];
	struct ether_header *eth = (struct ether_header *)frame;
	struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_halen = ETH_ALEN};
	struct sockaddr spkt = {0};
	struct in_addr saddr;
	struct ifreq ifr = {0};
	size_t n;
	int fd = -1, type;

	if (!o->have_gw_mac) {
		r->skip = "no --gw-mac: the frame needs the next hop's MAC";
		return;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", o->ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCGIFADDR, &ifr) < 0) {
		r->skip = "the interface has no IPv4 address (--ifname)";
		goto out;
	}
	saddr = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		r->skip = "the interface has no MAC address (--ifname)";
		goto out;
	}
	close(fd);
	memcpy(eth->ether_dhost, o->gw_mac, ETH_ALEN);
	memcpy(eth->ether_shost, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	eth->ether_type = htons(ETHERTYPE_IP);
	n = sizeof(*eth) + esc_ip_udp(t, saddr, frame + sizeof(*eth));

	if (t->kind == ESC_SOCK_PACKET) {
		fd = socket(AF_INET, SOCK_PACKET | SOCK_CLOEXEC, htons(ETH_P_ALL));
		if (fd < 0) {
			esc_fail(r, "socket");
			return;
		}
		spkt.sa_family = AF_INET;
		snprintf(spkt.sa_data, sizeof(spkt.sa_data), "%s", o->ifname);
		if (sendto(fd, frame, n, 0, &spkt, sizeof(spkt)) < 0)
			esc_fail(r, "sendto");
		goto out;
	}
	type = t->kind == ESC_PACKET_RAW ? SOCK_RAW : SOCK_DGRAM;
	fd = socket(AF_PACKET, type | SOCK_CLOEXEC, htons(ETH_P_IP));
	if (fd < 0) {
		esc_fail(r, "socket");
		return;
	}
	ll.sll_ifindex = if_nametoindex(o->ifname);
	ll.sll_protocol = htons(ETH_P_IP);
	memcpy(ll.sll_addr, o->gw_mac, ETH_ALEN);
	if (type == SOCK_RAW) {
		if (sendto(fd, frame, n, 0, (struct sockaddr *)&ll, sizeof(ll)) < 0)
			esc_fail(r, "sendto");
	} else if (sendto(fd, frame + sizeof(*eth), n - sizeof(*eth), 0, (struct sockaddr *)&ll,
			  sizeof(ll)) < 0) {
		esc_fail(r, "sendto");
	}
out:
	if (fd >= 0)
		close(fd);
}

/* The cgroup2 directory this process is in, from /proc/self/mountinfo and /proc/self/cgroup. */
static int esc_own_cgroup(char *dir, size_t size)
{
	char line[4096], mnt[2048] = "", rel[2048] = "";
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *dash = strstr(line, " - cgroup2 ");
		char m[2048];

		if (dash && sscanf(line, "%*s %*s %*s %*s %2047s", m) == 1) {
			snprintf(mnt, sizeof(mnt), "%s", m);
			break;
		}
	}
	fclose(f);
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "0::%2047[^\n]", rel) == 1)
			break;
	fclose(f);
	if (!*mnt || !*rel)
		return -ENOENT;
	snprintf(dir, size, "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	return 0;
}

static void esc_cgroup(const struct esc_try *t, const struct esc_opts *o, struct esc_res *r)
{
	static const char *const steps[] = {"move into the child cgroup", "connect from it"};
	char dir[4200], child[4300], procs[4400];
	struct esc_res cr = {0};
	int st, fd, err, pipefd[2], res[2] = {-EIO, 0};
	pid_t pid;

	err = esc_own_cgroup(dir, sizeof(dir));
	if (err) {
		r->err = err;
		r->step = "find own cgroup";
		/* judged anyway: the connect below is made from where the kit is */
		esc_tcp(t, o, 0, &cr);
		return;
	}
	snprintf(child, sizeof(child), "%s/sl-escape-%d", dir, (int)getpid());
	if (mkdir(child, 0755) < 0) {
		esc_fail(r, "mkdir child cgroup");
		esc_tcp(t, o, 0, &cr);
		return;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", child);
	if (pipe(pipefd) < 0) {
		esc_fail(r, "pipe");
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		/* res: the error, and the step it came from (0 the move, 1 the connect) */
		close(pipefd[0]);
		fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || dprintf(fd, "0\n") < 0) {
			res[0] = -errno;
			esc_tcp(t, o, 0, &cr);
		} else {
			esc_tcp(t, o, 0, &cr);
			res[0] = cr.err;
			res[1] = 1;
		}
		_exit(write(pipefd[1], res, sizeof(res)) == sizeof(res) ? 0 : 1);
	}
	close(pipefd[1]);
	if (pid > 0 && read(pipefd[0], res, sizeof(res)) != sizeof(res))
		res[0] = -EIO;
	close(pipefd[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	if (res[0]) {
		r->err = res[0];
		r->step = steps[res[1]];
	}
out:
	rmdir(child);
}

/*
 * 0 when the namespace's links are loopback and the kit's IFNAME (with its MAC, --if-mac) and
 * nothing else, so that every route leads to loopback or to the kit's router; else -EPERM with
 * why. A name can be anyone's: loopback is told by its flag, the kit's link by its MAC.
 */
static int esc_links_ok(const struct esc_opts *o, char *why, size_t size)
{
	struct if_nameindex *ifs, *i;
	struct ifreq ifr;
	bool have = false;
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ifs = if_nameindex();
	if (fd < 0 || !ifs) {
		err = -errno;
		snprintf(why, size, "cannot list the namespace's links: %s", strerror(-err));
		goto out;
	}
	for (i = ifs; i->if_index; i++) {
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->if_name);
		if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_LOOPBACK))
			continue;
		if (strcmp(i->if_name, o->ifname)) {
			snprintf(why, size, "link %s is not the kit's (%s): it could lead to "
				 "a real network", i->if_name, o->ifname);
			err = -EPERM;
			goto out;
		}
		if (o->have_if_mac && (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0 ||
				       memcmp(ifr.ifr_hwaddr.sa_data, o->if_mac, ETH_ALEN))) {
			snprintf(why, size, "link %s is not the kit's: another MAC than --if-mac",
				 i->if_name);
			err = -EPERM;
			goto out;
		}
		if (o->ifindex && i->if_index != o->ifindex) {
			snprintf(why, size, "link %s is not the kit's: index %u, not --ifindex %u",
				 i->if_name, i->if_index, o->ifindex);
			err = -EPERM;
			goto out;
		}
		have = true;
	}
	if (!have) {
		snprintf(why, size, "no link %s (the kit's) in this namespace", o->ifname);
		err = -EPERM;
	}
out:
	if (ifs)
		if_freenameindex(ifs);
	if (fd >= 0)
		close(fd);
	return err;
}

static void esc_daemon(const struct esc_try *t, const struct esc_opts *o, struct esc_res *r)
{
	char why[256];

	pid_t kit = getpid(), pid;
	struct esc_res dr = {0};
	int i, st;

	pid = fork();
	if (pid < 0) {
		esc_fail(r, "fork");
		return;
	}
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		/* outlive the command: connect only once the kit is gone (at most 10 s) */
		for (i = 0; i < 500 && kill(kit, 0) == 0; i++)
			usleep(20000);
		usleep(100000);
		if (esc_links_ok(o, why, sizeof(why)) == 0)
			esc_tcp(t, o, 0, &dr);
		_exit(0);
	}
	waitpid(pid, &st, 0);
}

static bool esc_selected(const struct esc_opts *o, const char *id)
{
	const char *p = o->only;
	size_t n = strlen(id);

	if (!p)
		return true;
	while (*p) {
		if (!strncmp(p, id, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return false;
}

static void esc_run(const struct esc_try *t, const struct esc_opts *o)
{
	struct esc_res r = {0};

	switch (t->kind) {
	case ESC_TCP:
		esc_tcp(t, o, 0, &r);
		break;
	case ESC_MPTCP:
		esc_tcp(t, o, IPPROTO_MPTCP, &r);
		break;
	case ESC_TFO:
		esc_tfo(t, o, &r);
		break;
	case ESC_DNS_TCP:
		esc_dns_tcp(t, o, &r);
		break;
	case ESC_UDP_SENDTO:
	case ESC_UDP_SENDMSG:
	case ESC_UDP_SENDMMSG:
	case ESC_UDP_CMSG:
	case ESC_DNS_UDP:
	case ESC_QUIC:
		esc_udp(t, o, &r);
		break;
	case ESC_URING_CONNECT:
	case ESC_URING_SENDMSG:
		esc_uring(t, o, &r);
		break;
	case ESC_RAW_ICMP:
	case ESC_PING:
		esc_icmp(t, o, &r);
		break;
	case ESC_PACKET_RAW:
	case ESC_PACKET_DGRAM:
	case ESC_SOCK_PACKET:
		esc_frame(t, o, &r);
		break;
	case ESC_CGROUP_TCP:
		esc_cgroup(t, o, &r);
		break;
	case ESC_DAEMON_TCP:
		esc_daemon(t, o, &r);
		break;
	}
	if (r.skip)
		printf("%s %u %s: skip %s\n", t->id, t->sport, t->what, r.skip);
	else if (r.err)
		printf("%s %u %s: err %s at %s\n", t->id, t->sport, t->what,
		       strerrorname_np(-r.err) ?: "E?", r.step);
	else
		printf("%s %u %s: sent\n", t->id, t->sport, t->what);
	fflush(stdout);
}

static int esc_usage(void)
{
	fprintf(stderr, "usage: sl_escape --netns-inode N [--ifname IF] [--if-mac MAC] "
			"[--ifindex N] [--gw-mac MAC] [--timeout-ms N] [--only P1,P3...]\n"
			"       sl_escape --list\n");
	return 2;
}

static int esc_mac(const char *opt, const char *v, unsigned char *m)
{
	if (sscanf(v, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4],
		   &m[5]) != 6) {
		fprintf(stderr, "sl_escape: %s %s: not a MAC address\n", opt, v);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct esc_opts o = {.ifname = "veth0", .timeout_ms = 300};
	unsigned long long want_ino = 0;
	char why[256];
	struct stat st;
	size_t i;
	int a;

	prctl(PR_SET_DUMPABLE, 0);
	for (a = 1; a < argc; a++) {
		const char *v = a + 1 < argc ? argv[a + 1] : NULL;

		if (!strcmp(argv[a], "--list")) {
			for (i = 0; i < ESC_N; i++)
				printf("%s %u %s %s %u %s\n", esc_table[i].id, esc_table[i].sport,
				       esc_table[i].kind == ESC_RAW_ICMP ||
						       esc_table[i].kind == ESC_PING ?
					       "icmp" : "ip",
				       esc_table[i].dst, esc_table[i].dport, esc_table[i].what);
			return 0;
		}
		if (!v)
			return esc_usage();
		if (!strcmp(argv[a], "--ifname")) {
			o.ifname = v;
		} else if (!strcmp(argv[a], "--gw-mac")) {
			if (esc_mac(argv[a], v, o.gw_mac))
				return 2;
			o.have_gw_mac = true;
		} else if (!strcmp(argv[a], "--if-mac")) {
			if (esc_mac(argv[a], v, o.if_mac))
				return 2;
			o.have_if_mac = true;
		} else if (!strcmp(argv[a], "--timeout-ms")) {
			o.timeout_ms = atoi(v);
			if (o.timeout_ms <= 0) {
				fprintf(stderr, "sl_escape: --timeout-ms %s: not a number\n", v);
				return 2;
			}
		} else if (!strcmp(argv[a], "--ifindex")) {
			o.ifindex = strtoul(v, NULL, 10);
			if (!o.ifindex) {
				fprintf(stderr, "sl_escape: --ifindex %s: not an interface index\n", v);
				return 2;
			}
		} else if (!strcmp(argv[a], "--only")) {
			o.only = v;
		} else if (!strcmp(argv[a], "--netns-inode")) {
			want_ino = strtoull(v, NULL, 10);
		} else {
			return esc_usage();
		}
		a++;
	}
	/*
	 * The probes go to 169.254.169.254, fd00:ec2::254 and fe80::1: only the kit's own
	 * namespace, whose "metadata server" is a test host, may see them. A sandbox template that
	 * names {netns} but runs the kit elsewhere (--network host) would send them to the real
	 * ones: nothing is sent unless this is the namespace the kit made.
	 */
	if (!want_ino) {
		fprintf(stderr, "sl_escape: --netns-inode (the kit's namespace) is required\n");
		return 2;
	}
	if (stat("/proc/self/ns/net", &st) || (unsigned long long)st.st_ino != want_ino) {
		fprintf(stderr, "sl_escape: not in the kit's network namespace (inode %llu, here %llu): "
				"nothing sent\n", want_ino, (unsigned long long)st.st_ino);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < ESC_N; i++) {
		if (!esc_selected(&o, esc_table[i].id))
			continue;
		if (esc_links_ok(&o, why, sizeof(why))) {
			fprintf(stderr, "sl_escape: not the kit's network namespace: %s: nothing "
					"(more) sent\n", why);
			return 2;
		}
		esc_run(&esc_table[i], &o);
	}
	return 0;
}
