/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run's own resolver: the only source of name → address facts for the run. It listens on
 * loopback (UDP and TCP, 127.0.0.1 and ::1, one port) inside the run's network namespace; the
 * sock_addr programs send every port-53 packet of the run to it. It answers only names a host
 * rule lists (NXDOMAIN otherwise), forwards those to the upstream resolver, follows CNAME chains,
 * refuses answers that point into the blackhole or private space, and writes every address it
 * hands out into the run's BPF maps *before* it replies, so the first connect never races the map.
 *
 * CNAME chains are attributed to the asked name: "registry.npmjs.org" may be a CNAME to a CDN
 * name the policy does not list, and the addresses at the end of the chain are allowed under the
 * asked name's rule. Every name in the chain is logged.
 */
#ifndef SLUICE_RESOLVER_H
#define SLUICE_RESOLVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../policy/policy.h"
#include "hostnames.h"
#include "loader.h"

#define RESOLVER_MAX_ADDRS 32 /* addresses kept per answer: a cap per name */

struct resolver;

/* What happened to one query, for the log. Strings are valid during the callback only. */
struct resolver_event {
	const char *name;     /* the asked name, lower case */
	const char *qtype;    /* "A", "AAAA", "HTTPS", … */
	const char *decision; /* "allow", "deny" (not listed), "refused" (answer refused), "error" */
	bool enforced;	      /* false: a report-mode run let through what enforcing would refuse */
	const char *rule;     /* rule name, or "default" */
	const char *rcode;    /* what the client got: "NOERROR", "NXDOMAIN", "SERVFAIL", … */
	const char *why;      /* for refused/error: the reason; else NULL */
	const char *transport; /* "udp", "tcp" */
	const struct sl_dns_client *who; /* the querying process, or NULL if it cannot be named */
	const char *const *answers; /* addresses handed out */
	size_t n_answers;
	const char *const *chain; /* CNAME targets followed, in order */
	size_t n_chain;
};

typedef void (*resolver_event_fn)(const struct resolver_event *ev, void *ctx);

struct resolver_opts {
	const struct policy *policy;
	struct sockaddr_storage upstream; /* reached from sluice's own network namespace */
	socklen_t upstream_len;
	int netns_fd;	  /* listen inside this network namespace; -1: sluice's own */
	uint16_t port;	  /* listen on this port (the one a resumed run's programs send to); 0: any */
	struct hostnames *names; /* the run's (required): the ids of the names it learns for */
	bool ttl_mode;	  /* learned addresses expire with the answer's TTL (else: with the run) */
	resolver_event_fn on_event;
	void *ctx;
};

/*
 * Bind the listeners (inside o->netns_fd) and pick the port. Nothing is served until
 * resolver_serve(): the programs need the port before they load, and the resolver needs the
 * loaded maps before it may answer. Sets errno and returns NULL on failure.
 */
struct resolver *resolver_new(const struct resolver_opts *o);

/* Start answering, writing learned addresses through loader. Returns 0 or -errno. */
int resolver_serve(struct resolver *r, struct loader *loader);

/* The port the listeners share, for the redirect (sl_cfg_dns_port). */
uint16_t resolver_port(const struct resolver *r);

/*
 * A switch of the run's policy or mode (switch.c): resolver_lock waits for the queries being
 * answered and holds off new ones; between it and resolver_unlock the caller moves the programs
 * and their learned addresses to the new policy and gives it here (resolver_set_policy), so
 * every answer is decided, and its addresses learned, under one policy. Accept NULL.
 */
void resolver_lock(struct resolver *r);
void resolver_unlock(struct resolver *r);
void resolver_set_policy(struct resolver *r, const struct policy *p);

/* Stop serving and wait for in-flight queries. Idempotent; accepts NULL. */
void resolver_halt(struct resolver *r);

/* Halt if needed, and free. Accepts NULL. */
void resolver_stop(struct resolver *r);

/* The first nameserver of a resolv.conf-style file, port 53. */
int resolver_upstream_from_file(const char *path, struct sockaddr_storage *ss, socklen_t *len);

/* "ADDR", "ADDR:PORT", "[V6]:PORT" → sockaddr. */
int resolver_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* The other way: "ADDR:PORT" or "[V6]:PORT", as resolver_parse_addr reads it. */
int resolver_format_addr(const struct sockaddr_storage *ss, char *buf, size_t len);

#endif /* SLUICE_RESOLVER_H */
