#include "generator/rewrite/sparse_plan.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/lower/steps.hpp"
#include "generator/select/select.hpp"
#include "runtime/error.hpp"
#include "runtime/sparse_form.hpp"

#include <cmath>
#include <deque>
#include <fmt/format.h>

namespace kiln {

namespace {

// A compacted form of one buffer in one phase.
struct Form {
  int values = -1, index = -1, count = -1, nnz = -1;
  bool written = false, fused = false;
  std::string how;
};

class Planner {
public:
  Planner(Plan& p, const Model& m, const GpuDesc& g, const SparseOptions& o)
      : p_(p), m_(m), g_(g), o_(o) {}

  std::vector<SparseDecision> run() {
    for (size_t ph = 0; ph < p_.phases.size(); ++ph) {
      Phase& phase = p_.phases[ph];
      if (phase.name != "forward" && phase.name != "backward") continue;
      steps_ = &phase.steps;
      phase_ = phase.name;
      const size_t n = steps_->size();
      before_.assign(n, {});
      after_.assign(n, {});
      forms_.clear();
      for (size_t i = 0; i < n; ++i) {
        const Step& s = (*steps_)[i];
        if (s.kind == StepKind::free) continue;
        if (s.fn == Fn::conv2d_forward && phase.name == "forward") forward(i);
        if (s.fn == Fn::conv2d_backward_weight) weight(i);
      }
      std::vector<Step> out;
      for (size_t i = 0; i < n; ++i) {
        for (size_t k : before_[i])
          out.push_back(created_[k]);
        out.push_back(std::move((*steps_)[i]));
        for (size_t k : after_[i])
          out.push_back(created_[k]);
      }
      *steps_ = std::move(out);
    }
    return decisions_;
  }

private:
  // The conv2d layer a step computes (fused steps are named "conv+bn+relu").
  std::string conv_layer(const std::string& node) const {
    std::string best;
    for (const Node& n : m_.nodes)
      if (n.op == OpKind::conv2d && n.name.size() > best.size() &&
          (node == n.name || node.rfind(n.name + "+", 0) == 0))
        best = n.name;
    return best.empty() ? node : best;
  }

  // The last step before i that writes buffer b, or -1.
  int producer(size_t i, int b) const {
    for (size_t j = i; j-- > 0;) {
      const Step& s = (*steps_)[j];
      if (s.kind == StepKind::free) continue;
      for (const Arg& a : s.args)
        if (p_.base(a.buffer) == p_.base(b) && fn_writes(s.fn, a.role)) return int(j);
    }
    return -1;
  }

  int buffer(const std::string& name, Shape shape, DType t) {
    Buffer b;
    b.name = name;
    for (int k = 2; p_.find_buffer(b.name) >= 0; ++k)
      b.name = name + "#" + std::to_string(k);
    b.shape = std::move(shape);
    b.dtype = t;
    p_.buffers.push_back(b);
    return int(p_.buffers.size()) - 1;
  }

  double cost(const Step& s) const {
    const Choice c = select_variant(StepInfo{p_, s, g_});
    return c.kernel ? c.kernel->cost.micros : NAN;
  }

  // The buffers of x's compacted form with slices of cs (shared by the phase's convs that
  // read x with that slice and the same need of a count).
  Form& form(int x, int64_t cs, bool nnz) {
    const auto key = std::make_tuple(p_.base(x), cs, nnz);
    auto it = forms_.find(key);
    if (it != forms_.end()) return it->second;
    const Buffer xb = p_.buffers[x]; // a copy: new buffers may move the plan's
    const SparseForm f = SparseForm::of(xb.shape, cs);
    const std::string base = fmt::format("sparse:{}.cs{}", xb.name, cs);
    Form fm;
    fm.values = buffer(base + ".values", f.values_shape(), xb.dtype);
    fm.index = buffer(base + ".index", f.values_shape(), DType::u8);
    fm.count = buffer(base + ".count", f.count_shape(), DType::u8);
    if (nnz) fm.nnz = buffer(base + ".nnz", {1}, DType::i32);
    return forms_.emplace(key, fm).first->second;
  }

