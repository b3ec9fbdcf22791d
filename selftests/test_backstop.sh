#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The packet checks that judge what actually leaves, whatever a socket was allowed to reach:
# - the host-side tc program on the peer of the run's veth (runs with --netns) judges every frame
#   the sandbox emits, including frames from AF_PACKET sockets that pass no cgroup hook (P13);
# - the cgroup_skb backstop drops a source-routed datagram sent with a control message.
# Then the same with the checks turned off (SLUICE_SELFTEST_NO_BACKSTOP=1), to show what they
# were catching: the frames arrive, the datagram leaves.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

policy=$SL_TMP/backstop.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [9999]
    protocols: [udp]
EOF2

rtr_mac=$(in_rtr cat /sys/class/net/vrun/address)

# Hand-built UDP-in-IPv4 Ethernet frames, sent on the sandbox's veth through AF_PACKET: nothing
# of the IP stack (and so no cgroup hook) sees them. Run from inside the sandbox's netns by a
# process outside the run's cgroup, as a sidecar would: the host side judges by interface.
cat >"$SL_TMP/frames.py" <<'EOF2'
import os, socket, struct, sys

PORT = int(os.environ.get("FRAME_PORT", "9999"))

def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF

def frame(dst_mac, src_mac, dst, payload):
    udp = struct.pack("!HHHH", 40000, PORT, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton("10.200.1.2"), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return dst_mac + src_mac + b"\x08\x00" + ip + udp

# An IPv6 neighbour solicitation (hop limit 255) carrying data, to any IPv6 address.
def ns_frame(dst_mac, src_mac, dst, payload):
    s6, d6 = socket.inet_pton(socket.AF_INET6, "fd10:200:1::2"), socket.inet_pton(socket.AF_INET6, dst)
    body = struct.pack("!BBHI", 135, 0, 0, 0) + d6 + payload
    pseudo = s6 + d6 + struct.pack("!IxxxB", len(body), 58)
    body = body[:2] + struct.pack("!H", csum(pseudo + body)) + body[4:]
    ip6 = struct.pack("!IHBB", 6 << 28, len(body), 58, 255) + s6 + d6
    return dst_mac + src_mac + b"\x86\xdd" + ip6 + body

s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("veth0", 0))
src = s.getsockname()[4]
dst_mac = bytes.fromhex(sys.argv[1].replace(":", ""))
for dst in sys.argv[2:]:
    if ":" in dst:
        s.send(ns_frame(dst_mac, src, dst, b"SLUICE-ND-DATA"))
    else:
        s.send(frame(dst_mac, src, dst, b"afpacket"))
print("sent")
EOF2

# frames_during_run LOG [EXTRA_ENV…]: a run that sleeps while frames are sent beside it.
frames_during_run() {
	local log=$1
	shift
	SL_RUN_N=$((SL_RUN_N + 1))
	SL_RUN_ID=t-$SL_ID-$SL_RUN_N
	SL_RUNS+=("$SL_RUN_ID")
	SL_OUT=$SL_TMP/$SL_RUN_ID.out
	SL_ERR=$SL_TMP/$SL_RUN_ID.err
	sink_mark
	rm -f "$SL_TMP/frames.done"
	# the run lasts until the frames are sent (a fixed sleep is too short on a slow machine)
	env "$@" timeout -k 5 "$SL_RUN_TIMEOUT" "$SLUICE" run --policy "$policy" \
		--run-id "$SL_RUN_ID" --task selftest --log "$log" --netns "/run/netns/$SL_NS_RUN" \
		-- sh -c "while [ ! -e $SL_TMP/frames.done ]; do sleep 0.05; done" \
		>"$SL_OUT" 2>"$SL_ERR" </dev/null &
	local pid=$!
	sl_track_pid "$pid"
	# the host side is in place once run_start is in the log (a slow machine takes a while)
	wait_until 60000 grep -qs '"run_start"' "$log" || tap_diag "no run_start in $log"

	: >"$SL_TMP/nd.seen"
	in_run python3 "$SL_TMP/frames.py" "$rtr_mac" 198.51.100.10 203.0.113.7 169.254.169.254 \
		255.255.255.255 2001:db8::20 >"$SL_TMP/frames.out" 2>&1
	sink_settle
	touch "$SL_TMP/frames.done"
	wait "$pid"
	SL_RC=$?
	SL_RUN_CGID=$(log_lines "$log" type=run_start | head -n 1 | python3 -c \
		'import json, sys; print(json.loads(sys.stdin.read()).get("cgroup_id", ""))' 2>/dev/null)
}

# What reaches the test hosts as ICMPv6 carrying the solicitation's data (a raw listener).
ip netns exec "$SL_NS_INET" python3 -c "
import socket
r = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
open('$SL_TMP/nd.ready', 'w').close()
while True:
    data, addr = r.recvfrom(4096)
    if b'SLUICE-ND-DATA' in data:
        with open('$SL_TMP/nd.seen', 'a') as f:
            f.write(addr[0] + '\n')  # (the sender: the test host got it)
" >/dev/null 2>&1 &
sl_track_pid $!
for _ in $(seq $((100 * SL_SLOW))); do [[ -e $SL_TMP/nd.ready ]] && break; sleep 0.05; done

