// A sweep that stops cleanly when asked: SIGTERM (what Slurm sends at a job's time limit or
// when it preempts it) or SIGINT (Ctrl-C), received while this object lives, is noted, and
// the sweep asks stopped() between items, so the item under way finishes and is saved. A
// second signal of the same kind kills the process as usual (the handler is reset after the
// first), which loses at most the item under way too.
#pragma once

namespace kiln {

class StopSignal {
public:
  StopSignal();  // installs the handlers
  ~StopSignal(); // restores the previous ones
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  // The signal received (SIGTERM or SIGINT), or 0.
  static int stopped();
};

} // namespace kiln
