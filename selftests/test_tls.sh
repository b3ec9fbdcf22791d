#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The TLS server-name check (P9). A TCP flow to port 443 that connect() allowed because the run's
# resolver learned the address for a listed name must open with a ClientHello whose server name
# resolved to that very address in this run. Real TLS where it fits: a throwaway self-signed
# certificate made here, openssl s_server as the test host, curl, openssl s_client and a small
# Python client in the run. Checked at the receiving side (the s_server's -trace of every record
# it got, or the inet sink's byte count), at the client (exit status, error, time to fail), in the
# JSON log and on stderr:
#   - a ClientHello naming the resolved host passes (v4, v6, any letter case, a second name of a
#     shared CDN address, in a TCP Fast Open SYN) and is logged "sni_ok";
#   - another name (P9: s_client, curl, Python; v4, v6, v4-mapped, Fast Open), a listed name
#     that resolved elsewhere or was not resolved in this run, no server name, plain HTTP on
#     443, a ClientHello split before its server name or sent as urgent data (MSG_OOB): nothing
#     arrives, the client fails at once (socket destroyed: ECONNABORTED), a "tls" deny line
#     names both names, stderr says why;
#   - the same for a ClientHello spread over two TLS records so that a parser that ignores
#     record boundaries reads a different name than the server, and for a second ClientHello
#     after a HelloRetryRequest (TLS 1.3) that names another host;
#   - a ClientHello sent by sendfile() and swapped in the file right after is refused
#     (P9-sendfile-swap; 6.3+), and so is SO_ZEROCOPY, which MSG_ZEROCOPY needs; sendfile()
#     on a CIDR-rule flow is not judged;
#   - report mode lets the mismatch through and logs it with "enforced":false;
#   - CIDR-rule flows are not checked;
#   - P21: a name whose FNV-1a 64 hash equals the listed name's (a real pair) is refused too,
#     v4 and v6: whole names are compared;
#   - P22: TLS on any port: another name on 8443 (v4, v6, split into segments), on any port of a
#     rule without ports:, on a listed port other than 443, behind a warning alert sent first,
#     or beside the listed one (a second server_name extension, a second name in its list), is
#     refused; plain TCP there is not judged; QUIC (UDP/443) to a name's address is refused
#     unless its rule says udp, and policy check says what udp on a host rule means;
#   - the socket is destroyed by bpf_sock_destroy (6.5+), else through sock_diag (run the file
#     with SLUICE_SELFTEST_NO_BPF_DESTROY=1 to take that path here); on a kernel that can do
#     neither the fast-failure checks are SKIPs (the log's "flow" says "dropped (kernel cannot
#     destroy sockets)");
#   - nothing is left behind.
#
# Topology addition: a fourth namespace, sl-tls-ID, routed from the router, owns 198.51.100.30-32
# and 2001:db8::30-31 and runs s_server on [::]:443. s_server cannot share sl-inet-ID: the inet
# sink listens on [::]:443 there (dual stack, every address), and a listening wildcard socket
# makes any other bind to port 443 in that netns fail with EADDRINUSE, SO_REUSEADDR or not. The
# inet sink stays where it is, so 198.51.100.10 (ghcr.io here) is a test host that counts bytes:
# a denied ClientHello shows there as "tcp 198.51.100.10 443 SRC 0".

# Workload scripts are single-quoted on purpose: they expand inside the run.
# shellcheck disable=SC2016
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
for t in openssl curl dig dnsmasq ss; do
	command -v "$t" >/dev/null ||
		skip_all "$t not installed (openssl, curl, bind9-dnsutils, dnsmasq-base, iproute2)"
done
topo_up

# Clients give up after this (s): a flow that is only dropped must not hang the test.
TLS_CLIENT_TIMEOUT=8
# A destroyed flow's client fails at once, with an abort; a flow only dropped makes it wait for
# its own timeout. Which of the two is judged by how the client ended, not by the clock (a
# loaded machine took a destroyed flow's Python client past 4 s): a timeout is
# the outer timeout's 124, curl's 28 (--max-time), or hello.py's and upload.py's "err TIMEOUT".

# ---------------------------------------------------------------------------------------------
# The TLS test hosts: sl-tls-ID behind the router.
#
#   sl-rtr-ID vtls 10.200.3.1/30 fd10:200:3::1/64  --veth--  sl-tls-ID veth0 10.200.3.2/30
#                                                                       fd10:200:3::2/64
#   lo: 198.51.100.30 (registry.npmjs.org, files.pythonhosted.org), 198.51.100.31 (pypi.org),
#       198.51.100.32 (no name: the CIDR rule's), 2001:db8::30 (registry.npmjs.org),
#       2001:db8::31 (pypi.org)

SL_NS_TLS=sl-tls-$SL_ID
# Registered before the namespace exists, so a half-built one goes too; s_server (cleanup runs
# last registered first) is stopped before its namespace goes.
sl_on_exit "ip netns del $SL_NS_TLS 2>/dev/null"
sl_on_exit tls_server_stop
in_tls() { ip netns exec "$SL_NS_TLS" "$@"; }

tls_topo_build() {
	local a
	ip netns add "$SL_NS_TLS" || return 1
	in_tls sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 ||
		return 1
	ip -n "$SL_NS_TLS" link set lo up || return 1
	ip -n "$SL_NS_RTR" link add vtls type veth peer name veth0 netns "$SL_NS_TLS" || return 1
	ip -n "$SL_NS_RTR" addr add 10.200.3.1/30 dev vtls || return 1
	ip -n "$SL_NS_RTR" addr add fd10:200:3::1/64 dev vtls nodad || return 1
	ip -n "$SL_NS_TLS" addr add 10.200.3.2/30 dev veth0 || return 1
	ip -n "$SL_NS_TLS" addr add fd10:200:3::2/64 dev veth0 nodad || return 1
	for a in 198.51.100.30 198.51.100.31 198.51.100.32; do
		ip -n "$SL_NS_TLS" addr add "$a/32" dev lo || return 1
	done
	for a in 2001:db8::30 2001:db8::31; do
		ip -n "$SL_NS_TLS" addr add "$a/128" dev lo nodad || return 1
	done
	ip -n "$SL_NS_RTR" link set vtls up || return 1
	ip -n "$SL_NS_TLS" link set veth0 up || return 1
	# More specific than the router's 198.51.100.0/24 and 2001:db8::/32 towards sl-inet.
	for a in 198.51.100.30 198.51.100.31 198.51.100.32; do
		ip -n "$SL_NS_RTR" route add "$a/32" via 10.200.3.2 || return 1
	done
	for a in 2001:db8::30 2001:db8::31; do
		ip -n "$SL_NS_RTR" -6 route add "$a/128" via fd10:200:3::2 || return 1
	done
	ip -n "$SL_NS_TLS" route add default via 10.200.3.1 || return 1
	ip -n "$SL_NS_TLS" -6 route add default via fd10:200:3::1 || return 1
	return 0
}
tls_topo_build || bail_out "cannot build the TLS test host namespace $SL_NS_TLS"

# A throwaway certificate for the names s_server answers for; the key never leaves $SL_TMP.
TLS_DIR=$SL_TMP/tls
mkdir -m 0700 "$TLS_DIR" || bail_out "mkdir $TLS_DIR"
(
	umask 077
	san=DNS:registry.npmjs.org,DNS:pypi.org,DNS:files.pythonhosted.org
	openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=registry.npmjs.org \
		-addext "subjectAltName=$san" \
		-days 1 -keyout "$TLS_DIR/key.pem" -out "$TLS_DIR/cert.pem" >"$TLS_DIR/req.out" 2>&1
) || bail_out "openssl req failed: $(tail -n 3 "$TLS_DIR/req.out")"
sl_on_exit "rm -f -- '$TLS_DIR/key.pem'"

# tls_server_start NAME: s_server on [::]:$CASE_PORT (443 unless a case sets it; dual stack:
# every address of sl-tls-ID), -www
# (answers "GET /" with a status page), -trace (every record it receives, decoded, flushed as it
# goes) into $SL_TMP/NAME.srv. One per case, so a case's trace is its own and a flow a kernel
# could only drop cannot leave s_server (which serves one connection at a time) stuck for the
# next case. Sets TLS_SRV_PID and TLS_SRV_OUT.
TLS_SRV_PID=
TLS_SRV_OUT=
# The port of the flows a case makes (s_server's, the log's, stderr's); the policy it runs under.
CASE_PORT=443
CASE_POL=
# shellcheck disable=SC2317 # called through wait_until
tls_server_ready() {
	# (-s: the backgrounded redirect may not have made the file yet)
	pid_running "$TLS_SRV_PID" && grep -qs '^ACCEPT$' "$TLS_SRV_OUT"
}
tls_server_start() {
	TLS_SRV_OUT=$SL_TMP/$1.srv
	# "ip netns exec" and stdbuf exec in place: the pid is s_server's (in_tls would put a
	# subshell in between). It prints ACCEPT once it listens.
	# Line-buffered: s_server writes through stdio and dies by SIGTERM without flushing, so a
	# record it received could otherwise be missing from the trace.
	ip netns exec "$SL_NS_TLS" stdbuf -oL -eL openssl s_server -accept "$CASE_PORT" \
		-cert "$TLS_DIR/cert.pem" -key "$TLS_DIR/key.pem" -www -trace \
		>"$TLS_SRV_OUT" 2>&1 </dev/null &
	TLS_SRV_PID=$!
	sl_track_pid "$TLS_SRV_PID"
	if ! wait_until 5000 tls_server_ready; then
		echo "s_server did not start: $(tail -n 5 "$TLS_SRV_OUT")" >&2
		return 1
	fi
}
tls_server_stop() {
	[[ -n $TLS_SRV_PID ]] && sl_stop_pid "$TLS_SRV_PID"
	TLS_SRV_PID=
	return 0
}

# trace_snis.py TRACE: the server names of the ClientHellos in an s_server -trace, in order,
# space-separated ("-" for one without a server name).
cat >"$SL_TMP/trace_snis.py" <<'EOF'
import re, sys
snis, name_bytes, in_sni, in_hello = [], None, False, False
def flush():
    global name_bytes
    if in_hello:
        # server_name extension: list length (2), type (1), name length (2), name
        snis.append(bytes(name_bytes[5:]).decode("ascii", "replace") if name_bytes else "-")
    name_bytes = None
