// Split-K completed inside the implicit GEMM (conv2d.forward_split, linear.forward_split;
// templates/conv/igemm/split_reduce.cuh): the variants compile with NVRTC for sm_75, sm_80
// and sm_90; they match the f64 reference on the emulator with the whole epilogue (bias,
// residual, relu) in f16, bf16 and f32 (tf32) for S = 2, 3 and ranges of k that do not divide
// K evenly, and leave their tile counters at zero; two runs (on one and on several emulator
// workers, so the tiles' blocks arrive in other orders) give the same bits, a second launch
// without re-zeroing the counters is still complete, and the result is bit for bit the
// two-step form's (forward_partial, then partial.sum): the slices are added in order 0..S-1.
#include "tests/kernels/harness.hpp"

#include "generator/check/kernel_check.hpp"
#include "generator/compile/compile_dir.hpp"
#include "runtime/emu/backend.hpp"
#include "runtime/executor.hpp"
#include "runtime/layout_order.hpp"
#include "runtime/tensor.hpp"

#include <cstring>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <map>
#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr DType kTypes[] = {DType::f16, DType::bf16, DType::f32};

struct Case {
  std::string label;
  int64_t n, c, h, w, o, k, pad, slices;
  bool bias, residual, relu;
};

// K = 9 * 40 = 360 (23 k steps of 16: 3 ranges of 7, 8, 8), K = 64 (S = 2), K = 9 * 24
// = 216 over 3, an odd O, M below one tile, and M x O of several tiles (a counter each).
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"c40 3x3 p1 o24 s3", 2, 40, 5, 5, 24, 3, 1, 3, true, true, true},
      {"c64 1x1 o72 s2", 2, 64, 3, 3, 72, 1, 0, 2, true, true, true},
      {"c24 3x3 p1 o17 s3 odd", 1, 24, 4, 3, 17, 3, 1, 3, true, true, true},
      {"c32 3x3 o40 s2 no bias", 1, 32, 5, 5, 40, 3, 0, 2, false, false, true},
      {"c16 3x3 p1 o136 s2 many tiles", 2, 16, 12, 12, 136, 3, 1, 2, true, true, true},
  };
  return c;
}

Shape y_shape(const Case& c) {
  const int64_t oh = c.h + 2 * c.pad - c.k + 1, ow = c.w + 2 * c.pad - c.k + 1;
  return {c.n, c.o, oh, ow};
}

Attrs conv_attrs(const Case& c) {
  Attrs a;
  a.out_channels = c.o;
  a.kernel = {c.k, c.k};
  a.padding = {c.pad, c.pad};
  a.bias = c.bias;
  return a;
}

// conv2d.forward_split: x, w, [b], [residual], tickets -> y, partial.
StepSpec split_spec(const Case& c, DType t) {
  StepSpec s{c.label + " in-kernel " + std::string(dtype_name(t)),
             Fn::conv2d_forward_split,
             OpKind::conv2d,
             conv_attrs(c),
             {}};
  const Shape y = y_shape(c);
  Shape partial = y;
  partial[0] *= c.slices;
  s.args.push_back({"x", {c.n, c.c, c.h, c.w}, t, Layout::nhwc});
  s.args.push_back({"w", {c.o, c.c, c.k, c.k}, t, Layout::nhwc});
  if (c.bias) s.args.push_back({"b", {c.o}, t});
  if (c.residual) s.args.push_back({"residual", y, t, Layout::nhwc});
  s.args.push_back({"tickets", {128}, DType::i32});
  s.args.push_back({"y", y, t, Layout::nhwc});
  s.args.push_back({"partial", partial, DType::f32, Layout::nhwc});
  s.epilogue.activation = c.relu ? Activation::relu : Activation::none;
  return s;
}

// linear.forward_split: x [N, F], w, b, tickets -> y, partial; F = 200 over 4 ranges.
StepSpec linear_split_spec(DType t) {
  Attrs a;
  a.out_features = 24;
  StepSpec s{fmt::format("linear 3x200->24 in-kernel s4 {}", dtype_name(t)),
             Fn::linear_forward_split,
             OpKind::linear,
             a,
             {}};
  s.args = {{"x", {3, 200}, t},           {"w", {24, 200}, t}, {"b", {24}, t},
            {"tickets", {8}, DType::i32}, {"y", {3, 24}, t},   {"partial", {12, 24}, DType::f32}};
  s.epilogue.activation = Activation::relu;
  return s;
}

