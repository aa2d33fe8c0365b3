// CPU reference implementations of every op, forward and backward: the numeric oracle
// for all other backends. Straightforward loops, storage type T (float or double) with
// double accumulation inside each op, results rounded to T once. Deterministic: every
// sum runs in a fixed order. Tensors are contiguous, row-major (NCHW or [N, F]).
//
// `accumulate`: add the result to what the output holds (a gradient with several
// contributions, or weight gradients summed over tiles) instead of overwriting it.
#pragma once

#include "runtime/op.hpp"
#include "runtime/shape.hpp"
#include "runtime/step_params.hpp"

#include <cstdint>
#include <span>

namespace kiln::cpu {

template <class T> struct View {
  T* data;
  Shape shape;
};
template <class T> using CView = View<const T>;

// conv2d: x [N, C, H, W], w [O, C/groups, KH, KW], bias [O] or null, y [N, O, OH, OW].
template <class T> void conv2d(const Attrs& a, CView<T> x, CView<T> w, const T* bias, View<T> y);
template <class T>
void conv2d_backward_data(const Attrs& a, CView<T> dy, CView<T> w, View<T> dx, bool accumulate);
template <class T>
void conv2d_backward_weight(const Attrs& a, CView<T> x, CView<T> dy, View<T> dw, bool accumulate);
// Bias gradient of conv2d or linear: dy summed over every axis but 1.
template <class T> void bias_backward(CView<T> dy, T* db, bool accumulate);

// linear: x [N, F], w [K, F], bias [K] or null, y [N, K].
template <class T> void linear(CView<T> x, CView<T> w, const T* bias, View<T> y);
template <class T> void linear_backward_data(CView<T> dy, CView<T> w, View<T> dx, bool accumulate);
template <class T>
void linear_backward_weight(CView<T> x, CView<T> dy, View<T> dw, bool accumulate);

// batchnorm over axis 1 of [N, C, H, W] or [N, C]. Inference uses running statistics;
// training uses batch statistics (biased variance) and saves mean and 1/sqrt(var + eps)
// per channel for the backward.
template <class T>
void batchnorm_inference(const Attrs& a, CView<T> x, const T* gamma, const T* beta,
                         const T* running_mean, const T* running_var, View<T> y);
template <class T>
void batchnorm_train(const Attrs& a, CView<T> x, const T* gamma, const T* beta, View<T> y,
                     T* save_mean, T* save_invstd);
// Training-mode backward: dx (accumulated or not), dgamma and dbeta (accumulated or not).
template <class T>
void batchnorm_backward(CView<T> x, CView<T> dy, const T* gamma, const T* save_mean,
                        const T* save_invstd, View<T> dx, T* dgamma, T* dbeta, bool accumulate);
// Inference-mode backward (running statistics are constants): dx only.
template <class T>
void batchnorm_inference_backward(const Attrs& a, CView<T> dy, const T* gamma, const T* running_var,
                                  View<T> dx, bool accumulate);

// relu; its backward masks dy where the forward output y is not positive.
template <class T> void relu(CView<T> x, View<T> y);
template <class T> void relu_backward(CView<T> y, CView<T> dy, View<T> dx, bool accumulate);
// An activation applied elementwise, and its backward from the forward's input x.
template <class T> void activation(Activation a, CView<T> x, View<T> y);
template <class T>
void activation_backward(Activation a, CView<T> x, CView<T> dy, View<T> dx, bool accumulate);
// x0 * x1 (x1 of x0's shape or its [N, C, 1, 1], broadcast over H, W); the gradient of an
// input from the other one and dy (summed over H, W when dx is the broadcast [N, C, 1, 1]).
template <class T> void mul(CView<T> x0, CView<T> x1, View<T> y);
template <class T> void mul_backward(CView<T> other, CView<T> dy, View<T> dx, bool accumulate);
// layernorm over axis 1 of [N, C, H, W] or [N, C]: each position (n, h, w) normalised over
// its C channels (biased variance, two passes), then * weight[c] + bias[c]. The backward
// gives dx and, when mean/invstd are not null, the per-position statistics ([N, 1, ...]);
// its params part reduces dy * xhat and dy over the positions of each channel.
template <class T>
void layernorm(double eps, CView<T> x, const T* weight, const T* bias, View<T> y);
template <class T>
void layernorm_backward(double eps, CView<T> x, CView<T> dy, const T* weight, View<T> dx, T* mean,
                        T* invstd, bool accumulate);
// layernorm_invstd: each position's 1 / sqrt(var + eps) over its C channels, [N, 1, ...]
// (the statistic layernorm computes); its gradient dx = -dy * invstd^3 * (x - mean) / C.
template <class T> void layernorm_invstd(double eps, CView<T> x, View<T> y);
template <class T>
void layernorm_invstd_backward(double eps, CView<T> x, CView<T> dy, View<T> dx, bool accumulate);
// Channel moves of [N, C, *spatial]: ShuffleNet's channel shuffle (y channel k*g + i is x
// channel i*(C/g) + k; its gradient is the shuffle with C/g groups) and channels
// [begin, begin + C_y) of x; the slice's gradient writes dy there and zeros elsewhere (or,
// accumulating, adds dy there only).
template <class T>
void channel_shuffle(int64_t groups, CView<T> x, View<T> y, bool accumulate = false);
template <class T> void channel_slice(int64_t begin, CView<T> x, View<T> y);
template <class T>
void channel_slice_backward(int64_t begin, CView<T> dy, View<T> dx, bool accumulate);
template <class T>
void layernorm_backward_params(CView<T> x, CView<T> dy, const T* mean, const T* invstd, T* dweight,
                               T* dbias, bool accumulate);

// Reductions of [N, C, H, W] (or [N, C]) over any of the axes C, H, W that a.reduce_c/h/w
// name; y holds the outputs in [N, C', H', W'] order whatever its rank (keepdims or not).
// Sums in double in (c, h, w) order; max's gradient goes to the first maximum of each
// output in that order (as PyTorch), x given; sum and mean do not read x (null).
enum class Reduce { sum, mean, max };
template <class T> void reduce(Reduce r, const Attrs& a, CView<T> x, View<T> y);
template <class T>
void reduce_backward(Reduce r, const Attrs& a, const T* x, CView<T> dy, View<T> dx,
                     bool accumulate);

// Pooling ([N, C, H, W]). Max: the gradient goes to the first maximum of each window in
// row-major window order (as PyTorch). Average: PyTorch's divisor rules, including
// count_include_pad and ceil_mode windows clipped at the padded border.
template <class T> void maxpool2d(const Attrs& a, CView<T> x, View<T> y);
template <class T>
void maxpool2d_backward(const Attrs& a, CView<T> x, CView<T> dy, View<T> dx, bool accumulate);
template <class T> void avgpool2d(const Attrs& a, CView<T> x, View<T> y);
template <class T>
void avgpool2d_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate);
// Adaptive average pooling to y's spatial size (global average pooling is the 1x1 case).
template <class T> void adaptive_avgpool2d(CView<T> x, View<T> y);
template <class T> void adaptive_avgpool2d_backward(CView<T> dy, View<T> dx, bool accumulate);

