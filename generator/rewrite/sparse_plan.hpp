// Planning the activation-sparse family (DESIGN.md 5.4) into a plan, before kernel choice.
//
// For each conv2d.forward whose input density is known (a profile, else the layer's
// hints.activation_density), the cost model prices the dense kernel the plan would use, the
// sparse convolution at that density and the compaction it needs (fused into the producer's
// kernel when the producer is a relu or an inference batchnorm, a separate kernel
// otherwise). Where the sparse side wins clearly the conv becomes a device-side dispatch:
//   fill_zero nnz; producer + compaction (or sparse.compact); conv2d.forward guarded dense,
//   conv2d.forward_sparse guarded sparse,
// both reading the nonzero count the compaction wrote: the dense kernel runs when nnz >
// threshold, the sparse one otherwise, where the threshold is the density at which the cost
// model's two times cross for this layer on this GPU. Nothing is copied to the host and a
// CUDA graph replays both launches unchanged; the kernel that loses returns at once.
// Forced layers (hints.variant "sparse", or --sparse force for every conv reading a relu's
// output) run sparse only; a layer's hints.sparse_threshold plans a dispatch at that
// threshold whatever the predicted win. In training steps the weight gradient of a sparse conv reads a
// compaction of its input the same way where the model says it pays.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model.hpp"
#include "generator/model/profile.hpp"
#include "runtime/plan.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln {

// auto: the cost model decides where densities are known; off: no sparse family at all
// (hints included); force: every conv reading a relu's output runs sparse.
enum class SparseMode { automatic, off, force };
std::optional<SparseMode> parse_sparse_mode(std::string_view s);

struct SparseOptions {
  SparseMode mode = SparseMode::automatic;
  std::map<std::string, double> density;      // by conv2d layer
  std::map<std::string, std::string> source;  // "profile" or "hint", by conv2d layer
  std::set<std::string> forced, kept_dense;   // hints.variant "sparse" / "dense"
  std::map<std::string, double> threshold;    // hints.sparse_threshold, by conv2d layer
};

// The options for a model: the profile's densities (when given) over the hints'.
SparseOptions sparse_options(const Model& m, SparseMode mode, const Profile* profile);

// What was decided for one conv step, for the manifest.
struct SparseDecision {
  std::string layer, fn;   // the conv2d layer; conv2d.forward or conv2d.backward_weight
  std::string phase;       // forward, backward
  double density = -1;     // planned for (-1: unknown)
  std::string source;      // profile, hint, none
  std::string path;        // dense, dispatch, sparse
  double threshold = -1;   // dispatch: the density at or below which the sparse kernel runs
  int64_t threshold_nnz = -1;
  double dense_us = -1, sparse_us = -1, compaction_us = -1; // at the planned density
  std::string compaction;  // how the input is compacted
  std::string reason;
};
nlohmann::ordered_json decision_json(const SparseDecision& d);

// Rewrites the steps of an unfinished plan (after fusion and layouts, before kernel choice).
std::vector<SparseDecision> plan_sparse(Plan& p, const Model& m, const GpuDesc& g,
                                        const SparseOptions& o);

// The slice size of a compacted input for a conv with `cg` input channels per group.
int64_t sparse_slice(int64_t cg);

} // namespace kiln
