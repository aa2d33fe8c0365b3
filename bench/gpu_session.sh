#!/bin/bash
# The next lent GPU session's run, prepared without a GPU (device time is 15 minutes a
# session, all tries together: each part has a time limit, the most telling first).
# usage, on the device, from the repository root with `make bundle`'s tarball in DIR:
#   bench/gpu_session.sh DIR OUT        (OUT: where the logs go; $OUT under the run tool)
# Order: the Hopper family on hardware (its layouts were written from the PTX ISA and checked
# only on the emulator), the cuDNN peer plan (fixed without a GPU), the gpu suite, then the
# conv families against cuDNN and resnet50 inference against PyTorch.
set -u
dir=$1 out=$2
here=$(pwd)
cd "$dir" && tar xzf kiln-*.tar.gz && B=$(pwd)/$(ls -d kiln-*/ | head -1) && cd "$here"
K=$B/bin/kiln
export PYTHONUNBUFFERED=1 PYTHONPATH=$B/tests/gpu XDG_CACHE_HOME=/tmp/kcache
S=$out/summary.txt
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; $K --version; $K gpu detect; } > "$S" 2>&1
part() { # NAME SECONDS CMD...: runs CMD under a limit, its output in OUT/NAME.log
  local name=$1 limit=$2 t0=$(date +%s)
  shift 2
  (cd "$B" && timeout "$limit" "$@") > "$out/$name.log" 2>&1
  echo "$name rc $? in $(( $(date +%s) - t0 )) s" >> "$S"
}
part gpu_hopper 90 env KILN_HOPPER_CONV_SOURCE=tests/gpu/conv_instances.cpp bin/kiln-env tests/gpu/gpu_hopper_conv
part gpu_models 300 python3 tests/gpu/test_gpu.py "$K"
part gpu_tune 100 python3 tests/gpu/test_gpu_tune.py "$K"
part conv_families 200 python3 bench/conv_families.py "$K" --models resnet50 --dtypes f16 --batches 32 \
  --runs 20 --out "$out/conv_families"
part r50 120 python3 bench/resnet50_inference.py "$K" --batches 1,32 --dtypes f16,f32 --runs 20 --out "$out/r50"
cat "$S"
