// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "control.h"
#include "events_cmd.h"
#include "metrics.h"

#define FOLLOW_POLL_NS (100 * 1000 * 1000) /* how often -f looks for new bytes or a rotation */

/* ------------------------------------------------------------------------------------------ */
/* Filters */

/* A string member decoded; false when absent, not a string, too long or holding a NUL. */
static bool get_str(const struct jsonline *jl, const char *key, char *buf, size_t size)
{
	int n = jsonline_str(jl, key, buf, size);

	return n >= 0 && strlen(buf) == (size_t)n;
}

static bool type_listed(const char *types, const char *type)
{
	size_t tl = strlen(type);
	const char *p = types;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == tl && !memcmp(p, type, n))
			return true;
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

bool events_filter_match(const struct events_filter *f, const struct jsonline *jl)
{
	static const char *const host_keys[] = {"host", "sni", "name", "dst"};
	const struct jsonline_member *hosts;
	struct jsonline_value name;
	char v[JSONLINE_MAX + 1];
	size_t i, pos = 0;

	if (f->types && (!get_str(jl, "type", v, sizeof(v)) || !type_listed(f->types, v)))
		return false;
	if (f->run_id && (!get_str(jl, "run_id", v, sizeof(v)) || strcmp(v, f->run_id)))
		return false;
	if (f->decision && (!get_str(jl, "decision", v, sizeof(v)) || strcmp(v, f->decision)))
		return false;
	if (!f->host)
		return true;
	for (i = 0; i < sizeof(host_keys) / sizeof(host_keys[0]); i++)
		if (get_str(jl, host_keys[i], v, sizeof(v)) && !fnmatch(f->host, v, FNM_CASEFOLD))
			return true;
	/* a shared address's candidates (sluice-log(5) "hosts"): the line may be about any */
	hosts = jsonline_get(jl, "hosts");
	while (hosts && jsonline_array_next(jl, &hosts->v, &pos, &name) == 1) {
		int n = jsonline_decode(jl, &name, v, sizeof(v));

		/* as get_str: a name with a NUL in it is no name */
		if (n >= 0 && strlen(v) == (size_t)n && !fnmatch(f->host, v, FNM_CASEFOLD))
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------------------------------ */
/* The compact line */

struct sb {
	char *buf;
	size_t size, len;
	bool overflow;
};

static void sb_putc(struct sb *s, char c)
{
	if (s->len + 1 < s->size)
		s->buf[s->len++] = c;
	else
		s->overflow = true;
	s->buf[s->len] = '\0';
}

static void sb_puts(struct sb *s, const char *str)
{
	for (; *str; str++)
		sb_putc(s, *str);
}

/* Bytes from the log: printable ASCII as is, anything else (space too) as \xHH. */
static void sb_safe(struct sb *s, const char *v, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c > 0x20 && c < 0x7f && c != '\\') {
			sb_putc(s, (char)c);
		} else {
			sb_putc(s, '\\');
			sb_putc(s, 'x');
			sb_putc(s, hex[c >> 4]);
			sb_putc(s, hex[c & 15]);
		}
	}
}

/*
 * A member's value for display: strings decoded (then made safe), integers and booleans as
 * written; false when absent or null.
 */
static bool sb_value(struct sb *s, const struct jsonline *jl, const char *key)
{
	const struct jsonline_member *m = jsonline_get(jl, key);
	char v[JSONLINE_MAX + 1];
	int n;

	if (!m || m->v.kind == JSONLINE_NULL)
		return false;
	if (m->v.kind == JSONLINE_STRING) {
		n = jsonline_decode(jl, &m->v, v, sizeof(v));
		if (n < 0)
			return false;
		sb_safe(s, v, (size_t)n);
	} else {
		sb_safe(s, jl->line + m->v.off, m->v.len);
	}
	return true;
}

static bool has(const struct jsonline *jl, const char *key)
{
	const struct jsonline_member *m = jsonline_get(jl, key);

	return m && m->v.kind != JSONLINE_NULL;
}

