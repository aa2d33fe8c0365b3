"""ONNX models built with onnx.helper (no PyTorch) that use every operator kiln imports;
kiln's cpu output must equal an independent NumPy (float64) computation within 1e-5
relative, through `kiln run MODEL.onnx` (weights from the initializers), through
`kiln import` + `kiln run --weights`, and (model A) through the generated kernels on the
emulator. Also: PyTorch state_dict names kept as weight names, `kiln inspect` and
`kiln build` on .onnx, `kiln import --help`."""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import kiln_test as kt  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import onnx_models as om  # noqa: E402

TOL = 1e-5
d = kt.tmpdir()
path = lambda name: os.path.join(d, name)
rng = np.random.RandomState(13)
r = lambda *s: rng.randn(*s).astype(np.float32)
pos = lambda *s: (rng.rand(*s) + 0.5).astype(np.float32)

# ---- Model A (opset 13): convolutions, pools, residual add, concat, resize, shape arithmetic
P = {"conv1.weight": r(8, 3, 3, 3) * 0.3, "conv1.bias": r(8), "bn1.weight": pos(8), "bn1.bias": r(8),
     "bn1.running_mean": r(8) * 0.1, "bn1.running_var": pos(8), "conv2.weight": r(8, 4, 3, 3) * 0.3,
     "conv3.weight": r(8, 8, 3, 3) * 0.2, "conv3.bias": r(8), "fc1.weight": r(10, 16) * 0.3,
     "fc1.bias": r(10), "fc2_w": r(10, 6) * 0.3, "fc2_b": r(6)}
C = lambda name, v, dt=TensorProto.INT64: helper.make_node(
    "Constant", [], [name], value=helper.make_tensor(name + "_t", dt, [len(v)] if isinstance(v, list) else [],
                                                     v if isinstance(v, list) else [v]))
