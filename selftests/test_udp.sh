#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# UDP enforcement (P3, P16): unconnected sendto, sendmsg and sendmmsg to an unlisted host are
# denied per datagram (an error each, nothing at the test host, a deny line each); a connected UDP
# socket is denied at connect; the allowed host with a UDP rule gets every datagram; UDP to a port
# that only a TCP rule allows (QUIC on 443) is denied; a connected socket sending with a control
# message is judged by its peer (P24).

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

CASE_REQ='https://tooling.example/egress/request?host={host}'
CASE_POLICY=$SL_TMP/udp.yaml
cat >"$CASE_POLICY" <<EOF
default: deny
request_access: "$CASE_REQ"
rules:
  - name: udp-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [9999]
    protocols: [udp]
  - name: web
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [443]
    protocols: [tcp]
EOF

# label                  mode          addr           port hook      rule
allowed=(
	"udp-sendto-v4        udp-sendto    198.51.100.10  9999 sendmsg4  udp-host"
	"udp-sendmsg-v4       udp-sendmsg   198.51.100.10  9999 sendmsg4  udp-host"
	"udp-sendmmsg-v4      udp-sendmmsg  198.51.100.10  9999 sendmsg4  udp-host"
	"udp-sendto-v6        udp-sendto    2001:db8::10   9999 sendmsg6  udp-host"
	"udp-sendmmsg-v6      udp-sendmmsg  2001:db8::10   9999 sendmsg6  udp-host"
	"udp-connect-v4       udp-connect   198.51.100.10  9999 connect4  udp-host"
	"udp-connect-v6       udp-connect   2001:db8::10   9999 connect6  udp-host"
	"tcp-443-control      tcp           198.51.100.10  443  connect4  web"
)
for c in "${allowed[@]}"; do
	read -r label mode addr port hook rule <<<"$c"
	probe_allowed "$label" "$mode" "$addr" "$port" "$hook" "$rule"
done

# label                  mode          addr           port errno hook      rule
denied=(
	"P3-sendto-v4         udp-sendto    198.51.100.20  9999 EPERM sendmsg4  default"
	"P3-sendmsg-v4        udp-sendmsg   198.51.100.20  9999 EPERM sendmsg4  default"
	"P3-sendmmsg-v4       udp-sendmmsg  198.51.100.20  9999 EPERM sendmsg4  default"
	"P3-sendto-v6         udp-sendto    2001:db8::20   9999 EPERM sendmsg6  default"
	"P3-sendmsg-v6        udp-sendmsg   2001:db8::20   5353 EPERM sendmsg6  default"
	"P3-sendmmsg-v6       udp-sendmmsg  2001:db8::20   9999 EPERM sendmsg6  default"
	"udp-connect-unl-v4   udp-connect   198.51.100.20  9999 EPERM connect4  default"
	"udp-connect-unl-v6   udp-connect   2001:db8::20   9999 EPERM connect6  default"
	"udp-wrong-port       udp-sendto    198.51.100.10  5353 EPERM sendmsg4  default"
	"P16-quic-v4          udp-sendto    198.51.100.10  443  EPERM sendmsg4  default"
	"P16-quic-v6          udp-sendmsg   2001:db8::10   443  EPERM sendmsg6  default"
	"P16-quic-connect     udp-connect   198.51.100.10  443  EPERM connect4  default"
)
for c in "${denied[@]}"; do
	read -r label mode addr port errno hook rule <<<"$c"
	probe_denied "$label" "$mode" "$addr" "$port" "$errno" "$hook" "$rule"
done

# A UDP connect() sends nothing (glibc connects one to every candidate address to sort them):
# it succeeds, and only a send is denied; a socket that never sends leaves no denial behind,
# and one that is connected again to an allowed destination sends normally.
log=$SL_TMP/udp-connect-only.jsonl
sluice_run "$CASE_POLICY" "$log" -- "${RUN_EXEC[@]}" python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(('198.51.100.20', 9999)); print('connected')
s.connect(('198.51.100.10', 9999)); s.send(b'reconnected'); print('sent')
"
tap_is "udp: connect() to an unlisted host succeeds, reconnecting to an allowed one sends" \
	"$(tr '\n' ' ' <"$SL_OUT")" "connected sent "
tap_cmp "udp: a connect() never followed by a send leaves no denial in the log" \
	"$(log_count "$log" type=decision decision=deny)" -eq 0
tap_check "udp: nor on stderr" bash -c "! grep -q 'egress denied' '$SL_ERR'"
assert_sink_saw "udp: the datagram after reconnecting arrives" 'udp 198.51.100.10 9999'

# P24: a connected UDP socket that sends with an IP-level control message (PKTINFO, TOS, TTL,
# hop limit, traffic class: QUIC stacks send ECN this way) reaches the sendmsg programs with no
# address: it is judged by the socket's connected peer. One socket per control message, each
# connected and sending once; a v6 socket with a v4-mapped peer too (the kernel sends that as
# IPv4, through the sendmsg4 programs with the peer's address), and UDP_SEGMENT (a UDP-level
# message: the connected fast path, judged at connect, except on kernels that hand it over too).
cat >"$SL_TMP/cmsg.py" <<'EOF2'
import errno, socket, struct, sys

