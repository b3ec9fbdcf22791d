# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2016,SC2119
# (SC2016: the sh -c scripts expand inside; SC2119: the functions' arguments are optional.)
#
# sluice e2e: a local internet in the test topology (selftests/lib.sh) with real registry
# servers under their public names, the fixtures a build installs, and the ways to run the
# workload (selftests/e2e/workload.sh). Sourced after lib.sh by selftests/test_e2e.sh (make test)
# and selftests/e2e/e2e.sh (make e2e). See selftests/e2e/README.md.
#
# registry.npmjs.org has a netns of its own (sl-npm-ID), linked to the topology's router, so that
# make e2e can put a WAN's latency (e2e_wan_delay) between it and everything else, the
# pull-through cache included:
#   sl-rtr-ID vnpm 10.200.3.1 --veth-- veth0 10.200.3.2 sl-npm-ID
#   registry.npmjs.org       198.51.100.11  nginx TLS -> verdaccio 6.8.0 on 127.0.0.1:4873
# In the "internet" netns (sl-inet-ID), after lib.sh's sink there is stopped (it holds 53, 80 and
# 443 on every address):
#   pypi.org                 198.51.100.12  nginx, PEP 503 simple index
#   files.pythonhosted.org   198.51.100.13  nginx, wheels and an sdist
#   git.internal.example     198.51.100.14  nginx -> fcgiwrap -> git http-backend
#   npm-cache.internal.example 198.51.100.15 nginx TLS -> a second verdaccio, a pull-through
#                                           cache of registry.npmjs.org (make e2e only)
#   pastebin.com             203.0.113.21   nginx, a shell script
#   transfer.sh              203.0.113.22   nginx, PUT uploads kept in $E2E/www/transfer
#   telemetry.pkgstats.example 203.0.113.23 nginx, 204 to anything
#   (metadata)               169.254.169.254:80 nginx, fake credentials (the topology's own)
#   exfil.attacker.example   203.0.113.99   resolves, nothing listens (the unlisted lookup)
#   DNS for the open ways    203.0.113.53   dnsmasq, the same names
#   CONNECT proxy            203.0.113.80:3128 tinyproxy (the proxy way only)
# sluice's runs ask a dnsmasq on 127.0.0.1 of the root netns (lib.sh's dns_upstream_start) with
# the same names. TLS: a CA the test makes; clients trust it through NODE_EXTRA_CA_CERTS (node;
# npm and pnpm build their own CA list and need npm_config_cafile), PIP_CERT, GIT_SSL_CAINFO and
# CURL_CA_BUNDLE only, never the system store.

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Where .ci/deps.sh installs verdaccio and pnpm (npm install in that directory).
E2E_DEPS=${SLUICE_E2E_DEPS:-/opt/sluice-e2e}
E2E_VERDACCIO=$E2E_DEPS/node_modules/verdaccio/bin/verdaccio
E2E_PNPM=$E2E_DEPS/node_modules/pnpm/bin/pnpm.cjs
# Debian's python3, which has setuptools, wheel and pip (not whatever python3 PATH finds first).
E2E_PY=/usr/bin/python3

E2E_NPM_IP=198.51.100.11
# registry.npmjs.org's netns
E2E_NS_NPM=sl-npm-$SL_ID
E2E_PYPI_IP=198.51.100.12
E2E_FILES_IP=198.51.100.13
E2E_GIT_IP=198.51.100.14
E2E_CACHE_IP=198.51.100.15
E2E_PASTE_IP=203.0.113.21
E2E_XFER_IP=203.0.113.22
E2E_TELEM_IP=203.0.113.23
E2E_META_IP=169.254.169.254
E2E_EXFIL_IP=203.0.113.99
E2E_DNS_IP=203.0.113.53
E2E_PROXY_IP=203.0.113.80
E2E_UNLISTED=exfil.attacker.example
E2E_TELEM_HOST=telemetry.pkgstats.example
E2E_HOSTS=(
	"registry.npmjs.org $E2E_NPM_IP"
	"pypi.org $E2E_PYPI_IP"
	"files.pythonhosted.org $E2E_FILES_IP"
	"git.internal.example $E2E_GIT_IP"
	"npm-cache.internal.example $E2E_CACHE_IP"
	"pastebin.com $E2E_PASTE_IP"
	"transfer.sh $E2E_XFER_IP"
	"$E2E_TELEM_HOST $E2E_TELEM_IP"
	"$E2E_UNLISTED $E2E_EXFIL_IP"
)
# The hosts' access logs, by short name ($E2E/logs/NAME.log).
E2E_LOGS=(npm pypi files git paste transfer telemetry metadata cache)

