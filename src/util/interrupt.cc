#include "util/interrupt.h"

#include <atomic>
#include <csignal>

namespace kbv {
namespace {
std::atomic<bool> g_interrupted{false};  // the one piece of global state: a signal cannot carry context
extern "C" void on_signal(int) { g_interrupted.store(true); }
}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_interrupted.load(); }

}  // namespace kbv
