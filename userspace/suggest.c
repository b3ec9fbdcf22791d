// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice policy suggest LOG… : a policy from what verified runs did. It allows what the logs
 * show went ahead (allowed, or denied in report mode only), one rule per host name with the
 * ports and protocols seen, and nothing else; what deserves a look first (a host of a single
 * run, a telemetry-looking name, an address dialled without a name, a wildcard) is written
 * commented out with the reason, never silently allowed. The output is checked with the policy
 * parser and compiler before it is written, so policy check accepts what suggest writes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../policy/policy.h"
#include "evidence.h"
#include "policy_tools.h"
#include "util.h"

#define PROG "sluice policy suggest"
/* Suggested caps: twice the largest value seen, and at least this much above it. */
#define CAP_FACTOR 2
#define CAP_MIN_HEADROOM 65536ULL
#define CAP_MARGIN "margin 2x, and at least 64 KiB over"

/*
 * Telemetry and analytics, judged by name only (documented in sluice(8), POLICY SUGGEST): a
 * label of the name, or a part of a label between hyphens, is one of these words ...
 */
static const char *const telemetry_words[] = {
	"telemetry", "analytics", "metrics",   "stats",	  "statistics", "tracking", "tracker",
	"beacon",    "collect",	  "collector", "events",  "crash",	"crashes",  "crashreports",
	"usage",     "rum",	  "otel",      "otlp",	  "sentry",	"segment",  "mixpanel",
	"amplitude", "bugsnag",	  "hotjar",    "posthog", "datadog",	"newrelic", "honeycomb",
};

