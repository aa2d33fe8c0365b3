#include "runtime/step_json.hpp"

#include "runtime/error.hpp"
#include "runtime/json_util.hpp"
#include "runtime/op_json.hpp"
#include "runtime/ops/registry.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

namespace kiln {

namespace ju = json_util;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using sv = std::string_view;

namespace {

constexpr std::pair<StepKind, sv> kind_names[] = {{StepKind::launch, "launch"},
                                                  {StepKind::library, "library"},
                                                  {StepKind::reference, "reference"},
                                                  {StepKind::free, "free"}};

// The keys of a step object in the order plan.json has always written them.
constexpr sv key_order[] = {"kind",
                            "fn",
                            "node",
                            "op",
                            "attrs",
                            "pool",
                            "args",
                            "accumulate",
                            "relu",
                            "activation",
                            "activation_params",
                            "channel_offset",
                            "lr",
                            "weight_decay",
                            "momentum",
                            "betas",
                            "eps",
                            "region",
                            "guard",
                            "threshold",
                            "density",
                            "tensor_map",
                            "kernel",
                            "library"};
constexpr sv common_keys[] = {"kind", "fn",         "node",   "op",     "attrs",
                              "args", "accumulate", "kernel", "library"};
constexpr sv epilogue_keys[] = {"relu", "activation", "activation_params"};
constexpr sv sparse_keys[] = {"guard", "threshold", "density"};

// Reading one alternative's keys from a step object.
struct In {
  const json& s;
  const std::string& ptr;
  bool optional; // absent keys keep the defaults
  const json* get(sv key) const {
    if (s.contains(key)) return &s[std::string(key)];
    if (!optional) throw Error("", ptr, cat("missing key \"", key, "\""));
    return nullptr;
  }
  const json* maybe(sv key) const { return s.contains(key) ? &s[std::string(key)] : nullptr; }
  std::string at(sv key) const { return ptr + "/" + std::string(key); }
  void number(sv key, double& v, bool required = true) const {
    if (const json* j = required ? get(key) : maybe(key)) v = ju::get_number(*j, at(key));
  }
};

void read_int2(const json& v, const std::string& vp, Int2& out) {
  if (!v.is_array() || v.size() != 2) throw Error("", vp, "expected [h, w]");
  out[0] = ju::get_int(v[0], vp + "/0");
  out[1] = ju::get_int(v[1], vp + "/1");
}

// Each FnParams alternative: its keys and its JSON form (zero weight decays and momenta left
// out, as plan.json always has).
struct ParamsJson {
  std::span<const sv> keys;
  FnParams (*read)(const In&);
  void (*write)(const FnParams&, ojson&);
};

constexpr sv no_keys[] = {""};
constexpr sv fold_keys[] = {"eps"}, sgd_keys[] = {"lr", "weight_decay", "momentum"};
constexpr sv adam_keys[] = {"lr", "weight_decay", "betas", "eps"}, region_keys[] = {"region"};
constexpr sv slice_keys[] = {"channel_offset"}, pool_keys[] = {"pool"};
constexpr sv map_keys[] = {"tensor_map"}, taps_keys[] = {"taps"};

std::vector<int64_t> read_ints(const json& o, const std::string& op, sv key) {
  const std::string kp = op + "/" + std::string(key);
  const json& v = ju::require(o, std::string(key), op);
  if (!v.is_array()) throw Error("", kp, "expected an array of integers");
  std::vector<int64_t> r;
  for (size_t i = 0; i < v.size(); ++i)
    r.push_back(ju::get_int(v[i], ju::child(kp, i)));
  return r;
}

const ParamsJson params_json[] = {
    {std::span(no_keys, 0), [](const In&) -> FnParams { return std::monostate{}; },
     [](const FnParams&, ojson&) {}},
    {fold_keys,
     [](const In& in) -> FnParams {
       FoldBn p;
       in.number("eps", p.eps);
       return p;
     },
     [](const FnParams& v, ojson& o) { o["eps"] = std::get<FoldBn>(v).eps; }},
    {sgd_keys,
     [](const In& in) -> FnParams {
       Sgd p;
       in.number("lr", p.lr);
       in.number("weight_decay", p.weight_decay, false);
       in.number("momentum", p.momentum, false);
       return p;
     },
     [](const FnParams& v, ojson& o) {
       const Sgd& p = std::get<Sgd>(v);
       o["lr"] = p.lr;
       if (p.weight_decay != 0) o["weight_decay"] = p.weight_decay;
       if (p.momentum != 0) o["momentum"] = p.momentum;
     }},
    {adam_keys,
     [](const In& in) -> FnParams {
       Adam p;
       in.number("lr", p.lr);
       in.number("weight_decay", p.weight_decay, false);
       if (const json* b = in.get("betas")) {
         if (!b->is_array() || b->size() != 2)
           throw Error("", in.at("betas"), "expected [beta1, beta2]");
         p.beta1 = ju::get_number((*b)[0], in.at("betas") + "/0");
         p.beta2 = ju::get_number((*b)[1], in.at("betas") + "/1");
       }
       in.number("eps", p.eps);
       return p;
     },
     [](const FnParams& v, ojson& o) {
       const Adam& p = std::get<Adam>(v);
       o["lr"] = p.lr;
       if (p.weight_decay != 0) o["weight_decay"] = p.weight_decay;
       o["betas"] = {p.beta1, p.beta2};
       o["eps"] = p.eps;
     }},
    {region_keys,
     [](const In& in) -> FnParams {
       Region p;
       if (const json* r = in.get("region")) {
         const std::string rp = in.at("region");
         ju::expect_object(*r, rp);
         ju::reject_unknown_keys(*r, rp, {"src", "dst", "size", "step"});
         for (auto [key, field] : {std::pair{"src", &p.src}, {"dst", &p.dst}, {"size", &p.size}})
           read_int2(ju::require(*r, key, rp), rp + "/" + key, *field);
         if (r->contains("step")) read_int2((*r)["step"], rp + "/step", p.step);
       }
       return p;
     },
     [](const FnParams& v, ojson& o) {
       const Region& p = std::get<Region>(v);
       o["region"] = {{"src", p.src}, {"dst", p.dst}, {"size", p.size}};
       if (p.step != Int2{1, 1}) o["region"]["step"] = p.step; // plans before it have none
     }},
    {slice_keys,
     [](const In& in) -> FnParams {
       ChannelSlice p;
       if (const json* j = in.get("channel_offset"))
         p.offset = ju::get_int(*j, in.at("channel_offset"));
       return p;
     },
     [](const FnParams& v, ojson& o) { o["channel_offset"] = std::get<ChannelSlice>(v).offset; }},
    {pool_keys,
     [](const In& in) -> FnParams {
       FusedPool p;
       if (const json* j = in.get("pool")) {
         ju::expect_object(*j, in.at("pool"));
         p.pool = attrs_from_json(OpKind::maxpool2d, *j, in.at("pool"), {});
       }
       return p;
     },
     [](const FnParams& v, ojson& o) {
       o["pool"] = attrs_to_json(OpKind::maxpool2d, std::get<FusedPool>(v).pool, false);
     }},
    {map_keys,
     [](const In& in) -> FnParams {
       TensorMapEncode p;
       if (const json* j = in.get("tensor_map")) {
         const std::string mp = in.at("tensor_map");
         ju::expect_object(*j, mp);
         ju::reject_unknown_keys(*j, mp,
                                 {"buffer", "offset", "dtype", "dims", "strides", "box",
                                  "element_strides", "swizzle", "oob_fill", "mode", "lower",
                                  "upper"});
         p.buffer = ju::get_string(ju::require(*j, "buffer", mp), mp + "/buffer");
         p.offset = ju::get_int(ju::require(*j, "offset", mp), mp + "/offset");
         const std::string t = ju::get_string(ju::require(*j, "dtype", mp), mp + "/dtype");
         const std::optional<DType> dt = parse_dtype(t);
         if (!dt) throw Error("", mp + "/dtype", cat("unknown dtype \"", t, "\""));
         p.dtype = *dt;
         p.dims = read_ints(*j, mp, "dims");
         p.strides = read_ints(*j, mp, "strides");
         p.box = read_ints(*j, mp, "box");
         p.element_strides = read_ints(*j, mp, "element_strides");
         p.swizzle = ju::get_int(ju::require(*j, "swizzle", mp), mp + "/swizzle");
         p.oob_fill = ju::get_string(ju::require(*j, "oob_fill", mp), mp + "/oob_fill");
         if (const auto m = j->find("mode"); m != j->end()) // absent: tiled
           p.mode = ju::get_string(*m, mp + "/mode");
         if (j->contains("lower")) p.lower = read_ints(*j, mp, "lower");
         if (j->contains("upper")) p.upper = read_ints(*j, mp, "upper");
       }
       return p;
     },
     [](const FnParams& v, ojson& o) {
       const TensorMapEncode& p = std::get<TensorMapEncode>(v);
       o["tensor_map"] = {{"buffer", p.buffer},
                          {"offset", p.offset},
                          {"dtype", std::string(dtype_name(p.dtype))},
                          {"dims", p.dims},
                          {"strides", p.strides},
                          {"box", p.box},
                          {"element_strides", p.element_strides},
                          {"swizzle", p.swizzle},
                          {"oob_fill", p.oob_fill}};
       if (p.mode != "tiled") {
         o["tensor_map"]["mode"] = p.mode;
         o["tensor_map"]["lower"] = p.lower;
         o["tensor_map"]["upper"] = p.upper;
       }
     }},
    {taps_keys,
     [](const In& in) -> FnParams {
       FlipTaps p;
       if (const json* t = in.get("taps")) {
         const std::string tp = in.at("taps");
         ju::expect_object(*t, tp);
         ju::reject_unknown_keys(*t, tp, {"first", "step"});
         read_int2(ju::require(*t, "first", tp), tp + "/first", p.first);
         read_int2(ju::require(*t, "step", tp), tp + "/step", p.step);
       }
       return p;
     },
     [](const FnParams& v, ojson& o) {
       const FlipTaps& p = std::get<FlipTaps>(v);
       o["taps"] = {{"first", p.first}, {"step", p.step}};
     }},
};
static_assert(std::size(params_json) == std::variant_size_v<FnParams>,
              "a JSON form per alternative");

bool among(std::span<const sv> keys, sv key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// Rejects keys that are no part of a step of `def`, naming the parameters that own them.
void reject_foreign_keys(const json& s, const std::string& ptr, const FnDef& def) {
  std::vector<sv> known(std::begin(common_keys), std::end(common_keys));
  known.insert(known.end(), std::begin(epilogue_keys), std::end(epilogue_keys));
  known.insert(known.end(), std::begin(sparse_keys), std::end(sparse_keys));
  for (sv k : params_json[def.params].keys)
    known.push_back(k);
  for (auto it = s.begin(); it != s.end(); ++it) {
    const sv key = it.key();
    if (among(known, key)) continue;
    for (size_t i = 0; i < std::size(params_json); ++i)
      if (among(params_json[i].keys, key))
        throw Error("", ju::child(ptr, key),
                    cat("is a parameter of ", params_name(i), " steps; ", def.name, " takes ",
                        def.params == 0 ? "none" : cat(params_name(def.params), " parameters")));
    std::string list;
    for (sv k : known)
      list += (list.empty() ? "" : ", ") + std::string(k);
    throw Error("", ju::child(ptr, key), cat("unknown key \"", key, "\" (known: ", list, ")"));
  }
}

Epilogue epilogue_from_json(const json& s, const std::string& ptr) {
  Epilogue e;
  if (s.contains("relu") && ju::get_bool(s["relu"], ptr + "/relu")) e.activation = Activation::relu;
  if (s.contains("activation")) {
    if (e.activation != Activation::none)
      throw Error("", ptr + "/activation", "comes instead of \"relu\", not with it");
    const std::string a = ju::get_string(s["activation"], ptr + "/activation");
    const auto kind = parse_activation_kind(a);
    if (!kind) throw Error("", ptr + "/activation", cat("unknown activation \"", a, "\""));
    std::vector<double> params;
    if (s.contains("activation_params")) {
      const json& p = s["activation_params"];
      const std::string pp = ptr + "/activation_params";
      if (!p.is_array()) throw Error("", pp, "expected an array of numbers");
      for (size_t i = 0; i < p.size(); ++i) {
        if (!p[i].is_number()) throw Error("", ju::child(pp, i), "expected a number");
        params.push_back(p[i].get<double>());
      }
    }
    try {
      e.activation = make_activation(*kind, params);
    } catch (const Error& err) {
      throw Error("", ptr + "/activation_params", err.message());
    }
  } else if (s.contains("activation_params")) {
    throw Error("", ptr + "/activation_params", "comes only with \"activation\"");
  }
  return e;
}

SparseDispatch sparse_from_json(const json& s, const std::string& ptr) {
  SparseDispatch d;
  if (s.contains("guard")) {
    const std::string g = ju::get_string(s["guard"], ptr + "/guard");
    if (g != "dense" && g != "sparse")
      throw Error("", ptr + "/guard", cat("unknown guard \"", g, "\" (dense, sparse)"));
    d.guard = g == "dense" ? Guard::dense : Guard::sparse;
    d.threshold = ju::get_int(ju::require(s, "threshold", ptr), ptr + "/threshold");
  } else if (s.contains("threshold")) {
    throw Error("", ptr + "/threshold", "is the threshold of a guard; the step has none");
  }
  if (s.contains("density")) d.density = ju::get_number(s["density"], ptr + "/density");
  return d;
}

template <class E, size_t N>
E parse_enum(const std::pair<E, sv> (&names)[N], const std::string& s, const std::string& ptr,
             sv what) {
  for (auto& [e, n] : names)
    if (n == s) return e;
  throw Error("", ptr, cat("unknown ", what, " \"", s, "\""));
}

// o's keys in key_order (any other after them, as inserted).
ojson ordered(const ojson& o) {
  ojson r;
  for (sv key : key_order)
    if (o.contains(key)) r[std::string(key)] = o[std::string(key)];
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!r.contains(it.key())) r[it.key()] = it.value();
  return r;
}

} // namespace

std::string_view step_kind_name(StepKind k) {
  for (auto& [e, n] : kind_names)
    if (e == k) return n;
  return "?";
}

ojson step_to_json(const Step& s, const Plan& p) {
  auto name = [&](int b) { return p.buffers[b].name; };
  ojson o;
  o["kind"] = step_kind_name(s.kind);
  if (s.kind == StepKind::free) {
    o["buffer"] = name(s.buffer);
    return o;
  }
  o["fn"] = fn_name(s.fn);
  o["node"] = s.node;
  o["op"] = op_name(s.op);
  o["attrs"] = attrs_to_json(s.op, s.attrs, false);
  // Sorted by role: JSON objects are unordered, so this is the form that round-trips.
  std::vector<const Arg*> sorted;
  for (const Arg& a : s.args)
    sorted.push_back(&a);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->role < b->role; });
  ojson args = ojson::object();
  for (const Arg* a : sorted)
    args[a->role] = name(a->buffer);
  o["args"] = args;
  if (s.accumulate) o["accumulate"] = true;
  if (s.epilogue.activation == Activation::relu)
    o["relu"] = true;
  else if (s.epilogue.activation != Activation::none) {
    o["activation"] = activation_name(s.epilogue.activation);
    const std::vector<float> p = activation_params(s.epilogue.activation);
    if (!p.empty()) o["activation_params"] = p;
  }
  const FnDef& def = fn_def(s.fn);
  if (!(def.params_optional && s.params == default_params(def.params)))
    params_json[s.params.index()].write(s.params, o);
  if (s.sparse.guard != Guard::none) {
    o["guard"] = guard_name(s.sparse.guard);
    o["threshold"] = s.sparse.threshold;
  }
  if (s.sparse.density >= 0) o["density"] = s.sparse.density;
  if (s.kind == StepKind::launch) o["kernel"] = p.kernels[s.kernel].name;
  if (s.kind == StepKind::library) o["library"] = s.library;
  return ordered(o);
}

