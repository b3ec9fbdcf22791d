#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# From evidence to decision: two report-mode runs of a small workload (hosts by name, one behind
# a CNAME, a telemetry-looking host, an address dialled without a name, and in the second run an
# extra host) make real signed logs; sluice policy suggest turns them into a policy that policy
# check accepts and that flags what it must; sluice policy replay predicts what that policy and a
# stricter one would deny; and an enforced run under the suggestion lets the workload through
# and denies exactly what the replay predicted, plus an unlisted host.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
for t in dnsmasq dig python3; do
	command -v "$t" >/dev/null || skip_all "$t not installed (dnsmasq-base, bind9-dnsutils)"
done
topo_up

# One test host per name, but for the two names of the shared-address case at the end: the log
# names a connection's host by its address, so names sharing one cannot be told apart.
for a in 11 12 13 14 15 16; do
	in_inet ip addr add "198.51.100.$a/32" dev lo || bail_out "cannot add 198.51.100.$a"
done
# The upstream the runs' resolvers ask (loopback only).
# shellcheck disable=SC2054 # dnsmasq's arguments have commas
dns_upstream_start upstream --local-ttl=300 \
	--host-record=pkgs.acme.example,198.51.100.11 \
	--cname=api.acme.example,edge.cdn.example \
	--host-record=edge.cdn.example,198.51.100.12 \
	--host-record=telemetry.acme.example,198.51.100.13 \
	--host-record=extra.example,198.51.100.14 \
	--host-record=unlisted.example,198.51.100.15 \
	--host-record=decoy.shared.example,198.51.100.16 \
	--host-record=wanted.shared.example,198.51.100.16 \
	--host-record=nat64.shared.example,64:ff9b::c633:6410 \
	--address=/many.example/198.51.100.16 ||
	bail_out "cannot start dnsmasq on 127.0.0.1"
sl_on_exit dns_upstream_stop

# The workload: one TCP exchange per TARGET (NAME:PORT or ADDR:PORT), "ok TARGET" or
# "fail TARGET WHY" for each; exits 1 when a target not marked "?" (optional) failed.
cat >"$SL_TMP/work.py" <<'EOF'
import socket, sys
bad = 0
for t in sys.argv[1:]:
    optional = t.startswith("?")
    host, port = t.lstrip("?").rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"x" * 1000)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
        s.close()
        print("ok", t.lstrip("?"))
    except OSError as e:
        print("fail", t.lstrip("?"), type(e).__name__, e)
        bad += 0 if optional else 1
sys.exit(1 if bad else 0)
EOF
WORK1=(pkgs.acme.example:80 api.acme.example:8080 "?telemetry.acme.example:80" "?203.0.113.7:80")
WORK2=("${WORK1[@]}" "?extra.example:443")

# The report-only phase: nothing is refused, so every flow runs and is counted (a report-mode
# denial's flow is counted too: test_report_flows.sh).
report=$SL_TMP/report.yaml
cat >"$report" <<'EOF'
default: allow
mode: report
rules:
  - name: none-yet
    hosts: ["nothing.invalid"]
EOF

# wrun POLICY LOG [ARGS…] -- TARGET…: the workload in the run netns under POLICY.
wrun() {
	local policy=$1 log=$2 extra=()
	shift 2
	while [[ $1 != -- ]]; do
		extra+=("$1")
		shift
	done
	shift
	sluice_run "$policy" "$log" --netns "/run/netns/$SL_NS_RUN" \
		--upstream "127.0.0.1:$SL_DNS_PORT" "${extra[@]}" -- python3 "$SL_TMP/work.py" "$@"
}

L1=$SL_TMP/r1.log
L2=$SL_TMP/r2.log
wrun "$report" "$L1" -- "${WORK1[@]}"
tap_is "report run 1: the workload reached every target" \
	"$SL_RC $(grep -c '^ok ' "$SL_OUT")" "0 4" || sluice_diag "$L1"
wrun "$report" "$L2" -- "${WORK2[@]}"
tap_is "report run 2: the workload reached every target, extra.example too" \
	"$SL_RC $(grep -c '^ok ' "$SL_OUT")" "0 5" || sluice_diag "$L2"