/* ... or the name is, or is below, one of these vendors' domains. */
static const char *const telemetry_domains[] = {
	"google-analytics.com",
	"googletagmanager.com",
	"doubleclick.net",
	"app-measurement.com",
	"datadoghq.com",
	"datadoghq.eu",
	"newrelic.com",
	"nr-data.net",
	"sentry.io",
	"segment.io",
	"segment.com",
	"mixpanel.com",
	"amplitude.com",
	"honeycomb.io",
	"bugsnag.com",
	"hotjar.com",
	"posthog.com",
	"crashlytics.com",
	"launchdarkly.com",
	"scarf.sh",
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const char *suggest_telemetry_match(const char *host)
{
	size_t hl = strlen(host), i;
	const char *p = host;

	for (i = 0; i < ARRAY_SIZE(telemetry_domains); i++) {
		size_t dl = strlen(telemetry_domains[i]);

		if (hl == dl && !strcmp(host, telemetry_domains[i]))
			return telemetry_domains[i];
		if (hl > dl && host[hl - dl - 1] == '.' &&
		    !strcmp(host + hl - dl, telemetry_domains[i]))
			return telemetry_domains[i];
	}
	/* every piece between dots and hyphens */
	while (*p) {
		size_t l = strcspn(p, ".-");

		for (i = 0; i < ARRAY_SIZE(telemetry_words); i++)
			if (strlen(telemetry_words[i]) == l && !strncmp(p, telemetry_words[i], l))
				return telemetry_words[i];
		p += l;
		if (*p)
			p++;
	}
	return NULL;
}

/* 1234567 as "1_234_567", as the policy's byte values may be written. */
static const char *num(uint64_t v, char *buf, size_t size)
{
	char tmp[32];
	size_t n, o = 0, i;

	n = (size_t)snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	for (i = 0; i < n && o + 2 < size; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = '_';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
	return buf;
}

static uint64_t cap_for(uint64_t seen)
{
	uint64_t c = seen * CAP_FACTOR;

	if (c < seen + CAP_MIN_HEADROOM)
		c = seen + CAP_MIN_HEADROOM;
	return (c + 1023) / 1024 * 1024;
}

/* A name the policy parser takes as a host (it decides, not a copy of its rules here). */
static bool host_ok(const char *name)
{
	struct policy *p = NULL;
	char buf[400], err[256];
	const char *c;
	int n;

	for (c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '.' ||
		      *c == '-'))
			return false;
	n = snprintf(buf, sizeof(buf), "rules:\n  - hosts: [\"%s\"]\n", name);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return false;
	if (policy_load_buffer(buf, (size_t)n, "host", &p, err, sizeof(err)))
		return false;
	policy_free(p);
	return true;
}

static uint64_t port_needed(const struct ev_port *p)
{
	return p->allowed + p->would_deny;
}

static size_t runs_needed(const struct ev_endpoint *e)
{
	size_t i, n = 0;

	for (i = 0; i < e->n_uses; i++)
		n += e->uses[i].needed > 0;
	return n;
}

enum flag {
	FLAG_NONE = 0,
	FLAG_SINGLE = 1,
	FLAG_TELEMETRY = 2,
	FLAG_BADNAME = 4,
};

struct sctx {
	const struct evidence *ev;
	size_t min_runs;
	FILE *f;
	/* per endpoint: 0 not yet asked, 1 a host name the policy takes, 2 not (host_ok is a parse)
	 */
	unsigned char *name_ok;
};

static bool name_ok(const struct sctx *s, const struct ev_endpoint *e)
{
	size_t i = (size_t)(e - s->ev->endpoints);

	if (!s->name_ok[i])
		s->name_ok[i] = host_ok(e->name) ? 1 : 2;
	return s->name_ok[i] == 1;
}

static void runs_list(const struct sctx *s, const struct ev_endpoint *e, FILE *f)
{
	char safe[128];
	size_t i, k = 0;

	for (i = 0; i < e->n_uses; i++) {
		const struct ev_run *r = &s->ev->runs[e->uses[i].run];

		if (!e->uses[i].needed)
			continue;
		if (k++ == 8) {
			fprintf(f, ", ...");
			break;
		}
		fprintf(f, "%s%s", k > 1 ? ", " : "", evidence_safe(ev_run_label(r), safe, sizeof(safe)));
	}
}

/* The statistics comment above a rule; pfx is "  # " or "#   # " (a commented-out rule). */
static void stats(const struct sctx *s, const struct ev_endpoint *e, const char *pfx)
{
	FILE *f = s->f;
	char a[64], b[64], safe[512];
	size_t i, nr = runs_needed(e);
	uint64_t run_req = 0, run_resp = 0;

	evidence_utc(e->first_ts, a, sizeof(a));
	evidence_utc(e->last_ts, b, sizeof(b));
	fprintf(f, "%s%s: %" PRIu64 " connection%s in %zu run%s (", pfx,
		evidence_safe(e->name, safe, sizeof(safe)), e->needed, e->needed == 1 ? "" : "s",
		nr, nr == 1 ? "" : "s");
	runs_list(s, e, f);
	fprintf(f, "); first seen %s, last %s\n", a, b);
	if (e->would_deny || e->denied)
		fprintf(f,
			"%s  %" PRIu64 " allowed, %" PRIu64 " denied in report mode only, %" PRIu64
			" denied under enforcement\n",
			pfx, e->allowed, e->would_deny, e->denied);
	if (e->flows)
		fprintf(f,
			"%s  bytes: %s sent, %s received in %" PRIu64 " flow%s; largest request "
			"%s, largest response %s\n",
			pfx, num(e->req_bytes, a, sizeof(a)), num(e->resp_bytes, b, sizeof(b)),
			e->flows, e->flows == 1 ? "" : "s", num(e->max_req, safe, 32),
			num(e->max_resp, safe + 32, 32));
	else
		fprintf(f,
			"%s  bytes: none recorded (no flow line: datagrams sent without connect(), "
			"or report-mode denials logged by a sluice that did not count them)\n",
			pfx);
	if (e->would_deny_flows)
		fprintf(f, "%s  of which denied in report mode only: %s sent, %s received in %" PRIu64
			   " flow%s\n",
			pfx, num(e->would_deny_req_bytes, a, sizeof(a)),
			num(e->would_deny_resp_bytes, b, sizeof(b)), e->would_deny_flows,
			e->would_deny_flows == 1 ? "" : "s");
	for (i = 0; i < e->n_uses; i++) {
		if (e->uses[i].req_bytes > run_req)
			run_req = e->uses[i].req_bytes;
		if (e->uses[i].resp_bytes > run_resp)
			run_resp = e->uses[i].resp_bytes;
	}
	if (e->flows && nr > 1)
		fprintf(f, "%s  largest run total: %s sent, %s received\n", pfx,
			num(run_req, a, sizeof(a)), num(run_resp, b, sizeof(b)));
	if (e->n_cnames) {
		fprintf(f, "%s  CNAME chain under this name:", pfx);
		for (i = 0; i < e->n_cnames; i++)
			fprintf(f, " %s%s", i ? "-> " : "",
				evidence_safe(e->cnames[i], safe, sizeof(safe)));
		fprintf(f, "\n");
	}
	if (e->kind == EV_ADDR && e->n_dsts) {
		/* the names of a shared address: any could be the one, none is proposed for it */
		fprintf(f, "%s  the run's resolver answered it for several names, and the log "
			   "cannot tell\n%s  which one its connections were for:", pfx, pfx);
		for (i = 0; i < e->n_dsts && i < 8; i++)
			fprintf(f, " %s", evidence_safe(e->dsts[i], safe, sizeof(safe)));
		fprintf(f, "%s", e->n_dsts > 8 ? " ..." : "");
		/* names its lines could not list (sluice-log(5) "hosts_more") */
		if (e->names_more)
			fprintf(f, " (and %" PRIu64 " more)", e->names_more);
		fprintf(f, "\n%s  allow the one the workload needs by name, by hand\n", pfx);
	} else if (e->n_dsts || e->n_answers) {
		char **v = e->n_dsts ? e->dsts : e->answers;
		size_t n = e->n_dsts ? e->n_dsts : e->n_answers;

		fprintf(f, "%s  addresses:", pfx);
		for (i = 0; i < n && i < 8; i++)
			fprintf(f, " %s", evidence_safe(v[i], safe, sizeof(safe)));
		fprintf(f, "%s\n", n > 8 ? " ..." : "");
	}
	if (e->rules)
		fprintf(f, "%s  rules that judged it: %s\n", pfx,
			evidence_safe(e->rules, safe, sizeof(safe)));
}

/* The rule's body after "- hosts: […]" or "- cidrs: […]"; lp prefixes each line. */
static void rule_body(const struct sctx *s, const struct ev_endpoint *e, const char *lp)
{
	FILE *f = s->f;
	char a[64], b[64];
	bool tcp = false, udp = false, other = false, first = true;
	uint16_t last = 0;
	size_t i, nr = runs_needed(e);
	uint64_t run_req = 0, run_resp = 0;

	fprintf(f, "%s    ports: [", lp);
	for (i = 0; i < e->n_ports; i++) {
		const struct ev_port *p = &e->ports[i];

		if (!port_needed(p))
			continue;
		if (!strcmp(p->proto, "tcp"))
			tcp = true;
		else if (!strcmp(p->proto, "udp"))
			udp = true;
		else {
			other = true;
			continue;
		}
		/* sorted by port then protocol: one port listed once */
		if (!first && p->port == last)
			continue;
		fprintf(f, "%s%u", first ? "" : ", ", p->port);
		first = false;
		last = p->port;
	}
	fprintf(f, "]\n");
	fprintf(f, "%s    protocols: [%s%s%s]\n", lp, tcp ? "tcp" : "", tcp && udp ? ", " : "",
		udp ? "udp" : "");
	if (tcp && udp)
		fprintf(f,
			"%s    # tcp and udp were both seen: the rule lists every port for both\n",
			lp);
	if (other)
		fprintf(f, "%s    # other protocols were seen too (not listed): see the log\n", lp);
	if (e->flows) {
		fprintf(f, "%s    # max_request_bytes: %s  # largest observed %s; %s\n", lp,
			num(cap_for(e->max_req), a, sizeof(a)), num(e->max_req, b, sizeof(b)),
			CAP_MARGIN);
		fprintf(f, "%s    # max_response_bytes: %s  # largest observed %s; %s\n", lp,
			num(cap_for(e->max_resp), a, sizeof(a)), num(e->max_resp, b, sizeof(b)),
			CAP_MARGIN);
		for (i = 0; i < e->n_uses; i++) {
			if (e->uses[i].req_bytes > run_req)
				run_req = e->uses[i].req_bytes;
			if (e->uses[i].resp_bytes > run_resp)
				run_resp = e->uses[i].resp_bytes;
		}
		fprintf(f,
			"%s    # max_total_request_bytes: %s  # largest run total %s (%zu run%s); "
			"%s\n",
			lp, num(cap_for(run_req), a, sizeof(a)), num(run_req, b, sizeof(b)), nr,
			nr == 1 ? "" : "s", CAP_MARGIN);
		fprintf(f, "%s    # max_total_response_bytes: %s  # largest run total %s; %s\n", lp,
			num(cap_for(run_resp), a, sizeof(a)), num(run_resp, b, sizeof(b)),
			CAP_MARGIN);
	}
}

static bool has_tcp_udp(const struct ev_endpoint *e)
{
	size_t i;

	for (i = 0; i < e->n_ports; i++)
		if (port_needed(&e->ports[i]) &&
		    (!strcmp(e->ports[i].proto, "tcp") || !strcmp(e->ports[i].proto, "udp")))
			return true;
	return false;
}

static unsigned int flags_of(const struct sctx *s, const struct ev_endpoint *e, const char **tele)
{
	unsigned int fl = FLAG_NONE;

	*tele = NULL;
	if (!name_ok(s, e))
		return FLAG_BADNAME;
	*tele = suggest_telemetry_match(e->name);
	if (*tele)
		fl |= FLAG_TELEMETRY;
	if (runs_needed(e) < s->min_runs)
		fl |= FLAG_SINGLE;
	return fl;
}

static void host_rule(const struct sctx *s, const struct ev_endpoint *e, bool commented)
{
	const char *lp = commented ? "#" : "";

	stats(s, e, commented ? "#   # " : "  # ");
	fprintf(s->f, "%s  - hosts: [\"%s\"]\n", lp, e->name);
	fprintf(s->f, "%s    name: \"%s\"\n", lp, e->name);
	rule_body(s, e, lp);
}

static void flag_lines(const struct sctx *s, const struct ev_endpoint *e, unsigned int fl,
		       const char *tele)
{
	size_t nr = runs_needed(e);

	if (fl & FLAG_TELEMETRY)
		fprintf(s->f,
			"#   # telemetry? the name has \"%s\", on the telemetry list "
			"(sluice(8), POLICY SUGGEST)\n",
			tele);
	if (fl & FLAG_SINGLE) {
		if (nr == 1)
			fprintf(s->f, "#   # single run (of %zu; --min-runs %zu)\n", s->ev->n_runs,
				s->min_runs);
		else
			fprintf(s->f, "#   # seen in %zu runs, fewer than --min-runs %zu\n", nr,
				s->min_runs);
	}
}

/* A host a wildcard proposal may name: its parent (two labels or more), else NULL. */
static const char *wild_parent(const struct sctx *s, const struct ev_endpoint *e)
{
	const char *parent;

	if (e->kind != EV_HOST || !e->needed || !has_tcp_udp(e) || !name_ok(s, e))
		return NULL;
	parent = strchr(e->name, '.');
	if (!parent || !strchr(parent + 1, '.'))
		return NULL;
	return parent + 1;
}

struct wild {
	const char *parent;
	size_t i; /* endpoint index */
};

static int wild_cmp(const void *a, const void *b)
{
	const struct wild *x = a, *y = b;
	int c = strcmp(x->parent, y->parent);

	if (c)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Wildcard proposals: parents (two labels or more) that two or more needed hosts share, in the
 * order of each parent's first host. Grouped by a sort: a workload may name many hosts.
 */
static int wildcards(const struct sctx *s)
{
	const struct evidence *ev = s->ev;
	struct wild *w = calloc(ev->n_endpoints + 1, sizeof(*w));
	size_t *group = calloc(ev->n_endpoints + 1, sizeof(*group)); /* leader: its w[] start+1 */
	char safe[512];
	bool header = false;
	size_t i, j, n = 0;
	int err = 0;

	if (!w || !group) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ev->n_endpoints; i++) {
		w[n].parent = wild_parent(s, &ev->endpoints[i]);
		w[n].i = i;
		n += w[n].parent != NULL;
	}
	qsort(w, n, sizeof(*w), wild_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(w[j].parent, w[i].parent); j++)
			;
		if (j - i >= 2)
			group[w[i].i] = i + 1;
	}
	for (i = 0; i < ev->n_endpoints; i++) {
		const char *parent, *tele;

		if (!group[i])
			continue;
		if (!header) {
			fprintf(s->f, "\n# Wildcard proposals, not applied: a wildcard also allows "
				      "every name below it that no run used.\n");
			header = true;
		}
		parent = w[group[i] - 1].parent;
		fprintf(s->f, "#   \"*.%s\" would cover:", parent);
		for (j = group[i] - 1; j < n && !strcmp(w[j].parent, parent); j++) {
			const struct ev_endpoint *o = &ev->endpoints[w[j].i];
			unsigned int fl = flags_of(s, o, &tele);

			fprintf(s->f, " %s%s%s%s", evidence_safe(o->name, safe, sizeof(safe)),
				fl ? " (flagged:" : "", fl & FLAG_TELEMETRY ? " telemetry" : "",
				fl & FLAG_SINGLE ? " single run)"
				: fl		 ? ")"
						 : "");
		}
		fprintf(s->f, "\n");
	}
out:
	free(w);
	free(group);
	return err;
}

