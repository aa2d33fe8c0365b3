// templates/pool/pool2d.cuh and pool2d_backward.cuh, seen from the generator: maxpool2d
// and avgpool2d, forward and backward.
#include "generator/select/families/spatial/spatial_common.hpp"
#include "generator/select/families/spatial/spatial_families.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

namespace {

using namespace spatial;

// A pooling step's geometry: x (or dx) [N, C, H, W] and y (or dy) [N, C, OH, OW].
struct PoolGeo {
  int64_t N, C, H, W, OH, OW, KH, KW, SH, SW, PH, PW, PH_END, PW_END;
};

PoolGeo pool_geo(const Shape& x, const Shape& y, const Attrs& a) {
  return {x[0],        x[1],        x[2],         x[3],         y[2],           y[3],
          a.kernel[0], a.kernel[1], a.stride[0],  a.stride[1],  a.padding[0],   a.padding[1],
          padding_end(a)[0], padding_end(a)[1]};
}

// Every window holds an input element (PyTorch's rules guarantee it; the templates rely
// on it).
bool windows_nonempty(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t pe) {
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p, end = std::min(start + k, in + pe);
    if (std::max<int64_t>(start, 0) >= std::min(end, in)) return false;
  }
  return true;
}

bool servable(const PoolGeo& g, const Shape& x, const Shape& y) {
  return indexable(x) && indexable(y) && g.KH <= g.H + g.PH + g.PH_END && g.KW <= g.W + g.PW + g.PW_END &&
         windows_nonempty(g.H, g.OH, g.KH, g.SH, g.PH, g.PH_END) &&
         windows_nonempty(g.W, g.OW, g.KW, g.SW, g.PW, g.PW_END);
}

// The cfg constants after T (and MAX): sizes, window and layout.
void cfg_geometry(Variant& v, const PoolGeo& g, Layout layout) {
  const std::pair<const char*, int64_t> constants[] = {
      {"N", g.N},   {"C", g.C},   {"H", g.H},   {"W", g.W},   {"OH", g.OH}, {"OW", g.OW},
      {"KH", g.KH}, {"KW", g.KW}, {"SH", g.SH}, {"SW", g.SW}, {"PH", g.PH}, {"PW", g.PW},
      {"PH_END", g.PH_END}, {"PW_END", g.PW_END},
  };
  for (const auto& [name, value] : constants)
    cfg_int(v, name, value);
  cfg_bool(v, "NHWC", layout == Layout::nhwc);
}

// "maxpool2d_bwd_f16_nhwc_n2c3h7w9_k3x3s2x2p1x1_ceil": what every variant name starts with.
std::string name_stem(const std::string& fn, DType t, Layout l, const Shape& x, const Attrs& a,
                      bool avg) {
  std::string s =
      fmt::format("{}_{}_{}_{}_{}", fn, dtype_tag(t), layout_tag(l), shape_tag(x), window_tag(a));
  if (a.ceil_mode) s += "_ceil";
  if (avg) s += a.count_include_pad ? "_incpad" : "_excpad";
  return s;
}

// Windows containing one input element at most, along one axis.
int64_t cover(int64_t k, int64_t s) { return (k + s - 1) / s; }

// NHWC: the most channels one thread can load at once (16 bytes), dividing C; else 1.
int64_t widest_vec(const PoolGeo& g, const StepTypes& st) {
  if (st.layout != Layout::nhwc) return 1;
  for (int64_t v = 16 / int64_t(dtype_size(st.dtype)); v > 1; v /= 2)
    if (g.C % v == 0) return v;
  return 1;
}

