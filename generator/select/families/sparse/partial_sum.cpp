// templates/conv/partial_sum.cuh seen from the generator: the completion of a sparse weight
// gradient split over ranges of the input's rows, and of a split-K conv or linear forward
// (with its epilogue).
#include "generator/select/epilogue.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/sparse/sparse_families.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

using namespace conv_family;

std::vector<Variant> PartialSumFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::partial_sum || st.sparse.guard == Guard::dense) return {};
  const DType t = s.dtype("dst");
  if (s.dtype("partial") != DType::f32 || (t != DType::f32 && t != DType::f16 && t != DType::bf16))
    return {};
  const KernelEpilogue ep = epilogue_of(s);
  const bool bias = ep.bias, residual = ep.residual;
  for (const char* role : {"b", "residual"})
    if (s.has(role) && s.dtype(role) != t) return {};
  // Elementwise in one order: partial's slices and the residual hold dst's layout.
  const Shape& d = s.shape("dst");
  if (d.size() == 4 && (s.layout("partial") != s.layout("dst") ||
                        (residual && s.layout("residual") != s.layout("dst"))))
    return {};
  const int64_t count = numel(d), slices = numel(s.shape("partial")) / std::max<int64_t>(1, count);
  const int64_t channels = d.size() >= 2 ? d[1] : 1;
  const int64_t inner = d.size() == 4 && s.layout("dst") == Layout::nchw ? d[2] * d[3] : 1;
  const bool guard = st.sparse.guard == Guard::sparse;
  constexpr int64_t threads = 256;
  Variant v;
  v.family = "partial_sum";
  v.header = "conv/partial_sum.cuh";
  v.function = "kiln::conv::partial_sum";
  // The bias tag names its channel mapping too.
  const KernelEpilogue rest{false, residual, ep.act};
  v.name = fmt::format("partial_sum_{}_c{}x{}{}{}{}{}_t{}_{}", dtype_tag(t), slices, count,
                       bias ? fmt::format("_bias{}x{}", channels, inner) : "", rest.tag(),
                       st.accumulate ? "_acc" : "", guard_tag(st), threads, s.arch_tag());
  cfg_type(v, "T", cpp_type(t));
  cfg_int(v, "COUNT", count);
  cfg_int(v, "SLICES", slices);
  cfg_bool(v, "ACCUMULATE", st.accumulate);
  cfg_guard(v, st);
  cfg_int(v, "THREADS", threads);
  ep.cfg(v);
  cfg_int(v, "CHANNELS", bias ? channels : 1);
  cfg_int(v, "INNER", bias ? inner : 1);
  v.args = {"partial"};
  ep.add_args(v);
  if (guard) v.args.push_back("nnz");
  v.args.push_back("dst");
  v.block = {threads, 1, 1};
  v.grid = {
      std::max<int64_t>(1, std::min<int64_t>((count + threads - 1) / threads, s.gpu.sm_count * 8)),
      1, 1};
  v.registers_per_thread = 24;
  const double es = double(dtype_size(t));
  v.bytes =
      double(count) * (4.0 * double(slices) + es * (st.accumulate ? 2 : 1) + (residual ? es : 0.0));
  v.flops = double(count * slices);
  v.efficiency = 0.8;
  v.note = fmt::format("grid-stride sum of {} partial sums per element, in order{}", slices,
                       bias || residual || ep.act != Activation::none ? ", then the epilogue" : "");
  return {v};
}

} // namespace kiln
