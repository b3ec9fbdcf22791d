#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sluice resume: a run whose sluice is SIGKILLed goes on under its pinned programs (P17), and
# `sluice resume RUN_ID` takes it over. Run A: a workload that resolves a listed name and holds a
# flow open across the kill; while no writer lives it is denied three times; after the resume its
# DNS is answered again, the flow's line names its host and counts its bytes from both writers'
# time, the denials made while the writer was dead are in the log, the checkpoints exported by
# both writers verify against the log, and the run ends (and is cleaned up) when its cgroup
# empties; a second resume while the first is alive is refused. Run B: refused resumes leave run
# and log untouched (the writer still alive, another policy, a log that does not verify, no such
# run); a torn last line and a sidecar cut mid-note are kept and mended; SIGTERM ends a resumed
# run. Run C: records the dead writer's log: setting left out, and a flood past a one-page ring
# buffer while nobody read it, are declared (restart_gap, loss: verify exit 3); rotation goes on
# across the restart; a last line without its newline gets it. Run E: an edit to the unsigned
# run_start that rebuilds the chain (report mode, another upstream) is refused against what the
# run's programs keep; a log cut back below its sidecar's checkpoint is refused; the resolver's
# port is privileged, out of the workload's reach; a resumed writer killed is resumed again.
# Run K: a writer killed while it drains a flood, its syncs in flight: the log and its
# sidecar agree, and the resume adds back the notes the sidecar lacks.
# Run F: a writer killed inside a record's handler after that record's line was synced (libbpf
# had not moved past it): the resumed writer does not write it twice. Run G: a line forged
# into the unsigned tail for the next record does not hide it (verify finds the kseq twice).
# Run D: a cgroup of the run's name but another id is refused; once it is gone, the run's end
# is written at once. Run T: the resumed writer orders an address's rules, shared by names of
# different caps, by the run's own caps. Every log is checked by sluice verify and by sl_logcheck.py.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

# resume_start ID LOG [ARGS…]: sluice resume in the background; SL_RESUME_PID, its output in
# $SL_TMP/resume-ID.{out,err}.
resume_start() {
	local id=$1 log=$2
	shift 2
	SL_RESUME_RC=
	"$SLUICE" resume "$id" --log "$log" "$@" >"$SL_TMP/resume-$id.out" \
		2>"$SL_TMP/resume-$id.err" </dev/null &
	SL_RESUME_PID=$!
	sl_track_pid "$SL_RESUME_PID"
}

# segments_have LOG N TEXT: LOG's segments (LOG, LOG.NNNNNN[.gz]) hold N lines with TEXT; a log
# that rotates may have moved a line on by the time it is looked for. (A segment being compressed
# is there twice for a moment: a wait for N may end a moment early then.)
segments_have() {
	[[ $(zcat -f -- "$1" "$1".[0-9]* 2>/dev/null | grep -cF -- "$3") -ge $2 ]]
}

# resume_started ID LOG WHAT [N]: the resume of ID has written its Nth writer_restart (default 1);
# its listeners are bound by then. If not, the file bails out with the resume's stderr: every
# check after would judge a run nobody writes for. (A loaded machine needs seconds to load a
# run's programs: the wait is long.)
restarted() { segments_have "$1" "$2" '"type":"writer_restart"'; }
restarted_or_ended() { restarted "$@" || ! pid_running "$SL_RESUME_PID"; }
resume_started() {
	local id=$1 log=$2 what=$3 n=${4:-1}
	wait_until 30000 restarted_or_ended "$log" "$n"
	restarted "$log" "$n" && return 0
	tap_diag_file "$SL_TMP/resume-$id.err"
	bail_out "$what: sluice resume wrote no writer_restart"
}

# resume_wait TIMEOUT_S: SL_RESUME_RC, or 1 if it did not end (TIMEOUT_S scaled by SL_SLOW).
resume_wait() {
	local i
	for ((i = 0; i < $1 * 20 * SL_SLOW; i++)); do
		kill -0 "$SL_RESUME_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$SL_RESUME_PID" 2>/dev/null && return 1
	wait "$SL_RESUME_PID"
	SL_RESUME_RC=$?
}

# resume_refused NAME ID LOG WHY [ARGS…]: sluice resume exits 125 saying WHY (a grep -E pattern),
# and neither the log nor its sidecar changed.
resume_refused() {
	local name=$1 id=$2 log=$3 why=$4 before after rc
	shift 4
	before=$(cat "$log" "$log.checkpoints" 2>/dev/null | sha256sum)
	"$SLUICE" resume "$id" --log "$log" "$@" >"$SL_TMP/refused.out" 2>"$SL_TMP/refused.err" \
		</dev/null
	rc=$?
	after=$(cat "$log" "$log.checkpoints" 2>/dev/null | sha256sum)
	if [[ $rc -eq 125 && $before == "$after" ]] && grep -qE "$why" "$SL_TMP/refused.err"; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected exit 125, \"$why\" on stderr and the log unchanged; got exit $rc, log $([[ $before == "$after" ]] && echo unchanged || echo changed)"
		tap_diag_file "$SL_TMP/refused.err"
	fi
}

# kill_writer: SIGKILL the background sluice run and reap it.
kill_writer() {
	sl_kill_wait "$SL_RUN_PID"
}

