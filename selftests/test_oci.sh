#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Containers that an OCI runtime starts, confined before their first instruction or not started
# at all: runc (Debian's) runs a busybox container from a rootfs built here, in the test's run
# netns, with `sluice oci-hook` as its createRuntime hook. With the test's daemon up, the
# container's first command (a connect to a denied test host) fails and the run's log has the
# denial; with the daemon down, runc refuses to start the container. `sluice attach --container`
# (by id, by unique prefix; an ambiguous prefix refused with both listed) and `--pid` find the
# cgroup runc's state.json names, and attach to a running container. The hook refuses bad input
# (malformed state on stdin, a bad config.json or annotation) with an error naming the field,
# and expands systemd's SLICE:PREFIX:NAME cgroupsPath. podman (on runc) the same, through a
# hooks.d directory (also with the daemon refusing the hook's request), and a running podman
# container attached by its name (Docker, which runs no hooks: test_docker.sh; containerd:
# test_containerd.sh). Last, sluice(8)'s attach
# walkthrough: a running container under a report-mode policy, its would-be denials seen live
# with sluice events -f, switched to enforce without a restart (nothing more reaches the
# unlisted host, the listed one still works), its policy replaced by one that allows the
# unlisted host and denies the listed one (the test host sees the change, the log names the new
# policy's SHA-256), the daemon SIGKILLed (still confined), taken over under the replaced
# policy, the denials made while no daemon lived found in the log (or declared lost), and the
# log verified. attach --unit of a running transient unit where systemd is PID 1.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
command -v runc >/dev/null || skip_all "runc not installed"
require_busybox_static
topo_up

CG2=$(cg2_mount)
PFX=sl-oci-$SL_ID
SL_OUT=$SL_TMP/out
SL_ERR=$SL_TMP/err
SL_RC=0
: >"$SL_OUT"
: >"$SL_ERR"

POLICY=$SL_TMP/policy.yaml
# the hook's policy directory (an annotation names only a policy in it): the test's own
export SL_POLICY_DIR=$SL_TMP
cat >"$POLICY" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF

# The rootfs every container shares: busybox and the links its commands need.
ROOTFS=$SL_TMP/rootfs
sl_busybox_rootfs "$ROOTFS" || bail_out "cannot make the rootfs"

# Containers this test made: runc's (deleted with their cgroups) and podman's.
RUNC_IDS=()
PODMAN_IDS=()
# shellcheck disable=SC2317 # (run from topo_down)
oci_cleanup() {
	local id d
	for id in "${RUNC_IDS[@]}"; do
		runc delete --force "$id" >/dev/null 2>&1
	done
	for id in "${PODMAN_IDS[@]}"; do
		podman rm --force --time 0 "$id" >/dev/null 2>&1
	done
	# runc removes a container's cgroup in every hierarchy, podman its libpod-ID; never ours
	for d in "$CG2"/../*/"$PFX"-*; do
		[[ -d $d ]] && rmdir "$d" 2>/dev/null
	done
	# a run a stopped daemon left pinned (the test fails then: see its end)
	rm -rf -- /sys/fs/bpf/sluice/"$PFX"-*
	# podman's parent (cgroupfs manager), if this test's podman made it
	if [[ $LIBPOD_PARENT_MADE -eq 1 ]]; then
		for d in "$CG2"/../*/libpod_parent; do
			[[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		done
	fi
	return 0
}
LIBPOD_PARENT_MADE=0
[[ -e $CG2/libpod_parent ]] || LIBPOD_PARENT_MADE=1
sl_on_exit oci_cleanup

# make_bundle NAME HOOK ARG…: $SL_TMP/NAME/config.json from `runc spec`, running ARG… in the run
# netns, in cgroup /$PFX-NAME, with the annotations in ANNOT (KEY=VALUE…); HOOK yes: sluice
# oci-hook (on the test daemon's socket) as its createRuntime hook.
ANNOT=()
make_bundle() {
	local name=$1 hook=$2 dir=$SL_TMP/$1
	shift 2
	mkdir -p "$dir"
	(cd "$dir" && rm -f config.json && runc spec) || return 1
	python3 - "$dir/config.json" "$hook" "$SLUICE" "${SLUICE_SOCKET:-}" "/$PFX-$name" \
		"/run/netns/$SL_NS_RUN" "$ROOTFS" "${#ANNOT[@]}" "${ANNOT[@]}" "$@" \
		<<'EOF' || return 1
import json, os, sys
path, hook, sluice, sock, cgpath, netns, rootfs, n = sys.argv[1:9]
n = int(n)
annot = dict(a.split("=", 1) for a in sys.argv[9:9 + n])
args = sys.argv[9 + n:]
c = json.load(open(path))
c["process"]["args"] = args
c["process"]["terminal"] = False
c["root"] = {"path": rootfs, "readonly": True}
c["linux"]["cgroupsPath"] = cgpath
for ns in c["linux"]["namespaces"]:
    if ns["type"] == "network":
        ns["path"] = netns
c["annotations"] = annot
if hook == "yes":
    c["hooks"] = {"createRuntime": [{"path": sluice,
                                      "args": ["sluice", "oci-hook", "--socket", sock,
                                               "--policy-dir", os.environ["SL_POLICY_DIR"]]}]}
json.dump(c, open(path, "w"), indent=1)
EOF
}

# run_container NAME: runc run it in the foreground; output in $SL_OUT/$SL_ERR, status SL_RC.
run_container() {
	RUNC_IDS+=("$PFX-$1")
	timeout "$SL_RUN_TIMEOUT" runc run --bundle "$SL_TMP/$1" "$PFX-$1" </dev/null \
		>"$SL_OUT" 2>"$SL_ERR"
	SL_RC=$?
	SL_RUN_ID=$PFX-$1
}

# start_container NAME: runc run -d; prints the init pid (called in $(…): the caller adds the
# container to RUNC_IDS).
start_container() {
	runc run -d --bundle "$SL_TMP/$1" "$PFX-$1" </dev/null >"$SL_OUT" 2>"$SL_ERR" || return 1
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["init_process_pid"])' \
		"/run/runc/$PFX-$1/state.json"
}

# hook_run_id NAME CONTAINER_ID: the run id the hook makes of annotation io.sluice.run-id NAME
hook_run_id() {
	local c=${2:0:12}
	printf '%s-%s\n' "$1" "${c//[^A-Za-z0-9_-]/_}"
}

state_cgroup() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cgroup_paths"][""])' \
		"/run/runc/$1/state.json"
}

# the value of KEY in a flat JSON line on stdin
json_member() {
	python3 -c 'import json,sys; print(json.loads(sys.stdin.read()).get(sys.argv[1], ""))' "$1"
}

assert_contains() {
	local name=$1 file=$2 want=$3
	if grep -qF -- "$want" "$file"; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected \"$want\" in:"$'\n'"$(cat "$file")"
	fi
}

