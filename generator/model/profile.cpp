#include "generator/model/profile.hpp"

#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace kiln {

namespace ju = json_util;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

double fraction(const json& v, const std::string& ptr) {
  const double d = ju::get_number(v, ptr);
  if (!(d >= 0 && d <= 1)) throw Error("", ptr, cat("must be within [0, 1], got ", d));
  return d;
}

int64_t count(const json& v, const std::string& ptr) {
  const int64_t n = ju::get_int(v, ptr);
  if (n < 0) throw Error("", ptr, cat("must not be negative, got ", n));
  return n;
}

TileSpread parse_spread(const json& v, const std::string& ptr) {
  ju::expect_object(v, ptr);
  ju::reject_unknown_keys(v, ptr, {"count", "min", "p10", "median", "p90", "max", "std"});
  TileSpread t;
  t.count = count(ju::require(v, "count", ptr), ptr + "/count");
  t.min = fraction(ju::require(v, "min", ptr), ptr + "/min");
  t.p10 = fraction(ju::require(v, "p10", ptr), ptr + "/p10");
  t.median = fraction(ju::require(v, "median", ptr), ptr + "/median");
  t.p90 = fraction(ju::require(v, "p90", ptr), ptr + "/p90");
  t.max = fraction(ju::require(v, "max", ptr), ptr + "/max");
  t.stddev = fraction(ju::require(v, "std", ptr), ptr + "/std");
  if (!(t.min <= t.p10 && t.p10 <= t.median && t.median <= t.p90 && t.p90 <= t.max))
    throw Error("", ptr, "expected min <= p10 <= median <= p90 <= max");
  return t;
}

LayerProfile parse_layer(const json& v, const std::string& ptr) {
  ju::expect_object(v, ptr);
  ju::reject_unknown_keys(v, ptr, {"layer", "input", "density", "elements", "nonzeros", "tiles"});
  LayerProfile l;
  l.layer = ju::get_string(ju::require(v, "layer", ptr), ptr + "/layer");
  l.input = ju::get_string(ju::require(v, "input", ptr), ptr + "/input");
  l.density = fraction(ju::require(v, "density", ptr), ptr + "/density");
  l.elements = count(ju::require(v, "elements", ptr), ptr + "/elements");
  l.nonzeros = count(ju::require(v, "nonzeros", ptr), ptr + "/nonzeros");
  if (l.nonzeros > l.elements)
    throw Error("", ptr + "/nonzeros", cat(l.nonzeros, " nonzeros in ", l.elements, " elements"));
  // Against the density as profile_to_text writes it (6 decimals), so that what reads also
  // reads once written.
  if (l.elements > 0 && std::abs(double(l.nonzeros) / double(l.elements) -
                                 std::round(l.density * 1e6) / 1e6) > 1e-3)
    throw Error("", ptr + "/density",
                cat(l.density, " is not nonzeros / elements (", l.nonzeros, " / ", l.elements, ")"));
  if (v.contains("tiles")) l.tiles = parse_spread(v["tiles"], ptr + "/tiles");
  return l;
}

} // namespace

