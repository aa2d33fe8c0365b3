#!/usr/bin/env python3
"""kiln's activation-sparse convolutions against dense ones (issue point 7; DESIGN.md 5.4, 9).

What it measures
  1. Per layer: every distinct 3x3 stride-1 conv that reads a ReLU's output in densenet121,
     densenet201 (denselayerN.conv2, 128 -> 32 channels at 56, 28, 14, 7) and resnet152
     (bottleneck conv2, 64..512 channels at 56..7), shapes read from models/*.json and
     `kiln inspect --json`, run as a one-layer model relu -> conv at BATCH on an input whose
     ReLU output has exactly the wanted density (|N(0,1)| values, a seeded random set of
     them negated), at densities 10..90%:
       kiln sparse       `kiln run --sparse force`  (compaction fused into the relu, sparse conv)
       kiln dense        `kiln run --sparse off`    (kiln's dense kernels)
       kiln cudnn-only   `kiln run --kernels cudnn --sparse off` (cuDNN called by kiln; f32
                         with FMA math, TF32 off; f16 on tensor cores)
       pytorch cudnn f32 / tf32 / f16   the same relu + conv on the same input in this process
                         (cudnn.benchmark, allow_tf32 off / on, f16; the faster of NCHW and
                         channels_last, CUDA events after warm-up, median)
     and kiln's own prediction: `kiln generate` of the one-layer model with
     hints.activation_density = d and `--sparse auto` for the same descriptor (the manifest's
     dense_us, sparse_us, compaction_us, path and threshold). kiln's times cover its whole
     plan (layout conversions and the relu included); the predictions cover the conv (and the
     compaction) alone.
  2. Whole network: NETWORK (densenet121) inference at --network-batches (1, 32) on --image
     (224): kiln without the sparse family (`--sparse off`), with it as planned from a
     measured profile (`kiln profile` of the same input on the same device, then
     `--profile P`: the cost model dispatches where sparse is predicted to pay), with every
     post-ReLU conv forced sparse (`--sparse force`), kiln's cuDNN-only plan, and PyTorch
     eager (bench/torch_models.py, channels_last) where available. Images/s and ratios.
  Weights are seeded (dense timings do not depend on them; kiln's network densities do:
  --weights W.safetensors gives kiln the trained ones).

How to run it on a GPU machine (from the bundle: `make bundle` here writes
build/bundle/kiln-<version>-<arch>.tar.gz; copy it over; PyTorch with CUDA installed):
  tar xzf kiln-0.1.0-x86_64.tar.gz && cd kiln-0.1.0-x86_64
  python3 bench/sparse_conv.py bin/kiln --device gpu --gpu auto --out bench/results/sparse_conv
(--gpu auto: `kiln gpu detect` describes the live GPU and the kernels and predictions are
made for it). Add --layers small --densities 0.1,0.5,0.9 --skip-network for a quick look.
Here, without a GPU, --device emu runs kiln's generated kernels on the CPU emulator: the
driver is exercised, the timings mean nothing (CI: tests/integration/test_bench_sparse.py).

usage: bench/sparse_conv.py KILN [--device gpu|emu|cpu] [--gpu DESCRIPTOR|auto]
           [--layers all|small|TEXT,...] [--densities 0.1,...,0.9] [--batch 32] [--dtype f32]
           [--runs 50] [--network densenet121] [--network-batches 1,32] [--image 224]
           [--weights W] [--skip-layers] [--skip-network] [--out bench/results/sparse_conv]
--layers small: the two distinct shapes with the fewest MACs (densenet's 128 -> 32 convs at
14x14 and 7x7); TEXT: layers whose label, models or first layer name contain it.

Outputs (first CSV row: '#', kiln version, device and GPU name, descriptor, settings)
  OUT.csv, one row per layer x density x method:
    gpu            the device the times come from (GPU name, or emu/cpu)
    descriptor     the kiln-gpu/1 descriptor kernels and predictions were made for
    kiln_version, model (the models holding the shape), occurrences (model:count),
    layer          the first layer of that shape, as MODEL:NAME
    shape          input NxCxHxW -> output NxKxHxW, kernel, stride, padding
    dtype, batch, density (of the conv's input: the ReLU output)
    method, variant (the flags or the PyTorch memory format), status (ok | error | oom |
                   timeout | skipped), median_ms, min_ms, max_ms
    tflops         useful TFLOP/s: the dense conv's 2 * MACs over the median time
    gbps           the dense conv's input + output + weight bytes over the median time
    ratio_to_kiln_sparse   this method's time over kiln sparse's (> 1: kiln sparse faster)
    predicted_us   kiln's prediction for this method (sparse: sparse_us + compaction_us;
                   dense: dense_us); predicted_dense_us, predicted_sparse_us,
                   predicted_compaction_us: the manifest's three, on every kiln row
    predicted_path dense | dispatch | sparse: what `--sparse auto` plans at this density
    predicted_threshold  density up to which kiln's dispatch takes the sparse kernel (the
                   cost model's crossover; blank: it predicts no sparse win at any density run)
    measured_crossover   density where kiln sparse stops beating kiln dense, linearly
                   interpolated between the measured densities (blank: no such crossing)
    error          the last stderr line of a failing kiln command, or why a row was skipped
  OUT_network.csv, one row per batch x method: gpu, descriptor, kiln_version, model, image,
    dtype, batch, method, status, median_ms, min_ms, max_ms, images_per_s,
    vs_kiln_dense (kiln dense's time over this one: > 1 faster than kiln without the sparse
    family), vs_pytorch (PyTorch's time over this one: > 1 faster than PyTorch),
    mean_density (nonzero fraction over all conv inputs, from the profile), sparse_plan
    (the plan's sparse decisions: paths and counts), arena_bytes, error.
  OUT.png: time against density per layer and method; solid vertical line: the measured
    crossover, dashed: the predicted threshold (no plot without matplotlib).
"""
import argparse
import json
import os
import sys

