// kiln tune: the sweep of kiln bench, its measurements written into the tuning database of
// the GPU (which generate, build and run then use); kiln tune merge and kiln tune report.
#include "generator/cli/commands.hpp"
#include "generator/cli/sweep_args.hpp"
#include "generator/tune/calibration.hpp"
#include "generator/tune/database.hpp"
#include "generator/tune/merge.hpp"
#include "generator/tune/stop_signal.hpp"
#include "generator/tune/sweep_record.hpp"
#include "generator/tune/tuning_db_file.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <set>

namespace kiln::cli {

namespace {

struct TuneArgs {
  SweepArgs sweep;
  std::string db;
  bool remeasure = false, dry_run = false;
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

void print_winners(const TuningDb& db) {
  for (const auto& [key, m] : db.winners())
    fmt::print("  {} {} {}: {} {:.4g} ms{}\n", m->op, m->shape, m->dtype, m->variant, *m->median_ms,
               m->cudnn_ms ? fmt::format(" ({:.2f}x cuDNN's time)", *m->median_ms / *m->cudnn_ms)
                           : "");
}

// How the work divides, for sizing a job array: nothing is generated on disk or measured.
void print_dry_run(const PreparedSweep& p, const TuningDbFile& db) {
  std::set<std::string> shapes;
  for (const WorkItem& w : p.items)
    shapes.insert(w.key.id);
  const std::vector<size_t> mine = shard_items(p.items.size(), p.options.shard);
  const size_t measured = size_t(std::count_if(mine.begin(), mine.end(), [&](size_t i) {
    return p.options.skip && p.options.skip(p.items[i]);
  }));
  fmt::print("{} on {}: {} work items (layer shape, variant) over {} shapes; shard {}/{} holds {}, "
             "{} of them already in {}; {} to measure\n",
             p.model.name, p.gpu.name, p.items.size(), shapes.size(), p.options.shard.index,
             p.options.shard.count, mine.size(), measured, db.path(), mine.size() - measured);
}

void tune_cmd(const TuneArgs& a) {
  const SweepArgs& s = a.sweep;
  if (s.model.model.empty())
    throw Error("", "MODEL", "kiln tune needs a model or a layer spec (or merge, report)");
  if (s.device == "emu" && a.db.empty())
    throw Error("", "--db",
                "--device emu records the checked variants without timings: name the file "
                "(--db PATH); the GPU's default database holds timed measurements only");
  PreparedSweep p = prepare_sweep_command(s, "tune", !a.dry_run);
  TuningDbFile db(a.db.empty() ? default_tuning_db_path(p.gpu) : a.db, p.gpu, s.device);
  if (!db.replaced().empty())
    fmt::print(stderr, "kiln: warning: {}: not a valid tuning database, replaced: {}\n", db.path(),
               db.replaced());
  // A rerun of the same command carries on where a killed or stopped one left off.
  if (!a.remeasure)
    p.options.skip = [&db](const WorkItem& w) { return db.holds(w.key.id, w.variant.name); };
  if (a.dry_run) return print_dry_run(p, db);
  size_t added = 0;
  p.options.done = [&](const WorkItem& w, const SweepRow& row) {
    if (!row.check.pass) return; // failures are in sweep.csv, never in the database
    db.add(measurement_of(w, row));
    ++added;
  };
  const StopSignal signals;
  p.options.stop = [] { return StopSignal::stopped() != 0; };
  const SweepResult r = run_prepared_sweep(p);
  const size_t left = r.shard_items - r.skipped - r.rows.size();
  if (r.stopped)
    throw Stopped(StopSignal::stopped(),
                  fmt::format("{} after {} of {} items ({} measured before); {} checked variant{} "
                              "saved in {}; run the same command again to measure the other {}",
                              strsignal(StopSignal::stopped()), r.rows.size(),
                              r.shard_items - r.skipped, r.skipped, added, added == 1 ? "" : "s",
                              db.path(), left));
  if (!r.context_lost.empty())
    throw Error(cat(r.context_lost, "; ", added, " checked variant(s) saved in ", db.path()));
  fmt::print("{} checked variant{} recorded{}{} ({} measurements, {} measured winners, one per "
             "shape); wrote {}\n",
             added, added == 1 ? "" : "s", r.device == "emu" ? " without timings (emu)" : "",
             r.skipped ? fmt::format(", {} measured before and skipped", r.skipped) : "",
             db.db().measurements.size(), db.db().winners().size(), db.path());
  print_winners(db.db());
  print_fits(db.db());
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
      "Each measurement is saved as it completes; a rerun of the same command skips what the "
      "database holds, so a killed sweep loses at most one item. SIGTERM or Ctrl-C finishes "
      "the item under way, saves and exits 128+signal.\n"
      "Examples:\n"
      "  kiln tune resnet50 --dtype f16                 (default database in the cache)\n"
      "  kiln tune resnet50 --dtype f16 --shard 3/8 --db shard3.json\n"
      "  kiln tune resnet50 --dtype f16 --shard 3/8 --dry-run   (work items, to size an array)\n"
      "  kiln tune merge shard*.json -o resnet50-h100.json\n"
      "  kiln tune report resnet50-h100.json\n"
      "  kiln generate resnet50 --gpu auto --tuning-db resnet50-h100.json -o out");
  a->sweep.add_to(cmd, false);
  cmd->add_option("--db", a->db,
                  "the tuning database to add to (kiln-tuning/1); default: the GPU's in the "
                  "cache directory, <cache>/tuning/<identity>-kiln-<version>.json");
  cmd->add_flag("--remeasure", a->remeasure,
                "measure every work item again, also those the database holds (the faster "
                "median of the two is kept); by default they are skipped");
  cmd->add_flag("--dry-run", a->dry_run,
                "print how many work items the sweep (and this shard) has and how many the "
                "database already holds; generate and measure nothing");
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
