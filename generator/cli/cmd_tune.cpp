// kiln tune: the sweep of kiln bench, its measurements written into the tuning database of
// the GPU (which generate, build and run then use); kiln tune merge and kiln tune report.
#include "generator/cli/commands.hpp"
#include "generator/cli/sweep_args.hpp"
#include "generator/tune/calibration.hpp"
#include "generator/tune/database.hpp"
#include "generator/tune/merge.hpp"
#include "generator/tune/sweep_record.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>
#include <map>

namespace kiln::cli {

namespace {

struct TuneArgs {
  SweepArgs sweep;
  std::string db;
};

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string output;
};

void print_fits(const TuningDb& db) {
  const std::vector<FamilyFit> fits = fit_families(db);
  if (fits.empty()) {
    fmt::print("no timed measurements{}: nothing to compare the cost model with\n",
               db.device == "emu" ? " (checked on the emulator)" : "");
    return;
  }
  fmt::print("cost model against measurements on {} (error: max(measured/predicted, "
             "predicted/measured)):\n",
             db.gpu_identity);
  fmt::print("  {:<28} {:>7} {:>9} {:>13} {:>12} {:>13} {:>12}\n", "family", "samples", "factor",
             "before median", "before worst", "after median", "after worst");
  for (const FamilyFit& f : fits)
    fmt::print("  {:<28} {:>7} {:>9.3g} {:>13.3g} {:>12.3g} {:>13.3g} {:>12.3g}\n", f.family,
               f.samples, f.factor, f.before_median, f.before_worst, f.after_median, f.after_worst);
}

void tune_cmd(const TuneArgs& a) {
  const SweepArgs& s = a.sweep;
  if (s.model.model.empty())
    throw Error("", "MODEL", "kiln tune needs a model or a layer spec (or merge, report)");
  if (s.device == "emu" && a.db.empty())
    throw Error("", "--db",
                "--device emu records the checked variants without timings: name the file "
                "(--db PATH); the GPU's default database holds timed measurements only");
  SweepResult r = run_sweep_command(s, "tune");
  const std::string path = a.db.empty() ? default_tuning_db_path(r.gpu) : a.db;
  std::string replaced;
  TuningDb db = open_tuning_db(path, r.gpu, r.device, &replaced);
  if (!replaced.empty())
    fmt::print(stderr, "kiln: warning: {}: not a valid tuning database, replaced: {}\n", path,
               replaced);
  const size_t added = record_sweep(db, r);
  save_tuning_db(db, path);
  const auto winners = db.winners();
  fmt::print("{} checked variant{} recorded{} ({} measurements, {} measured winners, one per "
             "shape); wrote {}\n",
             added, added == 1 ? "" : "s", r.device == "emu" ? " without timings (emu)" : "",
             db.measurements.size(), winners.size(), path);
  for (const auto& [key, m] : winners)
    fmt::print("  {} {} {}: {} {:.4g} ms{}\n", m->op, m->shape, m->dtype, m->variant, *m->median_ms,
               m->cudnn_ms ? fmt::format(" ({:.2f}x cuDNN's time)", *m->median_ms / *m->cudnn_ms)
                           : "");
  print_fits(db);
  if (r.failed)
    throw CheckFailed(fmt::format("{} of {} variants differ from the reference (not recorded; "
                                  "see {}/sweep.csv)",
                                  r.failed, r.rows.size(), r.dir));
}

void merge_cmd(const MergeArgs& a) {
  std::vector<std::pair<std::string, TuningDb>> in;
  for (const std::string& p : a.inputs)
    in.emplace_back(p, load_tuning_db(p)); // a corrupt input is an error here: data would be lost
  const MergeResult r = merge_tuning_dbs(in);
  save_tuning_db(r.db, a.output);
  fmt::print("merged {} database{} of {}: {} measurements, {} measured winners (one per shape), {} "
             "conflict{} (the faster median kept); wrote {}\n",
             in.size(), in.size() == 1 ? "" : "s", r.db.identity_text(), r.db.measurements.size(),
             r.db.winners().size(), r.conflicts, r.conflicts == 1 ? "" : "s", a.output);
}

void report_cmd(const std::vector<std::string>& dbs) {
  for (const std::string& p : dbs) {
    const TuningDb db = load_tuning_db(p);
    fmt::print("{}: {} ({}), {} measurements, {} measured winners (one per shape)\n", p,
               db.gpu_name, db.identity_text(), db.measurements.size(), db.winners().size());
    print_fits(db);
  }
}

} // namespace

void add_tune(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "the sweep of kiln bench, its winners written into the GPU's tuning database: generate, "
      "build and run then choose a layer's measured winner where its shape (op, shapes, dtype, "
      "layout) was measured on this GPU, and elsewhere the cost model corrected per family by "
      "the measurements.\n"
      "Examples:\n"
      "  kiln tune resnet50 --dtype f16                 (default database in the cache)\n"
      "  kiln tune resnet50 --dtype f16 --shard 3/8 --db shard3.json\n"
      "  kiln tune merge shard*.json -o resnet50-h100.json\n"
      "  kiln tune report resnet50-h100.json\n"
      "  kiln generate resnet50 --gpu auto --tuning-db resnet50-h100.json -o out");
  a->sweep.add_to(cmd, false);
  cmd->add_option("--db", a->db,
                  "the tuning database to add to (kiln-tuning/1); default: the GPU's in the "
                  "cache directory, <cache>/tuning/<identity>-kiln-<version>.json");
  auto m = std::make_shared<MergeArgs>();
  CLI::App* merge = cmd->add_subcommand(
      "merge", "combine tuning databases of one GPU identity, kiln version and device (shards of "
               "one sweep, sweeps of several models); a variant measured twice keeps the faster "
               "median; anything else is refused");
  merge->add_option("DB", m->inputs, "databases to merge")->required();
  merge->add_option("-o,--output", m->output, "the merged database")->required();
  merge->callback([m] { merge_cmd(*m); });
  auto dbs = std::make_shared<std::vector<std::string>>();
  CLI::App* report = cmd->add_subcommand(
      "report", "per GPU and kernel family, how far the cost model's predictions were from the "
                "measured times (median and worst ratio), before and after its correction");
  report->add_option("DB", *dbs, "tuning databases")->required();
  report->callback([dbs] { report_cmd(*dbs); });
  cmd->callback([a, cmd] {
    if (cmd->get_subcommands().empty()) tune_cmd(*a);
  });
}

} // namespace kiln::cli
