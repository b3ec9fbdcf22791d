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
# flow is recorded before run_end. The command ends once it has sent and forked the daemon that
# holds the socket (no fixed wait: python's start-up alone took longer than one under emulation).
log=$SL_TMP/open.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import os, socket, time
s = socket.create_connection(('198.51.100.10', 80), timeout=5)
s.sendall(b'hold')
if os.fork() == 0:
    time.sleep(60)
"
tap_is "open flow: recorded at run end with what it sent" \
	"$(flow_field "$log" req_bytes dst=198.51.100.10 port=80)" 4
tap_check "open flow: the log is sealed after run_end" log_well_formed "$log"
assert_no_leftovers "open flow: nothing left"

# P20: byte caps. A flow that would pass its rule's max_request_bytes (max_response_bytes) is
# cut: what would pass the cap is dropped, the socket is ended, and the log says so with counts.
capped=$SL_TMP/capped.yaml
cat >"$capped" <<'EOF2'
default: deny
rules:
  - name: upload-cap
    cidrs: ["198.51.100.10/32"]
    ports: [8080]
    max_request_bytes: 65_536
  - name: download-cap
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    max_response_bytes: 10
EOF2
# A cut flow's socket is destroyed (bpf_sock_destroy, else sock_diag); a kernel that can do
# neither only drops it.
NO_DESTROY="the kernel cannot destroy sockets (no bpf_sock_destroy, no CONFIG_INET_DIAG_DESTROY): a cut flow is only dropped"
cut_not_destroyed() {
	[[ $(log_count "$1" type=flow_cut 'flow=dropped (kernel cannot destroy sockets)') -gt 0 ]]
}

# request_cap LABEL NAME [VAR=VALUE…]: a 1 MB upload through the 65,536-byte cap, logged to
# NAME.jsonl, sluice run with the environment given.
request_cap() {
	local label=$1 log=$SL_TMP/$2.jsonl what ms sink_bytes cut_req
	shift 2
	[[ $# -eq 0 ]] || local -x "$@" # (for sluice, for this run only)
	sluice_run "$capped" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket, time
s = socket.create_connection(('198.51.100.10', 8080), timeout=5)
t = time.monotonic()
try:
    s.sendall(b'x' * 1000000)
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    print('not cut')
except OSError as e:
    print('cut', e.errno, int((time.monotonic() - t) * 1000))
"
	read -r what _ ms <"$SL_OUT"
	tap_is "$label: the client's upload is cut" "$what" cut || sluice_diag "$log"
	if cut_not_destroyed "$log"; then
		tap_skip "$label: the cut flow's socket is destroyed" "$NO_DESTROY"
		tap_skip "$label: promptly" "$NO_DESTROY"
	else
		tap_cmp "$label: the cut flow's socket is destroyed" \
			"$(log_count "$log" type=flow_cut flow=destroyed)" -eq 1
		# (before the client's own 5 s timeout: the socket was ended, it did not time out)
		tap_cmp "$label: promptly (ms)" "${ms:-99999}" -lt 3000
	fi
	sink_bytes=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk '$1 == "tcp" && $2 == "198.51.100.10" && $3 == 8080 { print $5 }')
	tap_cmp "$label: the test host got no more than 65536 bytes" \
		"${sink_bytes:-999999999}" -le 65536
	tap_cmp "$label: a flow_cut line names the cap" \
		"$(log_count "$log" type=flow_cut cap=max_request_bytes limit=65536 rule=upload-cap)" -eq 1
	cut_req=$(log_field "$(log_lines "$log" type=flow_cut)" req_bytes)
	tap_is "$label: its byte count is what the test host received" "$cut_req" "$sink_bytes"
	tap_cmp "$label: the flow line says it was cut" \
		"$(log_count "$log" type=flow cut=max_request_bytes)" -eq 1
	tap_check "$label: stderr says so" grep -q 'egress cut: 198.51.100.10:8080/tcp' "$SL_ERR"
	assert_no_leftovers "$label: nothing left"
}
request_cap "P20 request cap" cap-req
# the way kernels before 6.5 end the socket (sock_diag's SOCK_DESTROY), on this kernel too
request_cap "P20 request cap, the socket destroyed through sock_diag" cap-req-diag \
	SLUICE_SELFTEST_NO_BPF_DESTROY=1

# P29: a flow's state in the kernel (its socket storage) is charged to the socket's option
# memory, which the workload can fill first (net.core.optmem_max) with TCP-MD5 keys for peers it
# never meets: the connect() must be refused and say why, never let through uncounted, uncapped
# and unrecorded (it was: the whole upload passed the cap, and the log had no flow line). In
# report mode it goes ahead, on record as a denial not enforced.
# omem_full LABEL MODE EXPECT: that connect() and an upload past the cap, sluice run in MODE;
# EXPECT: what the client says (refused ERRNO, or sent).
omem_full() {
	local label=$1 mode=$2 expect=$3 log=$SL_TMP/cap-omem-$2.jsonl what keys errno sink_bytes
	sluice_run "$capped" "$log" --mode "$mode" -- "${RUN_EXEC[@]}" python3 \
		"$SL_LIB_DIR/tools/sl_omem_connect.py" 198.51.100.10 8080 100000
	read -r what keys errno <"$SL_OUT"
	if [[ ${keys:-0} -lt 10 ]]; then
		tap_skip "$label: the socket's option memory filled first" \
			"TCP-MD5 keys cannot be set here (no CONFIG_TCP_MD5SIG?)"
		return
	fi
	tap_is "$label: option memory filled first ($keys TCP-MD5 keys): the client" \
		"$what${errno:+ $errno}" "$expect" || sluice_diag "$log"
	tap_cmp "$label: … a denial for want of the flow's state, naming the rule that allows it" \
		"$(log_count "$log" type=decision hook=connect4 decision=deny \
			enforced="$([[ $mode == enforce ]] && echo true || echo false)" \
			reason=flow_no_state rule=upload-cap dst=198.51.100.10)" -eq 1
	sink_bytes=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk '$1 == "tcp" && $2 == "198.51.100.10" && $3 == 8080 { print $5 }')
	[[ $mode == enforce ]] && tap_is "$label: … nothing reached the test host" "${sink_bytes:-0}" 0
	assert_no_leftovers "$label: nothing left"
}
omem_full "P29" enforce "refused 1"
omem_full "P29 report mode" report sent

