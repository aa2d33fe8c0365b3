// A training plan's layout, priced whole (emit/training_layout.hpp), and its rewrites:
// channels-last batchnorms over chunks of rows (rewrite/batchnorm_chunks.hpp) and stride-1
// data gradients as forward convs (rewrite/backward_data_as_conv.hpp; strided ones a conv per
// phase, rewrite/backward_data_phases.hpp). resnet50 in f16 on the
// H100 at batch 32 trains channels-last with its forward and data-gradient convs on tensor
// cores; a small resnet18 stays NCHW; a budgeted plan is not rewritten; and the rewritten
// plan, run step by step on the cpu backend, computes the gradients the reference does.
#include "generator/cost/rewrite_pays.hpp"
#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/lower/lower.hpp"
#include "generator/model/overrides.hpp"
#include "generator/run/model_source.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/executor.hpp"
#include "runtime/ops/batchnorm_chunks.hpp"
#include "runtime/param_init.hpp"
#include "runtime/weights.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <map>
#include <set>

using namespace kiln;

namespace {

Model model_of(const char* model, int64_t batch, int64_t image, DType dtype) {
  Model m = load_model_or_shipped(model);
  ModelOverrides o;
  o.dtype = dtype;
  o.batch = batch;
  if (image) o.image = Int2{image, image};
  apply_overrides(m, o);
  return m;
}

Generated train(const char* model, int64_t batch, int64_t image, const char* gpu,
                const std::string& schedule = "") {
  GenerateOptions go;
  go.train = true;
  go.schedule = schedule;
  return generate(model_of(model, batch, image, DType::f16), load_gpu(gpu), go);
}

// A training step on the cpu backend (seeded weights and input): every parameter gradient.
std::map<std::string, Tensor> gradients(const Plan& p) {
  cpu::CpuBackend backend;
  Executor ex(p, backend);
  bind_seeded_weights(ex, p, 3);
  const Buffer& in = p.buffers[size_t(p.inputs[0])];
  Tensor x(in.dtype, in.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, std::sin(0.37 * double(i)) + 0.1);
  ex.write(p.inputs[0], x);
  Tensor t(DType::i64, p.buffers[size_t(p.target)].shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, double(i % 7));
  ex.write(p.target, t);
  ex.run("forward");
  ex.run("backward");
  std::map<std::string, Tensor> out;
  for (const ParamBinding& pb : p.params)
    if (pb.grad >= 0) out.emplace(p.buffers[size_t(pb.grad)].name, ex.read(pb.grad));
  return out;
}

} // namespace

