#include "generator/tune/shard.hpp"

#include "runtime/error.hpp"

#include <charconv>

namespace kiln {

Shard parse_shard(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Error("", "--shard",
                 cat("\"", text, "\": ", why,
                     " (expected I/N with 0 <= I < N, "
                     "e.g. 0/4)"));
  };
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad("no '/'");
  Shard s;
  const auto number = [&](std::string_view part, int& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size())
      throw bad(cat("\"", part, "\" is not a whole number"));
  };
  number(std::string_view(text).substr(0, slash), s.index);
  number(std::string_view(text).substr(slash + 1), s.count);
  if (s.count < 1) throw bad("N must be at least 1");
  if (s.index < 0 || s.index >= s.count) throw bad("I must be in [0, N)");
  return s;
}

std::vector<size_t> shard_items(size_t n, const Shard& s) {
  std::vector<size_t> r;
  for (size_t i = 0; i < n; ++i)
    if (s.holds(i)) r.push_back(i);
  return r;
}

} // namespace kiln