for line in open(sys.argv[1], errors="replace"):
    s = line.strip()
    if s.startswith("ClientHello"):
        flush()
        in_hello, in_sni, name_bytes = True, False, None
        continue
    if s.startswith("extension_type="):
        in_sni = s.startswith("extension_type=server_name(")
        if in_sni:
            name_bytes = []
        continue
    m = re.match(r"^\s*[0-9a-f]{4} - (.*)$", line.rstrip("\n"))
    if in_sni and m:
        # hex bytes (single spaces, "-" after the 8th), two or more spaces, the ASCII column
        hexpart = re.split(r"\s{2,}", m.group(1).strip(), maxsplit=1)[0]
        name_bytes += [int(x, 16) for x in hexpart.replace("-", " ").split()]
        continue
    if in_sni and s:
        in_sni = False
    if s.startswith(("Received Record", "Sent Record")) and in_hello:
        flush()
        in_hello = False
flush()
print(" ".join(snis))
EOF
# srv_snis: the server names s_server saw ClientHellos with, space-separated ("" for none).
srv_snis() { python3 "$SL_TMP/trace_snis.py" "$TLS_SRV_OUT"; }
# srv_records: records s_server received ("Received Record" in its trace).
srv_records() { grep -c '^Received Record' "$TLS_SRV_OUT"; }

# ---------------------------------------------------------------------------------------------
# P21 (section 7): two names with one FNV-1a 64 hash, the hash the server-name check once
# compared. Found offline, in minutes on two cores, by a Pollard-rho search (distinguished
# points) over names "<13 base-32 characters>.listed.example" and "….attacker.example", the
# characters spelling the previous hash; section 7 checks again that they collide.
COLLIDE_LISTED=lhxslbt3moksh.listed.example
COLLIDE_EVIL=gqwhimsucb2gm.attacker.example
COLLIDE_FNV=91a04f6561e89882

# ---------------------------------------------------------------------------------------------
# The upstream: listed names on the TLS test hosts, ghcr.io on the byte-counting inet sink.

# shellcheck disable=SC2054 # dnsmasq's arguments have commas
up=(--local-ttl=300
	--host-record=registry.npmjs.org,198.51.100.30,2001:db8::30
	--host-record=pypi.org,198.51.100.31,2001:db8::31
	# A CDN address serving two listed names.
	--host-record=files.pythonhosted.org,198.51.100.30
	--host-record=ghcr.io,198.51.100.10
	# P21: the listed half of the colliding pair, on the same test host.
	"--host-record=$COLLIDE_LISTED,198.51.100.30,2001:db8::30"
	# Unlisted: the run never learns it, whatever its address.
	--host-record=evil.example,198.51.100.30
)
dns_upstream_start upstream "${up[@]}" || bail_out "cannot start dnsmasq on 127.0.0.1"
sl_on_exit dns_upstream_stop

# ---------------------------------------------------------------------------------------------
# Policies

TLS_RULES='rules:
  - name: registries
    hosts: ["registry.npmjs.org", "pypi.org", "files.pythonhosted.org"]
    ports: [443, 80]
    protocols: [tcp]
  - name: containers
    hosts: ["ghcr.io"]
    ports: [443, 8080]
    protocols: [tcp]
  - name: mirror
    cidrs: ["198.51.100.32/32", "203.0.113.7/32"]
    ports: [443]
    protocols: [tcp]'
printf 'default: deny\n%s\n' "$TLS_RULES" >"$SL_TMP/tls.yaml"
printf 'default: deny\nmode: report\n%s\n' "$TLS_RULES" >"$SL_TMP/report.yaml"
POL=$SL_TMP/tls.yaml
REPORT_POL=$SL_TMP/report.yaml
COLLIDE_POL=$SL_TMP/collide.yaml
printf 'default: deny\nrules:\n  - name: collide\n    hosts: ["%s"]\n    ports: [443]\n' \
	"$COLLIDE_LISTED" >"$COLLIDE_POL"

# ---------------------------------------------------------------------------------------------
# The workload side

