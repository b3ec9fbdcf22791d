#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A daemon killed inside a live switch never leaves its run orphaned. SLUICE_SELFTEST_KILL makes
# the daemon SIGKILL itself once the log's policy_switch_begin line is on disk: before the
# commit or with only the new set staged (the run's programs stay those of the old policy), after
# it (the new policy's), or inside it, its links moved and the maps not yet pinned again (the
# links say which), all before the policy_change line; or while it moved the links (four moved to
# the new programs, ten not; every cgroup link moved and no host-side filter yet: links-moved),
# which a take-over can finish because the commit pinned the new set first (staged-*). Each time the next daemon:
# - takes the run over (sluice status lists it, with the policy its programs enforce);
# - enforces that policy: a process of the run reaches the host it allows, not the other;
# - writes what the dead daemon did not: policy_switch_abort, or the policy_change (after_restart);
# - finishes a move of the links killed half-way, with the set staged for it, only when that set
#   is the switch the log's open policy_switch_begin announced (a staged set tampered with, or
#   none, and the run is refused: never adopted under a policy the log does not name);
# and a later switch gets exactly the next generation (the highest ever handed out, the aborted
# switch's too, is pinned with the run: none is handed out twice, and no gap is guessed). The log
# verifies (sluice verify, and tools/sl_logcheck.py). A commit whose move back fails is finished
# forward (its policy_change, no abort); one that can go neither way writes nothing more, and the
# daemon leaves the run pinned as it stands, the new set staged: the next daemon finishes the move.
# A run detached, or taken over, keeps no staged pin.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"

# A allows .10, B allows .20 (both on port 80, both in enforce mode)
for p in a:10 b:20; do
	printf 'default: deny\nrules:\n  - name: r%s\n    cidrs: ["198.51.100.%s/32"]\n    ports: [80]\n' \
		"${p#*:}" "${p#*:}" >"$SL_TMP/${p%%:*}.yaml"
done
sha_a=$(sha256sum "$SL_TMP/a.yaml" | cut -c1-64)
sha_b=$(sha256sum "$SL_TMP/b.yaml" | cut -c1-64)

sl_daemon_attach swkill "$SL_TMP/a.yaml" --netns "/run/netns/$SL_NS_RUN"
CG=$SL_ATT_CG RUN=$SL_ATT_RUN LOG=$SL_ATT_LOG
# hold CGROUP: a process that keeps the cgroup populated until the test ends it (cgroup.kill, in
# sl_cgroup_remove, which disowns it first: its death is no job notice on stderr). Started without a
# function, whose subshell would itself report the KILL of its child on stderr.
hold() {
	"${SL_IN_CGROUP[@]}" "$1" sleep 600 &
	sl_track_pid "$!"
}
hold "$CG"

