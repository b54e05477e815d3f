#include "telemetry/ingest/prom_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/env.h"
#include "core/stats.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/fields.h"
#include "telemetry/ingest/http_fetch.h"
#include "telemetry/ingest/prom_json.h"
#include "telemetry/ingest/text.h"

namespace ww::ingest {
namespace {

using nlohmann::json;

// The series a range is read by (its raw spacing is the scrape interval): power draw's.
std::string PowerSeriesName(std::string_view vendor) {
  const char* dcgm = DcgmFieldOf(&GpuSample::power_w).name;
  for (const ExporterSeriesDef& s : ExporterSeries()) {
    if (vendor == s.vendor && std::string_view(s.dcgm_name) == dcgm) return s.name;
  }
  return dcgm;
}
std::string PowerSeriesMatcher(std::string_view vendor) {
  return fmt::format("__name__=\"{}\"", PowerSeriesName(vendor));
}

class HttplibProm final : public PromHttp {
 public:
  HttplibProm(std::string url, const std::string& scheme_host_port, std::string prefix,
              const PromHttpOptions& options)
      : url_(std::move(url)), prefix_(std::move(prefix)), client_(scheme_host_port) {
    limits_.total_timeout_ms = options.timeout_ms;
    limits_.max_body_bytes = options.max_body_bytes;
    for (const auto& [k, v] : options.headers) headers_.emplace(k, v);
    const auto s = std::chrono::milliseconds(options.timeout_ms);
    client_.set_connection_timeout(
        std::min<std::chrono::milliseconds>(s, std::chrono::milliseconds(10000)));
    client_.set_read_timeout(s);
    client_.set_write_timeout(s);
  }

  Result<HttpReply> Get(const std::string& path,
                        const std::multimap<std::string, std::string>& params) override {
    httplib::Params p(params.begin(), params.end());
    Result<HttpFetched> res = BoundedGet(client_, prefix_ + path, p, headers_, limits_,
                                         fmt::format("Prometheus at {}", url_));
    if (!res.ok()) {
      if (res.status().code() == StatusCode::kUnavailable) {
        return Status::Unavailable("cannot reach " + res.status().message());
      }
      return res.status();
    }
    return HttpReply{res->status, std::move(res->body)};
  }
  const std::string& url() const override { return url_; }

