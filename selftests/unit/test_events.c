// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of sluice events' filters and compact lines (userspace/events_cmd.c) and of the
 * Prometheus metrics (userspace/metrics.c): the counts, the exposition text, the textfile and
 * the HTTP responder, driven here through its poll interface. Every expectation is written out
 * by hand.
 *
 * Usage: test_events        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/events.h"
#include "userspace/events_cmd.h"
#include "userspace/jsonline.h"
#include "userspace/metrics.h"
#include "tap.h"

#define PREV "0000000000000000000000000000000000000000000000000000000000000000"
#define HEAD(type) "{\"seq\":1,\"prev\":\"" PREV "\",\"ts\":1795953652429740,\"type\":\"" type "\""

static const char deny_line[] = HEAD(
	"decision") ",\"run_id\":\"smoke2\",\"task\":\"T-1\",\"hook\":\"connect4\",\"decision\":"
		    "\"deny\","
		    "\"enforced\":true,\"rule\":\"default\",\"reason\":\"default_deny\",\"family\":"
		    "\"ipv4\","
		    "\"proto\":\"tcp\",\"host\":null,\"dst\":\"198.51.100.20\",\"port\":80,\"pid\":"
		    "4506,"
		    "\"tid\":4506,\"comm\":\"curl\",\"cgroup_id\":82,\"sock_cookie\":1,\"kseq\":0}";
static const char report_line[] =
	HEAD("decision") ",\"run_id\":\"other-run\",\"task\":null,\"hook\":\"connect6\","
			 "\"decision\":\"deny\","
			 "\"enforced\":false,\"rule\":\"default\",\"reason\":\"default_deny\","
			 "\"family\":\"ipv6\","
			 "\"proto\":\"tcp\",\"host\":\"API.Example.com\",\"dst\":\"2001:db8::10\","
			 "\"port\":443,"
			 "\"pid\":7,\"tid\":7,\"comm\":\"a "
			 "b\\u0007\",\"cgroup_id\":82,\"sock_cookie\":2,"
			 "\"kseq\":1}";
static const char allow_line[] = HEAD(
	"decision") ",\"run_id\":\"smoke2\",\"task\":null,\"hook\":\"connect4\",\"decision\":"
		    "\"allow\","
		    "\"enforced\":true,\"rule\":\"test-host\",\"reason\":\"rule\",\"family\":"
		    "\"ipv4\","
		    "\"proto\":\"tcp\",\"host\":null,\"dst\":\"198.51.100.10\",\"port\":80,\"pid\":"
		    "9,"
		    "\"tid\":9,\"comm\":\"curl\",\"cgroup_id\":82,\"sock_cookie\":3,\"kseq\":2}";
static const char dns_line[] = HEAD(
	"dns") ",\"run_id\":\"smoke2\",\"task\":null,\"host\":\"evil.example.org\",\"qtype\":\"A\","
	       "\"decision\":\"deny\",\"enforced\":true,\"rule\":null,\"rcode\":\"NXDOMAIN\","
	       "\"transport\":\"udp\",\"pid\":9,\"tid\":9,\"comm\":\"curl\",\"answers\":[],"
	       "\"cname\":[],"
	       "\"why\":null}";
static const char tls_line[] =
	HEAD("tls") ",\"run_id\":\"smoke2\",\"task\":null,\"decision\":\"deny\",\"enforced\":true,"
		    "\"reason\":\"sni_mismatch\",\"host\":\"ok.example.com\",\"sni\":\"bad.test\","
		    "\"dst\":\"198.51.100.10\",\"port\":443,\"pid\":9,\"comm\":\"curl\",\"sock_"
		    "cookie\":4,"
		    "\"flow\":\"destroyed\",\"kseq\":3}";
static const char flow_line[] = HEAD(
	"flow") ",\"run_id\":\"smoke2\",\"task\":null,\"host\":\"ok.example.com\",\"sni\":null,"
		"\"dst\":\"198.51.100.10\",\"port\":443,\"proto\":\"tcp\",\"decision\":\"allow\","
		"\"rule\":\"test-host\",\"req_bytes\":100,\"resp_bytes\":2000,\"duration_ms\":12,"
		"\"pid\":9,\"comm\":\"curl\",\"sock_cookie\":4,\"kseq\":4}";
static const char loss_line[] = HEAD("loss") ",\"run_id\":\"smoke2\",\"task\":null,\"hook\":"
					     "\"connect4\",\"count\":5,\"total\":5,"
					     "\"kseq_below\":10}";
