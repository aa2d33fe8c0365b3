"""Whole networks through their generated kernels on the emulator: `kiln check --device emu`
on resnet18 for inference and a training step (NCHW, and channels-last with its batchnorms
over chunks, its forward convs and some data gradients on the Hopper family, weight
gradients on mma.sync), and `kiln run --device emu` against
`--device cpu` for both."""
import json
import os

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)

# Every kernel of generated resnet18, inference and training, against the reference.
kt.kiln("generate", "resnet18", "--gpu", "h200", "--batch", "1", "--image", "64x64", "-o", path("infer"))
out, _ = kt.kiln("check", path("infer"), "--device", "emu")
print(out.splitlines()[-1])
kt.kiln("generate", "resnet18", "--gpu", "a100", "--batch", "2", "--image", "32x32", "--train", "-o", path("train"))
out, _ = kt.kiln("check", path("train"), "--device", "emu")
print(out.splitlines()[-1])
kt.kiln("generate", "resnet18", "--gpu", "h100", "--dtype", "f16", "--batch", "8", "--image", "32x32", "--train",
        "--layout", "nhwc", "-o", path("train_nhwc"))
man = json.load(open(path("train_nhwc/manifest.json")))
families = {k["family"] for k in man["kernels"]}
# Its convs are small: the mma.sync family with split-K is priced faster than the Hopper
# conv's tiles (their measured ~400 clocks a row of k, since 2026-11-28), which resnet50's
# channels-last step at batch 32 chooses (tests/unit/plan/test_training_layout.cpp); the
# Hopper family's weight gradient is here.
for f in ("batchnorm_partials", "batchnorm_forward_train_chunked", "batchnorm_backward_chunked",
          "conv2d_backward_weight_hopper_wgmma", "conv2d_flip_weight", "conv2d_backward_weight_mma"):
    kt.check(f in families, f"the channels-last training plan has no {f} kernel: {sorted(families)}")
# add's gradient without copies: its inputs' gradients are views of dy, or the data gradient
# that also feeds one reads dy as its residual (rewrite/copy_forwarding.cpp).
plan = json.load(open(path("train_nhwc/plan.json")))
copies = [s for ph in plan["phases"].values() for s in ph if s.get("fn") == "copy"]
kt.check(not copies and len(man["forwarded_copies"]) == 5,
         f"copies of add gradients: {len(copies)} steps, {len(man['forwarded_copies'])} forwarded")
# The stem's relu in its chunked batchnorm's epilogue (rewrite/batchnorm_activation.cpp): the
# check below compares that kernel with the reference's batchnorm and relu.
kt.check(man["batchnorm_activations"] == ["bn1+relu"], f"fused batchnorm activations: {man['batchnorm_activations']}")
kt.check(any(k["name"].startswith("batchnorm_forward_train_chunked") and "_relu_" in k["name"] for k in man["kernels"]),
         "no chunked batchnorm forward with its relu")
# The stem relu's backward in its chunked batchnorm's backward and partials
# (rewrite/batchnorm_relu_backward.cpp: dy masked by the relu's output): the check below
# compares both kernels with the reference's masked batchnorm backward, and the training run
# at the end (the T4's plan fuses it too) the gradients.
kt.check(man["relu_backwards"] == ["bn1+relu"], f"fused relu backwards: {man['relu_backwards']}")
masked = [k["name"] for k in man["kernels"] if "_relumask_" in k["name"]]
kt.check(len(masked) == 2 and any(n.startswith("batchnorm_partials") for n in masked),
         f"relu-masked batchnorm kernels: {masked}")
relus = [s for ph in plan["phases"].values() for s in ph if s.get("fn") == "relu.backward"]
kt.check(all(s["node"] != "relu" for s in relus), "the stem relu's backward step is still there")
out, _ = kt.kiln("check", path("train_nhwc"), "--device", "emu")
print(out.splitlines()[-1])

# kiln run --device emu matches --device cpu (tf32 convolutions: 5e-4).
np.save(path("x.npy"), np.random.RandomState(0).standard_normal((1, 3, 64, 64)).astype(np.float32))
kt.kiln("run", "resnet18", "--device", "emu", "--input", path("x.npy"), "--output", path("e.npy"))
kt.kiln("run", "resnet18", "--device", "cpu", "--input", path("x.npy"), "--output", path("c.npy"))
e, c = np.load(path("e.npy")), np.load(path("c.npy"))
rel = np.linalg.norm(e - c) / np.linalg.norm(c)
print(f"resnet18 inference, emu vs cpu: relative difference {rel:.2e}")
kt.check(rel < 5e-4, f"emu inference differs: {rel}")

# At 64x64 the last batchnorms still see 2x2x2 values per channel; at 32x32 only 2, which
# makes the backward so ill-conditioned that even f32 on the CPU drifts from f64 by 6e-4.
# Channels-last, for the T4 (no tf32 there, so every kernel computes in fp32 as the
# reference does): chunked batchnorms (the stem's with its relu's backward), NHWC data and
# weight gradients.
np.save(path("x2.npy"), np.random.RandomState(1).standard_normal((2, 3, 64, 64)).astype(np.float32))
np.save(path("t.npy"), np.array([2, 5], np.int64))
for device, extra in (("emu", ["--gpu", "t4", "--layout", "nhwc"]), ("cpu", [])):
    kt.kiln("run", "resnet18", "--device", device, *extra, "--input", path("x2.npy"), "--train", "--target",
            path("t.npy"), "--grads", path(f"g_{device}.safetensors"))
ge, gc = kt.read_safetensors(path("g_emu.safetensors")), kt.read_safetensors(path("g_cpu.safetensors"))
worst = max(np.linalg.norm(ge[k] - gc[k]) / max(np.linalg.norm(gc[k]), 1e-30) for k in gc)
print(f"resnet18 training step (nhwc), emu vs cpu: worst gradient relative difference {worst:.2e}")
kt.check(worst < 1e-4, f"emu gradients differ: {worst}")
kt.finish()
