// Channel slices and concats as views (generator/rewrite/channel_views.cpp): the plan
// format's view_offset (round trip, validation), the pass's decisions (each refusal), and the
// rewritten plans on the cpu backend against the plans that copy, bit for bit.
#include "every_op_model.hpp"
#include "expect_rejected.hpp"
#include "generator/lower/lower.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/rewrite/channel_views.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/param_init.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <map>

using namespace kiln;

namespace {

// An inception-like block (two branches concatenated), a channel slice of it, and a concat
// that reads the slice: the cases the pass meets in GoogLeNet and ShuffleNet.
Model branches(int64_t batch, int64_t hw = 4, DType dtype = DType::f32) {
  Model m = parse_model(R"({"format": "kiln-model/1", "name": "branches",
  "input": {"name": "image", "shape": [1, 3, 4, 4]},
  "layers": [
    {"name": "stem", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1},
    {"name": "a", "op": "conv2d", "out_channels": 4, "kernel": 1, "inputs": ["stem"]},
    {"name": "ra", "op": "relu"},
    {"name": "b", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1, "inputs": ["stem"]},
    {"name": "bn", "op": "batchnorm"},
    {"name": "cat", "op": "concat", "inputs": ["ra", "bn"]},
    {"name": "half", "op": "channel_slice", "begin": 4, "end": 12},
    {"name": "c", "op": "conv2d", "out_channels": 4, "kernel": 1},
    {"name": "cat2", "op": "concat", "inputs": ["c", "half"]},
    {"name": "head", "op": "conv2d", "out_channels": 2, "kernel": 1},
    {"name": "gap", "op": "global_avgpool"},
    {"name": "flat", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 2}]})",
                        "branches.json");
  ModelOverrides o;
  o.batch = batch;
  o.dtype = dtype;
  o.image = {{hw, hw}};
  apply_overrides(m, o);
  return m;
}

// Each buffer's first decision (a slice's output that became a view is met again as the
// input of a concat, which keeps its copy).
std::map<std::string, std::string> reasons(const ChannelViews& v) {
  std::map<std::string, std::string> r;
  for (const ChannelViewDecision& d : v.decisions)
    r.emplace(d.buffer, d.reason);
  return r;
}

int count_fn(const Plan& p, Fn f) {
  int n = 0;
  for (const Phase& ph : p.phases)
    for (const Step& s : ph.steps)
      n += s.kind != StepKind::free && s.fn == f;
  return n;
}

// The first step (of any phase) writing buffer b.
Step& producer(Plan& p, int b) {
  for (Phase& ph : p.phases)
    for (Step& s : ph.steps)
      for (const Arg& a : s.args)
        if (a.buffer == b && fn_writes(s.fn, a.role)) return s;
  throw std::logic_error("no producer");
}

// Runs a plan on the cpu backend (seeded weights, a seeded input); every output and, in
// training, every parameter gradient, by name.
std::map<std::string, Tensor> run_cpu(const Plan& p) {
  cpu::CpuBackend backend;
  Executor ex(p, backend);
  bind_seeded_weights(ex, p, 3);
  const Buffer& in = p.buffers[size_t(p.inputs[0])];
  Tensor x(in.dtype, in.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, std::sin(0.37 * double(i)) + 0.1);
  ex.write(p.inputs[0], x);
  if (p.target >= 0) {
    Tensor t(DType::i64, p.buffers[size_t(p.target)].shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, double(i % 2));
    ex.write(p.target, t);
  }
  std::map<std::string, Tensor> out;
  ex.run("forward");
  for (int o : p.outputs)
    out.emplace(p.buffers[size_t(o)].name, ex.read(o));
  if (p.phase("backward")) {
    ex.run("backward");
    for (const ParamBinding& pb : p.params)
      if (pb.grad >= 0) out.emplace(p.buffers[size_t(pb.grad)].name, ex.read(pb.grad));
  }
  return out;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.bytes(), b.bytes(), size_t(a.nbytes())) == 0;
}

