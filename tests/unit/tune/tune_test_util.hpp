// Helpers of the tune tests: measurements and databases written directly (no GPU here).
#pragma once

#include "generator/tune/database.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kiln::test {

inline Measurement measurement(const std::string& key, const std::string& variant,
                               std::optional<double> ms,
                               const std::string& family = "conv2d_direct",
                               double predicted_us = 10) {
  Measurement m;
  m.key = key;
  m.op = "conv2d.forward";
  m.shape = "x=1x8x8x8 w=8x8x3x3 y=1x8x8x8";
  m.dtype = "f32";
  m.layout = "nchw";
  m.layers = {"conv"};
  m.variant = variant;
  m.family = family;
  m.median_ms = ms;
  m.runs = ms ? 50 : 0;
  m.predicted_us = predicted_us;
  return m;
}

inline TuningDb database(const std::string& identity = "NVIDIA H100@00000000") {
  TuningDb db;
  db.gpu_name = "NVIDIA H100";
  db.gpu_arch = "sm_90";
  db.gpu_identity = identity;
  return db;
}

inline std::string temp_dir() {
  std::string d = (std::filesystem::temp_directory_path() / "kiln-tune-test-XXXXXX").string();
  if (!mkdtemp(d.data())) std::abort();
  return d;
}

inline void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

} // namespace kiln::test
