"""Kernels for folded shapes (issue 12, point 3): where a conv's or linear's output is a few
tiles, split-K (the reduction over S ranges into fp32 partial sums, then partial.sum with the
epilogue); where a max pool alone reads a conv, the fused conv2d.pool_forward (direct conv or implicit
GEMM). The cost model
chooses both per layer and the manifest says which; the plans the FoldedCNNs models get, and
emu runs of plans with each against the cpu backend."""
import json
import os

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
rng = np.random.RandomState(0)


def plan_and_manifest(dir_):
    return (json.load(open(os.path.join(dir_, "plan.json"))), json.load(open(os.path.join(dir_, "manifest.json"))))


def steps_of(plan):
    return [s for ph in plan["phases"].values() for s in ph if s["kind"] != "free"]


# noscope_coral folded by 4 at batch 1024 in f16 on the H100: its classifier's first linear
# (M = 256 folded rows, 128 outputs, a long reduction) is split over ranges of its inputs.
kt.kiln("fold", "noscope_coral", "--factor", "4", "-o", path("coral4.json"))
kt.kiln("generate", path("coral4.json"), "--gpu", "h100", "--batch", "1024", "--dtype", "f16", "-o", path("coral4"))
plan, man = plan_and_manifest(path("coral4"))
split = {s["node"]: s for s in man["split_k"]}
kt.check("fc1+relu3" in split, f"noscope_coral x4 splits fc1: {man['split_k']}")
for node, s in split.items():
    kt.check(s["slices"] >= 2 and s["split_us"] < 0.85 * s["unsplit_us"], f"a split that pays: {s}")
    kt.check(s["form"] in ("in_kernel", "two_step") and s[s["form"]]["us"] == s["split_us"], f"the form chosen: {s}")
    other = s["two_step" if s["form"] == "in_kernel" else "in_kernel"]
    kt.check(other is None or other["us"] >= s["split_us"], f"the faster form: {s}")
    fns = [st["fn"] for st in steps_of(plan) if st["node"] == node]
    # In the kernel: the counters zeroed once (prepare phase), one launch; else two launches.
    kt.check(fns in (["linear.forward_partial", "partial.sum"], ["conv2d.forward_partial", "partial.sum"],
                     ["fill_zero", "linear.forward_split"], ["fill_zero", "conv2d.forward_split"]),
             f"{node}: the split's steps, in order: {fns}")
    kt.check((s["form"] == "in_kernel") == (fns[0] == "fill_zero"), f"{node}: steps of the form {s['form']}: {fns}")
    if s["form"] == "in_kernel":
        kt.check([st["fn"] for st in plan["phases"]["prepare"] if st["node"] == node] == ["fill_zero"],
                 f"{node}: its counters are zeroed in the prepare phase")
names = [k["name"] for k in man["kernels"]]
kt.check(any("_split" in n and n.startswith("linear_implicit_gemm") for n in names), f"a split kernel: {names}")
kt.check(any("reduce" in n and "_relu" in n for n in names) or any(n.startswith("partial_sum") and "_relu" in n
                                                                    for n in names),
         f"the split's completion applies the relu: {names}")

# game_sot_timer3 folded by 4 at batch 1024: in f16 on the H100 its convs before pools are
# fused with them on tensor cores (the implicit GEMM's pooled epilogue); in f32 on the T4
# (no TF32: direct convs) through the direct conv's.
kt.kiln("fold", "game_sot_timer3", "--factor", "4", "-o", path("timer4.json"))
kt.kiln("generate", path("timer4.json"), "--gpu", "h100", "--batch", "1024", "--dtype", "f16", "-o", path("timer4"))
plan, man = plan_and_manifest(path("timer4"))
kt.check(len(man["conv_pool"]) >= 2, f"game_sot_timer3 x4 f16 on the H100 fuses convs with their pools: {man}")
fused_kernels = [k for k in man["kernels"] if "_maxpool" in k["name"]]
kt.check(fused_kernels and all(k["family"] == "conv2d_implicit_gemm" for k in fused_kernels),
         f"on tensor cores: {[k['name'] for k in fused_kernels]}")
kt.kiln("generate", path("timer4.json"), "--gpu", "t4", "--batch", "1024", "-o", path("timer4_t4"))
_, man_t4 = plan_and_manifest(path("timer4_t4"))
kt.check(any(k["family"] == "conv2d_direct" and "_maxpool" in k["name"] for k in man_t4["kernels"]),
         f"f32 on the T4 fuses through the direct conv: {man_t4['conv_pool']}")
for c in man["conv_pool"]:
    kt.check(c["fused_us"] < 0.85 * c["separate_us"], f"a fusion that pays: {c}")
    fused = [s for s in steps_of(plan) if s["node"] == c["node"]]
    kt.check(len(fused) == 1 and fused[0]["fn"] == "conv2d.pool_forward" and "pool" in fused[0],
             f"{c['node']}: one conv2d.pool_forward step with its pool: {fused}")
