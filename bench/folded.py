#!/usr/bin/env python3
"""FoldedCNNs throughput (issue 12 point 6; DESIGN.md 5.3, 9): kiln's folded models against
kiln unfolded and PyTorch, with kiln's roofline prediction beside every measurement.

What it measures
  For each model (the six game-scraping ConvN networks and the four NoScope CNNs of
  FoldedCNNs, models/README.md) and each folding factor f (1, 2, 3, 4), inference on BATCH
  (1024) random images of the model's own, unfolded shape (seeded, float32 .npy; the same
  file for every f), in DTYPE (fp16):
    kiln             `kiln fold MODEL --factor f` (f > 1: f images stacked along channels,
                     hidden widths int(w * sqrt(f)), last layer f*K outputs), then
                     `kiln run --device gpu --gpu DESC --dtype DTYPE --input X --bench RUNS`:
                     kiln folds and unfolds as views and pads the last fold with zero images
                     when f does not divide BATCH (f = 3: 342 folded inputs for 1024 images)
    pytorch eager    bench/torch_models.py's definition of the same model and f
                     (folded_cnn: first conv f*C inputs, the same widths, last layer f*K, the
                     input viewed as [BATCH/f, f*C, H, W] and the output as [BATCH, K]), DTYPE,
                     channels_last weights, cudnn.benchmark, inference_mode, on the same NCHW
                     batch kiln reads (padded with zero images like kiln's); the channels_last
                     conversion of that input happens inside the first conv and is timed, as
                     kiln's first conv reads NCHW in place. --torch-input channels_last hands
                     PyTorch its folded input already in channels_last instead (its best case)
    pytorch compile  the same module through torch.compile (--compile-mode, default
                     "default"; dynamo reset per model and f; a failure is an "error" row with
                     its message; --no-compile skips it)
  Times: kiln's CUDA-event median of RUNS steps after warm-up (its `bench:` line); PyTorch's
  the same in this process (common.torch_time: 10 warm-up steps, CUDA events, median).
  images/s = BATCH / median. The prediction is `kiln inspect MODEL --fold 1,2,3,4 --gpu DESC
  --batch BATCH --dtype DTYPE --json`: per factor the FLOPs and bytes per image, their ratio
  and the roofline's images/s and gain over f = 1 (a floor on time: launches and small-layer
  inefficiency come on top). The PyTorch definitions are checked against kiln's models by
  parameter count (a mismatch is an "error" row).
  Targets (issue 12): kiln's gain at f = 4 >= 2.5x over kiln unfolded on the same GPU, and
  kiln unfolded >= 1.2x PyTorch eager fp16 channels_last; the closing summary says which
  models meet them.

How to run it on a GPU machine (from the bundle: `make bundle` here writes
build/bundle/kiln-<version>-<arch>.tar.gz; copy it over; PyTorch with CUDA installed):
  tar xzf kiln-0.1.0-x86_64.tar.gz && cd kiln-0.1.0-x86_64
  python3 bench/folded.py bin/kiln --device gpu --gpu auto --out bench/results/folded
(--gpu auto: `kiln gpu detect` describes the live GPU; the kernels and the predictions are made
for it). --models noscope --factors 1,4 --runs 20 --no-compile for a quick look. Here, without
a GPU, --device emu runs kiln's generated kernels on the CPU emulator and --device cpu the
reference ops: the driver is exercised, the timings mean nothing, PyTorch is skipped (CI:
tests/integration/test_bench_folded.py, at batch 8).

usage: bench/folded.py KILN [--device gpu|emu|cpu] [--gpu auto|DESCRIPTOR]
           [--models all|game|noscope|NAME,...] [--factors 1,2,3,4] [--batch 1024]
           [--dtype f16] [--runs 50] [--no-compile] [--compile-mode default]
           [--torch-input view|channels_last] [--out bench/results/folded] [--keep]
--models: groups (all, game, noscope) and shipped names or kiln-model/1 files, comma-separated.

Outputs (first CSV row: '#', kiln version, device and GPU name, descriptor, settings)
  OUT.csv, one row per model x factor x method:
    gpu            the device the times come from (GPU name, or emu/cpu)
    descriptor     the kiln-gpu/1 descriptor the kernels and predictions were made for
    kiln_version, model, input (C x H x W of one image), factor, batch (images), dtype
    method         kiln | pytorch eager | pytorch compile
    variant        kiln: unfolded | folded; PyTorch: memory format, input, compile mode
    status         ok | error | oom | timeout | skipped
    median_ms, min_ms, max_ms   one step over all BATCH images
    images_per_s   BATCH / median
    gain_vs_f1     images/s over the same method's at f = 1 (the folding gain)
    kiln_vs_pytorch  (kiln rows) kiln images/s over PyTorch eager's at the same f (> 1: kiln faster)
    kiln_vs_compile  (kiln rows) the same against PyTorch compile
    vs_prediction  measured images/s over the predicted (the fraction of the roofline reached)
    predicted_images_per_s, predicted_gain, intensity (FLOP/byte), flops_per_image,
                   bytes_per_image   kiln's roofline for this model and f (on every row)
    params         parameters of the model run (kiln's count; PyTorch's on its rows)
    error          the last stderr line of a failing kiln command, PyTorch's message, or why
                   a row was skipped
  OUT.png: measured gain against f per model (kiln solid, kiln's prediction dashed, PyTorch
    dotted and dash-dotted); no plot without matplotlib.
"""
import argparse
import math

