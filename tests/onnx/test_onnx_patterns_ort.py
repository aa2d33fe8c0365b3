"""The patterns exporters write around kiln's ops, checked against onnxruntime (not NumPy):
LayerNorm written out before opset 17 (ReduceMean, Sub, Pow or Mul(d, d), ReduceMean, Add
eps, Sqrt, Div, then a constant scale and bias, either order of operands, with or without
them) over the last axis of a channels-last region, over axis 1 of NCHW (ConvNeXt's
LayerNorm2d) and over [N, features], at opsets 13, 16 and 18 (axes an input): one kiln
layernorm each; ReduceSum/Mean/Max inside a channels-last region (axes of [N, H, W, C],
keepdims 0 and 1, the region ended by Transpose(0, 3, 1, 2) or by the reduction to [N, C]);
and per-channel scales and shifts that no layer before them can absorb (the model input's
normalisation, after an Add of two activations): a 1x1 depthwise conv each; and
LayerNormalization's Mean and InvStdDev outputs where a graph reads them (over [N, C] and in a
channels-last region). `kiln run X.onnx` on cpu and on the emulator must give onnxruntime's
output within 1e-4 relative.

Usage: test_onnx_patterns_ort.py KILN ORT_DIR (exits 77, skipped, without onnxruntime there)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import kiln_test as kt  # noqa: E402

import numpy as np  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import onnx_models as om  # noqa: E402

ort = om.onnxruntime_or_skip(sys.argv[2])

TOL = 1e-4
d = kt.tmpdir()
path = lambda name: os.path.join(d, name)
rng = np.random.RandomState(23)
r = lambda *s: rng.randn(*s).astype(np.float32)
pos = lambda *s: (rng.rand(*s) + 0.5).astype(np.float32)
C, N, HW = 8, 2, 6
x = r(N, 3, HW, HW)
np.save(path("x.npy"), x)
P = {"stem.weight": r(C, 3, 3, 3) * 0.4, "stem.bias": r(C), "side.weight": r(C, 3, 1, 1), "side.bias": r(C),
     "w_last": pos(C), "b_last": r(C), "w_first": pos(C, 1, 1), "b_first": r(C, 1, 1),
     "fc.weight": r(C, C * HW * HW) * 0.05, "fc.bias": r(C), "head.weight": r(5, C) * 0.4, "head.bias": r(5),
     "in_scale": pos(1, 3, 1, 1), "in_shift": r(3, 1, 1), "sc": pos(C, 1, 1), "sh": r(1, C, 1, 1)}
INITS = [om.init(k, v) for k, v in P.items()]


def const(name, v):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(v), name + "_t"))


def reduce_mean(src, dst, axis, opset, tag):
    if opset >= 18:  # axes an input
        return [const(tag + "_ax", np.array([axis], np.int64)), helper.make_node("ReduceMean", [src, tag + "_ax"], [dst])]
    return [helper.make_node("ReduceMean", [src], [dst], axes=[axis])]


def written_ln(tag, src, out, axis, opset, scale=None, bias=None, square="Pow", scale_first=False, eps=1e-5):
    t = lambda s: f"{tag}_{s}"
    nodes = reduce_mean(src, t("m"), axis, opset, t("r1")) + [helper.make_node("Sub", [src, t("m")], [t("d")])]
    if square == "Pow":
        nodes += [const(t("two"), np.float32(2)), helper.make_node("Pow", [t("d"), t("two")], [t("sq")])]
    else:
        nodes.append(helper.make_node("Mul", [t("d"), t("d")], [t("sq")]))
    y = t("n") if scale or bias else out
    nodes += reduce_mean(t("sq"), t("v"), axis, opset, t("r2")) + [
        const(t("eps"), np.float32(eps)), helper.make_node("Add", [t("v"), t("eps")], [t("ve")]),
        helper.make_node("Sqrt", [t("ve")], [t("s")]), helper.make_node("Div", [t("d"), t("s")], [y])]
    if scale:
        y2 = t("sc") if bias else out
        nodes.append(helper.make_node("Mul", [scale, y] if scale_first else [y, scale], [y2]))
        y = y2
    if bias:
        nodes.append(helper.make_node("Add", [y, bias], [out]))
    return nodes


def reduce(op, src, dst, axes, keepdims=1):
    """At opset 13: ReduceSum's axes are an input, the others' an attribute."""
    if op == "ReduceSum":
        return [const(dst + "_ax", np.array(axes, np.int64)), helper.make_node(op, [src, dst + "_ax"], [dst],
                                                                                keepdims=keepdims)]
    return [helper.make_node(op, [src], [dst], axes=axes, keepdims=keepdims)]


STEM = [helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", pads=[1, 1, 1, 1])]
TO_LAST = lambda a, b: helper.make_node("Transpose", [a], [b], perm=[0, 2, 3, 1])
TO_FIRST = lambda a, b: helper.make_node("Transpose", [a], [b], perm=[0, 3, 1, 2])


def case(tag, nodes, out_shape, opset, want_ops=None, refuse_ops=()):
    m = om.model(nodes, INITS, "x", "y", opset, name=tag, input_shape=("N", 3, HW, HW), output_shape=out_shape)
    f = path(tag + ".onnx")
    open(f, "wb").write(m.SerializeToString())
    so = ort.SessionOptions()
    so.log_severity_level = 3  # no warnings about initializers a case does not use
    want = ort.InferenceSession(f, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for dev in ("cpu", "emu"):
        # The T4's kernels on emu: exact fp32 (an h200's f32 conv may take tf32 tensor cores).
        kt.kiln("run", f, "--device", dev, *(["--gpu", "t4"] if dev == "emu" else []), "--input", path("x.npy"),
                "-o", path(f"{tag}_{dev}.npy"))
        if not os.path.exists(path(f"{tag}_{dev}.npy")):
            continue
        got = np.load(path(f"{tag}_{dev}.npy"))
        kt.check(got.shape == want.shape, f"{tag} on {dev}: shape {got.shape}, onnxruntime's {want.shape}")
        if got.shape == want.shape:
            err = kt.rel(got, want)
            print(f"{tag:34s} {dev:4s} relative error {err:.2e} (tolerance {TOL})")
            kt.check(err < TOL, f"{tag} on {dev}: differs from onnxruntime: {err:.2e}")
    kt.kiln("import", f, "-o", path(tag + ".json"))
    if os.path.exists(path(tag + ".json")):
        ops = [layer["op"] for layer in json.load(open(path(tag + ".json")))["layers"]]
        if isinstance(want_ops, tuple):  # exactly these layers
            kt.check(tuple(ops) == want_ops, f"{tag}: layers {ops}, expected {list(want_ops)}")
        for op in want_ops or ():
            kt.check(op in ops, f"{tag}: no {op} layer: {ops}")
        for op in refuse_ops:
            kt.check(op not in ops, f"{tag}: a {op} layer: {ops}")


# ---- 2: LayerNorm written out.
for opset in (13, 16, 18):
    # Over the last axis of a channels-last region (ConvNeXt's block norm), Pow, scale and bias.
    case(f"ln_last_{opset}", STEM + [TO_LAST("s", "t")] + written_ln("ln", "t", "l", -1, opset, "w_last", "b_last") +
         [TO_FIRST("l", "u"), helper.make_node("Relu", ["u"], ["y"])], ("N", C, HW, HW), opset,
         ["layernorm"], ["reduce_mean"])
    # Over axis 1 of NCHW (LayerNorm2d), Mul(d, d), the scale first, [C, 1, 1] constants.
    case(f"ln_first_{opset}", STEM + written_ln("ln", "s", "l", 1, opset, "w_first", "b_first", square="Mul",
                                                scale_first=True, eps=1e-6) +
         [helper.make_node("Relu", ["l"], ["y"])], ("N", C, HW, HW), opset, ["layernorm"], ["reduce_mean"])
# Axis 3 named positively, no scale, a bias only; over [N, features] after a Gemm.
case("ln_axis3_bias", STEM + [TO_LAST("s", "t")] + written_ln("ln", "t", "l", 3, 13, None, "b_last") +
     [TO_FIRST("l", "y")], ("N", C, HW, HW), 13, ["layernorm"], ["reduce_mean"])
case("ln_features", STEM + [helper.make_node("Flatten", ["s"], ["f"]),
                            helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["g"], transB=1)] +
     written_ln("ln", "g", "y", -1, 16, "w_last", "b_last"), ("N", C), 16, ["layernorm"], ["reduce_mean"])

# ---- 5: reductions inside a channels-last region.
for op in ("ReduceMean", "ReduceSum", "ReduceMax"):
    # Over the channels (ONNX's last axis), keepdims: [N, H, W, 1], back to [N, 1, H, W].
    case(f"{op}_last_channels", STEM + [TO_LAST("s", "t")] + reduce(op, "t", "m", [-1]) + [TO_FIRST("m", "y")],
         ("N", 1, HW, HW), 13, ["reduce_" + op[6:].lower()])
    # Over H and W without keepdims: [N, C] ends the region (ConvNeXt's head), then a Gemm.
    case(f"{op}_last_spatial", STEM + [TO_LAST("s", "t")] + reduce(op, "t", "m", [1, 2], 0) +
         [helper.make_node("Gemm", ["m", "head.weight", "head.bias"], ["y"], transB=1)], ("N", 5), 13)
    # Over W alone with keepdims: [N, H, 1, C], back to [N, C, H, 1].
    case(f"{op}_last_w", STEM + [TO_LAST("s", "t")] + reduce(op, "t", "m", [2]) + [TO_FIRST("m", "y")],
         ("N", C, HW, 1), 13)

# ---- 4: per-channel scales no layer before them absorbs.
# The input's normalisation (x * scale + shift) before the stem: a 1x1 depthwise conv.
case("input_scale", [helper.make_node("Mul", ["x", "in_scale"], ["a"]), helper.make_node("Add", ["a", "in_shift"], ["b"]),
                     helper.make_node("Conv", ["b", "stem.weight", "stem.bias"], ["y"], pads=[1, 1, 1, 1])],
     ("N", C, HW, HW), 13, ("conv2d", "conv2d"))
# After an Add of two activations (a residual): Mul by [C, 1, 1], Add of [1, C, 1, 1], Relu.
case("after_add", STEM + [helper.make_node("Conv", ["x", "side.weight", "side.bias"], ["p"]),
                          helper.make_node("Add", ["s", "p"], ["a"]), helper.make_node("Mul", ["a", "sc"], ["b"]),
                          helper.make_node("Add", ["b", "sh"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
     ("N", C, HW, HW), 13, ("conv2d", "conv2d", "add", "conv2d", "relu"))
# A scale of a value read elsewhere too: the stem's output scaled and added to itself.
case("shared_scale", STEM + [helper.make_node("Mul", ["s", "sc"], ["b"]), helper.make_node("Add", ["b", "s"], ["y"])],
     ("N", C, HW, HW), 13, ("conv2d", "conv2d", "add"))
# ---- 3: LayerNormalization (opset 17) with its Mean and InvStdDev outputs read.
def ln_stats(tag, src, axis, want, out_shape, pre=(), post=None):
    """LayerNormalization of `src`; the graph's output is its output `want` (1 Mean, 2
    InvStdDev), through `post` (the Transpose that ends a channels-last region)."""
    outs = ["ly", "lm", "li"]
    node = helper.make_node("LayerNormalization", [src, "w_last", "b_last"], outs, name="ln", axis=axis,
                            epsilon=1e-3)
    tail = [post(outs[want], "y")] if post else [helper.make_node("Identity", [outs[want]], ["y"])]
    case(tag, list(pre) + [node] + tail, out_shape, 17, ["layernorm_invstd" if want == 2 else "reduce_mean"])


FC = [helper.make_node("Flatten", ["s"], ["f"]), helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["g"], transB=1)]
for want, name in ((1, "mean"), (2, "invstd")):
    ln_stats(f"ln_{name}_features", "g", -1, want, ("N", 1), STEM + FC)  # [N, C] over C: [N, 1]
    ln_stats(f"ln_{name}_last", "t", -1, want, ("N", 1, HW, HW), STEM + [TO_LAST("s", "t")], TO_FIRST)
kt.finish()
