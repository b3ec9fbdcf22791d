#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The escape-probe kit against sandboxes sluice did not set up (selftests/probes/run-external.sh;
# make probes runs the whole table): a podman container (on runc, busybox root) in the kit's
# namespace is NOT contained — the kit can fail a sandbox — while `sluice run` with a deny-all
# policy is contained on every probe the kit makes; the control (the kit with no sandbox) gets
# out by every road, so each "contained" means a road that is open on this kernel; a sandbox the
# kit never ran in is a failure, not contained by its silence. Judged at the
# test hosts by the kit's observer, read back from the table run-external.sh writes. With --pid,
# two sandboxes already running in namespaces with loopback alone: a bare one is NOT contained,
# `sluice run --netns` is contained on every probe (the kit had its workload's capabilities),
# the kit enters them by their pinned namespaces, and its link goes home after; this machine's
# namespace, one with a link of its own (or links whose aliases say LOOPBACK), one in a user
# namespace of its own, one whose cgroup's name is a shell command, and the kit itself beside a
# link not its own are refused with nothing sent (nor run); a process holding CAP_NET_RAW the kit
# cannot carry has its packet rows skipped, not contained; and a sandbox whose pid goes to
# another namespace's process mid-run leaves that namespace's links alone.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up
EXT=$SL_LIB_DIR/probes/run-external.sh
KIT=$SL_TOOLS/sl_escape
[[ -x $KIT ]] || bail_out "$KIT not built (make)"

# cell TABLE PROBE COLUMN: the table's cell for PROBE in COLUMN (the column's header).
cell() {
	python3 - "$@" <<'PY'
import sys
rows = [[c.strip() for c in l.strip().strip("|").split(" | ")] for l in open(sys.argv[1])
        if l.startswith("| ")]
head = rows[0]
for r in rows[1:]:
    if r[0] == sys.argv[2]:
        print(r[head.index(sys.argv[3])])
PY
}
# The probes the kit makes, from its own table.
kit_probes=$("$KIT" --list | cut -d' ' -f1 | uniq | tr '\n' ' ')

# Bad command lines: said, before anything is built.
"$EXT" >"$SL_TMP/usage.out" 2>&1
tap_is "run-external.sh with no --enter exits 2" "$?" 2
tap_check "and says --enter is required" grep -q -- '--enter TEMPLATE is required' "$SL_TMP/usage.out"
"$EXT" --enter '{netns}' --frob >"$SL_TMP/usage.out" 2>&1
tap_is "an unknown argument exits 2, naming it" "$?:$(grep -c 'unknown argument "--frob"' "$SL_TMP/usage.out")" 2:1
"$EXT" --name x --enter '{netns}' >"$SL_TMP/usage.out" 2>&1
tap_is "--name before any --enter exits 2" "$?:$(grep -c 'names the --enter or --pid before it' "$SL_TMP/usage.out")" 2:1
# the kit's probes go to the metadata address: never out of the kit's namespace
"$EXT" --enter 'podman run --rm busybox' >"$SL_TMP/usage.out" 2>&1
tap_is "a template without {netns} is refused (exit 2), before anything runs" \
	"$?:$(grep -c 'has no {netns}' "$SL_TMP/usage.out")" 2:1

# A template that names {netns} but runs the kit elsewhere (podman --network host would be the
# real network): the kit checks that it runs in the namespace the kit made and sends nothing
# otherwise. Shown from an empty namespace of the test's own, where nothing could leave anyway.
EMPTY_NS=sl-kit-empty-$SL_ID
ip netns add "$EMPTY_NS" && sl_on_exit "ip netns del '$EMPTY_NS' 2>/dev/null; true"
kit_ino=$(stat -L -c %i "/run/netns/$SL_NS_RUN")
nsenter --net="/run/netns/$EMPTY_NS" "$KIT" --netns-inode "$kit_ino" --timeout-ms 100 \
	>"$SL_TMP/elsewhere.out" 2>&1
tap_is "the kit outside the kit's namespace: exit 2, said, nothing sent" \
	"$?:$(grep -c "not in the kit's network namespace" "$SL_TMP/elsewhere.out"):$(grep -c ': sent$' \
		"$SL_TMP/elsewhere.out")" "2:1:0" || tap_diag "$(cat "$SL_TMP/elsewhere.out")"
