#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The log writer's evidence (sluice-log(5), "EVIDENCE"), checked by an implementation that shares no code
# with sluice (tools/sl_logcheck.py: hashlib, python3-cryptography): canonical lines byte for byte,
# the seq/prev chain, checkpoints every N lines, after T seconds and as heartbeats, each with the
# right size, root and signature by a run key the host key certified; the sidecar and the
# --checkpoint-fd copy holding exactly the log's checkpoints, then one more note covering the seal
# line; rotation into .gz segments that chain on (and, with the test-only
# SLUICE_SELFTEST_KEEP_PLAIN, the plain segments a crash before compression leaves, which sluice
# verify reads as they are, with LOG gone as unsealed, next to a corrupt .gz copy as invalid);
# no run without a host key; a killed run's unsealed tail; a full disk cutting the log at a whole
# line and saying so once (and sluice exiting 123); a sync that fails with EIO on the writer's
# sync thread, still reported, no note copied past it; a broken export pipe reported as the export's failure, not the log's;
# generated run ids of 64 random bits; verify's output never passing a log's bytes through raw.
#
# Not tested here: that a checkpoint's note is copied only after the log is fdatasynced (it
# would take a crash of the machine at the right instant), and that heartbeats tick on
# CLOCK_BOOTTIME (it would take a suspend).

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up
python3 -c 'import cryptography' 2>/dev/null ||
	skip_all "python3-cryptography not installed (make deps)"

CHECK=$SL_LIB_DIR/tools/sl_logcheck.py

policy=$SL_TMP/journal.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
EOF2

# denials N: a workload making N denied connections, one decision line each.
denials() {
	echo "for i in \$(seq $1); do $SL_PROBE tcp 198.51.100.20 80 >/dev/null; done; true"
}

# py_log LOG EXPR: evaluate EXPR over recs (the log's records, rotated segments first).
py_log() {
	python3 - "$1" "$2" <<'EOF2'
import gzip, json, os, sys
path, expr = sys.argv[1], sys.argv[2]
recs, k = [], 1
while os.path.exists(f"{path}.{k:06d}.gz"):
    recs += [json.loads(l) for l in gzip.open(f"{path}.{k:06d}.gz", "rb")]
    k += 1
recs += [json.loads(l) for l in open(path, "rb")]
cps = [r for r in recs if r["type"] == "checkpoint"]
print(eval(expr))
EOF2
}

# ---------------------------------------------------------------------------------------------
# 1. Every N lines; the signatures, roots and chain by the independent check; both copies.

log=$SL_TMP/lines.jsonl
exec 3>"$SL_TMP/lines.export"
sluice_run "$policy" "$log" --checkpoint-lines 5 --checkpoint-fd 3 -- "${RUN_EXEC[@]}" \
	sh -c "$(denials 12); if [ -e /proc/\$\$/fd/3 ]; then echo fd3-leaked; fi"
exec 3>&-
assert_rc "lines: the run exits 0" 0
tap_cmp "lines: the workload made 12 denied connections" \
	"$(log_count "$log" type=decision decision=deny)" -eq 12
tap_check "lines: canonical, chained, every checkpoint's root and signature right" \
	python3 "$CHECK" "$log" --pub "$SLUICE_PUB"
tap_cmp "lines: a checkpoint after every 5 lines (at least 3 here)" \
	"$(py_log "$log" 'sum(1 for c in cps if c["reason"] == "lines")')" -ge 3
tap_is "lines: each \"lines\" checkpoint comes 5 lines after the one before" \
	"$(py_log "$log" '[c["seq"] - p["seq"] for p, c in zip([{"seq": -1}] + cps, cps)
		if c["reason"] == "lines" and c["seq"] - p["seq"] != 6]')" "[]"
tap_is "lines: the last line is the final seal" "$(py_log "$log" 'recs[-1]["reason"]')" final
tap_check "lines: the sidecar holds exactly the log's checkpoint notes" \
	python3 "$CHECK" "$log" --copy "$log.checkpoints"
