#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# An attach no spare fits does not stall the daemon. With --spares 0 every attach loads and
# verifies its own programs (a second or so, far more on a loaded machine): on a thread of its
# own (bg_load in daemon.c), while the loop goes on with every other run and client; the attach
# is committed on the loop and its client answered then. Run B's client connects in loops to a
# denied test host while:
# 1. A is attached (--netns: the namespace sent by sluice attach, not opened by the daemon):
#    sluice status answers while A's attach is held in flight (SLUICE_SELFTEST_LOAD_HOLD: the
#    load done, its commit not yet), showing A "attaching"; B's denial lines reach B's log
#    meanwhile; a second attach of A's run id, an attach of another
#    id to A's cgroup, and a detach of A are refused while it loads, saying why. The attach is
#    answered ok, and the daemon logs the namespace's inode.
# 2. A switch queued behind two loads (attaches of C and D hold both load threads) of a run
#    that ends (B detached) is dropped at once: the detach is answered, and the switch's client
#    told that its programs never got a thread, not when a load finishes.
# 3. The daemon gets SIGTERM while E's attach loads: it waits for the load, tells the attach's
#    client nothing was attached, and exits 0; E leaves no pins, no program on its cgroup, no
#    state file, no log.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

# each window below is held open by the test ($HOLD), never hoped for
sl_hold_loads
sl_daemon_start --spares 0 ||
	bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"
SL_OUT=$SL_DAEMON_DIR/out
SL_ERR=$SL_DAEMON_DIR/err
SL_RC="(the daemon's runs have none)"

Y=203.0.113.7 # B: every connect to it denied
cat >"$SL_TMP/p.yaml" <<EOF
default: deny
rules:
  - name: other
    cidrs: [198.51.100.1/32]
    ports: [443]
EOF
NETNS=/run/netns/$SL_NS_RUN
# attach_cmd NAME: sluice attach of run t-ID-NAME to the test's cgroup NAME, its log
# $SL_TMP/NAME.jsonl (nothing asks its resolver: the upstream is a port nobody serves)
attach_cmd() {
	"$SLUICE" attach --cgroup "$(cg2_mount)/sluice-selftest-$SL_ID-$1" --policy "$SL_TMP/p.yaml" \
		--run-id "t-$SL_ID-$1" --netns "$NETNS" --upstream 127.0.0.1:9 \
		--log "$SL_TMP/$1.jsonl"
}
if ! { CG_a=$(sl_cgroup_new a) && CG_b=$(sl_cgroup_new b) && CG_c=$(sl_cgroup_new c) &&
	sl_cgroup_new d >/dev/null && CG_e=$(sl_cgroup_new e); }; then
	bail_out "cannot make the test cgroups"
fi
SL_RUNS+=("t-$SL_ID-a" "t-$SL_ID-b" "t-$SL_ID-c" "t-$SL_ID-d" "t-$SL_ID-e")
A=t-$SL_ID-a
B=t-$SL_ID-b
LB=$SL_TMP/b.jsonl
out=$(attach_cmd b 2>&1) || bail_out "attach b: $out $(tail -n 5 "$SL_ERR")"

# B's client: a connect every 50 ms to Y:443 (denied)
L=$SL_TMP/loop
mkdir -p "$L"
sl_in_cgroup "$CG_b" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" daemon $Y 443 50 "$L/443.pid" \
	"$L/443.res" >/dev/null || bail_out "B's loop did not start"
sl_on_exit "sl_kill_probe_pidfile '$L/443.pid'"
wait_until 10000 test -s "$L/443.res" || bail_out "B's loop does not probe"

# attaching RUN: "true" when sluice status --json shows RUN being attached, "false" when it shows
# it otherwise, "none" when it does not show it, nothing when the status was not answered
attaching() {
	local st
	st=$("$SLUICE" status --json 2>/dev/null) || return 0
	python3 -c 'import json, sys
for line in sys.argv[2].splitlines():
    o = json.loads(line)
    if o.get("run_id") == sys.argv[1]:
        print(json.dumps(o.get("attaching", False)))
        break
else:
    print("none")' "$1" "$st"
}
# shellcheck disable=SC2317 # called through wait_until
is_attaching() { [[ $(attaching "$1") == true ]]; }
b_denials() { grep -c '"decision":"deny"' "$LB"; }
# shellcheck disable=SC2317 # called through wait_until
b_switching() { "$SLUICE" status --json | grep -q "\"run_id\":\"$B\".*\"switching\":true"; }

# --- 1. A's attach loads while B's loop runs -------------------------------------------------
touch "$HOLD"
attach_cmd a >"$SL_TMP/a.out" 2>&1 &
pid=$!
wait_until 20000 is_attaching "$A"
answers=0 no_answer=0
for _ in 1 2 3 4 5; do
	case $(attaching "$A") in
	true) answers=$((answers + 1)) ;;
	'') no_answer=$((no_answer + 1)) ;;
	esac
	sleep 0.05