# P13 with the host side in place.
log=$SL_TMP/tc.jsonl
frames_during_run "$log"
assert_rc "tc: the run ends normally" 0
tap_is "tc: the AF_PACKET sender sent its frames" "$(cat "$SL_TMP/frames.out")" "sent"
# tcx is there from 6.6; before it the host side is the clsact fallback
side="vrun@$SL_NS_RTR"
kernel_at_least 6 6 || side+=" (clsact)"
tap_check "tc: run_start names the host-side peer it watches (\"$side\")" \
	grep -qF "\"host_side\":\"$side\"" "$log"
sink_wait 'udp 198.51.100.10 9999' 1 2000
assert_sink_saw "P13 control: a frame to the allowed host arrives" 'udp 198.51.100.10 9999'
assert_sink_none "P13: a frame to a denied host is dropped at the host side" 'udp 203.0.113.7'
assert_sink_none "P13: a frame to the metadata address is dropped at the host side" \
	'udp 169.254.169.254'
tap_cmp "P13: the log has the tc denial of the denied host" \
	"$(log_count "$log" type=decision hook=tc dst=203.0.113.7 port=9999 reason=default_deny enforced=true)" -eq 1
tap_cmp "P13: the log has the tc denial of the blackhole" \
	"$(log_count "$log" type=decision hook=tc dst=169.254.169.254 reason=blackhole)" -eq 1
assert_sink_none "P13: a broadcast frame reaches no listener on the host side" \
	'udp 255.255.255.255'
tap_cmp "P13: the log has the tc denial of the broadcast" \
	"$(log_count "$log" type=decision hook=tc dst=255.255.255.255 reason=default_deny)" -eq 1
sleep 0.3
tap_is "P13: a neighbour solicitation carrying data to an unlisted host does not arrive" \
	"$(grep -c . "$SL_TMP/nd.seen")" 0
tap_cmp "P13: the log has the tc denial of that solicitation" \
	"$(log_count "$log" type=decision hook=tc dst=2001:db8::20 proto=ip-58)" -eq 1
tap_cmp "P13: the allowed frame is not logged as denied" \
	"$(log_count "$log" type=decision hook=tc dst=198.51.100.10 proto=udp)" -eq 0
assert_no_leftovers "tc: nothing left"
tap_is "tc: no program is left on the host-side peer" \
	"$(in_rtr bpftool net show dev vrun 2>/dev/null | grep -c sl_tc)" "0"

# The same through a clsact filter, the fallback for kernels without tcx.
log=$SL_TMP/clsact.jsonl
frames_during_run "$log" SLUICE_SELFTEST_TC_CLSACT=1
assert_rc "clsact: the run ends normally" 0
tap_check "clsact: run_start says the fallback was used" grep -q '"host_side":"vrun@[^"]* (clsact)"' "$log"
sink_wait 'udp 198.51.100.10 9999' 1 2000
assert_sink_saw "clsact control: a frame to the allowed host arrives" 'udp 198.51.100.10 9999'
assert_sink_none "clsact: a frame to a denied host is dropped" 'udp 203.0.113.7'
tap_cmp "clsact: the log has the denial" \
	"$(log_count "$log" type=decision hook=tc dst=203.0.113.7 reason=default_deny)" -eq 1
tap_is "clsact: the filter and the qdisc sluice added are removed" \
	"$(in_rtr tc qdisc show dev vrun | grep -c clsact)" "0"
assert_no_leftovers "clsact: nothing left"

# Two runs in one namespace through clsact: a filter each (at a handle each), and the qdisc the
# first run made goes with it once the other's filter has gone.
clsact_run() {
	SLUICE_SELFTEST_TC_CLSACT=1 sluice_start "$policy" "$SL_TMP/clsact-$1.jsonl" \
		--netns "/run/netns/$SL_NS_RUN" -- \
		sh -c "while [ ! -e $SL_TMP/clsact-$1.done ]; do sleep 0.05; done"
	wait_until 60000 grep -qs '"run_start"' "$SL_TMP/clsact-$1.jsonl" ||
		tap_diag_file "$SL_ERR"
}
clsact_run 1
pid1=$SL_RUN_PID
clsact_run 2
pid2=$SL_RUN_PID
tap_is "clsact, two runs in one namespace: each has its filter" "$(host_filters)" \
	"filters 2 qdiscs 1"
touch "$SL_TMP/clsact-2.done"
wait "$pid2"
tap_is "... the second run ends: its filter goes, the first's stays" "$(host_filters)" \
	"filters 1 qdiscs 1"
touch "$SL_TMP/clsact-1.done"
wait "$pid1"
tap_is "... the first run ends: its filter and the qdisc it made go" "$(host_filters)" \
	"filters 0 qdiscs 0"
assert_no_leftovers "clsact, two runs: nothing left"

# P26: runs sharing a namespace, each with its own policy. Each run's host side leaves a frame
# another run's cgroup sent to that run, so each run's allowed traffic arrives (UDP and TCP, IPv4
# and IPv6) and each log holds only its own records; a frame no run sent (AF_PACKET beside them)
# is judged by every run's host side: it passes only if all of them allow it.
for r in a b; do
	if [[ $r == a ]]; then h4=198.51.100.10 h6=2001:db8::10; else h4=203.0.113.7 h6=2001:db8::20; fi
	cat >"$SL_TMP/p26$r.yaml" <<EOF2
