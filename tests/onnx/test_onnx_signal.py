"""1-D signals (graph input [N, C, L]), built with onnx.helper: Conv1d (padding, stride,
dilation, groups, auto_pad), BatchNormalization, ReLU, GELU written out, MaxPool1d and
AveragePool1d, Mul and Add of per-channel [C, 1] constants, Concat of channels, the
reductions over C, L and both with and without keepdims, GlobalAveragePool, Flatten,
Squeeze and Reshape to [N, features], and a Gemm head. `kiln run X.onnx` on cpu and on the
emulator (generated kernels) takes the [N, C, L] input and must write what onnxruntime
writes: the same shape (rank 3 where ONNX's output is rank 3) and values within 1e-4
relative. `kiln import` writes the model with input [N, C, L], and `kiln run M.json` gives
the same result; operators kiln cannot map on a signal are errors that name the node and
list those it maps.

Usage: test_onnx_signal.py KILN ORT_DIR (exits 77, skipped, without onnxruntime there)."""
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
rng = np.random.RandomState(7)
r = lambda *s: rng.randn(*s).astype(np.float32)
N, C, L = 2, 4, 32
x = r(N, C, L)
np.save(path("x.npy"), x)
OPSET = 13


def const(name, v):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(v), name + "_t"))


def ints(name, v):
    return const(name, np.asarray(v, np.int64))


P = {"c1.weight": r(8, C, 5) * 0.3, "c1.bias": r(8) * 0.1,
     "bn.weight": 1 + r(8) * 0.1, "bn.bias": r(8) * 0.1, "bn.running_mean": r(8) * 0.1,
     "bn.running_var": 1 + np.abs(r(8)) * 0.2,
     "c2.weight": r(8, 4, 3) * 0.3, "c2.bias": r(8) * 0.1,
     "scale": 1 + r(8, 1) * 0.2, "shift": r(8, 1) * 0.1,
     "fc.weight": r(5, 8) * 0.3, "fc.bias": r(5) * 0.1}
INITS = [om.init(k, v) for k, v in P.items()]


def trunk(bn=True):
    """[N, 4, 32] -> [N, 8, 16] named "t"."""
    return [helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["a"], name="c1", pads=[2, 2]),
            helper.make_node("BatchNormalization", ["a", "bn.weight", "bn.bias", "bn.running_mean",
                                                    "bn.running_var"], ["b"], name="bn") if bn else
            helper.make_node("Identity", ["a"], ["b"], name="no_bn"),
            helper.make_node("Relu", ["b"], ["c"], name="relu"),
            helper.make_node("MaxPool", ["c"], ["p"], name="pool", kernel_shape=[2], strides=[2]),
            helper.make_node("Conv", ["p", "c2.weight", "c2.bias"], ["q"], name="c2", pads=[2, 2],
                             dilations=[2], group=2),
            helper.make_node("Mul", ["q", "scale"], ["s"], name="scale_mul"),
            helper.make_node("Add", ["s", "shift"], ["t"], name="shift_add")]


def gelu(src, dst):
    """GELU as exporters write it out: x * 0.5 * (1 + erf(x / sqrt 2))."""
    return [const("sq2", np.float32(np.sqrt(2))), const("one", np.float32(1)), const("half", np.float32(0.5)),
            helper.make_node("Div", [src, "sq2"], ["g0"], name="g_div"),
            helper.make_node("Erf", ["g0"], ["g1"], name="g_erf"),
            helper.make_node("Add", ["g1", "one"], ["g2"], name="g_add"),
            helper.make_node("Mul", [src, "g2"], ["g3"], name="g_mul"),
            helper.make_node("Mul", ["g3", "half"], [dst], name="g_half")]


