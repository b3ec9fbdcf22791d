#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sluice daemon's spares (--spares N): sets of a run's programs loaded and verified in advance,
# which an attach whose policy fits one takes instead of loading its own.
# - An attach takes a spare (the reply says so): a denied host is denied, an allowed one
#   reached, and the log verifies.
# - Two runs with different policies, both from spares: the address each learned for its name
#   opens nothing for the other, in both directions; neither reaches the other's CIDR.
# - A policy larger than a spare's maps is loaded afresh (the reply says why) and enforced.
# - A run taken from a spare after another spare's run ended sees nothing of it: the ended run's
#   learned address is denied to it, and nothing of the ended run is in its log.
# - SIGKILL of the daemon: the attached runs stay enforced; every program the daemon held that
#   no link ran (its spares) is gone with it, and nothing is pinned but the runs.
# - A run from a spare switches mode (sluice set-mode) and back, as any run.
# - A run's configuration (mode, default, …) is frozen before its first link, a switch's new
#   set's too: not even root, through the run's pinned map, can turn an enforcing run into a
#   reporting one (a switch, which the log records, is the only way).
# - Runs with a host side ("netns", as the OCI hook and attach --pid/--container ask) from
#   spares: the namespace's shared maps are put into the spare's slots at take. A denied host is
#   denied, also to a hand-built AF_PACKET frame no cgroup hook sees (the host side drops it), an
#   allowed host reached (frame and connection). A second such run in the same namespace keeps
#   its own allowlist, and each run's allowed traffic passes the other's host side (attributed
#   through the shared maps: with the slots empty the other's host side would drop it). After
#   SIGKILL the new daemon takes both over, and they enforce as before; the last one detached
#   removes the namespace's pins. (While they are attached, every frame of the namespace that
#   no run with a host side sent — the other runs' here — is judged by both host sides.)
# - Runs in a namespace with only loopback (no veth peer: no host side) are marked so at attach
#   and never join; after SIGKILL the new daemon takes such a run over (its log goes on and
#   verifies), and refuses one whose mark is gone (as a run killed before its host side would
#   be), which sluice detach then removes, pins and slot pin and all; so is a sluice run's run
#   killed before its host side (no log: nothing to take over).
# - --spares 0: attaches load their own, and enforce.
# - A daemon whose libbpf could not map global data (its one-time mmap probe failed: a shim makes
#   the probe's map creation fail with ENOMEM) takes runs over, attaches from a spare and
#   switches them: the loader never reads a loaded object's global data back.
#
# The daemon runs in the topology's run namespace (nsenter --net): the runs are attached there
# (the first without "netns", the host-side ones with it), and their resolvers listen there,
# beside the workloads. The upstream DNS server runs there too, on loopback.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

command -v dig >/dev/null || skip_all "dig not installed"
command -v dnsmasq >/dev/null || skip_all "dnsmasq not installed"

D=$SL_TMP/daemon
mkdir -p "$D"
export SLUICE_SOCKET=$D/sluice.sock
NETNS=/run/netns/$SL_NS_RUN

# attach RUN_ID CGROUP POLICY: prints the reply.
attach() {
	sl_daemon_req "{\"op\":\"attach\",\"run_id\":\"$1\",\"cgroup\":\"$2\",\"policy\":\"$3\",$(
		)\"upstream\":\"127.0.0.1:$UP_PORT\"}"
}

# attach_ns RUN_ID CGROUP POLICY: an attach with a host side in the run namespace.
attach_ns() {
	sl_daemon_req --fd "$NETNS" "{\"op\":\"attach\",\"run_id\":\"$1\",\"cgroup\":\"$2\",\"policy\":\"$3\",$(
		)\"netns\":\"$NETNS\",\"upstream\":\"127.0.0.1:$UP_PORT\"}"
}

