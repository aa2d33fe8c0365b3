// The model loader: every class of invalid model gets a message naming the file, the
// place (JSON pointer or layer) and the problem.
#include "generator/model/model_json.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace kiln;

namespace {

std::string model_with_layers(const std::string& layers, const std::string& extra = "") {
  return R"({"format": "kiln-model/1", "name": "t", "input": {"name": "image", "shape": [2, 3, 8, 8]},)" +
         extra + R"( "layers": [)" + layers + "]}";
}

// The error text for a model, or "" when it loads.
std::string error_of(const std::string& text) {
  try {
    parse_model(text, "m.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& text, const std::string& place, const std::string& what) {
  const std::string e = error_of(text);
  INFO("error: " << e);
  CHECK(e.rfind("m.json: ", 0) == 0);
  CHECK(e.find(place) != std::string::npos);
  CHECK(e.find(what) != std::string::npos);
}

const std::string conv = R"({"name": "c", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1})";

} // namespace

TEST_CASE("a valid model loads with inferred shapes, params and MACs") {
  const Model m = parse_model(model_with_layers(conv + R"(, {"name": "r", "op": "relu"},
      {"name": "p", "op": "maxpool2d", "kernel": 2}, {"name": "f", "op": "flatten"},
      {"name": "fc", "op": "linear", "out_features": 5})"), "m.json");
  REQUIRE(m.nodes.size() == 5);
  CHECK(m.nodes[0].shape == Shape{2, 4, 8, 8});
  CHECK(m.nodes[2].shape == Shape{2, 4, 4, 4});
  CHECK(m.nodes[4].shape == Shape{2, 5});
  CHECK(m.total_params() == (4 * 3 * 9 + 4) + (64 * 5 + 5));
  CHECK(m.total_macs() == 2 * 4 * 64 * 27 + 2 * 64 * 5);
  CHECK(m.outputs == std::vector<int>{4});
}

TEST_CASE("malformed JSON names line and column") {
  expect_error("{\"format\": \"kiln-model/1\",\n  \"name\": }", "line 2, column", "malformed JSON");
  expect_error(R"({"format": "kiln-model/1", "format": "x"})", "m.json", "duplicate key \"format\"");
  expect_error(std::string(100, '[') + std::string(100, ']'), "m.json", "nesting deeper");
}

TEST_CASE("top-level structure") {
  expect_error(R"({"format": "kiln-model/2"})", "/format", "unsupported format");
  expect_error(R"([1, 2])", "/", "expected an object");
  expect_error(model_with_layers(conv, R"("colour": 1,)"), "/colour", "unknown key");
  expect_error(model_with_layers(""), "/layers", "at least one layer");
  expect_error(R"({"format": "kiln-model/1", "name": "t", "layers": []})", "/", "missing \"input\"");
  expect_error(R"({"format": "kiln-model/1", "name": "t", "input": {"shape": [1, 3, 0, 8]}, "layers": []})",
               "/input/shape/2", "must be positive");
  expect_error(
      R"({"format": "kiln-model/1", "name": "t", "input": {"shape": [1, 3, 8, 8, 8]}, "layers": []})",
      "/input/shape", "dimensions");
  expect_error(R"({"format": "kiln-model/1", "name": "t", "input": {"shape": [99999999, 99999999, 99999, 8]}, "layers": []})",
               "/input/shape", "absurdly large");
  expect_error(model_with_layers(conv, R"("dtype": "int8",)"), "/dtype", "unknown dtype");
  expect_error(model_with_layers(conv, R"("outputs": ["nope"],)"), "/outputs/0", "unknown output");
}

TEST_CASE("unknown op") {
  expect_error(model_with_layers(R"({"name": "x", "op": "conv3d"})"), "/layers/0/op", "unknown op \"conv3d\"");
}

TEST_CASE("missing or ill-typed attribute") {
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "kernel": 3})"), "/layers/0",
               "needs attribute \"out_channels\"");
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": "4", "kernel": 3})"),
               "/layers/0/out_channels", "expected an integer, got a string");
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": 4, "kernel": [3, 3, 3]})"),
               "/layers/0/kernel", "array of 3");
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": 4, "kernel": 3.5})"),
               "/layers/0/kernel", "got a number");
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": 4, "kernel": 3, "bias": 1})"),
               "/layers/0/bias", "expected true or false");
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": 0, "kernel": 3})"),
               "layer \"c\"", "out_channels must be positive");
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": 4, "kernel": 3, "stride": -1})"),
               "layer \"c\"", "stride must be positive");
  expect_error(model_with_layers(R"({"name": 5, "op": "relu"})"), "/layers/0/name", "expected a string");
  expect_error(model_with_layers(R"({"name": "b", "op": "batchnorm", "eps": 0})"), "layer \"b\"",
               "eps must be in (0, 1]");
}

