#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The run's resolver when the run shares sluice's network namespace (no --netns): it listens on
# this namespace's loopback and the run's DNS is redirected there. Only loopback is used here:
# the queries name 127.0.0.53 and ::1 as their server (redirected either way), the upstream is a
# dnsmasq on 127.0.0.1, and nothing connects anywhere.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
# no topology: only a temp dir, and the upstream, both removed by topo_down
trap topo_down_at_exit EXIT
SL_TOPO_UP=1
SL_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-selftest.XXXXXX") || bail_out "mktemp failed"
sl_key_setup "$SL_TMP" || bail_out "cannot create a host key"

policy=$SL_TMP/hostns.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: registries
    hosts: ["registry.npmjs.org"]
EOF2
dns_upstream_start hostns-upstream --address=/registry.npmjs.org/198.51.100.10 \
	--address=/static.rust-lang.org/198.51.100.20 || bail_out "cannot start dnsmasq"

log=$SL_TMP/hostns.jsonl
# shellcheck disable=SC2016 # expanded by the inner sh
sluice_run "$policy" "$log" --upstream "127.0.0.1:$SL_DNS_PORT" -- sh -c '
	dig +short +time=2 +tries=1 @127.0.0.53 registry.npmjs.org A
	dig +time=2 +tries=1 @127.0.0.53 static.rust-lang.org A | sed -n "s/.*status: \([A-Z]*\),.*/\1/p"
	dig +short +tcp +time=2 +tries=1 @::1 registry.npmjs.org A'
tap_is "host netns: a listed name resolves (UDP, asked of 127.0.0.53)" "$(sed -n 1p "$SL_OUT")" \
	198.51.100.10
tap_is "host netns: an unlisted name gets NXDOMAIN" "$(sed -n 2p "$SL_OUT")" NXDOMAIN
tap_is "host netns: a listed name resolves over TCP asked of ::1" "$(sed -n 3p "$SL_OUT")" \
	198.51.100.10
tap_cmp "host netns: the queries went through the run's resolver" \
	"$(log_count "$log" type=dns host=registry.npmjs.org decision=allow)" -eq 2
tap_cmp "host netns: the unlisted name is logged as denied" \
	"$(log_count "$log" type=dns host=static.rust-lang.org decision=deny)" -eq 1
assert_no_leftovers "host netns: nothing left"

tap_done
