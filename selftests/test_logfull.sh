#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# P25: the log on a filesystem that fills up in the middle of a run (a small tmpfs of the test's
# own, filled from outside while the workload makes connections to an allowed host).
# - With --strict-evidence: once the writer has failed, a new connection to the allowed host is
#   refused at once with EPERM (reason log_unwritable) and nothing reaches the sink; it stays
#   refused after space returns (the decision taken: closed for the rest of the run). The log
#   goes on once there is room: a loss line of hook "log" declares what could not be written,
#   the log is sealed, and sluice exits 123.
# - Without it: the connections go on (the sink sees each), the log goes on once space is freed
#   with the same declaration, sluice exits 123, and sluice verify and sl_logcheck.py both report
#   the unwritten records (verify exit 3, never "0 lost"); on a disk that never gets space back
#   the log still ends with that declaration and its seal (room taken ahead on disk).
# Each case runs in the default configuration (CMD as root, sluice's own network namespace) and
# in the recommended one (--user nobody --netns).

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up
python3 -c 'import cryptography' 2>/dev/null ||
	skip_all "python3-cryptography not installed (make deps)"

CHECK=$SL_LIB_DIR/tools/sl_logcheck.py
policy=$SL_TMP/logfull.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
EOF2

# A tmpfs of the test's own for each run's log (its sidecar too), unmounted on exit.
mnt_n=0
new_fs() {
	mnt_n=$((mnt_n + 1))
	FS=$SL_TMP/fs$mnt_n
	mkdir -p "$FS"
	mount -t tmpfs -o "size=${1:-256k},mode=0755" "sl-logfull-$SL_ID-$mnt_n" "$FS" || return 1
	sl_on_exit "umount '$FS'"
}

# fill: every free page of the run's tmpfs taken by a file of the test's.
fill() { dd if=/dev/zero of="$FS/filler" bs=4k >/dev/null 2>&1 || true; }
unfill() { rm -f "$FS/filler"; }
err_has() { grep -qF -- "$1" "$SL_ERR"; }
seen() { [[ -e $1 ]]; }
accepted() { sink_count 'tcp-accept 198.51.100.10 80'; }

# The workload, by marker files in M (world-writable: CMD may run as nobody):
#   3 allowed connections; M/ready; denied connections until M/go (the log gets lines to fail
#   on); 5 allowed connections (one result line each in M/after); M/done1; wait for M/go2;
#   2 allowed connections (M/later); M/done2.
workload() {
	local m=$1 p="$SL_PROBE tcp 198.51.100.10 80 --timeout-ms 2000"
	cat <<EOF2
for i in 1 2 3; do $p >>$m/before; done
: >$m/ready
while [ ! -e $m/go ]; do $SL_PROBE tcp 198.51.100.20 80 >/dev/null; sleep 0.05; done
for i in 1 2 3 4 5; do $p >>$m/after; done
: >$m/done1
while [ ! -e $m/go2 ]; do sleep 0.05; done
for i in 1 2; do $p >>$m/later; done
: >$m/done2
EOF2
}

# every line of FILE is "err EPERM MS", MS within the prompt limit, and there are N of them
all_refused() {
	local file=$1 n=$2 line got=0
	while read -r line; do
		[[ $line =~ ^err\ EPERM\ ([0-9]+)$ ]] || return 1
		[[ ${BASH_REMATCH[1]} -le $SL_PROMPT_MS ]] || return 1
		got=$((got + 1))
	done <"$file"
	[[ $got -eq $n ]]
}
all_ok() { [[ $(grep -cx ok "$1") -eq $2 && $(wc -l <"$1") -eq $2 ]]; }

