// Shared by the tiling tests: a model loaded at a test image size, a plan run on the CPU
// backend with seeded weights, inputs and targets, and results compared by relative error.
#pragma once

#include "generator/model/model_json.hpp"
#include "generator/model/overrides.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/executor.hpp"
#include "runtime/param_init.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <map>
#include <string>

namespace kiln::test {

// VGG16's feature extractor with narrow channels (the structure is what tiling sees), then
// a small classifier after an adaptive pool.
inline std::string vgg_like() {
  std::string layers;
  int idx = 0;
  auto add = [&](const std::string& l) { layers += (layers.empty() ? "" : ",\n") + l; };
  const int widths[] = {4, 4, -1, 6, 6, -1, 8, 8, 8, -1, 8, 8, 8, -1, 8, 8, 8, -1};
  for (int w : widths) {
    if (w < 0) {
      add(R"({"name": "features.)" + std::to_string(idx++) +
          R"(", "op": "maxpool2d", "kernel": 2})");
    } else {
      add(R"({"name": "features.)" + std::to_string(idx++) +
          R"(", "op": "conv2d", "out_channels": )" + std::to_string(w) +
          R"(, "kernel": 3, "padding": 1})");
      add(R"({"name": "features.)" + std::to_string(idx++) + R"(", "op": "relu"})");
    }
  }
  add(R"({"name": "avgpool", "op": "adaptive_avgpool2d", "output_size": 2})");
  add(R"({"name": "flatten", "op": "flatten"})");
  add(R"({"name": "fc", "op": "linear", "out_features": 5})");
  return R"({"format": "kiln-model/1", "name": "vgg_like", "input": {"shape": [2, 3, 64, 64]}, "layers": [)" +
         layers + "]}";
}

inline Model load(const std::string& text, int64_t image, DType dtype) {
  Model m = parse_model(text, "test.json");
  ModelOverrides o;
  o.image = Int2{image, image + 3};
  o.dtype = dtype;
  apply_overrides(m, o);
  return m;
}

struct TiledResult {
  Tensor out;
  std::map<std::string, Tensor> grads;
  double loss = 0;
};

// Runs a plan on the CPU backend with seeded weights and input (and targets in training).
inline TiledResult execute(const Plan& p, bool train) {
  cpu::CpuBackend be;
  Executor ex(p, be);
  bind_seeded_weights(ex, p, 11);
  Tensor x(DType::f64, p.buffers[p.inputs[0]].shape);
  uint64_t st = 3;
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, double(splitmix64(st) >> 11) * 0x1.0p-52 - 1);
  ex.write(p.inputs[0], x);
  TiledResult r;
  if (train) {
    Tensor t(DType::i64, p.buffers[p.target].shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, double(i % 2));
    ex.write(p.target, t);
  }
  ex.run("forward");
  r.out = ex.read(p.outputs[0]).to(DType::f64);
  if (train) {
    ex.run("backward");
    r.grads = collect_grads(ex, p);
    r.loss = ex.read(p.loss).get(0);
  }
  return r;
}

inline double rel(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    num += (a.get(i) - b.get(i)) * (a.get(i) - b.get(i));
    den += b.get(i) * b.get(i);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline void compare(const TiledResult& tiled, const TiledResult& ref, double tol,
                    const std::string& what) {
  INFO(what);
  CHECK(rel(tiled.out, ref.out) <= tol);
  CHECK(std::abs(tiled.loss - ref.loss) <= tol * std::abs(ref.loss));
  REQUIRE(tiled.grads.size() == ref.grads.size());
  for (const auto& [name, g] : ref.grads) {
    INFO(name);
    CHECK(rel(tiled.grads.at(name), g) <= tol);
  }
}

} // namespace kiln::test
