#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# P27: the default workload (no --user) is root, but a confined one. As an attacker would, it
# tries to leave the run's cgroup (for the root cgroup and for a sibling), to kill another
# cgroup, to enter sluice's network namespace through /proc/<sluice pid>/ns/net, to open packet
# and raw sockets, to open and detach the run's BPF links (by id, through the pins, with
# bpftool), to unlink the pins, to read the host key, to write a sysctl, to append to or move
# the log, and to SIGKILL sluice: every one fails, and the run's traffic is still judged. The
# same probe with --allow-root (the control) succeeds, and run_start says which it was.
# Ordinary root work still works.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up

cg=$(cg2_mount)
policy=$SL_TMP/rootsafe.yaml
cat >"$policy" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF
sib=$cg/sl-sib-$SL_ID
sl_on_exit "rmdir '$sib' 2>/dev/null"

# The attacker. argv: attack|control RUN_ID. It waits for the test to hand it sluice's pid and
# the run's link ids (an attacker finds them with ps and bpftool; here it cannot, which is the
# point, so it is told), then reports each attempt as "NAME done" or "NAME refused". Whatever
# might reach past the test's namespaces (setns into sluice's) happens in a child process that
# sends nothing; sockets are only created.
probe=$SL_TMP/rootsafe_probe.py
cat >"$probe" <<EOF
import ctypes, os, signal, socket, struct, subprocess, sys, time
mode, rid, log = sys.argv[1], sys.argv[2], sys.argv[3]
attack = mode == 'attack'
tmp, cg, sib = '$SL_TMP', '$cg', '$sib'
pins = '/sys/fs/bpf/sluice/' + rid
for _ in range(400):
    if os.path.exists(tmp + '/' + rid + '.go'):
        break
    time.sleep(0.05)
spid = int(open(tmp + '/' + rid + '.pid').read())
links = [int(x) for x in open(tmp + '/' + rid + '.links').read().split()]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr + bytes(128 - len(attr)))
    return libc.syscall(ctypes.c_long(321), ctypes.c_long(cmd), buf, ctypes.c_long(128))

def report(name, f):
    try:
        ok = f()
    except OSError:
        ok = False
    print(name, 'done' if ok else 'refused', flush=True)

def write(path, data):
    with open(path, 'w') as f:
        f.write(data)
    return True

def in_child(f):
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if f() else 1)
        except BaseException:
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0

def setns_sluice():
    # candidates: the pid handed over, the parent, any process named sluice
    cands = {spid, os.getppid()}
    for p in os.listdir('/proc'):
        try:
            if p.isdigit() and open('/proc/%s/comm' % p).read().strip() == 'sluice':
                cands.add(int(p))
        except OSError:
            pass
    def enter(p):
        fd = os.open('/proc/%d/ns/net' % p, os.O_RDONLY)
        return libc.setns(fd, 0x40000000) == 0 and \
            os.readlink('/proc/thread-self/ns/net') != mine
    mine = os.readlink('/proc/thread-self/ns/net')
    return any(in_child(lambda p=p: enter(p)) for p in cands)

def link_fds():
    got = 0
    for i in links:
        fd = bpf(30, struct.pack('IIII', i, 0, 0, 0))  # BPF_LINK_GET_FD_BY_ID
        if fd >= 0:
            got += 1
            if attack:
                bpf(34, struct.pack('I', fd))  # BPF_LINK_DETACH
    print('link fds', got, 'of', len(links), flush=True)
    return got > 0

def pin_get():
    path = ctypes.create_string_buffer((pins + '/connect4').encode())
    fd = bpf(7, struct.pack('QII', ctypes.addressof(path), 0, 0))  # BPF_OBJ_GET
    if fd >= 0 and attack:
        bpf(34, struct.pack('I', fd))
    return fd >= 0

def bpftool_detach():
    return any(subprocess.run(['bpftool', 'link', 'detach', 'id', str(i)],
                              stderr=subprocess.DEVNULL).returncode == 0 for i in links)

def read_key():
    return len(open(os.environ['SLUICE_KEY'], 'rb').read()) > 0

def sysctl_same():
    path = '/proc/sys/net/ipv4/ip_forward'
    return write(path, open(path).read())  # the value it has: a probe, not a change

