// kiln import: an ONNX model to a kiln-model/1 file and its weights to safetensors.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/model/model_json.hpp"
#include "generator/model/onnx/onnx_import.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/safetensors.hpp"

#include <fmt/format.h>

namespace kiln::cli {

namespace {

struct ImportArgs {
  std::string model, output, weights_out;
  int64_t batch = 0;
};

void import(const ImportArgs& a) {
  if (a.batch < 0 || a.batch > (int64_t(1) << 24))
    throw Error("", "--batch", cat("must be a positive batch size, got ", a.batch));
  const ImportedModel im = import_onnx(a.model, a.batch);
  // Both files are serialized before either is written: what cannot be saved fails first.
  const std::string text = model_to_text(im.model);
  std::vector<std::byte> weights;
  if (!a.weights_out.empty()) {
    io::Safetensors st;
    st.tensors = im.weights;
    st.metadata["format"] = "pt";
    weights = io::serialize_safetensors(st);
  }
  if (!a.weights_out.empty()) io::write_file_atomic(a.weights_out, weights);
  io::write_file_atomic(a.output, text);
  const Model& m = im.model;
  const std::string lns = im.layer_norms_written_out
                              ? fmt::format(", {} written-out LayerNorm(s) as one layer each",
                                            im.layer_norms_written_out)
                              : "";
  fmt::print("imported {} (opset {}): {} ONNX nodes -> {} layers ({} computed at import, {} "
             "dropped{}), input {} {}, {} parameters, {} MACs; wrote {}{}\n",
             a.model, im.opset, im.onnx_nodes, m.nodes.size(), im.folded, im.dropped, lns,
             m.input_name, shape_str(caller_input_shape(m)), with_commas(m.total_params()),
             human_count(m.total_macs()), a.output,
             a.weights_out.empty() ? "" : " and " + a.weights_out);
}

} // namespace

void add_import(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "an ONNX model (opsets 9-21; external data beside it) to a kiln-model/1 file, its "
      "initializers to safetensors "
      "under PyTorch's state_dict names.\n"
      "Every command that takes a MODEL also reads .onnx files directly (kiln run model.onnx "
      "uses the file's weights).\n"
      "Examples:\n"
      "  kiln import resnet18.onnx -o resnet18.json --weights-out resnet18.safetensors\n"
      "  kiln import unet.onnx -o unet.json --batch 8   (the batch of a symbolic batch axis)\n"
      "  kiln inspect resnet18.onnx; kiln run resnet18.onnx --input x.npy --output y.npy\n"
      "Imported (every problem is listed at once, by operator, exit code 2): " +
          onnx_supported_ops() +
          ". Clip with constant bounds (ReLU6: Clip(0, 6)); Concat along channels; "
          "Reshape/Squeeze of activations to [N, features]; Resize/Upsample nearest with an "
          "integer scale; Identity and Dropout are dropped.");
  cmd->add_option("MODEL", a->model, "the ONNX file (.onnx)")->required();
  cmd->add_option("-o,--output", a->output, "the kiln-model/1 JSON to write")->required();
  cmd->add_option("--weights-out", a->weights_out,
                  "write the initializers as weights (.safetensors) for --weights");
  cmd->add_option("--batch", a->batch,
                  "the input batch (replaces a symbolic batch axis, default 1, or a fixed one)");
  cmd->callback([a] { import(*a); });
}

} // namespace kiln::cli
