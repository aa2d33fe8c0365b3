// The cost model's main-loop ceilings (generator/cost/main_loop.hpp) and the implicit GEMM's
// description of its loop (select/families/igemm/loop_model.cpp).
#include "generator/cost/kernel_cost.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/select/families/igemm/loop_model.hpp"
#include "generator/select/select.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace kiln;

namespace {

// One fragment set (the loop the instruction counts were first fitted to), and double-buffered.
const IgemmTile kSmall{64, 32, 2, 2, 4, 72, 72, 0, 0, false, 1},
    kLarge{128, 128, 2, 2, 3, 228, 228, 0, 0, false, 1};
const IgemmTile kSmall2{64, 32, 2, 2, 4, 72, 72}, kLarge2{128, 128, 2, 2, 3, 255, 255};

// resnet50's layer3 3x3 conv at batch 32 (M = 32 x 14 x 14, N = 256, K = 9 x 256), f16.
KernelWork layer3_conv(const IgemmTile& t, int regs) {
  const double M = 32 * 14 * 14, N = 256, K = 9 * 256;
  KernelWork w;
  w.flops = 2 * M * N * K;
  w.bytes = 2 * (M * 256 + N * K + M * N); // x (about), w, y
  w.math = Math::fp16;
  w.efficiency = 0.8;
  w.threads = 32 * t.wm * t.wn;
  w.blocks = int64_t((M + t.bm - 1) / t.bm) * int64_t((N + t.bn - 1) / t.bn);
  w.registers_per_thread = regs;
  w.shared_bytes = int64_t(t.stages) * (t.bm + t.bn) * 80;
  w.loop = igemm_main_loop({t, 2, t.stages, true, true, true});
  return w;
}

} // namespace

TEST_CASE("the implicit GEMM's loop: shared bytes and instructions per mma from the tile") {
  // 64x32 block, 32x16 warp tiles: per k tile 96 rows x 64 B stored, 4 warps each reading
  // 48 rows x 64 B, over 32 mma: 576 B per mma. 128x128 with 64x64 warp tiles: 192.
  const MainLoop s = igemm_main_loop({kSmall, 2, 4, true, true, true});
  const MainLoop l = igemm_main_loop({kLarge, 2, 3, true, true, true});
  CHECK(s.mma_flops == 4096);
  CHECK(s.smem_bytes_per_mma == doctest::Approx(576));
  CHECK(l.smem_bytes_per_mma == doctest::Approx(192));
  // The instruction counts fitted to the SASS: 73 per 8 mma and 196 per 64.
  CHECK(s.issue_per_mma == doctest::Approx(73.0 / 8));
  CHECK(l.issue_per_mma == doctest::Approx(196.0 / 64));
  CHECK(l.mmas_per_step == 64);
  // Double-buffered fragments: about 30 more instructions per k tile (SASS of resnet18's 3x3
  // convs: 109 per 8 and 221 per 64) and no shared-load latency exposed per k-step.
  const MainLoop s2 = igemm_main_loop({kSmall2, 2, 4, true, true, true});
  const MainLoop l2 = igemm_main_loop({kLarge2, 2, 3, true, true, true});
  CHECK(s2.issue_per_mma == doctest::Approx(103.0 / 8));
  CHECK(l2.issue_per_mma == doctest::Approx(226.0 / 64));
  CHECK(l2.smem_bytes_per_mma == l.smem_bytes_per_mma);
  CHECK(l2.exposed_clocks_per_step < l.exposed_clocks_per_step);
  CHECK(l2.exposed_clocks_per_step == 20); // the k tile's barrier alone
  // tf32: k8 mma, the same bytes per k tile over twice the mma, plus a cvt per register.
  const MainLoop t = igemm_main_loop({kLarge, 4, 3, true, true, true});
  CHECK(t.mma_flops == 2048);
  CHECK(t.issue_per_mma > l.issue_per_mma);
  // Weights rounded once in the prepare phase: B's cvt (2 per n tile) leave the loop.
  const MainLoop tw = igemm_main_loop({kLarge, 4, 3, true, true, true, true});
  CHECK((t.issue_per_mma - tw.issue_per_mma) * t.mmas_per_step == doctest::Approx(2 * 8 * 2));
  // Element loads of x cost far more issue than cp.async.
  CHECK(igemm_main_loop({kLarge, 2, 3, false, true, true}).issue_per_mma > 2 * l.issue_per_mma);
}

