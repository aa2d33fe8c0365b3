"""The builder of make_models.py: a kiln-model/1 network written layer by layer, and its
shapes and counts as kiln itself infers them (`kiln inspect --json`), so no rule of kiln's
(a layer's output size, what a parameter is) is written twice.

Attributes are checked against the op's schema and written in its canonical order without
their defaults, as kiln's own writer does, so loading and saving a model through kiln gives
back the same bytes.
"""

import json
import os
import subprocess
import tempfile

# Attribute schema per op, in canonical order (runtime/op.cpp): name -> default
# (None: required). Defaults are omitted from the files, as kiln's own writer does.
SPECS = {
    "conv2d": [("out_channels", None), ("kernel", None), ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("bias", True)],
    "linear": [("out_features", None), ("bias", True)],
    "batchnorm": [("eps", 1e-5)],
    "relu": [],
    "maxpool2d": [("kernel", None), ("stride", "kernel"), ("padding", 0), ("ceil_mode", False)],
    "avgpool2d": [("kernel", None), ("stride", "kernel"), ("padding", 0), ("ceil_mode", False),
                  ("count_include_pad", True)],
    "adaptive_avgpool2d": [("output_size", None)],
    "global_avgpool": [],
    "add": [],
    "concat": [],
    "flatten": [],
    "upsample2d": [("scale", 2)],   # kiln reads it as resize (nearest)
    "resize": [("scale", 0), ("size", 0), ("mode", "nearest"),
               ("coordinate_transformation_mode", "asymmetric"), ("nearest_mode", "floor")],
    "softmax": [],
    "fold": [("factor", None)],
    "unfold": [("factor", None)],
}
INT2 = {"kernel", "stride", "padding", "dilation", "output_size"}
VARIADIC = {"add", "concat"}


def int2(v):
    return [v, v] if isinstance(v, int) else list(v)


class Model:
    def __init__(self, name, shape, input_name="image"):
        self.name = name
        self.input = {"name": input_name, "shape": list(shape)}
        self.layers = []   # dicts in file order
        self.names = {input_name}
        self.prev = input_name
        self.channel_checks = []   # (layer, channels) its output must have
        # From kiln (measure): every layer's output shape, and the counts.
        self.shapes = {input_name: list(shape)}
        self.params = 0
        self.macs = 0          # conv2d and linear multiply-accumulates
        self.thop = 0          # multiply-accumulates as thop counts them (see measure)
        self.linear_macs = 0   # of the linear layers alone

    def add(self, name, op, inputs=None, **attrs):
        if name in self.names:
            raise ValueError(f"{self.name}: duplicate layer name {name}")
        if op not in SPECS:
            raise ValueError(f"{self.name}: unknown op {op}")
        ins = [self.prev] if inputs is None else list(inputs)
        for i in ins:
            if i not in self.names:
                raise ValueError(f"{self.name}/{name}: unknown input {i}")
        if (len(ins) < 2) if op in VARIADIC else (len(ins) != 1):
            raise ValueError(f"{self.name}/{name}: wrong number of inputs for {op}")
        # Resolve attributes with defaults; reject unknown ones.
        spec = SPECS[op]
        known = {k for k, _ in spec}
        for k in attrs:
            if k not in known:
                raise ValueError(f"{self.name}/{name}: unknown attribute {k} for {op}")
        full = {}
        for k, dflt in spec:
            if k in attrs:
                full[k] = attrs[k]
            elif dflt is None:
                raise ValueError(f"{self.name}/{name}: {op} needs {k}")
            else:
                full[k] = full["kernel"] if dflt == "kernel" else dflt
        # The file's record: name, op, non-default attributes (canonical order), inputs.
        rec = {"name": name, "op": op}
        for k, dflt in spec:
            v = full[k]
            d = full["kernel"] if dflt == "kernel" else dflt
            if k in INT2:
                v2 = int2(v)
                if dflt is None or v2 != int2(d):
                    rec[k] = v2[0] if v2[0] == v2[1] else v2
            elif dflt is None or v != d or type(v) is not type(d):
                rec[k] = v
        if ins != [self.prev]:
            rec["inputs"] = ins
        self.layers.append(rec)
        self.names.add(name)
        self.prev = name
        return name

    def expect_channels(self, layer, channels):
        """A check of the construction: `layer`'s output has `channels` channels."""
        self.channel_checks.append((layer, channels))

    def to_json(self):
        # json.dumps(indent=2) lays out exactly as kiln's own writer (nlohmann dump(2)),
        # so loading and saving a model through kiln gives back the same bytes.
        doc = {"format": "kiln-model/1", "name": self.name, "input": self.input,
               "dtype": "f32", "layers": self.layers, "outputs": [self.prev]}
        return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"

    def measure(self, kiln):
        """Shapes and counts from `kiln inspect --json` of this model: trainable parameters
        (conv and linear weight/bias, batchnorm weight and bias; not the running statistics),
        conv2d and linear MACs, and thop's count. thop (0.0.31.post2005241907, the rules
        FoldedCNNs' NoScope counts reproduce): nn.Conv2d: output elements * (in/groups * kh *
        kw + 1 if bias); nn.Linear: output elements * in_features; nn.ReLU, nn.MaxPool2d and the
        Flatten module: 0. kiln's `flops` are 2 * thop's count; only conv2d's and linear's are
        taken here (no check uses the other ops'). Raises on anything kiln refuses."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, self.name + ".json")
            with open(path, "w", encoding="ascii") as f:
                f.write(self.to_json())
            p = subprocess.run([kiln, "inspect", path, "--json"], capture_output=True, text=True)
        if p.returncode != 0:
            raise ValueError(f"{self.name}: kiln inspect: {p.stderr.strip()}")
        info = json.loads(p.stdout)
        self.params = info["total_params"]
        for layer in info["layers"]:
            self.shapes[layer["name"]] = layer["output_shape"]
            if layer["op"] in ("conv2d", "linear"):
                self.macs += layer["macs"]
                self.thop += layer["flops"] // 2
            if layer["op"] == "linear":
                self.linear_macs += layer["macs"]
        for layer, channels in self.channel_checks:
            if self.shapes[layer][1] != channels:
                raise ValueError(f"{self.name}/{layer}: {self.shapes[layer][1]} channels, expected {channels}")
