#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The security team's view: `sluice events` and `sluice metrics` on real logs of `sluice run`.
# Filters (--decision, --run-id, --host, --type) print exactly the lines an independent filter
# (Python, here) picks, as they are or as compact lines; a malformed line in the middle and a
# torn last line are reported with their line numbers and the rest still printed; -f follows a
# live run's log across the writer's rotations (a denial shows up while the run is still going,
# and what it printed is the whole log, segment after segment, no line lost or twice); the
# metrics of the logs, written as a textfile, are read by the real prometheus-node-exporter and
# scraped over HTTP: the sluice series hold the counts Python computes from the logs, and no
# label names a run. Without LOG, the daemon's live stream of a run attached to a cgroup the test
# made: a denial shows up at once, filtered alike, each line as the run's log has it.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
command -v curl >/dev/null || skip_all "curl not installed"
NODE_EXPORTER=$(command -v prometheus-node-exporter || command -v node_exporter) ||
	skip_all "prometheus-node-exporter not installed"
topo_up

policy=$SL_TMP/events.yaml
cat >"$policy" <<'EOF2'
default: deny
rules:
  - name: test-host
    cidrs: ["198.51.100.10/32"]
    ports: [80]
EOF2

# py_lines EXPR LOG…: the lines (as they are) of the logs (rotated segments first) whose record
# r makes EXPR true.
py_lines() {
	python3 - "$@" <<'EOF2'
import fnmatch, gzip, json, os, sys
expr, paths = sys.argv[1], sys.argv[2:]
def glob(r, g):
    return any(isinstance(r.get(k), str) and fnmatch.fnmatchcase(r[k].lower(), g.lower())
               for k in ("host", "sni", "name", "dst"))
for path in paths:
    files, k = [], 1
    while True:
        seg = f"{path}.{k:06d}"
        if os.path.exists(seg):
            files.append(open(seg, "rb"))
        elif os.path.exists(seg + ".gz"):
            files.append(gzip.open(seg + ".gz", "rb"))
        else:
            break
        k += 1
    files.append(open(path, "rb"))
    for f in files:
        for raw in f:
            r = json.loads(raw)
            if eval(expr):
                sys.stdout.write(raw.decode())
EOF2
}

