// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The workload's socket-family filter (see sandbox_seccomp.h): built here before the fork,
 * installed by the child just before exec, its refusals answered and described by sluice.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/net.h>
#include <linux/seccomp.h>

#include "../bpf/sluice.h"
#include "sandbox_seccomp.h"
#include "util.h"

#define PROG_MAX 256
#define ANSWER_BATCH 64
#define JEQ (BPF_JMP | BPF_JEQ | BPF_K)
#define SOCK_TYPE_MASK 0xf /* the kernel's: the type below SOCK_NONBLOCK, SOCK_CLOEXEC */
#define NO_CALL (-1)
#define X32_BIT 0x40000000u
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* One system call ABI of the machine: its audit arch and the numbers the filter watches. */
struct abi {
	uint32_t arch;	  /* AUDIT_ARCH_* */
	uint32_t nr_bit;  /* x32: the bit its numbers carry; 0 */
	const char *name;
	int socket, socketpair, socketcall, io_uring_setup, seccomp; /* NO_CALL: none */
};

/*
 * Every ABI a task of this machine can make system calls through. A task's arch is whatever it
 * entered the kernel with (a 64-bit binary can "int $0x80"), so each is checked, and a call in
 * any other is killed. socketcall passes its arguments through a pointer the filter cannot
 * read: its socket and socketpair calls are refused whatever the family.
 */
#if defined(__x86_64__)
static const struct abi abis[] = {
	{ AUDIT_ARCH_X86_64, 0, "x86_64", 41, 53, NO_CALL, 425, 317 },
	/* x32 shares the arch and the numbers (with X32_BIT); arguments in registers as above */
	{ AUDIT_ARCH_X86_64, X32_BIT, "x32", 41, 53, NO_CALL, 425, 317 },
	{ AUDIT_ARCH_I386, 0, "i386", 359, 360, 102, 425, 354 },
};
#elif defined(__aarch64__)
static const struct abi abis[] = {
	{ AUDIT_ARCH_AARCH64, 0, "aarch64", 198, 199, NO_CALL, 425, 277 },
	/* EABI has no socketcall; 102 is refused like one anyway (OABI had it) */
	{ AUDIT_ARCH_ARM, 0, "arm", 281, 288, 102, 425, 383 },
};
#else
#define SANDBOX_SECCOMP_UNSUPPORTED
#endif

struct sandbox_seccomp {
	struct sock_filter prog[PROG_MAX];
	unsigned short len;
	int sock[2];   /* [0] the parent's end, [1] the child's */
	int listener;
	size_t req_len, resp_len; /* the kernel's sizes of the notification and the answer */
};

/* The low 32 bits of an argument: what an int parameter of the kernel's is. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#else
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#endif

static const char *const family_names[] = {
	"unspec", "unix", "inet", "ax25", "ipx", "appletalk", "netrom", "bridge", "atmpvc", "x25",
	"inet6", "rose", "decnet", "netbeui", "security", "key", "netlink", "packet", "ash",
	"econet", "atmsvc", "rds", "sna", "irda", "pppox", "wanpipe", "llc", "ib", "mpls", "can",
	"tipc", "bluetooth", "iucv", "rxrpc", "isdn", "phonet", "ieee802154", "caif", "alg", "nfc",
	"vsock", "kcm", "qipcrtr", "smc", "xdp", "mctp",
};

struct builder {
	struct sock_filter *p;
	unsigned int n;
	bool overflow;
};

static unsigned int emit(struct builder *b, unsigned short code, uint32_t k, uint8_t jt, uint8_t jf)
{
	if (b->n >= PROG_MAX) {
		b->overflow = true;
		return PROG_MAX - 1;
	}
	b->p[b->n] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
	return b->n++;
}

/* The false branch of the jump at insn skips to here. */
static void patch_jf(struct builder *b, unsigned int insn)
{
	unsigned int off = b->n - insn - 1;

	if (off > 255 || b->overflow)
		b->overflow = true;
	else
		b->p[insn].jf = (uint8_t)off;
}

