// A small line plot written as SVG (no plotting package needed): the sweep report's time per
// variant and the budget/overhead curves of `kiln schedule --sweep`.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points; // (x, y); gaps where y is NaN
};

std::string svg_line_plot(const std::string& title, const std::string& x_label,
                          const std::string& y_label, const std::vector<Series>& series);

} // namespace kiln
