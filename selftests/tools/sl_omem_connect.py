#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_omem_connect.py HOST PORT [BYTES]: fill a TCP socket's option memory with TCP-MD5 keys, then
connect() it to HOST:PORT and, with BYTES, send that many. The socket storage sluice's connect
programs need is charged to the same memory (P29: what a workload does to leave a flow with no
state). Prints "sent KEYS" (BYTES given) or "connected KEYS", or "refused KEYS ERRNO"; KEYS is
how many keys fit (none: the kernel has no TCP_MD5SIG)."""
import socket
import struct
import sys

host, port = sys.argv[1], int(sys.argv[2])
send = int(sys.argv[3]) if len(sys.argv) > 3 else 0
s = socket.socket()
keys = 0
for i in range(65536):
    peer = struct.pack("=HH4s", socket.AF_INET, 0, bytes([10, 99, i >> 8, i & 255])) + bytes(120)
    try:  # TCP_MD5SIG (14): struct tcp_md5sig, a one-byte key
        s.setsockopt(socket.IPPROTO_TCP, 14, peer + struct.pack("=BBHI", 0, 0, 1, 0) + b"k" +
                     bytes(79))
    except OSError:
        break
    keys += 1
s.settimeout(5)
try:
    s.connect((host, port))
    if send:
        s.sendall(b"x" * send)
    print("sent" if send else "connected", keys)
except OSError as e:
    print("refused", keys, e.errno)
