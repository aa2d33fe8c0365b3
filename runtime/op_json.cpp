#include "runtime/op_json.hpp"

#include "runtime/error.hpp"
#include "runtime/json_util.hpp"

#include <algorithm>

namespace kiln {

namespace {

using json = nlohmann::json;

using json_util::get_int;
using json_util::type_name;

Int2 get_int2(const json& v, const std::string& ptr) {
  if (v.is_array()) {
    if (v.size() != 2)
      throw Error("", ptr, cat("expected an integer or [h, w], got an array of ", v.size()));
    return {get_int(v[0], ptr + "/0"), get_int(v[1], ptr + "/1")};
  }
  if (!v.is_number_integer())
    throw Error("", ptr, cat("expected an integer or [h, w], got ", type_name(v)));
  const int64_t i = get_int(v, ptr);
  return {i, i};
}

// Where each attribute lives in the record.
int64_t* int_field(Attrs& a, std::string_view n) {
  if (n == "out_channels") return &a.out_channels;
  if (n == "out_features") return &a.out_features;
  if (n == "groups") return &a.groups;
  if (n == "factor") return &a.factor;
  if (n == "begin") return &a.begin;
  if (n == "end") return &a.end;
  return nullptr;
}
Int2* int2_field(Attrs& a, std::string_view n) {
  if (n == "kernel") return &a.kernel;
  if (n == "padding_end") return &a.padding_end;
  if (n == "stride") return &a.stride;
  if (n == "padding") return &a.padding;
  if (n == "dilation") return &a.dilation;
  if (n == "output_size") return &a.output_size;
  if (n == "size") return &a.size;
  if (n == "output_padding") return &a.output_padding;
  return nullptr;
}
bool* bool_field(Attrs& a, std::string_view n) {
  if (n == "bias") return &a.bias;
  if (n == "ceil_mode") return &a.ceil_mode;
  if (n == "count_include_pad") return &a.count_include_pad;
  if (n == "reduce_c") return &a.reduce_c;
  if (n == "reduce_h") return &a.reduce_h;
  if (n == "reduce_w") return &a.reduce_w;
  if (n == "keepdims") return &a.keepdims;
  return nullptr;
}

double* number_field(Attrs& a, std::string_view n) {
  if (n == "eps") return &a.eps;
  if (n == "min") return &a.min;
  if (n == "max") return &a.max;
  if (n == "alpha") return &a.alpha;
  if (n == "beta") return &a.beta;
  if (n == "value") return &a.value;
  return nullptr;
}

Num2* number2_field(Attrs& a, std::string_view n) {
  if (n == "scale") return &a.scale;
  return nullptr;
}

int64_t* choice_field(Attrs& a, std::string_view n) {
  if (n == "mode") return &a.mode; // resize, pad
  if (n == "coordinate_transformation_mode") return &a.coordinate_mode;
  if (n == "nearest_mode") return &a.nearest_mode;
  return nullptr;
}

Num2 get_number2(const json& v, const std::string& ptr) {
  const auto one = [&](const json& e, const std::string& p) {
    if (!e.is_number()) throw Error("", p, cat("expected a number or [h, w], got ", type_name(e)));
    return e.get<double>();
  };
  if (!v.is_array()) return {one(v, ptr), one(v, ptr)};
  if (v.size() != 2)
    throw Error("", ptr, cat("expected a number or [h, w], got an array of ", v.size()));
  return {one(v[0], ptr + "/0"), one(v[1], ptr + "/1")};
}

int64_t get_choice(const AttrSpec& s, const json& v, const std::string& ptr) {
  std::string known;
  for (size_t i = 0; i < s.choices.size(); ++i) {
    if (v.is_string() && v.get<std::string>() == s.choices[i]) return int64_t(i);
    known += (known.empty() ? "" : ", ") + std::string(s.choices[i]);
  }
  throw Error("", ptr,
              cat("expected one of ", known, ", got ",
                  v.is_string() ? "\"" + v.get<std::string>() + "\"" : type_name(v)));
}

bool is_pool(OpKind op) { return op == OpKind::maxpool2d || op == OpKind::avgpool2d; }

} // namespace

std::string pointer_token(std::string_view key) {
  std::string r;
  for (char c : key) {
    if (c == '~') r += "~0";
    else if (c == '/') r += "~1";
    else r += c;
  }
  return r;
}

Attrs attrs_from_json(OpKind op, const json& obj, const std::string& pointer,
                      std::initializer_list<std::string_view> other_keys) {
  Attrs a;
  const auto specs = op_attr_specs(op);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(other_keys.begin(), other_keys.end(), key) != other_keys.end()) continue;
    const std::string ptr = pointer + "/" + pointer_token(key);
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const AttrSpec& s) { return s.name == key; });
    if (spec == specs.end()) {
      std::string known;
      for (const AttrSpec& s : specs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      throw Error("", ptr,
                  cat("unknown attribute \"", key, "\" for ", op_name(op),
                      known.empty() ? std::string(" (it takes none)") : " (known: " + known + ")"));
    }
    const json& v = it.value();
    switch (spec->type) {
    case AttrType::integer: *int_field(a, key) = get_int(v, ptr); break;
    case AttrType::int2: *int2_field(a, key) = get_int2(v, ptr); break;
    case AttrType::boolean:
      if (!v.is_boolean()) throw Error("", ptr, cat("expected true or false, got ", type_name(v)));
      *bool_field(a, key) = v.get<bool>();
      break;
    case AttrType::number:
      if (!v.is_number()) throw Error("", ptr, cat("expected a number, got ", type_name(v)));
      *number_field(a, key) = v.get<double>();
      break;
    case AttrType::number2: *number2_field(a, key) = get_number2(v, ptr); break;
    case AttrType::choice: *choice_field(a, key) = get_choice(*spec, v, ptr); break;
    }
  }
  for (const AttrSpec& s : specs)
    if (s.required && !obj.contains(std::string(s.name)))
      throw Error("", pointer, cat(op_name(op), " needs attribute \"", s.name, "\""));
  if (is_pool(op) && !obj.contains("stride")) a.stride = a.kernel; // stride defaults to kernel
  return a;
}

