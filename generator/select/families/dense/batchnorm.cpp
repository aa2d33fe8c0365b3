// templates/dense/batchnorm_forward.cuh and batchnorm_train.cuh, seen from the generator.
#include "generator/select/families/dense/batchnorm.hpp"
#include "generator/select/epilogue.hpp"

#include "generator/select/families/dense/dense_common.hpp"
#include "generator/select/families/launch_shape.hpp"

#include <fmt/format.h>

namespace kiln::dense {

namespace {

constexpr int64_t kElementwiseThreads = 256;
// Channels whose scale and shift a block stages in shared memory (2 floats each).
constexpr int64_t kMaxStagedChannels = 2048;

} // namespace

std::vector<Variant> BatchnormForwardFamily::candidates(const StepInfo& s) const {
  // A batchnorm that compacts its output is conv/sparse_compact.cuh's (families/sparse).
  if (s.step.fn != Fn::batchnorm_forward || s.has("y_values")) return {};
  const auto t = common_dtype(s);
  const auto l = common_layout(s);
  if (!t || !l) return {};
  const Shape& x = s.shape("x");
  const Ncs g = ncs(x);
  const int64_t count = numel(x);
  if (!fits_int(g.c) || !fits_int(g.s)) return {};
  const bool last = channels_last(x, *l);
  const bool stage = g.c <= kMaxStagedChannels;
  const double eps = s.step.attrs.eps;
  // x a channel window of a concat's output (Buffer::view_pitch): read through its pitch.
  const int64_t pitch = s.arg("x").view_pitch;
  Variant v;
  v.family = "batchnorm_forward";
  v.header = "dense/batchnorm_forward.cuh";
  v.function = "kiln::dense::batchnorm_forward";
  v.name =
      fmt::format("batchnorm_forward_{}_{}_{}_eps{}{}{}{}_t{}_{}", dtype_tag(*t), layout_tag(x, *l),
                  shape_tag(x), name_number(eps), activation_tag(activation_of(s.step)),
                  stage ? "_stage" : "", pitch_tag("x", pitch), kElementwiseThreads, s.arch_tag());
  cfg_type(v, "T", cpp_type(*t));
  cfg_int(v, "N", g.n);
  cfg_int(v, "C", g.c);
  cfg_int(v, "S", g.s);
  cfg_bool(v, "CHANNELS_LAST", last);
  cfg_float(v, "EPS", eps);
  cfg_activation(v, activation_of(s.step));
  cfg_bool(v, "STAGE", stage);
  cfg_int(v, "THREADS", kElementwiseThreads);
  cfg_pitch(v, "x", pitch);
  v.args = {"x", "weight", "bias", "running_mean", "running_var", "y"};
  v.block = {kElementwiseThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, count, kElementwiseThreads), 1, 1};
  v.static_smem = stage ? (4 * g.c + 15) / 16 * 16 + 4 * g.c : 0; // two arrays, 16-byte aligned
  v.registers_per_thread = 32;
  const double esize = double(dtype_size(*t));
  v.bytes = 2.0 * double(count) * esize + 4.0 * double(g.c) * esize;
  v.flops = 2.0 * double(count);
  v.efficiency = 0.8;
  v.note =
      stage ? "grid-stride elementwise; per-channel scale and shift staged in shared memory"
            : "grid-stride elementwise; scale and shift per element (too many channels to stage)";
  v.layouts = layouts_of(s, *l);
  return {v};
}