# --- suggest ---------------------------------------------------------------------------------
S=$SL_TMP/suggested.yaml
"$SLUICE" policy suggest "$L1" "$L2" -o "$S" >"$SL_TMP/suggest.out" 2>&1
rc=$?
tap_is "suggest: exits 0 on two verified logs" "$rc" 0 || tap_diag_file "$SL_TMP/suggest.out"
tap_check "suggest: policy check accepts the output unchanged" \
	"$SLUICE" policy check "$S"
tap_diag_file "$S"
# active (uncommented) lines only
active=$(grep -v '^[[:space:]]*#' "$S")
tap_check "suggest: pkgs.acme.example is a rule on port 80" \
	grep -Eq '^  - hosts: \["pkgs\.acme\.example"\]' <<<"$active"
tap_check "suggest: api.acme.example is a rule, its CNAME chain said under it" \
	bash -c "grep -q '\"api.acme.example\"' <<<'$active' && grep -q 'edge.cdn.example' '$S'"
tap_check "suggest: the rule for api.acme.example lists port 8080" \
	bash -c "grep -A8 '\"api.acme.example\"' <<<'$active' | grep -q 'ports: \[8080\]'"
tap_check "suggest: telemetry.acme.example is flagged as telemetry and not allowed" \
	bash -c "! grep -q telemetry <<<'$active' && grep -q '^# *- hosts: \[\"telemetry.acme.example\"\]' '$S' && grep -qi 'telemetry' <(grep -B3 '\"telemetry.acme.example\"' '$S')"
tap_check "suggest: extra.example is flagged '# single run' and not allowed" \
	bash -c "! grep -q extra.example <<<'$active' && grep -B4 '\"extra.example\"' '$S' | grep -q '# single run'"
tap_check "suggest: the address dialled without a name is in the commented section" \
	bash -c "! grep -q 203.0.113.7 <<<'$active' && grep -q '^#.*203.0.113.7/32' '$S'"
tap_check "suggest: byte caps are proposed from the observed maxima, commented" \
	grep -Eq '^ *# *max_request_bytes: [0-9_]+ .*margin' "$S"
tap_check "suggest: a wildcard is only a commented proposal listing the hosts it covers" \
	bash -c "! grep -q '\\*\\.' <<<'$active' && grep -q '^#.*\\*\\.acme\\.example. would cover: api.acme.example pkgs.acme.example telemetry.acme.example' '$S'"
"$SLUICE" policy suggest "$L1" "$L2" --min-runs 1 -o "$SL_TMP/min1.yaml" >/dev/null 2>&1
tap_check "suggest --min-runs 1: extra.example is then a rule" \
	bash -c "grep -v '^ *#' '$SL_TMP/min1.yaml' | grep -q '\"extra.example\"'"

# --- replay ----------------------------------------------------------------------------------
"$SLUICE" policy replay "$S" "$L1" "$L2" >"$SL_TMP/replay.out" 2>&1
rc=$?
tap_diag_file "$SL_TMP/replay.out"
tap_is "replay of the suggestion on the report logs: exit 1 (it denies what it flagged)" "$rc" 1
predicted=$("$SLUICE" policy replay "$S" "$L1" "$L2" --json 2>/dev/null |
	python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(sorted({c["host"] or c["dst"] for c in d["connections"] if c["verdict"] == "deny" and c["needed"]})))')
tap_is "replay predicts denials of exactly the flagged destinations" \
	"$predicted" "203.0.113.7 extra.example telemetry.acme.example"

strict=$SL_TMP/strict.yaml
cat >"$strict" <<'EOF'
default: deny
rules:
  - name: api
    hosts: ["api.acme.example"]
    ports: [8080]
EOF
"$SLUICE" policy replay "$strict" "$L1" "$L2" >"$SL_TMP/strict.out" 2>&1
rc=$?
tap_is "replay of a stricter policy: exit 1" "$rc" 1 || tap_diag_file "$SL_TMP/strict.out"
tap_check "replay of a stricter policy: names the denial of pkgs.acme.example" \
	grep -Eq 'deny +pkgs\.acme\.example +80/tcp' "$SL_TMP/strict.out"