static void header(const struct sctx *s, bool unverified)
{
	const struct evidence *ev = s->ev;
	char safe[VERIFY_WHY_MAX + PATH_MAX], a[64];
	size_t i, bad = 0;

	for (i = 0; i < ev->n_runs; i++)
		bad += !ev->runs[i].verified;
	fprintf(s->f,
		"# Suggested by sluice policy suggest from %zu log%s. Review every rule before "
		"using it.\n",
		ev->n_runs, ev->n_runs == 1 ? "" : "s");
	if (unverified && bad)
		fprintf(s->f,
			"# UNVERIFIED: %zu log%s below did not verify and %s used anyway "
			"(--unverified): what %s show may have been changed.\n",
			bad, bad == 1 ? "" : "s", bad == 1 ? "was" : "were",
			bad == 1 ? "it" : "they");
	for (i = 0; i < ev->n_runs; i++) {
		const struct ev_run *r = &ev->runs[i];

		fprintf(s->f, "#   %s:", evidence_safe(r->path, safe, sizeof(safe)));
		fprintf(s->f, " run %s",
			evidence_safe(r->run_id ? ev_run_label(r) : "?", safe, sizeof(safe)));
		if (r->task)
			fprintf(s->f, ", task %s", evidence_safe(r->task, safe, sizeof(safe)));
		evidence_utc(r->start_ts, a, sizeof(a));
		fprintf(s->f, ", %s mode, started %s\n",
			evidence_safe(r->mode ? r->mode : "?", safe, sizeof(safe)), a);
		if (r->policy)
			fprintf(s->f, "#     policy %s",
				evidence_safe(r->policy, safe, sizeof(safe)));
		if (r->policy_sha256)
			fprintf(s->f, " (sha256 %s)",
				evidence_safe(r->policy_sha256, safe, sizeof(safe)));
		if (r->policy)
			fprintf(s->f, "\n");
		fprintf(s->f, "#     verify: %s\n", evidence_safe(r->verdict, safe, sizeof(safe)));
	}
	fprintf(s->f,
		"#\n"
		"# Allowed below: every host the runs reached by name and that went ahead "
		"(allowed, or\n"
		"# denied in report mode only), on the ports and protocols seen; one rule per "
		"host.\n"
		"# Flagged and left commented out, with why (uncomment what you accept):\n"
		"#   single run: used in fewer than --min-runs %zu of the runs;\n"
		"#   telemetry?: a piece of the name, or its domain, is on the list in sluice(8);\n"
		"#   addresses reached without a name (a build that dials IPs is worth a look).\n"
		"# Byte caps are suggested commented, from the largest observed (%s).\n"
		"# Replay it first: sluice policy replay THIS-FILE LOG...\n",
		s->min_runs, CAP_MARGIN);
}

