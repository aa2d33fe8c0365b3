#include "generator/run/generated_run.hpp"

#include "generator/compile/cache.hpp"
#include "generator/compile/device_backend.hpp"
#include "generator/compile/templates.hpp"
#include "generator/model/model_json.hpp"
#include "generator/tune/database.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"

#include <filesystem>
#include <fmt/format.h>

namespace kiln {

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
       "tuning " + tuning_fingerprint(g, o.tuning_db),
       "layout " + std::string(o.layout ? layout_name(*o.layout) : "auto")});
  return KernelCache::default_dir() + "/runs/" + key;
}

} // namespace

GeneratedRun prepare_generated(const Model& m, const GpuDesc& g, const GenerateOptions& o,
                               const std::string& device, bool progress) {
  GeneratedRun r;
  r.dir = run_directory(m, g, o);
  if (!std::filesystem::exists(r.dir + "/plan.json"))
    write_generated(generate(m, g, o), r.dir, Existing::keep);
  DeviceBackendOptions bo;
  bo.progress = progress;
  r.backend = compiled_backends(r.dir, device, bo)();
  r.plan = load_plan(r.dir + "/plan.json");
  return r;
}

} // namespace kiln
