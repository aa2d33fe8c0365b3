// Segmented fused tiling: in f64 the output and every gradient equal the untiled network's
// within 1e-12 relative, for VGG16's 13 convolutions and 5 pools as one segment and for a
// residual segment, with image sizes no multiple of the tile counts, over 1x1 to 8x8 tiles;
// f32 within its tolerance; runs bit-identical run to run.
#include "generator/lower/lower.hpp"
#include "generator/lower/tiled_segment.hpp"
#include "tests/unit/schedule/tiled_run.hpp"

#include <cstring>

using namespace kiln;

namespace {

// A residual segment: strided stem, a block with a 1x1 projection, average pooling.
const char* residual =
    R"({"format": "kiln-model/1", "name": "residual", "input": {"shape": [1, 3, 37, 41]},
  "layers": [
    {"name": "stem", "op": "conv2d", "out_channels": 6, "kernel": 5, "stride": 2, "padding": 2},
    {"name": "r0", "op": "relu"},
    {"name": "pool", "op": "maxpool2d", "kernel": 3, "stride": 1, "padding": 1},
    {"name": "c1", "op": "conv2d", "out_channels": 8, "kernel": 3, "stride": 2, "padding": 1, "dilation": 1},
    {"name": "r1", "op": "relu"},
    {"name": "c2", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 2, "dilation": 2, "bias": false},
    {"name": "proj", "op": "conv2d", "out_channels": 8, "kernel": 1, "stride": 2, "inputs": ["pool"]},
    {"name": "add", "op": "add", "inputs": ["c2", "proj"]},
    {"name": "r2", "op": "relu"},
    {"name": "ap", "op": "avgpool2d", "kernel": 3, "stride": 1, "padding": 1, "count_include_pad": false},
    {"name": "gap", "op": "global_avgpool"},
    {"name": "flatten", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 4}]})";

using Result = test::TiledResult;
using test::compare;
using test::execute;
using test::load;
using test::vgg_like;

Result run(const Model& m, bool train, int64_t rows, int64_t cols) {
  std::optional<TiledSegment> seg;
  LowerOptions o;
  o.train = train;
  if (rows > 0) {
    seg = find_tiled_segment(m, train);
    REQUIRE(seg);
    tile_evenly(*seg, rows, cols);
    o.tiled = &*seg;
  }
  const Plan p = lower_model(m, o);
  if (rows > 0) { // really tiled: every tile's output window is copied into the full output
    int copies_out = 0;
    for (const Step& s : p.phases[0].steps)
      copies_out += s.fn == Fn::region_copy && s.node == m.nodes[o.tiled->output_node()].name;
    CHECK(copies_out == rows * cols);
  }
  return execute(p, train);
}

} // namespace

TEST_CASE("the VGG16 feature extractor is one segment of 13 convolutions and 5 pools") {
  const Model m = load(vgg_like(), 64, DType::f64);
  const auto seg = find_tiled_segment(m, true);
  REQUIRE(seg);
  int convs = 0, pools = 0;
  for (int n : seg->nodes)
    convs += m.nodes[n].op == OpKind::conv2d, pools += m.nodes[n].op == OpKind::maxpool2d;
  CHECK(convs == 13);
  CHECK(pools == 5);
  CHECK(m.nodes[seg->output_node()].name == "features.30");
  // And the real vgg16 too.
  const Model v = load_model(KILN_SOURCE_ROOT "/models/vgg16.json");
  const auto vs = find_tiled_segment(v, true);
  REQUIRE(vs);
  CHECK(v.nodes[vs->output_node()].name == "features.30");
}

TEST_CASE("f64: tiled equals untiled to 1e-12, inference and training, 1x1 to 8x8 tiles") {
  // 259x262: the segment output is 8x8 and no tile count divides the image evenly.
  const Model m = load(vgg_like(), 259, DType::f64);
  const Result ref_i = run(m, false, 0, 0), ref_t = run(m, true, 0, 0);
  for (auto [r, c] : {std::pair{1, 1}, {2, 2}, {3, 2}, {5, 7}, {8, 8}}) {
    compare(run(m, false, r, c), ref_i, 1e-12,
            "inference " + std::to_string(r) + "x" + std::to_string(c));
    compare(run(m, true, r, c), ref_t, 1e-12,
            "training " + std::to_string(r) + "x" + std::to_string(c));
  }
}

TEST_CASE("f64: a residual segment with strides, dilation and pooling tiles exactly") {
  const Model m = load(residual, 37, DType::f64);
  const auto seg = find_tiled_segment(m, true);
  REQUIRE(seg);
  CHECK(m.nodes[seg->output_node()].name == "ap");
  const Result ref_i = run(m, false, 0, 0), ref_t = run(m, true, 0, 0);
  for (auto [r, c] : {std::pair{2, 2}, {3, 4}, {7, 6}}) {
    compare(run(m, false, r, c), ref_i, 1e-12,
            "inference " + std::to_string(r) + "x" + std::to_string(c));
    compare(run(m, true, r, c), ref_t, 1e-12,
            "training " + std::to_string(r) + "x" + std::to_string(c));
  }
}

TEST_CASE("f32: tiled within the f32 tolerance, and bit-identical run to run") {
  const Model m = load(vgg_like(), 130, DType::f32);
  const Result ref = run(m, true, 0, 0);
  const Result a = run(m, true, 3, 3), b = run(m, true, 3, 3);
  compare(a, ref, 1e-5, "f32 training 3x3");
  CHECK(std::memcmp(a.out.bytes(), b.out.bytes(), a.out.nbytes()) == 0);
  for (const auto& [name, g] : a.grads)
    CHECK(std::memcmp(g.bytes(), b.grads.at(name).bytes(), g.nbytes()) == 0);
}
