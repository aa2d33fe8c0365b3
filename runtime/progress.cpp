#include "runtime/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace kiln {

ProgressLine::ProgressLine(bool active, std::chrono::milliseconds delay)
    : active_(active), start_(std::chrono::steady_clock::now()), delay_(delay) {}

ProgressLine::~ProgressLine() { clear(); }

bool ProgressLine::stderr_is_terminal() { return isatty(2) == 1; }

std::string ProgressLine::bar(size_t done, size_t total, int width) {
  const size_t w = size_t(width);
  const size_t filled = total ? std::min(w, w * done / total) : w;
  return "[" + std::string(filled, '#') + std::string(w - filled, '.') + "]";
}

bool ProgressLine::due() {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < delay_) return false;
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return false;
  last_ = now;
  return true;
}

void ProgressLine::put(const std::string& text) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::fputs(("\r\033[K" + text).c_str(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::clear() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (drawn_) std::fputs("\r\033[K", stderr), std::fflush(stderr);
  drawn_ = false;
}

} // namespace kiln
