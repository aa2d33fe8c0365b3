#include "generator/model/onnx/names_utf8.hpp"

#include "runtime/error.hpp"

#include <cstdint>

namespace kiln::onnx_import {

bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t c = uint8_t(s[i]);
    int len;
    uint32_t cp;
    if (c < 0x80)
      len = 1, cp = c;
    else if ((c & 0xE0) == 0xC0)
      len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      len = 4, cp = c & 0x07;
    else
      return false;
    if (i + size_t(len) > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const uint8_t d = uint8_t(s[i + size_t(k)]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += size_t(len);
  }
  return true;
}

void check_graph_names(const onnx::GraphProto& g) {
  const auto check = [](const std::string& s, const std::string& what) {
    if (!is_utf8(s)) throw Error("", "graph", cat(what, " is not valid UTF-8"));
  };
  check(g.name(), "the graph's name");
  for (const auto& v : g.input())
    check(v.name(), "an input's name");
  for (const auto& v : g.output())
    check(v.name(), "an output's name");
  for (const auto& t : g.initializer())
    check(t.name(), "an initializer's name");
  for (const auto& n : g.node()) {
    check(n.name(), "a node's name");
    check(n.op_type(), "a node's op_type");
    check(n.domain(), "a node's domain");
    for (const std::string& s : n.input())
      check(s, "a node input's name");
    for (const std::string& s : n.output())
      check(s, "a node output's name");
  }
}

} // namespace kiln::onnx_import
