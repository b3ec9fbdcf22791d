#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sluice daemon: the per-host agent that attaches runs to cgroups other software made.
# - One daemon per host: a second one on the same state directory, or on the same socket, is
#   refused and says who has it.
# - The socket: a client that is not root is refused (checked by the kernel's peer credentials,
#   with the socket's mode opened up so that only the check stands between); descriptors sent
#   with requests (3 at a time) are all closed; malformed,
#   truncated, oversized, unknown and ill-typed requests are answered with an error that says
#   where, and the daemon goes on serving.
# - Two runs with different policies, attached to two cgroups the test made, in the test
#   topology's run namespace: each run's allowed host is reached, the other run's is not; each
#   run's resolver answers its own names only, and an address learned by one run does not open
#   anything for the other; each log holds only its own run's lines and verifies.
# - An overlapping cgroup, or a run id in use, is refused.
# - SIGKILL of the daemon mid-run: denials still hold and names fail closed while no daemon
#   lives; a new daemon takes the run over, its log continues with the restart declared and the
#   denial made meanwhile (from the run's ring buffer, with its own time); the
#   run ends when its cgroup is removed, sealed, and sluice verify says intact. The run taken
#   over switches (set-mode report, enforce, replace-policy) like one the daemon attached.
# - sluice detach ends a run: sealed log, pins gone; the cgroup's processes live on.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

command -v dig >/dev/null || skip_all "dig not installed"

# ping_ok: the daemon still answers.
ping_ok() { [[ $(sl_daemon_req '{"op":"ping"}') == '{"ok":true,'* ]]; }

# attach RUN_ID CGROUP POLICY [MEMBER…]: attach through the socket; prints the reply.
attach() {
	local id=$1 cg=$2 pol=$3 extra='' fd=()
	shift 3
	for kv in "$@"; do
		extra+=",$kv"
		# the namespace itself goes with the request, as sluice attach sends it
		[[ $kv == '"netns":"'* ]] && fd=(--fd "${kv:9:${#kv}-10}")
	done
	sl_daemon_req "${fd[@]}" "{\"op\":\"attach\",\"run_id\":\"$id\",\"cgroup\":\"$cg\",\"policy\":\"$pol\"$extra}"
}

# in_cg CGROUP CMD…: CMD in the cgroup and the run namespace.
in_cg() {
	local cg=$1
	shift
	sl_in_cgroup "$cg" "${RUN_EXEC_NETONLY[@]}" "$@"
}

dns_upstream_start upstream --host-record=a.daemon.example,198.51.100.10 \
	--host-record=b.daemon.example,198.51.100.20 || bail_out "cannot start dnsmasq"
sl_on_exit dns_upstream_stop

D=$SL_TMP/daemon
sl_daemon_start || bail_out "the daemon did not start: $(cat "$D/err" 2>/dev/null)"
sl_on_exit "sl_daemon_kill TERM"

# --- one daemon per host ---------------------------------------------------------------------
out=$("$SLUICE" daemon --state-dir "$D/state" --log-dir "$D/logs" 2>&1)
rc=$?
if [[ $rc -ne 0 && $out == *"one daemon per host"* ]]; then
	tap_ok "a second daemon on the same state directory is refused"
else
	tap_fail "a second daemon on the same state directory is refused" "rc $rc: $out"
fi
out=$("$SLUICE" daemon --state-dir "$SL_TMP/other-state" 2>&1)
rc=$?
if [[ $rc -ne 0 && $out == *"one daemon per host"* && $out == *"$SLUICE_SOCKET"* ]]; then
	tap_ok "a second daemon on the same socket is refused"
else
	tap_fail "a second daemon on the same socket is refused" "rc $rc: $out"
fi
tap_check "the first daemon still answers" ping_ok

cat >"$SL_TMP/a.yaml" <<EOF
default: deny
rules:
  - name: a-host
    hosts: [a.daemon.example]
    ports: [80]
EOF
cat >"$SL_TMP/b.yaml" <<EOF
default: deny
rules:
  - name: b-host
    hosts: [b.daemon.example]
    ports: [80]
  - name: b-cidr
    cidrs: [203.0.113.7/32]
    ports: [80]
EOF

# --- the socket ------------------------------------------------------------------------------
tap_is "the socket is root's alone (mode 0600)" "$(stat -c %a "$SLUICE_SOCKET")" 600
chmod 0666 "$SLUICE_SOCKET"
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 \
	"$SL_LIB_DIR/tools/sl_daemon_req.py" "$SLUICE_SOCKET" $'{"op":"status"}\n' 10 2>&1)
chmod 0600 "$SLUICE_SOCKET"
if [[ $out == *'"ok":false'*'root only'* ]]; then
	tap_ok "a client that is not root is refused by its peer credentials"
else
	tap_fail "a client that is not root is refused by its peer credentials" "got: $out"
fi

# Descriptors sent with a request (SCM_RIGHTS; one is ever expected, with run_started) are all
# closed by the daemon: 20 requests carrying 3 each leave its table as it was.
fd_count() { find "/proc/$SL_DAEMON_PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
fds_send='import array, os, socket, sys
for i in range(20):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    nul = [os.open("/dev/null", os.O_RDONLY) for _ in range(3)]
    s.sendmsg([b"{\"op\":\"ping\"}\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", nul))])
    s.makefile("rb").readline()
    for f in nul:
        os.close(f)
    s.close()'
