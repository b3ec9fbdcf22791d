#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Flows whose socket /proc/PID/fd does not show (tools/sl_hide.py): a thread-group leader that
# exited alone while another thread holds the fd table, and a thread with a private fd table
# (unshare(CLONE_FILES)). Without --netns nothing on the host side drops a flow's packets, so
# the scan must find them in /proc/PID/task/TID/fd: at an attach (the run's policy denies them:
# destroyed), and at a switch (replace-policy to one that denies their address: destroyed).
# A descriptor in flight (SCM_RIGHTS) at the switch (made after the run was taken over by a new
# daemon, whose kills must look for each socket in its holder's namespace) is held by no table,
# and no scan finds it:
# the policy generation does (sluice.8, Live switch). Its flow's state is of the old policy's
# generation, so the packet layer judges its packets in full under the new one: one to a host
# the new policy denies (198.51.100.10:8080) delivers nothing past what it sent before (its 7
# bytes, counted on the test host's end whether the destroy's RST closed it or not) and is
# destroyed, one to a host it still allows (203.0.113.7:80, another rule number there) goes on
# delivering. Its first packet out also gives it the new policy's caps and server-name check,
# as a connect() now would get them (the backstop's flow_restamp): one the new policy caps
# (203.0.113.7:8080, max_request_bytes 600, uncapped before) is cut at 600 bytes, and so is one a
# dual-stack socket connected to ::ffff:203.0.113.7 (its flow keeps the mapped address, its
# packets leave as IPv4: still its own destination, restamped at its first), one on the TLS
# port that went ahead under an address rule and that the new policy allows only by name
# (198.51.100.10:443) has sent data no ClientHello check saw: denied sni_unchecked, destroyed.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up
command -v dig >/dev/null || skip_all "dig not installed"
dns_upstream_start upstream --host-record=ten.switch.example,198.51.100.10 ||
	bail_out "cannot start dnsmasq"
sl_on_exit dns_upstream_stop
sl_daemon_start || bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"

cat >"$SL_TMP/a.yaml" <<'EOF'
default: deny
rules:
  - name: ten
    cidrs: ["198.51.100.10/32"]
    ports: [80, 443, 8080]
  - name: seven
    cidrs: ["203.0.113.7/32", "::ffff:203.0.113.7/128"]
    ports: [80, 8080]
  - name: named81
    hosts: ["ten.switch.example"]
    ports: [81]
EOF
cat >"$SL_TMP/c.yaml" <<'EOF'
default: deny
rules:
  - name: seven
    cidrs: ["203.0.113.7/32"]
    ports: [80]
  - name: seven-capped
    cidrs: ["203.0.113.7/32"]
    ports: [8080]
    max_request_bytes: 600
  - name: ten-named
    hosts: ["ten.switch.example"]
    ports: [443]
EOF
HIDE=$SL_LIB_DIR/tools/sl_hide.py

hide() { # CG DIR MODE [ADDR PORT]
	local p ino
	mkdir -p "$2"
	sl_in_cgroup "$1" "${RUN_EXEC_NETONLY[@]}" python3 "$HIDE" "$2" "$3" \
		"${4:-198.51.100.10}" "${5:-80}" 2>"$2/err" &
	sl_track_pid $!
	wait_until 20000 test -e "$2/ready" || bail_out "$3: not ready: $(cat "$2/err")"
	p=$(cat "$2/pid")
	ino=$(cat "$2/ino")
	tap_is "$3: /proc/$p/fd does not show its socket" \
		"$(find "/proc/$p/fd" -lname "socket:\[$ino\]" 2>/dev/null | wc -l)" 0
	[[ $3 == inflight* ]] &&
		tap_is "$3: no thread's fd table holds it" \
			"$(find /proc/"$p"/task/*/fd -lname "socket:\[$ino\]" 2>/dev/null | wc -l)" 0
	return 0
}
# sink_lines_bytes PROTO DST PORT: bytes of the connections to DST:PORT that closed since the mark
sink_lines_bytes() {
	tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk -v p="$1" -v d="$2" -v n="$3" '$1 == p && $2 == d && $3 == n { b += $5 }
			END { print b + 0 }'
}
# sink_lines_count / sink_lines_max PROTO DST PORT: those connections, the most one of them got
sink_lines_count() {
	tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk -v p="$1" -v d="$2" -v n="$3" '$1 == p && $2 == d && $3 == n { c++ }
			END { print c + 0 }'
}
sink_lines_max() {
	tail -n +"$((SL_SINK_MARK + 1))" "$SL_INET_LOG" |
		awk -v p="$1" -v d="$2" -v n="$3" '$1 == p && $2 == d && $3 == n && $5 > m { m = $5 }
			END { print m + 0 }'
}
result() { # DIR
	touch "$1/go"
	wait_until 20000 test -e "$1/result" || bail_out "no result: $(cat "$1/err")"
	cut -d' ' -f2- "$1/result"
}