# ---------------------------------------------------------------------------------------------
# The hook by itself: bad input refused with the field named (no daemon needed)

HB=$SL_TMP/hookb
mkdir -p "$HB"
sleep 600 &
HOST_PID=$!
sl_track_pid "$HOST_PID"
HOST_CG=$(sl_cgroup_new hook) || bail_out "cannot make a cgroup"
# (sl_cgroup_new's own cleanup registration is lost in the $(…) subshell)
sl_on_exit "sl_cgroup_remove '$HOST_CG'"
echo "$HOST_PID" >"$HOST_CG/cgroup.procs"
REL_CG=${HOST_CG#"$CG2"}

# hook_config CGROUPS_PATH [ANNOTATIONS_JSON]: the bundle's config.json for the cases below
hook_config() {
	local ann=${2:-'{}'}
	printf '{"ociVersion":"1.0.2","linux":{"cgroupsPath":%s},"annotations":%s}\n' \
		"$1" "$ann" >"$HB/config.json"
}
# hook_case NAME WANT_RC WANT_TEXT STATE: the hook (--dry-run) on STATE
HOOK_ARGS=(--policy-dir "$SL_TMP")
hook_case() {
	local name=$1 want_rc=$2 want=$3 state=$4 rc
	printf '%s' "$state" | "$SLUICE" oci-hook --dry-run "${HOOK_ARGS[@]}" >"$SL_OUT" 2>"$SL_ERR"
	rc=$?
	if [[ $rc -eq $want_rc ]] && grep -qF -- "$want" "$SL_ERR" "$SL_OUT"; then
		tap_ok "oci-hook: $name: exit $want_rc, \"$want\""
	else
		tap_fail "oci-hook: $name: exit $want_rc, \"$want\"" \
			"got exit $rc: $(cat "$SL_OUT" "$SL_ERR")"
	fi
}
state() {
	printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":%s,"bundle":"%s"%s}' \
		"$1" "$2" "$3" "${4:-}"
}
POL_ANN='{"io.sluice.policy":"'$POLICY'"}'
# with_policy PATH: the state's annotations member naming PATH as the policy
with_policy() { printf ',"annotations":{"io.sluice.policy":"%s"}' "$1"; }

hook_config "\"$REL_CG\"" "$POL_ANN"
hook_case "the request" 0 \
	"{\"op\":\"attach\",\"cgroup\":\"$HOST_CG\",\"policy\":\"$POLICY\",\"run_id\":\"c-1\"" \
	"$(state c-1 "$HOST_PID" "$HB")"
hook_case "source oci-hook" 0 '"source":"oci-hook"' "$(state c-1 "$HOST_PID" "$HB")"
R7=',"annotations":{"io.sluice.policy":"'"$POLICY"'","io.sluice.run-id":"r-7",
	"io.sluice.mode":"enforce","io.sluice.task":"t 1"}'
hook_case "run id (with the container's id), mode and task from annotations" 0 \
	'"run_id":"r-7-c-1","task":"t 1","mode":"enforce"' "$(state c-1 "$HOST_PID" "$HB" "$R7")"
# the attack: a container names the run of another one, which then could not start (the daemon
# refuses a second run of one id) while the first one's traffic is logged under its name
hook_case "a container cannot take another's run id: its own id is part of it" 0 \
	'"run_id":"r-7-0123456789ab"' \
	"$(state 0123456789abcdef0123 "$HOST_PID" "$HB" "$R7")"
hook_case "a container id's characters a run id cannot hold become _" 0 \
	'"run_id":"r-7-c_1_x"' "$(state c.1.x "$HOST_PID" "$HB" "$R7")"
HOOK_ARGS=(--policy-dir "$SL_TMP" --trust-run-id)
hook_case "--trust-run-id: the annotation's run id as it is" 0 '"run_id":"r-7",' \
	"$(state c-1 "$HOST_PID" "$HB" "$R7")"
HOOK_ARGS=(--policy-dir "$SL_TMP")
hook_case "a run id annotation too long to hold the container's id" 2 \
	"and the container's id make more than 72 characters" \
	"$(state c-1 "$HOST_PID" "$HB" ',"annotations":{"io.sluice.policy":"'"$POLICY"'",
	"io.sluice.run-id":"'"$(printf 'x%.0s' $(seq 60))"'"}')"
hook_case "an annotation cannot turn enforcement off (report)" 2 \
	'annotation io.sluice.mode: "report" would let whoever creates the container' \
	"$(state c-1 "$HOST_PID" "$HB" ',"annotations":{"io.sluice.policy":"'"$POLICY"'",
	"io.sluice.mode":"report"}')"
HOOK_ARGS=()
hook_case "by default, an annotation names only a policy in /etc/sluice/policies" 2 \
	"policy directory /etc/sluice/policies" \
	"$(state c-1 "$HOST_PID" "$HB" "$(with_policy "$POLICY")")"
HOOK_ARGS=(--policy-dir "$SL_TMP")
hook_case "empty stdin" 2 "state on stdin: byte 0: expected a value" ""
hook_case "truncated state" 2 "state on stdin: byte 29: unterminated string" \
	'{"ociVersion":"1.0.2","id":"c'
hook_case "trailing bytes" 2 "state on stdin: byte 3: bytes after the value" '{} {}'
hook_case "not an object" 2 "state on stdin: expected a JSON object" '["x"]'
hook_case "duplicate key" 2 "the same key twice" \
	'{"ociVersion":"1","id":"a","id":"b","pid":1,"bundle":"/"}'
hook_case "invalid UTF-8" 2 "invalid UTF-8" $'{"ociVersion":"\xff"}'
hook_case "no ociVersion" 2 '"ociVersion" is missing' '{"id":"a","pid":1,"bundle":"/"}'
hook_case "ociVersion not a string" 2 '"ociVersion": expected a string of 1-64 bytes' \
	'{"ociVersion":1,"id":"a","pid":1,"bundle":"/"}'
hook_case "id too long" 2 '"id": expected a string of 1-253 bytes' \
	"$(state "$(printf 'a%.0s' $(seq 300))" "$HOST_PID" "$HB")"
hook_case "id with a slash" 2 '"id": expected [A-Za-z0-9]' "$(state ../x "$HOST_PID" "$HB")"
hook_case "no pid" 2 '"pid": missing' '{"ociVersion":"1","id":"a","bundle":"/"}'
hook_case "pid a string" 2 '"pid": expected an integer' "$(state a '"12"' "$HB")"
hook_case "pid negative" 2 '"pid": expected an integer' "$(state a -5 "$HB")"
hook_case "pid too big" 2 '"pid": expected an integer' "$(state a 99999999999 "$HB")"
hook_case "relative bundle" 2 '"bundle": expected an absolute path' \
	"$(state a "$HOST_PID" rel/dir)"
hook_case "bundle without config.json" 2 "$SL_TMP/none/config.json: No such file" \
	"$(state a "$HOST_PID" "$SL_TMP/none")"
