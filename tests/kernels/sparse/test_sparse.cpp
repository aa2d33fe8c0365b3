// The sparse group (conv/sparse_compact.cuh, conv/sparse.cuh, conv/sparse_backward_weight.cuh)
// and the dense side of a dispatch (GUARD in conv/direct.cuh, implicit_gemm.cuh and
// backward_weight.cuh). Every variant compiles with NVRTC for sm_75, sm_80 and sm_90 without
// spilling; on the emulator (all checks on) every variant matches the f64 reference at input
// densities 0, 1%, 10%, 40%, 70% and 100%, for 1x1, 3x3, 5x5 and 7x7 kernels, strides 1 and 2,
// padding 0, 1 and asymmetric, dilation 2, groups 1 and 2, sizes no multiple of the tiles;
// a guarded kernel whose guard fails writes nothing; results are bit-identical run to run.
#include "tests/kernels/harness.hpp"

#include "runtime/executor.hpp"
#include "runtime/layout_order.hpp"
#include "runtime/op.hpp"
#include "runtime/param_init.hpp"
#include "runtime/sparse_form.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

const std::set<std::string> kFamilies = {"sparse_compact", "conv2d_sparse",
                                         "conv2d_backward_weight_sparse", "partial_sum"};
constexpr DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
constexpr Layout nchw = Layout::nchw, nhwc = Layout::nhwc;
const double kDensities[] = {0.0, 0.01, 0.1, 0.4, 0.7, 1.0};

struct Conv {
  int64_t n, c, h, w, o;
  Int2 k, s = {1, 1}, p = {0, 0}, d = {1, 1};
  int64_t groups = 1;
  Int2 pe = {-1, -1}; // padding after the input (-1: as p)

  Attrs attrs(bool bias) const {
    Attrs a;
    a.out_channels = o, a.kernel = k, a.stride = s, a.padding = p, a.dilation = d;
    a.groups = groups, a.bias = bias, a.padding_end = pe;
    return a;
  }
  Shape x() const { return {n, c, h, w}; }
  Shape wt() const { return {o, c / groups, k[0], k[1]}; }
  Shape y() const {
    const Int2 e = padding_end(attrs(false));
    return {n, o, window_out(h, k[0], s[0], p[0], e[0], d[0], false),
            window_out(w, k[1], s[1], p[1], e[1], d[1], false)};
  }
  // The slice size kiln plans for this convolution's input.
  int64_t cs() const {
    int64_t cs = 1;
    while (cs < std::min<int64_t>(32, c / groups))
      cs *= 2;
    return cs;
  }
  std::string name() const {
    return fmt::format("{}x{}x{}x{}->{} k{}x{} s{}x{} p{}x{}{} d{}x{} g{}", n, c, h, w, o, k[0],
                       k[1], s[0], s[1], p[0], p[1],
                       pe[0] < 0 ? "" : fmt::format(" pe{}x{}", pe[0], pe[1]), d[0], d[1], groups);
  }
};

std::vector<ArgSpec> form(const Shape& x, int64_t cs, DType t, const FormRoles& roles = kFormOfX) {
  const SparseForm f = SparseForm::of(x, cs);
  return {{roles.values, f.values_shape(), t},
          {roles.index, f.values_shape(), DType::u8},
          {roles.count, f.count_shape(), DType::u8}};
}

enum Epi { kNone = 0, kBias = 1, kRes = 2, kRelu = 4 };

StepSpec sparse_forward(const Conv& cv, DType t, Layout lay, int epi, Guard guard = Guard::none,
                        Layout wlay = nchw) {
  StepSpec s;
  s.label = fmt::format("forward_sparse {} {} {}{}{}{}{}{}", cv.name(), dtype_name(t),
                        layout_name(lay), wlay == nhwc ? " w-ohwi" : "", epi & kBias ? " bias" : "",
                        epi & kRes ? " residual" : "", epi & kRelu ? " relu" : "",
                        guard == Guard::sparse ? " guarded" : "");
  s.fn = Fn::conv2d_forward_sparse;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(epi & kBias);
  s.args = {{"x", cv.x(), t, lay}};
  for (const ArgSpec& a : form(cv.x(), cv.cs(), t))
    s.args.push_back(a);
  s.args.push_back({"w", cv.wt(), t, wlay});
  if (epi & kBias) s.args.push_back({"b", {cv.o}, t});
  if (epi & kRes) s.args.push_back({"residual", cv.y(), t, lay});
  if (guard != Guard::none) s.args.push_back({"nnz", {1}, DType::i32});
  s.args.push_back({"y", cv.y(), t, lay});
  s.epilogue.activation = epi & kRelu ? Activation::relu : Activation::none;
  s.sparse.guard = guard;
  s.sparse.threshold = guard != Guard::none ? numel(cv.x()) / 2 : 0;
  return s;
}

