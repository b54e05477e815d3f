// FleetQuery: the fleet's one I/O seam towards Prometheus (or Thanos/Mimir behind the same HTTP
// API). A cycle asks for the DCGM series of ALL GPUs at once over the samples new since the last
// cycle (one /api/v1/query_range per time chunk, a regex on __name__, never one query per GPU),
// and once at start for the scrape interval (the step). PromFleetQuery does it over
// ingest::PromHttp and decodes with ingest::PromJsonDecoder, the reader `triage --prometheus`
// uses: the same fields, units, plausible ranges, host and GPU labels, and documented skips.
// Tests substitute a fake FleetQuery (no network) or a fake PromHttp.
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
  double server_seconds = 0;  // waiting for the answer (Prometheus and the network)
};

struct ScrapeInfo {
  int64_t interval_ms = 0;  // 0: fewer than two raw samples of any GPU in the window
  int64_t gpus = 0;         // DCGM_FI_DEV_POWER_USAGE series seen
};

class FleetQuery {
 public:
  virtual ~FleetQuery() = default;
  // The samples of every matching GPU at the grid points start_ms, start_ms + step_ms, ... up to
  // end_ms: one request. An empty batch when nothing matched (no GPU scraped: not an error).
  // Unavailable when no answer came or the server is overloaded (5xx, 429): worth a retry.
  // InvalidInput when the server refused the query (4xx) or the answer is not an API response.
  virtual Result<FleetBatch> Range(int64_t start_ms, int64_t end_ms, int64_t step_ms) = 0;
  // The scrape interval: the median spacing of raw DCGM_FI_DEV_POWER_USAGE samples in the
  // window_ms before at_ms.
  virtual Result<ScrapeInfo> ScrapeInterval(int64_t at_ms, int64_t window_ms) = 0;
  virtual const std::string& url() const = 0;
};

class PromFleetQuery final : public FleetQuery {
 public:
  // selector: extra label matchers ("{cluster=\"a\"}"), or empty.
  PromFleetQuery(ingest::PromHttp* http, Clock* clock, std::string selector);

  Result<FleetBatch> Range(int64_t start_ms, int64_t end_ms, int64_t step_ms) override;
  Result<ScrapeInfo> ScrapeInterval(int64_t at_ms, int64_t window_ms) override;
  const std::string& url() const override { return http_->url(); }

  // The PromQL of the range request (for messages and docs).
  const std::string& range_query() const { return range_query_; }

 private:
  // One GET; decodes the body into *batch (which gets the server time).
  Status GetDecoded(const std::string& path, const std::multimap<std::string, std::string>& params,
                    const std::string& what, FleetBatch* batch);

  ingest::PromHttp* http_;
  Clock* clock_;
  std::string inner_;  // the selector's matchers, without braces
  std::string range_query_;
};

// "{a=\"b\"}" -> "a=\"b\""; InvalidInput naming --selector when it is not in braces.
Result<std::string> SelectorMatchers(const std::string& selector);

// Seconds as Prometheus takes them in start/end/step ("1763465360" or "1763465360.5").
std::string PromSeconds(int64_t ms);

}  // namespace ww::fleet
