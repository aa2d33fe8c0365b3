// The tiled strategy for whole models (schedule_tiled): the fewest tiles whose finished plan
// measures within the budget, in training and inference; its plans compute what the untiled
// network computes; the rest of the network under rotor keeps the segment's tiled backward;
// clear errors for forced tilings over the budget, budgets below the floor and models that
// start with nothing tileable.
#include "generator/lower/lower.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model_json.hpp"
#include "generator/model/overrides.hpp"
#include "generator/schedule/tiled_strategy.hpp"
#include "runtime/error.hpp"
#include "tests/unit/schedule/tiled_run.hpp"

using namespace kiln;
using test::compare;
using test::execute;
using test::load;
using test::TiledResult;

namespace {

// Two VGG blocks: a receptive field small against the image, so tiles pay off.
const char* two_blocks =
    R"({"format": "kiln-model/1", "name": "two_blocks", "input": {"shape": [2, 3, 96, 96]},
  "layers": [
    {"name": "c0", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "r0", "op": "relu"},
    {"name": "c1", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "r1", "op": "relu"},
    {"name": "p1", "op": "maxpool2d", "kernel": 2},
    {"name": "c2", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1},
    {"name": "r2", "op": "relu"},
    {"name": "c3", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1},
    {"name": "r3", "op": "relu"},
    {"name": "p3", "op": "maxpool2d", "kernel": 2},
    {"name": "ap", "op": "adaptive_avgpool2d", "output_size": 2},
    {"name": "flatten", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 5}]})";

