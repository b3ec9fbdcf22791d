#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Switching a live run without a restart (sluice set-mode, sluice replace-policy), through the
# daemon, on a cgroup the test made, while a client in it connects in a loop to three test hosts
# whose addresses it resolved once, at its start, through the run's resolver:
# - report -> enforce: the host both modes allow never fails across the switch; the host only
#   report mode let through is denied from the switch on, and its name no longer resolves;
# - replace-policy: the host both policies list never fails (its learned address is carried over
#   under the new policy's rule, and the log names that rule); the host only the old policy
#   listed is denied from the switch on, though its address was learned before, and its name no
#   longer resolves;
# - a policy that does not parse, a mode that does not exist, a run that is not attached: an
#   error that says why, and nothing changes;
# - the log has one policy_change line per switch (the new policy's path and digest, its mode,
#   the previous ones) and verifies (sluice verify);
# - a daemon killed after the switches: the next one takes the run over under the new policy
#   and mode (from the log's last policy_change line, checked against the pinned programs), and
#   switches it again (set-mode report).

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

command -v dig >/dev/null || skip_all "dig not installed"

dns_upstream_start upstream --host-record=ten.switch.example,198.51.100.10 \
	--host-record=twenty.switch.example,198.51.100.20 \
	--host-record=seven.switch.example,203.0.113.7 || bail_out "cannot start dnsmasq"
sl_on_exit dns_upstream_stop
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"

# A: ten and seven (twenty unlisted: report mode lets it through). B: other rules first, so
# that ten's rule has another number; seven is gone.
cat >"$SL_TMP/a.yaml" <<'EOF'
default: deny
rules:
  - name: ten
    hosts: ["ten.switch.example"]
    ports: [80]
  - name: seven
    hosts: ["seven.switch.example"]
    ports: [80]
EOF
cat >"$SL_TMP/b.yaml" <<'EOF'
default: deny
rules:
  - name: other
    hosts: ["other.switch.example"]
    ports: [81]
  - name: ten-b
    hosts: ["ten.switch.example"]
    ports: [80]
EOF
printf 'default: deny\nrules:\n  - name: broken\n    hosts: [\n' >"$SL_TMP/bad.yaml"

CG=$(sl_cgroup_new switch) || bail_out "cannot make the test cgroup"
# (sl_cgroup_new registers its removal in the subshell of $(…): again here, where it counts)
sl_on_exit "sl_cgroup_remove '$CG'"
RUN=t-$SL_ID-switch
SL_RUNS+=("$RUN")
LOG=$SL_TMP/switch.jsonl
NETNS=/run/netns/$SL_NS_RUN
UP=127.0.0.1:$SL_DNS_PORT

# attach through the CLI where the tree has it, else with the daemon's own request
if "$SLUICE" attach --help >/dev/null 2>&1; then
	out=$("$SLUICE" attach --cgroup "$CG" --policy "$SL_TMP/a.yaml" --run-id "$RUN" \
		--mode report --netns "$NETNS" --upstream "$UP" --log "$LOG" 2>&1) &&
		out='"ok":true'
else
	out=$(python3 - "$SLUICE_SOCKET" "{\"op\":\"attach\",\"run_id\":\"$RUN\",\"cgroup\":\"$CG\",\"policy\":\"$SL_TMP/a.yaml\",\"mode\":\"report\",\"netns\":\"$NETNS\",\"upstream\":\"$UP\",\"log\":\"$LOG\"}" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(60)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
print(s.makefile("rb").readline().decode().rstrip("\n"))
EOF
)
fi
[[ $out == *'"ok":true'* ]] ||
	bail_out "attach failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
tap_ok "the run is attached in report mode"

