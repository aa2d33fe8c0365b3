#include "generator/gpu/gpu_desc.hpp"
#include "generator/gpu/occupancy.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace kiln;

TEST_CASE("occupancy follows the limiting resource") {
  const GpuDesc a100 = load_gpu("a100"), t4 = load_gpu("t4");
  // 256 threads, 32 registers, no shared memory: 2048 threads per SM on an A100.
  Occupancy o = occupancy(a100, 256, 32, 0);
  CHECK(o.blocks_per_sm == 8);
  CHECK(o.warps_fraction == doctest::Approx(1.0));
  // Turing reserves no shared memory per block: a kernel without any must not divide by zero.
  o = occupancy(t4, 256, 32, 0);
  CHECK(o.blocks_per_sm == 4); // 1024 threads per SM
  // Shared memory bound: 48 KiB per block on 164 KiB (+1 KiB reserved each) -> 3 blocks.
  o = occupancy(a100, 128, 32, 48 * 1024);
  CHECK(o.blocks_per_sm == 3);
  CHECK(o.limiter == "shared memory");
  // Register bound: 255 registers x 256 threads = 65280 per block, one block.
  o = occupancy(a100, 256, 255, 0);
  CHECK(o.blocks_per_sm == 1);
  CHECK(o.limiter == "registers");
  // Too much shared memory or too many threads: cannot run.
  CHECK(occupancy(a100, 128, 32, 200 * 1024).blocks_per_sm == 0);
  CHECK(occupancy(a100, 2048, 32, 0).blocks_per_sm == 0);
}

TEST_CASE("shipped descriptors load and have distinct identities") {
  std::vector<std::string> ids;
  for (const ShippedGpu& g : shipped_gpus()) {
    CHECK(g.desc.sm_count > 0);
    CHECK(g.desc.identity().find(g.desc.name) == 0);
    ids.push_back(g.desc.identity());
  }
  CHECK(ids.size() == 6);
  std::sort(ids.begin(), ids.end());
  CHECK(std::unique(ids.begin(), ids.end()) == ids.end());
  CHECK(load_gpu("h200").compute_capability() == 90);
  CHECK(load_gpu("t4").compute_capability() == 75);
}

TEST_CASE("descriptor validation") {
  const std::string good = nlohmann::json(gpu_to_json(load_gpu("a100"))).dump();
  CHECK_NOTHROW(parse_gpu(good, "g.json"));
  auto with = [&](const std::string& key, nlohmann::json v) {
    nlohmann::json j = nlohmann::json::parse(good);
    j[key] = v;
    return j.dump();
  };
  CHECK_THROWS_WITH_AS(parse_gpu(with("arch", "gfx90a"), "g.json"), doctest::Contains("/arch"), Error);
  CHECK_THROWS_WITH_AS(parse_gpu(with("sm_count", 0), "g.json"), doctest::Contains("/sm_count"), Error);
  CHECK_THROWS_WITH_AS(parse_gpu(with("sm_count", "108"), "g.json"), doctest::Contains("expected an integer"), Error);
  CHECK_THROWS_WITH_AS(parse_gpu(with("warp_size", 64), "g.json"), doctest::Contains("32-thread warps"), Error);
  CHECK_THROWS_WITH_AS(parse_gpu(with("colour", 1), "g.json"), doctest::Contains("unknown key"), Error);
  CHECK_THROWS_WITH_AS(load_gpu("v200"), doctest::Contains("no shipped GPU descriptor"), Error);
}
