#include "generator/rewrite/fusion_decision.hpp"

#include <cmath>

namespace kiln {

nlohmann::ordered_json fusion_json(const FusionDecision& d) {
  const auto us = [](double v) { return std::round(v * 1000) / 1000; };
  return {{"node", d.node}, {"separate_us", us(d.separate_us)}, {"fused_us", us(d.fused_us)}};
}

} // namespace kiln
