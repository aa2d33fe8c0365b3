// Operators kiln evaluates at import time because their inputs are all constants: the
// shape arithmetic exporters emit before a Reshape (Shape -> Gather -> Unsqueeze -> Concat,
// Cast, Slice, arithmetic) and Constant nodes.
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "generator/model/onnx/ops_channels.hpp"
#include "generator/model/onnx/tensor_proto.hpp"
#include "runtime/error.hpp"
#include "runtime/io/limits.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::onnx_import {

namespace {

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t d = int64_t(s.size()) - 2; d >= 0; --d)
    st[d] = st[d + 1] * s[d + 1];
  return st;
}

int64_t norm_axis(const onnx::NodeProto& n, int64_t axis, int64_t rank, std::string_view what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw Error("", node_label(n), cat(what, " ", axis, " is out of range for rank ", rank));
  return a;
}

Tensor make_ints(Shape shape, const std::vector<int64_t>& v) {
  Tensor t(DType::i64, std::move(shape));
  std::copy(v.begin(), v.end(), t.as<int64_t>().begin());
  return t;
}

Error not_folded(const onnx::NodeProto& n) {
  return Error("", node_label(n),
               cat(n.op_type(), " is imported only on constants (shape arithmetic), but an input "
                                "depends on the model input"));
}

} // namespace

void convert_constant(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"value", "value_float", "value_floats", "value_int", "value_ints",
                         "sparse_value", "value_string", "value_strings"});
  if (const onnx::TensorProto* t = at.get_tensor("value"))
    return c.set_const_output(n, tensor_from_proto(*t, ""));
  if (at.has("value_float")) {
    Tensor t(DType::f32, {});
    t.set(0, at.get_float("value_float", 0));
    return c.set_const_output(n, t);
  }
  if (auto v = at.get_floats("value_floats")) {
    Tensor t(DType::f32, {int64_t(v->size())});
    for (size_t i = 0; i < v->size(); ++i)
      t.set(int64_t(i), (*v)[i]);
    return c.set_const_output(n, t);
  }
  if (at.has("value_int"))
    return c.set_const_output(n, make_ints({}, {at.get_int("value_int", 0)}));
  if (auto v = at.get_ints("value_ints"))
    return c.set_const_output(n, make_ints({int64_t(v->size())}, *v));
  throw Error("", node_label(n),
              "only a dense tensor, float or integer value is supported (not sparse_value or "
              "strings)");
}

void convert_shape(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"start", "end"});
  const Value& v = c.input(n, 0);
  const Shape s = v.is_const ? v.constant.shape() : c.shape_of(v.ref);
  const int64_t rank = int64_t(s.size());
  const auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t(0), rank); };
  const int64_t b = clamp(at.get_int("start", 0)), e = clamp(at.get_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = b; i < e; ++i)
    dims.push_back(s[i]);
  c.set_const_output(n, make_ints({int64_t(dims.size())}, dims));
}

void convert_gather(Converter& c, const onnx::NodeProto& n) {
  if (!c.input(n, 0).is_const && c.input(n, 0).flat) return gather_flat(c, n, c.input(n, 0));
  const NodeAttrs at(n, {"axis"});
  if (!c.all_inputs_const(n)) throw not_folded(n);
  const Tensor& data = c.constant(n, 0, "data");
  const Tensor& idx_t = c.constant(n, 1, "indices");
  const std::vector<int64_t> idx = const_ints(n, idx_t, "indices");
  const Shape& ds = data.shape();
  const int64_t rank = int64_t(ds.size());
  if (rank == 0) throw Error("", node_label(n), "data is a scalar");
  const int64_t axis = norm_axis(n, at.get_int("axis", 0), rank, "axis");
  Shape out(ds.begin(), ds.begin() + axis);
  out.insert(out.end(), idx_t.shape().begin(), idx_t.shape().end());
  out.insert(out.end(), ds.begin() + axis + 1, ds.end());
  if (!io::bounded_numel(out)) throw Error("", node_label(n), "the result is absurdly large");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= ds[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= ds[d];
  Tensor r(data.dtype(), out);
  const size_t es = dtype_size(data.dtype());
  int64_t o = 0;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t i : idx) {
      const int64_t k = i < 0 ? i + ds[axis] : i;
      if (k < 0 || k >= ds[axis])
        throw Error("", node_label(n), cat("index ", i, " is out of range for ", ds[axis]));
      std::memcpy(r.bytes() + size_t(o) * es,
                  data.bytes() + size_t((a * ds[axis] + k) * inner) * es, size_t(inner) * es);
      o += inner;
    }
  c.set_const_output(n, r);
}

