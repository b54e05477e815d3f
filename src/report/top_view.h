// `wattwatch top`: a live terminal view of a job's GPUs. Split in three so each part is testable:
//   TopModel   – feeds samples through a TriageEngine and keeps, per GPU, the last readings, the
//                live state and a power history (pure, no I/O);
//   RenderTop  – turns the model and the view settings into screen lines (pure);
//   RunTop     – the loop: paces the source by sample time through a Clock, reads keys from a
//                raw-mode terminal, redraws in place, restores the terminal on exit.
// Ownership: TopModel owns its engine. RunTop borrows the source and the clock.
// Thread-safety: one thread; RunTop's stop flag may be set from a signal handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "telemetry/source.h"
#include "telemetry/source_spec.h"
#include "triage/engine.h"

namespace ww::report {

enum class TopSort { kGpu, kPower, kState };
const char* TopSortName(TopSort s);

struct TopRow {
  GpuKey key;
  std::string label;  // "node0/GPU3"
  std::string name;   // model
  int64_t last_ms = 0;
  std::optional<double> power_w, power_limit_w, util_pct, mem_used_mib, mem_total_mib;
  std::optional<double> sm_clock_mhz, temperature_c;
  std::deque<float> power_history_w;  // one point per second: the peak of that second
  int64_t history_second = INT64_MIN;
  double peak_power_w = 0;
};

class TopModel final : public triage::TriageObserver {
 public:
  static constexpr size_t kHistoryPoints = 120;

  explicit TopModel(triage::TriageOptions options = {});
  void SetSourceInfo(const std::vector<std::string>& hosts, const std::vector<GpuInfo>& gpus);
  void Add(const GpuSample& sample);
  void Finish() { engine_.Finish(); }

  const std::map<GpuKey, TopRow>& rows() const { return rows_; }
  std::optional<GpuState> state(GpuKey key) const { return engine_.current_state(key); }
  const triage::TriageEngine& engine() const { return engine_; }
  // The hang in progress, else the last one that ended; nullptr when none so far.
  const triage::HangEpisode* latest_hang() const;
  bool hang_active() const { return engine_.hang_active(); }
  int64_t last_ms() const { return last_ms_; }

  void OnHangConfirmed(const triage::HangEpisode& e) override { last_hang_ = e; }
  void OnHangEnded(const triage::HangEpisode& e) override { last_hang_ = e; }

 private:
  triage::TriageEngine engine_;
  std::vector<std::string> hosts_;
  std::map<GpuKey, std::string> names_;
  std::map<GpuKey, TopRow> rows_;
  std::optional<triage::HangEpisode> last_hang_;
  int64_t last_ms_ = 0;
};

struct TopViewState {
  int width = 120;
  int height = 40;
  TopSort sort = TopSort::kGpu;
  int selected = 0;      // index in the sorted order
  bool details = false;  // show the selected GPU's details
  bool color = true;
  bool finished = false;  // the source ended
  std::string source_label;
  std::string status;  // one line of notes (pace, errors)
};

// GPU keys in display order.
std::vector<GpuKey> SortedKeys(const TopModel& model, TopSort sort);
// The screen, one string per line, each at most `width` columns (ANSI color codes excluded).
std::vector<std::string> RenderTop(const TopModel& model, const TopViewState& view);

struct TopRunOptions {
  double speed = 1;           // replay/sim: sample time runs this many times faster; 0: at once
  bool live = false;          // live source: read every interval_ms instead of pacing by timestamps
  int64_t interval_ms = 500;  // live: ticks late by whole intervals are skipped, not burst
  std::string source_label;
  int in_fd = 0;
  int out_fd = 1;
  const std::atomic<int>* stop = nullptr;  // set by a signal handler: leave and restore
};

// Runs until the user quits or *stop is set. The source's error is returned after the terminal
// has been restored; the end of a replay is not an error (the view stays until q).
Status RunTop(TelemetrySource& source, Clock& clock, const TopRunOptions& options);

// Everything `wattwatch top` takes; its flags bind straight to these fields.
struct TopOptions {
  std::string source = "auto";       // --source: auto, nvml, amdsmi, replay:FILE,... or sim:S
  SourceSpecOptions source_options;  // --nvml-lib
  TopRunOptions run;                 // --speed, --interval-ms (live and the label are set here)
};

// Opens options.source and runs RunTop on it. kInvalidInput when out_fd is not a terminal or the
// spec is malformed, kUnavailable when NVML is missing; the message says which.
Status RunTopOn(const TopOptions& options, Clock& clock);

}  // namespace ww::report
