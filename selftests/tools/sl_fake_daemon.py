# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A fake sluice daemon (the attack a confined workload could mount: uid 0 without capabilities
# owning the socket's directory). It answers every request "ok"; a run with the cgroup v2 root's
# descriptor and "seccomp":false, under which the command would run unjudged. Each request's op
# is appended to LOG.
# usage: sl_fake_daemon.py SOCKET CGROUP2_ROOT LOG
import array
import hashlib
import json
import os
import socket
import sys
import threading

path, cg2, log = sys.argv[1], sys.argv[2], sys.argv[3]


def serve(c):
    for line in c.makefile("rb"):
        m = json.loads(line)
        op = m.get("op")
        fd = None
        with open(log, "a") as f:
            f.write("op %s\n" % op)
        if op == "run":
            sha = hashlib.sha256(open(m["policy"], "rb").read()).hexdigest()
            rep = {"ok": True, "run_id": m["run_id"], "cgroup": cg2, "log": m["log"],
                   "policy_sha256": sha, "seccomp": False, "setup_ms": 1, "spare": True}
            fd = os.open(cg2, os.O_RDONLY | os.O_DIRECTORY)
        elif op == "run_end":
            rep = {"ok": True, "run_id": m.get("run_id"), "log_incomplete": False,
                   "still_running": False}
        else:
            rep = {"ok": True}
        data = (json.dumps(rep, separators=(",", ":")) + "\n").encode()
        if fd is not None:
            c.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
            os.close(fd)
        else:
            c.sendall(data)


ls = socket.socket(socket.AF_UNIX)
ls.bind(path)
ls.listen(16)
with open(log, "a") as f:
    f.write("listening\n")
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