# daemon_up [ARGS…]: the test's daemon, in the run namespace; waits until it answers.
daemon_up() {
	nsenter "--net=$NETNS" -- "$SLUICE" daemon --state-dir "$D/state" --log-dir "$D/logs" "$@" \
		>>"$D/out" 2>>"$D/err" </dev/null &
	DPID=$!
	sl_track_pid "$DPID"
	for _ in $(seq $((200 * SL_SLOW))); do
		"$SLUICE" status >/dev/null 2>&1 && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# spares_at_least N: wait until the daemon has N spares ready (loading one verifies every
# program: seconds on a loaded machine).
spares_at_least() {
	local out
	for _ in $(seq $((600 * SL_SLOW))); do
		out=$(sl_daemon_req '{"op":"ping"}')
		[[ $(sl_reply_field "$out" spares) -ge $1 ]] && return 0
		sleep 0.1
	done
	return 1
}

# in_cg CGROUP CMD…: CMD in the cgroup and the run namespace.
in_cg() {
	local cg=$1
	shift
	sl_in_cgroup "$cg" "${RUN_EXEC_NETONLY[@]}" "$@"
}

# probe CGROUP ADDR: "ok" or "err ERRNO" for a TCP connect to ADDR:80.
probe() { in_cg "$1" "$SL_PROBE" tcp "$2" 80 | cut -d' ' -f1-2; }

# resolve CGROUP NAME: the address the run's resolver answers (nothing if refused).
resolve() { in_cg "$1" dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 "$2" | grep -E '^[0-9.]+$'; }

# prog_ids PID: the ids of the BPF programs process PID holds an fd of.
prog_ids() {
	grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u
}

# attached_prog_ids: the programs something runs: a BPF link, or a clsact filter (the host side
# on kernels without tcx, before 6.6: no link) on a veth peer in the router's namespace, which
# bpftool gives as "id" where a tcx link's program has "prog_id".
attached_prog_ids() {
	{
		bpftool link show -j 2>/dev/null |
			python3 -c 'import json, sys
for l in json.load(sys.stdin):
    if "prog_id" in l:
        print(l["prog_id"])'
		in_rtr bpftool -j net show 2>/dev/null | python3 -c 'import json, sys
for dev in json.load(sys.stdin):
    for tc in dev.get("tc", []):
        print(tc.get("prog_id", tc.get("id")))'
	} | sort -u
}
# spares_left: how many of $spare_ids are still loaded; spares_gone: none is
spares_left() {
	local id n=0
	for id in $spare_ids; do
		bpftool prog show id "$id" >/dev/null 2>&1 && n=$((n + 1))
	done
	echo "$n"
}
# shellcheck disable=SC2317 # called through wait_until
spares_gone() { [[ $(spares_left) -eq 0 ]]; }

# --- the upstream DNS server, on the run namespace's loopback -------------------------------
UP_PORT=$(sl_free_port) || bail_out "no free port"
nsenter "--net=$NETNS" -- dnsmasq --no-daemon --conf-file=/dev/null --no-resolv --no-hosts \
	--no-poll --listen-address=127.0.0.1 --bind-interfaces --port="$UP_PORT" \
	--host-record=a.pool.example,198.51.100.10 --host-record=b.pool.example,198.51.100.20 \
	--host-record=c.pool.example,198.51.100.20 >"$SL_TMP/dnsmasq.out" 2>&1 </dev/null &
sl_track_pid $!
for _ in $(seq $((100 * SL_SLOW))); do
	nsenter "--net=$NETNS" -- dig +time=1 +tries=1 -p "$UP_PORT" @127.0.0.1 . SOA 2>/dev/null |
		grep -q 'status:' && break
	sleep 0.05
done

cat >"$SL_TMP/a.yaml" <<EOF
default: deny
rules:
  - name: a-host
    hosts: [a.pool.example]
    ports: [80]
EOF
cat >"$SL_TMP/b.yaml" <<EOF
default: deny
rules:
  - name: b-host
    hosts: [b.pool.example]
    ports: [80]
  - name: b-cidr
    cidrs: [203.0.113.7/32]
    ports: [80]
EOF
cat >"$SL_TMP/c.yaml" <<EOF
default: deny
rules:
  - name: c-host
    hosts: [c.pool.example]
    ports: [80]
EOF
# the host-side runs: N reaches X (TCP 80, UDP 9999), M reaches Y:80; neither the other's
cat >"$SL_TMP/n.yaml" <<EOF
default: deny
rules:
  - name: n-x
    cidrs: [198.51.100.10/32]
    ports: [80, 9999]
    protocols: [tcp, udp]
EOF
cat >"$SL_TMP/m.yaml" <<EOF
default: deny
rules:
  - name: m-y
    cidrs: [203.0.113.7/32]
    ports: [80]
EOF
# Hand-built UDP-in-IPv4 Ethernet frames to port 9999, sent on the sandbox's veth through
# AF_PACKET from outside every run's cgroup: only the host side sees them.
cat >"$SL_TMP/frames.py" <<'EOF2'
import socket, struct, sys

def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF

s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("veth0", 0))
src = s.getsockname()[4]
dst_mac = bytes.fromhex(sys.argv[1].replace(":", ""))
for dst in sys.argv[2:]:
    udp = struct.pack("!HHHH", 40000, 9999, 16, 0) + b"afpacket"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton("10.200.1.2"), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    s.send(dst_mac + src + b"\x08\x00" + ip + udp)
