// StopSignals: the one way a command turns SIGINT, SIGTERM and SIGHUP into a value its main loop
// reads, instead of dying mid-write. The handler only stores the signal number (async-signal-safe);
// the loop exchanges it for 0 when it looks.
//
// Ownership: one StopSignals at a time per process (the handler's slot is process-wide); the
// dispositions it replaced come back when it is destroyed. Thread-safety: construct and destroy on
// the main thread; pending() may be read from any thread.
#pragma once

#include <signal.h>

#include <atomic>
#include <initializer_list>
#include <vector>

namespace ww {

class StopSignals {
 public:
  // Catches `signals` (default SIGINT, SIGTERM, SIGHUP). With ignore_sigpipe, a write to a closed
  // socket or pipe returns EPIPE rather than killing the process (a server, a webhook client).
  explicit StopSignals(std::initializer_list<int> signals = {SIGINT, SIGTERM, SIGHUP},
                       bool ignore_sigpipe = false);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The last signal caught and not yet taken; 0 when none. Take it with pending()->exchange(0).
  std::atomic<int>* pending();

 private:
  struct Saved {
    int sig;
    struct sigaction old;
  };
  std::vector<Saved> saved_;
};

}  // namespace ww
