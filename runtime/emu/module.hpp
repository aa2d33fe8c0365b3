// A library of emulated kernels (a shared object built from kernel sources by the host
// compiler with runtime/emu/device/launch.cpp): loaded with dlopen, its ABI version
// checked, kernels launched by name as a CUDA launch would be. What the emu backend uses.
#pragma once

#include "runtime/emu/launch_abi.h"

#include <array>
#include <cstddef>
#include <span>
#include <string>

namespace kiln {

// One kernel argument: a buffer and its size in bytes (bounds checks use it); the name
// appears in reports.
struct EmuBuffer {
  void* data = nullptr;
  std::size_t bytes = 0;
  const char* name = nullptr;
};

struct EmuLaunchConfig {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  std::array<unsigned, 3> cluster{1, 1, 1}; // blocks per thread-block cluster; {1,1,1}: none
  std::size_t dynamic_smem = 0;
  unsigned checks = KILN_EMU_CHECK_ALL; // KILN_EMU_CHECK_*
  unsigned workers = 1;                 // 0: one per hardware thread
};

class EmuModule {
public:
  // Throws kiln::Error when the library cannot be loaded or speaks another ABI version.
  explicit EmuModule(std::string path);
  ~EmuModule();
  EmuModule(EmuModule&& o) noexcept;
  EmuModule& operator=(EmuModule&& o) noexcept;
  EmuModule(const EmuModule&) = delete;
  EmuModule& operator=(const EmuModule&) = delete;

  const std::string& path() const { return path_; }
  bool has_kernel(const std::string& name) const;
  // The entry of kernel `name`; throws kiln::Error when the library has none.
  KilnEmuEntry kernel(const std::string& name) const;

  // Runs kernel `name` over the grid; throws kiln::Error with the emulator's report (an
  // out-of-bounds access, a race, a deadlock, ...) when the launch fails.
  void launch(const std::string& name, const EmuLaunchConfig& config,
              std::span<const EmuBuffer> args) const;

private:
  void close();
  std::string path_;
  void* handle_ = nullptr;
  KilnEmuLaunchFn launch_ = nullptr;
};

} // namespace kiln
