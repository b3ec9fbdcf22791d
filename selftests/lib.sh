# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# (Globals here are used by the test files that source this one.)
# shellcheck disable=SC2034
#
# sluice selftests: TAP 13 output, the throwaway test topology, and helpers to run sluice and read
# what the receiving side saw. Sourced by selftests/test_*.sh.
#
# Topology (no namespace has a route to a real network), one per test process, every name
# suffixed with $SL_ID (= the test's pid):
#
#   sl-run-ID  --veth--  sl-rtr-ID  --veth--  sl-inet-ID
#   workload             router, sink         test hosts on lo, sink
#   veth0 10.200.1.2     vrun 10.200.1.1      veth0 10.200.2.2
#         fd10:200:1::2       fd10:200:1::1         fd10:200:2::2
#                             fe80::1
#                        vinet 10.200.2.1
#                              fd10:200:2::1
#
# Test hosts in sl-inet-ID: 198.51.100.10 (allowed), 198.51.100.20 (unlisted), 203.0.113.7,
# 2001:db8::10, 2001:db8::20, 169.254.169.254 and fd00:ec2::254 (fake metadata server),
# 64:ff9b::a9fe:a9fe. The run netns routes everything to the router; the router routes only the
# test prefixes, to sl-inet; sl-inet routes back to the router. No namespace has a route to a real
# network, and nothing is configured in the root netns: veths are created inside the namespaces.
#
# Both sinks log to files in $SL_TMP; see sl_sink.c for the line format.
#
# A test file:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   require_root; require_sluice; topo_up       # topo_down runs on exit, whatever happens
#   CASE_POLICY=$SL_TMP/p.yaml; cat >"$CASE_POLICY" <<'EOF' … EOF
#   probe_denied "P1" tcp 198.51.100.20 80 EPERM connect4 default
#   tap_done
# Extra cleanup goes through sl_on_exit, not trap (topo_up owns the EXIT trap).
#
# Environment: SLUICE, SL_TOOLS (binaries), SL_KEEP_TMP=1 (keep $SL_TMP for a post-mortem),
# SL_RUN_TIMEOUT (s, per run), SL_SETTLE (s, wait before "nothing arrived"), SL_PROMPT_MS (the
# most a denied call may take), SL_SLOW (a factor for every wait and limit of the helpers below:
# the selftest VMs, under software emulation, set it; default 1).

set -u

SL_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=${REPO:-$(cd "$SL_LIB_DIR/.." && pwd)}
SLUICE=${SLUICE:-$REPO/.output/sluice}
SL_TOOLS=${SL_TOOLS:-$REPO/.output/selftests}
SL_PROBE=$SL_TOOLS/sl_probe
SL_SINK=$SL_TOOLS/sl_sink
# Upper bound for one sluice run; a hang is a failure, not a stuck test suite.
SL_SLOW=${SL_SLOW:-1}
SL_RUN_TIMEOUT=${SL_RUN_TIMEOUT:-$((60 * SL_SLOW))}

SL_ID=$$
SL_NS_RUN=sl-run-$SL_ID
SL_NS_RTR=sl-rtr-$SL_ID
SL_NS_INET=sl-inet-$SL_ID
# Prefix for commands that must run in the workload's netns: "${RUN_EXEC[@]}" CMD…
RUN_EXEC=(ip netns exec "$SL_NS_RUN")
# The same without a new mount namespace: "ip netns exec" mounts a fresh sysfs on /sys, which hides
# the cgroup filesystems mounted below it; a command that needs cgroupfs uses this instead.
RUN_EXEC_NETONLY=(nsenter "--net=/run/netns/$SL_NS_RUN" --)
# The router's address on the run link, reachable from the run netns as fe80::1%veth0.
SL_RTR_LL=fe80::1
SL_RUN_IF=veth0

SL_TMP=
SL_TOPO_UP=0
SL_TAP_N=0
SL_TAP_FAILED=0
SL_TAP_PLANNED=0
SL_RUN_N=0
SL_RUN_ID=
SL_RUN_CGID=
SL_RUN_LOG=
SL_RUN_ARGV=()
SL_RUNS=()
SL_PIDS=()
SL_CLEANUP=()
# cgroups sl_cgroup_remove could not remove (topo_down fails the test if they are still there)
SL_CGROUPS_LEFT=()
SL_SINK_MARK=0
SL_RTR_SINK_MARK=0

echo "TAP version 13"

# ---------------------------------------------------------------------------------------------
# TAP

tap_plan() {
	SL_TAP_PLANNED=1
	echo "1..$1"
}

# Diagnostics go to stdout as TAP comments, which prove shows only with -v; `make test` and
# .ci/run do not pass it. So that a failure in their output can be diagnosed, a failed check or
# a bail-out is also written to stderr, which prove always shows, with the diagnostics given
# since the check before it (SL_TAP_PENDING: its last SL_TAP_PENDING_MAX bytes, the ones nearest
# the failure) and, after a failed check, SL_TAP_AFTER_MAX lines more until a check passes. On
# stderr each line is cut to SL_TAP_LINE_MAX characters. Every diagnostic must go through
# tap_comment (tap_diag, tap_diag_file), not echo "# …", to be among them.
SL_TAP_PENDING=
SL_TAP_PENDING_MAX=16384
SL_TAP_LINE_MAX=500
SL_TAP_AFTER_MAX=200
SL_TAP_AFTER=-1 # lines of stderr left after a failed check; -1: no check failed since one passed
SL_TAP_NAME=$(basename "$0")