report('packet socket', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) and True)
report('setns sluice netns', setns_sluice)
report('link by id', link_fds)
report('pin open', pin_get)
report('list pins', lambda: os.listdir(pins) and True)
report('read host key', read_key)
report('write sysctl', sysctl_same)
if attack:
    report('raw socket', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, 255) and True)
    report('bpftool detach', bpftool_detach)
    report('unlink pin', lambda: os.unlink(pins + '/connect4') or True)
    report('append to the log', lambda: open(log, 'a').write('x') and True)
    report('move the log away', lambda: os.rename(log, log + '.moved') or True)
    report('kill sibling cgroup', lambda: write(sib + '/cgroup.kill', '1'))
    report('move to sibling cgroup', lambda: write(sib + '/cgroup.procs', str(os.getpid())))
    report('move to root cgroup', lambda: write(cg + '/cgroup.procs', str(os.getpid())))
    report('kill sluice', lambda: os.kill(spid, signal.SIGKILL) or True)
    time.sleep(0.5)
else:
    report('signal sluice', lambda: os.kill(spid, 0) or True)
for dst in ('198.51.100.20', '198.51.100.10'):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((dst, 80))
        print('connect', dst, 'ok', flush=True)
    except OSError as e:
        print('connect', dst, 'err', e.errno, flush=True)
    s.close()
EOF

# rootsafe_run LOG MODE [EXTRA…]: the probe in a run (in the test's run netns), handed sluice's
# pid and the run's link ids once run_start is written.
rootsafe_run() {
	local log=$1 mode=$2 id cgid
	shift 2
	id=$(sluice_next_run_id)
	sluice_start "$policy" "$log" "$@" --netns "/run/netns/$SL_NS_RUN" -- \
		python3 "$probe" "$mode" "$id" "$log"
	wait_until 5000 grep -qs '"type":"run_start"' "$log"
	cgid=$(log_run_start_field "$log" cgroup_id)
	bpftool link list -j | python3 -c '
import json, sys
print(" ".join(str(l["id"]) for l in json.load(sys.stdin) if l.get("cgroup_id") == int(sys.argv[1])))' \
		"$cgid" >"$SL_TMP/$id.links"
	echo "$SL_RUN_PID" >"$SL_TMP/$id.pid"
	mkdir -p "$sib"
	: >"$SL_TMP/$id.go"
	sluice_wait 30 || tap_diag "the P27 run did not end"
	SL_RUN_CGID=$cgid
}

# --- the default: root, confined ----------------------------------------------------------
log=$SL_TMP/default.jsonl
rootsafe_run "$log" attack
for what in "packet socket" "raw socket" "setns sluice netns" "link by id" "pin open" \
	"list pins" "bpftool detach" "unlink pin" "read host key" "write sysctl" \
	"append to the log" "move the log away" \
	"kill sibling cgroup" "move to sibling cgroup" "move to root cgroup"; do
	tap_check "P27: default root: '$what' is refused" grep -qx "$what refused" "$SL_OUT"
done
tap_check "P27: default root: none of the run's BPF links can be opened by id" \
	grep -qE '^link fds 0 of [1-9][0-9]*$' "$SL_OUT"
tap_is "P27: default root: SIGKILL did not reach sluice: it exits with the command's status" \
	"$SL_RC" 0
tap_cmp "P27: default root: sluice sealed the log (run_end, final checkpoint)" \
	"$(log_count "$log" type=run_end exit_status=0)" -eq 1
"$SLUICE" verify "$log" >"$SL_TMP/default-verify.out" 2>&1
tap_is "P27: default root: the log verifies, intact and sealed" "$?" 0
tap_cmp "P27: run_start says the root was confined (allow_root false, uid 0)" \
	"$(log_count "$log" type=run_start uid=0 allow_root=false)" -eq 1
tap_check "P27: default root: the policy still holds afterwards (unlisted host refused)" \
	grep -qx 'connect 198.51.100.20 err 1' "$SL_OUT"
tap_check "P27: default root: the listed host is still reached" \
	grep -qx 'connect 198.51.100.10 ok' "$SL_OUT"
assert_sink_none "P27: default root: nothing reaches the unlisted host" 'tcp-accept 198.51.100.20'
tap_cmp "P27: default root: both connects are judged and logged" \
	"$(($(log_count "$log" type=decision decision=deny dst=198.51.100.20) + \
	$(log_count "$log" type=decision decision=allow dst=198.51.100.10)))" -eq 2
