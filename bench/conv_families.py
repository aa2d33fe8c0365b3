#!/usr/bin/env python3
"""Tensor-core conv families against cuDNN (issue 18 point 8): for each conv layer shape of
resnet50 and of the FoldedCNNs models, the best measured kernel of each generated family
(the Hopper wgmma/TMA family where the GPU has one, the mma.sync implicit GEMM, the direct
conv) beside cuDNN's best algorithm, per dtype (f16, bf16, f32 = tf32 on tensor cores) and
batch size.

What it does
  For every (model, dtype, batch): `kiln bench MODEL --variants all` (every valid variant of
  every conv, linear and pool layer checked against the CPU reference, then timed: CUDA
  events, warm-up, the median of --runs, cuDNN's best algorithm timed in the same run) into
  a work directory; from its sweep.csv, per conv layer shape and family: the fastest passing
  variant, its time, TFLOP/s, and its ratio to cuDNN (< 1: kiln faster), plus the variant
  the cost model chose. Models: resnet50 (224x224, or --image) and noscope_coral /
  noscope_roundabout folded by 4 (`kiln fold`: FoldedCNNs' shapes; their batch B means B
  folded samples, 4B images).
  Writes OUT.csv (one row per layer shape and family), OUT.md (per configuration: the
  FLOP-weighted and geometric-mean ratio to cuDNN of each family's best and of the model's
  choice) and OUT.svg (geomean speedup over cuDNN per family and configuration).
  --device emu runs the same driver on the CPU emulator (checks only, nothing timed): it
  proves the pipeline without a GPU; use small --batches and --image there.

Usage
  python3 bench/conv_families.py build/generator/kiln [--models resnet50,coral4,roundabout4]
      [--dtypes f16,bf16,f32] [--batches 1,32,256] [--image 224] [--device gpu|emu]
      [--gpu auto|h100|...] [--runs 20] [--shard I/N] [--out bench/results/conv_families]
"""
import argparse
import csv
import math
import os
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

MODELS = {"resnet50": ("resnet50", None), "coral4": ("noscope_coral", 4),
          "roundabout4": ("noscope_roundabout", 4)}


def model_file(kiln, name, work):
    base, factor = MODELS[name]
    if factor is None:
        return base
    path = os.path.join(work, f"{name}.json")
    if not os.path.exists(path):
        p = common.run_kiln(kiln, "fold", base, "--factor", factor, "-o", path)
        if p.returncode:
            raise SystemExit(f"kiln fold {base}: {common.last_line(p)}")
    return path


def sweep(args, model, dtype, batch, work):
    out = os.path.join(work, f"{os.path.basename(model)}_{dtype}_b{batch}")
    cmd = ["bench", model, "--dtype", dtype, "--batch", batch, "--gpu", args.gpu, "--device",
           args.device, "-o", out, "--variants", "all", "--runs", args.runs]
    if args.image and not model.endswith(".json"):
        cmd += ["--image", args.image]
    if args.shard:
        cmd += ["--shard", args.shard]
    print("kiln", " ".join(map(str, cmd)), flush=True)
    p = common.run_kiln(args.kiln, *cmd, timeout=args.timeout)
    csv_path = os.path.join(out, "sweep.csv")
    # 143: stopped at --timeout, what was measured saved; 1: some variant failed its check
    # (its row says so, the others stand).
    if p.returncode not in (0, 1, 143) or not os.path.exists(csv_path):
        print(f"  failed: {common.last_line(p)}", flush=True)
        return None
    if p.returncode:
        print(f"  {'partial' if p.returncode == 143 else 'with check failures'}: {common.last_line(p)}",
              flush=True)
    with open(csv_path) as f:
        return list(csv.DictReader(f))


def num(s):
    return float(s) if s not in ("", None) else None


