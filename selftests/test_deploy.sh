#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The deployment files that cannot run here (sluice(8) "Running it on a fleet", marked untested
# there): the Kubernetes DaemonSet, the CRI-O hooks.d file, the Fluent Bit and OpenTelemetry
# Collector configurations. Checked for what can be checked without Kubernetes, Fluent Bit or
# the collector: each parses (python3-yaml, json), the DaemonSet has what the daemon needs
# (privileged, hostPID, bpffs, cgroupfs, /run/sluice, the state and log directories on the host,
# the host key from a Secret) and its command's options are ones `sluice daemon --help` lists;
# the hook runs `sluice oci-hook` at createRuntime for pods annotated io.sluice.policy; both
# shippers keep offsets on disk and read both files of a run. No root needed.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEPLOY=$REPO/userspace/deploy
[[ -x $SLUICE ]] || skip_all "sluice not built at $SLUICE (run make, or set SLUICE=)"
python3 -c 'import yaml' 2>/dev/null || skip_all "python3-yaml not installed"

# check NAME PYTHON: PYTHON (reading DEPLOY, HELP) prints nothing when NAME holds, else why not.
check() {
	local name=$1 out
	out=$(DEPLOY=$DEPLOY HELP=$("$SLUICE" daemon --help 2>&1) python3 -c "
import json, os, re, sys, yaml
D = os.environ['DEPLOY']
HELP = os.environ['HELP']
def load(f):
    with open(os.path.join(D, f)) as fh:
        return list(yaml.safe_load_all(fh))
$2" 2>&1)
	if [[ -z $out ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "$out"
	fi
}

check "daemonset.yaml parses: a Namespace and a DaemonSet" '
kinds = [d["kind"] for d in load("daemonset.yaml")]
if kinds != ["Namespace", "DaemonSet"]:
    print(kinds)'

DS='
ds = [d for d in load("daemonset.yaml") if d["kind"] == "DaemonSet"][0]
pod = ds["spec"]["template"]["spec"]
c = [c for c in pod["containers"] if c["name"] == "sluice"][0]
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
def host(path):
    v = vols.get(mounts.get(path), {})
    return v.get("hostPath", {}).get("path")
'
check "the DaemonSet's pods are privileged, in the host's PID namespace" "$DS"'
if not (c["securityContext"].get("privileged") is True and pod.get("hostPID") is True):
    print(c["securityContext"], pod.get("hostPID"))'
check "it mounts the host's bpffs, cgroupfs, /run/sluice, state and log directories" "$DS"'
for p in ["/sys/fs/bpf", "/sys/fs/cgroup", "/run/sluice", "/var/lib/sluice", "/var/log/sluice"]:
    if host(p) != p:
        print(p, "is not the host directory:", host(p))'
check "the host key comes from a Secret at /etc/sluice, read-only" "$DS"'
v = vols.get(mounts.get("/etc/sluice"), {})
m = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/sluice"][0]
if not v.get("secret", {}).get("secretName") or not m.get("readOnly"):
    print(v, m)'
check "its command is sluice daemon with options --help lists, its paths the mounted ones" "$DS"'
cmd = c["command"]
if cmd[:2] != ["/usr/local/sbin/sluice", "daemon"]:
    print(cmd)
for a in cmd[2:]:
    if a.startswith("-") and not re.search(r"(^|[\s,\[])" + re.escape(a) + r"([\s=\]]|$)",
                                           HELP, re.M):
        print(a, "is not in sluice daemon --help")
args = dict(zip(cmd[2::2], cmd[3::2]))
for opt, want in [("--socket", "/run/sluice/"), ("--state-dir", "/var/lib/sluice"),
                  ("--log-dir", "/var/log/sluice"), ("--key", "/etc/sluice/")]:
    if not args.get(opt, "").startswith(want):
        print(opt, args.get(opt))'

check "the CRI-O hook runs sluice oci-hook at createRuntime for io.sluice.policy pods" '
h = json.load(open(os.path.join(D, "crio-hooks.d-sluice.json")))
if h["hook"]["args"][1:] != ["oci-hook"] or h["stages"] != ["createRuntime"] or \
        list(h["when"]["annotations"]) != [r"^io\.sluice\.policy$"] or h["version"] != "1.0.0":
    print(h)
ds = [d for d in load("daemonset.yaml") if d["kind"] == "DaemonSet"][0]
if h["hook"]["path"] not in json.dumps(ds):
    print("the DaemonSet does not install", h["hook"]["path"])'

check "fluent-bit-sluice.yaml parses; both tails keep offsets in a database, buffer on disk" '
fb = load("fluent-bit-sluice.yaml")[0]
ins = fb["pipeline"]["inputs"]
paths = sorted(i["path"] for i in ins)
if paths != ["/var/log/sluice/*.jsonl", "/var/log/sluice/*.jsonl.checkpoints"]:
    print(paths)
for i in ins:
    if not i.get("db") or i.get("db.sync") != "full" or i.get("storage.type") != "filesystem":
        print(i)
cp = [i for i in ins if i["path"].endswith(".checkpoints")][0]
if cp.get("multiline.parser") not in [p["name"] for p in fb["multiline_parsers"]]:
    print("the checkpoints tail has no multi-line parser")'

check "otelcol-sluice.yaml parses; both receivers and the queue keep state in file_storage" '
oc = load("otelcol-sluice.yaml")[0]
r = oc["receivers"]
inc = sorted(x["include"][0] for x in r.values())
if inc != ["/var/log/sluice/*.jsonl", "/var/log/sluice/*.jsonl.checkpoints"]:
    print(inc)
for n, x in r.items():
    if x.get("storage") != "file_storage" or x.get("start_at") != "beginning":
        print(n, x)
if "file_storage" not in oc["service"]["extensions"] or \
        oc["exporters"]["otlp"]["sending_queue"].get("storage") != "file_storage":
    print("the queue is not persisted")
if sorted(oc["service"]["pipelines"]["logs"]["receivers"]) != sorted(r):
    print("a receiver is not in the pipeline")'

tap_done
