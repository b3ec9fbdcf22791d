// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "decision.h"
#include "metrics.h"
#include "util.h"

/*
 * Label values. Each table ends where its "other" begins: a value the log holds that is not in
 * the table is counted under "other", so the set of series is fixed by this file whatever the
 * lines say.
 */
static const char *const verdicts[METRICS_VERDICTS - 1] = {"allow", "deny"};
static const char *const dns_decisions[METRICS_DNS_DECISIONS - 1] = {"allow", "deny", "refused",
								     "error"};
static const char *const rcodes[METRICS_RCODES - 1] = {"NOERROR",  "FORMERR", "SERVFAIL",
						       "NXDOMAIN", "NOTIMP",  "REFUSED"};
static const char *const modes[METRICS_MODES - 1] = {"enforce", "report"};
static const char *const types[] = {
	"log_start",   "checkpoint", "writer_restart", "run_start",	"decision",    "dns",
	"tls",	       "flow_cut",   "flow",	       "host_total",	"alert",       "loss",
	"loss_ranges", "anomaly",    "run_end",	       "policy_change", "preexisting",
	"policy_switch_begin", "policy_switch_abort",
};
_Static_assert(sizeof(types) / sizeof(types[0]) < METRICS_TYPES, "types table too long");
_Static_assert(SL_HOOK_MAX + 2 <= METRICS_HOOKS, "hook table too short");

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define ACTIVE_MAX 65536 /* runs tracked for sluice_runs_active; past it, a run is not tracked */

struct metrics_run {
	char *run_id;
	unsigned int mode;
};

/* Index of s in names[0..n), else n ("other"). */
static unsigned int lookup(const char *const *names, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], s))
			return (unsigned int)i;
	return (unsigned int)n;
}

/* The hook label: the SL_HOOK_* names, then "log" (a loss line of the writer), then other. */
static const char *hook_label(unsigned int i)
{
	if (i < SL_HOOK_MAX)
		return decision_hook_name(i);
	return i == SL_HOOK_MAX ? "log" : "other";
}

static unsigned int hook_index(const char *s)
{
	unsigned int i;

	for (i = 0; i < SL_HOOK_MAX; i++)
		if (!strcmp(decision_hook_name(i), s))
			return i;
	return strcmp(s, "log") ? SL_HOOK_MAX + 1 : SL_HOOK_MAX;
}
#define HOOK_LABELS (SL_HOOK_MAX + 2)

/* The reason label: reason code i's name (codes sluice does not name are never used). */
static const char *reason_label(unsigned int i)
{
	if (i == METRICS_REASONS - 1)
		return "other";
	return decision_reason_name(i);
}

static bool reason_used(unsigned int i)
{
	return i == METRICS_REASONS - 1 || strcmp(decision_reason_name(i), "unknown");
}

static unsigned int reason_index(const char *s)
{
	unsigned int i;

	for (i = 0; i < METRICS_REASONS - 1; i++)
		if (reason_used(i) && !strcmp(decision_reason_name(i), s))
			return i;
	return METRICS_REASONS - 1;
}

void metrics_init(struct metrics *m, const char *version)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->version, sizeof(m->version), "%s", version);
	pthread_mutex_init(&m->lock, NULL);
}

void metrics_free(struct metrics *m)
{
	size_t i;

	for (i = 0; i < m->n_active; i++)
		free(m->active[i].run_id);
	free(m->active);
	free(m->scratch);
	pthread_mutex_destroy(&m->lock);
	memset(m, 0, sizeof(*m));
}

/* A string member, or "" when absent, not a string, or too long (which no table holds). */
static void str_of(const struct jsonline *jl, const char *key, char *buf, size_t size)
{
	int n = jsonline_str(jl, key, buf, size);

	if (n < 0 || strlen(buf) != (size_t)n)
		buf[0] = '\0';
}

static uint64_t u64_of(const struct jsonline *jl, const char *key)
{
	uint64_t v;

	return jsonline_u64(jl, key, &v) ? 0 : v;
}

static unsigned int enforced_of(const struct jsonline *jl)
{
	const struct jsonline_member *e = jsonline_get(jl, "enforced");

	/* Absent (the seccomp filter's records): the call was refused, so enforced. */
	return !e || e->v.kind != JSONLINE_FALSE;
}

