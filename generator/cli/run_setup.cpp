#include "generator/cli/run_setup.hpp"

#include "generator/cli/format.hpp"
#include "generator/compile/cache.hpp"
#include "generator/compile/compile_dir.hpp"
#include "generator/compile/templates.hpp"
#include "generator/model/model_json.hpp"
#include "generator/tune/database.hpp"
#include "runtime/cuda/backend.hpp"
#include "runtime/cuda/cudnn_runner.hpp"
#include "runtime/emu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/fold_batch.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/npy.hpp"
#include "runtime/io/safetensors.hpp"
#include "runtime/weights.hpp"

#include <filesystem>
#include <fmt/format.h>

namespace kiln::cli {

namespace {

// This kiln's own identity: a generated directory depends on the generator's code, which a
// rebuild changes without changing KILN_VERSION.
const std::string& kiln_identity() {
  static const std::string id = [] {
    try {
      const auto bytes = io::read_file("/proc/self/exe");
      return content_hash(
          std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    } catch (const Error&) {
      return std::string(KILN_VERSION);
    }
  }();
  return id;
}

// Where a configuration's generated directory is kept.
std::string run_directory(const Model& m, const GpuDesc& g, const GenerateOptions& o) {
  const std::string key = cache_key(
      {model_to_text(m), g.identity(), KILN_VERSION, kiln_identity(), templates_hash(),
       o.train ? "train" : "infer", o.schedule, o.budget, o.tiles, o.cudnn_only ? "cudnn" : "kiln",
       std::to_string(o.slots), fmt::format("{}", o.lr), o.train ? o.recipe.key() : "",
       "sparse " + std::to_string(int(o.sparse)), o.profile ? profile_to_text(*o.profile) : "",
       "tuning " + tuning_fingerprint(g, o.tuning_db)});
  return KernelCache::default_dir() + "/runs/" + key;
}

} // namespace

void DeviceArgs::add_to(CLI::App* cmd) {
  cmd->add_option(
         "--device", device,
         "backend: cpu (the reference), emu (the generated kernels on the CPU emulator), gpu")
      ->check(CLI::IsMember({"cpu", "emu", "gpu"}));
  cmd->add_option("--weights", weights,
                  "parameters by name (.safetensors, PyTorch state_dict names); default: an ONNX "
                  "model's own initializers, else seeded");
  cmd->add_option("--seed", seed, "seed for the weights when no --weights are given (default 0)");
  cmd->add_option("--input", input, "input batch, .npy [N, C, H, W]")->required();
}

ModelInput load_model_input(const ModelArgs& a, const std::string& input_path) {
  ModelInput r;
  r.input = io::read_npy(input_path);
  if (!is_float(r.input.dtype()))
    throw Error(input_path, "",
                cat("the input must hold floats, not ", dtype_name(r.input.dtype())));
  const Shape s = r.input.shape();
  ModelOverrides ov = a.overrides();
  r.model = load_model_or_shipped(a.model);
  r.images = s.empty() ? 0 : s[0];
  // A folded model takes any number of images: the last fold is filled with zero images.
  int64_t factor = 1;
  for (const Node& n : r.model.nodes)
    if (n.op == OpKind::fold) factor = n.attrs.factor;
  if (s.size() == r.model.input_shape.size()) {
    if (!ov.batch) ov.batch = (s[0] + factor - 1) / factor * factor;
    if (!ov.image && s.size() == 4) ov.image = Int2{s[2], s[3]};
  }
  apply_overrides(r.model, ov);
  Shape padded = s;
  if (!padded.empty() && factor > 1 && padded[0] < r.model.input_shape[0] &&
      r.model.input_shape[0] - padded[0] < factor)
    padded[0] = r.model.input_shape[0];
  if (padded != r.model.input_shape)
    throw Error(
        input_path, "",
        cat("has shape ", shape_str(s), ", the model takes ", shape_str(r.model.input_shape)));
  if (padded != s) {
    r.input = pad_batch(r.input, padded[0]);
    const int64_t pad = padded[0] - s[0];
    r.padding_note = fmt::format("{} images fill {} folds of {}: the last fold is padded with {} "
                                 "zero image{} and {} row{} dropped",
                                 s[0], padded[0] / factor, factor, pad, pad == 1 ? "" : "s",
                                 pad == 1 ? "its" : "their", pad == 1 ? " is" : "s are");
  }
  return r;
}

GeneratedRun prepare_generated(const Model& m, const GpuDesc& g, const GenerateOptions& o,
                               const std::string& device) {
  GeneratedRun r;
  r.dir = run_directory(m, g, o);
  if (!std::filesystem::exists(r.dir + "/plan.json")) write_generated(generate(m, g, o), r.dir);
  CompileOptions co;
  co.progress = stderr_is_terminal();
  if (device == "emu") {
    co.compiler = "host";
    compile_dir(r.dir, co);
    r.backend = std::make_unique<EmuBackend>(emu_library_path(r.dir));
  } else {
    co.compiler = "nvrtc";
    compile_dir(r.dir, co);
    auto cuda = std::make_unique<CudaBackend>(r.dir);
    cuda->set_library(make_cudnn_runner());
    r.backend = std::move(cuda);
  }
  r.plan = load_plan(r.dir + "/plan.json");
  return r;
}

void bind_weights_and_input(Executor& ex, const Plan& plan, const DeviceArgs& a,
                            const Tensor& input, const std::string& model) {
  if (!a.weights.empty()) {
    const io::Safetensors w = io::read_safetensors(a.weights);
    bind_weights(ex, plan, w.tensors, a.weights);
  } else if (const auto* w = model_file_weights(model)) {
    bind_weights(ex, plan, *w, model);
  } else {
    bind_seeded_weights(ex, plan, a.seed);
  }
  ex.write(plan.inputs[0], input);
}

} // namespace kiln::cli
