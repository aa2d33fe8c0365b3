#include "generator/tune/stop_signal.hpp"

#include <csignal>

namespace kiln {

namespace {

volatile std::sig_atomic_t received = 0;
struct sigaction previous_term, previous_int;

void note(int sig) { received = sig; }

} // namespace

StopSignal::StopSignal() {
  received = 0;
  struct sigaction sa {};
  sa.sa_handler = note;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_RESTART; // once; blocking calls carry on
  sigaction(SIGTERM, &sa, &previous_term);
  sigaction(SIGINT, &sa, &previous_int);
}

StopSignal::~StopSignal() {
  sigaction(SIGTERM, &previous_term, nullptr);
  sigaction(SIGINT, &previous_int, nullptr);
}

int StopSignal::stopped() { return received; }

} // namespace kiln
