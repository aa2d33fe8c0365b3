#include "generator/lower/tiled_segment.hpp"

#include "generator/lower/op_lowering.hpp"
#include "generator/lower/steps.hpp"
#include "runtime/error.hpp"
#include "schedules/infeasible.hpp"

#include <algorithm>
#include <charconv>

namespace kiln {

namespace {

bool tileable(const Model& m, int i, bool train) {
  const Node& n = m.nodes[i];
  const OpLowering& rules = op_lowering(n.op);
  return rules.tileable && rules.tileable(n, train);
}

} // namespace

bool TiledSegment::contains(int node) const {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

std::vector<int> tiled_segment_ends(const Model& m, bool train) {
  const int n = int(m.nodes.size());
  std::vector<int> ends;
  if (m.input_shape.size() != 4) return ends;
  std::vector<int> last_use(n, -1);
  int input_last = -1;
  for (int i = 0; i < n; ++i)
    for (int r : m.nodes[i].inputs)
      (r == kModelInput ? input_last : last_use[r]) = i;
  for (int k = 0; k < n && tileable(m, k, train); ++k) {
    bool ok = input_last <= k;
    for (int v = 0; ok && v < k; ++v)
      ok = last_use[v] <= k; // only node k's value leaves
    if (ok) ends.push_back(k);
  }
  return ends;
}

std::optional<TiledSegment> find_tiled_segment(const Model& m, bool train) {
  const std::vector<int> ends = tiled_segment_ends(m, train);
  if (ends.empty()) return std::nullopt;
  return tiled_segment_to(m, ends.back());
}

TiledSegment tiled_segment_to(const Model& m, int best) {
  TiledSegment s;
  sched::Segment& p = s.problem;
  p.in_h = m.input_shape[2], p.in_w = m.input_shape[3], p.in_channels = m.input_shape[1];
  p.element_bytes = int64_t(dtype_size(m.dtype));
  for (int i = 0; i <= best; ++i) {
    const Node& nd = m.nodes[i];
    sched::SegOp op;
    op.name = nd.name;
    const OpLowering& rules = op_lowering(nd.op);
    if (rules.window) op.window = {rules.window(nd.attrs, 0), rules.window(nd.attrs, 1)};
    for (int r : nd.inputs)
      op.inputs.push_back(r == kModelInput ? -1 : r);
    op.channels = nd.shape[1], op.element_bytes = p.element_bytes;
    op.out_h = nd.shape[2], op.out_w = nd.shape[3];
    // What each tiled backward step reads decides how long forward values stay live (the
    // parameter gradients read the input).
    op.backward_reads_input = rules.input_grad_reads_input || rules.param_grads;
    op.backward_reads_output = rules.input_grad_reads_output;
    p.ops.push_back(op);
    s.nodes.push_back(i);
  }
  p.output = best;
  p.validate();
  return s;
}

void tile_evenly(TiledSegment& s, int64_t rows, int64_t cols) {
  const sched::SegOp& out = s.problem.ops[size_t(s.problem.output)];
  if (rows < 1 || cols < 1 || rows > out.out_h || cols > out.out_w)
    throw Error("", "--tiles",
                cat(rows, "x", cols, " tiles do not fit the segment's ", out.out_h, "x", out.out_w,
                    " output"));
  s.tiling = sched::even_tiling(out.out_h, out.out_w, rows, cols);
  s.tiles = sched::plan_tiles(s.problem, s.tiling);
}

void tile_within(TiledSegment& s, int64_t budget, bool train) {
  try {
    s.tiling = sched::choose_tiling(s.problem, budget, train);
  } catch (const sched::Infeasible& e) {
    throw Error("", "--budget",
                cat("no tiling of the segment fits in ", budget,
                    " bytes; the smallest feasible budget is ", e.min_feasible_bytes, " bytes"));
  }
  s.tiles = sched::plan_tiles(s.problem, s.tiling);
}

std::pair<int64_t, int64_t> parse_tiles(const std::string& text) {
  auto num = [&](std::string_view v) {
    int64_t x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size() || x < 1 || x > 1024)
      throw Error("", "--tiles", cat("expected RxC (e.g. 4x4) or one number, got \"", text, "\""));
    return x;
  };
  const size_t x = text.find('x');
  if (x == std::string::npos) return {num(text), num(text)};
  return {num(std::string_view(text).substr(0, x)), num(std::string_view(text).substr(x + 1))};
}

TileEmitter::TileEmitter(const Model& m, const TiledSegment& s, PlanBuilder& b, Hooks hooks)
    : m_(m), s_(s), b_(b), hooks_(std::move(hooks)), written_(m.nodes.size(), 0) {}

int TileEmitter::fresh(const std::string& name, const Shape& shape) {
  std::string n = "tile:" + name; // a recomputed tile's buffers get "#2", "#3", ...
  for (int k = 2; b_.find(n) >= 0; ++k)
    n = cat("tile:", name, "#", k);
  return b_.buffer(n, shape, BufferRole::activation);
}

int64_t TileEmitter::value_h(int ref) const {
  return ref < 0 ? s_.problem.in_h : s_.problem.ops[size_t(ref)].out_h;
}
int64_t TileEmitter::value_w(int ref) const {
  return ref < 0 ? s_.problem.in_w : s_.problem.ops[size_t(ref)].out_w;
}

sched::Region TileEmitter::value_region(const sched::TilePlan& tp, int ref) const {
  return ref < 0 ? tp.input : tp.op_out[size_t(ref)];
}

int TileEmitter::window(int have, const sched::Region& region, const sched::Region& need,
                        const std::string& name) {
  if (region == need) return have;
  const Shape& full = b_.plan().buffers[have].shape;
  const int out = fresh(name, {full[0], full[1], need.h.size(), need.w.size()});
  Step s = plain_step(Fn::region_copy, name, {{"src", have}, {"dst", out}});
  s.params = Region{.src = {need.h.lo - region.h.lo, need.w.lo - region.w.lo},
                    .size = {need.h.size(), need.w.size()}};
  b_.step(s);
  return out;
}

Attrs TileEmitter::tile_attrs(int op, const sched::Region& out, const sched::Region& in) const {
  Attrs a = m_.nodes[s_.nodes[size_t(op)]].attrs;
  const sched::SegOp& so = s_.problem.ops[size_t(op)];
  if (!op_lowering(m_.nodes[s_.nodes[size_t(op)]].op).window) return a;
  // Padding only where the needed rows leave the image: before the first and after the last.
  const sched::Range axis_out[2] = {out.h, out.w}, axis_in[2] = {in.h, in.w};
  for (int d = 0; d < 2; ++d) {
    const sched::Window& w = so.window[size_t(d)];
    const int64_t start = axis_out[d].lo * w.stride - w.padding;
    const int64_t end =
        (axis_out[d].hi - 1) * w.stride - w.padding + (w.kernel - 1) * w.dilation + 1;
    a.padding[d] = axis_in[d].lo - start;
    a.padding_end[d] = end - axis_in[d].hi;
  }
  return a;
}

TileEmitter::TileValues TileEmitter::forward_tile(int t, int input, bool train) {
  const sched::TilePlan& tp = s_.tiles[size_t(t)];
  TileValues v;
  v.buffer.assign(s_.nodes.size(), -1);
  v.inputs.assign(s_.nodes.size(), {});
  const sched::Region whole{{0, s_.problem.in_h}, {0, s_.problem.in_w}};
  for (size_t j = 0; j < s_.nodes.size(); ++j) {
    const sched::Region& r = tp.op_out[j];
    if (r.empty()) continue;
    const int node = s_.nodes[j];
    const Node& nd = m_.nodes[node];
    const sched::SegOp& so = s_.problem.ops[j];
    sched::Region first_need;
    for (size_t k = 0; k < so.inputs.size(); ++k) {
      const int ref = so.inputs[k];
      const sched::Region need = sched::needed_input(so, int(k), r, value_h(ref), value_w(ref));
      if (k == 0) first_need = need;
      const int have = ref < 0 ? input : v.buffer[size_t(ref)];
      const int x = window(have, ref < 0 ? whole : value_region(tp, ref), need,
                           cat(nd.name, ".in", k, "@", t));
      v.inputs[j].push_back(x);
    }
    const int y = fresh(cat(nd.name, "@", t), {nd.shape[0], nd.shape[1], r.h.size(), r.w.size()});
    Step s = node_step(
        nd, *op_lowering(nd.op).forward,
        forward_args(
            m_, node, v.inputs[j], train,
            [&](const std::string& suffix) { return hooks_.param(node, suffix.c_str()); }, y));
    s.attrs = tile_attrs(int(j), r, first_need);
    b_.step(s);
    v.buffer[j] = y;
  }
  return v;
}

void TileEmitter::forward(int input, int output, bool train) {
  for (int t = 0; t < int(s_.tiles.size()); ++t) {
    const TileValues v = forward_tile(t, input, train);
    const sched::TilePlan& tp = s_.tiles[size_t(t)];
    Step s = plain_step(Fn::region_copy, m_.nodes[s_.output_node()].name,
                        {{"src", v.buffer[size_t(s_.problem.output)]}, {"dst", output}});
    s.params =
        Region{.dst = {tp.out.h.lo, tp.out.w.lo}, .size = {tp.out.h.size(), tp.out.w.size()}};
    b_.step(s);
  }
}

// A node's backward in one tile, seen by its rules (op_lowering.hpp): the tile's buffers.
class TileEmitter::TileSite : public BackwardSite {
public:
  TileSite(TileEmitter& e, int node, const Attrs& attrs, int dy, const TileValues& v, int op)
      : e_(e), node_(node), attrs_(attrs), dy_(dy), v_(v), op_(op) {}
  const Model& model() const override { return e_.m_; }
  int node() const override { return node_; }
  Attrs attrs() const override { return attrs_; }
  int dy() const override { return dy_; }
  int output() override { return v_.buffer[size_t(op_)]; }
  int input(int k) override { return v_.inputs[size_t(op_)].at(size_t(k)); }
  int param(const char* suffix) override { return e_.hooks_.param(node_, suffix); }
  int param_grad(const char* suffix) override { return e_.hooks_.param_grad(node_, suffix); }
  int scratch(const std::string& name, const Shape& shape) override {
    return e_.fresh(name, shape);
  }
  void emit(Step s) override { e_.b_.step(std::move(s)); }

private:
  TileEmitter& e_;
  int node_;
  Attrs attrs_;
  int dy_;
  const TileValues& v_;
  int op_;
};

void TileEmitter::backward(int input, int dy) {
  for (int t = 0; t < int(s_.tiles.size()); ++t) {
    const sched::TilePlan& tp = s_.tiles[size_t(t)];
    const TileValues v = forward_tile(t, input, true); // recomputed, kept for this tile's backward
    std::vector<int> grad(s_.nodes.size(), -1);
    const int out = s_.problem.output;
    grad[size_t(out)] = fresh(cat("d", m_.nodes[s_.output_node()].name, "@", t),
                              b_.plan().buffers[v.buffer[size_t(out)]].shape);
    Step take = plain_step(Fn::region_copy, m_.nodes[s_.output_node()].name,
                           {{"src", dy}, {"dst", grad[size_t(out)]}});
    take.params =
        Region{.src = {tp.out.h.lo, tp.out.w.lo}, .size = {tp.out.h.size(), tp.out.w.size()}};
    b_.step(take);
    for (int j = int(s_.nodes.size()) - 1; j >= 0; --j) {
      const int dy_j = grad[size_t(j)];
      if (dy_j < 0) continue;
      const int node = s_.nodes[size_t(j)];
      const Node& nd = m_.nodes[node];
      const sched::SegOp& so = s_.problem.ops[size_t(j)];
      const sched::Region& r = tp.op_out[size_t(j)];
      const Attrs attrs = tile_attrs(
          j, r, sched::needed_input(so, 0, r, value_h(so.inputs[0]), value_w(so.inputs[0])));
      for (size_t k = 0; k < so.inputs.size(); ++k) {
        const int ref = so.inputs[k];
        if (ref < 0) continue; // the segment input needs no gradient (the model input)
        const sched::Region have = value_region(tp, ref);
        if (grad[size_t(ref)] < 0) { // zeros, then every contribution adds
          grad[size_t(ref)] = fresh(cat("d", m_.nodes[s_.nodes[size_t(ref)]].name, "@", t),
                                    b_.plan().buffers[v.buffer[size_t(ref)]].shape);
          Step zero = node_step(nd, Fn::fill_zero, {{"dst", grad[size_t(ref)]}});
          zero.attrs = {};
          b_.step(zero);
        }
        const sched::Region need = sched::needed_input(so, int(k), r, value_h(ref), value_w(ref));
        const bool direct = need == have;
        const int dx = direct ? grad[size_t(ref)]
                              : fresh(cat("d", nd.name, ".in", k, "@", t),
                                      b_.plan().buffers[v.inputs[size_t(j)][k]].shape);
        TileSite site(*this, node, attrs, dy_j, v, j);
        op_lowering(nd.op).input_grad(site, int(k), dx, direct);
        if (!direct) {
          Step back =
              plain_step(Fn::region_copy, nd.name, {{"src", dx}, {"dst", grad[size_t(ref)]}});
          back.params = Region{.dst = {need.h.lo - have.h.lo, need.w.lo - have.w.lo},
                               .size = {need.h.size(), need.w.size()}};
          back.accumulate = true;
          b_.step(back);
        }
      }
      if (const auto grads = op_lowering(nd.op).param_grads) {
        TileSite site(*this, node, attrs, dy_j, v, j); // summed over the tiles in tile order
        grads(site, written_[size_t(node)]);
        written_[size_t(node)] = 1;
      }
    }
  }
}

} // namespace kiln
