// Encoding kiln's tensor-map description (runtime/emu/tensor_map.h) into the driver's
// CUtensorMap for a kernel's TMA loads. The driver function is reached at run time through
// the runtime's cudaGetDriverEntryPointByVersion, so nothing links libcuda and binaries
// still load without a driver.
#pragma once

#include "runtime/emu/tensor_map.h"

#include <array>
#include <cstdint>

namespace kiln {

// The 128 bytes a kernel receives (a buffer argument, 64-byte aligned: DESIGN.md 5.6).
using EncodedTensorMap = std::array<std::uint64_t, 16>;

// Checks the description against the TMA's rules (throws kiln::Error naming the field) and
// encodes it; throws when the driver lacks cuTensorMapEncodeTiled or refuses the map.
EncodedTensorMap encode_tensor_map(const KilnTensorMap& m);

// The checks alone (no driver needed): "" when the description is valid, else why not.
const char* tensor_map_problem(const KilnTensorMap& m);

} // namespace kiln
