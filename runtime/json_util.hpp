// Strict reading of untrusted JSON: parse errors with line and column, duplicate keys and
// absurd nesting rejected, and typed getters whose errors name the JSON pointer.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kiln::json_util {

using json = nlohmann::json;

// Parses `text`; throws kiln::Error(file, "line L, column C", ...) on malformed JSON,
// duplicate object keys or nesting deeper than 64.
json parse(std::string_view text, const std::string& file);

std::string_view type_name(const json& v);
std::string child(const std::string& ptr, std::string_view key); // ptr + "/" + escaped key
std::string child(const std::string& ptr, size_t index);

const json& require(const json& obj, std::string_view key, const std::string& ptr);
void expect_object(const json& v, const std::string& ptr);
void expect_array(const json& v, const std::string& ptr);
std::string get_string(const json& v, const std::string& ptr);
int64_t get_int(const json& v, const std::string& ptr);
double get_number(const json& v, const std::string& ptr);
bool get_bool(const json& v, const std::string& ptr);
// An error for the first key of `obj` not in `known`.
void reject_unknown_keys(const json& obj, const std::string& ptr,
                         std::initializer_list<std::string_view> known);

} // namespace kiln::json_util