tap_check "P27: the sibling cgroup stayed empty" test -z "$(cat "$sib/cgroup.procs" 2>/dev/null)"
assert_no_leftovers "P27: default root: nothing left"
[[ $SL_TAP_FAILED -eq 0 ]] || sluice_diag "$log"

# --- the control: --allow-root, the same probe (without the destructive attempts) ------------
log=$SL_TMP/allow-root.jsonl
rootsafe_run "$log" control --allow-root
tap_check "P27 control: --allow-root opens every one of the run's links by id" \
	grep -qE '^link fds ([1-9][0-9]*) of \1$' "$SL_OUT"
for what in "setns sluice netns" "pin open" "list pins" "read host key" "write sysctl" \
	"signal sluice"; do
	tap_check "P27 control: --allow-root: '$what' works" grep -qx "$what done" "$SL_OUT"
done
# Full root keeps every capability, but not the socket-family filter (test_seccomp.sh).
tap_check "P27 control: --allow-root: a packet socket is still refused by the seccomp filter" \
	grep -qx "packet socket refused" "$SL_OUT"
tap_cmp "P27 control: run_start says allow_root" \
	"$(log_count "$log" type=run_start uid=0 allow_root=true)" -eq 1
tap_check "P27 control: --allow-root is warned about on stderr" \
	grep -q 'WARNING: --allow-root: .* full root' "$SL_ERR"
assert_no_leftovers "P27 control: nothing left"

sluice_run "$policy" "$SL_TMP/both.jsonl" --allow-root --user nobody -- true
assert_rc "P27: --allow-root with --user is refused" 125

# --- ordinary root work under the default ----------------------------------------------------
log=$SL_TMP/work.jsonl
work=$SL_TMP/work
sluice_run "$policy" "$log" --netns "/run/netns/$SL_NS_RUN" -- sh -c "
	set -e
	id -u
	mkdir -p $work/d && echo data >$work/d/f && chown nobody:nogroup $work/d/f
	chmod 600 $work/d/f && stat -c '%U %a' $work/d/f
	tar -C $work -cf $work/t.tar d && tar -C $work -xf $work/t.tar -O d/f
	setpriv --reuid nobody --regid nogroup --clear-groups id -u
	$SL_PROBE tcp 198.51.100.10 80
	ps -e -o pid= | wc -l | tr -d ' '
	exit 7"
tap_is "P27: default root works: uid 0, files made and chowned, tar, setpriv to nobody, the listed host" \
	"$(head -n 5 "$SL_OUT" | tr '\n' ' ')" "0 nobody 600 data 65534 ok "
tap_cmp "P27: the command sees only its own processes (its own PID namespace)" \
	"$(sed -n 6p "$SL_OUT")" -le 8
assert_rc "P27: default root: the command's exit status passes through" 7
assert_sink_saw "P27: default root: the listed host received the connection" "tcp 198.51.100.10 80"
assert_no_leftovers "P27: ordinary work: nothing left"
# The log the workload sees is a read-only mount of the file sluice started: rotation (a rename
# and a new file in sluice's own namespace) still works.
log=$SL_TMP/rotate.jsonl
sluice_run "$policy" "$log" --log-rotate-kib 1 --netns "/run/netns/$SL_NS_RUN" -- python3 -c '
import socket
for i in range(40):
    s = socket.socket()
    try:
        s.connect(("198.51.100.20", 80))
    except OSError:
        pass
    s.close()
'
assert_rc "P27: default root with --log-rotate-kib: the run exits 0" 0
tap_cmp "P27: the log rotated into segments" \
	"$(find "$SL_TMP" -maxdepth 1 -name 'rotate.jsonl.*.gz' | wc -l)" -ge 1
"$SLUICE" verify "$log" >"$SL_TMP/rotate-verify.out" 2>&1
tap_is "P27: the rotated log verifies across its segments" "$?" 0
assert_no_leftovers "P27: rotation: nothing left"
sluice_run "$policy" "$SL_TMP/sig.jsonl" -- sh -c 'kill -TERM $$'
assert_rc "P27: default root: a command killed by SIGTERM gives 128+15" 143
sluice_run "$policy" "$SL_TMP/nx.jsonl" -- /nonexistent/cmd
assert_rc "P27: default root: a missing command is still 127" 127

tap_done