nsenter --net="/run/netns/$EMPTY_NS" "$KIT" --timeout-ms 100 >"$SL_TMP/elsewhere.out" 2>&1
tap_is "the kit without --netns-inode: exit 2, nothing sent" \
	"$?:$(grep -c -- '--netns-inode (the kit.s namespace) is required' "$SL_TMP/elsewhere.out"):$(grep -c \
		': sent$' "$SL_TMP/elsewhere.out")" "2:1:0"

# A podman container: podman's own namespaces, capabilities and seccomp profile, on the veth the
# kit made. Not a network sandbox: it must come out NOT contained.
ROOTFS=$SL_TMP/rootfs
podman_skip=
command -v podman >/dev/null || podman_skip="podman not installed"
[[ -z $podman_skip ]] && { require_busybox_static; sl_busybox_rootfs "$ROOTFS" || bail_out "no rootfs"; }
[[ -z $podman_skip ]] && { sl_podman_storage || bail_out "cannot make podman's storage in $SL_TMP"; }
CG2=$(cg2_mount)
made_libpod=()
for d in "$CG2"/../*/libpod_parent "$CG2"/libpod_parent; do
	[[ -e $d ]] || made_libpod+=("$d")
done
# shellcheck disable=SC2317 # (run from topo_down)
podman_cleanup() {
	local d
	podman rm --force "sl-probekit-$SL_ID" >/dev/null 2>&1
	# podman's conmon may still be leaving its cgroup when podman run --rm returns
	for d in "${made_libpod[@]}"; do
		for _ in $(seq $((40 * SL_SLOW))); do
			[[ -d $d ]] || break
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
			[[ -d $d ]] && sleep 0.05
		done
	done
	return 0
}
sl_on_exit podman_cleanup
# The same kit under sluice, deny-all: contained on every probe the kit makes. One
# run-external.sh for both sandboxes: one topology, one control, a column each.
policy=$SL_TMP/deny-all.yaml
printf 'default: deny\nrules: []\n' >"$policy"
id=t-$SL_ID-kit
SL_RUNS+=("$id")
args=(--out "$SL_TMP/table.md")
# --ulimit: this machine's hard limits are below podman's defaults (test_oci.sh)
[[ -z $podman_skip ]] && args+=(--enter "podman run --rm --name sl-probekit-$SL_ID \
--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network ns:{netns} \
-v {kit}:{kit}:ro --rootfs $ROOTFS:O" --name podman)
args+=(--enter "$SLUICE run --policy $policy --run-id $id --task probes --log $SL_TMP/kit.jsonl \
--netns {netns} --" --name sluice)
# a sandbox the kit never runs in: not "contained" by its silence
args+=(--enter "nsenter --net={netns} -- false" --name broken)
"$EXT" "${args[@]}" >"$SL_TMP/ext.tap" 2>&1
rc=$?
bad=
for p in $kit_probes; do
	c=$(cell "$SL_TMP/table.md" "$p" "no sandbox (control)")
	[[ $c == "escapes (control)"* ]] || bad+="$p: $c; "
done
tap_is "control: with no sandbox every probe the kit makes gets out, seen at the test hosts" "$bad" "" ||
	tap_diag_file "$SL_TMP/ext.tap" 60
if [[ -n $podman_skip ]]; then
	for i in 1 2 3; do tap_skip "podman $i" "$podman_skip"; done
	tap_is "run-external.sh exits 1 (the broken sandbox)" "$rc" 1
else
	tap_is "run-external.sh exits 1: a sandbox is NOT contained" "$rc" 1
	bad=
	for p in P1 P2 P3 P4 P7 P16; do
		c=$(cell "$SL_TMP/table.md" "$p" podman)
		[[ $c == "**NOT contained**: observer saw "* ]] || bad+="$p: $c; "
	done
	tap_is "podman container: TCP, UDP, the metadata address, DNS and QUIC are NOT contained" "$bad" ""
	tap_check "podman container: a TAP line says so for each" \
		grep -q '^not ok .* - podman: P1 NOT contained$' "$SL_TMP/ext.tap"
	tap_check "the table is printed" grep -q '^| P1 | .* | \*\*NOT contained\*\*' "$SL_TMP/ext.tap"
fi
bad=
for p in $kit_probes other; do
	c=$(cell "$SL_TMP/table.md" "$p" sluice)
	[[ $c == "contained: observer saw "* ]] || bad+="$p: $c; "
done
tap_is "sluice run: every probe the kit makes is contained, and nothing else arrived" "$bad" ""
tap_is "sluice run: no TAP line of its column is not ok" "$(grep -c '^not ok .* - sluice: ' "$SL_TMP/ext.tap")" 0
tap_check "a sandbox the kit did not run in is a failure, not contained" \
	grep -q '^not ok .* - broken: the kit did not run in the sandbox (exit status 1)$' "$SL_TMP/ext.tap"
tap_cmp "sluice run: its log has the denials" \
	"$(log_count "$SL_TMP/kit.jsonl" type=decision decision=deny)" -ge 10
tap_check "sluice run: nothing left" leftovers_check "$id"
# the namespaces each run-external.sh made are named after its pid (in its "# sandbox:" line)
left=
for pid in $(sed -n 's|^# sandbox: .*/run/netns/sl-run-\([0-9]*\) .*|\1|p' "$SL_TMP"/*.tap | sort -u); do
	left+=$(ip netns list | grep -E "^sl-(run|rtr|inet)-$pid( |$)")
