"""ReduceSum, ReduceMean and ReduceMax (onnx.helper, no PyTorch) over channels, spatial axes
and both, keepdims 0 and 1, negative axes, axes as an attribute (ReduceSum before opset 13,
ReduceMean and ReduceMax before 18) and as an input after, noop_with_empty_axes. Each model is
a conv then the reduction (its output the model's, of the rank ONNX gives, or followed by a
Gemm); kiln's cpu output and the generated kernels on the emulator must equal NumPy
(float64) within 1e-5 relative. ReduceMean and ReduceMax over exactly H and W stay global
pools (faster kernels); `kiln generate` for h100 and t4 emits reduce kernels (no cuDNN); the
axes kiln cannot reduce (N, all axes, out of range, twice) are errors naming the node."""
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
d = kt.tmpdir()
path = lambda name: os.path.join(d, name)
rng = np.random.RandomState(31)
r = lambda *s: rng.randn(*s).astype(np.float32)
I = lambda name, v: helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_t", TensorProto.INT64,
                                                                                     [len(v)], v))
C, N, H, W = 6, 2, 5, 7
P = {"stem.weight": r(C, 3, 3, 3) * 0.4, "stem.bias": r(C)}
INITS = [om.init(k, v) for k, v in P.items()]
NP = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max}
KIND = {"ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceMax": "reduce_max"}
# Where the axes move from an attribute to an input.
AXES_INPUT = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18}


def stem(x):
    return om.conv(x, P["stem.weight"].astype(np.float64), P["stem.bias"].astype(np.float64), pads=(1, 1, 1, 1))


def reduce_node(op, opset, axes, keep, extra=None):
    """The reduction of "s" into "y", axes as the opset wants them (None: no axes at all)."""
    kw = dict(extra or {})
    if keep is not None:
        kw["keepdims"] = keep
    if opset >= AXES_INPUT[op]:
        if axes is None:
            return [helper.make_node(op, ["s"], ["y"], name="red", **kw)]
        return [I("axes", axes), helper.make_node(op, ["s", "axes"], ["y"], name="red", **kw)]
    if axes is not None:
        kw["axes"] = axes
    return [helper.make_node(op, ["s"], ["y"], name="red", **kw)]


