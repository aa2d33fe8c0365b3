"""The activation-sparse family through the CLI: what is planned where and why (hints, --sparse,
--profile), that every shipped model plans and selects kernels with every conv forced sparse
on every shipped GPU, --variants all, kiln build, and the errors for bad input."""
import json
import os

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)


def manifest(dir_):
    return json.load(open(os.path.join(dir_, "manifest.json")))


def decisions(dir_):
    return {(c["layer"], c["fn"]): c for c in manifest(dir_)["sparse"]["convs"]}


# A model whose second conv reads a relu's output, with the hints of the model format.
def model(hints, name="hinted"):
    m = {"format": "kiln-model/1", "name": name, "input": {"shape": [2, 16, 24, 24]},
         "layers": [{"name": "c0", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1},
                    {"name": "r0", "op": "relu"},
                    {"name": "c1", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1, "hints": hints},
                    {"name": "r1", "op": "relu"},
                    {"name": "gp", "op": "global_avgpool"}, {"name": "f", "op": "flatten"},
                    {"name": "fc", "op": "linear", "out_features": 10}]}
    p = path(name + ".json")
    json.dump(m, open(p, "w"))
    return p


# Where densities are known, the cost model decides; the manifest says what and why.
kt.kiln("generate", model({"activation_density": 0.2}), "--gpu", "t4", "-o", path("auto"))
c1 = decisions(path("auto"))[("c1", "conv2d.forward")]
c0 = decisions(path("auto"))[("c0", "conv2d.forward")]
print(f"c1 at density 0.2 on the T4: {c1['path']}: {c1['reason']}")
kt.check(c1["path"] == "dispatch" and c1["density_source"] == "hint" and c1["density"] == 0.2, f"c1: {c1}")
for key in ("threshold", "threshold_nnz", "dense_us", "sparse_us", "compaction_us", "compaction"):
    kt.check(key in c1, f"a dispatch records {key}: {c1}")
kt.check(c1["threshold_nnz"] == int(c1["threshold"] * 2 * 64 * 24 * 24), f"threshold_nnz: {c1}")
kt.check(c0["path"] == "dense" and "no density known" in c0["reason"], f"c0 has no density: {c0}")
# The same layer at full density: the sparse kernel is no win.
kt.kiln("generate", model({"activation_density": 1.0}, "full"), "--gpu", "t4", "-o", path("full"))
c1 = decisions(path("full"))[("c1", "conv2d.forward")]
kt.check(c1["path"] == "dense" and "predicted win too small" in c1["reason"], f"c1 at density 1: {c1}")
# hints.variant forces the family either way; --sparse off removes it.
kt.kiln("generate", model({"variant": "sparse"}, "forced"), "--gpu", "h200", "-o", path("forced"))
c1 = decisions(path("forced"))[("c1", "conv2d.forward")]
kt.check(c1["path"] == "sparse" and c1["reason"] == 'hints.variant "sparse"', f"forced: {c1}")
fns = [s["fn"] for s in json.load(open(path("forced/plan.json")))["phases"]["forward"] if s["kind"] != "free"]
kt.check("conv2d.forward_sparse" in fns and fns.count("conv2d.forward") == 1, f"forced plan: {fns}")
kt.kiln("generate", model({"variant": "dense", "activation_density": 0.1}, "kept"), "--gpu", "t4", "-o", path("kept"))
kt.check(decisions(path("kept"))[("c1", "conv2d.forward")]["path"] == "dense", "hints.variant dense keeps it dense")
# hints.sparse_threshold plans a dispatch at that threshold whatever the prediction.
kt.kiln("generate", model({"sparse_threshold": 0.25}, "threshold"), "--gpu", "h200", "-o", path("threshold"))
c1 = decisions(path("threshold"))[("c1", "conv2d.forward")]
kt.check(c1["path"] == "dispatch" and c1["threshold"] == 0.25 and c1["threshold_nnz"] == int(0.25 * 2 * 64 * 24 * 24)
         and c1["reason"].startswith("hints.sparse_threshold"), f"threshold hint: {c1}")