def case(tag, nodes, out_shape, devices=("cpu", "emu")):
    m = om.model(nodes, INITS, "x", "y", OPSET, name=tag, input_shape=("N", C, L), output_shape=out_shape)
    f = path(tag + ".onnx")
    open(f, "wb").write(m.SerializeToString())
    so = ort.SessionOptions()
    so.log_severity_level = 3  # no warnings about the unused head weights
    want = ort.InferenceSession(f, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    kt.check(np.count_nonzero(want) * 2 >= want.size, f"{tag}: onnxruntime's output is mostly zeros (a weak reference)")
    for dev in devices:
        # The T4's kernels on emu: exact fp32 (an h200's f32 conv may take tf32 tensor cores).
        kt.kiln("run", f, "--device", dev, *(["--gpu", "t4"] if dev == "emu" else []), "--input", path("x.npy"),
                "-o", path(f"{tag}_{dev}.npy"))
        if not os.path.exists(path(f"{tag}_{dev}.npy")):
            continue
        got = np.load(path(f"{tag}_{dev}.npy"))
        kt.check(got.shape == want.shape, f"{tag} on {dev}: shape {got.shape}, onnxruntime's {want.shape}")
        if got.shape == want.shape:
            err = kt.rel(got, want)
            print(f"{tag:24s} {dev:4s} {str(got.shape):14s} relative error {err:.2e} (tolerance {TOL})")
            kt.check(err < TOL, f"{tag} on {dev}: differs from onnxruntime: {err:.2e}")
    return f, want


# The trunk's own output: rank 3, as onnxruntime writes it.
f, want = case("trunk", trunk() + [helper.make_node("Identity", ["t"], ["y"], name="out")], ("N", 8, 16))
# Through a kiln-model/1 file: its input is [N, C, L] and so is its output.
kt.kiln("import", f, "-o", path("trunk.json"), "--weights-out", path("trunk.st"))
j = json.load(open(path("trunk.json")))
kt.check(j["input"]["shape"] == [1, C, L], f"imported input shape {j['input']['shape']}, expected [1, {C}, {L}]")
ops = [layer["op"] for layer in j["layers"]]
print("trunk layers:", " ".join(ops))
kt.check(ops.count("conv2d") == 2, f"two conv2d layers expected: {ops}")
kt.kiln("run", path("trunk.json"), "--weights", path("trunk.st"), "--input", path("x.npy"), "-o", path("tj.npy"))
if os.path.exists(path("tj.npy")):
    got = np.load(path("tj.npy"))
    kt.check(got.shape == want.shape and kt.rel(got, want) < TOL, f"trunk.json: {got.shape} vs {want.shape}")
# kiln inspect says what the model takes and how kiln holds it.
out, _ = kt.kiln("inspect", f, "--json")
ins = json.loads(out or "{}")
kt.check(ins.get("signal") is True and ins.get("input_shape") == [1, C, L],
         f"inspect --json: signal {ins.get('signal')}, input_shape {ins.get('input_shape')}")
# Another length, as an image model takes another size: onnxruntime's on a model declaring it.
x40 = r(N, C, 40)
np.save(path("x40.npy"), x40)
m40 = om.model(trunk() + [helper.make_node("Identity", ["t"], ["y"], name="out")], INITS, "x", "y", OPSET,
               input_shape=("N", C, 40), output_shape=("N", 8, 20))
open(path("t40.onnx"), "wb").write(m40.SerializeToString())
quiet = ort.SessionOptions()
quiet.log_severity_level = 3
want40 = ort.InferenceSession(path("t40.onnx"), quiet, providers=["CPUExecutionProvider"]).run(None, {"x": x40})[0]
kt.kiln("run", f, "--input", path("x40.npy"), "-o", path("y40.npy"))
if os.path.exists(path("y40.npy")):
    got = np.load(path("y40.npy"))
    kt.check(got.shape == want40.shape and kt.rel(got, want40) < TOL, f"L = 40: {got.shape} vs {want40.shape}")
kt.expect_error(["run", f, "--image", "40x2", "--input", path("x40.npy"), "-o", path("bad.npy")], "Lx1")
# A wrong input rank names the signal shape.
np.save(path("x4.npy"), x[..., None, :])
kt.expect_error(["run", path("trunk.json"), "--weights", path("trunk.st"), "--input", path("x4.npy"), "-o",
                 path("bad.npy")], "the model takes [2, 4, 32]")

# GELU written out, average pooling with auto_pad and stride, a channel concat.
case("gelu_avgpool_concat", trunk() + gelu("t", "g") + [
    helper.make_node("AveragePool", ["g"], ["ap"], name="ap", kernel_shape=[3], strides=[2], auto_pad="SAME_UPPER"),
    helper.make_node("Relu", ["ap"], ["rl"], name="rl"),
    helper.make_node("Concat", ["ap", "rl"], ["y"], name="cat", axis=-2)], ("N", 16, 8))

# The reductions: over L (a 1-D signal head), C, both; keepdims 0 and 1; negative axes.
for op in ("ReduceMean", "ReduceSum", "ReduceMax"):
    for axes, keep, shape in (([2], 0, ("N", 8)), ([-1], 1, ("N", 8, 1)), ([1], 0, ("N", 16)),
                              ([-2], 1, ("N", 1, 16)), ([1, 2], 0, ("N",)), ([1, -1], 1, ("N", 1, 1))):
        if op == "ReduceSum":  # axes an input from opset 13
            red = [ints("axes", axes), helper.make_node(op, ["t", "axes"], ["y"], name="red", keepdims=keep)]
        else:
            red = [helper.make_node(op, ["t"], ["y"], name="red", axes=axes, keepdims=keep)]
        case(f"{op}_{'_'.join(map(str, axes))}_k{keep}", trunk() + red, shape)

# A classifier head: GlobalAveragePool ([N, 8, 1]), Flatten, Gemm.
case("head", trunk() + [helper.make_node("GlobalAveragePool", ["t"], ["gp"], name="gap"),
                        helper.make_node("Flatten", ["gp"], ["fl"], name="flat"),
                        helper.make_node("Gemm", ["fl", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1)],
     ("N", 5))

# A training step through the signal head (cpu, f64): each parameter's largest gradient against
# central finite differences of kiln's loss (softmax cross-entropy, the batch's mean). Without
# the batchnorm: a training step normalises by the batch's statistics, inference by the running
# ones.
def xent(logits, target):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-np.mean(np.take_along_axis(logp, target[:, None], axis=1)))


np.save(path("target.npy"), np.array([1, 3], np.int64))
case("head_no_bn", trunk(bn=False) + [helper.make_node("GlobalAveragePool", ["t"], ["gp"], name="gap"),
                                      helper.make_node("Flatten", ["gp"], ["fl"], name="flat"),
                                      helper.make_node("Gemm", ["fl", "fc.weight", "fc.bias"], ["y"], name="fc",
                                                       transB=1)], ("N", 5), devices=("cpu",))
kt.kiln("import", path("head_no_bn.onnx"), "-o", path("head.json"), "--weights-out", path("head.st"))
kt.kiln("run", path("head.json"), "--weights", path("head.st"), "--dtype", "f64", "--input", path("x.npy"),
        "--train", "--target", path("target.npy"), "--grads", path("head_g.st"))
if os.path.exists(path("head_g.st")):
    w = {k: v.astype(np.float64) for k, v in kt.read_safetensors(path("head.st")).items()}
    g = kt.read_safetensors(path("head_g.st"))
    checked = 0
    for k in ("c1.weight", "c1.bias", "c2.weight", "fc.weight"):
        kt.check(k in g, f"signal training: no gradient for {k}: {sorted(g)}")
        if k not in g:
            continue
        i = np.unravel_index(np.argmax(np.abs(g[k])), g[k].shape)
        h = 1e-6 * max(1.0, abs(w[k][i]))
        losses = []
        for sign in (1, -1):
            wp = dict(w)
            wp[k] = w[k].copy()
            wp[k][i] += sign * h
            kt.write_safetensors(path("wp.st"), wp, "F64")
            kt.kiln("run", path("head.json"), "--weights", path("wp.st"), "--dtype", "f64", "--input",
                    path("x.npy"), "-o", path("ty.npy"))
            losses.append(xent(np.load(path("ty.npy")), np.array([1, 3])))
        fd = (losses[0] - losses[1]) / (2 * h)
        err = abs(fd - g[k][i]) / max(abs(fd), abs(g[k][i]), 1e-12)
        print(f"signal training {k:10s} gradient {g[k][i]:.6e}, finite differences {fd:.6e}: {err:.1e}")
        kt.check(err < 1e-4, f"signal training: {k} gradient {g[k][i]} vs finite differences {fd}")
        checked += 1
    kt.check(checked == 4, "signal training: four parameters checked")

# Squeeze of L ([N, 8, 1] -> [N, 8]) and Reshape to [N, features]: flattens; a Reshape to the
# signal's own shape is nothing.
case("squeeze_head", trunk() + [helper.make_node("GlobalAveragePool", ["t"], ["gp"], name="gap"),
                                ints("sq_axes", [-1]), helper.make_node("Squeeze", ["gp", "sq_axes"], ["sq"], name="sq"),
                                helper.make_node("Gemm", ["sq", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1)],
     ("N", 5))
case("reshape", trunk() + [ints("same", [0, 8, 16]), helper.make_node("Reshape", ["t", "same"], ["rs"], name="same"),
                           helper.make_node("Relu", ["rs"], ["r"], name="r2"),
                           helper.make_node("GlobalAveragePool", ["r"], ["gp"], name="gap"),
                           ints("flat", [0, -1]), helper.make_node("Reshape", ["gp", "flat"], ["fl"], name="flat"),
                           helper.make_node("Gemm", ["fl", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1)],
     ("N", 5))

# What kiln does not map on a signal is refused by name.
for tag, node, frag in (("softmax", helper.make_node("Softmax", ["t"], ["y"], name="sm", axis=-1), 'node "sm" (Softmax)'),
                        ("transpose", helper.make_node("Transpose", ["t"], ["y"], name="tr", perm=[0, 2, 1]),
                         'node "tr" (Transpose)'),
                        ("reduce_n", helper.make_node("ReduceMean", ["t"], ["y"], name="rn", axes=[0]),
                         "never N")):
    m = om.model(trunk() + [node], INITS, "x", "y", OPSET, name=tag, input_shape=("N", C, L), output_shape=("N", 8, 16))
    open(path(tag + ".onnx"), "wb").write(m.SerializeToString())
    kt.expect_error(["import", path(tag + ".onnx"), "-o", path(tag + ".json")], frag,
                    "1-D signal" if tag != "reduce_n" else "[N, C, L]")
kt.finish()