import numpy as np

import common

GAME_MODELS = ("game_lol_goldnumber_fraction", "game_lol_goldnumber_int", "game_lol_timer_minutes",
               "game_apex_squad_count_v2", "game_sot_coin_count", "game_sot_timer3")
NOSCOPE_MODELS = ("noscope_coral", "noscope_night", "noscope_taipei", "noscope_roundabout")
METHODS = ("kiln", "pytorch eager", "pytorch compile")
COLUMNS = ["gpu", "descriptor", "kiln_version", "model", "input", "factor", "batch", "dtype", "method", "variant",
           "status", "median_ms", "min_ms", "max_ms", "images_per_s", "gain_vs_f1", "kiln_vs_pytorch",
           "kiln_vs_compile", "vs_prediction", "predicted_images_per_s", "predicted_gain", "intensity",
           "flops_per_image", "bytes_per_image", "params", "error"]
TARGET_GAIN, TARGET_VS_PYTORCH = 2.5, 1.2

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("kiln")
ap.add_argument("--device", default="gpu", choices=["gpu", "emu", "cpu"])
ap.add_argument("--gpu", default="auto", help="descriptor (a shipped name or a kiln-gpu/1 file); auto: the live GPU "
                "on --device gpu (kiln gpu detect), h200 elsewhere")
ap.add_argument("--models", default="all", help="all, game, noscope, or comma-separated names or model files")
ap.add_argument("--factors", default="1,2,3,4")
ap.add_argument("--batch", type=int, default=1024, help="images per step (any number: kiln pads the last fold)")
ap.add_argument("--dtype", default="f16", choices=["f16", "bf16", "f32"])
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
ap.add_argument("--compile-mode", default="default", help="torch.compile's mode (default, reduce-overhead, "
                "max-autotune, max-autotune-no-cudagraphs)")
ap.add_argument("--torch-input", default="view", choices=["view", "channels_last"],
                help="view: PyTorch gets kiln's NCHW batch and folds it as a view (its channels_last conversion "
                "timed); channels_last: the folded input is handed over in channels_last, untimed")
ap.add_argument("--out", default="bench/results/folded")
ap.add_argument("--keep", action="store_true", help="keep the temporary directory (folded models, inputs)")
a = ap.parse_args()


def parse_factors(text):
    try:
        fs = sorted({int(f) for f in text.split(",") if f.strip()})
    except ValueError:
        fs = []
    if not fs or fs[0] < 1:
        ap.error(f"--factors {text}: expected positive integers, e.g. 1,2,3,4")
    return fs