tap_check "lines: --checkpoint-fd received exactly the same notes" \
	python3 "$CHECK" "$log" --copy "$SL_TMP/lines.export"
# last_note_size FILE: the size in the last note of a sidecar/export stream.
last_note_size() {
	python3 -c 'import sys
blocks = [b for b in open(sys.argv[1]).read().split("\n\n") if b]
print(blocks[-2].split("\n")[1])' "$1"
}
for copy in "$log.checkpoints" "$SL_TMP/lines.export"; do
	tap_is "lines: ${copy##*.}: the last note covers every line, the seal too (size = lines)" \
		"$(last_note_size "$copy")" "$(wc -l <"$log")"
done
tap_check "lines: the workload did not inherit the checkpoint fd" \
	test "$(cat "$SL_OUT")" = ""
tap_check "lines: the check fails with another host key (it can fail)" \
	bash -c "cd '$SL_TMP' && '$SLUICE' keygen --name other other.key >/dev/null &&
		! python3 '$CHECK' '$log' --pub other.key.pub 2>/dev/null"
cp "$log" "$SL_TMP/tampered.jsonl"
sed -i '0,/"decision":"deny"/s//"decision":"allo"/' "$SL_TMP/tampered.jsonl"
tap_check "lines: the check fails on a log with one edited byte (it can fail)" \
	bash -c "! python3 '$CHECK' '$SL_TMP/tampered.jsonl' 2>/dev/null"
assert_no_leftovers "lines: nothing left"

# ---------------------------------------------------------------------------------------------
# 2. Time and heartbeat checkpoints: T = 1 s over a 3 s idle workload.

log=$SL_TMP/heartbeat.jsonl
sluice_run "$policy" "$log" --checkpoint-secs 1 -- sleep 3
assert_rc "heartbeat: the run exits 0" 0
tap_check "heartbeat: the log checks" log_well_formed "$log"
tap_cmp "heartbeat: a \"time\" checkpoint for the lines of the start" \
	"$(py_log "$log" 'sum(1 for c in cps if c["reason"] == "time")')" -ge 1
tap_cmp "heartbeat: \"heartbeat\" checkpoints while nothing happened" \
	"$(py_log "$log" 'sum(1 for c in cps if c["reason"] == "heartbeat")')" -ge 1
tap_is "heartbeat: log_start says T = 1" "$(py_log "$log" 'recs[0]["checkpoint_secs"]')" 1
tap_cmp "heartbeat: no gap between checkpoints (or from log_start) over 2T + 1 s, in µs" \
	"$(py_log "$log" 'max(b["ts"] - a["ts"] for a, b in zip([recs[0]] + cps, cps))')" \
	-le 3000000
tap_is "heartbeat: ts is an integer count of µs (this century)" \
	"$(py_log "$log" 'all(type(r["ts"]) is int and 10**15 < r["ts"] < 10**16 for r in recs)')" \
	True

# ---------------------------------------------------------------------------------------------
# 3. Rotation: 4 KiB segments, compressed, chaining on; verify reads them in order.

log=$SL_TMP/rotate.jsonl
sluice_run "$policy" "$log" --log-rotate-kib 4 -- "${RUN_EXEC[@]}" sh -c "$(denials 40)"
assert_rc "rotate: the run exits 0" 0
tap_check "rotate: the first segment is $log.000001.gz" test -s "$log.000001.gz"
tap_check "rotate: and the second" test -s "$log.000002.gz"
tap_check "rotate: seq, prev, roots and signatures check across the segments" \
	log_well_formed "$log"
tap_cmp "rotate: no segment over 4 KiB plus one line" \
	"$(for f in "$log".0*.gz; do gzip -dc "$f" | wc -c; done | sort -n | tail -n 1)" -le 12288
