// The Hopper conv family's instances (conv_instances.cpp): on the emulator (all checks on)
// against a float64 convolution written here, with fresh random inputs and a poisoned
// output; and compiled by NVRTC for sm_90a with the census of their SASS: HGMMA and UTMALDG
// present, no HMMA, no local memory.
#include "generator/compile/nvrtc.hpp"
#include "generator/compile/sass_census.hpp"
#include "runtime/cuda/tensor_map.hpp"
#include "runtime/emu/module.hpp"
#include "runtime/emu/tensor_map.h"
#include "runtime/error.hpp"
#include "runtime/half.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Instance {
  const char* name;
  int dtype; // 0 f16, 1 bf16, 2 f32 (tf32 on the tensor cores)
  int N, C, H, W, O, KH, KW, PH, PW, TP, TQ, BN, STAGES, CONSUMERS;
  bool bias, residual, relu;
};

// As conv_instances.cpp declares them.
const Instance kInstances[] = {
    {"F16_T8x8_BN64_S3_C1", 0, 2, 64, 10, 10, 64, 3, 3, 1, 1, 8, 8, 64, 3, 1, true, false, true},
    {"BF16_T8x16_BN128_S2_C2", 1, 1, 128, 6, 9, 128, 1, 1, 0, 0, 8, 16, 128, 2, 2, false, true,
     false},
    {"F16_T8x8_BN64_S4_C1", 0, 1, 64, 5, 7, 96, 3, 3, 1, 1, 8, 8, 64, 4, 1, true, true, true},
    {"F16_T8x16_BN256_S2_C2", 0, 1, 64, 8, 8, 256, 3, 3, 1, 1, 8, 16, 256, 2, 2, true, false,
     false},
    {"TF32_T8x8_BN128_S3_C1", 2, 1, 64, 9, 6, 128, 3, 3, 1, 1, 8, 8, 128, 3, 1, true, true, true},
};

// A tensor of the instance's element type, as bytes.
struct Elems {
  int dtype;
  std::vector<std::uint8_t> bytes;
  Elems(int t, std::size_t n) : dtype(t), bytes(n * size()) {}
  std::size_t size() const { return dtype == 2 ? 4 : 2; }
  std::size_t count() const { return bytes.size() / size(); }
  void set(std::size_t i, float v) {
    if (dtype == 2) {
      std::memcpy(&bytes[i * 4], &v, 4);
      return;
    }
    const std::uint16_t b = dtype == 1 ? kiln::float_to_bf16_bits(v) : kiln::float_to_half_bits(v);
    std::memcpy(&bytes[i * 2], &b, 2);
  }
  double get(std::size_t i) const {
    if (dtype == 2) {
      float v;
      std::memcpy(&v, &bytes[i * 4], 4);
      return v;
    }
    std::uint16_t b;
    std::memcpy(&b, &bytes[i * 2], 2);
    return dtype == 1 ? kiln::bf16_bits_to_float(b) : kiln::half_bits_to_float(b);
  }
  kiln::EmuBuffer buffer(const char* name) { return {bytes.data(), bytes.size(), name}; }
};

KilnTensorMap map_of(const void* p, unsigned elem, int rank,
                     std::initializer_list<unsigned long long> dims,
                     std::initializer_list<unsigned> box) {
  KilnTensorMap m;
  std::memset(&m, 0, sizeof m);
  m.global = p;
  m.rank = unsigned(rank);
  m.elem_bytes = elem;
  m.swizzle = 128;
  unsigned long long stride = elem;
  int d = 0;
  for (auto x : dims) {
    m.dims[d] = x;
    m.strides[d++] = stride;
    stride *= x;
  }
  d = 0;
  for (auto b : box)
    m.box[d++] = b;
  return m;
}