hook_case "oversized stdin" 2 "state on stdin: longer than 1 MiB" \
	"$(state a 1 /x ',"pad":"'"$(head -c 1100000 /dev/zero | tr '\0' a)"'"')"
hook_case "no process" 3 "process 999999999: no such process" "$(state a 999999999 "$HB")"

hook_config "\"$REL_CG\""
hook_case "no policy annotation" 2 "has no io.sluice.policy annotation" \
	"$(state c-1 "$HOST_PID" "$HB")"
hook_case "policy annotation not a string" 2 "annotation io.sluice.policy: expected a string" \
	"$(state c-1 "$HOST_PID" "$HB" ',"annotations":{"io.sluice.policy":7}')"
hook_case "relative policy" 2 "io.sluice.policy: expected an absolute path" \
	"$(state c-1 "$HOST_PID" "$HB" ',"annotations":{"io.sluice.policy":"p.yaml"}')"
hook_config "\"$REL_CG\"" "$POL_ANN"
hook_case "policy from config.json's annotations" 0 "\"policy\":\"$POLICY\"" \
	"$(state c-1 "$HOST_PID" "$HB")"
hook_config "\"$REL_CG\""
# --policy-dir: the annotation may only name a policy inside it (symlinks resolved)
mkdir -p "$SL_TMP/policies"
cp "$POLICY" "$SL_TMP/policies/ok.yaml"
ln -s "$POLICY" "$SL_TMP/policies/link.yaml"
HOOK_ARGS=(--policy-dir "$SL_TMP/policies")
hook_case "--policy-dir: a policy inside" 0 "\"policy\":\"$SL_TMP/policies/ok.yaml\"" \
	"$(state c-1 "$HOST_PID" "$HB" "$(with_policy "$SL_TMP/policies/ok.yaml")")"
hook_case "--policy-dir: a policy outside" 2 "$POLICY is not inside the policy directory" \
	"$(state c-1 "$HOST_PID" "$HB" "$(with_policy "$POLICY")")"
hook_case "--policy-dir: a symlink inside to a file outside" 2 "is not inside the policy directory" \
	"$(state c-1 "$HOST_PID" "$HB" "$(with_policy "$SL_TMP/policies/link.yaml")")"
hook_case "--policy-dir: .. out of it" 2 "is not inside the policy directory" \
	"$(state c-1 "$HOST_PID" "$HB" "$(with_policy "$SL_TMP/policies/../policy.yaml")")"
HOOK_ARGS=(--policy "$POLICY")
hook_case "--policy: the default without an annotation" 0 "\"policy\":\"$POLICY\"" \
	"$(state c-1 "$HOST_PID" "$HB")"
# --policy-fixed binds (sluice oci-runtime's --policy): an annotation naming a looser policy of
# the policy directory is refused; the same file, under another name, is that policy
ln -s "$POLICY" "$SL_TMP/policies/same.yaml"
HOOK_ARGS=(--policy-fixed "$POLICY" --policy-dir "$SL_TMP/policies")
hook_case "--policy-fixed: the policy without an annotation" 0 "\"policy\":\"$POLICY\"" \
	"$(state c-1 "$HOST_PID" "$HB")"
hook_case "--policy-fixed: an annotation naming that file (another name) is that policy" 0 \
	"\"policy\":\"$POLICY\"" \
	"$(state c-1 "$HOST_PID" "$HB" "$(with_policy "$SL_TMP/policies/same.yaml")")"
hook_case "--policy-fixed: an annotation naming another policy in the directory is refused" 2 \
	"io.sluice.policy: \"$SL_TMP/policies/ok.yaml\", but this hook runs every container under \
$POLICY" \
	"$(state c-1 "$HOST_PID" "$HB" "$(with_policy "$SL_TMP/policies/ok.yaml")")"
HOOK_ARGS=(--policy-fixed "$POLICY" --policy "$POLICY")
hook_case "--policy-fixed with --policy is refused" 2 "--policy and --policy-fixed: give one" \
	"$(state c-1 "$HOST_PID" "$HB")"
HOOK_ARGS=(--mode enforce --policy-dir "$SL_TMP")
hook_case "--mode enforce: the request's mode" 0 '"mode":"enforce"' \
	"$(state c-1 "$HOST_PID" "$HB" "$(with_policy "$POLICY")")"
hook_case "--mode enforce: an annotation asking for report is refused" 2 \
	'annotation io.sluice.mode: "report", but this hook runs every container in enforce mode' \
	"$(state c-1 "$HOST_PID" "$HB" \
		',"annotations":{"io.sluice.mode":"report","io.sluice.policy":"/p"}')"
HOOK_ARGS=(--mode report --policy-dir "$SL_TMP")
hook_case "--mode report: an annotation may then say report" 0 '"mode":"report"' \
	"$(state c-1 "$HOST_PID" "$HB" ',"annotations":{"io.sluice.policy":"'"$POLICY"'",
	"io.sluice.mode":"report"}')"
HOOK_ARGS=(--policy-dir "$SL_TMP")
hook_case "bad mode" 2 "annotation io.sluice.mode: expected report or enforce" \
	"$(state c-1 "$HOST_PID" "$HB" \
		',"annotations":{"io.sluice.mode":"off","io.sluice.policy":"/p"}')"
hook_case "bad run id" 2 "annotation io.sluice.run-id: expected 1-72 characters" \
	"$(state c-1 "$HOST_PID" "$HB" ',"annotations":{"io.sluice.run-id":"-x"}')"
hook_case "id not a valid run id" 2 "is not a valid run id" \
	"$(state "$(printf 'b%.0s' $(seq 73))" "$HOST_PID" "$HB")"
hook_case "task too long" 2 "task: longer than 256 bytes" \
	"$(state c-1 "$HOST_PID" "$HB" ',"annotations":{"io.sluice.policy":"'"$POLICY"'",
	"io.sluice.task":"'"$(printf 't%.0s' $(seq 300))"'"}')"

hook_config '"a:b"' "$POL_ANN"
hook_case "cgroupsPath neither form" 2 "linux.cgroupsPath: \"a:b\" is neither" \
	"$(state c-1 "$HOST_PID" "$HB")"
hook_config '"/x/../y"' "$POL_ANN"
hook_case "cgroupsPath with .." 2 "is not a plain cgroup path" "$(state c-1 "$HOST_PID" "$HB")"
hook_config '"bad:pre:c9"' "$POL_ANN"
hook_case "cgroupsPath bad slice" 2 "\"bad\" is not a valid slice name" \
	"$(state c-1 "$HOST_PID" "$HB")"
hook_config '["/x"]' "$POL_ANN"
hook_case "cgroupsPath not a string" 2 "linux.cgroupsPath: expected a string" \
	"$(state c-1 "$HOST_PID" "$HB")"
hook_config '"/elsewhere"' "$POL_ANN"
hook_case "cgroupsPath not the process's" 3 "but the container's process $HOST_PID is in" \
	"$(state c-1 "$HOST_PID" "$HB")"
