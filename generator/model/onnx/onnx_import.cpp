#include "generator/model/onnx/onnx_import.hpp"

#include "generator/model/onnx/channels_last.hpp"
#include "generator/model/onnx/converter.hpp"
#include "generator/model/onnx/graph_order.hpp"
#include "generator/model/onnx/import_problems.hpp"
#include "generator/model/onnx/layer_norm_pattern.hpp"
#include "generator/model/onnx/model_proto.hpp"
#include "generator/model/onnx/names_utf8.hpp"
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "generator/model/onnx/ops_channels.hpp"
#include "generator/model/onnx/signal.hpp"
#include "generator/model/onnx/tensor_proto.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"

#include <filesystem>
#include <optional>

namespace kiln {

namespace oi = onnx_import;

namespace {

// The graph's one data input (graph inputs that are initializers are weights, as older
// exporters list them) and its shape, the symbolic batch axis resolved.
void read_input(const onnx::GraphProto& g, const std::map<std::string, Tensor>& inits,
                int64_t batch, Model& m) {
  std::vector<const onnx::ValueInfoProto*> data;
  for (const auto& in : g.input())
    if (!inits.count(in.name())) data.push_back(&in);
  if (data.empty())
    throw Error("", "graph", "the graph has no input (every input is an initializer)");
  if (data.size() > 1) {
    std::string names;
    for (const auto* in : data)
      names += (names.empty() ? "\"" : ", \"") + in->name() + "\"";
    throw Error("", "graph",
                cat("the graph has ", data.size(), " inputs (", names,
                    "); kiln models take one input (weights must be initializers)"));
  }
  const onnx::ValueInfoProto& in = *data[0];
  const std::string where = cat("input \"", in.name(), "\"");
  if (in.name().empty()) throw Error("", "graph", "the graph input has no name");
  if (!in.type().has_tensor_type()) throw Error("", where, "is not a tensor");
  const auto& tt = in.type().tensor_type();
  if (tt.elem_type() != onnx::TensorProto::FLOAT)
    throw Error("", where,
                cat("has element type ", oi::onnx_type_name(tt.elem_type()),
                    "; kiln imports models with a FLOAT input (an imported model runs in f16, "
                    "bf16 or f64 with --dtype)"));
  if (!tt.has_shape()) throw Error("", where, "has no shape");
  const int rank = tt.shape().dim_size();
  if (rank != 4 && rank != 3 && rank != 2)
    throw Error("", where,
                cat("has rank ", rank,
                    "; kiln models take [N, C, H, W], [N, C, L] (a 1-D signal) or [N, features]"));
  Shape s;
  for (int i = 0; i < rank; ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      if (d.dim_value() <= 0 || d.dim_value() > (int64_t(1) << 24))
        throw Error("", where, cat("dimension ", i, " is ", d.dim_value()));
      s.push_back(d.dim_value());
    } else if (i == 0) {
      s.push_back(batch > 0 ? batch : 1); // symbolic batch
    } else {
      throw Error("", where,
                  cat("dimension ", i, " is symbolic (\"", d.dim_param(),
                      "\"); kiln needs the image size fixed in the file"));
    }
  }
  if (rank == 3) { // a 1-D signal, held as [N, C, L, 1] (signal.hpp)
    s.push_back(1);
    m.signal = true;
  }
  m.input_name = in.name();
  m.input_shape = s;
}

} // namespace

bool is_onnx_path(const std::string& path) { return path.ends_with(".onnx"); }

std::string onnx_supported_ops() { return oi::supported_op_list(); }

