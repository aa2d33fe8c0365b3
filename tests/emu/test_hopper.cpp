// Hopper's machinery in the emulator against layouts computed here once more from the PTX
// ISA's text and figures (not by calling the emulator's code): TMA boxes in every swizzle
// mode with out-of-bounds fill, wgmma for every N kiln instantiates and every swizzle mode
// and operand type, a warp-specialised mbarrier pipeline, and planted bugs each check reports.
#include "emu_fixture.hpp"

#include "runtime/emu/tensor_map.h"
#include "runtime/half.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

using namespace emu_test;

namespace {

// PTX ISA, "tensor swizzling modes" / wgmma "shared memory matrix layout" figures: within an
// atom of 8 rows of W bytes (the pattern repeats every 8 W bytes), the 16-byte chunk c of
// row r is stored at chunk c ^ x(r), where x(r) = r % 8 for 128 bytes, (r % 8) / 2 for 64,
// (r % 8) / 4 for 32. `pos` is the dense byte position (rows of W bytes).
std::size_t swizzled(unsigned W, std::size_t pos) {
  if (W == 0) return pos;
  const std::size_t r = pos / W, c = (pos % W) / 16;
  const std::size_t rr = r % 8, x = W == 128 ? rr : W == 64 ? rr / 2 : rr / 4;
  return r * W + ((c ^ x) * 16) + pos % 16;
}

struct TmaCase {
  unsigned W, e, rank;
  std::array<unsigned long long, 5> dims;
  std::array<unsigned, 5> box;
  std::array<int, 5> coords;
};

void run_tma(const TmaCase& tc) {
  CAPTURE(tc.W);
  CAPTURE(tc.rank);
  CAPTURE(tc.e);
  std::size_t elems = 1, boxn = 1;
  for (unsigned d = 0; d < tc.rank; ++d) {
    elems *= tc.dims[d];
    boxn *= tc.box[d];
  }
  std::vector<std::uint8_t> src(elems * tc.e);
  std::mt19937 rng(tc.W * 7 + tc.rank);
  for (auto& b : src)
    b = std::uint8_t(rng() | 1); // never zero: zero fill is visible
  std::vector<KilnTensorMap> map(1);
  KilnTensorMap& m = map[0];
  std::memset(&m, 0, sizeof m);
  m.global = src.data();
  m.rank = tc.rank;
  m.elem_bytes = tc.e;
  m.swizzle = tc.W;
  unsigned long long stride = tc.e;
  for (unsigned d = 0; d < tc.rank; ++d) {
    m.dims[d] = tc.dims[d];
    m.strides[d] = stride;
    stride *= tc.dims[d];
    m.box[d] = tc.box[d];
  }
  const int words = int(boxn * tc.e / 4);
  std::vector<int> p = {int(tc.rank), tc.coords[0], tc.coords[1], tc.coords[2],
                        tc.coords[3], tc.coords[4], words};
  std::vector<std::uint32_t> out(std::size_t(words), 0xdeadbeefu);
  launch("tma_box_load", config({1, 1, 1}, {64, 1, 1}, KILN_EMU_CHECK_ALL, 1, boxn * tc.e),
         {buf(map, "map"), buf(src, "tensor"), buf(out, "out"), buf(p, "params")});
  const auto* got = reinterpret_cast<const std::uint8_t*>(out.data());
  std::size_t oob = 0;
  for (std::size_t n = 0; n < boxn; ++n) {
    // Box element n: dimension 0 fastest; its global element and whether it is inside.
    std::size_t rest = n, at = 0, mul = 1;
    bool inside = true;
    for (unsigned d = 0; d < tc.rank; ++d) {
      const long long x = tc.coords[d] + (long long)(rest % tc.box[d]);
      rest /= tc.box[d];
      inside = inside && x >= 0 && x < (long long)tc.dims[d];
      at += std::size_t(x) * mul;
      mul *= tc.dims[d];
    }
    oob += !inside;
    for (unsigned i = 0; i < tc.e; ++i) {
      const std::uint8_t want = inside ? src[at * tc.e + i] : 0;
      REQUIRE(got[swizzled(tc.W, n * tc.e + i)] == want);
    }
  }
  CHECK(oob > 0); // every case reaches outside the tensor
}

// An im2col copy (PTX ISA, "im2col mode"): a 4-D NHWC tensor (dims C, W, H, N), its bounding
// box's corners, traversal strides, the copy's position and offsets.
struct Im2colCase {
  unsigned W, e;
  std::array<unsigned long long, 4> dims;
  int lower_w, lower_h, upper_w, upper_h, stride_w, stride_h;
  unsigned channels, pixels;
  std::array<int, 4> at; // c, w, h, n: on the box's grid
  unsigned off_w, off_h;
};

void run_im2col(const Im2colCase& tc) {
  CAPTURE(tc.W);
  CAPTURE(tc.pixels);
  std::size_t elems = 1;
  for (auto d : tc.dims)
    elems *= d;
  std::vector<std::uint8_t> src(elems * tc.e);
  std::mt19937 rng(tc.W * 11 + tc.pixels);
  for (auto& b : src)
    b = std::uint8_t(rng() | 1);
  std::vector<KilnTensorMap> map(1);
  KilnTensorMap& m = map[0];
  std::memset(&m, 0, sizeof m);
  m.global = src.data();
  m.rank = 4;
  m.elem_bytes = tc.e;
  m.swizzle = tc.W;
  m.mode = KILN_TMA_IM2COL;
  unsigned long long stride = tc.e;
  for (unsigned d = 0; d < 4; ++d) {
    m.dims[d] = tc.dims[d];
    m.strides[d] = stride;
    stride *= tc.dims[d];
  }
  m.im2col.channels = (unsigned short)tc.channels;
  m.im2col.pixels = (unsigned short)tc.pixels;
  m.im2col.lower[0] = (signed char)tc.lower_w;
  m.im2col.lower[1] = (signed char)tc.lower_h;
  m.im2col.upper[0] = (signed char)tc.upper_w;
  m.im2col.upper[1] = (signed char)tc.upper_h;
  const unsigned char es[4] = {1, (unsigned char)tc.stride_w, (unsigned char)tc.stride_h, 1};
  std::memcpy(m.im2col.element_strides, es, 4);
  const std::size_t n_elems = std::size_t(tc.channels) * tc.pixels;
  const int words = int(n_elems * tc.e / 4);
  std::vector<int> p = {tc.at[0],      tc.at[1],      tc.at[2], tc.at[3],
                        int(tc.off_w), int(tc.off_h), words};
  std::vector<std::uint32_t> out(std::size_t(words), 0xdeadbeefu);
  launch("tma_im2col_load", config({1, 1, 1}, {64, 1, 1}, KILN_EMU_CHECK_ALL, 1, n_elems * tc.e),
         {buf(map, "map"), buf(src, "tensor"), buf(out, "out"), buf(p, "params")});
  // Pixel i in closed form: the box holds cw x ch positions an image, the copy's first at
  // grid index (iw0, ih0) of image n0; pixel i is grid position i further, row-major.
  const long long cw = (tc.dims[1] - 1 + tc.upper_w - tc.lower_w) / tc.stride_w + 1,
                  ch = (tc.dims[2] - 1 + tc.upper_h - tc.lower_h) / tc.stride_h + 1;
  const long long first = (tc.at[3] * ch + (tc.at[2] - tc.lower_h) / tc.stride_h) * cw +
                          (tc.at[1] - tc.lower_w) / tc.stride_w;
  const auto* got = reinterpret_cast<const std::uint8_t*>(out.data());
  std::size_t oob = 0, wrapped = 0;
  for (std::size_t i = 0; i < tc.pixels; ++i) {
    const long long g = first + (long long)i, n = g / (cw * ch);
    const long long h = tc.lower_h + (g / cw) % ch * tc.stride_h + tc.off_h,
                    w = tc.lower_w + g % cw * tc.stride_w + tc.off_w;
    wrapped += g % cw == 0;
    for (unsigned k = 0; k < tc.channels; ++k) {
      const long long c = tc.at[0] + k;
      const bool inside = n < (long long)tc.dims[3] && h >= 0 && h < (long long)tc.dims[2] &&
                          w >= 0 && w < (long long)tc.dims[1] && c < (long long)tc.dims[0];
      oob += !inside;
      const std::size_t at = std::size_t(((n * tc.dims[2] + h) * tc.dims[1] + w) * tc.dims[0] + c);
      for (unsigned b = 0; b < tc.e; ++b) {
        const std::uint8_t want = inside ? src[at * tc.e + b] : 0;
        REQUIRE(got[swizzled(tc.W, (i * tc.channels + k) * tc.e + b)] == want);
      }
    }
  }
  CHECK(oob > 0);     // padding, or past the last image
  CHECK(wrapped > 0); // the traversal crosses rows
}

} // namespace

