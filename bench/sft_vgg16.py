#!/usr/bin/env python3
"""vgg16 training step, batch 1, fp32, on huge images (issue 7): kiln tiled, kiln store-all
and kiln sqrt against PyTorch eager with and without torch.utils.checkpoint, in the same run,
from 2048x2048 up to the size where every method runs out of memory. Time: median of RUNS
steps after warm-up (CUDA events); memory: kiln's device arena (parameters, gradients,
activations, workspaces), PyTorch's max_memory_allocated. A method that ran out of memory
at one size is not tried at larger ones.

usage: bench/sft_vgg16.py KILN [--sizes 2048,4096,...] [--runs 5] [--tiled-budget 8GiB]
                              [--device gpu] [--out bench/results/sft_vgg16]
--device cpu --sizes 64 smoke-tests the kiln side where there is no GPU (no PyTorch rows).
For orientation, the SFT artifact (40 GB A100, batch 1, fp32): at 4096x4096 PyTorch ran out
of memory, checkpointing took 3.6 s and SFT 5.6 s with 2x2 tiles; at 10240x10240 and
20480x20480 only SFT ran: 28 s with 16x16 tiles, 106 s with 32x32.
"""
import argparse
import json
import math
import subprocess

import common

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("kiln")
ap.add_argument("--sizes", default="2048,3072,4096,6144,8192,10240,12288,16384,20480")
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--tiled-budget", default="8GiB", help="kiln tiled's activation budget at every size")
ap.add_argument("--device", default="gpu")
ap.add_argument("--out", default="bench/results/sft_vgg16")
a = ap.parse_args()
sizes = [int(s) for s in a.sizes.split(",")]
inputs = common.Inputs()
torch_ok = a.device == "gpu" and common.have_torch()

KILN_METHODS = {"kiln tiled": ["--schedule", "tiled", "--budget", a.tiled_budget],
                "kiln store-all": ["--schedule", "store-all"],
                "kiln sqrt": ["--schedule", "sqrt", "--budget", "100%"]}
TORCH_METHODS = ["pytorch", "pytorch checkpoint"]
dead = set()  # methods out of memory at a smaller size
rows = []


def tiles_at(size):
    p = subprocess.run([a.kiln, "schedule", "vgg16", "--image", str(size), "--batch", "1", "--strategy", "tiled",
                        "--budget", a.tiled_budget, "--train", "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        return "", ""
    j = json.loads(p.stdout)
    return j["tiles"], j["recompute_factor"]


def torch_step(size, checkpoint):
    import torch
    from torch.utils.checkpoint import checkpoint_sequential
    import torch_models
    torch.backends.cudnn.benchmark = True
    net = torch_models.vgg16().cuda()
    x = torch.randn(1, 3, size, size, device="cuda")
    t = torch.randint(0, 1000, (1,), device="cuda")
    features, head = net[0], net[1:]
    segments = max(1, int(math.sqrt(len(features))))

    def step():
        net.zero_grad(set_to_none=True)
        y = checkpoint_sequential(features, segments, x, use_reentrant=False) if checkpoint else features(x)
        torch.nn.functional.cross_entropy(head(y), t).backward()
    return step


for size in sizes:
    x = inputs.image((1, 3, size, size))
    t = inputs.target(1, 1000)
    tiles, factor = tiles_at(size)
    for method, extra in KILN_METHODS.items():
        if method in dead:
            r = {"status": "oom", "error": "out of memory at a smaller size"}
        else:
            r = common.kiln_run(a.kiln, "vgg16", ["--image", size, "--batch", 1, "--train", "--input", x, "--target", t,
                                                 "--grads", inputs.scratch("g.safetensors"), *extra], a.runs, a.device)
        if r["status"] == "oom":
            dead.add(method)
        rows.append(dict(r, size=size, method=method, tiles=tiles if method == "kiln tiled" else "",
                         recompute_factor=factor if method == "kiln tiled" else ""))
        print(f"{size}x{size} {method:20} {r['status']:6} {r.get('median_ms', '')} ms  {r.get('arena_bytes', '')} B  "
              f"{r.get('error', '')}")
    for method in TORCH_METHODS:
        if not torch_ok:
            r = {"status": "skipped", "error": "no PyTorch with CUDA here"}
        elif method in dead:
            r = {"status": "oom", "error": "out of memory at a smaller size"}
        else:
            try:
                r = common.torch_time(torch_step(size, method.endswith("checkpoint")), a.runs)
            except Exception as e:  # an OOM while building the model or the input
                r = {"status": "oom" if "out of memory" in str(e).lower() else "error", "error": str(e).splitlines()[0]}
        if r["status"] == "oom":
            dead.add(method)
        rows.append(dict(r, size=size, method=method))
        print(f"{size}x{size} {method:20} {r['status']:6} {r.get('median_ms', '')} ms  {r.get('arena_bytes', '')} B")

# Ratios against PyTorch (or its checkpointed form where eager ran out) at the same size.
for r in rows:
    if r["status"] != "ok":
        continue
    peers = [p for p in rows if p["size"] == r["size"] and p["method"] in TORCH_METHODS and p["status"] == "ok"]
    if peers:
        r["vs_pytorch"] = f"{r['median_ms'] / min(p['median_ms'] for p in peers):.3f}"

columns = ["size", "method", "status", "median_ms", "min_ms", "max_ms", "arena_bytes", "peak_bytes", "tiles",
           "recompute_factor", "vs_pytorch", "error"]
meta = [f"kiln {common.kiln_version(a.kiln)}", f"device {common.gpu_name() if a.device == 'gpu' else a.device}",
        "vgg16 training step, batch 1, fp32", f"runs {a.runs}", f"tiled budget {a.tiled_budget}",
        "memory: kiln device arena / torch max_memory_allocated; vs_pytorch: time over the faster PyTorch method"]
common.write_csv(a.out + ".csv", meta, columns, rows)
methods = list(KILN_METHODS) + TORCH_METHODS
ok = lambda m, key: [(r["size"], r[key]) for r in rows if r["method"] == m and r["status"] == "ok"]
common.plot(a.out + "_time.svg", "vgg16 training step, batch 1 (" + meta[1] + ")", "image side (pixels)",
            "median step time (ms)", {m: ok(m, "median_ms") for m in methods})
common.plot(a.out + "_memory.svg", "vgg16 training step, batch 1: device memory", "image side (pixels)",
            "bytes", {m: ok(m, "arena_bytes") for m in methods})