def best_per_family(rows):
    """{(shape, family): row of the fastest passing variant} over the conv rows, and the
    family the cost model chose per shape."""
    best, chosen = {}, {}
    for r in rows:
        if not r["op"].startswith("conv2d") or r["check"] != "pass":
            continue
        key = (r["shape"], r["family"])
        if r["model_choice"] == "1":
            chosen[r["shape"]] = r
        ms = num(r["median_ms"])
        old = best.get(key)
        if old is None or (ms is not None and (num(old["median_ms"]) is None or ms < num(old["median_ms"]))):
            best[key] = r
    return best, chosen


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kiln")
    ap.add_argument("--models", default="resnet50,coral4,roundabout4")
    ap.add_argument("--dtypes", default="f16,bf16,f32")
    ap.add_argument("--batches", default="1,32,256")
    ap.add_argument("--image", default="")
    ap.add_argument("--device", choices=["gpu", "emu"], default="gpu")
    ap.add_argument("--gpu", default="auto")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--shard", default="")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per kiln bench")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "conv_families"))
    args = ap.parse_args()
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown:
        ap.error(f"unknown model {' '.join(unknown)} (known: {', '.join(MODELS)})")
    if args.device == "emu" and args.gpu == "auto":
        ap.error("--device emu needs a descriptor: --gpu h100 (or another shipped name)")
    rows, summary = [], []
    with tempfile.TemporaryDirectory(prefix="kiln-families-") as work:
        for name in args.models.split(","):
            model = model_file(args.kiln, name, work)
            for dtype in args.dtypes.split(","):
                for batch in map(int, args.batches.split(",")):
                    factor = MODELS[name][1] or 1  # a folded model's batch counts folded samples
                    sw = sweep(args, model, dtype, batch * factor, work)
                    if sw is None:
                        summary.append({"model": name, "dtype": dtype, "batch": batch, "family": "(kiln bench failed)"})
                        continue
                    best, chosen = best_per_family(sw)
                    per_family = defaultdict(list)
                    for (shape, family), r in sorted(best.items()):
                        ms, cudnn = num(r["median_ms"]), num(r["cudnn_ms"])
                        row = {"model": name, "dtype": dtype, "batch": batch, "shape": shape,
                               "layers": r["layers"], "family": family, "variant": r["variant"],
                               "median_ms": r["median_ms"], "tflops": r["tflops"], "cudnn_ms": r["cudnn_ms"],
                               "ratio_to_cudnn": f"{ms / cudnn:.4g}" if ms and cudnn else "",
                               "model_choice": int(chosen.get(shape, {}).get("variant") == r["variant"]),
                               "predicted_us": r["predicted_us"]}
                        rows.append(row)
                        per_family[family].append(row)
                    for shape, r in chosen.items():
                        per_family["(model's choice)"].append({"median_ms": r["median_ms"], "cudnn_ms": r["cudnn_ms"],
                                                               "tflops": r["tflops"]})
                    for family, rs in sorted(per_family.items()):
                        ratios = [num(r["median_ms"]) / num(r["cudnn_ms"]) for r in rs
                                  if num(r["median_ms"]) and num(r["cudnn_ms"])]
                        kiln_total = sum(num(r["median_ms"]) or 0 for r in rs)
                        cudnn_total = sum(num(r["cudnn_ms"]) or 0 for r in rs)
                        summary.append({"model": name, "dtype": dtype, "batch": batch, "family": family,
                                        "shapes": len(rs), "geomean_ratio": f"{geomean(ratios):.3f}" if ratios else "",
                                        "time_weighted_ratio": f"{kiln_total / cudnn_total:.3f}"
                                        if kiln_total and cudnn_total else ""})
    meta = [f"kiln {common.kiln_version(args.kiln)}", f"device {args.device}", f"gpu {args.gpu}",
            f"runs {args.runs}", f"image {args.image or 'model default'}"]
    cols = ["model", "dtype", "batch", "shape", "layers", "family", "variant", "median_ms", "tflops",
            "cudnn_ms", "ratio_to_cudnn", "model_choice", "predicted_us"]
    common.write_csv(args.out + ".csv", meta, cols, rows)
    with open(args.out + ".md", "w") as f:
        f.write("# Conv families against cuDNN (ratio = kiln time / cuDNN time; < 1: kiln faster)\n\n")
        f.write(", ".join(meta) + "\n\n| model | dtype | batch | family | shapes | geomean ratio | "
                "time-weighted ratio |\n|---|---|---|---|---|---|---|\n")
        for s in summary:
            f.write("| " + " | ".join(str(s.get(c, "")) for c in
                                       ["model", "dtype", "batch", "family", "shapes", "geomean_ratio",
                                        "time_weighted_ratio"]) + " |\n")
    print(f"wrote {args.out}.md")
    series = defaultdict(list)
    labels = []
    for s in summary:
        if s.get("geomean_ratio"):
            label = f"{s['model']} {s['dtype']} b{s['batch']}"
            if label not in labels:
                labels.append(label)
            series[s["family"]].append((labels.index(label), 1 / float(s["geomean_ratio"])))
    if series:
        common.plot(args.out + ".svg", "speedup over cuDNN (geomean over conv shapes)",
                    " | ".join(f"{i}: {l}" for i, l in enumerate(labels)), "cuDNN time / kiln time", series)
    return 0


if __name__ == "__main__":
    sys.exit(main())
