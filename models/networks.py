"""The example networks of make_models.py, built with kiln_model.Model, and the closed-form
parameter counts and published figures they are checked against."""

from kiln_model import Model


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
# Upsampling as the reference: nn.Upsample(scale_factor=2, mode="bilinear",
# align_corners=True), kiln's resize.

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
        m.add(f"{p}.up", "resize", [x], scale=2, mode="linear",
              coordinate_transformation_mode="align_corners")
        m.add(f"{p}.cat", "concat", [skips[3 - i], f"{p}.up"])
        m.expect_channels(f"{p}.cat", cin)
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
