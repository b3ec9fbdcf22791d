#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What a live switch does to flows already open (review of the switch, issue #12 item 6):
# - report -> enforce: a TCP connection and a connected UDP socket opened in report mode to a
#   host the policy denies must not stay usable after the switch (a connected UDP socket never
#   passes the sendmsg hook again, and the egress backstop passes a flow's own destination);
#   the TCP one is reset at the peer (the destroy's RST leaves, through the host side too);
# - replace-policy: a TCP connection to a host only the old policy allowed must not stay usable;
# - a flow both policies allow carries data across the switches, also one only a host rule
#   allows (its learned address carried over) across a replace-policy that keeps the name;
# - report -> enforce with a spent host budget (max_total_request_bytes): a TCP connection and a
#   connected UDP socket report mode let through although the budget was spent (would-be
#   host_total_cap denials) must not carry the rule's host past its budget after the switch,
#   nor before it. The rule allows their packets one by one: the flow's own caps and totals
#   stop them, and the switch's re-judge of open flows counts the budget too (host_total_cap,
#   as their connect() would be told now) and destroys them;
# - replace-policy that renumbers a rule with a host budget (max_total_request_bytes): a flow
#   open under it was counted against the budget of the rule that now has its number (none):
#   its rule, caps and totals must follow the new policy, and its record name the rule;
# - replace-policy that inserts an unnamed rule ahead of an unnamed rule with a host budget: the
#   budget must stay with the rule it was spent under (bytes past its cap never arrive), and the
#   inserted rule must start afresh, not with the spent budget (matched by what a rule is,
#   never by its place);
# - replace-policy that keeps a TLS flow's address allowed through another name but no longer
#   allows the name its ClientHello sent: the flow must be cut (sni_mismatch); one that went
#   ahead under a CIDR rule off the TLS port, its ClientHello never checked, that the new policy
#   allows through a name alone: judged by its first payload, as a connect() would have been
#   (the packet layer keeps what every TCP flow's first payload began with): TLS, whose name no
#   check saw, so it is cut (sni_unchecked); one whose name both allow stays open
#   (test_switch_sni.sh: plain flows, and the TLS port).
# P28-style holder: connects, says so, waits for "go", sends on each socket, writes the result.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

command -v dig >/dev/null || skip_all "dig not installed"
dns_upstream_start upstream --host-record=ten.switch.example,198.51.100.10 \
	--host-record=x.switch.example,198.51.100.10 --host-record=y.switch.example,198.51.100.10 ||
	bail_out "cannot start dnsmasq"
sl_on_exit dns_upstream_stop
# shellcheck disable=SC2119 # no arguments: the default daemon
sl_daemon_start || bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"

cat >"$SL_TMP/a.yaml" <<'EOF'
default: deny
rules:
  - name: ten
    cidrs: ["198.51.100.10/32"]
    ports: [80]
EOF
cat >"$SL_TMP/c.yaml" <<'EOF'
default: deny
rules:
  - name: seven
    cidrs: ["203.0.113.7/32"]
    ports: [80]
EOF

# d: the host by name; e: another rule first (ten's rule gets another number), the same name.
cat >"$SL_TMP/d.yaml" <<'EOF'
default: deny
rules:
  - name: ten-d
    hosts: ["ten.switch.example"]
    ports: [80]
EOF
cat >"$SL_TMP/e.yaml" <<'EOF'
default: deny
rules:
  - name: other
    hosts: ["other.switch.example"]
    ports: [81]
  - name: ten-e
    hosts: ["ten.switch.example"]
    ports: [80]
EOF

# past_budget CGROUP HOST [PORT]: from the cgroup, 800 bytes to HOST:PORT (8080), its answer,
# then 800 more (which a 1,000-byte budget cuts); prints how the socket ended: "eof" or the
# errno's name.
past_budget() {
	sl_in_cgroup "$1" "${RUN_EXEC_NETONLY[@]}" python3 -c "
import errno, socket
s = socket.create_connection(('$2', ${3:-8080}), timeout=$((5 * SL_SLOW)))
s.sendall(b'a' * 800)
got = b''
while not got.endswith(b'ok\\n'):
    c = s.recv(100)
    if not c:
        break
    got += c
try:
    s.sendall(b'a' * 800)
    while s.recv(100):
        pass
    print('eof')
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
" 2>&1
}

