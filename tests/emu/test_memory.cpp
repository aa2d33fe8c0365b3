// Atomics, cp.async and number formats.
#include "emu_fixture.hpp"

#include "runtime/half.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

using namespace emu_test;

namespace {

struct Histogram {
  std::vector<int> x, n{0};
  std::vector<int> counts = std::vector<int>(64, 0);
  float total = 0.0f;
  explicit Histogram(int size) : x(std::size_t(size)), n{size} {
    for (int i = 0; i < size; ++i)
      x[std::size_t(i)] = (i * 7919 + 13) % 1009;
    for (int v : x) {
      ++counts[std::size_t(v % 64)];
      total += float(v % 7);
    }
  }
};

} // namespace

TEST_CASE("global atomics from blocks on several workers") {
  const Histogram h(100000);
  for (unsigned workers : {1u, 4u}) {
    std::vector<int> x = h.x, n = h.n, counts(64, 0);
    std::vector<float> total{0.0f};
    launch("histogram",
           config({(100000 + 255) / 256, 1, 1}, {256, 1, 1}, KILN_EMU_CHECK_ALL, workers),
           {buf(x, "x"), buf(counts, "counts"), buf(total, "total"), buf(n, "n")});
    CHECK(counts == h.counts);
    CHECK(total[0] == h.total); // integers below 2^24: exact in any order
  }
}

TEST_CASE("shared-memory atomics, merged by global atomics") {
  const Histogram h(50000);
  std::vector<int> x = h.x, n = h.n;
  std::vector<unsigned> counts(64, 0u);
  std::vector<float> total{0.0f};
  launch("histogram_shared", config({24, 1, 1}, {128, 1, 1}, KILN_EMU_CHECK_ALL, 3),
         {buf(x, "x"), buf(counts, "counts"), buf(total, "total"), buf(n, "n")});
  for (int b = 0; b < 64; ++b)
    CHECK(int(counts[std::size_t(b)]) == h.counts[std::size_t(b)]);
  CHECK(total[0] == h.total);
}

TEST_CASE("cp.async copies in commit groups, zero-filling invalid chunks") {
  const int nt = 32, n = 230; // 2 * 32 chunks of 4 floats = 256; the tail is zero-filled
  std::vector<float> src(n), dst(256, NAN);
  for (int i = 0; i < n; ++i)
    src[std::size_t(i)] = float(i) + 0.25f;
  std::vector<int> nn{n};
  launch("cp_async_copy", config({1, 1, 1}, {nt, 1, 1}, KILN_EMU_CHECK_ALL, 1, 1024),
         {buf(src, "src"), buf(dst, "dst"), buf(nn, "n")});
  for (int i = 0; i < 256; ++i) {
    const float want = i / 4 * 4 + 4 <= n ? 2.0f * src[std::size_t(i)] : 0.0f;
    REQUIRE(dst[std::size_t(i)] == want);
  }
}

TEST_CASE("cp.async read before its wait is reported") {
  const int n = 256;
  std::vector<float> src(n, 1.0f), dst(256);
  std::vector<int> nn{n};
  const std::string r = try_launch("cp_async_missing_wait",
                                   config({1, 1, 1}, {32, 1, 1}, KILN_EMU_CHECK_ALL, 1, 1024),
                                   {buf(src, "src"), buf(dst, "dst"), buf(nn, "n")});
  CHECK(contains(r, "cp.async"));
  CHECK(contains(r, "in flight"));
}

TEST_CASE("f16, bf16 and tf32 conversions round as the device does") {
  const float in[] = {1.0f,
                      -2.0f,
                      65504.0f,
                      65520.0f,            // rounds to f16 infinity
                      1.0f + 0x1p-11f,     // f16 tie: to even (1.0)
                      1.0f + 3 * 0x1p-11f, // f16 tie: to even (1 + 2^-9)
                      0x1p-24f,            // smallest f16 subnormal
                      0x1p-25f,            // f16 tie to zero
                      1.0f + 0x1p-8f,      // bf16 tie: to even
                      1.0f + 3 * 0x1p-8f,  // bf16 tie: up
                      -(1.0f + 0x1p-11f),  // tf32 tie: away from zero
                      1.0f + 0x1p-12f,     // tf32: below half an ulp
                      INFINITY,
                      NAN};
  const int n = int(std::size(in));
  const std::size_t count = std::size(in);
  std::vector<float> x(in, in + n), back(2 * count);
  std::vector<std::uint16_t> h(count), b(count);
  std::vector<std::uint32_t> t(count);
  std::vector<int> nn{n};
  launch("conversions", config({1, 1, 1}, {32, 1, 1}),
         {buf(x, "in"), buf(h, "h"), buf(b, "b"), buf(t, "t"), buf(back, "back"), buf(nn, "n")});
  const std::uint16_t want_h[] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x3c00, 0x3c02, 0x0001,
                                  0x0000, 0x3c04, 0x3c0c, 0xbc00, 0x3c00, 0x7c00};
  const std::uint16_t want_b[] = {0x3f80, 0xc000, 0x4780, 0x4780, 0x3f80, 0x3f80, 0x3380,
                                  0x3300, 0x3f80, 0x3f82, 0xbf80, 0x3f80, 0x7f80};
  const std::uint32_t want_t[] = {0x3f800000u, 0xc0000000u, 0x477fe000u, 0x47800000u, 0x3f802000u,
                                  0x3f804000u, 0x33800000u, 0x33000000u, 0x3f808000u, 0x3f818000u,
                                  0xbf802000u, 0x3f800000u, 0x7f800000u};
  for (int i = 0; i < n - 1; ++i) {
    INFO("input ", i);
    CHECK(h[std::size_t(i)] == want_h[i]);
    CHECK(b[std::size_t(i)] == want_b[i]);
    CHECK(t[std::size_t(i)] == want_t[i]);
    CHECK(back[std::size_t(2 * i)] == kiln::half_bits_to_float(want_h[i]));
    CHECK(back[std::size_t(2 * i + 1)] == kiln::bf16_bits_to_float(want_b[i]));
  }
  CHECK((h[std::size_t(n - 1)] & 0x7c00) == 0x7c00);
  CHECK((h[std::size_t(n - 1)] & 0x03ff) != 0);
  CHECK(std::isnan(std::bit_cast<float>(t[std::size_t(n - 1)])));
}

TEST_CASE("every f16 bit pattern survives a round trip through float") {
  std::vector<std::uint16_t> out(65536);
  launch("half_roundtrip", config({256, 1, 1}, {256, 1, 1}, 0, 2), {buf(out, "out")});
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
    if (nan)
      REQUIRE((out[i] & 0x7c00) == 0x7c00);
    else
      REQUIRE(out[i] == i);
  }
}
