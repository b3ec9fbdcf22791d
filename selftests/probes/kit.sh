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
#   kit_pid_refusal PID         why the sandbox process PID runs in cannot be probed, or nothing
#   kit_enter_pid PID           run the kit in the namespaces of the running sandbox PID is in
#                               (below), over the kit's link lent to it for the run
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
#
# A sandbox already running (kit_enter_pid) is not in the kit's namespace, and whatever links its
# own namespace has may lead to a real network: the kit probes only one whose namespace has no
# link but loopback (podman --network none, unshare --net, sluice run --netns with an empty
# namespace), lends it the kit's link to the router (veth0, moved in with its addresses and
# routes, moved back after), and the kit itself (sl_escape) sends nothing while any other link is
# there. The kit runs in the sandbox's network, UTS, IPC and PID namespaces (and its user
# namespace, if it has one), in a cgroup below the sandbox's (its hooks apply; whatever the kit
# leaves behind is killed with it), as the sandbox's process's uid, gids, capability bounding
# and ambient sets and no_new_privs: no stronger than the sandbox's own processes on those. Not
# carried: its seccomp filter and LSM label (the kit says so), nor its mount namespace (the
# kit's binary is on this machine's).

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
	KIT_IF_MAC=$(ip -n "$SL_NS_RUN" -o link show veth0 |
		sed -n 's|.* link/ether \([0-9a-f:]*\) .*|\1|p')
	[[ -n $KIT_IF_MAC ]] || bail_out "no MAC on the kit's veth"
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
	cmd+=" $(kit_args "$KIT_NETNS")"
	cg=$(sl_cgroup_new "kit-$n") || bail_out "cannot make a cgroup for the sandbox"
	kit_run "$cg" "$cmd"
}

# kit_args NSFILE: the kit's own arguments for a run in the network namespace NSFILE, which has
# the kit's link.
kit_args() {
	echo "$KIT --netns-inode $(stat -L -c %i "$1") --ifname $SL_RUN_IF --if-mac $KIT_IF_MAC" \
		"--gw-mac $KIT_GW_MAC --timeout-ms $((300 * SL_SLOW))"
}

