// A plan step's function in one place: its name, argument signature, parameters, the
// step features it admits (a fused epilogue, a guard), its shape checks and its CPU
// reference. Each function's definition is in runtime/ops/<prefix>.cpp (conv2d.forward:
// conv2d.cpp) and listed in registry.cpp; the plan reader, plan_validate.cpp and the
// reference backend look it up.
#pragma once

#include "runtime/step_fn.hpp"
#include "runtime/step_params.hpp"

#include <cstddef>
#include <span>
#include <string_view>

namespace kiln {

struct StepCheck; // runtime/ops/step_check.hpp
namespace cpu {
template <class T> struct StepArgs; // runtime/cpu/step_args.hpp
}

// The dtype of an argument that is not a float. The compacted forms' roles (index, count:
// u8; nnz: i32) need no listing; u8: a tensor map's 128 bytes (tensor_map.encode).
enum class ArgType { any, i32, i64, u8 };
struct RoleType {
  std::string_view role;
  ArgType type;
};

struct FnDef {
  Fn fn;
  std::string_view name;
  FnSignature signature;
  size_t params = 0; // the FnParams alternative its steps hold (params_index<P>())
  // plan.json leaves the parameters out when they hold the defaults, and reads their absence
  // so (concat.forward at channel 0, as kiln-plan/1 always had it).
  bool params_optional = false;
  bool epilogue = false;    // has the fused epilogue (Step::epilogue)
  bool guardable = false;   // may be guarded by a nonzero count (Step::sparse)
  bool writes_part = false; // leaves part of its output as it was (staged in, not only out)
  std::span<const RoleType> types = {};
  // Shapes, parameters and whatever else the function needs of its step; throws through
  // StepCheck::fail.
  void (*check)(const StepCheck&) = nullptr;
  // The CPU reference, in float and in double.
  void (*cpu_f32)(const cpu::StepArgs<float>&) = nullptr;
  void (*cpu_f64)(const cpu::StepArgs<double>&) = nullptr;
  // A standalone activation (relu.forward, clip.forward): the activation, with the
  // parameters its step's attributes give, that a fused epilogue applies in its place
  // (generator/rewrite/fuse.cpp); null for every other function.
  Activation (*activation)(const Attrs&) = nullptr;
  // Image-separable functions: the roles indexed by image first, each image of an output
  // computed from the same image of the inputs alone, and the roles every image shares
  // (weights, tensor maps). A step whose roles all lie in one or the other may be checked on
  // a few images of a large batch (generator/check/image_sample.hpp); a step with any other
  // role (a compacted form, a count) is checked whole. Empty: not separable.
  std::span<const std::string_view> per_image = {};
  std::span<const std::string_view> shared = {};
};

} // namespace kiln