nodes = [
    helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c1"], name="conv1", pads=[1, 0, 2, 1]),
    helper.make_node("BatchNormalization", ["c1", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"],
                     ["b1"], name="bn1", epsilon=1e-5),
    helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    helper.make_node("Conv", ["p1", "conv2.weight"], ["c2"], name="conv2", group=2, strides=[2, 2],
                     auto_pad="SAME_UPPER"),
    helper.make_node("Conv", ["p1", "conv3.weight", "conv3.bias"], ["c3"], name="conv3", strides=[2, 2],
                     dilations=[2, 2], pads=[2, 2, 2, 2]),
    helper.make_node("Add", ["c2", "c3"], ["a1"], name="add1"),
    helper.make_node("Relu", ["a1"], ["r2"], name="relu2"),
    helper.make_node("AveragePool", ["r2"], ["ap1"], name="avg1", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                     count_include_pad=1),
    helper.make_node("Concat", ["ap1", "r2"], ["cat"], name="cat", axis=1),
    C("scales", [1.0, 1.0, 2.0, 2.0], TensorProto.FLOAT),
    helper.make_node("Resize", ["cat", "", "scales"], ["up"], name="up", mode="nearest"),
    helper.make_node("AveragePool", ["up"], ["ap2"], name="avg2", kernel_shape=[3, 3], strides=[2, 2],
                     pads=[1, 1, 1, 1]),
    helper.make_node("GlobalAveragePool", ["ap2"], ["gap"], name="gap"),
    # The shape arithmetic an exporter writes for x.view(x.size(0), -1), and then some.
    helper.make_node("Shape", ["gap"], ["shape"]),
    C("zero", 0), C("one", [1]), C("two", [2]), C("zeros", [0]), C("axes0", [0]),
    helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
    helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
    helper.make_node("Slice", ["shape", "one", "two"], ["chan"]),
    helper.make_node("Cast", ["chan"], ["chan64"], to=TensorProto.INT64),
    helper.make_node("Mul", ["chan64", "one"], ["m"]),
    helper.make_node("Div", ["m", "one"], ["dv"]),
    helper.make_node("Sub", ["dv", "zeros"], ["feat"]),
    helper.make_node("Concat", ["batch1", "feat"], ["target"], axis=0),
    helper.make_node("Reshape", ["gap", "target"], ["flat"], name="flatten"),
    helper.make_node("Gemm", ["flat", "fc1.weight", "fc1.bias"], ["f1"], name="fc1", transB=1),
    C("clip_min", 0.0, TensorProto.FLOAT),
    helper.make_node("Clip", ["f1", "clip_min"], ["cl"], name="clip"),
    helper.make_node("MatMul", ["cl", "fc2_w"], ["mm"], name="fc2"),
    helper.make_node("Add", ["mm", "fc2_b"], ["f2"], name="fc2_bias"),
    helper.make_node("Dropout", ["f2"], ["dr"], name="drop"),
    helper.make_node("Identity", ["dr"], ["id"], name="ident"),
    helper.make_node("Softmax", ["id"], ["prob"], name="softmax", axis=1),
]
A = om.model(nodes, [om.init(k, v) for k, v in P.items()], "image", "prob", 13, name="every_op_a")
onnx.checker.check_model(A)
onnx.save(A, path("a.onnx"))


def ref_a(x):
    p = {k: v.astype(np.float64) for k, v in P.items()}
    y = om.conv(x, p["conv1.weight"], p["conv1.bias"], pads=(1, 0, 2, 1))
    y = om.relu(om.batchnorm(y, p["bn1.weight"], p["bn1.bias"], p["bn1.running_mean"], p["bn1.running_var"]))
    p1 = om.maxpool(y, 2, 2, pads=(0, 0, 1, 1))  # ceil_mode: the last partial window
    c2 = om.conv(p1, p["conv2.weight"], stride=(2, 2), pads=(1, 0, 1, 1), group=2)  # SAME_UPPER
    c3 = om.conv(p1, p["conv3.weight"], p["conv3.bias"], stride=(2, 2), pads=(2, 2, 2, 2), dil=(2, 2))
    r2 = om.relu(c2 + c3)
    cat = np.concatenate([om.avgpool(r2, 3, 1, (1, 1, 1, 1), True), r2], axis=1)
    up = cat.repeat(2, axis=2).repeat(2, axis=3)
    ap2 = om.avgpool(up, 3, 2, (1, 1, 1, 1), False)
    flat = ap2.mean(axis=(2, 3))
    f1 = np.maximum(flat @ p["fc1.weight"].T + p["fc1.bias"], 0)
    return om.softmax(f1 @ p["fc2_w"] + p["fc2_b"])


# ---- Model B (opset 9): Upsample, Flatten, Squeeze, attribute-style axes, old Dropout
Q = {"stem.weight": r(4, 3, 3, 3) * 0.3, "stem.bias": r(4), "head.weight": r(4, 5) * 0.3, "head.bias": r(5),
     "cls.weight": r(3, 100) * 0.1, "cls.bias": r(3)}
nodes_b = [
    helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", kernel_shape=[3, 3],
                     auto_pad="SAME_LOWER", strides=[2, 2]),
    helper.make_node("Relu", ["s"], ["sr"], name="stem_relu"),
    C("up_scales", [1.0, 1.0, 3.0, 3.0], TensorProto.FLOAT),
    helper.make_node("Upsample", ["sr", "up_scales"], ["u"], name="upsample", mode="nearest"),
    helper.make_node("MaxPool", ["u"], ["mp"], name="mp", kernel_shape=[3, 3], strides=[3, 3], auto_pad="VALID"),
    helper.make_node("Flatten", ["mp"], ["fl"], name="flat", axis=1),
    helper.make_node("Gemm", ["fl", "cls.weight", "cls.bias"], ["logits"], name="cls", transB=1, alpha=0.5, beta=2.0),
    helper.make_node("Dropout", ["logits"], ["out"], name="drop", ratio=0.5),
]
# A second output path through GlobalAveragePool + Squeeze, checked through model B2.
B = om.model(nodes_b, [om.init(k, Q[k]) for k in ("stem.weight", "stem.bias", "cls.weight", "cls.bias")],
             "x", "out", 9, name="every_op_b", input_shape=(2, 3, 10, 10))