# kit_run CGROUP CMD: CMD (the kit in its sandbox) in CGROUP, judged from the marks set here;
# then time for late traffic to arrive, and CGROUP removed with whatever is left in it.
kit_run() {
	local cg=$1 cmd=$2
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

# kit_link_config NSFILE: the kit's link (veth0) in the namespace NSFILE, as sl_topo_build
# makes it: its addresses, up, the default routes via the router. No duplicate address
# detection on it, so that its link-local address is usable at once (a setting of the link's,
# not of the namespace's).
kit_link_config() {
	nsenter --net="$1" sh -ec '
		sysctl -qw net.ipv6.conf.veth0.accept_dad=0
		ip addr add 10.200.1.2/30 dev veth0
		ip addr add fd10:200:1::2/64 dev veth0 nodad
		ip link set veth0 up
		ip route add default via 10.200.1.1
		ip -6 route add default via fd10:200:1::1'
}

# kit_pid_refusal PID: why the sandbox PID is in cannot be probed (printed), or nothing.
kit_pid_refusal() {
	local pid=$1 ns links
	if [[ ! $pid =~ ^[1-9][0-9]{0,9}$ ]]; then
		echo "\"$pid\" is not a process id"
		return
	fi
	if ! ns=$(stat -L -c %d:%i "/proc/$pid/ns/net" 2>/dev/null); then
		echo "no process $pid (or its network namespace cannot be read)"
		return
	fi
	# (pid 1's namespace may be out of sight, in a container)
	if [[ $ns == "$(stat -L -c %d:%i /proc/self/ns/net)" ||
		$ns == "$(stat -L -c %d:%i /proc/1/ns/net 2>/dev/null)" ]]; then
		echo "process $pid is in this machine's own network namespace, not a sandbox's:" \
			"the probes would go out on the real network"
		return
	fi
	# loopback is told by its flag, not its name
	links=$(nsenter --net="/proc/$pid/ns/net" ip -o link show 2>&1 |
		awk -F': ' '$3 !~ /LOOPBACK/ { sub(/@.*/, "", $2); printf "%s%s", sep, $2
			sep = ", " }')
	if [[ -n $links ]]; then
		echo "process $pid's network namespace has links other than loopback ($links):" \
			"the probes (to the metadata address among others) could leave through" \
			"them for a real network; the kit probes a sandbox started with no" \
			"network (podman --network none, unshare --net, an empty namespace) and" \
			"lends it its own link to the test hosts"
		return
	fi
}

# kit_enter_pid PID: the kit in the running sandbox PID is in (the header above says how); its
# output in $KIT_OUT. The kit's link is lent to the sandbox's namespace for the run.
kit_enter_pid() {
	local pid=$1 n why tcg cg cmd nsf=/proc/$1/ns/net uid gid groups bnd amb nnp seccomp ns
	n=$((KIT_N += 1))
	KIT_OUT=$SL_TMP/kit-$n.out
	why=$(kit_pid_refusal "$pid")
	[[ -z $why ]] || bail_out "--pid $pid: $why"
	# the sandbox's process, as this machine sees it
	read -r _ uid _ < <(grep '^Uid:' "/proc/$pid/status") || bail_out "--pid $pid: gone"
	read -r _ gid _ < <(grep '^Gid:' "/proc/$pid/status")
	groups=$(sed -n 's/^Groups:[[:space:]]*//p' "/proc/$pid/status" | tr -s ' \t' ',' |
		sed 's/,$//')
	bnd=$(sed -n 's/^CapBnd:[[:space:]]*//p' "/proc/$pid/status")
	amb=$(sed -n 's/^CapAmb:[[:space:]]*//p' "/proc/$pid/status")
	nnp=$(sed -n 's/^NoNewPrivs:[[:space:]]*//p' "/proc/$pid/status")
	seccomp=$(sed -n 's/^Seccomp:[[:space:]]*//p' "/proc/$pid/status")
	tcg=$(cg2_mount)$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
	[[ -d $tcg ]] || bail_out "--pid $pid: its cgroup ($tcg) is not on the cgroup2 mount here"
	cg=$tcg/sl-probekit-$SL_ID-$n
	mkdir "$cg" || bail_out "--pid $pid: cannot make the kit's cgroup below the sandbox's ($cg)"
	sl_on_exit "sl_cgroup_remove '$cg'"
	# the namespaces it has of its own (one it shares with this machine may not be entered again
	# from its user namespace)
	cmd="nsenter --target $pid --net"
	for ns in uts ipc pid; do
		[[ $(stat -L -c %i "/proc/$pid/ns/$ns") == $(stat -L -c %i "/proc/$$/ns/$ns") ]] ||
			cmd+=" --$ns"
	done
	if [[ $(stat -L -c %i "/proc/$pid/ns/user") != $(stat -L -c %i /proc/self/ns/user) ]]; then
		# the ids as the sandbox's user namespace has them
		cmd+=" --user --preserve-credentials"
		uid=$(kit_id_in "$uid" "/proc/$pid/uid_map")
		gid=$(kit_id_in "$gid" "/proc/$pid/gid_map")
		# (a user namespace may deny setgroups)
		groups=keep
	fi
	cmd+=" -- setpriv --reuid $uid --regid $gid"
	case $groups in
	keep) cmd+=" --keep-groups" ;;
	"") cmd+=" --clear-groups" ;;
	*) cmd+=" --groups $groups" ;;
	esac
	cmd+=" --bounding-set $(kit_caps "$bnd") --inh-caps $(kit_caps "$amb")"
	cmd+=" --ambient-caps $(kit_caps "$amb")"
	[[ $nnp == 1 ]] && cmd+=" --no-new-privs"
	[[ ${seccomp:-0} == 0 ]] ||
		tap_diag "process $pid has a seccomp filter (mode $seccomp): the kit does not" \
			"carry it, so a road only it closes shows as NOT contained"
	# the link: from the kit's namespace into the sandbox's, and back after
	if ! ip -n "$SL_NS_RUN" link set veth0 netns "$pid" || ! kit_link_config "$nsf"; then
		bail_out "--pid $pid: cannot lend the kit's link to its namespace"
	fi
	why=$(nsenter --net="$nsf" ip -o link show |
		awk -F': ' '$3 !~ /LOOPBACK/ && $2 !~ /^veth0@/ { print $2 }')
	if [[ -n $why ]]; then
		kit_link_home "$pid"
		bail_out "--pid $pid: links appeared in its namespace meanwhile ($why): not probed"
	fi
	cmd+=" -- $(kit_args "$nsf")"
	kit_run "$cg" "$cmd"
	kit_link_home "$pid"
}

# kit_link_home PID: the kit's link back from the sandbox of PID to the kit's namespace.
kit_link_home() {
	if ! nsenter --net="/proc/$1/ns/net" ip link set veth0 netns "$SL_NS_RUN" ||
		! kit_link_config "/run/netns/$SL_NS_RUN"; then
		bail_out "cannot take the kit's link back from process $1's namespace"
	fi
}

# kit_caps HEX: a capability set (/proc/PID/status) as setpriv's list: -all,+cap_N…
kit_caps() {
	local v=$((16#$1)) i out=-all
	for ((i = 0; i < 64; i++)); do
		((v >> i & 1)) && out+=",+cap_$i"
	done
	echo "$out"
}

# kit_id_in ID MAP: ID (as this machine has it) as the user namespace of MAP (uid_map) has it.
kit_id_in() {
	awk -v id="$1" '$2 <= id && id < $2 + $3 { print id - $2 + $1; f = 1; exit }
		END { if (!f) print 65534 }' "$2"
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
