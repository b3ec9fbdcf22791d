#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sluice run handed to a running daemon (userspace/handoff.c), the daemon on this test's own
# socket, with one spare:
# - A handed run (the daemon says so) enforces: the allowed test host is reached, the denied one
#   refused at once and never reached; the command's exit status passes through; the denial is
#   on sluice run's stderr; the log, written by the daemon where --log says, is well formed and
#   verifies with sluice verify.
# - The workload is confined as a standalone run's: no CAP_NET_RAW (nor CAP_SYS_ADMIN) in its
#   sets, cgroupfs read-only, and an AF_PACKET socket refused by the seccomp filter, whose
#   refusal the daemon answered and logged (the listener went to it).
# - sluice run killed (SIGKILL) mid-run: the daemon ends the run at once: the command left in
#   the cgroup is killed, the cgroup removed, nothing pinned, the log sealed ("client gone").
# - No daemon at the socket: the run is standalone, and enforces. --standalone with the daemon
#   up: standalone too (the daemon never hears of it).
# - Who may talk to the socket: the workload (uid 0, no capabilities) finds no socket (its
#   directory is masked), and a copy it can reach refuses it; root without CAP_SYS_ADMIN is
#   refused; a fake daemon of uid 0 without CAP_SYS_ADMIN (answering ok with the cgroup root and
#   no filter) is refused by sluice run, and the command never runs.
# - A daemon at its client limit: the run is standalone, and enforces.
# - A daemon started with a SLUICE_SELFTEST_* variable takes no run: exit 125, CMD never runs.
# - A policy too big for a spare: the daemon loads programs for it, and it enforces.
# - The daemon dies (SIGKILL) mid-run: the run stays enforced (a denied host still refused);
#   sluice run says so at once, naming the log, and at the command's end says what becomes of
#   the log (no run_end: the next daemon, or sluice resume, ends it) and exits 125, not the
#   command's status; the next daemon ends the log when the cgroup empties.
# - --netns: the daemon sets the run up in the namespace sluice run opened and sent, not by the
#   path: where the path names no namespace in the daemon's mount namespace, the run's resolver
#   still answers the command in its namespace. A descriptor that is not a network namespace,
#   or none with a netns, is refused.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

NETNS=/run/netns/$SL_NS_RUN
POLICY=$SL_TMP/allow-one.yaml
cat >"$POLICY" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF

sl_daemon_start --spares 1 || bail_out "the daemon did not start: $(cat "$SL_DAEMON_DIR/err")"
sl_on_exit "sl_daemon_kill TERM"

# spare_ready: the daemon has its spare loaded (verifying takes seconds on a loaded machine)
spare_ready() {
	python3 - "$SLUICE_SOCKET" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(b'{"op":"ping"}\n')
sys.exit(0 if json.loads(s.makefile("rb").readline())["spares"] >= 1 else 1)
EOF
}
wait_spare() { wait_until 120000 spare_ready || bail_out "no spare became ready"; }
handed() { grep -q "run $1 handed over" "$SL_DAEMON_DIR/err"; }
run_end_field() { log_field "$(grep '"type":"run_end"' "$1")" "$2"; }
verifies() { "$SLUICE" verify "$1" --key "$SLUICE_PUB" --run-id "$2" >/dev/null; }

# --- a handed run enforces; status, stderr and log as a standalone run's -------------------
wait_spare
log=$SL_TMP/handed.jsonl
sluice_run "$POLICY" "$log" --netns "$NETNS" -- sh -c \
	"$SL_PROBE tcp 198.51.100.10 80; $SL_PROBE tcp 198.51.100.20 80; exit 7"
tap_check "handed: the daemon took the run" handed "$SL_RUN_ID"
tap_check "handed: the daemon took it from its spare" \
	grep -q "run $SL_RUN_ID handed over.*a spare" "$SL_DAEMON_DIR/err"
