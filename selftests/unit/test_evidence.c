// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/evidence.c (the model policy suggest, replay and sluice report read)
 * and of suggest's telemetry judgement: signed logs written here with tlog/note, as the evidence
 * spec says (log_start with the host-signed cert, records, run_end, final seal), read into the
 * model; every count checked against what the lines say. Then the logs the model must refuse:
 * a tampered line, another host's key, an empty file, a missing one. Then a hostile workload's
 * logs: names built to leave suggest's comments, the same run given twice, many ports, addresses
 * and hosts, an address dialled in two forms under one byte budget, forged, cut, huge and NUL
 * lines, runs that chose the same run id; a report-mode denial's flow; replay of a policy whose
 * rules list every port one by one.
 *
 * Usage: test_evidence        TAP 13; exits 1 if any test failed. Needs no root.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/evidence.h"
#include "userspace/note.h"
#include "userspace/policy_tools.h"
#include "userspace/report.h"
#include "userspace/tlog.h"
#include "tap.h"

static struct {
	struct note_signer *host, *other, *run_a, *run_b, *run_h, *run_m, *run_v, *run_w, *run_p,
		*run_c, *run_i;
	char host_vkey[NOTE_VKEY_MAX + 1], other_vkey[NOTE_VKEY_MAX + 1];
	char dir[64], log_a[128], log_b[128], tampered[128], empty[128], hostile[128];
	char copy_a[128], many[128], v6[128], wd[128], ports[128], coll[128], bad[128], inj[128];
} g;

/* A tiny writer of the evidence format (the same as the loader's, independently written). */
struct tw {
	FILE *f;
	struct tlog_tree tree;
	uint8_t prev[TLOG_HASH_SIZE];
	uint64_t seq, kseq;
	int64_t ts;
	char origin[64];
	const struct note_signer *run;
};

