#!/usr/bin/env python3
"""Writes the example models of kiln (kiln-model/1, DESIGN.md 4.1) into models/*.json.

Run: python3 models/make_models.py [--kiln build/generator/kiln]   (deterministic output)

The networks are built in networks.py with kiln_model.py's builder. Layer names follow the
module paths of the reference implementations (torchvision, milesial/Pytorch-UNet for the
U-Net, msr-fiddle/folded-cnns for the game-scraping CNNs), so a PyTorch state_dict saved as
.safetensors loads by name: `<layer>.weight`, `<layer>.bias`, `<layer>.running_mean`,
`<layer>.running_var`. Layers that hold no parameters and have no module of their own (a
functional relu, the residual add, the concat, flatten) get names in the same dotted style.
The NoScope CNNs keep conv1/fc1-style names (see networks.py).

Each model's shapes and counts are kiln's own (`kiln inspect --json`): trainable parameter
counts (conv and linear weight/bias, batchnorm weight and bias; not the running statistics),
multiply-accumulates (conv2d: N*O*OH*OW*(C/groups)*KH*KW; linear: N*in*out) and, for the
FoldedCNNs models, FLOPs as thop counts them; they are compared with published numbers, or
with an independent closed-form count where nothing is published. Any mismatch raises and
nothing is written.
"""

import argparse
import json
import os
import sys

from networks import (GAME, NOSCOPE, OG_OPS, cifar_resnet, cifar_resnet_params, densenet, game, game_params,
                      noscope, noscope_params, resnet, unet, unet_params, vgg16)

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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(here, "..", "build", "generator", "kiln"),
                    help="the kiln whose `inspect --json` gives the shapes and counts (default: the build's)")
    args = ap.parse_args()
    if not os.access(args.kiln, os.X_OK):
        sys.exit(f"make_models.py: no kiln at {args.kiln}: build it (make build) or name one with --kiln")
    built = []
    failures = []
    for make, want in MODELS:
        m = make()
        m.measure(args.kiln)
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
