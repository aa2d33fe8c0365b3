#!/usr/bin/env python3
"""mobilenet_v2, mobilenet_v3_small, mobilenet_v3_large and efficientnet_b0 in plain torch.nn
(the GPU machine may lack torchvision), module for module as torchvision 0.29 builds them, so
their state_dict names, parameter counts and eval outputs are torchvision's: ReLU6 (v2),
ReLU/Hardswish with Hardsigmoid-gated squeeze-excite (v3, BatchNorm eps 1e-3), SiLU with
Sigmoid-gated squeeze-excite and stochastic depth (efficientnet_b0: identity in eval).

  MODELS[name]() -> nn.Module           torchvision's initialisation (kaiming conv, BN 1/0, ...)
  randomize(model, seed, image)         seeded weights a benchmark can check outputs with:
                                        BN running statistics measured on seeded random images
                                        (so each BN normalises to about unit scale instead of
                                        being the identity), then perturbed, BN's weights then
                                        redrawn smaller (a damping, so f16 rounding is not
                                        amplified as in a random chaotic net). Torchvision's own
                                        init leaves the logits near 1e-10: under f16's range.

`python3 bench/mobile_models.py [--image 64]` (needs torchvision) checks every model against
torchvision's: the same parameter count, the same state_dict names and shapes, and, with
torchvision's model loaded from this one's randomized state_dict, the same eval output
(max |difference| over max |output|, float64)."""
import math

import torch
from torch import nn


def make_divisible(v, divisor=8, min_value=None):
    """torchvision.models._utils._make_divisible."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvBNAct(nn.Sequential):
    """torchvision.ops.Conv2dNormActivation: conv (bias only without BN), BN, activation;
    names 0, 1, 2."""

    def __init__(self, cin, cout, k=3, stride=1, groups=1, act=nn.ReLU, eps=1e-5, momentum=0.1):
        layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout, eps=eps, momentum=momentum)]
        if act is not None:
            layers.append(act(inplace=True))
        super().__init__(*layers)


class SqueezeExcite(nn.Module):
    """torchvision.ops.SqueezeExcitation: avgpool, fc1 (1x1 conv), act, fc2, gate; x * gate."""

    def __init__(self, channels, squeeze, act=nn.ReLU, gate=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = act()
        self.scale_activation = gate()

    def forward(self, x):
        return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x))))) * x


class StochasticDepth(nn.Module):
    """torchvision.ops.StochasticDepth, mode 'row': in training each sample's branch is dropped
    with probability p and the survivors scaled by 1 / (1 - p); the identity in eval."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = 1.0 - self.p
        noise = torch.empty([x.shape[0]] + [1] * (x.ndim - 1), dtype=x.dtype, device=x.device).bernoulli_(keep)
        return x * noise.div_(keep)


