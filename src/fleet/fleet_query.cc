#include "fleet/fleet_query.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/stats.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/prom_json.h"
#include "telemetry/ingest/text.h"

namespace ww::fleet {
namespace {

// A peer's body in a message: newlines and terminal escapes written as escapes, valid UTF-8.
std::string Excerpt(const std::string& s, size_t n) { return ingest::EscapeForTerminal(s, n); }

}  // namespace

std::string PromSeconds(int64_t ms) {
  if (ms % 1000 == 0) return fmt::format("{}", ms / 1000);
  return fmt::format("{}.{:03d}", ms / 1000, std::abs(ms % 1000));
}

Result<std::string> SelectorMatchers(const std::string& selector) {
  const std::string_view s = TrimSpace(selector);
  if (s.empty()) return std::string();
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') {
    return Status::InvalidInput(fmt::format(
        "--selector '{}': expected label matchers in braces, e.g. '{{cluster=\"a\"}}'", selector));
  }
  return std::string(TrimSpace(s.substr(1, s.size() - 2)));
}

PromFleetQuery::PromFleetQuery(ingest::PromHttp* http, Clock* clock, const std::string& matchers)
    : http_(http), clock_(clock) {
  selector_ = "{__name__=~\"" + ingest::DcgmMetricRegex() + "\"" +
              (matchers.empty() ? "" : "," + matchers) + "}";
}

Status PromFleetQuery::GetDecoded(const std::string& path,
                                  const std::multimap<std::string, std::string>& params,
                                  const std::string& what, FleetBatch* batch) {
  const int64_t t0 = clock_->NowMonotonicNs();
  auto reply = http_->Get(path, params);
  batch->server_seconds += static_cast<double>(clock_->NowMonotonicNs() - t0) / 1e9;
  if (!reply.ok()) return Status::Unavailable(reply.status().message());
  if (reply->status == 429 || reply->status >= 500) {
    return Status::Unavailable(fmt::format("Prometheus at {} answered {} HTTP {}: {}", url(), what,
                                           reply->status, Excerpt(reply->body, 200)));
  }
  ingest::PromJsonDecoder decoder;
  decoder.set_kept_labels(kept_labels_);
  // A refusal (4xx) is a JSON error document: the decoder names Prometheus's errorType and error.
  Status st = decoder.AddDocuments(reply->body, fmt::format("{}{} ({})", url(), path, what));
  if (!st.ok()) return Status::InvalidInput(st.message());
  if (reply->status != 200) {
    return Status::InvalidInput(fmt::format("Prometheus at {} refused {} (HTTP {}): {}", url(),
                                            what, reply->status, Excerpt(reply->body, 200)));
  }
  batch->server_warnings += decoder.warnings().Count("server warning (partial data?)");
  batch->series = static_cast<int64_t>(decoder.dcgm_series());
  if (decoder.dcgm_series() == 0) return Status::Ok();  // nothing scraped in the range
  auto src = decoder.Finish("prometheus");
  if (!src.ok()) {
    batch->warnings.push_back(src.status().message());  // series, but no usable points
    return Status::Ok();
  }
  TelemetrySource& s = **src;
  for (;;) {
    const size_t before = batch->samples.size();
    WW_RETURN_IF_ERROR(s.Next(&batch->samples));
    if (batch->samples.size() == before) break;
  }
  batch->hosts = s.hosts();
  batch->infos = s.gpus();
  batch->labels = s.gpu_labels();
  batch->warnings = s.warnings();
  return Status::Ok();
}

void PromFleetQuery::KeepLabels(const std::vector<std::string>& names) {
  kept_labels_.clear();
  for (const std::string& n : names) {
    // The host label is the decoder's own (Hostname, else hostname, else instance).
    if (n != "hostname") kept_labels_.push_back(n);
  }
}

Result<FleetBatch> PromFleetQuery::Samples(int64_t start_ms, int64_t end_ms) {
  FleetBatch batch;
  const std::string q = selector_ + fmt::format("[{}ms]", std::max<int64_t>(1, end_ms - start_ms));
  WW_RETURN_IF_ERROR(GetDecoded("/api/v1/query", {{"query", q}, {"time", PromSeconds(end_ms)}},
                                fmt::format("the samples of [{}, {}]", FormatIsoMs(start_ms, true),
                                            FormatIsoMs(end_ms, true)),
                                &batch));
  // The scrape interval, from the samples themselves: the median spacing of a GPU's samples.
  std::map<std::pair<uint16_t, uint16_t>, int64_t> last;
  std::vector<double> spacings;
  for (const GpuSample& s : batch.samples) {
    auto [it, inserted] = last.try_emplace({s.key.host, s.key.gpu}, s.timestamp_ms);
    if (!inserted && s.timestamp_ms > it->second) {
      spacings.push_back(static_cast<double>(s.timestamp_ms - it->second));
    }
    it->second = s.timestamp_ms;
  }
  if (!spacings.empty()) batch.spacing_ms = std::llround(Percentile(spacings, 0.5));
  return batch;
}

}  // namespace ww::fleet
