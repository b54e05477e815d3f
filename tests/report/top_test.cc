// `wattwatch top`: the model and the screen it renders (pure, driven by the simulator), then the
// real binary in a real terminal (tmux): rows appear, the hang and its culprit show, keys work,
// and q restores the terminal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <thread>

#include "report/top_view.h"
#include "support/support.h"
#include "telemetry/sim/simulator.h"

namespace ww::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// Feeds a scenario into a model up to `until_s` seconds of simulated time (all of it when < 0).
void Feed(TopModel& model, const std::string& scenario, double until_s,
          std::vector<sim::TruthHang>* truth = nullptr) {
  auto cfg = sim::MakeScenario(scenario, {});
  ASSERT_TRUE(cfg.ok());
  sim::Simulator s(*cfg);
  model.SetSourceInfo(s.host_names(), {});
  std::vector<GpuSample> batch;
  std::vector<sim::TruthLabel> labels;
  while (s.NextTick(&batch, &labels)) {
    for (const auto& x : batch) model.Add(x);
    const bool stop = until_s >= 0 && !batch.empty() &&
                      batch.front().timestamp_ms - cfg->start_unix_ms > until_s * 1000;
    batch.clear();
    labels.clear();
    if (stop) break;
  }
  if (truth) *truth = s.truth_hangs();
}

TEST(TopViewTest, HealthyJobShowsOneComputingRowPerGpu) {
  TopModel model;
  Feed(model, "healthy", 100);
  TopViewState v;
  v.color = false;
  v.source_label = "sim:healthy";
  const auto lines = RenderTop(model, v);
  const std::string screen = Join(lines);
  for (int g = 0; g < 8; ++g) {
    EXPECT_THAT(screen, HasSubstr("node0/GPU" + std::to_string(g))) << screen;
  }
  EXPECT_THAT(screen, HasSubstr("compute"));
  EXPECT_THAT(screen, HasSubstr("no hang"));
  EXPECT_THAT(screen, Not(HasSubstr("culprit")));
  EXPECT_THAT(screen, HasSubstr("/700 W"));                        // power against the H100's limit
  for (const auto& l : lines) EXPECT_LE(l.size(), 120u * 3) << l;  // sparkline is UTF-8
}

TEST(TopViewTest, HangShowsCulpritAndReasons) {
  TopModel model;
  std::vector<sim::TruthHang> truth;
  Feed(model, "hang-exit", 60 + 60 + 150, &truth);  // deep into the hang, before the end
  ASSERT_TRUE(model.hang_active());
  TopViewState v;
  v.color = false;
  const std::string screen = Join(RenderTop(model, v));
  EXPECT_THAT(screen, HasSubstr("HANG since"));
  EXPECT_THAT(screen, HasSubstr("  - "));  // reasons, one a line
  // The culprit row is the rank the simulator made exit, and only it.
  ASSERT_FALSE(truth.empty());
  const std::string culprit = "node0/GPU" + std::to_string(truth[0].culprits[0].gpu);
  std::regex row("\n[> ] (node0/GPU[0-9]+) [^\n]*<< culprit");
  std::vector<std::string> marked;
  for (std::sregex_iterator it(screen.begin(), screen.end(), row), end; it != end; ++it) {
    marked.push_back((*it)[1]);
  }
  EXPECT_EQ(marked, std::vector<std::string>{culprit}) << screen;
  EXPECT_THAT(screen, HasSubstr("culprit: " + culprit));
}