TEST_CASE("resnet50 trains channels-last on the H100: tensor-core forward convs, chunked "
          "batchnorms") {
  const Generated gen = train("resnet50", 32, 0, "h100");
  REQUIRE(gen.training_layout);
  const TrainingLayoutChoice& c = *gen.training_layout;
  MESSAGE("predicted step: nchw " << c.nchw_us << " us, nhwc " << c.nhwc_us << " us");
  CHECK(gen.layout == Layout::nhwc);
  CHECK(c.nhwc_us < 0.7 * c.nchw_us);
  CHECK(c.nhwc_library == 0);
  CHECK(gen.manifest["layout"] == "nhwc");
  // Every one of the 52 data gradients as forward convs: the 6 of stride 2 one per phase (4 for
  // the 3x3s, 1 for the 1x1 downsamples, whose other phases are zeros; the gathers were 6.2 of
  // the H100's 34.8 ms step); the weight gradients on tensor cores, most split over positions
  // (the stem's, C = 3, on CUDA cores; the wgmma ones of layer3 and layer4's 1x1 convs fill
  // the GPU in one step).
  CHECK(gen.training.backward_data_convs.size() == 52);
  std::multiset<int> phases;
  for (const BackwardDataConvDecision& d : gen.training.backward_data_convs)
    if (d.phases) phases.insert(d.phases);
  CHECK(phases == std::multiset<int>{1, 1, 1, 4, 4, 4});
  CHECK(gen.training.backward_weight_splits.size() >= 30);
  for (const BackwardWeightSplitDecision& d : gen.training.backward_weight_splits) {
    CAPTURE(d.node);
    CHECK(d.slices >= 2);
    CHECK(rewrite_pays(d.one_step_us, d.split_us));
  }
  // The step's 106 batchnorms (53 forwards, 53 backwards) all go over chunks, each where it
  // pays: layer4's 7x7 ones too since the chunked kernels read 16-byte packs of channels
  // (their one step, a block per 32 channels, an element a thread and row, ran at ~0.44 of
  // the H200's DRAM bandwidth).
  CHECK(gen.training.batchnorm_chunks.size() == 106);
  for (const BatchnormChunksDecision& d : gen.training.batchnorm_chunks) {
    CAPTURE(d.node);
    CHECK(d.chunks >= 2);
    CHECK(rewrite_pays(d.one_step_us, d.chunked_us));
  }
  // Each chunked step reads the sums its batchnorm.partials wrote just before it, of its x
  // (and dy), into an fp32 [R, 2 or 4, C] transient.
  const Plan& p = gen.plan;
  int pairs = 0;
  std::set<std::string> families;
  for (const Phase& ph : p.phases)
    for (size_t i = 0; i < ph.steps.size(); ++i) {
      const Step& s = ph.steps[i];
      if (s.kind == StepKind::launch) families.insert(p.kernels[size_t(s.kernel)].name);
      if (s.arg("partial") < 0 ||
          (s.fn != Fn::batchnorm_forward_train && s.fn != Fn::batchnorm_backward))
        continue;
      CAPTURE(s.node);
      REQUIRE(i > 0);
      const Step& w = ph.steps[i - 1];
      CHECK(w.fn == Fn::batchnorm_partials);
      CHECK(w.need("partial") == s.need("partial"));
      CHECK(w.need("x") == s.need("x"));
      const bool backward = s.fn == Fn::batchnorm_backward;
      CHECK((w.arg("dy") >= 0) == backward);
      const Buffer& part = p.buffers[size_t(s.need("partial"))];
      CHECK(part.dtype == DType::f32);
      CHECK(part.role == BufferRole::activation);
      CHECK(part.shape[1] == bn_partial_sums(backward));
      CHECK(part.shape[2] == p.buffers[size_t(s.need("x"))].shape[1]);
      ++pairs;
    }
  CHECK(pairs == 106);
  // The forward convs on the Hopper family; the gradients' convs channels-last, the stem's
  // weight gradient too (the NCHW input converted for it), split over positions on mma.sync
  // tiles that stage x an element at a time across taps (C = 3: GATHER; on CUDA cores it ran
  // 1.01 ms of the H200's 11.6 ms step, alone 7.5 ms on the H100 before it was split).
  int hopper = 0, nchw_backward = 0, hopper_wgrad = 0, other_wgrad = 0;
  for (const std::string& k : families) {
    if (k.rfind("conv2d_hopper_wgmma", 0) == 0) ++hopper;
    // Every tensor-core weight gradient on wgmma (the H100's mma.sync ones ran 6.76 of its
    // 19.1 ms of kernels) but the stem's, on mma.sync.
    if (k.rfind("conv2d_backward_weight_hopper_wgmma", 0) == 0)
      ++hopper_wgrad;
    else if (k.rfind("conv2d_backward_weight", 0) == 0)
      ++other_wgrad;
    if (k.rfind("conv2d_backward_", 0) == 0 && k.find("_nhwc_") == std::string::npos) {
      CAPTURE(k);
      ++nchw_backward;
    }
  }
  CHECK(hopper >= 25);
  CHECK(hopper_wgrad >= 20);
  CHECK(other_wgrad == 1);
  CHECK(nchw_backward == 0);
  bool stem_split = false;
  for (const BackwardWeightSplitDecision& d : gen.training.backward_weight_splits)
    stem_split |= d.node == "conv1";
  CHECK(stem_split);
  CHECK(std::any_of(families.begin(), families.end(), [](const std::string& k) {
    return k.rfind("conv2d_backward_weight_mma_f16_nhwc_n32c3h224w224", 0) == 0 &&
           k.find("_gather_") != std::string::npos && k.find("partial") != std::string::npos;
  }));
}

TEST_CASE("a training step no tensor core serves stays NCHW; a budgeted one is not rewritten") {
  // f32 on the T4: no tf32 there, so NHWC would only add conversions.
  GenerateOptions go;
  go.train = true;
  const Generated small = generate(model_of("resnet18", 8, 64, DType::f32), load_gpu("t4"), go);
  REQUIRE(small.training_layout);
  CHECK(small.layout == Layout::nchw);
  CHECK(small.training_layout->nchw_us <= small.training_layout->nhwc_us);
  CHECK(small.training.batchnorm_chunks.empty());
  const Generated budgeted = train("resnet50", 32, 0, "h100", "sqrt");
  CHECK(budgeted.training.batchnorm_chunks.empty());
  CHECK(budgeted.training.backward_data_convs.empty());
  for (const Phase& ph : budgeted.plan.phases)
    for (const Step& s : ph.steps)
      CHECK((s.fn != Fn::batchnorm_partials && s.fn != Fn::conv2d_flip_weight));
}