print("sent")
EOF2
# the namespace's shared maps' pins (loader.c NS_DIR_FMT)
NS_PINS=/sys/fs/bpf/sluice/netns@$(stat -L -c '%d-%i' "$NETNS")

# 300 rules: more than a spare's rule maps hold
{
	echo "default: deny"
	echo "rules:"
	for i in $(seq 1 299); do
		printf '  - name: r%d\n    cidrs: [10.99.%d.%d/32]\n    ports: [80]\n' \
			"$i" $((i / 256)) $((i % 256))
	done
	printf '  - name: big-cidr\n    cidrs: [203.0.113.7/32]\n    ports: [80]\n'
} >"$SL_TMP/big.yaml"

daemon_up --spares 2 || bail_out "the daemon did not start: $(tail -5 "$D/err")"
sl_on_exit "sl_stop_pid \$DPID"
spares_at_least 2 || bail_out "the daemon loaded no spares: $(tail -5 "$D/err")"
tap_ok "the daemon keeps 2 spares ready"

if ! { CG_A=$(sl_cgroup_new a) && CG_B=$(sl_cgroup_new b) && CG_C=$(sl_cgroup_new c) &&
	CG_BIG=$(sl_cgroup_new big) && CG_Z=$(sl_cgroup_new z) && CG_N=$(sl_cgroup_new n) &&
	CG_M=$(sl_cgroup_new m); }; then
	bail_out "cannot make the test cgroups"
fi
RA=t-$SL_ID-a RB=t-$SL_ID-b RC=t-$SL_ID-c RBIG=t-$SL_ID-big RZ=t-$SL_ID-z
RN=t-$SL_ID-n RM=t-$SL_ID-m
SL_RUNS+=("$RA" "$RB" "$RC" "$RBIG" "$RZ" "$RN" "$RM")

# --- one run from a spare --------------------------------------------------------------------
out=$(attach "$RA" "$CG_A" "$SL_TMP/a.yaml")
tap_is "run A is attached from a spare" \
	"$(sl_reply_field "$out" ok) $(sl_reply_field "$out" spare)" "true true"
[[ $(sl_reply_field "$out" spare) == true ]] || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
tap_diag "attach from a spare: $(sl_reply_field "$out" attach_ms) ms"
sink_mark
tap_is "run A resolves its name" "$(resolve "$CG_A" a.pool.example)" 198.51.100.10
tap_is "run A reaches its host" "$(probe "$CG_A" 198.51.100.10)" ok
tap_is "run A is denied another host" "$(probe "$CG_A" 198.51.100.20)" "err EPERM"
assert_sink_saw "run A's allowed connection arrived" "tcp 198.51.100.10 80" 1
tap_is "nothing arrived at the denied host" "$(sink_count 'tcp 198.51.100.20 80')" 0

# --- a second run from a spare, with another policy -------------------------------------------
spares_at_least 1 || tap_diag "no spare was refilled: $(tail -5 "$D/err")"
out=$(attach "$RB" "$CG_B" "$SL_TMP/b.yaml")
tap_is "run B is attached from a spare" \
	"$(sl_reply_field "$out" ok) $(sl_reply_field "$out" spare)" "true true"
[[ $(sl_reply_field "$out" spare) == true ]] || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
tap_is "run B resolves its name" "$(resolve "$CG_B" b.pool.example)" 198.51.100.20
tap_is "run A does not resolve run B's name" "$(resolve "$CG_A" b.pool.example)" ""
tap_is "run B does not reach the address run A learned" "$(probe "$CG_B" 198.51.100.10)" \
	"err EPERM"