# the holder (tools/sl_hold.py): connects, waits for "go", sends on each socket, says what happened
HOLDER=$SL_LIB_DIR/tools/sl_hold.py

NETNS=/run/netns/$SL_NS_RUN

sl_daemon_attach swflows "$SL_TMP/a.yaml" --mode report \
	--netns "$NETNS" --upstream "127.0.0.1:$SL_DNS_PORT" --reset-peers
CG=$SL_ATT_CG RUN=$SL_ATT_RUN LOG=$SL_ATT_LOG
tap_ok "the run is attached in report mode"

# hold DIR SPEC…: a holder in the run's cgroup and namespace; waits until it is connected.
hold() {
	local d=$1
	shift
	mkdir -p "$d"
	sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" python3 "$HOLDER" "$d" --tag after-switch "$@" \
		2>"$d/err" &
	sl_track_pid $!
	wait_until 20000 test -e "$d/ready" || bail_out "the holder did not connect: $(cat "$d/err")"
}
# result DIR: tell the holder to send, print what happened to each socket.
result() {
	touch "$1/go"
	wait_until 20000 test -e "$1/result" || bail_out "the holder did not answer: $(cat "$1/err")"
	cat "$1/result"
}
sent() { sed -n "s/^$2 //p" <<<"$1"; }

# --- report -> enforce ---------------------------------------------------------------------------
sink_mark
hold "$SL_TMP/h1" denied:tcp:198.51.100.20:80 udp:udp:198.51.100.20:9999 \
	allowed:tcp:198.51.100.10:80
out=$("$SLUICE" set-mode --run-id "$RUN" enforce 2>&1)
tap_check "sluice set-mode enforce succeeds" test -z "${out##*\"ok\":true*}"
res=$(result "$SL_TMP/h1")
tap_diag "after report -> enforce: $(tr '\n' ' ' <<<"$res")"
tap_check "report -> enforce: a TCP flow report mode let through to a denied host is cut" \
	test "$(sent "$res" denied)" != ok
tap_check "report -> enforce: a connected UDP socket to a denied host is cut" \
	test "$(sent "$res" udp)" != ok
tap_is "report -> enforce: the allowed flow still carries data" "$(sent "$res" allowed)" ok
# the cut is the kernel's RST to the peer, which the packet layer and the host side let out
tap_check "report -> enforce: the denied host's end of the cut TCP flow was reset" \
	sink_wait "tcp 198.51.100.20 80 10.200.1.2"

# --- replace-policy --------------------------------------------------------------------------------
hold "$SL_TMP/h2" old:tcp:198.51.100.10:80
out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/c.yaml" 2>&1)
tap_check "sluice replace-policy succeeds" test -z "${out##*\"ok\":true*}"
res=$(result "$SL_TMP/h2")
tap_diag "after replace-policy: $(tr '\n' ' ' <<<"$res")"
tap_check "replace-policy: a TCP flow to a host only the old policy allowed is cut" \
	test "$(sent "$res" old)" != ok

# --- a flow to a host only a host rule allows, open across a replace-policy that keeps the name --
out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/d.yaml" 2>&1)
tap_check "replace-policy to a policy naming the host succeeds" test -z "${out##*\"ok\":true*}"
addr=$(sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 \
	ten.switch.example | head -n 1)
tap_is "the run's resolver answers the listed name" "$addr" 198.51.100.10
hold "$SL_TMP/h3" named:tcp:198.51.100.10:80
out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/e.yaml" 2>&1)
tap_check "replace-policy to a policy that still lists the name succeeds" \
	test -z "${out##*\"ok\":true*}"
res=$(result "$SL_TMP/h3")
tap_is "a flow to a host both policies list by name stays open across the switch" \
	"$(sent "$res" named)" ok

out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
tap_check "the run detaches" test -z "${out##*\"ok\":true*}"
out=$("$SLUICE" verify --key "$SLUICE_PUB" "$LOG" 2>&1)
rc=$?
tap_check "sluice verify: the log is intact" test "$rc" -eq 0
[[ $rc -eq 0 ]] || tap_diag "$out"

