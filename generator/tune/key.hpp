// The identity of a tunable step's shape: what a measurement applies to. Two steps with
// equal keys run the same kernels on the same data sizes, so one measurement serves both
// (a model's repeated blocks, and the same layer in another model).
#pragma once

#include "runtime/plan.hpp"

#include <string>

namespace kiln {

struct TuneKey {
  std::string id;     // canonical: op, arguments (role, dtype, logical shape), attributes,
                      // fused epilogue, activation layout
  std::string op;     // "conv2d.forward"
  std::string shape;  // "x=32x128x28x28 w=128x128x3x3 y=32x128x28x28"
  std::string dtype;  // of the output: "f16"
  std::string layout; // the plan's activation layout: "nhwc"
};

// The ops kiln bench and kiln tune sweep: conv2d, linear and pooling forward, and conv2d's
// weight gradient (in a training step's plan).
bool tunable(Fn fn);

// `layout` is the plan's activation layout (generate's choice), not a buffer's: a step's
// buffers change layout while kernels are assigned, and the key must not.
TuneKey tune_key(const Plan& p, const Step& s, Layout layout);

} // namespace kiln