pooled_outputs = {s["args"]["y"] for s in steps_of(plan) if s["fn"] == "conv2d.pool_forward"}
kt.check(not any(s["fn"] == "maxpool2d.forward" and s["args"]["y"] in pooled_outputs for s in steps_of(plan)),
         "no separate pool writes a fused step's output")
# Under a schedule (a memory budget, training) and in the cuDNN-only plan, neither applies.
kt.kiln("generate", path("coral4.json"), "--gpu", "h100", "--batch", "1024", "--dtype", "f16", "--kernels",
        "cudnn", "-o", path("coral4_cudnn"))
_, man = plan_and_manifest(path("coral4_cudnn"))
kt.check(man["split_k"] == [] and man["conv_pool"] == [], "the cuDNN-only plan has neither")


def model(name, layers, shape):
    with open(path(name + ".json"), "w") as f:
        json.dump({"format": "kiln-model/1", "name": name, "input": {"shape": shape}, "layers": layers}, f)
    return path(name + ".json")


def emu_equals_cpu(model_path, x, gpu, dtype, tol, what):
    np.save(path("x.npy"), x)
    kt.kiln("run", model_path, "--device", "emu", "--gpu", gpu, "--dtype", dtype, "--input", path("x.npy"),
            "--output", path("emu.npy"))
    kt.kiln("run", model_path, "--device", "cpu", "--dtype", dtype, "--input", path("x.npy"), "--output",
            path("cpu.npy"))
    r = kt.rel(np.load(path("emu.npy")), np.load(path("cpu.npy")))
    print(f"{what}: emu vs cpu {r:.2e}")
    kt.check(r < tol, f"{what}: emu differs from cpu: {r}")


# A wide conv on 4x4 images at batch 16 (M = 256, K = 1440): split 8 ways in f16 on the H100,
# completed in the kernel; the emulator runs the plan (counters zeroed by its prepare phase).
split_model = model("split_k", [
    {"name": "c1", "op": "conv2d", "out_channels": 96, "kernel": 3, "padding": 1}, {"name": "r1", "op": "relu"},
    {"name": "c2", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1}, {"name": "r2", "op": "relu"},
    {"name": "flatten", "op": "flatten"}, {"name": "fc", "op": "linear", "out_features": 40}], [16, 160, 4, 4])
kt.kiln("generate", split_model, "--gpu", "h100", "--dtype", "f16", "-o", path("split"))
_, man = plan_and_manifest(path("split"))
# (c2+r2, K = 864, splits too where the split completes in the kernel: no second launch.)
kt.check("c1+r1" in [s["node"] for s in man["split_k"]], f"the wide conv is split: {man['split_k']}")
kt.check(all(s["form"] == "in_kernel" for s in man["split_k"]), f"in the kernel: {man['split_k']}")
print(f"split-K: {man['split_k']}")
emu_equals_cpu(split_model, rng.standard_normal((16, 160, 4, 4)).astype(np.float32), "h100", "f16", 1e-2,
               "split-K conv, f16")

# ConvN's conv, relu, max pool 3 stride 2 (and 3 stride 1): fused in f32 on the T4 (direct
# conv) and in f16 on the H100 (implicit GEMM).
pool_model = model("conv_pool", [
    {"name": "c1", "op": "conv2d", "out_channels": 32, "kernel": 3, "padding": 1}, {"name": "r1", "op": "relu"},
    {"name": "p1", "op": "maxpool2d", "kernel": 3, "stride": 2},
    {"name": "c2", "op": "conv2d", "out_channels": 32, "kernel": 3, "padding": 1}, {"name": "r2", "op": "relu"},
    {"name": "p2", "op": "maxpool2d", "kernel": 3, "stride": 1},
    {"name": "flatten", "op": "flatten"}, {"name": "fc", "op": "linear", "out_features": 10}], [4, 3, 22, 30])
x = rng.standard_normal((4, 3, 22, 30)).astype(np.float32)
for gpu, dtype, tol in (("t4", "f32", 1e-5), ("h100", "f16", 1e-2)):
    kt.kiln("generate", pool_model, "--gpu", gpu, "--dtype", dtype, "-o", path("pool"))
    _, man = plan_and_manifest(path("pool"))
    kt.check("c1+r1+p1" in [c["node"] for c in man["conv_pool"]],
             f"{gpu} {dtype}: conv, relu and pool fused: {man['conv_pool']}")
    emu_equals_cpu(pool_model, x, gpu, dtype, tol, f"conv + relu + maxpool fused, {dtype} on the {gpu}")

kt.finish()