TEST_CASE("ceilings: the large tile's shared-memory ceiling is three times the small one's") {
  GpuDesc h100 = load_gpu("h100");
  h100.l2_bytes_per_clock = 0; // the shared-memory and issue limits alone (L2: below)
  const CostEstimate s = estimate_kernel(h100, layer3_conv(kSmall, 72));
  const CostEstimate l = estimate_kernel(h100, layer3_conv(kLarge, 228));
  CHECK(s.ceilings.smem == doctest::Approx(l.ceilings.smem / 3).epsilon(0.01));
  // 128 B per clock over 576 B per mma, at Hopper's 4096 FLOP per clock per SM (one
  // m16n8k16 a clock): 22%; the large tile 67%.
  CHECK(s.ceilings.smem == doctest::Approx(128.0 / 576));
  CHECK(l.ceilings.smem == doctest::Approx(128.0 / 192));
  CHECK(s.ceilings.ceiling() < 0.3);
  CHECK(l.ceilings.ceiling() > 0.6);
  CHECK(s.ceilings.limiter() == "smem");
  CHECK(l.ceilings.limiter() == "smem");
  // The issue ceiling binds the small tile too, not the large one.
  CHECK(s.ceilings.issue < 1);
  CHECK(l.ceilings.issue == 1);
  // So the large tile is priced faster although the small one keeps 7 blocks per SM
  // resident to its 2 (the ranking the occupancy-only model had the wrong way round).
  CHECK(s.occ.blocks_per_sm > l.occ.blocks_per_sm);
  CHECK(l.micros < s.micros);
  CHECK(l.floor_micros < s.floor_micros);
}

TEST_CASE("latency hiding from occupancy: too few warps with too little work each") {
  const GpuDesc h100 = load_gpu("h100");
  MainLoop l = igemm_main_loop({kLarge, 2, 3, true, true, true});
  // Two blocks of four warps: two warps per sub-partition, 64 mma each between waits.
  CHECK(loop_latency_hiding(h100, Math::fp16, l, 2, 8) == doctest::Approx(1.0));
  // One warp with 4 mma between 80-cycle waits cannot keep its sub-partition busy.
  l.mmas_per_step = 4;
  const double one = loop_latency_hiding(h100, Math::fp16, l, 1, 4);
  CHECK(one < 0.5);
  CHECK(loop_latency_hiding(h100, Math::fp16, l, 4, 16) > one);
  // Bytes in flight: one stage ahead of one block does not cover the latency.
  MainLoop thin = igemm_main_loop({kLarge, 2, 2, true, true, true});
  thin.global_bytes_in_flight_per_block /= 8;
  CHECK(loop_latency_hiding(h100, Math::fp16, thin, 1, 64) < 1);
  // A loop without MMAs described is not priced by it.
  KernelWork w = layer3_conv(kLarge, 228);
  w.loop = MainLoop{};
  const CostEstimate e = estimate_kernel(h100, w);
  CHECK(e.ceilings.smem == 1);
  CHECK(e.ceilings.issue == 1);
}

TEST_CASE("an MMA that reaches part of the peak caps the math ceiling") {
  GpuDesc h100 = load_gpu("h100");
  h100.l2_bytes_per_clock = 0; // L2 would cap this tile at 0.5 too
  KernelWork w = layer3_conv(kLarge, 228);
  const CostEstimate full = estimate_kernel(h100, w);
  w.loop.peak_fraction = 0.5;
  const CostEstimate half = estimate_kernel(h100, w);
  CHECK(half.ceilings.math == doctest::Approx(0.5));
  CHECK(half.ceilings.limiter() == "math");
  CHECK(half.micros > full.micros);
}

TEST_CASE("descriptors carry shared-memory bandwidth and issue rate") {
  for (const ShippedGpu& g : shipped_gpus()) {
    CHECK(g.desc.shared_memory_bytes_per_clock == (g.desc.compute_capability() == 75 ? 64 : 128));
    CHECK(g.desc.issue_slots_per_clock == 4);
  }
  nlohmann::json j = nlohmann::json(gpu_to_json(load_gpu("h100")));
  j.erase("shared_memory_bytes_per_clock");
  CHECK_THROWS_WITH_AS(parse_gpu(j.dump(), "g.json"),
                       doctest::Contains("shared_memory_bytes_per_clock"), Error);
  j = nlohmann::json(gpu_to_json(load_gpu("h100")));
  j["issue_slots_per_clock"] = 0;
  CHECK_THROWS_WITH_AS(parse_gpu(j.dump(), "g.json"), doctest::Contains("/issue_slots_per_clock"),
                       Error);
}

