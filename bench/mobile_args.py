"""bench/mobile_nets.py's command line: its help (what it runs, in what order, what it
writes) and its options."""
import argparse

MODELS = ("mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0")

HELP = """Mobile CNNs through kiln's ONNX import against PyTorch (issue 19): mobilenet_v2,
mobilenet_v3_small, mobilenet_v3_large and efficientnet_b0 at batch 1 and 256 in f16, kiln
against PyTorch eager (channels_last), torch.compile and ONNX Runtime's CUDA provider (where
importable), all in the same run on the same weights and input.

What it does, per model (bench/mobile_models.py: torchvision's structure in plain torch.nn,
checked against torchvision there; seeded weights with BN statistics measured on seeded images)
  1. prepare (on the CPU, --jobs models at a time, each in a child process of this script):
     build the model in f32, torch.onnx.export(..., dynamo=False) (TorchScript exporter, opset
     17, batch axis symbolic, BatchNormalization folded into the convs), state_dict saved
     beside it so PyTorch runs the very weights kiln reads. Without the onnx package (the
     exporter wants it only to splice onnxscript functions, which these graphs have none of)
     the export goes ahead without it, and says so.
  2. kiln, untimed (as soon as a model's export is done, its batches one after another; up to
     --jobs models side by side): `kiln run MODEL.onnx --device DEVICE --gpu DESC --dtype DTYPE
     --input X_BATCH.npy -o Y.npy`: the output for the error check, and kiln's kernels
     generated and compiled into the kernel cache (its wall time is the row's setup_s).
  3. timed, one at a time on a quiet GPU, per model and batch:
       kiln             the same command with --bench RUNS (its CUDA-event median after 3
                        warm-up steps, kernels from the cache)
       pytorch eager    the model in DTYPE, channels_last, cudnn.benchmark, inference_mode, on
                        the same images (channels_last copy, untimed); CUDA events, --warmup
                        steps, median of RUNS (common.torch_time)
       onnxruntime      MODEL.onnx (exported again from the DTYPE model where DTYPE is not f32)
                        on CUDAExecutionProvider with I/O bound to the GPU tensors; host clock
                        around each synchronised run; only where onnxruntime imports and has the
                        provider (else a skipped row saying which)
  4. torch.compile (--compile-mode, dynamic=False, dynamo reset before each; after every eager
     row, so a budget cut loses only these; the largest batch first, model by model: the
     throughput figure before batch 1's), within --compile-budget seconds of compiling: the
     first call's time (compilation) is setup_s, then timed like eager. At batch 1 PyTorch
     eager and the default mode are launch-bound while kiln replays a CUDA graph;
     --compile-mode reduce-overhead gives PyTorch CUDA graphs too. A compile is not started
     once the budget is spent, nor when the last one's time would overrun what is left.
  Error: every output (kiln's, eager DTYPE's, compile's, ORT's) against PyTorch f32 on the same
  device (TF32 off), relative L2, float64. kiln's row passes (else status 'wrong') within
  err_bound = max(--tol (1e-2, DESIGN's f16 bound), 2 x PyTorch's own DTYPE error) (PyTorch's
  f16 error on these weights is 4e-4 to 1.6e-3 on the CPU, mobile_models.randomize). In a dry
  run PyTorch's DTYPE error comes from one untimed CPU pass in DTYPE.
  Ratios: peer_over_kiln = peer median / kiln median (> 1: kiln faster), on each peer row.

Outputs (rewritten after every row, so a run cut at a time limit keeps what finished)
  OUT.csv   first row '#', kiln version, device, descriptor, settings; then one row per model x
            batch x method: model, batch, image, dtype, method, variant, status (ok | wrong
            (kiln's output over err_bound) | error | oom | timeout | skipped), median_ms,
            min_ms, max_ms, images_per_s, peer_over_kiln, rel_err (vs PyTorch f32),
            err_bound and pytorch_dtype_err (kiln's rows: its pass bound, and PyTorch's own
            error in DTYPE it is made from), setup_s (kiln: the untimed first run, generate +
            compile + run, short where the kernel cache already holds the kernels; compile:
            compilation; ORT: session creation), params, error (the reason, for every status
            but ok)
  OUT.md    the same as one table per batch with the ratios, then every failure with its reason

Times and budgets (an H100/H200 with 16 cores, estimated: see gpu_session.sh's `mobile` part)
  --budget S: no timed group (step 3) starts after S seconds since the start, and no compile
  (step 4) that the last compile's time says would end after S; --compile-budget S caps the
  compiling in all the same way; skipped rows say which. --no-compile skips step 4.

Without a GPU (a dry run of every code path but CUDA timing): --device emu runs kiln's
generated kernels on the CPU emulator (--device cpu: the reference ops), PyTorch runs on the CPU
in f32 (its DTYPE rows say so), ORT on CPUExecutionProvider, host clock everywhere; the
timings are meaningless. E.g. (3 minutes on 2 shared cores; bench/results/
mobile_nets_emu_dry_run.md is one, with inductor):
  python3 bench/mobile_nets.py build/generator/kiln --device emu --image 32 --batches 1,2 \\
      --runs 2 --warmup 1 --compile-backend eager --out /tmp/mobile_dry
On the GPU (the bundle's bin/kiln; defaults: all four models, batch 1 and 256, f16, 224x224):
  python3 bench/mobile_nets.py bin/kiln --out OUT/mobile_nets     (or: gpu_session.sh ... mobile)

usage: bench/mobile_nets.py KILN [--models all|NAME,...] [--batches 1,256] [--image 224]
           [--dtype f16] [--runs 20] [--warmup 10] [--device gpu|emu|cpu] [--gpu auto|DESC]
           [--no-compile] [--compile-mode default] [--compile-backend inductor]
           [--compile-budget 120] [--budget 0] [--ort auto|off] [--jobs N] [--tol 1e-2]
           [--kiln-timeout 300] [--out bench/results/mobile_nets] [--keep]
"""


