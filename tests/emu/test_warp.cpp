// Warp collectives against their definitions, and mma.sync against a plain matrix product.
#include "emu_fixture.hpp"

#include "runtime/half.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

using namespace emu_test;

TEST_CASE("shfl_xor, shfl_down, shfl_idx and ballot match their definitions") {
  const int threads = 128;
  std::vector<int> in(threads), out(threads * 65, -1);
  std::mt19937 rng(7);
  for (int& v : in)
    v = int(rng() % 100000);
  launch("warp_ops", config({2, 1, 1}, {64, 1, 1}), {buf(in, "in"), buf(out, "out")});
  for (int g = 0; g < threads; ++g) {
    const int base = g & ~31, l = g & 31;
    const int* o = &out[std::size_t(g * 65)];
    for (int m = 1; m < 32; ++m)
      REQUIRE(o[m - 1] == in[std::size_t(base + (l ^ m))]);
    for (int d = 0; d < 32; ++d)
      REQUIRE(o[31 + d] == in[std::size_t(l + d < 32 ? base + l + d : g)]);
    REQUIRE(o[63] == in[std::size_t(base + (l * 7 + 3) % 32)]);
    unsigned bits = 0;
    for (int k = 0; k < 32; ++k)
      bits |= unsigned(in[std::size_t(base + k)] & 1) << k;
    REQUIRE(unsigned(o[64]) == bits);
  }
}

TEST_CASE("CUDA shuffles with sub-warp widths, on float and double") {
  const int threads = 64;
  std::vector<float> in(threads);
  for (int i = 0; i < threads; ++i)
    in[std::size_t(i)] = 1.5f * float(i) - 7.0f;
  std::vector<double> out(threads * 4);
  launch("shfl_width", config({1, 1, 1}, {64, 1, 1}), {buf(in, "in"), buf(out, "out")});
  for (int g = 0; g < threads; ++g) {
    const int base = g & ~31, l = g & 31;
    auto at = [&](int lane) { return double(in[std::size_t(base + lane)]); };
    CHECK(out[std::size_t(4 * g)] == at((l & ~7) + 5));
    CHECK(out[std::size_t(4 * g + 1)] == at((l & 15) + 3 < 16 ? l + 3 : l));
    const int x = l ^ 6; // width 4: a later group reads the caller's own value
    CHECK(out[std::size_t(4 * g + 2)] == at(x >= (l & ~3) + 4 ? l : x));
    CHECK(out[std::size_t(4 * g + 3)] == at(l ^ 17) * 0.25);
  }
}

TEST_CASE("a butterfly warp sum agrees on every lane") {
  std::vector<float> in(256), out(8, -1.0f);
  for (int i = 0; i < 256; ++i)
    in[std::size_t(i)] = float(i % 13) - 6.0f;
  launch("warp_sum", config({2, 1, 1}, {128, 1, 1}), {buf(in, "in"), buf(out, "out")});
  for (int w = 0; w < 8; ++w) {
    float want = 0.0f;
    for (int l = 0; l < 32; ++l)
      want += in[std::size_t(w * 32 + l)];
    CHECK(out[std::size_t(w)] == want);
  }
}

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v)
    x = u(rng);
  return v;
}

// max |D - (A B + C)| over the norm of the terms, with A [m,k] and B [k,n] row-major.
double product_error(const std::vector<float>& A, const std::vector<float>& B,
                     const std::vector<float>& C, const std::vector<float>& D, int m, int n,
                     int k) {
  double worst = 0.0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double want = C[std::size_t(i * n + j)], scale = std::fabs(want);
      for (int q = 0; q < k; ++q) {
        const double p = double(A[std::size_t(i * k + q)]) * B[std::size_t(q * n + j)];
        want += p;
        scale += std::fabs(p);
      }
      const double got = D[std::size_t(i * n + j)];
      if (!std::isfinite(got)) return INFINITY;
      worst = std::max(worst, std::fabs(got - want) / std::max(scale, 1e-30));
    }
  return worst;
}

// Runs a m16n8k16 kernel on f16 (or bf16) operands; returns the relative error.
double run_k16(const char* kernel, bool bf16) {
  std::vector<float> A = random_values(256, 1), B = random_values(128, 2),
                     C = random_values(128, 3);
  std::vector<std::uint16_t> a(256), b(128);
  for (std::size_t i = 0; i < A.size(); ++i) {
    a[i] = bf16 ? kiln::float_to_bf16_bits(A[i]) : kiln::float_to_half_bits(A[i]);
    A[i] = bf16 ? kiln::bf16_bits_to_float(a[i]) : kiln::half_bits_to_float(a[i]);
  }
  for (std::size_t i = 0; i < B.size(); ++i) {
    b[i] = bf16 ? kiln::float_to_bf16_bits(B[i]) : kiln::float_to_half_bits(B[i]);
    B[i] = bf16 ? kiln::bf16_bits_to_float(b[i]) : kiln::half_bits_to_float(b[i]);
  }
  std::vector<float> D(128, NAN);
  launch(kernel, config({1, 1, 1}, {32, 1, 1}),
         {buf(a, "A"), buf(b, "B"), buf(C, "C"), buf(D, "D")});
  return product_error(A, B, C, D, 16, 8, 16);
}

