#include "runtime/json_util.hpp"

#include "runtime/error.hpp"
#include "runtime/op_json.hpp"

#include <algorithm>
#include <set>
#include <vector>

namespace kiln::json_util {

namespace {

std::string line_col(std::string_view text, size_t byte) {
  byte = std::min(byte, text.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i + 1 < byte; ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return cat("line ", line, ", column ", col);
}

} // namespace

json parse(std::string_view text, const std::string& file) {
  std::vector<std::set<std::string>> keys; // per open object
  std::string failure;
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (!failure.empty()) return false;
    if (depth > 64) failure = "nesting deeper than 64 levels";
    switch (ev) {
    case json::parse_event_t::object_start: keys.emplace_back(); break;
    case json::parse_event_t::object_end:
      if (!keys.empty()) keys.pop_back();
      break;
    case json::parse_event_t::key:
      if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
        failure = cat("duplicate key \"", parsed.get<std::string>(), "\"");
      break;
    default: break;
    }
    return failure.empty();
  };
  try {
    json j = json::parse(text.begin(), text.end(), cb);
    if (!failure.empty()) throw Error(file, "", failure);
    return j;
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line L, column C: msg"
    auto colon = what.find(": ");
    std::string msg = colon == std::string::npos ? what : what.substr(colon + 2);
    throw Error(file, line_col(text, e.byte), "malformed JSON: " + msg);
  } catch (const json::exception& e) {
    // Numbers out of range and the like: "[json.exception.out_of_range.406] number overflow ..."
    std::string what = e.what();
    auto close = what.find("] ");
    throw Error(file, "", "malformed JSON: " + (close == std::string::npos ? what : what.substr(close + 2)));
  }
}

std::string_view type_name(const json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  return "an object";
}

std::string child(const std::string& ptr, std::string_view key) {
  return ptr + "/" + pointer_token(key);
}
std::string child(const std::string& ptr, size_t index) {
  return ptr + "/" + std::to_string(index);
}

const json& require(const json& obj, std::string_view key, const std::string& ptr) {
  expect_object(obj, ptr);
  auto it = obj.find(key);
  if (it == obj.end()) throw Error("", ptr.empty() ? "/" : ptr, cat("missing \"", key, "\""));
  return *it;
}

void expect_object(const json& v, const std::string& ptr) {
  if (!v.is_object())
    throw Error("", ptr.empty() ? "/" : ptr, cat("expected an object, got ", type_name(v)));
}

void expect_array(const json& v, const std::string& ptr) {
  if (!v.is_array()) throw Error("", ptr, cat("expected an array, got ", type_name(v)));
}

std::string get_string(const json& v, const std::string& ptr) {
  if (!v.is_string()) throw Error("", ptr, cat("expected a string, got ", type_name(v)));
  return v.get<std::string>();
}

int64_t get_int(const json& v, const std::string& ptr) {
  if (!v.is_number_integer()) throw Error("", ptr, cat("expected an integer, got ", type_name(v)));
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw Error("", ptr, "integer out of range");
  return v.get<int64_t>();
}

double get_number(const json& v, const std::string& ptr) {
  if (!v.is_number()) throw Error("", ptr, cat("expected a number, got ", type_name(v)));
  return v.get<double>();
}

bool get_bool(const json& v, const std::string& ptr) {
  if (!v.is_boolean()) throw Error("", ptr, cat("expected true or false, got ", type_name(v)));
  return v.get<bool>();
}

void reject_unknown_keys(const json& obj, const std::string& ptr,
                         std::initializer_list<std::string_view> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw Error("", child(ptr, it.key()),
                  cat("unknown key \"", it.key(), "\" (known: ", list, ")"));
    }
}

} // namespace kiln::json_util
