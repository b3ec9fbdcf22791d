// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice policy diff OLD NEW: what changes between two policies, in the words a reviewer reads
 * in a pull request: the default, the mode, hosts and CIDRs allowed or no longer allowed, their
 * ports, protocols and byte caps, and the settings around them. A host is judged by the first
 * rule listing it (the rule the run's resolver tags its addresses with), a CIDR by the first rule
 * listing it, so moving a host between rules shows only when what it gets changes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../policy/policy.h"
#include "policy_tools.h"

#define PROG "sluice policy diff"

/* An allowed destination of a policy: a host pattern or a CIDR, and the first rule naming it. */
struct dest {
	char key[128];
	size_t rule;
};

static void add_dest(struct dest **v, size_t *n, size_t *cap, const char *key, size_t rule)
{
	struct dest *d;

	if (*n == *cap) {
		d = reallocarray(*v, *cap ? *cap * 2 : 64, sizeof(**v));
		if (!d)
			return;
		*v = d;
		*cap = *cap ? *cap * 2 : 64;
	}
	snprintf((*v)[*n].key, sizeof((*v)[*n].key), "%s", key);
	(*v)[*n].rule = rule;
	(*n)++;
}

/* By key, then by place in the policy: the first of equal keys is the first rule naming it. */
static int dest_ptr_cmp(const void *a, const void *b)
{
	const struct dest *const *x = a, *const *y = b;
	int c = strcmp((*x)->key, (*y)->key);

	return c ? c : (*x < *y ? -1 : *x > *y);
}

/* v's entries sorted by key, for find(); NULL when out of memory. */
static const struct dest **by_key(const struct dest *v, size_t n)
{
	const struct dest **s = calloc(n ? n : 1, sizeof(*s));
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		s[i] = &v[i];
	qsort(s, n, sizeof(*s), dest_ptr_cmp);
	return s;
}

/*
 * Every destination once, with the first rule naming it, in policy order. Sorted, not searched
 * per entry: a policy of 100,000 CIDRs made that quadratic (minutes).
 */
static void dests(const struct policy *p, bool hosts, struct dest **v, size_t *n)
{
	const struct dest **s;
	char buf[128];
	size_t i, k, cap = 0, w;
	bool *drop;

	*v = NULL;
	*n = 0;
	for (i = 0; i < p->n_rules; i++) {
		const struct policy_rule *r = &p->rules[i];

		if (hosts)
			for (k = 0; k < r->n_hosts; k++)
				add_dest(v, n, &cap, r->hosts[k], i);
		else
			for (k = 0; k < r->n_cidrs; k++)
				if (!policy_cidr_format(&r->cidrs[k], buf, sizeof(buf)))
					add_dest(v, n, &cap, buf, i);
	}
	s = by_key(*v, *n);
	drop = calloc(*n ? *n : 1, sizeof(*drop));
	if (!s || !drop) {
		free(s);
		free(drop);
		return;
	}
	/* of equal keys, the first in policy order stays */
	for (i = 1, k = 0; i < *n; i++) {
		if (!strcmp(s[i]->key, s[k]->key))
			drop[s[i] - *v] = true;
		else
			k = i;
	}
	free(s);
	for (i = 0, w = 0; i < *n; i++)
		if (!drop[i])
			(*v)[w++] = (*v)[i];
	*n = w;
	free(drop);
}

static int dest_key_cmp(const void *a, const void *b)
{
	const struct dest *const *x = a, *const *y = b;

	return strcmp((*x)->key, (*y)->key);
}

static const struct dest *find(const struct dest **sorted, size_t n, const char *key)
{
	struct dest k, *kp = &k, **hit;

	snprintf(k.key, sizeof(k.key), "%s", key);
	k.rule = 0;
	hit = bsearch(&kp, sorted, n, sizeof(*sorted), dest_key_cmp);
	return hit ? *hit : NULL;
}

/* "80, 443, 8000-8100/tcp, udp" or "any port/tcp": what a rule lets through. */
static const char *reach(const struct policy_rule *r, char *buf, size_t size)
{
	size_t o = 0, i;

	buf[0] = '\0';
	if (!r->n_ports)
		o += (size_t)snprintf(buf, size, "any port");
	for (i = 0; i < r->n_ports && o < size; i++) {
		if (r->ports[i].lo == r->ports[i].hi)
			o += (size_t)snprintf(buf + o, size - o, "%s%u", i ? ", " : "",
					      r->ports[i].lo);
		else
			o += (size_t)snprintf(buf + o, size - o, "%s%u-%u", i ? ", " : "",
					      r->ports[i].lo, r->ports[i].hi);
	}
	if (o < size)
		snprintf(buf + o, size - o, "/%s%s%s%s%s", r->protocols & SL_PROTO_TCP ? "tcp" : "",
			 (r->protocols & SL_PROTO_TCP) && (r->protocols & SL_PROTO_UDP) ? ", " : "",
			 r->protocols & SL_PROTO_UDP ? "udp" : "",
			 (r->protocols & SL_PROTO_ICMP) && (r->protocols & ~SL_PROTO_ICMP) ? ", "
											   : "",
			 r->protocols & SL_PROTO_ICMP ? "icmp" : "");
	return buf;
}

/* "rule \"pkgs\"", or "rule 3" for a rule without a name. */
static const char *rname(const struct policy *p, size_t i, char *buf, size_t size)
{
	if (p->rules[i].name)
		snprintf(buf, size, "rule \"%s\"", p->rules[i].name);
	else
		snprintf(buf, size, "rule %zu", i + 1);
	return buf;
}

static const char *cap_str(bool has, uint64_t v, char *buf, size_t size)
{
	if (!has)
		return "none";
	snprintf(buf, size, "%" PRIu64, v);
	return buf;
}

/* The caps of two rules compared, one line per cap that differs. */
static size_t caps_diff(const char *what, const char *key, const struct policy_rule *a,
			const struct policy_rule *b, FILE *out)
{
	struct {
		const char *name;
		bool ha, hb;
		uint64_t va, vb;
	} c[] = {
		{"max_request_bytes", a->has_max_request_bytes, b->has_max_request_bytes,
		 a->max_request_bytes, b->max_request_bytes},
		{"max_response_bytes", a->has_max_response_bytes, b->has_max_response_bytes,
		 a->max_response_bytes, b->max_response_bytes},
		{"max_total_request_bytes", a->has_max_total_request_bytes,
		 b->has_max_total_request_bytes, a->max_total_request_bytes,
		 b->max_total_request_bytes},
		{"max_total_response_bytes", a->has_max_total_response_bytes,
		 b->has_max_total_response_bytes, a->max_total_response_bytes,
		 b->max_total_response_bytes},
	};
	char x[32], y[32];
	size_t i, n = 0;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (c[i].ha == c[i].hb && c[i].va == c[i].vb)
			continue;
		fprintf(out, "~ %s %s: %s %s -> %s (%s)\n", what, key, c[i].name,
			cap_str(c[i].ha, c[i].va, x, sizeof(x)),
			cap_str(c[i].hb, c[i].vb, y, sizeof(y)),
			!c[i].hb			? "cap removed"
			: !c[i].ha || c[i].vb < c[i].va ? "tighter"
							: "looser");
		n++;
	}
	return n;
}

