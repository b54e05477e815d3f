// State-change events for `--events`: which of the engine's state changes get written, and when.
// Pure decision logic (house rule 6), table-tested in tests/watch/state_events_test.cc.
//
// Compute and communication alternate within every training step, so writing each change would
// flood the log. A change is held back until the new state has lasted min_state_s (watch time);
// a GPU that returns to the state last written before then produces no event at all. A hang is
// written at once: that is the event an operator is waiting for. At the end of the watch every
// pending change is written, so the log ends in the state the watch ended in.
#pragma once

#include <cstdint>
#include <optional>

#include "core/state.h"

namespace ww::watch {

struct PendingStateChange {
  GpuState from;     // the state last written (or the engine's "from" when none was)
  GpuState to;       // the newest state the engine reported
  int64_t since_ms;  // when the engine entered `to`
};

// What the event log knows about one GPU between ticks.
struct StateDebounce {
  std::optional<GpuState> reported;  // the state last written, or the first state seen
  std::optional<PendingStateChange> pending;
};

struct StateChangeEvent {
  GpuState from;
  GpuState to;
  int64_t since_ms;
};

struct StateFlush {
  StateDebounce next;
  std::optional<StateChangeEvent> event;  // to write now
};

// The engine moved the GPU from `from` to `to` at at_ms.
StateDebounce NoteStateChange(const StateDebounce& d, GpuState from, GpuState to, int64_t at_ms);

// The engine's current state of a GPU: the first one becomes the baseline (no event for it).
StateDebounce NoteCurrentState(const StateDebounce& d, GpuState current);

// At now_ms: whether the pending change is written (it lasted min_state_s, it is a hang, or
// flush_all at the end of the watch).
StateFlush FlushStateChange(const StateDebounce& d, int64_t now_ms, double min_state_s,
                            bool flush_all);

}  // namespace ww::watch
