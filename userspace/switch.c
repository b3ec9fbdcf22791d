// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>

#include "switch.h"
#include "loader.h"
#include "preexisting.h"
#include "records.h"
#include "resolver.h"
#include "run.h"
#include "util.h"

struct remap {
	struct run *r;
	struct loader_next *n;
	const struct policy *p;
	int mode;
	int family;		/* of the learned map being walked */
	uint64_t kept, dropped; /* learned addresses, both families */
	uint8_t (*doomed)[16];	/* addresses of the family being pruned that no rule keeps */
	size_t n_doomed, cap_doomed;
};

/*
 * One learned address of the old programs: under the rules of the new policy that list the name
 * it was learned for (its other names, if any, come with the server names below). Written even
 * without a rule: a sibling name may bring one; the prune pass drops what is left without.
 */
static int remap_learned(const uint8_t *addr, const struct sl_learned *e, void *ctx)
{
	struct remap *m = ctx;
	struct sl_learned ne = { .host_id = e->host_id, .expires_ns = e->expires_ns };
	char buf[256];
	const char *name = hostnames_name(m->r->hosts, e->host_id, buf, sizeof(buf));

	if (name && switch_name_kept(m->p, m->mode, name))
		switch_add_rules(ne.rule_ids, m->p, name);
	return loader_next_learned_put(m->n, m->family, addr, &ne);
}

/*
 * One (address, server name) pair: kept if the new policy allows the name, under the name's own
 * rules in the new policy (none: a report-mode name no rule lists), and those rules added to the
 * address's.
 */
static int remap_sni(const uint8_t addr[16], const char *name, const struct sl_sni_name *v,
		     void *ctx)
{
	static const uint8_t zero[12];
	struct sl_sni_name nv = { .host_id = v->host_id };
	uint32_t host_id = v->host_id;
	struct remap *m = ctx;
	struct sl_learned e;
	int family, err, i;

	if (!switch_name_kept(m->p, m->mode, name))
		return 0;
	switch_add_rules(nv.rule_ids, m->p, name);
	err = loader_next_sni(m->n, addr, name, &nv);
	if (err)
		return err;
	/* the key does not say the family: a v4 address is the first 4 bytes, the rest zero */
	for (i = 0; i < 2; i++) {
		family = i ? AF_INET6 : AF_INET;
		if (family == AF_INET && memcmp(addr + 4, zero, sizeof(zero)))
			continue;
		if (loader_next_learned_get(m->n, family, addr, &e))
			continue;
		/* the log names the address by a name that is still allowed */
		if (switch_no_rule(&e) && switch_add_rules(e.rule_ids, m->p, name))
			e.host_id = host_id;
		else
			switch_add_rules(e.rule_ids, m->p, name);
		err = loader_next_learned_put(m->n, family, addr, &e);
		if (err)
			return err;
	}
	return 0;
}

/* Enforce mode: an address no rule of the new policy lists is not carried over. */
static int remap_prune(const uint8_t *addr, const struct sl_learned *e, void *ctx)
{
	struct remap *m = ctx;

	if (m->mode == SL_MODE_REPORT || !switch_no_rule(e)) {
		m->kept++;
		return 0;
	}
	if (m->n_doomed == m->cap_doomed) {
		size_t cap = m->cap_doomed ? 2 * m->cap_doomed : 256;
		void *d = realloc(m->doomed, cap * sizeof(*m->doomed));

		if (!d)
			return -ENOMEM;
		m->doomed = d;
		m->cap_doomed = cap;
	}
	memset(m->doomed[m->n_doomed], 0, sizeof(m->doomed[0]));
	memcpy(m->doomed[m->n_doomed++], addr, m->family == AF_INET ? 4 : 16);
	return 0;
}

