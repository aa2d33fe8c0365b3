// templates/dense/gemm.cuh and linear_dot.cuh, seen from the generator.
#include "generator/select/families/dense/linear.hpp"

#include "generator/cost/kernel_cost.hpp"
#include "generator/select/epilogue.hpp"
#include "generator/select/families/dense/dense_common.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln::dense {

namespace {

// Batch rows one linear_dot block computes (accumulators per thread).
constexpr int64_t kDotMaxRows = 8;

struct Tile {
  int64_t bm, bn, bk, tm, tn;
  double efficiency; // of the fp32 peak with full tiles: fewer shared loads per FMA, higher
  int registers;     // per thread: the most ptxas reports for sm_75 / sm_80 / sm_90
};

// 256 threads each: (bm / tm) * (bn / tn) = 256.
constexpr Tile kTiles[] = {
    {128, 64, 8, 8, 4, 0.6, 64}, // large outputs: 12 shared loads per 32 FMAs
    {64, 64, 16, 4, 4, 0.5, 56}, // the default
    {32, 32, 32, 2, 2, 0.3, 48}, // small outputs: more blocks
    {16, 64, 32, 1, 4, 0.3, 64}, // batch <= 16 forward: rows of the batch, many features
};

// One of the three products of a linear layer as out[M, NC] = sum_r A(m, r) B(r, j).
struct Product {
  std::string fn_tag; // forward, backward_data, backward_weight
  std::string a_role, b_role, out_role;
  int64_t m, nc, r;
  int64_t a_sm, a_sr, b_sr, b_sj;
};

std::optional<Product> product_of(const StepInfo& s) {
  switch (s.step.fn) {
  case Fn::linear_forward: {
    const Shape& x = s.shape("x");
    const Shape& w = s.shape("w");
    const int64_t n = x[0], f = x[1], k = w[0];
    return Product{"forward", "x", "w", "y", n, k, f, f, 1, 1, f};
  }
  case Fn::linear_backward_data: {
    const Shape& dx = s.shape("dx");
    const Shape& w = s.shape("w");
    const int64_t n = dx[0], f = dx[1], k = w[0];
    return Product{"backward_data", "dy", "w", "dx", n, f, k, k, 1, f, 1};
  }
  case Fn::linear_backward_weight: {
    const Shape& x = s.shape("x");
    const Shape& dw = s.shape("dw");
    const int64_t n = x[0], f = x[1], k = dw[0];
    return Product{"backward_weight", "dy", "x", "dw", k, f, n, 1, k, f, 1};
  }
  default: return std::nullopt;
  }
}

// The [N, F] x [K, F] signature of the layer a linear step belongs to.
std::string layer_tag(const StepInfo& s) {
  const Shape& x = s.has("x") ? s.shape("x") : s.shape("dx");
  const Shape& w = s.has("w") ? s.shape("w") : s.shape("dw");
  return fmt::format("n{}f{}k{}", x[0], x[1], w[0]);
}

} // namespace

