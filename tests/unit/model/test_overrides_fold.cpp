#include "generator/model/fold.hpp"
#include "generator/model/model_json.hpp"
#include "generator/model/overrides.hpp"
#include "runtime/error.hpp"

#include <cmath>
#include <doctest/doctest.h>

using namespace kiln;

namespace {

const char* coral = R"({"format": "kiln-model/1", "name": "coral",
  "input": {"name": "image", "shape": [1, 3, 50, 50]},
  "layers": [
    {"name": "conv1", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
    {"name": "relu1", "op": "relu"},
    {"name": "conv2", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
    {"name": "relu2", "op": "relu"},
    {"name": "pool", "op": "maxpool2d", "kernel": 2},
    {"name": "flatten", "op": "flatten"},
    {"name": "fc1", "op": "linear", "out_features": 128},
    {"name": "relu3", "op": "relu"},
    {"name": "fc2", "op": "linear", "out_features": 2},
    {"name": "prob", "op": "softmax"}]})";

} // namespace

TEST_CASE("overrides change the input and re-infer shapes") {
  Model m = parse_model(coral, "coral.json");
  ModelOverrides o;
  o.batch = 8;
  o.image = parse_image_size("32x40");
  o.dtype = DType::f16;
  apply_overrides(m, o);
  CHECK(m.input_shape == Shape{8, 3, 32, 40});
  CHECK(m.nodes[4].shape == Shape{8, 16, 16, 20});
  CHECK(m.nodes[6].shape == Shape{8, 128});
  CHECK(m.dtype == DType::f16);
  CHECK(parse_image_size("64") == Int2{64, 64});
  CHECK_THROWS_AS(parse_image_size("64x"), Error);
  CHECK_THROWS_AS(parse_image_size("0x3"), Error);
  CHECK_THROWS_AS(parse_image_size("axb"), Error);
  o.batch = 0;
  CHECK_THROWS_AS(apply_overrides(m, o), Error);
}

TEST_CASE("--image on a 1-D signal model is L or Lx1; one size on an image model is square") {
  Model sig = parse_model(R"({"format": "kiln-model/1", "name": "sig",
    "input": {"name": "x", "shape": [2, 4, 32]},
    "layers": [{"name": "c", "op": "conv2d", "out_channels": 8, "kernel": [3, 1]}]})",
                          "sig.json");
  REQUIRE(sig.signal);
  for (const char* text : {"40", "40x1"}) {
    Model m = sig;
    ModelOverrides o;
    set_image_size(o, text);
    apply_overrides(m, o);
    CHECK(m.input_shape == Shape{2, 4, 40, 1});
    CHECK(caller_input_shape(m) == Shape{2, 4, 40});
    CHECK(m.nodes[0].shape == Shape{2, 8, 38, 1});
  }
  ModelOverrides wide;
  set_image_size(wide, "40x2");
  CHECK_THROWS_WITH_AS(apply_overrides(sig, wide), doctest::Contains("L or Lx1 for [N, C, L]"),
                       Error);
  // A square parsed without the flag (an HxW given as 40x40) is no signal length.
  ModelOverrides square;
  square.image = Int2{40, 40};
  CHECK_THROWS_AS(apply_overrides(sig, square), Error);
  Model img = parse_model(coral, "coral.json");
  ModelOverrides one;
  set_image_size(one, "40");
  CHECK(one.image_one_size);
  apply_overrides(img, one);
  CHECK(img.input_shape == Shape{1, 3, 40, 40});
}

TEST_CASE("folding widens hidden layers by sqrt(f) and the last layer by f") {
  const Model m = parse_model(coral, "coral.json");
  FoldOptions o;
  o.factor = 4;
  const Model f = fold_model(m, o);
  CHECK(f.name == "coral_folded4");
  CHECK(f.input_shape == Shape{4, 3, 50, 50}); // batch rounded up to the factor
  CHECK(f.nodes.front().op == OpKind::fold);
  CHECK(f.nodes[1].name == "conv1");
  CHECK(f.nodes[1].shape == Shape{1, 32, 50, 50}); // 16 * sqrt(4)
  CHECK(f.nodes[f.find("fc1")].shape == Shape{1, 256});
  CHECK(f.nodes[f.find("fc2")].shape == Shape{1, 8}); // 4 * 2 classes
  const int unfold = f.find("fc2.unfold");
  REQUIRE(unfold >= 0);
  CHECK(f.nodes[unfold].shape == Shape{4, 2});
  CHECK(f.nodes[f.find("prob")].inputs == std::vector<int>{unfold}); // softmax per image
  CHECK(f.nodes[f.outputs[0]].shape == Shape{4, 2});
  // First conv sees f*C channels.
  CHECK(f.params(1)[0].shape == Shape{32, 12, 3, 3});
  // Round trip through the file format keeps the fold.
  const Model again = parse_model(model_to_text(f), "f.json");
  CHECK(again.total_params() == f.total_params());

  o.factor = 3;
  o.multiplier = 1.5;
  const Model g = fold_model(m, o);
  CHECK(g.nodes[1].shape == Shape{1, 24, 50, 50}); // int(16 * 1.5)
  CHECK(g.nodes[g.find("fc1")].shape == Shape{1, 192});
}

TEST_CASE("folding errors") {
  const Model m = parse_model(coral, "coral.json");
  FoldOptions o;
  o.factor = 1;
  CHECK_THROWS_AS(fold_model(m, o), Error);
  o.factor = 2;
  const Model f = fold_model(m, o);
  CHECK_THROWS_WITH_AS(fold_model(f, o), doctest::Contains("already folded"), Error);
  Model bad = f;
  ModelOverrides ov;
  ov.batch = 3;
  CHECK_THROWS_WITH_AS(apply_overrides(bad, ov), doctest::Contains("not a multiple of the fold factor"), Error);
}