tap_is "run A does not reach the address run B learned" "$(probe "$CG_A" 198.51.100.20)" \
	"err EPERM"
tap_is "run A does not reach run B's CIDR" "$(probe "$CG_A" 203.0.113.7)" "err EPERM"
tap_is "run B reaches its host and its CIDR" \
	"$(probe "$CG_B" 198.51.100.20) $(probe "$CG_B" 203.0.113.7)" "ok ok"
tap_is "run A still reaches its own host" "$(probe "$CG_A" 198.51.100.10)" ok

# --- a policy larger than a spare --------------------------------------------------------------
spares_at_least 1 || tap_diag "no spare was refilled: $(tail -5 "$D/err")"
out=$(attach "$RBIG" "$CG_BIG" "$SL_TMP/big.yaml")
tap_is "a 300-rule policy is attached with programs of its own" \
	"$(sl_reply_field "$out" ok) $(sl_reply_field "$out" spare)" "true false"
tap_check "… and the reply says why" grep -q "exceed a spare" <<<"$out"
tap_is "the large policy's run reaches its CIDR, not another" \
	"$(probe "$CG_BIG" 203.0.113.7) $(probe "$CG_BIG" 198.51.100.10)" "ok err EPERM"

# --- a switch of a run taken from a spare (a second set of its own, as for any run) ------------
out=$("$SLUICE" set-mode --run-id "$RB" report 2>&1)
tap_check "run B (from a spare) switches to report mode" test $? -eq 0 || tap_diag "$out"
tap_is "… and then reaches a host its policy does not list" "$(probe "$CG_B" 198.51.100.10)" ok
out=$("$SLUICE" set-mode --run-id "$RB" enforce 2>&1)
tap_is "… and back in enforce mode, is denied it again" "$(probe "$CG_B" 198.51.100.10)" \
	"err EPERM"

