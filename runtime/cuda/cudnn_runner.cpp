#include "runtime/cuda/cudnn_runner.hpp"

#include "runtime/error.hpp"

#include <cudnn.h>
#include <cuda_runtime_api.h>
#include <map>
#include <tuple>

namespace kiln {

namespace {

void ck(cudnnStatus_t s, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS) throw Error("", "cudnn", cat(call, " failed: ", cudnnGetErrorString(s)));
}
void ck(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw Error("", "cuda", cat(call, " failed: ", cudaGetErrorString(e)));
}

cudnnDataType_t data_type(DType t) {
  switch (t) {
  case DType::f16: return CUDNN_DATA_HALF;
  case DType::bf16: return CUDNN_DATA_BFLOAT16;
  case DType::f32: return CUDNN_DATA_FLOAT;
  case DType::f64: return CUDNN_DATA_DOUBLE;
  default: throw Error("", "cudnn", cat("no cuDNN type for ", dtype_name(t)));
  }
}

// A 4-D view of a buffer: [N, C, H, W] (2-D [N, F] as [N, F, 1, 1]; 1-D [C] as [1, C, 1, 1]).
std::array<int, 4> dims4(const Buffer& b) {
  const Shape& s = b.shape;
  if (s.size() == 4) return {int(s[0]), int(s[1]), int(s[2]), int(s[3])};
  if (s.size() == 2) return {int(s[0]), int(s[1]), 1, 1};
  if (s.size() == 1) return {1, int(s[0]), 1, 1};
  throw Error("", b.name, "cuDNN steps take 1-, 2- or 4-D tensors");
}

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  explicit TensorDesc(const Buffer& b) {
    ck(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
    const auto n = dims4(b);
    ck(cudnnSetTensor4dDescriptor(d, b.layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                  data_type(b.dtype), n[0], n[1], n[2], n[3]),
       "cudnnSetTensor4dDescriptor");
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
};

struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  explicit FilterDesc(const Buffer& b) {
    ck(cudnnCreateFilterDescriptor(&d), "cudnnCreateFilterDescriptor");
    const auto n = dims4(b);
    ck(cudnnSetFilter4dDescriptor(d, data_type(b.dtype), b.layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                  n[0], n[1], n[2], n[3]),
       "cudnnSetFilter4dDescriptor");
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
};

// What one library step needs, made once at prepare time.
struct Prepared {
  std::map<std::string, std::unique_ptr<TensorDesc>> t; // by role
  std::unique_ptr<FilterDesc> filter;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  int algo = 0;
  size_t workspace = 0;
  // cudnnConvolutionBiasActivationForward takes the whole step (choose_fusion); its
  // activation, relu or identity.
  bool fused = false;
  cudnnActivationDescriptor_t fused_act = nullptr;
  ~Prepared() {
    if (fused_act) cudnnDestroyActivationDescriptor(fused_act);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (pool) cudnnDestroyPoolingDescriptor(pool);
    if (relu) cudnnDestroyActivationDescriptor(relu);
  }
};

class CudnnRunner final : public LibraryRunner {
public:
  ~CudnnRunner() override {
    if (workspace_) cudaFree(workspace_);
    if (handle_) cudnnDestroy(handle_);
  }

  void prepare(const Plan& plan, void* stream, std::byte* arena) override {
    plan_ = &plan;
    ck(cudnnCreate(&handle_), "cudnnCreate");
    ck(cudnnSetStream(handle_, static_cast<cudaStream_t>(stream)), "cudnnSetStream");
    size_t need = 0;
    for (const Phase& ph : plan.phases)
      for (const Step& s : ph.steps)
        if (s.kind == StepKind::library) {
          try {
            auto p = make(s, arena);
            need = std::max(need, p->workspace);
            prepared_[&s] = std::move(p);
          } catch (const Error& e) {
            throw Error("", cat("library step ", fn_name(s.fn), " of layer \"", s.node, "\""), e.message());
          }
        }
    if (need) ck(cudaMalloc(&workspace_, need), "cudaMalloc of the cuDNN workspace");
    workspace_bytes_ = need;
  }

  void run(const Step& s, std::byte* arena) override {
    const Prepared& p = *prepared_.at(&s);
    auto ptr = [&](std::string_view role) {
      return static_cast<void*>(arena + plan_->byte_offset(s.need(role)));
    };
    auto desc = [&](std::string_view role) { return p.t.at(std::string(role))->d; };
    const float one = 1.f, zero = 0.f, beta = s.accumulate ? 1.f : 0.f;
    switch (s.fn) {
    case Fn::conv2d_forward:
      if (p.fused) {
        ck(fused_forward(s, p, ptr, workspace_), "cudnnConvolutionBiasActivationForward");
        break;
      }
      ck(cudnnConvolutionForward(handle_, &one, desc("x"), ptr("x"), p.filter->d, ptr("w"), p.conv,
                                 cudnnConvolutionFwdAlgo_t(p.algo), workspace_, p.workspace, &zero, desc("y"), ptr("y")),
         "cudnnConvolutionForward");
      if (s.arg("b") >= 0) ck(cudnnAddTensor(handle_, &one, desc("b"), ptr("b"), &one, desc("y"), ptr("y")), "cudnnAddTensor");
      if (s.arg("residual") >= 0)
        ck(cudnnAddTensor(handle_, &one, desc("residual"), ptr("residual"), &one, desc("y"), ptr("y")), "cudnnAddTensor");
      if (s.epilogue.activation == Activation::relu)
        ck(cudnnActivationForward(handle_, p.relu, &one, desc("y"), ptr("y"), &zero, desc("y"),
                                  ptr("y")),
           "cudnnActivationForward");
      break;
    case Fn::conv2d_backward_data:
      ck(cudnnConvolutionBackwardData(handle_, &one, p.filter->d, ptr("w"), desc("dy"), ptr("dy"), p.conv,
                                      cudnnConvolutionBwdDataAlgo_t(p.algo), workspace_, p.workspace, &beta, desc("dx"), ptr("dx")),
         "cudnnConvolutionBackwardData");
      break;
    case Fn::conv2d_backward_weight:
      ck(cudnnConvolutionBackwardFilter(handle_, &one, desc("x"), ptr("x"), desc("dy"), ptr("dy"), p.conv,
                                        cudnnConvolutionBwdFilterAlgo_t(p.algo), workspace_, p.workspace, &beta,
                                        p.filter->d, ptr("dw")),
         "cudnnConvolutionBackwardFilter");
      break;
    case Fn::bias_backward:
      ck(cudnnConvolutionBackwardBias(handle_, &one, desc("dy"), ptr("dy"), &beta, desc("db"), ptr("db")),
         "cudnnConvolutionBackwardBias");
      break;
    case Fn::relu_forward:
      ck(cudnnActivationForward(handle_, p.relu, &one, desc("x"), ptr("x"), &zero, desc("y"), ptr("y")), "cudnnActivationForward");
      break;
    case Fn::relu_backward: // relu's derivative from its output: y > 0 exactly where x > 0
      ck(cudnnActivationBackward(handle_, p.relu, &one, desc("y"), ptr("y"), desc("dy"), ptr("dy"), desc("y"), ptr("y"),
                                 &beta, desc("dx"), ptr("dx")),
         "cudnnActivationBackward");
      break;
    case Fn::maxpool2d_forward:
    case Fn::avgpool2d_forward:
      ck(cudnnPoolingForward(handle_, p.pool, &one, desc("x"), ptr("x"), &zero, desc("y"), ptr("y")), "cudnnPoolingForward");
      break;
    case Fn::softmax_forward:
      ck(cudnnSoftmaxForward(handle_, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, desc("x"), ptr("x"), &zero,
                             desc("y"), ptr("y")),
         "cudnnSoftmaxForward");
      break;
    case Fn::softmax_backward:
      ck(cudnnSoftmaxBackward(handle_, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, desc("y"), ptr("y"),
                              desc("dy"), ptr("dy"), &beta, desc("dx"), ptr("dx")),
         "cudnnSoftmaxBackward");
      break;
    case Fn::batchnorm_forward:
      ck(cudnnBatchNormalizationForwardInference(handle_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, desc("x"), ptr("x"),
                                                 desc("y"), ptr("y"), desc("weight"), ptr("weight"), ptr("bias"),
                                                 ptr("running_mean"), ptr("running_var"), s.attrs.eps),
         "cudnnBatchNormalizationForwardInference");
      if (s.epilogue.activation == Activation::relu)
        ck(cudnnActivationForward(handle_, p.relu, &one, desc("y"), ptr("y"), &zero, desc("y"),
                                  ptr("y")),
           "cudnnActivationForward");
      break;
    case Fn::add_forward: {
      const auto xs = s.variadic('x');
      ck(cudnnTransformTensor(handle_, &one, p.t.at("x0")->d, ptr("x0"), &zero, desc("y"), ptr("y")), "cudnnTransformTensor");
      for (size_t k = 1; k < xs.size(); ++k) {
        const std::string r = "x" + std::to_string(k);
        ck(cudnnAddTensor(handle_, &one, desc(r), ptr(r), &one, desc("y"), ptr("y")), "cudnnAddTensor");
      }
      break;
    }
    case Fn::copy:
    case Fn::convert:
      ck(cudnnTransformTensor(handle_, &one, desc("src"), ptr("src"), &beta, desc("dst"), ptr("dst")), "cudnnTransformTensor");
      break;
    default: throw Error("", "cudnn", cat(fn_name(s.fn), " has no cuDNN implementation"));
    }
  }

private:
  std::unique_ptr<Prepared> make(const Step& s, std::byte* arena) {
    auto p = std::make_unique<Prepared>();
    for (const Arg& a : s.args) {
      const Buffer& b = plan_->buffers[a.buffer];
      if (a.role == "w" || a.role == "dw") continue;
      if (b.dtype == DType::i64) continue;
      p->t[a.role] = std::make_unique<TensorDesc>(b);
    }
    // The bias of a convolution broadcasts as [1, C, 1, 1].
    ck(cudnnCreateActivationDescriptor(&p->relu), "cudnnCreateActivationDescriptor");
    ck(cudnnSetActivationDescriptor(p->relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
       "cudnnSetActivationDescriptor");
    const Attrs& a = s.attrs;
    auto ptr = [&](std::string_view role) {
      return static_cast<void*>(arena + plan_->byte_offset(s.need(role)));
    };
    switch (s.fn) {
    case Fn::conv2d_forward:
    case Fn::conv2d_backward_data:
    case Fn::conv2d_backward_weight: {
      const Buffer& w = plan_->buffers[s.need(s.fn == Fn::conv2d_backward_weight ? "dw" : "w")];
      p->filter = std::make_unique<FilterDesc>(w);
      ck(cudnnCreateConvolutionDescriptor(&p->conv), "cudnnCreateConvolutionDescriptor");
      ck(cudnnSetConvolution2dDescriptor(p->conv, int(a.padding[0]), int(a.padding[1]), int(a.stride[0]), int(a.stride[1]),
                                         int(a.dilation[0]), int(a.dilation[1]), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
         "cudnnSetConvolution2dDescriptor");
      ck(cudnnSetConvolutionGroupCount(p->conv, int(a.groups)), "cudnnSetConvolutionGroupCount");
      ck(cudnnSetConvolutionMathType(p->conv, w.dtype == DType::f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
         "cudnnSetConvolutionMathType");
      choose_algorithm(s, *p, ptr);
      if (s.fn == Fn::conv2d_forward) choose_fusion(s, *p, ptr);
      break;
    }
    case Fn::maxpool2d_forward:
    case Fn::avgpool2d_forward:
      if (a.ceil_mode) throw Error("", "cudnn", "cuDNN pooling has no ceil_mode");
      ck(cudnnCreatePoolingDescriptor(&p->pool), "cudnnCreatePoolingDescriptor");
      ck(cudnnSetPooling2dDescriptor(p->pool,
                                     s.fn == Fn::maxpool2d_forward ? CUDNN_POOLING_MAX
                                     : a.count_include_pad        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                                     CUDNN_NOT_PROPAGATE_NAN, int(a.kernel[0]), int(a.kernel[1]), int(a.padding[0]),
                                     int(a.padding[1]), int(a.stride[0]), int(a.stride[1])),
         "cudnnSetPooling2dDescriptor");
      break;
    case Fn::bias_backward: case Fn::relu_forward: case Fn::relu_backward: case Fn::softmax_forward:
    case Fn::softmax_backward: case Fn::batchnorm_forward: case Fn::add_forward: case Fn::copy: case Fn::convert: break;
    default: throw Error("", "cudnn", cat(fn_name(s.fn), " has no cuDNN implementation"));
    }
    return p;
  }

  template <class Ptr> void choose_algorithm(const Step& s, Prepared& p, Ptr ptr) {
    // Benchmarks every algorithm on the arena's (not yet meaningful) bytes, once per
    // configuration: steps alike (repeated blocks, a benchmark's rotated copies) reuse it.
    std::string key = std::string(fn_name(s.fn));
    for (const Arg& a : s.args) {
      const Buffer& b = plan_->buffers[a.buffer];
      key += cat(" ", a.role, ":", dtype_name(b.dtype), layout_name(b.layout));
      for (int64_t d : b.shape) key += cat("x", d);
    }
    const Attrs& at = s.attrs;
    key += cat(" p", at.padding[0], ",", at.padding[1], " s", at.stride[0], ",", at.stride[1], " d", at.dilation[0], ",",
               at.dilation[1], " g", at.groups);
    if (const auto it = algorithms_.find(key); it != algorithms_.end()) {
      std::tie(p.algo, p.workspace) = it->second;
      return;
    }
    int found = 0;
    const size_t limit = size_t(2) << 30; // workspaces beyond 2 GiB are not considered
    void* ws = nullptr;
    cudaMalloc(&ws, limit) == cudaSuccess ? void() : void(ws = nullptr);
    const size_t ws_bytes = ws ? limit : 0;
    auto d = [&](const char* r) { return p.t.at(r)->d; };
    if (s.fn == Fn::conv2d_forward) {
      cudnnConvolutionFwdAlgoPerf_t perf[8];
      ck(cudnnFindConvolutionForwardAlgorithmEx(handle_, d("x"), ptr("x"), p.filter->d, ptr("w"), p.conv, d("y"), ptr("y"),
                                                8, &found, perf, ws, ws_bytes),
         "cudnnFindConvolutionForwardAlgorithmEx");
      pick(perf, found, p);
    } else if (s.fn == Fn::conv2d_backward_data) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[8];
      ck(cudnnFindConvolutionBackwardDataAlgorithmEx(handle_, p.filter->d, ptr("w"), d("dy"), ptr("dy"), p.conv, d("dx"),
                                                     ptr("dx"), 8, &found, perf, ws, ws_bytes),
         "cudnnFindConvolutionBackwardDataAlgorithmEx");
      pick(perf, found, p);
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
      ck(cudnnFindConvolutionBackwardFilterAlgorithmEx(handle_, d("x"), ptr("x"), d("dy"), ptr("dy"), p.conv, p.filter->d,
                                                       ptr("dw"), 8, &found, perf, ws, ws_bytes),
         "cudnnFindConvolutionBackwardFilterAlgorithmEx");
      pick(perf, found, p);
    }
    if (ws) cudaFree(ws);
    algorithms_.emplace(key, std::make_pair(p.algo, p.workspace));
  }

  // y = act(conv(x) + residual + b) in one cuDNN call (z the residual, or y with weight 0).
  template <class Ptr>
  cudnnStatus_t fused_forward(const Step& s, const Prepared& p, Ptr ptr, void* workspace) const {
    auto d = [&](const char* r) { return p.t.at(r)->d; };
    const bool res = s.arg("residual") >= 0;
    const float one = 1.f, zero = 0.f;
    return cudnnConvolutionBiasActivationForward(
        handle_, &one, d("x"), ptr("x"), p.filter->d, ptr("w"), p.conv,
        cudnnConvolutionFwdAlgo_t(p.algo), workspace, p.workspace, res ? &one : &zero,
        d(res ? "residual" : "y"), ptr(res ? "residual" : "y"), d("b"), ptr("b"), p.fused_act,
        d("y"), ptr("y"));
  }

  // cuDNN's fused conv + bias (+ residual) + relu, where it takes the step: the peer a fused
  // kiln kernel is held against. As separate calls, the bias and the residual each cost a
  // pass over y through cudnnAddTensor's broadcast, and the relu another: per-layer cuDNN
  // times on the H100 (bench/results/h100_2026-11-26) made no sense beside cuDNN inside
  // PyTorch. Identity needs the implicit-precomp-GEMM algorithm (cuDNN's rule); whether
  // cuDNN takes the configuration is asked once here, on the arena's bytes as
  // choose_algorithm's benchmark does; a refusal keeps the separate calls.
  template <class Ptr> void choose_fusion(const Step& s, Prepared& p, Ptr ptr) {
    const Activation act = s.epilogue.activation;
    if (s.arg("b") < 0 || s.accumulate || (act != Activation::relu && act != Activation::none))
      return;
    if (act == Activation::none && p.algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
      return;
    ck(cudnnCreateActivationDescriptor(&p.fused_act), "cudnnCreateActivationDescriptor");
    ck(cudnnSetActivationDescriptor(
           p.fused_act, act == Activation::relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
           CUDNN_NOT_PROPAGATE_NAN, 0.0),
       "cudnnSetActivationDescriptor");
    void* ws = nullptr;
    if (p.workspace && cudaMalloc(&ws, p.workspace) != cudaSuccess) return;
    p.fused = fused_forward(s, p, ptr, ws) == CUDNN_STATUS_SUCCESS;
    cudaDeviceSynchronize(); // the trial finished before its workspace goes
    if (ws) cudaFree(ws);
  }

  // The fastest deterministic algorithm (bit-identical runs); any, if none is.
  template <class Perf> void pick(const Perf* perf, int n, Prepared& p) {
    for (int pass = 0; pass < 2; ++pass)
      for (int i = 0; i < n; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && (pass == 1 || perf[i].determinism == CUDNN_DETERMINISTIC)) {
          p.algo = int(perf[i].algo);
          p.workspace = perf[i].memory;
          return;
        }
    throw Error("", "cudnn", "no convolution algorithm supports this configuration");
  }

  const Plan* plan_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<const Step*, std::unique_ptr<Prepared>> prepared_;
  std::map<std::string, std::pair<int, size_t>> algorithms_; // configuration -> (algo, workspace)
};

} // namespace

std::unique_ptr<LibraryRunner> make_cudnn_runner() { return std::make_unique<CudnnRunner>(); }

} // namespace kiln