static const char start_line[] = HEAD("run_start") ",\"run_id\":\"smoke2\",\"task\":null,\"mode\":"
						   "\"enforce\",\"default\":\"deny\"}";
static const char start2_line[] = HEAD("run_start") ",\"run_id\":\"other-run\",\"task\":null,"
						    "\"mode\":\"report\",\"default\":\"deny\"}";
static const char switch_line[] =
	HEAD("policy_change") ",\"run_id\":\"other-run\",\"task\":null,\"policy\":\"/"
			      "p.yaml\",\"mode\":\"enforce\","
			      "\"prev_mode\":\"report\"}";
static const char end_line[] = HEAD("run_end") ",\"run_id\":\"smoke2\",\"task\":null,\"why\":"
					       "\"command exited\",\"exit_status\":0}";
/* A hostile writer's values: none may become a label. */
static const char hostile_line[] =
	HEAD("decision") ",\"run_id\":\"x\",\"task\":null,\"hook\":\"hook\\\"evil\",\"decision\":"
			 "\"maybe\","
			 "\"reason\":\"r\\nnew\",\"dst\":\"198.51.100.99\"}";

static struct jsonline g_jl;

static bool parse(const char *line, char *why)
{
	const char *w;
	size_t off;

	EXPECT(!jsonline_parse(&g_jl, line, strlen(line), &off, &w),
	       "the test line parses; got byte %zu: %s: %s", off, w, line);
	return true;
}

static bool match(const struct events_filter *f, const char *line, bool want, char *why)
{
	if (!parse(line, why))
		return false;
	EXPECT(events_filter_match(f, &g_jl) == want, "%s for %s", want ? "a match" : "no match",
	       line);
	return true;
}

static bool t_filter_decision(char *why)
{
	struct events_filter f = {.decision = "deny"};

	return match(&f, deny_line, true, why) && match(&f, report_line, true, why) &&
	       match(&f, allow_line, false, why) && match(&f, dns_line, true, why) &&
	       match(&f, loss_line, false, why);
}

static bool t_filter_run(char *why)
{
	struct events_filter f = {.run_id = "smoke2"};
	struct events_filter g = {.run_id = "smoke"};

	return match(&f, deny_line, true, why) && match(&f, report_line, false, why) &&
	       match(&g, deny_line, false, why);
}

/* A connection to an address two names share: "host" null, both in "hosts". */
static const char shared_line[] = HEAD(
	"decision") ",\"run_id\":\"smoke2\",\"task\":null,\"hook\":\"connect4\",\"decision\":"
		    "\"allow\",\"enforced\":true,\"rule\":\"shared\",\"reason\":\"rule\","
		    "\"family\":\"ipv4\",\"proto\":\"tcp\",\"host\":null,"
		    "\"hosts\":[\"decoy.example.net\",\"Wanted.example.net\"],"
		    "\"dst\":\"198.51.100.16\",\"port\":80,\"pid\":9,\"tid\":9,\"comm\":\"curl\","
		    "\"cgroup_id\":82,\"sock_cookie\":4,\"kseq\":3}";

/* A flow to an address more names share than the line lists: "hosts_more". */
static const char shared_more_line[] = HEAD(
	"flow") ",\"run_id\":\"smoke2\",\"task\":null,\"host\":null,"
		"\"hosts\":[\"a.example\",\"b.example\"],\"hosts_more\":3,\"sni\":null,"
		"\"dst\":\"198.51.100.16\",\"port\":80,\"proto\":\"tcp\",\"decision\":\"allow\","
		"\"rule\":\"shared\",\"req_bytes\":1,\"resp_bytes\":2,\"duration_ms\":3,"
		"\"pid\":9,\"comm\":\"curl\",\"sock_cookie\":4,\"kseq\":5}";

static bool t_filter_host(char *why)
{
	struct events_filter a = {.host = "*.example.com"};
	struct events_filter b = {.host = "198.51.100.2?"};
	struct events_filter c = {.host = "bad.*"};
	struct events_filter d = {.host = "2001:db8::*"};
	struct events_filter e = {.host = "wanted.example.net"};

	return match(&a, report_line, true, why) && /* host, case-insensitively */
	       match(&a, deny_line, false, why) && match(&a, tls_line, true, why) &&
	       match(&a, dns_line, false, why) && match(&b, deny_line, true, why) &&  /* dst */
	       match(&b, allow_line, false, why) && match(&c, tls_line, true, why) && /* sni */
	       match(&d, report_line, true, why) && match(&a, loss_line, false, why) &&
	       match(&e, shared_line, true, why) && /* any of a shared address's names */
	       match(&a, shared_line, false, why);
}