done
tap_is "run-external.sh left no namespace behind" "$left" ""

# --- --pid: a sandbox already running -------------------------------------------------------
# Refused, before anything is built: this machine's own namespace, and a namespace with a link
# of its own (which could lead to a real network). The test's namespaces here have no route out.
"$EXT" --pid $$ >"$SL_TMP/usage.out" 2>&1
tap_is "--pid of a process in this machine's namespace: refused (exit 2), nothing built" \
	"$?:$(grep -c "this machine's own network namespace" "$SL_TMP/usage.out"):$(grep -c \
		'^# sandbox:' "$SL_TMP/usage.out")" "2:1:0"
"$EXT" --pid 12x >"$SL_TMP/usage.out" 2>&1
tap_is "--pid 12x: refused, not a process id" "$?:$(grep -c '"12x" is not a process id' \
	"$SL_TMP/usage.out")" "2:1"
LINKED_NS=sl-kit-linked-$SL_ID
ip netns add "$LINKED_NS" && sl_on_exit "ip netns del '$LINKED_NS' 2>/dev/null; true"
ip -n "$LINKED_NS" link add x0 type veth peer name x1 || bail_out "cannot make x0/x1"
nsenter --net="/run/netns/$LINKED_NS" sleep 600 </dev/null >/dev/null 2>&1 &
linked_pid=$!
sl_track_pid "$linked_pid"
"$EXT" --pid "$linked_pid" >"$SL_TMP/usage.out" 2>&1
tap_is "--pid of a sandbox whose namespace has links of its own: refused (exit 2), naming them" \
	"$?:$(grep -c 'has links other than loopback (x1, x0)\|has links other than loopback (x0, x1)' \
		"$SL_TMP/usage.out"):$(grep -c '^# sandbox:' "$SL_TMP/usage.out")" "2:1:0" ||
	tap_diag_file "$SL_TMP/usage.out"

# a link whose alias says LOOPBACK is a link all the same
ALIAS_NS=sl-kit-alias-$SL_ID
ip netns add "$ALIAS_NS" && sl_on_exit "ip netns del '$ALIAS_NS' 2>/dev/null; true"
if ! ip -n "$ALIAS_NS" link add d0 type veth peer name d1 ||
	! ip -n "$ALIAS_NS" link set d0 alias LOOPBACK ||
	! ip -n "$ALIAS_NS" link set d1 alias '<LOOPBACK,UP>'; then
	bail_out "cannot make d0/d1"
