#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# One test file of a selftest VM (selftests/vm/guest.sh), through prove, at most TIMEOUT s:
#
#   selftests/vm/prove-file.sh FILE TIMEOUT [VERBOSE]
#
# Prints what failed, with its diagnostics (a bail-out's come before it), and prove's verdict,
# indented; every line prove printed when VERBOSE is 1. Its last line is the one the host reads:
# "vmtest-file: FILE ok|fail|skip WHY". A file that skipped as a whole (skip_all: "1..0 # SKIP
# WHY", which `prove -v` shows as "FILE .. skipped: WHY") is a skip with its reason, never an
# ok; one that ran no test and gave no reason is a skip that says so. The line before it,
# "vmtest-time: FILE SECONDS", is how long the file took (the host puts it in the file's TAP
# line: where the time of a run under emulation goes). A file still running at TIMEOUT is
# killed, fails, and its last lines say where it hung. Exits 1 if the file failed.
set -u
# (run by prove as the file's --exec: the file, its TAP also appended to RAW as it comes; prove's
# own output to a file is block-buffered, and lost when the time limit kills it)
if [[ ${1:-} == --tee ]]; then
	set -o pipefail
	"$3" | tee -a "$2"
	exit "${PIPESTATUS[0]}"
fi
t=$1 limit=$2 verbose=${3:-0}
out=$(mktemp "${TMPDIR:-/tmp}/vmtest-prove.XXXXXX") || exit 1
raw=$(mktemp "${TMPDIR:-/tmp}/vmtest-raw.XXXXXX") || exit 1
trap 'rm -f -- "$out" "$raw"' EXIT

start=$SECONDS
timeout -k 10 "$limit" prove -v --exec "bash $(realpath "${BASH_SOURCE[0]}") --tee $raw" "$t" \
	>"$out" 2>&1
rc=$?
took=$((SECONDS - start))
# a file that hung: where it was (its last lines) said with the verdict
if [[ $rc -eq 124 ]]; then
	last=$(tail -n 6 "$raw")
	{
		echo "(timed out after $limit s; its last lines:)"
		printf '%s\n' "$last" | sed 's/^/(last) /'
	} >>"$out"
fi
# (prove -v never echoes a "Bail out!": it says "Bailout called. … WHY" on stderr, ahead of the
# file's lines; shown at the end, after the diagnostics that came before the bail-out)
awk -v all="$verbose" 'all == 1 { print; next }
	/^not ok/ { show = 1; held = ""; print; next }
	/^(ok|[0-9]+\.\.)/ { show = 0; held = ""; next }
	/^#/ { if (show) print; else held = held $0 "\n"; next }
	/^Bailout called/ { bail = $0; next }
	/^(Failed|Result|Files=|Dubious|  Failed|\(timed out|\(last\) )/ { print }
	END { if (bail != "") printf "%s%s\n", held, bail }' "$out" | sed 's/^/  /'
# the reason as prove -v shows it (after the file's name), or as the file said it
why=$(sed -n -e 's/^.* \.\.* skipped: //p' -e 's/^1\.\.0 # [Ss][Kk][Ii][Pp] *//p' "$out" |
	head -n 1)
if [[ -z $why ]] && grep -q '^Result: NOTESTS' "$out"; then
	why="no test ran and no reason was given"
fi
echo "vmtest-time: $t $took"
if [[ $rc -ne 0 ]]; then
	echo "vmtest-file: $t fail"
	exit 1
elif [[ -n $why ]]; then
	echo "vmtest-file: $t skip $why"
else
	echo "vmtest-file: $t ok"
fi