static void esc(const char *s, char *out)
{
	for (; *s; s++) {
		if (*s == '\n') {
			*out++ = '\\';
			*out++ = 'n';
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

static void tw_line(struct tw *w, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void tw_line(struct tw *w, const char *type, const char *fmt, ...)
{
	char line[8192], prev[65];
	va_list ap;
	int n, i;

	for (i = 0; i < TLOG_HASH_SIZE; i++)
		sprintf(prev + 2 * i, "%02x", w->prev[i]);
	w->ts += 100000;
	n = snprintf(line, sizeof(line),
		     "{\"seq\":%" PRIu64 ",\"prev\":\"%s\",\"ts\":%" PRId64 ",\"type\":\"%s\",",
		     w->seq, prev, w->ts, type);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	snprintf(line + n, sizeof(line) - (size_t)n, "}");
	n++;
	tlog_append(&w->tree, line, (size_t)n);
	tlog_sha256(line, (size_t)n, w->prev);
	w->seq++;
	fprintf(w->f, "%s\n", line);
}

static void tw_checkpoint(struct tw *w, const char *reason)
{
	uint8_t root[TLOG_HASH_SIZE];
	char text[512], note[2048], e[4096], b64[64];
	size_t len;

	tlog_root(&w->tree, root);
	note_base64_encode(root, sizeof(root), b64, sizeof(b64));
	if (checkpoint_text(w->origin, w->tree.size, root, text, sizeof(text)) < 0 ||
	    note_sign(w->run, text, strlen(text), note, sizeof(note), &len))
		exit(2);
	esc(note, e);
	tw_line(w, "checkpoint",
		"\"reason\":\"%s\",\"size\":%" PRIu64 ",\"root\":\"%s\",\"note\":\"%s\"", reason,
		w->seq, b64, e);
}

static void tw_start(struct tw *w, const char *path, const char *run_id,
		     const struct note_signer *run, const char *mode)
{
	char text[512], note[2048], cert[4096], key[NOTE_VKEY_MAX + 1];
	size_t len;

	memset(w, 0, sizeof(*w));
	w->f = fopen(path, "w");
	if (!w->f)
		exit(2);
	tlog_init(&w->tree);
	w->ts = 1796000000000000;
	w->run = run;
	snprintf(w->origin, sizeof(w->origin), "sluice/%s", run_id);
	note_signer_vkey(run, key, sizeof(key));
	snprintf(text, sizeof(text), "sluice run key\n%s\n%s\n", w->origin, key);
	if (note_sign(g.host, text, strlen(text), note, sizeof(note), &len))
		exit(2);
	esc(note, cert);
	tw_line(w, "log_start",
		"\"origin\":\"%s\",\"run_id\":\"%s\",\"key\":\"%s\",\"host_key\":\"%s\",\"cert\":"
		"\"%s\","
		"\"checkpoint_lines\":1000,\"checkpoint_secs\":10,\"format\":1",
		w->origin, run_id, key, g.host_vkey, cert);
	tw_line(w, "run_start",
		"\"run_id\":\"%s\",\"task\":\"T-7\",\"mode\":\"%s\",\"default\":\"deny\","
		"\"policy\":\"/p.yaml\",\"policy_sha256\":\"%064d\",\"argv\":[\"make\",\"all\"]",
		run_id, mode, 7);
}

/* A kernel record: the line's members then its kseq. */
static void tw_rec(struct tw *w, const char *type, const char *members)
{
	tw_line(w, type, "%s,\"kseq\":%" PRIu64, members, w->kseq++);
}

static void tw_end(struct tw *w)
{
	tw_line(w, "run_end",
		"\"why\":\"command exited\",\"exit_status\":0,\"lost\":0,\"kseq_next\":%" PRIu64
		",\"duration_ms\":900",
		w->kseq);
	tw_checkpoint(w, "final");
	fclose(w->f);
}

#define CONN(dec, enf, rule, reason, host, dst, port, proto)                                       \
	"\"hook\":\"connect4\",\"decision\":\"" dec "\",\"enforced\":" enf ",\"rule\":\"" rule     \
	"\",\"reason\":\"" reason "\",\"family\":\"ipv4\",\"proto\":\"" proto "\",\"host\":" host  \
	",\"dst\":\"" dst "\",\"port\":" port ",\"pid\":42,\"comm\":\"make\""
#define FLOW(host, dst, port, req, resp)                                                           \
	"\"host\":" host ",\"dst\":\"" dst "\",\"port\":" port ",\"proto\":\"tcp\",\"decision\":"  \
	"\"allow\",\"rule\":\"r\",\"req_bytes\":" req ",\"resp_bytes\":" resp ",\"duration_ms\":3"

static void write_logs(void)
{
	struct tw w;
	FILE *in, *out;
	char line[8192];
	int n = 0;

	tw_start(&w, g.log_a, "run-a", g.run_a, "report");
	tw_line(&w, "dns",
		"\"host\":\"Api.Example\",\"qtype\":\"A\",\"decision\":\"allow\",\"enforced\":true,"
		"\"rule\":\"r\",\"rcode\":\"NOERROR\",\"comm\":\"make\",\"answers\":[\"198.51.100."
		"12\"],"
		"\"cname\":[\"edge.cdn.example\",\"e2.cdn.example\"]");
	tw_rec(&w, "decision",
	       CONN("allow", "true", "dns", "dns_redirect", "null", "10.255.255.53", "53", "udp"));
	tw_rec(&w, "decision",
	       CONN("allow", "true", "r", "rule", "\"api.example\"", "198.51.100.12", "443",
		    "tcp"));
	tw_rec(&w, "flow", FLOW("\"api.example\"", "198.51.100.12", "443", "100", "5000"));
	tw_rec(&w, "decision",
	       CONN("deny", "false", "default", "default_deny", "\"pkgs.example\"", "198.51.100.11",
		    "80", "tcp"));
	tw_rec(&w, "decision",
	       CONN("deny", "true", "blackhole", "blackhole", "null", "169.254.169.254", "80",
		    "tcp"));
	tw_rec(&w, "decision",
	       CONN("deny", "false", "default", "default_deny", "null", "203.0.113.7", "9999",
		    "udp"));
	tw_rec(&w, "decision",
	       "\"hook\":\"sock_create\",\"decision\":\"deny\",\"enforced\":true,\"rule\":"
	       "\"default\",\"reason\":\"socket_kind\",\"what\":\"packet socket\",\"pid\":42");
	tw_rec(&w, "flow_cut",
	       "\"host\":\"api.example\",\"dst\":\"198.51.100.12\",\"port\":443,\"proto\":\"tcp\","
	       "\"rule\":\"r\",\"cap\":\"max_response_bytes\",\"limit\":4000,\"req_bytes\":1,"
	       "\"resp_bytes\":4000");
	tw_line(&w, "alert", "\"condition\":\"deny\",\"what\":\"pkgs.example\\u0001\"");
	tw_end(&w);

	tw_start(&w, g.log_b, "run-b", g.run_b, "enforce");
	tw_rec(&w, "decision",
	       CONN("allow", "true", "r", "rule", "\"api.example\"", "198.51.100.13", "443",
		    "tcp"));
	tw_rec(&w, "flow", FLOW("\"api.example\"", "198.51.100.13", "443", "300", "10"));
	tw_rec(&w, "decision",
	       CONN("deny", "true", "default", "default_deny", "\"pkgs.example\"", "198.51.100.11",
		    "80", "tcp"));
	tw_end(&w);

	/* log A with its fifth line's port changed: the sixth line's prev no longer matches */
	in = fopen(g.log_a, "r");
	out = fopen(g.tampered, "w");
	if (!in || !out)
		exit(2);
	while (fgets(line, sizeof(line), in)) {
		char *p = ++n == 5 ? strstr(line, "\"port\":443") : NULL;

		if (p)
			memcpy(p, "\"port\":444", 10);
		fputs(line, out);
	}
	fclose(in);
	fclose(out);
	out = fopen(g.empty, "w");
	if (!out)
		exit(2);
	fclose(out);
}

static const struct ev_port *port_of(const struct ev_endpoint *e, uint16_t port, const char *pr)
{
	for (size_t i = 0; i < e->n_ports; i++)
		if (e->ports[i].port == port && !strcmp(e->ports[i].proto, pr))
			return &e->ports[i];
	return NULL;
}

static bool check_model(char *why)
{
	struct evidence *ev = NULL;
	const struct ev_endpoint *e;
	const struct ev_port *p;
	char err[1024];
	char *paths[] = {g.log_a, g.log_b};

	(void)err;
	EXPECT(!evidence_load("test", paths, 2, NULL, false, &ev), "both logs load");
	EXPECT(ev->n_runs == 2, "2 runs, got %zu", ev->n_runs);
	EXPECT(ev->runs[0].verified && ev->runs[0].status == VERIFY_OK, "run a verified");
	EXPECT(!strcmp(ev->runs[0].verdict, "OK: intact and complete"), "verdict, got %s",
	       ev->runs[0].verdict);
	EXPECT(!strcmp(ev->runs[0].verdict_word, "intact and sealed"), "word");
	EXPECT(!strcmp(ev->runs[0].run_id, "run-a") && !strcmp(ev->runs[0].task, "T-7") &&
		       !strcmp(ev->runs[0].mode, "report") && !strcmp(ev->runs[1].mode, "enforce"),
	       "run_start fields");
	EXPECT(ev->runs[0].n_argv == 2 && !strcmp(ev->runs[0].argv[1], "all"), "argv");
	EXPECT(ev->runs[0].has_run_end && ev->runs[0].duration_ms == 900, "run_end");
	/* the redirect to the resolver and the socket-kind denial are not connections */
	EXPECT(ev->runs[0].connections == 4, "run a: 4 connections, got %" PRIu64,
	       ev->runs[0].connections);
	EXPECT(ev->runs[0].allowed == 1 && ev->runs[0].would_deny == 2 &&
		       ev->runs[0].blackholed == 1 && ev->runs[0].denied == 0,
	       "run a: 1 allowed, 2 would-deny, 1 blackholed; got %" PRIu64 " %" PRIu64 " %" PRIu64
	       " %" PRIu64,
	       ev->runs[0].allowed, ev->runs[0].would_deny, ev->runs[0].blackholed,
	       ev->runs[0].denied);
	EXPECT(!evidence_find(ev, EV_ADDR, "10.255.255.53"), "no endpoint for the DNS redirect");

	e = evidence_find(ev, EV_HOST, "api.example");
	EXPECT(e, "api.example is a host (lower-cased from the dns line too)");
	EXPECT(e->n_uses == 2 && e->needed == 2 && e->connections == 2,
	       "api.example: 2 runs, 2 "
	       "needed; got %zu %" PRIu64,
	       e->n_uses, e->needed);
	EXPECT(e->flows == 2 && e->req_bytes == 400 && e->resp_bytes == 5010 && e->max_req == 300 &&
		       e->max_resp == 5000,
	       "api.example bytes: got flows %" PRIu64 " req %" PRIu64 " resp %" PRIu64
	       " max %" PRIu64 "/%" PRIu64,
	       e->flows, e->req_bytes, e->resp_bytes, e->max_req, e->max_resp);
	EXPECT(e->uses[0].req_bytes == 100 && e->uses[1].req_bytes == 300, "per-run sums");
	EXPECT(e->n_cnames == 2 && !strcmp(e->cnames[0], "edge.cdn.example") &&
		       !strcmp(e->cnames[1], "e2.cdn.example"),
	       "CNAME chain under the asked name");
	EXPECT(e->n_dsts == 2 && e->n_answers == 1, "addresses: 2 reached, 1 answered");
	EXPECT(e->cuts == 1 && e->dns_queries == 1, "a cut and a query");
	EXPECT(e->first_ts == 1796000000000000 + 3 * 100000,
	       "first seen at the dns line, got %" PRId64, e->first_ts);
	p = port_of(e, 443, "tcp");
	EXPECT(p && p->allowed == 2 && p->max_resp == 5000, "api.example 443/tcp");

	e = evidence_find(ev, EV_HOST, "pkgs.example");
	EXPECT(e && e->would_deny == 1 && e->denied == 1 && e->needed == 1,
	       "pkgs.example: a would-deny (needed) and an enforced denial (not)");
	EXPECT(e->n_uses == 2 && e->uses[0].needed == 1 && e->uses[1].needed == 0,
	       "pkgs.example needed in run a only");

	e = evidence_find(ev, EV_ADDR, "169.254.169.254");
	EXPECT(e && e->blackholed == 1 && e->needed == 0, "the blackholed address, not needed");
	e = evidence_find(ev, EV_ADDR, "203.0.113.7");
	EXPECT(e && port_of(e, 9999, "udp") && e->needed == 1, "an address without a name, udp");

	EXPECT(ev->n_denials == 5,
	       "denials: 2 would-deny, 1 blackhole, 1 surface, 1 enforced; "
	       "got %zu",
	       ev->n_denials);
	EXPECT(ev->denials[3].kind == EV_DENY_SURFACE &&
		       !strcmp(ev->denials[3].what, "packet socket"),
	       "the surface denial keeps its what");
	EXPECT(ev->n_cuts == 1 && !strcmp(ev->cuts[0].cap, "max_response_bytes") &&
		       ev->cuts[0].limit == 4000,
	       "the cut");
	EXPECT(ev->n_alerts == 1 && !strcmp(ev->alerts[0].what, "pkgs.example\x01"), "the alert");
	EXPECT(ev->n_dns == 1 && ev->dns[0].n_cname == 2, "the dns line");
	EXPECT(ev->n_conns == 6 && ev->n_flows == 2, "6 connections, 2 flows in the lists");
	/* sorted: hosts then addresses; conns point at the right endpoint after the sort */
	EXPECT(ev->endpoints[0].kind == EV_HOST && !strcmp(ev->endpoints[0].name, "api.example"),
	       "sorted");
	for (size_t i = 0; i < ev->n_conns; i++) {
		const struct ev_conn *k = &ev->conns[i];
		const char *name = k->host ? k->host : k->dst;

		EXPECT(!strcmp(ev->endpoints[k->endpoint].name, name),
		       "conn %zu points at %s, not %s", i, ev->endpoints[k->endpoint].name, name);
	}
	evidence_free(ev);
	return true;
}

static bool check_refusals(char *why)
{
	struct evidence *ev = NULL;
	char err[1024], *t[] = {g.tampered}, *o[] = {g.log_a}, *em[] = {g.empty};
	const struct ev_run *r;
	int e;

	/* stderr carries the refusals: keep TAP clean */
	fflush(stderr);
	EXPECT(evidence_load("test", t, 1, NULL, false, &ev) == -EBADMSG, "tampered: refused");
	EXPECT(!evidence_load("test", t, 1, NULL, true, &ev), "tampered: taken with unverified");
	r = &ev->runs[0];
	EXPECT(r->status == VERIFY_INVALID && !r->verified && !strcmp(r->verdict_word, "tampered"),
	       "tampered status");
	EXPECT(!strncmp(r->verdict, "INVALID: line 6 (seq 5)", 23),
	       "the verdict names line 6, got %s", r->verdict);
	/* only the lines before the bad one are in the model */
	EXPECT(r->connections == 1, "lines before the bad one only: got %" PRIu64, r->connections);
	evidence_free(ev);
	ev = NULL;

	EXPECT(!evidence_new(&ev), "new");
	e = evidence_add_log(ev, g.log_a, g.other_vkey, err, sizeof(err));
	EXPECT(!e && ev->runs[0].status == VERIFY_INVALID, "another host's key: invalid");
	EXPECT(strstr(ev->runs[0].verdict, "not signed by the host key"), "says so: %s",
	       ev->runs[0].verdict);
	e = evidence_add_log(ev, "/nonexistent/log", g.host_vkey, err, sizeof(err));
	EXPECT(e == -EIO && strstr(err, "/nonexistent/log") && ev->n_runs == 1,
	       "a missing file is an error naming it: %d %s", e, err);
	evidence_free(ev);
	ev = NULL;
	EXPECT(evidence_load("test", em, 1, NULL, false, &ev) == -EBADMSG,
	       "an empty log is refused");
	(void)o;
	return true;
}

static bool check_telemetry(char *why)
{
	static const struct {
		const char *host, *match;
	} c[] = {
		{"telemetry.acme.example", "telemetry"},
		{"api.segment.io", "segment.io"},
		{"segment.acme.example", "segment"},
		{"x.google-analytics.com", "google-analytics.com"},
		{"statsd-collector.internal", "collector"},
		{"pkgs.acme.example", NULL},
		{"mystats.example", NULL},
		{"registry.npmjs.org", NULL},
	};

	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		const char *m = suggest_telemetry_match(c[i].host);

		EXPECT((!m && !c[i].match) || (m && c[i].match && !strcmp(m, c[i].match)),
		       "%s: expected %s, got %s", c[i].host, c[i].match ? c[i].match : "none",
		       m ? m : "none");
	}
	return true;
}

static bool check_safe(char *why)
{
	char buf[16], big[64];

	evidence_safe("a\nb\\c\xff", big, sizeof(big));
	EXPECT(!strcmp(big, "a\\x0ab\\x5cc\\xff"), "escaped, got %s", big);
	evidence_safe("0123456789abcdefghij", buf, sizeof(buf));
	EXPECT(!strcmp(buf, "0123456789ab..."), "truncated, got %s", buf);
	return true;
}

/*
 * A hostile workload's log: names it asked the run's resolver and connected to (report mode),
 * with YAML, comment and line-break syntax, then the suggestion for it. Every name is needed in
 * this one run; with --min-runs 1 none is flagged for being single, so what keeps them out of
 * the rules is the name check alone.
 */
static const char *const hostile_names[] = {
	"ok.example\n  - cidrs: [0.0.0.0/0]",
	"ok.example\"]\n  - cidrs: [\"0.0.0.0/0\"]\n#",
	"ok.example\r  - cidrs: [\"0.0.0.0/0\"]",
	"ok.example\xe2\x80\xa8  - cidrs: [\"0.0.0.0/0\"]",
	"ok.example\xc2\x85  - cidrs: [\"0.0.0.0/0\"]",
	"ok.example # x",
	"- a.example",
	"-a.example",
	"*.example",
	"&a *a !t %x {a} [b] a: b",
	"0.0.0.0/0",
	"10.0.0.1",
	".",
	"a..example",
};

static void json_esc(const char *s, char *out)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			out += sprintf(out, "\\%c", ch);
		else if (ch == '\n' || ch == '\t')
			out += sprintf(out, "\\%c", ch == '\n' ? 'n' : 't');
		else if (ch < 0x20)
			out += sprintf(out, "\\u%04x", ch);
		else
			*out++ = (char)ch;
	}
	*out = '\0';
}

static void write_hostile(void)
{
	char h[512], m[2048];
	struct tw w;
	size_t i;

	tw_start(&w, g.hostile, "run-h", g.run_h, "report");
	for (i = 0; i < ARRAY_SIZE(hostile_names); i++) {
		json_esc(hostile_names[i], h);
		snprintf(m, sizeof(m),
			 "\"hook\":\"connect4\",\"decision\":\"deny\",\"enforced\":false,\"rule\":"
			 "\"default\",\"reason\":\"default_deny\",\"family\":\"ipv4\",\"proto\":"
			 "\"tcp\",\"host\":\"%s\",\"dst\":\"198.51.100.%zu\",\"port\":443,\"pid\":"
			 "42,"
			 "\"comm\":\"%s\"",
			 h, 20 + i, h);
		tw_rec(&w, "decision", m);
	}
	tw_rec(&w, "decision",
	       CONN("deny", "false", "default", "default_deny", "\"good.example\"", "198.51.100.19",
		    "443", "tcp"));
	tw_end(&w);
}

static bool check_hostile(char *why)
{
	struct evidence *ev = NULL;
	struct policy *p = NULL;
	char *paths[] = {g.hostile}, *text = NULL, err[1024], *l;
	size_t len, i, rules = 0;
	bool ok = true;

	EXPECT(!evidence_load("test", paths, 1, NULL, false, &ev), "the hostile log loads");
	EXPECT(!suggest_text(ev, 1, false, NULL, &text, &len, err, sizeof(err)),
	       "suggest writes a policy: %s", err);
	/* every line a rule's, a comment, or the two top-level keys: nothing else */
	for (l = text; ok && *l; l = strchr(l, '\n') + 1) {
		size_t n = strcspn(l, "\n");

		if (!strncmp(l, "  - hosts: [\"good.example\"]\n", n + 1))
			rules++;
		else if (!(l[0] == '#' || n == 0 || !strncmp(l, "default: deny\n", n + 1) ||
			   !strncmp(l, "rules:\n", n + 1) || !strncmp(l, "    ", 4) ||
			   !strncmp(l, "  # ", 4)))
			ok = false;
		EXPECT(ok, "a line no rule or comment of suggest's: %.*s", (int)n, l);
		if (!l[n])
			break;
	}
	for (i = 0; i + 2 < len; i++)
		EXPECT(!(text[i] == '\xe2' && text[i + 1] == '\x80') && text[i] != '\r' &&
			       (unsigned char)text[i] != 0x85,
		       "a line break YAML or an editor might see, at %zu", i);
	EXPECT(rules == 1, "one rule (good.example), got %zu", rules);
	EXPECT(!policy_load_buffer(text, len, "s", &p, err, sizeof(err)), "parses: %s", err);
	EXPECT(p->n_rules == 1 && p->rules[0].n_hosts == 1 && !p->rules[0].n_cidrs &&
		       !strcmp(p->rules[0].hosts[0], "good.example"),
	       "the parsed policy allows good.example only, got %zu rules", p->n_rules);
	policy_free(p);
	free(text);
	evidence_free(ev);
	return true;
}

/* The same run given twice (the same file, or a copy) is one run, not two. */
static bool check_duplicate(char *why)
{
	struct evidence *ev = NULL;
	char *same[] = {g.log_a, g.log_a}, *copy[] = {g.log_a, g.copy_a}, cmd[512];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", g.log_a, g.copy_a);
	EXPECT(!system(cmd), "copy");
	fflush(stderr);
	EXPECT(evidence_load("test", same, 2, NULL, false, &ev) == -EBADMSG,
	       "the same log twice is refused");
	EXPECT(evidence_load("test", copy, 2, NULL, false, &ev) == -EBADMSG,
	       "a copy of a log given beside it is refused");
	return true;
}

/*
 * A workload chooses how many ports, addresses and names it uses: one host on 20000 ports (each
 * twice, tcp and udp), reached at 5000 addresses, and 4000 hosts under 2000 parents. The model
 * keeps each once, and suggest groups the wildcard proposals, without a search per line (these
 * took minutes at 200k lines when each line searched the host's ports and each host its peers).
 */
#define MANY_PORTS 20000
#define MANY_HOSTS 4000

static void write_many(void)
{
	char m[512];
	struct tw w;
	int i, k;

	tw_start(&w, g.many, "run-m", g.run_m, "report");
	for (k = 0; k < 2; k++)
		for (i = 0; i < MANY_PORTS; i++) {
			if (i % 90 == 89)
				tw_checkpoint(&w, "time");
			snprintf(m, sizeof(m),
				 "\"hook\":\"connect4\",\"decision\":\"allow\",\"enforced\":true,"
				 "\"rule\":\"r\",\"reason\":\"rule\",\"family\":\"ipv4\",\"proto\":"
				 "\"%s\",\"host\":\"a.example\",\"dst\":\"10.0.%d.%d\",\"port\":%d,"
				 "\"pid\":1,\"comm\":\"x\"",
				 i % 2 ? "udp" : "tcp", i % 5000 / 250, i % 250, 1 + i);
			tw_rec(&w, "decision", m);
		}
	for (i = 0; i < MANY_HOSTS; i++) {
		if (i % 90 == 89)
			tw_checkpoint(&w, "time");
		snprintf(m, sizeof(m),
			 "\"hook\":\"connect4\",\"decision\":\"allow\",\"enforced\":true,\"rule\":"
			 "\"r\",\"reason\":\"rule\",\"family\":\"ipv4\",\"proto\":\"tcp\",\"host\":"
			 "\"h%d.p%d.example\",\"dst\":\"10.1.%d.%d\",\"port\":443,\"pid\":1,"
			 "\"comm\":\"x\"",
			 i, i % (MANY_HOSTS / 2), i / 250, i % 250);
		tw_rec(&w, "decision", m);
	}
	tw_end(&w);
}

static bool check_many(char *why)
{
	struct evidence *ev = NULL;
	const struct ev_endpoint *e;
	char *paths[] = {g.many}, *text = NULL, err[1024], *l;
	size_t len, i, props = 0;

	write_many();
	EXPECT(!evidence_load("test", paths, 1, NULL, false, &ev), "the log loads");
	e = evidence_find(ev, EV_HOST, "a.example");
	EXPECT(e && e->n_ports == MANY_PORTS, "a.example: %d ports, got %zu", MANY_PORTS,
	       e ? e->n_ports : 0);
	for (i = 0; i < e->n_ports; i++)
		EXPECT(e->ports[i].connections == 2 && e->ports[i].port == i + 1 &&
			       !strcmp(e->ports[i].proto, i % 2 ? "udp" : "tcp"),
		       "port %zu: once, twice used, sorted", i + 1);
	EXPECT(e->n_dsts == 5000, "5000 addresses, got %zu", e->n_dsts);
	EXPECT(ev->n_endpoints == MANY_HOSTS + 1, "%d hosts, got %zu", MANY_HOSTS + 1,
	       ev->n_endpoints);
	EXPECT(!suggest_text(ev, 1, false, NULL, &text, &len, err, sizeof(err)), "suggest: %s",
	       err);
	for (l = strstr(text, "\n#   \"*."); l; l = strstr(l + 1, "\n#   \"*."))
		props++;
	EXPECT(props == MANY_HOSTS / 2, "a proposal per parent: got %zu", props);
	EXPECT(strstr(text, "#   \"*.p7.example\" would cover: h2007.p7.example h7.p7.example\n"),
	       "a proposal lists both hosts");
	free(text);
	evidence_free(ev);
	return true;
}

/*
 * A max_total_* cap counts an address under one budget whatever form it was dialled in
 * (bpf/addr.bpf.h, host_key_of): replay must too, or a run that went over the cap in two forms
 * replays as under it. Replay's exit status says whether a flow would be cut.
 */
static bool check_replay_total(char *why)
{
	static const char pol[] = "default: deny\n"
				  "rules:\n"
				  "  - cidrs: [\"10.0.0.0/8\"]\n"
				  "    max_total_request_bytes: 150\n";
	char path[160], *argv[] = {"replay", path, g.v6, NULL};
	struct tw w;
	FILE *f;
	int out, rc;

	snprintf(path, sizeof(path), "%s/caps.yaml", g.dir);
	f = fopen(path, "w");
	EXPECT(f && fputs(pol, f) >= 0 && !fclose(f), "policy written");
	tw_start(&w, g.v6, "run-v", g.run_v, "enforce");
	tw_rec(&w, "flow", FLOW("null", "10.0.0.1", "443", "100", "1"));
	tw_rec(&w, "flow", FLOW("null", "::ffff:10.0.0.1", "443", "100", "1"));
	tw_end(&w);
	fflush(stdout);
	out = dup(1);
	EXPECT(out >= 0 && freopen("/dev/null", "w", stdout), "stdout");
	rc = policy_replay_main(3, argv);
	fflush(stdout);
	dup2(out, 1);
	close(out);
	EXPECT(rc == 1, "200 bytes to one host past a cap of 150: cut (exit 1), got %d", rc);
	return true;
}

/*
 * A report-mode denial's flow line (decision deny, enforced false): its bytes are the host's,
 * counted apart as would-deny, and suggest says so.
 */
static bool check_would_deny_flow(char *why)
{
	struct evidence *ev = NULL;
	const struct ev_endpoint *e;
	char *paths[] = {g.wd}, *text = NULL, err[1024];
	struct tw w;
	size_t len;

	tw_start(&w, g.wd, "run-w", g.run_w, "report");
	tw_rec(&w, "decision",
	       CONN("deny", "false", "default", "default_deny", "\"up.example\"", "198.51.100.30",
		    "443", "tcp"));
	tw_rec(&w, "flow",
	       "\"host\":\"up.example\",\"dst\":\"198.51.100.30\",\"port\":443,\"proto\":\"tcp\","
	       "\"decision\":\"deny\",\"enforced\":false,\"reason\":\"default_deny\",\"rule\":"
	       "\"default\",\"req_bytes\":7000,\"resp_bytes\":90,\"duration_ms\":3");
	tw_rec(&w, "flow", FLOW("\"up.example\"", "198.51.100.30", "443", "5", "6"));
	tw_end(&w);
	EXPECT(!evidence_load("test", paths, 1, NULL, false, &ev), "the log loads");
	EXPECT(ev->n_flows == 2 && ev->flows[0].would_deny && !ev->flows[1].would_deny,
	       "the first flow is a would-be denial's, the second not");
	EXPECT(ev->runs[0].would_deny_flows == 1 && ev->runs[0].flows == 2, "run counts");
	e = evidence_find(ev, EV_HOST, "up.example");
	EXPECT(e && e->flows == 2 && e->req_bytes == 7005 && e->would_deny_flows == 1 &&
		       e->would_deny_req_bytes == 7000 && e->would_deny_resp_bytes == 90 &&
		       e->max_req == 7000,
	       "host counts");
	EXPECT(!suggest_text(ev, 1, false, NULL, &text, &len, err, sizeof(err)), "suggest: %s",
	       err);
	EXPECT(strstr(text, "of which denied in report mode only: 7_000 sent, 90 received in 1 "
			    "flow\n") &&
		       strstr(text, "# max_request_bytes: 72_704  # largest observed 7_000"),
	       "suggest says the would-deny bytes and proposes a cap from them:\n%s", text);
	free(text);
	evidence_free(ev);
	return true;
}

/*
 * A rule listing all 65,535 ports one by one, and one of 30,000 ranges, replayed over 60,000
 * connections and flows: replay judges through the policy's index, so it finishes in the
 * test's normal run (each connection walked the lists: 4e9 comparisons); every one allowed.
 */
static bool check_replay_ports(char *why)
{
	char path[160], m[512], *argv[] = {"replay", path, g.ports, NULL};
	unsigned int i;
	struct tw w;
	FILE *f;
	int out, rc;

	snprintf(path, sizeof(path), "%s/ports.yaml", g.dir);
	f = fopen(path, "w");
	EXPECT(f, "policy");
	fprintf(f, "default: deny\nrules:\n  - hosts: [\"a.example\"]\n    ports: [");
	for (i = 1; i <= 65535; i++)
		fprintf(f, "%s%u", i > 1 ? ", " : "", i);
	fprintf(f, "]\n  - cidrs: [\"10.0.0.0/8\"]\n    ports: [");
	for (i = 0; i < 30000; i++)
		fprintf(f, "%s%u-%u", i ? ", " : "", 2 * i + 1, 2 * i + 1);
	fprintf(f, "]\n");
	EXPECT(!fclose(f), "policy written");
	tw_start(&w, g.ports, "run-p", g.run_p, "report");
	for (i = 0; i < 30000; i++) {
		if (i % 90 == 89)
			tw_checkpoint(&w, "time");
		snprintf(m, sizeof(m),
			 "\"hook\":\"connect4\",\"decision\":\"allow\",\"enforced\":true,\"rule\":"
			 "\"r\",\"reason\":\"rule\",\"family\":\"ipv4\",\"proto\":\"tcp\",\"host\":%s,"
			 "\"dst\":\"10.0.%u.%u\",\"port\":%u,\"pid\":1,\"comm\":\"x\"",
			 i % 2 ? "null" : "\"a.example\"", i / 250 % 250, i % 250,
			 i % 2 ? 2 * (i % 30000) + 1 : 65535 - i);
		tw_rec(&w, "decision", m);
	}
	tw_end(&w);
	fflush(stdout);
	out = dup(1);
	EXPECT(out >= 0 && freopen("/dev/null", "w", stdout), "stdout");
	rc = policy_replay_main(3, argv);
	fflush(stdout);
	dup2(out, 1);
	close(out);
	EXPECT(rc == 0, "every connection allowed (exit 0), got %d", rc);
	return true;
}

/*
 * Hostile files: a forged flow line claiming huge bytes (inserted, chain not rebuilt), a log cut
 * inside a line, a line of 100,000 bytes, a NUL byte: each refused by name (evidence_load
 * -EBADMSG), and with --unverified the forged bytes never reach the model (only the lines before
 * the bad one do). Two runs that chose the same run id are two runs (their keys differ), each
 * kept apart.
 */
static bool check_hostile_files(char *why)
{
	static const char forged[] =
		"{\"seq\":5,\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\","
		"\"ts\":1,\"type\":\"flow\",\"host\":\"api.example\",\"dst\":\"198.51.100.12\","
		"\"port\":443,\"proto\":\"tcp\",\"decision\":\"deny\",\"enforced\":false,"
		"\"rule\":\"default\",\"req_bytes\":999999999,\"resp_bytes\":1,\"kseq\":99}\n";
	const char *kinds[] = {"forged", "cut", "huge", "nul"};
	struct evidence *ev = NULL;
	char *paths[] = {g.bad}, *two[] = {g.log_a, g.coll}, *text = NULL, err[1024];
	size_t k, i, len;
	struct tw w;

	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		FILE *in = fopen(g.log_a, "r"), *out = fopen(g.bad, "w");
		char line[8192];
		int n = 0;

		EXPECT(in && out, "files");
		while (fgets(line, sizeof(line), in)) {
			if (++n == 5) {
				if (k == 0)
					fputs(forged, out);
				if (k == 1) {
					fwrite(line, 1, strlen(line) / 2, out);
					break;
				}
				if (k == 2) {
					for (i = 0; i < 100000; i++)
						fputc('x', out);
					fputc('\n', out);
				}
				if (k == 3) {
					line[10] = '\0';
					fwrite(line, 1, strlen(line + 11) + 11, out);
					continue;
				}
			}
			fputs(line, out);
		}
		fclose(in);
		fclose(out);
		fflush(stderr);
		EXPECT(evidence_load("test", paths, 1, NULL, false, &ev) == -EBADMSG,
		       "%s: refused", kinds[k]);
		EXPECT(!evidence_load("test", paths, 1, NULL, true, &ev), "%s: --unverified loads",
		       kinds[k]);
		EXPECT(!ev->runs[0].verified, "%s: not verified", kinds[k]);
		for (i = 0; i < ev->n_flows; i++)
			EXPECT(ev->flows[i].req_bytes != 999999999,
			       "%s: the forged flow reached the model", kinds[k]);
		EXPECT(ev->lines <= 5, "%s: only the lines before the bad one: %zu", kinds[k],
		       ev->lines);
		evidence_free(ev);
		ev = NULL;
	}

	/* another run that chose run-a's id: two runs, not one given twice */
	tw_start(&w, g.coll, "run-a", g.run_c, "report");
	tw_rec(&w, "decision",
	       CONN("allow", "true", "r", "rule", "\"api.example\"", "198.51.100.12", "443",
		    "tcp"));
	tw_end(&w);
	EXPECT(!evidence_load("test", two, 2, NULL, false, &ev), "two runs named alike load");
	EXPECT(ev->n_runs == 2 && strcmp(ev->runs[0].run_key, ev->runs[1].run_key) &&
		       !strcmp(ev->runs[0].path, g.log_a) && !strcmp(ev->runs[1].path, g.coll),
	       "two runs, told apart by key and path");
	EXPECT(evidence_find(ev, EV_HOST, "api.example")->n_uses == 2,
	       "api.example used by two runs");
	/* and named apart wherever a reader sees them (suggest's comments, replay, the report) */
	EXPECT(!strcmp(ev_run_label(&ev->runs[0]), "run-a (log 1)") &&
		       !strcmp(ev_run_label(&ev->runs[1]), "run-a (log 2)"),
	       "labels: %s, %s", ev_run_label(&ev->runs[0]), ev_run_label(&ev->runs[1]));
	EXPECT(!suggest_text(ev, 1, false, NULL, &text, &len, err, sizeof(err)), "suggest: %s",
	       err);
	EXPECT(strstr(text, "in 2 runs (run-a (log 1), run-a (log 2))"),
	       "suggest names both runs apart:\n%s", text);
	free(text);
	evidence_free(ev);
	EXPECT(!evidence_load("test", two, 1, NULL, false, &ev) &&
		       !strcmp(ev_run_label(&ev->runs[0]), "run-a"),
	       "a run alone is named by its id");
	evidence_free(ev);
	return true;
}

