"""Concats and channel slices as views (generator/rewrite/channel_views.cpp) through the CLI: an
inception branch pair, a ShuffleNet unit (shuffle, two slices, a concat) and densenet121. At
batch 1 the copies become views (fewer steps in the generated plan, said by generate and
inspect); at batch 2 (a strided window) they copy where no kernel writes through a pitch (the
T4's f32 direct convs), and a concat's input written by an implicit-GEMM conv in NHWC is a
pitched view (the H100's f16 and tf32 plans, at any batch), densenet121's every copy there
(its pools write and its batchnorms read through the pitch). The outputs agree: on the cpu,
batch 1 (views) gives the first row of batch 2 bit for bit; the emulator runs the generated
kernels on the views (contiguous and pitched) as the cpu does, and `kiln check` catches a
kernel compiled for the wrong pitch."""
import json
import os
import sys

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
rng = np.random.RandomState(0)

layers = [
    {"name": "stem", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1},
    {"name": "a", "op": "conv2d", "out_channels": 8, "kernel": 1, "inputs": ["stem"]},
    {"name": "ra", "op": "relu"},
    {"name": "b", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1, "bias": False, "inputs": ["stem"]},
    {"name": "bn", "op": "batchnorm"},
    {"name": "rb", "op": "relu"},
    {"name": "cat", "op": "concat", "inputs": ["ra", "rb"]},
    {"name": "shuffle", "op": "channel_shuffle", "groups": 2},
    {"name": "left", "op": "channel_slice", "begin": 0, "end": 8},
    {"name": "right", "op": "channel_slice", "begin": 8, "end": 16, "inputs": ["shuffle"]},
    {"name": "c", "op": "conv2d", "out_channels": 8, "kernel": 1},
    {"name": "rc", "op": "relu"},
    {"name": "unit", "op": "concat", "inputs": ["left", "rc"]},
    {"name": "head", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "gap", "op": "global_avgpool"},
    {"name": "flat", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 3},
]
with open(path("net.json"), "w") as f:
    json.dump({"format": "kiln-model/1", "name": "views_net", "input": {"shape": [1, 3, 8, 8]},
               "layers": layers}, f)


def forward_steps(dir_):
    p = json.load(open(os.path.join(dir_, "plan.json")))
    return [s for s in p["phases"]["forward"] if s.get("kind") != "free"]


def copies(steps):
    return sum(s.get("fn") in ("concat.forward", "channel_slice.forward") for s in steps)


def same_rows(model, x1, x2, what, extra=()):
    """cpu: batch 1 (views) equals batch 2's first row (copies), bit for bit."""
    np.save(path("x1.npy"), x1)
    np.save(path("x2.npy"), x2)
    kt.kiln("run", model, "--device", "cpu", "--batch", 1, *extra, "--input", path("x1.npy"), "-o", path("y1.npy"))
    kt.kiln("run", model, "--device", "cpu", "--batch", 2, *extra, "--input", path("x2.npy"), "-o", path("y2.npy"))
    y1, y2 = np.load(path("y1.npy")), np.load(path("y2.npy"))
    kt.check(y1.shape[0] == 1 and y2.shape[0] == 2, f"{what}: shapes {y1.shape}, {y2.shape}")
    kt.check(np.array_equal(y1[0], y2[0]), f"{what}: batch 1 (views) differs from batch 2 (copies) on the cpu: "
                                           f"{kt.rel(y1[0], y2[0]):.3e}")
    return y1, y2


x1 = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
x2 = np.concatenate([x1, rng.standard_normal((1, 3, 8, 8)).astype(np.float32)])
y1, y2 = same_rows(path("net.json"), x1, x2, "views_net")

