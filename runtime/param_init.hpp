// Seeded parameter initialisation (no weights file): each parameter drawn uniformly from
// its plan range with a generator seeded by the seed and the parameter's name, so values
// do not depend on order, platform or which other parameters exist.
#pragma once

#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <cstdint>

namespace kiln {

Tensor init_param(const Plan& plan, const ParamBinding& p, uint64_t seed);

// Deterministic 64-bit generator (splitmix64) and FNV-1a name hashing.
uint64_t splitmix64(uint64_t& state);
uint64_t fnv1a(std::string_view s);

} // namespace kiln