# Byte caps replayed on the recorded flows: each request carried 1018 bytes.
capped=$SL_TMP/capped.yaml
sed 's/^    # max_request_bytes: [0-9_]*/    max_request_bytes: 1000/' "$S" >"$capped"
"$SLUICE" policy replay "$capped" "$L1" >"$SL_TMP/capped.out" 2>&1
rc=$?
tap_check "replay: a max_request_bytes below what a flow carried is a cut (exit 1)" \
	bash -c "[[ $rc == 1 ]] && grep -Eq '^cut +pkgs\.acme\.example +80/tcp .*max_request_bytes 1000 < 1018 sent' '$SL_TMP/capped.out'" ||
	tap_diag_file "$SL_TMP/capped.out"

# --- enforce with the suggestion -------------------------------------------------------------
L3=$SL_TMP/r3.log
wrun "$S" "$L3" --mode enforce -- "${WORK2[@]}" "?unlisted.example:80"
tap_diag_file "$SL_OUT"
tap_is "enforce: the workload succeeds under the suggested policy" "$SL_RC" 0 ||
	sluice_diag "$L3"
tap_check "enforce: pkgs.acme.example and api.acme.example were reached" \
	bash -c "grep -qx 'ok pkgs.acme.example:80' '$SL_OUT' && grep -qx 'ok api.acme.example:8080' '$SL_OUT'"
tap_check "enforce: the unlisted host was denied" grep -q '^fail unlisted.example:80' "$SL_OUT"
denied=$(for t in telemetry.acme.example extra.example 203.0.113.7; do
	grep -q "^fail $t:" "$SL_OUT" && echo -n "$t "
done)
tap_is "enforce: the flagged destinations were denied, as replay predicted" \
	"$denied" "telemetry.acme.example extra.example 203.0.113.7 "
# What the enforced run logged as denied (a name the resolver refused, a connect refused), but
# the unlisted host no earlier run used: exactly what the replay predicted.
logged=$(python3 -c '
import json, sys
seen = set()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("decision") == "deny" and r["type"] in ("dns", "decision"):
        seen.add(r.get("host") or r.get("dst"))
seen.discard("unlisted.example")
print(" ".join(sorted(seen)))' "$L3")
tap_is "enforce: the log's denials are the ones replay predicted" "$logged" "$predicted"
"$SLUICE" policy replay "$S" "$L3" >"$SL_TMP/replay3.out" 2>&1
rc=$?
tap_is "replay of the suggestion on the enforced run: exit 0 (nothing needed is denied)" "$rc" 0 ||
	tap_diag_file "$SL_TMP/replay3.out"

# --- an address two names share --------------------------------------------------------------
# The kernel keeps one name per learned address, the first it was answered for. The attacker
# has the decoy resolved first, then resolves and uses only the other name: no line may say the
# connection was for the decoy, nor may suggest propose the decoy for it.
shared=$SL_TMP/shared.yaml
cat >"$shared" <<'EOF'
default: deny
rules:
  - name: shared
    hosts: ["decoy.shared.example", "wanted.shared.example", "nat64.shared.example"]
    ports: [80]
    protocols: [tcp]
    max_total_request_bytes: 1_000_000
  - name: many
    hosts: ["*.many.example"]
    ports: [80]
    protocols: [tcp]
    max_request_bytes: 500
EOF
# shared_run LOG SCRIPT: SCRIPT (sh, $1 the workload above) in the run netns under that policy.
shared_run() {
	sluice_run "$shared" "$1" --netns "/run/netns/$SL_NS_RUN" \
		--upstream "127.0.0.1:$SL_DNS_PORT" -- sh -c "$2" sh "$SL_TMP/work.py"
}
LS=$SL_TMP/shared.log
# shellcheck disable=SC2016 # expanded by the inner sh
shared_run "$LS" 'getent ahostsv4 decoy.shared.example >/dev/null &&
	python3 "$1" wanted.shared.example:80'
tap_is "shared: the workload reached the name it resolved" \
	"$SL_RC $(grep -c '^ok wanted.shared.example:80' "$SL_OUT")" "0 1" || sluice_diag "$LS"
both='hosts:raw=["decoy.shared.example","wanted.shared.example"]'
tap_is "shared: its decision line names no host, lists both names" \
	"$(log_count "$LS" type=decision dst=198.51.100.16 port=80 decision=allow host:raw=null \
		"$both")" 1
tap_is "shared: ... and its flow line too" \
	"$(log_count "$LS" type=flow dst=198.51.100.16 port=80 host:raw=null "$both")" 1
tap_is "shared: no decision or flow line says the connection was for the decoy" \
	"$(($(log_count "$LS" type=decision host=decoy.shared.example) +
		$(log_count "$LS" type=flow host=decoy.shared.example)))" 0
