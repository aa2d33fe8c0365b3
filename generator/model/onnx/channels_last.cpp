#include "generator/model/onnx/channels_last.hpp"

#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops_channels.hpp"
#include "runtime/error.hpp"

#include <set>

namespace kiln::onnx_import {

namespace {

// Operators whose converters read channels-last inputs correctly: elementwise ones (the
// layout does not matter), LayerNormalization and MatMul (they take the last axis as the
// channels), Add and Sub (a bias over the last axis), the reductions (their axes mapped),
// and Transpose.
const std::set<std::string>& region_ops() {
  static const std::set<std::string> s = {"Transpose", "LayerNormalization",
                                          "MatMul",    "Add",
                                          "Mul",       "Div",
                                          "Erf",       "Gelu",
                                          "Relu",      "Clip",
                                          "Sigmoid",   "HardSigmoid",
                                          "HardSwish", "Identity",
                                          "Dropout",   "ReduceMean",
                                          "ReduceSum", "ReduceMax"};
  return s;
}

std::string region_list() {
  std::string r;
  for (const auto& op : region_ops())
    r += (r.empty() ? "" : ", ") + op;
  return r;
}

std::vector<int64_t> transposed_dims(const std::vector<int64_t>& s, const std::vector<int64_t>& p) {
  std::vector<int64_t> r;
  for (int64_t a : p)
    r.push_back(s[size_t(a)]);
  return r;
}

Tensor transpose_constant(const Tensor& t, const std::vector<int64_t>& perm) {
  const Shape& s = t.shape();
  const Shape out = transposed_dims(s, perm);
  std::vector<int64_t> in_stride(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    in_stride[d - 1] = in_stride[d] * s[d];
  Tensor r(t.dtype(), out);
  std::vector<int64_t> idx(out.size(), 0);
  for (int64_t i = 0; i < r.numel(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < out.size(); ++d)
      src += idx[d] * in_stride[size_t(perm[d])];
    r.set(i, t.get(src));
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

} // namespace

bool reads_channels_last(const Converter& c, const onnx::NodeProto& n) {
  int cl = 0, nchw = 0;
  for (int i = 0; i < n.input_size(); ++i) {
    if (!c.has_input(n, i)) continue;
    const Value& v = c.raw_input(n, i);
    if (v.is_const) continue;
    (v.channels_last ? cl : nchw) += 1;
  }
  if (cl == 0) return false;
  if (!region_ops().count(n.op_type()))
    throw Error("", node_label(n),
                cat("reads an activation made channels-last by Transpose(0, 2, 3, 1); kiln maps "
                    "only ",
                    region_list(),
                    " inside such a region (end it with Transpose(0, 3, 1, 2) before this node)"));
  if (nchw > 0 && n.op_type() != "Transpose")
    throw Error("", node_label(n),
                "mixes a channels-last activation (after Transpose(0, 2, 3, 1)) with an NCHW one");
  return true;
}

void mark_channels_last(Converter& c, const onnx::NodeProto& n) {
  if (n.op_type() == "Transpose") return;
  for (int i = 0; i < n.output_size(); ++i) {
    auto it = c.values.find(n.output(i));
    // Only a 4-D activation has a channels-last order: [N, C] (a reduction over H and W
    // without keepdims, say) is the same either way.
    if (it != c.values.end() && !it->second.is_const && !it->second.unavailable &&
        c.shape_of(it->second.ref).size() == 4)
      it->second.channels_last = true;
  }
}

void refuse_channels_last_output(const Value& v, const std::string& where) {
  if (!v.is_const && v.channels_last)
    throw Error("", where,
                "is channels-last (a Transpose(0, 2, 3, 1) not undone): kiln's models output "
                "NCHW tensors");
}

void convert_transpose(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"perm"});
  const Value& v = c.input(n, 0);
  const int64_t rank = int64_t(onnx_shape(c, v).size());
  std::vector<int64_t> perm;
  if (auto p = at.get_ints("perm")) {
    perm = *p;
  } else {
    for (int64_t d = rank; d-- > 0;)
      perm.push_back(d); // the default: the axes reversed
  }
  std::vector<bool> seen(size_t(rank), false);
  bool valid = int64_t(perm.size()) == rank;
  for (int64_t a : perm) {
    valid = valid && a >= 0 && a < rank && !seen[size_t(a)];
    if (valid) seen[size_t(a)] = true;
  }
  if (!valid)
    throw Error("", node_label(n),
                cat("attribute \"perm\" is not a permutation of ", rank, " axes"));
  if (v.is_const) return c.set_const_output(n, transpose_constant(v.constant, perm));
  if (v.groups > 0) return transpose_groups(c, n, v, perm); // a channel shuffle
  const std::vector<int64_t> to_last = {0, 2, 3, 1}, to_first = {0, 3, 1, 2};
  Value out = v;
  if (!v.channels_last && perm == to_last) {
    out.channels_last = true;
  } else if (v.channels_last && perm == to_first) {
    out.channels_last = false;
  } else {
    std::string p;
    for (int64_t a : perm)
      p += (p.empty() ? "" : ", ") + std::to_string(a);
    throw Error("", node_label(n),
                cat("Transpose perm [", p, "] of ",
                    v.channels_last ? "a channels-last activation"
                                    : cat("an activation of shape ", shape_str(c.shape_of(v.ref))),
                    ": kiln maps only [0, 2, 3, 1] (a 4-D NCHW activation to channels-last) and "
                    "[0, 3, 1, 2] (back), around ops it then runs in its own layout"));
  }
  if (!v.channels_last && c.shape_of(v.ref).size() != 4)
    throw Error("", node_label(n),
                cat("Transpose(0, 2, 3, 1) of an activation of shape ",
                    shape_str(c.shape_of(v.ref)), ": kiln maps it on 4-D NCHW activations only"));
  ++c.dropped;
  c.set_output(n, 0, out);
}

} // namespace kiln::onnx_import
