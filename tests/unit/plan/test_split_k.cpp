// Split-K's choice between unsplit, in the kernel (conv2d.forward_split: one launch, counters
// zeroed once in the prepare phase) and two steps (forward_partial + partial.sum), by the cost
// model: resnet50 at batch 1 in f16 on the H100, whose last stages are a few tiles each; on
// both the mma.sync and the Hopper family.
#include "generator/cost/rewrite_pays.hpp"
#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/overrides.hpp"
#include "generator/run/model_source.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <map>
#include <set>

using namespace kiln;

namespace {

Generated resnet50_b1(const char* gpu, bool train = false) {
  Model m = load_model_or_shipped("resnet50");
  ModelOverrides o;
  o.dtype = DType::f16;
  o.batch = 1;
  apply_overrides(m, o);
  GenerateOptions go;
  go.train = train;
  return generate(m, load_gpu(gpu), go);
}

} // namespace

TEST_CASE("resnet50 at batch 1 on the H100 completes its splits in the kernel where they pay") {
  const Generated gen = resnet50_b1("h100");
  const Plan& p = gen.plan;
  REQUIRE(!gen.split_k.empty());
  int in_kernel = 0, only_in_kernel_pays = 0;
  std::set<std::string> nodes;
  for (const SplitKDecision& d : gen.split_k) {
    CAPTURE(d.node);
    nodes.insert(d.node);
    CHECK(rewrite_pays(d.unsplit_us, d.split_us));
    CHECK(d.split_us == std::min(d.in_kernel_us, d.two_step_us));
    CHECK(d.slices >= 2);
    if (d.form != SplitForm::in_kernel) continue;
    ++in_kernel;
    CHECK(d.slices == d.in_kernel_slices);
    // Where the two-step form alone would not have paid, the layer was left unsplit before.
    if (!rewrite_pays(d.unsplit_us, d.two_step_us)) ++only_in_kernel_pays;
  }
  MESSAGE(in_kernel << " of " << gen.split_k.size() << " splits in the kernel; "
                    << only_in_kernel_pays << " would not have paid in two steps");
  CHECK(in_kernel >= 1);
  CHECK(only_in_kernel_pays >= 1);
  // The plan: one launch per split layer, its counters a derived buffer that a fill_zero of
  // the prepare phase zeroes (one array per layer, sized for the tiles), its slices a
  // transient.
  REQUIRE(p.phase("prepare"));
  std::map<int, int> zeroed; // tickets buffer -> fill_zero steps writing it
  for (const Step& s : p.phase("prepare")->steps)
    if (s.fn == Fn::fill_zero) ++zeroed[s.need("dst")];
  int launches = 0, hopper = 0;
  for (const Step& s : p.phase("forward")->steps) {
    CHECK(s.fn != Fn::partial_sum);
    CHECK(s.fn != Fn::fill_zero);
    if (s.fn != Fn::conv2d_forward_split) continue;
    ++launches;
    CAPTURE(s.node);
    CHECK(nodes.count(s.node) == 1);
    const int t = s.need("tickets");
    CHECK(p.buffers[size_t(t)].role == BufferRole::derived);
    CHECK(p.buffers[size_t(t)].dtype == DType::i32);
    CHECK(zeroed[t] == 1);
    CHECK(p.buffers[size_t(s.need("partial"))].role == BufferRole::activation);
    REQUIRE(s.kind == StepKind::launch);
    const Kernel& k = p.kernels[size_t(s.kernel)];
    CHECK(k.name.find("reduce") != std::string::npos);
    CHECK(k.args.back() == "tickets");
    // The Hopper family's (split_reduce.cuh): its tensor maps bound as an unsplit conv's, a
    // counter per consumer warp's rows of each tile within the buffer's.
    if (k.name.find("hopper_wgmma") == std::string::npos) continue;
    ++hopper;
    CHECK(s.arg("wmap") >= 0);
    CHECK(s.arg("xmap0") >= 0);
  }
  MESSAGE(hopper << " of " << launches << " in-kernel splits on the Hopper family");
  CHECK(hopper >= 1); // where its tiles beat the mma.sync family's (layer4's 3x3 convs)
  CHECK(launches == in_kernel);
  CHECK(zeroed.size() == size_t(in_kernel));
  // The manifest says which form each split took and what the other would have cost.
  for (const auto& d : gen.manifest["split_k"]) {
    CHECK((d["form"] == "in_kernel" || d["form"] == "two_step"));
    CHECK(d.contains("in_kernel"));
    CHECK(d.contains("two_step"));
  }
}

TEST_CASE("training plans are not split along K") {
  CHECK(resnet50_b1("h100", true).split_k.empty());
}
