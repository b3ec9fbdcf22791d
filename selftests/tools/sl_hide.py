# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_hide: a TCP flow held where /proc/PID/fd does not show it, across a step the test takes.

  python3 sl_hide.py DIR MODE ADDR PORT

Connects to ADDR:PORT and sends "before\\n", then hides the socket:
  leader   the thread-group leader exits alone (SYS_exit): /proc/PID/fd lists nothing, while
           another thread holds the process's fd table (/proc/PID/task/TID/fd)
  unshare  a thread takes a private copy of the fd table (unshare(CLONE_FILES)) and the shared
           one closes the socket: only /proc/PID/task/TID/fd holds it
  inflight the socket is sent to the process itself over a unix socket (SCM_RIGHTS) and closed:
           no fd table holds it until "go", when it is received back
Through files in DIR, as tools/sl_hold.py: "ino" (the socket's inode), "pid", then "ready"; the
test makes "go"; the flow
sends 1000 bytes, and "result" says "MODE ok" or "MODE ERRNO_NAME" for the first send that failed.
"""
import ctypes
import errno
import os
import socket
import sys
import threading
import time

SYS_EXIT = 60  # x86_64: this thread only
CLONE_FILES = 0x400


def main():
    d, mode, addr, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    libc = ctypes.CDLL(None, use_errno=True)

    def touch(name, text=""):
        with open(d + "/" + name + ".tmp", "w") as f:
            f.write(text)
        os.rename(d + "/" + name + ".tmp", d + "/" + name)

    def use(sock):
        res = "ok"
        try:
            wait_go()
            sock.settimeout(5)
            for chunk in (b"A" * 500, b"B" * 500):
                sock.sendall(chunk)
                time.sleep(0.3)
        except OSError as e:
            res = errno.errorcode.get(e.errno, str(e))
        touch("result", mode + " " + res + "\n")
        os._exit(0)

    def wait_go():
        while not os.path.exists(d + "/go"):
            time.sleep(0.05)

    s = socket.create_connection((addr, port), timeout=5)
    s.sendall(b"before\n")
    touch("ino", str(os.fstat(s.fileno()).st_ino))
    if mode == "leader":
        threading.Thread(target=use, args=(s,)).start()
        touch("pid", str(os.getpid()))
        touch("ready")
        libc.syscall(SYS_EXIT, 0)
    elif mode == "unshare":
        box = {}
        fdn = s.fileno()

        def worker():
            if libc.unshare(CLONE_FILES):
                touch("result", mode + " unshare failed\n")
                os._exit(1)
            box["ok"] = 1
            use(socket.socket(fileno=fdn))

        t = threading.Thread(target=worker)
        t.start()
        while "ok" not in box:
            time.sleep(0.01)
        os.close(s.detach())  # gone from the leader's table
        touch("pid", str(os.getpid()))
        touch("ready")
        t.join()
    elif mode == "inflight":
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        socket.send_fds(a, [b"x"], [s.fileno()])
        s.close()  # only the message in b's queue holds it now
        touch("pid", str(os.getpid()))
        touch("ready")
        wait_go()
        _, fds, _, _ = socket.recv_fds(b, 1, 1)
        use(socket.socket(fileno=fds[0]))
    else:
        sys.exit("sl_hide: unknown mode " + mode)


main()
