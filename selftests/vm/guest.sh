#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# PID 1 of a selftest VM (selftests/vm/vmtest.sh), on the host's root mounted read-only over
# 9p: mounts what the tests write to and what sluice needs (tmpfs, cgroup2, bpffs), lets the
# kernel load its own modules from the unpacked image (the host has none of them), runs the
# tests named in the configuration file $1 through prove, says "vmtest-result: N" on the
# console and powers the VM off. Nothing here can reach a real network: the VM has no network
# device, and the tests build their own namespaces as on the host.
set -u
conf=$1

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# what udev or systemd makes on a booted machine: bash's process substitution needs /dev/fd
ln -sfn /proc/self/fd /dev/fd
for i in 0:stdin 1:stdout 2:stderr; do ln -sfn "/proc/self/fd/${i%%:*}" "/dev/${i#*:}"; done

# shellcheck source=/dev/null
. "$conf" # REPO, KDIR, TESTS, FILE_TIMEOUT, VERBOSE
# The tests write to tmpfs mounts of their own; a tree below one of them (a CI clone in /tmp, a
# kernel's modules in SL_VM_DIR=/tmp/…) is kept in sight: held under /mnt meanwhile, then put
# back at its own path. The tree, and the kernel's modules (KDIR, for modprobe).
mount -t tmpfs -o mode=0755 tmpfs /mnt
held=()
for p in "$REPO" "$KDIR"; do
	[[ -d $p ]] || continue
	mkdir "/mnt/${#held[@]}" && mount --bind "$p" "/mnt/${#held[@]}" && held+=("$p")
done
# (/var/lib/containers: podman's storage, which it opens read-write even to inspect a container)
for d in /run /tmp /var/tmp /root /var/lib/containers; do
	[[ -d $d ]] && mount -t tmpfs -o mode=0755 tmpfs "$d"
done
for i in "${!held[@]}"; do
	p=${held[$i]}
	if [[ $p -ef /mnt/$i ]]; then
		umount "/mnt/$i"
	else
		mkdir -p "$p" && mount --move "/mnt/$i" "$p"
	fi
done
umount /mnt
chmod 1777 /tmp /var/tmp /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
# as systemd does at boot (test_bench_quick's writer cgroup counts what the kernel charges a run);
# enabled now rather than by a test: under emulation, turning it on while other CPUs allocate
# once oopsed in the text patching of its static keys (int3 in kmem_cache_alloc)
echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
# the kernel's requests for modules (veth, nf_tables, sch_ingress…) go to the image's tree
mkdir -p /run/vm
printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "$KDIR" >/run/vm/modprobe
chmod 0755 /run/vm/modprobe
echo /run/vm/modprobe >/proc/sys/kernel/modprobe
ip link set lo up
hostname sluice-vm
# SL_SLOW: software emulation runs the tests about ten times slower; their waits are scaled
export HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin SLUICE_VM=1 SL_SLOW=${SL_SLOW:-5}

cd "$REPO" || exit 1
echo "vmtest: kernel $(uname -r), ${#TESTS[@]} test file(s)"
# what the kernel runs, not what its command line asked for: the host judges test_lsm.sh by it
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
echo "vmtest: active LSMs: $(cat /sys/kernel/security/lsm 2>/dev/null || echo unknown)"
# one prove per file, and one line the host reads for each: "vmtest-file: FILE ok|fail|skip WHY";
# one file that hangs must not take the others' time: each gets at most FILE_TIMEOUT s
failed=0
for t in "${TESTS[@]}"; do
	bash "$REPO/selftests/vm/prove-file.sh" "$t" "${FILE_TIMEOUT:-1800}" "${VERBOSE:-0}" ||
		failed=1
done
echo "vmtest-result: $failed"
sync
sleep 1 # the serial line's last bytes, before the power goes
/bin/busybox poweroff -f
