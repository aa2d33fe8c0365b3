#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/tune/device_timing.hpp"
#include "generator/tune/layer_spec.hpp"
#include "generator/tune/merge.hpp"
#include "generator/tune/shard.hpp"
#include "generator/tune/sweep.hpp"
#include "runtime/backend.hpp"
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

namespace {

// A single-step plan: y = relu(x) over 512 bytes of arena.
Plan one_relu_plan() {
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
  return p;
}

} // namespace

TEST_CASE("timing: rotated copies exceed twice the L2 and stay a valid plan") {
  TimingOptions o;
  o.l2_bytes = 50 << 20;
  CHECK(rotation_copies(1 << 20, o) == 102); // 100 MiB / 1 MiB + 2
  CHECK(rotation_copies(int64_t(1) << 30, o) == 2);
  o.max_bytes = 8 << 20;
  CHECK(rotation_copies(1 << 20, o) == 8); // capped by memory
  const Plan p = one_relu_plan();
  validate_plan(p);
  const Plan r = rotated_plan(p, 3);
  CHECK(r.buffers.size() == 6);
  CHECK(r.phases[0].steps.size() == 3);
  CHECK(r.arena_bytes == 3 * 512);
  CHECK(r.buffers[5].offset == 2 * 512 + 256);
  CHECK(r.phases[0].steps[2].args[1].buffer == 5);
}

namespace {

// Records what time_rotated asks of a backend, and clocks each timed body by its steps.
struct RecordingBackend final : Backend {
  std::vector<std::string> calls;
  int steps_in_body = 0;
  std::string_view name() const override { return "recording"; }
  void prepare(const Plan&) override { calls.push_back("prepare"); }
  void upload(int, const Tensor&) override {}
  Tensor download(int) override { return Tensor(DType::f32, {1}); }
  void poison(int) override {}
  void run(const Step& s) override {
    ++steps_in_body;
    calls.push_back("run " + std::to_string(s.args[0].buffer));
  }
  void begin_phase(const Phase& p) override { calls.push_back("begin " + p.name); }
  void end_phase(const Phase& p) override { calls.push_back("end " + p.name); }
  double time_ms(const std::function<void()>& body) override {
    steps_in_body = 0;
    body();
    return 2.0 * steps_in_body; // 2 ms a step
  }
};

} // namespace

TEST_CASE("timing: a timed run is every copy back to back in one phase, per copy") {
  // A phase is what the cuda backend captures as a CUDA graph: inside one, no host work of a
  // launch or a cuDNN call reaches the device's clock.
  const Plan p = one_relu_plan();
  TimingOptions o;
  o.l2_bytes = 1024; // 2 * 1024 / 512 + 2 = 6 copies
  o.runs = 20;
  o.warmup = 5;
  RecordingBackend b;
  const DeviceTiming t = time_rotated(p, b, o);
  CHECK(t.median_ms == doctest::Approx(2.0)); // 12 ms for 6 copies
  CHECK(t.runs == 20);
  // prepare, then 2 warm-up and 20 timed runs, each: begin, the 6 copies in order, end.
  REQUIRE(b.calls.size() == 1 + 22 * 8);
  CHECK(b.calls[0] == "prepare");
  for (size_t r = 0; r < 22; ++r) {
    CHECK(b.calls[1 + 8 * r] == "begin forward");
    for (size_t c = 0; c < 6; ++c)
      CHECK(b.calls[2 + 8 * r + c] == "run " + std::to_string(2 * c));
    CHECK(b.calls[8 + 8 * r] == "end forward");
  }
}

TEST_CASE("sticky CUDA errors are told from an item's own failure") {
  CHECK(sticky_cuda_error("cuda backend: cudaStreamSynchronize failed: "
                          "cudaErrorIllegalInstruction: an illegal instruction was encountered") ==
        "cudaErrorIllegalInstruction");
  CHECK(sticky_cuda_error("cudaErrorIllegalAddress: an illegal memory access") ==
        "cudaErrorIllegalAddress");
  CHECK(sticky_cuda_error("max |y - ref| = 0.3 above the tolerance").empty());
  CHECK(sticky_cuda_error("cudaErrorInvalidValue: invalid argument").empty()); // not sticky
}

namespace {

// A device whose every run fails as a kernel that corrupts the context does.
struct LostContext final : Backend {
  std::string_view name() const override { return "lost"; }
  void prepare(const Plan&) override {}
  void upload(int, const Tensor&) override {}
  Tensor download(int) override { return {}; }
  void poison(int) override {}
  void run(const Step&) override {
    throw Error("cuda backend: cudaStreamSynchronize failed: cudaErrorIllegalInstruction: an "
                "illegal instruction was encountered");
  }
};

} // namespace

TEST_CASE("a sweep ends at the item that lost the CUDA context, saying how many were not run") {
  const Model m = layer_spec_model("conv:n=2,c=8,h=8,w=8,k=8,r=3,p=1");
  GenerateOptions go;
  go.all_variants = true;
  const Generated g = generate(m, load_gpu("h100"), go);
  const std::vector<WorkItem> items = sweep_work(g.plan, g.layout, load_gpu("h100"), true);
  REQUIRE(items.size() >= 3);
  std::vector<size_t> mine(items.size());
  for (size_t i = 0; i < mine.size(); ++i)
    mine[i] = i;
  SweepDevice dev;
  dev.name = "gpu";
  dev.check = [] { return std::unique_ptr<Backend>(std::make_unique<LostContext>()); };
  std::string lost;
  SweepHooks hooks;
  hooks.context_lost = [&](const std::string& why) { lost = why; };
  const std::vector<SweepRow> rows = run_sweep(g.plan, items, mine, dev, 1, hooks);
  REQUIRE(rows.size() == 1);
  CHECK(!rows[0].check.pass);
  INFO(lost);
  CHECK(lost.find(items[0].variant.name + " left the CUDA context unusable "
                                          "(cudaErrorIllegalInstruction)") != std::string::npos);
  CHECK(lost.find(std::to_string(items.size() - 1) + " item(s) not run") != std::string::npos);
}
