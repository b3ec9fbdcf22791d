#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The run is a cgroup subtree (P14, P15): a workload that moves itself into a child cgroup is still
# under the run's policy; a daemon double-forked by the command is enforced while the run lasts
# and gone when it ends; sluice passes the command's exit status through (128+N for signal N);
# SIGTERM, SIGINT or SIGHUP to sluice ends the whole run; two runs at once keep their own
# policies; and no run leaves its cgroup or pins behind.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

CG2=$(cg2_mount)
POLICY=$SL_TMP/allow-one.yaml
cat >"$POLICY" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF

# --- P14: a child cgroup created inside the run -----------------------------------------------

escape_run() {
	local label=$1 addr=$2 want=$3 id log
	id=$(sluice_next_run_id)
	log=$SL_TMP/$id.log
	sluice_run "$POLICY" "$log" -- \
		"${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" cgroup-escape "$CG2/sluice/$id" "$addr" 80
	if grep -qE '^sl_probe: cgroup-escape: now in .*/child$' "$SL_ERR"; then
		tap_ok "$label: the workload moved itself into $CG2/sluice/$id/child"
	else
		tap_fail "$label: the workload moved itself into $CG2/sluice/$id/child" \
			"expected \"sl_probe: cgroup-escape: now in …/child\" on stderr"
		sluice_diag "$log"
	fi
	if [[ $want == ok ]]; then
		assert_probe "$label: tcp $addr:80 from the child cgroup succeeds" ok
		assert_sink_saw "$label: the test host received it" "tcp $addr 80"
		assert_log "$label: log has the allow line" "$log" +1 type=decision dst="$addr" \
			port=80 decision=allow rule=test-host
	else
		assert_probe "$label: tcp $addr:80 from the child cgroup fails at once" "$want"
		assert_sink_none "$label: nothing arrives at $addr" "tcp-accept $addr 80"
		assert_log "$label: log has the deny line" "$log" 1 type=decision dst="$addr" \
			port=80 decision=deny enforced=true rule=default hook=connect4
	fi
	assert_no_leftovers "$label: no cgroup (child included) or pins left"
}
escape_run "P14-denied" 198.51.100.20 "err EPERM"
escape_run "P14-allowed" 198.51.100.10 ok

# --- P15: a daemon that outlives the command --------------------------------------------------

# daemon_run LABEL ADDR: the command starts a daemon probing ADDR:80 every 100 ms, lives 1.5 s
# more, and exits 0.
daemon_run() {
	local label=$1 addr=$2 id log pidf resf dpid
	id=$(sluice_next_run_id)
	log=$SL_TMP/$id.log
	pidf=$SL_TMP/$id.daemon.pid
	resf=$SL_TMP/$id.daemon.results
	sl_on_exit "sl_kill_probe_pidfile '$pidf'"
	# shellcheck disable=SC2016 # expanded by the inner sh
	sluice_run "$POLICY" "$log" -- "${RUN_EXEC[@]}" sh -c \
		'"$1" daemon "$2" 80 100 "$3" "$4" && sleep 1.5' \
		sh "$SL_PROBE" "$addr" "$pidf" "$resf"
	assert_rc "$label: sluice exits with the command's status 0" 0
	dpid=$(cat "$pidf" 2>/dev/null)
	if [[ ! $dpid =~ ^[0-9]+$ ]]; then
		tap_fail "$label: the daemon started" "expected a pid in $pidf, got \"$dpid\""
		sluice_diag "$log"
		return
	fi
	tap_ok "$label: the daemon started (pid $dpid)"
	if pid_running "$dpid"; then
		tap_fail "$label: the daemon is gone when sluice returns" \
			"expected pid $dpid to be gone; it is running: $(tr '\0' ' ' \
			<"/proc/$dpid/cmdline" 2>/dev/null)"
	else
		tap_ok "$label: the daemon is gone when sluice returns"
	fi
	if [[ $addr == 198.51.100.10 ]]; then
		local before after
		tap_cmp "$label: the daemon's connections arrived while the run lasted" \
			"$(sink_count "tcp $addr 80")" -ge 3
		sleep 0.3 # let the sink log what was accepted before the kill
		before=$(sink_count "tcp-accept $addr 80")
		sleep 0.6
		after=$(sink_count "tcp-accept $addr 80")
		tap_is "$label: no connection arrives after the run ended" "$after" "$before"
	else
		local n bad
		n=$(wc -l <"$resf" 2>/dev/null || echo 0)
		bad=$(grep -cv '^err EPERM [0-9]*$' "$resf" 2>/dev/null)
		if [[ $n -ge 3 && $bad -eq 0 ]]; then
			tap_ok "$label: every daemon attempt failed with EPERM ($n attempts)"
		else
			tap_fail "$label: every daemon attempt failed with EPERM" \
				"expected >= 3 lines \"err EPERM MS\", got $n lines, $bad others: $(
					head -n 5 "$resf" 2>/dev/null | tr '\n' ';')"
		fi
		assert_sink_none "$label: nothing from the daemon arrives" "tcp-accept $addr 80"
		assert_log "$label: log has the daemon's deny lines with its pid" "$log" +3 \
			type=decision dst="$addr" port=80 decision=deny enforced=true "pid=$dpid"
	fi
	assert_no_leftovers "$label: no cgroup or pins left"
}
daemon_run "P15-denied" 198.51.100.20
daemon_run "P15-allowed" 198.51.100.10