Profile parse_profile(std::string_view text, const std::string& file) {
  try {
    const json j = ju::parse(text, file);
    ju::expect_object(j, "");
    ju::reject_unknown_keys(j, "",
                            {"format", "kiln_version", "model", "gpu", "nodes", "input_shape",
                             "dtype", "device", "input", "weights", "tile", "densities"});
    const std::string f = ju::get_string(ju::require(j, "format", ""), "/format");
    if (f != kProfileFormat)
      throw Error("", "/format", cat("unsupported format \"", f, "\" (this kiln reads ", kProfileFormat, ")"));
    if (!j.contains("nodes") && !j.contains("densities"))
      throw Error("", "", "a profile holds layer times (\"nodes\"), densities (\"densities\") or both");
    Profile p;
    p.file = file;
    if (j.contains("model")) p.model = ju::get_string(j["model"], "/model");
    if (j.contains("gpu")) p.gpu = ju::get_string(j["gpu"], "/gpu");
    if (j.contains("device")) p.device = ju::get_string(j["device"], "/device");
    if (j.contains("input")) p.input = ju::get_string(j["input"], "/input");
    if (j.contains("weights")) p.weights = ju::get_string(j["weights"], "/weights");
    if (j.contains("dtype")) {
      const std::string t = ju::get_string(j["dtype"], "/dtype");
      const auto d = parse_dtype(t);
      if (!d || !is_float(*d)) throw Error("", "/dtype", cat("unknown dtype \"", t, "\""));
      p.dtype = *d;
    }
    if (j.contains("input_shape")) {
      const json& s = j["input_shape"];
      ju::expect_array(s, "/input_shape");
      if (s.size() > 8) throw Error("", "/input_shape", "more than 8 dimensions");
      for (size_t i = 0; i < s.size(); ++i) {
        const int64_t d = ju::get_int(s[i], ju::child("/input_shape", i));
        if (d <= 0 || d > (int64_t(1) << 31))
          throw Error("", ju::child("/input_shape", i), "dimension out of range");
        p.input_shape.push_back(d);
      }
    }
    if (j.contains("tile")) {
      const json& t = j["tile"];
      if (!t.is_array() || t.size() != 2) throw Error("", "/tile", "expected [rows, columns]");
      for (size_t i = 0; i < 2; ++i) {
        p.tile[i] = ju::get_int(t[i], ju::child("/tile", i));
        if (p.tile[i] < 1 || p.tile[i] > 65536)
          throw Error("", ju::child("/tile", i), "must be within 1..65536");
      }
    }
    if (j.contains("nodes")) {
      const json& nodes = j["nodes"];
      ju::expect_object(nodes, "/nodes");
      for (auto it = nodes.begin(); it != nodes.end(); ++it) {
        const std::string ptr = ju::child("/nodes", it.key());
        ju::expect_object(it.value(), ptr);
        ju::reject_unknown_keys(it.value(), ptr, {"forward_ms", "backward_ms"});
        LayerTimes t;
        t.forward_us =
            1000 * ju::get_number(ju::require(it.value(), "forward_ms", ptr), ptr + "/forward_ms");
        t.backward_us = 1000 * ju::get_number(ju::require(it.value(), "backward_ms", ptr),
                                              ptr + "/backward_ms");
        // Bounded, so that the microseconds and their milliseconds stay finite both ways.
        if (!(t.forward_us >= 0 && t.forward_us <= 1e15) ||
            !(t.backward_us >= 0 && t.backward_us <= 1e15))
          throw Error("", ptr, "times must be non-negative and at most 1e12 ms");
        p.times[it.key()] = t;
      }
    }
    if (j.contains("densities")) {
      const json& ds = j["densities"];
      ju::expect_array(ds, "/densities");
      for (size_t i = 0; i < ds.size(); ++i) {
        const std::string ptr = ju::child("/densities", i);
        LayerProfile l = parse_layer(ds[i], ptr);
        for (const LayerProfile& o : p.densities)
          if (o.layer == l.layer)
            throw Error("", ptr + "/layer", cat("layer \"", l.layer, "\" appears twice"));
        p.densities.push_back(std::move(l));
      }
    }
    return p;
  } catch (const Error& e) {
    throw e.in_file(file);
  }
}

Profile load_profile(const std::string& path) {
  const auto bytes = io::read_file(path);
  return parse_profile(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                       path);
}

