// Test kernels for Hopper's asynchronous machinery (hopper_emu.hpp / hopper_cuda.cuh): a TMA
// tiled load of one box into shared memory, copied out raw; wgmma over a shared-memory image
// the test lays out; a warp-specialised pipeline on full/empty mbarriers; and planted bugs
// the emulator must report. Also compiles with nvcc for sm_90a (-gencode
// arch=compute_90a,code=sm_90a -I templates -I .): one UTMALDG.4D.IM2COL for the im2col copy.
#include "common/kiln.cuh"

using namespace kiln;

// One TMA copy (`copy(dst, map, bar, p)`, issued by thread 0) into dynamic shared memory,
// completing on an mbarrier, then copied out raw. args: 0 tensor map, 1 its global tensor
// (read through the map), 2 out, 3 int[7]: the copy's parameters, p[6] its 32-bit words.
// kSkipWait: reads the box without waiting.
template <bool kSkipWait, class Copy> KILN_FN void tma_copy_out(const KernelArgs& args, Copy copy) {
  const TensorMap* map = tensor_map_arg(args, 0);
  const auto out = arg<u32>(args, 2);
  const auto p = arg<const int>(args, 3);
  const int words = p[6];
  const auto box = dynamic_shared<u32>(0);
  KILN_SHARED_ARRAY(u64, bar, 1);
  if (threadIdx.x == 0) {
    mbarrier_init(bar, 1);
    fence_barrier_init();
  }
  sync_threads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(bar, u32(words * 4));
    copy(box, map, bar, p);
  }
  if (!kSkipWait) mbarrier_wait(bar, 0);
  for (int i = int(threadIdx.x); i < words; i += int(blockDim.x))
    out[i] = box[i];
}
// A tiled box: p = rank, coordinates.
template <bool kSkipWait> KILN_FN void tma_box(const KernelArgs& args) {
  tma_copy_out<kSkipWait>(args, [](auto box, const TensorMap* map, auto bar, auto p) {
    switch (p[0]) {
    case 1: tma_load(box, map, bar, p[1]); break;
    case 2: tma_load(box, map, bar, p[1], p[2]); break;
    case 3: tma_load(box, map, bar, p[1], p[2], p[3]); break;
    case 4: tma_load(box, map, bar, p[1], p[2], p[3], p[4]); break;
    default: tma_load(box, map, bar, p[1], p[2], p[3], p[4], p[5]); break;
    }
  });
}
extern "C" __global__ void tma_box_load(KernelArgs args) { tma_box<false>(args); }
extern "C" __global__ void tma_box_no_wait(KernelArgs args) { tma_box<true>(args); }
// An im2col copy (a 4-D map: C, W, H, N): p = c, w, h, n, the offsets w, h.
extern "C" __global__ void tma_im2col_load(KernelArgs args) {
  tma_copy_out<false>(args, [](auto box, const TensorMap* map, auto bar, auto p) {
    tma_load_im2col(box, map, bar, p[0], p[1], p[2], p[3], u16(p[4]), u16(p[5]));
  });
}