# A socket connected again ends its flow: a TCP socket after connect(AF_UNSPEC), a UDP socket
# re-aimed. Each connection has its flow line with what it carried (they were lost, the last
# one alone on record), and its own per-flow cap (a connection under the cap is not cut, though
# the socket's connections together pass it): sluice-policy(5).
reconn_pol=$SL_TMP/reconn.yaml
cat >"$reconn_pol" <<'EOF2'
default: deny
rules:
  - name: upload-cap
    cidrs: ["198.51.100.10/32"]
    ports: [8080, 9999]
    max_request_bytes: 65_536
EOF2
log=$SL_TMP/reconn.jsonl
sluice_run "$reconn_pol" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import ctypes, socket, time
libc = ctypes.CDLL(None, use_errno=True)
s = socket.socket()
for i in range(3):
    s.settimeout(5)
    s.connect(('198.51.100.10', 8080))
    s.sendall(b'x' * 60000)
    time.sleep(0.3)
    s.setblocking(True)
    if libc.connect(s.fileno(), bytes(16), 16):  # AF_UNSPEC: disconnect
        raise SystemExit('AF_UNSPEC: errno %d' % ctypes.get_errno())
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(3):
    u.connect(('198.51.100.10', 9999))
    for _ in range(40):
        u.send(b'u' * 1000)
print('done')
"
tap_is "connected again: the workload sent 3 x 60000 bytes over TCP, 3 x 40000 over UDP" \
	"$(cat "$SL_OUT")" done || sluice_diag "$log"
tap_is "… three TCP flow lines of 60000 bytes each (one per connection)" \
	"$(log_count "$log" type=flow proto=tcp dst=198.51.100.10 port=8080 req_bytes=60000)" 3
tap_is "… three UDP flow lines of 40000 bytes each" \
	"$(log_count "$log" type=flow proto=udp dst=198.51.100.10 port=9999 req_bytes=40000)" 3
