// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Evidence: verified run logs read into the model of evidence.h. verify_log() does the reading
 * and the checks; this file only looks at the lines verify passed on (on_line), so nothing here
 * parses a line verify did not accept first.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evidence.h"
#include "jsonline.h"
#include "note.h"
#include "verify.h"
#include "verify_cmd.h"

#define DEFAULT_PUB "/etc/sluice/host.key.pub"

/* Endpoint lookup: open addressing over "kind:name", sized to stay under half full. */
struct ev_index {
	size_t *slots; /* endpoint index + 1; 0: empty */
	size_t n_slots;
};

/*
 * An endpoint's members (its ports, and its sets of addresses and CNAMEs) by key, so a log that
 * names one host on every port, or at many addresses, is read in linear time: a workload
 * chooses both. Open addressing, under half full; rebuilt from the endpoints when it grows, and
 * dropped by evidence_sort (which moves endpoints and ports) to be rebuilt at the next use.
 */
enum { MEM_PORT, MEM_DST, MEM_CNAME, MEM_ANSWER, MEM_KINDS };

struct ev_mslot {
	size_t ep;  /* endpoint index + 1; 0: empty */
	size_t pos; /* index in the endpoint's array of that kind */
	unsigned int kind;
};

struct ev_mindex {
	struct ev_mslot *slots;
	size_t n_slots, n;
};

/* What on_line works with: the model, the run being read, the first failure (no memory). */
struct ev_ctx {
	struct evidence *ev;
	struct ev_run *run;
	int err;
};

static uint64_t hash_key(enum ev_endpoint_kind kind, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)kind;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ULL;
	return h;
}

static int grow(void **arr, size_t n, size_t *cap, size_t size)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	p = reallocarray(*arr, c, size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * size, 0, (c - *cap) * size);
	*arr = p;
	*cap = c;
	return 0;
}

/* Capacities, kept beside the public arrays (the header holds counts only). */
struct ev_caps {
	size_t runs, endpoints, denials, dns, cuts, alerts, conns, flows;
	struct ev_index idx;
	struct ev_mindex mem;
};

static struct ev_caps *caps_of(struct evidence *ev)
{
	return ev->priv;
}

int evidence_new(struct evidence **out)
{
	struct evidence *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return -ENOMEM;
	ev->priv = calloc(1, sizeof(struct ev_caps));
	if (!ev->priv) {
		free(ev);
		return -ENOMEM;
	}
	*out = ev;
	return 0;
}

static void strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void run_free(struct ev_run *r)
{
	free(r->path);
	free(r->verdict);
	free(r->vr);
	free(r->run_id);
	free(r->run_key);
	free(r->task);
	free(r->policy);
	free(r->policy_sha256);
	free(r->mode);
	free(r->default_verdict);
	strv_free(r->argv, r->n_argv);
	free(r->end_why);
	free(r->last_policy_sha256);
	free(r->last_mode);
	free(r->label);
}

void evidence_free(struct evidence *ev)
{
	size_t i;

	if (!ev)
		return;
	for (i = 0; i < ev->n_runs; i++)
		run_free(&ev->runs[i]);
	free(ev->runs);
	for (i = 0; i < ev->n_endpoints; i++) {
		struct ev_endpoint *e = &ev->endpoints[i];

		free(e->name);
		strv_free(e->cnames, e->n_cnames);
		strv_free(e->answers, e->n_answers);
		strv_free(e->dsts, e->n_dsts);
		free(e->ports);
		free(e->uses);
		free(e->rules);
	}
	free(ev->endpoints);
	for (i = 0; i < ev->n_denials; i++) {
		struct ev_denial *d = &ev->denials[i];

		free(d->type);
		free(d->hook);
		free(d->host);
		strv_free(d->hosts, d->n_hosts);
		free(d->dst);
		free(d->proto);
		free(d->rule);
		free(d->reason);
		free(d->comm);
		free(d->what);
	}
	free(ev->denials);
	for (i = 0; i < ev->n_dns; i++) {
		struct ev_dns *d = &ev->dns[i];

		free(d->host);
		free(d->qtype);
		free(d->decision);
		free(d->rule);
		free(d->rcode);
		free(d->comm);
		strv_free(d->answers, d->n_answers);
		strv_free(d->cname, d->n_cname);
		free(d->why);
	}
	free(ev->dns);
	for (i = 0; i < ev->n_cuts; i++) {
		free(ev->cuts[i].host);
		free(ev->cuts[i].dst);
		free(ev->cuts[i].proto);
		free(ev->cuts[i].rule);
		free(ev->cuts[i].cap);
	}
	free(ev->cuts);
	for (i = 0; i < ev->n_alerts; i++) {
		free(ev->alerts[i].condition);
		free(ev->alerts[i].what);
	}
	free(ev->alerts);
	for (i = 0; i < ev->n_conns; i++) {
		struct ev_conn *c = &ev->conns[i];

		free(c->type);
		free(c->hook);
		free(c->host);
		strv_free(c->hosts, c->n_hosts);
		free(c->dst);
		free(c->proto);
		free(c->rule);
		free(c->reason);
		free(c->comm);
	}
	free(ev->conns);
	for (i = 0; i < ev->n_flows; i++) {
		struct ev_flow *f = &ev->flows[i];

		free(f->host);
		strv_free(f->hosts, f->n_hosts);
		free(f->dst);
		free(f->proto);
		free(f->rule);
		free(f->comm);
	}
	free(ev->flows);
	if (ev->priv) {
		free(caps_of(ev)->idx.slots);
		free(caps_of(ev)->mem.slots);
	}
	free(ev->priv);
	free(ev);
}

/* ---------------------------------------------------------------------------------------- */
/* Reading members */

