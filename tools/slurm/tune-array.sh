#!/bin/bash
#SBATCH --job-name=kiln-tune
#SBATCH --gpus=1
#SBATCH --cpus-per-task=8
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --output=tune-%A_%a.log
# One task of a kiln tune job array: shard I (the array index) of N of every model in the
# list, each into its own database OUT/shards/<model>-<I>.json, on the GPU Slurm gives it.
#   Usage: sbatch --array=0-$((N-1)) tune-array.sh N OUT MODEL...
#   KILN: the kiln to run (default: kiln on PATH); KILN_TUNE_OPTS: options added to every
#   kiln tune (e.g. "--dtype f16"). Compiled kernels go to the kernel cache,
#   $XDG_CACHE_HOME/kiln: export it on the shared file system before sbatch, and every task
#   reuses what any task compiled.
# A rerun of a task (sbatch --array=I, or Slurm requeueing it after a preemption) skips what
# its databases already hold; SIGTERM makes kiln save and stop after the item under way.
set -euo pipefail
N=$1
OUT=$2
shift 2
I=${SLURM_ARRAY_TASK_ID:?submit with sbatch --array=0-$((N - 1))}
KILN=${KILN:-kiln}
mkdir -p "$OUT/shards"
for model in "$@"; do
  name=$(basename "$model")
  name=${name%.*} # a model file's name without .json or .onnx
  # shellcheck disable=SC2086 # KILN_TUNE_OPTS is a list of options
  "$KILN" tune "$model" --shard "$I/$N" --db "$OUT/shards/$name-$I.json" ${KILN_TUNE_OPTS:-}
done
