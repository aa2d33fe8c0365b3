#include "runtime/op.hpp"

#include "runtime/error.hpp"

namespace kiln {

namespace {

constexpr AttrSpec conv_specs[] = {
    {"out_channels", AttrType::integer, true}, {"kernel", AttrType::int2, true},
    {"stride", AttrType::int2, false},         {"padding", AttrType::int2, false},
    {"padding_end", AttrType::int2, false},    {"dilation", AttrType::int2, false},
    {"groups", AttrType::integer, false},      {"bias", AttrType::boolean, false}};
constexpr AttrSpec linear_specs[] = {{"out_features", AttrType::integer, true},
                                     {"bias", AttrType::boolean, false}};
constexpr AttrSpec bn_specs[] = {{"eps", AttrType::number, false}};
constexpr AttrSpec maxpool_specs[] = {
    {"kernel", AttrType::int2, true},          {"stride", AttrType::int2, false},
    {"padding", AttrType::int2, false},        {"padding_end", AttrType::int2, false},
    {"ceil_mode", AttrType::boolean, false}};
constexpr AttrSpec avgpool_specs[] = {
    {"kernel", AttrType::int2, true},          {"stride", AttrType::int2, false},
    {"padding", AttrType::int2, false},        {"padding_end", AttrType::int2, false},
    {"ceil_mode", AttrType::boolean, false},   {"count_include_pad", AttrType::boolean, false}};
constexpr AttrSpec adaptive_specs[] = {{"output_size", AttrType::int2, true}};
constexpr AttrSpec upsample_specs[] = {{"scale", AttrType::integer, false}};
constexpr AttrSpec fold_specs[] = {{"factor", AttrType::integer, true}};

Error bad(const std::string& what) { return Error(what); }

// Products of sizes from untrusted files must not overflow.
int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > (int64_t(1) << 46))
    throw bad(cat("size overflow: ", a, " x ", b, " is absurdly large"));
  return r;
}

void need_rank(const Shape& s, size_t rank, std::string_view what) {
  if (s.size() != rank)
    throw bad(cat("expects a ", rank, "-D input ", what, ", got ", shape_str(s)));
}

void check_positive(int64_t v, std::string_view name, int64_t limit = int64_t(1) << 24) {
  if (v <= 0) throw Error("", std::string(name), cat("must be positive, got ", v));
  if (v > limit) throw Error("", std::string(name), cat("is absurdly large: ", v));
}
void check_positive(const Int2& v, std::string_view name) {
  check_positive(v[0], name, 1 << 16);
  check_positive(v[1], name, 1 << 16);
}
void check_padding(const Attrs& a) {
  for (const Int2& p : {a.padding, padding_end(a)}) {
    if (p[0] < 0 || p[1] < 0) throw Error("", "padding", "must not be negative");
    if (p[0] > (1 << 16) || p[1] > (1 << 16)) throw Error("", "padding", "is absurdly large");
  }
  if (a.padding_end[0] < -1 || a.padding_end[1] < -1) throw Error("", "padding_end", "must not be negative");
}

Shape window_shape(const Shape& x, int64_t c, const Attrs& a, const Int2& k, const Int2& d,
                   bool ceil_mode, std::string_view what) {
  const Int2 pe = padding_end(a);
  const int64_t oh = window_out(x[2], k[0], a.stride[0], a.padding[0], pe[0], d[0], ceil_mode);
  const int64_t ow = window_out(x[3], k[1], a.stride[1], a.padding[1], pe[1], d[1], ceil_mode);
  if (oh <= 0 || ow <= 0)
    throw bad(cat("empty spatial output: ", what, " ", k[0], "x", k[1], " window (stride ",
                  a.stride[0], "x", a.stride[1], ", padding ", a.padding[0], "x", a.padding[1],
                  ", dilation ", d[0], "x", d[1], ") on a ", x[2], "x", x[3], " input gives ", oh,
                  "x", ow));
  return {x[0], c, oh, ow};
}

void check_pool_padding(const Attrs& a) {
  for (int i = 0; i < 2; ++i)
    if (std::max(a.padding[i], padding_end(a)[i]) * 2 > a.kernel[i])
      throw Error("", "padding",
                  cat("must be at most half the kernel (", std::max(a.padding[i], padding_end(a)[i]), " > ",
                      a.kernel[i], "/2)"));
}

} // namespace

