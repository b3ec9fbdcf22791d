// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice report: the logs are read into the evidence model (evidence.h: verified with
 * verify_log, the same verdict sluice verify prints), and the model is written as one HTML page
 * that fetches nothing and runs nothing (report_html.h). The page is written to a temporary file
 * beside the output and renamed over it only once complete, so a failure never leaves a partial
 * page where a reader would open it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../policy/policy.h"
#include "evidence.h"
#include "note.h"
#include "policy_tools.h"
#include "report.h"
#include "report_html.h"
#include "tlog.h"
#include "util.h"

#define T(f, s) report_html_text(f, s)

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice report LOG... [--key PUB] [--unverified] -o FILE\n"
		"\n"
		"Write one self-contained HTML page (no script, nothing fetched: it opens from a\n"
		"mail attachment) of what the logs show: a header with each run's id, task,\n"
		"policy and its SHA-256, mode and verification verdict; the denials; bytes per\n"
		"host (a bar chart); a timeline of each run's connections; DNS answers; byte caps\n"
		"hit; alerts; the policy sluice policy suggest makes from the logs and its diff\n"
		"against the policy each run ran under. Several logs make one page with a row\n"
		"per run.\n"
		"\n"
		"  -o, --output FILE   the page (written beside it, then renamed into place)\n"
		"  -k, --key PUB       the host's verifier key (default: $SLUICE_PUB, else\n"
		"                      /etc/sluice/host.key.pub)\n"
		"  -u, --unverified    label a log that does not verify UNVERIFIED instead of\n"
		"                      TAMPERED (its lines before the first bad one are shown),\n"
		"                      and suggest a policy from it anyway\n"
		"  -h, --help          this text\n"
		"\n"
		"exit status: 0 written, every log intact; 1 written, a log does not verify;\n"
		"2 usage; 4 nothing written (a log or the key unreadable, the output "
		"unwritable).\n");
}

/* A string of the log for stderr: printable ASCII as is, everything else as \xNN. */
static void term_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '\\')
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
}

/* An optional string of the log: an em dash when absent. */
static void opt(FILE *f, const char *s)
{
	if (s && s[0])
		T(f, s);
	else
		fputs("\xe2\x80\x94", f);
}

static void td(FILE *f, const char *s)
{
	fputs("<td>", f);
	opt(f, s);
	fputs("</td>", f);
}

static void td_u(FILE *f, uint64_t v)
{
	fprintf(f, "<td class=\"n\">%" PRIu64 "</td>", v);
}

static void td_time(FILE *f, int64_t ts)
{
	char buf[64];

	report_time(ts, buf, sizeof(buf));
	fprintf(f, "<td class=\"mono\">%s</td>", buf);
}

/* The run's id for a table's run column, or its log's path when it has none. */
static const char *run_name(const struct evidence *ev, size_t run)
{
	const struct ev_run *r = &ev->runs[run];

	/* "ID (log N)" when two of the logs chose one id: their rows must not look alike */
	return ev_run_label(r);
}

static void td_run(FILE *f, const struct evidence *ev, size_t run)
{
	fputs("<td class=\"mono\">", f);
	T(f, run_name(ev, run));
	fputs("</td>", f);
}

static int verdict(const struct ev_run *r, bool unverified)
{
	/* --unverified relabels only what does not verify: a verified log stays VERIFIED */
	return report_verdict_of(r->vr, unverified && !r->verified && r->status != VERIFY_UNSEALED);
}

/*
 * The banner: the worst verdict of all the logs, in words that cannot be missed, with each log
 * that does not verify named with where and why.
 */