  // The form's buffers as arguments: of x (sparse.compact) or of y (a producer).
  void add_form_args(Step& s, const Form& f, const FormRoles& roles) const {
    s.args.push_back({roles.values, f.values});
    s.args.push_back({roles.index, f.index});
    s.args.push_back({roles.count, f.count});
    if (f.nnz >= 0) s.args.push_back({roles.nnz, f.nnz});
  }

  // Whether the producer of x can compact its own output (its kernel writes y and the form
  // in one pass): a relu or an inference batchnorm (conv/sparse_compact.cuh), or a conv
  // whose epilogue does (conv/tile_epilogue.cuh); unguarded, writing x itself, not compacting.
  bool fusable(int prod, int x) const {
    if (prod < 0) return false;
    const Step& s = (*steps_)[size_t(prod)];
    const bool kind = s.fn == Fn::relu_forward || s.fn == Fn::batchnorm_forward ||
                      s.fn == Fn::conv2d_forward || s.fn == Fn::conv2d_forward_sparse;
    return kind && !s.accumulate && s.sparse.guard == Guard::none && s.arg(kFormOfY.values) < 0 &&
           s.need("y") == x && p_.buffers[x].shape.size() == 4;
  }

  // The compaction as it would run: in the producer's kernel, or a separate kernel.
  Step compaction_step(const Form& f, int prod, int x, const Step& consumer, double d,
                       bool fused) const {
    Step c;
    if (fused) {
      c = (*steps_)[size_t(prod)];
      add_form_args(c, f, kFormOfY);
    } else {
      c = step_like(consumer, Fn::sparse_compact);
      c.args = {{"x", x}};
      add_form_args(c, f, kFormOfX);
    }
    c.sparse.density = d;
    return c;
  }

  // The cheaper way to compact x and its time: fused (the producer's extra time, which may
  // include a slower kernel that can compact) or separate; zero when already written.
  std::pair<bool, double> compaction(const Form& f, int prod, int x, const Step& consumer,
                                     double d) const {
    if (f.written) return {f.fused, 0};
    const double fill = f.nnz >= 0 ? kLaunchUs : 0;
    const double separate = cost(compaction_step(f, prod, x, consumer, d, false));
    if (fusable(prod, x)) {
      const double extra =
          cost(compaction_step(f, prod, x, consumer, d, true)) - cost((*steps_)[size_t(prod)]);
      if (!std::isnan(extra) && !(extra > separate)) return {true, extra + fill};
    }
    return {false, separate + fill};
  }

  // Writes the form: the producer compacts (fused) or a sparse.compact runs before step i;
  // the count is zeroed first.
  void write_form(Form& f, int prod, int x, size_t i, double d, std::string& how) {
    if (f.written) {
      how = f.how + " (shared)";
      return;
    }
    const Step& consumer = (*steps_)[i];
    f.fused = compaction(f, prod, x, consumer, d).first;
    const size_t at = f.fused ? size_t(prod) : i;
    if (f.nnz >= 0) {
      Step z = step_like(consumer, Fn::fill_zero);
      z.args = {{"dst", f.nnz}};
      before_[at].push_back(created(std::move(z)));
    }
    if (f.fused) {
      (*steps_)[size_t(prod)] = compaction_step(f, prod, x, consumer, d, true);
      f.how = fmt::format("fused into {} of {}", fn_name((*steps_)[size_t(prod)].fn),
                          (*steps_)[size_t(prod)].node);
    } else {
      before_[i].push_back(created(compaction_step(f, prod, x, consumer, d, false)));
      f.how = "sparse.compact before the conv";
    }
    f.written = true;
    how = f.how;
  }

  size_t created(Step s) {
    created_.push_back(std::move(s));
    return created_.size() - 1;
  }

