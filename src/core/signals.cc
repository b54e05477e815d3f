#include "core/signals.h"

#include <cassert>

namespace ww {
namespace {

std::atomic<int> g_pending_signal{0};
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "the handler must not take a lock");

// Internal linkage (no extern "C"): a C-linkage name in an anonymous namespace is still global.
void OnStopSignal(int sig) { g_pending_signal.store(sig); }

}  // namespace

StopSignals::StopSignals(std::initializer_list<int> signals, bool ignore_sigpipe) {
  [[maybe_unused]] const bool was_installed = g_installed.exchange(true);
  assert(!was_installed && "one StopSignals at a time");
  g_pending_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : signals) {
    Saved s{sig, {}};
    sigaction(sig, &sa, &s.old);
    saved_.push_back(s);
  }
  if (ignore_sigpipe) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    Saved s{SIGPIPE, {}};
    sigaction(SIGPIPE, &ign, &s.old);
    saved_.push_back(s);
  }
}

StopSignals::~StopSignals() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) sigaction(it->sig, &it->old, nullptr);
  g_installed.store(false);
}

std::atomic<int>* StopSignals::pending() { return &g_pending_signal; }

}  // namespace ww
