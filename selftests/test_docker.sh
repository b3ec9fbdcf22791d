#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Docker (Debian's docker.io: dockerd, its containerd, runc) under sluice, the three ways the
# manual gives (Docker runs no OCI hooks of its own):
# - the runtime: `sluice oci-runtime` as a Docker runtime (daemon.json "runtimes", its
#   "runtimeArgs") adds the oci-hook to each bundle before runc creates the container: confined
#   from its first instruction; with no daemon `docker run` fails and the command never runs;
#   exec, stop and rm go through it to runc; a wrapper that refuses (no runc) fails docker run
#   with its reason (through runc's log). Run by hand with a stand-in runc: runc's arguments
#   reach runc unchanged, the config.json written back keeps what it held (and its mode) with
#   the hook first, once; the hook written refuses annotations asking for another policy or
#   mode; a malformed config.json, a read-only bundle, a global option runc 1.1 lacks, or this
#   program's file removed since it started is refused, saying why (in runc's log too), before
#   runc runs;
# - the parent: sluice attached to an empty cgroup, then `docker run --cgroup-parent` puts the
#   container below it: confined from its first instruction (its first connect, to a denied test
#   host, fails with EPERM and nothing reaches that host; the listed one is reached);
# - `sluice attach --container NAME` on a running container, found through Docker's own state
#   (its container config for the name, runc's state for the process): a loop connecting to an
#   unlisted host stops reaching it at the attach, and the run's log names the container.
# The test's own dockerd runs in a private mount namespace (its /var/lib/docker and /run/docker
# are the test's directories; the CLI that locates the container runs there too), in the
# topology's run netns (`--network host` then means that namespace: every packet goes through
# the test's router to the test hosts), with no bridge and no iptables rules.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
DOCKERD=$(command -v dockerd) || skip_all "dockerd not installed (Debian's docker.io)"
command -v docker >/dev/null || skip_all "the docker client is not installed"
# Every client call bounded: a dockerd that accepts on its socket and never answers (or a
# container that never ends) fails the check that waited for it, not the whole file at the
# VM's time limit with nothing said.
docker() { timeout -k 5 $((120 * SL_SLOW)) docker "$@"; }
require_busybox_static
topo_up

CG2=$(cg2_mount)
PFX=sl-dk-$SL_ID
DK=$SL_TMP/docker
export DOCKER_HOST=unix://$DK/docker.sock
POLICY=$SL_TMP/policy.yaml
cat >"$POLICY" <<'EOF'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
    protocols: [tcp]
EOF

# The mount points the private namespace covers: made here (and removed at the end) when the
# machine has none. On a read-only root (the selftest VMs: this machine's, over 9p) there is no
# making /var/lib/docker: the namespace gets a tmpfs /var/lib to hold it instead.
MADE_DIRS=()
VARLIB_TMPFS=0
for d in /var/lib/docker /run/docker; do
	if [[ ! -d $d ]]; then
		if mkdir -p "$d" 2>/dev/null; then
			MADE_DIRS+=("$d")
		elif [[ $d == /var/lib/docker && ! -w /var/lib ]]; then
			VARLIB_TMPFS=1
		else
			bail_out "cannot make $d"
		fi
	fi