 private:
  std::string url_;
  std::string prefix_;
  httplib::Headers headers_;
  HttpFetchLimits limits_;
  httplib::Client client_;
};

std::string SecondsParam(int64_t ms) {
  if (ms % 1000 == 0) return fmt::format("{}", ms / 1000);
  return fmt::format("{}.{:03d}", ms / 1000, ms % 1000);
}

}  // namespace

std::string PromStepParam(int64_t ms) {
  // Prometheus takes a step as a duration of whole units ("15s", "500ms") or as float seconds
  // ("0.5"); "0.500s" is neither and answers HTTP 400.
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  std::string s = fmt::format("{}.{:03d}", ms / 1000, ms % 1000);
  while (s.back() == '0') s.pop_back();
  return s;
}

namespace {

// The server's own words for a failed request: {"status":"error","errorType":..,"error":..}.
Status HttpError(const PromHttp& http, const std::string& what, const HttpReply& reply) {
  json j = json::parse(reply.body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error")) {
    const auto str = [&](const char* k) {
      return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string("?");
    };
    return Status::InvalidInput(
        fmt::format("Prometheus at {} refused {} (HTTP {}, {}): {}", http.url(), what, reply.status,
                    EscapeForTerminal(str("errorType"), 100), EscapeForTerminal(str("error"))));
  }
  return Status::InvalidInput(fmt::format("Prometheus at {} refused {} (HTTP {}): {}", http.url(),
                                          what, reply.status, EscapeForTerminal(reply.body, 200)));
}

Result<json> GetJson(PromHttp& http, const std::string& path,
                     const std::multimap<std::string, std::string>& params,
                     const std::string& what) {
  auto reply = http.Get(path, params);
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) return HttpError(http, what, *reply);
  json j = json::parse(reply->body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidInput(fmt::format("{}{}: {} answer is not JSON: '{}'", http.url(), path,
                                            what, Excerpt(reply->body, 100)));
  }
  const auto status = j.find("status");
  if (status == j.end() || !status->is_string() || *status != "success") {
    return HttpError(http, what, *reply);
  }
  // Every reader below indexes j["data"]: a peer's "data" of another type must not throw.
  if (const auto data = j.find("data");
      data != j.end() && !data->is_object() && !data->is_array()) {
    return Status::InvalidInput(
        fmt::format("{}{}: {} answer has a \"data\" that is neither an "
                    "object nor a list",
                    http.url(), path, what));
  }
  return j;
}

std::string Matchers(const std::string& selector) {
  std::string_view s = TrimSpace(selector);
  if (s.size() >= 2 && s.front() == '{' && s.back() == '}') s = s.substr(1, s.size() - 2);
  return std::string(TrimSpace(s));
}

std::string WithSelector(const std::string& base_matcher, const std::string& inner) {
  return inner.empty() ? "{" + base_matcher + "}" : "{" + base_matcher + "," + inner + "}";
}

// Median spacing of raw samples in a range vector at `at_ms` over `window_ms`; 0 when none.
Result<int64_t> RawSpacingMs(PromHttp& http, const std::string& inner, std::string_view vendor,
                             int64_t at_ms, int64_t window_ms, int* requests) {
  const std::string q = WithSelector(PowerSeriesMatcher(vendor), inner) +
                        fmt::format("[{}ms]", std::max<int64_t>(window_ms, 1000));
  ++*requests;
  auto j = GetJson(http, "/api/v1/query", {{"query", q}, {"time", SecondsParam(at_ms)}},
                   "the scrape-interval query " + q);
  if (!j.ok()) return j.status();
  std::vector<double> medians;
  const json& data = (*j)["data"];
  if (!data.is_object() || !data.contains("result") || !data["result"].is_array())
    return int64_t{0};
  const json& result = data["result"];
  for (const auto& series : result) {
    if (!series.contains("values") || !series["values"].is_array()) continue;
    const json& v = series["values"];
    std::vector<double> d;
    for (size_t i = 1; i < v.size(); ++i) {
      if (!v[i].is_array() || !v[i - 1].is_array() || v[i].empty() || v[i - 1].empty() ||
          !v[i][0].is_number() || !v[i - 1][0].is_number())
        continue;
      d.push_back(v[i][0].get<double>() * 1000 - v[i - 1][0].get<double>() * 1000);
    }
    if (!d.empty()) medians.push_back(Percentile(d, 0.5));
  }
  if (medians.empty()) return int64_t{0};
  // Scrape timestamps jitter by a few ms (1001, 998, ...); a step of 1001 ms would drift a
  // second in every 1,000 and read some samples twice. Intervals are configured in round
  // numbers: to 10 ms from 100 ms up.
  const double median = Percentile(medians, 0.5);
  const int64_t step = median >= 100 ? std::llround(median / 10) * 10 : std::llround(median);
  return std::max<int64_t>(1, step);
}

Status NoSeriesError(PromHttp& http, const PromRangeQuery& q, const std::string& query) {
  std::string names;
  auto j =
      GetJson(http, "/api/v1/label/__name__/values",
              {{"match[]", q.vendor == "nvidia"
                               ? fmt::format("{{__name__=~\"{}.*\"}}", kDcgmFieldPrefix)
                               : fmt::format("{{__name__=~\"{}\"}}", VendorMetricRegex(q.vendor))},
               {"start", SecondsParam(q.start_ms)},
               {"end", SecondsParam(q.end_ms)}},
              "label values");
  size_t count = 0;
  if (j.ok() && (*j)["data"].is_array()) {
    for (const auto& n : (*j)["data"]) {
      if (!n.is_string()) continue;
      if (++count <= 8)
        names +=
            (names.empty() ? "" : ", ") + EscapeForTerminal(n.get_ref<const std::string&>(), 100);
    }
  }
  std::string have;
  if (count == 0) {
    have = fmt::format(
        "the server has no {}* series in that range (is dcgm-exporter scraped? is the range "
        "right?)",
        kDcgmFieldPrefix);
  } else {
    have = fmt::format("the server has {} DCGM metrics in that range ({}{})", count, names,
                       count > 8 ? ", ..." : "");
    auto s = GetJson(http, "/api/v1/series",
                     {{"match[]", "{" + PowerSeriesMatcher(q.vendor) + "}"},
                      {"start", SecondsParam(q.start_ms)},
                      {"end", SecondsParam(q.end_ms)}},
                     "series");
    if (s.ok() && (*s)["data"].is_array() && !(*s)["data"].empty()) {
      std::string labels;
      const json& first = (*s)["data"][0];
      if (first.is_object()) {
        for (const auto& [k, v] : first.items()) {
          if (k == "__name__" || !v.is_string()) continue;
          labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", k, v.get<std::string>());
        }
      }
      have += fmt::format("; {} {} series, e.g. {{{}}}", (*s)["data"].size(),
                          PowerSeriesName(q.vendor), EscapeForTerminal(labels, 300));
    }
  }
  return Status::InvalidInput(fmt::format("no DCGM series matched {} at {} between {} and {}; {}",
                                          query, http.url(), FormatIsoMs(q.start_ms, true),
                                          FormatIsoMs(q.end_ms, true), have));
}

}  // namespace

