#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sluice keygen's files, and interoperability of our signed notes and checkpoints with a second,
# independent implementation: a Python verifier and signer below (hashlib and python3-cryptography's
# Ed25519 only), written from the C2SP signed-note and tlog-checkpoint specifications and RFC 9162,
# not from our C. Our side signs and opens through the test hooks of the unit test binary
# (test_tlog --checkpoint / --sign / --open, see selftests/unit/test_tlog.c).
#
# Needs no root and no network. Environment: SLUICE (the binary), SL_TOOLS (where test_tlog is),
# PYTHON (an interpreter with the cryptography module; default /usr/bin/python3, Debian's).
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SLUICE=${SLUICE:-$REPO/.output/sluice}
SL_TOOLS=${SL_TOOLS:-$REPO/.output/selftests}
TEST_TLOG=$SL_TOOLS/test_tlog
if [[ -z ${PYTHON:-} ]]; then
	PYTHON=python3
	[[ -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3
fi

PLAN=20
n=0
failed=0
ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	local line
	for line in "$@"; do
		echo "# $line"
	done
}
# check NAME CMD…: ok when CMD succeeds; otherwise not ok with its output.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		not_ok "$name" "$out"
	fi
}
mode_of() {
	stat -c %a "$1"
}

echo "TAP version 13"
echo "1..$PLAN"

