#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The man pages are the reference, so they are checked like code: each page (userspace/sluice.8,
# userspace/sluice-log.5, policy/sluice-policy.5) renders with `man -l` at 80 columns without a
# warning; every option that a subcommand's --help prints appears in sluice.8 (the subcommands
# enumerated from `sluice --help`, so a new command is checked without editing this file); the
# example policy at the top of sluice-policy.5 is accepted by `sluice policy check`. No root.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ -x $SLUICE ]] || skip_all "sluice not built at $SLUICE (run make, or set SLUICE=)"
command -v man >/dev/null || skip_all "man not installed (make deps: man-db)"
PAGES=(userspace/sluice.8 userspace/sluice-log.5 policy/sluice-policy.5)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-manpages.XXXXXX") || bail_out "mktemp failed"
trap 'rm -rf -- "$tmp"' EXIT

for p in "${PAGES[@]}"; do
	# the pages are UTF-8 (em dashes, ellipses): man's preconv reads them as the locale says
	out=$(cd "$REPO" && LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >"$tmp/page")
	if [[ -z $out && -s $tmp/page ]]; then
		tap_ok "$p renders with man -l, no warnings"
	else
		tap_fail "$p renders with man -l, no warnings" "$out"
	fi
done

# sluice.8's text as written, with troff's escapes undone (\fB…\fR, \-, \&, \e), one string
page=$(sed -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\f\[[A-Z]*\]//g' -e 's/\\-/-/g' \
	-e 's/\\&//g' -e 's/\\e/\\/g' "$REPO/userspace/sluice.8")

# The subcommands as `sluice --help` lists them: the first word of each line under "commands:"
# ("a | b | c" lines: each), and for "policy check FILE" also "policy check".
mapfile -t cmds < <("$SLUICE" --help 2>&1 | awk '
	/^commands:/ { on = 1; next }
	on && /^  [a-z]/ {
		if ($2 == "|") {
			for (i = 1; i <= NF && (i == 1 || $(i - 1) == "|" || $i == "|"); i++)
				if ($i != "|") print $i
			next
		}
		print $1
		# "policy check FILE": a command of a command (not "version  print the version")
		if ($2 ~ /^[a-z][a-z-]*$/ && $3 !~ /^[a-z]/) print $1 " " $2
	}
	on && /^$/ { on = 0 }' | sort -u)
tap_cmp "sluice --help lists subcommands" "${#cmds[@]}" -ge 10 || tap_diag "$("$SLUICE" --help 2>&1)"

for c in "${cmds[@]}"; do
	read -r -a words <<<"$c"
	help=$("$SLUICE" "${words[@]}" --help 2>&1)
	# every option the text names: --long ones, and -x ones standing alone
	mapfile -t opts < <(grep -oE '(^|[][ (|,=])--?[a-zA-Z][a-zA-Z0-9-]*' <<<"$help" |
		sed -E 's/^[][ (|,=]//' | grep -vE '^-[a-zA-Z][a-zA-Z0-9]' | sort -u)
	missing=()
	for o in "${opts[@]}"; do
		grep -qE -- "(^|[^a-zA-Z0-9-])$o([^a-zA-Z0-9-]|\$)" <<<"$page" || missing+=("$o")
	done
	if [[ ${#opts[@]} -eq 0 ]]; then
		tap_ok "sluice $c --help: no options to look for"
	elif [[ ${#missing[@]} -eq 0 ]]; then
		tap_ok "sluice $c --help: its ${#opts[@]} options are all in sluice.8"
	else
		tap_fail "sluice $c --help: its options are all in sluice.8" \
			"not in userspace/sluice.8: ${missing[*]}"
	fi
done

# the example policy: the first .nf/.fi block of sluice-policy.5, troff escapes undone
awk '/^\.nf/ { on = 1; next } /^\.fi/ { exit } on' "$REPO/policy/sluice-policy.5" |
	sed -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\e/\\/g' >"$tmp/example.yaml"
tap_cmp "sluice-policy.5's example policy has rules" "$(grep -c '^  - ' "$tmp/example.yaml")" -ge 2
out=$("$SLUICE" policy check "$tmp/example.yaml" 2>&1)
tap_is "sluice-policy.5's example policy: sluice policy check accepts it" "$?" 0 || tap_diag "$out"

tap_done