// vec: channels per thread (1: one element; NHWC only above).
Variant pool_forward(const StepInfo& s, const StepTypes& st, const PoolGeo& g, bool max,
                     int64_t vec) {
  const Attrs& a = s.step.attrs;
  const std::string op = max ? "maxpool2d" : "avgpool2d";
  // y a channel window of a concat's output (Buffer::view_pitch): written through its pitch.
  const int64_t pitch = s.arg("y").view_pitch;
  Variant v =
      make_variant(s, op, "pool/pool2d.cuh", "kiln::pool::pool2d_forward",
                   name_stem(op + "_fwd", st.dtype, st.layout, s.shape("x"), a, !max) +
                       fmt::format("_direct{}{}_t{}", vec > 1 ? fmt::format("_v{}", vec) : "",
                                   pitch_tag("y", pitch), kThreads));
  cfg_type(v, "T", cpp_type(st.dtype));
  cfg_bool(v, "MAX", max);
  cfg_geometry(v, g, st.layout);
  if (!max) cfg_bool(v, "COUNT_PAD", a.count_include_pad);
  cfg_int(v, "VEC", vec);
  cfg_int(v, "THREADS", kThreads);
  cfg_pitch(v, "y", pitch);
  v.args = {"x", "y"};
  const int64_t out = g.N * g.C * g.OH * g.OW, in = g.N * g.C * g.H * g.W;
  grid_stride(v, s, out / vec);
  v.registers_per_thread = registers(s, 32, 64);
  v.bytes = double((in + out) * int64_t(dtype_size(st.dtype)));
  v.flops = double(out * g.KH * g.KW);
  // NCHW threads read along W with the stride's gaps; NHWC threads read whole channel runs,
  // 16 bytes a thread when vectorised. One 2-byte element a thread moves a warp's 64 bytes per
  // load: the H200 ran resnet50's f16 maxpool that way at 545 GB/s (0.11 of its DRAM rate
  // over the bytes priced here), so it is priced at half the vector form's 0.8; 4-byte
  // elements, 128 bytes a warp's load but 4 to 8 times the vector form's instructions, 0.7.
  // Stated, until kiln tune measures them.
  const double scalar = dtype_size(st.dtype) < 4 ? 0.4 : 0.7;
  v.efficiency = st.layout != Layout::nhwc ? 0.8 / double(std::min<int64_t>(g.SW, 2))
                 : vec > 1                 ? 0.8
                                           : scalar;
  v.note = vec > 1 ? fmt::format("{} channels per thread (one {}-byte load per window element), "
                                 "window read from global memory (L1 reuse)",
                                 vec, vec * int64_t(dtype_size(st.dtype)))
                   : "one output per thread in memory order, window read from global memory "
                     "(L1 reuse)";
  require_layout(v, s, st.layout);
  return v;
}

Variant avgpool_backward(const StepInfo& s, const StepTypes& st, const PoolGeo& g) {
  const Attrs& a = s.step.attrs;
  Variant v =
      make_variant(s, "avgpool2d", "pool/pool2d_backward.cuh", "kiln::pool::avgpool2d_backward",
                   name_stem("avgpool2d_bwd", st.dtype, st.layout, s.shape("dx"), a, true) +
                       fmt::format("_gather{}_t{}", s.step.accumulate ? "_acc" : "", kThreads));
  cfg_type(v, "T", cpp_type(st.dtype));
  cfg_geometry(v, g, st.layout);
  cfg_bool(v, "COUNT_PAD", a.count_include_pad);
  cfg_bool(v, "ACCUMULATE", s.step.accumulate);
  cfg_int(v, "THREADS", kThreads);
  v.args = {"dy", "dx"};
  const int64_t out = g.N * g.C * g.OH * g.OW, in = g.N * g.C * g.H * g.W;
  grid_stride(v, s, in);
  v.registers_per_thread = registers(s, 40, 40);
  v.bytes = double((out + in * (s.step.accumulate ? 2 : 1)) * int64_t(dtype_size(st.dtype)));
  v.flops = double(in * cover(g.KH, g.SH) * cover(g.KW, g.SW) * 2);
  v.efficiency = 0.75;
  v.note = "gather: one dx element per thread sums dy / divisor over the windows containing it";
  require_layout(v, s, st.layout);
  return v;
}