  // The density at which the sparse step's time reaches the dense step's: where the
  // dispatch switches. 1 when the sparse step is never slower.
  double crossover(Step sparse, double dense_us) const {
    return crossover([&](double d) { return sparse.sparse.density = d, cost(sparse); }, dense_us);
  }
  template <class CostAt> double crossover(CostAt sparse_us, double dense_us) const {
    if (sparse_us(1.0) <= dense_us) return 1.0;
    double lo = 0, hi = 1;
    for (int k = 0; k < 40; ++k) {
      const double mid = (lo + hi) / 2;
      (sparse_us(mid) <= dense_us ? lo : hi) = mid;
    }
    return lo;
  }

  // The sparse weight gradient writing dw at once, or split over S ranges of the input's rows
  // into partial sums (float [S, *dw]) that partial.sum completes: more blocks reduce the
  // input when the grid is small. The cheapest, with its time.
  struct Split {
    Step weight, sum; // sum: partial.sum, when split
    int64_t splits = 1;
    double us = NAN;
  };
  Split split_weight(const Step& sw, const Step& dense) {
    // Copies: new buffers may move the plan's.
    const Shape x = p_.buffers[sw.need("x")].shape, w = p_.buffers[dense.need("dw")].shape;
    const std::string dw_name = p_.buffers[dense.need("dw")].name;
    Split best;
    for (int64_t n = 1; n <= std::min<int64_t>(x[0] * x[2], 256); n *= 2) {
      if (n > 1 && double(n) * double(numel(w)) * 4 > 64.0 * (1 << 20)) break; // partial memory
      Split c;
      c.splits = n;
      c.weight = sw;
      if (n > 1) {
        Shape ps = w;
        ps.insert(ps.begin(), n);
        const std::string name = fmt::format("sparse:{}.partial{}", dw_name, n);
        const int pb =
            p_.find_buffer(name) >= 0 ? p_.find_buffer(name) : buffer(name, ps, DType::f32);
        for (Arg& a : c.weight.args)
          if (a.role == "dw") a = {"partial", pb};
        c.weight.accumulate = false;
        c.sum = step_like(dense, Fn::partial_sum);
        c.sum.accumulate = dense.accumulate;
        c.sum.args = {{"partial", pb}, {"dst", dense.need("dw")}};
      }
      c.us = cost(c.weight) + (n > 1 ? cost(c.sum) : 0);
      if (!std::isnan(c.us) && (std::isnan(best.us) || c.us < best.us)) best = c;
    }
    return best;
  }

  bool storage_ok(const Step& s) const {
    for (const Arg& a : s.args) {
      const DType t = p_.buffers[a.buffer].dtype;
      if (t == DType::f64) return false;
    }
    return true;
  }