# verify_unwritten LOG: "N" from verify's summary line "log failed: … N kernel records read but
# never written", and the same count from verify --json and from sl_logcheck.py --summary.
verify_counts() {
	local log=$1
	"$SLUICE" verify "$log" | sed -nE 's/^  log failed: .*: ([0-9]+) kernel records read but never written.*/\1/p'
	"$SLUICE" verify --json "$log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unwritten"])'
	python3 "$CHECK" "$log" --pub "$SLUICE_PUB" --summary | sed -nE 's/.* unwritten=([0-9]+) .*/\1/p'
}

# one_case CONFIG STRICT: CONFIG "default" or "recommended"; STRICT "strict" or "".
one_case() {
	local config=$1 strict=$2 name m log args=() cmd a0 a1
	name="P25 ($config${strict:+, strict})"
	if ! new_fs; then
		tap_skip "$name" "cannot mount a tmpfs"
		return
	fi
	m=$SL_TMP/m$mnt_n
	mkdir -m 1777 "$m"
	log=$FS/log.jsonl
	[[ -n $strict ]] && args+=(--strict-evidence)
	if [[ $config == recommended ]]; then
		args+=(--user nobody --netns "/run/netns/$SL_NS_RUN")
		cmd=(sh -c "$(workload "$m")")
	else
		cmd=("${RUN_EXEC[@]}" sh -c "$(workload "$m")")
	fi
	sluice_start "$policy" "$log" "${args[@]}" -- "${cmd[@]}"
	wait_until 10000 seen "$m/ready" || bail_out "$name: the workload did not start"
	tap_check "$name: before the disk fills, the allowed host is reached" all_ok "$m/before" 3

	fill
	wait_until 10000 err_has "writing log $log: No space left on device" ||
		tap_fail "$name: the writer noticed the full disk" "no such line on stderr"
	a0=$(accepted)
	: >"$m/go"
	wait_until 20000 seen "$m/done1" || bail_out "$name: the workload did not go on"
	a1=$(accepted)
	if [[ -n $strict ]]; then
		tap_check "$name: after the log failed, each connection to the allowed host is refused at once with EPERM" \
			all_refused "$m/after" 5
		sink_settle
		tap_is "$name: and nothing of them reached the sink" "$(($(accepted) - a0))" 0
	else
		tap_check "$name: the connections go on while the log cannot be written" \
			all_ok "$m/after" 5
		tap_is "$name: the sink saw each of them" "$((a1 - a0))" 5
	fi

	# Space comes back: the writer goes on, and says what it could not write.
	unfill
	wait_until 10000 err_has "sluice: log $log can be written again" ||
		tap_fail "$name: the writer goes on once there is room" "no such line on stderr"
	a1=$(accepted)
	: >"$m/go2"
	wait_until 20000 seen "$m/done2" || bail_out "$name: the workload did not end"
	if [[ -n $strict ]]; then
		tap_check "$name: the refusal holds for the rest of the run, space or not" \
			all_refused "$m/later" 2
		sink_settle
		tap_is "$name: nothing reached the sink after the log failed" "$(($(accepted) - a0))" 0
		tap_cmp "$name: those refusals are in the log, as log_unwritable denials" \
			"$(log_count "$log" type=decision decision=deny reason=log_unwritable)" -eq 2
	else
		tap_check "$name: after that too" all_ok "$m/later" 2
	fi
	if ! sluice_wait "$SL_RUN_TIMEOUT"; then
		tap_fail "$name: the run ended" "sluice still running"
		return
	fi
	assert_rc "$name: sluice exits 123: the log could not hold every record" 123
	tap_check "$name: the log checks, sealed, independently" \
		python3 "$CHECK" "$log" --pub "$SLUICE_PUB"
	tap_cmp "$name: a loss line of hook log declares what was not written" \
		"$(log_count "$log" type=loss hook=log)" -ge 1
	"$SLUICE" verify "$log" >"$SL_TMP/verify.out" 2>&1
	tap_is "$name: sluice verify: exit 3 (intact, sealed, with declared loss)" "$?" 3
	tap_check "$name: verify does not say 0 lost" \
		bash -c "! grep -q '^  loss:        0 kernel records declared lost' '$SL_TMP/verify.out'"
	local counts
	counts=$(verify_counts "$log" | tr '\n' ' ')
	read -r c1 c2 c3 <<<"$counts"
	tap_check "$name: verify, verify --json and sl_logcheck.py report the same unwritten count, at least the 5 (or, strict, the refusals)" \
		test -n "$c1" -a "$c1" = "${c2-}" -a "$c1" = "${c3-}" -a "${c1:-0}" -ge 5
	assert_no_leftovers "$name: nothing left"
}

