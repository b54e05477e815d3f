// Pacer: when the next batch of samples is due, for every loop that reads a TelemetrySource
// (watch, run, top, record), on a Clock so tests drive it with ManualClock.
//
// Two schedules:
//   Live   – a tick every interval on a fixed grid, the first one due at construction. A tick
//            that starts late by a whole interval or more does not make the loop burst to catch
//            up: the grid points it overran are skipped and counted as dropped ticks (a daemon
//            reports on itself), and the next tick is due at the first grid point still ahead.
//   Replay – a log's batches are due when their sample time has come at `speed` times real
//            time: a gap of G ms between two samples waits G / speed ms. The first batch anchors
//            sample time to the clock. speed 0 (or less) is as fast as possible: every batch is
//            due at once. A replay never drops batches: one that is late is delivered at once.
//
// The pacer only computes deadlines and lateness; the caller waits (in slices, to see its stop
// flag, or in poll() to read keys), e.g. with WaitUntil.
//
// Ownership: borrows the clock, which must outlive it. Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <functional>

#include "core/clock.h"

namespace ww {

struct TickStart {
  int64_t lateness_ns = 0;     // how far past its due time the tick started (>= 0)
  uint64_t dropped_ticks = 0;  // live: grid ticks skipped because this one started that late
};

class Pacer {
 public:
  // A tick every interval_ms (at least 1 ms) on a grid that starts now.
  static Pacer Live(Clock& clock, int64_t interval_ms);
  // Batches due by their sample time at `speed` times real time; speed <= 0: at once.
  static Pacer Replay(Clock& clock, double speed);

  bool live() const { return live_; }
  double speed() const { return speed_; }
  int64_t interval_ns() const { return interval_ns_; }

  // Live: when the next tick is due (sample_ms is ignored). Replay: when the batch stamped
  // sample_ms is due; the first call anchors sample time to the clock's now.
  int64_t DueNs(int64_t sample_ms = 0);

  // Call when the tick whose DueNs() was asked last starts, after waiting for it. Returns how
  // late it started; live, it also moves the grid on past now, skipping (and counting) every
  // grid point the tick overran.
  TickStart Begin();

  uint64_t ticks() const { return ticks_; }
  uint64_t dropped_ticks() const { return dropped_ticks_; }

 private:
  Pacer(Clock& clock, bool live, int64_t interval_ns, double speed);

  Clock* clock_;
  bool live_;
  int64_t interval_ns_;
  double speed_;
  int64_t due_ns_;  // live: the next grid point; replay: the due time of the last batch asked
  int64_t first_sample_ms_ = INT64_MIN;
  int64_t anchor_ns_ = 0;
  uint64_t ticks_ = 0;
  uint64_t dropped_ticks_ = 0;
};

// Sleeps on `clock` until deadline_ns in slices of at most slice_ns, asking should_stop() before
// each slice (and once at the start). Returns false when should_stop() said stop, true when the
// deadline was reached.
bool WaitUntil(Clock& clock, int64_t deadline_ns, int64_t slice_ns,
               const std::function<bool()>& should_stop);

}  // namespace ww
