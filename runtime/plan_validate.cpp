// Static checks of a plan, so a lying plan.json fails with a message instead of reading
// or writing outside a buffer.
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/step_check.hpp"
#include "runtime/plan.hpp"
#include "runtime/sparse_form.hpp"

#include <algorithm>

namespace kiln {

namespace {

// The checks every function shares: its parameters' type, the fused epilogue and guard
// where it admits them, the compacted forms it reads or writes, then its own (FnDef::check).
void check_step(const StepCheck& c, const FnDef& def) {
  const Step& s = c.s;
  if (s.params.index() != def.params)
    c.fail(cat(def.name, " takes ", params_name(def.params), " parameters, not ",
               params_name(s.params.index())));
  if (s.epilogue.activation != Activation::none && !def.epilogue)
    c.fail(cat(def.name, " has no fused epilogue for the activation \"",
               activation_name(s.epilogue.activation), "\""));
  if (def.check) def.check(c);
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
  if (s.sparse.guard != Guard::none && s.arg("y_values") >= 0)
    c.fail("a guarded step cannot compact its output (the other path would leave it unwritten)");
}

// Whether an argument's dtype suits its role: the function's listed types, u8 indices and
// counts and i32 nonzero counts of compacted forms, floats otherwise.
bool dtype_fits(const FnDef& def, const std::string& role, DType t) {
  for (const RoleType& rt : def.types)
    if (rt.role == role)
      return rt.type == ArgType::any || t == (rt.type == ArgType::i32  ? DType::i32
                                              : rt.type == ArgType::u8 ? DType::u8
                                                                       : DType::i64);
  if (role == "index" || role == "count" || role == "y_index" || role == "y_count")
    return t == DType::u8;
  if (role == "nnz" || role == "y_nnz") return t == DType::i32;
  return is_float(t);
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
    if (b.view_of < 0 && b.view_offset != 0)
      throw Error("", where, cat("has view_offset ", b.view_offset, " but is not a view"));
    if (b.view_of >= 0) {
      const Buffer& base = p.buffers[b.view_of];
      if (base.view_of >= 0) throw Error("", where, "is a view of a view");
      if (base.dtype != b.dtype || base.offset != b.offset)
        throw Error("", where,
                    cat("is not a view of \"", base.name, "\" (dtype or offset differ)"));
      // A view is the contiguous elements [view_offset, view_offset + numel) of its base, or
      // a pitched one's runs from view_offset on.
      const int64_t n = b.span_bytes() / int64_t(dtype_size(b.dtype)), of = numel(base.shape);
      if (b.view_pitch < 0 || (b.view_pitch > 0 && b.shape.size() != 4))
        throw Error("", where,
                    cat("has view_pitch ", b.view_pitch, ": only a 4-D channel window is pitched"));
      if (b.view_offset < 0 || b.view_offset > of || n > of - b.view_offset)
        throw Error("", where,
                    cat("elements [", b.view_offset, ", ", b.view_offset + n,
                        ") run outside its base \"", base.name, "\" of ", of, " elements"));
      if (b.view_pitch > 0 &&
          (b.layout != base.layout || base.shape.size() != 4 || base.shape[0] != b.shape[0] ||
           base.shape[2] != b.shape[2] || base.shape[3] != b.shape[3]))
        throw Error("", where,
                    cat("is pitched but no channel window of \"", base.name,
                        "\" (its layout, batch and spatial size)"));
      // Consecutive runs are one image (NCHW) or pixel (NHWC) of the (4-D) base apart.
      if (b.view_pitch > 0) {
        const int64_t step =
            base.layout == Layout::nhwc ? base.shape[1] : numel(base.shape) / base.shape[0];
        if (b.view_pitch != step)
          throw Error("", where,
                      cat("has view_pitch ", b.view_pitch, " where its base \"", base.name,
                          "\" puts its images or pixels ", step, " elements apart"));
      }
      if (b.view_offset != 0 && b.layout != base.layout)
        throw Error("", where, cat("is a window of \"", base.name, "\" in another layout"));
    }
    if (b.layout == Layout::nhwc && b.shape.size() != 4)
      throw Error("", where, "only 4-D buffers have the nhwc layout");
    // (f64: a reference plan's copy of an f32 one.)
    if (b.tf32 && ((b.dtype != DType::f32 && b.dtype != DType::f64) || b.view_of >= 0))
      throw Error("", where, "only an f32 buffer (not a view) holds tf32-rounded values");
    if (b.view_of >= 0) {
      const Buffer& base = p.buffers[b.view_of];
      const bool spatial_one = base.shape.size() == 4 && base.shape[2] == 1 && base.shape[3] == 1;
      if (base.layout != b.layout && !spatial_one)
        throw Error("", where, cat("views \"", base.name, "\" in another layout"));
      if (base.layout == Layout::nhwc && base.shape != b.shape && !spatial_one && b.view_pitch == 0)
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
  // A signal plan's caller gives [N, C, L]: the input it is held in must be [N, C, L, 1].
  if (p.signal) {
    if (p.inputs.empty()) throw Error("", "/signal", "a signal plan needs an input");
    const Shape& s = p.buffers[size_t(p.inputs[0])].shape;
    if (s.size() != 4 || s[3] != 1)
      throw Error("", "/signal", cat("a signal plan's input is [N, C, L, 1], not ", shape_str(s)));
  }
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
      const bool prepare = ph.name == "prepare";
      if (s.kind == StepKind::free) {
        if (prepare) throw Error("", where, "the prepare phase frees nothing");
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
      const FnDef& def = fn_def(s.fn);
      const FnSignature& sig = def.signature;
      auto listed = [](std::span<const std::string_view> roles, const std::string& r) {
        for (std::string_view x : roles)
          if (x == r || (x.ends_with('*') && r.size() > 1 && r[0] == x[0] &&
                         r.find_first_not_of("0123456789", 1) == std::string::npos))
            return true;
        return false;
      };
      for (const Arg& a : s.args)
        if (!listed(sig.reads, a.role) && !listed(sig.writes, a.role))
          throw Error("", where, cat(def.name, " takes no argument \"", a.role, "\""));
      for (auto roles : {sig.reads, sig.writes})
        for (std::string_view r : roles)
          if (!r.ends_with('*') && s.arg(r) < 0 && !listed(sig.optional, std::string(r)))
            throw Error("", where, cat(def.name, " needs argument \"", r, "\""));
      // An update (its signature updates "param") writes parameters and optimizer state;
      // nothing else does.
      const bool update = listed(sig.updates, "param");
      for (const Arg& a : s.args) {
        const Buffer& b = p.buffers[a.buffer];
        if (listed(sig.writes, a.role) &&
            (b.role == BufferRole::input || b.role == BufferRole::target ||
             b.role == BufferRole::state ||
             ((b.role == BufferRole::param || b.role == BufferRole::optimizer_state) && !update)))
          throw Error(
              "", where,
              cat(def.name, " would overwrite the ", role_name(b.role), " \"", b.name, "\""));
        // The prepare phase computes derived buffers from parameters and state, nothing else;
        // only it writes them (so one run of it serves every forward until they change).
        const BufferRole base_role = p.buffers[p.base(a.buffer)].role;
        if (listed(sig.writes, a.role) && (base_role == BufferRole::derived) != prepare)
          throw Error("", where,
                      prepare ? cat("the prepare phase writes only derived buffers, not the ",
                                    role_name(base_role), " \"", b.name, "\"")
                              : cat("writes the derived buffer \"", b.name,
                                    "\", which only the prepare phase computes"));
        if (prepare && !listed(sig.writes, a.role) && base_role != BufferRole::param &&
            base_role != BufferRole::state && base_role != BufferRole::derived)
          throw Error("", where,
                      cat("the prepare phase reads only parameters, state and derived buffers, "
                          "not the ",
                          role_name(base_role), " \"", b.name, "\""));
        // A tf32 buffer's writer rounds what it writes: the steps whose kernels can (a
        // conv's fused epilogue its y).
        const bool conv_y =
            a.role == "y" && (s.fn == Fn::conv2d_forward || s.fn == Fn::conv2d_forward_split ||
                              s.fn == Fn::conv2d_pool_forward);
        if (listed(sig.writes, a.role) && b.tf32 && s.fn != Fn::convert &&
            s.fn != Fn::conv2d_fold_bn && !conv_y)
          throw Error("", where,
                      cat(def.name, " cannot write the tf32-rounded buffer \"", b.name,
                          "\" (convert, conv2d.fold_bn and the conv forwards' y round what they "
                          "write)"));
        if (!dtype_fits(def, a.role, b.dtype))
          throw Error("", where, cat("argument \"", a.role, "\" has dtype ", dtype_name(b.dtype)));
      }
      if (s.sparse.guard != Guard::none) {
        if (!def.guardable) throw Error("", where, cat(def.name, " cannot be guarded"));
        if (s.arg("nnz") < 0) throw Error("", where, "a guarded step reads \"nnz\"");
        if (s.sparse.threshold < 0)
          throw Error("", where, "the guard's threshold must not be negative");
        if (s.kind == StepKind::library)
          throw Error("", where, "a library step cannot test a guard on the device");
      } else if (def.guardable && s.arg("nnz") >= 0) {
        throw Error("", where, "reads \"nnz\" but has no guard");
      }
      check_step(StepCheck{p, s, cat(where, " (", def.name, " of ", s.node, ")")}, def);
    }
  // Every derived buffer has its step in the prepare phase.
  std::vector<char> prepared(size_t(nb), 0);
  if (const Phase* ph = p.phase("prepare"))
    for (const Step& s : ph->steps)
      for (const Arg& a : s.args)
        if (fn_writes(s.fn, a.role)) prepared[size_t(p.base(a.buffer))] = 1;
  for (int i = 0; i < nb; ++i)
    if (p.buffers[i].role == BufferRole::derived && !prepared[size_t(i)])
      throw Error("", cat("buffer \"", p.buffers[i].name, "\""),
                  "is derived but no step of the prepare phase computes it");
}

} // namespace kiln
