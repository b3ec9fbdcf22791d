# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_tlshold: TLS flows held across a step the test takes (a switch), then used.

  python3 sl_tlshold.py DIR ADDR NAME:PORT:SNI...

Each NAME connects to ADDR:PORT and sends a real ClientHello (Python's ssl, through memory
BIOs) naming SNI; the server is never heard (the test host counts bytes and answers nothing).
Then, through files in DIR as tools/sl_hold.py: "ready" once every ClientHello is sent; the
test makes "go"; each flow sends three TLS application-data records; "result" has one line per
NAME: "NAME ok", or "NAME ERRNO_NAME" for the first send that failed.
"""
import errno
import os
import socket
import ssl
import sys
import time


def client_hello(sni):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=sni)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def touch(d, name, text=""):
    with open(d + "/" + name + ".tmp", "w") as f:
        f.write(text)
    os.rename(d + "/" + name + ".tmp", d + "/" + name)


def main():
    d, addr = sys.argv[1], sys.argv[2]
    flows = []
    for spec in sys.argv[3:]:
        name, port, sni = spec.split(":")
        s = socket.create_connection((addr, int(port)), timeout=10)
        s.sendall(client_hello(sni))
        flows.append((name, s))
    touch(d, "ready")
    while not os.path.exists(d + "/go"):
        time.sleep(0.05)
    out = []
    for name, s in flows:
        res = "ok"
        try:
            for _ in range(3):
                s.sendall(b"\x17\x03\x03\x00\x05hello")
                time.sleep(0.2)
        except OSError as e:
            res = errno.errorcode.get(e.errno, str(e))
        out.append(name + " " + res)
    touch(d, "result", "\n".join(out) + "\n")


main()
