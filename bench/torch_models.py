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