# verify_is NAME WANT LOG [ARGS…]: sluice verify's exit status (the summary shown on failure).
verify_is() {
	local name=$1 want=$2 log=$3 rc
	shift 3
	"$SLUICE" verify "$log" "$@" >"$SL_TMP/verify.out" 2>&1
	rc=$?
	if [[ $rc -eq $want ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected sluice verify to exit $want, got $rc"
		tap_diag_file "$SL_TMP/verify.out"
	fi
}

# field LOG TYPE KEY: KEY of the first line of TYPE ("" if none), rotated segments included.
field() {
	python3 - "$@" <<'PY'
import glob, gzip, json, sys
log, typ, key = sys.argv[1:4]
def lines():
    for seg in sorted(glob.glob(glob.escape(log) + ".[0-9]*[0-9].gz")):
        yield from gzip.open(seg)
    yield from open(log, "rb")
for line in lines():
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get("type") == typ:
        v = o.get(key)
        print("" if v is None else json.dumps(v) if not isinstance(v, (str, int)) else v)
        break
PY
}

# a file appears (the workload's way of saying where it is)
# shellcheck disable=SC2317 # called through wait_until
seen() { [[ -e $1 ]]; }
# shellcheck disable=SC2317
log_has() { [[ $(log_count "$@") -gt 0 ]]; }

# ---------------------------------------------------------------------------------------------
# Run A

cat >"$SL_TMP/a.yaml" <<'EOF'
default: deny
rules:
  - name: registry
    hosts: ["registry.npmjs.org"]
    ports: [80]
    protocols: [tcp]
EOF
dns_upstream_start a --address=/registry.npmjs.org/198.51.100.10 || bail_out "cannot start dnsmasq"

# The workload, in phases the test steps through with files in $SL_TMP: (1) resolve the listed
# name, one whole flow of 100 bytes, a second flow opened with 50 bytes sent; "a-ready".
# (2) once "a-dead" exists (sluice was killed): three denied connects; "a-denied". (3) once
# "a-go" exists (resumed): resolve the name again, a third flow of 30 bytes, 70 more bytes on the
# second flow, which then closes.
workload_a=$(cat <<'PY'
import os, socket, sys, time
tmp, probe_name = sys.argv[1], "registry.npmjs.org"
def wait_for(f):
    while not os.path.exists(os.path.join(tmp, f)):
        time.sleep(0.05)
def mark(f):
    open(os.path.join(tmp, f), "w").close()
def resolve():
    try:
        return socket.getaddrinfo(probe_name, 80, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError as e:
        return "err %s" % e
def flow(addr, n):
    s = socket.create_connection((addr, 80), timeout=3)
    s.sendall(b"x" * n)
    return s
addr = resolve()
print("resolved", addr, flush=True)
s1 = flow(addr, 100); s1.close()
s2 = flow(addr, 50)
time.sleep(0.3)
mark("a-ready")
wait_for("a-dead")
for _ in range(3):
    s = socket.socket()
    try:
        s.connect(("198.51.100.20", 80)); print("dead: connected", flush=True)
    except OSError as e:
        print("dead: err", e.errno, flush=True)
    s.close()
mark("a-denied")
wait_for("a-go")
again = resolve()
print("resolved again", again, flush=True)
if again == addr:
    s3 = flow(addr, 30); s3.close(); print("third flow ok", flush=True)
s2.sendall(b"y" * 70)
s2.close()
print("done", flush=True)
PY
)
log_a=$SL_TMP/a.jsonl
exec 3>"$SL_TMP/a-first.cp"
sluice_start "$SL_TMP/a.yaml" "$log_a" --netns "/run/netns/$SL_NS_RUN" \
	--upstream "127.0.0.1:$SL_DNS_PORT" --checkpoint-fd 3 -- \
	"${RUN_EXEC[@]}" python3 -c "$workload_a" "$SL_TMP"
exec 3>&-
id_a=$SL_RUN_ID
pid_a=$SL_RUN_PID
if ! wait_until 60000 seen "$SL_TMP/a-ready" ||
	! wait_until 3000 log_has "$log_a" type=flow req_bytes=100; then
	sluice_diag "$log_a"
	bail_out "run A: the workload's first phase did not finish"
fi
resume_refused "a resume while the run's sluice is alive is refused" "$id_a" "$log_a" \
	"writer is alive"
kill_writer
touch "$SL_TMP/a-dead"
wait_until 5000 seen "$SL_TMP/a-denied" || bail_out "run A: no denials while the writer was dead"
tap_is "P17: with no writer alive, connects to an unlisted host are still denied" \
	"$(grep -c '^dead: err 1$' "$SL_OUT")" 3
tap_check "P17: the run's pins outlive its writer" test -e "/sys/fs/bpf/sluice/$id_a/connect4"
lines_dead=$(wc -l <"$log_a")

exec 3>"$SL_TMP/a-second.cp"
resume_start "$id_a" "$log_a" --checkpoint-fd 3 --upstream "127.0.0.1:$SL_DNS_PORT"
exec 3>&-
resume_started "$id_a" "$log_a" "run A"
# (the live writer stopped meanwhile: its own checkpoint, due every 10 s, would change the log
# and its sidecar while the second is refused, as it did once under emulation)
kill -STOP "$SL_RESUME_PID"
resume_refused "a second resume while the first is alive is refused" "$id_a" "$log_a" \
	"writer is alive"
kill -CONT "$SL_RESUME_PID"
touch "$SL_TMP/a-go"
if resume_wait 20; then
	tap_is "resume: exits 0 when the run's cgroup empties" "$SL_RESUME_RC" 0
else
	tap_fail "resume: exits 0 when the run's cgroup empties" "still running after 20 s"
	sl_stop_pid "$SL_RESUME_PID"
fi
tap_diag_file "$SL_TMP/resume-$id_a.err"
tap_is "resume: the run leaves its namespace's shared maps, the last run there removes them" \
	"$(find /sys/fs/bpf/sluice -maxdepth 1 -name "netns@$(stat -L -c '%d-%i' \
		"/run/netns/$SL_NS_RUN")" | wc -l)" 0
tap_check "resume: the workload's DNS is answered again (same address)" \
	grep -qx 'resolved again 198.51.100.10' "$SL_OUT"
tap_check "resume: the listed host is reached again" grep -qx 'third flow ok' "$SL_OUT"
tap_is "writer_restart follows the lines the dead writer left" \
	"$(field "$log_a" writer_restart seq)" "$lines_dead"
tap_cmp "the denials made while no writer lived are in the log" \
	"$(log_count "$log_a" type=decision decision=deny dst=198.51.100.20)" -eq 3
tap_cmp "a dns line of the resumed resolver for the listed name" \
	"$(log_count "$log_a" type=dns host=registry.npmjs.org decision=allow)" -ge 2
tap_cmp "the flow open across the restart: one line, its host named, both writers' bytes" \
	"$(log_count "$log_a" type=flow host=registry.npmjs.org req_bytes=120)" -eq 1
tap_cmp "host_total sums the flows of both writers (100 + 120 + 30)" \
	"$(log_count "$log_a" type=host_total host=registry.npmjs.org flows=3 req_bytes=250)" -eq 1
tap_is "run_end: the command's status is unknown to a resumed writer" \
	"$(log_count "$log_a" type=run_end exit_status=null 'why=cgroup emptied')" 1
tap_is "run_end: nothing unaccounted across the restart" "$(field "$log_a" run_end restart_gap)" 0
verify_is "run A: sluice verify exit 0" 0 "$log_a"
verify_is "run A: ... and against both writers' exported checkpoints" 0 "$log_a" \
	--checkpoints "$SL_TMP/a-first.cp" --checkpoints "$SL_TMP/a-second.cp"
tap_check "run A: the independent checker accepts the log and its sidecar" \
	log_well_formed "$log_a"
tap_check "run A: cgroup, pins and links are gone" leftovers_check "$id_a" \
	"$(log_run_start_field "$log_a" cgroup_id)"
dns_upstream_stop

# ---------------------------------------------------------------------------------------------
# Run B: refusals, a torn line, a cut sidecar, SIGTERM

cat >"$SL_TMP/b.yaml" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF
cp "$SL_TMP/b.yaml" "$SL_TMP/b-copy.yaml"
log_b=$SL_TMP/b.jsonl
sluice_start "$SL_TMP/b.yaml" "$log_b" --checkpoint-lines 2 -- "${RUN_EXEC[@]}" sh -c \
	"$SL_PROBE tcp 198.51.100.20 80; $SL_PROBE tcp 198.51.100.20 80; : >$SL_TMP/b-ready; sleep 60"
id_b=$SL_RUN_ID
wait_until 60000 seen "$SL_TMP/b-ready" || bail_out "run B did not start"
wait_until 3000 log_has "$log_b" type=decision decision=deny || bail_out "run B: no denial logged"
kill_writer
echo "# a comment changes the digest" >>"$SL_TMP/b.yaml"
resume_refused "a policy file that changed is refused (its SHA-256)" "$id_b" "$log_b" \
	"is not the one run"
resume_refused "... and so is another file with --policy" "$id_b" "$log_b" "is not the one run" \
	--policy "$SL_TMP/a.yaml"
resume_refused "no such run: refused" "no-such-run" "$log_b" "is the log of run|not pinned"
cp "$log_b" "$SL_TMP/b.good"
python3 - "$log_b" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
i = b.index(b'"comm":"', b.index(b'"type":"decision"')) + 8
b[i] = ord("X") if b[i] != ord("X") else ord("Y")
open(p, "wb").write(b)
PY
resume_refused "a log that does not verify is not continued" "$id_b" "$log_b" "does not verify" \
	--policy "$SL_TMP/b-copy.yaml"
cp "$SL_TMP/b.good" "$log_b"
tap_check "refused resumes left the run alone: still pinned, still running" \
	test -e "/sys/fs/bpf/sluice/$id_b/connect4" -a -n "$(cat "$(cg2_mount)/sluice/$id_b/cgroup.procs")"
# a writer killed inside a write: half a line at the end, and the sidecar's last note cut short
torn_seq=$(wc -l <"$log_b")
torn=$(printf '{"seq":%d,"prev":"00' "$torn_seq")
printf '%s' "$torn" >>"$log_b"
truncate -s -7 "$log_b.checkpoints"
resume_start "$id_b" "$log_b" --policy "$SL_TMP/b-copy.yaml"
resume_started "$id_b" "$log_b" "run B"
kill -TERM "$SL_RESUME_PID"
if resume_wait 15; then
	tap_is "SIGTERM ends a resumed run: exit 128+15" "$SL_RESUME_RC" 143
else
	tap_fail "SIGTERM ends a resumed run: exit 128+15" "still running after 15 s"
fi
tap_diag_file "$SL_TMP/resume-$id_b.err"
tap_is "the torn line stays, a line of its own, and writer_restart says how long it is" \
	"$(field "$log_b" writer_restart torn)" "${#torn}"
tap_is "... writer_restart comes right after it" "$(field "$log_b" writer_restart seq)" \
	"$((torn_seq + 1))"
tap_check "the sidecar's cut note was said on stderr" \
	grep -q 'ends inside a note' "$SL_TMP/resume-$id_b.err"
tap_is "run_end: why signal" "$(field "$log_b" run_end why)" signal
verify_is "run B: sluice verify exit 0 (torn line and all)" 0 "$log_b"
tap_check "run B: the independent checker accepts the log and the mended sidecar" \
	log_well_formed "$log_b"
tap_check "run B: cleaned up" leftovers_check "$id_b" "$(log_run_start_field "$log_b" cgroup_id)"

# ---------------------------------------------------------------------------------------------
# Run C: what the dead writer's log: left out, a flood while nobody read, rotation

cat >"$SL_TMP/c.yaml" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
log: [deny]
EOF
log_c=$SL_TMP/c.jsonl
# five allowed connects (not logged), then, once sluice is dead, 300 denials: a one-page ring
# buffer holds far fewer
flood=$(cat <<'PY'
import os, socket, sys, time
tmp = sys.argv[1]
for _ in range(5):
    s = socket.create_connection(("198.51.100.10", 80), timeout=3); s.close()
open(os.path.join(tmp, "c-ready"), "w").close()
while not os.path.exists(os.path.join(tmp, "c-dead")):
    time.sleep(0.05)
for _ in range(300):
    s = socket.socket()
    try:
        s.connect(("198.51.100.20", 80))
    except OSError:
        pass
    s.close()
open(os.path.join(tmp, "c-flooded"), "w").close()
while not os.path.exists(os.path.join(tmp, "c-go")):
    time.sleep(0.05)
PY
)
sluice_start "$SL_TMP/c.yaml" "$log_c" --ringbuf-kib 4 --log-rotate-kib 1 --checkpoint-lines 2 -- \
	"${RUN_EXEC[@]}" python3 -c "$flood" "$SL_TMP"
id_c=$SL_RUN_ID
wait_until 60000 seen "$SL_TMP/c-ready" || bail_out "run C did not start"
# the writer is idle: the five allows have had their drain
wait_until 10000 segments_have "$log_c" 5 '"decision":"allow"'
sink_settle
kill_writer
touch "$SL_TMP/c-dead"
wait_until 10000 seen "$SL_TMP/c-flooded" || bail_out "run C: the flood did not finish"
segs=$(find "$SL_TMP" -maxdepth 1 -name 'c.jsonl.0*' | wc -l)
# the last line's newline lost (a cut write that ended exactly there)
[[ -s $log_c ]] && truncate -s -1 "$log_c"
resume_start "$id_c" "$log_c" --log-rotate-kib 1
resume_started "$id_c" "$log_c" "run C"
touch "$SL_TMP/c-go"
resume_wait 20 || sl_stop_pid "$SL_RESUME_PID"
tap_diag_file "$SL_TMP/resume-$id_c.err"
tap_cmp "run C: the log had rotated before the kill" "$segs" -ge 1
tap_cmp "... and rotates on after the restart" \
	"$(find "$SL_TMP" -maxdepth 1 -name 'c.jsonl.0*.gz' | wc -l)" -gt "$segs"
tap_is "restart_gap counts the five allows the dead writer's log: [deny] left out" \
	"$(field "$log_c" run_end restart_gap)" 5
tap_cmp "the flood while nobody read: loss declared after the restart" \
	"$(field "$log_c" run_end lost)" -gt 0
verify_is "run C: sluice verify exit 3 (intact, loss and the restart gap declared)" 3 "$log_c"
tap_check "run C: verify says what went unaccounted across the restart" \
	grep -q '5 kernel records unaccounted across the restart' "$SL_TMP/verify.out"
tap_check "run C: the independent checker accepts the log" log_well_formed "$log_c"
tap_check "run C: cleaned up" leftovers_check "$id_c" "$(log_run_start_field "$log_c" cgroup_id)"

# ---------------------------------------------------------------------------------------------
# Run E: what the log says against what the kernel keeps. Killed before its first checkpoint,
# the run's first lines are signed by no one: an edit that rebuilds the hash chain verifies as
# an unsealed log, and resume must still refuse it. A log cut back below a checkpoint its
# sidecar holds is refused too. And the run's resolver port is one the workload cannot bind.

# rechain LOG PYEXPR: apply PYEXPR to the parsed line o of every line, rewrite prev and seq
rechain() {
	python3 - "$1" "$2" <<'PY'
import hashlib, json, sys
path, expr = sys.argv[1], sys.argv[2]
out, prev = [], "0" * 64
for i, line in enumerate(open(path, "rb").read().split(b"\n")[:-1]):
    o = json.loads(line)
    if i:
        o["prev"] = prev
        exec(expr)
    b = json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode()
    out.append(b)
    prev = hashlib.sha256(b"\x00" + b).hexdigest()  # its leaf hash (format 2)
open(path, "wb").write(b"".join(l + b"\n" for l in out))
PY
}

log_e=$SL_TMP/e.jsonl
mkdir -m 1777 "$SL_TMP/e" # where the workload, as nobody, says where it is
# the host side as on kernels without tcx (before 6.6): a clsact filter, which has no link to pin
SLUICE_SELFTEST_TC_CLSACT=1 \
	sluice_start "$SL_TMP/b-copy.yaml" "$log_e" --user nobody --netns "/run/netns/$SL_NS_RUN" -- \
	sh -c "$SL_PROBE tcp 198.51.100.20 80; : >$SL_TMP/e/ready; while [ ! -e $SL_TMP/e/go ]; do sleep 0.05; done"
id_e=$SL_RUN_ID
wait_until 60000 seen "$SL_TMP/e/ready" || bail_out "run E did not start"
wait_until 3000 log_has "$log_e" type=decision decision=deny || bail_out "run E: no denial logged"
port_e=$(in_run ss -H -uln src 127.0.0.1 | awk '{ sub(/.*:/, "", $4); print $4; exit }')
tap_cmp "the run's resolver listens on a privileged port" "${port_e:-65535}" -lt 1024
kill_writer
tap_is "clsact: the dead writer's host-side filter is still in place" "$(host_filters)" \
	"filters 1 qdiscs 1"
bind_e=$(in_run setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.bind(("127.0.0.1", int(sys.argv[1]))); print("bound")
except OSError as e:
    print("refused", e.errno)' "${port_e:-0}")
tap_is "with the writer dead, the workload's user cannot take the resolver's port" "$bind_e" \
	"refused 13"
cp "$log_e" "$SL_TMP/e.good"
tap_is "the first lines are signed by no one yet" "$(log_count "$log_e" type=checkpoint)" 0
rechain "$log_e" 'o["mode"] = "report" if o.get("type") == "run_start" else o.get("mode")
if o.get("type") != "run_start": o.pop("mode")'
"$SLUICE" verify "$log_e" >/dev/null 2>&1
tap_is "... an edit to run_start (report mode) with the chain rebuilt verifies: unsealed" "$?" 2
resume_refused "... and resume refuses it: run_start is not what the programs were loaded with" \
	"$id_e" "$log_e" "run_start's mode is not what the run's programs were loaded with"
cp "$SL_TMP/e.good" "$log_e"
rechain "$log_e" 'o["upstream"] = "192.0.2.53:53" if o.get("type") == "run_start" else o.get("upstream")
if o.get("type") != "run_start": o.pop("upstream")'
resume_refused "... the same for another upstream" "$id_e" "$log_e" "run_start's upstream"
cp "$SL_TMP/e.good" "$log_e"
rechain "$log_e" 'o["policy"] = "'"$SLUICE_KEY"'" if o.get("type") == "run_start" else o.get("policy")
if o.get("type") != "run_start": o.pop("policy")'
resume_refused "a run_start naming the host key as the policy is refused" "$id_e" "$log_e" \
	"is not the one run"
tap_check "... without a byte of the key in what it says" \
	test "$(grep -c 'PRIVATE+KEY' "$SL_TMP/refused.err")" -eq 0
cp "$SL_TMP/e.good" "$log_e"
# a checkpoint exported to the sidecar, then the log cut back below it
resume_start "$id_e" "$log_e"
resume_started "$id_e" "$log_e" "run E"
sl_kill_wait "$SL_RESUME_PID"
cp "$log_e" "$SL_TMP/e.resumed"
head -n "$(grep -c . "$SL_TMP/e.good")" "$SL_TMP/e.resumed" >"$log_e"
resume_refused "a log cut back below a checkpoint its sidecar holds is refused" "$id_e" \
	"$log_e" "the log was cut back"
cp "$SL_TMP/e.resumed" "$log_e"
resume_start "$id_e" "$log_e"
resume_started "$id_e" "$log_e" "run E, resumed again" 2
touch "$SL_TMP/e/go"
resume_wait 15 || sl_stop_pid "$SL_RESUME_PID"
tap_is "a resumed writer killed in turn is resumed again: two restarts, exit 0" \
	"${SL_RESUME_RC:-}" 0
tap_is "clsact: the second resume found the filter and removed it, and the qdisc it came with" \
	"$(host_filters)" "filters 0 qdiscs 0"
verify_is "run E: sluice verify exit 0" 0 "$log_e"
# the key in force at the end is the second restart's, and the summary says it is
last_key=$(grep '"type":"writer_restart"' "$log_e" | tail -n 1 | python3 -c '
import json, sys
print(json.loads(sys.stdin.read())["key"].split("+")[1])')
tap_check "run E: verify's summary names the second restart's key as the one in force" \
	grep -q "key now:     run key $last_key," "$SL_TMP/verify.out"
tap_check "run E: the independent checker accepts the log" log_well_formed "$log_e"
tap_check "run E: cleaned up" leftovers_check "$id_e" "$(log_run_start_field "$log_e" cgroup_id)"

# ---------------------------------------------------------------------------------------------
# Run F: a record whose line is on disk but whose place in the ring buffer was not yet passed.
# Every line is checkpointed (so synced) as it is written, and each finished flow raises an
# alert into a FIFO no one reads: once it is full the writer blocks inside a flow's handler,
# after that flow's line reached the disk, before libbpf moves past its record. Killed there,
# the resumed writer reads that record again and must not write it twice.

cat >"$SL_TMP/f.yaml" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
alert_on: ["allow where bytes >= 0"]
EOF2
log_f=$SL_TMP/f.jsonl
mkfifo "$SL_TMP/f.alerts"
exec 7<>"$SL_TMP/f.alerts" # a reader that never reads: writes block once the pipe is full
flows=$(cat <<'PY'
import socket
for _ in range(600):
    try:
        socket.create_connection(("198.51.100.10", 80), timeout=3).close()
    except OSError:
        pass
PY
)
sluice_start "$SL_TMP/f.yaml" "$log_f" --checkpoint-lines 1 --alerts "$SL_TMP/f.alerts" -- \
	"${RUN_EXEC[@]}" sh -c "python3 -c '$flows'; sleep 60"
id_f=$SL_RUN_ID
# shellcheck disable=SC2317 # called through wait_until
log_still() {
	local a b
	a=$(stat -c %s "$log_f" 2>/dev/null)
	sleep 0.5
	b=$(stat -c %s "$log_f" 2>/dev/null)
	[[ -n $a && $a == "$b" && $(log_count "$log_f" type=flow) -gt 0 ]]
}
wait_until 20000 log_still
kill_writer
exec 7>&-
flows_dead=$(log_count "$log_f" type=flow)
tap_cmp "the writer blocked inside a flow's alert, its flow lines synced" "$flows_dead" -gt 0
resume_start "$id_f" "$log_f"
resume_started "$id_f" "$log_f" "run F"
kill -TERM "$SL_RESUME_PID"
resume_wait 15 || sl_stop_pid "$SL_RESUME_PID"
tap_is "no flow has two lines (each socket cookie once)" "$(python3 - "$log_f" <<'PY'
import collections, json, sys
c = collections.Counter(json.loads(l)["sock_cookie"] for l in open(sys.argv[1], "rb")
                        if b'"type":"flow"' in l)
print(sum(1 for n in c.values() if n > 1))
PY
)" 0
verify_is "run F: sluice verify accepts it (no kseq twice)" 0 "$log_f"
tap_check "run F: the independent checker accepts the log" log_well_formed "$log_f"
tap_check "run F: cleaned up" leftovers_check "$id_f" "$(log_run_start_field "$log_f" cgroup_id)"

# ---------------------------------------------------------------------------------------------
# Run G: a line forged into the dead writer's unsigned tail for the record that comes next (its
# kseq, another socket) does not hide that record: it is written, and verify finds the kseq twice.

log_g=$SL_TMP/g.jsonl
sluice_start "$SL_TMP/b-copy.yaml" "$log_g" -- "${RUN_EXEC[@]}" sh -c \
	"$SL_PROBE tcp 198.51.100.20 80; : >$SL_TMP/g-ready
	 while [ ! -e $SL_TMP/g-dead ]; do sleep 0.05; done
	 $SL_PROBE tcp 198.51.100.20 80; : >$SL_TMP/g-denied
	 while [ ! -e $SL_TMP/g-go ]; do sleep 0.05; done"
id_g=$SL_RUN_ID
wait_until 60000 seen "$SL_TMP/g-ready" || bail_out "run G did not start"
wait_until 3000 log_has "$log_g" type=decision decision=deny || bail_out "run G: no denial logged"
kill_writer
touch "$SL_TMP/g-dead"
wait_until 5000 seen "$SL_TMP/g-denied" || bail_out "run G: no denial while the writer was dead"
# the forgery: the last decision line again, as the next kseq and another socket
python3 - "$log_g" <<'PY'
import hashlib, json, sys
path = sys.argv[1]
lines = [json.loads(l) for l in open(path, "rb")]
last = max(i for i, o in enumerate(lines) if o["type"] == "decision")
fake = dict(lines[last])
fake["kseq"] += 1
fake["sock_cookie"] += 1000
lines.append(fake)
prev = "0" * 64
with open(path, "wb") as f:
    for i, o in enumerate(lines):
        o["seq"], o["prev"] = i, prev
        b = json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode()
        f.write(b + b"\n")
        prev = hashlib.sha256(b"\x00" + b).hexdigest()
PY
resume_start "$id_g" "$log_g"
resume_started "$id_g" "$log_g" "run G"
touch "$SL_TMP/g-go"
resume_wait 15 || sl_stop_pid "$SL_RESUME_PID"
"$SLUICE" verify "$log_g" >"$SL_TMP/verify.out" 2>&1
tap_is "a forged line for the next record: the record is written anyway, verify exit 1" "$?" 1
tap_check "... naming the kseq found twice" grep -qE 'kseq [0-9]+ (appears twice|repeats)' "$SL_TMP/verify.out"
tap_check "run G: cleaned up" leftovers_check "$id_g" "$(log_run_start_field "$log_g" cgroup_id)"

# ---------------------------------------------------------------------------------------------
# Run D: the run's cgroup replaced while no writer lived, then removed

log_d=$SL_TMP/d.jsonl
sluice_start "$SL_TMP/b-copy.yaml" "$log_d" -- "${RUN_EXEC[@]}" sh -c \
	"$SL_PROBE tcp 198.51.100.20 80; while [ ! -e $SL_TMP/d-dead ]; do sleep 0.05; done"
id_d=$SL_RUN_ID
wait_until 5000 log_has "$log_d" type=decision decision=deny || bail_out "run D: no denial logged"
kill_writer
touch "$SL_TMP/d-dead"
cg_d=$(cg2_mount)/sluice/$id_d
wait_until 5000 eval '[[ -z $(cat "$cg_d/cgroup.procs" 2>/dev/null) ]]'
rmdir "$cg_d" && mkdir "$cg_d"
resume_refused "a cgroup of the run's name but not the run's (another id) is refused" "$id_d" \
	"$log_d" "is not the run's"
rmdir "$cg_d"
resume_start "$id_d" "$log_d"
resume_wait 10 || sl_stop_pid "$SL_RESUME_PID"
tap_diag_file "$SL_TMP/resume-$id_d.err"
tap_is "the run's cgroup already removed: resume writes the run's end at once (exit 0)" \
	"${SL_RESUME_RC:-}" 0
tap_is "... run_end says so" "$(field "$log_d" run_end why)" "cgroup removed"
verify_is "run D: sluice verify exit 0" 0 "$log_d"
tap_check "run D: the pins and links are gone" leftovers_check "$id_d" \
	"$(log_run_start_field "$log_d" cgroup_id)"

# ---------------------------------------------------------------------------------------------
# Run H: the default confinement (no --user, no --allow-root): the workload's namespace init is
# a fork of sluice that never execs; it must not keep sluice's descriptors (the pin directory's
# lock made a killed writer's run look alive to sluice resume until the workload ended)

log_h=$SL_TMP/h.jsonl
sluice_start "$SL_TMP/b-copy.yaml" "$log_h" -- sh -c \
	"while [ ! -e $SL_TMP/h-dead ]; do sleep 0.05; done"
id_h=$SL_RUN_ID
wait_until 5000 log_has "$log_h" type=run_start || bail_out "run H: no run_start"
kill_writer
resume_start "$id_h" "$log_h"
wait_until 10000 log_has "$log_h" type=writer_restart
tap_is "run H (default confinement): a killed writer's run is resumed while its workload runs" \
	"$(grep -c '"type":"writer_restart"' "$log_h")" 1
grep -q '"type":"writer_restart"' "$log_h" || tap_diag_file "$SL_TMP/resume-$id_h.err"
touch "$SL_TMP/h-dead"
resume_wait 20 || sl_stop_pid "$SL_RESUME_PID"
verify_is "run H: sluice verify exit 0" 0 "$log_h"

# ---------------------------------------------------------------------------------------------
# Run K: a writer killed while it drains a flood, its checkpoints' syncs in flight on the sync
# thread. The log checks as an unsealed prefix, and no note in the sidecar covers more than the
# log holds; the sidecar is cut back three whole notes further (as many more syncs in flight
# at the kill), and the resume adds them all back from the log's checkpoint lines, in order, so
# that after the run it holds exactly the log's checkpoints and the seal's note.

cat >"$SL_TMP/k.yaml" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [9999]
    protocols: [udp]
EOF2
K_FLOOD=40000
log_k=$SL_TMP/k.jsonl
sluice_start "$SL_TMP/k.yaml" "$log_k" --ringbuf-kib 16384 -- "${RUN_EXEC[@]}" sh -c \
	"while [ ! -e $SL_TMP/k-go ]; do sleep 0.05; done
	 $SL_TOOLS/sl_bench udpflood 198.51.100.10 9999 $K_FLOOD >$SL_TMP/k-flood.out
	 : >$SL_TMP/k-flooded
	 while [ ! -e $SL_TMP/k-dead ]; do sleep 0.05; done"
id_k=$SL_RUN_ID
wait_until 5000 log_has "$log_k" type=run_start || bail_out "run K: no run_start"
# the flood waits in the ring buffer for a stopped writer, which is killed while it drains it
kill -STOP "$SL_RUN_PID"
: >"$SL_TMP/k-go"
wait_until 60000 seen "$SL_TMP/k-flooded" || tap_diag "run K: the flood did not end"
# (by a watcher that lets the writer go on and kills it once 2 MB of lines, some 5,000, are on
# file: mid-drain however fast the writer is; in one group with the wait, whose stderr takes
# bash's notice of the kill, printed as soon as the writer is reaped)
{
	python3 -c 'import os, signal, sys, time
log, pid = sys.argv[1], int(sys.argv[2])
os.kill(pid, signal.SIGCONT)
end = time.monotonic() + 30
while os.stat(log).st_size < 2000000 and time.monotonic() < end:
    pass
os.kill(pid, signal.SIGKILL)' "$log_k" "$SL_RUN_PID"
	wait "$SL_RUN_PID"
} 2>/dev/null
k_lines=$(wc -l <"$log_k")
tap_diag "run K: killed with $k_lines lines in the log, $K_FLOOD records sent"
verify_is "run K: the killed writer's log checks as unsealed, against its sidecar" 2 "$log_k" \
	--checkpoints "$log_k.checkpoints"
# sk_sizes: the sizes of the sidecar's notes; cp_seqs: the log's checkpoint lines' seqs
sk_sizes() {
	python3 -c 'import sys; t = open(sys.argv[1]).read().split("\n\n")
print(" ".join(n.split("\n")[1] for n in t[0::2] if n))' "$log_k.checkpoints"
}
cp_seqs() {
	grep '"type":"checkpoint"' "$log_k" | sed 's/^{"seq":\([0-9]*\),.*/\1/' | paste -sd' '
}
before=$(sk_sizes)
tap_diag "run K: at the kill the sidecar held $(wc -w <<<"$before") notes of the log's $(wc -w <<<"$(cp_seqs)") checkpoints"
tap_cmp "run K: killed mid-flood, after several checkpoints" "$(wc -w <<<"$(cp_seqs)")" -ge 4
if [[ -z $before || "$(cp_seqs) " == "$before "* ]]; then
	tap_ok "run K: the sidecar holds the log's first checkpoints, none beyond them"
else
	tap_fail "run K: the sidecar holds the log's first checkpoints, none beyond them" \
		"sidecar $before; log $(cp_seqs)"
fi
# three more syncs in flight (as many as it has): their notes not yet in the sidecar
cut=$(($(wc -w <<<"$before") < 3 ? $(wc -w <<<"$before") : 3))
python3 -c 'import sys; p, cut = sys.argv[1], int(sys.argv[2])
t = open(p).read().split("\n\n")[:-1]
t = t[:len(t) - 2 * cut]
open(p, "w").write("\n\n".join(t) + "\n\n" if t else "")' "$log_k.checkpoints" "$cut"
tap_is "run K: the sidecar cut back $cut notes" "$(wc -w <<<"$(sk_sizes)")" \
	"$(($(wc -w <<<"$before") - cut))"
resume_start "$id_k" "$log_k"
resume_started "$id_k" "$log_k" "run K"
touch "$SL_TMP/k-dead"
resume_wait 30 || sl_stop_pid "$SL_RESUME_PID"
tap_diag_file "$SL_TMP/resume-$id_k.err"
seal=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["seq"] + 1)' \
	"$log_k")
tap_is "run K: after the resume the sidecar holds every checkpoint of the log, then the seal's" \
	"$(sk_sizes)" "$(cp_seqs) $seal"
# (records whose lines were still in the killed writer's buffer have none: verify says how many
# went unaccounted across the restart, exit 3, as run_end declares them)
"$SLUICE" verify "$log_k" --checkpoints "$log_k.checkpoints" >"$SL_TMP/verify.out" 2>&1
rc=$?
if [[ $rc -eq 0 || ($rc -eq 3 && $(grep -c "unaccounted across the writer restart, declared" \
	"$SL_TMP/verify.out") -eq 1) ]]; then
	tap_ok "run K: sluice verify accepts the log against the mended sidecar (exit $rc)"
else
	tap_fail "run K: sluice verify accepts the log against the mended sidecar" "exit $rc"
	tap_diag_file "$SL_TMP/verify.out"
fi
k_allowed=$(log_count "$log_k" type=decision decision=allow)
k_missing=$(field "$log_k" loss_ranges missing | grep . || echo 0)
tap_is "run K: every record of the flood has its line, or is among loss_ranges' missing" \
	"$((k_allowed + k_missing))" "$K_FLOOD" ||
	tap_diag "allow lines $k_allowed, missing $k_missing; the flood: $(cat "$SL_TMP/k-flood.out" \
		2>&1); its log's last loss_ranges, run_end and writer_restart lines: $(grep -E \
		'"type":"(loss_ranges|run_end|writer_restart)"' "$log_k" | cut -c1-400)"

# ---------------------------------------------------------------------------------------------
# Run S: an address two names share, across a resume. The resumed writer rebuilds which names
# each address was answered for from the run's pinned pairs (sl_sni_ok): a flow after the
# restart to the shared address lists both names, as one before it did; and the host total of
# a rule whose shared flow only the dead writer saw still says "shared" (restored from its flow
# line), though its flows after the restart went to an address of one name.
cat >"$SL_TMP/s.yaml" <<'EOF'
default: deny
rules:
  - name: s
    hosts: ["a.shared.example", "b.shared.example"]
    ports: [80]
    protocols: [tcp]
  - name: s2
    hosts: ["a.shared.example", "b.shared.example"]
    ports: [8080]
    protocols: [tcp]
EOF
dns_upstream_start s --address=/a.shared.example/198.51.100.10 \
	--address=/a.shared.example/198.51.100.20 --address=/b.shared.example/198.51.100.10 ||
	bail_out "cannot start dnsmasq"
workload_s=$(cat <<'PY'
import os, socket, sys, time
tmp = sys.argv[1]
def wait_for(f):
    while not os.path.exists(os.path.join(tmp, f)):
        time.sleep(0.05)
def flow(addr, port, n):
    s = socket.create_connection((addr, port), timeout=3)
    s.sendall(b"x" * n)
    s.close()
for name in ("a.shared.example", "b.shared.example"):
    socket.getaddrinfo(name, 80, socket.AF_INET, socket.SOCK_STREAM)
flow("198.51.100.10", 80, 40)
open(os.path.join(tmp, "s-ready"), "w").close()
wait_for("s-go")
flow("198.51.100.20", 80, 60)
flow("198.51.100.10", 8080, 10)
print("done", flush=True)
PY
)
log_s=$SL_TMP/s.jsonl
sluice_start "$SL_TMP/s.yaml" "$log_s" --netns "/run/netns/$SL_NS_RUN" \
	--upstream "127.0.0.1:$SL_DNS_PORT" -- "${RUN_EXEC[@]}" python3 -c "$workload_s" "$SL_TMP"
id_s=$SL_RUN_ID
if ! wait_until 60000 seen "$SL_TMP/s-ready" ||
	! wait_until 3000 log_has "$log_s" type=flow req_bytes=40; then
	sluice_diag "$log_s"
	bail_out "run S: the workload's first phase did not finish"
fi
both='hosts:raw=["a.shared.example","b.shared.example"]'
tap_is "run S: the first writer's flow to the shared address lists both names" \
	"$(log_count "$log_s" type=flow dst=198.51.100.10 port=80 host:raw=null "$both")" 1
kill_writer
resume_start "$id_s" "$log_s" --upstream "127.0.0.1:$SL_DNS_PORT"
resume_started "$id_s" "$log_s" "run S"
touch "$SL_TMP/s-go"
resume_wait 20 || sl_stop_pid "$SL_RESUME_PID"
tap_diag_file "$SL_TMP/resume-$id_s.err"
tap_is "run S: after the resume, a flow to the shared address still lists both names" \
	"$(log_count "$log_s" type=flow dst=198.51.100.10 port=8080 host:raw=null "$both")" 1 ||
	sluice_diag "$log_s"
tap_is "run S: ... and one to the address of one name names it" \
	"$(log_count "$log_s" type=flow dst=198.51.100.20 port=80 host=a.shared.example)" 1
tap_is "run S: host_total keeps \"shared\" from the dead writer's flow line" \
	"$(log_count "$log_s" type=host_total host=a.shared.example rule=s flows=2 req_bytes=100 \
		shared=true)" 1
verify_is "run S: sluice verify exit 0" 0 "$log_s"
tap_check "run S: cleaned up" leftovers_check "$id_s" "$(log_run_start_field "$log_s" cgroup_id)"
dns_upstream_stop

# ---------------------------------------------------------------------------------------------
# Run T: an address two names of different caps share, learned by the resumed writer. Its
# loader only opened the run's programs, so the caps it orders an address's rules by
# (strictest first: the programs take the first rule that allows a flow) must come from the
# run's own maps: a flow no name tells apart goes under the capped name's rule, though the
# uncapped name was answered first.
cat >"$SL_TMP/t.yaml" <<'EOF'
default: deny
rules:
  - name: t-open
    hosts: ["open.shared.example"]
    ports: [80]
    protocols: [tcp]
  - name: t-capped
    hosts: ["capped.shared.example"]
    ports: [80]
    protocols: [tcp]
    max_request_bytes: 1024
EOF
dns_upstream_start t --address=/open.shared.example/198.51.100.10 \
	--address=/capped.shared.example/198.51.100.10 || bail_out "cannot start dnsmasq"
workload_t=$(cat <<'PY'
import os, socket, sys, time
tmp = sys.argv[1]
open(os.path.join(tmp, "t-ready"), "w").close()
while not os.path.exists(os.path.join(tmp, "t-go")):
    time.sleep(0.05)
for name in ("open.shared.example", "capped.shared.example"):
    socket.getaddrinfo(name, 80, socket.AF_INET, socket.SOCK_STREAM)
s = socket.create_connection(("198.51.100.10", 80), timeout=3)
s.sendall(b"x" * 10)
s.close()
print("done", flush=True)
PY
)
log_t=$SL_TMP/t.jsonl
sluice_start "$SL_TMP/t.yaml" "$log_t" --netns "/run/netns/$SL_NS_RUN" \
	--upstream "127.0.0.1:$SL_DNS_PORT" -- "${RUN_EXEC[@]}" python3 -c "$workload_t" "$SL_TMP"
id_t=$SL_RUN_ID
wait_until 60000 seen "$SL_TMP/t-ready" || bail_out "run T: the workload did not start"
kill_writer
resume_start "$id_t" "$log_t" --upstream "127.0.0.1:$SL_DNS_PORT"
resume_started "$id_t" "$log_t" "run T"
touch "$SL_TMP/t-go"
resume_wait 20 || sl_stop_pid "$SL_RESUME_PID"
tap_is "run T: after the resume, a plain flow to the shared address goes under the capped rule" \
	"$(log_count "$log_t" type=decision decision=allow dst=198.51.100.10 port=80 rule=t-capped)" \
	1 || { sluice_diag "$log_t"; tap_diag_file "$SL_TMP/resume-$id_t.err"; }
verify_is "run T: sluice verify exit 0" 0 "$log_t"
tap_check "run T: cleaned up" leftovers_check "$id_t" "$(log_run_start_field "$log_t" cgroup_id)"
dns_upstream_stop

tap_done
