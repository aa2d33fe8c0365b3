#include "generator/select/variant.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

namespace kiln {

void cfg_int(Variant& v, const std::string& name, int64_t value) {
  v.cfg.push_back({name, std::to_string(value)});
}

void cfg_bool(Variant& v, const std::string& name, bool value) {
  v.cfg.push_back({name, value ? "true" : "false"});
}

void cfg_type(Variant& v, const std::string& name, const std::string& type) {
  v.cfg.push_back({name, "type:" + type});
}

void cfg_float(Variant& v, const std::string& name, double value) {
  v.cfg.push_back({name, "float:" + fmt::format("{:#.9g}", value)}); // always a decimal point
}

std::string name_number(double value) {
  std::string s = fmt::format("{:g}", value);
  for (char& c : s) c = c == '.' ? 'p' : c == '-' ? 'm' : c;
  std::erase(s, '+');
  return s;
}

std::string dtype_tag(DType t) { return std::string(dtype_name(t)); }

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