static void sb_time(struct sb *s, int64_t ts_us)
{
	time_t secs = (time_t)(ts_us / 1000000);
	struct tm tm;
	char t[64];

	if (ts_us < 0 || !gmtime_r(&secs, &tm)) {
		snprintf(t, sizeof(t), "ts=%" PRId64, ts_us);
	} else {
		size_t n = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);

		snprintf(t + n, sizeof(t) - n, ".%03dZ", (int)(ts_us % 1000000 / 1000));
	}
	sb_puts(s, t);
}

/* A line's "hosts" (and "hosts_more") as {a,b,+N}: false if it has none. */
static bool sb_hosts(struct sb *s, const struct jsonline *jl)
{
	const struct jsonline_member *m = jsonline_get(jl, "hosts");
	struct jsonline_value name;
	char v[JSONLINE_MAX + 1];
	size_t pos = 0, n = 0;
	uint64_t more = 0;
	int len;

	while (m && jsonline_array_next(jl, &m->v, &pos, &name) == 1) {
		len = jsonline_decode(jl, &name, v, sizeof(v));
		if (len < 0)
			continue;
		sb_putc(s, n++ ? ',' : '{');
		sb_safe(s, v, (size_t)len);
	}
	if (!n)
		return false;
	if (!jsonline_u64(jl, "hosts_more", &more) && more) {
		snprintf(v, sizeof(v), ",+%" PRIu64, more);
		sb_puts(s, v);
	}
	sb_putc(s, '}');
	return true;
}

/* dst:port/proto, IPv6 in brackets; or what (socket kinds, options, families); or ifindex. */
static void sb_target(struct sb *s, const struct jsonline *jl, const char *type)
{
	char dst[64];
	bool host = false;

	if (!strcmp(type, "dns")) {
		if (!sb_value(s, jl, "host"))
			sb_putc(s, '-');
		if (has(jl, "qtype")) {
			sb_putc(s, '/');
			sb_value(s, jl, "qtype");
		}
		return;
	}
	if (has(jl, "host")) {
		sb_value(s, jl, "host");
		host = true;
	} else if (has(jl, "hosts")) {
		/* a shared address: its candidates, {a,b,+N} with N more it does not list */
		host = sb_hosts(s, jl);
	}
	if (has(jl, "dst")) {
		if (host)
			sb_putc(s, '=');
		if (get_str(jl, "dst", dst, sizeof(dst)) && strchr(dst, ':')) {
			sb_putc(s, '[');
			sb_value(s, jl, "dst");
			sb_putc(s, ']');
		} else {
			sb_value(s, jl, "dst");
		}
		if (has(jl, "port")) {
			sb_putc(s, ':');
			sb_value(s, jl, "port");
		}
		if (has(jl, "proto")) {
			sb_putc(s, '/');
			sb_value(s, jl, "proto");
		}
	} else if (has(jl, "what") && !strcmp(type, "decision")) {
		if (host)
			sb_putc(s, '=');
		sb_value(s, jl, "what");
	} else if (!host) {
		sb_putc(s, '-');
	}
}

