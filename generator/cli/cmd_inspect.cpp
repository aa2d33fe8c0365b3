// kiln inspect: the layer table (shape, parameters, MACs, activation bytes) and totals.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/inspect_ceilings.hpp"
#include "generator/cli/inspect_fold.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/lower/lower.hpp"
#include "generator/model/fold.hpp"
#include "generator/model/profile.hpp"
#include "generator/rewrite/channel_views.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

namespace kiln::cli {

namespace {

struct InspectArgs {
  ModelArgs model;
  bool json = false;
  std::string profile;
  std::string fold, gpu;
  bool train = false;
};

// The channel copies (concat inputs, channel slices) of the inference plan at this batch
// that become views (generator/rewrite/channel_views.hpp), in NCHW on the cpu reference
// (which writes through any pitch; a GPU plan's views depend on its kernels: kiln generate
// says them). None without such layers.
std::optional<ChannelViews> channel_views_of(const Model& m) {
  if (std::none_of(m.nodes.begin(), m.nodes.end(), [](const Node& n) {
        return n.op == OpKind::concat || n.op == OpKind::channel_slice;
      }))
    return std::nullopt;
  Plan p = lower_model_steps(m, LowerOptions{});
  return plan_channel_views(p);
}

size_t n_convs(const Model& m) {
  return size_t(std::count_if(m.nodes.begin(), m.nodes.end(),
                              [](const Node& n) { return n.op == OpKind::conv2d; }));
}

void inspect(const InspectArgs& a) {
  const Model m = a.model.load();
  if (a.train && (a.gpu.empty() || !a.fold.empty()))
    throw Error("", "--train",
                "goes with --gpu alone: the kernels of a training step on that GPU, per step");
  if (!a.gpu.empty() && a.fold.empty()) {
    if (!a.profile.empty()) throw Error("", "--profile", "is not part of the --gpu table");
    print_ceilings(m, load_gpu(a.gpu), a.json, a.train);
    return;
  }
  if (!a.fold.empty() || !a.gpu.empty()) {
    if (a.gpu.empty())
      throw Error("", "--fold",
                  "--fold and --gpu go together: the folding roofline of the model on that GPU");
    if (!a.profile.empty()) throw Error("", "--profile", "is not part of the --fold table");
    print_fold_roofline(m, load_gpu(a.gpu), parse_fold_factors(a.fold), a.json);
    return;
  }
  const size_t esize = dtype_size(m.dtype);
  // The measured input densities by conv2d layer; a profile of another model, or naming a
  // layer this one lacks, is an error rather than a half-filled column.
  std::optional<Profile> prof;
  std::map<std::string, const LayerProfile*> measured;
  if (!a.profile.empty()) {
    prof = load_profile(a.profile);
    profile_densities(*prof, m);
    for (const LayerProfile& l : prof->densities)
      measured[l.layer] = &l;
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = m.name;
    j["input_shape"] = caller_input_shape(m);
    if (m.signal) j["signal"] = true; // layers' shapes are [N, C, L, 1]
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
      nlohmann::ordered_json l = {{"name", n.name},           {"op", op_name(n.op)},
                                  {"output_shape", n.shape},  {"params", params},
                                  {"macs", m.macs(int(i))},   {"flops", thop_flops(m, int(i))},
                                  {"activation_bytes", bytes}};
      if (const auto it = measured.find(n.name); it != measured.end()) {
        const LayerProfile& lp = *it->second;
        l["input_density"] = lp.density;
        l["input_density_tiles"] = {
            {"p10", lp.tiles.p10}, {"median", lp.tiles.median}, {"p90", lp.tiles.p90}};
      }
      layers.push_back(l);
    }
    if (prof) j["profile"] = a.profile;
    j["layers"] = layers;
    j["total_params"] = m.total_params();
    j["total_macs"] = m.total_macs();
    j["total_flops"] = total_thop_flops(m);
    j["total_activation_bytes"] = act;
    if (const auto v = channel_views_of(m)) j["channel_views"] = channel_views_json(*v);
    fmt::print("{}\n", j.dump(2));
    return;
  }
  size_t w = 5;
  for (const Node& n : m.nodes)
    w = std::max(w, n.name.size());
  w = std::min<size_t>(w, 48);
  fmt::print("{} ({}), input {}{} {}\n\n", m.name, m.file, shape_str(caller_input_shape(m)),
             m.signal ? cat(" (a 1-D signal, held as ", shape_str(m.input_shape), ")") : "",
             dtype_name(m.dtype));
  fmt::print("{:<{}}  {:<18}  {:<22}  {:>12}  {:>10}  {:>10}{}\n", "layer", w, "op", "output",
             "params", "MACs", "activation",
             prof ? fmt::format("  {:>7}  {:>13}", "density", "tiles p10-p90") : "");
  int64_t act = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    int64_t params = 0;
    for (const ParamSpec& p : m.params(int(i)))
      if (p.trainable) params += numel(p.shape);
    const int64_t bytes = op_is_view(n.op) ? 0 : numel(n.shape) * int64_t(esize);
    act += bytes;
    std::string name = n.name.size() > w ? n.name.substr(0, w - 3) + "..." : n.name;
    std::string density; // only conv2d rows get the columns (a conv the profile skips: "-")
    if (prof && n.op == OpKind::conv2d) {
      const auto it = measured.find(n.name);
      density = it == measured.end()
                    ? fmt::format("  {:>7}", "-")
                    : fmt::format("  {:>7.4f}  {:>13}", it->second->density,
                                  fmt::format("{:.3f}-{:.3f}", it->second->tiles.p10,
                                              it->second->tiles.p90));
    }
    fmt::print("{:<{}}  {:<18}  {:<22}  {:>12}  {:>10}  {:>10}{}\n", name, w, op_name(n.op),
               shape_str(n.shape), params ? with_commas(params) : "-",
               m.macs(int(i)) ? human_count(m.macs(int(i))) : "-",
               bytes ? human_bytes(bytes) : "view", density);
  }
  fmt::print("\n{} layers, {} parameters, {} MACs ({}), {} of activations (all layer outputs)\n",
             m.nodes.size(), with_commas(m.total_params()), human_count(m.total_macs()),
             with_commas(m.total_macs()), human_bytes(act));
  if (const auto v = channel_views_of(m))
    fmt::print("channel copies (concat inputs, channel slices) of the NCHW plan at batch {}: {} of "
               "{} are views, {} copy steps fewer\n",
               m.input_shape[0], v->views, v->views + v->copies, v->steps_removed);
  if (prof)
    fmt::print("density: the fraction of nonzeros in a conv2d layer's input ({} of {} measured, "
               "{}on {}{}); tiles p10-p90: its spread over tiles of {}x{} pixels\n",
               measured.size(), n_convs(m), a.profile + ", ",
               prof->device.empty() ? "an unnamed device" : prof->device,
               prof->input_shape.empty() ? "" : " at input " + shape_str(prof->input_shape),
               prof->tile[0], prof->tile[1]);
}

} // namespace

