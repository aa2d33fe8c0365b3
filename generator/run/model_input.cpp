#include "generator/run/model_input.hpp"

#include "generator/run/model_source.hpp"
#include "runtime/error.hpp"
#include "runtime/fold_batch.hpp"
#include "runtime/io/npy.hpp"
#include "runtime/io/safetensors.hpp"
#include "runtime/weights.hpp"

#include <fmt/format.h>

namespace kiln {

ModelInput load_model_input(const std::string& model, const ModelOverrides& overrides,
                            const std::string& input_path) {
  ModelInput r;
  r.input = io::read_npy(input_path);
  if (!is_float(r.input.dtype()))
    throw Error(input_path, "",
                cat("the input must hold floats, not ", dtype_name(r.input.dtype())));
  ModelOverrides ov = overrides;
  r.model = load_model_or_shipped(model);
  // A signal model's [N, C, L] is its [N, C, L, 1].
  if (r.model.signal && r.input.shape().size() == 3) {
    Shape held = r.input.shape();
    held.push_back(1);
    r.input = r.input.reshaped(held);
  }
  const Shape s = r.input.shape();
  r.images = s.empty() ? 0 : s[0];
  // A folded model takes any number of images: the last fold is filled with zero images.
  int64_t factor = 1;
  for (const Node& n : r.model.nodes)
    if (n.op == OpKind::fold) factor = n.attrs.factor;
  if (s.size() == r.model.input_shape.size()) {
    if (!ov.batch) ov.batch = (s[0] + factor - 1) / factor * factor;
    if (!ov.image && s.size() == 4) ov.image = Int2{s[2], s[3]}; // a signal's: [L, 1]
  }
  apply_overrides(r.model, ov);
  Shape padded = s;
  if (!padded.empty() && factor > 1 && padded[0] < r.model.input_shape[0] &&
      r.model.input_shape[0] - padded[0] < factor)
    padded[0] = r.model.input_shape[0];
  if (padded != r.model.input_shape)
    throw Error(input_path, "",
                cat("has shape ", shape_str(caller_output_shape(r.model, s)), ", the model takes ",
                    shape_str(caller_input_shape(r.model))));
  if (padded != s) {
    r.input = pad_batch(r.input, padded[0]);
    const int64_t pad = padded[0] - s[0];
    r.padding_note = fmt::format("{} images fill {} folds of {}: the last fold is padded with {} "
                                 "zero image{} and {} row{} dropped",
                                 s[0], padded[0] / factor, factor, pad, pad == 1 ? "" : "s",
                                 pad == 1 ? "its" : "their", pad == 1 ? " is" : "s are");
  }
  return r;
}

void bind_initial_weights(Executor& ex, const Plan& plan, const std::string& weights_file,
                          const std::string& model, uint64_t seed) {
  if (!weights_file.empty())
    bind_weights(ex, plan, io::read_safetensors(weights_file).tensors, weights_file);
  else if (const auto* w = model_file_weights(model))
    bind_weights(ex, plan, *w, model);
  else
    bind_seeded_weights(ex, plan, seed);
}

} // namespace kiln
