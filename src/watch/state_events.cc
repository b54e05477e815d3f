#include "watch/state_events.h"

namespace ww::watch {

StateDebounce NoteStateChange(const StateDebounce& d, GpuState from, GpuState to, int64_t at_ms) {
  StateDebounce next = d;
  if (d.reported && *d.reported == to) {
    next.pending.reset();  // back to what was written: nothing to tell
    return next;
  }
  if (next.pending) {
    next.pending->to = to;
    next.pending->since_ms = at_ms;
  } else {
    next.pending = PendingStateChange{d.reported.value_or(from), to, at_ms};
  }
  return next;
}

StateDebounce NoteCurrentState(const StateDebounce& d, GpuState current) {
  StateDebounce next = d;
  if (!next.reported) next.reported = current;
  return next;
}

StateFlush FlushStateChange(const StateDebounce& d, int64_t now_ms, double min_state_s,
                            bool flush_all) {
  StateFlush f{d, std::nullopt};
  if (!d.pending) return f;
  const auto min_ms = static_cast<int64_t>(min_state_s * 1000);
  const PendingStateChange& c = *d.pending;
  if (flush_all || c.to == GpuState::kHang || now_ms - c.since_ms >= min_ms) {
    f.event = StateChangeEvent{c.from, c.to, c.since_ms};
    f.next.reported = c.to;
    f.next.pending.reset();
  }
  return f;
}

}  // namespace ww::watch
