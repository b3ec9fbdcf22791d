#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make e2e: a real package task four ways, one table (issue 14; selftests/e2e/README.md).
# The same workload (selftests/e2e/workload.sh: npm ci, pnpm install --frozen-lockfile,
# pip install, git clone, git fetch, then the bad steps) against the local internet of
# e2e-lib.sh, run
#   open    the network as it is: everything gets out, the bad steps too;
#   none    a network namespace with only loopback: the legitimate steps fail;
#   proxy   open, with HTTPS_PROXY (and the rest) naming tinyproxy, which allows the registries
#           and the git host only: what honours the variable is filtered, what ignores it (node's
#           https in the install script, a raw socket, curl --noproxy, DNS) gets out;
#   sluice  sluice run enforcing the registries and the git host: the legitimate steps succeed,
#           the bad ones are denied at once, each logged and explained on stderr;
# then the workflow: the same workload in report mode (everything passes but the metadata
# address, the denials logged as not enforced), and [HOOK policy-suggest] the policy suggested
# from that log, enforced; then npm ci through a pull-through cache, cold and warm.
# Per way and step: the outcome, the step's wall time, what the receiving hosts logged (and
# whether the request came through the proxy). Checks each expectation (TAP), prints the table
# as markdown and writes it with a JSON copy to $E2E_OUT_DIR (default .output/e2e). Every sluice
# log is checked with sluice verify, and made into one HTML page with sluice report.

# shellcheck disable=SC2119 # e2e_missing, e2e_up: optional arguments
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=e2e-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

E2E_OUT_DIR=${E2E_OUT_DIR:-$REPO/.output/e2e}
STEPS=(npm-ci pnpm pip git-clone git-fetch paste upload metadata unlisted)
LEGIT=(npm-ci pnpm pip git-clone git-fetch)
BAD=(telemetry paste upload metadata unlisted)

require_root
require_sluice
missing=$(e2e_missing proxy tun)
[[ -n $missing ]] && bail_out "make e2e cannot run: $(paste -sd ';' <<<"$missing")"
topo_up
e2e_up || bail_out "cannot build the local internet (e2e_up)"
e2e_proxy_up || bail_out "tinyproxy did not start: $(tail -n 5 "$E2E/logs/tinyproxy.out")"
e2e_policy "$E2E/policy.yaml"
mkdir -p "$E2E_OUT_DIR"
ROWS=$E2E/rows.tsv
: >"$ROWS"

# host_of STEP: the access log (E2E_LOGS name) of the host the step talks to ("" for DNS).
host_of() {
	case $1 in
	npm-ci | pnpm | telemetry) [[ $1 == telemetry ]] && echo telemetry || echo npm ;;
	pip) echo files ;;
	git-*) echo git ;;
	paste) echo paste ;;
	upload) echo transfer ;;
	metadata) echo metadata ;;
	esac
}

# seen_summary LOG STEP…: "N req" the host logged during the steps, "via proxy" / "direct".
seen_summary() {
	local log=$1 n d=0 p=0 st
	shift
	for st in "$@"; do
		while read -r _ _ remote _; do
			[[ $remote == 10.200.1.2 ]] && d=$((d + 1)) || p=$((p + 1))
		done < <(e2e_seen_lines "$log" "$st")
	done
	n=$((d + p))
	if [[ $n -eq 0 ]]; then
		echo "0 req"
	elif [[ $p -eq 0 ]]; then
		echo "$n req direct"
	elif [[ $d -eq 0 ]]; then
		echo "$n req via proxy"
	else
		echo "$n req ($p via proxy, $d direct)"
	fi
}

