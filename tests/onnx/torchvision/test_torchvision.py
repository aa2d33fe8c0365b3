#!/usr/bin/env python3
"""The torchvision conformance set: CNNs as today's PyTorch exports them, run by kiln against
onnxruntime.

usage: test_torchvision.py KILN ORT_DIR [--update] [MODEL...]
The graphs in this folder were written by export_models.py (torch.onnx.export(model, x, path),
nothing else) with their weights stripped; weights.py redraws them, seeded. For each model
in expected.txt: onnxruntime (from ORT_DIR, fetched by `make tools`) computes the reference
on a seeded input; `kiln run MODEL.onnx` must match it on every device the line lists (see
DEVICES: cpu and emu within TOL, max abs error over max abs reference). A line `NAME unsupported: Op...`
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
# for an H100, whose f32 convs run on tensor cores in tf32: 5e-4 per step (kernel_check's
# tolerance), about sqrt(layers) of it through a network, so 2e-3 (as the gpu suite).
DEVICES = {"cpu": (["--device", "cpu"], TOL),
           "emu": (["--device", "emu", "--gpu", "t4"], TOL),
           "emu-tf32": (["--device", "emu", "--gpu", "h100"], 2e-3)}


def run_kiln(kiln, model, x_path, y_path, device):
    cmd = [kiln, "run", model, *DEVICES[device][0], "--input", x_path, "-o", y_path]
    return subprocess.run(cmd, capture_output=True, text=True)


def check(kiln, ort, name, want, tmp, update):
    model = materialise(os.path.join(HERE, name + ".onnx"), os.path.join(tmp, name + ".onnx"), name)
    x = np.random.default_rng(1).standard_normal(input_shape(model)).astype(np.float32)
    x_path, y_path = os.path.join(tmp, name + ".x.npy"), os.path.join(tmp, name + ".y.npy")
    np.save(x_path, x)
    kind, arg = want
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
    return True


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
    bad = sorted({d for k, a in expected.values() if k == "runs" for d in a} - set(DEVICES))
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
