#!/bin/bash
# The job array of docs/cluster.md on a real Slurm (the `slurm` test, which CI runs): a
# one-node cluster of Debian's slurm-wlm and munge (installed when missing, as root), its
# daemons on private ports and paths, tune-array.sh submitted over two models as three
# shards sharing one kernel cache and tune-merge.sh with --dependency=afterok; a bounded
# poll waits for them, the merged database must equal an unsharded sweep's, and every
# daemon started here is stopped again.
# Usage: tools/slurm/test_cluster.sh KILN     (KEEP=1 keeps the work directory)
set -euo pipefail
KILN=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SHARDS=3
say() { echo "slurm test: $*"; }
fail() {
  echo "slurm test: FAIL: $*" >&2
  exit 1
}
trap 'echo "slurm test: FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR

# docs/cluster.md quotes the scripts as they are, never a diverging copy.
python3 - "$root/docs/cluster.md" "$here/tune-array.sh" "$here/tune-merge.sh" <<'PY' ||
import sys
doc = open(sys.argv[1]).read()
bad = [s for s in sys.argv[2:] if "```sh\n" + open(s).read() + "```" not in doc]
sys.exit(f"docs/cluster.md does not quote {', '.join(bad)} as it is" if bad else 0)
PY
  fail "the doc and the scripts differ"

# Debian's packages; CI runs as root and installs them.
missing=""
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  [ "$(id -u)" = 0 ] || fail "needs Debian packages:$missing; run as root, or: sudo apt-get install -y$missing"
  say "installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  # Debian starts a package's services on installation; this test starts its own, so the
  # system's stay off (policy-rc.d, 101: action forbidden) unless the machine says otherwise.
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
  fi
  # shellcheck disable=SC2086 # a list of packages
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null; } ||
    { [ -z "$policy" ] || rm -f "$policy"; fail "apt-get could not install$missing"; }
  [ -z "$policy" ] || rm -f "$policy"
fi
[ "$(id -u)" = 0 ] || fail "starts slurmd, which runs jobs as their users: run as root (CI does)"

