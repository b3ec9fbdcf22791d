#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The systemd unit userspace/deploy/sluice.service (sluice(8) "Running it on a fleet"): systemd's
# own parser accepts it (systemd-analyze verify, on a copy whose ExecStart names the binary built
# here); every option of its ExecStart is one `sluice daemon --help` lists; the settings a
# restart and the socket depend on are there; and the daemon, started with exactly the unit's
# CapabilityBoundingSet and NoNewPrivileges (setpriv; systemd is not PID 1 here), attaches to a
# cgroup and enforces its policy: an allowed connection goes through, a denied one gets EPERM.
#
# Not tested here: the unit under a running systemd (its directories, restarts, the sandboxing
# settings systemd-analyze does not apply, RestrictAddressFamilies).

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

UNIT=$REPO/userspace/deploy/sluice.service
[[ -r $UNIT ]] || bail_out "missing $UNIT"

# unit_get KEY: the value of KEY in the unit (the last one, as systemd reads it).
unit_get() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }

require_root
require_sluice
topo_up

# ---------------------------------------------------------------------------------------------
# 1. systemd's parser

if ! command -v systemd-analyze >/dev/null; then
	tap_skip "systemd-analyze verify accepts the unit" "systemd-analyze not installed"
else
	mkdir -p "$SL_TMP/unit"
	sed "s|^ExecStart=/usr/local/sbin/sluice |ExecStart=$SLUICE |" "$UNIT" \
		>"$SL_TMP/unit/sluice.service"
	out=$(systemd-analyze verify "$SL_TMP/unit/sluice.service" 2>&1)
	rc=$?
	# any output is a warning: an unknown key, a bad value systemd would ignore
	if [[ $rc -eq 0 && -z $out ]]; then
		tap_ok "systemd-analyze verify accepts the unit, without a warning"
	else
		tap_fail "systemd-analyze verify accepts the unit, without a warning" \
			"exit status $rc: $out"
	fi
fi

# ---------------------------------------------------------------------------------------------
# 2. ExecStart against the daemon's --help

exec_start=$(unit_get ExecStart)
read -r -a argv <<<"$exec_start"
tap_is "ExecStart runs the installed binary's daemon command" "${argv[0]} ${argv[1]}" \
	"/usr/local/sbin/sluice daemon"
help=$("$SLUICE" daemon --help 2>&1)
missing=
for a in "${argv[@]:2}"; do
	[[ $a == -* ]] || continue
	grep -qE -- "(^|[[:space:],[])$a([[:space:]=]|]|$)" <<<"$help" || missing+=" $a"
done
tap_is "every ExecStart option is one sluice daemon --help lists" "${missing# }" ""
tap_cmp "ExecStart gives the daemon its options" "$(grep -o -- ' --' <<<"$exec_start" | wc -l)" \
	-ge 4

# ---------------------------------------------------------------------------------------------
# 3. What a restart and the socket depend on

tap_is "Restart=always" "$(unit_get Restart)" always
km=$(unit_get KillMode)
tap_is "the kill mode ends the daemon's own cgroup only (control-group, the default)" \
	"${km:-control-group}" control-group
tap_is "/run/sluice is a 0700 runtime directory" \
	"$(unit_get RuntimeDirectory) $(unit_get RuntimeDirectoryMode)" "sluice 0700"
tap_is "state and logs directories" "$(unit_get StateDirectory) $(unit_get LogsDirectory)" \
	"sluice sluice"
tap_is "ExecStart's socket, state and log directories are the unit's directories" \
	"$(grep -o -e '--socket /run/sluice/' -e '--state-dir /var/lib/sluice' \
		-e '--log-dir /var/log/sluice' <<<"$exec_start" | wc -l)" 3

# ---------------------------------------------------------------------------------------------
# 4. The daemon with the unit's capabilities and no more

caps=$(unit_get CapabilityBoundingSet)
bset=-all
for c in $caps; do
	c=${c#CAP_}
	bset+=",+${c,,}"
done
tap_cmp "the unit bounds the capabilities" "$(wc -w <<<"$caps")" -ge 1

policy=$SL_TMP/unit.yaml
cat >"$policy" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
EOF
D=$SL_TMP/daemon
mkdir -p "$D"
export SLUICE_SOCKET=$D/sluice.sock
setpriv --bounding-set "$bset" --no-new-privs -- "$SLUICE" daemon --socket "$SLUICE_SOCKET" \
	--state-dir "$D/state" --log-dir "$D/logs" >>"$D/out" 2>>"$D/err" </dev/null &
DPID=$!
sl_track_pid "$DPID"
up=0
for _ in $(seq $((200 * SL_SLOW))); do
	"$SLUICE" status >/dev/null 2>&1 && { up=1; break; }
	kill -0 "$DPID" 2>/dev/null || break
	sleep 0.05
done
if [[ $up -eq 1 ]]; then
	tap_ok "the daemon starts with the unit's bounding set ($caps) and no new privileges"
else
	tap_fail "the daemon starts with the unit's bounding set and no new privileges" \
		"$(tail -n 5 "$D/err")"
fi
tap_is "its effective capabilities are the bounding set" \
	"$(awk '/^CapEff/ { print $2 }' "/proc/$DPID/status" 2>/dev/null)" \
	"$(awk '/^CapBnd/ { print $2 }' "/proc/$DPID/status" 2>/dev/null)"

CG=$(sl_cgroup_new unit) || bail_out "cannot make the test cgroup"
RID=t-$SL_ID-unit
SL_RUNS+=("$RID")
out=$(sl_daemon_req --fd "/run/netns/$SL_NS_RUN" "{\"op\":\"attach\",\"run_id\":\"$RID\",\"cgroup\":\"$CG\",$(
	)\"policy\":\"$policy\",\"netns\":\"/run/netns/$SL_NS_RUN\"}")
if [[ $out == '{"ok":true'* ]]; then
	tap_ok "with those capabilities it attaches a run to a cgroup"
else
	tap_fail "with those capabilities it attaches a run to a cgroup" \
		"$out"$'\n'"$(tail -n 5 "$D/err")"
fi
tap_is "the run's allowed connection goes through" \
	"$(sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp 198.51.100.10 80)" ok
tap_is "the run's denied connection gets EPERM" \
	"$(sl_in_cgroup "$CG" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp 198.51.100.20 80 |
		cut -d' ' -f1-2)" "err EPERM"
"$SLUICE" detach --run-id "$RID" >/dev/null 2>&1
wait_until 10000 grep -q '"reason":"final"' "$D/logs/$RID.jsonl"
"$SLUICE" verify "$D/logs/$RID.jsonl" --key "$SLUICE_PUB" >/dev/null 2>&1
tap_is "its log verifies after the detach" "$?" 0
kill -TERM "$DPID" 2>/dev/null
wait "$DPID" 2>/dev/null

tap_done
