#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_logcheck LOG [--pub VKEY_FILE] [--copy FILE]… [--unsealed] [--summary]

An independent check of a sluice log, written from the format's description (README "Evidence")
and sharing no code with sluice: hashlib for SHA-256, python3-cryptography for Ed25519.

- every line canonical: parsed from its bytes and re-serialized under the canonical rules, the
  result must be the same bytes (so a different escape, spacing or number form is caught);
- seq contiguous from 0 and prev the SHA-256 of the line before, across LOG.NNNNNN.gz segments;
- line 0 is log_start; with --pub, its cert is a note by that host key naming the origin and run
  key; every checkpoint: size == seq, root == the RFC 9162 root of the lines before it, note
  text == origin/size/root, signed by the run key; rotated segments end with a "rotate" one;
- line 1 is run_start; the last line is the "final" checkpoint, and the last line before it
  that is not a checkpoint is run_end
  (--unsealed: a run killed before its end; the structure at the end is not checked);
- kernel sequence numbers (the lines' "kseq"): each at most once, all below run_end.kseq_next;
  every loss record has a "kseq_below" that never goes down, is at least the records declared
  lost so far and at most kseq_next; at the end, the values of [0, kseq_next) no line carries
  are exactly as many as the loss records declare plus run_end.unlogged, and when there are any
  the one loss_ranges record (before run_end) counts them ("missing") and lists their maximal
  ranges ("ranges": first,last,… ascending, the first ones; "truncated" if more exist); when
  there are none there is no loss_ranges record. (sluice verify reads kseq_below and
  loss_ranges when present; this checker, which tests the writer, requires them.)
- --copy FILE: FILE holds exactly the log's checkpoint notes, each followed by one blank line
  (the sidecar LOG.checkpoints, or what --checkpoint-fd received), and, when the log ends with
  its seal (size S), one more note of size S + 1 by the run key whose root covers the seal line.
- segment k is LOG.k.gz, else the plain LOG.k (a rotation whose compression did not happen);
  when both exist the plain one is read and the .gz must decompress to the same bytes;
  LOG.k.gz.tmp is never read;
- a loss or anomaly line is followed at once by a checkpoint of that reason.

Exit 0 when all holds (--summary then prints one line of counts), 1 with "where: why" otherwise.
"""
import base64
import gzip
import hashlib
import os
import re
import sys

KEY_RE = re.compile(rb"[a-z0-9_]+\Z")
REASONS = {"lines", "time", "heartbeat", "loss", "anomaly", "rotate", "final"}
RANGES_LISTED = 256  # the most ranges a loss_ranges record lists


class Bad(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Canonical form: parse bytes leniently, re-serialize strictly, compare.

def parse_string(b, i):
    assert b[i:i + 1] == b'"'
    i += 1
    out = bytearray()
    while True:
        if i >= len(b):
            raise Bad("unterminated string")
        c = b[i]
        if c == 0x22:
            return bytes(out), i + 1
        if c == 0x5C:
            e = b[i + 1:i + 2]
            simple = {b'"': b'"', b"\\": b"\\", b"/": b"/", b"b": b"\b", b"f": b"\f",
                      b"n": b"\n", b"r": b"\r", b"t": b"\t"}
            if e in simple:
                out += simple[e]
                i += 2
            elif e == b"u":
                h = b[i + 2:i + 6]
                if len(h) != 4 or not re.fullmatch(rb"[0-9a-fA-F]{4}", h):
                    raise Bad(f"bad \\u escape at byte {i}")
                cp = int(h, 16)
                out += bytes([cp]) if cp <= 0xFF else chr(cp).encode("utf-8", "surrogatepass")
                i += 6
            else:
                raise Bad(f"bad escape at byte {i}")
        else:
            out.append(c)
            i += 1


def parse_int(b, i):
    m = re.compile(rb"-?[0-9]+").match(b, i)
    if not m:
        raise Bad(f"unexpected byte {b[i:i + 1]!r} at {i}")
    return int(m.group()), m.end()


def parse_value(b, i):
    c = b[i:i + 1]
    if c == b'"':
        return parse_string(b, i)
    if c == b"[":
        i += 1
        vals = []
        while b[i:i + 1] != b"]":
            if vals:
                if b[i:i + 1] != b",":
                    raise Bad(f"expected , in array at byte {i}")
                i += 1
            v, i = parse_value(b, i)
            if isinstance(v, list):
                raise Bad("nested array")
            vals.append(v)
        return vals, i + 1
    for lit, v in ((b"true", True), (b"false", False), (b"null", None)):
        if b.startswith(lit, i):
            return v, i + len(lit)
    return parse_int(b, i)


def parse_line(b):
    if not b.startswith(b"{"):
        raise Bad("not an object")
    i = 1
    pairs = []
    while b[i:i + 1] != b"}":
        if pairs:
            if b[i:i + 1] != b",":
                raise Bad(f"expected , at byte {i}")
            i += 1
        k, i = parse_string(b, i)
        if b[i:i + 1] != b":":
            raise Bad(f"expected : at byte {i}")
        v, i = parse_value(b, i + 1)
        pairs.append((k, v))
    if i + 1 != len(b):
        raise Bad(f"trailing bytes after the object at byte {i + 1}")
    return pairs


def canon_string(s):
    out = bytearray(b'"')
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x22:
            out += b'\\"'
        elif c == 0x5C:
            out += b"\\\\"
        elif c == 0x0A:
            out += b"\\n"
        elif c == 0x09:
            out += b"\\t"
        elif c < 0x20 or c == 0x7F:
            out += b"\\u%04x" % c
        elif c < 0x80:
            out.append(c)
        else:
            n = 2 if 0xC0 <= c < 0xE0 else 3 if 0xE0 <= c < 0xF0 else 4 if 0xF0 <= c < 0xF8 else 0
            try:
                if not n:
                    raise UnicodeDecodeError("utf-8", b"", 0, 1, "lead")
                s[i:i + n].decode("utf-8")  # strict: no overlong, surrogate, > U+10FFFF
                out += s[i:i + n]
                i += n
                continue
            except UnicodeDecodeError:
                out += b"\\u%04x" % c
        i += 1
    return bytes(out + b'"')


def canon_value(v):
    if v is True:
        return b"true"
    if v is False:
        return b"false"
    if v is None:
        return b"null"
    if isinstance(v, int):
        if not -(2**63) <= v < 2**64:
            raise Bad(f"integer {v} out of range")
        return b"%d" % v
    if isinstance(v, bytes):
        return canon_string(v)
    for x in v:
        if not isinstance(x, (bytes, int)) or isinstance(x, bool):
            raise Bad("array element that is not a string or integer")
    return b"[" + b",".join(canon_value(x) for x in v) + b"]"


def check_canonical(b):
    pairs = parse_line(b)
    seen = set()
    for k, _ in pairs:
        if not KEY_RE.match(k):
            raise Bad(f"key {k!r} is not [a-z0-9_]+")
        if k in seen:
            raise Bad(f"duplicate key {k!r}")
        seen.add(k)
    keys = [k for k, _ in pairs[:4]]
    if keys != [b"seq", b"prev", b"ts", b"type"]:
        raise Bad(f"line starts with keys {keys}, expected seq, prev, ts, type")
    out = b"{" + b",".join(canon_string(k) + b":" + canon_value(v) for k, v in pairs) + b"}"
    if out != b:
        n = next((i for i in range(min(len(out), len(b))) if out[i] != b[i]), min(len(out), len(b)))
        raise Bad(f"not canonical at column {n + 1}: {b[max(0, n - 20):n + 20]!r}")
    obj = {}
    for k, v in pairs:
        if isinstance(v, bytes):
            v = v.decode("utf-8", "surrogateescape")
        elif isinstance(v, list):
            v = [x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else x for x in v]
        obj[k.decode()] = v
    for k in ("seq", "ts"):
        if not isinstance(obj[k], int) or isinstance(obj[k], bool):
            raise Bad(f"{k} is not an integer")
    return obj


# ---------------------------------------------------------------------------------------------
# Merkle tree (RFC 9162 2.1), as a stack of perfect subtrees

class Tree:
    def __init__(self):
        self.stack = []  # (height, hash), heights strictly decreasing
        self.size = 0

    def append(self, line):
        h, ht = hashlib.sha256(b"\x00" + line).digest(), 0
        while self.stack and self.stack[-1][0] == ht:
            left = self.stack.pop()[1]
            h, ht = hashlib.sha256(b"\x01" + left + h).digest(), ht + 1
        self.stack.append((ht, h))
        self.size += 1

    def root(self):
        if not self.stack:
            return hashlib.sha256(b"").digest()
        r = self.stack[-1][1]
        for _, h in reversed(self.stack[:-1]):
            r = hashlib.sha256(b"\x01" + h + r).digest()
        return r


# ---------------------------------------------------------------------------------------------
# Signed notes

def parse_vkey(vkey):
    # the name has no "+", the hash is 8 hex digits; the base64 key may hold "+" itself
    m = re.fullmatch(r"([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)", vkey.strip("\n"))
    if not m:
        raise Bad(f"verifier key {vkey!r} is not NAME+HASH+KEY")
    name, hexhash, b64 = m.groups()
    raw = base64.b64decode(b64, validate=True)
    if len(raw) != 33 or raw[0] != 1:
        raise Bad(f"verifier key {vkey!r}: not an Ed25519 key")
    khash = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    if khash.hex() != hexhash:
        raise Bad(f"verifier key {vkey!r}: hash {hexhash} should be {khash.hex()}")
    return name, khash, raw[1:]


def open_note(note, vkey):
    """The note's text, if it carries a valid signature by vkey."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    name, khash, pub = parse_vkey(vkey)
    b = note.encode("utf-8")
    cut = b.rfind(b"\n\n")
    if cut < 0 or not b.endswith(b"\n"):
        raise Bad("note has no signature block")
    text, sigs = b[:cut + 1], b[cut + 2:]
    for line in sigs[:-1].split(b"\n"):
        if not line.startswith("\u2014 ".encode()):
            raise Bad(f"note signature line {line!r} does not start with an em dash")
        who, _, b64 = line[len("\u2014 ".encode()):].rpartition(b" ")
        raw = base64.b64decode(b64, validate=True)
        if who.decode() != name or raw[:4] != khash:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(pub).verify(raw[4:], text)
        except InvalidSignature:
            raise Bad(f"note signature by {name} does not verify") from None
        return text.decode()
    raise Bad(f"note carries no signature by {name}+{khash.hex()}")


# ---------------------------------------------------------------------------------------------

def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


class Kseqs:
    """The kernel sequence numbers of a log, and what its loss records say about them."""

    def __init__(self):
        self.seen = set()
        self.declared = 0
        self.below = None  # (the last loss.kseq_below, where)
        self.ranges = None  # (the loss_ranges record, where)
        self.end = None  # run_end

    def line(self, o):
        k = o.get("kseq")
        if k is not None:
            if not is_uint(k):
                raise Bad(f"kseq {k!r} is not a non-negative integer")
            if k in self.seen:
                raise Bad(f"kseq {k} appears twice")
            if self.end is not None and k >= self.end["kseq_next"]:
                raise Bad(f"kseq {k} after run_end, whose kseq_next is {self.end['kseq_next']}")
            self.seen.add(k)

    def loss(self, o, where):
        if not is_uint(o["count"]):
            raise Bad("loss count is not a non-negative integer")
        self.declared += o["count"]
        kb = o.get("kseq_below")
        if not is_uint(kb):
            raise Bad("loss record without a non-negative integer kseq_below")
        if self.below is not None and kb < self.below[0]:
            raise Bad(f"kseq_below {kb} went down from {self.below[0]} ({self.below[1]})")
        if kb < self.declared:
            raise Bad(f"kseq_below {kb}, but {self.declared} records were declared lost so far")
        if self.end is not None and kb > self.end["kseq_next"]:
            raise Bad(f"kseq_below {kb} past run_end's kseq_next {self.end['kseq_next']}")
        self.below = (kb, where)

    def loss_ranges(self, o, where):
        if self.ranges is not None:
            raise Bad(f"a second loss_ranges record (the first: {self.ranges[1]})")
        if self.end is not None:
            raise Bad("loss_ranges after run_end")
        r = o["ranges"]
        if not is_uint(o["missing"]) or not isinstance(r, list) or not all(map(is_uint, r)):
            raise Bad("loss_ranges: missing or ranges is not (a list of) non-negative integers")
        if len(r) % 2 or len(r) > 2 * RANGES_LISTED:
            raise Bad(f"loss_ranges: {len(r)} values in ranges (pairs, at most {RANGES_LISTED})")
        if not isinstance(o["truncated"], bool):
            raise Bad("loss_ranges: truncated is not true or false")
        self.ranges = (o, where)

    def run_end(self, o):
        if self.end is not None:
            raise Bad("a second run_end record")
        kn = o["kseq_next"]
        if not is_uint(kn):
            raise Bad("run_end kseq_next is not a non-negative integer")
        if self.seen and max(self.seen) >= kn:
            raise Bad(f"kseq_next {kn}, but kseq {max(self.seen)} is in the log")
        if self.below is not None and self.below[0] > kn:
            raise Bad(f"kseq_next {kn} below the kseq_below {self.below[0]} of {self.below[1]}")
        self.end = o

    def finish(self, path):
        """The sealed log's accounting: which numbers have no line, and what the log says."""
        kn = self.end["kseq_next"]
        gaps, nxt = [], 0
        for k in sorted(self.seen):
            if k > nxt:
                gaps.append((nxt, k - 1))
            nxt = k + 1
        if kn > nxt:
            gaps.append((nxt, kn - 1))
        missing = sum(b - a + 1 for a, b in gaps)
        unlogged = self.end.get("unlogged", 0)
        if self.end.get("lost", self.declared) != self.declared:
            raise Bad(f"{path}: run_end lost {self.end['lost']}, loss records {self.declared}")
        if missing != self.declared + unlogged:
            raise Bad(f"{path}: {missing} kseq values of [0, {kn}) have no line, but "
                      f"{self.declared} are declared lost and {unlogged} unlogged")
        if not missing:
            if self.ranges is not None:
                raise Bad(f"{self.ranges[1]}: loss_ranges, but no kseq value is missing")
            return
        if self.ranges is None:
            raise Bad(f"{path}: {missing} kseq values have no line (first {gaps[0][0]}) and "
                      "there is no loss_ranges record")
        o, where = self.ranges
        listed = list(zip(o["ranges"][0::2], o["ranges"][1::2]))
        if o["missing"] != missing:
            raise Bad(f"{where}: loss_ranges says {o['missing']} missing, the log lacks {missing}")
        for i, (said, true) in enumerate(zip(listed, gaps + [None] * len(listed))):
            if said != true:
                raise Bad(f"{where}: loss_ranges range {i + 1} is {said[0]}..{said[1]}, the log "
                          f"lacks {'nothing more' if true is None else f'{true[0]}..{true[1]}'}")
        if o["truncated"] != (len(gaps) > len(listed)):
            raise Bad(f"{where}: loss_ranges lists {len(listed)} of {len(gaps)} ranges, "
                      f"truncated is {o['truncated']}")


def segments(path):
    k = 1
    while True:
        gz, plain = f"{path}.{k:06d}.gz", f"{path}.{k:06d}"
        if os.path.exists(plain):
            # the plain one is what the writer wrote; a .gz next to it (compressed, not yet
            # unlinked) must hold the same bytes
            with open(plain, "rb") as f:
                data = f.read()
            if os.path.exists(gz):
                try:
                    copy = gzip.open(gz, "rb").read()
                except (OSError, EOFError) as e:
                    raise Bad(f"{gz}: a corrupt gzip copy of {plain}: {e}") from None
                if copy != data:
                    raise Bad(f"{gz}: not the same bytes as {plain}, of which it is the copy")
            yield plain, data
        elif os.path.exists(gz):
            try:
                yield gz, gzip.open(gz, "rb").read()
            except (OSError, EOFError) as e:
                raise Bad(f"{gz}: {e}") from None
        else:
            break
        k += 1
    with open(path, "rb") as f:
        yield path, f.read()


def check(path, pub, copies, unsealed):
    tree, prev, seq = Tree(), "0" * 64, 0
    run_key = origin = None
    notes, objs, reasons = [], [], {}
    nseg = 0
    last_record = None
    ks = Kseqs()
    for segname, data in segments(path):
        nseg += 1
        if data and not data.endswith(b"\n"):
            raise Bad(f"{segname}: last line has no newline")
        lines = data.split(b"\n")[:-1]
        for n, b in enumerate(lines, 1):
            where = f"{segname}:{n} (seq {seq})"
            try:
                if len(b) + 1 > 8192:
                    raise Bad(f"line of {len(b) + 1} bytes")
                o = check_canonical(b)
                if o["seq"] != seq:
                    raise Bad(f"seq {o['seq']}, expected {seq}")
                if o["prev"] != prev:
                    raise Bad(f"prev {o['prev']}, expected {prev}")
                if seq == 0:
                    if o["type"] != "log_start":
                        raise Bad(f"line 0 has type {o['type']!r}, expected log_start")
                    origin, run_key = o["origin"], o["key"]
                    if origin != "sluice/" + o["run_id"] or parse_vkey(run_key)[0] != origin:
                        raise Bad("origin, run_id and run key name disagree")
                    if o["format"] != 1:
                        raise Bad(f"format {o['format']}")
                    if pub is not None:
                        if o["host_key"] != pub:
                            raise Bad(f"host_key {o['host_key']!r} is not {pub!r}")
                        text = open_note(o["cert"], pub)
                        if text != f"sluice run key\n{origin}\n{run_key}\n":
                            raise Bad(f"cert text {text!r} does not certify this run key")
                elif o["type"] == "log_start":
                    raise Bad("log_start after line 0")
                if o["type"] == "checkpoint":
                    if o["size"] != seq:
                        raise Bad(f"checkpoint size {o['size']} != its seq {seq}")
                    if o["reason"] not in REASONS:
                        raise Bad(f"checkpoint reason {o['reason']!r}")
                    root = base64.b64encode(tree.root()).decode()
                    if o["root"] != root:
                        raise Bad(f"root {o['root']}, recomputed {root}")
                    text = open_note(o["note"], run_key)
                    if text != f"{origin}\n{seq}\n{root}\n":
                        raise Bad(f"checkpoint note text {text!r}")
                    notes.append(o["note"])
                    reasons[o["reason"]] = reasons.get(o["reason"], 0) + 1
                    if o["reason"] == "rotate" and n != len(lines):
                        raise Bad("a rotate checkpoint that does not end its segment")
                    if o["reason"] == "final" and n != len(lines):
                        raise Bad("lines after the final checkpoint")
                elif seq > 0 and objs and objs[-1]["type"] in ("loss", "anomaly"):
                    raise Bad(f"a {objs[-1]['type']} line not followed by a checkpoint")
                if (o["type"] == "checkpoint" and objs and objs[-1]["type"] in ("loss", "anomaly")
                        and o["reason"] != objs[-1]["type"]):
                    raise Bad(f"the checkpoint after a {objs[-1]['type']} line has reason "
                              f"{o['reason']!r}")
                if segname != path and n == len(lines) and o.get("reason") != "rotate":
                    raise Bad("rotated segment does not end with a rotate checkpoint")
                ks.line(o)
                if o["type"] == "loss":
                    ks.loss(o, where)
                elif o["type"] == "loss_ranges":
                    ks.loss_ranges(o, where)
                elif o["type"] == "run_end":
                    ks.run_end(o)
            except (Bad, KeyError, ValueError, TypeError) as e:
                raise Bad(f"{where}: {e}") from None
            tree.append(b)
            prev = hashlib.sha256(b).hexdigest()
            seq += 1
            if o["type"] != "checkpoint":
                last_record = o["type"]
            objs.append(o if o["type"] != "checkpoint" else {"type": "checkpoint",
                                                              "reason": o["reason"]})
            if len(objs) > 3:
                objs.pop(0)
            if seq == 2 and o["type"] != "run_start":
                raise Bad(f"{where}: line 1 has type {o['type']!r}, expected run_start")
    if seq == 0:
        raise Bad(f"{path}: empty log")
    if not unsealed:
        if objs[-1].get("reason") != "final":
            raise Bad(f"{path}: the last line is not the final checkpoint ({objs[-1]})")
        if last_record != "run_end":
            raise Bad(f"{path}: the last record before the seal is {last_record!r}, not run_end")
        ks.finish(path)
    want = "".join(n + "\n" for n in notes).encode()
    sealed = objs[-1].get("reason") == "final"
    seal_text = f"{origin}\n{seq}\n{base64.b64encode(tree.root()).decode()}\n"
    for c in copies:
        with open(c, "rb") as f:
            got = f.read()
        if not got.startswith(want) or (got != want and not sealed):
            raise Bad(f"{c}: {len(got)} bytes, not the log's {len(notes)} checkpoint notes "
                      f"({len(want)} bytes)")
        if not sealed:
            continue
        rest = got[len(want):]
        if not rest.endswith(b"\n\n"):
            raise Bad(f"{c}: after the log's {len(notes)} notes, not one more note (of the seal)")
        try:
            text = open_note(rest[:-1].decode(), run_key)
        except (Bad, UnicodeDecodeError, ValueError) as e:
            raise Bad(f"{c}: the note after the log's notes: {e}") from None
        if text != seal_text:
            raise Bad(f"{c}: the last note says {text!r}, not {seal_text!r} (the seal covered)")
    return seq, nseg, reasons


def main(argv):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--pub")
    ap.add_argument("--copy", action="append", default=[])
    ap.add_argument("--unsealed", action="store_true")
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args(argv)
    pub = open(a.pub).read().strip("\n") if a.pub else None
    try:
        lines, nseg, reasons = check(a.log, pub, a.copy, a.unsealed)
    except (Bad, OSError) as e:
        print(e, file=sys.stderr)
        return 1
    if a.summary:
        print(f"lines={lines} segments={nseg} " +
              " ".join(f"{k}={v}" for k, v in sorted(reasons.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
