// kiln inspect: the layer table (shape, parameters, MACs, activation bytes) and totals.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kiln::cli {

namespace {

struct InspectArgs {
  ModelArgs model;
  bool json = false;
};

void inspect(const InspectArgs& a) {
  const Model m = a.model.load();
  const size_t esize = dtype_size(m.dtype);
  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = m.name;
    j["input_shape"] = m.input_shape;
    j["dtype"] = dtype_name(m.dtype);
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    int64_t act = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      const Node& n = m.nodes[i];
      int64_t params = 0;
      for (const ParamSpec& p : m.params(int(i)))
        if (p.trainable) params += numel(p.shape);
      const int64_t bytes = op_is_view(n.op) ? 0 : numel(n.shape) * int64_t(esize);
      act += bytes;
      layers.push_back({{"name", n.name},
                        {"op", op_name(n.op)},
                        {"output_shape", n.shape},
                        {"params", params},
                        {"macs", m.macs(int(i))},
                        {"activation_bytes", bytes}});
    }
    j["layers"] = layers;
    j["total_params"] = m.total_params();
    j["total_macs"] = m.total_macs();
    j["total_activation_bytes"] = act;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  size_t w = 5;
  for (const Node& n : m.nodes)
    w = std::max(w, n.name.size());
  w = std::min<size_t>(w, 48);
  fmt::print("{} ({}), input {} {}\n\n", m.name, m.file, shape_str(m.input_shape),
             dtype_name(m.dtype));
  fmt::print("{:<{}}  {:<18}  {:<22}  {:>12}  {:>10}  {:>10}\n", "layer", w, "op", "output",
             "params", "MACs", "activation");
  int64_t act = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    int64_t params = 0;
    for (const ParamSpec& p : m.params(int(i)))
      if (p.trainable) params += numel(p.shape);
    const int64_t bytes = op_is_view(n.op) ? 0 : numel(n.shape) * int64_t(esize);
    act += bytes;
    std::string name = n.name.size() > w ? n.name.substr(0, w - 3) + "..." : n.name;
    fmt::print("{:<{}}  {:<18}  {:<22}  {:>12}  {:>10}  {:>10}\n", name, w, op_name(n.op),
               shape_str(n.shape), params ? with_commas(params) : "-",
               m.macs(int(i)) ? human_count(m.macs(int(i))) : "-",
               bytes ? human_bytes(bytes) : "view");
  }
  fmt::print("\n{} layers, {} parameters, {} MACs ({}), {} of activations (all layer outputs)\n",
             m.nodes.size(), with_commas(m.total_params()), human_count(m.total_macs()),
             with_commas(m.total_macs()), human_bytes(act));
}

} // namespace

void add_inspect(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "layer table: output shape, parameters, MACs and activation bytes; totals");
  a->model.add_to(cmd);
  cmd->add_flag("--json", a->json, "machine-readable: layers, total_params, total_macs");
  cmd->callback([a] { inspect(*a); });
}

} // namespace kiln::cli
