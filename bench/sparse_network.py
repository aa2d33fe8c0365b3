"""Part 2 of bench/sparse_conv.py (see there): a whole network's inference with and without
kiln's sparse family (planned from a measured profile, or forced), kiln's cuDNN-only plan and
PyTorch eager."""
import json
import os

import numpy as np

import common

NETWORK_COLUMNS = ["gpu", "descriptor", "kiln_version", "model", "image", "dtype", "batch", "method", "status",
                   "median_ms", "min_ms", "max_ms", "images_per_s", "vs_kiln_dense", "vs_pytorch", "mean_density",
                   "sparse_plan", "arena_bytes", "error"]


def plan_summary(b, model, batch, image, profile, tag):
    """The plan's sparse decisions, as path:count."""
    manifest, err = b.generate(model, b.inputs.scratch(tag), "--batch", batch, "--image", image, "--dtype",
                               b.args.dtype,
                               *(["--profile", profile] if profile else ["--sparse", "force"]))
    if manifest is None:
        return "", err
    paths = {}
    for c in manifest.get("sparse", {}).get("convs", []):
        paths[c["path"]] = paths.get(c["path"], 0) + 1
    return " ".join(f"{p}:{n}" for p, n in sorted(paths.items())) or "no conv planned sparse", ""


def torch_network(b, name, xfile, mode):
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
    r = common.torch_time(step, b.args.runs, warmup=10)
    for k in ("median_ms", "min_ms", "max_ms"):
        if k in r:
            r[k] = round(r[k], 4)
    net = x = None  # free before empty_cache
    torch.cuda.empty_cache()
    return r


def run(b):
    """Part 2 of bench/sparse_conv.py: the whole network at each batch; its CSV."""
    a, inputs, descriptor = b.args, b.inputs, b.descriptor
    hw = a.image.lower().split("x")
    height, width = int(hw[0]), int(hw[-1])
    image = f"{height}x{width}"
    net_name = os.path.splitext(os.path.basename(a.network))[0]
    weights = ["--weights", a.weights] if a.weights else []
    rows = []
    for batch in map(int, a.network_batches.split(",")):
        x = inputs.image((batch, 3, height, width))
        profile = inputs.scratch(f"profile_b{batch}.json")
        p = b.kiln("profile", a.network, "--input", x, "--device", a.device, "--gpu", descriptor, "--dtype", a.dtype,
                 *weights, "-o", profile)
        profile_err, mean_density = "", ""
        if p.returncode != 0 or not os.path.exists(profile):
            profile_err = "kiln profile: " + common.last_line(p)
        else:
            try:
                with open(profile) as f:
                    ds = json.load(f)["densities"]
                mean_density = f"{sum(e['nonzeros'] for e in ds) / max(1, sum(e['elements'] for e in ds)):.4f}"
            except (ValueError, KeyError, TypeError) as e:
                profile_err = f"kiln profile wrote an unreadable profile: {e}"
        base = dict(gpu=b.device_name, descriptor=b.descriptor_id, kiln_version=b.version, model=net_name, image=image,
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
                    plan, err = plan_summary(b, a.network, batch, image, profile if "profile" in method else None,
                                             f"net_b{batch}_{'profile' if 'profile' in method else 'force'}")
                    if err and r["status"] == "ok":
                        r["error"] = err
            group.append(dict(base, **r, method=method, dtype=a.dtype, sparse_plan=plan))
        for mode in ([a.dtype] if a.dtype != "f32" else ["f32", "tf32"]):
            method = f"pytorch eager {mode}"
            if b.no_torch:
                r = {"status": "skipped", "error": b.no_torch}
            else:
                import torch_models
                if net_name not in torch_models.MODELS:
                    r = {"status": "skipped", "error": f"no PyTorch definition of {net_name} in bench/torch_models.py"}
                elif mode == "bf16":
                    r = {"status": "skipped", "error": "bf16: no PyTorch peer"}
                else:
                    try:
                        r = torch_network(b, net_name, x, mode)
                    except Exception as e:  # noqa: BLE001 (any failure is a row)
                        r = common.failure(e)
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
            print(f"{net_name} {image} b{batch:<3} {r['method']:22} {r['status']:7} {common.fmt(r.get('median_ms'), 3):>10} ms "
                  f"{r.get('images_per_s', ''):>9} img/s  vs dense x{r.get('vs_kiln_dense', '-')}  "
                  f"{r.get('sparse_plan', '')}  {r.get('error', '')}")
        rows += group
    meta = [f"kiln {b.version}", f"device {b.device_name}", f"descriptor {b.descriptor_id}", f"{net_name} inference",
            f"image {image}", f"runs {a.runs}", "vs_kiln_dense: kiln dense time over this time (> 1: faster)"]
    if a.device != "gpu":
        meta.append(f"--device {a.device}: timings meaningless")
    common.write_csv(a.out + "_network.csv", meta, NETWORK_COLUMNS, rows)
