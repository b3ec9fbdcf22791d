#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sluice report on real logs: an enforce run and a report-mode run of one workload (a name the
# run's resolver answers, a flow to it with bytes, a connect to an unlisted host) make one page;
# Debian's headless Chromium, in a network namespace the test makes with nothing but lo, renders
# it (the DOM holds the run ids, the verdict, the denial and the bytes; a screenshot is not
# blank) and the page asks for no URL (a control page that does is seen asking). A tampered copy
# of a log gets a page whose red header says TAMPERED and where, in sluice verify's words; a log
# whose line was rewritten to hold a <script> host name, its hash chain rebuilt, shows the name
# as text and no script element; --unverified labels it UNVERIFIED; a truncated log is UNSEALED;
# a newer format's log is UNKNOWN FORMAT (not TAMPERED); one verified run given twice is refused;
# bad input writes nothing and says which file, line and why. Without Chromium, the browser
# checks SKIP with the reason and the pages are still judged by python3's html.parser.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
require_sluice
command -v dnsmasq >/dev/null || skip_all "dnsmasq not installed"
topo_up

CHECK=$REPO/selftests/tools/sl_htmlcheck.py
NAME=pkgs.example.test

dns_upstream_start up --address=/$NAME/198.51.100.10 || bail_out "cannot start dnsmasq"