std::string_view op_name(OpKind op) {
  switch (op) {
  case OpKind::conv2d: return "conv2d";
  case OpKind::linear: return "linear";
  case OpKind::batchnorm: return "batchnorm";
  case OpKind::relu: return "relu";
  case OpKind::maxpool2d: return "maxpool2d";
  case OpKind::avgpool2d: return "avgpool2d";
  case OpKind::adaptive_avgpool2d: return "adaptive_avgpool2d";
  case OpKind::global_avgpool: return "global_avgpool";
  case OpKind::add: return "add";
  case OpKind::concat: return "concat";
  case OpKind::flatten: return "flatten";
  case OpKind::upsample2d: return "upsample2d";
  case OpKind::softmax: return "softmax";
  case OpKind::fold: return "fold";
  case OpKind::unfold: return "unfold";
  }
  return "?";
}

std::optional<OpKind> parse_op(std::string_view name) {
  for (OpKind op : all_ops)
    if (op_name(op) == name) return op;
  return std::nullopt;
}

std::span<const AttrSpec> op_attr_specs(OpKind op) {
  switch (op) {
  case OpKind::conv2d: return conv_specs;
  case OpKind::linear: return linear_specs;
  case OpKind::batchnorm: return bn_specs;
  case OpKind::maxpool2d: return maxpool_specs;
  case OpKind::avgpool2d: return avgpool_specs;
  case OpKind::adaptive_avgpool2d: return adaptive_specs;
  case OpKind::upsample2d: return upsample_specs;
  case OpKind::fold:
  case OpKind::unfold: return fold_specs;
  default: return {};
  }
}

Arity op_arity(OpKind op) {
  switch (op) {
  case OpKind::add:
  case OpKind::concat: return {2, true};
  default: return {1, false};
  }
}

bool op_is_view(OpKind op) {
  return op == OpKind::flatten || op == OpKind::fold || op == OpKind::unfold;
}

