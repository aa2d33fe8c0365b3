#!/usr/bin/env python3
"""Exports the conformance set's CNNs with today's PyTorch and strips their weights.

Maintainer tool, never run in CI (it needs torch + torchvision; install them into a venv:
`python3 -m venv V && V/bin/pip install torch torchvision onnx onnxscript`). Usage:
    V/bin/python tests/onnx/torchvision/export_models.py OUT_DIR [MODEL...]
Each model is exported exactly as a user would: `torch.onnx.export(model, x, path)` with no
other argument (PyTorch >= 2.9: the dynamo exporter, opset 18+, weights possibly in
`path.data`). Then `strip_weights` turns every floating-point initializer into a stub that
keeps its name, type, shape and the statistics the test needs to draw seeded weights of the
same scale (weights.py); integer initializers (shapes, axes, indices) are kept as they are.
The stripped graphs are what tests/onnx/torchvision/ commits."""
import os
import sys

import torch
import torch.nn as nn
import torchvision.models as tvm
import torchvision.models.segmentation as tvs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from weights import strip_weights  # noqa: E402


class UNet(nn.Module):
    """A two-level UNet of the usual shape: conv blocks, max-pool down, ConvTranspose up."""

    def __init__(self, c=16, classes=3):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                                 nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

        self.d1, self.d2, self.mid = block(3, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.u2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.b2 = block(4 * c, 2 * c)
        self.u1 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.b1 = block(2 * c, c)
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        x1 = self.d1(x)
        x2 = self.d2(nn.functional.max_pool2d(x1, 2))
        m = self.mid(nn.functional.max_pool2d(x2, 2))
        y = self.b2(torch.cat([self.u2(m), x2], 1))
        y = self.b1(torch.cat([self.u1(y), x1], 1))
        return self.head(y)


class Yolo(nn.Module):
    """A YOLO-style detector: SiLU conv blocks, a CSP-like split, an upsampled second scale."""

    def __init__(self, c=16, outputs=3 * 85):
        super().__init__()

        def cbs(i, o, s=1):
            return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.SiLU())

        self.stem = nn.Sequential(cbs(3, c, 2), cbs(c, 2 * c, 2))
        self.s1 = nn.Sequential(cbs(2 * c, 4 * c, 2), cbs(4 * c, 4 * c))
        self.s2 = nn.Sequential(cbs(4 * c, 8 * c, 2), cbs(8 * c, 8 * c))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.fuse = cbs(12 * c, 4 * c)
        self.head1 = nn.Conv2d(4 * c, outputs, 1)
        self.head2 = nn.Conv2d(8 * c, outputs, 1)

    def forward(self, x):
        p1 = self.s1(self.stem(x))
        p2 = self.s2(p1)
        f = self.fuse(torch.cat([self.up(p2), p1], 1))
        return self.head1(f), self.head2(p2)


class SegOut(nn.Module):
    """torchvision's segmentation nets return a dict; an ONNX graph returns its tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def seg(fn):
    return lambda: SegOut(fn(weights=None, weights_backbone=None, aux_loss=False))


# name -> (constructor, input H=W). Small images keep the CPU test fast; inception_v3 needs 75;
# vgg16 and alexnet 224: their AdaptiveAvgPool2d to 7x7 (6x6) from a smaller map exports as
# GatherND index arithmetic, which is not what a deployed model runs.
MODELS = {
    "resnet18": (lambda: tvm.resnet18(), 64),
    "resnet50": (lambda: tvm.resnet50(), 64),
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(), 64),
    "wide_resnet50_2": (lambda: tvm.wide_resnet50_2(), 64),
    "vgg16": (lambda: tvm.vgg16(), 224),
    "alexnet": (lambda: tvm.alexnet(), 224),
    "squeezenet1_1": (lambda: tvm.squeezenet1_1(), 64),
    "densenet121": (lambda: tvm.densenet121(), 64),
    "googlenet": (lambda: tvm.googlenet(aux_logits=False, init_weights=True), 64),
    "inception_v3": (lambda: tvm.inception_v3(aux_logits=False, init_weights=True), 96),
    "regnet_x_400mf": (lambda: tvm.regnet_x_400mf(), 64),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(), 64),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(), 64),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(), 64),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(), 64),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(), 64),
    "mnasnet1_0": (lambda: tvm.mnasnet1_0(), 64),
    "shufflenet_v2_x1_0": (lambda: tvm.shufflenet_v2_x1_0(), 64),
    "convnext_tiny": (lambda: tvm.convnext_tiny(), 64),
    "fcn_resnet50": (seg(tvs.fcn_resnet50), 64),
    "lraspp_mobilenet_v3_large": (
        lambda: SegOut(tvs.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)), 64),
    "unet": (lambda: UNet(), 64),
    "yolo": (lambda: Yolo(), 64),
}


def export(name, out_dir):
    make, size = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(1, 3, size, size)
    raw = os.path.join(out_dir, "raw", name + ".onnx")
    os.makedirs(os.path.dirname(raw), exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, x, raw)  # exactly as a user would: no other argument
    strip_weights(raw, os.path.join(out_dir, name + ".onnx"))
    print(f"{name}: exported ({size}x{size})", flush=True)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out_dir = sys.argv[1]
    for name in sys.argv[2:] or MODELS:
        export(name, out_dir)


if __name__ == "__main__":
    main()
