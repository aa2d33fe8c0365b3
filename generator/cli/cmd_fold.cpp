// kiln fold: the FoldedCNNs form of a model.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/model/fold.hpp"
#include "generator/model/model_json.hpp"

#include <fmt/format.h>

namespace kiln::cli {

namespace {

struct FoldArgs {
  ModelArgs model;
  int64_t factor = 0;
  double multiplier = 0;
  bool multiplier_given = false;
  std::string output;
};

void fold(const FoldArgs& a) {
  const Model m = a.model.load();
  FoldOptions o;
  o.factor = a.factor;
  if (a.multiplier_given) o.multiplier = a.multiplier;
  const Model f = fold_model(m, o);
  save_model(f, a.output);
  fmt::print("folded {} by {}: {} -> {} parameters, {} -> {} MACs per {} images; wrote {}\n",
             m.name, a.factor, with_commas(m.total_params()), with_commas(f.total_params()),
             human_count(m.total_macs() * f.input_shape[0] / m.input_shape[0]),
             human_count(f.total_macs()), f.input_shape[0], a.output);
}

} // namespace

void add_fold(CLI::App& app) {
  auto a = std::make_shared<FoldArgs>();
  CLI::App* cmd = app.add_subcommand(
      "fold", "FoldedCNNs: stack F images along channels, widen hidden layers by sqrt(F) "
              "(or --multiplier), give the last layer F*K outputs. Needs retrained weights.");
  a->model.add_to(cmd);
  cmd->add_option("--factor,-f", a->factor, "images folded into one (2..64)")->required();
  CLI::Option* mult = cmd->add_option(
      "--multiplier", a->multiplier,
      "hidden width multiplier in (0, 64]: each hidden conv2d/linear width w becomes "
      "int(w * multiplier) (default sqrt(factor), FoldedCNNs' choice)");
  cmd->add_option("-o,--output", a->output, "where to write the folded model")->required();
  cmd->callback([a, mult] {
    a->multiplier_given = mult->count() > 0;
    fold(*a);
  });
}

} // namespace kiln::cli
