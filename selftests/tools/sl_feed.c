// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_feed: make bench's record source for the writer alone (selftests/bench.py, writer).
 *
 *   sl_feed OBJ PIN_DIR RATE SECONDS   allow records into the live run whose pins are in PIN_DIR
 *                                      (its map-events and map-seq), RATE a second for SECONDS
 *                                      (paced in 1 ms steps; RATE 0: SECONDS is a count, fed as
 *                                      fast as the program runs); prints "fed N lost L
 *                                      ELAPSED_NS CPU_NS" (CPU_NS: this process's own)
 *
 * OBJ is sl_feed.bpf.o, whose program writes each record (selftests/bench/sl_feed.bpf.c): one
 * BPF_PROG_TEST_RUN a step, no socket, so the writer is measured at rates no sender reaches.
 * Exit status 0, or 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>

#include "../../bpf/sluice.h"

struct sl_feed_args {
	struct sl_decision_event tmpl;
	__u32 n;
};

#define STEP_NS 1000000LL /* pacing step */
#define BATCH_MAX 65536	  /* records one run writes at most (a late step catches up in several) */

static int64_t ns_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int feed(int prog_fd, struct sl_feed_args *a, uint64_t n)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = a, .ctx_size_in = sizeof(*a));

	while (n) {
		a->n = n > BATCH_MAX ? BATCH_MAX : (uint32_t)n;
		if (bpf_prog_test_run_opts(prog_fd, &o)) {
			perror("sl_feed: BPF_PROG_TEST_RUN");
			return 2;
		}
		n -= a->n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sl_feed_args a = { .tmpl = {
		.hdr = { .type = SL_EV_DECISION, .version = SL_ABI_VERSION,
			 .size = sizeof(struct sl_decision_event) },
		.port = 5001, .rule_id = 1, .family = 2 /* AF_INET */, .protocol = 17 /* UDP */,
		.hook = SL_HOOK_SENDMSG4, .verdict = SL_VERDICT_ALLOW, .reason = SL_REASON_RULE,
		.enforced = 1, .comm = "sl_feed",
	} };
	char path[4096];
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *counts;
	int64_t t0, c0, next, elapsed;
	uint64_t rate, want, done = 0, vals[2] = { 0, 0 };
	double secs;
	int ev_fd, seq_fd, zero = 0, err;

	if (argc != 5) {
		fprintf(stderr, "usage: sl_feed OBJ PIN_DIR RATE SECONDS\n");
		return 2;
	}
	rate = strtoull(argv[3], NULL, 10);
	secs = strtod(argv[4], NULL);
	want = rate ? (uint64_t)(rate * secs) : (uint64_t)secs;
	a.tmpl.pid = a.tmpl.tgid = (uint32_t)getpid();
	inet_pton(AF_INET, "10.202.0.1", a.tmpl.addr);
	snprintf(path, sizeof(path), "%s/map-events", argv[2]);
	ev_fd = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/map-seq", argv[2]);
	seq_fd = bpf_obj_get(path);
	obj = bpf_object__open_file(argv[1], NULL);
	if (ev_fd < 0 || seq_fd < 0 || !obj) {
		fprintf(stderr, "sl_feed: %s: the run's pins or the object: %s\n", argv[2],
			strerror(errno));
		return 2;
	}
	err = bpf_map__reuse_fd(bpf_object__find_map_by_name(obj, "sl_events"), ev_fd);
	if (!err)
		err = bpf_map__reuse_fd(bpf_object__find_map_by_name(obj, "sl_seq"), seq_fd);
	if (!err)
		err = bpf_object__load(obj);
	prog = bpf_object__find_program_by_name(obj, "sl_feed");
	counts = bpf_object__find_map_by_name(obj, "sl_feed_counts");
	if (err || !prog || !counts) {
		fprintf(stderr, "sl_feed: loading %s: %s\n", argv[1], strerror(-err));
		return 2;
	}
	t0 = ns_of(CLOCK_MONOTONIC);
	c0 = ns_of(CLOCK_PROCESS_CPUTIME_ID);
	if (!rate) {
		err = feed(bpf_program__fd(prog), &a, want);
	} else {
		/* each step feeds what the schedule says is due by now: a late step catches up */
		for (next = t0 + STEP_NS; !err && done < want; next += STEP_NS) {
			struct timespec ts = { next / 1000000000, next % 1000000000 };
			uint64_t due;

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			due = (uint64_t)((double)(ns_of(CLOCK_MONOTONIC) - t0) * rate / 1e9);
			due = due < want ? due : want;
			err = feed(bpf_program__fd(prog), &a, due - done);
			done = due;
		}
	}
	elapsed = ns_of(CLOCK_MONOTONIC) - t0;
	if (err)
		return err;
	if (bpf_map_lookup_elem(bpf_map__fd(counts), &zero, vals)) {
		fprintf(stderr, "sl_feed: reading its counts: %s\n", strerror(errno));
		return 2;
	}
	printf("fed %llu lost %llu %lld %lld\n", (unsigned long long)vals[0],
	       (unsigned long long)vals[1], (long long)elapsed,
	       (long long)(ns_of(CLOCK_PROCESS_CPUTIME_ID) - c0));
	bpf_object__close(obj);
	return 0;
}
