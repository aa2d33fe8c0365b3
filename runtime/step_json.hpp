// A plan step and its kiln-plan/1 JSON object (DESIGN.md 4.4): the common keys, the fused
// epilogue ("relu": true), the sparse dispatch ("guard", "threshold", "density") and the
// function's parameters, each read and written by its type ("lr", "betas", "region", ...).
#pragma once

#include "runtime/plan.hpp"

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace kiln {

nlohmann::ordered_json step_to_json(const Step& s, const Plan& p);

// `buffer` resolves a buffer name (its JSON value and pointer) to its index; `kernels` maps
// kernel names to indices.
Step step_from_json(const nlohmann::json& s, const std::string& ptr,
                    const std::function<int(const nlohmann::json&, const std::string&)>& buffer,
                    const std::map<std::string, int>& kernels);

} // namespace kiln