# The generated plans (NCHW: the T4 has no f32 tensor cores): at batch 1 both slices and both
# concats' steps are gone but the copy of the slice `left` (a view itself) into `unit`; at
# batch 2 every copy stays.
out1, _ = kt.kiln("generate", path("net.json"), "--gpu", "t4", "--batch", 1, "-o", path("g1"))
kt.kiln("generate", path("net.json"), "--gpu", "t4", "--batch", 2, "-o", path("g2"))
s1, s2 = forward_steps(path("g1")), forward_steps(path("g2"))
print(f"views_net forward steps: batch 1 {len(s1)} ({copies(s1)} copies), batch 2 {len(s2)} ({copies(s2)} copies)")
kt.check(copies(s2) == 4 and copies(s1) == 1 and len(s1) < len(s2),
         f"copy steps at batch 1 and 2: {copies(s1)}, {copies(s2)}; steps {len(s1)}, {len(s2)}")
man1 = json.load(open(path("g1/manifest.json")))
man2 = json.load(open(path("g2/manifest.json")))
cv1, cv2 = man1.get("channel_views", {}), man2.get("channel_views", {})
kt.check(cv1.get("views") == 5 and cv1.get("copies") == 1 and cv1.get("steps_removed") == 3,
         f"manifest at batch 1: {cv1}")
kt.check(cv1.get("kept") == [{"node": "unit", "buffer": "act:left", "reason": "the input is itself a view"}],
         f"the copy kept at batch 1: {cv1.get('kept')}")
kt.check(cv2.get("views") == 0 and cv2.get("copies") == 6, f"manifest at batch 2: {cv2}")
kt.check("5 channel copies as views (1 kept, 3 steps fewer)" in out1, f"generate says it: {out1!r}")
plan1 = json.load(open(path("g1/plan.json")))
views = {b["name"]: b for b in plan1["buffers"] if "view_offset" in b}
kt.check(views.get("act:rb", {}).get("view_of") == "act:cat" and views["act:rb"]["view_offset"] == 8 * 64,
         f"rb is cat's channels 8..16: {views.get('act:rb')}")
# A training step under a recompute budget keeps every copy: the schedule planned its lifetimes.
kt.kiln("generate", path("net.json"), "--gpu", "t4", "--batch", 1, "--train", "--schedule", "rotor", "--budget", "1MiB",
        "-o", path("gr"))
kt.check("channel_views" not in json.load(open(path("gr/manifest.json"))), "no channel views under a budget")
kt.check(copies(forward_steps(path("gr"))) >= 4, "the budgeted training plan copies")
kt.kiln("generate", path("net.json"), "--gpu", "t4", "--batch", 1, "--train", "-o", path("gt"))
cvt = json.load(open(path("gt/manifest.json"))).get("channel_views", {})
kt.check(cvt.get("views") == 9 and cvt.get("copies") == 1,
         f"a store-all training step views as inference does, and each concat input's gradient is a view of "
         f"the concat's: {cvt}")
backward = json.load(open(path("gt/plan.json")))["phases"]["backward"]
kt.check(not any(s.get("fn") == "concat.backward" for s in backward), "no concat.backward step is left")

# NHWC (the H100's tf32 convs) at H*W > 1: a channel window is strided. The concat inputs its
# convs write (ra, rb into cat, rc into unit) are pitched views, written through Y_PITCH, and
# the slice `right` one that conv c reads through X_PITCH; the slice `left`, which unit's
# copy reads, copies (no concat kernel reads through a pitch).
kt.kiln("generate", path("net.json"), "--gpu", "h100", "--batch", 1, "--layout", "nhwc", "-o", path("gh"))
cvh = json.load(open(path("gh/manifest.json"))).get("channel_views", {})
kt.check(cvh.get("views") == 4 and cvh.get("copies") == 2 and all("nhwc" in k["reason"] for k in cvh.get("kept", [])),
         f"nhwc: the conv outputs and the slice a conv reads are pitched views: {cvh}")
hplan = json.load(open(path("gh/plan.json")))
pitched = {b["name"]: b for b in hplan["buffers"] if b.get("view_pitch")}
kt.check(sorted(pitched) == ["act:ra", "act:rb", "act:rc", "act:right"]
         and all(b["view_pitch"] == 16 for b in pitched.values()) and pitched["act:rb"]["view_offset"] == 8
         and pitched["act:right"]["view_of"] == "act:shuffle", f"the pitched views: {pitched}")