# A container's creator writes cgroupsPath: runc 1.1 puts the init into a cgroup that holds
# processes already (with a warning), so it could name a host service's or an unconfined
# container's cgroup, or the parent of its own, and the run (and, in enforce mode, the
# preexisting scan's socket kills) would land on processes that are not the container's.
sleep 600 &
VICTIM_PID=$!
sl_track_pid "$VICTIM_PID"
echo "$VICTIM_PID" >"$HOST_CG/cgroup.procs"
hook_config "\"$REL_CG\"" "$POL_ANN"
hook_case "cgroupsPath of a cgroup with other processes refused" 3 \
	"holds process $VICTIM_PID, which is not the container's" \
	"$(state c-1 "$HOST_PID" "$HB")"
mkdir "$HOST_CG/sub"
echo "$VICTIM_PID" >"$HOST_CG/sub/cgroup.procs"
mkdir "$HOST_CG/sub2"
echo "$HOST_PID" >"$HOST_CG/sub2/cgroup.procs"
hook_case "cgroupsPath of the parent of the container's and another's cgroup refused" 3 \
	"holds process $VICTIM_PID, which is not the container's" \
	"$(state c-1 "$HOST_PID" "$HB")"
sl_stop_pid "$VICTIM_PID"
echo "$HOST_PID" >"$HOST_CG/cgroup.procs"
rmdir "$HOST_CG/sub" "$HOST_CG/sub2"
printf '{"linux":{"cgroupsPath":"/x"},}' >"$HB/config.json"
hook_case "malformed config.json" 2 "$HB/config.json: byte 30: expected a string" \
	"$(state c-1 "$HOST_PID" "$HB")"

# systemd's SLICE:PREFIX:NAME: slocia$ID-b.slice is slocia$ID.slice/slocia$ID-b.slice (the
# test's pid in the top slice's name: no other test's; one a killed test of the same pid left
# goes first)
SD_TOP=$CG2/slocia$SL_ID.slice
sl_cgroup_remove "$SD_TOP"
SD_CG=$SD_TOP/slocia$SL_ID-b.slice/sl-c9.scope
mkdir -p "$SD_CG" || bail_out "cannot make $SD_CG"
sl_on_exit "sl_cgroup_remove '$SD_TOP'"
sleep 600 &
SD_PID=$!
sl_track_pid "$SD_PID"
echo "$SD_PID" >"$SD_CG/cgroup.procs"
hook_config "\"slocia$SL_ID-b.slice:sl:c9\"" "$POL_ANN"
hook_case "systemd cgroupsPath expanded" 0 "\"cgroup\":\"$SD_CG\"" \
	"$(state c-9 "$SD_PID" "$HB")"
sl_stop_pid "$SD_PID"
# reaped before the cgroup goes: a zombie keeps it busy
sl_stop_pid "$HOST_PID"

# ---------------------------------------------------------------------------------------------
# runc: confined from the first instruction

# shellcheck disable=SC2119 # (no arguments: the daemon's defaults)
sl_daemon_start || bail_out "the test's daemon did not start: $(cat "$SL_DAEMON_DIR/err")"
LOGS=$SL_DAEMON_DIR/logs

ANNOT=("io.sluice.policy=$POLICY" "io.sluice.run-id=$PFX-first" "io.sluice.task=oci test")
make_bundle first yes sh -c 'nc -w 3 198.51.100.20 80 </dev/null; echo "denied-rc=$?"
	echo hi | nc -w 3 198.51.100.10 80; echo "allowed-rc=$?"' ||
	bail_out "cannot make the bundle"
sink_mark
run_container first
T="runc: the container ran; its first connect (denied host) failed, the allowed one worked"
if [[ $SL_RC -eq 0 ]] && grep -q '^denied-rc=1$' "$SL_OUT" &&
	grep -q '^allowed-rc=0$' "$SL_OUT"; then
	tap_ok "$T"
else
	tap_fail "$T" \
		"runc exit $SL_RC: $(cat "$SL_OUT" "$SL_ERR"; tail -n 20 "$SL_DAEMON_DIR/err")"
fi
assert_contains "runc: the denied connect failed with EPERM" "$SL_ERR" "Operation not permitted"
assert_sink_none "runc: nothing reached the denied host" "tcp-accept 198.51.100.20"
assert_sink_saw "runc: the allowed host received the container's connection" "tcp 198.51.100.10 80"
LOG=$LOGS/$(hook_run_id "$PFX-first" "$PFX-first").jsonl
assert_log "runc: the run's log says the hook attached it" "$LOG" 1 type=run_start \
	attached=true source=oci-hook "task=oci test"
assert_log "runc: the run's log has the denial" "$LOG" 1 type=decision dst=198.51.100.20 \
	port=80 decision=deny enforced=true rule=default
assert_log "runc: the run's log has the allowed connection" "$LOG" +1 type=decision \
	dst=198.51.100.10 port=80 decision=allow rule=test-host
# the container is gone with its cgroup: the daemon ends the run
wait_until 10000 bash -c "! '$SLUICE' status 2>/dev/null | grep -q '$PFX-first'"
tap_check "runc: the run ended with the container; its log verifies" \
	"$SLUICE" verify "$LOG" --key "$SLUICE_PUB"
# the same container id run again (runc run deleted the first: an id reused, as docker start
# reuses one): a run of its own, the id's next free one, confined as the first; the first
# run's log is left as it was
FIRST_SHA=$(sha256sum <"$LOG")
SL_RUNS+=("$(basename "$LOG" .jsonl)" "$(basename "$LOG" .jsonl)-2")
sink_mark
run_container first
LOG2=${LOG%.jsonl}-2.jsonl
tap_is "runc: a container id run again: it runs, confined (its denied connect: EPERM)" \
	"$SL_RC $(grep -c '^denied-rc=1$' "$SL_OUT") $(grep -c 'Operation not permitted' "$SL_ERR")" \
	"0 1 1" || tap_diag "$(cat "$SL_OUT" "$SL_ERR"; tail -n 5 "$SL_DAEMON_DIR/err")"
assert_log "runc: … as run ID-2, the denial in its own log" "$LOG2" 1 type=decision \
	dst=198.51.100.20 port=80 decision=deny enforced=true rule=default
wait_until 10000 bash -c "! '$SLUICE' status 2>/dev/null | grep -q '$PFX-first'"
tap_is "runc: … its log verifies, and the first run's is unchanged" \
	"$("$SLUICE" verify "$LOG2" --key "$SLUICE_PUB" >/dev/null 2>&1 && echo verified) $(
		[[ $(sha256sum <"$LOG") == "$FIRST_SHA" ]] && echo unchanged)" "verified unchanged"

# ---------------------------------------------------------------------------------------------
# sluice attach --container / --pid against runc's own state

