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
- --copy FILE: FILE holds exactly the log's checkpoint notes, each followed by one blank line
  (the sidecar LOG.checkpoints, or what --checkpoint-fd received).

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

def segments(path):
    k = 1
    while os.path.exists(f"{path}.{k:06d}.gz"):
        yield f"{path}.{k:06d}.gz", gzip.open(f"{path}.{k:06d}.gz", "rb").read()
        k += 1
    with open(path, "rb") as f:
        yield path, f.read()


def check(path, pub, copies, unsealed):
    tree, prev, seq = Tree(), "0" * 64, 0
    run_key = origin = None
    notes, objs, reasons = [], [], {}
    nseg = 0
    last_record = None
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
                if segname != path and n == len(lines) and o.get("reason") != "rotate":
                    raise Bad("rotated segment does not end with a rotate checkpoint")
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
    want = "".join(n + "\n" for n in notes).encode()
    for c in copies:
        with open(c, "rb") as f:
            got = f.read()
        if got != want:
            raise Bad(f"{c}: {len(got)} bytes, not the log's {len(notes)} checkpoint notes "
                      f"({len(want)} bytes)")
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
