#include "generator/emit/generate.hpp"

#include "generator/compile/cache.hpp"
#include "generator/emit/instance.hpp"
#include "generator/emit/tensor_maps.hpp"
#include "generator/lower/lower.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/rewrite/fuse.hpp"
#include "generator/rewrite/layouts.hpp"
#include "generator/rewrite/prepare_phase.hpp"
#include "generator/rewrite/tf32_operands.hpp"
#include "generator/rewrite/us_json.hpp"
#include "generator/schedule/scheduled_steps.hpp"
#include "generator/select/families/hopper/conv_wgmma.hpp"
#include "generator/select/family.hpp"
#include "generator/tune/tuned_selection.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <unistd.h>
#include <xxhash.h>

namespace kiln {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

ScheduleRequest schedule_request(const GenerateOptions& o) {
  return {.train = o.train,
          .schedule = o.schedule,
          .budget = o.budget,
          .tiles = o.tiles,
          .slots = o.slots};
}

Generated generate(const Model& m, const GpuDesc& g, const GenerateOptions& o) {
  if (m.dtype == DType::f64)
    throw Error(m.file, "/dtype", "f64 runs on the cpu backend only; kernels are f32, f16 or bf16");
  LowerOptions lo;
  lo.train = o.train;
  lo.lr = o.lr;
  lo.recipe = o.recipe;
  lo.gpu = g.identity();
  Generated gen;
  ScheduledSteps scheduled = schedule_steps(m, g, lo, schedule_request(o));
  Plan p = std::move(scheduled.steps);
  ojson schedule; // how the plan fits its budget, for the manifest
  if (const auto& c = scheduled.choice) {
    schedule = {{"strategy", c->strategy}};
    if (c->strategy == "tiled") {
      schedule["tiles"] = c->tiles;
      schedule["segment"] = c->segment;
      schedule["peak_bytes"] = c->peak_bytes;
      schedule["recompute_factor"] = c->recompute_factor;
      if (c->budget_bytes >= 0) schedule["budget_bytes"] = c->budget_bytes;
      if (o.train) schedule["rest"] = c->rest;
    } else {
      schedule["budget_bytes"] = c->budget_bytes;
    }
  }
  fuse_epilogues(p);
  const bool budgeted = !schedule.is_null() && (o.schedule != "store-all" || !o.budget.empty());
  if (o.layout) {
    gen.layout = *o.layout;
  } else if (p.train) {
    gen.training_layout = choose_training_layout(p, g, budgeted);
    gen.layout = gen.training_layout->layout;
  } else {
    gen.layout = choose_layout(p, g);
  }
  apply_layout(p, gen.layout);
  // The sparse family (DESIGN.md 5.4): not under a memory budget, which the schedule met
  // without the compacted forms; not in the cuDNN-only peer plan.
  std::string sparse_skipped;
  if (!schedule.is_null() && o.sparse != SparseMode::off)
    sparse_skipped = "the plan fits a memory budget that does not count compacted forms";
  else if (o.cudnn_only && o.sparse != SparseMode::off)
    sparse_skipped = "the cuDNN-only plan (--kernels cudnn)";
  else
    gen.sparse =
        plan_sparse(p, m, g, sparse_options(m, o.sparse, o.profile ? &*o.profile : nullptr));
  // Not in the cuDNN-only peer plan, whose gradients are cuDNN's own.
  if (!o.cudnn_only) gen.training = apply_training_rewrites(p, g, budgeted);
  // Not under a schedule either: a tiled segment's steps move windows of their own.
  if (!o.cudnn_only && schedule.is_null())
    gen.transposed_phases = plan_transposed_conv_phases(p, g);
  // Conv + max pool fusion, then split-K where a conv's or linear's output is too few tiles
  // to fill the GPU: not under a memory budget (the schedule planned the steps as they
  // were), not in the cuDNN-only plan.
  if (schedule.is_null() && !o.cudnn_only) {
    // Before the conv + pool fusion, which may then take the stride-1 conv.
    gen.space_to_depth = plan_space_to_depth_convs(p, g);
    gen.conv_pool = plan_conv_pool(p, g);
    gen.split_k = plan_split_k(p, g);
    gen.gates = plan_gates(p, g); // after split-K: a split conv reads its gate the same way
  }
  // Concat inputs and channel slices as views of one buffer where a channel window is
  // contiguous (batch 1), and concat inputs as pitched views where it is strided and some
  // kernel for their producer writes through the pitch (none in the cuDNN-only plan): not
  // under a memory budget (the views change the lifetimes the schedule planned).
  const ServesPitched serves_pitched = [&](const Plan& q, const Step& s) {
    const StepInfo info{q, s, g};
    return !o.cudnn_only &&
           std::any_of(all_families().begin(), all_families().end(),
                       [&](const Family* f) { return !step_candidates(*f, info).empty(); });
  };
  if (!budgeted) gen.channel_views = plan_channel_views(p, serves_pitched);
  // f32 weights and activations that only tf32 tensor-core convs read: rounded once, by their
  // writer (weights in the prepare phase).
  if (!o.cudnn_only) gen.tf32 = round_tf32_operands(p, g);
  std::optional<TunedSelection> tuned;
  if (std::optional<TuningDb> db = load_tuning_for(g, o.tuning_db))
    tuned.emplace(std::move(*db), gen.layout);
  gen.assigned = assign_kernels(p, g, o.all_variants, o.cudnn_only, tuned ? &*tuned : nullptr);
  hoist_parameter_work(p); // batchnorm folding and weight layouts: once, not every forward
  insert_tensor_maps(p, gen.assigned); // the Hopper kernels' TMA maps: written once, prepare
  p.arch = g.arch;
  gen.plan = finish_plan(std::move(p));

  InstanceOrigin origin;
  origin.model = m.name;
  origin.model_file = m.file;
  origin.gpu = g.name + " (" + g.arch + ")";
  ojson kernels = ojson::array();
  for (const KernelRecord& r : gen.assigned.kernels) {
    origin.nodes = r.nodes;
    origin.reason = r.reason;
    const std::string source = instance_source(r.variant, origin);
    const std::string path = "kernels/" + r.variant.name + ".cu";
    gen.files.push_back({path, source});
    ojson k;
    k["name"] = r.variant.name;
    k["entry"] = r.variant.name;
    k["family"] = r.variant.family;
    k["template"] = r.variant.header;
    k["source"] = path;
    k["source_hash"] = content_hash(source);
    k["params"] = instance_params(r.variant);
    k["grid"] = r.variant.grid;
    k["block"] = r.variant.block;
    if (r.variant.cluster != std::array<int64_t, 3>{1, 1, 1}) k["cluster"] = r.variant.cluster;
    k["dynamic_smem"] = r.variant.dynamic_smem;
    k["args"] = r.variant.args;
    k["math"] = math_name(r.variant.math);
    // A kernel of an architecture-specific feature set (sm_90a) names it.
    if (const std::string a = instance_arch(r.variant, g.arch); a != g.arch) k["arch"] = a;
    k["promises_no_spills"] = r.variant.promises_no_spills;
    k["nodes"] = r.nodes;
    k["chosen"] = r.chosen;
    if (r.chosen) k["selected_by"] = r.measured ? "measurement" : "model";
    k["reason"] = r.reason;
    k["estimate_us"] = std::round(r.cost.micros * 1000) / 1000;
    // Of its floor, the measured clocks in series with its loop (MainLoop::serial_clocks_per_mma).
    if (r.cost.serial_micros > 0) k["serial_us"] = std::round(r.cost.serial_micros * 1000) / 1000;
    // The cost model's ceilings (cost/main_loop.hpp): each limit as a fraction of the math
    // peak, and the one that binds.
    const Ceilings& cl = r.cost.ceilings;
    const auto frac = [](double f) { return std::round(f * 1000) / 1000; };
    k["flops"] = r.variant.flops; // per launch: what weighs its ceilings
    k["limiter"] = cl.limiter();
    // What the price assumed of residency: the register estimate and the blocks per SM
    // (the kernel's __launch_bounds__ minimum where above 1); `kiln compile` adds ptxas'.
    k["registers_assumed"] = r.variant.registers_per_thread;
    k["blocks_per_sm_assumed"] = r.cost.occ.blocks_per_sm;
    k["min_blocks_per_sm"] = r.variant.min_blocks_per_sm;
    k["ceilings"] = {{"math", frac(cl.math)},   {"dram", frac(cl.dram)},
                     {"l2", frac(cl.l2)},       {"smem", frac(cl.smem)},
                     {"issue", frac(cl.issue)}, {"latency", frac(cl.latency)}};
    kernels.push_back(k);
  }
  ojson lib = ojson::array();
  for (const LibraryRecord& l : gen.assigned.library_steps)
    lib.push_back({{"node", l.node}, {"library", "cudnn"}, {"reason", l.reason}});
  ojson& man = gen.manifest;
  man["format"] = kManifestFormat;
  man["kiln_version"] = KILN_VERSION;
  man["model"] = m.name;
  man["model_file"] = m.file;
  man["gpu"] = {{"name", g.name}, {"arch", g.arch}, {"identity", g.identity()}};
  man["dtype"] = dtype_name(m.dtype);
  man["input_shape"] = m.input_shape;
  man["train"] = o.train;
  if (o.train) man["recipe"] = o.recipe.key();
  if (!schedule.is_null()) man["schedule"] = schedule;
  man["layout"] = layout_name(gen.layout);
  if (const auto& c = gen.training_layout) {
    // A layout that leaves a step unserved counts its library steps as the most (null here).
    const auto steps = [](size_t n) {
      return n == std::numeric_limits<size_t>::max() ? ojson() : ojson(n);
    };
    man["training_layout"] = {{"nchw_us", us_json(c->nchw_us)},
                              {"nhwc_us", us_json(c->nhwc_us)},
                              {"nchw_library_steps", steps(c->nchw_library)},
                              {"nhwc_library_steps", steps(c->nhwc_library)}};
  }
  man["kernels"] = kernels;
  man["library_steps"] = lib;
  ojson sparse = ojson::array();
  for (const SparseDecision& d : gen.sparse)
    sparse.push_back(decision_json(d));
  man["sparse"] = {{"mode", o.sparse == SparseMode::off     ? "off"
                            : o.sparse == SparseMode::force ? "force"
                                                            : "auto"},
                   {"profile", o.profile ? o.profile->file : ""},
                   {"convs", sparse}};
  if (!sparse_skipped.empty()) man["sparse"]["skipped"] = sparse_skipped;
  ojson split = ojson::array();
  for (const SplitKDecision& d : gen.split_k)
    split.push_back(split_k_json(d));
  man["split_k"] = split;
  man["tf32_weights"] = gen.tf32.weights;
  man["tf32_activations"] = gen.tf32.activations;
  ojson pooled = ojson::array();
  for (const ConvPoolDecision& d : gen.conv_pool)
    pooled.push_back(fusion_json(d));
  man["conv_pool"] = pooled;
  ojson gated = ojson::array();
  for (const GateDecision& d : gen.gates)
    gated.push_back(fusion_json(d));
  man["gates"] = gated;
  if (o.train) {
    ojson chunked = ojson::array();
    for (const BatchnormChunksDecision& d : gen.training.batchnorm_chunks)
      chunked.push_back(batchnorm_chunks_json(d));
    man["batchnorm_chunks"] = chunked;
    man["batchnorm_activations"] = gen.training.batchnorm_activations;
    man["relu_backwards"] = gen.training.relu_backwards;
    ojson convs = ojson::array();
    for (const BackwardDataConvDecision& d : gen.training.backward_data_convs)
      convs.push_back(backward_data_conv_json(d));
    man["backward_data_convs"] = convs;
    ojson splits = ojson::array();
    for (const BackwardWeightSplitDecision& d : gen.training.backward_weight_splits)
      splits.push_back(backward_weight_split_json(d));
    man["backward_weight_splits"] = splits;
    ojson forwarded = ojson::array();
    for (const ForwardedCopy& c : gen.training.forwarded_copies)
      forwarded.push_back(forwarded_copy_json(c));
    man["forwarded_copies"] = forwarded;
  }
  if (!gen.transposed_phases.empty()) { // (a model with strided transposed convs)
    ojson phased = ojson::array();
    for (const BackwardDataConvDecision& d : gen.transposed_phases)
      phased.push_back(backward_data_conv_json(d));
    man["transposed_conv_phases"] = phased;
  }
  if (!gen.space_to_depth.empty()) { // (a model with a stem the rewrite serves)
    ojson s2d = ojson::array();
    for (const SpaceToDepthDecision& d : gen.space_to_depth)
      s2d.push_back(space_to_depth_json(d));
    man["space_to_depth_convs"] = s2d;
  }
  if (!gen.channel_views.decisions.empty()) // (a model with concats or channel slices)
    man["channel_views"] = channel_views_json(gen.channel_views);
  gen.files.push_back({"manifest.json", man.dump(2) + "\n"});
  gen.files.push_back({"plan.json", plan_to_json(gen.plan).dump(1) + "\n"});
  return gen;
}

bool write_generated(const Generated& gen, const std::string& dir, Existing existing) {
  static std::atomic<unsigned> counter{0};
  const fs::path target = fs::absolute(dir).lexically_normal();
  const std::string unique = std::to_string(getpid()) + "-" + std::to_string(counter++);
  const fs::path tmp = target.string() + ".kiln-tmp-" + unique;
  std::error_code ec;
  fs::remove_all(tmp, ec);
  const auto fail = [&](int err) {
    fs::remove_all(tmp, ec);
    return Error(dir, "", err == ENOTDIR ? "exists and is not a directory" : std::strerror(err));
  };
  try {
    for (const auto& [rel, content] : gen.files) {
      const fs::path p = tmp / rel;
      fs::create_directories(p.parent_path());
      io::write_file_atomic(p.string(), content);
    }
    fs::create_directories(target.parent_path());
  } catch (const fs::filesystem_error& e) {
    throw fail(e.code().value());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  // Another process may write the same directory at the same time (a content-addressed one
  // in a shared cache): every step below tolerates it, and one complete directory wins.
  for (int attempt = 0; attempt < 16; ++attempt) {
    if (::rename(tmp.c_str(), target.c_str()) == 0) return true; // none there, or empty
    if (errno != ENOTEMPTY && errno != EEXIST) throw fail(errno);
    if (existing == Existing::keep) {
      fs::remove_all(tmp, ec);
      return false;
    }
    // Swapped in one step where the file system can, so readers never find no directory.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
      fs::remove_all(tmp, ec); // the old directory, now
      return true;
    }
    if (errno == ENOENT) continue; // removed meanwhile: rename again
    if (errno != EINVAL && errno != ENOSYS) throw fail(errno);
    // No exchange here (NFS): the old directory aside first.
    const fs::path old = target.string() + ".kiln-old-" + unique;
    if (::rename(target.c_str(), old.c_str()) != 0 && errno != ENOENT) throw fail(errno);
    fs::remove_all(old, ec);
  }
  throw fail(EBUSY);
}

} // namespace kiln
