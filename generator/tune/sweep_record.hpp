// A sweep's row as a tuning database measurement (kiln tune records each as it completes).
#pragma once

#include "generator/tune/database.hpp"
#include "generator/tune/sweep.hpp"

namespace kiln {

// The measurement of a checked row (a failed check is never recorded).
Measurement measurement_of(const WorkItem& w, const SweepRow& row);

} // namespace kiln
