// The library of test kernels (kernels/*.cpp + launch.cpp, built by meson), loaded once,
// and helpers to launch its kernels.
#pragma once

#include "runtime/emu/module.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace emu_test {

// KILN_EMU_TEST_MODULE in the environment overrides the library (e.g. one built at -O0).
inline const kiln::EmuModule& module() {
  static const kiln::EmuModule m([] {
    const char* env = std::getenv("KILN_EMU_TEST_MODULE");
    return std::string(env && *env ? env : KILN_EMU_TEST_MODULE);
  }());
  return m;
}

template <class T> kiln::EmuBuffer buf(std::vector<T>& v, const char* name = nullptr) {
  return kiln::EmuBuffer{v.data(), v.size() * sizeof(T), name};
}

inline kiln::EmuLaunchConfig config(std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
                                    unsigned checks = KILN_EMU_CHECK_ALL, unsigned workers = 1,
                                    std::size_t smem = 0) {
  kiln::EmuLaunchConfig c;
  c.grid = grid;
  c.block = block;
  c.checks = checks;
  c.workers = workers;
  c.dynamic_smem = smem;
  return c;
}

// Launches and returns the report ("" when the launch succeeded).
inline std::string try_launch(const std::string& kernel, const kiln::EmuLaunchConfig& c,
                              std::initializer_list<kiln::EmuBuffer> args) {
  try {
    module().launch(kernel, c, std::span<const kiln::EmuBuffer>(args.begin(), args.size()));
    return "";
  } catch (const kiln::Error& e) {
    return e.what();
  }
}

inline void launch(const std::string& kernel, const kiln::EmuLaunchConfig& c,
                   std::initializer_list<kiln::EmuBuffer> args) {
  const std::string report = try_launch(kernel, c, args);
  INFO(report);
  REQUIRE(report.empty());
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace emu_test
