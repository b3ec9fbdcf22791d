#!/usr/bin/env bash
# make demo: run one sandboxed command under policy/examples/demo.yaml in a throwaway topology
# (the topology of selftests/lib.sh: run netns -- router -- "internet" netns with test hosts), with
# upstream DNS on loopback. It shows a name allowed and a name denied, an address allowed and one
# denied, the metadata blackhole, and the log. Everything it creates is removed on exit.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" >/dev/null

[[ $(id -u) -eq 0 ]] || { echo "make demo needs root (namespaces, cgroups, BPF)" >&2; exit 1; }
[[ -x $SLUICE ]] || { echo "sluice is not built: run make" >&2; exit 1; }

policy=$REPO/policy/examples/demo.yaml
run_id=demo-$$
log=$REPO/.output/$run_id.jsonl

topo_up >/dev/null
# The public names, as the test upstream answers them: both registries live on the test host.
dns_upstream_start demo-upstream \
	--address=/registry.npmjs.org/198.51.100.10 --address=/registry.npmjs.org/2001:db8::10 \
	--address=/pypi.org/198.51.100.10 --address=/pypi.org/2001:db8::10 \
	--address=/static.rust-lang.org/198.51.100.20 ||
	{ echo "cannot start the test DNS upstream (dnsmasq)" >&2; exit 1; }

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# The key that certifies each run's signing key; on a real host, /etc/sluice/host.key.
key=$SL_TMP/demo-host.key
say "host key: sluice keygen --name demo-host $key"
"$SLUICE" keygen --name demo-host "$key" || { echo "sluice keygen failed" >&2; exit 1; }

say "policy: sluice policy check $policy"
"$SLUICE" policy check "$policy"

say "sluice run --policy demo.yaml --run-id $run_id --task DEMO-1 --key demo-host.key" \
	"--netns … -- sh -c …"
cat <<'SH'
  curl http://registry.npmjs.org/       (listed by name: resolves, connects)
  curl http://static.rust-lang.org/     (not listed: does not resolve)
  curl http://198.51.100.10/            (listed by address: test-host)
  curl http://198.51.100.20/            (not listed)
  curl http://169.254.169.254/          (metadata: blackholed whatever the policy)
SH
echo
step() { printf 'workload: %-24s -> ' "$1"; shift; "$@" 2>&1 || true; sleep 0.3; }
export -f step
"$SLUICE" run --policy "$policy" --run-id "$run_id" --task DEMO-1 --log "$log" --key "$key" \
	--netns "/run/netns/$SL_NS_RUN" --upstream "127.0.0.1:$SL_DNS_PORT" -- bash -c '
		step registry.npmjs.org curl -sS -m 5 http://registry.npmjs.org/
		step static.rust-lang.org curl -sS -m 5 http://static.rust-lang.org/
		step 198.51.100.10 curl -sS -m 5 http://198.51.100.10/
		step 198.51.100.20 curl -sS -m 5 http://198.51.100.20/
		step 169.254.169.254 curl -sS -m 5 http://169.254.169.254/
	'
status=$?
echo "sluice run exited with $status (the workload's status)"

say "what the test hosts received (sink log in the internet netns)"
cat "$SL_INET_LOG"

say "the run's log: $log"
cat "$log"

say "its signed checkpoints, also in $log.checkpoints"
cat "$log.checkpoints"

say "sluice verify $log --key demo-host.key.pub"
"$SLUICE" verify "$log" --key "$key.pub"
vstatus=$?
echo "sluice verify exited with $vstatus (0: intact, sealed, no loss)"
# make demo fails if the log it just produced does not verify
exit "$vstatus"
