#!/usr/bin/env bash
# make demo: run one sandboxed command under policy/examples/demo.yaml in a throwaway topology
# (PROBES.md: run netns -- router netns -- "internet" netns with test hosts), show an allowed and a
# denied connection, the blackhole, and the log. Everything it creates is removed on exit.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" >/dev/null

[[ $(id -u) -eq 0 ]] || { echo "make demo needs root (namespaces, cgroups, BPF)" >&2; exit 1; }
[[ -x $SLUICE ]] || { echo "sluice is not built: run make" >&2; exit 1; }

policy=$REPO/policy/examples/demo.yaml
run_id=demo-$$
log=$REPO/.output/$run_id.jsonl

topo_up >/dev/null

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "policy: sluice policy check $policy"
"$SLUICE" policy check "$policy"

say "sluice run --policy demo.yaml --run-id $run_id --task DEMO-1 -- <workload in its netns>"
cat <<'SH'
  curl http://198.51.100.10/            (listed: test-host, port 80)
  curl http://198.51.100.20/            (not listed)
  curl http://169.254.169.254/          (metadata: blackholed whatever the policy)
SH
echo
"$SLUICE" run --policy "$policy" --run-id "$run_id" --task DEMO-1 --log "$log" -- \
	ip netns exec "$SL_NS_RUN" sh -c '
		printf "workload: allowed  -> "; curl -sS -m 5 http://198.51.100.10/ || echo "curl failed: $?"; sleep 0.3
		printf "workload: unlisted -> "; curl -sS -m 5 http://198.51.100.20/ 2>&1 || true; sleep 0.3
		printf "workload: metadata -> "; curl -sS -m 5 http://169.254.169.254/ 2>&1 || true; sleep 0.3
	'
status=$?
echo "sluice run exited with $status (the workload's status)"

say "what the test hosts received (sink log in the internet netns)"
cat "$SL_INET_LOG"

say "the run's log: $log"
cat "$log"
