"""1-D signal models ([N, C, L], held as [N, C, L, 1]) in kiln train and kiln build.

kiln train takes --data/--val-data [N, C, L] (and [N, C, L, 1], the same run to the bit) and
learns a separable task (loss falling every epoch, validation accuracy >= 90%) on cpu; the
emulator's generated kernels give the cpu's losses (as printed, to 1e-4); [N, C, H, W] with
W != 1, and [N, C, L] for an image model, are errors that say what the model takes; --image
is L or Lx1. A training step's gradients on emu equal the cpu's (1e-4). A per-position target
of a signal output is [N, L] (or [N, L, 1]) in kiln run --train and in a training build. The
program of kiln build names [N, C, L], the output's caller shape (and a training build its
target's) in --help and refuses a wrong input before it looks for a GPU; where a GPU runs it,
its output has kiln run's shape and values (within 5e-3, tf32's; rank 3 for a rank-3 output)."""
import json
import os
import re
import subprocess

import numpy as np

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
N, C, L, K = 40, 4, 32, 5


def model(name, head):
    layers = [{"name": "c1", "op": "conv2d", "out_channels": 8, "kernel": [5, 1], "padding": [2, 0]},
              {"name": "r1", "op": "relu"},
              {"name": "mp", "op": "maxpool2d", "kernel": [2, 1]},
              {"name": "c2", "op": "conv2d", "out_channels": 8, "kernel": [3, 1], "padding": [1, 0],
               "groups": 2}]
    if head:
        layers += [{"name": "gap", "op": "global_avgpool"}, {"name": "flat", "op": "flatten"},
                   {"name": "fc", "op": "linear", "out_features": K}]
    m = {"format": "kiln-model/1", "name": name, "input": {"name": "x", "shape": [8, C, L]},
         "layers": layers}
    json.dump(m, open(path(name + ".json"), "w"))
    return path(name + ".json")


sig = model("sig", True)
trunk = model("trunk", False)

# A separable task: class k puts a sine of frequency k + 1 and an offset on channel k mod C.
rng = np.random.RandomState(3)
y = np.arange(N) % K
x = rng.randn(N, C, L).astype(np.float32) * 0.3
t = np.arange(L)
for i in range(N):
    x[i, y[i] % C] += 1.5 * np.sin(2 * np.pi * (y[i] + 1) * t / L) + 0.5 * (y[i] - 2)
