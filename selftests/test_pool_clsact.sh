#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# test_pool.sh again, every host side a clsact filter (SLUICE_SELFTEST_TC_CLSACT=1) as on kernels
# without tcx (before 6.6): a filter has no link whose pin ends it, so its run's end removes it
# only if the writer found it again. Here the daemon that takes runs N and M over runs in their
# own network namespace; once a filter outlived its run (the take-over had not searched that
# namespace), it dropped every frame of the namespace, the other runs' too. On a kernel without
# tcx test_pool.sh runs this way itself, and this file skips.

kernel=$(uname -r)
major=${kernel%%.*}
minor=${kernel#*.}
minor=${minor%%[!0-9]*}
if ((major < 6 || (major == 6 && minor < 6))); then
	echo "1..0 # SKIP kernel $kernel has no tcx: test_pool.sh's host sides are clsact filters already"
	exit 0
fi
SLUICE_SELFTEST_TC_CLSACT=1 exec bash "$(dirname "${BASH_SOURCE[0]}")/test_pool.sh" "$@"
