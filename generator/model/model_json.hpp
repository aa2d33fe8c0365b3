// kiln-model/1 (DESIGN.md 4.1): loading with full validation, and canonical saving.
#pragma once

#include "generator/model/model.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kiln {

inline constexpr std::string_view kModelFormat = "kiln-model/1";

// Every invalid model throws kiln::Error naming `file`, the JSON pointer or layer, and
// what is wrong.
Model parse_model(std::string_view text, const std::string& file);
Model load_model(const std::string& path);

// Canonical form: attributes at their defaults omitted, `inputs` only where it is not the
// previous layer. parse_model(model_to_text(m)) == m.
nlohmann::ordered_json model_to_json(const Model& m);
std::string model_to_text(const Model& m);
void save_model(const Model& m, const std::string& path); // atomic

} // namespace kiln
