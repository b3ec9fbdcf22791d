#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The selftests on Debian's own kernels, 6.1 (bookworm) and 6.12 (bookworm-backports), each booted
# in qemu (selftests/vm/vmtest.sh) on this machine's root and build: the ones that show what the
# development kernel cannot. test_lsm.sh: the BPF LSM layer, which the development kernel
# refuses to load at all; test_connect.sh: the decision layer's verdicts, errnos and log lines
# on the oldest kernel sluice supports. `make vmtest` runs every selftest on both kernels (an
# hour or more each under emulation).
#
# Environment: SL_VM_TESTS (the test files, default the two above), SL_VM_TIMEOUT (s per VM).

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
[[ -n ${SLUICE_VM:-} ]] && skip_all "already inside a selftest VM"
command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 not installed (make deps)"
[[ $(uname -m) == x86_64 ]] || skip_all "the selftest VMs boot Debian's amd64 kernels; this is $(uname -m)"

read -r -a tests <<<"${SL_VM_TESTS:-selftests/test_lsm.sh selftests/test_connect.sh}"
# vmtest.sh speaks TAP itself: its lines are this file's (its "TAP version" line is this one's)
bash "$SL_LIB_DIR/vm/vmtest.sh" -t "${SL_VM_TIMEOUT:-2400}" -k 6.1 -k 6.12 "${tests[@]}" |
	sed '/^TAP version/d'
exit "${PIPESTATUS[0]}"
