// templates/dense/softmax.cuh and softmax_xent.cuh, seen from the generator.
#include "generator/select/families/dense/softmax.hpp"

#include "generator/select/families/dense/dense_common.hpp"
#include "generator/select/families/launch_shape.hpp"

#include <fmt/format.h>

namespace kiln::dense {

namespace {

constexpr int64_t kThreads = 256;
// The single block of softmax_xent.forward: as wide as the work needs, up to 1024 threads.
constexpr int64_t kXentMaxThreads = 1024;

// What the two families share: the [N, K, S] view of the class tensor and its mapping.
struct ClassGeo {
  DType t;
  Layout l;
  Shape x; // the class tensor (x, y, logits or probs)
  Ncs g;
  bool last;     // class axis contiguous: a warp per position
  int64_t lanes; // threads per position
};

std::optional<ClassGeo> class_geo(const StepInfo& s, std::string_view role) {
  const auto t = common_dtype(s);
  const auto l = common_layout(s);
  if (!t || !l) return std::nullopt;
  ClassGeo c{*t, *l, s.shape(role), ncs(s.shape(role)), false, 1};
  if (!fits_int(c.g.n) || !fits_int(c.g.c) || !fits_int(c.g.s)) return std::nullopt;
  c.last = channels_last(c.x, c.l);
  c.lanes = c.last ? 32 : 1;
  return c;
}

void common_cfg(Variant& v, const ClassGeo& c, int64_t threads) {
  cfg_type(v, "T", cpp_type(c.t));
  cfg_int(v, "N", c.g.n);
  cfg_int(v, "K", c.g.c);
  cfg_int(v, "S", c.g.s);
  cfg_bool(v, "CLASS_LAST", c.last);
  cfg_int(v, "THREADS", threads);
}

std::string mapping(const ClassGeo& c) { return c.last ? "warprow" : "threadpos"; }

} // namespace

std::vector<Variant> SoftmaxFamily::candidates(const StepInfo& s) const {
  const bool fwd = s.step.fn == Fn::softmax_forward;
  if (!fwd && s.step.fn != Fn::softmax_backward) return {};
  const auto c = class_geo(s, fwd ? "x" : "y");
  if (!c) return {};
  const bool acc = !fwd && s.step.accumulate;
  const int64_t count = numel(c->x), positions = c->g.n * c->g.s;
  Variant v;
  v.family = fwd ? "softmax_forward" : "softmax_backward";
  v.header = "dense/softmax.cuh";
  v.function = "kiln::dense::" + v.family;
  v.name =
      fmt::format("{}_{}_{}_{}{}_{}_t{}_{}", v.family, dtype_tag(c->t), layout_tag(c->x, c->l),
                  shape_tag(c->x, 'k'), acc ? "_acc" : "", mapping(*c), kThreads, s.arch_tag());
  common_cfg(v, *c, kThreads);
  if (!fwd) cfg_bool(v, "ACCUMULATE", acc);
  v.args = fwd ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"y", "dy", "dx"};
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, positions * c->lanes, kThreads), 1, 1};
  v.registers_per_thread = 32;
  const double bytes = double(count) * double(dtype_size(c->t));
  // Forward: the classes of a position are read three times (max, sum, write), from cache
  // after the first; backward reads y and dy twice.
  v.bytes = fwd ? 2 * bytes : (acc ? 4 : 3) * bytes;
  v.flops = (fwd ? 5.0 : 4.0) * double(count);
  // Warps on short rows leave lanes idle.
  v.efficiency = c->last ? 0.7 * std::min(1.0, double(c->g.c) / 32.0) : 0.7;
  v.note = c->last
               ? "a warp per position, lanes over the classes, shuffle reductions"
               : "a thread per position, looping over the classes (strided by the spatial size)";
  v.layouts = layouts_of(s, c->l);
  return {v};
}

std::vector<Variant> SoftmaxXentFamily::candidates(const StepInfo& s) const {
  const bool fwd = s.step.fn == Fn::softmax_xent_forward;
  if (!fwd && s.step.fn != Fn::softmax_xent_backward) return {};
  const auto c = class_geo(s, fwd ? "logits" : "probs");
  if (!c) return {};
  const bool acc = !fwd && s.step.accumulate;
  const int64_t count = numel(c->x), positions = c->g.n * c->g.s;
  const double esize = double(dtype_size(c->t));
  Variant v;
  v.family = fwd ? "softmax_xent_forward" : "softmax_xent_backward";
  v.header = "dense/softmax_xent.cuh";
  v.function = "kiln::dense::" + v.family;
  // forward: one block, as many threads as positions need (whole warps), up to 1024.
  const int64_t threads =
      fwd ? std::min<int64_t>(kXentMaxThreads,
                              std::max<int64_t>(128, next_pow2(positions * c->lanes)))
          : kThreads;
  v.name = fmt::format("{}_{}_{}_{}{}_{}_t{}_{}", v.family, dtype_tag(c->t), layout_tag(c->x, c->l),
                       shape_tag(c->x, 'k'), acc ? "_acc" : "", mapping(*c), threads, s.arch_tag());
  common_cfg(v, *c, threads);
  if (!fwd) cfg_bool(v, "ACCUMULATE", acc);
  v.args = fwd ? std::vector<std::string>{"logits", "target", "probs", "loss"}
               : std::vector<std::string>{"probs", "target", "dlogits"};
  v.block = {threads, 1, 1};
  v.grid = {fwd ? 1 : grid_stride_blocks(s.gpu, count, threads), 1, 1};
  v.static_smem = fwd ? 4 * threads / 32 : 0;
  v.registers_per_thread = fwd ? 32 : 24;
  v.bytes = fwd ? 2.0 * double(count) * esize + 8.0 * double(positions)
                : (acc ? 3.0 : 2.0) * double(count) * esize + 8.0 * double(positions);
  v.flops = (fwd ? 5.0 : 2.0) * double(count);
  v.efficiency = fwd ? 0.5 : 0.8;
  v.note = fwd ? "one block (the loss is one deterministic sum over every position): "
                 "probabilities per position, per-thread loss partials, block tree sum"
               : "grid-stride elementwise (probs - onehot) / positions";
  v.layouts = layouts_of(s, c->l);
  return {v};
}

} // namespace kiln::dense
