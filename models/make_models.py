#!/usr/bin/env python3
"""Writes the example models of kiln (kiln-model/1, DESIGN.md 4.1) into models/*.json.

Run: python3 models/make_models.py   (standard library only; deterministic output)

Layer names follow the module paths of the reference implementations (torchvision,
milesial/Pytorch-UNet for the U-Net, msr-fiddle/folded-cnns for the game-scraping CNNs), so
a PyTorch state_dict saved as .safetensors loads by name: `<layer>.weight`, `<layer>.bias`,
`<layer>.running_mean`, `<layer>.running_var`. Layers that hold no parameters and have no
module of their own (a functional relu, the residual add, the concat, flatten) get names in
the same dotted style. The NoScope CNNs keep conv1/fc1-style names (see there).

Each model is checked with this script's own shape inference: trainable parameter counts
(conv and linear weight/bias, batchnorm weight and bias; not the running statistics) and
multiply-accumulates (conv2d: N*O*OH*OW*(C/groups)*KH*KW; linear: N*in*out) and, for the
FoldedCNNs models, FLOPs as thop counts them, are compared with published numbers, or with
an independent closed-form count where nothing is published. Any mismatch raises and
nothing is written.
"""

import json
import os
import sys

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
    "upsample2d": [("scale", 2)],
    "softmax": [],
    "fold": [("factor", None)],
    "unfold": [("factor", None)],
}
INT2 = {"kernel", "stride", "padding", "dilation", "output_size"}
VARIADIC = {"add", "concat"}


def int2(v):
    return [v, v] if isinstance(v, int) else list(v)