# --- report -> enforce with the host's budget spent ------------------------------------------------
# A spends the budget of 198.51.100.10 (and is cut: the budget binds in report mode too); R
# connects after it (a would-be host_total_cap denial, let through) and sends 1401 bytes in report
# mode; B, a TCP and a connected UDP socket, connects after it too, the run switches to enforce,
# then B sends 1401 + 6 bytes on each (no datagram needs a fragment). Port 8080 and
# 198.51.100.10's 9999 are this section's alone: what the test host got there is A's, R's, B's.
BUDGET=1000
cat >"$SL_TMP/budget.yaml" <<EOF
default: deny
rules:
  - name: budget
    cidrs: ["198.51.100.10/32"]
    ports: [8080, 9999]
    max_total_request_bytes: $BUDGET
EOF
sl_daemon_attach swbudget "$SL_TMP/budget.yaml" --mode report \
	--netns "$NETNS" --upstream "127.0.0.1:$SL_DNS_PORT"
CG2=$SL_ATT_CG RUN2=$SL_ATT_RUN LOG2=$SL_ATT_LOG
tap_ok "budget: the run is attached in report mode"
sink_mark
# A: 800 bytes, the answer, then 800 more, which the budget cuts; A waits until its socket ends,
# so the budget is spent before B connects.
a=$(past_budget "$CG2" 198.51.100.10)
tap_diag "budget: A after 800 + 800 bytes: $a"
# R: a would-be denial for the spent budget that sends in report mode: the budget counts it too
r=$(sl_in_cgroup "$CG2" "${RUN_EXEC_NETONLY[@]}" python3 -c "
import errno, socket
s = socket.create_connection(('198.51.100.10', 8080), timeout=$((5 * SL_SLOW)))
try:
    s.sendall(b'r' * 1401)
    s.shutdown(socket.SHUT_WR)
    while s.recv(100):
        pass
    print('eof')
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
" 2>&1)
tap_diag "budget: R after 1401 bytes in report mode: $r"
mkdir -p "$SL_TMP/h4"
sl_in_cgroup "$CG2" "${RUN_EXEC_NETONLY[@]}" python3 "$HOLDER" "$SL_TMP/h4" \
	--tag "$(printf '%01400d' 0)" b:tcp:198.51.100.10:8080 bu:udp:198.51.100.10:9999 \
	2>"$SL_TMP/h4/err" &
sl_track_pid $!
wait_until 20000 test -e "$SL_TMP/h4/ready" ||
	bail_out "the holder did not connect: $(cat "$SL_TMP/h4/err")"
out=$("$SLUICE" set-mode --run-id "$RUN2" enforce 2>&1)
tap_check "budget: sluice set-mode enforce succeeds" test -z "${out##*\"ok\":true*}"
touch "$SL_TMP/h4/go"
wait_until 20000 test -e "$SL_TMP/h4/result" ||
	bail_out "the holder did not answer: $(cat "$SL_TMP/h4/err")"
tap_diag "budget: B after the switch: $(tr '\n' ' ' <"$SL_TMP/h4/result")"
# the test host writes a connection's bytes when it ends: A's, R's, and B's (ended, or closed by
# the holder, which has exited)
sink_wait 'tcp 198.51.100.10 8080' 3 20000 || tap_diag "$(sink_new_lines)"
sink_settle
got=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
	awk '$1 == "tcp" && $2 == "198.51.100.10" && $3 == 8080 { n += $5 } END { print n + 0 }')
tap_cmp "budget: the test host got A's 800 bytes" "$got" -ge 800 || tap_diag "$(sink_new_lines)"
tap_cmp "budget: neither R's bytes nor B's after the switch take the host past its $BUDGET bytes" \
	"$got" -le "$BUDGET" || tap_diag "$(sink_new_lines)"
tap_is "budget: ... nor do B's datagrams on its connected UDP socket" \
	"$(sink_count 'udp 198.51.100.10 9999')" 0 || tap_diag "$(sink_new_lines)"

