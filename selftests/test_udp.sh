#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# UDP enforcement (P3, P16): unconnected sendto, sendmsg and sendmmsg to an unlisted host are
# denied per datagram (an error each, nothing at the test host, a deny line each); a connected UDP
# socket is denied at connect; the allowed host with a UDP rule gets every datagram; UDP to a port
# that only a TCP rule allows (QUIC on 443) is denied.

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

tap_done