# --- the configuration is frozen -----------------------------------------------------------------
# cfg_report RUN: try to write mode=report (byte 14 of struct sl_cfg) through the run's pin;
# prints bpftool's exit status.
cfg_report() {
	local pin=/sys/fs/bpf/sluice/$1/map-cfg val
	val=$(bpftool -j map lookup pinned "$pin" key 0 0 0 0 | python3 -c 'import json, sys
v = json.load(sys.stdin)
v = v[0] if isinstance(v, list) else v
b = [int(x, 16) for x in v["value"]]
b[14] = 1
print(" ".join(str(x) for x in b))') || { echo "no lookup"; return; }
	# shellcheck disable=SC2086 # one word per byte
	bpftool map update pinned "$pin" key 0 0 0 0 value $val 2>/dev/null
	echo $?
}
if command -v bpftool >/dev/null; then
	tap_cmp "run A's configuration (attached from a spare) cannot be written" \
		"$(cfg_report "$RA")" -ne 0
	tap_cmp "run B's (switched twice: its third set) neither" "$(cfg_report "$RB")" -ne 0
	tap_is "… and both still deny" \
		"$(probe "$CG_A" 198.51.100.20) $(probe "$CG_B" 198.51.100.10)" "err EPERM err EPERM"
else
	tap_skip "the configuration is frozen" "bpftool not installed"
fi

# --- a run from a spare after a run from a spare ended ----------------------------------------
"$SLUICE" detach --run-id "$RA" >/dev/null
LA=$D/logs/$RA.jsonl
out=$("$SLUICE" verify "$LA" --key "$SLUICE_PUB" 2>&1)
tap_check "run A's log verifies" test $? -eq 0
[[ $out == *"OK: intact and complete"* ]] || tap_diag "$out"
tap_cmp "run A's log holds its allow" "$(log_count "$LA" type=decision decision=allow)" -ge 1
tap_cmp "run A's log holds its denials" "$(log_count "$LA" type=decision decision=deny)" -ge 2
spares_at_least 1 || tap_diag "no spare was refilled: $(tail -5 "$D/err")"
out=$(attach "$RC" "$CG_C" "$SL_TMP/c.yaml")
tap_is "run C is attached from a spare after run A ended" \
	"$(sl_reply_field "$out" ok) $(sl_reply_field "$out" spare)" "true true"
tap_is "run C does not reach the address ended run A learned" "$(probe "$CG_C" 198.51.100.10)" \
	"err EPERM"
tap_is "run C does not reach the address live run B learned" "$(probe "$CG_C" 198.51.100.20)" \
	"err EPERM"
# (c.pool.example is B's address: C reaches it once its own resolver has answered it)
tap_is "run C resolves its own name and reaches it" \
	"$(resolve "$CG_C" c.pool.example) $(probe "$CG_C" 198.51.100.20)" "198.51.100.20 ok"
LC=$D/logs/$RC.jsonl
tap_is "run C's log names no host of another run" \
	"$(grep -c -e a.pool.example -e b.pool.example -e "$RA" -e "$RB" "$LC")" 0

# --- runs with a host side (netns) from spares -------------------------------------------------
spares_at_least 1 || tap_diag "no spare was refilled: $(tail -5 "$D/err")"
out=$(attach_ns "$RN" "$CG_N" "$SL_TMP/n.yaml")
tap_is "a run with a host side (netns) is attached from a spare" \
	"$(sl_reply_field "$out" ok) $(sl_reply_field "$out" spare)" "true true"
[[ $(sl_reply_field "$out" spare) == true ]] || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
tap_diag "netns attach from a spare: $(sl_reply_field "$out" attach_ms) ms"
tap_check "… and its namespace's runs map is pinned, no flow map (alone there)" \
	test -e "$NS_PINS/runs" -a ! -e "$NS_PINS/flows"
tap_cmp "… and its host-side program is on the veth peer" \
	"$(in_rtr bpftool net show dev vrun 2>/dev/null | grep -c sl_tc)" -ge 1
sink_mark
tap_is "run N reaches its host and is denied another" \
	"$(probe "$CG_N" 198.51.100.10) $(probe "$CG_N" 203.0.113.7)" "ok err EPERM"
rtr_mac=$(in_rtr cat /sys/class/net/vrun/address)
tap_is "an AF_PACKET sender beside run N sends its frames" \
	"$(in_run python3 "$SL_TMP/frames.py" "$rtr_mac" 198.51.100.10 203.0.113.7 2>&1)" sent
sink_wait 'udp 198.51.100.10 9999' 1 2000
assert_sink_saw "the frame to run N's allowed host arrives" 'udp 198.51.100.10 9999'
assert_sink_none "the frame to a host run N denies is dropped by its host side" 'udp 203.0.113.7'
LN=$D/logs/$RN.jsonl
tap_cmp "run N's log has the host side's denial of that frame" \
	"$(log_count "$LN" type=decision hook=tc dst=203.0.113.7 port=9999 enforced=true)" -eq 1

spares_at_least 1 || tap_diag "no spare was refilled: $(tail -5 "$D/err")"
out=$(attach_ns "$RM" "$CG_M" "$SL_TMP/m.yaml")
tap_is "a second run in the same namespace is attached from a spare" \
	"$(sl_reply_field "$out" ok) $(sl_reply_field "$out" spare)" "true true"
[[ $(sl_reply_field "$out" spare) == true ]] || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
tap_check "… and the namespace's flow map is pinned (two runs there)" test -e "$NS_PINS/flows"
# each run's allowed connection passes the other run's host side only if attributed to it
sink_mark
tap_is "run N still reaches its host (past run M's host side), not M's" \
	"$(probe "$CG_N" 198.51.100.10) $(probe "$CG_N" 203.0.113.7)" "ok err EPERM"
tap_is "run M reaches its host (past run N's host side), not N's" \
	"$(probe "$CG_M" 203.0.113.7) $(probe "$CG_M" 198.51.100.10)" "ok err EPERM"
assert_sink_saw "both allowed connections arrived" "tcp 198.51.100.10 80" 1
assert_sink_saw "… run M's too" "tcp 203.0.113.7 80" 1

# --- runs in a namespace with no veth peer (only loopback) -------------------------------------
# Such a run has no host side and deliberately never joins the namespace's runs; it is marked so
# at attach (ns-no-host-side), and a take-over adopts it. Run K's mark is replaced below by
# run L's: it then looks like a run killed between its cgroup links and its host side with a
# forged mark, which is refused.
LONS=sl-lo-$SL_ID
ip netns add "$LONS" || bail_out "cannot make netns $LONS"
sl_on_exit "ip netns del $LONS"
ip -n "$LONS" link set lo up
LO_PINS=/sys/fs/bpf/sluice/netns@$(stat -L -c '%d-%i' "/run/netns/$LONS")
sl_on_exit "rm -rf -- '$LO_PINS'"
if ! { CG_L=$(sl_cgroup_new l) && CG_K=$(sl_cgroup_new k); }; then
	bail_out "cannot make the test cgroups"
fi
RL=t-$SL_ID-l RK=t-$SL_ID-k
SL_RUNS+=("$RL" "$RK")
for r in "$RL:$CG_L" "$RK:$CG_K"; do
	out=$(sl_daemon_req --fd "/run/netns/$LONS" "{\"op\":\"attach\",\"run_id\":\"${r%%:*}\",\"cgroup\":\"${r#*:}\",$(
		)\"policy\":\"$SL_TMP/n.yaml\",\"netns\":\"/run/netns/$LONS\",$(
		)\"upstream\":\"127.0.0.1:$UP_PORT\"}")
	tap_is "a run in a namespace with only loopback is attached (${r%%:*})" \
		"$(sl_reply_field "$out" ok)" true || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
