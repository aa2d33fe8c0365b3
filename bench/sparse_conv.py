#!/usr/bin/env python3
"""kiln's activation-sparse convolutions against dense ones (issue point 7; DESIGN.md 5.4, 9).

What it measures
  1. Per layer: every distinct 3x3 stride-1 conv that reads a ReLU's output in densenet121,
     densenet201 (denselayerN.conv2, 128 -> 32 channels at 56, 28, 14, 7) and resnet152
     (bottleneck conv2, 64..512 channels at 56..7), shapes read from models/*.json and
     `kiln inspect --json`, run as a one-layer model relu -> conv at BATCH on an input whose
     ReLU output has exactly the wanted density (|N(0,1)| values, a seeded random set of
     them negated), at densities 10..90%:
       kiln sparse       `kiln run --sparse force`  (compaction fused into the relu, sparse conv)
       kiln dense        `kiln run --sparse off`    (kiln's dense kernels)
       kiln cudnn-only   `kiln run --kernels cudnn --sparse off` (cuDNN called by kiln; f32
                         with FMA math, TF32 off; f16 on tensor cores)
       pytorch cudnn f32 / tf32 / f16   the same relu + conv on the same input in this process
                         (cudnn.benchmark, allow_tf32 off / on, f16; the faster of NCHW and
                         channels_last, CUDA events after warm-up, median)
     and kiln's own prediction: `kiln generate` of the one-layer model with
     hints.activation_density = d and `--sparse auto` for the same descriptor (the manifest's
     dense_us, sparse_us, compaction_us, path and threshold). kiln's times cover its whole
     plan (layout conversions and the relu included); the predictions cover the conv (and the
     compaction) alone.
  2. Whole network: NETWORK (densenet121) inference at --network-batches (1, 32) on --image
     (224): kiln without the sparse family (`--sparse off`), with it as planned from a
     measured profile (`kiln profile` of the same input on the same device, then
     `--profile P`: the cost model dispatches where sparse is predicted to pay), with every
     post-ReLU conv forced sparse (`--sparse force`), kiln's cuDNN-only plan, and PyTorch
     eager (bench/torch_models.py, channels_last) where available. Images/s and ratios.
  Weights are seeded (dense timings do not depend on them; kiln's network densities do:
  --weights W.safetensors gives kiln the trained ones).

How to run it on a GPU machine (from the bundle: `make bundle` here writes
build/bundle/kiln-<version>-<arch>.tar.gz; copy it over; PyTorch with CUDA installed):
  tar xzf kiln-0.1.0-x86_64.tar.gz && cd kiln-0.1.0-x86_64
  python3 bench/sparse_conv.py bin/kiln --device gpu --gpu auto --out bench/results/sparse_conv
(--gpu auto: `kiln gpu detect` describes the live GPU and the kernels and predictions are
made for it). Add --layers small --densities 0.1,0.5,0.9 --skip-network for a quick look.
Here, without a GPU, --device emu runs kiln's generated kernels on the CPU emulator: the
driver is exercised, the timings mean nothing (CI: tests/integration/test_bench_sparse.py).

usage: bench/sparse_conv.py KILN [--device gpu|emu|cpu] [--gpu DESCRIPTOR|auto]
           [--layers all|small|TEXT,...] [--densities 0.1,...,0.9] [--batch 32] [--dtype f32]
           [--runs 50] [--network densenet121] [--network-batches 1,32] [--image 224]
           [--weights W] [--skip-layers] [--skip-network] [--out bench/results/sparse_conv]
--layers small: the two distinct shapes with the fewest MACs (densenet's 128 -> 32 convs at
14x14 and 7x7); TEXT: layers whose label, models or first layer name contain it.

Outputs (first CSV row: '#', kiln version, device and GPU name, descriptor, settings)
  OUT.csv, one row per layer x density x method:
    gpu            the device the times come from (GPU name, or emu/cpu)
    descriptor     the kiln-gpu/1 descriptor kernels and predictions were made for
    kiln_version, model (the models holding the shape), occurrences (model:count),
    layer          the first layer of that shape, as MODEL:NAME
    shape          input NxCxHxW -> output NxKxHxW, kernel, stride, padding
    dtype, batch, density (of the conv's input: the ReLU output)
    method, variant (the flags or the PyTorch memory format), status (ok | error | oom |
                   timeout | skipped), median_ms, min_ms, max_ms
    tflops         useful TFLOP/s: the dense conv's 2 * MACs over the median time
    gbps           the dense conv's input + output + weight bytes over the median time
    ratio_to_kiln_sparse   this method's time over kiln sparse's (> 1: kiln sparse faster)
    predicted_us   kiln's prediction for this method (sparse: sparse_us + compaction_us;
                   dense: dense_us); predicted_dense_us, predicted_sparse_us,
                   predicted_compaction_us: the manifest's three, on every kiln row
    predicted_path dense | dispatch | sparse: what `--sparse auto` plans at this density
    predicted_threshold  density up to which kiln's dispatch takes the sparse kernel (the
                   cost model's crossover; blank: it predicts no sparse win at any density run)
    measured_crossover   density where kiln sparse stops beating kiln dense, linearly
                   interpolated between the measured densities (blank: no such crossing)
    error          the last stderr line of a failing kiln command, or why a row was skipped
  OUT_network.csv, one row per batch x method: gpu, descriptor, kiln_version, model, image,
    dtype, batch, method, status, median_ms, min_ms, max_ms, images_per_s,
    vs_kiln_dense (kiln dense's time over this one: > 1 faster than kiln without the sparse
    family), vs_pytorch (PyTorch's time over this one: > 1 faster than PyTorch),
    mean_density (nonzero fraction over all conv inputs, from the profile), sparse_plan
    (the plan's sparse decisions: paths and counts), arena_bytes, error.
  OUT.png: time against density per layer and method; solid vertical line: the measured
    crossover, dashed: the predicted threshold (no plot without matplotlib).
"""
import argparse
import sys

