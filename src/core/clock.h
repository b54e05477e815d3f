// Clock: the only way wattwatch code reads time. Production uses SystemClock; replay and tests use
// ManualClock so they run faster than real time.
// Thread-safety: SystemClock is stateless; ManualClock is safe for concurrent use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ww {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall time in milliseconds since the Unix epoch (for timestamps on samples and events).
  virtual int64_t NowUnixMs() = 0;
  // Monotonic time in nanoseconds (for intervals and deadlines).
  virtual int64_t NowMonotonicNs() = 0;
  // Sleeps until the monotonic time reaches deadline_ns (ManualClock advances instead).
  virtual void SleepUntilMonotonicNs(int64_t deadline_ns) = 0;
};

// The process-wide real clock. Never null; owned by the library.
Clock* SystemClock();

class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_unix_ms = 0) : unix_ms_(start_unix_ms) {}
  int64_t NowUnixMs() override { return unix_ms_.load(); }
  int64_t NowMonotonicNs() override { return mono_ns_.load(); }
  void SleepUntilMonotonicNs(int64_t deadline_ns) override {
    int64_t now = mono_ns_.load();
    if (deadline_ns > now) AdvanceNs(deadline_ns - now);
  }
  void AdvanceNs(int64_t ns) {
    mono_ns_ += ns;
    unix_ms_ += ns / 1000000;
  }

 private:
  std::atomic<int64_t> unix_ms_;
  std::atomic<int64_t> mono_ns_{0};
};

// The process's monotonic time in ms, for deadlines of one call (a socket read, a parse budget):
// a property of the call, not of job time, so it holds under ManualClock too.
inline int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace ww