def parse_models(text):
    out = []
    for t in (s.strip() for s in text.split(",")):
        group = {"all": GAME_MODELS + NOSCOPE_MODELS, "game": GAME_MODELS, "noscope": NOSCOPE_MODELS}.get(t, (t,))
        out += [m for m in group if m and m not in out]
    if not out:
        ap.error("--models selects no model")
    return out


factors = parse_factors(a.factors)
models = parse_models(a.models)
if a.batch < 1 or a.runs < 1:
    ap.error("--batch and --runs must be positive")
b = common.Session("folded.py", a)
inputs, version, descriptor, device_name = b.inputs, b.version, b.descriptor, b.device_name
kiln, kiln_json, last_line, fmt = b.kiln, b.kiln_json, common.last_line, common.fmt
probe, _ = kiln_json("inspect", "game_apex_squad_count_v2", "--fold", "1", "--gpu", descriptor, "--dtype", a.dtype)
descriptor_id = probe["gpu"] if probe and isinstance(probe.get("gpu"), str) else descriptor
print(f"kiln {version}; device {device_name}; descriptor {descriptor_id}; batch {a.batch}, {a.dtype}, "
      f"factors {','.join(map(str, factors))}, runs {a.runs}")


no_torch = b.no_torch
torch_version = ""
if not no_torch:
    import torch
    torch_version = torch.__version__