TEST_CASE("TMA im2col loads: bounding box, traversal strides, offsets, out-of-bounds fill") {
  // 3x3 pad 1 over 5x6 (W 5, H 6), 64 f16 channels, tap (2, 1), across two images.
  run_im2col({128, 2, {64, 5, 6, 2}, -1, -1, -1, -1, 1, 1, 64, 64, {0, 3, 4, 0}, 2, 1});
  // Stride 2 over W 9, H 7 (box corners -1, -2 across and -1, -1 down), 32 f16 channels from
  // channel 32, the copy running past the last image.
  run_im2col({64, 2, {64, 9, 7, 2}, -1, -1, -2, -1, 2, 2, 32, 40, {32, 1, 1, 1}, 0, 2});
  // A 3x1 filter: pad 1 down only, stride 2 across; f32 rows of 16 channels, no swizzle.
  run_im2col({0, 4, {16, 7, 5, 3}, 0, -1, -1, -1, 2, 1, 16, 30, {0, 2, -1, 0}, 0, 2});
  // 128-byte rows of 32 f32 channels, 128 pixels, offsets past the box's far corner.
  run_im2col({128, 4, {32, 4, 4, 9}, -1, -1, -1, -1, 1, 1, 32, 128, {0, -1, 2, 1}, 2, 2});
}

