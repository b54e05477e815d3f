// Hosts' clocks: the logs of a job's hosts are stamped by each host's own clock, and a skew of
// tens of seconds shifts one host against the others (a rank-0 checkpoint then looks shorter, a
// straggler appears). Two parts:
//   - EstimateHostSkews (pure): from the moments each host's GPUs start or stop working together
//     (a job-wide step, checkpoint or hang starts on every host at once), each host's offset
//     against the first host's clock, with how many shared moments agree.
//   - HostOffsetSource: a TelemetrySource decorator that adds a fixed offset per host (the user's
//     `--host-offset HOST=SECONDS`) and keeps the merged stream in time order.
// Ownership: HostOffsetSource borrows its inner source, which must outlive it.
// Thread-safety: one thread at a time, like any source.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "core/status.h"
#include "telemetry/source.h"
#include "triage/options.h"

namespace ww::triage {

// A GPU starting (working = true) or stopping real work (kBusy) at t_ms.
struct WorkTransition {
  int64_t t_ms = 0;
  uint16_t gpu = 0;
  bool working = false;
};

struct HostSkew {
  uint16_t host = 0;
  double offset_s = 0;  // this host's clock minus the reference host's (0 for the reference)
  int matches = 0;      // shared moments that agree with the offset (within skew_agree_s)
};

// transitions[h]: host h's GPU transitions in time order; gpus_per_host[h]: its GPU count. A host
// moment is most of its GPUs (host_moment_gpu_share) changing the same way within
// host_moment_window_s; each host's moments are matched to the nearest of the reference host
// (host 0) within max_host_skew_s. Hosts without min_skew_matches agreeing moments are left out.
std::vector<HostSkew> EstimateHostSkews(const std::vector<std::vector<WorkTransition>>& transitions,
                                        const std::vector<int>& gpus_per_host,
                                        const TriageOptions& options);

// "HOST=SECONDS" -> host name and seconds (a clock SECONDS ahead is corrected with -SECONDS).
Result<std::pair<std::string, double>> ParseHostOffset(const std::string& spec);

class HostOffsetSource final : public TelemetrySource {
 public:
  // offsets_s by host name; a name the inner source does not have is an error from Create.
  static Result<std::unique_ptr<HostOffsetSource>> Create(
      TelemetrySource* inner, const std::map<std::string, double>& offsets_s);

  Status Next(std::vector<GpuSample>* out) override;
  const std::vector<std::string>& hosts() const override { return inner_->hosts(); }
  std::vector<GpuInfo> gpus() const override { return inner_->gpus(); }
  std::vector<std::string> warnings() const override { return inner_->warnings(); }
  std::vector<GpuLabels> gpu_labels() const override { return inner_->gpu_labels(); }
  SourceHealth health() const override { return inner_->health(); }

 private:
  HostOffsetSource(TelemetrySource* inner, std::vector<int64_t> offset_ms);

  struct Item {
    int64_t t_ms;
    uint64_t seq;  // arrival order: equal times keep the inner order
    GpuSample sample;
    bool operator>(const Item& o) const { return t_ms != o.t_ms ? t_ms > o.t_ms : seq > o.seq; }
  };

  TelemetrySource* inner_;
  std::vector<int64_t> offset_ms_;  // by host index
  int64_t min_offset_ms_ = 0;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap_;
  uint64_t seq_ = 0;
  bool inner_done_ = false;
};

}  // namespace ww::triage
