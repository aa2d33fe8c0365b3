"""The PyTorch peers of kiln's example models, written out in torch.nn (the GPU machine may
lack torchvision): the same layers as models/*.json, with their torchvision structure."""
import torch
from torch import nn


def vgg16(classes=1000):
    layers, c = [], 3
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if v == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU(inplace=True)]
            c = v
    return nn.Sequential(nn.Sequential(*layers), nn.AdaptiveAvgPool2d(7), nn.Flatten(),
                         nn.Linear(512 * 49, 4096), nn.ReLU(inplace=True), nn.Dropout(0.0),
                         nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.0), nn.Linear(4096, classes))


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + (self.down(x) if self.down is not None else x))


def resnet(blocks, classes=1000):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for i, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for b in range(n):
            layers.append(Bottleneck(cin, width, 2 if (b == 0 and i > 0) else 1))
            cin = width * 4
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))


def resnet50():
    return resnet((3, 4, 6, 3))


def resnet152():
    return resnet((3, 8, 36, 3))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth=32):
        super().__init__()
        self.f = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, 4 * growth, 1, bias=False),
                               nn.BatchNorm2d(4 * growth), nn.ReLU(inplace=True),
                               nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))

    def forward(self, feats):
        return torch.cat([feats, self.f(feats)], 1)


def densenet(blocks, classes=1000, growth=32):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    c = 64
    for i, n in enumerate(blocks):
        for _ in range(n):
            layers.append(DenseLayer(c, growth))
            c += growth
        if i < len(blocks) - 1:
            layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=True), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2)]
            c //= 2
    return nn.Sequential(*layers, nn.BatchNorm2d(c), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(c, classes))


def densenet121():
    return densenet((6, 12, 24, 16))


def densenet201():
    return densenet((6, 12, 48, 32))


MODELS = {"vgg16": vgg16, "resnet50": resnet50, "resnet152": resnet152, "densenet121": densenet121,
          "densenet201": densenet201}


# --- FoldedCNNs' models (models/README.md, FoldedCNNs section) --------------------------------
# The NoScope specialized CNNs and the game-scraping ConvN networks of FoldedCNNs, layer for
# layer as models/noscope_*.json and models/game_*.json (kiln's files are the reference),
# unfolded (fold=1) or folded by f: first conv f*C inputs, every hidden width int(w * m) with
# m = sqrt(f) unless a multiplier is given, last layer f*K outputs. Folded() adds the input
# and output views.

NOSCOPE = {   # filters, dense units, conv layers (2 or 4); 50x50 RGB input, 2 classes
    "noscope_coral": (16, 128, 2),
    "noscope_night": (16, 128, 2),
    "noscope_taipei": (64, 32, 2),
    "noscope_roundabout": (32, 32, 4),
}

GAME = {   # input height, width, conv units n, classes K (ConvN '1_3s_1_convnet', 32/32/8 maps)
    "game_lol_goldnumber_fraction": (22, 52, 1, 11),
    "game_lol_goldnumber_int": (22, 52, 1, 111),
    "game_lol_timer_minutes": (15, 35, 1, 62),
    "game_apex_squad_count_v2": (19, 25, 1, 22),
    "game_sot_coin_count": (17, 40, 1, 15),
    "game_sot_timer3": (22, 30, 2, 27),
}


def _conv3(cin, cout):
    return nn.Conv2d(cin, cout, 3, padding=1)


def _multiplier(fold, multiplier):
    return fold ** 0.5 if multiplier is None else multiplier


def noscope(name, fold=1, multiplier=None):
    """A bare nn.Sequential as the reference (state_dict keys 0.weight ...): conv, relu, conv,
    relu, maxpool 2 [, conv 2x, relu, conv 2x, relu, maxpool 2], flatten, linear, relu, linear."""
    filters, dense, convs = NOSCOPE[name]
    m = _multiplier(fold, multiplier)
    first, middle, hidden = int(filters * m), int(2 * filters * m), int(dense * m)
    layers = [_conv3(3 * fold, first), nn.ReLU(inplace=True), _conv3(first, first), nn.ReLU(inplace=True),
              nn.MaxPool2d(2)]
    side, width = 50 // 2, first
    if convs == 4:
        layers += [_conv3(first, middle), nn.ReLU(inplace=True), _conv3(middle, middle), nn.ReLU(inplace=True),
                   nn.MaxPool2d(2)]
        side, width = side // 2, middle
    layers += [nn.Flatten(), nn.Linear(width * side * side, hidden), nn.ReLU(inplace=True),
               nn.Linear(hidden, 2 * fold)]
    return nn.Sequential(*layers)


class ConvN(nn.Module):
    """FoldedCNNs' game-scraping network: `conv` (conv 3->32, maxpool 3/2, n x [3 convs, maxpool
    3/1], conv ->8, maxpool 3/2, flatten; every conv 3x3 padding 1 with a ReLU) and `lin`, so
    the state_dict names are kiln's layer names."""

    def __init__(self, name, fold=1, multiplier=None):
        super().__init__()
        height, width, units, classes = GAME[name]
        m = _multiplier(fold, multiplier)
        hidden, last = int(32 * m), int(8 * m)
        layers = [_conv3(3 * fold, hidden), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2)]
        for _ in range(units):
            for _ in range(3):
                layers += [_conv3(hidden, hidden), nn.ReLU(inplace=True)]
            layers.append(nn.MaxPool2d(3, 1))
        layers += [_conv3(hidden, last), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2), nn.Flatten()]
        self.conv = nn.Sequential(*layers)

        def side(s):  # maxpool 3/2, n maxpools 3/1, maxpool 3/2 (the convs keep the size)
            return ((s - 3) // 2 + 1 - 2 * units - 3) // 2 + 1
        self.lin = nn.Linear(last * side(height) * side(width), classes * fold)

    def forward(self, x):
        return self.lin(self.conv(x))


class Folded(nn.Module):
    """The fold and unfold as views: [N, C, H, W] (NCHW-contiguous, N a multiple of f) ->
    [N/f, f*C, H, W] -> net -> [N/f, f*K] -> [N, K]; image i of a folded input is channels
    i*C..(i+1)*C, its logits columns i*K..(i+1)*K."""

    def __init__(self, net, factor):
        super().__init__()
        self.net, self.factor = net, factor

    def forward(self, x):
        n, c, h, w = x.shape
        return self.net(x.view(n // self.factor, self.factor * c, h, w)).view(n, -1)


FOLDED_CNNS = (*GAME, *NOSCOPE)


def folded_cnn(name, fold=1, multiplier=None):
    """A FoldedCNNs model (a name of FOLDED_CNNS) folded by `fold`, wrapped in Folded."""
    net = ConvN(name, fold, multiplier) if name in GAME else noscope(name, fold, multiplier)
    return Folded(net, fold)


MODELS.update({name: (lambda name=name: folded_cnn(name).net) for name in FOLDED_CNNS})