# --- exit status ------------------------------------------------------------------------------

# label       command                    status
statuses=(
	"exit-0       exit 0                     0"
	"exit-7       exit 7                     7"
	"exit-255     exit 255                   255"
	"killed-term  kill -TERM \$\$             143"
	"killed-kill  kill -KILL \$\$             137"
)
for c in "${statuses[@]}"; do
	read -r label rest <<<"$c"
	want=${rest##* }
	script=$(sed -E 's/ +[0-9]+$//' <<<"$rest")
	log=$SL_TMP/$(sluice_next_run_id).log
	sluice_run "$POLICY" "$log" -- "${RUN_EXEC[@]}" sh -c "$script"
	assert_rc "status $label: sh -c '$script' makes sluice exit $want" "$want"
	if [[ $label == exit-* ]]; then
		assert_log "status $label: run_end has exit_status $want" "$log" 1 type=run_end \
			"exit_status=$want"
	fi
	assert_no_leftovers "status $label: no cgroup or pins left"
done

# --- a signal to sluice ends the whole run ------------------------------------------------------

# shellcheck disable=SC2317 # called through wait_until
pid_in_procs() { run_procs "$1" | grep -qx "$2"; }

# signal_run SIG: the command starts a daemon and sleeps; SIG to sluice must end all of it.
signal_run() {
	local sig=$1 label pidf log cg dpid procs alive p live
	label=$(tr '[:upper:]' '[:lower:]' <<<"sig$sig")
	pidf=$SL_TMP/$label.daemon.pid
	sl_on_exit "sl_kill_probe_pidfile '$pidf'"
	log=$SL_TMP/$(sluice_next_run_id).log
	# shellcheck disable=SC2016 # expanded by the inner sh
	sluice_start "$POLICY" "$log" -- "${RUN_EXEC[@]}" sh -c \
		'"$1" daemon 198.51.100.10 80 200 "$2" && exec sleep 300' sh "$SL_PROBE" "$pidf"
	cg=$CG2/sluice/$SL_RUN_ID
	if wait_until 10000 run_has_procs "$cg" "$pidf"; then
		tap_ok "$label: the command and its daemon run in $cg"
	else
		tap_fail "$label: the command and its daemon run in $cg" \
			"expected >= 2 pids in $cg/cgroup.procs and a daemon pid file;
got procs: $(run_procs "$cg" | tr '\n' ' ') pidfile: $(cat "$pidf" 2>/dev/null)"
	fi
	dpid=$(cat "$pidf" 2>/dev/null)
	# (the pid file can be there a moment before its process is: on a slow machine, wait)
	if [[ -n $dpid ]] && wait_until 2000 pid_in_procs "$cg" "$dpid"; then
		tap_ok "$label: the daemon is in the run's cgroup"
	else
		tap_fail "$label: the daemon is in the run's cgroup" \
			"expected pid \"$dpid\" in $cg/cgroup.procs; got: $(run_procs "$cg" |
				tr '\n' ' ')"
	fi
	# The leftovers check must see a live run, or its passing later means nothing.
	live=$(leftovers_check "$SL_RUN_ID")
	if [[ $live == *"cgroup left: $cg"* && $live == *"pins left: "* ]]; then
		tap_ok "$label: leftovers_check sees the live run's cgroup and pins"
	else
		tap_fail "$label: leftovers_check sees the live run's cgroup and pins" \
			"expected \"cgroup left: $cg\" and \"pins left: …\"; got: $live"
	fi
	procs=$(run_procs "$cg")
	kill -"$sig" "$SL_RUN_PID"
	if sluice_wait 10; then
		tap_ok "$label: sluice exits within 10 s of SIG$sig (status $SL_RC)"
	else
		tap_fail "$label: sluice exits within 10 s of SIG$sig" \
			"expected sluice gone; it is still running"
		sluice_diag "$log"
	fi
	alive=
	for p in $procs; do
		pid_running "$p" && alive+="$p($(cat "/proc/$p/comm" 2>/dev/null)) "
	done
	tap_is "$label: every process of the run is gone" "$alive" ""
	tap_cmp "$label: sluice's exit status says it did not succeed" "${SL_RC:-0}" -ne 0
	tap_check "$label: the log is well formed and sealed after run_end" log_well_formed "$log"
	assert_no_leftovers "$label: no cgroup or pins left"
}
# shellcheck disable=SC2317 # called through wait_until
run_procs() { cat "$1/cgroup.procs" 2>/dev/null; }
# shellcheck disable=SC2317 # called through wait_until
run_has_procs() { [[ -s $2 && $(run_procs "$1" | wc -l) -ge 2 ]]; }
signal_run TERM
signal_run INT
signal_run HUP

