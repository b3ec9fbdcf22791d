// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_sockfam: make sockets of any family, through every way a task has (P23): socket(),
 * socketpair(), the i386 ABI from this 64-bit binary ("int $0x80": socket, socketpair and
 * socketcall), the x32 ABI, io_uring_setup, and a seccomp filter with a listener of its own.
 * It only creates: a socket is closed at once, never connected (an AF_VSOCK connect would reach
 * the hypervisor).
 *
 *   sl_sockfam CALL…    CALL: socket:FAMILY[:TYPE] | socketpair:FAMILY | i386-socket:FAMILY |
 *                       i386-socketpair:FAMILY | i386-socketcall:FAMILY | x32-socket:FAMILY |
 *                       i386-socketcall-uffd:FAMILY | io_uring | listener
 *
 * FAMILY is a number or unix, inet, inet6, netlink, packet, vsock, …; TYPE a number (default
 * SOCK_STREAM, SOCK_RAW for packet, SOCK_DGRAM for netlink). Prints one line per CALL: "CALL ok"
 * or "CALL ERRNO_NAME". Exit status 0, or 2 on a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/net.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <fcntl.h>
#include <sys/ioctl.h>

static const struct {
	const char *name;
	int family;
} families[] = {
	{ "unix", AF_UNIX },	   { "inet", AF_INET },	      { "inet6", AF_INET6 },
	{ "netlink", AF_NETLINK }, { "packet", AF_PACKET },   { "vsock", AF_VSOCK },
	{ "tipc", AF_TIPC },	   { "bluetooth", AF_BLUETOOTH }, { "alg", AF_ALG },
	{ "xdp", AF_XDP },	   { "can", AF_CAN },	      { "rds", AF_RDS },
	{ "key", AF_KEY },	   { "smc", AF_SMC },	      { "qipcrtr", AF_QIPCRTR },
	{ "kcm", AF_KCM },	   { "mctp", 45 },	      { "llc", AF_LLC },
	{ "appletalk", AF_APPLETALK }, { "x25", AF_X25 },     { "pppox", AF_PPPOX },
	{ "rxrpc", AF_RXRPC },	   { "phonet", AF_PHONET },   { "ieee802154", AF_IEEE802154 },
	{ "caif", AF_CAIF },	   { "nfc", AF_NFC },
};

#ifdef __x86_64__
/* An i386 system call from this 64-bit task: its arguments are 32 bits wide. */
static long sys32(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return ret;
}

static long sys_x32(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr | 0x40000000L), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}
#endif

static int parse_family(const char *s)
{
	char *end;
	long n;
	size_t i;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (!strcmp(s, families[i].name))
			return families[i].family;
	n = strtol(s, &end, 10);
	return *s && !*end && n >= 0 && n < 256 ? (int)n : -1;
}

static int default_type(int family)
{
	return family == AF_PACKET ? SOCK_RAW : family == AF_NETLINK ? SOCK_DGRAM : SOCK_STREAM;
}

/* -errno or a descriptor (or 0) of one CALL. */
static long one(const char *call)
{
	char buf[64], *fam, *type;
	int family, kind;

	if (!strcmp(call, "io_uring")) {
		struct io_uring_params p;
		long fd;

		memset(&p, 0, sizeof(p));
		fd = syscall(__NR_io_uring_setup, 4, &p);
		return fd < 0 ? -errno : fd;
	}
	if (!strcmp(call, "listener")) {
		struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		struct sock_fprog prog = { .len = 1, .filter = &allow };
		long fd;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			return -errno;
		fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
			     SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
		return fd < 0 ? -errno : fd;
	}
	if (snprintf(buf, sizeof(buf), "%s", call) >= (int)sizeof(buf))
		return -EINVAL;
	fam = strchr(buf, ':');
	if (!fam)
		return -EINVAL;
	*fam++ = '\0';
	type = strchr(fam, ':');
	if (type)
		*type++ = '\0';
	family = parse_family(fam);
	if (family < 0)
		return -EINVAL;
	kind = type ? atoi(type) : default_type(family);
	if (!strcmp(buf, "socket")) {
		int fd = socket(family, kind, 0);

		return fd < 0 ? -errno : fd;
	}
	if (!strcmp(buf, "socketpair")) {
		int sv[2];

		if (socketpair(family, kind, 0, sv))
			return -errno;
		close(sv[1]);
		return sv[0];
	}
#ifdef __x86_64__
	if (!strcmp(buf, "i386-socket"))
		return sys32(359, family, kind, 0);
	if (!strcmp(buf, "i386-socketpair")) {
		/* the pair's descriptors land in 32-bit addressable memory */
		int *sv = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		long r;

		if (sv == MAP_FAILED)
			return -errno;
		__asm__ volatile("int $0x80"
				 : "=a"(r)
				 : "a"(360L), "b"((long)family), "c"((long)kind), "d"(0L),
				   "S"((long)(unsigned long)sv)
				 : "memory");
		if (r == 0) {
			close(sv[1]);
			r = sv[0];
		}
		munmap(sv, 4096);
		return r;
	}
	if (!strcmp(buf, "i386-socketcall")) {
		unsigned int *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		long r;

		if (args == MAP_FAILED)
			return -errno;
		args[0] = (unsigned int)family;
		args[1] = (unsigned int)kind;
		args[2] = 0;
		r = sys32(102, SYS_SOCKET, (long)(unsigned long)args, 0);
		munmap(args, 4096);
		return r;
	}
	if (!strcmp(buf, "i386-socketcall-uffd")) {
		/*
		 * The arguments on a page whose first touch waits for a userfaultfd handler that
		 * never answers: whoever reads them to describe the call waits forever too.
		 */
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC), uffd;
		void *page;

		if (dev < 0)
			return -errno;
		uffd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
		close(dev);
		if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
			return -errno;
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (page == MAP_FAILED)
			return -errno;
		reg.range.start = (unsigned long)page;
		reg.range.len = 4096;
		if (ioctl(uffd, UFFDIO_REGISTER, &reg))
			return -errno;
		return sys32(102, SYS_SOCKET, (long)(unsigned long)page, 0);
	}
	if (!strcmp(buf, "x32-socket"))
		return sys_x32(41, family, kind, 0);
#endif
	return -EINVAL;
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: sl_sockfam CALL…\n");
		return 2;
	}
	for (i = 1; i < argc; i++) {
		long r = one(argv[i]);

		if (r == -EINVAL && !strchr(argv[i], ':') && strcmp(argv[i], "io_uring") &&
		    strcmp(argv[i], "listener")) {
			fprintf(stderr, "sl_sockfam: unknown call \"%s\"\n", argv[i]);
			return 2;
		}
		if (r >= 0) {
			if (r > 2)
				close((int)r);
			printf("%s ok\n", argv[i]);
		} else {
			printf("%s %s\n", argv[i], strerrorname_np((int)-r));
		}
		fflush(stdout);
	}
	return 0;
}