/*
 * The report page from a signed log whose every string is an attack on HTML (an element, an
 * attribute breakout both ways, a style breakout, a right-to-left override, a URL scheme): the
 * page holds no element or attribute the log chose and no raw override, only escaped text.
 */
static bool check_report_injection(char *why)
{
	static const char attack[] = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>"
				     "'onmouseover='x</style><svg onload=x>\xe2\x80\xae"
				     "javascript:alert(3)";
	char a[256], m[4096], out[160], *argv[] = {"report", g.inj, "-o", out, NULL};
	static const char *const tags[] = {
		"doctype", "html", "head", "meta", "title", "style", "body", "h1", "h2",   "h3",
		"p",	   "div",  "table", "tr",  "th",    "td",    "b",    "i",  "code", "pre",
		"br",	   "ul",   "li",    "svg", "rect",  "text",  "line", "span", "a", "details",
		"summary", "small", "em", "strong", "nav", "section", "header", "footer", "ol",
		"g", "title", "caption", "thead", "tbody", "sup", "sub", "hr", "kbd", "tt", "q",
	};
	char *page = NULL, *low, *tag;
	size_t len = 0, i;
	struct tw w;
	FILE *f;
	int rc, o;

	json_esc(attack, a);
	snprintf(out, sizeof(out), "%s/inj.html", g.dir);
	tw_start(&w, g.inj, "run-i", g.run_i, "report");
	snprintf(m, sizeof(m),
		 "\"run_id\":\"%s\",\"task\":\"%s\",\"mode\":\"report\",\"default\":\"deny\","
		 "\"policy\":\"%s\",\"policy_sha256\":\"%064d\",\"argv\":[\"%s\"]",
		 a, a, a, 7, a);
	tw_line(&w, "run_start", "%s", m);
	snprintf(m, sizeof(m),
		 "\"hook\":\"connect4\",\"decision\":\"deny\",\"enforced\":false,\"rule\":\"%s\","
		 "\"reason\":\"%s\",\"family\":\"ipv4\",\"proto\":\"%s\",\"host\":\"%s\","
		 "\"dst\":\"%s\",\"port\":443,\"pid\":42,\"comm\":\"%s\"",
		 a, a, a, a, a, a);
	tw_rec(&w, "decision", m);
	snprintf(m, sizeof(m),
		 "\"host\":\"%s\",\"sni\":\"%s\",\"dst\":\"%s\",\"port\":443,\"proto\":\"tcp\","
		 "\"decision\":\"deny\",\"enforced\":false,\"reason\":\"%s\",\"rule\":\"%s\","
		 "\"req_bytes\":5,\"resp_bytes\":6,\"duration_ms\":3,\"comm\":\"%s\"",
		 a, a, a, a, a, a);
	tw_rec(&w, "flow", m);
	snprintf(m, sizeof(m),
		 "\"host\":\"%s\",\"qtype\":\"%s\",\"decision\":\"deny\",\"enforced\":false,"
		 "\"rule\":\"%s\",\"rcode\":\"%s\",\"comm\":\"%s\",\"answers\":[\"%s\"],"
		 "\"cname\":[\"%s\"],\"why\":\"%s\"",
		 a, a, a, a, a, a, a, a);
	tw_line(&w, "dns", "%s", m);
	snprintf(m, sizeof(m), "\"condition\":\"%s\",\"what\":\"%s\"", a, a);
	tw_line(&w, "alert", "%s", m);
	tw_end(&w);
	fflush(stdout);
	fflush(stderr);
	o = dup(1);
	EXPECT(o >= 0 && freopen("/dev/null", "w", stdout), "stdout");
	rc = report_main(4, argv);
	fflush(stdout);
	dup2(o, 1);
	close(o);
	EXPECT(rc == 0, "the page is written, got %d", rc);
	f = fopen(out, "r");
	EXPECT(f && getdelim(&page, &len, '\0', f) > 0, "read the page");
	fclose(f);
	low = strdup(page);
	EXPECT(low, "memory");
	for (i = 0; low[i]; i++)
		low[i] = (char)tolower((unsigned char)low[i]);
	EXPECT(strstr(page, "&lt;script&gt;alert(1)&lt;/script&gt;"), "the attack shown as text");
	EXPECT(!strstr(page, "\xe2\x80\xae"), "a raw right-to-left override on the page");
	/* every tag is one the page's writer uses, and none carries what the attack brought */
	for (tag = strchr(low, '<'); tag; tag = strchr(tag + 1, '<')) {
		size_t n = strcspn(tag, ">"), k;
		char name[16] = "";

		if (sscanf(tag, "<%*[/!]%15[a-z0-9]", name) != 1 && sscanf(tag, "<%15[a-z0-9]", name) != 1)
			name[0] = '\0';
		for (k = 0; k < ARRAY_SIZE(tags) && strcmp(tags[k], name); k++)
			;
		if (k == ARRAY_SIZE(tags) || memmem(tag, n, "onerror", 7) ||
		    memmem(tag, n, "onload", 6) || memmem(tag, n, "onmouseover", 11) ||
		    memmem(tag, n, "javascript", 10) || memmem(tag, n, "alert(", 6)) {
			snprintf(why, WHY_LEN, "a tag the log chose: %.*s", (int)(n + 1), tag);
			free(low);
			free(page);
			return false;
		}
	}
	free(low);
	free(page);
	return true;
}