// Elementwise sum of equally shaped inputs. (Its backward is a copy of dy per input.)
template <class T> void add(std::span<const CView<T>> xs, View<T> y);
// Copy or accumulate src into dst (same element count).
template <class T> void copy(CView<T> src, View<T> dst, bool accumulate);

// Channel-axis concatenation and its backward (dx_i = the channel slice of dy).
template <class T> void concat(std::span<const CView<T>> xs, View<T> y);
template <class T>
void concat_backward(CView<T> dy, int64_t channel_offset, View<T> dx, bool accumulate);

// resize over H, W, nearest or bilinear (cpu/resize_taps.hpp); backward scatters dy into the
// taps with their weights.
template <class T> void resize(const Attrs& a, CView<T> x, View<T> y);
template <class T> void resize_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate);
// pad over H, W (constant, reflect, edge); backward adds dy into each element's source.
template <class T> void pad(const Attrs& a, CView<T> x, View<T> y);
template <class T> void pad_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate);
// space_to_depth: y[n, (bh*S + bw)*C + c, i, j] = x[n, c, S*i + bh - PT, S*j + bw - PL] (zero
// outside x, and in channels past S*S*C); backward gathers each dx element from its one
// dy element (zero where it fell outside y).
template <class T> void space_to_depth(const Attrs& a, CView<T> x, View<T> y);
template <class T>
void space_to_depth_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate);

// Softmax over axis 1 (any rank >= 2); backward from the forward output y.
template <class T> void softmax(CView<T> x, View<T> y);
template <class T> void softmax_backward(CView<T> y, CView<T> dy, View<T> dx, bool accumulate);

// Mean softmax cross-entropy over axis 1 of logits [N, K, *spatial] against integer class
// targets [N, *spatial] (per-pixel classification for segmentation models), averaged over
// the N*prod(spatial) positions; writes the probabilities (for the backward) and returns
// the loss. A target outside [0, K) throws kiln::Error naming its index.
template <class T>
double softmax_cross_entropy(CView<T> logits, std::span<const int64_t> targets, View<T> probs);
// d loss / d logits = (probs - onehot(target)) / positions.
template <class T>
void softmax_cross_entropy_backward(CView<T> probs, std::span<const int64_t> targets,
                                    View<T> dlogits, bool accumulate);

// The compacted form of x [N, C, H, W] (runtime/sparse_form.hpp) with slices of `cs`
// channels; returns the number of nonzeros.
template <class T>
int64_t compact(CView<T> x, T* values, uint8_t* index, uint8_t* count, int64_t cs);
// x from its compacted form; throws kiln::Error naming the unit when the form is corrupt
// (a count past its slice, indices out of order or outside the slice).
template <class T>
void decompact(const T* values, const uint8_t* index, const uint8_t* count, int64_t cs, View<T> x);

// Mean squared error over every element of logits against a target of the same shape (a
// teacher's logits); the backward is 2 (logits - target) / elements.
template <class T> double mse(CView<T> logits, CView<T> target);
template <class T>
void mse_backward(CView<T> logits, CView<T> target, View<T> dlogits, bool accumulate);

// Optimizer updates, in place, each element computed in double and rounded once (the
// formulas: runtime/step_fn.hpp, as torch.optim.SGD and torch.optim.Adam; the
// hyperparameters: the steps' Sgd and Adam, runtime/step_params.hpp).
// Plain SGD: param -= lr * grad.
template <class T> void sgd_update(View<T> param, CView<T> grad, double lr);
// With momentum, `velocity` (param's size) is updated too; it may be null when momentum is 0.
template <class T> void sgd_update(View<T> param, CView<T> grad, T* velocity, const Sgd& h);
// t: the count of this update, from 1 (throws kiln::Error below 1).
template <class T>
void adam_update(View<T> param, CView<T> grad, T* m, T* v, int64_t t, const Adam& h);

} // namespace kiln::cpu
