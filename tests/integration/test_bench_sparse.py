"""Smoke test of bench/sparse_conv.py on the emulator: the two smallest layer shapes at two
densities, batch 1, one run each, and the whole-network part on a tiny densenet-like model
at 16x16; then a network kiln cannot load, whose rows must say so. Checks the CSVs' stable
columns, that every kiln row ran and carries kiln's predictions, and that the PyTorch rows
are skipped with a reason (no GPU here)."""
import csv
import json
import os
import subprocess
import sys
import time

from kiln_test import KILN, check, finish, tmpdir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "sparse_conv.py")
LAYER_COLUMNS = ["gpu", "kiln_version", "model", "layer", "shape", "dtype", "batch", "density", "method", "status",
                 "median_ms", "tflops", "ratio_to_kiln_sparse", "predicted_us", "predicted_path",
                 "predicted_threshold", "measured_crossover", "error"]
NETWORK_COLUMNS = ["gpu", "kiln_version", "model", "image", "dtype", "batch", "method", "status", "median_ms",
                   "images_per_s", "vs_kiln_dense", "error"]
KILN_LAYER_METHODS = {"kiln sparse", "kiln dense", "kiln cudnn-only"}
TORCH_LAYER_METHODS = {"pytorch cudnn f32", "pytorch cudnn tf32", "pytorch cudnn f16"}
KILN_NETWORK_METHODS = {"kiln dense", "kiln sparse (profile)", "kiln sparse force", "kiln cudnn-only"}

d = tmpdir()
kiln_exe = os.path.abspath(KILN) if os.path.exists(KILN) else KILN  # the runs below start in d


def tiny_net(path):
    """A densenet-like block: batchnorm + relu before every conv, a concat, a classifier."""
    layers = [{"name": "conv0", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1, "bias": False},
              {"name": "norm0", "op": "batchnorm"}, {"name": "relu0", "op": "relu"},
              {"name": "conv1", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1, "bias": False},
              {"name": "norm1", "op": "batchnorm"}, {"name": "relu1", "op": "relu"},
              {"name": "conv2", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1, "bias": False},
              {"name": "cat", "op": "concat", "inputs": ["relu0", "conv2"]},
              {"name": "norm2", "op": "batchnorm"}, {"name": "relu2", "op": "relu"},
              {"name": "conv3", "op": "conv2d", "out_channels": 16, "kernel": 1, "bias": False},
              {"name": "pool", "op": "global_avgpool"}, {"name": "flatten", "op": "flatten"},
              {"name": "fc", "op": "linear", "out_features": 10}]
    with open(path, "w") as f:
        json.dump({"format": "kiln-model/1", "name": "tiny_dense", "input": {"shape": [1, 3, 16, 16]},
                   "layers": layers}, f)
    return path