tmp=$(mktemp -d /tmp/test_note_interop.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [[ ! -x $SLUICE || ! -x $TEST_TLOG ]]; then
	for _ in $(seq $PLAN); do
		not_ok "binaries missing" "need $SLUICE and $TEST_TLOG (make)"
	done
	exit 1
fi

# ---- the independent verifier --------------------------------------------------------------------
cat >"$tmp/c2sp.py" <<'PYEOF'
"""Signed notes (C2SP signed-note), checkpoints (C2SP tlog-checkpoint), Merkle roots (RFC 9162).

Usage: c2sp.py vkey VKEY_FILE                     check a verifier key file's format and hash
       c2sp.py skey SKEY_FILE VKEY_FILE           check the signer key derives the verifier key
       c2sp.py verify VKEY_FILE NOTE_FILE [LINES_FILE ORIGIN]
                                                  verify the note; with LINES_FILE, it must be
                                                  the checkpoint of those lines under ORIGIN
       c2sp.py sign SKEY_FILE TEXT_FILE           print the signed note
Exits 0 when the check holds, 1 (saying why) when it does not.
"""
import base64
import binascii
import hashlib
import re
import struct
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (Ed25519PrivateKey,
                                                               Ed25519PublicKey)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

NAME = r"[^\s+\x00-\x1f]+"  # non-empty, no whitespace, no '+'
VKEY_RE = re.compile(r"\A(" + NAME + r")\+([0-9a-f]{8})\+([A-Za-z0-9+/]{44})\Z")
SKEY_RE = re.compile(r"\APRIVATE\+KEY\+(" + NAME + r")\+([0-9a-f]{8})\+([A-Za-z0-9+/]{44})\Z")
EM_DASH = "\u2014"


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


def b64(s):
    try:
        raw = base64.b64decode(s, validate=True)
    except binascii.Error as e:
        fail(f"bad base64 {s!r}: {e}")
    if base64.b64encode(raw).decode() != s:
        fail(f"non-canonical base64 {s!r}")
    return raw


def key_hash(name, key33):
    return hashlib.sha256(name.encode() + b"\n" + key33).digest()[:4]


def read_key_file(path):
    data = open(path, "rb").read()
    if not data.endswith(b"\n") or data.count(b"\n") != 1:
        fail(f"{path}: not one line ending in a newline: {data!r}")
    return data[:-1].decode()


def parse_vkey(path):
    s = read_key_file(path)
    m = VKEY_RE.match(s)
    if not m:
        fail(f"verifier key {s!r} is not NAME+HASH+BASE64")
    name, hash_hex, key = m.group(1), m.group(2), b64(m.group(3))
    if len(key) != 33 or key[0] != 1:
        fail(f"verifier key data is not 0x01 + 32 bytes: {key.hex()}")
    if key_hash(name, key).hex() != hash_hex:
        fail(f"key hash {hash_hex} != SHA-256(name\\n0x01 pub)[:4] {key_hash(name, key).hex()}")
    return name, bytes.fromhex(hash_hex), key[1:]


def parse_skey(path):
    s = read_key_file(path)
    m = SKEY_RE.match(s)
    if not m:
        fail("signer key is not PRIVATE+KEY+NAME+HASH+BASE64")
    name, hash_hex, key = m.group(1), m.group(2), b64(m.group(3))
    if len(key) != 33 or key[0] != 1:
        fail("signer key data is not 0x01 + 32 bytes")
    priv = Ed25519PrivateKey.from_private_bytes(key[1:])
    pub = priv.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    if key_hash(name, b"\x01" + pub).hex() != hash_hex:
        fail("signer key hash does not match the public key its seed derives")
    return name, bytes.fromhex(hash_hex), priv, pub


def leaf(data):
    return hashlib.sha256(b"\x00" + data).digest()


def mth(leaves):
    """RFC 9162 section 2.1.1, recursively."""
    n = len(leaves)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return leaf(leaves[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def open_note(msg, name, khash, pub):
    """Return the text of msg if it carries a valid signature by (name, khash, pub)."""
    try:
        s = msg.decode("utf-8")
    except UnicodeDecodeError:
        fail("note is not UTF-8")
    if any(ord(c) < 0x20 and c != "\n" for c in s):
        fail("note has control characters")
    split = msg.rfind(b"\n\n")
    if split < 0:
        fail("no blank line before the signatures")
    text, sigs = msg[: split + 1], msg[split + 2 :]
    if not sigs.endswith(b"\n"):
        fail("signature block does not end in a newline")
    found = False
    for line in sigs[:-1].decode().split("\n"):
        if not line.startswith(EM_DASH + " "):
            fail(f"signature line without em dash: {line!r}")
        sname, _, sig64 = line[2:].partition(" ")
        sig = b64(sig64)
        if len(sig) < 5:
            fail("signature too short")
        if sname != name or sig[:4] != khash:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(pub).verify(sig[4:], text)
        except InvalidSignature:
            fail(f"signature by {name} does not verify")
        found = True
    if not found:
        fail(f"no signature by {name}+{khash.hex()}")
    return text


def main(argv):
    if argv[1] == "vkey":
        parse_vkey(argv[2])
    elif argv[1] == "skey":
        sname, shash, _, spub = parse_skey(argv[2])
        vname, vhash, vpub = parse_vkey(argv[3])
        if (sname, shash, spub) != (vname, vhash, vpub):
            fail("signer key and verifier key are not a pair")
    elif argv[1] == "verify":
        name, khash, pub = parse_vkey(argv[2])
        text = open_note(open(argv[3], "rb").read(), name, khash, pub)
        if len(argv) > 4:
            lines = open(argv[4], "rb").read().split(b"\n")[:-1]
            root = base64.b64encode(mth(lines)).decode()
            want = f"{argv[5]}\n{len(lines)}\n{root}\n".encode()
            if text != want:
                fail(f"checkpoint text {text!r}, expected {want!r}")
    elif argv[1] == "sign":
        name, khash, priv, _ = parse_skey(argv[2])
        text = open(argv[3], "rb").read()
        sig = base64.b64encode(khash + priv.sign(text)).decode()
        sys.stdout.buffer.write(text + f"\n{EM_DASH} {name} {sig}\n".encode())
    else:
        fail("unknown mode")


main(sys.argv)
PYEOF

py() {
	"$PYTHON" "$tmp/c2sp.py" "$@"
}

# ---- sluice keygen ---------------------------------------------------------------------------------
k=$tmp/host.key
if out=$( (umask 000 && "$SLUICE" keygen --name sluice-test/host "$k") 2>"$tmp/err"); then
	if [[ -f $k && -f $k.pub && "$out" == "$(cat "$k.pub")" && $out == sluice-test/host+* ]]; then
		ok "keygen writes FILE and FILE.pub and prints the verifier key"
	else
		not_ok "keygen writes FILE and FILE.pub and prints the verifier key" "stdout: $out" \
			"FILE.pub: $(cat "$k.pub" 2>&1)"
	fi
else
	not_ok "keygen writes FILE and FILE.pub and prints the verifier key" "$(cat "$tmp/err")"
fi
if [[ $(mode_of "$k") == 600 && $(mode_of "$k.pub") == 644 ]]; then
	ok "modes 0600 / 0644 under umask 000"
else
	not_ok "modes 0600 / 0644 under umask 000" "got $(mode_of "$k") / $(mode_of "$k.pub")"
fi
k2=$tmp/other.key
(umask 077 && "$SLUICE" keygen --name other "$k2" >/dev/null 2>&1)
if [[ $(mode_of "$k2") == 600 && $(mode_of "$k2.pub") == 644 ]]; then
	ok "modes 0600 / 0644 under umask 077"
else
	not_ok "modes 0600 / 0644 under umask 077" "got $(mode_of "$k2") / $(mode_of "$k2.pub")"
fi

# refuse_case NAME EXPECT_RC SETUP… : runs keygen on $tmp/r/key after SETUP, expects rc and that
# no file keygen would create appeared and nothing that was there changed.
refuse_case() {
	local name=$1 want=$2 rc before after
	shift 2
	rm -rf "$tmp/r" && mkdir "$tmp/r"
	(cd "$tmp/r" && eval "$*")
	before=$(cd "$tmp/r" && ls -l --time-style=+ . && cat ./* 2>/dev/null | sha256sum)
	"$SLUICE" keygen --name x "$tmp/r/key" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	after=$(cd "$tmp/r" && ls -l --time-style=+ . && cat ./* 2>/dev/null | sha256sum)
	if [[ $rc -eq $want && "$before" == "$after" && ! -s $tmp/out && -s $tmp/err ]]; then
		ok "$name (exit $rc: $(head -n 1 "$tmp/err"))"
	else
		not_ok "$name" "exit $rc, expected $want; stdout: $(cat "$tmp/out")" \
			"stderr: $(cat "$tmp/err")" "before: $before" "after: $after"
	fi
}
refuse_case "refuses an existing FILE, creates no FILE.pub" 1 'echo old > key'
refuse_case "refuses an existing FILE.pub, creates no FILE" 1 'echo old > key.pub'
refuse_case "refuses a symlink at FILE to an existing file" 1 'echo old > target; ln -s target key'
refuse_case "refuses a dangling symlink at FILE (target not created)" 1 'ln -s target key'
refuse_case "refuses a dangling symlink at FILE.pub (no FILE left behind)" 1 \
	'ln -s target key.pub'
refuse_case "refuses a directory at FILE" 1 'mkdir key'

# Usage errors: exit 2, nothing created.
rm -rf "$tmp/u" && mkdir "$tmp/u"
usage_rcs=""
for args in "" "--name" "--name a+b $tmp/u/k" "--name 'a b' $tmp/u/k" "$tmp/u/k $tmp/u/k2" \
	"--bogus $tmp/u/k"; do
	eval "\"\$SLUICE\" keygen $args" >/dev/null 2>&1
	usage_rcs+="$? "
done
if [[ $usage_rcs == "2 2 2 2 2 2 " && -z $(ls -A "$tmp/u") ]]; then
	ok "usage errors and invalid names exit 2 and create nothing"
else
	not_ok "usage errors and invalid names exit 2 and create nothing" "exits: $usage_rcs" \
		"files: $(ls -A "$tmp/u")"
fi

host=$(hostname)
if out=$("$SLUICE" keygen "$tmp/default.key" 2>&1); then
	if [[ $out == "$host+"* ]]; then
		ok "the key name defaults to the hostname ($host)"
	else
		not_ok "the key name defaults to the hostname" "vkey $out, hostname $host"
	fi
else
	not_ok "the key name defaults to the hostname" "$out"
fi

# ---- the independent verifier on our keys and notes --------------------------------------------
if ! "$PYTHON" -c 'import cryptography.hazmat.primitives.asymmetric.ed25519' 2>"$tmp/err"; then
	not_ok "python3-cryptography importable" "$PYTHON: $(cat "$tmp/err")" \
		"install python3-cryptography (make deps)"
	for _ in $(seq $((PLAN - n))); do
		not_ok "independent verifier unavailable"
	done
	exit 1
fi
ok "python3-cryptography importable ($PYTHON)"

check "Python: FILE.pub is NAME+HASH+BASE64(0x01||pub), HASH = SHA-256(NAME\\n0x01||pub)[:4]" \
	py vkey "$k.pub"
check "Python: FILE's seed derives FILE.pub's key (same name and hash)" py skey "$k" "$k.pub"
if py skey "$k" "$k2.pub" >/dev/null 2>&1; then
	not_ok "Python: a mismatched key pair is told apart (the check can fail)"
else
	ok "Python: a mismatched key pair is told apart (the check can fail)"
fi

# Log-like lines, including an empty one and non-ASCII, as Merkle leaves.
{
	for i in $(seq 0 12); do
		printf '{"seq":%d,"type":"flow","host":"h%d.example"}\n' "$i" "$i"
	done
	printf '\n'
	printf '{"seq":14,"type":"note","text":"caf\xc3\xa9"}\n'
} >"$tmp/lines"
if "$TEST_TLOG" --checkpoint "$k" sluice/interop-run "$tmp/lines" >"$tmp/cp.note" 2>"$tmp/err"; then
	check "Python verifies our signed checkpoint of 15 lines (Ed25519, key hash, RFC 9162 root)" \
		py verify "$k.pub" "$tmp/cp.note" "$tmp/lines" sluice/interop-run
else
	not_ok "Python verifies our signed checkpoint" "$(cat "$tmp/err")"
fi
# Tampered: one text byte (the size), one signature byte, and the wrong key.
sed '2s/^15$/14/' "$tmp/cp.note" >"$tmp/cp.size"
# The tenth base64 character from the end is signature, not key hash: make it another one.
awk '{ if (NR == n) { i = length($0) - 10; c = substr($0, i, 1) == "A" ? "B" : "A";
	$0 = substr($0, 1, i - 1) c substr($0, i + 1) } print }' n="$(wc -l <"$tmp/cp.note")" \
	"$tmp/cp.note" >"$tmp/cp.sig"
bad=""
cmp -s "$tmp/cp.note" "$tmp/cp.size" && bad+="size edit did nothing; "
cmp -s "$tmp/cp.note" "$tmp/cp.sig" && bad+="signature edit did nothing; "
py verify "$k.pub" "$tmp/cp.size" >/dev/null 2>&1 && bad+="edited size accepted; "
py verify "$k.pub" "$tmp/cp.sig" >/dev/null 2>&1 && bad+="edited signature accepted; "
py verify "$k2.pub" "$tmp/cp.note" >/dev/null 2>&1 && bad+="other key accepted; "
if [[ -z $bad ]]; then
	ok "Python rejects our checkpoint with a byte changed or under another key"
else
	not_ok "Python rejects our checkpoint with a byte changed or under another key" "$bad"
fi

printf 'If you think cryptography is the answer to your problem,\nthen you do not know.\n' \
	>"$tmp/text"
if "$TEST_TLOG" --sign "$k" "$tmp/text" >"$tmp/c.note" 2>"$tmp/err" &&
	py sign "$k" "$tmp/text" >"$tmp/py.note" 2>>"$tmp/err"; then
	if cmp -s "$tmp/c.note" "$tmp/py.note"; then
		ok "our signed note equals Python's byte for byte (Ed25519 is deterministic)"
	else
		not_ok "our signed note equals Python's byte for byte" "ours: $(cat "$tmp/c.note")" \
			"Python: $(cat "$tmp/py.note")"
	fi
	check "we open Python's signed note" "$TEST_TLOG" --open "$k.pub" "$tmp/py.note"
	sed '1s/^If/Of/' "$tmp/py.note" >"$tmp/py.bad"
	if out=$("$TEST_TLOG" --open "$k.pub" "$tmp/py.bad" 2>&1); then
		not_ok "we reject Python's note with a text byte changed" "accepted: $out"
	elif [[ $out == *EKEYREJECTED* ]]; then
		ok "we reject Python's note with a text byte changed ($out)"
	else
		not_ok "we reject Python's note with a text byte changed" "wrong error: $out"
	fi
else
	for _ in 1 2 3; do
		not_ok "sign with both implementations" "$(cat "$tmp/err")"
	done
fi

[[ $n -eq $PLAN ]] || echo "# ran $n tests, planned $PLAN"
exit $((failed > 0))