static bool t_filter_type(char *why)
{
	struct events_filter f = {.types = "dns,flow"};
	struct events_filter g = {.types = "decision", .decision = "deny", .run_id = "smoke2"};

	return match(&f, dns_line, true, why) && match(&f, flow_line, true, why) &&
	       match(&f, deny_line, false, why) && match(&g, deny_line, true, why) &&
	       match(&g, dns_line, false, why) && match(&g, allow_line, false, why) &&
	       match(&g, report_line, false, why);
}

static bool compact_is(const char *line, const char *want, char *why)
{
	char buf[4096];
	int n;

	if (!parse(line, why))
		return false;
	n = events_compact(&g_jl, buf, sizeof(buf));
	EXPECT(n == (int)strlen(want) && !strcmp(buf, want), "\n#   %s\n# got\n#   %s (%d)", want,
	       buf, n);
	return true;
}

static bool t_compact(char *why)
{
	return compact_is(deny_line,
			  "2026-11-29T12:00:52.429Z smoke2 decision deny 198.51.100.20:80/tcp "
			  "rule=default reason=default_deny hook=connect4 4506/curl",
			  why) &&
	       compact_is(report_line,
			  "2026-11-29T12:00:52.429Z other-run decision deny(report) "
			  "API.Example.com=[2001:db8::10]:443/tcp rule=default "
			  "reason=default_deny hook=connect6 7/a\\x20b\\x07",
			  why) &&
	       compact_is(dns_line,
			  "2026-11-29T12:00:52.429Z smoke2 dns deny evil.example.org/A "
			  "rcode=NXDOMAIN 9/curl",
			  why) &&
	       compact_is(tls_line,
			  "2026-11-29T12:00:52.429Z smoke2 tls deny "
			  "ok.example.com=198.51.100.10:443 reason=sni_mismatch sni=bad.test "
			  "flow=destroyed 9/curl",
			  why) &&
	       compact_is(flow_line,
			  "2026-11-29T12:00:52.429Z smoke2 flow allow "
			  "ok.example.com=198.51.100.10:443/tcp rule=test-host req_bytes=100 "
			  "resp_bytes=2000 duration_ms=12 9/curl",
			  why) &&
	       compact_is(loss_line,
			  "2026-11-29T12:00:52.429Z smoke2 loss - - hook=connect4 count=5 total=5",
			  why) &&
	       /* a shared address: its names, not none (the log's case: it is theirs) */
	       compact_is(shared_line,
			  "2026-11-29T12:00:52.429Z smoke2 decision allow "
			  "{decoy.example.net,Wanted.example.net}=198.51.100.16:80/tcp rule=shared "
			  "reason=rule hook=connect4 9/curl",
			  why) &&
	       compact_is(shared_more_line,
			  "2026-11-29T12:00:52.429Z smoke2 flow allow "
			  "{a.example,b.example,+3}=198.51.100.16:80/tcp rule=shared req_bytes=1 "
			  "resp_bytes=2 duration_ms=3 9/curl",
			  why) &&
	       compact_is(switch_line,
			  "2026-11-29T12:00:52.429Z other-run policy_change - - mode=enforce "
			  "prev_mode=report",
			  why) &&
	       compact_is(end_line,
			  "2026-11-29T12:00:52.429Z smoke2 run_end - - why=command\\x20exited "
			  "exit_status=0",
			  why);
}

static bool t_compact_short(char *why)
{
	char buf[20];
	int n;

	if (!parse(deny_line, why))
		return false;
	n = events_compact(&g_jl, buf, sizeof(buf));
	EXPECT(n == -ENOSPC && strlen(buf) == sizeof(buf) - 1,
	       "-ENOSPC and a full buffer; got %d "
	       "\"%s\"",
	       n, buf);
	return true;
}

static struct metrics g_m;

