#include "generator/select/variant.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>
#include <utility>

namespace kiln {

void cfg_int(Variant& v, const std::string& name, int64_t value) { v.cfg.push_back({name, value}); }

void cfg_bool(Variant& v, const std::string& name, bool value) { v.cfg.push_back({name, value}); }

void cfg_type(Variant& v, const std::string& name, const std::string& type) {
  v.cfg.push_back({name, CfgType{type}});
}

void cfg_float(Variant& v, const std::string& name, double value) {
  // The instance holds a float; 9 significant digits name it (and the manifest shows them).
  v.cfg.push_back({name, std::stod(fmt::format("{:.9g}", value))});
}

void cfg_enum(Variant& v, const std::string& name, const std::string& type,
              const std::string& value) {
  v.cfg.push_back({name, CfgEnum{type, value}});
}

const CfgValue* find_cfg(const Variant& v, std::string_view name) {
  for (const CfgEntry& e : v.cfg)
    if (e.name == name) return &e.value;
  return nullptr;
}

CfgValue* find_cfg(Variant& v, std::string_view name) {
  return const_cast<CfgValue*>(find_cfg(std::as_const(v), name));
}

int64_t cfg_int_of(const Variant& v, std::string_view name) {
  if (const CfgValue* c = find_cfg(v, name)) return std::get<int64_t>(*c);
  throw Error("", v.name, cat("has no constant ", name));
}

int64_t cfg_int_or(const Variant& v, std::string_view name, int64_t absent) {
  const CfgValue* c = find_cfg(v, name);
  return c ? std::get<int64_t>(*c) : absent;
}

bool cfg_bool_of(const Variant& v, std::string_view name) {
  const CfgValue* c = find_cfg(v, name);
  return c && std::get<bool>(*c);
}

Kernel kernel_of(const Variant& v) {
  Kernel k;
  k.name = k.entry = v.name;
  k.image = "kernels/" + v.name + ".cubin";
  k.grid = v.grid;
  k.block = v.block;
  k.cluster = v.cluster;
  k.dynamic_smem = v.dynamic_smem;
  k.args = v.args;
  return k;
}

std::string name_number(double value) {
  std::string s = fmt::format("{:g}", value);
  for (char& c : s)
    c = c == '.' ? 'p' : c == '-' ? 'm' : c;
  std::erase(s, '+');
  return s;
}

std::string dtype_tag(DType t) { return std::string(dtype_name(t)); }

void cfg_pitch(Variant& v, const std::string& role, int64_t pitch) {
  if (pitch <= 0) return;
  cfg_int(v, role == "x" ? "X_PITCH" : "Y_PITCH", pitch);
  v.pitched.push_back(role);
}

std::string pitch_tag(const std::string& role, int64_t pitch) {
  return pitch > 0 ? fmt::format("_{}p{}", role, pitch) : "";
}

std::string padding_end_tag(const Attrs& a) {
  const Int2 pe = padding_end(a);
  return pe == a.padding ? "" : fmt::format("_pe{}x{}", pe[0], pe[1]);
}

std::string cpp_type(DType t) {
  switch (t) {
  case DType::f32: return "float";
  case DType::f16: return "kiln::f16";
  case DType::bf16: return "kiln::bf16";
  default: throw Error("", "", cat("no kernel element type for ", dtype_name(t)));
  }
}

} // namespace kiln
