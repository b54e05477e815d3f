// Streams per-sample labels as CSV: `host,timestamp,gpu,state`, one row per input sample,
// timestamps ISO 8601 with milliseconds. Ownership: does not own the FILE. Thread-safety: called
// from the engine's thread only.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "triage/engine.h"

namespace ww::report {

class LabelsCsvWriter final : public triage::TriageObserver {
 public:
  LabelsCsvWriter(std::FILE* out, std::vector<std::string> hosts, bool with_zone);
  ~LabelsCsvWriter() override;
  void OnLabel(const triage::LabeledSample& label) override;
  void Flush();
  // Flushes and lets go of the file, which the caller then closes: later labels and the
  // destructor write nothing (a closed FILE* must not be flushed again).
  void Release();

 private:
  std::FILE* out_;
  std::vector<std::string> hosts_;
  bool with_zone_;
  std::string buf_;
};

// Forwards every callback to several observers, in order.
class ObserverFanout final : public triage::TriageObserver {
 public:
  void Add(triage::TriageObserver* o) { observers_.push_back(o); }
  void OnLabel(const triage::LabeledSample& l) override {
    for (auto* o : observers_) o->OnLabel(l);
  }
  void OnStateChange(GpuKey k, GpuState from, GpuState to, int64_t at) override {
    for (auto* o : observers_) o->OnStateChange(k, from, to, at);
  }
  void OnHangConfirmed(const triage::HangEpisode& e) override {
    for (auto* o : observers_) o->OnHangConfirmed(e);
  }
  void OnHangEnded(const triage::HangEpisode& e) override {
    for (auto* o : observers_) o->OnHangEnded(e);
  }

 private:
  std::vector<triage::TriageObserver*> observers_;
};

}  // namespace ww::report
