"""Shared by the GPU benchmarks: run kiln (`kiln run --device gpu --bench N`) and parse its
report, time a PyTorch step with CUDA events, write the CSV (GPU and kiln version named in
its first row) and a plot. DESIGN.md 9: warm-up, medians, the peer in the same run."""
import atexit
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def human(text):
    """'12.5 MiB' -> bytes."""
    n, unit = text.split()
    return int(float(n) * UNITS[unit])


def kiln_version(kiln):
    return subprocess.run([kiln, "--version"], capture_output=True, text=True).stdout.split()[1]


def setup(script, args):
    """What a benchmark script does first: its scratch inputs (removed at exit unless
    --keep), the warning that only --device gpu times anything, and kiln's version."""
    inputs = Inputs()
    if not args.keep:
        atexit.register(shutil.rmtree, inputs.dir, True)
    if args.device != "gpu":
        where = "CPU emulator" if args.device == "emu" else "CPU reference"
        print(f"--device {args.device}: kiln's kernels run on the {where} under the host clock; the timings "
              "below are meaningless (this run checks the driver, not performance)")
    try:
        return inputs, kiln_version(args.kiln)
    except (OSError, IndexError) as e:
        sys.exit(f"{script}: cannot run {args.kiln} --version: {e}")


class Session:
    """The set-up every kiln-against-peers benchmark shares (setup() above), then the kiln-gpu/1
    descriptor its kernels and predictions are made for (--gpu; auto: the live GPU on --device
    gpu, h200 elsewhere), the name of the device the times come from, and why PyTorch cannot
    run the peers here (None when it can). args: kiln, device, gpu, keep."""

    def __init__(self, script, args):
        self.script = script
        self.args = args
        self.inputs, self.version = setup(script, args)
        self.descriptor = self._descriptor()
        self.device_name = live_gpu_name() if args.device == "gpu" else f"{args.device} (no GPU)"
        self.no_torch = torch_unavailable(args.device)

    def kiln(self, *args, timeout=1800):
        return run_kiln(self.args.kiln, *args, timeout=timeout)

    def kiln_json(self, *args):
        """`kiln ... --json` -> (object, error)."""
        p = self.kiln(*args, "--json")
        if p.returncode != 0:
            return None, last_line(p)
        try:
            return json.loads(p.stdout), ""
        except ValueError as e:
            return None, f"kiln {args[0]} --json printed no JSON: {e}"

    def generate(self, model, out_dir, *args):
        """`kiln generate` for the descriptor -> (manifest, error)."""
        p = self.kiln("generate", model, "--gpu", self.descriptor, "-o", out_dir, *args)
        if p.returncode != 0:
            return None, "kiln generate: " + last_line(p)
        with open(os.path.join(out_dir, "manifest.json")) as f:
            return json.load(f), ""

    def _descriptor(self):
        if self.args.gpu != "auto":
            return self.args.gpu
        if self.args.device != "gpu":
            return "h200"
        path = self.inputs.scratch("gpu.json")
        p = self.kiln("gpu", "detect", "-o", path)
        if p.returncode == 0:
            return path
        print(f"kiln gpu detect failed ({last_line(p)}): using the h200 descriptor")
        return "h200"


def live_gpu_name():
    try:
        return gpu_name()
    except OSError:  # no PyTorch and no nvidia-smi
        return "unknown GPU"


def torch_unavailable(device):
    """None when the PyTorch peers can run, else why not."""
    if device != "gpu":
        return f"--device {device}: the PyTorch peers run only on the GPU"
    try:
        import torch
    except ImportError:
        return "no PyTorch here"
    if not torch.cuda.is_available():
        return "PyTorch without CUDA here"
    return None


def failure(e):
    """A row's status and error for an exception a peer raised (out of memory or not)."""
    lines = [s for s in str(e).strip().splitlines() if s.strip()]
    msg = f"{type(e).__name__}: {lines[0] if lines else ''}"[:400]
    return {"status": "oom" if "out of memory" in str(e).lower() else "error", "error": msg}


def fmt(v, digits):
    """A number with `digits` decimals; blank for a missing one."""
    return "" if v in ("", None) else f"{v:.{digits}f}"


def write_model(path, name, shape, layers, dtype):
    """A kiln-model/1 file: `layers` on an input named x of `shape`."""
    with open(path, "w") as f:
        json.dump({"format": "kiln-model/1", "name": name, "input": {"name": "x", "shape": list(shape)},
                   "dtype": dtype, "layers": layers}, f)
    return path


