#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What a live switch does to flows already open (review of the switch, issue #12 item 6):
# - report -> enforce: a TCP connection and a connected UDP socket opened in report mode to a
#   host the policy denies must not stay usable after the switch (a connected UDP socket never
#   passes the sendmsg hook again, and the egress backstop passes a flow's own destination);
# - replace-policy: a TCP connection to a host only the old policy allowed must not stay usable;
# - a flow both policies allow carries data across the switches, also one only a host rule
#   allows (its learned address carried over) across a replace-policy that keeps the name.
# P28-style holder: connects, says so, waits for "go", sends on each socket, writes the result.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

command -v dig >/dev/null || skip_all "dig not installed"
dns_upstream_start upstream --host-record=ten.switch.example,198.51.100.10 ||
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

# the holder (tools/sl_hold.py): connects, waits for "go", sends on each socket, says what happened
HOLDER=$SL_LIB_DIR/tools/sl_hold.py

CG=$(sl_cgroup_new swflows) || bail_out "cannot make the test cgroup"
sl_on_exit "sl_cgroup_remove '$CG'"
RUN=t-$SL_ID-swflows
SL_RUNS+=("$RUN")
LOG=$SL_TMP/swflows.jsonl
NETNS=/run/netns/$SL_NS_RUN

out=$("$SLUICE" attach --cgroup "$CG" --policy "$SL_TMP/a.yaml" --run-id "$RUN" \
	--mode report --netns "$NETNS" --upstream "127.0.0.1:$SL_DNS_PORT" --log "$LOG" 2>&1) ||
	bail_out "attach failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
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
addr=$(sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" dig +time=2 +tries=1 +short @198.51.100.53 \
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
tap_done
