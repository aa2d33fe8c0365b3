"""Part 1 of bench/sparse_conv.py (see there): per layer shape, kiln's sparse convolution
against its dense ones, cuDNN through kiln and PyTorch's cuDNN, at every input density, with
kiln's prediction and the measured crossover."""
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


def pair(v):
    return list(v) if isinstance(v, list) else [v, v]


def sparse_candidates(b, model, batch):
    """The model's 3x3 stride-1 convs reading a relu's output, with their input shapes."""
    path = os.path.join(MODELS_DIR, model + ".json")
    if not os.path.exists(path):
        sys.exit(f"sparse_conv.py: {path} missing (the driver reads the example models next to bench/)")
    with open(path) as f:
        spec = json.load(f)
    p = b.kiln("inspect", path, "--batch", batch, "--json")
    if p.returncode != 0:
        sys.exit(f"sparse_conv.py: kiln inspect {model}: {common.last_line(p)}")
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


def distinct_layers(b, batch):
    groups = {}
    for model in LAYER_MODELS:
        for c in sparse_candidates(b, model, batch):
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


def select(layers, which):
    if which == "all":
        return layers
    if which == "small":
        return sorted(sorted(layers, key=lambda g: g["macs"])[:2], key=lambda g: -g["macs"])
    texts = which.split(",")
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


def predict(b, model_layers, shape, density, tag):
    """kiln's plan for the one-layer model at this density: the manifest's sparse decision."""
    layers = json.loads(json.dumps(model_layers))
    layers[1]["hints"] = {"activation_density": density}
    path = common.write_model(b.inputs.scratch(f"{tag}_hint.json"), "one_layer", shape, layers, b.args.dtype)
    manifest, err = b.generate(path, b.inputs.scratch(f"{tag}_auto"), "--sparse", "auto")
    if manifest is None:
        return {"error": err}
    convs = [c for c in manifest.get("sparse", {}).get("convs", []) if c["layer"] == "conv"
             and c.get("phase", "forward") == "forward"]
    if not convs:
        return {"error": "no sparse decision for the conv in the manifest"}
    return convs[0]


def torch_layer(b, xfile, g, mode):
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
        r = dict(common.torch_time(step, b.args.runs, warmup=10), variant=name)
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


def bench_layer(b, g, rows):
    n, ch, h, w = g["in"]
    model_layers = [{"name": "relu", "op": "relu"}, dict(g["conv"], name="conv")]
    tag = f"l{ch}_{g['out'][1]}_{h}x{w}"
    a, inputs = b.args, b.inputs
    model = common.write_model(inputs.scratch(f"{tag}.json"), "one_layer", g["in"], model_layers, a.dtype)
    manifest, err = b.generate(model, inputs.scratch(f"{tag}_force"), "--sparse", "force")
    forced = [c for c in (manifest or {}).get("sparse", {}).get("convs", []) if c["layer"] == "conv"]
    force_err = err or ("" if forced and forced[0]["path"] == "sparse" else
                        f"--sparse force left the conv {forced[0]['path'] if forced else 'out of the sparse plan'}")
    layer_rows = []
    for di, d in enumerate(b.densities):
        x = sparse_input(inputs.scratch(f"{tag}_d{di}.npy"), g["in"], d, seed=1000 + di)
        pred = predict(b, model_layers, g["in"], d, f"{tag}_d{di}")
        base = dict(gpu=b.device_name, descriptor=b.descriptor_id, kiln_version=b.version, model=g["models"],
                    occurrences=g["occurrences"], layer=g["layer"], shape=g["shape"], batch=n, density=f"{d:.3f}")
        group = []
        for method, extra in KILN_METHODS:
            if method == "kiln sparse" and force_err:
                r = {"status": "error", "error": force_err}
            else:
                r = common.kiln_run(a.kiln, model, ["--input", x, "--gpu", b.descriptor, "--dtype", a.dtype, *extra],
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
            if b.no_torch:
                r = {"status": "skipped", "error": b.no_torch}
            else:
                try:
                    r = torch_layer(b, x, g, mode)
                except Exception as e:  # noqa: BLE001 (any failure is a row)
                    r = common.failure(e)
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
                  f"{common.fmt(r.get('median_ms'), 4):>10} ms  x{r.get('ratio_to_kiln_sparse', '-'):>6}  "
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
        r["measured_crossover"] = common.fmt(measured, 3)
        r["predicted_threshold"] = common.fmt(predicted, 3)
    note = "" if measured is not None else (" (kiln sparse faster at every density run)" if points and all(
        s < dn for _, s, dn in points) else " (none)")
    print(f"{g['label']}: measured crossover {common.fmt(measured, 3) or '-'}{note}, predicted threshold "
          f"{common.fmt(predicted, 3) or '- (no sparse win predicted)'}")
    rows += layer_rows
    series = {}
    for r in layer_rows:
        if r["status"] == "ok":
            series.setdefault(f"{r['method']} {r['dtype']}" if r["method"].startswith("kiln") else r["method"],
                              []).append((float(r["density"]), r["median_ms"]))
    vlines = ([(measured, f"measured crossover {measured:.2f}", "-")] if measured is not None else []) + \
             ([(predicted, f"predicted threshold {predicted:.2f}", "--")] if predicted is not None else [])
    return {"title": f"{g['label']} b{n} ({g['models']})", "series": series, "vlines": vlines}


def run(b):
    """Part 1 of bench/sparse_conv.py: every layer at every density; its CSV and plot."""
    a = b.args
    rows, panels = [], []
    candidates = distinct_layers(b, a.batch)
    chosen = select(candidates, a.layers)
    print(f"{len(candidates)} distinct 3x3 stride-1 convs after a relu in {', '.join(LAYER_MODELS)} (batch {a.batch}):")
    for g in candidates:
        print(f"  {'*' if g in chosen else ' '} {g['label']:22} {g['shape']:44} {g['macs'] / 1e6:10.1f} MMAC  "
              f"{g['occurrences']}  first {g['layer']}")
    if not chosen:
        sys.exit(f"sparse_conv.py: --layers {a.layers} selects no layer")
    for g in chosen:
        panels.append(bench_layer(b, g, rows))
    meta = [f"kiln {b.version}", f"device {b.device_name}", f"descriptor {b.descriptor_id}",
            "relu + 3x3 conv per layer and input density", f"dtype {a.dtype}", f"runs {a.runs}",
            "ratio_to_kiln_sparse: method time over kiln sparse time (> 1: kiln sparse faster)"]
    if a.device != "gpu":
        meta.append(f"--device {a.device}: timings meaningless")
    common.write_csv(a.out + ".csv", meta, COLUMNS, rows)
    common.plot_panels(a.out + ".png", f"relu + conv time against input density ({b.device_name}, {a.dtype})",
                       "input density", "median ms", panels)


