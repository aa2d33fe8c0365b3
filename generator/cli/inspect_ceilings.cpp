#include "generator/cli/inspect_ceilings.hpp"

#include "generator/emit/generate.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln::cli {

void print_ceilings(const Model& m, const GpuDesc& g, bool json, bool train) {
  GenerateOptions o;
  o.train = train;
  const Generated gen = generate(m, g, o);
  using ojson = nlohmann::ordered_json;
  ojson rows = ojson::array();
  // Weighted by FLOPs over the tensor-core kernels (mma.sync and wgmma main loops): the
  // static ceiling, and the kernel's own (all limits but DRAM, which is the layer's: a 1x1
  // conv's bytes per FLOP cap it whatever kernel runs it).
  double weighted = 0, weighted_loop = 0, total = 0;
  for (const ojson& k : gen.manifest["kernels"]) {
    if (!k.value("chosen", false)) continue;
    const ojson& c = k["ceilings"];
    double ceiling = 1, loop_ceiling = 1;
    for (const auto& [name, v] : c.items()) {
      ceiling = std::min(ceiling, v.get<double>());
      if (name != "dram") loop_ceiling = std::min(loop_ceiling, v.get<double>());
    }
    const std::string family = k["family"];
    const bool loop = family.find("implicit_gemm") != std::string::npos ||
                      family.find("wgmma") != std::string::npos;
    for (const ojson& node : k["nodes"]) {
      if (loop) {
        weighted += k["flops"].get<double>() * ceiling;
        weighted_loop += k["flops"].get<double>() * loop_ceiling;
        total += k["flops"].get<double>();
      }
      rows.push_back({{"node", node},
                      {"kernel", k["name"]},
                      {"estimate_us", k["estimate_us"]},
                      {"limiter", k["limiter"]},
                      {"ceiling", std::round(ceiling * 1000) / 1000},
                      {"ceilings", c}});
    }
  }
  const double flop_weighted = total > 0 ? weighted / total : 0;
  const double loop_weighted = total > 0 ? weighted_loop / total : 0;
  if (json) {
    ojson j = {
        {"model", m.name},
        {"gpu", g.name},
        {"dtype", dtype_name(m.dtype)},
        {"train", train},
        {"layers", rows},
        {"tensor_core_flop_weighted_ceiling", std::round(flop_weighted * 1000) / 1000},
        {"tensor_core_flop_weighted_kernel_ceiling", std::round(loop_weighted * 1000) / 1000}};
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{} {} on {}{}: chosen kernels per layer; ceilings are fractions of the math peak "
             "each limit allows (generator/cost/main_loop.hpp)\n\n",
             m.name, dtype_name(m.dtype), g.name, train ? ", a training step" : "");
  fmt::print("{:<48}  {:>9}  {:>8}  {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}  {}\n", "layer (step)",
             "est. us", "limiter", "math", "dram", "l2", "smem", "issue", "lat", "kernel");
  for (const ojson& r : rows) {
    std::string node = r["node"];
    if (node.size() > 48) node = node.substr(0, 45) + "...";
    const ojson& c = r["ceilings"];
    fmt::print(
        "{:<48}  {:>9.2f}  {:>8}  {:>5.2f} {:>5.2f} {:>5.2f} {:>5.2f} {:>5.2f} {:>5.2f}  {}\n",
        node, r["estimate_us"].get<double>(), r["limiter"].get<std::string>(),
        c["math"].get<double>(), c["dram"].get<double>(), c.value("l2", 1.0),
        c["smem"].get<double>(), c["issue"].get<double>(), c["latency"].get<double>(),
        r["kernel"].get<std::string>());
  }
  if (total > 0)
    fmt::print("\nFLOP-weighted static ceiling of the tensor-core kernels: {:.3f} of peak "
               "({:.1f} GFLOP); without the DRAM floor (the kernels' own limits): {:.3f}\n",
               flop_weighted, total / 1e9, loop_weighted);
}

} // namespace kiln::cli
