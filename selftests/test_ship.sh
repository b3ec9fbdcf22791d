#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Shipping a run's signed log and its checkpoints sidecar with an existing collector (sluice(8)
# "Running it on a fleet"): Debian's rsyslog, with userspace/deploy/rsyslog-sluice.conf as it is
# shipped, tails both files of a live sluice run and forwards them over TCP to a second rsyslogd,
# userspace/deploy/rsyslog-collector.conf, in another network namespace (a veth pair between two
# namespaces this test makes). On the collector's side the copies are byte-identical (cmp) and
# sluice verify says intact and sealed; a line cut out of the copy is caught. The run writes a
# line of 8191 bytes (the longest a log line can be) full of \" and \\ escapes, and the sidecar
# holds multi-line notes with UTF-8 (the signature line's em dash) and empty lines. The shipping
# rsyslogd is stopped (SIGTERM, by its pid) mid-run while the log grows and started again on the
# same work directory: nothing is lost or sent twice.
#
# Each rsyslogd has its own config, pid file and work directory; the system's rsyslog is not
# touched. Not tested here: a SIGKILL of rsyslogd (it may lose or repeat the last messages; the
# collector's verify would say so), TLS between the two (the config is plain TCP), the Fluent Bit
# and OpenTelemetry Collector configurations beside it (neither is packaged in Debian).

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
command -v rsyslogd >/dev/null || skip_all "rsyslogd not installed (Debian package rsyslog)"
SHIP_CONF=$REPO/userspace/deploy/rsyslog-sluice.conf
COLLECT_CONF=$REPO/userspace/deploy/rsyslog-collector.conf
[[ -r $SHIP_CONF && -r $COLLECT_CONF ]] || bail_out "missing $SHIP_CONF or $COLLECT_CONF"
topo_up

NS_SHIP=sl-ship-$SL_ID
NS_COLL=sl-coll-$SL_ID
COLL_ADDR=10.200.9.2
COLL_PORT=6514
sl_on_exit "ip netns del $NS_SHIP 2>/dev/null; ip netns del $NS_COLL 2>/dev/null"

ship_topo() {
	local ns
	for ns in "$NS_SHIP" "$NS_COLL"; do
		ip netns add "$ns" || return 1
		ip -n "$ns" link set lo up || return 1
	done
	ip -n "$NS_SHIP" link add veth0 type veth peer name veth0 netns "$NS_COLL" || return 1
	ip -n "$NS_SHIP" addr add 10.200.9.1/30 dev veth0 || return 1
	ip -n "$NS_COLL" addr add "$COLL_ADDR/30" dev veth0 || return 1
	ip -n "$NS_SHIP" link set veth0 up || return 1
	ip -n "$NS_COLL" link set veth0 up || return 1
}
ship_topo || bail_out "cannot build the shipper and collector namespaces"

LOGDIR=$SL_TMP/ship-logs     # what the node writes and rsyslog tails
SHIP_WORK=$SL_TMP/ship-work  # the shipper's state files and queue spool
COLL_DIR=$SL_TMP/collected   # what the collector writes
COLL_WORK=$SL_TMP/coll-work
mkdir -p "$LOGDIR" "$SHIP_WORK" "$COLL_DIR" "$COLL_WORK"

# rsyslog_start NAME NS CONF VAR=VALUE…: rsyslogd in the foreground in NS, its pid in
# $SL_TMP/NAME.pid (returned in RSYSLOG_PID), its stderr in $SL_TMP/NAME.err.
rsyslog_start() {
	local name=$1 ns=$2 conf=$3
	shift 3
	rm -f "$SL_TMP/$name.pid"
	env "$@" ip netns exec "$ns" rsyslogd -n -f "$conf" -i "$SL_TMP/$name.pid" \
		>>"$SL_TMP/$name.err" 2>&1 </dev/null &
	RSYSLOG_PID=$!
	sl_track_pid "$RSYSLOG_PID"
	wait_until 5000 test -s "$SL_TMP/$name.pid" || return 1
	[[ $(<"$SL_TMP/$name.pid") == "$RSYSLOG_PID" ]]
}