def build(op, opset, axes, keep, extra=None, out_shape=None):
    nodes = [helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", pads=[1, 1, 1, 1])]
    nodes += reduce_node(op, opset, axes, keep, extra)
    return om.model(nodes, INITS, "x", "y", opset, name="reduce", input_shape=(N, 3, H, W),
                    output_shape=out_shape or ["N", "K"])


def run(tag, m, want, devices=("cpu", "emu")):
    out = m.graph.output[0]  # declared as NumPy's shape, the batch axis symbolic
    out.CopyFrom(helper.make_tensor_value_info(out.name, TensorProto.FLOAT, ["N"] + list(want.shape[1:])))
    if m.opset_import[0].version <= onnx.defs.onnx_opset_version():  # Debian's onnx 1.12 checks up to 17
        onnx.checker.check_model(m)
    onnx.save(m, path(tag + ".onnx"))
    for dev in devices:
        kt.kiln("run", path(tag + ".onnx"), "--device", dev, "--input", path("x.npy"), "-o", path(tag + dev + ".npy"))
        if os.path.exists(path(tag + dev + ".npy")):
            got = np.load(path(tag + dev + ".npy"))
            kt.check(got.shape == want.shape, f"{tag} on {dev}: shape {got.shape}, NumPy's {want.shape}")
            if got.shape == want.shape:
                err = kt.rel(got, want)
                print(f"{tag} on {dev}: relative error {err:.2e} (tolerance {TOL})")
                kt.check(err < TOL, f"{tag} on {dev}: output differs from NumPy: {err}")
    kt.kiln("import", path(tag + ".onnx"), "-o", path(tag + ".json"), "--weights-out", path(tag + ".st"))
    return [l["op"] for l in json.load(open(path(tag + ".json")))["layers"]]


x = rng.randn(N, 3, H, W).astype(np.float32)
np.save(path("x.npy"), x)
s = stem(x.astype(np.float64))

# (op, opset, axes, keepdims): channels, spatial, both, negative axes, each output rank.
CASES = [
    ("ReduceSum", 11, [1], 1), ("ReduceSum", 13, [-3], 0), ("ReduceSum", 18, [2, 3], 0),
    ("ReduceSum", 13, [1, 2, 3], 1), ("ReduceMean", 13, [1], 0), ("ReduceMean", 18, [-1], 1),
    ("ReduceMean", 18, [1, -2, -1], 0), ("ReduceMean", 11, [1, 3], 1), ("ReduceMax", 13, [1], 1),
    ("ReduceMax", 18, [1], 0), ("ReduceMax", 18, [2], 0), ("ReduceMax", 12, [-3, -1], 0),
]
for op, opset, axes, keep in CASES:
    norm = tuple(sorted(a % 4 for a in axes))
    want = NP[op](s, axis=norm, keepdims=bool(keep))
    tag = f"{op}{opset}_{'_'.join(map(str, norm))}_k{keep}"
    ops = run(tag, build(op, opset, axes, keep), want)
    kt.check(KIND[op] in ops, f"{tag}: a {KIND[op]} layer: {ops}")

# Over exactly H and W: ReduceMean and ReduceMax stay global pools (with a flatten without
# keepdims); ReduceSum has no pool and is a reduce_sum.
for op, pool in (("ReduceMean", "global_avgpool"), ("ReduceMax", "maxpool2d")):
    for opset, keep in ((13, 1), (18, 0)):
        want = NP[op](s, axis=(2, 3), keepdims=bool(keep))
        ops = run(f"{op}{opset}_pool_k{keep}", build(op, opset, [-2, -1], keep), want, devices=("cpu",))
        kt.check(pool in ops and KIND[op] not in ops, f"{op} over H, W: a {pool}: {ops}")

# keepdims defaults to 1; noop_with_empty_axes with no axes is the input itself.
ops = run("sum_default_keep", build("ReduceSum", 13, [1], None), s.sum(axis=1, keepdims=True))
ops = run("sum_noop", build("ReduceSum", 13, None, 0, {"noop_with_empty_axes": 1}), s)
kt.check(not any(o.startswith("reduce") for o in ops), f"noop_with_empty_axes: no reduce layer: {ops}")
ops = run("mean18_noop", build("ReduceMean", 18, None, 1, {"noop_with_empty_axes": 1}), s, devices=("cpu",))

# [N, C] after a Flatten: the sum over the features (output [N]).
nodes = [helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", pads=[1, 1, 1, 1]),
         helper.make_node("GlobalAveragePool", ["s"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
         I("axes", [1]), helper.make_node("ReduceSum", ["f", "axes"], ["y"], name="red", keepdims=0)]
run("sum_features", om.model(nodes, INITS, "x", "y", 13, input_shape=(N, 3, H, W), output_shape=["N"]),
    s.mean(axis=(2, 3)).sum(axis=1))

# A reduction feeding more layers: squeeze-excite's channel-mean gate as ReduceMean over C,
# then a Gemm after ReduceSum over H, W.
nodes = [helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", pads=[1, 1, 1, 1]),
         I("axes", [2, 3]), helper.make_node("ReduceSum", ["s", "axes"], ["p"], name="red", keepdims=0),
         helper.make_node("Gemm", ["p", "fc.weight"], ["y"], name="fc", transB=1)]
Wfc = r(4, C) * 0.5
m = om.model(nodes, INITS + [om.init("fc.weight", Wfc)], "x", "y", 13, input_shape=(N, 3, H, W))
run("sum_fc", m, s.sum(axis=(2, 3)) @ Wfc.T.astype(np.float64))
for gpu in ("h100", "t4"):
    out = path(f"gen_{gpu}")
    kt.kiln("generate", path("sum_fc.onnx"), "--gpu", gpu, "-o", out)
    man = json.load(open(os.path.join(out, "manifest.json")))
    kt.check(not man.get("library_steps"), f"sum_fc on {gpu}: cuDNN steps {man.get('library_steps')}")
    fams = {k["family"] for k in man["kernels"]}
    kt.check("reduce" in fams, f"sum_fc on {gpu}: reduce kernels: {sorted(fams)}")


# Inside a channels-last region (after Transpose(0, 2, 3, 1)) the axes are [N, H, W, C]'s:
# over H, W with keepdims then back to NCHW; over the channels (-1) then back; over H, W
# without keepdims to [N, C] (a ConvNeXt-style head), the model's output.
T = lambda i, o, perm: helper.make_node("Transpose", [i], [o], perm=perm)
sl = s.transpose(0, 2, 3, 1)
for tag, op, axes, keep, back, want in [
        ("cl_mean_hw", "ReduceMean", [1, 2], 1, True, sl.mean(axis=(1, 2), keepdims=True).transpose(0, 3, 1, 2)),
        ("cl_max_c", "ReduceMax", [-1], 1, True, sl.max(axis=3, keepdims=True).transpose(0, 3, 1, 2)),
        ("cl_sum_hw", "ReduceSum", [1, 2], 0, False, sl.sum(axis=(1, 2))),
        ("cl_sum_wc", "ReduceSum", [2, 3], 1, True, sl.sum(axis=(2, 3), keepdims=True).transpose(0, 3, 1, 2))]:
    nodes = [helper.make_node("Conv", ["x", "stem.weight", "stem.bias"], ["s"], name="stem", pads=[1, 1, 1, 1]),
             T("s", "t", [0, 2, 3, 1]), I("axes", axes),
             helper.make_node(op, ["t", "axes"], ["r" if back else "y"], name="red", keepdims=keep)]
    if back:
        nodes.append(T("r", "y", [0, 3, 1, 2]))
    ops = run(tag, om.model(nodes, INITS, "x", "y", 18, input_shape=(N, 3, H, W)), want)
    kt.check(any(o.startswith("reduce") or o in ("global_avgpool", "maxpool2d") for o in ops), f"{tag}: {ops}")

# ---- What kiln cannot reduce is an error naming the node.
def refused(tag, m, *fragments):
    onnx.save(m, path(tag + ".onnx"))
    kt.expect_error(["import", path(tag + ".onnx"), "-o", path(tag + ".json")], *fragments)


refused("batch", build("ReduceSum", 13, [0, 1], 1), 'node "red" (ReduceSum)', "never N")
refused("all", build("ReduceMax", 18, None, 0), 'node "red" (ReduceMax)', "axes [all]")
refused("range", build("ReduceMean", 13, [4], 1), 'node "red" (ReduceMean)', "out of range")
refused("twice", build("ReduceSum", 11, [1, -3], 1), 'node "red" (ReduceSum)', "twice")
refused("keep2", build("ReduceSum", 11, [1], 2), 'node "red" (ReduceSum)', "keepdims")
refused("attr18", build("ReduceMean", 18, [1], 1, {"axes": [1]}), 'node "red" (ReduceMean)', "axes")
kt.finish()