/* What two rules let through, compared whole (reach()'s line is cut at its buffer). */
static bool same_reach(const struct policy_rule *a, const struct policy_rule *b)
{
	return a->protocols == b->protocols && a->n_ports == b->n_ports &&
	       (!a->n_ports || !memcmp(a->ports, b->ports, a->n_ports * sizeof(*a->ports)));
}

static size_t dest_diff(const struct policy *a, const struct policy *b, bool hosts, FILE *out)
{
	const char *what = hosts ? "host" : "cidr";
	struct dest *va, *vb;
	const struct dest **sa, **sb;
	size_t na, nb, i, n = 0;
	char r1[128], r2[128], n1[300], n2[300];

	dests(a, hosts, &va, &na);
	dests(b, hosts, &vb, &nb);
	sa = by_key(va, na);
	sb = by_key(vb, nb);
	if (!sa || !sb) {
		fprintf(out, "! out of memory comparing %ss\n", what);
		n++;
		goto out;
	}
	for (i = 0; i < nb; i++) {
		const struct dest *o = find(sa, na, vb[i].key);
		const struct policy_rule *rb = &b->rules[vb[i].rule];

		if (!o) {
			fprintf(out, "+ %s %s: now allowed on %s (%s)%s\n", what, vb[i].key,
				reach(rb, r2, sizeof(r2)), rname(b, vb[i].rule, n2, sizeof(n2)),
				hosts && !strncmp(vb[i].key, "*.", 2)
					? ": a wildcard, every name below it"
					: "");
			n++;
			continue;
		}
		reach(&a->rules[o->rule], r1, sizeof(r1));
		reach(rb, r2, sizeof(r2));
		if (strcmp(r1, r2)) {
			fprintf(out, "~ %s %s: %s -> %s\n", what, vb[i].key, r1, r2);
			n++;
		} else if (!same_reach(&a->rules[o->rule], rb)) {
			fprintf(out,
				"~ %s %s: its ports changed past what fits on a line (%zu -> %zu "
				"ports and ranges): %s\n",
				what, vb[i].key, a->rules[o->rule].n_ports, rb->n_ports, r2);
			n++;
		}
		n += caps_diff(what, vb[i].key, &a->rules[o->rule], rb, out);
	}
	for (i = 0; i < na; i++) {
		if (find(sb, nb, va[i].key))
			continue;
		fprintf(out, "- %s %s: no longer allowed (was %s, %s)\n", what, va[i].key,
			reach(&a->rules[va[i].rule], r1, sizeof(r1)),
			rname(a, va[i].rule, n1, sizeof(n1)));
		n++;
	}
out:
	free(sa);
	free(sb);
	free(va);
	free(vb);
	return n;
}

