#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""
make bench / make bench-quick (selftests/bench.sh runs this; root).

connect() and close() side by side, interleaved, on namespaces this script builds and removes:
every variant has a client namespace of its own with a veth to one server namespace, where a
spinning server (sl_bench spin: never sleeps, so no wake-up of it blurs the client's figures)
accepts on every address of 10.202.0.0/20 (a local route). Variants:
  none           no program, no rule
  sluice-N       a live sluice run (--netns: its host side too) whose policy has N CIDRs, its
                 learned-address map filled (64k); the workload is moved into its cgroup
  nftables-N     a set of the same N CIDRs matched by cgroup (socket cgroupv2) in the output hook
  tinyproxy      each connect() is an HTTP CONNECT through tinyproxy on the client's loopback
Workloads: hot (one destination, 10.202.0.1) and spread (cycling over the 4,096 addresses of
10.202.0.0/20, each a /32 of the 10k and 100k policies and sets, so each lookup ends deep in
the trie; the 10-CIDR policies hold the /20). Each round runs every variant once, in an order
that rotates; figures are the median over rounds of each round's ratio to that round's none
(median and p99), with the absolute medians, p99s and IRQ-work interrupts per connect. With
--compare, also each run of this build against the other build's run of the same policy, round
by round (the median of the per-round ratios, its quartiles, the rounds won): a before/after
that the no-program variant's noise does not enter.

Per packet on an established flow (issue 15: 60 ns over an empty program): a TCP connection from
each run's cgroup (and from a cgroup with empty programs at the same hooks, selftests/bench/
sl_empty.bpf.c) carrying many small writes, the kernel's BPF run-time statistics on: each
program's ns per run, over the empty program's at its hook, summed over a packet's way out and
in (Bench.packets says how).

