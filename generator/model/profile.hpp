// Measurements of a model's run (format kiln-profile/1): per-layer times (what `kiln schedule
// --profile` costs layers with instead of the roofline) and the densities of the conv2d
// layers' inputs (what `kiln profile` measures; `kiln generate/build/run --profile` plan
// the sparse family from them, over the layers' hints.activation_density, and `kiln
// inspect --profile` shows them beside each layer). Either part may be absent, not both.
//
//   {"format": "kiln-profile/1", "kiln_version": "0.1.0", "model": "densenet121",
//    "gpu": "...",                                          (the times' GPU, optional)
//    "nodes": {"conv1": {"forward_ms": 0.12, "backward_ms": 0.3}, ...},   (optional)
//    "input_shape": [1, 3, 64, 64], "dtype": "f32", "device": "cpu", "input": "x.npy",
//    "weights": "seeded 0" | "w.safetensors", "tile": [8, 8],
//    "densities": [{"layer": "features.denseblock1.denselayer1.conv2",
//                   "input": "features.denseblock1.denselayer1.relu2",
//                   "density": 0.4812, "elements": 16384, "nonzeros": 7884,
//                   "tiles": {"count": 4, "min": 0.45, "p10": 0.46, "median": 0.48,
//                             "p90": 0.5, "max": 0.51, "std": 0.02}}, ...]}   (optional)
//
// A tile is one image's TH x TW pixels (clipped at the border) with all channels; its
// density is its nonzeros over its elements. Densities appear in model order.
#pragma once

#include "generator/model/model.hpp"
#include "runtime/tensor.hpp"

#include <map>
#include <string>
#include <vector>

namespace kiln {

inline constexpr std::string_view kProfileFormat = "kiln-profile/1";

struct LayerTimes {
  double forward_us = 0, backward_us = 0;
};

struct TileSpread {
  int64_t count = 0;
  double min = 0, p10 = 0, median = 0, p90 = 0, max = 0, stddev = 0;
};

struct LayerProfile {
  std::string layer; // the conv2d layer
  std::string input; // the value it reads (a layer name, or the model input's name)
  double density = 0;
  int64_t elements = 0, nonzeros = 0;
  TileSpread tiles;
};

struct Profile {
  std::string model, gpu;
  std::map<std::string, LayerTimes> times; // "nodes", by layer
  Shape input_shape;
  DType dtype = DType::f32;
  std::string device, input, weights;
  Int2 tile{8, 8};
  std::vector<LayerProfile> densities;
  std::string file; // where it was loaded from, for messages
};

// Reads and checks a profile (untrusted input: every error names the file and the JSON
// pointer; densities within [0, 1], nonzeros <= elements, unknown keys rejected).
Profile parse_profile(std::string_view text, const std::string& file);
Profile load_profile(const std::string& path);
std::string profile_to_text(const Profile& p);

// The density of one activation tensor [N, C, H, W] (NCHW order), overall and over tiles
// of tile[0] x tile[1] pixels.
LayerProfile measure_density(const Tensor& x, Int2 tile);

// The densities a profile gives the layers of `m`, by conv2d layer name. A profile of
// another model, or naming a layer `m` lacks or that is not a conv2d, is an error (a
// profile is never silently half-applied).
std::map<std::string, double> profile_densities(const Profile& p, const Model& m);

} // namespace kiln