static void observe_all(void)
{
	static const char *const lines[] = {start_line,	  start2_line, deny_line, deny_line,
					    report_line,  allow_line,  dns_line,  tls_line,
					    flow_line,	  flow_line,   loss_line, end_line,
					    hostile_line, switch_line};
	static char nl[sizeof(flow_line) + 1];
	size_t i;

	metrics_init(&g_m, "0.1.0-\"t\\");
	for (i = 0; i < ARRAY_SIZE(lines); i++) {
		const char *l = lines[i];

		/* the second flow line as a journal on_line callback has it: with its "\n" */
		if (i == 9) {
			snprintf(nl, sizeof(nl), "%s\n", flow_line);
			l = nl;
		}
		metrics_observe_raw(&g_m, l, strlen(l));
	}
	metrics_observe_raw(&g_m, "{not a line}", 12);
}

static bool has_line(const char *text, const char *line, char *why)
{
	const char *p = text;
	size_t n = strlen(line);

	while ((p = strstr(p, line))) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
		p++;
	}
	snprintf(why, WHY_LEN, "the exposition has the line\n#   %s", line);
	return false;
}

static bool t_metrics_render(char *why)
{
	static const char *const want[] = {
		"# TYPE sluice_decisions_total counter",
		"sluice_build_info{version=\"0.1.0-\\\"t\\\\\"} 1",
		"sluice_decisions_total{decision=\"deny\",enforced=\"true\",reason=\"default_"
		"deny\","
		"hook=\"connect4\"} 2",
		"sluice_decisions_total{decision=\"deny\",enforced=\"false\",reason=\"default_"
		"deny\","
		"hook=\"connect6\"} 1",
		"sluice_decisions_total{decision=\"allow\",enforced=\"true\",reason=\"rule\","
		"hook=\"connect4\"} 1",
		"sluice_decisions_total{decision=\"other\",enforced=\"true\",reason=\"other\","
		"hook=\"other\"} 1",
		"sluice_tls_total{decision=\"deny\",reason=\"sni_mismatch\"} 1",
		"sluice_dns_answers_total{decision=\"deny\",rcode=\"NXDOMAIN\"} 1",
		"sluice_flows_total 2",
		"sluice_flow_bytes_total{direction=\"request\"} 200",
		"sluice_flow_bytes_total{direction=\"response\"} 4000",
		"sluice_events_lost_total{hook=\"connect4\"} 5",
		"sluice_events_lost_total{hook=\"log\"} 0",
		"sluice_runs_started_total{mode=\"enforce\"} 1",
		"sluice_runs_started_total{mode=\"report\"} 1",
		"sluice_runs_ended_total{mode=\"enforce\"} 1",
		"sluice_runs_active{mode=\"enforce\"} 1",
		"sluice_runs_active{mode=\"report\"} 0",
		"sluice_mode_changes_total{mode=\"enforce\"} 1",
		"sluice_mode_changes_total{mode=\"report\"} 0",
		"sluice_policy_changes_total 1",
		"sluice_log_lines_total{type=\"decision\"} 5",
		"sluice_metrics_malformed_lines_total 1",
	};
	char *text = NULL;
	size_t len, i;
	bool ok = true;

	observe_all();
	EXPECT(!metrics_render(&g_m, &text, &len) && strlen(text) == len, "a rendering");
	for (i = 0; i < ARRAY_SIZE(want) && ok; i++)
		ok = has_line(text, want[i], why);
	if (ok && (strstr(text, "smoke2") || strstr(text, "other-run") || strstr(text, "evil") ||
		   strstr(text, "198.51.100") || strstr(text, "maybe"))) {
		snprintf(why, WHY_LEN, "no run id, host, address or unlisted value in the text");
		ok = false;
	}
	if (!ok)
		printf("# the text:\n%s", text);
	free(text);
	metrics_free(&g_m);
	return ok;
}

static bool t_textfile(char *why)
{
	char dir[] = "/tmp/sl-metrics-XXXXXX", path[64], *text = NULL, *want = NULL;
	struct dirent *de;
	struct stat st;
	size_t len, wlen;
	int files = 0;
	FILE *f;
	DIR *d;
	bool ok;

	EXPECT(mkdtemp(dir), "a temp dir");
	snprintf(path, sizeof(path), "%s/sluice.prom", dir);
	observe_all();
	metrics_render(&g_m, &want, &wlen);
	ok = !metrics_write_textfile(&g_m, path) && !metrics_write_textfile(&g_m, path);
	metrics_free(&g_m);
	f = fopen(path, "r");
	if (f) {
		text = calloc(1, wlen + 2);
		len = fread(text, 1, wlen + 1, f);
		fclose(f);
		ok = ok && len == wlen && !memcmp(text, want, wlen);
	} else {
		ok = false;
	}
	ok = ok && !stat(path, &st) && (st.st_mode & 0777) == 0644;
	d = opendir(dir);
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			files++;
	if (d)
		closedir(d);
	unlink(path);
	rmdir(dir);
	free(text);
	free(want);
	EXPECT(ok && files == 1,
	       "the file equals the rendering, mode 0644, and is alone in its "
	       "directory (%d files)",
	       files);
	return true;
}

