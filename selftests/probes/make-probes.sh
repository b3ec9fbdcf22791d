#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make probes: every escape probe (selftests/README.md) against sluice, on this machine's kernel
# and, with VM=1, on the VM kernels of selftests/vm/vmtest.sh; one TAP line per probe, kernel
# and column (probes.sh says which), then the markdown table probe × kernel, printed and
# written to $PROBES_OUT (default .output/probes.md), and every column of each kernel (the
# control's too) in .output/probes-detail.md.
#
#   make-probes.sh [--no-host] [--vm [VMTEST_ARGS…]]
#
# --vm runs probes.sh in each VM (vmtest.sh's -k, -K, -M, -C, -j, -m, -a, -t pass through); there,
# only the kit's probes unless PROBES_VM_FILES=1 (the selftest files under emulation take
# hours). PROBES_KIT_ONLY=1 leaves the selftest files out on this machine too.
# Exit status 1 if a probe was NOT contained or a kernel could not be probed.
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUTDIR=$REPO/.output/probes
out=${PROBES_OUT:-$REPO/.output/probes.md}
host=1
vm=0
vmargs=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--no-host) host=0 ;;
	--vm)
		vm=1
		shift
		vmargs=("$@")
		break
		;;
	*)
		echo "make-probes.sh: unknown argument \"$1\" (--no-host, --vm [vmtest.sh args])" >&2
		exit 2
		;;
	esac
	shift
done
mkdir -p "$OUTDIR" || exit 1
rm -f "$OUTDIR"/*.tsv "$OUTDIR"/*.log

echo "TAP version 13"
n=0
failed=0
tap() {
	n=$((n + 1))
	echo "$1 $n - $2"
}
# Each row of a TSV file as a TAP line.
tap_rows() {
	local col p verdict why
	while IFS=$'\t' read -r col p verdict why; do
		case $verdict in
		contained) tap ok "$col: $p contained" ;;
		escapes) tap ok "$col: $p escapes without a sandbox (the control)" ;;
		closed) tap ok "$col: $p # SKIP closed on this kernel even without a sandbox" ;;
		skipped) tap ok "$col: $p # SKIP $why" ;;
		*)
			tap "not ok" "$col: $p NOT contained"
			echo "# $why"
			failed=1
			;;
		esac
	done <"$1"
}

if [[ $host -eq 1 ]]; then
	k=$(uname -r)
	echo "# $k: selftests/probes/probes.sh (details: $OUTDIR/$k.log)"
	PROBES_ROWS=$OUTDIR/$k.tsv bash "$REPO/selftests/probes/probes.sh" >"$OUTDIR/$k.log" 2>&1
	rc=$?
	if [[ -s $OUTDIR/$k.tsv ]]; then
		tap_rows "$OUTDIR/$k.tsv"
		# what else probes.sh checked (the observer's control, leftovers), when it failed
		while IFS= read -r l; do
			tap "not ok" "$k: ${l#not ok * - }"
			failed=1
		done < <(grep -E '^not ok' "$OUTDIR/$k.log" | grep -v ' NOT contained$')
		if [[ $rc -ne 0 ]] && ! grep -q '^not ok' "$OUTDIR/$k.log"; then
			tap "not ok" "$k: probes.sh exited with status $rc ($OUTDIR/$k.log)"
			failed=1
		fi
	else
		tap "not ok" "$k: the probes did not run (exit status $rc; $OUTDIR/$k.log)"
		tail -n 20 "$OUTDIR/$k.log" | sed 's/^/#   /'
		failed=1
	fi
fi

if [[ $vm -eq 1 ]]; then
	t=selftests/probes/probes-kit.sh
	[[ -n ${PROBES_VM_FILES:-} ]] && t=selftests/probes/probes.sh
	echo "# VMs: selftests/vm/vmtest.sh ${vmargs[*]} $t (details: $OUTDIR/vm.log)"
	# stdout only: vmtest.sh repeats a failed guest's console on stderr
	bash "$REPO/selftests/vm/vmtest.sh" "${vmargs[@]}" "$t" >"$OUTDIR/vm.log" 2>"$OUTDIR/vm.err"
	rc=$?
	# the guest's rows, each "# sl-probe-row: BASE64" on the console; one file per kernel
	tr -d '\r' <"$OUTDIR/vm.log" | sed -n 's/^# sl-probe-row: \([A-Za-z0-9+/=]*\).*/\1/p' |
		while IFS= read -r b; do
			row=$(printf '%s' "$b" | base64 -d 2>/dev/null) || continue
			kv=${row%% (*}
			printf '%s\n' "$row" >>"$OUTDIR/vm-$kv.tsv"
		done
	for f in "$OUTDIR"/vm-*.tsv; do
		[[ -e $f ]] && tap_rows "$f"
	done
	# a kernel that could not be fetched, booted or did not finish: vmtest.sh's own "not ok"
	while IFS= read -r l; do
		tap "not ok" "VM: ${l#not ok * - }"
		failed=1
	done < <(grep -E '^not ok' "$OUTDIR/vm.log")
	grep -E '^vmtest: ' "$OUTDIR/vm.err" | head -n 20 | sed "s/^/# /"
	[[ $rc -eq 0 ]] || failed=1
fi
# a probe no column of a kernel judged (its selftest files not run there): a SKIP line too
rows=("$OUTDIR"/*.tsv)
if [[ -e ${rows[0]} ]]; then
	while IFS=$'\t' read -r k p why; do
		tap ok "$k: $p # SKIP $why"
	done < <(python3 "$REPO/selftests/probes/judge.py" missing "${rows[@]}")
fi
echo "1..$n"

rows=("$OUTDIR"/*.tsv)
if [[ -e ${rows[0]} ]]; then
	# one column per kernel (its worst verdict first); every column in the detailed table
	python3 "$REPO/selftests/probes/judge.py" table --by-kernel "${rows[@]}" >"$out"
	python3 "$REPO/selftests/probes/judge.py" table "${rows[@]}" >"${out%.md}-detail.md"
	echo
	cat "$out"
	echo
	echo "(written to $out; each column, the control's too, in ${out%.md}-detail.md)"
fi
exit $failed
