#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The selftests in qemu, on Debian's own kernels, 6.1 (bookworm) and 6.12 (bookworm-backports),
# or on a kernel the caller built.
#
#   selftests/vm/vmtest.sh [-k 6.1|6.12]… [-K BZIMAGE [-M MODULES] [-C CONFIG]]
#                          [-m MEM] [-a APPEND] [-t SECONDS] [-j KERNELS] [-s VMS] [TEST…]
#
# TEST: selftests/test_*.sh files (default: every root selftest but test_vm.sh). Each Debian
# kernel's image package comes from the machine's apt sources (apt-get download, cached in
# .output/vm). -K boots the caller's kernel instead (the Debian ones only where -k names them):
# -M its modules, as `make modules_install INSTALL_MOD_PATH=DIR` leaves them (DIR, or its
# lib/modules/VERSION), without which the virtio and 9p drivers must be built in; -C its config,
# else the one built into the image (CONFIG_IKCONFIG) or beside the modules, which is checked
# against selftests/config (selftests/vm/config-check.sh) before the boot: one TAP line, that
# names each option lacking. -m the VM's memory (qemu -m, default 3G), -a what is added to the
# kernel's command line (after ours, so it can override it), -t the time limit of each VM in
# seconds (default 600 per test file it runs and 600 for the boot: 9 h for the whole suite): a
# guest that has not powered off by then is killed and fails. -j how many kernels boot at once
# (default 1, one after the other): each VM has two virtual CPUs and MEM, and a kernel's lines
# are printed, in the order the kernels were named, once every kernel has finished (a failure
# is said on stderr when it happens). -s how many VMs share out each kernel's test files and
# run at once (default 1): each VM gets the files that even out the seconds
# selftests/vm/file-seconds (SL_VM_SECONDS) says they take (the longest first, each to the VM
# with the fewest so far), and the time limit by the files it runs; a kernel's lines still come
# one per file in the order given. Under emulation one VM keeps little more than one core busy:
# -j 2 -s 2 (four VMs) wants four. vmtest killed (SIGTERM, SIGINT, SIGHUP) takes its emulators
# with it.
#
# An initramfs of busybox and the virtio and 9p modules mounts this machine's root read-only
# over virtio-9p and hands over to selftests/vm/guest.sh there, which mounts what the tests
# need (tmpfs, cgroup2, bpffs), runs the tests through prove, prints "vmtest-result: N" and
# powers off. The kernel boots with lsm=...,bpf (VM_LSM; the BPF LSM layer runs). The build
# under test is this tree's .output, as built here: the binaries and the tests are the ones
# `make test` runs on this machine, the kernel is the only thing that differs.
#
# Output is TAP: one line per kernel and test file ("ok N - 6.1.0-57-amd64: selftests/test_x.sh",
# with "# SKIP why" where the test skipped there, and "(N s)", how long the file took in the
# VM), prove's output as comments, and how long each VM ran; "not ok" for a
# file that failed, for test_lsm.sh skipping on a kernel that runs BPF LSM (the guest says its
# active LSMs), and for a kernel that could not be fetched or booted, or did not finish.
# Exits 1 if anything failed, 2 on a bad command line. Software emulation (TCG) makes the tests
# about ten times slower than on the host; SL_VM_FILE_TIMEOUT bounds each test file in the VM
# (default 1800 s). SL_VM_QEMU names the emulator (default qemu-system-x86_64). SL_VM_VERBOSE=1
# shows every TAP line of the guest's tests, not only what failed.
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VMDIR=${SL_VM_DIR:-$REPO/.output/vm}
QEMU=${SL_VM_QEMU:-qemu-system-x86_64}
LSMS=${VM_LSM:-landlock,lockdown,yama,apparmor,bpf}
kernels=()
timeout_s= # (default: by the number of test files in the VM, below)
file_timeout=${SL_VM_FILE_TIMEOUT:-1800}
parallel=1
shards=1
mem=3G
append=
custom=
custom_mods=
custom_config=
tests=()

usage() {
	[[ -n ${1:-} ]] && echo "vmtest: $1" >&2
	echo "usage: $0 [-k 6.1|6.12]… [-K BZIMAGE [-M MODULES] [-C CONFIG]] [-m MEM] [-a APPEND]" \
		"[-t SECONDS] [-j KERNELS] [-s VMS] [TEST…]" >&2
	exit 2
}