def window_out(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    if span < 0:
        return 0
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


class Model:
    def __init__(self, name, shape, input_name="image"):
        self.name = name
        self.input = {"name": input_name, "shape": list(shape)}
        self.layers = []   # dicts in file order
        self.shapes = {input_name: list(shape)}
        self.params = 0
        self.macs = 0
        self.thop = 0          # multiply-accumulates as thop counts them (see _count)
        self.linear_macs = 0   # of the linear layers alone
        self.prev = input_name

    def add(self, name, op, inputs=None, **attrs):
        if name in self.shapes:
            raise ValueError(f"{self.name}: duplicate layer name {name}")
        if op not in SPECS:
            raise ValueError(f"{self.name}: unknown op {op}")
        ins = [self.prev] if inputs is None else list(inputs)
        for i in ins:
            if i not in self.shapes:
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
        shapes = [self.shapes[i] for i in ins]
        out = self._infer(name, op, full, shapes)
        self._count(op, full, shapes, out)
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
        self.shapes[name] = out
        self.prev = name
        return name

    def _infer(self, name, op, a, ins):
        x = ins[0]
        where = f"{self.name}/{name}"

        def need4():
            if len(x) != 4:
                raise ValueError(f"{where}: {op} expects [N, C, H, W], got {x}")

        if op == "conv2d":
            need4()
            k, s, p, d = int2(a["kernel"]), int2(a["stride"]), int2(a["padding"]), \
                int2(a["dilation"])
            g = a["groups"]
            if x[1] % g or a["out_channels"] % g:
                raise ValueError(f"{where}: channels not divisible by groups")
            y = [x[0], a["out_channels"], window_out(x[2], k[0], s[0], p[0], d[0], False),
                 window_out(x[3], k[1], s[1], p[1], d[1], False)]
        elif op == "linear":
            if len(x) != 2:
                raise ValueError(f"{where}: linear needs a 2-D input, got {x}")
            y = [x[0], a["out_features"]]
        elif op in ("batchnorm", "relu", "softmax"):
            y = list(x)
        elif op in ("maxpool2d", "avgpool2d"):
            need4()
            k, s, p = int2(a["kernel"]), int2(a["stride"]), int2(a["padding"])
            if p[0] * 2 > k[0] or p[1] * 2 > k[1]:
                raise ValueError(f"{where}: pool padding over half the kernel")
            y = [x[0], x[1], window_out(x[2], k[0], s[0], p[0], 1, a["ceil_mode"]),
                 window_out(x[3], k[1], s[1], p[1], 1, a["ceil_mode"])]
        elif op == "adaptive_avgpool2d":
            need4()
            y = [x[0], x[1]] + int2(a["output_size"])
        elif op == "global_avgpool":
            need4()
            y = [x[0], x[1], 1, 1]
        elif op == "add":
            if any(s != x for s in ins):
                raise ValueError(f"{where}: add inputs differ in shape: {ins}")
            y = list(x)
        elif op == "concat":
            for s in ins[1:]:
                if len(s) != len(x) or s[0] != x[0] or s[2:] != x[2:]:
                    raise ValueError(f"{where}: concat inputs disagree: {ins}")
            y = [x[0], sum(s[1] for s in ins)] + x[2:]
        elif op == "flatten":
            f = 1
            for v in x[1:]:
                f *= v
            y = [x[0], f]
        elif op == "upsample2d":
            need4()
            y = [x[0], x[1], x[2] * a["scale"], x[3] * a["scale"]]
        else:
            raise ValueError(f"{where}: no shape rule for {op} in this script")
        if any(v <= 0 for v in y):
            raise ValueError(f"{where}: empty output {y}")
        return y

    def _count(self, op, a, ins, out):
        # thop (0.0.31.post2005241907, the rules FoldedCNNs' NoScope counts reproduce):
        # nn.Conv2d: output elements * (in/groups * kh * kw + 1 if bias); nn.Linear: output
        # elements * in_features; nn.ReLU, nn.MaxPool2d and the Flatten module: 0. Other ops
        # are not counted here: no check below uses them (kiln inspect --json counts them).
        x = ins[0]
        if op == "conv2d":
            k = int2(a["kernel"])
            cg = x[1] // a["groups"]
            self.params += a["out_channels"] * cg * k[0] * k[1] + (a["out_channels"] if a["bias"] else 0)
            self.macs += out[0] * out[1] * out[2] * out[3] * cg * k[0] * k[1]
            self.thop += out[0] * out[1] * out[2] * out[3] * (cg * k[0] * k[1] + (1 if a["bias"] else 0))
        elif op == "linear":
            self.params += a["out_features"] * x[1] + (a["out_features"] if a["bias"] else 0)
            self.macs += x[0] * x[1] * a["out_features"]
            self.thop += x[0] * x[1] * a["out_features"]
            self.linear_macs += x[0] * x[1] * a["out_features"]
        elif op == "batchnorm":
            self.params += 2 * x[1]   # weight, bias; running stats are not trained

    def to_json(self):
        # json.dumps(indent=2) lays out exactly as kiln's own writer (nlohmann dump(2)),
        # so loading and saving a model through kiln gives back the same bytes.
        doc = {"format": "kiln-model/1", "name": self.name, "input": self.input,
               "dtype": "f32", "layers": self.layers, "outputs": [self.prev]}
        return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"



# --- torchvision ResNet (v1.5: stride on the 3x3 conv of the bottleneck) -----------------

def resnet_stem(m):
    m.add("conv1", "conv2d", out_channels=64, kernel=7, stride=2, padding=3, bias=False)
    m.add("bn1", "batchnorm")
    m.add("relu", "relu")
    return m.add("maxpool", "maxpool2d", kernel=3, stride=2, padding=1)


def basic_block(m, p, x, cin, c, stride):
    m.add(f"{p}.conv1", "conv2d", [x], out_channels=c, kernel=3, stride=stride, padding=1,
          bias=False)
    m.add(f"{p}.bn1", "batchnorm")
    m.add(f"{p}.relu1", "relu")
    m.add(f"{p}.conv2", "conv2d", out_channels=c, kernel=3, padding=1, bias=False)
    main = m.add(f"{p}.bn2", "batchnorm")
    short = x
    if stride != 1 or cin != c:
        m.add(f"{p}.downsample.0", "conv2d", [x], out_channels=c, kernel=1, stride=stride,
              bias=False)
        short = m.add(f"{p}.downsample.1", "batchnorm")
    m.add(f"{p}.add", "add", [main, short])
    return m.add(f"{p}.relu2", "relu")


def bottleneck(m, p, x, cin, width, stride):
    cout = width * 4
    m.add(f"{p}.conv1", "conv2d", [x], out_channels=width, kernel=1, bias=False)
    m.add(f"{p}.bn1", "batchnorm")
    m.add(f"{p}.relu1", "relu")
    m.add(f"{p}.conv2", "conv2d", out_channels=width, kernel=3, stride=stride, padding=1,
          bias=False)
    m.add(f"{p}.bn2", "batchnorm")
    m.add(f"{p}.relu2", "relu")
    m.add(f"{p}.conv3", "conv2d", out_channels=cout, kernel=1, bias=False)
    main = m.add(f"{p}.bn3", "batchnorm")
    short = x
    if stride != 1 or cin != cout:
        m.add(f"{p}.downsample.0", "conv2d", [x], out_channels=cout, kernel=1, stride=stride,
              bias=False)
        short = m.add(f"{p}.downsample.1", "batchnorm")
    m.add(f"{p}.add", "add", [main, short])
    return m.add(f"{p}.relu3", "relu")


def resnet(name, blocks, bottle):
    m = Model(name, [1, 3, 224, 224])
    x = resnet_stem(m)
    cin = 64
    for k, n in enumerate(blocks):
        c = 64 << k
        for i in range(n):
            stride = 2 if (k > 0 and i == 0) else 1
            if bottle:
                x = bottleneck(m, f"layer{k + 1}.{i}", x, cin, c, stride)
                cin = c * 4
            else:
                x = basic_block(m, f"layer{k + 1}.{i}", x, cin, c, stride)
                cin = c
    m.add("avgpool", "global_avgpool")
    m.add("flatten", "flatten")
    m.add("fc", "linear", out_features=1000)
    return m


# --- torchvision VGG16 (configuration D, no batchnorm) -----------------------------------

def vgg16():
    m = Model("vgg16", [1, 3, 224, 224])
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
           512, 512, 512, "M"]
    i = 0
    for v in cfg:
        if v == "M":
            m.add(f"features.{i}", "maxpool2d", kernel=2, stride=2)
            i += 1
        else:
            m.add(f"features.{i}", "conv2d", out_channels=v, kernel=3, padding=1)
            m.add(f"features.{i + 1}", "relu")
            i += 2
    m.add("avgpool", "adaptive_avgpool2d", output_size=7)
    m.add("flatten", "flatten")
    # classifier.2 and classifier.5 are Dropout (identity at inference): left out.
    m.add("classifier.0", "linear", out_features=4096)
    m.add("classifier.1", "relu")
    m.add("classifier.3", "linear", out_features=4096)
    m.add("classifier.4", "relu")
    m.add("classifier.6", "linear", out_features=1000)
    return m