void check_same_as_copies(const Model& m, const LowerOptions& lo, int views) {
  const Plan copies = lower_model(m, lo);
  Plan p = lower_model_steps(m, lo);
  const ChannelViews v = plan_channel_views(p);
  if (views >= 0)
    CHECK(v.views == views);
  else
    CHECK(v.views > 0);
  const Plan viewed = finish_plan(std::move(p));
  int steps_before = 0, steps_after = 0;
  for (const Phase& ph : copies.phases)
    steps_before += int(ph.steps.size());
  for (const Phase& ph : viewed.phases)
    steps_after += int(ph.steps.size());
  if (v.steps_removed) CHECK(steps_after < steps_before);
  const auto a = run_cpu(copies), b = run_cpu(viewed);
  REQUIRE(a.size() == b.size());
  for (const auto& [name, t] : a) {
    CAPTURE(name);
    CHECK(bit_identical(t, b.at(name)));
  }
  // The views survive the plan's JSON form.
  const std::string text = plan_to_json(viewed).dump(1);
  CHECK(plan_to_json(parse_plan(text, "plan.json")).dump(1) == text);
}

} // namespace

TEST_CASE("at batch 1 concat inputs and channel slices become views; at batch 2 they copy or "
          "are pitched") {
  Plan p = lower_model_steps(branches(1), {});
  const ChannelViews v = plan_channel_views(p);
  const auto r = reasons(v);
  CHECK(r.at("act:ra") == "");
  CHECK(r.at("act:bn") == "");
  CHECK(r.at("act:half") == "");
  CHECK(r.at("act:c") == "");
  // cat2's second input is the slice, itself a view now: that channel range still copies.
  CHECK(v.views == 4);
  const int cat = p.find_buffer("act:cat");
  CHECK(p.buffers[size_t(p.find_buffer("act:bn"))].view_of == cat);
  CHECK(p.buffers[size_t(p.find_buffer("act:bn"))].view_offset == 4 * 16);
  CHECK(p.buffers[size_t(p.find_buffer("act:half"))].view_offset == 4 * 16);
  CHECK(count_fn(p, Fn::channel_slice_forward) == 0);
  CHECK(count_fn(p, Fn::concat_forward) == 1); // cat2's copy of the slice, at channel 4
  CHECK(reasons(v).at("act:half") == "");
  CHECK(v.steps_removed == 2);

  // Batch 2, where no kernel writes through a pitch: every copy stays.
  const ServesPitched none = [](const Plan&, const Step&) { return false; };
  Plan q = lower_model_steps(branches(2), {});
  const ChannelViews w = plan_channel_views(q, none);
  CHECK(w.views == 0);
  CHECK(reasons(w).at("act:ra") == "a batch of 2: a channel window is strided, and no kernel for "
                                   "its producer relu.forward writes through a pitch");
  CHECK(count_fn(q, Fn::concat_forward) == 2);

  // Batch 2 on the cpu reference (which reads and writes through any pitch): the concat inputs
  // are pitched views, one image of the concat's output apart, and so is the slice of cat
  // (conv c reads it through the pitch); cat2 copies the slice, itself a view.
  Plan pp = lower_model_steps(branches(2), {});
  const ChannelViews x = plan_channel_views(pp);
  const auto rr = reasons(x);
  CHECK(rr.at("act:ra") == "");
  CHECK(rr.at("act:bn") == "");
  CHECK(rr.at("act:c") == "");
  CHECK(rr.at("act:half") == "");
  CHECK(x.views == 4);
  const Buffer& bn = pp.buffers[size_t(pp.find_buffer("act:bn"))];
  CHECK(bn.view_of == pp.find_buffer("act:cat"));
  CHECK(bn.view_offset == 4 * 16);
  CHECK(bn.view_pitch == 12 * 16);
  CHECK(bn.run_count() == 2);
  CHECK(bn.run_elements() == 8 * 16);
  CHECK(bn.run_index(8 * 16 + 5) == 12 * 16 + 5); // image 1's sixth element
  CHECK(count_fn(pp, Fn::concat_forward) == 1);   // cat2's copy of the slice
  CHECK(count_fn(pp, Fn::channel_slice_forward) == 0);
  const Buffer& half = pp.buffers[size_t(pp.find_buffer("act:half"))];
  CHECK(half.view_of == pp.find_buffer("act:cat"));
  CHECK(half.view_offset == 4 * 16);
  CHECK(half.view_pitch == 12 * 16);
}

TEST_CASE("the views compute what the copies did, bit for bit, in inference and training") {
  check_same_as_copies(branches(1), {}, 4);
  check_same_as_copies(branches(2), {}, 4); // pitched views
  LowerOptions train;
  train.train = true;
  // Training: the forward's 4 and the gradients of 3 concat inputs, each a view of the concat's
  // gradient (concat.backward without accumulating is a channel slice of dy).
  check_same_as_copies(branches(1, 4, DType::f64), train, 7);
  Plan t = lower_model_steps(branches(1, 4, DType::f64), train);
  const int backward_before = count_fn(t, Fn::concat_backward);
  const ChannelViews tv = plan_channel_views(t);
  CHECK(count_fn(t, Fn::concat_backward) == backward_before - 3);
  CHECK(reasons(tv).at("dact:ra").empty());
  check_same_as_copies(every_op_model(DType::f32, 1), {}, -1);
  check_same_as_copies(every_op_model(DType::f64, 1), train, -1);
}