std::string profile_to_text(const Profile& p) {
  auto r = [](double v) { return std::round(v * 1e6) / 1e6; };
  ojson j;
  j["format"] = kProfileFormat;
  j["kiln_version"] = KILN_VERSION;
  j["model"] = p.model;
  if (!p.gpu.empty()) j["gpu"] = p.gpu;
  if (!p.times.empty()) {
    ojson nodes = ojson::object();
    for (const auto& [name, t] : p.times)
      nodes[name] = {{"forward_ms", t.forward_us / 1000}, {"backward_ms", t.backward_us / 1000}};
    j["nodes"] = nodes;
  }
  if (!p.input_shape.empty()) j["input_shape"] = p.input_shape;
  j["dtype"] = dtype_name(p.dtype);
  if (!p.device.empty()) j["device"] = p.device;
  if (!p.input.empty()) j["input"] = p.input;
  if (!p.weights.empty()) j["weights"] = p.weights;
  j["tile"] = p.tile;
  ojson ds = ojson::array();
  for (const LayerProfile& l : p.densities) {
    ojson o{{"layer", l.layer},       {"input", l.input},          {"density", r(l.density)},
            {"elements", l.elements}, {"nonzeros", l.nonzeros}};
    const TileSpread& t = l.tiles;
    o["tiles"] = {{"count", t.count},   {"min", r(t.min)}, {"p10", r(t.p10)},
                  {"median", r(t.median)}, {"p90", r(t.p90)}, {"max", r(t.max)},
                  {"std", r(t.stddev)}};
    ds.push_back(o);
  }
  j["densities"] = ds;
  return j.dump(2) + "\n";
}

LayerProfile measure_density(const Tensor& x, Int2 tile) {
  if (x.shape().size() != 4)
    throw Error(cat("densities are measured on [N, C, H, W] tensors, not ", shape_str(x.shape())));
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t th = tile[0], tw = tile[1];
  const int64_t tr = (H + th - 1) / th, tc = (W + tw - 1) / tw;
  std::vector<int64_t> nz(size_t(N * tr * tc), 0);
  LayerProfile l;
  l.elements = x.numel();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          if (x.get(((n * C + c) * H + h) * W + w) != 0) {
            ++l.nonzeros;
            ++nz[size_t((n * tr + h / th) * tc + w / tw)];
          }
  l.density = l.elements ? double(l.nonzeros) / double(l.elements) : 0;
  std::vector<double> d;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t r = 0; r < tr; ++r)
      for (int64_t q = 0; q < tc; ++q) {
        const int64_t pixels = (std::min(H, (r + 1) * th) - r * th) * (std::min(W, (q + 1) * tw) - q * tw);
        d.push_back(double(nz[size_t((n * tr + r) * tc + q)]) / double(pixels * C));
      }
  std::sort(d.begin(), d.end());
  auto at = [&](double q) { return d[size_t(std::floor(q * double(d.size() - 1)))]; };
  double mean = 0, var = 0;
  for (double v : d) mean += v;
  mean /= double(d.size());
  for (double v : d) var += (v - mean) * (v - mean);
  l.tiles = {int64_t(d.size()), d.front(), at(0.1), at(0.5), at(0.9), d.back(),
             std::sqrt(var / double(d.size()))};
  return l;
}

std::map<std::string, double> profile_densities(const Profile& p, const Model& m) {
  if (!p.model.empty() && p.model != m.name)
    throw Error(p.file, "/model", cat("is a profile of \"", p.model, "\", not of \"", m.name, "\""));
  std::map<std::string, double> r;
  for (size_t i = 0; i < p.densities.size(); ++i) {
    const LayerProfile& l = p.densities[i];
    const std::string ptr = ju::child(ju::child("/densities", i), "layer");
    const int n = m.find(l.layer);
    if (n < 0) throw Error(p.file, ptr, cat("model \"", m.name, "\" has no layer \"", l.layer, "\""));
    if (m.nodes[size_t(n)].op != OpKind::conv2d)
      throw Error(p.file, ptr, cat("layer \"", l.layer, "\" is a ", op_name(m.nodes[size_t(n)].op),
                                   ", not a conv2d: densities are of conv2d inputs"));
    r[l.layer] = l.density;
  }
  return r;
}

} // namespace kiln
