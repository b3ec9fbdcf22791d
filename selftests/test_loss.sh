#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Loss is counted, never silent: with the reader stopped and a one-page ring buffer, a flood of
# denied datagrams overflows the buffer; every record the kernel could not queue must come back
# as a "loss" line, and records + lost must equal exactly the number of datagrams attempted.
# The log says which kernel sequence numbers have no line: each loss line bounds the numbers it
# counts (kseq_below), and one loss_ranges line lists them all, which is checked here against
# the numbers absent from the log. A run whose policy logs denials only (log: [deny]) leaves
# every allowed record out: more ranges than a loss_ranges line lists, counted as unlogged.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

FLOOD=2000
policy=$SL_TMP/loss.yaml
log=$SL_TMP/loss.jsonl
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF2

# The workload stops sluice (its parent) so nothing drains the ring, floods, then resumes it.
flood=$(cat <<'PY'
import errno, os, socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
denied = 0
for _ in range(n):
    try:
        s.sendto(b"x", ("198.51.100.20", 9999))
    except PermissionError:
        denied += 1
print(f"denied {denied}")
PY
)
sluice_run "$policy" "$log" --ringbuf-kib 4 -- \
	"${RUN_EXEC[@]}" sh -c 'kill -STOP $PPID; python3 -c "$1" "$2"; rc=$?; kill -CONT $PPID; exit $rc' \
	sh "$flood" "$FLOOD"

assert_rc "flood workload exits 0" 0
tap_check "every datagram was refused (workload saw $FLOOD EPERMs)" grep -qx "denied $FLOOD" "$SL_OUT"
tap_check "log is well formed, chained and signed from log_start to its seal" log_well_formed "$log"
assert_sink_none "nothing of the flood reached the test host" 'udp 198.51.100.20 9999'

summary=$(python3 - "$log" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
end = next(r for r in reversed(recs) if r.get("type") == "run_end")
loss = sum(r["count"] for r in recs if r.get("type") == "loss")
decisions = sum(1 for r in recs if r.get("type") == "decision")
anomalies = sum(1 for r in recs if r.get("type") == "anomaly")
print(end.get("records", -1), end.get("lost", -1), loss, decisions, anomalies, end.get("kseq_next", -1),
      end.get("unlogged", -1))
PY
)
read -r records lost loss_lines decisions anomalies kseq_next unlogged <<<"$summary"
tap_cmp "records were lost (a 4 KiB ring cannot hold $FLOOD)" "$lost" -gt 0
tap_is "loss lines add up to run_end.lost" "$loss_lines" "$lost"
tap_is "records + lost = datagrams attempted" "$((records + lost))" "$FLOOD"
tap_is "every received record is a decision line" "$decisions" "$records"
tap_is "kernel sequence numbers all accounted for" "$kseq_next" "$FLOOD"
tap_is "no anomaly lines" "$anomalies" 0
tap_check "stderr reports the loss" grep -q 'records lost (ring buffer full)' "$SL_ERR"
tap_check "nothing of the run is left" leftovers_check "$SL_RUN_ID"

# kseq_below: never down, at least the records declared so far, at most run_end.kseq_next.
below=$(python3 - "$log" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1], "rb")]
end = next(r for r in recs if r["type"] == "run_end")
last, declared = 0, 0
for r in (r for r in recs if r["type"] == "loss"):
    declared += r["count"]
    kb = r.get("kseq_below")
    if not isinstance(kb, int) or not declared <= kb <= end["kseq_next"] or kb < last:
        sys.exit(f"loss line {r['seq']}: kseq_below {kb}, after {last}, {declared} declared, "
                 f"kseq_next {end['kseq_next']}")
    last = kb
print(last)
PY
)
tap_cmp "each loss line bounds its records: declared <= kseq_below <= kseq_next" "${below:-x}" -ge 1
if tap_check "loss_ranges lists exactly the kernel sequence numbers absent from the log" \
	loss_ranges_of "$log"; then
	read -r missing _ listed truncated <<<"$(loss_ranges_of "$log")"
	tap_is "... and counts them: lost + unlogged" "$missing" "$((lost + unlogged))"
	tap_is "... all listed (not truncated)" "$truncated" false
	tap_cmp "... in at least one range" "$listed" -ge 1