TEST_CASE("unknown attribute") {
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": 4, "kernal": 3})"),
               "/layers/0/kernal", "unknown attribute \"kernal\" for conv2d");
  expect_error(model_with_layers(R"({"name": "r", "op": "relu", "inplace": true})"),
               "/layers/0/inplace", "it takes none");
  expect_error(model_with_layers(R"({"name": "r", "op": "relu", "hints": {"speed": 1}})"),
               "/layers/0/hints/speed", "unknown key");
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": 2, "kernel": 1, "hints": {"activation_density": 1.5}})"),
               "/layers/0/hints/activation_density", "within [0, 1]");
  expect_error(model_with_layers(R"({"name": "c", "op": "conv2d", "out_channels": 2, "kernel": 1, "hints": {"variant": "fast"}})"),
               "/layers/0/hints/variant", "unknown variant \"fast\"");
  expect_error(model_with_layers(R"({"name": "r", "op": "relu", "hints": {"activation_density": 0.5}})"),
               "/layers/0/hints", "hints apply to conv2d layers");
}

TEST_CASE("shape mismatch in add and concat") {
  expect_error(model_with_layers(conv + R"(, {"name": "a", "op": "add", "inputs": ["c", "image"]})"),
               "layer \"a\"", "add inputs differ in shape");
  expect_error(model_with_layers(conv + R"(, {"name": "p", "op": "maxpool2d", "kernel": 2},
      {"name": "k", "op": "concat", "inputs": ["c", "p"]})"),
               "layer \"k\"", "concat inputs must agree except in channels");
  expect_error(model_with_layers(R"({"name": "a", "op": "add", "inputs": ["image"]})"),
               "/layers/0/inputs", "at least 2 inputs");
  // Channels may differ in concat.
  const Model m = parse_model(model_with_layers(conv + R"(, {"name": "k", "op": "concat", "inputs": ["c", "image"]})"), "m.json");
  CHECK(m.nodes[1].shape == Shape{2, 7, 8, 8});
}

TEST_CASE("channels not divisible by groups") {
  expect_error(model_with_layers(R"({"name": "g", "op": "conv2d", "out_channels": 4, "kernel": 3, "groups": 2})"),
               "layer \"g\"", "input channels 3 are not divisible by groups 2");
  expect_error(model_with_layers(R"({"name": "g", "op": "conv2d", "out_channels": 5, "kernel": 1, "groups": 3})"),
               "layer \"g\"", "out_channels 5 is not divisible by groups 3");
}

TEST_CASE("empty spatial output") {
  expect_error(model_with_layers(R"({"name": "big", "op": "conv2d", "out_channels": 4, "kernel": 9})"),
               "layer \"big\"", "empty spatial output");
  expect_error(model_with_layers(R"({"name": "p", "op": "maxpool2d", "kernel": 2, "stride": 1},
      {"name": "p2", "op": "avgpool2d", "kernel": 8})"),
               "layer \"p2\"", "empty spatial output");
  expect_error(model_with_layers(R"({"name": "p", "op": "maxpool2d", "kernel": 2, "padding": 2})"),
               "layer \"p\"", "at most half the kernel");
}

TEST_CASE("duplicate layer names") {
  expect_error(model_with_layers(conv + ", " + conv), "/layers/1/name", "duplicate layer name \"c\"");
  expect_error(model_with_layers(R"({"name": "image", "op": "relu"})"), "/layers/0/name", "duplicate layer name");
}

TEST_CASE("unknown input reference") {
  expect_error(model_with_layers(R"({"name": "r", "op": "relu", "inputs": ["ghost"]})"),
               "/layers/0/inputs/0", "unknown input \"ghost\"");
  expect_error(model_with_layers(R"({"name": "r", "op": "relu", "inputs": ["r"]})"),
               "/layers/0/inputs/0", "its own input");
}

