// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Socket destruction for flows the packet layer denied (TLS server-name check): a TCP socket
 * iterator that destroys the sockets whose cookies userspace put in sl_kill, so the client's
 * pending calls fail at once (ECONNABORTED) instead of retransmitting into a drop.
 *
 * bpf_sock_destroy() is a kfunc of 6.5+; this object is loaded on its own so that on older
 * kernels only it fails to load, and the denied flow falls back to having every packet dropped.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "net.bpf.h"
#include "sluice.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

int bpf_sock_destroy(struct sock_common *sk) __ksym;

/*
 * Each cookie is there for one walk (loader_kill_socket), so the map is nearly always empty:
 * allocated on use. A cookie the kernel has no memory for fails the destroy, which the record
 * says; the packet layer drops the flow's packets all the same.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* socket cookie */
	/* SL_KILL_PENDING from userspace, then what the walk did (see sluice.h) */
	__type(value, __s32);
} sl_kill SEC(".maps");

SEC("iter/tcp")
int sl_destroy_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_common *sk = ctx->sk_common;
	__s32 *result;
	__u64 cookie;

	/*
	 * Reading a field makes clang emit struct sock_common in full: against a forward
	 * declaration libbpf finds the kfunc's prototype incompatible and leaves it unresolved.
	 */
	if (!sk || (sk->skc_family != AF_INET && sk->skc_family != AF_INET6))
		return 0;
	cookie = bpf_get_socket_cookie(sk);
	result = bpf_map_lookup_elem(&sl_kill, &cookie);
	if (result && *result == SL_KILL_PENDING)
		*result = bpf_sock_destroy(sk);
	return 0;
}
