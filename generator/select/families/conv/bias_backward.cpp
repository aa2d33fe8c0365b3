// templates/conv/bias_backward.cuh seen from the generator.
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"

#include <fmt/format.h>

namespace kiln {

using namespace conv_family;

std::vector<Variant> BiasBackwardFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::bias_backward || !uniform_storage(s) || s.layout("dy") != Layout::nchw)
    return {};
  const Shape& dy = s.shape("dy");
  const int64_t N = dy[0], C = dy[1], S = numel(dy) / (N * C);
  const DType t = s.dtype("dy");
  const double esize = double(dtype_size(t));
  std::vector<Variant> out;
  for (bool per_block : {true, false}) {
    const int64_t threads = per_block ? std::clamp<int64_t>(pow2_at_least(N * S), 32, 256)
                                      : std::clamp<int64_t>(pow2_at_least(C), 32, 128);
    Variant v;
    v.family = "bias_backward";
    v.header = "conv/bias_backward.cuh";
    v.function = "kiln::conv::bias_backward";
    v.name = fmt::format("bias_backward_{}_{}_n{}c{}s{}{}_{}_t{}_{}", dtype_tag(t),
                         layout_name(s.layout("dy")), N, C, S, st.accumulate ? "_acc" : "",
                         per_block ? "block" : "thread", threads, s.arch_tag());
    cfg_type(v, "T", cpp_type(t));
    cfg_int(v, "N", N);
    cfg_int(v, "C", C);
    cfg_int(v, "S", S);
    cfg_bool(v, "ACCUMULATE", st.accumulate);
    cfg_bool(v, "PER_BLOCK", per_block);
    cfg_int(v, "THREADS", threads);
    v.args = {"dy", "db"};
    v.grid = {per_block ? C : (C + threads - 1) / threads, 1, 1};
    v.block = {threads, 1, 1};
    v.static_smem = per_block ? threads * 4 : 0;
    v.registers_per_thread = 24;
    v.bytes = esize * double(N * C * S + C * (st.accumulate ? 2 : 1));
    v.flops = double(N * C * S);
    // A block per channel reads rows of S contiguous elements (coalesced when S is large);
    // a thread per channel reads with a stride of S between neighbouring threads.
    v.efficiency =
        per_block ? 0.8 * std::min(1.0, double(S) / 32) : 0.8 / double(std::min<int64_t>(S, 8));
    v.math = Math::fp32;
    v.note = per_block ? "a block per channel, tree reduction in shared memory"
                       : "a thread per channel, sums in order";
    v.layouts = {{"dy", Layout::nchw}};
    out.push_back(std::move(v));
  }
  return out;
}

} // namespace kiln
