"""bench/mobile_nets.py's results: the CSV (stable columns) and the markdown table, rewritten
after every row so that a run cut at its limit keeps what finished."""
import csv
import os

import common

METHODS = ("kiln", "pytorch eager", "pytorch compile", "onnxruntime")
COLUMNS = ["model", "batch", "image", "dtype", "method", "variant", "status", "median_ms", "min_ms", "max_ms",
           "images_per_s", "peer_over_kiln", "rel_err", "err_bound", "pytorch_dtype_err", "setup_s", "params", "error"]


def add_ratios(rows):
    """peer_over_kiln on each ok peer row: its median over kiln's for the same model and batch."""
    kiln = {(r["model"], r["batch"]): r for r in rows if r["method"] == "kiln"}
    for r in rows:
        k = kiln.get((r["model"], r["batch"]))
        if r["method"] != "kiln" and k and k.get("status") == "ok" and r.get("status") == "ok":
            r["peer_over_kiln"] = f"{r['median_ms'] / k['median_ms']:.3f}"


def write_csv(out, meta, rows):
    path = out + ".csv"
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["#", *meta])
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([common.fmt(r.get(c), 3) if c in ("median_ms", "min_ms", "max_ms") else r.get(c, "")
                        for c in COLUMNS])
    os.replace(path + ".tmp", path)


def write_md(a, meta, notes, rows, batches, models):
    """The markdown table per batch; a = the run's arguments (out, dtype, image)."""
    lines = [f"# Mobile CNNs: kiln (ONNX import) against PyTorch, {a.dtype}, {a.image}x{a.image}", "",
             *[f"- {m}" for m in meta], *[f"- {n}" for n in notes], "",
             "Median ms per batch (images/s); `x` = peer time over kiln's (> 1: kiln faster); "
             "err = relative L2 error against PyTorch f32 on the same device.", ""]
    by = {(r["model"], r["batch"], r["method"]): r for r in rows}
    for batch in batches:
        lines += [f"## batch {batch}", "",
                  "| model | kiln | kiln err | eager | eager x | compile | compile x | ORT | ORT x | "
                  f"PyTorch {a.dtype} err | kiln setup s | compile s |", "|" + "---|" * 12]
        for model in models:
            cell = {}
            for m in METHODS:
                r = by.get((model, batch, m))
                if r is None:
                    cell[m] = ("", "")
                elif r["status"] == "ok":
                    cell[m] = (f"{common.fmt(r['median_ms'], 3)} ({r.get('images_per_s', '')})",
                               r.get("peer_over_kiln", ""))
                else:
                    cell[m] = (r["status"], "")
            k = by.get((model, batch, "kiln"), {})
            c = by.get((model, batch, "pytorch compile"), {})
            kerr = k.get("rel_err", "") + (f" (bound {k['err_bound']})" if k.get("err_bound") else "")
            lines.append(f"| {model} | {cell['kiln'][0]} | {kerr} | {cell['pytorch eager'][0]} | "
                         f"{cell['pytorch eager'][1]} | {cell['pytorch compile'][0]} | "
                         f"{cell['pytorch compile'][1]} | {cell['onnxruntime'][0]} | {cell['onnxruntime'][1]} | "
                         f"{k.get('pytorch_dtype_err', '')} | {k.get('setup_s', '')} | "
                         f"{c.get('setup_s', '')} |")
        lines.append("")
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        lines += ["## Not ok", ""]
        lines += [f"- {r['model']} b{r['batch']} {r['method']}: {r['status']}: {r.get('error', '')}" for r in bad]
    path = a.out + ".md"
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)