rules="rules:
  - name: pkgs
    hosts: [\"$NAME\"]
    ports: [80]
    protocols: [tcp]"
ACCESS='https://access.example.test/request?host={host}'
printf 'default: deny\nmode: enforce\nrequest_access: "%s"\n%s\n' "$ACCESS" "$rules" \
	>"$SL_TMP/enforce.yaml"
printf 'default: deny\nmode: report\n%s\n' "$rules" >"$SL_TMP/report.yaml"

# The workload: resolve the name, send 3000 bytes to it, then connect to an unlisted host.
cat >"$SL_TMP/work.py" <<EOF2
import socket
a = socket.getaddrinfo("$NAME", 80, socket.AF_INET, socket.SOCK_STREAM)[0][4]
s = socket.create_connection(a, timeout=5)
s.sendall(b"x" * 3000)
s.shutdown(socket.SHUT_WR)
while s.recv(4096):
    pass
s.close()
try:
    socket.create_connection(("198.51.100.20", 80), timeout=5).close()
    print("unlisted: connected")
except OSError as e:
    print("unlisted:", e.errno)
EOF2

run_workload() {
	sluice_run "$SL_TMP/$1.yaml" "$SL_TMP/$1.jsonl" --netns "/run/netns/$SL_NS_RUN" \
		--upstream "127.0.0.1:$SL_DNS_PORT" -- python3 "$SL_TMP/work.py"
}

run_workload enforce
E_ID=$SL_RUN_ID
tap_check "enforce run: the unlisted host is refused" grep -qx 'unlisted: 1' "$SL_OUT" ||
	sluice_diag
run_workload report
R_ID=$SL_RUN_ID
tap_check "report run: the unlisted host is let through" grep -qx 'unlisted: connected' "$SL_OUT" ||
	sluice_diag
E=$SL_TMP/enforce.jsonl
R=$SL_TMP/report.jsonl
tap_check "both logs verify" bash -c "'$SLUICE' verify '$E' >/dev/null && '$SLUICE' verify '$R' >/dev/null"

# has_lines TEXT LINE…: every LINE is a whole line of TEXT (called through tap_check)
# shellcheck disable=SC2317
has_lines() {
	local t=$1 l
	shift
	for l; do
		grep -qxF -- "$l" <<<"$t" || {
			echo "no line \"$l\" in:"
			echo "$t"
			return 1
		}
	done
}

# report OUT ARGS…: sets RC and ERR (stderr)
report() {
	local out=$1
	shift
	"$SLUICE" report "$@" -o "$out" 2>"$SL_TMP/report.err"
	RC=$?
	ERR=$(cat "$SL_TMP/report.err")
}

GOOD=$SL_TMP/good.html
report "$GOOD" "$E" "$R"
tap_is "two verified logs: exit 0" "$RC" 0 || tap_diag "$ERR"
tap_check "the page fetches and runs nothing (html.parser)" python3 "$CHECK" static "$GOOD"
text=$(python3 "$CHECK" text "$GOOD")
tap_is "the header says VERIFIED, in green" "$(python3 "$CHECK" verdict "$GOOD" | cut -f1)" ok
tap_check "a row per run: both run ids" has_lines "$text" "$E_ID" "$R_ID"
tap_check "the policy's SHA-256 is shown" grep -qF "$(sha256sum "$SL_TMP/enforce.yaml" | cut -c1-64)" <<<"$text"
tap_check "the denial and the would-be denial of 198.51.100.20" \
	has_lines "$text" denied "would deny" 198.51.100.20
tap_check "the enforce run's denial has the policy's request-access link, as text" \
	has_lines "$text" "${ACCESS/\{host\}/198.51.100.20}"
tap_check "the host's bytes sent: 3000 per run, 6000 in all" has_lines "$text" 3000 6000
tap_check "the DNS answer" has_lines "$text" "$NAME" 198.51.100.10
tap_check "the suggested policy: a rule for the name, on the port seen" \
	has_lines "$text" '  - hosts: ["'"$NAME"'"]' "    ports: [80]"
tap_check "and its diff against the report run's policy: the mode" \
	grep -q '^~ mode: report -> enforce' <<<"$text"
n_rects=$(python3 "$CHECK" elements "$GOOD" | grep -c '^rect$')
tap_cmp "bar chart and timelines drawn" "$n_rects" -ge 4

# A tampered copy: a byte changed in the line after the enforce run's denial.
T=$SL_TMP/tampered.jsonl
deny_n=$(grep -n '"type":"decision".*"decision":"deny"' "$E" | head -1 | cut -d: -f1)
awk -v n=$((deny_n + 1)) 'NR == n { sub(/"ts":[0-9]/, "\"ts\":9") } { print }' "$E" >"$T"
verify_says=$("$SLUICE" verify "$T" | tail -1)
tap_check "the copy does not verify" grep -q '^INVALID: line' <<<"$verify_says"

# A crafted copy: the flow's host rewritten to a script element, the hash chain rebuilt after it.
C=$SL_TMP/crafted.jsonl
python3 - "$E" "$C" "$NAME" <<'EOF2'
import hashlib, sys
src, dst, name = sys.argv[1:]
lines = open(src, "rb").read().split(b"\n")[:-1]
# the chain the writer made (format 2: prev the line before's leaf hash): recomputed here
# first, so a rebuilt one is the same kind
for i in range(1, len(lines)):
    leaf = hashlib.sha256(b"\x00" + lines[i - 1]).hexdigest().encode()
    assert b'"prev":"%s"' % leaf in lines[i], i
evil = b"<script>alert(1)</script>"
for i, l in enumerate(lines):
    if b'"type":"flow"' in l:
        lines[i] = l.replace(b'"host":"%s"' % name.encode(), b'"host":"%s"' % evil)
        assert lines[i] != l
        break
for i in range(1, len(lines)):
    h = hashlib.sha256(b"\x00" + lines[i - 1]).hexdigest().encode()
    j = lines[i].index(b'"prev":"') + 8
    lines[i] = lines[i][:j] + h + lines[i][j + 64:]
open(dst, "wb").write(b"\n".join(lines) + b"\n")
EOF2
crafted_says=$("$SLUICE" verify "$C" | tail -1)
tap_check "the crafted copy does not verify (a checkpoint's signature)" grep -q '^INVALID: line' <<<"$crafted_says"

BAD=$SL_TMP/bad.html
report "$BAD" "$T" "$C"
tap_is "tampered logs: the page is written, exit 1" "$RC" 1 || tap_diag "$ERR"
tap_check "the tampered page fetches and runs nothing" python3 "$CHECK" static "$BAD"
v=$(python3 "$CHECK" verdict "$BAD")
tap_check "its header says TAMPERED, in red" bash -c "[[ \$1 == bad$'\t'TAMPERED* ]]" _ "$v"
tap_check "and where, as sluice verify says it (both logs)" \
	bash -c "grep -qF -- \"\$2\" <<<\"\$1\" && grep -qF -- \"\$3\" <<<\"\$1\"" _ "$v" \
	"${verify_says#INVALID: }" "${crafted_says#INVALID: }"
text=$(python3 "$CHECK" text "$BAD")
# (two copies of one run: its id, told apart by the log's place)
tap_check "the run id and the denial before the bad line are shown" \
	has_lines "$text" "$E_ID (log 1)" "$E_ID (log 2)" denied
tap_check "the crafted host name is text" grep -qF '<script>alert(1)</script>' <<<"$text"
tap_check "and no script element" bash -c "! python3 '$CHECK' elements '$BAD' | grep -qx script"
tap_check "no policy suggested from logs that do not verify" \
	grep -q '^None: 2 logs do not verify' <<<"$text"

UNV=$SL_TMP/unverified.html
report "$UNV" --unverified "$T" "$C"
tap_is "--unverified: exit 1 still" "$RC" 1
tap_check "--unverified: the header says UNVERIFIED, not TAMPERED" \
	bash -c "python3 '$CHECK' verdict '$UNV' | grep -q \$'^bad\tUNVERIFIED' &&
		! grep -q TAMPERED '$UNV'"

U=$SL_TMP/unsealed.jsonl
head -n -2 "$R" >"$U"
report "$SL_TMP/unsealed.html" "$U"
tap_is "a truncated log: exit 0" "$RC" 0
tap_check "its header says UNSEALED" \
	bash -c "python3 '$CHECK' verdict '$SL_TMP/unsealed.html' | grep -q \$'^warn\tUNSEALED'"

# A newer sluice's log (format 3): this one cannot check it, and says so rather than TAMPERED.
sed '1s/"format":2\([,}]\)/"format":3\1/' "$R" >"$SL_TMP/newer.jsonl"
report "$SL_TMP/newer.html" "$SL_TMP/newer.jsonl"
tap_check "a log of another format: the red header says UNKNOWN FORMAT and which" \
	bash -c "python3 '$CHECK' verdict '$SL_TMP/newer.html' | grep -q \$'^bad\tUNKNOWN FORMAT.*format 3'"

# One run given twice (a copy): it would count as two runs in the page and its suggestion.
cp "$R" "$SL_TMP/copy.jsonl"
report "$SL_TMP/twice.html" "$R" "$SL_TMP/copy.jsonl"
tap_check "the same run given twice: exit 4, no page, said why" \
	bash -c "[[ $RC -eq 4 && ! -e '$SL_TMP/twice.html' ]] && grep -q 'given twice' <<<\"\$1\"" _ "$ERR"

# Not a log at all: a page that says TAMPERED, and stderr names the file, the line and why.
printf '{"seq":0,"prev":"%064d","ts":1,"type":"log_start"}\nnot json\n' 0 >"$SL_TMP/junk.jsonl"
report "$SL_TMP/junk.html" "$E" "$SL_TMP/junk.jsonl"
tap_is "a file that is not a log: exit 1" "$RC" 1
tap_check "stderr names the file, the line and why" \
	grep -q "junk.jsonl: TAMPERED: INVALID: line [12] .*: ." <<<"$ERR"

# What cannot be read: nothing written, the page there before left as it was.
cp "$GOOD" "$SL_TMP/keep.html"
report "$SL_TMP/keep.html" "$E" "$SL_TMP/missing.jsonl"
tap_check "a missing log: exit 4, naming it" \
	bash -c "[[ $RC -eq 4 ]] && grep -qF missing.jsonl <<<\"\$1\"" _ "$ERR"
tap_check "and the page there before is untouched" cmp -s "$GOOD" "$SL_TMP/keep.html"
report "$SL_TMP/no/such/dir.html" "$E"
tap_check "an output that cannot be written: exit 4" bash -c "[[ $RC -eq 4 ]]"
tap_is "no temporary file left" "$(find "$SL_TMP" -name '*.html.*' | wc -l)" 0

# ---------------------------------------------------------------------------------------------
# A real browser, in a network namespace with only lo: nothing it asks for could be reached, and
# its net log says what the page asked for.
CHROMIUM=$(command -v chromium || command -v chromium-browser)
if [[ -z $CHROMIUM ]]; then
	for i in 1 2 3 4 5 6 7; do
		tap_skip "browser check $i" "chromium not installed (apt-get install chromium)"
	done
	tap_done
fi
NS_BR=sl-br-$SL_ID
ip netns add "$NS_BR" || bail_out "cannot create $NS_BR"
sl_on_exit "ip netns del '$NS_BR' 2>/dev/null"
ip -n "$NS_BR" link set lo up

# browse NAME PAGE: dump the DOM to $SL_TMP/NAME.dom, a screenshot, the net log
browse() {
	local name=$1 page=$2
	ip netns exec "$NS_BR" timeout -k 5 $((60 * SL_SLOW)) "$CHROMIUM" --headless --no-sandbox \
		--disable-gpu --user-data-dir="$SL_TMP/chromium-$name" --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--disable-extensions --disable-default-apps --window-size=1100,800 \
		--log-net-log="$SL_TMP/$name.netlog" --screenshot="$SL_TMP/$name.png" \
		--dump-dom "file://$page" >"$SL_TMP/$name.dom" 2>"$SL_TMP/$name.chromium.err"
}

# The control: a page that fetches is seen fetching, so an empty list below means something.
printf '<!DOCTYPE html><html><body><p>control</p><img src="http://198.51.100.10/x.png"></body></html>\n' \
	>"$SL_TMP/control.html"
if ! browse control "$SL_TMP/control.html" || ! grep -q control "$SL_TMP/control.dom"; then
	tap_diag_file "$SL_TMP/control.chromium.err"
	for i in 1 2 3 4 5 6 7; do
		tap_skip "browser check $i" "chromium does not run here (see the diagnostics)"
	done
	tap_done
fi
tap_is "the net log sees a page's request (the control)" \
	"$(python3 "$CHECK" net "$SL_TMP/control.netlog")" "http://198.51.100.10/x.png"

browse good "$GOOD"
dom=$(python3 "$CHECK" text "$SL_TMP/good.dom")
tap_check "Chromium renders the page: run ids, verdict, denial, bytes in the DOM" \
	has_lines "$dom" "$E_ID" "$R_ID" VERIFIED denied "would deny" 198.51.100.20 6000
tap_is "the page asked for nothing" "$(python3 "$CHECK" net "$SL_TMP/good.netlog")" ""
read -r w h colours _ < <(python3 "$CHECK" png "$SL_TMP/good.png")
tap_check "the screenshot is not blank (${w}x$h, $colours colours)" \
	bash -c "[[ ${colours:-0} -ge 8 ]]"

browse bad "$BAD"
v=$(python3 "$CHECK" verdict "$SL_TMP/bad.dom")
tap_check "Chromium: the tampered page's header says TAMPERED" \
	bash -c "[[ \$1 == bad$'\t'TAMPERED* ]]" _ "$v"
tap_check "Chromium: no script element in its DOM, the name is text" \
	bash -c "! python3 '$CHECK' elements '$SL_TMP/bad.dom' | grep -qx script &&
		python3 '$CHECK' text '$SL_TMP/bad.dom' | grep -qF '<script>alert(1)</script>'"
read -r _ _ _ red < <(python3 "$CHECK" png "$SL_TMP/bad.png")
tap_check "the screenshot shows the red header ($red red pixels)" bash -c "[[ ${red:-0} -ge 2000 ]]"

tap_done
