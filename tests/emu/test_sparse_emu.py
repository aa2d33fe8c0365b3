"""The activation-sparse family end to end on the emulator (issue: sparse convolutions).

1. densenet121 at 64x64 with every conv that reads a relu's output forced sparse: `kiln
   check --device emu` passes every kernel, and `kiln run --device emu` equals the cpu
   backend within tolerance; two runs are bit-identical.
2. A device-side dispatch (planned by the cost model for the T4, which has no TF32): the
   plan reaches the guarded convolutions through launches only (no library or reference
   step, so nothing is copied to the host), and with inputs on either side of the threshold
   the run takes the sparse path (bit-identical to the all-sparse plan) or the dense one
   (bit-identical to the plan without the sparse family), both equal to the cpu backend.
3. A training step with the sparse family (forward and weight gradient): every kernel
   checks, and the gradients equal the dense step's within tolerance.
"""
import json
import os

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)


def manifest(dir_):
    return json.load(open(os.path.join(dir_, "manifest.json")))


def plan(dir_):
    return json.load(open(os.path.join(dir_, "plan.json")))


# 1. densenet121, every eligible conv forced sparse.
kt.kiln("generate", "densenet121", "--gpu", "h200", "--batch", "1", "--image", "64x64", "--sparse", "force",
        "-o", path("dense121"))
m = manifest(path("dense121"))
paths = [c["path"] for c in m["sparse"]["convs"]]
kt.check(len(paths) == 120 and paths.count("sparse") == 119,
         f"densenet121: expected 119 of 120 convs sparse (all but conv0, which reads the image): {paths}")
kt.check(all(c["reason"] for c in m["sparse"]["convs"]), "every decision says why")
out, _ = kt.kiln("check", path("dense121"), "--device", "emu")
print(out.splitlines()[-1])
kt.check(" 0 failed" in out.splitlines()[-1], "kiln check --device emu failed on the sparse densenet121")
np.save(path("x.npy"), np.random.RandomState(0).standard_normal((1, 3, 64, 64)).astype(np.float32))
kt.kiln("run", "densenet121", "--device", "cpu", "--input", path("x.npy"), "--output", path("c.npy"))
for k in (1, 2):
    kt.kiln("run", "densenet121", "--device", "emu", "--sparse", "force", "--input", path("x.npy"), "--output",
            path(f"e{k}.npy"))
e, c = np.load(path("e1.npy")), np.load(path("c.npy"))
print(f"densenet121 all-sparse inference, emu vs cpu: relative difference {kt.rel(e, c):.2e}")
kt.check(kt.rel(e, c) < 5e-4, f"sparse densenet121 on emu differs from cpu: {kt.rel(e, c)}")  # conv0: tf32
kt.check(open(path("e1.npy"), "rb").read() == open(path("e2.npy"), "rb").read(), "two runs differ")

# 2. A dispatch. The input passes a relu, so its density is the fraction of positive values.
model = {"format": "kiln-model/1", "name": "dispatch", "input": {"shape": [2, 32, 20, 20]},
         "layers": [{"name": "r0", "op": "relu"},
                    {"name": "c1", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1,
                     "hints": {"activation_density": 0.2}},
                    {"name": "r1", "op": "relu"},
                    {"name": "gp", "op": "global_avgpool"}, {"name": "f", "op": "flatten"},
                    {"name": "fc", "op": "linear", "out_features": 10}]}
json.dump(model, open(path("dispatch.json"), "w"))
kt.kiln("generate", path("dispatch.json"), "--gpu", "t4", "-o", path("disp"))
conv = manifest(path("disp"))["sparse"]["convs"]
c1 = [x for x in conv if x["layer"] == "c1"][0]
print(f"c1 on the T4: {c1['path']}, threshold {c1.get('threshold')}: {c1['reason']}")
kt.check(c1["path"] == "dispatch" and 0 < c1["threshold"] < 1, f"c1 should dispatch with an inner threshold: {c1}")
steps = plan(path("disp"))["phases"]["forward"]
kernel_steps = [s for s in steps if s["kind"] != "free"]
kt.check(all(s["kind"] == "launch" for s in kernel_steps), "every step of the plan is a kernel launch")
nnz = [b["name"] for b in plan(path("disp"))["buffers"] if b["name"].endswith(".nnz")]
kt.check(len(nnz) == 1, f"one nonzero count: {nnz}")
users = [s for s in kernel_steps if nnz and nnz[0] in s["args"].values()]
kt.check([s["fn"] for s in users] == ["fill_zero", "relu.forward", "conv2d.forward", "conv2d.forward_sparse"],
         f"the count is zeroed, written by the relu's compaction and read by the two guarded convs: "
         f"{[s['fn'] for s in users]}")
kt.check([s.get("guard") for s in users[2:]] == ["dense", "sparse"] and users[2]["threshold"] == users[3]["threshold"],
         "the convs carry opposite guards on one threshold")
first, last = steps.index(users[0]), steps.index(users[-1])
kt.check(all(s["kind"] in ("launch", "free") for s in steps[first:last + 1]),
         "from the count's zeroing to the sparse conv only launches run (no copy to the host)")

