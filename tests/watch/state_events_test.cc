// Which state changes reach `--events`, as a table: engine changes in, events out.
#include "watch/state_events.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace ww::watch {
namespace {

using S = GpuState;

struct Change {
  S from, to;
  double at_s;
};
struct Want {
  S from, to;
  double since_s;
};

struct Row {
  const char* name;
  std::optional<S> reported;  // before the changes (nullopt: nothing written or seen yet)
  std::vector<Change> changes;
  double flush_at_s;
  bool flush_all;
  std::optional<Want> want;     // the event written at flush_at_s
  std::optional<S> want_after;  // the reported state afterwards
  bool want_pending;            // a change still waits afterwards
};

int64_t Ms(double s) { return static_cast<int64_t>(s * 1000); }

TEST(StateEvents, Table) {
  constexpr double kMinS = 5;
  const std::vector<Row> rows = {
      {"nothing changed: nothing written", S::kCompute, {}, 100, false, {}, S::kCompute, false},
      {"a state that lasted min_state_s is written",
       S::kCompute,
       {{S::kCompute, S::kCheckpoint, 10}},
       15,
       false,
       Want{S::kCompute, S::kCheckpoint, 10},
       S::kCheckpoint,
       false},
      {"one millisecond short: held back",
       S::kCompute,
       {{S::kCompute, S::kCheckpoint, 10}},
       14.999,
       false,
       {},
       S::kCompute,
       true},
      {"compute/communication flicker within a step: nothing",
       S::kCompute,
       {{S::kCompute, S::kCommunication, 10}, {S::kCommunication, S::kCompute, 10.4}},
       60,
       false,
       {},
       S::kCompute,
       false},
      {"a hang is written at once",
       S::kCommunication,
       {{S::kCommunication, S::kHang, 30}},
       30,
       false,
       Want{S::kCommunication, S::kHang, 30},
       S::kHang,
       false},
      {"several changes: one event, from the state last written to the newest",
       S::kCompute,
       {{S::kCompute, S::kCommunication, 10}, {S::kCommunication, S::kDataStarved, 11}},
       16,
       false,
       Want{S::kCompute, S::kDataStarved, 11},
       S::kDataStarved,
       false},
      {"the newest change restarts the wait",
       S::kCompute,
       {{S::kCompute, S::kCommunication, 10}, {S::kCommunication, S::kDataStarved, 14}},
       16,
       false,
       {},
       S::kCompute,
       true},
      {"end of the watch writes a short state too",
       S::kCompute,
       {{S::kCompute, S::kIdle, 10}},
       11,
       true,
       Want{S::kCompute, S::kIdle, 10},
       S::kIdle,
       false},
      {"end of the watch with nothing pending: nothing",
       S::kIdle,
       {},
       11,
       true,
       {},
       S::kIdle,
       false},
      {"nothing written yet: the engine's from is the from",
       std::nullopt,
       {{S::kIdle, S::kCompute, 0}},
       5,
       false,
       Want{S::kIdle, S::kCompute, 0},
       S::kCompute,
       false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    StateDebounce d;
    d.reported = row.reported;
    for (const Change& c : row.changes) d = NoteStateChange(d, c.from, c.to, Ms(c.at_s));
    const StateFlush f = FlushStateChange(d, Ms(row.flush_at_s), kMinS, row.flush_all);
    ASSERT_EQ(f.event.has_value(), row.want.has_value());
    if (row.want) {
      EXPECT_EQ(StateName(f.event->from), StateName(row.want->from));
      EXPECT_EQ(StateName(f.event->to), StateName(row.want->to));
      EXPECT_EQ(f.event->since_ms, Ms(row.want->since_s));
    }
    EXPECT_EQ(f.next.reported, row.want_after);
    EXPECT_EQ(f.next.pending.has_value(), row.want_pending);
  }
}

TEST(StateEvents, FirstStateSeenIsTheBaselineNotAnEvent) {
  StateDebounce d = NoteCurrentState({}, S::kCompute);
  EXPECT_EQ(d.reported, S::kCompute);
  d = NoteCurrentState(d, S::kCommunication);  // later states come as changes, not as baselines
  EXPECT_EQ(d.reported, S::kCompute);
  EXPECT_FALSE(FlushStateChange(d, 1'000'000, 5, true).event.has_value());
}

TEST(StateEvents, WrittenChangeBecomesTheNewBaseline) {
  StateDebounce d = NoteCurrentState({}, S::kCompute);
  d = NoteStateChange(d, S::kCompute, S::kCheckpoint, 0);
  d = FlushStateChange(d, 5000, 5, false).next;
  // Back to compute for good: that is news again.
  d = NoteStateChange(d, S::kCheckpoint, S::kCompute, 6000);
  const StateFlush f = FlushStateChange(d, 11000, 5, false);
  ASSERT_TRUE(f.event.has_value());
  EXPECT_EQ(f.event->from, S::kCheckpoint);
  EXPECT_EQ(f.event->to, S::kCompute);
}

}  // namespace
}  // namespace ww::watch
