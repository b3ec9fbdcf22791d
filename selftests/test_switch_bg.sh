#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A switch does not stall the daemon (issue #12: one process for every run). The new programs
# of a switch are verified on a thread of its own (a second or so, far more on a loaded
# machine) while the daemon's loop goes on draining every other run's records and answering
# requests. Two runs on one daemon; B's client connects in loops, to an allowed and a denied
# test host in the test's network namespace, while:
# 1. A is switched three times (set-mode report, enforce, report): each is answered ok;
#    sluice status answers while it is in flight, showing A "switching"; B's denial lines reach
#    B's log between two status answers that both show A switching (an order of events, not a
#    time); a second switch of A while one is in flight is refused, saying why. B's loops'
#    verdicts never change, and B's log has no loss line.
# 2. A is detached while its switch is in flight: the detach is answered ok once the new
#    programs are verified, the switch's client is told the switch was not made, A's log ends
#    (run_end "detached", no policy_change of that switch) and verifies.
# 3. The daemon gets SIGTERM while B switches: it waits for the load, tells the switch's client
#    the switch was not made, and exits 0; the next daemon takes B over on its old mode; B's
#    log verifies with no loss (no heartbeat gap either: the checkpoints went on during every
#    switch).

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

# the switches' windows are held open by the test ($HOLD), never hoped for
sl_hold_loads
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"
SL_OUT=$SL_DAEMON_DIR/out
SL_ERR=$SL_DAEMON_DIR/err
SL_RC="(the daemon's runs have none)"

Y=203.0.113.7 # B: port 80 allowed, 443 denied
cat >"$SL_TMP/a.yaml" <<EOF
default: deny
rules:
  - name: a-cidr
    cidrs: [$Y/32]
    ports: [443]
EOF
cat >"$SL_TMP/b.yaml" <<EOF
default: deny
rules:
  - name: b-cidr
    cidrs: [$Y/32]
    ports: [80]
EOF

NETNS=/run/netns/$SL_NS_RUN
LA=$SL_TMP/a.jsonl
LB=$SL_TMP/b.jsonl
A=t-$SL_ID-a
B=t-$SL_ID-b
# attach NAME CGROUP POLICY: run t-ID-NAME, its log $SL_TMP/NAME.jsonl (nothing asks its
# resolver: the upstream is a port nobody serves)
attach() {
	local out
	SL_RUNS+=("t-$SL_ID-$1")
	out=$("$SLUICE" attach --cgroup "$2" --policy "$3" --run-id "t-$SL_ID-$1" --netns "$NETNS" \
		--upstream 127.0.0.1:9 --log "$SL_TMP/$1.jsonl" 2>&1) ||
		bail_out "attach $1: $out $(tail -n 5 "$SL_ERR")"
}
CG_A=$(sl_cgroup_new a) || bail_out "cannot make cgroup A"
CG_B=$(sl_cgroup_new b) || bail_out "cannot make cgroup B"
attach a "$CG_A" "$SL_TMP/a.yaml"
attach b "$CG_B" "$SL_TMP/b.yaml"

# B's client: a connect every 50 ms to Y:80 (allowed) and to Y:443 (denied)
L=$SL_TMP/loop
mkdir -p "$L"
for p in 80 443; do
	sl_in_cgroup "$CG_B" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" daemon $Y $p 50 "$L/$p.pid" \
		"$L/$p.res" >/dev/null || bail_out "B's loop to port $p did not start"
	sl_on_exit "sl_kill_probe_pidfile '$L/$p.pid'"
done
wait_until 10000 test -s "$L/443.res" || bail_out "B's loops do not probe"

# switching RUN: "true" or "false" as sluice status --json shows RUN; nothing if no answer
switching() {
	"$SLUICE" status --json 2>/dev/null | python3 -c 'import json, sys
for line in sys.stdin:
    o = json.loads(line)
    if o.get("run_id") == sys.argv[1]:
        print(json.dumps(o.get("switching")))' "$1"
}
# shellcheck disable=SC2317 # called through wait_until
is_switching() { [[ $(switching "$1") == true ]]; }
b_denials() { grep -c '"decision":"deny"' "$LB"; }
# watch RUN: while a switch of RUN is held in flight ($HOLD, touched by the caller; its load done,
# its commit not yet), ask the status; sets ANSWERS (answers showing RUN switching), NO_ANSWER
# (status that did not answer) and IN_WINDOW (B's denial lines logged meanwhile); with
# TRY_SECOND, a second switch of RUN then (SECOND_OUT, SECOND_RC). Releases the switch.
watch() {
	local run=$1 base sw _
	ANSWERS=0 NO_ANSWER=0 IN_WINDOW=0
	wait_until 20000 is_switching "$run"
	for _ in 1 2 3; do
		sw=$(switching "$run")
		[[ -z $sw ]] && NO_ANSWER=$((NO_ANSWER + 1))
		[[ $sw == true ]] && ANSWERS=$((ANSWERS + 1))
		sleep 0.05
	done
	base=$(b_denials)
	wait_until 10000 bash -c "[[ \$(grep -c '\"decision\":\"deny\"' '$LB') -gt $base ]]"
	IN_WINDOW=$(($(b_denials) - base))
	if [[ -n ${TRY_SECOND-} ]]; then
		SECOND_OUT=$("$SLUICE" set-mode --run-id "$run" enforce 2>&1)
		SECOND_RC=$?
		TRY_SECOND=
	fi
	rm -f "$HOLD"
}

