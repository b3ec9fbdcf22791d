#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A real package task under sluice (issue 14, the fast subset: npm and the bad steps the four
# ways, pip and git under sluice; `make e2e` runs the whole comparison and the cache,
# selftests/e2e/README.md). The test builds a local internet in its topology:
# registry.npmjs.org served by verdaccio, pypi.org and files.pythonhosted.org (a PEP 503 index
# with wheels and an sdist it builds), git.internal.example (git http-backend), all over TLS with
# a CA it makes, and the hosts a build must not reach: pastebin.com, transfer.sh, a telemetry
# host and the fake metadata server. Then, under sluice enforcing a policy that lists the
# registries and the git host:
#   - npm ci (a two-level tree, one package with an install script), pip install (wheels with
#     dependencies and an sdist), git clone succeed, and the servers saw their requests;
#   - the install script's telemetry call, curl pastebin | sh, an upload to transfer.sh, a
#     request to the metadata address and the lookup of an unlisted name fail at once, each is
#     denied in the log and on stderr, and its receiving host (or the DNS upstream) saw nothing;
#   - the same bad steps without sluice (the controls) do reach their hosts; with no network npm
#     ci and every bad step fail; through an HTTPS_PROXY allowing the same hosts npm ci works via
#     the proxy and the paste fetch is refused, while what ignores the variable (the telemetry
#     call, an upload with --noproxy, a raw socket, a DNS lookup) still gets out;
#   - every run's log verifies, nothing of the runs is left.
# SKIPs when verdaccio/pnpm (selftests/e2e/README.md: installed by .ci/deps.sh) or a server is
# missing.

# shellcheck disable=SC2119 # e2e_missing, e2e_up: optional arguments
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=e2e/e2e-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/e2e/e2e-lib.sh"

require_root
require_sluice
missing=$(e2e_missing proxy)
[[ -z $missing ]] && missing=$(command -v dig >/dev/null || echo "dig not installed")
[[ -n $missing ]] && skip_all "$(head -n 1 <<<"$missing")"
topo_up
e2e_up --no-pnpm || bail_out "cannot build the local internet (e2e_up)"
e2e_policy "$E2E/policy.yaml"