TEST(TopViewTest, SortByPowerAndDetailsOfThePickedGpu) {
  TopModel model;
  Feed(model, "checkpoint-rank0", -1);
  auto keys = SortedKeys(model, TopSort::kPower);
  ASSERT_EQ(keys.size(), 8u);
  for (size_t i = 1; i < keys.size(); ++i) {
    EXPECT_GE(model.rows().at(keys[i - 1]).power_w.value_or(-1),
              model.rows().at(keys[i]).power_w.value_or(-1));
  }
  TopViewState v;
  v.color = false;
  v.sort = TopSort::kPower;
  v.selected = 2;
  v.details = true;
  const auto lines = RenderTop(model, v);
  const std::string picked = model.rows().at(keys[2]).label;
  int row_of_marker = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("> ", 0) == 0) row_of_marker = static_cast<int>(i);
  }
  ASSERT_GE(row_of_marker, 0);
  EXPECT_THAT(lines[static_cast<size_t>(row_of_marker)], HasSubstr(picked));
  const std::string screen = Join(lines);
  EXPECT_THAT(screen, HasSubstr(picked + " - "));
  EXPECT_THAT(screen, HasSubstr("calibration:"));
  EXPECT_THAT(screen, HasSubstr("time so far:"));
}

TEST(TopViewTest, ManyGpusScrollToKeepTheSelectionVisible) {
  TopModel model;
  Feed(model, "field-report", 30);
  ASSERT_EQ(model.rows().size(), 16u);
  TopViewState v;
  v.color = false;
  v.height = 20;
  v.selected = 15;
  const auto lines = RenderTop(model, v);
  EXPECT_LE(lines.size(), 20u);
  const std::string screen = Join(lines);
  EXPECT_THAT(screen, HasSubstr("> node1/GPU7"));
  EXPECT_THAT(screen, HasSubstr("of 16 GPUs"));
}

// --- the real binary under tmux -------------------------------------------------------------

using ::ww::testing::InCi;
using ::ww::testing::RunCapture;
using ::ww::testing::RunCommand;
using ::ww::testing::WattwatchBinary;

std::string Capture(const std::string& tmux) {
  return RunCapture(tmux + " capture-pane -p -t ww 2>/dev/null", /*merge_stderr=*/false).output;
}

// Polls the pane until pred holds (or ~timeout).
template <typename Pred>
std::string WaitFor(const std::string& tmux, Pred pred, double timeout_s) {
  std::string screen;
  for (int i = 0; i < static_cast<int>(timeout_s * 10); ++i) {
    screen = Capture(tmux);
    if (pred(screen)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return screen;
}

class TmuxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RunCommand("command -v tmux > /dev/null 2>&1") != 0) {
      if (InCi()) FAIL() << "tmux is not installed";
      GTEST_SKIP() << "tmux is not installed";
    }
    // A server of our own per test (pid + counter): never touches the user's tmux or a sibling.
    static int counter = 0;
    tmux_ = "tmux -L ww-top-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter) +
            " -f /dev/null";
  }
  void TearDown() override {
    if (!tmux_.empty()) RunCommand(tmux_ + " kill-server > /dev/null 2>&1");
  }
  std::string tmux_;
};