ImportedModel import_onnx_bytes(std::span<const std::byte> bytes, const std::string& file,
                                const std::string& model_dir, int64_t batch) {
  try {
    onnx::ModelProto proto = oi::parse_model_proto(bytes, file);
    ImportedModel r;
    r.opset = oi::default_opset(proto);
    const int file_nodes = proto.graph().node_size();
    r.layer_norms_written_out = oi::fuse_layer_norm_patterns(*proto.mutable_graph(), r.opset);
    const onnx::GraphProto& g = proto.graph();
    oi::check_graph_names(g);
    if (g.sparse_initializer_size() > 0)
      throw Error("", "graph", "sparse initializers are not supported");
    std::map<std::string, Tensor> inits;
    for (const auto& t : g.initializer()) {
      if (t.name().empty()) throw Error("", "graph", "an initializer has no name");
      if (inits.count(t.name()))
        throw Error("", cat("initializer \"", t.name(), "\""), "is defined twice");
      inits.emplace(t.name(), oi::tensor_from_proto(t, model_dir));
    }
    Model& m = r.model;
    m.file = file;
    m.name = g.name().empty() ? std::filesystem::path(file).stem().string() : g.name();
    if (m.name.empty() || !oi::is_utf8(m.name)) m.name = "onnx_model";
    m.dtype = DType::f32;
    read_input(g, inits, batch, m);

    oi::Converter c(m, r.weights, r.opset);
    c.taken.insert(m.input_name);
    for (const auto& n : g.node())
      for (const std::string& in : n.input())
        ++c.uses[in];
    for (const auto& o : g.output())
      ++c.uses[o.name()];
    std::set<std::string> available;
    for (auto& [name, t] : inits) {
      available.insert(name);
      oi::Value v;
      v.is_const = true;
      v.constant = std::move(t);
      c.values.emplace(name, std::move(v));
    }
    available.insert(m.input_name);
    c.values[m.input_name] = oi::Value{};
    c.values[m.input_name].signal = m.signal;

    // Every node is tried, so that one import reports every problem (import_problems.hpp).
    const auto& table = oi::op_converters();
    oi::ImportProblems problems;
    for (int i : oi::node_order(g, available)) {
      const onnx::NodeProto& n = g.node(i);
      auto it = table.find(n.op_type());
      if (!n.domain().empty() && n.domain() != "ai.onnx") {
        problems.unsupported(n, cat("operator domain \"", n.domain(),
                                    "\" is not supported (kiln imports the default ONNX domain)"));
      } else if (it == table.end()) {
        problems.unsupported(n, cat("unsupported operator \"", n.op_type(), "\""));
      } else {
        try {
          if (n.output_size() == 0) throw Error("", oi::node_label(n), "has no output");
          // A node reading a 1-D signal converts in its 2-D form (signal.hpp).
          std::optional<onnx::NodeProto> as_2d;
          if (oi::reads_signal(c, n)) as_2d = oi::signal_node(c, n);
          const onnx::NodeProto& n2 = as_2d ? *as_2d : n;
          oi::refuse_grouped_reader(c, n2);
          const bool cl = oi::reads_channels_last(c, n2);
          try {
            it->second(c, n2);
          } catch (const Error& e) {
            if (!as_2d) throw;
            throw oi::signal_error(e); // says which shapes are kiln's
          }
          if (cl) oi::mark_channels_last(c, n2);
          if (as_2d) oi::mark_signal(c, n2);
          continue;
        } catch (const oi::Unavailable&) {
          // an input failed: this node's own problems cannot be known
        } catch (const Error& e) {
          problems.failed(n, e);
        }
      }
      c.set_unavailable(n);
    }
    if (!problems.empty()) throw problems.error(g.node_size(), oi::supported_op_list());
    r.onnx_nodes = file_nodes;
    r.folded = c.folded;
    r.dropped = c.dropped;

    if (g.output_size() == 0) throw Error("", "graph", "the graph has no output");
    for (const auto& o : g.output()) {
      const std::string where = cat("output \"", o.name(), "\"");
      auto it = c.values.find(o.name());
      if (it == c.values.end()) throw Error("", where, "is not produced by any node");
      if (it->second.is_const)
        throw Error("", where, "is a constant (it does not depend on the model input)");
      if (it->second.pending)
        throw Error("", where,
                    cat("comes from ", it->second.pending->from,
                        ", part of no activation kiln imports (SiLU, HardSwish or GELU)"));
      if (it->second.ref == kModelInput)
        throw Error("", where, "is the model input itself; kiln models need a layer");
      oi::refuse_channels_last_output(it->second, where);
      if (it->second.groups > 0 || it->second.flat)
        throw Error("", where, "is a 5-D or 1-D view of an activation kiln does not map");
      m.outputs.push_back(it->second.ref);
    }
    if (batch > 0 && m.input_shape[0] != batch) m.input_shape[0] = batch;
    infer_shapes(m);
    return r;
  } catch (const Error& e) {
    throw e.in_file(file);
  }
}

ImportedModel import_onnx(const std::string& path, int64_t batch) {
  const std::vector<std::byte> bytes = io::read_file(path);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return import_onnx_bytes(bytes, path, dir, batch);
}

} // namespace kiln
