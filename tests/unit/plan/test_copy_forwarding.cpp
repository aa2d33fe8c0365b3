// Copies whose destination only later steps read (generator/rewrite/copy_forwarding.cpp): the
// readers read the source and the copy goes, unless something writes the source before the
// last of them, the destination is written again, or something else holds it.
#include "generator/rewrite/copy_forwarding.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

// A training plan's backward phase over three 4-D buffers: dy (`src`), its copy (`dst`) and
// what the reader writes (`dx`); then the steps given, each over named buffers.
struct Backward {
  Plan p;
  Backward() {
    p.train = true;
    for (const char* n : {"dy", "copy", "dx", "other"}) {
      Buffer b;
      b.name = n;
      b.shape = {2, 8, 4, 4};
      p.buffers.push_back(b);
    }
    p.phases.push_back(Phase{"backward", {}});
  }
  int id(const std::string& n) const { return p.find_buffer(n); }
  Backward& step(Fn fn, std::vector<std::pair<const char*, const char*>> args) {
    Step s;
    s.kind = StepKind::launch;
    s.fn = fn;
    s.node = "n";
    for (auto [role, buf] : args)
      s.args.push_back({role, id(buf)});
    p.phases[0].steps.push_back(s);
    return *this;
  }
  std::vector<Fn> fns() const {
    std::vector<Fn> f;
    for (const Step& s : p.phases[0].steps)
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
