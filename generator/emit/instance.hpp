// The source of one kernel instance: a do-not-edit banner, the template include, a
// configuration struct naming every compile-time parameter, and the entry point. User
// text (model and layer names) reaches it only as escaped comment text.
#pragma once

#include "generator/select/variant.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct InstanceOrigin {
  std::string model;              // model name
  std::string model_file;         // where it came from
  std::string gpu;                // descriptor name and arch
  std::vector<std::string> nodes; // "layer1.0.conv1 (conv2d.forward)", ...
  std::string reason;             // why this variant was chosen
};

std::string instance_source(const Variant& v, const InstanceOrigin& origin);

// The configuration's constants as the manifest lists them ("params"): numbers, booleans,
// and types and enumerators by name.
nlohmann::ordered_json instance_params(const Variant& v);

// Text safe inside a // comment: printable ASCII only, everything else (newlines, control
// characters, backslashes, non-ASCII bytes) escaped as \xNN.
std::string comment_text(std::string_view s);

} // namespace kiln
