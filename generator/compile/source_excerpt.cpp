#include "generator/compile/source_excerpt.hpp"

#include "generator/compile/templates.hpp"

#include <fmt/format.h>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

namespace kiln {

namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> r;
  std::istringstream in{std::string(text)};
  for (std::string l; std::getline(in, l);) r.push_back(l);
  return r;
}

// The text of `file`: the kernel, or a template (matched by its path suffix).
std::string_view text_of(const std::string& file, const std::string& kernel_path, std::string_view source) {
  if (kernel_path.ends_with(file) || file.ends_with(kernel_path.substr(kernel_path.rfind('/') + 1)))
    return source;
  const TemplateHeaders& h = template_headers();
  for (size_t i = 0; i < h.names.size(); ++i)
    if (file.ends_with(h.names[i])) return h.contents[i];
  return {};
}

} // namespace

std::string source_excerpt(std::string_view log, const std::string& kernel_path, std::string_view source) {
  static const std::regex nv(R"(([^\s:()]+)\((\d+)\): (error|catastrophic error))");
  static const std::regex gnu(R"(([^\s:]+):(\d+):(\d+): error)");
  std::string out;
  std::set<std::pair<std::string, int>> shown;
  for (const std::string& l : lines_of(log)) {
    std::smatch m;
    if (!std::regex_search(l, m, nv) && !std::regex_search(l, m, gnu)) continue;
    const std::string file = m[1];
    const int line = std::stoi(m[2]);
    if (!shown.insert({file, line}).second || shown.size() > 5) continue;
    const auto text = lines_of(text_of(file, kernel_path, source));
    if (line < 1 || line > int(text.size())) continue;
    out += fmt::format("--> {}:{}\n", file, line);
    for (int k = std::max(1, line - 1); k <= std::min(int(text.size()), line + 1); ++k)
      out += fmt::format("{}{:5} | {}\n", k == line ? ">" : " ", k, text[size_t(k - 1)]);
  }
  return out;
}

} // namespace kiln
