// The FoldedCNNs models (msr-fiddle/folded-cnns) and thop_flops, the FLOPs FoldedCNNs
// reports (2 x thop 0.0.31.post2005241907's count; see generator/model/fold.hpp). The full
// table of published counts at f = 1..4 is checked through the CLI in
// tests/integration/test_folded_models.py; here: the rules op by op, the shipped models'
// parameters, and a few published counts through fold_model directly.
#include "generator/model/fold.hpp"
#include "generator/model/model_json.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

Model load(const std::string& name) {
  return load_model(std::string(KILN_SOURCE_ROOT "/models/") + name + ".json");
}

int64_t folded_flops(const std::string& name, int64_t f) {
  const Model m = load(name);
  if (f == 1) return total_thop_flops(m);
  FoldOptions o;
  o.factor = f;
  return total_thop_flops(fold_model(m, o));
}

} // namespace

TEST_CASE("thop_flops: thop's rule for each op, doubled") {
  const Model m = parse_model(R"({"format": "kiln-model/1", "name": "t",
    "input": {"shape": [2, 4, 8, 8]},
    "layers": [
      {"name": "c", "op": "conv2d", "out_channels": 6, "kernel": 3, "padding": 1},
      {"name": "g", "op": "conv2d", "out_channels": 6, "kernel": [1, 3], "groups": 3, "bias": false},
      {"name": "bn", "op": "batchnorm"},
      {"name": "r", "op": "relu"},
      {"name": "mp", "op": "maxpool2d", "kernel": 2},
      {"name": "ap", "op": "avgpool2d", "kernel": 2},
      {"name": "up", "op": "upsample2d"},
      {"name": "aap", "op": "adaptive_avgpool2d", "output_size": [2, 1]},
      {"name": "gap", "op": "global_avgpool", "inputs": ["up"]},
      {"name": "cat", "op": "concat", "inputs": ["gap", "gap"]},
      {"name": "flat", "op": "flatten"},
      {"name": "fc", "op": "linear", "out_features": 5},
      {"name": "sm", "op": "softmax"}]})",
                              "t.json");
  auto flops = [&](const char* n) { return thop_flops(m, m.find(n)); };
  CHECK(flops("c") == 2 * (2 * 6 * 8 * 8) * (4 * 9 + 1)); // the bias adds one per output
  CHECK(flops("g") == 2 * (2 * 6 * 8 * 6) * (2 * 3));     // in/groups * kh * kw, no bias
  CHECK(flops("bn") == 2 * 2 * (2 * 6 * 8 * 6));
  CHECK(flops("r") == 0);
  CHECK(flops("mp") == 0);
  CHECK(flops("ap") == 2 * (2 * 6 * 2 * 1)); // one per output element
  CHECK(flops("up") == 0);                   // nearest
  CHECK(flops("aap") == 2 * (2 * 6 * 2 * 1) * ((4 / 2) * (2 / 1) + 1));
  CHECK(flops("gap") == 2 * (2 * 6) * (4 * 2 + 1));
  CHECK(flops("cat") == 0);
  CHECK(flops("flat") == 0);
  CHECK(flops("fc") == 2 * (2 * 5) * 12);
  CHECK(flops("sm") == 2 * 2 * (3 * 5 - 1));
  int64_t sum = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) sum += thop_flops(m, int(i));
  CHECK(total_thop_flops(m) == sum);
}

TEST_CASE("the FoldedCNNs models: parameters, widths, published FLOPs") {
  // Parameters of the reference modules (conv and linear weights and biases).
  CHECK(load("noscope_coral").total_params() == 1283154);
  CHECK(load("noscope_night").total_params() == 1283154);
  CHECK(load("noscope_taipei").total_params() == 1318818);
  CHECK(load("noscope_roundabout").total_params() == 360578);
  CHECK(load("game_lol_goldnumber_fraction").total_params() == 33867);
  CHECK(load("game_lol_goldnumber_int").total_params() == 60367);
  CHECK(load("game_lol_timer_minutes").total_params() == 37958);
  CHECK(load("game_apex_squad_count_v2").total_params() == 33086);
  CHECK(load("game_sot_coin_count").total_params() == 32887);
  CHECK(load("game_sot_timer3").total_params() == 60451);
  const Model lol = load("game_lol_goldnumber_fraction");
  CHECK(lol.input_shape == Shape{1, 3, 22, 52});
  CHECK(lol.nodes[lol.find("conv.13")].shape == Shape{1, 264}); // 8 x 3 x 11
  CHECK(lol.params(lol.find("lin"))[0].shape == Shape{11, 264});

  // NoScope: exactly FoldedCNNs' config/model_map.json.
  CHECK(folded_flops("noscope_roundabout", 1) == 120589952);
  CHECK(folded_flops("noscope_roundabout", 2) == 241804260);
  CHECK(folded_flops("noscope_roundabout", 3) == 365155560);
  CHECK(folded_flops("noscope_roundabout", 4) == 498680320);
  CHECK(folded_flops("noscope_taipei", 3) == 597713160);
  // Game scraping: FoldedCNNs counted the final nn.Linear with an older thop rule (2 * in
  // per output element), 2 * its MACs more: 16,784,480 / 34,743,232 / 53,668,372 /
  // 74,843,392 published for lol goldnumber-fraction.
  CHECK(folded_flops("game_lol_goldnumber_fraction", 1) == 16784480 - 2 * 264 * 11);
  CHECK(folded_flops("game_lol_goldnumber_fraction", 2) == 34743232 - 2 * 363 * 22);
  CHECK(folded_flops("game_lol_goldnumber_fraction", 3) == 53668372 - 2 * 429 * 33);
  CHECK(folded_flops("game_lol_goldnumber_fraction", 4) == 74843392 - 2 * 528 * 44);
}
