// Static checks of a plan, so a lying plan.json fails with a message instead of reading
// or writing outside a buffer.
#include "runtime/error.hpp"
#include "runtime/plan.hpp"
#include "runtime/sparse_form.hpp"

#include <algorithm>

namespace kiln {

namespace {

struct Ctx {
  const Plan& p;
  const Step& s;
  std::string where;
  const Shape& shape(std::string_view role) const { return p.buffers[s.need(role)].shape; }
  [[noreturn]] void fail(const std::string& what) const { throw Error("", where, what); }
  void same(std::string_view a, std::string_view b) const {
    if (shape(a) != shape(b))
      fail(cat("\"", a, "\" ", shape_str(shape(a)), " and \"", b, "\" ", shape_str(shape(b)),
               " must have the same shape"));
  }
  void expect(std::string_view role, const Shape& want) const {
    if (shape(role) != want)
      fail(
          cat("\"", role, "\" has shape ", shape_str(shape(role)), ", expected ", shape_str(want)));
  }
  Shape forward(const Shape& x) const {
    try {
      return infer_shape(s.op, s.attrs, std::span<const Shape>(&x, 1));
    } catch (const Error& e) {
      fail(e.where().empty() ? e.message() : e.where() + " " + e.message());
    }
  }
  const ParamSpec param(const Shape& x, std::string_view suffix) const {
    for (const ParamSpec& ps : op_params(s.op, s.attrs, std::span<const Shape>(&x, 1)))
      if (ps.suffix == suffix) return ps;
    fail(cat(op_name(s.op), " has no parameter \"", suffix, "\""));
  }
  Shape channels(std::string_view role) const {
    const Shape& x = shape(role);
    if (x.size() < 2) fail(cat("\"", role, "\" needs a channel axis"));
    return {x[1]};
  }
};

// An optimizer's hyperparameter: finite, in [lo, hi].
void hyper(const Ctx& c, double v, std::string_view name, double lo, double hi) {
  if (!(v >= lo && v <= hi)) c.fail(cat(name, " must be in [", lo, ", ", hi, "], got ", v));
}

void check_shapes(const Ctx& c) {
  const Step& s = c.s;
  switch (s.fn) {
  case Fn::conv2d_forward:
  case Fn::conv2d_forward_sparse:
  case Fn::linear_forward:
    c.expect("y", c.forward(c.shape("x")));
    c.expect("w", c.param(c.shape("x"), "weight").shape);
    if (s.arg("b") >= 0) c.expect("b", {c.shape("y")[1]});
    if (s.arg("residual") >= 0) c.same("residual", "y");
    break;
  case Fn::conv2d_pool_forward: {
    if (s.op != OpKind::conv2d) c.fail("pools a conv2d's output");
    const Shape y = c.forward(c.shape("x"));
    c.expect("w", c.param(c.shape("x"), "weight").shape);
    if (s.arg("b") >= 0) c.expect("b", {y[1]});
    Shape pooled;
    try {
      pooled = infer_shape(OpKind::maxpool2d, s.pool, std::span<const Shape>(&y, 1));
    } catch (const Error& e) {
      c.fail("its pool: " + (e.where().empty() ? e.message() : e.where() + " " + e.message()));
    }
    c.expect("y", pooled);
    break;
  }
  case Fn::conv2d_fold_bn: {
    const Shape& w = c.shape("w");
    c.same("w", "w_out");
    for (auto r : {"weight", "bias", "running_mean", "running_var", "b_out"})
      c.expect(r, {w[0]});
    if (s.arg("b") >= 0) c.expect("b", {w[0]});
    if (!(s.eps > 0 && s.eps <= 1)) c.fail(cat("eps must be in (0, 1], got ", s.eps));
    break;
  }
  case Fn::conv2d_backward_data:
  case Fn::linear_backward_data:
    c.expect("dy", c.forward(c.shape("dx")));
    c.expect("w", c.param(c.shape("dx"), "weight").shape);
    break;
  case Fn::conv2d_backward_weight:
  case Fn::linear_backward_weight:
    c.expect("dy", c.forward(c.shape("x")));
    c.expect("dw", c.param(c.shape("x"), "weight").shape);
    break;
  case Fn::conv2d_backward_weight_sparse: {
    c.expect("dy", c.forward(c.shape("x")));
    const Shape w = c.param(c.shape("x"), "weight").shape;
    if ((s.arg("dw") >= 0) == (s.arg("partial") >= 0))
      c.fail("writes either dw or partial (the sums over ranges of rows), not both");
    if (s.arg("dw") >= 0) {
      c.expect("dw", w);
    } else {
      const Shape& p = c.shape("partial");
      const Shape& x = c.shape("x");
      if (p.size() != 5 || Shape(p.begin() + 1, p.end()) != w || p[0] < 1 || p[0] > x[0] * x[2])
        c.fail(cat("\"partial\" ", shape_str(p), " is not [S, ", shape_str(w).substr(1),
                   " with 1 <= S <= N*H = ", x[0] * x[2]));
      if (s.accumulate) c.fail("partial sums are written, not accumulated (partial.sum may)");
    }
    break;
  }
  case Fn::partial_sum: {
    // [S, *dst] (a weight gradient's), or [S * N, *dst[1:]] (a split-K forward's: S images'
    // worth of partial outputs, in dst's layout).
    const Shape& p = c.shape("partial");
    const Shape& d = c.shape("dst");
    const bool stacked = p.size() == d.size() + 1 && Shape(p.begin() + 1, p.end()) == d;
    const bool batched = p.size() == d.size() && !d.empty() && d[0] > 0 && p[0] % d[0] == 0 &&
                         p[0] >= d[0] &&
                         Shape(p.begin() + 1, p.end()) == Shape(d.begin() + 1, d.end());
    if (!stacked && !batched)
      c.fail(cat("\"partial\" ", shape_str(p), " is neither [S, ", shape_str(d).substr(1),
                 " nor [S * ", d.empty() ? 0 : d[0], ", ...] over \"dst\" ", shape_str(d)));
    if (s.arg("b") >= 0) c.expect("b", c.channels("dst"));
    if (s.arg("residual") >= 0) c.same("residual", "dst");
    break;
  }
  case Fn::conv2d_forward_partial:
  case Fn::linear_forward_partial: {
    const Shape y = c.forward(c.shape("x"));
    const Shape w = c.param(c.shape("x"), "weight").shape;
    c.expect("w", w);
    if (s.fn == Fn::conv2d_forward_partial && s.attrs.groups != 1)
      c.fail("split-K convolutions have one group");
    const int64_t K = numel(w) / w[0], most = (K + 15) / 16;
    const Shape& p = c.shape("partial");
    if (p.size() != y.size() || p[0] % y[0] != 0 || p[0] / y[0] < 1 || p[0] / y[0] > most ||
        Shape(p.begin() + 1, p.end()) != Shape(y.begin() + 1, y.end())) {
      std::string want = cat("[S * ", y[0]);
      for (size_t i = 1; i < y.size(); ++i)
        want += cat(", ", y[i]);
      c.fail(cat("\"partial\" ", shape_str(p), " is not ", want,
                 "] with 1 <= S <= ceil(K / 16) = ", most));
    }
    if (s.accumulate) c.fail("partial sums are written, not accumulated (partial.sum may)");
    break;
  }
  case Fn::bias_backward: c.expect("db", c.channels("dy")); break;
  case Fn::batchnorm_forward:
    c.expect("y", c.forward(c.shape("x")));
    for (auto r : {"weight", "bias", "running_mean", "running_var"})
      c.expect(r, c.channels("x"));
    break;
  case Fn::batchnorm_forward_train:
    c.expect("y", c.forward(c.shape("x")));
    for (auto r : {"weight", "bias", "mean", "invstd"})
      if (s.arg(r) >= 0) c.expect(r, c.channels("x"));
    break;
  case Fn::batchnorm_backward:
    c.same("x", "dy");
    c.same("x", "dx");
    for (auto r : {"weight", "mean", "invstd", "dweight", "dbias"})
      if (s.arg(r) >= 0) c.expect(r, c.channels("x"));
    if ((s.arg("mean") >= 0) != (s.arg("invstd") >= 0))
      c.fail("mean and invstd come together or not at all");
    break;
  case Fn::relu_forward:
  case Fn::softmax_forward: c.expect("y", c.forward(c.shape("x"))); break;
  case Fn::relu_backward:
  case Fn::softmax_backward:
    c.same("y", "dy");
    c.same("y", "dx");
    break;
  case Fn::maxpool2d_forward:
  case Fn::avgpool2d_forward:
  case Fn::adaptive_avgpool2d_forward:
  case Fn::upsample2d_forward: c.expect("y", c.forward(c.shape("x"))); break;
  case Fn::maxpool2d_backward:
    c.same("x", "dx");
    c.expect("dy", c.forward(c.shape("x")));
    break;
  case Fn::avgpool2d_backward:
  case Fn::adaptive_avgpool2d_backward:
  case Fn::upsample2d_backward: c.expect("dy", c.forward(c.shape("dx"))); break;
  case Fn::add_forward: {
    std::vector<Shape> xs;
    for (int b : s.variadic('x'))
      xs.push_back(c.p.buffers[b].shape);
    if (xs.size() < 2) c.fail("needs at least two inputs x0, x1");
    try {
      c.expect("y", infer_shape(s.op, s.attrs, xs));
    } catch (const Error& e) {
      c.fail(e.message());
    }
    break;
  }
  case Fn::concat_forward: {
    // The inputs fill y's channels [channel_offset, channel_offset + sum) (a wide concat
    // is split into several steps, each writing its slice).
    std::vector<Shape> xs;
    for (int b : s.variadic('x'))
      xs.push_back(c.p.buffers[b].shape);
    if (xs.empty()) c.fail("needs at least one input x0");
    Shape part;
    try {
      part = xs.size() == 1 ? xs[0] : infer_shape(s.op, s.attrs, xs);
    } catch (const Error& e) {
      c.fail(e.message());
    }
    const Shape& y = c.shape("y");
    bool ok =
        y.size() == part.size() && s.channel_offset >= 0 && s.channel_offset + part[1] <= y[1];
    for (size_t d = 0; ok && d < y.size(); ++d)
      ok = d == 1 || y[d] == part[d];
    if (!ok)
      c.fail(cat("inputs ", shape_str(part), " at channel offset ", s.channel_offset,
                 " do not fit y ", shape_str(y)));
    break;
  }
  case Fn::concat_backward: {
    const Shape& dy = c.shape("dy");
    const Shape& dx = c.shape("dx");
    bool ok = dy.size() == dx.size() && dy.size() >= 2 && s.channel_offset >= 0 &&
              s.channel_offset + dx[1] <= dy[1] && dy[0] == dx[0];
    for (size_t d = 2; ok && d < dy.size(); ++d)
      ok = dy[d] == dx[d];
    if (!ok)
      c.fail(cat("dx ", shape_str(dx), " at channel offset ", s.channel_offset,
                 " is not a slice of dy ", shape_str(dy)));
    break;
  }
  case Fn::softmax_xent_forward:
  case Fn::softmax_xent_backward: {
    const std::string_view logits = s.fn == Fn::softmax_xent_forward ? "logits" : "probs";
    const Shape& l = c.shape(logits);
    Shape t = l;
    if (l.size() < 2) c.fail("logits need a class axis");
    t.erase(t.begin() + 1);
    c.expect("target", t);
    if (s.fn == Fn::softmax_xent_forward) {
      c.same("logits", "probs");
      c.expect("loss", {1});
    } else {
      c.same("probs", "dlogits");
    }
    break;
  }
  case Fn::convert: c.same("src", "dst"); break;
  case Fn::region_copy: {
    const Shape& a = c.shape("src");
    const Shape& b = c.shape("dst");
    if (a.size() != 4 || b.size() != 4 || a[0] != b[0] || a[1] != b[1])
      c.fail(cat("region copies move windows between 4-D tensors of one batch and channel count: ",
                 shape_str(a), " -> ", shape_str(b)));
    for (int i = 0; i < 2; ++i) {
      const int64_t e = s.extent[i];
      if (e <= 0 || s.src_origin[i] < 0 || s.dst_origin[i] < 0 || s.src_origin[i] + e > a[2 + i] ||
          s.dst_origin[i] + e > b[2 + i])
        c.fail(cat("region [", s.src_origin[0], ", ", s.src_origin[1], "] + [", s.extent[0], ", ",
                   s.extent[1], "] -> [", s.dst_origin[0], ", ", s.dst_origin[1], "] does not fit ",
                   shape_str(a), " -> ", shape_str(b)));
    }
    break;
  }
  case Fn::fill_zero: break;
  case Fn::copy:
    if (numel(c.shape("src")) != numel(c.shape("dst")))
      c.fail(cat("copy from ", shape_str(c.shape("src")), " to ", shape_str(c.shape("dst")),
                 " changes the element count"));
    break;
  case Fn::sgd_update:
    c.same("param", "grad");
    if (s.arg("velocity") >= 0) c.same("param", "velocity");
    if ((s.arg("velocity") >= 0) != (s.momentum != 0))
      c.fail("a velocity comes with a nonzero momentum, and a momentum needs a velocity");
    hyper(c, s.lr, "lr", 0, 1e6);
    hyper(c, s.weight_decay, "weight_decay", 0, 1e6);
    hyper(c, s.momentum, "momentum", 0, 1);
    break;
  case Fn::adam_update:
    c.same("param", "grad");
    c.same("param", "m");
    c.same("param", "v");
    c.expect("step", {1});
    hyper(c, s.lr, "lr", 0, 1e6);
    hyper(c, s.weight_decay, "weight_decay", 0, 1e6);
    hyper(c, s.beta1, "beta1", 0, 1);
    hyper(c, s.beta2, "beta2", 0, 1);
    if (!(s.beta1 < 1 && s.beta2 < 1)) c.fail("Adam's betas must be below 1");
    if (!(s.eps > 0 && s.eps <= 1)) c.fail(cat("eps must be in (0, 1], got ", s.eps));
    break;
  case Fn::mse_forward:
  case Fn::mse_backward:
    c.same("logits", "target");
    if (s.fn == Fn::mse_forward)
      c.expect("loss", {1});
    else
      c.same("logits", "dlogits");
    break;
  case Fn::sparse_compact: break; // the form is checked below
  }
  // Compacted forms, read or written: of x (sparse.compact, the sparse convolutions) and of
  // a producer's output y.
  for (const auto& [form, dense] : {std::pair{kFormOfX, "x"}, std::pair{kFormOfY, "y"}}) {
    if (s.arg(form.values) < 0 && s.arg(form.index) < 0 && s.arg(form.count) < 0) continue;
    for (auto r : {form.values, form.index, form.count})
      if (s.arg(r) < 0)
        c.fail(cat("a compacted form needs ", form.values, ", ", form.index, " and ", form.count,
                   "; \"", r, "\" is missing"));
    const std::string why = sparse_form_mismatch(c.shape(dense), c.shape(form.values),
                                                 c.shape(form.index), c.shape(form.count));
    if (!why.empty()) c.fail(why);
    if (c.p.buffers[s.need(form.values)].dtype != c.p.buffers[s.need(dense)].dtype)
      c.fail(cat("\"", form.values, "\" must have the dtype of \"", dense, "\""));
  }
  for (auto r : {"nnz", "y_nnz"})
    if (s.arg(r) >= 0) c.expect(r, {1});
  if (s.guard != Guard::none && s.arg("y_values") >= 0)
    c.fail("a guarded step cannot compact its output (the other path would leave it unwritten)");
}

} // namespace

void validate_plan(const Plan& p) {
  const int nb = int(p.buffers.size());
  for (const Kernel& k : p.kernels)
    if (k.image.empty() || k.image[0] == '/' || k.image.find("..") != std::string::npos)
      throw Error(
          "", cat("kernel \"", k.name, "\""),
          cat("image path \"", k.image, "\" must be relative, inside the plan's directory"));
  if (p.arena_bytes < 0) throw Error("", "/arena_bytes", "must not be negative");
  for (int i = 0; i < nb; ++i) {
    const Buffer& b = p.buffers[i];
    const std::string where = cat("buffer \"", b.name, "\"");
    if (b.view_of >= 0) {
      const Buffer& base = p.buffers[b.view_of];
      if (base.view_of >= 0) throw Error("", where, "is a view of a view");
      if (base.bytes() != b.bytes() || base.dtype != b.dtype || base.offset != b.offset)
        throw Error("", where,
                    cat("is not a view of \"", base.name, "\" (bytes, dtype or offset differ)"));
    }
    if (b.layout == Layout::nhwc && b.shape.size() != 4)
      throw Error("", where, "only 4-D buffers have the nhwc layout");
    if (b.view_of >= 0) {
      const Buffer& base = p.buffers[b.view_of];
      const bool spatial_one = base.shape.size() == 4 && base.shape[2] == 1 && base.shape[3] == 1;
      if (base.layout != b.layout && !spatial_one)
        throw Error("", where, cat("views \"", base.name, "\" in another layout"));
      if (base.layout == Layout::nhwc && base.shape != b.shape && !spatial_one)
        throw Error("", where, "reshapes an nhwc buffer");
    }
    if (b.offset < 0 || b.offset > p.arena_bytes - b.bytes())
      throw Error("", where,
                  cat("[", b.offset, ", ", b.offset + b.bytes(), ") lies outside the arena of ",
                      p.arena_bytes, " bytes"));
    // Targets are class indices (or floats: a teacher's logits); sparse forms carry u8
    // indices and counts and an i32 count.
    const bool target = b.role == BufferRole::target;
    if (target ? b.dtype != DType::i64 && !is_float(b.dtype) : b.dtype == DType::i64)
      throw Error("", where,
                  cat("has dtype ", dtype_name(b.dtype), ", expected ",
                      target ? "i64 or a float type" : "a float type (u8 or i32 in sparse forms)"));
  }
  auto expect_role = [&](int b, BufferRole r, std::string_view what) {
    if (p.buffers[b].role != r)
      throw Error("", cat(what, " \"", p.buffers[b].name, "\""),
                  cat("has role ", role_name(p.buffers[b].role), ", expected ", role_name(r)));
  };
  for (int b : p.inputs)
    expect_role(b, BufferRole::input, "input");
  for (int b : p.outputs)
    expect_role(b, BufferRole::output, "output");
  if (p.target >= 0) expect_role(p.target, BufferRole::target, "target");
  if (p.loss >= 0) {
    expect_role(p.loss, BufferRole::loss, "loss");
    if (p.buffers[p.loss].shape != Shape{1}) throw Error("", "loss", "must have shape [1]");
  }
  for (const ParamBinding& pb : p.params) {
    const Buffer& b = p.buffers[pb.buffer];
    if (b.role != BufferRole::param && b.role != BufferRole::state)
      throw Error("", cat("param \"", pb.name, "\""), "is not bound to a param or state buffer");
    if (pb.grad >= 0) {
      expect_role(pb.grad, BufferRole::param_grad, "gradient");
      if (p.buffers[pb.grad].shape != b.shape)
        throw Error("", cat("param \"", pb.name, "\""),
                    "gradient shape differs from the parameter");
    }
  }
  for (const Phase& ph : p.phases)
    for (size_t i = 0; i < ph.steps.size(); ++i) {
      const Step& s = ph.steps[i];
      const std::string where = cat("/phases/", ph.name, "/", i);
      if (s.kind == StepKind::free) {
        if (s.buffer < 0 || s.buffer >= nb) throw Error("", where, "frees no buffer");
        const Buffer& b = p.buffers[s.buffer];
        if (b.role != BufferRole::activation || b.view_of >= 0)
          throw Error("", where,
                      cat("frees \"", b.name, "\", which is not a transient base buffer"));
        continue;
      }
      if (s.kind == StepKind::launch) {
        if (s.kernel < 0 || s.kernel >= int(p.kernels.size()))
          throw Error("", where, "launches no kernel");
        for (const std::string& r : p.kernels[s.kernel].args)
          if (s.arg(r) < 0)
            throw Error("", where,
                        cat("kernel \"", p.kernels[s.kernel].name, "\" takes argument \"", r,
                            "\", which the step does not bind"));
      }
      if (s.kind == StepKind::library && s.library != "cudnn")
        throw Error("", where, cat("unknown library \"", s.library, "\""));
      if (s.relu && s.fn != Fn::conv2d_forward && s.fn != Fn::conv2d_forward_sparse &&
          s.fn != Fn::conv2d_pool_forward && s.fn != Fn::linear_forward &&
          s.fn != Fn::batchnorm_forward && s.fn != Fn::partial_sum)
        throw Error("", where, cat(fn_name(s.fn), " has no relu epilogue"));
      const FnSignature sig = fn_signature(s.fn);
      auto listed = [](std::span<const std::string_view> roles, const std::string& r) {
        for (std::string_view x : roles)
          if (x == r || (x.ends_with('*') && r.size() > 1 && r[0] == x[0] &&
                         r.find_first_not_of("0123456789", 1) == std::string::npos))
            return true;
        return false;
      };
      for (const Arg& a : s.args)
        if (!listed(sig.reads, a.role) && !listed(sig.writes, a.role))
          throw Error("", where, cat(fn_name(s.fn), " takes no argument \"", a.role, "\""));
      for (auto roles : {sig.reads, sig.writes})
        for (std::string_view r : roles)
          if (!r.ends_with('*') && s.arg(r) < 0 && !listed(sig.optional, std::string(r)))
            throw Error("", where, cat(fn_name(s.fn), " needs argument \"", r, "\""));
      for (const Arg& a : s.args) {
        const Buffer& b = p.buffers[a.buffer];
        const bool writes =
            listed(sig.writes, a.role) || (s.fn == Fn::sgd_update && a.role == "param");
        const bool update = s.fn == Fn::sgd_update || s.fn == Fn::adam_update;
        if (writes && (b.role == BufferRole::input || b.role == BufferRole::target ||
                       b.role == BufferRole::state || (b.role == BufferRole::param && !update) ||
                       (b.role == BufferRole::optimizer_state && (!update || a.role == "step"))))
          throw Error(
              "", where,
              cat(fn_name(s.fn), " would overwrite the ", role_name(b.role), " \"", b.name, "\""));
        // Integer roles have one dtype; everything else is a float (fill_zero zeroes any).
        const bool class_target =
            a.role == "target" && s.fn != Fn::mse_forward && s.fn != Fn::mse_backward;
        const bool ok =
            class_target ? b.dtype == DType::i64
            : a.role == "index" || a.role == "count" || a.role == "y_index" || a.role == "y_count"
                ? b.dtype == DType::u8
            : a.role == "nnz" || a.role == "y_nnz" || (update && a.role == "step")
                ? b.dtype == DType::i32
                : is_float(b.dtype) || s.fn == Fn::fill_zero;
        if (!ok)
          throw Error("", where, cat("argument \"", a.role, "\" has dtype ", dtype_name(b.dtype)));
      }
      const bool conv = s.fn == Fn::conv2d_forward || s.fn == Fn::conv2d_forward_sparse ||
                        s.fn == Fn::conv2d_backward_weight ||
                        s.fn == Fn::conv2d_backward_weight_sparse || s.fn == Fn::partial_sum;
      if (s.guard != Guard::none) {
        if (!conv) throw Error("", where, cat(fn_name(s.fn), " cannot be guarded"));
        if (s.arg("nnz") < 0) throw Error("", where, "a guarded step reads \"nnz\"");
        if (s.threshold < 0) throw Error("", where, "the guard's threshold must not be negative");
        if (s.kind == StepKind::library)
          throw Error("", where, "a library step cannot test a guard on the device");
      } else if (conv && s.arg("nnz") >= 0) {
        throw Error("", where, "reads \"nnz\" but has no guard");
      }
      check_shapes(Ctx{p, s, cat(where, " (", fn_name(s.fn), " of ", s.node, ")")});
    }
}

} // namespace kiln