tap_cmp "rotate: all 40 decisions are in the segments and the live log" \
	"$(py_log "$log" 'sum(1 for r in recs if r["type"] == "decision")')" -eq 40
tap_is "rotate: no plain copy of a rotated segment is left" \
	"$(find "$SL_TMP" -name 'rotate.jsonl.0*' ! -name '*.gz' | wc -l)" 0
tap_is "rotate: no compression's temporary file is left" \
	"$(find "$SL_TMP" -name 'rotate.jsonl.*tmp*' | wc -l)" 0
n=$(find "$SL_TMP" -name 'rotate.jsonl.0*.gz' | wc -l)
tap_is "rotate: exactly LOG, LOG.000001.gz .. LOG.$(printf %06d "$n").gz and LOG.checkpoints" \
	"$(cd "$SL_TMP" && find . -maxdepth 1 -name 'rotate.jsonl*' | LC_ALL=C sort |
		tr '\n' ' ')" \
	"$(printf './rotate.jsonl '
		for ((i = 1; i <= n; i++)); do printf './rotate.jsonl.%06d.gz ' "$i"; done
		printf './rotate.jsonl.checkpoints ')"
tap_check "rotate: sluice verify, with the sidecar as exported checkpoints: exit 0" \
	"$SLUICE" verify "$log" --checkpoints "$log.checkpoints"

# The state a crash between a rotation and its compression leaves (test-only hook): the
# segments stay plain LOG.NNNNNN, and they are the log, whole.
log=$SL_TMP/plain.jsonl
SLUICE_SELFTEST_KEEP_PLAIN=1 sluice_run "$policy" "$log" --log-rotate-kib 4 -- \
	"${RUN_EXEC[@]}" sh -c "$(denials 40)"
assert_rc "rotate, kept plain: the run exits 0" 0
tap_check "rotate, kept plain: stderr says the test hook is on" \
	grep -q "SLUICE_SELFTEST_KEEP_PLAIN is set" "$SL_ERR"
tap_check "rotate, kept plain: LOG.000001 and LOG.000002, plain" \
	test -s "$log.000001" -a -s "$log.000002"
tap_is "rotate, kept plain: no .gz or temporary file" \
	"$(find "$SL_TMP" -name 'plain.jsonl.*' \( -name '*.gz' -o -name '*tmp*' \) | wc -l)" 0
tap_check "rotate, kept plain: the plain segments check, each ending with its rotate checkpoint" \
	log_well_formed "$log"
tap_cmp "rotate, kept plain: all 40 decisions are there" \
	"$(python3 "$CHECK" "$log" --summary >/dev/null &&
		cat "$log".0* "$log" | grep -c '"type":"decision"')" -eq 40
# sluice verify reads the same layout: plain segments, a stray temporary file ignored, LOG gone
# = unsealed (a crash between the rename and the new LOG), both forms of a segment compared.
tap_check "rotate, kept plain: sluice verify, with the sidecar as exported checkpoints: exit 0" \
	"$SLUICE" verify "$log" --checkpoints "$log.checkpoints"
printf 'not gzip\n' >"$log.000001.gz.tmp"
tap_check "rotate, kept plain: a stray LOG.000001.gz.tmp is not read: exit 0" \
	"$SLUICE" verify "$log"
rm -f "$log.000001.gz.tmp"
gzip -c "$log.000001" >"$log.000001.gz"
tap_check "rotate, kept plain: LOG.000001 with its gzip copy next to it: exit 0" \
	"$SLUICE" verify "$log"
head -c 100 "$log.000001.gz" >"$SL_TMP/cut.gz" && mv "$SL_TMP/cut.gz" "$log.000001.gz"
"$SLUICE" verify "$log" >"$SL_TMP/plain.verify" 2>&1
tap_is "rotate, kept plain: ... and with that copy cut short: exit 1 (the plain one is no excuse)" \
	"$?" 1
