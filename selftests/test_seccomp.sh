#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# P23: socket families no hook judges. cgroup/sock_create sees inet sockets only and the BPF-LSM
# layer may not load, so the workload's seccomp filter refuses socket() and socketpair() of any
# family but unix, inet, inet6 and netlink with EAFNOSUPPORT, through every ABI (x86_64, x32,
# i386 with socketcall), refuses io_uring_setup unless the policy lists sockets: [io_uring], and
# refuses a seccomp listener of the workload's own; each refusal is logged with its family,
# pid and comm. Ordinary sockets and connections are untouched. A policy can require the
# BPF-LSM layer. Sockets here are only ever created: never connect an AF_VSOCK socket.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up
FAM=$SL_TOOLS/sl_sockfam
[[ -x $FAM ]] || bail_out "$FAM not built (make)"
NS=/run/netns/$SL_NS_RUN

policy=$SL_TMP/seccomp.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [80, 9999]
EOF2

# What the same unprivileged process gets without sluice: the hole on this kernel.
as_nobody() { in_run setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
without=$(as_nobody "$FAM" socket:vsock i386-socket:unix)
tap_diag "without sluice, as nobody: $(tr '\n' ' ' <<<"$without")"
vsock_hole=$(grep -c '^socket:vsock ok$' <<<"$without")
i386=$(grep -c '^i386-socket:unix ok$' <<<"$without")

# family label of each call, as the log names it
refused=(socket:vsock:vsock socket:packet:packet socket:xdp:3:xdp socket:tipc:tipc
	socket:bluetooth:bluetooth socket:alg:alg socket:can:can socket:key:key
	socketpair:vsock:vsock socketpair:tipc:tipc)
calls=()
for c in "${refused[@]}"; do calls+=("${c%:*}"); done
log=$SL_TMP/families.jsonl
sluice_run "$policy" "$log" --user nobody --netns "$NS" -- "$FAM" "${calls[@]}" \
	socket:unix socket:inet socket:inet:2 socket:inet6 socket:inet6:2 socket:netlink \
	socketpair:unix
tap_is "P23: the run ends normally" "$SL_RC" 0
tap_is "P23: run_start says the filter is in force" "$(log_run_start_field "$log" seccomp)" True
if [[ $vsock_hole -eq 1 ]]; then
	tap_ok "P23: without sluice, nobody creates an AF_VSOCK socket here (the hole)"
else
	tap_skip "P23: without sluice, nobody creates an AF_VSOCK socket here (the hole)" \
		"no vsock on this kernel: $without"
fi
for c in "${refused[@]}"; do
	call=${c%:*}
	fam=${c##*:}
	tap_check "P23 $call: refused with EAFNOSUPPORT" grep -qx "$call EAFNOSUPPORT" "$SL_OUT"
	tap_cmp "P23 $call: the log has the refusal with its family, pid and comm" \
		"$(log_lines "$log" type=decision hook=seccomp decision=deny reason=socket_family \
			"family=$fam" abi=x86_64 errno=EAFNOSUPPORT comm=sl_sockfam |
			grep -c "\"what\":\"${call%%:*}(")" -eq 1
done
tap_cmp "P23: each refusal has one line, with a pid" \
	"$(log_lines "$log" type=decision hook=seccomp | grep -c '"pid":[0-9]')" -eq "${#refused[@]}"
tap_check "P23: stderr says what was refused" \
	grep -q '^egress denied: socket(AF_VSOCK, 1, 0) (rule: surface, x86_64) pid=[0-9]* comm=sl_sockfam' \
	"$SL_ERR"
for call in socket:unix socket:inet socket:inet:2 socket:inet6 socket:inet6:2 socket:netlink \
	socketpair:unix; do
	tap_check "P23 control: $call works" grep -qx "$call ok" "$SL_OUT"
done
tap_check "P23: the log is well formed (sl_logcheck.py)" log_well_formed "$log"
tap_check "P23: sluice verify accepts the log" "$SLUICE" verify "$log"
assert_no_leftovers "P23 families: nothing left"

# Even as root (no --user): packet sockets, also as AF_INET with the obsolete SOCK_PACKET type,
# which the kernel turns into a packet socket that no cgroup hook sees.
log=$SL_TMP/root.jsonl
sluice_run "$policy" "$log" --netns "$NS" -- "$FAM" socket:packet socket:inet:10 socket:inet:1
for call in socket:packet socket:inet:10; do
	tap_check "P23 root $call: refused with EAFNOSUPPORT" grep -qx "$call EAFNOSUPPORT" "$SL_OUT"
done
tap_cmp "P23 root: both logged as packet sockets" \
	"$(log_count "$log" type=decision hook=seccomp family=packet)" -eq 2
tap_check "P23 root control: socket:inet:1 works" grep -qx "socket:inet:1 ok" "$SL_OUT"
assert_no_leftovers "P23 root: nothing left"

# The i386 ABI (int $0x80 from this 64-bit binary) and x32: no way around the filter.
log=$SL_TMP/abi.jsonl
if [[ $i386 -eq 1 ]]; then
	sluice_run "$policy" "$log" --user nobody --netns "$NS" -- "$FAM" i386-socket:vsock \
		i386-socketpair:vsock i386-socketcall:vsock i386-socketcall:inet x32-socket:vsock \
		i386-socket:inet i386-socket:unix i386-socketpair:unix
	for call in i386-socket:vsock i386-socketpair:vsock i386-socketcall:vsock \
		i386-socketcall:inet x32-socket:vsock; do
		tap_check "P23 $call: refused with EAFNOSUPPORT" grep -qx "$call EAFNOSUPPORT" "$SL_OUT"
	done
	tap_cmp "P23 i386: socket and socketpair refusals are logged with the family" \
		"$(log_count "$log" type=decision hook=seccomp abi=i386 family=vsock)" -eq 2
	# socketcall's arguments are behind a pointer: refused, and logged, without reading them
	tap_cmp "P23 i386: socketcall is refused for inet too, logged without a family" \
		"$(log_count "$log" type=decision hook=seccomp abi=i386 family=null)" -eq 2
	tap_cmp "P23 x32: the refusal is logged" \
		"$(log_count "$log" type=decision hook=seccomp abi=x32 family=vsock)" -eq 1
	for call in i386-socket:inet i386-socket:unix i386-socketpair:unix; do
		tap_check "P23 i386 control: $call works" grep -qx "$call ok" "$SL_OUT"
	done
	tap_check "P23 i386: the log is well formed" log_well_formed "$log"
	assert_no_leftovers "P23 i386: nothing left"
else
	tap_skip "P23 i386 and x32 ABIs" "this kernel runs no i386 system calls: $without"
fi

# socketcall's arguments live in the workload's memory. Reading them to describe the refusal
# would let the workload stall sluice: a page behind a userfaultfd nobody serves (root opens
# /dev/userfaultfd, capabilities or not) holds the reader in the fault, and with it sluice's
# loop: no answers, no log, no signals. sluice answers without reading them.
log=$SL_TMP/uffd.jsonl
if [[ $i386 -eq 1 && -c /dev/userfaultfd ]]; then
	sluice_start "$policy" "$log" --netns "$NS" -- "$FAM" i386-socketcall-uffd:vsock socket:unix
	wait_until 10000 grep -qs '^socket:unix' "$SL_OUT"
	tap_check "P23 socketcall behind a stalled page: refused (EAFNOSUPPORT), sluice not held" \
		grep -qx "i386-socketcall-uffd:vsock EAFNOSUPPORT" "$SL_OUT"
	# a held sluice does not even end on SIGTERM: then SIGKILL, and scrub what it left
	wait_until 5000 sh -c "! kill -0 $SL_RUN_PID 2>/dev/null"
	kill -TERM "$SL_RUN_PID" 2>/dev/null
	wait_until 5000 sh -c "! kill -0 $SL_RUN_PID 2>/dev/null"
	kill -KILL "$SL_RUN_PID" 2>/dev/null
	{ wait "$SL_RUN_PID"; } 2>/dev/null
	tap_cmp "P23 socketcall behind a stalled page: the refusal is logged" \
		"$(log_count "$log" type=decision hook=seccomp abi=i386 family=null \
			errno=EAFNOSUPPORT)" -eq 1
	SL_RUN_CGID=$(log_run_start_field "$log" cgroup_id)
	sl_scrub_run "$SL_RUN_ID"
	assert_no_leftovers "P23 socketcall behind a stalled page: nothing left"
else
	tap_skip "P23 socketcall behind a stalled page" "no i386 system calls, or no userfaultfd"
fi

# The listener is sluice's alone: a workload that takes it (pidfd_getfd of its parent, sluice)
# would answer the refused calls itself, with "continue". The default root workload cannot: it
# runs in a PID namespace of its own (sluice has no pid there) without CAP_SYS_PTRACE. With
# --allow-root (the control) it can, which is what that option warns about.
steal=$SL_TMP/steal.py
cat >"$steal" <<'EOF2'
import ctypes, fcntl, os, socket, struct, threading, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
pp, lfd, mine = os.getppid(), None, -1
try:
    for f in os.listdir('/proc/%d/fd' % pp):
        try:
            if os.readlink('/proc/%d/fd/%s' % (pp, f)) == 'anon_inode:seccomp notify':
                lfd = int(f)
        except OSError:
            pass
except OSError:
    pass
if lfd is not None:
    pidfd = libc.syscall(434, pp, 0)                          # pidfd_open
    mine = libc.syscall(438, pidfd, lfd, 0) if pidfd >= 0 else -1  # pidfd_getfd
print('listener taken' if mine >= 0 else 'listener not taken')
def serve():
    while True:
        req = bytearray(80)
        try:
            fcntl.ioctl(mine, 0xc0502100, req)                # SECCOMP_IOCTL_NOTIF_RECV
            resp = bytearray(struct.pack('=QqiI', struct.unpack_from('=Q', req)[0], 0, 0, 1))
            fcntl.ioctl(mine, 0xc0182101, resp)               # NOTIF_SEND, FLAG_CONTINUE
        except OSError:
            return
if mine >= 0:
    threading.Thread(target=serve, daemon=True).start()
    time.sleep(0.5)
made = 0
for i in range(20):
    try:
        socket.socket(40, socket.SOCK_STREAM).close()      # AF_VSOCK: never connected
        made += 1
    except OSError:
        pass
print('vsock made', made)
EOF2
log=$SL_TMP/steal.jsonl
sluice_run "$policy" "$log" --netns "$NS" -- python3 "$steal"
tap_diag "root workload: $(tr '\n' ' ' <"$SL_OUT")"
tap_check "P23 root: the workload cannot take sluice's listener (pidfd_getfd)" \
	grep -qx "listener not taken" "$SL_OUT"
tap_check "P23 root: no AF_VSOCK socket is made past the filter" grep -qx "vsock made 0" "$SL_OUT"
tap_cmp "P23 root: every AF_VSOCK socket not made is logged" \
	"$(log_count "$log" type=decision hook=seccomp family=vsock)" -eq 20
assert_no_leftovers "P23 root listener: nothing left"
log=$SL_TMP/steal-allow-root.jsonl
sluice_run "$policy" "$log" --allow-root --netns "$NS" -- python3 "$steal"
tap_check "P23 control: with --allow-root the probe does take sluice's listener" \
	grep -qx "listener taken" "$SL_OUT"
assert_no_leftovers "P23 root listener control: nothing left"

# io_uring makes sockets unseen: refused by default, with what it takes to allow it; a seccomp
# listener of the workload's own could answer refused calls with "continue": refused too.
log=$SL_TMP/uring.jsonl
sluice_run "$policy" "$log" --user nobody --netns "$NS" -- "$FAM" io_uring listener socket:unix
tap_check "P23: io_uring_setup is refused with ENOSYS by default" grep -qx "io_uring ENOSYS" "$SL_OUT"
tap_cmp "P23: the io_uring refusal is logged" \
	"$(log_count "$log" type=decision hook=seccomp errno=ENOSYS family=null)" -eq 1
tap_check "P23: a seccomp listener of the workload's own is refused (EPERM)" \
	grep -qx "listener EPERM" "$SL_OUT"
tap_cmp "P23: the listener refusal is logged" \
	"$(log_count "$log" type=decision hook=seccomp errno=EPERM)" -eq 1
tap_check "P23 control: after them, sockets still work" grep -qx "socket:unix ok" "$SL_OUT"
assert_no_leftovers "P23 io_uring: nothing left"

opted=$SL_TMP/uring.yaml
{ cat "$policy"; echo "sockets: [io_uring]"; } >"$opted"
log=$SL_TMP/uring-opted.jsonl
sluice_run "$opted" "$log" --user nobody --netns "$NS" -- "$FAM" io_uring socket:vsock
tap_check "P23: with sockets: [io_uring], io_uring_setup works" grep -qx "io_uring ok" "$SL_OUT"
tap_check "P23: with sockets: [io_uring], socket(AF_VSOCK) is still refused" \
	grep -qx "socket:vsock EAFNOSUPPORT" "$SL_OUT"
tap_check "P23: policy check says what opting in to io_uring costs" \
	sh -c "'$SLUICE' policy check '$opted' | grep -q 'io_uring: allowed.*any family'"
tap_check "P23: policy check says io_uring is refused by default" \
	sh -c "'$SLUICE' policy check '$policy' | grep -q 'io_uring: refused'"
assert_no_leftovers "P23 io_uring opted in: nothing left"

# An ordinary run is unaffected: a listed host is reached, an unlisted one still denied by the
# cgroup hooks, names resolve through getaddrinfo (netlink), as root and as nobody.
for user in root nobody; do
	log=$SL_TMP/ordinary-$user.jsonl
	as=()
	[[ $user == nobody ]] && as=(--user nobody)
	sluice_run "$policy" "$log" "${as[@]}" --netns "$NS" -- python3 -c "
import socket
socket.getaddrinfo('localhost', 80, flags=socket.AI_ADDRCONFIG)
for dst in ('198.51.100.10', '198.51.100.20'):
    try:
        s = socket.create_connection((dst, 80), timeout=5)
        s.sendall(b'seccomp\\n')
        s.close()
        print(dst, 'sent')
    except OSError as e:
        print(dst, 'err', e.errno)
"
	tap_is "P23 control ($user): a listed host is reached, an unlisted one denied" \
		"$(tr '\n' ' ' <"$SL_OUT")" "198.51.100.10 sent 198.51.100.20 err 1 "
	tap_cmp "P23 control ($user): no seccomp line" "$(log_count "$log" hook=seccomp)" -eq 0
	assert_no_leftovers "P23 control ($user): nothing left"
done

# A dead sluice answers nothing: the kernel fails the refused calls with ENOSYS (closed, not open).
log=$SL_TMP/dead.jsonl
sluice_start "$policy" "$log" --user nobody --netns "$NS" -- sh -c \
	"sleep $((2 * SL_SLOW)); $FAM socket:vsock socket:unix"
wait_until 10000 grep -qs '"run_start"' "$log" || tap_diag "no run_start in $log"
kill -KILL "$SL_RUN_PID"
{ wait "$SL_RUN_PID"; } 2>/dev/null
wait_until 20000 grep -qs '^socket:unix' "$SL_OUT"
tap_check "P23 sluice killed: socket(AF_VSOCK) fails with ENOSYS" grep -qx "socket:vsock ENOSYS" "$SL_OUT"
tap_check "P23 sluice killed: socket(AF_UNIX) still works" grep -qx "socket:unix ok" "$SL_OUT"
sl_scrub_run "$SL_RUN_ID"

# With the filter off (selftests only), the same calls get through: what the filter catches.
log=$SL_TMP/off.jsonl
SLUICE_SELFTEST_NO_SECCOMP=1 sluice_run "$policy" "$log" --user nobody --netns "$NS" -- \
	"$FAM" socket:vsock io_uring listener
tap_is "P23 filter off: run_start says so" "$(log_run_start_field "$log" seccomp)" False
if [[ $vsock_hole -eq 1 && $(log_run_start_field "$log" lsm) == True ]]; then
	# the BPF-LSM layer (make vmtest's 6.12) refuses a family the policy does not allow as well
	tap_check "P23 filter off: the BPF-LSM layer refuses socket(AF_VSOCK) all the same" \
		sh -c '! grep -qx "socket:vsock ok" "$1" && [ "$2" -ge 1 ]' sh "$SL_OUT" \
		"$(log_count "$log" type=decision hook=lsm reason=socket_kind)"
elif [[ $vsock_hole -eq 1 ]]; then
	tap_check "P23 filter off: socket(AF_VSOCK) is created" grep -qx "socket:vsock ok" "$SL_OUT"
fi
tap_check "P23 filter off: io_uring_setup works" grep -qx "io_uring ok" "$SL_OUT"
assert_no_leftovers "P23 filter off: nothing left"

# require: [lsm]: a run without the BPF-LSM layer does not start its command.
req=$SL_TMP/require.yaml
{ cat "$policy"; echo "require: [lsm]"; } >"$req"
lsm=$(log_run_start_field "$SL_TMP/families.jsonl" lsm)
log=$SL_TMP/require.jsonl
rm -f "$SL_TMP/started"
sluice_run "$req" "$log" --netns "$NS" -- touch "$SL_TMP/started"
if [[ $lsm == True ]]; then
	tap_is "require: [lsm]: with the layer, the run starts" "$SL_RC" 0
	tap_check "require: [lsm]: the command ran" test -e "$SL_TMP/started"
else
	tap_is "require: [lsm]: without the layer, the run fails (125)" "$SL_RC" 125
	tap_check "require: [lsm]: the command never started" test ! -e "$SL_TMP/started"
	tap_check "require: [lsm]: stderr says why" grep -q 'requires the BPF-LSM layer' "$SL_ERR"
	tap_check "require: [lsm]: no log is left" test ! -e "$log"
fi
assert_no_leftovers "require: [lsm]: nothing left"

tap_done