// The step generated channels-last for the H100 and the reference lowering, both run on the
// cpu backend: every parameter gradient within `tol` (relative, whole tensor).
static void check_rewritten(int64_t batch, DType dtype, double tol, bool splits, bool phases,
                            bool fused_adds) {
  const Model m = model_of("resnet18", batch, 64, dtype);
  GenerateOptions go;
  go.train = true;
  go.layout = Layout::nhwc;
  const Generated gen = generate(m, load_gpu("h100"), go);
  REQUIRE(!gen.training.batchnorm_chunks.empty());
  REQUIRE(!gen.training.backward_data_convs.empty());
  CHECK(gen.training.backward_weight_splits.empty() == !splits);
  // Blocks' relu(bn(x) + shortcut) in the batchnorm's epilogue (rewrite/batchnorm_activation.cpp).
  const auto& fused = gen.training.batchnorm_activations;
  CHECK(std::any_of(fused.begin(), fused.end(), [](const std::string& n) {
          return n.find("add") != std::string::npos;
        }) == fused_adds);
  int summed = 0; // data gradients added to another path's through the conv's residual
  int interleaved = 0; // strided data gradients' phases copied into dx (adding, some)
  for (const Step& s : gen.plan.phase("backward")->steps) {
    summed += s.fn == Fn::conv2d_forward && s.arg("residual") >= 0;
    interleaved += s.fn == Fn::region_copy && s.region().step != Int2{1, 1};
  }
  CHECK(summed >= 1);
  if (phases) CHECK(interleaved >= 4);
  LowerOptions lo;
  lo.train = true;
  const auto want = gradients(lower_model(m, lo)), got = gradients(gen.plan);
  REQUIRE(want.size() == got.size());
  // In f16 the two plans round at different steps (a conv of dy for a gather, fp32 slices
  // summed once, a residual and relu added in a batchnorm's epilogue before rounding), and
  // the backward through resnet18's batchnorms at this size amplifies a rounding apart to
  // 10-20%: each f16 step is compared with the f32 reference's gradients instead, the
  // rewritten one within `tol` of the f16 reference's own distance (15-23% here) times 1.3.
  const bool half = dtype == DType::f16;
  std::map<std::string, Tensor> exact;
  if (half) exact = gradients(lower_model(model_of("resnet18", batch, 64, DType::f32), lo));
  const auto rel = [](const Tensor& u, const Tensor& t) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
      num += (u.get(i) - t.get(i)) * (u.get(i) - t.get(i)), den += t.get(i) * t.get(i);
    return std::sqrt(num / std::max(den, 1e-300));
  };
  double worst = 0;
  for (const auto& [name, t] : want) {
    CAPTURE(name);
    const Tensor& u = got.at(name);
    if (half) {
      const double e = rel(u, exact.at(name)), e_ref = rel(t, exact.at(name));
      worst = std::max(worst, e / e_ref);
      CHECK(e < 1.3 * e_ref + tol);
      continue;
    }
    const double r = rel(u, t);
    worst = std::max(worst, r);
    CHECK(r < tol);
  }
  MESSAGE(std::string(half ? "worst distance from f32 over the f16 reference's: "
                           : "worst relative difference of a gradient: ")
          << worst);
}

TEST_CASE("the rewritten training step computes the reference's gradients") {
  // resnet18 at 64x64. In f32 at batch 1: chunked batchnorms (the stem's, its relu fused), data
  // gradients as convs (some adding into a dx with another consumer: a residual block's input) and
  // weight gradients split over positions (on CUDA cores in f32), exact to fp32's rounding. In f16
  // at batch 16, layer1's split on tensor cores and the strided data gradients one conv per
  // phase (at batch 1 in f32 the gathers are priced cheaper); both plans round every step's output
  // to f16, at different steps (a conv of dy for a gather, fp32 slices summed once), so a rounding
  // apart through the backward.
  SUBCASE("f32") { check_rewritten(1, DType::f32, 1e-5, true, false, false); }
  // At batch 16 the blocks' batchnorms are chunked, and their adds and relus fused into them.
  SUBCASE("f32, adds fused") { check_rewritten(16, DType::f32, 1e-4, true, false, true); }
  SUBCASE("f16") { check_rewritten(16, DType::f16, 1e-2, true, true, true); }
}