static struct metrics_run *active_find(struct metrics *m, const char *run_id)
{
	size_t i;

	for (i = 0; i < m->n_active; i++)
		if (!strcmp(m->active[i].run_id, run_id))
			return &m->active[i];
	return NULL;
}

static void run_active(struct metrics *m, const char *run_id, unsigned int mode);

static void run_started(struct metrics *m, const char *run_id, unsigned int mode)
{
	m->runs_started[mode]++;
	run_active(m, run_id, mode);
}

void metrics_adopt(struct metrics *m, const char *run_id, bool report)
{
	pthread_mutex_lock(&m->lock);
	run_active(m, run_id, lookup(modes, N(modes), report ? "report" : "enforce"));
	pthread_mutex_unlock(&m->lock);
}

static void run_active(struct metrics *m, const char *run_id, unsigned int mode)
{
	struct metrics_run *r = active_find(m, run_id), *grown;

	if (r) { /* a writer_restart's run_start, or a run id used twice: one active run */
		r->mode = mode;
		return;
	}
	if (m->n_active >= ACTIVE_MAX)
		return;
	grown = realloc(m->active, (m->n_active + 1) * sizeof(*grown));
	if (!grown)
		return;
	m->active = grown;
	grown[m->n_active].run_id = strdup(run_id);
	if (!grown[m->n_active].run_id)
		return;
	grown[m->n_active++].mode = mode;
}

static void run_ended(struct metrics *m, const char *run_id)
{
	struct metrics_run *r = active_find(m, run_id);
	unsigned int mode = METRICS_MODES - 1;

	if (r) {
		mode = r->mode;
		free(r->run_id);
		*r = m->active[--m->n_active];
	}
	m->runs_ended[mode]++;
}

static void observe_locked(struct metrics *m, const struct jsonline *jl)
{
	char type[32], a[64], b[64], c[64], run_id[256];
	unsigned int t;

	str_of(jl, "type", type, sizeof(type));
	t = lookup(types, N(types), type);
	m->lines[t]++;
	str_of(jl, "run_id", run_id, sizeof(run_id));
	if (!strcmp(type, "decision")) {
		str_of(jl, "decision", a, sizeof(a));
		str_of(jl, "reason", b, sizeof(b));
		str_of(jl, "hook", c, sizeof(c));
		m->decisions[lookup(verdicts, N(verdicts), a)][enforced_of(jl)][reason_index(b)]
			    [hook_index(c)]++;
	} else if (!strcmp(type, "tls")) {
		str_of(jl, "decision", a, sizeof(a));
		str_of(jl, "reason", b, sizeof(b));
		m->tls[lookup(verdicts, N(verdicts), a)][reason_index(b)]++;
	} else if (!strcmp(type, "dns")) {
		str_of(jl, "decision", a, sizeof(a));
		str_of(jl, "rcode", b, sizeof(b));
		m->dns[lookup(dns_decisions, N(dns_decisions), a)][lookup(rcodes, N(rcodes), b)]++;
	} else if (!strcmp(type, "flow")) {
		m->flows++;
		m->flow_bytes[0] += u64_of(jl, "req_bytes");
		m->flow_bytes[1] += u64_of(jl, "resp_bytes");
	} else if (!strcmp(type, "flow_cut")) {
		m->flow_cuts++;
	} else if (!strcmp(type, "loss")) {
		str_of(jl, "hook", a, sizeof(a));
		m->lost[hook_index(a)] += u64_of(jl, "count");
	} else if (!strcmp(type, "run_start")) {
		str_of(jl, "mode", a, sizeof(a));
		run_started(m, run_id, lookup(modes, N(modes), a));
	} else if (!strcmp(type, "run_end")) {
		run_ended(m, run_id);
	} else if (!strcmp(type, "policy_change")) {
		/* set-mode and replace-policy: "mode" is the run's mode from here on */
		struct metrics_run *r = active_find(m, run_id);
		unsigned int mode;

		str_of(jl, "mode", a, sizeof(a));
		str_of(jl, "prev_mode", b, sizeof(b));
		mode = lookup(modes, N(modes), a);
		m->policy_changes++;
		if (strcmp(a, b))
			m->mode_changes[mode]++;
		if (r)
			r->mode = mode;
	} else if (!strcmp(type, "alert")) {
		m->alerts++;
	} else if (!strcmp(type, "anomaly")) {
		m->anomalies++;
	}
}