static int remap_all(struct remap *m)
{
	static const int families[2] = { AF_INET, AF_INET6 };
	size_t i;
	int f, err = 0;

	for (f = 0; !err && f < 2; f++) {
		m->family = families[f];
		err = loader_learned_walk(m->r->loader, m->family, remap_learned, m);
	}
	if (!err)
		err = loader_sni_walk(m->r->loader, remap_sni, m);
	for (f = 0; !err && f < 2; f++) {
		m->family = families[f];
		m->n_doomed = 0;
		err = loader_next_learned_walk(m->n, m->family, remap_prune, m);
		for (i = 0; !err && i < m->n_doomed; i++)
			err = loader_next_learned_del(m->n, m->family, m->doomed[i]);
		m->dropped += m->n_doomed;
	}
	free(m->doomed);
	m->doomed = NULL;
	return err;
}

/*
 * The budget id of each rule of p (sl_rule_budget, indexed by rule_id; c's size): that of the
 * run's rule it is (switch_budget_matches: the same name, or for an unnamed rule the same
 * destinations), else a fresh one past every id in use, so that a host's budget follows its
 * rule across a renumbering and a rule new to the run never inherits another's.
 * 0 or -errno (err says why).
 */
static int switch_budgets(struct run *r, const struct policy *p, const struct policy_compiled *c,
			  uint16_t **out, char *err, size_t err_len)
{
	const struct policy *o = r->policy;
	uint16_t *b = calloc(c->n_rule_ports ? c->n_rule_ports : 1, sizeof(*b)), last = 0;
	uint16_t *old = calloc(o->n_rules ? o->n_rules : 1, sizeof(*old));
	long *match = calloc(p->n_rules ? p->n_rules : 1, sizeof(*match));
	char why[512];
	size_t i, j;
	int ret = -ENOMEM;

	if (!b || !old || !match)
		goto fail;
	/*
	 * The run's own maps, never a guess: a resumed writer's loader has the budget maps only
	 * through the run's programs, and a rule's number in place of its budget id would give it
	 * a fresh budget, or another rule's.
	 */
	ret = loader_run_maps(r->loader);
	if (ret) {
		util_fmt(err, err_len, "find the run's maps through its programs: %s",
			 strerror(-ret));
		goto fail;
	}
	for (j = 0; j < o->n_rules; j++) {
		why[0] = '\0';
		ret = loader_rule_budget(r->loader, policy_rule_id(j), &old[j], why, sizeof(why));
		if (ret) {
			util_fmt(err, err_len, "read the rules' budget ids (sl_rule_budget): %s",
				 util_why(why, ret));
			goto fail;
		}
		if (old[j] > last)
			last = old[j];
	}
	why[0] = '\0';
	ret = loader_host_budgets_max(r->loader, &last, why, sizeof(why));
	if (ret) {
		util_fmt(err, err_len, "read the hosts' byte totals (sl_host_bytes): %s",
			 util_why(why, ret));
		goto fail;
	}
	ret = switch_budget_matches(o, p, match);
	if (ret) {
		util_fmt(err, err_len, "match the rules' budgets: %s", strerror(-ret));
		goto fail;
	}
	for (i = 0; i < p->n_rules && policy_rule_id(i) < c->n_rule_ports; i++) {
		if (match[i] >= 0) {
			b[policy_rule_id(i)] = old[match[i]];
			continue;
		}
		if (last == UINT16_MAX) {
			util_fmt(err, err_len, "the run has given out every host budget id (%u): "
					       "detach and attach again", UINT16_MAX);
			ret = -E2BIG;
			goto fail;
		}
		b[policy_rule_id(i)] = ++last;
	}
	free(match);
	free(old);
	*out = b;
	return 0;
fail:
	free(match);
	free(old);
	free(b);
	return ret;
}

static const char *mode_name(int mode)
{
	return mode == SL_MODE_REPORT ? "report" : "enforce";
}

/* A policy as policy_switch_begin and policy_change name it. */
static void line_policy(struct journal_line *l, const struct policy *p, const char *path, int mode)
{
	char digest[65];

	util_hex(p->sha256, sizeof(p->sha256), digest, sizeof(digest));
	journal_line_str(l, "policy", path);
	journal_line_str(l, "policy_sha256", digest);
	journal_line_str(l, "mode", mode_name(mode));
	journal_line_str(l, "default", p->default_verdict == POLICY_DEFAULT_ALLOW ? "allow" : "deny");
}