tap_check "rotate, kept plain: ... naming the corrupt copy" \
	grep -q "plain.jsonl.000001.gz line [0-9]*: cannot read the rest of the file" \
	"$SL_TMP/plain.verify"
rm -f "$log.000001.gz"
mv "$log" "$SL_TMP/plain.live"
"$SLUICE" verify "$log" >"$SL_TMP/plain.verify" 2>&1
tap_is "rotate, kept plain: LOG moved away, the segments left: exit 2 (unsealed), not 4" "$?" 2
tap_check "rotate, kept plain: ... saying LOG is missing" \
	grep -q "UNSEALED: intact, but .*plain.jsonl is missing" "$SL_TMP/plain.verify"
mv "$SL_TMP/plain.live" "$log"

# A compression that fails (its temporary name is taken) leaves that segment plain, says so
# once, and the next segments are compressed as usual.
log=$SL_TMP/gzfail.jsonl
: >"$log.000002.gz.tmp"
sluice_run "$policy" "$log" --log-rotate-kib 4 -- "${RUN_EXEC[@]}" sh -c "$(denials 40)"
assert_rc "rotate, compression fails: the run exits 0" 0
tap_is "rotate, compression fails: stderr says so once, for segment 2" \
	"$(grep -c "compressing $log.000002: File exists; the segment stays uncompressed" \
		"$SL_ERR")" 1
tap_check "rotate, compression fails: segment 2 plain, 1 and 3 compressed, the .tmp untouched" \
	test -s "$log.000002" -a ! -e "$log.000002.gz" -a -s "$log.000001.gz" -a \
	-s "$log.000003.gz" -a ! -s "$log.000002.gz.tmp"
tap_check "rotate, compression fails: the log checks across .gz and plain segments" \
	log_well_formed "$log"

# ---------------------------------------------------------------------------------------------
# 4. Canonical strings: invalid UTF-8, control bytes, quotes and backslashes in argv.

log=$SL_TMP/canon.jsonl
arg=$'\xff\x01\xc3\xa9\\"\t\x7f\xf0\x9f\x98\x80\xed\xa0\x80\xc0\xaf\n-'
sluice_run "$policy" "$log" -- true "$arg"
assert_rc "canonical: the run exits 0" 0
tap_check "canonical: every line re-serializes to the same bytes" log_well_formed "$log"
want='"argv":["true","\u00ff\u0001é\\\"\t\u007f😀\u00ed\u00a0\u0080\u00c0\u00af\n-"]'
tap_check "canonical: invalid bytes as \\u00xx, UTF-8 raw, \\\" \\\\ \\t \\n" \
	grep -qF -- "$want" "$log"

# ---------------------------------------------------------------------------------------------
# 5. Keys and descriptors refused before anything is created.

nokey_run() {
	local name=$1 want=$2
	shift 2
	local id=nokey-$SL_ID-$name out rc
	out=$("$@" "$SLUICE" run --policy "$policy" --run-id "$id" --log "$SL_TMP/$id.jsonl" \
		-- true 2>&1)
	rc=$?
	if [[ $rc -eq 125 ]] && grep -qE -- "$want" <<<"$out"; then
		tap_ok "keys: $name: exit 125 and /$want/"
	else
		tap_fail "keys: $name: exit 125 and /$want/" "got exit $rc: $out"
	fi
	tap_is "keys: $name: no log, no sidecar" \
		"$(find "$SL_TMP" -maxdepth 1 -name "$id.jsonl*" | wc -l)" 0
	tap_check "keys: $name: no cgroup or pins" leftovers_check "$id"
}
nokey_run missing "host key $SL_TMP/none.key: No such file.*sluice keygen" \
	env SLUICE_KEY="$SL_TMP/none.key"