ANNOT=()
make_bundle a1 no sleep 600 || bail_out "cannot make a bundle"
make_bundle a2 no sleep 600 || bail_out "cannot make a bundle"
RUNC_IDS+=("$PFX-a1" "$PFX-a2")
A1_PID=$(start_container a1) || bail_out "runc run -d a1: $(cat "$SL_ERR")"
A2_PID=$(start_container a2) || bail_out "runc run -d a2: $(cat "$SL_ERR")"
A1_CG=$(state_cgroup "$PFX-a1")
attach_dry() {
	"$SLUICE" attach "$@" --policy "$POLICY" --run-id "$PFX-x" --dry-run >"$SL_OUT" 2>"$SL_ERR"
	SL_RC=$?
}
attach_dry --container "$PFX-a1"
tap_is "attach --container ID: the cgroup runc's state.json names" \
	"$SL_RC $(json_member cgroup <"$SL_OUT")" "0 $A1_CG"
tap_is "attach --container ID: the container's netns, its source" \
	"$(json_member netns <"$SL_OUT") $(json_member source <"$SL_OUT")" \
	"/proc/$A1_PID/ns/net container:$PFX-a1"
attach_dry --pid "$A1_PID"
tap_is "attach --pid: the same cgroup" "$SL_RC $(json_member cgroup <"$SL_OUT")" "0 $A1_CG"
attach_dry --container "$PFX-a"
tap_is "attach --container PREFIX of two: refused (exit 3)" "$SL_RC" 3
assert_contains "attach --container PREFIX of two: both listed" "$SL_ERR" \
	"\"$PFX-a\" is ambiguous: it matches"
if grep -qF "$PFX-a1 (" "$SL_ERR" && grep -qF "$PFX-a2 (" "$SL_ERR"; then
	tap_ok "attach --container PREFIX of two: names $PFX-a1 and $PFX-a2"
else
	tap_fail "attach --container PREFIX of two: names $PFX-a1 and $PFX-a2" "$(cat "$SL_ERR")"
fi
runc kill "$PFX-a2" KILL >/dev/null 2>&1
wait_until 5000 bash -c "! kill -0 $A2_PID 2>/dev/null"
attach_dry --container "$PFX-a"
tap_is "attach --container PREFIX: unique once a2 is stopped" \
	"$SL_RC $(json_member cgroup <"$SL_OUT")" "0 $A1_CG"
# runc keeps a stopped container's state until `runc delete`: named exactly, it is refused with
# its reason, never answered with a running container whose id it prefixes
make_bundle a2b no sleep 600 || bail_out "cannot make a bundle"
RUNC_IDS+=("$PFX-a2b")
start_container a2b >/dev/null || bail_out "runc run -d a2b: $(cat "$SL_ERR")"
attach_dry --container "$PFX-a2"
want="container $PFX-a2 (/run/runc/$PFX-a2/state.json): its init process is gone: not running"
tap_is "attach --container ID of a stopped container, a running one's id its prefix: exit 3" \
	"$SL_RC $(grep -cF "$want" "$SL_ERR")" "3 1"
runc kill "$PFX-a2b" KILL >/dev/null 2>&1
attach_dry --container "$PFX-nothere"
want="no running container \"$PFX-nothere\" in the state of runc (/run/runc), Docker,"
want+=" containerd, crun or podman (root's only: rootless containers are not searched)"
tap_is "attach --container: no such container: exit 3, saying where it looked" \
	"$SL_RC $(grep -cF "$want" "$SL_ERR")" "3 1"
attach_dry --container "../etc"
tap_is "attach --container: a name with a slash: exit 2" "$SL_RC" 2
# crun keeps a stopped container's status file until `crun delete`; its pid may then be an
# unrelated process's. runc's state is checked against the init's start time; crun's
# (process-start-time) must be too, or --container attaches to whatever got the pid.
CRUN_STALE=/run/crun/$PFX-crs
if [[ -d /run/crun && ! -e $CRUN_STALE ]]; then
	sleep 600 &
	UNREL_PID=$!
	sl_track_pid "$UNREL_PID"
	UNREL_CG=$(sl_cgroup_new unrel) || bail_out "cannot make a cgroup"
	sl_on_exit "sl_cgroup_remove '$UNREL_CG'"
	echo "$UNREL_PID" >"$UNREL_CG/cgroup.procs"
	mkdir -m 0700 "$CRUN_STALE"
	sl_on_exit "rm -rf '$CRUN_STALE'"
	printf '{"pid":%s,"process-start-time":1,"cgroup-path":"%s","rootfs":"/","systemd-cgroup":false,"created":"2026-01-01T00:00:00Z"}\n' \
		"$UNREL_PID" "${UNREL_CG#"$CG2"}" >"$CRUN_STALE/status"
	attach_dry --container "$PFX-crs"
	tap_is "attach --container: a stopped crun container whose pid was reused: exit 3" \
		"$SL_RC" 3
	sl_stop_pid "$UNREL_PID"
	rm -rf "$CRUN_STALE"
else
	tap_skip "attach --container: a stopped crun container whose pid was reused" \
		"no /run/crun, or $CRUN_STALE exists"
fi

# attached for real, the running container's next connect is judged
"$SLUICE" attach --container "$PFX-a1" --policy "$POLICY" --run-id "$PFX-a1" >"$SL_OUT" \
	2>"$SL_ERR"
SL_RC=$?
tap_is "attach --container: the daemon attached (exit 0)" "$SL_RC" 0
assert_contains "attach --container: says where it attached" "$SL_OUT" \
	"attached run $PFX-a1 to $A1_CG"
runc exec "$PFX-a1" nc -w 3 198.51.100.20 80 </dev/null >"$SL_OUT" 2>"$SL_ERR"
SL_RC=$?
tap_is "attach --container: a connect to the denied host from the container fails" \
	"$SL_RC $(grep -c 'Operation not permitted' "$SL_ERR")" "1 1"
assert_log "attach --container: the denial is in its log" "$LOGS/$PFX-a1.jsonl" 1 \
	type=decision dst=198.51.100.20 decision=deny
"$SLUICE" attach --pid "$A1_PID" --policy "$POLICY" --run-id "$PFX-again" >"$SL_OUT" 2>"$SL_ERR"
SL_RC=$?
tap_is "attach --pid to a cgroup already attached: the daemon refuses (exit 1)" "$SL_RC" 1
assert_contains "attach --pid twice: the daemon's reason" "$SL_ERR" "overlaps run $PFX-a1"
tap_check "detach the run of the running container" "$SLUICE" detach --run-id "$PFX-a1"
runc kill "$PFX-a1" KILL >/dev/null 2>&1

attach_dry --unit "$PFX-none.service"
if [[ -d /run/systemd/system ]]; then
	want="unit $PFX-none.service has no cgroup (not loaded, or not running)"
else
	want="unit $PFX-none.service: systemd is not running here (no /run/systemd/system; PID 1 is"
fi
tap_is "attach --unit: a unit without a cgroup (or no systemd) is refused (exit 3), saying why" \
	"$SL_RC $(grep -cF "$want" "$SL_ERR")" "3 1"
