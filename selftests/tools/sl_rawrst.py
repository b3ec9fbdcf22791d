# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_rawrst: TCP RST segments made by hand (a raw socket), and a test host that watches for them.

  python3 sl_rawrst.py send DST DPORT SPORT SEQ [PAYLOAD]
  python3 sl_rawrst.py watch DIR

send: one IPv4 TCP segment with RST and ACK set, SPORT -> DST:DPORT, sequence number SEQ (hex
or decimal), and PAYLOAD after its 20-byte header, through a raw IPPROTO_TCP socket (the kernel
writes the IP header, with its own source address). Prints "SEQ sent" or "SEQ ERRNO_NAME".

watch: on a raw IPPROTO_TCP socket (a copy of every TCP segment the namespace receives), writes
"SEQ FLAGS PAYLOAD_LEN" to DIR/seen for each IPv4 segment whose sequence number is one of
sl_rawrst's (0x51c0xxxx), after writing DIR/ready; ends when DIR/stop exists.
"""
import errno
import os
import select
import socket
import struct
import sys

MAGIC = 0x51C00000


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def send(dst, dport, sport, seq, payload):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    # the source address the kernel will write: the one its route to dst takes
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect((dst, dport))
    src = probe.getsockname()[0]
    probe.close()
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, 0x14, 0, 0, 0) + payload
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
    try:
        s.sendto(tcp, (dst, 0))
        print("%#x sent" % seq)
    except OSError as e:
        print("%#x %s" % (seq, errno.errorcode.get(e.errno, str(e.errno))))


def watch(d):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    open(d + "/ready", "w").close()
    with open(d + "/seen", "a") as out:
        while not os.path.exists(d + "/stop"):
            if not select.select([s], [], [], 0.05)[0]:
                continue
            pkt = s.recv(65535)
            ihl = (pkt[0] & 0x0F) * 4
            if len(pkt) < ihl + 20:
                continue
            seq = struct.unpack("!I", pkt[ihl + 4:ihl + 8])[0]
            if seq & 0xFFFF0000 != MAGIC:
                continue
            doff = (pkt[ihl + 12] >> 4) * 4
            out.write("%#x %#x %d\n" % (seq, pkt[ihl + 13], len(pkt) - ihl - doff))
            out.flush()


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5], 0),
             sys.argv[6].encode() if len(sys.argv) > 6 else b"")
    else:
        watch(sys.argv[2])