TEST_CASE("the pass keeps the copy wherever a view would be unsafe") {
  const Plan base = lower_model_steps(branches(1), {});
  auto why = [&](auto mutate, const char* buffer) {
    Plan p = base;
    mutate(p);
    const auto r = reasons(plan_channel_views(p));
    REQUIRE(r.count(buffer));
    return r.at(buffer);
  };
  auto buf = [](Plan& p, const char* n) { return p.find_buffer(n); };
  // A producer that accumulates, or a buffer written twice (a recomputed producer or concat).
  CHECK(why([&](Plan& p) { producer(p, buf(p, "act:ra")).accumulate = true; }, "act:ra") ==
        "its producer accumulates into it");
  CHECK(why([&](Plan& p) { p.phases[0].steps.push_back(producer(p, buf(p, "act:bn"))); }, "act:bn")
            .find("written by 2 steps") != std::string::npos);
  CHECK(why(
            [&](Plan& p) {
              for (const Step& s : std::vector<Step>(p.phases[0].steps))
                if (s.fn == Fn::concat_forward && s.need("y") == buf(p, "act:cat"))
                  p.phases[0].steps.push_back(s);
            },
            "act:ra") == "the concat is written twice (recomputed)");
  // In place: the producer reads the concat's output.
  CHECK(why(
            [&](Plan& p) {
              for (Arg& a : producer(p, buf(p, "act:bn")).args)
                if (a.role == "x") a.buffer = buf(p, "act:cat");
            },
            "act:bn") == "its producer reads the concat's output (in place)");
  // A tiled segment's region copies name it.
  CHECK(why(
            [&](Plan& p) {
              Step s;
              s.fn = Fn::region_copy;
              s.params = default_params(Fn::region_copy);
              s.args = {{"src", buf(p, "act:bn")}, {"dst", buf(p, "act:stem")}};
              p.phases[0].steps.push_back(s);
            },
            "act:bn") == "the input is read by a tiled segment's region");
  // The slice's input written after the slice.
  CHECK(why([&](Plan& p) { p.phases[0].steps.push_back(producer(p, buf(p, "act:cat"))); },
            "act:half") == "its input is written again after the slice");
  // nhwc: a channel window is strided unless H*W == 1; a slice copies, a concat's input is
  // a pitched view (the cpu reference writes through any pitch).
  const auto nhwc = [&](Plan& p) {
    for (Buffer& b : p.buffers)
      if (b.role == BufferRole::activation && b.shape.size() == 4) b.layout = Layout::nhwc;
  };
  CHECK(why(nhwc, "act:half") == "");
  {
    Plan p = base;
    nhwc(p);
    const auto r = reasons(plan_channel_views(p, [](const Plan&, const Step&) { return false; }));
    CHECK(r.at("act:half") == "nhwc with H*W > 1: a channel window is strided, and no kernel for "
                              "its reader conv2d.forward reads through a pitch");
  }
  CHECK(why(nhwc, "act:ra") == "");
  // A pitched view's producer that reads the concat's output.
  CHECK(why(
            [&](Plan& p) {
              nhwc(p);
              for (Arg& a : producer(p, buf(p, "act:bn")).args)
                if (a.role == "x") a.buffer = buf(p, "act:cat");
            },
            "act:bn") == "its producer reads the concat's output (in place)");
  // A graph output.
  CHECK(why([&](Plan& p) { p.buffers[size_t(buf(p, "act:bn"))].role = BufferRole::output; },
            "act:bn") == "the input is not a transient (role output)");
  CHECK(why([&](Plan& p) { p.buffers[size_t(buf(p, "act:cat"))].role = BufferRole::output; },
            "act:ra") == "the concat's output is not a transient (role output)");
}

