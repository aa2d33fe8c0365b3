// The compacted form of sparse activations (runtime/sparse_form.hpp) on the CPU: the
// compaction every compacting kernel is checked against, and the decompaction through which
// the sparse convolutions' references read their input (so a corrupt form fails loudly).
#include "runtime/cpu/detail.hpp"
#include "runtime/sparse_form.hpp"

namespace kiln::cpu {

using detail::need;

template <class T>
int64_t compact(CView<T> x, T* values, uint8_t* index, uint8_t* count, int64_t cs) {
  detail::need_rank(x.shape, 4, "sparse.compact", "input");
  const SparseForm f = SparseForm::of(x.shape, cs);
  const int64_t C = x.shape[1], HW = x.shape[2] * x.shape[3];
  int64_t nnz = 0;
  for (int64_t p = 0; p < f.pixels; ++p) {
    const int64_t n = p / HW, hw = p % HW;
    for (int64_t s = 0; s < f.slices; ++s) {
      const int64_t unit = p * f.slices + s;
      int64_t k = 0;
      for (int64_t c = s * cs; c < std::min(C, (s + 1) * cs); ++c) {
        const T v = x.data[(n * C + c) * HW + hw];
        if (v == T(0)) continue; // NaN is nonzero: it reaches the convolution as it would dense
        values[unit * cs + k] = v;
        index[unit * cs + k] = uint8_t(c - s * cs);
        ++k;
      }
      count[unit] = uint8_t(k);
      nnz += k;
    }
  }
  return nnz;
}

template <class T>
void decompact(const T* values, const uint8_t* index, const uint8_t* count, int64_t cs, View<T> x) {
  detail::need_rank(x.shape, 4, "sparse form", "tensor");
  const SparseForm f = SparseForm::of(x.shape, cs);
  const int64_t C = x.shape[1], HW = x.shape[2] * x.shape[3];
  std::fill_n(x.data, numel(x.shape), T(0));
  for (int64_t p = 0; p < f.pixels; ++p) {
    const int64_t n = p / HW, hw = p % HW;
    for (int64_t s = 0; s < f.slices; ++s) {
      const int64_t unit = p * f.slices + s;
      const int64_t width = std::min(C, (s + 1) * cs) - s * cs;
      need(count[unit] <= width, "sparse form", "pixel ", p, " slice ", s, " counts ",
           int(count[unit]), " nonzeros in a slice of ", width, " channels");
      int last = -1;
      for (int64_t k = 0; k < count[unit]; ++k) {
        const int i = index[unit * cs + k];
        need(i > last && i < width, "sparse form", "pixel ", p, " slice ", s, " slot ", k,
             ": channel ", i, " is out of order or outside the slice");
        last = i;
        x.data[(n * C + s * cs + i) * HW + hw] = values[unit * cs + k];
      }
    }
  }
}

template int64_t compact<float>(CView<float>, float*, uint8_t*, uint8_t*, int64_t);
template int64_t compact<double>(CView<double>, double*, uint8_t*, uint8_t*, int64_t);
template void decompact<float>(const float*, const uint8_t*, const uint8_t*, int64_t, View<float>);
template void decompact<double>(const double*, const uint8_t*, const uint8_t*, int64_t,
                                View<double>);

} // namespace kiln::cpu
