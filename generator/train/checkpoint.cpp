#include "generator/train/checkpoint.hpp"

#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/safetensors.hpp"

#include <charconv>
#include <filesystem>

namespace kiln {

namespace {

int64_t parse_count(const std::map<std::string, std::string>& meta, const std::string& key,
                    const std::string& file) {
  auto it = meta.find(key);
  if (it == meta.end())
    throw Error(file, "__metadata__", cat("has no \"", key, "\": not a kiln train checkpoint"));
  int64_t v = -1;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0)
    throw Error(file, cat("__metadata__/", key), cat("\"", s, "\" is not a count"));
  return v;
}

std::string get(const std::map<std::string, std::string>& meta, const std::string& key) {
  auto it = meta.find(key);
  return it == meta.end() ? "" : it->second;
}

} // namespace

std::string train_state_path(const std::string& weights_path) {
  const std::string ext = ".safetensors";
  if (weights_path.size() > ext.size() && weights_path.ends_with(ext))
    return weights_path.substr(0, weights_path.size() - ext.size()) + ".train" + ext;
  return weights_path + ".train" + ext;
}

void write_checkpoint(const std::string& weights_path, const Checkpoint& c) {
  io::Safetensors w, s;
  w.tensors = c.params;
  s.tensors = c.state;
  s.metadata = c.meta;
  s.metadata["format"] = kTrainStateFormat;
  s.metadata["epoch"] = std::to_string(c.epoch);
  s.metadata["step"] = std::to_string(c.step);
  w.metadata["format"] = kCheckpointFormat;
  for (const char* k : {"kiln", "model", "run"})
    w.metadata[k] = get(c.meta, k);
  w.metadata["epoch"] = s.metadata["epoch"];
  w.metadata["step"] = s.metadata["step"];
  // Both complete under temporary names before either replaces its predecessor.
  io::AtomicFile wf(weights_path), sf(train_state_path(weights_path));
  const auto wb = io::serialize_safetensors(w), sb = io::serialize_safetensors(s);
  wf.write(wb);
  sf.write(sb);
  sf.commit();
  wf.commit();
}

Checkpoint read_checkpoint(const std::string& weights_path) {
  const std::string state_path = train_state_path(weights_path);
  std::error_code ec;
  if (!std::filesystem::exists(weights_path, ec))
    throw Error(weights_path, "", "no checkpoint to resume: the file does not exist");
  if (!std::filesystem::exists(state_path, ec))
    throw Error(state_path, "",
                cat("no training state beside the checkpoint ", weights_path,
                    " (kiln train writes both; without it the run cannot continue exactly: "
                    "start a new run from these weights with --weights)"));
  io::Safetensors w = io::read_safetensors(weights_path);
  io::Safetensors s = io::read_safetensors(state_path);
  if (get(w.metadata, "format") != kCheckpointFormat)
    throw Error(weights_path, "__metadata__/format",
                cat("is \"", get(w.metadata, "format"), "\", not ", kCheckpointFormat,
                    ": not written by kiln train"));
  if (get(s.metadata, "format") != kTrainStateFormat)
    throw Error(state_path, "__metadata__/format",
                cat("is \"", get(s.metadata, "format"), "\", not ", kTrainStateFormat));
  Checkpoint c;
  c.epoch = parse_count(s.metadata, "epoch", state_path);
  c.step = parse_count(s.metadata, "step", state_path);
  const int64_t we = parse_count(w.metadata, "epoch", weights_path);
  const int64_t ws = parse_count(w.metadata, "step", weights_path);
  if (we != c.epoch || ws != c.step || get(w.metadata, "run") != get(s.metadata, "run"))
    throw Error(
        state_path, "__metadata__",
        cat("belongs to epoch ", c.epoch, " (step ", c.step, ") of run \"", get(s.metadata, "run"),
            "\", the weights ", weights_path, " to epoch ", we, " (step ", ws, ") of run \"",
            get(w.metadata, "run"),
            "\": the pair was not written together (interrupted between the two renames?)"));
  c.params = std::move(w.tensors);
  c.state = std::move(s.tensors);
  c.meta = std::move(s.metadata);
  return c;
}

} // namespace kiln
