// FleetQuery: the fleet's one I/O seam towards Prometheus (or Thanos/Mimir behind the same HTTP
// API). A cycle asks for the DCGM series of ALL GPUs at once over the samples new since the last
// cycle: per time chunk, a host listing and one range query per page of hosts, a regex on
// __name__, never one query per GPU.
//
// The query is a range-vector selector, `{__name__=~"NAME|..."}[RANGE]` (the names of the DCGM
// field table, telemetry/fields.h), evaluated at the chunk's end (/api/v1/query), which returns
// the raw samples as scraped, with their own timestamps. Not /api/v1/query_range: that
// resamples onto a grid and repeats a series' last value for up to 5 minutes (the lookback
// delta) across a hole, so a Prometheus restart or a missed scrape would read as minutes of
// flat telemetry, which is what a hang looks like. Raw samples keep a hole a hole.
//
// Paging: the answer for ALL hosts at once would grow without bound with the fleet (and the
// decoder takes at most 4096 hosts in one answer), so each range is read in pages of hosts. A
// cheap instant query first lists the hosts with samples in the range, `group by (Hostname,
// hostname, instance) (count_over_time(M{...}[RANGE]) or ...)` (one count per DCGM metric: a
// range function over a regex on __name__ would give duplicate label sets); then one request
// per page of at most max_hosts_per_page() hosts (kMaxHostsPerPage, and 24 KiB of regex so the
// URL stays under what proxies take) selects them by a regex on the label that names them. The
// pages are merged into one batch (hosts renumbered), so a job spread over pages is judged
// whole, in time order.
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
  int64_t hosts_listed = 0;   // hosts the listing query named
  int64_t pages = 0;          // page requests answered
  int64_t spacing_ms = 0;     // median spacing of a GPU's samples (the scrape interval); 0: unknown
  double server_seconds = 0;  // waiting for the answer (Prometheus and the network)
};

class FleetQuery {
 public:
  virtual ~FleetQuery() = default;
  // The raw samples of every matching GPU stamped start_ms..end_ms (end_ms > start_ms; whether
  // start_ms itself is in depends on the server's version: callers overlap and drop repeats).
  // One listing request, then one per page of hosts (PromFleetQuery). An empty batch when
  // nothing matched (no GPU scraped: not an error).
  // Unavailable when no answer came or the server is overloaded (5xx, 429): worth a retry.
  // InvalidInput when the server refused the query (4xx) or the answer is not an API response.
  // IoError when an answer came but cannot be used: DCGM series that decode to no sample
  // (timestamps as strings, ...), an instant vector to the range query, more hosts than a page
  // asked for, more than 65,535 hosts in all. Never an empty success.
  virtual Result<FleetBatch> Samples(int64_t start_ms, int64_t end_ms) = 0;
  virtual const std::string& url() const = 0;
  // The series labels to keep per GPU in FleetBatch::labels besides the host (the job labels):
  // the service sets them from --job-label before the first Samples().
  virtual void KeepLabels(const std::vector<std::string>& names) { (void)names; }
};

class PromFleetQuery final : public FleetQuery {
 public:
  // matchers: extra label matchers ("{cluster=\"a\"}"), or empty. vendor: whose exporter's
  // series to read (ingest::VendorMetricRegex).
  PromFleetQuery(ingest::PromHttp* http, Clock* clock, const std::string& matchers,
                 const std::string& vendor = "nvidia");

  Result<FleetBatch> Samples(int64_t start_ms, int64_t end_ms) override;
  const std::string& url() const override { return http_->url(); }
  void KeepLabels(const std::vector<std::string>& names) override;

  // The selector of every request, without its [RANGE] and host matchers (for messages).
  const std::string& selector() const { return selector_; }
  // Hosts per page request (tests make it small).
  static constexpr size_t kMaxHostsPerPage = 500;
  void set_max_hosts_per_page(size_t n) { max_hosts_per_page_ = n < 1 ? 1 : n; }
  size_t max_hosts_per_page() const { return max_hosts_per_page_; }

 private:
  // One GET of an answer that must be a JSON document; 429/5xx are Unavailable, other non-200
  // statuses InvalidInput.
  Result<std::string> GetBody(const std::string& path,
                              const std::multimap<std::string, std::string>& params,
                              const std::string& what, double* server_seconds);
  // The host-label matchers of each page ("Hostname=~\"a|b\"") for the range ending at end_ms.
  Result<std::vector<std::string>> HostPages(const std::string& range, int64_t end_ms,
                                             FleetBatch* batch);
  // One page's raw samples, decoded into *page (hosts numbered for the page).
  Status GetPage(const std::string& query, int64_t end_ms, const std::string& what,
                 size_t max_hosts, FleetBatch* page);

  ingest::PromHttp* http_;
  Clock* clock_;
  std::string matchers_;  // the extra matchers, "" or "cluster=\"a\""
  std::string metrics_;   // the vendor's series names, a regex alternation
  std::string selector_;
  std::vector<std::string> kept_labels_ = ingest::DcgmScrapeDecoder::DefaultKeptLabels();
  size_t max_hosts_per_page_ = kMaxHostsPerPage;
};

// "{a=\"b\"}" -> "a=\"b\""; InvalidInput naming --selector when it is not in braces.
Result<std::string> SelectorMatchers(const std::string& selector);

// Seconds as Prometheus takes them in time= ("1763465360" or "1763465360.5").
std::string PromSeconds(int64_t ms);

}  // namespace ww::fleet