int events_compact(const struct jsonline *jl, char *buf, size_t size)
{
	/* What each line is about, after its target; each shown as key=value when present. */
	static const char *const keys[] = {
		"rule",	 "reason",	"hook",	     "sni",	   "rcode",	  "why",
		"mode",	 "prev_mode",	"condition", "cap",	   "flow",	  "count",
		"total", "exit_status", "req_bytes", "resp_bytes", "duration_ms", "flows",
		"errno", "family",	"ifindex",   "size",
	};
	struct sb s = {.buf = buf, .size = size};
	char type[64];
	const struct jsonline_member *m;
	size_t i;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	if (!get_str(jl, "type", type, sizeof(type)))
		snprintf(type, sizeof(type), "?");
	sb_time(&s, jl->ts);
	sb_putc(&s, ' ');
	if (!sb_value(&s, jl, "run_id"))
		sb_putc(&s, '-');
	sb_putc(&s, ' ');
	sb_safe(&s, type, strlen(type));
	sb_putc(&s, ' ');
	if (sb_value(&s, jl, "decision")) {
		m = jsonline_get(jl, "enforced");
		if (m && m->v.kind == JSONLINE_FALSE)
			sb_puts(&s, "(report)");
	} else {
		sb_putc(&s, '-');
	}
	sb_putc(&s, ' ');
	sb_target(&s, jl, type);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!has(jl, keys[i]))
			continue;
		/* a connect's family is in its address; seccomp's (vsock, packet…) is news */
		if (!strcmp(keys[i], "family") && !has(jl, "what"))
			continue;
		sb_putc(&s, ' ');
		sb_puts(&s, keys[i]);
		sb_putc(&s, '=');
		sb_value(&s, jl, keys[i]);
	}
	if (has(jl, "pid")) {
		sb_putc(&s, ' ');
		sb_value(&s, jl, "pid");
		if (has(jl, "comm")) {
			sb_putc(&s, '/');
			sb_value(&s, jl, "comm");
		}
	}
	return s.overflow ? -ENOSPC : (int)s.len;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading lines: files, rotated segments, stdin, the daemon */

struct reader {
	/* what to do with each line */
	const struct events_filter *filter;
	bool json;
	struct metrics *metrics; /* sluice metrics: count, print nothing */
	const char *prog;
	struct jsonline *jl;
	uint64_t malformed;
	/* the current source */
	const char *label;
	uint64_t lineno;
	char line[JSONLINE_MAX + 1];
	size_t len;
	bool overlong;
	char out[2 * JSONLINE_MAX + 64];
};