/* One exchange with the responder: send req, drive its poll loop, return what came back. */
static bool http_exchange(struct metrics_http *h, const char *req, size_t req_len, char *resp,
			  size_t size, char *why)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	struct pollfd fds[METRICS_HTTP_POLLFDS];
	size_t got = 0, n;
	int c, i;

	EXPECT(!getsockname(metrics_http_listen_fd(h), (struct sockaddr *)&sa, &sl), "its port");
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	EXPECT(c >= 0, "a socket");
	connect(c, (struct sockaddr *)&sa, sl);
	for (i = 0; i < 200; i++) {
		ssize_t r;

		if (req_len) {
			r = send(c, req, req_len, MSG_NOSIGNAL);
			if (r > 0) {
				req += r;
				req_len -= (size_t)r;
			}
		}
		n = metrics_http_pollfds(h, fds, ARRAY_SIZE(fds));
		if (poll(fds, n, 10) > 0)
			metrics_http_handle(h, fds, n);
		r = recv(c, resp + got, size - 1 - got, 0);
		if (r == 0)
			break;
		if (r > 0)
			got += (size_t)r;
	}
	close(c);
	resp[got] = '\0';
	return true;
}

static bool t_http(char *why)
{
	static char resp[1 << 16];
	char big[METRICS_HTTP_REQ_MAX + 100];
	struct metrics_http *h = NULL;
	int err;

	observe_all();
	err = metrics_http_new(&h, "127.0.0.1:0", &g_m);
	EXPECT(!err, "a listener on 127.0.0.1:0; got %s", strerror(-err));
	if (!http_exchange(h, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 35, resp, sizeof(resp),
			   why))
		goto fail;
	if (!strstr(resp, "HTTP/1.0 200 OK\r\n") ||
	    !strstr(resp, "\r\n\r\n# HELP sluice_build_info") ||
	    !strstr(resp, "\nsluice_flows_total 2\n")) {
		snprintf(why, WHY_LEN, "200 with the metrics; got %.300s", resp);
		goto fail;
	}
	http_exchange(h, "POST /metrics HTTP/1.0\r\n\r\n", 26, resp, sizeof(resp), why);
	if (strncmp(resp, "HTTP/1.0 405 ", 13) || !strstr(resp, "Allow: GET")) {
		snprintf(why, WHY_LEN, "405 for POST; got %.200s", resp);
		goto fail;
	}
	http_exchange(h, "GET /metricsx HTTP/1.0\n\n", 24, resp, sizeof(resp), why);
	if (strncmp(resp, "HTTP/1.0 404 ", 13)) {
		snprintf(why, WHY_LEN, "404 for /metricsx; got %.200s", resp);
		goto fail;
	}
	http_exchange(h, "GARBAGE\r\n\r\n", 11, resp, sizeof(resp), why);
	if (strncmp(resp, "HTTP/1.0 400 ", 13)) {
		snprintf(why, WHY_LEN, "400 for garbage; got %.200s", resp);
		goto fail;
	}
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.0\r\nX: ", 26);
	http_exchange(h, big, sizeof(big), resp, sizeof(resp), why);
	if (strncmp(resp, "HTTP/1.0 431 ", 13)) {
		snprintf(why, WHY_LEN, "431 for an endless header; got %.200s", resp);
		goto fail;
	}
	EXPECT(metrics_http_timeout_ms(h) == -1, "no client left waiting");
	metrics_http_free(h);
	metrics_free(&g_m);
	return true;
fail:
	metrics_http_free(h);
	metrics_free(&g_m);
	return false;
}