out=$("$SLUICE" detach --run-id "$RUN2" 2>&1)
tap_check "budget: the run detaches" test -z "${out##*\"ok\":true*}"
# A: allowed, and cut in report mode (what spent the budget); R's and B's connects: would-be
# denials for the spent budget; R's flow: cut by the host's total all the same; B's, open at the
# switch: judged so again by its re-judge, and destroyed
# shellcheck disable=SC2034 # a_tcp and b_tcp are read through ${!v} below
a_tcp=$(log_lines "$LOG2" type=decision hook=connect4 proto=tcp port=8080 decision=allow \
	rule=budget)
r_tcp=$(log_lines "$LOG2" type=decision hook=connect4 proto=tcp port=8080 decision=deny \
	enforced=false reason=host_total_cap rule=budget)
b_udp=$(log_lines "$LOG2" type=decision hook=connect4 proto=udp port=9999 decision=deny \
	enforced=false reason=host_total_cap rule=budget)
tap_is "budget: R's and B's connects were logged as report mode's host_total_cap denials" \
	"$(grep -c . <<<"$r_tcp") $(grep -c . <<<"$b_udp")" "2 1" || tap_diag_file "$LOG2"
# shellcheck disable=SC2034
b_tcp=$(tail -n 1 <<<"$r_tcp")
r_tcp=$(head -n 1 <<<"$r_tcp")
for v in a_tcp r_tcp; do
	who=${v%_*}
	cookie=$(log_field "${!v}" sock_cookie 2>/dev/null || echo none)
	tap_cmp "budget: the log records the cut of ${who^^}'s ${v#*_} flow at the host's total" \
		"$(log_count "$LOG2" type=flow_cut proto="${v#*_}" rule=budget \
			cap=max_total_request_bytes limit=$BUDGET sock_cookie="$cookie")" -eq 1 ||
		tap_diag_file "$LOG2"
done
# (a UDP socket is destroyed where the kernel has CONFIG_INET_DIAG_DESTROY; its datagrams are
# dropped anyway, as the test host showed)
for v in b_tcp b_udp; do
	cookie=$(log_field "${!v}" sock_cookie 2>/dev/null || echo none)
	how=()
	[[ $v == b_tcp ]] && how=(flow=destroyed)
	tap_cmp "budget: the switch's re-judge denies B's ${v#*_} flow for the spent budget" \
		"$(log_count "$LOG2" type=preexisting proto="${v#*_}" decision=deny enforced=true \
			reason=host_total_cap rule=budget "${how[@]}" sock_cookie="$cookie")" -eq 1 ||
		tap_diag_file "$LOG2"
done
out=$("$SLUICE" verify --key "$SLUICE_PUB" "$LOG2" 2>&1)
rc=$?
tap_check "budget: sluice verify: the log is intact" test "$rc" -eq 0
[[ $rc -eq 0 ]] || tap_diag "$out"

# --- replace-policy that renumbers a rule with a host budget ---------------------------------------
# C connects under "capped" (rule 1), and P spends 800 bytes of the host's budget; the policy is
# replaced by one where "capped" is rule 2 and rule 1 has no budget; then C sends 501 + 6 bytes:
# past the 200 left of the budget, cut, the host gets no more than the budget in all. (Per-flow
# caps are kept in the flow from its connect; the host's budget was looked up by the rule's
# number: seen failing before the re-judge rewrote the flow, 1407 bytes arrived; and, the budget
# kept per rule number, the renumbered rule started afresh: 800 + 1000 bytes arrived.)
cat >"$SL_TMP/cap1.yaml" <<EOF
default: deny
rules:
  - name: capped
    cidrs: ["198.51.100.10/32"]
    ports: [8080]
    max_total_request_bytes: $BUDGET
EOF
cat >"$SL_TMP/cap2.yaml" <<EOF
default: deny
rules:
  - name: first
    cidrs: ["203.0.113.7/32"]
    ports: [8080]
  - name: capped
    cidrs: ["198.51.100.10/32"]
    ports: [8080]
    max_total_request_bytes: $BUDGET
EOF
sl_daemon_attach swrenum "$SL_TMP/cap1.yaml" --mode enforce \
	--netns "$NETNS" --upstream "127.0.0.1:$SL_DNS_PORT"