np.save(path("x.npy"), x)
np.save(path("x4.npy"), x[..., None])
np.save(path("xw.npy"), x.reshape(N, C, L // 2, 2))
np.save(path("y.npy"), y.astype(np.int64))


def epochs(out):
    return [(float(a), float(b)) for a, b in
            re.findall(r"epoch \d+/\d+: loss ([0-9.]+), train acc [0-9.]+%, val acc ([0-9.]+)%", out)]


def train(tag, data, *extra, n=6):
    out, _ = kt.kiln("train", sig, "--data", path(data), "--labels", path("y.npy"), "--val-data", path("x.npy"),
                     "--val-labels", path("y.npy"), "--epochs", n, "--batch", 8, "--optimizer", "adam", "--lr",
                     0.02, "-o", path(tag + ".st"), *extra)
    e = epochs(out)
    print(f"{tag}: losses {[round(l, 4) for l, _ in e]}, val acc {[a for _, a in e]}")
    kt.check(len(e) == n, f"{tag}: {n} epochs expected: {out}")
    return out, e


out, cpu = train("cpu", "x.npy")
kt.check("signals [4, 32]" in out, f"kiln train names the signal shape: {out}")
kt.check(all(b[0] < a[0] for a, b in zip(cpu, cpu[1:])), f"cpu: the loss falls every epoch: {cpu}")
kt.check(cpu and cpu[-1][0] < 0.5 * cpu[0][0] and cpu[-1][1] >= 90, f"cpu: learns the task: {cpu}")
# [N, C, L, 1] is the same data: the same run, to the bit.
_, held = train("cpu4", "x4.npy")
kt.check(held == cpu, f"[N, C, L, 1] data trains as [N, C, L]: {held} vs {cpu}")
# The generated kernels on the emulator (the T4's: exact fp32).
_, emu = train("emu", "x.npy", "--device", "emu", "--gpu", "t4", n=3)
# (The loss is printed to 4 decimals: equal within the last digit.)
kt.check(len(emu) == 3 and all(abs(a[0] - b[0]) <= 1.5e-4 for a, b in zip(emu, cpu)),
         f"emu losses {emu} vs cpu {cpu[:3]}")
# --image: L and Lx1 both name the data's length; another length or W != 1 is refused.
for image in ("32", "32x1"):
    kt.kiln("train", sig, "--image", image, "--data", path("x.npy"), "--labels", path("y.npy"), "--epochs", 1,
            "--batch", 8, "-o", path("im.st"), "--overwrite")
kt.expect_error(["train", sig, "--image", "32x2", "--data", path("x.npy"), "--labels", path("y.npy"), "-o",
                 path("e.st")], "L or Lx1 for [N, C, L]")
kt.expect_error(["train", sig, "--image", "40", "--data", path("x.npy"), "--labels", path("y.npy"), "-o",
                 path("e.st")], "has signals [4, 32] (channels, length); the model takes [4, 40]")
# Wrong data: W != 1 for a signal model (training or validation), [N, C, L] for an image model.
for flag in ("--data", "--val-data"):
    args = ["train", sig, "--data", path("x.npy"), "--labels", path("y.npy"), "--val-labels", path("y.npy"),
            "--val-data", path("x.npy"), "-o", path("e.st")]
    args[args.index(flag) + 1] = path("xw.npy")
    kt.expect_error(args, "xw.npy", "has shape [40, 4, 16, 2]", "takes [N, C, L] (or [N, C, L, 1])")
kt.expect_error(["train", "noscope_coral", "--data", path("x.npy"), "--labels", path("y.npy"), "-o", path("e.st")],
                "[N, C, H, W] ([N, C, L] only for a 1-D signal model)")
kt.check(not os.path.exists(path("e.st")), "no checkpoint after an error")

# kiln run of the trained model: [N, C, L] in, [N, K] out (the reference for the program below).
np.save(path("x8.npy"), x[:8])
kt.kiln("run", sig, "--weights", path("cpu.st"), "--input", path("x8.npy"), "-o", path("ry8.npy"))
kt.kiln("run", trunk, "--input", path("x8.npy"), "-o", path("rt8.npy"))
kt.check(np.load(path("rt8.npy")).shape == (8, 8, L // 2), "kiln run writes the trunk's [N, C, L] output")

# A per-position training target of a signal output [N, K, L] is [N, L] (or [N, L, 1]).
np.save(path("t8.npy"), (np.arange(8 * (L // 2)) % 8).reshape(8, L // 2).astype(np.int64))
np.save(path("t8h.npy"), np.load(path("t8.npy"))[..., None])
for t in ("t8", "t8h"):
    kt.kiln("run", trunk, "--input", path("x8.npy"), "--train", "--target", path(t + ".npy"), "--grads",
            path(t + "_g.st"))
kt.check(open(path("t8_g.st"), "rb").read() == open(path("t8h_g.st"), "rb").read(),
         "[N, L] and [N, L, 1] targets give the same gradients")
# The training step's gradients on the emulator's generated kernels against the cpu's.
np.save(path("y8.npy"), y[:8].astype(np.int64))
for dev in ("cpu", "emu"):
    kt.kiln("run", sig, "--device", dev, *(["--gpu", "t4"] if dev == "emu" else []), "--input", path("x8.npy"),
            "--train", "--target", path("y8.npy"), "--grads", path(f"sg_{dev}.st"))
gc, ge = kt.read_safetensors(path("sg_cpu.st")), kt.read_safetensors(path("sg_emu.st"))
kt.check(sorted(gc) == sorted(ge) and len(gc) == 6, f"gradients of every parameter: {sorted(gc)} {sorted(ge)}")
for k in gc:
    err = kt.rel(ge.get(k, 0 * gc[k]), gc[k])
    print(f"training step gradient {k:10s} emu vs cpu: {err:.1e}")
    kt.check(err < 1e-4 and np.abs(gc[k]).max() > 0, f"{k}: emu gradient differs from the cpu's: {err}")
kt.expect_error(["run", trunk, "--input", path("x8.npy"), "--train", "--target", path("y.npy"), "--grads",
                 path("e_g.st")], "has shape [40], expected [8, 16]")

# kiln build: the program takes [N, C, L] and writes the caller's rank.
for name, m, want_out, weights, ref in (("sig", sig, [8, K], path("cpu.st"), "ry8.npy"),
                                         ("trunk", trunk, [8, 8, L // 2], None, "rt8.npy")):
    b = path(name + "_bin")
    kt.kiln("build", m, "--gpu", "h100", "-o", b)
    h = subprocess.run([b, "--help"], capture_output=True, text=True)
    kt.check(h.returncode == 0 and f"input batch, .npy [8, {C}, {L}] (a 1-D signal [N, C, L]" in h.stdout and
             f"first output, .npy {want_out}\n" in h.stdout and f"[8, {C}, {L}, 1]" not in h.stdout,
             f"{name} --help: {h.stdout}")
    for bad, frag in (("xw.npy", "has shape [40, 4, 16, 2], the model takes [8, 4, 32]"),
                      ("x.npy", "has shape [40, 4, 32], the model takes [8, 4, 32]")):
        r = subprocess.run([b, "--input", path(bad), "--output", path("by.npy")], capture_output=True, text=True)
        kt.check(r.returncode == 2 and frag in r.stderr and "driver" not in r.stderr,
                 f"{name} with {bad}: exit {r.returncode}, {r.stderr!r} (refused before a device is opened)")
    np.save(path("bad_rank.npy"), np.zeros((8, C), np.float32))
    r = subprocess.run([b, "--input", path("bad_rank.npy"), "--output", path("by.npy")], capture_output=True, text=True)
    kt.check(r.returncode == 2 and "has shape [8, 4], the model takes [8, 4, 32] (a 1-D signal [N, C, L])" in r.stderr,
             f"{name} with a rank-2 input: {r.stderr!r}")
    for given in ("x8.npy",):  # the data's own [N, C, L]
        r = subprocess.run([b, "--input", path(given), "--output", path(name + "_y.npy"),
                            *(["--weights", weights] if weights else [])], capture_output=True, text=True)
        if "driver" in r.stderr or "no GPU" in r.stderr:
            kt.check(r.returncode != 0 and not os.path.exists(path(name + "_y.npy")), f"no GPU: {r.stderr}")
            print(f"{name}: no GPU here; the program refuses cleanly: {r.stderr.strip()}")
        else:
            got, want = np.load(path(name + "_y.npy")), np.load(path(ref))
            # An f32 conv may take tf32 tensor cores on a GPU: a tf32 tolerance.
            kt.check(r.returncode == 0 and list(got.shape) == want_out and kt.rel(got, want) < 5e-3,
                     f"{name} on a GPU: {r.stderr} {got.shape} vs kiln run's {want.shape}")
# A training build names its [N, L] target and refuses another before it looks for a GPU.
kt.kiln("build", trunk, "--gpu", "h100", "--train", "-o", path("train_bin"))
h = subprocess.run([path("train_bin"), "--help"], capture_output=True, text=True)
kt.check("T: class indices, .npy [8, 16]" in h.stdout, f"training build --help: {h.stdout}")
r = subprocess.run([path("train_bin"), "--input", path("x8.npy"), "--target", path("y.npy"), "--grads",
                    path("bg.st")], capture_output=True, text=True)
kt.check(r.returncode == 2 and "has shape [40], expected [8, 16]" in r.stderr, f"training build: {r.stderr!r}")
kt.finish()
