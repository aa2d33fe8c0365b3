#include "generator/model/model_json.hpp"

#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"
#include "runtime/op_json.hpp"

#include <algorithm>
#include <map>
#include <queue>

namespace kiln {

namespace ju = json_util;
using json = nlohmann::json;

namespace {

constexpr int64_t kMaxDim = int64_t(1) << 31;

Shape parse_shape(const json& v, const std::string& ptr) {
  ju::expect_array(v, ptr);
  if (v.size() != 4 && v.size() != 3 && v.size() != 2)
    throw Error("", ptr,
                cat("expected [N, C, H, W], [N, C, L] (a 1-D signal) or [N, F], got ", v.size(),
                    " dimensions"));
  Shape s;
  int64_t total = 1;
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t d = ju::get_int(v[i], ju::child(ptr, i));
    if (d <= 0) throw Error("", ju::child(ptr, i), cat("dimension must be positive, got ", d));
    if (d > kMaxDim || __builtin_mul_overflow(total, d, &total) || total > (int64_t(1) << 40))
      throw Error("", ju::child(ptr, i), "shape is absurdly large");
    s.push_back(d);
  }
  return s;
}

// Hints plan the sparse family for a conv2d layer's input (DESIGN.md 4.1, 5.4).
Hints parse_hints(const json& v, const std::string& ptr, OpKind op) {
  ju::expect_object(v, ptr);
  ju::reject_unknown_keys(v, ptr, {"activation_density", "variant", "sparse_threshold"});
  if (op != OpKind::conv2d && !v.empty())
    throw Error("", ptr, cat("hints apply to conv2d layers (they plan the sparse family for the "
                             "layer's input), not to a ", op_name(op)));
  Hints h;
  if (v.contains("activation_density")) {
    const std::string p = ju::child(ptr, "activation_density");
    const double d = ju::get_number(v["activation_density"], p);
    if (!(d >= 0 && d <= 1)) throw Error("", p, cat("must be within [0, 1], got ", d));
    h.activation_density = d;
  }
  if (v.contains("variant")) {
    const std::string p = ju::child(ptr, "variant");
    h.variant = ju::get_string(v["variant"], p);
    if (h.variant != "sparse" && h.variant != "dense")
      throw Error("", p, cat("unknown variant \"", *h.variant, "\" (sparse: always the sparse "
                             "family; dense: never)"));
  }
  if (v.contains("sparse_threshold")) {
    const std::string p = ju::child(ptr, "sparse_threshold");
    const double t = ju::get_number(v["sparse_threshold"], p);
    if (!(t >= 0 && t <= 1)) throw Error("", p, cat("must be within [0, 1], got ", t));
    if (h.variant)
      throw Error("", p, cat("sets a dispatch's threshold; hints.variant \"", *h.variant,
                             "\" plans no dispatch"));
    h.sparse_threshold = t;
  }
  return h;
}

struct RawLayer {
  Node node;
  std::vector<std::string> input_names; // empty: the previous layer
  std::string ptr;
};

// Orders nodes so every input precedes its consumer, keeping file order where possible;
// reports a cycle by its layer names.
std::vector<int> topological_order(const std::vector<std::vector<int>>& inputs,
                                   const std::vector<RawLayer>& layers, const std::string& file) {
  const size_t n = inputs.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (int r : inputs[i])
      if (r != kModelInput) ++pending[i], users[r].push_back(int(i));
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(int(i));
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() == n) return order;
  // Every unplaced node waits on an unplaced input: walk inputs until a node repeats.
  int start = 0;
  while (pending[start] == 0) ++start;
  std::vector<int> path{start};
  std::vector<int> seen(n, -1);
  seen[start] = 0;
  for (;;) {
    int cur = path.back(), next = -1;
    for (int r : inputs[cur])
      if (r != kModelInput && pending[r] > 0) { next = r; break; }
    if (seen[next] >= 0) {
      std::string cycle;
      for (size_t k = size_t(seen[next]); k < path.size(); ++k)
        cycle = layers[path[k]].node.name + (cycle.empty() ? "" : " -> ") + cycle;
      cycle = layers[next].node.name + " -> " + cycle;
      throw Error(file, cat("layer \"", layers[next].node.name, "\""),
                  cat("the inputs form a cycle: ", cycle));
    }
    seen[next] = int(path.size());
    path.push_back(next);
  }
}

} // namespace

