// A training step's relu backward fused into the chunked batchnorm backward after it
// (generator/rewrite/batchnorm_relu_backward.cpp): where the relu's dx feeds only a chunked
// batchnorm.backward and its batchnorm.partials, both then read the relu's dy and its y as
// relu_y and the relu's step goes; not where anything else reads dx, the batchnorm is not
// chunked, or a step between writes the relu's y or dy.
#include "generator/rewrite/batchnorm_relu_backward.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

struct Backward {
  Plan p;
  Backward() {
    p.train = true;
    for (const char* n : {"x", "w", "part", "y", "dy", "dbn", "dx", "dw", "db", "other"}) {
      Buffer b;
      b.name = n;
      b.shape = std::string(n) == "w" || std::string(n) == "dw" || std::string(n) == "db"
                    ? Shape{8}
                    : Shape{2, 8, 4, 4};
      p.buffers.push_back(b);
    }
    p.phases.push_back(Phase{"backward", {}});
  }
  int id(const char* n) const { return p.find_buffer(n); }
  std::vector<Step>& steps() { return p.phases[0].steps; }
  void step(Fn fn, const char* node, std::vector<std::pair<const char*, const char*>> args) {
    Step s;
    s.kind = StepKind::launch;
    s.fn = fn;
    s.node = node;
    for (auto [role, buf] : args)
      s.args.push_back({role, id(buf)});
    steps().push_back(s);
  }
  void relu() { step(Fn::relu_backward, "relu", {{"y", "y"}, {"dy", "dy"}, {"dx", "dbn"}}); }
  void bn(bool chunked) {
    if (chunked)
      step(Fn::batchnorm_partials, "bn", {{"x", "x"}, {"dy", "dbn"}, {"partial", "part"}});
    std::vector<std::pair<const char*, const char*>> args = {{"x", "x"},        {"dy", "dbn"},
                                                             {"weight", "w"},   {"dx", "dx"},
                                                             {"dweight", "dw"}, {"dbias", "db"}};
    if (chunked) args.push_back({"partial", "part"});
    step(Fn::batchnorm_backward, "bn", args);
  }
};

} // namespace

TEST_CASE("a relu's backward whose dx only the chunked batchnorm reads runs in its steps") {
  Backward b;
  b.relu();
  b.bn(true);
  CHECK(fuse_relu_backwards_into_batchnorm(b.p) == std::vector<std::string>{"bn+relu"});
  REQUIRE(b.steps().size() == 2);
  for (const Step& s : b.steps()) {
    CAPTURE(s.node);
    CHECK(s.need("dy") == b.id("dy"));
    CHECK(s.need("relu_y") == b.id("y"));
    CHECK(s.node == "bn+relu");
  }
  CHECK(b.steps()[0].fn == Fn::batchnorm_partials);
  CHECK(b.steps()[1].fn == Fn::batchnorm_backward);
}

TEST_CASE("the relu's backward keeps its step where dx is read again, the batchnorm is not "
          "chunked, or y or dy changes before the batchnorm reads them") {
  Backward again; // dx read by another step
  again.relu();
  again.bn(true);
  again.step(Fn::relu_backward, "other", {{"y", "other"}, {"dy", "dbn"}, {"dx", "other"}});
  CHECK(fuse_relu_backwards_into_batchnorm(again.p).empty());
  CHECK(again.steps().size() == 4);
  Backward plain; // unchunked: no partials, the unchunked family refuses relu_y
  plain.relu();
  plain.bn(false);
  CHECK(fuse_relu_backwards_into_batchnorm(plain.p).empty());
  Backward out; // dx a plan output
  out.relu();
  out.bn(true);
  out.p.outputs.push_back(out.id("dbn"));
  CHECK(fuse_relu_backwards_into_batchnorm(out.p).empty());
  Backward late; // y overwritten between the relu and the batchnorm
  late.relu();
  late.step(Fn::relu_forward, "late", {{"x", "other"}, {"y", "y"}});
  late.bn(true);
  CHECK(fuse_relu_backwards_into_batchnorm(late.p).empty());
  Backward inference; // not a training plan
  inference.p.train = false;
  inference.relu();
  inference.bn(true);
  CHECK(fuse_relu_backwards_into_batchnorm(inference.p).empty());
}