v4, v6 = sys.argv[1], sys.argv[2]
cases = [
    ("ip_pktinfo", socket.AF_INET, v4, 0, 8, struct.pack("@i4s4s", 0, bytes(4), bytes(4))),
    ("ip_tos", socket.AF_INET, v4, 0, 1, struct.pack("@i", 2)),
    ("ip_ttl", socket.AF_INET, v4, 0, 2, struct.pack("@i", 64)),
    ("ipv6_pktinfo", socket.AF_INET6, v6, 41, 50, struct.pack("@16si", bytes(16), 0)),
    ("ipv6_hoplimit", socket.AF_INET6, v6, 41, 52, struct.pack("@i", 64)),
    ("ipv6_tclass", socket.AF_INET6, v6, 41, 67, struct.pack("@i", 2)),
    ("udp_segment_v6", socket.AF_INET6, v6, 17, 103, struct.pack("@H", 1400)),
    ("mapped_ip_tos", socket.AF_INET6, "::ffff:" + v4, 0, 1, struct.pack("@i", 2)),
    ("mapped_ipv6_pktinfo", socket.AF_INET6, "::ffff:" + v4, 41, 50,
     struct.pack("@16si", socket.inet_pton(socket.AF_INET6, "::ffff:0.0.0.0"), 0)),
]
for name, fam, dst, level, typ, data in cases:
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((dst, 9999))
    try:
        s.sendmsg([b"P24 " + name.encode()], [(level, typ, data)])
        print(name, "ok")
    except OSError as e:
        print(name, "err", errno.errorcode.get(e.errno, e.errno))
    s.close()
EOF2
p24_want() {
	local r=$1 c out=
	for c in ip_pktinfo ip_tos ip_ttl ipv6_pktinfo ipv6_hoplimit ipv6_tclass udp_segment_v6 \
		mapped_ip_tos mapped_ipv6_pktinfo; do
		out+="$c $r;"
	done
	echo "$out"
}

log=$SL_TMP/p24-allowed.jsonl
sluice_run "$CASE_POLICY" "$log" -- "${RUN_EXEC[@]}" python3 "$SL_TMP/cmsg.py" \
	198.51.100.10 2001:db8::10
tap_is "P24: every send with a control message to the allowed host succeeds" \
	"$(tr '\n' ';' <"$SL_OUT")" "$(p24_want ok)"
assert_sink_saw "P24: the IPv4 ones (and v4-mapped) arrive" 'udp 198.51.100.10 9999' 5
assert_sink_saw "P24: the IPv6 ones arrive" 'udp 2001:db8::10 9999' 4
assert_log "P24: each IPv4 (and v4-mapped) socket's send is logged as allowed to the real peer" \
	"$log" 5 \
	type=decision hook=sendmsg4 dst=198.51.100.10 port=9999 decision=allow rule=udp-host \
	family=ipv4
assert_log "P24: each IPv6 socket's send is logged as allowed to the real peer" "$log" +3 \
	type=decision hook=sendmsg6 dst=2001:db8::10 port=9999 decision=allow rule=udp-host \
	family=ipv6
assert_log "P24: nothing is denied" "$log" 0 type=decision decision=deny
assert_log "P24: no line names port 0" "$log" 0 type=decision port=0
assert_no_leftovers "P24 allowed: nothing left"

log=$SL_TMP/p24-denied.jsonl
sluice_run "$CASE_POLICY" "$log" -- "${RUN_EXEC[@]}" python3 "$SL_TMP/cmsg.py" \
	198.51.100.20 2001:db8::20
tap_is "P24: every send with a control message to a denied host fails (EPERM)" \
	"$(tr '\n' ';' <"$SL_OUT")" "$(p24_want "err EPERM")"
assert_sink_none "P24: none of them arrives" 'udp 198.51.100.20' 'udp 2001:db8::20'
# the held denial of each connect(), recorded at the socket's first send
assert_log "P24: each IPv4 socket's denial names the real peer" "$log" 3 \
	type=decision hook=connect4 dst=198.51.100.20 port=9999 decision=deny rule=default \
	enforced=true
assert_log "P24: each IPv6 socket's denial names the real peer" "$log" 4 \
	type=decision hook=connect6 dst=2001:db8::20 port=9999 decision=deny rule=default \
	enforced=true
assert_log "P24: the v4-mapped sends are denied as IPv4" "$log" 2 \
	type=decision hook=sendmsg4 dst=198.51.100.20 port=9999 decision=deny rule=default
assert_log "P24: no line names port 0" "$log" 0 type=decision port=0
assert_log "P24: nothing else is logged as denied" "$log" 9 type=decision decision=deny
assert_no_leftovers "P24 denied: nothing left"

# A DNS query on a connected socket, sent with a control message: the peer is the run's resolver
# (connect() redirected it), which answers (here: NXDOMAIN for an unlisted name). The resolver
# listens in the run's namespace: --netns.
log=$SL_TMP/p24-dns.jsonl
sluice_run "$CASE_POLICY" "$log" --netns "/run/netns/$SL_NS_RUN" -- python3 -c "
import socket, struct
q = struct.pack('>HHHHHH', 0x2424, 0x0100, 1, 0, 0, 0)
q += b''.join(bytes([len(l)]) + l for l in (b'unlisted', b'example')) + b'\0'
q += struct.pack('>HH', 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(('198.51.100.20', 53))
s.settimeout($((5 * SL_SLOW)))
try:
    s.sendmsg([q], [(socket.IPPROTO_IP, 1, struct.pack('@i', 2))])
    a, peer = s.recvfrom(512)
    print('answered', a[3] & 15, peer[0])
except OSError as e:
    print('failed', e)
"
tap_is "P24: a DNS query with a control message reaches the run's resolver, which answers" \
	"$(cat "$SL_OUT")" "answered 3 198.51.100.20"
assert_log "P24: it is not denied" "$log" 0 type=decision decision=deny
assert_no_leftovers "P24 dns: nothing left"

tap_done
