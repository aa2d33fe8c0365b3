#!/usr/bin/env python3
"""ONNX round trip (issue 13 point 5): PyTorch models exported with torch.onnx.export,
imported by kiln, and kiln's output compared with PyTorch's on the same input and weights.

What it does
  For torchvision's resnet18, resnet50, vgg16, densenet121 and a small UNet (defined here:
  conv-bn-relu blocks, max-pool down, nearest upsample, skip concatenation), seeded random
  weights (or torchvision's pretrained ones with --pretrained, which downloads them), eval
  mode:
    1. torch.onnx.export(model, x, MODEL.onnx) with no other argument, as a user would
       (PyTorch >= 2.9: the dynamo exporter, opset 18-20, weights in MODEL.onnx.data; each
       BatchNormalization folded into its Conv, state_dict names kept). --legacy uses the
       TorchScript exporter instead (dynamo=False, opset_version=OPSET, dynamic batch axis,
       training=TrainingMode.PRESERVE so BatchNormalization stays; --fuse-bn: plain eval).
    2. `kiln import MODEL.onnx -o MODEL.json --weights-out MODEL.safetensors`: the layer
       count, and how many of kiln's weight names are PyTorch state_dict names.
    3. `kiln run MODEL.onnx --device cpu` (the ONNX file's own weights) on the same input,
       and `--device gpu` where torch.cuda.is_available() (kiln needs a GPU there too).
    4. The relative L2 error of kiln's output against PyTorch's float32 output (and against
       float64 PyTorch on the cpu, the exact reference): pass when < TOL (1e-4 by default:
       float32 sums in a different order over deep networks).
  Writes bench/results/onnx_roundtrip.csv (and .md): model, opset, ONNX nodes, kiln layers,
  state_dict names kept, cpu error, gpu error, kiln and PyTorch times, pass/fail.

Needs PyTorch and torchvision (not installed on kiln's build machines); exits 2 with a
message when they are missing.

Usage
  python3 bench/onnx_roundtrip.py build/generator/kiln [--models resnet18,unet] [--batch 2]
      [--legacy [--opset 17] [--fuse-bn]] [--pretrained] [--tol 1e-4] [--out bench/results/onnx_roundtrip]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from safetensors_names import names as st_names  # noqa: E402

try:
    import torch
    from torch import nn
    import torchvision
except ImportError as e:
    print(f"onnx_roundtrip.py: needs PyTorch and torchvision ({e}); install them "
          "(pip install torch torchvision) on the machine that runs this benchmark", file=sys.stderr)
    sys.exit(2)


class UNet(nn.Module):
    """A small UNet: two levels down (conv-bn-relu x2, max-pool), a bottleneck, two levels up
    (nearest upsample by 2, concatenation with the skip, conv-bn-relu x2), a 1x1 head."""

    @staticmethod
    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    def __init__(self, cin=3, classes=2, w=16):
        super().__init__()
        self.down1, self.down2 = self.block(cin, w), self.block(w, 2 * w)
        self.pool = nn.MaxPool2d(2)
        self.mid = self.block(2 * w, 4 * w)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.up2, self.up1 = self.block(6 * w, 2 * w), self.block(3 * w, w)
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(self.pool(d1))
        m = self.mid(self.pool(d2))
        u2 = self.up2(torch.cat([self.up(m), d2], 1))
        u1 = self.up1(torch.cat([self.up(u2), d1], 1))
        return self.head(u1)


def make(name, pretrained):
    if name == "unet":
        return UNet(), (3, 128, 128)
    ctor = getattr(torchvision.models, name)
    return ctor(weights="DEFAULT" if pretrained else None), (3, 224, 224)


def kiln(args, timeout=3600):
    t0 = time.time()
    p = subprocess.run([ARGS.kiln, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"kiln {' '.join(map(str, args))}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout, time.time() - t0


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def roundtrip(name, work):
    torch.manual_seed(0)
    model, chw = make(name, ARGS.pretrained)
    model.eval()
    x = torch.randn(ARGS.batch, *chw)
    path = os.path.join(work, name + ".onnx")
    if ARGS.legacy:
        mode = torch.onnx.TrainingMode.EVAL if ARGS.fuse_bn else torch.onnx.TrainingMode.PRESERVE
        torch.onnx.export(model, x, path, opset_version=ARGS.opset, input_names=["image"], output_names=["out"],
                          dynamic_axes={"image": {0: "N"}, "out": {0: "N"}}, training=mode,
                          do_constant_folding=True, dynamo=False)
    else:
        torch.onnx.export(model, x, path)  # today's default, exactly as a user writes it
    with torch.no_grad():
        t0 = time.time()
        want = model(x).numpy()
        torch_cpu_s = time.time() - t0
        want64 = model.double()(x.double()).numpy()
        model.float()
    import onnx
    graph = onnx.load(path, load_external_data=False)
    row = {"model": name, "exporter": "legacy" if ARGS.legacy else "default",
           "opset": next(o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")),
           "input": "x".join(map(str, (ARGS.batch, *chw)))}
    row["onnx_nodes"] = len(graph.graph.node)
    out, _ = kiln(["import", path, "-o", os.path.join(work, name + ".json"), "--weights-out",
                   os.path.join(work, name + ".safetensors")])
    row["kiln_layers"] = out.split("-> ")[1].split(" layers")[0] if "-> " in out else ""
    kiln_names = st_names(os.path.join(work, name + ".safetensors"))
    sd = {k for k in model.state_dict() if not k.endswith("num_batches_tracked")}
    row["state_dict_names_kept"] = f"{len(kiln_names & sd)}/{len(kiln_names)}"
    xp = os.path.join(work, name + "_x.npy")
    np.save(xp, x.numpy())
    _, row["kiln_cpu_s"] = kiln(["run", path, "--device", "cpu", "--input", xp, "--output", os.path.join(work, "y.npy")])
    got = np.load(os.path.join(work, "y.npy"))
    row["cpu_rel_err"] = rel(got, want)
    row["cpu_rel_err_f64"] = rel(got, want64)
    row["torch_cpu_s"] = torch_cpu_s
    ok = row["cpu_rel_err"] < ARGS.tol
    if torch.cuda.is_available():
        gpu = os.path.join(work, "gpu.json")
        if not os.path.exists(gpu):
            kiln(["gpu", "detect", "-o", gpu])
        _, row["kiln_gpu_s"] = kiln(["run", path, "--device", "gpu", "--gpu", gpu, "--input", xp, "--output",
                                     os.path.join(work, "yg.npy")])
        row["gpu_rel_err"] = rel(np.load(os.path.join(work, "yg.npy")), want)
        ok = ok and row["gpu_rel_err"] < ARGS.tol
    else:
        row["gpu_rel_err"] = "no gpu"
    row["result"] = "pass" if ok else "FAIL"
    return row


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kiln")
    ap.add_argument("--models", default="resnet18,resnet50,vgg16,densenet121,unet")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--legacy", action="store_true", help="the TorchScript exporter (dynamo=False)")
    ap.add_argument("--opset", type=int, default=17, help="--legacy only")
    ap.add_argument("--pretrained", action="store_true")
    ap.add_argument("--fuse-bn", action="store_true", help="--legacy only")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "onnx_roundtrip"))
    ARGS = ap.parse_args()
    if not ARGS.legacy and (ARGS.fuse_bn or ARGS.opset != 17):
        ap.error("--opset and --fuse-bn apply to --legacy only (the default exporter chooses)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kiln-onnx-") as work:
        for name in ARGS.models.split(","):
            try:
                rows.append(roundtrip(name, work))
            except Exception as e:  # a failing model is a row, not the end of the run
                rows.append({"model": name, "result": "error", "error": str(e).splitlines()[0][:300]})
            print(rows[-1], flush=True)
    cols = ["model", "exporter", "opset", "input", "onnx_nodes", "kiln_layers", "state_dict_names_kept", "cpu_rel_err",
            "cpu_rel_err_f64", "gpu_rel_err", "kiln_cpu_s", "torch_cpu_s", "kiln_gpu_s", "result", "error"]
    meta = [f"kiln {common.kiln_version(ARGS.kiln)}", f"torch {torch.__version__}",
            f"torchvision {torchvision.__version__}", f"gpu {common.gpu_name() if torch.cuda.is_available() else 'none'}"]
    common.write_csv(ARGS.out + ".csv", meta, cols, rows)
    with open(ARGS.out + ".md", "w") as f:
        f.write("# ONNX round trip: torch.onnx.export -> kiln\n\n" + ", ".join(meta) + "\n\n")
        f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for r in rows:
            f.write("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |\n")
    print(f"wrote {ARGS.out}.md")
    sys.exit(0 if all(r["result"] == "pass" for r in rows) else 1)


if __name__ == "__main__":
    main()
