// kiln models: the example models shipped inside kiln.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/run/model_source.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln::cli {

void add_models(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("models", "list the shipped example models");
  cmd->callback([] {
    size_t w = 20;
    for (const std::string& n : shipped_model_names())
      w = std::max(w, n.size());
    fmt::print("{:<{}}  {:<18}  {:>14}  {:>10}\n", "name", w, "input", "params", "MACs");
    for (const std::string& n : shipped_model_names()) {
      const Model m = load_model_or_shipped(n);
      fmt::print("{:<{}}  {:<18}  {:>14}  {:>10}\n", n, w, shape_str(m.input_shape),
                 with_commas(m.total_params()), human_count(m.total_macs()));
    }
  });
}

} // namespace kiln::cli
