#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Escape probes that take other roads into the kernel's socket code (ids as in selftests/README.md's
# probe table):
# P10 TCP Fast Open (sendto with MSG_FASTOPEN) to an unlisted host; P11 io_uring connect and
# sendmsg to an unlisted host; P17 the loader SIGKILLed mid-run (enforcement continues, pinned;
# sluice resume records the gap and ends the run);
# P19 an unprivileged process of the run trying to detach the programs.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
topo_up
[[ -x $SL_TOOLS/sl_uring ]] || bail_out "$SL_TOOLS/sl_uring not built (liburing-dev, make)"

policy=$SL_TMP/probes.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32", "2001:db8::10/128"]
    ports: [80, 9999]
EOF2
in_run sysctl -qw net.ipv4.tcp_fastopen=5

# P10: TCP Fast Open puts data in the SYN; connect() is never called.
tfo='
import socket, sys
for dst in sys.argv[1:]:
    s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.sendto(b"tfo\n", socket.MSG_FASTOPEN, (dst, 80))
        s.shutdown(socket.SHUT_WR)
        s.recv(64)
        print(dst, "sent")
    except OSError as e:
        print(dst, "err", e.errno)
    s.close()
'
log=$SL_TMP/tfo.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" python3 -c "$tfo" 198.51.100.20 2001:db8::20 198.51.100.10
tap_check "P10: TCP Fast Open to an unlisted IPv4 host fails with EPERM" grep -qx '198.51.100.20 err 1' "$SL_OUT"
tap_check "P10: TCP Fast Open to an unlisted IPv6 host fails with EPERM" grep -qx '2001:db8::20 err 1' "$SL_OUT"
tap_check "P10 control: TCP Fast Open to the listed host gets through" grep -qx '198.51.100.10 sent' "$SL_OUT"
assert_sink_none "P10: nothing reaches the unlisted hosts" 'tcp 198.51.100.20' 'tcp 2001:db8::20' \
	'tcp-accept 198.51.100.20' 'tcp-accept 2001:db8::20'
tap_cmp "P10: the log has both denials" \
	"$(log_count "$log" type=decision decision=deny port=80 proto=tcp)" -eq 2
assert_no_leftovers "P10: nothing left"

# P11: io_uring's connect and sendmsg operations, under a policy that allows io_uring (the
# workload's seccomp filter refuses io_uring_setup otherwise: test_seccomp.sh).
uring=$SL_TMP/probes-uring.yaml
{ cat "$policy"; echo "sockets: [io_uring]"; } >"$uring"
for c in "connect 198.51.100.20 80 tcp connect4" "connect 2001:db8::20 80 tcp connect6" \
	"sendmsg 198.51.100.20 9999 udp sendmsg4" "sendmsg 2001:db8::20 9999 udp sendmsg6"; do
	read -r op addr port proto hook <<<"$c"
	log=$SL_TMP/uring-$op-$hook.jsonl
	sluice_run "$uring" "$log" -- "${RUN_EXEC[@]}" "$SL_TOOLS/sl_uring" "$op" "$addr" "$port"
	tap_is "P11: io_uring $op to unlisted $addr fails with EPERM" "$(cat "$SL_OUT")" "err EPERM"
	assert_sink_none "P11: io_uring $op: nothing reaches $addr" "$proto $addr" "tcp-accept $addr"
	tap_cmp "P11: io_uring $op: the log has the denial ($hook)" \
		"$(log_count "$log" type=decision decision=deny "dst=$addr" "hook=$hook")" -eq 1
	assert_no_leftovers "P11: io_uring $op $addr: nothing left"
done
log=$SL_TMP/uring-ok.jsonl
sluice_run "$uring" "$log" -- "${RUN_EXEC[@]}" sh -c \
	"$SL_TOOLS/sl_uring connect 198.51.100.10 80 && $SL_TOOLS/sl_uring sendmsg 198.51.100.10 9999"
tap_is "P11 control: io_uring connect and sendmsg to the listed host work" \
	"$(tr '\n' ' ' <"$SL_OUT")" "ok ok "
assert_sink_saw "P11 control: the datagram arrives" 'udp 198.51.100.10 9999'
assert_no_leftovers "P11 control: nothing left"