static void malformed(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void malformed(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	r->malformed++;
	if (r->metrics)
		r->metrics->malformed++;
	fprintf(stderr, "%s: %s:%" PRIu64 ": ", r->prog, r->label, r->lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void line_done(struct reader *r)
{
	const char *why;
	size_t off;
	int n;

	r->lineno++;
	if (r->overlong) {
		malformed(r, "longer than %d bytes; skipped", JSONLINE_MAX);
		goto out;
	}
	if (jsonline_parse(r->jl, r->line, r->len, &off, &why)) {
		malformed(r, "byte %zu: %s; skipped", off + 1, why);
		goto out;
	}
	if (r->metrics) {
		metrics_observe(r->metrics, r->jl);
		goto out;
	}
	if (!events_filter_match(r->filter, r->jl))
		goto out;
	if (r->json) {
		fwrite(r->line, 1, r->len, stdout);
		putchar('\n');
	} else {
		n = events_compact(r->jl, r->out, sizeof(r->out));
		fputs(r->out, stdout);
		puts(n < 0 ? "..." : "");
	}
out:
	r->len = 0;
	r->overlong = false;
}

static void feed(struct reader *r, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (r->overlong || r->len + take > JSONLINE_MAX) {
			r->overlong = true;
		} else {
			memcpy(r->line + r->len, p, take);
			r->len += take;
		}
		if (!nl)
			return;
		line_done(r);
		p = nl + 1;
		n -= take + 1;
	}
}

static void source_begin(struct reader *r, const char *label)
{
	r->label = label;
	r->lineno = 0;
	r->len = 0;
	r->overlong = false;
}

/* The end of a file: bytes after its last newline are a torn line, never a record. */
static void source_end(struct reader *r)
{
	if (!r->len && !r->overlong)
		return;
	r->lineno++;
	malformed(r, "no newline at the end of the file (a torn last line); skipped");
	r->len = 0;
	r->overlong = false;
}

/* A whole file (a .gz segment, a plain one, stdin) to its end. 0 or -errno. */
static int read_whole(struct reader *r, int fd, const char *label)
{
	char buf[65536];
	gzFile gz;
	int n, err = 0;

	gz = gzdopen(fd, "rb"); /* plain files and pipes pass through as they are */
	if (!gz) {
		close(fd);
		return -ENOMEM;
	}
	source_begin(r, label);
	while ((n = gzread(gz, buf, sizeof(buf))) > 0)
		feed(r, buf, (size_t)n);
	if (n < 0) {
		int zerr;
		const char *msg = gzerror(gz, &zerr);

		fprintf(stderr, "%s: %s: %s\n", r->prog, label,
			zerr == Z_ERRNO ? strerror(errno) : msg);
		err = zerr == Z_ERRNO ? -errno : -EIO;
	}
	source_end(r);
	gzclose(gz);
	return err;
}

/* Segment k of the log at path, as verify reads it: LOG.k (when both exist), else LOG.k.gz. */
static bool segment_path(const char *path, unsigned int k, char *buf, size_t size)
{
	struct stat st;
	int n;

	n = snprintf(buf, size, "%s.%06u", path, k);
	if (n < 0 || (size_t)n >= size)
		return false;
	if (!stat(buf, &st))
		return true;
	n = snprintf(buf, size, "%s.%06u.gz", path, k);
	return n > 0 && (size_t)n < size && !stat(buf, &st);
}

static void nap(void)
{
	struct timespec ts = {.tv_nsec = FOLLOW_POLL_NS};

	nanosleep(&ts, NULL);
}

/*
 * -f on the live file fd: every new line as the writer adds it, until the writer rotates it
 * (renames it to LOG.NNNNNN and creates a new LOG): then what it wrote before the rename is
 * read through fd, which is closed, and 1 returned. A file cut back (truncated) is read again
 * from its start, said on stderr. Returns 1, or -errno.
 */
static int follow_fd(struct reader *r, int fd, const char *path)
{
	char buf[65536];
	struct stat st, cur;
	off_t pos = 0;
	ssize_t n;
	int err;

	if (fstat(fd, &cur)) {
		err = -errno;
		goto fail;
	}
	source_begin(r, path);
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto fail;
		}
		if (n > 0) {
			feed(r, buf, (size_t)n);
			pos += n;
			continue;
		}
		fflush(stdout);
		if (stat(path, &st) || st.st_ino != cur.st_ino || st.st_dev != cur.st_dev)
			break;
		if (st.st_size < pos) {
			fprintf(stderr, "%s: %s: file truncated; reading it from the start\n",
				r->prog, path);
			if (lseek(fd, 0, SEEK_SET) < 0) {
				err = -errno;
				goto fail;
			}
			pos = 0;
			source_begin(r, path);
			continue;
		}
		nap();
	}
	/* Rotated: the lines written before the rename (the rotate checkpoint last). */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		feed(r, buf, (size_t)n);
	source_end(r);
	close(fd);
	fflush(stdout);
	return 1;
fail:
	fprintf(stderr, "%s: %s: %s\n", r->prog, path, strerror(-err));
	close(fd);
	return err;
}

/*
 * A log as verify reads it: its rotated segments LOG.000001(.gz), LOG.000002(.gz), … then LOG;
 * with follow, LOG is followed as it grows and, like tail -F, across the writer's rotations.
 * Segment numbers keep the order exact when rotations come faster than the polls: the file
 * opened as LOG is known to become segment k (LOG.k did not exist once it was open), so after
 * its rotation the next file is LOG.k+1 if it exists already, else the new LOG. A LOG that does
 * not exist yet is waited for when following. Returns 0 (follow: only on an error), or -errno.
 */
static int read_log(struct reader *r, const char *path, bool follow_it)
{
	char seg[PATH_MAX];
	unsigned int k = 1;
	int fd, err;

	for (;;) {
		if (segment_path(path, k, seg, sizeof(seg))) {
			fd = open(seg, O_RDONLY | O_CLOEXEC);
			if (fd < 0 && errno == ENOENT) /* its plain copy, compressed meanwhile */
				continue;
			if (fd < 0) {
				err = -errno;
				fprintf(stderr, "%s: %s: %m\n", r->prog, seg);
				return err;
			}
			err = read_whole(r, fd, seg);
			if (err)
				return err;
			k++;
			continue;
		}
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && follow_it) {
			nap();
			continue;
		}
		if (fd < 0) {
			err = -errno;
			fprintf(stderr, "%s: %s: %m%s\n", r->prog, path,
				k > 1 ? " (rotated segments without it: an unsealed log, or a "
					"rotation under way)"
				      : "");
			return err;
		}
		if (segment_path(path, k, seg, sizeof(seg))) { /* a rotation since the check */
			close(fd);
			continue;
		}
		if (!follow_it)
			return read_whole(r, fd, path);
		err = follow_fd(r, fd, path);
		if (err < 0)
			return err;
		k++;
	}
}

