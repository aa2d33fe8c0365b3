// kiln-profile/1: every class of invalid profile gets the file, the JSON pointer and the
// problem; a profile survives profile_to_text; measure_density counts nonzeros overall and
// per tile (clipped at the border); profile_densities refuses a profile that does not fit.
#include "generator/model/model_json.hpp"
#include "generator/model/profile.hpp"
#include "runtime/error.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <string>

using namespace kiln;

namespace {

const std::string kLayer =
    R"({"layer": "c2", "input": "r", "density": 0.5, "elements": 8, "nonzeros": 4,
        "tiles": {"count": 2, "min": 0.25, "p10": 0.25, "median": 0.25, "p90": 0.75,
                  "max": 0.75, "std": 0.25}})";

std::string profile_with(const std::string& densities, const std::string& extra = "") {
  return R"({"format": "kiln-profile/1", "model": "t", )" + extra + R"("densities": [)" +
         densities + "]}";
}

// Parsing `text` must fail at `where` in p.json with a message containing `what`.
void expect_error(const std::string& text, const std::string& where, const std::string& what) {
  try {
    parse_profile(text, "p.json");
    FAIL("parsed: " << text);
  } catch (const Error& e) {
    INFO("error: " << e.what());
    CHECK(e.file() == "p.json");
    CHECK(e.where() == where);
    CHECK(e.message().find(what) != std::string::npos);
  }
}

// A layer entry with one field replaced (`key` must appear once in kLayer).
std::string layer_with(const std::string& from, const std::string& to) {
  std::string s = kLayer;
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

Model small_model() {
  return parse_model(
      R"({"format": "kiln-model/1", "name": "t", "input": {"name": "image", "shape": [1, 3, 8, 8]},
          "layers": [{"name": "c1", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
                     {"name": "r", "op": "relu"},
                     {"name": "c2", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1}]})",
      "t.json");
}

} // namespace

TEST_CASE("a valid profile parses") {
  const Profile p =
      parse_profile(profile_with(kLayer, R"("tile": [4, 2], "device": "cpu", )"), "p.json");
  CHECK(p.file == "p.json");
  CHECK(p.model == "t");
  CHECK(p.device == "cpu");
  CHECK(p.tile == Int2{4, 2});
  REQUIRE(p.densities.size() == 1);
  CHECK(p.densities[0].layer == "c2");
  CHECK(p.densities[0].input == "r");
  CHECK(p.densities[0].density == 0.5);
  CHECK(p.densities[0].tiles.p90 == 0.75);
  // Times alone are a profile too.
  const Profile t = parse_profile(
      R"({"format": "kiln-profile/1", "nodes": {"c1": {"forward_ms": 0.5, "backward_ms": 1}}})",
      "p.json");
  CHECK(t.times.at("c1").forward_us == doctest::Approx(500));
  CHECK(t.times.at("c1").backward_us == doctest::Approx(1000));
  CHECK(t.densities.empty());
}

