# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_hold: a workload that holds sockets across a step the test takes (an attach, a switch, a
move to another cgroup, a hand-over to another process), then uses them and says what happened.

  python3 sl_hold.py DIR [--tag TEXT] [--early TEXT] [--late] [--fork] [--wait-end]
                         [--send-to UNIXPATH | --recv-on UNIXPATH] SPEC...

SPEC is NAME:PROTO:ADDR:PORT; PROTO is tcp or udp, optionally PROTO@NETNS_PATH: the socket is
made (and, unless --late, connected) in that network namespace, then the holder goes back to its
own. ADDR is numeric; one with a ':' gets an AF_INET6 socket (so "::ffff:a.b.c.d" is v4-mapped).

The protocol with the test, through files in DIR:
  pid      the holder's pid, written first (the test may move it to another cgroup)
  ready    every socket exists (and is connected, unless --late); the holder waits for "go"
  go       (the test) use the sockets now
  result   one line per SPEC, in order: "NAME ok", or "NAME ERRNO_NAME" for the first call
           that failed (connect with --late, else either send)
  end      (the test, with --wait-end) close everything and exit

Without --late each socket is connected before "ready" and sends "TEXT\\n" then "again\\n" (TEXT
from --tag, default "held") at "go": a destroyed TCP socket may take a second send to notice.
With --late the sockets are made before "ready" and connected (TCP: non-blocking, 5 s) only at
"go": the test can change what judges them in between.
--early: each connected socket sends "TEXT\\n" before "ready" too (a flow already in use).
--fork: a child shares every socket until "end" (one socket, two holders).
--send-to: make the sockets (unconnected), hand them all over SCM_RIGHTS to the process
  listening on UNIXPATH, write "ready" and exit.
--recv-on: listen on UNIXPATH, write "listening", take the sockets a --send-to holder hands
  over (in SPEC order), write "ready", then behave as --late with them.
"""
import array
import ctypes
import errno
import os
import select
import socket
import sys
import time

CLONE_NEWNET = 0x40000000


def touch(d, name, text=""):
    with open(d + "/" + name + ".tmp", "w") as f:
        f.write(text)
    os.rename(d + "/" + name + ".tmp", d + "/" + name)


def wait_for(d, name):
    while not os.path.exists(d + "/" + name):
        time.sleep(0.05)


def parse(spec):
    name, proto, rest = spec.split(":", 2)
    addr, port = rest.rsplit(":", 1)
    netns = None
    if "@" in proto:
        proto, netns = proto.split("@", 1)
    if proto not in ("tcp", "udp"):
        sys.exit("sl_hold: %s: protocol must be tcp or udp" % spec)
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
    return name, fam, kind, addr, int(port), netns


def setns(path):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET):
            sys.exit("sl_hold: setns %s: %s" % (path, os.strerror(ctypes.get_errno())))
    finally:
        os.close(fd)


def connect(s, kind, addr, port):
    if kind == socket.SOCK_DGRAM:
        s.connect((addr, port))
        return
    s.setblocking(False)
    rc = s.connect_ex((addr, port))
    if rc == errno.EINPROGRESS:
        select.select([], [s], [], 5)
        rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if rc == 0:
            try:
                s.getpeername()
            except OSError:
                rc = errno.ETIMEDOUT
    if rc:
        raise OSError(rc, os.strerror(rc))
    s.setblocking(True)
    s.settimeout(5)


def make(specs, late):
    own = "/proc/self/ns/net"
    own_fd = os.open(own, os.O_RDONLY)
    socks = []
    for name, fam, kind, addr, port, netns in specs:
        if netns:
            setns(netns)
        s = socket.socket(fam, kind)
        if not late:
            connect(s, kind, addr, port)
        if netns:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.setns(own_fd, CLONE_NEWNET):
                sys.exit("sl_hold: setns back: " + os.strerror(ctypes.get_errno()))
        socks.append(s)
    os.close(own_fd)
    return socks


def receive(d, path, n):
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lst.bind(path)
    lst.listen(1)
    touch(d, "listening")
    c, _ = lst.accept()
    fds = array.array("i")
    _, anc, _, _ = c.recvmsg(16, socket.CMSG_LEN(n * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
    if len(fds) != n:
        sys.exit("sl_hold: received %d sockets, expected %d" % (len(fds), n))
    return [socket.socket(fileno=fd) for fd in fds]


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    d = args.pop(0)
    tag, late, fork, wait_end, send_to, recv_on = "held", False, False, False, None, None
    early = None
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--tag":
            tag = args.pop(0)
        elif opt == "--early":
            early = args.pop(0)
        elif opt == "--late":
            late = True
        elif opt == "--fork":
            fork = True
        elif opt == "--wait-end":
            wait_end = True
        elif opt == "--send-to":
            send_to, late = args.pop(0), True
        elif opt == "--recv-on":
            recv_on, late = args.pop(0), True
        else:
            sys.exit("sl_hold: unknown option " + opt)
    specs = [parse(a) for a in args]
    if not specs:
        sys.exit("sl_hold: no SPEC")
    touch(d, "pid", "%d\n" % os.getpid())
    socks = receive(d, recv_on, len(specs)) if recv_on else make(specs, late)
    if send_to:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(send_to)
        fds = array.array("i", [s.fileno() for s in socks])
        c.sendmsg([b"socks"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        c.close()
        touch(d, "ready")
        return
    if early is not None and not late:
        for s in socks:
            s.send(early.encode() + b"\n")
    child = 0
    if fork:
        child = os.fork()
        if child == 0:
            wait_for(d, "end")
            os._exit(0)
    touch(d, "ready")
    wait_for(d, "go")
    out = []
    for s, (name, _, kind, addr, port, _) in zip(socks, specs):
        try:
            if late:
                connect(s, kind, addr, port)
            s.send(tag.encode() + b"\n")
            time.sleep(0.3)
            s.send(b"again\n")
            out.append(name + " ok")
        except OSError as e:
            out.append(name + " " + errno.errorcode.get(e.errno, str(e.errno)))
    touch(d, "result", "\n".join(out) + "\n")
    if wait_end:
        wait_for(d, "end")
    for s in socks:
        s.close()
    if child:
        os.wait()


if __name__ == "__main__":
    main()