else
	sluice_diag "$log"
fi
verify_out=$("$SLUICE" verify "$log" --json)
tap_is "sluice verify: declared loss (exit 3)" "$?" 3
tap_check "... having compared the loss_ranges line with the log" \
	grep -q '"loss_ranges_line":[0-9]' <<<"$verify_out"

# log: [deny], a datagram allowed (a new socket each) then one denied, 300 times, the reader
# running: 300 allowed records with no line, each between two denied ones.
N=300
policy_d=$SL_TMP/deny-only.yaml
log_d=$SL_TMP/deny-only.jsonl
cat >"$policy_d" <<'EOF2'
default: deny
log: [deny]
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [9999]
    protocols: [udp]
EOF2
alternate=$(cat <<'PY'
import socket, sys
denied = 0
for _ in range(int(sys.argv[1])):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a:
        a.sendto(b"x", ("198.51.100.10", 9999))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as d:
        try:
            d.sendto(b"x", ("198.51.100.20", 9999))
        except PermissionError:
            denied += 1
print(f"denied {denied}")
PY
)
sluice_run "$policy_d" "$log_d" -- "${RUN_EXEC[@]}" python3 -c "$alternate" "$N"
assert_rc "log: [deny] workload exits 0" 0
tap_check "every second datagram was refused" grep -qx "denied $N" "$SL_OUT"
tap_check "log: [deny]: log well formed (its kseq accounting included)" log_well_formed "$log_d"
read -r unlogged_d lost_d <<<"$(python3 -c '
import json, sys
end = [json.loads(l) for l in open(sys.argv[1], "rb")][-2]
print(end.get("unlogged", -1), end.get("lost", -1))' "$log_d")"
tap_cmp "log: [deny]: run_end counts the allowed records as unlogged" "${unlogged_d:-0}" -ge "$N"
if tap_check "log: [deny]: loss_ranges lists exactly the kseqs absent from the log" \
	loss_ranges_of "$log_d"; then
	read -r missing nranges listed truncated <<<"$(loss_ranges_of "$log_d")"
	tap_is "... counts them: lost + unlogged" "$missing" "$((lost_d + unlogged_d))"
	tap_cmp "... more ranges than one line lists" "$nranges" -gt 256
	tap_is "... so the first 256 are listed, truncated" "$listed $truncated" "256 true"
else
	sluice_diag "$log_d"
fi
"$SLUICE" verify "$log_d" >/dev/null
tap_is "sluice verify: unlogged records only: intact and complete (exit 0)" "$?" 0
tap_check "nothing of the log: [deny] run is left" leftovers_check "$SL_RUN_ID"

# Strict evidence: a datagram the ring buffer has no room to record is refused, so every one
# that left has its allow line. Each goes from a new socket (an allow is recorded once per
# socket and destination). Without --strict-evidence the same flood all leaves, with loss.
allowing=$SL_TMP/allowing.yaml
cat >"$allowing" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [9999]
    protocols: [udp]
EOF2
allowed_flood=$(cat <<'PY'
import os, socket, sys
n = int(sys.argv[1])
sent = refused = 0
for _ in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"x", ("198.51.100.10", 9999))
        sent += 1
    except PermissionError:
        refused += 1
    s.close()
print(f"sent {sent} refused {refused}")
PY
)
for strict in yes no; do
	log=$SL_TMP/strict-$strict.jsonl
	extra=()
	[[ $strict == yes ]] && extra=(--strict-evidence)
	sluice_run "$allowing" "$log" --ringbuf-kib 4 "${extra[@]}" -- \
		"${RUN_EXEC[@]}" sh -c 'kill -STOP $PPID; python3 -c "$1" "$2"; rc=$?; kill -CONT $PPID; exit $rc' \
		sh "$allowed_flood" "$FLOOD"
	read -r _ sent _ refused <"$SL_OUT"
	allows=$(log_count "$log" type=decision hook=sendmsg4 decision=allow)
	lost=$(log_field "$(log_lines "$log" type=run_end)" lost)
	tap_check "strict=$strict: log is well formed, chained and signed" log_well_formed "$log"
	if [[ $strict == yes ]]; then
		tap_cmp "strict: some datagrams were refused (no room to record them)" "${refused:-0}" -gt 0
		tap_is "strict: every datagram that left has its allow line" "$allows" "$sent"
		tap_is "strict: the refused ones are the records lost" "$lost" "$refused"
		tap_check "strict: run_start says so" grep -q '"strict_evidence":true' "$log"
	else
		tap_is "not strict: every datagram left" "$sent" "$FLOOD"
		tap_is "not strict: allow lines + lost = datagrams" "$((allows + lost))" "$FLOOD"
	fi
	tap_check "strict=$strict: nothing of the run is left" leftovers_check "$SL_RUN_ID"