def parser():
    ap = argparse.ArgumentParser(description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kiln", nargs="?", help="the kiln binary (bin/kiln of the bundle, build/generator/kiln)")
    ap.add_argument("--models", default="all", help=f"all or comma-separated: {', '.join(MODELS)}")
    ap.add_argument("--batches", default="1,256")
    ap.add_argument("--image", type=int, default=224, help="input side (default 224)")
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16", "f32"], help="kiln's and PyTorch's (default f16)")
    ap.add_argument("--runs", type=int, default=20, help="timed steps per measurement, median reported (default 20)")
    ap.add_argument("--warmup", type=int, default=10, help="PyTorch and ORT warm-up steps (kiln: its own 3)")
    ap.add_argument("--device", default="gpu", choices=["gpu", "emu", "cpu"],
                    help="kiln's backend; emu and cpu are dry runs with PyTorch on the CPU in f32")
    ap.add_argument("--gpu", default="auto", help="kiln-gpu/1 descriptor; auto: kiln gpu detect on --device gpu, "
                    "h200 elsewhere")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode (default, max-autotune, ...)")
    ap.add_argument("--compile-backend", default="inductor", help="torch.compile backend (inductor; eager or "
                    "aot_eager to check the path quickly in a dry run)")
    ap.add_argument("--compile-budget", type=float, default=120,
                    help="seconds of compiling allowed in all (default 120); 0: none")
    ap.add_argument("--budget", type=float, default=0, help="no timed group starts after this many seconds "
                    "since the start (0: no limit)")
    ap.add_argument("--ort", default="auto", choices=["auto", "off"], help="ONNX Runtime where importable")
    ap.add_argument("--jobs", type=int, default=0, help="models prepared side by side (default: cores / 4)")
    ap.add_argument("--tol", type=float, default=1e-2, help="kiln's output error bound against PyTorch f32")
    ap.add_argument("--seed", type=int, default=0, help="weights' seed")
    ap.add_argument("--kiln-timeout", type=float, default=300, help="seconds for one kiln command or export")
    ap.add_argument("--out", default="bench/results/mobile_nets", help="OUT.csv and OUT.md")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (ONNX files, inputs, outputs)")
    ap.add_argument("--export-one", help=argparse.SUPPRESS)
    ap.add_argument("--scratch", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    return ap