tap_is "… none cut: the cap is per connection" "$(log_count "$log" type=flow_cut)" 0
tap_is "… the test host got all 180000 TCP bytes" \
	"$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk '$1 == "tcp" && $2 == "198.51.100.10" && $3 == 8080 { n += $5 } END { print n + 0 }')" \
	180000
tap_check "… log well formed" log_well_formed "$log"
assert_no_leftovers "connected again: nothing left"

# A cut flow whose socket is gone before sluice gets to end it: its line must not say it was
# destroyed. The client stops sluice (its parent), sends past the cap, resets its socket
# (SO_LINGER 0: closed at once), then lets sluice go on.
log=$SL_TMP/cap-gone.jsonl
sluice_run "$capped" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import os, signal, socket, struct, time
ppid = os.getppid()
if open('/proc/%d/comm' % ppid).read().strip() != 'sluice':
    print('parent not sluice'); raise SystemExit
s = socket.create_connection(('198.51.100.10', 8080), timeout=5)
s.setblocking(False)
os.kill(ppid, signal.SIGSTOP)
try:
    try:
        s.send(b'x' * 200000)
    except BlockingIOError:
        pass
    time.sleep(1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    s.close()
finally:
    os.kill(ppid, signal.SIGCONT)
print('closed')
"
tap_is "a cut flow closed before sluice ends it: the client sent past the cap and reset" \
	"$(cat "$SL_OUT")" closed
if cut_not_destroyed "$log"; then
	tap_skip "… its flow_cut line says it was closed, not destroyed" "$NO_DESTROY"
else
	tap_cmp "… its flow_cut line says it was closed, not destroyed" \
		"$(log_count "$log" type=flow_cut 'flow=closed before it could be destroyed')" -eq 1 ||
		sluice_diag "$log"
fi

log=$SL_TMP/cap-resp.jsonl
sluice_run "$capped" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
s = socket.create_connection(('198.51.100.10', 80), timeout=5)
s.sendall(b'GET / HTTP/1.0\r\n\r\n')
got = b''
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    print('read', len(got))
except OSError as e:
    print('cut', e.errno, len(got))
"
read -r what _ got <"$SL_OUT"
tap_is "P20 response cap: the download is cut" "$what" cut
tap_is "P20 response cap: the client read none of the 41-byte answer past its 10-byte cap" "$got" 0
tap_cmp "P20 response cap: a flow_cut line names the cap" \
	"$(log_count "$log" type=flow_cut cap=max_response_bytes limit=10 rule=download-cap)" -eq 1
assert_no_leftovers "P20 response cap: nothing left"

# Retransmissions count once: the router drops a fifth of the flow's data segments each way
# (nftables, in the test's router namespace), so TCP resends; the counts must still be what
# arrived. Only segments with payload (IP length over 100): a handshake or FIN lost five times in a
# row backs off past the client's 30-second timeout, and the test would measure luck.
in_rtr nft add table inet sl_loss &&
	in_rtr nft add chain inet sl_loss lossy '{ type filter hook forward priority 0; }' &&
	in_rtr nft add rule inet sl_loss lossy ip daddr 198.51.100.10 tcp dport 80 ip length gt 100 \
		numgen random mod 5 == 0 counter drop &&
	in_rtr nft add rule inet sl_loss lossy ip saddr 198.51.100.10 tcp sport 80 ip length gt 100 \
		numgen random mod 5 == 0 counter drop ||
	bail_out "cannot add the lossy nftables chain in $SL_NS_RTR"
# (a server of the test's own on port 8081 answers 3,000,000 bytes: the response is many
# segments, so losses leave holes that later segments pass)
in_rtr nft add rule inet sl_loss lossy ip saddr 198.51.100.10 tcp sport 8081 ip length gt 100 \
	numgen random mod 5 == 0 counter drop || bail_out "cannot add the lossy rule for 8081"
ip netns exec "$SL_NS_INET" python3 -c "
import socket
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(('198.51.100.10', 8081))
l.listen(4)
open('$SL_TMP/big.ready', 'w').close()
while True:
    c, _ = l.accept()
    try:
        while c.recv(65536):
            pass
        c.sendall(b'y' * 3000000)
    except OSError:
        pass
    c.close()
" >/dev/null 2>&1 &
sl_track_pid $!
for _ in $(seq $((100 * SL_SLOW))); do [[ -e $SL_TMP/big.ready ]] && break; sleep 0.05; done
lossy_policy=$SL_TMP/lossy.yaml
cat >"$lossy_policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80, 8081]
EOF2
log=$SL_TMP/lossy.jsonl
sluice_run "$lossy_policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
for port, n in ((80, 200000), (8081, 1000)):
    s = socket.create_connection(('198.51.100.10', port), timeout=30)
    s.sendall(b'x' * n)
    s.shutdown(socket.SHUT_WR)
    got = 0
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += len(b)
    s.close()
    print('sent', n, 'recv', got)
"
read -r _ sent _ recv <<<"$(sed -n 1p "$SL_OUT")"
read -r _ _ _ big_recv <<<"$(sed -n 2p "$SL_OUT")"
sink_wait 'tcp 198.51.100.10 80'
sink_bytes=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
	awk '$1 == "tcp" && $2 == "198.51.100.10" && $3 == 80 { print $5 }')