fi
nsenter --net="/run/netns/$ALIAS_NS" sleep 600 </dev/null >/dev/null 2>&1 &
alias_pid=$!
sl_track_pid "$alias_pid"
"$EXT" --pid "$alias_pid" >"$SL_TMP/usage.out" 2>&1
tap_is "--pid of a sandbox whose links' aliases say LOOPBACK: refused (exit 2), naming them" \
	"$?:$(grep -c 'has links other than loopback (d1, d0)\|has links other than loopback (d0, d1)' \
		"$SL_TMP/usage.out"):$(grep -c '^# sandbox:' "$SL_TMP/usage.out")" "2:1:0" ||
	tap_diag_file "$SL_TMP/usage.out"
sl_stop_pid "$alias_pid"

# The kit itself, in the right namespace but with a link that is not the kit's: nothing sent.
# (EMPTY_NS: veth0 with another MAC than the kit's, its peer in LINKED_NS; then one more link.)
ip -n "$EMPTY_NS" link add veth0 type veth peer name x2 netns "$LINKED_NS" ||
	bail_out "cannot make veth0 in $EMPTY_NS"
empty_ino=$(stat -L -c %i "/run/netns/$EMPTY_NS")
veth_mac=$(ip -n "$EMPTY_NS" -o link show veth0 | sed -n 's|.* link/ether \([0-9a-f:]*\) .*|\1|p')
nsenter --net="/run/netns/$EMPTY_NS" "$KIT" --netns-inode "$empty_ino" --if-mac 02:00:00:00:00:01 \
	--timeout-ms 100 >"$SL_TMP/elsewhere.out" 2>&1
tap_is "the kit whose link has another MAC than --if-mac: exit 2, said, nothing sent" \
	"$?:$(grep -c 'another MAC than --if-mac' "$SL_TMP/elsewhere.out"):$(grep -c ': sent$' \
		"$SL_TMP/elsewhere.out")" "2:1:0" || tap_diag_file "$SL_TMP/elsewhere.out"
ip -n "$EMPTY_NS" link add x3 type veth peer name x4 netns "$LINKED_NS" || bail_out "cannot make x3"
nsenter --net="/run/netns/$EMPTY_NS" "$KIT" --netns-inode "$empty_ino" --if-mac "$veth_mac" \
	--timeout-ms 100 >"$SL_TMP/elsewhere.out" 2>&1
tap_is "the kit beside a link that is not its own: exit 2, said, nothing sent" \
	"$?:$(grep -c "link x3 is not the kit's" "$SL_TMP/elsewhere.out"):$(grep -c ': sent$' \
		"$SL_TMP/elsewhere.out")" "2:1:0" || tap_diag_file "$SL_TMP/elsewhere.out"

# Two sandboxes already running, each in a namespace with nothing but loopback: a bare one (a
# process in a cgroup of the test's, no containment at all) and `sluice run --netns` with a
# deny-all policy, started before the kit and found by the pid of its workload.
BARE_NS=sl-kit-bare-$SL_ID
SLNS=sl-kit-sluice-$SL_ID
for ns in "$BARE_NS" "$SLNS"; do
	ip netns add "$ns" && sl_on_exit "ip netns del '$ns' 2>/dev/null; true"
	ip -n "$ns" link set lo up || bail_out "cannot make $ns"
done
bare_cg=$(sl_cgroup_new bare) || bail_out "cannot make a cgroup for the bare sandbox"
# (bash execs: $! is the sandbox's process, not a subshell's in this namespace)
bash -c 'echo $$ >"$0/cgroup.procs" && exec nsenter --net="$1" sleep 600' "$bare_cg" \
	"/run/netns/$BARE_NS" </dev/null >/dev/null 2>&1 &
bare_pid=$!
sl_track_pid "$bare_pid"
# Refused, before anything is built: a sandbox in a user namespace of its own (rootless), mapped
# to this test's root or to an unprivileged uid: the kit runs in this machine's mount namespace,
# where the sandbox's root, privileged in its user namespace, could trace it and reach this
# machine's files. Neither one may see the kit (nor an nsenter as this machine's root) at all.
bash -c 'echo $$ >"$0/cgroup.procs" && exec unshare --user --map-root-user --net sleep 600' \
	"$bare_cg" </dev/null >/dev/null 2>&1 &
userns_pid=$!
sl_track_pid "$userns_pid"
bash -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid 65534 --regid 65534 --clear-groups \
	unshare --user --map-root-user --net sleep 600' "$bare_cg" </dev/null >/dev/null 2>&1 &