TEST_CASE("TMA tiled loads: every swizzle mode, ranks 1 to 5, out-of-bounds zero fill") {
  // W, element bytes, rank, dims, box, coordinates (some outside the tensor).
  run_tma({0, 4, 1, {100}, {48}, {70}});
  run_tma({0, 2, 2, {40, 9}, {24, 8}, {30, -3}});
  run_tma({32, 2, 2, {37, 20}, {16, 16}, {-5, 10}});
  run_tma({64, 2, 3, {50, 7, 3}, {32, 4, 2}, {25, 5, 2}});
  run_tma({128, 2, 2, {70, 33}, {64, 24}, {10, 20}});
  run_tma({128, 4, 4, {40, 5, 3, 2}, {32, 4, 2, 2}, {20, 3, -1, 1}});
  run_tma({64, 1, 5, {70, 3, 3, 2, 2}, {64, 2, 2, 2, 2}, {0, 2, 1, 1, -1}});
}

TEST_CASE("planted bug: reading a TMA box before waiting for its mbarrier phase") {
  std::vector<std::uint8_t> src(64 * 8 * 2, 1);
  std::vector<KilnTensorMap> map(1);
  std::memset(map.data(), 0, sizeof(KilnTensorMap));
  map[0] = KilnTensorMap{src.data(), {64, 8}, {2, 128}, {64, 8}, 2, 2, 128, 0};
  std::vector<int> p = {2, 0, 0, 0, 0, 0, 64 * 8 / 2};
  std::vector<std::uint32_t> out(64 * 8 / 2);
  const std::string r =
      try_launch("tma_box_no_wait", config({1, 1, 1}, {32, 1, 1}, KILN_EMU_CHECK_ALL, 1, 1024),
                 {buf(map, "map"), buf(src, "tensor"), buf(out, "out"), buf(p, "params")});
  INFO(r);
  CHECK(contains(r, "before waiting for that phase"));
  // The same kernel with its wait is clean.
  launch("tma_box_load", config({1, 1, 1}, {32, 1, 1}, KILN_EMU_CHECK_ALL, 1, 1024),
         {buf(map, "map"), buf(src, "tensor"), buf(out, "out"), buf(p, "params")});
}

