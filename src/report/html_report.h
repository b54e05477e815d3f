// The HTML timeline report of `wattwatch triage --html FILE`: one self-contained page (no network
// when viewed) with a swimlane per GPU colored by state, hang episodes and checkpoints with their
// reasons on hover, power and utilization curves of a selected GPU with its power limit and
// calibrated levels, the summary table, and zoom/pan.
//
// Size is bounded by construction, not by the log: samples and labels are reduced on the fly into
// at most kMaxBuckets time buckets per GPU (min/max power and utilization, state counts); when the
// run outgrows them, neighbouring buckets merge pairwise and the bucket width doubles. At render
// time the buckets are merged further so that GPUs x buckets stays within a page budget (a few
// MB whatever the log size); the page then reduces per pixel when drawing, so zoom stays smooth.
//
// Wiring: wrap the TelemetrySource in a RecordingSource (samples: power, utilization, limit) and
// add the TimelineCollector to the engine's observers (labels); after Finish, RenderHtml.
// Ownership: RecordingSource borrows the inner source and the collector, both must outlive it.
// Thread-safety: none; everything runs on the triage thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "report/triage_report.h"
#include "telemetry/source.h"
#include "triage/calibration.h"
#include "triage/classifier.h"
#include "triage/engine.h"

namespace ww::report {

// One time bucket of one GPU.
struct TimelineBucket {
  float power_min_w = 0, power_max_w = -1;  // max < min: no power reading in the bucket
  float util_min_pct = 0, util_max_pct = -1;
  std::array<uint32_t, kNumGpuStates> state_samples{};  // labels per state

  bool has_power() const { return power_max_w >= power_min_w; }
  bool has_util() const { return util_max_pct >= util_min_pct; }
  // The state most samples in the bucket carry; -1 when unlabeled. A hang wins any tie so that
  // a short hang stays visible when zoomed out.
  int dominant_state() const;
  void Merge(const TimelineBucket& other);
};

class TimelineCollector final : public triage::TriageObserver {
 public:
  static constexpr size_t kMaxBuckets = 8192;

  explicit TimelineCollector(triage::Thresholds thresholds = {});
  ~TimelineCollector() override;

  // One telemetry sample (from RecordingSource).
  void AddSample(const GpuSample& sample);
  // Model names (seed the calibration exactly as the engine does).
  void SetGpuInfo(const std::vector<GpuInfo>& gpus);
  void OnLabel(const triage::LabeledSample& label) override;

  struct Lane {
    GpuKey key;
    std::string name;
    std::vector<TimelineBucket> buckets;  // bucket i covers origin + [i, i+1) * bucket_ms
    std::unique_ptr<triage::PowerCalibration> calibration;
    double power_limit_w = 0;  // the highest enforced limit logged; 0 when never logged
    int64_t samples = 0;
  };
  int64_t origin_ms() const { return origin_ms_; }
  int64_t bucket_ms() const { return bucket_ms_; }
  const std::map<GpuKey, Lane>& lanes() const { return lanes_; }
  const triage::Thresholds& thresholds() const { return thresholds_; }

 private:
  TimelineBucket* BucketFor(GpuKey key, int64_t timestamp_ms);
  void Coarsen();  // merges neighbouring buckets of every lane, doubling bucket_ms_

  triage::Thresholds thresholds_;
  std::map<GpuKey, Lane> lanes_;
  std::map<GpuKey, std::string> names_;
  int64_t origin_ms_ = INT64_MIN;
  int64_t bucket_ms_ = 100;
};

// Forwards Next() and records every sample into the collector. hosts()/gpus()/warnings() pass
// through, so the engine sees the same source.
class RecordingSource final : public TelemetrySource {
 public:
  RecordingSource(TelemetrySource* inner, TimelineCollector* collector)
      : inner_(inner), collector_(collector) {}
  Status Next(std::vector<GpuSample>* out) override;
  const std::vector<std::string>& hosts() const override { return inner_->hosts(); }
  std::vector<GpuInfo> gpus() const override { return inner_->gpus(); }
  std::vector<std::string> warnings() const override { return inner_->warnings(); }

 private:
  TelemetrySource* inner_;
  TimelineCollector* collector_;
  bool named_ = false;
};

struct HtmlOptions {
  std::string title = "wattwatch triage";
  std::vector<std::string> inputs;  // the log files, for the header
  // GPUs x buckets embedded in the page; buckets merge pairwise until they fit.
  size_t max_total_buckets = 16 * 8192;
};

// The page, as one string.
std::string RenderHtml(const TriageReport& report, const TimelineCollector& timeline,
                       const HtmlOptions& options = {});
// Writes the page to path. IoError naming the file when it cannot be written.
Status WriteHtmlReport(const std::string& path, const TriageReport& report,
                       const TimelineCollector& timeline, const HtmlOptions& options = {});

// The page's JavaScript and CSS (html_page.cc), exposed for tests.
const char* HtmlPageScript();
const char* HtmlPageStyle();

}  // namespace ww::report
