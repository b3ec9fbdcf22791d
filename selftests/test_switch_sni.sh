#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A switch's re-judge of open TCP flows the new policy allows through a name alone
# (userspace/preexisting.c judge_server_name): each is judged as a connect() to its destination
# now would be. p1 allows 198.51.100.10 on 80 and 443 by address; p2 allows it only as
# ten.switch.example. After replace-policy p1 -> p2 (enforce):
#   P  plain TCP on 80, nothing sent yet: stays open, its plain first payload passes (a connect()
#      off the TLS port gets the same); the line names the rule, not "default"
#   K  plain TCP on 80 already in use (keep-alive): stays open, its next plain payload passes
#   B  TCP on 80 already in use, its first payload plain, its next one beginning with a TLS
#      record type (0x17): stays open and passes, as after a connect() (only a first payload
#      that begins like TLS is judged off the TLS port)
#   Q  TCP on the TLS port, nothing sent yet: stays open, and its first payload is checked by
#      the egress program (not a ClientHello: denied there)
#   T  on the TLS port, whose ClientHello (for a name p2 does not list) went out under p1
#      unchecked: denied sni_unchecked and destroyed; its flow line says the denial was
#      enforced
# And a run another build started (a map of it laid out otherwise: SLUICE_SELFTEST_MAP_WIDER),
# taken over by this build's daemon: replace-policy p1 -> p2 is refused, naming the map and both
# shapes (the client's reply and the daemon's stderr), and the run goes on under p1. The same
# for the maps the switch reads before it loads (sl_rule_budget, sl_host_bytes: refused before
# they are read into this build's structs), another build's stood for by
# SLUICE_SELFTEST_SHAPE_WIDER. A take-over of a run whose pinned map (sl_learned4) is of another
# shape is refused, the map and both shapes said, and the run goes on enforcing p1.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

command -v dig >/dev/null || skip_all "dig not installed"
dns_upstream_start upstream --host-record=ten.switch.example,198.51.100.10 ||
	bail_out "cannot start dnsmasq"
sl_on_exit dns_upstream_stop
sl_daemon_start || bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"

cat >"$SL_TMP/p1.yaml" <<'EOF'
default: deny
rules:
  - name: net
    cidrs: ["198.51.100.10/32"]
    ports: [80, 443]
  - name: named81
    hosts: ["ten.switch.example"]
    ports: [81]
EOF
cat >"$SL_TMP/p2.yaml" <<'EOF'
default: deny
rules:
  - name: named
    hosts: ["ten.switch.example"]
    ports: [80, 443]
EOF

sl_daemon_attach swsni "$SL_TMP/p1.yaml" --mode enforce \
	--netns "/run/netns/$SL_NS_RUN" --upstream "127.0.0.1:$SL_DNS_PORT"
