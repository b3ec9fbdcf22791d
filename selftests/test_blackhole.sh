#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The fixed blackhole (P4, P5, P6): 169.254.0.0/16, fe80::/10, fd00:ec2::/32 and the IPv4-mapped
# and NAT64 forms of the v4 range are denied even when the policy allows 0.0.0.0/0 and ::/0, even
# with "default: allow", and even in report mode. Every probe target is owned by a test host (the
# link-local one by the router), so a probe sluice fails to stop shows up in a sink log; the
# controls in the same policy prove the policy does let other traffic through.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

cat >"$SL_TMP/everything.yaml" <<'EOF'
default: deny
rules:
  - name: everything
    cidrs: ["0.0.0.0/0", "::/0"]
EOF
cat >"$SL_TMP/default-allow.yaml" <<'EOF'
default: allow
EOF
cat >"$SL_TMP/report.yaml" <<'EOF'
default: deny
mode: report
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
EOF
cat >"$SL_TMP/enforce.yaml" <<'EOF'
default: deny
mode: enforce
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
EOF
cat >"$SL_TMP/lists-metadata.yaml" <<'EOF'
default: deny
rules:
  - name: metadata
    cidrs: ["169.254.169.254/32"]
EOF

MD=169.254.169.254

# label           mode          addr                port hook      rule       v4
controls=(
	"control-v4      tcp           203.0.113.7         80   connect4  everything"
	"control-v4-udp  udp-sendto    203.0.113.7         9999 sendmsg4  everything"
	"control-v6      tcp           2001:db8::20        80   connect6  everything"
	"control-mapped  tcp           ::ffff:203.0.113.7  80   connect6  everything 203.0.113.7"
)
# Unconnected UDP to a v4-mapped address is handed by udpv6_sendmsg() to udp_sendmsg(), which
# runs only the sendmsg4 programs, with the IPv4 address: hence sendmsg4 for P5-udp*.
# label             mode          addr                   port hook      v4
blackholed=(
	"P4-tcp            tcp           $MD                    80   connect4"
	"P4-tcp-8080       tcp           $MD                    8080 connect4"
	"P4-udp            udp-sendto    $MD                    53   sendmsg4"
	"P4-udp-sendmmsg   udp-sendmmsg  $MD                    9999 sendmsg4"
	"P4-udp-connect    udp-connect   $MD                    53   connect4"
	"P5-tcp            tcp           ::ffff:$MD             80   connect6  $MD"
	"P5-udp            udp-sendto    ::ffff:$MD             53   sendmsg4  $MD"
	"P5-udp-sendmsg    udp-sendmsg   ::ffff:$MD             9999 sendmsg4  $MD"
	"P5-udp-connect    udp-connect   ::ffff:$MD             53   connect6  $MD"
	"P6-nat64-tcp      tcp           64:ff9b::a9fe:a9fe     80   connect6  $MD"
	"P6-nat64-udp      udp-sendto    64:ff9b::a9fe:a9fe     53   sendmsg6  $MD"
	"P6-ec2-tcp        tcp           fd00:ec2::254          80   connect6"
	"P6-ec2-udp        udp-sendto    fd00:ec2::254          53   sendmsg6"
	"P6-linklocal-tcp  tcp           $SL_RTR_LL%$SL_RUN_IF  80   connect6"
	"P6-linklocal-udp  udp-sendto    $SL_RTR_LL%$SL_RUN_IF  9999 sendmsg6"
	"P6-6to4-tcp       tcp           2002:a9fe:a9fe::1      80   connect6  $MD"
	"P6-siit-tcp       tcp           ::ffff:0:a9fe:a9fe     80   connect6  $MD"
	"P6-nat64-any-tcp  tcp           64:ff9b::ffff:a9fe:a9fe 80  connect6  $MD"
)

CASE_POLICY=$SL_TMP/everything.yaml
for c in "${controls[@]}"; do
	read -r label mode addr port hook rule v4 <<<"$c"
	probe_allowed "0/0: $label" "$mode" "$addr" "$port" "$hook" "$rule" "$v4"
done
for c in "${blackholed[@]}"; do
	read -r label mode addr port hook v4 <<<"$c"
	probe_denied "0/0: $label" "$mode" "$addr" "$port" EPERM "$hook" blackhole "$v4"
done

# An IPv4 host behind a relay (6to4, Teredo, local-use NAT64) is not what ::/0 speaks for.
relayed=(
	"relay-6to4        2002:cb00:7107::1"
	"relay-teredo      2001:0:cb00:7107::1"
	"relay-nat64-local 64:ff9b:1::cb00:7107"
)
for c in "${relayed[@]}"; do
	read -r label addr <<<"$c"
	probe_denied "0/0: $label" tcp "$addr" 80 EPERM connect6 default