onnx.checker.check_model(B)
onnx.save(B, path("b.onnx"))
nodes_b2 = nodes_b[:2] + [
    helper.make_node("GlobalAveragePool", ["sr"], ["g"], name="gap"),
    helper.make_node("Squeeze", ["g"], ["sq"], name="squeeze", axes=[2, 3]),
    helper.make_node("Gemm", ["sq", "head.weight", "head.bias"], ["out"], name="head"),  # transB = 0
]
B2 = om.model(nodes_b2, [om.init(k, Q[k]) for k in ("stem.weight", "stem.bias", "head.weight", "head.bias")],
              "x", "out", 9, name="every_op_b2", input_shape=(2, 3, 10, 10))
onnx.checker.check_model(B2)
onnx.save(B2, path("b2.onnx"))


def stem(x):
    q = {k: v.astype(np.float64) for k, v in Q.items()}
    # SAME_LOWER, stride 2 on 10: out 5, total padding 1, at the beginning.
    return om.relu(om.conv(x, q["stem.weight"], q["stem.bias"], stride=(2, 2), pads=(1, 1, 0, 0))), q


def ref_b(x):
    s, q = stem(x)
    u = s.repeat(3, axis=2).repeat(3, axis=3)
    flat = om.maxpool(u, 3, 3).reshape(x.shape[0], -1)
    return 0.5 * flat @ q["cls.weight"].T + 2.0 * q["cls.bias"]


def ref_b2(x):
    s, q = stem(x)
    return s.mean(axis=(2, 3)) @ q["head.weight"] + q["head.bias"]


# ---- Model C (opset 14): HardSwish after a conv (fused into its epilogue on the emulator) and
# alone, after a global average pool.
R = {"hs_conv.weight": r(6, 3, 3, 3) * 0.8, "hs_conv.bias": r(6), "hs_fc.weight": r(4, 6) * 0.5,
     "hs_fc.bias": r(4)}
nodes_c = [
    helper.make_node("Conv", ["x", "hs_conv.weight", "hs_conv.bias"], ["hc"], name="hs_conv", pads=[1, 1, 1, 1]),
    helper.make_node("HardSwish", ["hc"], ["h1"], name="hswish1"),
    helper.make_node("GlobalAveragePool", ["h1"], ["hg"], name="gap"),
    helper.make_node("Flatten", ["hg"], ["hf"], name="flat", axis=1),
    helper.make_node("Gemm", ["hf", "hs_fc.weight", "hs_fc.bias"], ["hl"], name="hs_fc", transB=1),
    helper.make_node("HardSwish", ["hl"], ["out"], name="hswish2"),
]
Cm = om.model(nodes_c, [om.init(k, v) for k, v in R.items()], "x", "out", 14, name="every_op_c",
              input_shape=(2, 3, 8, 8))
onnx.checker.check_model(Cm)
onnx.save(Cm, path("c.onnx"))


def ref_c(x):
    p = {k: v.astype(np.float64) for k, v in R.items()}
    hswish = lambda v: v * np.clip(v + 3, 0, 6) / 6
    h = hswish(om.conv(x, p["hs_conv.weight"], p["hs_conv.bias"], pads=(1, 1, 1, 1)))
    return hswish(h.mean(axis=(2, 3)) @ p["hs_fc.weight"].T + p["hs_fc.bias"])


# ---- Model D (opset 13): the activations of mobile and efficient nets as exporters write
# them before HardSwish (14) and Gelu (20): ReLU6 as Clip(0, 6), SiLU as x * Sigmoid(x),
# HardSwish as x * HardSigmoid(x), GELU as x / sqrt 2 -> Erf -> + 1 -> * x -> * 0.5; each
# fuses into its conv's epilogue. HardSigmoid (ONNX's alpha) and Sigmoid alone after a pool
# and a linear, Clip(-1, 1) fused into the linear.
S = {"d1.weight": r(6, 3, 3, 3) * 0.9, "d1.bias": r(6), "d2.weight": r(6, 6, 1, 1) * 0.8,
     "d3.weight": r(6, 1, 3, 3) * 0.9, "d3.bias": r(6), "d4.weight": r(6, 6, 1, 1) * 0.8, "d4.bias": r(6),
     "dfc.weight": r(5, 6) * 0.9, "dfc.bias": r(5)}
