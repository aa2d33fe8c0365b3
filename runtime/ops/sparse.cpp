// sparse.compact: x -> values, index, count, [nnz (added to)]: the compacted form of x
// (runtime/sparse_form.hpp) that the sparse convolutions read.
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"

namespace kiln {

namespace {

using cpu::CView, cpu::StepArgs;

constexpr std::string_view compacted[] = {"values", "index", "count", "nnz"};

// The form itself is checked with every compacted form (plan_validate.cpp).
template <class T> void compact(const StepArgs<T>& c) {
  CView<T> x = c.in("x");
  const int64_t nnz = cpu::compact<T>(x, c.out("values").data, c.template raw<uint8_t>("index"),
                                      c.template raw<uint8_t>("count"), c.shape("values")[2]);
  if (int32_t* total = c.template raw<int32_t>("nnz")) *total += int32_t(nnz);
}

constexpr FnDef fn_defs[] = {{.fn = Fn::sparse_compact,
                              .name = "sparse.compact",
                              .signature = {roles::x, compacted, roles::nnz, roles::nnz},
                              .cpu_f32 = compact<float>,
                              .cpu_f64 = compact<double>}};

} // namespace

namespace ops {
OpFile sparse_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