done

# Strict evidence and a socket connected again while the ring buffer is full: the kernel leaves
# a refused connect()'s socket as it was, so its state must stay as it was too. Socket u, on a
# capped rule, connects again to the same place; socket h holds the denial of 203.0.113.7 and
# connects to the allowed one. Both are refused (no room for their records), and then u must
# still be counted and cut at its cap, and h's sends still refused as its held denial says:
# neither may be left connected with no state, uncapped (u) or let out (h; the backstop, off
# here, would otherwise drop h's datagrams in its stead).
capped_udp=$SL_TMP/capped-udp.yaml
cat >"$capped_udp" <<'EOF2'
default: deny
rules:
  - name: capped-udp
    cidrs: ["198.51.100.10/32"]
    ports: [9999]
    protocols: [udp]
    max_request_bytes: 65_536
EOF2
reconnect=$(cat <<'PY'
import os, signal, socket, sys, time
ppid = int(sys.argv[1])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect(("198.51.100.10", 9999))
h = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
h.connect(("203.0.113.7", 9999))
time.sleep(0.5)  # both records read
os.kill(ppid, signal.SIGSTOP)
f = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(200):
    try:
        f.sendto(b"x", ("198.51.100.20", 9999))
    except OSError:
        pass
out = []
for s in (u, h):
    try:
        s.connect(("198.51.100.10", 9999))
        out.append("ok")
    except OSError as e:
        out.append(str(e.errno))
os.kill(ppid, signal.SIGCONT)
time.sleep(0.5)
for s in (u, h):
    sent = 0
    for _ in range(100):
        try:
            s.send(b"y" * 1000)
            sent += 1000
        except OSError:
            break
    out.append(str(sent))
print(" ".join(out))
PY
)
log=$SL_TMP/strict-reconnect.jsonl
SLUICE_SELFTEST_NO_BACKSTOP=1 sluice_run "$capped_udp" "$log" --ringbuf-kib 4 --strict-evidence -- \
	"${RUN_EXEC[@]}" sh -c 'python3 -c "$1" $PPID' sh "$reconnect"
read -r u_conn h_conn u_sent h_sent <"$SL_OUT"
tap_is "strict, ring full: both connect()s again are refused (EPERM)" "$u_conn $h_conn" "1 1" ||
	sluice_diag "$log"
tap_cmp "strict, re-connect refused: the capped socket is still cut at its cap" "${u_sent:-999999}" \
	-le 65536
sink_settle
tap_cmp "… the test host got no more than the cap (1000-byte datagrams)" \
	"$(sink_count 'udp 198.51.100.10 9999')" -le 65
tap_cmp "… its flow is cut and on record" \
	"$(log_count "$log" type=flow_cut cap=max_request_bytes rule=capped-udp dst=198.51.100.10)" -eq 1
tap_is "strict, re-connect refused: the held denial still refuses the sends" "${h_sent:-x}" 0
assert_sink_none "… nothing reached 203.0.113.7" 'udp 203.0.113.7 9999'
tap_cmp "… its denial is on record (connect4, when it first sent)" \
	"$(log_count "$log" type=decision hook=connect4 decision=deny dst=203.0.113.7)" -ge 1
tap_check "strict, re-connect refused: log well formed (kseqs all accounted for)" \
	log_well_formed "$log"
tap_check "strict, re-connect refused: nothing of the run is left" leftovers_check "$SL_RUN_ID"

tap_done
