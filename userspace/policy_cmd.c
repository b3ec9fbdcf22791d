// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>

#include "../policy/policy.h"
#include "policy_cmd.h"
#include "policy_tools.h"

static int check(const char *path)
{
	struct policy *p = NULL;
	struct policy_compiled *c = NULL;
	char err[1024];
	int ret = 1;

	if (policy_load_file(path, &p, err, sizeof(err)) ||
	    policy_compile(p, &c, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	policy_print_summary(p, c, stdout);
	ret = 0;
out:
	policy_compiled_free(c);
	policy_free(p);
	return ret;
}

int policy_cmd_main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "check"))
		return check(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "suggest"))
		return policy_suggest_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "replay"))
		return policy_replay_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "diff"))
		return policy_diff_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: sluice policy check FILE\n"
			"       sluice policy suggest LOG... [--key PUB] [--min-runs N] [--unverified] "
			"[-o FILE]\n"
			"       sluice policy replay POLICY LOG... [--key PUB] [--unverified] [--json]\n"
			"       sluice policy diff OLD NEW\n");
	return 2;
}