done

# "default: allow" does not open the blackhole either.
CASE_POLICY=$SL_TMP/default-allow.yaml
probe_allowed "default-allow: control" tcp 203.0.113.7 80 connect4 default
for c in "${blackholed[@]}"; do
	read -r label mode addr port hook v4 <<<"$c"
	case $label in
	P4-tcp | P5-udp | P6-nat64-tcp | P6-ec2-udp | P6-linklocal-tcp) ;;
	*) continue ;;
	esac
	probe_denied "default-allow: $label" "$mode" "$addr" "$port" EPERM "$hook" blackhole "$v4"
done

# Report mode logs instead of denying, but the blackhole is still enforced; both in one run, so
# the run itself shows report mode is in effect. Once by policy, once by --mode report.
report_run() {
	local label=$1 policy=$2 unlisted=203.0.113.7 ids
	shift 2
	# shellcheck disable=SC2016 # expanded by the inner sh
	sluice_run "$policy" "$SL_TMP/$label.log" "$@" -- "${RUN_EXEC[@]}" sh -c '
		"$1" tcp "$2" 80
		"$1" tcp 169.254.169.254 80
		"$1" udp-sendto 169.254.169.254 53
		"$1" tcp ::ffff:169.254.169.254 80
		"$1" tcp fe80::1%veth0 80' sh "$SL_PROBE" "$unlisted"
	tap_is "$label: unlisted passes, the four blackholed probes fail at once" \
		"$(sed -E 's/ [0-9]+$//' "$SL_OUT" | tr '\n' ' ')" \
		"ok err EPERM err EPERM err EPERM err EPERM "
	assert_rc "$label: sluice exits with the last probe's status 1" 1
	assert_sink_saw "$label: the unlisted host received its connection" "tcp $unlisted 80"
	assert_sink_none "$label: nothing reaches the metadata server or the router" \
		"tcp-accept $MD 80" "udp $MD 53" "tcp-accept fe80::1 80"
	assert_log "$label: the unlisted host is a deny not enforced" "$SL_TMP/$label.log" 1 \
		type=decision dst=$unlisted port=80 decision=deny enforced=false rule=default
	assert_log "$label: blackhole connect4 is enforced" "$SL_TMP/$label.log" 1 \
		type=decision dst=$MD port=80 decision=deny enforced=true rule=blackhole \
		hook=connect4
	assert_log "$label: blackhole sendmsg4 is enforced" "$SL_TMP/$label.log" 1 \
		type=decision dst=$MD port=53 decision=deny enforced=true rule=blackhole \
		hook=sendmsg4
	assert_log "$label: blackhole v4-mapped is enforced" "$SL_TMP/$label.log" 1 \
		type=decision "dst=::ffff:$MD" dst_v4=$MD port=80 decision=deny enforced=true \
		rule=blackhole hook=connect6
	assert_log "$label: blackhole link-local is enforced" "$SL_TMP/$label.log" 1 \
		type=decision dst=fe80::1 port=80 decision=deny enforced=true rule=blackhole \
		hook=connect6
	ids="run_id=$SL_RUN_ID task=selftest"
	assert_stderr "$label: stderr shows the report-mode line for the unlisted host" \
		"egress would be denied (report mode): $unlisted:80/tcp (rule: default) $ids"
	assert_stderr "$label: stderr shows the enforced blackhole denial" \
		"egress denied: $MD:80/tcp (rule: blackhole) $ids"
	assert_no_leftovers "$label: no cgroup or pins left"
}
report_run report-by-policy "$SL_TMP/report.yaml"
report_run report-by-flag "$SL_TMP/enforce.yaml" --mode report

# The blackhole is not a policy entry: a policy that lists it is refused, and nothing runs.
sluice_run "$SL_TMP/lists-metadata.yaml" "$SL_TMP/lists-metadata.log" -- \
	"${RUN_EXEC[@]}" "$SL_PROBE" tcp $MD 80
tap_cmp "policy listing 169.254.169.254/32: sluice refuses it (exit status != 0)" "$SL_RC" -ne 0
tap_is "policy listing 169.254.169.254/32: the command does not run" "$(cat "$SL_OUT")" ""
assert_sink_none "policy listing 169.254.169.254/32: nothing arrives" "tcp-accept $MD 80"
if grep -q 'lists-metadata.yaml' "$SL_ERR"; then
	tap_ok "policy listing 169.254.169.254/32: the error names the policy file"
else
	tap_fail "policy listing 169.254.169.254/32: the error names the policy file" \
		"expected lists-metadata.yaml in stderr, got: $(head -c 500 "$SL_ERR")"
fi
assert_no_leftovers "policy listing 169.254.169.254/32: no cgroup or pins left"

tap_done
