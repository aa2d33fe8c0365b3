#include "generator/tune/database.hpp"

#include "generator/compile/cache.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>

namespace kiln {

namespace ju = json_util;
using ojson = nlohmann::ordered_json;

namespace {

bool faster(const Measurement& a, const Measurement& b) {
  if (a.median_ms && b.median_ms) return *a.median_ms < *b.median_ms;
  return a.median_ms.has_value() && !b.median_ms.has_value();
}

bool before(const Measurement& a, const Measurement& b) {
  return std::tie(a.key, a.variant) < std::tie(b.key, b.variant);
}

std::string get_nonempty(const ju::json& obj, std::string_view key, const std::string& ptr) {
  const std::string p = ju::child(ptr, key);
  std::string s = ju::get_string(ju::require(obj, key, ptr), p);
  if (s.empty()) throw Error("", p, "must not be empty");
  return s;
}

std::optional<double> optional_positive(const ju::json& obj, std::string_view key,
                                        const std::string& ptr) {
  if (!obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  const std::string p = ju::child(ptr, key);
  const double v = ju::get_number(obj.at(key), p);
  if (!(v > 0) || !std::isfinite(v)) throw Error("", p, "must be a positive number or null");
  return v;
}

Measurement parse_measurement(const ju::json& e, const std::string& ptr) {
  ju::expect_object(e, ptr);
  ju::reject_unknown_keys(e, ptr,
                          {"key", "op", "shape", "dtype", "layout", "layers", "variant", "family",
                           "median_ms", "runs", "predicted_us", "cudnn_ms"});
  Measurement m;
  m.key = get_nonempty(e, "key", ptr);
  m.op = get_nonempty(e, "op", ptr);
  m.shape = get_nonempty(e, "shape", ptr);
  m.dtype = get_nonempty(e, "dtype", ptr);
  m.layout = get_nonempty(e, "layout", ptr);
  m.variant = get_nonempty(e, "variant", ptr);
  m.family = get_nonempty(e, "family", ptr);
  const std::string lp = ju::child(ptr, "layers");
  const ju::json& layers = ju::require(e, "layers", ptr);
  ju::expect_array(layers, lp);
  for (size_t i = 0; i < layers.size(); ++i)
    m.layers.push_back(ju::get_string(layers[i], ju::child(lp, i)));
  m.median_ms = optional_positive(e, "median_ms", ptr);
  m.cudnn_ms = optional_positive(e, "cudnn_ms", ptr);
  m.runs = ju::get_int(ju::require(e, "runs", ptr), ju::child(ptr, "runs"));
  if (m.runs < 0 || (m.median_ms && m.runs < 1))
    throw Error("", ju::child(ptr, "runs"), "must count the timed runs (at least 1 with a median)");
  m.predicted_us =
      ju::get_number(ju::require(e, "predicted_us", ptr), ju::child(ptr, "predicted_us"));
  if (!(m.predicted_us >= 0) || !std::isfinite(m.predicted_us))
    throw Error("", ju::child(ptr, "predicted_us"), "must be a finite number >= 0");
  return m;
}

} // namespace

bool TuningDb::add(Measurement m) {
  auto it = std::lower_bound(measurements.begin(), measurements.end(), m, before);
  if (it != measurements.end() && it->key == m.key && it->variant == m.variant) {
    const bool differ = it->median_ms != m.median_ms;
    if (faster(m, *it)) *it = std::move(m);
    return differ;
  }
  measurements.insert(it, std::move(m));
  return false;
}

std::map<std::string, const Measurement*> TuningDb::winners() const {
  std::map<std::string, const Measurement*> w;
  for (const Measurement& m : measurements) {
    if (!m.median_ms) continue;
    auto [it, fresh] = w.emplace(m.key, &m);
    if (!fresh && faster(m, *it->second)) it->second = &m;
  }
  return w;
}

std::string TuningDb::identity_text() const {
  return fmt::format("{}, kiln {}, {}", gpu_identity, kiln_version, device);
}

TuningDb empty_tuning_db(const GpuDesc& g, std::string device) {
  TuningDb db;
  db.gpu_name = g.name;
  db.gpu_arch = g.arch;
  db.gpu_identity = g.identity();
  db.device = std::move(device);
  return db;
}

TuningDb parse_tuning_db(std::string_view text, const std::string& file) {
  try {
    const ju::json j = ju::parse(text, file);
    ju::expect_object(j, "");
    ju::reject_unknown_keys(j, "", {"format", "kiln_version", "gpu", "device", "measurements"});
    const std::string format = ju::get_string(ju::require(j, "format", ""), "/format");
    if (format != kTuningFormat)
      throw Error("", "/format", cat("is \"", format, "\", expected \"", kTuningFormat, "\""));
    TuningDb db;
    db.kiln_version = get_nonempty(j, "kiln_version", "");
    const ju::json& g = ju::require(j, "gpu", "");
    ju::expect_object(g, "/gpu");
    ju::reject_unknown_keys(g, "/gpu", {"name", "arch", "identity"});
    db.gpu_name = get_nonempty(g, "name", "/gpu");
    db.gpu_arch = get_nonempty(g, "arch", "/gpu");
    db.gpu_identity = get_nonempty(g, "identity", "/gpu");
    db.device = get_nonempty(j, "device", "");
    if (db.device != "gpu" && db.device != "emu")
      throw Error("", "/device", cat("is \"", db.device, "\", expected \"gpu\" or \"emu\""));
    const ju::json& ms = ju::require(j, "measurements", "");
    ju::expect_array(ms, "/measurements");
    for (size_t i = 0; i < ms.size(); ++i) {
      const std::string ptr = ju::child("/measurements", i);
      Measurement m = parse_measurement(ms[i], ptr);
      if (db.device == "emu" && m.median_ms)
        throw Error("", ju::child(ptr, "median_ms"), "the emu backend times nothing: must be null");
      if (db.device == "gpu" && !m.median_ms)
        throw Error("", ju::child(ptr, "median_ms"), "a gpu database holds timed measurements");
      const size_t before_n = db.measurements.size();
      db.add(std::move(m));
      if (db.measurements.size() == before_n)
        throw Error("", ptr, "measures the same variant of the same shape as an earlier entry");
    }
    return db;
  } catch (const Error& e) {
    throw e.in_file(file);
  }
}

TuningDb load_tuning_db(const std::string& path) {
  const auto bytes = io::read_file(path);
  return parse_tuning_db(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

ojson tuning_db_to_json(const TuningDb& db) {
  ojson j;
  j["format"] = kTuningFormat;
  j["kiln_version"] = db.kiln_version;
  j["gpu"] = {{"name", db.gpu_name}, {"arch", db.gpu_arch}, {"identity", db.gpu_identity}};
  j["device"] = db.device;
  ojson ms = ojson::array();
  for (const Measurement& m : db.measurements) {
    ojson e;
    e["key"] = m.key;
    e["op"] = m.op;
    e["shape"] = m.shape;
    e["dtype"] = m.dtype;
    e["layout"] = m.layout;
    e["layers"] = m.layers;
    e["variant"] = m.variant;
    e["family"] = m.family;
    e["median_ms"] = m.median_ms ? ojson(*m.median_ms) : ojson(nullptr);
    e["runs"] = m.runs;
    e["predicted_us"] = m.predicted_us;
    e["cudnn_ms"] = m.cudnn_ms ? ojson(*m.cudnn_ms) : ojson(nullptr);
    ms.push_back(std::move(e));
  }
  j["measurements"] = std::move(ms);
  return j;
}

void save_tuning_db(const TuningDb& db, const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  io::write_file_atomic(path, tuning_db_to_json(db).dump(1) + "\n");
}

std::string default_tuning_db_path(const GpuDesc& g) {
  std::string id = g.identity();
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  return KernelCache::default_dir() + "/tuning/" + id + "-kiln-" + KILN_VERSION + ".json";
}

std::optional<TuningDb> load_tuning_for(const GpuDesc& g, const std::string& spec) {
  if (spec == "none") return std::nullopt;
  const std::string path = spec.empty() ? default_tuning_db_path(g) : spec;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (spec.empty()) return std::nullopt;
    throw Error(path, "", "no such tuning database (kiln tune writes one; --tuning-db none: none)");
  }
  const auto warn = [&](const std::string& why) {
    fmt::print(stderr, "kiln: warning: {}: {}; the cost model decides instead\n", path, why);
    return std::nullopt;
  };
  TuningDb db;
  try {
    db = load_tuning_db(path);
  } catch (const Error& e) {
    return warn(cat("ignored, not a valid tuning database: ", e.what()));
  }
  if (db.gpu_identity != g.identity())
    return warn(cat("ignored: measured on ", db.gpu_identity, ", not ", g.identity()));
  if (db.kiln_version != KILN_VERSION)
    return warn(cat("ignored: written by kiln ", db.kiln_version, ", not ", KILN_VERSION));
  if (db.device != "gpu") return warn("ignored: checked on the emulator, so it holds no timings");
  return db;
}

} // namespace kiln

namespace kiln {

std::string tuning_fingerprint(const GpuDesc& g, const std::string& spec) {
  if (spec == "none") return "";
  const std::string path = spec.empty() ? default_tuning_db_path(g) : spec;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return spec.empty() ? "" : "missing " + path;
  const auto bytes = io::read_file(path);
  return content_hash(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

} // namespace kiln