std::vector<Variant> BatchnormTrainFamily::candidates(const StepInfo& s) const {
  const Fn fn = s.step.fn;
  // With chunk sums (partial): BatchnormChunksFamily's.
  // (A fused relu's backward, relu_y: the chunked family's alone.)
  if ((fn != Fn::batchnorm_forward_train && fn != Fn::batchnorm_backward) || s.has("partial") ||
      s.has("relu_y"))
    return {};
  // A fused activation only the chunked forward applies (rewrite/batchnorm_activation.cpp
  // fuses into that one alone).
  if (s.step.epilogue.activation != Activation::none || s.has("residual")) return {};
  const auto t = common_dtype(s);
  const auto l = common_layout(s);
  if (!t || !l) return {};
  const bool train = fn == Fn::batchnorm_forward_train;
  // Saved statistics: written by forward_train, read by backward (which otherwise
  // recomputes them from x).
  const bool stats = s.has("mean") && s.has("invstd");
  if (s.has("mean") != s.has("invstd")) return {};
  const bool acc = !train && s.step.accumulate; // forward_train overwrites (as the reference)
  const Shape& x = s.shape("x");
  const Ncs g = ncs(x);
  if (!fits_int(g.c) || !fits_int(g.n * g.s)) return {};
  const bool last = channels_last(x, *l);
  // Channels-last: a block owns COLS neighbouring channels (a warp reads 32 / COLS
  // positions of COLS channels each); channel-major: a block owns one channel.
  const int64_t cols = last ? std::min<int64_t>(32, next_pow2(g.c)) : 1;
  const int64_t blocks = (g.c + cols - 1) / cols;
  const double esize = double(dtype_size(*t));
  const double xbytes = double(numel(x)) * esize;
  const std::string family = train ? "batchnorm_forward_train" : "batchnorm_backward";
  const std::string mapping = last ? fmt::format("cols{}", cols) : "plane";
  const std::string config =
      (stats && !train ? "_saved" : fmt::format("_eps{}", name_number(s.step.attrs.eps))) +
      (stats && train ? "_stats" : "") + (acc ? "_acc" : "");
  // 1024-thread blocks only where 256 threads would each walk more than a few positions.
  const int64_t rows256 = 256 / cols;
  std::vector<Variant> out;
  for (int64_t threads : {256, 1024}) {
    if (threads > 256 && g.n * g.s <= 4 * rows256) continue;
    Variant v;
    v.family = family;
    v.header = "dense/batchnorm_train.cuh";
    v.function = "kiln::dense::" + family;
    v.name = fmt::format("{}_{}_{}_{}{}_{}_t{}_{}", family, dtype_tag(*t), layout_tag(x, *l),
                         shape_tag(x), config, mapping, threads, s.arch_tag());
    cfg_type(v, "T", cpp_type(*t));
    cfg_int(v, "N", g.n);
    cfg_int(v, "C", g.c);
    cfg_int(v, "S", g.s);
    cfg_bool(v, "CHANNELS_LAST", last);
    cfg_int(v, "COLS", cols);
    cfg_int(v, "THREADS", threads);
    cfg_bool(v, "STATS", stats);
    cfg_float(v, "EPS", s.step.attrs.eps);
    cfg_bool(v, "ACCUMULATE", acc);
    v.args = train ? std::vector<std::string>{"x", "weight", "bias", "y"}
                   : std::vector<std::string>{"x", "dy", "weight"};
    if (stats) v.args.insert(v.args.end(), {"mean", "invstd"});
    if (!train) v.args.insert(v.args.end(), {"dx", "dweight", "dbias"});
    v.block = {threads, 1, 1};
    v.grid = {blocks, 1, 1};
    const int64_t scratch = cols == 1 ? threads / 32 : threads;
    v.static_smem = 4 * scratch * (train ? 1 : 2);
    // The most ptxas reports for sm_75 / sm_80 / sm_90 (column sums unroll on sm_75).
    v.registers_per_thread = cols > 1 ? 64 : train ? 32 : 48;
    // Passes over x: the statistics (unless saved) 2, then forward_train 1 (writing y) or
    // backward 2 (with dy; writing dx, reading it too when accumulating).
    const double passes = (stats && !train ? 0 : 2) + (train ? 1 : 2);
    if (train) {
      v.bytes = reread_bytes(s.gpu, xbytes, passes) + xbytes + 5.0 * double(g.c) * esize;
      v.flops = 7.0 * double(numel(x));
    } else {
      v.bytes = reread_bytes(s.gpu, xbytes, passes) + reread_bytes(s.gpu, xbytes, 2) +
                xbytes * (acc ? 2 : 1) + 7.0 * double(g.c) * esize;
      v.flops = (stats ? 9.0 : 13.0) * double(numel(x));
    }
    // A strided channel-major walk stays coalesced along the spatial axis; channels-last
    // groups narrower than a warp read partial lines. Channels-last, one element a thread and
    // row: an H200 ran resnet50 f16 b32's (C 2048) at 0.4-0.47 of the DRAM bandwidth
    // (bench/results/h200_2026-11-28b/train_prof.csv), as batchnorm_chunks.cpp's alike.
    v.efficiency = last ? 0.44 * double(std::min<int64_t>(cols, 8)) / 8.0 : 0.7;
    v.note = last ? fmt::format("one block per {} neighbouring channels, {} positions per step; "
                                "two-pass fp32 statistics, column sums in row order",
                                cols, threads / cols)
                  : "one block per channel over N*H*W; two-pass fp32 statistics, block tree sums";
    v.layouts = layouts_of(s, *l);
    out.push_back(std::move(v));
  }
  return out;
}

} // namespace kiln::dense
