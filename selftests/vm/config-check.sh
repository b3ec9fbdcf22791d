#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Which options sluice needs (selftests/config) a kernel config lacks.
#
#   selftests/vm/config-check.sh CONFIG [FRAGMENT]
#
# CONFIG: a .config, a Debian boot/config-*, /proc/config.gz (gzip is read as it is). Each
# option of the fragment (default selftests/config) that CONFIG does not set as the fragment
# asks ("=y": built in; "=m": a module or built in) is printed on its own line with what CONFIG
# has and why sluice needs it (the fragment's comment above it). Exits 0 when nothing is
# lacking, 1 when something is, 2 when a file cannot be read or the fragment is malformed.
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
config=${1:-}
fragment=${2:-$REPO/selftests/config}
if [[ -z $config || $# -gt 2 ]]; then
	echo "usage: $0 CONFIG [FRAGMENT]" >&2
	exit 2
fi
for f in "$config" "$fragment"; do
	if [[ ! -f $f || ! -r $f ]]; then
		echo "config-check: $f: no such readable file" >&2
		exit 2
	fi
done

if gzip -t "$config" 2>/dev/null; then
	text=$(gzip -dc "$config")
else
	text=$(cat "$config")
fi

awk -v cfgname="$config" -v fragname="$fragment" '
	# first the config under test: CONFIG_X=value, "# CONFIG_X is not set"
	FNR == NR {
		if (match($0, /^CONFIG_[A-Za-z0-9_]+=/))
			have[substr($0, 1, RLENGTH - 1)] = substr($0, RLENGTH + 1)
		next
	}
	# the comment just above a group of options says why they are needed
	/^#/ {
		if (after_opt)
			why = ""
		after_opt = 0
		why = (why == "" ? "" : why " ") substr($0, 3)
		next
	}
	/^[ \t]*$/ { why = ""; after_opt = 0; next }
	{
		after_opt = 1
		if (!match($0, /^CONFIG_[A-Za-z0-9_]+=[ym]$/)) {
			printf "config-check: %s:%d: not CONFIG_NAME=y or =m: %s\n", fragname, FNR, $0 \
				> "/dev/stderr"
			bad = 1
			exit 2
		}
		n = index($0, "=")
		opt = substr($0, 1, n - 1)
		want = substr($0, n + 1)
		got = (opt in have) ? have[opt] : ""
		total++
		if (got == "y" || (want == "m" && got == "m"))
			next
		got = got == "" ? " not set" : "=" got
		lacking++
		printf "%s=%s lacking (%s in the config): %s\n", opt, want, opt got, why
	}
	END {
		if (bad)
			exit 2
		if (lacking) {
			printf "config-check: %s lacks %d of the %d options sluice needs (%s)\n", \
				cfgname, lacking, total, fragname
			exit 1
		}
		printf "config-check: %s has all %d options sluice needs\n", cfgname, total
	}' <(printf '%s\n' "$text") "$fragment"
