#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Lifetime of learned addresses: for the whole run by default; with --dns-ttl, as long as the
# answer's TTL. An upstream answering with TTL 0 shows the difference, one with TTL 300 that the
# TTL mode still allows within the TTL. And how many rules one learned address can carry.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

policy=$SL_TMP/ttl.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: registries
    hosts: ["registry.npmjs.org"]
    ports: [80]
    protocols: [tcp]
EOF2

# dig, wait past a zero TTL, then connect to the address it answered
workload() {
	# shellcheck disable=SC2016 # expanded by the inner sh
	sluice_run "$policy" "$SL_TMP/$1.jsonl" --netns "/run/netns/$SL_NS_RUN" \
		--upstream "127.0.0.1:$SL_DNS_PORT" "${@:2}" -- sh -c \
		'dig +short +time=2 +tries=1 registry.npmjs.org A; sleep 1.2; "$1" tcp 198.51.100.10 80' \
		sh "$SL_PROBE"
}

dns_upstream_start ttl0 --address=/registry.npmjs.org/198.51.100.10 ||
	bail_out "cannot start dnsmasq"
workload run-long
tap_check "default: the address is answered" grep -qx 198.51.100.10 "$SL_OUT"
tap_check "default: it stays allowed after its TTL of 0 (learned for the run)" grep -qx ok "$SL_OUT"
assert_no_leftovers "default: nothing left"

workload ttl-mode --dns-ttl
tap_check "--dns-ttl: the address is answered" grep -qx 198.51.100.10 "$SL_OUT"
tap_check "--dns-ttl: after its TTL of 0 the connect is denied" grep -q '^err EPERM' "$SL_OUT"
tap_cmp "--dns-ttl: the denial names the host the address was learned for" \
	"$(log_count "$SL_TMP/ttl-mode.jsonl" type=decision decision=deny host=registry.npmjs.org)" -eq 1
assert_no_leftovers "--dns-ttl: nothing left"
dns_upstream_stop

dns_upstream_start ttl300 --address=/registry.npmjs.org/198.51.100.10 --local-ttl=300 ||
	bail_out "cannot start dnsmasq"
workload ttl-300 --dns-ttl
tap_check "--dns-ttl: within a TTL of 300 s the connect is allowed" grep -qx ok "$SL_OUT"
assert_no_leftovers "--dns-ttl 300: nothing left"

dns_upstream_stop

# An address carries at most 4 rules (SL_LEARNED_RULES), whichever names bring them: four names
# of four rules share 198.51.100.10; a fifth rule's name answers 198.51.100.20 first (dnsmasq
# answers its --address lines last first: the fixture checks it), then the full 198.51.100.10. Its answer is refused
# whole (SERVFAIL), the log says which limit, and nothing of it is learned: not the fifth rule on
# the shared address, nor its other address, which alone would have fit. A name that five rules
# list can be learned nowhere, and is refused the same way.
shared=$SL_TMP/shared.yaml
{
	echo "default: deny"
	echo "rules:"
	for i in 1 2 3 4; do
		printf '  - name: r%s\n    hosts: ["a%s.example", "m.example"]\n' "$i" "$i"
		printf '    ports: [80]\n    protocols: [tcp]\n'
	done
	printf '  - name: r5\n    hosts: ["a5.example", "m.example"]\n    ports: [8080]\n'
	printf '    protocols: [tcp]\n'
} >"$shared"
dns_upstream_start shared --address=/a1.example/198.51.100.10 --address=/a2.example/198.51.100.10 \
	--address=/a3.example/198.51.100.10 --address=/a4.example/198.51.100.10 \
	--address=/a5.example/198.51.100.10 --address=/a5.example/198.51.100.20 \
	--address=/m.example/203.0.113.7 ||
	bail_out "cannot start dnsmasq"
# The case needs the address that would fit first in the answer (a resolver that learned
# address by address would have learned it before finding the full one): said, not assumed.
tap_is "fixture: the upstream answers a5.example's 198.51.100.20 first, then 198.51.100.10" \
	"$(dig +short +time=$((2 * SL_SLOW)) +tries=1 -p "$SL_DNS_PORT" @127.0.0.1 a5.example A | paste -sd' ')" \
	"198.51.100.20 198.51.100.10"
# shellcheck disable=SC2016 # expanded by the inner sh
sluice_run "$shared" "$SL_TMP/shared.jsonl" --netns "/run/netns/$SL_NS_RUN" \
	--upstream "127.0.0.1:$SL_DNS_PORT" -- sh -c '
	for i in 1 2 3 4; do echo "a$i $(dig +short +time=2 +tries=1 "a$i.example" A)"; done
	dig +time=2 +tries=1 a5.example A | sed -n "s/.*status: \([A-Z]*\),.*/a5 \1/p"
	echo "x80 $("$1" tcp 198.51.100.10 80)"
	echo "x8080 $("$1" tcp 198.51.100.10 8080)"
	echo "y8080 $("$1" tcp 198.51.100.20 8080)"
	dig +time=2 +tries=1 m.example A | sed -n "s/.*status: \([A-Z]*\),.*/m \1/p"
	echo "m80 $("$1" tcp 203.0.113.7 80)"' sh "$SL_PROBE"
# refusal_why HOST: the "why" of the log's SERVFAIL dns line for HOST
refusal_why() {
	log_field "$(log_lines "$SL_TMP/shared.jsonl" type=dns host="$1" decision=error rcode=SERVFAIL |
		head -n 1)" why
}
tap_cmp "shared address: the four names of four rules are answered" \
	"$(grep -cE '^a[1-4] 198\.51\.100\.10$' "$SL_OUT")" -eq 4
tap_check "shared address: a fifth rule's name gets SERVFAIL" grep -qx 'a5 SERVFAIL' "$SL_OUT"
why=$(refusal_why a5.example)
refusal='^cannot record learned address 198\.51\.100\.10 for a5\.example: '
tap_check "shared address: the refusal names the address, the name and the limit" \
	grep -q "${refusal}an address carries at most 4 rules" <<<"$why"
tap_check "shared address: ... and the rules that hold it and the name's own" \
	grep -q 'it has r1, r2, r3, r4 already and the name needs r5$' <<<"$why"
tap_check "shared address: the four rules still allow it" grep -qx 'x80 ok' "$SL_OUT"
tap_check "shared address: the fifth rule was not added to it" grep -q '^x8080 err EPERM' "$SL_OUT"
tap_check "shared address: the refused answer's other address was not learned either" \
	grep -q '^y8080 err EPERM' "$SL_OUT"
tap_check "shared address: a name five rules list gets SERVFAIL, its address stays denied" \
	bash -c "grep -qx 'm SERVFAIL' '$SL_OUT' && grep -q '^m80 err EPERM' '$SL_OUT'"
why=$(refusal_why m.example)
many='at most 4 rules (SL_LEARNED_RULES), and at least 5 list the name (r1, r2, r3, r4, r5)$'
tap_check "shared address: ... and the log says the name alone needs more than 4 rules" \
	grep -q "$many" <<<"$why"
tap_cmp "shared address: no dns line calls a full slot a full map" \
	"$(grep -c 'map full' "$SL_TMP/shared.jsonl")" -eq 0
[[ $SL_TAP_FAILED -eq 0 ]] || sluice_diag "$SL_TMP/shared.jsonl"
assert_no_leftovers "shared address: nothing left"

tap_done
