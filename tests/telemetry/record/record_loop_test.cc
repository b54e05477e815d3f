// The record loop (src/telemetry/record/record_loop.h) on the fake libnvidia-ml.so.1 and a
// ManualClock: ticks on the interval grid until --duration-s, a machine stall skipped and counted
// (not written as a burst), the stop flag, --max-size parsing, and the errors Record() reports.
#include "telemetry/record/record_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <iterator>
#include <vector>

#include "telemetry/fake_nvml_script.h"
#include "telemetry/ingest/nvsmi_log.h"
#include "telemetry/test_files.h"

namespace ww::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;

constexpr const char* kTwoGpus = R"(
gpus 2
gpu 0 name "NVIDIA H100 80GB HBM3" uuid GPU-0000aaaa arch hopper
gpu 1 name "NVIDIA A100-SXM4-80GB" uuid GPU-1111bbbb arch ampere
set * power_mw 547120
set * power_limit_mw 700000
set * util_gpu 91
)";

// A ManualClock that calls on_sleep(n, clock) after its n-th sleep (1-based): a test makes one
// sleep come back late, as on a machine that froze, or sets a stop flag at a given time. The
// fake NVML's script time follows it, so scripted events happen at clock time.
class ScriptedClock final : public Clock {
 public:
  explicit ScriptedClock(std::function<void(int, ManualClock&)> on_sleep)
      : inner_(kBaseMs), on_sleep_(std::move(on_sleep)) {
    SetFakeNvmlTimeMs(0);
  }
  int64_t NowUnixMs() override { return inner_.NowUnixMs(); }
  int64_t NowMonotonicNs() override { return inner_.NowMonotonicNs(); }
  void SleepUntilMonotonicNs(int64_t deadline_ns) override {
    inner_.SleepUntilMonotonicNs(deadline_ns);
    if (on_sleep_) on_sleep_(++sleeps_, inner_);
    SetFakeNvmlTimeMs(inner_.NowMonotonicNs() / kMs);
  }

 private:
  ManualClock inner_;
  std::function<void(int, ManualClock&)> on_sleep_;
  int sleeps_ = 0;
};

class RecordLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ScriptFakeNvml(kTwoGpus);
    options_.writer.path = dir_.path() + "/node0.csv";
    options_.nvml.library_path = FAKE_NVML_LIB;
    options_.nvml.hostname = "node0";
    options_.deadline_ms = 2000;  // real time: a loaded test machine must not make GPUs stale
  }

  // The written log read back: the offsets of its ticks from the first, in ms.
  std::vector<int64_t> TickOffsetsMs() {
    ReadAll r = ReadReplay({options_.writer.path});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    std::vector<int64_t> offsets;
    for (const auto& batch : r.batches) {
      EXPECT_EQ(batch.size(), 2u) << "both GPUs in every tick";
      offsets.push_back(batch.front().timestamp_ms - r.batches.front().front().timestamp_ms);
    }
    return offsets;
  }

  TempDir dir_;
  record::RecordOptions options_;
  std::vector<std::string> notes_;
  record::RecordNote note_ = [this](const std::string& line) { notes_.push_back(line); };
};

TEST_F(RecordLoopTest, WritesOneTickPerIntervalUntilTheDuration) {
  ScriptedClock clock(nullptr);
  options_.interval_ms = 100;
  options_.duration_s = 1;
  auto summary = record::Record(options_, clock, nullptr, note_);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->ticks, 10u) << "0, 100, ..., 900 ms; the one due at 1 s is past the end";
  EXPECT_EQ(summary->dropped_ticks, 0u);
  EXPECT_EQ(summary->gpus, 2u);
  EXPECT_EQ(summary->stale_samples, 0u);
  EXPECT_THAT(TickOffsetsMs(), ElementsAre(0, 100, 200, 300, 400, 500, 600, 700, 800, 900));
  EXPECT_EQ(summary->Describe("node0.csv"),
            "10 ticks x 2 GPUs to node0.csv (0 stale GPU-samples, 0 ticks skipped)");
}

