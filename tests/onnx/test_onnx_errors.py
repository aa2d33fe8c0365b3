"""Bad ONNX input: each case exits 2 with a `kiln: error:` message naming what is wrong
(the node, its op type and the supported operators; the attribute; the tensor), never a
crash; every unsupported node and attribute of a model in one message, grouped by
operator; external data is read only from a file beside the model."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import kiln_test as kt  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import onnx_models as om  # noqa: E402

d = kt.tmpdir()
path = lambda name: os.path.join(d, name)
W = np.random.RandomState(0).randn(4, 3, 3, 3).astype(np.float32)


def conv_model(extra_nodes=(), out="c", conv_attrs=None, opset=13, inits=None, input_shape=(1, 3, 8, 8)):
    nodes = [helper.make_node("Conv", ["x", "conv.weight"], ["c"], name="conv", **(conv_attrs or {}))]
    nodes += list(extra_nodes)
    return om.model(nodes, inits if inits is not None else [om.init("conv.weight", W)], "x", out, opset,
                    input_shape=input_shape)


def save(name, m):
    p = path(name)
    onnx.save(m, p)
    return p


def expect(name, m, *fragments):
    expect_path(save(name, m), *fragments)


def expect_path(p, *fragments):
    if os.path.exists(path("out.json")):
        os.remove(path("out.json"))
    for cmd in (["import", p, "-o", path("out.json")], ["inspect", p]):
        kt.expect_error(cmd, p, *fragments)
    kt.check(not os.path.exists(path("out.json")), f"{p}: nothing written")


# Unsupported operator: the node, its op type and the supported list.
expect("tanh.onnx", conv_model([helper.make_node("Tanh", ["c"], ["t"], name="act")], out="t"),
       'node "act" (Tanh)', 'unsupported operator "Tanh"', "kiln imports: Add, AveragePool,", "Softmax",
       "on constants only (computed at import), except as noted: ", "Gather", "Mul (of two activations", "x * Sigmoid(x) is SiLU")

# Every problem at once, grouped by operator: unsupported operators with their nodes, each
# failing node of a supported operator with its message (every unknown attribute in it);
# nodes after a failed one are not converted and not reported (their problems are unknown,
# but their own attributes are checked).
many = conv_model([
    helper.make_node("Sin", ["c"], ["s1"], name="sin1"),
    helper.make_node("Relu", ["s1"], ["r1"], name="after_sin"),  # its input failed: not reported
    helper.make_node("Sin", ["c"], ["s2"], name="sin2"),
    helper.make_node("Relu", ["c"], ["r2"], name="leaky", alpha=0.1, beta=0.2),
    helper.make_node("MaxPool", ["c"], ["p"], name="mp", kernel_shape=[2, 2], dilations=[2, 2]),
    helper.make_node("Tan", ["r2"], ["t"], name="tan"),
    helper.make_node("Concat", ["s2", "r1", "p", "t"], ["out"], name="cat", axis=1),
], out="out")
err = kt.expect_error(["import", save("many.onnx", many), "-o", path("out.json")],
                      "5 of 8 nodes cannot be imported (4 operators):",
                      'Sin (2 nodes): unsupported operator "Sin": "sin1", "sin2"',
                      'Tan (1 node): unsupported operator "Tan": "tan"',
                      'Relu (1 node):\n    node "leaky" (Relu): attributes "alpha", "beta" are not supported',
                      'MaxPool (1 node):\n    node "mp" (MaxPool): attribute "dilations"',
                      "\nkiln imports: Add,")
kt.check("after_sin" not in err and '"cat"' not in err, f"nodes after a failed one are not reported: {err}")
np.save(path("x_many.npy"), np.zeros((1, 3, 8, 8), np.float32))
kt.expect_error(["run", path("many.onnx"), "--input", path("x_many.npy"), "-o", path("y.npy")],
                "5 of 8 nodes cannot be imported")
kt.check(not os.path.exists(path("out.json")), "nothing written for many.onnx")
# ConvTranspose's output_padding beyond the symmetric padding's reach is named.
expect("convt.onnx", om.model([helper.make_node("ConvTranspose", ["x", "conv.weight"], ["c"], name="up",
                                                output_padding=[1, 1])],
                              [om.init("conv.weight", W.transpose(1, 0, 2, 3))], "x", "c", 13,
                              input_shape=(1, 3, 8, 8)),
       'node "up" (ConvTranspose)', 'attribute "output_padding"', "[0, stride 1)")
expect("domain.onnx", conv_model([helper.make_node("Relu", ["c"], ["t"], name="r", domain="com.example")], out="t"),
       'node "r" (Relu)', 'domain "com.example"')

# Unsupported attribute values name the attribute.
clip_empty = [helper.make_node("Constant", [], ["lo"], value=helper.make_tensor("lo", TensorProto.FLOAT, [], [6.0])),
              helper.make_node("Constant", [], ["hi"], value=helper.make_tensor("hi", TensorProto.FLOAT, [], [0.0])),
              helper.make_node("Clip", ["c", "lo", "hi"], ["t"], name="clip")]
expect("clip_empty.onnx", conv_model(clip_empty, out="t"), 'node "clip" (Clip)', "min = 6 and max = 0 is empty")
expect("clip_attr13.onnx", conv_model([helper.make_node("Clip", ["c"], ["t"], name="clip", min=0.0, max=6.0)],
                                      out="t"), 'node "clip" (Clip)', 'attributes "max", "min" are not supported')
# Mul, Div, Erf on activations: only inside SiLU, HardSwish and GELU.
sq = [helper.make_node("MaxPool", ["c"], ["p"], name="mp", kernel_shape=[2, 2], strides=[2, 2]),
      helper.make_node("Mul", ["c", "p"], ["t"], name="product")]
expect("product.onnx", conv_model(sq, out="t"), 'node "product" (Mul)', "multiplies [1, 4, 6, 6] by [1, 4, 3, 3]",
       "[N, C, H, W] by its [N, C, 1, 1]")
erf2 = [helper.make_node("Erf", ["c"], ["e"], name="erf"), helper.make_node("Relu", ["e"], ["t"], name="r")]
expect("erf.onnx", conv_model(erf2, out="t"), 'node "r" (Relu)', 'comes from node "erf" (Erf)', "only inside GELU")
rm = [helper.make_node("ReduceMean", ["c"], ["t"], name="rm", axes=[0, 1], keepdims=1)]
expect("reduce_n.onnx", conv_model(rm, out="t"), 'node "rm" (ReduceMean)', "reduces axes [0, 1]", "never N")
half = [helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", TensorProto.FLOAT, [], [0.5])),
        helper.make_node("Mul", ["c", "k"], ["h"], name="halve"),
        helper.make_node("Relu", ["h"], ["t"], name="r")]
expect("halve.onnx", conv_model(half, out="t"), 'node "r" (Relu)', 'comes from node "halve" (Mul)',
       "GELU (x * 0.5 * (1 + erf(x / sqrt 2)))")
expect("halve_out.onnx", conv_model(half[:2], out="h"), 'output "h"', 'comes from node "halve" (Mul)')
expect("gelu19.onnx", conv_model([helper.make_node("Gelu", ["c"], ["t"], name="g")], out="t", opset=19),
       'node "g" (Gelu)', "defined from opset 20")
expect("hswish13.onnx", conv_model([helper.make_node("HardSwish", ["c"], ["t"], name="h")], out="t"),
       'node "h" (HardSwish)', "defined from opset 14")
expect("autopad.onnx", conv_model(conv_attrs={"auto_pad": "SAME_MIDDLE"}), 'node "conv" (Conv)',
       'attribute "auto_pad"', "SAME_MIDDLE")
expect("dilated_pool.onnx", conv_model([helper.make_node("MaxPool", ["c"], ["t"], name="mp", kernel_shape=[2, 2],
                                                         dilations=[2, 2])], out="t"),
       'node "mp" (MaxPool)', 'attribute "dilations"')
expect("unknown_attr.onnx", conv_model([helper.make_node("Relu", ["c"], ["t"], name="r", alpha=0.1)], out="t"),
       'node "r" (Relu)', 'attribute "alpha" is not supported')
expect("resize_cubic.onnx", conv_model([
    helper.make_node("Constant", [], ["s"], value=helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 2, 2])),
    helper.make_node("Resize", ["c", "", "s"], ["t"], name="up", mode="cubic")], out="t"),
    'node "up" (Resize)', 'attribute "mode"', "cubic")
expect("ceil.onnx", conv_model([helper.make_node("MaxPool", ["c"], ["t"], name="mp", kernel_shape=[2, 2],
                                                 strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1)], out="t",
                               input_shape=(1, 3, 6, 6)),
       'node "mp" (MaxPool)', 'attribute "ceil_mode"')
expect("softmax_axis.onnx", conv_model([helper.make_node("Softmax", ["c"], ["t"], name="sm", axis=3)], out="t"),
       'node "sm" (Softmax)', 'attribute "axis" = 3')

# Malformed and truncated protobuf.
good = save("good.onnx", conv_model())
kt.kiln("inspect", good)
data = open(good, "rb").read()
with open(path("trunc.onnx"), "wb") as f:
    f.write(data[:len(data) - 17])
expect_path(path("trunc.onnx"), "malformed or truncated")
with open(path("garbage.onnx"), "wb") as f:
    f.write(b"\x0a\xff\xff\xff\xff\x0f" + bytes(range(256)))
expect_path(path("garbage.onnx"), "malformed or truncated")
with open(path("empty.onnx"), "wb") as f:
    pass
expect_path(path("empty.onnx"), "no graph")

# Names must be UTF-8 (they become JSON and safetensors names); protobuf does not check.
named = conv_model([helper.make_node("Relu", ["c"], ["t"], name="NAME_TO_BREAK")], out="t").SerializeToString()
with open(path("utf8.onnx"), "wb") as f:
    f.write(named.replace(b"NAME_TO_BREAK", b"NAME_\xff\xfe_BREAK"))
expect_path(path("utf8.onnx"), "a node's name is not valid UTF-8")

# A cycle, a missing initializer, a value produced twice, an unknown opset.
cyc = om.model([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                helper.make_node("Relu", ["a"], ["b"], name="second")], [], "x", "b", 13)
expect("cycle.onnx", cyc, "the nodes form a cycle", 'node "first" (Add)', 'node "second" (Relu)')
expect("missing_init.onnx", conv_model(inits=[]), 'node "conv" (Conv)', 'input "conv.weight"', "missing initializer")
expect("twice.onnx", conv_model([helper.make_node("Relu", ["c"], ["c"], name="again")]), 'value "c" is produced twice')
expect("opset.onnx", conv_model(opset=22), "opset 22 is not supported", "9 to 21")
two = conv_model()
two.graph.input.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8]))
expect("two_inputs.onnx", two, "2 inputs", "one input")
expect("rank5.onnx", conv_model(input_shape=(1, 3, 8, 8, 8)), 'input "x"', "has rank 5", "[N, C, L]")
# A rank-3 input is a 1-D signal: a 2-D conv's 4-D weight on it is refused by the conv.
expect("rank3.onnx", conv_model(input_shape=(1, 3, 8)), 'node "conv" (Conv)', "weight has shape [4, 3, 3, 3]",
       "1-D Conv of [N, C, L]")
bad_type = conv_model()
bad_type.graph.input[0].type.tensor_type.elem_type = TensorProto.DOUBLE
expect("double.onnx", bad_type, 'input "x"', "element type DOUBLE")
short = conv_model()
short.graph.initializer[0].raw_data = short.graph.initializer[0].raw_data[:-4]
expect("short_init.onnx", short, 'tensor "conv.weight"', "raw_data holds 428 bytes", "need 432")

# External data: beside the model it loads; elsewhere, traversing or too short it is refused.
def external(name, location, offset=0, length=None, write=True, sub=""):
    m = conv_model()
    t = m.graph.initializer[0]
    raw = t.raw_data
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length or len(raw)))):
        e = t.external_data.add()
        e.key, e.value = k, v
    if write:
        with open(os.path.join(d, sub, os.path.basename(location)), "wb") as f:
            f.write(b"\0" * offset + raw)
    return save(name, m)


x = np.random.RandomState(1).randn(1, 3, 8, 8).astype(np.float32)
np.save(path("x.npy"), x)
ok = external("ext_ok.onnx", "weights.bin", offset=16)
kt.kiln("run", ok, "--input", path("x.npy"), "--output", path("y_ext.npy"))
want = om.conv(x.astype(np.float64), W.astype(np.float64))
kt.check(kt.rel(np.load(path("y_ext.npy")), want) < 1e-5, "external data beside the model is read")
expect_path(external("ext_traverse.onnx", "../weights.bin", write=False),
       'initializer "conv.weight"', '"../weights.bin" is refused', "beside the model")
expect_path(external("ext_abs.onnx", "/etc/passwd", write=False), '"/etc/passwd" is refused')
os.makedirs(path("sub"), exist_ok=True)
expect_path(external("ext_sub.onnx", "sub/w.bin", sub="sub"), '"sub/w.bin" is refused')
expect_path(external("ext_missing.onnx", "nothere.bin", write=False), "cannot be opened")
expect_path(external("ext_short.onnx", "short.bin", offset=1 << 20, write=False),
       "cannot be opened")
with open(path("short.bin"), "wb") as f:
    f.write(b"\0" * 100)
expect_path(external("ext_short2.onnx", "short.bin", offset=8, write=False),
       "lies beyond the end")
expect_path(external("ext_len.onnx", "weights.bin", length=12, write=False),
       "length 12 does not match")
os.symlink("/etc/hostname", path("link.bin"))
expect_path(external("ext_link.onnx", "link.bin", write=False), "outside the model's directory")
kt.finish()