TEST_CASE("a warp-specialised pipeline on full/empty mbarriers, elect.sync and setmaxnreg") {
  const int tiles = 5, rows = 16 * tiles - 5; // the last tile reaches past the tensor
  std::vector<float> x(std::size_t(rows) * 32);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i * 37 % 101) - 50) * 0.25f;
  std::vector<KilnTensorMap> map(1);
  std::memset(map.data(), 0, sizeof(KilnTensorMap));
  map[0] = KilnTensorMap{x.data(), {32, (unsigned long long)rows}, {4, 128}, {32, 16}, 2, 4, 0, 0};
  std::vector<int> p = {tiles};
  std::vector<float> out(std::size_t(tiles) * 32, -1.0f);
  launch("tma_pipeline", config({1, 1, 1}, {256, 1, 1}, KILN_EMU_CHECK_ALL, 1, 2 * 16 * 32 * 4),
         {buf(map, "map"), buf(x, "tensor"), buf(out, "out"), buf(p, "params")});
  for (int i = 0; i < tiles; ++i)
    for (int c = 0; c < 32; ++c) {
      float want = 0.0f;
      for (int r = 0; r < 16; ++r)
        want += 16 * i + r < rows ? x[std::size_t(16 * i + r) * 32 + std::size_t(c)] : 0.0f;
      REQUIRE(out[std::size_t(i * 32 + c)] == want);
    }
  // Without the empty barrier's wait the producer overwrites stages the consumers have not
  // read, and the full barriers' phases run ahead of the consumers' parities: a hang.
  const std::string r = try_launch(
      "tma_pipeline_no_empty_wait", config({1, 1, 1}, {256, 1, 1}, KILN_EMU_CHECK_ALL, 1, 4096),
      {buf(map, "map"), buf(x, "tensor"), buf(out, "out"), buf(p, "params")});
  INFO(r);
  CHECK(contains(r, "deadlock"));
  CHECK(contains(r, "wait at mbarrier"));
}

