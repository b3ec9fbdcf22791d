#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Report mode, by policy ("mode: report") and by "--mode report": an unlisted destination is
# allowed and reaches the test host, the log records the decision as a deny that was not enforced,
# and stderr shows the report-mode line. A control run of the same policy in enforce mode denies,
# so the test can tell the modes apart.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

rules='rules:
  - name: test-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [80]'
printf 'default: deny\nmode: report\n%s\n' "$rules" >"$SL_TMP/report.yaml"
printf 'default: deny\nmode: enforce\n%s\n' "$rules" >"$SL_TMP/enforce.yaml"

# reported LABEL MODE ADDR PORT HOOK: run one probe that report mode must let through.
reported() {
	local label=$1 mode=$2 addr=$3 port=$4 hook=$5 proto count family pat line
	proto=$(sl_case_proto "$mode")
	count=$(sl_case_count "$mode")
	family=$(sl_case_family "$hook")
	sl_case_run "$mode" "$addr" "$port"
	assert_rc "$label: sluice exits with the probe's status 0" 0
	assert_probe "$label: $mode $addr port $port succeeds" ok "$count"
	if [[ $proto == tcp ]]; then
		pat="tcp $addr $port"
	else
		pat="udp $addr $port"
	fi
	assert_sink_saw "$label: the test host received it" "$pat" "$count"
	assert_log "$label: log has $count deny line(s) with enforced false" "$CASE_LOG" "$count" \
		type=decision "run_id=$SL_RUN_ID" task=selftest "dst=$addr" "port=$port" \
		"proto=$proto" decision=deny enforced=false rule=default "hook=$hook" \
		"family=$family"
	assert_log "$label: log has no enforced deny" "$CASE_LOG" 0 type=decision \
		decision=deny enforced=true
	line="egress would be denied (report mode): $(sl_dst_text "$addr" "$port" "$proto")"
	line+=" (rule: default) run_id=$SL_RUN_ID task=selftest"
	assert_stderr "$label: stderr shows the report-mode line" "$line"
	if grep -q '^egress denied:' "$SL_ERR"; then
		tap_fail "$label: stderr has no \"egress denied\" line" \
			"expected none; got: $(grep '^egress denied:' "$SL_ERR" | head -n 3)"
	else
		tap_ok "$label: stderr has no \"egress denied\" line"
	fi
	assert_no_leftovers "$label: no cgroup or pins left"
}

# label              mode          addr           port hook
cases=(
	"tcp-v4           tcp           198.51.100.20  80   connect4"
	"tcp-v6           tcp           2001:db8::20   80   connect6"
	"tcp-wrong-port   tcp           198.51.100.10  8080 connect4"
	"udp-sendto-v4    udp-sendto    198.51.100.20  9999 sendmsg4"
	"udp-sendmmsg-v6  udp-sendmmsg  2001:db8::20   5353 sendmsg6"
	"udp-connect-v4   udp-connect   203.0.113.7    5353 connect4"
)

CASE_POLICY=$SL_TMP/report.yaml
CASE_EXTRA=()
for c in "${cases[@]}"; do
	read -r label mode addr port hook <<<"$c"
	reported "by-policy: $label" "$mode" "$addr" "$port" "$hook"
done
probe_allowed "by-policy: listed" tcp 198.51.100.10 80 connect4 test-host

CASE_POLICY=$SL_TMP/enforce.yaml
CASE_EXTRA=(--mode report)
for c in "${cases[@]}"; do
	read -r label mode addr port hook <<<"$c"
	reported "by-flag: $label" "$mode" "$addr" "$port" "$hook"
done
probe_allowed "by-flag: listed" tcp 198.51.100.10 80 connect4 test-host

# Controls: the enforce policy without the flag denies, and --mode enforce overrides the policy's
# "mode: report".
CASE_EXTRA=()
probe_denied "control-enforce" tcp 198.51.100.20 80 EPERM connect4 default
CASE_POLICY=$SL_TMP/report.yaml
CASE_EXTRA=(--mode enforce)
probe_denied "control-flag-overrides-policy" tcp 198.51.100.20 80 EPERM connect4 default

# Names in report mode: an unlisted name resolves (the run works as it would unconfined), the
# connect to its address goes through, and both are logged as what enforcing would refuse.
dns_upstream_start report-upstream --address=/static.rust-lang.org/198.51.100.20 \
	--address=/registry.npmjs.org/198.51.100.10 || bail_out "cannot start dnsmasq"
cat >"$SL_TMP/report-hosts.yaml" <<'EOF2'
default: deny
mode: report
rules:
  - name: registries
    hosts: ["registry.npmjs.org"]
EOF2
log=$SL_TMP/report-hosts.jsonl
sluice_run "$SL_TMP/report-hosts.yaml" "$log" --netns "/run/netns/$SL_NS_RUN" \
	--upstream "127.0.0.1:$SL_DNS_PORT" -- sh -c \
	'dig +short +time=2 +tries=1 static.rust-lang.org A; "$1" tcp 198.51.100.20 80' \
	sh "$SL_PROBE"
tap_check "report mode: an unlisted name resolves" grep -qx '198.51.100.20' "$SL_OUT"
assert_sink_saw "report mode: the connect to its address arrives" 'tcp 198.51.100.20 80'
tap_cmp "report mode: the dns line is a deny that was not enforced" \
	"$(log_count "$log" type=dns host=static.rust-lang.org decision=deny enforced=false rcode=NOERROR)" -ge 1
tap_cmp "report mode: the connect is logged as a would-be denial naming the host" \
	"$(log_count "$log" type=decision host=static.rust-lang.org decision=deny enforced=false)" -eq 1
tap_check "report mode: stderr says the name would be denied" \
	grep -q 'egress would be denied (report mode): static.rust-lang.org' "$SL_ERR"
assert_no_leftovers "report mode with names: nothing left"

tap_done