rootless_pid=$!
sl_track_pid "$rootless_pid"
# in_own_userns PID: PID runs in a user namespace of its own (its unshare is done)
in_own_userns() {
	local ns
	ns=$(stat -L -c %i "/proc/$1/ns/user" 2>/dev/null)
	[[ -n $ns && $ns != "$(stat -L -c %i /proc/self/ns/user)" ]]
}
wait_until 5000 in_own_userns "$userns_pid"
wait_until 5000 in_own_userns "$rootless_pid"
for p in "$userns_pid:this test's root" "$rootless_pid:uid 65534"; do
	"$EXT" --pid "${p%%:*}" >"$SL_TMP/usage.out" 2>&1
	tap_is "--pid of a sandbox in a user namespace of its own (root there is ${p#*:}): refused (exit 2), nothing built" \
		"$?:$(grep -c 'is in a user namespace of its own' "$SL_TMP/usage.out"):$(grep -c \
			'^# sandbox:' "$SL_TMP/usage.out")" "2:1:0" || tap_diag_file "$SL_TMP/usage.out"
done
# A loopback-only namespace in a cgroup whose name is a shell command: refused, and the command
# never runs (the kit makes its cgroup below the sandbox's and removes it at exit).
# (a cgroup's name has no slash: the command finds its file through the environment)
export SL_PWNED=$SL_TMP/pwned
inj_cg="$bare_cg/inj';touch \"\$SL_PWNED\";'"
mkdir "$inj_cg" || bail_out "cannot make the cgroup $inj_cg"
sl_on_exit "$(printf '%q ' sl_cgroup_remove "$inj_cg")"
bash -c 'echo $$ >"$0/cgroup.procs" && exec nsenter --net="$1" sleep 600' "$inj_cg" \
	"/run/netns/$BARE_NS" </dev/null >/dev/null 2>&1 &
inj_pid=$!
sl_track_pid "$inj_pid"
wait_until 5000 grep -q "inj'" "/proc/$inj_pid/cgroup"
"$EXT" --pid "$inj_pid" >"$SL_TMP/inj.tap" 2>&1
tap_is "--pid of a sandbox whose cgroup's name is a shell command: refused, the command never ran" \
	"$(grep -c '^Bail out!.*has characters other than' "$SL_TMP/inj.tap"):$(ls "$SL_PWNED" 2>/dev/null)" "1:" ||
	tap_diag_file "$SL_TMP/inj.tap" 10
sl_stop_pid "$inj_pid"
id2=t-$SL_ID-pid
SL_RUNS+=("$id2")
"$SLUICE" run --policy "$policy" --run-id "$id2" --task probes --log "$SL_TMP/pid.jsonl" \
	--netns "/run/netns/$SLNS" -- sleep 600 </dev/null >"$SL_TMP/pid-run.out" 2>&1 &
sluice_pid=$!
sl_track_pid "$sluice_pid"
# the workload's pid, as this machine sees it: the sleep in the run's cgroup
run_sleep() {
	local p
	while IFS= read -r p; do
		[[ $(cat "/proc/$p/comm" 2>/dev/null) == sleep ]] && echo "$p" && return 0
	done < <(find "$CG2/sluice/$id2" -name cgroup.procs -exec cat {} + 2>/dev/null)
	return 1
}
wait_until 20000 run_sleep >/dev/null || bail_out "sluice run did not start: $(cat "$SL_TMP/pid-run.out")"
sl_pid=$(run_sleep)
# A process that kept CAP_NET_RAW in its permitted set (not ambient: an exec would lose it) as
# uid 65534: the kit, which only gets what an exec keeps, cannot open the packet sockets it
# could; its "contained" there must not be credited to the sandbox.
bash -c 'echo $$ >"$0/cgroup.procs" && exec nsenter --net="$1" python3 -c "
import ctypes, os, time
ctypes.CDLL(None).prctl(8, 1, 0, 0, 0)  # PR_SET_KEEPCAPS
os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
time.sleep(600)"' "$bare_cg" "/run/netns/$BARE_NS" </dev/null >/dev/null 2>&1 &
raw_pid=$!
sl_track_pid "$raw_pid"
wait_until 5000 grep -q '^Uid:[[:space:]]*65534' "/proc/$raw_pid/status"
"$EXT" --pid "$bare_pid" --name bare --pid "$sl_pid" --name "sluice (--pid)" \
	--pid "$raw_pid" --name netraw --out "$SL_TMP/pid-table.md" >"$SL_TMP/pid.tap" 2>&1
