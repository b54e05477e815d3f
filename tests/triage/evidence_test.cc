// Table tests of DescribeEvidence (src/triage/evidence.h): which signals count for a GPU and
// which states they cannot tell apart. Each row is a log people have.
#include "triage/evidence.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ww::triage {
namespace {

SignalCounts EvCounts(int64_t power, int64_t util, int64_t memory, int64_t activity = 0) {
  SignalCounts c;
  c.power = power;
  c.utilization = util;
  c.memory = memory;
  c.activity = activity;
  return c;
}

SignalCounts Unplaced(int64_t power_unplaced, int64_t util, int64_t memory) {
  SignalCounts c = EvCounts(0, util, memory);
  c.power_unplaced = power_unplaced;
  return c;
}

bool EvHas(const GpuEvidence& e, GpuState s) { return e.Undetermined(s); }

TEST(EvidenceTable, UnplacedPowerAsksForTheLimit) {
  const GpuEvidence e = DescribeEvidence(Unplaced(100, 100, 100), 100, TriageOptions{});
  EXPECT_EQ(e.missing, std::vector<std::string>{"power.limit"});
  ASSERT_FALSE(e.cannot_tell_apart.empty());
  EXPECT_NE(e.cannot_tell_apart[0].why.find("no power.limit or GPU name"), std::string::npos)
      << e.cannot_tell_apart[0].why;
  const auto lines = HostEvidenceLines({{0, 0}}, {e}, {"node0"});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("power.draw not placed in the board's range"), std::string::npos)
      << lines[0];
}

TEST(EvidenceTable, WhatEachLogCanShow) {
  const TriageOptions o;
  struct Row {
    const char* log;
    SignalCounts counts;
    std::vector<std::string> signals;
    bool hang_visible;     // no set that hides a hang
    bool compute_certain;  // compute is not a guess
  };
  const std::vector<Row> rows = {
      {"the full query", EvCounts(100, 100, 100), {"power", "utilization", "memory"}, true, true},
      // GeForce / MIG / a query without power.draw: a spinning collective reads like compute.
      {"no power.draw", EvCounts(0, 100, 100), {"utilization", "memory"}, false, false},
      // Activity counters (DCGM) separate a spin from compute without power.
      {"no power, DCGM activity",
       EvCounts(0, 100, 100, 100),
       {"utilization", "memory", "activity"},
       true,
       true},
      // Power alone: a spin at low power reads like no kernels.
      {"power only", EvCounts(100, 0, 100), {"power", "memory"}, false, true},
      // A signal in a few samples only does not count.
      {"power in 10 %", EvCounts(10, 100, 100), {"utilization", "memory"}, false, false},
      // Without memory, idle and checkpoint blur, but a hang is still visible.
      {"no memory.used", EvCounts(100, 100, 0), {"power", "utilization"}, true, true},
      // Power logged but never placed in the board's range (no idle, no limit, no name).
      {"power not placed", Unplaced(100, 100, 100), {"utilization", "memory"}, false, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.log);
    const GpuEvidence e = DescribeEvidence(r.counts, 100, o);
    EXPECT_EQ(e.signals, r.signals);
    bool hides_hang = false;
    for (const auto& d : e.cannot_tell_apart) {
      hides_hang = hides_hang || d.affects_hang;
      EXPECT_FALSE(d.why.empty());
      EXPECT_GE(d.states.size(), 2u);
    }
    EXPECT_EQ(!hides_hang, r.hang_visible);
    EXPECT_EQ(!EvHas(e, GpuState::kCompute), r.compute_certain);
  }
  // No samples: nothing to say.
  EXPECT_TRUE(DescribeEvidence(SignalCounts{}, 0, o).cannot_tell_apart.empty());
  EXPECT_TRUE(EvHas(DescribeEvidence(EvCounts(100, 100, 0), 100, o), GpuState::kIdle));
}

}  // namespace
}  // namespace ww::triage