// A conv that compacts its own output (y's form with slices of ycs) for the next sparse conv:
// the dense direct kernel's epilogue, or the sparse kernel's.
StepSpec compacting(const Conv& cv, DType t, Layout lay, int64_t ycs, bool count, bool sparse) {
  StepSpec s = sparse ? sparse_forward(cv, t, lay, kBias | kRelu) : StepSpec{};
  if (!sparse) {
    s.fn = Fn::conv2d_forward;
    s.op = OpKind::conv2d;
    s.attrs = cv.attrs(true);
    s.args = {{"x", cv.x(), t, lay}, {"w", cv.wt(), t}, {"b", {cv.o}, t}, {"y", cv.y(), t, lay}};
    s.epilogue.activation = Activation::relu;
  }
  s.label = fmt::format("forward{} {} {} {} compacting y cs{}{}", sparse ? "_sparse" : "",
                        cv.name(), dtype_name(t), layout_name(lay), ycs, count ? " nnz" : "");
  for (const ArgSpec& a : form(cv.y(), ycs, t, kFormOfY))
    s.args.push_back(a);
  if (count) s.args.push_back({"y_nnz", {1}, DType::i32});
  return s;
}

// The dense side of a dispatch: conv2d.forward guarded by the input's nonzero count.
StepSpec dense_guarded(const Conv& cv, DType t, Layout lay) {
  StepSpec s;
  s.label =
      fmt::format("forward dense-guarded {} {} {}", cv.name(), dtype_name(t), layout_name(lay));
  s.fn = Fn::conv2d_forward;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(true);
  s.args = {{"x", cv.x(), t, lay},
            {"w", cv.wt(), t, lay},
            {"b", {cv.o}, t},
            {"nnz", {1}, DType::i32},
            {"y", cv.y(), t, lay}};
  s.sparse.guard = Guard::dense;
  s.sparse.threshold = numel(cv.x()) / 2;
  return s;
}

StepSpec sparse_weight(const Conv& cv, DType t, bool acc, Guard guard = Guard::none,
                       int64_t splits = 1) {
  StepSpec s;
  s.label = fmt::format("backward_weight_sparse {} {}{}{}{}", cv.name(), dtype_name(t),
                        acc ? " accumulate" : "", guard == Guard::sparse ? " guarded" : "",
                        splits > 1 ? fmt::format(" split {}", splits) : "");
  s.fn = Fn::conv2d_backward_weight_sparse;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(false);
  s.args = {{"x", cv.x(), t}};
  for (const ArgSpec& a : form(cv.x(), cv.cs(), t))
    s.args.push_back(a);
  s.args.push_back({"dy", cv.y(), t});
  if (guard != Guard::none) s.args.push_back({"nnz", {1}, DType::i32});
  if (splits > 1) {
    Shape ps = cv.wt();
    ps.insert(ps.begin(), splits);
    s.args.push_back({"partial", ps, DType::f32});
  } else {
    s.args.push_back({"dw", cv.wt(), t});
  }
  s.accumulate = acc;
  s.sparse.guard = guard;
  s.sparse.threshold = guard != Guard::none ? numel(cv.x()) / 2 : 0;
  return s;
}

// The completion of a split weight gradient: dw (+)= the sum of the partial sums.
StepSpec partial_sum(const Conv& cv, int64_t splits, DType t, bool acc, Guard guard) {
  StepSpec s;
  s.label = fmt::format("partial.sum {} of {} {}{}{}", splits, shape_str(cv.wt()), dtype_name(t),
                        acc ? " accumulate" : "", guard == Guard::sparse ? " guarded" : "");
  s.fn = Fn::partial_sum;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(false);
  Shape ps = cv.wt();
  ps.insert(ps.begin(), splits);
  s.args = {{"partial", ps, DType::f32}};
  if (guard != Guard::none) s.args.push_back({"nnz", {1}, DType::i32});
  s.args.push_back({"dst", cv.wt(), t});
  s.accumulate = acc;
  s.sparse.guard = guard;
  s.sparse.threshold = 100;
  return s;
}