done
tap_check "… marked as having no host side, its token not in the namespace's runs" \
	test -e "/sys/fs/bpf/sluice/$RL/ns-no-host-side" -a -e "$LO_PINS/runs" -a \
	"$(bpftool -j map dump pinned "$LO_PINS/runs" 2>/dev/null | tr -d '[] \n')" == ""
# a switch replaces the run's configuration map: its mark (a second pin of the run's event ring,
# which every set shares) must still be its own at the take-over below
out=$("$SLUICE" set-mode --run-id "$RL" enforce 2>&1)
tap_check "run L (no host side, marked so) switches (set-mode enforce: a new generation) ($out)" test $? -eq 0

# --- SIGKILL of the daemon ----------------------------------------------------------------------
spares_at_least 2 || tap_diag "the spares were not refilled: $(tail -5 "$D/err")"
held=$(prog_ids "$DPID")
attached=$(attached_prog_ids)
spare_ids=$(comm -23 <(echo "$held") <(echo "$attached"))
tap_cmp "the daemon holds programs no link runs (its spares)" "$(wc -w <<<"$spare_ids")" -ge 28
sl_kill_wait "$DPID"
# (bounded in time, not in rounds: a round asks bpftool about every spare program, and under
# emulation hundreds of rounds would take an hour)
wait_until 10000 spares_gone
tap_is "after SIGKILL, no program of the spares is left" "$(spares_left)" 0
others=$(find /sys/fs/bpf/sluice -maxdepth 1 -name "t-$SL_ID-*" -printf '%f\n' | sort |
	grep -vx -e "$RB" -e "$RC" -e "$RBIG" -e "$RN" -e "$RM" -e "$RL" -e "$RK")
tap_is "nothing of this daemon is pinned but its runs" "$others" ""
tap_is "with the daemon dead, run B's denial holds" "$(probe "$CG_B" 198.51.100.10)" \
	"err EPERM"
tap_is "… and run C's" "$(probe "$CG_C" 198.51.100.10)" "err EPERM"
tap_is "… and runs N and M (host side) keep their allowlists" \
	"$(probe "$CG_N" 198.51.100.10) $(probe "$CG_N" 203.0.113.7) $(probe "$CG_M" 203.0.113.7)" \
	"ok err EPERM ok"

# run K as a run killed between its cgroup links and its host side would be (no mark of its
# own), with a forged one: another run's mark (run L's event ring under that name)
rm -f "/sys/fs/bpf/sluice/$RK/ns-no-host-side"
bpftool map pin pinned "/sys/fs/bpf/sluice/$RL/map-events" "/sys/fs/bpf/sluice/$RK/ns-no-host-side"

# --- --spares 0 ---------------------------------------------------------------------------------
daemon_up --spares 0 || bail_out "the daemon did not restart: $(tail -5 "$D/err")"
out=$(sl_daemon_req '{"op":"ping"}')
tap_is "with --spares 0 the daemon keeps none" \
	"$(sl_reply_field "$out" spares) $(sl_reply_field "$out" spares_wanted)" "0 0"
tap_check "the new daemon took the runs over" test "$(grep -c 'took over run t-' "$D/err")" -eq 6
tap_check "… run L (no host side, marked so) among them" grep -q "took over run $RL " "$D/err"
tap_check "… not run K (no host side, no mark of its own: as if killed before its host side)" \
	grep -q "take over run $RK: .*no mark" "$D/err"
