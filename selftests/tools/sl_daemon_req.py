# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_daemon_req: one request on sluice daemon's socket, the first line of its reply.

  python3 sl_daemon_req.py [--all] SOCKET TEXT TIMEOUT_S [FD_PATH]

TEXT goes out byte for byte (a request line ends with "\\n": the caller writes it, so that a
test of a malformed request sends exactly what it means to), then the write side is shut, so
that a request cut short gets the daemon's answer ("truncated request") instead of a wait for
the rest. The first reply line, without its "\\n", goes to stdout as the daemon wrote it.
FD_PATH: a file opened read-only and sent with the request's first byte (SCM_RIGHTS), as
sluice run sends its --netns; O_PATH:FILE, FILE opened O_PATH instead (what a client must not
send). --all: every reply line until the daemon closes (TEXT of several
requests on one connection), not only the first.

The one client of the daemon's protocol for the selftests (lib.sh's sl_daemon_req, a client
that is not root, bench.py imports request()): a fix to it (a refusal the daemon answers and
closes on before it read everything, an encoding) reaches every test at once.
"""
import os
import socket
import sys


def request(path, data, timeout, send_fd=None, every=False):
    """data (bytes) on the daemon's socket at path, with the descriptor send_fd if not None;
    returns the first reply line (bytes, without "\\n"; empty when the daemon closed without a
    word), or with every, all the reply lines until the daemon closes."""
    s = socket.socket(socket.AF_UNIX)
    try:
        s.settimeout(timeout)
        s.connect(path)
        try:
            if send_fd is not None:
                data = data[socket.send_fds(s, [data], [send_fd]):]
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a refusal (not root, oversized) is answered at once, then the daemon closes
        reply = s.makefile("rb")
        return reply.read().rstrip(b"\n") if every else reply.readline().rstrip(b"\n")
    finally:
        s.close()


def main():
    args = sys.argv[1:]
    every = args[:1] == ["--all"]
    if every:
        args = args[1:]
    if len(args) not in (3, 4):
        sys.exit("usage: sl_daemon_req.py [--all] SOCKET TEXT TIMEOUT_S [FD_PATH]")
    fd = None
    if len(args) == 4:
        path, o_path = args[3], args[3].startswith("O_PATH:")
        fd = os.open(path[len("O_PATH:"):], os.O_PATH) if o_path else os.open(path, os.O_RDONLY)
    # fsencode: the argument's bytes as the shell passed them (UTF-8 or not)
    reply = request(args[0], os.fsencode(args[1]), float(args[2]), fd, every)
    sys.stdout.buffer.write(reply + b"\n")


if __name__ == "__main__":
    main()
