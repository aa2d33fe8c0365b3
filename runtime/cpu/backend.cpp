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

namespace {

// f(memory, tensor bytes, run bytes) for each run of a buffer (one unless a pitched view).
template <class F> void for_each_run(const Plan& p, int buffer, std::byte* arena, F f) {
  const Buffer& b = p.buffers[buffer];
  const int64_t es = int64_t(dtype_size(b.dtype)), run = b.run_elements() * es;
  std::byte* at = arena + p.byte_offset(buffer);
  for (int64_t r = 0; r < b.run_count(); ++r)
    f(at + r * b.run_stride() * es, r * run, run);
}

} // namespace

void CpuBackend::upload(int buffer, const Tensor& t) {
  const std::byte* src = t.bytes();
  for_each_run(*plan_, buffer, arena_.get(), [&](std::byte* at, int64_t from, int64_t n) {
    std::memcpy(at, src + from, size_t(n));
  });
}

Tensor CpuBackend::download(int buffer) {
  const Buffer& b = plan_->buffers[buffer];
  Tensor t(b.dtype, b.shape);
  std::byte* dst = t.bytes();
  for_each_run(*plan_, buffer, arena_.get(),
               [&](std::byte* at, int64_t to, int64_t n) { std::memcpy(dst + to, at, size_t(n)); });
  return t;
}

void CpuBackend::poison(int buffer) {
  const Buffer& b = plan_->buffers[buffer];
  for_each_run(*plan_, buffer, arena_.get(), [&](std::byte* p, int64_t, int64_t bytes) {
    const int64_t n = bytes / int64_t(dtype_size(b.dtype));
    if (b.dtype == DType::f32)
      std::fill_n(reinterpret_cast<float*>(p), n, std::numeric_limits<float>::quiet_NaN());
    else if (b.dtype == DType::f64)
      std::fill_n(reinterpret_cast<double*>(p), n, std::numeric_limits<double>::quiet_NaN());
    else
      std::memset(p, 0xff, size_t(bytes)); // half/bf16 NaN pattern; -1 for integers
  });
}

void CpuBackend::run(const Step& step) {
  run_reference_step(*plan_, step, arena_.get());
}

} // namespace kiln::cpu
