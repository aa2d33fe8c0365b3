#!/bin/sh
# make demo: the main job on the embedded default model (resnet18). With a GPU: build the
# model for the detected GPU, run it, check it against the CPU reference, print throughput.
# Without one: everything up to the GPU run, then the same kernels on the emulator at a
# small size against the CPU reference, saying why the GPU run was skipped.
set -eu
kiln=${1:-build/generator/kiln}
# Debian's interpreter has python3-numpy; another python3 first on PATH may not.
py=${PYTHON:-/usr/bin/python3}
command -v "$py" >/dev/null || py=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rand() { "$py" -c "import numpy as np; np.save('$1', np.random.RandomState($2).standard_normal(($3)).astype(np.float32))"; }
compare() {
  "$py" -c "
import numpy as np
a, b = np.load('$1'), np.load('$2')
rel = np.linalg.norm(a - b) / np.linalg.norm(b)
print(f'  output {a.shape}: relative difference to the CPU reference {rel:.2e} (tolerance $3)')
raise SystemExit(0 if rel < $3 else 1)"
}

echo "== kiln inspect resnet18"
"$kiln" inspect resnet18 | tail -n 1

echo
echo "== the GPU"
if "$kiln" gpu detect -o "$work/gpu.json" 2> "$work/detect.err"; then
  gpu="$work/gpu.json"
  have_gpu=yes
  echo "  $("$py" -c "import json; g = json.load(open('$gpu')); print(g['name'], g['arch'], g['sm_count'], 'SMs')")"
else
  gpu=h200
  have_gpu=no
  echo "  none: $(sed 's/^kiln: error: //' "$work/detect.err")"
  echo "  generating for the shipped H200 descriptor instead"
fi

echo
echo "== kiln build resnet18 --gpu $gpu (generate, compile with NVRTC, link)"
"$kiln" build resnet18 --batch 8 --gpu "$gpu" -o "$work/resnet18"

echo
if [ "$have_gpu" = yes ]; then
  echo "== resnet18 on the GPU, batch 8 at 224x224, against the CPU reference"
  rand "$work/x.npy" 0 "8, 3, 224, 224"
  "$work/resnet18" --input "$work/x.npy" --output "$work/y_gpu.npy" --bench 50
  "$kiln" run resnet18 --device cpu --input "$work/x.npy" --output "$work/y_cpu.npy" > /dev/null
  compare "$work/y_gpu.npy" "$work/y_cpu.npy" 5e-4
else
  echo "== GPU run skipped: no GPU here ($(sed 's/^kiln: error: //' "$work/detect.err" | cut -c1-80)...)"
  "$work/resnet18" --input /dev/null --output "$work/unused.npy" 2>&1 | sed 's/^/  the program says: /' || true
  echo
  echo "== the same kernels on the emulator, batch 1 at 64x64, against the CPU reference"
  rand "$work/x.npy" 0 "1, 3, 64, 64"
  "$kiln" run resnet18 --device emu --input "$work/x.npy" --output "$work/y_emu.npy"
  "$kiln" run resnet18 --device cpu --input "$work/x.npy" --output "$work/y_cpu.npy" > /dev/null
  compare "$work/y_emu.npy" "$work/y_cpu.npy" 5e-4
fi

echo
echo "== a training step under rotor at 75% of the store-all peak (cpu), gradients as store-all's"
rand "$work/x64.npy" 1 "2, 3, 64, 64"
"$py" -c "import numpy as np; np.save('$work/t.npy', np.array([1, 7], dtype=np.int64))"
"$kiln" run resnet18 --device cpu --input "$work/x64.npy" --train --target "$work/t.npy" --grads "$work/g_all.safetensors"
"$kiln" run resnet18 --device cpu --input "$work/x64.npy" --train --target "$work/t.npy" --grads "$work/g_rotor.safetensors" \
  --schedule rotor --budget 75%
cmp -s "$work/g_all.safetensors" "$work/g_rotor.safetensors" && echo "  gradients bit-identical"
