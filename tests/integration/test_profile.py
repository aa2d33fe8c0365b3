"""kiln profile and its consumers: densenet121's conv inputs measured on the cpu (every conv
once, in model order, deterministic), shown by `kiln inspect --profile`, planned from by
`kiln generate --profile`; the emulator measuring what the cpu measures; bad profiles and
bad inputs exit 2 naming the culprit and write nothing."""
import json
import os

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
MODEL = ["densenet121", "--image", "64x64", "--batch", "1"]

np.save(path("x.npy"), np.random.RandomState(0).standard_normal((1, 3, 64, 64)).astype(np.float32))
out, _ = kt.kiln("profile", *MODEL, "--input", path("x.npy"), "--device", "cpu", "-o", path("p.json"))
print(out.splitlines()[-1])
kt.check("120 conv2d inputs measured on cpu" in out.splitlines()[-1], f"final line: {out.splitlines()[-1]!r}")
p = json.load(open(path("p.json")))

# Every conv2d layer once, in model order, with the value it reads.
ins, _ = kt.kiln("inspect", *MODEL, "--json")
layers = json.loads(ins)["layers"]
op = {l["name"]: l["op"] for l in layers}
convs = [l["name"] for l in layers if l["op"] == "conv2d"]
kt.check(len(convs) == 120, f"densenet121 has {len(convs)} conv2d layers, expected 120")
got = [e["layer"] for e in p["densities"]]
kt.check(got == convs, f"profiled layers differ from the model's conv2d layers in order: {got[:5]}...")
kt.check(p["model"] == "densenet121" and p["input_shape"] == [1, 3, 64, 64] and p["device"] == "cpu"
         and p["weights"] == "seeded 0" and p["tile"] == [8, 8] and p["dtype"] == "f32"
         and p["input"] == path("x.npy"), f"profile header: { {k: v for k, v in p.items() if k != 'densities'} }")
for e in p["densities"]:
    row = next((r for r in out.splitlines() if r.startswith(e["layer"] + " ")), None)
    kt.check(row is not None, f"no table row for {e['layer']}")
    kt.check(e["nonzeros"] == round(e["density"] * e["elements"]), f"{e['layer']}: density is not nonzeros / elements")
    t = e["tiles"]
    kt.check(t["min"] <= t["p10"] <= t["median"] <= t["p90"] <= t["max"], f"{e['layer']}: tile quantiles out of order")
    if e["input"] == "image":
        kt.check(e["density"] == 1.0, f"{e['layer']} reads the random image: density {e['density']}, expected 1")
    else:
        kt.check(0 < e["density"] <= 1, f"{e['layer']}: density {e['density']} outside (0, 1]")
    if op.get(e["input"]) == "relu":
        kt.check(e["density"] < 1, f"{e['layer']} reads relu {e['input']}: density {e['density']}, expected < 1")
kt.check(p["densities"][0]["input"] == "image", "the first conv reads the model input")
kt.check(sum(op.get(e["input"]) == "relu" for e in p["densities"]) == 119, "119 convs read a relu")

# Deterministic: the same run writes the same bytes.
kt.kiln("profile", *MODEL, "--input", path("x.npy"), "--device", "cpu", "-o", path("p2.json"))
kt.check(open(path("p.json"), "rb").read() == open(path("p2.json"), "rb").read(), "two runs wrote different profiles")
# The tile changes the spread only; another seed changes the weights, so the densities.
kt.kiln("profile", *MODEL, "--input", path("x.npy"), "--tile", "16", "--seed", "3", "-o", path("p16.json"))
p16 = json.load(open(path("p16.json")))
kt.check(p16["tile"] == [16, 16] and p16["weights"] == "seeded 3", f"tile {p16['tile']}, weights {p16['weights']}")
kt.check(p16["densities"][0]["tiles"]["count"] == 16 and p["densities"][0]["tiles"]["count"] == 64,
         "an image of 64x64 has 16 tiles of 16x16 and 64 of 8x8")
kt.check(any(a["density"] != b["density"] for a, b in zip(p["densities"], p16["densities"])),
         "seed 3 measured the same densities as seed 0")

# kiln inspect --profile: the density beside each conv2d layer, and in --json.
txt, _ = kt.kiln("inspect", *MODEL, "--profile", path("p.json"))
plain, _ = kt.kiln("inspect", *MODEL)
kt.check("density" in txt.splitlines()[2] and "density" not in plain, "the density column appears only with --profile")
e = p["densities"][2]
row = next(r for r in txt.splitlines() if r.startswith(e["layer"] + " "))
kt.check(f"{e['density']:.4f}" in row and f"{e['tiles']['p10']:.3f}-{e['tiles']['p90']:.3f}" in row,
         f"inspect row lacks density or spread: {row!r}")
j = json.loads(kt.kiln("inspect", *MODEL, "--profile", path("p.json"), "--json")[0])
kt.check(j["profile"] == path("p.json"), "inspect --json lacks the profile path")
dens = {l["name"]: l["input_density"] for l in j["layers"] if "input_density" in l}
kt.check(dens == {e["layer"]: e["density"] for e in p["densities"]}, "inspect --json input_density differs from the profile")
kt.check(all(l["op"] == "conv2d" for l in j["layers"] if "input_density" in l), "input_density on a non-conv layer")