import numpy as np

import common

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "models")
LAYER_MODELS = ("densenet121", "densenet201", "resnet152")
KILN_METHODS = (("kiln sparse", ["--sparse", "force"]), ("kiln dense", ["--sparse", "off"]),
                ("kiln cudnn-only", ["--kernels", "cudnn", "--sparse", "off"]))
TORCH_METHODS = (("pytorch cudnn f32", "f32"), ("pytorch cudnn tf32", "tf32"), ("pytorch cudnn f16", "f16"))
ELEMENT_BYTES = {"f32": 4, "tf32": 4, "f16": 2, "bf16": 2}
COLUMNS = ["gpu", "descriptor", "kiln_version", "model", "occurrences", "layer", "shape", "dtype", "batch", "density",
           "method", "variant", "status", "median_ms", "min_ms", "max_ms", "tflops", "gbps", "ratio_to_kiln_sparse",
           "predicted_us", "predicted_dense_us", "predicted_sparse_us", "predicted_compaction_us", "predicted_path",
           "predicted_threshold", "measured_crossover", "error"]
NETWORK_COLUMNS = ["gpu", "descriptor", "kiln_version", "model", "image", "dtype", "batch", "method", "status",
                   "median_ms", "min_ms", "max_ms", "images_per_s", "vs_kiln_dense", "vs_pytorch", "mean_density",
                   "sparse_plan", "arena_bytes", "error"]

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("kiln")
ap.add_argument("--device", default="gpu", choices=["gpu", "emu", "cpu"])
ap.add_argument("--gpu", default="auto", help="descriptor (a shipped name or a kiln-gpu/1 file); auto: the live GPU "
                "on --device gpu (kiln gpu detect), h200 elsewhere")
ap.add_argument("--layers", default="all", help="all, small, or comma-separated texts a layer's label, models or "
                "first name contains")
ap.add_argument("--densities", default="0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9")
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--network", default="densenet121", help="the whole-network model (a shipped name or a file)")
ap.add_argument("--network-batches", default="1,32")
ap.add_argument("--image", default="224", help="the whole network's image size, N or HxW")
ap.add_argument("--weights", help="the whole network's weights for kiln (.safetensors); default seeded")
ap.add_argument("--skip-layers", action="store_true")
ap.add_argument("--skip-network", action="store_true")
ap.add_argument("--out", default="bench/results/sparse_conv")
ap.add_argument("--keep", action="store_true", help="keep the temporary directory (models, inputs, manifests)")
a = ap.parse_args()
densities = sorted(float(d) for d in a.densities.split(","))
if any(not 0.0 <= d <= 1.0 for d in densities):
    sys.exit("sparse_conv.py: densities must lie in [0, 1]")
