#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# containerd (Debian's, with its runc shim) under sluice: `sluice attach --container` on a task
# that `ctr run` started, found through the state runc keeps for containerd
# (/run/containerd/runc/NAMESPACE/ID/state.json). The container's loop reaches an unlisted test
# host until the attach, and only the listed one after it; the run's log names the container and
# its cgroup (containerd's /NAMESPACE/ID), has the denials and verifies. containerd's ids are
# unique only within a namespace: the same id in two namespaces is refused with both listed as
# NAMESPACE/ID, and NAMESPACE/ID picks one. A namespace where the shim runs crun holds crun's
# status files, which are read as crun's (made by hand: crun is not installed here), and states
# that cannot be trusted with their pid are refused; podman on a runtime whose state is not read
# (a podman of the test's) is asked twice.
# The test's own containerd (its root, state and socket under the test's directory) runs in a
# private mount namespace whose /run/containerd is a tmpfs: the runc state and the shims' sockets
# that containerd's shim puts there stay the test's (sluice attach runs there too). The
# containers join the topology's run netns: their packets go through the test's router to the
# test hosts only.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
CONTAINERD=$(command -v containerd) || skip_all "containerd not installed"
command -v ctr >/dev/null || skip_all "ctr (containerd's client) not installed"
command -v containerd-shim-runc-v2 >/dev/null || skip_all "containerd-shim-runc-v2 not installed"
command -v runc >/dev/null || skip_all "runc not installed"
require_busybox_static
topo_up

CG2=$(cg2_mount)
PFX=sl-ctr-$SL_ID
NS1=$PFX-a
NS2=$PFX-b
CID=$PFX-loop
CT=$SL_TMP/containerd
POLICY=$SL_TMP/policy.yaml
cat >"$POLICY" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF

# the mount point the private namespace covers: made here (and removed at the end) when the
# machine has none
MADE_RUN_DIR=0
if [[ ! -d /run/containerd ]]; then
	mkdir /run/containerd || bail_out "cannot make /run/containerd"
	MADE_RUN_DIR=1