CG3=$SL_ATT_CG RUN3=$SL_ATT_RUN LOG3=$SL_ATT_LOG
tap_ok "renumber: the run is attached"
sink_mark
mkdir -p "$SL_TMP/h5"
sl_in_cgroup "$CG3" "${RUN_EXEC_NETONLY[@]}" python3 "$HOLDER" "$SL_TMP/h5" \
	--tag "$(printf '%0500d' 0)" c:tcp:198.51.100.10:8080 2>"$SL_TMP/h5/err" &
sl_track_pid $!
wait_until 20000 test -e "$SL_TMP/h5/ready" ||
	bail_out "the holder did not connect: $(cat "$SL_TMP/h5/err")"
p=$(sl_in_cgroup "$CG3" "${RUN_EXEC_NETONLY[@]}" python3 -c "
import socket
s = socket.create_connection(('198.51.100.10', 8080), timeout=$((5 * SL_SLOW)))
s.sendall(b'p' * 800)
s.shutdown(socket.SHUT_WR)
while s.recv(100):
    pass
print('ok')" 2>&1)
tap_is "renumber: P spends 800 bytes of the host's budget under rule 1" "$p" ok
out=$("$SLUICE" replace-policy --run-id "$RUN3" "$SL_TMP/cap2.yaml" 2>&1)
tap_check "renumber: replace-policy succeeds" test -z "${out##*\"ok\":true*}"
res=$(result "$SL_TMP/h5")
tap_diag "renumber: C after the switch: $(tr '\n' ' ' <<<"$res")"
sink_wait 'tcp 198.51.100.10 8080' 1 20000 || tap_diag "$(sink_new_lines)"
sink_settle
got=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
	awk '$1 == "tcp" && $2 == "198.51.100.10" && $3 == 8080 { n += $5 } END { print n + 0 }')
tap_cmp "renumber: the budget P spent follows the renumbered rule (the host got <= $BUDGET)" \
	"$got" -le "$BUDGET" || tap_diag "$(sink_new_lines)"
c_line=$(log_lines "$LOG3" type=preexisting proto=tcp port=8080 decision=allow rule=capped \
	flow=open)
tap_is "renumber: the re-judge finds C allowed by capped" "$(grep -c . <<<"$c_line")" 1 ||
	tap_diag_file "$LOG3"
cookie=$(log_field "$c_line" sock_cookie 2>/dev/null || echo none)
tap_is "renumber: C's cut is logged at capped's budget, the rule named by the new policy" \
	"$(log_count "$LOG3" type=flow_cut rule=capped cap=max_total_request_bytes \
		limit=$BUDGET sock_cookie="$cookie")" 1 || tap_diag_file "$LOG3"
out=$("$SLUICE" detach --run-id "$RUN3" 2>&1)
tap_check "renumber: the run detaches" test -z "${out##*\"ok\":true*}"
tap_is "renumber: C's flow line names capped too; no record went unnamed (anomaly)" \
	"$(log_count "$LOG3" type=flow rule=capped sock_cookie="$cookie") \
$(log_count "$LOG3" type=anomaly)" "1 0" || tap_diag_file "$LOG3"
out=$("$SLUICE" verify --key "$SLUICE_PUB" "$LOG3" 2>&1)
rc=$?
tap_check "renumber: sluice verify: the log is intact" test "$rc" -eq 0
[[ $rc -eq 0 ]] || tap_diag "$out"

# --- replace-policy and the server-name check of open TLS flows -------------------------------------
# x.switch.example and y.switch.example both resolve to 198.51.100.10 (the test host, which
# counts bytes and never answers a ClientHello: each flow stays watched). t1 allows both names
# on 443, and the address itself on 8080; t2 allows y alone, on both ports. X: 443, ClientHello
# for x (passes under t1); Y: 443, for y; U: 8080, allowed by the CIDR rule, so never checked,
# its ClientHello naming a host neither policy lists. After replace-policy each sends records.
cat >"$SL_TMP/t1.yaml" <<'EOF'
default: deny
rules:
  - name: x
    hosts: ["x.switch.example"]
    ports: [443]
  - name: y
    hosts: ["y.switch.example"]
    ports: [443]
  - name: net
    cidrs: ["198.51.100.10/32"]
    ports: [8080]
