"""The tiled strategy's generated kernels on the emulator: every kernel of a tiled plan
(per-tile convolutions with their own border padding, region copies, tiled backward) against
the reference with `kiln check --device emu`, and `kiln run --device emu --schedule tiled`
against the untiled network on the CPU, for inference and a training step."""
import os

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
model = kt.two_blocks(path("tb.json"))

for what, extra in (("inference", ["--tiles", "2x2"]), ("training", ["--train", "--budget", "30%"])):
    kt.kiln("generate", model, "--gpu", "h200", "--schedule", "tiled", *extra, "-o", path(what))
    out, _ = kt.kiln("check", path(what), "--device", "emu")
    last = out.splitlines()[-1]
    print(f"{what}: {last}")
    kt.check(last.endswith(" 0 failed") and "region_copy" in out, f"{what}: {last}")

np.save(path("x.npy"), np.random.RandomState(0).standard_normal((2, 3, 96, 96)).astype(np.float32))
np.save(path("t.npy"), np.array([4, 0], np.int64))
kt.kiln("run", model, "--device", "cpu", "--input", path("x.npy"), "--output", path("c.npy"))
kt.kiln("run", model, "--device", "emu", "--schedule", "tiled", "--tiles", "2x2", "--input", path("x.npy"),
        "--output", path("e.npy"))
r = kt.rel(np.load(path("e.npy")), np.load(path("c.npy")))
print(f"tiled inference, emu vs untiled cpu: relative difference {r:.2e}")
# An f32 conv may run on the h200's tf32 tensor cores (the cost model's choice): tf32's
# tolerance (a tiling bug, a tile's wrong border or a missed copy, is far above it).
kt.check(r < 5e-4, f"tiled emu inference differs: {r}")

kt.kiln("run", model, "--device", "cpu", "--input", path("x.npy"), "--train", "--target", path("t.npy"),
        "--grads", path("gc.safetensors"))
kt.kiln("run", model, "--device", "emu", "--schedule", "tiled", "--budget", "30%", "--input", path("x.npy"),
        "--train", "--target", path("t.npy"), "--grads", path("ge.safetensors"))
gc, ge = kt.read_safetensors(path("gc.safetensors")), kt.read_safetensors(path("ge.safetensors"))
kt.check(sorted(gc) == sorted(ge), f"gradient names {sorted(ge)}")
worst = max(kt.rel(ge[k], gc[k]) for k in gc)
print(f"tiled training step, emu vs untiled cpu: worst gradient relative difference {worst:.2e}")
kt.check(worst < 1e-4, f"tiled emu gradients differ: {worst}")
kt.finish()
