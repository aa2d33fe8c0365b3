"""ONNX backend node tests (Debian's libonnx-testdata) through kiln: every test whose
operators kiln imports is run through `kiln run model.onnx` on the cpu backend and, for
f32, through the generated kernels on the emulator (`--device emu`), and compared with the
test's expected output at a declared tolerance (relative L2 norm, DESIGN.md 6).

kiln models take one input: a node test's further graph inputs (a Conv's W, a Gemm's B,
...) become initializers holding the test's data, as an exporter stores weights. Only
test_data_set_0 is used. A test of a supported operator that kiln refuses is listed with
kiln's reason; tests/onnx/conformance_expected.txt records which tests pass, and the test
fails when one of those no longer passes (run with --update to rewrite the list after a
deliberate change).

Usage: test_onnx_conformance.py KILN [--update] [--no-emu] [--only SUBSTRING]"""
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile
import shutil
import time

import numpy as np
import onnx
from onnx import numpy_helper

KILN = sys.argv[1]
UPDATE = "--update" in sys.argv
EMU = "--no-emu" not in sys.argv
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
DATA = os.environ.get("ONNX_NODE_TESTS", "/usr/share/libonnx-testdata/data/node")
HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "conformance_expected.txt")
TOL = {"cpu": 1e-5, "emu": 1e-5}  # fp32, DESIGN.md 6

if not os.path.isdir(DATA):
    print(f"no ONNX node tests at {DATA} (Debian package libonnx-testdata)")
    sys.exit(77)


# The operators kiln imports (kiln import --help).
SUPPORTED = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
             "Gemm", "MatMul", "Add", "Concat", "Flatten", "Reshape", "Squeeze", "Relu", "Clip", "Resize",
             "Upsample", "Softmax", "Identity", "Dropout", "Constant", "Shape", "Gather", "Unsqueeze", "Cast",
             "Slice", "Sub", "Mul", "Div", "HardSwish", "HardSigmoid", "Sigmoid", "Erf", "Gelu",
             "ReduceMean", "LayerNormalization", "Transpose", "Split", "ReduceMax", "Pad",
             "ReduceSum", "SpaceToDepth"}


def categorize(reason):
    rules = [("has element type", "dtype not f32"), ("sequence or optional", "sequence / optional types"), ("has rank", "input rank not 2, 3 or 4 (kiln: NCHW, [N, C, L] or [N, F])"),
             ("(rank 3, which kiln holds", "operator not mapped on a 1-D signal [N, C, L]"),
             ("(the node reads a 1-D signal", "refused on a 1-D signal for its own reason"),
             ("inputs (", "several data inputs"), ("kiln imports 2-D", "not 2-D (NCHW)"),
             ("attribute", "attribute value unsupported"), ("must be a constant", "data-dependent operand"),
             ("is a constant", "constant output or operand"), ("adds ", "broadcasting / constant operand"),
             ("reshapes", "reshape other than a flatten"), ("takes [N, features]", "linear input not 2-D"),
             ("no transposed", "ConvTranspose (no kiln op)"), ("scales", "resize scale not an integer"),
             ("padding must be at most", "pool padding over half the kernel"),
             ("is the model input", "output is the input"), ("opset", "opset below 9"),
             ("has no input", "no data input (all constants)"), ("only on constants", "Gather on activations"),
             ("bias C", "Gemm bias not one per feature"), ("output 1", "second output used (argmax, mask)"),
             ("batch axis", "squeezes the batch axis"), ("is not supported (FLOAT", "dtype not f32")]
    for key, cat in rules:
        if key in reason:
            return cat
    return "other"


def load_case(d):
    m = onnx.load(os.path.join(d, "model.onnx"))
    ds = os.path.join(d, "test_data_set_0")
    ins = [numpy_helper.to_array(onnx.load_tensor(f)) for f in sorted(glob.glob(ds + "/input_*.pb"),
                                                                       key=lambda p: int(p.split("_")[-1][:-3]))]
    outs = [numpy_helper.to_array(onnx.load_tensor(f)) for f in sorted(glob.glob(ds + "/output_*.pb"),
                                                                        key=lambda p: int(p.split("_")[-1][:-3]))]
    return m, ins, outs


def run(args):
    p = subprocess.run([KILN, *args], capture_output=True, text=True)
    return p.returncode, p.stderr.strip()