static int from_daemon(struct reader *r, const char *run_id)
{
	static struct control_msg msg;
	static char reply[CONTROL_LINE_MAX];
	const char *sock = control_socket_path(NULL);
	char why[512];
	ssize_t n;
	int fd, err;

	fd = control_connect(sock);
	if (fd < 0) {
		fprintf(stderr,
			"%s: cannot reach the daemon at %s: %s (give a log FILE, or start "
			"sluice daemon)\n",
			r->prog, sock, strerror(-fd));
		return fd;
	}
	control_msg_begin(&msg);
	control_msg_str(&msg, "op", "events");
	if (run_id)
		control_msg_str(&msg, "run_id", run_id);
	err = control_msg_end(&msg);
	if (!err)
		err = control_call(fd, msg.buf, reply, sizeof(reply));
	if (err == -EPROTO) {
		control_reply_error(reply, why, sizeof(why));
		fprintf(stderr, "%s: the daemon refused: %s\n", r->prog, why);
		goto out;
	}
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", r->prog, sock, strerror(-err));
		goto out;
	}
	source_begin(r, "daemon");
	for (;;) {
		n = control_read_line(fd, r->line, sizeof(r->line));
		if (n == -ETIMEDOUT)
			continue;
		if (n == -EMSGSIZE) {
			r->len = 0;
			r->overlong = true;
			line_done(r);
			continue;
		}
		if (n <= 0) {
			err = (int)n;
			if (n == -EPIPE) /* the daemon cuts the line of a viewer it drops */
				fprintf(stderr,
					"%s: the daemon dropped this viewer mid-line (it did not "
					"keep up); lines are missing here: the runs' logs have "
					"them all\n",
					r->prog);
			else if (n < 0)
				fprintf(stderr, "%s: the daemon's stream: %s\n", r->prog,
					strerror((int)-n));
			break;
		}
		r->len = (size_t)n;
		line_done(r);
		fflush(stdout);
	}
out:
	close(fd);
	return err;
}

/* ------------------------------------------------------------------------------------------ */
/* sluice events */

