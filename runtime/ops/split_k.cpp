#include "runtime/ops/split_k.hpp"

#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/weighted.hpp"

namespace kiln {

namespace {

void check_slices(const StepCheck& c, const Shape& y, const Shape& w) {
  const int64_t K = numel(w) / w[0], most = (K + 15) / 16;
  const Shape& p = c.shape("partial");
  if (p.size() != y.size() || p[0] % y[0] != 0 || p[0] / y[0] < 1 || p[0] / y[0] > most ||
      Shape(p.begin() + 1, p.end()) != Shape(y.begin() + 1, y.end())) {
    std::string want = cat("[S * ", y[0]);
    for (size_t i = 1; i < y.size(); ++i)
      want += cat(", ", y[i]);
    c.fail(cat("\"partial\" ", shape_str(p), " is not ", want,
               "] with 1 <= S <= ceil(K / 16) = ", most));
  }
}

} // namespace

void check_split_in_kernel(const StepCheck& c, bool conv) {
  const Shape y = c.forward(c.shape("x"));
  const Shape w = c.param(c.shape("x"), "weight").shape;
  c.expect("w", w);
  c.expect("y", y);
  if (c.has("b")) c.expect("b", {y[1]});
  if (c.has("residual")) c.same("residual", "y");
  if (conv && c.s.attrs.groups != 1) c.fail("split-K convolutions have one group");
  check_slices(c, y, w);
  check_gate(c);
  if (c.shape("tickets").size() != 1 || c.shape("tickets")[0] < 1)
    c.fail(cat("\"tickets\" ", shape_str(c.shape("tickets")), " is not [tiles]"));
  c.not_accumulated();
}

void check_split_k(const StepCheck& c, bool conv) {
  const Shape y = c.forward(c.shape("x"));
  const Shape w = c.param(c.shape("x"), "weight").shape;
  c.expect("w", w);
  if (conv && c.s.attrs.groups != 1) c.fail("split-K convolutions have one group");
  check_slices(c, y, w);
  check_gate(c);
  c.not_accumulated();
}

template <class T> void split_k_reference(const cpu::StepArgs<T>& c, bool conv) {
  using cpu::CView, cpu::View;
  CView<T> w = c.in("w");
  View<T> part = c.out("partial");
  const int64_t O = w.shape[0], per = numel(w.shape) / O;
  const int64_t C = w.shape[1], KK = conv ? w.shape[2] * w.shape[3] : 1;
  std::vector<T> gated;
  const CView<T> x = cpu::gated_x(c, gated);
  const int64_t N = x.shape[0], S = part.shape[0] / N;
  Shape ys = part.shape;
  ys[0] = N;
  std::vector<T> wr(size_t(numel(w.shape)));
  for (int64_t r = 0; r < S; ++r) {
    const int64_t kb = split_k_begin(per, S, r), ke = split_k_begin(per, S, r + 1);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t j = 0; j < per; ++j) { // j = c * KK + tap in OIHW order
        const int64_t k = conv ? (j % KK) * C + j / KK : j;
        wr[size_t(o * per + j)] = k >= kb && k < ke ? w.data[o * per + j] : T(0);
      }
    View<T> slice{part.data + r * numel(ys), ys};
    if (conv)
      cpu::conv2d<T>(c.s.attrs, x, CView<T>{wr.data(), w.shape}, nullptr, slice);
    else
      cpu::linear<T>(x, CView<T>{wr.data(), w.shape}, nullptr, slice);
  }
}

template void split_k_reference<float>(const cpu::StepArgs<float>&, bool);
template void split_k_reference<double>(const cpu::StepArgs<double>&, bool);

} // namespace kiln