# record WAY WALL_S LOG: one row per step (and the telemetry row) of the last e2e_run.
record() {
	local way=$1 wall=$2 log=$3 st ok seen denied extra
	for st in "${STEPS[@]}" telemetry; do
		if [[ $st == telemetry ]]; then
			# The install scripts' call, during npm ci and pnpm install: it got out if its host
			# saw it.
			seen=$(seen_summary telemetry npm-ci pnpm)
			[[ $seen == "0 req" ]] && ok=0 || ok=1
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$way" telemetry "$ok" "-" "$seen" \
				"$(denials "$log" "$E2E_TELEM_HOST")" >>"$ROWS"
			continue
		fi
		[[ ${E2E_RC[$st]} == 0 ]] && ok=1 || ok=0
		if [[ $st == unlisted ]]; then
			seen="$(e2e_dns_seen "$E2E_UNLISTED") DNS queries"
			[[ $seen == "1 DNS queries" ]] && seen="1 DNS query"
		else
			seen=$(seen_summary "$(host_of "$st")" "$st")
		fi
		case $st in
		paste) denied=$(denials "$log" pastebin.com) ;;
		upload) denied=$(denials "$log" transfer.sh) ;;
		metadata) denied=$(denials "$log" "$E2E_META_IP") ;;
		unlisted) denied=$(denials "$log" "$E2E_UNLISTED") ;;
		*) denied=$(denials "$log" "") ;;
		esac
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$way" "$st" "$ok" "${E2E_MS[$st]}" "$seen" \
			"$denied" >>"$ROWS"
	done
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$way" whole 1 "$wall" "-" "" >>"$ROWS"
}

# denials LOG NAME: "denied N×" for the log's deny lines naming NAME (any, for ""), "" without a
# log; "(not enforced)" in report mode.
denials() {
	local log=$1 name=$2 n ne
	[[ -f $log ]] || return 0
	if [[ -n $name ]]; then
		n=$(grep '"decision":"deny"' "$log" | grep -c "\"$name\"")
		ne=$(grep '"decision":"deny"' "$log" | grep '"enforced":false' | grep -c "\"$name\"")
	else
		n=0 ne=0
	fi
	[[ $n -eq 0 ]] && return 0
	[[ $ne -eq $n ]] && echo "logged deny ×$n, not enforced" || echo "denied ×$n, logged"
}

# run_way WAY [LOG]: the workload in WAY, timed whole, recorded.
run_way() {
	local way=$1 log=${2-} t0 t1
	e2e_dns_mark
	t0=$(date +%s%3N)
	e2e_run "$way" "$log" "${STEPS[@]}"
	t1=$(date +%s%3N)
	cp "$E2E_ERR" "$E2E_OUT_DIR/$way.stderr"
	for st in "${STEPS[@]}"; do
		cp "$E2E_W/$st.out" "$E2E_OUT_DIR/$way.$st.out" 2>/dev/null
	done
	record "$way" "$((t1 - t0))" "$log"
}

row() { awk -F'\t' -v w="$1" -v s="$2" '$1 == w && $2 == s' "$ROWS"; }
ok_of() { row "$1" "$2" | cut -f3; }

# expect WAY STEP WANT WHY: TAP check of one outcome (1: it worked / got out; 0: it did not).
expect() {
	local got
	got=$(ok_of "$1" "$2")
	if [[ $got == "$3" ]]; then
		tap_ok "$1: $2 $4"
	else
		tap_fail "$1: $2 $4" "$(row "$1" "$2")"
		tap_diag_file "$E2E_OUT_DIR/$1.$2.out" 15
	fi
}

for way in open none proxy; do
	run_way "$way"
done
SL_LOG=$E2E_OUT_DIR/sluice.jsonl
RP_LOG=$E2E_OUT_DIR/report.jsonl
rm -f "$SL_LOG" "$RP_LOG" "$SL_LOG".* "$RP_LOG".*
run_way sluice "$SL_LOG"
run_way report "$RP_LOG"

