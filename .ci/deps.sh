#!/usr/bin/env bash
# Installs, idempotently, everything sluice needs to build, test and demo, from Debian's registry.
# bookworm-backports is added by reusing the URI the machine's own apt sources already name, so
# no registry host is written into this repository.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: must run as root (apt-get install)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
bp_list=/etc/apt/sources.list.d/sluice-backports.list

debian_uri() {
	# First http(s) URI of a source that carries the bookworm suite (one-line or deb822 form).
	{
		grep -hsE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
			grep -w bookworm | awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }'
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -f "$f" ] || continue
			awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm([ \n]|$)/ && !/security/ {
				if (match($0, /URIs:[ \t]*[^ \t\n]+/)) { s = substr($0, RSTART, RLENGTH); sub(/URIs:[ \t]*/, "", s); print s }
			}' "$f"
		done
	} | grep -v -- '-security' | head -n 1
}

if ! grep -qsr 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	uri=$(debian_uri)
	if [ -z "$uri" ]; then
		echo "deps: no bookworm source found in /etc/apt/sources.list* to reuse for backports" >&2
		exit 1
	fi
	echo "deb $uri bookworm-backports main" > "$bp_list"
fi

stamp=/var/lib/apt/periodic/sluice-update-stamp
if [ ! -f "$stamp" ] || [ -n "$(find "$bp_list" -newer "$stamp" 2>/dev/null)" ] ||
   [ -n "$(find "$stamp" -mmin +720 2>/dev/null)" ]; then
	apt-get update -qq
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi

base_pkgs=(make gcc clang-14 llvm-14 libelf-dev zlib1g-dev libyaml-dev libssl-dev pkg-config
	iproute2 curl netcat-openbsd socat python3 perl dnsmasq-base bind9-dnsutils
	musl-tools openssl python3-cryptography nftables liburing-dev
	qemu-system-x86 busybox-static kmod xz-utils
	runc podman docker.io containerd rsyslog prometheus-node-exporter python3-yaml systemd util-linux
	man-db groff-base chromium
	nginx fcgiwrap tinyproxy git python3-setuptools python3-wheel python3-pip)
bp_pkgs=(libbpf-dev bpftool)

missing=()
for p in "${base_pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	# No package's service may start (dockerd would add a bridge and iptables rules, rsyslog
	# would take the syslog socket): the tests start their own daemons, in their own namespaces.
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# libbpf >= 1.4 and bpftool 7.5 come from backports only.
need_bp=0
v=$(dpkg-query -W -f='${Version}' libbpf-dev 2>/dev/null || true)
if [ -z "$v" ] || dpkg --compare-versions "$v" lt 1:1.4; then need_bp=1; fi
command -v bpftool >/dev/null 2>&1 && bpftool version >/dev/null 2>&1 || need_bp=1
if [ $need_bp -eq 1 ]; then
	apt-get install -y -qq --no-install-recommends -t bookworm-backports "${bp_pkgs[@]}"
fi
# The e2e package task's registry servers and pnpm, from the npm registry npm is configured with
# (Node.js 20 and npm are the machine's own), into a cache outside the repository
# (selftests/e2e/README.md; SLUICE_E2E_DEPS moves it).
e2e_deps=${SLUICE_E2E_DEPS:-/opt/sluice-e2e}
if command -v npm >/dev/null 2>&1 &&
	{ [ ! -f "$e2e_deps/node_modules/verdaccio/bin/verdaccio" ] ||
	  [ ! -f "$e2e_deps/node_modules/pnpm/bin/pnpm.cjs" ]; }; then
	mkdir -p "$e2e_deps"
	printf '%s\n' '{"name":"sluice-e2e-deps","private":true,"version":"0.0.0",' \
		'"dependencies":{"verdaccio":"6.8.0","pnpm":"9.15.9"},' \
		'"overrides":{"node-fetch":"2.7.0"}}' >"$e2e_deps/package.json"
	(cd "$e2e_deps" && npm install --no-audit --no-fund --loglevel=error)
fi
echo "deps: ok"
