"""kiln train end to end on the cpu backend (and the emulator for the generated update and loss
kernels): folding works (issue 12 point 5: a synthetic task, tests/make_patch_task.py, learnt
to >= 95% validation accuracy by noscope_coral unfolded and folded by 2, the trained folded
model equal on the emulator and the cpu, and its training step under DTR at 80% equal to
store-all's bit for bit); a resumed run equals an uninterrupted one bit for bit; SGD (weight
decay, momentum), Adam and MSE distillation against NumPy; bad input exits 2 with a clear
message and leaves an existing checkpoint byte-identical."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

import kiln_test as kt

HERE = os.path.dirname(os.path.abspath(__file__))
d = kt.tmpdir()
path = lambda n: os.path.join(d, n)


def read_st(p):
    """Tensors (f32/f64/i32) and metadata of a safetensors file."""
    data = open(p, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, v in header.items():
        t = {"F32": "<f4", "F64": "<f8", "I32": "<i4"}[v["dtype"]]
        b, e = v["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype=t).reshape(v["shape"])
    return out, meta


def epochs(out):
    """[(loss, train acc, val acc or None)] from kiln train's per-epoch lines."""
    rows = []
    for m in re.finditer(r"^epoch \d+/\d+: loss ([-\d.e+naif]+), train acc ([\d.]+)%(?:, val acc ([\d.]+)%)?",
                         out, re.M):
        rows.append((float(m.group(1)), float(m.group(2)), float(m.group(3)) if m.group(3) else None))
    return rows


# ---- the synthetic task: 4 classes (the red patch's quadrant), 16x16 images ----------------
data_dir = path("patch")
subprocess.run([sys.executable, os.path.join(HERE, "..", "make_patch_task.py"), data_dir, "--train", "512",
                "--val", "256", "--size", "16", "--classes", "4", "--seed", "1"], check=True)
X, Y = os.path.join(data_dir, "x_train.npy"), os.path.join(data_dir, "y_train.npy")
XV, YV = os.path.join(data_dir, "x_val.npy"), os.path.join(data_dir, "y_val.npy")
again = path("again")
subprocess.run([sys.executable, os.path.join(HERE, "..", "make_patch_task.py"), again, "--train", "512",
                "--val", "256", "--size", "16", "--classes", "4", "--seed", "1"], check=True)
kt.check(open(X, "rb").read() == open(os.path.join(again, "x_train.npy"), "rb").read(),
         "make_patch_task.py is deterministic")

# noscope_coral with a 4-way classifier (the shipped one separates 2 classes), and folded by 2.
coral = json.load(open(os.path.join(HERE, "..", "..", "models", "noscope_coral.json")))
for layer in coral["layers"]:
    if layer["name"] == "fc2":
        layer["out_features"] = 4
coral["name"] = "noscope_coral4"
json.dump(coral, open(path("coral4.json"), "w"))
kt.kiln("fold", path("coral4.json"), "--factor", "2", "-o", path("coral4_f2.json"))

train_args = ["--data", X, "--labels", Y, "--val-data", XV, "--val-labels", YV, "--epochs", "5",
              "--batch", "32", "--optimizer", "adam", "--lr", "0.002", "--seed", "1"]
for name, model in (("unfolded", "coral4.json"), ("folded by 2", "coral4_f2.json")):
    t0 = time.time()
    out, _ = kt.kiln("train", path(model), *train_args, "-o", path(model + ".safetensors"))
    rows = epochs(out)
    kt.check(len(rows) == 5, f"{name}: five epoch lines: {out}")
    accs = [r[2] for r in rows]
    print(f"noscope_coral {name}: val acc per epoch {accs} in {time.time() - t0:.1f} s")
    kt.check(rows and rows[-1][2] >= 95.0, f"{name}: validation accuracy {accs} stays below 95%")
    kt.check(rows and rows[-1][0] < rows[0][0], f"{name}: the loss does not fall: {rows}")

