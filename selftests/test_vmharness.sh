#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The VM harness without a VM (a real boot under emulation takes minutes; `make vmtest` does
# that): selftests/vm/config-check.sh names exactly the options a crafted config lacks;
# selftests/vm/vmtest.sh refuses bad arguments (a KERNEL that does not exist, a bad memory
# size or time limit, MODULES= without KERNEL=) with a message naming them, before it fetches
# or boots anything; and with an emulator of the test's own in place of qemu (SL_VM_QEMU): a
# guest that hangs is killed at the time limit and reported as a failure, a guest that reports
# gives one TAP line per test file, one that crashes is booted once more (twice: a failure
# said on stderr), the kernel is booted with "bpf" in lsm= and the caller's
# memory and command line, and the config built into a kernel image is found and checked;
# with -j two kernels boot at once and their lines come in the order the kernels were named;
# with -s one kernel's files are shared out among VMs that run at once, by the seconds each
# takes, its lines still in the order given, and one VM that hangs fails alone;
# vmtest killed takes its emulators with it.
# No root needed.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VMTEST=$REPO/selftests/vm/vmtest.sh
CHECK=$REPO/selftests/vm/config-check.sh
[[ -x $SLUICE ]] || skip_all "sluice not built at $SLUICE (run make, or set SLUICE=)"
busybox_bin=$(command -v busybox) || skip_all "busybox not installed (make deps)"
ldd "$busybox_bin" 2>&1 | grep -q 'not a dynamic' || skip_all "busybox is not busybox-static (make deps)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-vmharness.XXXXXX") || bail_out "mktemp failed"
qpid=
cleanup() {
	[[ -n $qpid ]] && kill -KILL "$qpid" 2>/dev/null
	rm -rf -- "$tmp"
}
trap cleanup EXIT

# A config with every option of selftests/config (the VM's drivers built in: the fake kernels
# below come without modules), then three taken away in three ways.
grep '^CONFIG_' "$REPO/selftests/config" |
	sed -E 's/^(CONFIG_(VIRTIO_PCI|NET_9P|NET_9P_VIRTIO|9P_FS))=m/\1=y/' >"$tmp/full.config"
sed -e '/^CONFIG_INET_DIAG_DESTROY=/d' \
	-e 's/^CONFIG_BPF_LSM=y/# CONFIG_BPF_LSM is not set/' \
	-e 's/^CONFIG_DEBUG_INFO_BTF=y/CONFIG_DEBUG_INFO_BTF=m/' \
	-e 's/^CONFIG_VETH=m/CONFIG_VETH=y/' "$tmp/full.config" >"$tmp/crafted.config"

out=$(bash "$CHECK" "$tmp/full.config" 2>&1)
tap_is "config-check: a config with every option passes" "$?" 0 || tap_diag "$out"
out=$(bash "$CHECK" "$tmp/crafted.config" 2>&1)
rc=$?
tap_is "config-check: a config lacking options exits 1" "$rc" 1
tap_is "config-check: it names exactly the three options lacking (a module where y is needed too)" \
	"$(printf '%s\n' "$out" | grep -o '^CONFIG_[A-Z0-9_]*=[ym] lacking' | sort | tr '\n' ' ')" \
	"CONFIG_BPF_LSM=y lacking CONFIG_DEBUG_INFO_BTF=y lacking CONFIG_INET_DIAG_DESTROY=y lacking "
tap_check "config-check: each says what the config has and why sluice needs it" \
	grep -q 'CONFIG_DEBUG_INFO_BTF=y lacking (CONFIG_DEBUG_INFO_BTF=m in the config): BPF itself' \
	<<<"$out"
gzip -c "$tmp/crafted.config" >"$tmp/config.gz"
out=$(bash "$CHECK" "$tmp/config.gz" 2>&1)
tap_is "config-check: a gzipped config (/proc/config.gz) is read alike" \
	"$?:$(grep -c ' lacking ' <<<"$out")" "1:3"