default: deny
rules:
  - name: host-$r
    cidrs: ["$h4/32", "$h6/128"]
    ports: [80, 5353, 9999]
    protocols: [tcp, udp]
EOF2
done
cat >"$SL_TMP/p26.py" <<'EOF2'
import os, socket, sys, time

v4, v6, tag, go = sys.argv[1:5]
while not os.path.exists(go):
    time.sleep(0.05)
keep = []  # open to the end: the sink's echo finds its socket (no ICMP error from the kernel)
for fam, dst in ((socket.AF_INET, v4), (socket.AF_INET6, v6)):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.sendto(tag.encode(), (dst, 9999))
    keep.append(s)
    c = socket.create_connection((dst, 80), timeout=5)
    c.sendall(tag.encode())
    c.shutdown(socket.SHUT_WR)
    c.recv(1)
    keep.append(c)
if tag.startswith("a-"):
    # a flow whose socket is gone: an answer to it gets an ICMP error from the namespace's kernel
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 0))
    s.sendto(b"icmp", (v4, 9999))
    with open(go + ".port", "w") as f:
        f.write(str(s.getsockname()[1]))
    s.close()
print("sent", flush=True)
while not os.path.exists(go + ".end"):
    time.sleep(0.05)
EOF2
# p26_start R MODE: run R (a or b) in the shared namespace, its workload waiting for p26.go.
p26_start() {
	local r=$1 mode=$2 h4=198.51.100.10 h6=2001:db8::10
	[[ $r == b ]] && h4=203.0.113.7 h6=2001:db8::20
	sluice_start "$SL_TMP/p26$r.yaml" "$SL_TMP/p26-$mode-$r.jsonl" \
		--netns "/run/netns/$SL_NS_RUN" -- \
		python3 "$SL_TMP/p26.py" "$h4" "$h6" "$r-$mode" "$SL_TMP/p26.go"
	wait_until 60000 grep -qs '"run_start"' "$SL_TMP/p26-$mode-$r.jsonl" ||
		tap_diag_file "$SL_ERR"
	P26_PID[$r]=$SL_RUN_PID
	P26_OUT[$r]=$SL_OUT
	P26_ID[$r]=$SL_RUN_ID
}

# p26_check MODE: both runs are up; let them send, then send frames beside them.
p26_check() {
	local mode=$1 la=$SL_TMP/p26-$1-a.jsonl lb=$SL_TMP/p26-$1-b.jsonl r rc
	sink_mark
	touch "$SL_TMP/p26.go"
	wait_until 10000 grep -qs sent "${P26_OUT[a]}"
	wait_until 10000 grep -qs sent "${P26_OUT[b]}"
	tap_is "P26 $mode: both runs' workloads sent (TCP connects included)" \
		"$(cat "${P26_OUT[a]}" "${P26_OUT[b]}" | tr '\n' ' ')" "sent sent "
	assert_sink_saw "P26 $mode: run a's IPv4 datagrams arrive" 'udp 198.51.100.10 9999' 2
	assert_sink_saw "P26 $mode: run a's IPv6 datagram arrives" 'udp 2001:db8::10 9999'
	assert_sink_saw "P26 $mode: run a's IPv4 connection arrives" 'tcp 198.51.100.10 80'
	assert_sink_saw "P26 $mode: run a's IPv6 connection arrives" 'tcp 2001:db8::10 80'
	assert_sink_saw "P26 $mode: run b's IPv4 datagram arrives" 'udp 203.0.113.7 9999'
	assert_sink_saw "P26 $mode: run b's IPv6 datagram arrives" 'udp 2001:db8::20 9999'
	assert_sink_saw "P26 $mode: run b's IPv4 connection arrives" 'tcp 203.0.113.7 80'
	assert_sink_saw "P26 $mode: run b's IPv6 connection arrives" 'tcp 2001:db8::20 80'
	sink_settle
	# A late answer to run a's closed socket (from the test host, by hand: the sink's echo may
	# come before the close) gets an ICMP error from the namespace's kernel: run a's to judge.
	in_inet python3 -c "
import socket, struct, sys
port = int(open('$SL_TMP/p26.go.port').read())
udp = struct.pack('!HHHH', 9999, port, 12, 0) + b'late'
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                 socket.inet_aton('198.51.100.10'), socket.inet_aton('10.200.1.2'))
socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW).sendto(ip + udp, ('10.200.1.2', 0))
"
	wait_until 3000 grep -qs '"hook":"tc".*"proto":"ip-1"' "$la"
	icmp=$(log_count "$la" type=decision hook=tc proto=ip-1 dst=198.51.100.10)
	tap_cmp "P26 $mode: run a's host side judged the ICMP error about its closed socket" \
		"$icmp" -ge 1
	tap_cmp "P26 $mode: run a's log has no other denial" \
		"$(log_count "$la" type=decision decision=deny)" -eq "$icmp"
	tap_cmp "P26 $mode: run b's log has no denial" \
		"$(log_count "$lb" type=decision decision=deny)" -eq 0
	tap_cmp "P26 $mode: run a's log names none of run b's hosts" \
		"$(grep -cE '"dst":"(203\.0\.113\.7|2001:db8::20)"' "$la")" -eq 0
	tap_cmp "P26 $mode: run b's log names none of run a's hosts" \
		"$(grep -cE '"dst":"(198\.51\.100\.10|2001:db8::10)"' "$lb")" -eq 0

	# frames no run sent: each must pass both runs' host sides
	FRAME_PORT=5353 in_run python3 "$SL_TMP/frames.py" "$rtr_mac" 198.51.100.10 203.0.113.7 \
		198.51.100.20 >"$SL_TMP/frames.out" 2>&1
	assert_sink_none "P26 $mode: AF_PACKET frames beside the runs arrive nowhere (one run denies each)" \
		'udp 198.51.100.10 5353' 'udp 203.0.113.7 5353' 'udp 198.51.100.20 5353'
	tap_cmp "P26 $mode: run a's host side denied the frame to run b's host" \
		"$(log_count "$la" type=decision hook=tc dst=203.0.113.7 port=5353)" -eq 1
	tap_cmp "P26 $mode: run b's host side denied the frame to run a's host" \
		"$(log_count "$lb" type=decision hook=tc dst=198.51.100.10 port=5353)" -eq 1
	# (the first host side to drop it ends the frame's way: one run records it)
	tap_cmp "P26 $mode: the frame to a host neither allows is denied" \
		"$(($(log_count "$la" type=decision hook=tc dst=198.51.100.20) + \
			$(log_count "$lb" type=decision hook=tc dst=198.51.100.20)))" -eq 1

	touch "$SL_TMP/p26.go.end"
	for r in a b; do
		wait "${P26_PID[$r]}"
		rc=$?
		tap_is "P26 $mode: run $r ends normally" "$rc" 0
		tap_check "P26 $mode: run $r left nothing" leftovers_check "${P26_ID[$r]}"
	done
	tap_is "P26 $mode: the namespace's shared maps are gone with its last run" \
		"$(find /sys/fs/bpf/sluice -maxdepth 1 -name "netns@$(stat -L -c '%d-%i' \
			"/run/netns/$SL_NS_RUN")" | wc -l)" 0
	rm -f "$SL_TMP/p26.go" "$SL_TMP/p26.go.end" "$SL_TMP/p26.go.port"
}
declare -A P26_PID P26_OUT P26_ID
p26_start a tcx
p26_start b tcx
p26_check tcx
SLUICE_SELFTEST_TC_CLSACT=1 p26_start a clsact
SLUICE_SELFTEST_TC_CLSACT=1 p26_start b clsact
p26_check clsact