// One warpgroup: copies a shared-memory image (args 0, u32 words) into dynamic shared memory
// with ordinary stores, then D = A B^T (+ C) over two k steps through descriptors.
// args: 1 C in fragment order (float, 128 x N/2), 2 D out (same order), 3 u64[5]: descriptor
// A and B for k step 0, for k step 1, and the kind (0 f16, 1 bf16, 2 tf32) with flags:
// bit 8 no fence_proxy_async (planted), bit 9 reads D before wgmma_wait (planted), bit 10
// starts from zero (scale-d 0) rather than C, bit 12 both operands MN-major (wgmma_mn; f16
// or bf16).
template <int N> KILN_FN void wgmma_image(const KernelArgs& args) {
  const auto img = arg<const u32>(args, 0);
  const auto C = arg<const float>(args, 1);
  const auto D = arg<float>(args, 2);
  const auto p = arg<const u64>(args, 3);
  const int words = int(p[5]);
  const auto s = dynamic_shared<u32>(0);
  const int t = int(threadIdx.x);
  for (int i = t; i < words; i += 128)
    s[i] = img[i];
  const u64 flags = p[4];
  if (!(flags & 256)) fence_proxy_async();
  sync_threads();
  WgmmaAcc<N> acc;
  for (int r = 0; r < N / 2; ++r)
    acc[r] = (flags & 1024) ? 0.0f / 0.0f : C[t * (N / 2) + r];
  wgmma_fence();
  const int kind = int(flags & 255);
  for (int k = 0; k < 2; ++k) {
    const bool accumulate = k > 0 || !(flags & 1024);
    if (flags & 4096) { // both operands MN-major (imm-trans 1)
      if (kind == 0)
        wgmma_mn(acc, p[2 * k], p[2 * k + 1], accumulate, f16{});
      else
        wgmma_mn(acc, p[2 * k], p[2 * k + 1], accumulate, bf16{});
    } else if (kind == 0)
      wgmma(acc, p[2 * k], p[2 * k + 1], accumulate, f16{});
    else if (kind == 1)
      wgmma(acc, p[2 * k], p[2 * k + 1], accumulate, bf16{});
    else
      wgmma(acc, p[2 * k], p[2 * k + 1], accumulate, 0.0f);
  }
  wgmma_commit();
  if (flags & 512) D[t * (N / 2)] = acc[0]; // planted: before the wait
  wgmma_wait<0>();
  for (int r = 0; r < N / 2; ++r)
    D[t * (N / 2) + r] = acc[r];
}
// Two warpgroups: group 0 copies the image (as wgmma_image) into shared memory with ordinary
// stores and a fence, then arrives on an mbarrier; group 1 waits for that phase and computes
// D = A B^T + C (f16, N = 64) from it. Flag bit 11 (planted): group 0 arrives on nothing and
// group 1 waits on a barrier of its own, so nothing orders group 0's stores before its wgmma.
KILN_FN void wgmma_cross(const KernelArgs& args) {
  const auto img = arg<const u32>(args, 0);
  const auto C = arg<const float>(args, 1);
  const auto D = arg<float>(args, 2);
  const auto p = arg<const u64>(args, 3);
  const int words = int(p[5]);
  const bool planted = p[4] & 2048;
  const auto s = dynamic_shared<u32>(0);
  const Shared<u64> bars = view_as<u64>(dynamic_shared<u8>(0) + (words * 4 + 7) / 8 * 8);
  const int t = int(threadIdx.x);
  if (t == 0) {
    mbarrier_init(bars, 128);
    mbarrier_init(bars + 1, 128);
    fence_barrier_init();
  }
  sync_threads();
  if (t < 128) {
    for (int i = t; i < words; i += 128)
      s[i] = img[i];
    fence_proxy_async();
    if (!planted) mbarrier_arrive(bars);
    return;
  }
  if (planted) mbarrier_arrive(bars + 1);
  mbarrier_wait(bars + (planted ? 1 : 0), 0);
  const int u = t - 128;
  WgmmaAcc<64> acc;
  for (int r = 0; r < 32; ++r)
    acc[r] = C[u * 32 + r];
  wgmma_fence();
  for (int k = 0; k < 2; ++k)
    wgmma(acc, p[2 * k], p[2 * k + 1], true, f16{});
  wgmma_commit();
  wgmma_wait<0>();
  for (int r = 0; r < 32; ++r)
    D[u * 32 + r] = acc[r];
}
extern "C" __global__ void __launch_bounds__(256, 1) wgmma_cross_n64(KernelArgs args) {
  wgmma_cross(args);
}
extern "C" __global__ void wgmma_n16(KernelArgs args) { wgmma_image<16>(args); }
extern "C" __global__ void wgmma_n32(KernelArgs args) { wgmma_image<32>(args); }
extern "C" __global__ void wgmma_n64(KernelArgs args) { wgmma_image<64>(args); }
extern "C" __global__ void wgmma_n128(KernelArgs args) { wgmma_image<128>(args); }
extern "C" __global__ void wgmma_n256(KernelArgs args) { wgmma_image<256>(args); }

