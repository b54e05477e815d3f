// FleetQuery: the fleet's one I/O seam towards Prometheus (or Thanos/Mimir behind the same HTTP
// API). A cycle asks for the DCGM series of ALL GPUs at once over the samples new since the last
// cycle: one range query per time chunk, a regex on __name__, never one query per GPU.
//
// The query is a range-vector selector, `{__name__=~"DCGM_FI_DEV_POWER_USAGE|..."}[RANGE]`,
// evaluated at the chunk's end (/api/v1/query), which returns the raw samples as scraped, with
// their own timestamps. Not /api/v1/query_range: that resamples onto a grid and repeats a
// series' last value for up to 5 minutes (the lookback delta) across a hole, so a Prometheus
// restart or a missed scrape would read as minutes of flat telemetry, which is what a hang
// looks like. Raw samples keep a hole a hole.
//
// PromFleetQuery does it over ingest::PromHttp and decodes with ingest::PromJsonDecoder, the
// reader `triage --prometheus` uses: the same fields, units, plausible ranges, host and GPU
// labels, and documented skips. Tests substitute a fake FleetQuery (no network) or a fake
// PromHttp.
//
// Ownership: PromFleetQuery borrows the PromHttp and the Clock, which must outlive it.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/sample.h"
#include "core/status.h"
#include "telemetry/ingest/dcgm_exporter.h"
#include "telemetry/ingest/prom_client.h"
#include "telemetry/source.h"

namespace ww::fleet {

// What one range request returned, decoded. Keys index `hosts` (GpuKey::host) as the decoder
// assigned them for this request only: a host's index may differ from one batch to the next, so
// consumers go by name.
struct FleetBatch {
  std::vector<std::string> hosts;
  std::vector<GpuSample> samples;  // in (time, host, GPU) order
  std::vector<GpuInfo> infos;
  std::vector<GpuLabels> labels;
  std::vector<std::string> warnings;  // the decoder's documented skips
  int64_t server_warnings = 0;        // Prometheus said the data may be partial
  int64_t series = 0;
  int64_t spacing_ms = 0;     // median spacing of a GPU's samples (the scrape interval); 0: unknown
  double server_seconds = 0;  // waiting for the answer (Prometheus and the network)
};

class FleetQuery {
 public:
  virtual ~FleetQuery() = default;
  // The raw samples of every matching GPU stamped start_ms..end_ms (end_ms > start_ms; whether
  // start_ms itself is in depends on the server's version: callers overlap and drop repeats).
  // One request. An empty batch when nothing matched (no GPU scraped: not an error).
  // Unavailable when no answer came or the server is overloaded (5xx, 429): worth a retry.
  // InvalidInput when the server refused the query (4xx) or the answer is not an API response.
  virtual Result<FleetBatch> Samples(int64_t start_ms, int64_t end_ms) = 0;
  virtual const std::string& url() const = 0;
  // The series labels to keep per GPU in FleetBatch::labels besides the host (the job labels):
  // the service sets them from --job-label before the first Samples().
  virtual void KeepLabels(const std::vector<std::string>& names) { (void)names; }
};

class PromFleetQuery final : public FleetQuery {
 public:
  // matchers: extra label matchers ("{cluster=\"a\"}"), or empty.
  PromFleetQuery(ingest::PromHttp* http, Clock* clock, const std::string& matchers);

  Result<FleetBatch> Samples(int64_t start_ms, int64_t end_ms) override;
  const std::string& url() const override { return http_->url(); }
  void KeepLabels(const std::vector<std::string>& names) override;

  // The selector of every request, without its [RANGE] (for messages and docs).
  const std::string& selector() const { return selector_; }

 private:
  // One GET; decodes the body into *batch (which gets the server time).
  Status GetDecoded(const std::string& path, const std::multimap<std::string, std::string>& params,
                    const std::string& what, FleetBatch* batch);

  ingest::PromHttp* http_;
  Clock* clock_;
  std::string selector_;
  std::vector<std::string> kept_labels_ = ingest::DcgmScrapeDecoder::DefaultKeptLabels();
};

// "{a=\"b\"}" -> "a=\"b\""; InvalidInput naming --selector when it is not in braces.
Result<std::string> SelectorMatchers(const std::string& selector);

// Seconds as Prometheus takes them in time= ("1763465360" or "1763465360.5").
std::string PromSeconds(int64_t ms);

}  // namespace ww::fleet
