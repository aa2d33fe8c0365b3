#include "generator/tune/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kiln {

std::string svg_line_plot(const std::string& title, const std::string& x_label,
                          const std::string& y_label, const std::vector<Series>& series) {
  const double W = 720, H = 440, left = 70, right = 160, top = 40, bottom = 50;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series)
    for (auto [x, y] : s.points)
      if (std::isfinite(y))
        x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  y0 = std::min(y0, 1.0);
  if (y1 <= y0) y1 = y0 + 1;
  y1 += (y1 - y0) * 0.05;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (W - left - right); };
  auto py = [&](double y) { return H - bottom - (y - y0) / (y1 - y0) * (H - top - bottom); };
  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  std::string s =
      fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                  "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" "
                  "height=\"100%\" fill=\"white\"/>\n",
                  W, H);
  s += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n", left, title);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", left,
                   H - bottom, W - right);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left,
                   H - bottom, top);
  for (int i = 0; i <= 5; ++i) {
    const double xv = x0 + (x1 - x0) * i / 5, yv = y0 + (y1 - y0) * i / 5;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.3g}</text>\n", px(xv),
                     H - bottom + 16, xv);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.3g}</text>\n", left - 6,
                     py(yv) + 4, yv);
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#eee\"/>\n", left,
                     py(yv), W - right);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   (left + W - right) / 2, H - 12, x_label);
  s += fmt::format(
      "<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      (top + H - bottom) / 2, y_label);
  for (size_t k = 0; k < series.size(); ++k) {
    const char* c = colours[k % 6];
    std::string path;
    bool pen = false;
    for (auto [x, y] : series[k].points) {
      if (!std::isfinite(y)) {
        pen = false;
        continue;
      }
      path += fmt::format("{}{:.1f},{:.1f} ", pen ? "L" : "M", px(x), py(y));
      pen = true;
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", px(x),
                       py(y), c);
    }
    s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, c);
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{}\"/><text "
                     "x=\"{}\" y=\"{}\">{}</text>\n",
                     W - right + 12, top + 12 + 20 * double(k), c, W - right + 32,
                     top + 17 + 20 * double(k), series[k].name);
  }
  return s + "</svg>\n";
}

} // namespace kiln