TEST_CASE("the L2 ceiling: bytes asked of L2 per MMA at each SM's share; multicast halves B's") {
  GpuDesc h100 = load_gpu("h100");
  CHECK(h100.l2_bytes_per_clock == 0); // unset: it chose plans an H100 ran slower
  h100.l2_bytes_per_clock = 32;
  // The Hopper family's 128 x 256 tile (two consumers), f16, per warp's share of a wgmma
  // (m64n256k16 over 4 warps: 131072 FLOP, 32 SM clocks at 4096 FLOP per clock): per 128-byte
  // stage 384 rows stored over 32 warp wgmmas, 1536 bytes each; in clusters of two, A's 128
  // rows and half of B's 256: 1024.
  MainLoop l;
  l.mma_flops = 2.0 * 16 * 256 * 16;
  l.smem_bytes_per_mma = 0;
  l.issue_per_mma = 1;
  l.mmas_per_step = 4;
  l.global_bytes_per_mma = 384.0 * 128 / 32;
  l.global_bytes_in_flight_per_block = 3 * 384.0 * 128; // three stages ahead
  KernelWork w = layer3_conv(kLarge, 228);
  w.loop = l;
  const CostEstimate alone = estimate_kernel(h100, w);
  CHECK(alone.ceilings.l2 == doctest::Approx(32.0 / 48));
  CHECK(alone.ceilings.limiter() == "l2");
  w.loop.l2_bytes_per_mma = 256.0 * 128 / 32; // the weight tile multicast to two blocks
  const CostEstimate cluster = estimate_kernel(h100, w);
  CHECK(cluster.ceilings.l2 == doctest::Approx(1.0));
  CHECK(cluster.micros < alone.micros);
  // A descriptor without the figure has no L2 ceiling.
  GpuDesc none = h100;
  none.l2_bytes_per_clock = 0;
  w.loop.l2_bytes_per_mma = -1;
  CHECK(estimate_kernel(none, w).ceilings.l2 == 1);
}

TEST_CASE("l2_bytes_per_clock is optional in a descriptor, and checked") {
  nlohmann::json j = nlohmann::json(gpu_to_json(load_gpu("h100")));
  CHECK(!j.contains("l2_bytes_per_clock"));
  j["l2_bytes_per_clock"] = 32;
  CHECK(parse_gpu(j.dump(), "g.json").l2_bytes_per_clock == 32);
  CHECK(nlohmann::json(gpu_to_json(parse_gpu(j.dump(), "g.json")))["l2_bytes_per_clock"] == 32);
  j.erase("l2_bytes_per_clock");
  CHECK(parse_gpu(j.dump(), "g.json").l2_bytes_per_clock == 0);
  CHECK(!nlohmann::json(gpu_to_json(parse_gpu(j.dump(), "g.json"))).contains("l2_bytes_per_clock"));
  j["l2_bytes_per_clock"] = -3;
  CHECK_THROWS_WITH_AS(parse_gpu(j.dump(), "g.json"), doctest::Contains("/l2_bytes_per_clock"),
                       Error);
  CHECK(load_gpu("t4").l2_bytes_per_clock == 0);
}

TEST_CASE("near ties go to the variant with the most headroom in its own limits") {
  const auto cand = [](const char* name, double us, double l2, double dram) {
    Candidate c;
    c.variant.name = name;
    c.cost.micros = us;
    c.cost.ceilings.l2 = l2;
    c.cost.ceilings.dram = dram; // the layer's, not the kernel's: not weighed
    return c;
  };
  // Within 1% of the cheapest: b's own ceiling (0.5) beats a's (0.17); c is 2% dearer.
  std::vector<Candidate> v = {cand("a", 100, 0.17, 0.1), cand("b", 100.5, 0.5, 0.1),
                              cand("c", 102, 1, 0.1)};
  CHECK(prefer_headroom_among_near_ties(v));
  CHECK(v[0].variant.name == "b");
  CHECK(v[1].variant.name == "a");
  CHECK(v[2].variant.name == "c");
  // The cheapest with the most headroom stays; so does a lone candidate.
  std::vector<Candidate> w = {cand("b", 100, 0.5, 0.1), cand("a", 100.2, 0.17, 0.01)};
  CHECK(!prefer_headroom_among_near_ties(w));
  CHECK(w[0].variant.name == "b");
  std::vector<Candidate> one = {cand("a", 1, 0.1, 1)};
  CHECK(!prefer_headroom_among_near_ties(one));
}