# tlsw.sh OUT [NAME | NAME/6]… -- CMD…: resolve each NAME (A, or AAAA for NAME/6) through the
# run's resolver (dig asks the server in /etc/resolv.conf; the run redirects it) and print
# "resolved NAME ADDR…"; then run CMD with its output in OUT and print "client rc=N ms=N"
# (date +%s%N around CMD alone). Exits with CMD's status.
cat >"$SL_TMP/tlsw.sh" <<'EOF'
#!/bin/bash
out=$1
shift
while [[ $# -gt 0 && $1 != -- ]]; do
	name=$1 type=A
	[[ $name == */6 ]] && name=${name%/6} type=AAAA
	echo "resolved $name $(dig +short +time=2 +tries=1 "$name" "$type" | paste -sd ' ' -)"
	shift
done
shift
s=$(date +%s%N)
"$@" >"$out" 2>&1 </dev/null
rc=$?
e=$(date +%s%N)
echo "client rc=$rc ms=$(((e - s) / 1000000))"
exit $rc
EOF
chmod 0755 "$SL_TMP/tlsw.sh"

# hello.py ADDR SNI [HOW [PORT]]: a ClientHello made by Python's ssl (SNI "-": none) sent to
# ADDR:PORT (default 443) on
# an AF_INET or AF_INET6 socket (so ::ffff:a.b.c.d is a v4-mapped connect). HOW:
#   whole (default)  in one write;
#   split            its first 11 bytes (record and handshake headers), then the rest;
#   split1           its first byte alone, then the rest;
#   desync:FAKE      in one write, but as two TLS records (a handshake message may span records,
#                    RFC 8446 5.1), with two unknown extensions placed so that a reader that
#                    ignores record boundaries, off by the second record's 5-byte header, finds a
#                    server_name extension naming FAKE, while the server, which reassembles the
#                    records, finds the real one (SNI).
#   hrr:FIRST        TLS 1.3 only: first a copy of the ClientHello naming FIRST with no key share
#                    (so the server asks again: HelloRetryRequest), then, once that came, the
#                    real one, naming SNI (a server that takes the second ClientHello's name, as
#                    OpenSSL does, serves SNI).
#   fastopen         in the SYN (sendto MSG_FASTOPEN; needs net.ipv4.tcp_fastopen & 5).
#   alert            after a TLS warning alert record sent alone (a Go server, for one, drops
#                    warning alerts that come before the ClientHello, and reads on).
#   twosni:SECOND    in one write, with a second server_name extension, naming SECOND, last.
#   twonames:SECOND  in one write, its server_name list holding a second host_name, SECOND.
#   oob              in one write as urgent data (MSG_OOB): the server's stack takes the last
#                    byte out of the stream, so the server does not read the bytes sent.
#   swap:OTHER       by sendfile() from a file, which is then overwritten at once with a
#                    ClientHello of the same length naming OTHER: the packet refers to the
#                    file's page, which the server's stack copies only when the server reads.
#   sendfile         by sendfile() from a file, left as it is.
#   zerocopy:OTHER   SO_ZEROCOPY on the socket, then in one MSG_ZEROCOPY send from a mapping
#                    that is overwritten at once as for swap:OTHER ("err EPERM" when the
#                    setsockopt is refused).
# Prints "ok" (status 0) when a TLS record comes back (for hrr: after the second ClientHello);
# "eof", "other" or "err ENAME" (status 1) otherwise.
cat >"$SL_TMP/hello.py" <<'EOF'
import errno, socket, ssl, sys, time
addr, sni = sys.argv[1], sys.argv[2]
how = sys.argv[3] if len(sys.argv) > 3 else "whole"
port = int(sys.argv[4]) if len(sys.argv) > 4 else 443
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
if how.startswith("hrr:"):
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = ctx.wrap_bio(inc, outg, server_hostname=None if sni == "-" else sni)
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = outg.read()
if how.startswith(("swap:", "zerocopy:")):
    o_in, o_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o_obj = ctx.wrap_bio(o_in, o_out, server_hostname=how.split(":", 1)[1])
    try:
        o_obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    other = o_out.read()
    if len(other) != len(hello):
        print("swap: the two ClientHellos differ in length")
        sys.exit(1)


def be(v, n):
    return v.to_bytes(n, "big")


def desync(rec, fake):
    """rec: one record holding the ClientHello. Returns it as two records, see above."""
    h = rec[5:]
    p = 4 + 2 + 32                                # handshake header, version, random
    p += 1 + h[p]                                 # session id
    p += 2 + int.from_bytes(h[p:p + 2], "big")    # cipher suites
    p += 1 + h[p]                                 # compression methods
    ext_off = p
    exts = h[p + 2:p + 2 + int.from_bytes(h[p:p + 2], "big")]
    name = fake.encode()
    fake_sni = (be(0, 2) + be(len(name) + 5, 2) + be(len(name) + 3, 2) + b"\0" +
                be(len(name), 2) + name)
    # E2 (unknown type 0x8a8a) carries the fake server_name extension.
    e2 = b"\x8a\x8a" + be(len(fake_sni) + 4, 2) + fake_sni + b"\0" * 4
    # E1 (unknown type 0x7a7a, 16 bytes of data): the second record's header goes in its data,
    # so the naive reader, skipping 16 bytes, lands 5 bytes short, on a fake extension header
    # (type 0x7a7b, length 5) that carries it over E1's last byte and E2's header onto the fake
    # server_name.
    e1 = b"\x7a\x7a" + be(16, 2) + b"\0" * 11 + b"\x7a\x7b" + be(5, 2) + b"\0"
    new = e1 + e2 + exts
    h2 = h[:ext_off] + be(len(new), 2) + new
    h2 = h2[:1] + be(len(h2) - 4, 3) + h2[4:]
    cut = ext_off + 2 + 4 + 2                     # two bytes into E1's data
    return (b"\x16\x03\x01" + be(cut, 2) + h2[:cut] +
            b"\x16\x03\x01" + be(len(h2) - cut, 2) + h2[cut:])


def retry_first(rec, first):
    """rec: one record holding the ClientHello. The same, naming first, with no key share."""
    h = rec[5:]
    p = 4 + 2 + 32
    p += 1 + h[p]
    p += 2 + int.from_bytes(h[p:p + 2], "big")
    p += 1 + h[p]
    ext_off, end, q, exts = p, p + 2 + int.from_bytes(h[p:p + 2], "big"), p + 2, b""
    while q < end:
        t, n = int.from_bytes(h[q:q + 2], "big"), int.from_bytes(h[q + 2:q + 4], "big")
        d = h[q + 4:q + 4 + n]
        if t == 0:      # server_name
            name = first.encode()
            d = be(len(name) + 3, 2) + b"\0" + be(len(name), 2) + name
        elif t == 51:   # key_share: no share at all, so the server must ask for one
            d = be(0, 2)
        exts += be(t, 2) + be(len(d), 2) + d
        q += 4 + n
    h1 = h[:ext_off] + be(len(exts), 2) + exts
    h1 = h1[:1] + be(len(h1) - 4, 3) + h1[4:]
    return b"\x16\x03\x01" + be(len(h1), 2) + h1


def more_sni(rec, second, own_ext):
    """rec: one record holding the ClientHello. The same, with second added as a host_name in
    a server_name extension of its own, last (own_ext), or at the end of the existing list."""
    h = rec[5:]
    p = 4 + 2 + 32
    p += 1 + h[p]
    p += 2 + int.from_bytes(h[p:p + 2], "big")
    p += 1 + h[p]
    ext_off, end, q, exts = p, p + 2 + int.from_bytes(h[p:p + 2], "big"), p + 2, b""
    name = second.encode()
    entry = b"\0" + be(len(name), 2) + name
    while q < end:
        t, n = int.from_bytes(h[q:q + 2], "big"), int.from_bytes(h[q + 2:q + 4], "big")
        d = h[q + 4:q + 4 + n]
        if t == 0 and not own_ext:
            lst = d[2:] + entry
            d = be(len(lst), 2) + lst
        exts += be(t, 2) + be(len(d), 2) + d
        q += 4 + n
    if own_ext:
        exts += be(0, 2) + be(len(entry) + 2, 2) + be(len(entry), 2) + entry
    h1 = h[:ext_off] + be(len(exts), 2) + exts
    h1 = h1[:1] + be(len(h1) - 4, 3) + h1[4:]
    return b"\x16\x03\x01" + be(len(h1), 2) + h1


def next_record(s):
    """(type, body) of the next TLS record but ChangeCipherSpec; (None, b"") at EOF."""
    while True:
        hdr = b""
        while len(hdr) < 5:
            chunk = s.recv(5 - len(hdr))
            if not chunk:
                return None, hdr
            hdr += chunk
        body, n = b"", int.from_bytes(hdr[3:5], "big")
        while len(body) < n:
            chunk = s.recv(n - len(body))
            if not chunk:
                return None, hdr + body
            body += chunk
        if hdr[0] != 0x14:
            return hdr[0], body


s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(6)  # before the outer timeout (8 s) ends it without a word
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
try:
    if how.startswith("zerocopy:"):
        s.setsockopt(socket.SOL_SOCKET, 60, 1)  # SO_ZEROCOPY
    if how == "fastopen":
        s.sendto(hello, socket.MSG_FASTOPEN, (addr, port))
    else:
        s.connect((addr, port))
        if how.startswith("hrr:"):
            s.sendall(retry_first(hello, how[len("hrr:"):]))
            t, body = next_record(s)
            # a ServerHello with the HelloRetryRequest random (RFC 8446 4.1.3)
            if t != 0x16 or body[6:14] != bytes.fromhex("cf21ad74e59a6111"):
                print("no HelloRetryRequest: %s %s" % (t, body[:16].hex()))
                sys.exit(1)
            s.sendall(hello)
        elif how in ("split", "split1"):
            cut = 11 if how == "split" else 1
            s.sendall(hello[:cut])
            time.sleep(0.2)
            s.sendall(hello[cut:])
        elif how.startswith("desync:"):
            s.sendall(desync(hello, how[len("desync:"):]))
        elif how.startswith("swap:"):
            import mmap, os, tempfile
            with tempfile.TemporaryFile() as f:
                f.write(hello)
                f.flush()
                # mapped and written once before, so the swap is a store, not a page fault
                m = mmap.mmap(f.fileno(), len(hello))
                m[:] = hello
                os.sendfile(s.fileno(), f.fileno(), 0, len(hello))
                m[:] = other
                t, body = next_record(s)
            print("ok" if t == 0x16 else "other")
            sys.exit(0 if t == 0x16 else 1)
        elif how == "sendfile":
            import os, tempfile
            with tempfile.TemporaryFile() as f:
                f.write(hello)
                f.flush()
                os.sendfile(s.fileno(), f.fileno(), 0, len(hello))
        elif how.startswith("zerocopy:"):
            import mmap
            m = mmap.mmap(-1, len(hello))
            m[:] = hello
            s.send(memoryview(m), 0x4000000)  # MSG_ZEROCOPY: the packet holds m's page
            m[:] = other
        elif how == "oob":
            s.send(hello, socket.MSG_OOB)
        elif how == "alert":
            # warning (1), user_canceled (90)
            s.sendall(b"\x15\x03\x03\x00\x02\x01\x5a")
            time.sleep(0.2)
            s.sendall(hello)
        elif how.startswith("twosni:"):
            s.sendall(more_sni(hello, how[len("twosni:"):], True))
        elif how.startswith("twonames:"):
            s.sendall(more_sni(hello, how[len("twonames:"):], False))
        else:
            s.sendall(hello)
    t, body = next_record(s)
    if t == 0x16:
        print("ok")
        sys.exit(0)
    print("eof" if t is None and not body else "other")
except socket.timeout:
    print("err TIMEOUT")
except OSError as e:
    print("err " + errno.errorcode.get(e.errno, str(e.errno)))
sys.exit(1)
EOF

S_CLIENT=(timeout "$TLS_CLIENT_TIMEOUT" openssl s_client -brief)
CURL=(curl -sS --noproxy '*' --max-time "$TLS_CLIENT_TIMEOUT")
HELLO=(timeout "$TLS_CLIENT_TIMEOUT" python3 "$SL_TMP/hello.py")

# tls_run POLICY LABEL [NAME…] -- CMD…: one run, a fresh s_server around it. Sets what
# sluice_run sets, CASE_LOG, CASE_CLIENT (CMD's output), CLIENT_RC, CLIENT_MS.
tls_run() {
	local policy=$1 label=$2 id
	local -a names=()
	shift 2
	while [[ $# -gt 0 && $1 != -- ]]; do
		names+=("$1")
		shift
	done
	shift
	id=$(sluice_next_run_id)
	CASE_LOG=$SL_TMP/$id.log
	CASE_CLIENT=$SL_TMP/$id.client
	CASE_NAMES=("${names[@]}")
	tls_server_start "$id" || bail_out "$label: cannot start s_server"
	sluice_run "${CASE_POL:-$policy}" "$CASE_LOG" --netns "/run/netns/$SL_NS_RUN" \
		--upstream "127.0.0.1:$SL_DNS_PORT" -- \
		"$SL_TMP/tlsw.sh" "$CASE_CLIENT" "${names[@]}" -- "$@"
	# Stopping s_server ends its trace: what it received is all there.
	tls_server_stop
	CLIENT_RC=$(sed -n 's/^client rc=\([0-9]*\) ms=[0-9]*$/\1/p' "$SL_OUT")
	CLIENT_MS=$(sed -n 's/^client rc=[0-9]* ms=\([0-9]*\)$/\1/p' "$SL_OUT")
}

# Everything about the last run, for a failed assertion.
tls_diag() {
	sluice_diag "$CASE_LOG"
	tap_diag_file "$CASE_CLIENT" 10
	[[ -n $TLS_SRV_OUT ]] && tap_diag_file "$TLS_SRV_OUT" 10
	return 0
}

# assert_resolved LABEL: every name tlsw.sh resolved got an address (nothing to check when the
# client resolves by itself: the tls line's "host" shows the run learned the name).
assert_resolved() {
	local n bad='' shown=''
	[[ ${#CASE_NAMES[@]} -eq 0 ]] && return 0
	for n in "${CASE_NAMES[@]}"; do
		if [[ $n == */6 ]]; then
			n=${n%/6}
			shown+="$n (AAAA) "
		else
			shown+="$n "
		fi
		grep -qE "^resolved $n [0-9a-f:.]+" "$SL_OUT" || bad+="$n "
	done
	if [[ -z $bad ]]; then
		tap_ok "$1: the run's resolver answered ${shown% }"
	else
		tap_fail "$1: the run's resolver answered ${shown% }" \
			"expected an address for: $bad"
		tls_diag
	fi
}

# sink_bytes ADDR PORT: the byte counts of the inet sink's closed connections to ADDR:PORT since
# the mark, space-separated.
sink_bytes() {
	awk -v s="$SL_SINK_MARK" -v a="$1" -v p="$2" \
		'NR > s && $1 == "tcp" && $2 == a && $3 == p { print $5 }' "$SL_INET_LOG" |
		paste -sd ' ' -
}

# assert_nothing_arrived LABEL WHERE DST: the test host got none of the flow's payload. WHERE
# "srv": s_server received no record at all; "sink": the inet sink accepted the connection and
# logged it closed with 0 bytes (when FLOW, the tls line's "flow" set by the caller, is not
# "destroyed", the flow may still be open: no close line then, and no bytes either).
assert_nothing_arrived() {
	local label=$1 where=$2 dst=$3 got why
	if [[ $where == srv ]]; then
		got=$(srv_records)
		if [[ $got -eq 0 ]]; then
			tap_ok "$label: s_server at $dst received nothing (no TLS record)"
		else
			why="expected 0 records in s_server's trace; got $got"
			why+=" (server names: $(srv_snis))"
			tap_fail "$label: s_server at $dst received nothing (no TLS record)" "$why"
			tls_diag
		fi
		return
	fi
	sink_wait "tcp $dst $CASE_PORT" 1 3000
	sink_settle
	got=$(sink_bytes "$dst" "$CASE_PORT")
	if [[ $(sink_count "tcp-accept $dst $CASE_PORT") -ge 1 &&
		(-z $got && $FLOW != destroyed || $got =~ ^0( 0)*$) ]]; then
		tap_ok "$label: the sink at $dst:$CASE_PORT got the connection and 0 bytes"
	else
		why="expected a tcp-accept line and close lines with 0 bytes; got accepts"
		why+=" $(sink_count "tcp-accept $dst $CASE_PORT"), byte counts \"$got\""
		tap_fail "$label: the sink at $dst:$CASE_PORT got the connection and 0 bytes" "$why"
		tls_diag
	fi
}

# assert_arrived LABEL WHERE DST PORT SNI: the test host got the flow's ClientHello: s_server
# saw exactly one, naming SNI (case-insensitively; "-" for none), or the sink counted bytes.
assert_arrived() {
	local label=$1 where=$2 dst=$3 port=$4 sni=$5 got
	if [[ $where == srv ]]; then
		got=$(srv_snis)
		if [[ ${got,,} == "${sni,,}" ]]; then
			tap_ok "$label: s_server at $dst got one ClientHello naming $sni"
		else
			tap_fail "$label: s_server at $dst got one ClientHello naming $sni" \
				"expected the ClientHello server names \"$sni\"; got \"$got\""
			tls_diag
		fi
		return
	fi
	sink_wait "tcp $dst $port" 1 3000
	got=$(sink_bytes "$dst" "$port")
	if [[ $got =~ ^[1-9][0-9]*$ ]]; then
		tap_ok "$label: the sink at $dst:$port received the ClientHello ($got bytes)"
	else
		tap_fail "$label: the sink at $dst:$port received the ClientHello" \
			"expected one closed connection with bytes > 0; got byte counts \"$got\""
		tls_diag
	fi
}

# tls_dst_text ADDR PORT: "198.51.100.30:443" or "[2001:db8::30]:443", as sluice's other stderr
# notices write a destination (lib.sh sl_dst_text).
tls_dst_text() {
	if [[ $1 == *:* ]]; then
		echo "[$1]:$2"
	else
		echo "$1:$2"
	fi
}


# The tls lines of the last run.
tls_lines() { log_lines "$CASE_LOG" type=tls; }

# assert_no_notice LABEL REGEX: no stderr line matches.
assert_no_notice() {
	local got
	got=$(grep -E -- "$2" "$SL_ERR")
	if [[ -z $got ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected no stderr line matching /$2/; got:"$'\n'"$got"
	fi
}

# assert_notice LABEL REGEX: one stderr line matches, at least.
assert_notice() {
	if grep -qE -- "$2" "$SL_ERR"; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected a stderr line matching /$2/"
		sluice_diag
	fi
}

# Nothing of the last run remains: cgroup, pins, links, and no resolver socket in the run netns.
# shellcheck disable=SC2317 # called through tap_check
run_leftovers() {
	local socks
	leftovers_check "$SL_RUN_ID" "$SL_RUN_CGID" || return 1
	socks=$(in_run ss -Hlntu 2>&1)
	if [[ -n $socks ]]; then
		echo "sockets still listening in $SL_NS_RUN:"
		echo "$socks"
		return 1
	fi
	return 0
}
assert_run_clean() { tap_check "$1" run_leftovers; }

# ---------------------------------------------------------------------------------------------
# Case runners. Each takes the workload after "--" (run by tlsw.sh, after resolving NAMES).

# tls_denial_why REASON: what a denial's stderr notice says the hello did, after its name
# (userspace/records.c, tls_denial_why), written out here, not read from the program
tls_denial_why() {
	case $1 in
	sni_port) echo "which resolved there, but no rule of it allows this port" ;;
	sni_changed) echo "which resolved there, but is not the server the flow's first ClientHello passed with" ;;
	sni_missing) echo "and a TLS flow must name its server" ;;
	sni_unparseable) echo "in a payload that is not one whole ClientHello sluice can read" ;;
	*) echo "which did not resolve there" ;;
	esac
}

# tls_denied LABEL REASON HOST SNI DST WHERE COMM CLIENT_RE NAMES… -- CMD…
# REASON sni_mismatch|sni_missing|sni_unparseable|sni_port; HOST the name DST was learned for; SNI the
# name sent (null: none); WHERE srv|sink; COMM the client's comm; CLIENT_RE an extended regex its
# output must match when the socket was destroyed ("" for no check).
NO_DESTROY="the kernel cannot destroy sockets (no bpf_sock_destroy, no CONFIG_INET_DIAG_DESTROY): the flow is only dropped"
tls_denied() {
	local label=$1 reason=$2 host=$3 sni=$4 dst=$5 where=$6 comm=$7 re=$8 line n want what why
	shift 8
	tls_run "$POL" "$label" "$@"
	assert_resolved "$label"
	# (A v4-mapped connect is logged with "dst":"::ffff:a.b.c.d" and "dst_v4".)
	n=$(($(log_count "$CASE_LOG" type=decision "run_id=$SL_RUN_ID" decision=allow \
		"port=$CASE_PORT" proto=tcp "host=$host" "dst=$dst") + $(log_count "$CASE_LOG" \
		type=decision "run_id=$SL_RUN_ID" decision=allow "port=$CASE_PORT" proto=tcp \
		"host=$host" "dst_v4=$dst")))
	what="$label: connect() to $(tls_dst_text "$dst" "$CASE_PORT") was allowed as $host's address"
	if [[ $n -ge 1 ]]; then
		tap_ok "$what"
	else
		tap_fail "$what" "expected a decision line allowing tcp to $dst:$CASE_PORT for $host"
		tls_diag
	fi

	line=$(tls_lines)
	n=$(grep -c . <<<"$line")
	FLOW=$(log_field "$line" flow 2>/dev/null)
	if [[ $n -eq 1 ]]; then
		tap_ok "$label: the run logged one tls line"
	else
		tap_fail "$label: the run logged one tls line" \
			"expected 1 \"type\":\"tls\" line, got $n"
		tls_diag
	fi
	assert_log "$label: the tls line is a $reason deny naming $host and ${sni/#null/no name}" \
		"$CASE_LOG" 1 \
		type=tls "run_id=$SL_RUN_ID" task=selftest decision=deny enforced=true \
		"reason=$reason" "host=$host" "sni=$sni" "dst=$dst" "port=$CASE_PORT" "comm=$comm"
	assert_decision_ids_tls "$label"
	# destroyed: by bpf_sock_destroy (6.5+), else through sock_diag (CONFIG_INET_DIAG_DESTROY)
	if [[ $FLOW == "dropped (kernel cannot destroy sockets)" ]]; then
		tap_skip "$label: the tls line says the flow was destroyed" "$NO_DESTROY"
	else
		tap_is "$label: the tls line says the flow was destroyed" "$FLOW" destroyed
	fi

	# The client: fails, and at once when the socket was destroyed.
	case $FLOW in
	destroyed)
		if [[ $CLIENT_RC =~ ^[0-9]+$ && $CLIENT_RC -ne 0 && $CLIENT_RC -ne 124 &&
			$CLIENT_RC -ne 28 ]] && ! grep -q '^err TIMEOUT' "$CASE_CLIENT"; then
			tap_ok "$label: the client failed at once ($CLIENT_MS ms, $CLIENT_RC)"
		else
			why="expected a non-zero status that is no timeout (124, curl's 28, \"err"
			why+=" TIMEOUT\"); got status \"$CLIENT_RC\" after \"$CLIENT_MS\" ms"
			tap_fail "$label: the client failed at once" "$why"
			tls_diag
		fi
		if [[ -n $re ]]; then
			if grep -qE -- "$re" "$CASE_CLIENT"; then
				tap_ok "$label: the client says its connection was aborted"
			else
				tap_fail "$label: the client says its connection was aborted" \
					"expected the client's output to match /$re/"
				tls_diag
			fi
		fi
		;;
	"dropped (kernel cannot destroy sockets)")
		tap_skip "$label: the client failed at once" "$NO_DESTROY"
		[[ -n $re ]] && tap_skip "$label: the client says its connection was aborted" \
			"$NO_DESTROY"
		if [[ $CLIENT_RC != 0 ]]; then
			tap_ok "$label: the client did not get through"
		else
			tap_fail "$label: the client did not get through" \
				"expected a non-zero status"
		fi
		;;
	*)
		tap_fail "$label: the client failed at once" \
			"no verdict on the flow's fate: \"flow\" is \"$FLOW\" (destroy failed?)"
		tls_diag
		;;
	esac

	assert_nothing_arrived "$label" "$where" "$dst"

	want="egress denied: TLS to $(tls_dst_text "$dst" "$CASE_PORT") named"
	if [[ $sni == null ]]; then
		want+=" \"(no server name)\""
	else
		want+=" \"$sni\""
	fi
	want+=", $(tls_denial_why "$reason") (resolved for $host; $reason)"
	want+=" run_id=$SL_RUN_ID task=selftest"
	assert_stderr "$label: stderr names both names and the reason" "$want"
	assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"
}

# The deny line carries the client's pid and a socket cookie.
assert_decision_ids_tls() {
	local line
	line=$(tls_lines | head -n 1)
	if grep -qE '[{,]"pid":[1-9][0-9]*[,}]' <<<"$line" &&
		grep -qE '[{,]"sock_cookie":[1-9][0-9]*[,}]' <<<"$line"; then
		tap_ok "$1: the tls line has the client's pid and socket cookie"
	else
		tap_fail "$1: the tls line has the client's pid and socket cookie" \
			"expected \"pid\":N>0 and \"sock_cookie\":N>0 in: $line"
	fi
}

# tls_allowed LABEL HOST SNI DST WHERE COMM NAMES… -- CMD…: the ClientHello names a host that
# resolved to DST: the client gets through (WHERE srv: status 0), the test host sees the
# ClientHello, one tls allow line (HOST "-": any host).
tls_allowed() {
	local label=$1 host=$2 sni=$3 dst=$4 where=$5 comm=$6 line
	local -a hostkv=()
	shift 6
	[[ $host != - ]] && hostkv=("host=$host")
	tls_run "$POL" "$label" "$@"
	assert_resolved "$label"
	if [[ $where == srv ]]; then
		if [[ $CLIENT_RC == 0 ]]; then
			tap_ok "$label: the client got through (status 0)"
		else
			tap_fail "$label: the client got through (status 0)" \
				"expected status 0, got \"$CLIENT_RC\""
			tls_diag
		fi
	fi
	assert_arrived "$label" "$where" "$dst" "$CASE_PORT" "$sni"
	assert_log "$label: one tls line, an sni_ok allow for ${sni,,}" "$CASE_LOG" 1 type=tls \
		"run_id=$SL_RUN_ID" decision=allow enforced=true reason=sni_ok "sni=${sni,,}" \
		"dst=$dst" "port=$CASE_PORT" "comm=$comm" "${hostkv[@]}"
	line=$(tls_lines | head -n 1)
	if [[ -n $line ]] && ! log_field "$line" flow >/dev/null 2>&1; then
		tap_ok "$label: the allow line has no \"flow\""
	else
		tap_fail "$label: the allow line has no \"flow\"" "got: $line"
	fi
	assert_log "$label: the flow line carries the server name" "$CASE_LOG" +1 type=flow \
		"run_id=$SL_RUN_ID" "sni=${sni,,}" "dst=$dst" "port=$CASE_PORT"
	assert_no_notice "$label: stderr has no TLS denial" '^egress (would be )?denied: TLS'
	assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"
}

# tls_unchecked LABEL DST PORT WHERE RULE NAMES… -- CMD…: a flow the check does not cover (CIDR
# rule, other port) with a foreign server name: through, no tls line.
tls_unchecked() {
	local label=$1 dst=$2 port=$3 where=$4 rule=$5
	shift 5
	tls_run "$POL" "$label" "$@"
	[[ ${#CASE_NAMES[@]} -gt 0 ]] && assert_resolved "$label"
	if [[ $where == srv ]]; then
		if [[ $CLIENT_RC == 0 ]]; then
			tap_ok "$label: the client got through (status 0)"
		else
			tap_fail "$label: the client got through (status 0)" \
				"expected status 0, got \"$CLIENT_RC\""
			tls_diag
		fi
	fi
	assert_arrived "$label" "$where" "$dst" "$port" evil.example
	assert_log "$label: connect() allowed by rule $rule" "$CASE_LOG" +1 type=decision \
		"run_id=$SL_RUN_ID" decision=allow "dst=$dst" "port=$port" proto=tcp "rule=$rule"
	assert_log "$label: no tls line (not checked)" "$CASE_LOG" 0 type=tls
	assert_no_notice "$label: stderr has no denial" '^egress (would be )?denied'
	assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"
}

# tls_reported LABEL REASON HOST SNI DST WHERE COMM NAMES… -- CMD…: report mode: the flow a
# denial would have stopped gets through, and is logged and shown as a would-be denial.
tls_reported() {
	local label=$1 reason=$2 host=$3 sni=$4 dst=$5 where=$6 comm=$7 line want
	shift 7
	tls_run "$REPORT_POL" "$label" "$@"
	assert_resolved "$label"
	if [[ $where == srv ]]; then
		if [[ $CLIENT_RC == 0 ]]; then
			tap_ok "$label: the client got through (status 0)"
		else
			tap_fail "$label: the client got through (status 0)" \
				"expected status 0, got \"$CLIENT_RC\""
			tls_diag
		fi
	fi
	assert_arrived "$label" "$where" "$dst" 443 "$sni"
	assert_log "$label: one tls line, a $reason deny with enforced false" "$CASE_LOG" 1 \
		type=tls "run_id=$SL_RUN_ID" decision=deny enforced=false "reason=$reason" \
		"host=$host" "sni=$sni" "dst=$dst" port=443 "comm=$comm"
	assert_log "$label: no other tls line" "$CASE_LOG" 1 type=tls
	line=$(tls_lines | head -n 1)
	if [[ -n $line ]] && ! log_field "$line" flow >/dev/null 2>&1; then
		tap_ok "$label: the line has no \"flow\" (nothing was done to it)"
	else
		tap_fail "$label: the line has no \"flow\" (nothing was done to it)" "got: $line"
	fi
	want="egress would be denied (report mode): TLS to $(tls_dst_text "$dst" 443) named"
	want+=" \"$sni\", $(tls_denial_why "$reason") (resolved for $host; $reason)"
	want+=" run_id=$SL_RUN_ID task=selftest"
	assert_stderr "$label: stderr shows the report-mode line" "$want"
	assert_no_notice "$label: stderr has no \"egress denied\" line" '^egress denied:'
	assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"
}

# ---------------------------------------------------------------------------------------------
# Controls, without sluice: from the run netns, a foreign server name reaches s_server and the
# sink (so the "nothing arrived" checks would see a leak), and the v4/v6 paths are warm (first
# neighbour resolution on a fresh link can cost a SYN retransmission).

tls_server_start control || bail_out "cannot start s_server"
sink_mark
in_run ping -c 1 -W 2 198.51.100.30 >/dev/null 2>&1
in_run ping -6 -c 1 -W 2 2001:db8::30 >/dev/null 2>&1
in_run ping -c 1 -W 2 198.51.100.10 >/dev/null 2>&1
in_run "${S_CLIENT[@]}" -connect 198.51.100.30:443 -servername evil.example </dev/null \
	>"$SL_TMP/control1.client" 2>&1
c1=$?
in_run "${S_CLIENT[@]}" -connect '[2001:db8::30]:443' -servername evil.example </dev/null \
	>"$SL_TMP/control2.client" 2>&1
c2=$?
in_run "${S_CLIENT[@]}" -connect 198.51.100.10:443 -servername evil.example </dev/null \
	>"$SL_TMP/control3.client" 2>&1
# Plain HTTP shows in the trace as a record too.
in_run "${CURL[@]}" http://198.51.100.30:443/ >"$SL_TMP/control4.client" 2>&1
# The record-split ClientHello (hello.py desync) is one a real server takes, and answers.
c5=$(in_run "${HELLO[@]}" 198.51.100.30 evil.example desync:registry.npmjs.org 2>&1)
tls_server_stop
tap_is "control: without sluice, s_client to 198.51.100.30 and [2001:db8::30] completes" \
	"$c1 $c2" "0 0"
tap_is "control: without sluice, s_server answers the record-split ClientHello" "$c5" ok
tap_is "control: without sluice, s_server saw three ClientHellos naming evil.example" \
	"$(srv_snis)" "evil.example evil.example evil.example"
if grep -q 'Content Type = UNKNOWN (71)' "$TLS_SRV_OUT"; then
	tap_ok "control: without sluice, plain HTTP to s_server shows in its trace"
else
	tap_fail "control: without sluice, plain HTTP to s_server shows in its trace" \
		"expected a received record with content type 71 (\"G\" of \"GET\")"
	tap_diag_file "$TLS_SRV_OUT" 20
fi
sink_wait "tcp 198.51.100.10 443" 1 3000
got=$(sink_bytes 198.51.100.10 443)
if [[ $got =~ ^[1-9][0-9]*$ ]]; then
	tap_ok "control: without sluice, the sink at 198.51.100.10:443 counts the ClientHello"
else
	tap_fail "control: without sluice, the sink at 198.51.100.10:443 counts the ClientHello" \
		"expected one close line with bytes > 0, got \"$got\""
fi

# ---------------------------------------------------------------------------------------------
# 1. The name the run resolved, in the ClientHello: allowed.

tls_allowed "curl-listed" registry.npmjs.org registry.npmjs.org 198.51.100.30 srv curl -- \
	"${CURL[@]}" -4 -k -o /dev/null -w '%{http_code}\n' https://registry.npmjs.org/
tap_is "curl-listed: curl got HTTP 200 from s_server" "$(cat "$CASE_CLIENT")" 200

tls_allowed "curl-listed-v6" registry.npmjs.org registry.npmjs.org 2001:db8::30 srv curl -- \
	"${CURL[@]}" -6 -k -o /dev/null -w '%{http_code}\n' https://registry.npmjs.org/
tap_is "curl-listed-v6: curl got HTTP 200 from s_server" "$(cat "$CASE_CLIENT")" 200

tls_allowed "s_client-listed" registry.npmjs.org registry.npmjs.org 198.51.100.30 srv openssl \
	registry.npmjs.org -- "${S_CLIENT[@]}" -connect 198.51.100.30:443 \
	-servername registry.npmjs.org

# Server names are compared without regard to case.
tls_allowed "sni-upper-case" registry.npmjs.org REGISTRY.NPMjs.org 198.51.100.30 srv openssl \
	registry.npmjs.org -- "${S_CLIENT[@]}" -connect 198.51.100.30:443 \
	-servername REGISTRY.NPMjs.org

# A shared (CDN) address: each name that resolved there in this run may be sent.
tls_allowed "cdn-second-name" - files.pythonhosted.org 198.51.100.30 srv openssl \
	registry.npmjs.org files.pythonhosted.org -- "${S_CLIENT[@]}" -connect 198.51.100.30:443 \
	-servername files.pythonhosted.org
# ... and its line cannot say which name the connect was for: it lists both, the kernel's first
assert_log "cdn-second-name: the tls line names no host and lists both names" "$CASE_LOG" 1 \
	type=tls host:raw=null 'hosts:raw=["registry.npmjs.org","files.pythonhosted.org"]'

tls_allowed "pypi-own-address" pypi.org pypi.org 198.51.100.31 srv openssl \
	registry.npmjs.org pypi.org -- "${S_CLIENT[@]}" -connect 198.51.100.31:443 \
	-servername pypi.org

tls_allowed "python-listed" registry.npmjs.org registry.npmjs.org 198.51.100.30 srv python3 \
	registry.npmjs.org -- "${HELLO[@]}" 198.51.100.30 registry.npmjs.org
tap_is "python-listed: the client got the server's reply" "$(cat "$CASE_CLIENT")" ok

# Control for the byte-counting sink: a matching ClientHello to 198.51.100.10 arrives (the
# sink's HTTP answer then fails the handshake: the client's status is not checked).
tls_allowed "sink-listed" ghcr.io ghcr.io 198.51.100.10 sink openssl \
	ghcr.io -- "${S_CLIENT[@]}" -connect 198.51.100.10:443 -servername ghcr.io

# ---------------------------------------------------------------------------------------------
# 2. P9: another name in the ClientHello, to the address the run resolved for a listed name.

# ECONNABORTED as s_client ("write:errno=103") and curl ("Recv failure: Software caused
# connection abort") say it.
ABORTED='errno=103|Software caused connection abort'

tls_denied "P9-s_client" sni_mismatch registry.npmjs.org evil.example 198.51.100.30 srv \
	openssl "$ABORTED" registry.npmjs.org -- \
	"${S_CLIENT[@]}" -connect 198.51.100.30:443 -servername evil.example

tls_denied "P9-curl" sni_mismatch registry.npmjs.org evil.example 198.51.100.30 srv curl \
	"$ABORTED" registry.npmjs.org -- \
	"${CURL[@]}" -k --resolve evil.example:443:198.51.100.30 https://evil.example/

tls_denied "P9-python" sni_mismatch registry.npmjs.org evil.example 198.51.100.30 srv python3 \
	'^err ECONNABORTED$' registry.npmjs.org -- "${HELLO[@]}" 198.51.100.30 evil.example

tls_denied "P9-v6" sni_mismatch registry.npmjs.org evil.example 2001:db8::30 srv openssl \
	"$ABORTED" registry.npmjs.org/6 -- \
	"${S_CLIENT[@]}" -connect '[2001:db8::30]:443' -servername evil.example

# An AF_INET6 socket to the v4-mapped form: the packet is IPv4, still checked.
tls_denied "P9-v4-mapped" sni_mismatch registry.npmjs.org evil.example 198.51.100.30 srv \
	python3 '^err ECONNABORTED$' registry.npmjs.org -- \
	"${HELLO[@]}" ::ffff:198.51.100.30 evil.example

# The byte-counting sink: not one byte of the ClientHello arrives.
tls_denied "P9-sink" sni_mismatch ghcr.io evil.example 198.51.100.10 sink openssl "$ABORTED" \
	ghcr.io -- "${S_CLIENT[@]}" -connect 198.51.100.10:443 -servername evil.example

# A ClientHello in two TLS records within one segment (legal: a handshake message may span
# records). Read as the server reads it, it names evil.example; read straight through, ignoring
# the second record's header, it seems to name registry.npmjs.org. Either way of refusing it is
# right (sni_mismatch after reassembly, or sni_unparseable: the server name is not in the first
# record); letting it through is P9.
label=P9-record-split
tls_run "$POL" "$label" registry.npmjs.org -- \
	"${HELLO[@]}" 198.51.100.30 evil.example desync:registry.npmjs.org
assert_resolved "$label"
line=$(tls_lines)
FLOW=$(log_field "$line" flow 2>/dev/null)
assert_nothing_arrived "$label" srv 198.51.100.30
want='"decision":"deny","enforced":true,"reason":"sni_(mismatch|unparseable)"'
if [[ $(grep -c . <<<"$line") -eq 1 ]] && grep -qE "$want" <<<"$line"; then
	tap_ok "$label: one tls line, an enforced sni_mismatch or sni_unparseable deny"
else
	tap_fail "$label: one tls line, an enforced sni_mismatch or sni_unparseable deny" \
		"got: ${line:-no tls line}"
	tls_diag
fi
if [[ $CLIENT_RC != 0 ]]; then
	tap_ok "$label: the client did not get a ServerHello"
else
	tap_fail "$label: the client did not get a ServerHello" \
		"expected hello.py to fail; it got a TLS record back: $(cat "$CASE_CLIENT")"
fi
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"

# TLS 1.3 HelloRetryRequest: a first ClientHello naming the resolved host with no key share
# (the server must ask again), then, in the same flow, a second ClientHello naming evil.example.
# OpenSSL takes the second ClientHello's server name (its trace shows both). A flow whose
# ClientHello names another host must not get through, whichever ClientHello it is.
label=P9-hello-retry
tls_run "$POL" "$label" registry.npmjs.org -- \
	"${HELLO[@]}" 198.51.100.30 evil.example hrr:registry.npmjs.org
assert_resolved "$label"
got=$(srv_snis)
if [[ " $got " != *" evil.example "* ]]; then
	tap_ok "$label: no ClientHello naming evil.example reached s_server (got: ${got:-none})"
else
	tap_fail "$label: no ClientHello naming evil.example reached s_server" \
		"expected s_server's ClientHellos to name registry.npmjs.org at most; got \"$got\""
	tls_diag
fi
if [[ $CLIENT_RC != 0 ]]; then
	tap_ok "$label: the client did not get a ServerHello for the second ClientHello"
else
	tap_fail "$label: the client did not get a ServerHello for the second ClientHello" \
		"expected hello.py to fail; it printed: $(cat "$CASE_CLIENT")"
fi
assert_log "$label: log has an enforced deny naming registry.npmjs.org and evil.example" \
	"$CASE_LOG" 1 type=tls "run_id=$SL_RUN_ID" decision=deny enforced=true \
	host=registry.npmjs.org sni=evil.example dst=198.51.100.30 port=443
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"

# TCP Fast Open: the ClientHello rides in the SYN (no cookie needed with tcp_fastopen & 4).
TFO_WAS=$(in_run sysctl -n net.ipv4.tcp_fastopen)
sl_on_exit "ip netns exec $SL_NS_RUN sysctl -qw net.ipv4.tcp_fastopen=$TFO_WAS 2>/dev/null"
in_run sysctl -qw net.ipv4.tcp_fastopen=5
tls_allowed "fastopen-listed" registry.npmjs.org registry.npmjs.org 198.51.100.30 srv python3 \
	registry.npmjs.org -- "${HELLO[@]}" 198.51.100.30 registry.npmjs.org fastopen
tls_denied "P9-fastopen" sni_mismatch registry.npmjs.org evil.example 198.51.100.30 srv \
	python3 '^err ECONNABORTED$' registry.npmjs.org -- \
	"${HELLO[@]}" 198.51.100.30 evil.example fastopen
in_run sysctl -qw "net.ipv4.tcp_fastopen=$TFO_WAS"

# P9-sendfile-swap: a packet sent by sendfile() (or splice, vmsplice) refers to the file's page
# cache page, which the server's stack copies only when the server reads. A workload that sends
# a ClientHello naming the resolved host from a file and overwrites the file at once with one
# naming another host (same length) would get the other one served, the log saying sni_ok. So
# while a flow is watched, a packet whose pages the sender can still write is not judged: the
# flow is denied (sni_unparseable). The check needs bpf_cast_to_kern_ctx (6.3+; sluice-policy(5)).
label=P9-sendfile-swap
if grep -qw bpf_cast_to_kern_ctx /proc/kallsyms; then
	tls_denied "$label" sni_unparseable registry.npmjs.org null 198.51.100.30 srv python3 \
		'^err ECONNABORTED$' registry.npmjs.org -- \
		"${HELLO[@]}" 198.51.100.30 registry.npmjs.org swap:evilevil.evil.test
	# The race itself, 20 tries (before the fix, each was served one name or the other).
	label=P9-sendfile-swap-race
	tls_run "$POL" "$label" registry.npmjs.org -- bash -c 'for i in $(seq 20); do "$@"; done' \
		_ "${HELLO[@]}" 198.51.100.30 registry.npmjs.org swap:evilevil.evil.test
	assert_resolved "$label"
	got=$(srv_records)
	if [[ $got -eq 0 ]]; then
		tap_ok "$label: s_server received nothing in 20 tries"
	else
		tap_fail "$label: s_server received nothing in 20 tries" \
			"s_server got $got records, server names \"$(srv_snis)\""
		tls_diag
	fi
	assert_log "$label: 20 enforced sni_unparseable denials" "$CASE_LOG" 20 type=tls \
		"run_id=$SL_RUN_ID" decision=deny enforced=true reason=sni_unparseable \
		host=registry.npmjs.org dst=198.51.100.30 port=443
	assert_log "$label: no tls allow" "$CASE_LOG" 0 type=tls decision=allow
	assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"
else
	why="no bpf_cast_to_kern_ctx (before 6.3): sendfile pages are read after the check"
	for what in "resolved" "connect() allowed" "one tls line" "the tls line" "ids" "destroyed" \
		"failed at once" "aborted" "nothing arrived" "stderr" "nothing left" \
		"race: resolved" "race: nothing arrived" "race: denials" "race: no allow" \
		"race: nothing left"; do
		tap_skip "$label: $what" "$why"
	done
fi

# MSG_ZEROCOPY sends the caller's own pages the same way: SO_ZEROCOPY, which it needs, is
# refused for the run's sockets (every kernel), logged like the other refused options.
label=P9-zerocopy-swap
tls_run "$POL" "$label" registry.npmjs.org -- \
	"${HELLO[@]}" 198.51.100.30 registry.npmjs.org zerocopy:evilevil.evil.test
assert_resolved "$label"
tap_check "$label: setsockopt(SO_ZEROCOPY) fails with EPERM" grep -qx 'err EPERM' "$CASE_CLIENT"
assert_log "$label: the log has the SO_ZEROCOPY refusal" "$CASE_LOG" 1 type=decision \
	"run_id=$SL_RUN_ID" hook=setsockopt decision=deny enforced=true reason=socket_kind
tap_is "$label: s_server received nothing" "$(srv_records)" 0
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"

# Controls: sendfile() on a flow the check does not watch (CIDR rule) still works (a plain
# send() of a listed name's ClientHello is "python-listed" above).
tls_unchecked "cidr-sendfile" 198.51.100.32 443 srv mirror -- \
	"${HELLO[@]}" 198.51.100.32 evil.example sendfile

# ---------------------------------------------------------------------------------------------
# 3. A listed name is not enough: it must have resolved to this address, in this run.

tls_denied "listed-name-other-address" sni_mismatch registry.npmjs.org pypi.org 198.51.100.30 \
	srv openssl "$ABORTED" registry.npmjs.org pypi.org -- \
	"${S_CLIENT[@]}" -connect 198.51.100.30:443 -servername pypi.org

tls_denied "listed-name-other-address-v6" sni_mismatch registry.npmjs.org pypi.org \
	2001:db8::30 srv openssl "$ABORTED" registry.npmjs.org/6 pypi.org/6 -- \
	"${S_CLIENT[@]}" -connect '[2001:db8::30]:443' -servername pypi.org

# files.pythonhosted.org would resolve to 198.51.100.30, but this run never asked.
tls_denied "listed-name-not-resolved" sni_mismatch registry.npmjs.org files.pythonhosted.org \
	198.51.100.30 srv openssl "$ABORTED" registry.npmjs.org -- \
	"${S_CLIENT[@]}" -connect 198.51.100.30:443 -servername files.pythonhosted.org

# ---------------------------------------------------------------------------------------------
# 4. No server name; not a ClientHello; a ClientHello cut before its server name.

tls_denied "no-sni" sni_missing registry.npmjs.org null 198.51.100.30 srv openssl "$ABORTED" \
	registry.npmjs.org -- "${S_CLIENT[@]}" -connect 198.51.100.30:443 -noservername

tls_denied "no-sni-sink" sni_missing ghcr.io null 198.51.100.10 sink python3 \
	'^err ECONNABORTED$' ghcr.io -- "${HELLO[@]}" 198.51.100.10 -

# curl resolves registry.npmjs.org itself (glibc, redirected to the run's resolver).
tls_denied "plain-http-443" sni_unparseable registry.npmjs.org null 198.51.100.30 srv curl \
	"$ABORTED" -- "${CURL[@]}" -4 http://registry.npmjs.org:443/

tls_denied "plain-http-443-sink" sni_unparseable ghcr.io null 198.51.100.10 sink curl \
	"$ABORTED" -- "${CURL[@]}" http://ghcr.io:443/

tls_denied "split-client-hello" sni_unparseable registry.npmjs.org null 198.51.100.30 srv \
	python3 '^err ECONNABORTED$' registry.npmjs.org -- \
	"${HELLO[@]}" 198.51.100.30 registry.npmjs.org split

# Urgent data: the server's stack takes the urgent byte out of the stream, so the server reads
# other bytes than those judged (one byte less: a hello built around that byte reads as another
# one there). A ClientHello sent with MSG_OOB, even naming the resolved host, cannot be judged.
tls_denied "urgent-client-hello" sni_unparseable registry.npmjs.org null 198.51.100.30 srv \
	python3 '^err ECONNABORTED$' registry.npmjs.org -- \
	"${HELLO[@]}" 198.51.100.30 registry.npmjs.org oob

# ---------------------------------------------------------------------------------------------
# 5. Report mode: the mismatch goes through, logged as a denial not enforced.

tls_reported "report-P9" sni_mismatch registry.npmjs.org evil.example 198.51.100.30 srv openssl \
	registry.npmjs.org -- "${S_CLIENT[@]}" -connect 198.51.100.30:443 -servername evil.example

tls_reported "report-P9-sink" sni_mismatch ghcr.io evil.example 198.51.100.10 sink openssl \
	ghcr.io -- "${S_CLIENT[@]}" -connect 198.51.100.10:443 -servername evil.example

# ---------------------------------------------------------------------------------------------
# 6. Not checked: flows a CIDR rule allows (other ports: section 8).

tls_unchecked "cidr-s_client" 198.51.100.32 443 srv mirror -- \
	"${S_CLIENT[@]}" -connect 198.51.100.32:443 -servername evil.example

tls_unchecked "cidr-curl" 198.51.100.32 443 srv mirror -- \
	"${CURL[@]}" -k -o /dev/null -w '%{http_code}\n' \
	--resolve evil.example:443:198.51.100.32 https://evil.example/
tap_is "cidr-curl: curl got HTTP 200 from s_server" "$(cat "$CASE_CLIENT")" 200

tls_unchecked "cidr-sink" 203.0.113.7 443 sink mirror -- \
	"${S_CLIENT[@]}" -connect 203.0.113.7:443 -servername evil.example

# ---------------------------------------------------------------------------------------------
# 7. P21: a server name whose FNV-1a 64 hash equals a listed name's. The check once compared
# such hashes; a workload that computes a colliding <label>.attacker.example (a minute's work)
# must still be refused: whole names are compared.

tap_is "P21: the pair really collides under FNV-1a 64 (and the names differ)" \
	"$(python3 -c '
import sys
def fnv(s):
    h = 0xcbf29ce484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001b3) % 2**64
    return h
a, b = sys.argv[1:]
print("%016x %016x %s" % (fnv(a), fnv(b), "same" if a == b else "differ"))' \
		"$COLLIDE_LISTED" "$COLLIDE_EVIL")" "$COLLIDE_FNV $COLLIDE_FNV differ"

CASE_POL=$COLLIDE_POL
tls_allowed "P21-listed" "$COLLIDE_LISTED" "$COLLIDE_LISTED" 198.51.100.30 srv openssl \
	"$COLLIDE_LISTED" -- "${S_CLIENT[@]}" -connect 198.51.100.30:443 \
	-servername "$COLLIDE_LISTED"
tls_denied "P21-collision" sni_mismatch "$COLLIDE_LISTED" "$COLLIDE_EVIL" 198.51.100.30 srv \
	openssl "$ABORTED" "$COLLIDE_LISTED" -- \
	"${S_CLIENT[@]}" -connect 198.51.100.30:443 -servername "$COLLIDE_EVIL"
tls_denied "P21-collision-v6" sni_mismatch "$COLLIDE_LISTED" "$COLLIDE_EVIL" 2001:db8::30 srv \
	openssl "$ABORTED" "$COLLIDE_LISTED/6" -- \
	"${S_CLIENT[@]}" -connect '[2001:db8::30]:443' -servername "$COLLIDE_EVIL"
CASE_POL=

# ---------------------------------------------------------------------------------------------
# 8. P22: TLS on any port. Every TCP flow to a name's address whose first payload starts like
# TLS (a handshake record) is checked, on 8443 as on 443, and on every port of a rule without
# ports:; a first payload that is not TLS is left alone off 443. UDP (QUIC, whose server name is
# encrypted) to a name's address needs a rule that says protocols: [udp].

P22_POL=$SL_TMP/p22.yaml
cat >"$P22_POL" <<'EOF'
default: deny
rules:
  - name: registries
    hosts: ["registry.npmjs.org"]
    ports: [443, 8443]
  - name: anyport
    hosts: ["ghcr.io"]
EOF
P22_UDP_POL=$SL_TMP/p22-udp.yaml
cat >"$P22_UDP_POL" <<'EOF'
default: deny
rules:
  - name: anyport
    hosts: ["ghcr.io"]
    protocols: [tcp, udp]
EOF

CASE_POL=$P22_POL CASE_PORT=8443
tls_allowed "P22-8443-listed" registry.npmjs.org registry.npmjs.org 198.51.100.30 srv openssl \
	registry.npmjs.org -- "${S_CLIENT[@]}" -connect 198.51.100.30:8443 \
	-servername registry.npmjs.org
tls_denied "P22-8443" sni_mismatch registry.npmjs.org evil.example 198.51.100.30 srv openssl \
	"$ABORTED" registry.npmjs.org -- \
	"${S_CLIENT[@]}" -connect 198.51.100.30:8443 -servername evil.example
tls_denied "P22-8443-v6" sni_mismatch registry.npmjs.org evil.example 2001:db8::30 srv openssl \
	"$ABORTED" registry.npmjs.org/6 -- \
	"${S_CLIENT[@]}" -connect '[2001:db8::30]:8443' -servername evil.example
# Its first segment starts like TLS: the rest must not get through in pieces.
tls_denied "P22-8443-split" sni_unparseable registry.npmjs.org null 198.51.100.30 srv python3 \
	'^err ECONNABORTED$' registry.npmjs.org -- \
	"${HELLO[@]}" 198.51.100.30 registry.npmjs.org split 8443
tls_denied "P22-8443-split1" sni_unparseable registry.npmjs.org null 198.51.100.30 srv python3 \
	'^err ECONNABORTED$' registry.npmjs.org -- \
	"${HELLO[@]}" 198.51.100.30 registry.npmjs.org split1 8443
# A rule without ports: every port is checked (the sink listens on 8080).
CASE_PORT=8080
tls_denied "P22-any-port" sni_mismatch ghcr.io evil.example 198.51.100.10 sink openssl \
	"$ABORTED" ghcr.io -- "${S_CLIENT[@]}" -connect 198.51.100.10:8080 -servername evil.example
# Control: a first payload that is not TLS (plain HTTP) is not judged off 443.
tls_unchecked "P22-plain-8080" 198.51.100.10 8080 sink anyport ghcr.io -- \
	"${CURL[@]}" -o /dev/null http://ghcr.io:8080/
# A first payload that starts like TLS but not with a handshake (a warning alert, which a Go
# server drops before reading the ClientHello that follows) is TLS too: judged, not waved
# through as plain TCP with the foreign name behind it.
tls_denied "P22-8080-alert-first" sni_unparseable ghcr.io null 198.51.100.10 sink python3 \
	'^err ECONNABORTED$' ghcr.io -- "${HELLO[@]}" 198.51.100.10 evil.example alert 8080
# A ClientHello that names the listed host and another one (a second server_name extension, or
# a second name in its list): which one a server takes is the server's choice, so it is refused.
tls_denied "P22-8080-two-sni" sni_unparseable ghcr.io null 198.51.100.10 sink python3 \
	'^err ECONNABORTED$' ghcr.io -- "${HELLO[@]}" 198.51.100.10 ghcr.io twosni:evil.example 8080
tls_denied "P22-8080-two-names" sni_unparseable ghcr.io null 198.51.100.10 sink python3 \
	'^err ECONNABORTED$' ghcr.io -- \
	"${HELLO[@]}" 198.51.100.10 ghcr.io twonames:evil.example 8080
# A rule that lists ports other than 443 (containers: 443, 8080).
CASE_POL=
tls_denied "P22-listed-port" sni_mismatch ghcr.io evil.example 198.51.100.10 sink openssl \
	"$ABORTED" ghcr.io -- "${S_CLIENT[@]}" -connect 198.51.100.10:8080 -servername evil.example
CASE_PORT=443

# quic_case LABEL POLICY: resolve ghcr.io, then one QUIC-like datagram to its address, UDP/443
# (the sink listens there). Sets QUIC_OUT ("sent" or "err ENAME").
quic_case() {
	local label=$1 policy=$2
	tls_run "$policy" "$label" ghcr.io -- python3 -c '
import errno, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"\xc3\x00\x00\x00\x01" + bytes(1195), ("198.51.100.10", 443))
    print("sent")
except OSError as e:
    print("err " + errno.errorcode.get(e.errno, str(e.errno)))'
	assert_resolved "$label"
	QUIC_OUT=$(cat "$CASE_CLIENT")
}

# A host rule without protocols is TCP only: QUIC to the name's address is refused.
label=P22-quic-default
quic_case "$label" "$P22_POL"
tap_is "$label: the datagram to 198.51.100.10:443 fails with EPERM" "$QUIC_OUT" "err EPERM"
assert_sink_none "$label: nothing reaches the sink's UDP/443" "udp 198.51.100.10 443"
assert_log "$label: the log has the udp denial" "$CASE_LOG" 1 type=decision \
	"run_id=$SL_RUN_ID" decision=deny proto=udp dst=198.51.100.10 port=443
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"

label=P22-quic-explicit
quic_case "$label" "$P22_UDP_POL"
tap_is "$label: with protocols: [tcp, udp] the datagram is sent" "$QUIC_OUT" sent
assert_sink_saw "$label: the sink gets it on UDP/443" "udp 198.51.100.10 443"
assert_log "$label: the log has the udp allow under anyport" "$CASE_LOG" +1 type=decision \
	"run_id=$SL_RUN_ID" decision=allow proto=udp dst=198.51.100.10 port=443 rule=anyport
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"

# policy check says what UDP on a host rule means, and a host rule without protocols is tcp.
label=P22-policy-check
out=$("$SLUICE" policy check "$P22_UDP_POL" 2>&1)
if grep -q "the server name is not checked: QUIC (HTTP/3) carries it in" <<<"$out" &&
	grep -q "the kernel cannot bind it to the name without decrypting" <<<"$out"; then
	tap_ok "$label: a host rule with udp is explained (QUIC's server name is not checked)"
else
	tap_fail "$label: a host rule with udp is explained (QUIC's server name is not checked)" \
		"got: $out"
fi
out=$("$SLUICE" policy check "$P22_POL" 2>&1)
if [[ $(grep -c '^    protocols: tcp$' <<<"$out") -eq 2 ]] && ! grep -q QUIC <<<"$out"; then
	tap_ok "$label: host rules without protocols are tcp only, nothing to explain"
else
	tap_fail "$label: host rules without protocols are tcp only, nothing to explain" \
		"got: $out"
fi

# P29 on the server-name path: a connect() to a learned name's address needs socket storage
# for its TLS state, charged to the socket's option memory like the flow's. Filled first (TCP-MD5
# keys, as test_flows.sh does), the connect is refused for want of state, naming the rule that
# allows it (flow_no_state), not as a connect no rule allows.
label=P29-tls
tls_run "$POL" "$label" ghcr.io -- python3 "$SL_LIB_DIR/tools/sl_omem_connect.py" \
	198.51.100.10 443
assert_resolved "$label"
read -r what keys errno <"$CASE_CLIENT"
if [[ ${keys:-0} -lt 10 ]]; then
	tap_skip "$label: the option memory filled first" \
		"TCP-MD5 keys cannot be set here (no CONFIG_TCP_MD5SIG?)"
else
	tap_is "$label: option memory filled ($keys TCP-MD5 keys): the connect is refused" \
		"$what ${errno:-}" "refused 1" || tls_diag
	assert_log "$label: … for want of the flow's state, naming the rule that allows it" \
		"$CASE_LOG" 1 type=decision hook=connect4 decision=deny reason=flow_no_state \
		rule=containers dst=198.51.100.10 port=443
fi
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"

# ---------------------------------------------------------------------------------------------
# 8b. A shared address whose names are listed by different rules: registry.npmjs.org and
# files.pythonhosted.org both resolve to 198.51.100.30. The ClientHello's name decides the rule
# the flow goes on under: one of the rules that name was answered under, never another name's
# (sni_port when none of its rules allows the port), whichever name was answered first.

SHARED_PORT_RULES='rules:
  - name: npm-tls
    hosts: ["registry.npmjs.org"]
    ports: [443]
  - name: pyhosted-alt
    hosts: ["files.pythonhosted.org"]
    ports: [8443]'
SHARED_PORT_POL=$SL_TMP/shared-port.yaml
printf 'default: deny\n%s\n' "$SHARED_PORT_RULES" >"$SHARED_PORT_POL"
SHARED_PORT_REPORT_POL=$SL_TMP/shared-port-report.yaml
printf 'default: deny\nmode: report\n%s\n' "$SHARED_PORT_RULES" >"$SHARED_PORT_REPORT_POL"
SHARED_CAP_POL=$SL_TMP/shared-cap.yaml
cat >"$SHARED_CAP_POL" <<'EOF'
default: deny
rules:
  - name: npm-capped
    hosts: ["registry.npmjs.org"]
    ports: [443]
    max_request_bytes: 1024
  - name: pyhosted-open
    hosts: ["files.pythonhosted.org"]
    ports: [443]
EOF

# upload.py ADDR SNI N: a whole TLS handshake (Python's ssl) with ADDR:443 naming SNI, then a
# "GET /" whose one header carries N bytes, then the answer's status line. Prints "ok" when
# s_server answered it (status 0), "eof" or "err ENAME" (status 1) otherwise.
cat >"$SL_TMP/upload.py" <<'EOF'
import errno, socket, ssl, sys
addr, sni, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    raw = socket.create_connection((addr, 443), timeout=6)
    s = ctx.wrap_socket(raw, server_hostname=sni)
    s.sendall(b"GET / HTTP/1.0\r\nX-Pad: " + b"a" * n + b"\r\n\r\n")
    got = b""
    while b"\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    print("ok" if got.startswith(b"HTTP/1.0 200") else "eof")
    sys.exit(0 if got.startswith(b"HTTP/1.0 200") else 1)
except socket.timeout:
    print("err TIMEOUT")
except (OSError, ssl.SSLError) as e:
    print("err " + errno.errorcode.get(e.errno, str(e.errno)))
sys.exit(1)
EOF
UPLOAD=(timeout "$TLS_CLIENT_TIMEOUT" python3 "$SL_TMP/upload.py")
SHARED_PORT_WHY=$(tls_denial_why sni_port)

# Case 1: registry.npmjs.org on 8443, the port of files.pythonhosted.org's rule only. The
# connect() is allowed (the address carries both rules); the ClientHello must not be.
CASE_POL=$SHARED_PORT_POL CASE_PORT=8443
label=SR-other-names-port
tls_run "$POL" "$label" registry.npmjs.org files.pythonhosted.org -- \
	"${HELLO[@]}" 198.51.100.30 registry.npmjs.org whole 8443
assert_resolved "$label"
assert_log "$label: connect() to 198.51.100.30:8443 allowed under pyhosted-alt" "$CASE_LOG" 1 \
	type=decision "run_id=$SL_RUN_ID" decision=allow dst=198.51.100.30 port=8443 proto=tcp \
	rule=pyhosted-alt
assert_log "$label: one tls line, an enforced sni_port deny naming registry.npmjs.org" \
	"$CASE_LOG" 1 type=tls "run_id=$SL_RUN_ID" decision=deny enforced=true reason=sni_port \
	sni=registry.npmjs.org dst=198.51.100.30 port=8443 comm=python3
assert_nothing_arrived "$label" srv 198.51.100.30
if [[ $CLIENT_RC != 0 ]]; then
	tap_ok "$label: the client did not get through"
else
	tap_fail "$label: the client did not get through" "it printed: $(cat "$CASE_CLIENT")"
	tls_diag
fi
assert_notice "$label: stderr says why (no rule of the name allows the port)" \
	"^egress denied: TLS to 198\.51\.100\.30:8443 named \"registry\.npmjs\.org\", $SHARED_PORT_WHY \(.*; sni_port\) run_id=$SL_RUN_ID "
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"
# Control: the name whose rule does list 8443 passes there.
tls_allowed "SR-own-port" - files.pythonhosted.org 198.51.100.30 srv python3 \
	registry.npmjs.org files.pythonhosted.org -- \
	"${HELLO[@]}" 198.51.100.30 files.pythonhosted.org whole 8443

# Report mode: logged as the would-be denial, not enforced.
CASE_POL=$SHARED_PORT_REPORT_POL
label=SR-report
tls_run "$POL" "$label" registry.npmjs.org files.pythonhosted.org -- \
	"${HELLO[@]}" 198.51.100.30 registry.npmjs.org whole 8443
assert_resolved "$label"
tap_is "$label: the client got through" "$CLIENT_RC" 0 || tls_diag
assert_arrived "$label" srv 198.51.100.30 8443 registry.npmjs.org
assert_log "$label: one tls line, a sni_port deny with enforced false" "$CASE_LOG" 1 type=tls \
	"run_id=$SL_RUN_ID" decision=deny enforced=false reason=sni_port sni=registry.npmjs.org \
	dst=198.51.100.30 port=8443
assert_notice "$label: stderr shows the report-mode line" \
	"^egress would be denied \(report mode\): TLS to 198\.51\.100\.30:8443 named \"registry\.npmjs\.org\", $SHARED_PORT_WHY \(.*; sni_port\) run_id=$SL_RUN_ID "
assert_no_notice "$label: stderr has no \"egress denied\" line" '^egress denied:'
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"
CASE_POL=''
CASE_PORT=443

# Case 2: both names on 443, registry.npmjs.org's rule capped at 1 KiB of request, the other's
# not. A ClientHello naming registry.npmjs.org uploads under its cap whichever name was answered
# first (first match gave the uncapped rule when files.pythonhosted.org was); one naming
# files.pythonhosted.org is not held to it, even when registry.npmjs.org was answered first.
# shared_cap LABEL SNI NAMES…: one run, a 4000-byte request to 198.51.100.30 naming SNI.
shared_cap() {
	local label=$1 sni=$2
	shift 2
	CASE_POL=$SHARED_CAP_POL
	tls_run "$POL" "$label" "$@" -- "${UPLOAD[@]}" 198.51.100.30 "$sni" 4000
	CASE_POL=
	assert_resolved "$label"
}
for order in "files.pythonhosted.org registry.npmjs.org" \
	"registry.npmjs.org files.pythonhosted.org"; do
	read -ra names <<<"$order"
	label="SR-cap-${names[0]%%.*}-first"
	shared_cap "$label" registry.npmjs.org "${names[@]}"
	if [[ $(cat "$CASE_CLIENT") != ok ]]; then
		tap_ok "$label: the upload naming registry.npmjs.org got no answer"
	else
		tap_fail "$label: the upload naming registry.npmjs.org got no answer" \
			"s_server answered it: the cap did not hold"
		tls_diag
	fi
	assert_log "$label: … cut at npm-capped's max_request_bytes (1024)" "$CASE_LOG" 1 \
		type=flow_cut "run_id=$SL_RUN_ID" cap=max_request_bytes limit=1024 rule=npm-capped \
		dst=198.51.100.30 port=443
	assert_log "$label: its flow line names the rule and the server name" "$CASE_LOG" 1 \
		type=flow "run_id=$SL_RUN_ID" rule=npm-capped sni=registry.npmjs.org \
		cut=max_request_bytes
	assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"
done
label=SR-cap-other-name
shared_cap "$label" files.pythonhosted.org registry.npmjs.org files.pythonhosted.org
tap_is "$label: the upload naming files.pythonhosted.org got its answer" "$(cat "$CASE_CLIENT")" \
	ok || tls_diag
assert_log "$label: … not cut at the other name's cap" "$CASE_LOG" 0 type=flow_cut
assert_log "$label: its flow went on under pyhosted-open, uncut" "$CASE_LOG" 1 type=flow \
	"run_id=$SL_RUN_ID" rule=pyhosted-open sni=files.pythonhosted.org
sent=$(log_field "$(log_lines "$CASE_LOG" type=flow "run_id=$SL_RUN_ID" \
	sni=files.pythonhosted.org)" req_bytes 2>/dev/null)
tap_cmp "$label: … carrying more than the other name's cap (${sent:-no} bytes sent)" \
	"${sent:-0}" -gt 4000
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"

# Case 3: a move onto a stricter rule at the hello. connect() takes the strictest rule by
# request cap, files.pythonhosted.org's (1 MB per flow; registry.npmjs.org's has none), and the
# ClientHello naming registry.npmjs.org puts the flow under npm-total, whose 2 KiB total holds.
SHARED_TOTAL_POL=$SL_TMP/shared-total.yaml
cat >"$SHARED_TOTAL_POL" <<'EOF2'
default: deny
rules:
  - name: npm-total
    hosts: ["registry.npmjs.org"]
    ports: [443]
    max_total_request_bytes: 2048
  - name: pyhosted-wide
    hosts: ["files.pythonhosted.org"]
    ports: [443]
    max_request_bytes: 1000000
EOF2
label=SR-move-stricter
CASE_POL=$SHARED_TOTAL_POL
tls_run "$POL" "$label" registry.npmjs.org files.pythonhosted.org -- \
	"${UPLOAD[@]}" 198.51.100.30 registry.npmjs.org 4000
CASE_POL=
assert_resolved "$label"
assert_log "$label: connect() went under pyhosted-wide (the smaller request cap)" "$CASE_LOG" 1 \
	type=decision "run_id=$SL_RUN_ID" decision=allow dst=198.51.100.30 port=443 \
	rule=pyhosted-wide
assert_log "$label: the flow was cut at npm-total's max_total_request_bytes" "$CASE_LOG" 1 \
	type=flow_cut "run_id=$SL_RUN_ID" cap=max_total_request_bytes rule=npm-total \
	dst=198.51.100.30 port=443
assert_run_clean "$label: nothing left (cgroup, pins, links, resolver sockets)"

# ---------------------------------------------------------------------------------------------
# 9. The fixtures go: dnsmasq and every s_server of this file stopped.

dns_upstream_stop
if pid_running "$SL_DNS_PID"; then
	tap_fail "fixtures: dnsmasq stopped" "pid $SL_DNS_PID still running"
else
	tap_ok "fixtures: dnsmasq stopped"
fi
left=
for pid in "${SL_PIDS[@]}"; do
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == openssl ]] && pid_running "$pid" && left+="$pid "
done
if [[ -z $left ]]; then
	tap_ok "fixtures: no s_server left running"
else
	tap_fail "fixtures: no s_server left running" "still running: $left"
fi

tap_done
