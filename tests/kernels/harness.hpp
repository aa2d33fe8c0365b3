// Test harness for kernel template families: one-step plans from a compact description,
// every valid variant of every family for them on shipped GPUs, NVRTC compilation for
// each GPU's architecture, and numeric checks on the emulator against the f64 reference.
#pragma once

#include "generator/check/kernel_check.hpp"
#include "generator/select/variant.hpp"
#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <map>
#include <string>
#include <vector>

namespace kiln::test {

struct ArgSpec {
  std::string role;
  Shape shape;
  DType dtype = DType::f32;
  Layout layout = Layout::nchw;
};

struct StepSpec {
  std::string label;
  Fn fn = Fn::copy;
  OpKind op = OpKind::relu;
  Attrs attrs = {};
  std::vector<ArgSpec> args = {};
  bool accumulate = false;
  Epilogue epilogue = {};
  SparseDispatch sparse = {}; // density: what a sparse step is planned (and costed) for
  FnParams params = {};       // none: the function's defaults
};

// A plan with one reference step over fresh buffers (validated).
Plan spec_plan(const StepSpec& s);

struct Built {
  StepSpec spec;
  std::string gpu; // shipped descriptor name
  Variant variant;
};

// Every valid variant of every family for each spec on each shipped GPU; specs no family
// serves on some GPU are listed in `unserved` ("label on gpu").
std::vector<Built> all_variants(const std::vector<StepSpec>& specs,
                                const std::vector<std::string>& gpus,
                                std::vector<std::string>* unserved = nullptr);

// The templates branch on the architecture only at sm_80 (device_cuda.cuh: cp.async, bf16,
// ldmatrix) and sm_90a (the Hopper family's own instances): a kernel whose source for an A100
// (sm_80) and for an H200 (sm_90) is the same but for its name's arch suffix and its comments
// (launch bounds included: the two GPUs' occupancy often differs) is one compile, for the
// newer. The key: the architecture's class, then that source.
std::string compile_class(const std::string& kernel, const std::string& source,
                          const std::string& arch);
int arch_number(const std::string& arch); // "sm_86": 86

// Compiles every distinct variant (compile_class) with NVRTC for its GPU's architecture; one
// message per failure, and per variant that promises no spills and spills.
std::vector<std::string> nvrtc_failures(const std::vector<Built>& built, int jobs = 2);

// Host-compiles every distinct variant into one emulated library under `dir`, then runs
// each built case on the emulator (all checks on) against the reference, every image
// compared (no sampling of a large batch); sparse steps read inputs of `density` nonzeros
// (default: the spec's planned density, else one half).
std::vector<KernelCheck> emu_checks(const std::vector<Built>& built, const std::string& dir,
                                    uint64_t seed = 1, double density = -1);

// The two halves of emu_checks: the library, as a backend factory, and one case on it.
BackendFactory emu_library(const std::vector<Built>& built, const std::string& dir);
KernelCheck emu_check(const Built& b, const BackendFactory& emu, uint64_t seed = 1,
                      double density = -1);

// One run of b's kernel on the emulated library at `lib` (emu_library_path of an
// emu_library's dir; every emulator check on, `workers` workers running its blocks): the
// inputs given by role, as the device holds them (memory order); returns output `out` the
// same way. For bit-for-bit comparisons of two kernels, or of one in other block orders, on
// the same data.
Tensor emu_run(const Built& b, const std::string& lib, const std::map<std::string, Tensor>& in,
               const std::string& out, unsigned workers = 2);
// Seeded random inputs of b's step by role, uniform in [-0.5, 0.5), in memory order.
std::map<std::string, Tensor> random_inputs(const Built& b, uint64_t seed);
// A tensor's bytes, for comparing runs bit for bit.
std::vector<unsigned char> bytes_of(const Tensor& t);

// A fresh temporary directory, removed at exit.
std::string temp_dir(const std::string& prefix);

} // namespace kiln::test