void convert_cast(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"to", "saturate"});
  const int64_t to = at.get_int("to", 0);
  if (!c.all_inputs_const(n)) {
    // A cast of an f32 activation to FLOAT changes nothing.
    if (to == onnx::TensorProto::FLOAT && c.model.dtype == DType::f32) {
      c.set_output(n, 0, c.input(n, 0));
      ++c.dropped;
      return;
    }
    throw Error("", node_label(n),
                cat("attribute \"to\" = ", onnx_type_name(int32_t(to)),
                    ": kiln casts activations only to FLOAT (a no-op)"));
  }
  const Tensor& x = c.constant(n, 0, "input");
  DType d;
  switch (to) {
  case onnx::TensorProto::FLOAT: d = DType::f32; break;
  case onnx::TensorProto::DOUBLE: d = DType::f64; break;
  case onnx::TensorProto::FLOAT16: d = DType::f16; break;
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8: d = DType::i64; break;
  default:
    throw Error("", node_label(n),
                cat("attribute \"to\" = ", onnx_type_name(int32_t(to)), " is not supported"));
  }
  Tensor r(d, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.get(i);
    r.set(i,
          d == DType::i64 ? std::trunc(std::isfinite(v) ? std::clamp(v, -9.0e18, 9.0e18) : 0) : v);
  }
  c.set_const_output(n, r);
}

void convert_arith(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {});
  if (!c.all_inputs_const(n)) throw not_folded(n);
  const Tensor& a = c.constant(n, 0, "A");
  const Tensor& b = c.constant(n, 1, "B");
  // NumPy broadcasting, aligned at the last axis.
  const size_t rank = std::max(a.shape().size(), b.shape().size());
  const auto padded = [&](const Shape& s) {
    Shape p(rank - s.size(), 1);
    p.insert(p.end(), s.begin(), s.end());
    return p;
  };
  const Shape sa = padded(a.shape()), sb = padded(b.shape());
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (sa[d] != sb[d] && sa[d] != 1 && sb[d] != 1)
      throw Error("", node_label(n),
                  cat("cannot broadcast ", shape_str(a.shape()), " with ", shape_str(b.shape())));
    out[d] = sa[d] == 1 ? sb[d] : sa[d];
  }
  if (!io::bounded_numel(out) || numel(out) > (int64_t(1) << 26))
    throw Error("", node_label(n), "the result is absurdly large");
  const bool ints = a.dtype() == DType::i64 && b.dtype() == DType::i64;
  const DType d = ints                                                   ? DType::i64
                  : (a.dtype() == DType::f64 && b.dtype() == DType::f64) ? DType::f64
                                                                         : DType::f32;
  Tensor r(d, out);
  const auto so = strides_of(out), st_a = strides_of(sa), st_b = strides_of(sb);
  const std::string& op = n.op_type();
  for (int64_t i = 0; i < r.numel(); ++i) {
    int64_t ia = 0, ib = 0, rem = i;
    for (size_t k = 0; k < rank; ++k) {
      const int64_t q = rem / so[k];
      rem %= so[k];
      ia += (sa[k] == 1 ? 0 : q) * st_a[k];
      ib += (sb[k] == 1 ? 0 : q) * st_b[k];
    }
    if (ints) {
      const int64_t x = a.as<int64_t>()[ia], y = b.as<int64_t>()[ib];
      int64_t v;
      if (op == "Add")
        v = x + y;
      else if (op == "Sub")
        v = x - y;
      else if (op == "Mul")
        v = x * y;
      else {
        if (y == 0) throw Error("", node_label(n), "integer division by zero");
        v = x / y;
      }
      r.as<int64_t>()[i] = v;
    } else {
      const double x = a.get(ia), y = b.get(ib);
      r.set(i, op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y);
    }
  }
  c.set_const_output(n, r);
}

