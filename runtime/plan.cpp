#include "runtime/plan.hpp"

#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"
#include "runtime/op_json.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/step_json.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace kiln {

namespace ju = json_util;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

constexpr std::pair<BufferRole, std::string_view> role_names[] = {
    {BufferRole::input, "input"},
    {BufferRole::target, "target"},
    {BufferRole::param, "param"},
    {BufferRole::state, "state"},
    {BufferRole::param_grad, "param_grad"},
    {BufferRole::output, "output"},
    {BufferRole::loss, "loss"},
    {BufferRole::activation, "activation"},
    {BufferRole::optimizer_state, "optimizer_state"},
    {BufferRole::derived, "derived"}};

template <class E, size_t N>
E parse_enum(const std::pair<E, std::string_view> (&names)[N], const std::string& s,
             const std::string& ptr, std::string_view what) {
  for (auto& [e, n] : names)
    if (n == s) return e;
  throw Error("", ptr, cat("unknown ", what, " \"", s, "\""));
}

} // namespace

std::string_view layout_name(Layout l) { return l == Layout::nhwc ? "nhwc" : "nchw"; }

int64_t Buffer::run_count() const {
  if (view_pitch <= 0 || shape.size() < 2) return 1;
  // One run per image (NCHW) or per pixel (NHWC: the channels innermost).
  return layout == Layout::nhwc ? numel(shape) / shape[1] : shape[0];
}

std::string_view role_name(BufferRole r) {
  for (auto& [e, n] : role_names)
    if (e == r) return n;
  return "?";
}

int Step::arg(std::string_view role) const {
  for (const Arg& a : args)
    if (a.role == role) return a.buffer;
  return -1;
}

int Step::need(std::string_view role) const {
  const int b = arg(role);
  if (b < 0)
    throw Error("", cat("step ", fn_name(fn), " of ", node), cat("no \"", role, "\" argument"));
  return b;
}

std::vector<int> Step::variadic(char prefix) const {
  std::vector<int> r;
  for (int i = 0;; ++i) {
    const int b = arg(std::string(1, prefix) + std::to_string(i));
    if (b < 0) return r;
    r.push_back(b);
  }
}

namespace {

// The step's parameters as P; an error naming the step when it holds another alternative.
template <class P, class V> auto& held(const Step& s, V& params) {
  if (auto* p = std::get_if<P>(&params)) return *p;
  throw Error("", cat("step ", fn_name(s.fn), " of ", s.node),
              cat("holds ", params_name(params.index()), " parameters, not ",
                  params_name(params_index<P>())));
}

} // namespace

FnParams default_params(Fn f) { return default_params(fn_def(f).params); }

const FoldBn& Step::fold_bn() const { return held<FoldBn>(*this, params); }
FoldBn& Step::fold_bn() { return held<FoldBn>(*this, params); }
const Sgd& Step::sgd() const { return held<Sgd>(*this, params); }
Sgd& Step::sgd() { return held<Sgd>(*this, params); }
const Adam& Step::adam() const { return held<Adam>(*this, params); }
Adam& Step::adam() { return held<Adam>(*this, params); }
const Region& Step::region() const { return held<Region>(*this, params); }
Region& Step::region() { return held<Region>(*this, params); }
const ChannelSlice& Step::channel_slice() const { return held<ChannelSlice>(*this, params); }
ChannelSlice& Step::channel_slice() { return held<ChannelSlice>(*this, params); }
const FusedPool& Step::fused_pool() const { return held<FusedPool>(*this, params); }
FusedPool& Step::fused_pool() { return held<FusedPool>(*this, params); }
const TensorMapEncode& Step::tensor_map() const { return held<TensorMapEncode>(*this, params); }
TensorMapEncode& Step::tensor_map() { return held<TensorMapEncode>(*this, params); }
const FlipTaps& Step::flip_taps() const { return held<FlipTaps>(*this, params); }
FlipTaps& Step::flip_taps() { return held<FlipTaps>(*this, params); }