# P26, a run joining a run alone in the namespace: the run alone records no flow (there is no
# flow map: nothing to attribute), so the one that joins must give it one before its own host
# side is attached. Run a's connection opened while it was alone, and its new flows, still pass
# run b's host side (which denies run a's host); a process in no run's cgroup is judged by run
# a's host side while the two share the namespace and after run b left (the flow map gone again).
cat >"$SL_TMP/p26j.py" <<'EOF2'
import os, socket, sys, time

go = sys.argv[1]
def wait(f):
    while not os.path.exists(go + f):
        time.sleep(0.05)
def flow(fam, dst, first=b""):
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.settimeout(5)
    c.connect((dst, 80))
    c.sendall(first)
    return c
def done(c, more):
    c.sendall(more)
    c.shutdown(socket.SHUT_WR)
    c.recv(1)  # the sink's end: it had every byte and the FIN
try:
    old = flow(socket.AF_INET, "198.51.100.10", b"alone-")
    open(go + ".alone", "w").close()
    wait(".joined")
    done(old, b"joined")
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"joined", ("198.51.100.10", 9999))
    done(flow(socket.AF_INET6, "2001:db8::10"), b"joined")
    print("joined ok", flush=True)
    wait(".left")
    done(flow(socket.AF_INET, "198.51.100.10"), b"left")
    print("left ok", flush=True)
except OSError as e:
    print("failed:", e, flush=True)
wait(".end")
EOF2
cat >"$SL_TMP/p26conn.py" <<'EOF2'
import socket, sys
s = socket.socket(socket.AF_INET)
s.settimeout(2)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("connected")
except socket.timeout:
    print("timeout")
except OSError as e:
    print(e.strerror)
EOF2
ns_pins=/sys/fs/bpf/sluice/netns@$(stat -L -c '%d-%i' "/run/netns/$SL_NS_RUN")
j=$SL_TMP/p26j
la=$SL_TMP/p26j-a.jsonl lb=$SL_TMP/p26j-b.jsonl
sink_mark
sluice_start "$SL_TMP/p26a.yaml" "$la" --netns "/run/netns/$SL_NS_RUN" -- \
	python3 "$SL_TMP/p26j.py" "$j"
ja_pid=$SL_RUN_PID ja_id=$SL_RUN_ID ja_out=$SL_OUT
wait_until 60000 test -e "$j.alone" || tap_diag_file "$SL_ERR"
tap_is "P26 join: run a alone in the namespace: its runs map is pinned, no flow map" \
	"$(find "$ns_pins" -mindepth 1 ! -name 'slot-*' -printf '%f ')" "runs "
# (-v: libbpf says each object it opens, "loading object 'NAME'")
sluice_start "$SL_TMP/p26b.yaml" "$lb" --netns "/run/netns/$SL_NS_RUN" -v -- \
	sh -c "while [ ! -e $j.bend ]; do sleep 0.05; done"
