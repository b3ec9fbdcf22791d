#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The optional BPF-LSM layer: socket families no cgroup hook sees (AF_PACKET) are refused at
# creation, and a socket created outside the run and handed in is judged by the task that uses
# it. Where the kernel runs no BPF LSM programs, run_start says why and this test SKIPs with it.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

policy=$SL_TMP/lsm.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [9999]
    protocols: [udp]
EOF2

log=$SL_TMP/probe.jsonl
sluice_run "$policy" "$log" -- true
lsm=$(log_lines "$log" type=run_start | head -n 1 | python3 -c \
	'import json, sys; print(json.loads(sys.stdin.read()).get("lsm"))')
if [[ $lsm != True ]]; then
	leftovers_check "$SL_RUN_ID" "$SL_RUN_CGID" >/dev/null
	skip_all "no BPF-LSM layer on this kernel: $lsm"
fi

# The seccomp filter refuses the family first (EAFNOSUPPORT, test_seccomp.sh): without it, this
# layer's own refusal shows.
log=$SL_TMP/packet.jsonl
SLUICE_SELFTEST_NO_SECCOMP=1 sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); print('created')
except OSError as e:
    print('refused', e.errno)
"
tap_is "P13: an AF_PACKET socket is refused at creation" "$(cat "$SL_OUT")" "refused 1"
tap_cmp "P13: the log names the refusal" \
	"$(log_count "$log" type=decision hook=lsm reason=socket_kind)" -eq 1
assert_no_leftovers "packet socket: nothing left"

# A UDP socket made outside the run, passed in over a unix socket.
cat >"$SL_TMP/giver.py" <<'EOF2'
import os, socket, sys
path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
open(path + ".ready", "w").close()
c, _ = srv.accept()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
socket.send_fds(c, [b"fd"], [u.fileno()])
c.recv(1)
EOF2
# ip netns exec execs python3 itself: $! is its pid (in_run, a function, would be a subshell)
ip netns exec "$SL_NS_RUN" python3 "$SL_TMP/giver.py" "$SL_TMP/give.sock" &
sl_track_pid $!
for i in $(seq $((100 * SL_SLOW))); do [[ -e $SL_TMP/give.sock.ready ]] && break; sleep 0.05; done
log=$SL_TMP/foreign.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect('$SL_TMP/give.sock')
_, fds, _, _ = socket.recv_fds(c, 16, 1)
u = socket.socket(fileno=fds[0])
for dst in ('203.0.113.7', '198.51.100.10'):
    try:
        u.sendto(b'foreign', (dst, 9999)); print(dst, 'sent')
    except OSError as e:
        print(dst, 'refused', e.errno)
c.send(b'x')
"
tap_check "a handed-in socket cannot send to a denied host" grep -qx '203.0.113.7 refused 1' "$SL_OUT"
tap_check "a handed-in socket can send to an allowed host" grep -qx '198.51.100.10 sent' "$SL_OUT"
assert_sink_none "nothing from the handed-in socket reaches the denied host" 'udp 203.0.113.7'
tap_cmp "the log has the LSM denial" \
	"$(log_count "$log" type=decision hook=lsm dst=203.0.113.7 decision=deny)" -eq 1
assert_no_leftovers "handed-in socket: nothing left"

tap_done
