"""Channels-last regions and layer norm, as ConvNeXt exports them (onnx.helper, no PyTorch):
Transpose(0, 2, 3, 1) -> LayerNormalization(axis -1) -> MatMul (+ Add) -> GELU -> MatMul
(+ Add) -> Transpose(0, 3, 1, 2) -> Mul by the layer scale [C, 1, 1] -> residual Add. kiln's
cpu output must equal a NumPy (float64) computation within 1e-5 relative, and so must the
generated kernels on the emulator (5e-4, tf32's, where a conv runs on tf32 tensor cores); `kiln generate` for h100 and t4 emits a kernel for every
step (no cuDNN); a Transpose or reader kiln cannot map is an error naming it."""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import kiln_test as kt  # noqa: E402

import json  # noqa: E402

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
rng = np.random.RandomState(19)
r = lambda *s: rng.randn(*s).astype(np.float32)
pos = lambda *s: (rng.rand(*s) + 0.5).astype(np.float32)
erf = np.vectorize(math.erf)
F = lambda name, v: helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_t", TensorProto.FLOAT,
                                                                                     [], [v]))
CH = 8

P = {"stem.weight": r(CH, 3, 2, 2) * 0.5, "stem.bias": r(CH), "dw.weight": r(CH, 1, 7, 7) * 0.3, "dw.bias": r(CH),
     "norm.weight": pos(CH), "norm.bias": r(CH), "pw1_w": r(CH, 4 * CH) * 0.4, "pw1_b": r(4 * CH),
     "pw2_w": r(4 * CH, CH) * 0.3, "pw2_b": r(CH), "layer_scale": (r(CH, 1, 1) * 0.5),
     "head_norm.weight": pos(CH), "head_norm.bias": r(CH), "fc.weight": r(5, CH) * 0.5, "fc.bias": r(5)}


def written_ln(tag, x, out, axis, scale=None, bias=None, eps=1e-6, square="Pow", scale_first=False):
    """LayerNorm as exporters wrote it before opset 17: ReduceMean, Sub, Pow (or Mul(d, d)),
    ReduceMean, Add eps, Sqrt, Div, then optionally Mul by the scale and Add the bias."""
    t = lambda s: f"{tag}_{s}"
    nodes = [helper.make_node("ReduceMean", [x], [t("m")], axes=[axis]),
             helper.make_node("Sub", [x, t("m")], [t("d")])]
    if square == "Pow":
        nodes += [F(t("two"), 2.0), helper.make_node("Pow", [t("d"), t("two")], [t("sq")])]
    else:
        nodes.append(helper.make_node("Mul", [t("d"), t("d")], [t("sq")]))
    y = t("n") if scale or bias else out
    nodes += [helper.make_node("ReduceMean", [t("sq")], [t("v")], axes=[axis]), F(t("eps"), eps),
              helper.make_node("Add", [t("v"), t("eps")], [t("ve")]), helper.make_node("Sqrt", [t("ve")], [t("s")]),
              helper.make_node("Div", [t("d"), t("s")], [y])]
    if scale:
        y2 = t("sc") if bias else out
        nodes.append(helper.make_node("Mul", [scale, y] if scale_first else [y, scale], [y2], name=tag))
        y = y2
    if bias:
        nodes.append(helper.make_node("Add", [y, bias], [out], name=tag + "_bias"))
    return nodes