# ---------------------------------------------------------------------------------------------
# HOOK policy-suggest (issue 14, item 4): when the build has `sluice policy suggest LOG…
# [-o FILE]`, the policy it suggests from the report-mode log is enforced on the same workload
# (way "suggested", a column of the table: it lets through whatever the report-mode run did that
# suggest keeps); without it the workflow stops after report mode and says so. Nothing here
# stands in for the command.
SUGGESTED=$E2E_OUT_DIR/suggested.yaml
SG_LOG=$E2E_OUT_DIR/suggested.jsonl
rm -f "$SG_LOG" "$SG_LOG".* "$SUGGESTED"
WAYS=(open none proxy sluice report)
if "$SLUICE" policy suggest --help 2>/dev/null | grep -q 'policy suggest'; then
	if "$SLUICE" policy suggest "$RP_LOG" -o "$SUGGESTED" 2>"$E2E/suggest.err"; then
		tap_ok "policy suggest from the report-mode log"
		E2E_POLICY=$SUGGESTED run_way suggested "$SG_LOG"
		WAYS+=(suggested)
	else
		tap_fail "policy suggest from the report-mode log" "$(cat "$E2E/suggest.err")"
	fi
else
	SUGGEST_NOTE="sluice policy suggest is not in this build: the workflow stopped after report mode"
fi

# ---------------------------------------------------------------------------------------------
# The pull-through cache (issue 14, item 5): does a cache near the build make the confined path
# faster than the open one? registry.npmjs.org is made distant: E2E_WAN_MS (default 40) ms of
# delay each way on its link alone (a delay line, e2e_wan_delay), while the cache,
# npm-cache.internal.example (a second verdaccio whose uplink is registry.npmjs.org), stays one
# hop from the build. npm ci, each from an empty npm cache, E2E_CACHE_RUNS (default 7) times each:
#   direct  to registry.npmjs.org, unrestricted and under sluice (the main policy lists it);
#   cold    through the cache, freshly started and empty (it fetches each package from
#           registry.npmjs.org), unrestricted and under sluice with the cache as the only npm
#           destination;
#   warm    right after, through the same cache, in the same run (registry.npmjs.org sees
#           nothing).
# The rounds interleave the ways, open first in odd rounds and sluice first in even ones, so that
# the shared machine's load drifting over the minutes weighs on both alike.
# The lockfile names registry.npmjs.org; npm replaces that host with the configured registry (its
# default replace-registry-host=npmjs), so under sluice a fetch that went around the cache would
# be denied; the last run checks that it is. The times are the steps' own (without sluice's
# set-up); the tables give the medians: timings are reported, not asserted.
E2E_WAN_MS=${E2E_WAN_MS:-40}
E2E_CACHE_RUNS=${E2E_CACHE_RUNS:-7}
cat >"$E2E/policy-cache.yaml" <<'EOF2'
default: deny
rules:
  - name: npm-cache
    hosts: ["npm-cache.internal.example"]
    ports: [443]
    protocols: [tcp]
EOF2
CROWS=$E2E/cache.tsv
: >"$CROWS"
rm -f "$E2E_OUT_DIR"/cache-*
CACHE_LOGS=()

