// templates/dense/batchnorm_chunks.cuh seen from the generator: batchnorm.partials, and the
// forward_train and backward that read its chunk sums (generator/rewrite/batchnorm_chunks.cpp
// puts them in a plan).
#include "generator/select/families/dense/batchnorm.hpp"

#include "generator/select/epilogue.hpp"
#include "generator/select/families/dense/dense_common.hpp"
#include "runtime/ops/batchnorm_chunks.hpp"

#include <fmt/format.h>

namespace kiln::dense {

std::vector<Variant> BatchnormChunksFamily::candidates(const StepInfo& s) const {
  const Fn fn = s.step.fn;
  const bool partials = fn == Fn::batchnorm_partials;
  // The backward's chunk sums stand for statistics it recomputes; the forward may save them.
  if (!partials && ((fn != Fn::batchnorm_forward_train && fn != Fn::batchnorm_backward) ||
                    !s.has("partial") || (fn == Fn::batchnorm_backward && s.has("mean"))))
    return {};
  // A residual and activation fused after the forward's normalisation
  // (rewrite/batchnorm_activation.cpp): its epilogue; no other step of this family has one.
  const KernelEpilogue ep = epilogue_of(s);
  const bool fused = ep.act != Activation::none || ep.residual;
  if (fused && fn != Fn::batchnorm_forward_train) return {};
  const auto t = common_dtype(s, "partial");
  const auto l = common_layout(s);
  if (!t || !l || s.dtype("partial") != DType::f32) return {};
  const Shape& x = s.shape("x");
  const Ncs g = ncs(x);
  if (!fits_int(g.c) || !fits_int(g.n * g.s) || !channels_last(x, *l)) return {};
  const bool backward = partials ? s.has("dy") : fn == Fn::batchnorm_backward;
  const int64_t chunks = s.shape("partial")[0];
  const bool stats = s.has("mean");
  const bool acc = fn == Fn::batchnorm_backward && s.step.accumulate;
  if (partials && s.step.accumulate) return {};
  // A relu's backward fused in (rewrite/batchnorm_relu_backward.cpp): dy masked by its output.
  const bool mask = s.has("relu_y");
  if (mask && (!backward || s.layout("relu_y") != *l || s.dtype("relu_y") != *t)) return {};
  const double esize = double(dtype_size(*t)), xbytes = double(numel(x)) * esize;
  const double nv = double(bn_partial_sums(backward));
  const double part_bytes = 4.0 * double(chunks) * nv * double(g.c);
  const std::string family = partials   ? "batchnorm_partials"
                             : backward ? "batchnorm_backward_chunked"
                                        : "batchnorm_forward_train_chunked";
  const std::string config =
      partials ? (backward ? (mask ? "_dy_relumask" : "_dy") : "")
               : fmt::format("_eps{}{}{}{}{}", name_number(s.step.attrs.eps), stats ? "_stats" : "",
                             acc ? "_acc" : "", ep.tag(), mask ? "_relumask" : "");
  // 16-byte packs of a row's channels (the template's VEC) where every tensor of the step's
  // elements is a contiguous run starting 16-byte aligned (the arena aligns buffers to 256
  // bytes; a view may start anywhere).
  const int64_t pack = 16 / int64_t(esize);
  bool packable = g.c % pack == 0;
  for (const char* role : {"x", "dy", "y", "dx", "residual", "relu_y"})
    if (s.has(role))
      packable = packable && s.arg(role).view_pitch == 0 &&
                 s.arg(role).view_offset * int64_t(esize) % 16 == 0;
  struct Form {
    int64_t vec, cols, threads;
  };
  std::vector<Form> forms;
  const int64_t cols1 = std::min<int64_t>(32, next_pow2(g.c));
  for (int64_t threads : {256, 1024})
    // Rows per chunk: 1024 threads only where each would still walk a few of them.
    if (threads == 256 || bn_chunk_rows(g.n * g.s, chunks) > 4 * (threads / cols1))
      forms.push_back({1, cols1, threads});
  // Packed: 256 threads (the column sums' scratch, 4 * THREADS * NV * VEC bytes, stays within
  // static shared memory); a warp's row segments at least 128 bytes (8 columns), fewer columns
  // a block giving more blocks for few chunks.
  if (packable)
    for (int64_t cols = std::min<int64_t>(32, next_pow2(g.c / pack)); cols >= 8; cols /= 2)
      forms.push_back({pack, cols, 256});
  std::vector<Variant> out;
  for (const auto [vec, cols, threads] : forms) {
    const int64_t groups = (g.c + cols * vec - 1) / (cols * vec);
    Variant v;
    v.family = family;
    v.header = "dense/batchnorm_chunks.cuh";
    v.function = "kiln::dense::" + family;
    v.name = fmt::format("{}_{}_{}_{}{}_r{}_cols{}{}_t{}_{}", family, dtype_tag(*t),
                         layout_tag(x, *l), shape_tag(x), config, chunks, cols,
                         vec > 1 ? fmt::format("_v{}", vec) : "", threads, s.arch_tag());
    cfg_type(v, "T", cpp_type(*t));
    cfg_int(v, "N", g.n);
    cfg_int(v, "C", g.c);
    cfg_int(v, "S", g.s);
    cfg_bool(v, "CHANNELS_LAST", true);
    cfg_int(v, "COLS", cols);
    cfg_int(v, "THREADS", threads);
    if (vec > 1) cfg_int(v, "VEC", vec);
    cfg_int(v, "CHUNKS", chunks);
    if (partials) {
      cfg_bool(v, "DY", backward);
    } else {
      cfg_float(v, "EPS", s.step.attrs.eps);
      if (backward)
        cfg_bool(v, "ACCUMULATE", acc);
      else
        cfg_bool(v, "STATS", stats);
      if (fused) ep.cfg(v); // HAS_BIAS (false), HAS_RESIDUAL, the activation
    }
    if (partials)
      v.args = backward ? std::vector<std::string>{"x", "dy", "partial"}
                        : std::vector<std::string>{"x", "partial"};
    else if (backward)
      v.args = {"x", "dy", "weight", "partial", "dx", "dweight", "dbias"};
    else
      v.args = {"x", "weight", "bias", "partial", "y"};
    if (stats) v.args.insert(v.args.end(), {"mean", "invstd"});
    if (ep.residual) v.args.push_back("residual");
    if (mask) {
      cfg_bool(v, "RELU_MASK", true);
      v.args.push_back("relu_y");
    }
    v.block = {threads, 1, 1};
    v.grid = {groups, chunks, 1};
    v.static_smem = int64_t(4 * threads * int64_t(nv) * vec);
    // ptxas for sm_90: 90-128 registers packed (resnet50 f16 b32's), 44 one element a row.
    v.registers_per_thread = vec > 1 ? 128 : 64;
    // Each thread loads kBnBatch (4) rows of every tensor it reads before it uses them.
    const int64_t reads = partials   ? (backward ? (mask ? 3 : 2) : 1)
                          : backward ? 2 + (mask ? 1 : 0) + (acc ? 1 : 0)
                                     : 1 + (ep.residual ? 1 : 0);
    if (vec > 1) v.stream_bytes_in_flight = 4.0 * double(reads) * esize * double(vec);
    // partials: x (and dy) once, the sums written; the others: every block reads all chunks'
    // sums of its channels (R times the sums, from L2), then x (and dy) once, y or dx
    // written (and read when accumulating).
    if (partials) {
      v.bytes = xbytes * (backward ? (mask ? 3 : 2) : 1) + part_bytes;
      v.flops = (backward ? 6.0 : 3.0) * double(numel(x));
    } else {
      v.bytes = reread_bytes(s.gpu, part_bytes, double(chunks)) +
                xbytes * (backward      ? (acc ? 4 : 3) + (mask ? 1 : 0)
                          : ep.residual ? 3
                                        : 2) +
                5.0 * double(g.c) * esize;
      v.flops = (backward ? 9.0 : 4.0) * double(numel(x));
    }
    // One element a thread and row, an H200 ran resnet50 f16 b32's at 0.61 (partials) and 0.34
    // (the others, whose stores kept each row's loads from overlapping the next row's) of the
    // DRAM bandwidth (bench/results/h200_2026-11-28b/train_prof.csv); every thread now loads a
    // batch of rows before it stores, unmeasured. 16-byte packs stated as elementwise's (an
    // H200 ran its packed relu backward at 0.9 there), unmeasured.
    v.efficiency =
        vec > 1 ? 0.8 : (partials ? 0.61 : 0.34) * double(std::min<int64_t>(cols, 8)) / 8.0;
    v.note = fmt::format("a block per {} neighbouring channels{} and one of {} chunks of rows; "
                         "{}",
                         cols * vec, vec > 1 ? fmt::format(" ({}-channel packs)", vec) : "", chunks,
                         partials ? "shifted fp32 sums of the chunk, column sums in row order"
                                  : "the chunks' sums added in chunk order, then the chunk "
                                    "normalised");
    v.layouts = layouts_of(s, *l);
    out.push_back(std::move(v));
  }
  return out;
}

} // namespace kiln::dense
