"""The Hopper family end to end on the emulator (issue 18's acceptance, at a reduced size):
resnet50 generated for the H100 chooses conv2d_hopper_wgmma for the convs it serves (C a
multiple of 128 bytes: every conv but conv1) where the cost model predicts it faster (at
these small sizes the 1x1 convs of the largest maps; the others stay on the mma.sync family,
whose split-K fills the GPU at small batches), the plan writes each kernel's TMA tensor maps
once in its prepare phase (tensor_map.encode), `kiln check --device emu` passes every chosen
kernel in f16, bf16 and f32 (tf32 on the tensor cores), and `kiln run --device emu` matches
the cpu backend within the dtype's tolerance."""
import json
import os
import shutil

import numpy as np

import kiln_test as kt

d = kt.tmpdir()


def path(*p):
    return os.path.join(d, *p)


def generated(dtype, image, batch):
    out = path(f"r50_{dtype}")
    kt.kiln("generate", "resnet50", "--gpu", "h100", "--dtype", dtype, "--image", image,
            "--batch", batch, "-o", out)
    man = json.load(open(path(out, "manifest.json")))
    plan = json.load(open(path(out, "plan.json")))
    return out, man, plan


# The least Hopper convs of each, as the cost model chooses since 2026-11-28 (8, 8, 8 at batch 8,
# 96x96 in f16: layer1's 1x1 convs, layer2.0's first and its downsample; the others, few
# tiles a layer, on the mma.sync
# family with split-K, now that the Hopper tiles are priced with their measured ~400 clocks a
# row of k and their epilogue, which few tiles do not amortise: at batch 4 one conv was left).
for dtype, image, batch, least in (("f16", 96, 8, 8), ("bf16", 96, 8, 8), ("f32", 96, 8, 6)):
    out, man, plan = generated(dtype, image, batch)
    hopper = [k for k in man["kernels"] if k["family"] == "conv2d_hopper_wgmma"]
    convs = sum(len(k["nodes"]) for k in man["kernels"]
                if k["family"] in ("conv2d_hopper_wgmma", "conv2d_implicit_gemm", "conv2d_direct")
                and any("conv2d.forward" in n for n in k["nodes"]))
    chosen = sum(len(k["nodes"]) for k in hopper)
    kt.check(chosen >= least, f"{dtype}: {chosen} of {convs} convs on the Hopper family")
    kt.check(all(k["arch"] == "sm_90a" for k in hopper), f"{dtype}: a Hopper kernel not for sm_90a")
    prep = plan["phases"]["prepare"]
    encodes = [s for s in prep if s.get("fn") == "tensor_map.encode"]
    kt.check(not any(s.get("fn") == "tensor_map.encode" for s in plan["phases"]["forward"]),
             f"{dtype}: a tensor map encoded in the forward phase")
    kt.check(len(encodes) >= chosen, f"{dtype}: {len(encodes)} maps for {chosen} Hopper convs")
    # f32: the weights the tf32 convs read are rounded once, by their batchnorm folding in
    # the prepare phase, and the activations only such convs read by the epilogue of the conv
    # that writes them (Buffer::tf32): the readers round neither (B_TF32, A_TF32).
    rounded = [b for b in plan["buffers"] if b.get("tf32")]
    kt.check(len(rounded) == man["tf32_weights"] + man["tf32_activations"],
             f"{dtype}: {len(rounded)} tf32 buffers")
    if dtype == "f32":
        kt.check(man["tf32_weights"] >= chosen, f"f32: {man['tf32_weights']} weights rounded once")
        kt.check(man["tf32_activations"] >= 1, f"f32: {man['tf32_activations']} activations rounded")
        kt.check(all(k["params"]["B_TF32"] and "_wtf32" in k["name"] for k in hopper),
                 "f32: a Hopper conv rounds weights that arrive rounded")
        kt.check(any(k["params"].get("A_TF32") and "_xtf32" in k["name"] for k in hopper),
                 "f32: no Hopper conv reads an activation that arrives rounded (no rounding pass)")
        folds = [k for k in man["kernels"] if k["family"] == "conv2d_fold_bn"]
        kt.check(sum(k["params"]["ROUND_TF32"] for k in folds) >= 1, "f32: no folding rounds")
        writers = {s["args"].get("w_out") or s["args"].get("dst") for s in prep
                   if s.get("fn") in ("conv2d.fold_bn", "convert")}
        params = {k["name"]: k["params"] for k in man["kernels"]}
        for b in rounded:
            if b["role"] != "activation":
                kt.check(b["name"] in writers, f"f32: the tf32 weight {b['name']} not prepared")
                continue
            steps = [s for s in plan["phases"]["forward"] if b["name"] in s.get("args", {}).values()]
            for s in steps:
                role = next(r for r, v in s["args"].items() if v == b["name"])
                want = "Y_TF32" if role == "y" else "A_TF32"
                kt.check(role in ("x", "y") and params[s["kernel"]].get(want),
                         f"f32: {b['name']} is {role} of {s['kernel']}, which lacks {want}")
    else:
        kt.check(man["tf32_weights"] == 0 and man["tf32_activations"] == 0,
                 f"{dtype}: operands rounded to tf32")
    out_check, _ = kt.kiln("check", out, "--device", "emu")
    print(f"{dtype} (image {image}, batch {batch}): {chosen} of {convs} convs on "
          f"{len(hopper)} Hopper kernels, {len(encodes)} tensor maps; kiln check --device emu ok")
    if dtype != "f16":
        continue
    # A lying tensor map is an error naming its step when the plan is read.
    at = prep.index(encodes[0])
    for field, value, says in (("swizzle", 96, "swizzle 96"), ("box", [300, 8, 8, 1], "box[0] = 300"),
                               ("strides", [24, 2048, 65536], "not a multiple of 16"),
                               ("buffer", "nothing", "no buffer"),
                               ("oob_fill", "nan", "oob_fill"), ("mode", "gather", "mode \"gather\""),
                               ("lower", [-1, -1], "not a tiled one")):
        bad = path(f"bad_{field}")
        shutil.copytree(out, bad)
        broken = json.loads(json.dumps(plan))
        broken["phases"]["prepare"][at]["tensor_map"][field] = value
        json.dump(broken, open(path(bad, "plan.json"), "w"))
        kt.expect_error(["check", bad, "--device", "emu"], f"/phases/prepare/{at}", "tensor map", says)

