#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The selftests on Debian's own kernels, in qemu: 6.1 (bookworm) and 6.12 (bookworm-backports).
#
#   selftests/vm/vmtest.sh [-k 6.1|6.12]… [-t SECONDS] [TEST…]
#
# TEST: selftests/test_*.sh files (default: every root selftest but test_vm.sh). Each kernel's
# image package comes from the machine's apt sources (apt-get download, cached in .output/vm);
# an initramfs of busybox and the virtio and 9p modules mounts this machine's root read-only over
# virtio-9p and hands over to selftests/vm/guest.sh there, which mounts what the tests need
# (tmpfs, cgroup2, bpffs), runs the tests through prove, prints "vmtest-result: N" and powers
# off. The build under test is this tree's .output, as built here: the binaries and the tests
# are the ones `make test` runs on this machine, the kernel is the only thing that differs.
#
# Output is TAP: one line per kernel and test file ("ok N - 6.1.0-57-amd64: selftests/test_x.sh",
# with "# SKIP why" where the test skipped there), prove's output as comments; "not ok" for a
# file that failed and for a kernel that could not be fetched or booted, or did not finish.
# Exits 1 if anything failed. Software emulation (TCG) makes the tests about ten times slower
# than on the host; -t bounds each VM (default 3600 s), SL_VM_FILE_TIMEOUT each test file in it
# (default 1800 s).
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VMDIR=$REPO/.output/vm
kernels=()
timeout_s=3600
file_timeout=${SL_VM_FILE_TIMEOUT:-1800}
tests=()

while getopts "k:t:" opt; do
	case $opt in
	k) kernels+=("$OPTARG") ;;
	t) timeout_s=$OPTARG ;;
	*)
		echo "usage: $0 [-k 6.1|6.12]… [-t SECONDS] [TEST…]" >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
tests=("$@")
[[ ${#kernels[@]} -gt 0 ]] || kernels=(6.1 6.12)
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

for tool in qemu-system-x86_64 busybox depmod apt-get apt-cache dpkg-deb xz gzip; do
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

# The initramfs: busybox, the modules that reach the root over virtio-9p (dependencies first,
# decompressed: busybox's insmod reads plain .ko), and selftests/vm/init.
initramfs() {
	local dir=$1 kv m d out=$1/initrd.gz tmp order=()
	kv=$(ls "$dir/lib/modules")
	local mods=$dir/lib/modules/$kv
	tmp=$(mktemp -d "$VMDIR/initramfs.XXXXXX") || return 1
	add_mod() {
		local dep
		for dep in $(awk -v m="$1" -F': ?' '$1 == m { print $2 }' "$mods/modules.dep"); do
			add_mod "$dep"
		done
		[[ " ${order[*]} " == *" $1 "* ]] || order+=("$1")
	}
	for m in virtio_pci:VIRTIO_PCI 9pnet_virtio:NET_9P_VIRTIO 9p:9P_FS; do
		d=$(awk -F: -v m="${m%:*}" '{ n = $1; sub(/.*\//, "", n); sub(/\.ko(\.[a-z]+)?$/, "", n) }
			n == m { print $1; exit }' "$mods/modules.dep")
		if [[ -n $d ]]; then
			add_mod "$d"
		elif ! grep -qx "CONFIG_${m#*:}=y" "$dir/boot/config-$kv"; then
			rm -rf "$tmp"
			echo "vmtest: $kv has no module ${m%:*}, nor is it built in" >&2
			return 1
		fi
	done
	mkdir -p "$tmp/bin" "$tmp/mods" "$tmp/proc" "$tmp/dev" "$tmp/host"
	cp "$busybox_bin" "$tmp/bin/busybox"
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
tap() {
	n=$((n + 1))
	echo "$1 $n - $2"
}

# One kernel: boot, run the tests, say what they said; 0 if they all passed (or skipped).
run_kernel() {
	local series=$1 pkg dir kv log rc file status why seen=0 failed=0
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
	if ! initramfs "$dir"; then
		tap "not ok" "$series: cannot build the initramfs for $pkg"
		return 1
	fi
	kv=$(ls "$dir/lib/modules")
	# what guest.sh runs: read over 9p, from this (read-only) tree
	{
		printf 'REPO=%q\n' "$REPO"
		printf 'KDIR=%q\n' "$dir"
		printf 'TESTS=(%s)\n' "$(printf '%q ' "${tests[@]}")"
		printf 'FILE_TIMEOUT=%q\n' "$file_timeout"
	} >"$dir/guest.conf"
	log=$dir/console.log
	# no network device (-nodefaults): the VM reaches nothing but its own namespaces
	timeout -k 10 "$timeout_s" qemu-system-x86_64 -machine q35 -accel tcg,thread=multi \
		-cpu max -smp 2 -m 3G -nographic -no-reboot -nodefaults -nic none -serial stdio \
		-kernel "$dir/boot/vmlinuz-$kv" -initrd "$dir/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet sluice_vm=$dir/guest.conf" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		</dev/null >"$log" 2>&1
	rc=$?
	tr -d '\r' <"$log" | sed -n '/vmtest: kernel /,/^vmtest-result: /p' |
		sed 's/.*\(vmtest: kernel \)/\1/; /^vmtest-file: /d; s/^/# /'
	while read -r _ file status why; do
		seen=$((seen + 1))
		case $status in
		ok) tap ok "$kv: $file" ;;
		skip) tap ok "$kv: $file # SKIP $why" ;;
		*)
			tap "not ok" "$kv: $file (console: $log)"
			failed=1
			;;
		esac
	done < <(tr -d '\r' <"$log" | grep '^vmtest-file: ')
	if ! tr -d '\r' <"$log" | grep -q '^vmtest-result: '; then
		if [[ $rc -eq 124 ]]; then
			tap "not ok" "$kv: the VM did not finish in $timeout_s s ($seen of ${#tests[@]} files done; console: $log)"
		else
			tap "not ok" "$kv: the VM ended without a result (qemu exit $rc; console: $log)"
		fi
		tail -n 20 "$log" | tr -d '\r' | sed 's/^/#   /'
		return 1
	fi
	if [[ $seen -ne ${#tests[@]} ]]; then
		tap "not ok" "$kv: $seen of ${#tests[@]} test files reported (console: $log)"
		return 1
	fi
	return $failed
}

mkdir -p "$VMDIR" || die "cannot create $VMDIR"
failed=0
for k in "${kernels[@]}"; do
	case $k in
	6.1 | 6.12) run_kernel "$k" || failed=1 ;;
	*) die "unknown kernel series \"$k\" (6.1 or 6.12)" ;;
	esac
done
echo "1..$n"
exit $failed
