#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sluice verify on real logs: an intact run verifies (exit 0), with its checkpoints exported
# through --checkpoint-fd too; the tamper corpus (edit a byte, delete, swap or insert a line,
# non-canonical whitespace, a replaced checkpoint signature, the tail cut, the log cut below an
# exported checkpoint, another run's log, another host's key) is each caught with the right exit
# status and first bad line; a flood past the ring buffer (P18) is declared and signed loss (exit
# 3), its loss_ranges line listing exactly the kseqs the log lacks; a SIGKILLed sluice leaves an
# unsealed tail (exit 2) of the right length; a rotated log verifies across its .gz segments and
# fails when one is deleted. Also: --run-id/--origin refuse another run's whole log; the summary
# names the run key's hash and start time; the seal needs the exported note that covers it (a
# forged last line is caught through the copies); host keys through a symlink, CRLF ones refused
# saying so; a FIFO as key, log or checkpoints file is refused at once, not waited on. And a corpus
# of crafted logs (test_verify --corpus) that sluice verify and sl_logcheck.py must judge alike.
#
# The expected line of each tamper case is computed from the log by the mutation itself
# (tamper() below), never hard-coded: the run's exact lines vary.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

cat >"$SL_TMP/policy.yaml" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF
policy=$SL_TMP/policy.yaml

# connects N times to ADDR:PORT, printing nothing; denied ones fail with EPERM at once
connects=$(cat <<'PY'
import socket, sys
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for _ in range(n):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((addr, port))
    except OSError:
        pass
    s.close()
PY
)

# verify_json LOG [ARGS…]: runs sluice verify --json; sets V_RC and V_JSON.
verify_json() {
	local log=$1
	shift
	V_JSON=$("$SLUICE" verify "$log" --json "$@" 2>"$SL_TMP/verify.err")
	V_RC=$?
}

# vfield KEY: a field of V_JSON (first_error.line as first_error.line); "" if absent or null.
vfield() {
	python3 -c '
import json, sys
o = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    o = o.get(k) if isinstance(o, dict) else None
print("" if o is None else o)' "$V_JSON" "$1" 2>/dev/null
}

# tamper LOG OUT MUTATION: writes the mutated log to OUT, prints the expected first bad line
# (or, for "tail", the expected number of unsealed lines).
tamper() {
	python3 - "$@" <<'PY'
import sys
src, dst, what = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(src, "rb").read().split(b"\n")
assert lines[-1] == b"", "log does not end with a newline"
lines = lines[:-1]
n = len(lines)

def is_type(l, t):
    return b'"type":"' + t + b'"' in l

def is_cp(l):
    return is_type(l, b"checkpoint")

# a record line (not a checkpoint) with two more lines after it
rec = next(i for i in range(2, n - 2) if is_type(lines[i], b"decision"))
out, want = list(lines), None
if what == "edit":
    l = lines[rec]
    k = l.index(b'"comm":"') + len(b'"comm":"')
    out[rec] = l[:k] + (b"X" if l[k:k + 1] != b"X" else b"Y") + l[k + 1:]
    want = rec + 2                   # the next line's prev no longer matches
elif what == "delete":
    del out[rec]
    want = rec + 1                   # the line now there has the wrong seq
elif what == "swap":
    out[rec], out[rec + 1] = out[rec + 1], out[rec]
    want = rec + 1
elif what == "insert":
    out.insert(rec + 1, lines[rec])
    want = rec + 2
elif what == "space":
    out[rec] = lines[rec].replace(b",", b", ", 1)
    want = rec + 1
elif what == "sig":
    cp = next(i for i in range(n - 1) if is_cp(lines[i]))
    l = lines[cp]
    k = l.index("\u2014 ".encode(), l.index(b'"note":"'))
    k = l.index(b" ", k + 4) + 1 + 20  # inside the signature, past the key hash
    out[cp] = l[:k] + (b"A" if l[k:k + 1] != b"A" else b"B") + l[k + 1:]
    want = cp + 1
elif what == "tail":
    # after a checkpoint followed by two records, cut: 2 unsigned lines
    cp = next(i for i in range(n - 3) if is_cp(lines[i]) and not is_cp(lines[i + 1])
              and not is_cp(lines[i + 2]) and not is_type(lines[i + 2], b"run_end"))
    out = lines[:cp + 3]
    want = 2
elif what == "below":
    out = lines[:n - 3]
    want = n - 2                     # the first line that is missing
else:
    sys.exit("unknown mutation " + what)
open(dst, "wb").write(b"".join(l + b"\n" for l in out))
print(want)
PY
}