tap_is "shared: host_total names the budget's name and says it is shared" \
	"$(log_count "$LS" type=host_total host=decoy.shared.example rule=shared flows=1 \
		shared=true)" 1
SS=$SL_TMP/shared-suggested.yaml
"$SLUICE" policy suggest "$LS" -o "$SS" >"$SL_TMP/shared-suggest.out" 2>&1
tap_is "shared: suggest exits 0" "$?" 0 || tap_diag_file "$SL_TMP/shared-suggest.out"
tap_diag_file "$SS"
tap_check "shared: suggest proposes neither name as a rule" \
	bash -c "! grep -v '^[[:space:]]*#' '$SS' | grep -q 'shared\\.example'"
tap_check "shared: suggest's commented address says both names and that it cannot tell" \
	bash -c "grep -A12 '^#.*198\\.51\\.100\\.16: ' '$SS' |
		grep -q 'were for: decoy.shared.example wanted.shared.example'"
tap_check "shared: the events view lists both names, not none" \
	bash -c "'$SLUICE' events -o compact --type decision '$LS' |
		grep -q '{decoy.shared.example,wanted.shared.example}=198.51.100.16:80/tcp'"
"$SLUICE" report "$LS" -o "$SL_TMP/shared.html" >/dev/null 2>&1
tap_check "shared: the report's host table says the address's names, not \"(no name)\"" \
	grep -q '198.51.100.16 <i>(one of decoy.shared.example, wanted.shared.example)</i>' \
	"$SL_TMP/shared.html"
# Replay cannot tell which name the workload meant: a policy that lists only one of them (the
# decoy here, which the workload never used) may break the run, and says so (exit 1, as for a
# denial of a needed connection); one that lists both allows it.
# replay_shared NAME POLICY-HOSTS: replay "$LS" under a policy of those hosts, into $rc and
# $SL_TMP/replay-NAME.out.
replay_shared() {
	printf 'default: deny\nrules:\n  - hosts: %s\n    ports: [80]\n' "$2" >"$SL_TMP/$1.yaml"
	"$SLUICE" policy replay "$SL_TMP/$1.yaml" "$LS" >"$SL_TMP/replay-$1.out" 2>&1
	rc=$?
}
uncertain='^uncertain +198\.51\.100\.16 +80/tcp .*if the connection was for '
replay_shared decoy '["decoy.shared.example"]'
tap_check "shared: replay of a decoy-only policy: uncertain, exit 1, not a clean allow" \
	bash -c "[[ $rc == 1 ]] &&
		grep -Eq '${uncertain}decoy\.shared\.example, but .* wanted\.shared\.example' \
		'$SL_TMP/replay-decoy.out' &&
		grep -q '1 uncertain (1 needed)' '$SL_TMP/replay-decoy.out' &&
		! grep -Eq '^allow +198\.51\.100\.16' '$SL_TMP/replay-decoy.out'" ||
	tap_diag_file "$SL_TMP/replay-decoy.out"
replay_shared wanted '["wanted.shared.example"]'
tap_check "shared: ... and of a policy of the other name alone, the same" \
	bash -c "[[ $rc == 1 ]] && grep -Eq '${uncertain}wanted\.shared\.example' \
		'$SL_TMP/replay-wanted.out'" ||
	tap_diag_file "$SL_TMP/replay-wanted.out"
replay_shared both '["decoy.shared.example", "wanted.shared.example"]'
tap_check "shared: a policy listing both names allows it, exit 0" \
	bash -c "[[ $rc == 0 ]] && grep -Eq '^allow +198\.51\.100\.16 +80/tcp .*every name' \
		'$SL_TMP/replay-both.out'" ||
	tap_diag_file "$SL_TMP/replay-both.out"
