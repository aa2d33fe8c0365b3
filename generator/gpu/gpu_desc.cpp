#include "generator/gpu/gpu_desc.hpp"

#include "runtime/embedded.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <xxhash.h>

namespace kiln {

extern const EmbeddedFile shipped_gpu_files[];
extern const size_t shipped_gpu_files_count;

namespace ju = json_util;

namespace {

struct IntField {
  std::string_view key;
  int64_t GpuDesc::*field;
  bool may_be_zero;
};

constexpr IntField int_fields[] = {
    {"sm_count", &GpuDesc::sm_count, false},
    {"warp_size", &GpuDesc::warp_size, false},
    {"max_threads_per_block", &GpuDesc::max_threads_per_block, false},
    {"max_threads_per_sm", &GpuDesc::max_threads_per_sm, false},
    {"max_blocks_per_sm", &GpuDesc::max_blocks_per_sm, false},
    {"registers_per_sm", &GpuDesc::registers_per_sm, false},
    {"registers_per_block", &GpuDesc::registers_per_block, false},
    {"shared_memory_per_sm", &GpuDesc::shared_memory_per_sm, false},
    {"shared_memory_per_block", &GpuDesc::shared_memory_per_block, false},
    {"shared_memory_per_block_optin", &GpuDesc::shared_memory_per_block_optin, false},
    {"shared_memory_reserved_per_block", &GpuDesc::shared_memory_reserved_per_block, true},
    {"l2_bytes", &GpuDesc::l2_bytes, false},
    {"memory_bytes", &GpuDesc::memory_bytes, false},
    {"shared_memory_bytes_per_clock", &GpuDesc::shared_memory_bytes_per_clock, false},
    {"issue_slots_per_clock", &GpuDesc::issue_slots_per_clock, false},
};

double positive_number(const nlohmann::json& obj, std::string_view key, const std::string& ptr,
                       bool may_be_zero) {
  const std::string p = ju::child(ptr, key);
  const double v = ju::get_number(ju::require(obj, key, ptr), p);
  if (!(v >= 0) || (!may_be_zero && v == 0) || v > 1e9)
    throw Error("", p, cat("must be a ", may_be_zero ? "non-negative" : "positive",
                           " number, got ", v));
  return v;
}

} // namespace

int GpuDesc::compute_capability() const {
  return std::stoi(arch.substr(3, arch.find_first_not_of("0123456789", 3) - 3));
}

std::string GpuDesc::identity() const {
  const std::string canon = gpu_to_json(*this).dump();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(canon.data(), canon.size())));
  return name + "@" + std::string(hex, 8);
}