while getopts "k:K:M:C:m:a:t:j:s:" opt; do
	case $opt in
	k)
		[[ $OPTARG == 6.1 || $OPTARG == 6.12 ]] ||
			usage "unknown kernel series \"$OPTARG\" (6.1 or 6.12; -K for a kernel of your own)"
		kernels+=("$OPTARG")
		;;
	K) custom=$OPTARG ;;
	M) custom_mods=$OPTARG ;;
	C) custom_config=$OPTARG ;;
	m) mem=$OPTARG ;;
	a) append=$OPTARG ;;
	t) timeout_s=$OPTARG ;;
	j) parallel=$OPTARG ;;
	s) shards=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
tests=("$@")
# bad arguments are the caller's to fix: said before anything is fetched or booted
[[ -z $timeout_s || $timeout_s =~ ^[1-9][0-9]*$ ]] || usage "the time limit (-t, VM_TIMEOUT) \"$timeout_s\" is not a number of seconds"
[[ $parallel =~ ^[1-9][0-9]?$ ]] || usage "the kernels at once (-j, VM_JOBS) \"$parallel\" is not a number from 1 to 99"
[[ $shards =~ ^[1-9][0-9]?$ ]] || usage "the VMs per kernel (-s, VM_SHARDS) \"$shards\" is not a number from 1 to 99"
[[ $mem =~ ^[1-9][0-9]*[MG]?$ ]] || usage "the memory (-m, VM_MEM) \"$mem\" is not a size like 3G or 2048M"
[[ $append != *$'\n'* ]] || usage "the command line (-a, VM_APPEND) has a newline"
if [[ -n $custom ]]; then
	[[ -e $custom ]] || usage "KERNEL=$custom: no such file"
	[[ -f $custom && -r $custom ]] || usage "KERNEL=$custom: not a readable file (a bzImage)"
	custom=$(realpath "$custom")
	if [[ -n $custom_mods ]]; then
		[[ -d $custom_mods ]] || usage "MODULES=$custom_mods: no such directory"
		custom_mods=$(realpath "$custom_mods")
	fi
	if [[ -n $custom_config ]]; then
		[[ -f $custom_config && -r $custom_config ]] || usage "CONFIG=$custom_config: no such readable file"
		custom_config=$(realpath "$custom_config")
	fi
elif [[ -n $custom_mods || -n $custom_config ]]; then
	usage "MODULES= and CONFIG= go with KERNEL= (-K)"
