#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The BPF programs themselves, through BPF_PROG_RUN (selftests/progrun/): the host-side tc
# program's and the backstop's judgement of crafted frames, the TLS server-name check on crafted
# ClientHellos, and the decision layer's verdict on crafted destinations, with the policy maps
# filled by the loader; and, since no kernel can BPF_PROG_RUN a cgroup sock_addr program, the
# loaded connect4/6 and sendmsg4/6 through real calls from a child in a cgroup of the test's own
# and a network namespace with nothing up. Hundreds of cases in seconds; no topology, and no
# packet on a wire. Root: it loads BPF. The cases are in selftests/progrun/progrun.c.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
PROGRUN=$SL_TOOLS/sl_progrun
[[ -x $PROGRUN ]] || bail_out "missing $PROGRUN (make all)"

# lib.sh printed the TAP header; the driver prints the plan and a line per case
"$PROGRUN" | sed '1{/^TAP version/d}'
exit "${PIPESTATUS[0]}"