void convert_slice(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"starts", "ends", "axes"});
  if (!c.input(n, 0).is_const) { // an activation: channels [start, end)
    const auto ints = [&](int i, const char* role) {
      return c.has_input(n, i) ? const_ints(n, c.constant(n, i, role), role)
                               : std::vector<int64_t>{};
    };
    if (c.opset < 10)
      return slice_activation(c, n, c.activation(n, 0),
                              at.get_ints("starts").value_or(std::vector<int64_t>{}),
                              at.get_ints("ends").value_or(std::vector<int64_t>{}),
                              at.get_ints("axes").value_or(std::vector<int64_t>{}), {});
    return slice_activation(c, n, c.activation(n, 0), ints(1, "starts"), ints(2, "ends"),
                            ints(3, "axes"), ints(4, "steps"));
  }
  if (!c.all_inputs_const(n)) throw not_folded(n);
  const Tensor& x = c.constant(n, 0, "data");
  const int64_t rank = int64_t(x.shape().size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = at.get_ints("starts").value_or(std::vector<int64_t>{});
    ends = at.get_ints("ends").value_or(std::vector<int64_t>{});
    axes = at.get_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = const_ints(n, c.constant(n, 1, "starts"), "starts");
    ends = const_ints(n, c.constant(n, 2, "ends"), "ends");
    if (c.has_input(n, 3)) axes = const_ints(n, c.constant(n, 3, "axes"), "axes");
    if (c.has_input(n, 4)) steps = const_ints(n, c.constant(n, 4, "steps"), "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error("", node_label(n), "starts, ends, axes and steps differ in length");
  const Shape& s = x.shape();
  std::vector<int64_t> lo(rank, 0), step(rank, 1);
  Shape out = s;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t ax = norm_axis(n, axes[i], rank, "axis");
    const int64_t dim = s[ax], st = steps[i];
    if (st == 0) throw Error("", node_label(n), "a step is 0");
    const auto clampi = [&](int64_t v, int64_t min, int64_t max) {
      v = v < 0 ? v + dim : v;
      return std::clamp(v, min, max);
    };
    const int64_t b = st > 0 ? clampi(starts[i], 0, dim) : clampi(starts[i], -1, dim - 1);
    const int64_t e = st > 0 ? clampi(ends[i], 0, dim) : clampi(ends[i], -1, dim - 1);
    lo[ax] = b;
    step[ax] = st;
    out[ax] = st > 0 ? std::max<int64_t>(0, (e - b + st - 1) / st)
                     : std::max<int64_t>(0, (b - e - st - 1) / -st);
  }
  Tensor r(x.dtype(), out);
  const auto so = strides_of(out), sx = strides_of(s);
  const size_t es = dtype_size(x.dtype());
  for (int64_t i = 0; i < r.numel(); ++i) {
    int64_t src = 0, rem = i;
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t q = rem / so[k];
      rem %= so[k];
      src += (lo[k] + q * step[k]) * sx[k];
    }
    std::memcpy(r.bytes() + size_t(i) * es, x.bytes() + size_t(src) * es, es);
  }
  c.set_const_output(n, r);
}

Tensor concat_constants(const onnx::NodeProto& n, const std::vector<const Tensor*>& parts,
                        int64_t axis) {
  const Shape& s0 = parts[0]->shape();
  const int64_t rank = int64_t(s0.size());
  const int64_t a = norm_axis(n, axis, rank, "axis");
  Shape out = s0;
  out[a] = 0;
  bool same_type = true;
  for (const Tensor* p : parts) {
    const Shape& s = p->shape();
    if (int64_t(s.size()) != rank) throw Error("", node_label(n), "inputs differ in rank");
    for (int64_t k = 0; k < rank; ++k)
      if (k != a && s[k] != s0[k])
        throw Error("", node_label(n),
                    cat("inputs ", shape_str(s0), " and ", shape_str(s), " differ off the axis"));
    out[a] += s[a];
    same_type &= p->dtype() == parts[0]->dtype();
  }
  // Mixed types meet as f32; equal types are copied bytewise (int64 stays exact).
  Tensor r(same_type ? parts[0]->dtype() : DType::f32, out);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < a; ++k)
    outer *= out[k];
  for (int64_t k = a + 1; k < rank; ++k)
    inner *= out[k];
  const size_t es = dtype_size(r.dtype());
  int64_t o = 0;
  for (int64_t q = 0; q < outer; ++q)
    for (const Tensor* p : parts) {
      const int64_t len = p->shape()[a] * inner;
      if (same_type)
        std::memcpy(r.bytes() + size_t(o) * es, p->bytes() + size_t(q * len) * es,
                    size_t(len) * es);
      else
        for (int64_t i = 0; i < len; ++i)
          r.set(o + i, p->get(q * len + i));
      o += len;
    }
  return r;
}

} // namespace kiln::onnx_import
