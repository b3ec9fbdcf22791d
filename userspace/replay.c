// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice policy replay POLICY LOG… : what POLICY, enforced, would have done to the connections
 * and flows the verified logs recorded. The matching is the policy module's own, the code the
 * resolver and the preexisting-socket scan use (policy_match_host, policy_rule_takes,
 * policy_cidr_match, through policy_index.h, which answers as they do without walking the
 * policy's lists), so a replay and a run cannot disagree on what a rule covers:
 *   - a connection to a name the run's resolver learned: denied when no rule lists the name
 *     (enforcing, the resolver answers NXDOMAIN, whatever the default); allowed by the first
 *     rule listing it (the rule the resolver tags its addresses with) when that rule lists the
 *     port and protocol; else by a cidrs rule covering the address; else by default: allow;
 *   - a connection without a name: a cidrs rule covering the address, else default: allow;
 *   - a v6 address embedding an IPv4 one is judged as that IPv4 address, and an IPv4 host
 *     behind a relay is denied unless default: allow, as bpf/policy.bpf.h's decide_v6 does;
 *   - the blackhole refuses what the log says it refused, whatever the policy;
 *   - a recorded flow is cut when its rule's max_request_bytes / max_response_bytes is below
 *     what it carried, or when the run's flows to that host under that rule went past a
 *     max_total_* cap.
 * Needed traffic (evidence.h): a connection the run made that went ahead. Exit 1 when POLICY
 * would deny or cut some of it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../bpf/addr.bpf.h"
#include "../policy/policy.h"
#include "cjson.h"
#include "evidence.h"
#include "policy_index.h"
#include "policy_tools.h"
#include "util.h"

#define PROG "sluice policy replay"
#define WHY_MAX 320

struct judged {
	bool allow;
	/*
	 * allow, for a connection to an address shared by several names only some of which the
	 * policy lists: the kernel would let it through once a listed one is resolved, but the
	 * log cannot tell whether the workload meant one of those (enforced, an unlisted name
	 * gets NXDOMAIN and its connection is never made)
	 */
	bool uncertain;
	long rule; /* 0-based, -1: the default (or the blackhole) */
	char why[WHY_MAX];
};

static uint8_t proto_bit(const char *proto)
{
	if (!proto)
		return 0;
	if (!strcmp(proto, "tcp"))
		return SL_PROTO_TCP;
	if (!strcmp(proto, "udp"))
		return SL_PROTO_UDP;
	if (!strcmp(proto, "icmp") || !strcmp(proto, "icmpv6"))
		return SL_PROTO_ICMP;
	return 0;
}

/*
 * What p, enforced, does to one connection. x is p's index: each connection costs about the
 * logarithm of the policy's lists, not their length (a rule listing 65,535 ports one by one,
 * 100,000 CIDRs), so a replay takes time in proportion to the evidence.
 */
static void judge(const struct policy *p, struct policy_index *x, const char *host,
		  const char *dst, uint16_t port, const char *proto, bool blackholed,
		  struct judged *j)
{
	char rn[64], safe[256];
	uint8_t addr[16], bit = proto_bit(proto);
	int family = 0;
	long r = -1, h = -1;

	memset(j, 0, sizeof(*j));
	j->rule = -1;
	if (blackholed) {
		snprintf(j->why, sizeof(j->why), "blackhole (no policy can allow it)");
		return;
	}
	if (dst && inet_pton(AF_INET, dst, addr) == 1)
		family = AF_INET;
	else if (dst && inet_pton(AF_INET6, dst, addr) == 1)
		family = AF_INET6;
	if (family) {
		bool default_allow = p->default_verdict == POLICY_DEFAULT_ALLOW, embedded;
		__u32 v4;

		/* what the address decides, as the programs' decide_v4 and decide_v6 (dst_fate) */
		switch (dst_fate(family, addr, default_allow, &v4, &embedded)) {
		case SL_DST_BLACKHOLE:
			snprintf(j->why, sizeof(j->why), "blackhole (no policy can allow it)");
			return;
		case SL_DST_RELAY:
			snprintf(j->why, sizeof(j->why),
				 "an IPv4 host behind a relay (6to4, Teredo, ISATAP, NAT64): only "
				 "default: allow opens it");
			return;
		case SL_DST_V4:
			/* ::ffff:a.b.c.d, 64:ff9b::a.b.c.d, ::a.b.c.d: the IPv4 host's rules */
			family = AF_INET;
			memcpy(addr, &v4, 4);
			break;
		case SL_DST_V6:
			break;
		}
	}
	if (host) {
		h = policy_index_host(x, host);
		/*
		 * Enforcing, the run's resolver answers NXDOMAIN to a name no rule lists, whatever
		 * the default or a cidrs rule covering its address: the connection is never made.
		 */
		if (h < 0) {
			snprintf(j->why, sizeof(j->why),
				 "no rule lists the name (the resolver would answer NXDOMAIN)");
			return;
		}
		if (h >= 0 && bit && policy_index_takes(x, (size_t)h, port, bit)) {
			j->allow = true;
			j->rule = h;
			snprintf(j->why, sizeof(j->why), "rule %s",
				 policy_rule_name(p, (size_t)h, rn, sizeof(rn)));
			return;
		}
	}
	if (family && bit)
		r = policy_index_cidr(x, family, addr, port, bit);
	if (r >= 0) {
		j->allow = true;
		j->rule = r;
		snprintf(j->why, sizeof(j->why), "rule %s (cidrs)",
			 policy_rule_name(p, (size_t)r, rn, sizeof(rn)));
		return;
	}
	if (p->default_verdict == POLICY_DEFAULT_ALLOW) {
		j->allow = true;
		snprintf(j->why, sizeof(j->why), "default: allow");
		return;
	}
	if (h >= 0)
		snprintf(j->why, sizeof(j->why), "rule %s lists %s but not %u/%s",
			 policy_rule_name(p, (size_t)h, rn, sizeof(rn)),
			 evidence_safe(host, safe, sizeof(safe)), port, proto ? proto : "?");
	else
		snprintf(j->why, sizeof(j->why), "an address without a name, in no cidrs rule");
}

/*
 * judge, for a line that names a host or, for an address the run's resolver had answered for
 * several names (hosts, host NULL), for each of them: enforcing, each name the policy lists is
 * answered again and its rules allow the address, so the connection goes ahead under the first
 * of them that takes its port, as the kernel's learned address would let it. Allowed for every
 * name: allowed. For some only: allowed but uncertain (struct judged), since the workload may
 * have meant another. For none (or a line with more names than it lists, hosts_more): the
 * address alone (a cidrs rule, the default), and uncertain if a name would have allowed it,
 * or if it allows while a name no rule lists shares the address (NXDOMAIN enforcing).
 */
static void judge_line(const struct policy *p, struct policy_index *x, const char *host,
		       char *const *hosts, size_t n_hosts, bool hosts_more, const char *dst,
		       uint16_t port, const char *proto, bool blackholed, struct judged *j)
{
	struct judged first = { .allow = false }, one;
	char safe[256], denied[256] = "";
	size_t i, allowed = 0;

	if (host || blackholed || !n_hosts) {
		judge(p, x, host, dst, port, proto, blackholed, j);
		return;
	}
	for (i = 0; i < n_hosts; i++) {
		judge(p, x, hosts[i], dst, port, proto, false, &one);
		if (!one.allow) {
			if (!denied[0])
				evidence_safe(hosts[i], denied, sizeof(denied));
			continue;
		}
		if (!allowed++) {
			first = one;
			evidence_safe(hosts[i], safe, sizeof(safe));
		}
	}
	if (allowed == n_hosts && !hosts_more) {
		*j = first;
		util_fmt_append(j->why, sizeof(j->why), ", for every name that shares the address");
		return;
	}
	/*
	 * What the address alone gets (cidrs, default) holds for whichever name was meant, except
	 * a name no rule lists: enforcing, the resolver answers that one NXDOMAIN (judge), so a
	 * workload that meant it never connects, whatever cidrs or the default say. So does one of
	 * the names the line left out (hosts_more), for all replay can tell.
	 */
	judge(p, x, NULL, dst, port, proto, false, j);
	if (j->allow) {
		for (i = 0; i < n_hosts && policy_index_host(x, hosts[i]) >= 0; i++)
			;
		if (i == n_hosts && !hosts_more)
			return;
		j->uncertain = true;
		if (i < n_hosts)
			util_fmt_append(
				j->why, sizeof(j->why),
				", unless the connection was for %s, which the address was "
				"answered for too and no rule lists (the resolver would answer "
				"NXDOMAIN)",
				evidence_safe(hosts[i], safe, sizeof(safe)));
		else
			util_fmt_append(
				j->why, sizeof(j->why),
				", unless the connection was for one of the names the line leaves "
				"out, which no rule may list (the resolver would answer "
				"NXDOMAIN)");
		return;
	}
	if (!allowed)
		return;
	*j = first;
	j->uncertain = true;
	util_fmt_append(j->why, sizeof(j->why),
			" if the connection was for %s, but the address was answered for %s too%s, "
			"which the policy does not allow",
			safe, denied[0] ? denied : "other names",
			denied[0] && hosts_more ? " (and more)" : "");
}

bool replay_allows(const struct policy *p, const char *host, const char *dst, uint16_t port,
		   const char *proto)
{
	struct policy_index *x;
	struct judged j;

	if (policy_index_new(p, &x))
		return false;
	judge(p, x, host, dst, port, proto, false, &j);
	policy_index_free(x);
	return j.allow;
}

/* One row of the table: connections of one destination, port and verdict. */
struct row {
	size_t endpoint;
	uint16_t port;
	const char *proto;
	bool allow, uncertain;
	char why[WHY_MAX];
	uint64_t conns, needed;
	size_t first_run;
	uint64_t runs_mask; /* the first 64 runs; runs beyond are counted in more_runs */
	bool more_runs;
};

struct cut {
	size_t flow; /* index into ev->flows */
	char what[WHY_MAX];
};

struct rctx {
	const struct policy *p;
	struct policy_index *x;
	const struct evidence *ev;
	struct row *rows;
	size_t n_rows;
	/*
	 * rows by key (endpoint, port, protocol, verdict, why): row index + 1, 0: empty; open
	 * addressing with at least twice the connections' slots, so a workload dialling one host
	 * on every port does not make the replay quadratic
	 */
	size_t *slots;
	size_t n_slots;
	struct judged *conn_j; /* per ev->conns */
	struct cut *cuts;
	size_t n_cuts;
	uint64_t allowed, denied, needed_denied, relaxed;
	uint64_t uncertain, needed_uncertain; /* struct judged's uncertain */
};

static size_t row_hash(size_t endpoint, uint16_t port, const char *proto, bool allow,
		       const char *why)
{
	uint64_t h = 1469598103934665603ULL ^ (endpoint * 0x9e3779b97f4a7c15ULL) ^
		     ((uint64_t)port << 1 | allow);

	for (; *proto; proto++)
		h = (h ^ (unsigned char)*proto) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL;
	for (; *why; why++)
		h = (h ^ (unsigned char)*why) * 1099511628211ULL;
	return (size_t)h;
}

static int add_row(struct rctx *c, const struct ev_conn *k, const struct judged *j)
{
	const char *proto = k->proto ? k->proto : "?";
	size_t h = row_hash(k->endpoint, k->port, proto, j->allow, j->why) & (c->n_slots - 1);
	struct row *r;

	for (; c->slots[h]; h = (h + 1) & (c->n_slots - 1)) {
		r = &c->rows[c->slots[h] - 1];
		if (r->endpoint == k->endpoint && r->port == k->port && r->allow == j->allow &&
		    r->uncertain == j->uncertain && !strcmp(r->proto, proto) &&
		    !strcmp(r->why, j->why))
			goto found;
	}
	r = reallocarray(c->rows, c->n_rows + 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	c->rows = r;
	r = &c->rows[c->n_rows++];
	memset(r, 0, sizeof(*r));
	r->endpoint = k->endpoint;
	r->port = k->port;
	r->proto = proto;
	r->allow = j->allow;
	r->uncertain = j->uncertain;
	r->first_run = k->run;
	memcpy(r->why, j->why, sizeof(r->why));
	c->slots[h] = c->n_rows;
found:
	r->conns++;
	r->needed += k->needed;
	if (k->run < 64)
		r->runs_mask |= 1ULL << k->run;
	else
		r->more_runs = true;
	return 0;
}

static int add_cut(struct rctx *c, size_t flow, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int add_cut(struct rctx *c, size_t flow, const char *fmt, ...)
{
	struct cut *k = reallocarray(c->cuts, c->n_cuts + 1, sizeof(*k));
	va_list ap;

	if (!k)
		return -ENOMEM;
	c->cuts = k;
	k = &c->cuts[c->n_cuts++];
	k->flow = flow;
	va_start(ap, fmt);
	vsnprintf(k->what, sizeof(k->what), fmt, ap);
	va_end(ap);
	return 0;
}

/* Per (run, rule, host-or-address) sums, for the max_total_* caps, in flow order. */
struct total {
	size_t run;
	long rule;
	char key[INET6_ADDRSTRLEN + 256];
	uint64_t req, resp;
	bool req_cut, resp_cut;
};

/*
 * The host a max_total_* cap counts a flow under, as bpf/addr.bpf.h's host_key_of does: its name,
 * else its address, an IPv6 one that embeds an IPv4 address as that IPv4 address (one budget
 * whatever form the address was dialled in). A flow to an address several names share (hosts)
 * counts under the name the kernel keeps for the address, the first of them (records.c's
 * restore_flow_total too): a budget the workload can spend through any of the names.
 */
static void total_key(const struct ev_flow *f, char *key, size_t len)
{
	const char *name = f->host ? f->host : f->n_hosts ? f->hosts[0] : NULL;
	uint8_t a[16];
	__u32 w[4], v4;

	if (name || !f->dst || inet_pton(AF_INET6, f->dst, a) != 1) {
		snprintf(key, len, "%s", name ? name : f->dst ? f->dst : "?");
		return;
	}
	memcpy(w, a, sizeof(w));
	if (!v6_embeds_v4_for_policy(w, &v4) || !inet_ntop(AF_INET, &v4, key, (socklen_t)len))
		snprintf(key, len, "%s", f->dst);
}

static size_t total_hash(size_t run, long rule, const char *key)
{
	uint64_t h = 1469598103934665603ULL ^ (run * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)rule;

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 1099511628211ULL;
	return (size_t)h;
}

static int caps(struct rctx *c)
{
	const struct evidence *ev = c->ev;
	struct total *t = NULL;
	size_t n_t = 0, i, k, n_slots, *slots, h;
	int err = 0;

	/* totals found through a hash: a workload chooses how many hosts it reaches */
	for (n_slots = 16; n_slots < 2 * ev->n_flows + 2; n_slots *= 2)
		;
	slots = calloc(n_slots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < ev->n_flows; i++) {
		const struct ev_flow *f = &ev->flows[i];
		const struct policy_rule *r;
		char key[sizeof(t->key)];
		struct judged j;

		judge_line(c->p, c->x, f->host, f->hosts, f->n_hosts, f->hosts_more > 0, f->dst,
			   f->port, f->proto, false, &j);
		if (!j.allow || j.rule < 0)
			continue;
		r = &c->p->rules[j.rule];
		if (r->has_max_request_bytes && f->req_bytes > r->max_request_bytes)
			err = add_cut(c, i, "max_request_bytes %" PRIu64 " < %" PRIu64 " sent",
				      r->max_request_bytes, f->req_bytes);
		if (!err && r->has_max_response_bytes && f->resp_bytes > r->max_response_bytes)
			err = add_cut(c, i, "max_response_bytes %" PRIu64 " < %" PRIu64 " received",
				      r->max_response_bytes, f->resp_bytes);
		if (err)
			break;
		if (!r->has_max_total_request_bytes && !r->has_max_total_response_bytes)
			continue;
		total_key(f, key, sizeof(key));
		for (h = total_hash(f->run, j.rule, key) & (n_slots - 1); slots[h];
		     h = (h + 1) & (n_slots - 1)) {
			k = slots[h] - 1;
			if (t[k].run == f->run && t[k].rule == j.rule && !strcmp(t[k].key, key))
				break;
		}
		if (!slots[h]) {
			struct total *nt = reallocarray(t, n_t + 1, sizeof(*t));

			if (!nt) {
				err = -ENOMEM;
				break;
			}
			t = nt;
			memset(&t[n_t], 0, sizeof(*t));
			t[n_t].run = f->run;
			t[n_t].rule = j.rule;
			memcpy(t[n_t].key, key, sizeof(key));
			slots[h] = ++n_t;
		}
		k = slots[h] - 1;
		t[k].req += f->req_bytes;
		t[k].resp += f->resp_bytes;
		if (r->has_max_total_request_bytes && !t[k].req_cut &&
		    t[k].req > r->max_total_request_bytes) {
			t[k].req_cut = true;
			err = add_cut(c, i,
				      "max_total_request_bytes %" PRIu64 " < %" PRIu64
				      " sent by the run's flows so far",
				      r->max_total_request_bytes, t[k].req);
		}
		if (!err && r->has_max_total_response_bytes && !t[k].resp_cut &&
		    t[k].resp > r->max_total_response_bytes) {
			t[k].resp_cut = true;
			err = add_cut(c, i,
				      "max_total_response_bytes %" PRIu64 " < %" PRIu64
				      " received by the run's flows so far",
				      r->max_total_response_bytes, t[k].resp);
		}
		if (err)
			break;
	}
	free(slots);
	free(t);
	return err;
}

static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	/* the log's canonical form: valid UTF-8 as is, not byte by byte (that read as Latin-1) */
	cjson_fput_string(f, s);
}

static void print_json(const struct rctx *c, const char *policy_path)
{
	const struct evidence *ev = c->ev;
	size_t i;

	printf("{\"policy\":");
	json_str(stdout, policy_path);
	printf(",\"policy_mode\":\"%s\",\"logs\":[",
	       c->p->mode == SL_MODE_REPORT ? "report" : "enforce");
	for (i = 0; i < ev->n_runs; i++) {
		const struct ev_run *r = &ev->runs[i];

		printf("%s{\"path\":", i ? "," : "");
		json_str(stdout, r->path);
		printf(",\"run_id\":");
		json_str(stdout, r->run_id);
		printf(",\"verified\":%s,\"verdict\":", r->verified ? "true" : "false");
		json_str(stdout, r->verdict);
		printf("}");
	}
	printf("],\"connections\":[");
	for (i = 0; i < ev->n_conns; i++) {
		const struct ev_conn *k = &ev->conns[i];
		const struct judged *j = &c->conn_j[i];

		printf("%s{\"log\":%zu,\"run\":", i ? "," : "", k->run);
		json_str(stdout, ev->runs[k->run].run_id);
		printf(",\"ts\":%" PRId64 ",\"host\":", k->ts);
		json_str(stdout, k->host);
		printf(",\"dst\":");
		json_str(stdout, k->dst);
		printf(",\"port\":%u,\"proto\":", k->port);
		json_str(stdout, k->proto);
		printf(",\"logged\":");
		json_str(stdout, k->allow ? "allow" : k->enforced ? "deny" : "would-deny");
		printf(",\"needed\":%s,\"verdict\":\"%s\",\"rule\":", k->needed ? "true" : "false",
		       j->uncertain ? "uncertain" : j->allow ? "allow" : "deny");
		if (j->rule >= 0)
			json_str(stdout, c->p->rules[j->rule].name);
		else
			printf("null");
		printf(",\"why\":");
		json_str(stdout, j->why);
		printf("}");
	}
	printf("],\"cuts\":[");
	for (i = 0; i < c->n_cuts; i++) {
		const struct ev_flow *f = &ev->flows[c->cuts[i].flow];

		printf("%s{\"log\":%zu,\"run\":", i ? "," : "", f->run);
		json_str(stdout, ev->runs[f->run].run_id);
		printf(",\"ts\":%" PRId64 ",\"host\":", f->ts);
		json_str(stdout, f->host);
		printf(",\"dst\":");
		json_str(stdout, f->dst);
		printf(",\"port\":%u,\"proto\":", f->port);
		json_str(stdout, f->proto);
		printf(",\"req_bytes\":%" PRIu64 ",\"resp_bytes\":%" PRIu64 ",\"cap\":",
		       f->req_bytes, f->resp_bytes);
		json_str(stdout, c->cuts[i].what);
		printf("}");
	}
	printf("],\"allowed\":%" PRIu64 ",\"denied\":%" PRIu64 ",\"needed_denied\":%" PRIu64
	       ",\"uncertain\":%" PRIu64 ",\"needed_uncertain\":%" PRIu64
	       ",\"cut\":%zu,\"newly_allowed\":%" PRIu64 "}\n",
	       c->allowed, c->denied, c->needed_denied, c->uncertain, c->needed_uncertain,
	       c->n_cuts, c->relaxed);
}

static void print_table(const struct rctx *c, const char *policy_path)
{
	const struct evidence *ev = c->ev;
	char safe[512], pp[32];
	size_t i, pass;

	printf("replay of %s against %zu log%s (judged as enforced%s):\n",
	       evidence_safe(policy_path, safe, sizeof(safe)), ev->n_runs,
	       ev->n_runs == 1 ? "" : "s",
	       c->p->mode == SL_MODE_REPORT ? "; the policy itself says mode: report" : "");
	for (i = 0; i < ev->n_runs; i++) {
		const struct ev_run *r = &ev->runs[i];

		printf("  %s:", evidence_safe(r->path, safe, sizeof(safe)));
		printf(" run %s,", evidence_safe(r->run_id ? ev_run_label(r) : "?", safe, sizeof(safe)));
		printf(" %s mode:", evidence_safe(r->mode ? r->mode : "?", safe, sizeof(safe)));
		printf(" %s\n", evidence_safe(r->verdict ? r->verdict : "?", safe, sizeof(safe)));
	}
	printf("\n%-6s %-40s %-11s %6s %6s  %s\n", "VERDICT", "DESTINATION", "PORT", "CONNS",
	       "NEEDED", "WHY");
	/* denials first: they are what the reader is looking for */
	/* then those a shared address makes uncertain: they may be denials */
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < c->n_rows; i++) {
			const struct row *r = &c->rows[i];

			if ((pass == 0) != !r->allow || (pass == 1) != r->uncertain)
				continue;
			snprintf(pp, sizeof(pp), "%u/%s", r->port, r->proto);
			printf("%-7s %-40s %-11s %6" PRIu64 " %6" PRIu64 "  %s\n",
			       r->uncertain ? "uncertain" : r->allow ? "allow" : "deny",
			       evidence_safe(ev->endpoints[r->endpoint].name, safe, 256), pp,
			       r->conns, r->needed, evidence_safe(r->why, safe + 256, 256));
		}
	}
	for (i = 0; i < c->n_cuts; i++) {
		const struct ev_flow *f = &ev->flows[c->cuts[i].flow];

		snprintf(pp, sizeof(pp), "%u/%s", f->port, f->proto ? f->proto : "?");
		printf("%-7s %-40s %-11s %6s %6s  %s", "cut",
		       evidence_safe(f->host  ? f->host
				     : f->dst ? f->dst
					      : "?",
				     safe, sizeof(safe)),
		       pp, "1", "1", c->cuts[i].what);
		printf(" (run %s)\n",
		       evidence_safe(ev->runs[f->run].run_id ? ev_run_label(&ev->runs[f->run]) : "?", safe,
				     sizeof(safe)));
	}
	printf("\n%" PRIu64 " connection%s: %" PRIu64 " allowed, %" PRIu64 " denied; %" PRIu64
	       " needed connection%s denied, %zu flow%s cut by byte caps",
	       c->allowed + c->denied + c->uncertain,
	       c->allowed + c->denied + c->uncertain == 1 ? "" : "s", c->allowed,
	       c->denied, c->needed_denied, c->needed_denied == 1 ? "" : "s", c->n_cuts,
	       c->n_cuts == 1 ? "" : "s");
	if (c->relaxed)
		printf("; %" PRIu64 " denied in the log would now be allowed", c->relaxed);
	if (c->uncertain)
		printf("; %" PRIu64 " uncertain (%" PRIu64 " needed): to an address several names "
		       "share, which the policy allows for some of them only",
		       c->uncertain, c->needed_uncertain);
	printf("\n%s\n", c->needed_denied || c->needed_uncertain || c->n_cuts
				 ? "FAIL: this policy would (or may) break traffic the runs needed"
				 : "OK: everything the runs needed would go through");
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice policy replay POLICY LOG... [--key PUB] [--unverified] [--json]\n"
		"\n"
		"What POLICY, enforced, would have done to the connections and flows the logs\n"
		"recorded: allowed, denied and why, and the byte caps that would have cut a flow.\n"
		"Every log is verified first; one that does not verify is refused.\n"
		"\n"
		"  -k, --key PUB       the host's verifier key (default: $SLUICE_PUB, else\n"
		"                      /etc/sluice/host.key.pub)\n"
		"  -u, --unverified    use logs that do not verify (said in the output)\n"
		"  -j, --json          one JSON object instead of the table\n"
		"\n"
		"exit status: 0 everything needed would go through; 1 POLICY would deny or cut "
		"traffic\n"
		"the runs needed (a connection that went ahead: allowed, or denied in report mode\n"
		"only), or may deny it (uncertain: to an address several names share, only some\n"
		"of which POLICY allows); 2 usage, a policy that does not parse, or a log refused.\n");
}

