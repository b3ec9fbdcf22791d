#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sluice e2e: a link with a WAN's latency, in user space (the test machine's kernel has no netem).

usage: delayline.py MS TUN_A TUN_B

Makes two TUN devices, TUN_A and TUN_B, in the current netns, prints "ready", and from then on
writes every IP packet read from one to the other MS milliseconds after it arrived, in order,
both ways, until SIGTERM; the devices go with the process. e2e-lib.sh's e2e_wan_delay moves TUN_B
into registry.npmjs.org's netns and routes that host through the pair, so that it answers like a
distant registry while every other host stays one hop away. No bandwidth limit, no loss but a
full queue's (1000 packets a way, netem's default limit).
"""

import collections
import fcntl
import os
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
QUEUE_LIMIT = 1000


def tun_open(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: delayline.py MS TUN_A TUN_B")
    try:
        delay = int(sys.argv[1]) / 1000
    except ValueError:
        delay = -1
    if not 0 <= delay <= 10:
        sys.exit(f"delayline.py: MS '{sys.argv[1]}': want an integer from 0 to 10000")
    try:
        a, b = tun_open(sys.argv[2]), tun_open(sys.argv[3])
    except OSError as e:
        sys.exit(f"delayline.py: cannot make the TUN devices {sys.argv[2]}, {sys.argv[3]}: {e}")
    peer = {a: b, b: a}
    # Per device: the packets read from it, with when they are due on its peer.
    queue = {a: collections.deque(), b: collections.deque()}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("ready", flush=True)
    while True:
        now = time.monotonic()
        for fd, q in queue.items():
            while q and q[0][0] <= now:
                try:
                    os.write(peer[fd], q.popleft()[1])
                except OSError:
                    pass  # the peer is down: lost, as on a real link
        due = [q[0][0] for q in queue.values() if q]
        timeout = max(0.0, min(due) - now) if due else None
        ready, _, _ = select.select([a, b], [], [], timeout)
        t = time.monotonic()
        for fd in ready:
            while True:
                try:
                    pkt = os.read(fd, 65535)
                except OSError:
                    break  # EAGAIN: all read
                if len(queue[fd]) < QUEUE_LIMIT:
                    queue[fd].append((t + delay, pkt))


if __name__ == "__main__":
    main()