int Plan::find_buffer(std::string_view name) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == name) return int(i);
  return -1;
}

const Phase* Plan::phase(std::string_view name) const {
  for (const Phase& p : phases)
    if (p.name == name) return &p;
  return nullptr;
}

ojson plan_to_json(const Plan& p) {
  ojson j;
  j["format"] = kPlanFormat;
  j["kiln_version"] = p.kiln_version;
  j["model"] = p.model;
  j["gpu"] = p.gpu;
  if (!p.arch.empty()) j["arch"] = p.arch;
  j["dtype"] = dtype_name(p.dtype);
  j["train"] = p.train;
  if (p.signal) j["signal"] = true;
  j["arena_bytes"] = p.arena_bytes;
  auto name = [&](int b) { return p.buffers[b].name; };
  ojson bufs = ojson::array();
  for (const Buffer& b : p.buffers) {
    ojson o{{"name", b.name},
            {"shape", b.shape},
            {"dtype", dtype_name(b.dtype)},
            {"role", role_name(b.role)},
            {"offset", b.offset},
            {"bytes", b.bytes()}};
    if (b.view_of >= 0) o["view_of"] = name(b.view_of);
    if (b.view_offset != 0) o["view_offset"] = b.view_offset;
    if (b.view_pitch != 0) o["view_pitch"] = b.view_pitch;
    if (b.layout != Layout::nchw) o["layout"] = layout_name(b.layout);
    if (b.tf32) o["tf32"] = true;
    bufs.push_back(o);
  }
  j["buffers"] = bufs;
  ojson kernels = ojson::array();
  for (const Kernel& k : p.kernels) {
    ojson o{{"name", k.name},
            {"entry", k.entry},
            {"image", k.image},
            {"grid", k.grid},
            {"block", k.block}};
    if (k.clustered()) o["cluster"] = k.cluster; // absent: no cluster
    o["dynamic_smem"] = k.dynamic_smem;
    o["args"] = k.args;
    kernels.push_back(o);
  }
  j["kernels"] = kernels;
  ojson params = ojson::array();
  for (const ParamBinding& b : p.params) {
    ojson o{{"name", b.name}, {"buffer", name(b.buffer)}};
    if (b.grad >= 0) o["grad"] = name(b.grad);
    o["init"] = {b.init_lo, b.init_hi};
    params.push_back(o);
  }
  j["params"] = params;
  ojson ins = ojson::array(), outs = ojson::array();
  for (int b : p.inputs)
    ins.push_back(name(b));
  for (int b : p.outputs)
    outs.push_back(name(b));
  j["inputs"] = ins;
  j["outputs"] = outs;
  if (p.target >= 0) j["target"] = name(p.target);
  if (p.loss >= 0) j["loss"] = name(p.loss);
  ojson phases = ojson::object();
  for (const Phase& ph : p.phases) {
    ojson steps = ojson::array();
    for (const Step& s : ph.steps)
      steps.push_back(step_to_json(s, p));
    phases[ph.name] = steps;
  }
  j["phases"] = phases;
  return j;
}

Shape caller_shape(const Plan& p, const Shape& s) {
  if (!p.signal || s.size() != 4 || s[3] != 1) return s;
  return {s[0], s[1], s[2]};
}

Shape caller_target_shape(const Plan& p) {
  Shape s = p.buffers[size_t(p.target)].shape;
  if (p.signal && s.size() == 3 && s[2] == 1) s.pop_back();
  return s;
}

Tensor held_target(const Plan& p, Tensor t, const std::string& file) {
  const Shape& held = p.buffers[size_t(p.target)].shape;
  if (t.shape() == held) return t;
  if (t.shape() == caller_target_shape(p)) return t.reshaped(held);
  throw Error(
      file, "",
      cat("has shape ", shape_str(t.shape()), ", expected ", shape_str(caller_target_shape(p))));
}

