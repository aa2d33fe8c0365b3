// Copies whose destination only later steps read (generator/rewrite/copy_forwarding.cpp): the
// readers read the source and the copy goes, unless something writes the source before the
// last of them, the destination is written again, or something else holds it.
#include "generator/rewrite/copy_forwarding.hpp"
#include "tests/unit/plan/plan_fixtures.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

// A training plan's backward phase over three 4-D buffers: dy (`src`), its copy (`dst`) and
// what the reader writes (`dx`); then the steps given, each over named buffers.
struct Backward : test::HandBackward {
  Backward()
      : HandBackward({{"dy", {2, 8, 4, 4}},
                      {"copy", {2, 8, 4, 4}},
                      {"dx", {2, 8, 4, 4}},
                      {"other", {2, 8, 4, 4}}}) {}
  Backward& step(Fn fn, const std::vector<std::pair<const char*, const char*>>& args) {
    HandBackward::step(fn, "n", args);
    return *this;
  }
  std::vector<Fn> fns() const {
    std::vector<Fn> f;
    for (const Step& s : steps())
      f.push_back(s.fn);
    return f;
  }
};

} // namespace

TEST_CASE("a copy whose destination later steps only read is forwarded to its source") {
  Backward b;
  b.step(Fn::copy, {{"src", "dy"}, {"dst", "copy"}})
      .step(Fn::relu_backward, {{"y", "other"}, {"dy", "copy"}, {"dx", "dx"}})
      .step(Fn::relu_backward, {{"y", "other"}, {"dy", "copy"}, {"dx", "other"}});
  const std::vector<ForwardedCopy> f = forward_copies(b.p);
  REQUIRE(f.size() == 1);
  CHECK(f[0].source == "dy");
  CHECK(f[0].readers == 2);
  CHECK(b.fns() == std::vector<Fn>{Fn::relu_backward, Fn::relu_backward});
  for (const Step& s : b.p.phases[0].steps)
    CHECK(s.need("dy") == b.id("dy"));
}

TEST_CASE("a copy stays where its source is written before its destination's last reader") {
  Backward b;
  b.step(Fn::copy, {{"src", "dy"}, {"dst", "copy"}})
      .step(Fn::fill_zero, {{"dst", "dy"}})
      .step(Fn::relu_backward, {{"y", "other"}, {"dy", "copy"}, {"dx", "dx"}});
  CHECK(forward_copies(b.p).empty());
  CHECK(b.fns().front() == Fn::copy);
}

TEST_CASE("a copy stays where its destination is written again, or is a plan output") {
  Backward b;
  b.step(Fn::copy, {{"src", "dy"}, {"dst", "copy"}})
      .step(Fn::relu_backward, {{"y", "other"}, {"dy", "dx"}, {"dx", "copy"}});
  CHECK(forward_copies(b.p).empty());
  Backward o;
  o.step(Fn::copy, {{"src", "dy"}, {"dst", "copy"}})
      .step(Fn::relu_backward, {{"y", "other"}, {"dy", "copy"}, {"dx", "dx"}});
  o.p.outputs.push_back(o.id("copy"));
  CHECK(forward_copies(o.p).empty());
  Backward l; // another layout: the readers would read the wrong order
  l.step(Fn::copy, {{"src", "dy"}, {"dst", "copy"}})
      .step(Fn::relu_backward, {{"y", "other"}, {"dy", "copy"}, {"dx", "dx"}});
  l.p.buffers[size_t(l.id("copy"))].layout = Layout::nhwc;
  CHECK(forward_copies(l.p).empty());
}
