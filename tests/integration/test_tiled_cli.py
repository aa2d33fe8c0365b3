"""The tiled strategy (segmented fused tiling) through the CLI on the CPU: kiln schedule
--strategy tiled (JSON, text, forced tiles, errors) and kiln run --schedule tiled, equal to
the untiled network in inference and training with its measured peak within the budget."""
import json
import os
import re

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda name: os.path.join(d, name)
model = kt.two_blocks(path("tb.json"))
segment = ["c00", "r00", "c01", "r01", "p0", "c10", "r10", "c11", "r11", "p1"]

# kiln schedule: the fewest tiles within the budget, in training and inference.
for train in (True, False):
    out, _ = kt.kiln("schedule", model, "--strategy", "tiled", "--budget", "30%", "--json", *(["--train"] if train else []))
    j = json.loads(out)
    what = "training" if train else "inference"
    for key in ("tiles", "tile_rows", "tile_cols", "segment", "recompute_factor", "plans_tried", "plan_peak_bytes"):
        kt.check(key in j, f"{what}: schedule --json has {key}")
    kt.check(j["train"] == train, f"{what}: train {j['train']}")
    kt.check(j["plan_peak_bytes"] <= j["budget_bytes"], f"{what}: plan peak {j['plan_peak_bytes']} > {j['budget_bytes']}")
    kt.check(abs(j["budget_bytes"] - 0.3 * j["store_all_peak_bytes"]) <= 1, f"{what}: 30% of the untiled peak")
    kt.check(j["tile_rows"] * j["tile_cols"] > 1 and j["tiles"] == f"{j['tile_rows']}x{j['tile_cols']}",
             f"{what}: tiles {j['tiles']}")
    kt.check(j["segment"] == segment[:len(j["segment"])], f"{what}: segment {j['segment']}")
    kt.check(j["segment_candidates"] == 5 and 1 <= j["segments_tried"] <= 5,
             f"{what}: segment ends {j.get('segments_tried')} of {j.get('segment_candidates')}")
    kt.check(j["recompute_factor"] > 1 and j["overhead"] > 0, f"{what}: recompute {j['recompute_factor']}")
    kt.check(not train or j["rest"] in ("store-all", "rotor"), f"{what}: rest {j.get('rest')}")
out, _ = kt.kiln("schedule", model, "--strategy", "tiled", "--budget", "30%", "--train")
kt.check(re.search(r"tiles of the \d+x\d+ output of c00\.\.\w+ \(\d+ layers; the fastest of \d segment ends searched, "
                   r"of 5 ranked\)", out) is not None and "recompute overhead" in out, out)

# Forced tiles: planned as given; over the budget, a clear error.
j = json.loads(kt.kiln("schedule", model, "--strategy", "tiled", "--tiles", "3x2", "--json", "--train")[0])
kt.check(j["tiles"] == "3x2" and j["budget_bytes"] == -1, f"forced tiles: {j['tiles']}")
kt.expect_error(["schedule", model, "--strategy", "tiled", "--tiles", "3x2", "--budget", "1%"], "--tiles",
                "3x2 tiles need", "the budget is")
kt.expect_error(["schedule", model, "--strategy", "tiled", "--budget", "1%", "--train"], "--budget",
                "smallest feasible budget")
kt.expect_error(["schedule", model, "--strategy", "tiled", "--tiles", "0x2"], "--tiles", "0x2")
kt.expect_error(["schedule", model, "--strategy", "tiled"], "--budget")
kt.expect_error(["schedule", model, "--strategy", "rotor", "--tiles", "2x2"], "--tiles")
with open(path("bn_first.json"), "w") as f:
    json.dump({"format": "kiln-model/1", "name": "bn_first", "input": {"shape": [2, 3, 16, 16]},
               "layers": [{"name": "bn", "op": "batchnorm"}, {"name": "gap", "op": "global_avgpool"},
                          {"name": "flatten", "op": "flatten"}, {"name": "fc", "op": "linear", "out_features": 2}]}, f)
kt.expect_error(["schedule", path("bn_first.json"), "--strategy", "tiled", "--budget", "50%", "--train"],
                "starts with no layer that can run tile by tile")

# kiln run --schedule tiled: the untiled network's output and gradients, the peak within budget.
UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def peak_and_budget(out):
    m = re.search(r"peak live activations ([\d.]+) (\w+).*within ([\d.]+) (\w+)", out)
    kt.check(m is not None, f"run prints its measured peak and budget: {out}")
    return (float(m[1]) * UNITS[m[2]], float(m[3]) * UNITS[m[4]]) if m else (0, 0)


np.save(path("x.npy"), np.random.RandomState(0).standard_normal((2, 3, 96, 96)).astype(np.float32))
np.save(path("t.npy"), np.array([1, 3], np.int64))
kt.kiln("run", model, "--input", path("x.npy"), "--output", path("y.npy"))
out, _ = kt.kiln("run", model, "--input", path("x.npy"), "--output", path("yt.npy"), "--schedule", "tiled",
                 "--budget", "30%")
peak, budget = peak_and_budget(out)
kt.check(0 < peak <= budget, f"inference peak {peak} within {budget}")
kt.check(kt.rel(np.load(path("yt.npy")), np.load(path("y.npy"))) < 1e-6, "tiled inference equals untiled")
out, _ = kt.kiln("run", model, "--input", path("x.npy"), "--output", path("y33.npy"), "--schedule", "tiled", "--tiles",
                 "3x3", "--bench", "3")
kt.check(re.search(r"bench: median [\d.]+ ms over 3 runs", out) is not None, f"--bench: {out}")
kt.check(kt.rel(np.load(path("y33.npy")), np.load(path("y.npy"))) < 1e-6, "forced 3x3 equals untiled")

kt.kiln("run", model, "--input", path("x.npy"), "--train", "--target", path("t.npy"), "--grads", path("g.safetensors"))
out, _ = kt.kiln("run", model, "--input", path("x.npy"), "--train", "--target", path("t.npy"), "--grads",
                 path("gt.safetensors"), "--schedule", "tiled", "--budget", "30%")
peak, budget = peak_and_budget(out)
kt.check(0 < peak <= budget, f"training peak {peak} within {budget}")
g, gt = kt.read_safetensors(path("g.safetensors")), kt.read_safetensors(path("gt.safetensors"))
kt.check(sorted(g) == sorted(gt), f"gradient names {sorted(gt)}")
worst = max(kt.rel(gt[k], g[k]) for k in g)
print(f"tiled training step: worst gradient relative difference to untiled {worst:.2e}")
kt.check(worst < 1e-5, f"tiled gradients differ: {worst}")
kt.expect_error(["run", model, "--input", path("x.npy"), "--output", path("z.npy"), "--tiles", "2x2"],
                "--tiles", "forces the tiling")
kt.check(not os.path.exists(path("z.npy")), "no output after an error")
kt.expect_error(["build", model, "--gpu", "h200", "--tiles", "2x2", "-o", path("b")], "--tiles")
kt.expect_error(["build", model, "--gpu", "h200", "--budget", "50%", "-o", path("b")], "--budget", "--train")
kt.kiln("build", model, "--gpu", "h200", "--schedule", "tiled", "--tiles", "2x2", "-o", path("tiled_bin"))
kt.check(os.access(path("tiled_bin"), os.X_OK), "kiln build --schedule tiled writes a program")
kt.finish()
