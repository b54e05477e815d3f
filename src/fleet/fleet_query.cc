#include "fleet/fleet_query.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

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

PromFleetQuery::PromFleetQuery(ingest::PromHttp* http, Clock* clock, const std::string& matchers,
                               const std::string& vendor)
    : http_(http), clock_(clock), matchers_(matchers), metrics_(ingest::VendorMetricRegex(vendor)) {
  selector_ = "{__name__=~\"" + metrics_ + "\"" + (matchers.empty() ? "" : "," + matchers) + "}";
}

namespace {

// The labels that name a series' host, in the decoder's order of preference (prom_json.h).
constexpr const char* kHostLabels[] = {"Hostname", "hostname", "instance"};
constexpr size_t kMaxPageRegexBytes = 24 * 1024;
constexpr size_t kMaxHostsPerBatch = 65535;  // GpuKey::host is 16 bits

// name as a PromQL string holding an RE2 regex that matches exactly it.
std::string QuotedRegexLiteral(std::string_view name) {
  std::string re;
  for (char c : name) {
    if (std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos) re.push_back('\\');
    re.push_back(c);
  }
  std::string out;
  for (char c : re) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Result<std::string> PromFleetQuery::GetBody(const std::string& path,
                                            const std::multimap<std::string, std::string>& params,
                                            const std::string& what, double* server_seconds) {
  const int64_t t0 = clock_->NowMonotonicNs();
  auto reply = http_->Get(path, params);
  *server_seconds += static_cast<double>(clock_->NowMonotonicNs() - t0) / 1e9;
  if (!reply.ok()) return Status::Unavailable(reply.status().message());
  if (reply->status == 429 || reply->status >= 500) {
    return Status::Unavailable(fmt::format("Prometheus at {} answered {} HTTP {}: {}", url(), what,
                                           reply->status, Excerpt(reply->body, 200)));
  }
  if (reply->status != 200) {
    // A refusal (4xx) is a JSON error document: the decoder names Prometheus's errorType and
    // error.
    ingest::PromJsonDecoder decoder;
    Status st = decoder.AddDocuments(reply->body, fmt::format("{}{} ({})", url(), path, what));
    if (!st.ok()) return Status::InvalidInput(st.message());
    return Status::InvalidInput(fmt::format("Prometheus at {} refused {} (HTTP {}): {}", url(),
                                            what, reply->status, Excerpt(reply->body, 200)));
  }
  return std::move(reply->body);
}

Result<std::vector<std::string>> PromFleetQuery::HostPages(const std::string& range, int64_t end_ms,
                                                           FleetBatch* batch) {
  std::string q = "group by (Hostname,hostname,instance) (";
  const std::string extra = matchers_.empty() ? "" : "{" + matchers_ + "}";
  const std::string& metrics = metrics_;
  for (std::string_view rest = metrics; !rest.empty();) {
    const size_t bar = rest.find('|');
    q += fmt::format("{}count_over_time({}{}{})", q.back() == '(' ? "" : " or ",
                     rest.substr(0, bar), extra, range);
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  q += ")";
  const std::string what = fmt::format("the hosts of [{}]", FormatIsoMs(end_ms, true));
  auto body = GetBody("/api/v1/query", {{"query", q}, {"time", PromSeconds(end_ms)}}, what,
                      &batch->server_seconds);
  if (!body.ok()) return body.status();
  const auto j = nlohmann::json::parse(*body, nullptr, false);
  const auto unusable = [&](const std::string& why) {
    return Status::IoError(fmt::format("Prometheus at {}: unusable answer to {}: {}: '{}'", url(),
                                       what, why, ingest::ValidUtf8(Excerpt(*body, 120))));
  };
  // A string member, or "" (json::value would throw on another type).
  const auto str = [](const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (j.is_object() && str(j, "status") == "error") {
    return Status::InvalidInput(fmt::format("Prometheus at {} refused {}: {}: {}", url(), what,
                                            ingest::ValidUtf8(str(j, "errorType")),
                                            ingest::ValidUtf8(Excerpt(str(j, "error"), 200))));
  }
  if (!j.is_object() || str(j, "status") != "success" || !j.contains("data") ||
      !j["data"].is_object()) {
    return unusable("not a successful API response");
  }
  const auto& data = j["data"];
  if (str(data, "resultType") != "vector" || !data.contains("result") ||
      !data["result"].is_array()) {
    return unusable("expected an instant vector");
  }
  // Hosts by the label that names them; index 3: series with none of the labels.
  std::set<std::string> by_label[4];
  for (const auto& item : data["result"]) {
    const auto m = item.is_object() ? item.find("metric") : item.end();
    if (m == item.end() || !m->is_object()) return unusable("a result without a metric object");
    size_t k = 0;
    for (; k < 3; ++k) {
      auto v = m->find(kHostLabels[k]);
      if (v != m->end() && v->is_string() && !v->get<std::string>().empty()) {
        by_label[k].insert(v->get<std::string>());
        break;
      }
    }
    if (k == 3) by_label[3].insert("");
  }
  size_t hosts = 0;
  for (const auto& set : by_label) hosts += set.size();
  if (hosts > kMaxHostsPerBatch) {
    return Status::IoError(fmt::format(
        "Prometheus at {} lists {} hosts in [{}]: more than {} in one cycle; split the fleet "
        "with --selector",
        url(), hosts, FormatIsoMs(end_ms, true), kMaxHostsPerBatch));
  }
  batch->hosts_listed += static_cast<int64_t>(hosts);
  std::vector<std::string> pages;
  for (size_t k = 0; k < 3; ++k) {
    // Hosts named by a later label have none of the earlier ones (as the decoder picks).
    std::string prefix;
    for (size_t e = 0; e < k; ++e) prefix += fmt::format("{}=\"\",", kHostLabels[e]);
    std::string regex;
    size_t in_page = 0;
    const auto flush = [&] {
      if (in_page == 0) return;
      pages.push_back(fmt::format("{}{}=~\"{}\"", prefix, kHostLabels[k], regex));
      regex.clear();
      in_page = 0;
    };
    for (const std::string& h : by_label[k]) {
      const std::string lit = QuotedRegexLiteral(h);
      if (in_page >= max_hosts_per_page_ ||
          (in_page > 0 && regex.size() + lit.size() + 1 > kMaxPageRegexBytes)) {
        flush();
      }
      regex += (in_page == 0 ? "" : "|") + lit;
      ++in_page;
    }
    flush();
  }
  if (!by_label[3].empty()) pages.push_back("Hostname=\"\",hostname=\"\",instance=\"\"");
  return pages;
}

Status PromFleetQuery::GetPage(const std::string& query, int64_t end_ms, const std::string& what,
                               size_t max_hosts, FleetBatch* page) {
  auto body = GetBody("/api/v1/query", {{"query", query}, {"time", PromSeconds(end_ms)}}, what,
                      &page->server_seconds);
  if (!body.ok()) return body.status();
  ingest::PromJsonDecoder decoder;
  decoder.set_kept_labels(kept_labels_);
  Status st = decoder.AddDocuments(*body, fmt::format("{}/api/v1/query ({})", url(), what));
  if (!st.ok()) return Status::InvalidInput(st.message());
  std::string().swap(*body);
  const auto unusable = [&](const std::string& why) {
    std::string detail;
    for (const std::string& w : decoder.warnings().Render()) {
      detail += (detail.empty() ? " (" : "; ") + w;
    }
    if (!detail.empty()) detail += ")";
    return Status::IoError(fmt::format("Prometheus at {}: unusable answer to {}: {}{}", url(), what,
                                       why, Excerpt(detail, 400)));
  };
  if (decoder.vector_documents() > 0) {
    return unusable("an instant vector where a range vector of raw samples was asked for");
  }
  page->server_warnings += decoder.warnings().Count("server warning (partial data?)");
  page->series = static_cast<int64_t>(decoder.dcgm_series());
  if (decoder.dcgm_series() == 0) return Status::Ok();  // the hosts went between the two queries
  auto src = decoder.Finish("prometheus");
  if (!src.ok()) return unusable(src.status().message());
  TelemetrySource& s = **src;
  for (;;) {
    const size_t before = page->samples.size();
    WW_RETURN_IF_ERROR(s.Next(&page->samples));
    if (page->samples.size() == before) break;
  }
  page->hosts = s.hosts();
  if (page->hosts.size() > max_hosts) {
    return unusable(
        fmt::format("{} hosts where at most {} were asked for", page->hosts.size(), max_hosts));
  }
  if (page->samples.empty()) return unusable("DCGM series without a usable sample");
  page->infos = s.gpus();
  page->labels = s.gpu_labels();
  page->warnings = s.warnings();
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
  const std::string range = fmt::format("[{}ms]", std::max<int64_t>(1, end_ms - start_ms));
  auto pages = HostPages(range, end_ms, &batch);
  if (!pages.ok()) return pages.status();
  const std::string name_matcher = "__name__=~\"" + metrics_ + "\"";
  for (size_t i = 0; i < pages->size(); ++i) {
    const std::string q = "{" + name_matcher + (matchers_.empty() ? "" : "," + matchers_) + "," +
                          (*pages)[i] + "}" + range;
    const std::string what =
        fmt::format("the samples of [{}, {}] (page {} of {})", FormatIsoMs(start_ms, true),
                    FormatIsoMs(end_ms, true), i + 1, pages->size());
    FleetBatch page;
    WW_RETURN_IF_ERROR(GetPage(q, end_ms, what, max_hosts_per_page_, &page));
    ++batch.pages;
    batch.server_seconds += page.server_seconds;
    batch.server_warnings += page.server_warnings;
    batch.series += page.series;
    const size_t offset = batch.hosts.size();
    if (offset + page.hosts.size() > kMaxHostsPerBatch) {
      return Status::IoError(fmt::format("more than {} hosts in [{}, {}]", kMaxHostsPerBatch,
                                         FormatIsoMs(start_ms, true), FormatIsoMs(end_ms, true)));
    }
    const auto shift = [&](GpuKey k) {
      k.host = static_cast<uint16_t>(k.host + offset);
      return k;
    };
    for (std::string& h : page.hosts) batch.hosts.push_back(std::move(h));
    for (GpuSample& s : page.samples) {
      s.key = shift(s.key);
      batch.samples.push_back(std::move(s));
    }
    for (GpuInfo& g : page.infos) {
      g.key = shift(g.key);
      batch.infos.push_back(std::move(g));
    }
    for (GpuLabels& l : page.labels) {
      l.key = shift(l.key);
      batch.labels.push_back(std::move(l));
    }
    for (std::string& w : page.warnings) batch.warnings.push_back(std::move(w));
  }
  // Each page is in (time, host, GPU) order and the pages in host order: one stable sort by
  // time puts the whole batch in that order, as one answer would be.
  std::stable_sort(
      batch.samples.begin(), batch.samples.end(),
      [](const GpuSample& a, const GpuSample& b) { return a.timestamp_ms < b.timestamp_ms; });
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
