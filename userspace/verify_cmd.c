// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "note.h"
#include "verify.h"
#include "verify_cmd.h"

#define DEFAULT_PUB "/etc/sluice/host.key.pub"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice verify LOG [--key PUB] [--checkpoints FILE]... [--json]\n"
		"\n"
		"Verify a run's log: canonical lines, the hash chain, every signed checkpoint, "
		"the\n"
		"final seal, declared against missing kernel records. Rotated segments "
		"LOG.000001.gz,\n"
		"LOG.000002.gz, ... are read first.\n"
		"\n"
		"  -k, --key PUB            the host's verifier key (default: $SLUICE_PUB, else\n"
		"                           " DEFAULT_PUB ")\n"
		"  -c, --checkpoints FILE   checkpoints exported during the run (--checkpoint-fd, "
		"or a\n"
		"                           copy of LOG.checkpoints); repeat for several files\n"
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
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		size_t n = *s >= 0x80 ? journal_utf8_len((const char *)s) : 0;

		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\t')
			fputs("\\t", f);
		else if (*s < 0x20 || *s == 0x7f || (*s >= 0x80 && !n))
			fprintf(f, "\\u%04x", *s);
		else if (n) {
			fwrite(s, 1, n, f);
			s += n;
			continue;
		} else
			fputc(*s, f);
		s++;
	}
	fputc('"', f);
}

/* The code point of the well-formed n-byte UTF-8 sequence at s. */
static uint32_t utf8_cp(const unsigned char *s, size_t n)
{
	uint32_t cp = s[0] & (0x7f >> n);
	size_t i;

	for (i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	return cp;
}

/*
 * Characters a terminal acts on or that change how a line reads: C1 controls, bidirectional
 * overrides and isolates, line and paragraph separators.
 */
static bool cp_unsafe(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * For the human summary: printable ASCII and well-formed UTF-8 as they are; control bytes
 * (ESC included), DEL, invalid UTF-8, the characters cp_unsafe() names and the backslash as
 * \xNN (\\ for the backslash), byte by byte, so nothing in a log can drive the terminal or
 * pass for a line of the summary.
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
		} else if (n && !cp_unsafe(utf8_cp(s, n))) {
			fwrite(s, 1, n, f);
			s += n;
		} else {
			for (i = 0; i < (n ? n : 1); i++)
				fprintf(f, "\\x%02x", s[i]);
			s += n ? n : 1;
		}
	}
}

/*
 * Whether the log's run key certificate verified under the host key: line 1 (log_start) is
 * checked whole before any later line, so an intact or unsealed log, or a first error after
 * line 1, means it did. (An error at line 1 itself may still come after the certificate, from
 * the exported checkpoints; then this says no, which only leaves the "certified" line out.)
 */
static bool cert_verified(const struct verify_result *r)
{
	if (!r->origin[0])
		return false;
	if (r->status == VERIFY_OK || r->status == VERIFY_LOSS || r->status == VERIFY_UNSEALED)
		return true;
	return r->status == VERIFY_INVALID && r->err_line > 1;
}

static void print_json(const char *log, const struct verify_result *r)
{
	size_t i;

	printf("{\"status\":");
	json_str(stdout, status_word(r->status));
	printf(",\"exit\":%d,\"log\":", r->status);
	json_str(stdout, log);
	printf(",\"origin\":");
	json_str(stdout, r->origin);
	printf(",\"lines\":%" PRIu64 ",\"segments\":%u,\"checkpoints\":%" PRIu64
	       ",\"last_checkpoint_size\":%" PRIu64 ",\"sealed\":%s,\"unsealed_lines\":%" PRIu64
	       ",\"partial_line\":%s,\"exported_checkpoints\":%" PRIu64 ",\"anomalies\":%" PRIu64
	       ",\"declared_loss\":%" PRIu64 ",\"unlogged\":%" PRIu64 ",\"missing_kseq\":%" PRIu64,
	       r->lines, r->segments, r->checkpoints, r->last_checkpoint_size,
	       r->sealed ? "true" : "false", r->unsealed_lines, r->partial_line ? "true" : "false",
	       r->ext_checkpoints, r->anomalies, r->declared_loss, r->unlogged, r->missing_kseq);
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
	printf("sluice verify ");
	human_str(stdout, log);
	printf("\n");
	if (cert_verified(r)) {
		printf("  run:         ");
		human_str(stdout, r->origin);
		printf(" (run key certified by host key ");
		human_str(stdout, r->host_key_name);
		printf(")\n");
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
	switch (r->status) {
	case VERIFY_OK:
		printf("OK: intact and complete\n");
		break;
	case VERIFY_LOSS:
		printf("LOSS: intact and sealed; %" PRIu64 " kernel records were lost, every one "
		       "declared in a signed loss record\n",
		       r->declared_loss);
		break;
	case VERIFY_UNSEALED:
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

/* The host key: --key, else $SLUICE_PUB, else the default file if it exists. */
static int host_key(const char *opt, char *buf, size_t size)
{
	const char *path = opt;
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
	err = note_key_file_read(path, buf, size);
	if (err) {
		fprintf(stderr, "sluice verify: read host key %s: %s\n", path, strerror(-err));
		return err;
	}
	return 0;
}

int verify_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"key", required_argument, NULL, 'k'},
		{"checkpoints", required_argument, NULL, 'c'},
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
	while ((c = getopt_long(argc, argv, "k:c:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			key_path = optarg;
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