F = lambda name, v: helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_t", TensorProto.FLOAT,
                                                                                     [], [v]))
nodes_d = [
    helper.make_node("Conv", ["x", "d1.weight", "d1.bias"], ["d1"], name="d1", pads=[1, 1, 1, 1]),
    F("zero", 0.0), F("six", 6.0),
    helper.make_node("Clip", ["d1", "zero", "six"], ["r6"], name="relu6"),
    helper.make_node("Conv", ["r6", "d2.weight"], ["d2"], name="d2"),
    helper.make_node("Sigmoid", ["d2"], ["d2s"], name="d2_sigmoid"),
    helper.make_node("Mul", ["d2", "d2s"], ["silu"], name="d2_mul"),
    helper.make_node("Conv", ["silu", "d3.weight", "d3.bias"], ["d3"], name="d3", pads=[1, 1, 1, 1], group=6),
    helper.make_node("HardSigmoid", ["d3"], ["d3g"], name="d3_gate", alpha=1.0 / 6, beta=0.5),
    helper.make_node("Mul", ["d3g", "d3"], ["hsw"], name="d3_mul"),
    helper.make_node("Conv", ["hsw", "d4.weight", "d4.bias"], ["d4"], name="d4"),
    F("sqrt2", 1.4142135381698608), F("one", 1.0), F("half", 0.5),
    helper.make_node("Div", ["d4", "sqrt2"], ["g1"], name="gelu_div"),
    helper.make_node("Erf", ["g1"], ["g2"], name="gelu_erf"),
    helper.make_node("Add", ["g2", "one"], ["g3"], name="gelu_add"),
    helper.make_node("Mul", ["d4", "g3"], ["g4"], name="gelu_mul"),
    helper.make_node("Mul", ["g4", "half"], ["gelu"], name="gelu_half"),
    helper.make_node("MaxPool", ["gelu"], ["dp"], name="dpool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("HardSigmoid", ["dp"], ["dh"], name="hsig"),
    helper.make_node("GlobalAveragePool", ["dh"], ["dg"], name="dgap"),
    helper.make_node("Flatten", ["dg"], ["df"], name="dflat"),
    helper.make_node("Gemm", ["df", "dfc.weight", "dfc.bias"], ["dl"], name="dfc", transB=1),
    F("m1", -1.0), F("p1", 1.0),
    helper.make_node("Clip", ["dl", "m1", "p1"], ["dc"], name="dclip"),
    helper.make_node("Sigmoid", ["dc"], ["out"], name="dsig"),
]
D = om.model(nodes_d, [om.init(k, v) for k, v in S.items()], "x", "out", 13, name="every_op_d",
             input_shape=(2, 3, 8, 8))
onnx.checker.check_model(D)
onnx.save(D, path("d.onnx"))

sigmoid = lambda v: 1 / (1 + np.exp(-v))
erf = np.vectorize(math.erf)


def ref_d(x):
    p = {k: v.astype(np.float64) for k, v in S.items()}
    y = np.clip(om.conv(x, p["d1.weight"], p["d1.bias"], pads=(1, 1, 1, 1)), 0, 6)
    y = om.conv(y, p["d2.weight"])
    y = y * sigmoid(y)
    y = om.conv(y, p["d3.weight"], p["d3.bias"], pads=(1, 1, 1, 1), group=6)
    y = y * np.clip(np.float32(1.0 / 6) * y + 0.5, 0, 1)
    y = om.conv(y, p["d4.weight"], p["d4.bias"])
    y = y / 2 * (1 + erf(y / math.sqrt(2)))
    y = np.clip(0.2 * om.maxpool(y, 2, 2) + 0.5, 0, 1)
    y = y.mean(axis=(2, 3)) @ p["dfc.weight"].T + p["dfc.bias"]
    return sigmoid(np.clip(y, -1, 1))


# ---- Model E (opset 21, as today's exporters write): Gelu in both forms, Resize of opset 18
# with axes, weights as external data beside the model (onnx.save_model's
# save_as_external_data, one file, as the dynamo exporter's m.onnx.data).
T = {"e1.weight": r(5, 3, 3, 3) * 0.8, "e1.bias": r(5), "e2.weight": r(5, 5, 3, 3) * 0.4, "e2.bias": r(5),
     "efc.weight": r(4, 5) * 0.7, "efc.bias": r(4)}
nodes_e = [
    helper.make_node("Conv", ["x", "e1.weight", "e1.bias"], ["e1"], name="e1", pads=[1, 1, 1, 1]),
    helper.make_node("Gelu", ["e1"], ["eg"], name="gelu"),
    helper.make_node("Conv", ["eg", "e2.weight", "e2.bias"], ["e2"], name="e2", strides=[2, 2]),
    helper.make_node("Gelu", ["e2"], ["et"], name="gelu_tanh", approximate="tanh"),
    C("escales", [2.0, 2.0], TensorProto.FLOAT),
    helper.make_node("Resize", ["et", "", "escales"], ["eu"], name="up", mode="nearest", axes=[2, 3],
                     coordinate_transformation_mode="asymmetric", nearest_mode="floor", antialias=0),
    helper.make_node("GlobalAveragePool", ["eu"], ["eap"], name="egap"),
    helper.make_node("Flatten", ["eap"], ["efl"], name="eflat"),
    helper.make_node("Gemm", ["efl", "efc.weight", "efc.bias"], ["out"], name="efc", transB=1),
]
E = om.model(nodes_e, [om.init(k, v) for k, v in T.items()], "x", "out", 21, name="every_op_e",
             input_shape=(2, 3, 9, 9))
onnx.save_model(E, path("e.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                location="e.onnx.data", size_threshold=0)
kt.check(os.path.exists(path("e.onnx.data")), "the weights are external data")
kt.check(not any(t.raw_data for t in onnx.load(path("e.onnx"), load_external_data=False).graph.initializer),
         "e.onnx holds no weight bytes")


def ref_e(x):
    p = {k: v.astype(np.float64) for k, v in T.items()}
    y = om.conv(x, p["e1.weight"], p["e1.bias"], pads=(1, 1, 1, 1))
    y = y / 2 * (1 + erf(y / math.sqrt(2)))
    y = om.conv(y, p["e2.weight"], p["e2.bias"], stride=(2, 2))
    y = y / 2 * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y ** 3)))
    y = y.repeat(2, axis=2).repeat(2, axis=3)
    return y.mean(axis=(2, 3)) @ p["efc.weight"].T + p["efc.bias"]