def torch_rows(name, f, shape, xfile, kiln_params):
    """PyTorch eager and compile on the model folded by f: two result dicts."""
    compile_variant = f"channels_last, {a.torch_input} input, torch.compile {a.compile_mode}"
    eager_variant = f"channels_last, {a.torch_input} input"
    if no_torch:
        return [{"status": "skipped", "error": no_torch, "variant": eager_variant},
                {"status": "skipped", "error": no_torch, "variant": compile_variant}]
    import torch
    import torch_models
    if name not in torch_models.FOLDED_CNNS:
        why = f"no PyTorch definition of {name} in bench/torch_models.py"
        return [{"status": "skipped", "error": why}, {"status": "skipped", "error": why}]
    torch.backends.cudnn.benchmark = True
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    c, h, w = shape
    n = -(-a.batch // f) * f  # kiln's padding: the last fold filled with zero images
    out = []
    try:
        model = torch_models.folded_cnn(name, f).cuda().eval().to(dt).to(memory_format=torch.channels_last)
        params = sum(p.numel() for p in model.parameters())
        if kiln_params and params != kiln_params:
            why = f"the PyTorch definition has {params} parameters, kiln's model {kiln_params}"
            return [{"status": "error", "error": why, "params": params}, {"status": "error", "error": why,
                                                                           "params": params}]
        x = torch.zeros(n, c, h, w, dtype=dt, device="cuda")
        x[:a.batch] = torch.from_numpy(np.load(xfile)).to("cuda", dt)
        if a.torch_input == "channels_last":
            xf = x.view(n // f, f * c, h, w).contiguous(memory_format=torch.channels_last)

            def forward(m):
                return m.net(xf).view(n, -1)
        else:
            def forward(m):
                return m(x)

        def eager():
            with torch.inference_mode():
                forward(model)
        try:
            r = common.torch_time(eager, a.runs, warmup=10)
        except Exception as e:  # noqa: BLE001 (any failure is a row)
            r = common.failure(e)
        out.append(dict(r, variant=eager_variant, params=params))
        if a.no_compile:
            out.append({"status": "skipped", "error": "--no-compile", "variant": compile_variant})
        else:
            try:
                torch._dynamo.reset()  # a fresh cache per model and f (nn.Sequential shares its code)
                compiled = torch.compile(model, mode=None if a.compile_mode == "default" else a.compile_mode)

                def step():
                    with torch.no_grad():
                        forward(compiled)
                r = common.torch_time(step, a.runs, warmup=10)
            except Exception as e:  # noqa: BLE001
                r = common.failure(e)
            out.append(dict(r, variant=compile_variant, params=params))
            compiled = None
    except Exception as e:  # noqa: BLE001 (building the model or the input failed)
        r = common.failure(e)
        out += [dict(r, variant=v) for v in (eager_variant, compile_variant)][len(out):]
    model = x = xf = None  # free before empty_cache
    torch.cuda.empty_cache()
    for r in out:
        for k in ("median_ms", "min_ms", "max_ms"):
            if k in r:
                r[k] = round(r[k], 5)
    return out


def bench_model(model, rows):
    """Every factor and method of one model; returns its plot panel."""
    info, err = kiln_json("inspect", model)
    name = info.get("model", model) if info else model
    base = dict(gpu=device_name, descriptor=descriptor_id, kiln_version=version, model=name, batch=a.batch,
                dtype=a.dtype)
    if info is None:
        for f in factors:
            for method in METHODS:
                rows.append(dict(base, factor=f, method=method, status="error", error=f"kiln inspect: {err}"))
        print(f"{model}: kiln inspect failed: {err}")
        return None
    shape = info["input_shape"][1:]
    base["input"] = "x".join(map(str, shape))
    pred, pred_err = kiln_json("inspect", model, "--fold", ",".join(map(str, sorted({1, *factors}))), "--gpu",
                               descriptor, "--batch", a.batch, "--dtype", a.dtype)
    folds = {e["factor"]: e for e in pred.get("folds", [])} if pred else {}
    x = inputs.image((a.batch, *shape))
    model_rows = []
    for f in factors:
        group = []
        path, fold_err, params = model, "", info.get("total_params")
        if f > 1:
            path = inputs.scratch(f"{name}_f{f}.json")
            p = kiln("fold", model, "--factor", f, "-o", path)
            if p.returncode != 0:
                fold_err = "kiln fold: " + last_line(p)
            else:
                folded, _ = kiln_json("inspect", path)
                params = folded.get("total_params") if folded else None
        if fold_err:
            r = {"status": "error", "error": fold_err}
        else:
            r = common.kiln_run(a.kiln, path, ["--input", x, "--gpu", descriptor, "--dtype", a.dtype], a.runs,
                                a.device)
        group.append(dict(base, **r, method="kiln", variant="folded" if f > 1 else "unfolded", params=params or ""))
        for method, r in zip(METHODS[1:], torch_rows(name, f, shape, x, params)):
            group.append(dict(base, **r, method=method))
        e = folds.get(f)  # kiln's roofline at this factor
        for r in group:
            r["factor"] = f
            if r["status"] == "ok":
                r["images_per_s"] = f"{a.batch * 1000.0 / r['median_ms']:.1f}"
            if e:
                r.update(predicted_images_per_s=f"{e['images_per_s']:.0f}", predicted_gain=f"{e['gain']:.3f}",
                         intensity=f"{e['intensity']:.2f}", flops_per_image=f"{e['flops_per_image']:.0f}",
                         bytes_per_image=f"{e['bytes_per_image']:.0f}")
                if r["status"] == "ok":
                    r["vs_prediction"] = f"{float(r['images_per_s']) / e['images_per_s']:.4g}"
            elif r["status"] == "ok" or not r.get("error"):
                why = f"kiln inspect --fold: {pred_err}" if pred_err else f"no prediction for f = {f}"
                r["error"] = "; ".join(s for s in (r.get("error"), why) if s)
        kiln_row = group[0]
        for peer, key in ((group[1], "kiln_vs_pytorch"), (group[2], "kiln_vs_compile")):
            if kiln_row["status"] == "ok" and peer["status"] == "ok":
                kiln_row[key] = f"{float(kiln_row['images_per_s']) / float(peer['images_per_s']):.3f}"
        model_rows += group
    # The folding gain: each method against itself at f = 1.
    by = {(r["factor"], r["method"]): r for r in model_rows}
    for r in model_rows:
        one = by.get((1, r["method"]))
        if r["status"] == "ok" and one and one["status"] == "ok":
            r["gain_vs_f1"] = f"{float(r['images_per_s']) / float(one['images_per_s']):.3f}"
    for r in model_rows:
        print(f"{name:30} f={r['factor']} b{a.batch:<5} {r['method']:16} {r['status']:7} "
              f"{fmt(r.get('median_ms'), 3):>10} ms {r.get('images_per_s', ''):>11} img/s "
              f"gain {r.get('gain_vs_f1', '') or '-':>6}  pred {r.get('predicted_images_per_s', '') or '-':>10} img/s "
              f"x{r.get('predicted_gain', '') or '-':6} {r.get('error', '')}")
    rows += model_rows
    series = {"kiln": [], "kiln roofline": [], "pytorch eager": [], "pytorch compile": []}
    for f in factors:
        for method in METHODS:
            r = by[f, method]
            if r.get("gain_vs_f1"):
                series[method].append((f, float(r["gain_vs_f1"])))
        if by[f, "kiln"].get("predicted_gain"):
            series["kiln roofline"].append((f, float(by[f, "kiln"]["predicted_gain"])))
    title = f"{name} ({base['input']})"
    g4 = by.get((4, "kiln"), {}).get("gain_vs_f1")
    if g4:
        title += f": kiln x{float(g4):.2f} at f=4"
    return {"title": title, "series": {k: v for k, v in series.items() if v},
            "styles": {"kiln": {"linestyle": "-", "color": "C0"}, "kiln roofline": {"linestyle": "--", "color": "C0"},
                       "pytorch eager": {"linestyle": ":", "color": "C1"},
                       "pytorch compile": {"linestyle": "-.", "color": "C2"}},
            "xticks": factors}


rows, panels = [], []
for m in models:
    panel = bench_model(m, rows)
    if panel:
        panels.append(panel)

meta = [f"kiln {version}", f"device {device_name}", f"descriptor {descriptor_id}", "FoldedCNNs inference throughput",
        f"batch {a.batch} images", f"dtype {a.dtype}", f"runs {a.runs}",
        f"pytorch {torch_version}" if torch_version else f"pytorch: {no_torch}",
        "gain_vs_f1: images/s over the same method's at f = 1",
        "kiln_vs_pytorch: kiln images/s over PyTorch eager's at the same f (> 1: kiln faster)"]
if a.device != "gpu":
    meta.append(f"--device {a.device}: timings meaningless")
common.write_csv(a.out + ".csv", meta, COLUMNS, rows)
common.plot_panels(a.out + ".png", f"FoldedCNNs: throughput gain against f ({device_name}, {a.dtype}, batch {a.batch})",
                   "folding factor f", "images/s over f = 1", panels, logy=False, columns=5)


# ---- the targets --------------------------------------------------------------------------------------------

def value(factor, method, model, key):
    for r in rows:
        if r["model"] == model and r["factor"] == factor and r["method"] == method and r.get(key):
            return float(r[key])
    return None


def verdict(v, target):
    return "-" if v is None else ("met" if v >= target else "missed")


print(f"\ntargets: kiln's gain at f=4 >= {TARGET_GAIN}x over kiln unfolded; kiln unfolded >= {TARGET_VS_PYTORCH}x "
      "PyTorch eager channels_last" + ("" if a.device == "gpu" else f" (--device {a.device}: not meaningful)"))
print(f"{'model':30} {'gain f=4':>9} {'predicted':>9} {'':7} {'kiln/pytorch f=1':>16}")
for name in dict.fromkeys(r["model"] for r in rows):
    g, pg = value(4, "kiln", name, "gain_vs_f1"), value(4, "kiln", name, "predicted_gain")
    vs = value(1, "kiln", name, "kiln_vs_pytorch")
    print(f"{name:30} {fmt(g, 2) or '-':>9} {fmt(pg, 2) or '-':>9} {verdict(g, TARGET_GAIN):7} "
          f"{fmt(vs, 2) or '-':>16} {verdict(vs, TARGET_VS_PYTORCH)}")
gains = [g for g in (value(4, "kiln", n, "gain_vs_f1") for n in dict.fromkeys(r["model"] for r in rows)) if g]
if gains:
    print(f"geometric mean of kiln's gain at f=4: {math.exp(sum(map(math.log, gains)) / len(gains)):.2f}x")