done
DOCKERD_PID=
# shellcheck disable=SC2317 # (run from topo_down)
docker_cleanup() {
	local d
	if [[ -n $DOCKERD_PID ]] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
		local c
		for c in $(docker ps -aq 2>/dev/null); do
			docker rm --force "$c" >/dev/null 2>&1
		done
		kill -TERM "$DOCKERD_PID" 2>/dev/null
		for _ in $(seq $((200 * SL_SLOW))); do
			kill -0 "$DOCKERD_PID" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$DOCKERD_PID" 2>/dev/null
	fi
	# Docker's cgroupfs driver makes the container's cgroup in every hierarchy, below ours
	for d in "$CG2"/../*/"$PFX"-*; do
		[[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	rm -rf -- /sys/fs/bpf/sluice/"$PFX"-*
	for d in "${MADE_DIRS[@]}"; do
		rmdir "$d" 2>/dev/null
	done
	rm -rf -- "$DK" 2>/dev/null
	return 0
}
sl_on_exit docker_cleanup

sl_daemon_start || bail_out "the test's daemon did not start: $(cat "$SL_DAEMON_DIR/err")"
LOGS=$SL_DAEMON_DIR/logs
# the sluice runtime: the hook's options after "oci-runtime", up to the "--" before runc's; and
# one whose --runc is missing, for what Docker's user is told when the wrapper refuses
# Docker before 23 writes its identity key to /etc/docker/key.json unless its configuration
# says otherwise (a key later versions refuse): into the test's directory, not the machine's
# /etc, which the selftest VMs' root does not let it write at all.
mkdir -p "$DK"/{data,exec}
key=
grep -qa 'json:"deprecated-key-path' "$DOCKERD" && key="\"deprecated-key-path\": \"$DK/key.json\","
printf '{%s "runtimes": {"sluice": {"path": "%s", "runtimeArgs":
	["oci-runtime", "--policy", "%s", "--socket", "%s", "--"]},
	"sluice-norunc": {"path": "%s", "runtimeArgs": ["oci-runtime", "--runc", "%s", "--"]}}}\n' \
	"$key" "$SLUICE" "$POLICY" "$SLUICE_SOCKET" "$SLUICE" "$SL_TMP/no-runc" >"$DK/daemon.json"
# shellcheck disable=SC2016 # the inner shell expands them
unshare --mount --propagation private -- sh -c '
	{ [ "$4" = 0 ] || { mount -t tmpfs tmpfs /var/lib && mkdir /var/lib/docker; }; } &&
	mount --bind "$1/data" /var/lib/docker && mount -t tmpfs tmpfs /run/docker &&
	exec nsenter --net="$2" "$3" --data-root /var/lib/docker --exec-root /run/docker \
		--config-file "$1/daemon.json" --pidfile "$1/dockerd.pid" -H "unix://$1/docker.sock" \
		--bridge=none --iptables=false --ip6tables=false --ip-masq=false --userland-proxy=false' \
	sh "$DK" "/run/netns/$SL_NS_RUN" "$DOCKERD" "$VARLIB_TMPFS" >"$DK/dockerd.log" 2>&1 &
DOCKERD_PID=$!
sl_track_pid "$DOCKERD_PID"
dockerd_answers() { timeout -k 2 $((5 * SL_SLOW)) docker info >/dev/null 2>&1; }
wait_until 30000 dockerd_answers ||
	bail_out "dockerd did not start: $(tail -n 3 "$DK/dockerd.log" | tr '\n' ' ')"
# docker_ns CMD…: CMD in dockerd's mount namespace (where Docker's state is)
docker_ns() { nsenter --mount="/proc/$DOCKERD_PID/ns/mnt" -- "$@"; }

tap_plan 38

# the image: busybox and the links its commands need
ROOTFS=$SL_TMP/rootfs
sl_busybox_rootfs "$ROOTFS" || bail_out "cannot make the rootfs"
IMAGE=$PFX-bb:1
tar -C "$ROOTFS" -c . | docker import - "$IMAGE" >/dev/null ||
	bail_out "docker import: cannot make the image"

# --- the parent: attached before the container exists --------------------------------------
# Where AppArmor is enabled Docker confines each container with its own profile, which it loads
# with apparmor_parser; with AppArmor but no parser (the selftest VMs boot with apparmor among
# their LSMs, on a root that may lack the apparmor package) docker run fails: unconfined there.
RUN_OPTS=()
if [[ $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null) == Y ]] &&
	! command -v apparmor_parser >/dev/null; then
	RUN_OPTS=(--security-opt apparmor=unconfined)
fi
PARENT=$CG2/$PFX-parent
mkdir "$PARENT" || bail_out "cannot make $PARENT"
"$SLUICE" attach --cgroup "$PARENT" --netns "/run/netns/$SL_NS_RUN" --policy "$POLICY" \
	--run-id "$PFX-parent" >"$SL_TMP/out" 2>"$SL_TMP/err"
tap_is "parent: sluice attach --cgroup to the empty parent" "$?" 0
sink_mark
timeout $((60 * SL_SLOW)) docker run "${RUN_OPTS[@]}" --rm --network host \
	--cgroup-parent "/$PFX-parent" --name "$PFX-first" "$IMAGE" \
	sh -c 'nc -w 3 198.51.100.20 80 </dev/null; echo "denied-rc=$?"
	echo hi | nc -w 3 198.51.100.10 80; echo "allowed-rc=$?"' >"$SL_TMP/out" 2>"$SL_TMP/err"
rc=$?
tap_is "parent: docker run: its first connect (denied host) failed, the allowed one worked" \
	"$rc $(grep -c '^denied-rc=1$' "$SL_TMP/out") $(grep -c '^allowed-rc=0$' "$SL_TMP/out")" \
	"0 1 1"
[[ $rc -eq 0 ]] || tap_diag "$(cat "$SL_TMP/out" "$SL_TMP/err")"
tap_check "parent: the denied connect failed with EPERM" \
	grep -q "Operation not permitted" "$SL_TMP/err"
assert_sink_none "parent: nothing reached the denied host" "tcp-accept 198.51.100.20"
assert_sink_saw "parent: the allowed host received the container's connection" \
	"tcp 198.51.100.10 80"
assert_log "parent: the run's log has the denial" "$LOGS/$PFX-parent.jsonl" 1 type=decision \
	dst=198.51.100.20 port=80 decision=deny enforced=true rule=default
"$SLUICE" detach --run-id "$PFX-parent" >/dev/null 2>&1 || tap_diag "detach $PFX-parent failed"

# --- a running container: sluice attach --container NAME -----------------------------------
mkdir "$CG2/$PFX-run" || bail_out "cannot make $CG2/$PFX-run"
docker run "${RUN_OPTS[@]}" -d --network host --cgroup-parent "/$PFX-run" --name "$PFX-loop" \
	"$IMAGE" sh -c 'while :; do echo a | nc -w 1 203.0.113.7 80; sleep 0.2; done' \
	>"$SL_TMP/out" 2>"$SL_TMP/err" || bail_out "docker run -d: $(cat "$SL_TMP/err")"
CID=$(cat "$SL_TMP/out")
sink_mark
wait_until 10000 sink_saw "tcp 203.0.113.7 80"
tap_check "running container: unconfined, it reaches the unlisted host" sink_saw "tcp 203.0.113.7 80"
docker_ns "$SLUICE" attach --container "$PFX-loop" --policy "$POLICY" --run-id "$PFX-loop" \
	>"$SL_TMP/out" 2>"$SL_TMP/err"
rc=$?
tap_is "running container: sluice attach --container NAME (Docker's state)" "$rc" 0
[[ $rc -eq 0 ]] || tap_diag "$(cat "$SL_TMP/out" "$SL_TMP/err")"
sleep 1 # a connect in flight at the attach may still land: counted from here on
sink_mark
sleep $((2 * SL_SLOW))
tap_is "running container: attached, nothing more reaches the unlisted host" \
	"$(sink_count 'tcp 203.0.113.7 80')" 0
assert_log "running container: the run's log names the container" "$LOGS/$PFX-loop.jsonl" 1 \
	type=run_start attached=true "source=container:$CID"
assert_log "running container: its denials are logged" "$LOGS/$PFX-loop.jsonl" +1 \
	type=decision dst=203.0.113.7 decision=deny enforced=true
"$SLUICE" detach --run-id "$PFX-loop" >/dev/null 2>&1 || tap_diag "detach $PFX-loop failed"
docker rm --force "$PFX-loop" >/dev/null 2>&1

# --- the runtime: sluice oci-runtime adds the hook, runc runs it -----------------------------
# (--cgroup-parent only puts the containers' cgroups among those the cleanup removes: that
# parent is not attached; each container is, by its hook, with its id as the run id)
sink_mark
timeout $((60 * SL_SLOW)) docker run "${RUN_OPTS[@]}" --runtime sluice --rm --network host \
	--cgroup-parent "/$PFX-rt" --cidfile "$SL_TMP/cid1" "$IMAGE" \
	sh -c 'nc -w 3 198.51.100.20 80 </dev/null; echo "denied-rc=$?"
	echo hi | nc -w 3 198.51.100.10 80; echo "allowed-rc=$?"' >"$SL_TMP/out" 2>"$SL_TMP/err"
rc=$?
CID=$(cat "$SL_TMP/cid1" 2>/dev/null)
[[ -n $CID ]] && SL_RUNS+=("$CID")
tap_is "runtime: --runtime sluice: its first connect (denied) failed, the allowed worked" \
	"$rc $(grep -c '^denied-rc=1$' "$SL_TMP/out") $(grep -c '^allowed-rc=0$' "$SL_TMP/out")" \
	"0 1 1"
[[ $rc -eq 0 ]] || tap_diag "$(cat "$SL_TMP/out" "$SL_TMP/err" "$SL_DAEMON_DIR/err")"
tap_check "runtime: the denied connect failed with EPERM" \
	grep -q "Operation not permitted" "$SL_TMP/err"
assert_sink_none "runtime: nothing reached the denied host" "tcp-accept 198.51.100.20"
assert_sink_saw "runtime: the allowed host received the container's connection" \
	"tcp 198.51.100.10 80"
assert_log "runtime: the hook attached the container, its id the run id" "$LOGS/$CID.jsonl" 1 \
	type=run_start attached=true source=oci-hook
assert_log "runtime: the run's log has the denial" "$LOGS/$CID.jsonl" 1 type=decision \
	dst=198.51.100.20 port=80 decision=deny enforced=true rule=default
"$SLUICE" detach --run-id "$CID" >/dev/null 2>&1

# the commands after create are runc's own, through the wrapper
docker run "${RUN_OPTS[@]}" -d --runtime sluice --network host --cgroup-parent "/$PFX-rt" \
	--name "$PFX-rt2" "$IMAGE" sleep 600 >"$SL_TMP/out" 2>"$SL_TMP/err" ||
	tap_diag "docker run -d --runtime sluice: $(cat "$SL_TMP/err")"
CID=$(cat "$SL_TMP/out")
[[ -n $CID ]] && SL_RUNS+=("$CID" "$CID-2" "$CID-3")
ex=$(docker exec "$PFX-rt2" echo in-it 2>&1)
docker stop -t 1 "$PFX-rt2" >/dev/null 2>&1
st=$?
# started again: the same id, whose first run's log exists (never overwritten): a run of its
# own, CID-2, confined as the first; then docker restart at once (the cgroup made again at the
# same path as the run's, removed an instant before): CID-3
docker start "$PFX-rt2" >/dev/null 2>"$SL_TMP/err"
rc=$?
denied_in() { docker exec "$PFX-rt2" sh -c 'nc -w 3 198.51.100.20 80 </dev/null 2>&1; echo "rc=$?"'; }
out=$(denied_in)
tap_is "runtime: a container started again runs, and is confined (its connect: EPERM)" \
	"$rc $(grep -c 'Operation not permitted' <<<"$out") $(grep -c '^rc=1$' <<<"$out")" "0 1 1" ||
	tap_diag "$out $(cat "$SL_TMP/err") $(tail -n 3 "$SL_DAEMON_DIR/err")"
assert_log "runtime: … under run CID-2, its log its own, the denial in it" "$LOGS/$CID-2.jsonl" 1 \
	type=decision dst=198.51.100.20 port=80 decision=deny enforced=true
docker restart -t 1 "$PFX-rt2" >/dev/null 2>"$SL_TMP/err"
rc=$?
out=$(denied_in)
tap_is "runtime: docker restart: the container runs again, confined" \
	"$rc $(grep -c 'Operation not permitted' <<<"$out")" "0 1" ||
	tap_diag "$out $(cat "$SL_TMP/err") $(tail -n 3 "$SL_DAEMON_DIR/err")"
assert_log "runtime: … under run CID-3" "$LOGS/$CID-3.jsonl" 1 \
	type=decision dst=198.51.100.20 port=80 decision=deny enforced=true
docker rm --force "$PFX-rt2" >/dev/null 2>&1
tap_is "runtime: docker exec, stop and rm through the wrapper" "$ex $st $?" "in-it 0 0"
wait_until 10000 test ! -e "/sys/fs/bpf/sluice/$CID-3"
ok=
for l in "$CID" "$CID-2" "$CID-3"; do
	log_well_formed "$LOGS/$l.jsonl" >/dev/null 2>&1 &&
		"$SLUICE" verify "$LOGS/$l.jsonl" --key "$SLUICE_PUB" >/dev/null 2>&1 && ok+=" ok" ||
		ok+=" $l"
done
tap_is "runtime: each start's log is whole, sealed and verifies (the first never written over)" \
	"$ok" " ok ok ok"
# the wrapper's refusal reaches docker's user through runc's log (Docker shows no runtime stderr)
docker run "${RUN_OPTS[@]}" --runtime sluice-norunc --rm --network host \
	--cgroup-parent "/$PFX-rt" "$IMAGE" true >/dev/null 2>"$SL_TMP/err"
rc=$?
tap_is "runtime: a wrapper that refuses (no runc there): docker run fails, saying why" \
	"$([[ $rc -ne 0 ]] && echo failed) $(grep -c "OCI runtime create failed: sluice \
oci-runtime: --runc $SL_TMP/no-runc: No such file" "$SL_TMP/err")" "failed 1" ||
	tap_diag "docker run: $(cat "$SL_TMP/err")"

# --- the wrapper by hand, with a stand-in runc that says how it was called -------------------
FAKE=$SL_TMP/fake-runc
printf '#!/bin/sh\necho "$@" >"%s"\n' "$SL_TMP/fake-ran" >"$FAKE"
chmod 755 "$FAKE"
B=$SL_TMP/bundle
mkdir "$B"
ORIG='{"ociVersion":"1.0.2","process":{"args":["sh"],"env":["A=\u00e9"]},'\
'"hooks":{"prestart":[{"path":"/bin/true"}],"createRuntime":[{"path":"/bin/true"}]},'\
'"linux":{"resources":{"memory":{"limit":18446744073709551615}}},"x":1.50}'
printf '%s' "$ORIG" >"$B/config.json"
chmod 640 "$B/config.json"
wrapper() { "$SLUICE" oci-runtime --runc "$FAKE" --policy "$POLICY" --mode enforce -- "$@"; }
rm -f "$SL_TMP/fake-ran"
wrapper --root /r -log-format=json --systemd-cgroup create c1 -b "$B" --pid-file /p \
	>"$SL_TMP/out" 2>"$SL_TMP/err"
rc=$?
tap_is "by hand: create reaches runc with its arguments unchanged" \
	"$rc $(cat "$SL_TMP/fake-ran" 2>/dev/null)" \
	"0 --root /r -log-format=json --systemd-cgroup create c1 -b $B --pid-file /p"
tap_check "by hand: config.json keeps what it held and its mode, the hook first" python3 -c '
import json, os, sys
orig, path, sluice, policy = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
new = json.load(open(path))
hook = new["hooks"]["createRuntime"].pop(0)
want = {"path": sluice, "args": ["sluice", "oci-hook", "--policy-fixed", policy, "--mode",
				 "enforce"], "timeout": 75}
sys.exit(0 if new == orig and hook == want and os.stat(path).st_mode & 0o7777 == 0o640 and
	 os.listdir(os.path.dirname(path)) == ["config.json"] else 1)' \
	"$ORIG" "$B/config.json" "$SLUICE" "$POLICY"
cp "$B/config.json" "$SL_TMP/after-create"
rm -f "$SL_TMP/fake-ran"
wrapper --root /r state c1 >/dev/null 2>&1
rc=$?
tap_is "by hand: state goes to runc as it is, the bundle untouched" \
	"$rc $(cat "$SL_TMP/fake-ran" 2>/dev/null) $(cmp -s "$B/config.json" "$SL_TMP/after-create" &&
		echo same)" "0 --root /r state c1 same"
# created again from that bundle: its hook is there, a second one would attach twice (refused)
rm -f "$SL_TMP/fake-ran"
wrapper create -b "$B" c1 >/dev/null 2>&1
tap_is "by hand: a bundle that carries this very hook already is left as it is" \
	"$? $(cat "$SL_TMP/fake-ran" 2>/dev/null) $(cmp -s "$B/config.json" "$SL_TMP/after-create" &&
		echo same)" "0 create -b $B c1 same"

# the hook written binds the runtime's --policy and --mode: a container's annotations (a later
# Docker passes them) naming a looser policy, or report mode, fail its start, saying why
cp "$POLICY" "$SL_TMP/loose.yaml"
# bound ANNOTATIONS: the hook as config.json has it, on a bundle holding ANNOTATIONS: exit, why
bound() {
	python3 -c '
import json, subprocess, sys
path, ann, bundle = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
config = json.load(open(path))
config["annotations"] = ann
json.dump(config, open(path, "w"))
hook = config["hooks"]["createRuntime"][0]
state = {"ociVersion": "1.0.2", "id": "c1", "status": "creating", "pid": 1, "bundle": bundle}
r = subprocess.run([hook["path"]] + hook["args"][1:], input=json.dumps(state).encode(),
		   stderr=subprocess.PIPE, timeout=30)
print(r.returncode, r.stderr.decode().strip())' "$B/config.json" "$1" "$B"
}
tap_is "by hand: the hook refuses an annotation naming another policy, or report mode" \
	"$(bound '{"io.sluice.policy": "'"$SL_TMP/loose.yaml"'"}')
$(bound '{"io.sluice.mode": "report"}')" \
	"2 sluice oci-hook: annotation io.sluice.policy: \"$SL_TMP/loose.yaml\", but this hook \
runs every container under $POLICY (--policy-fixed)
2 sluice oci-hook: annotation io.sluice.mode: \"report\", but this hook runs every container \
in enforce mode (--mode)"

# this program's file removed since it started (an upgrade): the hook would not run it
cp "$SLUICE" "$SL_TMP/sluice-old"
cp "$SL_TMP/after-create" "$B/config.json"
rm -f "$SL_TMP/fake-ran"
(exec 3<"$SL_TMP/sluice-old" && rm "$SL_TMP/sluice-old" &&
	exec /proc/self/fd/3 oci-runtime --runc "$FAKE" -- create -b "$B" c5) >/dev/null \
	2>"$SL_TMP/err"
tap_is "by hand: run from a removed file, it refuses (the hook could not run it)" \
	"$? $(grep -c "this program's file $SL_TMP/sluice-old was removed" "$SL_TMP/err") \
$([[ -e $SL_TMP/fake-ran ]] && echo runc-ran || echo runc-not-run)" "2 1 runc-not-run"

# no --runc: the first runc in $PATH that is not sluice itself (a link named runc would loop)
mkdir "$SL_TMP/p1" "$SL_TMP/p2"
ln -s "$SLUICE" "$SL_TMP/p1/runc"
cp "$FAKE" "$SL_TMP/p2/runc"
rm -f "$SL_TMP/fake-ran"
PATH=$SL_TMP/p1:$SL_TMP/p2:$PATH "$SLUICE" oci-runtime -- --root /r state c1 >/dev/null 2>&1
rc=$?
tap_is "by hand: runc found in \$PATH, passing over a link to sluice itself" \
	"$rc $(cat "$SL_TMP/fake-ran" 2>/dev/null)" "0 --root /r state c1"

# refused before runc runs: a malformed config.json, a bundle it cannot write, a global option
# runc 1.1 does not have (it might take the command for its value)
printf '{"ociVersion": "1.0.2",' >"$B/config.json"
rm -f "$SL_TMP/fake-ran"
runc_ran() { [[ -e $SL_TMP/fake-ran ]] && echo runc-ran || echo runc-not-run; }
(cd "$B" && wrapper --root /r --log "$SL_TMP/log.json" --log-format json create c2) \
	>/dev/null 2>"$SL_TMP/err"
rc=$?
# (and in runc's log as runc writes its errors, whose last one Docker's shim reports)
tap_is "by hand: a malformed config.json (in the working directory) is refused, saying where" \
	"$rc $(grep -c "^sluice oci-runtime: ./config.json: byte 23: .*refusing" "$SL_TMP/err") \
$(runc_ran) $(python3 -c '
import datetime, json, sys
e = json.loads(open(sys.argv[1]).read())
datetime.datetime.strptime(e.pop("time"), "%Y-%m-%dT%H:%M:%SZ")
print("json-logged" if e == {"level": "error", "msg": sys.argv[2]} else e)' "$SL_TMP/log.json" \
	"$(cat "$SL_TMP/err")")" "2 1 runc-not-run json-logged"
printf '{"hooks": {"createRuntime": {}}}' >"$B/config.json"
wrapper create -b "$B" c2 >/dev/null 2>"$SL_TMP/err"
rc=$?
tap_is "by hand: a config.json whose hooks.createRuntime is no array is refused, naming it" \
	"$rc $(grep -c "config.json: hooks.createRuntime: expected an array" "$SL_TMP/err") \
$(runc_ran)" "2 1 runc-not-run"
cp "$SL_TMP/after-create" "$B/config.json"
rm -f "$SL_TMP/fake-ran"
# shellcheck disable=SC2016 # the inner shell expands them
unshare --mount --propagation private -- sh -c 'mount --bind -o ro "$1" "$1" &&
	exec "$2" oci-runtime --runc "$3" -- --log "$4" create --bundle="$1" c3' sh "$B" "$SLUICE" \
	"$FAKE" "$SL_TMP/log.txt" >/dev/null 2>"$SL_TMP/err"
rc=$?
tap_is "by hand: a read-only bundle is refused, saying why (in runc's log: text)" "$rc $(grep -c \
	"config.json: cannot replace it: Read-only file system" "$SL_TMP/err") $(runc_ran) $(grep -c \
	'^time="[0-9T:-]*Z" level=error msg="sluice oci-runtime: .*Read-only file system.*"$' \
	"$SL_TMP/log.txt")" "2 1 runc-not-run 1"
rm -f "$SL_TMP/fake-ran"
wrapper --root /r --new-flag x create --bundle "$B" c4 >/dev/null 2>"$SL_TMP/err"
rc=$?
tap_is "by hand: a global option runc 1.1 lacks is refused" \
	"$rc $(grep -c '"--new-flag": not one of runc' "$SL_TMP/err") $(runc_ran)" "2 1 runc-not-run"

# --- the runtime with no daemon: docker run fails, the container's command never runs --------
sl_daemon_kill TERM
mkdir "$SL_TMP/proof"
sink_mark
timeout $((60 * SL_SLOW)) docker run "${RUN_OPTS[@]}" --runtime sluice --rm --network host \
	--cgroup-parent "/$PFX-rt" -v "$SL_TMP/proof:/proof" "$IMAGE" \
	sh -c 'echo ran >/proof/ran; echo hi | nc -w 3 198.51.100.10 80' >"$SL_TMP/out" \
	2>"$SL_TMP/err"
rc=$?
tap_is "no daemon: docker run --runtime sluice fails, the hook saying why" \
	"$([[ $rc -ne 0 ]] && echo failed) $(grep -c 'sluice oci-hook: .*daemon' "$SL_TMP/err")" \
	"failed 1"
[[ $rc -ne 0 ]] || tap_diag "$(cat "$SL_TMP/out" "$SL_TMP/err")"
tap_is "no daemon: the container's command never ran (no file)" "$(ls "$SL_TMP/proof")" ""
assert_sink_none "no daemon: nothing reached the host it would have connected to" \
	"tcp 198.51.100.10 80"

tap_done