namespace {

// The byte of a K-major wgmma operand image holding row r, byte kb (< 64) of its K extent
// (PTX ISA, "shared memory matrix layout"): without swizzle, 8 x 16-byte core matrices of
// 128 contiguous bytes, the next along K 128 bytes on (LBO), the next 8 rows 512 bytes on
// (SBO); with a swizzle of W bytes, atoms of 8 rows of W bytes (SBO = 8 W), the 16-byte chunk
// c of row r at c ^ x(r) (see swizzled()), and for W = 32 the second 32 bytes of K in a second
// column of atoms `col` bytes on.
std::size_t operand_place(unsigned W, std::size_t base, std::size_t col, int r, int kb) {
  if (W == 0)
    return base + std::size_t(r / 8) * 512 + std::size_t(kb / 16) * 128 + std::size_t(r % 8) * 16 +
           std::size_t(kb % 16);
  const int c = kb % int(W) / 16, rr = r % 8;
  const int x = W == 128 ? rr : W == 64 ? rr / 2 : rr / 4;
  return base + std::size_t(kb / int(W)) * col + std::size_t(r / 8) * 8 * W + std::size_t(rr) * W +
         std::size_t(c ^ x) * 16 + std::size_t(kb % 16);
}

// Bytes of an operand of R rows, and the column offset of its second 32 K bytes for W = 32.
std::size_t operand_bytes(unsigned W, int R) {
  return std::size_t(R / 8) * (W ? 8 * W : 512) * (W == 32 ? 2 : 1);
}

std::uint64_t descriptor(unsigned W, std::size_t start) {
  const std::uint64_t mode = W == 128 ? 1 : W == 64 ? 2 : W == 32 ? 3 : 0;
  const std::uint64_t lbo = W ? 16 : 128, sbo = W ? 8 * W : 512;
  return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | mode << 62;
}

// Start of k step s (32 bytes of K each) of an operand at base.
std::size_t step_start(unsigned W, std::size_t base, std::size_t col, int s) {
  if (W == 0) return base + std::size_t(s) * 256; // two core matrices along K
  if (W == 32) return base + std::size_t(s) * col;
  return base + std::size_t(s) * 32;
}

float decode(int kind, std::uint32_t bits) {
  if (kind == 0) return kiln::half_bits_to_float(std::uint16_t(bits));
  if (kind == 1) return kiln::bf16_bits_to_float(std::uint16_t(bits));
  return std::bit_cast<float>(bits);
}

struct WgmmaResult {
  std::string report;
  double max_rel = 0; // against a float64 product
};

// An MN-major operand (PTX ISA, "shared memory matrix layout", imm-trans 1) of `mn` rows
// along M or N by 32 k (f16 / bf16: two k16 steps): swizzle atoms of W bytes along MN (W / 2
// elements) by 8 k, each a dense 8 x W block swizzled as swizzled() says. `mn_first`: atoms
// along MN adjacent (LBO = 8 W, SBO = 8 W times the atoms along MN), else the four 8-k groups
// adjacent (SBO = 8 W, LBO = 32 W): the two orders tell LBO's role from SBO's.
struct MnOperand {
  unsigned W;
  int mn;
  bool mn_first;
  std::size_t base;
  int atoms() const { return (mn + int(W / 2) - 1) / int(W / 2); }
  std::size_t lbo() const { return mn_first ? 8 * W : 32 * W; }
  std::size_t sbo() const { return mn_first ? std::size_t(atoms()) * 8 * W : 8 * W; }
  std::size_t bytes() const { return std::size_t(atoms()) * 4 * 8 * W; }
  std::size_t place(int i, int k, int byte) const {
    const int per = int(W / 2);
    const std::size_t atom = base + std::size_t(i / per) * lbo() + std::size_t(k / 8) * sbo();
    return atom +
           swizzled(W, std::size_t(k % 8) * W + std::size_t(i % per) * 2 + std::size_t(byte));
  }
  // k step s (16 k): two groups of 8 further.
  std::uint64_t descriptor(int s) const {
    const std::uint64_t mode = W == 128 ? 1 : W == 64 ? 2 : 3;
    return ((base + 2 * std::size_t(s) * sbo()) >> 4) | (lbo() >> 4) << 16 | (sbo() >> 4) << 32 |
           mode << 62;
  }
};

// kind 0 f16, 1 bf16, 2 tf32 (values exact in tf32); flags as the kernel's (4096: both
// operands MN-major, A's atoms MN-first and B's k-first). `cross`: the two-warpgroup kernel
// wgmma_cross_n64 (N 64, f16) instead of wgmma_nN.
WgmmaResult run_wgmma(int N, int kind, unsigned W, unsigned flags = 0, bool cross = false) {
  const int e = kind == 2 ? 4 : 2, K = 64 / e; // two k steps of 32 bytes
  const bool mn = flags & 4096;
  const MnOperand am{W, 64, true, 0};
  const std::size_t a_bytes = mn ? am.bytes() : operand_bytes(W, 64),
                    b_base = (a_bytes + 1023) / 1024 * 1024;
  const MnOperand bm{W, N, false, b_base};
  const std::size_t a_col = a_bytes / 2, b_col = operand_bytes(W, N) / 2;
  const std::size_t total = b_base + (mn ? bm.bytes() : operand_bytes(W, N));
  std::mt19937 rng(unsigned(N * 131 + kind * 7 + W));
  std::vector<std::uint32_t> img(total / 4);
  for (auto& w : img)
    w = rng(); // junk where no operand lies: written, never read
  auto* bytes = reinterpret_cast<std::uint8_t*>(img.data());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto value = [&](float* f) -> std::uint32_t {
    const float v = u(rng);
    std::uint32_t bits = kind == 0   ? kiln::float_to_half_bits(v)
                         : kind == 1 ? kiln::float_to_bf16_bits(v)
                                     : (std::bit_cast<std::uint32_t>(v) & 0xffffe000u);
    *f = decode(kind, bits);
    return bits;
  };
  std::vector<float> A(std::size_t(64 * K)), B(std::size_t(N * K));
  auto place = [&](std::size_t at, std::uint32_t bits) {
    std::memcpy(bytes + at, &bits, std::size_t(e));
  };
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < K; ++k)
      place(mn ? am.place(m, k, 0) : operand_place(W, 0, a_col, m, k * e),
            value(&A[std::size_t(m * K + k)]));
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      place(mn ? bm.place(n, k, 0) : operand_place(W, b_base, b_col, n, k * e),
            value(&B[std::size_t(n * K + k)]));
  std::vector<std::uint64_t> p(6);
  for (int s = 0; s < 2; ++s) {
    p[std::size_t(2 * s)] = mn ? am.descriptor(s) : descriptor(W, step_start(W, 0, a_col, s));
    p[std::size_t(2 * s + 1)] =
        mn ? bm.descriptor(s) : descriptor(W, step_start(W, b_base, b_col, s));
  }
  p[4] = std::uint64_t(kind) | flags;
  p[5] = img.size();
  const int regs = N / 2;
  std::vector<float> C(std::size_t(128 * regs)), D(C.size(), -7.0f);
  for (float& c : C)
    c = u(rng);
  WgmmaResult res;
  res.report = try_launch(cross ? std::string("wgmma_cross_n64") : "wgmma_n" + std::to_string(N),
                          config({1, 1, 1}, {cross ? 256u : 128u, 1, 1}, KILN_EMU_CHECK_ALL, 1,
                                 (total + 7) / 8 * 8 + (cross ? 16 : 0)),
                          {buf(img, "image"), buf(C, "C"), buf(D, "D"), buf(p, "params")});
  if (!res.report.empty()) return res;
  const bool zero = flags & 1024;
  // Fragment order (PTX ISA, wgmma D for m64nN f32): thread t = 32 w + lane, register i
  // holds row 16 w + lane / 4 + 8 * bit 1 of i, column 8 * (i / 4) + 2 * (lane % 4) + bit 0.
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < regs; ++i) {
      const int w = t / 32, lane = t % 32;
      const int row = 16 * w + lane / 4 + 8 * ((i >> 1) & 1);
      const int col = 8 * (i / 4) + 2 * (lane % 4) + (i & 1);
      const std::size_t at = std::size_t(t * regs + i);
      float want = zero ? 0.0f : C[at];
      double exact = zero ? 0.0 : C[at], scale = std::fabs(exact);
      for (int k = 0; k < K; ++k) {
        const float a = A[std::size_t(row * K + k)], b = B[std::size_t(col * K + k)];
        want = std::fma(a, b, want);
        exact += double(a) * double(b);
        scale += std::fabs(double(a) * double(b));
      }
      INFO("thread " << t << " register " << i << " (row " << row << ", column " << col << ")");
      REQUIRE(D[at] == want); // k order, exact products: bit-identical
      res.max_rel = std::max(res.max_rel, std::fabs(double(D[at]) - exact) / scale);
    }
  return res;
}

} // namespace

