#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Every CO-RE relocation of every BPF object sluice loads finds its type and field in the
# running kernel's BTF (libbpf's own matching, through bpftool gen min_core_btf). One that finds
# none becomes a poisoned call that the verifier refuses ("invalid func unknown#195896080")
# wherever that program loads: a program field read inside BPF_CORE_READ's arguments (a struct
# of sluice's own, which no kernel has) did that to the LSM layer on every kernel, unseen here,
# where the kernel refuses BPF LSM programs before verifying them. A crafted object with such a
# read shows that the check finds it. No root needed.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BTF=/sys/kernel/btf/vmlinux
command -v bpftool >/dev/null || skip_all "bpftool not installed (make deps)"
[[ -r $BTF ]] || skip_all "the kernel has no BTF at $BTF"
objs=("$REPO"/.output/bpf/*.linked.o)
[[ -f ${objs[0]} ]] || bail_out "no BPF objects in $REPO/.output/bpf (make all)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-core-relo.XXXXXX") || bail_out "mktemp failed"
trap 'rm -rf -- "$tmp"' EXIT

# The relocations of OBJ that libbpf finds no target for, one line each ("prog 'SEC': relo #N:
# <kind> [id] struct NAME.FIELD ..."), or "bpftool failed: ..." when it could not tell.
unresolved() {
	local out
	if ! out=$(bpftool -d gen min_core_btf "$BTF" "$tmp/min.btf" "$1" 2>&1); then
		echo "bpftool failed: $(grep -v '^libbpf: ' <<<"$out" | tail -n 3)"
		return
	fi
	awk '/relo #[0-9]+: </ { last = $0 }
		/relo #[0-9]+: no matching targets found/ { sub(/^libbpf: /, "", last); print last }' \
		<<<"$out"
}

# the check first, on an object that reads a field of its own struct inside BPF_CORE_READ
cat >"$tmp/bad.bpf.c" <<'EOF'
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
char LICENSE[] SEC("license") = "GPL";
struct own_cfg { int level; } own_cfg;
SEC("lsm/socket_connect")
int BPF_PROG(bad, struct socket *sock)
{
	return BPF_CORE_READ(sock, sk, sk_cgrp_data.cgroup, ancestors[own_cfg.level & 0xff]) != 0;
}
EOF
clang_bin=$(command -v clang-14 || command -v clang) || bail_out "clang not found (make deps)"
if "$clang_bin" -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$REPO/vmlinux/x86" -c "$tmp/bad.bpf.c" \
	-o "$tmp/bad.bpf.o" 2>"$tmp/cc.err"; then
	tap_check "the check finds a relocation against a struct no kernel has" \
		grep -q "struct own_cfg.level" <<<"$(unresolved "$tmp/bad.bpf.o")"
else
	tap_fail "the crafted object compiles" "$(cat "$tmp/cc.err")"
fi

for o in "${objs[@]}"; do
	out=$(unresolved "$o")
	tap_is "$(basename "$o"): every CO-RE relocation finds its target in $BTF" "$out" ""
done

tap_done