tap_check "sluice status shows run L" grep -q "\"run_id\":\"$RL\"" <<<"$("$SLUICE" status --json)"
tap_is "runs L and K, taken over or not, still deny" \
	"$(sl_in_cgroup "$CG_L" nsenter --net="/run/netns/$LONS" "$SL_PROBE" tcp 198.51.100.20 80 |
		cut -d' ' -f1-2) $(sl_in_cgroup "$CG_K" nsenter --net="/run/netns/$LONS" \
		"$SL_PROBE" tcp 198.51.100.20 80 | cut -d' ' -f1-2)" "err EPERM err EPERM"
out=$("$SLUICE" detach --run-id "$RK" 2>&1)
tap_check "sluice detach removes run K, which no writer took over" \
	test ! -e "/sys/fs/bpf/sluice/$RK" ||
	tap_diag "$out"$'\n'"$(tail -3 "$D/err")"
# (loader_purge's loader once closed its caller's descriptor 0, then reused by the next open)
tap_is "… and the daemon's descriptor 0 is still its /dev/null" "$(readlink "/proc/$DPID/fd/0")" \
	/dev/null
tap_is "… its programs are detached (run K's cgroup reaches the namespace's loopback)" \
	"$(sl_in_cgroup "$CG_K" nsenter --net="/run/netns/$LONS" "$SL_PROBE" tcp 198.51.100.20 80 |
		cut -d' ' -f1-2)" "err ENETUNREACH"
# a sluice run's run killed before its host side (no log, no writer to take it over)
SLUICE_SELFTEST_KILL=before-tc sluice_start "$SL_TMP/n.yaml" "$SL_TMP/kt.jsonl" \
	--netns "/run/netns/$LONS" -- true
kt_id=$SL_RUN_ID
{ wait "$SL_RUN_PID"; } 2>/dev/null # (no "Killed" notice: the kill is the test)
out=$("$SLUICE" detach --run-id "$kt_id" 2>&1)
tap_check "sluice detach removes a sluice run's run killed before its host side" \
	test ! -e "/sys/fs/bpf/sluice/$kt_id" || tap_diag "$out"
rmdir "$(cg2_mount)/sluice/$kt_id" 2>/dev/null
# (no token was ever there: the runs map goes with run K, as with a last run out)
tap_is "… and of the namespace's pins only run L's slot is left" \
	"$(find "$LO_PINS" -mindepth 1 -printf '%f\n' | sed 's/^slot-.*/slot/' | tr '\n' ' ')" "slot "
wait_until 5000 grep -qs "\"type\":\"writer_restart\"" "$D/logs/$RL.jsonl"
tap_cmp "run L's log goes on with writer_restart" "$(log_count "$D/logs/$RL.jsonl" type=writer_restart)" -eq 1
"$SLUICE" detach --run-id "$RL" >/dev/null 2>&1
out=$("$SLUICE" verify "$D/logs/$RL.jsonl" --key "$SLUICE_PUB" 2>&1)
tap_check "run L's log verifies, detached by the new daemon" test $? -eq 0 || tap_diag "$out"
tap_check "… and the namespace's pins are gone with it" test ! -e "$LO_PINS"
tap_is "runs N and M (host side), taken over, keep their allowlists" \
	"$(probe "$CG_N" 198.51.100.10) $(probe "$CG_N" 203.0.113.7) $(probe "$CG_M" 203.0.113.7)" \
	"ok err EPERM ok"
"$SLUICE" detach --run-id "$RN" >/dev/null 2>&1
tap_check "with run M still attached, the namespace's runs map stays, the flow map goes" \
	test -e "$NS_PINS/runs" -a ! -e "$NS_PINS/flows"
tap_is "run M, alone in the namespace, still reaches its host" "$(probe "$CG_M" 203.0.113.7)" ok
"$SLUICE" detach --run-id "$RM" >/dev/null 2>&1
tap_check "the last run out removed the namespace's maps" test ! -e "$NS_PINS"
# (with no host side left: the other runs' frames are no longer judged by N's and M's)
tap_is "run B's CIDR is still allowed" "$(probe "$CG_B" 203.0.113.7)" ok
out=$(attach "$RZ" "$CG_Z" "$SL_TMP/a.yaml")
tap_is "with --spares 0 an attach loads its own programs" \
	"$(sl_reply_field "$out" ok) $(sl_reply_field "$out" spare)" "true false"