TEST_CASE(
    "wgmma: every N instantiated, every swizzle mode, f16 / bf16 / tf32, against the layouts") {
  for (int N : {16, 32, 64, 128, 256})
    for (int kind : {0, 1, 2})
      for (unsigned W : {0u, 32u, 64u, 128u}) {
        CAPTURE(N);
        CAPTURE(kind);
        CAPTURE(W);
        const WgmmaResult r = run_wgmma(N, kind, W);
        INFO(r.report);
        REQUIRE(r.report.empty());
        CHECK(r.max_rel < 1e-5);
      }
  // Both operands MN-major (imm-trans 1, as weight gradients read them): f16 and bf16 in the
  // swizzled modes; tf32 has no transposed form.
  for (int N : {16, 32, 64, 128, 256})
    for (int kind : {0, 1})
      for (unsigned W : {32u, 64u, 128u}) {
        CAPTURE(N);
        CAPTURE(kind);
        CAPTURE(W);
        const WgmmaResult r = run_wgmma(N, kind, W, 4096);
        INFO(r.report);
        REQUIRE(r.report.empty());
        CHECK(r.max_rel < 1e-5);
      }
  // scale-d = 0: the accumulator's old contents (NaN) are ignored.
  const WgmmaResult z = run_wgmma(64, 0, 128, 1024);
  INFO(z.report);
  CHECK(z.report.empty());
}

TEST_CASE("planted bugs: wgmma without the async-proxy fence; an accumulator read before wait") {
  const WgmmaResult nofence = run_wgmma(64, 0, 128, 256);
  INFO(nofence.report);
  CHECK(contains(nofence.report, "no fence.proxy.async"));
  const WgmmaResult early = run_wgmma(32, 1, 64, 512);
  INFO(early.report);
  CHECK(contains(early.report, "accessed before the wgmma_wait"));
}

TEST_CASE("one warpgroup's stores read by another's wgmma: released by an mbarrier, or a race") {
  // The Hopper conv's tf32 kernels round B, which both consumers read, each a share of it.
  const WgmmaResult ok = run_wgmma(64, 0, 128, 0, true);
  INFO(ok.report);
  CHECK(ok.report.empty());
  CHECK(ok.max_rel < 1e-5);
  const WgmmaResult planted = run_wgmma(64, 0, 128, 2048, true);
  INFO(planted.report);
  CHECK(contains(planted.report, "a wgmma reads it, thread"));
}