float tf32_round(float f) { // round to nearest, ties away, 10 mantissa bits
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  x = (x + 0x1000u) & 0xffffe000u;
  return std::bit_cast<float>(x);
}

} // namespace

TEST_CASE("mma m16n8k16 with f16 and bf16 operands equals A B + C") {
  CHECK(run_k16("mma_f16", false) < 1e-5);
  CHECK(run_k16("mma_bf16", true) < 1e-5);
}

TEST_CASE("planted bug: a wrong mma fragment index gives wrong results") {
  CHECK(run_k16("mma_f16_wrong_fragment", false) > 1e-2);
}

TEST_CASE("mma m16n8k8 with tf32 operands equals A B + C of the rounded operands") {
  std::vector<float> A = random_values(128, 4), B = random_values(64, 5), C = random_values(128, 6);
  std::vector<float> D(128, NAN);
  launch("mma_tf32", config({1, 1, 1}, {32, 1, 1}),
         {buf(A, "A"), buf(B, "B"), buf(C, "C"), buf(D, "D")});
  for (float& x : A)
    x = tf32_round(x);
  for (float& x : B)
    x = tf32_round(x);
  CHECK(product_error(A, B, C, D, 16, 8, 8) < 1e-5);
}

TEST_CASE("a tensor-core GEMM with fragments loaded from shared memory") {
  const int M = 32, N = 16, K = 64;
  std::vector<float> A = random_values(M * K, 8), Bt = random_values(N * K, 9);
  std::vector<std::uint16_t> a(A.size()), bt(Bt.size());
  for (std::size_t i = 0; i < A.size(); ++i) {
    a[i] = kiln::float_to_half_bits(A[i]);
    A[i] = kiln::half_bits_to_float(a[i]);
  }
  for (std::size_t i = 0; i < Bt.size(); ++i) {
    bt[i] = kiln::float_to_half_bits(Bt[i]);
    Bt[i] = kiln::half_bits_to_float(bt[i]);
  }
  std::vector<float> B(std::size_t(K * N)), C0(std::size_t(M * N), 0.0f),
      C(std::size_t(M * N), NAN);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      B[std::size_t(k * N + n)] = Bt[std::size_t(n * K + k)];
  launch("mma_gemm_f16", config({1, 1, 1}, {128, 1, 1}), {buf(a, "A"), buf(bt, "Bt"), buf(C, "C")});
  CHECK(product_error(A, B, C0, C, M, N, K) < 1e-5);
}

TEST_CASE("ldmatrix: the fragment layout, and rows on the same banks reported") {
  // A[r][c] = r * 16 + c as halves; register j of lane l holds row (j % 2) * 8 + l / 4 and
  // halves (j / 2) * 8 + 2 * (l % 4) + {0, 1} (the m16n8k16 A fragment).
  std::vector<std::uint16_t> a(256);
  for (int i = 0; i < 256; ++i)
    a[std::size_t(i)] = kiln::float_to_half_bits(float(i));
  for (const char* kernel : {"ldmatrix_padded", "ldmatrix_swizzled"}) {
    INFO(kernel);
    std::vector<std::uint32_t> out(128, 0xffffffffu);
    launch(kernel, config({1, 1, 1}, {32, 1, 1}), {buf(a, "A"), buf(out, "out")});
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < 4; ++j) {
        const int r = (j % 2) * 8 + l / 4, c = (j / 2) * 8 + 2 * (l % 4);
        const std::uint32_t v = out[std::size_t(l * 4 + j)];
        CHECK(kiln::half_bits_to_float(std::uint16_t(v & 0xffffu)) == float(r * 16 + c));
        CHECK(kiln::half_bits_to_float(std::uint16_t(v >> 16)) == float(r * 16 + c + 1));
      }
  }
  std::vector<std::uint32_t> out(128, 0);
  const std::string report = try_launch("ldmatrix_conflicting", config({1, 1, 1}, {32, 1, 1}),
                                        {buf(a, "A"), buf(out, "out")});
  INFO(report);
  CHECK(contains(report, "bank conflict: ldmatrix matrix 0"));
  CHECK(contains(report, "lanes 0 and 2"));
  // Without the check it runs (a slow load, not a wrong one).
  CHECK(try_launch("ldmatrix_conflicting",
                   config({1, 1, 1}, {32, 1, 1}, KILN_EMU_CHECK_ALL & ~KILN_EMU_CHECK_BANKS),
                   {buf(a, "A"), buf(out, "out")})
            .empty());
}
