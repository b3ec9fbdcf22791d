/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Prometheus metrics computed from the log lines themselves: the daemon hands every line it
 * writes to metrics_observe, and `sluice metrics LOG…` feeds the lines of finished logs, so the
 * numbers always agree with the evidence. Every label takes its value from a fixed set (the
 * hooks, reasons, rcodes, modes and line types sluice writes; anything else counts as "other"):
 * a run id, host or address is never a label, so a hostile log cannot grow the series.
 *
 * Served two ways: a tiny HTTP/1.0 responder for the daemon's poll loop (GET /metrics only,
 * non-blocking, bounded) and a textfile for node-exporter's textfile collector (written to a
 * temporary file beside it, then renamed).
 */
#ifndef SLUICE_METRICS_H
#define SLUICE_METRICS_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonline.h"

#define METRICS_REASONS 32 /* sl_reason codes named by decision_reason_name, and "other" */
#define METRICS_HOOKS 16   /* SL_HOOK_* names, and "other" */
#define METRICS_RCODES 7   /* NOERROR … REFUSED, other */
#define METRICS_MODES 3	   /* enforce, report, other */
#define METRICS_TYPES 24   /* line types sluice writes, other */
#define METRICS_VERDICTS 3 /* allow, deny, other (dns also: refused, error: see below) */
#define METRICS_DNS_DECISIONS 5

struct metrics_run; /* a started run not yet ended: its mode, for sluice_runs_active */

struct metrics {
	char version[64];
	uint64_t lines[METRICS_TYPES];
	/* [verdict][enforced][reason][hook] */
	uint64_t decisions[METRICS_VERDICTS][2][METRICS_REASONS][METRICS_HOOKS];
	uint64_t tls[METRICS_VERDICTS][METRICS_REASONS];
	uint64_t dns[METRICS_DNS_DECISIONS][METRICS_RCODES];
	uint64_t flows;
	uint64_t flow_bytes[2]; /* request, response */
	uint64_t flow_cuts;
	uint64_t lost[METRICS_HOOKS];
	uint64_t runs_started[METRICS_MODES];
	uint64_t runs_ended[METRICS_MODES];
	uint64_t mode_changes[METRICS_MODES]; /* by the mode changed to */
	uint64_t policy_changes;
	uint64_t alerts;
	uint64_t anomalies;
	uint64_t malformed; /* lines metrics_observe_raw could not parse */
	struct metrics_run *active;
	size_t n_active;
	struct jsonline *scratch; /* metrics_observe_raw's parse */
	/* Held by every function here: the writer's thread may observe while the loop renders. */
	pthread_mutex_t lock;
};

void metrics_init(struct metrics *m, const char *version);
/* A run a daemon took over (its run_start was written by another process): active, in mode. */
void metrics_adopt(struct metrics *m, const char *run_id, bool report);
void metrics_free(struct metrics *m);

/* Count one canonical line (of any run). */
void metrics_observe(struct metrics *m, const struct jsonline *jl);
/*
 * The same from the line's bytes (a final "\n" is ignored: a journal on_line callback's line can
 * be passed as it is); a line that does not parse counts as malformed.
 */
void metrics_observe_raw(struct metrics *m, const char *line, size_t len);

/* The text exposition format into a malloc'd buffer (*out, *len). Returns 0 or -errno. */
int metrics_render(const struct metrics *m, char **out, size_t *len);

/*
 * Write the exposition to path atomically for node-exporter's textfile collector: a temporary
 * file in the same directory (a name not ending in .prom, so the collector never reads it),
 * made world-readable and synced, then renamed over path. Returns 0 or -errno.
 */
int metrics_write_textfile(const struct metrics *m, const char *path);

/*
 * The HTTP responder. metrics_http_new listens on addr ("127.0.0.1:9477", "[::1]:9477"; a port
 * alone means 127.0.0.1) with a non-blocking socket. The daemon's poll loop asks for its fds
 * (metrics_http_pollfds: the listener and every client, at most METRICS_HTTP_POLLFDS) and the
 * longest it may sleep (metrics_http_timeout_ms: -1 when no client waits), then hands the
 * polled array back (metrics_http_handle). Nothing here blocks: a client that sends more than
 * METRICS_HTTP_REQ_MAX bytes before its blank line gets 431, one that takes more than
 * METRICS_HTTP_TIMEOUT_MS is dropped, a method other than GET gets 405, a path other than
 * /metrics 404, garbage 400; past METRICS_HTTP_CLIENTS clients new ones are closed at once.
 */
#define METRICS_HTTP_CLIENTS 8
#define METRICS_HTTP_POLLFDS (METRICS_HTTP_CLIENTS + 1)
#define METRICS_HTTP_REQ_MAX 2048
#define METRICS_HTTP_TIMEOUT_MS 5000

struct metrics_http;

/* Parse a listen address into a sockaddr (also for --metrics-listen's checks). 0 or -EINVAL. */
int metrics_http_parse_addr(const char *addr, void *sa, unsigned int *sa_len);
int metrics_http_new(struct metrics_http **out, const char *addr, const struct metrics *m);
/* The listening socket (to print its port when addr said port 0). */
int metrics_http_listen_fd(const struct metrics_http *h);
size_t metrics_http_pollfds(const struct metrics_http *h, struct pollfd *fds, size_t max);
int metrics_http_timeout_ms(const struct metrics_http *h);
void metrics_http_handle(struct metrics_http *h, const struct pollfd *fds, size_t n);
void metrics_http_free(struct metrics_http *h);

#endif /* SLUICE_METRICS_H */