rc=$?
tap_is "run-external.sh --pid: exits 1, a sandbox is NOT contained" "$rc" 1 ||
	tap_diag_file "$SL_TMP/pid.tap" 40
bad=
for p in P1 P2 P3 P4 P7 P13 P15; do
	c=$(cell "$SL_TMP/pid-table.md" "$p" bare)
	[[ $c == "**NOT contained**: observer saw "* ]] || bad+="$p: $c; "
done
tap_is "--pid, the bare sandbox: TCP, UDP, the metadata address, DNS, packet frames and a daemon are NOT contained" "$bad" ""
# every step after the check acts on the namespaces pinned then, never on the pid again (a
# pid the sandbox's end freed may be another namespace's process by then)
tap_is "--pid: the kit entered the sandboxes by their pinned namespaces, not by pid" \
	"$(grep -c '^# sandbox: nsenter --net=/run/sl-probekit-[0-9]*-[0-9]*/net ' "$SL_TMP/pid.tap"):$(grep -c \
		'^# sandbox: .*--target' "$SL_TMP/pid.tap")" "3:0"
# (its namespace has this kernel's default net.ipv4.tcp_fastopen and ping_group_range, not the
# control's: P10's Fast Open without a cookie and P12's ping socket are closed there by the
# namespace, and the kit says so rather than credit the sandbox)
bad=
for p in $kit_probes other; do
	c=$(cell "$SL_TMP/pid-table.md" "$p" "sluice (--pid)")
	case $p in
	P10) [[ $c == "skipped: its namespace has net.ipv4.tcp_fastopen=1 "* ]] || bad+="$p: $c; " ;;
	P12) [[ $c == "skipped: its namespace has net.ipv4.ping_group_range="* ]] || bad+="$p: $c; " ;;
	*) [[ $c == "contained: observer saw "* ]] || bad+="$p: $c; " ;;
	esac
done
tap_is "--pid, sluice run: every probe the kit makes is contained, and nothing else arrived; P10 and P12 skipped, closed by its namespace's sysctls" "$bad" ""
tap_is "--pid, sluice run: the kit says which of its namespace's sysctls differ from the control's" \
	"$(grep -c "^# process $sl_pid's namespace has net.ipv4.\(tcp_fastopen=1 \|ping_group_range=\)" \
		"$SL_TMP/pid.tap")" 2
bad=
for p in P13 P23; do
	c=$(cell "$SL_TMP/pid-table.md" "$p" netraw)
	[[ $c == "skipped: process $raw_pid holds CAP_NET_RAW (permitted, not ambient)"* ]] || bad+="$p: $c; "
done
tap_is "--pid, a process holding CAP_NET_RAW the kit cannot carry: packet frames skipped, not contained" \
	"$bad:$(grep -c "^# process $raw_pid holds capabilities the kit cannot carry (.*+cap_13" "$SL_TMP/pid.tap")" ":1"
# a prober with root's capabilities would get its frames out where no veth is to hold a tc
# program: it had the sandbox's bounding set, without CAP_NET_RAW
tap_check "--pid, sluice run: the kit had the workload's capabilities (no packet socket)" \
	grep -q 'AF_PACKET hand-built frame: err EPERM at socket' <(cell "$SL_TMP/pid-table.md" P13 "sluice (--pid)")
tap_is "--pid: the kit ran in each sandbox" "$(grep -c 'the kit did not run in the sandbox' "$SL_TMP/pid.tap")" 0
tap_cmp "--pid, sluice run: its log has the kit's denials" \
	"$(log_count "$SL_TMP/pid.jsonl" type=decision decision=deny)" -ge 10
links=
for ns in "/run/netns/$BARE_NS" "/run/netns/$SLNS"; do
	links+="$(nsenter --net="$ns" ip -o link show | awk -F': ' '{ printf "%s ", $2 }'); "
