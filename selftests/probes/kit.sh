# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# (Globals here are used by the scripts that source this one.)
# shellcheck disable=SC2034
#
# The escape-probe kit (selftests/README.md, "The probe kit"): the topology of selftests/lib.sh,
# an observer in the test hosts' namespace, the kit's workload (sl_escape) run inside a sandbox
# through a command line given as a template, and the judge. Sourced by probes.sh (make probes)
# and run-external.sh.
#
#   kit_up                      the topology, the observer, its control; KIT_NETNS, KIT_GW_MAC
#   kit_enter TEMPLATE          run the kit in the sandbox TEMPLATE describes (below); its
#                               output in $KIT_OUT
#   kit_control COLUMN          judge the kit run with no sandbox: which roads are open here
#   kit_judge COLUMN [ARGS…]    judge.py's rows for COLUMN, appended to $KIT_RESULTS; one TAP
#                               line per probe ("not ok" for NOT contained)
#   kit_table                   the markdown table of $KIT_RESULTS
#
# TEMPLATE is a shell command that runs what follows it inside the sandbox; the kit's command
# line (sl_escape and its arguments) is appended to it. {netns} stands for the network namespace
# the kit made for the sandbox (/run/netns/NAME: its veth leads to the router and the test
# hosts), {kit} for the kit's path on this machine (a container mounts it at the same path):
#   nsenter --net={netns} --
#   podman run --rm --network ns:{netns} -v {kit}:{kit}:ro --rootfs DIR
#   sluice run --policy P --log L --netns {netns} --

. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

KIT=${KIT:-$SL_TOOLS/sl_escape}
KIT_DIR=$SL_LIB_DIR/probes
KIT_RESULTS=
KIT_OUT=
KIT_N=0
KIT_OBS_MARK=0
KIT_RTR_MARK=0

kit_observed() { tail -n +"$((KIT_OBS_MARK + 1))" "$SL_TMP/observe.log" 2>/dev/null; }

