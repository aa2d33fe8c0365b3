"""Helpers for kiln's integration tests: run the CLI, write safetensors with NumPy."""
import atexit
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

KILN = os.environ.get("KILN") or sys.argv[1]
failures = []


def kiln(*args, expect=0):
    """Runs kiln; checks the exit code; returns (stdout, stderr)."""
    start = time.monotonic()
    p = subprocess.run([KILN, *map(str, args)], capture_output=True, text=True)
    # Each call's time in the test's log: what to look at when the suite grows slow.
    print(f"[{time.monotonic() - start:7.2f} s] kiln {' '.join(map(str, args))}"[:300], flush=True)
    if p.returncode != expect:
        fail(f"kiln {' '.join(map(str, args))}: exit {p.returncode}, expected {expect}\n"
             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p.stdout, p.stderr


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def check(cond, msg):
    if not cond:
        fail(msg)


def expect_error(args, *fragments, code=2):
    """kiln must fail with `code` and a `kiln: error:` line containing every fragment."""
    out, err = kiln(*args, expect=code)
    check(err.startswith("kiln: error: ") or code != 2, f"{args}: stderr does not start with 'kiln: error:': {err!r}")
    for f in fragments:
        check(f in err, f"{args}: stderr lacks {f!r}: {err!r}")
    return err


def write_safetensors(path, tensors, dtype="F32"):
    np_type = {"F32": "<f4", "F64": "<f8", "I64": "<i8"}[dtype]
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np_type)
        b = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        b, e = v["data_offsets"]
        raw = data[8 + n + b:8 + n + e]
        if v["dtype"] == "BF16":  # bfloat16 is float32's upper half
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, dtype={"F16": "<f2", "F32": "<f4", "F64": "<f8"}[v["dtype"]])
        out[name] = a.reshape(v["shape"])
    return out


def two_blocks(path, batch=2, image=96):
    """Writes a small VGG-like model (two conv blocks, then a classifier) whose leading
    segment tiles well: its receptive field is small against the image."""
    layers = []
    for block, width in ((0, 4), (1, 8)):
        for k in range(2):
            layers += [{"name": f"c{block}{k}", "op": "conv2d", "out_channels": width, "kernel": 3, "padding": 1},
                       {"name": f"r{block}{k}", "op": "relu"}]
        layers.append({"name": f"p{block}", "op": "maxpool2d", "kernel": 2})
    layers += [{"name": "ap", "op": "adaptive_avgpool2d", "output_size": 2}, {"name": "flatten", "op": "flatten"},
               {"name": "fc", "op": "linear", "out_features": 5}]
    with open(path, "w") as f:
        json.dump({"format": "kiln-model/1", "name": "two_blocks", "input": {"shape": [batch, 3, image, image]},
                   "layers": layers}, f)
    return path


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30))


def tmpdir():
    d = tempfile.mkdtemp(prefix="kiln-test-")
    atexit.register(shutil.rmtree, d, True)
    return d


def finish():
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("ok")
