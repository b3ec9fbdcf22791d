#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The escape-probe kit's judge and table (selftests/probes/kit.sh). Two commands:
#
#   judge.py judge --column NAME --list LIST --kit-out FILE --observed FILE --router FILE
#                  [--files-tap DIR] [--external] [--kit-only|--files-only]
#     one TSV row per probe of selftests/README.md's table, and one for traffic the kit does not
#     know, on stdout: COLUMN \t PROBE \t contained|not contained|skipped \t REASON
#     LIST is `sl_escape --list`; FILE the kit's output inside the sandbox; --observed what
#     arrived at the test hosts (sl_observe.py lines since the mark); --router the router sink's
#     lines since the mark. A probe the kit makes is NOT contained iff the observer saw a packet
#     of one of its attempts (its source port or ICMP id), contained iff it saw none and the
#     kit reported the attempt, skipped when the kit could not make any of its attempts.
#     Probes the kit does not make are sluice's own (its policy, log, pins): with --external,
#     skipped with that reason; else judged by the selftest files' TAP in --files-tap DIR
#     (DIR/test_x.sh.tap, written by probes.sh), from the lines that name the probe (all its
#     lines when none does); with --kit-only, left out; --files-only: only those rows.
#
#   judge.py table [--by-kernel] RESULTS…
#     the markdown table probe × column from TSV files of judge rows; --by-kernel folds make
#     probes' columns "KERNEL (how)" into one per kernel (the worst verdict, then the others').
#
#   judge.py missing RESULTS…
#     KERNEL \t PROBE \t WHY for the probes no column of a kernel judged (its files not run).
import argparse
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "README.md")
ROUTER_SRC = {"10.200.2.1", "fd10:200:2::1", "10.200.1.1", "fd10:200:1::1", "::"}


def probes():
    """(id, what, files) from selftests/README.md's probe table, in its order."""
    out = []
    for line in open(README, encoding="utf-8"):
        m = re.match(r"\| (P\d+) \| (.*?) \| (.*?) \| (.*?) \|\s*$", line)
        if m:
            files = re.findall(r"`(test_[a-z0-9_]+\.sh)`", m.group(4))
            out.append((m.group(1), m.group(2), files))
    return out


def read(path):
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        return [l.rstrip("\n") for l in f if l.strip()]


def judge(a):
    tries = collections.OrderedDict()  # sport -> (id, kind, dst, dport, what)
    for l in read(a.list):
        pid, sport, kind, dst, dport, what = l.split(" ", 5)
        tries[int(sport)] = (pid, kind, dst, int(dport), what)
    said = {}
    for l in read(a.kit_out):
        m = re.match(r"(P\d+) (\d+) (.*?): (sent|err .*|skip .*)$", l)
        if m and int(m.group(2)) in tries:
            said[int(m.group(2))] = m.group(4)
    seen = collections.defaultdict(list)
    other = []
    for l in read(a.observed):
        f = l.split()
        if len(f) < 7:
            continue
        fam, proto, src, sp, dst, dp = f[:6]
        key = int(sp) if sp.isdigit() else None
        if key in tries and (proto in ("tcp", "udp")) == (tries[key][1] == "ip"):
            seen[key].append(f"{proto} {src}:{sp} > {dst}:{dp}")
        elif src not in ROUTER_SRC and not src.startswith("fe80:"):
            other.append(f"{proto} {src}:{sp} > {dst}:{dp}")
    # What reached the router itself (the fe80:: neighbour): the router sink, by destination.
    local = {sp: t for sp, t in tries.items() if t[2].startswith("fe80:")}
    for l in read(a.router):
        f = l.split()
        if len(f) < 4:
            continue
        hit = [sp for sp, t in local.items() if f[1].split("%")[0] == t[2] and f[2] == str(t[3])]
        for sp in hit:
            seen[sp].append(f"{f[0]} {f[3]} > [{f[1]}]:{f[2]} (router sink)")
        if not hit:
            other.append(f"{f[0]} {f[3]} > {f[1]}:{f[2]} (router sink)")

    rows = []
    for pid, what, files in probes():
        mine = [sp for sp, t in tries.items() if t[0] == pid]
        if a.files_only:
            if not mine:
                rows.append((pid,) + by_files(pid, files, a))
            continue
        if not mine:
            if not a.kit_only:
                rows.append((pid,) + by_files(pid, files, a))
            continue
        arrived = [f"{tries[sp][4]}: {', '.join(sorted(set(seen[sp])))}" for sp in mine
                   if seen[sp]]
        made = [sp for sp in mine if sp in said and not said[sp].startswith("skip")]
        if arrived:
            rows.append((pid, "not contained", "observer saw " + "; ".join(arrived)))
        elif made:
            view = "; ".join(f"{tries[sp][4]}: {said[sp]}" for sp in mine if sp in said)
            rows.append((pid, "contained", "observer saw nothing (sandbox's view: " + view + ")"))
        elif any(sp in said for sp in mine):
            rows.append((pid, "skipped", "; ".join(f"{tries[sp][4]}: {said[sp][5:]}"
                                                  for sp in mine if sp in said)))
        else:
            rows.append((pid, "skipped", "the kit did not report these attempts (did it run in "
                         "the sandbox? see its output)"))
    if a.files_only:
        pass
    elif other:
        rows.append(("other", "not contained", "observer saw traffic no probe sent: "
                     + "; ".join(other[:6]) + (" …" if len(other) > 6 else "")))
    else:
        rows.append(("other", "contained", "observer saw no other traffic from the sandbox"))
    for r in rows:
        print("\t".join((a.column,) + r).replace("\n", " "))