kit_up() {
	local i pid
	[[ -x $KIT ]] || bail_out "$KIT not built (make; needs liburing-dev and a static libc)"
	topo_up
	KIT_NETNS=/run/netns/$SL_NS_RUN
	KIT_RESULTS=$SL_TMP/results.tsv
	: >"$KIT_RESULTS"
	# TCP Fast Open without a cookie (P10) and ping sockets for root (P12) in the sandbox's
	# namespace: the roads exist, whether the sandbox closes them is what is probed
	in_run sysctl -qw net.ipv4.tcp_fastopen=5 'net.ipv4.ping_group_range=0 2147483647' ||
		bail_out "cannot set the sandbox namespace's sysctls"
	KIT_GW_MAC=$(in_rtr cat /sys/class/net/vrun/address) || bail_out "no MAC on the router's veth"
	in_inet python3 "$SL_LIB_DIR/tools/sl_observe.py" --iface veth0 --log "$SL_TMP/observe.log" \
		--pidfile "$SL_TMP/observe.pid" >"$SL_TMP/observe.out" 2>&1 </dev/null &
	pid=$!
	sl_track_pid "$pid"
	for i in $(seq $((100 * SL_SLOW))); do
		[[ -s $SL_TMP/observe.pid ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	[[ -s $SL_TMP/observe.pid ]] || bail_out "the observer did not start: $(cat "$SL_TMP/observe.out")"
	# The observer's control: a datagram from the sandbox's namespace, outside any sandbox,
	# must be seen, or "saw nothing" would mean nothing.
	in_run "$SL_PROBE" udp-sendto 198.51.100.20 9999 >/dev/null 2>&1
	wait_until 3000 grep -q '^ip4 udp 10.200.1.2 [0-9]* 198.51.100.20 9999 ' "$SL_TMP/observe.log"
	tap_check "observer control: a datagram from the sandbox's namespace (no sandbox) is seen" \
		grep -q '^ip4 udp 10.200.1.2 [0-9]* 198.51.100.20 9999 ' "$SL_TMP/observe.log" ||
		bail_out "the observer sees nothing: no verdict would mean anything"
}

# kit_enter TEMPLATE: the kit inside the sandbox, in a cgroup of the test's (whatever the
# sandbox leaves behind, P15's daemon too, goes with it); then time for late traffic to arrive.
kit_enter() {
	local tpl=$1 cmd cg n
	n=$((KIT_N += 1))
	KIT_OUT=$SL_TMP/kit-$n.out
	cmd=${tpl//\{netns\}/$KIT_NETNS}
	cmd=${cmd//\{kit\}/$KIT}
	# the kit sends nothing unless it runs in this very namespace (sl_escape --netns-inode)
	cmd+=" $KIT --netns-inode $(stat -L -c %i "$KIT_NETNS") --ifname $SL_RUN_IF"
	cmd+=" --gw-mac $KIT_GW_MAC --timeout-ms $((300 * SL_SLOW))"
	cg=$(sl_cgroup_new "kit-$n") || bail_out "cannot make a cgroup for the sandbox"
	sink_mark
	KIT_OBS_MARK=$(sl_lines "$SL_TMP/observe.log")
	KIT_RTR_MARK=$SL_RTR_SINK_MARK
	echo "# sandbox: $cmd"
	sl_in_cgroup "$cg" timeout -k 5 $((120 * SL_SLOW)) bash -c "$cmd" \
		>"$KIT_OUT" 2>"$KIT_OUT.err" </dev/null
	KIT_RC=$?
	# P15's daemon connects after the kit ended; the rest may still be on the wire
	sleep "$(awk -v f="$SL_SLOW" 'BEGIN { print 1.0 * f }')"
	sl_cgroup_remove "$cg"
}

# kit_rows COLUMN [judge.py ARGS…]: judge.py's rows for the last kit_enter.
kit_rows() {
	local col=$1
	shift
	kit_observed >"$SL_TMP/observed.$KIT_N"
	tail -n +"$((KIT_RTR_MARK + 1))" "$SL_RTR_LOG" >"$SL_TMP/router.$KIT_N" 2>/dev/null
	"$KIT" --list >"$SL_TMP/kit.list"
	python3 "$KIT_DIR/judge.py" judge --column "$col" --list "$SL_TMP/kit.list" \
		--kit-out "$KIT_OUT" --observed "$SL_TMP/observed.$KIT_N" \
		--router "$SL_TMP/router.$KIT_N" "$@" || bail_out "judge.py failed"
	if ! grep -q . "$KIT_OUT"; then
		tap_diag "the kit printed nothing in the sandbox (exit status $KIT_RC)" >&2
		tap_diag_file "$KIT_OUT.err" >&2
	fi
}

# kit_control COLUMN: judge the last kit_enter as the control, the kit with no sandbox around
# it: each probe should escape (its road is open on this kernel); one that did not is closed
# here whatever the sandbox, and kit_judge reports it as skipped, not contained. Sets
# KIT_CONTROL (the rows, verdicts "escapes" or "closed").
KIT_CONTROL=
kit_control() {
	local col=$1 p verdict why
	KIT_CONTROL=$(kit_rows "$col" --external --kit-only | awk -F '\t' -v OFS='\t' '
		$3 == "not contained" { $3 = "escapes" } $3 == "contained" { $3 = "closed" } { print }')
	printf '%s\n' "$KIT_CONTROL" >>"$KIT_RESULTS"
	while IFS=$'\t' read -r _ p verdict why; do
		case $verdict in
		escapes) tap_ok "$col: $p escapes without a sandbox (the control): $why" ;;
		closed) tap_skip "$col: $p" "closed on this kernel even without a sandbox: $why" ;;
		skipped) tap_skip "$col: $p" "$why" ;;
		esac
	done <<<"$KIT_CONTROL"
}

# kit_judge COLUMN [judge.py ARGS…]: judge the last kit_enter; TAP lines and $KIT_RESULTS rows.
kit_judge() {
	local col=$1 rows p verdict why
	shift
	rows=$(kit_rows "$col" "$@")
	if [[ -n $KIT_CONTROL ]]; then
		# contained where the control did not escape either means nothing: skipped
		rows=$(awk -F '\t' -v OFS='\t' 'NR == FNR { if ($3 == "closed") c[$2] = 1; next }
			$3 == "contained" && c[$2] { $3 = "skipped"
				$4 = "the control (no sandbox) did not get out either: the road is closed on this kernel" }
			{ print }' <(printf '%s\n' "$KIT_CONTROL") <(printf '%s\n' "$rows"))
	fi
	printf '%s\n' "$rows" >>"$KIT_RESULTS"
	while IFS=$'\t' read -r _ p verdict why; do
		case $verdict in
		contained) tap_ok "$col: $p contained: $why" ;;
		skipped) tap_skip "$col: $p" "$why" ;;
		*) tap_fail "$col: $p NOT contained" "$why" ;;
		esac
	done <<<"$rows"
	# a sandbox the kit never ran in is not shown contained by its silence
	if ! grep -qE '^P[0-9]+ [0-9]+ .*: (sent|err|skip)' "$KIT_OUT"; then
		tap_fail "$col: the kit did not run in the sandbox (exit status $KIT_RC)" \
			"$(tail -n 5 "$KIT_OUT.err" 2>/dev/null)"
	fi
}

kit_table() {
	python3 "$KIT_DIR/judge.py" table "$@"
}
