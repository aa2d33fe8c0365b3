// What a plan step carries besides its function, node and arguments: the fused epilogue of
// the functions that have one, the sparse dispatch of the guardable ones, and each
// function's own parameters as one typed value (the alternative its FnDef names,
// runtime/ops/fn_def.hpp). plan.json keeps one key per field (runtime/step_params_json.hpp).
#pragma once

#include "runtime/activation.hpp"
#include "runtime/dtype.hpp"
#include "runtime/op.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace kiln {

// The epilogue of conv2d / linear / batchnorm .forward (and partial.sum, a split step's
// completion): after the bias and the residual, an activation.
struct Epilogue {
  Activation activation = Activation::none;
  bool operator==(const Epilogue&) const = default;
};

// Device-side dispatch between a dense and a sparse computation of one value (DESIGN.md
// 5.4): both steps are in the plan, each guarded, and each reads the running nonzero count
// `nnz` that the compaction of its input wrote. A `dense` step computes only when nnz >
// threshold, a `sparse` one only when nnz <= threshold; otherwise it leaves its outputs
// untouched. Kernels test the guard themselves on the device (no copy to the host, nothing
// for a CUDA graph to branch on); the reference backend tests it on the host.
enum class Guard { none, dense, sparse };
std::string_view guard_name(Guard g);
inline bool guard_passes(Guard g, int64_t threshold, int64_t nnz) {
  return g == Guard::none || (g == Guard::dense ? nnz > threshold : nnz <= threshold);
}

struct SparseDispatch {
  Guard guard = Guard::none; // only on guardable functions (conv steps and partial.sum)
  int64_t threshold = 0;     // the nonzero count at or below which the sparse path runs
  // The input density the step was planned for (informative; also on producers and
  // compactions, whose cost it sets); -1: none.
  double density = -1;
  bool operator==(const SparseDispatch&) const = default;
};

// conv2d.fold_bn: the folded batchnorm's epsilon.
struct FoldBn {
  double eps = 0;
  bool operator==(const FoldBn&) const = default;
};
// sgd.update, as torch.optim.SGD (runtime/step_fn.hpp).
struct Sgd {
  double lr = 0, weight_decay = 0, momentum = 0;
  bool operator==(const Sgd&) const = default;
};
// adam.update, as torch.optim.Adam (runtime/step_fn.hpp); torch's defaults.
struct Adam {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool operator==(const Adam&) const = default;
};
// region.copy: dst[n][c][dst + i * step][..] (+)= src[n][c][src + i][..] for i < size.
// With a dst step, element i lands at dst + i * step: the phases of a strided conv's data
// gradient interleaved into dx (generator/rewrite/backward_data_as_conv.cpp).
struct Region {
  Int2 src{0, 0}, dst{0, 0}, size{0, 0};
  Int2 step{1, 1};
  bool operator==(const Region&) const = default;
};
// concat.forward / concat.backward: the first channel of y (dy) the step's inputs (dx) fill.
struct ChannelSlice {
  int64_t offset = 0;
  bool operator==(const ChannelSlice&) const = default;
};
// conv2d.pool_forward: the fused max pool's attributes (a maxpool2d's).
struct FusedPool {
  Attrs pool;
  bool operator==(const FusedPool&) const = default;
};

// tensor_map.encode: a TMA tensor map (tiled mode) of the named buffer, written into the
// step's 128-byte `map` buffer (DESIGN.md 4.4): the driver's cuTensorMapEncodeTiled
// arguments, the global address being the buffer's plus `offset` bytes. The mapped buffer is
// named, not an argument: the map holds its address, never its values, so the prepare phase
// may map an activation it does not read.
struct TensorMapEncode {
  std::string buffer;           // the buffer whose memory the map describes
  int64_t offset = 0;           // bytes from the buffer's start to element (0, ..., 0)
  DType dtype = DType::f32;     // element type (the buffer's)
  std::vector<int64_t> dims;    // elements per dimension, dimension 0 fastest (rank 1..5)
  std::vector<int64_t> strides; // bytes between elements of dimensions 1.. (rank - 1 values)
  std::vector<int64_t> box;     // tiled: elements per dimension of one copy (1..256); im2col:
                                // {channels per pixel (1..256), pixels per copy (1..1024)}
  std::vector<int64_t> element_strides; // traversal strides (tiled: 1; im2col: 1..8, [0] = 1)
  int64_t swizzle = 0;                  // bytes: 0 (none), 32, 64, 128
  std::string oob_fill = "zero";        // out-of-bounds elements read as zeros (the only mode kept)
  // "tiled" (cuTensorMapEncodeTiled) or "im2col" (cuTensorMapEncodeIm2col: rank 4, C W H N,
  // with the bounding box's corners per spatial dimension, W first; runtime/emu/tensor_map.h)
  std::string mode = "tiled";
  std::vector<int64_t> lower, upper; // im2col: rank - 2 values each
  bool operator==(const TensorMapEncode&) const = default;
};

// conv2d.flip_weight: the taps of w it keeps, along each axis first + t * step for t below
// w_out's extent (default: every tap). A strided conv's data gradient takes one phase's taps
// at a time (generator/rewrite/backward_data_as_conv.cpp).
struct FlipTaps {
  Int2 first{0, 0}, step{1, 1};
  bool operator==(const FlipTaps&) const = default;
};

// One value per step; adding a parameter type is an alternative here and its JSON form
// (runtime/step_params_json.cpp).
using FnParams = std::variant<std::monostate, FoldBn, Sgd, Adam, Region, ChannelSlice, FusedPool,
                              TensorMapEncode, FlipTaps>;

// The index of alternative P in FnParams.
template <class P, size_t I = 0> constexpr size_t params_index() {
  static_assert(I < std::variant_size_v<FnParams>, "not an alternative of FnParams");
  if constexpr (std::is_same_v<std::variant_alternative_t<I, FnParams>, P>)
    return I;
  else
    return params_index<P, I + 1>();
}

// "none", "fold_bn", "sgd", "adam", "region", "channel_slice", "fused_pool", "tensor_map",
// "flip_taps".
std::string_view params_name(size_t index);
// A default value of alternative `index`.
FnParams default_params(size_t index);

} // namespace kiln
