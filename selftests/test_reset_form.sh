#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The RST of a socket sluice destroys carries nothing a workload without CAP_NET_ADMIN chose
# (sluice.8, Connections made before the attach). The attacker: a process in the run's cgroup
# holds connections made before the attach to hosts the policy denies, each with the socket
# options that would put its bits into the kernel's RST (tools/sl_rstform.py: IP_TOS, IP_TTL,
# IP_MTU_DISCOVER, SO_RCVBUF, IPV6_TCLASS, IPV6_UNICAST_HOPS, a flow label, TCP_MD5SIG under its
# own key); the attach destroys them. The test host records every RST it receives on an
# AF_PACKET socket:
# - with --netns (the host side puts the RST into its fixed form): each plain RST arrives with
#   TOS/traffic class 0, flow label 0, IP ID 0, DF alone, TTL/hop limit 64 less the router's
#   hop, window 0, urgent pointer 0, RST|ACK, its options (the timestamps) all NOPs; and the
#   peer's end is reset. The MD5 one (options of the workload's length) arrives not at all, nor
#   does one to the blackhole (169.254.169.254, fd00:ec2::254 and 64:ff9b::a9fe:a9fe, owned by
#   the test host here: connections a run could not make, made before the attach): the packet
#   layer lets none of theirs out, its sl_resets holds no frame toward them for the host side to
#   pass. With a link in the namespace that is neither a veth nor its loopback (a macvlan: a way
#   out no host side sees), none leaves.
# - without --netns (no program on the path can write to the frame): no RST arrives at all.
# - an attach without --reset-peers (the operator's word that its workload holds no
#   CAP_NET_ADMIN): none leaves.
# - a sluice run whose allowed flow a replace-policy cuts: its RST arrives fixed, after a take-over
#   by a new daemon too (it finds its tcx links' peers); with --allow-root (TCP_REPAIR could set
#   the RST's sequence numbers) none arrives, nor with a veth added to the namespace after the
#   attach whose peer, in a namespace of its own, has no host side.
#   A daemon started in the run's own namespace takes such a run over too (its kills are told
#   that namespace, its own): the RST of a flow the switch's scan could not find (its socket in
#   flight, SCM_RIGHTS), which the backstop denies at its next packet and the writer destroys,
#   arrives fixed, as it does after a take-over by a daemon outside.
# - a daemon killed inside a destroy leaves the socket's cookie marked: the next one, taking the
#   run over, empties sl_destroying.
# - a socket of the run's cgroup in a network namespace of its own, with a way out no host side
#   sees, denied on the packet path: not found in the run's namespace (the one judged), it is
#   destroyed in its holder's, unmarked, and that RST does not leave; the same ended in the run's
#   namespace, its cookie left marked (a daemon killed inside the destroy): its own RST
#   (SO_LINGER 0) does not leave.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"

cat >"$SL_TMP/deny.yaml" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
EOF
printf '%s\n' 'default: deny' 'rules:' '  - name: test-host' \
	'    cidrs: ["198.51.100.20/32"]' '    ports: [80]' >"$SL_TMP/allow.yaml"
FORM=$SL_LIB_DIR/tools/sl_rstform.py
# watcher DIR [NETNS]: the test host (or NETNS) records every RST it receives in DIR/seen, until
# DIR/stop exists
watcher() {
	local in=(in_inet)
	[[ -n ${2:-} ]] && in=(ip netns exec "$2")
	mkdir -p "$1"
	"${in[@]}" python3 "$FORM" watch "$1" >"$1/out" 2>&1 &
	sl_track_pid "$!"
	sl_on_exit "touch '$1/stop'"
	wait_until 5000 test -e "$1/ready" || bail_out "the watcher: $(cat "$1/out")"
}
# the blackhole, as IPv4, as IPv6 (AWS's), and embedded in NAT64's well-known prefix
MD=169.254.169.254 MD6=fd00:ec2::254 MD64=64:ff9b::a9fe:a9fe

tap_plan 51