static void events_usage(FILE *out)
{
	fprintf(out,
		"NAME\n"
		"    sluice events - show a sluice log's records, filtered, live or after the "
		"fact\n"
		"\n"
		"SYNOPSIS\n"
		"    sluice events [-f] [--run-id ID] [--decision VERDICT] [--host GLOB]\n"
		"                  [--type T[,T...]] [-o json|compact] [FILE|-]\n"
		"\n"
		"DESCRIPTION\n"
		"    Reads the log FILE (its rotated segments FILE.000001(.gz), ... first), or\n"
		"    standard input for -, or without FILE the daemon's live stream of every "
		"run's\n"
		"    lines ($SLUICE_SOCKET, default " CONTROL_SOCKET_DEFAULT
		"). Each line is parsed\n"
		"    in the log's strict canonical form; a line that is not is reported on stderr\n"
		"    with its file, line number, byte and why, and reading goes on. Nothing here\n"
		"    checks signatures or the hash chain: that is sluice verify.\n"
		"\n"
		"OPTIONS\n"
		"    -f, --follow       after the end of FILE, print lines as they are written,\n"
		"                       across the writer's rotations (like tail -F) until "
		"killed;\n"
		"                       a FILE that does not exist yet is waited for\n"
		"    -r, --run-id ID    only lines of run ID (sent to the daemon for its stream)\n"
		"    -d, --decision V   only lines whose decision is V: allow or deny "
		"(report-mode\n"
		"                       denials included), and for dns lines also refused, error\n"
		"    -H, --host GLOB    only lines whose host, sni, name or dst matches the shell\n"
		"                       glob GLOB, case-insensitively (*.example.com, "
		"198.51.100.*)\n"
		"    -t, --type T       only lines of type T (decision, dns, tls, flow, flow_cut,\n"
		"                       run_start, run_end, loss, ...); several: T1,T2\n"
		"    -o, --output FMT   json: the lines exactly as logged (default when stdout is\n"
		"                       not a terminal); compact: one line per record (default on "
		"a\n"
		"                       terminal): UTC time, run, type, verdict ((report) when "
		"not\n"
		"                       enforced), host=dst:port/proto, rule=, reason=, ...,\n"
		"                       pid/comm; bytes outside printable ASCII shown as \\xHH\n"
		"    -h, --help         this text\n"
		"\n"
		"EXAMPLE\n"
		"    sluice events -f -o compact --decision deny /var/log/sluice/ci-4711.jsonl\n"
		"    2026-12-02T01:11:12.429Z ci-4711 decision deny 198.51.100.20:80/tcp "
		"rule=default\n"
		"        reason=default_deny hook=connect4 4506/curl\n"
		"\n"
		"EXIT STATUS\n"
		"    0 every line was well formed; 1 some were not (each reported), or a file or\n"
		"    the daemon could not be read; 2 usage.\n");
}

static bool one_of(const char *v, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(v, *set))
			return true;
	return false;
}

static struct reader *reader_new(const char *prog)
{
	struct reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->jl = malloc(sizeof(*r->jl));
	if (!r->jl) {
		free(r);
		return NULL;
	}
	r->prog = prog;
	return r;
}

static void reader_free(struct reader *r)
{
	if (!r)
		return;
	free(r->jl);
	free(r);
}

int events_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"follow", no_argument, NULL, 'f'},
		{"run-id", required_argument, NULL, 'r'},
		{"decision", required_argument, NULL, 'd'},
		{"host", required_argument, NULL, 'H'},
		{"type", required_argument, NULL, 't'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	static const char *const verdicts[] = {"allow", "deny", "refused", "error", NULL};
	struct events_filter f = {0};
	const char *file = NULL, *fmt = NULL;
	bool follow_it = false;
	struct reader *r;
	int c, fd, err = 0;

	while ((c = getopt_long(argc, argv, "+fr:d:H:t:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			follow_it = true;
			break;
		case 'r':
			f.run_id = optarg;
			break;
		case 'd':
			if (!one_of(optarg, verdicts)) {
				fprintf(stderr,
					"sluice events: --decision %s: want allow, deny, "
					"refused or error\n",
					optarg);
				return 2;
			}
			f.decision = optarg;
			break;
		case 'H':
			f.host = optarg;
			break;
		case 't':
			if (!*optarg || strspn(optarg, "abcdefghijklmnopqrstuvwxyz0123456789_,") !=
						strlen(optarg)) {
				fprintf(stderr,
					"sluice events: --type %s: want type names "
					"([a-z0-9_]), separated by commas\n",
					optarg);
				return 2;
			}
			f.types = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "json") && strcmp(optarg, "compact")) {
				fprintf(stderr, "sluice events: -o %s: want json or compact\n",
					optarg);
				return 2;
			}
			fmt = optarg;
			break;
		case 'h':
			events_usage(stdout);
			return 0;
		default:
			events_usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		file = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "sluice events: one FILE at most (got \"%s\" too)\n", argv[optind]);
		return 2;
	}
	r = reader_new("sluice events");
	if (!r) {
		fprintf(stderr, "sluice events: out of memory\n");
		return 1;
	}
	r->filter = &f;
	r->json = fmt ? !strcmp(fmt, "json") : !isatty(STDOUT_FILENO);
	/* A live view shows each line when it comes, not when a buffer fills. */
	if (follow_it || !file)
		setvbuf(stdout, NULL, _IOLBF, 0);
	if (!file) {
		err = from_daemon(r, f.run_id);
	} else if (!strcmp(file, "-")) {
		fd = dup(STDIN_FILENO);
		err = fd < 0 ? -errno : read_whole(r, fd, "stdin");
	} else {
		err = read_log(r, file, follow_it);
	}
	fflush(stdout);
	c = err || r->malformed ? 1 : 0;
	if (r->malformed)
		fprintf(stderr, "sluice events: %" PRIu64 " malformed line(s) skipped\n",
			r->malformed);
	reader_free(r);
	return c;
}