StepSpec dense_weight_guarded(const Conv& cv, DType t) {
  StepSpec s;
  s.label = fmt::format("backward_weight dense-guarded {} {}", cv.name(), dtype_name(t));
  s.fn = Fn::conv2d_backward_weight;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(false);
  s.args = {{"x", cv.x(), t}, {"dy", cv.y(), t}, {"nnz", {1}, DType::i32}, {"dw", cv.wt(), t}};
  s.sparse.guard = Guard::dense;
  s.sparse.threshold = numel(cv.x()) / 2;
  return s;
}

enum Pre { kCompact, kReluPre, kBnPre, kBnReluPre };

// A compaction of x [n, c, h, w] with slices of cs: alone, or fused into its producer.
StepSpec compaction(Shape x, int64_t cs, DType t, Layout lay, Pre pre, bool count) {
  StepSpec s;
  const char* what[] = {"sparse.compact", "relu+compact", "batchnorm+compact",
                        "batchnorm+relu+compact"};
  s.label = fmt::format("{} {} cs{} {} {}{}", what[pre], shape_str(x), cs, dtype_name(t),
                        layout_name(lay), count ? " nnz" : "");
  s.fn = pre == kCompact   ? Fn::sparse_compact
         : pre == kReluPre ? Fn::relu_forward
                           : Fn::batchnorm_forward;
  s.op = pre == kCompact || pre == kReluPre ? OpKind::relu : OpKind::batchnorm;
  s.args = {{"x", x, t, lay}};
  if (pre == kBnPre || pre == kBnReluPre)
    for (const char* r : {"weight", "bias", "running_mean", "running_var"})
      s.args.push_back({r, {x[1]}, t});
  if (pre != kCompact) s.args.push_back({"y", x, t, lay});
  const FormRoles& roles = pre == kCompact ? kFormOfX : kFormOfY;
  for (const ArgSpec& a : form(x, cs, t, roles))
    s.args.push_back(a);
  if (count) s.args.push_back({roles.nnz, {1}, DType::i32});
  s.epilogue.activation = pre == kBnReluPre ? Activation::relu : Activation::none;
  return s;
}

// The convolutions of the exactness matrix.
const Conv k1{2, 16, 7, 9, 24, {1, 1}};
const Conv k3{1, 40, 9, 11, 36, {3, 3}, {1, 1}, {1, 1}}; // two slices, the last partial
const Conv k3s2{2, 12, 13, 11, 20, {3, 3}, {2, 2}, {1, 1}};
const Conv k5{1, 8, 11, 13, 12, {5, 5}, {1, 1}, {2, 2}};
const Conv k7s2{1, 6, 17, 15, 10, {7, 7}, {2, 2}, {3, 3}};
const Conv k3d2{1, 16, 11, 9, 16, {3, 3}, {1, 1}, {2, 2}, {2, 2}};
const Conv k3g2{1, 24, 9, 9, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 2}; // slices straddle the groups
const Conv k3p0{1, 8, 10, 10, 8, {3, 3}};
const Conv asym{1, 8, 9, 10, 8, {3, 3}, {1, 1}, {1, 0}, {1, 1}, 1, {0, 2}};
const Conv k1s2g2{2, 16, 9, 7, 16, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 2};
const Conv wide{1, 64, 6, 5, 96, {3, 3}, {1, 1}, {1, 1}}; // several output-channel tiles

std::vector<StepSpec> forward_specs() {
  return {
      sparse_forward(k1, f32, nhwc, kBias | kRelu),
      sparse_forward(k3, f32, nhwc, kBias | kRes | kRelu, Guard::sparse),
      sparse_forward(k3s2, f32, nchw, kBias),
      sparse_forward(k5, f16, nhwc, kRelu),
      sparse_forward(k7s2, f32, nchw, kBias | kRelu, Guard::none, nhwc),
      sparse_forward(k3d2, bf16, nhwc, kRes),
      sparse_forward(k3g2, f32, nhwc, kBias | kRelu, Guard::sparse),
      sparse_forward(k3p0, f32, nchw, kNone),
      sparse_forward(asym, f16, nchw, kBias),
      sparse_forward(k1s2g2, f32, nhwc, kRes | kRelu),
      sparse_forward(wide, f32, nhwc, kBias),
  };
}