EOF
cat >"$SL_TMP/t2.yaml" <<'EOF'
default: deny
rules:
  - name: y2
    hosts: ["y.switch.example"]
    ports: [443, 8080]
EOF
sl_daemon_attach swtls "$SL_TMP/t1.yaml" --mode enforce \
	--netns "$NETNS" --upstream "127.0.0.1:$SL_DNS_PORT"
CG4=$SL_ATT_CG RUN4=$SL_ATT_RUN LOG4=$SL_ATT_LOG
tap_ok "tls: the run is attached"
for n in x y; do
	addr=$(sl_in_cgroup "$CG4" "${RUN_EXEC_NETONLY[@]}" dig +time=$((2 * SL_SLOW)) +tries=1 +short \
		@198.51.100.53 "$n.switch.example" | head -n 1)
	tap_is "tls: the run's resolver answers $n.switch.example" "$addr" 198.51.100.10
done
mkdir -p "$SL_TMP/h6"
sl_in_cgroup "$CG4" "${RUN_EXEC_NETONLY[@]}" python3 "$SL_LIB_DIR/tools/sl_tlshold.py" \
	"$SL_TMP/h6" 198.51.100.10 X:443:x.switch.example Y:443:y.switch.example \
	U:8080:elsewhere.example 2>"$SL_TMP/h6/err" &
sl_track_pid $!
wait_until 20000 test -e "$SL_TMP/h6/ready" ||
	bail_out "the TLS holder did not connect: $(cat "$SL_TMP/h6/err")"
hellos_passed() { test "$(log_count "$LOG4" type=tls decision=allow reason=sni_ok)" -eq 2; }
wait_until 5000 hellos_passed
tap_is "tls: the ClientHellos for x and y passed under t1" \
	"$(log_count "$LOG4" type=tls decision=allow reason=sni_ok)" 2 || tap_diag_file "$LOG4"
out=$("$SLUICE" replace-policy --run-id "$RUN4" "$SL_TMP/t2.yaml" 2>&1)
tap_check "tls: replace-policy succeeds" test -z "${out##*\"ok\":true*}"
res=$(result "$SL_TMP/h6")
tap_diag "tls: after replace-policy: $(tr '\n' ' ' <<<"$res")"
tap_check "tls: a flow whose ClientHello named a host the new policy does not allow is cut" \
	test "$(sent "$res" X)" != ok
tap_check "tls: a flow never name-checked, now allowed through a name alone, is cut" \
	test "$(sent "$res" U)" != ok
tap_is "tls: a flow whose name both policies allow still carries data" "$(sent "$res" Y)" ok
tap_is "tls: the re-judge denies X for its server name (sni_mismatch) and destroys it" \
	"$(log_count "$LOG4" type=preexisting port=443 decision=deny enforced=true \
		reason=sni_mismatch flow=destroyed)" 1 || tap_diag_file "$LOG4"
tap_is "tls: ... denies U, whose first payload (off the TLS port) was a ClientHello no name \
check saw (sni_unchecked), and destroys it" \
	"$(log_count "$LOG4" type=preexisting port=8080 decision=deny enforced=true \
		reason=sni_unchecked rule=y2 flow=destroyed)" 1 || tap_diag_file "$LOG4"
tap_is "tls: ... and finds Y allowed by y2" \
	"$(log_count "$LOG4" type=preexisting port=443 decision=allow rule=y2 flow=open)" 1 ||
	tap_diag_file "$LOG4"
out=$("$SLUICE" detach --run-id "$RUN4" 2>&1)
tap_check "tls: the run detaches" test -z "${out##*\"ok\":true*}"
out=$("$SLUICE" verify --key "$SLUICE_PUB" "$LOG4" 2>&1)
rc=$?
tap_check "tls: sluice verify: the log is intact" test "$rc" -eq 0
[[ $rc -eq 0 ]] || tap_diag "$out"
# --- replace-policy from a policy without max_total_* to one with them ---------------------------
# A run whose policy has no budget keeps no room for host totals (loader.c); the replacement that
# brings budgets must count every host: two hosts each get their first 800 bytes and no more than
# the budget (with too small a map, the second host could not be counted and would get nothing).
cat >"$SL_TMP/nobudget.yaml" <<'EOF'
default: deny
rules:
  - name: two
    cidrs: ["198.51.100.10/32", "198.51.100.20/32"]
    ports: [8080]
