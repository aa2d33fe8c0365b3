"""ONNX models built with onnx.helper (no PyTorch) for the spatial operators: ConvTranspose
(stride, pads, output_padding, output_shape, groups, dilation, bias), Resize / Upsample
(nearest and linear under each coordinate rule PyTorch's exporters write, scales and sizes,
non-integer, up and down) and Pad (constant, reflect, edge; a zero Pad before a Conv folds
into its padding), over opsets 9 to 21. kiln's cpu output must equal an independent NumPy
(float64) computation within 1e-5 relative; H and I also through the generated kernels on
the emulator. Also: the refusals name what they refuse."""
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
rng = np.random.RandomState(19)
r = lambda *s: rng.randn(*s).astype(np.float32)


def const(name, v, dt=TensorProto.INT64):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_t", dt, [len(v)], v))


def save(m, name):
    # python3-onnx's checker knows the opsets it ships (Debian's 1.12: up to 17).
    if m.opset_import[0].version <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(m)
    onnx.save(m, path(name + ".onnx"))


# ---- Model H (opset 11, a UNet / FCN decoder): zero Pad + Conv, ConvTranspose stride 2 with
# output_padding, reflect Pad, Resize linear (pytorch_half_pixel) and nearest by sizes, Concat
H = {"c1.weight": r(4, 3, 3, 3) * 0.3, "c1.bias": r(4), "up.weight": r(4, 6, 3, 3) * 0.3, "up.bias": r(6)}
nodes_h = [
    const("zpads", [0, 0, 1, 1, 0, 0, 1, 1]),
    helper.make_node("Pad", ["x", "zpads"], ["xp"], name="zpad"),
    helper.make_node("Conv", ["xp", "c1.weight", "c1.bias"], ["c1"], name="c1"),
    helper.make_node("Relu", ["c1"], ["r1"], name="r1"),
    helper.make_node("ConvTranspose", ["r1", "up.weight", "up.bias"], ["t1"], name="up", strides=[2, 2],
                     pads=[1, 1, 1, 1], output_padding=[1, 1]),
    const("rpads", [0, 0, 1, 2, 0, 0, 2, 1]),
    helper.make_node("Pad", ["t1", "rpads"], ["tp"], name="rpad", mode="reflect"),
    const("sizes", [2, 6, 10, 12]),
    const("roi", [], TensorProto.FLOAT),
    const("noscales", [], TensorProto.FLOAT),
    helper.make_node("Resize", ["tp", "roi", "noscales", "sizes"], ["rs"], name="bilinear", mode="linear",
                     coordinate_transformation_mode="pytorch_half_pixel"),
    const("sizes2", [2, 4, 10, 12]),
    helper.make_node("Resize", ["r1", "roi", "noscales", "sizes2"], ["rn"], name="nearest", mode="nearest",
                     coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    helper.make_node("Concat", ["rs", "rn"], ["out"], name="cat", axis=1),
]
save(om.model(nodes_h, [om.init(k, v) for k, v in H.items()], "x", "out", 11, name="spatial_h",
              input_shape=(2, 3, 8, 8), output_shape=(2, 10, 10, 12)), "h")


def ref_h(x):
    p = {k: v.astype(np.float64) for k, v in H.items()}
    r1 = om.relu(om.conv(x, p["c1.weight"], p["c1.bias"], pads=(1, 1, 1, 1)))
    t1 = om.conv_transpose(r1, p["up.weight"], p["up.bias"], stride=(2, 2), pads=(1, 1, 1, 1), out_pad=(1, 1))
    tp = np.pad(t1, ((0, 0), (0, 0), (1, 2), (2, 1)), mode="reflect")
    rs = om.resize(tp, (10, 12), mode="linear", coord="pytorch_half_pixel")
    rn = om.resize(r1, (10, 12), mode="nearest", coord="asymmetric", nearest="floor")
    return np.concatenate([rs, rn], axis=1)


# ---- Model I (opset 18, as the dynamo exporter writes): Resize by scales (linear,
# align_corners; non-integer), ConvTranspose with groups, dilation, uneven strides and
# output_shape, Pad edge with axes, constant Pad with a value, Resize half_pixel by sizes
I = {"t.weight": r(4, 3, 3, 2) * 0.3, "t.bias": r(6), "c.weight": r(5, 6, 1, 1) * 0.3}
nodes_i = [
    const("sc", [1.0, 1.0, 1.5, 0.75], TensorProto.FLOAT),
    helper.make_node("Resize", ["x", "", "sc"], ["a"], name="ac", mode="linear",
                     coordinate_transformation_mode="align_corners"),
    helper.make_node("ConvTranspose", ["a", "t.weight", "t.bias"], ["t"], name="t", group=2, strides=[2, 3],
                     dilations=[2, 1], output_shape=[19, 15]),
    const("epads", [1, 0, 2, 3]), const("eaxes", [2, 3]),
    helper.make_node("Pad", ["t", "epads", "", "eaxes"], ["e"], name="edge", mode="edge"),
    const("cpads", [0, 0, 0, 2, 0, 0, 1, 0]),
    const("cval", [0.75], TensorProto.FLOAT),
    helper.make_node("Pad", ["e", "cpads", "cval"], ["cp"], name="cpad"),
    helper.make_node("Conv", ["cp", "c.weight"], ["cc"], name="c"),  # a non-zero pad: kept
    const("isz", [2, 5, 9, 11]),
    helper.make_node("Resize", ["cc", "", "", "isz"], ["out"], name="hp", mode="linear",
                     coordinate_transformation_mode="half_pixel"),
]
save(om.model(nodes_i, [om.init(k, v) for k, v in I.items()], "x", "out", 18, name="spatial_i",
              input_shape=(2, 4, 6, 8), output_shape=(2, 5, 9, 11)), "i")


def ref_i(x):
    p = {k: v.astype(np.float64) for k, v in I.items()}
    a = om.resize(x, (9, 6), scales=(1.5, 0.75), mode="linear", coord="align_corners")
    # output_shape [19, 15] of full extents (9-1)*2 + 2*2 + 1 = 21 and (6-1)*3 + 1 + 1 = 17:
    # one row and one column cropped at each side.
    t = om.conv_transpose(a, p["t.weight"], p["t.bias"], stride=(2, 3), dil=(2, 1), group=2,
                          pads=(1, 1, 1, 1))
    e = np.pad(t, ((0, 0), (0, 0), (1, 2), (0, 3)), mode="edge")
    cp = np.pad(e, ((0, 0), (0, 0), (0, 1), (2, 0)), constant_values=0.75)
    cc = om.conv(cp, p["c.weight"])
    return om.resize(cc, (9, 11), mode="linear", coord="half_pixel")


# ---- Model J (opset 10 and 9): Resize-10 and Upsample-9 linear (asymmetric), Pad-2's
# attributes, Resize-10 nearest downscaling (ceil, as ONNX Runtime before opset 11)
nodes_j = [
    const("js", [1.0, 1.0, 2.0, 2.5], TensorProto.FLOAT),
    helper.make_node("Resize", ["x", "js"], ["u"], name="lin10", mode="linear"),
    helper.make_node("Pad", ["u"], ["p"], name="pad2", mode="reflect", pads=[0, 0, 2, 1, 0, 0, 0, 3]),
    const("jd", [1.0, 1.0, 0.5, 0.5], TensorProto.FLOAT),
    helper.make_node("Resize", ["p", "jd"], ["out"], name="down10", mode="nearest"),
]
save(om.model(nodes_j, [], "x", "out", 10, name="spatial_j", input_shape=(2, 3, 5, 4),
              output_shape=(2, 3, 6, 7)), "j")


def ref_j(x):
    u = om.resize(x, (10, 10), scales=(2.0, 2.5), mode="linear", coord="asymmetric")
    p = np.pad(u, ((0, 0), (0, 0), (2, 0), (1, 3)), mode="reflect")
    return om.resize(p, (6, 7), scales=(0.5, 0.5), mode="nearest", coord="asymmetric", nearest="ceil")


nodes_j9 = [const("js", [1.0, 1.0, 2.0, 2.5], TensorProto.FLOAT),
            helper.make_node("Upsample", ["x", "js"], ["out"], name="up9", mode="linear")]
save(om.model(nodes_j9, [], "x", "out", 9, name="spatial_j9", input_shape=(2, 3, 5, 4),
              output_shape=(2, 3, 10, 10)), "j9")


def ref_j9(x):
    return om.resize(x, (10, 10), scales=(2.0, 2.5), mode="linear", coord="asymmetric")


# ---- Model K (opset 21): nearest-exact (half_pixel, round_prefer_ceil... as written) down
# by 0.5 and up by a non-integer 1.75 (asymmetric, floor: F.interpolate's nearest)
nodes_k = [
    const("kd", [1.0, 1.0, 0.5, 0.5], TensorProto.FLOAT),
    helper.make_node("Resize", ["x", "", "kd"], ["k1"], name="exact", mode="nearest",
                     coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil"),
    const("ku", [1.0, 1.0, 1.75, 1.75], TensorProto.FLOAT),
    helper.make_node("Resize", ["k1", "", "ku"], ["out"], name="near", mode="nearest",
                     coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
]
save(om.model(nodes_k, [], "x", "out", 21, name="spatial_k", input_shape=(2, 3, 9, 10),
              output_shape=(2, 3, 7, 8)), "k")


def ref_k(x):
    k1 = om.resize(x, (4, 5), scales=(0.5, 0.5), mode="nearest", coord="half_pixel", nearest="round_prefer_ceil")
    return om.resize(k1, (7, 8), scales=(1.75, 1.75), mode="nearest", coord="asymmetric", nearest="floor")


def check_model(name, ref, shape, emu=False):
    x = r(*shape)
    np.save(path(name + "_x.npy"), x)
    want = ref(x.astype(np.float64))
    kt.kiln("run", path(name + ".onnx"), "--input", path(name + "_x.npy"), "--output", path(name + "_y.npy"))
    got = np.load(path(name + "_y.npy"))
    kt.check(got.shape == want.shape, f"{name}: output shape {got.shape}, NumPy's {want.shape}")
    err = kt.rel(got, want) if got.shape == want.shape else float("inf")
    print(f"{name}: kiln run {name}.onnx --device cpu: relative error {err:.2e} (tolerance {TOL})")
    kt.check(err < TOL, f"{name}: cpu output differs from NumPy: {err}")
    if emu:
        kt.kiln("run", path(name + ".onnx"), "--device", "emu", "--input", path(name + "_x.npy"), "--output",
                path(name + "_ye.npy"))
        err = kt.rel(np.load(path(name + "_ye.npy")), want)
        print(f"{name}: generated kernels on the emulator: relative error {err:.2e} (tolerance {TOL})")
        kt.check(err < TOL, f"{name}: emu output differs from NumPy: {err}")


check_model("h", ref_h, (2, 3, 8, 8), emu=True)
check_model("i", ref_i, (2, 4, 6, 8), emu=True)
check_model("j", ref_j, (2, 3, 5, 4))
check_model("j9", ref_j9, (2, 3, 5, 4))
check_model("k", ref_k, (2, 3, 9, 10), emu=True)

# The zero Pad before c1 folded into its padding; the reflect pad and the 0.75 pad kept.
kt.kiln("import", path("h.onnx"), "-o", path("h.json"))
layers = {l["name"]: l for l in json.load(open(path("h.json")))["layers"]}
ops = sorted(l["op"] for l in layers.values())
kt.check(ops.count("pad") == 1, f"h: one pad layer (the zero pad folded): {ops}")
c1 = [l for l in layers.values() if l["op"] == "conv2d"][0]
kt.check(c1.get("padding") == 1, f"h: the zero pad is the conv's padding: {c1}")
kt.check(any(l["op"] == "conv_transpose2d" and l.get("output_padding") == 1 for l in layers.values()),
         f"h: ConvTranspose as conv_transpose2d with its output_padding: {layers}")
kt.kiln("import", path("i.onnx"), "-o", path("i.json"))
ops = sorted(l["op"] for l in json.load(open(path("i.json")))["layers"])
kt.check(ops.count("pad") == 2, f"i: both pads kept (edge, and a constant 0.75): {ops}")

# kiln generate for the H100 and the T4 (no cuDNN step), and the transposed conv's kernel is
# the conv data-gradient template with its bias.
for gpu in ("h100", "t4"):
    kt.kiln("generate", path("h.onnx"), "--gpu", gpu, "-o", path("gen_h_" + gpu))
    man = json.load(open(path(f"gen_h_{gpu}/manifest.json")))
    kt.check(not man.get("library_steps"), f"h on {gpu}: no library steps: {man.get('library_steps')}")
    names = [k["name"] for k in man["kernels"] if k.get("chosen", True)]
    kt.check(any(n.startswith("conv_transpose2d_") and "_bias_" in n for n in names),
             f"h on {gpu}: a conv_transpose2d kernel with its bias: {names}")
    kt.check(sum(n.startswith("resize_fwd") for n in names) == 2 and any(n.startswith("pad_fwd") for n in names),
             f"h on {gpu}: resize and pad kernels: {names}")

# A training step through every spatial op's backward (pad, resize, and the transposed conv's
# conv2d functions): the generated kernels on the emulator give the cpu's gradients.
np.save(path("h_t.npy"), rng.randint(0, 10, (2, 10, 12)).astype(np.int64))
grads = {}
for dev in ("cpu", "emu"):
    kt.kiln("run", path("h.onnx"), "--device", dev, "--gpu", "t4", "--train", "--input", path("h_x.npy"),
            "--target", path("h_t.npy"), "--grads", path(f"h_g_{dev}.safetensors"), "-o", path(f"h_t_{dev}.npy"))
    grads[dev] = kt.read_safetensors(path(f"h_g_{dev}.safetensors"))
kt.check(sorted(grads["cpu"]) == sorted(grads["emu"]) and len(grads["cpu"]) == 4, f"h: gradients {sorted(grads['cpu'])}")
for k in grads["cpu"]:
    err = kt.rel(grads["emu"][k], grads["cpu"][k])
    print(f"h: training gradient {k} on the emulator: relative error {err:.2e} (tolerance {TOL})")
    kt.check(err < TOL, f"h: {k} on emu differs from cpu: {err}")

# Refusals name what they refuse.
bad = [
    ("cubic", [helper.make_node("Resize", ["x", "", "s"], ["out"], mode="cubic")], 13, "mode"),
    ("crop", [helper.make_node("Resize", ["x", "", "s"], ["out"], mode="linear",
                               coordinate_transformation_mode="tf_crop_and_resize")], 13,
     "tf_crop_and_resize"),
    ("negpad", [helper.make_node("Pad", ["x", "np"], ["out"])], 13, "negative"),
    ("chanpad", [helper.make_node("Pad", ["x", "cp"], ["out"])], 13, "H and W only"),
    ("wrap", [helper.make_node("Pad", ["x", "np2"], ["out"], mode="wrap")], 19, "wrap"),
    ("odd", [helper.make_node("ConvTranspose", ["x", "tw"], ["out"], strides=[2, 2], output_shape=[10, 10])], 13,
     "even"),
    ("s2d", [helper.make_node("SpaceToDepth", ["x"], ["out"], blocksize=2)], 13, "does not divide"),
]
for name, nodes, opset, word in bad:
    extra = [const("s", [1.0, 1.0, 2.0, 2.0], TensorProto.FLOAT), const("np", [0, 0, -1, 0, 0, 0, 1, 0]),
             const("cp", [0, 1, 0, 0, 0, 0, 0, 0]), const("np2", [0, 0, 1, 0, 0, 0, 1, 0])]
    m = om.model(extra + nodes, [om.init("tw", r(3, 2, 3, 3))], "x", "out", opset, name=name,
                 input_shape=(1, 3, 5, 5), output_shape=(1, 3, 10, 10))
    onnx.save(m, path(name + ".onnx"))
    _, err = kt.kiln("import", path(name + ".onnx"), "-o", path(name + ".json"), expect=2)
    kt.check(word in err, f"{name}: the error names {word!r}: {err}")
kt.finish()