# rsyslog_stop PID: SIGTERM, then wait for it to have written its state and left.
rsyslog_stop() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || return 1
	for ((i = 0; i < 200 * SL_SLOW; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$pid" 2>/dev/null && return 1
	wait "$pid" 2>/dev/null
	return 0
}

start_collector() {
	rsyslog_start collector "$NS_COLL" "$COLLECT_CONF" SLUICE_COLLECT_DIR="$COLL_DIR" \
		SLUICE_COLLECT_WORK="$COLL_WORK" SLUICE_COLLECT_PORT="$COLL_PORT" || return 1
	COLL_PID=$RSYSLOG_PID
	# listening before the shipper's first connection
	wait_until 5000 sh -c "ip netns exec $NS_COLL ss -ltnH 'sport = :$COLL_PORT' | grep -q ."
}

start_shipper() {
	rsyslog_start shipper "$NS_SHIP" "$SHIP_CONF" SLUICE_SHIP_DIR="$LOGDIR" \
		SLUICE_SHIP_WORK="$SHIP_WORK" SLUICE_SHIP_TARGET="$COLL_ADDR" \
		SLUICE_SHIP_PORT="$COLL_PORT" || return 1
	SHIP_PID=$RSYSLOG_PID
}

# copy_of FILE: the collector's copy of LOGDIR/FILE (under the sender's host name).
copy_of() {
	local f
	for f in "$COLL_DIR"/*/"$1"; do
		[[ -e $f ]] && { echo "$f"; return 0; }
	done
	echo "$COLL_DIR/none/$1"
}

lines_of() { [[ -e $1 ]] && wc -l <"$1" || echo 0; }
# has_lines FILE N: FILE has at least N lines (now: for wait_until)
# shellcheck disable=SC2317 # called through wait_until
has_lines() { [[ $(lines_of "$1") -ge $2 ]]; }

policy=$SL_TMP/ship.yaml
cat >"$policy" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
EOF

# The workload: an allowed and a denied connection every 0.2 s until $SL_TMP/stop exists. Its
# last argument is FILLER, which run_start's argv records: with it the run_start line is
# 8191 bytes long, the most a line may be, made of escaped quotes and backslashes.
STOP=$SL_TMP/stop
workload() {
	echo "while [ ! -e $STOP ]; do $SL_PROBE tcp 198.51.100.10 80 >/dev/null;" \
		"$SL_PROBE tcp 198.51.100.20 80 >/dev/null; sleep 0.2; done; true"
}
filler_of() {
	local n=$1 pad
	pad=$(head -c "$n" /dev/zero | tr '\0' x)
	printf '%s' "quote\" backslash\\ both\\\" utf-8 é — ✓ $pad"
}
run_start_len() {
	awk '/"type":"run_start"/ { print length($0); exit }' "$1"
}

# A dry run (not shipped) measures the run_start line with a short filler; the shipped run's
# filler is longer by what takes the line to 8191 bytes. (The run ids of both have one digit.)
touch "$STOP"
sluice_run "$policy" "$SL_TMP/dry.jsonl" -- "${RUN_EXEC[@]}" sh -c "$(workload)" sh \
	"$(filler_of 1)"
dry_len=$(LC_ALL=C run_start_len "$SL_TMP/dry.jsonl")
[[ $SL_RC -eq 0 && $dry_len =~ ^[0-9]+$ ]] || {
	sluice_diag "$SL_TMP/dry.jsonl"
	bail_out "the dry run failed"
}
FILLER=$(filler_of $((1 + 8191 - dry_len)))
rm -f "$STOP"

start_collector || bail_out "the collector rsyslogd did not start: $(cat "$SL_TMP/collector.err")"
start_shipper || bail_out "the shipping rsyslogd did not start: $(cat "$SL_TMP/shipper.err")"

log=$LOGDIR/$(sluice_next_run_id).jsonl
sluice_start "$policy" "$log" --checkpoint-lines 5 -- "${RUN_EXEC[@]}" sh -c "$(workload)" sh \
	"$FILLER"

# ---------------------------------------------------------------------------------------------
# 1. Shipped while the run is live.

# shellcheck disable=SC2317 # called through wait_until
copy_has_lines() { has_lines "$(copy_of "$(basename "$log")")" "$1"; }
wait_until 20000 has_lines "$log" 20
if wait_until 20000 copy_has_lines 10; then
	tap_ok "live: the collector has the log's lines while the run goes on"
else
	tap_fail "live: the collector has the log's lines while the run goes on" \
		"the log has $(lines_of "$log") lines, the collector's copy none after 20 s"$'\n'"$(
			tail -n 5 "$SL_TMP/shipper.err" "$SL_TMP/collector.err" 2>&1)"
fi
copy=$(copy_of "$(basename "$log")")
if wait_until 20000 test -s "$copy.checkpoints"; then
	tap_ok "live: and the checkpoint notes"
else
	tap_fail "live: and the checkpoint notes" "no $copy.checkpoints after 20 s"
fi

# ---------------------------------------------------------------------------------------------
# 2. The shipper stopped mid-run, the log growing while it is away, and started again.

if rsyslog_stop "$SHIP_PID"; then
	tap_ok "restart: the shipping rsyslogd stops on SIGTERM"
else
	tap_fail "restart: the shipping rsyslogd stops on SIGTERM" "pid $SHIP_PID still there"
fi
at_stop=$(lines_of "$log")
if wait_until 20000 has_lines "$log" $((at_stop + 15)); then
	tap_ok "restart: the log grows by 15 lines while nothing ships it"
else
	tap_fail "restart: the log grows by 15 lines while nothing ships it" \
		"from $at_stop to $(lines_of "$log") lines"
fi
tap_cmp "restart: the copy is behind the log meanwhile" "$(lines_of "$copy")" -lt \
	"$(lines_of "$log")"
if start_shipper; then
	tap_ok "restart: the shipping rsyslogd starts again on its work directory"
else
	tap_fail "restart: the shipping rsyslogd starts again on its work directory" \
		"$(tail -n 5 "$SL_TMP/shipper.err")"
fi
# a few more lines after the restart before the run ends
at_start=$(lines_of "$log")
wait_until 20000 has_lines "$log" $((at_start + 10))
touch "$STOP"
if sluice_wait 30; then
	tap_is "the run exits 0" "$SL_RC" 0
else
	tap_fail "the run exits 0" "still running after 30 s"
fi

# ---------------------------------------------------------------------------------------------
# 3. The collector's copies: byte for byte, and verified there.

# shellcheck disable=SC2317 # called through wait_until
same_size() { [[ -e $2 && $(stat -c %s "$1") == $(stat -c %s "$2") ]]; }
wait_until 30000 same_size "$log" "$copy"
wait_until 30000 same_size "$log.checkpoints" "$copy.checkpoints"
# stopped, so that everything it received is on disk
rsyslog_stop "$COLL_PID"
rsyslog_stop "$SHIP_PID"

tap_cmp "the run made allowed and denied connections while it was shipped" \
	"$(($(log_count "$log" type=decision decision=allow) > 5 &&
		$(log_count "$log" type=decision decision=deny) > 5))" -eq 1
if cmp "$log" "$copy" >/dev/null 2>&1; then
	tap_ok "collector: the log's copy is byte-identical (nothing lost, nothing twice)"
else
	tap_fail "collector: the log's copy is byte-identical (nothing lost, nothing twice)" \
		"$(cmp "$log" "$copy" 2>&1; echo "log $(lines_of "$log") lines," \
			"copy $(lines_of "$copy") lines, $(sort "$copy" | uniq -d | wc -l) repeated")"
fi
if cmp "$log.checkpoints" "$copy.checkpoints" >/dev/null 2>&1; then
	tap_ok "collector: the checkpoints' copy is byte-identical"
else
	tap_fail "collector: the checkpoints' copy is byte-identical" \
		"$(cmp "$log.checkpoints" "$copy.checkpoints" 2>&1)"
fi
tap_is "collector: the copy holds the 8191-byte line whole" \
	"$(LC_ALL=C awk '{ if (length($0) > m) m = length($0) } END { print m }' "$copy")" 8191
tap_cmp "collector: with its escaped quotes and backslashes and UTF-8" \
	"$(grep -cF 'quote\" backslash\\ both\\\" utf-8 é — ✓ xxx' "$copy")" -eq 1
tap_cmp "collector: the notes' UTF-8 signature lines and empty lines are there" \
	"$(($(grep -c '^— ' "$copy.checkpoints") >= 5 &&
		$(grep -c '^$' "$copy.checkpoints") == 2 * $(grep -c '^— ' "$copy.checkpoints")))" \
	-eq 1
out=$("$SLUICE" verify "$copy" --checkpoints "$copy.checkpoints" --key "$SLUICE_PUB" \
	--run-id "$SL_RUN_ID" 2>&1)
rc=$?
if [[ $rc -eq 0 && $out == *"sealed:      yes"* && $out == *"OK: intact and complete"* ]]; then
	tap_ok "collector: sluice verify says the copy is intact and sealed"
else
	tap_fail "collector: sluice verify says the copy is intact and sealed" \
		"exit status $rc: $out"
fi

# What a collector that lost or dropped a line would see.
cut=$SL_TMP/cut.jsonl
sed '12d' "$copy" >"$cut"
"$SLUICE" verify "$cut" --checkpoints "$copy.checkpoints" --key "$SLUICE_PUB" \
	--run-id "$SL_RUN_ID" >/dev/null 2>&1
tap_is "collector: a copy with one line lost is invalid (exit 1)" "$?" 1

tap_done
