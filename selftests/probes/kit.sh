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
# probe -> why a "contained" of the next kit_judge means nothing (kit_pid_honesty): skipped
declare -gA KIT_CAVEAT=()

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
	KIT_CAVEAT=()
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

# kit_pid_start PID: process PID's start time (/proc/PID/stat, field 22): with the pid, what
# names one process (a pid alone may be another process's by the next step).
kit_pid_start() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	# the fields after "PID (COMM) ", COMM may hold anything
	s=${s##*) }
	# shellcheck disable=SC2086 # (split on purpose)
	set -- $s
	[[ ${20:-} =~ ^[0-9]+$ ]] && echo "${20}"
}

# kit_links NSFILE: the links of the network namespace NSFILE that are not loopback, by name,
# comma separated ("" when loopback alone). Loopback is told by its flag (the "<...>" token, not
# the rest of the line: an alias or altname may say LOOPBACK), not by its name.
kit_links() {
	nsenter --net="$1" ip -o link show 2>&1 |
		awk -F': ' '$3 !~ /^<([A-Z0-9_-]*,)*LOOPBACK[,>]/ { sub(/@.*/, "", $2)
			printf "%s%s", sep, $2; sep = ", " }'
}

# kit_pid_refusal PID [NSDIR]: why the sandbox PID is in cannot be probed (printed), or nothing.
# NSDIR: its namespaces pinned (kit_enter_pid), looked at instead of /proc/PID/ns.
kit_pid_refusal() {
	local pid=$1 d=${2:-/proc/$1/ns} ns links
	if [[ ! $pid =~ ^[1-9][0-9]{0,9}$ ]]; then
		echo "\"$pid\" is not a process id"
		return
	fi
	if ! ns=$(stat -L -c %d:%i "$d/net" 2>/dev/null); then
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
	# The kit's binary is on this machine's file system: it runs in this machine's mount
	# namespace. Inside a user namespace of the sandbox's, the sandbox's root could trace it (or
	# the nsenter before it, still this machine's root) and reach this machine's files through
	# /proc/PID/root with the namespace's capabilities.
	if [[ $(stat -L -c %d:%i "$d/user" 2>/dev/null) != "$(stat -L -c %d:%i /proc/self/ns/user)" ]]
	then
		echo "process $pid is in a user namespace of its own (rootless): the kit, which runs" \
			"in this machine's mount namespace, would be open to the sandbox's root there" \
			"(ptrace, /proc/PID/root); probe such a sandbox with --enter, in the" \
			"namespace the kit makes"
		return
	fi
	links=$(kit_links "$d/net")
	if [[ -n $links ]]; then
		echo "process $pid's network namespace has links other than loopback ($links):" \
			"the probes (to the metadata address among others) could leave through" \
			"them for a real network; the kit probes a sandbox started with no" \
			"network (podman --network none, unshare --net, an empty namespace) and" \
			"lends it its own link to the test hosts"
		return
	fi
}

# kit_pin PID START DIR NETNS: process PID's namespaces bind-mounted in DIR (net, uts, ipc, pid,
# user; net as /run/netns/NETNS, DIR/net a link to it), so that every later step acts on the
# namespaces validated, not on whatever process has the pid by then; fails (1) unless PID still
# started at START once they are pinned.
kit_pin() {
	local pid=$1 start=$2 d=$3 f ns
	mkdir -p /run/netns && mkdir -m 0755 "$d" || return 1
	for ns in net uts ipc pid user; do
		f=$d/$ns
		[[ $ns == net ]] && f=/run/netns/$4 && ln -s "$f" "$d/net"
		{ : >"$f" && mount --bind "/proc/$pid/ns/$ns" "$f"; } 2>/dev/null || return 1
	done
	[[ $(kit_pid_start "$pid") == "$start" ]]
}

# kit_unpin DIR NETNS: undo kit_pin.
kit_unpin() {
	local f
	for f in "$1"/uts "$1"/ipc "$1"/pid "$1"/user "/run/netns/$2"; do
		umount "$f" 2>/dev/null
		rm -f -- "$f"
	done
	rm -f -- "$1/net"
	rmdir -- "$1" 2>/dev/null
	return 0
}