jb_pid=$SL_RUN_PID jb_id=$SL_RUN_ID jb_err=$SL_ERR
wait_until 60000 grep -qs '"run_start"' "$lb" || tap_diag_file "$SL_ERR"
tap_check "P26 join: run b joins: the flow map is pinned" test -e "$ns_pins/flows"
# its join checks run a's slot against this build's shapes, which come from the objects it loads:
# no skeleton opened again for them under the host-wide lock of the attach
tap_is "P26 join: run b opened its decision layer's object once (the shape check opened none)" \
	"$(grep -c "loading object 'sl_sock_addr'" "$jb_err")" 1
touch "$j.joined"
wait_until 20000 grep -qs 'ok\|failed' "$ja_out"
tap_is "P26 join: run a's connection from before the join, and its new flows, get through" \
	"$(head -n 1 "$ja_out")" "joined ok"
assert_sink_saw "P26 join: run a's datagram after the join arrives" 'udp 198.51.100.10 9999'
assert_sink_saw "P26 join: run a's new IPv6 connection arrives" 'tcp 2001:db8::10 80'
tap_is "P26 join: a process in no run's cgroup beside both is judged by run a (run b's host)" \
	"$(in_run python3 "$SL_TMP/p26conn.py" 203.0.113.7 80)" timeout
touch "$j.bend"
wait "$jb_pid"
tap_is "P26 join: run b ends normally" "$?" 0
tap_check "P26 join: run b left nothing" leftovers_check "$jb_id"
tap_is "P26 join: run b gone, run a alone again: the flow map's pin is gone" \
	"$(find "$ns_pins" -mindepth 1 ! -name 'slot-*' -printf '%f ')" "runs "
touch "$j.left"
wait_until 20000 grep -qs 'left ok\|failed' "$ja_out"
tap_is "P26 join: run a, alone again, reaches its host" "$(sed -n 2p "$ja_out")" "left ok"
tap_is "P26 join: ... and a process in no run's cgroup beside it is judged by its host side" \
	"$(in_run python3 "$SL_TMP/p26conn.py" 203.0.113.7 80)" timeout
assert_sink_none "P26 join: no connection of the process in no run reached run b's host" \
	'tcp-accept 203.0.113.7'
tap_cmp "P26 join: run b's log has no denial (run a's frames were left to run a)" \
	"$(log_count "$lb" type=decision decision=deny)" -eq 0
tap_cmp "P26 join: run a's host side denied the process in no run, both times" \
	"$(log_count "$la" type=decision decision=deny hook=tc dst=203.0.113.7 port=80)" -ge 2
touch "$j.end"
wait "$ja_pid"
tap_is "P26 join: run a ends normally" "$?" 0
tap_check "P26 join: run a left nothing" leftovers_check "$ja_id"
tap_is "P26 join: the namespace's maps are gone with its last run" \
	"$(find "$ns_pins" -maxdepth 0 2>/dev/null | wc -l)" 0

