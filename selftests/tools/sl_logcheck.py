#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sl_logcheck LOG [--pub VKEY_FILE] [--copy FILE]… [--unsealed] [--summary]

An independent check of a sluice log, written from the format's description (README "Evidence")
and sharing no code with sluice: hashlib for SHA-256, python3-cryptography for Ed25519.

- every line canonical: parsed from its bytes and re-serialized under the canonical rules, the
  result must be the same bytes (so a different escape, spacing or number form is caught),
  except a torn line (below);
- seq contiguous from 0 and prev the leaf hash SHA-256(0x00 || line) of the line before (log_start's
  format 2; format 1, written before: its SHA-256), across LOG.NNNNNN.gz segments;
- line 0 is log_start; with --pub, its cert is a note by that host key naming the origin and run
  key; every checkpoint: size == seq, root == the RFC 9162 root of the lines before it, note
  text == origin/size/root, signed by the run key in force (log_start's, then that of the last
  writer_restart before it); rotated segments end with a "rotate" one;
- line 1 is run_start; the last line is the "final" checkpoint, and the last line before it
  that is not a checkpoint is run_end
  (--unsealed: a run killed before its end; the structure at the end is not checked); after
  run_end come only checkpoints of reason lines, time, heartbeat or rotate, and the seal; run_end
  has lost, the sum of the loss records' counts;
- a rotate checkpoint ends its file, or else (its rename failed) it is its writer's last: no
  other rotate checkpoint comes before a writer_restart;