def _init(model, linear):
    """torchvision's initialisation of these models; `linear(m)` for the Linear layers."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            linear(m)
            nn.init.zeros_(m.bias)


def _normal_001(m):
    nn.init.normal_(m.weight, 0, 0.01)


# --- mobilenet_v2 ---------------------------------------------------------------------------

class InvertedResidualV2(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = int(round(cin * expand))
        self.use_res_connect = stride == 1 and cin == cout
        layers = [ConvBNAct(cin, hidden, 1, act=nn.ReLU6)] if expand != 1 else []
        layers += [ConvBNAct(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
                   nn.Conv2d(hidden, cout, 1, 1, 0, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    SETTING = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
               (6, 320, 1, 1))

    def __init__(self, classes=1000):
        super().__init__()
        c, last = 32, 1280
        features = [ConvBNAct(3, c, 3, 2, act=nn.ReLU6)]
        for t, cout, n, s in self.SETTING:
            for i in range(n):
                features.append(InvertedResidualV2(c, cout, s if i == 0 else 1, t))
                c = cout
        features.append(ConvBNAct(c, last, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))
        _init(self, _normal_001)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# --- mobilenet_v3 ---------------------------------------------------------------------------

class InvertedResidualV3(nn.Module):
    def __init__(self, cin, k, expanded, cout, se, hs, stride, bn):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        act = nn.Hardswish if hs else nn.ReLU
        layers = [ConvBNAct(cin, expanded, 1, act=act, **bn)] if expanded != cin else []
        layers.append(ConvBNAct(expanded, expanded, k, stride, groups=expanded, act=act, **bn))
        if se:
            layers.append(SqueezeExcite(expanded, make_divisible(expanded // 4), nn.ReLU, nn.Hardsigmoid))
        layers.append(ConvBNAct(expanded, cout, 1, act=None, **bn))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        if self.use_res_connect:
            y += x
        return y


V3 = {   # (input, kernel, expanded, output, squeeze-excite, hardswish, stride), last channel
    "mobilenet_v3_large": ((
        (16, 3, 16, 16, False, False, 1), (16, 3, 64, 24, False, False, 2), (24, 3, 72, 24, False, False, 1),
        (24, 5, 72, 40, True, False, 2), (40, 5, 120, 40, True, False, 1), (40, 5, 120, 40, True, False, 1),
        (40, 3, 240, 80, False, True, 2), (80, 3, 200, 80, False, True, 1), (80, 3, 184, 80, False, True, 1),
        (80, 3, 184, 80, False, True, 1), (80, 3, 480, 112, True, True, 1), (112, 3, 672, 112, True, True, 1),
        (112, 5, 672, 160, True, True, 2), (160, 5, 960, 160, True, True, 1), (160, 5, 960, 160, True, True, 1)),
        1280),
    "mobilenet_v3_small": ((
        (16, 3, 16, 16, True, False, 2), (16, 3, 72, 24, False, False, 2), (24, 3, 88, 24, False, False, 1),
        (24, 5, 96, 40, True, True, 2), (40, 5, 240, 40, True, True, 1), (40, 5, 240, 40, True, True, 1),
        (40, 5, 120, 48, True, True, 1), (48, 5, 144, 48, True, True, 1), (48, 5, 288, 96, True, True, 2),
        (96, 5, 576, 96, True, True, 1), (96, 5, 576, 96, True, True, 1)),
        1024),
}


class MobileNetV3(nn.Module):
    def __init__(self, arch, classes=1000):
        super().__init__()
        setting, last = V3[arch]
        bn = {"eps": 0.001, "momentum": 0.01}
        layers = [ConvBNAct(3, setting[0][0], 3, 2, act=nn.Hardswish, **bn)]
        layers += [InvertedResidualV3(*s, bn) for s in setting]
        c = setting[-1][3]
        layers.append(ConvBNAct(c, 6 * c, 1, act=nn.Hardswish, **bn))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(6 * c, last), nn.Hardswish(inplace=True),
                                        nn.Dropout(0.2, inplace=True), nn.Linear(last, classes))
        _init(self, _normal_001)

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# --- efficientnet_b0 ------------------------------------------------------------------------

class MBConv(nn.Module):
    def __init__(self, cin, cout, k, stride, expand, sd_prob):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        hidden = make_divisible(cin * expand)
        layers = [ConvBNAct(cin, hidden, 1, act=nn.SiLU)] if hidden != cin else []
        layers += [ConvBNAct(hidden, hidden, k, stride, groups=hidden, act=nn.SiLU),
                   SqueezeExcite(hidden, max(1, cin // 4), lambda: nn.SiLU(inplace=True), nn.Sigmoid),
                   ConvBNAct(hidden, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(sd_prob)

    def forward(self, x):
        y = self.block(x)
        if self.use_res_connect:
            y = self.stochastic_depth(y)
            y += x
        return y


class EfficientNetB0(nn.Module):
    SETTING = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
               (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1))  # expand k s in out n

    def __init__(self, classes=1000, stochastic_depth_prob=0.2):
        super().__init__()
        layers = [ConvBNAct(3, 32, 3, 2, act=nn.SiLU)]
        total, block = sum(s[-1] for s in self.SETTING), 0
        for expand, k, stride, cin, cout, n in self.SETTING:
            stage = []
            for i in range(n):
                stage.append(MBConv(cin if i == 0 else cout, cout, k, stride if i == 0 else 1, expand,
                                    stochastic_depth_prob * block / total))
                block += 1
            layers.append(nn.Sequential(*stage))
        layers.append(ConvBNAct(320, 1280, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2, inplace=True), nn.Linear(1280, classes))
        _init(self, lambda m: nn.init.uniform_(m.weight, -1 / math.sqrt(m.out_features), 1 / math.sqrt(m.out_features)))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


MODELS = {
    "mobilenet_v2": MobileNetV2,
    "mobilenet_v3_small": lambda: MobileNetV3("mobilenet_v3_small"),
    "mobilenet_v3_large": lambda: MobileNetV3("mobilenet_v3_large"),
    "efficientnet_b0": EfficientNetB0,
}

PARAMS = {"mobilenet_v2": 3504872, "mobilenet_v3_small": 2542856, "mobilenet_v3_large": 5483032,
          "efficientnet_b0": 5288548}   # torchvision's num_params


@torch.no_grad()
def randomize(model, seed=0, image=64, batch=8):
    """Seeded weights with BN that is not the identity and activations that neither underflow
    nor overflow f16 nor amplify its rounding: conv and linear weights as
    MODELS' initialisation draws them under `seed`; BN's running statistics measured on `batch`
    seeded N(0, 1) images of `image` pixels (cumulative averages, BN alone in training mode),
    then each mean moved by 0.1 standard deviations and each variance scaled by 0.8-1.25 at
    random; BN biases N(0, 0.1), BN weights 0.5-1.5 while the statistics are measured, then
    redrawn from 0.5-1: each layer then hands the next about 3/4 of the scale that one was
    calibrated for. Without that damping these random nets are chaotic: PyTorch's own f16
    error (against f64) is 2e-3 to 2.5e-2 at 224 pixels and up to 0.2 at 32 (efficientnet_b0's
    logits 25-111 in std), too loose to check kiln by; with it about 1e-3 at both, as for
    a trained net (4e-4 to 1.6e-3 on the CPU, 32 and 224 pixels). Leaves the model in eval mode."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    for m in model.modules():   # redraw the initialisation under the seed, in module order
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", generator=g)
            else:
                bound = 1 / math.sqrt(m.in_features)
                nn.init.uniform_(m.weight, -bound, bound, generator=g)
            if m.bias is not None:
                nn.init.uniform_(m.bias, -0.1, 0.1, generator=g)
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for m in bns:
        m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
        m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    model.eval()
    saved = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None   # cumulative average over the calibration batch
        m.train()
    x = torch.randn(batch, 3, image, image, generator=g)
    device = next(model.parameters()).device
    model(x.to(device))
    for m, momentum in zip(bns, saved):
        m.momentum = momentum
        m.running_mean += 0.1 * torch.randn(m.num_features, generator=g).to(device) * m.running_var.sqrt()
        m.running_var *= torch.exp(torch.empty(m.num_features).uniform_(math.log(0.8), math.log(1.25), generator=g)
                                   ).to(device)
    for m in bns:   # the damping: see the docstring
        m.weight.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.5)
    model.eval()
    return model