def bench(*args):
    t = time.time()
    p = subprocess.run([sys.executable, SCRIPT, kiln_exe, "--device", "emu", *map(str, args)], capture_output=True,
                       text=True, cwd=d, timeout=600)
    print(f"sparse_conv.py {' '.join(map(str, args))}: exit {p.returncode} in {time.time() - t:.1f} s")
    check(p.returncode == 0, f"sparse_conv.py {args}: exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p.stdout


def read(path, columns):
    """(meta row, rows as dicts); checks the stable columns are there."""
    if not os.path.exists(path):
        check(False, f"{path} not written")
        return [], []
    with open(path, newline="") as f:
        r = list(csv.reader(f))
    check(len(r) >= 2 and r[0][:1] == ["#"] and any(c.startswith("kiln ") for c in r[0]),
          f"{path}: first row should name kiln's version: {r[:1]}")
    missing = [c for c in columns if c not in r[1]]
    check(not missing, f"{path}: header lacks {missing}: {r[1]}")
    return r[0], [dict(zip(r[1], row)) for row in r[2:]]


def number(v):
    try:
        float(v)
        return True
    except ValueError:
        return False


started = time.time()
out = bench("--layers", "small", "--densities", "0.3,0.8", "--batch", 1, "--runs", 1,
            "--network", tiny_net(os.path.join(d, "tiny.json")), "--image", 16, "--network-batches", 1,
            "--out", os.path.join(d, "res", "sc"))
check("meaningless" in out, "--device emu should say its timings are meaningless:\n" + out)
check("8 distinct 3x3 stride-1 convs" in out, "the layers of densenet121/201 and resnet152, derived: " + out)

meta, rows = read(os.path.join(d, "res", "sc.csv"), LAYER_COLUMNS)
check(len(rows) == 2 * 2 * 6, f"2 layers x 2 densities x 6 methods, got {len(rows)} rows")
check({r.get("density") for r in rows} == {"0.300", "0.800"}, f"densities: {sorted({r.get('density') for r in rows})}")
check({r.get("shape", "").split(" ->")[0] for r in rows} == {"1x128x7x7", "1x128x14x14"},
      f"--layers small: densenet's 7x7 and 14x14 convs at batch 1, got {sorted({r.get('shape') for r in rows})}")
check({r.get("method") for r in rows} == KILN_LAYER_METHODS | TORCH_LAYER_METHODS,
      f"methods: {sorted({r.get('method') for r in rows})}")
for r in rows:
    what = f"{r.get('shape')} d={r.get('density')} {r.get('method')}"
    if r.get("method") in KILN_LAYER_METHODS:
        check(r["status"] == "ok" and number(r["median_ms"]) and number(r["tflops"]),
              f"{what}: {r['status']} {r['median_ms']!r} {r['error']}")
        check(r["predicted_path"] in ("dense", "dispatch", "sparse"), f"{what}: predicted_path {r['predicted_path']!r}")
        for c in ("predicted_dense_us", "predicted_sparse_us", "predicted_compaction_us"):
            check(number(r.get(c, "")), f"{what}: {c} {r.get(c)!r}")
        if r["method"] != "kiln cudnn-only":
            check(number(r["predicted_us"]), f"{what}: predicted_us {r['predicted_us']!r}")
            check(number(r["ratio_to_kiln_sparse"]), f"{what}: ratio_to_kiln_sparse {r['ratio_to_kiln_sparse']!r}")
        if r["predicted_path"] == "dispatch":
            check(number(r["predicted_threshold"]), f"{what}: a dispatch without predicted_threshold")
    else:
        check(r.get("status") == "skipped" and r.get("error"), f"{what}: should be skipped with a reason: {r}")
    check(r.get("measured_crossover") == "" or 0.3 <= float(r["measured_crossover"]) <= 0.8,
          f"{what}: measured_crossover {r.get('measured_crossover')!r} outside the densities run")

meta, rows = read(os.path.join(d, "res", "sc_network.csv"), NETWORK_COLUMNS)
check({r.get("method") for r in rows if r.get("method", "").startswith("kiln")} == KILN_NETWORK_METHODS,
      f"network methods: {sorted({r.get('method') for r in rows})}")
for r in rows:
    what = f"network {r.get('method')}"
    if r.get("method", "").startswith("kiln"):
        check(r["status"] == "ok" and number(r["images_per_s"]) and number(r["vs_kiln_dense"]),
              f"{what}: {r['status']} {r['images_per_s']!r} {r['error']}")
        if r["method"] == "kiln sparse (profile)":
            check(number(r.get("mean_density", "")) and 0 < float(r["mean_density"]) < 1,
                  f"{what}: mean_density from the profile {r.get('mean_density')!r}")
        if r["method"].startswith("kiln sparse"):
            check(r.get("sparse_plan", "") != "", f"{what}: no sparse_plan")
        if r["method"] == "kiln sparse force":
            check("sparse:" in r.get("sparse_plan", ""), f"{what}: force planned no sparse conv: {r.get('sparse_plan')}")
    else:
        check(r.get("status") == "skipped" and r.get("error"), f"{what}: should be skipped with a reason: {r}")
print(f"smoke run: {time.time() - started:.1f} s")

# A network kiln cannot load: every kiln row an error carrying kiln's own message, exit 0.
with open(os.path.join(d, "broken.json"), "w") as f:
    f.write('{"format": "kiln-model/1", "layers": [')
bench("--skip-layers", "--network", os.path.join(d, "broken.json"), "--image", 16, "--network-batches", 1,
      "--runs", 1, "--out", os.path.join(d, "res", "broken"))
meta, rows = read(os.path.join(d, "res", "broken_network.csv"), NETWORK_COLUMNS)
check(len(rows) >= 4, f"broken network: {len(rows)} rows")
for r in rows:
    if r.get("method", "").startswith("kiln"):
        check(r["status"] == "error" and "kiln: error:" in r["error"],
              f"broken network {r.get('method')}: {r.get('status')} {r.get('error')!r}")
check(not os.path.exists(os.path.join(d, "res", "broken.csv")), "--skip-layers wrote a layer CSV")
finish()