# e2e_missing [proxy] [tun]: prints what is missing for the e2e fixtures, and for tinyproxy (the
# proxy way) and TUN devices (the delay line) when asked (nothing: all there).
e2e_missing() {
	local t
	[[ -f $E2E_VERDACCIO && -f $E2E_PNPM ]] ||
		echo "verdaccio 6.8.0 and pnpm not installed in $E2E_DEPS (see selftests/e2e/README.md)"
	for t in nginx fcgiwrap openssl git node npm curl dnsmasq getent unshare; do
		command -v "$t" >/dev/null || echo "$t not installed"
	done
	[[ -x /usr/lib/git-core/git-http-backend ]] || echo "git http-backend not found"
	"$E2E_PY" -c 'import setuptools, wheel, pip' 2>/dev/null ||
		echo "$E2E_PY lacks setuptools, wheel or pip (python3-setuptools, python3-wheel, python3-pip)"
	if [[ " $* " == *" proxy "* ]]; then
		command -v tinyproxy >/dev/null || echo "tinyproxy not installed"
	fi
	if [[ " $* " == *" tun "* ]]; then
		[[ -c /dev/net/tun ]] || echo "no /dev/net/tun (CONFIG_TUN) for the delay line"
	fi
	return 0
}

# e2e_fill TEMPLATE OUT: the template with @T@ and the addresses filled in.
e2e_fill() {
	sed -e "s|@T@|$E2E|g" -e "s|@NPM_IP@|$E2E_NPM_IP|g" -e "s|@PYPI_IP@|$E2E_PYPI_IP|g" \
		-e "s|@FILES_IP@|$E2E_FILES_IP|g" -e "s|@GIT_IP@|$E2E_GIT_IP|g" \
		-e "s|@CACHE_IP@|$E2E_CACHE_IP|g" \
		-e "s|@PASTE_IP@|$E2E_PASTE_IP|g" -e "s|@XFER_IP@|$E2E_XFER_IP|g" \
		-e "s|@TELEM_IP@|$E2E_TELEM_IP|g" -e "s|@META_IP@|$E2E_META_IP|g" \
		-e "s|@PROXY_IP@|$E2E_PROXY_IP|g" "$1" >"$2"
}

# e2e_bg NAME NS CMD…: CMD in netns NS (with the open ways' resolv.conf), in the background,
# output in $E2E/logs/NAME.out; its pid tracked (topo_down stops it). Sets E2E_BG_PID.
e2e_bg() {
	local name=$1 ns=$2
	shift 2
	ip netns exec "$ns" sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' \
		"$E2E/resolv.conf" "$@" >"$E2E/logs/$name.out" 2>&1 </dev/null &
	E2E_BG_PID=$!
	sl_track_pid "$E2E_BG_PID"
}

# e2e_in_inet CMD…: CMD in the internet netns.
e2e_in_inet() { ip netns exec "$SL_NS_INET" "$@"; }

# e2e_open CMD…: CMD in the workload's netns with the open ways' DNS (fixture building).
e2e_open() {
	ip netns exec "$SL_NS_RUN" sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' \
		"$E2E/resolv.conf" "$@"
}

e2e_pki() {
	local d=$E2E/pki san="" h
	for h in "${E2E_HOSTS[@]}"; do
		san+="DNS:${h%% *},"
	done
	# P-256 keys: made at once (an RSA key takes seconds under emulation), cheaper handshakes
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=sluice e2e test CA" \
		-keyout "$d/ca.key" -out "$d/ca.pem" -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-subj "/CN=sluice e2e hosts" \
			-keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null &&
		printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "${san%,}" >"$d/ext.cnf" &&
		openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
			-CAcreateserial -days 2 -extfile "$d/ext.cnf" -out "$d/server.pem" 2>/dev/null
}

# e2e_wait_http NAME URL…: until curl (in the workload's netns, open DNS) gets an answer.
e2e_wait_http() {
	local name=$1 i
	shift
	for i in $(seq $((300 * SL_SLOW))); do
		e2e_open curl -s -o /dev/null --max-time 2 --cacert "$E2E/pki/ca.pem" "$@" && return 0
		sleep 0.1
	done
	echo "$name does not answer: $(tail -n 5 "$E2E/logs/$name.out" 2>/dev/null)" >&2
	return 1
}