Result<std::unique_ptr<PromHttp>> MakePromHttp(const std::string& url,
                                               const PromHttpOptions& options) {
  const size_t scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidInput(fmt::format(
        "--prometheus '{}': expected http://HOST:PORT or https://HOST:PORT[/PATH]", url));
  }
  const size_t path_at = url.find('/', scheme_end + 3);
  const std::string hostport = path_at == std::string::npos ? url : url.substr(0, path_at);
  std::string prefix = path_at == std::string::npos ? "" : url.substr(path_at);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (hostport.size() <= scheme_end + 3) {
    return Status::InvalidInput(fmt::format("--prometheus '{}': no host", url));
  }
  return std::unique_ptr<PromHttp>(new HttplibProm(url, hostport, prefix, options));
}

Status ParseHeaderFlag(std::string_view flag,
                       std::vector<std::pair<std::string, std::string>>* out) {
  const size_t colon = flag.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidInput(
        fmt::format("--prometheus-header '{}': expected 'Name: value'", Excerpt(flag, 40)));
  }
  out->emplace_back(std::string(TrimSpace(flag.substr(0, colon))),
                    std::string(TrimSpace(flag.substr(colon + 1))));
  return Status::Ok();
}

Status ReadTokenFile(const std::string& path,
                     std::vector<std::pair<std::string, std::string>>* out) {
  // Through Env: a regular file of at most 64 KiB, so /dev/zero or a FIFO is refused at once
  // instead of read forever.
  constexpr uint64_t kMaxTokenFileBytes = 64 << 10;
  auto text = DefaultEnv()->ReadFileToString(path, kMaxTokenFileBytes);
  if (!text.ok()) {
    // The message starts with the path.
    return Status::InvalidInput("--prometheus-token-file " + text.status().message());
  }
  const std::string_view all = *text;
  std::string token(TrimSpace(all.substr(0, all.find('\n'))));
  if (token.empty()) {
    return Status::InvalidInput(fmt::format("--prometheus-token-file {}: empty", path));
  }
  out->emplace_back("Authorization", "Bearer " + token);
  return Status::Ok();
}

Result<int64_t> ParsePromTimeMs(std::string_view text) {
  const std::string_view t = TrimSpace(text);
  if (!t.empty() &&
      std::all_of(t.begin(), t.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    double s = 0;
    if (ParseNumber(t, &s) == Parse::kOk && s >= 0 && s < 7258118400.0) {
      return static_cast<int64_t>(std::llround(s * 1000));
    }
  }
  if (auto p = ParseTimestamp(t); p && t.find('T') != std::string_view::npos) return p->unix_ms;
  return Status::InvalidInput(
      fmt::format("'{}' is not a time: expected RFC 3339 (2026-11-18T11:29:20Z) or Unix seconds",
                  Excerpt(t, 40)));
}

Result<int64_t> ParsePromDurationMs(std::string_view text) {
  const std::string_view t = TrimSpace(text);
  double plain = 0;
  if (ParseNumber(t, &plain) == Parse::kOk &&
      t.find_first_not_of("0123456789.") == std::string_view::npos) {
    if (plain > 0) return static_cast<int64_t>(std::llround(plain * 1000));
  }
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}, {"w", 604800000}};
  int64_t total = 0;
  size_t i = 0;
  while (i < t.size()) {
    size_t j = i;
    while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j;
    if (j == i || j - i > 12) break;
    const int64_t n = std::stoll(std::string(t.substr(i, j - i)));
    bool matched = false;
    for (const auto& [unit, ms] : kUnits) {
      const std::string_view u(unit);
      if (t.substr(j, u.size()) == u && !(u == "m" && t.substr(j, 2) == "ms")) {
        total += n * ms;
        i = j + u.size();
        matched = true;
        break;
      }
    }
    if (!matched) {
      i = std::string_view::npos;
      break;
    }
  }
  if (i == t.size() && total > 0) return total;
  return Status::InvalidInput(
      fmt::format("'{}' is not a duration: expected 15s, 1m30s, 500ms or seconds", Excerpt(t, 40)));
}

