#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Flows in the log: every allowed connected flow ends as one "flow" line with the payload bytes
# it carried each way and its duration, in the seed's shape; the counts must equal what the test
# host received and what the client read. A flow still open when the run ends is recorded too.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

policy=$SL_TMP/flows.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [80, 9999]
EOF2

# flow_field LOG KEY [FILTER…]: KEY of the one flow line matching the filters
flow_field() {
	local log=$1 key=$2 line
	shift 2
	line=$(log_lines "$log" type=flow "$@")
	[[ $(grep -c . <<<"$line") -eq 1 ]] || { echo "(${line:+several}${line:-no} flow lines)"; return; }
	log_field "$line" "$key"
}

for fam in v4 v6; do
	addr=198.51.100.10
	[[ $fam == v6 ]] && addr=2001:db8::10
	log=$SL_TMP/tcp-$fam.jsonl
	sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket, sys
s = socket.create_connection(('$addr', 80), timeout=5)
s.sendall(b'x' * 200000)
s.shutdown(socket.SHUT_WR)
got = 0
while True:
    b = s.recv(65536)
    if not b:
        break
    got += len(b)
s.close()
print('sent 200000 recv', got)
"
	read -r _ sent _ recv <"$SL_OUT"
	sink_bytes=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk -v a="$addr" '$1 == "tcp" && $2 == a && $3 == 80 { print $5 }')
	tap_is "tcp $fam: the test host received the 200000 bytes sent" "$sink_bytes" 200000
	tap_is "tcp $fam: the flow line counts what was sent" \
		"$(flow_field "$log" req_bytes dst="$addr" port=80 proto=tcp)" "$sent"
	tap_is "tcp $fam: and what was received" \
		"$(flow_field "$log" resp_bytes dst="$addr" port=80 proto=tcp)" "$recv"
	tap_is "tcp $fam: the flow names its rule" \
		"$(flow_field "$log" rule dst="$addr" port=80)" test-host
	tap_check "tcp $fam: the flow has a duration" \
		bash -c "[[ '$(flow_field "$log" duration_ms dst="$addr")' =~ ^[0-9]+$ ]]"
	assert_no_leftovers "tcp $fam: nothing left"
done

# Connected UDP: each datagram counts whole.
log=$SL_TMP/udp.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(('198.51.100.10', 9999))
for n in (100, 200, 300):
    s.send(b'u' * n)
s.close()
"
tap_cmp "udp: the test host got the three datagrams" "$(sink_count 'udp 198.51.100.10 9999')" -eq 3
tap_is "udp: the flow line counts 600 bytes sent" \
	"$(flow_field "$log" req_bytes dst=198.51.100.10 port=9999 proto=udp)" 600

# A flow still open when the command ends: the daemon holding it is killed with the run, and its
# flow is recorded before run_end.
log=$SL_TMP/open.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" sh -c '
python3 -c "
import os, socket, time
s = socket.create_connection((\"198.51.100.10\", 80), timeout=5)
s.sendall(b\"hold\")
if os.fork() == 0:
    time.sleep(60)
" &
sleep 1'
tap_is "open flow: recorded at run end with what it sent" \
	"$(flow_field "$log" req_bytes dst=198.51.100.10 port=80)" 4
tap_check "open flow: the log ends with run_end" log_well_formed "$log"
assert_no_leftovers "open flow: nothing left"

# The resolver redirect is not a flow; a denied connect is not either.
log=$SL_TMP/none.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" "$SL_PROBE" tcp 198.51.100.20 80
tap_cmp "a denied connect leaves no flow line" "$(log_count "$log" type=flow)" -eq 0

tap_done