# --- 1. three switches of A while B's loops run ---------------------------------------------
TRY_SECOND=1
all_answers=1 in_window=0 no_answer=0 sw_fail=''
for mode in report enforce report; do
	touch "$HOLD"
	"$SLUICE" set-mode --run-id "$A" "$mode" >"$SL_TMP/sw.out" 2>&1 &
	pid=$!
	watch "$A"
	wait "$pid" || sw_fail+="set-mode $mode: $(cat "$SL_TMP/sw.out"); "
	[[ $ANSWERS -gt 0 ]] || all_answers=0
	in_window=$((in_window + IN_WINDOW))
	no_answer=$((no_answer + NO_ANSWER))
done
tap_is "1: A's three switches are answered ok" "$sw_fail" ""
tap_is "1: sluice status answered during each switch, showing A switching" \
	"$all_answers $no_answer" "1 0"
tap_cmp "1: B's denials were logged while A's switches were in flight" "$in_window" -ge 1
tap_is "1: a second switch of A while one is in flight is refused (rc $SECOND_RC)" \
	"$SECOND_RC $(grep -c "run $A is switching already" <<<"$SECOND_OUT")" "1 1"
tap_is "1: A's log has one policy_change per switch" \
	"$(grep -c '"type":"policy_change"' "$LA")" 3
tap_is "1: B's loop to $Y:80 (allowed) never failed" \
	"$(cut -d' ' -f1 "$L/80.res" | sort -u | paste -sd ' ')" "ok"
tap_is "1: B's loop to $Y:443 (denied) was never let through" \
	"$(cut -d' ' -f1-2 "$L/443.res" | sort -u | paste -sd '|')" "err EPERM"

# --- 2. A detached while its switch is in flight --------------------------------------------
touch "$HOLD"
"$SLUICE" set-mode --run-id "$A" enforce >"$SL_TMP/sw.out" 2>&1 &
pid=$!
wait_until 20000 is_switching "$A"
"$SLUICE" detach --run-id "$A" >"$SL_TMP/det.out" 2>&1 &
pdet=$!
# the daemon has the detach once the status says the run is ending
wait_until 10000 bash -c "'$SLUICE' status --json | grep -q '\"run_id\":\"$A\".*\"ending\":\"detached\"'"
rm -f "$HOLD"
wait "$pdet"
tap_check "2: A's detach during its switch is answered ok ($(cat "$SL_TMP/det.out"))" test $? -eq 0
wait "$pid"
rc=$?
tap_is "2: the switch's client is told the switch was not made (rc $rc)" \
	"$(grep -c "run $A ended (detached) while its new programs were being verified: the switch was not made" "$SL_TMP/sw.out")" 1
tap_is "2: A's log has no policy_change of it" "$(grep -c '"type":"policy_change"' "$LA")" 3
wait_until 5000 grep -q '"type":"run_end"' "$LA"
tap_is "2: A's log ends: detached" "$(grep '"type":"run_end"' "$LA" | grep -c '"why":"detached"')" 1
out=$("$SLUICE" verify "$LA" --key "$SLUICE_PUB" --run-id "$A" 2>&1)
tap_check "2: A's log verifies" test $? -eq 0
[[ $(switching "$A") == "" ]]
tap_check "2: A is no run of the daemon's any more" test $? -eq 0

# --- 3. SIGTERM while B switches --------------------------------------------------------------
sl_kill_probe_pidfile "$L/80.pid"
sl_kill_probe_pidfile "$L/443.pid"
touch "$HOLD"
"$SLUICE" set-mode --run-id "$B" report >"$SL_TMP/sw.out" 2>&1 &
pid=$!
wait_until 20000 is_switching "$B"
kill -TERM "$SL_DAEMON_PID"
# released once the daemon says it is waiting for the load: it handled the signal first
wait_until 10000 grep -q "run $B: waiting for its switch's programs" "$SL_ERR"
rm -f "$HOLD"
wait "$SL_DAEMON_PID"
tap_is "3: the daemon stopped by SIGTERM during a switch exits 0" $? 0
wait "$pid"
rc=$?
tap_is "3: the switch's client is told the switch was not made (rc $rc)" \
	"$(grep -c "the daemon stopped while run $B's new programs were being verified: the switch was not made" "$SL_TMP/sw.out")" 1
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the next daemon did not start: $(tail -n 5 "$SL_ERR")"
tap_is "3: the next daemon has B, on its old mode, not switching" \
	"$("$SLUICE" status --json | grep -c "\"run_id\":\"$B\".*\"mode\":\"enforce\".*\"switching\":false")" 1
"$SLUICE" detach --run-id "$B" >/dev/null 2>&1
wait_until 5000 grep -q '"type":"run_end"' "$LB"
tap_is "3: B's log has no loss line and no policy_change" \
	"$(grep -c '"type":"loss"' "$LB") $(grep -c '"type":"policy_change"' "$LB")" "0 0"
out=$("$SLUICE" verify "$LB" --key "$SLUICE_PUB" --run-id "$B" 2>&1)
tap_check "3: B's log verifies (no heartbeat gap across A's switches)" test $? -eq 0 ||
	tap_diag "$out"

tap_done