fi
[[ ${#kernels[@]} -gt 0 || -n $custom ]] || kernels=(6.1 6.12)
declare -A given=()
for t in "${tests[@]}"; do
	[[ -f $REPO/$t ]] || usage "$t: no such test file (give it relative to the repository, selftests/test_x.sh)"
	# a file's line is its result: one file given twice would have two lines for one name
	[[ -z ${given[$t]:-} ]] || usage "$t: given twice"
	given[$t]=1
done
if [[ ${#tests[@]} -eq 0 ]]; then
	for t in "$REPO"/selftests/test_*.sh; do
		[[ $(basename "$t") == test_vm.sh ]] || tests+=("selftests/$(basename "$t")")
	done
fi

echo "TAP version 13"
die() {
	echo "Bail out! vmtest: $*"
	exit 1
}

needed=("$QEMU" busybox gzip)
[[ ${#kernels[@]} -gt 0 ]] && needed+=(depmod apt-get apt-cache dpkg-deb xz)
for tool in "${needed[@]}"; do
	command -v "$tool" >/dev/null || die "$tool not found (make deps installs the VM packages)"
done
[[ -x $REPO/.output/sluice ]] || die "$REPO/.output/sluice not built (make)"
# the initramfs has no libraries: busybox must be busybox-static's
busybox_bin=$(command -v busybox)
ldd "$busybox_bin" 2>&1 | grep -q 'not a dynamic' || die "$busybox_bin is not static (busybox-static)"

# The image package for a series, as the machine's apt sources name it: the generic amd64
# flavour (its 9p and virtio drivers are modules, which the initramfs loads).
kernel_package() {
	local series=$1
	apt-cache show linux-image-amd64 2>/dev/null | awk -v s="$series" '
		BEGIN { RS = ""; FS = "\n" }
		{
			v = ""; d = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^Version: /) v = substr($i, 10)
				if ($i ~ /^Depends: /) d = substr($i, 10)
			}
			bpo = v ~ /bpo/
			if (index(v, s ".") != 1 || (s == "6.12") != bpo) next
			split(d, deps, /[ ,]/)
			print v, deps[1]
		}' | sort -V | tail -n 1 | cut -d' ' -f2
}

# Fetch and unpack one kernel into $VMDIR/PKG: boot/vmlinuz-*, lib/modules/KV (with modules.dep).
kernel_tree() {
	local pkg=$1 dir=$VMDIR/$1
	if [[ ! -f $dir/.unpacked ]]; then
		mkdir -p -m 0755 "$VMDIR/deb" "$dir" || return 1
		chmod 0755 "$VMDIR/deb"
		if ! ls "$VMDIR/deb/${pkg}_"*.deb >/dev/null 2>&1; then
			# as root: the cache stays root's own (apt's sandbox user would need it writable)
			(cd "$VMDIR/deb" && apt-get download -q -o APT::Sandbox::User=root "$pkg") \
				>"$VMDIR/deb/$pkg.log" 2>&1 || {
				cat "$VMDIR/deb/$pkg.log" >&2
				return 1
			}
		fi
		dpkg-deb -x "$VMDIR/deb/${pkg}_"*.deb "$dir" || return 1
		depmod -b "$dir" "$(ls "$dir/lib/modules")" || return 1
		touch "$dir/.unpacked"
	fi
}

# The initramfs OUT: busybox, the modules that reach the root over virtio-9p (dependencies
# first, decompressed: busybox's insmod reads plain .ko), and selftests/vm/init. MODS: the
# kernel's lib/modules/VERSION, or "" when it has none (each driver must then be built in);
# CONFIG: its config, or "" (unknown: a driver neither a module nor built in shows at boot).
initramfs() {
	local out=$1 mods=$2 config=$3 m d tmp order=()
	tmp=$(mktemp -d "$VMDIR/initramfs.XXXXXX") || return 1
	add_mod() {
		local dep
		for dep in $(awk -v m="$1" -F': ?' '$1 == m { print $2 }' "$mods/modules.dep"); do
			add_mod "$dep"
		done
		[[ " ${order[*]} " == *" $1 "* ]] || order+=("$1")
	}
	for m in virtio_pci:VIRTIO_PCI 9pnet_virtio:NET_9P_VIRTIO 9p:9P_FS; do
		d=
		if [[ -n $mods ]]; then
			d=$(awk -F: -v m="${m%:*}" '{ n = $1; sub(/.*\//, "", n); sub(/\.ko(\.[a-z]+)?$/, "", n) }
				n == m { print $1; exit }' "$mods/modules.dep")
		fi
		if [[ -n $d ]]; then
			add_mod "$d"
		elif [[ -n $config ]] && ! grep -qx "CONFIG_${m#*:}=y" "$config"; then
			rm -rf "$tmp"
			echo "vmtest: the kernel has no module ${m%:*}, nor is CONFIG_${m#*:} built in" >&2
			return 1
		fi
	done
	mkdir -p "$tmp/bin" "$tmp/mods" "$tmp/proc" "$tmp/dev" "$tmp/host"
	cp "$busybox_bin" "$tmp/bin/busybox"
	: >"$tmp/mods/order"
	for m in "${order[@]}"; do
		d=$(basename "$m")
		d=${d%.xz}
		d=${d%.zst}
		case $m in
		*.xz) xz -dc "$mods/$m" >"$tmp/mods/$d" ;;
		*.zst) zstd -qdc "$mods/$m" >"$tmp/mods/$d" ;;
		*) cp "$mods/$m" "$tmp/mods/$d" ;;
		esac || return 1
		echo "$d" >>"$tmp/mods/order"
	done
	cp "$REPO/selftests/vm/init" "$tmp/init"
	chmod 0755 "$tmp/init"
	(cd "$tmp" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out.tmp" &&
		mv "$out.tmp" "$out"
	rm -rf "$tmp"
}

n=0
# A failure is said on stderr as well: prove shows a test file's stderr, not its TAP comments,
# so a CI log names the kernel and the reason without a verbose run.
tap() {
	n=$((n + 1))
	echo "$1 $n - $2"
	[[ $1 == "not ok" ]] && echo "vmtest: not ok: $2" >&2
	return 0
}

# The config a bzImage carries (CONFIG_IKCONFIG), to OUT: the image's payload decompressed
# from each place a gzip, xz or zstd stream may start, searched for the "IKCFG_ST" marker that
# precedes the gzipped config (as the kernel's scripts/extract-ikconfig does). 1 if it has none.
embedded_config() {
	python3 - "$1" "$2" <<'PY'
import gzip, lzma, subprocess, sys, zlib
img = open(sys.argv[1], "rb").read()

def ikconfig(blob):
	i = blob.find(b"IKCFG_ST")
	if i < 0:
		return None
	try:
		return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(blob[i + 8:])
	except zlib.error:
		return None

cfg = ikconfig(img)
for magic, unpack in ((b"\x1f\x8b\x08", lambda b: zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(b)),
		(b"\xfd7zXZ\x00", lambda b: lzma.LZMADecompressor().decompress(b)),
		(b"\x28\xb5\x2f\xfd", lambda b: subprocess.run(["zstd", "-qdc"], input=b,
			capture_output=True).stdout)):
	at = img.find(magic)
	while cfg is None and at >= 0:
		try:
			cfg = ikconfig(unpack(img[at:]))
		except Exception:
			pass
		at = img.find(magic, at + 1)
if cfg is None:
	sys.exit(1)
open(sys.argv[2], "wb").write(cfg)
PY
}

# The version a bzImage says it is (its setup header's kernel_version string), or "".
image_version() {
	local off
	off=$(od -An -j 0x20e -N 2 -t u2 "$1" 2>/dev/null | tr -d ' ')
	[[ -n $off && $off -gt 0 ]] || return 0
	dd if="$1" bs=1 skip=$((off + 0x200)) count=128 status=none 2>/dev/null | tr '\0' '\n' |
		head -n 1 | cut -d' ' -f1 | tr -cd 'A-Za-z0-9._+-'
}

# The seconds each test file takes under emulation (selftests/vm/file-seconds, or SL_VM_SECONDS),
# by which -s shares a kernel's files out among its VMs; a file not listed counts 120 s. A table
# that cannot be read, or a line that is not "selftests/FILE SECONDS" (seconds from 1), stops
# vmtest before anything boots, the file and line named.
declare -A file_secs=()
load_file_seconds() {
	local table=${SL_VM_SECONDS:-$REPO/selftests/vm/file-seconds} line f s rest n=0
	[[ -f $table && -r $table ]] || die "$table: cannot read the file seconds table (SL_VM_SECONDS)"
	while IFS= read -r line || [[ -n $line ]]; do
		n=$((n + 1))
		[[ -z $line || $line == '#'* ]] && continue
		read -r f s rest <<<"$line"
		[[ $f == selftests/* && $s =~ ^[1-9][0-9]*$ && -z $rest && $line != *$'\r'* ]] ||
			die "$table:$n: not \"selftests/FILE SECONDS\" (seconds a whole number from 1): $line"
		file_secs[$f]=$s
	done <"$table"
}

# Share the test files out among COUNT VMs: the longest first, each to the VM with the fewest
# seconds so far (ties: the earlier VM). Prints, for each file in the order given, the number of
# its VM (0 to COUNT-1); each VM then runs its files in that order.
share_out() {
	local count=$1 i k best
	local -a load=() vm_of=()
	for ((k = 0; k < count; k++)); do load[k]=0; done
	while read -r _ i; do
		best=0
		for ((k = 1; k < count; k++)); do
			[[ ${load[k]} -lt ${load[best]} ]] && best=$k
		done
		load[best]=$((load[best] + ${file_secs[${tests[i]}]:-120}))
		vm_of[i]=$best
	done < <(for i in "${!tests[@]}"; do echo "${file_secs[${tests[i]}]:-120} $i"; done |
		sort -k1,1nr -k2,2n)
	printf '%s\n' "${vm_of[@]}"
}

# Boot one VM and run FILES in it: DIR gets guest.conf, console.log and qemu.rc (qemu's exit
# status). NAME names the VM in its comment line; LIMIT is its time limit in seconds.
boot_vm() {
	local name=$1 image=$2 initrd=$3 kdir=$4 dir=$5 limit=$6 log rc attempt start=$SECONDS
	shift 6
	# what guest.sh runs: read over 9p, from this (read-only) tree
	{
		printf 'REPO=%q\n' "$REPO"
		printf 'KDIR=%q\n' "$kdir"
		printf 'TESTS=(%s)\n' "$(printf '%q ' "$@")"
		printf 'FILE_TIMEOUT=%q\n' "$file_timeout"
		printf 'VERBOSE=%q\n' "${SL_VM_VERBOSE:-0}"
	} >"$dir/guest.conf"
	log=$dir/console.log
	rm -f "$dir/console.first.log" "$dir/qemu.rc"
	# no network device (-nodefaults): the VM reaches nothing but its own namespaces. A guest
	# that hangs is killed at the time limit (-k: SIGKILL 10 s after the SIGTERM). A guest that
	# ends early without a result (a crash under emulation, a panic) is booted once more, its
	# first console kept and its end said on stderr, so the CI log shows what happened; a
	# second such end, or a hang, fails.
	for attempt in 1 2; do
		timeout -k 10 "$limit" "$QEMU" -machine q35 -accel tcg,thread=multi \
			-cpu max -smp 2 -m "$mem" -nographic -no-reboot -nodefaults -nic none -serial stdio \
			-kernel "$image" -initrd "$initrd" \
			-append "console=ttyS0 panic=-1 quiet lsm=$LSMS sluice_vm=$dir/guest.conf $append" \
			-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
			</dev/null >"$log" 2>&1 &
		# waited for, not run in the foreground: a signal to vmtest reaches its trap (which
		# ends the emulator) now, not when the guest is done
		emulator=$!
		wait "$emulator"
		rc=$?
		emulator=
		echo "# $name: the VM ran $((SECONDS - start)) s (boot $attempt)"
		if [[ $attempt -eq 2 || $rc -eq 124 || $rc -eq 137 ]] ||
			tr -d '\r' <"$log" | grep -q '^vmtest-result: '; then
			break
		fi
		mv "$log" "$dir/console.first.log"
		{
			echo "vmtest: $name: the VM ended without a result (qemu exit $rc), booting it once more; the end of its console ($dir/console.first.log):"
			tail -n 30 "$dir/console.first.log" | tr -d '\r' | sed 's/^/vmtest:   /'
		} >&2
		echo "# $name: the first boot ended without a result (qemu exit $rc), booted once more"
	done
	echo "$rc" >"$dir/qemu.rc"
}

# Boot one kernel and run the tests in it, in one VM or, with -s, shared out among several that
# run at once; say what they said, one TAP line per file in the order given: 0 if they all
# passed (or skipped). LABEL names the kernel in the TAP lines; KDIR holds lib/modules/VERSION
# for the guest's modprobe; DIR gets guest.conf and console.log (with -s, DIR/vm-K each).
boot_kernel() {
	local label=$1 image=$2 initrd=$3 kdir=$4 dir=$5 count=$shards log rc file status why took
	local guest='' text lsms='' name k i j jobs_before=${#vm_jobs[@]} failed=0 lacking
	local -a vm_dirs=() vm_idx=() vm_pids=() vm_of=() files=() idx=() res=() res_why=()
	local -a res_secs=() res_log=() vm_bad=() vm_names=() vm_limits=()
	local -A secs=()
	[[ $count -le ${#tests[@]} ]] || count=${#tests[@]}
	if [[ $count -le 1 ]]; then
		vm_dirs=("$dir")
		vm_idx=("${!tests[*]}")
	else
		mapfile -t vm_of < <(share_out "$count")
		for ((k = 0; k < count; k++)); do
			vm_dirs[k]=$dir/vm-$((k + 1))
			vm_idx[k]=$(for i in "${!tests[@]}"; do
				[[ ${vm_of[i]} -eq $k ]] && printf '%s ' "$i"
			done)
			# every VM's directory before any VM starts: none is left running by a failure here
			if ! mkdir -p "${vm_dirs[k]}"; then
				tap "not ok" "$label: cannot create ${vm_dirs[k]}"
				return 1
			fi
		done
	fi
	for k in "${!vm_dirs[@]}"; do
		read -ra idx <<<"${vm_idx[k]}"
		files=()
		for i in "${idx[@]}"; do files+=("${tests[i]}"); done
		# what the VM is called in its lines, and its time limit (by the files it runs)
		vm_names[k]=$label
		[[ $count -gt 1 ]] && vm_names[k]+=" (VM $((k + 1)) of $count)"
		vm_limits[k]=${timeout_s:-$((600 * ${#files[@]} + 600))}
		if [[ $count -le 1 ]]; then
			boot_vm "${vm_names[k]}" "$image" "$initrd" "$kdir" "${vm_dirs[k]}" \
				"${vm_limits[k]}" "${files[@]}"
			continue
		fi
		echo "# $label: VM $((k + 1)) of $count runs ${#files[@]} file(s): ${files[*]}"
		# each VM a job of its own, which (killed) ends its emulator as vmtest does
		(
			trap 'stop 129' HUP
			trap 'stop 130' INT
			trap 'stop 143' TERM
			vm_jobs=()
			boot_vm "${vm_names[k]}" "$image" "$initrd" "$kdir" "${vm_dirs[k]}" \
				"${vm_limits[k]}" "${files[@]}"
		) >"${vm_dirs[k]}/boot.out" &
		vm_pids+=($!)
		vm_jobs+=($!)
	done
	if [[ $count -gt 1 ]]; then
		wait "${vm_pids[@]}"
		vm_jobs=("${vm_jobs[@]:0:jobs_before}")
		for k in "${!vm_dirs[@]}"; do
			cat "${vm_dirs[k]}/boot.out"
			rm -f "${vm_dirs[k]}/boot.out"
		done
	fi
	# What each guest said. Its files run one after the other in the order it was given them,
	# so its Nth "vmtest-file:" line is its Nth file's: a line that names another file (a
	# guest gone wrong) is that VM's failure, never a result for the file it names.
	for k in "${!vm_dirs[@]}"; do
		log=${vm_dirs[k]}/console.log
		read -ra idx <<<"${vm_idx[k]}"
		text=$(tr -d '\r' <"$log" 2>/dev/null | sed -n '/vmtest: kernel /,/^vmtest-result: /p' |
			sed 's/.*\(vmtest: kernel \)/\1/; /^vmtest-\(file\|time\): /d; s/^/# /')
		if [[ -n $text ]]; then
			[[ $count -gt 1 ]] && text="# VM $((k + 1)) of $count:"$'\n'$text
			guest+=${guest:+$'\n'}$text
		fi
		[[ -n $lsms ]] || lsms=$(tr -d '\r' <"$log" 2>/dev/null | sed -n 's/^vmtest: active LSMs: //p' | head -n 1)
		secs=()
		j=0
		while read -r what file status why; do
			if [[ $what == vmtest-time: ]]; then
				[[ $status =~ ^[0-9]+$ ]] && secs[$file]=$status
				continue
			fi
			if [[ $j -ge ${#idx[@]} ]]; then
				vm_bad[k]+="; it reported $file beyond the ${#idx[@]} file(s) it was given"
			elif [[ $file != "${tests[idx[j]]}" ]]; then
				vm_bad[k]+="; it reported $file where ${tests[idx[j]]} was due"
			else
				i=${idx[j]}
				res[i]=$status
				res_why[i]=$why
				res_secs[i]=${secs[$file]:-}
				res_log[i]=$log
			fi
			j=$((j + 1))
			unset "secs[$file]"
		done < <(tr -d '\r' <"$log" 2>/dev/null | grep -E '^vmtest-(time|file): ')
	done
	[[ -n $guest ]] && printf '%s\n' "$guest"
	for i in "${!tests[@]}"; do
		[[ -n ${res[i]:-} ]] || continue
		file=${tests[i]}
		took=${res_secs[i]:+ (${res_secs[i]} s)}
		why=${res_why[i]}
		case ${res[i]} in
		ok) tap ok "$label: $file$took" ;;
		skip)
			# the BPF LSM layer is what the VM is booted with lsm=...,bpf for: where the
			# kernel runs bpf among its LSMs, its test skipping is a failure
			if [[ $file == selftests/test_lsm.sh && ,$lsms, == *,bpf,* ]]; then
				why="skipped though the kernel runs BPF LSM (active LSMs: $lsms): $why"
				tap "not ok" "$label: $file$took $why"
				failed=1
			else
				tap ok "$label: $file$took # SKIP $why"
			fi
			;;
		*)
			tap "not ok" "$label: $file$took (console: ${res_log[i]})"
			failed=1
			;;
		esac
	done
	[[ $failed -eq 0 ]] || printf '%s\n' "$guest" >&2
	# each VM finished and reported every file it was given, in order, or it fails, naming
	# the files it left without a line
	for k in "${!vm_dirs[@]}"; do
		log=${vm_dirs[k]}/console.log
		rc=$(cat "${vm_dirs[k]}/qemu.rc" 2>/dev/null)
		read -ra idx <<<"${vm_idx[k]}"
		name=${vm_names[k]}
		lacking=
		for i in "${idx[@]}"; do
			[[ -n ${res[i]:-} ]] || lacking+=" ${tests[i]}"
		done
		j=$(tr -d '\r' <"$log" 2>/dev/null | grep -c '^vmtest-file: ')
		if ! tr -d '\r' <"$log" 2>/dev/null | grep -q '^vmtest-result: '; then
			if [[ $rc == 124 || $rc == 137 ]]; then
				tap "not ok" "$name: the VM did not finish in ${vm_limits[k]} s, killed ($j of ${#idx[@]} files done${lacking:+, none from$lacking}; console: $log)"
			else
				tap "not ok" "$name: the VM ended without a result (qemu exit ${rc:-unknown}${lacking:+, none from$lacking}; console: $log)"
			fi
			text=$(tail -n 20 "$log" 2>/dev/null | tr -d '\r' | sed 's/^/#   /')
			printf '%s\n' "$text"
			printf '%s\n' "$text" >&2
			failed=1
		elif [[ -n ${vm_bad[k]:-} || -n $lacking ]]; then
			why=${vm_bad[k]:-}
			[[ -n $lacking ]] && why+="; none from$lacking"
			tap "not ok" "$name: $j of ${#idx[@]} test files reported${why} (console: $log)"
			failed=1
		fi
	done
	return $failed
}

# A config against selftests/config: one TAP line, the options lacking as comments under it.
check_config() {
	local label=$1 config=$2 out rc
	out=$(bash "$REPO/selftests/vm/config-check.sh" "$config" 2>&1)
	rc=$?
	if [[ $rc -eq 0 ]]; then
		tap ok "$label: config $config has every option in selftests/config"
	else
		tap "not ok" "$label: config $config lacks options sluice needs (selftests/config)"
		printf '%s\n' "$out" | sed 's/^/#   /'
	fi
	return $rc
}

# One Debian kernel: fetch it, check its config, boot it.
run_debian() {
	local series=$1 pkg dir kv
	pkg=$(kernel_package "$series")
	if [[ -z $pkg ]]; then
		tap "not ok" "$series: no linux-image-amd64 of $series in the apt sources (6.12 is in bookworm-backports: make deps)"
		return 1
	fi
	dir=$VMDIR/$pkg
	if ! kernel_tree "$pkg"; then
		tap "not ok" "$series: cannot fetch or unpack $pkg"
		return 1
	fi
	kv=$(ls "$dir/lib/modules")
	if ! initramfs "$dir/initrd.gz" "$dir/lib/modules/$kv" "$dir/boot/config-$kv"; then
		tap "not ok" "$series: cannot build the initramfs for $pkg"
		return 1
	fi
	boot_kernel "$kv" "$dir/boot/vmlinuz-$kv" "$dir/initrd.gz" "$dir" "$dir"
}

# The caller's kernel: its modules and config found, the config checked, then booted (also
# when options lack: the tests that need them say so themselves).
run_custom() {
	local image=$1 mods=$2 config=$3 dir kv kdir=$VMDIR/none label failed=0
	dir=$VMDIR/custom-$(printf '%s' "$image" | sha256sum | cut -c1-12)
	mkdir -p "$dir" "$kdir" || {
		tap "not ok" "$image: cannot create $dir"
		return 1
	}
	kv=$(image_version "$image")
	if [[ -n $mods ]]; then
		if [[ -d $mods/lib/modules ]]; then
			[[ -d $mods/lib/modules/$kv ]] || kv=$(ls "$mods/lib/modules" | head -n 1)
			kdir=$mods
		else
			# MODULES is lib/modules/VERSION itself: the guest's modprobe -d wants its parent's parent
			kv=$(basename "$mods")
			kdir=$dir/modroot
			mkdir -p "$kdir/lib/modules" && ln -sfn "$mods" "$kdir/lib/modules/$kv"
		fi
		mods=$kdir/lib/modules/$kv
		if [[ ! -f $mods/modules.dep ]]; then
			tap "not ok" "$image: $mods has no modules.dep (make modules_install runs depmod)"
			return 1
		fi
	fi
	label=${kv:-$(basename "$image")}
	if [[ -z $config ]]; then
		if embedded_config "$image" "$dir/config" 2>/dev/null; then
			config=$dir/config
		elif [[ -n $mods && -f $mods/build/.config ]]; then
			config=$mods/build/.config
		fi
	fi
	if [[ -n $config ]]; then
		check_config "$label" "$config" || failed=1
	else
		echo "# $label: no CONFIG= given and none built into the image (CONFIG_IKCONFIG): not checked"
	fi
	if ! initramfs "$dir/initrd.gz" "$mods" "$config"; then
		tap "not ok" "$label: cannot build the initramfs"
		return 1
	fi
	boot_kernel "$label" "$image" "$dir/initrd.gz" "$kdir" "$dir" || failed=1
	return $failed
}

# Killed, vmtest ends what it started: the emulator it waits for (timeout passes the signal on
# to qemu) and, with -j, each kernel's job, which does the same for its own.
emulator=
vm_jobs=()
jobs_dir=
# shellcheck disable=SC2317 # (called by the traps below)
stop() {
	[[ -n $emulator ]] && kill -TERM "$emulator" 2>/dev/null
	[[ ${#vm_jobs[@]} -gt 0 ]] && kill -TERM "${vm_jobs[@]}" 2>/dev/null
	wait
	[[ -n $jobs_dir && $BASHPID -eq $$ ]] && rm -rf "$jobs_dir"
	exit "$1"
}
trap 'stop 129' HUP
trap 'stop 130' INT
trap 'stop 143' TERM

# One kernel of the list below: fetched, checked and booted.
run_kernel() {
	case $1 in
	debian:*) run_debian "${1#debian:}" ;;
	custom) run_custom "$custom" "$custom_mods" "$custom_config" ;;
	esac
}

mkdir -p "$VMDIR" || die "cannot create $VMDIR"
[[ $shards -eq 1 ]] || load_file_seconds
runs=()
for k in "${kernels[@]}"; do
	runs+=("debian:$k")
done
[[ -n $custom ]] && runs+=(custom)
failed=0
if [[ $parallel -eq 1 || ${#runs[@]} -eq 1 ]]; then
	for r in "${runs[@]}"; do
		run_kernel "$r" || failed=1
	done
else
	# Each kernel is a job of its own, its TAP lines (numbered from 1) kept in a file and
	# numbered on here, kernel after kernel, when all are done; its stderr goes straight out,
	# so a failure shows while the others run.
	jobs_dir=$(mktemp -d "$VMDIR/jobs.XXXXXX") || die "cannot create a directory in $VMDIR"
	for i in "${!runs[@]}"; do
		while [[ $(jobs -rp | wc -l) -ge $parallel ]]; do
			wait -n
		done
		echo "# ${runs[$i]#debian:}: started beside the others; its lines follow when all have finished"
		(
			trap 'stop 129' HUP
			trap 'stop 130' INT
			trap 'stop 143' TERM
			vm_jobs=() n=0
			run_kernel "${runs[$i]}"
			echo $? >"$jobs_dir/$i.rc"
		) >"$jobs_dir/$i.tap" &
		vm_jobs+=($!)
	done
	wait
	vm_jobs=()
	for i in "${!runs[@]}"; do
		while IFS= read -r line; do
			if [[ $line =~ ^(not\ )?ok\ [0-9]+\ -\ (.*)$ ]]; then
				n=$((n + 1))
				echo "${BASH_REMATCH[1]}ok $n - ${BASH_REMATCH[2]}"
			else
				printf '%s\n' "$line"
			fi
		done <"$jobs_dir/$i.tap"
		[[ $(cat "$jobs_dir/$i.rc" 2>/dev/null) == 0 ]] || failed=1
	done
	rm -rf "$jobs_dir"
fi
echo "1..$n"
exit $failed
