"""Folded models (FoldedCNNs) run as the user sees them: N images of the unfolded shape in, N
rows out, whatever N (the last fold padded with zero images, said once on stderr); the fold
and unfold cost no kernel in either layout (NCHW: views; NHWC: the first conv reads the
folded view of the NCHW input in place, the last layer writes unfolded rows); the emulator
equals the cpu; a training step under rotor at 50% gives store-all's gradients bit for bit."""
import json
import os

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
rng = np.random.RandomState(0)

kt.kiln("fold", "noscope_coral", "--factor", "2", "-o", path("c2.json"))
kt.kiln("fold", "noscope_coral", "--factor", "4", "-o", path("c4.json"))

# Seven images through a model folded by 2: seven rows, the same as the eighth slot given a
# zero image explicitly.
x7 = rng.standard_normal((7, 3, 32, 32)).astype(np.float32)
np.save(path("x7.npy"), x7)
np.save(path("x8.npy"), np.concatenate([x7, np.zeros((1, 3, 32, 32), np.float32)]))
_, err = kt.kiln("run", path("c2.json"), "--device", "cpu", "--input", path("x7.npy"), "--output", path("y7.npy"))
kt.check(err.count("padded with 1 zero image") == 1, f"the padding is said once on stderr: {err!r}")
kt.kiln("run", path("c2.json"), "--device", "cpu", "--input", path("x8.npy"), "--output", path("y8.npy"))
y7, y8 = np.load(path("y7.npy")), np.load(path("y8.npy"))
kt.check(y7.shape == (7, 2) and y8.shape == (8, 2), f"rows per image: {y7.shape}, {y8.shape}")
kt.check(np.array_equal(y7, y8[:7]), "seven images give the first seven rows of the padded eight")
_, err = kt.kiln("run", path("c2.json"), "--device", "cpu", "--input", path("x8.npy"), "--output", path("y8.npy"))
kt.check("padded" not in err, "a whole number of folds is not padded")
# A training step takes whole folds only.
np.save(path("t7.npy"), np.zeros(7, np.int64))
kt.expect_error(["run", path("c2.json"), "--device", "cpu", "--input", path("x7.npy"), "--train", "--target",
                 path("t7.npy"), "--grads", path("g.safetensors")], "no multiple of the fold factor")

# The emulator runs the folded model's generated kernels as the cpu does (tf32 convs: 5e-4).
kt.kiln("run", path("c4.json"), "--device", "emu", "--input", path("x7.npy"), "--output", path("e7.npy"))
kt.kiln("run", path("c4.json"), "--device", "cpu", "--input", path("x7.npy"), "--output", path("c7.npy"))
r = kt.rel(np.load(path("e7.npy")), np.load(path("c7.npy")))
print(f"noscope_coral folded by 4, 7 images, emu vs cpu: {r:.2e}")
kt.check(np.load(path("e7.npy")).shape == (7, 2) and r < 5e-4, f"emu differs from cpu: {r}")


# No kernel folds or unfolds: nothing converts the input, the folded view, the unfolded view or
# the output; the first conv reads the folded view of the input itself.
def check_plan(dir_, what):
    p = json.load(open(os.path.join(dir_, "plan.json")))
    bufs = {b["name"]: b for b in p["buffers"]}
    inputs = set(p["inputs"])
    fold = [n for n, b in bufs.items() if b.get("view_of") in inputs]
    outs = set(p["outputs"])
    unfold_bases = {bufs[o].get("view_of") for o in outs} - {None}
    steps = [s for s in p["phases"]["forward"] if s["kind"] != "free"]
    touched = inputs | set(fold) | outs | unfold_bases
    converts = [s for s in steps if s["fn"] == "convert" and touched & set(s["args"].values())]
    kt.check(len(fold) == 1, f"{what}: the input has one folded view: {fold}")
    kt.check(not converts, f"{what}: conversions of the fold or unfold: {[s['args'] for s in converts]}")
    first = next(s for s in steps if s["fn"] == "conv2d.forward")
    kt.check(first["args"]["x"] == fold[0], f"{what}: the first conv reads {first['args']['x']}, not the fold")
    kt.check(all(bufs[o].get("view_of") for o in outs), f"{what}: the output is a view (the unfold)")
    return sum(s["fn"] == "convert" for s in steps)


