// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice resume: take over a run whose writer died (SIGKILL, OOM, a crash). The run's programs
 * went on judging its processes from their pins; what stopped is the log, the run's resolver and
 * the run's end. In order, and nothing is changed until every check has passed:
 *   - the log's first lines say how the run was started (run_start: policy and its digest,
 *     cgroup, namespace, upstream); the policy must be the very one;
 *   - the pins are opened (flock()ed: a living writer of the run refuses the resume), the
 *     cgroup must be the run's own (its id), and the resolver is bound on the port the programs
 *     send DNS to, with the names the first resolver kept in the kernel;
 *   - the whole log is verified (a log that does not verify is never continued) and, line by
 *     line, the state the dead writer held is rebuilt: the tree, the chain, the kernel sequence
 *     numbers that have a line, the loss already declared, denials, open TLS flows, host bytes;
 *   - writer_restart: a fresh run key certified by the host key for the same origin, and a
 *     checkpoint by it covering everything before, the dead writer's unsigned tail included;
 *   - then the run goes on as sluice run's would: records from the ring buffer (what the
 *     kernel kept in it while no one read, and the loss it counted when it was full), DNS
 *     answered again, until the cgroup is empty or sluice is told to stop; then the run's end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include "jsonline.h"
#include "loader.h"
#include "records.h"
#include "resolver.h"
#include "resume.h"
#include "runopts.h"
#include "run.h"
#include "switch.h"
#include "tlog.h"
#include "util.h"
#include "verify.h"

/* a run id the verifier refused would leave a log no resume could take over */
_Static_assert(RUN_ID_MAX == VERIFY_RUN_ID_MAX, "the writer's and the verifier's run ids");

/* How the run was started, from its first two lines (checked again by the whole verify). */
struct resume_start {
	char run_id[RUN_ID_MAX + 1];
	uint64_t checkpoint_lines, checkpoint_secs;
	char task[RECORDS_TASK_MAX + 1];
	bool has_task;
	char policy[PATH_MAX];
	char policy_sha256[65];
	bool report_mode;
	char cgroup[PATH_MAX];
	uint64_t cgroup_id;
	char netns[PATH_MAX];
	bool has_netns;
	char upstream[RUN_UPSTREAM_MAX];
	bool has_upstream;
	bool dns_ttl;
	bool attached; /* a daemon attached the run to a cgroup it did not make */
	int64_t started_us;
	/*
	 * A policy_switch_begin that no policy_change or policy_switch_abort closed: the writer
	 * died inside a switch (switch.c). Its policy, digest, mode and generation (era), and the
	 * one in force before it (prev_era); settle_switch says which the programs carry.
	 */
	struct {
		bool open;
		char policy[PATH_MAX];
		char policy_sha256[65];
		bool report_mode;
		uint64_t era, prev_era;
	} sw;
	enum { SWITCH_NONE, SWITCH_DONE, SWITCH_ABORTED } sw_close;
	char prev_sha256[65]; /* the policy in force before a switch the programs show done */
	bool prev_report;
};

/* The verify pass: the records' state, and what the sidecar may lack. */
struct resume_pass {
	struct records *rec;
	/* the last JOURNAL_SYNC_MAX checkpoint lines: checkpoint k at k % JOURNAL_SYNC_MAX */
	uint64_t n_cp;
	uint64_t cp_sizes[JOURNAL_SYNC_MAX];
	char *cp_notes[JOURNAL_SYNC_MAX];
	uint64_t cp_size_before; /* of the last one no longer kept; 0: none */
	uint64_t run_end_line; /* 1-based; 0: none */
	/* what the kernel's next kseq must be at least: every bound and count the log states */
	uint64_t kseq_floor;
	uint64_t lost;
	bool failed; /* out of memory keeping a note */
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice resume RUN_ID [--log FILE] [--key FILE] [--policy FILE]\n"
		"                     [--upstream ADDR[:PORT]] [--alerts FILE] [--checkpoint-fd FD]\n"
		"                     [--log-rotate-kib N] [-v]\n"
		"\n"
		"Takes over run RUN_ID, whose sluice run (or resume) died while the run's processes\n"
		"went on under its pinned programs: verifies the log (default ./sluice-RUN_ID.jsonl),\n"
		"continues it with a fresh run key the host key certifies (a writer_restart record\n"
		"and a checkpoint covering everything before), answers the run's DNS again, writes\n"
		"what the kernel recorded meanwhile, and ends the run when its cgroup is empty (or on\n"
		"SIGINT, SIGTERM, SIGHUP: then the run's processes are killed) as sluice run would.\n"
		"\n"
		"  --policy FILE    the run's policy, if it moved (its SHA-256 must be run_start's)\n"
		"  --upstream ADDR  where the resolver asks (default: the one run_start names)\n"
		"  --key, --alerts, --checkpoint-fd, --log-rotate-kib: as for run\n"
		"\n"
		"exit status: 0 the run ended, 128+N stopped by signal N, 125 not resumed (nothing\n"
		"written) or a failure.\n");
}