# dead_run_unpin ID: a dead run's pins removed by hand, its links going with them. A clsact
# filter (the host side where the kernel has no tcx) has no link: removing its pin leaves it on
# the veth, judging by the dead run's policy, so it is removed at the handle its pin names, as
# sluice detach --run-id would.
dead_run_unpin() {
	local pin h
	for pin in "/sys/fs/bpf/sluice/$1"/tc-clsact-*; do
		[[ -e $pin ]] || continue
		h=${pin##*/tc-clsact-}
		h=${h#*-*-}
		in_rtr tc filter del dev vrun ingress protocol all pref 1 \
			handle "$(printf '0x%x' "${h%-qdisc}")" bpf
	done
	rm -rf "/sys/fs/bpf/sluice/$1"
}

# P26, a run killed after its cgroup's programs are pinned and before its host side exists
# (SLUICE_SELFTEST_KILL=before-tc): its token never joins the namespace's runs, so run a's host
# side still judges what the dead run's cgroup sends (to run b's host, which only the dead run's
# policy allows). (Its log, if created, has no run_start: sluice resume refuses to take it over.)
sluice_start "$SL_TMP/p26a.yaml" "$SL_TMP/p26k-a.jsonl" --netns "/run/netns/$SL_NS_RUN" -- \
	sh -c "while [ ! -e $j.kend ]; do sleep 0.05; done"
ka_pid=$SL_RUN_PID ka_id=$SL_RUN_ID
wait_until 60000 grep -qs '"run_start"' "$SL_TMP/p26k-a.jsonl" || tap_diag_file "$SL_ERR"
# ns_runs: the tokens in the namespace's runs map, as its slot pins name them.
ns_runs() {
	bpftool -j map dump pinned "$ns_pins/runs" | python3 -c 'import json, sys
for e in json.load(sys.stdin):
    print("%016x" % int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little"))'
}
SLUICE_SELFTEST_KILL=before-tc sluice_start "$SL_TMP/p26b.yaml" "$SL_TMP/p26k-b.jsonl" \
	--netns "/run/netns/$SL_NS_RUN" -- true
kb_id=$SL_RUN_ID
{ wait "$SL_RUN_PID"; } 2>/dev/null # (no "Killed" notice: the kill is the test)
tap_is "P26 kill: the joiner is killed before its host side is attached" "$?" 137
tap_is "P26 kill: only run a's token is in the namespace's runs map" "$(ns_runs | wc -l)" 1
kcg=$(cg2_mount)/sluice/$kb_id
tap_is "P26 kill: the dead run's cgroup reaches run b's host only through run a's host side (denied)" \
	"$(sl_in_cgroup "$kcg" nsenter --net="/run/netns/$SL_NS_RUN" \
		python3 "$SL_TMP/p26conn.py" 203.0.113.7 80)" timeout
tap_cmp "P26 kill: run a's host side denied it" \
	"$(log_count "$SL_TMP/p26k-a.jsonl" type=decision decision=deny hook=tc dst=203.0.113.7 port=80)" -ge 1
dead_run_unpin "$kb_id"
rmdir "$kcg"

# a_conn: a connection from run a's cgroup to run a's host (198.51.100.10:80).
a_conn() {
	sl_in_cgroup "$(cg2_mount)/sluice/$ka_id" nsenter --net="/run/netns/$SL_NS_RUN" \
		python3 "$SL_TMP/p26conn.py" 198.51.100.10 80
}
ka_token=$(ns_runs)
tap_is "P26 kill: run a's connections get through" "$(a_conn)" connected

# P26, a run killed after its host side is pinned and before it joins
# (SLUICE_SELFTEST_KILL=before-join): marked ns-join-pending, its token not in the runs map and
# its flows slot empty, its host side judges every frame there: run a's (denied by its policy).
SLUICE_SELFTEST_KILL=before-join sluice_start "$SL_TMP/p26b.yaml" "$SL_TMP/p26k-j.jsonl" \
	--netns "/run/netns/$SL_NS_RUN" -- true
kj_id=$SL_RUN_ID
{ wait "$SL_RUN_PID"; } 2>/dev/null
tap_is "P26 kill: a joiner killed after its host side, before its join" "$?" 137
tap_check "P26 kill: ... is marked join-pending, its token not in the runs map" \
	test -e "/sys/fs/bpf/sluice/$kj_id/ns-join-pending" -a "$(ns_runs)" == "$ka_token"
tap_is "P26 kill: ... and its host side drops run a's frames" "$(a_conn)" timeout
dead_run_unpin "$kj_id"
rmdir "$(cg2_mount)/sluice/$kj_id"
a_connects() { [[ $(a_conn) == connected ]]; }
tap_check "P26 kill: its host side gone with it, run a's connections get through again" \
	wait_until 5000 a_connects

# A take-over finishes such a join: run r (its log written) is killed and put back in that state
# by hand (its token out of the runs map, its flows slot emptied, the mark pinned); sluice resume
# joins it, and run a's frames pass run r's host side again.
# (--user: a root workload's namespace init, a fork of sluice that never execs, would hold
# the pins' lock as long as the workload lives, and resume would find the writer alive)
sluice_start "$SL_TMP/p26b.yaml" "$SL_TMP/p26k-r.jsonl" --user nobody \
	--netns "/run/netns/$SL_NS_RUN" -- sleep 600
kr_id=$SL_RUN_ID kr_pid=$SL_RUN_PID krcg=$(cg2_mount)/sluice/$SL_RUN_ID
# kr_sleeps: run r's workload has exec'd (before, sluice's child holds the pins' lock)
kr_sleeps() {
	local p
	for p in $(cat "$krcg/cgroup.procs" 2>/dev/null); do
		[[ $(cat "/proc/$p/comm" 2>/dev/null) == sleep ]] && return 0
	done
	return 1
}
wait_until 60000 kr_sleeps || tap_diag_file "$SL_ERR"
# killed as soon as its command runs: its run_start must be on file by then (written before the
# command starts, not at the writer's first drain), or no resume could take the run over
sl_kill_wait "$kr_pid"
tap_check "P26 kill: run r's log has its run_start when its command has just started" \
	grep -q '"type":"run_start"' "$SL_TMP/p26k-r.jsonl"
kr_token=$(ns_runs | grep -vx "$ka_token")
# shellcheck disable=SC2046 # one word per byte
bpftool map delete pinned "$ns_pins/runs" key $(python3 -c 'import sys
print(" ".join(str(b) for b in int(sys.argv[1], 16).to_bytes(8, "little")))' "$kr_token")
bpftool map delete pinned "$ns_pins/slot-$kr_token" key 0 0 0 0
bpftool map pin pinned "/sys/fs/bpf/sluice/$kr_id/map-events" "/sys/fs/bpf/sluice/$kr_id/ns-join-pending"
tap_is "P26 kill: run r put back before its join: run a's frames are dropped by its host side" \
	"$(a_conn)" timeout
"$SLUICE" resume "$kr_id" --log "$SL_TMP/p26k-r.jsonl" >"$SL_TMP/p26k-r.out" \
	2>"$SL_TMP/p26k-r.err" </dev/null &
kr_pid=$!
sl_track_pid "$kr_pid"
# kr_restarted: the resume wrote its writer_restart, or ended (refused) without
kr_restarted() {
	grep -qs '"type":"writer_restart"' "$SL_TMP/p26k-r.jsonl" || ! pid_running "$kr_pid"
}
wait_until 60000 kr_restarted
grep -qs '"type":"writer_restart"' "$SL_TMP/p26k-r.jsonl" || tap_diag_file "$SL_TMP/p26k-r.err"
tap_is "P26 kill: sluice resume joined run r (its token back, its mark gone)" \
	"$(ns_runs | sort | tr '\n' ' ')$(test -e "/sys/fs/bpf/sluice/$kr_id/ns-join-pending" && echo marked)" \
	"$(printf '%s\n' "$ka_token" "$kr_token" | sort | tr '\n' ' ')"
tap_check "P26 kill: ... and says so" grep -q "joined now" "$SL_TMP/p26k-r.err"
tap_is "P26 kill: ... and run a's frames pass run r's host side again" "$(a_conn)" connected
for p in $(cat "$krcg/cgroup.procs"); do kill "$p"; done
wait "$kr_pid"
tap_is "P26 kill: run r, taken over, ends normally" "$?" 0
tap_check "P26 kill: run r left nothing" leftovers_check "$kr_id"

# A token with no run (a writer killed inside its leave, the run's pins removed since) is
# collected when a run leaves: with it left, run a's end would not remove the namespace's maps.
bpftool map update pinned "$ns_pins/runs" key 1 2 3 4 5 6 7 8 value 1
touch "$j.kend"
wait "$ka_pid"
tap_is "P26 kill: run a ends normally" "$?" 0
tap_check "P26 kill: run a left nothing" leftovers_check "$ka_id"
tap_is "P26 kill: the stale token and the dead runs' slot pins were collected: no pin is left" \
	"$(find "$ns_pins" -printf '%f\n' 2>/dev/null | wc -l)" 0
rm -f "$ns_pins"/slot-* "$ns_pins"/runs "$ns_pins"/flows
rmdir "$ns_pins" 2>/dev/null

# A runs pin of another shape (another build's: 4-byte keys) is neither changed nor removed by a
# run leaving (ns_leave checks the shape, as every other opener of the pin): as empty, it was
# removed, and this build's 8-byte tokens were deleted from it.
sluice_start "$SL_TMP/p26a.yaml" "$SL_TMP/p26s.jsonl" --netns "/run/netns/$SL_NS_RUN" -- \
	sh -c "while [ ! -e $j.send ]; do sleep 0.05; done"
s_pid=$SL_RUN_PID s_id=$SL_RUN_ID
# (joined: its join pins the runs map again should it be gone, as the one below would be)
wait_until 60000 grep -qs '"run_start"' "$SL_TMP/p26s.jsonl" || tap_diag_file "$SL_ERR"
rm -f "$ns_pins/runs"
bpftool map create "$ns_pins/runs" type hash key 4 value 1 entries 8 name sl_other_runs
touch "$j.send"
wait "$s_pid"
tap_is "P26 shape: the run ends normally" "$?" 0
tap_is "P26 shape: a runs pin of another shape is left in place, said so" \
	"$(bpftool -j map show pinned "$ns_pins/runs" 2>/dev/null | grep -c '"bytes_key":4') $(grep -c \
		"runs map $ns_pins/runs: another build's (its shape differs); the run's own slot pin removed, the rest left" "$SL_ERR")" "1 1"
rm -f "$ns_pins"/slot-* "$ns_pins"/runs "$ns_pins"/flows
rmdir "$ns_pins" 2>/dev/null
tap_check "P26 shape: the run left nothing" leftovers_check "$s_id"

# P26: a run cannot borrow another run's flow. Run a (nobody) binds an IPv6 socket with
# IPV6_FREEBIND to run b's host and port, and connects from there to the namespace's own address
# (which its policy allows) at the port of run b's closed flow: the namespace's kernel answers
# with a TCP reset that carries run b's flow, which run a's host side leaves to run b and run b's
# allows. So run a could signal to a host only run b may reach. The option is refused.
cat >"$SL_TMP/p26sb.yaml" <<'EOF2'
default: deny
rules:
  - name: host-b
    cidrs: ["2001:db8::20/128"]
    ports: [8080]
    protocols: [tcp]
EOF2
cat >"$SL_TMP/p26sa.yaml" <<'EOF2'
default: deny
rules:
  - name: own-subnet
    cidrs: ["fd10:200:1::/64"]
    protocols: [tcp]
EOF2
cat >"$SL_TMP/p26cap.py" <<'EOF2'
import socket, struct, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_TCP)
s.settimeout(0.2)
out = open(sys.argv[1], "a")
while True:
    try:
        d, a = s.recvfrom(2048)
    except socket.timeout:
        continue
    sp, dp, fl = struct.unpack("!HH9xB", d[:14])
    out.write("%s %d %d %s\n" % (a[0], sp, dp, "rst" if fl & 4 else "-"))
    out.flush()
EOF2
cat >"$SL_TMP/p26sb.py" <<'EOF2'
import os, socket, sys, time
c = socket.create_connection(("2001:db8::20", 8080), timeout=5)
port = c.getsockname()[1]
c.sendall(b"b")
c.shutdown(socket.SHUT_WR)
c.recv(1)
c.close()
time.sleep(0.5)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(port))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while not os.path.exists(sys.argv[1] + ".end"):
    time.sleep(0.05)
EOF2
cat >"$SL_TMP/p26sa.py" <<'EOF2'
import errno, socket, sys
port = int(open(sys.argv[1]).read())
res = []
for i in range(5):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.setsockopt(socket.IPPROTO_IPV6, 78, 1)  # IPV6_FREEBIND
        s.bind(("2001:db8::20", 8080))
        s.connect(("fd10:200:1::2", port))
        res.append("connected")
    except OSError as e:
        res.append(errno.errorcode.get(e.errno, str(e)))
    s.close()
print(" ".join(res))
EOF2
# ip netns exec, not the in_inet function: backgrounded, a function runs in a subshell, and
# stopping that pid would leave the capture running
ip netns exec "$SL_NS_INET" python3 "$SL_TMP/p26cap.py" "$SL_TMP/p26cap.log" </dev/null &>/dev/null &
p26cap=$!
sl_track_pid "$p26cap"
sluice_start "$SL_TMP/p26sb.yaml" "$SL_TMP/p26sb.jsonl" --netns "/run/netns/$SL_NS_RUN" -- \
	python3 "$SL_TMP/p26sb.py" "$SL_TMP/p26s.port"
p26b_pid=$SL_RUN_PID p26b_id=$SL_RUN_ID
wait_until 60000 test -s "$SL_TMP/p26s.port" || tap_diag_file "$SL_ERR"
port=$(cat "$SL_TMP/p26s.port")
sink_settle
before=$(sl_lines "$SL_TMP/p26cap.log")
la=$SL_TMP/p26sa.jsonl
sluice_run "$SL_TMP/p26sa.yaml" "$la" --user nobody --netns "/run/netns/$SL_NS_RUN" -- \
	python3 "$SL_TMP/p26sa.py" "$SL_TMP/p26s.port"
tap_diag "run a's connects: $(cat "$SL_OUT")"
sink_settle
resets=$(tail -n +"$((before + 1))" "$SL_TMP/p26cap.log" | grep -c "^fd10:200:1::2 $port 8080 rst")
tap_is "P26 spoof: no reset of run b's closed flow, provoked by run a, reaches run b's host" \
	"$resets" 0
tap_cmp "P26 spoof: run a's IPV6_FREEBIND is refused and recorded" \
	"$(log_count "$la" type=decision hook=setsockopt decision=deny)" -ge 5
touch "$SL_TMP/p26s.port.end"
wait "$p26b_pid"
tap_is "P26 spoof: run b ends normally" "$?" 0
sl_stop_pid "$p26cap"
tap_check "P26 spoof: run b left nothing" leftovers_check "$p26b_id"

# Ordinary traffic through the host side: IPv4 and IPv6 (neighbour discovery must pass).
log=$SL_TMP/ordinary.jsonl
sluice_run "$policy" "$log" --netns "/run/netns/$SL_NS_RUN" -- python3 -c "
import socket
for fam, dst in ((socket.AF_INET, '198.51.100.10'), (socket.AF_INET6, '2001:db8::10')):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.sendto(b'ok', (dst, 9999))
print('sent')
"
sink_wait 'udp 2001:db8::10 9999' 1 3000
assert_sink_saw "with tc: an allowed IPv4 datagram arrives" 'udp 198.51.100.10 9999'
assert_sink_saw "with tc: an allowed IPv6 datagram arrives (neighbour discovery passes)" \
	'udp 2001:db8::10 9999'
# (the sink answers; a late answer gets an ICMP port unreachable, which the host side drops)
tap_cmp "with tc: no datagram is denied" "$(log_count "$log" decision=deny proto=udp)" -eq 0
assert_no_leftovers "ordinary: nothing left"

# What the packet checks were catching: turned off, the frames arrive and the source-routed
# datagram leaves.
log=$SL_TMP/off.jsonl
frames_during_run "$log" SLUICE_SELFTEST_NO_BACKSTOP=1
assert_rc "checks off: the run ends normally" 0
tap_check "checks off: sluice says so on stderr" grep -q 'packet checks are off' "$SL_ERR"
tap_check "checks off: run_start says so" grep -q '"backstop":false' "$log"
sink_wait 'udp 203.0.113.7 9999' 1 2000
assert_sink_saw "checks off: the frame to the denied host arrives" 'udp 203.0.113.7 9999'
assert_sink_saw "checks off: the frame to the (test) metadata address arrives" \
	'udp 169.254.169.254 9999'
assert_sink_saw "checks off: the broadcast frame reaches a listener on the host side" \
	'udp 255.255.255.255 9999' 1 rtr
sleep 0.3
tap_cmp "checks off: the solicitation carrying data reaches the unlisted host" \
	"$(grep -c . "$SL_TMP/nd.seen")" -ge 1
assert_no_leftovers "checks off: nothing left"

srr='
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
lsrr = bytes([0x83, 7, 4, 203, 0, 113, 7, 0])
try:
    s.sendmsg([b"srr"], [(socket.IPPROTO_IP, 7, lsrr)], 0, ("198.51.100.10", 9999)); print("cmsg sent")
except OSError as e:
    print("cmsg refused", e.errno)
'
log=$SL_TMP/srr-on.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "$srr"
tap_is "backstop: a source-routed datagram is refused (EPERM)" "$(cat "$SL_OUT")" "cmsg refused 1"
tap_cmp "backstop: the log has the drop" \
	"$(log_count "$log" hook=egress decision=deny reason=source_route)" -eq 1
log=$SL_TMP/srr-off.jsonl
SLUICE_SELFTEST_NO_BACKSTOP=1 sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "$srr"
tap_is "checks off: the source-routed datagram is sent" "$(cat "$SL_OUT")" "cmsg sent"
tap_cmp "checks off: nothing is logged for it" "$(log_count "$log" hook=egress)" -eq 0
assert_no_leftovers "source route: nothing left"

tap_done
