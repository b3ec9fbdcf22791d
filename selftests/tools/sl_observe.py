#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sl_observe: the escape-probe kit's observer (selftests/probes/kit.sh). Runs in the namespace
# of the receiving test hosts and writes one line for every IP packet that arrives on IFACE,
# whatever its protocol and whether or not anything listens for it:
#
#   sl_observe.py --iface veth0 --log FILE --pidfile FILE
#
#   ip4|ip6 PROTO SRC SPORT DST DPORT LEN
#
# PROTO is tcp, udp, icmp, icmp6 or the protocol number; SPORT/DPORT are the ports, for ICMP
# echo requests and replies the echo id and the type ("-" when the packet has none). Packets
# the interface itself sends are not logged. The pid file appears once the socket is bound.
# A packet socket on the receiving side sees what got past every layer on the way (the
# sandbox's hooks, the host-side tc program, the router), not what the sandbox thinks it sent.
import argparse
import os
import signal
import socket
import struct
import sys

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
NAMES = {6: "tcp", 17: "udp", 1: "icmp", 58: "icmp6"}


def ports(proto, l4):
    if proto in (6, 17) and len(l4) >= 4:
        return struct.unpack("!HH", l4[:4])
    if proto in (1, 58) and len(l4) >= 6:
        typ = l4[0]
        if typ in (0, 8, 128, 129):
            return struct.unpack("!H", l4[4:6])[0], typ
        return "-", typ
    return "-", "-"


def parse(frame):
    et = struct.unpack("!H", frame[12:14])[0]
    p = frame[14:]
    if et == 0x8100 and len(frame) >= 18:
        et = struct.unpack("!H", frame[16:18])[0]
        p = frame[18:]
    if et == 0x0800 and len(p) >= 20:
        ihl = (p[0] & 15) * 4
        proto = p[9]
        src = socket.inet_ntop(socket.AF_INET, p[12:16])
        dst = socket.inet_ntop(socket.AF_INET, p[16:20])
        sp, dp = ports(proto, p[ihl:])
        return "ip4", proto, src, sp, dst, dp, len(p)
    if et == 0x86DD and len(p) >= 40:
        proto = p[6]
        src = socket.inet_ntop(socket.AF_INET6, p[8:24])
        dst = socket.inet_ntop(socket.AF_INET6, p[24:40])
        off = 40
        # hop-by-hop, routing, destination options: step over to the transport header
        while proto in (0, 43, 60) and len(p) >= off + 8:
            proto, off = p[off], off + (p[off + 1] + 1) * 8
        sp, dp = ports(proto, p[off:])
        return "ip6", proto, src, sp, dst, dp, len(p)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--pidfile", required=True)
    a = ap.parse_args()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((a.iface, 0))
    log = open(a.log, "a", buffering=1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    tmp = a.pidfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(tmp, a.pidfile)
    while True:
        frame, addr = s.recvfrom(65535)
        if addr[2] == PACKET_OUTGOING:
            continue
        r = parse(frame)
        if r:
            fam, proto, src, sp, dst, dp, n = r
            log.write(f"{fam} {NAMES.get(proto, proto)} {src} {sp} {dst} {dp} {n}\n")


if __name__ == "__main__":
    main()
