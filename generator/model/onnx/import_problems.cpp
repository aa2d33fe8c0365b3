#include "generator/model/onnx/import_problems.hpp"

#include "generator/model/onnx/node_attrs.hpp"

namespace kiln::onnx_import {

namespace {

constexpr size_t kListed = 8; // nodes named per operator; the rest are counted

std::string op_key(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type()
                                                       : n.domain() + ":" + n.op_type();
}

std::string node_name(const onnx::NodeProto& n) {
  return "\"" + (n.name().empty() && n.output_size() > 0 ? n.output(0) : n.name()) + "\"";
}

} // namespace

void ImportProblems::unsupported(const onnx::NodeProto& n, std::string why) {
  Group& g = groups_[op_key(n)];
  if (first_.empty()) {
    first_.push_back(Error("", node_label(n), why));
    first_unsupported_ = true;
  }
  g.unsupported = std::move(why);
  g.names.push_back(node_name(n));
  ++count_;
}

void ImportProblems::failed(const onnx::NodeProto& n, const Error& e) {
  if (first_.empty()) first_.push_back(e);
  const std::string where = e.where().empty() ? node_label(n) : e.where();
  groups_[op_key(n)].details.push_back(where + ": " + e.message());
  ++count_;
}

Error ImportProblems::error(int nodes, const std::string& supported) const {
  if (count_ == 1) {
    const Error& e = first_.front();
    if (!first_unsupported_) return e;
    return Error("", e.where(), e.message() + " (kiln imports: " + supported + ")");
  }
  std::string s = cat(count_, " of ", nodes, " nodes cannot be imported (", groups_.size(),
                      " operator", groups_.size() > 1 ? "s" : "", "):");
  for (const auto& [op, g] : groups_) {
    if (!g.names.empty()) {
      std::string names;
      for (size_t i = 0; i < g.names.size() && i < kListed; ++i)
        names += (i ? ", " : "") + g.names[i];
      if (g.names.size() > kListed) names += cat(" and ", g.names.size() - kListed, " more");
      s += cat("\n  ", op, " (", g.names.size(), " node", g.names.size() > 1 ? "s" : "",
               "): ", g.unsupported, ": ", names);
    }
    if (!g.details.empty()) {
      s += cat("\n  ", op, " (", g.details.size(), " node", g.details.size() > 1 ? "s" : "", "):");
      for (size_t i = 0; i < g.details.size() && i < kListed; ++i)
        s += "\n    " + g.details[i];
      if (g.details.size() > kListed) s += cat("\n    and ", g.details.size() - kListed, " more");
    }
  }
  return Error("", "", s + "\nkiln imports: " + supported);
}

} // namespace kiln::onnx_import