static int parse_args(int argc, char **argv, struct run_args *a)
{
	static const int shared[] = { RUNOPT_LOG, RUNOPT_POLICY, RUNOPT_UPSTREAM, RUNOPT_ALERTS,
				      RUNOPT_KEY, RUNOPT_CHECKPOINT_FD, RUNOPT_LOG_ROTATE_KIB,
				      RUNOPT_VERBOSE, 0 };
	static const struct option own[] = {
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	static struct runopts_table t;
	int c, err;

	if (runopts_build(&t, shared, own, "h"))
		return -E2BIG;
	optind = 1;
	while ((c = getopt_long(argc, argv, t.shortopts, t.opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		err = runopts_take(a, c, optarg);
		if (err == -ENOENT)
			usage(stderr);
		if (err)
			return -EINVAL;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "sluice resume: expected one RUN_ID (sluice resume RUN_ID [options])\n");
		return -EINVAL;
	}
	a->run_id = argv[optind];
	if (run_check_id(a->run_id)) {
		fprintf(stderr, "sluice resume: RUN_ID: expected 1-%d characters of [A-Za-z0-9_-] "
				"not starting with \'-\'\n",
			RUN_ID_MAX);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The run's first lines */

static int str_member(const struct jsonline *jl, const char *key, char *buf, size_t size,
		      bool *present)
{
	const struct jsonline_member *m = jsonline_get(jl, key);
	int n;

	if (present)
		*present = m && m->v.kind != JSONLINE_NULL;
	if (m && m->v.kind == JSONLINE_NULL && present)
		return 0;
	n = jsonline_str(jl, key, buf, size);
	return n < 0 || strlen(buf) != (size_t)n ? -EINVAL : 0;
}

static int bool_member(const struct jsonline *jl, const char *key, bool *out)
{
	const struct jsonline_member *m = jsonline_get(jl, key);

	if (!m || (m->v.kind != JSONLINE_TRUE && m->v.kind != JSONLINE_FALSE))
		return -EINVAL;
	*out = m->v.kind == JSONLINE_TRUE;
	return 0;
}

/*
 * One file of the log (a segment, or the live file): the last policy_change line into s, and a
 * policy_switch_begin after it that nothing closed (s->sw).
 */
static void read_policy_changes(const char *path, struct resume_start *s, char *line,
				struct jsonline *jl)
{
	char mode[16], pol[PATH_MAX], sha[65];
	const char *why;
	size_t len, off;
	gzFile gz;
	int fd;

	fd = util_open_regular(path, O_RDONLY, 0);
	gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
	if (!gz) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while (gzgets(gz, line, JOURNAL_LINE_MAX + 1)) {
		len = strlen(line);
		if (!strstr(line, "\"type\":\"policy_") || !len || line[len - 1] != '\n' ||
		    jsonline_parse(jl, line, len - 1, &off, &why))
			continue;
		if (jsonline_type_is(jl, "policy_switch_abort")) {
			s->sw.open = false;
			continue;
		}
		if (jsonline_type_is(jl, "policy_switch_begin")) {
			if (str_member(jl, "policy", pol, sizeof(pol), NULL) ||
			    str_member(jl, "policy_sha256", sha, sizeof(sha), NULL) ||
			    str_member(jl, "mode", mode, sizeof(mode), NULL) ||
			    jsonline_u64(jl, "era", &s->sw.era) ||
			    jsonline_u64(jl, "prev_era", &s->sw.prev_era))
				continue;
			memcpy(s->sw.policy, pol, sizeof(pol));
			memcpy(s->sw.policy_sha256, sha, sizeof(sha));
			s->sw.report_mode = !strcmp(mode, "report");
			s->sw.open = true;
			continue;
		}
		if (!jsonline_type_is(jl, "policy_change") ||
		    str_member(jl, "policy", pol, sizeof(pol), NULL) ||
		    str_member(jl, "policy_sha256", sha, sizeof(sha), NULL) ||
		    str_member(jl, "mode", mode, sizeof(mode), NULL))
			continue;
		memcpy(s->policy, pol, sizeof(pol));
		memcpy(s->policy_sha256, sha, sizeof(sha));
		s->report_mode = !strcmp(mode, "report");
		s->sw.open = false;
	}
	gzclose(gz);
}

/*
 * A run switched live (sluice set-mode, replace-policy; switch.c) runs the policy and mode of
 * its last policy_change line: those, like run_start's, are checked against what the programs
 * keep (check_start, take_policy), and verified with the whole log after.
 */
static int read_last_policy(const char *log, struct resume_start *s)
{
	char path[PATH_MAX], *line = malloc(JOURNAL_LINE_MAX + 1);
	struct jsonline *jl = malloc(sizeof(*jl));
	unsigned int k;
	int err = line && jl ? 0 : -ENOMEM;

	for (k = 1; !err; k++) {
		if (verify_segment_path(log, k, false, path, sizeof(path)))
			break;
		if (access(path, F_OK) &&
		    (verify_segment_path(log, k, true, path, sizeof(path)) || access(path, F_OK)))
			break;
		read_policy_changes(path, s, line, jl);
	}
	if (!err)
		read_policy_changes(log, s, line, jl);
	free(line);
	free(jl);
	return err;
}

/* log_start and run_start, the first two lines of the log's first file. */
static int read_start(const char *log, struct resume_start *s, char *msg, size_t msg_len)
{
	char path[PATH_MAX], *line = NULL, mode[16];
	struct jsonline *jl = NULL;
	const char *why = "";
	gzFile gz = NULL;
	size_t off;
	int n, fd, err = 0;

	/* the first rotated segment, compressed or not, else the live file; zlib reads either */
	if (verify_segment_path(log, 1, true, path, sizeof(path)) ||
	    (access(path, F_OK) && verify_segment_path(log, 1, false, path, sizeof(path))) ||
	    (access(path, F_OK) && util_copy(path, sizeof(path), log)))
		return util_fmt(msg, msg_len, "%s: path too long", log), -ENAMETOOLONG;
	line = malloc(JOURNAL_LINE_MAX + 1);
	jl = malloc(sizeof(*jl));
	fd = line && jl ? util_open_regular(path, O_RDONLY, 0) : -ENOMEM;
	gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
	if (!gz) {
		err = fd < 0 ? fd : -ENOMEM;
		if (fd >= 0)
			close(fd);
		util_fmt(msg, msg_len, "open log %s: %s", path,
			 err == -EINVAL ? "not a regular file" : strerror(-err));
		goto out;
	}
	for (n = 0; n < 2 && !err; n++) {
		size_t len;

		if (!gzgets(gz, line, JOURNAL_LINE_MAX + 1) || !(len = strlen(line)) ||
		    line[len - 1] != '\n' ||
		    jsonline_parse(jl, line, len - 1, &off, &why)) {
			err = -EBADMSG;
			util_fmt(msg, msg_len, "%s: line %d is not a whole log line%s%s", path, n + 1,
				 *why ? ": " : "", why);
			break;
		}
		if (n == 0) {
			if (!jsonline_type_is(jl, "log_start") ||
			    str_member(jl, "run_id", s->run_id, sizeof(s->run_id), NULL) ||
			    jsonline_u64(jl, "checkpoint_lines", &s->checkpoint_lines) ||
			    jsonline_u64(jl, "checkpoint_secs", &s->checkpoint_secs))
				err = -EBADMSG;
			continue;
		}
		if (!jsonline_type_is(jl, "run_start") ||
		    str_member(jl, "task", s->task, sizeof(s->task), &s->has_task) ||
		    str_member(jl, "mode", mode, sizeof(mode), NULL) ||
		    str_member(jl, "policy", s->policy, sizeof(s->policy), NULL) ||
		    str_member(jl, "cgroup", s->cgroup, sizeof(s->cgroup), NULL) ||
		    jsonline_u64(jl, "cgroup_id", &s->cgroup_id)) {
			err = -EBADMSG;
			break;
		}
		/* what a sluice that could not be resumed did not write */
		if (str_member(jl, "policy_sha256", s->policy_sha256, sizeof(s->policy_sha256),
			       NULL) ||
		    str_member(jl, "netns", s->netns, sizeof(s->netns), &s->has_netns) ||
		    str_member(jl, "upstream", s->upstream, sizeof(s->upstream), &s->has_upstream) ||
		    bool_member(jl, "dns_ttl", &s->dns_ttl)) {
			util_fmt(msg, msg_len, "%s: run_start lacks what a resume needs (policy_sha256, "
					       "netns, upstream, dns_ttl): the run was started by "
					       "a sluice that cannot be resumed",
				 path);
			err = -EPROTO;
			goto out;
		}
		s->report_mode = !strcmp(mode, "report");
		s->started_us = jl->ts;
		{
			const struct jsonline_member *m = jsonline_get(jl, "attached");

			s->attached = m && m->v.kind == JSONLINE_TRUE;
		}
	}
	if (err && !*msg)
		util_fmt(msg, msg_len, "%s: the first lines are not log_start and run_start", path);
out:
	if (gz)
		gzclose(gz);
	free(line);
	free(jl);
	return err;
}

/* ------------------------------------------------------------------------------------------ */
/* The verify pass */

static void on_line(const struct jsonline *jl, void *ctx)
{
	struct resume_pass *p = ctx;

	if (jsonline_type_is(jl, "run_end") && !p->run_end_line)
		p->run_end_line = jl->seq + 1;
	if (jsonline_type_is(jl, "loss") || jsonline_type_is(jl, "writer_restart")) {
		uint64_t below, count;

		if (!jsonline_u64(jl, "kseq_below", &below) && below > p->kseq_floor)
			p->kseq_floor = below;
		if (jsonline_type_is(jl, "loss") && !jsonline_u64(jl, "count", &count))
			p->lost += count;
	}
	if (jsonline_type_is(jl, "checkpoint")) {
		const struct jsonline_member *m = jsonline_get(jl, "note");
		char *note = m ? malloc((size_t)m->v.len + 1) : NULL;

		size_t k = p->n_cp % JOURNAL_SYNC_MAX;

		/* the last checkpoints' notes: what a sidecar cut short by the crash lacks */
		if (!note || jsonline_decode(jl, &m->v, note, (size_t)m->v.len + 1) < 0) {
			free(note);
			p->failed = true;
			return;
		}
		if (p->cp_notes[k])
			p->cp_size_before = p->cp_sizes[k];
		free(p->cp_notes[k]);
		p->cp_notes[k] = note;
		p->cp_sizes[k] = jl->seq;
		p->n_cp++;
	}
	records_restore_line(p->rec, jl);
}

static const char *verify_word(int status)
{
	switch (status) {
	case VERIFY_OK:
	case VERIFY_LOSS:
		return "is sealed: the run has ended";
	case VERIFY_INVALID:
		return "does not verify";
	default:
		return "could not be read";
	}
}

/* Verify the dead writer's log and rebuild the records' state; the tail to append after. */
static int verify_pass(struct run *r, struct resume_pass *p, struct journal_tail *t, char *msg,
		       size_t msg_len)
{
	struct verify_opts o = {
		.log = r->log_path,
		.host_vkey = r->host_vkey,
		.run_id = r->run_id,
		.resume = true,
		.on_line = on_line,
		.ctx = p,
	};
	struct verify_result *res = calloc(1, sizeof(*res));
	struct verify_state *st = calloc(1, sizeof(*st));
	size_t k;
	int err = 0;

	if (!res || !st) {
		err = -ENOMEM;
		util_fmt(msg, msg_len, "%s", strerror(ENOMEM));
		goto out;
	}
	o.state = st;
	verify_log(&o, res);
	if (res->status != VERIFY_UNSEALED) {
		err = res->status == VERIFY_ERROR ? -EIO : -EBADMSG;
		if (res->err_line)
			util_fmt(msg, msg_len, "log %s %s: line %" PRIu64 " (%s:%" PRIu64 "): %s; it is "
					       "not continued",
				 r->log_path, verify_word(res->status), res->err_line, res->err_file,
				 res->err_file_line, res->why);
		else
			util_fmt(msg, msg_len, "log %s %s%s%s", r->log_path, verify_word(res->status),
				 res->why[0] ? ": " : "", res->why);
		goto out;
	}
	if (p->failed) {
		err = -ENOMEM;
		util_fmt(msg, msg_len, "%s", strerror(ENOMEM));
		goto out;
	}
	if (p->run_end_line) {
		/* the run's end is written: only its seal is missing, and that is not a restart */
		err = -EALREADY;
		util_fmt(msg, msg_len, "log %s already holds the run's end (run_end, line %" PRIu64
				       "): the run ended, its writer died before the seal",
			 r->log_path, p->run_end_line);
		goto out;
	}
	/*
	 * The kernel's next sequence number, read now (before anything is drained), is above
	 * every record the log holds and every bound it states: else these pins are not the
	 * run this log was written for, and a writer_restart claiming it would not verify.
	 */
	t->kseq_below = loader_next_seq(r->loader);
	if (t->kseq_below < st->kseq_high || t->kseq_below < p->kseq_floor ||
	    t->kseq_below < p->lost) {
		err = -ESTALE;
		util_fmt(msg, msg_len, "the run's kernel sequence counter (%" PRIu64 ") is below "
				       "what log %s holds (%" PRIu64 "): its pins are not this log's "
				       "run",
			 t->kseq_below, r->log_path,
			 st->kseq_high > p->kseq_floor ? st->kseq_high : p->kseq_floor);
		goto out;
	}
	t->format = st->format;
	t->lines = st->lines;
	memcpy(t->prev, st->prev, sizeof(t->prev));
	t->tree = st->tree;
	t->segments = st->segments;
	t->log_missing = st->log_missing;
	/* a torn line gets its "\n" too: it stays, a line of its own */
	t->newline_missing = st->newline_missing || st->torn;
	t->torn = st->torn;
	t->unsealed = st->unsealed;
	t->log_dev = st->log_dev;
	t->log_ino = st->log_ino;
	t->log_size = st->log_size;
	t->n_cp = p->n_cp < JOURNAL_SYNC_MAX ? p->n_cp : JOURNAL_SYNC_MAX;
	for (k = 0; k < t->n_cp; k++) {
		size_t at = (p->n_cp - t->n_cp + k) % JOURNAL_SYNC_MAX;

		t->cp_sizes[k] = p->cp_sizes[at];
		t->cp_notes[k] = p->cp_notes[at];
	}
	t->cp_size = t->n_cp ? t->cp_sizes[t->n_cp - 1] : 0;
	t->cp_size_before = p->cp_size_before;
out:
	free(res);
	free(st);
	return err;
}

/* ------------------------------------------------------------------------------------------ */

/* The upstream the programs keep, as a sockaddr and as run_start names it; false: none. */
static bool cfg_upstream(const struct sl_run_cfg *cfg, struct sockaddr_storage *ss,
			 socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (cfg->upstream_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, cfg->upstream_addr, 4);
		sin->sin_port = htons(cfg->upstream_port);
		*len = sizeof(*sin);
		return true;
	}
	if (cfg->upstream_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, cfg->upstream_addr, 16);
		sin6->sin6_port = htons(cfg->upstream_port);
		*len = sizeof(*sin6);
		return true;
	}
	*len = 0;
	return false;
}

/*
 * run_start, read before the log was verified and perhaps never signed by the dead writer,
 * against what the run's programs keep (struct sl_run_cfg): what the resolver will do comes
 * from the kernel, and a log that says otherwise was edited.
 */
static int check_start(struct run *r, const struct resume_start *s, char *msg, size_t msg_len)
{
	const struct sl_run_cfg *cfg = loader_run_cfg(r->loader);
	char digest[65], upstream[RUN_UPSTREAM_MAX] = "";
	struct sockaddr_storage ss;
	socklen_t len;
	const char *what = NULL;

	util_hex(cfg->policy_sha256, sizeof(cfg->policy_sha256), digest, sizeof(digest));
	if (cfg_upstream(cfg, &ss, &len))
		resolver_format_addr(&ss, upstream, sizeof(upstream));
	if (strcmp(digest, s->policy_sha256))
		what = "policy_sha256";
	else if (s->report_mode != (loader_mode(r->loader) == SL_MODE_REPORT))
		what = "mode";
	else if (s->dns_ttl != !!cfg->dns_ttl)
		what = "dns_ttl";
	else if (strcmp(s->has_upstream ? s->upstream : "", upstream))
		what = "upstream";
	else if (s->has_netns != !!cfg->netns_given)
		what = "netns";
	if (what) {
		util_fmt(msg, msg_len, "log %s: run_start's %s is not what the run's programs were "
				       "loaded with (the log was edited?)",
			 r->log_path, what);
		return -EBADMSG;
	}
	if (!r->args.upstream) { /* --upstream: the operator's choice wins */
		r->upstream_ss = ss;
		r->upstream_len = len;
	}
	r->args.dns_ttl = cfg->dns_ttl;
	return 0;
}

/* The policy file, checked against the digest the programs keep: the kernel enforces that one. */
static int take_policy(struct run *r, const struct resume_start *s, char *msg, size_t msg_len)
{
	const struct sl_run_cfg *cfg = loader_run_cfg(r->loader);
	uint8_t sha[TLOG_HASH_SIZE];
	char digest[65], *buf = NULL;
	size_t len = 0;
	int fd, err;

	/*
	 * The path may come from run_start, which no one may have signed: its bytes are read and
	 * must have the digest the programs keep before anything parses them (a parse error
	 * quotes the file: pointed at the host key, it would print the key).
	 */
	fd = util_open_regular(r->args.policy_path, O_RDONLY, 0);
	if (fd < 0) {
		util_fmt(msg, msg_len, "policy %s: %s", r->args.policy_path,
			 fd == -EINVAL ? "not a regular file" : strerror(-fd));
		return fd;
	}
	err = policy_read_fd(fd, r->args.policy_path, &buf, &len, msg, msg_len);
	close(fd);
	if (err)
		return err;
	tlog_sha256(buf, len, sha);
	if (memcmp(sha, cfg->policy_sha256, sizeof(sha))) {
		util_hex(sha, sizeof(sha), digest, sizeof(digest));
		util_fmt(msg, msg_len, "policy %s is not the one run %s started with (its SHA-256 is "
				       "%s, the run's %s); give the run's policy with --policy",
			 r->args.policy_path, r->run_id, digest, s->policy_sha256);
		err = -EINVAL;
		goto out;
	}
	err = policy_load_buffer(buf, len, r->args.policy_path, &r->policy, msg, msg_len);
out:
	free(buf);
	if (err)
		return err;
	/* the path may be read_start's, which does not outlive resume_take: the policy's copy */
	r->args.policy_path = r->policy->path;
	r->policy->mode = loader_mode(r->loader) == SL_MODE_REPORT ? SL_MODE_REPORT : SL_MODE_ENFORCE;
	return 0;
}

/*
 * The run's cgroup: where run_start says, and the very one the pinned programs are attached
 * to (the kernel's link says which). Gone (the kernel detached the links): the run is over,
 * only its end is missing; anywhere else, or another cgroup at that path: refused.
 */
static int take_cgroup(struct run *r, const struct resume_start *s, char *msg, size_t msg_len)
{
	uint64_t attached;
	int err;

	err = loader_cgroup_id(r->loader, &attached);
	if (err) {
		util_fmt(msg, msg_len, "the run's connect4 link: %s", strerror(-err));
		return err;
	}
	if (attached && attached != s->cgroup_id) {
		util_fmt(msg, msg_len, "the run's programs are attached to cgroup id %" PRIu64 ", "
				       "run_start names id %" PRIu64,
			 attached, s->cgroup_id);
		return -ESTALE;
	}
	/* a container's cgroup has its runtime's name, not the run id */
	r->attached = s->attached;
	err = s->attached ? cgroup_open_existing(s->cgroup, &r->cg) :
			    cgroup_open_path(s->cgroup, r->run_id, &r->cg);
	/*
	 * Removed: the kernel detaches the links only once the last socket made in the cgroup is
	 * gone, so links still attached to a cgroup that no longer exists are no reason to wait.
	 */
	if (err == -ENOENT && (!attached || cgroup_id_exists(attached) == 0)) {
		r->cg.path[0] = '\0';
		return 0;
	}
	if (err) {
		util_fmt(msg, msg_len, "the run's cgroup %s: %s", s->cgroup,
			 err == -ENOENT ? "not there, but the run's programs are still attached to "
					  "it (moved?)" : strerror(-err));
		return err;
	}
	if (r->cg.id != attached) {
		util_fmt(msg, msg_len, "cgroup %s is not the run's (id %" PRIu64 "; the run's "
				       "programs are attached to id %" PRIu64 ")",
			 r->cg.path, r->cg.id, attached);
		return -ESTALE;
	}
	return 0;
}

/* fd is the namespace the programs keep (struct sl_run_cfg netns_dev, netns_ino). */
static bool is_run_netns(const struct sl_run_cfg *cfg, int fd)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) && st.st_dev == cfg->netns_dev &&
	       st.st_ino == cfg->netns_ino;
}

