#!/bin/bash
# A lent GPU session's run, prepared without a GPU (device time is 15 minutes a session, all
# tries together: each part has a time limit, the most telling first).
# usage, on the device, from the repository root with `make bundle`'s tarball in DIR:
#   bench/gpu_session.sh DIR OUT [PART...]      (OUT: $OUT under the run tool)
# PARTS (default, what the next session should see first: hopper im2col check bench_r50_256
# clusters_ab split_b1, about 620 s: more than one call may run, so in two calls, each after
# `mkdir -p /tmp/d && cp build/bundle/*.tar.gz /tmp/d/ &&`:
#   HOPPER_LIMIT=90 IM2COL_LIMIT=170 bash bench/gpu_session.sh /tmp/d $OUT hopper im2col (~260 s)
#   CHECK_LIMIT=110 BENCH_R50_256_LIMIT=200 CLUSTERS_AB_LIMIT=45 SPLIT_B1_LIMIT=150
#     bash bench/gpu_session.sh /tmp/d $OUT check bench_r50_256 clusters_ab split_b1  (~390 s)
# with timeout_s 590 each, the bundle carried as build/bundle.) With device time left, a third
# call: TRAIN_AB_LIMIT=65 TRAIN_PROF_LIMIT=40 ... train_ab train_prof: the chunked batchnorms
# now read 16-byte packs of channels, 4 rows in flight a thread (2026-11-28d, unmeasured;
# they took 4.1 ms of the 11.6 ms step in h200_2026-11-28b/train_prof_summary.txt), the
# stem's weight gradient on mma.sync GATHER tiles (1.01 ms there on CUDA cores) and the relu
# backwards fused into the batchnorms (2026-11-28c). The H200 runs of 2026-11-28
# (bench/results/h200_2026-11-28b) measured resnet50 f16 b256's convs at 0.963x cuDNN's speed
# as a per-layer geomean, the whole plan 1.07x the cuDNN-only plan (7.98 ms), the stem's
# _taps4_pp 1.80x cuDNN, the training step 11.6-12.2 ms (PyTorch eager 14.8); its 3x3 convs
# lose (0.72-0.89x), their pixel tiles computing 12-23% idle rows (t8x16 over 14x14: 256 rows
# of 196). im2col tiles (IM2COL: BM consecutive output pixels of all rows and images, each
# tap one im2col-mode TMA copy, as cuDNN's UTMALDG.IM2COL) have none; the emulator runs them,
# no GPU has yet (a first try ran the generator's variants before they set IM2COL: illegal
# instruction), so they are chosen only when measured. Split-K in the Hopper conv (SPLIT,
# templates/conv/hopper/split_reduce.cuh; 2026-11-28c) is priced and chosen, unmeasured: at
# batch 1 for layer4's convs and layer3's 1x1 C 1024 -> 256 on the h100 (4 layers on the h200),
# at batch 32 for the classifier; check (b1 added) runs them, split_b1 times them:
#   hopper: the Hopper family's instances against float64 on the GPU, the 6 im2col ones
#   (_I2C_: stride 1 and 2, a 3x1 filter striding 2 across, tf32, ping-pong, a cluster) among
#   them: the driver's cuTensorMapEncodeIm2col and the hardware's traversal against the
#   emulator's (limit HOPPER_LIMIT, default 90 s: 45 s did not reach them on the H200);
#   bench_r50_256 also measures the epilogue's first loads issued before the main loop
#   (prefetch_epilogue) and ping-pong's second half's first loads chained to the first's
#   (store_staged's next_g), both unmeasured: compare each layer with
#   h200_2026-11-28b/per_layer.txt;
#   im2col: resnet50 f16 b256's 3x3 convs at 56, 28, 14 and 7 and its strided 3x3 at 14: the
#   im2col tiles against each layer's pick and cuDNN (kiln bench --match ...; limit
#   IM2COL_LIMIT, default 170 s); a win is the reason to price them (kIm2colUnmeasured);
#   pp_flat: resnet50 f16 b256's 1x1 convs at 56, 28, 14 and 7 (layer1.0.conv3,
#   layer1.0.downsample.0, layer2.0.conv1, layer3.0.conv3, layer4.1.conv1) and layer3.0's
#   downsample, the flat ping-pong tiles of BN 64 and 128 and the flat or row tiles of BN 256
#   chosen before, beside each layer's pick and cuDNN (kiln bench --match
#   flat_bn64_s4_c2_pp,flat_bn128_s4_c2_pp,flat_bn256_s3_c2_n,rows9x14_bn256_s3_c2_n: 16
#   kernels; limit PP_FLAT_LIMIT, default 150 s);
#   stem_variants: the folded-taps Hopper tiles of resnet50 f16 b256's stem conv (over
#   space_to_depth; 8 of them, alone and ping-pong) against cuDNN (--match _taps4: 17 of its
#   40 Hopper tiles took 150 s on the H200, its direct variants 9-17 ms each), limit
#   STEM_VARIANTS_LIMIT, default 150 s;
#   pp_kb (the run of 2026-11-28): the ping-pong and k-block tiles of the stem, 3x3 convs at
#   56, 28 and 14 and layer3.0's strided 1x1 (kiln bench --match _pp_,_kb; limit PP_KB_LIMIT,
#   default 150 s);
#   train_check: resnet50 f16 training at batch 8, 112x112: every kernel against the CPU
#   (kiln check --device gpu; TRAIN_CHECK_KERNELS=0 skips it), the step's gradients against
#   the CPU's f32 step beside the CPU's own f16 step (limit TRAIN_CHECK_LIMIT, default 120 s);
#   train_prof: ncu's duration of every kernel of one b32 step as chosen (train_prof.csv;
#   limit TRAIN_PROF_LIMIT, default 120 s, 25 s on the H100);
#   bench_train: `kiln bench --train` on six resnet50 f16 b32 layers: each one's forward conv,
#   data-gradient conv and weight gradient as chosen against cuDNN's (its backward filter for
#   the weight gradient; a sliced one timed without its partial.sum), limit BENCH_TRAIN_LIMIT,
#   default 200 s (27 s on the H100 of 2026-11-27c);
#   train_ab: resnet50 f16 batch 32 training steps channels-last as chosen (chunked
#   batchnorms, data gradients as Hopper convs) against --layout nchw, alternated, median of
#   10 steps; PyTorch eager as the peer (limit TRAIN_AB_LIMIT, default 120 s; 60 s on the H100);
#   clusters_ab: resnet50 f16 at batch 32 and 256 as chosen, against the same descriptor
#   without l2_bytes_per_clock and the cuDNN-only plan, alternated, median of 20 steps each
#   (limit CLUSTERS_AB_LIMIT, default 170 s; 37 s on the H100: with the descriptor `kiln gpu
#   detect` writes now, the first two are the same plan);
#   correctness, run side by side (no timing in them): hopper (the Hopper family's instances
#   against the CPU), models (the gpu suite), check (`kiln check --device gpu` on resnet50 f16
#   and f32 at batch 32 and f16 at batch 1 for this GPU: every kernel, the Hopper family's
#   among them, its split-K ones at batch 1 and in the classifier at 32);
#   split_b1: resnet50 f16 batch 1's split layers (layer3.1.conv1, layer4.0.conv2, layer4.1's
#   three convs): every in-kernel split variant of both families but the im2col tiles (a
#   split step's variants are all split; --match leaves out the unproven im2col copies, whose
#   sticky error would end the sweep) against cuDNN (123 variants with them, all passing on the
#   emulator; limit SPLIT_B1_LIMIT, default 150 s);
#   models_rest (the gpu suite from densenet121 on), vgg16 (its tf32 kernels checked, and the
#   whole network's error beside cuDNN's);
#   timed, one after another on a quiet GPU: bench_r50_256 (resnet50 f16 b256's chosen
#   kernels against cuDNN per layer, the issue's target: limit BENCH_R50_256_LIMIT, default
#   150 s; on the H100 of 2026-11-27 12 of its 26 shapes took 270 s, ~22 s each, most of it
#   the check's f64 reference of 256 images, which now computes 4: 0.44 s instead of 7.4 for
#   the 3x3 at 14x14 on a 2-core machine, build/bench/check_host_time), ncu (Nsight Compute on resnet50 f16 b32's Hopper 1x1 C = 64 -> 256 convs, with
#   and without a residual, its 3x3 14x14 conv and its stem conv: speed of light, memory, warp stall
#   reasons, issue; `--clock-control none`; ncu_r50_details.txt; limit 120 s),
#   r50 (resnet50 inference against PyTorch), r50_big
#   (f16 at batch 32 and 256, 170 s; the H100 run of 2026-11-26 took 100 s), r50_f32
#   (its f32 half), bench_r50 (resnet50 f16 b32's chosen kernels against cuDNN, per layer),
#   layers_ds (every variant of resnet50 f16 b256's stem, its space_to_depth and conv, and of
#   its three strided 1x1 downsamples, against cuDNN; limit LAYERS_DS_LIMIT, default 200 s),
#   bench_ds (the chosen kernels of resnet50 f16 b256's stem and three strided 1x1 downsamples
#   against cuDNN: limit BENCH_DS_LIMIT, default 80 s; 32 s on the H100 of 2026-11-27c), layers_all (every variant of four resnet50 f16 b32 layers, the 3x3 convs at 28x28, 14x14
#   and 7x7 and the 1x1 with a residual at 56x56: Hopper against mma.sync tile by tile, each
#   Hopper tile alone and in its clusters (_cl2x1, _cl1x2, _cl2x2: the multicast the L2
#   ceiling prices, GpuDesc::l2_bytes_per_clock, unmeasured until then);
#   limit LAYERS_ALL_LIMIT, default 200 s), families (conv families against cuDNN:
#   every variant of every layer, long), tune (the gpu tune suite),
#   folded, schedules, sparse, mobile (issue 19: mobilenet_v2, mobilenet_v3_small/large,
#   efficientnet_b0 through kiln's ONNX import at batch 1 and 256 in f16 against PyTorch eager
#   channels_last, torch.compile and ONNX Runtime where importable; bench/mobile_nets.py; limit
#   330 s, expected 200-250 s: about 25 s of exports and kiln's first runs, four models side by
#   side on the 16 cores (generate + nvrtc of 51-98 kernels a model and batch took 4-18 s on 2
#   shared cores here: bench/results/mobile_nets_generate_check.txt; the h200 kernels of
#   mobilenet_v2 and efficientnet_b0 at batch 256 pass kiln check on the emulator, files
#   mobile_nets_check_emu_*), about 80 s of timed rows,
#   then torch.compile within 100 s of compiling, largest batch first; rows cut by a budget
#   read 'skipped', with the reason), mobile_eager (the same without torch.compile: limit
#   210 s, expected about 110 s).
# BENCH_R50_LIMIT (seconds, default 140: 110 s on the H100 after r50_big) sets bench_r50's.
# Everything lands in OUT/summary.txt and OUT/results.tgz (re-packed after every part, so a
# run stopped at its limit still brings back what finished): the tool returns 8 files at most.
set -u
dir=$1 out=$2
shift 2
parts=${*:-hopper im2col check bench_r50_256 clusters_ab split_b1}
here=$(pwd)
cd "$dir" && tar xzf kiln-*.tar.gz && B=$(pwd)/$(ls -d kiln-*/ | head -1) && cd "$here"
K=$B/bin/kiln
W=/tmp/kiln_session
mkdir -p $W
export PYTHONUNBUFFERED=1 PYTHONPATH=$B/tests/gpu:$B/bench XDG_CACHE_HOME=/tmp/kcache
S=$out/summary.txt
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  $K --version
  $K gpu detect -o $W/gpu.json && cat $W/gpu.json
} >> "$S" 2>&1
pack() { tar -C $W -czf "$out/.r$BASHPID" --exclude='work*' --exclude='generated' --exclude='*.ncu-rep' . && mv "$out/.r$BASHPID" "$out/results.tgz"; }
part() { # NAME SECONDS CMD...: runs CMD in the bundle under a limit, its output in W/NAME.log
  local name=$1 limit=$2 t0=$(date +%s)
  shift 2
  (cd "$B" && timeout "$limit" "$@") > "$W/$name.log" 2>&1
  echo "$name rc $? in $(($(date +%s) - t0)) s (limit $limit)" >> "$S"
  pack
}
check_r50() {
  local rc=0
  for dt in f16 f32; do
    $K generate resnet50 --gpu $W/gpu.json --dtype $dt --batch 32 -o $W/work_r50_$dt || rc=1
    $K check $W/work_r50_$dt --device gpu || rc=1
  done
  $K generate resnet50 --gpu $W/gpu.json --dtype f16 --batch 1 -o $W/work_r50_b1 || rc=1
  $K check $W/work_r50_b1 --device gpu || rc=1
  return $rc
}
vgg16_tf32() { # vgg16 in f32 (tf32 on tensor cores): every kernel's error, and cuDNN's whole-network error
  local rc=0
  $K generate vgg16 --gpu $W/gpu.json -o $W/work_vgg16 && $K check $W/work_vgg16 --device gpu || rc=1
  python3 -c 'import numpy as np; np.save("/tmp/xv.npy", np.random.RandomState(0).standard_normal((1,3,224,224)).astype(np.float32))'
  $K run vgg16 --device cpu --input /tmp/xv.npy --output /tmp/yc.npy || rc=1
  for k in kiln cudnn; do
    $K run vgg16 --device gpu --gpu $W/gpu.json --kernels $k --input /tmp/xv.npy --output /tmp/y_$k.npy || rc=1
    python3 -c "import numpy as np; g, c = np.load('/tmp/y_$k.npy'), np.load('/tmp/yc.npy'); print('vgg16 --kernels $k: relative error', np.linalg.norm(g - c) / np.linalg.norm(c))"
  done
  return $rc
}
ncu_r50() { # where the epilogue-bound Hopper convs spend their time (hardware counters)
  local N
  N=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  $N --version || return 1
  python3 -c 'import numpy as np; np.save("/tmp/x32.npy", np.random.RandomState(0).standard_normal((32,3,224,224)).astype(np.float32))'
  $N --clock-control none -f -o $W/ncu_r50 -c 8 \
    -k 'regex:hopper_wgmma.*(c64h56w56_o256k1x1s1x1p0x0_bias_|c256h14w14_o256k3x3|c16h113w115)' \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    $K run resnet50 --device gpu --dtype f16 --input /tmp/x32.npy --bench 2 || return 1
  $N --import $W/ncu_r50.ncu-rep --page details > $W/ncu_r50_details.txt
}
clusters_ab() { # resnet50 f16 as chosen (most convs in multicast clusters, priced by the L2
  # ceiling) against the same GPU's descriptor without l2_bytes_per_clock (no L2 ceiling: the
  # lone tiles win every tie), batch 32 and 256, alternated, median of 20 CUDA-event steps each
  local rc=0 b g
  python3 -c "import json; d = json.load(open('$W/gpu.json')); d.pop('l2_bytes_per_clock', None); json.dump(d, open('$W/gpu_nol2.json', 'w'), indent=2)" || return 1
  for b in 32 256; do
    python3 -c "import numpy as np; np.save('/tmp/xab.npy', np.random.RandomState(0).standard_normal(($b,3,224,224)).astype(np.float32))" || return 1
    for g in gpu gpu_nol2 cudnn gpu gpu_nol2 cudnn; do
      echo "== resnet50 f16 batch $b --gpu $g.json"
      if [ $g = cudnn ]; then # the cuDNN-only plan, the peer, in the same alternation
        $K run resnet50 --device gpu --gpu $W/gpu.json --kernels cudnn --dtype f16 --input /tmp/xab.npy --bench 20 || rc=1
      else
        $K run resnet50 --device gpu --gpu $W/$g.json --dtype f16 --input /tmp/xab.npy --bench 20 || rc=1
      fi
    done
  done
  return $rc
}
train_check() { # resnet50 f16 training, correctness, at batch 8 and 112x112 (the same
  # kernel kinds as batch 32 at 224: chunked batchnorms, flipped-weight data gradients, wgmma
  # weight gradients split over positions on sm_90, mma.sync ones elsewhere; the CPU's f64 references of batch 32 at 224 take
  # minutes): every kernel of the plan against the CPU (kiln check), then the whole step's
  # gradients against the CPU's f32 step, beside the CPU's own f16 step against it (at random
  # initialisation the gradients are ill-conditioned: on resnet18 b8 32x32 the CPU's f16
  # step is 11% (median tensor) from its f32 step, so f16 against f16 measures nothing)
  local rc=0 d
  python3 -c "import numpy as np; r = np.random.RandomState(0); np.save('/tmp/xt8.npy', r.standard_normal((8,3,112,112)).astype(np.float32)); np.save('/tmp/tt8.npy', r.randint(0, 1000, 8).astype(np.int64))" || return 1
  for d in f16 f32; do
    $K run resnet50 --device cpu --dtype $d --input /tmp/xt8.npy --train --target /tmp/tt8.npy --grads /tmp/gc8_$d.safetensors > /tmp/cpu8_$d.log 2>&1 &
  done
  if [ "${TRAIN_CHECK_KERNELS:-1}" = 1 ]; then
    $K generate resnet50 --gpu $W/gpu.json --dtype f16 --batch 8 --image 112 --train -o $W/work_train8 &&
      grep -A6 '"training_layout"' $W/work_train8/manifest.json && $K check $W/work_train8 --device gpu | tail -4 || rc=1
  fi
  $K run resnet50 --device gpu --gpu $W/gpu.json --dtype f16 --input /tmp/xt8.npy --train --target /tmp/tt8.npy --grads /tmp/gg8.safetensors || rc=1
  wait
  cat /tmp/cpu8_*.log
  KILN=$K python3 -c "
import kiln_test as kt
ref = kt.read_safetensors('/tmp/gc8_f32.safetensors')
for label, path in (('gpu f16 (layout auto)', '/tmp/gg8.safetensors'), ('cpu f16', '/tmp/gc8_f16.safetensors')):
    g = kt.read_safetensors(path)
    e = sorted((kt.rel(g[k], ref[k]), k) for k in ref)
    print('resnet50 b8 112x112 training step, %s against the cpu f32 step: gradient relative error median %.2e, worst %.2e (%s), %d tensors' % (label, e[len(e) // 2][0], e[-1][0], e[-1][1], len(e)))
" || rc=1
  return $rc
}
train_inputs_b32() { # a batch of 32 224x224 images and its targets: /tmp/xtr.npy, /tmp/ttr.npy
  python3 -c "import numpy as np; r = np.random.RandomState(0); np.save('/tmp/xtr.npy', r.standard_normal((32,3,224,224)).astype(np.float32)); np.save('/tmp/ttr.npy', r.randint(0, 1000, 32).astype(np.int64))"
}
train_prof() { # where a resnet50 f16 b32 training step's time goes: every kernel's duration
  # (Nsight Compute, one metric, one step as chosen) into train_prof.csv
  local N
  N=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  train_inputs_b32 || return 1
  $N --clock-control none --metrics gpu__time_duration.sum --csv --log-file $W/train_prof.csv -c 3000 \
    $K run resnet50 --device gpu --gpu $W/gpu.json --dtype f16 --input /tmp/xtr.npy --train \
    --target /tmp/ttr.npy --grads /tmp/gp.safetensors
}
train_ab() { # resnet50 f16 b32 training steps: channels-last as the cost model chose it (chunked
  # batchnorms, stride-1 data gradients as Hopper convs, weight gradients on mma.sync split
  # over positions: predicted 16.0 ms) against --layout nchw (CUDA cores, predicted 47.6 ms),
  # alternated, median of 10 steps; PyTorch eager (f16, channels_last, SGD) as the peer
  local rc=0 l
  train_inputs_b32 || return 1
  for l in auto nchw auto nchw; do
    echo "== resnet50 f16 batch 32 training step --layout $l"
    $K run resnet50 --device gpu --gpu $W/gpu.json --dtype f16 --input /tmp/xtr.npy --train \
      --target /tmp/ttr.npy --grads /tmp/g_$l.safetensors --layout $l --bench 10 || rc=1
  done
  python3 - <<'PY' || rc=1
import torch, torch_models
torch.backends.cudnn.benchmark = True
net = torch_models.MODELS["resnet50"]().cuda().half().to(memory_format=torch.channels_last)
x = torch.randn(32, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
t = torch.randint(0, 1000, (32,), device="cuda")
opt = torch.optim.SGD(net.parameters(), lr=0.01)
def step():
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(net(x).float(), t).backward()
    opt.step()
times = []
for i in range(13):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); step(); b.record(); torch.cuda.synchronize()
    if i >= 3: times.append(a.elapsed_time(b))
times.sort()
print(f"pytorch eager f16 channels_last resnet50 b32 training step: median {times[len(times) // 2]:.3f} ms")
PY
  return $rc
}
export -f check_r50 vgg16_tf32 ncu_r50 clusters_ab train_check train_inputs_b32 train_prof train_ab
export K W
has() { [[ " $parts " == *" $1 "* ]]; }
# Correctness side by side.
has hopper && part gpu_hopper ${HOPPER_LIMIT:-90} env KILN_HOPPER_CONV_SOURCE=tests/gpu/conv_instances.cpp bin/kiln-env \
  tests/gpu/gpu_hopper_conv &
has models && part gpu_models 170 python3 tests/gpu/test_gpu.py "$K" &
has check && part check_r50 ${CHECK_LIMIT:-120} bash -c check_r50 &
has models_rest && part gpu_models_rest 170 python3 tests/gpu/test_gpu.py "$K" --models \
  densenet121,densenet201,resnet32,resnet1202,unet,noscope_coral,noscope_roundabout &
has vgg16 && part vgg16_tf32 120 bash -c vgg16_tf32 &
wait
pack
# Timed, one at a time.
has r50 && part r50 75 python3 bench/resnet50_inference.py "$K" --batches 1,32 --dtypes f16,f32 --runs 20 \
  --out $W/resnet50_inference
has r50_big && part r50_big 170 python3 bench/resnet50_inference.py "$K" --batches 32,256 --dtypes f16 --runs 20 \
  --out $W/resnet50_inference_big
has r50_f32 && part r50_f32 80 python3 bench/resnet50_inference.py "$K" --batches 1,32 --dtypes f32 --runs 20 \
  --out $W/resnet50_inference_f32
has bench_r50_256 && part bench_r50_256 ${BENCH_R50_256_LIMIT:-150} $K bench resnet50 --dtype f16 --batch 256 \
  --variants default --runs 20 -o $W/bench_r50_256
has ncu && part ncu_r50 120 bash -c ncu_r50
has clusters_ab && part clusters_ab ${CLUSTERS_AB_LIMIT:-170} bash -c clusters_ab
has train_check && part train_check ${TRAIN_CHECK_LIMIT:-120} bash -c train_check
has train_prof && part train_prof ${TRAIN_PROF_LIMIT:-120} bash -c train_prof
has train_ab && part train_ab ${TRAIN_AB_LIMIT:-120} bash -c train_ab
has bench_train && part bench_train ${BENCH_TRAIN_LIMIT:-200} $K bench resnet50 --train --dtype f16 \
  --batch 32 --variants default --runs 20 \
  --layers layer1.0.conv2,layer2.1.conv2,layer3.1.conv2,layer4.1.conv2,layer3.1.conv1,layer2.0.downsample.0 \
  -o $W/bench_train
has bench_ds && part bench_ds ${BENCH_DS_LIMIT:-80} $K bench resnet50 --dtype f16 --batch 256 \
  --variants default --layers conv1,layer2.0.downsample.0,layer3.0.downsample.0,layer4.0.downsample.0 \
  --runs 20 -o $W/bench_ds
has pp_kb && part pp_kb ${PP_KB_LIMIT:-150} $K bench resnet50 --dtype f16 --batch 256 \
  --variants all --match _pp_,_kb --runs 20 -o $W/pp_kb \
  --layers conv1,layer1.0.conv2,layer2.1.conv2,layer3.1.conv2,layer3.0.downsample.0
has stem_variants && part stem_variants ${STEM_VARIANTS_LIMIT:-150} $K bench resnet50 --dtype f16 \
  --batch 256 --variants all --match _taps4 --layers conv1 --runs 20 -o $W/stem_variants
has im2col && part im2col ${IM2COL_LIMIT:-170} $K bench resnet50 --dtype f16 --batch 256 \
  --variants all --runs 20 -o $W/im2col \
  --match nhwc_im2col_bn64_s4_c2_pp,nhwc_im2col_bn128_s4_c2_pp,nhwc_im2col_bn256_s3_c2_n,nhwc_im2col_bn128_s4_c2_n,t8x16_bn64_s4_c2_pp_n256c64h56w56_o64k3x3,t4x32_bn128_s4_c2_pp_n256c128h28w28_o128k3x3,t8x16_bn256_s3_c2_n256c256h14w14_o256k3x3,t8x8_bn256_s4_c1_n256c512h7w7_o512k3x3,t8x8_bn256_s4_c1_n256c512h14w14_o512k3x3s2 \
  --layers layer1.0.conv2,layer2.1.conv2,layer3.1.conv2,layer4.1.conv2,layer4.0.conv2
has pp_flat && part pp_flat ${PP_FLAT_LIMIT:-150} $K bench resnet50 --dtype f16 --batch 256 \
  --variants all --match flat_bn64_s4_c2_pp,flat_bn128_s4_c2_pp,flat_bn256_s3_c2_n,rows9x14_bn256_s3_c2_n \
  --runs 20 -o $W/pp_flat \
  --layers layer1.0.conv3,layer1.0.downsample.0,layer2.0.conv1,layer3.0.conv3,layer4.1.conv1,layer3.0.downsample.0
has split_b1 && part split_b1 ${SPLIT_B1_LIMIT:-150} $K bench resnet50 --dtype f16 --batch 1 \
  --variants all --match _nhwc_t,_flat_,implicit_gemm --runs 20 -o $W/split_b1 \
  --layers layer3.1.conv1,layer4.0.conv2,layer4.1.conv1,layer4.1.conv2,layer4.1.conv3
has bench_r50 && part bench_r50 ${BENCH_R50_LIMIT:-140} $K bench resnet50 --dtype f16 --batch 32 --variants default --runs 20 \
  -o $W/bench_r50_f16
has layers_all && part layers_all ${LAYERS_ALL_LIMIT:-200} $K bench resnet50 --dtype f16 --batch 32 \
  --variants all --layers layer2.1.conv2,layer3.1.conv2,layer4.1.conv2,layer1.0.conv3 --runs 20 \
  -o $W/layers_all
has layers_ds && part layers_ds ${LAYERS_DS_LIMIT:-200} $K bench resnet50 --dtype f16 --batch 256 \
  --variants all --layers conv1,layer2.0.downsample.0,layer3.0.downsample.0,layer4.0.downsample.0 \
  --runs 20 -o $W/layers_ds
has families && part conv_families 110 python3 bench/conv_families.py "$K" --models resnet50 --dtypes f16 \
  --batches 32 --runs 20 --timeout 100 --out $W/conv_families
has tune && part gpu_tune 60 python3 tests/gpu/test_gpu_tune.py "$K"
has folded && part folded 90 python3 bench/folded.py "$K" --models noscope --factors 1,4 --no-compile \
  --runs 20 --out $W/folded
has schedules && part schedules 90 python3 bench/training_schedules.py "$K" --models resnet152 --batch 32 \
  --budgets 100,50 --runs 3 --out $W/training_schedules
has mobile && part mobile ${MOBILE_LIMIT:-330} python3 bench/mobile_nets.py "$K" --batches 1,256 --runs 20 \
  --budget $((${MOBILE_LIMIT:-330} - 90)) --compile-budget ${MOBILE_COMPILE_BUDGET:-100} --out $W/mobile_nets
has mobile_eager && part mobile_eager ${MOBILE_EAGER_LIMIT:-210} python3 bench/mobile_nets.py "$K" --batches 1,256 --runs 20 \
  --budget $((${MOBILE_EAGER_LIMIT:-210} - 30)) \
  --no-compile --out $W/mobile_nets_eager
has sparse && part sparse 90 python3 bench/sparse_conv.py "$K" --layers small --densities 0.2,0.5,0.8 \
  --runs 20 --network-batches 1,32 --out $W/sparse_conv
cat "$S"