void switch_log_change(struct run *r, const char *prev_sha256, int prev_mode,
		       const uint64_t *learned, bool after_restart)
{
	struct journal_line l;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	records_line(&r->rec, &l, "policy_change", &now);
	line_policy(&l, r->policy, r->args.policy_path, r->policy->mode);
	journal_line_u64(&l, "era", loader_era(r->loader));
	journal_line_str(&l, "prev_policy_sha256", prev_sha256);
	journal_line_str(&l, "prev_mode", mode_name(prev_mode));
	if (learned) {
		journal_line_u64(&l, "learned_kept", learned[0]);
		journal_line_u64(&l, "learned_dropped", learned[1]);
	}
	if (r->switch_by)
		journal_line_str(&l, "requested_by", r->switch_by);
	if (after_restart)
		journal_line_bool(&l, "after_restart", true);
	records_write(&r->rec, &l);
}

void switch_log_abort(struct run *r, uint32_t era, const char *why)
{
	struct journal_line l;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	records_line(&r->rec, &l, "policy_switch_abort", &now);
	journal_line_u64(&l, "era", era);
	journal_line_str(&l, "why", why);
	records_write(&r->rec, &l);
}

/*
 * policy_switch_begin, on disk before the commit: a writer killed between the commit and the
 * policy_change leaves programs whose policy, mode and generation the log's last policy_change
 * does not name; the one that takes the run over tells by the generation (era) which of the two
 * the programs carry, and writes the policy_change, or the abort, that the dead one did not.
 * A switch the log cannot announce does not happen: an error here stops it.
 */
static int write_switch_begin(struct run *r, const struct policy *p, const char *path, int mode,
			      uint32_t era, uint32_t prev_era, char *err, size_t err_len)
{
	struct journal_line l;
	struct timespec now;
	int ret;

	clock_gettime(CLOCK_REALTIME, &now);
	records_line(&r->rec, &l, "policy_switch_begin", &now);
	line_policy(&l, p, path, mode);
	journal_line_u64(&l, "era", era);
	journal_line_u64(&l, "prev_era", prev_era);
	if (r->switch_by)
		journal_line_str(&l, "requested_by", r->switch_by);
	ret = records_write(&r->rec, &l);
	if (!ret)
		ret = journal_flush(r->rec.journal);
	if (ret)
		util_fmt(err, err_len, "write the switch's policy_switch_begin line to the log: %s; "
				       "the run stays as it was", strerror(-ret));
	return ret;
}


/* A switch between its steps (switch.h). */
struct switch_job {
	struct run *r;
	struct policy *np;	    /* the new policy (replace-policy), NULL: the run's */
	struct policy_compiled *nc;
	const struct policy *target; /* np, or the run's own (set-mode) */
	const struct policy_compiled *target_c;
	int mode;		    /* the mode to switch to */
	uint16_t *budgets;	    /* switch_budgets' */
	struct loader_next *n;	    /* the new set, once loaded; NULL after the commit */
};