# The same lossy answer under a 1,000,000-byte response cap: the client reads no more than that.
capped_lossy=$SL_TMP/lossy-cap.yaml
cat >"$capped_lossy" <<'EOF2'
default: deny
rules:
  - name: capped
    cidrs: ["198.51.100.10/32"]
    ports: [8081]
    max_response_bytes: 1_000_000
EOF2
log_cap=$SL_TMP/lossy-cap.jsonl
sluice_run "$capped_lossy" "$log_cap" -- "${RUN_EXEC[@]}" python3 -c "
import socket
s = socket.create_connection(('198.51.100.10', 8081), timeout=30)
s.sendall(b'x')
s.shutdown(socket.SHUT_WR)
got = 0
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += len(b)
except OSError:
    pass
print(got)
"
tap_cmp "lossy: under a 1,000,000-byte cap the client reads no more than that" \
	"$(cat "$SL_OUT")" -le 1000000
tap_cmp "lossy: the cap is what cut the flow" \
	"$(log_count "$log_cap" type=flow_cut cap=max_response_bytes limit=1000000)" -eq 1
dropped=$(in_rtr nft list chain inet sl_loss lossy | awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") n += $(i + 1) } END { print n + 0 }')
in_rtr nft delete table inet sl_loss
tap_cmp "lossy: the router dropped packets of the flow (so TCP retransmitted)" "$dropped" -gt 0
tap_is "lossy: the test host received the 200000 bytes once" "$sink_bytes" 200000
tap_is "lossy: req_bytes counts each byte once despite retransmissions" \
	"$(flow_field "$log" req_bytes dst=198.51.100.10 port=80 proto=tcp)" "$sent"
tap_is "lossy: resp_bytes is what the client read" \
	"$(flow_field "$log" resp_bytes dst=198.51.100.10 port=80 proto=tcp)" "$recv"
tap_is "lossy: the client read the whole 3,000,000-byte answer" "$big_recv" 3000000
tap_is "lossy: resp_bytes counts it once, holes and retransmissions included" \
	"$(flow_field "$log" resp_bytes dst=198.51.100.10 port=8081 proto=tcp)" 3000000
assert_no_leftovers "lossy: nothing left"

# Byte totals per run and host: three uploads of 60,000 bytes to one host under a 100,000-byte
# total. The first passes whole, the second is cut where the host's total would pass the cap, and
# then the host gets no new flow, in any address form.
totals=$SL_TMP/totals.yaml
cat >"$totals" <<'EOF2'
default: deny
rules:
  - name: total-cap
    cidrs: ["198.51.100.10/32", "::ffff:198.51.100.10/128"]
    ports: [8080]
    max_total_request_bytes: 100_000
EOF2
log=$SL_TMP/totals.jsonl
sluice_run "$totals" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
for fam, dst in ((socket.AF_INET, '198.51.100.10'), (socket.AF_INET, '198.51.100.10'),
                 (socket.AF_INET, '198.51.100.10'), (socket.AF_INET6, '::ffff:198.51.100.10')):
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect((dst, 8080))
    except OSError as e:
        print('refused', e.errno)
        continue
    try:
        s.sendall(b'x' * 60000)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
        print('sent')
    except OSError as e:
        print('cut')
    s.close()
"
tap_is "totals: first upload passes, the second is cut, then no new flow (v4, v4-mapped)" \
	"$(tr '\n' ' ' <"$SL_OUT")" "sent cut refused 1 refused 1 "
sink_total=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
	awk '$1 == "tcp" && $2 == "198.51.100.10" && $3 == 8080 { n += $5 } END { print n + 0 }')
