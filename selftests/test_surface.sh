#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The surface layer and the workload's privileges: socket kinds the decision layer cannot judge
# are refused at creation (P12), options that reroute packets are refused, a source-routed
# datagram sent with a control message is dropped at egress (nothing arrives, though its
# destination is allowed), and --user runs CMD unprivileged with no_new_privs.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

policy=$SL_TMP/surface.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [9999]
    protocols: [udp]
EOF2

# Ping sockets need no capability where ping_group_range allows the group: allow everyone in the
# run's netns, so that only sluice can be what refuses them.
in_run sysctl -qw net.ipv4.ping_group_range="0 2147483647"

# case: label, python socket() arguments, the /proc/net file whose kind it is
kinds=(
	"raw-icmp      socket.AF_INET,socket.SOCK_RAW,socket.IPPROTO_ICMP"
	"raw-udp6      socket.AF_INET6,socket.SOCK_RAW,socket.IPPROTO_UDP"
	"ping4         socket.AF_INET,socket.SOCK_DGRAM,socket.IPPROTO_ICMP"
	"ping6         socket.AF_INET6,socket.SOCK_DGRAM,socket.IPPROTO_ICMPV6"
	"mptcp         socket.AF_INET,socket.SOCK_STREAM,262"
)
for c in "${kinds[@]}"; do
	read -r label args <<<"$c"
	log=$SL_TMP/$label.jsonl
	sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket, sys
try:
    socket.socket($args)
    print('created')
except OSError as e:
    print('refused', e.errno)
"
	tap_is "P12 $label: socket() is refused with EPERM" "$(cat "$SL_OUT")" "refused 1"
	tap_cmp "P12 $label: the log names the refusal" \
		"$(log_count "$log" type=decision hook=sock_create decision=deny reason=socket_kind)" -eq 1
	tap_check "P12 $label: stderr says what was refused" grep -q 'egress denied: socket(' "$SL_ERR"
	assert_no_leftovers "P12 $label: nothing left"
done

# Ordinary sockets still work, and a local one too.
log=$SL_TMP/ordinary.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
for a in [(socket.AF_INET, socket.SOCK_STREAM, 0), (socket.AF_INET6, socket.SOCK_DGRAM, 0),
          (socket.AF_UNIX, socket.SOCK_STREAM, 0)]:
    socket.socket(*a)
print('ok')
"
tap_is "TCP, UDP and unix sockets are created" "$(cat "$SL_OUT")" "ok"
tap_cmp "no refusal is logged for them" "$(log_count "$log" hook=sock_create)" -eq 0

# AF_PACKET does not pass through cgroup/sock_create (the kernel runs it for inet sockets only):
# the workload's seccomp filter refuses the family (test_seccomp.sh has every family and ABI).
log=$SL_TMP/packet.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); print('created')
except OSError as e:
    print('refused', e.errno)
"
tap_is "P12 packet socket refused (EAFNOSUPPORT), even as root" "$(cat "$SL_OUT")" "refused 97"
tap_cmp "P12 packet socket: the log names the refusal" \
	"$(log_count "$log" type=decision hook=seccomp decision=deny reason=socket_family family=packet)" \
	-eq 1

# Ping and raw sockets where the policy allows them ("sockets:"): no hook judges their sends, so
# the backstop judges every packet by its own headers, against rules that list its protocol.
allowing=$SL_TMP/sockets.yaml
cat >"$allowing" <<'EOF2'
default: deny
sockets: [ping, raw]
rules:
  - name: pingable
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    protocols: [icmp]
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [9999]
    protocols: [udp]
EOF2
log=$SL_TMP/sockets.jsonl
sluice_run "$allowing" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket, struct
def echo(fam, proto, dst):
    s = socket.socket(fam, socket.SOCK_DGRAM, proto)
    s.settimeout(2)
    typ = 8 if fam == socket.AF_INET else 128
    try:
        s.sendto(struct.pack('!BBHHH', typ, 0, 0, 0, 1) + b'sluice', (dst, 0))
        s.recv(128)
        return 'ok'
    except OSError as e:
        return 'refused %s' % e.errno
for dst in ('198.51.100.10', '198.51.100.20'):
    print('ping', dst, echo(socket.AF_INET, socket.IPPROTO_ICMP, dst))
for dst in ('2001:db8::10', '2001:db8::20'):
    print('ping6', dst, echo(socket.AF_INET6, socket.IPPROTO_ICMPV6, dst))
r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
for dst in ('198.51.100.10', '198.51.100.20'):
    try:
        r.sendto(struct.pack('!HHHH', 40000, 9999, 8 + 3, 0) + b'raw', (dst, 0))
        print('raw', dst, 'sent')
    except OSError as e:
        print('raw', dst, 'refused', e.errno)
# 3 bytes: too short for a UDP header, so no port to judge: it must not leave either
for fam, dst in ((socket.AF_INET, '169.254.169.254'), (socket.AF_INET6, '2001:db8::20')):
    try:
        socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_UDP).sendto(b'raw', (dst, 0))
        print('short', dst, 'sent')
    except OSError as e:
        print('short', dst, 'refused', e.errno)
p = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
try:
    p.connect(('198.51.100.10', 0)); print('ping connect ok')
except OSError as e:
    print('ping connect refused', e.errno)