# cache_run WAY POLICY STEP…: the steps, npm-ci#KIND-ROUND, in WAY (a sluice log of its own), a
# row for each: way, kind, round, status, ms, requests the cache, registry.npmjs.org and the
# telemetry host logged during it.
cache_run() {
	local way=$1 policy=$2 log='' st k
	shift 2
	if [[ $way == sluice ]]; then
		log=$E2E_OUT_DIR/cache-${1#*#}.jsonl
		CACHE_LOGS+=("$log")
	fi
	E2E_RC=() E2E_MS=() E2E_T0=() E2E_T1=()
	E2E_POLICY=$policy e2e_run "$way" "$log" "$@"
	for st in "$@"; do
		k=${st#*#}
		cp "$E2E_W/$st.out" "$E2E_OUT_DIR/cache-$way-$k.npm-ci.out" 2>/dev/null
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$way" "${k%-*}" "${k##*-}" \
			"${E2E_RC[$st]}" "${E2E_MS[$st]}" "$(e2e_seen cache "$st")" "$(e2e_seen npm "$st")" \
			"$(e2e_seen telemetry "$st")" >>"$CROWS"
	done
}

# cache_round WAY ROUND: direct, then cold and warm through a fresh cache.
cache_round() {
	local way=$1 i=$2
	E2E_EXTRA_ENV=()
	cache_run "$way" "$E2E/policy.yaml" "npm-ci#direct-$i"
	e2e_cache_up ||
		bail_out "the cache did not start: $(tail -n 5 "$E2E/logs/verdaccio-cache.out")"
	E2E_EXTRA_ENV=(npm_config_registry=https://npm-cache.internal.example/)
	cache_run "$way" "$E2E/policy-cache.yaml" "npm-ci#cold-$i" "npm-ci#warm-$i"
	E2E_EXTRA_ENV=()
}

e2e_wan_delay "$E2E_WAN_MS" || bail_out "cannot delay registry.npmjs.org's link"
tap_is "cache: registry.npmjs.org is routed through the delay line" \
	"$(in_rtr ip route get "$E2E_NPM_IP" | grep -c 'dev wan-npm ')" 1
# What the build sees: the TCP connect time to each (curl's time_connect, s), for the table.
connect_ms() {
	e2e_open curl -s -o /dev/null --max-time 10 --cacert "$E2E/pki/ca.pem" \
		-w '%{time_connect}' "$1" | awk '{ printf "%.1f", $1 * 1000 }'
}
e2e_cache_up || bail_out "the cache did not start: $(tail -n 5 "$E2E/logs/verdaccio-cache.out")"
CONNECT_UP=$(connect_ms https://registry.npmjs.org/-/ping)
CONNECT_CACHE=$(connect_ms https://npm-cache.internal.example/-/ping)

for ((i = 1; i <= E2E_CACHE_RUNS; i++)); do
	if ((i % 2)); then
		cache_round open "$i"
		cache_round sluice "$i"
	else
		cache_round sluice "$i"
		cache_round open "$i"
	fi
done
# The attacker's check of the cache-only policy: npm ci told nothing of the cache goes to
# registry.npmjs.org, and must not get there.
cache_run sluice "$E2E/policy-cache.yaml" "npm-ci#bypass-1"
e2e_wan_clear
tap_is "cache: registry.npmjs.org is routed through its veth again, the delay line gone" \
	"$(in_rtr ip route get "$E2E_NPM_IP" | grep -c 'dev vnpm ')$(in_rtr ip link show wan-npm \
		2>/dev/null | wc -l)" 10

crows() { awk -F'\t' -v w="$1" -v k="$2" '$1 == w && $2 == k' "$CROWS"; }
# cache_all WAY KIND FIELD OP VALUE…: E2E_CACHE_RUNS rows of WAY and KIND, and in each, every
# FIELD OP VALUE holds (test's integer OPs).
cache_all() {
	local way=$1 kind=$2 row f
	shift 2
	local c=("$@")
	[[ $(crows "$way" "$kind" | wc -l) -eq $E2E_CACHE_RUNS ]] || return 1
	while IFS= read -r row; do
		for ((f = 0; f < ${#c[@]}; f += 3)); do
			test "$(cut -f"${c[f]}" <<<"$row")" "${c[f + 1]}" "${c[f + 2]}" || return 1
		done
	done < <(crows "$way" "$kind")
}
# cache_check NAME WAY KIND FIELD OP VALUE…: TAP of cache_all, the rows when it fails.
cache_check() {
	local name=$1
	shift
	if cache_all "$@"; then
		tap_ok "$name"
	else
		tap_fail "$name" \
			"way kind round status ms cache upstream telemetry:"$'\n'"$(crows "$1" "$2")"
		tap_diag_file \
			"$(find "$E2E_OUT_DIR" -name "cache-$1-$2-*.npm-ci.out" | head -n 1)" 15
	fi
}
# Fields: 4 status, 6 the cache's requests, 7 registry.npmjs.org's, 8 the telemetry host's.
for way in open sluice; do
	cache_check "cache: direct, $way: every run succeeds, served by registry.npmjs.org" \
		"$way" direct 4 -eq 0 7 -ge 3 6 -eq 0
	cache_check "cache: cold, $way: every run succeeds, the cache fetching from registry.npmjs.org" \
		"$way" cold 4 -eq 0 6 -ge 3 7 -ge 3
	cache_check "cache: warm, $way: every run succeeds, registry.npmjs.org sees nothing" \
		"$way" warm 4 -eq 0 6 -ge 3 7 -eq 0
done
for kind in direct cold warm; do
	cache_check "cache: $kind, sluice: the install script's telemetry call reached nothing" \
		sluice "$kind" 8 -eq 0
done
tap_cmp "cache: under the cache-only policy, npm ci past the cache fails" \
	"$(crows sluice bypass | cut -f4)" -ne 0
tap_is "cache: past the cache, registry.npmjs.org saw nothing" "$(crows sluice bypass | cut -f7)" 0
tap_cmp "cache: past the cache, registry.npmjs.org's name was denied and logged" \
	"$(log_count "${CACHE_LOGS[-1]}" type=dns host=registry.npmjs.org decision=deny)" -ge 1
for log in "${CACHE_LOGS[@]}"; do
	tap_check "sluice verify ${log##*/}" "$SLUICE" verify "$log"
done

# ---------------------------------------------------------------------------------------------
# The expectations

for st in "${LEGIT[@]}"; do
	expect open "$st" 1 "works on the open network"
	expect none "$st" 0 "fails without a network"
	expect proxy "$st" 1 "works through the proxy"
	expect sluice "$st" 1 "works under sluice"
	expect report "$st" 1 "works in report mode"
done
for st in "${BAD[@]}"; do
	expect open "$st" 1 "gets out on the open network"
	expect none "$st" 0 "goes nowhere without a network"
	expect sluice "$st" 0 "is denied under sluice"
	if [[ $st == metadata ]]; then
		expect report "$st" 0 "is refused in report mode too (the blackhole always holds)"
	else
		expect report "$st" 1 "gets out in report mode (and is logged)"
	fi
done
# The proxy filters what honours the variable and nothing else.
expect proxy paste 0 "(curl honours HTTPS_PROXY) is refused by the proxy"
for st in telemetry upload metadata unlisted; do
	expect proxy "$st" 1 "ignores HTTPS_PROXY and gets out"
done
for st in telemetry paste upload metadata; do
	h=$(row sluice "$st" | cut -f5)
	tap_is "sluice: the $st host saw nothing" "$h" "0 req"
done
tap_is "sluice: the unlisted name reached no DNS server" "$(row sluice unlisted | cut -f5)" \
	"0 DNS queries"
HTML_LOGS=()
for w in sluice report suggested; do
	[[ -f $E2E_OUT_DIR/$w.jsonl ]] || continue
	tap_check "sluice verify $w.jsonl" "$SLUICE" verify "$E2E_OUT_DIR/$w.jsonl"
	HTML_LOGS+=("$E2E_OUT_DIR/$w.jsonl")
done
# The HTML report of the sluice runs, where the build has sluice report.
rm -f "$E2E_OUT_DIR/report.html"
if "$SLUICE" report --help 2>/dev/null | grep -q 'usage: sluice report'; then
	tap_check "sluice report: one HTML page of the sluice runs (report.html)" \
		"$SLUICE" report "${HTML_LOGS[@]}" -o "$E2E_OUT_DIR/report.html"
fi

# ---------------------------------------------------------------------------------------------
# The table (markdown) and its JSON copy

"$E2E_PY" - "$ROWS" "$E2E_OUT_DIR" "${WAYS[@]}" <<'PY'
import json, os, sys
rows_f, out, ways = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [l.rstrip("\n").split("\t") for l in open(rows_f) if l.strip()]
cells = {(r[0], r[1]): r for r in rows}
steps = ["npm-ci", "pnpm", "pip", "git-clone", "git-fetch", "telemetry", "paste", "upload",
         "metadata", "unlisted", "whole"]
label = {
    "npm-ci": "`npm ci`", "pnpm": "`pnpm install --frozen-lockfile`",
    "pip": "`pip install slpkg-cli` (2 wheels, 1 sdist)", "git-clone": "`git clone`",
    "git-fetch": "`git fetch`",
    "telemetry": "install script's telemetry call (node https)",
    "paste": "`curl pastebin.com/… \\| sh`", "upload": "`curl --noproxy '*' -T` to transfer.sh",
    "metadata": "169.254.169.254 (raw socket)", "unlisted": "lookup of an unlisted name",
    "whole": "whole workload, wall time (with set-up)",
}
bad = {"telemetry", "paste", "upload", "metadata", "unlisted"}
def cell(w, s):
    r = cells.get((w, s))
    if not r:
        return ""
    ok = r[2] == "1"
    if s == "whole":
        return f"{int(r[3]) / 1000:.1f} s"
    word = ("**got out**" if ok else "blocked") if s in bad else ("ok" if ok else "**failed**")
    t = "" if r[3] == "-" else f", {int(r[3]) / 1000:.2f} s"
    extra = f"; {r[5]}" if len(r) > 5 and r[5] else ""
    return f"{word}{t}; saw: {r[4]}{extra}"
head = "| step | " + " | ".join(ways) + " |"
lines = [head, "|" + "---|" * (len(ways) + 1)]
for s in steps:
    lines.append(f"| {label[s]} | " + " | ".join(cell(w, s) for w in ways) + " |")
md = "\n".join(lines) + "\n"
open(os.path.join(out, "results.md"), "w").write(md)
js = [{"way": r[0], "step": r[1], "ok": r[2] == "1",
       "ms": None if r[3] == "-" else int(r[3]), "seen": r[4],
       "sluice": r[5] if len(r) > 5 else ""} for r in rows]
json.dump(js, open(os.path.join(out, "results.json"), "w"), indent=1)
print(md)
PY
"$E2E_PY" - "$CROWS" "$E2E_OUT_DIR" "$E2E_WAN_MS" "$E2E_CACHE_RUNS" "$CONNECT_UP" \
	"$CONNECT_CACHE" <<'PY'
import json, os, statistics, sys
crows_f, out, wan, runs, c_up, c_cache = sys.argv[1:7]
rows = [l.rstrip("\n").split("\t") for l in open(crows_f) if l.strip()]
runs_of = {}
for r in rows:
    runs_of.setdefault((r[0], r[1]), []).append(r)
med = {}
for (w, k), rs in runs_of.items():
    ok = [int(r[4]) for r in rs if r[3] == "0"]
    med[(w, k)] = statistics.median(ok) if ok and len(ok) == len(rs) else None
def per_run(rs, i):
    v = {int(r[i]) for r in rs}
    return str(v.pop()) if len(v) == 1 else f"{min(v)}-{max(v)}"
def cell(w, k):
    rs = runs_of.get((w, k))
    if not rs:
        return ""
    ms = sorted(int(r[4]) for r in rs)
    fails = sum(r[3] != "0" for r in rs)
    if k == "bypass":
        return ("**got through**" if not fails else "failed (denied)") + \
            f"; registry.npmjs.org saw {per_run(rs, 6)} req"
    t = f"{med[(w, k)] / 1000:.2f} s" if med[(w, k)] is not None else f"**{fails} failed**"
    seen = f"registry.npmjs.org saw {per_run(rs, 6)} req/run"
    if k != "direct":
        seen = f"cache saw {per_run(rs, 5)}, " + seen
    return f"{t} ({ms[0] / 1000:.2f}-{ms[-1] / 1000:.2f}); {seen}"
n = len(runs_of.get(("open", "direct"), []))
md = "\n".join([
    f"registry.npmjs.org {wan} ms away each way (a delay line on its link only; TCP connect from the "
    f"build: {c_up} ms; to the cache: {c_cache} ms). `npm ci` from an empty npm cache, the "
    f"median of {n} runs (min-max):", "",
    "| `npm ci` | unrestricted | sluice |", "|---|---|---|",
    f"| direct to registry.npmjs.org (sluice: the main policy lists it) | {cell('open', 'direct')} "
    f"| {cell('sluice', 'direct')} |",
    f"| through the pull-through cache, cold (sluice: the cache is the only npm destination) "
    f"| {cell('open', 'cold')} | {cell('sluice', 'cold')} |",
    f"| through the pull-through cache, warm | {cell('open', 'warm')} "
    f"| {cell('sluice', 'warm')} |",
    f"| past the cache, under the cache-only policy | | {cell('sluice', 'bypass')} |",
]) + "\n"
# Each round's time over the open path's (unrestricted, direct) in the same round, the median
# of those: the machine's load drifts over the minutes, a round's ways share it.
ms_of = {(r[0], r[1], r[2]): int(r[4]) for r in rows if r[3] == "0"}
ratio = {}
for w, k in [("open", "warm"), ("open", "cold"), ("sluice", "direct"), ("sluice", "warm"),
             ("sluice", "cold")]:
    rs = [ms_of[(w, k, n)] / ms_of[("open", "direct", n)] for (ow, ok, n) in ms_of
          if (ow, ok) == ("open", "direct") and (w, k, n) in ms_of]
    if rs:
        ratio[f"{w}/{k}"] = round(statistics.median(rs), 3)
od, sw, sc = med.get(("open", "direct")), med.get(("sluice", "warm")), med.get(("sluice", "cold"))
if od and sw and sc and "sluice/warm" in ratio and "sluice/cold" in ratio:
    md += (f"\nThe confined path with a warm cache (sluice, cache only): {sw / 1000:.2f} s against "
           f"{od / 1000:.2f} s for the open path (unrestricted, direct to registry.npmjs.org); "
           f"round by round, the median ratio {ratio['sluice/warm']:.2f}x. With a cold cache "
           f"{sc / 1000:.2f} s, {ratio['sluice/cold']:.2f}x. Unrestricted through the warm cache "
           f"{ratio.get('open/warm', 0):.2f}x; sluice direct {ratio.get('sluice/direct', 0):.2f}x."
           "\n")
open(os.path.join(out, "cache.md"), "w").write(md)
json.dump({
    "wan_delay_ms_each_way": int(wan), "runs": int(runs),
    "connect_ms": {"registry.npmjs.org": float(c_up), "npm-cache.internal.example": float(c_cache)},
    "median_ms": {f"{w}/{k}": v for (w, k), v in sorted(med.items()) if k != "bypass"},
    "median_ratio_to_open_direct": ratio,
    "runs_detail": [{"way": r[0], "kind": r[1], "run": r[2], "ok": r[3] == "0", "ms": int(r[4]),
                     "cache_requests": int(r[5]), "upstream_requests": int(r[6]),
                     "telemetry_requests": int(r[7])} for r in rows],
}, open(os.path.join(out, "cache.json"), "w"), indent=1)
print(md)
PY
echo
echo "What the workload was told under sluice (stderr):"
grep -h 'egress denied' "$E2E_OUT_DIR/sluice.stderr" | sed -e 's/ run_id=.*//' -e 's/^/  /' |
	sort -u
for st in paste upload metadata unlisted; do
	echo "  $st: $(grep -v '^$' "$E2E_OUT_DIR/sluice.$st.out" | head -n 1)"
done
refused=$(grep -o 'filtered domain.*' "$E2E/logs/proxy.log" | sort -u | paste -sd ';')
echo "The proxy's log (tinyproxy): $(grep -c 'Established connection' "$E2E/logs/proxy.log")" \
	"tunnels, refused: $refused"
[[ -n ${SUGGEST_NOTE:-} ]] && echo "Workflow: $SUGGEST_NOTE"
echo "Written in $E2E_OUT_DIR: results.md, results.json, cache.md, cache.json, the sluice logs"
echo "(and report.html, their page, where the build has sluice report), each step's output"
tap_done