# the count is taken with the spare pool full: a spare still loading adds its maps' and
# programs' descriptors meanwhile (minutes under emulation), which is no leak
spares_full() {
	local out
	out=$(sl_daemon_req '{"op":"ping"}')
	[[ -n $(sl_reply_field "$out" spares) &&
		$(sl_reply_field "$out" spares) == "$(sl_reply_field "$out" spares_wanted)" ]]
}
wait_until 300000 spares_full || tap_diag "the spare pool did not fill; the count may include a load"
ping_ok
fds_before=$(fd_count)
python3 -c "$fds_send" "$SLUICE_SOCKET"
# the daemon notices the last clients' ends on its next turns; 40 leaked would never go
fds_back() { [[ $(fd_count) -le $fds_before ]]; }
wait_until 30000 fds_back
tap_check "descriptors passed with requests are closed (3 each, 20 requests)" fds_back

check_refused() {
	local fd=() name req want got
	if [[ $1 == --fd || $1 == --fd-opath ]]; then
		fd=("$1" "$2")
		shift 2
	fi
	name=$1 req=$2 want=$3
	got=$(sl_daemon_req "${fd[@]}" --raw "$req")
	if [[ $got == '{"ok":false,"error":'*"$want"* ]] && ping_ok; then
		tap_ok "$name: refused, and the daemon serves on"
	else
		tap_fail "$name: refused, and the daemon serves on" \
			"expected an error containing \"$want\"; got \"$got\""
	fi
}
check_refused "not JSON" $'hello\n' "malformed request: byte 0"
check_refused "truncated" '{"op":"attach","run_id":"x' "truncated request"
check_refused "a string cut short" $'{"op":"pi\n' "unterminated string"
check_refused "oversized" "{\"op\":\"$(head -c 70000 /dev/zero | tr '\0' a)\"}"$'\n' \
	"longer than 65536"
check_refused "unknown op" $'{"op":"format-disk"}\n' 'unknown op'
check_refused "unknown member" $'{"op":"detach","run_id":"x","force":true}\n' \
	'unknown member \"force\"'
check_refused "a number where a string belongs" $'{"op":"detach","run_id":7}\n' \
	'must be a string'
check_refused "the same key twice" $'{"op":"ping","op":"ping"}\n' "the same key twice"
check_refused "a relative cgroup" \
	$'{"op":"attach","run_id":"r1","cgroup":"sys/fs/cgroup","policy":"/p"}\n' "absolute path"
check_refused "a bad run id" \
	$'{"op":"attach","run_id":"../x","cgroup":"/sys/fs/cgroup/x","policy":"/p"}\n' "run_id"
check_refused "the cgroup hierarchy's root" \
	"{\"op\":\"attach\",\"run_id\":\"t-$SL_ID-root\",\"cgroup\":\"$(cg2_mount)\",\"policy\":\"$SL_TMP/a.yaml\"}"$'\n' \
	"not a cgroup below the v2 hierarchy's root"
# a netns is the namespace its client opened and sent (SCM_RIGHTS), never a path the daemon opens
NS_REQ="{\"op\":\"attach\",\"run_id\":\"t-$SL_ID-ns\",\"cgroup\":\"$(cg2_mount)/x\",\"policy\":\"$SL_TMP/a.yaml\""
check_refused "a netns with no descriptor" "$NS_REQ,\"netns\":\"/run/netns/$SL_NS_RUN\"}"$'\n' \
	"the namespace's descriptor must come with the request"
check_refused --fd "$SL_TMP/a.yaml" "a netns whose descriptor is a plain file" \
	"$NS_REQ,\"netns\":\"/run/netns/$SL_NS_RUN\"}"$'\n' \
	"the descriptor sent is refused: not a namespace file (nsfs)"
# a device's descriptor is not asked nsfs's ioctl (its driver gives the number its own meaning)
check_refused --fd /dev/null "a netns whose descriptor is a device" \
	"$NS_REQ,\"netns\":\"/run/netns/$SL_NS_RUN\"}"$'\n' \
	"the descriptor sent is refused: not a namespace file (nsfs)"
# the right namespace's O_PATH descriptor: setns(2) cannot enter it; the error says what to send
check_refused --fd-opath "/run/netns/$SL_NS_RUN" "a netns whose descriptor is O_PATH" \
	"$NS_REQ,\"netns\":\"/run/netns/$SL_NS_RUN\"}"$'\n' \
	"the descriptor sent is refused: an O_PATH descriptor, which setns(2) cannot enter: send a network namespace's file opened for reading (O_RDONLY)"
check_refused --fd "/run/netns/$SL_NS_RUN" "a descriptor with no netns" "$NS_REQ}"$'\n' \
	"a descriptor came with a request that names no netns"

# --- two runs, two policies ------------------------------------------------------------------
CG_A=$(sl_cgroup_new a) && CG_B=$(sl_cgroup_new b) || bail_out "cannot make the test cgroups"
out=$("$SLUICE" attach --cgroup "$CG_A" --netns "$SL_TMP/a.yaml" --policy "$SL_TMP/a.yaml" \
	--run-id "t-$SL_ID-ns" 2>&1)
tap_is "sluice attach --netns FILE that is no namespace: refused before any request (rc $?)" \
	"$(grep -c "netns $SL_TMP/a.yaml: not a namespace file (nsfs)" <<<"$out")" 1
mkfifo "$SL_TMP/fifo"
out=$(timeout $((10 * SL_SLOW)) "$SLUICE" attach --cgroup "$CG_A" --netns "$SL_TMP/fifo" \
	--policy "$SL_TMP/a.yaml" --run-id "t-$SL_ID-ns" 2>&1)
tap_is "sluice attach --netns FIFO: refused, not opened (it would block) (rc $?)" \
	"$(grep -c "netns $SL_TMP/fifo: not a namespace file (nsfs)" <<<"$out")" 1
