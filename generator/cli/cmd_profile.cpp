// kiln profile: runs a model forward once and records the density of every conv2d layer's
// input (kiln-profile/1), for the sparse family of generate/build/run --profile.
#include "generator/cli/commands.hpp"
#include "generator/cli/device_args.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/cli/plan_progress.hpp"
#include "generator/gpu/detect.hpp"
#include "generator/run/density_profile.hpp"
#include "generator/run/model_input.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/progress.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <optional>

namespace kiln::cli {

namespace {

struct ProfileArgs {
  ModelArgs model;
  DeviceArgs dev;
  std::string gpu;
  std::string tile = "8x8";
  std::string output;
};

// "RxC" or "N" (N x N), each within 1..65536 as kiln-profile/1 allows.
Int2 parse_tile(const std::string& s) {
  auto bad = [&] {
    return Error("", "--tile",
                 cat("expected RxC or N (pixels, each 1..65536, e.g. 8x8 or 16), got \"", s, "\""));
  };
  const size_t x = s.find('x');
  const std::string parts[2] = {s.substr(0, x), x == std::string::npos ? s : s.substr(x + 1)};
  Int2 t{0, 0};
  for (int i = 0; i < 2; ++i) {
    const std::string& p = parts[i];
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (p.empty() || ec != std::errc() || end != p.data() + p.size() || v < 1 || v > 65536)
      throw bad();
    t[i] = v;
  }
  return t;
}

std::string fit(const std::string& s, size_t w) {
  return s.size() > w ? s.substr(0, w - 3) + "..." : s;
}

void profile(const ProfileArgs& a) {
  const Int2 tile = parse_tile(a.tile);
  if (a.dev.device == "cpu" && !a.gpu.empty())
    throw Error("", "--gpu",
                "chooses the generated kernels of --device emu or gpu; the cpu backend runs the "
                "reference of every layer");
  const ModelInput mi = load_model_input(a.model.model, a.model.overrides(), a.dev.input);
  const Model& m = mi.model;

  // Fails now on an unwritable destination rather than after the run; removed unless committed.
  io::AtomicFile out(a.output);

  DensityOptions o;
  o.device = a.dev.device;
  if (a.dev.device != "cpu") o.gpu = gpu_for_device(a.gpu.empty() ? "auto" : a.gpu, a.dev.device);
  o.model = a.model.model;
  o.weights = a.dev.weights;
  o.seed = a.dev.seed;
  o.input = a.dev.input;
  o.tile = tile;
  o.progress = ProgressLine::stderr_is_terminal();
  std::optional<PlanProgress> progress;
  o.on_plan = [&](const Plan& plan) {
    progress.emplace(plan);
    return progress->callback();
  };
  const DensityRun run = measure_densities(m, mi.input, o);
  if (progress) progress->done();
  const Profile& p = run.profile;
  const double secs = run.seconds;
  const std::string text = profile_to_text(p);
  parse_profile(text, a.output); // what we write must read back
  out.write(text);
  out.commit();

  size_t wl = 5, wi = 5;
  for (const LayerProfile& l : p.densities)
    wl = std::max(wl, l.layer.size()), wi = std::max(wi, l.input.size());
  wl = std::min<size_t>(wl, 48), wi = std::min<size_t>(wi, 40);
  fmt::print("{:<{}}  {:<{}}  {:>8}  {:>26}\n", "layer", wl, "input", wi, "density",
             "tiles p10 / median / p90");
  double sum = 0, lo = 1, hi = 0;
  for (const LayerProfile& l : p.densities) {
    fmt::print("{:<{}}  {:<{}}  {:>8.4f}  {:>8.4f} / {:>6.4f} / {:>6.4f}\n", fit(l.layer, wl), wl,
               fit(l.input, wi), wi, l.density, l.tiles.p10, l.tiles.median, l.tiles.p90);
    sum += l.density, lo = std::min(lo, l.density), hi = std::max(hi, l.density);
  }
  fmt::print("\n{}: {} conv2d inputs measured on {} (input {}, weights {}, tiles {}x{}), forward "
             "{:.3f} s; density mean {:.4f}, min {:.4f}, max {:.4f}; wrote {}\n",
             m.name, p.densities.size(), a.dev.device, shape_str(m.input_shape), p.weights, tile[0],
             tile[1], secs, sum / double(p.densities.size()), lo, hi, a.output);
}

} // namespace

void add_profile(CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "run MODEL forward once on X.npy and measure, for every conv2d layer, the density of its "
      "input: the fraction of the input's elements that are nonzero (1 for a raw image; after "
      "a relu often near 0.5). Also its tile spread: the p10/median/p90 of the densities of "
      "tiles of --tile pixels of one image (all channels), close together when the zeros are "
      "spread evenly, far apart when they cluster. Writes PROFILE.json (kiln-profile/1) for "
      "`kiln generate/build/run --profile`, which plan the activation-sparse kernels from "
      "these densities (a conv runs sparse where the cost model predicts it faster at its "
      "density), and for `kiln inspect --profile`, which shows them beside each layer.\n"
      "Example: kiln profile resnet18 --input x.npy --device cpu -o resnet18.profile.json");
  a->model.add_to(cmd);
  a->dev.add_to(cmd);
  cmd->add_option("--gpu", a->gpu,
                  "descriptor the generated kernels of --device emu or gpu are made for "
                  "(default: the live GPU with --device gpu, h200 with emu)");
  cmd->add_option("--tile", a->tile,
                  "tile of the spread, RxC pixels or N for NxN (default 8x8); the "
                  "densities themselves do not depend on it");
  cmd->add_option("-o,--output", a->output, "where to write the profile (kiln-profile/1 JSON)")
      ->required();
  cmd->callback([a] { profile(*a); });
}

} // namespace kiln::cli
