// The reference driver: stages a step's arguments, then runs its function's CPU reference
// (runtime/ops/, FnDef::cpu_f32 / cpu_f64).
#include "runtime/cpu/reference_step.hpp"

#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/half.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/sparse_form.hpp"
#include "runtime/tensor.hpp"

#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::cpu {

namespace {

// Memory index of logical (NCHW-order) element i of a buffer (a pitched view's: in its runs).
int64_t memory_index(const Buffer& b, int64_t i) {
  if (b.layout == Layout::nchw) return b.run_index(i);
  const int64_t C = b.shape[1], H = b.shape[2], W = b.shape[3];
  const int64_t w = i % W, h = (i / W) % H, c = (i / (W * H)) % C, n = i / (W * H * C);
  return b.run_index(((n * H + h) * W + w) * C + c);
}

// (`at`: the buffer's first byte, Plan::byte_offset into the arena.)
double load(const Buffer& b, const std::byte* at, int64_t i) {
  const std::byte* p = at + memory_index(b, i) * int64_t(dtype_size(b.dtype));
  uint16_t h;
  switch (b.dtype) {
  case DType::f16: std::memcpy(&h, p, 2); return half_bits_to_float(h);
  case DType::bf16: std::memcpy(&h, p, 2); return bf16_bits_to_float(h);
  case DType::f32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DType::f64: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  default: throw Error("", b.name, "the reference reads float buffers only");
  }
}

void store(const Buffer& b, std::byte* at, int64_t i, double v) {
  std::byte* p = at + memory_index(b, i) * int64_t(dtype_size(b.dtype));
  uint16_t h;
  switch (b.dtype) {
  case DType::f16:
    h = float_to_half_bits(float(v));
    std::memcpy(p, &h, 2);
    break;
  case DType::bf16:
    h = float_to_bf16_bits(float(v));
    std::memcpy(p, &h, 2);
    break;
  case DType::f32: {
    float f = float(v);
    std::memcpy(p, &f, 4);
    break;
  }
  case DType::f64: std::memcpy(p, &v, 8); break;
  default: throw Error("", b.name, "the reference writes float buffers only");
  }
}

} // namespace

void run_reference_step(const Plan& plan, const Step& step, std::byte* arena) {
  if (step.sparse.guard != Guard::none) {
    int32_t nnz;
    std::memcpy(&nnz, arena + plan.byte_offset(step.need("nnz")), 4);
    if (!guard_passes(step.sparse.guard, step.sparse.threshold, nnz))
      return; // the other path computes
  }
  // A producer that compacts its output: the step, then the compaction of y as stored.
  if (step.arg(kFormOfY.values) >= 0) {
    Step main = step, pack = step;
    std::erase_if(main.args, [](const Arg& a) { return is_form_role(a.role, kFormOfY); });
    run_reference_step(plan, main, arena);
    pack.fn = Fn::sparse_compact;
    pack.epilogue = {};
    pack.sparse = {};
    pack.params = {};
    pack.args.clear();
    for (const Arg& a : step.args)
      if (a.role == "y" || is_form_role(a.role, kFormOfY))
        pack.args.push_back(
            {a.role == "y" ? "x" : a.role.substr(2), a.buffer}); // y_values -> values
    run_reference_step(plan, pack, arena);
    return;
  }
  // Compute in double when any float argument is f64, else in float; stage what is not
  // already T in NCHW order.
  bool any_f64 = false;
  for (const Arg& a : step.args)
    any_f64 |= plan.buffers[a.buffer].dtype == DType::f64;
  auto go = [&](auto tag) {
    using T = decltype(tag);
    StepArgs<T> c{plan, step, arena, {}};
    const FnDef& def = fn_def(step.fn);
    std::vector<std::vector<T>> staged;
    std::vector<std::pair<int, T*>> write_back;
    for (const Arg& a : step.args) {
      const Buffer& b = plan.buffers[a.buffer];
      if (c.where.count(a.buffer) || !is_float(b.dtype)) continue; // integers: raw<U>
      if (b.dtype == dtype_of<T>() && b.layout == Layout::nchw && b.view_pitch == 0) {
        c.where[a.buffer] = reinterpret_cast<T*>(arena + plan.byte_offset(a.buffer));
        continue;
      }
      const int64_t n = numel(b.shape);
      std::vector<T>& v = staged.emplace_back(size_t(n));
      const bool out = fn_writes(step.fn, a.role);
      // Outputs updated in place (an optimizer's parameters and state) or written in part
      // are read too.
      if (!out || step.accumulate || def.writes_part || fn_reads(step.fn, a.role) ||
          fn_updates(step.fn, a.role))
        for (int64_t i = 0; i < n; ++i)
          v[size_t(i)] = T(load(b, arena + plan.byte_offset(a.buffer), i));
      c.where[a.buffer] = v.data();
      if (out) write_back.push_back({a.buffer, v.data()});
    }
    if constexpr (std::is_same_v<T, float>)
      def.cpu_f32(c);
    else
      def.cpu_f64(c);
    for (auto [buf, data] : write_back) {
      const Buffer& b = plan.buffers[buf];
      for (int64_t i = 0, n = numel(b.shape); i < n; ++i)
        store(b, arena + plan.byte_offset(buf), i, double(data[i]));
    }
  };
  if (any_f64)
    go(double{});
  else
    go(float{});
  // A buffer that holds tf32-rounded values (Buffer::tf32) is rounded as its writer's kernel
  // rounds it.
  for (const Arg& a : step.args) {
    const Buffer& b = plan.buffers[a.buffer];
    if (!b.tf32 || !fn_writes(step.fn, a.role)) continue;
    std::byte* at = arena + plan.byte_offset(a.buffer);
    for (int64_t i = 0, n = numel(b.shape); i < n; ++i) // f32, or a reference plan's f64
      store(b, at, i, double(round_to_tf32(float(load(b, at, i)))));
  }
}

} // namespace kiln::cpu