Model parse_model(std::string_view text, const std::string& file) {
  try {
    const json root = ju::parse(text, file);
    ju::expect_object(root, "");
    ju::reject_unknown_keys(root, "", {"format", "name", "input", "dtype", "layers", "outputs"});
    Model m;
    m.file = file;
    const std::string format = ju::get_string(ju::require(root, "format", ""), "/format");
    if (format != kModelFormat)
      throw Error("", "/format",
                  cat("unsupported format \"", format, "\" (this kiln reads ", kModelFormat, ")"));
    m.name = ju::get_string(ju::require(root, "name", ""), "/name");
    if (m.name.empty()) throw Error("", "/name", "must not be empty");

    const json& input = ju::require(root, "input", "");
    ju::expect_object(input, "/input");
    ju::reject_unknown_keys(input, "/input", {"name", "shape"});
    if (input.contains("name")) m.input_name = ju::get_string(input["name"], "/input/name");
    if (m.input_name.empty()) throw Error("", "/input/name", "must not be empty");
    m.input_shape = parse_shape(ju::require(input, "shape", "/input"), "/input/shape");
    if (m.input_shape.size() == 3) { // a 1-D signal, held as [N, C, L, 1]
      m.signal = true;
      m.input_shape.push_back(1);
    }

    if (root.contains("dtype")) {
      const std::string d = ju::get_string(root["dtype"], "/dtype");
      auto t = parse_dtype(d);
      if (!t || !is_float(*t))
        throw Error("", "/dtype", cat("unknown dtype \"", d, "\" (f32, f16, bf16 or f64)"));
      m.dtype = *t;
    }

    const json& layers = ju::require(root, "layers", "");
    ju::expect_array(layers, "/layers");
    if (layers.empty()) throw Error("", "/layers", "a model needs at least one layer");
    if (layers.size() > 100000) throw Error("", "/layers", "absurdly many layers");

    std::vector<RawLayer> raw;
    std::map<std::string, int> index; // name -> layer index
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string ptr = ju::child("/layers", i);
      const json& l = layers[i];
      ju::expect_object(l, ptr);
      RawLayer r;
      r.ptr = ptr;
      r.node.name = ju::get_string(ju::require(l, "name", ptr), ptr + "/name");
      if (r.node.name.empty()) throw Error("", ptr + "/name", "must not be empty");
      if (r.node.name == m.input_name || index.count(r.node.name))
        throw Error("", ptr + "/name", cat("duplicate layer name \"", r.node.name, "\""));
      const std::string op = ju::get_string(ju::require(l, "op", ptr), ptr + "/op");
      auto kind = parse_op(op);
      if (!kind) {
        std::string known;
        for (OpKind k : all_ops) known += (known.empty() ? "" : ", ") + std::string(op_name(k));
        throw Error("", ptr + "/op", cat("unknown op \"", op, "\" (known: ", known, ")"));
      }
      r.node.op = *kind;
      r.node.attrs = attrs_from_json(*kind, l, ptr, {"name", "op", "inputs", "hints"});
      // "upsample2d" is resize's earlier spelling, whose scale defaulted to 2.
      if (op == "upsample2d" && !l.contains("scale") && !l.contains("size"))
        r.node.attrs.scale = {2, 2};
      if (l.contains("hints")) r.node.hints = parse_hints(l["hints"], ptr + "/hints", *kind);
      if (l.contains("inputs")) {
        const json& ins = l["inputs"];
        const std::string ip = ptr + "/inputs";
        ju::expect_array(ins, ip);
        for (size_t k = 0; k < ins.size(); ++k)
          r.input_names.push_back(ju::get_string(ins[k], ju::child(ip, k)));
      }
      const Arity ar = op_arity(*kind);
      const size_t count = l.contains("inputs") ? r.input_names.size() : 1;
      if (int(count) < ar.min || (!ar.variadic && int(count) != ar.min))
        throw Error("", ptr + (l.contains("inputs") ? "/inputs" : ""),
                    cat(op, " takes ", ar.variadic ? "at least " : "", ar.min, " input",
                        ar.min > 1 ? "s" : "", ", got ", count));
      index[r.node.name] = int(i);
      raw.push_back(std::move(r));
    }

    // Resolve references by name (file indices for now).
    std::vector<std::vector<int>> inputs(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
      if (!layers[i].contains("inputs")) {
        inputs[i].push_back(i == 0 ? kModelInput : int(i) - 1);
        continue;
      }
      for (size_t k = 0; k < raw[i].input_names.size(); ++k) {
        const std::string& n = raw[i].input_names[k];
        if (n == m.input_name) inputs[i].push_back(kModelInput);
        else if (auto it = index.find(n); it != index.end()) {
          if (it->second == int(i))
            throw Error("", ju::child(raw[i].ptr + "/inputs", k),
                        cat("layer \"", n, "\" cannot be its own input"));
          inputs[i].push_back(it->second);
        } else
          throw Error("", ju::child(raw[i].ptr + "/inputs", k),
                      cat("unknown input \"", n, "\" (no layer or model input has that name)"));
      }
    }

    const std::vector<int> order = topological_order(inputs, raw, file);
    std::vector<int> position(raw.size());
    for (size_t p = 0; p < order.size(); ++p) position[order[p]] = int(p);
    for (int i : order) {
      Node n = std::move(raw[i].node);
      for (int r : inputs[i]) n.inputs.push_back(r == kModelInput ? kModelInput : position[r]);
      m.nodes.push_back(std::move(n));
    }

    if (root.contains("outputs")) {
      const json& outs = root["outputs"];
      ju::expect_array(outs, "/outputs");
      if (outs.empty()) throw Error("", "/outputs", "a model needs at least one output");
      for (size_t k = 0; k < outs.size(); ++k) {
        const std::string p = ju::child("/outputs", k);
        const std::string n = ju::get_string(outs[k], p);
        auto it = index.find(n);
        if (it == index.end()) throw Error("", p, cat("unknown output \"", n, "\" (not a layer)"));
        m.outputs.push_back(position[it->second]);
      }
    } else {
      m.outputs.push_back(position[int(raw.size()) - 1]);
    }
    infer_shapes(m);
    return m;
  } catch (const Error& e) {
    throw e.in_file(file);
  }
}

