// The one progress line of kiln (compiling, checking, sweeping, running a plan, training):
// a line on stderr redrawn in place, at most ten times a second so that drawing never costs
// more than the work it reports, and silent unless stderr is a terminal (a log or a test
// reading stderr never sees it). Safe to draw from several threads. Cleared when done, so
// what is printed after it starts on a clean line.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace kiln {

class ProgressLine {
public:
  // Drawn only when `active` (by default: stderr is a terminal). Nothing is drawn before
  // `delay` has passed (a short task shows no line at all).
  explicit ProgressLine(bool active = stderr_is_terminal(),
                        std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Replaces the line with `text` unless it was drawn less than 100 ms ago. `text` is
  // built only when it will be drawn.
  template <class MakeText> void draw(MakeText&& make_text) {
    if (active_ && due()) put(make_text());
  }
  void draw(const std::string& text) {
    draw([&] { return text; });
  }
  // Erases the line (it may be drawn again after).
  void clear();
  bool active() const { return active_; }

  static bool stderr_is_terminal();
  // "[#########...............]": `done` of `total` over `width` characters.
  static std::string bar(size_t done, size_t total, int width = 24);

private:
  bool due();
  void put(const std::string& text);

  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_{};
  std::chrono::milliseconds delay_;
  std::mutex mutex_;
};

} // namespace kiln
