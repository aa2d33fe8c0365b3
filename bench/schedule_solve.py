#!/usr/bin/env python3
"""Solve time of each recompute strategy and its predicted overhead at 50%, 33% and 25% of
the store-all peak, for resnet50, resnet152, densenet201 and resnet1202 (training steps,
the H200 roofline). No GPU needed.

usage: bench/schedule_solve.py KILN [OUT.csv]
"""
import csv
import json
import subprocess
import sys
import time

kiln = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else "bench/results/schedule_solve.csv"
version = subprocess.run([kiln, "--version"], capture_output=True, text=True).stdout.split()[1]
rows = []
for model, batch in (("resnet50", 32), ("resnet152", 32), ("densenet201", 32), ("resnet1202", 128)):
    for strategy in ("sqrt", "rotor", "dtr"):
        for pct in (50, 33, 25):
            t0 = time.time()
            p = subprocess.run([kiln, "schedule", model, "--batch", str(batch), "--gpu", "h200", "--budget",
                                f"{pct}%", "--strategy", strategy, "--json"], capture_output=True, text=True)
            wall = time.time() - t0
            if p.returncode != 0:
                rows.append([model, batch, strategy, pct, "", "", "", "", "", f"{wall:.3f}", "infeasible"])
                print(f"{model} {strategy} {pct}%: {p.stderr.strip()}")
                continue
            j = json.loads(p.stdout)
            rows.append([model, batch, strategy, pct, j["budget_bytes"], j["peak_bytes"], j["store_all_peak_bytes"],
                         f"{j['overhead'] * 100:.2f}", f"{j['solve_seconds']:.4f}", f"{wall:.3f}", j["stages"]])
            print(f"{model} b{batch} {strategy:5} {pct}%: overhead {j['overhead'] * 100:6.2f}%  solve {j['solve_seconds']:.3f} s"
                  f"  (kiln schedule wall {wall:.2f} s)")
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["# kiln", version, "gpu descriptor", "NVIDIA H200 (gpus/h200.json, roofline costs)",
                "machine", "2-core x86-64 CPU"])
    w.writerow(["model", "batch", "strategy", "budget_pct", "budget_bytes", "predicted_peak_bytes",
                "store_all_peak_bytes", "predicted_overhead_pct", "solve_seconds", "command_seconds", "stages_or_note"])
    w.writerows(rows)
print("wrote", out)