TEST_CASE("inputs, duplicates, shared inputs and reshaping views copy") {
  const Model m = parse_model(R"({"format": "kiln-model/1", "name": "refusals",
  "input": {"name": "image", "shape": [1, 1, 3, 3]},
  "layers": [
    {"name": "a", "op": "conv2d", "out_channels": 1, "kernel": 1},
    {"name": "b", "op": "conv2d", "out_channels": 4, "kernel": 1, "inputs": ["image"]},
    {"name": "in", "op": "concat", "inputs": ["image", "b"]},
    {"name": "twice", "op": "concat", "inputs": ["b", "b"]},
    {"name": "odd", "op": "concat", "inputs": ["a", "b"]},
    {"name": "fb", "op": "flatten", "inputs": ["twice"]},
    {"name": "g", "op": "global_avgpool", "inputs": ["odd"]},
    {"name": "fg", "op": "flatten"},
    {"name": "h", "op": "global_avgpool", "inputs": ["in"]},
    {"name": "fh", "op": "flatten"},
    {"name": "flat", "op": "concat", "inputs": ["fb", "fg", "fh"]},
    {"name": "fc", "op": "linear", "out_features": 2}]})",
                              "refusals.json");
  Plan p = lower_model_steps(m, {});
  const ChannelViews v = plan_channel_views(p);
  std::map<std::pair<std::string, std::string>, std::string> r;
  for (const ChannelViewDecision& d : v.decisions)
    r[{d.node, d.buffer}] = d.reason;
  CHECK(r.at({"in", "in:image"}) == "the input is not a transient (role input)");
  CHECK(r.at({"in", "act:b"}) == "the input is read by another concat too");
  CHECK(r.at({"twice", "act:b"}) == "the input appears twice in the concat");
  CHECK(r.at({"odd", "act:b"}) == "the input is read by another concat too");
  CHECK(r.at({"odd", "act:a"}) == ""); // 1 channel of 3x3 f32 at offset 0
  CHECK(r.at({"flat", "act:fb"}) == "the input is itself a view");
  CHECK(r.at({"flat", "act:fg"}) == "the input is itself a view");
  CHECK(v.views == 1);
  CHECK(v.copies == int(v.decisions.size()) - 1);
  check_same_as_copies(m, {}, 1);
}

// DenseNet's concats: each layer's takes every feature map before it; the block's last takes
// them all, and the others are views of its first channels.
Model dense_block(const char* first, int64_t batch = 1) {
  return parse_model(cat(R"({"format": "kiln-model/1", "name": "dense_block",
  "input": {"name": "image", "shape": [)",
                         batch, R"(, 4, 4, 4]},
  "layers": [
    {"name": "x0", "op": "conv2d", "out_channels": 4, "kernel": 1},
    {"name": "f1", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "c2", "op": "concat", "inputs": [")",
                         first, R"(", "f1"]},
    {"name": "n2", "op": "batchnorm"},
    {"name": "f2", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "c3", "op": "concat", "inputs": [")",
                         first, R"(", "f1", "f2"]},
    {"name": "n3", "op": "batchnorm"},
    {"name": "gap", "op": "global_avgpool"},
    {"name": "flat", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 2}]})"),
                     "dense_block.json");
}

TEST_CASE("a concat nested in a larger one (DenseNet) is a view of its first channels") {
  Plan p = lower_model_steps(dense_block("x0"), {});
  const ChannelViews v = plan_channel_views(p);
  const auto r = reasons(v);
  CHECK(v.views == 4); // x0, f1, f2 into c3, and c2 as c3's first 8 channels
  CHECK(v.copies == 0);
  CHECK(v.steps_removed == 2);
  const int c3 = p.find_buffer("act:c3");
  CHECK(p.buffers[size_t(p.find_buffer("act:c2"))].view_of == c3);
  CHECK(p.buffers[size_t(p.find_buffer("act:c2"))].view_offset == 0);
  CHECK(p.buffers[size_t(p.find_buffer("act:f2"))].view_offset == 8 * 16);
  CHECK(count_fn(p, Fn::concat_forward) == 0);
  LowerOptions train;
  train.train = true;
  check_same_as_copies(dense_block("x0"), {}, 4);
  check_same_as_copies(dense_block("x0"), train, 5);
  // The model's image as the first feature map: it copies, so c2 cannot be a view of c3 and
  // copies too (its f1 is already c3's).
  Plan q = lower_model_steps(dense_block("image"), {});
  const ChannelViews w = plan_channel_views(q);
  CHECK(w.views == 2); // f1 and f2 into c3
  CHECK(count_fn(q, Fn::concat_forward) == 2);
  check_same_as_copies(dense_block("image"), {}, 2);
}