# Enforcing, a name no rule lists is answered NXDOMAIN whatever cidrs or the default say: a
# policy that opens the address but lists neither name may break the run, and says so.
# replay_unlisted NAME POLICY-LINES...: replay "$LS" under that policy, into $rc and
# $SL_TMP/replay-NAME.out.
replay_unlisted() {
	local name=$1
	shift
	printf '%s\n' "$@" >"$SL_TMP/$name.yaml"
	"$SLUICE" policy replay "$SL_TMP/$name.yaml" "$LS" >"$SL_TMP/replay-$name.out" 2>&1
	rc=$?
}
unlisted='^uncertain +198\.51\.100\.16 +80/tcp .*unless the connection was for decoy\.shared\.example, .*no rule lists'
replay_unlisted cidrs-only 'default: deny' 'rules:' '  - cidrs: ["198.51.100.16/32"]' \
	'    ports: [80]'
tap_check "shared: replay of a cidrs-only policy: uncertain (the names get NXDOMAIN), exit 1" \
	bash -c "[[ $rc == 1 ]] && grep -Eq '$unlisted' '$SL_TMP/replay-cidrs-only.out' &&
		! grep -Eq '^allow +198\.51\.100\.16' '$SL_TMP/replay-cidrs-only.out'" ||
	tap_diag_file "$SL_TMP/replay-cidrs-only.out"
replay_unlisted default-allow 'default: allow' 'rules:' \
	'  - hosts: ["wanted.shared.example"]' '    ports: [80]'
tap_check "shared: ... and of a default: allow policy listing one of the names, the same" \
	bash -c "[[ $rc == 1 ]] && grep -Eq '$unlisted' '$SL_TMP/replay-default-allow.out' &&
		! grep -Eq '^allow +198\.51\.100\.16' '$SL_TMP/replay-default-allow.out'" ||
	tap_diag_file "$SL_TMP/replay-default-allow.out"
# A connection made while the address had been answered for one name only names that one.
LT=$SL_TMP/shared-before.log
# shellcheck disable=SC2016 # expanded by the inner sh
shared_run "$LT" 'python3 "$1" decoy.shared.example:80 &&
	getent ahostsv4 wanted.shared.example >/dev/null && python3 "$1" wanted.shared.example:80'
tap_is "shared: the connect before the second name was answered names the first" \
	"$(log_count "$LT" type=decision dst=198.51.100.16 decision=allow \
		host=decoy.shared.example)" 1
tap_is "shared: the one after lists both" \
	"$(log_count "$LT" type=decision dst=198.51.100.16 decision=allow host:raw=null \
		"$both")" 1
# The kernel counts both flows under one budget, its name's (the first answered): so does
# replay, whose budget of 1,500 bytes the two 1,018-byte requests pass together, not apart.
printf '%s\n' 'default: deny' 'rules:' '  - name: shared' \
	'    hosts: ["decoy.shared.example", "wanted.shared.example"]' '    ports: [80]' \
	'    max_total_request_bytes: 1500' >"$SL_TMP/budget.yaml"
"$SLUICE" policy replay "$SL_TMP/budget.yaml" "$LT" >"$SL_TMP/replay-budget.out" 2>&1
rc=$?
cut='^cut +198\.51\.100\.16 .*max_total_request_bytes 1500 < 2036 sent'
tap_check "shared: replay counts a shared flow under the kernel's name: the total is cut" \
	bash -c "[[ $rc == 1 ]] && grep -Eq '$cut' '$SL_TMP/replay-budget.out'" ||
	tap_diag_file "$SL_TMP/replay-budget.out"
# An AAAA answer that carries an IPv4 address (NAT64 here) is that address to the kernel: the
# name it was answered for is a candidate of a connect to the IPv4 address.
LN=$SL_TMP/shared-nat64.log
# shellcheck disable=SC2016 # expanded by the inner sh
shared_run "$LN" 'getent ahostsv4 decoy.shared.example >/dev/null &&
	dig +short +time=2 +tries=1 AAAA nat64.shared.example | grep -q "^64:ff9b::" &&
	python3 "$1" 198.51.100.16:80'
tap_is "shared: an AAAA answer's name is a candidate of the IPv4 address it carries" \
	"$(log_count "$LN" type=decision dst=198.51.100.16 decision=allow host:raw=null \
		'hosts:raw=["decoy.shared.example","nat64.shared.example"]')" 1 || sluice_diag "$LN"