printf 'not a key\n' >"$SL_TMP/garbage.key"
chmod 0600 "$SL_TMP/garbage.key"
nokey_run garbage "not a signer key" env SLUICE_KEY="$SL_TMP/garbage.key"
ln -s "$SLUICE_KEY" "$SL_TMP/link.key"
nokey_run symlink "host key $SL_TMP/link.key: " env SLUICE_KEY="$SL_TMP/link.key"
if [[ ! -e /etc/sluice/host.key ]]; then
	nokey_run default "/etc/sluice/host.key.*sluice keygen /etc/sluice/host.key" \
		env -u SLUICE_KEY
else
	tap_skip "keys: default: /etc/sluice/host.key" "this host has one"
fi
for bad in "9 closed:not an open descriptor" "1 stdout:stdio too" "x word:expected a number"; do
	fd=${bad%% *} why=${bad#*:} label=${bad%%:*}
	out=$("$SLUICE" run --policy "$policy" --checkpoint-fd "$fd" --log "$SL_TMP/fd.jsonl" \
		-- true 2>&1 9>&-)
	rc=$?
	if [[ $rc -eq 125 && $out == *"$why"* && ! -e $SL_TMP/fd.jsonl ]]; then
		tap_ok "checkpoint-fd ${label#* }: refused (125, \"$why\")"
	else
		tap_fail "checkpoint-fd ${label#* }: refused (125, \"$why\")" "got exit $rc: $out"
	fi
done

# ---------------------------------------------------------------------------------------------
# 5b. A generated run id: 64 random bits, so a log's origin is unique on its host.

log=$SL_TMP/genid.jsonl
timeout -k 5 "$SL_RUN_TIMEOUT" "$SLUICE" run --policy "$policy" --task selftest --log "$log" \
	-- true >/dev/null 2>"$SL_TMP/genid.err" </dev/null
rc=$?
id=$(log_run_start_field "$log" run_id 2>/dev/null)
[[ -n $id ]] && sl_on_exit "sl_scrub_run '$id'"
tap_is "run id: the run without --run-id exits 0" "$rc" 0
if [[ $id =~ ^run-[0-9a-f]{16}$ ]]; then
	tap_ok "run id: generated as run-<16 hex digits> ($id)"
else
	tap_fail "run id: generated as run-<16 hex digits>" "got \"$id\""
fi
tap_is "run id: the log's origin is sluice/<run id>" \
	"$(py_log "$log" 'recs[0]["origin"]')" "sluice/$id"
tap_check "run id: nothing left of the run" leftovers_check "$id"

# ---------------------------------------------------------------------------------------------
# 6. A killed sluice leaves a log whose every line checks, with an unsealed tail.

log=$SL_TMP/killed.jsonl
sluice_start "$policy" "$log" -- sleep 30
if wait_until 10000 grep -qs '"type":"run_start"' "$log"; then
	sl_kill_wait "$SL_RUN_PID"
	tap_check "killed: the lines written check, as an unsealed log" \
		python3 "$CHECK" "$log" --unsealed --pub "$SLUICE_PUB"
	tap_check "killed: and it is not sealed" bash -c "! python3 '$CHECK' '$log' 2>/dev/null"
else
	tap_fail "killed: the run started" "no run_start in $log after 10 s"
	tap_skip "killed: and it is not sealed" "the run did not start"
fi
sl_scrub_run "$SL_RUN_ID"

# ---------------------------------------------------------------------------------------------
# 7. A full disk: the log stops at a whole line, stderr says so once, the export stream too;
# enforcement goes on and sluice exits 123 (the log could not hold every record: test_logfull.sh);
# the log ends, in the room the writer kept on disk, with what it could not write and its seal.

full=$SL_TMP/full
mkdir -p "$full"
if mount -t tmpfs -o size=64k sl-journal-full "$full"; then
	sl_on_exit "umount '$full'"
	log=$full/full.jsonl
	exec 3>"$SL_TMP/full.export"
	sluice_run "$policy" "$log" --checkpoint-fd 3 -- "${RUN_EXEC[@]}" sh -c "$(denials 200)"
	exec 3>&-
	assert_rc "full disk: enforcement goes on, the run exits 123" 123
	# (a write small enough for the last page's slack may let the log go on for a while: it
	# then declares what it lost, and a later failure is said again)
	tap_is "full disk: stderr reports the log failing once (again only after it went on)" \
		"$(grep -c "writing log $log: No space left on device" "$SL_ERR")" \
		"$((1 + $(grep -c "sluice: log $log can be written again" "$SL_ERR")))"
	tap_check "full disk: what is on disk is whole lines that check, sealed in the room kept for the end" \
		python3 "$CHECK" "$log" --pub "$SLUICE_PUB"
	tap_cmp "full disk: a loss line of hook log declares what could not be written" \
		"$(log_count "$log" type=loss hook=log)" -ge 1
	tap_check "full disk: the export stream says where the log stopped" \
		grep -qE "^sluice: log write failed at seq [0-9]+: No space left on device$" \
		"$SL_TMP/full.export"
	tap_is "full disk: that seq is the number of lines on disk (or the line that went on)" \
		"$(py_log "$log" "(lambda n: n == len(recs) or (recs[n]['type'], recs[n].get('hook')) ==
			('loss', 'log'))($(sed -nE 's/^sluice: log write failed at seq ([0-9]+):.*/\1/p' \
			"$SL_TMP/full.export" | head -n 1))")" True
	assert_no_leftovers "full disk: nothing left"
else
	tap_skip "full disk" "cannot mount a tmpfs"
fi

# ---------------------------------------------------------------------------------------------
# 8. --checkpoint-fd to a pipe whose reader is gone: the export stops and says so, as the
# export's failure; the log goes on and verifies; a later failure of the log is still reported.

log=$SL_TMP/pipe.jsonl
exec 3> >(exit 0) # the reader ends at once
sleep 0.3
sluice_run "$policy" "$log" --checkpoint-fd 3 --checkpoint-lines 3 -- \
	"${RUN_EXEC[@]}" sh -c "$(denials 6)"
exec 3>&-
assert_rc "broken export: enforcement goes on, the run exits 0" 0
tap_is "broken export: stderr names the export and its error, once" \
	"$(grep -c "exporting checkpoints to descriptor 3: Broken pipe" "$SL_ERR")" 1
tap_is "broken export: stderr says nothing about writing the log" \
	"$(grep -c "writing log" "$SL_ERR")" 0
tap_check "broken export: the log and its sidecar check" log_well_formed "$log"
tap_check "broken export: sluice verify: exit 0" "$SLUICE" verify "$log"

full=$SL_TMP/full2
mkdir -p "$full"
if mount -t tmpfs -o size=64k sl-journal-full2 "$full"; then
	sl_on_exit "umount '$full'"
	log=$full/full.jsonl
	exec 3> >(exit 0)
	sleep 0.3
	sluice_run "$policy" "$log" --checkpoint-fd 3 --checkpoint-lines 3 -- \
		"${RUN_EXEC[@]}" sh -c "$(denials 200)"
	exec 3>&-
	assert_rc "broken export, then a full disk: the run exits 123" 123
	tap_is "broken export, then a full disk: the export's failure is reported once" \
		"$(grep -c "exporting checkpoints to descriptor 3: Broken pipe" "$SL_ERR")" 1
	tap_is "broken export, then a full disk: and the log's own, later, once" \
		"$(grep -c "writing log $log: No space left on device" "$SL_ERR")" \
		"$((1 + $(grep -c "sluice: log $log can be written again" "$SL_ERR")))"
	tap_check "broken export, then a full disk: the log on disk checks (unsealed)" \
		python3 "$CHECK" "$log" --unsealed --pub "$SLUICE_PUB"
else
	tap_skip "broken export, then a full disk" "cannot mount a tmpfs"
fi

# ---------------------------------------------------------------------------------------------
# 9. verify prints a log's strings (origin, reasons, why) escaped: a log whose origin holds an
# ESC sequence, a lone byte 0xff and a C1 control (U+009B, CSI) cannot drive the terminal, and
# the JSON output stays valid UTF-8.

bad=$SL_TMP/esc.jsonl
python3 - "$SL_TMP/lines.jsonl" "$bad" <<'EOF2'
import re, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
evil = b"sluice/\\u001b[2J\\u001b]0;owned\\u0007\\u00ff\xc2\x9bX"
lines[0], n = re.subn(rb'"origin":"[^"]*"', lambda m: b'"origin":"' + evil + b'"', lines[0])
assert n == 1
open(sys.argv[2], "wb").write(b"\n".join(lines))
EOF2
"$SLUICE" verify "$bad" >"$SL_TMP/esc.out" 2>&1
rc=$?
tap_is "escape: the edited log is invalid (exit 1)" "$rc" 1
tap_check "escape: the summary quotes the origin, escaped (\\x1b[2J)" \
	grep -qF '\x1b[2J' "$SL_TMP/esc.out"
tap_check "escape: the summary holds no control byte but newlines, no C1, valid UTF-8" \
	python3 -c 'import re, sys
t = open(sys.argv[1], "rb").read().decode("utf-8")
sys.exit(1 if re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", t) else 0)' "$SL_TMP/esc.out"
tap_is "escape: no \"run key certified\" line for a certificate that did not verify" \
	"$(grep -c 'certified by host key' "$SL_TMP/esc.out")" 0
tap_cmp "escape: an intact log's summary has that line" \
	"$("$SLUICE" verify "$SL_TMP/lines.jsonl" | grep -c 'certified by host key')" -eq 1
"$SLUICE" verify --json "$bad" >"$SL_TMP/esc.json" 2>&1
tap_is "escape: --json parses (strict UTF-8) and carries the origin's bytes" \
	"$(python3 -c 'import json, sys
o = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
print("\x1b[2J" in o["first_error"]["why"] and "\u00ff" in o["first_error"]["why"])' \
		"$SL_TMP/esc.json")" True

# ---------------------------------------------------------------------------------------------
# 10. A disk that fails the log's sync (fdatasync returns EIO after three that succeeded; an
# LD_PRELOAD shim): the writer never waits for a sync, its sync thread finds the failure later.
# It is still reported (stderr, the export stream: the seq the log had reached when that
# checkpoint was handed over) and the run exits 123; the lines already written stay, a prefix
# that checks; no copy holds a note the failed sync should have covered, nor a later one.

FAILSYNC=$SL_TOOLS/sl_failsync.so
if [[ -e $FAILSYNC ]]; then
	log=$SL_TMP/eio.jsonl
	exec 3>"$SL_TMP/eio.export"
	# (a denial every 50 ms: each checkpoint has a sync of its own, the 4th fails mid-run)
	LD_PRELOAD=$FAILSYNC SL_FAILSYNC_AFTER=3 sluice_run "$policy" "$log" --checkpoint-lines 3 \
		--checkpoint-fd 3 -- "${RUN_EXEC[@]}" sh -c \
		"for i in \$(seq 20); do $SL_PROBE tcp 198.51.100.20 80 >/dev/null; sleep 0.05; done"
	exec 3>&-
	assert_rc "sync EIO: enforcement goes on, the run exits 123" 123
	tap_cmp "sync EIO: stderr says the log failed with EIO" \
		"$(grep -c "writing log $log: Input/output error" "$SL_ERR")" -ge 1
	eio_seq=$(sed -nE 's/^sluice: log write failed at seq ([0-9]+): Input\/output error$/\1/p' \
		"$SL_TMP/eio.export")
	tap_check "sync EIO: the export stream says at which seq" test -n "$eio_seq"
	tap_check "sync EIO: the lines written check, an unsealed prefix" \
		python3 "$CHECK" "$log" --unsealed --pub "$SLUICE_PUB"
	tap_cmp "sync EIO: no line before that seq is lost" "$(wc -l <"$log")" -ge "${eio_seq:-999999}"
	# the notes of the sidecar, and of the export stream (its failure message left out)
	sizes() {
		python3 -c 'import sys; t = open(sys.argv[1]).read()
t = "\n".join(l for l in t.split("\n") if not l.startswith("sluice: ")).split("\n\n")
print(" ".join(n.strip("\n").split("\n")[1] for n in t[0::2] if n.strip("\n")))' "$1"
	}
	tap_check "sync EIO: the sidecar holds the notes of the syncs that succeeded" \
		test -n "$(sizes "$log.checkpoints")"
	tap_is "sync EIO: the export holds the same notes" "$(sizes "$SL_TMP/eio.export")" \
		"$(sizes "$log.checkpoints")"
	# the seq said is the one after the checkpoint whose sync failed: that line is a checkpoint
	tap_is "sync EIO: the line before that seq is the checkpoint whose sync failed" \
		"$(py_log "$log" "recs[${eio_seq:-0} - 1]['type']")" checkpoint
	tap_is "sync EIO: no note covers that checkpoint's lines or more (size < $((eio_seq - 1)))" \
		"$(for n in $(sizes "$log.checkpoints"); do
			[[ $n -lt $((${eio_seq:-1} - 1)) ]] || echo "$n"; done)" ""
	"$SLUICE" verify "$log" --checkpoints "$log.checkpoints" >/dev/null 2>&1
	tap_is "sync EIO: sluice verify against the sidecar: unsealed (exit 2)" "$?" 2
	# The failing sync takes 2 s (a dying disk's timeout) while the run goes on and ends: the
	# seal's checkpoints queue behind it and the close waits for them. The failure must end
	# that wait (it once deadlocked the writer against the sync thread: killed, exit 137).
	log=$SL_TMP/eio-slow.jsonl
	LD_PRELOAD=$FAILSYNC SL_FAILSYNC_AFTER=3 SL_FAILSYNC_DELAY_MS=2000 SL_RUN_TIMEOUT=60 \
		sluice_run "$policy" "$log" --checkpoint-lines 3 -- "${RUN_EXEC[@]}" sh -c \
		"for i in \$(seq 20); do $SL_PROBE tcp 198.51.100.20 80 >/dev/null; done"
	assert_rc "slow sync EIO with checkpoints queued behind it: the run ends, exit 123" 123
	tap_check "slow sync EIO: the lines written check, an unsealed prefix" \
		python3 "$CHECK" "$log" --unsealed --pub "$SLUICE_PUB"
else
	tap_skip "sync EIO" "$FAILSYNC not built (make)"
fi

# 10. The log's bytes leave the page cache one checkpoint pass behind the sync (journal.c
# drop_behind): a log written at hundreds of MB/s does not push the rest of the cache out, and a
# reader trailing by a checkpoint still reads from memory. After the run at most the last
# pass's bytes (a few lines, rounded to 64 KiB) stay cached, of a log of some 400 KiB.
log=$SL_TMP/cache.jsonl
if [[ $(stat -f -c %T "$SL_TMP") == tmpfs ]] || ! command -v fincore >/dev/null; then
	tap_skip "page cache" "$SL_TMP is on tmpfs (nothing to drop) or fincore is missing"
else
	sluice_run "$policy" "$log" --checkpoint-lines 20 -- "${RUN_EXEC[@]}" sh -c "$(denials 1000)"
	assert_rc "page cache: the run of 1000 denials ends (exit 0)" 0
	size=$(stat -c %s "$log")
	cached=$(fincore --bytes --noheadings --output RES "$log" | tr -d ' ')
	tap_check "page cache: of the log's $size bytes, $cached stay cached (at most 256 KiB)" \
		test "$size" -gt 300000 -a "${cached:-999999999}" -le 262144
fi

tap_done