inputs, version = common.setup("sparse_conv.py", a)


def kiln(*args, timeout=1800):
    return common.run_kiln(a.kiln, *args, timeout=timeout)


last_line = common.last_line


def resolve_descriptor():
    if a.gpu != "auto":
        return a.gpu
    if a.device != "gpu":
        return "h200"
    path = inputs.scratch("gpu.json")
    p = kiln("gpu", "detect", "-o", path)
    if p.returncode == 0:
        return path
    print(f"kiln gpu detect failed ({last_line(p)}): using the h200 descriptor")
    return "h200"


def write_model(path, name, shape, layers, dtype):
    with open(path, "w") as f:
        json.dump({"format": "kiln-model/1", "name": name, "input": {"name": "x", "shape": list(shape)},
                   "dtype": dtype, "layers": layers}, f)
    return path


def generate(model, out_dir, *args):
    """`kiln generate` -> (manifest, error)."""
    p = kiln("generate", model, "--gpu", descriptor, "-o", out_dir, *args)
    if p.returncode != 0:
        return None, "kiln generate: " + last_line(p)
    with open(os.path.join(out_dir, "manifest.json")) as f:
        return json.load(f), ""


descriptor = resolve_descriptor()
probe, err = generate(write_model(inputs.scratch("probe.json"), "probe", [1, 8, 8, 8],
                                  [{"name": "relu", "op": "relu"},
                                   {"name": "conv", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1}],
                                  "f32"), inputs.scratch("probe"))
if probe is None:
    sys.exit(f"sparse_conv.py: {err}")
descriptor_id = probe["gpu"].get("identity", probe["gpu"]["name"])


def live_gpu_name():
    try:
        return common.gpu_name()
    except OSError:  # no PyTorch and no nvidia-smi
        return "unknown GPU"


device_name = live_gpu_name() if a.device == "gpu" else f"{a.device} (no GPU)"
print(f"kiln {version}; device {device_name}; descriptor {descriptor_id}")


def torch_unavailable():
    """None when the PyTorch peers can run, else why not."""
    if a.device != "gpu":
        return f"--device {a.device}: the PyTorch peers run only on the GPU"
    try:
        import torch
    except ImportError:
        return "no PyTorch here"
    if not torch.cuda.is_available():
        return "PyTorch without CUDA here"
    return None


no_torch = torch_unavailable()


# ---- 1. layers -------------------------------------------------------------------------------------------------

def pair(v):
    return list(v) if isinstance(v, list) else [v, v]


def sparse_candidates(model, batch):
    """The model's 3x3 stride-1 convs reading a relu's output, with their input shapes."""
    path = os.path.join(MODELS_DIR, model + ".json")
    if not os.path.exists(path):
        sys.exit(f"sparse_conv.py: {path} missing (the driver reads the example models next to bench/)")
    with open(path) as f:
        spec = json.load(f)
    p = kiln("inspect", path, "--batch", batch, "--json")
    if p.returncode != 0:
        sys.exit(f"sparse_conv.py: kiln inspect {model}: {last_line(p)}")
    info = json.loads(p.stdout)
    shapes = {l["name"]: l["output_shape"] for l in info["layers"]}
    macs = {l["name"]: l["macs"] for l in info["layers"]}
    ops = {l["name"]: l["op"] for l in spec["layers"]}
    found, prev = [], None
    for l in spec["layers"]:
        src = l.get("inputs") or ([prev] if prev else [])
        prev = l["name"]
        if l["op"] != "conv2d" or len(src) != 1 or ops.get(src[0]) != "relu":
            continue
        if pair(l["kernel"]) != [3, 3] or pair(l.get("stride", 1)) != [1, 1] or pair(l.get("dilation", 1)) != [1, 1] \
                or l.get("groups", 1) != 1:
            continue
        conv = {k: v for k, v in l.items() if k not in ("name", "inputs", "hints")}
        found.append({"model": model, "name": l["name"], "in": shapes[src[0]], "out": shapes[l["name"]],
                      "macs": macs[l["name"]], "conv": conv})
    return found