for config in default recommended; do
	one_case "$config" strict
	one_case "$config" ""
done

# A disk that never gets space back: the writer takes room on disk ahead of its lines, so the
# disk fills while the run's last lines still fit there: the log ends with the declaration of
# what it could not write, run_end and the seal; sluice exits 123.
if new_fs; then
	log=$FS/log.jsonl
	sluice_start "$policy" "$log" -- "${RUN_EXEC[@]}" sh -c \
		"for i in 1 2 3; do $SL_PROBE tcp 198.51.100.10 80 >/dev/null; done; : >$FS/ready;
		 sleep 1; for i in \$(seq 20); do $SL_PROBE tcp 198.51.100.10 80 >/dev/null; done"
	wait_until 10000 seen "$FS/ready" || bail_out "P25 (never freed): the workload did not start"
	fill
	if sluice_wait "$SL_RUN_TIMEOUT"; then
		assert_rc "P25 (never freed): sluice exits 123" 123
	else
		tap_fail "P25 (never freed): the run ended" "sluice still running"
	fi
	tap_check "P25 (never freed): stderr says the log could not be written" \
		err_has "writing log $log: No space left on device"
	tap_check "P25 (never freed): the log checks, sealed, on the full disk" \
		python3 "$CHECK" "$log" --pub "$SLUICE_PUB"
	"$SLUICE" verify "$log" >"$SL_TMP/verify.out" 2>&1
	tap_is "P25 (never freed): sluice verify: exit 3" "$?" 3
	counts=$(verify_counts "$log" | tr '\n' ' ')
	read -r c1 c2 c3 <<<"$counts"
	tap_check "P25 (never freed): verify, --json and sl_logcheck.py report the same unwritten count, the 20 connections' records at least" \
		test -n "$c1" -a "$c1" = "${c2-}" -a "$c1" = "${c3-}" -a "${c1:-0}" -ge 20
	tap_is "P25 (never freed): the log's file takes no room past its end once closed" \
		"$(($(stat -c %b "$log") * $(stat -c %B "$log") <= ($(stat -c %s "$log") + 4095) / 4096 * 4096))" 1
	unfill
	assert_no_leftovers "P25 (never freed): nothing left"
else
	tap_skip "P25 (never freed)" "cannot mount a tmpfs"
fi

