// The ONNX importer on models built here with the protobuf API: layer and weight naming,
// Gemm's weight layout, auto_pad, constant shape arithmetic, the MatMul + Add bias fold and
// when it must be refused.
#include "generator/model/onnx/onnx_import.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

using namespace kiln;

namespace {

struct Builder {
  onnx::ModelProto m;
  onnx::GraphProto* g;

  explicit Builder(std::vector<int64_t> shape, int64_t opset = 13) : g(m.mutable_graph()) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (size_t i = 0; i < shape.size(); ++i) {
      auto* d = tt->mutable_shape()->add_dim();
      if (shape[i] < 0)
        d->set_dim_param("N");
      else
        d->set_dim_value(shape[i]);
    }
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::string out,
                        std::string name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : ins)
      n->add_input(i);
    n->add_output(out);
    return n;
  }
  void ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a->add_ints(x);
  }
  void str(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  void init(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      t->add_dims(d);
    for (float x : v)
      t->add_float_data(x);
  }
  void init_i64(const std::string& name, std::vector<int64_t> v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (int64_t x : v)
      t->add_int64_data(x);
  }
  ImportedModel import(const std::string& output, int64_t batch = 0) {
    g->add_output()->set_name(output);
    const std::string bytes = m.SerializeAsString();
    return import_onnx_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "t.onnx", "",
                             batch);
  }
};

std::vector<float> iota(int n) {
  std::vector<float> v(size_t(n), 0);
  for (int i = 0; i < n; ++i)
    v[size_t(i)] = float(i);
  return v;
}

} // namespace

TEST_CASE("onnx: layers named after PyTorch weights, Gemm transB = 0 transposed, symbolic batch") {
  Builder b({-1, 6});
  b.init("classifier.1.weight", {6, 4}, iota(24)); // [in, out]: transB = 0
  b.init("classifier.1.bias", {4}, {1, 2, 3, 4});
  b.node("Gemm", {"x", "classifier.1.weight", "classifier.1.bias"}, "y", "/classifier/Gemm");
  const ImportedModel im = b.import("y", 5);
  REQUIRE(im.model.nodes.size() == 1);
  CHECK(im.model.nodes[0].name == "classifier.1");
  CHECK(im.model.input_shape == Shape{5, 6});
  const Tensor& w = im.weights.at("classifier.1.weight");
  CHECK(w.shape() == Shape{4, 6});
  CHECK(w.get(1 * 6 + 2) == 2 * 4 + 1); // w[out 1][in 2] = B[in 2][out 1]
  CHECK(im.weights.count("classifier.1.bias") == 1);
}

TEST_CASE("onnx: auto_pad SAME_LOWER puts the odd padding first") {
  Builder b({1, 1, 6, 6});
  b.init("w", {1, 1, 2, 2}, {1, 1, 1, 1});
  auto* n = b.node("Conv", {"x", "w"}, "y", "conv");
  b.str(n, "auto_pad", "SAME_LOWER");
  const ImportedModel im = b.import("y");
  const Attrs& a = im.model.nodes[0].attrs;
  CHECK(a.padding == Int2{1, 1});
  CHECK(padding_end(a) == Int2{0, 0});
  CHECK(im.model.nodes[0].shape == Shape{1, 1, 6, 6});
  CHECK(im.model.nodes[0].name == "conv"); // "w" is no state_dict name
}

TEST_CASE("onnx: Shape -> Gather -> Unsqueeze -> Concat -> Reshape is a flatten") {
  Builder b({2, 3, 2, 2});
  b.init_i64("zero", {0});
  b.init_i64("minus_one", {-1});
  b.node("Shape", {"x"}, "s");
  b.node("Gather", {"s", "zero"}, "n");
  b.node("Concat", {"n", "minus_one"}, "t")->add_attribute()->set_name("axis");
  b.g->mutable_node(2)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  b.node("Reshape", {"x", "t"}, "y", "flatten");
  const ImportedModel im = b.import("y");
  REQUIRE(im.model.nodes.size() == 1);
  CHECK(im.model.nodes[0].op == OpKind::flatten);
  CHECK(im.model.nodes[0].shape == Shape{2, 12});
  CHECK(im.folded == 3);
}

TEST_CASE("onnx: MatMul + Add is a linear layer with a bias, unless the MatMul is read twice") {
  Builder b({1, 3});
  b.init("w", {3, 2}, iota(6));
  b.init("bias", {2}, {5, 6});
  b.node("MatMul", {"x", "w"}, "m", "fc");
  b.node("Add", {"m", "bias"}, "y", "fc_bias");
  const ImportedModel im = b.import("y");
  REQUIRE(im.model.nodes.size() == 1);
  CHECK(im.model.nodes[0].attrs.bias);
  CHECK(im.weights.at("fc.bias").get(1) == 6);

  Builder c({1, 3});
  c.init("w", {3, 2}, iota(6));
  c.init("bias", {2}, {5, 6});
  c.node("MatMul", {"x", "w"}, "m", "fc");
  c.node("Add", {"m", "bias"}, "y", "fc_bias");
  c.node("Add", {"y", "m"}, "z", "sum"); // reads the MatMul's output too
  CHECK_THROWS_WITH_AS(c.import("z"), doctest::Contains("kiln's add takes two activations"), Error);
}

TEST_CASE("onnx: unsupported operator names the node, the op and the supported list") {
  Builder b({1, 4});
  b.node("Tanh", {"x"}, "y", "act");
  CHECK_THROWS_WITH_AS(b.import("y"),
                       doctest::Contains("node \"act\" (Tanh): unsupported operator"), Error);
}