# The trained folded model: the emulator's generated kernels equal the cpu reference, and a
# training step under a recompute schedule gives store-all's gradients bit for bit. (Rotor
# cannot go below noscope_coral's store-all peak: its chain is two full-resolution convs and
# a classifier, so nothing recomputed frees enough; DTR fits 80%. test_folded_run checks a
# folded resnet32 under rotor at 50%.)
np.save(path("xv8.npy"), np.load(XV)[:32])
np.save(path("yv8.npy"), np.load(YV)[:32])
w = path("coral4_f2.json.safetensors")
for dev in ("cpu", "emu"):
    kt.kiln("run", path("coral4_f2.json"), "--device", dev, "--weights", w, "--input", path("xv8.npy"),
            "--output", path(f"y_{dev}.npy"))
y_cpu, y_emu = np.load(path("y_cpu.npy")), np.load(path("y_emu.npy"))
kt.check(kt.rel(y_emu, y_cpu) < 5e-4, f"emu against cpu: {kt.rel(y_emu, y_cpu)}")
kt.check((y_cpu.argmax(1) == np.load(path("yv8.npy"))).mean() >= 0.75, "the trained model classifies")
for sched in (["--schedule", "store-all"], ["--schedule", "dtr", "--budget", "80%"]):
    kt.kiln("run", path("coral4_f2.json"), "--device", "cpu", "--weights", w, "--input", path("xv8.npy"),
            "--train", "--target", path("yv8.npy"), "--grads", path(f"g_{sched[1]}.safetensors"), *sched)
g_all, _ = read_st(path("g_store-all.safetensors"))
g_dtr, _ = read_st(path("g_dtr.safetensors"))
kt.check(g_all.keys() == g_dtr.keys() and all(np.array_equal(g_all[k], g_dtr[k]) for k in g_all),
         "dtr at 80% gives store-all's gradients bit for bit")

# ---- resume: 4 epochs straight == 2, then --resume to 4 (Adam: moments and step count;
# a batch that leaves images out; folded) --------------------------------------------------
small = ["--data", X, "--labels", Y, "--batch", "60", "--optimizer", "adam", "--weight-decay", "0.01",
         "--seed", "5"]
kt.kiln("train", path("coral4_f2.json"), *small, "--epochs", "4", "-o", path("straight.safetensors"))
kt.kiln("train", path("coral4_f2.json"), *small, "--epochs", "2", "-o", path("split.safetensors"))
out, _ = kt.kiln("train", path("coral4_f2.json"), *small, "--epochs", "4", "--resume", "-o",
                 path("split.safetensors"))
kt.check("resuming" in out and "after epoch 2" in out, f"resume says where it continues: {out}")
for f in ("straight", "split"):
    kt.check(os.path.exists(path(f + ".train.safetensors")), f"{f}: the training state is beside the weights")
for suffix in (".safetensors", ".train.safetensors"):
    a, ma = read_st(path("straight" + suffix))
    b, mb = read_st(path("split" + suffix))
    ma.pop("run"), mb.pop("run")
    kt.check(ma == mb, f"{suffix}: metadata {ma} != {mb}")
    kt.check(a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a),
             f"{suffix}: a resumed run differs from the uninterrupted one")
