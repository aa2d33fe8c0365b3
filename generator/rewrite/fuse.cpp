#include "generator/rewrite/fuse.hpp"

#include "generator/lower/steps.hpp"
#include "runtime/ops/registry.hpp"

#include "generator/lower/plan_builder.hpp"

#include <map>

namespace kiln {

namespace {

struct Fuser {
  Plan& p;
  std::vector<Step>& steps;
  std::vector<char> dead;

  // The single step consuming buffer b (and only as `role`), or -1.
  int sole_consumer(int b, size_t from) const {
    if (is_persistent(p.buffers[b].role)) return -1;
    for (const Buffer& v : p.buffers)
      if (v.view_of == b) return -1;
    int found = -1;
    for (size_t i = from; i < steps.size(); ++i) {
      if (dead[i]) continue;
      for (const Arg& a : steps[i].args)
        if (a.buffer == b) {
          if (found >= 0 && found != int(i)) return -1;
          found = int(i);
        }
    }
    return found;
  }

  int fresh(const std::string& name, const Shape& shape, DType dtype) {
    p.buffers.push_back(Buffer{name, shape, dtype, BufferRole::activation, 0, -1});
    return int(p.buffers.size()) - 1;
  }

  void set_arg(Step& s, const std::string& role, int b) {
    for (Arg& a : s.args)
      if (a.role == role) {
        a.buffer = b;
        return;
      }
    s.args.push_back({role, b});
  }

  // Fuses what follows step i; the fused step moves to the position of the last step it absorbed.
  void fuse_from(size_t i) {
    Step& head = steps[i];
    size_t last = i;
    const bool conv = head.fn == Fn::conv2d_forward;
    std::vector<Step> before; // steps to insert before the fused one (fold_bn)
    if (conv) {
      const int c = sole_consumer(head.need("y"), i + 1);
      if (c >= 0 && steps[c].fn == Fn::batchnorm_forward && steps[c].need("x") == head.need("y") &&
          steps[c].epilogue.activation == Activation::none) {
        const Step& bn = steps[c];
        const Shape w_shape = p.buffers[head.need("w")].shape;
        const DType w_dtype = p.buffers[head.need("w")].dtype;
        Step fold = step_like(head, Fn::conv2d_fold_bn);
        fold.node = head.node + "+" + bn.node;
        fold.params = FoldBn{bn.attrs.eps};
        fold.args = {{"w", head.need("w")}};
        if (head.arg("b") >= 0) fold.args.push_back({"b", head.arg("b")});
        for (const char* r : {"weight", "bias", "running_mean", "running_var"})
          fold.args.push_back({r, bn.need(r)});
        const int wo = fresh("fold:" + head.node + ".w", w_shape, w_dtype);
        const int bo = fresh("fold:" + head.node + ".b", {w_shape[0]}, w_dtype);
        fold.args.push_back({"w_out", wo});
        fold.args.push_back({"b_out", bo});
        before.push_back(fold);
        set_arg(head, "w", wo);
        set_arg(head, "b", bo);
        set_arg(head, "y", bn.need("y"));
        head.node = fold.node;
        dead[c] = 1;
        last = std::max(last, size_t(c));
      }
      const int a = sole_consumer(head.need("y"), i + 1);
      if (a >= 0 && steps[a].fn == Fn::add_forward && steps[a].variadic('x').size() == 2) {
        const auto xs = steps[a].variadic('x');
        const int y = head.need("y");
        const int other = xs[0] == y ? xs[1] : xs[0];
        if (other != y) {
          head.args.push_back({"residual", other});
          set_arg(head, "y", steps[a].need("y"));
          head.node += "+" + steps[a].node;
          dead[a] = 1;
          last = std::max(last, size_t(a));
        }
      }
    }
    if (conv || head.fn == Fn::linear_forward || head.fn == Fn::batchnorm_forward) {
      const int r = sole_consumer(head.need("y"), i + 1);
      const auto act_of = r >= 0 ? fn_def(steps[r].fn).activation : nullptr;
      const Activation act = act_of ? act_of(steps[r].attrs) : Activation::none;
      if (act != Activation::none && !steps[r].accumulate) {
        head.epilogue.activation = act;
        set_arg(head, "y", steps[r].need("y"));
        head.node += "+" + steps[r].node;
        dead[r] = 1;
        last = std::max(last, size_t(r));
      }
    }
    if (last == i && before.empty()) return;
    // Move: the fused step (preceded by its fold) takes the place of the last absorbed step.
    Step fused = std::move(head);
    dead[i] = 1;
    before.push_back(std::move(fused));
    pending[last] = std::move(before);
    dead[last] = 1;
  }

  std::map<size_t, std::vector<Step>> pending;
};

} // namespace

int fuse_epilogues(Plan& p) {
  if (p.train || p.phases.empty()) return 0;
  std::vector<Step>& steps = p.phases[0].steps;
  Fuser f{p, steps, std::vector<char>(steps.size(), 0), {}};
  for (size_t i = 0; i < steps.size(); ++i) {
    if (f.dead[i]) continue;
    const Fn fn = steps[i].fn;
    if (fn == Fn::conv2d_forward || fn == Fn::linear_forward || fn == Fn::batchnorm_forward)
      f.fuse_from(i);
  }
  std::vector<Step> out;
  int removed = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (auto it = f.pending.find(i); it != f.pending.end()) {
      for (Step& s : it->second)
        out.push_back(std::move(s));
      continue;
    }
    if (f.dead[i]) {
      ++removed;
      continue;
    }
    out.push_back(std::move(steps[i]));
  }
  steps = std::move(out);
  return removed;
}

} // namespace kiln