kt.kiln("generate", path("forced.json"), "--gpu", "t4", "--sparse", "off", "-o", path("off"))
kt.check(all(c["path"] == "dense" and c["reason"] == "--sparse off" for c in decisions(path("off")).values()),
         "--sparse off plans nothing sparse, hints included")
# --variants all emits the alternatives of both paths.
kt.kiln("generate", path("hinted.json"), "--gpu", "t4", "--variants", "all", "-o", path("all"))
fams = {k["family"] for k in manifest(path("all"))["kernels"] if not k["chosen"]}
kt.check({"conv2d_sparse", "conv2d_direct"} <= fams, f"alternatives of both paths: {fams}")
# A standalone program with a dispatch in it.
kt.kiln("build", path("hinted.json"), "--gpu", "t4", "-o", path("hinted_bin"))
kt.check(os.access(path("hinted_bin"), os.X_OK), "kiln build made the program")

# Every shipped model with every conv that reads a relu forced sparse, on every shipped GPU:
# planning and kernel choice succeed (the templates fit each GPU's shared memory).
for gpu in ("t4", "rtx2080ti", "v100", "a100", "h100", "h200"):
    for m in ("resnet18", "resnet50", "densenet121", "vgg16", "unet", "noscope_coral"):
        out, _ = kt.kiln("generate", m, "--gpu", gpu, "--image", "64x64", "--batch", "2", "--sparse", "force",
                         "-o", path(f"{m}_{gpu}"))
        n = sum(c["path"] == "sparse" for c in decisions(path(f"{m}_{gpu}")).values())
        kt.check(n > 0, f"{m} on {gpu}: no conv forced sparse")
    kt.kiln("generate", "resnet18", "--gpu", gpu, "--image", "32x32", "--batch", "2", "--sparse", "force",
            "--train", "-o", path(f"train_{gpu}"))
    fns = [s.get("fn") for s in json.load(open(path(f"train_{gpu}/plan.json")))["phases"]["backward"]]
    kt.check("conv2d.backward_weight_sparse" in fns, f"resnet18 training on {gpu}: no sparse weight gradient")

# Bad input.
kt.expect_error(["generate", "resnet18", "--gpu", "h200", "--sparse", "sometimes", "-o", path("x")], "--sparse")
kt.expect_error(["generate", "resnet18", "--gpu", "h200", "--profile", path("missing.json"), "-o", path("x")],
                "missing.json")
np.save(path("x.npy"), np.zeros((2, 16, 24, 24), np.float32))
kt.expect_error(["run", path("hinted.json"), "--device", "cpu", "--sparse", "force", "--input", path("x.npy"),
                 "--output", path("y.npy")], "--sparse", "the cpu backend runs the reference")
bad = json.load(open(path("hinted.json")))
bad["layers"][1]["hints"] = {"activation_density": 0.3}  # on the relu
json.dump(bad, open(path("bad.json"), "w"))
kt.expect_error(["generate", path("bad.json"), "--gpu", "h200", "-o", path("x")], "/layers/1/hints",
                "hints apply to conv2d layers")
bad["layers"][1]["hints"] = {}
bad["layers"][2]["hints"] = {"variant": "fast"}
json.dump(bad, open(path("bad.json"), "w"))
kt.expect_error(["generate", path("bad.json"), "--gpu", "h200", "-o", path("x")], "/layers/2/hints/variant",
                "unknown variant \"fast\"")
bad["layers"][2]["hints"] = {"variant": "sparse", "sparse_threshold": 0.5}
json.dump(bad, open(path("bad.json"), "w"))
kt.expect_error(["generate", path("bad.json"), "--gpu", "h200", "-o", path("x")], "/layers/2/hints/sparse_threshold",
                "plans no dispatch")
bad["layers"][2]["hints"] = {"sparse_threshold": 1.5}
json.dump(bad, open(path("bad.json"), "w"))
kt.expect_error(["generate", path("bad.json"), "--gpu", "h200", "-o", path("x")], "/layers/2/hints/sparse_threshold",
                "within [0, 1]")
kt.check(not os.path.exists(path("x")), "nothing is written on failure")
kt.finish()
