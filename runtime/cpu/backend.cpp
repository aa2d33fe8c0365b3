#include "runtime/cpu/backend.hpp"

#include "runtime/cpu/reference_step.hpp"
#include "runtime/error.hpp"

#include <cstring>
#include <limits>
#include <new>

namespace kiln::cpu {

void CpuBackend::Free::operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(64)); }

void CpuBackend::prepare(const Plan& plan) {
  plan_ = &plan;
  try {
    arena_.reset(static_cast<std::byte*>(
        ::operator new[](size_t(std::max<int64_t>(plan.arena_bytes, 64)), std::align_val_t(64))));
  } catch (const std::bad_alloc&) {
    throw Error("", "cpu backend", cat("cannot allocate the arena of ", plan.arena_bytes, " bytes"));
  }
}

void CpuBackend::upload(int buffer, const Tensor& t) {
  std::memcpy(arena_.get() + plan_->byte_offset(buffer), t.bytes(), t.nbytes());
}

Tensor CpuBackend::download(int buffer) {
  const Buffer& b = plan_->buffers[buffer];
  Tensor t(b.dtype, b.shape);
  std::memcpy(t.bytes(), arena_.get() + plan_->byte_offset(buffer), t.nbytes());
  return t;
}

void CpuBackend::poison(int buffer) {
  const Buffer& b = plan_->buffers[buffer];
  std::byte* p = arena_.get() + plan_->byte_offset(buffer);
  const int64_t n = numel(b.shape);
  if (b.dtype == DType::f32) std::fill_n(reinterpret_cast<float*>(p), n, std::numeric_limits<float>::quiet_NaN());
  else if (b.dtype == DType::f64) std::fill_n(reinterpret_cast<double*>(p), n, std::numeric_limits<double>::quiet_NaN());
  else std::memset(p, 0xff, size_t(b.bytes())); // half/bf16 NaN pattern; -1 for integers
}

void CpuBackend::run(const Step& step) {
  run_reference_step(*plan_, step, arena_.get());
}

} // namespace kiln::cpu