std::string DcgmMetricRegex() {
  std::string out;
  for (const DcgmFieldDef& f : DcgmFields()) {
    if (!out.empty()) out += '|';
    out +=
        f.name;  // appended in place: a temporary "|" + name gave GCC 12 -O2 a -Wrestrict warning
  }
  return out;
}

std::string VendorMetricRegex(std::string_view vendor) {
  if (vendor == "nvidia") return DcgmMetricRegex();
  std::string out;
  for (const ExporterSeriesDef& s : ExporterSeries()) {
    if (vendor != s.vendor) continue;
    if (!out.empty()) out += '|';
    out += s.name;
  }
  return out;
}

Result<PromFetched> FetchDcgmRange(PromHttp& http, const PromRangeQuery& q) {
  if (VendorMetricRegex(q.vendor).empty()) {
    return Status::InvalidInput(
        fmt::format("--prometheus-vendor '{}': expected nvidia, amd or gaudi",
                    EscapeForTerminal(q.vendor, 40)));
  }
  if (q.end_ms <= q.start_ms) {
    return Status::InvalidInput(fmt::format("--end ({}) must be after --start ({})",
                                            FormatIsoMs(q.end_ms, true),
                                            FormatIsoMs(q.start_ms, true)));
  }
  const std::string inner = Matchers(q.selector);
  if (!q.selector.empty() && TrimSpace(q.selector).front() != '{') {
    return Status::InvalidInput(fmt::format(
        "--selector '{}': expected label matchers in braces, e.g. '{{job=\"dcgm\"}}'", q.selector));
  }
  PromFetched out;
  int64_t step_ms = q.step_ms;
  const int64_t range_ms = q.end_ms - q.start_ms;
  if (step_ms <= 0) {
    // Raw samples near the end, then near the start, then over the whole range.
    const int64_t w = std::min<int64_t>(range_ms, 10 * 60 * 1000);
    for (const auto& [at, window] :
         {std::pair{q.end_ms, w}, std::pair{q.start_ms + w, w}, std::pair{q.end_ms, range_ms}}) {
      auto s = RawSpacingMs(http, inner, q.vendor, at, window, &out.requests);
      if (!s.ok()) return s.status();
      if (*s > 0) {
        step_ms = *s;
        break;
      }
    }
    if (step_ms <= 0) {
      const std::string sel = WithSelector(PowerSeriesMatcher(q.vendor), inner);
      // One sample per series only: the spacing cannot be found, so ask for a step.
      auto probe =
          GetJson(http, "/api/v1/query",
                  {{"query", "count(" + sel + ")"}, {"time", SecondsParam(q.end_ms)}}, "count");
      const json* probe_data = probe.ok() ? &(*probe)["data"] : nullptr;
      if (probe_data != nullptr && probe_data->is_object() && probe_data->contains("result") &&
          !(*probe_data)["result"].empty()) {
        return Status::InvalidInput(
            "cannot find the scrape interval (one sample per series); pass --step");
      }
      return NoSeriesError(http, q, sel);
    }
  }
  const std::string query =
      WithSelector("__name__=~\"" + VendorMetricRegex(q.vendor) + "\"", inner);
  PromJsonDecoder decoder;
  const int64_t per_request = std::max<int64_t>(1, q.max_points_per_series - 1) * step_ms;
  for (int64_t from = q.start_ms; from <= q.end_ms; from += per_request + step_ms) {
    const int64_t to = std::min(q.end_ms, from + per_request);
    auto reply = http.Get("/api/v1/query_range", {{"query", query},
                                                  {"start", SecondsParam(from)},
                                                  {"end", SecondsParam(to)},
                                                  {"step", PromStepParam(step_ms)}});
    ++out.requests;
    if (!reply.ok()) return reply.status();
    if (reply->status != 200) return HttpError(http, "the query_range request", *reply);
    WW_RETURN_IF_ERROR(decoder.AddDocuments(
        reply->body, fmt::format("{}/api/v1/query_range [{}, {}]", http.url(),
                                 FormatIsoMs(from, true), FormatIsoMs(to, true))));
  }
  if (decoder.dcgm_series() == 0) return NoSeriesError(http, q, query);
  auto src = decoder.Finish("prometheus");
  if (!src.ok()) return Status::InvalidInput(http.url() + ": " + src.status().message());
  out.source = std::move(*src);
  out.step_ms = step_ms;
  out.description = fmt::format("{} ({} request(s), step {} s{}): {}", http.url(), out.requests,
                                SecondsParam(step_ms), q.step_ms > 0 ? "" : ", the scrape interval",
                                decoder.Describe());
  return out;
}

}  // namespace ww::ingest