def convnext(opset, gelu_op, head_2d, written=False):
    """A ConvNeXt stem, one block and its head. gelu_op: the Gelu operator (opset 20) or GELU
    written out as the TorchScript exporter does; head_2d: the head's layer norm on [N, C]
    (axis 1, no bias) instead of torchvision's LayerNorm2d (transposes around [N, C, 1, 1]);
    written: both layer norms written out as exporters before opset 17 did."""
    nodes = [
        helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", strides=[2, 2]),
        helper.make_node("Conv", ["s", "dw.weight", "dw.bias"], ["dw"], name="dw", pads=[3, 3, 3, 3], group=CH),
        helper.make_node("Transpose", ["dw"], ["t1"], name="to_last", perm=[0, 2, 3, 1]),
        *(written_ln("norm", "t1", "ln", -1, "norm.weight", "norm.bias") if written else
          [helper.make_node("LayerNormalization", ["t1", "norm.weight", "norm.bias"], ["ln"], name="norm",
                            axis=-1, epsilon=1e-6)]),
        helper.make_node("MatMul", ["ln", "pw1_w"], ["m1"], name="pw1"),
        helper.make_node("Add", ["m1", "pw1_b"], ["a1"], name="pw1_bias"),
    ]
    if gelu_op:
        nodes.append(helper.make_node("Gelu", ["a1"], ["g"], name="gelu"))
    else:
        nodes += [F("sqrt2", 1.4142135381698608), F("one", 1.0), F("half", 0.5),
                  helper.make_node("Div", ["a1", "sqrt2"], ["g1"]), helper.make_node("Erf", ["g1"], ["g2"]),
                  helper.make_node("Add", ["g2", "one"], ["g3"]), helper.make_node("Mul", ["a1", "g3"], ["g4"]),
                  helper.make_node("Mul", ["g4", "half"], ["g"])]
    nodes += [
        helper.make_node("MatMul", ["g", "pw2_w"], ["m2"], name="pw2"),
        helper.make_node("Add", ["pw2_b", "m2"], ["a2"], name="pw2_bias"),
        helper.make_node("Transpose", ["a2"], ["t2"], name="to_first", perm=[0, 3, 1, 2]),
        helper.make_node("Mul", ["layer_scale", "t2"], ["ls"], name="layer_scale"),
        helper.make_node("Add", ["ls", "s"], ["res"], name="residual"),
        helper.make_node("GlobalAveragePool", ["res"], ["gap"], name="gap"),
    ]
    if head_2d:
        nodes.append(helper.make_node("Flatten", ["gap"], ["fl"], name="flat"))
        nodes += (written_ln("head_norm", "fl", "hn", 1, "head_norm.weight", square="Mul", scale_first=True)
                  if written else [helper.make_node("LayerNormalization", ["fl", "head_norm.weight"], ["hn"],
                                                    name="head_norm", axis=1, epsilon=1e-6)])
    else:
        nodes += [helper.make_node("Transpose", ["gap"], ["h1"], perm=[0, 2, 3, 1]),
                  helper.make_node("LayerNormalization", ["h1", "head_norm.weight", "head_norm.bias"], ["h2"],
                                   name="head_norm", axis=-1, epsilon=1e-6),
                  helper.make_node("Transpose", ["h2"], ["h3"], perm=[0, 3, 1, 2]),
                  helper.make_node("Flatten", ["h3"], ["hn"], name="flat")]
    nodes.append(helper.make_node("Gemm", ["hn", "fc.weight", "fc.bias"], ["out"], name="fc", transB=1))
    return om.model(nodes, [om.init(k, v) for k, v in P.items()], "x", "out", opset, name="convnext_block",
                    input_shape=(2, 3, 10, 10))


