#!/usr/bin/env python3
"""Training-step time under each recompute strategy (issue 6): resnet152 and densenet201,
store-all, sqrt, rotor and dtr at 100%, 50% and 33% of the store-all activation peak, with
PyTorch eager (store-all) and torch.utils.checkpoint_sequential (sqrt) as peers, in the
same run. Median of RUNS steps after warm-up (CUDA events); the device arena (kiln) and
max_memory_allocated (PyTorch); overhead against kiln store-all.

usage: bench/training_schedules.py KILN [--models resnet152,densenet201] [--batch 32]
                                        [--budgets 100,50,33] [--runs 10] [--device gpu]
--device cpu --batch 1 --image 32 --runs 1 smoke-tests the kiln side without a GPU.
"""
import argparse
import math

import common

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("kiln")
ap.add_argument("--models", default="resnet152,densenet201")
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--image", type=int, default=224)
ap.add_argument("--budgets", default="100,50,33")
ap.add_argument("--runs", type=int, default=10)
ap.add_argument("--device", default="gpu")
ap.add_argument("--out", default="bench/results/training_schedules")
a = ap.parse_args()
inputs = common.Inputs()
torch_ok = a.device == "gpu" and common.have_torch()
rows = []


def torch_step(model, checkpoint):
    import torch
    from torch.utils.checkpoint import checkpoint_sequential
    import torch_models
    torch.backends.cudnn.benchmark = True
    net = torch_models.MODELS[model]().cuda().to(memory_format=torch.channels_last)
    x = torch.randn(a.batch, 3, a.image, a.image, device="cuda").to(memory_format=torch.channels_last)
    t = torch.randint(0, 1000, (a.batch,), device="cuda")
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        y = checkpoint_sequential(net, int(math.sqrt(len(net))), x, use_reentrant=False) if checkpoint else net(x)
        torch.nn.functional.cross_entropy(y, t).backward()
    return step


x = inputs.image((a.batch, 3, a.image, a.image))
t = inputs.target(a.batch, 1000)
for model in a.models.split(","):
    group = []
    for strategy in ("store-all", "sqrt", "rotor", "dtr"):
        for pct in map(int, a.budgets.split(",")):
            if strategy in ("store-all", "sqrt") and pct != 100:
                continue  # neither adapts to a budget
            r = common.kiln_run(a.kiln, model, ["--batch", a.batch, "--image", a.image, "--train", "--input", x,
                                                "--target", t, "--grads", inputs.scratch("g.safetensors"), "--schedule",
                                                strategy, "--budget", f"{pct}%"], a.runs, a.device)
            group.append(dict(r, method=f"kiln {strategy}", budget_pct=pct))
    for method, ckpt in (("pytorch eager", False), ("pytorch checkpoint_sequential", True)):
        if not torch_ok:
            r = {"status": "skipped", "error": "no PyTorch with CUDA here"}
        else:
            try:
                r = common.torch_time(torch_step(model, ckpt), a.runs)
            except Exception as e:
                r = {"status": "error", "error": str(e).splitlines()[0]}
        group.append(dict(r, method=method, budget_pct=""))
    base = next((g for g in group if g["method"] == "kiln store-all" and g["status"] == "ok"), None)
    eager = next((g for g in group if g["method"] == "pytorch eager" and g["status"] == "ok"), None)
    for r in group:
        r.update(model=model, batch=a.batch, image=a.image)
        if r["status"] == "ok" and base:
            r["overhead_vs_store_all_pct"] = f"{(r['median_ms'] / base['median_ms'] - 1) * 100:.1f}"
        if r["status"] == "ok" and eager:
            r["vs_pytorch_eager"] = f"{eager['median_ms'] / r['median_ms']:.3f}"  # > 1: faster than eager
        print(f"{model} {r['method']:30} {r['budget_pct']!s:>4}% {r['status']:7} {r.get('median_ms', '')} ms "
              f"{r.get('arena_bytes', '')} B {r.get('error', '')}")
    rows += group

columns = ["model", "batch", "image", "method", "budget_pct", "status", "median_ms", "min_ms", "max_ms",
           "overhead_vs_store_all_pct", "vs_pytorch_eager", "arena_bytes", "peak_bytes", "error"]
meta = [f"kiln {common.kiln_version(a.kiln)}", f"device {common.gpu_name() if a.device == 'gpu' else a.device}",
        "training step (forward, loss, backward), fp32", f"runs {a.runs}",
        "budget: % of kiln's store-all activation peak; vs_pytorch_eager: eager time over this time"]
common.write_csv(a.out + ".csv", meta, columns, rows)
for model in a.models.split(","):
    series = {}
    for r in rows:
        if r["model"] == model and r["status"] == "ok" and r["method"].startswith("kiln"):
            series.setdefault(r["method"], []).append((r["budget_pct"], r["median_ms"]))
    common.plot(f"{a.out}_{model}.svg", f"{model} training step, batch {a.batch} ({meta[1]})",
                "budget (% of store-all peak)", "median step time (ms)", series, logy=False)
