#!/usr/bin/env python3
"""Mobile CNNs through kiln's ONNX import against PyTorch (issue 19): mobilenet_v2,
mobilenet_v3_small, mobilenet_v3_large and efficientnet_b0 at batch 1 and 256 in f16, kiln
against PyTorch eager (channels_last), torch.compile and ONNX Runtime's CUDA provider (where
importable), all in the same run on the same weights and input.

The full help: `python3 bench/mobile_nets.py --help` (bench/mobile_args.py)."""
import concurrent.futures
import os
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
import mobile_args  # noqa: E402
import mobile_report  # noqa: E402
from mobile_export import export_one, onnx_export  # noqa: E402

from mobile_args import MODELS  # noqa: E402
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:6.1f} s] {msg}", flush=True)


class Run:
    def __init__(self, a):
        self.a = a
        self.session = common.Session("mobile_nets.py", a)
        self.dir = self.session.inputs.dir
        self.rows = []
        self.notes = []
        self.torch = None
        self.torch_why = None
        self.tdev = "cpu"
        self.kiln_out = {}   # (model, batch) -> (npy path or None, row for kiln's untimed run)
        self.refs = {}       # (model, batch) -> PyTorch f32 output (float64 numpy)
        self.compile_spent = 0.0
        self.last_compile = 0.0
        self.meta = []

    # --- bookkeeping -----------------------------------------------------------------------
    def row(self, model, batch, method, r, variant=""):
        r = dict(r, model=model, batch=batch, image=self.a.image, method=method, variant=variant)
        r.setdefault("dtype", self.a.dtype)
        if r.get("status") == "ok" and r.get("median_ms"):
            r["images_per_s"] = f"{batch * 1000.0 / r['median_ms']:.1f}"
        self.rows.append(r)
        self.ratios()
        ms = common.fmt(r.get("median_ms"), 3)
        extra = " ".join(x for x in (f"{ms} ms" if ms else "", f"err {r['rel_err']}" if r.get("rel_err") else "",
                                     f"setup {r['setup_s']} s" if r.get("setup_s") else "",
                                     r.get("error", "")) if x)
        log(f"{model} b{batch} {method}{' (' + variant + ')' if variant else ''}: {r['status']} {extra}")
        self.write()
        return r

    def ratios(self):
        mobile_report.add_ratios(self.rows)

    def write(self):
        mobile_report.write_csv(self.a.out, self.meta, self.rows)
        mobile_report.write_md(self.a, self.meta, self.notes, self.rows, self.batches, self.models)

    def over_budget(self):
        return self.a.budget > 0 and time.time() - T0 > self.a.budget

    # --- set-up ------------------------------------------------------------------------------
    def start(self):
        a = self.a
        self.models = [m.strip() for m in a.models.split(",")] if a.models != "all" else list(MODELS)
        for m in self.models:
            if m not in MODELS:
                sys.exit(f"mobile_nets.py: unknown model {m!r} (known: {', '.join(MODELS)})")
        try:
            self.batches = [int(b) for b in a.batches.split(",")]
            assert all(b > 0 for b in self.batches)
        except (ValueError, AssertionError):
            sys.exit(f"mobile_nets.py: --batches {a.batches}: expected positive integers, e.g. 1,256")
        try:
            import torch
            self.torch = torch
        except ImportError as e:
            sys.exit(f"mobile_nets.py: needs PyTorch ({e}): it exports the models and runs the peers")
        if a.device == "gpu":
            if not torch.cuda.is_available():
                sys.exit("mobile_nets.py: --device gpu but PyTorch sees no CUDA device "
                         "(--device emu|cpu for a dry run)")
            self.tdev = "cuda"
            self.tdtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
        else:
            self.tdtype = torch.float32
        self.kdtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
        self.tname = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}[self.tdtype]
        if a.device != "gpu":
            self.notes.append(f"--device {a.device}: a dry run; PyTorch on the CPU in f32 (its rows' dtype), "
                              "host clock everywhere, the times mean nothing")
        self.meta = [f"kiln {self.session.version}", f"device {self.session.device_name}",
                     "descriptor " + ("gpu detect" if os.path.isfile(self.session.descriptor)
                                      else self.session.descriptor),
                     f"torch {torch.__version__}", f"kiln --dtype {a.dtype}, PyTorch {self.tname}",
                     f"image {a.image}", f"runs {a.runs} (warm-up {a.warmup})",
                     "peer_over_kiln: peer median over kiln's (> 1: kiln faster)"]
        log(f"kiln {self.session.version}; device {self.session.device_name}; descriptor {self.session.descriptor}; "
            f"torch {torch.__version__}; models {','.join(self.models)}; batches {a.batches}; {a.dtype}; "
            f"image {a.image}; scratch {self.dir}")
        self.x = {b: self.session.inputs.image((b, 3, a.image, a.image)) for b in self.batches}

    # --- step 1 and 2: exports and kiln's untimed runs, side by side ---------------------------
    def prepare(self):
        a = self.a
        jobs = a.jobs or max(1, min(len(self.models), (os.cpu_count() or 2) // 4))
        threads = max(1, (os.cpu_count() or 2) // jobs)
        log(f"prepare: export and kiln's first (untimed) run, {jobs} model(s) at a time")

        def one(model):
            t = time.time()
            cmd = [sys.executable, os.path.abspath(__file__), "--export-one", model, "--image", str(a.image),
                   "--seed", str(a.seed), "--scratch", self.dir, "--threads", str(threads)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.kiln_timeout)
                ok, why = p.returncode == 0, common.last_line(p)
            except subprocess.TimeoutExpired:
                ok, why = False, f"export over {a.kiln_timeout} s"
            if not ok:
                log(f"{model}: export FAILED: {why}")
                return model, f"export failed: {why}"
            log(p.stdout.strip().splitlines()[-1])
            if "onnx package missing" in p.stdout:
                self.note_once("the onnx package is missing here: exported without its onnxscript-function pass "
                               "(none needed for these graphs)")
            for b in self.batches:
                y = os.path.join(self.dir, f"y_kiln_{model}_{b}.npy")
                t1 = time.time()
                r = self.session.kiln("run", self.onnx(model), "--device", a.device, "--gpu", self.session.descriptor,
                                      "--dtype", a.dtype, "--input", self.x[b], "-o", y, timeout=a.kiln_timeout)
                dt = time.time() - t1
                if r.returncode == 0:
                    self.kiln_out[(model, b)] = (y, f"{dt:.1f}", "")
                    log(f"{model} b{b}: kiln first run (generate, compile, run) ok in {dt:.1f} s")
                else:
                    self.kiln_out[(model, b)] = (None, f"{dt:.1f}", f"kiln run: {common.last_line(r)}")
                    log(f"{model} b{b}: kiln first run FAILED in {dt:.1f} s: {common.last_line(r)}")
            return model, f"prepared in {time.time() - t:.1f} s"

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            self.exported = dict(pool.map(one, self.models))

    def note_once(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def onnx(self, model):
        return os.path.join(self.dir, model + ".onnx")

    # --- PyTorch -------------------------------------------------------------------------------
    def net(self, model, dtype):
        import mobile_models
        torch = self.torch
        m = mobile_models.MODELS[model]()
        m.load_state_dict(torch.load(os.path.join(self.dir, model + ".pt"), map_location="cpu"))
        m = m.eval().to(self.tdev, dtype)
        return m.to(memory_format=torch.channels_last) if self.tdev == "cuda" else m

    def input(self, batch, dtype):
        torch = self.torch
        x = torch.from_numpy(np.load(self.x[batch])).to(self.tdev, dtype)
        return x.contiguous(memory_format=torch.channels_last) if self.tdev == "cuda" else x

    def reference(self, model, batch):
        """PyTorch f32 on the torch device, TF32 off: the output every error is measured against."""
        torch = self.torch
        key = (model, batch)
        if key not in self.refs:
            tf32 = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
            torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
            try:
                with torch.inference_mode():
                    y = self.net(model, torch.float32)(self.input(batch, torch.float32))
                    self.refs[key] = y.double().cpu().numpy()
            finally:
                torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
        return self.refs[key]

    def err(self, model, batch, y):
        ref = self.reference(model, batch)
        y = np.asarray(y, dtype=np.float64)
        if y.shape != ref.shape:
            return f"shape {list(y.shape)} != {list(ref.shape)}"
        if not np.all(np.isfinite(y)):
            return "non-finite"
        return f"{np.linalg.norm(y - ref) / np.linalg.norm(ref):.2e}"

    def time_step(self, step):
        """CUDA events on the GPU (common.torch_time), the host clock on the CPU."""
        if self.tdev == "cuda":
            return common.torch_time(step, self.a.runs, warmup=self.a.warmup)
        for _ in range(self.a.warmup):
            step()
        ms = []
        for _ in range(self.a.runs):
            t = time.perf_counter()
            step()
            ms.append((time.perf_counter() - t) * 1e3)
        return {"status": "ok", "median_ms": float(np.median(ms)), "min_ms": min(ms), "max_ms": max(ms), "error": ""}

    def sync(self):
        if self.tdev == "cuda":
            self.torch.cuda.synchronize()

    def free(self):
        if self.tdev == "cuda":
            self.torch.cuda.empty_cache()

    # --- step 3: timed ---------------------------------------------------------------------
    def timed(self):
        a = self.a
        torch = self.torch
        torch.backends.cudnn.benchmark = True
        tdt = self.tname
        for model in self.models:
            for batch in self.batches:
                if self.over_budget():
                    for m in ("kiln", "pytorch eager", "onnxruntime"):   # compile's rows: compiled()
                        self.row(model, batch, m, {"status": "skipped", "error": f"--budget {a.budget:g} s spent"})
                    continue
                log(f"== {model} batch {batch}")
                self.kiln_row(model, batch)
                self.eager_row(model, batch, tdt)
                self.ort_row(model, batch, tdt)
                self.free()

    def kiln_row(self, model, batch):
        a = self.a
        y, setup, why = self.kiln_out.get((model, batch), (None, "", self.exported.get(model, "not prepared")))
        if y is None:
            return self.row(model, batch, "kiln", {"status": "error", "error": why, "setup_s": setup})
        r = common.kiln_run(a.kiln, self.onnx(model), ["--gpu", self.session.descriptor, "--dtype", a.dtype,
                                                        "--input", self.x[batch]], a.runs, a.device, a.kiln_timeout)
        try:
            r["rel_err"] = self.err(model, batch, np.load(y))
        except Exception as e:  # noqa: BLE001 (a failing reference is a row, not the end)
            r["error"] = (r.get("error", "") + f"; error check failed: {common.failure(e)['error']}").lstrip("; ")
        self.row(model, batch, "kiln", dict(r, setup_s=setup), variant=f"ONNX import, --kernels kiln, {a.device}")

    def eager_row(self, model, batch, tdt):
        torch = self.torch
        variant = "channels_last, cudnn.benchmark" if self.tdev == "cuda" else "cpu, NCHW"
        if self.exported.get(model, "").startswith("export failed"):
            return self.row(model, batch, "pytorch eager", {"status": "error", "error": self.exported[model]})
        net = x = None
        try:
            net, x = self.net(model, self.tdtype), self.input(batch, self.tdtype)
            with torch.inference_mode():
                y = net(x)
            err = self.err(model, batch, y.float().cpu().numpy())

            def step():
                with torch.inference_mode():
                    net(x)
            r = dict(self.time_step(step), rel_err=err)
            r["params"] = sum(p.numel() for p in net.parameters())
        except Exception as e:  # noqa: BLE001
            r = common.failure(e)
        del net, x
        self.row(model, batch, "pytorch eager", dict(r, dtype=tdt), variant=variant)
        self.judge(model, batch, r.get("rel_err") if self.tdtype == self.kdtype else self.cpu_dtype_err(model, batch))

    def cpu_dtype_err(self, model, batch):
        """PyTorch's own error in kiln's dtype where its rows run in another (a dry run on the
        CPU): one untimed pass in that dtype on the CPU, None where the CPU lacks it."""
        torch = self.torch
        try:
            with torch.inference_mode():
                y = self.net(model, self.kdtype)(self.input(batch, self.kdtype))
                return self.err(model, batch, y.float().numpy())
        except Exception as e:  # noqa: BLE001
            log(f"{model} b{batch}: no PyTorch {self.a.dtype} output on the CPU for the error bound "
                f"({common.failure(e)['error']})")
            return None

    def judge(self, model, batch, peer_err):
        """kiln's row passes when its error is within max(--tol, 2 x PyTorch's own error in the
        same dtype)."""
        k = next((r for r in self.rows if r["model"] == model and r["batch"] == batch and r["method"] == "kiln"), None)
        if not k:
            return
        k["pytorch_dtype_err"] = peer_err or ""
        if not k.get("rel_err"):
            return self.write()
        try:
            bound = max(self.a.tol, 2 * float(peer_err)) if peer_err else self.a.tol
            basis = (f"max(--tol {self.a.tol}, 2 x PyTorch {self.a.dtype}'s {peer_err})" if peer_err
                     else f"--tol {self.a.tol}")
            k["err_bound"] = f"{bound:.2e}"
            if not (k["rel_err"][0].isdigit() and float(k["rel_err"]) <= bound):
                k["error"] = (k.get("error", "") + f"; output error {k['rel_err']} over {basis}").lstrip("; ")
                if k["status"] == "ok":
                    k["status"] = "wrong"
                log(f"{model} b{batch} kiln: output error {k['rel_err']} over {basis}: status wrong")
            self.write()
        except ValueError:
            pass

    def ort_row(self, model, batch, tdt):
        a = self.a
        torch = self.torch
        if a.ort == "off":
            return self.row(model, batch, "onnxruntime", {"status": "skipped", "error": "--ort off"})
        try:
            import onnxruntime as ort
        except ImportError as e:
            return self.row(model, batch, "onnxruntime",
                            {"status": "skipped", "error": f"onnxruntime not importable ({e})"})
        provider = "CUDAExecutionProvider" if self.tdev == "cuda" else "CPUExecutionProvider"
        if provider not in ort.get_available_providers():
            why = f"onnxruntime {ort.__version__} has no {provider} (has {', '.join(ort.get_available_providers())})"
            return self.row(model, batch, "onnxruntime", {"status": "skipped", "error": why})
        variant = f"{provider}, onnxruntime {ort.__version__}, host clock"
        try:
            path = self.onnx(model)
            if self.tdtype != torch.float32:   # an ONNX graph in the peer's own dtype
                path = os.path.join(self.dir, f"{model}_{tdt}.onnx")
                if not os.path.exists(path):
                    onnx_export(self.net(model, self.tdtype), self.input(1, self.tdtype).contiguous(), path)
            t = time.time()
            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(path, opts, providers=[provider])
            setup = f"{time.time() - t:.1f}"
            x = self.input(batch, self.tdtype).contiguous()   # ONNX graphs take NCHW
            if self.tdev == "cuda":
                binding = sess.io_binding()
                binding.bind_input("x", "cuda", 0, {torch.float16: np.float16, torch.float32: np.float32}[self.tdtype],
                                   list(x.shape), x.data_ptr())
                binding.bind_output("logits", "cuda", 0)

                def step():
                    sess.run_with_iobinding(binding)
                    torch.cuda.synchronize()
                step()
                y = binding.copy_outputs_to_cpu()[0]
            else:
                feed = {"x": x.numpy()}

                def step():
                    sess.run(None, feed)
                y = sess.run(None, feed)[0]
            err = self.err(model, batch, y)
            r = {"status": "ok", "error": ""}
            for _ in range(a.warmup):
                step()
            ms = []
            for _ in range(a.runs):
                t = time.perf_counter()
                step()
                ms.append((time.perf_counter() - t) * 1e3)
            r.update(median_ms=float(np.median(ms)), min_ms=min(ms), max_ms=max(ms), rel_err=err, setup_s=setup)
        except Exception as e:  # noqa: BLE001
            r = common.failure(e)
        self.row(model, batch, "onnxruntime", dict(r, dtype=tdt), variant=variant)

    # --- step 4: torch.compile ---------------------------------------------------------------
    def compiled(self):
        a = self.a
        torch = self.torch
        tdt = self.tname
        variant = f"torch.compile mode={a.compile_mode} backend={a.compile_backend}" + \
            (", channels_last" if self.tdev == "cuda" else "")
        for batch, model in [(b, m) for b in sorted(self.batches, reverse=True) for m in self.models]:
            left, limit = a.compile_budget - self.compile_spent, f"--compile-budget {a.compile_budget:g} s"
            if a.budget > 0 and a.budget - (time.time() - T0) < left:
                left, limit = a.budget - (time.time() - T0), f"--budget {a.budget:g} s"
            why = ("--no-compile" if a.no_compile else
                   self.exported[model] if self.exported.get(model, "").startswith("export failed") else
                   f"{limit} would be overrun ({self.compile_spent:.0f} s compiling so far, the last compile "
                   f"{self.last_compile:.0f} s, {max(left, 0):.0f} s left)" if left <= 0 or self.last_compile > left
                   else None)
            if why:
                self.row(model, batch, "pytorch compile", {"status": "skipped", "error": why, "dtype": tdt},
                         variant=variant)
                continue
            log(f"== {model} batch {batch}: torch.compile ({left:.0f} s of compile budget left)")
            net = None
            try:
                torch._dynamo.reset()
                net = torch.compile(self.net(model, self.tdtype), mode=a.compile_mode, backend=a.compile_backend,
                                    dynamic=False)
                x = self.input(batch, self.tdtype)
                t = time.time()
                with torch.inference_mode():
                    y = net(x)
                self.sync()
                self.last_compile = time.time() - t
                self.compile_spent += self.last_compile
                err = self.err(model, batch, y.float().cpu().numpy())

                def step():
                    with torch.inference_mode():
                        net(x)
                r = dict(self.time_step(step), rel_err=err, setup_s=f"{self.last_compile:.1f}")
            except Exception as e:  # noqa: BLE001
                r = common.failure(e)
            del net
            self.row(model, batch, "pytorch compile", dict(r, dtype=tdt), variant=variant)
            self.free()

    def summary(self):
        ok = [r for r in self.rows if r["method"] == "kiln" and r["status"] == "ok"]
        log(f"done: {len(ok)} of {len(self.models) * len(self.batches)} kiln rows ok; "
            f"{sum(r['status'] != 'ok' for r in self.rows)} rows not ok (reasons in {self.a.out}.md)")
        for r in self.rows:
            if r["method"] != "kiln" and r.get("peer_over_kiln"):
                print(f"  {r['model']:20} b{r['batch']:<4} {r['method']:16} {r['peer_over_kiln']}x kiln's speed")


def main():
    ap = mobile_args.parser()
    a = ap.parse_args()
    if a.export_one:
        return export_one(a.export_one, a.image, a.seed, a.scratch, a.threads)
    if not a.kiln:
        ap.error("KILN (the kiln binary) is required")
    if a.runs < 1 or a.warmup < 0 or a.image < 8:
        ap.error("--runs >= 1, --warmup >= 0, --image >= 8")
    if a.no_compile:
        a.compile_budget = 0

    def stop(sig, frame):
        raise SystemExit(f"mobile_nets.py: signal {sig}: stopped; {a.out}.csv/.md hold every row finished")
    signal.signal(signal.SIGTERM, stop)
    run = Run(a)
    run.start()
    run.write()
    run.prepare()
    run.timed()
    run.compiled()
    run.summary()
    log(f"wrote {a.out}.csv and {a.out}.md")


if __name__ == "__main__":
    main()