def distinct_layers(batch):
    groups = {}
    for model in LAYER_MODELS:
        for c in sparse_candidates(model, batch):
            key = (tuple(c["in"][1:]), json.dumps(c["conv"], sort_keys=True))
            g = groups.setdefault(key, dict(c, counts={}))
            g["counts"][model] = g["counts"].get(model, 0) + 1
    layers = []
    for g in groups.values():
        n, ch, h, w = g["in"]
        k, ho, wo = g["out"][1:]
        conv = g["conv"]
        g["label"] = f"{ch}->{k} 3x3 {h}x{w}"
        g["shape"] = (f"{n}x{ch}x{h}x{w} -> {n}x{k}x{ho}x{wo}, k{'x'.join(map(str, pair(conv['kernel'])))} "
                      f"s{'x'.join(map(str, pair(conv.get('stride', 1))))} p{'x'.join(map(str, pair(conv.get('padding', 0))))}")
        g["models"] = ",".join(g["counts"])
        g["occurrences"] = " ".join(f"{m}:{c}" for m, c in g["counts"].items())
        g["layer"] = f"{g['model']}:{g['name']}"
        g["bytes_elems"] = n * ch * h * w + n * k * ho * wo + k * ch * 9
        layers.append(g)
    return layers


def select(layers):
    if a.layers == "all":
        return layers
    if a.layers == "small":
        return sorted(sorted(layers, key=lambda g: g["macs"])[:2], key=lambda g: -g["macs"])
    texts = a.layers.split(",")
    return [g for g in layers if any(t in g["label"] or t in g["models"] or t in g["name"] for t in texts)]


def sparse_input(path, shape, density, seed):
    """|N(0,1)| + 1e-3 values, all but exactly round(density * n) of them negated: the ReLU
    output has exactly that density, its nonzeros spread uniformly at random."""
    rng = np.random.RandomState(seed)
    x = (np.abs(rng.standard_normal(shape)) + 1e-3).astype(np.float32)
    flat = x.reshape(-1)
    keep = int(round(density * flat.size))
    flat[rng.permutation(flat.size)[keep:]] *= -1
    np.save(path, x)
    return path


def predict(model_layers, shape, density, tag):
    """kiln's plan for the one-layer model at this density: the manifest's sparse decision."""
    layers = json.loads(json.dumps(model_layers))
    layers[1]["hints"] = {"activation_density": density}
    path = write_model(inputs.scratch(f"{tag}_hint.json"), "one_layer", shape, layers, a.dtype)
    manifest, err = generate(path, inputs.scratch(f"{tag}_auto"), "--sparse", "auto")
    if manifest is None:
        return {"error": err}
    convs = [c for c in manifest.get("sparse", {}).get("convs", []) if c["layer"] == "conv"
             and c.get("phase", "forward") == "forward"]
    if not convs:
        return {"error": "no sparse decision for the conv in the manifest"}
    return convs[0]


def torch_layer(xfile, g, mode):
    import torch
    import torch.nn.functional as F
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    dt = torch.float16 if mode == "f16" else torch.float32
    conv = g["conv"]
    ch, k = g["in"][1], g["out"][1]
    kh, kw = pair(conv["kernel"])
    x0 = torch.from_numpy(np.load(xfile)).to("cuda", dt)
    gen = torch.Generator().manual_seed(0)
    w0 = (torch.randn(k, ch, kh, kw, generator=gen) * (2.0 / (ch * kh * kw)) ** 0.5).to("cuda", dt)
    best = None
    for fmt, name in ((torch.contiguous_format, "nchw"), (torch.channels_last, "channels_last")):
        x, w = x0.contiguous(memory_format=fmt), w0.contiguous(memory_format=fmt)

        def step():
            with torch.inference_mode():
                F.conv2d(torch.relu(x), w, None, pair(conv.get("stride", 1)), pair(conv.get("padding", 0)),
                         pair(conv.get("dilation", 1)), conv.get("groups", 1))
        r = dict(common.torch_time(step, a.runs, warmup=10), variant=name)
        for k in ("median_ms", "min_ms", "max_ms"):
            if k in r:
                r[k] = round(r[k], 5)
        if best is None or (r["status"] == "ok" and (best["status"] != "ok" or r["median_ms"] < best["median_ms"])):
            best = r
    x0 = w0 = x = w = None  # free before empty_cache
    torch.cuda.empty_cache()
    return best