# P25 (strict, DNS): a workload that connected a UDP socket to port 53 before the log failed
# sends later queries with send(): no connect or sendmsg hook sees them, the backstop passes
# them to the run's resolver. With --strict-evidence the resolver must not carry them upstream
# once the log cannot be written (a listed wildcard name is a channel out: <data>.ok.test);
# it answers REFUSED and asks nobody.
dns_workload() {
	cat <<'EOF2'
import errno, os, socket, struct, sys, time
m = sys.argv[1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.connect(("192.0.2.53", 53))
def ask(name, qid, out):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    q += struct.pack(">HH", 1, 1)
    try:
        s.send(q)
        res = "rcode %d" % (s.recv(4096)[3] & 15)
    except OSError as e:
        res = "err " + errno.errorcode.get(e.errno, "timeout")
    with open(out, "a") as f:
        f.write(res + "\n")
ask("before.ok.test", 1, m + "/before")
open(m + "/ready", "w").close()
while not os.path.exists(m + "/go"):
    t = socket.socket()
    t.settimeout(1)
    try:
        t.connect(("198.51.100.20", 80))
    except OSError:
        pass
    t.close()
    time.sleep(0.05)
for i in range(3):
    ask("leak%d.ok.test" % i, 10 + i, m + "/after")
open(m + "/done", "w").close()
EOF2
}
dns_policy=$SL_TMP/logfull-dns.yaml
cat >"$dns_policy" <<'EOF2'
default: deny
rules:
  - name: ok
    hosts: ["*.ok.test"]
    ports: [80]
EOF2
if ! dns_upstream_start upstream --address=/ok.test/198.51.100.10; then
	tap_skip "P25 (strict, DNS)" "cannot start dnsmasq"
elif ! new_fs; then
	tap_skip "P25 (strict, DNS)" "cannot mount a tmpfs"
else
	sl_on_exit dns_upstream_stop
	m=$SL_TMP/m$mnt_n
	mkdir -m 1777 "$m"
	dns_workload >"$m/w.py"
	log=$FS/log.jsonl
	upstream_mark
	sluice_start "$dns_policy" "$log" --strict-evidence --user nobody \
		--netns "/run/netns/$SL_NS_RUN" --upstream "127.0.0.1:$SL_DNS_PORT" -- \
		python3 "$m/w.py" "$m"
	wait_until 10000 seen "$m/ready" || bail_out "P25 (strict, DNS): the workload did not start"
	tap_is "P25 (strict, DNS): before the disk fills, a query is answered" \
		"$(cat "$m/before")" "rcode 0"
	fill
	wait_until 10000 err_has "writing log $log: No space left on device" ||
		tap_fail "P25 (strict, DNS): the writer noticed the full disk" "no such line on stderr"
	upstream_mark
	: >"$m/go"
	wait_until 20000 seen "$m/done" || bail_out "P25 (strict, DNS): the workload did not go on"
	sleep 0.5
	n=0
	for i in 0 1 2; do n=$((n + $(upstream_count "leak$i.ok.test"))); done
	tap_is "P25 (strict, DNS): no query sent on an open socket after the log failed goes upstream" \
		"$n" 0
	tap_check "P25 (strict, DNS): each is answered without an address" \
		bash -c "! grep -qx 'rcode 0' '$m/after'"
	unfill
	sluice_wait "$SL_RUN_TIMEOUT" || tap_fail "P25 (strict, DNS): the run ended" "still running"
	assert_rc "P25 (strict, DNS): sluice exits 123" 123
	assert_no_leftovers "P25 (strict, DNS): nothing left"
fi

# P25 (rotation): the room taken ahead must survive a rotation. A workload (here: the test,
# for it) that keeps the disk full grabs whatever the writer gives back; a rotation that gave
# back the old segment's room before the new one had its own left the log no room for its last
# lines: unsealed, the unwritten records never declared.
if new_fs 1m; then
	m=$SL_TMP/m$mnt_n
	mkdir -m 1777 "$m"
	log=$FS/log.jsonl
	SLUICE_SELFTEST_KEEP_PLAIN=1 sluice_start "$policy" "$log" --log-rotate-kib 4 -- \
		"${RUN_EXEC[@]}" sh -c ": >$m/ready; while [ ! -e $m/stop ]; do
			$SL_PROBE tcp 198.51.100.20 80 >/dev/null; sleep 0.3; done"
	wait_until 10000 seen "$m/ready" || bail_out "P25 (rotation): the workload did not start"
	(while [[ ! -e $m/stopfill ]]; do
		cat /dev/zero >>"$FS/filler" 2>/dev/null
	done) &
	filler=$!
	sl_track_pid "$filler"
	# a rotation on the full disk: the log failed in the new segment, or rotation stopped
	rotated_full() {
		err_has "writing log $log: No space left on device" ||
			err_has "rotating log $log: room for the next segment: No space left on device"
	}
	wait_until 20000 rotated_full ||
		tap_fail "P25 (rotation): a rotation came while the disk was full" "not on stderr"
	tap_check "P25 (rotation): rotation stops there, the log goes on in its room" \
		err_has "rotating log $log: room for the next segment: No space left on device; rotation stops"
	sleep 1
	: >"$m/stop"
	if sluice_wait "$SL_RUN_TIMEOUT"; then
		tap_check "P25 (rotation): sluice exits 0, or 123 if the log failed after all" \
			test "$SL_RC" = 0 -o "$SL_RC" = 123
	else
		tap_fail "P25 (rotation): the run ended" "sluice still running"
	fi
	: >"$m/stopfill"
	wait "$filler" 2>/dev/null
	tap_check "P25 (rotation): the log checks, sealed, on the disk kept full" \
		python3 "$CHECK" "$log" --pub "$SLUICE_PUB"
	"$SLUICE" verify "$log" >"$SL_TMP/verify.out" 2>&1
	rc=$?
	tap_check "P25 (rotation): sluice verify: exit 0, or 3 with the unwritten records declared" \
		test "$rc" = 0 -o "$rc" = 3
	unfill
	assert_no_leftovers "P25 (rotation): nothing left"
else
	tap_skip "P25 (rotation)" "cannot mount a tmpfs"
fi

# P25 (many hosts): the room kept for the end holds the seal and what precedes it, not a
# host_total line per host: a workload that sends to 254 addresses of an allowed /24 and then
# fills the disk made the end of the run overflow it (an unsealed log, like a crash). The lines
# that do not fit are counted in an anomaly; the log ends sealed.
ht_policy=$SL_TMP/logfull-ht.yaml
cat >"$ht_policy" <<'EOF2'
default: deny
rules:
  - name: net
    cidrs: ["198.51.100.0/24"]
    ports: [80]
    protocols: [udp]
EOF2
if new_fs 1m; then
	m=$SL_TMP/m$mnt_n
	mkdir -m 1777 "$m"
	cat >"$m/w.py" <<'EOF2'
import os, socket, sys, time
m = sys.argv[1]
for n in range(1, 255):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("198.51.100.%d" % n, 80))
    s.send(b"x")
    s.close()