out=$(bash "$CHECK" "$tmp/none.config" 2>&1)
tap_is "config-check: a config that does not exist: exit 2, named" \
	"$?:$(grep -c "$tmp/none.config: no such readable file" <<<"$out")" "2:1"
printf 'CONFIG_BPF=y\nCONFIG_VETH=yes\n' >"$tmp/bad.fragment"
out=$(bash "$CHECK" "$tmp/full.config" "$tmp/bad.fragment" 2>&1)
tap_is "config-check: a malformed fragment line: exit 2, file and line named" \
	"$?:$(grep -c "bad.fragment:2: not CONFIG_NAME=y or =m" <<<"$out")" "2:1"

# vmtest.sh's arguments: refused with the reason, exit 2, nothing fetched or created
export SL_VM_DIR=$tmp/vm
vm_refuses() {
	local name=$1 want=$2 out rc
	shift 2
	out=$(bash "$VMTEST" "$@" 2>&1)
	rc=$?
	if [[ $rc -eq 2 && $out == *"$want"* && ! -e $SL_VM_DIR ]]; then
		tap_ok "vmtest refuses $name"
	else
		tap_fail "vmtest refuses $name" "expected exit 2, \"$want\", no $SL_VM_DIR; got $rc: $out"
	fi
}
vm_refuses "a KERNEL that does not exist" "KERNEL=$tmp/no-bzImage: no such file" -K "$tmp/no-bzImage"
vm_refuses "a KERNEL that is a directory" "KERNEL=$tmp: not a readable file" -K "$tmp"
: >"$tmp/bzImage"
vm_refuses "a MODULES that does not exist" "MODULES=$tmp/nomods: no such directory" \
	-K "$tmp/bzImage" -M "$tmp/nomods"
vm_refuses "a CONFIG that does not exist" "CONFIG=$tmp/none: no such readable file" \
	-K "$tmp/bzImage" -C "$tmp/none"
vm_refuses "MODULES without KERNEL" "MODULES= and CONFIG= go with KERNEL=" -M "$tmp"
vm_refuses "a memory size that is not one" 'the memory (-m, VM_MEM) "lots"' -K "$tmp/bzImage" -m lots
vm_refuses "a time limit that is not one" 'the time limit (-t, VM_TIMEOUT) "0"' -K "$tmp/bzImage" -t 0
vm_refuses "a -j that is not a number of kernels" 'the kernels at once (-j, VM_JOBS) "0"' -j 0 -k 6.1
vm_refuses "a -s that is not a number of VMs" 'the VMs per kernel (-s, VM_SHARDS) "two"' -s two -k 6.1
vm_refuses "an unknown Debian series" 'unknown kernel series "5.10"' -k 5.10
vm_refuses "a test file given twice" "selftests/test_topology.sh: given twice" -K "$tmp/bzImage" \
	selftests/test_topology.sh selftests/test_lsm.sh selftests/test_topology.sh
vm_refuses "a test file that does not exist" "selftests/test_nope.sh: no such test file" \
	-K "$tmp/bzImage" selftests/test_nope.sh

# An emulator that records its arguments and its pid, then does what $tmp/guest says: hang, or
# print what guest.sh prints for the test files its configuration names.
cat >"$tmp/qemu" <<'QEMU'
#!/bin/bash
d=$(dirname "$0")
echo $$ >"$d/qemu.pid"
echo $$ >>"$d/qemu.pids"
echo boot >>"$d/boots"
printf '%s\n' "$@" >"$d/qemu.args"
mode=$(cat "$d/guest")
# the guest's configuration, as guest.sh reads it: TESTS, the files this VM runs
conf=$(printf '%s\n' "$@" | sed -n 's/.*sluice_vm=\([^ ]*\).*/\1/p')
. "$conf"
# crash-once: a panic on the first boot, every file passing on the next
if [[ $mode == crash-once ]]; then
	[[ $(wc -l <"$d/boots") -eq 1 ]] && mode=crash || mode=pass
fi
# hang-lsm: the VM given test_lsm.sh hangs, others pass
if [[ $mode == hang-lsm ]]; then
	[[ " ${TESTS[*]} " == *" selftests/test_lsm.sh "* ]] && mode=hang || mode=pass