# The fixtures: the npm packages published to verdaccio and the project's lockfiles (npm and
# pnpm, made against the registry), the wheels and sdist with their simple index, a git repo.
e2e_fixture_npm() {
	local token p env
	token=$(e2e_open curl -fsS --cacert "$E2E/pki/ca.pem" -X PUT \
		-H 'content-type: application/json' \
		-d '{"name":"e2e","password":"e2e-pass-1234"}' \
		https://registry.npmjs.org/-/user/org.couchdb.user:e2e |
		"$E2E_PY" -c 'import json, sys; print(json.load(sys.stdin)["token"])') || return 1
	printf '//registry.npmjs.org/:_authToken=%s\n' "$token" >"$E2E/fix/npmrc"
	cp -r "$E2E_DIR/npm/." "$E2E/fix/"
	env=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$E2E/fix/home"
		NODE_EXTRA_CA_CERTS="$E2E/pki/ca.pem" npm_config_cafile="$E2E/pki/ca.pem"
		npm_config_userconfig="$E2E/fix/npmrc"
		npm_config_cache="$E2E/fix/npm-cache" npm_config_update_notifier=false)
	mkdir -p "$E2E/fix/home"
	for p in sl-e2e-leaf sl-e2e-util sl-e2e-stats; do
		(cd "$E2E/fix/$p" && e2e_open "${env[@]}" npm publish --ignore-scripts) \
			>>"$E2E/logs/fixture.out" 2>&1 || return 1
	done
	(cd "$E2E/fix/app" &&
		e2e_open "${env[@]}" npm install --package-lock-only --ignore-scripts --no-audit \
			--no-fund) >>"$E2E/logs/fixture.out" 2>&1 || return 1
	[[ -s $E2E/fix/app/package-lock.json ]] || return 1
	[[ $E2E_WITH_PNPM == 1 ]] || return 0
	(cd "$E2E/fix/app" &&
		e2e_open "${env[@]}" node "$E2E_PNPM" install --lockfile-only --ignore-scripts \
			--store-dir "$E2E/fix/pnpm-store") >>"$E2E/logs/fixture.out" 2>&1 || return 1
	[[ -s $E2E/fix/app/pnpm-lock.yaml ]]
}

e2e_fixture_py() {
	local out=$E2E/www/files/packages
	mkdir -p "$out" "$E2E/www/pypi/simple" "$E2E/fix/py"
	cp -r "$E2E_DIR/py/." "$E2E/fix/py/"
	# One Python process builds the two wheels and the sdist with setuptools (what pip wheel
	# --no-build-isolation and setup.py sdist run, without a process for pip and each of its
	# build hooks: seconds each under emulation), then the index. PEP 503: /simple/ lists the
	# projects, /simple/PROJECT/ links its files with their hashes.
	"$E2E_PY" - "$E2E/fix/py" "$out" "$E2E/www/pypi/simple" >>"$E2E/logs/fixture.out" 2>&1 <<'PY' ||
import hashlib, os, re, sys
fix, src, simple = sys.argv[1:4]
for proj, cmd in (("slpkg-core", "bdist_wheel"), ("slpkg-http", "bdist_wheel"),
                  ("slpkg-cli", "sdist")):
    os.chdir(os.path.join(fix, proj))
    sys.argv = ["setup.py", "-q", cmd, "-d", src]
    exec(compile(open("setup.py").read(), "setup.py", "exec"), {"__name__": "__main__"})
projects = {}
for f in sorted(os.listdir(src)):
    m = re.match(r"^(.+?)-\d", f)
    proj = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    projects.setdefault(proj, []).append(f)
with open(os.path.join(simple, "index.html"), "w") as fp:
    fp.write("<!DOCTYPE html><html><body>\n")
    for proj in projects:
        fp.write(f'<a href="/simple/{proj}/">{proj}</a>\n')
    fp.write("</body></html>\n")
for proj, files in projects.items():
    os.makedirs(os.path.join(simple, proj), exist_ok=True)
    with open(os.path.join(simple, proj, "index.html"), "w") as fp:
        fp.write("<!DOCTYPE html><html><body>\n")
        for f in files:
            h = hashlib.sha256(open(os.path.join(src, f), "rb").read()).hexdigest()
            fp.write(f'<a href="https://files.pythonhosted.org/packages/{f}#sha256={h}">{f}</a>\n')
        fp.write("</body></html>\n")
PY
		return 1
	compgen -G "$out/slpkg[-_]core-1.0-*.whl" >/dev/null &&
		compgen -G "$out/slpkg[-_]http-1.0-*.whl" >/dev/null &&
		compgen -G "$out/slpkg[-_]cli-1.0.tar.gz" >/dev/null
}