  // conv2d.forward at step i.
  void forward(size_t i) {
    Step& st = (*steps_)[i];
    SparseDecision d;
    d.layer = conv_layer(st.node);
    d.fn = "conv2d.forward";
    d.phase = phase_;
    d.path = "dense";
    d.source = "none";
    if (auto it = o_.density.find(d.layer); it != o_.density.end()) {
      d.density = it->second;
      d.source = o_.source.at(d.layer);
    }
    const int x = st.need("x");
    const int prod = producer(i, x);
    const Step* ps = prod >= 0 ? &(*steps_)[size_t(prod)] : nullptr;
    const bool after_relu =
        ps && (ps->fn == Fn::relu_forward || ps->epilogue.activation == Activation::relu);
    const bool forced = o_.mode != SparseMode::off &&
                        (o_.forced.count(d.layer) || (o_.mode == SparseMode::force && after_relu));
    auto keep = [&](std::string why) {
      d.reason = std::move(why);
      decisions_.push_back(d);
      sparse_layers_[d.layer] = d;
    };
    if (o_.mode == SparseMode::off) return keep("--sparse off");
    if (o_.kept_dense.count(d.layer)) return keep("hints.variant \"dense\"");
    if (!forced && d.density < 0 && !o_.threshold.count(d.layer))
      return keep("no density known (kiln profile, then --profile; or hints.activation_density)");
    if (st.accumulate || st.kind == StepKind::library || !storage_ok(st))
      return keep("not a kernel the sparse family replaces (f64 or accumulating)");
    if (p_.buffers[x].shape.size() != 4) return keep("the input is not an image");
    if (numel(p_.buffers[x].shape) > 2147483647)
      return keep("the input has 2^31 elements or more (the nonzero count is an i32)");
    const double dens = d.density >= 0 ? d.density : 0.5;
    // The slice size with the cheapest sparse conv and compaction: smaller slices stage
    // fewer weights per step (more blocks fit an SM), larger ones fewer counts.
    Form* f = nullptr;
    Step sp;
    for (int64_t cs = sparse_slice(p_.buffers[x].shape[1] / st.attrs.groups); cs >= 1;
         cs = cs > 8 ? cs / 2 : 0) {
      Form& fc = form(x, cs, !forced);
      Step s = step_like(st, Fn::conv2d_forward_sparse);
      s.epilogue = st.epilogue;
      s.sparse.density = dens;
      s.args = {{"x", x}, {"values", fc.values}, {"index", fc.index}, {"count", fc.count}};
      for (const Arg& a : st.args)
        if (a.role != "x") s.args.push_back(a);
      const double us = cost(s), cus = compaction(fc, prod, x, st, dens).second;
      if (!f || us + cus < d.sparse_us + d.compaction_us) {
        f = &fc, sp = s;
        d.sparse_us = us, d.compaction_us = cus;
      }
    }
    d.dense_us = cost(st);
    if (std::isnan(d.sparse_us)) return keep("no sparse variant fits this layer on the GPU");
    if (forced) {
      write_form(*f, prod, x, i, dens, d.compaction);
      d.path = "sparse";
      d.reason = o_.forced.count(d.layer) ? "hints.variant \"sparse\"" : "--sparse force";
      st = sp;
      decisions_.push_back(d);
      sparse_layers_[d.layer] = d;
      return;
    }
    if (std::isnan(d.dense_us))
      return keep("the dense path is a cuDNN call, which cannot test a guard on the device");
    const auto given = o_.threshold.find(d.layer);
    if (given == o_.threshold.end() && !rewrite_pays(d.dense_us, d.sparse_us + d.compaction_us))
      return keep(fmt::format("predicted win too small at density {:.3f}: dense {:.1f} us, "
                              "sparse {:.1f} us + compaction {:.1f} us",
                              dens, d.dense_us, d.sparse_us, d.compaction_us));
    d.threshold = given != o_.threshold.end() ? given->second : crossover(sp, d.dense_us);
    d.threshold_nnz = int64_t(std::floor(d.threshold * double(numel(p_.buffers[x].shape))));
    write_form(*f, prod, x, i, dens, d.compaction);
    d.path = "dispatch";
    d.reason = fmt::format("{}predicted {:.1f} us sparse + {:.1f} us compaction against {:.1f} us "
                           "dense at density {:.3f}; the sparse kernel runs while the density "
                           "is at most {:.3f}",
                           given != o_.threshold.end() ? "hints.sparse_threshold; " : "",
                           d.sparse_us, d.compaction_us, d.dense_us, dens, d.threshold);
    sp.sparse.guard = Guard::sparse;
    sp.sparse.threshold = d.threshold_nnz;
    sp.args.push_back({"nnz", f->nnz});
    st.sparse.guard = Guard::dense;
    st.sparse.threshold = d.threshold_nnz;
    st.args.push_back({"nnz", f->nnz});
    after_[i].push_back(created(std::move(sp)));
    decisions_.push_back(d);
    sparse_layers_[d.layer] = d;
  }