work=$(mktemp -d /tmp/kiln-slurm.XXXXXX)
chmod 755 "$work" # munged wants every directory above its socket searchable
mkdir -p "$work"/{etc,state,spool,log,run,jobs,out,full,cache}
stop_daemons() {
  local pids=()
  for d in slurmd slurmctld munged; do
    [ -f "$work/run/$d.pid" ] && pids+=("$(cat "$work/run/$d.pid")")
  done
  [ ${#pids[@]} = 0 ] && return
  kill "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 100); do # bounded: 10 s
    kill -0 "${pids[@]}" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "${pids[@]}" 2>/dev/null || true
}
finish() {
  local rc=$?
  if [ $rc != 0 ]; then
    for f in "$work"/log/* "$work"/jobs/*.log; do
      [ -f "$f" ] && { echo "== $f"; tail -n 30 "$f"; }
    done >&2
  fi
  [ -f "$work/etc/slurm.conf" ] && SLURM_CONF=$work/etc/slurm.conf scancel --quiet --user=root 2>/dev/null
  stop_daemons
  if [ "${KEEP:-}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
  exit $rc
}
trap finish EXIT

# munged with its own key and socket.
mungekey --create --keyfile="$work/etc/munge.key"
munged --socket="$work/run/munge.socket" --key-file="$work/etc/munge.key" \
  --pid-file="$work/run/munged.pid" --log-file="$work/log/munged.log" \
  --seed-file="$work/state/munged.seed" || fail "munged did not start"

# One node; three GPUs as a generic resource the scripts' --gpus=1 asks for (Slurm drops a
# file-less gpu GRES, so character devices stand in for /dev/nvidia*: nothing opens them).
# Eight CPUs per shard, as tune-array.sh asks; config_overrides lets slurmd declare more
# than the machine has.
ports=$(python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in ss))')
read -r ctld_port slurmd_port <<<"$ports"
host=$(hostname -s)
cat >"$work/etc/slurm.conf" <<CONF
ClusterName=kilntest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/run/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=none
ReturnToService=2
NodeName=kiln1 NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$((8 * SHARDS)) RealMemory=1000 Gres=gpu:$SHARDS State=UNKNOWN
PartitionName=kiln Nodes=kiln1 Default=YES MaxTime=INFINITE State=UP
CONF
echo "NodeName=kiln1 Name=gpu File=/dev/null,/dev/zero,/dev/full" >"$work/etc/gres.conf"
export SLURM_CONF=$work/etc/slurm.conf
slurmctld -i || fail "slurmctld did not start"
slurmd -N kiln1 || fail "slurmd did not start"
deadline=$((SECONDS + 60))
until sinfo -h -N -o %t 2>/dev/null | grep -qx idle; do
  [ $SECONDS -lt $deadline ] || fail "the node did not come up: $(sinfo -N -o '%N %t %E' 2>&1)"
  sleep 0.2
done
say "one-node Slurm up ($(sinfo -V)): $(sinfo -h -N -o '%N %t cpus=%c gres=%G')"

# Two small models; the emulator checks every variant (no GPU here), all shards share one
# kernel cache (as the doc recommends) and write no -o: the default sweep directories.
cat >"$work/one_conv.json" <<'M'
{"format": "kiln-model/1", "name": "one_conv", "input": {"name": "x", "shape": [1, 8, 8, 8]},
 "layers": [{"name": "conv", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1, "bias": false}]}
M
cat >"$work/conv_pool_fc.json" <<'M'
{"format": "kiln-model/1", "name": "conv_pool_fc", "input": {"name": "x", "shape": [2, 8, 16, 16]},
 "layers": [{"name": "conv", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
            {"name": "relu", "op": "relu"},
            {"name": "pool", "op": "maxpool2d", "kernel": 2},
            {"name": "flatten", "op": "flatten"},
            {"name": "fc", "op": "linear", "out_features": 8}]}
M
models=("$work/one_conv.json" "$work/conv_pool_fc.json")
export KILN KILN_TUNE_OPTS="--device emu --gpu h100" XDG_CACHE_HOME=$work/cache
cd "$work/jobs"
array=$(sbatch --parsable --array=0-$((SHARDS - 1)) "$here/tune-array.sh" $SHARDS "$work/out" "${models[@]}")
merge=$(sbatch --parsable --dependency=afterok:"$array" "$here/tune-merge.sh" "$work/out")
say "submitted array $array ($SHARDS tasks) and merge $merge (afterok:$array)"

# Bounded poll: every task must complete, then the merge.
state() { scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 | sort -u | tr '\n' ' '; }
started=$SECONDS
deadline=$((SECONDS + 480))
while :; do
  tasks=$(state "$array")
  m=$(state "$merge")
  case "$tasks $m" in
  *FAILED* | *CANCELLED* | *TIMEOUT* | *NODE_FAIL* | *OUT_OF_MEMORY* | *PREEMPTED* | *BOOT_FAIL* | *DEADLINE*)
    fail "array: $tasks; merge: $m" ;;
  esac
  [ "$m" = "COMPLETED " ] && break
  [ $SECONDS -lt $deadline ] || fail "not done after $((SECONDS - started)) s: array: $tasks; merge: $m"
  sleep 1
done
say "array and merge completed in $((SECONDS - started)) s"
for f in tune-[0-9]*_*.log; do
  grep -h "recorded" "$f" | sed "s|^|  $f: |"
done
grep -h "^merged" tune-merge-*.log | sed 's|^|  |'

# The same sweep unsharded, outside Slurm, then the two databases compared.
for m in "${models[@]}"; do
  # shellcheck disable=SC2086 # a list of options
  "$KILN" tune "$m" $KILN_TUNE_OPTS --db "$work/full/$(basename "$m")" >/dev/null 2>&1 ||
    fail "the unsharded sweep of $m failed"
done
"$KILN" tune merge "$work"/full/*.json -o "$work/full.json" >/dev/null
python3 - "$work/out/tuning.json" "$work/full.json" <<'PY' ||
import json, sys
merged, full = (json.load(open(p)) for p in sys.argv[1:])
def items(db):
    return {(m["key"], m["variant"]): (m["op"], m["shape"], m["dtype"], m["layout"], m["family"])
            for m in db["measurements"]}
a, b = items(merged), items(full)
for k in sorted(set(a) ^ set(b)):
    print("only in", "merged" if k in a else "unsharded", k, file=sys.stderr)
for k in sorted(set(a) & set(b)):
    if a[k] != b[k]:
        print("differs", k, a[k], b[k], file=sys.stderr)
if a != b or merged["gpu"] != full["gpu"] or merged["device"] != full["device"]:
    sys.exit(1)
print(f"slurm test: merged database equals the unsharded sweep: {len(a)} measurements over "
      f"{len({key for key, _ in a})} shapes")
PY
  fail "the merged database differs from the unsharded sweep"
say "ok"