def crossover(points):
    """points: [(density, sparse_ms, dense_ms)] sorted; the first density where sparse stops
    being faster, interpolated linearly on dense - sparse; None without such a crossing."""
    for (d0, s0, n0), (d1, s1, n1) in zip(points, points[1:]):
        if s0 < n0 and s1 >= n1:
            g0, g1 = n0 - s0, n1 - s1
            return d0 + (d1 - d0) * g0 / (g0 - g1)
    return None


def fmt(v, digits=4):
    return "" if v in ("", None) else f"{v:.{digits}f}"


def bench_layer(g, rows):
    n, ch, h, w = g["in"]
    model_layers = [{"name": "relu", "op": "relu"}, dict(g["conv"], name="conv")]
    tag = f"l{ch}_{g['out'][1]}_{h}x{w}"
    model = write_model(inputs.scratch(f"{tag}.json"), "one_layer", g["in"], model_layers, a.dtype)
    manifest, err = generate(model, inputs.scratch(f"{tag}_force"), "--sparse", "force")
    forced = [c for c in (manifest or {}).get("sparse", {}).get("convs", []) if c["layer"] == "conv"]
    force_err = err or ("" if forced and forced[0]["path"] == "sparse" else
                        f"--sparse force left the conv {forced[0]['path'] if forced else 'out of the sparse plan'}")
    layer_rows = []
    for di, d in enumerate(densities):
        x = sparse_input(inputs.scratch(f"{tag}_d{di}.npy"), g["in"], d, seed=1000 + di)
        pred = predict(model_layers, g["in"], d, f"{tag}_d{di}")
        base = dict(gpu=device_name, descriptor=descriptor_id, kiln_version=version, model=g["models"],
                    occurrences=g["occurrences"], layer=g["layer"], shape=g["shape"], batch=n, density=f"{d:.3f}")
        group = []
        for method, extra in KILN_METHODS:
            if method == "kiln sparse" and force_err:
                r = {"status": "error", "error": force_err}
            else:
                r = common.kiln_run(a.kiln, model, ["--input", x, "--gpu", descriptor, "--dtype", a.dtype, *extra],
                                    a.runs, a.device)
            r = dict(base, **r, method=method, variant=" ".join(extra), dtype=a.dtype)
            if "error" in pred:
                r["error"] = "; ".join(e for e in (r.get("error"), "prediction: " + pred["error"]) if e)
            else:
                r.update(predicted_dense_us=pred["dense_us"], predicted_sparse_us=pred["sparse_us"],
                         predicted_compaction_us=pred["compaction_us"], predicted_path=pred["path"],
                         threshold=pred.get("threshold"))
                if method == "kiln sparse":
                    r["predicted_us"] = f"{pred['sparse_us'] + pred['compaction_us']:.3f}"
                elif method == "kiln dense":
                    r["predicted_us"] = f"{pred['dense_us']:.3f}"
            group.append(r)
        for method, mode in TORCH_METHODS:
            if no_torch:
                r = {"status": "skipped", "error": no_torch}
            else:
                try:
                    r = torch_layer(x, g, mode)
                except Exception as e:
                    msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    r = {"status": "oom" if "out of memory" in msg.lower() else "error", "error": msg}
            group.append(dict(base, **r, method=method, dtype=mode))
        os.remove(x)
        sparse = group[0]
        for r in group:
            if r["status"] != "ok":
                continue
            s = r["median_ms"] * 1e-3
            r["tflops"] = f"{2.0 * g['macs'] / s / 1e12:.4f}"
            r["gbps"] = f"{g['bytes_elems'] * ELEMENT_BYTES[r['dtype']] / s / 1e9:.2f}"
            if sparse["status"] == "ok":
                r["ratio_to_kiln_sparse"] = f"{r['median_ms'] / sparse['median_ms']:.3f}"
        for r in group:
            print(f"{g['label']:22} b{n:<3} d={d:.2f} {r['method']:20} {r['status']:7} "
                  f"{fmt(r.get('median_ms'), 4):>10} ms  x{r.get('ratio_to_kiln_sparse', '-'):>6}  "
                  f"pred {r.get('predicted_us', '-') or '-'} us {r.get('predicted_path', '')}  {r.get('error', '')}")
        layer_rows += group
    # Per layer: the measured crossover and kiln's predicted threshold, on every row.
    by = {(r["density"], r["method"]): r for r in layer_rows}
    points = [(float(d), by[d, "kiln sparse"]["median_ms"], by[d, "kiln dense"]["median_ms"])
              for d in sorted({r["density"] for r in layer_rows}, key=float)
              if by[d, "kiln sparse"]["status"] == "ok" and by[d, "kiln dense"]["status"] == "ok"]
    measured = crossover(points)
    thresholds = [r["threshold"] for r in layer_rows if r.get("threshold") is not None]
    predicted = thresholds[0] if thresholds else None
    for r in layer_rows:
        r.pop("threshold", None)
        r["measured_crossover"] = fmt(measured, 3)
        r["predicted_threshold"] = fmt(predicted, 3)
    note = "" if measured is not None else (" (kiln sparse faster at every density run)" if points and all(
        s < dn for _, s, dn in points) else " (none)")
    print(f"{g['label']}: measured crossover {fmt(measured, 3) or '-'}{note}, predicted threshold "
          f"{fmt(predicted, 3) or '- (no sparse win predicted)'}")
    rows += layer_rows
    series = {}
    for r in layer_rows:
        if r["status"] == "ok":
            series.setdefault(f"{r['method']} {r['dtype']}" if r["method"].startswith("kiln") else r["method"],
                              []).append((float(r["density"]), r["median_ms"]))
    vlines = ([(measured, f"measured crossover {measured:.2f}", "-")] if measured is not None else []) + \
             ([(predicted, f"predicted threshold {predicted:.2f}", "--")] if predicted is not None else [])
    return {"title": f"{g['label']} b{n} ({g['models']})", "series": series, "vlines": vlines}