EOF
{ cat "$SL_TMP/nobudget.yaml"; echo "    max_total_request_bytes: $BUDGET"; } \
	>"$SL_TMP/budget2.yaml"
sl_daemon_attach swbudget2 "$SL_TMP/nobudget.yaml" \
	--netns "$NETNS" --upstream "127.0.0.1:$SL_DNS_PORT"
CG5=$SL_ATT_CG RUN5=$SL_ATT_RUN LOG5=$SL_ATT_LOG
out=$("$SLUICE" replace-policy --run-id "$RUN5" "$SL_TMP/budget2.yaml" 2>&1)
tap_check "budget2: replace-policy to a policy with a host budget succeeds" \
	test -z "${out##*\"ok\":true*}" || tap_diag "$out"
sink_mark
for h in 198.51.100.10 198.51.100.20; do
	r=$(past_budget "$CG5" "$h")
	tap_diag "budget2: $h after 800 + 800 bytes: $r"
done
sink_wait 'tcp 198.51.100.20 8080' 1 20000 || tap_diag "$(sink_new_lines)"
sink_settle
for h in 198.51.100.10 198.51.100.20; do
	got=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk -v h="$h" '$1 == "tcp" && $2 == h && $3 == 8080 { n += $5 } END { print n + 0 }')
	tap_is "budget2: $h got its first 800 bytes and no more than its $BUDGET" "$got" 800 ||
		tap_diag "$(sink_new_lines)"
	tap_is "budget2: the log records the cut of the flow to $h at the host's total" \
		"$(log_count "$LOG5" type=flow_cut proto=tcp rule=two cap=max_total_request_bytes \
			limit=$BUDGET dst="$h")" 1 || tap_diag_file "$LOG5"
done
out=$("$SLUICE" detach --run-id "$RUN5" 2>&1)
tap_check "budget2: the run detaches" test -z "${out##*\"ok\":true*}"
# --- replace-policy that inserts an unnamed rule ahead of an unnamed rule with a budget ----------
# P spends 800 of 198.51.100.10's 1,000 bytes on 8080 under the unnamed rule 1. The new policy
# inserts an unnamed rule for the same host on port 80, with a budget of its own, ahead of it.
# Matched by place, the moved rule would start afresh (800 + 800 bytes would arrive on 8080)
# and the inserted one would take the spent budget (its first 800 bytes cut). Matched by what
# they are, the moved rule keeps its 200 bytes and the inserted one has its whole 1,000.
cat >"$SL_TMP/unnamed1.yaml" <<EOF2
default: deny
rules:
  - cidrs: ["198.51.100.10/32"]
    ports: [8080]
    max_total_request_bytes: $BUDGET
EOF2
cat >"$SL_TMP/unnamed2.yaml" <<EOF2
default: deny
rules:
  - cidrs: ["198.51.100.10/32"]
    ports: [80]
    max_total_request_bytes: $BUDGET
  - cidrs: ["198.51.100.10/32"]
    ports: [8080]
    max_total_request_bytes: $BUDGET
EOF2
sl_daemon_attach swunnamed "$SL_TMP/unnamed1.yaml" \
	--netns "$NETNS" --upstream "127.0.0.1:$SL_DNS_PORT"
