// fill_zero: -> dst, zeros in any dtype (gradients accumulated from overlapping tiles, the
// running nonzero counts of compactions).
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"

#include <algorithm>
#include <cstring>

namespace kiln {

namespace {

using cpu::StepArgs;

constexpr RoleType types[] = {{"dst", ArgType::any}};

template <class T> void fill(const StepArgs<T>& c) {
  const Buffer& b = c.p.buffers[c.s.need("dst")];
  if (!is_float(b.dtype)) { // an integer count: not staged, zeroed where it is
    std::memset(c.arena + c.p.byte_offset(c.s.need("dst")), 0, size_t(b.bytes()));
    return;
  }
  cpu::View<T> dst = c.out("dst");
  std::fill_n(dst.data, numel(dst.shape), T(0));
}

constexpr FnDef fn_defs[] = {{.fn = Fn::fill_zero,
                              .name = "fill_zero",
                              .signature = {{}, roles::dst, {}},
                              .types = types,
                              .cpu_f32 = fill<float>,
                              .cpu_f64 = fill<double>}};

} // namespace

namespace ops {
OpFile fill_zero_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
