"""Smoke test of bench/folded.py without a GPU: two small FoldedCNNs models (the smallest game
network and NoScope's coral) at f = 1, 2 on the emulator, batch 8, one run each; then, on the
cpu backend, a model kiln cannot load beside one whose fold needs padding (5 images at f = 3);
then bad usage. Checks the CSV's stable columns and meta row, that every kiln row ran and
carries kiln's roofline prediction, that the PyTorch rows are skipped with a reason, and that
kiln's failures become error rows with kiln's own message."""
import csv
import os
import subprocess
import sys
import time

from kiln_test import KILN, check, finish, tmpdir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "folded.py")
COLUMNS = ["gpu", "descriptor", "kiln_version", "model", "input", "factor", "batch", "dtype", "method", "variant",
           "status", "median_ms", "min_ms", "max_ms", "images_per_s", "gain_vs_f1", "kiln_vs_pytorch",
           "kiln_vs_compile", "vs_prediction", "predicted_images_per_s", "predicted_gain", "intensity",
           "flops_per_image", "bytes_per_image", "params", "error"]
METHODS = {"kiln", "pytorch eager", "pytorch compile"}
# kiln's parameter counts of the models run (models/README.md; kiln fold's output at f = 2, 3)
PARAMS = {("game_apex_squad_count_v2", 1): 33086, ("game_apex_squad_count_v2", 2): 67603,
          ("game_apex_squad_count_v2", 3): 103160, ("noscope_coral", 1): 1283154, ("noscope_coral", 2): 2495247}
INPUTS = {"game_apex_squad_count_v2": "3x19x25", "noscope_coral": "3x50x50"}

d = tmpdir()
kiln_exe = os.path.abspath(KILN) if os.path.exists(KILN) else KILN  # the runs below start in d


def bench(*args, expect=0):
    t = time.time()
    p = subprocess.run([sys.executable, SCRIPT, kiln_exe, *map(str, args)], capture_output=True, text=True, cwd=d,
                       timeout=600)
    print(f"folded.py {' '.join(map(str, args))}: exit {p.returncode} in {time.time() - t:.1f} s")
    check(p.returncode == expect,
          f"folded.py {args}: exit {p.returncode}, expected {expect}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def read(path):
    """(meta row, rows as dicts); checks the stable columns are there."""
    if not os.path.exists(path):
        check(False, f"{path} not written")
        return [], []
    with open(path, newline="") as f:
        r = list(csv.reader(f))
    check(len(r) >= 2 and r[0][:1] == ["#"] and any(c.startswith("kiln ") for c in r[0]),
          f"{path}: first row should name kiln's version: {r[:1]}")
    check(len(r) >= 2 and r[1] == COLUMNS, f"{path}: header {r[1:2]}, expected {COLUMNS}")
    return r[0], [dict(zip(r[1], row)) for row in r[2:]]


def number(v):
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def check_kiln_row(r, what):
    check(r["status"] == "ok", f"{what}: {r['status']} {r['error']}")
    for c in ("median_ms", "images_per_s", "gain_vs_f1", "vs_prediction", "predicted_images_per_s", "predicted_gain",
              "intensity", "flops_per_image", "bytes_per_image"):
        check(number(r.get(c)), f"{what}: {c} {r.get(c)!r}")
    check(not r["error"], f"{what}: error {r['error']!r} on an ok row")
    if number(r.get("predicted_images_per_s")):
        check(float(r["predicted_images_per_s"]) > 0, f"{what}: predicted_images_per_s {r['predicted_images_per_s']}")
    if r["factor"] == "1":
        check(r["gain_vs_f1"] == "1.000" and r["predicted_gain"] == "1.000",
              f"{what}: gains at f = 1 {r['gain_vs_f1']!r} {r['predicted_gain']!r}")
    check(r["variant"] == ("unfolded" if r["factor"] == "1" else "folded"), f"{what}: variant {r['variant']!r}")
    key = (r["model"], int(r["factor"]))
    if key in PARAMS:
        check(r["params"] == str(PARAMS[key]), f"{what}: params {r['params']!r}, expected {PARAMS[key]}")


started = time.time()
p = bench("--device", "emu", "--models", "game_apex_squad_count_v2,noscope_coral", "--factors", "1,2", "--batch", 8,
          "--runs", 1, "--out", os.path.join(d, "res", "folded"))
check("meaningless" in p.stdout, "--device emu should say its timings are meaningless:\n" + p.stdout)
check("targets:" in p.stdout, "no closing summary of the targets:\n" + p.stdout)
meta, rows = read(os.path.join(d, "res", "folded.csv"))
check(any("emu" in c for c in meta) and any(c.startswith("descriptor ") for c in meta), f"meta row: {meta}")
check(len(rows) == 2 * 2 * 3, f"2 models x 2 factors x 3 methods, got {len(rows)} rows")
check({(r.get("model"), r.get("factor"), r.get("method")) for r in rows} ==
      {(m, f, x) for m in INPUTS for f in ("1", "2") for x in METHODS}, "rows: model x factor x method")
for r in rows:
    what = f"{r.get('model')} f={r.get('factor')} {r.get('method')}"
    check(r.get("batch") == "8" and r.get("dtype") == "f16" and r.get("input") == INPUTS.get(r.get("model")),
          f"{what}: batch {r.get('batch')!r} dtype {r.get('dtype')!r} input {r.get('input')!r}")
    check(r.get("kiln_version") and r.get("descriptor") and r.get("gpu", "").startswith("emu"),
          f"{what}: gpu/descriptor/kiln_version {r.get('gpu')!r} {r.get('descriptor')!r} {r.get('kiln_version')!r}")
    if r.get("method") == "kiln":
        check_kiln_row(r, what)
    else:
        check(r.get("status") == "skipped" and "--device emu" in r.get("error", ""),
              f"{what}: should be skipped with a reason: {r}")
        check(number(r.get("predicted_gain")), f"{what}: the prediction belongs beside every row")
print(f"smoke run: {time.time() - started:.1f} s")

# A model kiln cannot load: its rows are errors carrying kiln's message; the other model runs,
# 5 images at f = 3 (the last fold padded), on the cpu backend.
broken = os.path.join(d, "broken.json")
with open(broken, "w") as f:
    f.write('{"format": "kiln-model/1", "layers": [')
p = bench("--device", "cpu", "--models", f"{broken},game_apex_squad_count_v2", "--factors", "1,3", "--batch", 5,
          "--runs", 1, "--no-compile", "--out", os.path.join(d, "res", "mixed"))
meta, rows = read(os.path.join(d, "res", "mixed.csv"))
check(len(rows) == 2 * 2 * 3, f"mixed: 2 models x 2 factors x 3 methods, got {len(rows)} rows")
for r in rows:
    what = f"mixed {r.get('model')} f={r.get('factor')} {r.get('method')}"
    if r.get("model") == "game_apex_squad_count_v2":
        if r.get("method") == "kiln":
            check_kiln_row(r, what)
        else:
            check(r.get("status") == "skipped" and r.get("error"), f"{what}: should be skipped with a reason: {r}")
    else:
        check(r.get("status") == "error" and "kiln: error:" in r.get("error", ""),
              f"{what}: {r.get('status')} {r.get('error')!r}")

# Bad usage exits non-zero with a message, writing nothing.
p = bench("--device", "cpu", "--factors", "0,2", "--out", os.path.join(d, "res", "bad"), expect=2)
check("--factors" in p.stderr, f"--factors 0,2: {p.stderr!r}")
check(not os.path.exists(os.path.join(d, "res", "bad.csv")), "bad usage wrote a CSV")
finish()
