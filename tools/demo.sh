#!/bin/sh
# make demo: the main job on the embedded default model (resnet18).
set -eu
kiln=${1:-build/generator/kiln}
# Debian's interpreter has python3-numpy; another python3 first on PATH may not.
py=${PYTHON:-/usr/bin/python3}
command -v "$py" >/dev/null || py=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== kiln inspect resnet18 (totals)"
"$kiln" inspect resnet18 | tail -n 1
echo
echo "== kiln run resnet18 --device cpu, batch 2 at 224x224 (seeded weights)"
"$py" -c "import numpy as np; np.save('$work/x.npy', np.random.RandomState(0).standard_normal((2, 3, 224, 224)).astype(np.float32))"
"$kiln" run resnet18 --device cpu --input "$work/x.npy" --output "$work/y.npy"
"$py" -c "
import numpy as np
y = np.load('$work/y.npy')
print('output', y.shape, y.dtype, 'top-1 classes', y.argmax(axis=1).tolist(), 'finite:', bool(np.isfinite(y).all()))
"
echo
echo "== kiln run resnet18 --train, batch 2 at 64x64"
"$py" -c "import numpy as np; np.save('$work/t.npy', np.array([1, 7], dtype=np.int64)); np.save('$work/x64.npy', np.random.RandomState(1).standard_normal((2, 3, 64, 64)).astype(np.float32))"
"$kiln" run resnet18 --device cpu --input "$work/x64.npy" --train --target "$work/t.npy" --grads "$work/g.safetensors"
echo
echo "The GPU path (kiln generate / compile / build) arrives with the kernel generation issues."