# a standalone run's resolver opens its --netns through the same check (opened by hand, a FIFO
# hung the run in open(2), deaf to SIGTERM: hence -k)
out=$(timeout -k 5 $((10 * SL_SLOW)) "$SLUICE" run --standalone --netns "$SL_TMP/fifo" \
	--policy "$SL_TMP/a.yaml" --run-id "t-$SL_ID-nsrun" --log "$SL_TMP/nsrun.jsonl" -- \
	true 2>&1)
tap_is "sluice run --standalone --netns FIFO: refused, not opened (rc $?)" \
	"$(grep -c "netns $SL_TMP/fifo: not a namespace file (nsfs)" <<<"$out")" 1
out=$("$SLUICE" attach --cgroup "$CG_A" --netns /proc/self/ns/mnt --policy "$SL_TMP/a.yaml" \
	--run-id "t-$SL_ID-ns" 2>&1)
tap_is "sluice attach --netns of a mount namespace: refused (rc $?)" \
	"$(grep -c "netns /proc/self/ns/mnt: not a network namespace" <<<"$out")" 1
RA=t-$SL_ID-a
RB=t-$SL_ID-b
SL_RUNS+=("$RA" "$RB")
NETNS=/run/netns/$SL_NS_RUN
UP=127.0.0.1:$SL_DNS_PORT
out=$(attach "$RA" "$CG_A" "$SL_TMP/a.yaml" "\"netns\":\"$NETNS\"" "\"upstream\":\"$UP\"" \
	'"task":"T-A"' '"source":"selftest"')
tap_check "run A is attached to its cgroup" test "${out:0:10}" == '{"ok":true'
[[ ${out:0:10} == '{"ok":true' ]] || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
out=$(attach "$RB" "$CG_B" "$SL_TMP/b.yaml" "\"netns\":\"$NETNS\"" "\"upstream\":\"$UP\"")
tap_check "run B is attached to its cgroup" test "${out:0:10}" == '{"ok":true'
[[ ${out:0:10} == '{"ok":true' ]] || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
LA=$D/logs/$RA.jsonl
LB=$D/logs/$RB.jsonl

out=$(attach "t-$SL_ID-c" "$CG_A" "$SL_TMP/a.yaml")
tap_check "a second run on run A's cgroup is refused" \
	test "${out:0:11}" == '{"ok":false' -a -z "${out##*overlaps run $RA*}"
mkdir "$CG_A/child"
out=$(attach "t-$SL_ID-c" "$CG_A/child" "$SL_TMP/a.yaml")
tap_check "a run on a cgroup inside run A's is refused" \
	test "${out:0:11}" == '{"ok":false' -a -z "${out##*overlaps*}"
rmdir "$CG_A/child"
out=$(attach "$RA" "$(sl_cgroup_new c)" "$SL_TMP/a.yaml")
tap_check "a run id in use is refused" \
	test "${out:0:11}" == '{"ok":false' -a -z "${out##*attached already*}"

# --- next_free_id (sluice oci-hook's request: a container started again keeps its id)
RR=t-$SL_ID-again
SL_RUNS+=("$RR" "$RR-2")
CG_R=$(sl_cgroup_new again)
out=$(attach "$RR" "$CG_R" "$SL_TMP/a.yaml" '"next_free_id":true')
tap_is "next_free_id: a free run id is taken as it is" "$(sl_reply_field "$out" run_id)" "$RR" ||
	tap_diag "$out"
# the cgroup removed and made again at once (docker restart), the request read in the same turn
# of the daemon's loop as the removal is seen (the client connected and accepted first, the
# daemon stopped while the cgroup goes and comes back and the request is sent): the first run
# ends at the attach, not refused as an overlap, and the id is the next free one (the first run's
# log exists)
out=$(python3 -c 'import os, signal, socket, sys, time
pid, cg, sock, req = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_UNIX)
s.settimeout(60)
s.connect(sock)
time.sleep(0.5)  # accepted: a client is read before the loop looks at its runs
os.kill(pid, signal.SIGSTOP)
try:
    os.rmdir(cg)
    os.mkdir(cg)
    s.sendall(req.encode() + b"\n")
finally:
    os.kill(pid, signal.SIGCONT)
print(s.makefile().readline().strip())' "$SL_DAEMON_PID" "$CG_R" "$SLUICE_SOCKET" \
	"{\"op\":\"attach\",\"run_id\":\"$RR\",\"cgroup\":\"$CG_R\",\"policy\":\"$SL_TMP/a.yaml\",\"next_free_id\":true}")
tap_is "next_free_id: its cgroup made again at once: attached as $RR-2 (its log exists)" \
	"$(sl_reply_field "$out" run_id)" "$RR-2" || tap_diag "$out"
tap_check "next_free_id: … the first run ended (cgroup removed), its log sealed" \
	log_well_formed "$D/logs/$RR.jsonl"
out=$(attach "$RR" "$(sl_cgroup_new again3)" "$SL_TMP/a.yaml" '"next_free_id":true' \
	"\"log\":\"$SL_TMP/again3.jsonl\"")
tap_check "next_free_id with a log of the client's: refused" \
	test -z "${out##*next_free_id and log*}" -a "${out:0:11}" == '{"ok":false'