# A unit that runs: a transient service in the run netns, attached by its name. Its cgroup is
# the one systemd reports; a connect from it to an unlisted host is denied and logged.
if [[ ! -d /run/systemd/system ]]; then
	tap_skip "attach --unit: a running transient unit attached" \
		"PID 1 is not systemd ($(cat /proc/1/comm)): no /run/systemd/system, no unit to attach"
else
	UNIT=$PFX-unit.service
	sl_on_exit "systemctl stop '$UNIT' >/dev/null 2>&1"
	systemd-run --quiet --unit "$UNIT" nsenter "--net=/run/netns/$SL_NS_RUN" sleep 600 ||
		bail_out "systemd-run $UNIT failed"
	UNIT_CG=$CG2$(systemctl show -P ControlGroup "$UNIT")
	"$SLUICE" attach --unit "$UNIT" --policy "$POLICY" --run-id "$PFX-unit" >"$SL_OUT" 2>"$SL_ERR"
	SL_RC=$?
	sl_in_cgroup "$UNIT_CG" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp 198.51.100.20 80 \
		>"$SL_TMP/unit-probe"
	"$SLUICE" detach --run-id "$PFX-unit" >/dev/null 2>&1
	systemctl stop "$UNIT" >/dev/null 2>&1
	tap_is "attach --unit: a running transient unit attached, its connect denied" \
		"$SL_RC $(log_run_start_field "$LOGS/$PFX-unit.jsonl" cgroup) $(cut -d' ' -f1-2 \
			"$SL_TMP/unit-probe") $(log_count "$LOGS/$PFX-unit.jsonl" type=decision \
			dst=198.51.100.20 decision=deny)" "0 $UNIT_CG err EPERM 1"
fi

# ---------------------------------------------------------------------------------------------
# No hook: the parent cgroup attached before any container exists in it

PARENT=$(sl_cgroup_new parent) || bail_out "cannot make a cgroup"
sl_on_exit "sl_cgroup_remove '$PARENT'"
"$SLUICE" attach --cgroup "$PARENT" --netns "/run/netns/$SL_NS_RUN" --policy "$POLICY" \
	--run-id "$PFX-parent" >"$SL_OUT" 2>"$SL_ERR"
SL_RC=$?
tap_is "parent cgroup: attached before any child exists" "$SL_RC" 0
ANNOT=()
make_bundle child no sh -c 'nc -w 3 198.51.100.20 80 </dev/null; echo "denied-rc=$?"' ||
	bail_out "cannot make the bundle"
# the child's cgroup below the attached parent (runc makes it, as docker --cgroup-parent does)
python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
c["linux"]["cgroupsPath"] = sys.argv[2]
json.dump(c, open(sys.argv[1], "w"))' "$SL_TMP/child/config.json" "${PARENT#"$CG2"}/$PFX-child"
sink_mark
run_container child
tap_is "parent cgroup: a container started below it, no hook: its first connect is denied" \
	"$SL_RC $(grep -c '^denied-rc=1$' "$SL_OUT")" "0 1"
assert_log "parent cgroup: the denial is in the parent's run log" "$LOGS/$PFX-parent.jsonl" 1 \
	type=decision dst=198.51.100.20 decision=deny enforced=true
assert_sink_none "parent cgroup: nothing reached the denied host" "tcp-accept 198.51.100.20"
"$SLUICE" detach --run-id "$PFX-parent" >/dev/null 2>&1

# ---------------------------------------------------------------------------------------------
# sluice(8)'s walkthrough, end to end: a runc container under a report-only policy (the
# policy's word, from the policy directory), its denials watched live with sluice events -f,
# switched to enforce while it runs, then the daemon killed: the container stays confined.

WALK_POLICY=$SL_TMP/walk-report.yaml
sed 's/^default: deny$/mode: report\ndefault: deny/' "$POLICY" >"$WALK_POLICY"
ANNOT=("io.sluice.policy=$WALK_POLICY" "io.sluice.run-id=$PFX-walk")
# every 0.2 s, one connect to the listed host and one to an unlisted one
make_bundle walk yes sh -c 'while :; do echo a | nc -w 1 198.51.100.10 80
	echo b | nc -w 1 203.0.113.7 80; sleep 0.2; done' || bail_out "cannot make the bundle"
RUNC_IDS+=("$PFX-walk")
WALK_RUN=$(hook_run_id "$PFX-walk" "$PFX-walk")
sink_mark
WALK_PID=$(start_container walk) || bail_out "runc run -d walk: $(cat "$SL_ERR")"
WALK_LOG=$LOGS/$WALK_RUN.jsonl
# (made here: the events' own redirection opens it in the child, which the reads below may
# come before)
: >"$SL_TMP/walk-events"
"$SLUICE" events -f --run-id "$WALK_RUN" --decision deny -o compact >"$SL_TMP/walk-events" \
	2>"$SL_TMP/walk-events.err" &
EVENTS_PID=$!
sl_track_pid "$EVENTS_PID"
wait_until 10000 grep -q '203.0.113.7' "$SL_TMP/walk-events"
tap_check "walkthrough: report mode: sluice events -f shows the would-deny live" \
	grep -q '203.0.113.7' "$SL_TMP/walk-events"
[[ -s $SL_TMP/walk-events ]] || tap_diag "$(cat "$SL_TMP/walk-events.err")"
wait_until 10000 bash -c "[[ \$(grep -c 'tcp 203.0.113.7 80' '$SL_INET_LOG') -gt 0 ]]"
tap_cmp "walkthrough: report mode: the unlisted host is reached" \
	"$(sink_count 'tcp 203.0.113.7 80')" -gt 0
# (not $SL_ERR: the container's stderr, runc run -d's, goes on writing there)
"$SLUICE" set-mode --run-id "$WALK_RUN" enforce >"$SL_TMP/switch.out" 2>"$SL_TMP/switch.err"
tap_is "walkthrough: sluice set-mode enforce, the container running" "$?" 0
[[ -s $SL_TMP/switch.err ]] && tap_diag "$(cat "$SL_TMP/switch.err")"
sleep 1 # a connect in flight at the switch may still land: counted from here on
sink_mark
sleep $((2 * SL_SLOW))
tap_is "walkthrough: enforce: nothing more reaches the unlisted host" \
	"$(sink_count 'tcp 203.0.113.7 80')" 0
tap_cmp "walkthrough: enforce: the listed host is still reached" \
	"$(sink_count 'tcp 198.51.100.10 80')" -gt 0
tap_check "walkthrough: the container was never restarted" kill -0 "$WALK_PID"

# The policy swapped under the running loop: the unlisted host allowed, the listed one denied.
WALK_NEW=$SL_TMP/walk-v2.yaml
printf '%s\n' 'default: deny' 'rules:' '  - name: other-host' '    cidrs: ["203.0.113.7/32"]' \
	'    ports: [80]' '    protocols: [tcp]' >"$WALK_NEW"
