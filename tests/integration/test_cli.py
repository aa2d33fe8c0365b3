"""The kiln CLI as a user meets it: help, exit codes, error messages naming the file and
place, and no output file left behind on failure."""
import json
import os

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda name: os.path.join(d, name)

# Help everywhere, usage errors exit 2.
out, _ = kt.kiln("--help")
kt.check("inspect" in out and "run" in out, "top-level help lists the commands")
for cmd in (["inspect"], ["run"], ["fold"], ["gpu"], ["gpu", "detect"], ["models"]):
    out, _ = kt.kiln(*cmd, "--help")
    kt.check("Usage" in out, f"{cmd} --help")
kt.kiln("frobnicate", expect=2)
kt.kiln("inspect", expect=2)  # MODEL missing
kt.kiln("--version")

# inspect: table and JSON with the contract keys.
out, _ = kt.kiln("inspect", "resnet50")
kt.check("25,557,032 parameters" in out, "inspect totals for resnet50")
out, _ = kt.kiln("inspect", "resnet18", "--json", "--batch", "4", "--image", "112x96")
j = json.loads(out)
kt.check(set(["layers", "total_params", "total_macs"]) <= set(j), "inspect --json keys")
kt.check(j["layers"][0]["output_shape"] == [4, 64, 56, 48], f"overrides: {j['layers'][0]['output_shape']}")
kt.check(set(j["layers"][0]) >= {"name", "op", "output_shape", "params", "macs", "activation_bytes"},
         "layer keys")