"
tap_check "sockets: a ping to a host an icmp rule lists is answered" grep -qx 'ping 198.51.100.10 ok' "$SL_OUT"
tap_check "sockets: a ping to another host fails with EPERM" grep -qx 'ping 198.51.100.20 refused 1' "$SL_OUT"
tap_check "sockets: ping6 to the listed host is answered" grep -qx 'ping6 2001:db8::10 ok' "$SL_OUT"
# (the IPv6 ping path does not hand the drop's EPERM back to sendto: the echo just gets no answer)
tap_check "sockets: ping6 to another host gets no answer" grep -qE '^ping6 2001:db8::20 refused (1|None)$' "$SL_OUT"
tap_check "sockets: a raw UDP packet to the listed host:port leaves" grep -qx 'raw 198.51.100.10 sent' "$SL_OUT"
tap_check "sockets: a raw UDP packet to another host fails with EPERM" grep -qx 'raw 198.51.100.20 refused 1' "$SL_OUT"
tap_check "sockets: a raw packet too short to judge is refused (IPv4)" \
	grep -qx 'short 169.254.169.254 refused 1' "$SL_OUT"
tap_check "sockets: a raw packet too short to judge is refused (IPv6)" \
	grep -qx 'short 2001:db8::20 refused 1' "$SL_OUT"
tap_cmp "sockets: the backstop logged them as unreadable" \
	"$(log_count "$log" type=decision hook=egress reason=unclassified_protocol)" -eq 2
tap_check "sockets: connect() on a ping socket to a host an icmp rule lists works" \
	grep -qx 'ping connect ok' "$SL_OUT"
assert_sink_saw "sockets: the raw datagram arrives at the listed host" 'udp 198.51.100.10 9999'
assert_sink_none "sockets: nothing raw reaches the other host" 'udp 198.51.100.20'
tap_cmp "sockets: the backstop logged the refused pings and the raw packet" \
	"$(log_count "$log" type=decision hook=egress decision=deny reason=default_deny)" -eq 3
tap_cmp "sockets: no socket was refused at creation" "$(log_count "$log" hook=sock_create)" -eq 0
assert_no_leftovers "sockets: nothing left"

# Source routing: the option is refused; sent as a control message, the datagram is dropped.
log=$SL_TMP/srr.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
lsrr = bytes([0x83, 7, 4, 203, 0, 113, 7, 0])
try:
    s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, lsrr); print('setsockopt set')
except OSError as e:
    print('setsockopt refused', e.errno)
try:
    s.sendmsg([b'srr'], [(socket.IPPROTO_IP, 7, lsrr)], 0, ('198.51.100.10', 9999)); print('cmsg sent')
except OSError as e:
    print('cmsg refused', e.errno)
s.sendto(b'plain', ('198.51.100.10', 9999)); print('plain sent')
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
rthdr = bytes([17, 2, 0, 1, 0, 0, 0, 0]) + socket.inet_pton(socket.AF_INET6, '2001:db8::20')
try:
    s6.setsockopt(socket.IPPROTO_IPV6, 57, rthdr); print('rthdr set')
except OSError as e:
    print('rthdr refused', e.errno)
"
tap_check "IP_OPTIONS (loose source route) is refused with EPERM" grep -qx 'setsockopt refused 1' "$SL_OUT"
tap_check "a source-routed datagram (IP_RETOPTS cmsg) fails with EPERM" grep -qx 'cmsg refused 1' "$SL_OUT"
tap_check "IPV6_RTHDR is refused with EPERM" grep -qx 'rthdr refused 1' "$SL_OUT"
assert_sink_none "nothing source-routed reaches a test host" 'udp 203.0.113.7' 'udp 198.51.100.10 9999 10.200.1.2 3'
assert_sink_saw "control: the plain datagram to the allowed host arrives" 'udp 198.51.100.10 9999'
tap_cmp "the log has the two setsockopt refusals" \
	"$(log_count "$log" hook=setsockopt decision=deny reason=source_route)" -eq 2
tap_cmp "the log has the egress drop" \
	"$(log_count "$log" hook=egress decision=deny reason=source_route)" -eq 1
assert_no_leftovers "source routing: nothing left"

# SO_ZEROCOPY is refused: MSG_ZEROCOPY would send pages the workload can still rewrite after
# the TLS check read them (see test_tls.sh P9-zerocopy-swap). Other socket options are not.
log=$SL_TMP/zerocopy.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.setsockopt(socket.SOL_SOCKET, 60, 1); print('zerocopy set')
except OSError as e:
    print('zerocopy refused', e.errno)
s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1); print('keepalive set')
"
tap_check "SO_ZEROCOPY is refused with EPERM" grep -qx 'zerocopy refused 1' "$SL_OUT"
tap_check "control: SO_KEEPALIVE is not" grep -qx 'keepalive set' "$SL_OUT"
tap_cmp "the log has the SO_ZEROCOPY refusal" \
	"$(log_count "$log" hook=setsockopt decision=deny reason=socket_kind)" -eq 1
assert_no_leftovers "SO_ZEROCOPY: nothing left"

# --user: CMD runs unprivileged, with no_new_privs, and the log says who it ran as.
log=$SL_TMP/user.jsonl
# (--netns, not ip netns exec: entering a namespace needs the privileges the user lacks)
sluice_run "$policy" "$log" --user nobody --netns "/run/netns/$SL_NS_RUN" -- sh -c \
	'id -u; grep NoNewPrivs /proc/self/status | tr -d "\t"'
tap_is "--user nobody: CMD runs as uid 65534" "$(sed -n 1p "$SL_OUT")" "65534"
tap_is "--user nobody: no_new_privs is set" "$(sed -n 2p "$SL_OUT")" "NoNewPrivs:1"
tap_cmp "--user nobody: run_start records the uid" "$(log_count "$log" type=run_start uid=65534)" -eq 1
sluice_run "$policy" "$SL_TMP/baduser.jsonl" --user no-such-user-here -- true
assert_rc "--user with an unknown user is refused before anything starts" 125
tap_check "--user with an unknown user says so" grep -q 'no user' "$SL_ERR"

tap_done