/* ------------------------------------------------------------------------------------------ */
/* sluice metrics */

static void metrics_usage(FILE *out)
{
	fprintf(out,
		"NAME\n"
		"    sluice metrics - Prometheus metrics of sluice logs\n"
		"\n"
		"SYNOPSIS\n"
		"    sluice metrics [--textfile PATH] LOG|- ...\n"
		"\n"
		"DESCRIPTION\n"
		"    Counts the records of the logs given (each with its rotated segments; - for\n"
		"    standard input) into the metrics sluice daemon serves on --metrics-listen, "
		"and\n"
		"    prints them in the Prometheus text format. Labels take values from fixed "
		"sets\n"
		"    (verdict, reason, hook, rcode, mode, line type; anything else is \"other\"):\n"
		"    never a run id, host or address. A malformed line is reported on stderr with\n"
		"    its line number and counted in sluice_metrics_malformed_lines_total.\n"
		"\n"
		"OPTIONS\n"
		"    -t, --textfile PATH   write them to PATH instead (for node-exporter's "
		"textfile\n"
		"                          collector: PATH should end in .prom), atomically: a\n"
		"                          temporary file in PATH's directory renamed over it\n"
		"    -h, --help            this text\n"
		"\n"
		"EXIT STATUS\n"
		"    0 done; 1 a log could not be read or had malformed lines (the metrics are\n"
		"    still written); 2 usage.\n");
}

int metrics_cmd_main(int argc, char **argv, const char *version)
{
	static const struct option opts[] = {
		{"textfile", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *textfile = NULL;
	struct metrics *m = NULL;
	struct reader *r = NULL;
	char *body = NULL;
	size_t len;
	int c, fd, err = 0, rc = 1;

	while ((c = getopt_long(argc, argv, "+t:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			textfile = optarg;
			break;
		case 'h':
			metrics_usage(stdout);
			return 0;
		default:
			metrics_usage(stderr);
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "sluice metrics: no LOG given\n");
		metrics_usage(stderr);
		return 2;
	}
	m = malloc(sizeof(*m));
	r = reader_new("sluice metrics");
	if (!m || !r) {
		fprintf(stderr, "sluice metrics: out of memory\n");
		goto out;
	}
	metrics_init(m, version);
	r->metrics = m;
	for (; optind < argc; optind++) {
		const char *file = argv[optind];
		int e;

		if (!strcmp(file, "-")) {
			fd = dup(STDIN_FILENO);
			e = fd < 0 ? -errno : read_whole(r, fd, "stdin");
		} else {
			e = read_log(r, file, false);
		}
		if (e && !err)
			err = e;
	}
	if (textfile) {
		c = metrics_write_textfile(m, textfile);
		if (c) {
			fprintf(stderr, "sluice metrics: writing %s: %s\n", textfile, strerror(-c));
			goto out;
		}
	} else {
		if (metrics_render(m, &body, &len)) {
			fprintf(stderr, "sluice metrics: out of memory\n");
			goto out;
		}
		fwrite(body, 1, len, stdout);
		if (fflush(stdout)) {
			fprintf(stderr, "sluice metrics: stdout: %m\n");
			goto out;
		}
	}
	rc = err || r->malformed ? 1 : 0;
out:
	free(body);
	if (m)
		metrics_free(m);
	free(m);
	reader_free(r);
	return rc;
}