CG7=$SL_ATT_CG RUN7=$SL_ATT_RUN LOG7=$SL_ATT_LOG
sink_mark
p=$(sl_in_cgroup "$CG7" "${RUN_EXEC_NETONLY[@]}" python3 -c "
import socket
s = socket.create_connection(('198.51.100.10', 8080), timeout=$((5 * SL_SLOW)))
s.sendall(b'p' * 800)
s.shutdown(socket.SHUT_WR)
while s.recv(100):
    pass
print('ok')" 2>&1)
tap_is "unnamed: P spends 800 bytes of the host's budget under the unnamed rule" "$p" ok
out=$("$SLUICE" replace-policy --run-id "$RUN7" "$SL_TMP/unnamed2.yaml" 2>&1)
tap_check "unnamed: replace-policy inserting an unnamed rule ahead succeeds" \
	test -z "${out##*\"ok\":true*}" || tap_diag "$out"
tap_diag "unnamed: 8080 after the switch: $(past_budget "$CG7" 198.51.100.10)"
tap_diag "unnamed: 80 after the switch: $(past_budget "$CG7" 198.51.100.10 80)"
sink_wait 'tcp 198.51.100.10 8080' 2 20000 || tap_diag "$(sink_new_lines)"
sink_wait 'tcp 198.51.100.10 80' 1 20000 || tap_diag "$(sink_new_lines)"
sink_settle
# got_on PORT: the bytes 198.51.100.10 got on PORT since the mark
got_on() {
	tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk -v p="$1" '$1 == "tcp" && $2 == "198.51.100.10" && $3 == p { n += $5 }
			END { print n + 0 }'
}
tap_cmp "unnamed: the budget P spent stays with its rule: no byte past $BUDGET arrives on 8080" \
	"$(got_on 8080)" -le "$BUDGET" || tap_diag "$(sink_new_lines)"
tap_is "unnamed: the inserted rule starts afresh: its first 800 bytes arrive on 80" \
	"$(got_on 80)" 800 || tap_diag "$(sink_new_lines)"
out=$("$SLUICE" detach --run-id "$RUN7" 2>&1)
tap_check "unnamed: the run detaches" test -z "${out##*\"ok\":true*}"
# --- a renumbered budget across a daemon's takeover ----------------------------------------------
# The budget maps are not pinned: the daemon that takes a run over finds them through the run's
# programs. Its first switch must keep api's budget id (1, given before the renumbering), not
# give api its number (a fresh budget) and web api's spent one.
cat >"$SL_TMP/api.yaml" <<EOF2
default: deny
rules:
  - name: api
    cidrs: ["198.51.100.10/32"]
    ports: [8080]
    max_total_request_bytes: $BUDGET
EOF2
cat >"$SL_TMP/webapi.yaml" <<EOF2
default: deny
rules:
  - name: web
    cidrs: ["198.51.100.20/32"]
    ports: [8080]
    max_total_request_bytes: $BUDGET
  - name: api
    cidrs: ["198.51.100.10/32"]
    ports: [8080]
    max_total_request_bytes: $BUDGET
EOF2
sl_daemon_attach swtakeover "$SL_TMP/api.yaml" --netns "$NETNS" --upstream "127.0.0.1:$SL_DNS_PORT"
CG6=$SL_ATT_CG RUN6=$SL_ATT_RUN LOG6=$SL_ATT_LOG
out=$("$SLUICE" replace-policy --run-id "$RUN6" "$SL_TMP/webapi.yaml" 2>&1)
tap_check "takeover: replace-policy renumbers api (web first)" \
	test -z "${out##*\"ok\":true*}" || tap_diag "$out"
sink_mark
tap_diag "takeover: api's host after 800 + 800 bytes: $(past_budget "$CG6" 198.51.100.10)"
sl_daemon_kill KILL
sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
out=$("$SLUICE" replace-policy --run-id "$RUN6" "$SL_TMP/webapi.yaml" 2>&1)
tap_check "takeover: the new daemon's first switch of the run succeeds" \
	test -z "${out##*\"ok\":true*}" || tap_diag "$out"
tap_diag "takeover: api's host after the switch: $(past_budget "$CG6" 198.51.100.10)"
tap_diag "takeover: web's host after the switch: $(past_budget "$CG6" 198.51.100.20)"
sink_wait 'tcp 198.51.100.20 8080' 1 20000 || tap_diag "$(sink_new_lines)"
sink_settle
for h in 198.51.100.10 198.51.100.20; do
	got=$(tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk -v h="$h" '$1 == "tcp" && $2 == h && $3 == 8080 { n += $5 } END { print n + 0 }')
	tap_is "takeover: $h got its first 800 bytes and no more than its $BUDGET, across the \
takeover and its switch" "$got" 800 || tap_diag "$(sink_new_lines)"
done
out=$("$SLUICE" detach --run-id "$RUN6" 2>&1)
tap_check "takeover: the run detaches" test -z "${out##*\"ok\":true*}"
tap_done