if not a.skip_layers:
    rows, panels = [], []
    candidates = distinct_layers(a.batch)
    chosen = select(candidates)
    print(f"{len(candidates)} distinct 3x3 stride-1 convs after a relu in {', '.join(LAYER_MODELS)} (batch {a.batch}):")
    for g in candidates:
        print(f"  {'*' if g in chosen else ' '} {g['label']:22} {g['shape']:44} {g['macs'] / 1e6:10.1f} MMAC  "
              f"{g['occurrences']}  first {g['layer']}")
    if not chosen:
        sys.exit(f"sparse_conv.py: --layers {a.layers} selects no layer")
    for g in chosen:
        panels.append(bench_layer(g, rows))
    meta = [f"kiln {version}", f"device {device_name}", f"descriptor {descriptor_id}",
            "relu + 3x3 conv per layer and input density", f"dtype {a.dtype}", f"runs {a.runs}",
            "ratio_to_kiln_sparse: method time over kiln sparse time (> 1: kiln sparse faster)"]
    if a.device != "gpu":
        meta.append(f"--device {a.device}: timings meaningless")
    common.write_csv(a.out + ".csv", meta, COLUMNS, rows)
    common.plot_panels(a.out + ".png", f"relu + conv time against input density ({device_name}, {a.dtype})",
                       "input density", "median ms", panels)


# ---- 2. whole network ------------------------------------------------------------------------------------------

def plan_summary(model, batch, image, profile, tag):
    manifest, err = generate(model, inputs.scratch(tag), "--batch", batch, "--image", image, "--dtype", a.dtype,
                             *(["--profile", profile] if profile else ["--sparse", "force"]))
    if manifest is None:
        return "", err
    paths = {}
    for c in manifest.get("sparse", {}).get("convs", []):
        paths[c["path"]] = paths.get(c["path"], 0) + 1
    return " ".join(f"{p}:{n}" for p, n in sorted(paths.items())) or "no conv planned sparse", ""


def torch_network(name, xfile, mode):
    import torch
    import torch_models
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    dt = torch.float16 if mode == "f16" else torch.float32
    net = torch_models.MODELS[name]().cuda().eval().to(dt).to(memory_format=torch.channels_last)
    x = torch.from_numpy(np.load(xfile)).to("cuda", dt).contiguous(memory_format=torch.channels_last)

    def step():
        with torch.inference_mode():
            net(x)
    r = common.torch_time(step, a.runs, warmup=10)
    for k in ("median_ms", "min_ms", "max_ms"):
        if k in r:
            r[k] = round(r[k], 4)
    net = x = None  # free before empty_cache
    torch.cuda.empty_cache()
    return r