got="$(resolve "$CG_Z" a.pool.example) $(probe "$CG_Z" 198.51.100.10)"
got+=" $(probe "$CG_Z" 198.51.100.20)"
tap_is "… and enforces: its name reached, another host denied" "$got" "198.51.100.10 ok err EPERM"
out=$("$SLUICE" daemon --spares 17 2>&1)
tap_check "--spares beyond 16 is refused, saying why" grep -q "want a number from 0 to 16" <<<"$out"

# --- a daemon whose libbpf has no mapped global data ----------------------------------------------
# libbpf probes once per process whether array maps can be mmapped; when that probe fails (a
# passing ENOMEM), global data stays unmapped for the process's life and the skeleton's pointers
# to it are NULL. The shim fails only the probe's map.
SHIM=$SL_TMP/nommap.so
cat >"$SL_TMP/nommap.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/bpf.h>

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	union bpf_attr *attr;
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	attr = (union bpf_attr *)a[1];
	if (nr == SYS_bpf && a[0] == BPF_MAP_CREATE && !strcmp(attr->map_name, "libbpf_mmap")) {
		errno = ENOMEM;
		return -1;
	}
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
EOF
if gcc -shared -fPIC -o "$SHIM" "$SL_TMP/nommap.c" -ldl 2>"$SL_TMP/shim.err"; then
	sl_stop_pid "$DPID"
	before=$(grep -c 'took over run t-' "$D/err")
	pinned=$(find /sys/fs/bpf/sluice -maxdepth 1 -name "t-$SL_ID-*" | wc -l)
	LD_PRELOAD=$SHIM daemon_up --spares 1 ||
		bail_out "the shimmed daemon did not start: $(tail -5 "$D/err")"
	tap_is "with no mapped global data, the daemon takes every run over" \
		"$(($(grep -c 'took over run t-' "$D/err") - before))" "$pinned"
	spares_at_least 1 || tap_diag "no spare: $(tail -5 "$D/err")"
	RS=t-$SL_ID-shim
	SL_RUNS+=("$RS")
	CG_S=$(sl_cgroup_new shim) || bail_out "cannot make the test cgroup"
	sl_on_exit "sl_cgroup_remove '$CG_S'"
	out=$(attach "$RS" "$CG_S" "$SL_TMP/a.yaml")
	tap_is "… attaches a run from a spare" \
		"$(sl_reply_field "$out" ok) $(sl_reply_field "$out" spare)" "true true"
	out=$("$SLUICE" set-mode --run-id "$RS" report 2>&1)
	tap_check "… switches it to report mode" test $? -eq 0 || tap_diag "$out"
	tap_is "… where it reaches a host its policy does not list" \
		"$(probe "$CG_S" 198.51.100.20)" ok
	out=$("$SLUICE" set-mode --run-id "$RS" enforce 2>&1)
	tap_is "… and back in enforce mode it is denied it" "$(probe "$CG_S" 198.51.100.20)" \
		"err EPERM"
	tap_check "… and the daemon is still serving" kill -0 "$DPID"
	"$SLUICE" detach --run-id "$RS" >/dev/null 2>&1
	"$SLUICE" verify "$D/logs/$RS.jsonl" --key "$SLUICE_PUB" >/dev/null 2>&1
	tap_is "… and its log verifies" "$?" 0
else
	tap_skip "a daemon whose libbpf has no mapped global data" \
		"cannot build the shim: $(head -1 "$SL_TMP/shim.err")"
fi

for r in "$RB" "$RC" "$RBIG" "$RZ"; do
	"$SLUICE" detach --run-id "$r" >/dev/null 2>&1
done
bad=
for r in "$RB" "$RC" "$RBIG" "$RZ" "$RN" "$RS"; do
	"$SLUICE" verify "$D/logs/$r.jsonl" --key "$SLUICE_PUB" >/dev/null 2>&1 || bad+=" $r"
done
tap_is "every run's log verifies" "$bad" ""
tap_is "no run is left pinned" \
	"$(find /sys/fs/bpf/sluice -maxdepth 1 -name "t-$SL_ID-*" | wc -l)" 0

tap_done