# --- torchvision DenseNet-BC ------------------------------------------------------------

def densenet(name, blocks, growth=32, bn_size=4, init=64):
    m = Model(name, [1, 3, 224, 224])
    m.add("features.conv0", "conv2d", out_channels=init, kernel=7, stride=2, padding=3,
          bias=False)
    m.add("features.norm0", "batchnorm")
    m.add("features.relu0", "relu")
    x = m.add("features.pool0", "maxpool2d", kernel=3, stride=2, padding=1)
    c = init
    for b, n in enumerate(blocks):
        blk = f"features.denseblock{b + 1}"
        feats = [x]
        for l in range(n):
            p = f"{blk}.denselayer{l + 1}"
            if l > 0:
                m.add(f"{p}.cat", "concat", feats)
            m.add(f"{p}.norm1", "batchnorm", [feats[0]] if l == 0 else None)
            m.add(f"{p}.relu1", "relu")
            m.add(f"{p}.conv1", "conv2d", out_channels=bn_size * growth, kernel=1, bias=False)
            m.add(f"{p}.norm2", "batchnorm")
            m.add(f"{p}.relu2", "relu")
            feats.append(m.add(f"{p}.conv2", "conv2d", out_channels=growth, kernel=3,
                               padding=1, bias=False))
        x = m.add(f"{blk}.cat", "concat", feats)
        c += n * growth
        if b + 1 < len(blocks):
            t = f"features.transition{b + 1}"
            m.add(f"{t}.norm", "batchnorm")
            m.add(f"{t}.relu", "relu")
            c //= 2
            m.add(f"{t}.conv", "conv2d", out_channels=c, kernel=1, bias=False)
            x = m.add(f"{t}.pool", "avgpool2d", kernel=2, stride=2)
    m.add("features.norm5", "batchnorm")
    m.add("relu", "relu")          # F.relu in DenseNet.forward
    m.add("avgpool", "global_avgpool")   # F.adaptive_avg_pool2d(out, (1, 1))
    m.add("flatten", "flatten")
    m.add("classifier", "linear", out_features=1000)
    return m