# Bad profiles: refused by inspect and generate, naming the file (and where it is wrong).
text = open(path("p.json")).read()
open(path("trunc.json"), "w").write(text[:len(text) // 2])
bad = json.loads(text)
bad["densities"][1]["layer"] = "features.nope"
json.dump(bad, open(path("unknown.json"), "w"))
bad = json.loads(text)
bad["densities"][1]["layer"] = "features.relu0"
json.dump(bad, open(path("notconv.json"), "w"))
for f, where in (("trunc.json", "malformed JSON"), ("unknown.json", "/densities/1/layer: model \"densenet121\" has no layer"),
                 ("notconv.json", "is a relu, not a conv2d")):
    kt.expect_error(["inspect", *MODEL, "--profile", path(f)], path(f), where)
    kt.expect_error(["generate", *MODEL, "--gpu", "t4", "--profile", path(f), "-o", path("gen_bad")], path(f), where)
    kt.check(not os.path.exists(path("gen_bad")), f"generate with {f} left an output directory")
kt.expect_error(["inspect", "resnet18", "--profile", path("p.json")], path("p.json"), "/model",
                "not of \"resnet18\"")

# kiln generate --profile: the sparse family planned from the measured densities. The T4
# has no TF32, so sparse kernels pay off at these densities and some convs dispatch.
out, _ = kt.kiln("generate", *MODEL, "--gpu", "t4", "--profile", path("p.json"), "-o", path("gen"))
if os.path.exists(path("gen/manifest.json")):
    man = json.load(open(path("gen/manifest.json")))
    decisions = [c for c in man["sparse"]["convs"] if c.get("phase", "forward") == "forward"]
    measured = {e["layer"]: e["density"] for e in p["densities"]}
    for c in decisions:
        kt.check(c["density_source"] == "profile", f"{c['layer']}: density from {c['density_source']}")
        kt.check(abs(c["density"] - measured[c["layer"]]) <= 1e-4, f"{c['layer']}: density {c['density']}, "
                 f"profiled {measured[c['layer']]}")
        kt.check(bool(c.get("reason")), f"{c['layer']}: decision without a reason")
    kt.check({c["layer"] for c in decisions} == set(measured), "not every profiled conv has a sparse decision")
    paths = [c["path"] for c in decisions]
    kt.check("dispatch" in paths, f"no conv dispatches on the t4: {sorted(set(paths))}")
    print(f"generate --gpu t4 --profile: {paths.count('dispatch')} of {len(paths)} convs dispatch")

# The emulator runs the generated kernels (TF32 or fp32): the same densities within 1e-3.
R18 = ["resnet18", "--image", "32x32", "--batch", "1"]
np.save(path("r.npy"), np.random.RandomState(1).standard_normal((1, 3, 32, 32)).astype(np.float32))
kt.kiln("profile", *R18, "--input", path("r.npy"), "--device", "cpu", "-o", path("rc.json"))
out, _ = kt.kiln("profile", *R18, "--input", path("r.npy"), "--device", "emu", "-o", path("re.json"))
print(out.splitlines()[-1])
if os.path.exists(path("re.json")):
    rc, re_ = json.load(open(path("rc.json"))), json.load(open(path("re.json")))
    kt.check(re_["device"] == "emu", "emu profile says device " + re_["device"])
    kt.check([e["layer"] for e in rc["densities"]] == [e["layer"] for e in re_["densities"]], "emu profiled other layers")
    worst = max(abs(a["density"] - b["density"]) for a, b in zip(rc["densities"], re_["densities"]))
    print(f"resnet18 densities, emu vs cpu: worst difference {worst:.2e}")
    kt.check(worst <= 1e-3, f"emu densities differ from cpu by {worst}")

# Bad inputs: exit 2 with a clear message, nothing written.
kt.expect_error(["profile", *R18, "--device", "cpu", "-o", path("no.json")], "--input is required")
kt.expect_error(["profile", *R18, "--input", path("r.npy"), "--tile", "0x3", "-o", path("no.json")], "--tile", "0x3")
kt.expect_error(["profile", *R18, "--input", path("r.npy"), "--tile", "8x", "-o", path("no.json")], "--tile")
raw = open(path("r.npy"), "rb").read()
open(path("trunc.npy"), "wb").write(raw[:len(raw) - 100])
kt.expect_error(["profile", *R18, "--input", path("trunc.npy"), "-o", path("no.json")], path("trunc.npy"))
kt.expect_error(["profile", *R18, "--input", path("x.npy"), "-o", path("no.json")], path("x.npy"), "has shape")
kt.expect_error(["profile", *R18, "--input", path("r.npy"), "--gpu", "t4", "-o", path("no.json")], "--gpu")
kt.check(not os.path.exists(path("no.json")), "a failed kiln profile wrote its output")
kt.check(not [f for f in os.listdir(d) if ".tmp." in f], "a failed kiln profile left a temporary file")

kt.finish()