# step_diag STEP: the step's output and what the hosts saw meanwhile, for a failure.
step_diag() {
	local n seen
	tap_diag_file "$E2E_W/$1.out" 30
	tap_diag_file "$E2E_ERR" 30
	for n in "${E2E_LOGS[@]}"; do
		mapfile -t seen < <(e2e_seen_lines "$n" "$1" | tail -n 5)
		[[ ${#seen[@]} -gt 0 ]] && tap_comment "${seen[@]/#/$n: }"
	done
	return 0
}

# check STEP NAME CONDITION…: ok if the condition (a command) holds, else STEP's diagnostics.
check() {
	local step=$1 name=$2
	shift 2
	if "$@"; then
		tap_ok "$name"
	else
		tap_fail "$name" "expected: $*"
		step_diag "$step"
	fi
}

BAD=(paste upload metadata unlisted)

# ---------------------------------------------------------------------------------------------
# The controls: without sluice the install script phones home and the bad steps reach their
# hosts, so "saw nothing" below means something.

e2e_dns_mark
e2e_run open - npm-ci "${BAD[@]}"
check npm-ci "control: npm ci without sluice succeeds" test "${E2E_RC[npm-ci]}" = 0
check npm-ci "control: without sluice the install script's telemetry call reaches its host" \
	test "$(e2e_seen telemetry npm-ci)" -ge 1
check paste "control: without sluice curl pastebin.com | sh runs the script" \
	test "${E2E_RC[paste]}" = 0 -a "$(e2e_seen paste paste)" = 1
check upload "control: without sluice the upload reaches transfer.sh" \
	test -s "$E2E/www/transfer/e2e/secrets.txt"
rm -f "$E2E/www/transfer/e2e/secrets.txt"
check metadata "control: without sluice the metadata server answers" \
	test "${E2E_RC[metadata]}" = 0 -a "$(e2e_seen metadata metadata)" = 1
check unlisted "control: without sluice the unlisted name resolves" \
	test "${E2E_RC[unlisted]}" = 0 -a "$(e2e_dns_seen "$E2E_UNLISTED")" -ge 1

# ---------------------------------------------------------------------------------------------
# The other two of the four ways, npm and the bad steps. No network: the build fails, and so does
# every bad step. A CONNECT proxy with the same host allowlist, named by HTTPS_PROXY: npm goes
# through it and curl's paste fetch is refused, but the proxy is a request, not enforcement:
# what ignores the variable (node's https in the install script, curl --noproxy, a raw socket,
# a DNS lookup) gets out.

e2e_dns_mark
e2e_run none - npm-ci "${BAD[@]}"
check npm-ci "no network: npm ci fails" test "${E2E_RC[npm-ci]}" != 0
for st in "${BAD[@]}"; do
	check "$st" "no network: the $st step fails" test "${E2E_RC[$st]}" != 0
done
check npm-ci "no network: the telemetry host saw nothing" test "$(e2e_seen telemetry npm-ci)" = 0
check upload "no network: transfer.sh holds no file" \
	test ! -e "$E2E/www/transfer/e2e/secrets.txt"
check unlisted "no network: the unlisted name reached no DNS server" \
	test "$(e2e_dns_seen "$E2E_UNLISTED")" = 0

e2e_proxy_up || bail_out "tinyproxy did not start: $(tail -n 5 "$E2E/logs/tinyproxy.out")"
e2e_dns_mark
e2e_run proxy - npm-ci "${BAD[@]}"
check npm-ci "proxy: npm ci through HTTPS_PROXY succeeds" test "${E2E_RC[npm-ci]}" = 0
check npm-ci "proxy: registry.npmjs.org's requests came through the proxy" \
	test "$(e2e_seen_lines npm npm-ci | awk '$3 != "10.200.1.2"' | wc -l)" -ge 3 \
	-a "$(e2e_seen_lines npm npm-ci | awk '$3 == "10.200.1.2"' | wc -l)" = 0
check npm-ci "proxy: the install script's telemetry call ignores the proxy and gets out" \
	test "$(e2e_seen telemetry npm-ci)" -ge 1
check paste "proxy: curl honours HTTPS_PROXY, the proxy refuses pastebin.com" \
	test "${E2E_RC[paste]}" != 0 -a "$(e2e_seen paste paste)" = 0
check paste "proxy: the proxy logged the refusal" \
	grep -q 'filtered domain.*pastebin\.com' "$E2E/logs/proxy.log"
check upload "proxy: an upload with --noproxy gets out" \
	test -s "$E2E/www/transfer/e2e/secrets.txt"
rm -f "$E2E/www/transfer/e2e/secrets.txt"
check metadata "proxy: the metadata address (a raw socket) answers" \
	test "${E2E_RC[metadata]}" = 0 -a "$(e2e_seen metadata metadata)" = 1
check unlisted "proxy: the unlisted name resolves (DNS does not go through the proxy)" \
	test "${E2E_RC[unlisted]}" = 0 -a "$(e2e_dns_seen "$E2E_UNLISTED")" -ge 1

# ---------------------------------------------------------------------------------------------
# Under sluice, one run: the legitimate steps, then the bad ones.

LOG=$SL_TMP/e2e-sluice.jsonl
e2e_dns_mark
e2e_run sluice "$LOG" npm-ci pip git-clone "${BAD[@]}"
for st in npm-ci pip git-clone "${BAD[@]}"; do
	tap_diag "sluice $st: exit ${E2E_RC[$st]} in ${E2E_MS[$st]} ms"
done
W=$E2E_W
tap_is "sluice run: exit status 0 (the workload's)" "$SL_RC" 0 || sluice_diag "$LOG"

check npm-ci "npm ci under sluice succeeds" test "${E2E_RC[npm-ci]}" = 0
check npm-ci "npm ci: both levels of the tree installed" \
	test -f "$W/npm/node_modules/sl-e2e-leaf/index.js"
check npm-ci "npm ci: registry.npmjs.org served the three tarballs" \
	test "$(e2e_seen_lines npm npm-ci | grep -c '"GET /sl-e2e-[a-z]*/-/sl-e2e-[a-z]*-1.0.0.tgz ')" = 3
check npm-ci "npm ci: the install script's telemetry call reached nothing" \
	test "$(e2e_seen telemetry npm-ci)" = 0
check npm-ci "npm ci: the telemetry name was refused and logged" \
	test "$(log_count "$LOG" type=dns host="$E2E_TELEM_HOST" decision=deny)" -ge 1
check npm-ci "npm ci: stderr says the telemetry host was denied" \
	grep -q "egress denied: $E2E_TELEM_HOST" "$E2E_ERR"

check pip "pip install under sluice succeeds" test "${E2E_RC[pip]}" = 0
check pip "pip install: files.pythonhosted.org served both wheels and the sdist" \
	test "$(e2e_seen_lines files pip | grep -c '"GET /packages/slpkg[-_][a-z]*-1.0[-.].* 200 ')" = 3
check pip "pip install: pypi.org served the index pages" test "$(e2e_seen pypi pip)" -ge 3

check git-clone "git clone under sluice succeeds" test "${E2E_RC[git-clone]}" = 0
check git-clone "git clone: the work tree is there" test -f "$W/repo/README"
check git-clone "git clone: git.internal.example served the pack" \
	test "$(e2e_seen_lines git git-clone | grep -c '"POST /demo.git/git-upload-pack HTTP/1.1" 200')" \
		-ge 1

check paste "curl pastebin.com | sh under sluice fails" test "${E2E_RC[paste]}" != 0
check paste "paste: the script did not run" test ! -e "$W/paste-ran"
check paste "paste: denied and logged" \
	test "$(log_count "$LOG" type=dns host=pastebin.com decision=deny)" -ge 1
check paste "paste: stderr says why" grep -q "egress denied: pastebin.com" "$E2E_ERR"

check upload "the upload to transfer.sh under sluice fails" test "${E2E_RC[upload]}" != 0
check upload "upload: transfer.sh holds no file" test ! -e "$E2E/www/transfer/e2e/secrets.txt"
check upload "upload: denied and logged" \
	test "$(log_count "$LOG" type=dns host=transfer.sh decision=deny)" -ge 1
check upload "upload: stderr says why" grep -q "egress denied: transfer.sh" "$E2E_ERR"

check metadata "the metadata request under sluice fails with EPERM" \
	grep -q "Operation not permitted" "$W/metadata.out"
check metadata "metadata: refused by the blackhole and logged" \
	test "$(log_count "$LOG" type=decision dst="$E2E_META_IP" port=80 decision=deny \
		rule=blackhole)" = 1
check metadata "metadata: stderr says why" \
	grep -q "egress denied: $E2E_META_IP:80/tcp (rule: blackhole)" "$E2E_ERR"

check unlisted "the lookup of an unlisted name under sluice fails" test "${E2E_RC[unlisted]}" != 0
check unlisted "unlisted: denied and logged" \
	test "$(log_count "$LOG" type=dns host="$E2E_UNLISTED" decision=deny)" -ge 1

# What the receiving side saw during the whole run: the bad hosts nothing, and no denied name
# reached a DNS server.
for n in telemetry paste transfer metadata; do
	check unlisted "$n host saw nothing during the sluice run" \
		test "$(awk -v t0="${E2E_T0[npm-ci]}" -v t1="${E2E_T1[unlisted]}" \
			'{ t = $1 * 1000 } t >= t0 && t <= t1 + 1' "$E2E/logs/$n.log" | wc -l)" = 0
done
for n in "$E2E_TELEM_HOST" pastebin.com transfer.sh "$E2E_UNLISTED"; do
	check unlisted "no DNS server was asked for $n during the sluice run" \
		test "$(e2e_dns_seen "$n")" = 0
done
assert_no_leftovers "nothing of the run is left"
tap_check "sluice verify: the run's log is intact and sealed" "$SLUICE" verify "$LOG"

tap_done