static void ret(struct builder *b, uint32_t action)
{
	emit(b, BPF_RET | BPF_K, action, 0, 0);
}

/*
 * With the number in A: when it is nr, the family (argument 0) must be one a hook judges. The
 * kernel turns AF_INET with the obsolete SOCK_PACKET type (argument 1, below its flags) into a
 * packet socket: refused as one.
 */
static void check_family(struct builder *b, uint32_t nr)
{
	unsigned int skip = emit(b, BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 0);

	emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_LO(0), 0, 0);
	emit(b, BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 7, 0);
	emit(b, BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 6, 0);
	emit(b, BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 5, 0);
	emit(b, BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 0, 3);
	emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_LO(1), 0, 0);
	emit(b, BPF_ALU | BPF_AND | BPF_K, SOCK_TYPE_MASK, 0, 0);
	emit(b, BPF_JMP | BPF_JEQ | BPF_K, SOCK_PACKET, 0, 1);
	ret(b, SECCOMP_RET_USER_NOTIF);
	ret(b, SECCOMP_RET_ALLOW);
	patch_jf(b, skip);
}

static void emit_abi(struct builder *b, const struct abi *a, bool io_uring)
{
	unsigned int skip;

	if (a->socket != NO_CALL)
		check_family(b, a->nr_bit | (uint32_t)a->socket);
	if (a->socketpair != NO_CALL)
		check_family(b, a->nr_bit | (uint32_t)a->socketpair);
	if (a->socketcall != NO_CALL) {
		skip = emit(b, JEQ, a->nr_bit | (uint32_t)a->socketcall, 0, 0);
		emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_LO(0), 0, 0);
		emit(b, BPF_JMP | BPF_JEQ | BPF_K, SYS_SOCKET, 2, 0);
		emit(b, BPF_JMP | BPF_JEQ | BPF_K, SYS_SOCKETPAIR, 1, 0);
		ret(b, SECCOMP_RET_ALLOW);
		ret(b, SECCOMP_RET_USER_NOTIF);
		patch_jf(b, skip);
	}
	if (a->io_uring_setup != NO_CALL) {
		skip = emit(b, JEQ, a->nr_bit | (uint32_t)a->io_uring_setup, 0, 0);
		ret(b, io_uring ? SECCOMP_RET_ALLOW : SECCOMP_RET_USER_NOTIF);
		patch_jf(b, skip);
	}
	/*
	 * A listener of the workload's own would take precedence over sluice's for the same call
	 * (the newest filter's notification wins) and could answer it with "continue": a filter
	 * asking for a new listener is refused (EPERM), so sluice's is the only one.
	 */
	skip = emit(b, BPF_JMP | BPF_JEQ | BPF_K, a->nr_bit | (uint32_t)a->seccomp, 0, 0);
	emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_LO(0), 0, 0);
	emit(b, BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_SET_MODE_FILTER, 0, 3);
	emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_LO(1), 0, 0);
	emit(b, BPF_JMP | BPF_JSET | BPF_K, SECCOMP_FILTER_FLAG_NEW_LISTENER, 0, 1);
	ret(b, SECCOMP_RET_USER_NOTIF);
	ret(b, SECCOMP_RET_ALLOW);
	patch_jf(b, skip);
	ret(b, SECCOMP_RET_ALLOW);
}