static int body(const struct sctx *s)
{
	const struct evidence *ev = s->ev;
	FILE *f = s->f;
	char safe[512];
	size_t i, active = 0, flagged = 0, addrs = 0, dnsonly = 0, blackholed = 0, denied = 0;
	const char *tele;

	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];

		if (e->kind == EV_HOST && e->needed && has_tcp_udp(e) && !flags_of(s, e, &tele))
			active++;
	}
	fprintf(f, "default: deny\n");
	fprintf(f, "rules:%s\n", active ? "" : " []");
	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];

		if (e->kind != EV_HOST || !e->needed || !has_tcp_udp(e) || flags_of(s, e, &tele))
			continue;
		host_rule(s, e, false);
	}

	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];
		unsigned int fl;

		if (e->kind != EV_HOST || !e->needed || !has_tcp_udp(e))
			continue;
		fl = flags_of(s, e, &tele);
		if (!fl)
			continue;
		if (!flagged++)
			fprintf(f, "\n# Flagged: seen going ahead, but not allowed until you "
				   "uncomment "
				   "it.\n");
		if (fl & FLAG_BADNAME) {
			fprintf(f,
				"#   %s: not a name a policy can hold (%" PRIu64
				" connections); look at the log\n",
				evidence_safe(e->name, safe, sizeof(safe)), e->needed);
			continue;
		}
		stats(s, e, "#   # ");
		flag_lines(s, e, fl, tele);
		fprintf(f, "#  - hosts: [\"%s\"]\n", e->name);
		fprintf(f, "#    name: \"%s\"\n", e->name);
		rule_body(s, e, "#");
	}

	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];
		bool v6 = strchr(e->name, ':') != NULL;
		unsigned char bin[16];

		if (e->kind != EV_ADDR || !e->needed)
			continue;
		if (!addrs++)
			fprintf(f,
				"\n# Addresses reached without a name: not allowed. A build that "
				"dials IPs is worth a look;\n# if it must, uncomment.\n");
		stats(s, e, "#   # ");
		if (inet_pton(v6 ? AF_INET6 : AF_INET, e->name, bin) != 1) {
			fprintf(f, "#   # (not an address a policy can hold)\n");
			continue;
		}
		fprintf(f, "#  - cidrs: [\"%s/%d\"]\n", e->name, v6 ? 128 : 32);
		fprintf(f, "#    name: \"addr %s\"\n", e->name);
		rule_body(s, e, "#");
	}

	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];

		if (!e->blackholed)
			continue;
		if (!blackholed++)
			fprintf(f,
				"\n# Refused by the blackhole (no policy can allow these; the run "
				"tried):\n");
		fprintf(f, "#   %s: %" PRIu64 " connection%s refused\n",
			evidence_safe(e->name, safe, sizeof(safe)), e->blackholed,
			e->blackholed == 1 ? "" : "s");
	}
	for (i = 0; i < ev->n_dns; i++) {
		const struct ev_dns *d = &ev->dns[i];

		if (!d->decision || strcmp(d->decision, "refused"))
			continue;
		if (!blackholed++)
			fprintf(f,
				"\n# Refused by the blackhole (no policy can allow these; the run "
				"tried):\n");
		fprintf(f, "#   %s: answer refused",
			evidence_safe(d->host ? d->host : "?", safe, sizeof(safe)));
		fprintf(f, " (%s)\n", evidence_safe(d->why ? d->why : "", safe, sizeof(safe)));
	}

	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];

		if (e->needed || !e->denied)
			continue;
		if (!denied++)
			fprintf(f,
				"\n# Denied under enforcement and never allowed in these runs (not "
				"added):\n");
		fprintf(f, "#   %s: %" PRIu64 " connection%s denied\n",
			evidence_safe(e->name, safe, sizeof(safe)), e->denied,
			e->denied == 1 ? "" : "s");
	}

	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];

		if (e->kind != EV_HOST || e->connections || !e->dns_queries)
			continue;
		if (!dnsonly++)
			fprintf(f, "\n# Names resolved but never connected to (not added):\n#  ");
		fprintf(f, " %s", evidence_safe(e->name, safe, sizeof(safe)));
	}
	if (dnsonly)
		fprintf(f, "\n");
	return wildcards(s);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice policy suggest LOG... [--key PUB] [--min-runs N] [--unverified]\n"
		"                             [-o FILE]\n"
		"\n"
		"A policy from what verified runs did: one rule per host they reached by name "
		"(allowed,\n"
		"or denied in report mode only), with the ports and protocols seen; flagged hosts\n"
		"(single run, telemetry-looking), addresses without a name and wildcards are "
		"written\n"
		"commented out with the reason; byte caps are suggested, commented. Every log is\n"
		"verified first; one that does not verify is refused.\n"
		"\n"
		"  -k, --key PUB       the host's verifier key (default: $SLUICE_PUB, else\n"
		"                      /etc/sluice/host.key.pub)\n"
		"  -m, --min-runs N    flag a host used in fewer than N runs (default: 2 with two\n"
		"                      logs or more, else 1)\n"
		"  -u, --unverified    use logs that do not verify, and say so in the output\n"
		"  -o, --output FILE   write the policy to FILE (replaced whole, or left as it was "
		"on\n"
		"                      failure) instead of stdout\n"
		"\n"
		"exit status: 0 written; 1 a log refused or unreadable, or the output not "
		"written;\n"
		"2 usage.\n");
}

