"""kiln bench and kiln tune without a GPU: the emu sweep of a small layer checks every
variant (exact CSV header, empty timing columns, a report), --device gpu without a driver
fails cleanly, layer specs are strict, shards partition the work exactly and merge back,
merges refuse foreign databases and keep the faster median, a database naming a
non-default winner makes generate choose it ("measurement" in the manifest), and corrupt
databases are ignored with a warning."""
import csv
import io
import json
import os

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
os.environ["XDG_CACHE_HOME"] = path("cache")  # no default database of the user's leaks in
LAYER = "conv:n=1,c=8,h=8,w=8,k=8,r=3,p=1"
MODEL = {"format": "kiln-model/1", "name": "one_conv", "input": {"name": "x", "shape": [1, 8, 8, 8]},
         "layers": [{"name": "conv", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1,
                     "bias": False}]}
json.dump(MODEL, open(path("model.json"), "w"))
HEADER = ("descriptor,kiln_version,device,layers,op,shape,dtype,layout,variant,family,check,rel_err,"
          "median_ms,runs,tflops,gbps,cudnn_ms,ratio_to_cudnn,predicted_us,floor_us,model_choice,winner")

# --- bench on the emulator: every variant checked, nothing timed --------------------------
out, err = kt.kiln("bench", LAYER, "--gpu", "h100", "--device", "emu", "-o", path("b"))
print(out.strip())
kt.check("times nothing" in err and "timing columns are empty" in err, f"no emu note on stderr: {err!r}")
text = open(path("b/sweep.csv")).read()
kt.check(text.splitlines()[0] == HEADER, f"CSV header changed: {text.splitlines()[0]!r}")
rows = list(csv.DictReader(io.StringIO(text)))
kt.check(len(rows) >= 2, f"expected several variants of the conv, got {len(rows)}")
kt.check(all(r["check"] == "pass" for r in rows), f"variants failed: {[r['check'] for r in rows]}")
kt.check(all(r[c] == "" for r in rows for c in ("median_ms", "runs", "tflops", "gbps", "cudnn_ms",
                                               "ratio_to_cudnn", "winner")),
         "timing columns must be empty on emu")
kt.check(all(r["device"] == "emu" and r["layers"] == "conv" and r["op"] == "conv2d.forward" for r in rows),
         f"device/layers/op columns: {rows[0]}")
kt.check(sum(r["model_choice"] == "1" for r in rows) == 1, "exactly one cost-model choice")
kt.check(len({r["variant"] for r in rows}) == len(rows), "each variant once")
kt.check(f"{len(rows)} variants of 1 layer shape" in out, f"summary: {out!r}")
html = open(path("b/report.html")).read()
kt.check("<svg" in html and "no timing is meaningful" in html, "report lacks its plot or the emu note")
variants = sorted(r["variant"] for r in rows)
default = next(r["variant"] for r in rows if r["model_choice"] == "1")

# --- bad input: no driver, bad specs, bad shards --------------------------------------------
kt.expect_error(["bench", LAYER, "--gpu", "h100", "--device", "gpu", "-o", path("g")], "driver")
kt.check(not os.path.exists(path("g")), "a failed gpu bench left output behind")
kt.expect_error(["bench", "conv:n=1,c=8,h=8,w=8,k=8,r=3,zz=1", "--gpu", "h100", "--device", "emu",
                 "-o", path("x")], "unknown key \"zz\" for conv")
kt.expect_error(["bench", "conv:c=8,h=8,w=8,r=3", "--gpu", "h100", "--device", "emu", "-o", path("x")],
                "missing key \"k\"")
kt.expect_error(["tune", LAYER, "--gpu", "h100", "--device", "emu", "--db", path("x.json"),
                 "--shard", "2/2"], "--shard", "I must be in [0, N)")
kt.expect_error(["tune", LAYER, "--gpu", "h100", "--device", "emu"], "--db")

# --- tune on the emulator: checked variants recorded without timings; shards ---------------
def tune(*extra):
    return kt.kiln("tune", LAYER, "--gpu", "h100", "--device", "emu", "-o", path("t"), *extra)

