/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Names for what the kernel decided: turns a validated struct sl_decision_event into the strings
 * the log and the stderr notice show (addresses, protocol, hook, verdict, rule name).
 */
#ifndef SLUICE_DECISION_H
#define SLUICE_DECISION_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <linux/types.h>

#include "../bpf/sluice.h"
#include "../policy/policy.h"

struct decision_view {
	char dst[INET6_ADDRSTRLEN];    /* as the program saw it */
	char dst_v4[INET_ADDRSTRLEN];  /* the IPv4 address judged for an embedding form, or "" */
	char dst_port[INET6_ADDRSTRLEN + 16]; /* "1.2.3.4:80/tcp", "[2001:db8::1]:80/tcp";
						 denials only (for their notice) */
	char proto[16];		       /* "tcp", "udp", or "ip-N" */
	char rule[128];		       /* rule name, "default" or "blackhole" */
	char comm[64];		       /* JSON- and terminal-safe: non-printables as \xNN */
	const char *family;	       /* "ipv4", "ipv6" */
	const char *hook;	       /* "connect4", … */
	const char *decision;	       /* "allow", "deny" */
	const char *reason;	       /* "rule", "default_deny", "blackhole", … */
	bool deny;
	bool enforced;
	bool surface; /* a socket kind or option, not a destination: dst is empty */
};

/* Fails with -EINVAL when a field holds a value no sluice program writes. */
int decision_view_init(struct decision_view *v, const struct sl_decision_event *ev,
		       const struct policy *p);

const char *decision_hook_name(unsigned int hook);
const char *decision_reason_name(unsigned int reason);

/* A kernel comm made safe for JSON and terminals: non-printables as \xNN. */
void decision_safe_comm(char *out, size_t len, const char comm[16]);

#endif /* SLUICE_DECISION_H */
