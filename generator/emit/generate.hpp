// kiln generate: a model and a GPU descriptor to a directory of kernel sources, a
// manifest and a plan (DESIGN.md 4.4, 4.5). The same inputs give the same bytes.
#pragma once

#include "generator/emit/assign_kernels.hpp"
#include "generator/emit/training_layout.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/lower/lower.hpp"
#include "generator/model/model.hpp"
#include "generator/rewrite/channel_views.hpp"
#include "generator/rewrite/conv_pool.hpp"
#include "generator/rewrite/gates.hpp"
#include "generator/rewrite/space_to_depth_conv.hpp"
#include "generator/rewrite/sparse_plan.hpp"
#include "generator/rewrite/split_k.hpp"
#include "generator/rewrite/tf32_operands.hpp"
#include "generator/schedule/scheduled_steps.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

inline constexpr std::string_view kManifestFormat = "kiln-manifest/1";

struct GenerateOptions {
  bool train = false;
  bool all_variants = false;
  double lr = 0.01;
  TrainRecipe recipe;           // training: the loss and the optimizer of the update phase
  std::optional<Layout> layout; // default: choose_layout
  // Training under a recompute schedule (strategy name and budget as `kiln schedule` takes
  // them); empty: store-all. "tiled" (segmented fused tiling) also applies to inference;
  // `tiles` ("4x4") forces its tiling.
  std::string schedule, budget, tiles;
  int slots = 500;
  // Every step cuDNN computes as a cuDNN call: the peer plan benchmarks compare against.
  bool cudnn_only = false;
  // The activation-sparse family: where it is planned, from which densities.
  SparseMode sparse = SparseMode::automatic;
  std::optional<Profile> profile;
  // Measured winners (kiln tune): a database path, "none", or "" for the GPU's default
  // database where one exists (generator/tune/database.hpp).
  std::string tuning_db;
};

struct Generated {
  Plan plan;
  Assigned assigned;
  std::vector<SparseDecision> sparse;      // one per conv step the sparse family considered
  std::vector<ConvPoolDecision> conv_pool; // the convs fused with the max pool after them
  std::vector<SplitKDecision> split_k;     // the steps split over ranges of their reduction
  std::vector<GateDecision> gates;         // the squeeze-excite gates fused into their convs
  Tf32Operands tf32; // weights rounded to tf32 once (prepare), activations by their producer
  ChannelViews channel_views; // concat inputs and channel slices made views (no copy)
  TrainingRewrites training;  // batchnorms over chunks, data gradients as forward convs
  // Strided transposed convs as a conv per phase (rewrite/backward_data_phases.hpp).
  std::vector<BackwardDataConvDecision> transposed_phases;
  // Strided convs over few channels (stems) as a stride-1 conv over space_to_depth(x).
  std::vector<SpaceToDepthDecision> space_to_depth;
  Layout layout = Layout::nchw;
  std::optional<TrainingLayoutChoice> training_layout; // a training plan's, when not asked for
  nlohmann::ordered_json manifest;
  std::vector<std::pair<std::string, std::string>> files; // relative path -> content
};

// The options' schedule (schedule, budget, tiles, slots) for schedule_steps.
ScheduleRequest schedule_request(const GenerateOptions& o);

Generated generate(const Model& m, const GpuDesc& g, const GenerateOptions& o);

// Writes the files into `dir`, replacing what was there only once everything is written.
// With `keep`, a directory already there stays (a content-addressed one, which another
// process may have written at the same time) and the files are dropped. Returns whether
// these files are now at `dir`.
enum class Existing { replace, keep };
bool write_generated(const Generated& gen, const std::string& dir,
                     Existing existing = Existing::replace);

} // namespace kiln