fi
case $mode in
hang) exec sleep 1000 ;;
crash)
	echo "vmtest: kernel 9.9.9-fake, 1 test file(s)"
	echo "Kernel panic - not syncing: fake-panic-marker"
	exit 1
	;;
pass)
	echo "vmtest: kernel 9.9.9-fake, ${#TESTS[@]} test file(s)"
	for t in "${TESTS[@]}"; do echo "vmtest-file: $t ok"; done
	echo "vmtest-result: 0"
	;;
report)
	echo "vmtest: kernel 9.9.9-fake, ${#TESTS[@]} test file(s)"
	echo "vmtest: active LSMs: lockdown,capability,yama"
	echo "vmtest-time: ${TESTS[0]} 12"
	echo "vmtest-file: ${TESTS[0]} ok"
	echo "vmtest-file: ${TESTS[1]} fail"
	echo "vmtest-time: ${TESTS[2]} 3"
	echo "vmtest-file: ${TESTS[2]} skip no BPF LSM here"
	echo "vmtest-result: 1"
	;;
# meet: this VM's files pass only if another emulator started within 10 s of it (so they ran
# at once); the 6.1 one ends last
meet)
	me=$(basename "$(printf '%s\n' "$@" | grep -A 1 -x -- -kernel | tail -n 1)")
	touch "$d/started.$$"
	for _ in $(seq 100); do
		ls "$d" | grep '^started\.' | grep -qvxF "started.$$" && met=ok && break
		sleep 0.1
	done
	[[ $me == *6.1.0* ]] && sleep 2
	echo "vmtest: kernel $me, ${#TESTS[@]} test file(s)"
	for t in "${TESTS[@]}"; do echo "vmtest-file: $t ${met:-fail}"; done
	echo "vmtest-result: 0"
	;;
# misname: the VM whose first file is test_report.sh names test_topology.sh in its place
misname)
	echo "vmtest: kernel 9.9.9-fake, ${#TESTS[@]} test file(s)"
	for t in "${TESTS[@]}"; do
		[[ $t == selftests/test_report.sh && $t == "${TESTS[0]}" ]] && t=selftests/test_topology.sh
		echo "vmtest-file: $t ok"
	done
	echo "vmtest-result: 0"
	;;
lsm-skip)
	echo "vmtest: kernel 9.9.9-fake, 1 test file(s)"
	echo "vmtest: active LSMs: lockdown,capability,yama,bpf"
	echo "vmtest-file: selftests/test_lsm.sh skip no BPF-LSM layer on this kernel: fake"
	echo "vmtest-result: 0"
	;;
esac
QEMU
chmod +x "$tmp/qemu"
export SL_VM_QEMU=$tmp/qemu

# A kernel image whose payload (gzip, as a bzImage's) holds the crafted config the way
# CONFIG_IKCONFIG builds it in, and the version string its setup header points at.
python3 - "$tmp/crafted.config" "$tmp/bzImage" <<'PY'
import gzip, struct, sys
cfg = open(sys.argv[1], "rb").read()
img = bytearray(0x400)
img[0x300:0x320] = b"9.9.9-fake (builder@ci) #1\0".ljust(32, b"\0")
img[0x20e:0x210] = struct.pack("<H", 0x300 - 0x200)
payload = b"\0" * 100 + b"IKCFG_ST" + gzip.compress(cfg) + b"IKCFG_ED"
open(sys.argv[2], "wb").write(bytes(img) + gzip.compress(payload))
PY

echo hang >"$tmp/guest"
start=$SECONDS
out=$(bash "$VMTEST" -K "$tmp/bzImage" -t 2 -m 1536M -a "sl_marker=1" selftests/test_topology.sh 2>&1)
rc=$?
qpid=$(cat "$tmp/qemu.pid" 2>/dev/null)
tap_is "a hung guest: vmtest exits 1" "$rc" 1
tap_is "a hung guest: booted once (a hang is not retried)" "$(wc -l <"$tmp/boots")" 1
tap_check "a hung guest: reported as not ok, killed at the time limit" \
	grep -q '^not ok [0-9]* - 9.9.9-fake: the VM did not finish in 2 s, killed' <<<"$out"