Variant maxpool_backward_direct(const StepInfo& s, const StepTypes& st, const PoolGeo& g) {
  const Attrs& a = s.step.attrs;
  Variant v = make_variant(
      s, "maxpool2d", "pool/pool2d_backward.cuh", "kiln::pool::maxpool2d_backward_direct",
      name_stem("maxpool2d_bwd", st.dtype, st.layout, s.shape("dx"), a, false) +
          fmt::format("_direct{}_t{}", s.step.accumulate ? "_acc" : "", kThreads));
  cfg_type(v, "T", cpp_type(st.dtype));
  cfg_geometry(v, g, st.layout);
  cfg_bool(v, "ACCUMULATE", s.step.accumulate);
  cfg_int(v, "THREADS", kThreads);
  v.args = {"x", "dy", "dx"};
  const int64_t out = g.N * g.C * g.OH * g.OW, in = g.N * g.C * g.H * g.W;
  grid_stride(v, s, in);
  v.registers_per_thread = registers(s, 40, 64);
  v.bytes = double((out + in * (s.step.accumulate ? 3 : 2)) * int64_t(dtype_size(st.dtype)));
  // Every window containing an element is searched again for its maximum (from cache).
  const double reads = double(cover(g.KH, g.SH) * cover(g.KW, g.SW) * g.KH * g.KW);
  v.flops = double(in) * reads;
  v.efficiency = 0.8 * std::min(1.0, 8.0 / reads);
  v.note = "gather: one dx element per thread, the maximum of every window containing it "
           "recomputed from x";
  require_layout(v, s, st.layout);
  return v;
}

// A dx tile of TC channels x TH rows x TW columns, one element (vec > 1: vec channels) per
// thread: NCHW tiles are rows of up to 32 columns (coalesced); NHWC tiles take 32 channels
// (vec > 1: 64) or all and a squarish patch of positions, so few windows straddle tiles.
struct Tile {
  int64_t TC, TH, TW;
};

Tile choose_tile(const PoolGeo& g, Layout l, int64_t vec) {
  const int64_t hmax = pow2_ceil(g.H), wmax = pow2_ceil(g.W);
  if (l == Layout::nchw) {
    const int64_t tw = std::min<int64_t>(32, wmax);
    return {1, std::min(hmax, kThreads / tw), tw};
  }
  const int64_t tc = std::min<int64_t>(vec > 1 ? 64 : 32, pow2_ceil(g.C)),
                positions = kThreads / (tc / vec);
  int64_t th = 1, tw = 1;
  while (th * tw < positions) {
    if (tw < wmax && (tw <= th || th >= hmax))
      tw *= 2;
    else if (th < hmax)
      th *= 2;
    else
      break;
  }
  return {tc, th, tw};
}

