// Reads the DCGM series of a time range from a Prometheus server (or Thanos/Mimir behind the
// same HTTP API) for `triage --prometheus URL`: a few /api/v1/query_range requests for all
// GPUs at once (one query, a regex on __name__), split into ranges under the server's 11,000
// points per series, decoded by PromJsonDecoder (prom_json.h). Without a step, the step is the
// series' own scrape interval: the median spacing of raw samples from an instant query of a
// range vector (the power draw series, {...}[W]), so every stored sample is read once.
// The HTTP transport is the PromHttp seam; MakePromHttp gives cpp-httplib (http and https).
// Ownership: the caller owns the returned client and source. Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "telemetry/source.h"

namespace ww::ingest {

struct HttpReply {
  int status = 0;
  std::string body;
};

class PromHttp {
 public:
  virtual ~PromHttp() = default;
  // GET base URL + path with the (unencoded) parameters. A non-ok Status only when no answer
  // came (unreachable, timeout, TLS); HTTP errors are replies.
  virtual Result<HttpReply> Get(const std::string& path,
                                const std::multimap<std::string, std::string>& params) = 0;
  virtual const std::string& url() const = 0;
};

struct PromHttpOptions {
  std::vector<std::pair<std::string, std::string>> headers;  // --prometheus-header
  int64_t timeout_ms = 60000;  // each request's total deadline (connect to the body's last byte)
  size_t max_body_bytes = size_t{256} << 20;  // after decompression (http_fetch.h)
};

// url: http(s)://host[:port][/path prefix]. InvalidInput for a URL that is not one.
Result<std::unique_ptr<PromHttp>> MakePromHttp(const std::string& url,
                                               const PromHttpOptions& options);

// "Name: value" (--prometheus-header) into a pair; InvalidInput naming the flag otherwise.
Status ParseHeaderFlag(std::string_view flag,
                       std::vector<std::pair<std::string, std::string>>* out);
// A token file (--prometheus-token-file): "Authorization: Bearer <first line>".
Status ReadTokenFile(const std::string& path,
                     std::vector<std::pair<std::string, std::string>>* out);

// RFC 3339 ("2026-11-18T11:29:20Z", "...+02:00") or Unix seconds ("1763465360", "1763465360.5").
Result<int64_t> ParsePromTimeMs(std::string_view text);
// Prometheus durations ("15s", "1m30s", "500ms", "1h") or plain seconds ("15", "0.5").
Result<int64_t> ParsePromDurationMs(std::string_view text);
// A query_range step Prometheus accepts: "15s" for whole seconds, float seconds ("0.5", "1.25")
// otherwise.
std::string PromStepParam(int64_t ms);

struct PromRangeQuery {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::string selector;                   // "{job=\"dcgm\",Hostname=~\"node.*\"}" or empty
  int64_t step_ms = 0;                    // 0: the series' own scrape interval
  int64_t max_points_per_series = 10000;  // per request; Prometheus refuses over 11,000
  // Whose exporter stored the series: "nvidia" (dcgm-exporter's DCGM_FI_*), "amd"
  // (device-metrics-exporter) or "gaudi" (habanalabs_*): the other vendors' series of
  // ExporterSeries (telemetry/fields.h), read as their DCGM rows, units converted.
  std::string vendor = "nvidia";
};

struct PromFetched {
  std::unique_ptr<TelemetrySource> source;
  std::string description;  // what was read, for the summary header
  int64_t step_ms = 0;
  int requests = 0;
};

// Every field of the DCGM field table (telemetry/fields.h), which the readers read, as a regex
// alternation for __name__: a field added to the table is fetched.
std::string DcgmMetricRegex();
// The same for a vendor of PromRangeQuery::vendor ("nvidia": DcgmMetricRegex()).
std::string VendorMetricRegex(std::string_view vendor);
// The vendors --prometheus-vendor takes.
inline constexpr const char* kPromVendors[] = {"nvidia", "amd", "gaudi"};

Result<PromFetched> FetchDcgmRange(PromHttp& http, const PromRangeQuery& query);

}  // namespace ww::ingest