int main(void)
{
	char why[WHY_LEN];
	char cmd[128];

	printf("TAP version 13\n1..12\n");
	snprintf(g.dir, sizeof(g.dir), "/tmp/sl-evidence-XXXXXX");
	if (!mkdtemp(g.dir) || note_signer_generate("test-host", &g.host) ||
	    note_signer_generate("other-host", &g.other) ||
	    note_signer_generate("sluice/run-a", &g.run_a) ||
	    note_signer_generate("sluice/run-b", &g.run_b) ||
	    note_signer_generate("sluice/run-h", &g.run_h) ||
	    note_signer_generate("sluice/run-m", &g.run_m) ||
	    note_signer_generate("sluice/run-v", &g.run_v) ||
	    note_signer_generate("sluice/run-w", &g.run_w) ||
	    note_signer_generate("sluice/run-p", &g.run_p) ||
	    note_signer_generate("sluice/run-a", &g.run_c) ||
	    note_signer_generate("sluice/run-i", &g.run_i))
		return 2;
	note_signer_vkey(g.host, g.host_vkey, sizeof(g.host_vkey));
	note_signer_vkey(g.other, g.other_vkey, sizeof(g.other_vkey));
	snprintf(g.log_a, sizeof(g.log_a), "%s/a.log", g.dir);
	snprintf(g.log_b, sizeof(g.log_b), "%s/b.log", g.dir);
	snprintf(g.tampered, sizeof(g.tampered), "%s/t.log", g.dir);
	snprintf(g.empty, sizeof(g.empty), "%s/e.log", g.dir);
	snprintf(g.hostile, sizeof(g.hostile), "%s/h.log", g.dir);
	snprintf(g.copy_a, sizeof(g.copy_a), "%s/a-copy.log", g.dir);
	snprintf(g.many, sizeof(g.many), "%s/m.log", g.dir);
	snprintf(g.v6, sizeof(g.v6), "%s/v6.log", g.dir);
	snprintf(g.wd, sizeof(g.wd), "%s/wd.log", g.dir);
	snprintf(g.ports, sizeof(g.ports), "%s/ports.log", g.dir);
	snprintf(g.coll, sizeof(g.coll), "%s/coll.log", g.dir);
	snprintf(g.bad, sizeof(g.bad), "%s/bad.log", g.dir);
	snprintf(g.inj, sizeof(g.inj), "%s/inj.log", g.dir);
	write_logs();
	write_hostile();
	/* evidence_load reads the host key the way the commands do: $SLUICE_PUB */
	{
		char pub[128];
		FILE *f;

		snprintf(pub, sizeof(pub), "%s/host.pub", g.dir);
		f = fopen(pub, "w");
		if (!f)
			return 2;
		fprintf(f, "%s\n", g.host_vkey);
		fclose(f);
		setenv("SLUICE_PUB", pub, 1);
	}
	report(check_model(why), "evidence: two signed logs read into the model", why);
	report(check_refusals(why), "evidence: tampered, wrong key, empty and missing logs", why);
	report(check_telemetry(why), "suggest: the telemetry judgement by name", why);
	report(check_safe(why), "evidence_safe escapes and truncates", why);
	report(check_hostile(why), "suggest: hostile names stay in comments, the rules are exact",
	       why);
	report(check_duplicate(why), "evidence: the same run given twice is refused", why);
	report(check_many(why), "evidence, suggest: many ports, addresses and hosts", why);
	report(check_replay_total(why), "replay: one budget per address in any form", why);
	report(check_would_deny_flow(why),
	       "evidence, suggest: a report-mode denial's flow and its bytes", why);
	report(check_replay_ports(why),
	       "replay: 65,535 ports one by one and 30,000 ranges over 30,000 connections", why);
	report(check_hostile_files(why),
	       "evidence: forged, cut, huge and NUL lines refused; runs named alike kept apart",
	       why);
	report(check_report_injection(why),
	       "report: every string of a signed log an HTML attack: text only on the page", why);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g.dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", g.dir);
	note_signer_free(g.host);
	note_signer_free(g.other);
	note_signer_free(g.run_a);
	note_signer_free(g.run_b);
	note_signer_free(g.run_h);
	note_signer_free(g.run_m);
	note_signer_free(g.run_v);
	note_signer_free(g.run_w);
	note_signer_free(g.run_p);
	note_signer_free(g.run_c);
	note_signer_free(g.run_i);
	return tap_status();
}