#ifndef SANDBOX_SECCOMP_UNSUPPORTED
static void build(struct sandbox_seccomp *s, bool io_uring)
{
	struct builder b = { .p = s->prog };
	size_t i, k;

	/* A holds the arch from here to each ABI's block, which ends in returns */
	emit(&b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), 0, 0);
	for (i = 0; i < ARRAY_SIZE(abis); i++) {
		unsigned int skip, x32;

		if (i && abis[i].arch == abis[i - 1].arch)
			continue; /* an x32-style variant, emitted with its arch */
		skip = emit(&b, BPF_JMP | BPF_JEQ | BPF_K, abis[i].arch, 0, 0);
		emit(&b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
		for (k = i + 1; k < ARRAY_SIZE(abis) && abis[k].arch == abis[i].arch; k++) {
			x32 = emit(&b, BPF_JMP | BPF_JSET | BPF_K, abis[k].nr_bit, 0, 0);
			emit_abi(&b, &abis[k], io_uring);
			patch_jf(&b, x32);
		}
		emit_abi(&b, &abis[i], io_uring);
		patch_jf(&b, skip);
	}
	/* an arch this machine should not have: nothing it asks for can be judged */
	ret(&b, SECCOMP_RET_KILL_PROCESS);
	s->len = b.overflow ? 0 : (unsigned short)b.n;
}
#endif

int sandbox_seccomp_new(unsigned int sockets, struct sandbox_seccomp **out)
{
	struct seccomp_notif_sizes sizes;
	struct sandbox_seccomp *s;
	int err;

#ifdef SANDBOX_SECCOMP_UNSUPPORTED
	(void)sockets;
	(void)out;
	(void)s;
	(void)err;
	(void)sizes;
	return -EOPNOTSUPP;
#else
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->sock[0] = s->sock[1] = s->listener = -1;
	build(s, sockets & SL_SOCKETS_IO_URING);
	if (!s->len) {
		err = -E2BIG; /* the table outgrew the program: a bug, caught by every run */
		goto fail;
	}
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s->sock)) {
		err = -errno;
		goto fail;
	}
	/* a newer kernel's structures may be larger than this build's: the kernel writes its own */
	s->req_len = sizes.seccomp_notif > sizeof(struct seccomp_notif) ?
			     sizes.seccomp_notif : sizeof(struct seccomp_notif);
	s->resp_len = sizes.seccomp_notif_resp > sizeof(struct seccomp_notif_resp) ?
			      sizes.seccomp_notif_resp : sizeof(struct seccomp_notif_resp);
	*out = s;
	return 0;
fail:
	sandbox_seccomp_free(s);
	return err;
#endif
}

int sandbox_seccomp_install(const struct sandbox_seccomp *s)
{
	struct sock_fprog fprog = { .len = s->len, .filter = (struct sock_filter *)s->prog };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 'L';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	long fd;
	int err;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
		     &fprog);
	if (fd < 0)
		return -1;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &(int){ (int)fd }, sizeof(int));
	if (sendmsg(s->sock[1], &msg, MSG_NOSIGNAL) != 1) {
		err = errno;
		close((int)fd);
		errno = err;
		return -1;
	}
	close((int)fd);
	return 0;
}