int policy_replay_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"key", required_argument, NULL, 'k'},
		{"unverified", no_argument, NULL, 'u'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct rctx c = {0};
	struct evidence *ev = NULL;
	struct policy *p = NULL;
	const char *key = NULL;
	char err[1024];
	bool json = false, unverified = false;
	size_t i;
	int o, ret = 2;

	optind = 1;
	while ((o = getopt_long(argc, argv, "k:ujh", opts, NULL)) != -1) {
		switch (o) {
		case 'k':
			key = optarg;
			break;
		case 'u':
			unverified = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		fprintf(stderr, PROG ": %s\n", optind == argc ? "no POLICY given" : "no LOG given");
		usage(stderr);
		return 2;
	}
	if (policy_load_file(argv[optind], &p, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		return 2;
	}
	if (evidence_load(PROG, argv + optind + 1, (size_t)(argc - optind - 1), key, unverified,
			  &ev))
		goto out;
	c.p = p;
	c.ev = ev;
	if (policy_index_new(p, &c.x))
		goto nomem;
	c.conn_j = calloc(ev->n_conns ? ev->n_conns : 1, sizeof(*c.conn_j));
	for (c.n_slots = 16; c.n_slots < 2 * ev->n_conns + 2; c.n_slots *= 2)
		;
	c.slots = calloc(c.n_slots, sizeof(*c.slots));
	if (!c.conn_j || !c.slots)
		goto nomem;
	for (i = 0; i < ev->n_conns; i++) {
		const struct ev_conn *k = &ev->conns[i];
		bool bh = k->reason && !strcmp(k->reason, "blackhole");

		judge_line(p, c.x, k->host, k->hosts, k->n_hosts, k->hosts_more > 0, k->dst,
			   k->port, k->proto, bh, &c.conn_j[i]);
		if (c.conn_j[i].uncertain) {
			c.uncertain++;
			c.needed_uncertain += k->needed;
		} else if (c.conn_j[i].allow) {
			c.allowed++;
			c.relaxed += !k->needed;
		} else {
			c.denied++;
			c.needed_denied += k->needed;
		}
		if (add_row(&c, k, &c.conn_j[i]))
			goto nomem;
	}
	if (caps(&c))
		goto nomem;
	if (json)
		print_json(&c, argv[optind]);
	else
		print_table(&c, argv[optind]);
	/* a needed connection the policy may deny is a failure as one it denies */
	ret = c.needed_denied || c.needed_uncertain || c.n_cuts ? 1 : 0;
	goto out;
nomem:
	fprintf(stderr, PROG ": %s\n", strerror(ENOMEM));
out:
	free(c.rows);
	free(c.cuts);
	free(c.conn_j);
	free(c.slots);
	policy_index_free(c.x);
	evidence_free(ev);
	policy_free(p);
	return ret;
}