# P19: an unprivileged process of the run tries to take the programs off: through the pins, the
# cgroup, or the BPF link ids (which the test looks up and hands to it). The same probe as full
# root (--allow-root, the control) does open the links, so the probe itself works.
cg=$(cg2_mount)
detach_probe() {
	local id=$1 only=${2:-}
	cat <<PY
import ctypes, os, socket, struct, time
pins = '/sys/fs/bpf/sluice/$id'
tries = {
    'unlink pin': lambda: os.unlink(pins + '/connect4'),
    'list pins': lambda: os.listdir(pins),
    'leave cgroup': lambda: open('$cg/cgroup.procs', 'w').write(str(os.getpid())),
    'kill run cgroup': lambda: open('$cg/sluice/$id/cgroup.kill', 'w').write('1'),
}
for name, f in ({} if '$only' else tries).items():
    try:
        f(); print(name, 'done')
    except OSError as e:
        print(name, 'refused')
for _ in range(100):
    if os.path.exists('$SL_TMP/$id.links'):
        break
    time.sleep(0.05)
ids = [int(x) for x in open('$SL_TMP/$id.links').read().split()]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
got = 0
for i in ids:
    attr = ctypes.create_string_buffer(struct.pack('IIII', i, 0, 0, 0) + bytes(112))
    # bpf(BPF_LINK_GET_FD_BY_ID, …)
    if libc.syscall(ctypes.c_long(321), ctypes.c_long(30), attr, ctypes.c_long(128)) >= 0:
        got += 1
print('link fds', got, 'of', len(ids))
s = socket.socket()
try:
    s.connect(('198.51.100.20', 80)); print('connect done')
except OSError as e:
    print('connect refused', e.errno)
PY
}
# detach_run LOG [EXTRA…] -- [links-only]: run the probe, handing it the run's link ids.
detach_run() {
	local log=$1 only=${3:-} id cgid
	id=$(sluice_next_run_id)
	if [[ -n $2 ]]; then
		sluice_start "$policy" "$log" $2 --netns "/run/netns/$SL_NS_RUN" -- \
			python3 -c "$(detach_probe "$id" "$only")"
	else
		sluice_start "$policy" "$log" --netns "/run/netns/$SL_NS_RUN" -- \
			python3 -c "$(detach_probe "$id" "$only")"
	fi
	# run_start is on file before the command starts (the log is created first)
	wait_until 60000 grep -qs '"type":"run_start"' "$log"
	cgid=$(log_run_start_field "$log" cgroup_id)
	bpftool link list -j | python3 -c '
import json, sys
print(" ".join(str(l["id"]) for l in json.load(sys.stdin) if l.get("cgroup_id") == int(sys.argv[1])))' \
		"$cgid" >"$SL_TMP/$id.links.tmp"
	mv "$SL_TMP/$id.links.tmp" "$SL_TMP/$id.links"
	sluice_wait 20 || tap_diag "the P19 run did not end"
	SL_RUN_CGID=$cgid
}
log=$SL_TMP/detach.jsonl
detach_run "$log" "--user nobody"
for what in "unlink pin" "list pins" "leave cgroup" "kill run cgroup"; do
	tap_check "P19: as nobody, '$what' is refused" grep -qx "$what refused" "$SL_OUT"
done
tap_check "P19: as nobody, none of the run's BPF links can be opened by id" \
	grep -qE '^link fds 0 of [1-9][0-9]*$' "$SL_OUT"
tap_check "P19: and the policy still holds" grep -qx 'connect refused 1' "$SL_OUT"
assert_no_leftovers "P19: nothing left"
log=$SL_TMP/detach-root.jsonl
detach_run "$log" "--allow-root" links-only
tap_check "P19 control: as full root (--allow-root), the probe opens every one of the run's links" \
	grep -qE '^link fds ([1-9][0-9]*) of \1$' "$SL_OUT"
assert_no_leftovers "P19 control: nothing left"

# P17: the loader dies (SIGKILL); the pinned programs keep judging what is left in the cgroup.
log=$SL_TMP/killed.jsonl
sluice_start "$policy" "$log" -- "${RUN_EXEC[@]}" sh -c \
	"while :; do $SL_TOOLS/sl_probe tcp 198.51.100.20 80 >>$SL_TMP/p17.out 2>&1; sleep 0.2; done"
killed_id=$SL_RUN_ID
for _ in $(seq $((100 * SL_SLOW))); do [[ -s $SL_TMP/p17.out ]] && break; sleep 0.05; done
disown "$SL_RUN_PID" 2>/dev/null # first: no "Killed" job notice in the TAP stream
kill -KILL "$SL_RUN_PID"
for _ in $(seq $((100 * SL_SLOW))); do kill -0 "$SL_RUN_PID" 2>/dev/null || break; sleep 0.05; done
: >"$SL_TMP/p17.out"
sleep 1.5
tap_check "P17: sluice is gone, the workload still runs" test -n "$(cat "$cg/sluice/$killed_id/cgroup.procs" 2>/dev/null)"
tap_cmp "P17: the workload kept probing after the kill" "$(grep -c . "$SL_TMP/p17.out")" -ge 3
tap_is "P17: every probe after the kill was still refused" \
	"$(grep -vc '^err EPERM' "$SL_TMP/p17.out")" 0
assert_sink_none "P17: nothing reached the unlisted host" 'tcp 198.51.100.20'
tap_check "P17: the links are still pinned" test -e "/sys/fs/bpf/sluice/$killed_id/connect4"
# On restart the log records the gap: sluice resume takes the run over, writes what the kernel
# kept while no writer read, and ends the run when told to.
dead_lines=$(wc -l <"$log")
"$SLUICE" resume "$killed_id" --log "$log" >"$SL_TMP/p17-resume.out" 2>"$SL_TMP/p17-resume.err" &
resume_pid=$!
sl_track_pid "$resume_pid"
# shellcheck disable=SC2317 # called through wait_until
restarted() { [[ $(log_count "$log" type=writer_restart) -eq 1 ]]; }
wait_until 5000 restarted
kill -TERM "$resume_pid"
wait "$resume_pid"
tap_is "P17: sluice resume takes the run over and ends it on SIGTERM (128+15)" "$?" 143 ||
	tap_diag_file "$SL_TMP/p17-resume.err"
tap_is "P17: the log records the restart right after the dead writer's last line" \
	"$(log_count "$log" type=writer_restart "seq=$dead_lines")" 1
tap_cmp "P17: the denials made while no writer lived are in the log" \
	"$(tail -n +"$((dead_lines + 1))" "$log" | grep -c '"decision":"deny"')" -ge 3
"$SLUICE" verify "$log" >"$SL_TMP/p17-verify.out" 2>&1
tap_is "P17: the resumed log verifies: intact and complete" "$?" 0
tap_check "P17: cleaned up by sluice resume" leftovers_check "$killed_id"

tap_done
