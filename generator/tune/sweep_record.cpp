#include "generator/tune/sweep_record.hpp"

#include "runtime/error.hpp"

#include <cmath>
#include <filesystem>
#include <optional>

namespace kiln {

TuningDb open_tuning_db(const std::string& path, const GpuDesc& g, const std::string& device,
                        std::string* replaced) {
  TuningDb db = empty_tuning_db(g, device);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return db;
  std::optional<TuningDb> old;
  try {
    old = load_tuning_db(path);
  } catch (const Error& e) {
    if (replaced) *replaced = e.what();
  }
  if (old && old->identity_text() != db.identity_text())
    throw Error(path, "",
                cat("holds measurements of ", old->identity_text(), ", not ", db.identity_text(),
                    ": name another file with --db"));
  return old ? std::move(*old) : db;
}

size_t record_sweep(TuningDb& db, const SweepResult& r) {
  size_t added = 0;
  for (const SweepRow& row : r.rows) {
    if (!row.check.pass) continue;
    const WorkItem& w = r.items[row.item];
    Measurement m;
    m.key = w.key.id;
    m.op = w.key.op;
    m.shape = w.key.shape;
    m.dtype = w.key.dtype;
    m.layout = w.key.layout;
    m.layers = w.layers;
    m.variant = w.variant.name;
    m.family = w.variant.family;
    if (row.timing) m.median_ms = row.timing->median_ms, m.runs = row.timing->runs;
    m.predicted_us = std::isfinite(w.predicted.micros) ? w.predicted.micros : 0;
    m.cudnn_ms = row.cudnn_ms;
    db.add(std::move(m));
    ++added;
  }
  return added;
}

} // namespace kiln
