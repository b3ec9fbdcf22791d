#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The command line's contract: policy check accepts and refuses with file:line:col; run refuses
# bad arguments, a non-root caller and an existing log with a message saying why, creates nothing
# when it refuses, and never touches a log that already exists; resume refuses bad arguments,
# a non-root caller and a file that is not a run's log, writing nothing.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-cli.XXXXXX") || bail_out "mktemp failed"
trap 'rm -rf -- "$tmp"' EXIT
chmod 0755 "$tmp"
sl_key_setup "$tmp" || bail_out "cannot create a host key"

good=$tmp/good.yaml
bad=$tmp/bad.yaml
cat >"$good" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
EOF2
cat >"$bad" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80, 70000]
EOF2
chmod 0644 "$good" "$bad"

# expect NAME WANT_RC PATTERN CMD…: exit status and a message (stdout+stderr) matching PATTERN.
expect() {
	local name=$1 want=$2 pat=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [[ $rc -eq $want ]] && grep -qE -- "$pat" <<<"$out"; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected exit $want and output matching /$pat/; got exit $rc: $out"
	fi
}

expect "policy check accepts a valid policy and says what it enforces" 0 \
	'enforced in the kernel' "$SLUICE" policy check "$good"
expect "policy check refuses a bad port with file:line:col" 1 \
	"^$bad:5:17: rules\\[0\\]\\.ports\\[1\\]: .*70000" "$SLUICE" policy check "$bad"
expect "policy check on a missing file names it" 1 "$tmp/missing.yaml" \
	"$SLUICE" policy check "$tmp/missing.yaml"
expect "the seed policy loads unchanged and its host rules are enforced through the resolver" 0 \
	"through the run's resolver" "$SLUICE" policy check "$REPO/policy/examples/seed-003.yaml"
expect "unknown command is a usage error" 2 'unknown command' "$SLUICE" frobnicate
expect "run without --policy says so" 125 'policy FILE is required' \
	"$SLUICE" run -- true
expect "run without a command says so" 125 'no command given' "$SLUICE" run --policy "$good"
expect "run refuses a run id that is not a path component" 125 'run-id: expected' \
	"$SLUICE" run --policy "$good" --run-id ../x -- true
expect "run refuses a run id with a '.' (bpffs refuses it as a pin name) up front" 125 \
	"bpffs refuses '.'" "$SLUICE" run --policy "$good" --run-id "cli-$$-a.b" -- true
tap_check "… and leaves nothing behind" leftovers_check "cli-$$-a.b"
expect "run refuses an unknown mode" 125 'mode: expected enforce or report' \
	"$SLUICE" run --policy "$good" --mode audit -- true
expect "run refuses an invalid policy before creating anything" 125 "$bad:5:17" \
	"$SLUICE" run --policy "$bad" --run-id "cli-$$-bad" -- true
tap_check "a refused run leaves nothing behind" leftovers_check "cli-$$-bad"

if command -v setpriv >/dev/null; then
	expect "run as an unprivileged user says root is needed" 125 'needs root' \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$SLUICE" run --policy "$good" --log "$tmp/nobody.jsonl" -- true
else
	tap_skip "run as an unprivileged user says root is needed" "setpriv not installed"
fi

echo "evidence" >"$tmp/existing.jsonl"
expect "run refuses to overwrite an existing log" 125 'logs are never overwritten' \
	"$SLUICE" run --policy "$good" --run-id "cli-$$-log" --log "$tmp/existing.jsonl" -- true
tap_is "the existing log is untouched" "$(cat "$tmp/existing.jsonl")" "evidence"
tap_check "a run refused for its log leaves nothing behind" leftovers_check "cli-$$-log"
# an old log's later segment alone (its first ones cleaned away): the new log would rotate into
# it, and a verifier would read it as the new log's
echo old | gzip >"$tmp/seg.jsonl.000003.gz"
expect "run refuses a log whose name has an old rotated segment" 125 'logs are never overwritten' \
	"$SLUICE" run --policy "$good" --run-id "cli-$$-seg" --log "$tmp/seg.jsonl" \
	--log-rotate-kib 1 -- true
tap_check "... and creates no log there" test ! -e "$tmp/seg.jsonl"

expect "resume without a run id says so" 125 'expected one RUN_ID' "$SLUICE" resume
expect "resume refuses a run id that is not a path component" 125 'RUN_ID: expected' \
	"$SLUICE" resume ../x
expect "resume of a run without a log says which log" 125 "open log $tmp/none.jsonl" \
	"$SLUICE" resume "cli-$$-none" --log "$tmp/none.jsonl"
expect "resume refuses a file that is not a log, writing nothing" 125 'nothing was written' \
	"$SLUICE" resume "cli-$$-log" --log "$tmp/existing.jsonl"
tap_is "... the file is untouched" "$(cat "$tmp/existing.jsonl")" "evidence"
if command -v setpriv >/dev/null; then
	expect "resume as an unprivileged user says root is needed" 125 'needs root' \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$SLUICE" resume "cli-$$-log" --log "$tmp/existing.jsonl"
else
	tap_skip "resume as an unprivileged user says root is needed" "setpriv not installed"
fi

# The options run, resume and attach share are one table (userspace/runopts.c): the same short
# letters, the same checks, whichever command takes them.
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
mkdir "$cg2/cli-$$" && trap 'rm -rf -- "$tmp"; rmdir "$cg2/cli-$$"' EXIT
expect "attach takes -p, -r, -t, -m as run does" 0 '"policy":"'"$good"'".*"task":"t1","mode":"report"' \
	"$SLUICE" attach -p "$good" -r "cli-$$-att" -t t1 -m report --cgroup "$cg2/cli-$$" --dry-run
for cmd in run attach; do
	rc=125 && [[ $cmd == attach ]] && rc=2
	extra=(-- true) && [[ $cmd == attach ]] && extra=(--cgroup "$cg2/cli-$$" --dry-run)
	expect "$cmd refuses a task holding a control character" $rc \
		"sluice $cmd: --task: holds a control character" \
		"$SLUICE" $cmd --policy "$good" --run-id "cli-$$-t" --task $'a\x1b[2Jb' "${extra[@]}"
	expect "$cmd refuses an unknown mode" $rc "sluice $cmd: --mode: expected enforce or report" \
		"$SLUICE" $cmd --policy "$good" --run-id "cli-$$-t" --mode audit "${extra[@]}"
	expect "$cmd refuses an upstream longer than run_start can hold" $rc \
		"sluice $cmd: --upstream: longer than 63 bytes" \
		"$SLUICE" $cmd --policy "$good" --run-id "cli-$$-t" --upstream "$(printf '%070d' 1)" \
		"${extra[@]}"
done
expect "resume refuses an upstream longer than run_start can hold" 125 \
	"sluice resume: --upstream: longer than 63 bytes" \
	"$SLUICE" resume "cli-$$-t" -u "$(printf '%070d' 1)" --log "$tmp/none.jsonl"
tap_check "refused runs leave nothing behind" leftovers_check "cli-$$-t"

expect "a command that does not exist exits 127 and says so" 127 'cannot execute' \
	"$SLUICE" run --policy "$good" --run-id "cli-$$-nx" --log "$tmp/nx.jsonl" -- /nonexistent/cmd
tap_check "the run of a missing command is cleaned up" leftovers_check "cli-$$-nx"
tap_check "the run of a missing command still has a complete log" log_well_formed "$tmp/nx.jsonl"

tap_done