std::vector<Variant> LinearGemmFamily::candidates(const StepInfo& s) const {
  const auto p = product_of(s);
  if (!p) return {};
  const auto t = common_dtype(s);
  if (!t) return {};
  if (!fits_int(p->m) || !fits_int(p->nc) || !fits_int(p->r)) return {};
  const bool forward = s.step.fn == Fn::linear_forward;
  const KernelEpilogue ep = forward ? epilogue_of(s) : KernelEpilogue{}; // a bias and the activation
  const bool acc = !forward && s.step.accumulate; // the forward overwrites (as the reference)
  const double esize = double(dtype_size(*t));
  const auto blocks = [&](const Tile& tile) {
    return ((p->nc + tile.bn - 1) / tile.bn) * ((p->m + tile.bm - 1) / tile.bm);
  };
  // A tile no larger than another in both dimensions that needs as few blocks does the
  // same useful work with less padding: the larger one is never worth offering.
  const auto dominated = [&](const Tile& tile) {
    for (const Tile& o : kTiles)
      if (&o != &tile && o.bm <= tile.bm && o.bn <= tile.bn && (o.bm < tile.bm || o.bn < tile.bn) &&
          blocks(o) <= blocks(tile))
        return true;
    return false;
  };
  std::vector<Variant> out;
  for (const Tile& tile : kTiles) {
    if (dominated(tile)) continue;
    const int64_t gx = (p->nc + tile.bn - 1) / tile.bn, gy = (p->m + tile.bm - 1) / tile.bm;
    Variant v;
    v.family = "linear_" + p->fn_tag + "_gemm";
    v.header = "dense/gemm.cuh";
    v.function = "kiln::dense::gemm";
    v.name = fmt::format("{}_{}_{}{}{}_b{}x{}x{}_m{}x{}_{}", v.family, dtype_tag(*t),
                         layer_tag(s), ep.tag(), acc ? "_acc" : "", tile.bm, tile.bn, tile.bk,
                         tile.tm, tile.tn, s.arch_tag());
    cfg_type(v, "T", cpp_type(*t));
    cfg_int(v, "M", p->m);
    cfg_int(v, "NC", p->nc);
    cfg_int(v, "R", p->r);
    cfg_int(v, "A_SM", p->a_sm);
    cfg_int(v, "A_SR", p->a_sr);
    cfg_int(v, "B_SR", p->b_sr);
    cfg_int(v, "B_SJ", p->b_sj);
    cfg_bool(v, "BIAS", ep.bias); // dense/gemm.cuh's spelling of HAS_BIAS
    cfg_activation(v, ep.act);
    cfg_bool(v, "ACCUMULATE", acc);
    cfg_int(v, "BM", tile.bm);
    cfg_int(v, "BN", tile.bn);
    cfg_int(v, "BK", tile.bk);
    cfg_int(v, "TM", tile.tm);
    cfg_int(v, "TN", tile.tn);
    const int64_t threads = (tile.bm / tile.tm) * (tile.bn / tile.tn);
    cfg_int(v, "THREADS", threads);
    v.args = {p->a_role, p->b_role};
    ep.add_args(v);
    v.args.push_back(p->out_role);
    v.block = {threads, 1, 1};
    v.grid = {gx, gy, 1};
    v.static_smem = 4 * tile.bk * (tile.bm + 1 + tile.bn + 1);
    v.registers_per_thread = tile.registers;
    // A is re-read by every column of blocks, B by every row of blocks (unless L2 holds it).
    const double abytes = double(p->m * p->r) * esize, bbytes = double(p->r * p->nc) * esize;
    const double obytes = double(p->m * p->nc) * esize;
    v.bytes = reread_bytes(s.gpu, abytes, double(gx)) + reread_bytes(s.gpu, bbytes, double(gy)) +
              obytes * (acc ? 2 : 1) + (ep.bias ? double(p->nc) * esize : 0);
    v.flops = 2.0 * double(p->m) * double(p->nc) * double(p->r);
    // Work on the zero-filled edges of partial tiles is wasted.
    const double used = double(p->m * p->nc) / double(gy * tile.bm * gx * tile.bn);
    v.efficiency = tile.efficiency * used;
    v.note = fmt::format("SIMT GEMM, {}x{} output tile, k step {}, {}x{} per thread, fp32 "
                         "shared-memory tiles",
                         tile.bm, tile.bn, tile.bk, tile.tm, tile.tn);
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<Variant> LinearDotFamily::candidates(const StepInfo& s) const {
  if (s.step.fn != Fn::linear_forward) return {};
  const auto t = common_dtype(s);
  if (!t) return {};
  const Shape& x = s.shape("x");
  const Shape& w = s.shape("w");
  const int64_t n = x[0], f = x[1], k = w[0];
  // Batch rows per block: each weight element loaded once serves NB rows (registers).
  const int64_t nb = std::min<int64_t>(n, kDotMaxRows);
  if (n == 0 || k == 0 || !fits_int(f) || !fits_int(n * f) || !fits_int(n * k)) return {};
  const int64_t groups = (n + nb - 1) / nb;
  if (!fits_int(k * groups)) return {};
  const KernelEpilogue ep = epilogue_of(s); // a bias and the activation
  const int64_t threads = f >= 2048 ? 256 : 128;
  const double esize = double(dtype_size(*t));
  Variant v;
  v.family = "linear_forward_dot";
  v.header = "dense/linear_dot.cuh";
  v.function = "kiln::dense::linear_dot";
  v.name = fmt::format("linear_forward_dot_{}_{}{}_nb{}_t{}_{}", dtype_tag(*t), layer_tag(s),
                       ep.tag(), nb, threads, s.arch_tag());
  cfg_type(v, "T", cpp_type(*t));
  cfg_int(v, "N", n);
  cfg_int(v, "F", f);
  cfg_int(v, "K", k);
  cfg_int(v, "NB", nb);
  cfg_bool(v, "BIAS", ep.bias); // dense/linear_dot.cuh's spelling of HAS_BIAS
  cfg_activation(v, ep.act);
  cfg_int(v, "THREADS", threads);
  v.args = {"x", "w"};
  ep.add_args(v);
  v.args.push_back("y");
  v.block = {threads, 1, 1};
  v.grid = {k * groups, 1, 1};
  v.static_smem = 4 * nb * threads / 32;
  v.registers_per_thread = 64; // the most ptxas reports (sm_75, NB accumulators)
  // w is streamed once (the row groups sharing a weight row run side by side, so it comes
  // from L2 after the first); x is re-read by every output feature unless L2 holds it.
  v.bytes = reread_bytes(s.gpu, double(n * f) * esize, double(k)) + double(k * f) * esize +
            double(n * k + (ep.bias ? k : 0)) * esize;
  v.flops = 2.0 * double(n) * double(k) * double(f);
  // Streaming rows, it nears the bandwidth (short blocks when F is small lose some); where
  // the FLOPs dominate it is far from the FMA peak: every FMA needs a load of x (L1/L2).
  const Roofline r = roofline(s.gpu, v.flops, v.bytes, Math::fp32);
  v.efficiency =
      (r.compute_us > r.memory_us ? 0.2 : 0.7) * std::min(1.0, double(f) / double(4 * threads));
  v.note = fmt::format("one block per output feature and {} batch rows, threads split the dot "
                       "products, block tree sums",
                       nb);
  return {v};
}

} // namespace kiln::dense
