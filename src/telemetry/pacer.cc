#include "telemetry/pacer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ww {

Pacer::Pacer(Clock& clock, bool live, int64_t interval_ns, double speed)
    : clock_(&clock),
      live_(live),
      interval_ns_(interval_ns),
      speed_(speed),
      due_ns_(clock.NowMonotonicNs()) {}

Pacer Pacer::Live(Clock& clock, int64_t interval_ms) {
  return Pacer(clock, true, std::max<int64_t>(1, interval_ms) * 1'000'000, 0);
}

Pacer Pacer::Replay(Clock& clock, double speed) {
  return Pacer(clock, false, 0, std::isfinite(speed) && speed > 0 ? speed : 0);
}

int64_t Pacer::DueNs(int64_t sample_ms) {
  if (live_) return due_ns_;
  const int64_t now_ns = clock_->NowMonotonicNs();
  if (first_sample_ms_ == INT64_MIN) {
    first_sample_ms_ = sample_ms;
    anchor_ns_ = now_ns;
  }
  if (speed_ <= 0) {
    due_ns_ = now_ns;  // as fast as possible: due the moment it is asked for, never late
    return due_ns_;
  }
  // In double: a day-long log at x100000 or a sample far before the anchor must not overflow.
  const double offset_ns = static_cast<double>(sample_ms - first_sample_ms_) * 1e6 / speed_;
  const double due = static_cast<double>(anchor_ns_) + offset_ns;
  // Half the int64 range, in double (4.6e18 ns, 146 years: far from any real offset).
  constexpr double kMax = static_cast<double>(std::numeric_limits<int64_t>::max()) / 2;
  due_ns_ = static_cast<int64_t>(std::clamp(due, -kMax, kMax));
  return due_ns_;
}

TickStart Pacer::Begin() {
  const int64_t now_ns = clock_->NowMonotonicNs();
  TickStart t;
  t.lateness_ns = std::max<int64_t>(0, now_ns - due_ns_);
  ++ticks_;
  if (live_) {
    // The grid points in (due, now] were overrun by this tick: run it once, skip them.
    t.dropped_ticks = static_cast<uint64_t>(t.lateness_ns / interval_ns_);
    due_ns_ += (static_cast<int64_t>(t.dropped_ticks) + 1) * interval_ns_;
    dropped_ticks_ += t.dropped_ticks;
  }
  return t;
}

bool WaitUntil(Clock& clock, int64_t deadline_ns, int64_t slice_ns,
               const std::function<bool()>& should_stop) {
  slice_ns = std::max<int64_t>(1, slice_ns);
  for (;;) {
    if (should_stop && should_stop()) return false;
    const int64_t now_ns = clock.NowMonotonicNs();
    if (now_ns >= deadline_ns) return true;
    clock.SleepUntilMonotonicNs(std::min(deadline_ns, now_ns + slice_ns));
  }
}

}  // namespace ww