if [[ -n $qpid ]] && ! kill -0 "$qpid" 2>/dev/null; then
	tap_ok "a hung guest: the emulator is gone"
else
	tap_fail "a hung guest: the emulator is gone" "pid ${qpid:-none} still there"
fi
tap_cmp "a hung guest: vmtest did not wait for the guest (s)" "$((SECONDS - start))" -lt 60
tap_check "the config built into the image is checked: not ok, the options lacking named" \
	grep -q '^not ok 1 - 9.9.9-fake: config .*/config lacks options' <<<"$out"
tap_cmp "the config check names the three options" \
	"$(grep -c '^#   CONFIG_.* lacking ' <<<"$out")" -eq 3
tap_check "the kernel boots with bpf in lsm=, the caller's command line last" \
	grep -Eq "^console=ttyS0 .* lsm=([a-z]+,)*bpf .*sluice_vm=.* sl_marker=1\$" "$tmp/qemu.args"
tap_check "the VM gets the caller's memory" grep -qx -- 1536M "$tmp/qemu.args"
tap_check "the kernel and initramfs are the caller's and vmtest's" \
	grep -qx -- "$tmp/bzImage" "$tmp/qemu.args"

echo report >"$tmp/guest"
out=$(bash "$VMTEST" -K "$tmp/bzImage" -C "$tmp/full.config" -t 30 selftests/test_topology.sh \
	selftests/test_report.sh selftests/test_lsm.sh 2>&1)
rc=$?
tap_is "a guest whose tests failed: vmtest exits 1" "$rc" 1
tap_is "one TAP line per kernel and test file, and the config's" \
	"$(grep -E '^(not )?ok ' <<<"$out" | sed 's/ (console: .*)//')" \
	"ok 1 - 9.9.9-fake: config $tmp/full.config has every option in selftests/config
ok 2 - 9.9.9-fake: selftests/test_topology.sh (12 s)
not ok 3 - 9.9.9-fake: selftests/test_report.sh
ok 4 - 9.9.9-fake: selftests/test_lsm.sh (3 s) # SKIP no BPF LSM here" || tap_diag "$out"
tap_check "how long the VM ran is said" grep -Eq '^# 9.9.9-fake: the VM ran [0-9]+ s' <<<"$out"
tap_check "the plan counts them" grep -qx '1..4' <<<"$out"

# test_lsm.sh is what the VMs boot with lsm=...,bpf for: its skip on a kernel that runs BPF LSM
# (the guest says its active LSMs) fails; on one that does not (above) it is a SKIP
echo lsm-skip >"$tmp/guest"
out=$(bash "$VMTEST" -K "$tmp/bzImage" -C "$tmp/full.config" -t 30 selftests/test_lsm.sh 2>&1)
rc=$?
want="not ok 2 - 9.9.9-fake: selftests/test_lsm.sh skipped though the kernel runs BPF LSM"
want+=" (active LSMs: lockdown,capability,yama,bpf): no BPF-LSM layer on this kernel: fake"
tap_is "test_lsm.sh skipping under an active BPF LSM: exit 1, not ok with the LSMs and why" \
	"$rc:$(grep -cxF "$want" <<<"$out")" "1:1" || tap_diag "$out"

# What the guest says of one test file (selftests/vm/prove-file.sh, run here as guest.sh runs it
# in the VM): prove -v shows a skip_all as "FILE .. skipped: WHY", which must come out a skip
# with its reason, not an ok
mkdir -p "$tmp/t"
printf '#!/bin/bash\necho "1..0 # SKIP the fake kernel has no such layer"\n' >"$tmp/t/skips.sh"
printf '#!/bin/bash\necho 1..1\necho "ok 1 - fine"\n' >"$tmp/t/passes.sh"
printf '#!/bin/bash\necho 1..2\necho "ok 1 - fine"\necho "not ok 2 - broken"\n%s\n' \
	'echo "# diag-marker"' >"$tmp/t/fails.sh"
