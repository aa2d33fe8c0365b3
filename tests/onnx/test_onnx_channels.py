"""Channel moves (and ReduceMax over H, W) as ShuffleNetV2 exports them (onnx.helper, no PyTorch): x.chunk(2, dim=1)
as Split (opset 13: sizes as an input; opset 18: num_outputs) or as two Slices, the channel
shuffle as Reshape to [N, 2, C/2, H, W] -> Transpose(0, 2, 1, 3, 4) -> Reshape back, each
one kiln layer (channel_slice, channel_shuffle). kiln's cpu output and the generated kernels
on the emulator must equal NumPy (float64) within 1e-5 relative; `kiln generate` for h100
and t4 emits kernels for them (no cuDNN); a shuffle kiln cannot map is an error."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import kiln_test as kt  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import onnx_models as om  # noqa: E402

TOL = 1e-5
# A conv of an f32 model may run on the h200's tf32 tensor cores on emu (where the cost model
# prices the implicit GEMM cheaper than an exact fp32 kernel): tf32's declared tolerance there.
TOL_TF32 = 5e-4
d = kt.tmpdir()
path = lambda name: os.path.join(d, name)
rng = np.random.RandomState(23)
r = lambda *s: rng.randn(*s).astype(np.float32)
I = lambda name, v: helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_t", TensorProto.INT64,
                                                                                     [len(v)], v))
C = 8
P = {"stem.weight": r(C, 3, 3, 3) * 0.4, "stem.bias": r(C), "b1.weight": r(C, 1, 3, 3) * 0.5, "b1.bias": r(C),
     "b2.weight": r(C, C, 1, 1) * 0.4, "b2.bias": r(C), "u1.weight": r(C // 2, C // 2, 1, 1) * 0.5,
     "u1.bias": r(C // 2), "u2.weight": r(C // 2, 1, 3, 3) * 0.5, "u2.bias": r(C // 2),
     "fc.weight": r(4, 2 * C) * 0.5, "fc.bias": r(4)}


def shuffle_nodes(x, y, tag, shape_first, shape_back):
    return [I(tag + "_s1", shape_first), I(tag + "_s2", shape_back),
            helper.make_node("Reshape", [x, tag + "_s1"], [tag + "_r"]),
            helper.make_node("Transpose", [tag + "_r"], [tag + "_t"], perm=[0, 2, 1, 3, 4]),
            helper.make_node("Reshape", [tag + "_t", tag + "_s2"], [y], name=tag)]


def shufflenet(opset, split_form):
    """A downsampling unit (two branches, concat, shuffle) then a unit that splits its
    input in two, runs one half and concatenates (chunk + shuffle), then a pool and fc."""
    nodes = [
        helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["s"], ["sr"]),
        helper.make_node("Conv", ["sr", "b1.weight", "b1.bias"], ["b1"], name="b1", pads=[1, 1, 1, 1],
                         strides=[2, 2], group=C),
        helper.make_node("MaxPool", ["sr"], ["b2p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["b2p", "b2.weight", "b2.bias"], ["b2"], name="b2"),
        helper.make_node("Concat", ["b1", "b2"], ["cat1"], axis=1),
    ]
    nodes += shuffle_nodes("cat1", "sh1", "shuffle1", [0, 2, C, 5, 5], [2, 2 * C, 5, 5])
    # chunk(2): channels [0, C) and [C, 2C) of the 2C channels.
    if split_form == "split13":
        nodes += [I("halves", [C, C]), helper.make_node("Split", ["sh1", "halves"], ["h0", "h1"], name="chunk",
                                                        axis=1)]
    elif split_form == "split18":
        nodes += [helper.make_node("Split", ["sh1"], ["h0", "h1"], name="chunk", axis=1, num_outputs=2)]
    else:
        nodes += [I("st0", [0]), I("en0", [C]), I("st1", [C]), I("en1", [2 ** 62]), I("ax", [1]),
                  helper.make_node("Slice", ["sh1", "st0", "en0", "ax"], ["h0"], name="chunk0"),
                  helper.make_node("Slice", ["sh1", "st1", "en1", "ax"], ["h1"], name="chunk1")]
    # The unit's branch on the second half only has C/2 = 4 channels... of 8: 1x1 to C/2 first.
    P_u = [helper.make_node("Slice", ["h1", "ust", "uen", "uax"], ["h1a"], name="quarter")]
    nodes += [I("ust", [0]), I("uen", [C // 2]), I("uax", [-3])] + P_u + [
        helper.make_node("Conv", ["h1a", "u1.weight", "u1.bias"], ["u1"], name="u1"),
        helper.make_node("Relu", ["u1"], ["u1r"]),
        helper.make_node("Conv", ["u1r", "u2.weight", "u2.bias"], ["u2"], name="u2", pads=[1, 1, 1, 1],
                         group=C // 2),
        helper.make_node("Concat", ["h0", "u2", "h1a"], ["cat2"], axis=1),
    ]
    nodes += shuffle_nodes("cat2", "sh2", "shuffle2", [2, 4, 4, 5, 5], [0, -1, 5, 5])
    nodes += [
        helper.make_node("GlobalAveragePool", ["sh2"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["fl"]),
        helper.make_node("Gemm", ["fl", "fc.weight", "fc.bias"], ["out"], name="fc", transB=1),
    ]
    return om.model(nodes, [om.init(k, v) for k, v in P.items()], "x", "out", opset, name="shufflenet_units",
                    input_shape=(2, 3, 10, 10))


def shuffle(x, g):
    n, c, h, w = x.shape
    return x.reshape(n, g, c // g, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w)


def ref(x):
    p = {k: v.astype(np.float64) for k, v in P.items()}
    s = np.maximum(om.conv(x, p["stem.weight"], p["stem.bias"], pads=(1, 1, 1, 1)), 0)
    b1 = om.conv(s, p["b1.weight"], p["b1.bias"], stride=(2, 2), pads=(1, 1, 1, 1), group=C)
    b2 = om.conv(om.maxpool(s, 2, 2), p["b2.weight"], p["b2.bias"])
    sh1 = shuffle(np.concatenate([b1, b2], 1), 2)
    h0, h1 = sh1[:, :C], sh1[:, C:]
    h1a = h1[:, :C // 2]
    u = np.maximum(om.conv(h1a, p["u1.weight"], p["u1.bias"]), 0)
    u = om.conv(u, p["u2.weight"], p["u2.bias"], pads=(1, 1, 1, 1), group=C // 2)
    sh2 = shuffle(np.concatenate([h0, u, h1a], 1), 4)
    return sh2.mean(axis=(2, 3)) @ p["fc.weight"].T + p["fc.bias"]


for name, opset, form in [("s13", 13, "split13"), ("s18", 18, "split18"), ("s11", 11, "slice")]:
    m = shufflenet(opset, form)
    if opset <= onnx.defs.onnx_opset_version():  # Debian's onnx 1.12 checks opsets up to 17
        onnx.checker.check_model(m)
    onnx.save(m, path(name + ".onnx"))
    x = rng.randn(2, 3, 10, 10).astype(np.float32)
    np.save(path(name + "_x.npy"), x)
    want = ref(x.astype(np.float64))
    for dev in ("cpu", "emu") if name != "s11" else ("cpu",):
        kt.kiln("run", path(name + ".onnx"), "--device", dev, "--input", path(name + "_x.npy"), "-o",
                path(name + dev + ".npy"))
        if os.path.exists(path(name + dev + ".npy")):
            err = kt.rel(np.load(path(name + dev + ".npy")), want)
            tol = TOL if dev == "cpu" else TOL_TF32
            print(f"{name} (opset {opset}, {form}) on {dev}: relative error {err:.2e} (tolerance {tol})")
            kt.check(err < tol, f"{name} on {dev}: output differs from NumPy: {err}")
    kt.kiln("import", path(name + ".onnx"), "-o", path(name + ".json"), "--weights-out", path(name + ".st"))
    ops = [l["op"] for l in json.load(open(path(name + ".json")))["layers"]]
    kt.check(ops.count("channel_shuffle") == 2, f"{name}: two channel_shuffle layers: {ops}")
    kt.check(ops.count("channel_slice") == 3, f"{name}: three channel_slice layers: {ops}")
    if name == "s13":
        for gpu in ("h100", "t4"):
            out = path(f"gen_{name}_{gpu}")
            kt.kiln("generate", path(name + ".onnx"), "--gpu", gpu, "-o", out)
            man = json.load(open(os.path.join(out, "manifest.json")))
            kt.check(not man.get("library_steps"), f"{name} on {gpu}: cuDNN steps {man.get('library_steps')}")
            fams = {k["family"] for k in man["kernels"]}
            kt.check("channel_move" in fams, f"{name} on {gpu}: channel_move kernels: {sorted(fams)}")

# ---- ReduceMax over H and W (a global max pool): axes as an attribute (opset 13, keepdims 1)
# and as an input (opset 18, keepdims 0).
for opset in (13, 18):
    keep = 1 if opset == 13 else 0
    red = (helper.make_node("ReduceMax", ["s"], ["mx"], name="gmax", axes=[-1, -2], keepdims=1) if opset == 13
           else helper.make_node("ReduceMax", ["s", "rax"], ["mx"], name="gmax", keepdims=0))
    nodes = [helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem"), I("rax", [2, 3]), red]
    if keep:
        nodes.append(helper.make_node("Flatten", ["mx"], ["fl"]))
    nodes.append(helper.make_node("Gemm", ["fl" if keep else "mx", "fcr.weight"], ["out"], name="fcr", transB=1))
    W = r(4, C) * 0.5
    m = om.model(nodes, [om.init("stem.weight", P["stem.weight"]), om.init("stem.bias", P["stem.bias"]),
                         om.init("fcr.weight", W)], "x", "out", opset, input_shape=(2, 3, 7, 6))
    if opset <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(m)
    onnx.save(m, path(f"rmax{opset}.onnx"))
    x = rng.randn(2, 3, 7, 6).astype(np.float32)
    np.save(path("rmax_x.npy"), x)
    want = om.conv(x.astype(np.float64), P["stem.weight"].astype(np.float64),
                   P["stem.bias"].astype(np.float64)).max(axis=(2, 3)) @ W.T.astype(np.float64)
    for dev in ("cpu", "emu"):  # emu: the T4's kernels, f32 in f32 (no tf32 tensor cores)
        kt.kiln("run", path(f"rmax{opset}.onnx"), "--device", dev, *(["--gpu", "t4"] if dev == "emu" else []),
                "--input", path("rmax_x.npy"), "-o", path(f"rmax{opset}{dev}.npy"))
        if os.path.exists(path(f"rmax{opset}{dev}.npy")):
            err = kt.rel(np.load(path(f"rmax{opset}{dev}.npy")), want)
            print(f"ReduceMax (opset {opset}, keepdims {keep}) on {dev}: relative error {err:.2e}")
            kt.check(err < TOL, f"ReduceMax opset {opset} on {dev}: output differs from NumPy: {err}")

# ---- What kiln cannot map is an error naming the node.
inits = [om.init(k, P[k]) for k in ("stem.weight", "stem.bias")]


def refused(tag, nodes, out, *fragments, opset=13):
    m = om.model([helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem")] + nodes,
                 inits, "x", out, opset, input_shape=(2, 3, 10, 10), output_shape=["N", C, 8, 8])
    onnx.save(m, path(tag + ".onnx"))
    kt.expect_error(["import", path(tag + ".onnx"), "-o", path(tag + ".json")], *fragments)


refused("perm5", [I("s5", [2, 2, 4, 8, 8]), helper.make_node("Reshape", ["s", "s5"], ["r"]),
                  helper.make_node("Transpose", ["r"], ["t"], name="odd", perm=[0, 1, 2, 4, 3]),
                  I("s4", [2, 8, 8, 8]), helper.make_node("Reshape", ["t", "s4"], ["y"])], "y",
        'node "odd" (Transpose)', "[0, 2, 1, 3, 4]")
refused("reader5", [I("s5", [2, 2, 4, 8, 8]), helper.make_node("Reshape", ["s", "s5"], ["r"]),
                    helper.make_node("Relu", ["r"], ["y"], name="relu5")], "y", 'node "relu5" (Relu)',
        "channel shuffle")
refused("slice_h", [I("a", [0]), I("b", [4]), I("ax", [2]),
                    helper.make_node("Slice", ["s", "a", "b", "ax"], ["y"], name="rows")], "y",
        'node "rows" (Slice)', "channel axis 1 only")
refused("split0", [helper.make_node("Split", ["s"], ["y", "z"], name="bsplit", axis=0)], "y",
        'node "bsplit" (Split)', "channel axis 1 only")
refused("rmax_n", [I("nax", [0]), helper.make_node("ReduceMax", ["s", "nax"], ["y"], name="nmax")], "y",
        'node "nmax" (ReduceMax)', "never N", opset=18)
kt.finish()