/* fd if it is the run's namespace (is_run_netns), else -1 (fd closed). */
static int keep_if_run_netns(const struct sl_run_cfg *cfg, int fd)
{
	if (is_run_netns(cfg, fd))
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * The namespace the run's resolver listened in, by the identity the programs keep: this
 * process's own (a daemon started in it), the --netns path run_start names while it still
 * names it, or a process of the run's. -1: none of them (the namespace is gone). Kept as the
 * run's netns_fd in each case, this process's own too: a kill judges whether a destroyed
 * socket's RST may leave by the namespace it is given, and with none it lets none out.
 */
static int find_netns(const struct run *r, const struct resume_start *s)
{
	const struct sl_run_cfg *cfg = loader_run_cfg(r->loader);
	char path[PATH_MAX], procs[PATH_MAX], line[32];
	FILE *f;
	int fd;

	fd = keep_if_run_netns(cfg, open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
	if (fd >= 0)
		return fd;
	if (s->has_netns) {
		/* the log's (unsigned) path: only a namespace file is opened, and only the run's kept */
		fd = keep_if_run_netns(cfg, runopts_open_netns(s->netns, path, sizeof(path)));
		if (fd >= 0)
			return fd;
	}
	if (!r->cg.path[0] || util_fmt(procs, sizeof(procs), "%s/cgroup.procs", r->cg.path))
		return -1;
	f = fopen(procs, "re");
	fd = -1;
	while (f && fgets(line, sizeof(line), f)) {
		if (util_fmt(path, sizeof(path), "/proc/%ld/ns/net", strtol(line, NULL, 10)))
			continue;
		fd = keep_if_run_netns(cfg, open(path, O_RDONLY | O_CLOEXEC));
		if (fd >= 0)
			break;
	}
	if (f)
		fclose(f);
	return fd;
}

static const char *reopen_why(int err)
{
	switch (err) {
	case -ENOENT:
		return "its programs are not pinned under " LOADER_BPFFS "/sluice (the run ended, "
		       "or ran on another host)";
	case -EBUSY:
		return "its writer is alive (sluice run or resume holds the pins); one writer per log";
	case -EPROTO:
		return "its pinned maps are not this build's (another version of sluice started it)";
	case -EXDEV:
		return "its writer died while it moved the run's links to a switch's new programs: "
		       "some hooks run the old policy's, some the new one's (each enforces one of "
		       "the two), and no set staged for that switch's commit is the one its log's "
		       "policy_switch_begin announced to finish the move with; no writer can name "
		       "that in the log";
	case -ENOLINK:
		return "it shares its network namespace's flows but has no host side and no mark "
		       "saying it had no veth peer to attach one to (its sluice was killed before the "
		       "host side was attached), or a join mark contradicts its links: refused, its "
		       "cgroup's programs go on enforcing and the other runs there judge its frames "
		       "(sluice detach --run-id, to a daemon whose run it was, removes it)";
	default:
		return strerror(-err);
	}
}

/*
 * The dead writer announced a switch (policy_switch_begin) and wrote neither its policy_change
 * nor its abort: the generation the programs carry says whether its commit happened. The new
 * one's: the run is under the begin line's policy and mode (checked against the programs as
 * any policy_change's would be), and the taking writer writes the policy_change. The one before:
 * it writes the abort. Any other: the programs are not what the log says; refused.
 */
static int settle_switch(struct run *r, struct resume_start *s, char *msg, size_t msg_len)
{
	uint32_t era = loader_era(r->loader);

	if (!s->sw.open)
		return 0;
	if (era == s->sw.era) {
		memcpy(s->prev_sha256, s->policy_sha256, sizeof(s->prev_sha256));
		s->prev_report = s->report_mode;
		/* (the policy path, unless --policy gave one, is s->policy's buffer) */
		memcpy(s->policy, s->sw.policy, sizeof(s->policy));
		memcpy(s->policy_sha256, s->sw.policy_sha256, sizeof(s->policy_sha256));
		s->report_mode = s->sw.report_mode;
		s->sw_close = SWITCH_DONE;
		return 0;
	}
	if (era == s->sw.prev_era) {
		s->sw_close = SWITCH_ABORTED;
		return 0;
	}
	util_fmt(msg, msg_len, "log %s: the run's programs carry policy generation %u, neither "
			       "that of the switch its last policy_switch_begin announced (%" PRIu64
			       ") nor the one before (%" PRIu64 ")",
		 r->log_path, era, s->sw.era, s->sw.prev_era);
	return -EBADMSG;
}

/* Everything but the log: the pins, what they keep, the policy, the cgroup, the key. */
static int take_over(struct run *r, struct resume_start *s, char *msg, size_t msg_len)
{
	struct loader_open_switch sw = {};
	int err;

	/* a commit its writer died inside may be finished: only the one the log announced */
	if (s->sw.open) {
		sw.era = (uint32_t)s->sw.era;
		sw.prev_era = (uint32_t)s->sw.prev_era;
		memcpy(sw.policy_sha256, s->sw.policy_sha256, sizeof(sw.policy_sha256));
		sw.mode = s->sw.report_mode ? SL_MODE_REPORT : SL_MODE_ENFORCE;
	}
	r->loader = loader_reopen(r->run_id, s->sw.open && s->sw.era <= UINT32_MAX &&
						     s->sw.prev_era <= UINT32_MAX ? &sw : NULL,
				  r->args.verbose);
	if (!r->loader) {
		err = -errno;
		util_fmt(msg, msg_len, "run %s: %s", r->run_id, reopen_why(err));
		return err;
	}
	r->rec.loader = r->loader;
	err = settle_switch(r, s, msg, msg_len);
	if (!err)
		err = check_start(r, s, msg, msg_len);
	if (!err)
		err = take_policy(r, s, msg, msg_len);
	if (!err)
		err = take_cgroup(r, s, msg, msg_len);
	if (!err)
		err = run_make_key(r, msg, msg_len);
	if (err)
		return err;
	r->rec.run_id = r->run_id;
	r->rec.task = r->args.task;
	r->rec.log_path = r->log_path;
	r->rec.policy = r->policy;
	r->rec.era = loader_era(r->loader);
	r->rec.started_at.tv_sec = s->started_us / 1000000;
	r->rec.started_at.tv_nsec = (s->started_us % 1000000) * 1000;
	err = records_init(&r->rec);
	if (err)
		return util_fmt(msg, msg_len, "%s", strerror(-err)), err;
	r->rec.resumed = true;

	r->events = events_new(loader_events_fd(r->loader), &records_handlers, &r->rec);
	if (!r->events) {
		err = -errno;
		util_fmt(msg, msg_len, "open the run's ring buffer: %s", strerror(-err));
		return err;
	}
	r->rec.events = r->events;
	return 0;
}

/*
 * DNS again, on the port the programs send it to, in the run's namespace (r->netns_fd:
 * find_netns), with the names the first resolver kept with the run. Where it cannot listen (the
 * namespace is gone, the port is taken) the names are still taken, for the records; false then
 * (said in the log later).
 */
static bool start_resolver(struct run *r, char *why, size_t len)
{
	char bind_why[256] = "";
	int err;

	why[0] = '\0';
	/* the names first: a resolver without them would hand out ids the run holds for others */
	err = run_new_hostnames(r);
	if (!err)
		err = hostnames_adopt(r->hosts, r->loader);
	/* and which addresses they share: a record must not name one where several are possible */
	if (!err)
		err = hostnames_adopt_answers(r->hosts, r->loader);
	if (err) {
		util_fmt(why, len, "the host names the run kept: %s; its records name no hosts, and "
				   "the run's names no longer resolve (closed, not open)",
			 strerror(-err));
		hostnames_free(r->hosts);
		r->hosts = NULL;
		r->rec.hosts = NULL;
		return false;
	}
	err = -ENOENT;
	if (r->netns_fd >= 0)
		err = run_start_resolver(r, loader_dns_port(r->loader), bind_why, sizeof(bind_why));
	else
		util_fmt(bind_why, sizeof(bind_why), "the namespace the run's resolver listened in "
						     "is gone (or, without --netns, is not this "
						     "process's)");
	if (err) {
		util_fmt(why, len, "%s; the run's names no longer resolve (closed, not open)",
			 util_why(bind_why, err));
		return false;
	}
	return resolver_port(r->resolver) != 0;
}

/*
 * Said in the log once the new writer holds it: the run's DNS could not be served again, and
 * why when its workers could not start (NULL: its listeners could not be bound again, which
 * stderr has said).
 */
static void note_no_resolver(struct run *r, const char *why)
{
	char text[256];
	struct journal_line l;
	struct timespec now;

	util_fmt(text, sizeof(text), "names no longer resolve%s%s", why ? ": " : "", why ? why : "");
	clock_gettime(CLOCK_REALTIME, &now);
	records_line(&r->rec, &l, "anomaly", &now);
	journal_line_str(&l, "what", "the run's resolver could not be restarted");
	journal_line_str(&l, "why", text);
	records_write(&r->rec, &l);
}

int resume_take(struct run *r, char *msg, size_t msg_len)
{
	struct resume_start s = {};
	struct resume_pass pass = { .rec = &r->rec };
	struct journal_tail tail = {};
	struct journal_opts jo = {};
	char dns_why[512], serve_why[160] = "";
	bool serving;
	size_t k;
	int err;

	/* until the log is continued, a failure leaves the run exactly as it found it */
	r->hands_off = true;
	err = read_start(r->log_path, &s, msg, msg_len);
	if (!err && read_last_policy(r->log_path, &s)) {
		util_fmt(msg, msg_len, "log %s: read its policy changes: %s", r->log_path,
			 strerror(ENOMEM));
		err = -ENOMEM;
	}
	if (!err && strcmp(s.run_id, r->run_id)) {
		util_fmt(msg, msg_len, "log %s is the log of run %s, not %s", r->log_path,
			 s.run_id, r->run_id);
		err = -EINVAL;
	}
	if (err)
		goto out;
	if (!r->args.policy_path)
		r->args.policy_path = s.policy;
	r->args.task = s.has_task ? s.task : NULL;
	err = take_over(r, &s, msg, msg_len);
	if (err)
		goto out;
	r->netns_fd = find_netns(r, &s);
	serving = start_resolver(r, dns_why, sizeof(dns_why));
	err = verify_pass(r, &pass, &tail, msg, msg_len);
	if (err)
		goto out;
	/* the log's cadence, as verify held every checkpoint to it */
	if (!s.checkpoint_lines || !s.checkpoint_secs || s.checkpoint_secs > 86400) {
		util_fmt(msg, msg_len, "log %s: log_start's checkpoint_lines %" PRIu64
				       " or checkpoint_secs %" PRIu64 " is not one sluice writes",
			 r->log_path, s.checkpoint_lines, s.checkpoint_secs);
		err = -EPROTO;
		goto out;
	}
	if (dns_why[0])
		fprintf(stderr, "%s: %s\n", r->args.cmd_name, dns_why);

	jo.path = r->log_path;
	jo.run_id = r->run_id;
	jo.signer = r->run_key;
	jo.host_vkey = r->host_vkey;
	jo.cert = r->cert;
	/* the log's own cadence: verify holds every checkpoint to log_start's */
	jo.checkpoint_lines = s.checkpoint_lines;
	jo.checkpoint_secs = (unsigned int)s.checkpoint_secs;
	jo.rotate_bytes = (uint64_t)r->args.rotate_kib * 1024;
	jo.export_fd = r->args.checkpoint_fd;
	jo.on_fail = records_log_failed;
	jo.fail_ctx = &r->rec;
	jo.on_line = r->on_line;
	jo.line_ctx = r->line_ctx;
	r->rec.strict = loader_strict(r->loader);
	r->journal = journal_resume(&jo, &tail);
	if (!r->journal) {
		/* a newline or the sidecar's mending may be on disk: what a next resume verifies */
		err = -errno;
		util_fmt(msg, msg_len, "continue log %s: %s; the run is left as it was",
			 r->log_path, strerror(-err));
		goto out_free;
	}
	r->rec.journal = r->journal;
	r->started = true;
	r->hands_off = false; /* the log is ours: so is the run's end */
	fprintf(stderr, "sluice: resumed run %s: %" PRIu64 " lines verified (%" PRIu64 " the dead "
			"writer had not signed, now signed by the new run key%s)\n",
		r->run_id, tail.lines, tail.unsealed, tail.torn ? "; a torn last line kept as it is" :
								 "");
	if (run_open_alerts(r, msg, msg_len))
		fprintf(stderr, "%s: %s\n", r->args.cmd_name, msg);
	msg[0] = '\0';
	/*
	 * the host side's clsact filters (kernels without tcx): found, so the run's end removes
	 * them; and the peers of its tcx links. Unsearched, a clsact filter would outlive the run
	 * and drop every frame of the namespace.
	 */
	if (r->netns_fd >= 0 && (err = loader_refind_host_side(r->loader, r->netns_fd)) < 0)
		fprintf(stderr, "%s: find the run's host side on its veths' peers: %s; its clsact "
				"filters stay until their veths go, and no destroyed socket's RST "
				"leaves\n",
			r->args.cmd_name, strerror(-err));
	err = 0;
	/* the switch the dead writer left open, closed first: every line after is the run's */
	if (s.sw_close == SWITCH_DONE)
		switch_log_change(r, s.prev_sha256,
				  s.prev_report ? SL_MODE_REPORT : SL_MODE_ENFORCE, NULL, true);
	else if (s.sw_close == SWITCH_ABORTED)
		switch_log_abort(r, (uint32_t)s.sw.era,
				 "the writer died before the switch's commit: the run's programs "
				 "are the previous generation's");
	if (serving && (err = resolver_serve(r->resolver, r->loader))) {
		util_fmt(serve_why, sizeof(serve_why), "its workers could not start (%s)",
			 strerror(-err));
		fprintf(stderr, "%s: start the run's resolver: %s; the run's names no longer "
				"resolve (closed, not open)\n", r->args.cmd_name, strerror(-err));
		serving = false;
	}
	if (!serving) {
		/*
		 * Listeners no worker answers would leave a client waiting out its timeout:
		 * closed, it is refused at once, and a daemon's status says "none"
		 */
		resolver_stop(r->resolver);
		r->resolver = NULL;
		note_no_resolver(r, serve_why[0] ? serve_why : NULL);
	}
	err = 0;
out:
	if (err)
		util_fmt_append(msg, msg_len, "; nothing was written");
out_free:
	for (k = 0; k < JOURNAL_SYNC_MAX; k++)
		free(pass.cp_notes[k]);
	return err;
}

int resume_main(int argc, char **argv)
{
	struct run r;
	char msg[1024] = "";
	int sig_fd = -1, status = RUN_EXIT_SLUICE_ERROR, err;
	const char *why = "sluice error";
	bool has_status = false;
	sigset_t old;

	run_init(&r, "sluice resume");
	/* until the log is continued, a failure leaves the run exactly as it found it */
	r.hands_off = true;
	if (parse_args(argc, argv, &r.args))
		return RUN_EXIT_SLUICE_ERROR;
	util_copy(r.run_id, sizeof(r.run_id), r.args.run_id);
	if (util_fmt(r.log_path, sizeof(r.log_path), "%s", r.args.log_path ? r.args.log_path : "") ||
	    (!r.args.log_path &&
	     util_fmt(r.log_path, sizeof(r.log_path), "sluice-%s.jsonl", r.run_id))) {
		fprintf(stderr, "sluice resume: --log: path too long\n");
		return RUN_EXIT_SLUICE_ERROR;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "sluice resume needs root: it opens the run's pinned programs and "
				"maps (CAP_SYS_ADMIN, CAP_BPF)\n");
		return RUN_EXIT_SLUICE_ERROR;
	}
	if (run_block_signals(&old, &sig_fd)) {
		fprintf(stderr, "sluice resume: signalfd: %s\n", strerror(errno));
		goto out;
	}
	err = resume_take(&r, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "sluice resume: %s\n", msg);
		goto out;
	}
	if (r.cg.path[0])
		status = run_supervise(&r, -1, sig_fd, &has_status, &why);
	else
		status = 0, why = "cgroup removed";
	run_finish(&r, has_status, status, why);
	if (records_log_incomplete(&r.rec))
		status = RUN_EXIT_LOG_INCOMPLETE;
	if (r.still_running)
		status = RUN_EXIT_SLUICE_ERROR;
out:
	run_close(&r);
	if (sig_fd >= 0)
		close(sig_fd);
	return status;
}
