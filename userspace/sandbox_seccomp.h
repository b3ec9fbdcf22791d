/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The workload's seccomp filter: socket families no hook judges, on every kernel and without
 * the BPF-LSM layer. cgroup/sock_create sees inet sockets only, so socket() and socketpair() of
 * any family but unix, inet, inet6 and netlink (vsock: a path to the hypervisor; packet, tipc,
 * bluetooth…) are refused with EAFNOSUPPORT, on every ABI the machine runs (x86_64, x32, i386;
 * aarch64, arm), and so is io_uring_setup (io_uring makes sockets no system call shows) unless
 * the policy lists sockets: [io_uring].
 *
 * Allowed families are decided inside the filter (SECCOMP_RET_ALLOW: an ordinary socket costs a
 * few instructions). Refusals go to sluice as user notifications: the child sends the listener
 * to sluice over a unix socket before exec; sluice answers each with the errno and logs it.
 * When sluice is gone, the kernel fails such calls with ENOSYS: closed, never open.
 */
#ifndef SLUICE_SANDBOX_SECCOMP_H
#define SLUICE_SANDBOX_SECCOMP_H

#include <stdbool.h>
#include <stdint.h>

struct sandbox_seccomp;

/* One refused call, as sluice answered it. */
struct sandbox_refusal {
	const char *abi;    /* "x86_64", "x32", "i386", "aarch64", "arm" */
	const char *family; /* "vsock", "packet", … or "af-N"; NULL when the call has no family */
	char what[192];     /* the call: "socket(AF_VSOCK, 1, 0)", "io_uring_setup()", … */
	int err;	    /* the errno the call got */
	bool known;	    /* tid, tgid and comm are the caller's (it was still waiting) */
	uint32_t tid;
	uint32_t tgid;
	char comm[16];
};

/*
 * Build the filter (sockets: the policy's SL_SOCKETS_* bits; SL_SOCKETS_IO_URING allows
 * io_uring_setup) and the pair of sockets the listener goes through. -EOPNOTSUPP on an
 * architecture the filter does not know: the run must not start without it.
 */
int sandbox_seccomp_new(unsigned int sockets, struct sandbox_seccomp **out);

/*
 * In the child, after its ids are set and last before exec (async-signal-safe): set
 * no_new_privs (always: an unprivileged task needs it for a filter, and a privileged one must
 * not regain through exec what the filter holds), install the filter, send its listener to the
 * parent. Returns 0, or -1 with errno set.
 */
int sandbox_seccomp_install(const struct sandbox_seccomp *s);

/* In the parent, once the child has exec'd: take the listener. 0 or -errno. */
int sandbox_seccomp_take(struct sandbox_seccomp *s);

/* The listener to poll for POLLIN, or -1 (not taken, or closed after a hangup). */
int sandbox_seccomp_fd(const struct sandbox_seccomp *s);

/*
 * A run handed to the daemon (handoff.c): the client takes the listener out of its filter
 * (release: the descriptor is the caller's, -1 if none) and sends it; the daemon gives it to the
 * filter of the run it set up, which then answers and logs as if its own child had sent it.
 * give: 0, or -EALREADY when s has a listener already.
 */
int sandbox_seccomp_release(struct sandbox_seccomp *s);
int sandbox_seccomp_give(struct sandbox_seccomp *s, int listener);

/*
 * Answer every refused call waiting now, then call fn with each, for the log. A hangup (no task
 * uses the filter any more) closes the listener. Returns how many were answered, or -errno.
 */
int sandbox_seccomp_answer(struct sandbox_seccomp *s,
			   void (*fn)(const struct sandbox_refusal *ref, void *ctx), void *ctx);

void sandbox_seccomp_free(struct sandbox_seccomp *s);

#endif /* SLUICE_SANDBOX_SECCOMP_H */