state, meta = read_st(path("straight.train.safetensors"))
kt.check(meta["epoch"] == "4" and meta["step"] == str(4 * (512 // 60)), f"epoch and step: {meta}")
kt.check(any(k.startswith("opt.m:") for k in state) and any(k.startswith("opt.v:") for k in state),
         f"Adam's moments are saved: {sorted(state)[:4]}")
weights, wmeta = read_st(path("straight.safetensors"))
kt.check(not any(k.startswith("opt.") for k in weights), "the weights file holds parameters only")
kt.check(wmeta["format"] == "kiln-checkpoint/1" and wmeta["model"] == "noscope_coral4_folded2", f"{wmeta}")

# ---- optimizers and the distillation loss against NumPy on a tiny linear model (f64) -------
tiny = {"format": "kiln-model/1", "name": "tiny", "input": {"name": "x", "shape": [4, 2, 3, 3]},
        "layers": [{"name": "flat", "op": "flatten"}, {"name": "fc", "op": "linear", "out_features": 3}]}
json.dump(tiny, open(path("tiny.json"), "w"))
rng = np.random.RandomState(3)
tx = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
ty = np.array([0, 2, 1, 2], np.int64)
teacher = rng.standard_normal((4, 3)).astype(np.float32)
np.save(path("tx.npy"), tx), np.save(path("ty.npy"), ty), np.save(path("teacher.npy"), teacher)
W0, b0 = rng.standard_normal((3, 18)) * 0.3, rng.standard_normal(3) * 0.1
kt.write_safetensors(path("init.safetensors"), {"fc.weight": W0, "fc.bias": b0}, "F64")
x2 = tx.reshape(4, 18).astype(np.float64)


def grads(W, b, distill):
    z = x2 @ W.T + b
    if distill:
        g = 2 * (z - teacher) / z.size
    else:
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = (p - np.eye(3)[ty]) / 4
    return g.T @ x2, g.sum(0)


def numpy_train(opt, steps, lr, wd=0.0, momentum=0.0, betas=(0.9, 0.999), eps=1e-8, distill=False):
    P = [W0.copy(), b0.copy()]
    S = [[np.zeros_like(p), np.zeros_like(p)] for p in P]
    for t in range(1, steps + 1):
        for p, g, s in zip(P, grads(P[0], P[1], distill), S):
            g = g + wd * p
            if opt == "sgd":
                s[0] = momentum * s[0] + g if momentum else g
                p -= lr * s[0]
            else:
                s[0] = betas[0] * s[0] + (1 - betas[0]) * g
                s[1] = betas[1] * s[1] + (1 - betas[1]) * g * g
                denom = np.sqrt(s[1]) / np.sqrt(1 - betas[1] ** t) + eps
                p -= lr / (1 - betas[0] ** t) * s[0] / denom
    return P


cases = [("sgd", dict(lr=0.1, wd=0.01, momentum=0.9), ["--lr", "0.1", "--weight-decay", "0.01", "--momentum", "0.9"]),
         ("adam", dict(lr=0.01, wd=0.01, betas=(0.8, 0.95), eps=1e-6),
          ["--optimizer", "adam", "--lr", "0.01", "--weight-decay", "0.01", "--betas", "0.8", "0.95", "--eps", "1e-6"]),
         ("sgd distill", dict(lr=0.1, distill=True), ["--lr", "0.1", "--distill", path("teacher.npy")])]
for name, ref_args, args in cases:
    # Three epochs of one full batch each: three updates (the shuffled order within the batch
    # only reorders the gradient's sums, within rounding).
    opt = "adam" if "adam" in name else "sgd"
    kt.kiln("train", path("tiny.json"), "--dtype", "f64", "--data", path("tx.npy"), "--labels", path("ty.npy"),
            "--batch", "4", "--epochs", "3", "--weights", path("init.safetensors"), *args, "-o",
            path("tiny.safetensors"), "--overwrite")
    got, _ = read_st(path("tiny.safetensors"))
    W, b = numpy_train(opt, 3, **ref_args)
    err = max(kt.rel(got["fc.weight"], W), kt.rel(got["fc.bias"], b))
    kt.check(err < 1e-12, f"{name}: kiln train against NumPy: relative error {err}")

# Distillation lowers its loss, and the emulator's generated kernels (update, MSE, adam) train
# as the cpu reference does.
out, _ = kt.kiln("train", path("tiny.json"), "--data", path("tx.npy"), "--labels", path("ty.npy"), "--batch", "4",
                 "--epochs", "8", "--distill", path("teacher.npy"), "--lr", "0.2", "-o", path("distill.safetensors"))
losses = [r[0] for r in epochs(out)]
kt.check(len(losses) == 8 and losses[-1] < 0.5 * losses[0], f"the MSE loss falls: {losses}")
for extra in (["--optimizer", "adam", "--weight-decay", "0.01"], ["--distill", path("teacher.npy"), "--momentum", "0.9"]):
    for dev in ("cpu", "emu"):
        kt.kiln("train", path("tiny.json"), "--data", path("tx.npy"), "--labels", path("ty.npy"), "--batch", "4",
                "--epochs", "2", "--device", dev, *extra, "-o", path(f"tiny_{dev}.safetensors"), "--overwrite")
    a, _ = read_st(path("tiny_emu.safetensors"))
    b, _ = read_st(path("tiny_cpu.safetensors"))
    err = max(kt.rel(a[k], b[k]) for k in b)
    kt.check(err < 1e-5, f"emu against cpu after two updates ({extra[0]}): {err}")

# ---- bad input: exit 2, a clear message, the checkpoint untouched ---------------------------
ck = path("ck.safetensors")
kt.kiln("train", path("coral4.json"), "--data", X, "--labels", Y, "--epochs", "1", "--batch", "64", "-o", ck)
before = {p: open(p, "rb").read() for p in (ck, path("ck.train.safetensors"))}
raw = open(X, "rb").read()
open(path("trunc.npy"), "wb").write(raw[:len(raw) - 1000])
np.save(path("y_short.npy"), np.load(Y)[:-1])
y_bad = np.load(Y).copy()
y_bad[17] = 7
np.save(path("y_range.npy"), y_bad)
np.save(path("y_float.npy"), np.load(Y).astype(np.float32))
np.save(path("x_gray.npy"), np.load(X)[:, :1])
np.save(path("teacher_bad.npy"), np.zeros((512, 5), np.float32))
open(path("garbage.npy"), "wb").write(b"\x93NUMPY\x01\x00" + b"{'descr': '<f4', 'fortran_order': False, 'shape': (9999999, 3, 16, 16), }".ljust(118) + b"\n")
def base_with(args):
    """kiln train of coral4 into the checkpoint, 2 epochs of 64 unless args say otherwise."""
    extra = ([] if "--batch" in args else ["--batch", "64"]) + ([] if "--epochs" in args else ["--epochs", "2"])
    return ["train", path("coral4.json"), "-o", ck] + extra + args



bad = [
    (["--data", path("trunc.npy"), "--labels", Y], ["trunc.npy"]),
    (["--data", path("garbage.npy"), "--labels", Y], ["garbage.npy"]),
    (["--data", X, "--labels", path("y_short.npy")], ["y_short.npy", "[511]", "must be [512]"]),
    (["--data", X, "--labels", path("y_range.npy")], ["y_range.npy", "[17]", "label 7 is outside the model's 4 classes"]),
    (["--data", X, "--labels", path("y_float.npy")], ["y_float.npy", "int64 or int32"]),
    (["--data", path("x_gray.npy"), "--labels", Y], ["x_gray.npy", "the model takes [3, 16, 16]"]),
    (["--data", X, "--labels", Y, "--distill", path("teacher_bad.npy")], ["teacher_bad.npy", "4 classes"]),
    (["--data", X, "--labels", Y, "--val-data", XV], ["--val-labels"]),
    (["--data", X, "--labels", Y, "--val-data", XV, "--val-labels", path("y_short.npy")], ["y_short.npy"]),
    (["--data", X, "--labels", Y, "--lr", "-1"], ["--lr"]),
    (["--data", X, "--labels", Y, "--batch", "1000"], ["fewer than one batch"]),
    (["--data", X, "--labels", Y, "--bogus"], ["--bogus"]),
]
for args, fragments in bad:
    for mode in (["--resume"], ["--overwrite"]):
        kt.expect_error(base_with(args + mode), *fragments)
# The checkpoint itself: without --resume or --overwrite it is kept; a resumed run must
# match its settings and have epochs left; a damaged state file is named.
kt.expect_error(base_with(["--data", X, "--labels", Y]), "exists: --resume continues")
kt.expect_error(base_with(["--data", X, "--labels", Y, "--resume", "--lr", "0.5"]), "ck.train.safetensors", "lr")
kt.expect_error(base_with(["--data", X, "--labels", Y, "--resume", "--epochs", "1"]), "leaves nothing to do")
kt.expect_error(["train", path("coral4.json"), "--data", X, "--labels", Y, "--resume", "-o", path("none.safetensors")],
                "none.safetensors", "does not exist")
after = {p: open(p, "rb").read() for p in before}
kt.check(after == before, "a failed kiln train left the checkpoint byte-identical")
shutil.copy(path("ck.train.safetensors"), path("ck_state_backup"))
open(path("ck.train.safetensors"), "wb").write(before[path("ck.train.safetensors")][:100])
kt.expect_error(base_with(["--data", X, "--labels", Y, "--resume"]), "ck.train.safetensors")
kt.check(open(ck, "rb").read() == before[ck], "a damaged state leaves the weights alone")

out, _ = kt.kiln("train", "--help")
for option in ("--data", "--labels", "--val-data", "--distill", "--optimizer", "--resume", "--schedule", "--budget",
               "W.train.safetensors", "partial batch"):
    kt.check(option in out, f"--help mentions {option}")
kt.finish()
