// Reads dcgm-exporter's /metrics text (Prometheus exposition format): one scrape or many in a
// file (`while sleep 30; do curl -s node:9400/metrics; done > gpu.prom`), also when the
// `DCGM_FI_...{...} value` lines sit inside other text (Markdown, kubectl output, a CI log):
// lines that do not start with DCGM_FI_ are ignored.
//
// Scrapes in time: a line's own timestamp (ms) when it has one; otherwise a scrape ends where a
// series (metric and GPU) repeats, and scrape k is at k x ReaderOptions::interval_ms from
// 1970-01-01 (dcgm-exporter writes no timestamps; its default collection interval is 30 s). A
// file with more than one scrape and neither timestamps nor an interval is an error. A scrape
// identical to the one before in every value, the cumulative energy counter included, is the
// same body printed twice (a CI log echoing it) and a documented skip.
//
// GPUs by the `gpu` label (an index 0..4095), else by UUID, else by PCI bus id (pci_bus_id), per
// host: a GPU without a usable `gpu` label (none, "abc", "-1", "70000") is numbered from 4095
// down, never onto a labelled GPU's index, and a warning names it (identity_notes()). Line
// timestamps are milliseconds; ones in seconds (1e8..1e11: 1973..5138 as seconds, 1970 as ms)
// are read as seconds with a warning. GpuInfo from UUID, modelName, pci_bus_id; labels
// Hostname/hostname, pod, namespace, container, hpc_job kept per GPU (gpu_labels()). Series of
// MIG instances (GPU_I_ID) and of a second host in one file are documented skips.
//
// Metrics read: the rows of the DCGM field table (telemetry/fields.h), with its units and
// plausible ranges. The enforced power limit wins over the management limit; framebuffer total
// = used + free + reserved when a scrape has no total; utilization = 100 x graphics-engine
// activity when a scrape has no utilization. Others are ignored.
// Ownership: the source owns its file. Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"
#include "telemetry/ingest/prom_text.h"

namespace ww::ingest {

Result<OpenedFile> OpenDcgmExporter(std::unique_ptr<LineReader> reader, const std::string& host,
                                    uint16_t host_index, const ReaderOptions& options);

// Decodes DCGM sample lines into per-GPU readings of one scrape. The seam a live
// `--source dcgm-exporter:URL` scraper uses: Begin(), Line() for each line of the body, then
// End() to get the scrape's samples (GPU order), all stamped with the scrape's time.
class DcgmScrapeDecoder {
 public:
  // The labels kept per GPU (labels()) beyond the host label: the job mappings dcgm-exporter
  // writes. A fleet grouping by a label of its own (a relabelled `job_id`) names it here.
  static std::vector<std::string> DefaultKeptLabels() {
    return {"pod", "namespace", "container", "hpc_job"};
  }
  explicit DcgmScrapeDecoder(uint16_t host_index,
                             std::vector<std::string> kept_labels = DefaultKeptLabels())
      : host_index_(host_index), kept_labels_(std::move(kept_labels)) {}

  enum class LineResult {
    kRead,          // a DCGM field stored
    kIgnored,       // not a DCGM_FI_ line, or a field wattwatch does not use
    kRepeated,      // this series was already seen in the scrape: a new scrape starts here
    kNewTimestamp,  // the line's timestamp differs from the scrape's: a new scrape starts here
    kSkipped,       // documented skip (MIG instance, other host, no gpu label); *why says which
    kMalformed,     // *why says what
  };
  // Decodes one line into the current scrape. kRepeated / kNewTimestamp leave the line
  // undecoded: call End(), then Line() again with it.
  LineResult Line(std::string_view line, std::string* why);

  // The same decode in two steps, for readers that hold a series' points apart from its name
  // (Prometheus API JSON): Series() resolves `NAME{labels} VALUE` once (kRead when the series
  // is a field wattwatch reads on a GPU; kIgnored, kSkipped or kMalformed as Line() would answer
  // for each of its points), then Store() puts one value of it into the current scrape as Line()
  // does (kRead, kRepeated, kMalformed).
  struct SeriesRef {
    int field = -1;
    uint16_t gpu = 0;
    double scale = 1;  // another vendor's series (ExporterSeries): its value times this
  };
  LineResult Series(std::string_view line, SeriesRef* ref, std::string* why);
  LineResult Store(const SeriesRef& ref, std::optional<int64_t> timestamp_ms, double value,
                   std::string* why);
  bool empty() const { return slots_in_scrape_.empty(); }
  std::optional<int64_t> scrape_timestamp_ms() const { return scrape_ts_; }
  // Closes the scrape: appends its samples (timestamp_ms = at_ms) and resets for the next one.
  void End(int64_t at_ms, std::vector<GpuSample>* out);

  // What the decoder learned about GPUs (by gpu index) and their labels.
  const std::map<uint16_t, GpuInfo>& infos() const { return infos_; }
  const std::map<uint16_t, std::map<std::string, std::string>>& labels() const { return labels_; }
  const std::string& hostname() const { return hostname_; }
  // Things the caller should warn about, since the last call: a GPU identified by UUID or PCI
  // bus id (its `gpu` label missing or unusable), timestamps read as seconds. (kind, detail).
  std::vector<std::pair<std::string, std::string>> TakeNotes() { return std::exchange(notes_, {}); }
  // `gpu` labels are GPU indices below this; GPUs identified otherwise are numbered below it
  // from the top.
  static constexpr int kMaxGpuIndex = 4096;
  std::vector<std::string> fields_read() const;
  bool scrape_had_energy() const { return scrape_had_energy_; }

 private:
  struct Slot {
    bool skip = false;
    std::string skip_reason;
    uint16_t gpu = 0;
  };
  struct Partial {
    GpuSample sample;
    uint64_t seen = 0;  // bit per field
    std::optional<double> fb_free, fb_reserved, gr_active;
    bool util_seen = false;
    bool enforced_limit = false;
  };
  const Slot& Resolve(std::string_view block);

  uint16_t host_index_;
  std::vector<std::string> kept_labels_;  // DefaultKeptLabels() unless told
  std::unordered_map<std::string, Slot> slots_;
  std::map<uint16_t, Partial> partial_;
  std::vector<uint16_t> slots_in_scrape_;
  std::optional<int64_t> scrape_ts_;
  bool scrape_had_energy_ = false;
  std::map<uint16_t, GpuInfo> infos_;
  std::map<uint16_t, std::map<std::string, std::string>> labels_;
  std::unordered_map<std::string, uint16_t> gpu_by_identity_;  // "gpu:3", "uuid:GPU-..", "bus:.."
  std::vector<bool> index_taken_ = std::vector<bool>(kMaxGpuIndex, false);
  int next_unlabelled_index_ = kMaxGpuIndex - 1;
  bool seconds_noted_ = false;
  std::vector<std::pair<std::string, std::string>> notes_;
  std::string hostname_;
  uint64_t fields_used_ = 0;
  PromSample sample_;
  std::vector<PromLabel> label_buf_;
  std::deque<std::string> scratch_;
};

}  // namespace ww::ingest