# tap_comment LINE…: each line as a TAP comment; kept for stderr should a check fail.
tap_comment() {
	local line err
	for line in "$@"; do
		echo "# $line"
		err="$SL_TAP_NAME: # ${line:0:SL_TAP_LINE_MAX}"
		if [[ $SL_TAP_AFTER -gt 0 ]]; then
			echo "$err" >&2
			SL_TAP_AFTER=$((SL_TAP_AFTER - 1))
			[[ $SL_TAP_AFTER -eq 0 ]] &&
				echo "$SL_TAP_NAME: # (more diagnostics on stdout, prove -v)" >&2
		elif [[ $SL_TAP_AFTER -lt 0 ]]; then
			SL_TAP_PENDING+="$err"$'\n'
			if [[ ${#SL_TAP_PENDING} -gt $SL_TAP_PENDING_MAX ]]; then
				# the last bytes, from their first whole line
				err=${SL_TAP_PENDING: -SL_TAP_PENDING_MAX}
				SL_TAP_PENDING="$SL_TAP_NAME: # (earlier diagnostics on stdout)"$'\n'"${err#*$'\n'}"
			fi
		fi
	done
	return 0
}

# tap_flush_stderr LINE: the pending diagnostics and LINE on stderr.
tap_flush_stderr() {
	printf '%s%s\n' "$SL_TAP_PENDING" "$SL_TAP_NAME: $1" >&2
	SL_TAP_PENDING=
}

tap_diag() {
	local line lines=()
	while IFS= read -r line; do
		lines+=("$line")
	done <<<"$*"
	tap_comment "${lines[@]}"
}

# tap_diag_file FILE [MAX_LINES]: a file's tail as TAP diagnostics.
tap_diag_file() {
	local f=$1 max=${2:-20} lines=()
	if [[ -s $f ]]; then
		mapfile -t lines < <(tail -n "$max" -- "$f")
		tap_comment "--- $(basename "$f") (last $max lines) ---" "${lines[@]/#/  }"
	else
		tap_comment "--- $(basename "$f"): empty or missing ---"
	fi
}

tap_ok() {
	SL_TAP_N=$((SL_TAP_N + 1))
	SL_TAP_PENDING= SL_TAP_AFTER=-1
	echo "ok $SL_TAP_N - $1"
}

# tap_fail NAME WHY: WHY says what was expected and what was seen.
tap_fail() {
	SL_TAP_N=$((SL_TAP_N + 1))
	SL_TAP_FAILED=$((SL_TAP_FAILED + 1))
	echo "not ok $SL_TAP_N - $1"
	tap_flush_stderr "not ok $SL_TAP_N - $1"
	SL_TAP_AFTER=$SL_TAP_AFTER_MAX
	[[ $# -gt 1 ]] && tap_diag "$2"
	return 0
}

tap_skip() {
	SL_TAP_N=$((SL_TAP_N + 1))
	SL_TAP_PENDING= SL_TAP_AFTER=-1
	echo "ok $SL_TAP_N - $1 # SKIP $2"
}

# kernel_at_least MAJOR MINOR: the running kernel is MAJOR.MINOR or later (uname -r)
kernel_at_least() {
	local k major minor
	k=$(uname -r)
	major=${k%%.*}
	minor=${k#*.}
	minor=${minor%%[!0-9]*}
	((major > $1 || (major == $1 && minor >= $2)))
}

# tap_check NAME CMD…: ok if CMD succeeds; otherwise its output becomes the diagnostic.
tap_check() {
	local name=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [[ $rc -eq 0 ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected success of: $*"$'\n'"got exit status $rc: $out"
	fi
	return $rc
}

# tap_is NAME GOT WANT: string equality.
tap_is() {
	if [[ $2 == "$3" ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected \"$3\", got \"$2\""
	fi
	[[ $2 == "$3" ]]
}

# tap_cmp NAME GOT OP WANT: integer comparison (OP one of -eq -ne -lt -le -gt -ge).
tap_cmp() {
	if [[ $2 =~ ^-?[0-9]+$ ]] && test "$2" "$3" "$4"; then
		tap_ok "$1"
		return 0
	fi
	tap_fail "$1" "expected a value $3 $4, got \"$2\""
	return 1
}

# skip_all REASON: the whole file cannot run here.
skip_all() {
	echo "1..0 # SKIP $1"
	exit 0
}

# bail_out REASON: the file cannot continue (e.g. the topology cannot be built). Called in a
# subshell (a helper whose output a $(…) takes), an exit would end only that subshell and the
# file would go on: the reason goes to stderr and the file itself is ended (its EXIT trap
# cleans up; prove sees its status).
bail_out() {
	if [[ $BASHPID != "$$" ]]; then
		echo "$SL_TAP_NAME: Bail out! $1" >&2
		kill -TERM "$$"
		exit 1
	fi
	echo "Bail out! $1"
	tap_flush_stderr "Bail out! $1"
	exit 1
}

# tap_done: print the plan if none was given, exit 1 if anything failed.
tap_done() {
	[[ $SL_TAP_PLANNED -eq 1 ]] || echo "1..$SL_TAP_N"
	if [[ $SL_TAP_FAILED -gt 0 ]]; then
		echo "# $SL_TAP_FAILED of $SL_TAP_N failed"
		exit 1
	fi
	exit 0
}

# ---------------------------------------------------------------------------------------------
# The host key that signs every log of this test process

# sl_key_setup DIR: a fresh key pair DIR/host.key(.pub) from sluice keygen; every sluice run of
# this process signs with it (SLUICE_KEY) and verifies against it (SLUICE_PUB).
sl_key_setup() {
	local dir=$1 out
	out=$("$SLUICE" keygen --name sluice-selftest "$dir/host.key" 2>&1) || {
		echo "sluice keygen $dir/host.key: $out" >&2
		return 1
	}
	export SLUICE_KEY=$dir/host.key SLUICE_PUB=$dir/host.key.pub
}

# ---------------------------------------------------------------------------------------------
# Requirements

require_root() {
	[[ $(id -u) -eq 0 ]] || skip_all "needs root (network namespaces, cgroups, BPF)"
}

# require_busybox_static: BUSYBOX, a statically linked busybox (a container's whole rootfs).
require_busybox_static() {
	BUSYBOX=$(command -v busybox) || skip_all "busybox not installed"
	file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
		skip_all "$BUSYBOX is not static (install busybox-static)"
}

# sl_podman_storage: where the machine's root is read-only (the selftest VMs mount this
# machine's root read-only), podman cannot open its state database under /var/lib/containers:
# its storage goes to the test's directory instead (CONTAINERS_STORAGE_CONF, which sluice's own
# podman calls inherit from the daemon the test starts after this). Elsewhere podman keeps its
# default roots, the ones sluice's container lookup is written against.
sl_podman_storage() {
	mkdir -p /var/lib/containers 2>/dev/null
	[[ -w /var/lib/containers ]] && return 0
	mkdir -p "$SL_TMP/podman-graph" || return 1
	printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "/run/containers/storage"\n' \
		"$SL_TMP/podman-graph" >"$SL_TMP/podman-storage.conf" || return 1
	export CONTAINERS_STORAGE_CONF=$SL_TMP/podman-storage.conf
}

# sl_busybox_rootfs DIR: a container rootfs in DIR: busybox and the links its commands need.
sl_busybox_rootfs() {
	local a
	mkdir -p "$1"/{bin,proc,dev,sys,tmp,etc} || return 1
	cp "$BUSYBOX" "$1/bin/busybox" || return 1
	for a in sh nc echo cat sleep true; do
		ln -s busybox "$1/bin/$a" || return 1
	done
}

require_tools() {
	local t
	for t in "$SL_PROBE" "$SL_SINK"; do
		[[ -x $t ]] || skip_all "$t not built (make, or see selftests/tools/*.c)"
	done
	for t in ip timeout nsenter python3; do
		command -v "$t" >/dev/null || skip_all "$t not installed"
	done
}

require_sluice() {
	[[ -x $SLUICE ]] || skip_all "sluice not built at $SLUICE (run make, or set SLUICE=)"
	[[ -n $(cg2_mount) ]] || skip_all "no cgroup2 mount in /proc/self/mountinfo"
}

# Mount points of a filesystem type, from /proc/self/mountinfo (field 5; the type follows "-").
mounts_of_type() {
	awk -v t="$1" '{
		for (i = 7; i <= NF; i++)
			if ($i == "-") {
				if ($(i + 1) == t)
					print $5
				break
			}
	}' /proc/self/mountinfo
}

cg2_mount() {
	mounts_of_type cgroup2 | head -n 1
}

# ---------------------------------------------------------------------------------------------
# Cleanup

# sl_on_exit CMD…: run CMD (one string, eval'd) from topo_down, last registered first. Code,
# never data: a name or path that comes from outside the test (a sandbox's cgroup, /proc) goes
# in quoted by printf %q, or the eval runs whatever it says as root.
sl_on_exit() {
	SL_CLEANUP+=("$*")
}

# sl_track_pid PID: a process this test started; topo_down ends it if it is still there.
sl_track_pid() {
	SL_PIDS+=("$1")
}

# sl_kill_wait PID: SIGKILL a child of this shell and reap it, with no "Killed" job notice on
# stderr (bash prints one when it reaps the child before the `wait` runs; a 2>/dev/null on the
# wait alone does not cover that). For a kill the test makes on purpose.
sl_kill_wait() {
	{
		kill -KILL "$1"
		wait "$1"
	} 2>/dev/null
	return 0
}

# Stop a process this test started: TERM, up to 2 s, then KILL.
sl_stop_pid() {
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 40); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	sl_kill_wait "$pid"
}

# Kill the process in PIDFILE if it is still an sl_probe (the daemons tests start inside runs).
sl_kill_probe_pidfile() {
	local f=$1 pid
	[[ -s $f ]] || return 0
	pid=$(<"$f")
	[[ $pid =~ ^[0-9]+$ ]] || return 0
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == sl_probe ]] && kill -KILL "$pid" 2>/dev/null
	return 0
}

# Remove what a failed run of ours left: its cgroup subtree (killing what is in it) and pins.
sl_scrub_run() {
	local id=$1 cg m d
	cg=$(cg2_mount)
	if [[ -n $cg && -d $cg/sluice/$id ]]; then
		if [[ -e $cg/sluice/$id/cgroup.kill ]]; then
			echo 1 >"$cg/sluice/$id/cgroup.kill" 2>/dev/null
		fi
		for _ in $(seq 40); do
			[[ -z $(cat "$cg/sluice/$id/cgroup.procs" 2>/dev/null) ]] && break
			sleep 0.05
		done
		# deepest first
		find "$cg/sluice/$id" -depth -type d 2>/dev/null | while IFS= read -r d; do
			rmdir "$d" 2>/dev/null
		done
	fi
	for m in $(mounts_of_type bpf) /sys/fs/bpf; do
		[[ -d $m/sluice/$id ]] && rm -rf -- "${m:?}/sluice/$id"
	done
	return 0
}

# topo_down: remove everything the test made; 1 if a cgroup of the test's is left behind (the
# test fails: topo_down_at_exit).
topo_down() {
	local i pid left=0
	[[ $SL_TOPO_UP -eq 1 ]] || return 0
	SL_TOPO_UP=0
	trap '' PIPE
	for ((i = ${#SL_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${SL_CLEANUP[i]}"
	done
	for pid in "${SL_PIDS[@]}"; do
		sl_stop_pid "$pid"
	done
	# the cgroups the test made as a runtime would (sl_cgroup_new)
	for i in "$(cg2_mount)/sluice-selftest-$SL_ID-"*; do
		[[ -d $i ]] && sl_cgroup_remove "$i"
	done
	for i in "${SL_RUNS[@]}"; do
		sl_scrub_run "$i"
	done
	# the maps the runs in the run netns shared (loader.c), if a run died holding them
	i=/sys/fs/bpf/sluice/netns@$(stat -L -c '%d-%i' "/run/netns/$SL_NS_RUN" 2>/dev/null)
	[[ -d $i ]] && rm -rf -- "$i"
	ip netns del "$SL_NS_RUN" 2>/dev/null
	ip netns del "$SL_NS_RTR" 2>/dev/null
	ip netns del "$SL_NS_INET" 2>/dev/null
	if [[ -n $SL_TMP && -d $SL_TMP ]]; then
		if [[ -n ${SL_KEEP_TMP:-} ]]; then
			echo "# kept $SL_TMP"
		else
			rm -rf -- "$SL_TMP"
		fi
	fi
	# (sl_cgroup_remove said which; one a later call removed after all is not left)
	for i in "${SL_CGROUPS_LEFT[@]}"; do
		[[ -d $i ]] && left=1
	done
	return $left
}

# topo_down_at_exit: the EXIT trap. The test's status stands, but a test that passed and left a
# cgroup behind exits 1: the harness sees a leftover, as leftovers_check reports a run's.
topo_down_at_exit() {
	local rc=$?
	topo_down || [[ $rc -ne 0 ]] || rc=1
	exit "$rc"
}

# ---------------------------------------------------------------------------------------------
# Topology

in_run() { ip netns exec "$SL_NS_RUN" "$@"; }
in_rtr() { ip netns exec "$SL_NS_RTR" "$@"; }
# host_filters: sluice's clsact filters on the run namespace's veth peer, and clsact qdiscs there
host_filters() {
	echo "filters $(in_rtr tc filter show dev vrun ingress | grep -c sl_tc_ingress)" \
		"qdiscs $(in_rtr tc qdisc show dev vrun | grep -c clsact)"
}
in_inet() { ip netns exec "$SL_NS_INET" "$@"; }

# Start a sink in NS, logging to $SL_TMP/NAME.log, on the test ports; wait for its pid file.
sl_start_sink() {
	sl_start_sink_ports "$1" "$2" 80,443,8080 53,443,5353,9999
}

sl_topo_build() {
	local ns a
	for ns in "$SL_NS_RUN" "$SL_NS_RTR" "$SL_NS_INET"; do
		ip netns add "$ns" || return 1
		# No duplicate address detection: v6 addresses (and link-locals) usable at once.
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
			net.ipv6.conf.default.accept_dad=0 || return 1
		ip -n "$ns" link set lo up || return 1
	done
	ip netns exec "$SL_NS_RTR" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv6.conf.all.forwarding=1 || return 1

	ip -n "$SL_NS_RUN" link add veth0 type veth peer name vrun netns "$SL_NS_RTR" || return 1
	ip -n "$SL_NS_RTR" link add vinet type veth peer name veth0 netns "$SL_NS_INET" || return 1

	ip -n "$SL_NS_RUN" addr add 10.200.1.2/30 dev veth0 || return 1
	ip -n "$SL_NS_RUN" addr add fd10:200:1::2/64 dev veth0 nodad || return 1
	ip -n "$SL_NS_RTR" addr add 10.200.1.1/30 dev vrun || return 1
	ip -n "$SL_NS_RTR" addr add fd10:200:1::1/64 dev vrun nodad || return 1
	ip -n "$SL_NS_RTR" addr add "$SL_RTR_LL/64" dev vrun nodad || return 1
	ip -n "$SL_NS_RTR" addr add 10.200.2.1/30 dev vinet || return 1
	ip -n "$SL_NS_RTR" addr add fd10:200:2::1/64 dev vinet nodad || return 1
	ip -n "$SL_NS_INET" addr add 10.200.2.2/30 dev veth0 || return 1
	ip -n "$SL_NS_INET" addr add fd10:200:2::2/64 dev veth0 nodad || return 1
	for a in 198.51.100.10 198.51.100.20 203.0.113.7 169.254.169.254; do
		ip -n "$SL_NS_INET" addr add "$a/32" dev lo || return 1
	done
	for a in 2001:db8::10 2001:db8::20 fd00:ec2::254 64:ff9b::a9fe:a9fe; do
		ip -n "$SL_NS_INET" addr add "$a/128" dev lo nodad || return 1
	done
	ip -n "$SL_NS_RUN" link set veth0 up || return 1
	ip -n "$SL_NS_RTR" link set vrun up || return 1
	ip -n "$SL_NS_RTR" link set vinet up || return 1
	ip -n "$SL_NS_INET" link set veth0 up || return 1

	ip -n "$SL_NS_RUN" route add default via 10.200.1.1 || return 1
	ip -n "$SL_NS_RUN" -6 route add default via fd10:200:1::1 || return 1
	for a in 198.51.100.0/24 203.0.113.0/24 169.254.0.0/16; do
		ip -n "$SL_NS_RTR" route add "$a" via 10.200.2.2 || return 1
	done
	for a in 2001:db8::/32 fd00:ec2::/32 64:ff9b::/96; do
		ip -n "$SL_NS_RTR" -6 route add "$a" via fd10:200:2::2 || return 1
	done
	ip -n "$SL_NS_INET" route add default via 10.200.2.1 || return 1
	ip -n "$SL_NS_INET" -6 route add default via fd10:200:2::1 || return 1
	return 0
}

# topo_up: build the topology, start the sinks; topo_down runs on exit whatever happens.
topo_up() {
	require_tools
	trap topo_down_at_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	# A reader that goes away (prove -v … | head) must not skip the cleanup.
	trap 'trap "" PIPE; exit 141' PIPE
	SL_TOPO_UP=1
	SL_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-selftest.XXXXXX") || bail_out "mktemp failed"
	chmod 0755 "$SL_TMP"
	sl_key_setup "$SL_TMP" || bail_out "cannot create a host key with sluice keygen"
	sl_topo_build || bail_out "cannot build the test topology"
	sl_start_sink "$SL_NS_INET" inet || bail_out "cannot start the sink in $SL_NS_INET"
	sl_start_sink "$SL_NS_RTR" rtr || bail_out "cannot start the sink in $SL_NS_RTR"
	SL_INET_LOG=$SL_TMP/inet.log
	SL_RTR_LOG=$SL_TMP/rtr.log
}

# ---------------------------------------------------------------------------------------------
# What the receiving side saw
#
# A PATTERN is the leading fields of a sink line, compared field by field:
#   sink_count 'tcp 198.51.100.20 80'      connections to 198.51.100.20:80 that closed
#   sink_count 'udp 2001:db8::20 9999'     datagrams to [2001:db8::20]:9999
#   sink_count 'tcp-accept 203.0.113.7'    accepted connections to 203.0.113.7, any port
# Only lines written after the current mark count; sluice_run moves the mark to the end of the
# logs before each run, sink_mark does so by hand.

sl_count_fields() {
	local log=$1 skip=$2 pat=$3
	[[ -f $log ]] || {
		echo 0
		return
	}
	awk -v skip="$skip" -v pat="$pat" '
		BEGIN { n = split(pat, p, " "); c = 0 }
		NR > skip {
			for (i = 1; i <= n; i++)
				if ($i != p[i])
					next
			c++
		}
		END { print c }' "$log"
}

sl_lines() {
	if [[ -f $1 ]]; then
		wc -l <"$1"
	else
		echo 0
	fi
}

sink_mark() {
	# (tests without the topology have no sinks: nothing to mark)
	SL_SINK_MARK=$(sl_lines "${SL_INET_LOG:-}")
	SL_RTR_SINK_MARK=$(sl_lines "${SL_RTR_LOG:-}")
}

sink_count() { sl_count_fields "$SL_INET_LOG" "$SL_SINK_MARK" "$1"; }
sink_saw() { [[ $(sink_count "$1") -gt 0 ]]; }
rtr_sink_count() { sl_count_fields "$SL_RTR_LOG" "$SL_RTR_SINK_MARK" "$1"; }
rtr_sink_saw() { [[ $(rtr_sink_count "$1") -gt 0 ]]; }

# Lines of both sink logs since the mark, for diagnostics.
sink_new_lines() {
	tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" 2>/dev/null | sed 's/^/inet: /'
	tail -n +"$((SL_RTR_SINK_MARK + 1))" "$SL_RTR_LOG" 2>/dev/null | sed 's/^/rtr:  /'
}

# sink_wait PATTERN [N] [TIMEOUT_MS]: until the sink saw PATTERN at least N times (default 1).
sink_wait() {
	local pat=$1 n=${2:-1} t=$((${3:-3000} * SL_SLOW)) waited=0
	while [[ $(sink_count "$pat") -lt $n ]]; do
		[[ $waited -ge $t ]] && return 1
		sleep 0.05
		waited=$((waited + 50))
	done
	return 0
}

# Time for traffic that should not arrive to have arrived if it was sent anyway.
SL_SETTLE=${SL_SETTLE:-$(awk -v f="$SL_SLOW" 'BEGIN { print 0.5 * f }')}
sink_settle() { sleep "$SL_SETTLE"; }

# ---------------------------------------------------------------------------------------------
# Running sluice

# The run id the next sluice_run will use (for tests that need it inside the command).
sluice_next_run_id() { echo "t-$SL_ID-$((SL_RUN_N + 1))"; }

# sl_need_root EXTRA_ARGS… -- CMD…: "--allow-root" when CMD starts by entering the test netns
# ("${RUN_EXEC[@]}" or "${RUN_EXEC_NETONLY[@]}": setns and mounts need CAP_SYS_ADMIN, which the
# default confined root has not) and no --user or --allow-root is given.
sl_need_root() {
	local a
	for a in "$@"; do
		[[ $a == -- ]] && break
		[[ $a == --user || $a == --allow-root ]] && return 0
	done
	while [[ $# -gt 0 && $1 != -- ]]; do shift; done
	[[ ${2-} == "${RUN_EXEC[0]}" || ${2-} == "${RUN_EXEC_NETONLY[0]}" ]] && echo --allow-root
	return 0
}

# sl_run_setup CALLER POLICY LOG [EXTRA_ARGS…] -- CMD…: what sluice_run and sluice_start share,
# so that a run started either way is named, registered for cleanup and found the same: a new
# SL_RUN_ID (in SL_RUNS), SL_OUT, SL_ERR, SL_RUN_LOG, SL_RC and SL_RUN_CGID emptied, the sink
# mark moved, and SL_RUN_ARGV, sluice's arguments ("run" … -- CMD…).
sl_run_setup() {
	local caller=$1 policy=$2 log=$3
	local extra=()
	shift 3
	while [[ $# -gt 0 && $1 != -- ]]; do
		extra+=("$1")
		shift
	done
	if [[ ${1-} != -- ]]; then
		echo "$caller: missing -- before the command" >&2
		return 2
	fi
	shift
	# shellcheck disable=SC2207 # one word or none
	extra+=($(sl_need_root "${extra[@]}" -- "$@"))
	SL_RUN_N=$((SL_RUN_N + 1))
	SL_RUN_ID=t-$SL_ID-$SL_RUN_N
	SL_RUNS+=("$SL_RUN_ID")
	SL_OUT=$SL_TMP/$SL_RUN_ID.out
	SL_ERR=$SL_TMP/$SL_RUN_ID.err
	SL_RUN_LOG=$log
	SL_RC=
	SL_RUN_CGID=
	sink_mark
	SL_RUN_ARGV=(run --policy "$policy" --run-id "$SL_RUN_ID" --task selftest --log "$log"
		"${extra[@]}" -- "$@")
}

# sl_run_ended: after the run's exit status is in SL_RC, its cgroup id from its log's run_start
# line (leftovers_check looks for links still on it). Read with sed, not a Python start: every run
# of every file comes here, and under emulation a Python start costs a second. (A string of the
# line cannot hold ,"cgroup_id": unescaped.)
sl_run_ended() {
	[[ -s $SL_RUN_LOG ]] && SL_RUN_CGID=$(sed -n \
		'/^{[^{]*[{,]"type":"run_start"[,}]/ { s/.*[{,]"cgroup_id":\([0-9]*\)[,}].*/\1/p; q; }' \
		"$SL_RUN_LOG")
	return 0
}

# sluice_run POLICY LOG [EXTRA_ARGS…] -- CMD…
# Sets SL_RUN_ID, SL_RC (sluice's exit status), SL_OUT and SL_ERR (files with its stdout and
# stderr; the workload's output is in them too), and moves the sink mark.
sluice_run() {
	sl_run_setup sluice_run "$@" || return
	timeout -k 5 "$SL_RUN_TIMEOUT" "$SLUICE" "${SL_RUN_ARGV[@]}" >"$SL_OUT" 2>"$SL_ERR" </dev/null
	SL_RC=$?
	sl_run_ended
}

# Diagnostics for the last run (if the test started one): its stdout, stderr, log and what the
# sinks saw.
sluice_diag() {
	local log=${1:-} seen
	if [[ -n $SL_RUN_ID ]]; then
		tap_comment "run $SL_RUN_ID: exit status ${SL_RC:-}"
		tap_diag_file "$SL_OUT"
		tap_diag_file "$SL_ERR"
	fi
	[[ -n $log ]] && tap_diag_file "$log"
	mapfile -t seen < <(sink_new_lines | tail -n 20)
	[[ ${#seen[@]} -gt 0 ]] && tap_comment "${seen[@]/#/sink }"
	return 0
}

# ---------------------------------------------------------------------------------------------
# The JSON-lines log
#
# log_count LOG key=value…: lines of LOG that hold every "key":value pair, matched exactly in the
# compact form the log uses. Values that look like numbers, true, false or null are matched raw,
# anything else as a JSON string. A type suffix on the key forces one: key:raw=value,
# key:str=value. Only the first "=" splits, so values may hold anything (IPv6 addresses).
#   log_count "$log" type=decision dst=198.51.100.20 port=80 decision=deny enforced=true

# sl_json_frag KEY=VALUE [VAR]: the fragment, printed, or put in VAR (no subshell: log_lines
# makes one for every pair of every check, a fork each, tens of ms apiece under emulation).
sl_json_frag() {
	local kv=$1 k v raw=auto frag_
	k=${kv%%=*}
	v=${kv#*=}
	case $k in
	*:raw) k=${k%:raw} raw=yes ;;
	*:str) k=${k%:str} raw=no ;;
	esac
	if [[ $raw == auto ]]; then
		if [[ $v =~ ^-?[0-9]+$ || $v == true || $v == false || $v == null ]]; then
			raw=yes
		else
			raw=no
		fi
	fi
	if [[ $raw == yes ]]; then
		printf -v frag_ '"%s":%s' "$k" "$v"
	else
		printf -v frag_ '"%s":"%s"' "$k" "$v"
	fi
	if [[ -n ${2-} ]]; then
		printf -v "$2" %s "$frag_"
	else
		printf %s "$frag_"
	fi
}

log_lines() {
	local log=$1 kv
	shift
	[[ -f $log ]] || return 0
	local -a frags=()
	local frag
	for kv in "$@"; do
		sl_json_frag "$kv" frag
		frags+=("$frag")
	done
	# Each fragment must stand between "{" or "," and "," or "}".
	awk -v nf="${#frags[@]}" '
		BEGIN {
			for (i = 1; i < ARGC; i++) { f[i] = ARGV[i]; delete ARGV[i] }
		}
		{
			for (i = 1; i <= nf; i++) {
				s = $0; found = 0
				while ((p = index(s, f[i])) > 0) {
					b = p > 1 ? substr(s, p - 1, 1) : ""
					a = substr(s, p + length(f[i]), 1)
					if ((b == "{" || b == ",") && (a == "," || a == "}")) {
						found = 1
						break
					}
					s = substr(s, p + 1)
				}
				if (!found) next
			}
			print
		}' "${frags[@]}" <"$log"
}

log_count() {
	log_lines "$@" | wc -l
}

# log_count_at_least LOG N key=value…: LOG has at least N such lines. A condition for wait_until,
# which runs its command again each time: `wait_until MS test "$(log_count …)" -ge N` would count
# once, before the wait, and wait for nothing.
log_count_at_least() {
	local log=$1 n=$2
	shift 2
	[[ $(log_count "$log" "$@") -ge $n ]]
}

# log_count_between LOG FROM TO key=value…: the lines of log_lines LOG key=value… whose ts (µs
# since the epoch: `date +%s%6N`) is after FROM and before TO; a window such as a writer's
# downtime, whose lines a later writer wrote.
log_count_between() {
	local log=$1 from=$2 to=$3
	shift 3
	log_lines "$log" "$@" | sed -n 's/.*"ts":\([0-9]*\),.*/\1/p' |
		awk -v a="$from" -v b="$to" '$1 > a && $1 < b { c++ } END { print c + 0 }'
}

# log_field LINE KEY: the raw value of KEY in one compact JSON line (strings without quotes).
log_field() {
	python3 -c '
import json, sys
v = json.loads(sys.argv[1]).get(sys.argv[2])
if v is None:
    sys.exit(1)
print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}

# log_run_start_field LOG KEY: KEY of the log's run_start line (its second line, after log_start).
log_run_start_field() {
	python3 - "$1" "$2" <<'EOF' 2>/dev/null
import json, sys
for line in open(sys.argv[1], "rb"):
    o = json.loads(line)
    if o.get("type") == "run_start":
        print(o.get(sys.argv[2], ""))
        break
EOF
}

# log_well_formed LOG [--unsealed]: the evidence format, checked independently of sluice
# (selftests/tools/sl_logcheck.py): every line canonical; seq contiguous from 0 and the prev
# chain intact; log_start first, then run_start; every checkpoint's size, root and signature
# (and, with SLUICE_PUB, the host key's certificate of the run key); the sidecar LOG.checkpoints
# holding exactly the log's checkpoints; the last line the "final" checkpoint after run_end
# (--unsealed: not checked, for a run that was killed).
log_well_formed() {
	local log=$1
	local -a opts=()
	shift
	[[ -n ${SLUICE_PUB:-} ]] && opts+=(--pub "$SLUICE_PUB")
	[[ -e $log.checkpoints ]] && opts+=(--copy "$log.checkpoints")
	python3 "$SL_LIB_DIR/tools/sl_logcheck.py" "$log" "${opts[@]}" "$@"
}

# loss_ranges_of LOG: the kseq values of [0, run_end.kseq_next) that no line of LOG (one file)
# carries, worked out here as a set difference, and compared with the log's loss_ranges record:
# it must count them all and list exactly their first maximal ranges, "truncated" saying whether
# more exist; no record when nothing is missing. Prints "MISSING RANGES LISTED TRUNCATED"
# (0 0 0 none without a record); exits 1 saying why otherwise.
loss_ranges_of() {
	python3 - "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1], "rb")]
ends = [r for r in recs if r["type"] == "run_end"]
if len(ends) != 1:
    sys.exit(f"{len(ends)} run_end records")
ks = [r["kseq"] for r in recs if "kseq" in r]
if len(set(ks)) != len(ks):
    sys.exit("a kseq appears twice")
absent = sorted(set(range(ends[0]["kseq_next"])) - set(ks))
ranges = []
for k in absent:
    if ranges and ranges[-1][1] == k - 1:
        ranges[-1][1] = k
    else:
        ranges.append([k, k])
lr = [r for r in recs if r["type"] == "loss_ranges"]
if not absent:
    if lr:
        sys.exit(f"nothing is missing, yet a loss_ranges record: {lr}")
    print(0, 0, 0, "none")
    sys.exit(0)
if len(lr) != 1:
    sys.exit(f"{len(absent)} kseqs absent (first {absent[0]}), {len(lr)} loss_ranges records")
lr = lr[0]
listed = [list(p) for p in zip(lr["ranges"][0::2], lr["ranges"][1::2])]
if lr["missing"] != len(absent):
    sys.exit(f"loss_ranges says {lr['missing']} missing, {len(absent)} kseqs are absent")
if not listed or listed != ranges[:len(listed)]:
    sys.exit(f"loss_ranges lists {listed[:8]}…, the absent kseqs are {ranges[:8]}…")
if lr["truncated"] != (len(ranges) > len(listed)):
    sys.exit(f"{len(ranges)} ranges absent, {len(listed)} listed, truncated {lr['truncated']}")
print(len(absent), len(ranges), len(listed), str(lr["truncated"]).lower())
PY
}

# ---------------------------------------------------------------------------------------------
# Leftovers

# leftovers_check RUN_ID [CGROUP_ID]: nothing of the run remains (cgroup, pins and, given the
# run's cgroup id, BPF links attached to it). Prints what is left.
leftovers_check() {
	local id=$1 cgid=${2:-} cg m left=0 links out
	cg=$(cg2_mount)
	if [[ -z $cg ]]; then
		echo "no cgroup2 mount found"
		return 1
	fi
	if [[ -e $cg/sluice/$id ]]; then
		echo "cgroup left: $cg/sluice/$id"
		find "$cg/sluice/$id" -type d 2>/dev/null | sed 's/^/  /'
		left=1
	fi
	if [[ -n $cgid ]] && command -v bpftool >/dev/null; then
		# bpftool's text: a cgroup link's second line is "cgroup_id ID  attach_type …"
		# (a bpftool that fails is a failure, not "no links": its words are shown)
		if ! out=$(bpftool link show 2>&1); then
			echo "bpftool link show failed: $out"
			left=1
		fi
		links=$(awk -v id="$cgid" '$1 == "cgroup_id" && $2 == id { n++ } END { print n + 0 }' \
			<<<"$out")
		if [[ $links != 0 ]]; then
			echo "BPF links left on cgroup id $cgid: $links"
			left=1
		fi
	fi
	for m in $(mounts_of_type bpf) /sys/fs/bpf; do
		if [[ -e $m/sluice/$id ]]; then
			echo "pins left: $m/sluice/$id"
			find "$m/sluice/$id" 2>/dev/null | sed 's/^/  /'
			left=1
		fi
	done
	return $left
}

# ---------------------------------------------------------------------------------------------
# Assertions about the last sluice_run. Each prints one TAP line; on failure the diagnostic says
# what was expected, what was seen, and shows the run's output.

# A denied operation must fail at once, not after a timeout.
SL_PROMPT_MS=${SL_PROMPT_MS:-$((500 * SL_SLOW))}

# assert_rc NAME WANT: sluice's exit status.
assert_rc() {
	if [[ $SL_RC -eq $2 ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected sluice to exit with $2, got $SL_RC"
		sluice_diag
	fi
}

# assert_probe NAME WANT [COUNT]: the run's stdout is COUNT (default 1) probe lines, each "ok" or,
# for WANT "err ENAME", "err ENAME MS" with MS <= SL_PROMPT_MS.
assert_probe() {
	local name=$1 want=$2 count=${3:-1} line n=0 bad=
	while IFS= read -r line; do
		n=$((n + 1))
		if [[ $want == ok ]]; then
			[[ $line == ok ]] || bad+="line $n: \"$line\"; "
		elif [[ $line =~ ^(err [A-Z0-9]+)\ ([0-9]+)$ ]]; then
			[[ ${BASH_REMATCH[1]} == "$want" ]] || bad+="line $n: \"$line\"; "
			[[ ${BASH_REMATCH[2]} -le $SL_PROMPT_MS ]] ||
				bad+="line $n: took ${BASH_REMATCH[2]} ms (> $SL_PROMPT_MS); "
		else
			bad+="line $n: \"$line\"; "
		fi
	done <"$SL_OUT"
	[[ $n -eq $count ]] || bad+="$n line(s) instead of $count; "
	if [[ -z $bad ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected $count probe line(s) \"$want\"; got: $bad"
		sluice_diag
	fi
}

# assert_sink_none NAME PATTERN…: after a settle time, neither sink logged any PATTERN.
assert_sink_none() {
	local name=$1 p n seen=
	shift
	sink_settle
	for p in "$@"; do
		n=$(sink_count "$p")
		[[ $n -eq 0 ]] || seen+="inet sink: \"$p\" x$n; "
		n=$(rtr_sink_count "$p")
		[[ $n -eq 0 ]] || seen+="rtr sink: \"$p\" x$n; "
	done
	if [[ -z $seen ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected nothing to arrive; got $seen"
		sluice_diag
	fi
}

# assert_sink_saw NAME PATTERN [N] [rtr]: the sink logged PATTERN exactly N times (default 1).
assert_sink_saw() {
	local name=$1 pat=$2 n=${3:-1} where=${4:-inet} got i
	if [[ $where == rtr ]]; then
		for i in $(seq $((60 * SL_SLOW))); do
			[[ $(rtr_sink_count "$pat") -ge $n ]] && break
			sleep 0.05
		done
		got=$(rtr_sink_count "$pat")
	else
		sink_wait "$pat" "$n"
		got=$(sink_count "$pat")
	fi
	if [[ $got -eq $n ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected the $where sink to log \"$pat\" $n time(s), got $got"
		sluice_diag
	fi
}

# assert_log NAME LOG COUNT key=value…: COUNT lines hold all the pairs ("N" exactly, "+N" at
# least N).
assert_log() {
	local name=$1 log=$2 count=$3 got ok=0
	shift 3
	got=$(log_count "$log" "$@")
	if [[ $count == +* ]]; then
		[[ $got -ge ${count#+} ]] && ok=1
	else
		[[ $got -eq $count ]] && ok=1
	fi
	if [[ $ok -eq 1 ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected $count log line(s) with $(sl_frags_text "$@"); got $got"
		sluice_diag "$log"
	fi
}

sl_frags_text() {
	local kv out=
	for kv in "$@"; do
		out+="$(sl_json_frag "$kv") "
	done
	echo "${out% }"
}

# assert_decision_ids NAME LOG key=value…: the matching decision lines carry a positive "pid"
# and a non-empty "comm".
assert_decision_ids() {
	local name=$1 log=$2 lines bad
	shift 2
	lines=$(log_lines "$log" type=decision "$@")
	if [[ -z $lines ]]; then
		tap_fail "$name" "expected a decision line with $(sl_frags_text "$@"); found none"
		sluice_diag "$log"
		return
	fi
	bad=$(grep -Ev '[{,]"pid":[1-9][0-9]*[,}]' <<<"$lines" | head -n 1)
	[[ -z $bad ]] && bad=$(grep -Ev '[{,]"comm":"[^"]+"[,}]' <<<"$lines" | head -n 1)
	if [[ -z $bad ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected \"pid\":N>0 and a non-empty \"comm\" in: $bad"
	fi
}

# assert_stderr NAME LINE [NEXT]: sluice's stderr has LINE, and if NEXT is given the line right
# after it is NEXT.
assert_stderr() {
	local name=$1 line=$2 next=${3-} got
	if ! grep -qxF -- "$line" "$SL_ERR"; then
		tap_fail "$name" "expected on stderr the line: $line"
		sluice_diag
		return
	fi
	if [[ $# -ge 3 ]]; then
		got=$(grep -xF -A1 -- "$line" "$SL_ERR" | sed -n 2p)
		if [[ $got != "$next" ]]; then
			tap_fail "$name" "expected after \"$line\" the line: $next"$'\n'"got: $got"
			sluice_diag
			return
		fi
	fi
	tap_ok "$name"
}

# assert_no_leftovers NAME: nothing of the last run remains.
assert_no_leftovers() {
	tap_check "$1" leftovers_check "$SL_RUN_ID" "$SL_RUN_CGID"
}

# "198.51.100.20:80/tcp" or "[2001:db8::20]:80/tcp": a destination as sluice's stderr shows it.
sl_dst_text() {
	local addr=${1%%%*} port=$2 proto=$3
	if [[ $addr == *:* ]]; then
		echo "[$addr]:$port/$proto"
	else
		echo "$addr:$port/$proto"
	fi
}

# ---------------------------------------------------------------------------------------------
# One probe in one run, fully checked: the probe's result, what the sinks saw, the log, stderr
# and leftovers. Settings (set them before calling):
#   CASE_POLICY   policy file                       (required)
#   CASE_EXTRA    array of extra "sluice run" arguments (default none)
#   CASE_REQ      the policy's request_access template, or empty
# The log of each run is $SL_TMP/RUN_ID.log, available afterwards as $CASE_LOG.

CASE_EXTRA=()
CASE_REQ=

sl_case_proto() { [[ $1 == tcp* ]] && echo tcp || echo udp; }
sl_case_count() { [[ $1 == udp-sendmmsg ]] && echo 3 || echo 1; }
sl_case_family() { [[ $1 == *4 ]] && echo ipv4 || echo ipv6; }

# Run sl_probe MODE ADDR PORT [PROBE_OPTS…] in the run netns under sluice.
sl_case_run() {
	local id
	id=$(sluice_next_run_id)
	CASE_LOG=$SL_TMP/$id.log
	sluice_run "$CASE_POLICY" "$CASE_LOG" "${CASE_EXTRA[@]}" -- \
		"${RUN_EXEC[@]}" "$SL_PROBE" "$@"
}

# assert_request_access NAME DENY_LINE ADDR: the line after DENY_LINE on stderr is the policy's
# request-access hint for ADDR ({host} replaced by the address; percent-encoding accepted).
assert_request_access() {
	local name=$1 deny=$2 addr=$3 got prefix=${CASE_REQ%%\{host\}*} suffix=${CASE_REQ#*\{host\}}
	got=$(grep -xF -A1 -- "$deny" "$SL_ERR" | sed -n 2p)
	got=${got#"to request access: "}
	if [[ $got == "$prefix"*"$suffix" ]]; then
		got=${got#"$prefix"}
		got=${got%"$suffix"}
		got=$(python3 -c 'import sys, urllib.parse as u; print(u.unquote(sys.argv[1]))' \
			"$got")
		got=${got#[}
		got=${got%]}
		if [[ $got == "$addr" ]]; then
			tap_ok "$name"
			return
		fi
	fi
	tap_fail "$name" "expected after \"$deny\" the line:
to request access: ${CASE_REQ//\{host\}/$addr}
got: $(grep -xF -A1 -- "$deny" "$SL_ERR" | sed -n 2p)"
	sluice_diag
}

# probe_denied LABEL MODE ADDR PORT ERRNO HOOK RULE [DST_V4] [-- PROBE_OPTS…]
# ERRNO is the expected errno name (EPERM); DST_V4 the IPv4 address embedded in a v6 ADDR. The
# log line must have "dst":ADDR and "dst_v4":DST_V4, or, when HOOK is a v4 hook (the kernel
# judged the embedded address), "dst":DST_V4.
# In report mode (CASE_EXTRA has --mode report, or the policy says so) use probe_reported.
probe_denied() {
	local label=$1 mode=$2 addr=$3 port=$4 errno=$5 hook=$6 rule=$7 v4=${8:-}
	local proto count family shown logdst v4field deny
	local -a opts=() fields=() nothere=()
	[[ $v4 == -- ]] && v4=
	shift 7
	[[ $# -gt 0 && $1 != -- ]] && shift
	[[ ${1-} == -- ]] && shift && opts=("$@")
	proto=$(sl_case_proto "$mode")
	count=$(sl_case_count "$mode")
	family=$(sl_case_family "$hook")
	shown=${addr%%%*}
	logdst=$shown
	v4field=$v4
	if [[ $hook == *4 && $shown == *:* ]]; then
		# A v4 hook judging a v6 literal: the kernel handed it the embedded IPv4 address
		# (unconnected UDP to ::ffff:a.b.c.d runs only the sendmsg4 programs).
		logdst=$v4
		v4field=
	fi

	sl_case_run "$mode" "$addr" "$port" "${opts[@]}"
	assert_rc "$label: sluice exits with the probe's status 1" 1
	assert_probe "$label: $mode $addr port $port fails at once with $errno" \
		"err $errno" "$count"
	if [[ $proto == tcp ]]; then
		nothere=("tcp-accept $shown $port")
		[[ -n $v4 ]] && nothere+=("tcp-accept $v4 $port")
	else
		nothere=("udp $shown $port")
		[[ -n $v4 ]] && nothere+=("udp $v4 $port")
	fi
	assert_sink_none "$label: nothing arrives at the test hosts" "${nothere[@]}"
	fields=(type=decision "run_id=$SL_RUN_ID" task=selftest "dst=$logdst" "port=$port"
		"proto=$proto" decision=deny enforced=true "rule=$rule" "hook=$hook"
		"family=$family")
	[[ -n $v4field ]] && fields+=("dst_v4=$v4field")
	assert_log "$label: log has $count deny line(s) (rule $rule, hook $hook)" "$CASE_LOG" \
		"$count" "${fields[@]}"
	assert_decision_ids "$label: deny line names pid and comm" "$CASE_LOG" "dst=$logdst" \
		"port=$port" decision=deny
	deny="egress denied: $(sl_dst_text "$logdst" "$port" "$proto") (rule: $rule)"
	deny+=" run_id=$SL_RUN_ID task=selftest"
	assert_stderr "$label: stderr names the denial" "$deny"
	if [[ -n $CASE_REQ ]]; then
		assert_request_access "$label: stderr has the request-access hint" "$deny" "$shown"
	fi
	assert_no_leftovers "$label: no cgroup or pins left"
}

# probe_allowed LABEL MODE ADDR PORT HOOK RULE [SINK_ADDR] [-- PROBE_OPTS…]
# SINK_ADDR is how the sink logs the destination (the IPv4 form of a v4-mapped ADDR).
probe_allowed() {
	local label=$1 mode=$2 addr=$3 port=$4 hook=$5 rule=$6 sinkaddr=${7:-}
	local proto count family shown pat
	local -a opts=()
	[[ $sinkaddr == -- ]] && sinkaddr=
	shift 6
	[[ $# -gt 0 && $1 != -- ]] && shift
	[[ ${1-} == -- ]] && shift && opts=("$@")
	proto=$(sl_case_proto "$mode")
	count=$(sl_case_count "$mode")
	family=$(sl_case_family "$hook")
	shown=${addr%%%*}
	[[ -n $sinkaddr ]] || sinkaddr=$shown

	sl_case_run "$mode" "$addr" "$port" "${opts[@]}"
	assert_rc "$label: sluice exits with the probe's status 0" 0
	assert_probe "$label: $mode $addr port $port succeeds" ok "$count"
	if [[ $proto == tcp ]]; then
		pat="tcp $sinkaddr $port"
	else
		pat="udp $sinkaddr $port"
	fi
	assert_sink_saw "$label: the test host received it" "$pat" "$count"
	assert_log "$label: log has an allow line (rule $rule, hook $hook)" "$CASE_LOG" +1 \
		type=decision "run_id=$SL_RUN_ID" "dst=$shown" "port=$port" "proto=$proto" \
		decision=allow "rule=$rule" "hook=$hook" "family=$family"
	assert_no_leftovers "$label: no cgroup or pins left"
}

# ---------------------------------------------------------------------------------------------
# Runs in the background

# sluice_start POLICY LOG [EXTRA_ARGS…] -- CMD…: like sluice_run, but returns at once with
# SL_RUN_PID set; sluice_wait collects the exit status.
sluice_start() {
	sl_run_setup sluice_start "$@" || return
	"$SLUICE" "${SL_RUN_ARGV[@]}" >"$SL_OUT" 2>"$SL_ERR" </dev/null &
	SL_RUN_PID=$!
	sl_track_pid "$SL_RUN_PID"
}

# sluice_wait TIMEOUT_S: wait for the background run; 1 (and SL_RC empty) if it did not end.
sluice_wait() {
	local t=$(($1 * SL_SLOW)) i
	for ((i = 0; i < t * 20; i++)); do
		kill -0 "$SL_RUN_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$SL_RUN_PID" 2>/dev/null; then
		return 1
	fi
	wait "$SL_RUN_PID"
	SL_RC=$?
	sl_run_ended
}

# wait_until TIMEOUT_MS CMD…: poll CMD every 50 ms until it succeeds: TIMEOUT_MS (scaled by
# SL_SLOW) of sleeps between the tries, and never more than twice that of wall time, so a CMD
# that itself takes long (a client waiting on a daemon that does not answer) ends the wait
# too, not only the sleeps. (CMD is not bounded here: one that may block gets its own timeout.)
wait_until() {
	local t=$(($1 * SL_SLOW)) waited=0 start=${EPOCHREALTIME//[.,]/}
	shift
	until "$@"; do
		[[ $waited -ge $t ]] && return 1
		[[ $(((${EPOCHREALTIME//[.,]/} - start) / 1000)) -ge $((2 * t)) ]] && return 1
		sleep 0.05
		waited=$((waited + 50))
	done
	return 0
}

# pid_running PID: PID exists and is not a zombie.
pid_running() {
	local state
	[[ -r /proc/$1/stat ]] || return 1
	state=$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null)
	[[ -n $state && $state != Z && $state != X ]]
}

# ---------------------------------------------------------------------------------------------
# DNS: an upstream for the run's resolver, extra sinks, reading dig's output

# sl_free_port: a port free for both TCP and UDP on 127.0.0.1 (someone may take it before use:
# callers retry).
sl_free_port() {
	python3 -c '
import socket
for _ in range(50):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("127.0.0.1", 0))
    port = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(port)
    break
else:
    raise SystemExit("no free port")'
}

# sl_start_sink_ports NS NAME TCP_PORTS UDP_PORTS: like sl_start_sink, on the ports given
# (comma-separated, "" for none of a kind), logging to $SL_TMP/NAME.log.
sl_start_sink_ports() {
	local ns=$1 name=$2 tcp=$3 udp=$4 pid i
	local -a ports=()
	[[ -n $tcp ]] && ports+=(--tcp "$tcp")
	[[ -n $udp ]] && ports+=(--udp "$udp")
	ip netns exec "$ns" "$SL_SINK" --log "$SL_TMP/$name.log" --pidfile "$SL_TMP/$name.pid" \
		"${ports[@]}" --reply >"$SL_TMP/$name.out" 2>&1 </dev/null &
	pid=$!
	sl_track_pid "$pid"
	for i in $(seq $((100 * SL_SLOW))); do
		[[ -s $SL_TMP/$name.pid ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if [[ ! -s $SL_TMP/$name.pid ]]; then
		echo "sink $name did not start: $(cat "$SL_TMP/$name.out")" >&2
		return 1
	fi
	# "ip netns exec" execs the sink in place: the pid we hold is the sink's.
	[[ $(<"$SL_TMP/$name.pid") == "$pid" ]] || sl_track_pid "$(<"$SL_TMP/$name.pid")"
	return 0
}

# dns_upstream_start NAME [DNSMASQ_ARGS…]: a dnsmasq in this (the root) netns, bound to
# 127.0.0.1 only, on a free port, answering from its arguments (--address=/name/addr,
# --cname=…, --host-record=…) and nothing else: no upstream of its own, no /etc/hosts, no config
# file. Every query is logged to $SL_TMP/NAME.log. Sets SL_DNS_PORT, SL_DNS_PID, SL_DNS_LOG;
# topo_down stops it.
SL_DNS_PORT=
SL_DNS_PID=
SL_DNS_LOG=
dns_upstream_start() {
	local name=$1 try port pid i
	shift
	command -v dnsmasq >/dev/null || return 1
	SL_DNS_LOG=$SL_TMP/$name.log
	for try in 1 2 3 4 5; do
		port=$(sl_free_port) || return 1
		dnsmasq --no-daemon --conf-file=/dev/null --no-resolv --no-hosts --no-poll \
			--listen-address=127.0.0.1 --bind-interfaces --port="$port" \
			--log-queries --log-facility="$SL_DNS_LOG" --pid-file="$SL_TMP/$name.pid" "$@" \
			>"$SL_TMP/$name.out" 2>&1 </dev/null &
		pid=$!
		sl_track_pid "$pid"
		for i in $(seq $((100 * SL_SLOW))); do
			kill -0 "$pid" 2>/dev/null || break
			# Any answer at all (REFUSED for "."): it is listening.
			if dig +time=1 +tries=1 -p "$port" @127.0.0.1 . SOA 2>/dev/null |
				grep -q 'status:'; then
				SL_DNS_PORT=$port
				SL_DNS_PID=$pid
				return 0
			fi
			sleep 0.05
		done
		sl_stop_pid "$pid"
	done
	echo "dnsmasq did not start: $(cat "$SL_TMP/$name.out")" >&2
	return 1
}

dns_upstream_stop() {
	[[ -n $SL_DNS_PID ]] && sl_stop_pid "$SL_DNS_PID"
	return 0
}

# upstream_mark / upstream_count NAME [TYPE]: queries the upstream logged for NAME (and TYPE, as
# dnsmasq names it: A, AAAA, TXT, …; default any) since the mark.
SL_DNS_MARK=0
upstream_mark() { SL_DNS_MARK=$(sl_lines "$SL_DNS_LOG"); }
upstream_count() {
	[[ -f $SL_DNS_LOG ]] || {
		echo 0
		return
	}
	awk -v skip="$SL_DNS_MARK" -v name="$1" -v type="${2:-}" '
		NR > skip {
			for (i = 1; i < NF; i++)
				if ($i ~ /^query\[/ && $(i + 1) == name) {
					t = substr($i, 7, length($i) - 7)
					if (type == "" || t == type)
						c++
				}
		}
		END { print c + 0 }' "$SL_DNS_LOG"
}
# Lines the upstream logged since the mark, for diagnostics.
upstream_new_lines() { tail -n +"$((SL_DNS_MARK + 1))" "$SL_DNS_LOG" 2>/dev/null; }

# Reading dig's full output (not +short) from a file:
#   dig_status F    NOERROR, NXDOMAIN, SERVFAIL… ("" when dig got no answer)
#   dig_answers F   the answer section as "TYPE DATA" records, sorted, one space-separated line
#   dig_query_ms F  the query time in ms
#   dig_server F    the server line, "ADDR#PORT(ADDR) (UDP)"
dig_status() { sed -n 's/^;; ->>HEADER<<-.* status: \([A-Z]*\),.*/\1/p' "$1" | tail -n 1; }
dig_answers() {
	awk '/^;; ANSWER SECTION:/ { a = 1; next } a && /^$/ { a = 0 } a && !/^;/ { print $4, $5 }' \
		"$1" | sort | paste -sd ' ' -
}
dig_query_ms() { sed -n 's/^;; Query time: \([0-9]*\) msec.*/\1/p' "$1" | tail -n 1; }
dig_server() { sed -n 's/^;; SERVER: //p' "$1" | tail -n 1; }

# ---------------------------------------------------------------------------------------------
# The daemon (sluice daemon) and cgroups that the test, not sluice, makes

# sl_hold_loads: daemons started from here on keep a finished load (an attach's or a switch's
# programs verified, not yet committed) in flight while the file $HOLD exists
# (SLUICE_SELFTEST_LOAD_HOLD): a test touches $HOLD to hold a window open, removes it to release.
sl_hold_loads() {
	HOLD=$SL_TMP/hold
	export SLUICE_SELFTEST_LOAD_HOLD=$HOLD
}

# sl_daemon_start [ARGS…]: a daemon of this test, its socket, state and logs under
# $SL_TMP/daemon (SL_DAEMON_DIR), SLUICE_SOCKET exported for every client; SL_DAEMON_PID. Its
# stderr accumulates in $SL_DAEMON_DIR/err across restarts. Waits until it answers. With
# SL_DAEMON_NETNS set (a namespace file), the daemon runs in that network namespace.
sl_daemon_start() {
	local i in_ns=()
	SL_DAEMON_DIR=$SL_TMP/daemon
	mkdir -p "$SL_DAEMON_DIR"
	export SLUICE_SOCKET=$SL_DAEMON_DIR/sluice.sock
	# (nsenter enters and execs: $! is the daemon's pid)
	[[ -n ${SL_DAEMON_NETNS:-} ]] && in_ns=(nsenter "--net=$SL_DAEMON_NETNS" --)
	"${in_ns[@]}" "$SLUICE" daemon --state-dir "$SL_DAEMON_DIR/state" --log-dir "$SL_DAEMON_DIR/logs" "$@" \
		>>"$SL_DAEMON_DIR/out" 2>>"$SL_DAEMON_DIR/err" </dev/null &
	SL_DAEMON_PID=$!
	sl_track_pid "$SL_DAEMON_PID"
	for i in $(seq $((200 * SL_SLOW))); do
		"$SLUICE" status >/dev/null 2>&1 && return 0
		kill -0 "$SL_DAEMON_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# sl_daemon_kill [SIGNAL]: stop the test's daemon (KILL by default) and wait for it.
sl_daemon_kill() {
	kill "-${1:-KILL}" "$SL_DAEMON_PID" 2>/dev/null
	# (a test that stopped it and was ended meanwhile: a stopped daemon never takes its TERM)
	kill -CONT "$SL_DAEMON_PID" 2>/dev/null
	wait "$SL_DAEMON_PID" 2>/dev/null
	return 0
}

# sl_daemon_killed_by CMD…: CMD (its output dropped) makes the test's daemon, started with a
# SLUICE_SELFTEST_KILL point, kill itself; waits for that death and sets SL_DAEMON_RC to its
# status (137: its own SIGKILL; a crash is another) or "alive" (then killed here). Bash's job
# notice of the death ("Killed") goes to $SL_TMP/daemon-killed.err, not the test's stderr: the
# caller shows that file when SL_DAEMON_RC is not 137.
sl_daemon_killed_by() {
	{
		"$@" >/dev/null 2>&1
		wait_until 10000 sl_daemon_dead
		if sl_daemon_dead; then
			wait "$SL_DAEMON_PID"
			SL_DAEMON_RC=$?
		else
			SL_DAEMON_RC=alive
			sl_daemon_kill KILL
		fi
	} 2>"$SL_TMP/daemon-killed.err"
}
# shellcheck disable=SC2317 # called through wait_until
sl_daemon_dead() {
	local st
	st=$(awk '{ print $3 }' "/proc/$SL_DAEMON_PID/stat" 2>/dev/null)
	[[ -z $st || $st == Z ]]
}

# sl_daemon_attach NAME POLICY [ATTACH-ARGS…]: a cgroup made as a runtime would (sl_cgroup_new
# NAME, removed at exit: registered here, in the test's shell, not in a $(…) subshell) and a run
# attached to it by the test's daemon: run id t-$SL_ID-NAME (ended at exit), log
# $SL_TMP/NAME.jsonl. Sets SL_ATT_CG, SL_ATT_RUN and SL_ATT_LOG; bails out, with the daemon's
# last words, when either cannot be made.
sl_daemon_attach() {
	local name=$1 policy=$2 out
	shift 2
	SL_ATT_CG=$(sl_cgroup_new "$name") || bail_out "cannot make the test cgroup $name"
	sl_on_exit "sl_cgroup_remove '$SL_ATT_CG'"
	SL_ATT_RUN=t-$SL_ID-$name
	SL_RUNS+=("$SL_ATT_RUN")
	SL_ATT_LOG=$SL_TMP/$name.jsonl
	out=$("$SLUICE" attach --cgroup "$SL_ATT_CG" --policy "$policy" --run-id "$SL_ATT_RUN" \
		--log "$SL_ATT_LOG" "$@" 2>&1) ||
		bail_out "attach of $name failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
}

# sl_daemon_req [--all] [--fd PATH | --fd-opath PATH] [--raw] TEXT: one request on the daemon's
# socket ($SLUICE_SOCKET), prints the first reply line (--all: every line until the daemon closes,
# for a --raw TEXT of several requests). TEXT is one request line; the "\n" that ends it is added,
# unless --raw: then TEXT goes out byte for byte (a test of malformed requests). --fd: PATH opened
# read-only goes with it (SCM_RIGHTS); --fd-opath: opened O_PATH (a client's mistake). Either way the write side is shut after it, so a request
# cut short is answered, not waited on. The wait scales with SL_SLOW (an attach verifies BPF
# programs: seconds on a loaded machine). tools/sl_daemon_req.py is the client.
sl_daemon_req() {
	local text fd=() all=()
	if [[ ${1-} == --all ]]; then
		all=(--all)
		shift
	fi
	if [[ ${1-} == --fd ]]; then
		fd=("$2")
		shift 2
	elif [[ ${1-} == --fd-opath ]]; then
		fd=("O_PATH:$2")
		shift 2
	fi
	if [[ ${1-} == --raw ]]; then
		text=$2
	else
		text=$1$'\n'
	fi
	python3 "$SL_LIB_DIR/tools/sl_daemon_req.py" "${all[@]}" "$SLUICE_SOCKET" "$text" \
		"$((60 * SL_SLOW))" \
		"${fd[@]}"
}

# sl_reply_field REPLY KEY: a member of a daemon's reply (a JSON object): a string as is, anything
# else as JSON (true, null, 12, [..]); nothing when REPLY is not JSON or has no KEY.
sl_reply_field() {
	python3 -c 'import json, sys
v = json.loads(sys.argv[1]).get(sys.argv[2], "")
print(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))' "$1" "$2" 2>/dev/null
}

# sl_cgroup_new NAME: make a cgroup as a runtime would (outside sluice's own), removed with
# whatever is in it when the test ends (topo_down: every sluice-selftest-$SL_ID-* cgroup);
# prints its path.
sl_cgroup_new() {
	local p
	p=$(cg2_mount)/sluice-selftest-$SL_ID-$1
	mkdir "$p" || return 1
	echo "$p"
}

# sl_cgroup_remove PATH: kill what is in the subtree, remove it deepest first; 1, with the TAP
# comment "cgroup PATH left behind", if it is still there after 10 s × SL_SLOW (topo_down then
# fails the test: a cgroup left behind is a leftover, as leftovers_check says of a run's).
# - The kill is written on every pass until the cgroup is gone: a process whose move into it
#   (echo $$ >cgroup.procs) lands after one kill is ended by the next instead of keeping the
#   cgroup populated; once rmdir succeeds no move can land.
# - The test's own background jobs in it (sl_track_pid: a holder started with
#   "${SL_IN_CGROUP[@]}" … &), found on every pass, before its kill, die of that SIGKILL, and
#   bash would print a job notice for each ("line N: PID Killed …", the whole command, over
#   several lines if it has them) on the test's stderr after whatever command ran next, in the
#   middle of its TAP output. They are disowned before the kill: bash still reaps them but
#   reports none, whenever it sees them end (the kernel says "populated 0" before exit_notify
#   makes the last task a zombie: a wait here could miss one that ends a moment later). Stderr
#   is left alone: another job's death meanwhile (a sluice daemon's segfault as it reacts to the
#   removal) is reported as bash reports it, and so is one of a tracked job bash saw end before
#   it was found here (disown finds no such job): that death was not this function's doing.
sl_cgroup_remove() {
	local p=$1 d pid rel polls=$((200 * SL_SLOW))
	[[ -d $p ]] || return 0
	rel=${p#"$(cg2_mount)"}
	# a loaded machine takes its time to reap (a process under strace, thousands of fds)
	while ((polls-- > 0)) && [[ -d $p ]]; do
		for pid in "${SL_PIDS[@]}"; do
			# (2>/dev/null: a tracked pid that is no job of this shell; a builtin's redirection
			# hides no other job's notice, bash prints those after external commands)
			sl_pid_in_cgroup "$pid" "$rel" && disown "$pid" 2>/dev/null
		done
		[[ -e $p/cgroup.kill ]] && echo 1 >"$p/cgroup.kill" 2>/dev/null
		if [[ $(cat "$p/cgroup.events" 2>/dev/null) != *"populated 1"* ]]; then
			find "$p" -depth -type d 2>/dev/null |
				while IFS= read -r d; do rmdir "$d" 2>/dev/null; done
			[[ -d $p ]] || break
		fi
		sleep 0.05
	done
	if [[ -d $p ]]; then
		tap_comment "cgroup $p left behind"
		SL_CGROUPS_LEFT+=("$p")
		return 1
	fi
	return 0
}

# sl_pid_in_cgroup PID CGROUP: process PID is in CGROUP (its path below the cgroup2 mount, as
# /proc/PID/cgroup says it) or below it. Read without a fork: a test tracks dozens of pids.
sl_pid_in_cgroup() {
	local line cg rel=$2
	[[ -r /proc/$1/cgroup ]] || return 1
	while IFS= read -r line; do
		[[ $line == 0::* ]] || continue
		cg=${line#0::}
		[[ $cg == "$rel" || $cg == "$rel"/* ]]
		return
	done <"/proc/$1/cgroup"
	return 1
}

# sl_in_cgroup PATH CMD…: CMD as a process of cgroup PATH from its first instruction.
sl_in_cgroup() {
	"${SL_IN_CGROUP[@]}" "$@"
}
# "${SL_IN_CGROUP[@]}" CGROUP CMD… &: the same, started in the background without a function
# (a backgrounded function is a subshell: $! would be its pid, and killing it leaves CMD running).
SL_IN_CGROUP=(bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"')