# The whole network on the emulator (h100 kernels) against the cpu backend.
rng = np.random.default_rng(7)
x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
np.save(path("x.npy"), x)


def emu_against_cpu(model, *extra):
    for dev in ("emu", "cpu"):
        args = ["run", model, "--device", dev, *extra, "--image", "64", "--batch", "1",
                "--input", path("x.npy"), "--output", path(f"{model}_{dev}.npy")]
        kt.kiln(*args, *(["--gpu", "h100"] if dev == "emu" else []))
    return kt.rel(np.load(path(f"{model}_emu.npy")), np.load(path(f"{model}_cpu.npy")))


r = emu_against_cpu("resnet50", "--dtype", "f16")
print(f"resnet50 f16 image 64 on the emulator (h100 kernels) vs the cpu backend: {r:.2e}")
kt.check(r < 1e-2, f"resnet50 f16: emu differs from cpu by {r}")
# f32 as tf32, its weights rounded once in the prepare phase and its activations by their
# producers: resnet18 against the cpu backend's exact f32 (the cpu runs the plan it is given:
# its own, unrounded).
r = emu_against_cpu("resnet18")
print(f"resnet18 f32 (tf32) image 64 on the emulator (h100 kernels) vs the cpu backend: {r:.2e}")
kt.check(r < 2e-3, f"resnet18 f32: emu differs from cpu by {r}")

kt.finish()