TEST_F(TmuxTest, LiveViewShowsHangKeysWorkAndQRestoresTheTerminal) {
  // A shell in the pane, so that after q we can see the prompt come back and the screen restored.
  ASSERT_EQ(
      RunCommand(tmux_ + " new-session -d -s ww -x 160 -y 50 'env PS1=READY\\$\\  bash --norc -i'"),
      0);
  WaitFor(
      tmux_, [](const std::string& s) { return s.find("READY$") != std::string::npos; }, 10);
  RunCommand(tmux_ + " send-keys -t ww 'clear; echo BEFORE-TOP' Enter");
  WaitFor(
      tmux_, [](const std::string& s) { return s.find("BEFORE-TOP") != std::string::npos; }, 10);
  RunCommand(tmux_ + " send-keys -t ww '" + WattwatchBinary() +
             " top --source sim:hang-exit --speed 25; echo TOP-EXIT=$?' Enter");
  // hang-exit: the rank exits ~84 s in, the hang is confirmed 45 s later and lasts 200 s: at x25
  // it shows from ~5 s to ~13 s of wall time (later under ASan on a busy machine, never sooner).
  std::string screen = WaitFor(
      tmux_, [](const std::string& s) { return s.find("HANG since") != std::string::npos; }, 60);
  EXPECT_THAT(screen, HasSubstr("wattwatch top - sim:hang-exit x25"));
  for (int g = 0; g < 8; ++g) EXPECT_THAT(screen, HasSubstr("node0/GPU" + std::to_string(g)));
  EXPECT_THAT(screen, HasSubstr("HANG since"));
  EXPECT_THAT(screen, HasSubstr("<< culprit"));
  EXPECT_THAT(screen, HasSubstr(" hang "));           // a row in state hang
  EXPECT_THAT(screen, Not(HasSubstr("BEFORE-TOP")));  // alternate screen

  // s cycles the sort; j moves the pick; enter opens the details.
  RunCommand(tmux_ + " send-keys -t ww s");
  screen = WaitFor(
      tmux_, [](const std::string& s) { return s.find("sort: power") != std::string::npos; }, 10);
  EXPECT_THAT(screen, HasSubstr("sort: power"));
  RunCommand(tmux_ + " send-keys -t ww j Enter");
  screen = WaitFor(
      tmux_, [](const std::string& s) { return s.find("calibration:") != std::string::npos; }, 10);
  EXPECT_THAT(screen, HasSubstr("calibration:"));

  RunCommand(tmux_ + " send-keys -t ww q");
  screen = WaitFor(
      tmux_, [](const std::string& s) { return s.find("\nTOP-EXIT=") != std::string::npos; }, 20);
  EXPECT_THAT(screen, HasSubstr("TOP-EXIT=0")) << screen;
  // The main screen is back as it was (alternate screen left), the view is gone.
  EXPECT_THAT(screen, HasSubstr("BEFORE-TOP"));
  EXPECT_THAT(screen, Not(HasSubstr("HANG since")));
  // The terminal is in cooked mode with echo again: typed text shows up and runs.
  RunCommand(tmux_ + " send-keys -t ww 'echo ECHO-$((40+2))' Enter");
  screen = WaitFor(
      tmux_, [](const std::string& s) { return s.find("ECHO-42") != std::string::npos; }, 10);
  EXPECT_THAT(screen, HasSubstr("ECHO-42"));
  EXPECT_THAT(screen, HasSubstr("echo ECHO-$((40+2))"));  // echoed as typed
}

TEST_F(TmuxTest, SigtermRestoresTheTerminalToo) {
  ASSERT_EQ(
      RunCommand(tmux_ + " new-session -d -s ww -x 120 -y 40 'env PS1=READY\\$\\  bash --norc -i'"),
      0);
  WaitFor(
      tmux_, [](const std::string& s) { return s.find("READY$") != std::string::npos; }, 10);
  RunCommand(tmux_ + " send-keys -t ww 'clear; echo BEFORE-TOP; " + WattwatchBinary() +
             " top --source sim:healthy --speed 5; echo TOP-EXIT=$?' Enter");
  std::string screen = WaitFor(
      tmux_, [](const std::string& s) { return s.find("node0/GPU7") != std::string::npos; }, 60);
  ASSERT_THAT(screen, HasSubstr("node0/GPU7"));
  // The view runs in the foreground of the pane's shell: signal that one child, by its pid.
  RunCommand("kill -TERM $(pgrep -P $(" + tmux_ +
             " list-panes -t ww -F '#{pane_pid}') -x wattwatch)");
  screen = WaitFor(
      tmux_, [](const std::string& s) { return s.find("\nTOP-EXIT=") != std::string::npos; }, 20);
  EXPECT_THAT(screen, HasSubstr("TOP-EXIT=0")) << screen;
  EXPECT_THAT(screen, HasSubstr("BEFORE-TOP"));
  EXPECT_THAT(screen, Not(HasSubstr("node0/GPU7")));
}

}  // namespace
}  // namespace ww::report
