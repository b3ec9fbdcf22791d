#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The escape-probe kit against a sandbox sluice did not set up (selftests/README.md, "The probe
# kit"): the kit builds the test topology and its observer, the caller's tool starts the
# sandbox in the network namespace the kit made for it, the kit's workload tries every road out
# from inside, and the observer at the test hosts says what arrived. A sandbox is contained iff
# the observer saw nothing.
#
#   selftests/probes/run-external.sh {--enter TEMPLATE | --pid PID} [--name NAME]… [--out FILE]
#
# TEMPLATE: a shell command that runs the words appended to it inside the sandbox; {netns} is
# the sandbox's network namespace (/run/netns/NAME), {kit} the kit's static binary (mount it at
# the same path). A template without {netns} is refused: the kit's probes (to the metadata
# address among others) must meet the topology's fake hosts, never a real network. Examples:
#   --enter 'nsenter --net={netns} --'                                  (no sandbox: the control)
#   --enter 'podman run --rm --network ns:{netns} -v {kit}:{kit}:ro --rootfs /srv/rootfs'
#   --enter 'unshare --mount --pid --fork nsenter --net={netns} --'
#   --enter 'sluice run --policy deny.yaml --log /tmp/x.jsonl --netns {netns} --'
# The kit runs twice: first with no sandbox (the control, its own column: every probe should
# escape; one that does not is closed on this kernel, and a sandbox's "contained" there is
# reported as skipped), then in the sandbox.
# PID: a sandbox already running, the one process PID is in: the kit pins its namespaces and
# runs in them and a cgroup below its own, with its process's uid and capabilities (kit.sh,
# kit_enter_pid). Its network namespace must have no link but loopback (podman --network none,
# unshare --net): the kit lends it the kit's own link to the test hosts for the run, and refuses
# (exit 2, before anything is built) a namespace with a link of its own, which could lead to a
# real network, this machine's own namespace, and a sandbox in a user namespace of its own (the
# kit runs in this machine's mount namespace, where the sandbox's root could trace it).
# NAME: the table's column for the --enter or --pid before it (default "sandbox", "sandbox 2"…);
# several share one topology and control, one column each. FILE: where the table goes (default
# .output/probes-external.md). Output: TAP, one line per probe and sandbox, then the table.
# Exit status: 0 every sandbox contained, 1 one NOT contained (or the kit could not judge it),
# 2 usage or a sandbox the kit refuses to probe.
set -u

usage() {
	[[ -n ${1:-} ]] && echo "run-external.sh: $1" >&2
	echo "usage: run-external.sh {--enter TEMPLATE | --pid PID} [--name NAME]... [--out FILE]" >&2
	exit 2
}

# each sandbox: "enter TEMPLATE" or "pid PID"
tpls=()
names=()
out=
while [[ $# -gt 0 ]]; do
	case $1 in
	--enter)
		[[ $# -ge 2 ]] || usage "--enter needs a command template"
		# Safety: the probes go to the metadata address, among others; only in the kit's
		# namespace do they meet the fake one instead of a real network's
		[[ $2 == *"{netns}"* ]] ||
			usage "--enter \"$2\" has no {netns}: the sandbox must run in the network namespace the kit makes (its probes would go out on a real network otherwise)"
		tpls+=("enter $2")
		names+=("sandbox${names[*]:+ $((${#names[@]} + 1))}")
		shift
		;;
	--pid)
		[[ $# -ge 2 ]] || usage "--pid needs a process id"
		tpls+=("pid $2")
		names+=("sandbox${names[*]:+ $((${#names[@]} + 1))}")
		shift
		;;
	--name)
		[[ $# -ge 2 ]] || usage "--name needs a name"
		[[ ${#tpls[@]} -gt 0 ]] || usage "--name $2 names the --enter or --pid before it: none"
		[[ $2 != *[$'\t\n|']* && -n $2 ]] || usage "--name \"$2\" is empty or has a tab, newline or |"
		names[${#tpls[@]} - 1]=$2
		shift
		;;
	--out) [[ $# -ge 2 ]] || usage "--out needs a file"; out=$2; shift ;;
	-h | --help) usage ;;
	*) usage "unknown argument \"$1\"" ;;
	esac
	shift
done
[[ ${#tpls[@]} -gt 0 ]] ||
	usage "--enter TEMPLATE is required (the command that enters the sandbox), or --pid PID"
[[ $(printf '%s\n' "${names[@]}" "no sandbox (control)" | sort | uniq -d) == "" ]] ||
	usage "two columns named \"$(printf '%s\n' "${names[@]}" "no sandbox (control)" | sort | uniq -d | head -n 1)\""

. "$(dirname "${BASH_SOURCE[0]}")/kit.sh"
out=${out:-$REPO/.output/probes-external.md}

require_root
# a sandbox the kit cannot probe safely is refused before anything is built
for t in "${tpls[@]}"; do
	if [[ $t == "pid "* ]]; then
		why=$(kit_pid_refusal "${t#pid }")
		if [[ -n $why ]]; then
			echo "run-external.sh: --pid ${t#pid }: $why; nothing probed" >&2
			exit 2
		fi
	fi
done
kit_up
# the control first: which roads are open on this kernel with no sandbox at all
kit_enter "nsenter --net={netns} --"
kit_control "no sandbox (control)"
for i in "${!tpls[@]}"; do
	if [[ ${tpls[i]} == "pid "* ]]; then
		kit_enter_pid "${tpls[i]#pid }"
	else
		kit_enter "${tpls[i]#enter }"
	fi
	kit_judge "${names[i]}" --external
done
mkdir -p "$(dirname "$out")"
kit_table "$KIT_RESULTS" >"$out"
cat "$out"
echo "# table written to $out"
tap_done