std::vector<StepSpec> specs() {
  std::vector<StepSpec> out;
  for (DType t : kTypes) {
    for (const Case& c : cases())
      out.push_back(split_spec(c, t));
    out.push_back(linear_split_spec(t));
  }
  return out;
}

std::vector<Built> ours(std::vector<Built> all) {
  std::erase_if(all, [](const Built& b) {
    return b.variant.family != "conv2d_implicit_gemm" && b.variant.family != "linear_implicit_gemm";
  });
  return all;
}

// Random data for every input of a one-step device plan (zero counters), poison in its
// outputs.
std::map<int, Tensor> inputs_of(const Plan& p, uint64_t seed) {
  std::map<int, Tensor> in;
  const Step& s = p.phases.back().steps[0];
  for (const Arg& a : s.args) {
    const Buffer& b = p.buffers[size_t(a.buffer)];
    Tensor t(b.dtype, b.shape);
    if (is_float(b.dtype))
      for (int64_t e = 0; e < t.numel(); ++e) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        t.set(e, b.role == BufferRole::output ? NAN : double(seed >> 40) / double(1 << 24) - 0.5);
      }
    in.emplace(a.buffer, to_memory_order(t, b.layout));
  }
  return in;
}

// The raw bytes of a buffer as the device holds it.
std::vector<unsigned char> bytes_of(Executor& e, int buffer) {
  const Tensor t = e.read(buffer);
  std::vector<unsigned char> out(t.nbytes());
  std::memcpy(out.data(), t.bytes(), out.size());
  return out;
}

} // namespace