# Invalid models: exit 2, file and place named.
def bad_model(name, doc, *fragments):
    p = path(name)
    with open(p, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    kt.expect_error(["inspect", p], p, *fragments)

base = {"format": "kiln-model/1", "name": "t", "input": {"shape": [1, 3, 8, 8]}}
bad_model("malformed.json", '{"format": "kiln-model/1",\n "name": ', "line 2", "malformed JSON")
bad_model("unknown_op.json", dict(base, layers=[{"name": "a", "op": "swish"}]), "/layers/0/op", "unknown op")
bad_model("cycle.json", dict(base, layers=[{"name": "a", "op": "relu", "inputs": ["b"]},
                                           {"name": "b", "op": "relu", "inputs": ["a"]}]), "cycle")
bad_model("groups.json", dict(base, layers=[{"name": "g", "op": "conv2d", "out_channels": 4, "kernel": 1,
                                            "groups": 2}]), 'layer "g"', "not divisible by groups")
kt.expect_error(["inspect", path("missing.json")], "missing.json")
kt.expect_error(["inspect", "nosuchmodel"], "no shipped model has that name")
kt.expect_error(["inspect", "resnet18", "--image", "12x"], "--image")

# gpu list / detect (no driver here: a clear message, exit 2).
out, _ = kt.kiln("gpu", "list")
for g in ("v100", "t4", "rtx2080ti", "a100", "h100", "h200"):
    kt.check(g in out, f"gpu list shows {g}")
p = os.popen(f"{kt.KILN} gpu detect -o {path('g.json')} 2>&1; echo rc=$?").read()
if "rc=0" in p:
    kt.check(json.load(open(path("g.json")))["format"] == "kiln-gpu/1", "detect writes a descriptor")
else:
    kt.check("rc=2" in p and ("driver" in p or "no GPU" in p), f"detect without a GPU: {p}")
    kt.check(not os.path.exists(path("g.json")), "no descriptor written on failure")

# run: inputs checked, nothing half-written.
x = np.random.RandomState(0).randn(2, 3, 50, 50).astype(np.float32)
np.save(path("x.npy"), x)
out, _ = kt.kiln("run", "noscope_coral", "--input", path("x.npy"), "--output", path("y.npy"))
kt.check(np.load(path("y.npy")).shape == (2, 2), "coral output shape follows the input batch")
# -o as every other command spells it; its help says when it is required.
kt.kiln("run", "noscope_coral", "--input", path("x.npy"), "-o", path("y_o.npy"))
kt.check(np.array_equal(np.load(path("y_o.npy")), np.load(path("y.npy"))), "run -o writes the output")
kt.expect_error(["run", "noscope_coral", "--input", path("x.npy")], "-o/--output", "is required for inference")
out, _ = kt.kiln("run", "--help")
kt.check("-o,--output" in out and "required for inference" in out, f"run --help shows -o and when: {out}")
with open(path("x.npy"), "rb") as f:
    data = f.read()
with open(path("trunc.npy"), "wb") as f:
    f.write(data[:-7])
kt.expect_error(["run", "noscope_coral", "--input", path("trunc.npy"), "--output", path("z.npy")],
                "trunc.npy")
kt.check(not os.path.exists(path("z.npy")), "no output after a bad input")
np.save(path("x4.npy"), np.zeros((2, 4, 50, 50), np.float32))
kt.expect_error(["run", "noscope_coral", "--input", path("x4.npy"), "--output", path("z.npy")],
                "x4.npy", "the model takes")

# Weights: missing, extra and mis-shaped tensors are named.
w = {"conv1.weight": np.zeros((16, 3, 3, 3)), "conv1.bias": np.zeros(16),
     "conv2.weight": np.zeros((16, 16, 3, 3)), "conv2.bias": np.zeros(16),
     "fc1.weight": np.zeros((128, 10000)), "fc1.bias": np.zeros(128),
     "fc2.weight": np.zeros((2, 128)), "fc2.bias": np.zeros(2)}
kt.write_safetensors(path("w.safetensors"), w)
kt.kiln("run", "noscope_coral", "--weights", path("w.safetensors"), "--input", path("x.npy"),
        "--output", path("y0.npy"))
kt.check(np.all(np.load(path("y0.npy")) == 0), "zero weights give zero logits")
kt.write_safetensors(path("w_missing.safetensors"), {k: v for k, v in w.items() if k != "fc2.bias"})
kt.expect_error(["run", "noscope_coral", "--weights", path("w_missing.safetensors"), "--input", path("x.npy"),
                 "--output", path("z.npy")], "fc2.bias", "missing")
kt.write_safetensors(path("w_extra.safetensors"), dict(w, **{"fc3.weight": np.zeros(2)}))
kt.expect_error(["run", "noscope_coral", "--weights", path("w_extra.safetensors"), "--input", path("x.npy"),
                 "--output", path("z.npy")], "fc3.weight", "unexpected")
kt.write_safetensors(path("w_shape.safetensors"), dict(w, **{"conv2.weight": np.zeros((16, 16, 3, 2))}))
kt.expect_error(["run", "noscope_coral", "--weights", path("w_shape.safetensors"), "--input", path("x.npy"),
                 "--output", path("z.npy")], "conv2.weight", "[16, 16, 3, 3]")
kt.check(not os.path.exists(path("z.npy")), "no output after bad weights")

# Training: targets checked; gradients for every parameter.
np.save(path("t.npy"), np.array([0, 1], np.int64))
kt.kiln("run", "noscope_coral", "--input", path("x.npy"), "--train", "--target", path("t.npy"),
        "--grads", path("g.safetensors"))
g = kt.read_safetensors(path("g.safetensors"))
kt.check(sorted(g) == sorted(w), f"gradient names: {sorted(g)}")
np.save(path("t_bad.npy"), np.array([0, 5], np.int64))
kt.expect_error(["run", "noscope_coral", "--input", path("x.npy"), "--train", "--target", path("t_bad.npy"),
                 "--grads", path("g2.safetensors")], "target")
kt.check(not os.path.exists(path("g2.safetensors")), "no gradients after a bad target")
kt.expect_error(["run", "noscope_coral", "--input", path("x.npy"), "--train"], "--target")

# fold: N images in, N rows out.
kt.kiln("fold", "noscope_coral", "--factor", "4", "-o", path("folded.json"))
np.save(path("x8.npy"), np.random.RandomState(1).randn(8, 3, 50, 50).astype(np.float32))
kt.kiln("run", path("folded.json"), "--input", path("x8.npy"), "--output", path("yf.npy"))
yf = np.load(path("yf.npy"))
kt.check(yf.shape == (8, 2), f"folded output {yf.shape}")
# A folded sample stacks images 4..7 (factor 4): changing image 5 changes rows 4..7 only.
x8 = np.load(path("x8.npy"))
x8[5] += 1
np.save(path("x8b.npy"), x8)
kt.kiln("run", path("folded.json"), "--input", path("x8b.npy"), "--output", path("yfb.npy"))
changed = np.any(np.load(path("yfb.npy")) != yf, axis=1)
kt.check(changed.tolist() == [i // 4 == 1 for i in range(8)], f"rows changed: {changed.tolist()}")
kt.expect_error(["run", path("folded.json"), "--input", path("x.npy"), "--output", path("z.npy"), "--batch", "3"],
                "not a multiple of the fold factor")
kt.expect_error(["fold", "noscope_coral", "--factor", "1", "-o", path("f1.json")], "--factor")
kt.check(not os.path.exists(path("f1.json")), "no folded model after an error")

# kiln build: a standalone program that explains itself, and fails clearly without a GPU.
kt.kiln("build", "noscope_coral", "--gpu", "h200", "-o", path("coral_bin"))
import subprocess
h = subprocess.run([path("coral_bin"), "--help"], capture_output=True, text=True)
kt.check(h.returncode == 0 and "noscope_coral" in h.stdout and "--bench" in h.stdout, f"program --help: {h.stdout}")
libs = subprocess.run(["ldd", path("coral_bin")], capture_output=True, text=True).stdout
kt.check("libcudart" not in libs and "libcudnn" not in libs and "libnvrtc" not in libs and "libfmt" not in libs,
         f"the program links only the runtime: {libs}")
np.save(path("x1.npy"), np.zeros((1, 3, 50, 50), np.float32))
r = subprocess.run([path("coral_bin"), "--input", path("x1.npy"), "--output", path("yb.npy")], capture_output=True, text=True)
if "driver" in r.stderr or "no GPU" in r.stderr:
    kt.check(r.returncode != 0 and not os.path.exists(path("yb.npy")), f"no GPU: {r.returncode} {r.stderr}")
else:
    kt.check(r.returncode == 0 and np.load(path("yb.npy")).shape == (1, 2), f"on a GPU: {r.stderr}")
kt.expect_error(["build", "noscope_coral", "--gpu", "h200", "-o", path("b2"), "--budget", "50%"], "--budget")

# kiln schedule: JSON keys, errors.
out, _ = kt.kiln("schedule", "resnet18", "--image", "64", "--budget", "80%", "--strategy", "rotor", "--json")
j = json.loads(out)
for key in ("strategy", "budget_bytes", "peak_bytes", "time", "store_all_time", "arena_bytes", "ops"):
    kt.check(key in j, f"schedule --json has {key}")
kt.check(j["peak_bytes"] <= j["budget_bytes"], "schedule within its budget")
kt.check(all("op" in o and ("stage" in o or "tensor" in o) for o in j["ops"]), "ops carry stage or tensor")
err = kt.expect_error(["schedule", "resnet18", "--image", "64", "--budget", "1%", "--strategy", "rotor"],
                      "smallest feasible budget")
kt.expect_error(["schedule", "resnet18", "--budget", "lots"], "--budget")
chain = {"format": "kiln-chain/1", "input_bytes": 10, "stages": [
    {"name": "s%d" % i, "forward_time": 1 + i, "backward_time": 2, "output_bytes": 10, "saved_bytes": 30}
    for i in range(5)]}
with open(path("chain.json"), "w") as f:
    json.dump(chain, f)
for strategy, budget in (("store-all", 170), ("sqrt", 100), ("rotor", 100), ("dtr", 100), ("exhaustive", 100)):
    out, _ = kt.kiln("schedule", "--chain", path("chain.json"), "--budget", budget, "--strategy", strategy, "--json")
    kt.check(json.loads(out)["peak_bytes"] <= budget, f"chain {strategy}")
chain["stages"][2]["saved_bytes"] = 5
with open(path("bad_chain.json"), "w") as f:
    json.dump(chain, f)
kt.expect_error(["schedule", "--chain", path("bad_chain.json"), "--budget", "100"], "bad_chain.json", "saved_bytes")
kt.kiln("schedule", "--chain", path("chain.json"), "--sweep", path("sweep.csv"))
rows = open(path("sweep.csv")).read().splitlines()
kt.check(rows[0].startswith("strategy,budget_fraction") and len(rows) > 50, f"sweep CSV: {rows[:2]}")
kt.check(open(path("sweep.svg")).read().startswith("<svg"), "sweep plot")

# --kernels cudnn: the benchmarks' peer plan, every step cuDNN computes a cuDNN call.
kt.kiln("generate", "resnet50", "--gpu", "h200", "--kernels", "cudnn", "-o", path("r50c"))
steps = [s for ph in json.load(open(path("r50c/plan.json")))["phases"].values() for s in ph]
convs = [s for s in steps if s.get("fn") == "conv2d.forward"]
kt.check(len(convs) == 53 and all(s["kind"] == "library" for s in convs), "cuDNN-only plan: convolutions through cuDNN")
kt.check(len(json.load(open(path("r50c/manifest.json")))["library_steps"]) >= 53, "library steps listed")
# cuDNN's legacy calls compute only when a call's images share one format: the NCHW input of
# the NHWC plan's first conv is converted first (the H200 run found "no convolution
# algorithm" for conv1 reading NCHW and writing NHWC).
plan = json.load(open(path("r50c/plan.json")))
fmt = {b["name"]: b.get("layout", "nchw") for b in plan["buffers"] if len(b["shape"]) == 4}
mixed = [s["node"] for s in steps if s.get("kind") == "library" and s["fn"] != "convert" and
         len({fmt[b] for b in s["args"].values() if b in fmt}) > 1]
kt.check(not mixed, f"cuDNN steps whose images differ in layout: {mixed}")
kt.check(convs[0]["args"]["x"] != "in:image", "conv1 reads a converted copy of the input")
kt.expect_error(["generate", "resnet18", "--gpu", "h200", "--kernels", "tensorrt", "-o", path("x")], "--kernels")

# kiln check on a device that is absent says so once.
kt.kiln("generate", "noscope_coral", "--gpu", "h200", "-o", path("gen"))
r = subprocess.run([kt.KILN, "check", path("gen"), "--device", "gpu"], capture_output=True, text=True)
if "driver" in r.stderr or "no GPU" in r.stderr:
    kt.check(r.returncode == 2, f"check --device gpu without a GPU exits 2: {r.returncode} {r.stderr}")
    # kiln run on the gpu makes its kernels for the live GPU unless told (--gpu auto): without
    # one it says how to name a descriptor instead.
    np.save(path("x1.npy"), np.zeros((1, 3, 50, 50), np.float32) + 0.5)
    kt.expect_error(["run", "noscope_coral", "--device", "gpu", "--input", path("x1.npy"),
                     "--bench", "1"], "driver", "--gpu")

kt.finish()
