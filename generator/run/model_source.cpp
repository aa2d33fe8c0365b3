#include "generator/run/model_source.hpp"

#include "generator/model/model_json.hpp"
#include "generator/model/onnx/onnx_import.hpp"
#include "runtime/embedded.hpp"
#include "runtime/error.hpp"

#include <filesystem>
#include <memory>

namespace kiln {

extern const EmbeddedFile shipped_model_files[];
extern const size_t shipped_model_files_count;

std::vector<std::string> shipped_model_names() {
  std::vector<std::string> r;
  for (size_t i = 0; i < shipped_model_files_count; ++i)
    r.push_back(std::filesystem::path(std::string(shipped_model_files[i].path)).stem().string());
  return r;
}

namespace {

// One import per file and process: commands load a model more than once (its input, then
// its weights).
const ImportedModel& imported(const std::string& path) {
  static std::map<std::string, std::unique_ptr<ImportedModel>> cache;
  auto& slot = cache[path];
  if (!slot) slot = std::make_unique<ImportedModel>(import_onnx(path));
  return *slot;
}

} // namespace

const std::map<std::string, Tensor>* model_file_weights(const std::string& path_or_name) {
  return is_onnx_path(path_or_name) ? &imported(path_or_name).weights : nullptr;
}

Model load_model_or_shipped(const std::string& path_or_name) {
  if (is_onnx_path(path_or_name)) return imported(path_or_name).model;
  std::error_code ec;
  if (std::filesystem::exists(path_or_name, ec) || path_or_name.find('/') != std::string::npos ||
      path_or_name.ends_with(".json"))
    return load_model(path_or_name);
  std::string known;
  for (size_t i = 0; i < shipped_model_files_count; ++i) {
    const EmbeddedFile& f = shipped_model_files[i];
    const std::string stem = std::filesystem::path(std::string(f.path)).stem().string();
    if (stem == path_or_name) return parse_model(f.data, "models/" + std::string(f.path));
    known += (known.empty() ? "" : ", ") + stem;
  }
  throw Error(path_or_name, "",
              cat("no such file, and no shipped model has that name (shipped: ", known, ")"));
}

} // namespace kiln