static const char *mode_word(enum sl_mode m)
{
	return m == SL_MODE_REPORT ? "report" : "enforce";
}

static const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

size_t policy_diff_write(const struct policy *a, const struct policy *b, FILE *out)
{
	size_t n = 0, i, k;

	if (a->default_verdict != b->default_verdict) {
		fprintf(out, "~ default: %s -> %s (%s)\n",
			a->default_verdict == POLICY_DEFAULT_ALLOW ? "allow" : "deny",
			b->default_verdict == POLICY_DEFAULT_ALLOW ? "allow" : "deny",
			b->default_verdict == POLICY_DEFAULT_ALLOW
				? "connections no rule covers are now ALLOWED"
				: "connections no rule covers are now denied");
		n++;
	}
	if (a->mode != b->mode) {
		fprintf(out, "~ mode: %s -> %s (%s)\n", mode_word(a->mode), mode_word(b->mode),
			b->mode == SL_MODE_REPORT
				? "denials are only logged from now on, NOT enforced"
				: "denials are enforced from now on");
		n++;
	}
	if (a->deny_errno != b->deny_errno) {
		fprintf(out, "~ deny_errno: %s -> %s\n",
			str_or(policy_errno_name(a->deny_errno), "?"),
			str_or(policy_errno_name(b->deny_errno), "?"));
		n++;
	}
	n += dest_diff(a, b, true, out);
	n += dest_diff(a, b, false, out);
	if (a->log_allow != b->log_allow || a->log_deny != b->log_deny) {
		fprintf(out, "~ log: allow %s -> %s, deny %s -> %s\n", a->log_allow ? "yes" : "no",
			b->log_allow ? "yes" : "no", a->log_deny ? "yes" : "no",
			b->log_deny ? "yes" : "no");
		n++;
	}
	if (a->sockets != b->sockets) {
		fprintf(out,
			"~ sockets: extra socket kinds changed (0x%x -> 0x%x): see policy "
			"check\n",
			a->sockets, b->sockets);
		n++;
	}
	if (a->require != b->require) {
		fprintf(out, "~ require: lsm %s -> %s\n",
			a->require & POLICY_REQUIRE_LSM ? "required" : "not required",
			b->require & POLICY_REQUIRE_LSM ? "required" : "not required");
		n++;
	}
	if (strcmp(str_or(a->request_access, ""), str_or(b->request_access, ""))) {
		fprintf(out, "~ request_access: \"%s\" -> \"%s\"\n", str_or(a->request_access, ""),
			str_or(b->request_access, ""));
		n++;
	}
	for (i = 0; i < b->n_alert_on; i++) {
		for (k = 0; k < a->n_alert_on; k++)
			if (!strcmp(a->alert_on[k], b->alert_on[i]))
				break;
		if (k == a->n_alert_on) {
			fprintf(out, "+ alert_on \"%s\"\n", b->alert_on[i]);
			n++;
		}
	}
	for (i = 0; i < a->n_alert_on; i++) {
		for (k = 0; k < b->n_alert_on; k++)
			if (!strcmp(b->alert_on[k], a->alert_on[i]))
				break;
		if (k == b->n_alert_on) {
			fprintf(out, "- alert_on \"%s\"\n", a->alert_on[i]);
			n++;
		}
	}
	return n;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice policy diff OLD NEW\n"
		"\n"
		"What changes from policy OLD to NEW, one line each: the default, the mode,\n"
		"hosts and CIDRs allowed (+) or no longer allowed (-), their ports, protocols\n"
		"and byte caps (~), and the settings around them.\n"
		"\n"
		"exit status: 0 no difference; 1 differences, listed; 2 usage or a policy that\n"
		"does not parse.\n");
}

int policy_diff_main(int argc, char **argv)
{
	struct policy *a = NULL, *b = NULL;
	char err[1024];
	size_t n;
	int ret = 2;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 3) {
		usage(stderr);
		return 2;
	}
	if (policy_load_file(argv[1], &a, err, sizeof(err)) ||
	    policy_load_file(argv[2], &b, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	printf("policy diff %s -> %s\n", argv[1], argv[2]);
	n = policy_diff_write(a, b, stdout);
	printf("%zu difference%s\n", n, n == 1 ? "" : "s");
	ret = n ? 1 : 0;
out:
	policy_free(a);
	policy_free(b);
	return ret;
}