WALK_NEW_SHA=$(sha256sum "$WALK_NEW" | cut -c1-64)
"$SLUICE" replace-policy --run-id "$WALK_RUN" "$WALK_NEW" >"$SL_TMP/switch.out" \
	2>"$SL_TMP/switch.err"
tap_is "walkthrough: sluice replace-policy, the container running" "$?" 0
[[ -s $SL_TMP/switch.err ]] && tap_diag "$(cat "$SL_TMP/switch.err")"
sleep 1 # a connect in flight at the switch may still land
sink_mark
sleep $((2 * SL_SLOW))
tap_cmp "walkthrough: the new policy: the host it allows is reached" \
	"$(sink_count 'tcp 203.0.113.7 80')" -gt 0
tap_is "walkthrough: the new policy: nothing more reaches the host it no longer lists" \
	"$(sink_count 'tcp 198.51.100.10 80')" 0
assert_log "walkthrough: the log records the new policy, by its SHA-256" "$WALK_LOG" 1 \
	type=policy_change "policy_sha256=$WALK_NEW_SHA" mode=enforce
tap_check "walkthrough: the container was still never restarted" kill -0 "$WALK_PID"

sl_daemon_kill KILL
WALK_DOWN_US=$(date +%s%6N)
sink_mark
sleep $((2 * SL_SLOW))
tap_is "walkthrough: daemon SIGKILLed: still nothing reaches the denied host" \
	"$(sink_count 'tcp 198.51.100.10 80')" 0
tap_cmp "walkthrough: daemon SIGKILLed: the allowed host is still reached" \
	"$(sink_count 'tcp 203.0.113.7 80')" -gt 0
WALK_UP_US=$(date +%s%6N)
sl_daemon_start || bail_out "the daemon did not restart: $(tail "$SL_DAEMON_DIR/err")"
tap_check "walkthrough: the new daemon took the run over, in enforce mode" \
	bash -c "'$SLUICE' status | grep -q '^$WALK_RUN  *enforce'"
tap_check "walkthrough: … under the replaced policy" \
	bash -c "'$SLUICE' status --json | grep '\"run_id\":\"$WALK_RUN\"' | grep -q '$WALK_NEW_SHA'"
sink_mark
sleep $((2 * SL_SLOW))
tap_is "walkthrough: after the take-over: the denied host still gets nothing" \
	"$(sink_count 'tcp 198.51.100.10 80')" 0
tap_cmp "walkthrough: after the take-over: the allowed host is still reached" \
	"$(sink_count 'tcp 203.0.113.7 80')" -gt 0
runc kill "$PFX-walk" KILL >/dev/null 2>&1
runc delete --force "$PFX-walk" >/dev/null 2>&1
wait_until 10000 grep -q '"type":"run_end"' "$WALK_LOG"
# The denials made while no daemon lived waited in the run's ring buffer: the new writer logs
# them, with their own times, or declares what it lost.
n=$(log_count_between "$WALK_LOG" "$WALK_DOWN_US" "$WALK_UP_US" type=decision \
	dst=198.51.100.10 decision=deny enforced=true)
name="walkthrough: the denials made while the daemon was dead are logged ($n) or declared lost"
if [[ $n -gt 0 || $(log_count "$WALK_LOG" type=loss) -gt 0 ]]; then
	tap_ok "$name"
else
	tap_fail "$name" \
		"no deny line for 198.51.100.10 with ts in ($WALK_DOWN_US, $WALK_UP_US), no loss line"
	sluice_diag "$WALK_LOG"
fi
out=$("$SLUICE" verify "$WALK_LOG" --key "$SLUICE_PUB" 2>&1)
rc=$?
tap_is "walkthrough: the log verifies: intact (exit 0), the restart declared" \
	"$rc $(grep -c 'writer restarted 1 time' <<<"$out")" "0 1"
[[ $rc -eq 0 && $out == *"OK: intact"* ]] || tap_diag "$out"
assert_log "walkthrough: the log records the switch to enforce" "$WALK_LOG" 1 \
	type=policy_change mode=enforce prev_mode=report
assert_log "walkthrough: report-mode denials are logged as not enforced" "$WALK_LOG" +1 \
	type=decision dst=203.0.113.7 decision=deny enforced=false
assert_log "walkthrough: enforced denials after the switch" "$WALK_LOG" +1 \
	type=decision dst=203.0.113.7 decision=deny enforced=true
sl_stop_pid "$EVENTS_PID"

# ---------------------------------------------------------------------------------------------
# runc with the daemon down: the container never starts

sl_daemon_kill TERM
ANNOT=("io.sluice.policy=$POLICY")
make_bundle down yes sh -c 'echo started-marker; echo hi | nc -w 3 198.51.100.10 80' ||
	bail_out "cannot make the bundle"
sink_mark
run_container down
tap_is "daemon down: runc run fails" "$([[ $SL_RC -ne 0 ]] && echo failed)" failed
assert_contains "daemon down: the hook says why" "$SL_ERR" "no sluice daemon at"
if grep -q started-marker "$SL_OUT" "$SL_ERR"; then
	tap_fail "daemon down: the container's process never ran" "$(cat "$SL_OUT")"
else
	tap_ok "daemon down: the container's process never ran"
fi
assert_sink_none "daemon down: nothing reached the test host" "tcp-accept 198.51.100.10"
if runc state "$PFX-down" >/dev/null 2>&1 || [[ -e $CG2/$PFX-down ]]; then
	tap_fail "daemon down: no container or cgroup left" "$(runc list; ls "$CG2")"
else
	tap_ok "daemon down: no container or cgroup left"
fi

# ---------------------------------------------------------------------------------------------
# podman (on runc), the hook from a hooks.d directory

podman_skip=
if ! command -v podman >/dev/null; then
	podman_skip="podman not installed"
fi
PODMAN_TESTS=15
if [[ -z $podman_skip ]]; then
	sl_podman_storage || bail_out "cannot make podman's storage in $SL_TMP"
	# shellcheck disable=SC2119
	sl_daemon_start || bail_out "the daemon did not restart: $(tail "$SL_DAEMON_DIR/err")"
	HOOKS=$SL_TMP/hooks.d
	mkdir -p "$HOOKS"
	cat >"$HOOKS/sluice.json" <<EOF
{"version": "1.0.0",
 "hook": {"path": "$SLUICE", "args": ["sluice", "oci-hook", "--socket", "$SLUICE_SOCKET",
                                      "--policy-dir", "$SL_TMP"]},
 "when": {"annotations": {"^io\\\\.sluice\\\\.policy\$": ".+"}},
 "stages": ["createRuntime"]}