hman = json.load(open(path("gh/manifest.json")))
kt.check(sum(k["params"].get("Y_PITCH") == 16 for k in hman["kernels"]) >= 2, "no kernel writes through the pitch")
# X_PITCH in a kernel's constants, or the Hopper family's x maps, strided by the pitch ("_xp16").
kt.check(any(k["params"].get("X_PITCH") == 16 or "_xp16_" in k["name"] for k in hman["kernels"]),
         "no kernel reads through the pitch")
out, _ = kt.kiln("inspect", path("net.json"), "--batch", 1)
kt.check("of the NCHW plan at batch 1: 5 of 6 are views, 3 copy steps fewer" in out, f"inspect says it: {out!r}")
# The cpu reference writes through any pitch: at batch 2 its plan's concat inputs are pitched
# views but for the slices'.
out, _ = kt.kiln("inspect", path("net.json"), "--batch", 2)
kt.check("of the NCHW plan at batch 2: 5 of 6 are views, 3 copy steps fewer" in out, f"inspect at batch 2: {out!r}")

# The emulator runs the generated kernels over the views (batch 1) and the copies (batch 2).
np.save(path("x1.npy"), x1)
np.save(path("x2.npy"), x2)
kt.kiln("run", path("net.json"), "--device", "emu", "--gpu", "t4", "--batch", 1, "--input", path("x1.npy"), "-o", path("e1.npy"))
kt.kiln("run", path("net.json"), "--device", "emu", "--gpu", "t4", "--batch", 2, "--input", path("x2.npy"), "-o", path("e2.npy"))
r1, r2 = kt.rel(np.load(path("e1.npy")), y1), kt.rel(np.load(path("e2.npy")), y2)
print(f"views_net emu vs cpu: batch 1 (views) {r1:.2e}, batch 2 (copies) {r2:.2e}")
kt.check(r1 < 5e-4 and r2 < 5e-4, f"emu differs from cpu: {r1}, {r2}")
# The H100's kernels at batch 2 in f16 and tf32 (NHWC): four pitched views each.
for dtype, tol in (("f16", 5e-3), ("f32", 2e-3)):
    kt.kiln("run", path("net.json"), "--device", "emu", "--gpu", "h100", "--dtype", dtype, "--batch", 2, "--input",
            path("x2.npy"), "-o", path(f"h2_{dtype}.npy"))
    r = kt.rel(np.load(path(f"h2_{dtype}.npy")), y2)
    print(f"views_net {dtype} at batch 2 (pitched views, h100 kernels) emu vs cpu: {r:.2e}")
    kt.check(r < tol, f"views_net {dtype} pitched views on emu differ from the cpu: {r}")
# kiln check runs each pitched kernel against the reference over a base of its own: a kernel
# compiled for another pitch fails it.
kt.kiln("generate", path("net.json"), "--gpu", "h100", "--dtype", "f16", "--batch", 2, "-o", path("gp"))
man = json.load(open(path("gp/manifest.json")))
kt.check(man["channel_views"]["views"] == 4, f"h100 f16 batch 2: {man['channel_views']}")
kt.kiln("check", path("gp"), "--device", "emu")
src = next(os.path.join(path("gp"), k["source"]) for k in man["kernels"] if k["params"].get("Y_PITCH") == 16)
text = open(src).read()
kt.check("Y_PITCH = 16;" in text, f"{src} names no Y_PITCH = 16")
open(src, "w").write(text.replace("Y_PITCH = 16;", "Y_PITCH = 8;"))
out, _ = kt.kiln("check", path("gp"), "--device", "emu", expect=1)
kt.check("1 failed" in out, f"a kernel writing through the wrong pitch passes kiln check: {out!r}")

