#include "generator/rewrite/channel_window.hpp"

#include "runtime/error.hpp"

namespace kiln {

int64_t inner_of(const Shape& s) {
  int64_t n = 1;
  for (size_t d = 2; d < s.size(); ++d)
    n *= s[d];
  return n;
}

std::string not_contiguous(const Buffer& b, bool whole) {
  if (b.shape.size() < 2) return "has no channel axis";
  if (whole) return "";
  if (b.shape[0] != 1) return cat("a batch of ", b.shape[0], ": a channel window is strided");
  if (b.layout == Layout::nhwc && inner_of(b.shape) != 1)
    return "nhwc with H*W > 1: a channel window is strided";
  return "";
}

Window window_of(const Buffer& b, int64_t c) {
  const bool strided = !not_contiguous(b, false).empty();
  if (b.layout == Layout::nhwc)
    return {strided ? c : c * inner_of(b.shape), strided ? b.shape[1] : 0};
  return {c * inner_of(b.shape), strided ? numel(b.shape) / b.shape[0] : 0};
}

int64_t channel_of(const Buffer& b, int64_t offset) {
  return b.layout == Layout::nhwc && !not_contiguous(b, false).empty() ? offset
                                                                       : offset / inner_of(b.shape);
}

} // namespace kiln
