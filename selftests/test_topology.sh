#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The selftest topology itself, without sluice: every test host is reachable from the run netns
# (so a probe that sluice fails to stop would be seen by a sink), nothing is routed anywhere else,
# the root netns is untouched, and topo_down leaves nothing behind.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
topo_up

# --- isolation --------------------------------------------------------------------------------

# route_get NS ADDR: "unreachable" if NS has no route, else the "dev X" part of the route.
route_get() {
	local out
	if ! out=$(ip -n "$1" route get "$2" 2>&1); then
		echo unreachable
		return
	fi
	echo "$out" | head -n 1 | grep -o 'dev [^ ]*'
}

isolation_cases=(
	# ns            address                  expected
	"$SL_NS_RUN     8.8.8.8                  dev veth0"
	"$SL_NS_RTR     8.8.8.8                  unreachable"
	"$SL_NS_RTR     10.0.0.1                 unreachable"
	"$SL_NS_RTR     2001:4860:4860::8888     unreachable"
	"$SL_NS_RTR     192.0.2.1                unreachable"
	"$SL_NS_INET    8.8.8.8                  dev veth0"
	"$SL_NS_RTR     198.51.100.20            dev vinet"
	"$SL_NS_RTR     169.254.169.254          dev vinet"
	"$SL_NS_RTR     64:ff9b::a9fe:a9fe       dev vinet"
)
for c in "${isolation_cases[@]}"; do
	read -r ns addr want <<<"$c"
	tap_is "route in $ns to $addr: $want" "$(route_get "$ns" "$addr")" "$want"
done

# The router forwards only the test prefixes: a packet to anything else dies there. (For TCP over
# IPv6 an ICMPv6 "no route" is a soft error: the connect then times out.)
for addr in 8.8.8.8 2001:4860:4860::8888; do
	out=$(in_run "$SL_PROBE" tcp "$addr" 80 --timeout-ms 1000)
	case $out in
	"err EHOSTUNREACH "* | "err ENETUNREACH "* | "err ETIMEDOUT "*)
		tap_ok "tcp from the run netns to $addr port 80 is unreachable at the router"
		;;
	*)
		tap_fail "tcp from the run netns to $addr port 80 is unreachable at the router" \
			"expected err EHOSTUNREACH, ENETUNREACH or ETIMEDOUT, got \"$out\""
		;;
	esac
done

# Nothing of ours in the root netns: no route to any test prefix was added there.
for p in 198.51.100.0/24 203.0.113.0/24 169.254.0.0/16 10.200.1.0/30 10.200.2.0/30; do
	tap_is "root netns has no route entry for $p" "$(ip route show "$p")" ""
done
for p in 2001:db8::/32 fd00:ec2::/32 64:ff9b::/96 fd10:200:1::/64 fd10:200:2::/64; do
	tap_is "root netns has no route entry for $p" "$(ip -6 route show "$p")" ""
done

# --- reachability: what a failed control would hit --------------------------------------------

# mode  addr                      port  sink line                             sink
reach_cases=(
	"tcp          198.51.100.10          80    tcp 198.51.100.10 80                   inet"
	"tcp          198.51.100.20          80    tcp 198.51.100.20 80                   inet"
	"tcp          203.0.113.7            8080  tcp 203.0.113.7 8080                   inet"
	"tcp          169.254.169.254        80    tcp 169.254.169.254 80                 inet"
	"tcp          ::ffff:169.254.169.254 80    tcp 169.254.169.254 80                 inet"
	"tcp          2001:db8::10           443   tcp 2001:db8::10 443                   inet"
	"tcp          2001:db8::20           80    tcp 2001:db8::20 80                    inet"
	"tcp          fd00:ec2::254          80    tcp fd00:ec2::254 80                   inet"
	"tcp          64:ff9b::a9fe:a9fe     80    tcp 64:ff9b::a9fe:a9fe 80              inet"
	"tcp          fe80::1%veth0          80    tcp fe80::1 80                         rtr"
	"udp-sendto   198.51.100.20          9999  udp 198.51.100.20 9999                 inet"
	"udp-sendmsg  2001:db8::20           53    udp 2001:db8::20 53                    inet"
	"udp-sendmmsg 169.254.169.254        5353  udp 169.254.169.254 5353               inet"
	"udp-connect  ::ffff:169.254.169.254 443   udp 169.254.169.254 443                inet"
	"udp-sendto   64:ff9b::a9fe:a9fe     53    udp 64:ff9b::a9fe:a9fe 53              inet"
	"udp-sendto   fe80::1%veth0          9999  udp fe80::1 9999                       rtr"
)
for c in "${reach_cases[@]}"; do
	read -r mode addr port k1 k2 k3 where <<<"$c"
	pat="$k1 $k2 $k3"
	want=1
	[[ $mode == udp-sendmmsg ]] && want=3
	sink_mark
	out=$(in_run "$SL_PROBE" "$mode" "$addr" "$port" | sort -u | tr '\n' ' ')
	if [[ $where == rtr ]]; then
		for _ in $(seq 60); do
			[[ $(rtr_sink_count "$pat") -ge $want ]] && break
			sleep 0.05
		done
		got=$(rtr_sink_count "$pat")
	else
		sink_wait "$pat" "$want"
		got=$(sink_count "$pat")
	fi
	name="$mode $addr $port without sluice: probe ok, $where sink logged \"$pat\" x$want"
	if [[ $out == "ok " && $got -eq $want ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected probe \"ok\" and $want sink line(s);
got probe \"$out\", $got line(s):
$(sink_new_lines)"
	fi
done

# The sink's reply is what curl needs.
body=$(in_run curl -s --noproxy '*' --max-time 5 http://198.51.100.10/)
tap_is "curl http://198.51.100.10/ in the run netns answers ok" "$body" "ok"

# A refused port is refused by the test host, promptly.
out=$(in_run "$SL_PROBE" tcp 198.51.100.10 81)
tap_is "tcp to a closed port of a test host is refused" "${out% *}" "err ECONNREFUSED"

# --- cleanup ----------------------------------------------------------------------------------

pids=("${SL_PIDS[@]}")
tmp=$SL_TMP
topo_down
left=$(ip netns list | grep -E "^sl-(run|rtr|inet)-$SL_ID( |$)")
tap_is "topo_down removes the three namespaces" "$left" ""
alive=
for p in "${pids[@]}"; do
	kill -0 "$p" 2>/dev/null && alive+="$p "
done
tap_is "topo_down stops the sinks" "$alive" ""
tap_is "topo_down removes the temp dir" "$([[ -e $tmp ]] && echo "$tmp exists")" ""

tap_done
