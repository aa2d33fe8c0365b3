// The cuda backend: kernel images loaded with cudaLibraryLoadData, one arena allocated from
// the static memory plan, each phase captured once as a CUDA graph and replayed, NVTX
// ranges per layer (when graphs are off, for profiling), library steps through cuDNN.
// Every CUDA call is checked; errors name the step and the layer.
#pragma once

#include "runtime/backend.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct CudaOptions {
  int device = 0;
  bool graphs =
      true; // capture each phase once and replay it; off: launch step by step (NVTX per layer)
};

// Library steps (cuDNN). Separate, so a per-model binary links cuDNN only when its plan
// has library steps.
class LibraryRunner {
public:
  virtual ~LibraryRunner() = default;
  // Called once the arena exists; chooses algorithms, sizes workspaces.
  virtual void prepare(const Plan& plan, void* stream, std::byte* arena) = 0;
  virtual void run(const Step& step, std::byte* arena) = 0;
};

class CudaBackend final : public Backend {
public:
  // Kernel images by their plan path (kernels/x.cubin): read from files under `root`, or
  // supplied by `images` (a per-model binary embeds them).
  using ImageSource = std::function<std::string(const std::string& image)>;
  CudaBackend(const std::string& root, CudaOptions options = {});
  CudaBackend(ImageSource images, CudaOptions options = {});
  ~CudaBackend() override;

  void set_library(std::unique_ptr<LibraryRunner> lib) { library_ = std::move(lib); }

  std::string_view name() const override { return "cuda"; }
  void prepare(const Plan& plan) override;
  void upload(int buffer, const Tensor& t) override;
  Tensor download(int buffer) override;
  void poison(int buffer) override;
  void run(const Step& step) override;
  void begin_phase(const Phase& phase) override;
  void end_phase(const Phase& phase) override;
  void synchronize() override;
  double time_ms(const std::function<void()>& body) override; // CUDA events on the stream

  // Device bytes of the arena, for reports.
  int64_t arena_bytes() const { return arena_bytes_; }
  // The stream every step runs on (a cudaStream_t), for timing with events.
  void* stream() const { return stream_; }

private:
  struct Loaded;
  void clamp_to_resident_clusters(Loaded& l, const Kernel& k, const std::string& at) const;
  void check(int status, const char* call, const std::string& where) const;
  ImageSource images_;
  CudaOptions options_;
  const Plan* plan_ = nullptr;
  std::byte* arena_ = nullptr;
  int64_t arena_bytes_ = 0;
  void* stream_ = nullptr;
  std::vector<std::unique_ptr<Loaded>> kernels_;
  std::map<std::string, void*> graphs_; // phase -> cudaGraphExec_t
  bool capturing_ = false, replaying_ = false;
  std::unique_ptr<LibraryRunner> library_;
};

} // namespace kiln