def run_kiln(kiln, *args, timeout=1800, grace=60):
    """kiln's completed process. Past `timeout` it is sent SIGTERM, on which kiln bench and
    kiln tune finish the variant under way and save what they measured (exit 143); after
    `grace` more seconds it is killed (exit 124 and a message)."""
    p = subprocess.Popen([kiln, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.terminate()
        try:
            out, err = p.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            return subprocess.CompletedProcess(args, 124, "", f"timed out after {timeout} s")
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def last_line(p):
    """The line that says why a kiln run failed (or what it printed last)."""
    return (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or [f"exit {p.returncode}"])[-1]


def gpu_name():
    try:
        import torch
        return torch.cuda.get_device_name(0)
    except Exception:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
        return p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else "unknown GPU"


class Inputs:
    """Input and target .npy files per shape, in one temporary directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="kiln-bench-")
        self.files = {}

    def image(self, shape, dtype=np.float32):
        key = ("x", tuple(shape), np.dtype(dtype).str)
        if key not in self.files:
            p = os.path.join(self.dir, "x_" + "x".join(map(str, shape)) + ".npy")
            np.save(p, np.random.RandomState(0).standard_normal(shape).astype(dtype))
            self.files[key] = p
        return self.files[key]

    def target(self, batch, classes):
        key = ("t", batch, classes)
        if key not in self.files:
            p = os.path.join(self.dir, f"t_{batch}_{classes}.npy")
            np.save(p, np.random.RandomState(1).randint(0, classes, batch).astype(np.int64))
            self.files[key] = p
        return self.files[key]

    def scratch(self, name):
        return os.path.join(self.dir, name)


def kiln_run(kiln, model, args, runs, device="gpu", timeout=1800):
    """`kiln run MODEL --device gpu ... --bench RUNS`: {'status', 'median_ms', 'min_ms', 'max_ms',
    'arena_bytes', 'peak_bytes', 'error'}. Out of memory and refusals become a status. Another
    device (cpu) smoke-tests a benchmark where there is no GPU."""
    cmd = [kiln, "run", model, "--device", device, *map(str, args), "--bench", str(runs)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"over {timeout} s"}
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["?"])[-1]
        oom = "out of memory" in err.lower() or "cudaErrorMemoryAllocation" in err
        return {"status": "oom" if oom else "error", "error": err}
    out = p.stdout
    m = re.search(r"bench: median ([\d.]+) ms over \d+ runs \(min ([\d.]+), max ([\d.]+)\)", out)
    arena = re.search(r"device arena ([\d.]+ \w+)", out)
    peak = re.search(r"peak live activations ([\d.]+ \w+)", out)
    if not m:
        return {"status": "error", "error": "no bench line in: " + out[-300:]}
    return {"status": "ok", "median_ms": float(m[1]), "min_ms": float(m[2]), "max_ms": float(m[3]),
            "arena_bytes": human(arena[1]) if arena else "", "peak_bytes": human(peak[1]) if peak else "",
            "error": ""}


def torch_time(step, runs, warmup=3):
    """Times step() with CUDA events after warm-up; also the peak of allocated memory."""
    import torch
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    try:
        for _ in range(warmup):
            step()
        ms = []
        for _ in range(runs):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            b.record()
            b.synchronize()
            ms.append(a.elapsed_time(b))
    except torch.OutOfMemoryError as e:
        torch.cuda.empty_cache()
        return {"status": "oom", "error": str(e).splitlines()[0]}
    peak = torch.cuda.max_memory_allocated()
    torch.cuda.empty_cache()
    return {"status": "ok", "median_ms": float(np.median(ms)), "min_ms": min(ms), "max_ms": max(ms),
            "arena_bytes": peak, "peak_bytes": "", "error": ""}


def have_torch():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def write_csv(path, meta, columns, rows):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["#", *meta])
        w.writerow(columns)
        for r in rows:
            w.writerow([r.get(c, "") for c in columns])
    print(f"wrote {path}")


def plot(path, title, xlabel, ylabel, series, logy=True):
    """series: {label: [(x, y), ...]}; skipped quietly without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, pts in series.items():
        pts = [p for p in pts if p[1] not in ("", None)]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


def plot_panels(path, title, xlabel, ylabel, panels, logy=True, columns=3):
    """One figure of several panels. panels: [{'title', 'series': {label: [(x, y), ...]},
    'vlines': [(x, label, linestyle), ...], 'styles': {label: linestyle or {matplotlib line
    keyword: value}}, 'xticks': [x, ...]}] ('styles' and 'xticks' optional: solid lines in the
    default colours, automatic ticks otherwise); skipped quietly without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    if not panels:
        return
    cols = min(columns, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows), squeeze=False)
    for ax, p in zip(axes.flat, panels):
        for label, pts in p["series"].items():
            pts = [q for q in pts if q[1] not in ("", None)]
            if pts:
                style = p.get("styles", {}).get(label, "-")
                ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o", markersize=3, label=label,
                        **(style if isinstance(style, dict) else {"linestyle": style}))
        for x, label, style in p.get("vlines", []):
            ax.axvline(x, color="black", linestyle=style, linewidth=1, label=label)
        if "xticks" in p:
            ax.set_xticks(p["xticks"])
        ax.set_title(p["title"], fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if logy and any(q[1] not in ("", None) for pts in p["series"].values() for q in pts):
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
