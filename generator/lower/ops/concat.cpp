// concat (channel axis): input k's gradient is dy's channel slice at k's offset. A concat of
// many inputs (DenseNet's take up to 48) runs as several steps of at most kConcatChunk
// inputs, each writing its channel slice: one kernel takes at most 16 buffers.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

constexpr int kConcatChunk = 8;

void input_grad(BackwardSite& site, int k, int dx, bool accumulate) {
  const Model& m = site.model();
  const Node& n = m.nodes[size_t(site.node())];
  Step s = site.step(Fn::concat_backward, {{"dy", site.dy()}, {"dx", dx}});
  for (int j = 0; j < k; ++j)
    s.channel_slice().offset += m.shape_of(n.inputs[size_t(j)])[1];
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

std::vector<Step> split_forward(const Step& full, const Model& m, const Node& n) {
  const std::vector<int> xs = full.variadic('x');
  if (int(xs.size()) <= kConcatChunk) return {full};
  const int y = full.need("y");
  std::vector<Step> r;
  int64_t offset = 0;
  for (size_t first = 0; first < xs.size(); first += kConcatChunk) {
    Step s = full;
    s.args.clear();
    const size_t last = std::min(xs.size(), first + kConcatChunk);
    for (size_t k = first; k < last; ++k)
      s.args.push_back({"x" + std::to_string(k - first), xs[k]});
    s.args.push_back({"y", y});
    s.params = ChannelSlice{offset};
    for (size_t k = first; k < last; ++k)
      offset += m.shape_of(n.inputs[k])[1];
    r.push_back(std::move(s));
  }
  return r;
}

} // namespace

extern const OpLowering concat_lowering{
    .op = OpKind::concat,
    .forward = Fn::concat_forward,
    .train_forward = Fn::concat_forward,
    .input_grad = input_grad,
    .split_forward = split_forward,
};

} // namespace kiln::lowering
