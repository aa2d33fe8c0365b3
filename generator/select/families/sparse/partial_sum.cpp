// templates/conv/partial_sum.cuh seen from the generator: the completion of a sparse weight
// gradient split over ranges of the input's rows.
#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/sparse/sparse_families.hpp"

#include <fmt/format.h>

namespace kiln {

using namespace conv_family;

std::vector<Variant> PartialSumFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::partial_sum || st.guard == Guard::dense) return {};
  const DType t = s.dtype("dst");
  if (s.dtype("partial") != DType::f32 || (t != DType::f32 && t != DType::f16 && t != DType::bf16))
    return {};
  const int64_t slices = s.shape("partial")[0], count = numel(s.shape("dst"));
  const bool guard = st.guard == Guard::sparse;
  constexpr int64_t threads = 256;
  Variant v;
  v.family = "partial_sum";
  v.header = "conv/partial_sum.cuh";
  v.function = "kiln::conv::partial_sum";
  v.name = fmt::format("partial_sum_{}_c{}x{}{}{}_t{}_{}", dtype_tag(t), slices, count,
                       st.accumulate ? "_acc" : "", guard_tag(st), threads, s.arch_tag());
  cfg_type(v, "T", cpp_type(t));
  cfg_int(v, "COUNT", count);
  cfg_int(v, "SLICES", slices);
  cfg_bool(v, "ACCUMULATE", st.accumulate);
  cfg_guard(v, st);
  cfg_int(v, "THREADS", threads);
  v.args = {"partial"};
  if (guard) v.args.push_back("nnz");
  v.args.push_back("dst");
  v.block = {threads, 1, 1};
  v.grid = {
      std::max<int64_t>(1, std::min<int64_t>((count + threads - 1) / threads, s.gpu.sm_count * 8)),
      1, 1};
  v.registers_per_thread = 24;
  v.bytes =
      double(count) * (4.0 * double(slices) + double(dtype_size(t)) * (st.accumulate ? 2 : 1));
  v.flops = double(count * slices);
  v.efficiency = 0.8;
  v.note = fmt::format("grid-stride sum of {} partial sums per element, in order", slices);
  return {v};
}

} // namespace kiln
