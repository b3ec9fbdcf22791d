/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * UAPI constants the BPF programs need. vmlinux.h carries the kernel's types but not its
 * #defines (and only some enums), so they are written out once here.
 */
#ifndef SLUICE_NET_BPF_H
#define SLUICE_NET_BPF_H

/* the errnos a policy's deny_errno may name (policy.c errno_names) */
#define EPERM 1
#define EACCES 13
#define ENETUNREACH 101
#define ECONNREFUSED 111
#define EHOSTUNREACH 113

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define AF_NETLINK 16

#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define SOCK_RAW 3

#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_ARP 0x0806
#define ETH_P_IPV6 0x86DD

#define SOL_IP 0
#define IPPROTO_HOPOPTS 0
#define IPPROTO_ICMP 1
#define IPPROTO_IGMP 2
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define IPPROTO_IPV6 41
#define IPPROTO_ROUTING 43
#define IPPROTO_FRAGMENT 44
#define IPPROTO_ICMPV6 58
#define IPPROTO_DSTOPTS 60

#endif /* SLUICE_NET_BPF_H */