tune("--db", path("full.json"))
full = json.load(open(path("full.json")))
kt.check(full["format"] == "kiln-tuning/1" and full["device"] == "emu", "emu database header")
kt.check(sorted(m["variant"] for m in full["measurements"]) == variants, "the database holds every variant")
kt.check(all(m["median_ms"] is None for m in full["measurements"]), "emu measurements must not be timed")
shard_sets = []
for i in range(3):
    tune("--shard", f"{i}/3", "--db", path(f"s{i}.json"))
    shard_sets.append([m["variant"] for m in json.load(open(path(f"s{i}.json")))["measurements"]])
flat = [v for s in shard_sets for v in s]
kt.check(sorted(flat) == variants, f"shards do not partition the work: {shard_sets} vs {variants}")
order = sorted(variants)  # one shape: items in variant-name order, item j to shard j mod 3
kt.check(all(shard_sets[i] == order[i::3] for i in range(3)), f"shards are not round-robin: {shard_sets}")
out, _ = kt.kiln("tune", "merge", path("s0.json"), path("s1.json"), path("s2.json"), "-o", path("merged.json"))
kt.check(json.load(open(path("merged.json"))) == full, "merged shards differ from the full sweep")
out, _ = kt.kiln("tune", "report", path("merged.json"))
kt.check("no timed measurements" in out, f"report of an emu database: {out!r}")

# --- merge: refusals and conflicts (gpu databases written directly: no GPU here) ------------
key = full["measurements"][0]["key"]
def gpu_db(identity, medians, version=None):
    db = dict(full, device="gpu", measurements=[])
    db["gpu"] = dict(full["gpu"], identity=identity)
    if version:
        db["kiln_version"] = version
    for v, ms in medians.items():
        m = dict(next(x for x in full["measurements"] if x["variant"] == v))
        m.update(median_ms=ms, runs=50, cudnn_ms=None)
        db["measurements"].append(m)
    return db

ident = full["gpu"]["identity"]
# A direct conv named after the weight layout the swept plan had converted for the model's
# implicit GEMM (conv2d_direct's "_wohwi_"): selection finds it with the weight converted for it
# (it once went unfound: kiln warned and the cost model decided).
other = next((v for v in variants if v != default and "_wohwi_" in v),
             next(v for v in variants if v != default))
kt.check(default.startswith("conv2d_implicit_gemm") and "_wohwi_" in other,
         f"the test wants the model's igemm and a direct winner read OHWI: {default}, {other}")
json.dump(gpu_db(ident, {default: 0.5, other: 0.3}), open(path("g1.json"), "w"))
json.dump(gpu_db(ident, {other: 0.2}), open(path("g2.json"), "w"))
json.dump(gpu_db("NVIDIA A100@deadbeef", {other: 0.1}), open(path("a100.json"), "w"))
json.dump(gpu_db(ident, {other: 0.1}, version="0.0.1"), open(path("old.json"), "w"))
out, _ = kt.kiln("tune", "merge", path("g1.json"), path("g2.json"), "-o", path("g.json"))
kt.check("1 conflict" in out, f"merge summary: {out!r}")
g = json.load(open(path("g.json")))
kt.check({m["variant"]: m["median_ms"] for m in g["measurements"]} == {default: 0.5, other: 0.2},
         f"merge must keep the faster median: {g['measurements']}")
kt.expect_error(["tune", "merge", path("g1.json"), path("a100.json"), "-o", path("no.json")],
                "a100.json", "GPU identity")
kt.expect_error(["tune", "merge", path("g1.json"), path("old.json"), "-o", path("no.json")], "kiln version")
kt.expect_error(["tune", "merge", path("g1.json"), path("full.json"), "-o", path("no.json")], "device")
kt.check(not os.path.exists(path("no.json")), "a refused merge wrote its output")
out, _ = kt.kiln("tune", "report", path("g.json"))
kt.check("before median" in out and "after worst" in out, f"report: {out!r}")

# --- selection uses the measured winner ------------------------------------------------------
def chosen(extra):
    kt.kiln("generate", path("model.json"), "--gpu", "h100", "-o", path("gen"), *extra)
    man = json.load(open(path("gen/manifest.json")))
    return next((k["name"], k["selected_by"]) for k in man["kernels"]
                if k["chosen"] and "conv2d.forward" in k["nodes"][0])

