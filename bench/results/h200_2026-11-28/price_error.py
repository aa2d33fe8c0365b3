# The cost model's price of the Hopper tiles this folder timed, against their times: measured
# over priced, for the price in the sweeps (predicted_us: the model of commit 6c69706 that ran
# them) and for a manifest of today's model. Run here, after
#   kiln generate resnet50 --gpu h200 --dtype f16 --batch 256 --variants all -o /tmp/g256
#   python3 price_error.py /tmp/g256/manifest.json          (price_error.txt)
import csv, json, math, sys

est = {k["name"]: k["estimate_us"] for k in json.load(open(sys.argv[1]))["kernels"]}
old, new = [], []
for f in ["bench_r50_256_sweep.csv", "pp3_sweep.csv", "pp_kb_sweep.csv", "bench_ds_sweep.csv"]:
    for r in csv.DictReader(open(f)):
        if "hopper" in r["variant"] and r["variant"] in est:
            us = float(r["median_ms"]) * 1000
            old.append(us / float(r["predicted_us"]))
            new.append(us / est[r["variant"]])


def summary(q):
    rms = math.sqrt(sum(math.log(x) ** 2 for x in q) / len(q))
    return f"{len(q)} tiles: median {sorted(q)[len(q) // 2]:.2f}, {min(q):.2f}-{max(q):.2f}, rms log {rms:.3f}"


print("measured / priced, the price the sweeps recorded:", summary(old))
print("measured / priced, the price of", sys.argv[1] + ":", summary(new))