// A warp-specialised pipeline: warpgroup 0 (fewer registers) produces, one elected thread
// issuing TMA loads of 16 x 32 float tiles of a [rows, 32] tensor into a 2-stage ring;
// warpgroup 1 (more registers) consumes, each thread summing one column (threads 0-31) of
// each tile. args: 0 tensor map, 1 tensor, 2 out (float[tiles * 32]), 3 int[1]: tiles.
// kNoEmptyWait (planted): the producer refills a stage without waiting for its release.
template <bool kNoEmptyWait> KILN_FN void pipeline(const KernelArgs& args) {
  constexpr int kStages = 2, kTile = 16 * 32;
  const TensorMap* map = tensor_map_arg(args, 0);
  const auto out = arg<float>(args, 2);
  const int tiles = arg<const int>(args, 3)[0];
  const auto ring = dynamic_shared<float>(0);
  KILN_SHARED_ARRAY(u64, full, kStages);
  KILN_SHARED_ARRAY(u64, empty, kStages);
  const int t = int(threadIdx.x);
  if (t == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(full + s, 1);
      mbarrier_init(empty + s, 32);
    }
    fence_barrier_init();
  }
  sync_threads();
  if (t < 128) {
    setmaxnreg_dec<40>();
    if (t < 32 && elect_one()) {
      for (int i = 0; i < tiles; ++i) {
        const int s = i % kStages;
        if (i >= kStages && !kNoEmptyWait) mbarrier_wait(empty + s, u32((i / kStages - 1) & 1));
        mbarrier_arrive_expect_tx(full + s, kTile * 4);
        tma_load(ring + s * kTile, map, full + s, 0, 16 * i);
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = t - 128;
    for (int i = 0; i < tiles; ++i) {
      const int s = i % kStages;
      mbarrier_wait(full + s, u32((i / kStages) & 1));
      if (c < 32) {
        float sum = 0.0f;
        for (int r = 0; r < 16; ++r)
          sum += ring[s * kTile + r * 32 + c];
        out[i * 32 + c] = sum;
        mbarrier_arrive(empty + s);
      }
    }
  }
}
// setmaxnreg needs the register cap at entry that __launch_bounds__(256, 1) gives.
extern "C" __global__ void __launch_bounds__(256, 1) tma_pipeline(KernelArgs args) {
  pipeline<false>(args);
}
extern "C" __global__ void __launch_bounds__(256, 1) tma_pipeline_no_empty_wait(KernelArgs args) {
  pipeline<true>(args);
}

// A one-stage TMA + wgmma loop: warpgroup 1 accumulates A_i B_i^T over `iters` 64 x 64 f16
// tiles (128-byte swizzle) that thread 0 loads. args: 0 A's map, 1 B's map, 2 A, 3 B,
// 4 D (fragment order, float 128 x 32), 5 int[1]: iters. kEarlyRelease (planted): the stage
// is released right after the wgmmas are issued, before wgmma_wait.
template <bool kEarlyRelease> KILN_FN void wgmma_ring(const KernelArgs& args) {
  const TensorMap* amap = tensor_map_arg(args, 0);
  const TensorMap* bmap = tensor_map_arg(args, 1);
  const auto D = arg<float>(args, 4);
  const int iters = arg<const int>(args, 5)[0];
  const auto stage = dynamic_shared<u8>(0);
  KILN_SHARED_ARRAY(u64, full, 1);
  KILN_SHARED_ARRAY(u64, empty, 1);
  const int t = int(threadIdx.x);
  if (t == 0) {
    mbarrier_init(full, 1);
    mbarrier_init(empty, 128);
    fence_barrier_init();
  }
  sync_threads();
  if (t == 0) {
    for (int i = 0; i < iters; ++i) {
      if (i > 0) mbarrier_wait(empty, u32((i - 1) & 1));
      mbarrier_arrive_expect_tx(full, 2 * 8192);
      tma_load(stage, amap, full, 0, 64 * i);
      tma_load(stage + 8192, bmap, full, 0, 64 * i);
    }
  } else if (t >= 128) {
    WgmmaAcc<64> acc;
    for (int i = 0; i < iters; ++i) {
      mbarrier_wait(full, u32(i & 1));
      wgmma_fence();
      for (int k = 0; k < 4; ++k)
        wgmma(acc, wgmma_desc(stage + 32 * k, 128, 16, 1024),
              wgmma_desc(stage + 8192 + 32 * k, 128, 16, 1024), i > 0 || k > 0, f16{});
      wgmma_commit();
      if (kEarlyRelease) mbarrier_arrive(empty);
      wgmma_wait<0>();
      if (!kEarlyRelease) mbarrier_arrive(empty);
    }
    for (int r = 0; r < 32; ++r)
      D[(t - 128) * 32 + r] = acc[r];
  }
}
extern "C" __global__ void wgmma_ring_ok(KernelArgs args) { wgmma_ring<false>(args); }
extern "C" __global__ void wgmma_ring_early_release(KernelArgs args) { wgmma_ring<true>(args); }