/* A string member, decoded and copied; NULL when absent, null, not a string, or no memory. */
static char *jstr(struct ev_ctx *c, const struct jsonline *jl, const char *key)
{
	const struct jsonline_member *m = jsonline_get(jl, key);
	char *buf;
	int n;

	if (!m || m->v.kind != JSONLINE_STRING)
		return NULL;
	buf = malloc((size_t)m->v.len + 1);
	if (!buf) {
		c->err = -ENOMEM;
		return NULL;
	}
	n = jsonline_decode(jl, &m->v, buf, (size_t)m->v.len + 1);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static bool jis(const struct jsonline *jl, const char *key, const char *s)
{
	const struct jsonline_member *m = jsonline_get(jl, key);

	return m && jsonline_str_is(jl, &m->v, s);
}

static bool jbool(const struct jsonline *jl, const char *key, bool dflt)
{
	const struct jsonline_member *m = jsonline_get(jl, key);

	if (!m)
		return dflt;
	if (m->v.kind == JSONLINE_TRUE)
		return true;
	if (m->v.kind == JSONLINE_FALSE)
		return false;
	return dflt;
}

static uint64_t ju64(const struct jsonline *jl, const char *key)
{
	uint64_t v = 0;

	if (jsonline_u64(jl, key, &v))
		return 0;
	return v;
}

static int64_t ji64(const struct jsonline *jl, const char *key, int64_t dflt)
{
	int64_t v;

	if (jsonline_i64(jl, key, &v))
		return dflt;
	return v;
}

/* An array of strings, decoded; *n = 0 and NULL when absent or empty. */
static char **jstrv(struct ev_ctx *c, const struct jsonline *jl, const char *key, size_t *n)
{
	const struct jsonline_member *m = jsonline_get(jl, key);
	struct jsonline_value e;
	char **v = NULL;
	size_t pos = 0, cap = 0;

	*n = 0;
	if (!m || m->v.kind != JSONLINE_ARRAY)
		return NULL;
	while (jsonline_array_next(jl, &m->v, &pos, &e) == 1) {
		char *s;

		if (e.kind != JSONLINE_STRING)
			continue;
		if (grow((void **)&v, *n, &cap, sizeof(*v)))
			goto nomem;
		s = malloc((size_t)e.len + 1);
		if (!s)
			goto nomem;
		if (jsonline_decode(jl, &e, s, (size_t)e.len + 1) < 0) {
			free(s);
			continue;
		}
		v[(*n)++] = s;
	}
	return v;
nomem:
	c->err = -ENOMEM;
	strv_free(v, *n);
	*n = 0;
	return NULL;
}

static void lower(char *s)
{
	for (; s && *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

/* Add a rule name to a comma-separated list. */
static int rules_add(char **rules, const char *rule)
{
	size_t len = strlen(rule), have;
	const char *p;
	char *n;

	for (p = *rules; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == len && !strncmp(p, rule, len))
			return 0;
		p = e ? e + 1 : p + l;
	}
	have = *rules ? strlen(*rules) : 0;
	n = realloc(*rules, have + len + 2);
	if (!n)
		return -ENOMEM;
	if (have)
		n[have++] = ',';
	memcpy(n + have, rule, len + 1);
	*rules = n;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Endpoints */

static int index_rebuild(struct evidence *ev, size_t n_slots)
{
	struct ev_index *x = &caps_of(ev)->idx;
	size_t *slots = calloc(n_slots, sizeof(*slots)), i;

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];
		size_t h = (size_t)hash_key(e->kind, e->name) & (n_slots - 1);

		while (slots[h])
			h = (h + 1) & (n_slots - 1);
		slots[h] = i + 1;
	}
	free(x->slots);
	x->slots = slots;
	x->n_slots = n_slots;
	return 0;
}

static long endpoint_lookup(const struct evidence *ev, enum ev_endpoint_kind kind, const char *name)
{
	const struct ev_index *x = &((struct ev_caps *)ev->priv)->idx;
	size_t h;

	if (!x->n_slots)
		return -1;
	h = (size_t)hash_key(kind, name) & (x->n_slots - 1);
	while (x->slots[h]) {
		const struct ev_endpoint *e = &ev->endpoints[x->slots[h] - 1];

		if (e->kind == kind && !strcmp(e->name, name))
			return (long)(x->slots[h] - 1);
		h = (h + 1) & (x->n_slots - 1);
	}
	return -1;
}

const struct ev_endpoint *evidence_find(const struct evidence *ev, enum ev_endpoint_kind kind,
					const char *name)
{
	long i = endpoint_lookup(ev, kind, name);

	return i < 0 ? NULL : &ev->endpoints[i];
}

/* The endpoint of kind and name, created when new; its index, or -ENOMEM. */
static long endpoint_get(struct evidence *ev, enum ev_endpoint_kind kind, const char *name)
{
	struct ev_caps *cp = caps_of(ev);
	struct ev_endpoint *e;
	long i = endpoint_lookup(ev, kind, name);

	if (i >= 0)
		return i;
	if (grow((void **)&ev->endpoints, ev->n_endpoints, &cp->endpoints, sizeof(*e)))
		return -ENOMEM;
	e = &ev->endpoints[ev->n_endpoints];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	ev->n_endpoints++;
	if (ev->n_endpoints * 2 > cp->idx.n_slots) {
		if (index_rebuild(ev, cp->idx.n_slots ? cp->idx.n_slots * 2 : 64))
			return -ENOMEM;
	} else {
		size_t h = (size_t)hash_key(kind, name) & (cp->idx.n_slots - 1);

		while (cp->idx.slots[h])
			h = (h + 1) & (cp->idx.n_slots - 1);
		cp->idx.slots[h] = ev->n_endpoints;
	}
	return (long)ev->n_endpoints - 1;
}

static void seen(int64_t *first, int64_t *last, int64_t ts)
{
	if (!*first || ts < *first)
		*first = ts;
	if (!*last || ts > *last)
		*last = ts;
}

static struct ev_use *use_get(struct ev_endpoint *e, size_t run)
{
	struct ev_use *u;

	if (e->n_uses && e->uses[e->n_uses - 1].run == run)
		return &e->uses[e->n_uses - 1];
	u = reallocarray(e->uses, e->n_uses + 1, sizeof(*u));
	if (!u)
		return NULL;
	e->uses = u;
	u = &e->uses[e->n_uses++];
	memset(u, 0, sizeof(*u));
	u->run = run;
	return u;
}

static uint64_t mem_hash(size_t ep, unsigned int kind, uint16_t port, const char *s)
{
	return hash_key((enum ev_endpoint_kind)(kind * 65536 + port), s) ^
	       (ep * 0x9e3779b97f4a7c15ULL);
}

/* The key of member pos of kind in endpoint e: its port (MEM_PORT) and string. */
static const char *mem_key(const struct ev_endpoint *e, unsigned int kind, size_t pos,
			   uint16_t *port)
{
	*port = 0;
	switch (kind) {
	case MEM_PORT:
		*port = e->ports[pos].port;
		return e->ports[pos].proto;
	case MEM_DST:
		return e->dsts[pos];
	case MEM_CNAME:
		return e->cnames[pos];
	default:
		return e->answers[pos];
	}
}

static size_t mem_count(const struct ev_endpoint *e, unsigned int kind)
{
	return kind == MEM_PORT	   ? e->n_ports
	       : kind == MEM_DST   ? e->n_dsts
	       : kind == MEM_CNAME ? e->n_cnames
				   : e->n_answers;
}

static void mem_put(struct ev_mindex *x, size_t ep, unsigned int kind, uint16_t port, const char *s,
		    size_t pos)
{
	size_t h = (size_t)mem_hash(ep, kind, port, s) & (x->n_slots - 1);

	while (x->slots[h].ep)
		h = (h + 1) & (x->n_slots - 1);
	x->slots[h].ep = ep + 1;
	x->slots[h].pos = pos;
	x->slots[h].kind = kind;
	x->n++;
}

/* Rebuild the member index with room for one more member. */
static int mem_rebuild(struct evidence *ev)
{
	struct ev_mindex *x = &caps_of(ev)->mem, nx = {0};
	size_t i, pos, total = 1;
	unsigned int k;
	uint16_t port;

	for (i = 0; i < ev->n_endpoints; i++)
		for (k = 0; k < MEM_KINDS; k++)
			total += mem_count(&ev->endpoints[i], k);
	for (nx.n_slots = 64; nx.n_slots < total * 4; nx.n_slots *= 2)
		;
	nx.slots = calloc(nx.n_slots, sizeof(*nx.slots));
	if (!nx.slots)
		return -ENOMEM;
	for (i = 0; i < ev->n_endpoints; i++)
		for (k = 0; k < MEM_KINDS; k++)
			for (pos = 0; pos < mem_count(&ev->endpoints[i], k); pos++) {
				const char *s = mem_key(&ev->endpoints[i], k, pos, &port);

				mem_put(&nx, i, k, port, s, pos);
			}
	free(x->slots);
	*x = nx;
	return 0;
}

/* The position of the member of kind (port, s) of endpoint ep; -1 when absent, or -ENOMEM. */
static long mem_find(struct evidence *ev, size_t ep, unsigned int kind, uint16_t port,
		     const char *s)
{
	struct ev_mindex *x = &caps_of(ev)->mem;
	const struct ev_endpoint *e = &ev->endpoints[ep];
	uint16_t p;
	size_t h;

	if ((!x->slots || (x->n + 1) * 2 > x->n_slots) && mem_rebuild(ev))
		return -ENOMEM;
	for (h = (size_t)mem_hash(ep, kind, port, s) & (x->n_slots - 1); x->slots[h].ep;
	     h = (h + 1) & (x->n_slots - 1)) {
		const struct ev_mslot *m = &x->slots[h];

		if (m->ep == ep + 1 && m->kind == kind &&
		    !strcmp(mem_key(e, kind, m->pos, &p), s) && p == port)
			return (long)m->pos;
	}
	return -1;
}

/* Add s to endpoint ep's set of kind (no duplicates); s is copied. */
static int strset_add(struct evidence *ev, size_t ep, unsigned int kind, const char *s)
{
	struct ev_endpoint *e = &ev->endpoints[ep];
	char ***v = kind == MEM_DST ? &e->dsts : kind == MEM_CNAME ? &e->cnames : &e->answers;
	size_t *n = kind == MEM_DST ? &e->n_dsts : kind == MEM_CNAME ? &e->n_cnames : &e->n_answers;
	long at = mem_find(ev, ep, kind, 0, s);
	char **p;

	if (at != -1)
		return at < 0 ? (int)at : 0;
	p = reallocarray(*v, *n + 1, sizeof(**v));
	if (!p)
		return -ENOMEM;
	*v = p;
	p[*n] = strdup(s);
	if (!p[*n])
		return -ENOMEM;
	mem_put(&caps_of(ev)->mem, ep, kind, 0, s, *n);
	(*n)++;
	return 0;
}

static struct ev_port *port_get(struct evidence *ev, size_t ep, uint16_t port, const char *proto)
{
	struct ev_endpoint *e = &ev->endpoints[ep];
	struct ev_port *p;
	char key[sizeof(p->proto)];
	long at;

	/* the key as stored: a longer proto is cut to fit */
	snprintf(key, sizeof(key), "%s", proto);
	at = mem_find(ev, ep, MEM_PORT, port, key);
	if (at >= 0)
		return &e->ports[at];
	if (at != -1)
		return NULL;
	p = reallocarray(e->ports, e->n_ports + 1, sizeof(*p));
	if (!p)
		return NULL;
	e->ports = p;
	p = &e->ports[e->n_ports];
	memset(p, 0, sizeof(*p));
	p->port = port;
	memcpy(p->proto, key, sizeof(key));
	mem_put(&caps_of(ev)->mem, ep, MEM_PORT, port, p->proto, e->n_ports++);
	return p;
}

/* The endpoint a line names: its host (lower-cased), else its dst. -ENOENT: neither. */
static long endpoint_of(struct ev_ctx *c, const struct jsonline *jl, char **host, char **dst)
{
	*host = jstr(c, jl, "host");
	*dst = jstr(c, jl, "dst");
	lower(*host);
	if (*host && **host)
		return endpoint_get(c->ev, EV_HOST, *host);
	if (*dst && **dst)
		return endpoint_get(c->ev, EV_ADDR, *dst);
	return -ENOENT;
}

/*
 * A line about an address the run's resolver had answered for several names ("hosts", "host"
 * null: the log cannot tell which one it was for): the names, lower-cased, into *names, and
 * into the address endpoint's set of them.
 */
static int shared_names(struct ev_ctx *c, const struct jsonline *jl, long ep, char ***names,
			size_t *n)
{
	size_t k;

	*names = jstrv(c, jl, "hosts", n);
	for (k = 0; k < *n; k++) {
		lower((*names)[k]);
		if (c->ev->endpoints[ep].kind == EV_ADDR &&
		    strset_add(c->ev, (size_t)ep, MEM_DST, (*names)[k]))
			return -ENOMEM;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Lines */

static int add_denial(struct ev_ctx *c, const struct jsonline *jl, enum ev_denial_kind kind,
		      const char *type)
{
	struct evidence *ev = c->ev;
	struct ev_denial *d;

	if (grow((void **)&ev->denials, ev->n_denials, &caps_of(ev)->denials, sizeof(*d)))
		return -ENOMEM;
	d = &ev->denials[ev->n_denials++];
	d->run = c->run->idx;
	d->kind = kind;
	d->ts = jl->ts;
	d->seq = jl->seq;
	d->enforced = jbool(jl, "enforced", true);
	d->type = strdup(type);
	d->hook = jstr(c, jl, "hook");
	d->host = jstr(c, jl, "host");
	lower(d->host);
	if (!d->host) {
		/* a shared address's candidates (sluice-log(5) "hosts"), to show instead of none */
		size_t k;

		d->hosts = jstrv(c, jl, "hosts", &d->n_hosts);
		for (k = 0; k < d->n_hosts; k++)
			lower(d->hosts[k]);
		d->hosts_more = d->n_hosts ? ju64(jl, "hosts_more") : 0;
	}
	d->dst = jstr(c, jl, "dst");
	d->port = (uint16_t)ju64(jl, "port");
	d->proto = jstr(c, jl, "proto");
	d->rule = jstr(c, jl, "rule");
	d->reason = jstr(c, jl, kind == EV_DENY_DNS ? "why" : "reason");
	d->comm = jstr(c, jl, "comm");
	d->pid = ji64(jl, "pid", -1);
	d->what = jstr(c, jl, "what");
	if (!d->type)
		return -ENOMEM;
	return 0;
}

/* A decision or preexisting line with a destination: one connection. */
static int on_connection(struct ev_ctx *c, const struct jsonline *jl, const char *type)
{
	struct evidence *ev = c->ev;
	struct ev_run *r = c->run;
	struct ev_endpoint *e;
	struct ev_port *p;
	struct ev_use *u;
	struct ev_conn *k;
	char *host, *dst, *proto;
	long i;
	bool allow = jis(jl, "decision", "allow");
	bool enforced = jbool(jl, "enforced", true);
	bool blackhole = jis(jl, "reason", "blackhole");

	i = endpoint_of(c, jl, &host, &dst);
	if (i < 0) {
		free(host);
		free(dst);
		return i == -ENOENT ? 0 : (int)i;
	}
	if (grow((void **)&ev->conns, ev->n_conns, &caps_of(ev)->conns, sizeof(*k))) {
		free(host);
		free(dst);
		return -ENOMEM;
	}
	k = &ev->conns[ev->n_conns++];
	k->run = r->idx;
	k->ts = jl->ts;
	k->seq = jl->seq;
	k->endpoint = (size_t)i;
	k->type = strdup(type);
	k->hook = jstr(c, jl, "hook");
	k->host = host && *host ? host : NULL;
	if (!k->host)
		free(host);
	k->dst = dst;
	k->port = (uint16_t)ju64(jl, "port");
	k->proto = jstr(c, jl, "proto");
	k->allow = allow;
	k->enforced = enforced;
	k->needed = allow || (!enforced && !blackhole);
	k->rule = jstr(c, jl, "rule");
	k->reason = jstr(c, jl, "reason");
	k->comm = jstr(c, jl, "comm");
	k->pid = ji64(jl, "pid", -1);
	if (!k->type)
		return -ENOMEM;

	e = &ev->endpoints[i];
	proto = k->proto ? k->proto : "?";
	p = port_get(ev, (size_t)i, k->port, proto);
	u = use_get(e, r->idx);
	if (!p || !u)
		return -ENOMEM;
	if (e->kind == EV_HOST && dst && strset_add(ev, (size_t)i, MEM_DST, dst))
		return -ENOMEM;
	if (shared_names(c, jl, i, &k->hosts, &k->n_hosts))
		return -ENOMEM;
	k->hosts_more = k->n_hosts ? ju64(jl, "hosts_more") : 0;
	if (k->hosts_more > e->names_more)
		e->names_more = k->hosts_more;
	if (k->rule && rules_add(&e->rules, k->rule))
		return -ENOMEM;
	p->connections++;
	e->connections++;
	u->connections++;
	r->connections++;
	if (allow) {
		p->allowed++;
		e->allowed++;
		r->allowed++;
	} else if (blackhole) {
		p->blackholed++;
		e->blackholed++;
		r->blackholed++;
	} else if (enforced) {
		p->denied++;
		e->denied++;
		r->denied++;
	} else {
		p->would_deny++;
		e->would_deny++;
		r->would_deny++;
	}
	if (k->needed) {
		e->needed++;
		u->needed++;
	}
	seen(&p->first_ts, &p->last_ts, jl->ts);
	seen(&e->first_ts, &e->last_ts, jl->ts);
	seen(&u->first_ts, &u->last_ts, jl->ts);
	if (!allow)
		return add_denial(c, jl, EV_DENY_CONNECT, type);
	return 0;
}

static int on_decision(struct ev_ctx *c, const struct jsonline *jl, const char *type)
{
	const struct jsonline_member *dst = jsonline_get(jl, "dst");

	/*
	 * A redirect to the run's resolver is the DNS line's business, not a connection. Judged by
	 * the reason: a policy may name a rule "dns".
	 */
	if (jis(jl, "reason", "dns_redirect"))
		return 0;
	if (dst && dst->v.kind == JSONLINE_STRING)
		return on_connection(c, jl, type);
	/* socket kinds, families, source routes: a denial without a destination */
	if (jis(jl, "decision", "deny"))
		return add_denial(c, jl, EV_DENY_SURFACE, type);
	return 0;
}

static int on_flow(struct ev_ctx *c, const struct jsonline *jl)
{
	struct evidence *ev = c->ev;
	struct ev_endpoint *e;
	struct ev_port *p;
	struct ev_use *u;
	struct ev_flow *f;
	char *host, *dst;
	long i;

	i = endpoint_of(c, jl, &host, &dst);
	if (i < 0) {
		free(host);
		free(dst);
		return i == -ENOENT ? 0 : (int)i;
	}
	if (grow((void **)&ev->flows, ev->n_flows, &caps_of(ev)->flows, sizeof(*f))) {
		free(host);
		free(dst);
		return -ENOMEM;
	}
	f = &ev->flows[ev->n_flows++];
	f->run = c->run->idx;
	f->ts = jl->ts;
	f->endpoint = (size_t)i;
	f->host = host && *host ? host : NULL;
	if (!f->host)
		free(host);
	f->dst = dst;
	f->port = (uint16_t)ju64(jl, "port");
	f->proto = jstr(c, jl, "proto");
	f->rule = jstr(c, jl, "rule");
	f->req_bytes = ju64(jl, "req_bytes");
	f->resp_bytes = ju64(jl, "resp_bytes");
	f->duration_ms = ju64(jl, "duration_ms");
	f->cut = jsonline_get(jl, "cut") != NULL;
	f->comm = jstr(c, jl, "comm");
	f->would_deny = jis(jl, "decision", "deny") && !jbool(jl, "enforced", true);

	e = &ev->endpoints[i];
	if (shared_names(c, jl, i, &f->hosts, &f->n_hosts))
		return -ENOMEM;
	f->hosts_more = f->n_hosts ? ju64(jl, "hosts_more") : 0;
	if (f->hosts_more > e->names_more)
		e->names_more = f->hosts_more;
	p = port_get(ev, (size_t)i, f->port, f->proto ? f->proto : "?");
	u = use_get(e, c->run->idx);
	if (!p || !u)
		return -ENOMEM;
	p->flows++;
	e->flows++;
	u->flows++;
	c->run->flows++;
	if (f->would_deny) {
		c->run->would_deny_flows++;
		e->would_deny_flows++;
		e->would_deny_req_bytes += f->req_bytes;
		e->would_deny_resp_bytes += f->resp_bytes;
	}
	p->req_bytes += f->req_bytes;
	p->resp_bytes += f->resp_bytes;
	e->req_bytes += f->req_bytes;
	e->resp_bytes += f->resp_bytes;
	u->req_bytes += f->req_bytes;
	u->resp_bytes += f->resp_bytes;
	if (f->req_bytes > p->max_req)
		p->max_req = f->req_bytes;
	if (f->resp_bytes > p->max_resp)
		p->max_resp = f->resp_bytes;
	if (f->req_bytes > e->max_req)
		e->max_req = f->req_bytes;
	if (f->resp_bytes > e->max_resp)
		e->max_resp = f->resp_bytes;
	seen(&p->first_ts, &p->last_ts, jl->ts);
	seen(&e->first_ts, &e->last_ts, jl->ts);
	seen(&u->first_ts, &u->last_ts, jl->ts);
	return 0;
}

static int on_dns(struct ev_ctx *c, const struct jsonline *jl)
{
	struct evidence *ev = c->ev;
	struct ev_endpoint *e;
	struct ev_dns *d;
	size_t k;
	long i;

	if (grow((void **)&ev->dns, ev->n_dns, &caps_of(ev)->dns, sizeof(*d)))
		return -ENOMEM;
	d = &ev->dns[ev->n_dns++];
	d->run = c->run->idx;
	d->ts = jl->ts;
	d->host = jstr(c, jl, "host");
	lower(d->host);
	d->qtype = jstr(c, jl, "qtype");
	d->decision = jstr(c, jl, "decision");
	d->enforced = jbool(jl, "enforced", true);
	d->rule = jstr(c, jl, "rule");
	d->rcode = jstr(c, jl, "rcode");
	d->comm = jstr(c, jl, "comm");
	d->answers = jstrv(c, jl, "answers", &d->n_answers);
	d->cname = jstrv(c, jl, "cname", &d->n_cname);
	d->why = jstr(c, jl, "why");
	c->run->dns_queries++;
	if (!d->host || !*d->host)
		return 0;
	i = endpoint_get(ev, EV_HOST, d->host);
	if (i < 0)
		return (int)i;
	e = &ev->endpoints[i];
	e->dns_queries++;
	if (!jis(jl, "decision", "allow"))
		e->dns_denied++;
	seen(&e->first_ts, &e->last_ts, jl->ts);
	if (!use_get(e, c->run->idx))
		return -ENOMEM;
	for (k = 0; k < d->n_cname; k++) {
		lower(d->cname[k]);
		if (strset_add(c->ev, (size_t)i, MEM_CNAME, d->cname[k]))
			return -ENOMEM;
	}
	for (k = 0; k < d->n_answers; k++)
		if (strset_add(c->ev, (size_t)i, MEM_ANSWER, d->answers[k]))
			return -ENOMEM;
	if (jis(jl, "decision", "deny") || jis(jl, "decision", "refused"))
		return add_denial(c, jl, EV_DENY_DNS, "dns");
	return 0;
}

static int on_cut(struct ev_ctx *c, const struct jsonline *jl)
{
	struct evidence *ev = c->ev;
	struct ev_cut *k;
	char *host, *dst;
	long i;

	i = endpoint_of(c, jl, &host, &dst);
	if (i < -1 && i != -ENOENT) {
		free(host);
		free(dst);
		return (int)i;
	}
	if (grow((void **)&ev->cuts, ev->n_cuts, &caps_of(ev)->cuts, sizeof(*k))) {
		free(host);
		free(dst);
		return -ENOMEM;
	}
	k = &ev->cuts[ev->n_cuts++];
	k->run = c->run->idx;
	k->ts = jl->ts;
	k->host = host && *host ? host : NULL;
	if (!k->host)
		free(host);
	k->dst = dst;
	k->port = (uint16_t)ju64(jl, "port");
	k->proto = jstr(c, jl, "proto");
	k->rule = jstr(c, jl, "rule");
	k->cap = jstr(c, jl, "cap");
	k->limit = ju64(jl, "limit");
	k->req_bytes = ju64(jl, "req_bytes");
	k->resp_bytes = ju64(jl, "resp_bytes");
	c->run->cuts++;
	if (i >= 0)
		ev->endpoints[i].cuts++;
	return 0;
}

static int on_alert(struct ev_ctx *c, const struct jsonline *jl)
{
	struct evidence *ev = c->ev;
	struct ev_alert *a;

	if (grow((void **)&ev->alerts, ev->n_alerts, &caps_of(ev)->alerts, sizeof(*a)))
		return -ENOMEM;
	a = &ev->alerts[ev->n_alerts++];
	a->run = c->run->idx;
	a->ts = jl->ts;
	a->condition = jstr(c, jl, "condition");
	a->what = jstr(c, jl, "what");
	c->run->alerts++;
	return 0;
}

static void set_str(char **dst, char *s)
{
	free(*dst);
	*dst = s;
}

static void on_line(const struct jsonline *jl, void *ctx)
{
	struct ev_ctx *c = ctx;
	struct ev_run *r = c->run;
	int err = 0;

	if (c->err)
		return;
	c->ev->lines++;
	r->end_ts = jl->ts;
	if (jsonline_type_is(jl, "log_start")) {
		if (!r->start_ts)
			r->start_ts = jl->ts;
		if (!r->run_id)
			r->run_id = jstr(c, jl, "run_id");
		if (!r->run_key)
			r->run_key = jstr(c, jl, "key");
	} else if (jsonline_type_is(jl, "run_start")) {
		r->start_ts = jl->ts;
		set_str(&r->run_id, jstr(c, jl, "run_id"));
		set_str(&r->task, jstr(c, jl, "task"));
		set_str(&r->policy, jstr(c, jl, "policy"));
		set_str(&r->policy_sha256, jstr(c, jl, "policy_sha256"));
		set_str(&r->mode, jstr(c, jl, "mode"));
		set_str(&r->default_verdict, jstr(c, jl, "default"));
		strv_free(r->argv, r->n_argv);
		r->argv = jstrv(c, jl, "argv", &r->n_argv);
	} else if (jsonline_type_is(jl, "decision")) {
		err = on_decision(c, jl, "decision");
	} else if (jsonline_type_is(jl, "preexisting")) {
		err = on_decision(c, jl, "preexisting");
	} else if (jsonline_type_is(jl, "flow")) {
		err = on_flow(c, jl);
	} else if (jsonline_type_is(jl, "dns")) {
		err = on_dns(c, jl);
	} else if (jsonline_type_is(jl, "tls")) {
		if (jis(jl, "decision", "deny"))
			err = add_denial(c, jl, EV_DENY_TLS, "tls");
	} else if (jsonline_type_is(jl, "flow_cut")) {
		err = on_cut(c, jl);
	} else if (jsonline_type_is(jl, "alert")) {
		err = on_alert(c, jl);
	} else if (jsonline_type_is(jl, "policy_change")) {
		r->policy_changes++;
		set_str(&r->last_policy_sha256, jstr(c, jl, "policy_sha256"));
		set_str(&r->last_mode, jstr(c, jl, "mode"));
	} else if (jsonline_type_is(jl, "loss")) {
		if (!r->has_run_end)
			r->lost += ju64(jl, "count");
	} else if (jsonline_type_is(jl, "run_end")) {
		r->has_run_end = true;
		set_str(&r->end_why, jstr(c, jl, "why"));
		r->has_exit_status = !jsonline_i64(jl, "exit_status", &r->exit_status);
		r->duration_ms = ju64(jl, "duration_ms");
		r->lost = ju64(jl, "lost");
	}
	if (err && !c->err)
		c->err = err;
}

/* ---------------------------------------------------------------------------------------- */
/* Verdicts, as sluice verify's last line */

static char *verdict_of(const struct verify_result *v)
{
	char *s = NULL;
	int n = -1;

	switch (v->status) {
	case VERIFY_OK:
		n = asprintf(&s, "OK: intact and complete");
		break;
	case VERIFY_LOSS:
		if (v->restart_gap)
			n = asprintf(
				&s,
				"LOSS: intact and sealed; %" PRIu64 " kernel records were "
				"lost, every one declared in a signed loss record, and %" PRIu64
				" kernel records went unaccounted across the writer restart, "
				"declared in the signed run_end",
				v->declared_loss, v->restart_gap);
		else
			n = asprintf(&s,
				     "LOSS: intact and sealed; %" PRIu64 " kernel records were "
				     "lost, every one declared in a signed loss record",
				     v->declared_loss);
		break;
	case VERIFY_UNSEALED:
		if (v->seal_uncovered)
			n = asprintf(&s,
				     "UNSEALED: intact, but the seal (line %" PRIu64 ") is not "
				     "covered by the exported checkpoints",
				     v->lines);
		else if (v->log_missing)
			n = asprintf(&s, "UNSEALED: intact, but the log file is missing after its "
					 "rotated segments; no final seal");
		else
			n = asprintf(
				&s,
				"UNSEALED: intact, but the last %" PRIu64 " line%s (after the "
				"last checkpoint) %s not covered by any signature; no final seal",
				v->unsealed_lines, v->unsealed_lines == 1 ? "" : "s",
				v->unsealed_lines == 1 ? "is" : "are");
		break;
	default: {
		char where[PATH_MAX + 96] = "";
		int w = 0;

		if (v->err_line)
			w = snprintf(where, sizeof(where), "line %" PRIu64 " (seq %" PRIu64 ")",
				     v->err_line, v->err_seq);
		if (v->err_file[0] && w >= 0 && (size_t)w < sizeof(where))
			snprintf(where + w, sizeof(where) - (size_t)w, "%s%s", w ? ", " : "",
				 v->err_file);
		if (v->err_file_line && strlen(where) < sizeof(where) - 32)
			snprintf(where + strlen(where), sizeof(where) - strlen(where),
				 " line %" PRIu64, v->err_file_line);
		n = asprintf(&s, "%s: %s%s%s", v->status == VERIFY_INVALID ? "INVALID" : "ERROR",
			     where, where[0] ? ": " : "", v->why);
		break;
	}
	}
	return n < 0 ? NULL : s;
}

static const char *verdict_word(int status)
{
	switch (status) {
	case VERIFY_OK:
		return "intact and sealed";
	case VERIFY_LOSS:
		return "declared loss";
	case VERIFY_UNSEALED:
		return "unsealed";
	case VERIFY_INVALID:
		return "tampered";
	default:
		return "unreadable";
	}
}

int evidence_add_log(struct evidence *ev, const char *path, const char *host_vkey, char *err,
		     size_t err_len)
{
	struct verify_opts o = {0};
	struct ev_ctx c = {.ev = ev};
	struct ev_run *r;
	int status;

	if (grow((void **)&ev->runs, ev->n_runs, &caps_of(ev)->runs, sizeof(*r))) {
		snprintf(err, err_len, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	r = &ev->runs[ev->n_runs];
	memset(r, 0, sizeof(*r));
	r->idx = ev->n_runs;
	r->path = strdup(path);
	r->vr = calloc(1, sizeof(*r->vr));
	if (!r->path || !r->vr) {
		run_free(r);
		snprintf(err, err_len, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	/* counted now: on_line's records name this run's index */
	ev->n_runs++;
	c.run = r;
	o.log = path;
	o.host_vkey = host_vkey;
	o.on_line = on_line;
	o.ctx = &c;
	status = verify_log(&o, r->vr);
	r = &ev->runs[r->idx];
	if (c.err) {
		snprintf(err, err_len, "%s: %s", path, strerror(-c.err));
		return c.err;
	}
	if (status == VERIFY_ERROR) {
		snprintf(err, err_len, "%s: cannot verify: %s%s%s", path, r->vr->err_file,
			 r->vr->err_file[0] ? ": " : "", r->vr->why);
		run_free(r);
		ev->n_runs--;
		return -EIO;
	}
	r->status = status;
	r->verified = status == VERIFY_OK || status == VERIFY_LOSS;
	r->verdict_word = verdict_word(status);
	r->verdict = verdict_of(r->vr);
	if (!r->verdict) {
		snprintf(err, err_len, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	if (!r->start_ts && r->vr->start_ts)
		r->start_ts = r->vr->start_ts;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */

static int port_cmp(const void *a, const void *b)
{
	const struct ev_port *x = a, *y = b;

	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return strcmp(x->proto, y->proto);
}

static int endpoint_cmp(const void *a, const void *b)
{
	const struct ev_endpoint *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int run_id_cmp(const void *a, const void *b)
{
	const struct ev_run *const *x = a, *const *y = b;
	int c = strcmp((*x)->run_id, (*y)->run_id);

	return c ? c : ((*x)->idx > (*y)->idx) - ((*x)->idx < (*y)->idx);
}

/* Each run's label (evidence.h): sorted by id, so that many logs are not searched pairwise. */
static int label_runs(struct evidence *ev)
{
	const struct ev_run **by_id = calloc(ev->n_runs ? ev->n_runs : 1, sizeof(*by_id));
	size_t i, n = 0;

	if (!by_id)
		return -ENOMEM;
	for (i = 0; i < ev->n_runs; i++)
		if (ev->runs[i].run_id)
			by_id[n++] = &ev->runs[i];
	qsort(by_id, n, sizeof(*by_id), run_id_cmp);
	for (i = 0; i < n; i++) {
		struct ev_run *r = &ev->runs[by_id[i]->idx];
		bool shared = (i && !strcmp(by_id[i - 1]->run_id, r->run_id)) ||
			      (i + 1 < n && !strcmp(by_id[i + 1]->run_id, r->run_id));

		if (shared ? asprintf(&r->label, "%s (log %zu)", r->run_id, r->idx + 1) < 0
			   : !(r->label = strdup(r->run_id))) {
			r->label = NULL;
			free(by_id);
			return -ENOMEM;
		}
	}
	free(by_id);
	for (i = 0; i < ev->n_runs; i++)
		if (!ev->runs[i].label && !(ev->runs[i].label = strdup(ev->runs[i].path)))
			return -ENOMEM;
	return 0;
}

void evidence_sort(struct evidence *ev)
{
	struct ev_endpoint *sorted;
	size_t *map, i;

	/* (without memory, a run is named by its id or path: ev_run_label) */
	label_runs(ev);
	/* endpoints and ports move: the member index is rebuilt at its next use */
	free(caps_of(ev)->mem.slots);
	memset(&caps_of(ev)->mem, 0, sizeof(caps_of(ev)->mem));

	for (i = 0; i < ev->n_endpoints; i++)
		qsort(ev->endpoints[i].ports, ev->endpoints[i].n_ports, sizeof(struct ev_port),
		      port_cmp);
	if (ev->n_endpoints < 2)
		return;
	/* sort a copy of the indices, so conns and flows can be pointed at the new places */
	map = calloc(ev->n_endpoints, sizeof(*map));
	sorted = calloc(ev->n_endpoints, sizeof(*sorted));
	if (!map || !sorted)
		goto out;
	memcpy(sorted, ev->endpoints, ev->n_endpoints * sizeof(*sorted));
	/* the old index rides along in uses' spare slot: rebuild it by name after the sort */
	qsort(sorted, ev->n_endpoints, sizeof(*sorted), endpoint_cmp);
	for (i = 0; i < ev->n_endpoints; i++) {
		long old = endpoint_lookup(ev, sorted[i].kind, sorted[i].name);

		if (old >= 0)
			map[old] = i;
	}
	memcpy(ev->endpoints, sorted, ev->n_endpoints * sizeof(*sorted));
	for (i = 0; i < ev->n_conns; i++)
		ev->conns[i].endpoint = map[ev->conns[i].endpoint];
	for (i = 0; i < ev->n_flows; i++)
		ev->flows[i].endpoint = map[ev->flows[i].endpoint];
	index_rebuild(ev, caps_of(ev)->idx.n_slots ? caps_of(ev)->idx.n_slots : 64);
out:
	free(map);
	free(sorted);
}

/* ---------------------------------------------------------------------------------------- */

int evidence_read_pub(const char *opt, char *buf, size_t size, char *err, size_t err_len)
{
	const char *path = opt, *why = NULL;
	int e;

	if (!path)
		path = getenv("SLUICE_PUB");
	if (!path || !path[0]) {
		if (access(DEFAULT_PUB, F_OK)) {
			snprintf(err, err_len,
				 "no host key: give --key PUB (the .pub file that "
				 "'sluice keygen' wrote) or set SLUICE_PUB");
			return -ENOKEY;
		}
		path = DEFAULT_PUB;
	}
	e = verify_pub_read(path, buf, size, &why);
	if (e)
		snprintf(err, err_len, "read host key %s: %s", path,
			 e == -EFBIG ? "larger than a verifier key file"
			 : why	     ? why
				     : strerror(-e));
	return e;
}

void evidence_utc(int64_t us, char *buf, size_t size)
{
	time_t sec = (time_t)(us / 1000000);
	struct tm tm;

	if (us < 0 || !gmtime_r(&sec, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M:%SZ", &tm))
		snprintf(buf, size, "%" PRId64 " us", us);
}

/*
 * A run given twice (the same file, a copy, or another segment of it) would count as two runs:
 * a host of one run would pass --min-runs 2. Each run signs with a key of its own, certified
 * in its verified log_start line: the same key is the same run.
 */
bool evidence_same_run(const struct evidence *ev, const struct ev_run *r, char *err, size_t len)
{
	size_t i;

	for (i = 0; r->run_key && i + 1 < ev->n_runs; i++)
		if (ev->runs[i].run_key && !strcmp(ev->runs[i].run_key, r->run_key)) {
			snprintf(err, len, "%s: the same run as %s (run key %s): given twice",
				 r->path, ev->runs[i].path, r->run_key);
			return true;
		}
	return false;
}

int evidence_load(const char *prog, char *const *paths, size_t n, const char *key_opt,
		  bool unverified, struct evidence **out)
{
	struct evidence *ev = NULL;
	char vkey[NOTE_VKEY_MAX + 2], err[PATH_MAX + VERIFY_WHY_MAX + 256];
	char safe[PATH_MAX + VERIFY_WHY_MAX + 256];
	bool refused = false;
	size_t i;
	int e;

	e = evidence_read_pub(key_opt, vkey, sizeof(vkey), err, sizeof(err));
	if (e) {
		fprintf(stderr, "%s: %s\n", prog, evidence_safe(err, safe, sizeof(safe)));
		return e;
	}
	e = evidence_new(&ev);
	if (e) {
		fprintf(stderr, "%s: %s\n", prog, strerror(-e));
		return e;
	}
	for (i = 0; i < n; i++) {
		const struct ev_run *r;

		e = evidence_add_log(ev, paths[i], vkey, err, sizeof(err));
		if (e == -ENOMEM) {
			fprintf(stderr, "%s: %s\n", prog, evidence_safe(err, safe, sizeof(safe)));
			goto fail;
		}
		if (e) {
			fprintf(stderr, "%s: %s\n", prog, evidence_safe(err, safe, sizeof(safe)));
			refused = true;
			continue;
		}
		r = &ev->runs[ev->n_runs - 1];
		if (evidence_same_run(ev, r, err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", prog, evidence_safe(err, safe, sizeof(safe)));
			refused = true;
			continue;
		}
		if (!r->vr->lines && r->verified) {
			/* verify accepts no empty log, but say it plainly if one ever gets here */
			fprintf(stderr, "%s: %s: an empty log\n", prog, paths[i]);
			refused = true;
			continue;
		}
		if (r->verified)
			continue;
		fprintf(stderr, "%s: %s: %s: %s%s\n", prog,
			evidence_safe(paths[i], err, sizeof(err)),
			unverified ? "does not verify, used anyway (--unverified)"
				   : "refused, it does not verify",
			evidence_safe(r->verdict, safe, sizeof(safe)),
			unverified ? "" : " (--unverified to use it anyway)");
		if (!unverified)
			refused = true;
	}
	if (refused) {
		e = -EBADMSG;
		goto fail;
	}
	evidence_sort(ev);
	*out = ev;
	return 0;
fail:
	evidence_free(ev);
	return e;
}

const char *evidence_safe(const char *s, char *buf, size_t size)
{
	size_t o = 0;

	if (!size)
		return buf;
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		char tmp[8];
		size_t l;

		if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
			tmp[0] = (char)ch;
			l = 1;
		} else {
			l = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", ch);
		}
		if (o + l + 4 > size) {
			if (size >= 4) {
				memcpy(buf + (o < size - 4 ? o : size - 4), "...", 4);
				return buf;
			}
			break;
		}
		memcpy(buf + o, tmp, l);
		o += l;
	}
	buf[o] = '\0';
	return buf;
}