Plan parse_plan(std::string_view text, const std::string& file) {
  try {
    const json j = ju::parse(text, file);
    ju::expect_object(j, "");
    ju::reject_unknown_keys(j, "",
                            {"format", "kiln_version", "model", "gpu", "arch", "dtype", "train",
                             "arena_bytes", "buffers", "params", "inputs", "outputs", "target",
                             "loss", "phases", "kernels", "signal"});
    const std::string format = ju::get_string(ju::require(j, "format", ""), "/format");
    if (format != kPlanFormat)
      throw Error("", "/format",
                  cat("unsupported format \"", format, "\" (this kiln reads ", kPlanFormat, ")"));
    Plan p;
    p.kiln_version = ju::get_string(ju::require(j, "kiln_version", ""), "/kiln_version");
    p.model = ju::get_string(ju::require(j, "model", ""), "/model");
    p.gpu = ju::get_string(ju::require(j, "gpu", ""), "/gpu");
    if (j.contains("arch")) p.arch = ju::get_string(j["arch"], "/arch");
    const std::string dt = ju::get_string(ju::require(j, "dtype", ""), "/dtype");
    auto dtype = parse_dtype(dt);
    if (!dtype || !is_float(*dtype)) throw Error("", "/dtype", cat("unknown dtype \"", dt, "\""));
    p.dtype = *dtype;
    p.train = ju::get_bool(ju::require(j, "train", ""), "/train");
    if (j.contains("signal")) p.signal = ju::get_bool(j["signal"], "/signal");
    p.arena_bytes = ju::get_int(ju::require(j, "arena_bytes", ""), "/arena_bytes");

    std::map<std::string, int> index;
    const json& bufs = ju::require(j, "buffers", "");
    ju::expect_array(bufs, "/buffers");
    std::vector<std::string> views(bufs.size());
    for (size_t i = 0; i < bufs.size(); ++i) {
      const std::string ptr = ju::child("/buffers", i);
      const json& b = bufs[i];
      ju::expect_object(b, ptr);
      ju::reject_unknown_keys(b, ptr,
                              {"name", "shape", "dtype", "role", "offset", "bytes", "view_of",
                               "view_offset", "view_pitch", "layout", "tf32"});
      Buffer buf;
      buf.name = ju::get_string(ju::require(b, "name", ptr), ptr + "/name");
      if (!index.emplace(buf.name, int(i)).second)
        throw Error("", ptr + "/name", cat("duplicate buffer \"", buf.name, "\""));
      const json& shape = ju::require(b, "shape", ptr);
      ju::expect_array(shape, ptr + "/shape");
      if (shape.size() > 8) throw Error("", ptr + "/shape", "more than 8 dimensions");
      int64_t total = 1;
      for (size_t k = 0; k < shape.size(); ++k) {
        const int64_t d = ju::get_int(shape[k], ju::child(ptr + "/shape", k));
        if (d <= 0 || __builtin_mul_overflow(total, d, &total) || total > (int64_t(1) << 40))
          throw Error("", ju::child(ptr + "/shape", k), "dimension out of range");
        buf.shape.push_back(d);
      }
      const std::string bdt = ju::get_string(ju::require(b, "dtype", ptr), ptr + "/dtype");
      auto bt = parse_dtype(bdt);
      if (!bt) throw Error("", ptr + "/dtype", cat("unknown dtype \"", bdt, "\""));
      buf.dtype = *bt;
      buf.role = parse_enum(role_names, ju::get_string(ju::require(b, "role", ptr), ptr + "/role"),
                            ptr + "/role", "role");
      buf.offset = ju::get_int(ju::require(b, "offset", ptr), ptr + "/offset");
      if (ju::get_int(ju::require(b, "bytes", ptr), ptr + "/bytes") != buf.bytes())
        throw Error("", ptr + "/bytes",
                    cat("does not match the shape and dtype (", buf.bytes(), ")"));
      if (b.contains("view_of")) views[i] = ju::get_string(b["view_of"], ptr + "/view_of");
      if (b.contains("view_offset")) {
        if (!b.contains("view_of"))
          throw Error("", ptr + "/view_offset", "is only meaningful with \"view_of\"");
        buf.view_offset = ju::get_int(b["view_offset"], ptr + "/view_offset");
      }
      if (b.contains("view_pitch")) {
        if (!b.contains("view_of"))
          throw Error("", ptr + "/view_pitch", "is only meaningful with \"view_of\"");
        buf.view_pitch = ju::get_int(b["view_pitch"], ptr + "/view_pitch");
      }
      if (b.contains("layout")) {
        const std::string l = ju::get_string(b["layout"], ptr + "/layout");
        if (l != "nchw" && l != "nhwc")
          throw Error("", ptr + "/layout", cat("unknown layout \"", l, "\""));
        buf.layout = l == "nhwc" ? Layout::nhwc : Layout::nchw;
      }
      if (b.contains("tf32")) buf.tf32 = ju::get_bool(b["tf32"], ptr + "/tf32");
      p.buffers.push_back(std::move(buf));
    }
    auto ref = [&](const json& v, const std::string& ptr) {
      const std::string n = ju::get_string(v, ptr);
      auto it = index.find(n);
      if (it == index.end()) throw Error("", ptr, cat("unknown buffer \"", n, "\""));
      return it->second;
    };
    for (size_t i = 0; i < views.size(); ++i)
      if (!views[i].empty())
        p.buffers[i].view_of = ref(bufs[i]["view_of"], ju::child("/buffers", i) + "/view_of");

    std::map<std::string, int> kernel_index;
    if (j.contains("kernels")) {
      const json& ks = j["kernels"];
      ju::expect_array(ks, "/kernels");
      for (size_t i = 0; i < ks.size(); ++i) {
        const std::string ptr = ju::child("/kernels", i);
        ju::expect_object(ks[i], ptr);
        ju::reject_unknown_keys(
            ks[i], ptr,
            {"name", "entry", "image", "grid", "block", "cluster", "dynamic_smem", "args"});
        Kernel k;
        k.name = ju::get_string(ju::require(ks[i], "name", ptr), ptr + "/name");
        k.entry = ju::get_string(ju::require(ks[i], "entry", ptr), ptr + "/entry");
        k.image = ju::get_string(ju::require(ks[i], "image", ptr), ptr + "/image");
        for (const char* key : {"grid", "block", "cluster"}) {
          if (key[0] == 'c' && !ks[i].contains(key)) continue; // optional
          const json& d = ju::require(ks[i], key, ptr);
          const std::string dp = ptr + "/" + key;
          if (!d.is_array() || d.size() != 3) throw Error("", dp, "expected [x, y, z]");
          for (size_t a = 0; a < 3; ++a) {
            const int64_t v = ju::get_int(d[a], ju::child(dp, a));
            if (v < 1 || v > (int64_t(1) << 31) - 1)
              throw Error("", ju::child(dp, a), "out of range");
            (key[0] == 'g' ? k.grid : key[0] == 'b' ? k.block : k.cluster)[a] = v;
          }
        }
        // CUDA's portable limit: 8 blocks per cluster; the grid a multiple of the cluster.
        if (k.cluster[0] * k.cluster[1] * k.cluster[2] > 8)
          throw Error("", ptr + "/cluster", "more than 8 blocks per cluster");
        for (size_t a = 0; a < 3; ++a)
          if (k.grid[a] % k.cluster[a] != 0)
            throw Error("", ptr + "/grid", "not a multiple of the cluster");
        if (k.block[0] * k.block[1] * k.block[2] > 1024)
          throw Error("", ptr + "/block", "more than 1024 threads per block");
        k.dynamic_smem =
            ju::get_int(ju::require(ks[i], "dynamic_smem", ptr), ptr + "/dynamic_smem");
        if (k.dynamic_smem < 0 || k.dynamic_smem > (1 << 20))
          throw Error("", ptr + "/dynamic_smem", "out of range");
        const json& args = ju::require(ks[i], "args", ptr);
        ju::expect_array(args, ptr + "/args");
        if (args.size() > 16) throw Error("", ptr + "/args", "more than 16 arguments");
        for (size_t a = 0; a < args.size(); ++a)
          k.args.push_back(ju::get_string(args[a], ju::child(ptr + "/args", a)));
        if (!kernel_index.emplace(k.name, int(i)).second)
          throw Error("", ptr + "/name", cat("duplicate kernel \"", k.name, "\""));
        p.kernels.push_back(std::move(k));
      }
    }
    if (j.contains("params")) {
      const json& ps = j["params"];
      ju::expect_array(ps, "/params");
      for (size_t i = 0; i < ps.size(); ++i) {
        const std::string ptr = ju::child("/params", i);
        ju::expect_object(ps[i], ptr);
        ju::reject_unknown_keys(ps[i], ptr, {"name", "buffer", "grad", "init"});
        ParamBinding pb;
        pb.name = ju::get_string(ju::require(ps[i], "name", ptr), ptr + "/name");
        pb.buffer = ref(ju::require(ps[i], "buffer", ptr), ptr + "/buffer");
        if (ps[i].contains("grad")) pb.grad = ref(ps[i]["grad"], ptr + "/grad");
        const json& init = ju::require(ps[i], "init", ptr);
        if (!init.is_array() || init.size() != 2)
          throw Error("", ptr + "/init", "expected [low, high]");
        pb.init_lo = ju::get_number(init[0], ptr + "/init/0");
        pb.init_hi = ju::get_number(init[1], ptr + "/init/1");
        if (!(pb.init_lo <= pb.init_hi) || std::abs(pb.init_lo) > 1e6 || std::abs(pb.init_hi) > 1e6)
          throw Error("", ptr + "/init", "expected a finite range low <= high");
        p.params.push_back(pb);
      }
    }
    for (const char* key : {"inputs", "outputs"}) {
      const json& list = ju::require(j, key, "");
      const std::string ptr = std::string("/") + key;
      ju::expect_array(list, ptr);
      for (size_t i = 0; i < list.size(); ++i)
        (key[0] == 'i' ? p.inputs : p.outputs).push_back(ref(list[i], ju::child(ptr, i)));
    }
    if (j.contains("target")) p.target = ref(j["target"], "/target");
    if (j.contains("loss")) p.loss = ref(j["loss"], "/loss");

    const json& phases = ju::require(j, "phases", "");
    ju::expect_object(phases, "/phases");
    for (auto it = phases.begin(); it != phases.end(); ++it) {
      const std::string pp = ju::child("/phases", it.key());
      if (it.key() != "prepare" && it.key() != "forward" && it.key() != "backward" &&
          it.key() != "update")
        throw Error("", pp,
                    cat("unknown phase \"", it.key(), "\" (prepare, forward, backward, update)"));
      ju::expect_array(it.value(), pp);
      Phase ph{it.key(), {}};
      for (size_t i = 0; i < it.value().size(); ++i)
        ph.steps.push_back(step_from_json(it.value()[i], ju::child(pp, i), ref, kernel_index));
      p.phases.push_back(std::move(ph));
    }
    // JSON objects are unordered; phases run in their canonical order.
    auto rank = [](const Phase& ph) {
      return ph.name == "prepare" ? 0 : ph.name == "forward" ? 1 : ph.name == "backward" ? 2 : 3;
    };
    std::sort(p.phases.begin(), p.phases.end(),
              [&](const Phase& a, const Phase& b) { return rank(a) < rank(b); });
    validate_plan(p);
    return p;
  } catch (const Error& e) {
    throw e.in_file(file);
  }
}

Plan load_plan(const std::string& path) {
  const auto bytes = io::read_file(path);
  return parse_plan(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                    path);
}

} // namespace kiln