int switch_prepare(struct run *r, const char *policy_path, int mode, struct switch_job **out,
		   char *err, size_t err_len)
{
	struct policy *np = NULL;
	struct policy_compiled *nc = NULL;
	const struct policy *target;
	const struct policy_compiled *target_c;
	struct switch_job *j;
	uint16_t *budgets = NULL;
	int ret, new_mode;
	const char *why;

	*out = NULL;
	if (mode != -1 && mode != SL_MODE_ENFORCE && mode != SL_MODE_REPORT) {
		util_fmt(err, err_len, "mode %d is neither enforce nor report", mode);
		return -EINVAL;
	}
	if (!policy_path && mode == -1) {
		util_fmt(err, err_len, "nothing to switch: neither a policy nor a mode given");
		return -EINVAL;
	}
	if (!r->loader || !r->policy) {
		util_fmt(err, err_len, "run %s has no programs to switch", r->run_id);
		return -ENOENT;
	}
	/* a run taken over from a dead writer has its policy, not compiled: the maps were full */
	if (!r->compiled) {
		ret = policy_compile(r->policy, &r->compiled, err, err_len);
		if (ret)
			return ret;
	}
	new_mode = mode == -1 ? (int)r->policy->mode : mode;
	target = r->policy;
	target_c = r->compiled;
	if (policy_path) {
		ret = policy_load_file(policy_path, &np, err, err_len);
		if (ret)
			return ret;
		np->mode = new_mode;
		ret = policy_compile(np, &nc, err, err_len);
		if (ret)
			goto out;
		/* the workload's seccomp filter was installed at its start, from the old one */
		if (r->seccomp && np->sockets != r->policy->sockets) {
			util_fmt(err, err_len, "%s: sockets: differs from the run's policy, and "
					       "the workload's socket-family filter cannot change",
				 policy_path);
			ret = -EINVAL;
			goto out;
		}
		if ((np->require & POLICY_REQUIRE_LSM) && !loader_lsm_active(r->loader, &why)) {
			util_fmt(err, err_len, "%s requires the BPF-LSM layer (require: [lsm]), "
					       "which the run does not have", policy_path);
			ret = -EOPNOTSUPP;
			goto out;
		}
		target = np;
		target_c = nc;
	}
	/*
	 * Here, not in switch_load: a resumed writer's loader collects the run's programs and maps
	 * into itself the first time (loader_run_maps), which switch_load, on another thread, must
	 * find done (loader_next_load then only reads them).
	 */
	ret = loader_run_maps(r->loader);
	if (ret) {
		util_fmt(err, err_len, "find the run's maps through its programs: %s",
			 strerror(-ret));
		goto out;
	}
	ret = switch_budgets(r, target, target_c, &budgets, err, err_len);
	if (ret)
		goto out;
	j = calloc(1, sizeof(*j));
	if (!j) {
		util_fmt(err, err_len, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	*j = (struct switch_job){ .r = r, .np = np, .nc = nc, .target = target,
				  .target_c = target_c, .mode = new_mode, .budgets = budgets };
	*out = j;
	return 0;
out:
	free(budgets);
	policy_compiled_free(nc);
	policy_free(np);
	return ret;
}

int switch_load(struct switch_job *j, char *err, size_t err_len)
{
	char why[512] = "";
	/* verified while the old programs go on judging */
	int ret = loader_next_load(j->r->loader, j->target, j->target_c, j->mode, j->budgets,
				   &j->n, why, sizeof(why));

	if (ret) {
		util_fmt(err, err_len, "load the new programs: %s",
			 why[0] ? why : loader_explain(-ret));
		return ret;
	}
	malloc_trim(0); /* the kernel BTF libbpf parsed for the load (run.c) */
	return 0;
}

int switch_commit(struct switch_job *j, char *err, size_t err_len)
{
	struct run *r = j->r;
	struct policy *np = j->np, *old_p = NULL;
	struct policy_compiled *nc = j->nc, *old_c = NULL;
	struct loader_next *n = j->n;
	struct remap m = { .r = r, .p = j->target, .mode = j->mode };
	char prev_sha[65];
	uint64_t since_ns = 0, learned[2];
	uint32_t prev_era, new_era;
	int prev_mode, ret;

	if (!n) {
		util_fmt(err, err_len, "the new programs were not loaded");
		return -EINVAL;
	}
	prev_mode = r->policy->mode;
	prev_era = loader_era(r->loader);
	util_hex(r->policy->sha256, sizeof(r->policy->sha256), prev_sha, sizeof(prev_sha));
	m.n = n;
	new_era = loader_next_era(n);

	/* no query is answered from here to the end: none under one policy and learned in the
	   other's maps */
	resolver_lock(r->resolver);
	ret = remap_all(&m);
	if (ret)
		util_fmt(err, err_len, "carry the learned addresses over: %s", strerror(-ret));
	else
		ret = write_switch_begin(r, j->target, np ? np->path : r->args.policy_path,
					 m.mode, new_era, prev_era, err, err_len);
	if (!ret) {
		/* selftests only: the log's policy_switch_begin written, its policy_change not */
		loader_selftest_kill("before-commit");
		/* a flow connected from here on was judged by the new connect programs */
		since_ns = (uint64_t)util_clock_ns(CLOCK_BOOTTIME);
		ret = loader_next_commit(r->loader, n, err, err_len);
		/*
		 * The links are back on the old programs: the begin line's generation never was.
		 * Not so when they could go neither back nor forward: the begin stays open, for the
		 * next writer to find the hooks as they are (the caller leaves the run).
		 */
		if (ret && ret != -ENOTRECOVERABLE)
			switch_log_abort(r, new_era, err);
	}
	/* committed (its objects are the run's now) or to be freed: the job's no more */
	j->n = NULL;
	if (ret) {
		resolver_unlock(r->resolver);
		loader_next_free(n);
		return ret;
	}
	loader_selftest_kill("after-commit");
	/*
	 * The new programs judge from here on, and their records may already be in the ring
	 * buffer behind the old ones': the records learn the old generation (its era, policy and
	 * mode) and the new one's policy and era before any record is read. Each flow record is
	 * then named by the generation its era says, each decision record by its own (the era the
	 * programs that made it stamped in it; one without: by its time, against since), the old
	 * programs' as the old policy, the new ones' as the new (the flows open now are named so
	 * when they end, a set-mode's too: every switch is a generation, loader_next_load).
	 * Should the records have no room for the old generation, a replaced policy is kept all
	 * the same: an earlier set-mode's generation may name it.
	 */
	if (np) {
		old_p = r->policy;
		old_c = r->compiled;
	}
	if (records_policy_replaced(&r->rec, old_p ? old_p : r->policy, old_p != NULL, prev_mode,
				    prev_era, since_ns))
		fprintf(stderr, "sluice: run %s: the flows of the previous policy generation will be "
			"named by the policy of their connect(): %s\n", r->run_id, strerror(ENOMEM));
	if (np) {
		r->policy = np;
		r->compiled = nc;
		r->rec.policy = np;
		r->args.policy_path = np->path;
		resolver_set_policy(r->resolver, np);
		j->np = NULL;
		j->nc = NULL;
	} else {
		r->policy->mode = m.mode;
	}
	r->rec.era = loader_era(r->loader);
	/* the old programs' records, while no query is answered (under the policy that made them) */
	if (r->events)
		records_drain(&r->rec);
	resolver_unlock(r->resolver);
	/* the old programs' denials, their sockets ended now the resolver answers again */
	records_kill_queued(&r->rec);
	learned[0] = m.kept;
	learned[1] = m.dropped;
	switch_log_change(r, prev_sha, prev_mode, learned, false);
	policy_compiled_free(old_c);
	/*
	 * …unless judged again here. The connect programs judge only new flows, the egress
	 * backstop passes a connected flow's own destination, and the packet programs count an
	 * open flow's bytes against the caps of the rule its connect() found, by that rule's
	 * number, which the new policy may give to another rule: a flow the old policy (or report
	 * mode) let through would carry data to a host the new policy denies, or past the caps
	 * its new rule sets, for as long as it stays open. Judge every socket the run holds under
	 * the new policy now, as at an attach (a preexisting line each), rewrite each flow's rule
	 * and caps to the new judgment, and in enforce mode destroy the denied ones.
	 */
	{
		char why[256];
		int n_judged = preexisting_rejudge(r, why, sizeof(why));

		if (n_judged < 0)
			fprintf(stderr, "sluice: run %s: judge the open flows after the switch: %s\n",
				r->run_id, why);
	}
	return 0;
}

void switch_free(struct switch_job *j)
{
	if (!j)
		return;
	loader_next_free(j->n);
	free(j->budgets);
	policy_compiled_free(j->nc);
	policy_free(j->np);
	free(j);
}
