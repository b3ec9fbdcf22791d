# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_rstform: TCP connections whose RST would carry what the workload chose, and a test host
that records every RST it receives, field by field.

  python3 sl_rstform.py hold DIR KIND ADDR PORT [KIND ADDR PORT ...]
  python3 sl_rstform.py watch DIR

hold: one TCP connection per KIND to ADDR:PORT, each with the options an attacker would use to
make the kernel's RST carry bits (test_reset_form.sh):
  v4opts  IP_TOS 0xb8, IP_TTL 7, SO_RCVBUF 1152 (the window), IP_MTU_DISCOVER DONT (no DF: a
          hashed IP ID)
  v6opts  IPV6_TCLASS 0xb8, IPV6_UNICAST_HOPS 7, SO_RCVBUF 1152, a flow label of its own (0x1xxxx)
          (IPV6_FLOWLABEL_MGR, IPV6_FLOWINFO_SEND)
  md5     TCP_MD5SIG with a key of the attacker's choice, set once connected (its options: a
          digest under that key)
  plain   none
  linger  SO_LINGER on, 0 s: its close sends the kernel's RST (the workload's own); bound to a
          port of its own first (a port bound by hand stays the socket's through the close, so
          the RST leaves with the socket's port)
Writes "KIND SPORT" lines to DIR/ports, then DIR/ready; when DIR/stop exists, tries one send on
each and writes "KIND ok" or "KIND ERRNO_NAME" to DIR/result. With a linger connection, it then
waits for DIR/close before it closes them (and ends).

watch: an AF_PACKET socket in the namespace (every frame its interfaces receive, before any of
its own filtering), writes one line per TCP segment with RST set to DIR/seen:
  FAMILY SRC SPORT DST DPORT tos=N ttl=N id=N frag=N label=N win=N urg=N flags=N opts=HEX
(IPv6: tos is the traffic class, ttl the hop limit, id and frag 0), after writing DIR/ready;
ends when DIR/stop exists.
"""
import errno
import os
import select
import socket
import struct
import sys
import time

SOL_IPV6 = 41
IPV6_FLOWLABEL_MGR = 32
IPV6_FLOWINFO_SEND = 33
TCP_MD5SIG = 14
IP_MTU_DISCOVER = 10
ETH_P_ALL = 3
LABEL = 0x10000 | (os.getpid() & 0xFFFF)  # its own: an exclusive label lingers after it


def connect(kind, addr, port):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    dst = (addr, port)
    if kind == "v4opts":
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0xB8)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 7)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1152)
        s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, 0)
    elif kind == "v6opts":
        s.setsockopt(SOL_IPV6, socket.IPV6_TCLASS, 0xB8)
        s.setsockopt(SOL_IPV6, socket.IPV6_UNICAST_HOPS, 7)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1152)
        # struct in6_flowlabel_req: dst, label, action GET, share EXCL, flags CREATE, ...
        req = socket.inet_pton(socket.AF_INET6, addr) + struct.pack(
            "!I", LABEL) + struct.pack("=BBHHHI", 0, 1, 1, 0, 0, 0)
        s.setsockopt(SOL_IPV6, IPV6_FLOWLABEL_MGR, req)
        s.setsockopt(SOL_IPV6, IPV6_FLOWINFO_SEND, 1)
        dst = (addr, port, LABEL, 0)
    elif kind == "linger":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.bind(("0.0.0.0", 20000 + os.getpid() % 20000))
    s.connect(dst)
    if kind == "md5":
        # struct tcp_md5sig: the peer's sockaddr_storage, flags, prefixlen, keylen, ifindex, key
        peer = struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + \
            socket.inet_aton(addr)
        key = b"attacker-chosen-key"
        md5 = peer.ljust(128, b"\0") + struct.pack("=BBHI", 0, 0, len(key), 0) + \
            key.ljust(80, b"\0")
        s.setsockopt(socket.IPPROTO_TCP, TCP_MD5SIG, md5)
    return s


def hold(d, specs):
    socks = []
    with open(d + "/ports", "w") as f:
        for i in range(0, len(specs), 3):
            kind, addr, port = specs[i], specs[i + 1], int(specs[i + 2])
            s = connect(kind, addr, port)
            socks.append((kind, s))
            f.write("%s %d\n" % (kind, s.getsockname()[1]))
    open(d + "/ready", "w").close()
    while not os.path.exists(d + "/stop"):
        time.sleep(0.05)
    with open(d + "/result", "w") as f:
        for kind, s in socks:
            try:
                s.send(b"after\n")
                f.write("%s ok\n" % kind)
            except OSError as e:
                f.write("%s %s\n" % (kind, errno.errorcode.get(e.errno, str(e.errno))))
    if any(kind == "linger" for kind, _ in socks):
        while not os.path.exists(d + "/close"):
            time.sleep(0.05)
    for _, s in socks:
        s.close()


def parse(frame):
    """The line for a TCP RST in an Ethernet frame, or None."""
    if len(frame) < 14:
        return None
    etype = struct.unpack("!H", frame[12:14])[0]
    ip = frame[14:]
    if etype == 0x0800 and len(ip) >= 20 and ip[9] == 6:
        hl = (ip[0] & 0x0F) * 4
        fam, src, dst = "ipv4", socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        tos, ttl = ip[1], ip[8]
        ipid, frag = struct.unpack("!HH", ip[4:8])
        label = 0
    elif etype == 0x86DD and len(ip) >= 40 and ip[6] == 6:
        hl = 40
        fam = "ipv6"
        src = socket.inet_ntop(socket.AF_INET6, ip[8:24])
        dst = socket.inet_ntop(socket.AF_INET6, ip[24:40])
        first = struct.unpack("!I", ip[0:4])[0]
        tos, label, ttl, ipid, frag = (first >> 20) & 0xFF, first & 0xFFFFF, ip[7], 0, 0
    else:
        return None
    th = ip[hl:]
    if len(th) < 20 or not th[13] & 0x04:
        return None
    sport, dport = struct.unpack("!HH", th[0:4])
    doff = (th[12] >> 4) * 4
    win, urg = struct.unpack("!H", th[14:16])[0], struct.unpack("!H", th[18:20])[0]
    return "%s %s %d %s %d tos=%d ttl=%d id=%d frag=%#x label=%#x win=%d urg=%d flags=%#x " \
        "opts=%s" % (fam, src, sport, dst, dport, tos, ttl, ipid, frag, label, win, urg, th[13],
                     th[20:doff].hex() or "-")


def watch(d):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    open(d + "/ready", "w").close()
    with open(d + "/seen", "a") as out:
        while not os.path.exists(d + "/stop"):
            if not select.select([s], [], [], 0.05)[0]:
                continue
            frame, where = s.recvfrom(65535)
            if where[2] == socket.PACKET_OUTGOING:
                continue
            line = parse(frame)
            if line:
                out.write(line + "\n")
                out.flush()


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3:])
    else:
        watch(sys.argv[2])