# A training step over the views (batch 1): the emulator's gradients are the cpu's (the unit
# test holds the cpu's against the copies' bit for bit).
np.save(path("t1.npy"), np.array([1], np.int64))
kt.kiln("run", path("net.json"), "--device", "cpu", "--batch", 1, "--input", path("x1.npy"), "--train", "--target",
        path("t1.npy"), "--grads", path("gc.safetensors"))
kt.kiln("run", path("net.json"), "--device", "emu", "--gpu", "t4", "--batch", 1, "--input", path("x1.npy"), "--train", "--target",
        path("t1.npy"), "--grads", path("ge.safetensors"))
gc, ge = kt.read_safetensors(path("gc.safetensors")), kt.read_safetensors(path("ge.safetensors"))
worst = max(kt.rel(ge[k], gc[k]) for k in gc)
print(f"views_net training step at batch 1, emu vs cpu gradients: worst {worst:.2e}")
kt.check(set(gc) == set(ge) and worst < 1e-3, f"training gradients differ: {worst}")

# An ONNX ShuffleNet-style unit (x.chunk(2) as Split, one half through a branch, Concat): the
# two halves become views of the stem's output, the branch writes into the concat's output.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx"))
import onnx_models as om  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

P = {"stem.weight": rng.randn(8, 3, 3, 3) * 0.4, "stem.bias": rng.randn(8), "u.weight": rng.randn(4, 4, 1, 1) * 0.5,
     "u.bias": rng.randn(4), "fc.weight": rng.randn(3, 8) * 0.5, "fc.bias": rng.randn(3)}
nodes = [
    helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", pads=[1, 1, 1, 1]),
    helper.make_node("Constant", [], ["halves"], value=helper.make_tensor("halves_t", TensorProto.INT64, [2], [4, 4])),
    helper.make_node("Split", ["s", "halves"], ["h0", "h1"], name="chunk", axis=1),
    helper.make_node("Conv", ["h1", "u.weight", "u.bias"], ["u"], name="u"),
    helper.make_node("Relu", ["u"], ["ur"], name="ur"),
    helper.make_node("Concat", ["h0", "ur"], ["cat"], name="cat", axis=1),
    helper.make_node("GlobalAveragePool", ["cat"], ["gap"]),
    helper.make_node("Flatten", ["gap"], ["fl"]),
    helper.make_node("Gemm", ["fl", "fc.weight", "fc.bias"], ["out"], name="fc", transB=1),
]
import onnx  # noqa: E402
onnx.save(om.model(nodes, [om.init(k, v) for k, v in P.items()], "x", "out", 13, name="chunk_unit",
                   input_shape=("N", 3, 8, 8)), path("unit.onnx"))
oy1, oy2 = same_rows(path("unit.onnx"), x1, x2, "ONNX chunk unit")
out, _ = kt.kiln("generate", path("unit.onnx"), "--gpu", "t4", "--batch", 1, "-o", path("o1"))
cvo = json.load(open(path("o1/manifest.json"))).get("channel_views", {})
kt.check(cvo.get("views") == 3 and cvo.get("copies") == 1, f"the ONNX unit at batch 1: {cvo}")
kt.check(copies(forward_steps(path("o1"))) == 1, "the ONNX unit keeps one copy step (h0 into cat)")
kt.kiln("run", path("unit.onnx"), "--device", "emu", "--gpu", "t4", "--batch", 1, "--input", path("x1.npy"), "-o",
        path("oe1.npy"))
r = kt.rel(np.load(path("oe1.npy")), oy1)
print(f"ONNX chunk unit at batch 1 (views), emu vs cpu: {r:.2e}")
kt.check(r < 5e-4, f"the ONNX unit on emu differs from the cpu: {r}")

# densenet121 (torchvision's concats) at a small image: each block's feature maps are views of
# its last concat, every other concat of the block a view of its first channels; the cpu gives
# the same rows either way.
dx1 = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
dx2 = np.concatenate([dx1, rng.standard_normal((1, 3, 32, 32)).astype(np.float32)])
same_rows("densenet121", dx1, dx2, "densenet121", extra=("--image", "32x32"))
out, _ = kt.kiln("inspect", "densenet121", "--batch", 1, "--json")
cv = json.loads(out).get("channel_views", {})
print(f"densenet121 at batch 1: {cv.get('views')} views, {cv.get('copies')} copies")
kt.check(cv.get("views") == 116 and cv.get("copies") == 0 and cv.get("steps_removed", 0) > 0,
         f"densenet121 at batch 1: 62 feature maps and 54 nested concats are views: {cv}")