static void banner(FILE *f, const struct evidence *ev, bool unverified)
{
	static const int order[] = {REPORT_TAMPERED, REPORT_FORMAT, REPORT_UNVERIFIED,
				    REPORT_ERROR,    REPORT_UNSEALED, REPORT_LOSS,
				    REPORT_VERIFIED};
	size_t i, j, n;
	int worst = REPORT_VERIFIED;

	for (j = 0; j < sizeof(order) / sizeof(order[0]); j++) {
		for (i = 0; i < ev->n_runs; i++)
			if (verdict(&ev->runs[i], unverified) == order[j])
				break;
		if (i < ev->n_runs) {
			worst = order[j];
			break;
		}
	}
	for (n = 0, i = 0; i < ev->n_runs; i++)
		n += verdict(&ev->runs[i], unverified) == worst;
	fprintf(f,
		"<div class=\"verdict %s\" id=\"verdict\"><b>%s</b>: ", report_verdict_class(worst),
		report_verdict_word(worst));
	switch (worst) {
	case REPORT_VERIFIED:
		fprintf(f, "%s intact and sealed, no loss.",
			ev->n_runs == 1 ? "the log is" : "every log is");
		break;
	case REPORT_LOSS:
		fprintf(f,
			"%zu of %zu logs intact and sealed with kernel records lost, every one "
			"declared.",
			n, ev->n_runs);
		break;
	case REPORT_UNSEALED:
		fprintf(f,
			"%zu of %zu logs intact, but the end is not signed (the run was cut "
			"short or the log truncated): what follows the last checkpoint may have "
			"been changed.",
			n, ev->n_runs);
		break;
	case REPORT_UNVERIFIED:
		fprintf(f,
			"%zu of %zu logs do not verify and are shown unverified (--unverified): "
			"nothing below about them can be trusted.",
			n, ev->n_runs);
		break;
	default:
		fprintf(f,
			"%zu of %zu logs do not verify: the log was altered, or is not the "
			"log of a run this host key certified. Only the lines before the first "
			"bad one are shown, and even those prove nothing.",
			n, ev->n_runs);
		break;
	}
	fputs("<ul>", f);
	for (i = 0; i < ev->n_runs; i++) {
		const struct ev_run *r = &ev->runs[i];

		if (r->verified && !r->vr->declared_loss && r->status == VERIFY_OK)
			continue;
		fputs("<li><code>", f);
		T(f, r->path);
		fputs("</code>: ", f);
		T(f, r->verdict);
		fputs("</li>", f);
	}
	fputs("</ul></div>\n", f);
}