# --- two runs at once keep their own policies -----------------------------------------------------

cat >"$SL_TMP/allow-other.yaml" <<'EOF'
default: deny
rules:
  - name: other-host
    cidrs: ["198.51.100.20/32"]
    ports: [80]
    protocols: [tcp]
EOF
go=$SL_TMP/concurrent.go
# Both runs wait for $go, so both are live when they probe.
# shellcheck disable=SC2016 # expanded by the inner sh
concurrent_cmd=(sh -c 'while [ ! -e "$2" ]; do sleep 0.05; done
	"$1" tcp 198.51.100.10 80; "$1" tcp 198.51.100.20 80' sh "$SL_PROBE" "$go")
log_a=$SL_TMP/$(sluice_next_run_id).log
sluice_start "$POLICY" "$log_a" -- "${RUN_EXEC[@]}" "${concurrent_cmd[@]}"
pid_a=$SL_RUN_PID out_a=$SL_OUT id_a=$SL_RUN_ID
log_b=$SL_TMP/$(sluice_next_run_id).log
sluice_start "$SL_TMP/allow-other.yaml" "$log_b" -- "${RUN_EXEC[@]}" "${concurrent_cmd[@]}"
pid_b=$SL_RUN_PID out_b=$SL_OUT id_b=$SL_RUN_ID
sink_mark
# shellcheck disable=SC2317 # called through wait_until
both_live() { [[ -d $CG2/sluice/$id_a && -d $CG2/sluice/$id_b ]]; }
wait_until 10000 both_live
touch "$go"
SL_RUN_PID=$pid_a
sluice_wait 20
rc_a=$SL_RC
SL_RUN_PID=$pid_b
sluice_wait 20
rc_b=$SL_RC
tap_is "concurrent: run A (allows .10) gets ok, then EPERM for .20" \
	"$(sed -E 's/ [0-9]+$//' "$out_a" | tr '\n' ' ')" "ok err EPERM "
tap_is "concurrent: run B (allows .20) gets EPERM for .10, then ok" \
	"$(sed -E 's/ [0-9]+$//' "$out_b" | tr '\n' ' ')" "err EPERM ok "
tap_is "concurrent: both runs exit with their last probe's status" "$rc_a $rc_b" "1 0"
tap_is "concurrent: the test hosts got exactly one connection each" \
	"$(sink_count "tcp-accept 198.51.100.10 80") $(sink_count "tcp-accept 198.51.100.20 80")" \
	"1 1"
assert_log "concurrent: run A's log has its deny of .20" "$log_a" 1 type=decision \
	"run_id=$id_a" dst=198.51.100.20 decision=deny rule=default
assert_log "concurrent: run B's log has its allow of .20" "$log_b" 1 type=decision \
	"run_id=$id_b" dst=198.51.100.20 decision=allow rule=other-host
assert_log "concurrent: run B's log has no line of run A" "$log_b" 0 "run_id=$id_a"
tap_check "concurrent: run A left nothing" leftovers_check "$id_a"
tap_check "concurrent: run B left nothing" leftovers_check "$id_b"

tap_done
