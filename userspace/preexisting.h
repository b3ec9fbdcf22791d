/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sockets a cgroup's processes already hold when a run's programs are attached to it
 * (sluice attach on a running sandbox). The programs judge every connect() and sendmsg() from
 * then on, but a TCP connection or a connected UDP socket made before was never judged: it is
 * found here and judged in userspace by the run's policy, as the kernel would have judged its
 * connect(), and in enforce mode a denied one is destroyed.
 *
 * Sockets are found by who holds them, not by where they were made: every process of the
 * cgroup's subtree (cgroup.procs of each descendant), the socket inodes of its /proc/PID/fd,
 * matched to a sock_diag dump of the process's network namespace, and of the namespace of any
 * inet socket it holds that was made elsewhere (pidfd_getfd, SIOCGSKNS). sock_diag's cgroup-id
 * attribute names the cgroup a socket was created in, which misses a socket made before its
 * process was moved into the cgroup (sluice attach --pid on a process a runtime moved) or
 * passed in over a unix socket, and would blame the run for one it passed out.
 */
#ifndef SLUICE_PREEXISTING_H
#define SLUICE_PREEXISTING_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "../bpf/sluice.h"
#include "../policy/policy.h"
#include "records.h"

struct run;

/* The sockets of a scan, with what destroying one needs. */
struct preexisting_scan {
	struct preexisting_sock *socks;
	size_t n;
	int *netns_fds;	    /* the namespaces the sockets were found in */
	uint64_t *netns_ino; /* their inodes */
	size_t n_netns;
	unsigned int pids; /* processes looked at */
};

/*
 * Every TCP socket (any state but LISTEN and CLOSE: SYN_SENT included) and connected UDP socket,
 * IPv4 and IPv6, held by a process in the subtree at cgroup_path, whose id must be cgroup_id (0:
 * not checked). A socket several processes hold is listed once. 0 or -errno (err says where).
 */
int preexisting_scan(const char *cgroup_path, uint64_t cgroup_id, struct preexisting_scan *s,
		     char *err, size_t err_len);
void preexisting_scan_free(struct preexisting_scan *s);

/* The i-th socket found, for its line. */
struct records_preexisting *preexisting_rec(struct preexisting_scan *s, size_t i);

/*
 * Judge a socket by the policy as the decision layer judges a connect(): the fixed blackhole in
 * every form (bpf/addr.bpf.h), the IPv4 address an IPv6 one carries, CIDR rules with their
 * ports and protocols, the policy default. learned: what the run's resolver learned for the
 * destination (a flow made after the attach but before the scan), or NULL. A flow only a host
 * rule could allow is denied (SL_REASON_PREEXISTING_UNNAMED): its name was resolved before the
 * run's resolver existed, so no rule can vouch for the address. mode: the run's (a report-mode
 * denial is not enforced, except the blackhole's).
 */
void preexisting_verdict(const struct policy *p, enum sl_mode mode,
			 const struct sl_learned *learned, struct records_preexisting *s);

/*
 * Find, judge, log (records_preexisting) and, in enforce mode, destroy the denied ones: the
 * sockets the processes of r's cgroup held before its programs were attached. Call it once
 * the programs are attached, so that nothing new escapes between the scan and the judgement.
 * Returns how many sockets were judged, or -errno (err says why).
 */
int preexisting_judge(struct run *r, char *err, size_t err_len);

/*
 * The same after a live switch (switch.c), under the new policy, in either mode (report mode
 * destroys nothing): a learned address past its TTL vouches for nothing, as in the kernel; a
 * TCP flow the new policy allows through a name alone is judged as a connect() to it now would
 * be: one that passed the server-name check must have named a host the new policy allows (else
 * sni_mismatch), one never watched is watched from now on (on the TLS port only if it has sent
 * nothing yet, else sni_unchecked; off it, one that has sent data by what its first payload
 * began with: plain, left alone, like TLS, sni_unchecked); and each flow's state in the kernel
 * (sl_sk_flow) takes the
 * new judgment: its rule
 * renumbered to the new policy's, that rule's caps and host totals, a denial's reason.
 */
int preexisting_rejudge(struct run *r, char *err, size_t err_len);

/*
 * A switch could not read a socket's state in the kernel (pidfd_getfd failed: Yama's
 * ptrace_scope 3, its holder gone), so cannot write the new judgment into it: the flow would go
 * on under its old rule's caps, unwatched by the server-name check. Fail closed: a flow the new
 * policy allows only with state the kernel must keep for it — TCP through a name alone (the
 * server-name check), or a rule with caps (new_caps: that rule's, NULL if none) — is denied
 * flow_unreadable under that rule (enforced in enforce mode). One allowed by an address rule
 * without caps or by the default, and a denial, keep their judgment.
 */
void preexisting_unreadable(enum sl_mode mode, const struct sl_rule_caps *new_caps,
			    struct records_preexisting *rec);

#endif /* SLUICE_PREEXISTING_H */