def layernorm(x, w, b, eps, axis):
    m = x.mean(axis, keepdims=True)
    v = ((x - m) ** 2).mean(axis, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def ref(x, head_2d):
    p = {k: v.astype(np.float64) for k, v in P.items()}
    s = om.conv(x, p["stem.weight"], p["stem.bias"], stride=(2, 2))
    y = om.conv(s, p["dw.weight"], p["dw.bias"], pads=(3, 3, 3, 3), group=CH).transpose(0, 2, 3, 1)
    y = layernorm(y, p["norm.weight"], p["norm.bias"], 1e-6, -1) @ p["pw1_w"] + p["pw1_b"]
    y = y / 2 * (1 + erf(y / math.sqrt(2)))
    y = (y @ p["pw2_w"] + p["pw2_b"]).transpose(0, 3, 1, 2)
    y = p["layer_scale"] * y + s
    g = y.mean(axis=(2, 3))
    hb = np.zeros(CH) if head_2d else p["head_norm.bias"]
    g = layernorm(g, p["head_norm.weight"], hb, 1e-6, 1)
    return g @ p["fc.weight"].T + p["fc.bias"]


for name, opset, gelu_op, head_2d, written in [("h17", 17, False, False, False), ("h20", 20, True, True, False),
                                               ("h16", 16, False, True, True)]:
    m = convnext(opset, gelu_op, head_2d, written)
    if opset <= onnx.defs.onnx_opset_version():  # Debian's onnx 1.12 checks opsets up to 17
        onnx.checker.check_model(m)
    onnx.save(m, path(name + ".onnx"))
    x = rng.randn(2, 3, 10, 10).astype(np.float32)
    np.save(path(name + "_x.npy"), x)
    want = ref(x.astype(np.float64), head_2d)
    for dev in ("cpu", "emu"):
        kt.kiln("run", path(name + ".onnx"), "--device", dev, "--input", path(name + "_x.npy"), "-o",
                path(name + dev + ".npy"))
        if os.path.exists(path(name + dev + ".npy")):
            err = kt.rel(np.load(path(name + dev + ".npy")), want)
            # On emu the cost model may put the 1x1 convs on tf32 (h200's L2 ceiling prices the
            # exact kernels dearer): tf32's tolerance, still far below a layout mistake's O(1).
            tol = TOL if dev == "cpu" else TOL_TF32
            print(f"{name} (opset {opset}) on {dev}: relative error {err:.2e} (tolerance {tol})")
            kt.check(err < tol, f"{name} on {dev}: output differs from NumPy: {err}")
    # The region is layers on kiln's NCHW tensors: a layernorm, two 1x1 convs (their bias
    # from the Add), the GELU fused into the first; the layer scale folded into the second.
    kt.kiln("import", path(name + ".onnx"), "-o", path(name + ".json"), "--weights-out", path(name + ".st"))
    layers = json.load(open(path(name + ".json")))["layers"]
    ops = [(l["op"], l.get("kernel"), l.get("bias")) for l in layers]
    kt.check(sum(o[0] == "layernorm" for o in ops) == 2, f"{name}: two layernorm layers: {ops}")
    kt.check(sum(o[0] == "conv2d" and o[1] == 1 for o in ops) == 2, f"{name}: MatMuls as 1x1 convs: {ops}")
    kt.check(not any(o[0] == "mul" for o in ops), f"{name}: layer scale folded: {ops}")
    for gpu in ("h100", "t4"):
        out = path(f"gen_{name}_{gpu}")
        kt.kiln("generate", path(name + ".onnx"), "--gpu", gpu, "-o", out)
        man = json.load(open(os.path.join(out, "manifest.json")))
        kt.check(not man.get("library_steps"), f"{name} on {gpu}: cuDNN steps {man.get('library_steps')}")
        fams = {k["family"] for k in man["kernels"] if k.get("chosen", True)}
        kt.check("layernorm_forward" in fams, f"{name} on {gpu}: a layernorm kernel: {sorted(fams)}")

# ---- LayerNorm2d over the channels of an NCHW activation, written out (ConvNeXt's own
# "channels_first" LayerNorm: mean over axis 1, scale and bias [C, 1, 1]): one layernorm.
L = {"stem.weight": P["stem.weight"], "stem.bias": P["stem.bias"], "w_c": pos(CH, 1, 1), "b_c": r(CH, 1, 1)}
nodes_l = ([helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", strides=[2, 2])] +
           written_ln("ln2d", "s", "l", 1, "w_c", "b_c", eps=1e-5, scale_first=True) +
           [helper.make_node("Relu", ["l"], ["out"])])
ml = om.model(nodes_l, [om.init(k, v) for k, v in L.items()], "x", "out", 13, name="ln2d",
              input_shape=(2, 3, 10, 10), output_shape=("N", CH, 5, 5))
onnx.checker.check_model(ml)
onnx.save(ml, path("l.onnx"))
xl = rng.randn(2, 3, 10, 10).astype(np.float32)
np.save(path("l_x.npy"), xl)
pl = {k: v.astype(np.float64) for k, v in L.items()}
sl = om.conv(xl.astype(np.float64), pl["stem.weight"], pl["stem.bias"], stride=(2, 2))
want = np.maximum(layernorm(sl, pl["w_c"], pl["b_c"], 1e-5, 1), 0)
for dev in ("cpu", "emu"):
    kt.kiln("run", path("l.onnx"), "--device", dev, "--input", path("l_x.npy"), "-o", path(f"l_{dev}.npy"))
    if os.path.exists(path(f"l_{dev}.npy")):
        err = kt.rel(np.load(path(f"l_{dev}.npy")), want)
        print(f"written-out NCHW layer norm on {dev}: relative error {err:.2e} (tolerance {TOL})")
        kt.check(err < TOL, f"written-out NCHW layer norm on {dev}: output differs from NumPy: {err}")
kt.kiln("import", path("l.onnx"), "-o", path("l.json"))
ops = [l["op"] for l in json.load(open(path("l.json")))["layers"]]
kt.check(ops == ["conv2d", "layernorm", "relu"], f"written-out NCHW layer norm: one layernorm: {ops}")

# ---- Per-channel constants folded into the layer before them: Add into a conv that has a
# bias, Sub of [1, C, 1, 1], Div by [C, 1, 1], Sub of a scalar after the classifier.
Q = {"q.weight": r(CH, 3, 3, 3) * 0.5, "q.bias": r(CH), "q_add": r(CH, 1, 1), "q_sub": r(1, CH, 1, 1),
     "q_div": pos(CH, 1, 1), "qfc.weight": r(4, CH) * 0.5, "qfc.bias": r(4), "q_s": np.float32(0.25)}
nodes_q = [helper.make_node("Conv", ["x", "q.weight", "q.bias"], ["q1"], name="q", pads=[1, 1, 1, 1]),
           helper.make_node("Add", ["q_add", "q1"], ["q2"]), helper.make_node("Sub", ["q2", "q_sub"], ["q3"]),
           helper.make_node("Div", ["q3", "q_div"], ["q4"]), helper.make_node("Relu", ["q4"], ["q5"]),
           helper.make_node("GlobalAveragePool", ["q5"], ["q6"]), helper.make_node("Flatten", ["q6"], ["q7"]),
           helper.make_node("Gemm", ["q7", "qfc.weight", "qfc.bias"], ["q8"], name="qfc", transB=1),
           helper.make_node("Sub", ["q8", "q_s"], ["out"])]
mq = om.model(nodes_q, [om.init(k, v) for k, v in Q.items()], "x", "out", 17, name="folds",
              input_shape=(2, 3, 6, 6))
onnx.checker.check_model(mq)
onnx.save(mq, path("q.onnx"))
xq = rng.randn(2, 3, 6, 6).astype(np.float32)
np.save(path("q_x.npy"), xq)
p = {k: np.asarray(v, np.float64) for k, v in Q.items()}
y = om.conv(xq.astype(np.float64), p["q.weight"], p["q.bias"], pads=(1, 1, 1, 1))
y = np.maximum((y + p["q_add"] - p["q_sub"]) / p["q_div"], 0).mean(axis=(2, 3))
want = y @ p["qfc.weight"].T + p["qfc.bias"] - p["q_s"]
kt.kiln("run", path("q.onnx"), "--input", path("q_x.npy"), "-o", path("q_y.npy"))
if os.path.exists(path("q_y.npy")):
    err = kt.rel(np.load(path("q_y.npy")), want)
    print(f"per-channel constants folded: relative error {err:.2e} (tolerance {TOL})")
    kt.check(err < TOL, f"folds: output differs from NumPy: {err}")
kt.kiln("import", path("q.onnx"), "-o", path("q.json"))
ops = [l["op"] for l in json.load(open(path("q.json")))["layers"]]
kt.check(ops == ["conv2d", "relu", "global_avgpool", "flatten", "linear"], f"folds: every constant folded: {ops}")

# ---- A region kiln cannot map is an error naming the node.
base = [helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", strides=[2, 2])]
inits = [om.init(k, P[k]) for k in ("stem.weight", "stem.bias", "norm.weight", "norm.bias")] + [
    om.init("norm.weight_c", P["norm.weight"].reshape(CH, 1, 1))]


def refused(tag, nodes, out, *fragments, out_shape=("N", CH, 5, 5)):
    m = om.model(base + nodes, inits, "x", out, 17, input_shape=(2, 3, 10, 10), output_shape=out_shape)
    onnx.save(m, path(tag + ".onnx"))
    kt.expect_error(["import", path(tag + ".onnx"), "-o", path(tag + ".json")], *fragments)


refused("perm", [helper.make_node("Transpose", ["s"], ["t"], name="odd", perm=[0, 2, 1, 3]),
                 helper.make_node("Relu", ["t"], ["y"])], "y", 'node "odd" (Transpose)', "[0, 2, 1, 3]")
refused("reader", [helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 3, 1]),
                   helper.make_node("Softmax", ["t"], ["y"], name="sm", axis=-1)], "y", 'node "sm" (Softmax)',
        "channels-last", "Transpose(0, 3, 1, 2)")
refused("output", [helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 3, 1]),
                   helper.make_node("Relu", ["t"], ["y"])], "y", 'output "y"', "channels-last")