# --- CIFAR ResNets of He et al. (6n+2 layers), 1x1 projection shortcuts -----------------

def cifar_resnet(name, n):
    m = Model(name, [1, 3, 32, 32])
    m.add("conv1", "conv2d", out_channels=16, kernel=3, padding=1, bias=False)
    m.add("bn1", "batchnorm")
    x = m.add("relu", "relu")
    cin = 16
    for k, c in enumerate([16, 32, 64]):
        for i in range(n):
            stride = 2 if (k > 0 and i == 0) else 1
            x = basic_block(m, f"layer{k + 1}.{i}", x, cin, c, stride)
            cin = c
    m.add("avgpool", "global_avgpool")
    m.add("flatten", "flatten")
    m.add("fc", "linear", out_features=10)
    return m


def cifar_resnet_params(n):
    """Closed form, independent of the graph: stem + stages + projections + fc."""
    def block(ci, co):
        return ci * co * 9 + 2 * co + co * co * 9 + 2 * co
    total = 3 * 16 * 9 + 2 * 16
    for ci, co in [(16, 16), (16, 32), (32, 64)]:
        total += block(ci, co) + (n - 1) * block(co, co)
        if ci != co:
            total += ci * co + 2 * co
    return total + 64 * 10 + 10


# --- U-Net, milesial/Pytorch-UNet UNet(n_channels=3, n_classes=2, bilinear=True) ---------
# Upsampling is nearest here (kiln's upsample2d); the reference uses bilinear
# (align_corners=True). Parameters and names are unaffected.

def double_conv(m, p, x, mid, out):
    m.add(f"{p}.double_conv.0", "conv2d", [x], out_channels=mid, kernel=3, padding=1, bias=False)
    m.add(f"{p}.double_conv.1", "batchnorm")
    m.add(f"{p}.double_conv.2", "relu")
    m.add(f"{p}.double_conv.3", "conv2d", out_channels=out, kernel=3, padding=1, bias=False)
    m.add(f"{p}.double_conv.4", "batchnorm")
    return m.add(f"{p}.double_conv.5", "relu")