done
tap_is "--pid: the kit's link went home, each sandbox's namespace has loopback alone again" \
	"$links" "lo ; lo ; "
tap_is "--pid: the sandboxes still run (the kit does not end them), its cgroups below theirs are gone" \
	"$(kill -0 "$bare_pid" "$raw_pid" "$sl_pid" 2>&1)$(find "$bare_cg" "$CG2/sluice/$id2" \
		-name 'sl-probekit-*')" ""
kill "$sl_pid"
wait "$sluice_pid"
tap_is "--pid, sluice run: ends with its workload" "$?" 143
tap_check "--pid, sluice run: nothing left" leftovers_check "$id2"

# The sandbox ends while the kit runs and its pid goes to a process of another namespace (here
# one of the test's, with a link named veth0, standing in for this machine's): the kit acts on
# the namespace it pinned, and leaves the other one's links alone.
REUSE_NS=sl-kit-reuse-$SL_ID
FH_NS=sl-kit-fakehost-$SL_ID
for ns in "$REUSE_NS" "$FH_NS"; do
	ip netns add "$ns" && sl_on_exit "ip netns del '$ns' 2>/dev/null; true"
	ip -n "$ns" link set lo up || bail_out "cannot make $ns"
done
if ! ip -n "$FH_NS" link add veth0 type veth peer name hostpeer ||
	! ip -n "$FH_NS" addr add 192.0.2.5/24 dev veth0; then
	bail_out "cannot make $FH_NS's links"
fi
nsenter --net="/run/netns/$REUSE_NS" sleep 600 </dev/null >/dev/null 2>&1 &
reuse_pid=$!
"$EXT" --pid "$reuse_pid" --out "$SL_TMP/reuse.md" >"$SL_TMP/reuse.tap" 2>&1 &
ext_pid=$!
sl_track_pid "$ext_pid"
# (the second "# sandbox:" line: the control's is the first)
reuse_started() { [[ $(grep -c '^# sandbox:' "$SL_TMP/reuse.tap") -ge 2 ]]; }
wait_until 60000 reuse_started
kill "$reuse_pid"
wait "$reuse_pid" 2>/dev/null
reused=
for _ in $(seq 50); do
	echo $((reuse_pid - 1)) >/proc/sys/kernel/ns_last_pid
	nsenter --net="/run/netns/$FH_NS" sleep 600 </dev/null >/dev/null 2>&1 &
	p=$!
	if [[ $p == "$reuse_pid" ]]; then
		reused=$p
		sl_track_pid "$p"
		break
	fi
	kill "$p"
	wait "$p" 2>/dev/null
done
# (the kit must still be probing when the pid is another's: its link goes home after)
kill -0 "$ext_pid" 2>/dev/null || reused_late=1
wait "$ext_pid"
if [[ -z $reused ]]; then
	tap_skip "--pid: a pid reused mid-run" "pid $reuse_pid was not handed out again (other processes took it)"
elif [[ -n ${reused_late:-} ]]; then
	tap_skip "--pid: a pid reused mid-run" "the kit had ended before pid $reuse_pid was handed out again"
	sl_stop_pid "$reused"
else
	tap_is "--pid: the sandbox's pid reused mid-run by another namespace's process: its links untouched, the kit's link home" \
		"$(ip -n "$FH_NS" -o addr show dev veth0 | grep -c 'inet 192.0.2.5/24'):$(ip -n "$FH_NS" -o link show |
			awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort | tr '\n' ' '):$(grep -c 'Bail out' \
			"$SL_TMP/reuse.tap")" "1:hostpeer lo veth0 :0" || tap_diag_file "$SL_TMP/reuse.tap" 10
	sl_stop_pid "$reused"
fi
kit_id=$(sed -n 's|^# sandbox: nsenter --net=/run/sl-probekit-\([0-9]*\)-.*|\1|p' "$SL_TMP/pid.tap" | head -n 1)
pins=$(shopt -s nullglob; echo /run/netns/sl-sbx-"$kit_id"-* /run/sl-probekit-"$kit_id"-*)
tap_is "--pid: the pins of the sandboxes' namespaces are gone" "$kit_id:$pins" "${kit_id:-none}:"

tap_done
