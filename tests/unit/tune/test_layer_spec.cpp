#include "generator/tune/layer_spec.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

std::string error_of(const std::string& spec) {
  try {
    layer_spec_model(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("layer specs: conv with every key") {
  const Model m =
      layer_spec_model("conv:n=32,c=128,h=28,w=28,k=64,r=3,s=2,p=1,d=1,g=2,bias=1,relu=1");
  CHECK(m.input_shape == Shape{32, 128, 28, 28});
  REQUIRE(m.nodes.size() == 2);
  const Node& c = m.nodes[0];
  CHECK(c.op == OpKind::conv2d);
  CHECK(c.attrs.out_channels == 64);
  CHECK(c.attrs.kernel == Int2{3, 3});
  CHECK(c.attrs.stride == Int2{2, 2});
  CHECK(c.attrs.padding == Int2{1, 1});
  CHECK(c.attrs.groups == 2);
  CHECK(c.attrs.bias);
  CHECK(m.nodes[1].op == OpKind::relu);
  CHECK(c.shape == Shape{32, 64, 14, 14});
}

TEST_CASE("layer specs: defaults, HxW values, linear and pool") {
  const Model c = layer_spec_model("conv:c=8,h=8,w=6,k=4,r=3x1");
  CHECK(c.input_shape == Shape{1, 8, 8, 6});
  CHECK(c.nodes[0].attrs.kernel == Int2{3, 1});
  CHECK(!c.nodes[0].attrs.bias);
  const Model l = layer_spec_model("linear:n=4,c=2048,k=1000");
  CHECK(l.input_shape == Shape{4, 2048});
  CHECK(l.nodes[0].op == OpKind::linear);
  CHECK(l.nodes[0].attrs.out_features == 1000);
  const Model p = layer_spec_model("pool:c=64,h=56,w=56,r=3,s=2,p=1,mode=avg");
  CHECK(p.nodes[0].op == OpKind::avgpool2d);
  CHECK(p.nodes[0].shape == Shape{1, 64, 28, 28});
  const Model q = layer_spec_model("pool:c=4,h=8,w=8,r=2");
  CHECK(q.nodes[0].op == OpKind::maxpool2d);
  CHECK(q.nodes[0].attrs.stride == Int2{2, 2}); // s defaults to r
}

TEST_CASE("layer specs: is_layer_spec tells specs from model names") {
  CHECK(is_layer_spec("conv:c=1,h=1,w=1,k=1,r=1"));
  CHECK(is_layer_spec("pool:c=1"));
  CHECK(!is_layer_spec("resnet18"));
  CHECK(!is_layer_spec("models/x.json"));
  CHECK(!is_layer_spec("C:/models/x.json"));
}

TEST_CASE("layer specs: unknown, repeated, missing keys and bad values are errors") {
  CHECK(error_of("conv:c=8,h=8,w=8,k=8,r=3,q=1").find("unknown key \"q\" for conv") !=
        std::string::npos);
  CHECK(error_of("linear:c=8,k=8,h=3").find("unknown key \"h\"") != std::string::npos);
  CHECK(error_of("conv:c=8,c=9,h=8,w=8,k=8,r=3").find("given twice") != std::string::npos);
  CHECK(error_of("conv:c=8,h=8,w=8,r=3").find("missing key \"k\"") != std::string::npos);
  CHECK(error_of("conv:c=8,h=8,w=8,k=x,r=3").find("not a whole number") != std::string::npos);
  CHECK(error_of("conv:c=0,h=8,w=8,k=8,r=3").find("at least 1") != std::string::npos);
  CHECK(error_of("conv:c=8,h=8,w=8,k=8,r=3,bias=2").find("0 or 1") != std::string::npos);
  CHECK(error_of("conv:c=8,h=8,w=8,k=8,r=3,").find("trailing comma") != std::string::npos);
  CHECK(error_of("conv:c=8,h=8,w=8,k=8,r").find("key=value") != std::string::npos);
  CHECK(error_of("pool:c=8,h=8,w=8,r=2,mode=min").find("mode=min") != std::string::npos);
  CHECK(error_of("dense:c=8").find("conv:, linear: or pool:") != std::string::npos);
  // Shapes the model format rejects: a kernel larger than the padded image.
  CHECK(!error_of("conv:c=8,h=2,w=2,k=8,r=5").empty());
}
