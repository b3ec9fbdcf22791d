#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Hostname rules through the run's resolver (P7, P8). Every run starts its command in the run
# netns (sluice run --netns) with its own resolver, which asks a dnsmasq bound to 127.0.0.1 in
# this netns (the "upstream", loopback only). Checked at the receiving side (the test hosts' sinks
# and the upstream's query log), in the JSON log and on stderr:
#   - DNS to any server, UDP or TCP, v4 or v6, is answered by the run's resolver; nothing reaches
#     an outside resolver; clients see the server they asked (P7);
#   - listed names (exact and "*.suffix") resolve, unlisted ones get NXDOMAIN at once, with a deny
#     line, "egress denied: NAME" and the request-access hint, and never reach the upstream;
#   - CNAME chains are followed and attributed to the asked name; other query types of a listed
#     name get no data; truncated answers come back over TCP;
#   - answers into 169.254/16 or private space, also inside 6to4, Teredo or NAT64 addresses, are
#     refused (SERVFAIL) unless a cidrs rule covers them (the blackhole: never) (P8);
#   - a listed name's addresses are allowed only once this run's resolver produced them, on the
#     rule's ports and protocols (learned-only, per run);
#   - an answer the run cannot learn (its learned-address map full, a name it cannot number) is
#     refused whole, in report mode too, and leaves nothing learned;
#   - curl, glibc and python resolve through /etc/resolv.conf, whatever server it names;
#   - nothing is left behind.

# Workload scripts are single-quoted on purpose: they expand inside the run.
# shellcheck disable=SC2016
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
for t in dig curl dnsmasq ss; do
	command -v "$t" >/dev/null || skip_all "$t not installed (bind9-dnsutils, curl, dnsmasq-base)"
done
topo_up

SEED=$REPO/policy/examples/seed-003.yaml
[[ -r $SEED ]] || bail_out "missing $SEED"
DIG=(dig +time=$((2 * SL_SLOW)) +tries=1)

# ---------------------------------------------------------------------------------------------
# Topology additions: the outside resolvers the workload asks (203.0.113.53, 2001:db8::53; the
# inet sink already takes UDP 53 on every address there, a second sink takes TCP 53), and a
# private test host 10.1.2.3 for the rebinding cases.

in_inet ip addr add 203.0.113.53/32 dev lo || bail_out "cannot add 203.0.113.53"
in_inet ip addr add 2001:db8::53/128 dev lo nodad || bail_out "cannot add 2001:db8::53"
in_inet ip addr add 10.1.2.3/32 dev lo || bail_out "cannot add 10.1.2.3"
in_rtr ip route add 10.1.2.3/32 via 10.200.2.2 || bail_out "cannot route 10.1.2.3"
# TCP 53 (the outside resolvers over TCP) and UDP 80 (UDP to a tcp-only rule's port).
sl_start_sink_ports "$SL_NS_INET" inet-extra 53 80 || bail_out "cannot start the extra sink"
SL_EXTRA_LOG=$SL_TMP/inet-extra.log
SL_EXTRA_MARK=0

# ---------------------------------------------------------------------------------------------
# The upstream. The seed's names are mapped to the test hosts; host records are exact names
# (dnsmasq's --address also answers every subdomain).

LISTED=(registry.npmjs.org pypi.org git.internal.acme.com broker.dev.acme.internal
	artifacts.acme.internal ghcr.io api.github.com)
up=(--local-ttl=300)
for n in "${LISTED[@]}"; do
	up+=("--host-record=$n,198.51.100.10,2001:db8::10")
done
# shellcheck disable=SC2054 # dnsmasq's arguments have commas
up+=(
	# Unlisted names that resolve upstream: an NXDOMAIN must come from the run's resolver.
	--host-record=static.rust-lang.org,198.51.100.20,2001:db8::20
	--host-record=transfer.sh,198.51.100.20,2001:db8::20
	# A CNAME answered alone (the resolver must ask again for the target) ...
	--cname=files.pythonhosted.org,cdn.fastly.example
	--address=/cdn.fastly.example/198.51.100.10
	# ... and a two-hop chain answered at once.
	--cname=pkg-containers.ghcr.io,edge.ghcr.example
	--cname=edge.ghcr.example,cdn2.fastly.example
	--host-record=cdn2.fastly.example,198.51.100.10,2001:db8::10
	# Other types of a listed name: if they were passed on, the client would see data.
	--txt-record=registry.npmjs.org,leaked-txt
	--dns-rr=registry.npmjs.org,65,000100
	--dns-rr=registry.npmjs.org,64,000100
	# Wildcards: every name below githubusercontent.com, and the bare name too.
	--address=/githubusercontent.com/198.51.100.10
	--address=/githubusercontent.com/2001:db8::10
	--host-record=evilgithubusercontent.com,198.51.100.20
	--host-record=githubusercontent.com.evil.example,198.51.100.20
	# Rebinding (P8).
	--host-record=meta.rebind.example,169.254.169.254
	--host-record=private.rebind.example,10.1.2.3
	--host-record=loop.rebind.example,127.0.0.1
	--host-record=mixed.rebind.example,198.51.100.10
	--host-record=mixed.rebind.example,10.1.2.3
	--cname=via-cname.rebind.example,meta.rebind.example
	--address=/mapped.rebind.example/::ffff:169.254.169.254
	--address=/imds6.rebind.example/fd00:ec2::254
	--address=/ula.rebind.example/fd12:3456::1
	--address=/loop6.rebind.example/::1
	# the blackhole and private space inside IPv6 forms that carry an IPv4 address
	--address=/sixto4.rebind.example/2002:a9fe:a9fe::1
	--address=/teredo.rebind.example/2001:0:4136:e378:8000:63bf:5601:5601
	--address=/nat64.rebind.example/64:ff9b:1::a9fe:a9fe
	--address=/sixto4-private.rebind.example/2002:a01:203::1
)
# 32 addresses: more than 512 bytes, so a UDP answer without EDNS is truncated.
for i in $(seq 101 132); do
	up+=("--host-record=big.example,198.51.100.$i")
done
dns_upstream_start upstream "${up[@]}" || bail_out "cannot start dnsmasq on 127.0.0.1"
sl_on_exit dns_upstream_stop

# The upstream itself answers what the cases rely on (from this netns, to loopback only).
upstream_dig() { dig +time=$((2 * SL_SLOW)) +tries=1 -p "$SL_DNS_PORT" @127.0.0.1 "$@" 2>&1; }
f=$SL_TMP/upstream-check.dig
upstream_dig static.rust-lang.org >"$f"
tap_is "fixture: the upstream resolves the unlisted static.rust-lang.org" \
	"$(dig_status "$f") $(dig_answers "$f")" "NOERROR A 198.51.100.20"
upstream_dig registry.npmjs.org TXT >"$f"
tap_is "fixture: the upstream has a TXT record for registry.npmjs.org" \
	"$(dig_status "$f") $(dig_answers "$f")" "NOERROR TXT \"leaked-txt\""
upstream_dig +noedns +ignore big.example >"$f"
if grep -q '^;; flags:.* tc[ ;]' "$f"; then
	tap_ok "fixture: the upstream truncates big.example over UDP without EDNS"
else
	tap_fail "fixture: the upstream truncates big.example over UDP without EDNS" \
		"expected the tc flag; got: $(grep '^;; flags' "$f")"
fi
# Only what the runs asked counts from here on.
UPSTREAM_FIXTURE_END=$(sl_lines "$SL_DNS_LOG")

# ---------------------------------------------------------------------------------------------
# Policies

CASE_REQ='https://tooling.example/egress/request?host={host}'
# The seed with a request_access line (the seed itself has none).
{
	echo "request_access: \"$CASE_REQ\""
	cat "$SEED"
} >"$SL_TMP/seed-ra.yaml"
cat >"$SL_TMP/wild.yaml" <<'EOF'
default: deny
rules:
  - name: gh-content
    hosts: ["*.githubusercontent.com"]
EOF
REBIND_HOSTS='["meta.rebind.example", "private.rebind.example", "loop.rebind.example",
            "mixed.rebind.example", "via-cname.rebind.example", "mapped.rebind.example",
            "imds6.rebind.example", "ula.rebind.example", "loop6.rebind.example",
            "sixto4.rebind.example", "teredo.rebind.example", "nat64.rebind.example",
            "sixto4-private.rebind.example"]'
cat >"$SL_TMP/rebind.yaml" <<EOF
default: deny
rules:
  - name: rebind
    hosts: $REBIND_HOSTS
EOF
cat >"$SL_TMP/rebind-cidr.yaml" <<EOF
default: deny
rules:
  - name: rebind
    hosts: $REBIND_HOSTS
  - name: internal
    cidrs: ["10.0.0.0/8"]
EOF
cat >"$SL_TMP/ports.yaml" <<EOF
default: deny
request_access: "$CASE_REQ"
rules:
  - name: npm-web
    hosts: ["registry.npmjs.org"]
    ports: [80]
    protocols: [tcp]
  - name: pypi-alt
    hosts: ["pypi.org"]
    ports: [8080]
    protocols: [tcp]
  - name: pypi-web
    hosts: ["pypi.org"]
    ports: [80]
    protocols: [tcp]
EOF
cat >"$SL_TMP/big.yaml" <<'EOF'
default: deny
rules:
  - name: big
    hosts: ["big.example"]