static bool t_http_addr(char *why)
{
	struct sockaddr_in6 sa;
	unsigned int len;

	EXPECT(!metrics_http_parse_addr("127.0.0.1:9477", &sa, &len) && len == 16, "v4");
	EXPECT(!metrics_http_parse_addr("[::1]:9477", &sa, &len) && len == sizeof(sa), "v6");
	EXPECT(!metrics_http_parse_addr("9477", &sa, &len) && len == 16, "a port alone");
	EXPECT(metrics_http_parse_addr("localhost:9477", &sa, &len) == -EINVAL, "names refused");
	EXPECT(metrics_http_parse_addr("127.0.0.1:70000", &sa, &len) == -EINVAL, "port range");
	EXPECT(metrics_http_parse_addr("127.0.0.1:", &sa, &len) == -EINVAL, "no port");
	EXPECT(metrics_http_parse_addr("::1:9477", &sa, &len) == -EINVAL, "v6 needs brackets");
	return true;
}

/* A record of type and version as the ring buffer holds it, the right size for the type. */
static size_t record(void *buf, __u16 type, __u8 version)
{
	size_t size = type == SL_EV_FLOW ? sizeof(struct sl_flow_event) :
		      type == SL_EV_TLS	 ? sizeof(struct sl_tls_event) :
					   sizeof(struct sl_decision_event);
	struct sl_event_hdr h = {.type = type, .version = version, .size = (__u32)size};

	memset(buf, 0, size);
	memcpy(buf, &h, sizeof(h));
	return size;
}

/*
 * The record parser's versions: each type's layout has its own. The flow record took
 * deny_reason at version 2 and a 32-bit era at 3 (a record 8 bytes longer): a writer reads only
 * its own runs' (a pinned run of another build is refused), and refuses the others; decisions
 * and TLS records stay at 1.
 */
static bool t_record_versions(char *why)
{
	static const struct {
		__u16 type;
		__u8 version;
		const char *want; /* NULL: read */
	} v[] = {
		{SL_EV_DECISION, 1, NULL},
		{SL_EV_TLS, 1, NULL},
		{SL_EV_FLOW, 3, NULL},
		{SL_EV_FLOW, 1, "unknown ABI version"},
		{SL_EV_FLOW, 2, "unknown ABI version"},
		{SL_EV_DECISION, 0, "unknown ABI version"},
		{SL_EV_DECISION, 2, "unknown ABI version"},
		{SL_EV_TLS, 2, "unknown ABI version"},
		{SL_EV_FLOW, 0, "unknown ABI version"},
		{SL_EV_FLOW, 4, "unknown ABI version"},
		{4, 1, "unknown record type"},
	};
	_Alignas(8) unsigned char buf[sizeof(struct sl_tls_event)];
	struct sl_flow_event *f = (struct sl_flow_event *)buf;
	const char *got;
	size_t i, n;

	EXPECT(SL_FLOW_VERSION == 3, "flow records at version 3, got %d", SL_FLOW_VERSION);
	for (i = 0; i < ARRAY_SIZE(v); i++) {
		n = record(buf, v[i].type, v[i].version);
		got = events_check(buf, n);
		EXPECT(got == v[i].want || (got && v[i].want && !strcmp(got, v[i].want)),
		       "type %u version %u: %s, got %s", v[i].type, v[i].version,
		       v[i].want ? v[i].want : "read", got ? got : "read");
	}
	n = record(buf, SL_EV_FLOW, SL_FLOW_VERSION);
	EXPECT(events_check(buf, n - 8), "a flow record cut short is refused");
	f->hdr.size = (__u32)n + 8;
	EXPECT(events_check(buf, n), "a flow record whose header says another size is refused");
	return true;
}

static const struct tap_case cases[] = {
	{"record parser: each type's known versions read, newer ones refused (flow 3, decision and "
	 "TLS 1)",
	 t_record_versions},
	{"--decision deny: deny and report-mode deny lines, dns deny; not allow",
	 t_filter_decision},
	{"--run-id: exactly that run", t_filter_run},
	{"--host: a glob on host (any case), sni, dst, any of hosts", t_filter_host},
	{"--type: a comma list; filters combine", t_filter_type},
	{"compact lines: time, run, type, verdict, target, fields, pid/comm", t_compact},
	{"compact: -ENOSPC when the buffer is short", t_compact_short},
	{"metrics: counts (a line with its newline too), label escaping, no unbounded label values",
	 t_metrics_render},
	{"metrics textfile: whole, 0644, no temp file left", t_textfile},
	{"metrics HTTP: 200 GET /metrics, 405, 404, 400, 431", t_http},
	{"metrics listen addresses", t_http_addr},
};

int main(void)
{
	return tap_run(cases, ARRAY_SIZE(cases));
}