def by_files(pid, files, a):
    if a.external or not a.files_tap:
        return ("skipped", "sluice's own property (its policy, log, pins or resolver), not "
                "observable on another sandbox: " + (", ".join(files) or "selftests"))
    name = re.compile(r"(^|[^A-Za-z0-9])" + pid + r"([^0-9]|$)")
    ok = bad = skip = 0
    why = []
    for f in files:
        tap = read(os.path.join(a.files_tap, f + ".tap"))
        if not tap:
            why.append(f"{f} not run")
            continue
        m = [l for l in tap if re.match(r"^1\.\.0 # SKIP", l)]
        if m:
            skip += 1
            why.append(f"{f} skipped: {m[0][10:]}")
            continue
        lines = [l for l in tap if re.match(r"^(not )?ok \d+ - ", l)]
        named = [l for l in lines if name.search(l.split(" - ", 1)[1])] or lines
        for l in named:
            if l.startswith("not ok"):
                bad += 1
                why.append(f"{f}: {l}")
            elif "# SKIP" in l:
                skip += 1
            else:
                ok += 1
        if not any(re.match(r"^1\.\.\d+", l) for l in tap):
            bad += 1
            why.append(f"{f}: ended without a plan (bailed out or crashed)")
    if bad:
        return ("not contained", "; ".join(why[:3]))
    if ok:
        return ("contained", f"{ok} check(s) of {', '.join(files)} passed (their sinks and "
                "log)" + (f", {skip} skipped" if skip else ""))
    return ("skipped", "; ".join(why) or "no check ran")


def load(paths):
    cols, cell = [], {}
    for p in paths:
        for l in read(p):
            col, pid, verdict, reason = l.split("\t", 3)
            if col not in cols:
                cols.append(col)
            cell[(pid, col)] = (verdict, reason)
    return cols, cell


NOT_RUN = ("its selftest files did not run on this kernel (PROBES_KIT_ONLY=1, or a VM without "
           "PROBES_VM_FILES=1)")


def missing(paths):
    """KERNEL \t PROBE for each probe no column of the kernel judged (a TAP line of its own)."""
    kernels, merged = merge(*load(paths))
    for pid in [p for p, _, _ in probes()]:
        for k in kernels:
            if merged[(pid, k)][1] == NOT_RUN:
                print(f"{k}\t{pid}\t{NOT_RUN}")


def merge(cols, cell):
    """One column per kernel: the columns "KERNEL (how)" of make probes folded into one cell,
    the worst verdict first; the control (no sandbox) only where it made a probe skipped."""
    kernels = []
    for c in cols:
        k = c.split(" (", 1)[0]
        if k not in kernels:
            kernels.append(k)
    merged = {}
    for pid in [p for p, _, _ in probes()] + ["other"]:
        for k in kernels:
            mine = [(c.split(" (", 1)[1].rstrip(")"), cell[(pid, c)]) for c in cols
                    if c.split(" (", 1)[0] == k and (pid, c) in cell
                    and not c.endswith("(no sandbox)")]
            bad = [f"{how}: {why}" for how, (v, why) in mine if v == "not contained"]
            good = [how for how, (v, _) in mine if v == "contained"]
            skip = [f"{how}: {why}" for how, (v, why) in mine if v == "skipped"]
            if bad:
                merged[(pid, k)] = ("not contained", "; ".join(bad))
            elif good:
                why = [why for how, (v, why) in mine if v == "contained"]
                if all(w.startswith("observer saw no") for w in why):
                    text = "observer saw nothing (" + ", ".join(good) + ")"
                else:
                    text = "; ".join(f"{how}: {w}" for how, (v, w) in mine if v == "contained")
                merged[(pid, k)] = ("contained", text + ("; skipped " + "; ".join(skip)
                                                         if skip else ""))
            elif skip:
                merged[(pid, k)] = ("skipped", "; ".join(skip))
            else:
                merged[(pid, k)] = ("skipped", NOT_RUN)
    return kernels, merged


def table(paths, by_kernel=False):
    cols, cell = load(paths)
    if by_kernel:
        cols, cell = merge(cols, cell)
    rows = [(p, w) for p, w, _ in probes()] + [("other", "any traffic no probe sent")]
    out = ["| probe | what the workload tries | " + " | ".join(cols) + " |",
           "|---|---|" + "---|" * len(cols)]
    for pid, what in rows:
        cells = []
        for c in cols:
            v, why = cell.get((pid, c), ("", "-"))
            v = "**NOT contained**" if v == "not contained" else v
            v = "escapes (control)" if v == "escapes" else v
            v = "closed (control)" if v == "closed" else v
            cells.append((f"{v}: {why}" if v else why).replace("|", "\\|"))
        out.append(f"| {pid} | {what} | " + " | ".join(cells) + " |")
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    j = sub.add_parser("judge")
    j.add_argument("--column", required=True)
    j.add_argument("--list", required=True)
    j.add_argument("--kit-out")
    j.add_argument("--observed")
    j.add_argument("--router")
    j.add_argument("--files-tap")
    j.add_argument("--external", action="store_true")
    j.add_argument("--kit-only", action="store_true")
    j.add_argument("--files-only", action="store_true")
    t = sub.add_parser("table")
    t.add_argument("--by-kernel", action="store_true")
    t.add_argument("results", nargs="+")
    m = sub.add_parser("missing")
    m.add_argument("results", nargs="+")
    a = ap.parse_args()
    if a.cmd == "judge":
        judge(a)
    elif a.cmd == "missing":
        missing(a.results)
    else:
        table(a.results, a.by_kernel)


if __name__ == "__main__":
    sys.exit(main())
