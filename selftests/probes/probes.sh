#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Every escape probe of selftests/README.md against sluice on this kernel (make probes runs it
# here and, with VM=1, in each VM through selftests/vm/vmtest.sh). TAP, one line per probe and
# column:
#
#   KERNEL (no sandbox)    the control: the kit's workload with nothing around it in the
#                          sandbox's namespace; every probe escapes where its road is open on
#                          this kernel (a probe whose road is closed is skipped below)
#   KERNEL (root)          the kit's workload (sl_escape) under `sluice run` as the default
#                          confined root, deny-all policy, in the topology's sandbox namespace:
#                          judged by the observer at the test hosts
#   KERNEL (--allow-root)  the same with --allow-root: raw sockets and cgroup moves exist, so
#                          only sluice's hooks stand in the way (P12, P14 judged by them alone)
#   KERNEL (selftests)     the probes that need sluice's policy, log, pins or resolver (P8,
#                          P9, P17–P22, P25–P28): their selftest files run, judged by their TAP
#                          lines that name the probe (their checks at the sinks and in the log)
#
# The rows (judge.py's TSV) go to $PROBES_ROWS (default .output/probes/KERNEL.tsv); in a VM
# (SLUICE_VM=1, a read-only tree) they are written to the console instead, one
# "sl-probe-row: BASE64" line each, where make probes reads them. PROBES_KIT_ONLY=1 leaves the
# selftest files out (the VMs' default: under emulation they take hours); PROBES_FILES="test_x.sh
# …" runs only those of them.
. "$(dirname "${BASH_SOURCE[0]}")/kit.sh"

require_root
require_sluice
kernel=$(uname -r)
kit_up

# the control: the kit with no sandbox, so that "contained" below means a road that is open here
kit_enter "nsenter --net={netns} --"
kit_control "$kernel (no sandbox)"

policy=$SL_TMP/deny-all.yaml
printf 'default: deny\nrules: []\n' >"$policy"
for how in root allow-root; do
	id=$(sluice_next_run_id)
	SL_RUN_N=$((SL_RUN_N + 1))
	SL_RUNS+=("$id")
	extra=
	[[ $how == allow-root ]] && extra=--allow-root
	kit_enter "$SLUICE run --policy $policy --run-id $id --task probes --log $SL_TMP/$id.log $extra --netns {netns} --"
	[[ -s $SL_TMP/$id.log ]] || tap_diag_file "$KIT_OUT.err"
	kit_judge "$kernel ($([[ $how == root ]] && echo root || echo --allow-root))" --kit-only
	tap_check "$kernel ($how): the run left nothing behind" leftovers_check "$id"
done

if [[ -z ${PROBES_KIT_ONLY:-} ]]; then
	# the files that hold the probes the kit does not make, each once
	mkdir -p "$SL_TMP/files"
	"$KIT" --list >"$SL_TMP/kit.list"
	files=$(python3 - "$KIT_DIR/judge.py" "$SL_TMP/kit.list" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("judge", sys.argv[1])
j = importlib.util.module_from_spec(spec)
spec.loader.exec_module(j)
made = {l.split()[0] for l in open(sys.argv[2])}
seen = []
for pid, _, files in j.probes():
    for f in files if pid not in made else []:
        if f not in seen:
            seen.append(f)
print(" ".join(seen))
PY
)
	# PROBES_FILES: only these of them (the others' probes are then skipped, "not run")
	[[ -n ${PROBES_FILES:-} ]] && files=$PROBES_FILES
	for f in $files; do
		[[ -f $SL_LIB_DIR/$f ]] || bail_out "PROBES_FILES: no selftests/$f"
		echo "# running selftests/$f"
		SL_KEEP_TMP='' bash "$SL_LIB_DIR/$f" >"$SL_TMP/files/$f.tap" 2>&1
		echo "# selftests/$f: exit status $? ($(grep -c '^not ok' "$SL_TMP/files/$f.tap") not ok)"
	done
	rows=$(python3 "$KIT_DIR/judge.py" judge --column "$kernel (selftests)" \
		--list "$SL_TMP/kit.list" --files-tap "$SL_TMP/files" --files-only)
	printf '%s\n' "$rows" >>"$KIT_RESULTS"
	while IFS=$'\t' read -r col p verdict why; do
		case $verdict in
		contained) tap_ok "$col: $p contained: $why" ;;
		skipped) tap_skip "$col: $p" "$why" ;;
		*) tap_fail "$col: $p NOT contained" "$why" ;;
		esac
	done <<<"$rows"
fi

if [[ -n ${SLUICE_VM:-} ]]; then
	while IFS= read -r row; do
		printf 'sl-probe-row: %s\n' "$(printf '%s' "$row" | base64 -w0)" >/dev/console
	done <"$KIT_RESULTS"
else
	out=${PROBES_ROWS:-$REPO/.output/probes/$kernel.tsv}
	mkdir -p "$(dirname "$out")"
	cp "$KIT_RESULTS" "$out"
	echo "# rows written to $out"
fi
tap_done
