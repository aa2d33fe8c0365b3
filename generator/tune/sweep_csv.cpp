#include "generator/tune/sweep_csv.hpp"

#include <fmt/format.h>

namespace kiln {

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s)
    q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string num(double v) { return fmt::format("{:.6g}", v); }

} // namespace

std::string sweep_csv(const std::string& descriptor, const std::string& device,
                      const std::vector<WorkItem>& items, const std::vector<SweepRow>& rows) {
  std::string out = std::string(kSweepCsvHeader) + "\n";
  for (const SweepRow& r : rows) {
    const WorkItem& w = items[r.item];
    std::string layers;
    for (const std::string& l : w.layers)
      layers += (layers.empty() ? "" : ";") + l;
    std::string median, runs, tflops, gbps, ratio;
    if (r.timing) {
      const double ms = r.timing->median_ms;
      median = num(ms);
      runs = std::to_string(r.timing->runs);
      tflops = num(w.variant.flops / (ms * 1e9));
      gbps = num(w.variant.bytes / (ms * 1e6));
      if (r.cudnn_ms) ratio = num(ms / *r.cudnn_ms);
    }
    const std::string check = r.check.pass ? "pass"
                              : r.check.error.empty()
                                  ? fmt::format("FAIL: error {:.3g} over the tolerance {:.0e}",
                                                r.check.rel, r.check.tolerance)
                                  : "FAIL: " + r.check.error;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                       field(descriptor), KILN_VERSION, device, field(layers), w.key.op,
                       field(w.key.shape), w.key.dtype, w.key.layout, w.variant.name,
                       w.variant.family, field(check), num(r.check.rel), median, runs, tflops, gbps,
                       r.cudnn_ms ? num(*r.cudnn_ms) : "", ratio, num(w.predicted.micros),
                       num(w.predicted.floor_micros), int(w.model_choice),
                       r.timing ? std::to_string(int(r.winner)) : "");
  }
  return out;
}

} // namespace kiln
