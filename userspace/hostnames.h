/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A run's host names. Records carry a host_id, not a name (the programs have no room for one):
 * the run's resolver hands ids out densely from 1, keeping each name with the run in the kernel
 * (loader_host_name) before the id is used, so that whoever writes the run's log, first or
 * resuming, names every record alike. Thread-safe: the resolver interns from its workers while
 * the records writer names.
 */
#ifndef SLUICE_HOSTNAMES_H
#define SLUICE_HOSTNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hostnames;
struct loader;

/* Sets errno and returns NULL. */
struct hostnames *hostnames_new(void);
void hostnames_free(struct hostnames *h); /* accepts NULL */

/*
 * The id of name, made if new (kept with the run through loader first, when given). 0 when it
 * cannot be, errno saying why: ENOSPC (SL_HOSTS_MAX names already), ENOMEM, or the kernel's
 * copy's error.
 */
uint32_t hostnames_intern(struct hostnames *h, struct loader *loader, const char *name);

/* The id of name, 0 if it has none. Accepts NULL. */
uint32_t hostnames_id(struct hostnames *h, const char *name);

/* The name host_id stands for, copied into buf; NULL if none (or h is NULL). */
const char *hostnames_name(struct hostnames *h, uint32_t host_id, char *buf, size_t len);

/*
 * A run taken over: the names (and their ids) the run's first resolver kept with it
 * (loader_host_names), into an empty h. -EPROTO if they are not the dense set it writes.
 */
int hostnames_adopt(struct hostnames *h, const struct loader *loader);

/*
 * Which names the run's resolver answered an address for. The kernel keeps one per address
 * (sl_learned.host_id: the first), so a record names that one even when the workload asked for
 * another name that shares the address (a CDN's); records ask here which names it could have
 * been. An address's index key (hostnames_addr_key) is the address the kernel judges: 16
 * bytes, an IPv4 address in the first 4 and the rest zero, an IPv6 form that carries an IPv4
 * address for the policy (::ffff:a.b.c.d, 64:ff9b::a.b.c.d, ::a.b.c.d) as that IPv4 address.
 * An address keeps its first HOSTNAMES_KEPT names; those answered past them are only counted.
 *
 * hostnames_answer_pair: the resolver's step for one address of an answer: the (address, name)
 * pair kept with the run (loader_sni_learn: v, the name and its own rules) and the name (v's
 * host_id) noted as answered now (CLOCK_BOOTTIME, read under the lock), as one step under the
 * index's lock, before the address is written into the run's maps; a name's first answer
 * counts. 0, or the error of either (then neither is kept).
 * added says what of it is new, for hostnames_unanswer_pair to take back when the answer is
 * refused after all (its learned addresses cannot be written): a pair left in the map would let
 * TLS name that server on the address under another name's rule, a name left in the index
 * would make records list a name the address was never given for; it returns 0 or the pair's
 * delete's -errno (the index's part cannot fail).
 * hostnames_answered: the index's part of it, for a key; pair_known: the run kept the pair
 * already (a name past the kept ones is then not counted twice). 1: new and kept, 2: new and
 * counted, 0: known already, -ENOMEM.
 * hostnames_sharing: how many names key was answered for at or before at_ns (the counted ones
 * included once the first of them was: at most that many), the first max of the kept ones' ids
 * answered by then into ids, in the order they were answered, and how many it wrote into
 * *listed (fewer than the count when kept names came later or names were only counted).
 * hostnames_adopt_answers: a run taken over: every (address, name) pair the run's resolver
 * wrote (sl_sni_ok), as answered before anything the new writer reads. 0 or -errno.
 */
#define HOSTNAMES_KEPT 17

void hostnames_addr_key(int family, const uint8_t *addr, uint8_t key[16]);
/* What hostnames_answer_pair added: the pair (new to sl_sni_ok), the name (answered_locked's). */
struct hostnames_added {
	bool pair;
	int index; /* 1: kept, 2: counted, 0: neither */
};

int hostnames_answer_pair(struct hostnames *h, struct loader *loader, int family,
			  const uint8_t *addr, const char *name, const struct sl_sni_name *v,
			  struct hostnames_added *added);
int hostnames_unanswer_pair(struct hostnames *h, struct loader *loader, int family,
			    const uint8_t *addr, const char *name, uint32_t host_id,
			    const struct hostnames_added *added);
int hostnames_answered(struct hostnames *h, const uint8_t key[16], uint32_t host_id,
		       uint64_t at_ns, bool pair_known);
size_t hostnames_sharing(struct hostnames *h, const uint8_t key[16], uint64_t at_ns,
			 uint32_t *ids, size_t max, size_t *listed);
int hostnames_adopt_answers(struct hostnames *h, const struct loader *loader);

#endif /* SLUICE_HOSTNAMES_H */
