#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Lifetime of learned addresses: for the whole run by default; with --dns-ttl, as long as the
# answer's TTL. An upstream answering with TTL 0 shows the difference, one with TTL 300 that the
# TTL mode still allows within the TTL.

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

tap_done
