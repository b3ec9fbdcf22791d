// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sluice: command dispatch. Each subcommand lives in its own module. */
#include <stdio.h>
#include <string.h>

#include "attach_cmd.h"
#include "client_cmd.h"
#include "daemon.h"
#include "events_cmd.h"
#include "keygen_cmd.h"
#include "oci_hook.h"
#include "oci_runtime.h"
#include "policy_cmd.h"
#include "report.h"
#include "resume.h"
#include "run.h"
#include "verify_cmd.h"

#include "version.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  run --policy FILE [options] -- CMD [ARG…]   run CMD with its egress confined\n"
		"  resume RUN_ID [options]                     take over a run whose sluice died\n"
		"  attach (--cgroup P|--pid N|--container C|--unit U) --policy FILE --run-id ID\n"
		"                                              confine an existing cgroup (daemon)\n"
		"  oci-hook [--policy FILE]                    OCI createRuntime hook: attach first\n"
		"  oci-runtime [options] -- RUNC-ARGS          runc with that hook added (Docker)\n"
		"  policy check FILE                           validate a policy, show what it enforces\n"
		"  policy suggest LOG... [-o FILE]             a policy from what verified runs did\n"
		"  policy replay POLICY LOG... [--json]        what POLICY would have done to them\n"
		"  policy diff OLD NEW                         what changes between two policies\n"
		"  keygen [--name NAME] FILE                   create the key pair that signs logs\n"
		"  verify LOG [--key PUB] [--checkpoints F]    check a log's chain, signatures, seal\n"
		"  daemon [options]                            the per-host agent: attaches runs to\n"
		"                                              cgroups others make\n"
		"  detach | status | set-mode | replace-policy requests to the daemon (--help)\n"
		"  events [-f] [filters] [LOG|-]               show a log's records, or the daemon's\n"
		"  metrics [--textfile PATH] LOG...            Prometheus metrics of logs\n"
		"  report LOG... [--key PUB] -o FILE           one HTML page of what the logs show\n"
		"  version                                     print the version\n"
		"\n"
		"'sluice run --help' lists the options of run.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "run"))
		return run_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "resume"))
		return resume_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "attach"))
		return attach_cmd_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "oci-hook"))
		return oci_hook_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "oci-runtime"))
		return oci_runtime_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "policy"))
		return policy_cmd_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "keygen"))
		return keygen_cmd_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verify"))
		return verify_cmd_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "daemon"))
		return daemon_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "detach") || !strcmp(argv[1], "status") ||
	    !strcmp(argv[1], "set-mode") || !strcmp(argv[1], "replace-policy"))
		return client_cmd_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "events"))
		return events_cmd_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "metrics"))
		return metrics_cmd_main(argc - 1, argv + 1, SLUICE_VERSION);
	if (!strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("sluice %s\n", SLUICE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "sluice: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