TEST_CASE("parse_profile errors name the JSON pointer") {
  expect_error("{\"format\": \"kiln-profile/1\",\n \"densities\": [}", "line 2, column 16",
               "malformed JSON");
  expect_error(R"({"format": "kiln-profile/2", "densities": []})", "/format",
               "unsupported format \"kiln-profile/2\"");
  expect_error(R"({"densities": []})", "/", "missing \"format\"");
  expect_error(R"({"format": "kiln-profile/1", "model": "t"})", "",
               "a profile holds layer times (\"nodes\"), densities (\"densities\") or both");
  expect_error(profile_with(layer_with("\"density\": 0.5", "\"density\": 1.5")),
               "/densities/0/density", "must be within [0, 1], got 1.5");
  expect_error(profile_with(layer_with("\"density\": 0.5", "\"density\": -0.25")),
               "/densities/0/density", "must be within [0, 1]");
  expect_error(profile_with(layer_with("\"nonzeros\": 4", "\"nonzeros\": 9")),
               "/densities/0/nonzeros", "9 nonzeros in 8 elements");
  expect_error(profile_with(layer_with("\"elements\": 8", "\"elements\": -8")),
               "/densities/0/elements", "must not be negative");
  expect_error(profile_with(layer_with("\"density\": 0.5", "\"density\": 0.6")),
               "/densities/0/density", "0.6 is not nonzeros / elements (4 / 8)");
  expect_error(profile_with(kLayer + ", " + kLayer), "/densities/1/layer",
               "layer \"c2\" appears twice");
  expect_error(profile_with(kLayer, R"("colour": "red", )"), "/colour", "unknown key \"colour\"");
  expect_error(profile_with(layer_with("\"input\": \"r\"", "\"input\": \"r\", \"x\": 1")),
               "/densities/0/x", "unknown key \"x\"");
  expect_error(profile_with(layer_with("\"min\": 0.25", "\"min\": 0.25, \"mean\": 0.5")),
               "/densities/0/tiles/mean", "unknown key \"mean\"");
  expect_error(profile_with(kLayer, R"("tile": [0, 8], )"), "/tile/0", "must be within 1..65536");
  expect_error(profile_with(kLayer, R"("tile": [8, 70000], )"), "/tile/1",
               "must be within 1..65536");
  expect_error(profile_with(kLayer, R"("tile": [8], )"), "/tile", "expected [rows, columns]");
  expect_error(profile_with(kLayer, R"("tile": "8x8", )"), "/tile", "expected [rows, columns]");
  expect_error(profile_with(layer_with("\"p10\": 0.25", "\"p10\": 0.5")), "/densities/0/tiles",
               "expected min <= p10 <= median <= p90 <= max");
  expect_error(profile_with(layer_with("\"max\": 0.75", "\"max\": 0.7")), "/densities/0/tiles",
               "expected min <= p10 <= median <= p90 <= max");
  expect_error(profile_with(layer_with("\"std\": 0.25", "\"std\": 2")), "/densities/0/tiles/std",
               "must be within [0, 1]");
  expect_error(profile_with(layer_with("\"layer\": \"c2\", ", "")), "/densities/0",
               "missing \"layer\"");
  expect_error(profile_with(kLayer, R"("dtype": "int8", )"), "/dtype", "unknown dtype \"int8\"");
  expect_error(profile_with(kLayer, R"("input_shape": [1, 0], )"), "/input_shape/1",
               "dimension out of range");
  expect_error(
      R"({"format": "kiln-profile/1", "nodes": {"c1": {"forward_ms": -1, "backward_ms": 0}}})",
      "/nodes/c1", "times must be non-negative and at most 1e12 ms");
  // 1e308 ms would be an infinite number of microseconds, written back as null.
  expect_error(
      R"({"format": "kiln-profile/1", "nodes": {"c1": {"forward_ms": 0, "backward_ms": 1e308}}})",
      "/nodes/c1", "times must be non-negative and at most 1e12 ms");
  expect_error(R"({"format": "kiln-profile/1", "densities": {}})", "/densities",
               "expected an array");
}

TEST_CASE("a profile survives profile_to_text") {
  Profile p;
  p.model = "t";
  p.gpu = "h200 (sm_90)";
  p.times["c1"] = {250, 500};
  p.input_shape = {1, 3, 8, 8};
  p.dtype = DType::bf16;
  p.device = "emu";
  p.input = "x.npy";
  p.weights = "seeded 7";
  p.tile = {4, 2};
  LayerProfile l;
  l.layer = "c2";
  l.input = "r";
  l.elements = 3;
  l.nonzeros = 1;
  l.density = 1.0 / 3;
  l.tiles = {2, 0.25, 0.25, 1.0 / 3, 0.5, 0.5, 0.125};
  p.densities.push_back(l);
  LayerProfile first = l;
  first.layer = "c1";
  first.input = "image";
  p.densities.insert(p.densities.begin(), first);

  const std::string text = profile_to_text(p);
  const Profile q = parse_profile(text, "q.json");
  CHECK(q.model == p.model);
  CHECK(q.gpu == p.gpu);
  CHECK(q.times.at("c1").forward_us == doctest::Approx(250));
  CHECK(q.times.at("c1").backward_us == doctest::Approx(500));
  CHECK(q.input_shape == p.input_shape);
  CHECK(q.dtype == DType::bf16);
  CHECK(q.device == "emu");
  CHECK(q.input == "x.npy");
  CHECK(q.weights == "seeded 7");
  CHECK(q.tile == Int2{4, 2});
  REQUIRE(q.densities.size() == 2);
  CHECK(q.densities[0].layer == "c1"); // order kept, not sorted
  CHECK(q.densities[1].layer == "c2");
  CHECK(q.densities[1].input == "r");
  CHECK(q.densities[1].elements == 3);
  CHECK(q.densities[1].nonzeros == 1);
  CHECK(q.densities[1].density == doctest::Approx(1.0 / 3).epsilon(1e-6));
  CHECK(q.densities[1].tiles.count == 2);
  CHECK(q.densities[1].tiles.median == doctest::Approx(1.0 / 3).epsilon(1e-6));
  CHECK(q.densities[1].tiles.stddev == 0.125);
  // Written again, the same text: the file is stable.
  CHECK(profile_to_text(q) == text);
  // A density within the tolerance of nonzeros / elements only before profile_to_text
  // rounds it to 6 decimals (0.5009996 -> 0.501, 1e-3 + 1e-18 from 0.5) is refused: what
  // parses must parse again once written.
  expect_error(profile_with(R"({"layer": "c2", "input": "r", "density": 0.5009996,
                                "elements": 1000, "nonzeros": 500})"),
               "/densities/0/density", "is not nonzeros / elements (500 / 1000)");
  const Profile edge = parse_profile(profile_with(R"({"layer": "c2", "input": "r",
      "density": 0.5009994, "elements": 1000, "nonzeros": 500})"),
                                     "p.json");
  CHECK_NOTHROW(parse_profile(profile_to_text(edge), "again.json"));
}