e2e_fixture_git() {
	local w=$E2E/fix/git-work g=(-c user.name=e2e -c user.email=e2e@example.invalid)
	git init -q --bare -b main "$E2E/git/demo.git" &&
		git init -q -b main "$w" &&
		echo "sluice e2e demo repo" >"$w/README" &&
		git -C "$w" add README &&
		git -C "$w" "${g[@]}" commit -qm "first" &&
		git -C "$w" checkout -qb release &&
		echo "release notes" >"$w/RELEASE" &&
		git -C "$w" add RELEASE &&
		git -C "$w" "${g[@]}" commit -qm "release 1.0" &&
		git -C "$w" push -q "$E2E/git/demo.git" main release
}

# e2e_up [--no-pnpm]: the local internet and the fixtures, in the topology topo_up built (without
# the pnpm lockfile: the fast test has no pnpm step). Sets E2E.
E2E_WITH_PNPM=1
e2e_up() {
	local h a pid up=()
	[[ ${1-} == --no-pnpm ]] && E2E_WITH_PNPM=0
	E2E=$SL_TMP/e2e
	mkdir -p "$E2E"/{pki,logs,run,git,fix,work} "$E2E"/www/{pypi,files,paste,transfer} \
		"$E2E"/verdaccio/storage || return 1
	chmod 0755 "$E2E" "$E2E"/*
	# lib.sh's sink in the internet netns listens on 53, 80 and 443 of every address.
	pid=$(cat "$SL_TMP/inet.pid" 2>/dev/null)
	[[ -n $pid ]] && sl_stop_pid "$pid"
	for a in "$E2E_PYPI_IP" "$E2E_FILES_IP" "$E2E_GIT_IP" "$E2E_CACHE_IP" \
		"$E2E_PASTE_IP" "$E2E_XFER_IP" "$E2E_TELEM_IP" "$E2E_EXFIL_IP" "$E2E_DNS_IP" "$E2E_PROXY_IP"; do
		in_inet ip addr add "$a/32" dev lo || return 1
	done
	e2e_pki || {
		echo "openssl could not make the test CA" >&2
		return 1
	}
	for h in "${E2E_HOSTS[@]}"; do
		up+=("--host-record=${h% *},${h#* }")
	done
	# The upstream sluice's resolver asks (root netns, 127.0.0.1) and the open ways' DNS server
	# (internet netns): the same names, each logging the queries it got.
	dns_upstream_start e2e-upstream --local-ttl=300 "${up[@]}" || return 1
	sl_on_exit dns_upstream_stop
	echo "nameserver $E2E_DNS_IP" >"$E2E/resolv.conf"
	ip netns exec "$SL_NS_INET" dnsmasq --no-daemon --conf-file=/dev/null --no-resolv --no-hosts \
		--no-poll \
		--listen-address="$E2E_DNS_IP" --bind-interfaces --local-ttl=300 --log-queries \
		--log-facility="$E2E/logs/dns.log" "${up[@]}" >"$E2E/logs/dnsmasq.out" 2>&1 </dev/null &
	sl_track_pid $!

	e2e_npm_ns_up || {
		echo "cannot build registry.npmjs.org's netns" >&2
		return 1
	}
	e2e_fill "$E2E_DIR/nginx.conf.in" "$E2E/run/nginx.conf"
	e2e_fill "$E2E_DIR/nginx-npm.conf.in" "$E2E/run/nginx-npm.conf"
	e2e_fill "$E2E_DIR/verdaccio.yaml.in" "$E2E/run/verdaccio.yaml"
	cp "$E2E_DIR/paste.sh" "$E2E/www/paste/e2e.sh"
	mkdir -p "$E2E/www/paste/raw" && cp "$E2E_DIR/paste.sh" "$E2E/www/paste/raw/e2e.sh"
	# One process (no -c: children would outlive a TERM to their parent); requests queue.
	e2e_bg fcgiwrap "$SL_NS_INET" fcgiwrap -s "unix:$E2E/run/fcgiwrap.sock"
	e2e_bg verdaccio "$E2E_NS_NPM" env VERDACCIO_PUBLIC_URL=https://registry.npmjs.org \
		HOME="$E2E/verdaccio" node "$E2E_VERDACCIO" --config "$E2E/run/verdaccio.yaml"
	e2e_bg nginx "$SL_NS_INET" nginx -c "$E2E/run/nginx.conf" -e "$E2E/logs/nginx-error.log"
	e2e_bg nginx-npm "$E2E_NS_NPM" nginx -c "$E2E/run/nginx-npm.conf" \
		-e "$E2E/logs/nginx-npm-error.log"
	e2e_wait_http nginx "https://pastebin.com/raw/e2e.sh" || return 1
	e2e_wait_http verdaccio -f "https://registry.npmjs.org/-/ping" || return 1

	e2e_fixture_npm || {
		echo "npm fixtures failed: $(tail -n 20 "$E2E/logs/fixture.out")" >&2
		return 1
	}
	e2e_fixture_py || {
		echo "python fixtures failed: $(tail -n 20 "$E2E/logs/fixture.out")" >&2
		return 1
	}
	e2e_fixture_git || return 1
	return 0
}

# e2e_npm_ns_up: registry.npmjs.org's netns, a link to the router, the routes both ways. Nothing
# in it routes further than the router, which routes only the test prefixes.
e2e_npm_ns_up() {
	ip netns add "$E2E_NS_NPM" || return 1
	sl_on_exit "ip netns del $E2E_NS_NPM 2>/dev/null"
	ip -n "$E2E_NS_NPM" link set lo up &&
		ip -n "$SL_NS_RTR" link add vnpm type veth peer name veth0 netns "$E2E_NS_NPM" &&
		ip -n "$SL_NS_RTR" addr add 10.200.3.1/30 dev vnpm &&
		ip -n "$E2E_NS_NPM" addr add 10.200.3.2/30 dev veth0 &&
		ip -n "$E2E_NS_NPM" addr add "$E2E_NPM_IP/32" dev lo &&
		ip -n "$SL_NS_RTR" link set vnpm up &&
		ip -n "$E2E_NS_NPM" link set veth0 up &&
		ip -n "$SL_NS_RTR" route add "$E2E_NPM_IP/32" via 10.200.3.2 &&
		ip -n "$E2E_NS_NPM" route add default via 10.200.3.1
}

# e2e_wan_delay MS: registry.npmjs.org made distant: its traffic, both ways, goes through a
# delay line (delayline.py: two TUN devices, wan-npm in the router and wan0 in its netns, packets
# held MS ms each way; the machine's kernel has no netem) instead of its veth, so that it answers
# like a distant registry while every other host, the pull-through cache included, stays one hop
# from the build. e2e_wan_clear puts the veth back and stops the line (topo_down too).
E2E_WAN_PID=
e2e_wan_delay() {
	sl_on_exit e2e_wan_clear
	ip netns exec "$SL_NS_RTR" "$E2E_PY" "$E2E_DIR/delayline.py" "$1" wan-npm wan0 \
		>"$E2E/logs/delayline.out" 2>&1 </dev/null &
	E2E_WAN_PID=$!
	sl_track_pid "$E2E_WAN_PID"
	wait_until 10000 grep -qs '^ready$' "$E2E/logs/delayline.out" || {
		echo "the delay line did not start: $(tail -n 3 "$E2E/logs/delayline.out")" >&2
		return 1
	}
	ip -n "$SL_NS_RTR" link set wan0 netns "$E2E_NS_NPM" &&
		ip -n "$SL_NS_RTR" addr add 10.200.4.1/30 dev wan-npm &&
		ip -n "$E2E_NS_NPM" addr add 10.200.4.2/30 dev wan0 &&
		ip -n "$SL_NS_RTR" link set wan-npm up &&
		ip -n "$E2E_NS_NPM" link set wan0 up &&
		ip -n "$SL_NS_RTR" route replace "$E2E_NPM_IP/32" via 10.200.4.2 dev wan-npm &&
		ip -n "$E2E_NS_NPM" route replace default via 10.200.4.1 dev wan0
}
e2e_wan_clear() {
	[[ -n $E2E_WAN_PID ]] || return 0
	ip -n "$SL_NS_RTR" route replace "$E2E_NPM_IP/32" via 10.200.3.2 dev vnpm 2>/dev/null
	ip -n "$E2E_NS_NPM" route replace default via 10.200.3.1 dev veth0 2>/dev/null
	sl_stop_pid "$E2E_WAN_PID"
	E2E_WAN_PID=
	return 0
}

# e2e_proxy_up: tinyproxy (the proxy way), allowing the registries only.
e2e_proxy_up() {
	printf '%s\n' '^registry\.npmjs\.org$' '^pypi\.org$' '^files\.pythonhosted\.org$' \
		'^git\.internal\.example$' >"$E2E/run/proxy-allow.txt"
	e2e_fill "$E2E_DIR/tinyproxy.conf.in" "$E2E/run/tinyproxy.conf"
	: >"$E2E/logs/proxy.log"
	chmod 0666 "$E2E/logs/proxy.log"
	e2e_bg tinyproxy "$SL_NS_INET" tinyproxy -d -c "$E2E/run/tinyproxy.conf"
	wait_until 10000 e2e_open curl -s -o /dev/null --max-time 2 "http://$E2E_PROXY_IP:3128/"
}

# e2e_cache_up: the pull-through cache (a second verdaccio, verdaccio-cache.yaml.in), empty: a
# cold cache. Its uplink is registry.npmjs.org, resolved by the open ways' DNS, trusted through
# NODE_EXTRA_CA_CERTS. Stops the one running before.
E2E_CACHE_PID=
e2e_cache_up() {
	[[ -n $E2E_CACHE_PID ]] && sl_stop_pid "$E2E_CACHE_PID"
	rm -rf "$E2E/verdaccio-cache"
	mkdir -p "$E2E/verdaccio-cache/storage"
	e2e_fill "$E2E_DIR/verdaccio-cache.yaml.in" "$E2E/run/verdaccio-cache.yaml"
	e2e_bg verdaccio-cache "$SL_NS_INET" env \
		VERDACCIO_PUBLIC_URL=https://npm-cache.internal.example \
		NODE_EXTRA_CA_CERTS="$E2E/pki/ca.pem" HOME="$E2E/verdaccio-cache" \
		node "$E2E_VERDACCIO" --config "$E2E/run/verdaccio-cache.yaml"
	E2E_CACHE_PID=$E2E_BG_PID
	e2e_wait_http verdaccio-cache -f "https://npm-cache.internal.example/-/ping"
}

# The sluice policy: the registries and the git host, HTTPS only.
e2e_policy() {
	cat >"$1" <<'EOF2'
# sluice e2e: what a build needs and nothing else
default: deny
rules:
  - name: npm
    hosts: ["registry.npmjs.org"]
    ports: [443]
    protocols: [tcp]
  - name: pypi
    hosts: ["pypi.org", "files.pythonhosted.org"]
    ports: [443]
    protocols: [tcp]
  - name: git
    hosts: ["git.internal.example"]
    ports: [443]
    protocols: [tcp]
EOF2
}

# e2e_run WAY LOG STEP…: the workload's steps, in one go, in WAY: open (the network as it is),
# none (a netns with only loopback), proxy (open, with the proxy variables), sluice (sluice run
# enforcing $E2E_POLICY, default $E2E/policy.yaml, its log LOG; "suggested" is the same with
# the suggested policy), report (the same in report mode). Each way gets a fresh $E2E/work/WAY.
# Sets, per step: E2E_RC[STEP], E2E_MS[STEP], E2E_T0[STEP], E2E_T1[STEP]; E2E_W (the work
# directory), E2E_ERR (the run's stderr: sluice's denials, the step headers).
declare -A E2E_RC E2E_MS E2E_T0 E2E_T1
# More NAME=VALUE for the workload's environment (the cache runs: npm_config_registry).
E2E_EXTRA_ENV=()
E2E_W=
E2E_ERR=
e2e_run() {
	local way=$1 log=$2 w=$E2E/work/$1 st rc ms t0 t1
	shift 2
	local envv=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$w/home" LANG=C.UTF-8
		E2E_WORK="$w" E2E_FIX="$E2E/fix" E2E_PNPM="$E2E_PNPM"
		NODE_EXTRA_CA_CERTS="$E2E/pki/ca.pem" npm_config_cafile="$E2E/pki/ca.pem"
		PIP_CERT="$E2E/pki/ca.pem"
		GIT_SSL_CAINFO="$E2E/pki/ca.pem" CURL_CA_BUNDLE="$E2E/pki/ca.pem"
		npm_config_cache="$w/npm-cache" npm_config_update_notifier=false
		npm_config_fetch_retries=1 npm_config_fetch_retry_mintimeout=1000
		npm_config_fetch_retry_maxtimeout=2000 PIP_NO_CACHE_DIR=1 PIP_RETRIES=1 PIP_TIMEOUT=10
		PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_BREAK_SYSTEM_PACKAGES=1 GIT_CONFIG_NOSYSTEM=1
		GIT_TERMINAL_PROMPT=0 "${E2E_EXTRA_ENV[@]}")
	rm -rf "$w"
	mkdir -p "$w/home"
	chmod 0755 "$w"
	if [[ $way == proxy ]]; then
		local p=http://$E2E_PROXY_IP:3128
		envv+=(HTTPS_PROXY="$p" https_proxy="$p" HTTP_PROXY="$p" http_proxy="$p")
	fi
	E2E_W=$w
	E2E_ERR=$w/run.err
	case $way in
	open | proxy)
		e2e_open "${envv[@]}" bash "$E2E_DIR/workload.sh" "$@" >"$w/run.out" 2>"$E2E_ERR"
		;;
	none)
		ip netns exec "$SL_NS_RUN" unshare -n sh -c \
			'mount --bind "$0" /etc/resolv.conf && ip link set lo up && exec "$@"' \
			"$E2E/resolv.conf" "${envv[@]}" bash "$E2E_DIR/workload.sh" "$@" \
			>"$w/run.out" 2>"$E2E_ERR"
		;;
	sluice | report | suggested)
		local mode=()
		[[ $way == report ]] && mode=(--mode report)
		sluice_run "${E2E_POLICY:-$E2E/policy.yaml}" "$log" "${mode[@]}" --netns "/run/netns/$SL_NS_RUN" \
			--upstream "127.0.0.1:$SL_DNS_PORT" -- "${envv[@]}" \
			bash "$E2E_DIR/workload.sh" "$@"
		cp "$SL_ERR" "$E2E_ERR"
		;;
	esac
	for st in "$@"; do
		E2E_RC[$st]=255 E2E_MS[$st]=-1 E2E_T0[$st]=0 E2E_T1[$st]=0
	done
	while read -r st rc ms t0 t1; do
		E2E_RC[$st]=$rc E2E_MS[$st]=$ms E2E_T0[$st]=$t0 E2E_T1[$st]=$t1
	done <"$w/results"
	return 0
}

# e2e_seen_lines HOST STEP: the lines of HOST's access log (an E2E_LOGS name) written while STEP
# of the last e2e_run ran. nginx writes a request's line when it ends, which the client waited
# for (every step's client waits for its answer or gives up before the step ends).
e2e_seen_lines() {
	awk -v t0="${E2E_T0[$2]}" -v t1="${E2E_T1[$2]}" \
		'{ t = $1 * 1000 } t >= t0 && t <= t1 + 1' "$E2E/logs/$1.log" 2>/dev/null
}
# e2e_seen HOST STEP: how many.
e2e_seen() { e2e_seen_lines "$1" "$2" | wc -l; }
# e2e_dns_seen NAME: queries for NAME that reached either DNS server (the open ways' or
# sluice's upstream) since the last e2e_dns_mark.
declare -A E2E_DNS_MARK
e2e_dns_mark() {
	E2E_DNS_MARK[dns]=$(sl_lines "$E2E/logs/dns.log")
	E2E_DNS_MARK[upstream]=$(sl_lines "$SL_DNS_LOG")
}
e2e_dns_seen() {
	local a b
	a=$(tail -n +"$((${E2E_DNS_MARK[dns]:-0} + 1))" "$E2E/logs/dns.log" 2>/dev/null |
		grep -c "query\[[A-Z]*\] $1 ")
	b=$(tail -n +"$((${E2E_DNS_MARK[upstream]:-0} + 1))" "$SL_DNS_LOG" 2>/dev/null |
		grep -c "query\[[A-Z]*\] $1 ")
	echo $((a + b))
}
