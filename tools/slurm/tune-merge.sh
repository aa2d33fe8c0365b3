#!/bin/bash
#SBATCH --job-name=kiln-tune-merge
#SBATCH --time=00:10:00
#SBATCH --output=tune-merge-%j.log
# After every task of the array succeeded: one database for the GPU, OUT/tuning.json.
#   Usage: sbatch --dependency=afterok:JOBID tune-merge.sh OUT
#   KILN: the kiln to run (default: kiln on PATH).
set -euo pipefail
OUT=$1
KILN=${KILN:-kiln}
shopt -s nullglob
shards=("$OUT"/shards/*.json)
if [ ${#shards[@]} = 0 ]; then
  echo "tune-merge.sh: no shard databases in $OUT/shards" >&2
  exit 2
fi
"$KILN" tune merge "${shards[@]}" -o "$OUT/tuning.json"
"$KILN" tune report "$OUT/tuning.json"
