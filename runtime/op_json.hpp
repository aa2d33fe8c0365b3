// Op attributes to and from JSON, strictly: unknown, missing or ill-typed attributes are
// errors naming the JSON pointer. Used by the model loader and the plan loader.
#pragma once

#include "runtime/op.hpp"

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kiln {

// Reads the attributes of `op` from `obj`; `pointer` is obj's JSON pointer, and keys in
// `other_keys` belong to the caller (name, op, inputs, ...) and are skipped.
Attrs attrs_from_json(OpKind op, const nlohmann::json& obj, const std::string& pointer,
                      std::initializer_list<std::string_view> other_keys);

// The attributes of `op` in schema order; with `omit_defaults`, only those that differ
// from their defaults (and the required ones).
nlohmann::ordered_json attrs_to_json(OpKind op, const Attrs& a, bool omit_defaults);

// JSON pointer escaping of one reference token (RFC 6901).
std::string pointer_token(std::string_view key);

} // namespace kiln