CG=$SL_ATT_CG RUN=$SL_ATT_RUN LOG=$SL_ATT_LOG
tap_ok "the run is attached"
addr=$(sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" dig +time=$((2 * SL_SLOW)) +tries=1 +short \
	@198.51.100.53 ten.switch.example | head -n 1)
tap_is "the run's resolver answers ten.switch.example" "$addr" 198.51.100.10

mkdir -p "$SL_TMP/h" "$SL_TMP/k" "$SL_TMP/t"
sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" python3 "$SL_LIB_DIR/tools/sl_hold.py" "$SL_TMP/k" \
	--early "GET /1 HTTP/1.1" --tag "GET /2 HTTP/1.1" K:tcp:198.51.100.10:80 2>"$SL_TMP/k/err" &
sl_track_pid "$!"
mkdir -p "$SL_TMP/b"
sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" python3 "$SL_LIB_DIR/tools/sl_hold.py" "$SL_TMP/b" \
	--early "HELLO binary" --tag $'\x17\x03\x03binary' B:tcp:198.51.100.10:80 \
	2>"$SL_TMP/b/err" &
sl_track_pid "$!"
sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" python3 "$SL_LIB_DIR/tools/sl_hold.py" "$SL_TMP/h" \
	--tag "GET / HTTP/1.0" P:tcp:198.51.100.10:80 Q:tcp:198.51.100.10:443 2>"$SL_TMP/h/err" &
sl_track_pid "$!"
sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" python3 "$SL_LIB_DIR/tools/sl_tlshold.py" \
	"$SL_TMP/t" 198.51.100.10 T:443:elsewhere.example 2>"$SL_TMP/t/err" &
sl_track_pid "$!"
wait_until 20000 test -e "$SL_TMP/h/ready" || bail_out "not ready: $(cat "$SL_TMP/h/err")"
wait_until 20000 test -e "$SL_TMP/k/ready" || bail_out "not ready: $(cat "$SL_TMP/k/err")"
wait_until 20000 test -e "$SL_TMP/b/ready" || bail_out "not ready: $(cat "$SL_TMP/b/err")"
wait_until 20000 test -e "$SL_TMP/t/ready" || bail_out "not ready: $(cat "$SL_TMP/t/err")"

out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/p2.yaml" 2>&1)
tap_check "replace-policy succeeds" test -z "${out##*\"ok\":true*}"
for d in h k b t; do
	touch "$SL_TMP/$d/go"
	wait_until 20000 test -e "$SL_TMP/$d/result" ||
		bail_out "the holder did not answer: $(cat "$SL_TMP/$d/err")"
done
res=$(cat "$SL_TMP/h/result" "$SL_TMP/k/result" "$SL_TMP/b/result" "$SL_TMP/t/result")
tap_diag "after replace-policy: $(tr '\n' ' ' <<<"$res")"
sent() { sed -n "s/^$1 //p" <<<"$res"; }

tap_is "P: a plain-HTTP flow off the TLS port stays open across the switch" "$(sent P)" ok
tap_is "K: a plain-HTTP flow already in use stays open, its next request passes" "$(sent K)" ok
tap_is "B: a flow in use whose next payload begins like TLS stays open, as after a connect()" \
	"$(sent B)" ok
tap_is "P, K, B: the re-judge allows them by the host rule, as a connect() now" \
	"$(log_count "$LOG" type=preexisting port=80 decision=allow rule=named flow=open)" 3 ||
	tap_diag_file "$LOG"
tap_is "Q: a TLS-port flow that sent nothing yet is left open by the re-judge" \
	"$(log_count "$LOG" type=preexisting port=443 decision=allow rule=named flow=open)" 1 ||
	tap_diag_file "$LOG"
tap_is "Q: ... and its first payload (not a ClientHello) is judged by the egress program" \
	"$(log_count "$LOG" type=tls port=443 decision=deny enforced=true reason=sni_unparseable)" \
	1 || tap_diag_file "$LOG"
# the server-name check's denial is the flow's: its flow line says deny, not its connect's allow
q_cookie=$(log_field "$(log_lines "$LOG" type=tls port=443 decision=deny)" sock_cookie \
	2>/dev/null || echo none)
q_flow_logged() { test "$(log_count "$LOG" type=flow sock_cookie="$q_cookie")" -ge 1; }
wait_until 10000 q_flow_logged
tap_is "Q: its flow line says deny, enforced, for the server-name check's reason" \
	"$(log_count "$LOG" type=flow sock_cookie="$q_cookie" decision=deny enforced=true \
		reason=sni_unparseable)" 1 || tap_diag_file "$LOG"
tap_check "T: a flow whose ClientHello went out unchecked is cut" test "$(sent T)" != ok
t_line=$(log_lines "$LOG" type=preexisting port=443 decision=deny enforced=true \
	reason=sni_unchecked rule=named flow=destroyed)
tap_is "T: denied sni_unchecked, under the rule its address matched, and destroyed" \
	"$(grep -c . <<<"$t_line")" 1 || tap_diag_file "$LOG"
cookie=$(log_field "$t_line" sock_cookie 2>/dev/null || echo none)
flow_logged() { test "$(log_count "$LOG" type=flow sock_cookie="$cookie")" -ge 1; }
wait_until 10000 flow_logged
tap_is "T: its flow line says the denial was enforced" \
	"$(log_count "$LOG" type=flow sock_cookie="$cookie" decision=deny enforced=true \
		reason=sni_unchecked)" 1 || tap_diag_file "$LOG"

new=$(sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" python3 -c "
import socket
s = socket.create_connection(('198.51.100.10', 80), timeout=5)
s.sendall(b'GET / HTTP/1.0\r\n\r\n')
print('ok')" 2>&1)
tap_is "a new plain-HTTP connect() under p2 goes through, as P did" "$new" ok

out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "the run detaches" test -z "${out##*\"ok\":true*}"
out=$("$SLUICE" verify --key "$SLUICE_PUB" "$LOG" 2>&1)
rc=$?
tap_check "sluice verify: the log is intact" test "$rc" -eq 0
[[ $rc -eq 0 ]] || tap_diag "$out"

# --- SLUICE_SELFTEST_MAP_WIDER widens only a map the programs alone touch: a map userspace reads
# (its own reads would copy past its variables), an internal map and an unknown name are
# refused at load, named; "" is unset.
# wider_run NAME: rc and stderr of a run of `true` under p1 with SLUICE_SELFTEST_MAP_WIDER=NAME
wider_run() {
	SLUICE_SELFTEST_MAP_WIDER=$1 "$SLUICE" run --policy "$SL_TMP/p1.yaml" \
		--run-id "t-$SL_ID-widen" --log "$SL_TMP/widen.jsonl" -- true 2>&1
	echo "rc=$?"
	rm -f "$SL_TMP/widen.jsonl"*
}
for bad in "sl_rule_budget:not one the programs alone touch" \
	"sl_host_bytes:not one the programs alone touch" \
	".data.cfg:an internal map" "sl_no_such_map:this build has no map of that name"; do
	out=$(wider_run "${bad%%:*}")
	tap_check "SLUICE_SELFTEST_MAP_WIDER=${bad%%:*}: refused, saying why" \
		grep -q "^sluice: SLUICE_SELFTEST_MAP_WIDER=${bad%%:*}: ${bad#*:}" <<<"$out" ||
		tap_diag "$out"
	tap_check "SLUICE_SELFTEST_MAP_WIDER=${bad%%:*}: the run does not start" \
		test "${out##*rc=}" -ne 0
done
out=$(wider_run "")
tap_is "SLUICE_SELFTEST_MAP_WIDER=\"\": unset, the run runs" "${out##*rc=}" 0 || tap_diag "$out"

# --- a run another build of sluice started, one of its maps laid out otherwise, taken over by
# this build's daemon (which finds the run's maps through its programs): replace-policy is
# refused, naming the map and both shapes, and the run goes on under p1. The other build is
# this one with SLUICE_SELFTEST_MAP_WIDER: the attaching daemon loads sl_flow_scratch (the
# packet layer's alone, so checked by next_share) 8 bytes wider than this build declares it.
sl_daemon_kill TERM
SLUICE_SELFTEST_MAP_WIDER=sl_flow_scratch sl_daemon_start ||
	bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
sl_daemon_attach wider "$SL_TMP/p1.yaml" --mode enforce --netns "/run/netns/$SL_NS_RUN"
CG=$SL_ATT_CG RUN=$SL_ATT_RUN LOG=$SL_ATT_LOG
sl_daemon_kill TERM
sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
sha_p1=$(sha256sum "$SL_TMP/p1.yaml" | cut -c1-64)
# taken_over: the daemon lists the run, under p1
taken_over() {
	"$SLUICE" status --json 2>/dev/null |
		grep -q "\"run_id\":\"$RUN\".*\"policy_sha256\":\"$sha_p1\""
}
wait_until 10000 taken_over
tap_check "another build's run: this build's daemon takes it over, under p1" taken_over ||
	tap_diag "$(tail -n 5 "$SL_DAEMON_DIR/err")"
out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/p2.yaml" 2>&1)
tap_check "another build's run: replace-policy is refused" test -n "${out##*\"ok\":true*}"
# shape_re MAP: the refusal of a run's MAP of another shape; BASH_REMATCH 1-4 the run's type,
# key and value sizes and flags, 5-8 this build's
shape_re() {
	printf '%s' "the run's map $1 is of another build \\(type ([0-9]+), key ([0-9]+), value "
	printf '%s' "([0-9]+) bytes, flags (0|0x[0-9a-f]+); this build's ([0-9]+), ([0-9]+), "
	printf '%s' "([0-9]+), (0|0x[0-9a-f]+)\\)"
}
# refused_wider WHAT MAP OUT DELTA: OUT refuses MAP as one DELTA bytes wider in value than this
# build's (the run's minus this build's), of the same type, key size and flags
refused_wider() {
	local re name="$1: the refusal names $2, the run's value $4 bytes off this build's, all else \
the same"
	re=$(shape_re "$2")
	if [[ $3 =~ $re ]]; then
		tap_is "$name" \
			"${BASH_REMATCH[1]} ${BASH_REMATCH[2]} $((BASH_REMATCH[3] - BASH_REMATCH[7]))
${BASH_REMATCH[4]}" "${BASH_REMATCH[5]} ${BASH_REMATCH[6]} $4
${BASH_REMATCH[8]}"
	else
		tap_fail "$name" "expected the refusal to say: $re"$'\n'"got: $3"
	fi
}
refused_wider "another build's run" sl_flow_scratch "$out" 8
tap_check "another build's run: the daemon's stderr has the refusal" \
	grep -q "^sluice daemon: run $RUN: switch refused: load the new programs: the run's map \
sl_flow_scratch is of another build" "$SL_DAEMON_DIR/err" ||
	tap_diag "$(tail -n 5 "$SL_DAEMON_DIR/err")"
# reach HOST: ok, or err ERRNO, of a connect() to HOST:80 from a process of the run (p1 allows
# 198.51.100.10 by its address, p2 only by a name the process did not resolve)
reach() {
	sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp "$1" 80 --timeout-ms 2000 |
		cut -d' ' -f1-2
}
tap_is "another build's run: p1 still holds: 198.51.100.10 is reached by its address" \
	"$(reach 198.51.100.10)" ok
tap_is "another build's run: ... and 198.51.100.20 is denied" "$(reach 198.51.100.20)" \
	"err EPERM"
tap_is "another build's run: the log has no switch" \
	"$(grep -c '"type":"policy_\(switch_begin\|change\)"' "$LOG")" 0

# --- the maps a switch reads before it loads anything (sl_rule_budget's values into a __u32,
# sl_host_bytes' keys into a struct sl_host_key), of another shape: refused before they are
# read, naming the map. SLUICE_SELFTEST_MAP_WIDER widens no map userspace reads (its own reads
# would overflow): the taking-over daemon is told with SLUICE_SELFTEST_SHAPE_WIDER that this
# build's MAP is 8 bytes wider, so the run holds it 8 bytes narrower, as an older build would.
for map in sl_rule_budget sl_host_bytes; do
	sl_daemon_kill TERM
	SLUICE_SELFTEST_SHAPE_WIDER=$map sl_daemon_start ||
		bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
	wait_until 10000 taken_over
	tap_check "$map of another shape: the daemon takes the run over" taken_over ||
		tap_diag "$(tail -n 5 "$SL_DAEMON_DIR/err")"
	out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/p2.yaml" 2>&1)
	tap_check "$map of another shape: replace-policy is refused" \
		test -n "${out##*\"ok\":true*}"
	tap_check "$map of another shape: refused as the switch reads it" \
		grep -q "read the [a-z' ]* ($map): the run's map $map is of" <<<"$out" ||
		tap_diag "got: $out"
	refused_wider "$map of another shape" "$map" "$out" -8
	tap_check "$map of another shape: the daemon's stderr has the refusal" \
		grep -q "^sluice daemon: run $RUN: switch refused: .*the run's map $map is of" \
		"$SL_DAEMON_DIR/err" || tap_diag "$(tail -n 5 "$SL_DAEMON_DIR/err")"
	tap_is "$map of another shape: p1 still holds (198.51.100.20 denied)" \
		"$(reach 198.51.100.20)" "err EPERM"
	tap_is "$map of another shape: the log has no switch" \
		"$(grep -c '"type":"policy_\(switch_begin\|change\)"' "$LOG")" 0
done
# --- a take-over of a run one of whose pinned maps is of another shape (map-learned4, the
# addresses its resolver learned, which a take-over reads back): refused before anything of the
# run is read, the map and both shapes on the daemon's stderr; the run, left as it was found,
# goes on enforcing p1. A daemon of this build takes it over again.
sl_daemon_kill TERM
err_lines=$(wc -l <"$SL_DAEMON_DIR/err")
SLUICE_SELFTEST_SHAPE_WIDER=sl_learned4 sl_daemon_start ||
	bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
# (the daemon answers once its adoption of the runs it found is done)
err=$(tail -n +$((err_lines + 1)) "$SL_DAEMON_DIR/err")
tap_check "pinned sl_learned4 of another shape: the take-over is refused" \
	grep -q "^sluice daemon: take over run $RUN: run $RUN: its pinned maps are not this \
build's" <<<"$err" || tap_diag "$err"
tap_check "pinned sl_learned4 of another shape: the daemon does not list the run" \
	test -z "$("$SLUICE" status --json 2>/dev/null | grep "\"run_id\":\"$RUN\"")"
refused_wider "pinned sl_learned4 of another shape" sl_learned4 \
	"$(grep "^sluice: [^ ]*/map-learned4: " <<<"$err")" -8
tap_is "pinned sl_learned4 of another shape: the run still enforces (198.51.100.20 denied)" \
	"$(reach 198.51.100.20)" "err EPERM"
tap_is "pinned sl_learned4 of another shape: ... under p1 (198.51.100.10 reached)" \
	"$(reach 198.51.100.10)" ok
sl_daemon_kill TERM
sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
wait_until 10000 taken_over
tap_check "this build's daemon again: it takes the run over" taken_over ||
	tap_diag "$(tail -n 5 "$SL_DAEMON_DIR/err")"
out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "another build's run: it detaches" test -z "${out##*\"ok\":true*}"
tap_done