def unet():
    m = Model("unet", [1, 3, 256, 256])
    skips = [double_conv(m, "inc", "image", 64, 64)]
    x = skips[0]
    for i, c in enumerate([128, 256, 512, 512]):       # 1024 // factor at the bottom
        p = f"down{i + 1}.maxpool_conv"
        m.add(f"{p}.0", "maxpool2d", kernel=2)
        x = double_conv(m, f"{p}.1", f"{p}.0", c, c)
        skips.append(x)
    # Up(in, out): DoubleConv(in, out, in // 2) after cat([skip, up(x)]).
    for i, (cin, cout) in enumerate([(1024, 256), (512, 128), (256, 64), (128, 64)]):
        p = f"up{i + 1}"
        m.add(f"{p}.up", "upsample2d", [x])
        m.add(f"{p}.cat", "concat", [skips[3 - i], f"{p}.up"])
        assert m.shapes[f"{p}.cat"][1] == cin
        x = double_conv(m, f"{p}.conv", f"{p}.cat", cin // 2, cout)
    m.add("outc.conv", "conv2d", out_channels=2, kernel=1)
    return m


def unet_params():
    """Closed form from the reference constructor (convs without bias, BN, outc with bias)."""
    def dc(i, o, mid=None):
        mid = mid or o
        return i * mid * 9 + 2 * mid + mid * o * 9 + 2 * o
    total = dc(3, 64) + dc(64, 128) + dc(128, 256) + dc(256, 512) + dc(512, 512)
    total += dc(1024, 256, 512) + dc(512, 128, 256) + dc(256, 64, 128) + dc(128, 64, 64)
    return total + 64 * 2 + 2


# --- NoScope specialized CNNs (Kang et al., VLDB 2017), as in FoldedCNNs --------------
# msr-fiddle/folded-cnns models/noscope.py: noscope_layers() with the parameters of the
# NoScope paper's Table 2 (model_params): nb_filters, nb_dense, nb_layers (2 or 4), 2
# classes, 50x50 input. conv 3x3 padding 1 + ReLU, conv + ReLU, maxpool 2; with 4 layers a
# second pair at twice the width and a second maxpool; then flatten, linear nb_dense, ReLU,
# linear 2. No dropout (do_dropout=False, as its trainer builds them).
#
# Names: the reference is a bare nn.Sequential, so its state_dict keys are indices; kiln's
# files (and the tests and users that name their weights) use conv1/fc1-style names. The
# correspondence, for a state_dict to be renamed before loading:
#   2 layers: 0 conv1, 2 conv2, 6 fc1, 8 fc2
#   4 layers: 0 conv1, 2 conv2, 5 conv3, 7 conv4, 11 fc1, 13 fc2

NOSCOPE = {   # nb_filters, nb_dense, nb_layers (FoldedCNNs models/noscope.py model_params)
    "coral": (16, 128, 2),
    "night": (16, 128, 2),
    "taipei": (64, 32, 2),
    "roundabout": (32, 32, 4),
}


def noscope(video):
    filters, dense, layers = NOSCOPE[video]
    m = Model("noscope_" + video, [1, 3, 50, 50])
    m.add("conv1", "conv2d", out_channels=filters, kernel=3, padding=1)
    m.add("relu1", "relu")
    m.add("conv2", "conv2d", out_channels=filters, kernel=3, padding=1)
    m.add("relu2", "relu")
    relu = 3
    if layers == 2:
        m.add("pool", "maxpool2d", kernel=2)
    else:
        m.add("pool1", "maxpool2d", kernel=2)
        m.add("conv3", "conv2d", out_channels=2 * filters, kernel=3, padding=1)
        m.add("relu3", "relu")
        m.add("conv4", "conv2d", out_channels=2 * filters, kernel=3, padding=1)
        m.add("relu4", "relu")
        m.add("pool2", "maxpool2d", kernel=2)
        relu = 5
    m.add("flatten", "flatten")
    m.add("fc1", "linear", out_features=dense)
    m.add(f"relu{relu}", "relu")
    m.add("fc2", "linear", out_features=2)
    return m


def noscope_params(video):
    """Closed form: the convs (3x3, bias), fc1 on the pooled map, fc2."""
    c, d, layers = NOSCOPE[video]
    total = 3 * c * 9 + c + c * c * 9 + c
    side, width = 25, c
    if layers == 4:
        total += c * 2 * c * 9 + 2 * c + 2 * c * 2 * c * 9 + 2 * c
        side, width = 12, 2 * c
    return total + width * side * side * d + d + d * 2 + 2


# --- FoldedCNNs' game-scraping CNNs ------------------------------------------------------
# msr-fiddle/folded-cnns models/game.py ConvN with the '1_3s_1_convnet' template and the
# config/<game>/<task>/model_description.json of each task (conv1 32, convi 32, convn 8
# feature maps; out-h x out-w input; K = len(ClassNames)). Every conv is 3x3 padding 1 with
# bias, followed by a ReLU:
#   conv 3->32, maxpool 3 stride 2,
#   n x [conv 32, conv 32, conv 32, maxpool 3 stride 1],
#   conv -> 8, maxpool 3 stride 2, flatten, linear -> K.
# Names are ConvN's module paths: `conv.<i>` inside its nn.Sequential (the Flatten module
# included), `lin` for the classifier, so its state_dict loads by name.

GAME = {   # name: (FoldedCNNs config directory, out-h, out-w, n-conv-units, classes)
    "game_lol_goldnumber_fraction": ("lol/goldnumber-fraction", 22, 52, 1, 11),
    "game_lol_goldnumber_int": ("lol/goldnumber-int", 22, 52, 1, 111),
    "game_lol_timer_minutes": ("lol/timer-minutes", 15, 35, 1, 62),
    "game_apex_squad_count_v2": ("apex/squad_count_v2", 19, 25, 1, 22),
    "game_sot_coin_count": ("sot/coin_count-digits_3_4-v2", 17, 40, 1, 15),
    "game_sot_timer3": ("sot/timer3", 22, 30, 2, 27),
}


def game(name):
    _, h, w, units, classes = GAME[name]
    m = Model(name, [1, 3, h, w])
    i = 0

    def add(op, **attrs):
        nonlocal i
        m.add(f"conv.{i}", op, **attrs)
        i += 1

    add("conv2d", out_channels=32, kernel=3, padding=1)
    add("relu")
    add("maxpool2d", kernel=3, stride=2)
    for _ in range(units):
        for _ in range(3):
            add("conv2d", out_channels=32, kernel=3, padding=1)
            add("relu")
        add("maxpool2d", kernel=3, stride=1)
    add("conv2d", out_channels=8, kernel=3, padding=1)
    add("relu")
    add("maxpool2d", kernel=3, stride=2)
    add("flatten")
    m.add("lin", "linear", out_features=classes)
    return m


def game_params(name):
    """Closed form: the spatial size after the three pools, then the layer sizes."""
    _, h, w, units, classes = GAME[name]
    side = [((s - 3) // 2 + 1 - 2 * units - 3) // 2 + 1 for s in (h, w)]
    convs = 3 * 32 * 9 + 32 + 3 * units * (32 * 32 * 9 + 32) + 32 * 8 * 9 + 8
    return convs + 8 * side[0] * side[1] * classes + classes


# FoldedCNNs' FLOP counts of one (unfolded) input: config/model_map.json "og_ops", written by
# its flop_count.py as int(2 * thop.profile(model)[0]). Model.thop counts what thop counts
# (see there). The NoScope numbers are 2 * that exactly. The game-scraping numbers are 2 *
# that plus 2 * the MACs of the final linear layer: they were counted with a thop release
# whose nn.Linear rule is in_features multiplies + (in_features - 1) adds + 1 bias add per
# output element (0.0.31.post2001170342 has it; 0.0.31.post2005241907 counts in_features).
OG_OPS = {
    "noscope_coral": 16_400_512, "noscope_night": 16_400_512,
    "noscope_taipei": 196_160_128, "noscope_roundabout": 120_589_952,
    "game_lol_goldnumber_fraction": 16_784_480, "game_lol_goldnumber_int": 16_890_080,
    "game_lol_timer_minutes": 7_918_448, "game_apex_squad_count_v2": 7_176_032,
    "game_sot_coin_count": 10_132_064, "game_sot_timer3": 14_562_240,
}


# --- the list, with what each is checked against ----------------------------------------
# params: exact trainable parameter count; gmacs: conv+linear GMACs rounded to 2 places
# (torchvision's published "GFLOPS", which count multiply-accumulates); macs: exact.
MODELS = [
    # ResNet-18 (He et al. 2016), torchvision resnet18, ImageNet 224x224.
    (lambda: resnet("resnet18", [2, 2, 2, 2], False), {"params": 11_689_512, "gmacs": 1.81}),
    # ResNet-50 v1.5, torchvision resnet50.
    (lambda: resnet("resnet50", [3, 4, 6, 3], True),
     {"params": 25_557_032, "gmacs": 4.09, "macs": 4_089_184_256}),
    # ResNet-152 v1.5, torchvision resnet152.
    (lambda: resnet("resnet152", [3, 8, 36, 3], True), {"params": 60_192_808, "gmacs": 11.51}),
    # VGG-16 (Simonyan & Zisserman 2015), torchvision vgg16; adaptive 7x7 pool before the MLP.
    (vgg16, {"params": 138_357_544, "gmacs": 15.47}),
    # DenseNet-121 (Huang et al. 2017), torchvision densenet121.
    (lambda: densenet("densenet121", [6, 12, 24, 16]), {"params": 7_978_856, "gmacs": 2.83}),
    # DenseNet-201, torchvision densenet201.
    (lambda: densenet("densenet201", [6, 12, 48, 32]), {"params": 20_013_928, "gmacs": 4.29}),
    # CIFAR ResNet-32 (He et al. 2016, n=5) as in the DTR paper, projection shortcuts.
    (lambda: cifar_resnet("resnet32", 5), {"params": cifar_resnet_params(5)}),
    # CIFAR ResNet-1202 (n=200), the DTR paper's deepest chain.
    (lambda: cifar_resnet("resnet1202", 200), {"params": cifar_resnet_params(200)}),
    # U-Net (Ronneberger et al. 2015) as milesial/Pytorch-UNet, bilinear=True, 2 classes.
    (unet, {"params": unet_params()}),
    # NoScope's specialized CNNs as in FoldedCNNs, coral, night, taipei, roundabout:
    # "flops" is FoldedCNNs' published count for one input (OG_OPS), 2 * Model.thop.
    *[(lambda v=v: noscope(v), {"params": noscope_params(v), "flops": OG_OPS["noscope_" + v]})
      for v in NOSCOPE],
    # FoldedCNNs' game-scraping CNNs: "flops_linear_twice" is their published count (OG_OPS),
    # made with the older thop rule for nn.Linear.
    *[(lambda n=n: game(n), {"params": game_params(n), "flops_linear_twice": OG_OPS[n]})
      for n in GAME],
]

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    built = []
    failures = []
    for make, want in MODELS:
        m = make()
        got = {"params": m.params, "macs": m.macs, "gmacs": round(m.macs / 1e9, 2),
               "flops": 2 * m.thop, "flops_linear_twice": 2 * (m.thop + m.linear_macs)}
        for k, v in want.items():
            if got[k] != v:
                failures.append(f"{m.name}: {k} is {got[k]:,}, expected {v:,}")
        built.append(m)
        print(f"{m.name:28s} input {str(m.input['shape']):18s} layers {len(m.layers):5d}  "
              f"params {m.params:>13,}  MACs {m.macs:>17,}  output {m.shapes[m.prev]}")
    if failures:
        for f in failures:
            print("MISMATCH:", f, file=sys.stderr)
        sys.exit(1)
    for m in built:
        path = os.path.join(here, m.name + ".json")
        text = m.to_json()
        json.loads(text)   # well-formed
        with open(path, "w", encoding="ascii", newline="\n") as f:
            f.write(text)
    print(f"wrote {len(built)} models to {here}")


if __name__ == "__main__":
    main()
