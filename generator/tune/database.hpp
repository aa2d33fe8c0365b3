// The tuning database (kiln-tuning/1): what kiln tune measured for one GPU descriptor
// identity and one kiln version — every checked variant of every swept layer shape, with
// its median time (none on the emu backend, which only checks). Winners are derived, not
// stored: per shape, the fastest timed variant. That keeps shards and merges simple: a
// merge is a union, and a shape's variants may come from different shards.
#pragma once

#include "generator/gpu/gpu_desc.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

inline constexpr std::string_view kTuningFormat = "kiln-tuning/1";

struct Measurement {
  std::string key; // TuneKey::id
  std::string op, shape, dtype, layout;
  std::vector<std::string> layers; // where the sweep met the shape (informative)
  std::string variant, family;
  std::optional<double> median_ms; // none: checked on the emulator, not timed
  int64_t runs = 0;
  double predicted_us = 0;        // the cost model's estimate, uncorrected
  std::optional<double> cudnn_ms; // cuDNN's best algorithm on the same shape
};

struct TuningDb {
  std::string kiln_version = KILN_VERSION;
  std::string gpu_name, gpu_arch, gpu_identity;
  std::string device = "gpu";            // "gpu": timed; "emu": checked only
  std::vector<Measurement> measurements; // sorted by (key, variant), one per pair

  // Adds m, or keeps the faster of m and the measurement of the same (key, variant); a
  // timed measurement beats an untimed one. Returns whether the two disagreed.
  bool add(Measurement m);
  // Per key, the fastest timed measurement.
  std::map<std::string, const Measurement*> winners() const;
  std::string identity_text() const; // "NVIDIA H200@1a2b3c4d, kiln 0.1.0, gpu"
};

TuningDb empty_tuning_db(const GpuDesc& g, std::string device);

// Throws kiln::Error naming the file and the JSON pointer for anything malformed.
TuningDb parse_tuning_db(std::string_view text, const std::string& file);
TuningDb load_tuning_db(const std::string& path);
nlohmann::ordered_json tuning_db_to_json(const TuningDb& db);
// Atomically (a temporary file renamed); creates the directory.
void save_tuning_db(const TuningDb& db, const std::string& path);

// <cache>/tuning/<identity>-kiln-<version>.json (cache: KernelCache's default directory).
std::string default_tuning_db_path(const GpuDesc& g);

// The database selection uses for `g`: `spec` is a path, "none", or "" (the default
// database for g where one exists). A missing file named explicitly is an error; a corrupt
// one, or one for another GPU, kiln version or device, is ignored with a warning on stderr.
std::optional<TuningDb> load_tuning_for(const GpuDesc& g, const std::string& spec);

// A hash of the bytes load_tuning_for would read ("" where it reads none): part of the
// cache key of a generated plan.
std::string tuning_fingerprint(const GpuDesc& g, const std::string& spec);

} // namespace kiln