printf '#!/bin/bash\necho 1..0\n' >"$tmp/t/silent.sh"
printf '#!/bin/bash\necho 1..2\necho "ok 1 - fine"\necho "# bail-diag"\necho "Bail out! bail-why"\n' \
	>"$tmp/t/bails.sh"
printf '#!/bin/bash\necho 1..3\necho "ok 1 - before-the-hang"\nexec sleep 600\n' >"$tmp/t/hangs.sh"
chmod +x "$tmp/t/"*.sh
prove_file() { (cd "$tmp" && bash "$REPO/selftests/vm/prove-file.sh" "t/$1" 30 2>&1); }
out=$(prove_file skips.sh)
tap_is "guest: a file that skips is reported a skip, with its reason" "$?:$(tail -n 1 <<<"$out")" \
	"0:vmtest-file: t/skips.sh skip the fake kernel has no such layer"
out=$(prove_file silent.sh)
tap_is "guest: a file that runs no test and gives no reason is a skip that says so" \
	"$?:$(tail -n 1 <<<"$out")" "0:vmtest-file: t/silent.sh skip (no reason given)"
out=$(prove_file passes.sh)
# (the seconds prove took: 0, or more on a loaded machine)
tap_is "guest: a file that passes is ok, after how long it took" \
	"$?:$(tail -n 2 <<<"$out" | sed -E '1s/ [0-9]+$/ N/')" "0:vmtest-time: t/passes.sh N
vmtest-file: t/passes.sh ok"
out=$(cd "$tmp" && bash "$REPO/selftests/vm/prove-file.sh" t/passes.sh 30 1 2>&1)
tap_check "guest: SL_VM_VERBOSE's mode shows the passing lines too" grep -qx '  ok 1 - fine' <<<"$out"
out=$(prove_file fails.sh)
tap_is "guest: a file that fails: exit 1, its failing line and diagnostics shown" \
	"$?:$(tail -n 1 <<<"$out"):$(grep -c -e '^  not ok 2 - broken' -e '^  # diag-marker' <<<"$out")" \
	"1:vmtest-file: t/fails.sh fail:2"