assert_rc "handed: the command's exit status passes through" 7
tap_is "handed: allowed host reached, denied host refused at once" \
	"$(sed -n '1s/^\(ok\).*/\1/p;2s/^\(err EPERM\).*/\1/p' "$SL_OUT" | paste -sd,)" "ok,err EPERM"
assert_sink_saw "handed: the allowed test host received it" "tcp 198.51.100.10 80" 1
assert_sink_none "handed: nothing reached the denied test host" "tcp-accept 198.51.100.20 80"
assert_log "handed: the log has the deny line" "$log" 1 type=decision decision=deny \
	dst=198.51.100.20 port=80 "run_id=$SL_RUN_ID"
tap_check "handed: stderr names the denial" grep -q "deny.*198\.51\.100\.20" "$SL_ERR"
tap_check "handed: the log is well formed and sealed" log_well_formed "$log"
tap_check "handed: sluice verify says intact" verifies "$log" "$SL_RUN_ID"
tap_is "handed: run_end has the command's status" "$(run_end_field "$log" exit_status)" 7
assert_no_leftovers "handed: no cgroup or pins left"

# --- confined as a standalone run --------------------------------------------------------------
# CapBnd as hex; bit 13 CAP_NET_RAW, bit 21 CAP_SYS_ADMIN
caps_probe='b=$(sed -n "s/^CapBnd:\t//p" /proc/self/status); echo "caps $(( (0x$b >> 13 & 1) + (0x$b >> 21 & 1) ))"
if echo 1 >/sys/fs/cgroup/cgroup.procs 2>/dev/null || echo 1 >"$(sed -n "s/^0:://p" /proc/self/cgroup | sed "s|^|/sys/fs/cgroup|")/cgroup.kill" 2>/dev/null; then echo cgroupfs-writable; else echo cgroupfs-ro; fi
python3 -c "
import socket
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); print(\"packet-open\")
except OSError as e:
    print(\"packet\", e.errno)
"'
for how in handed standalone; do
	wait_spare
	extra=()
	[[ $how == standalone ]] && extra=(--standalone)
	log=$SL_TMP/confine-$how.jsonl
	sluice_run "$POLICY" "$log" "${extra[@]}" -- sh -c "$caps_probe"
	eval "out_$how=\$(cat \"\$SL_OUT\")"
	assert_rc "confine $how: exit 0" 0
	tap_check "confine $how: no CAP_NET_RAW nor CAP_SYS_ADMIN; cgroupfs read-only" \
		grep -qxF "caps 0" "$SL_OUT"
	tap_check "confine $how: cgroupfs is read-only" grep -qxF cgroupfs-ro "$SL_OUT"
	tap_check "confine $how: AF_PACKET refused with EAFNOSUPPORT" grep -qxF "packet 97" "$SL_OUT"
	assert_log "confine $how: the refusal is logged (seccomp)" "$log" 1 type=decision \
		hook=seccomp decision=deny family=packet
	tap_check "confine $how: the log verifies" verifies "$log" "$SL_RUN_ID"
	if [[ $how == handed ]]; then
		tap_check "confine handed: the daemon took the run" handed "$SL_RUN_ID"
	else
		tap_check "confine standalone: the daemon never heard of it" \
			bash -c "! grep -q 'run $SL_RUN_ID ' '$SL_DAEMON_DIR/err'"
	fi
done
# shellcheck disable=SC2154 # set by eval above
tap_is "confine: the handed workload saw what the standalone one saw" "$out_handed" \
	"$out_standalone"

# --- sluice run killed mid-run ---------------------------------------------------------------
wait_spare
log=$SL_TMP/killed.jsonl
pidfile=$SL_TMP/killed.pid
sluice_start "$POLICY" "$log" -- sh -c "echo \$\$ >$pidfile.tmp && mv $pidfile.tmp $pidfile; exec sleep 1000"
id=$SL_RUN_ID
cg=$(cg2_mount)/sluice/$id
has_pid() { [[ -s $pidfile ]]; }
wait_until 20000 has_pid || tap_diag "the command did not start"
tap_check "killed: the daemon took the run" handed "$id"
tap_check "killed: the command runs in the run's cgroup" test -d "$cg"
sl_kill_wait "$SL_RUN_PID"
# the workload is in a PID namespace: its pid there is 1 or 2; the cgroup says whether it lives
cg_gone() { [[ ! -d $cg ]]; }
wait_until 20000 cg_gone
tap_check "killed: the daemon ended the run: the cgroup (and its command) is gone" cg_gone
tap_is "killed: run_end says why" "$(run_end_field "$log" why)" "client gone"
tap_check "killed: the log is well formed and sealed" log_well_formed "$log"
tap_check "killed: the log verifies" verifies "$log" "$id"
tap_check "killed: nothing pinned" test ! -e "/sys/fs/bpf/sluice/$id"
tap_check "killed: the daemon said so" grep -q "run $id: its sluice run .* is gone" \
	"$SL_DAEMON_DIR/err"

# --- who may talk to the socket: root with CAP_SYS_ADMIN, both ways ---------------------------
# The workload is uid 0 without capabilities: its socket directory is masked, and a copy of the
# socket it could reach (a hard link outside it) answers it nothing but a refusal.
ln "$SLUICE_SOCKET" "$SL_TMP/copy.sock" || bail_out "no hard link of the socket"
sock_probe='import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p)
    except OSError as e:
        print(p, "errno", e.errno)
        continue
    try:
        s.sendall(b"{\"op\":\"set_mode\",\"run_id\":\"x\",\"mode\":\"report\"}\n")
    except OSError:
        pass  # the refusal may have come, and the socket closed, first
    print(p, s.makefile("rb").readline().decode().strip())'
wait_spare
log=$SL_TMP/sockprobe.jsonl
sluice_run "$POLICY" "$log" -- python3 -c "$sock_probe" "$SLUICE_SOCKET" "$SL_TMP/copy.sock"
tap_check "socket: the workload's run was handed" handed "$SL_RUN_ID"
tap_check "socket: the daemon's socket is out of the workload's sight (ENOENT)" \
	grep -qxF "$SLUICE_SOCKET errno 2" "$SL_OUT"
tap_check "socket: a reachable copy answers the workload a refusal (no CAP_SYS_ADMIN)" \
	grep -qF "$SL_TMP/copy.sock {\"ok\":false,\"error\":\"the sluice daemon answers root only, with CAP_SYS_ADMIN\"}" \
	"$SL_OUT"
rm -f "$SL_TMP/copy.sock"
no_admin() { setpriv --bounding-set -sys_admin --inh-caps -all -- "$@"; }
tap_check "socket: root without CAP_SYS_ADMIN is refused by the daemon" bash -c \
	"$(declare -f no_admin); no_admin python3 '$SL_LIB_DIR/tools/sl_daemon_req.py' \
	'$SLUICE_SOCKET' '{\"op\":\"ping\"}' 60 | grep -q 'root only, with CAP_SYS_ADMIN'"

# A fake daemon, uid 0 without CAP_SYS_ADMIN, answering ok with the cgroup root and no filter:
# sluice run refuses it, and the command never runs.
fake=$SL_TMP/fake
mkdir -p "$fake"
setpriv --bounding-set -sys_admin --inh-caps -all -- python3 "$SL_LIB_DIR/tools/sl_fake_daemon.py" \
	"$fake/sluice.sock" "$(findmnt -nro TARGET -t cgroup2 | head -1)" "$fake/ops" &
fake_pid=$!
sl_on_exit "kill $fake_pid 2>/dev/null"
fake_up() { grep -q listening "$fake/ops" 2>/dev/null; }
wait_until 30000 fake_up || bail_out "the fake daemon did not start"
log=$SL_TMP/fake.jsonl
SLUICE_SOCKET=$fake/sluice.sock sluice_run "$POLICY" "$log" --netns "$NETNS" -- sh -c \
	"touch '$fake/ran'; $SL_PROBE tcp 198.51.100.20 80"
assert_rc "fake daemon: sluice run refuses it (sluice error)" 125
tap_check "fake daemon: stderr says the listener is not a privileged daemon" \
	grep -q "not a privileged sluice daemon" "$SL_ERR"
tap_check "fake daemon: the command never ran" test ! -e "$fake/ran"
tap_check "fake daemon: it was never asked for a run" bash -c "! grep -q 'op run' '$fake/ops'"
assert_sink_none "fake daemon: nothing reached the denied test host" "tcp-accept 198.51.100.20 80"
kill "$fake_pid"
wait "$fake_pid" 2>/dev/null

# --- a daemon at its client limit -------------------------------------------------------------
# Its clients (2 per run, and root's tools) all taken: the daemon answers a new one "too many
# clients" at accept and closes; sluice run loads the run itself instead, as strongly enforced.
hold='import socket, sys, time
conns = []
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    conns.append(s)
open(sys.argv[3], "w").write("held\n")
while True:
    # an idle client is dropped after seconds: a request now and then keeps each one
    for s in conns:
        try:
            s.sendall(b"{\"op\":\"ping\"}\n")
            s.recv(4096)
        except OSError:
            pass
    time.sleep(2)'
python3 -c "$hold" "$SLUICE_SOCKET" 600 "$SL_TMP/held" &
hold_pid=$!
sl_on_exit "kill $hold_pid 2>/dev/null"
held() { [[ -s $SL_TMP/held ]]; }
wait_until 60000 held || bail_out "the clients were not held"
log=$SL_TMP/full.jsonl
sluice_run "$POLICY" "$log" --netns "$NETNS" -- "$SL_PROBE" tcp 198.51.100.20 80
assert_rc "daemon full: standalone, the denied probe's status 1" 1
tap_check "daemon full: denied" grep -q "^err EPERM" "$SL_OUT"
tap_check "daemon full: sluice run says it ran standalone" \
	grep -q "took no more clients.*standalone" "$SL_ERR"
tap_check "daemon full: the log verifies" verifies "$log" "$SL_RUN_ID"
kill "$hold_pid"
wait "$hold_pid" 2>/dev/null
daemon_answers() { "$SLUICE" status >/dev/null 2>&1; }
wait_until 60000 daemon_answers
tap_check "daemon full: it serves again once the clients are gone" daemon_answers

# --- no daemon; --standalone -------------------------------------------------------------------
log=$SL_TMP/nodaemon.jsonl
SLUICE_SOCKET=$SL_TMP/no-daemon.sock sluice_run "$POLICY" "$log" --netns "$NETNS" -- \
	"$SL_PROBE" tcp 198.51.100.20 80
assert_rc "no daemon: standalone, the denied probe's status 1" 1
tap_check "no daemon: denied" grep -q "^err EPERM" "$SL_OUT"
tap_check "no daemon: the daemon never heard of it" \
	bash -c "! grep -q 'run $SL_RUN_ID ' '$SL_DAEMON_DIR/err'"
tap_check "no daemon: the log verifies" verifies "$log" "$SL_RUN_ID"

log=$SL_TMP/forced.jsonl
sluice_run "$POLICY" "$log" --standalone --netns "$NETNS" -- "$SL_PROBE" tcp 198.51.100.20 80
assert_rc "--standalone: the denied probe's status 1" 1
tap_check "--standalone: the daemon never heard of it" \
	bash -c "! grep -q 'run $SL_RUN_ID ' '$SL_DAEMON_DIR/err'"

# --- a policy too big for a spare --------------------------------------------------------------
big=$SL_TMP/big.yaml
{
	echo "default: deny"
	echo "rules:"
	for i in $(seq 1 300); do
		printf '  - name: r%d\n    cidrs: ["10.%d.%d.0/24"]\n    ports: [80]\n' "$i" \
			$((i / 200)) $((i % 200))
	done
	printf '  - name: test-host\n    cidrs: ["198.51.100.10/32"]\n    ports: [80]\n'
} >"$big"
log=$SL_TMP/big.jsonl
sluice_run "$big" "$log" --netns "$NETNS" -- sh -c \
	"$SL_PROBE tcp 198.51.100.10 80; $SL_PROBE tcp 198.51.100.20 80"
tap_check "big policy: handed, the daemon loaded programs for it" \
	grep -q "run $SL_RUN_ID handed over.*loaded: " "$SL_DAEMON_DIR/err"
assert_rc "big policy: the denied probe's status 1" 1
tap_is "big policy: allowed reached, denied refused" \
	"$(sed -n '1s/^\(ok\).*/\1/p;2s/^\(err EPERM\).*/\1/p' "$SL_OUT" | paste -sd,)" "ok,err EPERM"
tap_check "big policy: the log verifies" verifies "$log" "$SL_RUN_ID"

# --- the daemon dies mid-run ------------------------------------------------------------------
# The run stays pinned and enforced; sluice run says so, and at the command's end exits 125 (the
# log has no run_end: the command's status is in no log), saying what a restarted daemon or
# sluice resume will do; the next daemon takes the run over and ends its log once the cgroup
# empties.
wait_spare
log=$SL_TMP/restart.jsonl
go=$SL_TMP/restart.go
sluice_start "$POLICY" "$log" --netns "$NETNS" -- sh -c "$SL_PROBE tcp 198.51.100.20 80; \
while [ ! -e $go ]; do sleep 0.1; done; $SL_PROBE tcp 198.51.100.20 80; exit 5"
id=$SL_RUN_ID
# sluice run prints the first denial from the run's stream once it supervises the command, the
# daemon having taken its start (killed before that, the daemon takes the command with it)
supervising() { grep -q "deny.*198\.51\.100\.20" "$SL_ERR"; }
wait_until 60000 supervising || tap_diag "no denial on stderr: $(cat "$SL_ERR")"
sl_daemon_kill KILL
said_gone() { grep -q "closed run $id's connection.*its log $log is not ended" "$SL_ERR"; }
wait_until 20000 said_gone
tap_check "daemon died: sluice run says so at once, naming the log" said_gone
sl_daemon_start --spares 0 || bail_out "the daemon did not restart: $(tail "$SL_DAEMON_DIR/err")"
touch "$go"
sluice_wait 60
assert_rc "daemon died: sluice run exits 125, not the command's status" 125
gone="the log $log has no run_end and is not sealed.*sluice resume $id --log $log"
gone+=".*command exited, status 5; sluice run exits 125"
tap_check "daemon died: stderr names the unsealed log, what ends it, the command's status" \
	grep -q "$gone" "$SL_ERR"
tap_is "daemon died: the denied probe, before and after, was refused" \
	"$(grep -c "^err EPERM" "$SL_OUT")" 2
ended() { grep -q '"type":"run_end"' "$log"; }
wait_until 30000 ended
tap_is "daemon restarted: the next daemon ended the run" "$(run_end_field "$log" why)" \
	"cgroup emptied"
tap_check "daemon restarted: the log verifies" verifies "$log" "$id"

# --- --netns: the namespace sluice run opened, sent to the daemon ---------------------------------
# sluice run runs in a mount namespace of its own, where its --netns path is the run namespace
# (bind-mounted over a plain file); in the daemon's the path is that plain file. A daemon that
# opened the path would find no namespace there (the run refused, 125); set up in the
# descriptor sluice run sent, the run's resolver answers the command in the command's namespace.
label=$SL_TMP/netns-label
: >"$label"
if command -v dnsmasq >/dev/null && command -v dig >/dev/null; then
	dns_upstream_start upstream --host-record=ns.handoff.example,198.51.100.10 ||
		bail_out "cannot start dnsmasq"
	sl_on_exit dns_upstream_stop
	printf '%s\n' "default: deny" "rules:" "  - name: named" \
		'    hosts: ["ns.handoff.example"]' "    ports: [80]" >"$SL_TMP/named.yaml"
	# (the daemon restarted above keeps no spare: it loads the run's programs itself)
	log=$SL_TMP/netns.jsonl
	sl_run_setup netns "$SL_TMP/named.yaml" "$log" --netns "$label" \
		--upstream "127.0.0.1:$SL_DNS_PORT" -- \
		dig +time=$((2 * SL_SLOW)) +tries=1 +short @198.51.100.53 ns.handoff.example
	unshare --mount --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
		sh "$NETNS" "$label" timeout -k 5 "$SL_RUN_TIMEOUT" "$SLUICE" "${SL_RUN_ARGV[@]}" \
		>"$SL_OUT" 2>"$SL_ERR" </dev/null
	SL_RC=$?
	sl_run_ended
	assert_rc "netns: the run succeeds though the path names no namespace for the daemon" 0
	tap_check "netns: the daemon took the run" handed "$SL_RUN_ID"
	tap_is "netns: the run's resolver answers the command, in the namespace sluice run opened" \
		"$(head -n 1 "$SL_OUT")" 198.51.100.10 || sluice_diag "$log"
	tap_check "netns: the log verifies" verifies "$log" "$SL_RUN_ID"
else
	tap_skip "netns: the namespace sluice run opened" "dnsmasq or dig not installed"
fi
# what only a forged client sends: refused before anything is set up
req='{"op":"run","run_id":"t-'$SL_ID'-forged","policy":"'$POLICY'","log":"'$SL_TMP'/forged.jsonl",'
req+='"key":"/nonexistent","argv":"4:true","uid":0,"gid":0,"netns":"'$label'"}'
reply=$(sl_daemon_req --fd "$label" "$req")
tap_check "netns: a descriptor that is not a network namespace is refused" \
	grep -q "the descriptor sent is refused: not a namespace file" <<<"$reply" || tap_diag "$reply"
reply=$(sl_daemon_req "$req")
tap_check "netns: a netns without its descriptor is refused" \
	grep -q "the namespace's descriptor must come with the request" <<<"$reply" ||
	tap_diag "$reply"
# a namespace's descriptor sent with a ping belongs to the ping: a run after it on the same
# connection that names a netns and sends none is refused, not set up in the ping's
reply=$(sl_daemon_req --all --fd "$NETNS" --raw '{"op":"ping"}'$'\n'"$req"$'\n' | sed -n 2p)
tap_check "netns: a descriptor that came with another request is not a run's" \
	grep -q "the namespace's descriptor must come with the request" <<<"$reply" ||
	tap_diag "$reply"
tap_check "netns: no forged run was set up" test ! -e "$SL_TMP/forged.jsonl"

# --- a daemon weakened for a selftest takes no run ----------------------------------------------
sl_daemon_kill TERM
SLUICE_SELFTEST_KEEP_PLAIN=1 sl_daemon_start --spares 0 ||
	bail_out "the daemon did not restart: $(tail "$SL_DAEMON_DIR/err")"
log=$SL_TMP/weak.jsonl
sluice_run "$POLICY" "$log" -- sh -c "touch '$SL_TMP/weak.ran'"
assert_rc "weakened daemon: sluice run exits 125" 125
tap_check "weakened daemon: it says why" grep -q "SLUICE_SELFTEST_KEEP_PLAIN set" "$SL_ERR"
tap_check "weakened daemon: the command never ran" test ! -e "$SL_TMP/weak.ran"

tap_done