// A tileable stem, then a batchnorm (whole-image statistics end the segment in training)
// and a long chain of wide convolutions: in training, tight budgets leave the rest to rotor.
const char* stem_then_chain =
    R"({"format": "kiln-model/1", "name": "stem_then_chain", "input": {"shape": [2, 3, 64, 64]},
  "layers": [
    {"name": "c0", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1},
    {"name": "r0", "op": "relu"},
    {"name": "c1", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1},
    {"name": "r1", "op": "relu"},
    {"name": "p1", "op": "maxpool2d", "kernel": 2},
    {"name": "bn", "op": "batchnorm"},
    {"name": "c2", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
    {"name": "r2", "op": "relu"},
    {"name": "c3", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
    {"name": "r3", "op": "relu"},
    {"name": "c4", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
    {"name": "r4", "op": "relu"},
    {"name": "c5", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
    {"name": "r5", "op": "relu"},
    {"name": "c6", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
    {"name": "r6", "op": "relu"},
    {"name": "gap", "op": "global_avgpool"},
    {"name": "flatten", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 3}]})";

ScheduleOptions options(bool train) {
  ScheduleOptions o;
  o.lower.train = train;
  return o;
}

TiledResult untiled(const Model& m, bool train) {
  LowerOptions lo;
  lo.train = train;
  return execute(lower_model(m, lo), train);
}

// The schedule's plan measured, run and compared with the untiled network.
void check_schedule(TiledSchedule t, int64_t budget, const TiledResult& ref, double tol) {
  CHECK(t.peak_bytes <= budget);
  const Plan p = finish_plan(std::move(t.steps));
  CHECK(plan_transient_peak(p) == t.peak_bytes);
  compare(execute(p, t.train), ref, tol, t.tiles());
}

} // namespace

TEST_CASE(
    "tiled training and inference: within the budget, fewer tiles for more, equal to untiled") {
  const Model m = load(two_blocks, 96, DType::f64);
  const GpuDesc g = load_gpu("h200");
  for (bool train : {true, false}) {
    INFO(std::string(train ? "training" : "inference"));
    const ScheduleOptions o = options(train);
    const int64_t full = untiled_reference(m, g, o).peak_bytes;
    const TiledResult ref = untiled(m, train);
    double last_time = 1e300;
    for (double fraction : {0.2, 0.35, 0.6}) {
      const int64_t budget = int64_t(fraction * double(full));
      TiledSchedule t = schedule_tiled(m, g, o, budget, std::nullopt);
      INFO(fraction, ": ", t.tiles(), " to ", m.nodes[t.segment.output_node()].name);
      CHECK(t.train == train);
      CHECK(t.segment_candidates == 5); // first and last end at 96 and 48 pixels, p3 at 24
      CHECK(t.segments_tried >= 1);
      CHECK(t.segments_tried <= t.segment_candidates);
      CHECK(t.segment.tiling.count() > 1);
      CHECK(t.recompute_factor >= 1.0);
      CHECK(t.time_us > t.untiled_time_us);
      CHECK(t.time_us <= last_time); // more memory never costs time
      last_time = t.time_us;
      check_schedule(std::move(t), budget, ref, 1e-12);
    }
  }
}

TEST_CASE("vgg16 at 2048x2048 within 512 MiB: the segment ends where tiling stops paying") {
  ModelOverrides ov;
  ov.image = Int2{2048, 2048};
  ov.batch = 1;
  Model m = load_model(KILN_SOURCE_ROOT "/models/vgg16.json");
  apply_overrides(m, ov);
  const GpuDesc g = load_gpu("h200");
  const int64_t budget = int64_t(512) << 20;
  for (bool train : {true, false}) {
    INFO(std::string(train ? "training" : "inference"));
    const TiledSchedule t = schedule_tiled(m, g, options(train), budget, std::nullopt);
    INFO(t.tiles(), " to ", m.nodes[t.segment.output_node()].name);
    CHECK(t.peak_bytes <= budget);
    CHECK(t.segment_candidates == 11); // first and last end at each of six resolutions
    CHECK(m.nodes[t.segment.output_node()].op == OpKind::maxpool2d);
    // Deep layers carry wide halos: stopping early beats tiling all 31 layers (+108% in
    // training, +22% in inference when the segment was always the longest).
    CHECK(t.time_us < (train ? 1.8 : 1.1) * t.untiled_time_us);
  }
}

TEST_CASE("forced tiles: planned as given, and an error when they do not fit the budget") {
  const Model m = load(two_blocks, 96, DType::f64);
  const GpuDesc g = load_gpu("h200");
  const ScheduleOptions o = options(true);
  TiledSchedule t = schedule_tiled(m, g, o, std::nullopt, std::pair<int64_t, int64_t>{3, 2});
  CHECK(t.tiles() == "3x2");
  CHECK(t.budget_bytes == -1);
  check_schedule(std::move(t), INT64_MAX, untiled(m, true), 1e-12);
  CHECK_THROWS_WITH_AS(schedule_tiled(m, g, o, int64_t(1000), std::pair<int64_t, int64_t>{3, 2}),
                       doctest::Contains("3x2 tiles need"), Error);
  CHECK_THROWS_WITH_AS(schedule_tiled(m, g, o, int64_t(1000), std::nullopt),
                       doctest::Contains("the smallest feasible budget is about"), Error);
  CHECK_THROWS_WITH_AS(schedule_tiled(m, g, o, std::nullopt, std::nullopt),
                       doctest::Contains("--budget"), Error);
}

TEST_CASE("the rest under rotor keeps the segment's tiled backward: gradients equal store-all") {
  const Model m = load(stem_then_chain, 64, DType::f64);
  const GpuDesc g = load_gpu("h200");
  const ScheduleOptions o = options(true);
  const int64_t full = untiled_reference(m, g, o).peak_bytes;
  const TiledResult ref = untiled(m, true);
  bool rotor = false;
  for (int percent = 90; percent >= 10 && !rotor; percent -= 5) {
    const int64_t budget = full * percent / 100;
    TiledSchedule t;
    try {
      t = schedule_tiled(m, g, o, budget, std::nullopt);
    } catch (const Error&) {
      break; // below the floor before rotor was needed
    }
    if (t.rest != "rotor" || t.segment.tiling.count() == 1) continue;
    rotor = true;
    INFO(percent, "%: ", t.tiles());
    CHECK(t.segment.nodes.size() <= 5); // at most c0..p1: the batchnorm ends it
    check_schedule(std::move(t), budget, ref, 1e-12);
  }
  CHECK(rotor);
}

TEST_CASE("a model that starts with nothing tileable is named") {
  const char* text =
      R"({"format": "kiln-model/1", "name": "bn_first", "input": {"shape": [2, 3, 16, 16]},
    "layers": [{"name": "bn", "op": "batchnorm"}, {"name": "c", "op": "conv2d", "out_channels": 4, "kernel": 3},
               {"name": "gap", "op": "global_avgpool"}, {"name": "flatten", "op": "flatten"},
               {"name": "fc", "op": "linear", "out_features": 2}]})";
  const Model m = load(text, 16, DType::f32);
  const GpuDesc g = load_gpu("h200");
  CHECK_THROWS_WITH_AS(schedule_tiled(m, g, options(true), int64_t(1) << 30, std::nullopt),
                       doctest::Contains("starts with no layer that can run tile by tile"), Error);
  // In inference a batchnorm tiles (its statistics are fixed).
  CHECK_NOTHROW(
      schedule_tiled(m, g, options(false), std::nullopt, std::pair<int64_t, int64_t>{2, 2}));
}