TEST_CASE("measure_density counts nonzeros overall and per tile, clipped at the border") {
  // One image, 2 channels, 5x3 pixels; 2x2 tiles: 3 rows (the last 1 pixel high) by 2
  // columns (the last 1 pixel wide), so tiles of 8, 4, 8, 4, 4 and 2 elements.
  Tensor x(DType::f32, {1, 2, 5, 3});
  auto set = [&](int c, int h, int w, float v) { x.set((c * 5 + h) * 3 + w, v); };
  set(0, 0, 0, 1), set(1, 1, 1, -3);                                           // tile (0,0): 2/8
  set(0, 0, 2, 0.5f), set(0, 1, 2, 2), set(1, 0, 2, 1e-30f), set(1, 1, 2, -1); // (0,1): 4/4
  set(0, 2, 0, -0.0f);                                                         // (1,0): 0/8
  set(1, 3, 2, 7);                                                             // (1,1): 1/4
  set(0, 4, 0, 1), set(0, 4, 1, 1), set(1, 4, 0, 1);                           // (2,0): 3/4
  set(1, 4, 2, 4);                                                             // (2,1): 1/2
  const LayerProfile l = measure_density(x, {2, 2});
  CHECK(l.elements == 30);
  CHECK(l.nonzeros == 11);
  CHECK(l.density == doctest::Approx(11.0 / 30));
  // Sorted tile densities: 0, 0.25, 0.25, 0.5, 0.75, 1; quantile q is the value at
  // floor(q * (count - 1)).
  CHECK(l.tiles.count == 6);
  CHECK(l.tiles.min == 0);
  CHECK(l.tiles.p10 == 0);
  CHECK(l.tiles.median == 0.25);
  CHECK(l.tiles.p90 == 0.75);
  CHECK(l.tiles.max == 1);
  const double mean = 2.75 / 6;
  double var = 0;
  for (double d : {0.0, 0.25, 0.25, 0.5, 0.75, 1.0})
    var += (d - mean) * (d - mean);
  CHECK(l.tiles.stddev == doctest::Approx(std::sqrt(var / 6)));

  // A tile larger than the image is the whole image; tiles never span two images.
  const LayerProfile whole = measure_density(x, {64, 64});
  CHECK(whole.tiles.count == 1);
  CHECK(whole.tiles.median == doctest::Approx(11.0 / 30));
  Tensor two(DType::bf16, {2, 1, 2, 2});
  for (int i = 0; i < 4; ++i)
    two.set(4 + i, 1.5); // the second image dense, the first all zeros
  const LayerProfile t = measure_density(two, {1, 2});
  CHECK(t.density == 0.5);
  CHECK(t.tiles.count == 4);
  CHECK(t.tiles.min == 0);
  CHECK(t.tiles.max == 1);
  CHECK(t.tiles.median == 0); // floor(0.5 * 3) = 1: the second of 0, 0, 1, 1

  CHECK_THROWS_WITH_AS(measure_density(Tensor(DType::f32, {2, 3}), {8, 8}),
                       "densities are measured on [N, C, H, W] tensors, not [2, 3]", Error);
}

TEST_CASE("profile_densities applies a profile only to its own model's conv2d layers") {
  const Model m = small_model();
  const Profile p = parse_profile(profile_with(kLayer), "p.json");
  const auto d = profile_densities(p, m);
  REQUIRE(d.size() == 1);
  CHECK(d.at("c2") == 0.5);

  auto expect = [&](const std::string& text, const std::string& where, const std::string& what) {
    const Profile q = parse_profile(text, "q.json");
    try {
      profile_densities(q, m);
      FAIL("applied: " << text);
    } catch (const Error& e) {
      INFO("error: " << e.what());
      CHECK(e.file() == "q.json");
      CHECK(e.where() == where);
      CHECK(e.message().find(what) != std::string::npos);
    }
  };
  std::string other = profile_with(kLayer);
  other.replace(other.find("\"t\""), 3, "\"resnet18\"");
  expect(other, "/model", "is a profile of \"resnet18\", not of \"t\"");
  expect(profile_with(kLayer + ", " + layer_with("\"c2\"", "\"c9\"")), "/densities/1/layer",
         "model \"t\" has no layer \"c9\"");
  expect(profile_with(layer_with("\"c2\"", "\"r\"")), "/densities/0/layer",
         "layer \"r\" is a relu, not a conv2d");
  // A profile that names no model applies to any with those layers.
  std::string unnamed = profile_with(kLayer);
  unnamed.erase(unnamed.find("\"model\": \"t\", "), std::string("\"model\": \"t\", ").size());
  CHECK(profile_densities(parse_profile(unnamed, "u.json"), m).at("c2") == 0.5);
}