TEST_CASE("planted bug: a stage released to the producer before its wgmmas completed") {
  const int iters = 3;
  std::vector<std::uint16_t> A(std::size_t(iters) * 64 * 64), B(A.size());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < A.size(); ++i) {
    A[i] = kiln::float_to_half_bits(u(rng));
    B[i] = kiln::float_to_half_bits(u(rng));
  }
  auto map = [](const void* p) {
    KilnTensorMap m;
    std::memset(&m, 0, sizeof m);
    m = KilnTensorMap{p, {64, 64 * iters}, {2, 128}, {64, 64}, 2, 2, 128, 0};
    return std::vector<KilnTensorMap>{m};
  };
  std::vector<KilnTensorMap> am = map(A.data()), bm = map(B.data());
  std::vector<int> p = {iters};
  std::vector<float> D(128 * 32, -1.0f);
  auto run = [&](const char* kernel) {
    return try_launch(kernel, config({1, 1, 1}, {256, 1, 1}, KILN_EMU_CHECK_ALL, 1, 16384),
                      {buf(am, "a_map"), buf(bm, "b_map"), buf(A, "A"), buf(B, "B"), buf(D, "D"),
                       buf(p, "params")});
  };
  const std::string ok = run("wgmma_ring_ok");
  INFO(ok);
  REQUIRE(ok.empty());
  // D = sum_i A_i B_i^T, in the fragment order (thread t, register r: hopper_cuda.cuh).
  for (int t = 0; t < 128; ++t)
    for (int r = 0; r < 32; ++r) {
      const int row = 16 * (t / 32) + t % 32 / 4 + 8 * ((r >> 1) & 1);
      const int col = 8 * (r / 4) + 2 * (t % 4) + (r & 1);
      double want = 0, scale = 0;
      for (int i = 0; i < iters; ++i)
        for (int k = 0; k < 64; ++k) {
          const double x =
              double(kiln::half_bits_to_float(A[std::size_t((64 * i + row) * 64 + k)])) *
              double(kiln::half_bits_to_float(B[std::size_t((64 * i + col) * 64 + k)]));
          want += x;
          scale += std::fabs(x);
        }
      REQUIRE(std::fabs(double(D[std::size_t(t * 32 + r)]) - want) <= 1e-6 * scale);
    }
  const std::string early = run("wgmma_ring_early_release");
  INFO(early);
  CHECK(contains(early, "rewritten before the wgmma_wait covering it"));
}

TEST_CASE("planted bugs: an im2col copy from outside its bounding box; a map of the wrong mode") {
  std::vector<std::uint8_t> src(64 * 5 * 5 * 2 * 2, 1);
  std::vector<KilnTensorMap> map(1);
  KilnTensorMap& m = map[0];
  std::memset(&m, 0, sizeof m);
  m.global = src.data();
  m.rank = 4;
  m.elem_bytes = 2;
  m.swizzle = 128;
  m.mode = KILN_TMA_IM2COL;
  const unsigned long long dims[4] = {64, 5, 5, 2};
  unsigned long long stride = 2;
  for (int d = 0; d < 4; ++d) {
    m.dims[d] = dims[d];
    m.strides[d] = stride;
    stride *= dims[d];
    m.im2col.element_strides[d] = 1;
  }
  m.im2col.channels = 64;
  m.im2col.pixels = 16;
  m.im2col.lower[0] = m.im2col.lower[1] = -1; // a 3x3 pad 1: positions -1 .. 3
  m.im2col.upper[0] = m.im2col.upper[1] = -1;
  std::vector<std::uint32_t> out(64 * 16 / 2);
  // w = 4: past the box's last position across (3).
  std::vector<int> p = {0, 4, 0, 0, 1, 1, 64 * 16 / 2};
  std::string r =
      try_launch("tma_im2col_load", config({1, 1, 1}, {32, 1, 1}, KILN_EMU_CHECK_ALL, 1, 2048),
                 {buf(map, "map"), buf(src, "tensor"), buf(out, "out"), buf(p, "params")});
  INFO(r);
  CHECK(contains(r, "lies outside the bounding box"));
  p[1] = 3; // the box's last position: clean
  launch("tma_im2col_load", config({1, 1, 1}, {32, 1, 1}, KILN_EMU_CHECK_ALL, 1, 2048),
         {buf(map, "map"), buf(src, "tensor"), buf(out, "out"), buf(p, "params")});
  // A tiled copy through an im2col map.
  std::vector<int> q = {4, 0, 0, 0, 0, 0, 64 * 16 / 2};
  r = try_launch("tma_box_load", config({1, 1, 1}, {32, 1, 1}, KILN_EMU_CHECK_ALL, 1, 2048),
                 {buf(map, "map"), buf(src, "tensor"), buf(out, "out"), buf(q, "params")});
  INFO(r);
  CHECK(contains(r, "on an im2col tensor map"));
}