def build(name, seed=0, image=64):
    """MODELS[name] with randomize()'s weights, float32 on the CPU, eval mode."""
    return randomize(MODELS[name](), seed, image)


def _check(image):
    import torchvision
    worst = 0.0
    for name, make in MODELS.items():
        ours = build(name, seed=0, image=image)
        theirs = getattr(torchvision.models, name)(weights=None).eval()
        n_ours, n_theirs = (sum(p.numel() for p in m.parameters()) for m in (ours, theirs))
        a, b = ours.state_dict(), theirs.state_dict()
        shapes = {k: tuple(v.shape) for k, v in a.items()} == {k: tuple(v.shape) for k, v in b.items()}
        theirs.load_state_dict(a)   # strict: the same names
        x = torch.randn(2, 3, image, image, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            y0, y1 = ours.double()(x.double()), theirs.double()(x.double())
        diff = ((y0 - y1).abs().max() / y1.abs().max()).item()
        ok = n_ours == n_theirs == PARAMS[name] and shapes and diff < 1e-12
        worst = max(worst, diff)
        print(f"{name:20} params {n_ours:>9,} (torchvision {n_theirs:,}, listed {PARAMS[name]:,}), "
              f"{len(a)} state_dict entries {'same names and shapes' if shapes else 'DIFFERENT SHAPES'}; "
              f"eval output max |ours - torchvision| / max |torchvision| = {diff:.1e} "
              f"(output max {y1.abs().max().item():.3g}, std {y1.std().item():.3g}): {'ok' if ok else 'FAIL'}")
        if not ok:
            raise SystemExit(1)
    print(f"all {len(MODELS)} match torchvision {torchvision.__version__} (torch {torch.__version__})")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image", type=int, default=64, help="input side for the output comparison (default 64)")
    _check(ap.parse_args().image)