# kit_status PID FIELD: FIELD of /proc/PID/status.
kit_status() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null
}

# kit_enter_pid PID: the kit in the running sandbox PID is in (the header above says how); its
# output in $KIT_OUT. The kit's link is lent to the sandbox's namespace for the run. The
# sandbox's namespaces are pinned first (kit_pin) and only the pins are used after; what is
# read of the process (/proc/PID/...) is trusted only if it still started at the same time after.
kit_enter_pid() {
	local pid=$1 n why start pin pnet tcg cg cmd uid euid gid egid groups bnd amb prm nnp seccomp ns
	n=$((KIT_N += 1))
	KIT_OUT=$SL_TMP/kit-$n.out
	KIT_CAVEAT=()
	start=$(kit_pid_start "$pid") || bail_out "--pid $pid: no such process"
	pin=/run/sl-probekit-$SL_ID-$n
	pnet=sl-sbx-$SL_ID-$n
	sl_on_exit "$(printf '%q ' kit_unpin "$pin" "$pnet")"
	kit_pin "$pid" "$start" "$pin" "$pnet" ||
		bail_out "--pid $pid: ended (or cannot pin its namespaces): not probed"
	why=$(kit_pid_refusal "$pid" "$pin")
	[[ -z $why ]] || bail_out "--pid $pid: $why"
	# the sandbox's process, as this machine sees it
	read -r _ uid euid _ < <(grep '^Uid:' "/proc/$pid/status")
	read -r _ gid egid _ < <(grep '^Gid:' "/proc/$pid/status")
	groups=$(kit_status "$pid" Groups | tr -s ' \t' ',' | sed 's/,$//')
	bnd=$(kit_status "$pid" CapBnd)
	amb=$(kit_status "$pid" CapAmb)
	prm=$(kit_status "$pid" CapPrm)
	nnp=$(kit_status "$pid" NoNewPrivs)
	seccomp=$(kit_status "$pid" Seccomp)
	tcg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup" 2>/dev/null)
	[[ $(kit_pid_start "$pid") == "$start" ]] ||
		bail_out "--pid $pid: ended while the kit read it: not probed"
	# all of it goes into a command line: numbers, hex and a path of a safe charset only
	[[ $uid =~ ^[0-9]+$ && $gid =~ ^[0-9]+$ && $groups =~ ^[0-9,]*$ && $nnp =~ ^[01]$ &&
		$bnd =~ ^[0-9a-f]{16}$ && $amb =~ ^[0-9a-f]{16}$ && $prm =~ ^[0-9a-f]{16}$ ]] ||
		bail_out "--pid $pid: unexpected /proc/$pid/status (uid \"$uid\", gid \"$gid\"): not probed"
	[[ $tcg =~ ^/[A-Za-z0-9_.@:+=,/-]*$ && $tcg != *..* ]] ||
		bail_out "--pid $pid: its cgroup (\"$tcg\") has characters other than letters, digits" \
			"and _.@:+=,/- (or ..): the kit makes its own below it, and will not handle that name"
	tcg=$(cg2_mount)$tcg
	[[ -d $tcg ]] || bail_out "--pid $pid: its cgroup ($tcg) is not on the cgroup2 mount here"
	cg=$tcg/sl-probekit-$SL_ID-$n
	mkdir "$cg" || bail_out "--pid $pid: cannot make the kit's cgroup below the sandbox's ($cg)"
	# (never eval'd as data: quoted)
	sl_on_exit "$(printf '%q ' sl_cgroup_remove "$cg")"
	# the namespaces it has of its own, by their pins (one it shares with this machine is not
	# entered again); its user namespace is this machine's (kit_pid_refusal)
	cmd="nsenter --net=$pin/net"
	for ns in uts ipc pid; do
		[[ $(stat -L -c %d:%i "$pin/$ns") == $(stat -L -c %d:%i "/proc/$$/ns/$ns") ]] ||
			cmd+=" --$ns=$pin/$ns"
	done
	cmd+=" -- setpriv --reuid $uid --regid $gid"
	if [[ -z $groups ]]; then
		cmd+=" --clear-groups"
	else
		cmd+=" --groups $groups"
	fi
	cmd+=" --bounding-set $(kit_caps "$bnd") --inh-caps $(kit_caps "$amb")"
	cmd+=" --ambient-caps $(kit_caps "$amb")"
	[[ $nnp == 1 ]] && cmd+=" --no-new-privs"
	[[ $uid:$gid == "$euid:$egid" ]] ||
		tap_diag "process $pid's effective ids ($euid:$egid) are not its real ones: the kit" \
			"runs as the real ones ($uid:$gid); a road only the effective ones open shows" \
			"as contained though the sandbox's process could take it"
	kit_pid_honesty "$pid" "$pin" "$uid" "$bnd" "$amb" "$prm" "$seccomp"
	# the link: from the kit's namespace into the sandbox's (its pin), and back after
	if ! ip -n "$SL_NS_RUN" link set veth0 netns "$pnet"; then
		bail_out "--pid $pid: cannot lend the kit's link to its namespace"
	fi
	KIT_LENT_IDX=$(kit_link_index "$pin/net" veth0)
	if [[ -z $KIT_LENT_IDX ]] || ! kit_link_config "$pin/net" ||
		[[ $(kit_link_index "$pin/net" veth0) != "$KIT_LENT_IDX" ]]; then
		kit_link_home "$pin" "$pnet"
		bail_out "--pid $pid: cannot lend the kit's link to its namespace (or it changed there)"
	fi
	why=$(kit_links "$pin/net")
	if [[ $why != veth0 ]]; then
		kit_link_home "$pin" "$pnet"
		bail_out "--pid $pid: links appeared in its namespace meanwhile ($why): not probed"
	fi
	cmd+=" -- $(kit_args "$pin/net") --ifindex $KIT_LENT_IDX"
	kit_run "$cg" "$cmd"
	kit_link_home "$pin" "$pnet"
}

