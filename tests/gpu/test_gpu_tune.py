"""The gpu suite's part of kiln bench and kiln tune: on a machine with an NVIDIA GPU, a small
f16 conv and a linear layer are swept: every variant checked, then timed (median of at
least 20 CUDA-event runs) beside cuDNN, every timing column filled, one winner per shape;
kiln tune writes a timed database whose winners kiln generate then chooses ("measurement"
in the manifest), and kiln tune report compares the cost model with the measurements.
Exits 77 (skipped) where no GPU is present."""
import csv
import json
import os
import subprocess
import sys

import kiln_test as kt

probe = subprocess.run([kt.KILN, "gpu", "detect"], capture_output=True, text=True)
if probe.returncode != 0:
    print("no GPU here, skipped:", probe.stderr.strip())
    sys.exit(77)

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
LAYER = "conv:n=8,c=64,h=28,w=28,k=64,r=3,p=1"
out, err = kt.kiln("bench", LAYER, "--dtype", "f16", "--runs", "20", "-o", path("b"))
print(out.strip())
rows = list(csv.DictReader(open(path("b/sweep.csv"))))
kt.check(len(rows) >= 2 and all(r["check"] == "pass" for r in rows), f"checks: {[r['check'] for r in rows]}")
num = lambda v: float(v) if v else 0.0  # an empty column fails the check, not the script
for r in rows:
    kt.check(r["device"] == "gpu" and num(r["median_ms"]) > 0 and int(r["runs"]) == 20, f"timing: {r}")
    kt.check(num(r["cudnn_ms"]) > 0 and num(r["ratio_to_cudnn"]) > 0, f"cuDNN peer: {r}")
    kt.check(num(r["tflops"]) > 0 and num(r["gbps"]) > 0, f"throughput: {r}")
kt.check(sum(r["winner"] == "1" for r in rows) == 1, "one winner per shape")
winner = next(r for r in rows if r["winner"] == "1")
kt.check(min(num(r["median_ms"]) for r in rows) == num(winner["median_ms"]), "the winner is the fastest")

kt.kiln("tune", LAYER, "--dtype", "f16", "--runs", "20", "--db", path("db.json"), "-o", path("t"))
db = json.load(open(path("db.json")))
kt.check(db["device"] == "gpu" and all(m["median_ms"] > 0 for m in db["measurements"]), "timed database")
model = {"format": "kiln-model/1", "name": "one_conv", "input": {"name": "x", "shape": [8, 64, 28, 28]},
         "dtype": "f16", "layers": [{"name": "conv", "op": "conv2d", "out_channels": 64, "kernel": 3,
                                     "padding": 1, "bias": False}]}
json.dump(model, open(path("m.json"), "w"))
kt.kiln("gpu", "detect", "-o", path("gpu.json"))
kt.kiln("generate", path("m.json"), "--gpu", path("gpu.json"), "--tuning-db", path("db.json"), "-o", path("g"))
man = json.load(open(path("g/manifest.json")))
conv = next(k for k in man["kernels"] if k["chosen"] and "conv2d.forward" in k["nodes"][0])
best = min(db["measurements"], key=lambda m: m["median_ms"])
kt.check((conv["name"], conv["selected_by"]) == (best["variant"], "measurement"),
         f"generate chose {conv['name']} ({conv['selected_by']}), the database's winner is {best['variant']}")
out, _ = kt.kiln("tune", "report", path("db.json"))
print(out.strip())
kt.check("before median" in out, f"report: {out!r}")
out, _ = kt.kiln("bench", "linear:n=64,c=1024,k=1024", "--dtype", "f16", "--runs", "20", "-o", path("l"))
kt.check("0 failed" in out, f"linear bench: {out!r}")
kt.finish()