- the notes in the log (certificates, checkpoint notes) carry exactly one signature line: the
  writer signs with one key (a copy of a note may gather C2SP cosignatures; --copy compares the
  copies byte for byte with the log's notes, as the writer makes them);
- a line is at most 8191 bytes, 8192 with its "\n";
- kernel sequence numbers (the lines' "kseq"): each at most once, all below run_end.kseq_next;
  every loss record has a "kseq_below" that never goes down, is at least the records declared
  lost so far and at most kseq_next; at the end, the values of [0, kseq_next) no line carries
  are exactly as many as the loss records declare plus run_end.unlogged (plus
  run_end.restart_gap, after a writer restart), and when there are any
  the one loss_ranges record (before run_end) counts them ("missing") and lists their maximal
  ranges ("ranges": first,last,… ascending, the first ones; "truncated" if more exist); when
  there are none there is no loss_ranges record. (sluice verify reads kseq_below and
  loss_ranges when present; this checker, which tests the writer, requires them.) A loss
  record of hook "log" (the log could not be written for a while) counts, like any, the
  kernel records it declares (count); its "lines" (every line the log did not get) is at least
  that count, and its total is the sum of the counts of hook "log" so far;
- --copy FILE: FILE holds exactly the log's checkpoint notes, each followed by one blank line
  (the sidecar LOG.checkpoints, or what --checkpoint-fd received), and, when the log ends with
  its seal (size S), one more note of size S + 1 by the run key in force at the end whose root
  covers the seal line (the log's notes are compared byte for byte, whichever key signed them);
- segment k is LOG.k.gz, else the plain LOG.k (a rotation whose compression did not happen);
  when both exist the plain one is read and the .gz must decompress to the same bytes;
  LOG.k.gz.tmp is never read;
- policy_change (a live run switched policy or mode): policy a string or null, policy_sha256
  and prev_policy_sha256 64 lower-case hex digits, mode and prev_mode "enforce" or "report";
  prev_policy_sha256 and prev_mode are those in force: run_start's (where it names them), then
  the last policy_change's; requested_by, when there, a string; it closes the open
  policy_switch_begin, if any: the same policy_sha256, mode and era;
- policy_switch_begin (a switch announced before its commit): policy_sha256 64 lower-case hex
  digits, mode "enforce" or "report", era above prev_era and above every era named before (1:
  run_start's), prev_era the generation in force (run_start's 1, then the last policy_change's;
  unknown without a run_start or after a policy_change that names none), none open already; policy_switch_abort closes it (its era); a writer that
  took over closes it before any other line after its restart; run_end never comes while one
  is open;
- a loss or anomaly line is followed at once by a checkpoint of that reason, or (a writer that
  died between the two, or inside the write of the checkpoint) by a writer_restart, at once or
  after a torn line.

A writer restart (`sluice resume`; any number of them in a log):
- writer_restart: exactly the keys seq, prev, ts, type, origin, key, cert, torn, unsealed,
  kseq_below, in that order; never line 0, after run_end or after the final seal; origin is
  log_start's; key a verifier key named as the origin whose hash is that of no earlier run key
  (log_start's, earlier restarts'); with --pub, cert is a note by the host key whose text is
  "sluice run key\n" origin "\n" key "\n"; unsealed == its seq - L, L the 1-based line number
  of the last checkpoint line before it (0: none); every kseq before it is below its kseq_below,
  which is at least every earlier loss's or restart's kseq_below, at most run_end.kseq_next and
  at most every later loss's kseq_below; torn (below);
- the line after it is a checkpoint of reason "restart" (that reason nowhere else), signed by
  the new key, or another writer_restart (that writer died before its checkpoint) (--unsealed:
  a writer_restart may be the last line); from there on every
  checkpoint note, and the note of the seal in --copy files, is signed by that key and carries
  no signature by a run key it replaced;
- a torn line (a dead writer's last bytes, that are not a canonical line) is a line like any
  other for seq, prev and the tree; it is accepted only when the very next line is a
  writer_restart whose torn is its length in bytes, and it is at most 8191 bytes, not line 0 or
  1, not the end of a rotated segment and not after run_end (right after a writer_restart it is
  that restart's checkpoint, torn: the writer_restart after it restarts the restart);
  else the log is invalid at the torn line, with its parse error. torn > 0 after a canonical
  line, or a torn of another length, is invalid at the writer_restart;
- run_end has restart_gap (right after unlogged, a non-negative integer) if and only if a
  writer_restart came before it; after one, its exit_status is null (without one, exit_status
  is not checked); restart_gap is at most the number of kseq values below the last
  writer_restart's kseq_below that no line carries.
(This checker does not check heartbeat gaps, so the restart checkpoint needs no exemption.)

Exit 0 when all holds (--summary then prints one line of counts: lines, segments, restarts
(writer_restart records), lost (the loss records' counts), unwritten and unwritten_lines (those
of hook "log": their counts and lines), and each checkpoint reason's), 1 with "where: why"
otherwise.
"""
import base64
import gzip
import hashlib
import os
import re
import sys

KEY_RE = re.compile(rb"[a-z0-9_]+\Z")
REASONS = {"lines", "time", "heartbeat", "loss", "anomaly", "rotate", "restart", "final"}
RANGES_LISTED = 256  # the most ranges a loss_ranges record lists


class Bad(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Canonical form: parse bytes leniently, re-serialize strictly, compare.

def parse_string(b, i):
    if b[i:i + 1] != b'"':
        raise Bad(f"expected a string at byte {i}")
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
        """Append line as a leaf; returns its leaf hash."""
        leaf = h = hashlib.sha256(b"\x00" + line).digest()
        ht = 0
        while self.stack and self.stack[-1][0] == ht:
            left = self.stack.pop()[1]
            h, ht = hashlib.sha256(b"\x01" + left + h).digest(), ht + 1
        self.stack.append((ht, h))
        self.size += 1
        return leaf

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


def open_note(note, vkey, sole=False):
    """The note's text, if it carries a valid signature by vkey (sole: and no other signature
    line, as the notes a log line holds: their writer signs with one key; a copy may gather
    C2SP cosignatures, which are ignored)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    name, khash, pub = parse_vkey(vkey)
    b = note.encode("utf-8")
    cut = b.rfind(b"\n\n")
    if cut < 0 or not b.endswith(b"\n"):
        raise Bad("note has no signature block")
    text, sigs = b[:cut + 1], b[cut + 2:]
    nsigs = sigs.count(b"\n")
    if sole and nsigs != 1:
        raise Bad(f"note carries {nsigs} signature lines, not only {name}'s "
                  "(the writer signs its notes with that key alone)")
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


def signed_by(note, vkey):
    """Whether a note has a signature line naming vkey (valid or not)."""
    name, khash, _ = parse_vkey(vkey)
    b = note.encode("utf-8")
    for line in b[b.rfind(b"\n\n") + 2:].split(b"\n"):
        who, _, b64 = line[len("\u2014 ".encode()):].rpartition(b" ")
        try:
            if who.decode() == name and base64.b64decode(b64, validate=True)[:4] == khash:
                return True
        except ValueError:
            pass
    return False


def old_key_signs(note, run_keys):
    """After a writer_restart the keys it replaced sign nothing: not even next to the new one."""
    for (old, _, whose), (_, _, by) in zip(run_keys, run_keys[1:]):
        if signed_by(note, old):
            raise Bad(f"the note also carries a signature by {whose}, replaced by {by}")


# ---------------------------------------------------------------------------------------------

def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


class Kseqs:
    """The kernel sequence numbers of a log, and what its loss records say about them."""

    def __init__(self):
        self.seen = set()
        self.declared = 0
        self.unwritten = 0  # loss records of hook "log": their counts
        self.unwritten_lines = 0  # … and their lines
        self.below = None  # (the last loss.kseq_below, where)
        self.ranges = None  # (the loss_ranges record, where)
        self.end = None  # run_end
        self.end_where = None
        self.restart = None  # (the last writer_restart.kseq_below, where)

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
        if o.get("hook") == "log":
            if not is_uint(o.get("lines")) or o["lines"] < o["count"]:
                raise Bad(f"loss of hook log: lines {o.get('lines')!r} is not an integer of at "
                          f"least its count {o['count']}")
            self.unwritten += o["count"]
            self.unwritten_lines += o["lines"]
            if o.get("total") != self.unwritten:
                raise Bad(f"loss of hook log: total {o.get('total')!r}, but the counts of hook "
                          f"log add up to {self.unwritten}")
        kb = o.get("kseq_below")
        if not is_uint(kb):
            raise Bad("loss record without a non-negative integer kseq_below")
        if self.below is not None and kb < self.below[0]:
            raise Bad(f"kseq_below {kb} went down from {self.below[0]} ({self.below[1]})")
        if kb < self.declared:
            raise Bad(f"kseq_below {kb}, but {self.declared} records were declared lost so far")
        if self.end is not None and kb > self.end["kseq_next"]:
            raise Bad(f"kseq_below {kb} past run_end's kseq_next {self.end['kseq_next']}")
        if self.restart is not None and kb < self.restart[0]:
            raise Bad(f"kseq_below {kb} went down from the kseq_below {self.restart[0]} of the "
                      f"writer_restart at {self.restart[1]}")
        self.below = (kb, where)

    def writer_restart(self, o, where):
        """A restarted writer's kernel number: above every kseq before it, never going down."""
        q = o["kseq_below"]
        if self.seen and max(self.seen) >= q:
            raise Bad(f"writer_restart kseq_below {q}, but kseq {max(self.seen)} is on a line "
                      "before it")
        for what in (self.below, self.restart):
            if what is not None and q < what[0]:
                raise Bad(f"writer_restart kseq_below {q} is below the kseq_below {what[0]} "
                          f"of {what[1]}")
        self.restart = (q, where)

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

    def run_end(self, o, where):
        if self.end is not None:
            raise Bad("a second run_end record")
        # every loss record comes before run_end, whose lost is their sum
        if not is_uint(o.get("lost")):
            raise Bad(f"run_end lost {o.get('lost')!r} is not a non-negative integer")
        if o["lost"] != self.declared:
            raise Bad(f"run_end lost {o['lost']}, but the loss records count {self.declared}")
        kn = o["kseq_next"]
        if not is_uint(kn):
            raise Bad("run_end kseq_next is not a non-negative integer")
        if self.seen and max(self.seen) >= kn:
            raise Bad(f"kseq_next {kn}, but kseq {max(self.seen)} is in the log")
        if self.below is not None and self.below[0] > kn:
            raise Bad(f"kseq_next {kn} below the kseq_below {self.below[0]} of {self.below[1]}")
        if self.restart is not None and self.restart[0] > kn:
            raise Bad(f"kseq_next {kn} below the kseq_below {self.restart[0]} of the "
                      f"writer_restart at {self.restart[1]}")
        # a resumed writer's run_end: restart_gap right after unlogged (only after a restart)
        keys = list(o)
        if "restart_gap" in o:
            if self.restart is None:
                raise Bad("run_end has a restart_gap, but the log has no writer_restart")
            if keys.index("restart_gap") == 0 or keys[keys.index("restart_gap") - 1] != "unlogged":
                raise Bad("run_end restart_gap is not right after unlogged")
            if not is_uint(o["restart_gap"]):
                raise Bad(f"run_end restart_gap {o['restart_gap']!r} is not a non-negative "
                          "integer")
        elif self.restart is not None:
            raise Bad(f"run_end without restart_gap after the writer_restart at "
                      f"{self.restart[1]}")
        if self.restart is not None and o["exit_status"] is not None:
            raise Bad(f"run_end exit_status {o['exit_status']!r} after the writer_restart at "
                      f"{self.restart[1]}: a resumed writer writes null")
        self.end = o
        self.end_where = where

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
        if self.restart is None:
            if missing != self.declared + unlogged:
                raise Bad(f"{path}: {missing} kseq values of [0, {kn}) have no line, but "
                          f"{self.declared} are declared lost and {unlogged} unlogged")
        else:
            gap = self.end["restart_gap"]
            if missing != self.declared + unlogged + gap:
                raise Bad(f"{path}: {missing} kseq values of [0, {kn}) have no line, but "
                          f"{self.declared} are declared lost, {unlogged} unlogged and {gap} "
                          "unaccounted across the restart (restart_gap)")
            q, qwhere = self.restart
            below = q - sum(1 for k in self.seen if k < q)
            if gap > below:
                raise Bad(f"{self.end_where}: restart_gap {gap}, but only {below} kseq values "
                          f"below the kseq_below {q} of the last writer_restart ({qwhere}) have "
                          "no line")
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


class Located(Bad):
    """An error whose text already says where it is."""


RESTART_KEYS = ["seq", "prev", "ts", "type", "origin", "key", "cert", "torn", "unsealed",
                "kseq_below"]


HEX64_RE = re.compile(r"[0-9a-f]{64}\Z")
MODES = ("enforce", "report")


def check_policy_change(o, policy, where):
    """A live run's switch: the new digest and mode, after those in force (where named)."""
    if not (o.get("policy") is None or isinstance(o.get("policy"), str)):
        raise Bad("policy_change: policy is not a string or null")
    for k in ("policy_sha256", "prev_policy_sha256"):
        if not isinstance(o.get(k), str) or not HEX64_RE.match(o[k]):
            raise Bad(f"policy_change: {k} is not 64 lower-case hex digits")
    for k in ("mode", "prev_mode"):
        if o.get(k) not in MODES:
            raise Bad(f"policy_change: {k} is neither 'enforce' nor 'report'")
    if "requested_by" in o and not isinstance(o["requested_by"], str):
        raise Bad("policy_change: requested_by is not a string")
    sha, mode, at = policy
    if isinstance(sha, str) and HEX64_RE.match(sha) and o["prev_policy_sha256"] != sha:
        raise Bad(f"policy_change: prev_policy_sha256 {o['prev_policy_sha256']} is not the "
                  f"policy of {at} ({sha})")
    if isinstance(mode, str) and o["prev_mode"] != mode:
        raise Bad(f"policy_change: prev_mode {o['prev_mode']} is not the mode of {at} ({mode})")
    return (o["policy_sha256"], o["mode"], f"the policy_change at {where}")


class Switches:
    """The open policy_switch_begin (sluice-log(5)) and the generations named so far."""

    def __init__(self):
        self.open = None  # (policy_sha256, mode, era, where)
        self.era_high = 0
        self.era_now = None  # the generation in force (None: unknown)
        self.restart_after = False  # a writer_restart came after the open begin

    def line(self, o, where):
        t = o["type"]
        if t == "checkpoint":
            return
        if t == "run_start":
            self.era_high = max(self.era_high, 1)
            self.era_now = 1
        if t == "writer_restart" and self.open:
            self.restart_after = True
            return
        if self.open and self.restart_after and t not in ("policy_change", "policy_switch_abort"):
            raise Bad(f"the switch announced at {self.open[3]} is still open after a "
                      f"writer_restart: the writer that took over closes it first")
        if t == "run_end" and self.open:
            raise Bad(f"run_end: the switch announced at {self.open[3]} was never closed")
        if t == "policy_switch_begin":
            sha = o.get("policy_sha256")
            if not isinstance(sha, str) or not HEX64_RE.match(sha):
                raise Bad("policy_switch_begin: policy_sha256 is not 64 lower-case hex digits")
            if o.get("mode") not in MODES:
                raise Bad("policy_switch_begin: mode is neither 'enforce' nor 'report'")
            era, prev = o.get("era"), o.get("prev_era")
            if type(era) is not int or type(prev) is not int or era < 0 or prev < 0:
                raise Bad("policy_switch_begin: era or prev_era is not a non-negative integer")
            if self.open:
                raise Bad(f"policy_switch_begin: the switch announced at {self.open[3]} is "
                          f"still open")
            if era <= self.era_high or prev >= era:
                raise Bad(f"policy_switch_begin: era {era} is not above every generation "
                          f"named before ({self.era_high}) and prev_era {prev}")
            if self.era_now is not None and prev != self.era_now:
                raise Bad(f"policy_switch_begin: prev_era {prev} is not the generation in "
                          f"force ({self.era_now})")
            self.open = (o["policy_sha256"], o["mode"], era, where)
            self.era_high = era
            self.restart_after = False
        elif t == "policy_switch_abort":
            if not self.open:
                raise Bad("policy_switch_abort: no switch is open")
            if o.get("era") != self.open[2]:
                raise Bad(f"policy_switch_abort: era {o.get('era')} is not the generation "
                          f"the switch announced at {self.open[3]} named ({self.open[2]})")
            self.open = None
        elif t == "policy_change":
            era = o.get("era")
            if era is not None and (type(era) is not int or era < 0):
                raise Bad("policy_change: era is not a non-negative integer")
            if self.open:
                sha, mode, want, at = self.open
                if (o.get("policy_sha256"), o.get("mode"), era) != (sha, mode, want):
                    raise Bad(f"policy_change: policy_sha256, mode, era ({o.get('policy_sha256')}, "
                              f"{o.get('mode')}, {era}) are not those the switch announced at "
                              f"{at} named ({sha}, {mode}, {want})")
                self.open = None
            elif era is not None:
                if era <= self.era_high:
                    raise Bad(f"policy_change: era {era} is not above every generation named "
                              f"before ({self.era_high})")
                self.era_high = era
            self.era_now = era


def check(path, pub, copies, unsealed):
    tree, prev, seq, fmt = Tree(), "0" * 64, 0, None
    run_key = origin = None
    run_keys = []  # every run key so far: (verifier key, its hash, whose), the one in force last
    notes, objs, reasons = [], [], {}
    nseg = 0
    last_record = None
    last_cp = None  # the seq of the last checkpoint line
    rotation_stopped = None  # where a rotate checkpoint inside its file is, since a restart
    torn = None  # (where, length, parse error) of the line just read when it is not canonical
    restart = None  # where the line just read is a writer_restart: its checkpoint comes next
    policy = (None, None, "run_start")  # the policy in force: digest, mode, what set them
    switches = Switches()
    restarts = 0
    ks = Kseqs()
    for segname, data in segments(path):
        nseg += 1
        if data and not data.endswith(b"\n"):
            raise Bad(f"{segname}: last line has no newline")
        lines = data.split(b"\n")[:-1]
        for n, b in enumerate(lines, 1):
            where = f"{segname}:{n} (seq {seq})"
            try:
                if torn is not None and len(b) + 1 > 8192:
                    raise Located(f"{torn[0]}: {torn[2]}")  # not followed by a writer_restart
                if len(b) + 1 > 8192:
                    raise Bad(f"line of {len(b) + 1} bytes")
                try:
                    o = check_canonical(b)
                except Bad as e:
                    # a torn line (a dead writer's last bytes) if a writer_restart follows it,
                    # which the next line decides; never line 0 or 1, the end of a rotated
                    # segment, after run_end (no writer_restart may follow), nor right after a
                    # writer_restart
                    if seq < 2 or (segname != path and n == len(lines)) or ks.end is not None:
                        raise
                    if torn is not None:  # two lines in a row that are not canonical
                        raise Located(f"{torn[0]}: {torn[2]}") from None
                    # (after a loss or anomaly line: the writer died inside the write of its
                    # checkpoint; the restart checkpoint covers both. After a writer_restart:
                    # that restart's own checkpoint, torn; another restart must follow)
                    o, torn = None, (where, len(b), str(e))
                if o is not None:
                    if torn is not None and not (o["type"] == "writer_restart"
                                                 and is_uint(o.get("torn")) and o["torn"] > 0):
                        # the torn line is not followed by a writer_restart that says so
                        raise Located(f"{torn[0]}: {torn[2]}")
                    if o["seq"] != seq:
                        raise Bad(f"seq {o['seq']}, expected {seq}")
                    if o["prev"] != prev:
                        raise Bad(f"prev {o['prev']}, expected {prev}")
                    # a restarted writer that died before its restart checkpoint: restarted
                    # again, the next restart's checkpoint covers both
                    if restart is not None and o["type"] != "writer_restart" and (
                            o["type"], o.get("reason")) != ("checkpoint", "restart"):
                        what = (f"a checkpoint of reason {o.get('reason')!r}"
                                if o["type"] == "checkpoint" else f"a {o['type']} line")
                        raise Bad(f"the line after the writer_restart at {restart} is {what}, "
                                  "not a checkpoint of reason 'restart'")
                    if seq == 0:
                        if o["type"] != "log_start":
                            raise Bad(f"line 0 has type {o['type']!r}, expected log_start")
                        origin, run_key = o["origin"], o["key"]
                        if origin != "sluice/" + o["run_id"] or parse_vkey(run_key)[0] != origin:
                            raise Bad("origin, run_id and run key name disagree")
                        fmt = o["format"]
                        if type(fmt) is not int or fmt not in (1, 2):
                            raise Bad(f"format {fmt}")
                        if pub is not None:
                            if o["host_key"] != pub:
                                raise Bad(f"host_key {o['host_key']!r} is not {pub!r}")
                            text = open_note(o["cert"], pub, sole=True)
                            if text != f"sluice run key\n{origin}\n{run_key}\n":
                                raise Bad(f"cert text {text!r} does not certify this run key")
                        run_keys.append((run_key, parse_vkey(run_key)[1], "log_start's run key"))
                    elif o["type"] == "log_start":
                        raise Bad("log_start after line 0")
                    if o["type"] == "writer_restart":
                        if list(o) != RESTART_KEYS:
                            raise Bad(f"writer_restart has the keys {', '.join(list(o)[4:])} "
                                      f"after type, expected {', '.join(RESTART_KEYS[4:])}")
                        if ks.end is not None:
                            raise Bad(f"writer_restart after run_end ({ks.end_where})")
                        for k in ("origin", "key", "cert"):
                            if not isinstance(o[k], str):
                                raise Bad(f"writer_restart {k} {o[k]!r} is not a string")
                        for k in ("torn", "unsealed", "kseq_below"):
                            if not is_uint(o[k]):
                                raise Bad(f"writer_restart {k} {o[k]!r} is not a non-negative "
                                          "integer")
                        if o["origin"] != origin:
                            raise Bad(f"writer_restart origin {o['origin']!r} is not log_start's "
                                      f"{origin!r}")
                        name, khash, _ = parse_vkey(o["key"])
                        if name != origin:
                            raise Bad(f"writer_restart key {o['key']!r} is not named as the "
                                      f"origin {origin!r}")
                        for _, h, whose in run_keys:
                            if h == khash:
                                raise Bad(f"writer_restart key hash {khash.hex()} is that of "
                                          f"{whose}: a restart never reuses a run key")
                        if pub is not None:
                            try:
                                text = open_note(o["cert"], pub, sole=True)
                            except (Bad, ValueError) as e:
                                raise Bad(f"writer_restart cert: {e}") from None
                            if text != f"sluice run key\n{origin}\n{o['key']}\n":
                                raise Bad(f"writer_restart cert text {text!r} does not certify "
                                          "this origin and key")
                        if torn is not None and o["torn"] != torn[1]:
                            raise Bad(f"writer_restart torn {o['torn']}, but the torn line before "
                                      f"it ({torn[0]}) has {torn[1]} bytes")
                        if torn is None and o["torn"]:
                            raise Bad(f"writer_restart torn {o['torn']}, but the line before it "
                                      "is a whole canonical line")
                        cover = 0 if last_cp is None else last_cp + 1
                        if o["unsealed"] != seq - cover:
                            raise Bad(f"writer_restart unsealed {o['unsealed']}, but {seq - cover} "
                                      "lines before it are after the last checkpoint line "
                                      f"({'none' if last_cp is None else f'seq {last_cp}'})")
                        ks.writer_restart(o, where)
                        rotation_stopped = None
                        run_key = o["key"]
                        run_keys.append((run_key, khash,
                                         f"the run key of the writer_restart at {where}"))
                        restarts += 1
                    # run_end is the last record: only checkpoints come after it, of the reasons
                    # time and size ask for, then the seal
                    if ks.end is not None and o["type"] not in ("checkpoint", "run_end",
                                                                "loss_ranges"):
                        raise Bad(f"a {o['type']!r} record after run_end ({ks.end_where}): only "
                                  "checkpoints come between run_end and the final seal")
                    if (ks.end is not None and o["type"] == "checkpoint" and o.get("reason")
                            not in ("lines", "time", "heartbeat", "rotate", "final")):
                        raise Bad(f"a checkpoint of reason {o.get('reason')!r} after run_end "
                                  f"({ks.end_where})")
                    if o["type"] == "checkpoint":
                        if o["size"] != seq:
                            raise Bad(f"checkpoint size {o['size']} != its seq {seq}")
                        if o["reason"] not in REASONS:
                            raise Bad(f"checkpoint reason {o['reason']!r}")
                        if o["reason"] == "restart" and restart is None:
                            raise Bad("a checkpoint of reason 'restart' that does not follow a "
                                      "writer_restart")
                        root = base64.b64encode(tree.root()).decode()
                        if o["root"] != root:
                            raise Bad(f"root {o['root']}, recomputed {root}")
                        try:
                            text = open_note(o["note"], run_key, sole=True)
                        except Bad as e:
                            for old, _, whose in run_keys[:-1]:
                                try:
                                    open_note(o["note"], old)
                                except (Bad, ValueError):
                                    continue
                                raise Bad(f"checkpoint note signed by {whose}, not by the key in "
                                          f"force, {run_keys[-1][2]} ({e})") from None
                            raise
                        if text != f"{origin}\n{seq}\n{root}\n":
                            raise Bad(f"checkpoint note text {text!r}")
                        old_key_signs(o["note"], run_keys)
                        notes.append(o["note"])
                        reasons[o["reason"]] = reasons.get(o["reason"], 0) + 1
                        last_cp = seq
                        if o["reason"] == "rotate":
                            # one inside its file: the rename failed and that writer rotates no
                            # more (a restarted writer may again)
                            if rotation_stopped is not None:
                                raise Bad("a rotate checkpoint, but the one at "
                                          f"{rotation_stopped} is not the last line of its "
                                          "file: rotation stopped there (its rename failed)")
                            if n != len(lines):
                                rotation_stopped = where
                        if o["reason"] == "final" and n != len(lines):
                            try:
                                after = check_canonical(lines[n])
                            except (Bad, KeyError, ValueError, TypeError):
                                after = {}
                            if after.get("type") == "writer_restart":
                                raise Located(f"{segname}:{n + 1} (seq {seq + 1}): writer_restart "
                                              f"after the final seal ({where})")
                            raise Bad("lines after the final checkpoint")
                    elif (seq > 0 and objs and objs[-1]["type"] in ("loss", "anomaly")
                          and o["type"] != "writer_restart"):
                        # (a dead writer's loss or anomaly line: the restart checkpoint covers it)
                        raise Bad(f"a {objs[-1]['type']} line not followed by a checkpoint")
                    if (o["type"] == "checkpoint" and objs
                            and objs[-1]["type"] in ("loss", "anomaly")
                            and o["reason"] != objs[-1]["type"]):
                        raise Bad(f"the checkpoint after a {objs[-1]['type']} line has reason "
                                  f"{o['reason']!r}")
                    if segname != path and n == len(lines) and o.get("reason") != "rotate":
                        raise Bad("rotated segment does not end with a rotate checkpoint")
                    ks.line(o)
                    switches.line(o, where)
                    if o["type"] == "loss":
                        ks.loss(o, where)
                    elif o["type"] == "loss_ranges":
                        ks.loss_ranges(o, where)
                    elif o["type"] == "run_end":
                        ks.run_end(o, where)
                    elif o["type"] == "run_start":
                        policy = (o.get("policy_sha256"), o.get("mode"), "run_start")
                    elif o["type"] == "policy_change":
                        policy = check_policy_change(o, policy, where)
            except Located:
                raise
            except (Bad, KeyError, ValueError, TypeError) as e:
                raise Bad(f"{where}: {e}") from None
            leaf = tree.append(b)
            prev = (leaf if fmt == 2 else hashlib.sha256(b).digest()).hex()
            seq += 1
            if o is None:
                objs.append({"type": None})
            else:
                torn = None
                if o["type"] != "checkpoint":
                    last_record = o["type"]
                restart = where if o["type"] == "writer_restart" else None
                objs.append(o if o["type"] != "checkpoint" else {"type": "checkpoint",
                                                                  "reason": o["reason"]})
            if len(objs) > 3:
                objs.pop(0)
            if seq == 2 and o["type"] != "run_start":
                raise Bad(f"{where}: line 1 has type {o['type']!r}, expected run_start")
    if torn is not None:
        raise Bad(f"{torn[0]}: {torn[2]}")
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
            old_key_signs(rest[:-1].decode(), run_keys)
        except (Bad, UnicodeDecodeError, ValueError) as e:
            raise Bad(f"{c}: the note after the log's notes: {e}") from None
        if text != seal_text:
            raise Bad(f"{c}: the last note says {text!r}, not {seal_text!r} (the seal covered)")
    return seq, nseg, reasons, restarts, ks


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
        lines, nseg, reasons, restarts, ks = check(a.log, pub, a.copy, a.unsealed)
    except (Bad, OSError) as e:
        print(e, file=sys.stderr)
        return 1
    if a.summary:
        print(f"lines={lines} segments={nseg} restarts={restarts} lost={ks.declared} "
              f"unwritten={ks.unwritten} unwritten_lines={ks.unwritten_lines} " +
              " ".join(f"{k}={v}" for k, v in sorted(reasons.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
