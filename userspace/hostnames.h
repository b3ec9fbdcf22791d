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

#include <stddef.h>
#include <stdint.h>

struct hostnames;
struct loader;

/* Sets errno and returns NULL. */
struct hostnames *hostnames_new(void);
void hostnames_free(struct hostnames *h); /* accepts NULL */

/*
 * The id of name, made if new (kept with the run through loader first, when given). 0 when it
 * cannot be: memory, the kernel's copy, or SL_HOSTS_MAX names already.
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

#endif /* SLUICE_HOSTNAMES_H */