std::vector<StepSpec> weight_specs() {
  return {
      sparse_weight(k1, f32, false),   sparse_weight(k3, f32, true, Guard::sparse),
      sparse_weight(k3s2, f16, false), sparse_weight(k7s2, f32, false),
      sparse_weight(k3d2, f32, true),  sparse_weight(k3g2, bf16, false),
      sparse_weight(asym, f32, false), sparse_weight(k1s2g2, f32, true),
      // Split over ranges of the input's rows: 3 (ranges end inside images and tiles), and
      // one range per row of both images.
      sparse_weight(k3s2, f32, false, Guard::sparse, 3),
      sparse_weight(k1s2g2, f16, false, Guard::none, 18),
      partial_sum(k3, 3, f32, false, Guard::none),
      partial_sum(k3g2, 5, bf16, true, Guard::sparse),
  };
}

std::vector<StepSpec> compaction_specs() {
  return {
      compaction({2, 40, 7, 9}, 32, f32, nhwc, kCompact, true),
      compaction({1, 24, 9, 7}, 16, f32, nchw, kCompact, false),
      compaction({1, 5, 11, 9}, 8, f16, nhwc, kCompact, true),
      compaction({2, 70, 5, 3}, 64, f32, nchw, kCompact, true),
      compaction({1, 3, 9, 9}, 4, bf16, nchw, kCompact, false),
      compaction({2, 40, 7, 9}, 32, f32, nchw, kReluPre, true),
      compaction({1, 48, 5, 7}, 32, f16, nhwc, kReluPre, false),
      compaction({2, 24, 7, 5}, 32, f32, nhwc, kBnReluPre, true),
      compaction({1, 12, 9, 7}, 16, bf16, nchw, kBnPre, true),
  };
}

// The dense side of dispatches, on the families that serve conv2d.forward and its weight
// gradient (direct, implicit GEMM on tensor cores, backward weight).
std::vector<StepSpec> guard_specs() {
  return {dense_guarded(k3, f32, nhwc),
          dense_guarded(k3s2, f16, nhwc),
          dense_guarded(k5, f32, nchw),
          dense_weight_guarded(k3d2, f32),
          compacting(k3, f32, nhwc, 32, true, false),
          compacting(k3g2, bf16, nchw, 8, false, false),
          compacting(k3s2, f32, nchw, 4, true, true),
          compacting(wide, f16, nhwc, 32, true, true)};
}

std::vector<Built> ours(std::vector<Built> built) {
  std::erase_if(built, [](const Built& b) { return !kFamilies.count(b.variant.family); });
  return built;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One built case's plan run once on the emulator: the outputs' bytes; `nnz` (when the step
// reads one) set to make its guard pass or fail; outputs start as `fill`.
std::vector<std::vector<std::byte>> run_once(const Built& b, const BackendFactory& emu, bool pass,
                                             uint8_t fill) {
  const Plan p = spec_plan(b.spec);
  Plan dev = single_step_plan(p, p.phases[0].steps[0], nullptr, false);
  dev.kernels.push_back(kernel_of(b.variant));
  dev.phases[0].steps[0].kind = StepKind::launch;
  dev.phases[0].steps[0].kernel = 0;
  auto backend = emu();
  Executor ex(dev, *backend, {false, {}});
  const Step& st = dev.phases[0].steps[0];
  uint64_t seed = 42;
  for (const Arg& a : st.args) {
    const Buffer& buf = dev.buffers[a.buffer];
    Tensor t(buf.dtype, buf.shape);
    const bool out = buf.role == BufferRole::output;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double u = double(splitmix64(seed) >> 11) * 0x1.0p-53;
      if (out) continue;
      if (a.role.ends_with("index") || a.role.ends_with("count")) continue;
      t.set(i, u < 0.3 ? 2 * u - 0.3 : 0.0); // 30% nonzeros
    }
    if (out) std::memset(t.bytes(), fill, t.nbytes());
    if (a.role == "values" || a.role == "index" || a.role == "count") {
      // A valid form: every unit empty but the first slot of each, channel 0.
      if (a.role == "count")
        for (int64_t i = 0; i < t.numel(); ++i)
          t.set(i, 1);
      if (a.role == "values")
        for (int64_t i = 0; i < t.numel(); ++i)
          t.set(i, 0.5);
    }
    if (a.role == "nnz")
      t.set(0, double(pass == (st.sparse.guard == Guard::dense) ? st.sparse.threshold + 1
                                                                : st.sparse.threshold));
    ex.write(a.buffer, to_memory_order(t, buf.layout));
  }
  ex.run("forward");
  std::vector<std::vector<std::byte>> outs;
  for (const Arg& a : st.args)
    if (dev.buffers[a.buffer].role == BufferRole::output) {
      const Tensor t = ex.read(a.buffer);
      outs.emplace_back(t.bytes(), t.bytes() + t.nbytes());
    }
  return outs;
}

} // namespace