# attacked NAME [ATTACH_ARGS...]: the attacker's connections, made in a new cgroup before the
# attach; the attach (enforce) destroys them while the test host watches. Sets W (the
# watcher's dir: seen), H (the holder's: ports, result) and LOG.
attacked() {
	local name=$1 cg run out
	shift
	W=$SL_TMP/$name-watch H=$SL_TMP/$name-hold LOG=$SL_TMP/$name.jsonl
	mkdir -p "$H"
	cg=$(sl_cgroup_new "$name") || bail_out "cannot make the test cgroup"
	sl_on_exit "sl_cgroup_remove '$cg'"
	sl_on_exit "touch '$H/stop'"
	watcher "$W"
	sl_in_cgroup "$cg" "${RUN_EXEC_NETONLY[@]}" python3 "$FORM" hold "$H" \
		v4opts 198.51.100.20 80 v6opts 2001:db8::20 80 md5 198.51.100.20 80 \
		plain 198.51.100.20 80 plain "$MD" 80 plain "$MD6" 80 plain "$MD64" 80 \
		>"$H/out" 2>&1 &
	sl_track_pid "$!"
	wait_until 10000 test -e "$H/ready" || bail_out "the holder: $(tr "\n" " " <"$H/out")"
	sink_mark
	run=t-$SL_ID-$name
	SL_RUNS+=("$run")
	out=$("$SLUICE" attach --cgroup "$cg" --policy "$SL_TMP/deny.yaml" --run-id "$run" \
		--mode enforce --log "$LOG" "$@" 2>&1) ||
		bail_out "attach of $name failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
	wait_until 10000 log_count_at_least "$LOG" 7 type=preexisting flow=destroyed
	sink_settle
	touch "$W/stop" "$H/stop"
	wait_until 5000 test -e "$H/result"
	tap_is "$name: the attach destroyed the attacker's seven connections" \
		"$(log_count "$LOG" type=preexisting decision=deny flow=destroyed)" 7 ||
		tap_diag_file "$LOG"
}
# prog_map_id PROG NAME: the id of the map NAME that program PROG uses
prog_map_id() {
	local id
	for id in $(bpftool -j prog show id "$1" |
		python3 -c 'import json, sys; print(*json.load(sys.stdin)["map_ids"])'); do
		bpftool -j map show id "$id" | grep -q "\"name\":\"$2\"" || continue
		echo "$id"
		return
	done
	return 1
}
# run_map_id RUN NAME: the id of the map NAME the run's egress program (the packet layer) uses
run_map_id() {
	local prog
	prog=$(bpftool -j link show pinned "/sys/fs/bpf/sluice/$1/egress" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["prog_id"])') || return 1
	prog_map_id "$prog" "$2"
}
# run_map RUN NAME: the JSON dump (bpftool) of the map NAME the run's egress program uses
run_map() {
	local id
	id=$(run_map_id "$1" "$2") || return 1
	bpftool -j map dump id "$id"
}
# host_side_map_id NAME: the id of the map NAME the host side's program on the run's veth (vrun's
# ingress, tcx or clsact) uses; nothing if there is not exactly one such program. bpftool names
# a tcx link's program "sl_tc_ingress" with its "prog_id", a clsact filter's (kernels before 6.6)
# "sl_tc_ingress:[ID]" with its "id".
host_side_map_id() {
	local progs
	progs=$(in_rtr bpftool -j net show dev vrun | python3 -c 'import json, sys
for dev in json.load(sys.stdin):
    for tc in dev.get("tc", []):
        name = tc.get("name", "")
        if (name == "sl_tc_ingress" or name.startswith("sl_tc_ingress:[")) and \
                tc.get("kind", "").endswith("ingress"):
            print(tc.get("prog_id", tc.get("id")))') || return 1
	[[ $progs =~ ^[0-9]+$ ]] || return 1
	prog_map_id "$progs" "$1"
}
# reset_dsts MAP_ID: the destination of each frame the packet layer let out and wrote down for
# its host side to pass (sl_resets: struct sl_ns_flow_key, daddr at 16, family at 36)
reset_dsts() {
	local dump
	dump=$(bpftool -j map dump id "$1") || return 1
	python3 -c 'import ipaddress, json, socket, sys
for e in json.loads(sys.argv[1]):
    k = bytes(int(b, 16) for b in e["key"])
    print(ipaddress.ip_address(k[16:20] if k[36] == socket.AF_INET else k[16:32]))' "$dump"
}
# rst_of KIND: the lines the test host saw for the connection of KIND (by its source port)
rst_of() {
	local port
	port=$(awk -v k="$1" '$1 == k { print $2; exit }' "$H/ports")
	awk -v p="${port:-0}" '$3 == p' "$W/seen" 2>/dev/null
}
# fixed_form LINE TTL: LINE's fields, with the fixed ones said "fixed"
fixed_form() {
	sed -E "s/ tos=0 ttl=$2 id=0 frag=0x4000 label=0x0 / fixed /; \
		s/ tos=0 ttl=$2 id=0 frag=0x0 label=0x0 / fixed /; \
		s/ win=0 urg=0 flags=0x14 opts=(-|010101010101010101010101)$/ fixed/" <<<"$1" |
		awk '{ print $1, $6, $7 }'
}

# --- with a host side: the RST leaves, in its fixed form
attacked netns --netns "/run/netns/$SL_NS_RUN" --reset-peers
line=$(rst_of v4opts)
tap_is "netns: the IPv4 RST (IP_TOS, IP_TTL, no DF, SO_RCVBUF) arrives in its fixed form" \
	"$(fixed_form "$line" 63)" "ipv4 fixed fixed" || tap_diag "$line"
line=$(rst_of v6opts)
tap_is "netns: the IPv6 RST (IPV6_TCLASS, hop limit, flow label, SO_RCVBUF) arrives fixed" \
	"$(fixed_form "$line" 63)" "ipv6 fixed fixed" || tap_diag "$line"
line=$(rst_of plain)
tap_is "netns: a plain one arrives, fixed" "$(fixed_form "$line" 63)" "ipv4 fixed fixed" ||
	tap_diag "$line"
tap_is "netns: the MD5 one (its options' length the workload's) is refused" "$(rst_of md5)" ""
tap_is "netns: the blackhole's three connections (made before the attach) were destroyed" \
	"$(log_count "$LOG" type=preexisting "dst=$MD" flow=destroyed)\
 $(log_count "$LOG" type=preexisting "dst=$MD6" flow=destroyed)\
 $(log_count "$LOG" type=preexisting "dst=$MD64" flow=destroyed)" "1 1 1" || tap_diag_file "$LOG"
# (the sl_resets read below is the one the packet layer writes and the host side reads: an
# empty map of another program's would show no frame toward the blackhole all the same)
resets_id=$(run_map_id "t-$SL_ID-netns" sl_resets)
host_resets_id=$(host_side_map_id sl_resets)
if [[ -n $resets_id && $resets_id == "$host_resets_id" ]]; then
	tap_ok "netns: the run's egress program and its host side's on vrun share one sl_resets"
else
	tap_fail "netns: the run's egress program and its host side's on vrun share one sl_resets" \
		"the egress program's sl_resets: id \"$resets_id\", vrun's sl_tc_ingress's:\
 id \"$host_resets_id\" ($(in_rtr bpftool net show dev vrun 2>&1 | tr '\n' ' '))"
fi
if [[ -n $resets_id ]] && dsts=$(reset_dsts "$resets_id"); then
	tap_is "netns: the packet layer let no RST toward the blackhole out (none in sl_resets)" \
		"$(grep -cxF -e "$MD" -e "$MD6" -e "$MD64" <<<"$dsts")" 0 || tap_diag "$dsts"
else
	tap_fail "netns: the packet layer let no RST toward the blackhole out (none in sl_resets)" \
		"the run's sl_resets map could not be read"
fi
tap_is "netns: no RST reaches the blackhole" \
	"$(awk -v a="$MD" -v b="$MD6" -v c="$MD64" '$4 == a || $4 == b || $4 == c' "$W/seen")" ""
tap_is "netns: every RST the test host got is one of those three" "$(wc -l <"$W/seen")" 3 ||
	tap_diag_file "$W/seen"
tap_is "netns: the test host's ends of the plain and IPv4 ones were reset (closed)" \
	"$(sink_count "tcp 198.51.100.20 80 10.200.1.2")" 2 || tap_diag "$(sink_new_lines)"
tap_is "netns: the holder's sends fail (ECONNABORTED)" \
	"$(grep -c ' ECONNABORTED$' "$H/result")" 7 || tap_diag_file "$H/result"

# (its host side judges every frame of the namespace: it goes before the next run)
out=$("$SLUICE" detach --run-id "t-$SL_ID-netns" 2>&1)
tap_check "netns: the run detaches" test -z "${out##*\"ok\":true*}"

# --- with one, but without the operator's word that the workload holds no CAP_NET_ADMIN (attach
# --reset-peers): a container's root may own its namespace and set the RST's sequence numbers
# with TCP_REPAIR, so none is let out
attacked noword --netns "/run/netns/$SL_NS_RUN"
tap_is "netns, attached without --reset-peers: no RST reaches the test host" \
	"$(cat "$W/seen" 2>/dev/null)" ""
out=$("$SLUICE" detach --run-id "t-$SL_ID-noword" 2>&1)
tap_check "netns, attached without --reset-peers: the run detaches" \
	test -z "${out##*\"ok\":true*}"

# --- with one, and a way out it does not see (a macvlan on the run's veth, standing for any link
# but a veth: an ipvlan, a tunnel): no RST is let out there either
ip -n "$SL_NS_RUN" link add sl-other link "$SL_RUN_IF" type macvlan ||
	bail_out "cannot add a macvlan link"
sl_on_exit "ip -n '$SL_NS_RUN' link del sl-other 2>/dev/null"
attacked other --netns "/run/netns/$SL_NS_RUN" --reset-peers
tap_is "netns with another link: no RST reaches the test host" "$(cat "$W/seen" 2>/dev/null)" ""
out=$("$SLUICE" detach --run-id "t-$SL_ID-other" 2>&1)
tap_check "netns with another link: the run detaches" test -z "${out##*\"ok\":true*}"
ip -n "$SL_NS_RUN" link del sl-other

# --- without one: no program on the path can write to the frame: none leaves
attacked cgroup --reset-peers
tap_is "cgroup only: no RST reaches the test host" "$(cat "$W/seen" 2>/dev/null)" ""
tap_is "cgroup only: the test host's ends stay open (no line closed)" \
	"$(sink_count "tcp 198.51.100.20 80")" 0 || tap_diag "$(sink_new_lines)"
tap_is "cgroup only: the holder's sends fail (ECONNABORTED)" \
	"$(grep -c ' ECONNABORTED$' "$H/result")" 7 || tap_diag_file "$H/result"
# (a control: the watcher does see a RST the test host itself is sent by the router)
watcher "$SL_TMP/ctl"
in_rtr python3 "$SL_LIB_DIR/tools/sl_rawrst.py" send 198.51.100.20 443 40999 0x51c00001 \
	>/dev/null 2>&1
wait_until 3000 grep -qs ' 40999 ' "$SL_TMP/ctl/seen"
touch "$SL_TMP/ctl/stop"
tap_is "control: the watcher sees a RST the router sends the test host" \
	"$(grep -c ' 40999 198.51.100.20 443 ' "$SL_TMP/ctl/seen")" 1
out=$("$SLUICE" detach --run-id "t-$SL_ID-cgroup" 2>&1)
tap_check "cgroup only: the run detaches" test -z "${out##*\"ok\":true*}"

# --- a `sluice run` whose flow a switch cuts (replace-policy to a policy that denies it): the
# workload holds a plain connection to the test host, allowed at first; the switch destroys it
# while the test host watches. Sets W, H, LOG.
# switched NAME BEFORE [RUN_ARGS...]: BEFORE is run (eval) once the connection is up, before
# the switch
switched() {
	local name=$1 before=$2 out
	shift 2
	W=$SL_TMP/$name-watch H=$SL_TMP/$name-hold LOG=$SL_TMP/$name.jsonl
	mkdir -p "$H"
	sl_on_exit "touch '$H/stop'"
	watcher "$W"
	sluice_start "$SL_TMP/allow.yaml" "$LOG" --netns "/run/netns/$SL_NS_RUN" "$@" -- \
		python3 "$FORM" hold "$H" plain 198.51.100.20 80
	wait_until 10000 test -e "$H/ready" ||
		bail_out "$name: the holder: $(cat "$SL_ERR" "$H/out" 2>/dev/null | tr "\n" " ")"
	eval "$before"
	sink_mark
	out=$("$SLUICE" replace-policy --run-id "$SL_RUN_ID" "$SL_TMP/deny.yaml" 2>&1) ||
		bail_out "$name: replace-policy: $out"
	wait_until 10000 log_count_at_least "$LOG" 1 type=preexisting flow=destroyed
	sink_settle
	touch "$W/stop" "$H/stop"
	sluice_wait 20 || bail_out "$name: the run did not end"
	tap_is "$name: the switch destroyed the workload's connection (its send: ECONNABORTED)" \
		"$(grep -c ' ECONNABORTED$' "$H/result")" 1 || tap_diag_file "$H/result"
}
# shellcheck disable=SC2317 # called through eval
# daemon_restart: the daemon ended (its runs left to the next) and started again; the next one
# takes the run over and finds its host side's peers (loader_refind_host_side), and, where the
# run has a BPF LSM layer (a VM's kernel), its LSM pins, which the switch then replaces too.
daemon_restart() {
	sl_daemon_kill TERM
	# shellcheck disable=SC2119 # no arguments: the default daemon
	sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
	# shellcheck disable=SC2016 # expanded by that sh
	wait_until 10000 sh -c '"$1" status --json 2>/dev/null | grep -q "\"run_id\":\"$2\""' sh \
		"$SLUICE" "$SL_RUN_ID"
}

# the default confined root (no CAP_NET_ADMIN), taken over by a new daemon before the switch: its
# RST leaves, fixed (the control of the two cases after it)
switched run daemon_restart
line=$(rst_of plain)
tap_is "run, taken over: the RST arrives, fixed" "$(fixed_form "$line" 63)" "ipv4 fixed fixed" ||
	tap_diag "$line $(tail -n 5 "$SL_DAEMON_DIR/err")"
# … taken over by a daemon started in the run's own namespace (its own is the run's: no other
# to find, and a switch's destroy goes by the namespace the socket was found in)
# shellcheck disable=SC2016 # expanded by eval
switched ownns 'SL_DAEMON_NETNS=/run/netns/$SL_NS_RUN daemon_restart'
line=$(rst_of plain)
tap_is "run, taken over by a daemon in the run's namespace: the RST arrives, fixed" \
	"$(fixed_form "$line" 63)" "ipv4 fixed fixed" || tap_diag "$line $(tail -n 5 "$SL_DAEMON_DIR/err")"
daemon_restart # (the host's again: the next run's resolver reaches its upstream from there)

# --- a flow no switch's scan finds (its socket in flight, SCM_RIGHTS: tools/sl_hide.py), which
# the backstop denies at its first packet out under the new policy, after a take-over: the
# writer's own kill destroys it, and must be told the run's namespace (for a daemon in it, its
# own: without one, the kill sees no way out it can judge and lets no RST leave)
# in_flight NAME BEFORE: BEFORE (eval) runs once the socket is hidden, before the switch
in_flight() {
	local name=$1 before=$2 out
	W=$SL_TMP/$name-watch H=$SL_TMP/$name-hide LOG=$SL_TMP/$name.jsonl
	mkdir -p "$H"
	sl_on_exit "touch '$H/go'"
	watcher "$W"
	sluice_start "$SL_TMP/allow.yaml" "$LOG" --netns "/run/netns/$SL_NS_RUN" -- \
		python3 "$SL_LIB_DIR/tools/sl_hide.py" "$H" inflight 198.51.100.20 80
	wait_until 10000 test -e "$H/ready" ||
		bail_out "$name: the hider: $(tr "\n" " " <"$SL_ERR" 2>/dev/null)"
	eval "$before"
	out=$("$SLUICE" replace-policy --run-id "$SL_RUN_ID" "$SL_TMP/deny.yaml" 2>&1) ||
		bail_out "$name: replace-policy: $out"
	touch "$H/go"
	wait_until 10000 log_count_at_least "$LOG" 1 type=decision flow=destroyed
	sink_settle
	touch "$W/stop"
	sluice_wait 20 || bail_out "$name: the run did not end"
	tap_is "$name: the backstop denied the flow at its next packet, and destroyed it" \
		"$(log_count "$LOG" type=decision hook=egress decision=deny enforced=true \
			dst=198.51.100.20 port=80 flow=destroyed)" 1 || tap_diag_file "$LOG"
}
# (the RST from the hidden socket: its port is not written down, the watched host has no other)
rst_to_80() { awk '$5 == 80' "$W/seen" 2>/dev/null | head -n 1; }
# shellcheck disable=SC2016 # expanded by eval
in_flight flight_ownns 'SL_DAEMON_NETNS=/run/netns/$SL_NS_RUN daemon_restart'
line=$(rst_to_80)
tap_is "a flow in flight at the switch, taken over by a daemon in the run's namespace: the RST \
arrives, fixed" "$(fixed_form "$line" 63)" "ipv4 fixed fixed" ||
	tap_diag "$line $(tail -n 5 "$SL_DAEMON_DIR/err")"
daemon_restart
in_flight flight daemon_restart # (the control: the host's daemon)
line=$(rst_to_80)
tap_is "a flow in flight at the switch, taken over: the RST arrives, fixed" \
	"$(fixed_form "$line" 63)" "ipv4 fixed fixed" || tap_diag "$line $(tail -n 5 "$SL_DAEMON_DIR/err")"
# a flow a byte cap cuts (max_request_bytes: 1, its send "after\n"): to an address and port the
# policy allows, whose packets without data leave as the kernel writes them; so does its RST
printf '%s\n' 'default: deny' 'rules:' '  - name: test-host' '    cidrs: ["198.51.100.20/32"]' \
	'    ports: [80]' '    max_request_bytes: 1' >"$SL_TMP/cap.yaml"
W=$SL_TMP/cap-watch H=$SL_TMP/cap-hold LOG=$SL_TMP/cap.jsonl
mkdir -p "$H"
sl_on_exit "touch '$H/stop'"
watcher "$W"
sluice_start "$SL_TMP/cap.yaml" "$LOG" --netns "/run/netns/$SL_NS_RUN" -- \
	python3 "$FORM" hold "$H" v4opts 198.51.100.20 80
wait_until 10000 test -e "$H/ready" || bail_out "cap: the holder: $(cat "$SL_ERR" "$H/out")"
touch "$H/stop"
wait_until 10000 log_count_at_least "$LOG" 1 type=flow_cut flow=destroyed
sink_settle
touch "$W/stop"
sluice_wait 20 || bail_out "cap: the run did not end"
line=$(rst_of v4opts)
tap_is "a flow a cap cuts: its RST arrives as the kernel wrote it (IP_TOS, IP_TTL kept)" \
	"$(awk '{ print $1, $6, $7 }' <<<"$line")" "ipv4 tos=184 ttl=6" || tap_diag "$line"

# --allow-root: the workload could have set the RST's sequence numbers (TCP_REPAIR): none leaves
switched allowroot : --allow-root
tap_is "run --allow-root: no RST reaches the test host" "$(cat "$W/seen" 2>/dev/null)" ""
# a veth added to the namespace after the attach, its peer in a namespace of its own with no host
# side on it: a way out none of the run's host side sees, so none leaves
LATE_NS=sl-late-$SL_ID
sl_on_exit "ip netns del '$LATE_NS' 2>/dev/null"
# shellcheck disable=SC2016 # expanded by eval
switched lateveth 'ip netns add "$LATE_NS" && ip -n "$SL_NS_RUN" link add sl-late type veth \
	peer name sl-late-p netns "$LATE_NS" || bail_out "cannot add the late veth"'
tap_is "run, a veth added after the attach: no RST reaches the test host" \
	"$(cat "$W/seen" 2>/dev/null)" ""
ip netns del "$LATE_NS"

# --- a daemon killed inside a destroy (the socket's cookie marked in sl_destroying, the socket
# not destroyed yet: SLUICE_SELFTEST_KILL=in-destroy), in a switch that denies its flow: the
# next daemon takes the run over and leaves no cookie marked (else that socket's RST would be
# let out later, outside any destroy)
# destroying_entries RUN: the entries of the sl_destroying map the run's egress program uses
destroying_entries() {
	local dump
	dump=$(run_map "$1" sl_destroying) || return 1
	python3 -c 'import json, sys; print(len(json.loads(sys.argv[1])))' "$dump"
}
cg=$(sl_cgroup_new takeover) || bail_out "cannot make the test cgroup"
sl_on_exit "sl_cgroup_remove '$cg'"
RUN=t-$SL_ID-takeover
SL_RUNS+=("$RUN")
out=$("$SLUICE" attach --cgroup "$cg" --policy "$SL_TMP/allow.yaml" --run-id "$RUN" \
	--mode enforce --netns "/run/netns/$SL_NS_RUN" --log "$SL_TMP/takeover.jsonl" \
	--reset-peers 2>&1) ||
	bail_out "attach of takeover failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
H=$SL_TMP/takeover-hold
mkdir -p "$H"
sl_in_cgroup "$cg" "${RUN_EXEC_NETONLY[@]}" python3 "$FORM" hold "$H" \
	plain 198.51.100.20 80 >"$H/out" 2>&1 &
sl_track_pid "$!"
sl_on_exit "touch '$H/stop'"
wait_until 10000 test -e "$H/ready" || bail_out "the holder: $(tr "\n" " " <"$H/out")"
sl_daemon_kill TERM
# shellcheck disable=SC2119 # no arguments: the default daemon
SLUICE_SELFTEST_KILL=in-destroy sl_daemon_start ||
	bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
sl_daemon_killed_by "$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/deny.yaml"
tap_is "in-destroy: the daemon killed itself with the socket's cookie marked" "$SL_DAEMON_RC" 137 ||
	tap_diag_file "$SL_TMP/daemon-killed.err"
tap_is "in-destroy: ... which is in the run's sl_destroying" \
	"$(destroying_entries "$RUN")" 1
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
# shellcheck disable=SC2016 # expanded by that sh
wait_until 10000 sh -c '"$1" status --json 2>/dev/null | grep -q "\"run_id\":\"$2\""' sh \
	"$SLUICE" "$RUN"
tap_is "in-destroy: the next daemon took the run over and emptied sl_destroying" \
	"$(destroying_entries "$RUN")" 0 || tap_diag "$(tail -n 5 "$SL_DAEMON_DIR/err")"
touch "$H/stop"
out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "in-destroy: the run detaches" test -z "${out##*\"ok\":true*}"

# --- a socket of the run's cgroup that lives in a network namespace of its own (OWN: a
# workload's own user and network namespace, here the test's), with a way out no host side sees
# (a veth to FAR), ended on the packet path: its holder left the cgroup, so the switch's re-judge
# found it in no fd table of the run's; the backstop denies its next packet, and the daemon kills
# it in the run's namespace (the one resets_fixed judged, where it is not). The daemon is killed
# inside that destroy (in-destroy: the cookie stays marked); the holder then closes the socket
# with SO_LINGER 0 (bound to a port by hand, which the socket keeps through the close: the RST
# carries its port): the kernel's RST of it, as the workload set it, must not reach FAR
OWN=sl-own-$SL_ID FAR=sl-far-$SL_ID
sl_on_exit "ip netns del '$OWN' 2>/dev/null; ip netns del '$FAR' 2>/dev/null"
{ ip netns add "$OWN" && ip netns add "$FAR" && ip -n "$OWN" link set lo up &&
	ip -n "$FAR" link set lo up &&
	ip -n "$OWN" link add own0 type veth peer name far0 netns "$FAR" &&
	ip -n "$OWN" addr add 10.251.0.1/30 dev own0 && ip -n "$FAR" addr add 10.251.0.2/30 dev far0 &&
	ip -n "$OWN" link set own0 up && ip -n "$FAR" link set far0 up; } ||
	bail_out "cannot make the namespaces $OWN and $FAR"
sl_start_sink_ports "$FAR" far 80 "" || bail_out "cannot start the sink in $FAR"
printf '%s\n' 'default: deny' 'rules:' '  - name: far' '    cidrs: ["10.251.0.2/32"]' \
	'    ports: [80]' >"$SL_TMP/far.yaml"
# own_holder NAME KIND: run NAME attached (--netns, --reset-peers), its holder in OWN holding
# one connection (KIND) to FAR, moved out of the run's cgroup (the re-judge finds it in no fd
# table of the run's), a switch to deny.yaml; sets H (the holder's dir), holder (its pid)
own_holder() {
	local out
	H=$SL_TMP/$1-hold
	mkdir -p "$H"
	sl_on_exit "touch '$H/stop' '$H/close'"
	sl_daemon_attach "$1" "$SL_TMP/far.yaml" --mode enforce --netns "/run/netns/$SL_NS_RUN" \
		--reset-peers
	"${SL_IN_CGROUP[@]}" "$SL_ATT_CG" nsenter "--net=/run/netns/$OWN" -- python3 "$FORM" hold \
		"$H" "$2" 10.251.0.2 80 >"$H/out" 2>&1 &
	holder=$!
	sl_track_pid "$holder"
	wait_until 10000 test -e "$H/ready" || bail_out "the holder: $(tr "\n" " " <"$H/out")"
	aside=$(sl_cgroup_new "$1-aside") || bail_out "cannot make the test cgroup $1-aside"
	sl_on_exit "sl_cgroup_remove '$aside'"
	echo "$holder" >"$aside/cgroup.procs" ||
		bail_out "cannot move the holder out of the run's cgroup"
	out=$("$SLUICE" replace-policy --run-id "$SL_ATT_RUN" "$SL_TMP/deny.yaml" 2>&1) ||
		bail_out "$1: replace-policy: $out"
}
# first with no kill point: the packet path's kill does not find the socket in the run's
# namespace (the one judged) and looks for it again in its holder's, unmarked: destroyed, and
# the destroy's RST does not leave OWN
W=$SL_TMP/own2-watch
watcher "$W" "$FAR"
own_holder own2 plain
touch "$H/stop"
wait_until 10000 log_count_at_least "$SL_ATT_LOG" 1 type=decision decision=deny flow=destroyed
sink_settle
touch "$W/stop"
tap_is "own netns: the packet path's kill found the socket in its holder's namespace: destroyed" \
	"$(log_count "$SL_ATT_LOG" type=decision decision=deny flow=destroyed)" 1 ||
	tap_diag_file "$SL_ATT_LOG"
tap_is "own netns: ... and its RST did not leave OWN" "$(cat "$W/seen" 2>/dev/null)" ""
out=$("$SLUICE" detach --run-id "$SL_ATT_RUN" 2>&1)
tap_check "own netns: that run detaches" test -z "${out##*\"ok\":true*}"
# then killed inside that destroy
W=$SL_TMP/own-watch
watcher "$W" "$FAR"
sl_daemon_kill TERM
# shellcheck disable=SC2119 # no arguments: the default daemon
SLUICE_SELFTEST_KILL=in-destroy sl_daemon_start ||
	bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
own_holder own linger
sl_daemon_killed_by touch "$H/stop"
tap_is "own netns: the daemon killed itself inside the packet path's destroy" "$SL_DAEMON_RC" 137 ||
	tap_diag "$(tail -n 5 "$SL_DAEMON_DIR/err"; cat "$SL_TMP/daemon-killed.err")"
tap_is "own netns: ... with the socket's cookie in the run's sl_destroying" \
	"$(destroying_entries "$SL_ATT_RUN")" 1
# own_rsts: the RSTs OWN's TCP has sent (the first case's destroy sent one)
# shellcheck disable=SC2016 # awk's
own_rsts() {
	ip netns exec "$OWN" awk '$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) c[$i] = i;
		h = 1; next } $1 == "Tcp:" { print $c["OutRsts"] }' /proc/net/snmp
}
rsts=$(own_rsts)
touch "$H/close"
# shellcheck disable=SC2317 # called through wait_until
holder_gone() { ! kill -0 "$holder" 2>/dev/null; }
wait_until 5000 holder_gone
sink_settle
tap_is "own netns: the socket sent its RST (OutRsts in OWN)" "$(($(own_rsts) - rsts))" 1
tap_is "own netns: ... and it did not leave its namespace" "$(cat "$W/seen" 2>/dev/null)" "" ||
	tap_diag_file "$H/result"
# (a control: a RST from OWN reaches FAR, that way out is open)
ip netns exec "$OWN" python3 "$SL_LIB_DIR/tools/sl_rawrst.py" send 10.251.0.2 80 40998 \
	0x51c00002 >/dev/null 2>&1
wait_until 3000 grep -qs ' 40998 ' "$W/seen"
touch "$W/stop"
tap_is "own netns, control: a RST sent from OWN by hand reaches FAR" \
	"$(grep -c ' 40998 10.251.0.2 80 ' "$W/seen")" 1
sl_daemon_kill KILL
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
# shellcheck disable=SC2016 # expanded by that sh
wait_until 10000 sh -c '"$1" status --json 2>/dev/null | grep -q "\"run_id\":\"$2\""' sh \
	"$SLUICE" "$SL_ATT_RUN"
out=$("$SLUICE" detach --run-id "$SL_ATT_RUN" 2>&1)
tap_check "own netns: the run detaches" test -z "${out##*\"ok\":true*}"
tap_done