  // conv2d.backward_weight at step i (training): for a conv planned sparse in the forward.
  void weight(size_t i) {
    Step& st = (*steps_)[i];
    const std::string layer = conv_layer(st.node);
    const auto fwd = sparse_layers_.find(layer);
    if (fwd == sparse_layers_.end() || fwd->second.path == "dense") return;
    SparseDecision d = fwd->second;
    d.fn = "conv2d.backward_weight";
    d.phase = phase_;
    d.path = "dense";
    d.threshold = -1, d.threshold_nnz = -1, d.compaction.clear();
    const bool forced = fwd->second.path == "sparse";
    auto keep = [&](std::string why) {
      d.reason = std::move(why);
      decisions_.push_back(d);
    };
    if (!storage_ok(st)) return keep("not a kernel the sparse family replaces (f64)");
    const int x = st.need("x");
    const double dens = d.density >= 0 ? d.density : 0.5;
    const int64_t cs = sparse_slice(p_.buffers[x].shape[1] / st.attrs.groups);
    Form& f = form(x, cs, !forced);
    Step sw = step_like(st, Fn::conv2d_backward_weight_sparse);
    sw.sparse.density = dens;
    sw.accumulate = st.accumulate;
    sw.args = {{"x", x},           {"values", f.values},  {"index", f.index},
               {"count", f.count}, {"dy", st.need("dy")}, {"dw", st.need("dw")}};
    Split split = split_weight(sw, st);
    d.sparse_us = split.us;
    d.dense_us = cost(st);
    d.compaction_us = compaction(f, -1, x, st, dens).second;
    if (std::isnan(d.sparse_us)) return keep("no sparse variant fits this layer on the GPU");
    const std::string how =
        split.splits > 1 ? fmt::format(", reduced in {} ranges of rows then summed", split.splits)
                         : "";
    if (forced) {
      write_form(f, -1, x, i, dens, d.compaction);
      d.path = "sparse";
      d.reason = "its forward is forced sparse" + how;
      st = split.weight;
      if (split.splits > 1) after_[i].push_back(created(std::move(split.sum)));
      decisions_.push_back(d);
      return;
    }
    if (std::isnan(d.dense_us))
      return keep("the dense path is a cuDNN call, which cannot test a guard on the device");
    if (!rewrite_pays(d.dense_us, d.sparse_us + d.compaction_us))
      return keep(fmt::format("predicted win too small at density {:.3f}: dense {:.1f} us, "
                              "sparse {:.1f} us + compaction {:.1f} us",
                              dens, d.dense_us, d.sparse_us, d.compaction_us));
    const double sum_us = split.splits > 1 ? cost(split.sum) : 0;
    d.threshold = crossover(
        [&](double at) { return split.weight.sparse.density = at, cost(split.weight) + sum_us; },
        d.dense_us);
    d.threshold_nnz = int64_t(std::floor(d.threshold * double(numel(p_.buffers[x].shape))));
    write_form(f, -1, x, i, dens, d.compaction);
    d.path = "dispatch";
    d.reason = fmt::format("predicted {:.1f} us sparse + {:.1f} us compaction against {:.1f} us "
                           "dense at density {:.3f}; the sparse kernels run while the density "
                           "is at most {:.3f}{}",
                           d.sparse_us, d.compaction_us, d.dense_us, dens, d.threshold, how);
    split.weight.sparse.density = dens;
    for (Step* s : {&split.weight, &split.sum}) {
      s->sparse.guard = Guard::sparse;
      s->sparse.threshold = d.threshold_nnz;
      s->args.push_back({"nnz", f.nnz});
    }
    st.sparse.guard = Guard::dense;
    st.sparse.threshold = d.threshold_nnz;
    st.args.push_back({"nnz", f.nnz});
    after_[i].push_back(created(std::move(split.weight)));
    if (split.splits > 1) after_[i].push_back(created(std::move(split.sum)));
    decisions_.push_back(d);
  }

  Plan& p_;
  const Model& m_;
  const GpuDesc& g_;
  const SparseOptions& o_;
  std::vector<Step>* steps_ = nullptr;
  std::string phase_;
  std::vector<std::vector<size_t>> before_, after_;
  std::deque<Step> created_;
  std::map<std::tuple<int, int64_t, bool>, Form> forms_;
  std::map<std::string, SparseDecision> sparse_layers_;
  std::vector<SparseDecision> decisions_;
};

} // namespace

std::vector<SparseDecision> plan_sparse(Plan& p, const Model& m, const GpuDesc& g,
                                        const SparseOptions& o) {
  return Planner(p, m, g, o).run();
}

} // namespace kiln