EOF
	# --ulimit: this machine's hard limits are below podman's defaults
	PODMAN_BASE=(podman --hooks-dir "$HOOKS" run --runtime runc
		--network "ns:/run/netns/$SL_NS_RUN" --ulimit nofile=1024:1024
		--ulimit nproc=1024:1024)
	PODMAN_RUN=("${PODMAN_BASE[@]}" --annotation "io.sluice.policy=$POLICY")
	# podman_run NAME CMD…: podman run, retried (with a new name) while runc fails to set the
	# container's rlimits before it starts (it does, now and then, on this machine); POD_NAME is
	# the name of the last attempt, output in $SL_OUT/$SL_ERR, status SL_RC.
	podman_run() {
		local base=$1 try
		shift
		for try in 1 2 3; do
			POD_NAME=$base-$try
			PODMAN_IDS+=("$POD_NAME")
			timeout "$SL_RUN_TIMEOUT" "${PODMAN_RUN[@]}" --name "$POD_NAME" \
				--annotation "io.sluice.run-id=$POD_NAME" \
				--rootfs "$ROOTFS:O" "$@" \
				</dev/null \
				>"$SL_OUT" 2>"$SL_ERR"
			SL_RC=$?
			grep -q 'error setting rlimit' "$SL_ERR" || return 0
			tap_diag "podman run $POD_NAME: $(head -c 300 "$SL_ERR")"
			podman rm --force "$POD_NAME" >/dev/null 2>&1
		done
	}
	sink_mark
	podman_run "$PFX-pod" /bin/sh -c 'nc -w 3 198.51.100.20 80 </dev/null; echo "denied-rc=$?"'
	if grep -q 'error setting rlimit\|hybrid mode not supported' "$SL_ERR"; then
		podman_skip="podman cannot run a container here: $(head -c 200 "$SL_ERR")"
	fi
fi
if [[ -n $podman_skip ]]; then
	for i in $(seq "$PODMAN_TESTS"); do
		tap_skip "podman $i" "$podman_skip"
	done
else
	tap_is "podman: its first connect (denied host) failed" \
		"$SL_RC $(grep -c '^denied-rc=1$' "$SL_OUT")" "0 1"
	POD_LOG=$LOGS/$(hook_run_id "$POD_NAME" "$(podman inspect --format '{{.Id}}' "$POD_NAME")").jsonl
	assert_log "podman: the run's log has the denial" "$POD_LOG" 1 type=decision \
		dst=198.51.100.20 port=80 decision=deny enforced=true
	assert_log "podman: the hook attached it" "$POD_LOG" 1 type=run_start \
		source=oci-hook
	assert_sink_none "podman: nothing reached the denied host" "tcp-accept 198.51.100.20"
	podman rm --force "$POD_NAME" >/dev/null 2>&1

	# sluice attach --container NAME of a running podman container (no hook: no annotation),
	# found through podman's inspect and runc's state; every 0.2 s it connects to an unlisted
	# host and to the listed one
	PODMAN_RUN=("${PODMAN_BASE[@]}" -d)
	podman_run "$PFX-ploop" /bin/sh -c 'while :; do echo a | nc -w 1 203.0.113.7 80
		echo b | nc -w 1 198.51.100.10 80; sleep 0.2; done'
	[[ $SL_RC -eq 0 ]] || bail_out "podman run -d: $(cat "$SL_ERR")"
	PLOOP_ID=$(podman inspect --format '{{.Id}}' "$POD_NAME")
	PLOOP_CG=$CG2$(podman inspect --format '{{.State.CgroupPath}}' "$POD_NAME")
	sink_mark
	wait_until 10000 sink_saw "tcp 203.0.113.7 80"
	tap_check "podman attach: unconfined, the container reaches the unlisted host" \
		sink_saw "tcp 203.0.113.7 80"
	"$SLUICE" attach --container "$POD_NAME" --policy "$POLICY" --run-id "$POD_NAME" \
		>"$SL_OUT" 2>"$SL_ERR"
	SL_RC=$?
	tap_is "podman attach: sluice attach --container NAME (exit 0)" "$SL_RC" 0
	[[ $SL_RC -eq 0 ]] || tap_diag "$(cat "$SL_OUT" "$SL_ERR")"
	sleep 1 # a connect in flight at the attach may still land: counted from here on
	sink_mark
	sleep $((2 * SL_SLOW))
	tap_is "podman attach: nothing more reaches the unlisted host" \
		"$(sink_count 'tcp 203.0.113.7 80')" 0
	tap_cmp "podman attach: the listed host is still reached" \
		"$(sink_count 'tcp 198.51.100.10 80')" -gt 0
	POD_LOG=$LOGS/$POD_NAME.jsonl
	assert_log "podman attach: the log names the container (its full id) and podman's cgroup" \
		"$POD_LOG" 1 type=run_start attached=true "source=container:$PLOOP_ID" \
		"cgroup=$PLOOP_CG"
	assert_log "podman attach: the denials are logged, enforced" "$POD_LOG" +1 \
		type=decision dst=203.0.113.7 decision=deny enforced=true
	"$SLUICE" detach --run-id "$POD_NAME" >/dev/null 2>&1 || tap_diag "detach $POD_NAME failed"
	wait_until 10000 grep -q '"type":"run_end"' "$POD_LOG"
	tap_check "podman attach: detached, the log verifies" \
		"$SLUICE" verify "$POD_LOG" --key "$SLUICE_PUB"
	podman rm --force --time 0 "$POD_NAME" >/dev/null 2>&1

	# the daemon up, but refusing the hook's request (a policy it cannot compile): the
	# container does not start either
	printf 'default: maybe\n' >"$SL_TMP/bad-policy.yaml"
	PODMAN_RUN=("${PODMAN_BASE[@]}" --annotation "io.sluice.policy=$SL_TMP/bad-policy.yaml")
	podman_run "$PFX-pbad" /bin/sh -c 'echo started-marker'
	tap_is "podman, the daemon refusing the hook: podman run fails, the process never ran" \
		"$([[ $SL_RC -ne 0 ]] && echo failed) $(grep -c started-marker "$SL_OUT")" \
		"failed 0"
	assert_contains "podman, the daemon refusing the hook: the daemon's reason" "$SL_ERR" \
		'default: expected one of deny, allow, got "maybe"'
	podman rm --force "$POD_NAME" >/dev/null 2>&1
	PODMAN_RUN=("${PODMAN_BASE[@]}" --annotation "io.sluice.policy=$POLICY")
	sl_daemon_kill TERM
	podman_run "$PFX-pdown" /bin/sh -c 'echo started-marker'
	tap_is "podman, daemon down: podman run fails, the process never ran" \
		"$([[ $SL_RC -ne 0 ]] && echo failed) $(grep -c started-marker "$SL_OUT")" \
		"failed 0"
	assert_contains "podman, daemon down: the hook says why" "$SL_ERR" "no sluice daemon at"
	podman rm --force "$POD_NAME" >/dev/null 2>&1
fi

# every run of this test ended, none left pinned (the daemon leaves runs pinned when it stops)
left=$(ls -d /sys/fs/bpf/sluice/"$PFX"-* 2>/dev/null)
tap_is "no run of this test is left pinned" "$left" ""

tap_done