Model load_model(const std::string& path) {
  const std::vector<std::byte> bytes = io::read_file(path);
  return parse_model(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                     path);
}

nlohmann::ordered_json model_to_json(const Model& m) {
  using oj = nlohmann::ordered_json;
  oj root;
  root["format"] = kModelFormat;
  root["name"] = m.name;
  root["input"] = oj{{"name", m.input_name}, {"shape", caller_input_shape(m)}};
  root["dtype"] = dtype_name(m.dtype);
  oj layers = oj::array();
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    oj l;
    l["name"] = n.name;
    l["op"] = op_name(n.op);
    const auto attrs = attrs_to_json(n.op, n.attrs, true);
    for (auto& [k, v] : attrs.items()) l[k] = v;
    const int previous = i == 0 ? kModelInput : int(i) - 1;
    if (n.inputs.size() != 1 || n.inputs[0] != previous) {
      oj ins = oj::array();
      for (int r : n.inputs) ins.push_back(m.name_of(r));
      l["inputs"] = ins;
    }
    if (n.hints.activation_density || n.hints.variant || n.hints.sparse_threshold) {
      oj h;
      if (n.hints.activation_density) h["activation_density"] = *n.hints.activation_density;
      if (n.hints.variant) h["variant"] = *n.hints.variant;
      if (n.hints.sparse_threshold) h["sparse_threshold"] = *n.hints.sparse_threshold;
      l["hints"] = h;
    }
    layers.push_back(l);
  }
  root["layers"] = layers;
  oj outs = oj::array();
  for (int o : m.outputs) outs.push_back(m.nodes[o].name);
  root["outputs"] = outs;
  return root;
}

std::string model_to_text(const Model& m) { return model_to_json(m).dump(2) + "\n"; }

void save_model(const Model& m, const std::string& path) {
  io::write_file_atomic(path, model_to_text(m));
}

} // namespace kiln