open(m + "/ready", "w").close()
while not os.path.exists(m + "/go"):
    time.sleep(0.05)
while not os.path.exists(m + "/stop"):
    t = socket.socket()
    t.settimeout(1)
    try:
        t.connect(("192.0.2.1", 80))
    except OSError:
        pass
    t.close()
EOF2
	log=$FS/log.jsonl
	sluice_start "$ht_policy" "$log" -- "${RUN_EXEC[@]}" python3 "$m/w.py" "$m"
	wait_until 20000 seen "$m/ready" || bail_out "P25 (many hosts): the workload did not start"
	sleep 1
	fill
	: >"$m/go"
	wait_until 60000 err_has "writing log $log: No space left on device" ||
		tap_fail "P25 (many hosts): the writer noticed the full disk" "no such line on stderr"
	: >"$m/stop"
	if sluice_wait "$SL_RUN_TIMEOUT"; then
		assert_rc "P25 (many hosts): sluice exits 123" 123
	else
		tap_fail "P25 (many hosts): the run ended" "sluice still running"
	fi
	tap_check "P25 (many hosts): the log checks, sealed, on the full disk" \
		python3 "$CHECK" "$log" --pub "$SLUICE_PUB"
	"$SLUICE" verify "$log" >"$SL_TMP/verify.out" 2>&1
	tap_is "P25 (many hosts): sluice verify: exit 3" "$?" 3
	tap_cmp "P25 (many hosts): an anomaly counts the host_total lines left out" \
		"$(log_count "$log" type=anomaly what="host_total lines the disk had no room for")" -eq 1
	unfill
	assert_no_leftovers "P25 (many hosts): nothing left"
else
	tap_skip "P25 (many hosts)" "cannot mount a tmpfs"
fi

tap_done