TEST_CASE("in-kernel split-K implicit GEMM variants compile with NVRTC for sm_75, sm_80, sm_90") {
  std::vector<Built> built = ours(all_variants(specs(), {"t4", "a100", "h200"}));
  // One tile per layer and GPU, but every tile for the first layer (the split's registers on
  // top of the main loop's, within each tile's launch bounds, spilling nothing it promises).
  std::set<std::string> seen;
  std::erase_if(built, [&](const Built& b) {
    return b.spec.label.rfind(cases()[0].label, 0) != 0 &&
           !seen.insert(b.spec.label + b.gpu).second;
  });
  CHECK(seen.size() == (specs().size() / 3 - 1) * 7); // sm_75 has f16 tensor cores only
  CHECK(built.size() >= seen.size() + 7 * 4);
  for (const Built& b : built) {
    INFO(b.variant.name);
    CHECK(b.variant.name.find("reduce") != std::string::npos);
    CHECK(b.variant.args.back() == "tickets");
  }
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("in-kernel split-K implicit GEMM matches the reference on the emulator") {
  // Each layer on the largest and the smallest tile offered (the most tiles, and counters).
  std::map<std::string, std::vector<Built>> per;
  std::vector<std::string> unserved;
  for (Built& b : ours(all_variants(specs(), {"h200"}, &unserved)))
    per[b.spec.label].push_back(std::move(b));
  CHECK(unserved.empty());
  CHECK(per.size() == specs().size());
  std::vector<Built> chosen;
  for (auto& [label, all] : per) {
    chosen.push_back(all.front());
    if (all.size() > 1) chosen.push_back(all.back());
  }
  // check_step also fails a kernel that leaves a tile counter other than zero.
  for (const KernelCheck& r : emu_checks(chosen, temp_dir("kiln-igemm-split-in-kernel"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}

TEST_CASE("in-kernel split-K on the emulator is bit-identical over runs, arrival orders and the "
          "two-step form") {
  for (DType t : kTypes) {
    const Case& c = cases()[0]; // S = 3 uneven ranges, the whole epilogue
    const StepSpec in_spec = split_spec(c, t);
    // The two-step form of the same layer: forward_partial, then partial.sum.
    StepSpec part_spec = in_spec;
    part_spec.label = c.label + " partial " + std::string(dtype_name(t));
    part_spec.fn = Fn::conv2d_forward_partial;
    part_spec.epilogue = {};
    part_spec.args = {in_spec.args[0], in_spec.args[1], in_spec.args.back()};
    StepSpec sum_spec;
    sum_spec.label = c.label + " sum " + std::string(dtype_name(t));
    sum_spec.fn = Fn::partial_sum;
    sum_spec.epilogue = in_spec.epilogue;
    sum_spec.args = {in_spec.args.back(), in_spec.args[2], in_spec.args[3]};
    sum_spec.args.push_back(in_spec.args[5]);
    sum_spec.args.back().role = "dst";
    std::vector<Built> built;
    for (const StepSpec* s :
         std::initializer_list<const StepSpec*>{&in_spec, &part_spec, &sum_spec}) {
      std::vector<Built> all = all_variants({*s}, {"h200"});
      std::erase_if(all, [](const Built& b) { // this family's (the Hopper one's: test_hopper_split)
        return b.variant.family == "conv2d_direct" || b.variant.family == "conv2d_wgmma" ||
               b.variant.family == "conv2d_hopper_wgmma";
      });
      REQUIRE(!all.empty());
      built.push_back(all.front());
    }
    INFO(built[0].variant.name);
    const std::string dir = temp_dir("kiln-igemm-split-bits");
    emu_library(built, dir); // compiles the library; the backends below open it
    const std::string lib = emu_library_path(dir);

    const Plan in_plan = spec_plan(in_spec);
    const Kernel kin = kernel_of(built[0].variant), kpart = kernel_of(built[1].variant),
                 ksum = kernel_of(built[2].variant);
    const Plan dev = single_step_plan(in_plan, in_plan.phases[0].steps[0], &kin, false);
    const Step& st = dev.phases.back().steps[0];
    const int y = st.need("y"), tickets = st.need("tickets");
    const std::map<int, Tensor> in = inputs_of(dev, 7);
    std::vector<unsigned char> first;
    for (unsigned workers : {1u, 3u, 4u}) {
      EmuBackend backend(lib, EmuOptions{KILN_EMU_CHECK_ALL, workers});
      Executor e(dev, backend);
      for (const auto& [b, tensor] : in)
        e.write(b, tensor);
      for (int run = 0; run < 2; ++run) { // the second without re-zeroing the counters
        e.write(y, in.at(y));             // poisoned again: the run must write all of y
        e.run("forward");
        const std::vector<unsigned char> got = bytes_of(e, y);
        if (first.empty()) first = got;
        INFO("workers " << workers << " run " << run);
        CHECK(got == first);
        const Tensor tk = e.read(tickets);
        for (int64_t i = 0; i < tk.numel(); ++i)
          REQUIRE(tk.get(i) == 0);
      }
    }
    // The two-step form, the partial slices handed from one kernel to the other.
    const Plan part_plan = spec_plan(part_spec), sum_plan = spec_plan(sum_spec);
    const Plan pdev = single_step_plan(part_plan, part_plan.phases[0].steps[0], &kpart, false);
    const Plan sdev = single_step_plan(sum_plan, sum_plan.phases[0].steps[0], &ksum, false);
    EmuBackend backend(lib, EmuOptions{KILN_EMU_CHECK_ALL, 1});
    Executor pe(pdev, backend);
    const Step& ps = pdev.phases.back().steps[0];
    pe.write(ps.need("x"), in.at(st.need("x")));
    pe.write(ps.need("w"), in.at(st.need("w")));
    pe.run("forward");
    const Tensor slices = pe.read(ps.need("partial"));
    EmuBackend sum_backend(lib, EmuOptions{KILN_EMU_CHECK_ALL, 1});
    Executor se(sdev, sum_backend);
    const Step& ss = sdev.phases.back().steps[0];
    se.write(ss.need("partial"), slices);
    se.write(ss.need("b"), in.at(st.need("b")));
    se.write(ss.need("residual"), in.at(st.need("residual")));
    se.run("forward");
    CHECK(bytes_of(se, ss.need("dst")) == first);
  }
}