kt.check(chosen([]) == (default, "model"), f"without a database: {chosen([])}")
kt.check(chosen(["--tuning-db", path("g.json")]) == (other, "measurement"),
         "a measured non-default winner must be chosen and said so")
# The GPU's default database is read without the option, and --tuning-db none turns it off.
safe = "".join(c if c.isalnum() or c in "-." else "_" for c in ident)
default_db = path(f"cache/kiln/tuning/{safe}-kiln-{full['kiln_version']}.json")
os.makedirs(os.path.dirname(default_db), exist_ok=True)
open(default_db, "w").write(open(path("g.json")).read())
kt.check(chosen([]) == (other, "measurement"), "the default database must be used")
kt.check(chosen(["--tuning-db", "none"]) == (default, "model"), "--tuning-db none must turn it off")
os.remove(default_db)

# --- corrupt databases: a warning, the cost model, never a crash -----------------------------
good = open(path("g.json")).read()
bad = {"truncated": good[: len(good) // 2], "schema": json.dumps({"format": "kiln-tuning/1"}),
       "types": good.replace('"median_ms": 0.2', '"median_ms": "fast"'), "empty": ""}
for name, text in bad.items():
    open(path(f"bad_{name}.json"), "w").write(text)
    out, err = kt.kiln("generate", path("model.json"), "--gpu", "h100", "-o", path("gen"),
                       "--tuning-db", path(f"bad_{name}.json"))
    kt.check("warning" in err and f"bad_{name}.json" in err, f"{name}: no warning: {err!r}")
    man = json.load(open(path("gen/manifest.json")))
    k = next(k for k in man["kernels"] if k["chosen"] and "conv2d.forward" in k["nodes"][0])
    kt.check((k["name"], k["selected_by"]) == (default, "model"), f"{name}: {k['name']} {k['selected_by']}")
kt.expect_error(["generate", path("model.json"), "--gpu", "h100", "-o", path("gen"), "--tuning-db",
                 path("absent.json")], "absent.json", "no such tuning database")
# A winner that no longer exists: ignored with a warning.
stale = json.loads(good)
for m in stale["measurements"]:
    m["variant"] = m["variant"] + "_gone"
json.dump(stale, open(path("stale.json"), "w"))
out, err = kt.kiln("generate", path("model.json"), "--gpu", "h100", "-o", path("gen"), "--tuning-db", path("stale.json"))
kt.check("_gone" in err and "ignored" in err, f"stale winner: no warning: {err!r}")
# --- a Hopper layer (its kernels read TMA tensor maps bound in the plan) ---------------------
# The default sweep times the kernel generate chose (found on an H200: it had swept a variant
# the maps made it pick and not emit); every Hopper variant is checked with its own maps; the
# maps are no part of a layer's key (a tuning database must match what selection sees).
# Batch 8 at 32x32: the 3x3 conv on the Hopper family (smaller, its split-K mma.sync variant is
# priced faster).
HOP = {"format": "kiln-model/1", "name": "hop", "input": {"name": "x", "shape": [8, 64, 32, 32]},
       "dtype": "f16", "layers": [{"name": "c1", "op": "conv2d", "out_channels": 64, "kernel": 1},
                                  {"name": "c2", "op": "conv2d", "out_channels": 128, "kernel": 3,
                                   "padding": 1}]}
json.dump(HOP, open(path("hop.json"), "w"))
kt.kiln("bench", path("hop.json"), "--gpu", "h100", "--device", "emu", "--variants", "default", "-o", path("hd"))
rows = list(csv.DictReader(open(path("hd/sweep.csv"))))
man = json.load(open(path("hd/generated/manifest.json")))
chosen = {k["name"] for k in man["kernels"] if k["chosen"]}
kt.check(rows and all(r["check"] == "pass" and r["variant"] in chosen for r in rows),
         f"default sweep: {[(r['variant'], r['check']) for r in rows]} vs chosen {sorted(chosen)}")
kt.check(any(r["family"] == "conv2d_hopper_wgmma" for r in rows), f"no Hopper kernel chosen: {rows}")
kt.check(not any("map" in r["shape"] for r in rows), f"tensor maps in a key: {[r['shape'] for r in rows]}")
kt.kiln("bench", path("hop.json"), "--gpu", "h100", "--device", "emu", "-o", path("ha"), "--shard", "0/6")
rows = list(csv.DictReader(open(path("ha/sweep.csv"))))
hop = [r for r in rows if r["family"] == "conv2d_hopper_wgmma"]
kt.check(len(hop) >= 2 and all(r["check"] == "pass" for r in rows),
         f"all variants: {[(r['variant'], r['check']) for r in rows]}")

# A layer the cost model splits along K completes the split inside its kernel: one variant,
# swept (the two-step form, a partial GEMM and a sum, was refused with a hint to raise --batch).
kt.kiln("bench", "conv:n=1,c=256,h=14,w=14,k=256,r=3,p=1", "--dtype", "f16", "--gpu", "h200", "--device", "emu",
        "--variants", "default", "-o", path("split"))
rows = list(csv.DictReader(open(path("split/sweep.csv"))))
man = json.load(open(path("split/generated/manifest.json")))
kt.check([s["form"] for s in man["split_k"]] == ["in_kernel"], f"split in the kernel: {man['split_k']}")
kt.check(len(rows) == 1 and rows[0]["op"] == "conv2d.forward_split" and "reduce" in rows[0]["variant"]
         and rows[0]["check"] == "pass", f"the in-kernel split swept: {rows}")
# --- --layers: only the shapes of the named layers; an unknown name lists the layers ----------
RES = ["bench", "resnet18", "--image", "32x32", "--batch", "1", "--gpu", "h100", "--device", "emu",
       "--variants", "default"]
kt.kiln(*RES, "--layers", "layer2.0.conv2,fc", "-o", path("lay"))
rows = list(csv.DictReader(open(path("lay/sweep.csv"))))
names = [set(n for layer in r["layers"].split(";") for n in layer.split("+")) for r in rows]
kt.check(len(rows) == 2 and any("layer2.0.conv2" in n for n in names) and any("fc" in n for n in names),
         f"--layers layer2.0.conv2,fc: {[r['layers'] for r in rows]}")
err = kt.expect_error([*RES, "--layers", "layer9.conv1", "-o", path("lay2")], "--layers",
                      "no swept layer has a node named \"layer9.conv1\"", "layer1.0.conv1")
# --- --match: of every variant, those whose names contain a text, beside the cost model's pick --
MATCH = ["bench", path("hop.json"), "--gpu", "h100", "--device", "emu", "--variants", "all", "--layers", "c2"]
kt.kiln(*MATCH, "--match", "_pp_", "-o", path("match"))
rows = list(csv.DictReader(open(path("match/sweep.csv"))))
picks = [r for r in rows if r["model_choice"] == "1"]
pp = [r for r in rows if "_pp_" in r["variant"]]
kt.check(len(picks) == 1 and "_pp_" not in picks[0]["variant"] and len(pp) >= 2
         and len(rows) == len(pp) + 1 and all(r["check"] == "pass" for r in rows),
         f"--match _pp_: {[(r['variant'], r['model_choice'], r['check']) for r in rows]}")
# What it compiled: the plan's kernels and the swept variants, not every variant of every layer.
man = json.load(open(path("match/generated/manifest.json")))
swept = {r["variant"] for r in rows}
extra = [k["name"] for k in man["kernels"] if not k.get("chosen", True) and k["name"] not in swept]
kt.check(not extra and swept <= {k["name"] for k in man["kernels"]},
         f"--match _pp_: generated {len(man['kernels'])} kernels, {len(extra)} neither chosen nor swept")
kt.expect_error([*MATCH, "--match", "_nosuchtile_", "-o", path("match2")], "--match",
                "no variant of the swept layers but the cost model's picks has \"_nosuchtile_\"")
kt.expect_error([*RES, "--match", "_pp_", "-o", path("match3")], "--match", "it needs --variants all")
kt.finish()