# kit_pid_honesty PID PIN UID BND AMB PRM SECCOMP: a diagnostic for each way the kit in the
# sandbox of PID is weaker than its process or its namespace differs from the control's; the
# rows that depend on it would show "contained" where the sandbox may not be: KIT_CAVEAT makes
# them skipped (a NOT contained stays so: the road was open all the same).
kit_pid_honesty() {
	local pid=$1 pin=$2 uid=$3 bnd=$((16#$4)) amb=$((16#$5)) prm=$((16#$6)) seccomp=$7 have v
	# what the kit's process will hold: root keeps its bounding set, others the ambient set
	if [[ $uid == 0 ]]; then have=$bnd; else have=$amb; fi
	if ((prm & ~have)); then
		tap_diag "process $pid holds capabilities the kit cannot carry" \
			"($(kit_caps "$(printf %x $((prm & ~have)))" | sed 's/^-all,//'), permitted, not" \
			"ambient): a road only they open (raw and packet sockets need cap_13) shows as" \
			"contained though the sandbox's process could take it"
		# CAP_NET_RAW (13): raw, packet and SOCK_PACKET sockets
		if ((prm & ~have & 1 << 13)); then
			for v in P12 P13 P23; do
				KIT_CAVEAT[$v]="process $pid holds CAP_NET_RAW (permitted, not ambient), which the kit could not carry: its contained means nothing"
			done
		fi
	fi
	[[ ${seccomp:-0} == 0 ]] ||
		tap_diag "process $pid has a seccomp filter (mode $seccomp): the kit does not" \
			"carry it, so a road only it closes shows as NOT contained"
	# the control ran with these (kit_up): a road the sandbox's namespace has closed by a sysctl
	# is closed by the namespace, not by the sandbox
	v=$(nsenter --net="$pin/net" sysctl -n net.ipv4.tcp_fastopen 2>/dev/null)
	if ! ((v & 4)); then
		tap_diag "process $pid's namespace has net.ipv4.tcp_fastopen=$v (the control" \
			"had 5): P10 (Fast Open without a cookie) is closed there by the namespace, not" \
			"the sandbox"
		KIT_CAVEAT[P10]="its namespace has net.ipv4.tcp_fastopen=$v (no Fast Open without a cookie): closed by the namespace, not the sandbox"
	fi
	v=$(nsenter --net="$pin/net" sysctl -n net.ipv4.ping_group_range 2>/dev/null | tr -s ' \t' ' ')
	if [[ $v != "0 2147483647" ]]; then
		tap_diag "process $pid's namespace has net.ipv4.ping_group_range=\"$v\" (the" \
			"control had \"0 2147483647\"): P12's ping socket may be closed there by the" \
			"namespace, not the sandbox"
		KIT_CAVEAT[P12]="its namespace has net.ipv4.ping_group_range=$v (the control's: 0 2147483647): its ping socket may be closed by the namespace, not the sandbox"
	fi
}

# kit_link_index NSFILE NAME: the ifindex of link NAME in NSFILE if it has the kit's MAC.
kit_link_index() {
	nsenter --net="$1" ip -o link show 2>/dev/null | awk -F': ' -v n="$2" -v mac="$KIT_IF_MAC" \
		"$KIT_AWK_MAC"'
		{ name = $2; sub(/@.*/, "", name) }
		name == n && kit_mac($0) == mac { print $1; exit }'
}

# (awk) kit_mac(LINE): the MAC of an "ip -o link" line: the first link/ether token (an alias,
# later on the line, may say anything)
KIT_AWK_MAC='function kit_mac(l) {
	return match(l, / link\/ether [0-9a-f:]+ /) ? substr(l, RSTART + 12, RLENGTH - 13) : "" }'


# kit_link_home PIN NETNS: the kit's link back from the sandbox's namespace (its pin) to the
# kit's: the one link there with the ifindex and MAC it was lent with, whatever its name now;
# configured in the kit's namespace only if it has the kit's MAC.
kit_link_home() {
	local name
	name=$(nsenter --net="$1/net" ip -o link show 2>/dev/null | awk -F': ' \
		-v i="$KIT_LENT_IDX" -v mac="$KIT_IF_MAC" "$KIT_AWK_MAC"'
		$1 == i && kit_mac($0) == mac {
			sub(/@.*/, "", $2); print $2; exit }')
	if [[ -z $name ]] || ! ip -n "$2" link set dev "$name" netns "$SL_NS_RUN"; then
		bail_out "cannot take the kit's link back from the sandbox's namespace"
	fi
	name=$(ip -n "$SL_NS_RUN" -o link show | awk -F': ' -v mac="$KIT_IF_MAC" "$KIT_AWK_MAC"'
		kit_mac($0) == mac { sub(/@.*/, "", $2); print $2; exit }')
	[[ -n $name ]] || bail_out "the kit's link (MAC $KIT_IF_MAC) did not come home"
	[[ $name == veth0 ]] || ip -n "$SL_NS_RUN" link set dev "$name" name veth0 ||
		bail_out "cannot rename the kit's link ($name) back to veth0"
	kit_link_config "/run/netns/$SL_NS_RUN" ||
		bail_out "cannot configure the kit's link in its namespace again"
}

# kit_caps HEX: a capability set (/proc/PID/status) as setpriv's list: -all,+cap_N…
kit_caps() {
	local v=$((16#$1)) i out=-all
	for ((i = 0; i < 64; i++)); do
		((v >> i & 1)) && out+=",+cap_$i"
	done
	echo "$out"
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
	# (on stderr: stdout is the rows, read by the caller's $(…))
	if ! grep -q . "$KIT_OUT"; then
		echo "# the kit printed nothing in the sandbox (exit status $KIT_RC)" >&2
		sed 's/^/#   /' "$KIT_OUT.err" >&2 2>/dev/null
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
	for p in "${!KIT_CAVEAT[@]}"; do
		rows=$(awk -F '\t' -v OFS='\t' -v p="$p" -v why="${KIT_CAVEAT[$p]}" '
			$2 == p && $3 == "contained" { $3 = "skipped"; $4 = why } { print }' <<<"$rows")
	done
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
