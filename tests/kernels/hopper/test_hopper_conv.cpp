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
#include "tests/kernels/hopper/conv_cases.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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

using namespace hopper_test;

kiln::EmuBuffer buffer(Elems& e, const char* name) {
  return {e.bytes.data(), e.bytes.size(), name};
}

// Runs one instance on the emulator; returns max |y - ref| / (|ref| + 1) over y.
double run_emu(const kiln::EmuModule& mod, const Instance& in, unsigned seed) {
  Problem pb(in, seed);
  std::vector<KilnTensorMap> xmaps = pb.x_maps(in, pb.x.bytes.data());
  std::vector<KilnTensorMap> wmap = {pb.w_map(in, pb.w.bytes.data())};
  std::vector<kiln::EmuBuffer> args;
  for (KilnTensorMap& m : xmaps)
    args.push_back({&m, sizeof(KilnTensorMap), "x_map"});
  args.push_back({wmap.data(), sizeof(KilnTensorMap), "w_map"});
  args.insert(args.end(), {buffer(pb.x, "x"), buffer(pb.w, "w"), buffer(pb.y, "y")});
  if (in.bias) args.push_back(buffer(pb.bias, "bias"));
  if (in.residual) args.push_back(buffer(pb.res, "residual"));
  kiln::EmuLaunchConfig c;
  // Seed 1: one tile per block; seed 2: three persistent blocks looping over the tiles (in
  // clusters: one cluster).
  c.grid = {seed == 1 ? pb.tiles(in) : Problem::blocks(in, pb.tiles(in), 3u), 1, 1};
  c.cluster = {unsigned(in.cluster()), 1, 1};
  c.block = {Problem::threads(in), 1, 1};
  c.checks = KILN_EMU_CHECK_ALL;
  c.workers = 2;
  c.dynamic_smem = Problem::smem(in);
  mod.launch(std::string("conv_hopper_") + in.name, c, args);
  return pb.error(in);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

} // namespace

using namespace hopper_test;

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
      if (!line.starts_with("KILN_HOPPER_CONV") ||
          line.find("(" + std::string(in.name) + ")") != std::string::npos ||
          line.find("(" + std::string(in.name) + ",") != std::string::npos)
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
    // A cluster's instance multicasts what its blocks share, and fences at GPU scope only at
    // its two cluster barriers (none in its main loop); a lone block does neither.
    const bool clustered = std::string_view(in.name).find("_CL") != std::string_view::npos;
    CHECK((census->tma_multicasts > 0) == clustered);
    CHECK(census->gpu_fences == (clustered ? 2 : 0));
  }
}

TEST_CASE("tensor-map descriptions are checked before the driver encodes them (NVRTC suite)") {
  alignas(16) static std::uint16_t data[64 * 64];
  KilnTensorMap m = map_of(data, 2, 2, {64, 64}, {64, 32}, 128);
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