# (a limit the file's first line is printed well within, however loaded the machine: .ci/run
# beside three VMs once killed it at 2 s before that line was out)
hang_limit=$((5 * SL_SLOW))
out=$(cd "$tmp" && bash "$REPO/selftests/vm/prove-file.sh" t/hangs.sh "$hang_limit" 2>&1)
tap_is "guest: a file that hangs fails at its time limit, its last line before the hang shown" \
	"$?:$(tail -n 1 <<<"$out"):$(grep -c -e "(timed out after $hang_limit s" \
		-e '(last) ok 1 - before-the-hang' <<<"$out")" "1:vmtest-file: t/hangs.sh fail:2" ||
	tap_diag "$out"
out=$(prove_file bails.sh)
tap_is "guest: a file that bails out fails, with the diagnostics before it and its reason" \
	"$?:$(tail -n 4 <<<"$out" | head -n 2 | sed 's/  *Further testing stopped: */: /')" \
	"1:  # bail-diag
  Bailout called.: bail-why" || tap_diag "$out"

# A guest that ends without a result (a panic under emulation) is booted once more, and what
# ended the first boot is on stderr, which is what a CI log shows of a test file.
echo crash-once >"$tmp/guest"
rm -f "$tmp/boots"
out=$(bash "$VMTEST" -K "$tmp/bzImage" -C "$tmp/full.config" -t 30 selftests/test_topology.sh \
	2>"$tmp/stderr")
rc=$?
tap_is "a guest that crashed once: booted twice, its tests' lines from the second boot, exit 0" \
	"$rc:$(wc -l <"$tmp/boots"):$(grep -c '^ok [0-9]* - 9.9.9-fake: selftests/test_topology.sh$' \
		<<<"$out")" "0:2:1" || tap_diag "$out"
tap_check "a guest that crashed once: the first boot's end is on stderr" \
	grep -q 'ended without a result (qemu exit 1), booting it once more' "$tmp/stderr"
tap_check "a guest that crashed once: the panic line is in it" \
	grep -q 'vmtest:   Kernel panic - not syncing: fake-panic-marker' "$tmp/stderr"
echo crash >"$tmp/guest"
rm -f "$tmp/boots"
out=$(bash "$VMTEST" -K "$tmp/bzImage" -C "$tmp/full.config" -t 30 selftests/test_topology.sh \
	2>"$tmp/stderr")
rc=$?
tap_is "a guest that crashes every time: exit 1 after two boots" "$rc:$(wc -l <"$tmp/boots")" "1:2"
tap_check "a guest that crashes every time: not ok, said on stderr too" \
	grep -q '^vmtest: not ok: 9.9.9-fake: the VM ended without a result (qemu exit 1, none from selftests/test_topology.sh;' \
	"$tmp/stderr"

sed 's/^CONFIG_9P_FS=y/CONFIG_9P_FS=m/' "$tmp/full.config" >"$tmp/no9p.config"
out=$(bash "$VMTEST" -K "$tmp/bzImage" -C "$tmp/no9p.config" selftests/test_topology.sh 2>&1)
tap_is "a kernel whose 9p is a module, without MODULES=: exit 1, not booted, the driver named" \
	"$?:$(grep -c 'no module 9p, nor is CONFIG_9P_FS built in' <<<"$out"):$(grep -c \
		'^not ok 2 - 9.9.9-fake: cannot build the initramfs' <<<"$out")" "1:1:1"

# Several kernels at once (-j): two Debian kernels of the test's own (apt-cache answers for
# them, each tree already unpacked where vmtest caches it), whose emulators each wait for the
# other
mkdir -p "$tmp/bin"
cat >"$tmp/bin/apt-cache" <<'APT'
#!/bin/bash
[[ $* == "show linux-image-amd64" ]] || exit 100
printf 'Package: linux-image-amd64\nVersion: 6.1.990-1\nDepends: linux-image-6.1.0-990-amd64 (= 6.1.990-1)\n\n'
printf 'Package: linux-image-amd64\nVersion: 6.12.990-1~bpo12+1\nDepends: linux-image-6.12.990+bpo-amd64 (= 6.12.990-1~bpo12+1)\n\n'
APT
chmod +x "$tmp/bin/apt-cache"
for kv in 6.1.0-990-amd64 6.12.990+bpo-amd64; do
	d=$SL_VM_DIR/linux-image-$kv
	mkdir -p "$d/boot" "$d/lib/modules/$kv"
	: >"$d/lib/modules/$kv/modules.dep"
	cp "$tmp/full.config" "$d/boot/config-$kv"
	: >"$d/boot/vmlinuz-$kv"
	touch "$d/.unpacked"
done
vm_two() { PATH=$tmp/bin:$PATH bash "$VMTEST" -k 6.1 -k 6.12 "$@" 2>"$tmp/stderr"; }
echo meet >"$tmp/guest"
rm -f "$tmp"/started.*
out=$(vm_two -j 2 -t 60 selftests/test_topology.sh selftests/test_lsm.sh)
rc=$?
tap_is "-j 2: both kernels booted at once, their lines in the order the kernels were named" \
	"$rc:$(grep -E '^(not )?ok |^1\.\.' <<<"$out")" "0:ok 1 - 6.1.0-990-amd64: selftests/test_topology.sh
ok 2 - 6.1.0-990-amd64: selftests/test_lsm.sh
ok 3 - 6.12.990+bpo-amd64: selftests/test_topology.sh
ok 4 - 6.12.990+bpo-amd64: selftests/test_lsm.sh
1..4" || tap_diag "$out"
tap_is "-j 2: how long each VM ran is said, once per kernel" \
	"$(grep -cE '^# (6\.1\.0-990-amd64|6\.12\.990\+bpo-amd64): the VM ran [0-9]+ s' <<<"$out")" 2
tap_check "-j 2: its job files are gone" bash -c "! ls -d '$SL_VM_DIR'/jobs.* 2>/dev/null"
rm -f "$tmp"/started.*
out=$(vm_two -t 60 selftests/test_topology.sh)
tap_is "without -j the kernels boot one after the other (the first met no other): exit 1" \
	"$?:$(grep -E '^(not )?ok ' <<<"$out" | sed 's/ (console: .*)//')" \
	"1:not ok 1 - 6.1.0-990-amd64: selftests/test_topology.sh
ok 2 - 6.12.990+bpo-amd64: selftests/test_topology.sh"

# One kernel's files shared out among VMs that run at once (-s), by the seconds a table says
# each file takes (SL_VM_SECONDS): the longest to the first VM, the next two to the second
printf '# seconds\nselftests/test_topology.sh 300\nselftests/test_lsm.sh 200\nselftests/test_report.sh 150\n' \
	>"$tmp/seconds"
vm_shared() {
	SL_VM_SECONDS=$tmp/seconds bash "$VMTEST" -K "$tmp/bzImage" -C "$tmp/full.config" -s 2 "$@" \
		selftests/test_topology.sh selftests/test_report.sh selftests/test_lsm.sh 2>"$tmp/stderr"
}
echo meet >"$tmp/guest"
rm -f "$tmp"/started.*
out=$(vm_shared -t 60)
rc=$?
tap_is "-s 2: both VMs of the kernel ran at once, one line per file in the order given" \
	"$rc:$(grep -E '^(not )?ok |^1\.\.' <<<"$out")" "0:ok 1 - 9.9.9-fake: config $tmp/full.config has every option in selftests/config
ok 2 - 9.9.9-fake: selftests/test_topology.sh
ok 3 - 9.9.9-fake: selftests/test_report.sh
ok 4 - 9.9.9-fake: selftests/test_lsm.sh
1..4" || tap_diag "$out"
vm_dir=$(ls -d "$SL_VM_DIR"/custom-*)
tap_is "-s 2: the longest file in one VM, the other two in the other, each in the order given" \
	"$(grep -h '^TESTS=' "$vm_dir"/vm-1/guest.conf "$vm_dir"/vm-2/guest.conf)" \
	"TESTS=(selftests/test_topology.sh )
TESTS=(selftests/test_report.sh selftests/test_lsm.sh )"
tap_is "-s 2: which files each VM runs, and how long each ran, is said" \
	"$(grep -c -e '^# 9.9.9-fake: VM 1 of 2 runs 1 file(s): selftests/test_topology.sh$' \
		-e '^# 9.9.9-fake: VM 2 of 2 runs 2 file(s): selftests/test_report.sh selftests/test_lsm.sh$' \
		-e '^# 9.9.9-fake (VM [12] of 2): the VM ran [0-9]* s' <<<"$out")" 4
echo hang-lsm >"$tmp/guest"
out=$(vm_shared -t 3)
rc=$?
tap_is "-s 2, one VM hung: the other's file ok, the hung VM's two files not reported, exit 1" \
	"$rc:$(grep -E '^(not )?ok ' <<<"$out" | sed 's/ (console: .*)//; s/; console: .*)/)/')" \
	"1:ok 1 - 9.9.9-fake: config $tmp/full.config has every option in selftests/config
ok 2 - 9.9.9-fake: selftests/test_topology.sh
not ok 3 - 9.9.9-fake (VM 2 of 2): the VM did not finish in 3 s, killed (0 of 2 files done, none from selftests/test_report.sh selftests/test_lsm.sh)" ||
	tap_diag "$out"
tap_check "-s 2, one VM hung: said on stderr, the files it left without a line named" \
	grep -q '^vmtest: not ok: 9.9.9-fake (VM 2 of 2): the VM did not finish in 3 s, killed (0 of 2 files done, none from selftests/test_report.sh selftests/test_lsm.sh;' \
	"$tmp/stderr"
# a VM's Nth line is its Nth file's: one that names another file is no result for either
echo misname >"$tmp/guest"
out=$(vm_shared -t 30)
rc=$?
tap_is "-s 2, a VM naming another VM's file in its line: no line for either taken as its result, exit 1" \
	"$rc:$(grep -E '^(not )?ok ' <<<"$out" | sed 's/ (console: .*)//')" \
	"1:ok 1 - 9.9.9-fake: config $tmp/full.config has every option in selftests/config
ok 2 - 9.9.9-fake: selftests/test_topology.sh
ok 3 - 9.9.9-fake: selftests/test_lsm.sh
not ok 4 - 9.9.9-fake (VM 2 of 2): 2 of 2 test files reported; it reported selftests/test_topology.sh where selftests/test_report.sh was due; none from selftests/test_report.sh" ||
	tap_diag "$out"
# the table -s goes by: a line that is not "FILE SECONDS" stops vmtest before it boots anything
printf 'selftests/test_topology.sh 300\nselftests/test_lsm.sh 0\n' >"$tmp/bad-seconds"
rm -f "$tmp/boots"
out=$(SL_VM_SECONDS=$tmp/bad-seconds bash "$VMTEST" -K "$tmp/bzImage" -C "$tmp/full.config" -s 2 \
	selftests/test_topology.sh selftests/test_lsm.sh 2>&1)
tap_is "-s 2 with a bad line in the seconds table: exit 1, file and line named, nothing booted" \
	"$?:$(grep -c "^Bail out! vmtest: $tmp/bad-seconds:2: not \"selftests/FILE SECONDS\"" <<<"$out"):$(
		cat "$tmp/boots" 2>/dev/null | wc -l)" "1:1:0" || tap_diag "$out"