done
base=$(b_denials)
wait_until 10000 bash -c "[[ \$(grep -c '\"decision\":\"deny\"' '$LB') -gt $base ]]"
in_window=$(($(b_denials) - base))
second=$("$SLUICE" attach --cgroup "$CG_c" --policy "$SL_TMP/p.yaml" --run-id "$A" 2>&1)
other_cg=$("$SLUICE" attach --cgroup "$CG_a" --policy "$SL_TMP/p.yaml" --run-id "t-$SL_ID-x" 2>&1)
detach=$("$SLUICE" detach --run-id "$A" 2>&1)
tap_cmp "1: sluice status answered while A's programs loaded, showing A attaching" \
	"$answers" -eq 5
tap_is "1: no status went unanswered while A's attach was in flight" "$no_answer" 0
tap_cmp "1: B's denials were logged while A's attach was in flight" "$in_window" -ge 1
tap_is "1: a second attach of A's run id while it loads is refused, saying why" \
	"$(grep -c "run $A is being attached already (to $CG_a" <<<"$second")" 1
tap_is "1: an attach of another run to A's cgroup while A loads is refused" \
	"$(grep -c "overlaps run $A's $CG_a (being attached)" <<<"$other_cg")" 1
tap_is "1: a detach of A while it loads is refused, saying why" \
	"$(grep -c "run $A is being attached (its programs being verified)" <<<"$detach")" 1
tap_is "1: A's attach is still in flight after those requests" "$(attaching "$A")" true
rm -f "$HOLD"
wait "$pid"
tap_is "1: A's attach is answered ok" "$? $(grep -c "attached run $A" "$SL_TMP/a.out")" "0 1" ||
	tap_diag "$(cat "$SL_TMP/a.out") $(tail -n 5 "$SL_ERR")"
tap_is "1: A is attached now, not attaching" "$(attaching "$A")" false
ino=$(stat -L -c %i "$NETNS")
tap_is "1: the daemon logs A's namespace, sent by sluice attach, by its inode" \
	"$(grep "run $A attached to" "$SL_ERR" | grep -c "verified off the loop in .*; netns $NETNS, inode $ino")" 1
tap_is "1: B's loop to $Y:443 (denied) was never let through" \
	"$(cut -d' ' -f1-2 "$L/443.res" | sort -u | paste -sd '|')" "err EPERM"

# --- 2. a queued switch of a run that ends is dropped at once --------------------------------
touch "$HOLD"
attach_cmd c >"$SL_TMP/c.out" 2>&1 &
pc=$!
attach_cmd d >"$SL_TMP/d.out" 2>&1 &
pd=$!
wait_until 20000 is_attaching "t-$SL_ID-c" && wait_until 20000 is_attaching "t-$SL_ID-d"
"$SLUICE" set-mode --run-id "$B" report >"$SL_TMP/sw.out" 2>&1 &
psw=$!
# the set-mode is queued once the daemon says B is switching
wait_until 10000 b_switching
out=$("$SLUICE" detach --run-id "$B" 2>&1)
tap_check "2: B's detach with its switch queued is answered ok ($out)" test $? -eq 0
wait "$psw"
rc=$?
tap_is "2: the switch is dropped while both loads are in flight: its client told it never loaded" \
	"$rc $(grep -c "run $B ended (detached) while its new programs waited for a thread to verify them: the switch was not made" "$SL_TMP/sw.out") $(attaching "t-$SL_ID-c")$(attaching "t-$SL_ID-d")" \
	"1 1 truetrue"
rm -f "$HOLD"
wait "$pc"
rc_c=$?
wait "$pd"
tap_is "2: C's and D's attaches are answered ok" "$rc_c $?" "0 0"
wait_until 5000 grep -q '"type":"run_end"' "$LB"
tap_is "2: B's log ends: detached, with no policy_change" \
	"$(grep '"type":"run_end"' "$LB" | grep -c '"why":"detached"') $(grep -c '"type":"policy_change"' "$LB")" \
	"1 0"

# --- 3. SIGTERM while E's attach loads -------------------------------------------------------
E=t-$SL_ID-e
touch "$HOLD"
attach_cmd e >"$SL_TMP/e.out" 2>&1 &
pe=$!
wait_until 20000 is_attaching "$E"
kill -TERM "$SL_DAEMON_PID"
# released once the daemon says it is waiting for the load: it handled the signal first
wait_until 10000 grep -q "run $E: waiting for its attach's programs" "$SL_ERR"
rm -f "$HOLD"
wait "$SL_DAEMON_PID"
tap_is "3: the daemon stopped by SIGTERM during an attach exits 0" $? 0
wait "$pe"
rc=$?
tap_is "3: the attach's client is told nothing was attached (rc $rc)" \
	"$(grep -c "run $E was not attached: the daemon stopped while its programs were being verified; nothing of it stays" "$SL_TMP/e.out")" 1
tap_is "3: E left no pins" "$(find "/sys/fs/bpf/sluice/$E" 2>/dev/null | wc -l)" 0
tap_is "3: E's cgroup has no program attached" \
	"$(bpftool cgroup show "$CG_e" 2>/dev/null | grep -vc '^ID')" 0
tap_is "3: E left no state file and no log" \
	"$(find "$SL_DAEMON_DIR/state/runs/$E" "$SL_TMP/e.jsonl" 2>/dev/null | wc -l)" 0

tap_done
