#include "generator/lower/concat_chunks.hpp"

#include <string>

namespace kiln {

std::vector<Step> concat_chunks(const Step& full, const std::vector<int64_t>& channels) {
  const std::vector<int> xs = full.variadic('x');
  if (int(xs.size()) <= kConcatChunk) return {full};
  const int y = full.need("y");
  std::vector<Step> r;
  int64_t offset = 0;
  for (size_t first = 0; first < xs.size(); first += kConcatChunk) {
    Step s = full;
    s.args.clear();
    const size_t last = std::min(xs.size(), first + kConcatChunk);
    for (size_t k = first; k < last; ++k) s.args.push_back({"x" + std::to_string(k - first), xs[k]});
    s.args.push_back({"y", y});
    s.params = ChannelSlice{offset};
    for (size_t k = first; k < last; ++k) offset += channels[k];
    r.push_back(std::move(s));
  }
  return r;
}

} // namespace kiln