for gpu, layout in (("h200", "nhwc"), ("h200", "nchw"), ("t4", "auto")):
    for f in ("c2", "c4"):
        args = ["generate", path(f + ".json"), "--gpu", gpu, "--batch", "8", "-o", path(f"{f}_{gpu}_{layout}")]
        if layout != "auto":
            args += ["--layout", layout]
        kt.kiln(*args)
        n = check_plan(path(f"{f}_{gpu}_{layout}"), f"{f} on {gpu} ({layout})")
        print(f"{f} on {gpu} ({layout}): {n} conversion steps, none of the fold or unfold")

# A folded model's training step under rotor at half its store-all peak: store-all's
# gradients bit for bit. (The FoldedCNNs models are too shallow for that: their largest
# activation alone is most of the peak, and kiln names the smallest feasible budget; the
# CIFAR resnet32 folded by 2 is deep enough.)
kt.kiln("fold", "resnet32", "--factor", "2", "-o", path("r32.json"))
np.save(path("xt.npy"), rng.standard_normal((4, 3, 32, 32)).astype(np.float32))
np.save(path("tt.npy"), rng.randint(0, 10, 4).astype(np.int64))
for sched in ("store-all", "rotor"):
    extra = ["--schedule", "rotor", "--budget", "50%"] if sched == "rotor" else []
    kt.kiln("run", path("r32.json"), "--device", "cpu", "--input", path("xt.npy"), "--train", "--target",
            path("tt.npy"), "--grads", path(f"g_{sched}.safetensors"), *extra)
ga, gb = kt.read_safetensors(path("g_store-all.safetensors")), kt.read_safetensors(path("g_rotor.safetensors"))
kt.check(len(ga) > 0 and ga.keys() == gb.keys() and all(np.array_equal(ga[k], gb[k]) for k in ga),
         "rotor at 50% gives store-all's gradients bit for bit")
kt.expect_error(["run", path("c2.json"), "--device", "cpu", "--input", path("x8.npy"), "--train", "--target",
                 path("tt.npy"), "--grads", path("g.safetensors"), "--schedule", "rotor", "--budget", "50%"],
                "the smallest feasible budget is")
# The folding roofline: per image FLOPs (FoldedCNNs' counts over the f images of a folded
# input), bytes, intensity and predicted throughput; folding raises the intensity.
out, _ = kt.kiln("inspect", "noscope_roundabout", "--batch", "1024", "--dtype", "f16", "--fold", "1,2,3,4",
                 "--gpu", "h100", "--json")
folds = json.loads(out)["folds"]
published = [120.6e6, 241.8e6, 365.2e6, 498.7e6]  # FoldedCNNs, per folded input
kt.check([f["factor"] for f in folds] == [1, 2, 3, 4], f"factors: {[f['factor'] for f in folds]}")
for f, pub in zip(folds, published):
    kt.check(abs(f["flops_per_image"] * f["factor"] / pub - 1) < 0.01, f"fold {f['factor']}: {f['flops_per_image']}")
    kt.check(abs(sum(l["flops_per_image"] for l in f["layers"]) / f["flops_per_image"] - 1) < 1e-9, "layers sum")
kt.check(all(b["intensity"] > a["intensity"] and b["gain"] > a["gain"] for a, b in zip(folds, folds[1:])),
         "folding raises the intensity and the predicted throughput")
out, _ = kt.kiln("inspect", "noscope_roundabout", "--fold", "1,4", "--gpu", "t4")
kt.check("images/s" in out and "gain" in out, f"the text table: {out[-300:]}")
kt.expect_error(["inspect", "noscope_roundabout", "--fold", "1,2"], "--fold and --gpu go together")
kt.expect_error(["inspect", "noscope_roundabout", "--fold", "1,0", "--gpu", "h100"], "\"0\" is not a fold factor")
kt.expect_error(["inspect", "noscope_roundabout", "--fold", "2,x", "--gpu", "h100"], "\"x\" is not a fold factor")
kt.finish()
