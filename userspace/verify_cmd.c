// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "note.h"
#include "verify.h"
#include "cjson.h"
#include "verify_cmd.h"

#define DEFAULT_PUB "/etc/sluice/host.key.pub"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice verify LOG [--key PUB] [--checkpoints FILE]... [--run-id ID]\n"
		"                         [--origin ORIGIN] [--json]\n"
		"\n"
		"Verify a run's log: canonical lines, the hash chain, every signed checkpoint, "
		"the\n"
		"final seal, declared against missing kernel records. Rotated segments "
		"LOG.000001.gz\n"
		"(or a plain LOG.000001), LOG.000002.gz, ... are read first.\n"
		"\n"
		"  -k, --key PUB            the host's verifier key (default: $SLUICE_PUB, else\n"
		"                           " DEFAULT_PUB ")\n"
		"  -c, --checkpoints FILE   checkpoints exported during the run (--checkpoint-fd, "
		"or a\n"
		"                           copy of LOG.checkpoints); repeat for several files\n"
		"  -r, --run-id ID          the run expected: another run's log (of the same host) "
		"is\n"
		"                           invalid; without it or exported checkpoints, a whole "
		"log "
		"of\n"
		"                           any run the host key certified verifies as that run's\n"
		"  -o, --origin ORIGIN      the same, as the log's origin (sluice/ID)\n"
		"  -j, --json               one JSON object on stdout instead of the summary\n"
		"\n"
		"exit status: 0 intact, sealed, no loss; 3 intact, sealed, loss declared; 2 intact "
		"but\n"
		"the tail after the last checkpoint is unsigned; 1 tampered or invalid (names the "
		"first\n"
		"bad line); 4 could not verify.\n");
}

static const char *status_word(int status)
{
	switch (status) {
	case VERIFY_OK:
		return "intact";
	case VERIFY_LOSS:
		return "loss";
	case VERIFY_UNSEALED:
		return "unsealed";
	case VERIFY_INVALID:
		return "invalid";
	default:
		return "error";
	}
}

/*
 * The strings printed come from the log (origin, reasons, the why texts that quote them) and
 * the exported stream: an attacker's bytes. JSON gets the log's own canonical string form
 * (evidence spec 1: invalid UTF-8 and control bytes as \u00xx), so the output is valid UTF-8
 * JSON whatever the input.
 */
static void json_str(FILE *f, const char *str)
{
	cjson_fput_string(f, str);
}

/*
 * For the human summary: printable ASCII and well-formed UTF-8 as they are; control bytes
 * (ESC included), DEL, invalid UTF-8, the characters journal_cp_misleads() names and the
 * backslash as \xNN (\\ for the backslash), byte by byte, so nothing in a log can drive the
 * terminal or pass for a line of the summary.
 */
static void human_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		size_t n = *s >= 0x80 ? journal_utf8_len((const char *)s) : 0, i;

		if (*s == '\\') {
			fputs("\\\\", f);
			s++;
		} else if (*s >= 0x20 && *s < 0x7f) {
			fputc(*s, f);
			s++;
		} else if (n && !journal_cp_misleads(journal_utf8_cp((const char *)s, n))) {
			fwrite(s, 1, n, f);
			s += n;
		} else {
			for (i = 0; i < (n ? n : 1); i++)
				fprintf(f, "\\x%02x", s[i]);
			s += n ? n : 1;
		}
	}
}

