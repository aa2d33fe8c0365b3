#include "generator/tune/device_timing.hpp"
#include "generator/tune/merge.hpp"
#include "generator/tune/shard.hpp"
#include "runtime/error.hpp"
#include "tune_test_util.hpp"

#include <doctest/doctest.h>
#include <set>

using namespace kiln;
using namespace kiln::test;

TEST_CASE("shards: I/N parsed strictly") {
  CHECK(parse_shard("0/1").count == 1);
  CHECK(parse_shard("3/8").index == 3);
  for (const char* bad : {"", "1", "1/1", "-1/2", "0/0", "a/2", "0/2x", "2/2", "0//2", " 0/2"})
    CHECK_THROWS_AS(parse_shard(bad), Error);
}

TEST_CASE("shards partition the work items exactly") {
  for (size_t n : {0, 1, 7, 40})
    for (int count = 1; count <= 6; ++count) {
      std::multiset<size_t> seen;
      for (int i = 0; i < count; ++i) {
        const auto mine = shard_items(n, Shard{i, count});
        // round-robin: sizes differ by at most one
        CHECK(mine.size() >= n / size_t(count));
        CHECK(mine.size() <= n / size_t(count) + 1);
        seen.insert(mine.begin(), mine.end());
      }
      CHECK(seen.size() == n);
      CHECK(std::set<size_t>(seen.begin(), seen.end()).size() == n); // each exactly once
    }
}

TEST_CASE("merge: union of shards; a variant measured twice keeps the faster median") {
  TuningDb a = database(), b = database();
  a.add(measurement("k1", "v1", 0.30));
  a.add(measurement("k1", "v2", 0.20));
  b.add(measurement("k1", "v3", 0.10)); // the shape's winner came from the other shard
  b.add(measurement("k1", "v2", 0.25)); // measured in both: 0.20 kept
  b.add(measurement("k2", "v1", 0.40));
  const MergeResult r = merge_tuning_dbs({{"a.json", a}, {"b.json", b}});
  CHECK(r.conflicts == 1);
  CHECK(r.db.measurements.size() == 4);
  CHECK(r.db.winners().at("k1")->variant == "v3");
  for (const Measurement& m : r.db.measurements)
    if (m.variant == "v2") CHECK(m.median_ms == 0.20);
  // Order of the inputs does not matter.
  const MergeResult s = merge_tuning_dbs({{"b.json", b}, {"a.json", a}});
  CHECK(tuning_db_to_json(s.db).dump() == tuning_db_to_json(r.db).dump());
}

TEST_CASE("merge: other GPU identities, kiln versions or devices are refused") {
  TuningDb a = database();
  a.add(measurement("k", "v", 0.1));
  auto refused = [&](const TuningDb& other, const std::string& what) {
    try {
      merge_tuning_dbs({{"a.json", a}, {"other.json", other}});
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(m.find("other.json") != std::string::npos);
      CHECK(m.find(what) != std::string::npos);
      return true;
    }
    return false;
  };
  CHECK(refused(database("NVIDIA A100@11111111"), "GPU identity"));
  TuningDb old = database();
  old.kiln_version = "0.0.1";
  CHECK(refused(old, "kiln version"));
  TuningDb emu = database();
  emu.device = "emu";
  CHECK(refused(emu, "device"));
  CHECK_THROWS_AS(merge_tuning_dbs({}), Error);
}

TEST_CASE("timing: rotated copies exceed twice the L2 and stay a valid plan") {
  TimingOptions o;
  o.l2_bytes = 50 << 20;
  CHECK(rotation_copies(1 << 20, o) == 102); // 100 MiB / 1 MiB + 2
  CHECK(rotation_copies(int64_t(1) << 30, o) == 2);
  o.max_bytes = 8 << 20;
  CHECK(rotation_copies(1 << 20, o) == 8); // capped by memory
  Plan p;
  p.buffers = {Buffer{"x", {2, 3}, DType::f32, BufferRole::input, 0},
               Buffer{"y", {2, 3}, DType::f32, BufferRole::output, 256}};
  p.inputs = {0};
  p.outputs = {1};
  p.arena_bytes = 512;
  Step s;
  s.fn = Fn::relu_forward;
  s.op = OpKind::relu;
  s.args = {{"x", 0}, {"y", 1}};
  p.phases.push_back(Phase{"forward", {s}});
  validate_plan(p);
  const Plan r = rotated_plan(p, 3);
  CHECK(r.buffers.size() == 6);
  CHECK(r.phases[0].steps.size() == 3);
  CHECK(r.arena_bytes == 3 * 512);
  CHECK(r.buffers[5].offset == 2 * 512 + 256);
  CHECK(r.phases[0].steps[2].args[1].buffer == 5);
}
