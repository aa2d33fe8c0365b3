// kiln-plan/1 (DESIGN.md 4.4): the one contract between the generator and the runtime.
//
// A plan names buffers (shape, dtype, role, arena offset; a view shares its base's bytes),
// the parameters and I/O bound to them, a kernel table, and phases (`prepare`, `forward`,
// `backward`, `update`) as step lists; `prepare` computes the derived buffers from the
// parameters and runs again only after they change (the executor sees to that). A step either
// computes a function (`fn`, e.g. conv2d.forward) of a graph node (`node`, `op`, `attrs`) over
// named arguments, through a generated kernel
// (`launch`), a library (`library`, cuDNN) or the reference implementation (`reference`,
// plans made for the cpu backend), or frees a buffer (its bytes may be
// reused by later steps; reading it again is an error). Phases run in order over one
// arena; nothing is allocated while a plan runs.
#pragma once

#include "runtime/dtype.hpp"
#include "runtime/op.hpp"
#include "runtime/shape.hpp"
#include "runtime/step_fn.hpp"
#include "runtime/step_params.hpp"
#include "runtime/tensor.hpp"

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

inline constexpr std::string_view kPlanFormat = "kiln-plan/1";
// The i32 [1] optimizer_state buffer holding the count (from 1) of the update a training
// plan's update phase applies: Adam's bias correction reads it on the device, so one plan
// serves every step. The host writes it before each update.
inline constexpr std::string_view kOptimizerStepBuffer = "opt.step";

enum class BufferRole {
  input,      // a model input, written by the caller
  target,     // training targets (integer classes)
  param,      // trained parameter
  state,      // non-trained parameter state (running statistics)
  param_grad, // gradient of a parameter
  output,     // a model output, read by the caller
  loss,       // the training loss, a scalar
  activation, // transient: forward values, saved tensors, activation gradients
  // Optimizer state kept between training steps: momentum and Adam's moments (written only
  // by the update steps), and the step count the host writes before each update.
  optimizer_state,
  // Persistent values computed from parameters and state alone (batchnorm folded into a
  // conv's weights, weights in another layout), written only by the `prepare` phase: an
  // inference plan does that work once, not on every forward.
  derived,
};
std::string_view role_name(BufferRole r);
// Persistent buffers live for the whole plan; only activations come and go.
inline bool is_persistent(BufferRole r) { return r != BufferRole::activation; }

// How a 4-D buffer's logical [N, C, H, W] elements lie in memory (weights [O, I, KH, KW]
// likewise: nhwc stores them [O][KH][KW][I]).
enum class Layout { nchw, nhwc };
std::string_view layout_name(Layout l);

struct Buffer {
  std::string name;
  Shape shape; // logical (NCHW order whatever the layout)
  DType dtype = DType::f32;
  BufferRole role = BufferRole::activation;
  int64_t offset = 0; // in the arena (a view: its base's offset)
  int view_of = -1;   // base buffer of a view (a base is never a view itself)
  // A view's first element in its base (0: a reshape of the whole base). A channel window
  // of an N == 1 tensor is contiguous, so a concat's input or a channel slice can be a view
  // at an offset (generator/rewrite/channel_views.cpp). Plan::byte_offset resolves it.
  int64_t view_offset = 0;
  // A pitched view (> 0): a channel window that is not contiguous (a batch of images in
  // NCHW, or NHWC with H*W > 1), whose elements lie as rows of contiguous runs, one run per
  // image (NCHW: C*H*W elements) or per pixel (NHWC: C elements), run r at view_offset +
  // r * view_pitch elements. Only kernels compiled for that pitch touch one
  // (Variant::pitched); the reference and the backends' reads and writes follow the runs.
  int64_t view_pitch = 0;
  Layout layout = Layout::nchw;
  // f32 values rounded to tf32 (round_to_tf32) by the one step that writes them (a weight's
  // conversion or batchnorm folding in the prepare phase): tf32 tensor-core kernels read them
  // without rounding each operand again.
  bool tf32 = false;
  int64_t bytes() const { return numel(shape) * int64_t(dtype_size(dtype)); }
  // Its elements as runs of contiguous memory: one run of numel unless pitched.
  int64_t run_count() const;
  int64_t run_elements() const { return numel(shape) / run_count(); }
  int64_t run_stride() const { return view_pitch > 0 ? view_pitch : run_elements(); }
  // Bytes from its first element to one past its last (bytes() unless pitched).
  int64_t span_bytes() const {
    return ((run_count() - 1) * run_stride() + run_elements()) * int64_t(dtype_size(dtype));
  }
  // Memory index (elements from its first) of element i in memory order (its layout's).
  int64_t run_index(int64_t i) const {
    return view_pitch > 0 ? i / run_elements() * view_pitch + i % run_elements() : i;
  }
};

