#include "runtime/cuda/backend.hpp"

#include "runtime/cuda/device.hpp"
#include "runtime/cuda/tensor_map.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/tensor_map.hpp"

#include <cuda_runtime_api.h>
#include <fstream>
#include <nvtx3/nvToolsExt.h>
#include <sstream>

namespace kiln {

struct CudaBackend::Loaded {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  std::array<unsigned, 3> grid{1, 1, 1}; // as launched (a clustered grid may be cut: prepare)
};

namespace {

std::string read_image(const std::string& root, const std::string& rel) {
  std::ifstream f(root + "/" + rel, std::ios::binary);
  if (!f)
    throw Error(root + "/" + rel, "",
                "cannot read the kernel image (run kiln compile on the directory)");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string where(const Step& s) {
  return cat("step ", fn_name(s.fn), s.node.empty() ? "" : " of layer \"" + s.node + "\"");
}

} // namespace

CudaBackend::CudaBackend(const std::string& root, CudaOptions options)
    : images_([root](const std::string& rel) { return read_image(root, rel); }), options_(options) {
}

CudaBackend::CudaBackend(ImageSource images, CudaOptions options)
    : images_(std::move(images)), options_(options) {}

CudaBackend::~CudaBackend() {
  if (capturing_) { // a step failed mid-capture: leave the stream usable
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(static_cast<cudaStream_t>(stream_), &g);
    if (g) cudaGraphDestroy(g);
  }
  for (auto& [name, g] : graphs_)
    cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));
  for (auto& k : kernels_)
    if (k->library) cudaLibraryUnload(k->library);
  if (arena_) cudaFree(arena_);
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void CudaBackend::check(int status, const char* call, const std::string& at) const {
  if (status == cudaSuccess) return;
  const cudaError_t e = cudaError_t(status);
  cudaGetLastError(); // clear a sticky launch error for the message
  throw Error("", at, cat(call, " failed: ", cudaGetErrorName(e), ": ", cudaGetErrorString(e)));
}

// A clustered kernel (kiln's are persistent: any whole number of clusters covers their tiles)
// is launched with no more clusters than the GPU holds at once: the GPCs' SM counts need not
// be multiples of the cluster, and a cluster that waits for another wave would double the
// kernel's time.
void CudaBackend::clamp_to_resident_clusters(Loaded& l, const Kernel& k,
                                             const std::string& at) const {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(l.grid[0], l.grid[1], l.grid[2]);
  cfg.blockDim = dim3(unsigned(k.block[0]), unsigned(k.block[1]), unsigned(k.block[2]));
  cfg.dynamicSmemBytes = size_t(k.dynamic_smem);
  int clusters = 0;
  check(cudaOccupancyMaxActiveClusters(&clusters, reinterpret_cast<const void*>(l.kernel), &cfg),
        "cudaOccupancyMaxActiveClusters", at);
  if (clusters < 1) throw Error("", at, "not one of its clusters fits on this GPU");
  // A 1-D grid (kiln's clustered kernels'): its clusters lie along x.
  if (k.grid[1] * k.grid[2] == 1 && l.grid[0] / k.cluster[0] > unsigned(clusters))
    l.grid[0] = unsigned(clusters * k.cluster[0]);
}

void CudaBackend::prepare(const Plan& plan) {
  plan_ = &plan;
  require_device(plan.arch, options_.device);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", "cuda backend");
  stream_ = s;
  arena_bytes_ = std::max<int64_t>(plan.arena_bytes, 256);
  void* a = nullptr;
  check(cudaMalloc(&a, size_t(arena_bytes_)), "cudaMalloc of the arena",
        cat("arena of ", arena_bytes_, " bytes"));
  arena_ = static_cast<std::byte*>(a);
  for (const Kernel& k : plan.kernels) {
    auto l = std::make_unique<Loaded>();
    const std::string image = images_(k.image);
    const std::string at = cat("kernel \"", k.name, "\"");
    check(cudaLibraryLoadData(&l->library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cudaLibraryLoadData", at);
    check(cudaLibraryGetKernel(&l->kernel, l->library, k.entry.c_str()), "cudaLibraryGetKernel",
          at);
    if (k.dynamic_smem > 48 * 1024) // beyond the default, shared memory is opted into per kernel
      check(cudaFuncSetAttribute(reinterpret_cast<const void*>(l->kernel),
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, int(k.dynamic_smem)),
            "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)", at);
    for (int d = 0; d < 3; ++d)
      l->grid[size_t(d)] = unsigned(k.grid[size_t(d)]);
    if (k.clustered()) clamp_to_resident_clusters(*l, k, at);
    kernels_.push_back(std::move(l));
  }
  // Tensor maps (tensor_map.encode steps): the arena's addresses are fixed from here on, so
  // each map is encoded and copied now, once per binding; its step then has nothing to do
  // (and a CUDA graph captures no copy from pageable host memory).
  for (const Phase& ph : plan.phases)
    for (const Step& st : ph.steps)
      if (st.fn == Fn::tensor_map_encode && st.kind != StepKind::free) {
        const int out = st.need("map");
        EncodedTensorMap bytes;
        try {
          bytes = encode_tensor_map(tensor_map_of(plan, st.tensor_map(), arena_));
        } catch (const Error& e) {
          throw Error("", where(st), e.message());
        }
        check(cudaMemcpy(arena_ + plan.byte_offset(out), bytes.data(), sizeof bytes,
                         cudaMemcpyHostToDevice),
              "cudaMemcpy of a tensor map", plan.buffers[out].name);
      }
  bool has_library = false;
  for (const Phase& ph : plan.phases)
    for (const Step& st : ph.steps)
      has_library |= st.kind == StepKind::library;
  if (has_library) {
    if (!library_)
      throw Error("", "cuda backend",
                  "the plan has cuDNN library steps but this program was built without cuDNN");
    library_->prepare(plan, stream_, arena_);
  }
}

void CudaBackend::upload(int buffer, const Tensor& t) {
  const Buffer& b = plan_->buffers[buffer];
  std::byte* at = arena_ + plan_->byte_offset(buffer);
  const size_t es = dtype_size(b.dtype), run = size_t(b.run_elements()) * es;
  if (b.view_pitch == 0)
    check(cudaMemcpy(at, t.bytes(), t.nbytes(), cudaMemcpyHostToDevice), "cudaMemcpy", b.name);
  else // a pitched view's runs, row by row
    check(cudaMemcpy2D(at, size_t(b.run_stride()) * es, t.bytes(), run, run, size_t(b.run_count()),
                       cudaMemcpyHostToDevice),
          "cudaMemcpy2D", b.name);
}

Tensor CudaBackend::download(int buffer) {
  const Buffer& b = plan_->buffers[buffer];
  Tensor t(b.dtype, b.shape);
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize", b.name);
  const std::byte* at = arena_ + plan_->byte_offset(buffer);
  const size_t es = dtype_size(b.dtype), run = size_t(b.run_elements()) * es;
  if (b.view_pitch == 0)
    check(cudaMemcpy(t.bytes(), at, t.nbytes(), cudaMemcpyDeviceToHost), "cudaMemcpy", b.name);
  else
    check(cudaMemcpy2D(t.bytes(), run, at, size_t(b.run_stride()) * es, run, size_t(b.run_count()),
                       cudaMemcpyDeviceToHost),
          "cudaMemcpy2D", b.name);
  return t;
}

void CudaBackend::poison(int buffer) {
  if (replaying_) return; // the graph holds the memset
  const Buffer& b = plan_->buffers[buffer];
  // All-ones bytes are NaN in f32, f16 and bf16.
  std::byte* at = arena_ + plan_->byte_offset(buffer);
  const size_t es = dtype_size(b.dtype);
  const auto stream = static_cast<cudaStream_t>(stream_);
  if (b.view_pitch == 0)
    check(cudaMemsetAsync(at, 0xff, size_t(b.bytes()), stream), "cudaMemsetAsync", b.name);
  else
    check(cudaMemset2DAsync(at, size_t(b.run_stride()) * es, 0xff, size_t(b.run_elements()) * es,
                            size_t(b.run_count()), stream),
          "cudaMemset2DAsync", b.name);
}

void CudaBackend::run(const Step& step) {
  if (replaying_) return;
  if (step.fn == Fn::tensor_map_encode) return; // encoded when the plan was bound (prepare)
  const std::string at = where(step);
  if (!options_.graphs) nvtxRangePushA(step.node.c_str());
  if (step.kind == StepKind::launch) {
    const Kernel& k = plan_->kernels[step.kernel];
    struct {
      void* p[16];
    } args{};
    for (size_t i = 0; i < k.args.size(); ++i)
      args.p[i] = arena_ + plan_->byte_offset(step.need(k.args[i]));
    void* params[] = {&args};
    check(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[step.kernel]->kernel),
                           dim3(kernels_[step.kernel]->grid[0], kernels_[step.kernel]->grid[1],
                                kernels_[step.kernel]->grid[2]),
                           dim3(unsigned(k.block[0]), unsigned(k.block[1]), unsigned(k.block[2])),
                           params, size_t(k.dynamic_smem), static_cast<cudaStream_t>(stream_)),
          "cudaLaunchKernel", at);
  } else if (step.kind == StepKind::library) {
    try {
      library_->run(step, arena_);
    } catch (const Error& e) {
      throw Error("", at, e.message());
    }
  } else {
    throw Error("", at,
                "a reference step cannot run on the GPU (the plan was made for the cpu backend)");
  }
  if (!options_.graphs) nvtxRangePop();
}

void CudaBackend::begin_phase(const Phase& phase) {
  if (!options_.graphs) return;
  if (graphs_.count(phase.name)) {
    replaying_ = true;
    return;
  }
  check(
      cudaStreamBeginCapture(static_cast<cudaStream_t>(stream_), cudaStreamCaptureModeThreadLocal),
      "cudaStreamBeginCapture", phase.name + " phase");
  capturing_ = true;
}

void CudaBackend::end_phase(const Phase& phase) {
  if (!options_.graphs) return;
  const std::string at = phase.name + " phase";
  cudaStream_t s = static_cast<cudaStream_t>(stream_);
  if (capturing_) {
    cudaGraph_t g = nullptr;
    check(cudaStreamEndCapture(s, &g), "cudaStreamEndCapture", at);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    check(e, "cudaGraphInstantiate", at);
    graphs_[phase.name] = exec;
    capturing_ = false;
  }
  replaying_ = false;
  check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graphs_.at(phase.name)), s), "cudaGraphLaunch",
        at);
}

void CudaBackend::synchronize() {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize",
        "cuda backend");
}

double CudaBackend::time_ms(const std::function<void()>& body) {
  const char* at = "cuda backend: timing";
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate", at);
  check(cudaEventCreate(&stop), "cudaEventCreate", at);
  const auto s = static_cast<cudaStream_t>(stream_);
  float ms = 0;
  check(cudaEventRecord(start, s), "cudaEventRecord", at);
  body();
  check(cudaEventRecord(stop, s), "cudaEventRecord", at);
  check(cudaEventSynchronize(stop), "cudaEventSynchronize", at);
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime", at);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

} // namespace kiln
