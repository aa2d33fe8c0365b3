// The GPU a cuda plan runs on: present, with a driver, and of the plan's architecture.
#pragma once

#include <string>

namespace kiln {

struct DeviceInfo {
  std::string name;
  std::string arch; // "sm_90"
  int ordinal = 0;
};

// Throws kiln::Error saying exactly what is missing: the driver (libcuda), a device, or
// the right architecture (when `arch` is not empty).
DeviceInfo require_device(const std::string& arch, int ordinal = 0);

} // namespace kiln