// A generated kernel: its image, entry symbol, launch geometry and the step argument each
// of its parameters binds (kiln::KernelArgs order).
struct Kernel {
  std::string name;
  std::string entry;
  std::string image; // relative to the plan's directory
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  // Thread-block cluster (sm_90): blocks per cluster along x, y, z; the grid a multiple of it.
  // The kernel declares it too (__cluster_dims__); the emulator reads it from here.
  std::array<int64_t, 3> cluster{1, 1, 1};
  int64_t dynamic_smem = 0;
  std::vector<std::string> args; // step argument roles, in parameter order
  bool clustered() const { return cluster[0] * cluster[1] * cluster[2] > 1; }
};

enum class StepKind { launch, library, reference, free };

std::string_view step_kind_name(StepKind k);

struct Arg {
  std::string role; // "x", "w", "dy", "x0", ...
  int buffer = -1;
};

struct Step {
  StepKind kind = StepKind::reference;
  Fn fn = Fn::copy;
  std::string node; // graph node, for messages and NVTX ranges
  OpKind op = OpKind::relu;
  Attrs attrs;
  std::vector<Arg> args;
  bool accumulate = false; // add into the outputs instead of overwriting them
  Epilogue epilogue;       // functions with a fused epilogue (FnDef::epilogue)
  SparseDispatch sparse;   // the guard (guardable functions) and the planned density
  FnParams params;         // the function's own parameters: the alternative its FnDef names
  int kernel = -1;         // launch: index into Plan::kernels
  std::string library;     // library: "cudnn"
  int buffer = -1;         // free: the buffer freed

  int arg(std::string_view role) const;         // buffer index, or -1
  int need(std::string_view role) const;        // buffer index; throws if absent
  std::vector<int> variadic(char prefix) const; // x0, x1, ... in order

  // The parameters, typed; throws kiln::Error when the step holds another alternative.
  const FoldBn& fold_bn() const;
  FoldBn& fold_bn();
  const Sgd& sgd() const;
  Sgd& sgd();
  const Adam& adam() const;
  Adam& adam();
  const Region& region() const;
  Region& region();
  const ChannelSlice& channel_slice() const;
  ChannelSlice& channel_slice();
  const FusedPool& fused_pool() const;
  FusedPool& fused_pool();
  const TensorMapEncode& tensor_map() const;
  TensorMapEncode& tensor_map();
  const FlipTaps& flip_taps() const;
  FlipTaps& flip_taps();
};

// The parameters a step of `f` starts with: the defaults of the alternative its function
// takes. Whoever sets a step's function sets its parameters (validation rejects another
// alternative).
FnParams default_params(Fn f);

struct ParamBinding {
  std::string name; // "<layer>.<suffix>", the safetensors name
  int buffer = -1;
  int grad = -1; // param_grad buffer, -1 when not trained
  // Seeded initialisation when no weights are given: uniform in [init_lo, init_hi].
  double init_lo = 0, init_hi = 0;
};

struct Phase {
  std::string name;
  std::vector<Step> steps;
};

struct Plan {
  std::string model;
  std::string gpu;  // descriptor identity, empty for reference plans
  std::string arch; // the kernels' architecture ("sm_90"), empty for reference plans
  std::string kiln_version;
  DType dtype = DType::f32;
  bool train = false;
  // A 1-D signal model: its first input [N, C, L, 1] is given as [N, C, L], and a 4-D output
  // [N, C, L, 1] is written as [N, C, L] (optional "signal" in the JSON, default false).
  bool signal = false;
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<ParamBinding> params;
  std::vector<int> inputs, outputs;
  int target = -1, loss = -1;
  std::vector<Phase> phases;
  int64_t arena_bytes = 0;

  int find_buffer(std::string_view name) const; // -1 if absent
  const Phase* phase(std::string_view name) const;
  int base(int buffer) const {
    return buffers[buffer].view_of >= 0 ? buffers[buffer].view_of : buffer;
  }
  // Where a buffer's first byte lies in the arena: its base's offset plus, for a view, its
  // view_offset elements. Every backend (cpu, emu, cuda, the standalone program) and the
  // tensor maps address buffers through this one function.
  int64_t byte_offset(int buffer) const {
    const Buffer& b = buffers[buffer];
    return buffers[base(buffer)].offset + b.view_offset * int64_t(dtype_size(b.dtype));
  }
};

// A shape as the plan's caller sees it: [N, C, L, 1] of a signal plan is [N, C, L]; any
// other shape, and every shape of another plan, is itself.
Shape caller_shape(const Plan& p, const Shape& s);
// The training target as the caller gives it: a signal plan's per-position [N, L, 1] is [N, L].
Shape caller_target_shape(const Plan& p);
// A target read from a file as the plan holds it (a signal plan's [N, L] is its [N, L, 1]);
// throws kiln::Error naming `file` when its shape is neither.
Tensor held_target(const Plan& p, Tensor t, const std::string& file);

// Loads and validates a plan: every reference in range, every step's arguments present
// with the shapes its function needs, buffers inside the arena. Throws kiln::Error.
Plan parse_plan(std::string_view text, const std::string& file);
Plan load_plan(const std::string& path);
nlohmann::ordered_json plan_to_json(const Plan& p);
void validate_plan(const Plan& p); // what parse_plan checks, for plans built in memory

} // namespace kiln
