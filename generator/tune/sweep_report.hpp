// The report of a sweep (report.html): per layer shape, a plot of every variant's time —
// measured, the cost model's prediction, the roofline floor, cuDNN — with the winner
// marked, and a table of the same numbers.
#pragma once

#include "generator/tune/sweep.hpp"

#include <string>
#include <vector>

namespace kiln {

std::string sweep_report_html(const std::string& title, const std::string& device,
                              const std::vector<WorkItem>& items,
                              const std::vector<SweepRow>& rows);

} // namespace kiln