tap_cmp "totals: the test host got no more than 100000 bytes in all" "$sink_total" -le 100000
# a cut flow only dropped never ends at the test host, which counts a flow's bytes when it ends
if cut_not_destroyed "$log"; then
	tap_skip "totals: and more than the first upload" "$NO_DESTROY"
else
	tap_cmp "totals: and more than the first upload" "$sink_total" -gt 60000
fi
tap_cmp "totals: a flow_cut line names the host's cap" \
	"$(log_count "$log" type=flow_cut cap=max_total_request_bytes limit=100000 rule=total-cap)" -eq 1
tap_cmp "totals: the later connects are denied for the spent budget" \
	"$(log_count "$log" type=decision decision=deny reason=host_total_cap rule=total-cap)" -eq 2
line=$(log_lines "$log" type=host_total rule=total-cap dst=198.51.100.10)
if ! cut_not_destroyed "$log"; then
	tap_is "totals: the host_total line counts what the test host received" \
		"$(log_field "$line" req_bytes 2>/dev/null)/$(log_field "$line" flows 2>/dev/null)" \
		"$sink_total/2"
else
	tap_skip "totals: the host_total line counts what the test host received" "$NO_DESTROY"
	tap_cmp "totals: the host_total line counts no more than the cap" \
		"$(log_field "$line" req_bytes 2>/dev/null || echo 999999999)" -le 100000
fi
tap_check "totals: stderr says the host's total was reached" \
	grep -q "the host's total for the run reached (max_total_request_bytes: 100000)" "$SL_ERR"
assert_no_leftovers "totals: nothing left"

# alert_on: "deny" raises an alert per denial, "allow where request_bytes > N" one per finished
# flow that sent more; alerts go to stderr, the log, and the --alerts file.
alerting=$SL_TMP/alerting.yaml
cat >"$alerting" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
alert_on: [deny, "allow where request_bytes > 100_000"]
EOF2
alerts=$SL_TMP/alerts.jsonl
log=$SL_TMP/alerting.jsonl
sluice_run "$alerting" "$log" --alerts "$alerts" -- "${RUN_EXEC[@]}" python3 -c "
import socket
for n in (200000, 10):
    s = socket.create_connection(('198.51.100.10', 80), timeout=5)
    s.sendall(b'x' * n)
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    s.close()
try:
    socket.create_connection(('198.51.100.20', 80), timeout=5)
except OSError:
    pass
"
tap_cmp "alerts: the --alerts file has one line per alert (a denial, one big flow)" \
	"$(grep -c . "$alerts" 2>/dev/null || echo 0)" -eq 2
tap_cmp "alerts: the deny alert names the denied destination" \
	"$(log_count "$alerts" type=alert condition=deny)" -eq 1
tap_check "alerts: ... whose text is the denial" grep -q '198.51.100.20:80/tcp' "$alerts"
tap_cmp "alerts: the flow alert is raised for the 200000-byte flow only" \
	"$(log_count "$alerts" type=alert "condition=allow where request_bytes > 100_000")" -eq 1
tap_check "alerts: ... and says how much it sent" grep -q 'sent 200000 bytes' "$alerts"
tap_cmp "alerts: the log has the same alert lines" "$(log_count "$log" type=alert)" -eq 2
tap_check "alerts: stderr shows them" grep -q 'sluice alert (deny): egress denied' "$SL_ERR"
assert_no_leftovers "alerts: nothing left"

# The resolver redirect is not a flow; a denied connect is not either.
log=$SL_TMP/none.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" "$SL_PROBE" tcp 198.51.100.20 80
tap_cmp "a denied connect leaves no flow line" "$(log_count "$log" type=flow)" -eq 0

tap_done
