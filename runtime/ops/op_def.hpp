// An op of kiln-model/1 in one place: its name, attributes, arity, shape rule, parameters
// and multiply-accumulates. Each op's definition is in runtime/ops/<name>.cpp and listed in
// registry.cpp; runtime/op.hpp's functions look it up.
#pragma once

#include "runtime/op.hpp"

#include <span>
#include <string_view>
#include <vector>

namespace kiln {

struct OpDef {
  OpKind kind;
  std::string_view name;
  std::span<const AttrSpec> attrs = {}; // canonical order
  Arity arity = {1, false};
  bool view = false; // the output is the input's bytes under another shape
  // The output shape; the input count and empty dimensions are checked before. Throws
  // kiln::Error (no file or place: the caller knows the layer) when the inputs do not fit.
  Shape (*shape)(const Attrs&, std::span<const Shape>) = nullptr;
  // The parameter tensors (none when null).
  std::vector<ParamSpec> (*params)(const Attrs&, std::span<const Shape>) = nullptr;
  // Multiply-accumulates for this output (0 when null).
  int64_t (*macs)(const Attrs&, std::span<const Shape>, const Shape&) = nullptr;
  // FLOPs as FoldedCNNs counts them (thop's rules; `kiln inspect`, fold gains), 0 when null.
  int64_t (*thop_flops)(const Attrs&, std::span<const Shape>, const Shape&) = nullptr;
  // Folding (FoldedCNNs, generator/model/fold.cpp): the attribute holding the output width
  // that folding widens (conv2d's out_channels, linear's out_features), and whether the
  // op treats each row of its input alone (relu, hardswish, softmax, flatten), so that the
  // unfold of a folded model may come before it.
  int64_t Attrs::*width = nullptr;
  bool rowwise = false;
};

} // namespace kiln