int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t p_end, int64_t d, bool ceil_mode) {
  const int64_t span = in + p + p_end - d * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // PyTorch: the last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

Shape infer_shape(OpKind op, const Attrs& a, std::span<const Shape> in) {
  const Arity ar = op_arity(op);
  if (int(in.size()) < ar.min || (!ar.variadic && int(in.size()) != ar.min))
    throw bad(cat(op_name(op), " takes ", ar.variadic ? "at least " : "", ar.min, " input",
                  ar.min > 1 ? "s" : "", ", got ", in.size()));
  for (const Shape& s : in)
    for (int64_t d : s)
      if (d <= 0) throw bad(cat("input shape ", shape_str(s), " has an empty dimension"));
  const Shape& x = in[0];
  switch (op) {
  case OpKind::conv2d: {
    need_rank(x, 4, "[N, C, H, W]");
    check_positive(a.out_channels, "out_channels");
    check_positive(a.kernel, "kernel");
    check_positive(a.stride, "stride");
    check_positive(a.dilation, "dilation");
    check_padding(a);
    check_positive(a.groups, "groups");
    if (x[1] % a.groups != 0)
      throw bad(cat("input channels ", x[1], " are not divisible by groups ", a.groups));
    if (a.out_channels % a.groups != 0)
      throw bad(cat("out_channels ", a.out_channels, " is not divisible by groups ", a.groups));
    Shape y = window_shape(x, a.out_channels, a, a.kernel, a.dilation, false, "conv2d");
    mul(mul(y[0], y[1]), mul(y[2], y[3]));
    return y;
  }
  case OpKind::linear:
    check_positive(a.out_features, "out_features");
    if (x.size() != 2)
      throw bad(cat("linear needs a 2-D input [N, features], got ", shape_str(x),
                    " (add a flatten layer before it)"));
    mul(x[1], a.out_features);
    return {x[0], a.out_features};
  case OpKind::batchnorm:
    if (x.size() != 4 && x.size() != 2)
      throw bad(cat("batchnorm expects [N, C, H, W] or [N, C], got ", shape_str(x)));
    if (!(a.eps > 0) || a.eps > 1) throw Error("", "eps", cat("must be in (0, 1], got ", a.eps));
    return x;
  case OpKind::relu: return x;
  case OpKind::maxpool2d:
  case OpKind::avgpool2d:
    need_rank(x, 4, "[N, C, H, W]");
    check_positive(a.kernel, "kernel");
    check_positive(a.stride, "stride");
    check_padding(a);
    check_pool_padding(a);
    return window_shape(x, x[1], a, a.kernel, {1, 1}, a.ceil_mode, op_name(op));
  case OpKind::adaptive_avgpool2d:
    need_rank(x, 4, "[N, C, H, W]");
    check_positive(a.output_size, "output_size");
    return {x[0], x[1], a.output_size[0], a.output_size[1]};
  case OpKind::global_avgpool: need_rank(x, 4, "[N, C, H, W]"); return {x[0], x[1], 1, 1};
  case OpKind::add:
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i] != x)
        throw bad(cat("add inputs differ in shape: input 0 is ", shape_str(x), ", input ", i,
                      " is ", shape_str(in[i])));
    return x;
  case OpKind::concat: {
    if (x.size() < 2) throw bad(cat("concat needs inputs with a channel axis, got ", shape_str(x)));
    Shape y = x;
    for (size_t i = 1; i < in.size(); ++i) {
      const Shape& s = in[i];
      bool ok = s.size() == x.size() && s[0] == x[0];
      for (size_t d = 2; ok && d < s.size(); ++d) ok = s[d] == x[d];
      if (!ok)
        throw bad(cat("concat inputs must agree except in channels: input 0 is ", shape_str(x),
                      ", input ", i, " is ", shape_str(s)));
      y[1] += s[1];
    }
    return y;
  }
  case OpKind::flatten: {
    if (x.size() < 2) throw bad(cat("flatten needs at least 2 dimensions, got ", shape_str(x)));
    int64_t f = 1;
    for (size_t d = 1; d < x.size(); ++d) f = mul(f, x[d]);
    return {x[0], f};
  }
  case OpKind::upsample2d:
    need_rank(x, 4, "[N, C, H, W]");
    check_positive(a.scale, "scale", 1 << 10);
    return {x[0], x[1], mul(x[2], a.scale), mul(x[3], a.scale)};
  case OpKind::softmax:
    if (x.size() < 2) throw bad(cat("softmax needs at least 2 dimensions, got ", shape_str(x)));
    return x;
  case OpKind::fold:
    need_rank(x, 4, "[N, C, H, W]");
    check_positive(a.factor, "factor", 1 << 12);
    if (x[0] % a.factor != 0)
      throw bad(cat("batch ", x[0], " is not a multiple of the fold factor ", a.factor));
    return {x[0] / a.factor, x[1] * a.factor, x[2], x[3]};
  case OpKind::unfold:
    check_positive(a.factor, "factor", 1 << 12);
    if (x.size() != 2 || x[1] % a.factor != 0)
      throw bad(cat("unfold needs [M, factor*K] with factor ", a.factor, ", got ", shape_str(x)));
    return {x[0] * a.factor, x[1] / a.factor};
  }
  throw bad("unknown op");
}

std::vector<ParamSpec> op_params(OpKind op, const Attrs& a, std::span<const Shape> in) {
  std::vector<ParamSpec> p;
  switch (op) {
  case OpKind::conv2d:
    p.push_back({"weight", {a.out_channels, in[0][1] / a.groups, a.kernel[0], a.kernel[1]}, true});
    if (a.bias) p.push_back({"bias", {a.out_channels}, true});
    break;
  case OpKind::linear:
    p.push_back({"weight", {a.out_features, in[0][1]}, true});
    if (a.bias) p.push_back({"bias", {a.out_features}, true});
    break;
  case OpKind::batchnorm: {
    const int64_t c = in[0][1];
    p.push_back({"weight", {c}, true});
    p.push_back({"bias", {c}, true});
    p.push_back({"running_mean", {c}, false});
    p.push_back({"running_var", {c}, false});
    break;
  }
  default: break;
  }
  return p;
}

int64_t op_macs(OpKind op, const Attrs& a, std::span<const Shape> in, const Shape& out) {
  if (op == OpKind::conv2d)
    return numel(out) * (in[0][1] / a.groups) * a.kernel[0] * a.kernel[1];
  if (op == OpKind::linear) return numel(out) * in[0][1];
  return 0;
}

} // namespace kiln
