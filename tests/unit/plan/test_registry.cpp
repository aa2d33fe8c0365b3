// The op and step-function registry (runtime/ops/): complete, consistent, and the typed step
// parameters it names enforced by validation and by the plan reader.
#include "every_op_model.hpp"
#include "generator/lower/lower.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <map>
#include <set>
#include <string>

using namespace kiln;

namespace {

bool contains(std::span<const std::string_view> roles, std::string_view r) {
  return std::find(roles.begin(), roles.end(), r) != roles.end();
}

Plan lowered(bool train) {
  LowerOptions o;
  o.train = train;
  return lower_model(every_op_model(DType::f32), o);
}

Step& first(Plan& p, Fn fn) {
  for (Phase& ph : p.phases)
    for (Step& s : ph.steps)
      if (s.kind != StepKind::free && s.fn == fn) return s;
  throw std::logic_error("no " + std::string(fn_name(fn)));
}

// validate_plan's message for the plan after `mutate`, or "" when it passes.
template <class F> std::string validation_error(Plan p, F mutate) {
  mutate(p);
  try {
    validate_plan(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// parse_plan's message for the plan's JSON after `edit`, or "" when it loads.
template <class F> std::string parse_error(const Plan& p, F edit) {
  nlohmann::ordered_json j = plan_to_json(p);
  edit(j);
  try {
    parse_plan(j.dump(), "plan.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

nlohmann::ordered_json& first_json(nlohmann::ordered_json& j, std::string_view fn) {
  for (auto& [name, steps] : j["phases"].items())
    for (auto& s : steps)
      if (s.contains("fn") && s["fn"] == fn) return s;
  throw std::logic_error("no " + std::string(fn));
}

} // namespace

TEST_CASE("every op has exactly one definition, found by its name") {
  std::map<OpKind, int> count;
  std::set<std::string_view> names;
  for (const OpDef* d : registered_ops()) {
    REQUIRE(size_t(d->kind) < std::size(all_ops));
    ++count[d->kind];
    CHECK_MESSAGE(names.insert(d->name).second, "op name twice: ", d->name);
    CHECK(bool(d->shape));
  }
  for (OpKind k : all_ops) {
    INFO(op_name(k));
    CHECK(count[k] == 1);
    CHECK(op_def(k).kind == k);
    CHECK(parse_op(op_name(k)) == k);
  }
  CHECK(registered_ops().size() == std::size(all_ops));
}

TEST_CASE("every step function has exactly one definition, and a consistent signature") {
  std::map<size_t, int> count;
  std::set<std::string_view> names;
  for (const FnDef* d : registered_fns()) {
    INFO(d->name);
    REQUIRE(size_t(d->fn) < kFnCount);
    ++count[size_t(d->fn)];
    CHECK(names.insert(d->name).second);
    CHECK(bool(d->cpu_f32));
    CHECK(bool(d->cpu_f64));
    CHECK(d->params < std::variant_size_v<FnParams>);
    CHECK((!d->params_optional || d->params != 0));
    const FnSignature& sig = d->signature;
    // Every role listed once among reads and writes; optional, updated and typed roles are
    // among them (updates among the writes).
    std::set<std::string_view> roles;
    for (auto list : {sig.reads, sig.writes})
      for (std::string_view r : list)
        CHECK_MESSAGE(roles.insert(r).second, "role listed twice: ", r);
    for (std::string_view r : sig.optional)
      CHECK_MESSAGE(roles.count(r) == 1, "optional role not in the signature: ", r);
    for (std::string_view r : sig.updates)
      CHECK_MESSAGE(contains(sig.writes, r), "updated role not written: ", r);
    for (const RoleType& t : d->types)
      CHECK_MESSAGE(roles.count(t.role) == 1, "typed role not in the signature: ", t.role);
    CHECK(d->signature.writes.size() >= 1);
  }
  for (size_t i = 0; i < kFnCount; ++i) {
    const Fn f = Fn(i);
    INFO(fn_name(f));
    CHECK(count[i] == 1);
    CHECK(fn_def(f).fn == f);
    CHECK(parse_fn(fn_name(f)) == f);
  }
  CHECK(registered_fns().size() == kFnCount);
}

TEST_CASE("the activation names round-trip; parameters are checked") {
  for (Activation a :
       {Activation::none, Activation::relu, Activation::hardswish, Activation::sigmoid,
        Activation::silu, Activation::gelu, Activation::gelu_tanh, Activation::clip(0, 6),
        Activation::hardsigmoid(0.2f, 0.5f)}) {
    const auto kind = parse_activation_kind(activation_name(a));
    REQUIRE(kind.has_value());
    std::vector<double> p;
    for (float f : activation_params(a))
      p.push_back(f);
    CHECK(make_activation(*kind, p) == a);
  }
  CHECK_FALSE(parse_activation_kind("swish").has_value());
  CHECK(activation_label(Activation::clip(-1, 6)) == "clip_-1_6");
  CHECK_THROWS_WITH_AS(make_activation(ActKind::clip, {1}), doctest::Contains("takes 2"), Error);
  CHECK_THROWS_WITH_AS(make_activation(ActKind::clip, {6, 0}),
                       doctest::Contains("min 6 exceeds max 0"), Error);
  CHECK_THROWS_WITH_AS(make_activation(ActKind::sigmoid, {1, 2}), doctest::Contains("takes 0"),
                       Error);
  CHECK(activate(Activation::relu, -2.0) == 0.0);
  CHECK(activate(Activation::relu, 3.0) == 3.0);
}

TEST_CASE(
    "validation rejects parameters of another function, and activations without an epilogue") {
  const Plan inference = lowered(false), train = lowered(true);
  CHECK(validation_error(inference, [](Plan&) {}).empty());
  CHECK(validation_error(train, [](Plan&) {}).empty());
  CHECK(validation_error(inference, [](Plan& p) {
          first(p, Fn::conv2d_forward).params = Sgd{.lr = 0.1};
        }).find("conv2d.forward takes none parameters, not sgd") != std::string::npos);
  CHECK(validation_error(train, [](Plan& p) {
          first(p, Fn::sgd_update).params = FoldBn{1e-5};
        }).find("sgd.update takes sgd parameters, not fold_bn") != std::string::npos);
  CHECK(validation_error(train, [](Plan& p) {
          first(p, Fn::concat_backward).params = {};
        }).find("concat.backward takes channel_slice parameters, not none") != std::string::npos);
  CHECK(validation_error(
            inference,
            [](Plan& p) { first(p, Fn::relu_forward).epilogue.activation = Activation::relu; })
            .find("relu.forward has no fused epilogue for the activation \"relu\"") !=
        std::string::npos);
  CHECK(validation_error(inference, [](Plan& p) {
          first(p, Fn::conv2d_forward).epilogue.activation = Activation::relu;
        }).empty());
  // The typed accessors name what the step holds.
  Plan p = inference;
  CHECK_THROWS_WITH_AS(first(p, Fn::conv2d_forward).sgd(),
                       doctest::Contains("holds none parameters, not sgd"), Error);
  CHECK(first(p, Fn::concat_forward).channel_slice().offset == 0);
}

TEST_CASE("the plan reader takes each function's parameters, and only those") {
  const Plan inference = lowered(false), train = lowered(true);
  CHECK(parse_error(inference, [](auto&) {}).empty());
  CHECK(parse_error(inference, [](auto& j) {
          first_json(j, "conv2d.forward")["lr"] = 0.1;
        }).find("is a parameter of sgd steps; conv2d.forward takes none") != std::string::npos);
  CHECK(parse_error(inference, [](auto& j) {
          first_json(j, "conv2d.forward")["colour"] = 1;
        }).find("unknown key \"colour\"") != std::string::npos);
  CHECK(parse_error(train, [](auto& j) {
          first_json(j, "sgd.update").erase("lr");
        }).find("missing key \"lr\"") != std::string::npos);
  CHECK(parse_error(inference, [](auto& j) {
          first_json(j, "relu.forward")["relu"] = true;
        }).find("relu.forward has no fused epilogue") != std::string::npos);
  CHECK(parse_error(inference, [](auto& j) {
          first_json(j, "conv2d.forward")["activation"] = "swish";
        }).find("unknown activation \"swish\"") != std::string::npos);
  CHECK(parse_error(inference, [](auto& j) {
          first_json(j, "conv2d.forward")["activation"] = "clip";
        }).find("clip takes 2 parameter(s), got 0") != std::string::npos);
  CHECK(parse_error(inference, [](auto& j) {
          first_json(j, "conv2d.forward")["activation_params"] = {1.0};
        }).find("comes only with \"activation\"") != std::string::npos);
  {
    nlohmann::ordered_json j = plan_to_json(inference);
    first_json(j, "conv2d.forward").erase("relu");
    first_json(j, "conv2d.forward")["activation"] = "clip";
    first_json(j, "conv2d.forward")["activation_params"] = {-1.5, 6.0};
    Plan q = parse_plan(j.dump(), "plan.json");
    CHECK(first(q, Fn::conv2d_forward).epilogue.activation == Activation::clip(-1.5f, 6));
    nlohmann::ordered_json back = plan_to_json(q);
    CHECK(first_json(back, "conv2d.forward")["activation_params"] ==
          nlohmann::ordered_json{-1.5, 6.0});
  }
  // concat.forward at channel 0 leaves its parameters out, as kiln-plan/1 always has, and
  // reads their absence as the defaults.
  nlohmann::ordered_json j = plan_to_json(inference);
  CHECK_FALSE(first_json(j, "concat.forward").contains("channel_offset"));
  const Plan q = parse_plan(j.dump(), "plan.json");
  CHECK(first(const_cast<Plan&>(q), Fn::concat_forward).params == FnParams{ChannelSlice{0}});
  nlohmann::ordered_json t = plan_to_json(train);
  CHECK(first_json(t, "concat.backward").contains("channel_offset"));
}