Step step_from_json(const json& s, const std::string& ptr,
                    const std::function<int(const json&, const std::string&)>& buffer,
                    const std::map<std::string, int>& kernels) {
  ju::expect_object(s, ptr);
  Step st;
  st.kind = parse_enum(kind_names, ju::get_string(ju::require(s, "kind", ptr), ptr + "/kind"),
                       ptr + "/kind", "step kind");
  if (st.kind == StepKind::free) {
    ju::reject_unknown_keys(s, ptr, {"kind", "buffer"});
    st.buffer = buffer(ju::require(s, "buffer", ptr), ptr + "/buffer");
    return st;
  }
  const std::string fn = ju::get_string(ju::require(s, "fn", ptr), ptr + "/fn");
  auto f = parse_fn(fn);
  if (!f) throw Error("", ptr + "/fn", cat("unknown function \"", fn, "\""));
  st.fn = *f;
  const FnDef& def = fn_def(st.fn);
  reject_foreign_keys(s, ptr, def);
  st.node = ju::get_string(ju::require(s, "node", ptr), ptr + "/node");
  const std::string op = ju::get_string(ju::require(s, "op", ptr), ptr + "/op");
  auto o = parse_op(op);
  if (!o) throw Error("", ptr + "/op", cat("unknown op \"", op, "\""));
  st.op = *o;
  const json& attrs = ju::require(s, "attrs", ptr);
  ju::expect_object(attrs, ptr + "/attrs");
  st.attrs = attrs_from_json(st.op, attrs, ptr + "/attrs", {});
  const json& args = ju::require(s, "args", ptr);
  ju::expect_object(args, ptr + "/args");
  for (auto a = args.begin(); a != args.end(); ++a)
    st.args.push_back({a.key(), buffer(a.value(), ju::child(ptr + "/args", a.key()))});
  if (s.contains("accumulate")) st.accumulate = ju::get_bool(s["accumulate"], ptr + "/accumulate");
  st.epilogue = epilogue_from_json(s, ptr);
  st.sparse = sparse_from_json(s, ptr);
  st.params = params_json[def.params].read(In{s, ptr, def.params_optional});
  if (st.kind == StepKind::launch) {
    const std::string kn = ju::get_string(ju::require(s, "kernel", ptr), ptr + "/kernel");
    auto it = kernels.find(kn);
    if (it == kernels.end()) throw Error("", ptr + "/kernel", cat("unknown kernel \"", kn, "\""));
    st.kernel = it->second;
  }
  if (st.kind == StepKind::library)
    st.library = ju::get_string(ju::require(s, "library", ptr), ptr + "/library");
  return st;
}

} // namespace kiln
