// A training step's activation fused into the chunked batchnorm forward before it
// (generator/rewrite/batchnorm_activation.cpp): where the batchnorm's y feeds only the
// activation's forward, and not where anything else reads y or the batchnorm is not chunked;
// with an add of y and a residual between them where the residual is written before the
// batchnorm.
#include "generator/rewrite/batchnorm_activation.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

struct Forward {
  Plan p;
  Forward() {
    p.train = true;
    for (const char* n : {"x", "w", "b", "part", "y", "r", "dx", "sc", "sum"}) {
      Buffer b;
      b.name = n;
      b.shape = std::string(n) == "w" || std::string(n) == "b" ? Shape{8} : Shape{2, 8, 4, 4};
      p.buffers.push_back(b);
    }
    p.phases.push_back(Phase{"forward", {}});
    p.phases.push_back(Phase{"backward", {}});
  }
  int id(const char* n) const { return p.find_buffer(n); }
  void step(size_t phase, Fn fn, std::vector<std::pair<const char*, const char*>> args) {
    Step s;
    s.kind = StepKind::launch;
    s.fn = fn;
    s.node = fn == Fn::relu_forward ? "relu" : fn == Fn::add_forward ? "add" : "bn";
    for (auto [role, buf] : args)
      s.args.push_back({role, id(buf)});
    p.phases[phase].steps.push_back(s);
  }
  void bn(bool chunked) {
    if (chunked)
      step(0, Fn::batchnorm_forward_train,
           {{"x", "x"}, {"weight", "w"}, {"bias", "b"}, {"partial", "part"}, {"y", "y"}});
    else
      step(0, Fn::batchnorm_forward_train,
           {{"x", "x"}, {"weight", "w"}, {"bias", "b"}, {"y", "y"}});
    step(0, Fn::relu_forward, {{"x", "y"}, {"y", "r"}});
  }
};

} // namespace

TEST_CASE("a relu whose input only it reads runs in the chunked batchnorm's epilogue") {
  Forward f;
  f.bn(true);
  f.step(1, Fn::relu_backward, {{"y", "r"}, {"dy", "r"}, {"dx", "dx"}});
  CHECK(fuse_batchnorm_activations(f.p) == std::vector<std::string>{"bn+relu"});
  REQUIRE(f.p.phases[0].steps.size() == 1);
  const Step& s = f.p.phases[0].steps[0];
  CHECK(s.epilogue.activation == Activation::relu);
  CHECK(s.need("y") == f.id("r"));
}

TEST_CASE("the activation keeps its step where y is read again or the batchnorm is not chunked") {
  Forward again;
  again.bn(true);
  again.step(1, Fn::relu_backward, {{"y", "y"}, {"dy", "r"}, {"dx", "dx"}}); // reads y
  CHECK(fuse_batchnorm_activations(again.p).empty());
  CHECK(again.p.phases[0].steps.size() == 2);
  Forward plain;
  plain.bn(false);
  CHECK(fuse_batchnorm_activations(plain.p).empty());
  Forward out;
  out.bn(true);
  out.p.outputs.push_back(out.id("y"));
  CHECK(fuse_batchnorm_activations(out.p).empty());
}

// relu(bn(x) + sc): the shortcut sc written (here: by a step) before the batchnorm.
TEST_CASE("an add of a residual and the relu after it run in the chunked batchnorm's epilogue") {
  const auto block = [](bool sc_late) {
    Forward f;
    if (!sc_late) f.step(0, Fn::relu_forward, {{"x", "dx"}, {"y", "sc"}});
    f.step(0, Fn::batchnorm_forward_train,
           {{"x", "x"}, {"weight", "w"}, {"bias", "b"}, {"partial", "part"}, {"y", "y"}});
    if (sc_late) f.step(0, Fn::relu_forward, {{"x", "dx"}, {"y", "sc"}});
    f.step(0, Fn::add_forward, {{"x0", "sc"}, {"x1", "y"}, {"y", "sum"}});
    f.step(0, Fn::relu_forward, {{"x", "sum"}, {"y", "r"}});
    f.step(1, Fn::relu_backward, {{"y", "r"}, {"dy", "r"}, {"dx", "dx"}});
    return f;
  };
  Forward f = block(false);
  CHECK(fuse_batchnorm_activations(f.p) == std::vector<std::string>{"bn+add+relu"});
  REQUIRE(f.p.phases[0].steps.size() == 2);
  const Step& s = f.p.phases[0].steps[1];
  CHECK(s.fn == Fn::batchnorm_forward_train);
  CHECK(s.epilogue.activation == Activation::relu);
  CHECK(s.need("y") == f.id("r"));
  CHECK(s.need("residual") == f.id("sc"));
  // The shortcut written after the batchnorm: not yet there to add.
  Forward late = block(true);
  CHECK(fuse_batchnorm_activations(late.p).empty());
  CHECK(late.p.phases[0].steps.size() == 4);
  // The sum read again (a backward reading it): the add stays.
  Forward again = block(false);
  again.step(1, Fn::relu_backward, {{"y", "sum"}, {"dy", "r"}, {"dx", "dx"}});
  CHECK(fuse_batchnorm_activations(again.p).empty());
}