refused("nchw_ln", [helper.make_node("LayerNormalization", ["s", "norm.weight", "norm.bias"], ["y"], name="ln",
                                     axis=1)], "y", 'node "ln" (LayerNormalization)', "axis")
refused("nchw_matmul", [helper.make_node("MatMul", ["s", "norm.weight"], ["y"], name="mm")], "y",
        'node "mm" (MatMul)', "Transpose(0, 2, 3, 1)")
refused("scale_nc", [helper.make_node("GlobalAveragePool", ["s"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
                     helper.make_node("Relu", ["f"], ["r"]),
                     helper.make_node("Mul", ["r", "norm.weight"], ["y"], name="scale")], "y",
        'node "scale" (Mul)', "[N, C]", out_shape=("N", CH))

# ---- A per-channel scale or shift no layer before it can absorb runs as its own layer (a
# 1x1 depthwise conv): the input's normalisation (x - mean) / std, and a scale of a value
# something else reads too; the Div after the Sub folds into the layer the Sub made.
A = {"mean": r(1, 3, 1, 1), "std": pos(1, 3, 1, 1), "c.weight": r(CH, 3, 3, 3) * 0.4, "c.bias": r(CH),
     "k": r(CH, 1, 1), "t": r(1, CH, 1, 1)}
nodes_a = [helper.make_node("Sub", ["x", "mean"], ["x1"], name="norm_sub"),
           helper.make_node("Div", ["x1", "std"], ["x2"], name="norm_div"),
           helper.make_node("Conv", ["x2", "c.weight", "c.bias"], ["c"], name="c", pads=[1, 1, 1, 1]),
           helper.make_node("Relu", ["c"], ["r"]),
           helper.make_node("Mul", ["r", "k"], ["m"], name="scale"),
           helper.make_node("Add", ["m", "r"], ["s2"], name="residual"),
           helper.make_node("Add", ["s2", "t"], ["out"], name="shift")]
ma = om.model(nodes_a, [om.init(k, v) for k, v in A.items()], "x", "out", 13, name="affine",
              input_shape=(2, 3, 6, 6), output_shape=("N", CH, 6, 6))
onnx.checker.check_model(ma)
onnx.save(ma, path("a.onnx"))
xa = rng.randn(2, 3, 6, 6).astype(np.float32)
np.save(path("a_x.npy"), xa)
pa = {k: v.astype(np.float64) for k, v in A.items()}
ya = np.maximum(om.conv((xa - pa["mean"]) / pa["std"], pa["c.weight"], pa["c.bias"], pads=(1, 1, 1, 1)), 0)
want = ya * pa["k"] + ya + pa["t"]
for dev in ("cpu", "emu"):
    kt.kiln("run", path("a.onnx"), "--device", dev, "--input", path("a_x.npy"), "-o", path(f"a_{dev}.npy"))
    if os.path.exists(path(f"a_{dev}.npy")):
        err = kt.rel(np.load(path(f"a_{dev}.npy")), want)
        tol = TOL if dev == "cpu" else TOL_TF32
        print(f"standalone per-channel scale and shift on {dev}: relative error {err:.2e} (tolerance {tol})")
        kt.check(err < tol, f"standalone per-channel affine on {dev}: output differs from NumPy: {err}")
kt.kiln("import", path("a.onnx"), "-o", path("a.json"))
layers = json.load(open(path("a.json")))["layers"]
dw = [l["name"] for l in layers if l["op"] == "conv2d" and l.get("groups", 1) > 1]
kt.check(len(dw) == 3, f"three 1x1 depthwise layers (normalisation, scale, shift): {[l['op'] for l in layers]}")
for gpu in ("h100", "t4"):
    out = path(f"gen_a_{gpu}")
    kt.kiln("generate", path("a.onnx"), "--gpu", gpu, "--dtype", "f16", "-o", out)
    man = json.load(open(os.path.join(out, "manifest.json")))
    kt.check(not man.get("library_steps"), f"affine on {gpu}: cuDNN steps {man.get('library_steps')}")
kt.finish()