TEST_CASE("sparse group variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> unserved;
  const std::vector<StepSpec> specs = {
      sparse_forward(k3, f32, nhwc, kBias | kRes | kRelu, Guard::sparse),
      sparse_forward(k7s2, f16, nchw, kBias, Guard::none, nhwc),
      sparse_forward(k3g2, bf16, nhwc, kRelu),
      sparse_weight(k3, f32, true, Guard::sparse),
      sparse_weight(k7s2, f16, false),
      sparse_weight(k3s2, bf16, false, Guard::sparse, 4),
      partial_sum(k3, 4, f16, true, Guard::sparse),
      compaction({2, 40, 7, 9}, 32, f32, nhwc, kBnReluPre, true),
      compaction({1, 5, 11, 9}, 8, bf16, nchw, kReluPre, false),
      compaction({2, 70, 5, 3}, 64, f16, nchw, kCompact, true),
  };
  auto built = ours(all_variants(specs, {"t4", "a100", "h200"}, &unserved));
  for (const std::string& u : unserved)
    FAIL_CHECK("no variant for " << u);
  // Every configuration on sm_90; on sm_75 and sm_80, one per step (the architecture's code
  // paths are the same for all tile shapes).
  std::set<std::string> seen;
  std::erase_if(built, [&](const Built& b) {
    return b.gpu != "h200" && !seen.insert(b.spec.label + b.gpu + b.variant.family).second;
  });
  for (const StepSpec& g : guard_specs())
    for (Built& b : all_variants({g}, {"t4", "h200"}))
      built.push_back(b); // the dense templates' guard
  const auto failures = nvrtc_failures(built);
  for (const std::string& f : failures)
    FAIL_CHECK(f);
  MESSAGE(built.size() << " variants compiled in " << seconds_since(t0) << " s");
}

// Every variant of the sparse group and the guarded dense kernels, on the H200.
std::vector<Built> emulated() {
  std::vector<StepSpec> specs = forward_specs();
  for (auto* more : {&weight_specs, &compaction_specs})
    for (StepSpec& s : (*more)())
      specs.push_back(s);
  std::vector<std::string> unserved;
  auto built = ours(all_variants(specs, {"h200"}, &unserved));
  for (const std::string& u : unserved)
    FAIL_CHECK("no variant for " << u);
  for (const StepSpec& g : guard_specs())
    for (Built& b : all_variants({g}, {"h200"}))
      built.push_back(b);
  return built;
}

TEST_CASE("sparse group variants match the reference on the emulator at every density") {
  const auto t0 = std::chrono::steady_clock::now();
  const auto built = emulated();
  const BackendFactory emu = emu_library(built, temp_dir("kiln-sparse"));
  int runs = 0;
  for (const Built& b : built)
    for (double d : kDensities) {
      const KernelCheck r = emu_check(b, emu, 1, d);
      INFO(r.node << " at density " << d << ": " << r.kernel << " rel " << r.rel << " " << r.error);
      CHECK(r.pass);
      if (getenv("KILN_TEST_VERBOSE"))
        MESSAGE(r.node << " d=" << d << " rel " << r.rel << " max " << r.max_abs);
      ++runs;
    }
  MESSAGE(built.size() << " variants, " << runs << " runs in " << seconds_since(t0) << " s");
}

TEST_CASE("guarded kernels write nothing when the guard fails; bit-identical runs (emulator)") {
  const auto built = emulated();
  const BackendFactory emu = emu_library(built, temp_dir("kiln-sparse-guard"));
  int guarded = 0;
  for (const Built& b : built) {
    if (b.spec.sparse.guard == Guard::none) continue;
    INFO(b.spec.label << ": " << b.variant.name);
    ++guarded;
    int64_t changed = 0;
    for (const auto& out : run_once(b, emu, false, 0xa5))
      for (std::byte x : out)
        changed += x != std::byte(0xa5);
    CHECK(changed == 0);
    bool wrote = false;
    for (const auto& out : run_once(b, emu, true, 0xa5))
      for (std::byte x : out)
        wrote |= x != std::byte(0xa5);
    CHECK(wrote);
  }
  CHECK(guarded >= 8);
  for (const Built& b : built) {
    INFO(b.spec.label << ": " << b.variant.name);
    CHECK(run_once(b, emu, true, 0x11) == run_once(b, emu, true, 0x11));
  }
}
