#include "runtime/step_fn.hpp"

#include <array>

namespace kiln {

namespace {

using sv = std::string_view;

struct Entry {
  Fn fn;
  sv name;
  std::span<const sv> reads, writes, optional, updates = {};
};

constexpr sv x_w_b[] = {"x", "w", "b"}, y[] = {"y"}, b[] = {"b"};
constexpr sv x_w_b_res_nnz[] = {"x", "w", "b", "residual", "nnz"};
// A compacted activation written by a step (runtime/sparse_form.hpp): of x (sparse.compact)
// or of the step's own output y (producers).
constexpr sv compacted[] = {"values", "index", "count", "nnz"}, nnz[] = {"nnz"};
constexpr sv y_form[] = {"y_values", "y_index", "y_count", "y_nnz"}, y_nnz[] = {"y_nnz"};
constexpr sv y_compacted[] = {"y", "y_values", "y_index", "y_count", "y_nnz"};
constexpr sv b_res_nnz_form[] = {"b", "residual", "nnz", "y_values", "y_index", "y_count", "y_nnz"};
constexpr sv sparse_conv_in[] = {"x", "values", "index", "count", "w", "b", "residual", "nnz"};
constexpr sv sparse_dw_in[] = {"x", "values", "index", "count", "dy", "nnz"};
constexpr sv dw_or_partial[] = {"dw", "partial"}, nnz_dw_partial[] = {"nnz", "dw", "partial"};
constexpr sv partial_nnz[] = {"partial", "b", "residual", "nnz"},
             b_res_nnz[] = {"b", "residual", "nnz"};
constexpr sv x_w[] = {"x", "w"}, partial[] = {"partial"};
constexpr sv fold_in[] = {"w", "b", "weight", "bias", "running_mean", "running_var"};
constexpr sv fold_out[] = {"w_out", "b_out"};
constexpr sv dy_w[] = {"dy", "w"}, dx[] = {"dx"};
constexpr sv x_dy[] = {"x", "dy"}, dw[] = {"dw"};
constexpr sv dy[] = {"dy"}, db[] = {"db"};
constexpr sv bn_in[] = {"x", "weight", "bias", "running_mean", "running_var"};
constexpr sv bn_train_in[] = {"x", "weight", "bias"}, bn_train_out[] = {"y", "mean", "invstd"};
constexpr sv bn_bw_in[] = {"x", "dy", "weight", "mean", "invstd"}, bn_stats[] = {"mean", "invstd"};
constexpr sv bn_bw_out[] = {"dx", "dweight", "dbias"};
constexpr sv x[] = {"x"}, y_dy[] = {"y", "dy"}, xs[] = {"x*"}, x_dy_nnz[] = {"x", "dy", "nnz"};
constexpr sv xent_in[] = {"logits", "target"}, xent_out[] = {"probs", "loss"};
constexpr sv probs_target[] = {"probs", "target"}, dlogits[] = {"dlogits"};
constexpr sv src[] = {"src"}, dst[] = {"dst"};
constexpr sv param_grad[] = {"param", "grad"}; // updates param in place
constexpr sv velocity[] = {"velocity"};
constexpr sv grad_step[] = {"grad", "step"}, param_m_v[] = {"param", "m", "v"};
constexpr sv logits_target[] = {"logits", "target"}, loss[] = {"loss"};

constexpr std::array<Entry, 43> table = {{
    {Fn::conv2d_forward, "conv2d.forward", x_w_b_res_nnz, y_compacted, b_res_nnz_form, y_nnz},
    {Fn::conv2d_fold_bn, "conv2d.fold_bn", fold_in, fold_out, b},
    {Fn::conv2d_backward_data, "conv2d.backward_data", dy_w, dx, {}},
    {Fn::conv2d_backward_weight, "conv2d.backward_weight", x_dy_nnz, dw, nnz},
    {Fn::linear_forward, "linear.forward", x_w_b, y, b},
    {Fn::linear_backward_data, "linear.backward_data", dy_w, dx, {}},
    {Fn::linear_backward_weight, "linear.backward_weight", x_dy, dw, {}},
    {Fn::bias_backward, "bias.backward", dy, db, {}},
    {Fn::batchnorm_forward, "batchnorm.forward", bn_in, y_compacted, y_form, y_nnz},
    {Fn::batchnorm_forward_train, "batchnorm.forward_train", bn_train_in, bn_train_out, bn_stats},
    {Fn::batchnorm_backward, "batchnorm.backward", bn_bw_in, bn_bw_out, bn_stats},
    {Fn::relu_forward, "relu.forward", x, y_compacted, y_form, y_nnz},
    {Fn::relu_backward, "relu.backward", y_dy, dx, {}},
    {Fn::maxpool2d_forward, "maxpool2d.forward", x, y, {}},
    {Fn::maxpool2d_backward, "maxpool2d.backward", x_dy, dx, {}},
    {Fn::avgpool2d_forward, "avgpool2d.forward", x, y, {}},
    {Fn::avgpool2d_backward, "avgpool2d.backward", dy, dx, {}},
    {Fn::adaptive_avgpool2d_forward, "adaptive_avgpool2d.forward", x, y, {}},
    {Fn::adaptive_avgpool2d_backward, "adaptive_avgpool2d.backward", dy, dx, {}},
    {Fn::add_forward, "add.forward", xs, y, {}},
    {Fn::concat_forward, "concat.forward", xs, y, {}},
    {Fn::concat_backward, "concat.backward", dy, dx, {}},
    {Fn::upsample2d_forward, "upsample2d.forward", x, y, {}},
    {Fn::upsample2d_backward, "upsample2d.backward", dy, dx, {}},
    {Fn::softmax_forward, "softmax.forward", x, y, {}},
    {Fn::softmax_backward, "softmax.backward", y_dy, dx, {}},
    {Fn::softmax_xent_forward, "softmax_xent.forward", xent_in, xent_out, {}},
    {Fn::softmax_xent_backward, "softmax_xent.backward", probs_target, dlogits, {}},
    {Fn::copy, "copy", src, dst, {}},
    {Fn::convert, "convert", src, dst, {}},
    {Fn::region_copy, "region.copy", src, dst, {}},
    {Fn::fill_zero, "fill_zero", {}, dst, {}},
    {Fn::sgd_update, "sgd.update", param_grad, velocity, velocity, velocity},
    {Fn::sparse_compact, "sparse.compact", x, compacted, nnz, nnz},
    {Fn::conv2d_forward_sparse, "conv2d.forward_sparse", sparse_conv_in, y_compacted,
     b_res_nnz_form, y_nnz},
    {Fn::conv2d_backward_weight_sparse, "conv2d.backward_weight_sparse", sparse_dw_in,
     dw_or_partial, nnz_dw_partial},
    {Fn::partial_sum, "partial.sum", partial_nnz, dst, b_res_nnz},
    {Fn::adam_update, "adam.update", grad_step, param_m_v, {}, param_m_v},
    {Fn::mse_forward, "mse.forward", logits_target, loss, {}},
    {Fn::mse_backward, "mse.backward", logits_target, dlogits, {}},
    {Fn::conv2d_forward_partial, "conv2d.forward_partial", x_w, partial, {}},
    {Fn::linear_forward_partial, "linear.forward_partial", x_w, partial, {}},
    {Fn::conv2d_pool_forward, "conv2d.pool_forward", x_w_b, y, b},
}};

static_assert(
    [] {
      for (size_t i = 0; i < table.size(); ++i)
        if (size_t(table[i].fn) != i) return false;
      return true;
    }(),
    "the table lists every Fn in enum order");

bool listed(std::span<const sv> roles, std::string_view role) {
  for (sv r : roles)
    if (r == role) return true;
  return false;
}

} // namespace

std::string_view fn_name(Fn f) { return table[size_t(f)].name; }

std::optional<Fn> parse_fn(std::string_view name) {
  for (const Entry& e : table)
    if (e.name == name) return e.fn;
  return std::nullopt;
}

FnSignature fn_signature(Fn f) {
  const Entry& e = table[size_t(f)];
  return {e.reads, e.writes, e.optional, e.updates};
}

bool fn_reads(Fn f, std::string_view role) { return listed(table[size_t(f)].reads, role); }
bool fn_writes(Fn f, std::string_view role) {
  return listed(table[size_t(f)].writes, role) || (f == Fn::sgd_update && role == "param");
}
bool fn_updates(Fn f, std::string_view role) { return listed(table[size_t(f)].updates, role); }

} // namespace kiln
