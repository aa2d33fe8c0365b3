#!/usr/bin/env python3
"""resnet50 inference throughput (issue 6): kiln's generated kernels against kiln's cuDNN-only
plan (`--kernels cudnn`: every step cuDNN computes as a cuDNN call, algorithms by
cudnnFind*) and PyTorch eager (channels_last, cudnn.benchmark, the same precision), at
batch 1, 32 and 256 in fp32 and fp16, in the same run. Median of RUNS after warm-up (CUDA
events); images/s and the ratio to each peer.

usage: bench/resnet50_inference.py KILN [--batches 1,32,256] [--dtypes f32,f16] [--runs 50]
                                         [--device gpu] [--out bench/results/resnet50_inference]
--device cpu --batches 1 --image 32 --runs 1 smoke-tests the kiln side without a GPU.
"""
import argparse

import common

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("kiln")
ap.add_argument("--batches", default="1,32,256")
ap.add_argument("--dtypes", default="f32,f16")
ap.add_argument("--image", type=int, default=224)
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--device", default="gpu")
ap.add_argument("--out", default="bench/results/resnet50_inference")
a = ap.parse_args()
inputs = common.Inputs()
torch_ok = a.device == "gpu" and common.have_torch()
rows = []


def torch_step(batch, dtype):
    import torch
    import torch_models
    torch.backends.cudnn.benchmark = True
    t = {"f32": torch.float32, "f16": torch.float16}[dtype]
    net = torch_models.resnet50().cuda().eval().to(t).to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, a.image, a.image, device="cuda", dtype=t).to(memory_format=torch.channels_last)

    def step():
        with torch.inference_mode():
            net(x)
    return step


for dtype in a.dtypes.split(","):
    for batch in map(int, a.batches.split(",")):
        x = inputs.image((batch, 3, a.image, a.image))
        group = []
        for method, extra in (("kiln", []), ("kiln cudnn-only", ["--kernels", "cudnn"])):
            r = common.kiln_run(a.kiln, "resnet50", ["--dtype", dtype, "--input", x, *extra], a.runs, a.device)
            group.append(dict(r, method=method))
        if torch_ok:
            try:
                r = common.torch_time(torch_step(batch, dtype), a.runs, warmup=10)
            except Exception as e:
                r = {"status": "error", "error": str(e).splitlines()[0]}
        else:
            r = {"status": "skipped", "error": "no PyTorch with CUDA here"}
        group.append(dict(r, method="pytorch eager channels_last"))
        for r in group:
            r.update(dtype=dtype, batch=batch, image=a.image)
            if r["status"] == "ok":
                r["images_per_s"] = f"{batch * 1000.0 / r['median_ms']:.1f}"
        kiln = group[0]
        for peer, key in ((group[1], "kiln_vs_cudnn_only"), (group[2], "kiln_vs_pytorch")):
            if kiln["status"] == "ok" and peer["status"] == "ok":
                kiln[key] = f"{peer['median_ms'] / kiln['median_ms']:.3f}"  # > 1: kiln faster
        for r in group:
            print(f"{dtype} b{batch:<4} {r['method']:28} {r['status']:7} {r.get('median_ms', '')} ms "
                  f"{r.get('images_per_s', '')} img/s {r.get('error', '')}")
        rows += group

columns = ["dtype", "batch", "image", "method", "status", "median_ms", "min_ms", "max_ms", "images_per_s",
           "kiln_vs_cudnn_only", "kiln_vs_pytorch", "arena_bytes", "error"]
meta = [f"kiln {common.kiln_version(a.kiln)}", f"device {common.gpu_name() if a.device == 'gpu' else a.device}",
        "resnet50 inference", f"runs {a.runs}", "ratios: peer time over kiln time (> 1: kiln faster)"]
common.write_csv(a.out + ".csv", meta, columns, rows)
series = {}
for r in rows:
    if r["status"] == "ok":
        series.setdefault(f"{r['method']} {r['dtype']}", []).append((r["batch"], float(r["images_per_s"])))
common.plot(a.out + ".svg", "resnet50 inference (" + meta[1] + ")", "batch", "images/s", series)