# case_verify NAME STATUS LINE LOG [ARGS…]: verify exits STATUS and names LINE first ("" = none)
case_verify() {
	local name=$1 status=$2 line=$3 log=$4 got
	shift 4
	verify_json "$log" "$@"
	got=$(vfield first_error.line)
	if [[ $V_RC -eq $status && $got == "$line" ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected exit $status, first bad line \"$line\"; got exit $V_RC, line \"$got\"
$V_JSON
$(cat "$SL_TMP/verify.err")"
	fi
}

# ---------------------------------------------------------------------------------------------
# Both verifiers on one corpus: logs the unit test's writer makes (test_verify --corpus) for what
# an independent verifier written from the documentation found unsaid: the line limit (8191 bytes, 8192
# with the newline), a rotate checkpoint inside its file (the rename failed: its writer's last),
# what may stand between run_end and the seal (checkpoints of reason lines, time, heartbeat or
# rotate), run_end.lost = the loss records' counts, and the log's notes carrying the one
# signature their writer made. sluice verify must give each log's exit status and first bad
# line, and sl_logcheck.py must accept the same logs and refuse the others at the same line. (The
# names give the unit test's line numbers; the corpus has one line more, run_start, after line 1.)

corpus=$SL_TMP/corpus
mkdir -p "$corpus"
if "$SL_TOOLS/test_verify" --corpus "$corpus" 2>"$SL_TMP/corpus.err"; then
	while IFS=$'\t' read -r file status line name; do
		[[ $line == 0 ]] && line=""
		case_verify "corpus, sluice verify: $name" "$status" "$line" "$file" \
			--key "$corpus/host.pub"
		out=$(python3 "$SL_LIB_DIR/tools/sl_logcheck.py" "$file" --pub "$corpus/host.pub" 2>&1)
		rc=$?
		if [[ $status == 1 && $rc == 1 && $out == "$file:$line (seq $((line - 1))):"* ]] ||
			[[ $status != 1 && $rc == 0 ]]; then
			tap_ok "corpus, sl_logcheck.py: $name"
		else
			tap_fail "corpus, sl_logcheck.py: $name" \
				"expected $([[ $status == 1 ]] && echo "exit 1 at $file:$line" || echo "exit 0"), got exit $rc: $out"
		fi
	done <"$corpus/cases.tsv"
else
	tap_fail "test_verify --corpus writes the corpus" "$(cat "$SL_TMP/corpus.err")"
fi

# ---------------------------------------------------------------------------------------------
# Run A: a few denials and allows, a checkpoint every 4 lines, checkpoints exported to fd 3.

log_a=$SL_TMP/a.log
cps_a=$SL_TMP/a.exported
exec 3>"$cps_a"
# shellcheck disable=SC2016 # expanded by the inner sh
sluice_run "$policy" "$log_a" --checkpoint-lines 4 --checkpoint-fd 3 -- \
	"${RUN_EXEC[@]}" sh -c 'python3 -c "$1" 198.51.100.20 80 9 && python3 -c "$1" 198.51.100.10 80 3' \
	sh "$connects"
exec 3>&-
assert_rc "run A exits 0" 0
[[ -s $log_a ]] || bail_out "run A wrote no log"

out=$("$SLUICE" verify "$log_a" 2>&1)
rc=$?
if [[ $rc -eq 0 ]] && grep -q '^OK: intact and complete' <<<"$out"; then
	tap_ok "run A's log verifies: exit 0, summary says OK"
else
	tap_fail "run A's log verifies: exit 0, summary says OK" "got exit $rc: $out"
fi
tap_diag "$out"
case_verify "run A with the checkpoints it exported to --checkpoint-fd: exit 0" 0 "" \
	"$log_a" --checkpoints "$cps_a"
tap_cmp "the exported stream held every checkpoint, and the note covering the seal" \
	"$(vfield exported_checkpoints)" -eq "$(($(vfield checkpoints) + 1))"
tap_cmp "run A has several checkpoints" "$(vfield checkpoints)" -ge 4
case_verify "run A with the sidecar copy as exported checkpoints: exit 0" 0 "" "$log_a" \
	--checkpoints "$log_a.checkpoints"

for m in edit delete swap insert space sig; do
	t=$SL_TMP/a-$m.log
	want=$(tamper "$log_a" "$t" "$m") || {
		tap_fail "tamper $m" "could not mutate $log_a"
		continue
	}
	case_verify "tamper: $m -> exit 1 at line $want" 1 "$want" "$t"
done

t=$SL_TMP/a-tail.log
want=$(tamper "$log_a" "$t" tail)
case_verify "tail cut after a checkpoint + 2 lines -> exit 2" 2 "" "$t"
tap_is "... with 2 unsealed lines reported" "$(vfield unsealed_lines)" "$want"

t=$SL_TMP/a-below.log
want=$(tamper "$log_a" "$t" below)
case_verify "cut below an exported checkpoint -> exit 1 at line $want" 1 "$want" "$t" \
	--checkpoints "$cps_a"
case_verify "the same cut without the exported checkpoints -> exit 2 (unsealed)" 2 "" "$t"

# Another host key: the cert of run A's key is not by it.
"$SLUICE" keygen --name other-host "$SL_TMP/other.key" >/dev/null 2>&1 ||
	bail_out "sluice keygen other.key failed"
case_verify "run A verified with another host's key -> exit 1 at line 1" 1 1 "$log_a" \
	--key "$SL_TMP/other.key.pub"

# Run B, replayed in place of run A: its own log verifies, against A's exports it does not.
log_b=$SL_TMP/b.log
sluice_run "$policy" "$log_b" --checkpoint-lines 4 -- \
	"${RUN_EXEC[@]}" python3 -c "$connects" 198.51.100.20 80 9
assert_rc "run B exits 0" 0
case_verify "run B's log alone: exit 0" 0 "" "$log_b"
case_verify "run B's log with run A's exported checkpoints (replay) -> exit 1 at line 1" 1 1 \
	"$log_b" --checkpoints "$cps_a"

# Pinning the run: run B is a whole, certified log of this host, but not of the run expected.
run_a_id=$(python3 -c '
import json, sys
print(json.loads(open(sys.argv[1], "rb").readline())["run_id"])' "$log_a")
case_verify "run B's log with --run-id of run A -> exit 1 at line 1" 1 1 "$log_b" \
	--run-id "$run_a_id"
tap_check "... saying whose log it is" \
	grep -q "this is the log of run" <<<"$(vfield first_error.why)"
case_verify "run A's log with its own --run-id: exit 0" 0 "" "$log_a" --run-id "$run_a_id"
case_verify "run A's log with its own --origin: exit 0" 0 "" "$log_a" --origin "sluice/$run_a_id"
out=$("$SLUICE" verify "$log_a" 2>&1)
hash=$(python3 -c '
import hashlib, json, sys
key = json.loads(open(sys.argv[1], "rb").readline())["key"]
print(key.split("+")[1])' "$log_a")
utc_re='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z'
tap_check "the summary names the run key's hash ($hash) and when the run started (UTC)" \
	grep -Eq "run key $hash certified by host key .*started: +$utc_re" <<<"$(tr '\n' ' ' <<<"$out")"
verify_json "$log_a" --key "$SL_TMP/other.key.pub"
tap_is "JSON of a log whose certificate does not verify: origin null, certified false" \
	"$(vfield origin)/$(vfield certified)" "/False"

# The seal line is signed only by the note exported after it: copies lacking it leave it open.
python3 - "$cps_a" "$SL_TMP/a.exported-1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
parts = [n + b"\n\n" for n in data.split(b"\n\n")[:-1]]      # text, sigs, text, sigs, ...
notes = [parts[i] + parts[i + 1] for i in range(0, len(parts), 2)]
open(sys.argv[2], "wb").write(b"".join(notes[:-1]))
PY
case_verify "run A with copies lacking the note that covers the seal -> exit 2" 2 "" "$log_a" \
	--checkpoints "$SL_TMP/a.exported-1"
tap_is "... the seal is reported not covered" "$(vfield seal_uncovered)" True
# the seal dropped, a record forged in its place with the chain recomputed
python3 - "$log_a" "$SL_TMP/a-forged.log" <<'PY'
import hashlib, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
prev = hashlib.sha256(b"\x00" + lines[-2]).hexdigest()  # its leaf hash (format 2)
seq = len(lines) - 1
lines[-1] = b'{"seq":%d,"prev":"%s","ts":1,"type":"note","what":"nothing"}' % (seq, prev.encode())
open(sys.argv[2], "wb").write(b"".join(l + b"\n" for l in lines))
PY
n_a=$(wc -l <"$log_a")
case_verify "seal replaced by a forged record, with the copies -> exit 1 at line $n_a" 1 "$n_a" \
	"$SL_TMP/a-forged.log" --checkpoints "$cps_a"
case_verify "... with the copies ending at the seal's own note -> exit 1 at line $n_a" 1 \
	"$n_a" "$SL_TMP/a-forged.log" --checkpoints "$SL_TMP/a.exported-1"
case_verify "... without copies: exit 1 at line $n_a (only checkpoints may follow run_end)" 1 \
	"$n_a" "$SL_TMP/a-forged.log"

# Host keys: a symlinked .pub is fine; a CRLF one, a FIFO, a directory are refused, saying why.
ln -s "$SLUICE_PUB" "$SL_TMP/link.pub"
case_verify "--key through a symlink: exit 0" 0 "" "$log_a" --key "$SL_TMP/link.pub"
printf '%s\r\n' "$(cat "$SLUICE_PUB")" >"$SL_TMP/crlf.pub"
out=$(timeout 10 "$SLUICE" verify "$log_a" --key "$SL_TMP/crlf.pub" 2>&1)
rc=$?
if [[ $rc -eq 4 ]] && grep -q "CRLF" <<<"$out"; then
	tap_ok "a CRLF host key -> exit 4, saying CRLF"
else
	tap_fail "a CRLF host key -> exit 4, saying CRLF" "got exit $rc: $out"
fi
mkfifo "$SL_TMP/fifo.pub" "$SL_TMP/fifo.log" "$SL_TMP/fifo.cps"
for what in key log cps; do
	case $what in
	key) args=("$log_a" --key "$SL_TMP/fifo.pub") ;;
	log) args=("$SL_TMP/fifo.log") ;;
	cps) args=("$log_a" --checkpoints "$SL_TMP/fifo.cps") ;;
	esac
	out=$(timeout 10 "$SLUICE" verify "${args[@]}" 2>&1)
	rc=$?
	if [[ $rc -eq 4 ]] && grep -q "a FIFO" <<<"$out"; then
		tap_ok "a FIFO as the $what -> exit 4 at once, saying it is a FIFO"
	else
		tap_fail "a FIFO as the $what -> exit 4 at once, saying it is a FIFO" \
			"got exit $rc (124: hung): $out"
	fi
done

# Usage and unreadable input: exit 4.
verify_json "$SL_TMP/nonexistent.log"
tap_is "a log that does not exist -> exit 4" "$V_RC" 4
"$SLUICE" verify >/dev/null 2>&1
tap_is "no LOG -> exit 4" "$?" 4
SLUICE_PUB='' "$SLUICE" verify "$log_a" --key "$SL_TMP/nonexistent.pub" >/dev/null 2>&1
tap_is "an unreadable host key -> exit 4" "$?" 4

# ---------------------------------------------------------------------------------------------
# P18: a flood past a one-page ring buffer; the loss is declared, checkpointed, and verifies as 3.

FLOOD=2000
log_loss=$SL_TMP/loss.log
flood=$(cat <<'PY'
import socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(n):
    try:
        s.sendto(b"x", ("198.51.100.20", 9999))
    except PermissionError:
        pass
PY
)
# shellcheck disable=SC2016 # expanded by the inner sh
sluice_run "$policy" "$log_loss" --ringbuf-kib 4 -- \
	"${RUN_EXEC[@]}" sh -c 'kill -STOP $PPID; python3 -c "$1" "$2"; rc=$?; kill -CONT $PPID; exit $rc' \
	sh "$flood" "$FLOOD"
assert_rc "P18 flood workload exits 0" 0
case_verify "P18: a log with declared loss -> exit 3" 3 "" "$log_loss"
declared=$(vfield declared_loss)
tap_cmp "P18: records were lost and declared" "$declared" -gt 0
tap_is "P18: missing kernel sequence numbers = declared loss" "$(vfield missing_kseq)" "$declared"
tap_cmp "P18: verify compared the log's loss_ranges line with the kseqs it lacks" \
	"$(vfield loss_ranges_line)" -gt 1
if tap_check "P18: loss_ranges lists exactly the kernel sequence numbers absent from the log" \
	loss_ranges_of "$log_loss"; then
	read -r missing _ _ _ <<<"$(loss_ranges_of "$log_loss")"
	tap_is "P18: ... and counts them all (= declared loss)" "$missing" "$declared"
fi
loss_cp=$(python3 - "$log_loss" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1], "rb")]
print(sum(1 for i, r in enumerate(recs[:-1]) if r["type"] == "loss" and
          recs[i + 1]["type"] == "checkpoint" and recs[i + 1]["reason"] == "loss"))