void add_inspect(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "layer table: output shape, parameters, MACs and activation bytes; totals");
  a->model.add_to(cmd);
  cmd->add_flag("--json", a->json,
                "machine-readable: layers, total_params, total_macs, total_flops. flops: "
                "FLOPs as FoldedCNNs reports them, 2 x thop's count (conv2d: one more per "
                "output element with a bias; batchnorm, average pools and softmax counted "
                "too; relu and max pools not); for a folded model, per folded input");
  cmd->add_option("--profile", a->profile,
                  "a kiln-profile/1 file (from kiln profile): adds beside each conv2d layer the "
                  "measured density of its input (the fraction of nonzero elements) and its "
                  "spread over tiles (p10-p90 of the tiles' densities); --json: input_density "
                  "and input_density_tiles per layer. The same densities plan the sparse "
                  "kernels of generate/build/run --profile");
  cmd->add_option("--fold", a->fold,
                  "folding factors to compare, e.g. 1,2,3,4 (with --gpu): per layer and in "
                  "total, the FLOPs and bytes per image, their ratio and the roofline's time "
                  "per image and throughput on the GPU for the model folded by each factor "
                  "(FoldedCNNs: hidden widths x sqrt(f)), and the gain over the first factor");
  cmd->add_option("--gpu", a->gpu,
                  "GPU descriptor (a file or a shipped name). Alone: the kernels kiln generate "
                  "would choose per layer on it, each with its estimate, its limiter (math, "
                  "dram, smem, issue, latency) and those ceilings as fractions of the math "
                  "peak, and the FLOP-weighted ceiling of the tensor-core kernels; with --fold: "
                  "the folding roofline");
  cmd->add_flag("--train", a->train,
                "with --gpu: the kernels of a training step (as kiln generate --train chooses "
                "them: its forward, data-gradient and weight-gradient convs among them), each "
                "with its ceilings");
  cmd->callback([a] { inspect(*a); });
}

} // namespace kiln::cli
