// Test kernels: mma.sync with fragments built from known matrices by the documented
// layouts (device_cuda.cuh), one warp per product; a planted wrong fragment index; and a
// small tensor-core GEMM through shared memory with 32-bit fragment loads (view_as).
#include "common/kiln.cuh"

using namespace kiln;

template <class T> KILN_FN u32 pack(T lo, T hi) { return u32(lo.bits) | (u32(hi.bits) << 16); }

// D[16,8] = A[16,16] B[16,8] + C (all row-major). kWrongFragment swaps the rows of a[1] and a[2].
template <class T, bool kWrongFragment> KILN_FN void mma_k16(const KernelArgs& args) {
  const auto A = arg<const T>(args, 0);
  const auto B = arg<const T>(args, 1);
  const auto C = arg<const float>(args, 2);
  const auto D = arg<float>(args, 3);
  const int lane = lane_id(), g = lane >> 2, t = lane & 3;
  const int r1 = kWrongFragment ? g : g + 8, c1 = kWrongFragment ? 2 * t + 8 : 2 * t;
  const int r2 = kWrongFragment ? g + 8 : g, c2 = kWrongFragment ? 2 * t : 2 * t + 8;
  const u32 a[4] = {pack(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]),
                    pack(A[r1 * 16 + c1], A[r1 * 16 + c1 + 1]),
                    pack(A[r2 * 16 + c2], A[r2 * 16 + c2 + 1]),
                    pack(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9])};
  const u32 b[2] = {pack(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]),
                    pack(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g])};
  const float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t],
                      C[(g + 8) * 8 + 2 * t + 1]};
  float d[4];
  mma_m16n8k16(d, a, b, c, T{});
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

extern "C" __global__ void mma_f16(KernelArgs args) { mma_k16<f16, false>(args); }
extern "C" __global__ void mma_bf16(KernelArgs args) { mma_k16<bf16, false>(args); }
extern "C" __global__ void mma_f16_wrong_fragment(KernelArgs args) { mma_k16<f16, true>(args); }

// D[16,8] = A[16,8] B[8,8] + C with tf32 operands rounded in the kernel.
extern "C" __global__ void mma_tf32(KernelArgs args) {
  const auto A = arg<const float>(args, 0);
  const auto B = arg<const float>(args, 1);
  const auto C = arg<const float>(args, 2);
  const auto D = arg<float>(args, 3);
  const int lane = lane_id(), g = lane >> 2, t = lane & 3;
  const u32 a[4] = {float_to_tf32(A[g * 8 + t]), float_to_tf32(A[(g + 8) * 8 + t]),
                    float_to_tf32(A[g * 8 + t + 4]), float_to_tf32(A[(g + 8) * 8 + t + 4])};
  const u32 b[2] = {float_to_tf32(B[t * 8 + g]), float_to_tf32(B[(t + 4) * 8 + g])};
  const float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t],
                      C[(g + 8) * 8 + 2 * t + 1]};
  float d[4];
  mma_m16n8k8_tf32(d, a, b, c);
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// C[32,16] = A[32,K] Bt[16,K]^T in f16 with f32 accumulate, K = 64: four warps, each a 16x8
// tile of C; k-slices of A and Bt staged in shared memory (row pitch 16 + 8 halves).
extern "C" __global__ void mma_gemm_f16(KernelArgs args) {
  constexpr int M = 32, N = 16, K = 64, P = 24;
  const auto A = arg<const f16>(args, 0);
  const auto Bt = arg<const f16>(args, 1);
  const auto C = arg<float>(args, 2);
  KILN_SHARED_ARRAY(f16, As, M * P);
  KILN_SHARED_ARRAY(f16, Bs, N * P);
  const auto As32 = view_as<u32>(As), Bs32 = view_as<u32>(Bs);
  const int tid = thread_linear(), warp = warp_id(), lane = lane_id();
  const int g = lane >> 2, t = lane & 3, m0 = (warp >> 1) * 16, n0 = (warp & 1) * 8;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = tid; i < M * 16; i += 128)
      As[(i / 16) * P + i % 16] = A[(i / 16) * K + k0 + i % 16];
    for (int i = tid; i < N * 16; i += 128)
      Bs[(i / 16) * P + i % 16] = Bt[(i / 16) * K + k0 + i % 16];
    sync_threads();
    const u32 a[4] = {As32[((m0 + g) * P + 2 * t) / 2], As32[((m0 + g + 8) * P + 2 * t) / 2],
                      As32[((m0 + g) * P + 2 * t + 8) / 2],
                      As32[((m0 + g + 8) * P + 2 * t + 8) / 2]};
    const u32 b[2] = {Bs32[((n0 + g) * P + 2 * t) / 2], Bs32[((n0 + g) * P + 2 * t + 8) / 2]};
    mma_m16n8k16(acc, a, b, acc, f16{});
    sync_threads();
  }
  C[(m0 + g) * N + n0 + 2 * t] = acc[0];
  C[(m0 + g) * N + n0 + 2 * t + 1] = acc[1];
  C[(m0 + g + 8) * N + n0 + 2 * t] = acc[2];
  C[(m0 + g + 8) * N + n0 + 2 * t + 1] = acc[3];
}

// An A fragment (16 rows x 16 halves) by ldmatrix.x4 from rows PITCH halves apart, their
// 16-byte chunks XOR-swizzled by (row / 2) % 4 when SWIZZLE: out[lane * 4 + j] = register j.
// PITCH 32 unswizzled puts rows r and r + 2 on the same banks; PITCH 40 (padding) and PITCH 32
// swizzled do not.
template <int PITCH, bool SWIZZLE> KILN_FN void ldmatrix_rows(const KernelArgs& args) {
  const auto A = arg<const f16>(args, 0);
  const auto out = arg<u32>(args, 1);
  KILN_SHARED_ARRAY(f16, As, 16 * PITCH);
  const int lane = lane_id();
  const auto at = [](int r, int c) { // element c of row r (c < 16)
    const int chunk = SWIZZLE ? (c / 8) ^ ((r / 2) % 4) : c / 8;
    return r * PITCH + chunk * 8 + c % 8;
  };
  for (int i = lane; i < 16 * 16; i += 32)
    As[at(i / 16, i % 16)] = A[i];
  sync_threads();
  const int r = (lane >> 3 & 1) * 8 + (lane & 7), c = (lane >> 4) * 8;
  u32 frag[4];
  ldmatrix_x4(frag, view_as<u32>(As) + at(r, c) / 2);
  for (int j = 0; j < 4; ++j)
    out[lane * 4 + j] = frag[j];
}

extern "C" __global__ void ldmatrix_padded(KernelArgs args) { ldmatrix_rows<40, false>(args); }
extern "C" __global__ void ldmatrix_swizzled(KernelArgs args) { ldmatrix_rows<32, true>(args); }
extern "C" __global__ void ldmatrix_conflicting(KernelArgs args) { ldmatrix_rows<32, false>(args); }
