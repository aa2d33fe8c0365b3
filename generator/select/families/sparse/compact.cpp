// templates/conv/sparse_compact.cuh seen from the generator.
#include "generator/select/epilogue.hpp"
#include "generator/select/families/launch_shape.hpp"
#include "generator/select/families/sparse/sparse_families.hpp"
#include "runtime/sparse_form.hpp"

#include <fmt/format.h>

namespace kiln {

namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kStagedElements = 2048; // a job's TP x CS values: 8 KiB of shared memory

// Slice sizes the template takes: divisors of 32, or multiples of 32 up to 224.
bool template_slice(int64_t cs) {
  return (cs <= 32 && 32 % cs == 0) || (cs % 32 == 0 && cs <= 224);
}

} // namespace

std::vector<Variant> SparseCompactFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  enum { none = 0, relu = 1, batchnorm = 2 } pre;
  if (st.fn == Fn::sparse_compact)
    pre = none;
  else if (st.fn == Fn::relu_forward && s.has(kFormOfY.values))
    pre = relu;
  else if (st.fn == Fn::batchnorm_forward && s.has(kFormOfY.values))
    pre = batchnorm;
  else
    return {};
  if (st.accumulate) return {};
  const Buffer& x = s.arg("x");
  const DType t = x.dtype;
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16) return {};
  if (x.shape.size() != 4) return {};
  for (const Arg& a : st.args) {
    const Buffer& b = s.plan.buffers[a.buffer];
    if (is_float(b.dtype) && b.dtype != t) return {};
    if (b.shape.size() == 4 && b.layout != x.layout) return {};
  }
  const FormRoles& form = pre == none ? kFormOfX : kFormOfY;
  const int64_t cs = s.shape(form.values)[2];
  if (!template_slice(cs)) return {};
  const bool count = s.has(form.nnz);
  if (count && numel(x.shape) > 2147483647) return {}; // the total is an i32
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t P = N * H * W, SL = (C + cs - 1) / cs;
  const int64_t upw = 32 / std::min<int64_t>(cs, 32);
  const bool nhwc = x.layout == Layout::nhwc;
  const double eps = st.attrs.eps;
  // The batchnorm's activation (a relu step's relu is the PRE itself).
  const Activation act = pre == batchnorm ? activation_of(st) : Activation::none;
  std::vector<Variant> out;
  // Jobs of kStagedElements, or a quarter of that for small tensors (more blocks).
  for (int64_t staged : {kStagedElements, kStagedElements / 4}) {
    const int64_t tp = std::max(upw, staged / cs) / upw * upw;
    const int64_t jobs = (P + tp - 1) / tp * SL;
    Variant v;
    v.family = "sparse_compact";
    v.header = "conv/sparse_compact.cuh";
    v.function = "kiln::conv::sparse_compact";
    const std::string what = pre == none   ? ""
                             : pre == relu ? "_relu"
                                           : "_bn" + name_number(eps) + activation_tag(act);
    v.name = fmt::format("sparse_compact{}_{}_{}_n{}c{}h{}w{}_cs{}{}_tp{}_t{}_{}", what,
                         dtype_tag(t), layout_name(x.layout), N, C, H, W, cs, count ? "_nnz" : "",
                         tp, kThreads, s.arch_tag());
    cfg_type(v, "T", cpp_type(t));
    cfg_int(v, "N", N);
    cfg_int(v, "C", C);
    cfg_int(v, "H", H);
    cfg_int(v, "W", W);
    cfg_bool(v, "NHWC", nhwc);
    cfg_int(v, "CS", cs);
    cfg_int(v, "PRE", pre);
    cfg_activation(v, act);
    cfg_float(v, "EPS", pre == batchnorm ? eps : 0.0);
    cfg_bool(v, "COUNT", count);
    cfg_int(v, "TP", tp);
    cfg_int(v, "THREADS", kThreads);
    v.args = {"x"};
    if (pre == batchnorm)
      for (const char* r : {"weight", "bias", "running_mean", "running_var"})
        v.args.push_back(r);
    if (pre != none) v.args.push_back("y");
    for (const char* r : {form.values, form.index, form.count})
      v.args.push_back(r);
    if (count) v.args.push_back(form.nnz);
    v.block = {kThreads, 1, 1};
    v.grid = {std::min(jobs, grid_stride_blocks(s.gpu, jobs * kThreads, kThreads)), 1, 1};
    v.static_smem =
        (tp * (cs + 1) * 4 + 15) / 16 * 16 + (pre == batchnorm ? 8 * cs : 16) + 4 * (kThreads / 32);
    v.registers_per_thread = 32;
    // Reads x, writes y (a producer) and the compacted form: the planned density's nonzeros
    // (value and index byte) and a count byte per unit.
    const double esize = double(dtype_size(t)), n = double(numel(x.shape));
    const double d = planned_density(st);
    v.bytes = n * esize * (pre == none ? 1 : 2) + n * d * (esize + 1) + double(P * SL);
    v.flops = n * (pre == batchnorm ? 3 : 1);
    v.efficiency = 0.6;
    v.note = fmt::format("{}jobs of {} pixels x {} channels staged in shared memory, compacted by "
                         "warp ballots (nonzeros in channel order){}",
                         pre == none   ? ""
                         : pre == relu ? "relu, then "
                                       : "batchnorm, then ",
                         tp, cs, count ? ", nonzeros counted into nnz" : "");
    if (out.empty() || out.back().name != v.name) out.push_back(std::move(v));
  }
  return out;
}

} // namespace kiln