nlohmann::ordered_json attrs_to_json(OpKind op, const Attrs& a_in, bool omit_defaults) {
  Attrs a = a_in;
  Attrs d;
  if (is_pool(op)) d.stride = a.kernel;
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  auto int2_json = [](const Int2& v) {
    return v[0] == v[1] ? nlohmann::ordered_json(v[0]) : nlohmann::ordered_json{v[0], v[1]};
  };
  for (const AttrSpec& s : op_attr_specs(op)) {
    const bool keep = !omit_defaults || s.required;
    switch (s.type) {
    case AttrType::integer:
      if (keep || *int_field(a, s.name) != *int_field(d, s.name))
        j[std::string(s.name)] = *int_field(a, s.name);
      break;
    case AttrType::int2:
      if (keep || *int2_field(a, s.name) != *int2_field(d, s.name))
        j[std::string(s.name)] = int2_json(*int2_field(a, s.name));
      break;
    case AttrType::boolean:
      if (keep || *bool_field(a, s.name) != *bool_field(d, s.name))
        j[std::string(s.name)] = *bool_field(a, s.name);
      break;
    case AttrType::number:
      if (keep || *number_field(a, s.name) != *number_field(d, s.name))
        j[std::string(s.name)] = *number_field(a, s.name);
      break;
    case AttrType::number2: {
      const Num2& v = *number2_field(a, s.name);
      if (keep || v != *number2_field(d, s.name))
        j[std::string(s.name)] =
            v[0] == v[1] ? nlohmann::ordered_json(v[0]) : nlohmann::ordered_json{v[0], v[1]};
      break;
    }
    case AttrType::choice: {
      const int64_t v = *choice_field(a, s.name);
      if ((keep || v != *choice_field(d, s.name)) && v >= 0 && v < int64_t(s.choices.size()))
        j[std::string(s.name)] = std::string(s.choices[size_t(v)]);
      break;
    }
    }
  }
  return j;
}

} // namespace kiln