# An address 18 names share: the line lists 16 (the budget's count) and says 2 are left out;
# its rule cuts the workload's request (1,018 bytes), for a flow_cut line.
LM=$SL_TMP/shared-many.log
# shellcheck disable=SC2016 # expanded by the inner sh
shared_run "$LM" 'for i in $(seq 1 18); do
		dig +short +time=2 +tries=1 "n$i.many.example" A | grep -qx 198.51.100.16 || exit 1
	done
	python3 "$1" 198.51.100.16:80'
line=$(log_lines "$LM" type=decision dst=198.51.100.16 decision=allow host:raw=null)
tap_is "shared: 18 names: the line lists 16, the kernel's first, and hosts_more 2" \
	"$(python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print(len(d["hosts"]), d["hosts"][0], d.get("hosts_more"))' "$line" 2>&1)" \
	"16 n1.many.example 2" || sluice_diag "$LM"
line=$(log_lines "$LM" type=flow_cut dst=198.51.100.16 host:raw=null cap=max_request_bytes)
tap_is "shared: ... and so does the flow_cut line of its flow, cut at the rule's 500 bytes" \
	"$(python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print(len(d["hosts"]), d["hosts"][0], d.get("hosts_more"))' "$line" 2>&1)" \
	"16 n1.many.example 2" || sluice_diag "$LM"
"$SLUICE" policy suggest "$LM" >"$SL_TMP/many-suggest.out" 2>&1
tap_check "shared: suggest says the address had 2 more names than its lines list" \
	grep -q 'were for: .* \.\.\. (and 2 more)$' "$SL_TMP/many-suggest.out" ||
	tap_diag_file "$SL_TMP/many-suggest.out"

# --- bad input -------------------------------------------------------------------------------
bad=$SL_TMP/bad.log
head -c -40 "$L1" >"$bad"
sed -i '5s/"ts":/"ts":1/' "$bad"
echo keep >"$SL_TMP/out.yaml"
"$SLUICE" policy suggest "$bad" "$L2" -o "$SL_TMP/out.yaml" >"$SL_TMP/bad.out" 2>&1
rc=$?
tap_is "suggest: a tampered log is refused (exit 1)" "$rc" 1
tap_check "suggest: the refusal names the file and the line" \
	grep -q "$bad: refused, it does not verify: INVALID: line 6 (seq 5)" "$SL_TMP/bad.out"
tap_is "suggest: -o is left as it was on failure" "$(cat "$SL_TMP/out.yaml")" keep
"$SLUICE" policy suggest "$bad" "$L2" --unverified -o "$SL_TMP/unv.yaml" >/dev/null 2>&1
tap_check "suggest --unverified: goes on and says so in the header" \
	grep -q '^# UNVERIFIED' "$SL_TMP/unv.yaml"

: >"$SL_TMP/empty.log"
"$SLUICE" policy suggest "$SL_TMP/empty.log" >"$SL_TMP/empty.out" 2>&1
rc=$?
tap_check "suggest: an empty log is refused, by name and why" \
	bash -c "[[ $rc == 1 ]] && grep -q 'empty.log: refused, it does not verify: INVALID: .*empty' '$SL_TMP/empty.out'"
printf 'default: deny\nrules:\n  - hosts: ["a.example"]\n    ports: [70000]\n' >"$SL_TMP/badp.yaml"
"$SLUICE" policy replay "$SL_TMP/badp.yaml" "$L1" >"$SL_TMP/badp.out" 2>&1
rc=$?
tap_check "replay: a policy that does not parse: exit 2, file:line:col and why" \
	bash -c "[[ $rc == 2 ]] && grep -q '^sluice policy replay: $SL_TMP/badp.yaml:4:.*70000' '$SL_TMP/badp.out'"
"$SLUICE" policy diff "$S" "$SL_TMP/badp.yaml" >/dev/null 2>&1
tap_is "diff: a policy that does not parse: exit 2" "$?" 2
"$SLUICE" policy diff "$strict" "$S" >"$SL_TMP/diff.out" 2>&1
rc=$?
tap_diag_file "$SL_TMP/diff.out"
tap_check "diff: exit 1 and pkgs.acme.example said as added" \
	bash -c "[[ $rc == 1 ]] && grep -q '^+ host pkgs.acme.example: now allowed on 80/tcp' '$SL_TMP/diff.out'"

tap_done