/* log_start's ts, microseconds since the epoch, as UTC: "2024-05-01T12:00:00.123456Z". */
static void utc(int64_t us, char *buf, size_t size)
{
	int64_t frac = us % 1000000;
	time_t sec = (time_t)(us / 1000000);
	struct tm tm;
	size_t n;

	if (frac < 0) {
		frac += 1000000;
		sec--;
	}
	if (!gmtime_r(&sec, &tm) || !(n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(buf, size, "%" PRId64 " us", us);
		return;
	}
	snprintf(buf + n, size - n, ".%06" PRId64 "Z", frac);
}

static void print_json(const char *log, const struct verify_result *r)
{
	char when[64];
	size_t i;

	printf("{\"status\":");
	json_str(stdout, status_word(r->status));
	printf(",\"exit\":%d,\"log\":", r->status);
	json_str(stdout, log);
	/* log_start's claims, only when the host key certified them */
	printf(",\"certified\":%s,\"origin\":", r->cert_verified ? "true" : "false");
	if (r->cert_verified) {
		json_str(stdout, r->origin);
		utc(r->start_ts, when, sizeof(when));
		printf(",\"started\":");
		json_str(stdout, when);
		printf(",\"start_ts\":%" PRId64 ",\"run_key_hash\":\"%08x\",\"last_key_hash\":\"%08x\"",
		       r->start_ts, r->run_key_hash, r->last_key_hash);
	} else {
		printf("null,\"started\":null,\"start_ts\":null,\"run_key_hash\":null,"
		       "\"last_key_hash\":null");
	}
	printf(",\"log_missing\":%s,\"seal_uncovered\":%s", r->log_missing ? "true" : "false",
	       r->seal_uncovered ? "true" : "false");
	printf(",\"lines\":%" PRIu64 ",\"segments\":%u,\"checkpoints\":%" PRIu64
	       ",\"last_checkpoint_size\":%" PRIu64 ",\"sealed\":%s,\"unsealed_lines\":%" PRIu64
	       ",\"partial_line\":%s,\"exported_checkpoints\":%" PRIu64 ",\"anomalies\":%" PRIu64
	       ",\"declared_loss\":%" PRIu64 ",\"unlogged\":%" PRIu64 ",\"missing_kseq\":%" PRIu64,
	       r->lines, r->segments, r->checkpoints, r->last_checkpoint_size,
	       r->sealed ? "true" : "false", r->unsealed_lines, r->partial_line ? "true" : "false",
	       r->ext_checkpoints, r->anomalies, r->declared_loss, r->unlogged, r->missing_kseq);
	printf(",\"unwritten\":%" PRIu64 ",\"unwritten_lines\":%" PRIu64, r->unwritten,
	       r->unwritten_lines);
	printf(",\"restarts\":%" PRIu64 ",\"restart_unsealed\":%" PRIu64
	       ",\"restart_torn\":%" PRIu64 ",\"restart_gap\":%" PRIu64
	       ",\"restart_downtime_ms\":%" PRIu64,
	       r->restarts, r->restart_unsealed, r->restart_torn, r->restart_gap,
	       r->restart_downtime_us / 1000);
	if (r->ext_write_failure[0]) {
		printf(",\"write_failure\":");
		json_str(stdout, r->ext_write_failure);
	}
	printf(",\"missing_ranges\":[");
	for (i = 0; i < r->n_missing; i++)
		printf("%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "", r->missing[i].first,
		       r->missing[i].last);
	printf("]");
	if (r->loss_ranges_line)
		printf(",\"loss_ranges_line\":%" PRIu64, r->loss_ranges_line);
	else
		printf(",\"loss_ranges_line\":null");
	printf(",\"first_error\":");
	if (r->status != VERIFY_INVALID && r->status != VERIFY_ERROR) {
		printf("null}\n");
		return;
	}
	if (r->err_line)
		printf("{\"line\":%" PRIu64 ",\"seq\":%" PRIu64, r->err_line, r->err_seq);
	else
		printf("{\"line\":null,\"seq\":null");
	printf(",\"file\":");
	json_str(stdout, r->err_file);
	if (r->err_file_line)
		printf(",\"file_line\":%" PRIu64, r->err_file_line);
	else
		printf(",\"file_line\":null");
	printf(",\"why\":");
	json_str(stdout, r->why);
	printf("}}\n");
}

static void print_ranges(const struct verify_result *r)
{
	size_t i;

	for (i = 0; i < r->n_missing; i++) {
		if (r->missing[i].first == r->missing[i].last)
			printf("%s%" PRIu64, i ? ", " : "", r->missing[i].first);
		else
			printf("%s%" PRIu64 "-%" PRIu64, i ? ", " : "", r->missing[i].first,
			       r->missing[i].last);
	}
	if (r->more_missing)
		printf(", ...");
}

/* Where the first error is: "line 12 (seq 11), LOG.000001.gz line 12". */
static void print_where(const struct verify_result *r)
{
	if (r->err_line)
		printf("line %" PRIu64 " (seq %" PRIu64 ")", r->err_line, r->err_seq);
	if (r->err_file[0]) {
		printf("%s", r->err_line ? ", " : "");
		human_str(stdout, r->err_file);
		if (r->err_file_line)
			printf(" line %" PRIu64, r->err_file_line);
	}
}

static void print_human(const char *log, const struct verify_result *r)
{
	char when[64];

	printf("sluice verify ");
	human_str(stdout, log);
	printf("\n");
	if (r->cert_verified) {
		utc(r->start_ts, when, sizeof(when));
		printf("  run:         ");
		human_str(stdout, r->origin);
		printf(" (run key %08x certified by host key ", r->run_key_hash);
		human_str(stdout, r->host_key_name);
		printf(")\n  started:     %s\n", when);
		if (r->restarts)
			printf("  key now:     run key %08x, certified by the same host key at the "
			       "last restart\n",
			       r->last_key_hash);
	}
	printf("  lines:       %" PRIu64 " in %u file%s", r->lines, r->segments,
	       r->segments == 1 ? "" : "s");
	if (r->partial_line)
		printf(", then an incomplete line");
	printf("\n  checkpoints: %" PRIu64 " in the log", r->checkpoints);
	if (r->checkpoints)
		printf(" (the last covers %" PRIu64 " lines)", r->last_checkpoint_size);
	if (r->ext_checkpoints)
		printf(", %" PRIu64 " exported", r->ext_checkpoints);
	printf("\n  sealed:      %s\n", r->sealed ? "yes" : "no");
	if (r->ext_write_failure[0]) {
		printf("  exported:    the writer reported \"");
		human_str(stdout, r->ext_write_failure);
		printf("\"\n");
	}
	if (r->log_failures)
		printf("  log failed:  %" PRIu64 " time%s: %" PRIu64 " kernel records read but never "
		       "written, %" PRIu64 " lines in all, declared in loss records of hook log\n",
		       r->log_failures, r->log_failures == 1 ? "" : "s", r->unwritten,
		       r->unwritten_lines);
	printf("  loss:        %" PRIu64 " kernel records declared lost, ", r->declared_loss);
	if (r->unlogged)
		printf("%" PRIu64 " not logged by policy, ", r->unlogged);
	printf("%" PRIu64 " missing", r->missing_kseq);
	if (r->n_missing) {
		printf(" (kseq ");
		print_ranges(r);
		printf(")");
	}
	if (r->loss_ranges_line)
		printf(", as the log's loss_ranges record (line %" PRIu64 ") lists",
		       r->loss_ranges_line);
	printf("\n");
	if (r->anomalies)
		printf("  anomalies:   %" PRIu64 "\n", r->anomalies);
	if (r->restarts) {
		printf("  restarts:    writer restarted %" PRIu64 " time%s: first at line %" PRIu64
		       "; %" PRIu64 " line%s the dead writer had not signed %s signed only at the "
		       "restart; %" PRIu64 " torn line%s; longest downtime %" PRIu64 ".%03" PRIu64
		       " s",
		       r->restarts, r->restarts == 1 ? "" : "s", r->first_restart_line,
		       r->restart_unsealed, r->restart_unsealed == 1 ? "" : "s",
		       r->restart_unsealed == 1 ? "was" : "were", r->restart_torn,
		       r->restart_torn == 1 ? "" : "s", r->restart_downtime_us / 1000000,
		       r->restart_downtime_us % 1000000 / 1000);
		if (r->sealed)
			printf("; %" PRIu64 " kernel record%s unaccounted across the restart",
			       r->restart_gap, r->restart_gap == 1 ? "" : "s");
		printf("\n");
	}
	switch (r->status) {
	case VERIFY_OK:
		printf("OK: intact and complete\n");
		break;
	case VERIFY_LOSS:
		if (r->restart_gap) {
			printf("LOSS: intact and sealed; ");
			if (r->declared_loss)
				printf("%" PRIu64 " kernel records were lost, every one declared "
				       "in a signed loss record, and ",
				       r->declared_loss);
			printf("%" PRIu64 " kernel records went unaccounted across the writer "
			       "restart, declared in the signed run_end\n",
			       r->restart_gap);
			break;
		}
		printf("LOSS: intact and sealed; %" PRIu64 " kernel records were lost, every one "
		       "declared in a signed loss record",
		       r->declared_loss);
		if (r->log_failures)
			printf(" (%" PRIu64 " of them, and %" PRIu64 " lines in all, could not be "
			       "written: the log was unwritable for a while)",
			       r->unwritten, r->unwritten_lines);
		printf("\n");
		break;
	case VERIFY_UNSEALED:
		if (r->seal_uncovered) {
			printf("UNSEALED: intact, but the seal (line %" PRIu64
			       ") is not covered by "
			       "the exported checkpoints: none has size %" PRIu64 ", so its reason "
			       "and time are not signed\n",
			       r->lines, r->lines);
			break;
		}
		if (r->log_missing) {
			printf("UNSEALED: intact, but ");
			human_str(stdout, log);
			printf(" is missing: the rotated segments end with a rotate checkpoint and "
			       "nothing follows (the writer died between renaming the log and "
			       "creating the next one, or the file was removed); no final seal\n");
			break;
		}
		printf("UNSEALED: intact, but the last %" PRIu64 " line%s (after the last "
		       "checkpoint) %s not covered by any signature; no final seal\n",
		       r->unsealed_lines, r->unsealed_lines == 1 ? "" : "s",
		       r->unsealed_lines == 1 ? "is" : "are");
		break;
	default:
		printf("INVALID: ");
		print_where(r);
		printf(": ");
		human_str(stdout, r->why);
		printf("\n");
		break;
	}
}

/*
 * A verifier key file: the key and at most one "\n". Unlike a private key, a public one may be
 * reached through a symlink (/etc/sluice/host.key.pub -> …); it must still be a regular file of
 * key size (a FIFO would hang the read: O_NONBLOCK, then fstat).
 */
int verify_pub_read(const char *path, char *buf, size_t size, const char **why)
{
	mode_t mode;
	int err;

	err = note_key_line_read(path, true, buf, size, &mode, why);
	if (err == -EINVAL && !S_ISREG(mode))
		*why = verify_file_kind(mode);
	return err;
}

/* The host key: --key, else $SLUICE_PUB, else the default file if it exists. */
static int host_key(const char *opt, char *buf, size_t size)
{
	const char *path = opt, *why;
	int err;

	if (!path)
		path = getenv("SLUICE_PUB");
	if (!path || !path[0]) {
		if (access(DEFAULT_PUB, F_OK)) {
			fprintf(stderr, "sluice verify: no host key: give --key PUB (the .pub file "
					"that 'sluice keygen' wrote) or set SLUICE_PUB\n");
			return -ENOKEY;
		}
		path = DEFAULT_PUB;
	}
	err = verify_pub_read(path, buf, size, &why);
	if (err) {
		fprintf(stderr, "sluice verify: read host key ");
		human_str(stderr, path);
		fprintf(stderr, ": %s\n",
			err == -EFBIG ? "larger than a verifier key file"
			: why	      ? why
				      : strerror(-err));
		return err;
	}
	return 0;
}

int verify_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"key", required_argument, NULL, 'k'},
		{"checkpoints", required_argument, NULL, 'c'},
		{"run-id", required_argument, NULL, 'r'},
		{"origin", required_argument, NULL, 'o'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct verify_opts o = {0};
	struct verify_result *r = NULL;
	const char **cps = NULL;
	const char *key_path = NULL;
	char vkey[NOTE_VKEY_MAX + 2];
	bool json = false;
	int c, status = VERIFY_ERROR;

	cps = calloc((size_t)argc, sizeof(*cps));
	r = malloc(sizeof(*r));
	if (!cps || !r) {
		fprintf(stderr, "sluice verify: %s\n", strerror(ENOMEM));
		goto out;
	}
	while ((c = getopt_long(argc, argv, "k:c:r:o:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			key_path = optarg;
			break;
		case 'r':
			o.run_id = optarg;
			break;
		case 'o':
			o.origin = optarg;
			break;
		case 'c':
			cps[o.n_checkpoints++] = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			status = 0;
			goto out;
		default:
			usage(stderr);
			goto out;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "sluice verify: %s\n",
			optind == argc ? "no LOG given" : "one LOG only");
		usage(stderr);
		goto out;
	}
	o.log = argv[optind];
	o.checkpoints = cps;
	if (host_key(key_path, vkey, sizeof(vkey)))
		goto out;
	o.host_vkey = vkey;
	status = verify_log(&o, r);
	if (json)
		print_json(o.log, r);
	else if (status == VERIFY_ERROR) {
		fprintf(stderr, "sluice verify: ");
		human_str(stderr, r->err_file);
		fprintf(stderr, "%s", r->err_file[0] ? ": " : "");
		human_str(stderr, r->why);
		fprintf(stderr, "\n");
	} else
		print_human(o.log, r);
out:
	free(r);
	free(cps);
	return status;
}