fi
CTRD_PID=
CTRD_CG=
ctr_() { ctr --address "$CT/c.sock" "$@"; }
# ctrd_ns CMD…: CMD in containerd's mount namespace (where the runc state is)
ctrd_ns() { nsenter --mount="/proc/$CTRD_PID/ns/mnt" -- "$@"; }
# shellcheck disable=SC2317 # (run from topo_down)
containerd_cleanup() {
	local ns d
	if [[ -n $CTRD_PID ]] && kill -0 "$CTRD_PID" 2>/dev/null; then
		for ns in "$NS1" "$NS2"; do
			# (--force: SIGKILL, then the delete once it is gone)
			ctr_ -n "$ns" task delete --force "$CID" >/dev/null 2>&1
			ctr_ -n "$ns" container delete "$CID" >/dev/null 2>&1
			ctr_ namespace remove "$ns" >/dev/null 2>&1
		done
		sl_stop_pid "$CTRD_PID"
	fi
	# what a containerd that could not delete its tasks left: the shims, which outlive it, in
	# its cgroup, and the containers' processes, in theirs
	sl_cgroup_remove "$CTRD_CG"
	for ns in "$NS1" "$NS2"; do
		sl_cgroup_remove "$CG2/$ns"
	done
	# runc's cgroupfs driver makes /NAMESPACE/ID in every hierarchy; containerd removes them
	# with the task, what a failure left goes here
	for d in "$CG2"/../*/"$PFX"-*; do
		[[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	rm -rf -- /sys/fs/bpf/sluice/"$PFX"-*
	[[ $MADE_RUN_DIR -eq 1 ]] && rmdir /run/containerd 2>/dev/null
	rm -rf -- "$CT" 2>/dev/null
	return 0
}
sl_on_exit containerd_cleanup

mkdir -p "$CT"
# only what ctr run needs: no CRI, no snapshotters that probe the host's filesystems
cat >"$CT/config.toml" <<EOF
version = 2
root = "$CT/root"
state = "$CT/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$CT/c.sock"
[ttrpc]
  address = "$CT/c.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CT/opt"
EOF
# in a cgroup of its own, which its shims inherit
CTRD_CG=$(sl_cgroup_new containerd) || bail_out "cannot make a cgroup"
# shellcheck disable=SC2016 # the inner shell expands them
"${SL_IN_CGROUP[@]}" "$CTRD_CG" unshare --mount --propagation private -- sh -c \
	'mount -t tmpfs tmpfs /run/containerd && exec "$1" --config "$2/config.toml"' \
	sh "$CONTAINERD" "$CT" >"$CT/containerd.log" 2>&1 &
CTRD_PID=$!
sl_track_pid "$CTRD_PID"
wait_until 10000 ctr_ version >/dev/null 2>&1 ||
	skip_all "containerd did not start here: $(tail -n 3 "$CT/containerd.log" | tr '\n' ' ')"

tap_plan 20

ROOTFS=$SL_TMP/rootfs
sl_busybox_rootfs "$ROOTFS" || bail_out "cannot make the rootfs"
# ctr_run NS CMD…: container $CID in namespace NS, in the run netns, detached; no image: the
# rootfs is the test's (and so no PATH either: commands by their path)
ctr_run() {
	local ns=$1
	shift
	ctr_ -n "$ns" run -d --null-io --with-ns "network:/run/netns/$SL_NS_RUN" --rootfs \
		"$ROOTFS" "$CID" "$@" >"$SL_TMP/out" 2>"$SL_TMP/err"
}
attach() {
	ctrd_ns "$SLUICE" attach --container "$1" --policy "$POLICY" --run-id "$PFX" \
		>"$SL_TMP/out" 2>"$SL_TMP/err"
}

# shellcheck disable=SC2119 # (no arguments: the daemon's defaults)
sl_daemon_start || bail_out "the test's daemon did not start: $(cat "$SL_DAEMON_DIR/err")"
LOG=$SL_DAEMON_DIR/logs/$PFX.jsonl

# every 0.2 s, one connect to an unlisted host and one to the listed one
ctr_run "$NS1" /bin/sh -c 'while :; do echo a | nc -w 1 203.0.113.7 80
	echo b | nc -w 1 198.51.100.10 80; sleep 0.2; done' ||
	bail_out "ctr run in $NS1: $(cat "$SL_TMP/err")"
# the same id in another namespace (containerd's own network namespace: it connects nowhere)
ctr_run "$NS2" /bin/sleep 600 || bail_out "ctr run in $NS2: $(cat "$SL_TMP/err")"
sink_mark
wait_until 10000 sink_saw "tcp 203.0.113.7 80"
tap_check "ctr run: unconfined, the container reaches the unlisted host" \
	sink_saw "tcp 203.0.113.7 80"

attach "$CID"
rc=$?
tap_is "attach --container ID of two namespaces: refused as ambiguous (exit 3)" "$rc" 3
if grep -qF "$NS1/$CID (containerd, cgroup $CG2/$NS1/$CID)" "$SL_TMP/err" &&
	grep -qF "$NS2/$CID (containerd, cgroup $CG2/$NS2/$CID)" "$SL_TMP/err" &&
	grep -qF "give the full id (containerd's as NAMESPACE/ID)" "$SL_TMP/err"; then
	tap_ok "… both listed as NAMESPACE/ID with their cgroups"
else
	tap_fail "… both listed as NAMESPACE/ID with their cgroups" "$(cat "$SL_TMP/err")"
fi
attach "$PFX-none/$CID"
tap_is "attach --container NAMESPACE/ID of a namespace without it: not found (exit 3)" \
	"$? $(grep -c "in containerd's namespace $PFX-none" "$SL_TMP/err")" "3 1"

attach "$NS1/$CID"
rc=$?
tap_is "attach --container NAMESPACE/ID: attached (runc's state for containerd)" "$rc" 0
[[ $rc -eq 0 ]] || tap_diag "$(cat "$SL_TMP/out" "$SL_TMP/err")"
sleep 1 # a connect in flight at the attach may still land: counted from here on
sink_mark
sleep $((2 * SL_SLOW))
tap_is "attached: nothing more reaches the unlisted host" "$(sink_count 'tcp 203.0.113.7 80')" 0
tap_cmp "attached: the listed host is still reached" \
	"$(sink_count 'tcp 198.51.100.10 80')" -gt 0
assert_log "the run's log names the container and containerd's cgroup of it" "$LOG" 1 \
	type=run_start attached=true "source=container:$CID" "cgroup=$CG2/$NS1/$CID"
assert_log "its denials are logged, enforced" "$LOG" +1 type=decision dst=203.0.113.7 \
	decision=deny enforced=true
"$SLUICE" detach --run-id "$PFX" >/dev/null 2>&1 || tap_diag "detach $PFX failed"
wait_until 10000 grep -q '"type":"run_end"' "$LOG"
tap_check "detached: the run's log verifies" "$SLUICE" verify "$LOG" --key "$SLUICE_PUB"

# containerd's runc shim running crun (BinaryName) leaves crun's status, not runc's state.json,
# in the namespace's root. crun is not installed here: its status file as crun writes it, made by
# hand in containerd's (private) root for a process of the test's, in a cgroup named after the
# container (as runtimes name theirs), moved below it to init.scope as systemd in a container
# moves itself: the container's cgroup is crun's cgroup-path, not the one its init is in.
sleep 600 &
CRUN_PID=$!
sl_track_pid "$CRUN_PID"
CRUN_TOP=$(sl_cgroup_new crun) || bail_out "cannot make a cgroup"
sl_on_exit "sl_cgroup_remove '$CRUN_TOP'"
CRUN_CG=$CRUN_TOP/$PFX-crun
mkdir -p "$CRUN_CG/init.scope" || bail_out "cannot make a cgroup"
echo "$CRUN_PID" >"$CRUN_CG/init.scope/cgroup.procs"
CRUN_REL=${CRUN_CG#"$CG2"}
# field 22 of /proc/PID/stat, the 20th after the command's ')'
CRUN_START=$(sed 's/.*) //' "/proc/$CRUN_PID/stat" | cut -d' ' -f20)
# c_state ID FILE JSON: a runtime's state file of container ID in namespace $PFX-c
c_state() {
	# shellcheck disable=SC2016 # the inner shell expands them
	ctrd_ns sh -c 'mkdir -p "$1" && printf "%s\n" "$3" >"$1/$2"' sh \
		"/run/containerd/runc/$PFX-c/$1" "$2" "$3"
}
# crun_status ID START CGROUP-PATH: crun's status of $CRUN_PID as ID
crun_status() {
	c_state "$1" status "{\"pid\":$CRUN_PID,\"process-start-time\":$2,
		\"cgroup-path\":\"$3\",\"rootfs\":\"/\",\"systemd-cgroup\":false}"
}
c_attach() {
	ctrd_ns "$SLUICE" attach --container "$PFX-c/$1" --policy "$POLICY" --run-id "$PFX-c" \
		--dry-run >"$SL_TMP/out" 2>"$SL_TMP/err"
}
crun_status "$PFX-crun" "$CRUN_START" "$CRUN_REL"
# its pid now another process's: crun's start time is not that process's
crun_status "$PFX-stale" 1 "$CRUN_REL"
c_attach "$PFX-crun"
tap_is "crun under containerd: its status read, the cgroup its cgroup-path names" \
	"$? $(grep -c "\"cgroup\":\"$CRUN_CG\"" "$SL_TMP/out")" "0 1"
c_attach "$PFX-stale"
tap_is "crun under containerd: a status whose process is gone (its pid reused): not running" \
	"$? $(grep -c "its init process is gone: not running" "$SL_TMP/err")" "3 1"
# States that name the same process but cannot be trusted with it: refused (exit 3), each with
# its reason. A status without a start time (its pid may be anyone's); a cgroup-path "/." (the
# root cgroup); runc's state naming a parent of the container's cgroup; a symbolic link in the
# root (an alias of $PFX-crun); a prefix of $PFX-crun that also matches the first of these.
c_state "$PFX-crun2" status "{\"pid\":$CRUN_PID,\"cgroup-path\":\"$CRUN_REL\"}"
crun_status "$PFX-dot" "$CRUN_START" "/."
c_state "$PFX-par" state.json "{\"id\":\"$PFX-par\",\"init_process_pid\":$CRUN_PID,
	\"init_process_start\":$CRUN_START,\"cgroup_paths\":{\"\":\"$CRUN_TOP\"}}"
ctrd_ns ln -s "$PFX-crun" "/run/containerd/runc/$PFX-c/$PFX-alias"
refused=("$PFX-crun2" 'no valid "pid" and "process-start-time"'
	"$PFX-dot" "is not a cgroup below the cgroup v2 mount"
	"$PFX-par" "does not name the container: a parent cgroup"
	"$PFX-alias" "not a directory (a symbolic link?)"
	"$PFX-cru" "but also a container whose state could not be read")
for ((i = 0; i < ${#refused[@]}; i += 2)); do
	c_attach "${refused[i]}"
	tap_is "crun under containerd: ${refused[i]} refused: ${refused[i + 1]}" \
		"$? $(grep -cF "${refused[i + 1]}" "$SL_TMP/err")" "3 1"
done
# podman on a runtime whose state sluice does not read: the cgroup is podman's State.CgroupPath,
# the pid its State.Pid, which has no start time: podman is asked again once the pid's start time
# is read, and a pid it then no longer names is refused (the first may be another process's). A
# podman of the test's, in PATH first, answers as such a podman would, with $FAKE/pid2 (if any)
# its second answer's pid.
sleep 600 &
POD_PID=$!
sl_track_pid "$POD_PID"
POD_CG=$CRUN_TOP/$PFX-fpod
mkdir "$POD_CG" || bail_out "cannot make a cgroup"
echo "$POD_PID" >"$POD_CG/cgroup.procs"
FAKE=$SL_TMP/fakebin
mkdir -p "$FAKE"
{
	echo '#!/bin/sh'
	echo "n=\$((\$(cat '$FAKE/n' 2>/dev/null || echo 0) + 1)); echo \$n >'$FAKE/n'"
	echo "pid=$POD_PID; [ \$n -gt 1 ] && [ -s '$FAKE/pid2' ] && pid=\$(cat '$FAKE/pid2')"
	echo "printf '[{\"Id\":\"$PFX-fpod\",\"Name\":\"fpod\",\"State\":{\"Pid\":%s,\"CgroupPath\":\"${POD_CG#"$CG2"}\"}}]' \"\$pid\""
} >"$FAKE/podman"
chmod +x "$FAKE/podman"
fake_attach() {
	rm -f "$FAKE/n"
	PATH=$FAKE:$PATH "$SLUICE" attach --container "$PFX-fpod" --policy "$POLICY" \
		--run-id "$PFX-c" --dry-run >"$SL_TMP/out" 2>"$SL_TMP/err"
}
fake_attach
tap_is "podman on another runtime: its State.CgroupPath, asked twice" \
	"$? $(grep -c "\"cgroup\":\"$POD_CG\"" "$SL_TMP/out") $(cat "$FAKE/n")" "0 1 2"
echo "$CRUN_PID" >"$FAKE/pid2"
fake_attach
tap_is "podman on another runtime: a pid it no longer names the second time: refused (exit 3)" \
	"$? $(grep -c "its process changed while it was being located" "$SL_TMP/err")" "3 1"
# a state entry of 254 characters (the filesystem allows 255) is no id a runtime allows (253 at
# most): not a container, even by a prefix of it (its id would not fit sluice's record)
LONG_ID=$PFX-long$(printf 'x%.0s' {1..254})
LONG_ID=${LONG_ID:0:254}
POD_START=$(sed 's/.*) //' "/proc/$POD_PID/stat" | cut -d' ' -f20)
crun_status "$LONG_ID" "$POD_START" "${POD_CG#"$CG2"}"
c_attach "$PFX-long"
tap_is "a state entry longer than any id: not a container, even by prefix (exit 3)" \
	"$? $(grep -c "no running container \"$PFX-long\"" "$SL_TMP/err")" "3 1"
sl_stop_pid "$POD_PID"
sl_stop_pid "$CRUN_PID"

tap_done
