#include "generator/tune/sweep_record.hpp"

#include <cmath>

namespace kiln {

Measurement measurement_of(const WorkItem& w, const SweepRow& row) {
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
  return m;
}

} // namespace kiln