# events_is NAME EXPR ARGS…: `sluice events ARGS…` prints exactly py_lines EXPR's lines.
events_is() {
	local name=$1 expr=$2 got want rc
	shift 2
	got=$("$SLUICE" events -o json "$@" "$log" 2>"$SL_TMP/events.err")
	rc=$?
	want=$(py_lines "$expr" "$log")
	if [[ $rc -eq 0 && $got == "$want" && -n $want ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected exit 0 and the $(wc -l <<<"$want") line(s) of $expr
got exit $rc and $(wc -l <<<"$got") line(s): $(head -c 600 <<<"$got") $(cat "$SL_TMP/events.err")"
	fi
}

# scraped LINE: the daemon's metrics (port $mport), scraped into $SL_TMP/m.txt, have this line.
# shellcheck disable=SC2317 # called through wait_until and tap_check
scraped() {
	curl -sf "http://127.0.0.1:$mport/metrics" -o "$SL_TMP/m.txt" &&
		grep -qxF -- "$1" "$SL_TMP/m.txt"
}

# ---------------------------------------------------------------------------------------------
# 1. A finished run: one allow, three denials (two TCP, one UDP)

log=$SL_TMP/run1.jsonl
sluice_run "$policy" "$log" -- "${RUN_EXEC[@]}" sh -c "$SL_PROBE tcp 198.51.100.10 80
	$SL_PROBE tcp 198.51.100.20 80; $SL_PROBE tcp 198.51.100.20 80
	$SL_PROBE udp-sendto 203.0.113.7 5353; true"
assert_rc "run 1 exits 0" 0
run1=$SL_RUN_ID
tap_cmp "run 1's log has three deny lines" \
	"$(py_lines 'r.get("decision") == "deny"' "$log" | wc -l)" -eq 3

events_is "--decision deny prints exactly the deny lines" 'r.get("decision") == "deny"' \
	--decision deny
events_is "--decision allow --type decision: the allow decision lines" \
	'r["type"] == "decision" and r.get("decision") == "allow"' --decision allow --type decision
events_is "--host '198.51.100.2?': lines with such a dst" 'glob(r, "198.51.100.2?")' \
	--host '198.51.100.2?'
events_is "--type run_start,run_end: those two" 'r["type"] in ("run_start", "run_end")' \
	--type run_start,run_end
events_is "--run-id: every line of the run" "r.get('run_id') == '$run1'" --run-id "$run1"
events_is "no filter: every line" 'True'
tap_is "--run-id of another run: nothing" "$("$SLUICE" events --run-id nope "$log")" ""
tap_is "- reads standard input" "$("$SLUICE" events -o json --decision deny - <"$log")" \
	"$(py_lines 'r.get("decision") == "deny"' "$log")"

re="^20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{3}Z $run1 "
re+="decision deny 198\.51\.100\.20:80/tcp rule=default reason=default_deny hook=connect4 "
re+="[0-9]+/sl_probe$"
compact=$("$SLUICE" events -o compact --decision deny --type decision --host '198.51.100.20' \
	"$log")
tap_is "compact: per TCP denial, time, run, verdict, dst:port/proto, rule, reason, pid/comm" \
	"$(grep -cE "$re" <<<"$compact")/$(wc -l <<<"$compact")" "2/2"
re=" $run1 decision deny 203\.0\.113\.7:5353/udp rule=default reason=default_deny "
re+="hook=sendmsg4 [0-9]+/sl_probe$"
tap_is "compact: the UDP denial" \
	"$("$SLUICE" events -o compact --host 203.0.113.7 "$log" | grep -cE "$re")" 1
tap_check "bad usage: exit 2" bash -c "'$SLUICE' events --decision maybe '$log' 2>/dev/null
	[[ \$? -eq 2 ]]"
tap_check "--help is a manual page" bash -c "'$SLUICE' events --help | grep -q '^SYNOPSIS'"

# ---------------------------------------------------------------------------------------------
# 2. Malformed lines: reported with their line numbers, the stream goes on

bad=$SL_TMP/bad.jsonl
{
	head -n 3 "$log"
	echo '{"seq":3,"prev":"x"}'
	tail -n +4 "$log"
	printf '{"seq":'
} >"$bad"
n=$(($(wc -l <"$log") + 2))
"$SLUICE" events -o json "$bad" >"$SL_TMP/bad.out" 2>"$SL_TMP/bad.err"
rc=$?
tap_is "a malformed line: exit 1" "$rc" 1
tap_check "line 4 is reported with its number and why" \
	grep -qE "^sluice events: $bad:4: byte [0-9]+: .+; skipped$" "$SL_TMP/bad.err"
tap_check "the torn last line (line $n) too" \
	grep -qE "^sluice events: $bad:$n: no newline at the end" "$SL_TMP/bad.err"
tap_is "every other line is printed" "$(cat "$SL_TMP/bad.out")" "$(cat "$log")"
tap_is "the count on stderr" "$(tail -n 1 "$SL_TMP/bad.err")" \
	"sluice events: 2 malformed line(s) skipped"

# ---------------------------------------------------------------------------------------------
# 3. -f on a live run whose log rotates every 4 KiB

flog=$SL_TMP/follow.jsonl
"$SLUICE" events -f -o compact --decision deny "$flog" >"$SL_TMP/f-deny.out" \
	2>"$SL_TMP/f-deny.err" &
fdeny=$!
sl_track_pid "$fdeny"
"$SLUICE" events -f "$flog" >"$SL_TMP/f-all.out" 2>"$SL_TMP/f-all.err" &
fall=$!
sl_track_pid "$fall"
sluice_start "$policy" "$flog" --log-rotate-kib 4 -- "${RUN_EXEC[@]}" sh -c "
	while [ ! -e $SL_TMP/go ]; do sleep 0.05; done
	$SL_PROBE tcp 198.51.100.20 80 >/dev/null
	while [ ! -e $SL_TMP/more ]; do sleep 0.05; done
	for i in \$(seq 40); do $SL_PROBE tcp 198.51.100.20 81 >/dev/null; done
	$SL_PROBE tcp 198.51.100.10 80 >/dev/null
	while [ ! -e $SL_TMP/stop ]; do sleep 0.05; done"
wait_until 10000 test -s "$flog"
touch "$SL_TMP/go"
if wait_until 10000 grep -q ' decision deny 198\.51\.100\.20:80/tcp ' "$SL_TMP/f-deny.out"; then
	if pid_running "$SL_RUN_PID"; then
		tap_ok "-f: the denial shows up while the run is live"
	else
		tap_fail "-f: the denial shows up while the run is live" "the run had ended"
	fi
else
	tap_fail "-f: the denial shows up while the run is live" \
		"nothing in 10 s: $(cat "$SL_TMP/f-deny.out" "$SL_TMP/f-deny.err")"
fi
touch "$SL_TMP/more"
wait_until 20000 test -e "$flog.000002.gz"
touch "$SL_TMP/stop"
sluice_wait 30 || sl_stop_pid "$SL_RUN_PID"
assert_rc "the followed run exits 0" 0
tap_check "its log rotated (LOG.000002.gz exists)" test -e "$flog.000002.gz"
total=$(py_lines True "$flog" | wc -l)
wait_until 5000 eval '[[ $(wc -l <"$SL_TMP/f-all.out") -ge $total ]]'
tap_check "-f printed the whole log across the rotations: no line lost or twice" \
	cmp "$SL_TMP/f-all.out" <(py_lines True "$flog")
tap_is "-f --decision deny: 41 compact lines" \
	"$(grep -c " $SL_RUN_ID decision deny 198\.51\.100\.20:8[01]/tcp " "$SL_TMP/f-deny.out")" 41
tap_check "-f: both followers still run after the run ended" pid_running "$fdeny"
sl_stop_pid "$fdeny"
sl_stop_pid "$fall"
tap_is "-f: nothing on stderr" "$(cat "$SL_TMP/f-all.err" "$SL_TMP/f-deny.err")" ""
log=$flog events_is "without -f, the rotated segments are read first" 'True'
log=$flog events_is "... and filtered alike" 'r.get("decision") == "deny"' --decision deny

# ---------------------------------------------------------------------------------------------
# 4. The metrics, through node-exporter's textfile collector

prom=$SL_TMP/prom
mkdir -p "$prom"
tap_check "sluice metrics --textfile" "$SLUICE" metrics --textfile "$prom/sluice.prom" "$log" \
	"$flog"
tap_is "the textfile is what sluice metrics prints" "$(cat "$prom/sluice.prom")" \
	"$("$SLUICE" metrics "$log" "$flog")"
tap_is "no temporary file left beside it" "$(ls -A "$prom")" sluice.prom

scrape=$SL_TMP/scrape.txt
port=
for _ in 1 2 3; do
	port=$(sl_free_port)
	"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
		--collector.textfile --collector.textfile.directory="$prom" \
		>"$SL_TMP/node-exporter.log" 2>&1 &
	nepid=$!
	sl_track_pid "$nepid"
	wait_until 10000 curl -sf -o "$scrape" "http://127.0.0.1:$port/metrics" && break
	sl_stop_pid "$nepid"
done
if [[ -s $scrape ]]; then
	tap_ok "node-exporter serves the textfile"
else
	tap_fail "node-exporter serves the textfile" "$(cat "$SL_TMP/node-exporter.log")"
fi
check=$(python3 - "$scrape" "$("$SLUICE" version)" "$log" "$flog" <<'EOF2'
import gzip, json, os, re, sys
scrape, version, paths = sys.argv[1], sys.argv[2].split()[1], sys.argv[3:]
recs, run_ids = [], []
for path in paths:
    k = 1
    while os.path.exists(f"{path}.{k:06d}.gz"):
        recs += [json.loads(l) for l in gzip.open(f"{path}.{k:06d}.gz", "rb")]
        k += 1
    recs += [json.loads(l) for l in open(path, "rb")]
    run_ids.append(next(r["run_id"] for r in recs if r["type"] == "run_start" and r["run_id"]))
series = {}
text = open(scrape).read()
for line in text.splitlines():
    if line.startswith("#") or not line.startswith("sluice_"):
        continue
    m = re.fullmatch(r'([a-z_]+)(?:\{(.*)\})? (\S+)', line)
    labels = tuple(sorted(re.findall(r'([a-z_]+)="([^"]*)"', m.group(2) or "")))
    series[(m.group(1), labels)] = float(m.group(3))
def want(name, value, **labels):
    got = series.get((name, tuple(sorted(labels.items()))))
    if got != value:
        print(f"{name}{labels}: expected {value}, got {got}")
want("sluice_build_info", 1, version=version)
dec = {}
for r in recs:
    if r["type"] == "decision":
        k = (r["decision"], "true" if r.get("enforced", True) else "false", r["reason"], r["hook"])
        dec[k] = dec.get(k, 0) + 1
for (d, e, reason, hook), n in dec.items():
    want("sluice_decisions_total", n, decision=d, enforced=e, reason=reason, hook=hook)
if len([k for k in series if k[0] == "sluice_decisions_total"]) != len(dec):
    print("decision series: expected", len(dec))
if dec.get(("deny", "true", "default_deny", "connect4"), 0) != 43:
    print("expected 43 connect4 default_deny decisions in the logs, got", dec)
flows = [r for r in recs if r["type"] == "flow"]
want("sluice_flows_total", len(flows))
want("sluice_flow_bytes_total", sum(r["req_bytes"] for r in flows), direction="request")
want("sluice_flow_bytes_total", sum(r["resp_bytes"] for r in flows), direction="response")
want("sluice_runs_started_total", 2, mode="enforce")
want("sluice_runs_ended_total", 2, mode="enforce")
want("sluice_runs_active", 0, mode="enforce")
want("sluice_events_lost_total", sum(r["count"] for r in recs if r["type"] == "loss"), hook="log")
want("sluice_log_lines_total", sum(1 for r in recs if r["type"] == "checkpoint"), type="checkpoint")
want("sluice_metrics_malformed_lines_total", 0)
if not any(l.startswith("node_textfile_scrape_error 0") for l in text.splitlines()):
    print("node_textfile_scrape_error is not 0")
for rid in run_ids:
    if rid in text:
        print("the run id", rid, "appears in the scrape")
if "run_id" in text or "198.51.100" in text:
    print("a run id label or an address appears in the scrape")
print("ok")
EOF2
)
tap_is "the scrape holds the logs' counts, and no run id" "$check" ok
sl_stop_pid "$nepid"

# ---------------------------------------------------------------------------------------------
# 5. Without LOG: the daemon's live stream, filtered alike

# shellcheck disable=SC2119 # no extra daemon arguments
if ! sl_daemon_start; then
	tap_fail "the daemon starts" "$(cat "$SL_TMP/daemon/err" 2>/dev/null)"
	tap_done
fi
sl_on_exit "sl_daemon_kill TERM"
cg=$(sl_cgroup_new ev) || bail_out "cannot make the test cgroup"
rd=t-$SL_ID-d
SL_RUNS+=("$rd")
"$SLUICE" events -o compact --decision deny >"$SL_TMP/d-deny.out" 2>"$SL_TMP/d-deny.err" &
dv1=$!
sl_track_pid "$dv1"
"$SLUICE" events -o json --run-id nope >"$SL_TMP/d-nope.out" 2>"$SL_TMP/d-nope.err"
tap_is "--run-id of a run the daemon does not have: refused, exit 1" \
	"$?:$(grep -c 'the daemon refused' "$SL_TMP/d-nope.err")" "1:1"
t0=$(date +%s%N)
req="{\"op\":\"attach\",\"run_id\":\"$rd\",\"cgroup\":\"$cg\",\"policy\":\"$policy\","
req+="\"netns\":\"/run/netns/$SL_NS_RUN\"}"
out=$(sl_daemon_req --fd "/run/netns/$SL_NS_RUN" "$req")
tap_check "a run is attached to a cgroup the test made" test "${out:0:10}" == '{"ok":true'
[[ ${out:0:10} == '{"ok":true' ]] || tap_diag "$out"$'\n'"$(tail -5 "$SL_TMP/daemon/err")"
tap_diag "the attach took $((($(date +%s%N) - t0) / 1000000)) ms"
dlog=$SL_TMP/daemon/logs/$rd.jsonl
"$SLUICE" events -o json --run-id "$rd" >"$SL_TMP/d-run.out" 2>"$SL_TMP/d-run.err" &
dv2=$!
sl_track_pid "$dv2"
# The viewers see what is written after they connect: deny until the first one shows it.
seen=0
for _ in $(seq $((20 * SL_SLOW))); do
	sl_in_cgroup "$cg" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp 198.51.100.20 80 >/dev/null
	if grep -q " $rd decision deny 198\.51\.100\.20:80/tcp rule=default" "$SL_TMP/d-deny.out" &&
		grep -q '"decision":"deny"' "$SL_TMP/d-run.out"; then
		seen=1
		break
	fi
	sleep 0.5
done
tap_is "sluice events (no LOG) shows the attached run's denial live, compact and as JSON" \
	"$seen" 1
[[ $seen == 1 ]] || tap_diag "$(cat "$SL_TMP"/d-*.out "$SL_TMP"/d-*.err)"
tap_is "the daemon's stream sent no allow line through --decision deny" \
	"$(grep -vc ' decision deny ' "$SL_TMP/d-deny.out")" 0
sl_in_cgroup "$cg" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp 198.51.100.10 80 >/dev/null
wait_until 5000 grep -q '"decision":"allow"' "$SL_TMP/d-run.out"
bad=0
while IFS= read -r line; do
	grep -qxF -- "$line" "$dlog" || bad=$((bad + 1))
done <"$SL_TMP/d-run.out"
tap_is "every line the --run-id stream printed is a line of the run's log, as it is there" \
	"$bad" 0
tap_cmp "... the deny and the allow at least" "$(grep -c . "$SL_TMP/d-run.out")" -ge 2
tap_is "the viewers reported nothing malformed" "$(cat "$SL_TMP/d-deny.err" "$SL_TMP/d-run.err")" ""
sl_daemon_req "{\"op\":\"detach\",\"run_id\":\"$rd\"}" >/dev/null
sl_stop_pid "$dv1"
sl_stop_pid "$dv2"

# ---------------------------------------------------------------------------------------------
# 6. The daemon's metrics: --metrics-listen (HTTP from its poll loop) and --metrics-textfile

tap_is "sluice daemon --help names --metrics-listen and --metrics-textfile" \
	"$("$SLUICE" daemon --help 2>&1 | grep -o -e --metrics-listen -e --metrics-textfile |
		sort -u | tr '\n' ' ')" "--metrics-listen --metrics-textfile "
sl_daemon_kill TERM
mport=$(sl_free_port)
# shellcheck disable=SC2119
if ! sl_daemon_start --metrics-listen "127.0.0.1:$mport" --metrics-textfile "$prom/daemon.prom"
then
	tap_fail "the daemon starts with --metrics-listen" "$(tail -5 "$SL_TMP/daemon/err")"
	tap_done
fi
cg=$(sl_cgroup_new m) || bail_out "cannot make the test cgroup"
rm_=t-$SL_ID-m
SL_RUNS+=("$rm_")
req="{\"op\":\"attach\",\"run_id\":\"$rm_\",\"cgroup\":\"$cg\",\"policy\":\"$policy\","
req+="\"netns\":\"/run/netns/$SL_NS_RUN\"}"
out=$(sl_daemon_req --fd "/run/netns/$SL_NS_RUN" "$req")
tap_check "a run is attached" test "${out:0:10}" == '{"ok":true'
sl_in_cgroup "$cg" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp 198.51.100.20 80 >/dev/null
sl_in_cgroup "$cg" "${RUN_EXEC_NETONLY[@]}" "$SL_PROBE" tcp 198.51.100.10 80 >/dev/null
s='sluice_decisions_total{decision="deny",enforced="true",reason="default_deny",hook="connect4"} 1'
wait_until 5000 scraped "$s"
tap_check "GET /metrics: the denial is counted" grep -qxF -- "$s" "$SL_TMP/m.txt"
tap_check "... and the allow" grep -qxF -- \
	'sluice_decisions_total{decision="allow",enforced="true",reason="rule",hook="connect4"} 1' \
	"$SL_TMP/m.txt"
tap_check "... one active run in enforce mode" grep -qxF 'sluice_runs_active{mode="enforce"} 1' \
	"$SL_TMP/m.txt"
tap_is "... and no run id" "$(grep -c -e "$rm_" -e run_id "$SL_TMP/m.txt")" 0
tap_is "POST: 405, another path: 404" \
	"$(curl -s -X POST -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/metrics") $(
		curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/")" "405 404"
# A client that connects and sends nothing must not hold the loop.
python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.send(b"GET /metr")
time.sleep(30)' "$mport" &
slow=$!
sl_track_pid "$slow"
sleep 0.5
t0=$(date +%s%N)
"$SLUICE" status >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
tap_cmp "a silent HTTP client does not hold the daemon's loop (status took ${ms} ms)" "$ms" \
	-lt $((2000 * SL_SLOW))
tap_check "nor the other HTTP clients" scraped "$s"
sl_stop_pid "$slow"
sl_daemon_req "{\"op\":\"detach\",\"run_id\":\"$rm_\"}" >/dev/null
sl_daemon_kill TERM
tap_check "--metrics-textfile: written at the end, the run ended" grep -qxF \
	'sluice_runs_ended_total{mode="enforce"} 1' "$prom/daemon.prom"

tap_done