def rel(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    d = np.linalg.norm(a - b)
    return float(d / max(np.linalg.norm(b), 1e-30)) if np.isfinite(d) else float("inf")


def attempt(name, work):
    """(cpu, emu, reason): cpu/emu are 'pass', 'FAIL', 'refused' or '-'."""
    m = onnx.load(os.path.join(DATA, name, "model.onnx"))
    if any(not i.type.HasField("tensor_type") for i in list(m.graph.input) + list(m.graph.output)):
        return "refused", "-", "a graph input or output is a sequence or optional, not a tensor"
    m, ins, outs = load_case(os.path.join(DATA, name))
    d = os.path.join(work, name)
    os.makedirs(d)
    inits = {i.name for i in m.graph.initializer}
    data_inputs = [i for i in m.graph.input if i.name not in inits]
    for vi, a in list(zip(data_inputs, ins))[1:]:  # further inputs become initializers
        m.graph.initializer.append(numpy_helper.from_array(a, vi.name))
    onnx.save(m, os.path.join(d, "model.onnx"))
    model = os.path.join(d, "model.onnx")
    x = ins[0] if ins else np.zeros(0, np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    rc, err = run(["run", model, "--input", os.path.join(d, "x.npy"), "--output", os.path.join(d, "y.npy")])
    if rc != 0:
        irc, ierr = run(["import", model, "-o", os.path.join(d, "m.json")])
        reason = (ierr if irc != 0 else err).splitlines()[0] if (ierr or err) else f"exit {rc}"
        reason = reason.replace(model + ": ", "").replace("kiln: error: ", "")
        return ("refused" if rc == 2 else "FAIL"), "-", reason
    want = outs[0]
    e = rel(np.load(os.path.join(d, "y.npy")), want)
    if e >= TOL["cpu"]:
        return "FAIL", "-", f"cpu relative error {e:.2e} >= {TOL['cpu']}"
    if not EMU:
        return "pass", "-", ""
    rc, err = run(["run", model, "--device", "emu", "--input", os.path.join(d, "x.npy"), "--output",
                   os.path.join(d, "ye.npy")])
    if rc != 0:
        return "pass", "FAIL", "emu: " + (err.splitlines()[0] if err else f"exit {rc}")
    e = rel(np.load(os.path.join(d, "ye.npy")), want)
    if e >= TOL["emu"]:
        return "pass", "FAIL", f"emu relative error {e:.2e} >= {TOL['emu']}"
    return "pass", "pass", ""


def main():
    t0 = time.time()
    names = sorted(n for n in os.listdir(DATA) if os.path.isfile(os.path.join(DATA, n, "model.onnx")) and ONLY in n)
    unsupported, attempted = {}, []
    for n in names:
        ops = {node.op_type for node in onnx.load(os.path.join(DATA, n, "model.onnx")).graph.node}
        missing = sorted(ops - SUPPORTED)
        if missing:
            for o in missing:
                unsupported[o] = unsupported.get(o, 0) + 1
        else:
            attempted.append((n, ",".join(sorted(ops))))
    work = tempfile.mkdtemp(prefix="kiln-onnx-conf-")
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            results = list(ex.map(lambda t: attempt(t[0], work), attempted))
    finally:
        shutil.rmtree(work, True)

    expected = {}
    if os.path.exists(EXPECTED):
        for line in open(EXPECTED):
            if line.strip() and not line.startswith("#"):
                k, v = line.split()
                expected[k] = v
    print(f"{'test':<52} {'op':<26} {'cpu':<8} {'emu':<6} reason")
    failures, newly, cats = [], [], {}
    passed = 0
    for (n, ops), (cpu, emu, reason) in zip(attempted, results):
        print(f"{n:<52} {ops[:26]:<26} {cpu:<8} {emu:<6} {reason}")
        ok = cpu == "pass" and emu in ("pass", "-")
        passed += ok
        if cpu == "FAIL" or emu == "FAIL":
            failures.append(f"{n}: {reason}")
        if cpu == "refused":
            c = categorize(reason)
            cats[c] = cats.get(c, 0) + 1
        if expected.get(n) == "pass" and not ok and not UPDATE:
            failures.append(f"{n} passed before and now does not: {reason}")
        if ok and expected.get(n) != "pass":
            newly.append(n)
    attempted_names = {n for n, _ in attempted}
    for n, v in expected.items():
        if v == "pass" and n not in attempted_names and not ONLY and not UPDATE:
            failures.append(f"{n} passed before and is no longer attempted (missing or its operators dropped)")
    print(f"\nattempted {len(attempted)} node tests (every test whose operators kiln imports), "
          f"passed {passed}/{len(attempted)} on cpu{' and emu' if EMU else ''} "
          f"(tolerance: relative L2 norm < {TOL['cpu']:g})")
    print("refused, by reason: " + "; ".join(f"{c}: {k}" for c, k in sorted(cats.items(), key=lambda t: -t[1])))
    print(f"not attempted: {len(names) - len(attempted)} tests using operators kiln does not import ("
          + ", ".join(f"{o} {k}" for o, k in sorted(unsupported.items())) + ")")
    print(f"time {time.time() - t0:.1f} s")
    if UPDATE and not ONLY:
        with open(EXPECTED, "w") as f:
            f.write("# ONNX node tests and whether kiln passes them (test_onnx_conformance.py --update)\n")
            for (n, _), (cpu, emu, _) in zip(attempted, results):
                f.write(f"{n} {'pass' if cpu == 'pass' and emu in ('pass', '-') else 'refused'}\n")
        print(f"wrote {EXPECTED}")
    elif newly:
        print("newly passing (run with --update to record): " + ", ".join(newly))
    if failures:
        print("\n".join(["FAILURES:"] + failures), file=sys.stderr)
        sys.exit(1)
    print("ok")


main()