// Runs one instance on the emulator; returns max |y - ref| / (|ref| + 1) over y.
double run_emu(const kiln::EmuModule& mod, const Instance& in, unsigned seed) {
  const int OH = in.H + 2 * in.PH - in.KH + 1, OW = in.W + 2 * in.PW - in.KW + 1;
  const int K = in.KH * in.KW * in.C;
  const unsigned e = in.dtype == 2 ? 4 : 2, bkc = 128 / e;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](Elems& v) {
    for (std::size_t i = 0; i < v.count(); ++i)
      v.set(i, u(rng));
  };
  Elems x(in.dtype, std::size_t(in.N) * in.H * in.W * in.C), w(in.dtype, std::size_t(in.O) * K),
      bias(in.dtype, std::size_t(in.O)), res(in.dtype, std::size_t(in.N) * OH * OW * in.O),
      y(in.dtype, res.count());
  fill(x);
  fill(w);
  fill(bias);
  fill(res);
  for (std::size_t i = 0; i < y.count(); ++i) // poison: every element must be written
    y.set(i, std::nanf(""));
  std::vector<KilnTensorMap> xmap = {map_of(x.bytes.data(), e, 4,
                                            {(unsigned long long)in.C, (unsigned long long)in.W,
                                             (unsigned long long)in.H, (unsigned long long)in.N},
                                            {bkc, unsigned(in.TQ), unsigned(in.TP), 1})};
  std::vector<KilnTensorMap> wmap = {map_of(w.bytes.data(), e, 2,
                                            {(unsigned long long)K, (unsigned long long)in.O},
                                            {bkc, unsigned(in.BN)})};
  std::vector<kiln::EmuBuffer> args = {{xmap.data(), sizeof(KilnTensorMap), "x_map"},
                                       {wmap.data(), sizeof(KilnTensorMap), "w_map"},
                                       x.buffer("x"),
                                       w.buffer("w"),
                                       y.buffer("y")};
  if (in.bias) args.push_back(bias.buffer("bias"));
  if (in.residual) args.push_back(res.buffer("residual"));
  kiln::EmuLaunchConfig c;
  const int tiles = ((OH + in.TP - 1) / in.TP) * ((OW + in.TQ - 1) / in.TQ);
  c.grid = {unsigned(tiles), unsigned((in.O + in.BN - 1) / in.BN), unsigned(in.N)};
  c.block = {unsigned(128 * (1 + in.CONSUMERS)), 1, 1};
  c.checks = KILN_EMU_CHECK_ALL;
  c.workers = 2;
  c.dynamic_smem =
      std::size_t(1024 + in.STAGES * (64 * in.CONSUMERS + in.BN) * 128 + 16 * in.STAGES);
  mod.launch(std::string("conv_hopper_") + in.name, c, args);
  // What the tensor cores multiply: f16 and bf16 operands as they are; a float's top 19
  // bits for tf32 (its low 13 mantissa bits ignored), so the products here are the kernel's
  // and the tolerance covers float accumulation and y's rounding only.
  auto operand = [&](double v) {
    if (in.dtype != 2) return v;
    return double(std::bit_cast<float>(std::bit_cast<std::uint32_t>(float(v)) & 0xffffe000u));
  };
  double worst = 0;
  for (int n = 0; n < in.N; ++n)
    for (int p = 0; p < OH; ++p)
      for (int q = 0; q < OW; ++q)
        for (int o = 0; o < in.O; ++o) {
          double acc = 0;
          for (int r = 0; r < in.KH; ++r)
            for (int s = 0; s < in.KW; ++s) {
              const int h = p - in.PH + r, ww = q - in.PW + s;
              if (h < 0 || h >= in.H || ww < 0 || ww >= in.W) continue;
              for (int ci = 0; ci < in.C; ++ci)
                acc += operand(x.get(((std::size_t(n) * in.H + h) * in.W + ww) * in.C + ci)) *
                       operand(w.get(std::size_t(o) * K + (r * in.KW + s) * in.C + ci));
            }
          const std::size_t at = ((std::size_t(n) * OH + p) * OW + q) * in.O + o;
          if (in.bias) acc += bias.get(std::size_t(o));
          if (in.residual) acc += res.get(at);
          if (in.relu) acc = acc > 0 ? acc : 0;
          const double got = y.get(at);
          REQUIRE(std::isfinite(got)); // every element written
          worst = std::max(worst, std::fabs(got - acc) / (std::fabs(acc) + 1.0));
        }
  return worst;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("Hopper conv instances on the emulator match a float64 convolution") {
  const kiln::EmuModule mod(KILN_HOPPER_CONV_MODULE);
  for (const Instance& in : kInstances) {
    const std::string name = in.name;
    CAPTURE(name);
    for (unsigned seed : {1u, 2u}) {
      const double err = run_emu(mod, in, seed);
      MESSAGE(name << " seed " << seed << ": max |y - ref| / (|ref| + 1) = " << err);
      // One rounding of y: f16 2^-11, bf16 2^-8; f32 y: float accumulation only.
      CHECK(err < (in.dtype == 1 ? 1e-2 : in.dtype == 2 ? 5e-5 : 2e-3));
    }
  }
}

