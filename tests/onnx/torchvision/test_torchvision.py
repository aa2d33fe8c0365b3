#!/usr/bin/env python3
"""The torchvision conformance set: CNNs as today's PyTorch exports them, run by kiln against
onnxruntime.

usage: test_torchvision.py KILN ORT_DIR [--update] [MODEL...]
The graphs in this folder were written by export_models.py (torch.onnx.export(model, x, path),
nothing else) with their weights stripped; weights.py redraws them, seeded. For each model
in expected.txt: onnxruntime (from ORT_DIR, fetched by `make tools`) computes the reference
on a seeded input; `kiln run MODEL.onnx` must match it on every device the line lists (see
DEVICES: cpu and emu within TOL, max abs error over max abs reference); `train` there also
checks a training step's gradients against finite differences (check_training). A line `NAME unsupported: Op...`
says kiln refuses the model today: the import must exit 2 naming every listed ONNX operator
(all problems in one report), and the test fails when such a model starts to import, so
the list stays true. --update prints the lines expected.txt should have now (for a
maintainer; nothing is written). Exits 77 (skipped) without onnxruntime."""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 1e-4
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))  # kiln_test's safetensors
from weights import materialise  # noqa: E402


def read_expected():
    rows = {}
    with open(os.path.join(HERE, "expected.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, rest = line.split(None, 1)
            if rest.startswith("unsupported:"):
                rows[name] = ("unsupported", rest.split(":", 1)[1].split())
            else:
                rows[name] = ("runs", rest.split())
    return rows


def reference(ort, path, x):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def input_shape(path):
    import onnx
    t = onnx.load(path).graph.input[0].type.tensor_type
    return tuple(d.dim_value for d in t.shape.dim)


# Device tokens of expected.txt: the kiln options and the tolerance. `emu` runs the kernels
# generated for a T4 (f32 computed in f32: the conformance tolerance holds); `emu-tf32` those
# for an H100, whose f32 convs run on tensor cores in tf32: up to 5e-4 per step (kernel_check's
# tf32 tolerance; operands rounded to nearest), about sqrt(layers) of it through a network,
# so 4e-3 (as the gpu suite).
DEVICES = {"cpu": (["--device", "cpu"], TOL),
           "emu": (["--device", "emu", "--gpu", "t4"], TOL),
           "emu-tf32": (["--device", "emu", "--gpu", "h100"], 4e-3)}


def run_kiln(kiln, model, x_path, y_path, device):
    cmd = [kiln, "run", model, *DEVICES[device][0], "--input", x_path, "-o", y_path]
    return subprocess.run(cmd, capture_output=True, text=True)


def softmax_xent(logits, target):
    """kiln's training loss: softmax cross-entropy over the class axis (1), the mean over
    the batch (and over H, W for a dense prediction)."""
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-np.mean(np.take_along_axis(logp, target[:, None], axis=1)))


def check_training(kiln, model, name, tmp, out_shape):
    """A training step's gradients (cpu, f64) against central finite differences of the
    loss, at the largest-gradient element of the first, a middle and the last parameter
    (of those with a gradient above 1e-5)."""
    from kiln_test import read_safetensors, write_safetensors
    p = lambda f: os.path.join(tmp, f"{name}.{f}")
    x = np.random.default_rng(2).standard_normal((2, *input_shape(model)[1:]))
    target = np.random.default_rng(3).integers(0, out_shape[1], (2, *out_shape[2:]))
    np.save(p("tx.npy"), x)
    np.save(p("tt.npy"), target)
    steps = [[kiln, "import", model, "-o", p("json"), "--weights-out", p("w.safetensors")],
             [kiln, "run", p("json"), "--weights", p("w.safetensors"), "--dtype", "f64", "--input",
              p("tx.npy"), "--train", "--target", p("tt.npy"), "--grads", p("g.safetensors")]]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            print(f"{name:28s} train    FAILED: {' '.join(cmd[1:3])}: {r.stderr.strip()}")
            return False
    w = {k: v.astype(np.float64) for k, v in read_safetensors(p("w.safetensors")).items()}
    g = read_safetensors(p("g.safetensors"))
    names = sorted(g, key=list(w).index) if set(g) <= set(w) else sorted(g)
    # Central differences resolve a gradient to about eps * loss / h = 1e-9 here: tensors whose
    # largest gradient is near that (behind convnext's 1e-6 layer scale) would test the noise.
    names = [k for k in names if np.abs(g[k]).max() >= 1e-5]
    worst = 0.0
    for k in [names[0], names[len(names) // 2], names[-1]]:
        i = np.unravel_index(np.argmax(np.abs(g[k])), g[k].shape)
        h = 1e-6 * max(1.0, abs(w[k][i]))
        losses = []
        for sign in (1, -1):
            wp = dict(w)
            wp[k] = w[k].copy()
            wp[k][i] += sign * h
            write_safetensors(p("wp.safetensors"), wp, "F64")
            r = subprocess.run([kiln, "run", p("json"), "--weights", p("wp.safetensors"), "--dtype",
                                "f64", "--input", p("tx.npy"), "-o", p("ty.npy")],
                               capture_output=True, text=True)
            if r.returncode:
                print(f"{name:28s} train    FAILED: forward: {r.stderr.strip()}")
                return False
            losses.append(softmax_xent(np.load(p("ty.npy")), target))
        fd = (losses[0] - losses[1]) / (2 * h)
        err = abs(fd - g[k][i]) / max(abs(fd), abs(g[k][i]), 1e-12)
        worst = max(worst, err)
    ok = worst < 1e-4
    print(f"{name:28s} train    {'ok' if ok else 'FAILED':6s} gradient vs finite differences "
          f"{worst:.1e} (3 elements, f64, tol 1e-4)", flush=True)
    return ok


def check(kiln, ort, name, want, tmp, update):
    model = materialise(os.path.join(HERE, name + ".onnx"), os.path.join(tmp, name + ".onnx"), name)
    x = np.random.default_rng(1).standard_normal(input_shape(model)).astype(np.float32)
    x_path, y_path = os.path.join(tmp, name + ".x.npy"), os.path.join(tmp, name + ".y.npy")
    np.save(x_path, x)
    kind, arg = want
    train = kind == "runs" and "train" in arg
    arg = [a for a in arg if a != "train"]
    devices = arg if kind == "runs" else ["cpu"]
    if update:
        devices = ["cpu"] + [d for d in arg if d != "cpu"] if kind == "runs" else ["cpu"]
    ref = None
    for device in devices:
        t0 = time.time()
        r = run_kiln(kiln, model, x_path, y_path, device)
        took = time.time() - t0
        if r.returncode != 0:
            if kind == "unsupported" or update:
                missing = [op for op in arg if op not in r.stderr] if kind == "unsupported" else []
                ok = r.returncode == 2 and not missing and kind == "unsupported"
                print(f"{name:28s} {device:8s} refused (exit {r.returncode}) {took:5.1f} s")
                if update:
                    print("   ", r.stderr.strip().replace("\n", "\n    ")[:2000])
                elif not ok:
                    print(f"    expected exit 2 naming {arg}; missing {missing}:\n{r.stderr}")
                return ok
            print(f"{name:28s} {device:8s} FAILED (exit {r.returncode}):\n{r.stderr}")
            return False
        if kind == "unsupported" and not update:
            print(f"{name:28s} {device:8s} now imports: make its line in expected.txt `{name} cpu`")
            return False
        if ref is None:
            ref = reference(ort, model, x)
            # A comparison means something only if the output depends on the input.
            other = reference(ort, model, np.flip(x, -1).copy())
            moved = float(np.abs(other - ref).max() / max(np.abs(ref).max(), 1e-30))
            if moved < 1e-3:
                print(f"{name:28s} weights make the output independent of the input ({moved:.1e})")
                return False
        y = np.load(y_path)
        if y.shape != ref.shape:
            print(f"{name:28s} {device:8s} FAILED: shape {y.shape}, onnxruntime {ref.shape}")
            return False
        err = float(np.abs(y.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))
        tol = DEVICES[device][1]
        verdict = "ok" if err <= tol else "FAILED"
        print(f"{name:28s} {device:8s} {verdict:6s} rel err {err:.2e} (tol {tol:.0e}) {took:5.1f} s",
              flush=True)
        if err > tol:
            return False
    return check_training(kiln, model, name, tmp, ref.shape) if train and not update else True


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = "--update" in sys.argv
    if len(args) < 2:
        raise SystemExit(__doc__)
    kiln, ort_dir, only = args[0], args[1], args[2:]
    sys.path.insert(0, ort_dir)
    try:
        import onnxruntime as ort
    except ImportError as e:
        print(f"skipped: onnxruntime not in {ort_dir} ({e}); `make tools` fetches it")
        return 77
    expected = read_expected()
    bad = sorted({d for k, a in expected.values() if k == "runs" for d in a} - set(DEVICES) - {"train"})
    if bad:
        raise SystemExit(f"expected.txt: unknown device {' '.join(bad)} (known: {' '.join(DEVICES)})")
    unknown = [n for n in only if n not in expected]
    if unknown:
        raise SystemExit(f"not in expected.txt: {' '.join(unknown)}")
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, want in expected.items():
            if only and name not in only:
                continue
            if not check(kiln, ort, name, want, tmp, update):
                failed.append(name)
    runs = sum(1 for w in expected.values() if w[0] == "runs")
    print(f"{runs} of {len(expected)} models run in kiln; failed: {' '.join(failed) or 'none'}")
    return 1 if failed and not update else 0


if __name__ == "__main__":
    sys.exit(main())