# ---- Model F (opset 18): squeeze-excite as torchvision's MobileNetV3 and EfficientNet export
# it (ReduceMean over H, W with its axes an input, 1x1 convs, the gate times the features as
# Mul broadcasting [N, C, 1, 1]), a Mul of two activations of one shape, ReduceMean without
# keepdims before the classifier. Model G (opset 11): ReduceMean's axes as an attribute.
U = {"f1.weight": r(8, 3, 3, 3) * 0.7, "f1.bias": r(8), "se1.weight": r(4, 8, 1, 1) * 0.8, "se1.bias": r(4),
     "se2.weight": r(8, 4, 1, 1) * 0.8, "se2.bias": r(8), "ffc.weight": r(3, 8) * 0.8, "ffc.bias": r(3)}
nodes_f = [
    helper.make_node("Conv", ["x", "f1.weight", "f1.bias"], ["f1"], name="f1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["f1"], ["fr"], name="f1_relu"),
    C("hw", [2, 3]),
    helper.make_node("ReduceMean", ["fr", "hw"], ["fs"], name="se_pool", keepdims=1),
    helper.make_node("Conv", ["fs", "se1.weight", "se1.bias"], ["fs1"], name="se1"),
    helper.make_node("Relu", ["fs1"], ["fs2"], name="se_relu"),
    helper.make_node("Conv", ["fs2", "se2.weight", "se2.bias"], ["fs3"], name="se2"),
    helper.make_node("HardSigmoid", ["fs3"], ["fg"], name="se_gate", alpha=1.0 / 6, beta=0.5),
    helper.make_node("Mul", ["fg", "fr"], ["fse"], name="se_mul"),
    helper.make_node("Mul", ["fse", "fr"], ["fsq"], name="square"),
    C("hw2", [-1, -2]),
    helper.make_node("ReduceMean", ["fsq", "hw2"], ["fm"], name="pool", keepdims=0),
    helper.make_node("Gemm", ["fm", "ffc.weight", "ffc.bias"], ["out"], name="ffc", transB=1),
]
Fm = om.model(nodes_f, [om.init(k, v) for k, v in U.items()], "x", "out", 18, name="every_op_f",
              input_shape=(2, 3, 7, 6))
onnx.save(Fm, path("f.onnx"))
nodes_g = [nodes_f[0], nodes_f[1],
           helper.make_node("ReduceMean", ["fr"], ["fm"], name="pool", axes=[2, 3], keepdims=0),
           nodes_f[-1]]
G = om.model(nodes_g, [om.init(k, U[k]) for k in ("f1.weight", "f1.bias", "ffc.weight", "ffc.bias")], "x", "out",
             11, name="every_op_g", input_shape=(2, 3, 7, 6))
onnx.checker.check_model(G)
onnx.save(G, path("g.onnx"))


def ref_f(x):
    p = {k: v.astype(np.float64) for k, v in U.items()}
    fr = om.relu(om.conv(x, p["f1.weight"], p["f1.bias"], pads=(1, 1, 1, 1)))
    s = om.relu(om.conv(fr.mean(axis=(2, 3), keepdims=True), p["se1.weight"], p["se1.bias"]))
    gate = np.clip(np.float32(1.0 / 6) * om.conv(s, p["se2.weight"], p["se2.bias"]) + 0.5, 0, 1)
    y = gate * fr * fr
    return y.mean(axis=(2, 3)) @ p["ffc.weight"].T + p["ffc.bias"]


def ref_g(x):
    p = {k: v.astype(np.float64) for k, v in U.items()}
    fr = om.relu(om.conv(x, p["f1.weight"], p["f1.bias"], pads=(1, 1, 1, 1)))
    return fr.mean(axis=(2, 3)) @ p["ffc.weight"].T + p["ffc.bias"]


def check_model(name, ref, shape, emu=False):
    x = r(*shape)
    np.save(path(name + "_x.npy"), x)
    want = ref(x.astype(np.float64))
    onnx_path = path(name + ".onnx")
    kt.kiln("run", onnx_path, "--input", path(name + "_x.npy"), "--output", path(name + "_y.npy"))
    err = kt.rel(np.load(path(name + "_y.npy")), want)
    print(f"{name}: kiln run {name}.onnx --device cpu: relative error {err:.2e} (tolerance {TOL})")
    kt.check(err < TOL, f"{name}: cpu output differs from NumPy: {err}")
    # The same through kiln import and --weights.
    out, _ = kt.kiln("import", onnx_path, "-o", path(name + ".json"), "--weights-out", path(name + ".safetensors"))
    kt.check("imported" in out, f"import prints a summary: {out}")
    kt.kiln("run", path(name + ".json"), "--weights", path(name + ".safetensors"), "--input", path(name + "_x.npy"),
            "--output", path(name + "_y2.npy"))
    kt.check(np.array_equal(np.load(path(name + "_y2.npy")), np.load(path(name + "_y.npy"))),
             f"{name}: import + --weights equals running the .onnx")
    if emu:
        # The kernels generated for a T4: f32 computed in f32 (an H200's would run small convs
        # on tensor cores in tf32, outside this test's 1e-5).
        kt.kiln("run", onnx_path, "--device", "emu", "--gpu", "t4", "--input", path(name + "_x.npy"),
                "--output", path(name + "_ye.npy"))
        err = kt.rel(np.load(path(name + "_ye.npy")), want)
        print(f"{name}: generated kernels on the emulator: relative error {err:.2e} (tolerance {TOL})")
        kt.check(err < TOL, f"{name}: emu output differs from NumPy: {err}")


check_model("a", ref_a, (2, 3, 12, 12), emu=True)
check_model("b", ref_b, (2, 3, 10, 10))
check_model("b2", ref_b2, (2, 3, 10, 10))
check_model("c", ref_c, (2, 3, 8, 8), emu=True)
check_model("d", ref_d, (2, 3, 8, 8), emu=True)
check_model("e", ref_e, (2, 3, 9, 9), emu=True)
check_model("f", ref_f, (2, 3, 7, 6), emu=True)
check_model("g", ref_g, (2, 3, 7, 6))
# Every activation of D and E in its producer's epilogue (the conv, the linear) but those
# after a pool and after another activation (an elementwise kernel each).
for name, fused, alone in (("d", {"clip": 2, "silu": 1, "hardswish": 1, "gelu": 1}, ["hardsigmoid", "sigmoid"]),
                           ("e", {"gelu": 1, "gelu_tanh": 1}, [])):
    kt.kiln("generate", path(name + ".onnx"), "--gpu", "h100", "-o", path("gen_" + name))
    st = [s for ph in json.load(open(path(f"gen_{name}/plan.json")))["phases"].values() for s in ph]
    got = {}
    for s in st:
        if s.get("activation"):
            got[s["activation"]] = got.get(s["activation"], 0) + 1
    kt.check(got == fused, f"{name}: fused activations {got}, expected {fused}")
    fns = sorted(s["fn"] for s in st if s["kind"] != "free" and s["fn"].split(".")[0] in
                 ("clip", "hardsigmoid", "sigmoid", "silu", "gelu", "gelu_tanh", "hardswish"))
    kt.check(fns == sorted(a + ".forward" for a in alone), f"{name}: standalone activations {fns}")
    if name == "d":
        clips = [s["activation_params"] for s in st if s.get("activation") == "clip"]
        kt.check(sorted(clips) == [[-1.0, 1.0], [0.0, 6.0]], f"clip bounds in plan.json: {clips}")
# Both HardSwish nodes fuse into their producers' epilogues (conv and linear).
kt.kiln("generate", path("c.onnx"), "--gpu", "h100", "-o", path("gen_c"))
steps = [s for ph in json.load(open(path("gen_c/plan.json")))["phases"].values() for s in ph]
fns = [s["fn"] for s in steps if s["kind"] != "free"]
kt.check("hardswish.forward" not in fns, f"HardSwish fused into its producers: {fns}")
kt.check(sum(s.get("activation") == "hardswish" for s in steps) == 2,
         f"two steps apply hardswish in their epilogue: {[s.get('activation') for s in steps]}")

# State_dict names kept; MatMul's weight (not a PyTorch name) takes the node's name.
w = kt.read_safetensors(path("a.safetensors"))
for k in ("conv1.weight", "conv1.bias", "bn1.weight", "bn1.running_mean", "bn1.running_var", "conv2.weight",
          "conv3.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
    kt.check(k in w, f"weight {k} in the imported weights: {sorted(w)}")
kt.check(np.array_equal(w["conv1.weight"], P["conv1.weight"]), "conv1.weight kept bit for bit")
kt.check(np.array_equal(w["fc2.weight"], P["fc2_w"].T), "MatMul's [in, out] weight stored as kiln's [out, in]")

# A symbolic batch takes --batch; inspect reads .onnx directly.
out, _ = kt.kiln("import", path("a.onnx"), "-o", path("a8.json"), "--batch", "8")
kt.check(json.load(open(path("a8.json")))["input"]["shape"] == [8, 3, 12, 12], "--batch sets the symbolic batch")
out, _ = kt.kiln("inspect", path("a.onnx"), "--batch", "4")
kt.check("conv1" in out and "fc2" in out, f"inspect of a .onnx file: {out}")
out, _ = kt.kiln("import", "--help")
kt.check("Examples" in out and "--weights-out" in out, f"import --help teaches: {out}")

# A per-model program straight from ONNX (kernels compiled with NVRTC; it runs where a GPU is).
out, _ = kt.kiln("build", path("b2.onnx"), "--gpu", "h100", "-o", path("b2_h100"))
kt.check(os.access(path("b2_h100"), os.X_OK), "kiln build of a .onnx file writes the program")
kt.check("--weights-out" in out, f"kiln build says where an ONNX model's weights go: {out}")
kt.finish()