int suggest_text(const struct evidence *ev, size_t min_runs, bool unverified, const char *name,
		 char **text, size_t *len, char *err, size_t err_len)
{
	struct policy *p = NULL;
	struct policy_compiled *pc = NULL;
	struct sctx s = {0};
	char perr[1024];
	int ret = 0;

	*text = NULL;
	*len = 0;
	s.ev = ev;
	s.min_runs = min_runs ? min_runs : ev->n_runs >= 2 ? 2 : 1;
	s.name_ok = calloc(ev->n_endpoints ? ev->n_endpoints : 1, 1);
	if (!s.name_ok) {
		snprintf(err, err_len, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	s.f = open_memstream(text, len);
	if (!s.f) {
		ret = -errno;
		snprintf(err, err_len, "%s", strerror(errno));
		goto out;
	}
	header(&s, unverified);
	ret = body(&s);
	if (fclose(s.f) && !ret)
		ret = -errno;
	if (ret) {
		snprintf(err, err_len, "%s", strerror(-ret));
		goto out;
	}
	/* a workload chooses how many names it asks: say that, not "a bug" */
	if (*len > POLICY_MAX_BYTES) {
		snprintf(err, err_len,
			 "the suggestion would be %zu bytes, more than a policy may be (%u): the "
			 "logs name %zu hosts and addresses; look at them with sluice report",
			 *len, POLICY_MAX_BYTES, ev->n_endpoints);
		ret = -EFBIG;
		goto out;
	}
	/* what is written must be a policy check accepts: check it as check does */
	if (policy_load_buffer(*text, *len, name ? name : "<stdout>", &p, perr, sizeof(perr)) ||
	    policy_compile(p, &pc, perr, sizeof(perr))) {
		snprintf(err, err_len, "the suggestion does not parse (a bug): %s", perr);
		ret = -EINVAL;
	}
out:
	policy_compiled_free(pc);
	policy_free(p);
	free(s.name_ok);
	if (ret) {
		free(*text);
		*text = NULL;
	}
	return ret;
}

int policy_suggest_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"key", required_argument, NULL, 'k'},	{"min-runs", required_argument, NULL, 'm'},
		{"unverified", no_argument, NULL, 'u'}, {"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},	{NULL, 0, NULL, 0},
	};
	struct evidence *ev = NULL;
	const char *key = NULL, *out = NULL;
	char *text = NULL, err[1024], *end;
	size_t len = 0;
	long min_runs = -1;
	bool unverified = false;
	int c, ret = 2;

	optind = 1;
	while ((c = getopt_long(argc, argv, "k:m:uo:h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			key = optarg;
			break;
		case 'm':
			errno = 0;
			min_runs = strtol(optarg, &end, 10);
			if (errno || *end || min_runs < 1 || min_runs > 1000000) {
				fprintf(stderr,
					PROG ": --min-runs: expected a number 1-1000000, got "
					     "\"%s\"\n",
					optarg);
				return 2;
			}
			break;
		case 'u':
			unverified = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, PROG ": no LOG given\n");
		usage(stderr);
		return 2;
	}
	ret = 1;
	if (evidence_load(PROG, argv + optind, (size_t)(argc - optind), key, unverified, &ev))
		goto out;
	if (suggest_text(ev, min_runs > 0 ? (size_t)min_runs : 0, unverified, out, &text, &len, err,
			 sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	if (out) {
		int e = util_replace_file(out, text, len, 0644);

		if (e) {
			fprintf(stderr, PROG ": write %s: %s\n", out, strerror(-e));
			goto out;
		}
	} else if (fwrite(text, 1, len, stdout) != len || fflush(stdout)) {
		fprintf(stderr, PROG ": write: %s\n", strerror(errno));
		goto out;
	}
	ret = 0;
out:
	free(text);
	evidence_free(ev);
	return ret;
}