TEST_CASE("Hopper conv instances compile with NVRTC for sm_90a: HGMMA, UTMALDG, no local memory") {
  const std::string src = read_file(KILN_HOPPER_CONV_SOURCE);
  REQUIRE(!src.empty());
  for (const Instance& in : kInstances) {
    const std::string entry = std::string("conv_hopper_") + in.name;
    CAPTURE(entry);
    // This instance's kernel alone, so that the census is its own.
    std::string one;
    std::istringstream lines(src);
    for (std::string line; std::getline(lines, line);)
      if (!line.starts_with("KILN_HOPPER_CONV(") ||
          line == "KILN_HOPPER_CONV(" + std::string(in.name) + ")")
        one += line + "\n";
    const kiln::CompileOutput out = kiln::nvrtc_compile(one, "conv_instances.cu", entry, "sm_90a");
    INFO(out.log);
    REQUIRE(out.ok);
    CHECK(out.log.find("C7508") == std::string::npos); // setmaxnreg not ignored
    MESSAGE(entry << ": " << out.resources.registers << " registers, " << out.resources.stack_bytes
                  << " bytes of stack, spills " << out.resources.spill_stores << "/"
                  << out.resources.spill_loads);
    CHECK(out.resources.found);
    CHECK(out.resources.stack_bytes == 0);
    CHECK(out.resources.spill_stores + out.resources.spill_loads == 0);
    const std::string cubin = std::string(KILN_HOPPER_CONV_TMP) + "/" + entry + ".cubin";
    {
      std::ofstream f(cubin, std::ios::binary);
      f.write(out.image.data(), std::streamsize(out.image.size()));
    }
    const auto census = kiln::sass_census(cubin);
    if (!census) {
      MESSAGE("no cuobjdump (KILN_CUOBJDUMP or build/tools): census skipped for " << entry);
      continue;
    }
    MESSAGE(entry << ": HGMMA " << census->hgmma << ", HMMA " << census->hmma << ", UTMALDG "
                  << census->tma_loads << ", LDL " << census->local_loads << ", STL "
                  << census->local_stores);
    CHECK(census->hgmma > 0);
    CHECK(census->hmma == 0);
    CHECK(census->tma_loads > 0);
    CHECK(census->local_loads == 0);
    CHECK(census->local_stores == 0);
  }
}

TEST_CASE("tensor-map descriptions are checked before the driver encodes them (NVRTC suite)") {
  alignas(16) static std::uint16_t data[64 * 64];
  KilnTensorMap m = map_of(data, 2, 2, {64, 64}, {64, 32});
  CHECK(std::string(kiln::tensor_map_problem(m)).empty());
  KilnTensorMap bad = m;
  bad.box[0] = 72; // 144-byte rows under a 128-byte swizzle
  CHECK(std::string(kiln::tensor_map_problem(bad)) == "a box row wider than the swizzle span");
  bad = m;
  bad.strides[1] = 120;
  CHECK(std::string(kiln::tensor_map_problem(bad)) ==
        "a stride that is not a multiple of 16 bytes below 2^40");
  bad = m;
  bad.global = reinterpret_cast<const char*>(data) + 2;
  CHECK(std::string(kiln::tensor_map_problem(bad)) == "global address not 16-byte aligned");
  bad = m;
  bad.rank = 6;
  CHECK(std::string(kiln::tensor_map_problem(bad)) == "rank outside 1..5");
  // Invalid descriptions are refused before the driver is asked for anything.
  CHECK_THROWS_WITH_AS(kiln::encode_tensor_map(bad), "tensor map: rank outside 1..5", kiln::Error);
}