Also: start-up (sluice run -- true, 10 and 100k CIDRs), attach through the daemon (taking one of
its spares, and with --spares 0 loading its own programs), memory per run (the bytes_memlock of
every map the run's programs and pins hold, plus the writer's RSS; fresh, and at the end with its
learned-address map filled; the writer's anonymous memory too),
each program's instruction count, the signed pipeline (records/s and the writer's CPU per record
from /proc/PID/task/*/schedstat, loss; then again with the writer stopped while the records are
sent, so that it drains them with no wait: the writer alone), the writer fed with no sender at
all (sl_feed: allow records put into the run's ring buffer by a program run with
BPF_PROG_TEST_RUN, selftests/bench/sl_feed.bpf.c): drained from a stopped writer, then paced at
issue 15's 500k records/s for 60 s into the run's default ring (records without a line: none
may be; a feed whose log would not fit its filesystem's free space, about 13 GB at that rate, is
skipped, saying why), and replace-policy between two 100k-CIDR policies on a live run with a process
connecting throughout (no connect may fail).

--writer-only: only the writer fed by sl_feed, drained --rounds times (3) for this build and,
with --compare, another's (before/after, interleaved), then paced (--feed-rate, --feed-secs).

--attach-only: only the daemon's attaches (--attaches: which), median and p90; with --compare,
another build's daemon beside this one's, their attaches interleaved (before/after).

--connect-programs: where connect() and close() go, program by program: the table's workloads
from each run's cgroup (and from one with the empty programs), the kernel's run-time statistics
on; per program its runs and ns per connect (the handshake's packets, the host side's, close()'s
release included).

--verifier-only: no namespace, no run: each program's verification by the kernel (instructions
processed, peak states, the verifier's own time) as sl_verifier loads the built objects, and a
second build's side by side (--compare-objs): what every start-up, spare and switch pays.

--quick (make bench-quick, CI): a short table for information, and the checks that are reliable
on a noisy two-core machine, held to selftests/bench-budgets.txt: instruction counts per
program, memory per run of a 10-CIDR policy, zero loss at a paced record rate. Never a time.
The memlock checks are skipped, saying why, where the kernel's memlock figure is an estimate of
the most a map could take rather than what it uses (before 6.4: Bench.memlock_estimated); the
writer's own memory cgroup (where cgroup2 has the controller) measures what the kernel charges
for the run instead, checked on every kernel.

Writes OUT/results.json and OUT/results.md (OUT: --out, default .output/bench or
.output/bench-quick). Exit 0, 1 if a check failed, 2 on a setup error.
"""
import argparse
import ctypes
import ipaddress
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess as sp
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.environ.get("SLUICE", f"{REPO}/.output/sluice")
TOOLS = os.environ.get("SL_TOOLS", f"{REPO}/.output/selftests")
BENCH = f"{TOOLS}/sl_bench"
FEED, FEED_OBJ = f"{TOOLS}/sl_feed", f"{TOOLS}/sl_feed.bpf.o"  # the writer's record source
BUDGETS = os.environ.get("BENCH_BUDGETS", f"{REPO}/selftests/bench-budgets.txt")

sys.path.insert(0, f"{REPO}/selftests/tools")
import sl_daemon_req  # noqa: E402 (the selftests' one client of the daemon's socket)

BPFFS = "/sys/fs/bpf"
PORT = 5001
PACKET_PORT = 5002  # the per-packet flow's (sl_bench serve: reads each connection to its end)
PACKET_PROGS = f"{TOOLS}/sl_empty.bpf.o"  # the per-packet figure's empty programs
HOT = "10.202.0.1"
SPREAD_BASE, SPREAD = "10.202.0.0", 4096
PROXY_PORT = 8888
ID = os.getpid()
# The fed writer's log must fit where it goes (writer_feed_fits): the records it will be fed at
# the bytes per record measured (before any measure, an allow line's upper bound: they run about
# 410 bytes), times the margin, plus the reserve (its checkpoints file, whatever else writes there
# meanwhile).
FEED_BYTES_PER_RECORD_BOUND = 1024
FEED_SPACE_MARGIN = 1.25
FEED_SPACE_RESERVE = 64 << 20


class SetupError(Exception):
    pass


class Terminated(BaseException):
    """SIGTERM: bench.py ends the way it ends on Ctrl-C, through its cleanup."""


def on_sigterm(signum, frame):
    raise Terminated()


def run(*cmd, check=True, capture=True, timeout=600, **kw):
    r = sp.run([str(c) for c in cmd], stdout=sp.PIPE if capture else None,
               stderr=sp.PIPE if capture else None, text=True, timeout=timeout, **kw)
    if check and r.returncode:
        raise SetupError(f"{' '.join(map(str, cmd))[:200]}: exit {r.returncode}: "
                         f"{(r.stderr or '')[-400:]}")
    return r


def cgroup2_root():
    for line in open("/proc/self/mountinfo"):
        f = line.split()
        if f[f.index("-") + 1] == "cgroup2":
            return f[4]
    raise SetupError("no cgroup2 mount")


def softirq_total(kind):
    """The kernel's count of softirqs of kind (RCU: callbacks, e.g. frees after a grace period)."""
    for line in open("/proc/softirqs"):
        f = line.split()
        if f and f[0] == f"{kind}:":
            return sum(int(x) for x in f[1:] if x.isdigit())
    return 0


def iwi_total():
    for line in open("/proc/interrupts"):
        f = line.split()
        if f and f[0] == "IWI:":
            return sum(int(x) for x in f[1:] if x.isdigit())
    return 0


def sched_threads(pid):
    """CPU time of each thread of pid, ns, from schedstat (not 10 ms ticks): {tid: ns}."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(t)] = int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def sched_ns(pid):
    """CPU time of every thread of pid, ns."""
    return sum(sched_threads(pid).values())


def pctl(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(len(v) * q + 0.5) - 1))]


T0 = time.monotonic()


def say(what):
    print(f"[{time.monotonic() - T0:6.1f}s] {what}", flush=True)


class BpfStats:
    """The kernel's run-time statistics of BPF programs (run_cnt, run_time_ns) on while held:
    BPF_ENABLE_STATS, whose file descriptor keeps them on until it is closed, by this process's
    end too, however it ends (kernel.bpf_stats_enabled is left as it was). Each program run then
    costs two clock reads more, which the per-packet figure subtracts (Bench.packets)."""
    SYS_BPF = {"x86_64": 321, "aarch64": 280}
    BPF_ENABLE_STATS, BPF_STATS_RUN_TIME = 32, 0

    def __enter__(self):
        nr = self.SYS_BPF.get(platform.machine())
        if nr is None:
            raise SetupError(f"bpf(2)'s number on {platform.machine()} is not known here")
        libc = ctypes.CDLL(None, use_errno=True)
        attr = (ctypes.c_uint32 * 2)(self.BPF_STATS_RUN_TIME, 0)
        self.fd = libc.syscall(nr, self.BPF_ENABLE_STATS, attr, ctypes.sizeof(attr))
        if self.fd < 0:
            raise SetupError(f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}")
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


class Bench:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="sluice-bench.")
        os.chmod(self.tmp, 0o755)
        self.undo = []
        self.cg2 = cgroup2_root()
        self.procs = []
        self.results = {"id": ID, "quick": a.quick, "rounds": a.rounds, "connects": a.connects,
                        "sizes": a.sizes}
        self.checks = []
        self.key = f"{self.tmp}/host.key"
        self.nclients = 0
        self.runs, self.compare_runs = {}, {}  # CIDRs: a live sluice run (sluice_up)
        self.peers = {}  # client namespace: its veth's peer (the host side) in the server's

    # -- topology ---------------------------------------------------------------------------
    def netns(self, name):
        run("ip", "netns", "add", name)
        self.undo.append(lambda: run("ip", "netns", "del", name, check=False))

    def cgroup(self, name):
        path = f"{self.cg2}/{name}"
        os.mkdir(path)

        def rm():
            try:
                open(f"{path}/cgroup.kill", "w").write("1")
            except OSError:
                pass
            for _ in range(100):
                try:
                    os.rmdir(path)
                    return
                except OSError:
                    time.sleep(0.05)
        self.undo.append(rm)
        return path

    def writer_cgroup(self, name):
        """A cgroup of the writer's own, its memory controller on: a map's memory (and a
        program's) is charged to the cgroup of the process that made it, so the cgroup's kernel
        memory is what the run's maps and programs take, where the kernel's memlock figure is an
        estimate (memlock_estimated). None where the cgroup2 root does not enable the memory
        controller for its children (systemd does; the bench leaves the host's set-up alone)."""
        if "memory" not in open(f"{self.cg2}/cgroup.subtree_control").read().split():
            return None
        return self.cgroup(name)

    @staticmethod
    def kernel_charged(cg):
        """The kernel memory charged to cgroup cg (memory.stat's kernel: slab, vmalloc, per-CPU,
        page tables, stacks): its processes' maps and programs foremost."""
        st = dict(line.split() for line in open(f"{cg}/memory.stat"))
        if "kernel" in st:
            return int(st["kernel"])
        return int(open(f"{cg}/memory.current").read()) - int(st["anon"]) - int(st["file"])

    def bg(self, cmd, out, env=None, cgroup=None):
        def into_cgroup():
            open(f"{cgroup}/cgroup.procs", "w").write("0")
            # 4 KiB pages whatever the kernel's THP policy (Debian's: always): a huge page
            # under the writer's heap once added 2 MiB to its anonymous memory (inherited)
            ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
        p = sp.Popen([str(c) for c in cmd], stdout=open(out, "w"), stderr=sp.STDOUT,
                     stdin=sp.DEVNULL, env=env, preexec_fn=cgroup and into_cgroup)
        self.procs.append(p)
        return p

    def server_up(self):
        self.srv = f"slb-s-{ID}"
        self.netns(self.srv)
        run("ip", "-n", self.srv, "link", "set", "lo", "up")
        run("ip", "-n", self.srv, "route", "add", "local", f"{SPREAD_BASE}/20", "dev", "lo")
        self.bg(["ip", "netns", "exec", self.srv, BENCH, "spin", PORT], f"{self.tmp}/spin.out")
        self.wait_for(lambda: "ready" in open(f"{self.tmp}/spin.out").read(), 10, "spin server")

    def client(self, tag):
        """A client namespace with its own veth to the server; returns its name."""
        self.nclients += 1
        k = self.nclients
        ns = f"slb-{tag}-{ID}"
        self.netns(ns)
        run("ip", "-n", ns, "link", "add", "veth0", "type", "veth", "peer", "name", f"slv{k}",
            "netns", self.srv)
        run("ip", "-n", ns, "addr", "add", f"10.201.{k}.1/24", "dev", "veth0")
        run("ip", "-n", self.srv, "addr", "add", f"10.201.{k}.2/24", "dev", f"slv{k}")
        for n, dev in ((ns, "lo"), (ns, "veth0"), (self.srv, f"slv{k}")):
            run("ip", "-n", n, "link", "set", dev, "up")
        run("ip", "-n", ns, "route", "add", f"{SPREAD_BASE}/20", "via", f"10.201.{k}.2")
        self.peers[ns] = f"slv{k}"
        return ns

    def wait_for(self, pred, secs, what):
        end = time.time() + secs
        while time.time() < end:
            try:
                if pred():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise SetupError(f"{what}: not ready after {secs} s")

    # -- policies ---------------------------------------------------------------------------
    def cidrs(self, n, seed=1):
        """n CIDRs: the server's spread range (as 4,096 /32s when n allows) plus filler."""
        net = ipaddress.ip_network(f"{SPREAD_BASE}/20")
        nets = [f"{a}/32" for a in net] if n >= 2 * SPREAD else [str(net)]
        rnd = random.Random(seed)
        filler = set()
        while len(filler) < n - len(nets):
            a, b, c, d = (rnd.randrange(20, 60), rnd.randrange(256), rnd.randrange(256),
                          rnd.randrange(256))
            filler.add(f"{a}.{b}.{c}.0/24" if rnd.random() < 0.5 else f"{a}.{b}.{c}.{d}/32")
        return nets + sorted(filler)

    def policy(self, n, seed=1, name=None):
        path = f"{self.tmp}/{name or f'policy-{n}'}.yaml"
        cs = self.cidrs(n, seed)
        with open(path, "w") as f:
            f.write("default: deny\nrules:\n  - name: bench\n    ports: [5001, 5002, 443]\n")
            f.write("    protocols: [tcp, udp]\n    cidrs: [")
            f.write(", ".join(f'"{c}"' for c in cs) + "]\n")
        return path, cs

    # -- variants ---------------------------------------------------------------------------
    def sluice_up(self, n, binary=SLUICE, tag="sl", env=None):
        ns = self.client(f"{tag}{n}")
        pol, _ = self.policy(n)
        rid = f"bench-{ID}-{tag}{n}"
        cgf = f"{self.tmp}/cg-{tag}{n}"
        wcg = self.writer_cgroup(f"slb-w{tag}{n}-{ID}")
        p = self.bg([binary, "run", "--policy", pol, "--run-id", rid, "--log",
                     f"{self.tmp}/run-{tag}{n}.jsonl", "--netns", f"/run/netns/{ns}",
                     "--allow-root", "--ringbuf-kib", self.a.ringbuf_kib, "--", "sh", "-c",
                     'cat /proc/self/cgroup >"$1.t" && mv "$1.t" "$1" && exec sleep 100000',
                     "sh", cgf], f"{self.tmp}/run-{tag}{n}.err", env=env, cgroup=wcg)
        self.undo.append(lambda: self.stop(p))
        self.wait_for(lambda: os.path.exists(cgf), 300, f"sluice run with {n} CIDRs")
        say(f"sluice run ({binary}) with {n} CIDRs up")
        rel = open(cgf).read().strip().split("::", 1)[1]
        v = {"ns": ns, "cg": self.cg2 + rel, "pid": p.pid, "run_id": rid, "proc": p,
             "log": f"{self.tmp}/run-{tag}{n}.jsonl", "writer_cg": wcg}
        v["fresh"] = self.run_facts(v)
        v["learned"] = self.fill_learned(rid)
        say(f"its learned-address map filled ({v['learned']})")
        return v

    def fill_learned(self, rid):
        """Fill the run's learned-address map (IPv4) to its size, with addresses outside
        everything the workloads use: what a long run that resolved a lot carries."""
        pin = f"{BPFFS}/sluice/{rid}/map-learned4"
        info = json.loads(run("bpftool", "map", "show", "pinned", pin, "-j").stdout)
        n = info["max_entries"]
        batch = f"{self.tmp}/learned-{rid}.batch"
        val = " ".join(["00"] * 24)
        with open(batch, "w") as f:
            for i in range(n):
                a = (100 << 24) | (64 << 16) | i  # 100.64.0.0/10 is in no policy here
                key = " ".join(f"{b:02x}" for b in a.to_bytes(4, "big"))
                f.write(f"map update pinned {pin} key hex {key} value hex {val}\n")
        run("bpftool", "batch", "file", batch, timeout=600)
        os.unlink(batch)
        return n

    def nft_up(self, n):
        ns = self.client(f"nft{n}")
        name = f"slb-nft{n}-{ID}"
        cg = self.cgroup(name)
        _, cs = self.policy(n)
        conf = f"{self.tmp}/nft-{n}.conf"
        with open(conf, "w") as f:
            f.write("table inet bench {\n  set many { type ipv4_addr; flags interval; "
                    "auto-merge; elements = { " + ", ".join(cs) + " } }\n")
            f.write("  chain out { type filter hook output priority 0; policy accept;\n")
            f.write(f'    socket cgroupv2 level 1 "{name}" ip daddr @many tcp dport '
                    "{ 5001, 443 } accept\n")
            f.write(f'    socket cgroupv2 level 1 "{name}" oif lo accept\n')
            f.write(f'    socket cgroupv2 level 1 "{name}" drop\n  }}\n}}\n')
        # nft resolves cgroupv2 paths under /sys/fs/cgroup: show it the cgroup2 mount there
        bind = "" if self.cg2 == "/sys/fs/cgroup" else \
            f'mount --bind "{self.cg2}" /sys/fs/cgroup && '
        run("unshare", "-m", "sh", "-c",
            f'mount --make-rprivate / && {bind}nsenter --net=/run/netns/{ns} nft -f "$1"',
            "sh", conf)
        return {"ns": ns, "cg": cg}

    def proxy_up(self):
        ns = self.client("px")
        conf = f"{self.tmp}/tinyproxy.conf"
        with open(conf, "w") as f:
            f.write(f"Port {PROXY_PORT}\nListen 127.0.0.1\nTimeout 60\nMaxClients 512\n"
                    f"Allow 127.0.0.1\nConnectPort {PORT}\nLogLevel Critical\n"
                    f"LogFile \"{self.tmp}/tinyproxy.log\"\nDisableViaHeader Yes\n")
        p = self.bg(["ip", "netns", "exec", ns, "tinyproxy", "-d", "-c", conf],
                    f"{self.tmp}/tinyproxy.out")
        self.undo.append(lambda: self.stop(p))

        def up():
            r = run("ip", "netns", "exec", ns, BENCH, "proxy", "127.0.0.1", PROXY_PORT, HOT,
                    PORT, 1, check=False)
            return r.returncode == 0
        self.wait_for(up, 20, "tinyproxy")
        return {"ns": ns, "cg": self.cgroup(f"slb-px-{ID}"), "proxy": True}

    def stop(self, p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(60)
            except sp.TimeoutExpired:
                p.kill()
                p.wait()

    def workload(self, v, *args):
        """sl_bench ARGS in the variant's namespace and cgroup; its stdout."""
        r = run("nsenter", f"--net=/run/netns/{v['ns']}", "--", "sh", "-c",
                'echo $$ >"$1/cgroup.procs" && shift && exec "$@"', "sh", v["cg"], BENCH,
                *args, timeout=900)
        return r.stdout

    def connects(self, v, spread):
        dst = SPREAD_BASE if spread else HOT
        n = self.a.connects
        sp_ = SPREAD if spread else 1
        args = (["proxy", "127.0.0.1", PROXY_PORT, dst, PORT, n, sp_] if v.get("proxy")
                else ["connect", dst, PORT, n, sp_])
        if v.get("writer_stopped"):
            os.kill(v["pid"], signal.SIGSTOP)
        i0, r0 = iwi_total(), softirq_total("RCU")
        try:
            out = self.workload(v, *args)
        finally:
            if v.get("writer_stopped"):
                os.kill(v["pid"], signal.SIGCONT)
                time.sleep(0.3)  # its backlog written before the next variant is measured
        iwi, rcu = iwi_total() - i0, softirq_total("RCU") - r0
        rows = [tuple(int(x) for x in line.split()) for line in out.splitlines()]
        c = [r[0] for r in rows]
        cl = [r[1] for r in rows]
        return {"med": statistics.median(c), "p99": pctl(c, 0.99), "close": statistics.median(cl),
                "close_p99": pctl(cl, 0.99), "iwi": iwi / max(len(c), 1),
                "rcu": rcu / max(len(c), 1)}

    # -- the interleaved table --------------------------------------------------------------
    def table(self):
        a = self.a
        variants = {"none": {"ns": self.client("none"), "cg": self.cgroup(f"slb-none-{ID}")}}
        for n in a.sizes:
            self.runs[n] = variants[f"sluice-{n}"] = self.sluice_up(n)
            if a.no_backstop_variant:
                # the same policy without the host side's backstop (a selftest switch): what
                # its per-packet program costs the connects
                variants[f"sluice-{n}-no-backstop"] = self.sluice_up(
                    n, tag="nobs", env=dict(os.environ, SLUICE_SELFTEST_NO_BACKSTOP="1"))
            if a.writer_stopped:
                # the same run, its writer stopped while it is measured: what the writer's
                # wake-ups and work cost the connects (its ring must hold them: --ringbuf-kib)
                variants[f"sluice-{n}-writer-stopped"] = dict(self.runs[n], writer_stopped=True)
            if a.compare:
                self.compare_runs[n] = variants[f"{a.compare_label}-{n}"] = self.sluice_up(
                    n, a.compare, "cmp")
        if not a.no_nft:
            for n in a.sizes:
                variants[f"nftables-{n}"] = self.nft_up(n)
        if not a.no_proxy:
            variants["tinyproxy"] = self.proxy_up()
        names = list(variants)
        raw = {w: {v: [] for v in names} for w in ("hot", "spread")}
        say(f"connect()+close(): {a.rounds} rounds x {a.connects} per variant and workload, "
            f"{len(names)} variants")
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for w in ("hot", "spread"):
                for v in order:
                    raw[w][v].append(self.connects(variants[v], w == "spread"))
            say(f"round {r + 1}/{a.rounds} done")
        rows = []
        for w in ("hot", "spread"):
            base = raw[w]["none"]
            for v in names:
                rs = raw[w][v]
                row = {"workload": w, "variant": v}
                for k in ("med", "p99", "close"):
                    row[f"{k}_x"] = statistics.median(x[k] / b[k] for x, b in zip(rs, base))
                    row[f"{k}_ns"] = statistics.median(x[k] for x in rs)
                row["iwi_per_connect"] = statistics.median(x["iwi"] for x in rs)
                row["rcu_per_connect"] = statistics.median(x.get("rcu", 0) for x in rs)
                rows.append(row)
        self.results["connect"] = rows
        self.results["connect_raw"] = raw
        if a.compare:
            self.results["connect_paired"] = self.paired(raw, a.sizes, a.compare_label)

    @staticmethod
    def paired(raw, sizes, label):
        """This build against --compare's, round by round: each round's ratio of the two runs
        of one policy, which the none variant's noise does not enter (the ratio of two ratios
        to none does). The median over rounds, its quartiles, and the rounds this build won."""
        out = []
        for w in raw:
            for n in sizes:
                new, old = raw[w].get(f"sluice-{n}"), raw[w].get(f"{label}-{n}")
                if not new or not old:
                    continue
                row = {"workload": w, "cidrs": n, "label": label}
                for k in ("med", "p99", "close"):
                    xs = sorted(x[k] / y[k] for x, y in zip(new, old))
                    row[k] = {"median": statistics.median(xs), "q1": xs[len(xs) // 4],
                              "q3": xs[(3 * len(xs)) // 4], "wins": sum(x < 1 for x in xs),
                              "rounds": len(xs), "ns": statistics.median(x[k] for x in new),
                              "ns_old": statistics.median(y[k] for y in old)}
                out.append(row)
        return out

    # -- per packet on an established flow --------------------------------------------------
    # Where a frame of a run's flow meets a program per packet, by the attach type of its link:
    # the cgroup's egress and ingress, and the host-side peer's ingress (tcx, or clsact: "tc").
    HOOKS = {"cgroup_inet_egress": "cgroup egress", "cgroup_inet_ingress": "cgroup ingress",
             "tcx_ingress": "host tc", "tc": "host tc"}
    # the packet's way: out of the sandbox (cgroup egress, then the host side), or into it
    PATHS = {"egress": ("cgroup egress", "host tc"), "ingress": ("cgroup ingress",)}
    EMPTY = {"sl_empty_egress": "cgroup egress", "sl_empty_ingress": "cgroup ingress",
             "sl_empty_tc": "host tc"}

    def packet_runs(self):
        """The live runs the per-packet figure measures, by label (--compare's too)."""
        out = {f"sluice-{n}": v for n, v in self.runs.items()}
        out.update({f"{self.a.compare_label}-{n}": v for n, v in self.compare_runs.items()})
        return out

    def empty_up(self):
        """A client namespace and cgroup with the empty programs (selftests/bench/sl_empty.bpf.c)
        where a run has its per-packet programs: the cgroup's egress and ingress, the host-side
        peer's tcx ingress. Returns the variant, with {program id: hook}."""
        ns = self.client("pkempty")
        cg = self.cgroup(f"slb-pkempty-{ID}")
        pins = f"{BPFFS}/slb-empty-{ID}"
        run("bpftool", "prog", "loadall", PACKET_PROGS, pins)
        self.undo.append(lambda: shutil.rmtree(pins, ignore_errors=True))
        for direction in ("egress", "ingress"):
            run("bpftool", "cgroup", "attach", cg, direction, "pinned",
                f"{pins}/sl_empty_{direction}")
            self.undo.append(lambda d=direction: run(
                "bpftool", "cgroup", "detach", cg, d, "pinned", f"{pins}/sl_empty_{d}",
                check=False))
        # nsenter, not ip netns exec, which mounts a sysfs of its own over bpffs
        run("nsenter", f"--net=/run/netns/{self.srv}", "bpftool", "net", "attach",
            "tcx_ingress", "pinned", f"{pins}/sl_empty_tc", "dev", self.peers[ns])
        progs = {}
        for name, hook in self.EMPTY.items():
            progs[self.bpftool_json("prog", "show", "pinned", f"{pins}/{name}")["id"]] = hook
        return {"ns": ns, "cg": cg, "progs": progs}

    @staticmethod
    def prog_counters(ids):
        """{program id: (name, run_cnt, run_time_ns)} of the programs ids (bpf_stats on)."""
        out = {}
        for p in json.loads(run("bpftool", "prog", "show", "-j").stdout):
            if p["id"] in ids:
                out[p["id"]] = (p["name"], p.get("run_cnt", 0), p.get("run_time_ns", 0))
        return out

    def packets(self, runs):
        """The per-packet cost of a run's programs on an established flow (issue 15's target:
        60 ns over an empty program): one TCP connection per variant and round from the
        variant's cgroup through its namespace's veth, a.packets writes of a.packet_size bytes
        with TCP_NODELAY, while the kernel's run-time statistics are on (BpfStats). Each
        program's run count and run time before and after give its ns per run in that round;
        the empty programs (empty_up), measured in the same interleaved rounds, give what every
        run costs that no program body causes: the statistics' own two clock reads and the call.
        A program's figure over empty is its ns per run less the empty program's at its hook in
        the same round; a packet's is the sum over the programs on its way (PATHS). Medians over
        rounds. runs: {label: a sluice_up variant}."""
        a = self.a
        if not hasattr(self, "packet_server"):
            out = f"{self.tmp}/serve.out"
            self.packet_server = self.bg(["ip", "netns", "exec", self.srv, BENCH, "serve",
                                          PACKET_PORT], out)
            self.wait_for(lambda: "ready" in open(out).read(), 10, "packet server")
        variants = {"empty": self.empty_up()}
        for label, v in runs.items():
            progs = self.run_programs(v["run_id"])
            variants[label] = dict(v, progs={i: self.HOOKS.get(h, h) for i, h in progs.items()})
        names = list(variants)
        raw = {v: [] for v in names}
        say(f"per packet: {a.rounds} rounds x {a.packets} writes of {a.packet_size} bytes per "
            f"variant, {len(names)} variants")
        with BpfStats():
            for r in range(a.rounds):
                for v in names[r % len(names):] + names[:r % len(names)]:
                    var = variants[v]
                    c0 = self.prog_counters(var["progs"])
                    out = self.workload(var, "packets", HOT, PACKET_PORT, a.packets,
                                        a.packet_size).split()
                    c1 = self.prog_counters(var["progs"])
                    progs = {}
                    for i, (name, cnt, ns) in c1.items():
                        runs_ = cnt - c0[i][1]
                        if runs_ > 0:
                            progs[name] = {"hook": var["progs"][i], "runs": runs_,
                                           "ns": (ns - c0[i][2]) / runs_}
                    raw[v].append({"writes": int(out[0]), "write_ns": int(out[1]) / int(out[0]),
                                   "progs": progs})
                say(f"round {r + 1}/{a.rounds} done")
        empty = [{p["hook"]: p["ns"] for p in rr["progs"].values()} for rr in raw["empty"]]
        res = {"writes": a.packets, "size": a.packet_size, "rounds": a.rounds,
               "empty_ns": {h: statistics.median(e[h] for e in empty) for h in empty[0]},
               "empty_write_ns": statistics.median(rr["write_ns"] for rr in raw["empty"]),
               "variants": {}, "raw": raw}
        for label in names[1:]:
            rs = raw[label]
            row = {"write_ns": statistics.median(rr["write_ns"] for rr in rs),
                   "write_x": statistics.median(rr["write_ns"] / e["write_ns"]
                                                for rr, e in zip(rs, raw["empty"])),
                   "programs": {}}
            for name in sorted({n for rr in rs for n in rr["progs"]}):
                got = [(rr["progs"][name], e) for rr, e in zip(rs, empty) if name in rr["progs"]]
                hook = got[0][0]["hook"]
                row["programs"][name] = {
                    "hook": hook,
                    "runs_per_write": statistics.median(p["runs"] / a.packets for p, _ in got),
                    "ns_per_run": statistics.median(p["ns"] for p, _ in got),
                    "over_empty_ns": statistics.median(p["ns"] - e[hook] for p, e in got)
                    if all(hook in e for _, e in got) else None}
            for path, hooks in self.PATHS.items():
                per_round = [[(p["ns"], p["ns"] - e[p["hook"]]) for p in rr["progs"].values()
                              if p["hook"] in hooks] for rr, e in zip(rs, empty)]
                row[f"{path}_ns"] = statistics.median(sum(x for x, _ in pr) for pr in per_round)
                row[f"{path}_over_empty_ns"] = statistics.median(sum(y for _, y in pr)
                                                                 for pr in per_round)
            res["variants"][label] = row
            say(f"{label}: a packet out {row['egress_ns']:.0f} ns in its programs, "
                f"{row['egress_over_empty_ns']:.0f} over empty; in "
                f"{row['ingress_ns']:.0f}, {row['ingress_over_empty_ns']:.0f} over empty")
        return res

    def connect_programs(self, runs):
        """Where a connect() and close() go in a run's programs: the table's workloads (hot,
        spread; a.connects each) from each run's cgroup and from a cgroup with the empty
        programs (empty_up: what the statistics and the call cost a run at the per-packet
        hooks), a.rounds interleaved rounds, the kernel's run-time statistics on (BpfStats).
        Per program: runs per connect, ns per run, ns per connect (its run time over the
        round's connects, close()'s sock_release and the handshake's packets included); medians
        over rounds. Each run carries the statistics' two clock reads (the empty programs'
        figure). runs: {label: a sluice_up variant}."""
        a = self.a
        variants = {"empty": self.empty_up()}
        for label, v in runs.items():
            progs = self.run_programs(v["run_id"])
            variants[label] = dict(v, progs={i: self.HOOKS.get(h, h) for i, h in progs.items()})
        names = list(variants)
        raw = {w: {v: [] for v in names} for w in ("hot", "spread")}
        say(f"programs per connect: {a.rounds} rounds x {a.connects} connects per variant and "
            f"workload, {len(names)} variants")
        with BpfStats():
            for r in range(a.rounds):
                for w in ("hot", "spread"):
                    for v in names[r % len(names):] + names[:r % len(names)]:
                        var = variants[v]
                        c0 = self.prog_counters(var["progs"])
                        got = self.connects(var, w == "spread")
                        c1 = self.prog_counters(var["progs"])
                        progs = {name: {"hook": var["progs"][i], "runs": cnt - c0[i][1],
                                        "ns": ns - c0[i][2]}
                                 for i, (name, cnt, ns) in c1.items() if cnt > c0[i][1]}
                        raw[w][v].append({"connect_ns": got["med"], "close_ns": got["close"],
                                          "progs": progs})
                say(f"round {r + 1}/{a.rounds} done")
        rows = []
        for w in raw:
            for v in names:
                rs = raw[w][v]
                n = a.connects
                row = {"workload": w, "variant": v,
                       "connect_ns": statistics.median(x["connect_ns"] for x in rs),
                       "close_ns": statistics.median(x["close_ns"] for x in rs),
                       "all_ns_per_connect": statistics.median(
                           sum(p["ns"] for p in x["progs"].values()) / n for x in rs),
                       "programs": {}}
                for name in sorted({k for x in rs for k in x["progs"]}):
                    ps = [x["progs"][name] for x in rs if name in x["progs"]]
                    row["programs"][name] = {
                        "hook": ps[0]["hook"],
                        "runs_per_connect": statistics.median(p["runs"] / n for p in ps),
                        "ns_per_run": statistics.median(p["ns"] / p["runs"] for p in ps),
                        "ns_per_connect": statistics.median(p["ns"] / n for p in ps)}
                rows.append(row)
        return {"rounds": a.rounds, "connects": a.connects, "rows": rows, "raw": raw}

    @staticmethod
    def connect_programs_markdown(C):
        out = [f"Programs per connect(): {C['rounds']} interleaved rounds x {C['connects']} "
               "connect()+close() per variant and workload, the kernel's BPF run-time statistics "
               "on (each run carries their two clock reads: the empty programs' ns per run). "
               "ns per connect: a program's run time over the round's connects (the handshake's "
               "packets and close()'s release included); medians over rounds.", "",
               "| workload | variant | program | hook | runs per connect | ns per run | "
               "ns per connect |", "|---|---|---|---|---|---|---|"]
        for r in C["rows"]:
            for name, p in r["programs"].items():
                out.append(f"| {r['workload']} | {r['variant']} | {name} | {p['hook']} | "
                           f"{p['runs_per_connect']:.2f} | {p['ns_per_run']:.0f} | "
                           f"{p['ns_per_connect']:.0f} |")
            out.append(f"| {r['workload']} | {r['variant']} | all | | | | "
                       f"{r['all_ns_per_connect']:.0f} (connect {r['connect_ns']:.0f}, close "
                       f"{r['close_ns']:.0f}) |")
        return out + [""]

    @staticmethod
    def bpftool_json(*args):
        """bpftool's JSON answer, {} if none (its exit status is not reliable for link show)."""
        r = run("bpftool", *args, "-j", check=False)
        try:
            v = json.loads(r.stdout)
        except ValueError:
            return {}
        return v if isinstance(v, dict) and "error" not in v else {}

    # -- per run: programs and memory -------------------------------------------------------
    def run_programs(self, run_id):
        """The run's programs, from its pins: {program id: hook}, the hook a link's attach type
        (cgroup_inet_egress, tcx_ingress, ...), or "tc" for a clsact filter's pinned program."""
        pin = f"{BPFFS}/sluice/{run_id}"
        out = {}
        for e in sorted(os.listdir(pin)):
            if e.startswith("map-"):
                continue
            path = f"{pin}/{e}"
            link = self.bpftool_json("link", "show", "pinned", path)
            if link.get("prog_id"):
                out[link["prog_id"]] = link.get("attach_type", "?")
                continue
            pid = self.bpftool_json("prog", "show", "pinned", path).get("id")
            if pid:
                out[pid] = "tc"
        return out

    def run_facts(self, v):
        """The run's programs (name, instructions) and memory (maps' memlock, writer's RSS)."""
        pin = f"{BPFFS}/sluice/{v['run_id']}"
        maps, progs = set(), {}
        for e in sorted(os.listdir(pin)):
            if e.startswith("map-"):
                maps.add(json.loads(run("bpftool", "map", "show", "pinned", f"{pin}/{e}",
                                        "-j").stdout)["id"])
        for pid in self.run_programs(v["run_id"]):
            p = json.loads(run("bpftool", "prog", "show", "id", pid, "-j").stdout)
            maps.update(p.get("map_ids", []))
            progs[p["name"]] = {"xlated_insns": p.get("bytes_xlated", 0) // 8,
                                "verified_insns": p.get("verified_insns"),
                                "jited_bytes": p.get("bytes_jited"),
                                "memlock": p.get("bytes_memlock", 0)}
        memlock, by_map, seen, unvisited = 0, {}, set(), sorted(maps)
        while unvisited:
            m = unvisited.pop()
            if m in seen:
                continue
            seen.add(m)
            j = json.loads(run("bpftool", "map", "show", "id", m, "-j").stdout)
            memlock += j.get("bytes_memlock", 0)
            by_map[j.get("name", str(m))] = j.get("bytes_memlock", 0)
            # a map of maps (the namespace's flow and run maps): the maps in its slots are
            # the run's too, and no program names them
            if j.get("type", "").endswith("of_maps"):
                for e in json.loads(run("bpftool", "map", "dump", "id", m, "-j").stdout):
                    inner = e.get("inner_map_id") or (e.get("formatted") or {}).get(
                        "inner_map_id")
                    if inner:
                        unvisited.append(inner)
        st = {}
        for line in open(f"/proc/{v['pid']}/status"):
            k, _, val = line.partition(":")
            if k in ("VmRSS", "RssAnon"):
                st[k] = int(val.split()[0]) * 1024
        for line in open(f"/proc/{v['pid']}/smaps_rollup"):
            if line.startswith("AnonHugePages:"):
                st["AnonHugePages"] = int(line.split()[1]) * 1024
        # total: RSS whole, shared pages (libraries, the binary, the ring buffer's mapping of
        # the map's own pages) included; total_private: only what another run adds (anonymous)
        f = {"programs": progs, "maps": len(seen), "maps_memlock": memlock, "by_map": by_map,
             "writer_rss": st["VmRSS"], "writer_anon": st["RssAnon"],
             "writer_anon_huge": st.get("AnonHugePages", 0),
             "total": memlock + st["VmRSS"], "total_private": memlock + st["RssAnon"]}
        if v.get("writer_cg"):
            # the maps' and programs' memory as charged, in place of an estimated memlock
            k = self.kernel_charged(v["writer_cg"])
            f.update(kernel_charged=k, total_charged=k + st["VmRSS"],
                     total_private_charged=k + st["RssAnon"])
            cst = dict(line.split() for line in open(f"{v['writer_cg']}/memory.stat"))
            f["charged_stat"] = {k: int(cst[k]) for k in (
                "kernel", "slab", "vmalloc", "percpu", "pagetables", "kernel_stack", "sock",
                "anon", "file") if k in cst}
            f["charged_stat"]["current"] = int(open(f"{v['writer_cg']}/memory.current").read())
        return f

    # -- the signed pipeline ----------------------------------------------------------------
    def pipeline(self, n_records, rate, ringbuf_kib, v=None, binary=SLUICE, stopped=None):
        """n_records allow records (a datagram each from a new socket, rate/s if rate) into the
        run v or a fresh 10-CIDR run, which ends after: records/s, the writer's CPU per record
        (schedstat), the sender's time per datagram and IRQ-work interrupts per record (what
        forced wake-ups cost the sender), loss.

        The process's CPU is every thread's: the writer's (the run's main thread: ring buffer
        reader, rendering, chain and tree hashes, write, and its loop's per-wake-up calls) and
        the others' (the sync thread's fdatasync and note copies, resolver, compressor), given
        apart. While the
        sender is slower than the writer, each wake-up finds a few records and its fixed cost
        is shared by few: stopped (--stop-writer) holds the writer (SIGSTOP) while all records
        are sent, so it then drains a full ring with no wait: its CPU per record and drain rate
        are the writer's own capacity, whatever the sender can do."""
        if v is None:
            v = self.flood_run(ringbuf_kib, binary)
        stopped = self.a.stop_writer if stopped is None else stopped
        p, log = v["proc"], v["log"]
        if stopped:
            os.kill(p.pid, signal.SIGSTOP)
        c0, t0, i0 = sched_threads(p.pid), time.monotonic(), iwi_total()
        sent = self.workload(v, "udpflood", HOT, PORT, n_records, rate).split()
        iwi = iwi_total() - i0
        t_sent = time.monotonic()
        if stopped:
            os.kill(p.pid, signal.SIGCONT)

        # the log's allow lines, counted as they come (the drain may take a fraction of a second)
        seen = {"off": 0, "n": 0, "tail": b""}

        def allows():
            with open(log, "rb") as f:
                f.seek(seen["off"])
                data = f.read()
            seen["off"] += len(data)
            lines = (seen["tail"] + data).split(b"\n")
            seen["tail"] = lines.pop()
            seen["n"] += sum(1 for x in lines
                             if b'"decision":"allow"' in x and b'"proto":"udp"' in x)
            return seen["n"]
        end = time.time() + 120
        while time.time() < end and allows() < n_records:
            time.sleep(0.002)
        c1, t1 = sched_threads(p.pid), time.monotonic()
        self.stop(p)
        recs = [json.loads(line) for line in open(log)]
        last = next(r for r in reversed(recs) if r.get("type") == "run_end")
        got = sum(1 for r in recs if r.get("type") == "decision" and r.get("decision") == "allow"
                  and r.get("proto") == "udp")
        writer = c1.get(p.pid, 0) - c0.get(p.pid, 0)
        others = sum(c1.values()) - sum(c0.values()) - writer
        out = {"records": n_records, "rate": rate, "allow_lines": got, "lost": last["lost"],
               "stopped": bool(stopped), "send_s": t_sent - t0, "drain_s": t1 - t0,
               "writer_cpu_ns_per_record": (writer + others) / max(got, 1),
               "writer_thread_ns_per_record": writer / max(got, 1),
               "other_threads_ns_per_record": others / max(got, 1),
               "send_ns_per_record": int(sent[1]) / max(n_records, 1),
               "iwi_per_record": iwi / max(n_records, 1),
               "records_per_s": got / max(t1 - t0, 1e-9)}
        if stopped:
            # from the moment the writer may go on: it had every record waiting
            out["drain_records_per_s"] = got / max(t1 - t_sent, 1e-9)
        return out

    # -- the writer alone, fed by sl_feed --------------------------------------------------
    def writer_feed(self, rate, amount, binary=SLUICE):
        """The writer of a fresh 10-CIDR run (binary), fed allow records straight into its ring
        buffer by sl_feed (selftests/bench/sl_feed.bpf.c, run with BPF_PROG_TEST_RUN: no
        socket, so no sender's ceiling; the writer, sluice run itself, reads them as it reads a
        workload's). rate 0: amount records put in while the writer is stopped (SIGSTOP), in a
        ring with room for them all, then drained: the writer's drain rate and CPU per record.
        rate > 0: amount seconds at rate records/s into a ring of the run's default size, the
        writer running: records lost (sl_feed's failed reservations, and every kernel sequence
        number the log has no line for: loss_ranges' missing) and the writer's CPU per record
        (schedstat: the main thread, and the others: the sync thread, the resolver). The log is
        read from its end only (a minute at 500k/s is about 13 GB) and removed after."""
        v = self.flood_run(self.a.flood_ringbuf_kib if not rate else self.a.ringbuf_kib, binary,
                           self.a.feed_log_dir)
        p, log = v["proc"], v["log"]
        if not rate:
            os.kill(p.pid, signal.SIGSTOP)
        c0 = sched_threads(p.pid)
        out = run(FEED, FEED_OBJ, f"{BPFFS}/sluice/{v['run_id']}", rate, amount,
                  timeout=amount + 600 if rate else 600).stdout.split()
        t_fed = time.monotonic()
        fed, feed_lost, feed_ns, feed_cpu = int(out[1]), int(out[3]), int(out[4]), int(out[5])
        if not rate:
            os.kill(p.pid, signal.SIGCONT)
        if not rate:
            # drained: every record has its line (counted as they come)
            seen, tail, t_last = 0, b"", time.monotonic()
            with open(log, "rb") as f:
                while seen < fed and time.monotonic() - t_fed < 300:
                    data = f.read()
                    if not data:
                        time.sleep(0.002)
                        continue
                    t_last = time.monotonic()
                    lines = (tail + data).split(b"\n")
                    tail = lines.pop()
                    seen += sum(1 for x in lines if b'"decision":"allow"' in x)
        else:
            # paced: the log has stopped growing for 2 s (a writer that fell behind is done)
            size, t_last = -1, time.monotonic()
            while time.monotonic() - t_last < 2 and time.monotonic() - t_fed < 600:
                s = os.stat(log).st_size
                if s != size:
                    size, t_last = s, time.monotonic()
                time.sleep(0.01)
        c1 = sched_threads(p.pid)
        self.stop(p)
        log_bytes = os.path.getsize(log)
        try:
            with open(log, "rb") as f:
                f.seek(max(0, log_bytes - 65536))
                tail = [json.loads(x) for x in f.read().split(b"\n")[1:] if x.startswith(b"{")]
        finally:
            for f in (log, f"{log}.checkpoints"):  # gigabytes: gone at once, whatever happened
                if os.path.exists(f):
                    os.remove(f)
        end = next((r for r in reversed(tail) if r.get("type") == "run_end"), None)
        ranges = next((r for r in reversed(tail) if r.get("type") == "loss_ranges"), {})
        if end is None:
            raise SetupError(f"{log}: no run_end in its last 64 KiB (the fed run did not end)")
        writer = c1.get(p.pid, 0) - c0.get(p.pid, 0)
        others = sum(c1.values()) - sum(c0.values()) - writer
        # every record took a kernel sequence number: those without a line are loss_ranges'
        # missing (the ring full, sl_feed's lost, or a line the writer never wrote)
        sent, missing = fed + feed_lost, ranges.get("missing", 0)
        logged = sent - missing
        return {"rate": rate, "records": sent, "feed_lost": feed_lost, "missing": missing,
                "lost": end["lost"] + feed_lost, "logged": logged,
                "feed_s": feed_ns / 1e9, "sent_per_s": sent / max(feed_ns / 1e9, 1e-9),
                "feed_cpu_ns_per_record": feed_cpu / max(sent, 1),
                "drain_records_per_s": logged / max(t_last - t_fed, 1e-9) if not rate else None,
                "writer_cpu_ns_per_record": (writer + others) / max(logged, 1),
                "writer_thread_ns_per_record": writer / max(logged, 1),
                "other_threads_ns_per_record": others / max(logged, 1),
                "log_bytes_per_record": log_bytes / max(logged, 1),
                "binary": binary}

    def writer_feed_fits(self, what, records, bytes_per_record, fewer):
        """None if the log of a writer fed records (at bytes_per_record, measured) fits the free
        space of the filesystem it goes to (--feed-log-dir, else the temporary directory), with
        FEED_SPACE_MARGIN and FEED_SPACE_RESERVE; else why not, said and kept in the results
        ("skipped") in place of the measure what: the feed never fills the disk, and the rest of
        the bench runs on. fewer: the options that feed fewer records."""
        d = self.a.feed_log_dir or self.tmp
        st = os.statvfs(d)
        free = st.f_bavail * st.f_frsize
        need = int(records * bytes_per_record * FEED_SPACE_MARGIN) + FEED_SPACE_RESERVE
        if free >= need:
            return None
        why = (f"{d} has {free / 2**20:.0f} MiB free; {records} records at "
               f"{bytes_per_record:.0f} bytes each need {need / 2**20:.0f} MiB there (margin "
               f"{FEED_SPACE_MARGIN}x, reserve {FEED_SPACE_RESERVE >> 20} MiB): not run rather "
               f"than fill the disk (--feed-log-dir elsewhere, or a lower {fewer})")
        say(f"{what}: skipped: {why}")
        self.results.setdefault("skipped", {})[what] = why
        return why

    def writer_drained(self, label, binary):
        """writer_feed drained (--flood records into a stopped writer) of binary, appended to the
        results' writer_drained; None, skipped, if its log would not fit."""
        if self.writer_feed_fits(f"writer drained ({label})", self.a.flood,
                                 FEED_BYTES_PER_RECORD_BOUND, "--flood"):
            return None
        w = self.writer_feed(0, self.a.flood, binary)
        self.results.setdefault("writer_drained", {}).setdefault(label, []).append(w)
        return w

    def writer_paced(self, label, binary):
        """writer_feed paced (--feed-rate for --feed-secs) of binary into the results'
        writer_paced, with the check that every record has its line; None, skipped, if its log
        would not fit at the bytes per record its drained runs measured."""
        a = self.a
        drained = self.results.get("writer_drained", {}).get(label)
        bpr = (max(w["log_bytes_per_record"] for w in drained) if drained
               else FEED_BYTES_PER_RECORD_BOUND)
        what = f"writer paced ({label}, {a.feed_rate}/s for {a.feed_secs} s)"
        if self.writer_feed_fits(what, a.feed_rate * a.feed_secs, bpr,
                                 "--feed-rate or --feed-secs"):
            return None
        w = self.writer_feed(a.feed_rate, a.feed_secs, binary)
        self.results.setdefault("writer_paced", {})[label] = w
        if label == "sluice":
            self.check(f"records without a line, writer fed {a.feed_rate}/s for {a.feed_secs} s",
                       w["lost"] == 0 and w["missing"] == 0, w["missing"], 0)
        return w

    def writer_only(self):
        """--writer-only: the writer alone drained (sl_feed into a stopped writer) for this build
        and --compare's, interleaved, --rounds times; then paced at --feed-rate for --feed-secs
        (each build)."""
        a = self.a
        builds = [("sluice", SLUICE)] + ([(a.compare_label, a.compare)] if a.compare else [])
        for r in range(a.rounds):
            for label, binary in (builds if r % 2 == 0 else builds[::-1]):
                w = self.writer_drained(label, binary)
                if w:
                    say(f"{label} drained: {w['drain_records_per_s']:.0f} records/s, "
                        f"{w['writer_cpu_ns_per_record']:.0f} ns CPU per record")
        if a.feed_secs:
            for label, binary in builds:
                w = self.writer_paced(label, binary)
                if w:
                    say(f"{label} paced: " + json.dumps(w))
        return self.write_results()

    def flood_run(self, ringbuf_kib, binary=SLUICE, log_dir=None):
        self.nflood = getattr(self, "nflood", 0) + 1
        ns = self.client(f"fl{self.nflood}")
        pol, _ = self.policy(10, name="flood")
        rid = f"bench-{ID}-flood{self.nflood}"
        cgf, log = f"{self.tmp}/cg-{rid}", f"{log_dir or self.tmp}/{rid}.jsonl"
        p = self.bg([binary, "run", "--policy", pol, "--run-id", rid, "--log", log, "--netns",
                     f"/run/netns/{ns}", "--allow-root", "--ringbuf-kib", ringbuf_kib, "--",
                     "sh", "-c", 'cat /proc/self/cgroup >"$1.t" && mv "$1.t" "$1" && '
                     "exec sleep 100000", "sh", cgf], f"{self.tmp}/{rid}.err")
        self.undo.append(lambda: self.stop(p))
        self.wait_for(lambda: os.path.exists(cgf), 300, "flood run")
        return {"ns": ns, "cg": self.cg2 + open(cgf).read().strip().split("::", 1)[1],
                "proc": p, "log": log, "run_id": rid}

    # -- start-up, attach, replacement ------------------------------------------------------
    def startup(self, n, times, tag="true"):
        pol, _ = self.policy(n)
        ms = []
        for i in range(times):
            t0 = time.monotonic()
            run(SLUICE, "run", "--standalone", "--policy", pol, "--run-id",
                f"bench-{ID}-{tag}{n}-{i}", "--log", f"{self.tmp}/{tag}-{n}-{i}.jsonl", "--", "true")
            ms.append((time.monotonic() - t0) * 1e3)
        return statistics.median(ms)

    def startup_handoff(self, times):
        """sluice run -- true handed to a daemon with spares (10 CIDRs), end to end (process
        start to exit: the daemon sets up from a spare, writes and seals the log), beside the
        same run standalone: medians in ms and their ratio. Each handed run waits first until
        the daemon has a spare ready (it loads them at nice 19)."""
        env = self.daemon("handoff", "--spares", "2")
        pol, _ = self.policy(10)
        ms, taken = [], 0
        for i in range(times):
            self.wait_for(lambda: self.request(env, {"op": "ping"})["spares"] >= 1, 600,
                          "a spare")
            rid = f"bench-{ID}-handoff-{i}"
            t0 = time.monotonic()
            run(SLUICE, "run", "--policy", pol, "--run-id", rid, "--log",
                f"{self.tmp}/{rid}.jsonl", "--", "true", env=env)
            ms.append((time.monotonic() - t0) * 1e3)
            taken += "a spare" in open(f"{self.tmp}/handoff.out").read().split(
                f"run {rid} handed over", 1)[-1].split("\n", 1)[0]
        alone = self.startup(10, times, "alone")
        handed = statistics.median(ms)
        say(f"sluice run -- true: {handed:.0f} ms handed to a daemon, {alone:.0f} ms standalone "
            f"(medians of {times}; {taken} from a spare)")
        return {"handed_ms": handed, "standalone_ms": alone, "ratio": alone / max(handed, 1e-9),
                "from_spare": taken, "runs": times}

    def daemon(self, tag, *args, binary=SLUICE):
        sock = f"{self.tmp}/{tag}.sock"
        env = dict(os.environ, SLUICE_SOCKET=sock)
        p = sp.Popen([binary, "daemon", "--state-dir", f"{self.tmp}/{tag}-state", "--log-dir",
                      f"{self.tmp}/{tag}-logs", *args],
                     stdout=open(f"{self.tmp}/{tag}.out", "w"), stderr=sp.STDOUT, env=env)
        self.procs.append(p)
        self.undo.append(lambda: self.stop(p))
        self.wait_for(lambda: run(SLUICE, "status", check=False, env=env).returncode == 0, 30,
                      "daemon")
        return env

    def request(self, env, req):
        # a request naming a netns carries the namespace itself, as sluice attach sends it
        fd = os.open(req["netns"], os.O_RDONLY) if "netns" in req else None
        try:
            reply = sl_daemon_req.request(env["SLUICE_SOCKET"],
                                          json.dumps(req).encode() + b"\n", 600, fd).decode()
        finally:
            if fd is not None:
                os.close(fd)
        if '"ok":true' not in reply:
            raise SetupError(f"daemon {req['op']}: {reply[:300]}")
        return json.loads(reply)

    def attach(self, times, spares, netns=False):
        """Attaches of a 10-CIDR policy to an empty cgroup, request to reply (the programs
        judge from before the reply): median and p90 ms, and how many took a spare. With spares,
        each attach waits first until the daemon has one ready (it loads them at nice 19).
        netns: with a host side in a client namespace, as the OCI hook's and --pid's attaches.
        With --compare, the other build's daemon too (its own client namespace), the two
        builds' attaches interleaved, their order alternating: a before/after on the same
        moments of a shared machine (each pair's ratio, this build's over the other's)."""
        a = self.a
        tag = f"attach{spares}{'ns' if netns else ''}"
        pol, _ = self.policy(10)
        builds = [("sluice", SLUICE, tag)] + \
            ([(a.compare_label, a.compare, f"{tag}c")] if a.compare else [])
        envs = {label: self.daemon(t, "--spares", str(spares), binary=binary)
                for label, binary, t in builds}
        extra = {label: {"netns": f"/run/netns/{self.client(t)}"} if netns else {}
                 for label, _, t in builds}
        binaries = {label: binary for label, binary, _ in builds}
        ms = {label: [] for label, _, _ in builds}
        taken = {label: 0 for label, _, _ in builds}
        for i in range(times):
            for label, _, t in builds[i % 2:] + builds[:i % 2]:
                env = envs[label]
                cg = self.cgroup(f"slb-{t}-{ID}-{i}")
                rid = f"bench-{ID}-{t}-{i}"
                # every daemon's pool full: no spare loading (nice 19, a core's worth) while
                # the attach is measured, the other build's neither
                for e in envs.values() if spares else ():
                    self.wait_for(lambda: self.request(e, {"op": "ping"})["spares"] >= spares,
                                  600, "the spares")
                t0 = time.monotonic()
                rep = self.request(env, {"op": "attach", "run_id": rid, "cgroup": cg,
                                         "policy": pol, **extra[label]})
                ms[label].append((time.monotonic() - t0) * 1e3)
                taken[label] += bool(rep.get("spare"))
                run(binaries[label], "detach", "--run-id", rid, env=env)
        out = {"median_ms": statistics.median(ms["sluice"]), "p90_ms": pctl(ms["sluice"], 0.9),
               "min_ms": min(ms["sluice"]), "from_spare": taken["sluice"], "attaches": times,
               "ms": ms["sluice"]}
        if a.compare:
            other = ms[a.compare_label]
            ratios = [x / y for x, y in zip(ms["sluice"], other)]
            out["compare"] = {"label": a.compare_label, "median_ms": statistics.median(other),
                              "p90_ms": pctl(other, 0.9), "min_ms": min(other),
                              "from_spare": taken[a.compare_label], "ms": other,
                              "ratio_median": statistics.median(ratios),
                              "won": sum(r < 1 for r in ratios)}
        return out

    def spare_memory(self):
        """The maps of a 10-CIDR run with a host side that took a daemon's spare (sized for any
        policy up to the spares' limits): the writer is the daemon, whose RSS is every run's and
        its next spare's, so only the maps are the run's."""
        env = self.daemon("memspare", "--spares", "1")
        pol, _ = self.policy(10)
        cg = self.cgroup(f"slb-memspare-{ID}")
        rid = f"bench-{ID}-memspare"
        self.wait_for(lambda: self.request(env, {"op": "ping"})["spares"] >= 1, 600, "a spare")
        rep = self.request(env, {"op": "attach", "run_id": rid, "cgroup": cg, "policy": pol,
                                 "netns": f"/run/netns/{self.client('memspare')}"})
        try:
            f = self.run_facts({"run_id": rid, "pid": os.getpid()})
        finally:
            run(SLUICE, "detach", "--run-id", rid, check=False, env=env)
        return {"from_spare": bool(rep.get("spare")), "maps": f["maps"],
                "maps_memlock": f["maps_memlock"], "by_map": f["by_map"]}

    ATTACHES = {"spare": (2, False), "fresh": (0, False), "spare_netns": (2, True),
                "fresh_netns": (0, True)}

    def attaches(self, times):
        return {v: self.attach(times, *self.ATTACHES[v]) for v in self.a.attaches}

    def replace(self, n):
        """replace-policy between two n-CIDR policies on a live run while a process of the run
        connects in a loop: each switch's time, and the connects that failed."""
        env = self.daemon("switch")
        big1, _ = self.policy(n, seed=2, name="big1")
        big2, _ = self.policy(n, seed=3, name="big2")
        ns = self.client("sw")
        cg = self.cgroup(f"slb-sw-{ID}")
        rid = f"bench-{ID}-switch"
        t0 = time.monotonic()
        self.request(env, {"op": "attach", "run_id": rid, "cgroup": cg, "policy": big1,
                           "netns": f"/run/netns/{ns}", "log": f"{self.tmp}/switch.jsonl"})
        out = {"attach_ms": (time.monotonic() - t0) * 1e3}
        fails, conns = f"{self.tmp}/switch.fails", f"{self.tmp}/switch.connects"
        loop = self.bg(["nsenter", f"--net=/run/netns/{ns}", "--", "sh", "-c",
                        'echo $$ >"$1/cgroup.procs" && while :; do "$2" connect "$3" "$4" 50 '
                        '>>"$5" 2>>"$6" || echo fail >>"$6"; done', "sh", cg, BENCH, HOT, PORT,
                        conns, fails], f"{self.tmp}/switch.loop")
        time.sleep(1)
        for step, args in (("replace_ms", ["replace-policy", "--run-id", rid, big2]),
                           ("replace_back_ms", ["replace-policy", "--run-id", rid, big1])):
            t0 = time.monotonic()
            run(SLUICE, *args, env=env)
            out[step] = (time.monotonic() - t0) * 1e3
        time.sleep(1)
        self.stop(loop)
        run(SLUICE, "detach", "--run-id", rid, check=False, env=env)
        out["connects"] = sum(1 for _ in open(conns)) if os.path.exists(conns) else 0
        out["failed"] = sum(1 for x in open(fails) if x.startswith("fail")) \
            if os.path.exists(fails) else 0
        return out

    # -- checks -----------------------------------------------------------------------------
    def check(self, what, ok, value, limit):
        self.checks.append({"check": what, "ok": bool(ok), "value": value, "limit": limit})

    def skip(self, what, value, limit, why):
        """A check this kernel cannot make: reported with its reason, never failed."""
        self.checks.append({"check": what, "ok": True, "value": value, "limit": limit,
                            "skip": why})

    def memlock_estimated(self):
        """Why the kernel's memlock figure of a map is no measure of it (None if it is one).
        Before 6.4 (no per-map memory usage, map_mem_usage) it is max_entries x (key + value),
        rounded up to a page: what a preallocated map of that shape would take, whatever the
        map uses (a trie or hash that allocates per entry counts its maximum, a ring buffer
        nothing). Told by a ring buffer, whose key and value sizes are 0: that formula says
        0 bytes for its pages; a kernel that counts what a map uses, at least its size."""
        if not hasattr(self, "_memlock_why"):
            pin = f"{BPFFS}/slb-memprobe-{ID}"
            run("bpftool", "map", "create", pin, "type", "ringbuf", "key", "0", "value", "0",
                "entries", "4096", "name", "slb_memprobe")
            try:
                memlock = self.bpftool_json("map", "show", "pinned", pin).get("bytes_memlock")
            finally:
                os.unlink(pin)
            self._memlock_why = None if memlock else (
                f"this kernel's map memlock is an estimate (a 4 KiB ring buffer counts "
                f"{memlock} bytes: max_entries x (key + value), before the per-map memory "
                f"usage of 6.4), not what the maps use")
        return self._memlock_why

    def budgets(self):
        b = {}
        for line in open(BUDGETS):
            line = line.split("#", 1)[0].split()
            if len(line) == 2:
                b[line[0]] = float(line[1]) if "." in line[1] else int(line[1])
        return b

    def hold_to_budgets(self, facts, fresh):
        b = self.budgets()
        for name, p in sorted(facts["programs"].items()):
            n = p["verified_insns"] or p["xlated_insns"]
            lim = b.get(f"insns.{name}")
            if lim is None:
                self.check(f"{name}: instructions (no budget in bench-budgets.txt)", False, n, None)
            else:
                self.check(f"{name}: instructions", n <= lim, n, lim)
        why = self.memlock_estimated()
        for f, key, what in ((facts, "memory_mib.run_10", "its learned-address map filled"),
                             (fresh, "memory_mib.run_10_fresh", "fresh")):
            mb = f["total"] / 2**20
            what = f"memory per run, 10 CIDRs, {what} (MiB: maps memlock + writer RSS)"
            if why:
                self.skip(what, round(mb, 1), b[key], why)
            else:
                self.check(what, mb <= b[key], round(mb, 1), b[key])
        # what one more run adds: its maps and the writer's anonymous memory (no shared library
        # page, no second count of the ring buffer's pages through the writer's mapping)
        mb = fresh["total_private"] / 2**20
        lim = b["memory_mib.run_10_private"]
        what = "memory per run, 10 CIDRs, fresh (MiB: maps memlock + writer anonymous)"
        if why:
            self.skip(what, round(mb, 2), lim, why)
        else:
            self.check(what, mb <= lim, round(mb, 2), lim)
        # the same as the kernel charges it, on every kernel whose cgroup2 has a memory
        # controller: the writer cgroup's kernel memory (its maps, programs, page tables)
        what = ("memory per run, 10 CIDRs, fresh (MiB: the writer cgroup's kernel memory + "
                "writer anonymous)")
        lim = b["memory_mib.run_10_charged"]
        if "kernel_charged" in fresh:
            mb = fresh["total_private_charged"] / 2**20
            self.check(what, mb <= lim, round(mb, 2), lim)
        else:
            self.skip(what, "unmeasured", lim, "the cgroup2 root does not enable the memory "
                      "controller for its children (its cgroup.subtree_control)")

    # -- output -----------------------------------------------------------------------------
    @staticmethod
    def targets(R):
        """Issue 15's connect() and per-packet targets, met or missed (reported; a time never
        fails a run)."""
        by = {(r["workload"], r["variant"]): r for r in R.get("connect", [])}
        out = ["| target (issue 15) | workload | CIDRs | value | met |", "|---|---|---|---|---|"]
        for (w, v), r in by.items():
            if not v.startswith("sluice-") or not v.split("-", 1)[1].isdigit():
                continue
            n = v.split("-", 1)[1]
            nft = by.get((w, f"nftables-{n}"))
            for what, val, ok in (
                    ("connect median <= 1.10x none", r["med_x"], r["med_x"] <= 1.10),
                    ("connect p99 <= 1.20x none", r["p99_x"], r["p99_x"] <= 1.20),
                    ("connect median below nftables", nft and r["med_x"] / nft["med_x"],
                     nft and r["med_x"] < nft["med_x"])):
                if val is not None:
                    out.append(f"| {what} | {w} | {n} | {val:.2f} | {'yes' if ok else 'MISS'} |")
        for label, row in R.get("packets", {}).get("variants", {}).items():
            for path in Bench.PATHS:
                val = row[f"{path}_over_empty_ns"]
                out.append(f"| per-packet <= 60 ns over empty | {label}: a packet "
                           f"{'out' if path == 'egress' else 'in'} | {label.rsplit('-', 1)[-1]} "
                           f"| {val:.0f} ns | {'yes' if val <= 60 else 'MISS'} |")
        return out + [""]

    def packets_markdown(self, P):
        hooks = [h for hs in self.PATHS.values() for h in hs]
        out = [f"Per packet on an established TCP flow: {P['rounds']} interleaved rounds x "
               f"{P['writes']} writes of {P['size']} bytes (TCP_NODELAY) per variant, the "
               "kernel's BPF run-time statistics on. ns per run: a program's mean in a round, "
               "median over rounds; over empty: less an empty program's at the same hook in the "
               "same round, which takes out what the statistics add to every run (two clock "
               "reads) and the call; a packet's figure is the sum over the programs on its way "
               "(out: cgroup egress and the host side's tc; in: cgroup ingress). The empty "
               "programs' own ns per run: " + ", ".join(f"{h} {ns:.0f}" for h, ns in
                                                        P["empty_ns"].items()) + ".", "",
               "| variant | program | hook | runs per write | ns per run | over empty ns |",
               "|---|---|---|---|---|---|"]
        for label, row in P["variants"].items():
            for name, p in row["programs"].items():
                if p["hook"] in hooks:
                    over = p["over_empty_ns"]
                    out.append(f"| {label} | {name} | {p['hook']} | {p['runs_per_write']:.2f} | "
                               f"{p['ns_per_run']:.0f} | "
                               f"{'-' if over is None else f'{over:.0f}'} |")
            for path, hs in self.PATHS.items():
                out.append(f"| {label} | a packet {'out' if path == 'egress' else 'in'} | "
                           f"{' + '.join(hs)} | | {row[f'{path}_ns']:.0f} | "
                           f"{row[f'{path}_over_empty_ns']:.0f} |")
        out += ["", "- time per write, end to end (information only: the machine's noise is "
                "larger than the figures above): empty programs "
                f"{P['empty_write_ns']:.0f} ns, " +
                ", ".join(f"{label} {row['write_ns']:.0f} ns ({row['write_x']:.2f}x)"
                          for label, row in P["variants"].items()), ""]
        return out

    def markdown(self):
        R = self.results
        out = []
        if "connect" in R:
            out += [f"connect() and close(), {R['rounds']} interleaved rounds x {R['connects']} "
                    "per variant; x = median over rounds of the ratio to no program in the same "
                    "round; ns = median over rounds; IWI = IRQ-work interrupts per connect; RCU = RCU "
                    "softirqs (machine-wide) per connect", "",
                    "| workload | variant | connect x | p99 x | close x | connect ns | p99 ns | "
                    "close ns | IWI | RCU |", "|---|---|---|---|---|---|---|---|---|---|"]
            for r in R["connect"]:
                out.append(f"| {r['workload']} | {r['variant']} | {r['med_x']:.2f} | "
                           f"{r['p99_x']:.2f} | {r['close_x']:.2f} | {r['med_ns']:.0f} | "
                           f"{r['p99_ns']:.0f} | {r['close_ns']:.0f} | "
                           f"{r['iwi_per_connect']:.2f} | {r.get('rcu_per_connect', 0):.3f} |")
            out.append("")
        if R.get("connect_paired"):
            label = R["connect_paired"][0]["label"]
            out += [f"This build against {label}, round by round: the median over rounds of "
                    f"each round's ratio this/{label} (quartiles; rounds this build was faster); "
                    "ns: this build's median, then theirs", "",
                    "| workload | CIDRs | connect | p99 | close |", "|---|---|---|---|---|"]
            for r in R["connect_paired"]:
                out.append(f"| {r['workload']} | {r['cidrs']} | " + " | ".join(
                    f"{c['median']:.3f} ({c['q1']:.2f}-{c['q3']:.2f}; {c['wins']}/"
                    f"{c['rounds']}) {c['ns']:.0f}/{c['ns_old']:.0f}"
                    for c in (r["med"], r["p99"], r["close"])) + " |")
            out.append("")
        if "packets" in R:
            out += self.packets_markdown(R["packets"])
        if "connect_programs" in R:
            out += self.connect_programs_markdown(R["connect_programs"])
        if "connect" in R or "packets" in R:
            out += self.targets(R)
        if "memory" in R:
            out += ["| run | programs | maps | maps memlock MiB | writer RSS MiB | total MiB | "
                    "writer anonymous MiB | maps + anonymous MiB |",
                    "|---|---|---|---|---|---|---|---|"]
            rows = [(f"{n} CIDRs, learned filled", f) for n, f in R["memory"].items()] + \
                [(f"{n} CIDRs, fresh", f) for n, f in R.get("memory_fresh", {}).items()]
            if "memory_spare" in R:
                f = R["memory_spare"]
                progs = next(iter(R["memory"].values()))["programs"]
                rows.append(("10 CIDRs, from a daemon's spare (maps only)",
                             dict(f, programs=progs, writer_rss=0, writer_anon=0,
                                  total=f["maps_memlock"], total_private=f["maps_memlock"])))
            for what, f in rows:
                out.append(f"| {what} | {len(f['programs'])} | {f['maps']} | "
                           f"{f['maps_memlock'] / 2**20:.1f} | {f['writer_rss'] / 2**20:.1f} | "
                           f"{f['total'] / 2**20:.1f} | "
                           f"{f.get('writer_anon', 0) / 2**20:.1f} | "
                           f"{f.get('total_private', 0) / 2**20:.1f} |")
            first = next(iter(R["memory"].values()))
            if "by_map" in first:
                big = sorted(first["by_map"].items(), key=lambda kv: -kv[1])[:8]
                out += ["", "Largest maps (first run, at the end): " +
                        ", ".join(f"{k} {v / 2**10:.0f} KiB" for k, v in big)]
            out += ["", "| program | instructions (xlated) | verified | JITed bytes |",
                    "|---|---|---|---|"]
            for name, p in sorted(first["programs"].items()):
                out.append(f"| {name} | {p['xlated_insns']} | {p['verified_insns'] or '-'} | "
                           f"{p['jited_bytes']} |")
            out.append("")
        for k in ("pipeline", "pipeline_paced", "pipeline_writer_alone"):
            if k in R:
                p = R[k]
                out.append(f"- {k.replace('_', ' ')}: {p['records']} records"
                           f"{' at ' + str(p['rate']) + '/s' if p['rate'] else ''}"
                           f"{' sent to a stopped writer' if p.get('stopped') else ''}: "
                           f"{p['allow_lines']} logged, {p['lost']} lost, "
                           f"{p['records_per_s']:.0f} records/s end to end, writer CPU "
                           f"{p['writer_cpu_ns_per_record']:.0f} ns per record"
                           + (f" (its thread {p['writer_thread_ns_per_record']:.0f}, other "
                              f"threads {p['other_threads_ns_per_record']:.0f})"
                              if "writer_thread_ns_per_record" in p else "")
                           + (f", sender {p['send_ns_per_record']:.0f} ns and "
                              f"{p['iwi_per_record']:.3f} IRQ-work interrupts per datagram"
                              if "send_ns_per_record" in p else "")
                           + (f"; drained {p['drain_records_per_s']:.0f} records/s, "
                              f"{1e9 / max(p['writer_cpu_ns_per_record'], 1):.0f} per CPU "
                              f"second" if "drain_records_per_s" in p else ""))
        for label, ws in R.get("writer_drained", {}).items():
            med = {k: statistics.median(w[k] for w in ws)
                   for k in ("drain_records_per_s", "writer_cpu_ns_per_record",
                             "writer_thread_ns_per_record", "other_threads_ns_per_record")}
            out.append(f"- writer alone, fed by sl_feed ({label}, median of {len(ws)}): "
                       f"{ws[0]['records']} records into a stopped writer, drained "
                       f"{med['drain_records_per_s']:.0f} records/s, CPU "
                       f"{med['writer_cpu_ns_per_record']:.0f} ns per record (its thread "
                       f"{med['writer_thread_ns_per_record']:.0f}, other threads "
                       f"{med['other_threads_ns_per_record']:.0f}): "
                       f"{1e9 / max(med['writer_cpu_ns_per_record'], 1):.0f} per CPU second")
        for label, w in R.get("writer_paced", {}).items():
            out.append(f"- writer fed by sl_feed ({label}) at {w['rate']}/s for "
                       f"{w['feed_s']:.1f} s (achieved {w['sent_per_s']:.0f}/s): "
                       f"{w['records']} records, {w['lost']} lost (ring full), {w['missing']} "
                       f"without a line; writer CPU "
                       f"{w['writer_cpu_ns_per_record']:.0f} ns per record (its thread "
                       f"{w['writer_thread_ns_per_record']:.0f}, other threads "
                       f"{w['other_threads_ns_per_record']:.0f}), "
                       f"{w['rate'] * w['writer_cpu_ns_per_record'] / 1e9:.2f} CPUs at that "
                       f"rate; {w['log_bytes_per_record']:.0f} bytes of log per record, "
                       f"{w['rate'] * w['log_bytes_per_record'] / 1e6:.0f} MB/s to disk")
        for what, why in R.get("skipped", {}).items():
            out.append(f"- {what}: skipped: {why}")
        if "pipeline" in R and "send_ns_per_record" in R["pipeline"]:
            p = R["pipeline"]
            rate = 1e9 / max(p["send_ns_per_record"], 1)
            out.append(f"- issue 15's 500k records/s for 60 s: the sender's ceiling here is "
                       f"{rate:.0f}/s (one process, a socket per datagram), so it cannot be "
                       f"sent; the writer alone's drain rate above is what it is held to")
        if "startup_ms" in R:
            out.append("- sluice run -- true (no daemon: it loads its own programs), median ms: "
                       + ", ".join(f"{n} CIDRs {v:.0f}" for n, v in R["startup_ms"].items()))
        if "startup_handoff" in R:
            h = R["startup_handoff"]
            out.append(f"- sluice run -- true handed to a daemon (10 CIDRs, {h['from_spare']} of "
                       f"{h['runs']} from a spare), median ms: {h['handed_ms']:.0f}, against "
                       f"{h['standalone_ms']:.0f} standalone ({h['ratio']:.0f}x faster)")
        if "attach" in R:
            out.append("- attach through the daemon (10 CIDRs, request to reply; with spares, "
                       "every daemon's pool full first), ms, median / p90:")
            for v, what in (("spare", "from a spare"), ("fresh", "loading its own (--spares 0)"),
                            ("spare_netns", "from a spare, with a host side (netns, as the "
                                            "OCI hook's)"),
                            ("fresh_netns", "loading its own, with a host side")):
                if v not in R["attach"]:
                    continue
                x = R["attach"][v]
                p90 = f" / {x['p90_ms']:.1f} (min {x['min_ms']:.1f})" if "p90_ms" in x else ""
                line = (f"  - {what}: {x['median_ms']:.1f}{p90} ({x['attaches']} attaches, "
                        f"{x['from_spare']} from a spare)")
                if "compare" in x:
                    c = x["compare"]
                    line += (f"; {c['label']} {c['median_ms']:.1f} / {c['p90_ms']:.1f} "
                             f"(min {c['min_ms']:.1f}), "
                             f"interleaved: this build over {c['label']} per pair, median "
                             f"{c['ratio_median']:.2f} ({c['won']} of {x['attaches']} faster)")
                out.append(line)
        if "replace" in R:
            s = R["replace"]
            out.append(f"- replace-policy at {s['cidrs']} CIDRs on a live run: attach "
                       f"{s['attach_ms']:.0f} ms, replace {s['replace_ms']:.0f} ms, back "
                       f"{s['replace_back_ms']:.0f} ms; {s['connects']} connects meanwhile, "
                       f"{s['failed']} failed")
        if self.checks:
            out += ["", "| check | value | limit | |", "|---|---|---|---|"]
            for c in self.checks:
                out.append(f"| {c['check']} | {c['value']} | {c['limit']} | "
                           f"{'FAIL' if not c['ok'] else 'skipped: ' + c['skip'] if 'skip' in c else 'ok'} |")
        return "\n".join(out) + "\n"

    def main(self):
        a = self.a
        self.server_up()
        run(SLUICE, "keygen", "--name", "sluice-bench", self.key)
        os.environ["SLUICE_KEY"] = self.key
        if a.pipeline_only:
            return self.pipelines_only()
        if a.writer_only:
            return self.writer_only()
        if a.packets_only:
            for n in a.sizes:
                self.runs[n] = self.sluice_up(n)
                if a.compare:
                    self.compare_runs[n] = self.sluice_up(n, a.compare, "cmp")
            self.results["packets"] = self.packets(self.packet_runs())
            return self.write_results()
        if a.connect_programs:
            for n in a.sizes:
                self.runs[n] = self.sluice_up(n)
                if a.compare:
                    self.compare_runs[n] = self.sluice_up(n, a.compare, "cmp")
            self.results["connect_programs"] = self.connect_programs(self.packet_runs())
            return self.write_results()
        if a.attach_only:
            self.results["attach"] = self.attaches(a.starts)
            return self.write_results()
        if a.startup_only:
            self.results["startup_ms"] = {10: self.startup(10, a.starts)}
            self.results["startup_handoff"] = self.startup_handoff(a.starts)
            self.results["attach"] = self.attaches(a.starts)
            return self.write_results()
        self.table()
        self.results["memory"] = {n: self.run_facts(v) for n, v in self.runs.items()}
        self.results["memory_fresh"] = {n: v["fresh"] for n, v in self.runs.items()}
        if a.quick:
            self.results["memory_spare"] = self.spare_memory()
        small = min(self.runs)
        if a.table_only:
            pass
        elif a.quick:
            self.hold_to_budgets(self.results["memory"][small],
                                 self.results["memory_fresh"][small])
            mb = self.results["memory_spare"]["maps_memlock"] / 2**20
            lim = self.budgets()["memory_mib.spare_maps"]
            what = "memory per run, 10 CIDRs, from a daemon's spare (MiB: maps memlock)"
            if not self.results["memory_spare"]["from_spare"]:
                self.check(what + ": the run took a spare", False, round(mb, 2), lim)
            elif self.memlock_estimated():
                self.skip(what, round(mb, 2), lim, self.memlock_estimated())
            else:
                self.check(what, mb <= lim, round(mb, 2), lim)
            pp = self.pipeline(a.paced_records, a.paced_rate, a.ringbuf_kib, self.runs[small])
            self.results["pipeline_paced"] = pp
            self.check(f"records lost at {a.paced_rate}/s paced", pp["lost"] == 0 and
                       pp["allow_lines"] == pp["records"], pp["lost"], 0)
        else:
            self.results["packets"] = self.packets(self.packet_runs())
            for v in self.runs.values():
                self.stop(v["proc"])
            say("pipeline, start-up, attach, replace-policy")
            self.results["pipeline"] = self.pipeline(a.flood, 0, a.flood_ringbuf_kib)
            self.results["pipeline_writer_alone"] = self.pipeline(a.flood, 0,
                                                                  a.flood_ringbuf_kib,
                                                                  stopped=True)
            # the writer fed without a sender: drained, then issue 15's sustained rate
            self.writer_drained("sluice", SLUICE)
            if a.feed_secs:
                self.writer_paced("sluice", SLUICE)
            # one start-up figure per size: --sizes 10 alone is one size, not two runs of
            # the same ids (the second's log would exist already)
            self.results["startup_ms"] = {n: self.startup(n, a.starts)
                                          for n in sorted({min(a.sizes), max(a.sizes)})}
            self.results["startup_handoff"] = self.startup_handoff(a.starts)
            self.results["attach"] = self.attaches(a.starts)
            rep = self.replace(a.replace_cidrs)
            rep["cidrs"] = a.replace_cidrs
            self.results["replace"] = rep
            self.check("connects failed across replace-policy", rep["failed"] == 0 and
                       rep["connects"] > 0, rep["failed"], 0)
        return self.write_results()

    def write_results(self):
        a = self.a
        self.results["checks"] = self.checks
        os.makedirs(a.out, exist_ok=True)
        with open(f"{a.out}/results.json", "w") as f:
            json.dump(self.results, f, indent=1, default=str)
        md = self.markdown()
        with open(f"{a.out}/results.md", "w") as f:
            f.write(md)
        print()
        print(md)
        print(f"written: {a.out}/results.json, {a.out}/results.md")
        return 1 if any(not c["ok"] for c in self.checks) else 0

    def pipelines_only(self):
        """--pipeline-only: the flood into a fresh run of each build, one after the other."""
        a = self.a
        builds = [("sluice", SLUICE)] + ([(a.compare_label, a.compare)] if a.compare else [])
        for r in range(a.rounds):
            for label, binary in builds:
                p = self.pipeline(a.flood, 0, a.flood_ringbuf_kib, binary=binary)
                self.results.setdefault("pipelines", {}).setdefault(label, []).append(p)
                say(f"{label}: " + json.dumps(p))
        os.makedirs(a.out, exist_ok=True)
        with open(f"{a.out}/pipelines.json", "w") as f:
            json.dump(self.results, f, indent=1)
        return 0

    def cleanup(self):
        # a second SIGTERM (or Ctrl-C) must not cut the cleanup short: it would leave the
        # namespaces, cgroups and pins it is removing
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except sp.TimeoutExpired:
                    p.kill()
        for u in reversed(self.undo):
            try:
                u()
            except Exception as e:  # cleanup goes on whatever one step says
                print(f"cleanup: {e}", file=sys.stderr)
        for d in os.listdir(f"{BPFFS}/sluice") if os.path.isdir(f"{BPFFS}/sluice") else []:
            if d.startswith(f"bench-{ID}-"):
                shutil.rmtree(f"{BPFFS}/sluice/{d}", ignore_errors=True)
        if not os.environ.get("BENCH_KEEP_TMP"):
            shutil.rmtree(self.tmp, ignore_errors=True)


def verifier_figures(objdir, rounds):
    """Per program of the BPF objects in objdir (sl_verifier): the verifier's figures, its time
    the median of rounds loads."""
    objs = sorted(f"{objdir}/{f}" for f in os.listdir(objdir) if f.endswith(".linked.o"))
    if not objs:
        raise SetupError(f"no .linked.o in {objdir} (make)")
    progs, refused = {}, set()
    for _ in range(rounds):
        for line in run(f"{TOOLS}/sl_verifier", *objs).stdout.splitlines():
            f = line.split("\t")
            if f[1] == "-":
                refused.add(os.path.basename(f[0]))
                continue
            p = progs.setdefault(f[1], {"object": os.path.basename(f[0]), "verify_us": []})
            p["verify_us"].append(int(f[2]))
            p.update(processed=int(f[3]), peak_states=int(f[4]), total_states=int(f[5]),
                     xlated_insns=int(f[6]))
    for p in progs.values():
        p["verify_ms"] = statistics.median(p.pop("verify_us")) / 1000
    return {"programs": progs, "refused": sorted(refused)}


def verifier_only(a):
    """--verifier-only: what the kernel's verifier spends on each program, this build's objects
    and, with --compare-objs, another's side by side. No namespace, no run."""
    builds = [("this", f"{REPO}/.output/bpf")] + \
        ([(a.compare_label, a.compare_objs)] if a.compare_objs else [])
    res = {label: verifier_figures(d, a.rounds) for label, d in builds}
    os.makedirs(a.out, exist_ok=True)
    with open(f"{a.out}/verifier.json", "w") as f:
        json.dump(res, f, indent=1)
    head = "| program | insns processed | peak states | verify ms | insns loaded |"
    if a.compare_objs:
        head += f" {a.compare_label}: processed | peak | ms | loaded |"
    out = [f"verifier, median of {a.rounds} loads (sl_verifier; ms moves with the load, "
           "instructions and states do not)", "", head,
           "|---" * (head.count("|") - 1) + "|"]
    total = {label: [0, 0.0] for label, _ in builds}
    for name in sorted(res["this"]["programs"]):
        row = f"| {name} |"
        for label, _ in builds:
            p = res[label]["programs"].get(name)
            if p:
                total[label][0] += p["processed"]
                total[label][1] += p["verify_ms"]
                row += (f" {p['processed']} | {p['peak_states']} | {p['verify_ms']:.1f} | "
                        f"{p['xlated_insns']} |")
            else:
                row += " - | - | - | - |"
        out.append(row)
    row = "| all |"
    for label, _ in builds:
        row += f" {total[label][0]} | | {total[label][1]:.1f} | |"
    out.append(row)
    for label, _ in builds:
        if res[label]["refused"]:
            out.append(f"\n{label}: refused by this kernel: {', '.join(res[label]['refused'])}")
    print("\n".join(out))
    print(f"\nwritten: {a.out}/verifier.json")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="make bench-quick: short table, then the budget checks (no time)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (15; quick 3)")
    ap.add_argument("--connects", type=int,
                    help="connects per variant, workload and round (10000; quick 1000)")
    ap.add_argument("--sizes", help="CIDR counts of the policies (10,10000,100000; quick 10)")
    ap.add_argument("--out", help="results directory (.output/bench or .output/bench-quick)")
    ap.add_argument("--ringbuf-kib", default=1024, type=int,
                    help="ring buffer of the table's runs (sluice run's default)")
    ap.add_argument("--flood", default=200000, type=int,
                    help="records of the pipeline measure")
    ap.add_argument("--paced-records", default=20000, type=int,
                    help="quick: records sent paced, none may be lost")
    ap.add_argument("--paced-rate", default=10000, type=int, help="quick: their rate, per s")
    ap.add_argument("--starts", default=5, type=int,
                    help="sluice run -- true and daemon attaches measured")
    ap.add_argument("--replace-cidrs", default=100000, type=int,
                    help="CIDRs of the two policies replace-policy swaps")
    ap.add_argument("--no-nft", action="store_true", help="leave nftables out")
    ap.add_argument("--no-proxy", action="store_true", help="leave tinyproxy out")
    ap.add_argument("--compare", metavar="SLUICE",
                    help="another build's sluice binary, run as more variants (before/after)")
    ap.add_argument("--compare-label", default="other", help="those variants' name")
    ap.add_argument("--flood-ringbuf-kib", default=65536, type=int,
                    help="ring buffer of the pipeline measure's run")
    ap.add_argument("--pipeline-only", action="store_true",
                    help="only the pipeline measure, --rounds times per build")
    ap.add_argument("--writer-only", action="store_true",
                    help="only the writer fed by sl_feed (no sender): drained, --rounds times "
                    "per build (--compare: before/after), then paced at --feed-rate for "
                    "--feed-secs")
    ap.add_argument("--feed-rate", default=500000, type=int,
                    help="the writer fed paced: records per second (issue 15: 500k)")
    ap.add_argument("--feed-secs", default=60, type=int,
                    help="... for this many seconds (issue 15: 60; 0: not at all)")
    ap.add_argument("--feed-log-dir", metavar="DIR",
                    help="the fed writer's log there (a tmpfs: the writer without the disk; "
                    "default: bench.py's temporary directory); a feed whose log would not fit "
                    "its free space is skipped, saying so")
    ap.add_argument("--stop-writer", action="store_true",
                    help="pipeline: the writer stopped while the flood is sent (what a writer "
                    "that falls behind costs the sender)")
    ap.add_argument("--no-backstop-variant", action="store_true",
                    help="the table: each sluice run again without its backstop "
                    "(SLUICE_SELFTEST_NO_BACKSTOP)")
    ap.add_argument("--writer-stopped", action="store_true",
                    help="the table: each sluice run again with its writer stopped (SIGSTOP) "
                    "while measured, records left in its ring (give it room: --ringbuf-kib)")
    ap.add_argument("--startup-only", action="store_true",
                    help="only sluice run -- true (10 CIDRs) and the daemon's attach, from a spare "
                    "and loading its own, --starts times each")
    ap.add_argument("--packets", default=100000, type=int,
                    help="per packet: writes per variant and round (a packet each)")
    ap.add_argument("--packet-size", default=64, type=int, help="per packet: bytes per write")
    ap.add_argument("--connect-programs", action="store_true",
                    help="only where connect()+close() go in the runs' programs: a run per "
                    "--sizes (--compare's too) and the empty programs, the table's workloads, "
                    "--rounds interleaved rounds, the kernel's BPF run-time statistics on")
    ap.add_argument("--packets-only", action="store_true",
                    help="only the per-packet figure: a run per --sizes (--compare's too) and "
                    "the empty programs, --rounds interleaved rounds")
    ap.add_argument("--attach-only", action="store_true",
                    help="only the daemon's attaches (from a spare and loading its own, each "
                    "without and with a host side: --attaches), --starts times each; with "
                    "--compare, the other build's daemon's attaches interleaved with them")
    ap.add_argument("--attaches", default=",".join(Bench.ATTACHES),
                    help="which attaches (spare,fresh,spare_netns,fresh_netns: all)")
    ap.add_argument("--table-only", action="store_true",
                    help="the connect() table and memory per run, nothing after them")
    ap.add_argument("--verifier-only", action="store_true",
                    help="only the kernel verifier's figures per program (instructions "
                    "processed, peak states, time: the median of --rounds loads, default 5), "
                    "from the built objects; no namespace, no run")
    ap.add_argument("--compare-objs", metavar="DIR",
                    help="--verifier-only: another build's BPF objects (its .output/bpf), "
                    "side by side, labelled --compare-label")
    ap.add_argument("--render", metavar="RESULTS_JSON",
                    help="print the markdown of a results.json again, measure nothing")
    a = ap.parse_args()
    if a.render:
        b = Bench.__new__(Bench)
        b.results = json.load(open(a.render))
        b.checks = b.results.get("checks", [])
        sys.stdout.write(b.markdown())
        sys.exit(0)
    a.rounds = a.rounds or (3 if a.quick or a.writer_only else 5 if a.verifier_only else 15)
    a.connects = a.connects or (1000 if a.quick else 10000)
    a.sizes = [int(x) for x in (a.sizes or ("10" if a.quick else "10,10000,100000")).split(",")]
    a.out = a.out or f"{REPO}/.output/{'bench-quick' if a.quick else 'bench'}"
    a.attaches = a.attaches.split(",")
    if set(a.attaches) - set(Bench.ATTACHES):
        ap.error(f"--attaches: expected some of {','.join(Bench.ATTACHES)}")
    if os.geteuid():
        sys.exit("make bench needs root")
    if a.verifier_only:
        try:
            sys.exit(verifier_only(a))
        except (SetupError, sp.TimeoutExpired, OSError) as e:
            print(f"bench: {e}", file=sys.stderr)
            sys.exit(2)
    for t, mode in ((SLUICE, os.X_OK), (BENCH, os.X_OK), (PACKET_PROGS, os.R_OK), (FEED, os.X_OK),
                    (FEED_OBJ, os.R_OK)):
        if not os.access(t, mode):
            print(f"{t} not built (make)", file=sys.stderr)
            sys.exit(2)
    table = not (a.pipeline_only or a.startup_only or a.packets_only or a.attach_only or
                 a.connect_programs or a.writer_only)
    for t in ([] if a.no_nft or not table else ["nft"]) + \
            ([] if a.no_proxy or not table else ["tinyproxy"]) + \
            ["bpftool", "nsenter", "unshare"]:
        if not shutil.which(t):
            print(f"{t} not installed", file=sys.stderr)
            sys.exit(2)
    # SIGTERM (a timeout, a supervisor) ends it through the same cleanup as a normal exit
    signal.signal(signal.SIGTERM, on_sigterm)
    b = Bench(a)
    try:
        rc = b.main()
    except (SetupError, sp.TimeoutExpired, OSError) as e:
        print(f"bench: {e}", file=sys.stderr)
        rc = 2
    except KeyboardInterrupt:
        rc = 130
    except Terminated:
        print("bench: terminated (SIGTERM): cleaning up", file=sys.stderr)
        rc = 143
    finally:
        b.cleanup()
    sys.exit(rc)


if __name__ == "__main__":
    main()
