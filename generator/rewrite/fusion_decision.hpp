// What a fusing rewrite (conv + max pool, a squeeze-excite gate into its conv) decided for
// one pair of steps, as the manifest lists it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kiln {

struct FusionDecision {
  std::string node;       // the fused step's node: "<first>+<second>"
  double separate_us = 0; // the two steps' best estimates, summed
  double fused_us = 0;    // the fused step's
};

// {node, separate_us, fused_us}, times to the nanosecond.
nlohmann::ordered_json fusion_json(const FusionDecision& d);

} // namespace kiln