PY
)
tap_cmp "P18: each loss record is followed by a loss checkpoint" "$loss_cp" -gt 0

# ---------------------------------------------------------------------------------------------
# A SIGKILLed sluice, killed just after three denials reached the log and before the next
# checkpoint (every 5 s): unsealed, with those lines counted.

log_k=$SL_TMP/killed.log
# shellcheck disable=SC2016 # expanded by the inner sh
sluice_start "$policy" "$log_k" --checkpoint-secs 5 -- \
	"${RUN_EXEC[@]}" sh -c 'sleep 1; python3 -c "$1" 198.51.100.20 80 3; sleep 30' sh "$connects"
# shellcheck disable=SC2317 # called through wait_until
three_denials() { [[ $(grep -c '"type":"decision"' "$log_k" 2>/dev/null) -ge 3 ]]; }
if wait_until 4000 three_denials; then
	sl_kill_wait "$SL_RUN_PID"
	want=$(python3 - "$log_k" <<'PY'
import sys
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
last = max([i for i, l in enumerate(lines) if b'"type":"checkpoint"' in l], default=-1)
print(len(lines) - 1 - last)
PY
)
	case_verify "SIGKILLed sluice -> exit 2 (unsealed)" 2 "" "$log_k"
	tap_cmp "... the three denials are in the unsigned tail" "$want" -ge 3
	tap_is "... the unsealed lines reported are those after the last checkpoint ($want)" \
		"$(vfield unsealed_lines)" "$want"
	tap_is "... and the log is not sealed" "$(vfield sealed)" False