rng = np.random.RandomState(3)
for density, expect in ((0.25, "sparse"), (0.95, "dense")):
    a = np.abs(rng.standard_normal((2, 32, 20, 20))).astype(np.float32) + 0.1
    a[rng.random_sample(a.shape) >= density] *= -1
    x = path(f"x_{density}.npy")
    np.save(x, a)
    outs = {}
    for mode in ("auto", "force", "off"):
        kt.kiln("run", path("dispatch.json"), "--device", "emu", "--gpu", "t4", "--sparse", mode, "--input", x,
                "--output", path(f"y_{mode}.npy"))
        outs[mode] = open(path(f"y_{mode}.npy"), "rb").read()
    kt.kiln("run", path("dispatch.json"), "--device", "cpu", "--input", x, "--output", path("y_cpu.npy"))
    took = "sparse" if outs["auto"] == outs["force"] else "dense" if outs["auto"] == outs["off"] else "neither"
    r = kt.rel(np.load(path("y_auto.npy")), np.load(path("y_cpu.npy")))
    print(f"input density {density}: the dispatch took the {took} path; emu vs cpu {r:.2e}")
    kt.check(took == expect, f"at density {density} the dispatch took the {took} path, expected {expect}")
    kt.check(outs["force"] != outs["off"], "the sparse and dense kernels round differently (else the test proves nothing)")
    kt.check(r < 1e-5, f"dispatch output differs from cpu: {r}")

# 3. Training: the forward and the weight gradient of c1 sparse.
train = dict(model, layers=[dict(l) for l in model["layers"]])
train["layers"][1]["hints"] = {"activation_density": 0.3, "variant": "sparse"}
json.dump(train, open(path("train.json"), "w"))
kt.kiln("generate", path("train.json"), "--gpu", "t4", "--train", "-o", path("tr"))
fns = [s["fn"] for s in plan(path("tr"))["phases"]["backward"] if s["kind"] != "free"]
kt.check("conv2d.backward_weight_sparse" in fns and "sparse.compact" in fns,
         f"the weight gradient reads a compaction of the input: {fns}")
out, _ = kt.kiln("check", path("tr"), "--device", "emu")
print(out.splitlines()[-1])
kt.check(" 0 failed" in out.splitlines()[-1], "kiln check failed on the sparse training plan")
np.save(path("t.npy"), np.array([3, 7], np.int64))
x = path("x_0.25.npy")
for mode, dev in (("force", "emu"), ("off", "emu")):
    kt.kiln("run", path("train.json"), "--device", dev, "--gpu", "t4", "--sparse", mode, "--input", x, "--train",
            "--target", path("t.npy"), "--grads", path(f"g_{mode}.safetensors"))
kt.kiln("run", path("train.json"), "--device", "cpu", "--input", x, "--train", "--target", path("t.npy"),
        "--grads", path("g_cpu.safetensors"))
gs, gd, gc = (kt.read_safetensors(path(f"g_{k}.safetensors")) for k in ("force", "off", "cpu"))
worst = max(kt.rel(gs[k], gc[k]) for k in gc)
print(f"training step with sparse c1: worst gradient relative difference to cpu {worst:.2e} "
      f"(dense step: {max(kt.rel(gd[k], gc[k]) for k in gc):.2e})")
kt.check(worst < 1e-5, f"sparse training gradients differ: {worst}")

# 4. A training step whose forward and weight gradient both dispatch (T4, density 0.1: the
# weight gradient's predicted win must pass the plan rewrites' rule, 15% and 1 us).
disp = dict(model, input={"shape": [8, 64, 16, 16]}, layers=[dict(l) for l in model["layers"]])
disp["layers"][1] = dict(disp["layers"][1], hints={"activation_density": 0.1})
json.dump(disp, open(path("train_disp.json"), "w"))
kt.kiln("generate", path("train_disp.json"), "--gpu", "t4", "--train", "-o", path("trd"))
paths = {(c["fn"], c["path"]) for c in manifest(path("trd"))["sparse"]["convs"] if c["layer"] == "c1"}
kt.check(paths == {("conv2d.forward", "dispatch"), ("conv2d.backward_weight", "dispatch")},
         f"c1's forward and weight gradient dispatch: {paths}")
guarded = [(s["fn"], s["guard"]) for ph in plan(path("trd"))["phases"].values() for s in ph if s.get("guard")]
print(f"guarded training steps: {guarded}")
kt.check(("conv2d.backward_weight", "dense") in guarded and ("conv2d.backward_weight_sparse", "sparse") in guarded,
         "the weight gradient dispatches")
out, _ = kt.kiln("check", path("trd"), "--device", "emu")
print(out.splitlines()[-1])
kt.check(" 0 failed" in out.splitlines()[-1], "kiln check failed on the dispatching training plan")
np.save(path("t8.npy"), np.arange(8, dtype=np.int64) % 10)
for density in (0.25, 0.95):
    a = np.abs(rng.standard_normal((8, 64, 16, 16))).astype(np.float32) + 0.1
    a[rng.random_sample(a.shape) >= density] *= -1
    np.save(path("x8.npy"), a)
    for dev in ("emu", "cpu"):
        kt.kiln("run", path("train_disp.json"), "--device", dev, *(["--gpu", "t4"] if dev == "emu" else []),
                "--input", path("x8.npy"), "--train", "--target", path("t8.npy"), "--grads", path(f"gd_{dev}.safetensors"))
    ge, gc = kt.read_safetensors(path("gd_emu.safetensors")), kt.read_safetensors(path("gd_cpu.safetensors"))
    worst = max(kt.rel(ge[k], gc[k]) for k in gc)
    print(f"dispatching training step at input density {density}: worst gradient difference to cpu {worst:.2e}")
    kt.check(worst < 1e-5, f"dispatching training gradients differ at density {density}: {worst}")
kt.finish()
