#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make bench-quick under make test: the figures a noisy two-core machine measures reliably, held
# to selftests/bench-budgets.txt (instructions per program as loaded, memory per 10-CIDR run)
# and zero loss at a paced record rate; the short connect() table it prints is information only,
# never a check (no wall-clock figure can fail this). tinyproxy is left out here to stay short.
# One TAP line per check bench.py made, from its results.json.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
require_tools nft bpftool
[[ -x $SL_TOOLS/sl_bench ]] || skip_all "$SL_TOOLS/sl_bench not built (make)"

# no topology here (bench.sh builds its own): the scratch directory is this test's to make
SL_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-selftest.XXXXXX") || bail_out "mktemp failed"
trap 'rm -rf -- "$SL_TMP"' EXIT
out=$SL_TMP/bench-quick
SL_TOOLS=$SL_TOOLS timeout -k 5 $((300 * SL_SLOW)) bash "$REPO/selftests/bench.sh" --quick \
	--no-proxy --rounds 2 --connects 500 --out "$out" >"$SL_TMP/bench.out" 2>&1
rc=$?
tap_cmp "bench-quick ran (exit 0: checks passed, 1: a check failed)" "$rc" -le 1 ||
	tap_diag_file "$SL_TMP/bench.out"
if [[ -s $out/results.json ]]; then
	while IFS=$'\t' read -r ok what value limit skip; do
		if [[ -n $skip ]]; then
			tap_skip "$what: $value (limit $limit)" "$skip"
		elif [[ $ok == True ]]; then
			tap_ok "$what: $value (limit $limit)"
		else
			tap_fail "$what: $value (limit $limit)"
		fi
	done < <(python3 -c 'import json, sys
for c in json.load(open(sys.argv[1]))["checks"]:
    print(c["ok"], c["check"], c["value"], c["limit"], c.get("skip", ""), sep="\t")' "$out/results.json")
	n=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(len(r["memory"]["10"]["programs"]))' "$out/results.json")
	tap_cmp "the run's programs were found and counted" "${n:-0}" -ge 10
	# (information: the maps' memlock beside the kernel memory charged to the writer's cgroup,
	# which is what they take where the memlock is an estimate)
	tap_diag "$(python3 -c 'import json, sys
f = json.load(open(sys.argv[1]))["memory_fresh"]["10"]
print("fresh run: maps memlock %.2f MiB, %s, writer anonymous %.2f MiB (huge pages %.2f)"
      % (f["maps_memlock"] / 2**20, "writer cgroup kernel memory %.2f MiB"
         % (f["kernel_charged"] / 2**20) if "kernel_charged" in f else "no memory cgroup",
         f["writer_anon"] / 2**20, f.get("writer_anon_huge", 0) / 2**20))' \
		"$out/results.json")"
else
	tap_fail "bench-quick wrote its results.json"
	tap_diag_file "$SL_TMP/bench.out"
fi
tap_is "bench-quick exit status agrees with its checks" "$rc" "$(python3 -c 'import json, sys
print(int(any(not c["ok"] for c in json.load(open(sys.argv[1]))["checks"])))' \
	"$out/results.json" 2>/dev/null || echo x)"
id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' \
	"$out/results.json" 2>/dev/null)
# shellcheck disable=SC2016 # the inner shell expands them
tap_check "nothing of the bench is left (namespaces, cgroups, pins)" sh -c '[ -n "$1" ] &&
	! ip netns list | grep -q -- "^slb-.*-$1\b" &&
	! ls /sys/fs/bpf/sluice 2>/dev/null | grep -q -- "^bench-$1-" &&
	! find "$2" -maxdepth 1 -name "slb-*-$1*" | grep -q .' sh "$id" \
	"$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)"

# the fed writer's log never fills its filesystem: on a 100 MiB tmpfs the drained feed (20000
# records) fits and runs, issue 15's paced minute (about 13 GB) does not and is skipped, saying why
feedfs=$SL_TMP/feedfs
mkdir "$feedfs" && mount -t tmpfs -o size=100m sl-feedfs "$feedfs" ||
	bail_out "cannot mount a tmpfs at $feedfs"
trap 'umount -l "$feedfs"; rm -rf -- "$SL_TMP"' EXIT
SL_TOOLS=$SL_TOOLS timeout -k 5 $((120 * SL_SLOW)) bash "$REPO/selftests/bench.sh" --writer-only \
	--rounds 1 --flood 20000 --feed-log-dir "$feedfs" --out "$SL_TMP/feed" \
	>"$SL_TMP/feed.out" 2>&1
tap_is "a feed whose log would not fit is skipped, the one that fits runs (rc $?)" \
	"$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(len(r.get("writer_drained", {}).get("sluice", [])), *sorted(r.get("skipped", {})),
      "writer_paced" in r)' "$SL_TMP/feed/results.json" 2>&1)" \
	"1 writer paced (sluice, 500000/s for 60 s) False" || tap_diag_file "$SL_TMP/feed.out"
tap_check "the skip says why in the results" \
	grep -q "skipped: $feedfs has [0-9]* MiB free; 30000000 records at [0-9]* bytes each need" \
	"$SL_TMP/feed/results.md"
tap_done