EOF
# Port 53 of a test host allowed by a CIDR rule: DNS there is still the run's resolver's.
cat >"$SL_TMP/cidr53.yaml" <<'EOF'
default: deny
rules:
  - name: npm
    hosts: ["registry.npmjs.org"]
  - name: ns-host
    cidrs: ["198.51.100.20/32", "2001:db8::20/128"]
    ports: [53]
EOF

# ---------------------------------------------------------------------------------------------
# Helpers

# A workload-side DNS client, one process for many queries (a Python start is most of a query's
# cost under emulation): dnsq.py DIR SPEC…. Each SPEC is "LABEL MODE ARGS…"; each gives one line,
# "LABEL RESULT", and DIR/LABEL.span, its start and end as batch_add writes them (µs since the
# epoch, as the log's ts; so batch_log LABEL reads its own lines):
#   LABEL udp|tcp SERVER NAME: an A query with the client's own sockets: "udp" sends with sendto
#     on an unconnected socket and reports recvfrom's source, "tcp" connects and reports
#     getpeername. RESULT: "peer ADDR PORT rcode N answers N".
#   LABEL gai NAME: getaddrinfo the way most programs resolve. RESULT: the addresses, or
#     "gaierror" and the EAI_ error's name.
# A query that fails gives "error: WHY" and the next one runs.
cat >"$SL_TMP/dnsq.py" <<'EOF'
import os, socket, struct, sys, time

def sock_query(mode, server, name):
    qid = 0x5a17
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", 1, 1)
    fam = socket.AF_INET6 if ":" in server else socket.AF_INET
    if mode == "udp":
        with socket.socket(fam, socket.SOCK_DGRAM) as s:
            s.settimeout(2)
            s.sendto(q, (server, 53))
            data, peer = s.recvfrom(4096)
    else:
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect((server, 53))
            peer = s.getpeername()
            s.sendall(struct.pack(">H", len(q)) + q)
            data = b""
            while len(data) < 2 or len(data) < 2 + struct.unpack(">H", data[:2])[0]:
                chunk = s.recv(4096)
                if not chunk:
                    raise OSError("connection closed early")
                data += chunk
            data = data[2:]
    rid, flags, _, an = struct.unpack(">HHHH", data[:8])
    if rid != qid:
        raise OSError(f"answer id {rid:#x}, asked {qid:#x}")
    return f"peer {peer[0]} {peer[1]} rcode {flags & 0xf} answers {an}"

def gai(name):
    try:
        res = socket.getaddrinfo(name, 80, proto=socket.IPPROTO_TCP)
        return " ".join(sorted({a[4][0] for a in res}))
    except socket.gaierror as e:
        names = {getattr(socket, n): n for n in dir(socket) if n.startswith("EAI_")}
        return f"gaierror {names.get(e.errno, e.errno)}"

span_dir = sys.argv[1]
for spec in sys.argv[2:]:
    label, mode, *args = spec.split()
    start = time.time_ns() // 1000
    try:
        res = gai(*args) if mode == "gai" else sock_query(mode, *args)
    except Exception as e:
        res = f"error: {e!r}"
    end = time.time_ns() // 1000
    with open(os.path.join(span_dir, label + ".span"), "w") as f:
        f.write(f"{start} {end}\n")
    print(label, res, flush=True)
EOF
# timed CMD…: run CMD, then "timed: rc=N ms=N" on stderr.
cat >"$SL_TMP/timed.sh" <<'EOF'
#!/bin/bash
s=${EPOCHREALTIME/./}
"$@"
rc=$?
e=${EPOCHREALTIME/./}
echo "timed: rc=$rc ms=$(((e - s) / 1000))" >&2
exit $rc
EOF
chmod 0755 "$SL_TMP/timed.sh"

# The server glibc asks, from /etc/resolv.conf (127.0.0.1 when it names none).
RESOLV_NS=$(awk '$1 == "nameserver" { print $2; exit }' /etc/resolv.conf 2>/dev/null)
RESOLV_NS=${RESOLV_NS%%%*}
[[ -n $RESOLV_NS ]] || RESOLV_NS=127.0.0.1

# dns_run POLICY -- CMD…: one run of CMD in the run netns, with its resolver asking the
# upstream. Sets what sluice_run sets, and CASE_LOG; moves every mark.
dns_run() {
	local policy=$1 id
	shift
	[[ ${1-} == -- ]] && shift
	id=$(sluice_next_run_id)
	CASE_LOG=$SL_TMP/$id.log
	SL_EXTRA_MARK=$(sl_lines "$SL_EXTRA_LOG")
	upstream_mark
	sluice_run "$policy" "$CASE_LOG" --netns "/run/netns/$SL_NS_RUN" \
		--upstream "127.0.0.1:$SL_DNS_PORT" -- "$@"
}

# Batches: several cases in one run. Each run loads sluice's programs, most of this file's CPU
# (minutes of it under emulation), so the cases that can tell their own lines apart share one.
# The cases run one after the other; a case's log lines are the run's whose ts falls between its
# command's start and end (the workload's pids are its own namespace's, not the log's), its
# upstream queries the upstream log's lines between its start and end (dnsmasq logs a query as
# it takes it, before it answers). Its stdout is in $SL_TMP/LABEL.out, its exit status in
# $SL_TMP/LABEL.rc; stderr is the run's. What a check reads from the whole run decides who may
# share it: an allowed case's batch has no denial on stderr; a name that a case says the upstream
# never saw, or that must be named on stderr, is no other case's (sluice does not name a denied
# name again within 2 s of naming it unless another was named in between: a case asking it right
# after another would not be named).
#   batch_new NAME; batch_add LABEL CMD…; …; batch_run POLICY; the cases' checks; batch_done
batch_new() {
	BATCH_NAME=$1
	BATCH_SCRIPT=
}
# A case's span file: "START_US END_US UPSTREAM_LINE_START UPSTREAM_LINE_END". One count of the
# upstream log between cases: a case ends where the next one starts.
batch_add() {
	local label=$1 cmd out rc span up
	shift
	printf -v cmd '%q ' "$@"
	printf -v out %q "$SL_TMP/$label.out"
	printf -v rc %q "$SL_TMP/$label.rc"
	printf -v span %q "$SL_TMP/$label.span"
	printf -v up %q "$SL_DNS_LOG"
	[[ -n $BATCH_SCRIPT ]] || BATCH_SCRIPT="u=\$(wc -l <$up)"$'\n'
	BATCH_SCRIPT+="s=\${EPOCHREALTIME/./}; (exec $cmd>$out); echo \$? >$rc; "
	BATCH_SCRIPT+="e=\${EPOCHREALTIME/./}; v=\$(wc -l <$up); "
	BATCH_SCRIPT+="echo \"\$s \$e \$u \$v\" >$span; u=\$v"$'\n'
}
batch_run() { dns_run "$1" -- bash -c "$BATCH_SCRIPT"; }
# batch_upstream LABEL: the upstream log's lines of the case, in $SL_TMP/LABEL.upstream
# (printed): SL_DNS_LOG=$(batch_upstream LABEL) SL_DNS_MARK=0 upstream_count … counts its queries.
batch_upstream() {
	local _s _e from to
	read -r _s _e from to <"$SL_TMP/$1.span" 2>/dev/null
	awk -v a="${from:-0}" -v b="${to:-0}" 'NR > a && NR <= b' "$SL_DNS_LOG" \
		>"$SL_TMP/$1.upstream"
	echo "$SL_TMP/$1.upstream"
}
# batch_log LABEL: the case's lines of the run's log, in $SL_TMP/LABEL.log (printed).
batch_log() {
	local from to
	read -r from to _ <"$SL_TMP/$1.span" 2>/dev/null
	awk -v a="${from:-0}" -v b="${to:-0}" '
		match($0, /[{,]"ts":[0-9]+[,}]/) {
			t = substr($0, RSTART + 6, RLENGTH - 7) + 0
			if (t >= a && t <= b)
				print
		}' "$CASE_LOG" >"$SL_TMP/$1.log"
	echo "$SL_TMP/$1.log"
}
# batch_done: what the whole run must show: sluice exits 0 (the batch's script does; a case's
# status is its own), no test host got DNS, and nothing is left.
batch_done() {
	assert_rc "$BATCH_NAME: sluice exits 0" 0
	assert_no_outside_dns "$BATCH_NAME: no query of the run reached an outside resolver"
	assert_run_clean "$BATCH_NAME: nothing left (cgroup, pins, links, resolver sockets)"
}

# Every run here has ended before its checks start and nothing sends until the next one: the
# first check that nothing arrived waits the settle time, the others of the run read the same
# sinks (lib.sh's sink_settle, once a run).
SETTLED_RUN=
sink_settle() {
	[[ $SETTLED_RUN == "$SL_RUN_ID" ]] && return 0
	sleep "$SL_SETTLE"
	SETTLED_RUN=$SL_RUN_ID
}

extra_sink_count() { sl_count_fields "$SL_EXTRA_LOG" "$SL_EXTRA_MARK" "$1"; }

# Everything any test host received on port 53 since the marks.
outside_dns_lines() {
	awk -v s="$SL_SINK_MARK" 'NR > s && $3 == 53 { print "inet: " $0 }' "$SL_INET_LOG"
	awk -v s="$SL_RTR_SINK_MARK" 'NR > s && $3 == 53 { print "rtr: " $0 }' "$SL_RTR_LOG"
	awk -v s="$SL_EXTRA_MARK" 'NR > s && $3 == 53 { print "inet-extra: " $0 }' "$SL_EXTRA_LOG"
}