# a taken id with no room for -N (72 characters at most): refused, saying so
RL=t-$SL_ID-$(printf 'l%.0s' $(seq $((72 - 3 - ${#SL_ID}))))
out=$(attach "$RL" "$(sl_cgroup_new long1)" "$SL_TMP/a.yaml" '"next_free_id":true')
SL_RUNS+=("$RL")
out=$(attach "$RL" "$(sl_cgroup_new long2)" "$SL_TMP/a.yaml" '"next_free_id":true')
tap_check "next_free_id: a taken id of 72 characters: refused, -2 would be too long" \
	test -z "${out##*$RL-2 would be longer than 72 characters*}" -a "${out:0:11}" == '{"ok":false'
"$SLUICE" detach --run-id "$RL" >/dev/null 2>&1
out=$("$SLUICE" verify "$D/logs/$RL.jsonl" --key "$SLUICE_PUB" 2>&1)
tap_is "a run id of 72 characters: its log verifies" "$?" 0 || tap_diag "$out"
"$SLUICE" detach --run-id "$RR-2" >/dev/null 2>&1
# an old log whose first segments were cleaned away (oldest first, as retention goes) and a later
# one kept: the id is taken, or the new log's rotation would run into that segment
RS=t-$SL_ID-seg
SL_RUNS+=("$RS" "$RS-2")
echo old | gzip >"$D/logs/$RS.jsonl.000002.gz"
out=$(attach "$RS" "$(sl_cgroup_new seg)" "$SL_TMP/a.yaml" '"next_free_id":true')
tap_is "next_free_id: an id whose old log left only a later segment: attached as $RS-2" \
	"$(sl_reply_field "$out" run_id)" "$RS-2" || tap_diag "$out"
# (both: without the check the run is $RS, and the checks below count the daemon's runs)
"$SLUICE" detach --run-id "$RS-2" >/dev/null 2>&1
"$SLUICE" detach --run-id "$RS" >/dev/null 2>&1

status=$("$SLUICE" status --json)
tap_cmp "sluice status lists both runs" "$(grep -c -e "\"run_id\":\"$RA\"" \
	-e "\"run_id\":\"$RB\"" <<<"$status")" -eq 2
tap_check "status names run A's mode, cgroup and policy digest" \
	grep -q "\"run_id\":\"$RA\",\"cgroup\":\"$CG_A\",\"mode\":\"enforce\".*\"policy_sha256\":\"$(sha256sum "$SL_TMP/a.yaml" | cut -c1-64)\"" <<<"$status"

# each resolves its own name only; the address learned by A is not B's
sink_mark
out=$(in_cg "$CG_A" dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 a.daemon.example)
tap_is "run A resolves its name" "$out" 198.51.100.10
out=$(in_cg "$CG_A" dig +time=$((2 * SL_SLOW)) +tries=1 @198.51.100.53 b.daemon.example | grep -o 'status: [A-Z]*')
tap_is "run A does not resolve run B's name" "$out" "status: NXDOMAIN"
out=$(in_cg "$CG_B" dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 b.daemon.example)
tap_is "run B resolves its name" "$out" 198.51.100.20
tap_is "run A reaches its host" "$(in_cg "$CG_A" "$SL_PROBE" tcp 198.51.100.10 80)" ok
tap_is "run B does not reach the address run A learned" \
	"$(in_cg "$CG_B" "$SL_PROBE" tcp 198.51.100.10 80 | cut -d' ' -f1-2)" "err EPERM"
tap_is "run A does not reach run B's host" \
	"$(in_cg "$CG_A" "$SL_PROBE" tcp 198.51.100.20 80 | cut -d' ' -f1-2)" "err EPERM"
tap_is "run A does not reach run B's CIDR" \
	"$(in_cg "$CG_A" "$SL_PROBE" tcp 203.0.113.7 80 | cut -d' ' -f1-2)" "err EPERM"
tap_is "run B reaches its host and its CIDR" \
	"$(in_cg "$CG_B" "$SL_PROBE" tcp 198.51.100.20 80; in_cg "$CG_B" "$SL_PROBE" tcp 203.0.113.7 80)" \
	$'ok\nok'
assert_sink_saw "the allowed connections arrived" "tcp 198.51.100.10 80" 1
tap_cmp "nothing arrived at 198.51.100.20 but run B's" "$(sink_count 'tcp 198.51.100.20 80')" -eq 1
tap_cmp "run A's log has its denials" \
	"$(log_count "$LA" type=decision decision=deny)" -ge 2
# one pass over each log (it may grow meanwhile): lines naming a run id that is not the run's
tap_is "run A's log holds only run A's lines" \
	"$(grep -o '"run_id":"[^"]*"' "$LA" | grep -vc "\"run_id\":\"$RA\"")" 0
tap_is "run B's log holds only run B's lines" \
	"$(grep -o '"run_id":"[^"]*"' "$LB" | grep -vc "\"run_id\":\"$RB\"")" 0
tap_is "run A's run_start says it was attached, and by what" \
	"$(log_run_start_field "$LA" attached) $(log_run_start_field "$LA" source)" "True selftest"

# --- SIGKILL of the daemon -------------------------------------------------------------------
sl_daemon_kill KILL
DOWN_US=$(date +%s%6N)
sink_mark
tap_is "with the daemon dead, run A's denial holds" \
	"$(in_cg "$CG_A" "$SL_PROBE" tcp 198.51.100.20 80 | cut -d' ' -f1-2)" "err EPERM"
assert_sink_none "… and nothing reached the denied host" "tcp-accept 198.51.100.20"
out=$(in_cg "$CG_A" dig +time=1 +tries=1 +short @198.51.100.53 a.daemon.example 2>&1)
tap_check "with the daemon dead, run A's names fail closed (no answer)" \
	test -z "$(grep -E '^[0-9.]+$' <<<"$out")"
UP_US=$(date +%s%6N)
sl_daemon_start || bail_out "the daemon did not restart: $(tail -5 "$D/err")"
tap_check "the new daemon took both runs over" \
	test "$(grep -c 'took over run t-' "$D/err")" -eq 2
out=$(in_cg "$CG_A" dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 a.daemon.example)
tap_is "after the takeover, run A's names are answered again" "$out" 198.51.100.10
tap_is "after the takeover, run A's denial is logged" \
	"$(in_cg "$CG_A" "$SL_PROBE" tcp 198.51.100.20 8080 | cut -d' ' -f1-2)" "err EPERM"

# A run the daemon took over is switched like any other (its programs and maps are found through
# its pinned links): report, back to enforce, then another policy that names run B's host too.
# With the BPF-LSM layer (a kernel that runs bpf among its LSMs: make vmtest's 6.12) a new layer
# is loaded on the old one's maps: report mode letting the denied host through says the old
# layer's connect hook, enforcing, no longer judges.
cat >"$SL_TMP/a2.yaml" <<EOP
default: deny
rules:
  - name: a-host
    hosts: [a.daemon.example]
    ports: [80]
  - name: b-host
    hosts: [b.daemon.example]
    ports: [80]
EOP
# lsm_hook RUN: the program the run's pinned LSM connect link runs, and the sl_run_cgroup map it
# reads (which cgroup's tasks it judges: a new layer must read the run's, not an empty one).
# The link through bpf(2) itself: bpftool link show pinned exited 255 on it in the 6.12 VM.
lsm_hook() {
	python3 - "/sys/fs/bpf/sluice/$1/lsm-connect" <<'PY'
import ctypes, json, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_BPF, BPF_OBJ_GET, BPF_OBJ_GET_INFO_BY_FD = 321, 7, 15  # (x86_64)
def bpf(cmd, attr):
    r = libc.syscall(ctypes.c_long(SYS_BPF), ctypes.c_long(cmd), ctypes.byref(attr),
                     ctypes.c_long(ctypes.sizeof(attr)))
    if r < 0:
        sys.exit("bpf(%d) on %s: %s" % (cmd, sys.argv[1], os.strerror(ctypes.get_errno())))
    return r
def bt(*a):
    return json.loads(subprocess.run(["bpftool", "-j", *a], capture_output=True, check=True).stdout)
path = ctypes.create_string_buffer(sys.argv[1].encode())
fd = bpf(BPF_OBJ_GET, (ctypes.c_uint64 * 16)(ctypes.addressof(path)))
info = (ctypes.c_uint32 * 64)()  # struct bpf_link_info: type, id, prog_id, ...
bpf(BPF_OBJ_GET_INFO_BY_FD, (ctypes.c_uint64 * 16)(fd | ctypes.sizeof(info) << 32,
                                                    ctypes.addressof(info)))
maps = [m for m in bt("prog", "show", "id", str(info[2])).get("map_ids", [])
        if bt("map", "show", "id", str(m))["name"] == "sl_run_cgroup"]
print(info[2], *maps)
PY
}
lsm_a=
[[ $(log_run_start_field "$LA" lsm) == True ]] && lsm_a=$(lsm_hook "$RA" 2>&1)
out=$("$SLUICE" set-mode --run-id "$RA" report 2>&1)
tap_check "after the takeover, set-mode report switches run A" \
	test $? -eq 0 -a -z "${out##*\"ok\":true*}"
[[ $out == *'"ok":true'* ]] || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
tap_is "… and run A in report mode lets the denied host through" \
	"$(in_cg "$CG_A" "$SL_PROBE" tcp 198.51.100.20 80)" ok
out=$("$SLUICE" set-mode --run-id "$RA" enforce 2>&1)
tap_check "after the takeover, set-mode enforce switches run A back" \
	test $? -eq 0 -a -z "${out##*\"ok\":true*}"
tap_is "… and the denial holds again" \
	"$(in_cg "$CG_A" "$SL_PROBE" tcp 198.51.100.20 80 | cut -d' ' -f1-2)" "err EPERM"
out=$("$SLUICE" replace-policy --run-id "$RA" "$SL_TMP/a2.yaml" 2>&1)
tap_check "after the takeover, replace-policy switches run A" \
	test $? -eq 0 -a -z "${out##*\"ok\":true*}"
[[ $out == *'"ok":true'* ]] || tap_diag "$out"$'\n'"$(tail -5 "$D/err")"
tap_is "… and run A's address learned before the takeover is still reached" \
	"$(in_cg "$CG_A" "$SL_PROBE" tcp 198.51.100.10 80)" ok
out=$(in_cg "$CG_A" dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 b.daemon.example)
tap_is "… the new policy's name resolves" "$out" 198.51.100.20
tap_is "… and is reached" "$(in_cg "$CG_A" "$SL_PROBE" tcp 198.51.100.20 80)" ok
tap_is "… a host neither policy lists is still denied" \
	"$(in_cg "$CG_A" "$SL_PROBE" tcp 203.0.113.7 80 | cut -d' ' -f1-2)" "err EPERM"
tap_is "run A's log has the three switches" "$(log_count "$LA" type=policy_change)" 3
if [[ -n $lsm_a ]]; then
	now=$(lsm_hook "$RA" 2>&1)
	tap_check "… its LSM connect hook runs a new program, on the run's cgroup map ($lsm_a -> $now)" \
		test "${now%% *}" != "${lsm_a%% *}" -a "${now#* }" == "${lsm_a#* }" -a \
		"${lsm_a#* }" != "${lsm_a%% *}"
else
	tap_skip "… its LSM connect hook runs a new program" "the run has no BPF-LSM layer here"
fi

# --- the end of runs: detach, and a cgroup removed ----------------------------------------
sleep 300 &
holder=$!
sl_track_pid "$holder"
echo "$holder" >"$CG_B/cgroup.procs"
out=$("$SLUICE" detach --run-id "$RB")
tap_check "sluice detach ends run B" test $? -eq 0
tap_check "run B's pins are gone" test ! -e "/sys/fs/bpf/sluice/$RB"
tap_check "run B's cgroup and its process live on" kill -0 "$holder"
tap_check "run B's log ends detached" grep -q '"type":"run_end".*"why":"detached"' "$LB"
out=$("$SLUICE" verify "$LB" --key "$SLUICE_PUB" 2>&1)
tap_check "run B's log verifies intact" test $? -eq 0
[[ $out == *"OK: intact and complete"* ]] || tap_diag "$out"

sl_cgroup_remove "$CG_A"
for _ in $(seq $((100 * SL_SLOW))); do
	grep -q '"type":"run_end"' "$LA" && break
	sleep 0.05
done
tap_check "run A ends when its cgroup is removed" grep -q '"why":"cgroup removed"' "$LA"
out=$("$SLUICE" verify "$LA" --key "$SLUICE_PUB" 2>&1)
tap_check "run A's log verifies across the daemon's death" test $? -eq 0
tap_check "… and declares the restart" grep -q 'writer restarted 1 time' <<<"$out"
[[ $out == *"writer restarted 1 time"* ]] || tap_diag "$out"
# the denial made while no daemon lived waited in the run's ring buffer for the next writer
n=$(log_count_between "$LA" "$DOWN_US" "$UP_US" type=decision dst=198.51.100.20 port=80 \
	decision=deny enforced=true)
if [[ $n -eq 1 || $(log_count "$LA" type=loss) -gt 0 ]]; then
	tap_ok "run A's denial made while the daemon was dead is logged after the take-over"
else
	tap_fail "run A's denial made while the daemon was dead is logged after the take-over" \
		"$n deny lines for 198.51.100.20:80 with ts in ($DOWN_US, $UP_US), no loss line"
fi
tap_is "no run is left" "$("$SLUICE" status --json | wc -l)" 0
tap_check "run A's pins are gone" test ! -e "/sys/fs/bpf/sluice/$RA"

# --- adversarial review: what a client, a crash or the state directory must not do ----------
cat >"$SL_TMP/r.yaml" <<EOF
default: deny
rules:
  - name: r-cidr
    cidrs: [203.0.113.7/32]
    ports: [80]
EOF

# Every op refuses members it does not know (ping too); a log path is absolute, as the state
# file that hands it to the next daemon (whose working directory may differ) keeps it as given.
check_refused "ping with an unknown member" $'{"op":"ping","force":true}\n' 'unknown member'
check_refused "a relative log path" \
	"{\"op\":\"attach\",\"run_id\":\"t-$SL_ID-rel\",\"cgroup\":\"$(cg2_mount)/x\",\"policy\":\"$SL_TMP/r.yaml\",\"log\":\"rel.jsonl\"}"$'\n' \
	'\"log\" must be an absolute path'

# A policy path that is a FIFO (or a device) must not stall the loop that drains every run:
# the attach is refused, and the daemon answers others meanwhile.
mkfifo "$SL_TMP/policy.fifo"
CG_F=$(sl_cgroup_new fifo) || bail_out "cannot make a test cgroup"
SL_RUNS+=("t-$SL_ID-fifo")
attach "t-$SL_ID-fifo" "$CG_F" "$SL_TMP/policy.fifo" >"$SL_TMP/fifo.out" 2>&1 &
fifo_pid=$!
sl_track_pid "$fifo_pid"
sleep 1
if timeout 5 "$SLUICE" status >/dev/null 2>&1; then
	tap_ok "an attach naming a FIFO as its policy does not stall the daemon"
else
	tap_fail "an attach naming a FIFO as its policy does not stall the daemon" \
		"sluice status got no answer in 5 s while the daemon waits in open() on the FIFO"
fi
timeout 5 bash -c ": >'$SL_TMP/policy.fifo'" # release a daemon that waits for a writer
wait "$fifo_pid" 2>/dev/null
tap_check "… and that attach is refused" grep -q '"ok":false' "$SL_TMP/fifo.out"

# 64 root clients that connect and send nothing must not lock every other client out for good
# (an oci-hook that cannot connect fails its container).
python3 - "$SLUICE_SOCKET" <<'EOF' &
import socket, sys, time
held = []
for _ in range(64):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    held.append(s)
time.sleep(90)
EOF
idle_pid=$!
sl_track_pid "$idle_pid"
sleep 1
served=0
for _ in $(seq 60); do
	if "$SLUICE" status >/dev/null 2>&1; then
		served=1
		break
	fi
	sleep 0.5
done
kill "$idle_pid" 2>/dev/null
wait "$idle_pid" 2>/dev/null
tap_check "64 silent clients are dropped in time: another client is served within 30 s" \
	test "$served" -eq 1
[[ $served -eq 1 ]] || tap_diag "sluice status: $("$SLUICE" status 2>&1)"

# bpffs refuses every name with a '.' (EPERM): a run id with one can never be pinned, so it must
# be refused up front, saying why, not fail at the attach with "Operation not permitted".
CG_N=$(sl_cgroup_new dotnew) || bail_out "cannot make a test cgroup"
SL_RUNS+=("t-$SL_ID-n.new")
out=$(attach "t-$SL_ID-n.new" "$CG_N" "$SL_TMP/r.yaml")
if [[ $out == '{"ok":false'*run_id* ]]; then
	tap_ok "a run id with a '.' is refused as a run id"
else
	tap_fail "a run id with a '.' is refused as a run id" "got: $out"
fi

# SIGKILL between the pinning of a run's programs and its state file: the next daemon must take
# the run over, or nothing of it may stay attached (the client was told nothing but an error).
# traced_all PID: strace is attached to every thread of PID (its fsync delay is in force).
# shellcheck disable=SC2317 # (called through wait_until)
traced_all() {
	local t
	for t in /proc/"$1"/task/*; do
		grep -q '^TracerPid:[[:space:]]*[1-9]' "$t/status" 2>/dev/null || return 1
	done
}
if command -v strace >/dev/null; then
	CG_K=$(sl_cgroup_new killattach) || bail_out "cannot make a test cgroup"
	# a try the kill misses (the attach done before the kill: a loaded machine) is taken over
	# by the next daemon, detached, and tried again
	pinned_no_state=0
	for try in 1 2 3; do
		RK=t-$SL_ID-k$try
		SL_RUNS+=("$RK")
		# every fsync of the daemon waits 5 s: the window after the pins, before the state
		# file that says the attach is done
		strace -f -qq -o /dev/null -p "$SL_DAEMON_PID" -e trace=fsync,fdatasync \
			-e inject=fsync:delay_enter=5000000 -e inject=fdatasync:delay_enter=5000000 &
		strace_pid=$!
		sl_track_pid "$strace_pid"
		wait_until 5000 traced_all "$SL_DAEMON_PID"
		attach "$RK" "$CG_K" "$SL_TMP/r.yaml" >/dev/null 2>&1 &
		att_pid=$!
		sl_track_pid "$att_pid"
		wait_until 15000 test -e "/sys/fs/bpf/sluice/$RK/egress"
		sleep 0.5
		# the window: pinned, and no state file that says where the run's log is (or says
		# that its attach is under way)
		[[ -d /sys/fs/bpf/sluice/$RK ]] && { [[ ! -e $D/state/runs/$RK ]] ||
			grep -q '^attaching$' "$D/state/runs/$RK"; } && pinned_no_state=1
		sl_daemon_kill KILL
		kill "$strace_pid" 2>/dev/null
		wait "$strace_pid" "$att_pid" 2>/dev/null
		sl_daemon_start || bail_out "the daemon did not restart: $(tail -5 "$D/err")"
		[[ $pinned_no_state -eq 1 ]] && break
		tap_diag "SIGKILL after an attach's pins: try $try missed the window, again"
		"$SLUICE" detach --run-id "$RK" >/dev/null 2>&1
	done
	if [[ $pinned_no_state -eq 0 ]]; then
		tap_fail "SIGKILL after an attach's pins: the kill hit the window" \
			"3 tries: no pins yet, or the state file written, when the daemon was killed"
	elif grep -q "took over run $RK" "$D/err" || [[ ! -e /sys/fs/bpf/sluice/$RK ]]; then
		tap_ok "SIGKILL after an attach's pins: the next daemon owns the run, or it is gone"
	else
		tap_fail "SIGKILL after an attach's pins: the next daemon owns the run, or it is gone" \
			"pinned, no state file: $pinned_no_state; $(ls /sys/fs/bpf/sluice/$RK | tr '\n' ' ')left attached to $CG_K, owned by no daemon"
	fi
	# the killed daemon was writing the state file its attach would end with (".ID.done",
	# its fsync held by strace): never renamed into place, and removed by the next daemon
	tap_is "… and no state file the killed daemon was writing is left" \
		"$(find "$D/state/runs" -name '.*' -printf '%f ')" ""
	"$SLUICE" detach --run-id "$RK" >/dev/null 2>&1
else
	tap_skip "SIGKILL after an attach's pins" "strace not installed"
fi

# A client must not take a listener that is not root for the daemon: an unprivileged user who
# can create the socket path (a loose directory) would answer "ok" to an attach or an oci-hook.
PUB=$(mktemp -d /tmp/sluice-pub.XXXXXX) && chmod 1777 "$PUB" && sl_on_exit "rm -rf '$PUB'"
setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 - "$PUB/fake.sock" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(4)
s.settimeout(30)
c, _ = s.accept()
c.makefile("rb").readline()
c.sendall(b'{"ok":true,"run_id":"x","log":"/dev/null"}\n')
c.close()
EOF
fake_pid=$!
sl_track_pid "$fake_pid"
for _ in $(seq 100); do [[ -S $PUB/fake.sock ]] && break; sleep 0.05; done
out=$(SLUICE_SOCKET=$PUB/fake.sock "$SLUICE" detach --run-id "t-$SL_ID-whatever" 2>&1)
rc=$?
kill "$fake_pid" 2>/dev/null
wait "$fake_pid" 2>/dev/null
if [[ $rc -ne 0 ]]; then
	tap_ok "a client refuses a 'daemon' that is not root"
else
	tap_fail "a client refuses a 'daemon' that is not root" "uid 65534's listener told it: $out"
fi

# "/sys/fs/cgroup/x/." is x: a run on it and one on x/child would both judge child's processes.
CG_P=$(sl_cgroup_new dot) && mkdir "$CG_P/child" || bail_out "cannot make a test cgroup"
SL_RUNS+=("t-$SL_ID-p1" "t-$SL_ID-p2")
out1=$(attach "t-$SL_ID-p1" "$CG_P/." "$SL_TMP/r.yaml")
out2=$(attach "t-$SL_ID-p2" "$CG_P/child" "$SL_TMP/r.yaml")
if [[ ${out1:0:10} == '{"ok":true' && ${out2:0:10} == '{"ok":true' ]]; then
	tap_fail "a cgroup spelled X/. is X: no second run inside it" "$out1 / $out2"
else
	tap_ok "a cgroup spelled X/. is X: no second run inside it"
fi
"$SLUICE" detach --run-id "t-$SL_ID-p1" >/dev/null 2>&1
"$SLUICE" detach --run-id "t-$SL_ID-p2" >/dev/null 2>&1
rmdir "$CG_P/child" 2>/dev/null

# Untrusted code in one attached cgroup floods denials (UDP sendto from a namespace with no
# route: nothing leaves even if allowed). The daemon's one loop must still serve others: an
# oci-hook waiting on it fails its container, and every other run's ring buffer waits too.
CG_FL=$(sl_cgroup_new flood) || bail_out "cannot make a test cgroup"
RF=t-$SL_ID-flood
SL_RUNS+=("$RF")
out=$(attach "$RF" "$CG_FL" "$SL_TMP/r.yaml")
[[ ${out:0:10} == '{"ok":true' ]] || tap_diag "$out"
# The floods go on until told to stop (at most 120 s): a loop that drained one run for as long
# as it had records would answer no one before the flood ended. Not a time limit: whether the
# answer came while both floods still ran.
flood_pids=()
for _ in 1 2; do
	sl_in_cgroup "$CG_FL" unshare -n python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + 120
n = 0
while time.time() < end and not (n % 1000 == 0 and os.path.exists(sys.argv[1])):
    n += 1
    try:
        s.sendto(b"x", ("192.0.2.1", 1000 + n % 50000))
    except OSError:
        pass
' "$SL_TMP/flood-stop" &
	flood_pids+=($!)
	sl_track_pid $!
done
sleep 2
timeout $((60 * SL_SLOW)) "$SLUICE" status >/dev/null 2>&1
rc=$?
alive=0
for p in "${flood_pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
touch "$SL_TMP/flood-stop"
wait "${flood_pids[@]}" 2>/dev/null
tap_is "a run flooding denials does not hold the daemon: status answers while the flood goes on" \
	"$rc $alive" "0 2"
"$SLUICE" detach --run-id "$RF" >/dev/null 2>&1
out=$("$SLUICE" verify "$D/logs/$RF.jsonl" --key "$SLUICE_PUB" 2>&1)
rc=$?
tap_check "the flooded run's log verifies (intact, sealed, losses declared)" test $rc -eq 0 -o $rc -eq 3
[[ $rc -eq 0 || $rc -eq 3 ]] || tap_diag "$(tail -5 <<<"$out")"

# The bound itself (DAEMON_DRAIN_MAX records of a run per turn of the loop): a run's ring buffer
# (1 MiB, some 10,000 records) filled while the daemon was stopped, and three status requests
# waiting for it. Each answer says how many lines the run's log had when it was given (the
# daemon's own count, not a time): a loop that drained the whole backlog before serving its
# clients answers them all with nearly every line written; with the bound, within a few turns
# of 1,024.
CG_DR=$(sl_cgroup_new drain) || bail_out "cannot make a test cgroup"
RD=t-$SL_ID-drain
SL_RUNS+=("$RD")
out=$(attach "$RD" "$CG_DR" "$SL_TMP/r.yaml")
[[ ${out:0:10} == '{"ok":true' ]] || tap_diag "$out"
# drain_status_lines: for each of three status requests sent while the daemon is stopped, the
# run's "lines" in its answer
drain_status_lines() {
	python3 -c 'import json, os, signal, socket, sys
pid, path, run = int(sys.argv[1]), sys.argv[2], sys.argv[3]
socks = []
for _ in range(3):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(path)
    s.sendall(b"{\"op\":\"status\"}\n")
    s.shutdown(socket.SHUT_WR)
    socks.append(s)
os.kill(pid, signal.SIGCONT)
out = []
for s in socks:
    lines = [json.loads(l) for l in s.makefile().read().splitlines() if l]
    out += [str(l["lines"]) for l in lines[1:] if l.get("run_id") == run] or ["none"]
print(" ".join(out))' "$SL_DAEMON_PID" "$SLUICE_SOCKET" "$RD"
}
before=$("$SLUICE" status --json | python3 -c '
import json, sys
for l in sys.stdin:
    l = json.loads(l)
    if l.get("run_id") == sys.argv[1]:
        print(l["lines"])' "$RD")
before=${before:-0}
kill -STOP "$SL_DAEMON_PID"
sl_in_cgroup "$CG_DR" unshare -n python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in range(100000):
    try:
        s.sendto(b"x", ("192.0.2.1", 1000 + n % 50000))
    except OSError:
        pass
'
answers=$(drain_status_lines 2>&1)
kill -CONT "$SL_DAEMON_PID"
"$SLUICE" detach --run-id "$RD" >/dev/null 2>&1
at_end=$(grep -c . "$D/logs/$RD.jsonl")
tap_diag "drain bound: the run's log had $before lines before the flood, $at_end at its end;" \
	"the three answers said $answers"
backlog=$((at_end - before))
tap_cmp "the flood left a backlog of many turns' records" "$backlog" -gt 4096
# (an answer without a count counts as the whole log)
most=0
for a in $answers; do
	[[ $a =~ ^[0-9]+$ ]] || a=$at_end
	((a - before > most)) && most=$((a - before))
done
tap_cmp "a run's backlog does not hold the daemon: three clients answered with less than half of it drained" \
	"$((most * 2))" -lt "$backlog"

tap_done
