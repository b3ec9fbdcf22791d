#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The selftests on Debian's own kernels, 6.1 (bookworm) and 6.12 (bookworm-backports), each booted
# in qemu (selftests/vm/vmtest.sh) on this machine's root and build: the ones that show what the
# development kernel cannot. test_lsm.sh: the BPF LSM layer, which the development kernel
# refuses to load at all, on both; test_connect.sh: the decision layer's verdicts, errnos and
# log lines, on the oldest kernel sluice supports (6.1; under emulation it takes ~15 minutes,
# so 6.12 gets it from `make vmtest`, which runs every selftest on both kernels: an hour or
# more each). A skip of test_lsm.sh on a kernel whose active LSMs include bpf (the guest says
# them) fails, with the test's reason: that layer is what these VMs are booted for.
#
# Environment: SL_VM_TESTS_6_1, SL_VM_TESTS_6_12 (the test files per kernel, defaults above),
# SL_VM_TIMEOUT (s per VM).

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
[[ -n ${SLUICE_VM:-} ]] && skip_all "already inside a selftest VM"
command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 not installed (make deps)"
[[ $(uname -m) == x86_64 ]] || skip_all "the selftest VMs boot Debian's amd64 kernels; this is $(uname -m)"

n=0 failed=0
for series in 6.1 6.12; do
	var=SL_VM_TESTS_${series//./_}
	default="selftests/test_lsm.sh"
	[[ $series == 6.1 ]] && default+=" selftests/test_connect.sh"
	read -r -a tests <<<"${!var:-$default}"
	# vmtest.sh speaks TAP for one run; its lines become this file's, numbered on
	out=$(bash "$SL_LIB_DIR/vm/vmtest.sh" -t "${SL_VM_TIMEOUT:-2400}" -k "$series" "${tests[@]}")
	[[ $? -eq 0 ]] || failed=1
	while IFS= read -r line; do
		case $line in
		"TAP version"* | 1..*) ;;
		"ok "* | "not ok "*)
			n=$((n + 1))
			sed -E "s/^(not )?ok [0-9]+/\\1ok $n/" <<<"$line"
			;;
		*) printf '%s\n' "$line" ;;
		esac
	done <<<"$out"
done
echo "1..$n"
exit "$failed"