# assert_no_outside_dns NAME: after the settle time, no test host received anything on port 53.
assert_no_outside_dns() {
	local got
	sink_settle
	got=$(outside_dns_lines)
	if [[ -z $got ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected no DNS traffic (port 53) at any test host; got:"$'\n'"$got"
		sluice_diag "$CASE_LOG"
	fi
}

# assert_extra_none NAME PATTERN: the extra sink (TCP 53, UDP 80) did not log PATTERN.
assert_extra_none() {
	local n
	sink_settle
	n=$(extra_sink_count "$2")
	if [[ $n -eq 0 ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected nothing to arrive; the extra sink logged \"$2\" x$n"
		sluice_diag "$CASE_LOG"
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

# assert_dig NAME FILE STATUS ANSWERS [SERVER VIA]: dig's output in FILE has STATUS and exactly
# the answer records ANSWERS (as dig_answers prints them, "" for none), and came from SERVER over
# VIA (UDP or TCP) as dig saw it.
assert_dig() {
	local name=$1 f=$2 want_s=$3 want_a=$4 server=${5:-} via=${6:-} got_s got_a got_srv
	local bad=
	got_s=$(dig_status "$f")
	got_a=$(dig_answers "$f")
	got_srv=$(dig_server "$f")
	[[ $got_s == "$want_s" ]] || bad+="status \"${got_s:-none: no answer}\" instead of $want_s; "
	[[ $got_a == "$want_a" ]] || bad+="answers \"$got_a\" instead of \"$want_a\"; "
	if [[ -n $server && $got_srv != "$server#53($server) ($via)" ]]; then
		bad+="server line \"$got_srv\" instead of \"$server#53($server) ($via)\"; "
	fi
	if [[ -z $bad ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected dig to get $want_s with answers \"$want_a\"; got: $bad"
		tap_diag_file "$f" 30
		sluice_diag "$CASE_LOG"
	fi
}

# assert_prompt NAME MS MAX: an answer that must come at once did.
assert_prompt() {
	if [[ $2 =~ ^[0-9]+$ && $2 -le $3 ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected an answer within $3 ms, got \"$2\" ms"
	fi
}

# assert_no_stderr NAME REGEX: no line of sluice's stderr matches.
assert_no_stderr() {
	local got
	got=$(grep -E -- "$2" "$SL_ERR")
	if [[ -z $got ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected no stderr line matching /$2/; got:"$'\n'"$got"
	fi
}

DNS_ANSWERS_RE='[{,]"answers":\[(("[^"\\]*",?)*)\][,}]'
DNS_WHY_RE='[{,]"why":"([^"\\]*)"[,}]'
# log_dns_answers LOG key=value…: the answers of the first dns line matching the pairs, sorted
# and space-separated; "none" when no line matches, "no list" when its answers are not a list of
# strings. (Read here, not by a Python start per case.)
log_dns_answers() {
	local log=$1 line a
	local -a list=()
	shift
	line=$(log_lines "$log" type=dns "$@" | head -n 1)
	if [[ -z $line ]]; then
		echo none
		return
	fi
	if [[ ! $line =~ $DNS_ANSWERS_RE ]]; then
		echo "no list"
		return
	fi
	a=${BASH_REMATCH[1]//\"/}
	IFS=, read -r -a list <<<"$a"
	[[ ${#list[@]} -gt 0 ]] && printf '%s\n' "${list[@]}" | sort | paste -sd ' ' -
}
# log_dns_why LOG key=value…: the why of the first dns line matching the pairs (a string
# without escapes, as sluice writes it; "" when there is none).
log_dns_why() {
	local line
	line=$(log_lines "$@" | head -n 1)
	[[ $line =~ $DNS_WHY_RE ]] && echo "${BASH_REMATCH[1]}"
}
# log_dns_json LOG FIELD key=value…: FIELD of the first dns line matching the pairs, as compact
# JSON in the log's order; "none" when no line matches.
log_dns_json() {
	local log=$1 field=$2 line
	shift 2
	line=$(log_lines "$log" type=dns "$@" | head -n 1)
	[[ -n $line ]] || {
		echo none
		return
	}
	python3 -c '
import json, sys
print(json.dumps(json.loads(sys.argv[1]).get(sys.argv[2]), separators=(",", ":")))' \
		"$line" "$field"
}

# assert_upstream NAME HOST TYPE WANT: the upstream logged queries for HOST of TYPE ("" any)
# since the mark: "none" or "some". (Every check here runs after its run ended: dnsmasq logged
# each query before it answered it.)
assert_upstream() {
	local name=$1 host=$2 type=$3 want=$4 n seen
	n=$(upstream_count "$host" "$type")
	if [[ ($want == some && $n -ge 1) || ($want == none && $n -eq 0) ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected $want upstream queries for $host ${type:-(any type)}, got $n"
		mapfile -t seen < <(upstream_new_lines | tail -n 10)
		[[ ${#seen[@]} -gt 0 ]] && tap_comment "${seen[@]/#/upstream: }"
	fi
	return 0
}

# assert_probe_lines NAME WANT…: the run's stdout is these probe results in this order ("ok" or
# "err ENAME"; denials within SL_PROMPT_MS).
assert_probe_lines() {
	local name=$1 i=0 line bad=
	shift
	local -a exp=("$@") seen=()
	mapfile -t seen <"$SL_OUT"
	[[ ${#seen[@]} -eq ${#exp[@]} ]] || bad+="${#seen[@]} line(s) instead of ${#exp[@]}; "
	for ((i = 0; i < ${#exp[@]}; i++)); do
		line=${seen[i]-}
		if [[ ${exp[i]} == ok ]]; then
			[[ $line == ok ]] || bad+="probe $((i + 1)): \"$line\" instead of ok; "
		elif [[ $line =~ ^(err [A-Z0-9]+)\ ([0-9]+)$ ]]; then
			[[ ${BASH_REMATCH[1]} == "${exp[i]}" ]] ||
				bad+="probe $((i + 1)): \"$line\" instead of \"${exp[i]}\"; "
			[[ ${BASH_REMATCH[2]} -le $SL_PROMPT_MS ]] ||
				bad+="probe $((i + 1)): took ${BASH_REMATCH[2]} ms; "
		else
			bad+="probe $((i + 1)): \"$line\" instead of \"${exp[i]}\"; "
		fi
	done
	if [[ -z $bad ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected probe results: ${exp[*]}; got: $bad"
		sluice_diag "$CASE_LOG"
	fi
}

# "rule_3" in a table is the seed's unnamed third rule, "rule 3".
rule_name() { [[ $1 =~ ^rule_([0-9]+)$ ]] && echo "rule ${BASH_REMATCH[1]}" || echo "$1"; }
family_of() { [[ $1 == *:* ]] && echo ipv6 || echo ipv4; }
# The transports a dig over VIA uses, in order.
via_protos() {
	case $1 in
	udp) echo udp ;;
	tcp) echo tcp ;;
	noedns) echo udp tcp ;;
	esac
}

# A dig case is a row: "LABEL VIA SERVER NAME TYPE STATUS ANSWERS RULE". One dig, fully checked.
# VIA: udp, tcp, or noedns (UDP without EDNS, so a large answer comes back truncated and dig
# retries over TCP). ANSWERS: dig's answer records as "TYPE/DATA,TYPE/DATA" in dig_answers order,
# or "-". RULE: the rule the name matches, or "default" for an unlisted name.
# dig_batch_add ROW…: each row's dig, a case of the current batch.
dig_batch_add() {
	local c label via server name type status answers rule
	local -a opts
	for c in "$@"; do
		read -r label via server name type status answers rule <<<"$c"
		opts=()
		case $via in
		tcp) opts=(+tcp) ;;
		noedns) opts=(+noedns) ;;
		esac
		batch_add "$label" "${DIG[@]}" "${opts[@]}" "@$server" "$name" "$type"
	done
}

# dig_check ROW: the checks of a dig case after its batch ran.
dig_check() {
	local label via server name type status answers rule
	read -r label via server name type status answers rule <<<"$1"
	local f=$SL_TMP/$label.out decision want_addrs got_addrs t host=${name,,} log
	rule=$(rule_name "$rule")
	log=$(batch_log "$label")
	[[ $answers == - ]] && answers=
	answers=${answers//,/ }
	answers=${answers//\// }
	local shown_via=UDP
	[[ $via != udp ]] && shown_via=TCP
	assert_dig "$label: dig @$server $name $type over $via gets $status ${answers:+($answers)}" \
		"$f" "$status" "$answers" "$server" "$shown_via"
	if [[ $status == NXDOMAIN ]]; then
		assert_prompt "$label: the NXDOMAIN came at once" "$(dig_query_ms "$f")" \
			"$SL_PROMPT_MS"
	fi

	# The redirect: one line per connection dig made (noedns: UDP, then TCP).
	for t in $(via_protos "$via"); do
		assert_log "$label: log has the $t redirect to the run's resolver (dst $server)" \
			"$log" 1 type=decision "run_id=$SL_RUN_ID" decision=allow rule=dns \
			reason=dns_redirect "dst=$server" port=53 "proto=$t" \
			"family=$(family_of "$server")"
	done

	decision=allow
	[[ $status == NXDOMAIN ]] && decision=deny
	[[ $status == SERVFAIL ]] && decision=refused
	for t in $(via_protos "$via"); do
		assert_log "$label: log has the dns line ($name $type $decision, rule $rule, $status, $t)" \
			"$log" 1 type=dns "run_id=$SL_RUN_ID" task=selftest "host=$host" \
			"qtype=$type" "decision=$decision" "rule=$rule" "rcode=$status" "transport=$t"
	done
	if [[ $decision == allow ]]; then
		# The addresses the client got are the ones logged (and learned).
		want_addrs=$(tr ' ' '\n' <<<"${answers}" | paste - - 2>/dev/null |
			awk -v t="$type" '$1 == t { print $2 }' | sort | paste -sd ' ' -)
		got_addrs=$(log_dns_answers "$log" "host=$host" "qtype=$type")
		tap_is "$label: the dns line lists the answered addresses" "$got_addrs" "$want_addrs"
	else
		local deny="egress denied: $host (rule: default) run_id=$SL_RUN_ID task=selftest"
		assert_stderr "$label: stderr names the denied name" "$deny"
	fi

	# (Never: in the whole run. Asked: in the case's own queries, which no other case's mask.)
	if [[ $status == NXDOMAIN || ($type != A && $type != AAAA) ]]; then
		assert_upstream "$label: the upstream never saw $host" "$host" "" none
	else
		SL_DNS_LOG=$(batch_upstream "$label") SL_DNS_MARK=0 \
			assert_upstream "$label: the upstream was asked $host $type" "$host" "$type" some
	fi
}

# batch_no_denial: stderr has no denial (a batch of allowed cases).
batch_no_denial() { assert_no_stderr "$BATCH_NAME: stderr has no denial" '^egress (would be )?denied'; }

# dig_batch NAME POLICY ROW…: the rows as one batch, fully checked.
dig_batch() {
	local name=$1 policy=$2 c status allowed=1
	shift 2
	batch_new "$name"
	dig_batch_add "$@"
	batch_run "$policy"
	for c in "$@"; do
		dig_check "$c"
		read -r _ _ _ _ _ status _ <<<"$c"
		[[ $status == NOERROR ]] || allowed=0
	done
	[[ $allowed -eq 0 ]] || batch_no_denial
	batch_done
}

# Controls: without sluice, a query from the run netns to an outside resolver reaches the test
# host, over UDP and TCP (so the checks below would see a leak).
sink_mark
SL_EXTRA_MARK=$(sl_lines "$SL_EXTRA_LOG")
# (The sinks do not answer DNS: each dig runs into its timeout. The first IPv6 connect through
# the fresh topology may need a SYN retransmission: 3 s.)
# Both at once: their timeouts overlap.
in_run dig +time=3 +tries=1 @203.0.113.53 registry.npmjs.org >/dev/null 2>&1 &
ctl_udp=$!
in_run dig +tcp +time=3 +tries=1 @2001:db8::53 registry.npmjs.org >/dev/null 2>&1 &
wait "$ctl_udp" "$!"
control_seen() {
	echo "udp $(sink_count 'udp 203.0.113.53 53') tcp $(extra_sink_count 'tcp-accept 2001:db8::53 53')"
}
wait_until 3000 eval '[[ $(control_seen) == "udp 1 tcp 1" ]]'
tap_is "control: without sluice, DNS to 203.0.113.53 (UDP) and [2001:db8::53] (TCP) arrives" \
	"$(control_seen)" "udp 1 tcp 1"
CONTROL_SINK_MARK=$(sl_lines "$SL_INET_LOG")
CONTROL_RTR_MARK=$(sl_lines "$SL_RTR_LOG")
CONTROL_EXTRA_MARK=$(sl_lines "$SL_EXTRA_LOG")

# ---------------------------------------------------------------------------------------------
# 1, 2, 11. P7: DNS to outside resolvers, UDP and TCP, v4 and v6, listed and unlisted names.
# (Batched by what the whole run must show; see batch_new.)

# label              via    server         name                      type status   answers             rule
seed_listed=(
	"P7-udp-v4        udp    203.0.113.53   registry.npmjs.org        A    NOERROR  A/198.51.100.10     rule_1"
	"P7-tcp-v4        tcp    203.0.113.53   registry.npmjs.org        AAAA NOERROR  AAAA/2001:db8::10   rule_1"
	"P7-udp-v6        udp    2001:db8::53   pypi.org                  AAAA NOERROR  AAAA/2001:db8::10   rule_1"
	"P7-tcp-v6        tcp    2001:db8::53   git.internal.acme.com     A    NOERROR  A/198.51.100.10     rule_2"
	"P7-udp-testhost  udp    198.51.100.20  broker.dev.acme.internal  A    NOERROR  A/198.51.100.10     rule_3"
	"P7-udp-testhost6 udp    2001:db8::20   artifacts.acme.internal   AAAA NOERROR  AAAA/2001:db8::10   rule_3"
	"P7-udp-router    udp    10.200.1.1     ghcr.io                   A    NOERROR  A/198.51.100.10     rule_4"
	"P7-udp-local     udp    127.0.0.53     registry.npmjs.org        A    NOERROR  A/198.51.100.10     rule_1"
	"P7-tcp-loopback6 tcp    ::1            registry.npmjs.org        A    NOERROR  A/198.51.100.10     rule_1"
	"case-insensitive udp    203.0.113.53   Registry.NPMJS.org        A    NOERROR  A/198.51.100.10     rule_1"
	# 5. CNAME chains (the chain is the asked name's; its target alone is not listed).
	"cname-one-hop    udp    203.0.113.53   files.pythonhosted.org    A    NOERROR  A/198.51.100.10,CNAME/cdn.fastly.example. rule_1"
	"cname-two-hops   tcp    203.0.113.53   pkg-containers.ghcr.io    AAAA NOERROR  AAAA/2001:db8::10,CNAME/cdn2.fastly.example.,CNAME/edge.ghcr.example. rule_4"
)
# 3. With them, curl by name through glibc and /etc/resolv.conf (whatever server it names:
# redirected), v4 and v6. A connect's decision names the name that first brought its address
# into the run: each curl comes before any other name of its address.
batch_new "seed, listed names"
batch_add curl-listed curl -sS --noproxy '*' --max-time 5 http://registry.npmjs.org/
batch_add curl-listed-v6 curl -6 -sS --noproxy '*' --max-time 5 http://registry.npmjs.org/
dig_batch_add "${seed_listed[@]}"
batch_run "$SEED"
for c in "${seed_listed[@]}"; do
	dig_check "$c"
	read -r label _ _ name _ <<<"$c"
	case $label in
	cname-one-hop) want='["cdn.fastly.example"]' ;;
	cname-two-hops) want='["edge.ghcr.example","cdn2.fastly.example"]' ;;
	*) continue ;;
	esac
	tap_is "$label: the dns line has the chain in order" \
		"$(log_dns_json "$SL_TMP/$label.log" cname "host=$name")" "$want"
done
log=$(batch_log curl-listed)
tap_is "curl-listed: curl exits 0" "$(cat "$SL_TMP/curl-listed.rc")" 0
tap_is "curl-listed: http://registry.npmjs.org/ answers through the run" \
	"$(cat "$SL_TMP/curl-listed.out")" ok
assert_sink_saw "curl-listed: the test host 198.51.100.10 received the request" \
	"tcp-accept 198.51.100.10 80"
assert_log "curl-listed: the allow line names the host" "$log" +1 type=decision \
	"run_id=$SL_RUN_ID" decision=allow dst=198.51.100.10 port=80 proto=tcp comm=curl \
	host=registry.npmjs.org "rule=rule 1"
assert_log "curl-listed: glibc's query to $RESOLV_NS was redirected" "$log" +1 \
	type=decision "run_id=$SL_RUN_ID" rule=dns reason=dns_redirect "dst=$RESOLV_NS" port=53
assert_log "curl-listed: log has the A answer" "$log" +1 type=dns host=registry.npmjs.org \
	qtype=A decision=allow 'answers:raw=["198.51.100.10"]'
tap_is "curl-listed-v6: curl exits 0" "$(cat "$SL_TMP/curl-listed-v6.rc")" 0
assert_sink_saw "curl-listed-v6: the test host 2001:db8::10 received the request" \
	"tcp-accept 2001:db8::10 80"
assert_log "curl-listed-v6: the allow line names the host" "$(batch_log curl-listed-v6)" +1 \
	type=decision "run_id=$SL_RUN_ID" decision=allow dst=2001:db8::10 port=80 proto=tcp \
	family=ipv6 host=registry.npmjs.org
batch_no_denial
batch_done

# Unlisted names: each batch asks a denied name once (see batch_new: the stderr line must be its
# case's).
# 1. Its hint: the seed has no request_access, so no hint (the policy with one: below).
dig_batch "seed, unlisted names" "$SEED" \
	"P7-udp-unlisted  udp    203.0.113.53   static.rust-lang.org      A    NXDOMAIN -                   default" \
	"P7-tcp-unlisted  tcp    203.0.113.53   transfer.sh               A    NXDOMAIN -                   default" \
	"cname-target     udp    203.0.113.53   cdn.fastly.example        A    NXDOMAIN -                   default"
assert_no_stderr "hint-seed: no request-access hint (the seed has no request_access)" \
	'^to request access'
dig_batch "seed, unlisted names over v6" "$SEED" \
	"P7-udp-unlisted6 udp    2001:db8::53   static.rust-lang.org      AAAA NXDOMAIN -                   default" \
	"P7-tcp-unlisted6 tcp    2001:db8::53   transfer.sh               AAAA NXDOMAIN -                   default"

# Port 53 of a test host a cidrs rule allows is still the run's resolver's.
dig_batch "port 53 allowed by cidrs" "$SL_TMP/cidr53.yaml" \
	"P7-udp-allowed53 udp    198.51.100.20  registry.npmjs.org        A    NOERROR  A/198.51.100.10     npm" \
	"P7-tcp-allowed53 tcp    2001:db8::20   registry.npmjs.org        A    NOERROR  A/198.51.100.10     npm"

# 6. Wildcards: strictly below the suffix; a connect through a wildcard name: the decision
# names the asked name.
batch_new "wildcard, listed names"
batch_add curl-wild curl -4 -sS --noproxy '*' --max-time 5 http://a.b.githubusercontent.com/
dig_batch_add \
	"wild-two-labels  udp    203.0.113.53   a.b.githubusercontent.com A    NOERROR  A/198.51.100.10     gh-content" \
	"wild-aaaa        tcp    2001:db8::53   raw.githubusercontent.com AAAA NOERROR  AAAA/2001:db8::10   gh-content"
batch_run "$SL_TMP/wild.yaml"
dig_check "wild-two-labels  udp    203.0.113.53   a.b.githubusercontent.com A    NOERROR  A/198.51.100.10     gh-content"
dig_check "wild-aaaa        tcp    2001:db8::53   raw.githubusercontent.com AAAA NOERROR  AAAA/2001:db8::10   gh-content"
curl_name_check() {
	local label=$1 name=$2 rule=$3
	tap_is "$label: answers through the run" "$(cat "$SL_TMP/$label.out")" ok
	assert_sink_saw "$label: the test host received the request" "tcp-accept 198.51.100.10 80"
	assert_log "$label: the allow line names $name (rule $rule)" "$(batch_log "$label")" 1 \
		type=decision "run_id=$SL_RUN_ID" decision=allow dst=198.51.100.10 port=80 proto=tcp \
		"host=$name" "rule=$rule"
}
curl_name_check curl-wild a.b.githubusercontent.com gh-content
batch_no_denial
batch_done
dig_batch "wildcard, unlisted names" "$SL_TMP/wild.yaml" \
	"wild-apex        udp    203.0.113.53   githubusercontent.com     A    NXDOMAIN -                   default" \
	"wild-no-dot      udp    203.0.113.53   evilgithubusercontent.com A    NXDOMAIN -                   default" \
	"wild-as-prefix   udp    203.0.113.53   githubusercontent.com.evil.example A NXDOMAIN -            default"

# 10. Other types of a listed name: no data, and the upstream is not asked. 5. A connect through
# a CNAME'd name: the decision names the asked name. (And a fifth rule's name: sluice keeps four
# rules an address was learned for, the other batch's names have four rules for 198.51.100.10.)
batch_new "seed, other types"
types=(
	"P7-tcp-router6   tcp    fd10:200:1::1  api.github.com            A    NOERROR  A/198.51.100.10     rule_5"
	"type-https       udp    203.0.113.53   registry.npmjs.org        HTTPS NOERROR -                   rule_1"
	"type-svcb        udp    203.0.113.53   registry.npmjs.org        SVCB NOERROR  -                   rule_1"
	"type-txt         tcp    203.0.113.53   registry.npmjs.org        TXT  NOERROR  -                   rule_1"
)
batch_add curl-cname curl -4 -sS --noproxy '*' --max-time 5 http://files.pythonhosted.org/
dig_batch_add "${types[@]}"
batch_run "$SEED"
for c in "${types[@]}"; do
	dig_check "$c"
done
curl_name_check curl-cname files.pythonhosted.org "rule 1"
batch_no_denial
batch_done

# Truncation: the upstream truncates big.example over UDP (the resolver retries over TCP); a
# client without EDNS gets a truncated answer and retries over TCP itself.
big=$(for i in $(seq 101 132); do echo "A/198.51.100.$i"; done | sort | paste -sd , -)
dig_batch "a large answer" "$SL_TMP/big.yaml" \
	"truncated noedns 203.0.113.53 big.example A NOERROR $big big" \
	"big-edns  udp    203.0.113.53 big.example A NOERROR $big big"
if grep -q '^;; Truncated, retrying in TCP mode' "$SL_TMP/truncated.out"; then
	tap_ok "truncated: the UDP answer to a client without EDNS was truncated"
else
	tap_fail "truncated: the UDP answer to a client without EDNS was truncated" \
		"expected dig to say \";; Truncated, retrying in TCP mode\""
	tap_diag_file "$SL_TMP/truncated.out" 15
fi

# 1. The denial's request-access hint, when the policy has one.
dns_run "$SL_TMP/seed-ra.yaml" -- "${DIG[@]}" @203.0.113.53 static.rust-lang.org
cp "$SL_OUT" "$SL_TMP/hint.dig"
assert_dig "hint: dig gets NXDOMAIN" "$SL_TMP/hint.dig" NXDOMAIN ""
deny="egress denied: static.rust-lang.org (rule: default) run_id=$SL_RUN_ID task=selftest"
assert_request_access "hint: the denial is followed by the request-access hint for the name" \
	"$deny" static.rust-lang.org
assert_run_clean "hint: nothing left"

# P7 with the workload's own sockets: unconnected sendto/recvfrom and a TCP connect; the
# answer's source and the peer are the server asked (v4-mapped from an AF_INET6 socket too).
# 4. getaddrinfo (python) for listed and unlisted names. All from one Python process; and an
# HTTPS query for an unlisted name.
# label               mode server               peer                 name
sock_cases=(
	"sock-udp-v4        udp  203.0.113.53         203.0.113.53         registry.npmjs.org"
	"sock-udp-v6        udp  2001:db8::53         2001:db8::53         pypi.org"
	"sock-udp-mapped    udp  ::ffff:203.0.113.53  ::ffff:203.0.113.53  ghcr.io"
	"sock-tcp-v4        tcp  203.0.113.53         203.0.113.53         api.github.com"
	"sock-tcp-v6        tcp  2001:db8::53         2001:db8::53         ghcr.io"
	"sock-tcp-mapped    tcp  ::ffff:203.0.113.53  ::ffff:203.0.113.53  pypi.org"
	"sock-udp-unlisted  udp  198.51.100.20        198.51.100.20        transfer.sh"
)
# label          name                  want
gai_cases=(
	"gai-listed     pypi.org              198.51.100.10 2001:db8::10"
	"gai-cname      files.pythonhosted.org 198.51.100.10"
	"gai-unlisted   transfer.sh           gaierror EAI_NONAME"
)
specs=()
for c in "${sock_cases[@]}"; do
	read -r label mode server _ name <<<"$c"
	specs+=("$label $mode $server $name")
done
for c in "${gai_cases[@]}"; do
	read -r label name _ <<<"$c"
	specs+=("$label gai $name")
done
https_unl="type-https-unl   udp    203.0.113.53   static.rust-lang.org      HTTPS NXDOMAIN -                  default"
batch_new "python clients"
batch_add dnsq python3 "$SL_TMP/dnsq.py" "$SL_TMP" "${specs[@]}"
dig_batch_add "$https_unl"
batch_run "$SEED"
declare -A dnsq_got=()
while read -r label res; do
	dnsq_got[$label]=$res
done <"$SL_TMP/dnsq.out"
for c in "${sock_cases[@]}"; do
	read -r label mode server peer name <<<"$c"
	want="peer $peer 53 rcode 0 answers 1"
	[[ $name == transfer.sh ]] && want="peer $peer 53 rcode 3 answers 0"
	got=${dnsq_got[$label]-}
	if [[ $got == "$want" ]]; then
		tap_ok "$label: $mode to $server:53 for $name: $want"
	else
		tap_fail "$label: $mode to $server:53 for $name: $want" "expected \"$want\", got \"$got\""
		sluice_diag "$CASE_LOG"
	fi
done
for c in "${gai_cases[@]}"; do
	read -r label name want <<<"$c"
	tap_is "$label: getaddrinfo($name) gives: $want" "${dnsq_got[$label]-}" "$want"
	# (its own lines: the socket cases ask the same names)
	log=$(batch_log "$label")
	if [[ $want == gaierror* ]]; then
		assert_log "$label: log has deny lines for $name" "$log" +1 type=dns \
			"host=$name" decision=deny rcode=NXDOMAIN
		assert_upstream "$label: the upstream never saw $name" "$name" "" none
	else
		assert_log "$label: log has the allowed A query for $name" "$log" +1 type=dns \
			"host=$name" qtype=A decision=allow rcode=NOERROR
	fi
done
dig_check "$https_unl"
batch_done

# curl by name, unlisted: it fails at once, and sluice exits with its status.
dns_run "$SEED" -- "$SL_TMP/timed.sh" curl -sS --noproxy '*' --max-time 5 \
	http://static.rust-lang.org/
assert_rc "curl-unlisted: sluice exits with curl's status 6 (could not resolve)" 6
if grep -qF 'Could not resolve host: static.rust-lang.org' "$SL_ERR"; then
	tap_ok "curl-unlisted: curl says it could not resolve static.rust-lang.org"
else
	tap_fail "curl-unlisted: curl says it could not resolve static.rust-lang.org" \
		"expected \"Could not resolve host: static.rust-lang.org\" on stderr"
	sluice_diag "$CASE_LOG"
fi
ms=$(sed -n 's/^timed: rc=[0-9]* ms=\([0-9]*\)$/\1/p' "$SL_ERR")
# at once: within twice a prompt answer's time (curl's own start-up, scaled with SL_SLOW: 3.2 s
# under emulation), well short of the resolver's 5 s timeout it would otherwise have waited for
assert_prompt "curl-unlisted: curl failed at once" "$ms" $((2 * SL_PROMPT_MS))
assert_sink_none "curl-unlisted: nothing arrives at 198.51.100.20" \
	"tcp-accept 198.51.100.20 80" "tcp-accept 2001:db8::20 80"
assert_log "curl-unlisted: log has the deny line for the A query" "$CASE_LOG" 1 type=dns \
	host=static.rust-lang.org qtype=A decision=deny rule=default rcode=NXDOMAIN
assert_stderr "curl-unlisted: stderr names the denied name" \
	"egress denied: static.rust-lang.org (rule: default) run_id=$SL_RUN_ID task=selftest"
assert_upstream "curl-unlisted: the upstream never saw static.rust-lang.org" \
	static.rust-lang.org "" none
assert_no_outside_dns "curl-unlisted: nothing reached an outside resolver"
assert_run_clean "curl-unlisted: nothing left"

# ---------------------------------------------------------------------------------------------
# 7. P8: answers into the blackhole or private space are refused, and not learned: after the
# refusal, a connect to the address fails.

# label            name                      type addr                    kind      probe
# (kind/V4: the address embeds V4, and why says so)
rebind_refused=(
	"P8-imds          meta.rebind.example       A    169.254.169.254         blackhole 169.254.169.254"
	"P8-rfc1918       private.rebind.example    A    10.1.2.3                private   10.1.2.3"
	"P8-loopback      loop.rebind.example       A    127.0.0.1               private   -"
	"P8-mixed         mixed.rebind.example      A    10.1.2.3                private   198.51.100.10"
	"P8-via-cname     via-cname.rebind.example  A    169.254.169.254         blackhole -"
	"P8-v4-mapped     mapped.rebind.example     AAAA ::ffff:169.254.169.254  blackhole/169.254.169.254 -"
	"P8-imds-v6       imds6.rebind.example      AAAA fd00:ec2::254           blackhole fd00:ec2::254"
	"P8-ula           ula.rebind.example        AAAA fd12:3456::1            private   -"
	"P8-loopback6     loop6.rebind.example      AAAA ::1                     private   -"
	"P8-6to4          sixto4.rebind.example     AAAA 2002:a9fe:a9fe::1       blackhole/169.254.169.254 -"
	"P8-teredo        teredo.rebind.example     AAAA 2001:0:4136:e378:8000:63bf:5601:5601 blackhole/169.254.169.254 -"
	"P8-nat64-local   nat64.rebind.example      AAAA 64:ff9b:1::a9fe:a9fe    blackhole/169.254.169.254 -"
	"P8-6to4-rfc1918  sixto4-private.rebind.example AAAA 2002:a01:203::1     private/10.1.2.3 -"
)
# A cidrs rule covering private space does not open the blackhole, nor loopback or ULA space.
cidr_refused=(
	"P8-cidr-imds     meta.rebind.example       A    169.254.169.254         blackhole 169.254.169.254"
	"P8-cidr-loopback loop.rebind.example       A    127.0.0.1               private   -"
	"P8-cidr-ula      ula.rebind.example        AAAA fd12:3456::1            private   -"
	"P8-cidr-6to4     sixto4.rebind.example     AAAA 2002:a9fe:a9fe::1       blackhole/169.254.169.254 -"
)
# refused_batch NAME POLICY ROW…: each row's dig, then its probe, in one run, fully checked.
refused_batch() {
	local bname=$1 pol=$2 c label name type addr kind probe embeds why want_why log
	shift 2
	batch_new "$bname"
	for c in "$@"; do
		read -r label name type addr kind probe <<<"$c"
		batch_add "$label" "${DIG[@]}" @203.0.113.53 "$name" "$type"
		[[ $probe == - ]] || batch_add "$label-probe" "$SL_PROBE" tcp "$probe" 80
	done
	batch_run "$pol"
	for c in "$@"; do
		read -r label name type addr kind probe <<<"$c"
		embeds=
		[[ $kind == */* ]] && embeds=", embeds ${kind#*/}" && kind=${kind%%/*}
		log=$(batch_log "$label")
		assert_dig "$label: $name $type (upstream: $addr) gets SERVFAIL, no answers" \
			"$SL_TMP/$label.out" SERVFAIL ""
		assert_log "$label: log has the refused line" "$log" 1 type=dns "run_id=$SL_RUN_ID" \
			"host=$name" "qtype=$type" decision=refused rule=rebind rcode=SERVFAIL \
			'answers:raw=[]'
		why=$(log_dns_why "$log" type=dns "host=$name" decision=refused)
		want_why="upstream answered $addr for $name ($kind address"
		if [[ $why == "$want_why"* && $why == *"$embeds)" &&
			($kind != blackhole || $why == "$want_why$embeds)") ]]; then
			tap_ok "$label: why names the address: \"$why\""
		else
			tap_fail "$label: why names the address" \
				"expected a why starting \"$want_why\", ending \"$embeds)\"$([[ $kind == blackhole ]] && echo " (nothing between)"), got \"$why\""
		fi
		assert_stderr "$label: stderr says the answer was refused" \
			"egress denied: $name (answer refused: $why) run_id=$SL_RUN_ID task=selftest"
		SL_DNS_LOG=$(batch_upstream "$label") SL_DNS_MARK=0 \
			assert_upstream "$label: the upstream was asked (the refusal is the answer's)" \
			"$name" "" some
		if [[ $probe != - ]]; then
			SL_OUT=$SL_TMP/$label-probe.out assert_probe_lines \
				"$label: a connect to $probe:80 after the refusal fails" "err EPERM"
			assert_sink_none "$label: nothing arrives at $probe" "tcp-accept $probe 80"
		fi
	done
	batch_done
}
refused_batch "answers into private space or the blackhole" "$SL_TMP/rebind.yaml" \
	"${rebind_refused[@]}"
refused_batch "the same with a cidrs rule for 10/8" "$SL_TMP/rebind-cidr.yaml" "${cidr_refused[@]}"

# A cidrs rule covering the private answer lets it through (and the connect).
# label            name                    type answers                              probe
cidr_allowed=(
	"P8-cidr-rfc1918 private.rebind.example  A    A/10.1.2.3                           10.1.2.3"
	"P8-cidr-mixed   mixed.rebind.example    A    A/10.1.2.3,A/198.51.100.10           198.51.100.10"
)
batch_new "private answers a cidrs rule allows"
for c in "${cidr_allowed[@]}"; do
	read -r label name type answers probe <<<"$c"
	batch_add "$label" "${DIG[@]}" @203.0.113.53 "$name" "$type"
	batch_add "$label-probe" "$SL_PROBE" tcp "$probe" 80
done
batch_run "$SL_TMP/rebind-cidr.yaml"
for c in "${cidr_allowed[@]}"; do
	read -r label name type answers probe <<<"$c"
	answers=${answers//,/ }
	answers=${answers//\// }
	assert_dig "$label: $name gets $answers" "$SL_TMP/$label.out" NOERROR "$answers"
	assert_log "$label: log has the allow line" "$(batch_log "$label")" 1 type=dns \
		"host=$name" decision=allow rule=rebind rcode=NOERROR
	SL_OUT=$SL_TMP/$label-probe.out assert_probe_lines \
		"$label: a connect to $probe:80 succeeds" ok
	assert_sink_saw "$label: the test host $probe received it" "tcp $probe 80"
done
batch_no_denial
batch_done

# ---------------------------------------------------------------------------------------------
# 8. Learned-only: a listed name's address is allowed only after this run resolved it, per
# family, and only in this run. The seed's rules have no ports: and no protocols:: any port, TCP
# only (a host rule's default: UDP to a name's address, QUIC, is not name-checked; P22).

P=$SL_PROBE
dns_run "$SEED" -- sh -c '
	p=$0
	"$p" tcp 198.51.100.10 80
	"$p" tcp 2001:db8::10 80
	"$@" A >/dev/null
	"$p" tcp 198.51.100.10 80
	"$p" tcp 2001:db8::10 80
	"$@" AAAA >/dev/null
	"$p" tcp 2001:db8::10 80
	"$p" tcp 198.51.100.10 8080
	"$p" udp-sendto 198.51.100.10 9999
	exit 0' "$P" "${DIG[@]}" @203.0.113.53 registry.npmjs.org
assert_probe_lines "learned: denied before the A query, allowed after it; v6 only after AAAA" \
	"err EPERM" "err EPERM" ok "err EPERM" ok ok "err EPERM"
assert_sink_saw "learned: 198.51.100.10:80 received exactly the allowed connect" \
	"tcp 198.51.100.10 80" 1
assert_sink_saw "learned: [2001:db8::10]:80 received exactly the allowed connect" \
	"tcp 2001:db8::10 80" 1
assert_sink_saw "learned: any port (8080) once learned" "tcp 198.51.100.10 8080" 1
assert_sink_none "learned: no UDP (9999) for a host rule without protocols:" \
	"udp 198.51.100.10 9999"
assert_log "learned: the early connect is denied without a host" "$CASE_LOG" 1 type=decision \
	"run_id=$SL_RUN_ID" decision=deny dst=198.51.100.10 port=80 rule=default host:raw=null
assert_log "learned: the later connect is allowed for registry.npmjs.org" "$CASE_LOG" 1 \
	type=decision "run_id=$SL_RUN_ID" decision=allow dst=198.51.100.10 port=80 proto=tcp \
	host=registry.npmjs.org "rule=rule 1"
assert_log "learned: v6 denied twice (before any query, after A only)" "$CASE_LOG" 2 \
	type=decision "run_id=$SL_RUN_ID" decision=deny dst=2001:db8::10 port=80 rule=default
assert_stderr "learned: stderr shows the early denial by address" \
	"egress denied: 198.51.100.10:80/tcp (rule: default) run_id=$SL_RUN_ID task=selftest"
# The log of a DNS run (dns lines, decisions with and without a host) is well formed.
tap_check "log: canonical, chained and signed, run_start first, sealed after run_end" \
	log_well_formed "$CASE_LOG"
assert_run_clean "learned: nothing left"

dns_run "$SEED" -- "$P" tcp 198.51.100.10 80
assert_probe_lines "learned-next-run: a new run has learned nothing: denied" "err EPERM"
assert_sink_none "learned-next-run: nothing arrives" "tcp-accept 198.51.100.10 80"
assert_log "learned-next-run: log has the deny line" "$CASE_LOG" 1 type=decision \
	"run_id=$SL_RUN_ID" decision=deny dst=198.51.100.10 port=80 rule=default
assert_run_clean "learned-next-run: nothing left"

# Two runs at once: what one run learned does not open the address for the other.
A_READY=$SL_TMP/run-a.ready
A_GO=$SL_TMP/run-a.go
A_LOG=$SL_TMP/$(sluice_next_run_id).log
SL_EXTRA_MARK=$(sl_lines "$SL_EXTRA_LOG")
sluice_start "$SEED" "$A_LOG" --netns "/run/netns/$SL_NS_RUN" \
	--upstream "127.0.0.1:$SL_DNS_PORT" -- sh -c '
	p=$1
	shift
	"$@" >/dev/null
	: >"$0.ready"
	i=0
	while [ ! -e "$0.go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
	exec "$p" tcp 198.51.100.10 80' "$SL_TMP/run-a" "$P" "${DIG[@]}" @203.0.113.53 \
	registry.npmjs.org
A_ID=$SL_RUN_ID A_OUT=$SL_OUT A_PID=$SL_RUN_PID
if wait_until 10000 test -e "$A_READY"; then
	tap_ok "concurrent: run A resolved registry.npmjs.org and waits"
else
	tap_fail "concurrent: run A resolved registry.npmjs.org and waits" \
		"expected $A_READY within 10 s; run A: $(cat "$SL_TMP/$A_ID.err" 2>/dev/null)"
fi
dns_run "$SEED" -- "$P" tcp 198.51.100.10 80
assert_probe_lines "concurrent: run B, which resolved nothing, is denied" "err EPERM"
assert_sink_none "concurrent: nothing of run B arrives" "tcp-accept 198.51.100.10 80"
# (Run A's resolver still listens in the run netns: only the cgroup, pins and links here.)
assert_no_leftovers "concurrent: run B left nothing"
: >"$A_GO"
SL_RUN_PID=$A_PID
if sluice_wait 20; then
	tap_is "concurrent: run A still connects (its own learned address)" "$(cat "$A_OUT")" ok
	tap_is "concurrent: run A exits 0" "$SL_RC" 0
	assert_sink_saw "concurrent: run A's connect arrived" "tcp 198.51.100.10 80"
else
	tap_fail "concurrent: run A ended" "expected run A to end within 20 s"
	tap_skip "concurrent: run A exits 0" "run A did not end"
fi
A_CGID=$(log_run_start_field "$A_LOG" cgroup_id)
SL_RUN_ID=$A_ID SL_RUN_CGID=$A_CGID
assert_run_clean "concurrent: run A left nothing"

# The learned-address map full (a run that resolved 65536 addresses): a listed name's new
# addresses cannot be recorded, so its answer is refused and a connect to any of them stays
# denied (fail closed), with the reason in the log. The test fills the run's pinned map from
# outside, all but one entry: big.example's first address takes it, its second finds the map
# full, and the first is taken back (an answer is learned whole or not at all).
F_GO=$SL_TMP/run-full.go
F_LOG=$SL_TMP/$(sluice_next_run_id).log
F_PIN=/sys/fs/bpf/sluice/$(sluice_next_run_id)/map-learned4
SL_EXTRA_MARK=$(sl_lines "$SL_EXTRA_LOG")
upstream_mark
sluice_start "$SL_TMP/big.yaml" "$F_LOG" --netns "/run/netns/$SL_NS_RUN" \
	--upstream "127.0.0.1:$SL_DNS_PORT" -- sh -c '
	i=0
	while [ ! -e "$0" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
	p=$1
	shift
	"$@" A >/dev/null
	for i in $(seq 101 132); do "$p" tcp "198.51.100.$i" 80; done
	: >"$0.asked"
	i=0
	while [ ! -e "$0.end" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done' \
	"$F_GO" "$P" "${DIG[@]}" @203.0.113.53 big.example
F_ID=$SL_RUN_ID F_OUT=$SL_OUT F_PID=$SL_RUN_PID
F_SNI=/sys/fs/bpf/sluice/$F_ID/map-sni-ok
wait_until 10000 test -e "$F_PIN"
f_max=$(bpftool map show pinned "$F_PIN" 2>/dev/null | sed -n 's/.*max_entries \([0-9]*\).*/\1/p')
tap_is "learned full: a policy that lists names gets the full learned-address map" \
	"${f_max:-none}" 65536
# addresses in 100.64.0.0/16, which nothing here uses; the value is a struct sl_learned of zeros
zeros=$(printf ' 00%.0s' $(seq 24))
awk -v pin="$F_PIN" -v n="${f_max:-0}" -v v="$zeros" 'BEGIN {
	for (i = 0; i < n - 1; i++)
		printf "map update pinned %s key hex 64 40 %02x %02x value hex%s\n", pin,
			int(i / 256) % 256, i % 256, v
}' >"$SL_TMP/learned-full.batch"
# bpftool batch stops at the first update that fails: all went in; one more fills the map, and
# a second is refused; the one is taken out again, to leave the run a single free entry
bpftool batch file "$SL_TMP/learned-full.batch" >"$SL_TMP/learned-full.out" 2>&1
f_rc=$?
# shellcheck disable=SC2086 # the value's bytes are words
f_last=$(bpftool map update pinned "$F_PIN" key hex 64 41 00 00 value hex $zeros 2>&1)
# shellcheck disable=SC2086 # the value's bytes are words
f_more=$(bpftool map update pinned "$F_PIN" key hex 64 41 00 01 value hex $zeros 2>&1)
f_del=$(bpftool map delete pinned "$F_PIN" key hex 64 41 00 00 2>&1)
if [[ $f_rc -eq 0 && -z $f_last && $f_more == *"Argument list too long"* && -z $f_del ]]; then
	tap_ok "learned full: the map took every address up to its size"
else
	tap_fail "learned full: the map took every address up to its size" \
		"expected the batch of ${f_max:-none} - 1 updates to succeed (got status $f_rc: $(tail -n 2 "$SL_TMP/learned-full.out")), one more to go in (\"$f_last\") and be deleted (\"$f_del\") and another to be refused with E2BIG (got \"$f_more\")"
fi
: >"$F_GO"
# The refused answer's (address, name) pairs were written before its addresses: they are taken
# back, else TLS naming big.example would pass on those addresses under another name's rule.
wait_until 20000 test -e "$F_GO.asked"
f_pairs=$(bpftool -j map dump pinned "$F_SNI" 2>&1 |
	python3 -c 'import json, sys; print(len(json.load(sys.stdin)))' 2>&1)
tap_is "learned full: the refused answer leaves no server-name pair" "$f_pairs" 0
: >"$F_GO.end"
SL_RUN_PID=$F_PID
if sluice_wait 20; then
	SL_OUT=$F_OUT
	f_exp=()
	for i in $(seq 101 132); do f_exp+=("err EPERM"); done
	assert_probe_lines "learned full: every address of the refused answer is denied, the one \
that fit too" "${f_exp[@]}"
else
	tap_fail "learned full: the run ended" "expected it to end within 20 s"
fi
why=$(log_dns_why "$F_LOG" type=dns host=big.example decision=error)
if [[ $why == *"(learned-address map full)"* ]]; then
	tap_ok "learned full: the answer is refused (SERVFAIL), the log says why"
else
	tap_fail "learned full: the answer is refused (SERVFAIL), the log says why" \
		"expected a dns line with decision=error, why ...(learned-address map full); got: $why"
fi
assert_log "learned full: the connects are denied by default" "$F_LOG" 32 type=decision \
	"run_id=$F_ID" decision=deny port=80 rule=default
rm -f -- "$SL_TMP/learned-full.batch" "$SL_TMP/learned-full.out"
SL_RUN_ID=$F_ID SL_RUN_CGID=$(log_run_start_field "$F_LOG" cgroup_id)
assert_run_clean "learned full: nothing left"

# A name the run cannot number (past SL_HOSTS_MAX names, or the run's name map refusing the
# number): the answer is refused as a whole, enforcing and in report mode alike, since a name
# without a number could not be told from a ClientHello that named none and its byte totals
# would be kept per address. The test takes the run's next number in its pinned name map
# (map-hosts) before the workload asks: the resolver's write of it is refused (EEXIST), as a
# full map's would be (E2BIG), and nothing of the answer may be learned.
for n_mode in enforce report; do
	printf 'mode: %s\ndefault: deny\nrules:\n  - name: npm\n    hosts: ["registry.npmjs.org"]\n' \
		"$n_mode" >"$SL_TMP/number-$n_mode.yaml"
	N_GO=$SL_TMP/run-number-$n_mode.go
	N_ID=$(sluice_next_run_id)
	N_LOG=$SL_TMP/$N_ID.log
	N_PINS=/sys/fs/bpf/sluice/$N_ID
	label="unnumbered ($n_mode)"
	SL_EXTRA_MARK=$(sl_lines "$SL_EXTRA_LOG")
	upstream_mark
	sluice_start "$SL_TMP/number-$n_mode.yaml" "$N_LOG" --netns "/run/netns/$SL_NS_RUN" \
		--upstream "127.0.0.1:$SL_DNS_PORT" -- sh -c '
	i=0
	while [ ! -e "$0" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
	"$@" A >"$0.dig"
	: >"$0.asked"
	i=0
	while [ ! -e "$0.end" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done' \
		"$N_GO" "${DIG[@]}" @203.0.113.53 registry.npmjs.org
	N_PID=$SL_RUN_PID
	wait_until 10000 test -e "$N_PINS/map-hosts"
	# the next number: one past the highest the map holds (1 when it holds none)
	n_next=$(bpftool -j map dump pinned "$N_PINS/map-hosts" 2>/dev/null | python3 -c '
import json, sys
ids = [int.from_bytes(bytes(int(b, 16) for b in e["key"][4:8]), "little")
       for e in json.load(sys.stdin)]
print(max(ids, default=0) + 1)' 2>&1)
	# shellcheck disable=SC2046 # the key's and the value's bytes are words
	n_took=$(bpftool map update pinned "$N_PINS/map-hosts" \
		key hex 20 00 00 00 $(printf '%02x %02x %02x %02x' $((n_next & 255)) \
			$((n_next >> 8 & 255)) $((n_next >> 16 & 255)) $((n_next >> 24 & 255))) \
		value hex 74 61 6b 65 6e $(printf ' 00%.0s' $(seq 251)) 2>&1)
	tap_is "$label: the test took the run's next name number ($n_next)" "$n_took" ""
	: >"$N_GO"
	wait_until 20000 test -e "$N_GO.asked"
	assert_dig "$label: the client gets SERVFAIL, no answers" "$N_GO.dig" SERVFAIL ""
	n_learned=$(bpftool -j map dump pinned "$N_PINS/map-learned4" 2>&1 |
		python3 -c 'import json, sys; print(len(json.load(sys.stdin)))' 2>&1)
	n_pairs=$(bpftool -j map dump pinned "$N_PINS/map-sni-ok" 2>&1 |
		python3 -c 'import json, sys; print(len(json.load(sys.stdin)))' 2>&1)
	tap_is "$label: no address and no server-name pair was learned" \
		"learned $n_learned, pairs $n_pairs" "learned 0, pairs 0"
	: >"$N_GO.end"
	SL_RUN_PID=$N_PID
	sluice_wait 20 || tap_diag "$label: the run did not end within 20 s"
	# (read once the run has ended: the client may have its SERVFAIL before the line is written)
	why=$(log_dns_why "$N_LOG" type=dns host=registry.npmjs.org decision=error)
	tap_is "$label: the dns line says why" "$why" \
		"cannot number the name registry.npmjs.org: File exists"
	SL_RUN_ID=$N_ID SL_RUN_CGID=$(log_run_start_field "$N_LOG" cgroup_id)
	assert_run_clean "$label: nothing left"
done

# ---------------------------------------------------------------------------------------------
# 9. Ports and protocols of the rule that listed the name.

dns_run "$SL_TMP/ports.yaml" -- sh -c '
	p=$0
	"$@" >/dev/null
	"$p" tcp 198.51.100.10 80
	"$p" tcp 198.51.100.10 8080
	"$p" udp-sendto 198.51.100.10 80
	exit 0' "$P" "${DIG[@]}" @203.0.113.53 registry.npmjs.org
assert_probe_lines "ports: tcp/80 allowed, tcp/8080 and udp/80 denied" ok "err EPERM" "err EPERM"
assert_sink_saw "ports: 198.51.100.10:80 received the allowed connect" "tcp 198.51.100.10 80"
assert_sink_none "ports: nothing arrives on 8080" "tcp-accept 198.51.100.10 8080"
assert_extra_none "ports: no UDP datagram arrives on 80" "udp 198.51.100.10 80"
assert_log "ports: allow line for 80 (rule npm-web, host named)" "$CASE_LOG" 1 type=decision \
	"run_id=$SL_RUN_ID" decision=allow dst=198.51.100.10 port=80 proto=tcp rule=npm-web \
	host=registry.npmjs.org
assert_log "ports: deny line for 8080 names the host" "$CASE_LOG" 1 type=decision \
	"run_id=$SL_RUN_ID" decision=deny dst=198.51.100.10 port=8080 proto=tcp rule=default \
	host=registry.npmjs.org
deny="egress denied: registry.npmjs.org [198.51.100.10:8080/tcp] (rule: default)"
deny+=" run_id=$SL_RUN_ID task=selftest"
assert_stderr "ports: stderr names the host and the address:port" "$deny"
assert_request_access "ports: the hint names the host" "$deny" registry.npmjs.org
deny="egress denied: registry.npmjs.org [198.51.100.10:80/udp] (rule: default)"
deny+=" run_id=$SL_RUN_ID task=selftest"
assert_stderr "ports: stderr names the UDP denial" "$deny"
assert_run_clean "ports: nothing left"

# A name listed by two rules gets the ports of both, as an address listed by two cidrs rules
# does. (Plain-text ports: 443 would bring in the TLS layer.)
dns_run "$SL_TMP/ports.yaml" -- sh -c '
	p=$0
	"$@" >/dev/null
	"$p" tcp 198.51.100.10 8080
	"$p" tcp 198.51.100.10 80
	"$p" tcp 198.51.100.10 443
	exit 0' "$P" "${DIG[@]}" @203.0.113.53 pypi.org
assert_probe_lines "ports-two-rules: 8080 (pypi-alt) and 80 (pypi-web) allowed, 443 denied" \
	ok ok "err EPERM"
assert_sink_saw "ports-two-rules: 8080 arrives" "tcp 198.51.100.10 8080"
assert_sink_saw "ports-two-rules: 80 arrives" "tcp 198.51.100.10 80"
assert_sink_none "ports-two-rules: nothing arrives on 443" "tcp-accept 198.51.100.10 443"
assert_log "ports-two-rules: the 80 connect is allowed by pypi-web" "$CASE_LOG" 1 \
	type=decision "run_id=$SL_RUN_ID" decision=allow dst=198.51.100.10 port=80 rule=pypi-web \
	host=pypi.org
assert_run_clean "ports-two-rules: nothing left"

# ---------------------------------------------------------------------------------------------
# 12. The policy summary.

out=$("$SLUICE" policy check "$SEED" 2>&1)
rc=$?
tap_is "policy check: seed-003 is valid (exit 0)" "$rc" 0
if grep -q 'NOT ENFORCED YET' <<<"$out"; then
	tap_fail "policy check: host rules are no longer reported as NOT ENFORCED YET" \
		"expected no \"NOT ENFORCED YET\"; got:"$'\n'"$(grep 'NOT ENFORCED YET' <<<"$out")"
else
	tap_ok "policy check: host rules are no longer reported as NOT ENFORCED YET"
fi

# ---------------------------------------------------------------------------------------------
# 13. The whole file: no test host ever received DNS, no unlisted name ever reached the upstream,
# the upstream stops.

SL_SINK_MARK=$CONTROL_SINK_MARK SL_RTR_SINK_MARK=$CONTROL_RTR_MARK SL_EXTRA_MARK=$CONTROL_EXTRA_MARK
got=$(outside_dns_lines)
tap_is "all runs: no test host ever received anything on port 53" "$got" ""
SL_DNS_MARK=$UPSTREAM_FIXTURE_END
leaked=
for n in static.rust-lang.org transfer.sh githubusercontent.com evilgithubusercontent.com \
	githubusercontent.com.evil.example; do
	[[ $(upstream_count "$n") -eq 0 ]] || leaked+="$n x$(upstream_count "$n"); "
done
tap_is "all runs: no unlisted name ever reached the upstream" "$leaked" ""
other=$(upstream_new_lines | grep -E 'query\[' | grep -E 'registry\.npmjs\.org' |
	grep -vE 'query\[(A|AAAA)\] ' | head -n 5)
tap_is "all runs: the upstream was only ever asked A/AAAA for registry.npmjs.org" "$other" ""
dns_upstream_stop
if pid_running "$SL_DNS_PID"; then
	tap_fail "dnsmasq stopped" "expected pid $SL_DNS_PID to be gone"
else
	tap_ok "dnsmasq stopped"
fi

tap_done
