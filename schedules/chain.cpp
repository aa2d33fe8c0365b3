#include "schedules/chain.hpp"

#include <cmath>
#include <stdexcept>

namespace kiln::sched {

namespace {

std::string where(const Chain& chain, int i) {
  std::string s = "chain stage " + std::to_string(i);
  if (!chain.stage(i).name.empty()) s += " '" + chain.stage(i).name + "'";
  return s;
}

void check_time(const Chain& chain, int i, const char* field, double v) {
  if (!std::isfinite(v) || v < 0)
    throw std::invalid_argument(where(chain, i) + ": " + field + " must be finite and >= 0, got " +
                                std::to_string(v));
}

void check_bytes(const std::string& place, const char* field, int64_t v) {
  if (v < 0 || v > kMaxTotalBytes)
    throw std::invalid_argument(place + ": " + field + " must be in [0, 2^60], got " +
                                std::to_string(v));
}

} // namespace

void Chain::validate() const {
  if (stages.empty()) throw std::invalid_argument("chain has no stages");
  if (stages.size() > 1000000) throw std::invalid_argument("chain has more than 10^6 stages");
  check_bytes("chain", "input_bytes", input_bytes);
  int64_t total = input_bytes; // all sizes together bound any memory a schedule reaches
  for (int i = 1; i <= length(); ++i) {
    const Stage& s = stage(i);
    const std::string place = where(*this, i);
    check_time(*this, i, "forward_time", s.forward_time);
    check_time(*this, i, "backward_time", s.backward_time);
    check_bytes(place, "output_bytes", s.output_bytes);
    check_bytes(place, "saved_bytes", s.saved_bytes);
    check_bytes(place, "forward_temp_bytes", s.forward_temp_bytes);
    check_bytes(place, "backward_temp_bytes", s.backward_temp_bytes);
    if (s.saved_bytes < s.output_bytes)
      throw std::invalid_argument(place + ": saved_bytes (" + std::to_string(s.saved_bytes) +
                                  ") < output_bytes (" + std::to_string(s.output_bytes) +
                                  "); the saved set contains the output");
    // Each term is <= 2^60 and total stays <= 2^60 before adding, so no overflow here.
    for (int64_t v : {s.output_bytes, s.saved_bytes, s.forward_temp_bytes, s.backward_temp_bytes}) {
      total += v;
      if (total > kMaxTotalBytes)
        throw std::invalid_argument(place + ": sizes of the chain sum to more than 2^60 bytes");
    }
  }
}

} // namespace kiln::sched
