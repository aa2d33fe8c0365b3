#include "generator/tune/sweep_report.hpp"

#include "generator/tune/svg_plot.hpp"

#include <cmath>
#include <fmt/format.h>
#include <map>

namespace kiln {

namespace {

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s)
    r += c == '<'   ? "&lt;"
         : c == '>' ? "&gt;"
         : c == '&' ? "&amp;"
         : c == '"' ? "&quot;"
                    : std::string(1, c);
  return r;
}

std::string ms(double v) { return fmt::format("{:.4g}", v); }

} // namespace

std::string sweep_report_html(const std::string& title, const std::string& device,
                              const std::vector<WorkItem>& items,
                              const std::vector<SweepRow>& rows) {
  std::map<std::string, std::vector<const SweepRow*>> by_key; // in the rows' order
  std::vector<std::string> order;
  for (const SweepRow& r : rows) {
    const std::string& k = items[r.item].key.id;
    if (!by_key.count(k)) order.push_back(k);
    by_key[k].push_back(&r);
  }
  std::string h = fmt::format("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{0}"
                              "</title><style>body{{font-family:sans-serif}} td,th{{padding:2px "
                              "8px;text-align:right}} td:first-child{{text-align:left}} "
                              ".winner{{font-weight:bold;background:#e6f4e6}}</style></head>"
                              "<body>\n<h1>{0}</h1>\n",
                              escape(title));
  if (device == "emu")
    h += "<p><b>Checked on the emulator: no timing is meaningful there, so none was taken.</b> "
         "The plots show the cost model's predictions and the roofline floor only.</p>\n";
  for (const std::string& k : order) {
    const auto& rs = by_key[k];
    const WorkItem& first = items[rs.front()->item];
    std::string layers;
    for (const std::string& l : first.layers)
      layers += (layers.empty() ? "" : ", ") + l;
    Series measured{"measured", {}}, predicted{"cost model", {}}, floor{"roofline floor", {}},
        cudnn{"cuDNN", {}}, best{"winner", {}};
    std::string winner = "none timed";
    std::string table = "<table><tr><th>#</th><th>variant</th><th>family</th><th>check</th>"
                        "<th>median ms</th><th>predicted ms</th><th>floor ms</th></tr>\n";
    for (size_t i = 0; i < rs.size(); ++i) {
      const SweepRow& r = *rs[i];
      const WorkItem& w = items[r.item];
      const double x = double(i + 1);
      const double t = r.timing ? r.timing->median_ms : NAN;
      measured.points.push_back({x, t});
      predicted.points.push_back({x, w.predicted.micros / 1000});
      floor.points.push_back({x, w.predicted.floor_micros / 1000});
      cudnn.points.push_back({x, r.cudnn_ms ? *r.cudnn_ms : NAN});
      if (r.winner) {
        winner = fmt::format("#{} {}", i + 1, w.variant.name);
        best.points.push_back({x, t});
      }
      table += fmt::format("<tr{}><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                           "<td>{}</td><td>{}</td></tr>\n",
                           r.winner ? " class=\"winner\"" : "", i + 1, r.winner ? " &#9733;" : "",
                           escape(w.variant.name), escape(w.variant.family),
                           r.check.pass ? "pass" : "FAIL " + escape(r.check.error),
                           r.timing ? ms(t) : "", ms(w.predicted.micros / 1000),
                           ms(w.predicted.floor_micros / 1000));
    }
    if (rs.front()->cudnn_ms)
      table += fmt::format("<tr><td>cuDNN</td><td>best of cudnnFind</td><td></td><td></td>"
                           "<td>{}</td><td></td><td></td></tr>\n",
                           ms(*rs.front()->cudnn_ms));
    else if (!rs.front()->cudnn_note.empty())
      table += fmt::format("<tr><td>cuDNN</td><td colspan=\"6\">not timed: {}</td></tr>\n",
                           escape(rs.front()->cudnn_note));
    std::vector<Series> series;
    if (device != "emu") series.push_back(measured);
    series.push_back(predicted);
    series.push_back(floor);
    if (rs.front()->cudnn_ms) series.push_back(cudnn);
    if (!best.points.empty()) series.push_back(best); // a lone dot on the winner
    h += fmt::format("<h2>{} {} ({})</h2>\n<p>{} &middot; {} &middot; winner: {}</p>\n",
                     escape(first.key.op), escape(first.key.shape), escape(layers), first.key.dtype,
                     first.key.layout, escape(winner));
    h += svg_line_plot(fmt::format("{}: time per variant", escape(first.key.op)), "variant #", "ms",
                       series);
    h += table + "</table>\n";
  }
  return h + "</body></html>\n";
}

} // namespace kiln