void metrics_observe(struct metrics *m, const struct jsonline *jl)
{
	pthread_mutex_lock(&m->lock);
	observe_locked(m, jl);
	pthread_mutex_unlock(&m->lock);
}

void metrics_observe_raw(struct metrics *m, const char *line, size_t len)
{
	const char *why;
	size_t off;

	if (len && line[len - 1] == '\n')
		len--;
	pthread_mutex_lock(&m->lock);
	if (!m->scratch)
		m->scratch = malloc(sizeof(*m->scratch));
	if (!m->scratch || jsonline_parse(m->scratch, line, len, &off, &why))
		m->malformed++;
	else
		observe_locked(m, m->scratch);
	pthread_mutex_unlock(&m->lock);
}

/* ------------------------------------------------------------------------------------------ */
/* Rendering */

/* A label value as the exposition format wants it: \ " and newline escaped. */
static void label(FILE *f, const char *name, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (; *v; v++) {
		if (*v == '\\')
			fputs("\\\\", f);
		else if (*v == '"')
			fputs("\\\"", f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One series of a one-label family; "other" only when it counted something. */
static void one(FILE *f, const char *name, const char *lname, const char *lval, uint64_t v,
		bool other)
{
	if (other && !v)
		return;
	fprintf(f, "%s{", name);
	label(f, lname, lval, true);
	fprintf(f, "} %" PRIu64 "\n", v);
}

static void render(const struct metrics *m, FILE *f)
{
	uint64_t active[METRICS_MODES] = {0};
	unsigned int i, e, r, h;
	size_t k;

	head(f, "sluice_build_info", "gauge", "The running sluice's version (always 1).");
	fputs("sluice_build_info{", f);
	label(f, "version", m->version, true);
	fputs("} 1\n", f);

	head(f, "sluice_log_lines_total", "counter", "Log lines written, by type.");
	for (i = 0; i <= N(types); i++)
		one(f, "sluice_log_lines_total", "type", i < N(types) ? types[i] : "other",
		    m->lines[i], i == N(types));

	head(f, "sluice_decisions_total", "counter",
	     "Decisions logged, by verdict, whether enforced (false: report mode), reason and "
	     "hook.");
	for (i = 0; i < METRICS_VERDICTS; i++)
		for (e = 0; e < 2; e++)
			for (r = 0; r < METRICS_REASONS; r++)
				for (h = 0; h < HOOK_LABELS; h++) {
					uint64_t v = m->decisions[i][e][r][h];

					if (!v)
						continue;
					fputs("sluice_decisions_total{", f);
					label(f, "decision",
					      i < N(verdicts) ? verdicts[i] : "other", true);
					label(f, "enforced", e ? "true" : "false", false);
					label(f, "reason", reason_label(r), false);
					label(f, "hook", hook_label(h), false);
					fprintf(f, "} %" PRIu64 "\n", v);
				}

	head(f, "sluice_tls_total", "counter", "TLS server-name checks, by verdict and reason.");
	for (i = 0; i < METRICS_VERDICTS; i++)
		for (r = 0; r < METRICS_REASONS; r++) {
			if (!m->tls[i][r])
				continue;
			fputs("sluice_tls_total{", f);
			label(f, "decision", i < N(verdicts) ? verdicts[i] : "other", true);
			label(f, "reason", reason_label(r), false);
			fprintf(f, "} %" PRIu64 "\n", m->tls[i][r]);
		}

	head(f, "sluice_dns_answers_total", "counter",
	     "DNS queries the runs' resolvers answered, by decision and the rcode sent.");
	for (i = 0; i < METRICS_DNS_DECISIONS; i++)
		for (r = 0; r < METRICS_RCODES; r++) {
			if (!m->dns[i][r])
				continue;
			fputs("sluice_dns_answers_total{", f);
			label(f, "decision", i < N(dns_decisions) ? dns_decisions[i] : "other",
			      true);
			label(f, "rcode", r < N(rcodes) ? rcodes[r] : "other", false);
			fprintf(f, "} %" PRIu64 "\n", m->dns[i][r]);
		}

	head(f, "sluice_flows_total", "counter",
	     "Flows ended (flow lines: allowed ones, and report-mode denials').");
	fprintf(f, "sluice_flows_total %" PRIu64 "\n", m->flows);
	head(f, "sluice_flow_bytes_total", "counter",
	     "Payload bytes of ended flows, by direction (request: out of the run).");
	one(f, "sluice_flow_bytes_total", "direction", "request", m->flow_bytes[0], false);
	one(f, "sluice_flow_bytes_total", "direction", "response", m->flow_bytes[1], false);
	head(f, "sluice_flow_cuts_total", "counter", "Flows cut at a byte cap.");
	fprintf(f, "sluice_flow_cuts_total %" PRIu64 "\n", m->flow_cuts);

	head(f, "sluice_events_lost_total", "counter",
	     "Records lost (loss lines' counts), by hook (log: read but not written).");
	for (h = 0; h < HOOK_LABELS; h++)
		if (m->lost[h] || h == SL_HOOK_MAX)
			one(f, "sluice_events_lost_total", "hook", hook_label(h), m->lost[h],
			    false);

	for (k = 0; k < m->n_active; k++)
		active[m->active[k].mode]++;
	head(f, "sluice_runs_started_total", "counter", "Runs started (run_start lines), by mode.");
	for (i = 0; i < METRICS_MODES; i++)
		one(f, "sluice_runs_started_total", "mode", i < N(modes) ? modes[i] : "other",
		    m->runs_started[i], i == N(modes));
	head(f, "sluice_runs_ended_total", "counter",
	     "Runs ended (run_end lines), by the mode they were in.");
	for (i = 0; i < METRICS_MODES; i++)
		one(f, "sluice_runs_ended_total", "mode", i < N(modes) ? modes[i] : "other",
		    m->runs_ended[i], i == N(modes));
	head(f, "sluice_runs_active", "gauge", "Runs started and not ended, by current mode.");
	for (i = 0; i < METRICS_MODES; i++)
		one(f, "sluice_runs_active", "mode", i < N(modes) ? modes[i] : "other", active[i],
		    i == N(modes));
	head(f, "sluice_policy_changes_total", "counter",
	     "Policy or mode changes of running runs (policy_change lines).");
	fprintf(f, "sluice_policy_changes_total %" PRIu64 "\n", m->policy_changes);
	head(f, "sluice_mode_changes_total", "counter",
	     "Mode changes of running runs, by the mode changed to.");
	for (i = 0; i < METRICS_MODES; i++)
		one(f, "sluice_mode_changes_total", "mode", i < N(modes) ? modes[i] : "other",
		    m->mode_changes[i], i == N(modes));

	head(f, "sluice_alerts_total", "counter", "Alert lines (the policy's alert_on).");
	fprintf(f, "sluice_alerts_total %" PRIu64 "\n", m->alerts);
	head(f, "sluice_anomalies_total", "counter", "Anomaly lines.");
	fprintf(f, "sluice_anomalies_total %" PRIu64 "\n", m->anomalies);
	head(f, "sluice_metrics_malformed_lines_total", "counter",
	     "Lines the metrics could not parse (not in sluice's canonical form).");
	fprintf(f, "sluice_metrics_malformed_lines_total %" PRIu64 "\n", m->malformed);
}

int metrics_render(const struct metrics *m, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);

	if (!f)
		return -errno;
	/* the counters only change under the lock; rendering reads them as one snapshot */
	pthread_mutex_lock((pthread_mutex_t *)&m->lock);
	render(m, f);
	pthread_mutex_unlock((pthread_mutex_t *)&m->lock);
	if (fclose(f)) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

int metrics_write_textfile(const struct metrics *m, const char *path)
{
	char *body = NULL;
	size_t len = 0;
	int err = metrics_render(m, &body, &len);

	/* node-exporter runs as its own user, and reads only *.prom: not the temporary name */
	if (!err)
		err = util_replace_file(path, body, len, 0644);
	free(body);
	return err;
}

/* ------------------------------------------------------------------------------------------ */
/* The HTTP responder */

struct http_client {
	int fd; /* -1: free slot */
	int64_t deadline_ms;
	char req[METRICS_HTTP_REQ_MAX];
	size_t req_len;
	char *out; /* the response, once the request is whole */
	size_t out_len, out_off;
};

struct metrics_http {
	int lfd;
	const struct metrics *m;
	struct http_client c[METRICS_HTTP_CLIENTS];
};

int metrics_http_parse_addr(const char *addr, void *sa, unsigned int *sa_len)
{
	struct sockaddr_in *in4 = sa;
	struct sockaddr_in6 *in6 = sa;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(addr, ':'), *port_s;
	unsigned long port;
	char *end;

	if (!colon) {
		port_s = addr;
		snprintf(host, sizeof(host), "127.0.0.1");
	} else {
		if ((size_t)(colon - addr) >= sizeof(host))
			return -EINVAL;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
		port_s = colon + 1;
	}
	if (!*port_s || *port_s < '0' || *port_s > '9')
		return -EINVAL;
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (errno || *end || port > 65535)
		return -EINVAL;
	if (host[0] == '[') {
		size_t hl = strlen(host);

		if (hl < 3 || host[hl - 1] != ']')
			return -EINVAL;
		host[hl - 1] = '\0';
		memset(in6, 0, sizeof(*in6));
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
			return -EINVAL;
		*sa_len = sizeof(*in6);
		return 0;
	}
	memset(in4, 0, sizeof(*in4));
	in4->sin_family = AF_INET;
	in4->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
		return -EINVAL;
	*sa_len = sizeof(*in4);
	return 0;
}

int metrics_http_new(struct metrics_http **out, const char *addr, const struct metrics *m)
{
	struct sockaddr_in6 sa; /* large enough for either family */
	struct metrics_http *h;
	unsigned int sa_len;
	int one = 1, err, i;

	err = metrics_http_parse_addr(addr, &sa, &sa_len);
	if (err)
		return err;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->m = m;
	for (i = 0; i < METRICS_HTTP_CLIENTS; i++)
		h->c[i].fd = -1;
	h->lfd = socket(((struct sockaddr *)&sa)->sa_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0) {
		err = -errno;
		goto fail;
	}
	if (setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(h->lfd, (struct sockaddr *)&sa, sa_len) || listen(h->lfd, 16)) {
		err = -errno;
		goto fail;
	}
	*out = h;
	return 0;
fail:
	if (h->lfd >= 0)
		close(h->lfd);
	free(h);
	return err;
}

int metrics_http_listen_fd(const struct metrics_http *h)
{
	return h->lfd;
}

static void client_close(struct http_client *c)
{
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->fd = -1;
}

size_t metrics_http_pollfds(const struct metrics_http *h, struct pollfd *fds, size_t max)
{
	size_t n = 0;
	int i;

	if (n < max)
		fds[n++] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
	for (i = 0; i < METRICS_HTTP_CLIENTS && n < max; i++)
		if (h->c[i].fd >= 0)
			fds[n++] = (struct pollfd){.fd = h->c[i].fd,
						   .events = h->c[i].out ? POLLOUT : POLLIN};
	return n;
}

int metrics_http_timeout_ms(const struct metrics_http *h)
{
	int64_t now = util_mono_ms(), best = -1;
	int i;

	for (i = 0; i < METRICS_HTTP_CLIENTS; i++) {
		int64_t left;

		if (h->c[i].fd < 0)
			continue;
		left = h->c[i].deadline_ms - now;
		if (left < 0)
			left = 0;
		if (best < 0 || left < best)
			best = left;
	}
	return (int)best;
}

static void respond(struct metrics_http *h, struct http_client *c, int code, const char *status,
		    const char *extra)
{
	char *body = NULL, *resp;
	size_t body_len = 0;
	const char *ctype = "text/plain; charset=utf-8";
	int n;

	if (code == 200) {
		if (metrics_render(h->m, &body, &body_len)) {
			respond(h, c, 500, "Internal Server Error", "");
			return;
		}
		ctype = "text/plain; version=0.0.4; charset=utf-8";
	} else {
		n = asprintf(&body, "%s\n", status);
		if (n < 0) {
			client_close(c);
			return;
		}
		body_len = (size_t)n;
	}
	n = asprintf(&resp,
		     "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		     "Connection: close\r\n\r\n%.*s",
		     code, status, ctype, body_len, extra, (int)body_len, body);
	free(body);
	if (n < 0) {
		client_close(c);
		return;
	}
	c->out = resp;
	c->out_len = (size_t)n;
	c->out_off = 0;
}

/* The request line of a whole request: "GET /metrics HTTP/1.x" and nothing else gets 200. */
static void answer(struct metrics_http *h, struct http_client *c)
{
	char *sp1, *sp2, *eol = memchr(c->req, '\n', c->req_len);
	size_t i, n;

	n = (size_t)(eol - c->req);
	if (n && c->req[n - 1] == '\r')
		n--;
	c->req[n] = '\0';
	for (i = 0; i < n; i++)
		if ((unsigned char)c->req[i] < 0x20 || (unsigned char)c->req[i] > 0x7e)
			break;
	sp1 = strchr(c->req, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (i < n || !sp1 || !sp2 || sp1 == c->req || strchr(sp2 + 1, ' ') ||
	    strncmp(sp2 + 1, "HTTP/1.", 7)) {
		respond(h, c, 400, "Bad Request", "");
		return;
	}
	*sp1 = *sp2 = '\0';
	if (strcmp(c->req, "GET"))
		respond(h, c, 405, "Method Not Allowed", "Allow: GET\r\n");
	else if (strcmp(sp1 + 1, "/metrics"))
		respond(h, c, 404, "Not Found", "");
	else
		respond(h, c, 200, "OK", "");
}

/* The request ends at its first empty line (headers are read and ignored). */
static bool request_whole(const struct http_client *c)
{
	return memmem(c->req, c->req_len, "\r\n\r\n", 4) || memmem(c->req, c->req_len, "\n\n", 2);
}

static void client_read(struct metrics_http *h, struct http_client *c)
{
	ssize_t r;

	for (;;) {
		if (c->req_len == sizeof(c->req)) {
			respond(h, c, 431, "Request Header Fields Too Large", "");
			return;
		}
		r = recv(c->fd, c->req + c->req_len, sizeof(c->req) - c->req_len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) { /* closed before a whole request, or an error */
			client_close(c);
			return;
		}
		c->req_len += (size_t)r;
		if (request_whole(c)) {
			answer(h, c);
			return;
		}
	}
}

static void client_write(struct http_client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w < 0) {
			client_close(c);
			return;
		}
		c->out_off += (size_t)w;
	}
	shutdown(c->fd, SHUT_WR);
	client_close(c);
}

static void accept_all(struct metrics_http *h)
{
	int i, fd, tries;

	for (tries = 0; tries < 64; tries++) {
		fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		for (i = 0; i < METRICS_HTTP_CLIENTS && h->c[i].fd >= 0; i++)
			;
		if (i == METRICS_HTTP_CLIENTS) { /* busy: no queue of clients to grow */
			close(fd);
			continue;
		}
		h->c[i].fd = fd;
		h->c[i].req_len = 0;
		h->c[i].out = NULL;
		h->c[i].deadline_ms = util_mono_ms() + METRICS_HTTP_TIMEOUT_MS;
	}
}

void metrics_http_handle(struct metrics_http *h, const struct pollfd *fds, size_t n)
{
	int64_t now;
	size_t k;
	int i;

	for (k = 0; k < n; k++) {
		if (!fds[k].revents)
			continue;
		if (fds[k].fd == h->lfd) {
			accept_all(h);
			continue;
		}
		for (i = 0; i < METRICS_HTTP_CLIENTS; i++) {
			struct http_client *c = &h->c[i];

			if (c->fd != fds[k].fd)
				continue;
			if (!c->out)
				client_read(h, c);
			/* A response made just now is sent at once: most fit the socket buffer. */
			if (c->fd >= 0 && c->out)
				client_write(c);
			break;
		}
	}
	now = util_mono_ms();
	for (i = 0; i < METRICS_HTTP_CLIENTS; i++)
		if (h->c[i].fd >= 0 && now >= h->c[i].deadline_ms)
			client_close(&h->c[i]);
}

void metrics_http_free(struct metrics_http *h)
{
	int i;

	if (!h)
		return;
	for (i = 0; i < METRICS_HTTP_CLIENTS; i++)
		if (h->c[i].fd >= 0)
			client_close(&h->c[i]);
	close(h->lfd);
	free(h);
}