# reach ADDR: ok, or err ERRNO, from a process of the run
reach() { sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp "$1" 80 --timeout-ms 2000 | cut -d' ' -f1-2; }
# enforced POLICY ALLOWED DENIED: the run's traffic follows POLICY
enforced() {
	tap_is "$1: 198.51.100.$2 is reached" "$(reach "198.51.100.$2")" ok
	tap_is "$1: 198.51.100.$3 is denied" "$(reach "198.51.100.$3")" "err EPERM"
}
# era TYPE [N]: the era of the Nth line (default: the last) of TYPE in the log
era() {
	grep "\"type\":\"$1\"" "$LOG" | sed -n "${2:-\$}p" | sed -n 's/.*"era":\([0-9]*\).*/\1/p'
}
# taken_over SHA: the restarted daemon lists the run under the policy of that digest
taken_over() {
	local status
	status=$("$SLUICE" status --json 2>&1)
	tap_check "the next daemon takes the run over, under policy $2" \
		grep -q "\"run_id\":\"$RUN\".*\"policy_sha256\":\"$1\"" <<<"$status"
	[[ $status == *"\"run_id\":\"$RUN\""* ]] || tap_diag "$status $(tail -n 5 "$SL_DAEMON_DIR/err")"
}
# staged_pins: the staged set's pins left in the run's directory
staged_pins() { find "/sys/fs/bpf/sluice/$RUN" -name 'staged-*' 2>/dev/null | wc -l; }
# killed_at POINT POLICY N [CMD...]: a daemon told to die at POINT is asked to switch the run to
# POLICY (the log then has N policy_change lines); CMD runs before the next daemon starts
killed_at() {
	local st rc
	sl_daemon_kill TERM
	SLUICE_SELFTEST_KILL=$1 sl_daemon_start ||
		bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
	sl_daemon_killed_by "$SLUICE" replace-policy --run-id "$RUN" "$2"
	tap_is "$1: the daemon killed itself inside the switch" "$SL_DAEMON_RC" 137 ||
		tap_diag_file "$SL_TMP/daemon-killed.err"
	tap_is "$1: the log has the switch's policy_switch_begin, not its policy_change" \
		"$(tail -n 3 "$LOG" | grep -c '"type":"policy_switch_begin"')/$(grep -c '"type":"policy_change"' "$LOG")" \
		"1/$3"
	if [[ $# -gt 3 ]]; then
		"${@:4}"
	fi
	# shellcheck disable=SC2119 # no arguments: the default daemon
	sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
}

enforced "policy a" 10 20

# --- killed before the commit: the old policy stays, the switch is declared aborted --------------
killed_at before-commit "$SL_TMP/b.yaml" 0
era1=$(era policy_switch_begin)
taken_over "$sha_a" a
enforced "after the takeover, still policy a" 10 20
tap_is "the next daemon declares the switch aborted (its generation)" \
	"$(era policy_switch_abort)" "$era1"

# --- killed after the commit: the new policy holds, its policy_change is written ---------------
killed_at after-commit "$SL_TMP/b.yaml" 0
era2=$(era policy_switch_begin)
tap_is "the switch after the aborted one has the next generation (none reused)" \
	"$era2" "$((era1 + 1))"
taken_over "$sha_b" b
enforced "after the takeover, policy b" 20 10
assert_log "the next daemon writes the switch's policy_change" "$LOG" 1 type=policy_change \
	"run_id=$RUN" "policy=$SL_TMP/b.yaml" "policy_sha256=$sha_b" mode=enforce "era=$era2" \
	"prev_policy_sha256=$sha_a" prev_mode=enforce after_restart=true

# --- killed inside the commit, the links moved, the maps not yet pinned: the links win ----------
killed_at in-commit "$SL_TMP/a.yaml" 1
era3=$(era policy_switch_begin)
taken_over "$sha_a" a
enforced "after the takeover, policy a again" 10 20
assert_log "the next daemon writes that switch's policy_change" "$LOG" 1 type=policy_change \
	"run_id=$RUN" "policy=$SL_TMP/a.yaml" "policy_sha256=$sha_a" mode=enforce "era=$era3" \
	"prev_policy_sha256=$sha_b" prev_mode=enforce after_restart=true

# --- a switch of the taken-over run: the next generation exactly ------------------------------
out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/b.yaml" 2>&1)
tap_check "the taken-over run switches to policy b" test -z "${out##*\"ok\":true*}"
[[ $out == *'"ok":true'* ]] || tap_diag "$out $(tail -n 5 "$SL_DAEMON_DIR/err")"
enforced "policy b again" 20 10
tap_is "its generation is the next one (the pinned highest, not a guessed gap)" \
	"$(era policy_change)" "$((era3 + 1))"

# --- a move back that fails: the commit is finished forward, never declared aborted -----------
# (SLUICE_SELFTEST_SWITCH_FAIL=undo: the commit's third link move fails once, and the move back of
# its first one; =stuck: the third move fails every time)
# fail_switch HOW POLICY: a daemon whose commit fails so is asked to switch the run to POLICY
fail_switch() {
	sl_daemon_kill TERM
	SLUICE_SELFTEST_SWITCH_FAIL=$1 sl_daemon_start ||
		bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
	out=$("$SLUICE" replace-policy --run-id "$RUN" "$2" 2>&1)
}
fail_switch undo "$SL_TMP/a.yaml"
tap_check "undo failed: the switch is made all the same" test -z "${out##*\"ok\":true*}"
[[ $out == *'"ok":true'* ]] || tap_diag "$out $(tail -n 5 "$SL_DAEMON_DIR/err")"
tap_check "undo failed: the daemon says it finished the commit forward" \
	grep -q "moving the links back failed: the switch is finished forward" "$SL_DAEMON_DIR/err"
enforced "undo failed: policy a" 10 20
tap_is "undo failed: the log's last switch closes with its policy_change, no abort" \
	"$(grep -o '"type":"policy_[a-z_]*"' "$LOG" | tail -n 2 | tr '\n' ' ')" \
	'"type":"policy_switch_begin" "type":"policy_change" '
tap_is "undo failed: the policy_change names the begin's generation" "$(era policy_change)" \
	"$(era policy_switch_begin)"
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_kill TERM
sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"

# --- killed while it moved the links: the next daemon finishes the move with the staged set -----
killed_at in-links "$SL_TMP/b.yaml" "$(grep -c '"type":"policy_change"' "$LOG")"
era5=$(era policy_switch_begin)
taken_over "$sha_b" b
tap_check "in-links: the next daemon moves the links left on the old programs to the staged ones" \
	grep -q "sluice/$RUN: its writer died while it moved .*(generation $era5): every link is moved" \
	"$SL_DAEMON_DIR/err"
enforced "in-links: after the takeover, policy b" 20 10
assert_log "in-links: the next daemon writes the switch's policy_change" "$LOG" 1 \
	type=policy_change "run_id=$RUN" "policy_sha256=$sha_b" mode=enforce "era=$era5" \
	"prev_policy_sha256=$sha_a" after_restart=true
tap_is "in-links: the take-over leaves no staged pin" "$(staged_pins)" 0

# --- killed with the new set staged and no link moved yet: aborted, the staged set removed ------
# shellcheck disable=SC2317 # called through killed_at
staged_left() { [[ $(staged_pins) -gt 0 ]]; }
killed_at staged "$SL_TMP/a.yaml" "$(grep -c '"type":"policy_change"' "$LOG")" \
	tap_check "staged: the dead daemon left the new set staged" staged_left
taken_over "$sha_b" b
enforced "staged: after the takeover, still policy b" 20 10
tap_is "staged: the next daemon declares the switch aborted" "$(era policy_switch_abort)" \
	"$(era policy_switch_begin)"
tap_is "staged: the take-over leaves no staged pin" "$(staged_pins)" 0

out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "the run detaches" test -z "${out##*\"ok\":true*}"
tap_check "the run's end leaves no pin of it" test ! -e "/sys/fs/bpf/sluice/$RUN"
out=$("$SLUICE" verify --key "$SLUICE_PUB" "$LOG" 2>&1)
rc=$?
tap_check "sluice verify: the log is intact" test "$rc" -eq 0
[[ $rc -eq 0 ]] || tap_diag "$out"
out=$(log_well_formed "$LOG" 2>&1)
rc=$?
tap_check "sl_logcheck.py: the log is well formed (begin, abort and change lines paired)" \
	test "$rc" -eq 0
[[ $rc -eq 0 ]] || tap_diag "$out"

# --- clsact (kernels without tcx), killed inside the commit: the moved filter is the run's ------
# (its pin still names the old program: the next daemon finds the filter by what it runs, pins
# it again, and the run's end removes it)
# clsact_run NAME: a daemon whose host sides are clsact filters (kernels without tcx), and run
# t-ID-NAME attached under policy a with a host side and a process in its cgroup: RUN, LOG
clsact_run() {
	local cg out
	sl_daemon_kill TERM
	SLUICE_SELFTEST_TC_CLSACT=1 sl_daemon_start ||
		bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
	cg=$(sl_cgroup_new "$1") || bail_out "cannot make the test cgroup"
	sl_on_exit "sl_cgroup_remove '$cg'"
	RUN=t-$SL_ID-$1
	SL_RUNS+=("$RUN")
	LOG=$SL_TMP/$1.jsonl
	out=$("$SLUICE" attach --cgroup "$cg" --policy "$SL_TMP/a.yaml" --run-id "$RUN" \
		--netns "/run/netns/$SL_NS_RUN" --log "$LOG" 2>&1) ||
		bail_out "attach failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
	hold "$cg"
}
clsact_run swclsact
tap_is "clsact: the host side is a clsact filter" "$(host_filters)" "filters 1 qdiscs 1"
killed_at in-commit "$SL_TMP/b.yaml" 0
taken_over "$sha_b" b
# (the filter moved, its pin not: the pin counts as a hook of the old set, so the take-over
# finishes the commit with the staged set, re-pinning it; or, with none staged, refinds it)
tap_check "clsact: the next daemon pins the filter's program again" \
	grep -q -e "the program the host-side filter on ifindex [0-9]* runs is pinned now" \
	-e "every link is moved to them now" "$SL_DAEMON_DIR/err"
out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "clsact: the run detaches" test -z "${out##*\"ok\":true*}"
tap_is "clsact: its end removes the filter the dead daemon moved" "$(host_filters)" \
	"filters 0 qdiscs 0"

# --- clsact, killed while it moved the cgroup links: the filter still on the old program moves too
clsact_run swclsact2
killed_at in-links "$SL_TMP/b.yaml" 0
taken_over "$sha_b" b
tap_check "clsact, in-links: the next daemon finishes the move" \
	grep -q "sluice/$RUN: its writer died while it moved .*every link is moved" \
	"$SL_DAEMON_DIR/err"
out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "clsact, in-links: the run detaches" test -z "${out##*\"ok\":true*}"
tap_is "clsact, in-links: its end finds the filter (moved to the new program) and removes it" \
	"$(host_filters)" "filters 0 qdiscs 0"

# --- clsact, killed with every cgroup link moved and the filter not yet: the filter moves too --
clsact_run swclsact3
killed_at links-moved "$SL_TMP/b.yaml" 0
taken_over "$sha_b" b
tap_check "clsact, links-moved: the next daemon finishes the move" \
	grep -q "sluice/$RUN: its writer died while it moved .*every link is moved" \
	"$SL_DAEMON_DIR/err"
# (a process in no run's cgroup: judged by the host side's filter alone)
tap_is "clsact, links-moved: the filter judges under policy b: .20 is reached" \
	"$(in_run "$SL_PROBE" tcp 198.51.100.20 80 --timeout-ms 2000 | cut -d' ' -f1)" ok
tap_check "clsact, links-moved: ... and .10 is not" \
	test "$(in_run "$SL_PROBE" tcp 198.51.100.10 80 --timeout-ms 2000 | cut -d' ' -f1)" != ok
out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "clsact, links-moved: the run detaches" test -z "${out##*\"ok\":true*}"
tap_is "clsact, links-moved: its end removes the filter" "$(host_filters)" "filters 0 qdiscs 0"

# --- two veths (tcx), killed with the first moved and not the second: refused, not mislabelled --
ip -n "$SL_NS_RUN" link add veth1 type veth peer name vrun2 netns "$SL_NS_RTR" ||
	bail_out "cannot add a second veth"
sl_on_exit "ip -n '$SL_NS_RUN' link del veth1"
CG4=$(sl_cgroup_new switchtcx) || bail_out "cannot make the test cgroup"
sl_on_exit "sl_cgroup_remove '$CG4'"
RUN=t-$SL_ID-swtcx
SL_RUNS+=("$RUN")
LOG=$SL_TMP/switchtcx.jsonl
out=$("$SLUICE" attach --cgroup "$CG4" --policy "$SL_TMP/a.yaml" --run-id "$RUN" \
	--netns "/run/netns/$SL_NS_RUN" --log "$LOG" 2>&1) ||
	bail_out "attach failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
hold "$CG4"
killed_at in-tc "$SL_TMP/b.yaml" 0
taken_over "$sha_b" b
tap_check "two veths: the next daemon moves the veth left on the old program to the staged one" \
	grep -q "sluice/$RUN: its writer died while it moved .*every link is moved" \
	"$SL_DAEMON_DIR/err"
out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "two veths: the run detaches, leaving no pin" \
	test -z "${out##*\"ok\":true*}" -a ! -e "/sys/fs/bpf/sluice/$RUN"

# --- a staged set that is not the log's switch, or none: refused, never the wrong policy ------
# attach_killed NAME: a run of policy a whose daemon is killed moving its links to policy b
attach_killed() {
	CG5=$(sl_cgroup_new "$1") || bail_out "cannot make the test cgroup"
	sl_on_exit "sl_cgroup_remove '$CG5'"
	RUN=t-$SL_ID-$1
	SL_RUNS+=("$RUN")
	LOG=$SL_TMP/$1.jsonl
	out=$("$SLUICE" attach --cgroup "$CG5" --policy "$SL_TMP/a.yaml" --run-id "$RUN" \
		--log "$LOG" 2>&1) ||
		bail_out "attach failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
	hold "$CG5"
	shift
	killed_at in-links "$SL_TMP/b.yaml" 0 "$@"
}
# refused WHAT: the next daemon refused the run, and does not list it
refused() {
	tap_check "$1: the next daemon refuses the run" \
		grep -q "take over run $RUN: .*some hooks run the old policy's" "$SL_DAEMON_DIR/err" ||
		tap_diag "$(tail -n 5 "$SL_DAEMON_DIR/err")"
	# shellcheck disable=SC2016 # expanded by the inner sh
	tap_check "$1: the run is not adopted (under either policy)" \
		sh -c '! "$1" status --json | grep -q "\"run_id\":\"$2\""' sh "$SLUICE" "$RUN"
}
# stale_cfg: the staged configuration replaced by the run's own (the old generation and policy)
stale_cfg() {
	# shellcheck disable=SC2317 # called through killed_at
	rm -f "/sys/fs/bpf/sluice/$RUN/staged-cfg" &&
		bpftool map pin pinned "/sys/fs/bpf/sluice/$RUN/map-cfg" \
			"/sys/fs/bpf/sluice/$RUN/staged-cfg"
}
if command -v bpftool >/dev/null; then
	attach_killed switchstale stale_cfg
	refused "a stale staged configuration"
	tap_check "a stale staged configuration: the daemon says the staged set is not the switch's" \
		grep -q "sluice/$RUN: .*the set it staged cannot be the one to finish with: its generation" \
		"$SL_DAEMON_DIR/err"
else
	tap_skip "a stale staged configuration" "bpftool not installed"
fi
attach_killed switchunstaged rm -f "/sys/fs/bpf/sluice/t-$SL_ID-switchunstaged/staged-cfg"
refused "no staged set"

# --- the links can go neither back nor forward: no abort is written, the run is left ----------
CG2=$(sl_cgroup_new switchstuck) || bail_out "cannot make the test cgroup"
sl_on_exit "sl_cgroup_remove '$CG2'"
RUN=t-$SL_ID-swstuck
SL_RUNS+=("$RUN")
LOG=$SL_TMP/switchstuck.jsonl
out=$("$SLUICE" attach --cgroup "$CG2" --policy "$SL_TMP/a.yaml" --run-id "$RUN" --log "$LOG" 2>&1) ||
	bail_out "attach failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
hold "$CG2"
fail_switch stuck "$SL_TMP/b.yaml"
tap_check "stuck: the switch is refused, saying the hooks run both policies' programs" \
	grep -q "forward again too.*run programs of both policies" <<<"$out" || tap_diag "$out"
tap_is "stuck: the log's begin stays open (no abort that would name the old policy)" \
	"$(grep -o '"type":"policy_[a-z_]*"' "$LOG" | tr '\n' ' ')" '"type":"policy_switch_begin" '
tap_check "stuck: the daemon says it left the run pinned" \
	grep -q "run $RUN: .*left pinned as it stands" "$SL_DAEMON_DIR/err"
tap_check "stuck: the daemon no longer lists the run" \
	sh -c '! "$1" status --json | grep -q "\"run_id\":\"$2\""' sh "$SLUICE" "$RUN"
sl_daemon_kill TERM
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
taken_over "$sha_b" b
tap_check "stuck: the next daemon finishes moving the links to the staged programs" \
	grep -q "sluice/$RUN: its writer died while it moved .*every link is moved" \
	"$SL_DAEMON_DIR/err"
tap_is "stuck: the take-over leaves no staged pin" "$(staged_pins)" 0

# --- a run whose writer was killed (sluice run), its host side clsact filters on both veths: a
# detach through the daemon, which does not manage it, removes its pins and its filters too
# peer_filters: sluice's filters and clsact qdiscs on both veth peers
peer_filters() {
	local d n=0 q=0
	for d in vrun vrun2; do
		n=$((n + $(in_rtr tc filter show dev "$d" ingress | grep -c sl_tc_ingress)))
		q=$((q + $(in_rtr tc qdisc show dev "$d" | grep -c clsact)))
	done
	echo "filters $n qdiscs $q"
}
SLUICE_SELFTEST_TC_CLSACT=1 sluice_start "$SL_TMP/a.yaml" "$SL_TMP/orphan.jsonl" --user nobody \
	--netns "/run/netns/$SL_NS_RUN" -- sleep 600
wait_until 60000 grep -qs '"run_start"' "$SL_TMP/orphan.jsonl" || tap_diag_file "$SL_ERR"
tap_is "orphan: the run's host side is a clsact filter on each veth" "$(peer_filters)" \
	"filters 2 qdiscs 2"
sl_kill_wait "$SL_RUN_PID"
echo 1 >"$(cg2_mount)/sluice/$SL_RUN_ID/cgroup.kill"
out=$("$SLUICE" detach --run-id "$SL_RUN_ID" 2>&1)
tap_check "orphan: the daemon detaches the run no writer manages" \
	test -z "${out##*\"taken_over\":false*}" -a ! -e "/sys/fs/bpf/sluice/$SL_RUN_ID"
tap_is "orphan: its clsact filters, and the qdiscs it made, are gone with it" \
	"$(peer_filters)" "filters 0 qdiscs 0"
wait_until 5000 rmdir "$(cg2_mount)/sluice/$SL_RUN_ID"

# --- a daemon killed inside an attach into the namespace (its cgroup links pinned, before its
# configuration, whose token a purge reads; before its host side; its host side pinned, before
# its join): the next daemon undoes the attach, and no pin of it is left in the namespace's maps
# (its slot, its token), which only a later join or leave there would have collected
NS_PINS=/sys/fs/bpf/sluice/netns@$(stat -L -c '%d-%i' "/run/netns/$SL_NS_RUN")
ns_slots() { find "$NS_PINS" -name 'slot-*' -printf '%f ' 2>/dev/null; }
slots_before=$(ns_slots)
for point in before-maps before-tc before-join; do
	sl_daemon_kill TERM
	export SLUICE_SELFTEST_KILL=$point
	# shellcheck disable=SC2119 # no arguments: the default daemon
	sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
	unset SLUICE_SELFTEST_KILL
	cg=$(sl_cgroup_new "attkill-$point") || bail_out "cannot make the test cgroup"
	sl_on_exit "sl_cgroup_remove '$cg'"
	RUN=t-$SL_ID-attkill-$point
	SL_RUNS+=("$RUN")
	sl_daemon_killed_by "$SLUICE" attach --cgroup "$cg" --policy "$SL_TMP/a.yaml" \
		--run-id "$RUN" --netns "/run/netns/$SL_NS_RUN" --log "$SL_TMP/attkill-$point.jsonl"
	tap_is "killed in an attach ($point): the daemon died there, of its SIGKILL" \
		"$SL_DAEMON_RC" 137 || tap_diag_file "$SL_TMP/daemon-killed.err"
	# shellcheck disable=SC2119 # no arguments: the default daemon
	sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
	tap_check "killed in an attach ($point): the next daemon undoes it, its pins gone" \
		test ! -e "/sys/fs/bpf/sluice/$RUN"
	tap_is "killed in an attach ($point): ... and its slot in the namespace's maps" \
		"$(ns_slots)" "$slots_before"
done
[[ -n $slots_before ]] ||
	tap_check "killed in an attach: with no run left in the namespace, its maps' pins are gone" \
		test ! -e "$NS_PINS"

tap_done
