// A training step's relu backward fused into the chunked batchnorm backward after it
// (generator/rewrite/batchnorm_relu_backward.cpp): where the relu's dx feeds only a chunked
// batchnorm.backward and its batchnorm.partials, both then read the relu's dy and its y as
// relu_y and the relu's step goes; not where anything else reads dx, the batchnorm is not
// chunked, or a step between writes the relu's y or dy.
#include "generator/rewrite/batchnorm_relu_backward.hpp"
#include "tests/unit/plan/plan_fixtures.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

// Activations [2, 8, 4, 4]: the batchnorm's x, the relu's y and dy, dbn (the relu's dx, the
// batchnorm's dy), the batchnorm's dx; its weight and gradients [8]; partial its chunk sums.
struct Backward : test::HandBackward {
  Backward()
      : HandBackward({{"x", {2, 8, 4, 4}},
                      {"w", {8}},
                      {"part", {2, 8, 4, 4}},
                      {"y", {2, 8, 4, 4}},
                      {"dy", {2, 8, 4, 4}},
                      {"dbn", {2, 8, 4, 4}},
                      {"dx", {2, 8, 4, 4}},
                      {"dw", {8}},
                      {"db", {8}},
                      {"other", {2, 8, 4, 4}}}) {}
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