TEST_CASE("a strided DenseNet block: its feature maps and nested concats are pitched views") {
  // Batch 2 on the cpu reference: x0, f1, f2 write into c3 through its pitch, c2 (which n2
  // reads through it) is c3's first 8 channels.
  Plan p = lower_model_steps(dense_block("x0", 2), {});
  const ChannelViews v = plan_channel_views(p);
  CHECK(v.views == 4);
  CHECK(v.copies == 0);
  const int c3 = p.find_buffer("act:c3");
  const Buffer& c2 = p.buffers[size_t(p.find_buffer("act:c2"))];
  CHECK(c2.view_of == c3);
  CHECK(c2.view_offset == 0);
  CHECK(c2.view_pitch == 12 * 16);
  const Buffer& f2 = p.buffers[size_t(p.find_buffer("act:f2"))];
  CHECK(f2.view_offset == 8 * 16);
  CHECK(f2.view_pitch == 12 * 16);
  CHECK(count_fn(p, Fn::concat_forward) == 0);
  check_same_as_copies(dense_block("x0", 2), {}, 4);
  LowerOptions train;
  train.train = true;
  check_same_as_copies(dense_block("x0", 2), train, -1);

  // Where no kernel reads c2 through a pitch, no nested concat can be a view, so the inputs
  // they read copy (a nested concat that copies reads its inputs whole); f2, which only c3
  // reads, is still a pitched view.
  const ServesPitched convs_only = [](const Plan&, const Step& s) {
    return s.fn == Fn::conv2d_forward;
  };
  Plan q = lower_model_steps(dense_block("x0", 2), {});
  const auto r = reasons(plan_channel_views(q, convs_only));
  CHECK(r.at("act:f2") == "");
  CHECK(r.at("act:f1") == "a batch of 2: a channel window is strided, and the input is read by a "
                          "concat nested in it that copies");
  CHECK(q.buffers[size_t(q.find_buffer("act:c2"))].view_of < 0);
  check_same_as_copies(dense_block("x0", 2), {}, -1);
  // The image as the first feature map copies: so do the nested concat and f1.
  Plan i = lower_model_steps(dense_block("image", 2), {});
  const ChannelViews w = plan_channel_views(i);
  CHECK(w.views == 1); // f2
  CHECK(count_fn(i, Fn::concat_forward) == 2);
  check_same_as_copies(dense_block("image", 2), {}, 1);
}

TEST_CASE("a concat inside another (Inception's branch pair) moves into it with its views") {
  const Model m = parse_model(R"({"format": "kiln-model/1", "name": "inner",
  "input": {"name": "image", "shape": [1, 4, 4, 4]},
  "layers": [
    {"name": "stem", "op": "conv2d", "out_channels": 4, "kernel": 1},
    {"name": "a", "op": "conv2d", "out_channels": 4, "kernel": [1, 3], "padding": [0, 1]},
    {"name": "b", "op": "conv2d", "out_channels": 4, "kernel": [3, 1], "padding": [1, 0], "inputs": ["stem"]},
    {"name": "inner", "op": "concat", "inputs": ["a", "b"]},
    {"name": "half", "op": "channel_slice", "begin": 4, "end": 8},
    {"name": "c", "op": "conv2d", "out_channels": 4, "kernel": 1, "inputs": ["stem"]},
    {"name": "outer", "op": "concat", "inputs": ["c", "inner"]},
    {"name": "n", "op": "batchnorm"},
    {"name": "d", "op": "conv2d", "out_channels": 4, "kernel": 1, "inputs": ["half"]},
    {"name": "sum", "op": "add", "inputs": ["n", "n"]},
    {"name": "gap", "op": "global_avgpool"},
    {"name": "flat", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 2}]})",
                              "inner.json");
  Plan p = lower_model_steps(m, {});
  const ChannelViews v = plan_channel_views(p);
  CHECK(v.copies == 0);
  CHECK(v.views == 5); // the slice, a and b into inner, c and inner into outer
  const int outer = p.find_buffer("act:outer");
  for (const char* b : {"act:a", "act:b", "act:inner", "act:c", "act:half"}) {
    CAPTURE(b);
    CHECK(p.buffers[size_t(p.find_buffer(b))].view_of == outer);
  }
  CHECK(p.buffers[size_t(p.find_buffer("act:b"))].view_offset == 8 * 16);
  CHECK(p.buffers[size_t(p.find_buffer("act:half"))].view_offset == 8 * 16);
  CHECK(count_fn(p, Fn::concat_forward) == 0);
  LowerOptions train;
  train.train = true;
  check_same_as_copies(m, {}, 5);
  check_same_as_copies(m, train, 7);
}