else
	tap_fail "SIGKILLed sluice -> exit 2 (unsealed)" "three denials not in the log within 4 s"
	sluice_diag "$log_k"
fi
sl_stop_pid "$SL_RUN_PID"
sl_scrub_run "$SL_RUN_ID"

# ---------------------------------------------------------------------------------------------
# Rotation: a 1 KiB limit, a tick every second: segments LOG.000001.gz, … verify as one log.

log_r=$SL_TMP/rot.log
# shellcheck disable=SC2016 # expanded by the inner sh
sluice_run "$policy" "$log_r" --log-rotate-kib 1 --checkpoint-secs 1 -- \
	"${RUN_EXEC[@]}" sh -c 'for i in 1 2 3 4; do python3 -c "$1" 198.51.100.20 80 4; sleep 1.2; done' \
	sh "$connects"
assert_rc "rotating run exits 0" 0
nseg=$(find "$SL_TMP" -maxdepth 1 -name 'rot.log.*.gz' | wc -l)
tap_cmp "the log rotated into at least 2 segments" "$nseg" -ge 2
case_verify "a rotated log verifies across its segments: exit 0" 0 "" "$log_r"
tap_is "... all files read" "$(vfield segments)" "$((nseg + 1))"
if [[ $nseg -ge 2 ]]; then
	first2=$(gzip -dc "$log_r.000001.gz" | wc -l)
	mv "$log_r.000002.gz" "$SL_TMP/seg2.gz"
	case_verify "middle segment deleted -> exit 1 at the line after segment 1" 1 \
		"$((first2 + 1))" "$log_r"
	mv "$SL_TMP/seg2.gz" "$log_r.000002.gz"
fi

tap_done