static void runs_table(FILE *f, const struct evidence *ev, bool unverified)
{
	size_t i, j;

	fputs("<h2 id=\"runs\">Runs</h2>\n<table><tr><th>run id</th><th>task</th><th>policy</th>"
	      "<th>policy SHA-256</th><th>mode</th><th>started</th><th>duration</th><th>exit</th>"
	      "<th>verification</th><th>connections</th><th>denied</th><th>would deny</th>"
	      "<th>flows</th></tr>\n",
	      f);
	for (i = 0; i < ev->n_runs; i++) {
		const struct ev_run *r = &ev->runs[i];
		int v = verdict(r, unverified);

		fprintf(f, "<tr class=\"%s\">", report_verdict_class(v));
		fputs("<td class=\"mono\">", f);
		opt(f, r->run_id ? run_name(ev, i) : NULL);
		fputs("</td>", f);
		td(f, r->task);
		fputs("<td class=\"mono\">", f);
		opt(f, r->policy);
		fputs("</td><td class=\"mono\">", f);
		opt(f, r->policy_sha256);
		if (r->policy_changes) {
			fprintf(f, "<br>then %zu change%s, last to ", r->policy_changes,
				r->policy_changes == 1 ? "" : "s");
			opt(f, r->last_policy_sha256);
		}
		fputs("</td>", f);
		fputs("<td><b>", f);
		opt(f, r->mode);
		fputs("</b>", f);
		if (r->last_mode && (!r->mode || strcmp(r->last_mode, r->mode))) {
			fputs(", then ", f);
			T(f, r->last_mode);
		}
		fputs("</td>", f);
		td_time(f, r->start_ts);
		if (r->has_run_end)
			fprintf(f, "<td class=\"n\">%" PRIu64 ".%03" PRIu64 " s</td>",
				r->duration_ms / 1000, r->duration_ms % 1000);
		else
			fputs("<td>no run_end</td>", f);
		if (r->has_exit_status)
			fprintf(f, "<td class=\"n\">%" PRId64 "</td>", r->exit_status);
		else
			td(f, r->end_why);
		fprintf(f, "<td class=\"v\">%s<br>", report_verdict_word(v));
		T(f, r->verdict);
		fputs("</td>", f);
		td_u(f, r->connections);
		td_u(f, r->denied);
		td_u(f, r->would_deny);
		td_u(f, r->flows);
		fputs("</tr>\n<tr><td colspan=\"13\" class=\"mono\">log: ", f);
		T(f, r->path);
		if (r->n_argv) {
			fputs("<br>command:", f);
			for (j = 0; j < r->n_argv; j++) {
				fputc(' ', f);
				T(f, r->argv[j]);
			}
		}
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/*
 * The policy file a run named, when it still holds the bytes the run hashed: the path comes from
 * the log, so nothing of a file whose SHA-256 differs (or that is not a regular file) is parsed
 * or shown. 0 and *out; else -errno and *why says what, in words that quote nothing of the file.
 */
static int policy_in_force(const char *path, const char *sha_hex, struct policy **out,
			   const char **why)
{
	uint8_t sha[TLOG_HASH_SIZE];
	char hex[2 * TLOG_HASH_SIZE + 1], err[512], *buf = NULL;
	struct stat st;
	size_t len = 0, i;
	int fd, e;

	*out = NULL;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		*why = "cannot be opened here";
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		*why = "is not a regular file here";
		return -EINVAL;
	}
	e = policy_read_fd(fd, path, &buf, &len, err, sizeof(err));
	close(fd);
	if (e) {
		*why = "cannot be read here";
		return e;
	}
	tlog_sha256(buf, len, sha);
	for (i = 0; i < sizeof(sha); i++)
		snprintf(hex + 2 * i, 3, "%02x", sha[i]);
	if (strcmp(hex, sha_hex)) {
		free(buf);
		*why = "has changed since the run (its SHA-256 is not the one the log names)";
		return -ESTALE;
	}
	e = policy_load_buffer(buf, len, path, out, err, sizeof(err));
	free(buf);
	if (e)
		*why = "does not parse with this sluice";
	return e;
}

/*
 * The request-access link of a denial, as the run's stderr gave it (records.c): the policy's
 * request_access with {host} replaced by the percent-encoded destination. Shown as text, not a
 * link: the page refers to nothing outside it.
 */
static void request_access(FILE *f, const char *tmpl, const char *host)
{
	static const char unreserved[] = "-._~";
	char *buf = NULL;
	size_t len = 0;
	const char *p, *h;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return;
	for (p = tmpl; *p; p++) {
		if (strncmp(p, "{host}", 6)) {
			fputc(*p, m);
			continue;
		}
		for (h = host; *h; h++) {
			if (((*h | 0x20) >= 'a' && (*h | 0x20) <= 'z') ||
			    (*h >= '0' && *h <= '9') || strchr(unreserved, *h))
				fputc(*h, m);
			else
				fprintf(m, "%%%02X", (unsigned char)*h);
		}
		p += 5;
	}
	if (!fclose(m))
		report_html_textn(f, buf, len);
	free(buf);
}

static const char *denial_kind(enum ev_denial_kind k)
{
	switch (k) {
	case EV_DENY_CONNECT:
		return "connect";
	case EV_DENY_DNS:
		return "DNS";
	case EV_DENY_TLS:
		return "TLS";
	default:
		return "socket";
	}
}

/*
 * An address the run's resolver had answered for several names, so that the log cannot tell
 * which one a connection was for: "one of a, b (and 2 more)".
 */
static void candidates(FILE *f, char *const *names, size_t n, uint64_t more)
{
	size_t i;

	fputs("one of ", f);
	for (i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		T(f, names[i]);
	}
	if (more)
		fprintf(f, " (and %" PRIu64 " more)", more);
}

static void denials(FILE *f, const struct evidence *ev, struct policy *const *pol)
{
	size_t i;

	fprintf(f, "<h2 id=\"denials\">Denials (%zu)</h2>\n", ev->n_denials);
	if (!ev->n_denials) {
		fputs("<p>None: nothing was denied, and nothing would have been.</p>\n", f);
		return;
	}
	fputs("<p class=\"note\">\"would deny\": report mode let it through; under enforce it is "
	      "denied. Request access: the policy's request_access link, as the run's stderr gave "
	      "it, when the policy file still has the SHA-256 the log names.</p>\n",
	      f);
	fputs("<table><tr><th>run</th><th>time</th><th></th><th>what</th><th>host or address"
	      "</th><th>port</th><th>rule</th><th>reason</th><th>process</th>"
	      "<th>request access</th></tr>\n",
	      f);
	for (i = 0; i < ev->n_denials; i++) {
		const struct ev_denial *d = &ev->denials[i];

		fputs("<tr class=\"deny\">", f);
		td_run(f, ev, d->run);
		td_time(f, d->ts);
		fprintf(f, "<td><b>%s</b></td>", d->enforced ? "denied" : "would deny");
		fprintf(f, "<td>%s", denial_kind(d->kind));
		if (d->hook) {
			fputs(" (", f);
			T(f, d->hook);
			fputs(")", f);
		}
		fputs("</td><td class=\"mono\">", f);
		if (d->host || d->n_hosts) {
			if (d->host)
				T(f, d->host);
			else
				candidates(f, d->hosts, d->n_hosts, d->hosts_more);
			if (d->dst) {
				fputs(" (", f);
				T(f, d->dst);
				fputs(")", f);
			}
		} else if (d->dst)
			T(f, d->dst);
		else
			opt(f, d->what);
		fputs("</td>", f);
		if (d->port) {
			fprintf(f, "<td>%u", d->port);
			if (d->proto) {
				fputc('/', f);
				T(f, d->proto);
			}
			fputs("</td>", f);
		} else
			td(f, NULL);
		td(f, d->rule);
		td(f, d->reason);
		fputs("<td>", f);
		opt(f, d->comm);
		if (d->pid >= 0)
			fprintf(f, " (pid %" PRId64 ")", d->pid);
		fputs("</td><td class=\"mono\">", f);
		/* as records.c: not for the blackhole (no policy can allow it), nor a socket kind
		 */
		if (pol[d->run] && pol[d->run]->request_access && d->kind != EV_DENY_SURFACE &&
		    (!d->rule || strcmp(d->rule, "blackhole")) && (d->host || d->dst))
			request_access(f, pol[d->run]->request_access, d->host ? d->host : d->dst);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void bytes_per_host(FILE *f, const struct evidence *ev)
{
	struct report_bar *bars;
	size_t i, n = 0;

	fputs("<h2 id=\"hosts\">Flows per host</h2>\n", f);
	if (!ev->n_endpoints) {
		fputs("<p>No connection was made.</p>\n", f);
		return;
	}
	bars = calloc(ev->n_endpoints, sizeof(*bars));
	if (bars) {
		for (i = 0; i < ev->n_endpoints; i++) {
			const struct ev_endpoint *e = &ev->endpoints[i];

			if (!e->flows)
				continue;
			bars[n].label = e->name;
			bars[n].sent = e->req_bytes;
			bars[n].received = e->resp_bytes;
			n++;
		}
		if (n)
			report_bar_chart(f, bars, n);
		free(bars);
	}
	fputs("<table><tr><th>host or address</th><th>ports</th><th>rules</th>"
	      "<th>connections</th><th>denied</th><th>would deny</th><th>flows</th>"
	      "<th>bytes sent</th><th>bytes received</th><th>largest sent</th>"
	      "<th>largest received</th><th>would-deny flows</th><th>would-deny bytes sent</th>"
	      "<th>would-deny bytes received</th><th>runs</th></tr>\n",
	      f);
	for (i = 0; i < ev->n_endpoints; i++) {
		const struct ev_endpoint *e = &ev->endpoints[i];
		size_t j;

		fputs("<tr><td class=\"mono\">", f);
		T(f, e->name);
		if (e->kind == EV_ADDR && e->n_dsts) {
			fputs(" <i>(", f);
			candidates(f, e->dsts, e->n_dsts, 0);
			fputs(")</i>", f);
		} else if (e->kind == EV_ADDR) {
			fputs(" <i>(no name)</i>", f);
		}
		fputs("</td><td>", f);
		for (j = 0; j < e->n_ports; j++) {
			fprintf(f, "%s%u/", j ? ", " : "", e->ports[j].port);
			T(f, e->ports[j].proto);
		}
		fputs("</td>", f);
		td(f, e->rules);
		td_u(f, e->connections);
		td_u(f, e->denied);
		td_u(f, e->would_deny);
		td_u(f, e->flows);
		td_u(f, e->req_bytes);
		td_u(f, e->resp_bytes);
		td_u(f, e->max_req);
		td_u(f, e->max_resp);
		td_u(f, e->would_deny_flows);
		td_u(f, e->would_deny_req_bytes);
		td_u(f, e->would_deny_resp_bytes);
		fprintf(f, "<td class=\"n\">%zu</td></tr>\n", e->n_uses);
	}
	fputs("</table>\n", f);
}

static void timelines(FILE *f, const struct evidence *ev)
{
	struct report_span *spans;
	char **labels;
	size_t run, i, n, cap = ev->n_flows + ev->n_conns;

	fputs("<h2 id=\"timeline\">Timeline</h2>\n<p class=\"note\">Blue: a flow, from its "
	      "connection to its end; purple: a flow the policy denies, let through by report "
	      "mode; orange: a flow cut at its byte cap; red: a denial.</p>\n",
	      f);
	spans = calloc(cap ? cap : 1, sizeof(*spans));
	labels = calloc(cap ? cap : 1, sizeof(*labels));
	if (!spans || !labels)
		goto out;
	for (run = 0; run < ev->n_runs; run++) {
		const struct ev_run *r = &ev->runs[run];
		int64_t t0 = r->start_ts, t1 = r->end_ts;

		n = 0;
		for (i = 0; i < ev->n_flows; i++) {
			const struct ev_flow *fl = &ev->flows[i];
			int64_t d = (int64_t)(fl->duration_ms > INT64_MAX / 1000
						      ? (uint64_t)INT64_MAX / 1000
						      : fl->duration_ms) *
				    1000;

			if (fl->run != run)
				continue;
			if (asprintf(&labels[n], "%s:%u", fl->host ? fl->host : fl->dst, fl->port) <
			    0) {
				labels[n] = NULL;
				goto out;
			}
			spans[n].label = labels[n];
			spans[n].start = fl->ts - d;
			spans[n].end = fl->ts;
			spans[n].kind = fl->cut		 ? REPORT_SPAN_CUT
					: fl->would_deny ? REPORT_SPAN_WOULD_DENY
							 : REPORT_SPAN_ALLOWED;
			n++;
		}
		for (i = 0; i < ev->n_conns; i++) {
			const struct ev_conn *c = &ev->conns[i];

			if (c->run != run || c->allow)
				continue;
			if (asprintf(&labels[n], "%s:%u", c->host ? c->host : c->dst, c->port) <
			    0) {
				labels[n] = NULL;
				goto out;
			}
			spans[n].label = labels[n];
			spans[n].start = spans[n].end = c->ts;
			spans[n].kind = REPORT_SPAN_DENIED;
			n++;
		}
		fputs("<h3>", f);
		T(f, run_name(ev, run));
		fputs("</h3>\n", f);
		if (!n)
			fputs("<p>No connection.</p>\n", f);
		else
			report_timeline(f, spans, n, t0, t1 > t0 ? t1 : t0);
		for (i = 0; i < n; i++) {
			free(labels[i]);
			labels[i] = NULL;
		}
	}
out:
	if (labels)
		for (i = 0; i < cap; i++)
			free(labels[i]);
	free(labels);
	free(spans);
}

static void list(FILE *f, char *const *v, size_t n)
{
	size_t i;

	if (!n) {
		opt(f, NULL);
		return;
	}
	for (i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		T(f, v[i]);
	}
}

static void dns_answers(FILE *f, const struct evidence *ev)
{
	size_t i;

	fprintf(f, "<h2 id=\"dns\">DNS answers (%zu)</h2>\n", ev->n_dns);
	if (!ev->n_dns) {
		fputs("<p>No query reached the run's resolver.</p>\n", f);
		return;
	}
	fputs("<table><tr><th>run</th><th>time</th><th>name</th><th>type</th><th>decision</th>"
	      "<th>rule</th><th>rcode</th><th>answers</th><th>CNAME chain</th><th>process</th>"
	      "</tr>\n",
	      f);
	for (i = 0; i < ev->n_dns; i++) {
		const struct ev_dns *d = &ev->dns[i];

		fputs("<tr>", f);
		td_run(f, ev, d->run);
		td_time(f, d->ts);
		fputs("<td class=\"mono\">", f);
		opt(f, d->host);
		fputs("</td>", f);
		td(f, d->qtype);
		fputs("<td>", f);
		opt(f, d->decision);
		if (d->decision && strcmp(d->decision, "allow") && !d->enforced)
			fputs(" (not enforced)", f);
		if (d->why) {
			fputs(": ", f);
			T(f, d->why);
		}
		fputs("</td>", f);
		td(f, d->rule);
		td(f, d->rcode);
		fputs("<td class=\"mono\">", f);
		list(f, d->answers, d->n_answers);
		fputs("</td><td class=\"mono\">", f);
		list(f, d->cname, d->n_cname);
		fputs("</td>", f);
		td(f, d->comm);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void caps_hit(FILE *f, const struct evidence *ev)
{
	size_t i;

	fprintf(f, "<h2 id=\"caps\">Byte caps hit (%zu)</h2>\n", ev->n_cuts);
	if (!ev->n_cuts) {
		fputs("<p>None.</p>\n", f);
		return;
	}
	fputs("<table><tr><th>run</th><th>time</th><th>host or address</th><th>port</th>"
	      "<th>rule</th><th>cap</th><th>limit</th><th>bytes sent</th><th>bytes received</th>"
	      "</tr>\n",
	      f);
	for (i = 0; i < ev->n_cuts; i++) {
		const struct ev_cut *c = &ev->cuts[i];

		fputs("<tr>", f);
		td_run(f, ev, c->run);
		td_time(f, c->ts);
		fputs("<td class=\"mono\">", f);
		opt(f, c->host ? c->host : c->dst);
		fprintf(f, "</td><td>%u</td>", c->port);
		td(f, c->rule);
		td(f, c->cap);
		td_u(f, c->limit);
		td_u(f, c->req_bytes);
		td_u(f, c->resp_bytes);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void alerts(FILE *f, const struct evidence *ev)
{
	size_t i;

	fprintf(f, "<h2 id=\"alerts\">Alerts (%zu)</h2>\n", ev->n_alerts);
	if (!ev->n_alerts) {
		fputs("<p>None.</p>\n", f);
		return;
	}
	fputs("<table><tr><th>run</th><th>time</th><th>condition</th><th>what</th></tr>\n", f);
	for (i = 0; i < ev->n_alerts; i++) {
		const struct ev_alert *a = &ev->alerts[i];

		fputs("<tr>", f);
		td_run(f, ev, a->run);
		td_time(f, a->ts);
		td(f, a->condition);
		fputs("<td class=\"mono\">", f);
		opt(f, a->what);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/*
 * The suggestion sluice policy suggest makes from these logs, and what it changes against each
 * policy the runs ran under, as sluice policy diff says it.
 */
static void suggestion(FILE *f, const struct evidence *ev, bool unverified,
		       struct policy *const *pol, const char *const *why)
{
	struct policy *sp = NULL;
	char *text = NULL, *diff = NULL, err[1024];
	size_t len = 0, dlen, i, j, bad = 0;

	fputs("<h2 id=\"suggest\">Suggested policy</h2>\n", f);
	for (i = 0; i < ev->n_runs; i++)
		bad += !ev->runs[i].verified;
	if (bad && !unverified) {
		fprintf(f,
			"<p>None: %zu log%s %s not verify (intact and sealed), and sluice policy "
			"suggest uses none that does not (--unverified shows one made from them "
			"anyway).</p>\n",
			bad, bad == 1 ? "" : "s", bad == 1 ? "does" : "do");
		return;
	}
	if (suggest_text(ev, 0, unverified, "suggested.yaml", &text, &len, err, sizeof(err))) {
		fputs("<p>None: ", f);
		T(f, err);
		fputs("</p>\n", f);
		return;
	}
	fputs("<p class=\"note\">What <code>sluice policy suggest</code> writes for these logs: "
	      "it allows what the runs did and nothing else. Review it before use.</p>\n<pre>",
	      f);
	report_html_lines(f, text, len);
	fputs("</pre>\n", f);
	if (policy_load_buffer(text, len, "suggested.yaml", &sp, err, sizeof(err)))
		goto out;
	for (i = 0; i < ev->n_runs; i++) {
		const struct ev_run *r = &ev->runs[i];
		FILE *m;

		if (!r->policy || !r->policy_sha256)
			continue;
		/* each policy once */
		for (j = 0; j < i; j++)
			if (ev->runs[j].policy_sha256 &&
			    !strcmp(ev->runs[j].policy_sha256, r->policy_sha256))
				break;
		if (j < i)
			continue;
		fputs("<h3>Against the policy in force: <code>", f);
		T(f, r->policy);
		fputs("</code></h3>\n", f);
		if (!pol[i]) {
			fputs("<p>No diff: the file ", f);
			T(f, why[i] ? why[i] : "cannot be read here");
			fputs(".</p>\n", f);
			continue;
		}
		diff = NULL;
		dlen = 0;
		m = open_memstream(&diff, &dlen);
		if (m) {
			size_t n = policy_diff_write(pol[i], sp, m);

			if (!fclose(m)) {
				if (!n)
					fputs("<p>No difference: the suggestion is the policy in "
					      "force.</p>\n",
					      f);
				else {
					fputs("<pre>", f);
					report_html_lines(f, diff, dlen);
					fputs("</pre>\n", f);
				}
			}
			free(diff);
		}
	}
out:
	policy_free(sp);
	free(text);
}

static int page(FILE *f, const struct evidence *ev, bool unverified)
{
	struct policy **pol = calloc(ev->n_runs ? ev->n_runs : 1, sizeof(*pol));
	const char **why = calloc(ev->n_runs ? ev->n_runs : 1, sizeof(*why));
	char now[64];
	size_t i;

	if (!pol || !why) {
		free(pol);
		free(why);
		return -ENOMEM;
	}
	/* each run's policy file, where it still is what the run ran under */
	for (i = 0; i < ev->n_runs; i++)
		if (ev->runs[i].policy && ev->runs[i].policy_sha256)
			policy_in_force(ev->runs[i].policy, ev->runs[i].policy_sha256, &pol[i],
					&why[i]);
	report_time((int64_t)time(NULL) * 1000000, now, sizeof(now));
	report_page_head(f, ev->n_runs == 1 && ev->runs[0].run_id ? ev->runs[0].run_id
								  : "sluice report");
	fputs("<h1>sluice report: ", f);
	if (ev->n_runs == 1) {
		fputs("run <code>", f);
		opt(f, ev->runs[0].run_id);
		fputs("</code>", f);
		if (ev->runs[0].task) {
			fputs(", task ", f);
			T(f, ev->runs[0].task);
		}
	} else
		fprintf(f, "%zu runs", ev->n_runs);
	fprintf(f, "</h1>\n<p class=\"note\">Written %s by sluice report from %zu log%s.</p>\n",
		now, ev->n_runs, ev->n_runs == 1 ? "" : "s");
	banner(f, ev, unverified);
	runs_table(f, ev, unverified);
	denials(f, ev, pol);
	bytes_per_host(f, ev);
	timelines(f, ev);
	dns_answers(f, ev);
	caps_hit(f, ev);
	alerts(f, ev);
	suggestion(f, ev, unverified, pol, why);
	report_page_tail(f);
	for (i = 0; i < ev->n_runs; i++)
		policy_free(pol[i]);
	free(pol);
	free(why);
	return 0;
}

/* The page, written whole over out or not at all (a report is for reading: 0644). */
static int write_page(const char *out, const struct evidence *ev, bool unverified)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -errno;
	err = page(f, ev, unverified);
	if (fclose(f) && !err)
		err = -(errno ? errno : ENOMEM);
	if (!err)
		err = util_replace_file(out, buf, len, 0644);
	free(buf);
	return err;
}

int report_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"key", required_argument, NULL, 'k'},
		{"unverified", no_argument, NULL, 'u'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = NULL, *key = NULL;
	struct evidence *ev = NULL;
	char vkey[NOTE_VKEY_MAX + 2], err[PATH_MAX + 1024];
	bool unverified = false;
	int c, i, e, status = 4;

	while ((c = getopt_long(argc, argv, "o:k:uh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'u':
			unverified = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc || !out || !out[0]) {
		fprintf(stderr, "sluice report: %s\n",
			optind == argc ? "no LOG given" : "no output: give -o FILE");
		usage(stderr);
		return 2;
	}
	if (evidence_read_pub(key, vkey, sizeof(vkey), err, sizeof(err))) {
		fprintf(stderr, "sluice report: ");
		term_str(stderr, err);
		fputc('\n', stderr);
		return 4;
	}
	if (evidence_new(&ev)) {
		fprintf(stderr, "sluice report: %s\n", strerror(ENOMEM));
		return 4;
	}
	for (i = optind; i < argc; i++) {
		/*
		 * A verified run given twice would count twice in the page and its suggested
		 * policy; a copy that does not verify is shown as such (TAMPERED), counted nowhere.
		 */
		if (evidence_add_log(ev, argv[i], vkey, err, sizeof(err)) ||
		    (ev->runs[ev->n_runs - 1].verified &&
		     evidence_same_run(ev, &ev->runs[ev->n_runs - 1], err, sizeof(err)))) {
			fprintf(stderr, "sluice report: ");
			term_str(stderr, err);
			fprintf(stderr, "; no report written\n");
			goto out;
		}
	}
	evidence_sort(ev);
	e = write_page(out, ev, unverified);
	if (e) {
		fprintf(stderr, "sluice report: write ");
		term_str(stderr, out);
		fprintf(stderr, ": %s\n", strerror(-e));
		goto out;
	}
	status = 0;
	for (i = 0; i < (int)ev->n_runs; i++) {
		const struct ev_run *r = &ev->runs[i];

		if (r->status == VERIFY_INVALID)
			status = 1;
		fprintf(stderr, "sluice report: ");
		term_str(stderr, r->path);
		fprintf(stderr, ": %s: ", report_verdict_word(verdict(r, unverified)));
		term_str(stderr, r->verdict);
		fputc('\n', stderr);
	}
out:
	evidence_free(ev);
	return status;
}
