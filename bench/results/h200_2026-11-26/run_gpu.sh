#!/bin/bash
# The standing order's first GPU run: the gpu suite and resnet50_inference from the bundle.
set -u
here=$(pwd)
cd .device-carry && tar xzf kiln-*.tar.gz && B=$(pwd)/$(ls -d kiln-*/ | head -1) && cd "$here"
K=$B/bin/kiln
export PYTHONUNBUFFERED=1 PYTHONPATH=$B/tests/gpu XDG_CACHE_HOME=/tmp/kcache
S=$OUT/summary.txt
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; $K --version; $K gpu detect; } > $S 2>&1
cd "$B"
t0=$(date +%s)
timeout 300 python3 tests/gpu/test_gpu.py "$K" > $OUT/gpu_models.log 2>&1; echo "gpu_models rc $? in $(( $(date +%s) - t0 )) s" >> $S
t0=$(date +%s)
timeout 110 python3 tests/gpu/test_gpu_tune.py "$K" > $OUT/gpu_tune.log 2>&1; echo "gpu_tune rc $? in $(( $(date +%s) - t0 )) s" >> $S
t0=$(date +%s)
timeout 130 python3 bench/resnet50_inference.py "$K" --batches 1,32 --dtypes f32,f16 --runs 20 --out $OUT/r50 > $OUT/r50.log 2>&1; echo "resnet50_inference rc $? in $(( $(date +%s) - t0 )) s" >> $S
cat $S
