// kiln gpu list | detect: shipped GPU descriptors, and the live GPU's.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/gpu/detect.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "runtime/io/file.hpp"

#include <fmt/format.h>

namespace kiln::cli {

void add_gpu(CLI::App& app) {
  CLI::App* gpu = app.add_subcommand("gpu", "GPU descriptors (kiln-gpu/1)");
  gpu->require_subcommand(1);

  CLI::App* list = gpu->add_subcommand("list", "the shipped descriptors (usable as --gpu NAME)");
  list->callback([] {
    fmt::print("{:<10}  {:<28}  {:<6}  {:>4}  {:>9}  {:>9}  {:>8}  {:>8}\n", "name", "GPU", "arch",
               "SMs", "memory", "GB/s", "fp32 TF", "fp16 TF");
    for (const ShippedGpu& g : shipped_gpus())
      fmt::print("{:<10}  {:<28}  {:<6}  {:>4}  {:>9}  {:>9.0f}  {:>8.1f}  {:>8.1f}\n", g.id,
                 g.desc.name, g.desc.arch, g.desc.sm_count, human_bytes(g.desc.memory_bytes),
                 g.desc.memory_bandwidth_gbps, g.desc.peak_tflops.fp32, g.desc.peak_tflops.fp16);
  });

  auto out = std::make_shared<std::string>();
  auto device = std::make_shared<int>(0);
  CLI::App* detect = gpu->add_subcommand(
      "detect", "describe the live GPU through the CUDA runtime (needs the NVIDIA driver)");
  detect->add_option("-o,--output", *out, "write the descriptor here instead of stdout");
  detect->add_option("--device", *device, "CUDA device ordinal");
  detect->callback([out, device] {
    const std::string text = gpu_to_json(detect_gpu(*device)).dump(2) + "\n";
    if (out->empty())
      fmt::print("{}", text);
    else
      io::write_file_atomic(*out, text);
  });
}

} // namespace kiln::cli