int sandbox_seccomp_take(struct sandbox_seccomp *s)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	ssize_t n;

	/* the child sent it before the exec the caller has seen: it is queued, or never comes */
	close(s->sock[1]);
	s->sock[1] = -1;
	do {
		n = recvmsg(s->sock[0], &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -EPROTO : -errno;
	cm = CMSG_FIRSTHDR(&msg);
	if (n != 1 || (msg.msg_flags & MSG_CTRUNC) || !cm || cm->cmsg_level != SOL_SOCKET ||
	    cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EPROTO;
	memcpy(&s->listener, CMSG_DATA(cm), sizeof(int));
	close(s->sock[0]);
	s->sock[0] = -1;
	return 0;
}

int sandbox_seccomp_fd(const struct sandbox_seccomp *s)
{
	return s ? s->listener : -1;
}

int sandbox_seccomp_release(struct sandbox_seccomp *s)
{
	int fd = s ? s->listener : -1;

	if (s)
		s->listener = -1;
	return fd;
}

int sandbox_seccomp_give(struct sandbox_seccomp *s, int listener)
{
	if (!s || s->listener >= 0)
		return -EALREADY;
	/* the child's way in is not needed: the listener came from another process */
	if (s->sock[0] >= 0)
		close(s->sock[0]);
	if (s->sock[1] >= 0)
		close(s->sock[1]);
	s->sock[0] = s->sock[1] = -1;
	s->listener = listener;
	return 0;
}

static const struct abi *abi_of(const struct seccomp_data *d)
{
#ifndef SANDBOX_SECCOMP_UNSUPPORTED
	size_t i;

	for (i = ARRAY_SIZE(abis); i-- > 0;)
		if (abis[i].arch == d->arch &&
		    (!abis[i].nr_bit || ((uint32_t)d->nr & abis[i].nr_bit)))
			return &abis[i];
#else
	(void)d;
#endif
	return NULL;
}

static const char *family_name(uint32_t family, char *buf, size_t len)
{
	if (family < ARRAY_SIZE(family_names))
		return family_names[family];
	util_fmt(buf, len, "af-%u", family);
	return buf;
}

/* "AF_VSOCK", or the number. */
static void family_const(uint32_t family, char *buf, size_t len)
{
	size_t i;

	if (family >= ARRAY_SIZE(family_names)) {
		util_fmt(buf, len, "%u", family);
		return;
	}
	util_fmt(buf, len, "AF_%s", family_names[family]);
	for (i = 3; buf[i]; i++)
		if (buf[i] >= 'a' && buf[i] <= 'z')
			buf[i] = (char)(buf[i] - 'a' + 'A');
}

/* What the refused call asked for, and the errno it gets. */
static void describe(const struct seccomp_notif *n, struct sandbox_refusal *ref,
		     char *fam_buf, size_t fam_len)
{
	const struct abi *a = abi_of(&n->data);
	uint32_t nr = (uint32_t)n->data.nr, args[3] = { 0 };
	char fam[32];
	int call = -1;

	ref->abi = a ? a->name : "unknown";
	ref->family = NULL;
	ref->err = EPERM;
	if (a)
		nr &= ~a->nr_bit;
	if (a && ((int)nr == a->socket || (int)nr == a->socketpair)) {
		args[0] = (uint32_t)n->data.args[0];
		args[1] = (uint32_t)n->data.args[1];
		args[2] = (uint32_t)n->data.args[2];
		call = (int)nr == a->socket ? SYS_SOCKET : SYS_SOCKETPAIR;
	} else if (a && (int)nr == a->socketcall) {
		/*
		 * Its arguments are in the caller's memory, and not read even for the log: the
		 * caller can put them on a page whose fault never ends (a userfaultfd it never
		 * serves, a FUSE file), and the reader would wait in that fault, with it sluice's
		 * loop: no answers, no log, no signals.
		 */
		ref->err = EAFNOSUPPORT;
		util_fmt(ref->what, sizeof(ref->what), "socketcall(%s, …) (its arguments are "
			 "behind a pointer the filter cannot read)",
			 n->data.args[0] == SYS_SOCKET ? "SYS_SOCKET" : "SYS_SOCKETPAIR");
		return;
	}
	if (call == SYS_SOCKET || call == SYS_SOCKETPAIR) {
		ref->err = EAFNOSUPPORT;
		ref->family = family_name(args[0], fam_buf, fam_len);
		if (args[0] == AF_INET && (args[1] & SOCK_TYPE_MASK) == SOCK_PACKET)
			ref->family = "packet"; /* what the kernel would have made */
		family_const(args[0], fam, sizeof(fam));
		util_fmt(ref->what, sizeof(ref->what), "%s(%s, %u, %u)",
			 call == SYS_SOCKET ? "socket" : "socketpair", fam, args[1], args[2]);
	} else if (a && (int)nr == a->io_uring_setup) {
		/* as on a kernel without io_uring: programs fall back to plain system calls */
		ref->err = ENOSYS;
		util_copy(ref->what, sizeof(ref->what),
			  "io_uring_setup() (io_uring creates sockets of any family unseen; the "
			  "policy can allow it: sockets: [io_uring])");
	} else if (a && (int)nr == a->seccomp) {
		util_copy(ref->what, sizeof(ref->what),
			  "seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER) (a "
			  "listener of the workload's own could let refused calls through)");
	} else {
		util_fmt(ref->what, sizeof(ref->what), "system call %u", nr);
	}
}

/* The caller's process and name, while it still waits (the caller checks that after). */
static void who(struct sandbox_refusal *ref, uint32_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	ref->tid = tid;
	ref->tgid = tid;
	util_fmt(path, sizeof(path), "/proc/%u/status", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* "Name:" is the comm, escaped by the kernel; the same as /proc/PID/comm otherwise */
	p = strstr(buf, "\nTgid:\t");
	if (p)
		ref->tgid = (uint32_t)strtoul(p + 7, NULL, 10);
	util_fmt(path, sizeof(path), "/proc/%u/comm", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(ref->comm));
	close(fd);
	if (n <= 0)
		return;
	memcpy(ref->comm, buf, (size_t)n < sizeof(ref->comm) ? (size_t)n : sizeof(ref->comm));
	p = memchr(ref->comm, '\n', sizeof(ref->comm));
	if (p)
		*p = '\0';
}

/* One waiting call: 1 answered, 0 nothing (any more) to answer, -errno. */
static int answer_one(struct sandbox_seccomp *s, struct seccomp_notif *req,
		      struct seccomp_notif_resp *resp,
		      void (*fn)(const struct sandbox_refusal *ref, void *ctx), void *ctx)
{
	struct sandbox_refusal ref;
	char fam_buf[16];

	memset(req, 0, s->req_len);
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_RECV, req)) {
		/* ENOENT: the caller was killed between poll and here */
		return errno == ENOENT || errno == EINTR ? 0 : -errno;
	}
	memset(&ref, 0, sizeof(ref));
	describe(req, &ref, fam_buf, sizeof(fam_buf));
	who(&ref, req->pid);
	/*
	 * What /proc said is the caller's only if it still waits now: a task that died meanwhile
	 * may have left its pid to another. The answer itself needs no check (a stale id is
	 * refused by the kernel).
	 */
	ref.known = !ioctl(s->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id);
	memset(resp, 0, s->resp_len);
	resp->id = req->id;
	resp->error = -ref.err;
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SEND, resp) && errno != ENOENT)
		return -errno;
	fn(&ref, ctx);
	return 1;
}

