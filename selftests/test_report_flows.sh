#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Report mode's would-be denials carry bytes: a connection the policy denies, let through by
# mode: report, is a flow like an allowed one (counted by the packet layer, one "flow" line when
# its socket is released), marked decision deny / enforced false / reason, with no rule's cap and
# no "allow where" alert. Both verifiers accept the log; suggest shows those bytes and proposes
# caps from them; replay judges a cap against them. Before, such a connection left no flow line:
# a report-only phase under default: deny measured nothing of what it would refuse.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

# 198.51.100.10 is listed on 9999/tcp only: TCP to port 80 and UDP to port 9999 are denials that
# report mode lets through. The cap on the listed rule must not touch the denials' flows.
policy=$SL_TMP/report.yaml
cat >"$policy" <<'EOF'
default: deny
mode: report
alert_on: ["allow where request_bytes > 100_000"]
rules:
  - name: tcp-only
    cidrs: ["198.51.100.10/32"]
    ports: [9999]
    protocols: [tcp]
    max_request_bytes: 10
EOF
log=$SL_TMP/report.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
s = socket.create_connection(('198.51.100.10', 80), timeout=5)
s.sendall(b'x' * 200000)
s.shutdown(socket.SHUT_WR)
got = 0
while True:
    b = s.recv(65536)
    if not b:
        break
    got += len(b)
s.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect(('198.51.100.10', 9999))
for n in (100, 200, 300):
    u.send(b'u' * n)
u.close()
print('sent 200000 recv', got)
"
read -r _ sent _ recv <"$SL_OUT"
tap_is "report mode: the run succeeds and the TCP exchange completes" "$SL_RC $sent" "0 200000" ||
	sluice_diag "$log"
sink_bytes=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
	awk '$1 == "tcp" && $2 == "198.51.100.10" && $3 == 80 { print $5 }')
tap_is "report mode: the test host received the 200000 bytes" "$sink_bytes" 200000
tap_cmp "report mode: the connect was logged as a would-be denial" \
	"$(log_count "$log" type=decision dst=198.51.100.10 port=80 decision=deny enforced=false)" -eq 1

tcp=$(log_lines "$log" type=flow dst=198.51.100.10 port=80 proto=tcp)
tap_cmp "the would-be denial has one flow line" "$(grep -c . <<<"$tcp")" -eq 1 ||
	sluice_diag "$log"
tap_is "its flow line: decision deny, enforced false, reason default_deny, rule default" \
	"$(for k in decision enforced reason rule; do log_field "$tcp" $k; done | tr '\n' ' ')" \
	"deny false default_deny default "
tap_is "its flow line counts what was sent" "$(log_field "$tcp" req_bytes)" "$sent"
tap_is "... and what was received" "$(log_field "$tcp" resp_bytes)" "$recv"
udp=$(log_lines "$log" type=flow dst=198.51.100.10 port=9999 proto=udp)
tap_is "a connected UDP would-be denial: its flow counts the 600 bytes, marked deny" \
	"$(log_field "$udp" req_bytes) $(log_field "$udp" decision) $(log_field "$udp" enforced)" \
	"600 deny false"
tap_cmp "no rule's cap cut the would-be denials' flows" "$(log_count "$log" type=flow_cut)" -eq 0
tap_cmp "no 'allow where' alert for a flow the policy denies" "$(log_count "$log" type=alert)" -eq 0
tap_check "sluice verify accepts the log" "$SLUICE" verify "$log"
tap_check "the second verifier (sl_logcheck) accepts it" log_well_formed "$log"

# suggest: the address's commented rule shows the bytes, says report mode, and proposes caps
S=$SL_TMP/suggested.yaml
"$SLUICE" policy suggest "$log" -o "$S" >"$SL_TMP/suggest.out" 2>&1
tap_is "suggest: exits 0" "$?" 0 || tap_diag_file "$SL_TMP/suggest.out"
tap_diag_file "$S"
tap_check "suggest: the bytes the would-be denials carried are in the comments" \
	grep -Eq '^#.*bytes: 200_600 sent, [0-9_]+ received in 2 flows' "$S"
tap_check "suggest: ... said as denied in report mode only" \
	grep -Eq '^#.*of which denied in report mode only: 200_600 sent, [0-9_]+ received in 2 flows' "$S"
tap_check "suggest: a max_request_bytes is proposed from the 200000-byte flow" \
	grep -Eq '^#.*# max_request_bytes: [0-9_]+ +# largest observed 200_000' "$S"

# replay: a policy allowing the address with a cap below what the flow carried cuts it
capped=$SL_TMP/capped.yaml
cat >"$capped" <<'EOF'
default: deny
rules:
  - name: web
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    max_request_bytes: 1000
  - name: udp
    cidrs: ["198.51.100.10/32"]
    ports: [9999]
    protocols: [udp]
EOF
"$SLUICE" policy replay "$capped" "$log" >"$SL_TMP/replay.out" 2>&1
rc=$?
tap_check "replay: the cap is judged against the would-be denial's bytes (exit 1, a cut)" \
	bash -c "[[ $rc == 1 ]] && grep -Eq '^cut +198\.51\.100\.10 +80/tcp .*max_request_bytes 1000 < 200000 sent' '$SL_TMP/replay.out'" ||
	tap_diag_file "$SL_TMP/replay.out"

# report: the would-deny flow is drawn as one and its bytes are in the host table
"$SLUICE" report "$log" -o "$SL_TMP/report.html" >"$SL_TMP/report.out" 2>&1
tap_check "report: the page draws the would-be denial's flow (class would)" \
	grep -q '<rect class="would"' "$SL_TMP/report.html" || tap_diag_file "$SL_TMP/report.out"
assert_no_leftovers "nothing left"

tap_done
