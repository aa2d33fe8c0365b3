#include "generator/cli/model_args.hpp"

#include "generator/run/model_source.hpp"

namespace kiln::cli {

void ModelArgs::add_to(CLI::App* cmd, bool model_optional) {
  auto* opt = cmd->add_option("MODEL", model,
                              "model file (kiln-model/1 JSON, or ONNX: *.onnx, imported in memory "
                              "with its initializers as the weights) or a shipped model's name "
                              "(`kiln models` lists them)" +
                                  std::string(model_optional ? "; default resnet18" : ""));
  if (!model_optional)
    opt->required();
  else
    model = "resnet18";
  cmd->add_option("--batch", batch, "override the input batch size");
  cmd->add_option(
      "--image", image,
      "override the input image size, HxW (or one number: square, or a 1-D signal's L)");
  cmd->add_option("--dtype", dtype, "override the element type: f32, f16, bf16 or f64")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "f64"}));
}

ModelOverrides ModelArgs::overrides() const {
  ModelOverrides o;
  if (batch_given()) o.batch = batch;
  if (image_given()) set_image_size(o, image);
  if (!dtype.empty()) o.dtype = parse_dtype(dtype);
  return o;
}

Model ModelArgs::load() const {
  Model m = load_model_or_shipped(model);
  apply_overrides(m, overrides());
  return m;
}

} // namespace kiln::cli