out=$(SL_VM_SECONDS=$tmp/no-seconds bash "$VMTEST" -K "$tmp/bzImage" -C "$tmp/full.config" -s 2 \
	selftests/test_topology.sh selftests/test_lsm.sh 2>&1)
tap_is "-s 2 with no seconds table: exit 1, named" \
	"$?:$(grep -c "$tmp/no-seconds: cannot read the file seconds table" <<<"$out")" "1:1"

# Killed, vmtest ends its emulators: one after the other, and two at once
echo hang >"$tmp/guest"
vm_killed() {
	local name=$1 want=$2 vpid pids left rc
	shift 2
	rm -f "$tmp/qemu.pids"
	PATH=$tmp/bin:$PATH bash "$VMTEST" -t 600 "$@" selftests/test_topology.sh >/dev/null 2>&1 &
	vpid=$!
	qemu_up() { [[ -f $tmp/qemu.pids && $(wc -l <"$tmp/qemu.pids") -ge $want ]]; }
	if ! wait_until 30000 qemu_up; then
		kill -KILL "$vpid" 2>/dev/null
		tap_fail "$name" "$want emulator(s) did not start"
		return
	fi
	pids=$(cat "$tmp/qemu.pids")
	kill -TERM "$vpid"
	wait "$vpid"
	rc=$?
	left=
	emulators_gone() {
		local p
		for p in $pids; do
			pid_running "$p" && return 1
		done
		return 0
	}
	wait_until 10000 emulators_gone || left=$pids
	# shellcheck disable=SC2086 # (pids: one per line)
	[[ -n $left ]] && kill -KILL $left 2>/dev/null
	tap_is "$name" "$rc:${left:-none left}" "143:none left"
}
vm_killed "vmtest killed while its guest runs: exit 143, the emulator gone" 1 -K "$tmp/bzImage" \
	-C "$tmp/full.config"
vm_killed "vmtest -j 2 killed: exit 143, both emulators gone" 2 -j 2 -k 6.1 -k 6.12
vm_killed "vmtest -s 2 killed: exit 143, both emulators of the kernel gone" 2 -s 2 \
	-K "$tmp/bzImage" -C "$tmp/full.config" selftests/test_lsm.sh
tap_check "vmtest -j 2 killed: its job files are gone" \
	bash -c "! ls -d '$SL_VM_DIR'/jobs.* 2>/dev/null"

tap_done
