#include "generator/tune/layer_spec.hpp"

#include "generator/model/model_json.hpp"
#include "runtime/error.hpp"

#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace kiln {

namespace {

struct Grammar {
  std::set<std::string> required, optional;
};

const std::map<std::string, Grammar>& grammars() {
  static const std::map<std::string, Grammar> g = {
      {"conv", {{"c", "h", "w", "k", "r"}, {"n", "s", "p", "d", "g", "bias", "relu"}}},
      {"linear", {{"c", "k"}, {"n", "bias", "relu"}}},
      {"pool", {{"c", "h", "w", "r"}, {"n", "s", "p", "mode"}}},
  };
  return g;
}

class Spec {
public:
  Spec(const std::string& text, std::string op, std::map<std::string, std::string> values)
      : text_(text), op_(std::move(op)), values_(std::move(values)) {}

  bool has(const std::string& k) const { return values_.count(k) > 0; }

  [[noreturn]] void fail(const std::string& why) const { throw Error("", text_, why); }

  int64_t number(const std::string& k, const std::string& v, int64_t lo) const {
    int64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size())
      fail(cat(k, "=", v, ": not a whole number"));
    if (x < lo || x > (int64_t(1) << 31)) fail(cat(k, "=", v, ": must be at least ", lo));
    return x;
  }
  int64_t integer(const std::string& k, int64_t fallback, int64_t lo = 1) const {
    return has(k) ? number(k, values_.at(k), lo) : fallback;
  }
  // One number or HxW, as a JSON value the model format takes.
  nlohmann::json pair(const std::string& k, nlohmann::json fallback, int64_t lo = 1) const {
    if (!has(k)) return fallback;
    const std::string& v = values_.at(k);
    const size_t x = v.find('x');
    if (x == std::string::npos) return number(k, v, lo);
    return nlohmann::json::array({number(k, v.substr(0, x), lo), number(k, v.substr(x + 1), lo)});
  }
  bool flag(const std::string& k, bool fallback) const {
    if (!has(k)) return fallback;
    const std::string& v = values_.at(k);
    if (v != "0" && v != "1") fail(cat(k, "=", v, ": must be 0 or 1"));
    return v == "1";
  }
  std::string word(const std::string& k, const std::string& fallback,
                   std::initializer_list<const char*> allowed) const {
    if (!has(k)) return fallback;
    for (const char* a : allowed)
      if (values_.at(k) == a) return a;
    fail(cat(k, "=", values_.at(k), ": not one of the values it takes"));
  }

private:
  const std::string& text_;
  std::string op_;
  std::map<std::string, std::string> values_;
};

} // namespace

bool is_layer_spec(const std::string& arg) {
  const size_t colon = arg.find(':');
  return colon != std::string::npos && grammars().count(arg.substr(0, colon)) > 0;
}

Model layer_spec_model(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string op = colon == std::string::npos ? "" : text.substr(0, colon);
  const auto g = grammars().find(op);
  if (g == grammars().end())
    throw Error("", text, "a layer spec starts with conv:, linear: or pool:");
  std::map<std::string, std::string> values;
  std::string rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("", text, cat("\"", item, "\": expected key=value"));
    const std::string key = item.substr(0, eq);
    if (!g->second.required.count(key) && !g->second.optional.count(key)) {
      std::string known;
      for (const auto* set : {&g->second.required, &g->second.optional})
        for (const std::string& k : *set)
          known += (known.empty() ? "" : ", ") + k;
      throw Error("", text, cat("unknown key \"", key, "\" for ", op, " (known: ", known, ")"));
    }
    if (!values.emplace(key, item.substr(eq + 1)).second)
      throw Error("", text, cat("key \"", key, "\" given twice"));
    if (comma == std::string::npos) break;
    if (rest.empty()) throw Error("", text, "a trailing comma");
  }
  for (const std::string& k : g->second.required)
    if (!values.count(k)) throw Error("", text, cat("missing key \"", k, "\""));
  const Spec s(text, op, values);
  const int64_t n = s.integer("n", 1), c = s.integer("c", 0);
  nlohmann::json layer, layers = nlohmann::json::array(), shape;
  if (op == "linear") {
    shape = {n, c};
    layer = {{"name", "linear"},
             {"op", "linear"},
             {"out_features", s.integer("k", 0)},
             {"bias", s.flag("bias", true)}};
  } else {
    shape = {n, c, s.integer("h", 0), s.integer("w", 0)};
    if (op == "conv") {
      layer = {{"name", "conv"},
               {"op", "conv2d"},
               {"out_channels", s.integer("k", 0)},
               {"kernel", s.pair("r", 1)},
               {"stride", s.pair("s", 1)},
               {"padding", s.pair("p", 0, 0)},
               {"dilation", s.pair("d", 1)},
               {"groups", s.integer("g", 1)},
               {"bias", s.flag("bias", false)}};
    } else {
      const std::string mode = s.word("mode", "max", {"max", "avg"});
      layer = {{"name", "pool"},
               {"op", mode + "pool2d"},
               {"kernel", s.pair("r", 1)},
               {"stride", s.pair("s", s.pair("r", 1))},
               {"padding", s.pair("p", 0, 0)}};
    }
  }
  layers.push_back(layer);
  if (op != "pool" && s.flag("relu", false)) layers.push_back({{"name", "relu"}, {"op", "relu"}});
  std::string model_name = text;
  for (char& ch : model_name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  const nlohmann::json model = {{"format", "kiln-model/1"},
                                {"name", model_name},
                                {"input", {{"name", "x"}, {"shape", shape}}},
                                {"layers", layers}};
  try {
    return parse_model(model.dump(), "layer spec");
  } catch (const Error& e) {
    throw Error("", text, e.message());
  }
}

} // namespace kiln
