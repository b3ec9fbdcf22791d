// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl_verifier: what the kernel's verifier spends on each of sluice's BPF programs
 * (bench.py --verifier-only; root).
 *
 *   sl_verifier OBJECT...    load each BPF object (.output/bpf/NAME.linked.o) as libbpf does for
 *                            sluice, with the verifier's statistics (log level 4), and unload it
 *
 * One tab-separated line per program: object, program, verification time in usec (the kernel's
 * own figure), instructions processed, peak states, total states, instructions as loaded
 * (xlated, what selftests/bench-budgets.txt holds), and the object's whole load in usec (maps,
 * relocation and every program of it, wall clock). An object the kernel refuses
 * (BPF LSM programs where the LSM is off: EPERM) is one line "OBJECT - refused ERRNO", and what
 * the verifier said of each program on stderr.
 * The objects load as they are built: sl_cfg_frag_check, the one .rodata value the loader sets
 * before load, keeps its default. Exit status 0, or 2 on a usage error.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_SIZE 65536

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* the figure after KEY in the verifier's statistics, -1 if the log has none */
static long long stat_of(const char *log, const char *key)
{
	const char *p = strstr(log, key);

	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static void measure(const char *path)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_program *prog;
	long long t0, load_us;
	int n = 0, i = 0, err;
	char (*logs)[LOG_SIZE];

	if (!obj) {
		printf("%s\t-\trefused %d\n", path, errno);
		return;
	}
	bpf_object__for_each_program(prog, obj)
		n++;
	logs = calloc(n ? n : 1, LOG_SIZE);
	if (!logs) {
		bpf_object__close(obj);
		printf("%s\t-\trefused %d\n", path, ENOMEM);
		return;
	}
	bpf_object__for_each_program(prog, obj) {
		bpf_program__set_log_buf(prog, logs[i++], LOG_SIZE);
		bpf_program__set_log_level(prog, 4);
	}
	t0 = now_us();
	err = bpf_object__load(obj);
	load_us = now_us() - t0;
	if (err) {
		/* the kernel's reasons, which libbpf does not print from a buffer of ours */
		i = 0;
		bpf_object__for_each_program(prog, obj) {
			if (logs[i][0])
				fprintf(stderr, "%s: %s:\n%s", path, bpf_program__name(prog), logs[i]);
			i++;
		}
		printf("%s\t-\trefused %d\n", path, -err);
	} else {
		i = 0;
		bpf_object__for_each_program(prog, obj) {
			const char *log = logs[i++];
			struct bpf_prog_info info = {};
			__u32 len = sizeof(info);

			if (bpf_prog_get_info_by_fd(bpf_program__fd(prog), &info, &len))
				info.xlated_prog_len = 0;
			printf("%s\t%s\t%lld\t%lld\t%lld\t%lld\t%u\t%lld\n", path,
			       bpf_program__name(prog), stat_of(log, "verification time "),
			       stat_of(log, "processed "), stat_of(log, "peak_states "),
			       stat_of(log, "total_states "), info.xlated_prog_len / 8, load_us);
		}
	}
	bpf_object__close(obj);
	free(logs);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: sl_verifier OBJECT...\n");
		return 2;
	}
	libbpf_set_print(quiet);
	for (int i = 1; i < argc; i++)
		measure(argv[i]);
	return 0;
}