for step in attach switch; do
	CG=$(sl_cgroup_new "hid$step") || bail_out "cannot make the test cgroup"
	sl_on_exit "sl_cgroup_remove '$CG'"
	RUN=t-$SL_ID-hid$step
	SL_RUNS+=("$RUN")
	LOG=$SL_TMP/hid$step.jsonl
	# attach: the flows are made before the run exists, under its cgroup, and c denies them
	[[ $step == attach ]] && for m in leader unshare; do hide "$CG" "$SL_TMP/$step-$m" "$m"; done
	pol=$SL_TMP/a.yaml
	[[ $step == attach ]] && pol=$SL_TMP/c.yaml
	out=$("$SLUICE" attach --cgroup "$CG" --policy "$pol" --run-id "$RUN" --mode enforce \
		--upstream "127.0.0.1:$SL_DNS_PORT" --log "$LOG" 2>&1) ||
		bail_out "attach failed: $out $(tail -n 5 "$SL_DAEMON_DIR/err")"
	tap_ok "$step: the run is attached"
	if [[ $step == switch ]]; then
		# (from the host's namespace, where the run's resolver listens: no --netns here)
		addr=$(sl_in_cgroup "$CG" dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 \
			ten.switch.example | head -n 1)
		tap_is "switch: the run's resolver answers ten.switch.example" "$addr" 198.51.100.10
		for m in leader unshare; do hide "$CG" "$SL_TMP/$step-$m" "$m"; done
		hide "$CG" "$SL_TMP/inflight-deny" inflight 198.51.100.10 8080
		hide "$CG" "$SL_TMP/inflight-allow" inflight 203.0.113.7 80
		hide "$CG" "$SL_TMP/inflight-cap" inflight 203.0.113.7 8080
		hide "$CG" "$SL_TMP/inflight-cap-mapped" inflight ::ffff:203.0.113.7 8080
		hide "$CG" "$SL_TMP/inflight-tls" inflight 198.51.100.10 443
		# a new daemon takes the run over first: its kills of what the backstop denies must
		# still find each socket in its process's namespace (the run has no --netns: the
		# writer's own namespace, which it now holds as the run's, is not the sockets')
		sl_daemon_kill TERM
		sl_daemon_start || bail_out "the daemon did not restart: $(tail -n 5 "$SL_DAEMON_DIR/err")"
		wait_until 10000 grep -q "took over run $RUN " "$SL_DAEMON_DIR/err" ||
			bail_out "the new daemon did not take run $RUN over: $(tail -n 5 "$SL_DAEMON_DIR/err")"
		out=$("$SLUICE" replace-policy --run-id "$RUN" "$SL_TMP/c.yaml" 2>&1)
		tap_check "switch: replace-policy succeeds" test -z "${out##*\"ok\":true*}"
		# the sink writes a connection's bytes when it closes
		sink_mark
		res=$(result "$SL_TMP/inflight-allow")
		tap_is "switch: inflight: the flow the new policy allows sends on" "$res" ok
		res=$(result "$SL_TMP/inflight-deny")
		tap_check "switch: inflight: the flow it denies is ended ($res)" test "$res" != ok
		sink_wait 'tcp 203.0.113.7 80' 1 20000 || tap_diag "$(sink_new_lines)"
		tap_is "switch: inflight: the allowed host got the 1000 bytes sent after the switch" \
			"$(sink_lines_bytes tcp 203.0.113.7 80)" 1007 || tap_diag "$(sink_new_lines)"
		sink_settle
		# what its end received, all told: 7 ("before\n", sent under the old policy) and
		# nothing more; its sink line if it closed (a host side lets the destroy's RST out),
		# else what ss says of it, open
		tap_is "switch: inflight: the host the new policy denies got none of them (7 bytes \
from before the switch)" "$(($(sink_lines_bytes tcp 198.51.100.10 8080) + $(in_inet ss -tinH \
			'( src 198.51.100.10 and sport = :8080 )' | grep -o 'bytes_received:[0-9]*' |
			cut -d: -f2 | awk '{ b += $1 } END { print b + 0 }')))" 7 ||
			tap_diag "$(sink_new_lines; in_inet ss -tinH '( sport = :8080 )')"
		tap_is "switch: inflight: the backstop recorded the denial, and destroyed the flow" \
			"$(log_count "$LOG" type=decision hook=egress decision=deny enforced=true \
				dst=198.51.100.10 port=8080 reason=default_deny flow=destroyed)" 1 ||
			tap_diag_file "$LOG"
		# (its client may not see the cut: its last send was buffered before it)
		result "$SL_TMP/inflight-cap" >/dev/null
		result "$SL_TMP/inflight-cap-mapped" >/dev/null
		res=$(result "$SL_TMP/inflight-tls")
		tap_check "switch: inflight: the TLS-port flow never name-checked is cut ($res)" \
			test "$res" != ok
		sink_wait 'tcp 203.0.113.7 8080' 2 20000 || tap_diag "$(sink_new_lines)"
		sink_settle
		tap_is "switch: inflight: the capped host saw both flows (IPv4, ::ffff:)" \
			"$(sink_lines_count tcp 203.0.113.7 8080)" 2 || tap_diag "$(sink_new_lines)"
		tap_cmp "switch: inflight: each flow to the capped host sent no more than the new cap" \
			"$(sink_lines_max tcp 203.0.113.7 8080)" -le 600 || tap_diag "$(sink_new_lines)"
		tap_is "switch: inflight: ... the IPv4 one's cut is logged at the new rule's cap" \
			"$(log_count "$LOG" type=flow_cut dst=203.0.113.7 port=8080 rule=seven-capped \
				cap=max_request_bytes limit=600)" 1 || tap_diag_file "$LOG"
		tap_is "switch: inflight: ... and the ::ffff: one's" \
			"$(log_count "$LOG" type=flow_cut dst=::ffff:203.0.113.7 port=8080 \
				rule=seven-capped cap=max_request_bytes limit=600)" 1 || tap_diag_file "$LOG"
		# (its connection ends on the sink's side only when the sink gives up: a line, if
		# any, says what it got)
		tap_cmp "switch: inflight: the TLS-port host got nothing past its first 7 bytes" \
			"$(sink_lines_bytes tcp 198.51.100.10 443)" -le 7 || tap_diag "$(sink_new_lines)"
		tap_is "switch: inflight: the backstop denied it sni_unchecked by the new rule, destroyed" \
			"$(log_count "$LOG" type=decision hook=egress decision=deny enforced=true \
				dst=198.51.100.10 port=443 reason=sni_unchecked rule=ten-named \
				flow=destroyed)" 1 || tap_diag_file "$LOG"
	fi
	for m in leader unshare; do
		res=$(result "$SL_TMP/$step-$m")
		tap_check "$step: $m: the hidden flow is cut ($res)" test "$res" != ok
		p=$(cat "$SL_TMP/$step-$m/pid")
		tap_is "$step: $m: the scan found it, denied and destroyed" \
			"$(log_count "$LOG" type=preexisting pid="$p" port=80 decision=deny \
				enforced=true reason=default_deny flow=destroyed)" 1 || tap_diag_file "$LOG"
	done
	# (a thread's own pidfd, PIDFD_THREAD, through which a switch reads a socket held only in
	# that thread's table, is 6.9's)
	if [[ $step == switch ]] && ! kernel_at_least 6 9; then
		tap_skip "switch: each hidden flow's state was read through its thread (no unread)" \
			"kernel $(uname -r) has no PIDFD_THREAD (6.9): a thread's own table cannot be read, and its flows fail closed (cut above)"
	elif [[ $step == switch ]]; then
		tap_is "switch: each hidden flow's state was read through its thread (no unread)" \
			"$(grep -c '"unread"' "$LOG")" 0
	fi
	out=$("$SLUICE" detach --run-id "$RUN" 2>&1)
	tap_check "$step: the run detaches" test -z "${out##*\"ok\":true*}"
done
tap_done
