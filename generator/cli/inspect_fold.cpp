#include "generator/cli/inspect_fold.hpp"

#include "generator/cli/format.hpp"
#include "generator/cost/fold_roofline.hpp"
#include "generator/cost/roofline.hpp"
#include "generator/model/fold.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln::cli {

std::vector<int64_t> parse_fold_factors(const std::string& text) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    int64_t f = 0;
    try {
      size_t used = 0;
      f = std::stoll(item, &used);
      if (used != item.size()) f = 0;
    } catch (const std::exception&) {
      f = 0;
    }
    if (f < 1 || f > 64)
      throw Error("", "--fold", cat("\"", item, "\" is not a fold factor from 1 to 64"));
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    at = comma + 1;
  }
  return out;
}

void print_fold_roofline(const Model& m, const GpuDesc& g, const std::vector<int64_t>& factors,
                         bool json) {
  std::vector<FoldRoofline> folds;
  for (int64_t f : factors)
    folds.push_back(fold_roofline(m, g, f));
  const double base_us = folds.front().total.us;
  if (json) {
    nlohmann::ordered_json j;
    j["model"] = m.name;
    j["gpu"] = g.name;
    j["math"] = math_name(layer_math(m.dtype, g));
    nlohmann::ordered_json fs = nlohmann::ordered_json::array();
    for (const FoldRoofline& f : folds) {
      nlohmann::ordered_json layers = nlohmann::ordered_json::array();
      for (const FoldRoofline::Row& r : f.rows)
        layers.push_back({{"name", r.name},
                          {"op", r.op},
                          {"flops_per_image", r.flops},
                          {"bytes_per_image", r.bytes},
                          {"intensity", r.bytes > 0 ? r.flops / r.bytes : 0.0},
                          {"us_per_image", r.us}});
      fs.push_back({{"factor", f.factor},
                    {"batch", f.batch},
                    {"layers", layers},
                    {"flops_per_image", f.total.flops},
                    {"bytes_per_image", f.total.bytes},
                    {"intensity", f.total.flops / f.total.bytes},
                    {"images_per_s", 1e6 / f.total.us},
                    {"gain", base_us / f.total.us}});
    }
    j["folds"] = fs;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{} on {} ({}): roofline per image, the batch rounded to whole folds\n", m.name,
             g.name, math_name(layer_math(m.dtype, g)));
  size_t w = 5;
  for (const FoldRoofline::Row& r : folds.front().rows)
    w = std::max(w, std::min<size_t>(r.name.size(), 40));
  for (const FoldRoofline& f : folds) {
    fmt::print("\nfold {} (batch {}):\n{:<{}}  {:<10}  {:>10}  {:>10}  {:>9}  {:>10}\n", f.factor,
               f.batch, "layer", w, "op", "FLOPs/img", "bytes/img", "FLOP/byte", "us/img");
    for (const FoldRoofline::Row& r : f.rows)
      fmt::print("{:<{}}  {:<10}  {:>10}  {:>10}  {:>9.1f}  {:>10.4f}\n",
                 r.name.size() > w ? r.name.substr(0, w - 3) + "..." : r.name, w, r.op,
                 human_count(int64_t(r.flops)), human_bytes(int64_t(r.bytes)),
                 r.bytes > 0 ? r.flops / r.bytes : 0.0, r.us);
  }
  fmt::print("\n{:>6}  {:>10}  {:>10}  {:>9}  {:>14}  {:>6}\n", "fold", "FLOPs/img", "bytes/img",
             "FLOP/byte", "images/s", "gain");
  for (const FoldRoofline& f : folds)
    fmt::print("{:>6}  {:>10}  {:>10}  {:>9.1f}  {:>14}  {:>5.2f}x\n", f.factor,
               human_count(int64_t(f.total.flops)), human_bytes(int64_t(f.total.bytes)),
               f.total.flops / f.total.bytes, with_commas(int64_t(1e6 / f.total.us)),
               base_us / f.total.us);
  fmt::print("FLOPs as FoldedCNNs counts them; bytes: each layer's inputs, output and parameters "
             "once (parameters shared by the batch); time: the larger of FLOPs over the {} peak "
             "and bytes over the memory bandwidth, layer by layer. A floor: real kernels add "
             "launches and lose efficiency on small layers.\n",
             math_name(layer_math(m.dtype, g)));
}

} // namespace kiln::cli