# in_cg CMD…: CMD in the run's cgroup and the run namespace.
in_cg() { sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" "$@"; }
resolve() { in_cg dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 "$1" | head -n 1; }
rcode() {
	in_cg dig +time=$((2 * SL_SLOW)) +tries=1 @198.51.100.53 "$1" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p'
}

# The client: resolves the three names once, then probes each address in turn, forever,
# appending each result to a file per host.
for h in ten twenty seven; do : >"$SL_TMP/$h.out"; done
# shellcheck disable=SC2016 # the client's own script
in_cg bash -c '
	tmp=$1 probe=$2
	echo $$ >"$tmp/client.pid"
	for h in ten twenty seven; do
		a=$(dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 $h.switch.example | head -n 1)
		eval "addr_$h=\$a"
	done
	echo "$addr_ten $addr_twenty $addr_seven" >"$tmp/addrs"
	while :; do
		for h in ten twenty seven; do
			eval "a=\$addr_$h"
			"$probe" tcp "$a" 80 --timeout-ms 2000 >>"$tmp/$h.out"
		done
		sleep 0.02
	done' client "$SL_TMP" "$SL_PROBE" 2>"$SL_TMP/client.err" &
sl_track_pid $!

wait_until 20000 test -s "$SL_TMP/seven.out" || bail_out "the client did not start"
CLIENT=$(cat "$SL_TMP/client.pid")
tap_is "the client resolved the three names through the run's resolver" \
	"$(cat "$SL_TMP/addrs")" "198.51.100.10 198.51.100.20 203.0.113.7"

# lines HOST: how many results the client has for HOST so far.
lines() { wc -l <"$SL_TMP/$1.out"; }
# shellcheck disable=SC2317 # called through wait_until
has_lines() { [[ $(lines "$1") -ge $2 ]]; }
# after HOST N: wait for 3 results of HOST after the first N (N taken when the switch has
# returned), print those after N + 1 (the one in flight may have started before), unique.
after() {
	local h=$1 n=$2
	wait_until 20000 has_lines "$h" $((n + 3))
	tail -n +$((n + 2)) "$SL_TMP/$h.out" | cut -d' ' -f1-2 | sort | uniq -c |
		awk '{ $1 = ""; print substr($0, 2) }'
}
# no_failure HOST: every result of HOST so far is ok.
no_failure() {
	local bad
	bad=$(grep -v '^ok$' "$SL_TMP/$1.out" | sort | uniq -c | head -n 3)
	if [[ -n $bad ]]; then
		tap_fail "$2" "expected every probe ok; got: $bad"
	else
		tap_ok "$2 ($(lines "$1") probes)"
	fi
}

n=$(lines twenty)
wait_until 20000 has_lines twenty $((n + 2))
tap_is "report mode: the unlisted host is reached" "$(after twenty "$n")" "ok"

# --- report -> enforce ------------------------------------------------------------------------
t0=$(date +%s%N)
out=$("$SLUICE" set-mode --run-id "$RUN" enforce 2>&1)
rc=$?
tap_diag "set-mode took $((($(date +%s%N) - t0) / 1000000)) ms"
n_twenty=$(lines twenty)
tap_check "sluice set-mode enforce succeeds" test "$rc" -eq 0 -a -z "${out##*\"ok\":true*}"
[[ $rc -eq 0 ]] || tap_diag "$out"$'\n'"$(tail -n 5 "$SL_DAEMON_DIR/err")"
tap_is "enforce: the unlisted host is denied from the switch on" "$(after twenty "$n_twenty")" \
	"err EPERM"
after ten "$(lines ten)" >/dev/null
no_failure ten "the host both modes allow never failed across the switch"
no_failure seven "the other listed host never failed either"
tap_is "enforce: the unlisted name no longer resolves" "$(rcode twenty.switch.example)" \
	NXDOMAIN
status=$("$SLUICE" status --json 2>&1)
tap_check "sluice status shows the run in enforce mode" \
	grep -q "\"run_id\":\"$RUN\".*\"mode\":\"enforce\"" <<<"$status"

# --- refused switches change nothing ------------------------------------------------------------
out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/bad.yaml" 2>&1)
rc=$?
tap_check "a policy that does not parse is refused, saying where" \
	test "$rc" -ne 0 -a -z "${out##*bad.yaml:*}"
[[ $rc -ne 0 ]] || tap_diag "$out"
out=$("$SLUICE" replace-policy --run-id "t-$SL_ID-none" "$SL_TMP/b.yaml" 2>&1)
tap_check "a run that is not attached is refused" test -z "${out##*no run t-"$SL_ID"-none*}"
out=$(python3 - "$SLUICE_SOCKET" "{\"op\":\"set_mode\",\"run_id\":\"$RUN\",\"mode\":\"audit\"}" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
print(s.makefile("rb").readline().decode().rstrip("\n"))
EOF
)
tap_check "a mode that does not exist is refused" test -z "${out##*\"ok\":false*mode*}"
n=$(lines seven)
tap_is "after the refusals the old policy still holds" "$(after seven "$n")" "ok"

# --- replace-policy -------------------------------------------------------------------------------
t0=$(date +%s%N)
out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/b.yaml" 2>&1)
rc=$?
tap_diag "replace-policy took $((($(date +%s%N) - t0) / 1000000)) ms"
n_seven=$(lines seven)
tap_check "sluice replace-policy succeeds" test "$rc" -eq 0 -a -z "${out##*\"ok\":true*}"
[[ $rc -eq 0 ]] || tap_diag "$out"$'\n'"$(tail -n 5 "$SL_DAEMON_DIR/err")"
tap_is "the host only the old policy listed is denied from the switch on (its learned address \
was dropped)" "$(after seven "$n_seven")" "err EPERM"
after ten "$(lines ten)" >/dev/null
no_failure ten "the host both policies list never failed across either switch"
tap_is "the name only the old policy listed no longer resolves" \
	"$(rcode seven.switch.example)" NXDOMAIN
tap_is "the name the new policy lists still resolves" "$(resolve ten.switch.example)" \
	198.51.100.10
# The host side (tc on the namespace's veth) judges by the new policy too: a connection made in
# the run's namespace but outside its cgroup, which no cgroup program sees, to the host only the
# old policy listed is dropped there (it was let through, by the old policy's maps, before).
sink_mark
n_tc=$(log_count "$LOG" type=decision hook=tc dst=203.0.113.7 port=80 decision=deny)
"${RUN_EXEC_NETONLY[@]}" timeout 5 python3 -c '
import socket
try:
    socket.create_connection(("203.0.113.7", 80), timeout=2).sendall(b"after-replace\n")
except OSError:
    pass' >/dev/null 2>&1
assert_sink_none "after replace-policy the host side drops what only the old policy allowed" \
	"tcp-accept 203.0.113.7"
wait_until 3000 log_count_at_least "$LOG" $((n_tc + 1)) type=decision hook=tc dst=203.0.113.7 \
	port=80 decision=deny
tap_cmp "the log has the host side's denial of it" \
	"$(log_count "$LOG" type=decision hook=tc dst=203.0.113.7 port=80 decision=deny)" -gt "$n_tc"
status=$("$SLUICE" status --json 2>&1)
tap_check "sluice status shows the new policy's digest" \
	grep -q "\"run_id\":\"$RUN\".*\"policy_sha256\":\"$(sha256sum "$SL_TMP/b.yaml" | cut -c1-64)\"" \
	<<<"$status"

# --- a daemon that dies after a switch: the next one takes the run over under the new policy -------
sl_daemon_kill KILL
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
status=$("$SLUICE" status --json 2>&1)
tap_check "a new daemon takes the switched run over, with the new policy and mode" \
	grep -q "\"run_id\":\"$RUN\".*\"mode\":\"enforce\".*\"policy\":\"$SL_TMP/b.yaml\".*\"policy_sha256\":\"$(sha256sum "$SL_TMP/b.yaml" | cut -c1-64)\"" \
	<<<"$status"
[[ $status == *"\"run_id\":\"$RUN\""* ]] || tap_diag "$status $(tail -n 5 "$SL_DAEMON_DIR/err")"
n_seven=$(lines seven)
tap_is "after the takeover the dropped host stays denied" "$(after seven "$n_seven")" "err EPERM"
tap_is "the new daemon's resolver answers by the new policy" "$(rcode seven.switch.example)" \
	NXDOMAIN
# (its programs and maps found again through the pinned links)
out=$("$SLUICE" set-mode --run-id "$RUN" report 2>&1)
tap_check "a run taken over switches: set-mode report" test -z "${out##*\"ok\":true*}"
[[ $out == *'"ok":true'* ]] || tap_diag "$out $(tail -n 5 "$SL_DAEMON_DIR/err")"
tap_is "… and the dropped host is let through in report mode" "$(after seven "$(lines seven)")" ok
after ten "$(lines ten)" >/dev/null
no_failure ten "the host both policies list never failed, across the takeover too"

# --- the log ----------------------------------------------------------------------------------------
kill "$CLIENT" 2>/dev/null
wait_until 5000 sh -c "! kill -0 $CLIENT 2>/dev/null"
out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "the run detaches" test -z "${out##*\"ok\":true*}"
sha_a=$(sha256sum "$SL_TMP/a.yaml" | cut -c1-64)
sha_b=$(sha256sum "$SL_TMP/b.yaml" | cut -c1-64)
assert_log "the log has the set-mode's policy_change line" "$LOG" 1 type=policy_change \
	"run_id=$RUN" "policy=$SL_TMP/a.yaml" "policy_sha256=$sha_a" mode=enforce \
	"prev_policy_sha256=$sha_a" prev_mode=report
assert_log "the log has the replace-policy's policy_change line" "$LOG" 1 type=policy_change \
	"run_id=$RUN" "policy=$SL_TMP/b.yaml" "policy_sha256=$sha_b" mode=enforce \
	"prev_policy_sha256=$sha_a" prev_mode=enforce
assert_log "the log has the taken-over run's set-mode line" "$LOG" 1 type=policy_change \
	"run_id=$RUN" "policy_sha256=$sha_b" mode=report "prev_policy_sha256=$sha_b" \
	prev_mode=enforce
tap_cmp "no other policy_change line" "$(grep -c '"type":"policy_change"' "$LOG")" -eq 3
# who asked: the client process (sluice set-mode / replace-policy), and its login when it has one
tap_is "each policy_change names the client that asked for it" \
	"$(grep '"type":"policy_change"' "$LOG" | grep -cE '"requested_by":"pid [0-9]+ \(sluice\)')" 3
# the decisions after the replace name the new policy's rule for the carried-over address
pc=$(grep -n '"policy_sha256":"'"$sha_b"'","mode"' "$LOG" | grep policy_change | head -n 1 |
	cut -d: -f1)
tap_check "decisions after the replace name the new policy's rule (ten-b)" \
	sh -c "tail -n +$((pc + 1)) '$LOG' | grep '\"type\":\"decision\"' |
		grep '\"dst\":\"198.51.100.10\"' | grep -q '\"rule\":\"ten-b\"'"
tap_cmp "no anomaly line" "$(grep -c '"type":"anomaly"' "$LOG")" -eq 0
assert_log "the log has the takeover's writer_restart" "$LOG" 1 type=writer_restart
out=$("$SLUICE" verify --key "$SLUICE_PUB" "$LOG" 2>&1)
rc=$?
tap_check "sluice verify: the log is intact" test "$rc" -eq 0
[[ $rc -eq 0 ]] || tap_diag "$out"

tap_done
