#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# TCP connect enforcement (P1, P2): an allowed destination works, an unlisted one fails at once
# with EPERM (or the policy's deny_errno), nothing arrives at the test host, and the denial is in
# the log and on stderr with the request-access hint.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

CASE_REQ='https://tooling.example/egress/request?host={host}'
cat >"$SL_TMP/allow-one.yaml" <<EOF
default: deny
request_access: "$CASE_REQ"
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [80]
    protocols: [tcp]
EOF
cat >"$SL_TMP/refused.yaml" <<'EOF'
default: deny
deny_errno: ECONNREFUSED
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [80]
    protocols: [tcp]
EOF

CASE_POLICY=$SL_TMP/allow-one.yaml

# label                 mode  addr            port hook      rule
allowed=(
	"allowed-v4          tcp   198.51.100.10   80   connect4  test-host"
	"allowed-v6          tcp   2001:db8::10    80   connect6  test-host"
)
for c in "${allowed[@]}"; do
	read -r label mode addr port hook rule <<<"$c"
	probe_allowed "$label" "$mode" "$addr" "$port" "$hook" "$rule"
done

# label                 mode  addr            port errno  hook      rule
denied=(
	"P1-unlisted-v4      tcp   198.51.100.20   80   EPERM  connect4  default"
	"P2-unlisted-v6      tcp   2001:db8::20    80   EPERM  connect6  default"
	"wrong-port-v4       tcp   198.51.100.10   8080 EPERM  connect4  default"
	"wrong-port-v6       tcp   2001:db8::10    443  EPERM  connect6  default"
	"P1-other-net        tcp   203.0.113.7     80   EPERM  connect4  default"
)
for c in "${denied[@]}"; do
	read -r label mode addr port errno hook rule <<<"$c"
	probe_denied "$label" "$mode" "$addr" "$port" "$errno" "$hook" "$rule"
done

# A real client through the allowed rule.
sluice_run "$CASE_POLICY" "$SL_TMP/curl.log" -- \
	"${RUN_EXEC[@]}" curl -s --noproxy '*' --max-time 5 http://198.51.100.10/
assert_rc "curl: sluice exits with curl's status 0" 0
tap_is "curl: http://198.51.100.10/ answers ok through the run" "$(cat "$SL_OUT")" "ok"
assert_sink_saw "curl: the test host received the request" "tcp-accept 198.51.100.10 80"
assert_log "curl: log has the allow line with comm curl" "$SL_TMP/curl.log" +1 type=decision \
	dst=198.51.100.10 port=80 decision=allow rule=test-host comm=curl
assert_no_leftovers "curl: no cgroup or pins left"

# The log of a run: canonical JSON lines, log_start then run_start first, run_end (with the exit
# status) then the final signed checkpoint last.
sluice_run "$CASE_POLICY" "$SL_TMP/shape.log" -- \
	"${RUN_EXEC[@]}" "$SL_PROBE" tcp 198.51.100.20 80
tap_check "log: canonical, chained and signed, run_start first, sealed after run_end" \
	log_well_formed "$SL_TMP/shape.log"
assert_log "log: run_start names run_id and task" "$SL_TMP/shape.log" 1 type=run_start \
	"run_id=$SL_RUN_ID" task=selftest
assert_log "log: run_end has the exit status 1" "$SL_TMP/shape.log" 1 type=run_end \
	"run_id=$SL_RUN_ID" exit_status=1

# deny_errno: the policy picks the errno a denied connect gets.
CASE_POLICY=$SL_TMP/refused.yaml
CASE_REQ=
probe_denied "deny_errno-v4" tcp 198.51.100.20 80 ECONNREFUSED connect4 default
probe_denied "deny_errno-v6" tcp 2001:db8::20 80 ECONNREFUSED connect6 default
probe_allowed "deny_errno-allowed" tcp 198.51.100.10 80 connect4 test-host

tap_done
