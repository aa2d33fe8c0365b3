// The program `kiln build` makes: one model's plan and kernel images compiled in, the
// runtime, the static CUDA runtime, and cuDNN only when the plan has library steps.
//
//   BIN --input X.npy --output Y.npy [--weights W.safetensors | --seed S] [--bench N]
//   BIN --input X.npy --target T.npy --grads G.safetensors ...        (training builds)
#include "runtime/cuda/backend.hpp"
#include "runtime/cuda/cudnn_runner.hpp"
#include "runtime/embedded.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/fold_batch.hpp"
#include "runtime/io/npy.hpp"
#include "runtime/io/safetensors.hpp"
#include "runtime/step_timer.hpp"
#include "runtime/weights.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuda_runtime_api.h>
#include <string>
#include <vector>

namespace kiln {
extern const EmbeddedFile model_files[];
extern const size_t model_files_count;
// Defined only when the program links cuDNN (weak: absent otherwise).
__attribute__((weak)) std::unique_ptr<LibraryRunner> make_cudnn_runner();
} // namespace kiln

using namespace kiln;

namespace {

std::string_view embedded(const std::string& path) {
  for (size_t i = 0; i < model_files_count; ++i)
    if (model_files[i].path == path) return model_files[i].data;
  throw Error("", "embedded data", cat("no ", path));
}

struct Args {
  std::string input, output, weights, target, grads;
  uint64_t seed = 0;
  int bench = 0;
  int device = 0;
};

void usage(FILE* f, const char* argv0) {
  const Plan p = parse_plan(embedded("plan.json"), "plan.json");
  const Shape& in = p.buffers[p.inputs[0]].shape;
  std::fprintf(
      f,
      "%s: model %s for %s (%s), built by kiln %s\n"
      "usage: %s --input X.npy --output Y.npy [--weights W.safetensors | --seed S] [--bench N] "
      "[--device D]\n"
      "%s"
      "  --input    input batch, .npy %s%s\n"
      "  --output   the model's first output, .npy %s\n"
      "  --weights  parameters by name (PyTorch state_dict names); default: seeded\n"
      "  --bench N  run N times more after a warm-up and print latency and throughput medians\n",
      argv0, p.model.c_str(), p.gpu.c_str(), p.arch.c_str(), p.kiln_version.c_str(), argv0,
      p.train ? cat("  --target T.npy --grads G.safetensors   (a training build: the step's "
                    "gradients; T: class indices, .npy ",
                    shape_str(caller_target_shape(p)), ")\n")
                    .c_str()
              : "",
      shape_str(caller_shape(p, in)).c_str(),
      p.signal ? " (a 1-D signal [N, C, L]; [N, C, L, 1] is read too)" : "",
      shape_str(caller_shape(p, p.buffers[p.outputs[0]].shape)).c_str());
}

// The input batch as the plan holds it: a signal plan's [N, C, L] is its [N, C, L, 1]. Checked
// before any device is opened, so a wrong file is a clear error on any machine.
Tensor read_input(const Plan& plan, const std::string& path, int64_t& images, const char* argv0) {
  Tensor x = io::read_npy(path);
  const Shape given = x.shape();
  if (plan.signal && given.size() == 3) x = x.reshaped({given[0], given[1], given[2], 1});
  const Shape& want = plan.buffers[plan.inputs[0]].shape;
  // A folded model takes the images of its last fold short: padded with zero images.
  const int64_t factor = plan_fold_factor(plan);
  images = given.empty() ? 0 : given[0];
  Shape padded = x.shape();
  if (factor > 1 && !plan.train && !padded.empty() && padded[0] < want[0] &&
      want[0] - padded[0] < factor)
    padded[0] = want[0];
  if (padded != want)
    throw Error(path, "",
                cat("has shape ", shape_str(given), ", the model takes ",
                    shape_str(caller_shape(plan, want)),
                    plan.signal ? " (a 1-D signal [N, C, L])" : "",
                    " (kiln build --batch/--image fix it)"));
  if (padded != x.shape()) {
    std::fprintf(stderr,
                 "%s: note: %lld images, the last fold of %lld padded with %lld zero images\n",
                 argv0, (long long)images, (long long)factor, (long long)(want[0] - images));
    x = pad_batch(x, want[0]);
  }
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      usage(stdout, argv[0]);
      std::exit(0);
    }
    if (i + 1 >= argc) throw Error("", k, "needs a value (see --help)");
    const std::string v = argv[++i];
    if (k == "--input")
      a.input = v;
    else if (k == "--output")
      a.output = v;
    else if (k == "--weights")
      a.weights = v;
    else if (k == "--target")
      a.target = v;
    else if (k == "--grads")
      a.grads = v;
    else if (k == "--seed")
      a.seed = std::stoull(v);
    else if (k == "--bench")
      a.bench = std::stoi(v);
    else if (k == "--device")
      a.device = std::stoi(v);
    else
      throw Error("", k, "unknown option (see --help)");
  }
  if (a.input.empty()) throw Error("", "--input", "is required (see --help)");
  return a;
}

} // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    const Plan plan = parse_plan(embedded("plan.json"), "plan.json");
    if (plan.train && (a.target.empty() || a.grads.empty()))
      throw Error("", "--target",
                  "a training build needs --target T.npy and --grads G.safetensors");
    if (!plan.train && a.output.empty() && a.bench == 0) throw Error("", "--output", "is required");
    int64_t images = 0;
    Tensor x = read_input(plan, a.input, images, argv[0]);
    const Shape& want = plan.buffers[plan.inputs[0]].shape;
    const Tensor target =
        plan.train ? held_target(plan, io::read_npy(a.target), a.target).to(DType::i64) : Tensor();
    CudaOptions co;
    co.device = a.device;
    CudaBackend backend([](const std::string& image) { return std::string(embedded(image)); }, co);
    if (make_cudnn_runner) backend.set_library(make_cudnn_runner());
    Executor ex(plan, backend, ExecutorOptions{false, {}});
    if (!a.weights.empty())
      bind_weights(ex, plan, io::read_safetensors(a.weights).tensors, a.weights);
    else
      bind_seeded_weights(ex, plan, a.seed);
    ex.write(plan.inputs[0], x);
    if (plan.train) ex.write(plan.target, target);
    auto step = [&] {
      ex.run("forward");
      if (plan.train) ex.run("backward");
    };
    step();
    if (!a.output.empty()) {
      Tensor y = ex.read(plan.outputs[0]);
      if (y.dtype() == DType::bf16) y = y.to(DType::f32);
      if (images < want[0] && !y.shape().empty() && y.shape()[0] == want[0])
        y = first_rows(y, images);
      io::write_npy(a.output, y.reshaped(caller_shape(plan, y.shape())));
    }
    if (plan.train) {
      io::Safetensors g;
      g.tensors = collect_grads(ex, plan);
      io::write_safetensors(a.grads, g);
    }
    if (a.bench > 0) {
      const StepTimes t = time_steps(backend, 3, a.bench, step); // CUDA events, after warm-up
      const int64_t batch = images;
      std::printf("%s %s on %s: median %.3f ms over %d runs (min %.3f, max %.3f), %.1f images/s\n",
                  plan.model.c_str(), plan.train ? "training step" : "inference", plan.arch.c_str(),
                  t.median(), a.bench, t.min(), t.max(), double(batch) * 1000.0 / t.median());
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    return 3;
  }
}