TEST_CASE("a misaligned channel offset keeps the copy") {
  const Model m = parse_model(R"({"format": "kiln-model/1", "name": "misaligned",
  "input": {"name": "image", "shape": [1, 1, 3, 3]},
  "layers": [
    {"name": "a", "op": "conv2d", "out_channels": 1, "kernel": 1},
    {"name": "b", "op": "conv2d", "out_channels": 4, "kernel": 1, "inputs": ["image"]},
    {"name": "cat", "op": "concat", "inputs": ["a", "b"]},
    {"name": "s", "op": "channel_slice", "begin": 1, "end": 3},
    {"name": "t", "op": "conv2d", "out_channels": 2, "kernel": 1}]})",
                              "misaligned.json");
  Plan p = lower_model_steps(m, {});
  const auto r = reasons(plan_channel_views(p));
  CHECK(r.at("act:a") == "");
  CHECK(r.at("act:b") == "its offset of 36 bytes is not 16-byte aligned");
  CHECK(r.at("act:s") == "its offset of 36 bytes is not 16-byte aligned");
  // The copy left writes b's channels at its offset; the plan still validates and runs.
  CHECK(count_fn(p, Fn::concat_forward) == 1);
  for (const Step& s : p.phases[0].steps)
    if (s.fn == Fn::concat_forward) CHECK(s.channel_slice().offset == 1);
  check_same_as_copies(m, {}, 1);
}

TEST_CASE("plan validation checks a view's offset") {
  Plan p = lower_model_steps(branches(1), {});
  plan_channel_views(p);
  const Plan good = finish_plan(std::move(p));
  const int bn = good.find_buffer("act:bn"), cat = good.find_buffer("act:cat");
  CHECK(good.byte_offset(bn) == good.buffers[size_t(cat)].offset + 4 * 16 * 4);
  auto fails = [&](auto mutate, const char* what) {
    Plan q = good;
    mutate(q);
    expect_rejected(q, what);
  };
  fails([&](Plan& q) { q.buffers[size_t(bn)].view_offset = 8 * 16 + 1; }, "run outside its base");
  fails([&](Plan& q) { q.buffers[size_t(bn)].view_offset = -16; }, "run outside its base");
  fails([&](Plan& q) { q.buffers[size_t(bn)].layout = Layout::nhwc; }, "in another layout");
  // A pitched view: a 4-D channel window of its base, one image of it apart.
  Plan pp = lower_model_steps(branches(2), {});
  plan_channel_views(pp);
  const Plan pitched = finish_plan(std::move(pp));
  const int pbn = pitched.find_buffer("act:bn");
  REQUIRE(pitched.buffers[size_t(pbn)].view_pitch == 12 * 16);
  CHECK(pitched.buffers[size_t(pbn)].span_bytes() == (12 * 16 + 8 * 16) * 4);
  auto fails_pitched = [&](auto mutate, const char* what) {
    Plan q = pitched;
    mutate(q);
    expect_rejected(q, what);
  };
  fails_pitched([&](Plan& q) { q.buffers[size_t(pbn)].view_pitch = 10 * 16; },
                "puts its images or pixels 192 elements apart");
  fails_pitched([&](Plan& q) { q.buffers[size_t(pbn)].view_offset = 8 * 16; },
                "run outside its base");
  fails_pitched([&](Plan& q) { q.buffers[size_t(pbn)].view_pitch = -1; }, "view_pitch -1");
  // The pitched plan survives its JSON form; view_pitch without view_of is refused.
  const std::string text = plan_to_json(pitched).dump(1);
  CHECK(plan_to_json(parse_plan(text, "plan.json")).dump(1) == text);
  nlohmann::json jp = plan_to_json(good);
  for (auto& b : jp["buffers"])
    if (b["name"] == "act:stem") b["view_pitch"] = 4;
  CHECK_THROWS_WITH_AS(parse_plan(jp.dump(), "plan.json"),
                       doctest::Contains("only meaningful with \"view_of\""), Error);
  // view_offset without view_of, in JSON.
  nlohmann::json j = plan_to_json(good);
  for (auto& b : j["buffers"])
    if (b["name"] == "act:stem") b["view_offset"] = 4;
  CHECK_THROWS_WITH_AS(parse_plan(j.dump(), "plan.json"),
                       doctest::Contains("only meaningful with \"view_of\""), Error);
}
