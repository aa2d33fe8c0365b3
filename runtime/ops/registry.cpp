#include "runtime/ops/registry.hpp"

#include <array>
#include <stdexcept>
#include <string>

// The files of runtime/ops/, one line each: adding an op (or a group of step functions) is
// its enum values (OpKind in runtime/op.hpp, Fn in runtime/step_fn.hpp), its file (listed
// in runtime/ops/meson.build), its CPU math in runtime/cpu/ and its line here.
#define KILN_OP_FILES(X)                                                                           \
  X(conv2d)                                                                                        \
  X(conv_transpose2d)                                                                              \
  X(linear)                                                                                        \
  X(bias)                                                                                          \
  X(batchnorm)                                                                                     \
  X(relu)                                                                                          \
  X(hardswish)                                                                                     \
  X(clip)                                                                                          \
  X(hardsigmoid)                                                                                   \
  X(sigmoid)                                                                                       \
  X(silu)                                                                                          \
  X(gelu)                                                                                          \
  X(gelu_tanh)                                                                                     \
  X(mul)                                                                                           \
  X(layernorm)                                                                                     \
  X(layernorm_invstd)                                                                              \
  X(channel_shuffle)                                                                               \
  X(channel_slice)                                                                                 \
  X(reduce)                                                                                        \
  X(maxpool2d)                                                                                     \
  X(avgpool2d)                                                                                     \
  X(adaptive_avgpool2d)                                                                            \
  X(add)                                                                                           \
  X(concat)                                                                                        \
  X(flatten)                                                                                       \
  X(resize)                                                                                        \
  X(pad)                                                                                           \
  X(space_to_depth)                                                                                \
  X(softmax)                                                                                       \
  X(fold)                                                                                          \
  X(softmax_xent)                                                                                  \
  X(mse)                                                                                           \
  X(sgd)                                                                                           \
  X(adam)                                                                                          \
  X(copy)                                                                                          \
  X(convert)                                                                                       \
  X(region)                                                                                        \
  X(fill_zero)                                                                                     \
  X(sparse)                                                                                        \
  X(partial)                                                                                       \
  X(tensor_map)

namespace kiln {

namespace ops {
#define KILN_DECLARE(name) OpFile name##_file();
KILN_OP_FILES(KILN_DECLARE)
#undef KILN_DECLARE
} // namespace ops

namespace {

#define KILN_ENTRY(name) ops::name##_file,
constexpr OpFile (*files[])() = {KILN_OP_FILES(KILN_ENTRY)};
#undef KILN_ENTRY

struct Tables {
  std::array<const OpDef*, std::size(all_ops)> ops{};
  std::array<const FnDef*, kFnCount> fns{};
};

// The first definition of each enum value (the registry's test rejects a second).
const Tables& tables() {
  static const Tables t = [] {
    Tables r;
    for (auto file : files) {
      const OpFile f = file();
      for (const OpDef& d : f.ops)
        if (size_t(d.kind) < r.ops.size() && !r.ops[size_t(d.kind)]) r.ops[size_t(d.kind)] = &d;
      for (const FnDef& d : f.fns)
        if (size_t(d.fn) < r.fns.size() && !r.fns[size_t(d.fn)]) r.fns[size_t(d.fn)] = &d;
    }
    return r;
  }();
  return t;
}

} // namespace

const OpDef& op_def(OpKind op) {
  const OpDef* d = size_t(op) < tables().ops.size() ? tables().ops[size_t(op)] : nullptr;
  if (!d) throw std::logic_error("runtime/ops: no definition of op #" + std::to_string(int(op)));
  return *d;
}

const FnDef& fn_def(Fn fn) {
  const FnDef* d = size_t(fn) < tables().fns.size() ? tables().fns[size_t(fn)] : nullptr;
  if (!d)
    throw std::logic_error("runtime/ops: no definition of function #" + std::to_string(int(fn)));
  return *d;
}

std::vector<const OpDef*> registered_ops() {
  std::vector<const OpDef*> r;
  for (auto file : files)
    for (const OpDef& d : file().ops)
      r.push_back(&d);
  return r;
}

std::vector<const FnDef*> registered_fns() {
  std::vector<const FnDef*> r;
  for (auto file : files)
    for (const FnDef& d : file().fns)
      r.push_back(&d);
  return r;
}

} // namespace kiln