GpuDesc parse_gpu(std::string_view text, const std::string& file) {
  try {
    const nlohmann::json j = ju::parse(text, file);
    ju::expect_object(j, "");
    std::vector<std::string_view> known = {"format",
                                           "name",
                                           "arch",
                                           "memory_bandwidth_gbps",
                                           "clock_mhz",
                                           "peak_tflops",
                                           "l2_bytes_per_clock",
                                           "source"};
    for (const IntField& f : int_fields) known.push_back(f.key);
    for (auto it = j.begin(); it != j.end(); ++it)
      if (std::find(known.begin(), known.end(), it.key()) == known.end())
        throw Error("", ju::child("", it.key()), cat("unknown key \"", it.key(), "\""));
    const std::string format = ju::get_string(ju::require(j, "format", ""), "/format");
    if (format != kGpuFormat)
      throw Error("", "/format",
                  cat("unsupported format \"", format, "\" (this kiln reads ", kGpuFormat, ")"));
    GpuDesc g;
    g.name = ju::get_string(ju::require(j, "name", ""), "/name");
    if (g.name.empty()) throw Error("", "/name", "must not be empty");
    g.arch = ju::get_string(ju::require(j, "arch", ""), "/arch");
    if (!std::regex_match(g.arch, std::regex("sm_[1-9][0-9]{1,2}a?")))
      throw Error("", "/arch", cat("expected an architecture such as \"sm_90\", got \"", g.arch, "\""));
    for (const IntField& f : int_fields) {
      const std::string p = ju::child("", f.key);
      const int64_t v = ju::get_int(ju::require(j, f.key, ""), p);
      if (v < 0 || (!f.may_be_zero && v == 0) || v > (int64_t(1) << 50))
        throw Error("", p, cat("must be ", f.may_be_zero ? "non-negative" : "positive", ", got ", v));
      g.*f.field = v;
    }
    if (j.contains("l2_bytes_per_clock")) { // optional
      const int64_t v = ju::get_int(j["l2_bytes_per_clock"], "/l2_bytes_per_clock");
      if (v < 0 || v > 4096)
        throw Error("", "/l2_bytes_per_clock", cat("must be in 0..4096, got ", v));
      g.l2_bytes_per_clock = v;
    }
    g.memory_bandwidth_gbps = positive_number(j, "memory_bandwidth_gbps", "", false);
    g.clock_mhz = positive_number(j, "clock_mhz", "", false);
    const nlohmann::json& peak = ju::require(j, "peak_tflops", "");
    ju::expect_object(peak, "/peak_tflops");
    ju::reject_unknown_keys(peak, "/peak_tflops", {"fp32", "tf32", "fp16", "bf16"});
    g.peak_tflops.fp32 = positive_number(peak, "fp32", "/peak_tflops", false);
    g.peak_tflops.tf32 = positive_number(peak, "tf32", "/peak_tflops", true);
    g.peak_tflops.fp16 = positive_number(peak, "fp16", "/peak_tflops", true);
    g.peak_tflops.bf16 = positive_number(peak, "bf16", "/peak_tflops", true);
    if (j.contains("source")) g.source = ju::get_string(j["source"], "/source");
    if (g.warp_size != 32) throw Error("", "/warp_size", "kiln's kernels assume 32-thread warps");
    if (g.shared_memory_per_block_optin < g.shared_memory_per_block)
      throw Error("", "/shared_memory_per_block_optin", "is smaller than shared_memory_per_block");
    return g;
  } catch (const Error& e) {
    throw e.in_file(file);
  }
}

nlohmann::ordered_json gpu_to_json(const GpuDesc& g) {
  nlohmann::ordered_json j;
  j["format"] = kGpuFormat;
  j["name"] = g.name;
  j["arch"] = g.arch;
  for (const IntField& f : int_fields) j[std::string(f.key)] = g.*f.field;
  if (g.l2_bytes_per_clock > 0) j["l2_bytes_per_clock"] = g.l2_bytes_per_clock;
  j["memory_bandwidth_gbps"] = g.memory_bandwidth_gbps;
  j["clock_mhz"] = g.clock_mhz;
  j["peak_tflops"] = {{"fp32", g.peak_tflops.fp32},
                      {"tf32", g.peak_tflops.tf32},
                      {"fp16", g.peak_tflops.fp16},
                      {"bf16", g.peak_tflops.bf16}};
  if (!g.source.empty()) j["source"] = g.source;
  return j;
}

std::vector<ShippedGpu> shipped_gpus() {
  std::vector<ShippedGpu> r;
  for (size_t i = 0; i < shipped_gpu_files_count; ++i) {
    const EmbeddedFile& f = shipped_gpu_files[i];
    std::string id = std::filesystem::path(std::string(f.path)).stem().string();
    r.push_back({id, parse_gpu(f.data, "gpus/" + std::string(f.path))});
  }
  return r;
}

GpuDesc load_gpu(const std::string& path_or_name) {
  std::error_code ec;
  if (std::filesystem::exists(path_or_name, ec)) {
    const auto bytes = io::read_file(path_or_name);
    return parse_gpu(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                     path_or_name);
  }
  std::string known;
  for (const ShippedGpu& s : shipped_gpus()) {
    if (s.id == path_or_name) return s.desc;
    known += (known.empty() ? "" : ", ") + s.id;
  }
  throw Error(path_or_name, "",
              cat("no such file, and no shipped GPU descriptor has that name (shipped: ", known,
                  "; `kiln gpu detect -o FILE` describes the live GPU)"));
}

} // namespace kiln