TEST_F(RecordLoopTest, AStallSkipsTheTicksItOverranAndCountsThem) {
  // The third sleep (towards the tick due at 300 ms) comes back 350 ms late, at 650 ms.
  ScriptedClock clock([](int n, ManualClock& c) {
    if (n == 3) c.AdvanceNs(350 * kMs);
  });
  options_.interval_ms = 100;
  options_.duration_s = 1;
  auto summary = record::Record(options_, clock, nullptr, note_);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->dropped_ticks, 3u) << "the ticks due at 400, 500 and 600 ms";
  EXPECT_EQ(summary->ticks, 7u);
  // No burst after the stall: the late tick, then the grid again (700 ms), not 650 + 100 ms.
  EXPECT_THAT(TickOffsetsMs(), ElementsAre(0, 100, 200, 650, 700, 800, 900));
  EXPECT_THAT(summary->Describe("x"), HasSubstr("3 ticks skipped"));
}

TEST_F(RecordLoopTest, TheStopFlagEndsTheLoopWithinASlice) {
  std::atomic<int> stop{0};
  // A 1 s interval is waited for in 100 ms slices; stop is raised at 1250 ms.
  ScriptedClock clock([&](int, ManualClock& c) {
    if (c.NowMonotonicNs() >= 1250 * kMs) stop = SIGTERM;
  });
  options_.interval_ms = 1000;
  options_.duration_s = 0;  // until stopped
  auto summary = record::Record(options_, clock, &stop, note_);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->ticks, 2u);
  EXPECT_EQ(clock.NowMonotonicNs(), 1300 * kMs);
}

TEST_F(RecordLoopTest, AStopBeforeTheFirstTickWritesOnlyTheHeader) {
  std::atomic<int> stop{SIGTERM};
  ScriptedClock clock(nullptr);
  auto summary = record::Record(options_, clock, &stop, note_);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->ticks, 0u);
  std::ifstream in(options_.writer.path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, std::string(record::NvsmiCsvHeader()));
}

TEST_F(RecordLoopTest, AnXidIsNotedOnce) {
  // Raised after the first tick registered the GPUs for events.
  ScriptFakeNvml(std::string(kTwoGpus) + "at 150 xid 1 79\n");
  ScriptedClock clock(nullptr);
  options_.interval_ms = 100;
  options_.duration_s = 0.5;
  auto summary = record::Record(options_, clock, nullptr, note_);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  int xid_notes = 0;
  for (const auto& n : notes_) xid_notes += n.find("Xid 79") != std::string::npos;
  EXPECT_EQ(xid_notes, 1) << ::testing::PrintToString(notes_);
}

TEST_F(RecordLoopTest, WithoutNvmlItIsUnavailable) {
  ScriptedClock clock(nullptr);
  options_.nvml.library_path = dir_.path() + "/libnvidia-ml.so.1";
  auto summary = record::Record(options_, clock, nullptr, note_);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(summary.status().message(), HasSubstr("cannot load NVML"));
}

TEST_F(RecordLoopTest, AnUnwritableLogNamesItsPath) {
  ScriptedClock clock(nullptr);
  options_.writer.path = dir_.path() + "/no/such/dir/node0.csv";
  auto summary = record::Record(options_, clock, nullptr, note_);
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("no/such/dir/node0.csv"));
}

TEST_F(RecordLoopTest, ABadMaxSizeIsRejectedBeforeNvmlIsOpened) {
  ScriptedClock clock(nullptr);
  options_.max_size = "12Q";
  options_.nvml.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto summary = record::Record(options_, clock, nullptr, note_);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kInvalidInput);
  EXPECT_THAT(summary.status().message(), HasSubstr("--max-size \"12Q\" is not a size"));
}

TEST(ParseSizeBytes, AcceptsBinaryMultiplesInAnyCase) {
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  for (const Case& c : std::vector<Case>{{"1048576", 1048576},
                                         {"7b", 7},
                                         {"500k", 500ull << 10},
                                         {"2KiB", 2ull << 10},
                                         {"64M", 64ull << 20},
                                         {"3mb", 3ull << 20},
                                         {"1G", 1ull << 30},
                                         {"16GiB", 16ull << 30}}) {
    auto r = record::ParseSizeBytes(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().message();
    EXPECT_EQ(*r, c.bytes) << c.text;
  }
}

TEST(ParseSizeBytes, RejectsWhatIsNoSize) {
  for (const char* text : {"", "M", "12Q", "0", "0M", "-1", "1.5G", " 1G", "1G ", "1T",
                           "99999999999999999999", "17179869184G"}) {
    auto r = record::ParseSizeBytes(text);
    ASSERT_FALSE(r.ok()) << "'" << text << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_THAT(r.status().message(), HasSubstr(std::string("--max-size \"") + text + "\""));
  }
}

}  // namespace
}  // namespace ww::testing