# Its generated kernels on the emulator over the views, against the cpu; the plan at batch 1 has
# no concat step left, the one at batch 2 copies.
np.save(path("dx1.npy"), dx1)
kt.kiln("run", "densenet121", "--device", "emu", "--gpu", "t4", "--batch", 1, "--image", "32x32", "--input",
        path("dx1.npy"), "-o", path("de1.npy"))
kt.kiln("run", "densenet121", "--device", "cpu", "--batch", 1, "--image", "32x32", "--input", path("dx1.npy"), "-o",
        path("dc1.npy"))
r = kt.rel(np.load(path("de1.npy")), np.load(path("dc1.npy")))
print(f"densenet121 (32x32) at batch 1 (views), emu vs cpu: {r:.2e}")
kt.check(r < 5e-4, f"densenet121 on emu differs from the cpu: {r}")
for b in (1, 2):
    kt.kiln("generate", "densenet121", "--gpu", "t4", "--batch", b, "--image", "32x32", "-o", path(f"dn{b}"))
d1, d2 = forward_steps(path("dn1")), forward_steps(path("dn2"))
print(f"densenet121 forward steps: batch 1 {len(d1)} ({copies(d1)} copies), batch 2 {len(d2)} ({copies(d2)} copies)")
kt.check(copies(d1) == 0 and copies(d2) == 100 and len(d1) == len(d2) - 100,
         f"densenet121 copy steps: {copies(d1)} at batch 1, {copies(d2)} at batch 2")
# On the H100 in f16 (NHWC: a strided window at any batch) every copy is a pitched view: each
# block's convs and the pool before it write into the block's last concat through its pitch,
# the nested concats are pitched views the batchnorms read through it.
kt.kiln("generate", "densenet121", "--gpu", "h100", "--dtype", "f16", "--batch", 2, "--image", "32x32", "-o",
        path("dh2"))
cvd = json.load(open(path("dh2/manifest.json")))["channel_views"]
dh = json.load(open(path("dh2/plan.json")))
pitched = [b for b in dh["buffers"] if b.get("view_pitch")]
print(f"densenet121 h100 f16 batch 2: {cvd['views']} views ({len(pitched)} pitched), {cvd['copies']} copies")
kt.check(cvd["views"] == 116 and cvd["copies"] == 0 and len(pitched) == 116, f"densenet121 on the h100: {cvd}")
kt.check(copies(forward_steps(path("dh2"))) == 0, "densenet121 on the h100 keeps a copy step")
dman = json.load(open(path("dh2/manifest.json")))
for fam, key in (("batchnorm_forward", "X_PITCH"), ("avgpool2d", "Y_PITCH")):
    kt.check(any(k["family"] == fam and k["params"].get(key) for k in dman["kernels"]),
             f"no {fam} kernel with {key}")
np.save(path("dx2.npy"), dx2)
kt.kiln("run", "densenet121", "--device", "emu", "--gpu", "h100", "--dtype", "f16", "--batch", 2, "--image", "32x32",
        "--input", path("dx2.npy"), "-o", path("dh2.npy"))
kt.kiln("run", "densenet121", "--device", "cpu", "--batch", 2, "--image", "32x32", "--input", path("dx2.npy"), "-o",
        path("dc2.npy"))
r = kt.rel(np.load(path("dh2.npy")), np.load(path("dc2.npy")))
print(f"densenet121 (32x32) h100 f16 at batch 2 (pitched views), emu vs cpu: {r:.2e}")
kt.check(r < 5e-3, f"densenet121 f16 pitched views on emu differ from the cpu: {r}")
kt.finish()