// vec: channels per thread (NHWC, a divisor of C: widest_vec), 1 for one element.
Variant maxpool_backward_tiled(const StepInfo& s, const StepTypes& st, const PoolGeo& g,
                               int64_t vec) {
  const Attrs& a = s.step.attrs;
  const Tile t = choose_tile(g, st.layout, vec);
  const int64_t threads = t.TC / vec * t.TH * t.TW;
  Variant v = make_variant(
      s, "maxpool2d", "pool/pool2d_backward.cuh", "kiln::pool::maxpool2d_backward_tiled",
      name_stem("maxpool2d_bwd", st.dtype, st.layout, s.shape("dx"), a, false) +
          fmt::format("_tiled{}x{}x{}{}{}_t{}", t.TC, t.TH, t.TW,
                      vec > 1 ? fmt::format("_v{}", vec) : "", s.step.accumulate ? "_acc" : "",
                      threads));
  cfg_type(v, "T", cpp_type(st.dtype));
  cfg_geometry(v, g, st.layout);
  cfg_bool(v, "ACCUMULATE", s.step.accumulate);
  cfg_int(v, "TC", t.TC);
  cfg_int(v, "TH", t.TH);
  cfg_int(v, "TW", t.TW);
  if (vec > 1) cfg_int(v, "VEC", vec);
  cfg_int(v, "THREADS", threads);
  v.args = {"x", "dy", "dx"};
  const int64_t out = g.N * g.C * g.OH * g.OW, in = g.N * g.C * g.H * g.W;
  const int64_t ct = (g.C + t.TC - 1) / t.TC, ht = (g.H + t.TH - 1) / t.TH,
                wt = (g.W + t.TW - 1) / t.TW;
  v.block = {threads, 1, 1};
  v.grid = {g.N * ct * ht * wt, 1, 1};
  // The windows touching a tile, as the template bounds them.
  const int64_t mh = (t.TH + g.KH - 2) / g.SH + 1, mw = (t.TW + g.KW - 2) / g.SW + 1;
  v.static_smem =
      smem_array(mh * mw * t.TC * index_bytes(std::max(in, out))) + smem_array(mh * mw * t.TC * 4);
  v.registers_per_thread = registers(s, 32, 64);
  v.bytes = double((out + in * (s.step.accumulate ? 3 : 2)) * int64_t(dtype_size(st.dtype)));
  // Window loads per dx element, and the share of the tile's threads inside the tensor
  // (vec > 1: of its elements).
  const double reads = double(mh * mw * g.KH * g.KW) / double(t.TH * t.TW);
  const double used = double(in) / double(v.blocks() * v.threads() * vec);
  v.flops = double(in) * reads;
  // One element a load, each waited for in turn (loops of run-time trip counts): an H100 ran
  // resnet50's stem backward (6.75 loads an element) at 14x its DRAM floor
  // (bench/results/h100_2026-11-27c), 0.7 / reads. A 16-byte pack a load, the window's loads
  // in flight together: vec times that, unmeasured.
  v.efficiency = 0.7 * used * std::min(1.0, 0.7 * double(vec) / reads);
  v.note = vec > 1 ? fmt::format("gather per dx tile, {} channels a thread in 16-byte packs: each "
                                 "window's first maximum and gradient computed once into shared "
                                 "memory, then one dx pack per thread",
                                 vec)
                   : "gather per dx tile: each window's first maximum and gradient computed once "
                     "into shared memory, then one dx element per thread";
  require_layout(v, s, st.layout);
  return v;
}

std::vector<Variant> pool_candidates(const StepInfo& s, bool max) {
  const Step& st = s.step;
  const Fn fwd = max ? Fn::maxpool2d_forward : Fn::avgpool2d_forward;
  const Fn bwd = max ? Fn::maxpool2d_backward : Fn::avgpool2d_backward;
  if (st.fn != fwd && st.fn != bwd) return {};
  const bool forward = st.fn == fwd;
  if (forward && st.accumulate) return {};
  const auto types = step_types(s, forward ? "y" : "dx");
  if (!types) return {};
  const Shape& x = s.shape(forward ? "x" : "dx");
  const Shape& y = s.shape(forward ? "y" : "dy");
  const PoolGeo g = pool_geo(x, y, st.attrs);
  if (!servable(g, x, y)) return {};
  if (forward) {
    std::vector<Variant> r = {pool_forward(s, *types, g, max, 1)};
    // (A pitched y: the pitch whole packs, 16-byte aligned by channel_views.cpp.)
    if (const int64_t vec = widest_vec(g, *types); vec > 1 && s.arg("y").view_pitch % vec == 0)
      r.push_back(pool_forward(s, *types, g, max, vec));
    return r;
  }
  if (!max) return {avgpool_backward(s, *types, g)};
  std::vector<Variant> r = {maxpool_backward_direct(s, *types, g)};
  Variant tiled = maxpool_backward_tiled(s, *types, g, 1);
  if (tiled.grid[0] <= 2147483647) r.push_back(std::move(tiled));
  if (const int64_t vec = widest_vec(g, *types); vec > 1) {
    Variant packed = maxpool_backward_tiled(s, *types, g, vec);
    if (packed.grid[0] <= 2147483647) r.push_back(std::move(packed));
  }
  return r;
}

} // namespace

std::vector<Variant> MaxPool2dFamily::candidates(const StepInfo& s) const {
  return pool_candidates(s, true);
}

std::vector<Variant> AvgPool2dFamily::candidates(const StepInfo& s) const {
  return pool_candidates(s, false);
}

} // namespace kiln