if not a.skip_network:
    hw = a.image.lower().split("x")
    height, width = int(hw[0]), int(hw[-1])
    image = f"{height}x{width}"
    net_name = os.path.splitext(os.path.basename(a.network))[0]
    weights = ["--weights", a.weights] if a.weights else []
    rows = []
    for batch in map(int, a.network_batches.split(",")):
        x = inputs.image((batch, 3, height, width))
        profile = inputs.scratch(f"profile_b{batch}.json")
        p = kiln("profile", a.network, "--input", x, "--device", a.device, "--gpu", descriptor, "--dtype", a.dtype,
                 *weights, "-o", profile)
        profile_err, mean_density = "", ""
        if p.returncode != 0 or not os.path.exists(profile):
            profile_err = "kiln profile: " + last_line(p)
        else:
            try:
                with open(profile) as f:
                    ds = json.load(f)["densities"]
                mean_density = f"{sum(e['nonzeros'] for e in ds) / max(1, sum(e['elements'] for e in ds)):.4f}"
            except (ValueError, KeyError, TypeError) as e:
                profile_err = f"kiln profile wrote an unreadable profile: {e}"
        base = dict(gpu=device_name, descriptor=descriptor_id, kiln_version=version, model=net_name, image=image,
                    batch=batch, mean_density=mean_density)
        group = []
        for method, extra in (("kiln dense", ["--sparse", "off"]), ("kiln sparse (profile)", ["--profile", profile]),
                              ("kiln sparse force", ["--sparse", "force"]),
                              ("kiln cudnn-only", ["--kernels", "cudnn", "--sparse", "off"])):
            plan = ""
            if method == "kiln sparse (profile)" and profile_err:
                r = {"status": "error", "error": profile_err}
            else:
                r = common.kiln_run(a.kiln, a.network, ["--input", x, "--gpu", descriptor, "--dtype", a.dtype,
                                                        *weights, *extra], a.runs, a.device)
                if method.startswith("kiln sparse"):
                    plan, err = plan_summary(a.network, batch, image, profile if "profile" in method else None,
                                             f"net_b{batch}_{'profile' if 'profile' in method else 'force'}")
                    if err and r["status"] == "ok":
                        r["error"] = err
            group.append(dict(base, **r, method=method, dtype=a.dtype, sparse_plan=plan))
        for mode in ([a.dtype] if a.dtype != "f32" else ["f32", "tf32"]):
            method = f"pytorch eager {mode}"
            if no_torch:
                r = {"status": "skipped", "error": no_torch}
            else:
                import torch_models
                if net_name not in torch_models.MODELS:
                    r = {"status": "skipped", "error": f"no PyTorch definition of {net_name} in bench/torch_models.py"}
                elif mode == "bf16":
                    r = {"status": "skipped", "error": "bf16: no PyTorch peer"}
                else:
                    try:
                        r = torch_network(net_name, x, mode)
                    except Exception as e:
                        msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
                        r = {"status": "oom" if "out of memory" in msg.lower() else "error", "error": msg}
            group.append(dict(base, **r, method=method, dtype=mode))
        dense = group[0]
        torch_ok = [r for r in group if r["method"].startswith("pytorch") and r["status"] == "ok"]
        for r in group:
            if r["status"] != "ok":
                continue
            r["images_per_s"] = f"{batch * 1000.0 / r['median_ms']:.1f}"
            if dense["status"] == "ok":
                r["vs_kiln_dense"] = f"{dense['median_ms'] / r['median_ms']:.3f}"
            if torch_ok:  # against the PyTorch run of kiln's dtype (f32: TF32 off)
                r["vs_pytorch"] = f"{torch_ok[0]['median_ms'] / r['median_ms']:.3f}"
        for r in group:
            print(f"{net_name} {image} b{batch:<3} {r['method']:22} {r['status']:7} {fmt(r.get('median_ms'), 3):>10} ms "
                  f"{r.get('images_per_s', ''):>9} img/s  vs dense x{r.get('vs_kiln_dense', '-')}  "
                  f"{r.get('sparse_plan', '')}  {r.get('error', '')}")
        rows += group
    meta = [f"kiln {version}", f"device {device_name}", f"descriptor {descriptor_id}", f"{net_name} inference",
            f"image {image}", f"runs {a.runs}", "vs_kiln_dense: kiln dense time over this time (> 1: faster)"]
    if a.device != "gpu":
        meta.append(f"--device {a.device}: timings meaningless")
    common.write_csv(a.out + "_network.csv", meta, NETWORK_COLUMNS, rows)