import common
import sparse_layers
import sparse_network

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("kiln")
ap.add_argument("--device", default="gpu", choices=["gpu", "emu", "cpu"])
ap.add_argument("--gpu", default="auto", help="descriptor (a shipped name or a kiln-gpu/1 file); auto: the live GPU "
                "on --device gpu (kiln gpu detect), h200 elsewhere")
ap.add_argument("--layers", default="all", help="all, small, or comma-separated texts a layer's label, models or "
                "first name contains")
ap.add_argument("--densities", default="0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9")
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--network", default="densenet121", help="the whole-network model (a shipped name or a file)")
ap.add_argument("--network-batches", default="1,32")
ap.add_argument("--image", default="224", help="the whole network's image size, N or HxW")
ap.add_argument("--weights", help="the whole network's weights for kiln (.safetensors); default seeded")
ap.add_argument("--skip-layers", action="store_true")
ap.add_argument("--skip-network", action="store_true")
ap.add_argument("--out", default="bench/results/sparse_conv")
ap.add_argument("--keep", action="store_true", help="keep the temporary directory (models, inputs, manifests)")
a = ap.parse_args()
densities = sorted(float(d) for d in a.densities.split(","))
if any(not 0.0 <= d <= 1.0 for d in densities):
    sys.exit("sparse_conv.py: densities must lie in [0, 1]")
b = common.Session("sparse_conv.py", a)
b.densities = densities
probe, err = b.generate(common.write_model(b.inputs.scratch("probe.json"), "probe", [1, 8, 8, 8],
                                           [{"name": "relu", "op": "relu"},
                                            {"name": "conv", "op": "conv2d", "out_channels": 8, "kernel": 3,
                                             "padding": 1}], "f32"), b.inputs.scratch("probe"))
if probe is None:
    sys.exit(f"sparse_conv.py: {err}")
b.descriptor_id = probe["gpu"].get("identity", probe["gpu"]["name"])
print(f"kiln {b.version}; device {b.device_name}; descriptor {b.descriptor_id}")
if not a.skip_layers:
    sparse_layers.run(b)
if not a.skip_network:
    sparse_network.run(b)