int sandbox_seccomp_answer(struct sandbox_seccomp *s,
			   void (*fn)(const struct sandbox_refusal *ref, void *ctx), void *ctx)
{
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;
	struct pollfd pfd = { .fd = s ? s->listener : -1, .events = POLLIN };
	int i, n = 0, err = 0;

	if (pfd.fd < 0)
		return 0;
	req = calloc(1, s->req_len);
	resp = calloc(1, s->resp_len);
	if (!req || !resp) {
		err = -ENOMEM;
		goto out;
	}
	/*
	 * RECV blocks when nothing waits: ask poll first, every time. At most ANSWER_BATCH at a
	 * time: a workload refused in a loop must not keep the caller from its other work.
	 */
	for (i = 0; i < ANSWER_BATCH && poll(&pfd, 1, 0) > 0; i++) {
		if (pfd.revents & POLLIN) {
			err = answer_one(s, req, resp, fn, ctx);
			if (err < 0)
				goto out;
			n += err;
			err = 0;
			continue;
		}
		if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) {
			/* no task uses the filter any more: nothing will come */
			close(s->listener);
			s->listener = -1;
		}
		break;
	}
out:
	free(req);
	free(resp);
	return err ? err : n;
}

void sandbox_seccomp_free(struct sandbox_seccomp *s)
{
	if (!s)
		return;
	if (s->sock[0] >= 0)
		close(s->sock[0]);
	if (s->sock[1] >= 0)
		close(s->sock[1]);
	if (s->listener >= 0)
		close(s->listener);
	free(s);
}