TEST_CASE("a cycle is reported with its layers") {
  expect_error(model_with_layers(R"({"name": "a", "op": "relu", "inputs": ["b"]},
      {"name": "b", "op": "relu", "inputs": ["a"]})"),
               "layer \"", "the inputs form a cycle");
  const std::string e = error_of(model_with_layers(R"({"name": "a", "op": "relu", "inputs": ["c"]},
      {"name": "b", "op": "relu", "inputs": ["a"]}, {"name": "c", "op": "relu", "inputs": ["b"]})"));
  CHECK(e.find("a -> b -> c -> a") != std::string::npos);
}

TEST_CASE("forward references are ordered topologically") {
  const Model m = parse_model(model_with_layers(R"({"name": "late", "op": "relu", "inputs": ["early"]},
      {"name": "early", "op": "relu", "inputs": ["image"]})", R"("outputs": ["late"],)"), "m.json");
  CHECK(m.nodes[0].name == "early");
  CHECK(m.nodes[1].name == "late");
  CHECK(m.nodes[1].inputs == std::vector<int>{0});
}

TEST_CASE("saving is canonical and round-trips") {
  const std::string text =
      model_with_layers(conv + R"(, {"name": "b", "op": "batchnorm", "eps": 0.001},
      {"name": "r", "op": "relu"},
      {"name": "c2", "op": "conv2d", "out_channels": 3, "kernel": 1, "hints": {"activation_density": 0.25, "variant": "sparse"}},
      {"name": "c3", "op": "conv2d", "out_channels": 3, "kernel": 1, "hints": {"sparse_threshold": 0.625}},
      {"name": "k", "op": "concat", "inputs": ["r", "image"]},
      {"name": "p", "op": "avgpool2d", "kernel": [3, 2], "stride": [2, 1], "ceil_mode": true, "count_include_pad": false},
      {"name": "u", "op": "upsample2d", "scale": 3},
      {"name": "v", "op": "resize", "mode": "linear", "coordinate_transformation_mode": "align_corners", "size": [20, 31]},
      {"name": "w", "op": "upsample2d"})");
  const Model m = parse_model(text, "m.json");
  const std::string saved = model_to_text(m);
  const Model again = parse_model(saved, "saved.json");
  CHECK(model_to_text(again) == saved);
  REQUIRE(again.nodes.size() == m.nodes.size());
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    CHECK(again.nodes[i].name == m.nodes[i].name);
    CHECK(again.nodes[i].attrs == m.nodes[i].attrs);
    CHECK(again.nodes[i].hints == m.nodes[i].hints);
    CHECK(again.nodes[i].inputs == m.nodes[i].inputs);
    CHECK(again.nodes[i].shape == m.nodes[i].shape);
  }
  CHECK(saved.find("\"stride\"") != std::string::npos); // non-default pool stride kept
  CHECK(saved.find("\"groups\"") == std::string::npos); // defaults omitted
  // upsample2d is a spelling of resize (nearest, asymmetric, floor), its scale 2 by default.
  CHECK(saved.find("upsample2d") == std::string::npos);
  CHECK(m.nodes.back().op == OpKind::resize);
  CHECK(m.nodes.back().attrs.scale == Num2{2, 2});
  CHECK(m.nodes.back().shape[2] == 40);
  CHECK(m.nodes.back().shape[3] == 62);
  CHECK(saved.find("\"linear\"") != std::string::npos);
}

TEST_CASE("resize: a mode outside its choices is an error naming them") {
  const std::string text =
      model_with_layers(conv + R"(, {"name": "u", "op": "resize", "mode": "cubic", "scale": 2})");
  CHECK_THROWS_WITH_AS(parse_model(text, "m.json"),
                       doctest::Contains("expected one of nearest, linear"), Error);
}

TEST_CASE("names with quotes, newlines and non-ASCII survive a round trip") {
  const std::string text = model_with_layers(
      R"({"name": "a \"quoted\" \\ name\n#include <x>\n*/ é", "op": "relu"})");
  const Model m = parse_model(text, "m.json");
  CHECK(m.nodes[0].name == "a \"quoted\" \\ name\n#include <x>\n*/ \xc3\xa9");
  CHECK(parse_model(model_to_text(m), "s.json").nodes[0].name == m.nodes[0].name);
}

TEST_CASE("numbers out of range are errors, not crashes (found by fuzz_model)") {
  expect_error(R"({"format": "kiln-model/1", "name": "t", "input": {"shape": [1, 3, 8, 8]}, "layers": [{"name": "c", "op": "conv2d", "out_channels": 1e999, "kernel": 3}]})",
               "m.json", "malformed JSON");
  expect_error(R"({"format": "kiln-model/1", "name": "t", "input": {"shape": [1, 3, 8, 8]}, "layers": [{"name": "c", "op": "conv2d", "out_channels": 99999999999999999999999, "kernel": 3}]})",
               "m.json", "");
}

TEST_CASE("an input [N, C, L] is a 1-D signal, held as [N, C, L, 1] and saved as given") {
  const std::string text =
      R"({"format": "kiln-model/1", "name": "t", "input": {"shape": [2, 3, 16]}, "layers": [)"
      R"({"name": "c", "op": "conv2d", "out_channels": 4, "kernel": [5, 1], "padding": [2, 0]},)"
      R"({"name": "m", "op": "reduce_mean", "reduce_h": true, "reduce_w": true, "keepdims": false}],)"
      R"( "outputs": ["c", "m"]})";
  const Model m = parse_model(text, "m.json");
  CHECK(m.signal);
  CHECK(m.input_shape == Shape{2, 3, 16, 1});
  CHECK(caller_input_shape(m) == Shape{2, 3, 16});
  CHECK(m.nodes[0].shape == Shape{2, 4, 16, 1});
  CHECK(caller_output_shape(m, m.nodes[0].shape) == Shape{2, 4, 16});
  CHECK(caller_output_shape(m, m.nodes[1].shape) == Shape{2, 4}); // not 4-D: as it is
  const std::string saved = model_to_text(m);
  CHECK(model_to_json(m)["input"]["shape"] == nlohmann::ordered_json{2, 3, 16});
  CHECK(parse_model(saved, "s.json").input_shape == m.input_shape);
  // An image model is none of this.
  const Model image = parse_model(model_with_layers(conv), "i.json");
  CHECK(!image.signal);
  CHECK(caller_output_shape(image, Shape{2, 4, 8, 1}) == Shape{2, 4, 8, 1});
}
