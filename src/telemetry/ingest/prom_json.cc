#include "telemetry/ingest/prom_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/stats.h"
#include "core/timefmt.h"
#include "telemetry/ingest/dcgm_exporter.h"

namespace ww::ingest {
namespace {

using nlohmann::json;

constexpr double kMaxUnixS = 7258118400.0;  // 2200-01-01: later is a unit mistake, not a time

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The end of the JSON value starting at text[begin] ('{' or '['): the matching bracket outside
// strings. npos when the text ends first (a truncated document).
size_t ValueEnd(std::string_view text, size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

void AppendEscaped(std::string* out, std::string_view v) {
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

// Prometheus writes sample values as strings: decimal, "NaN", "+Inf", "-Inf".
bool ParseValue(std::string_view s, double* out) {
  if (s == "NaN") {
    *out = std::nan("");
    return true;
  }
  if (s == "+Inf" || s == "Inf") {
    *out = HUGE_VAL;
    return true;
  }
  if (s == "-Inf") {
    *out = -HUGE_VAL;
    return true;
  }
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(*out);
}

void AppendValue(std::string* line, double v) {
  if (std::isnan(v)) {
    line->append("NaN");
  } else if (std::isinf(v)) {
    line->append(v > 0 ? "+Inf" : "-Inf");
  } else {
    fmt::format_to(std::back_inserter(*line), "{}", v);
  }
}

class PromSamplesSource final : public TelemetrySource {
 public:
  PromSamplesSource(std::vector<std::string> hosts, std::vector<GpuSample> samples,
                    std::vector<GpuInfo> infos, std::vector<GpuLabels> labels,
                    std::vector<std::string> warnings)
      : hosts_(std::move(hosts)),
        samples_(std::move(samples)),
        infos_(std::move(infos)),
        labels_(std::move(labels)),
        warnings_(std::move(warnings)) {}

  Status Next(std::vector<GpuSample>* out) override {
    if (next_ >= samples_.size()) return Status::Ok();
    const int64_t ts = samples_[next_].timestamp_ms;
    while (next_ < samples_.size() && samples_[next_].timestamp_ms == ts) {
      out->push_back(samples_[next_++]);
    }
    return Status::Ok();
  }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override { return infos_; }
  std::vector<std::string> warnings() const override { return warnings_; }
  std::vector<GpuLabels> gpu_labels() const override { return labels_; }

 private:
  std::vector<std::string> hosts_;
  std::vector<GpuSample> samples_;
  std::vector<GpuInfo> infos_;
  std::vector<GpuLabels> labels_;
  std::vector<std::string> warnings_;
  size_t next_ = 0;
};

}  // namespace

bool LooksLikePromJson(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (i >= text.size() || text[i] != '{') return false;
  return text.find("\"status\"") != std::string_view::npos &&
         (text.find("\"resultType\"") != std::string_view::npos ||
          text.find("\"errorType\"") != std::string_view::npos);
}

Status PromJsonDecoder::AddDocuments(std::string_view text, const std::string& where) {
  size_t pos = 0;
  int in_text = 0;
  for (;;) {
    while (pos < text.size() && IsSpace(text[pos])) ++pos;
    if (pos >= text.size()) break;
    ++in_text;
    if (text[pos] != '{') {
      return Status::InvalidInput(
          fmt::format("{}: byte {}: expected a Prometheus API response (a JSON object), found '{}'",
                      where, pos, Excerpt(text.substr(pos), 40)));
    }
    const size_t end = ValueEnd(text, pos);
    if (end == std::string_view::npos) {
      return Status::InvalidInput(fmt::format(
          "{}: document {} (byte {}): truncated JSON (the response ends before its closing "
          "brace; was the download cut off?)",
          where, in_text, pos));
    }
    WW_RETURN_IF_ERROR(AddDocument(text.substr(pos, end - pos), where, in_text));
    pos = end;
  }
  if (in_text == 0) return Status::InvalidInput(fmt::format("{}: no JSON document", where));
  return Status::Ok();
}

Status PromJsonDecoder::AddDocument(std::string_view doc, const std::string& where, int doc_index) {
  ++documents_;
  const std::string at = fmt::format("{}: document {}", where, doc_index);
  json j = json::parse(doc.begin(), doc.end(), nullptr, false);
  if (j.is_discarded()) return Status::InvalidInput(at + ": not valid JSON");
  if (!j.is_object() || !j.contains("status") || !j["status"].is_string()) {
    return Status::InvalidInput(at + ": not a Prometheus API response (no \"status\")");
  }
  if (auto w = j.find("warnings"); w != j.end() && w->is_array()) {
    for (const auto& s : *w) {
      if (s.is_string()) warnings_.Add("server warning (partial data?)", s.get<std::string>());
    }
  }
  const std::string status = j["status"].get<std::string>();
  if (status != "success") {
    const auto str = [&](const char* k) {
      auto it = j.find(k);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string("?");
    };
    return Status::InvalidInput(fmt::format("{}: Prometheus answered status \"{}\" ({}): {}", at,
                                            ValidUtf8(status), ValidUtf8(str("errorType")),
                                            ValidUtf8(str("error"))));
  }
  auto data = j.find("data");
  if (data == j.end() || !data->is_object()) {
    return Status::InvalidInput(at + ": no \"data\" object");
  }
  auto type = data->find("resultType");
  auto result = data->find("result");
  if (type == data->end() || !type->is_string() || result == data->end() || !result->is_array()) {
    return Status::InvalidInput(at + ": \"data\" has no resultType and result array");
  }
  const std::string rt = type->get<std::string>();
  if (rt != "matrix" && rt != "vector") {
    return Status::InvalidInput(fmt::format(
        "{}: resultType \"{}\": expected matrix (query_range, or a range vector) or vector", at,
        ValidUtf8(rt)));
  }
  for (size_t r = 0; r < result->size(); ++r) {
    const json& item = (*result)[r];
    const auto metric = item.is_object() ? item.find("metric") : item.end();
    if (!item.is_object() || metric == item.end() || !metric->is_object()) {
      warnings_.Add("result without a metric object skipped", fmt::format("{}, result[{}]", at, r));
      continue;
    }
    auto name_it = metric->find("__name__");
    if (name_it == metric->end() || !name_it->is_string()) {
      warnings_.Add(
          "series without __name__ skipped (save raw DCGM series, not an expression's result)",
          fmt::format("{}, result[{}]", at, r));
      continue;
    }
    const std::string name = name_it->get<std::string>();
    if (name.rfind("DCGM_FI_", 0) != 0) {
      warnings_.Add("non-DCGM series skipped", ValidUtf8(name));
      continue;
    }
    std::string host;
    std::string prefix = name + "{";
    bool first = true;
    for (const char* k : {"Hostname", "hostname", "instance"}) {
      auto h = metric->find(k);
      if (h != metric->end() && h->is_string() && !h->get<std::string>().empty()) {
        host = ValidUtf8(h->get<std::string>());
        ++host_label_counts_[k];
        break;
      }
    }
    bool bad_label = false;
    for (const auto& [k, v] : metric->items()) {
      if (k == "__name__") continue;
      if (!v.is_string()) {
        bad_label = true;
        break;
      }
      if (!first) prefix.push_back(',');
      first = false;
      prefix += k;
      prefix += "=\"";
      AppendEscaped(&prefix, v.get<std::string>());
      prefix.push_back('"');
    }
    if (bad_label) {
      warnings_.Add("series with a non-string label value skipped",
                    fmt::format("{}, result[{}]", at, r));
      continue;
    }
    prefix += "} ";
    auto [sit, inserted] = series_index_.try_emplace(host + '\n' + prefix, series_.size());
    if (inserted) {
      Series s;
      s.host = host;
      s.line_prefix = prefix;
      s.name = name.substr(8);
      auto gpu = metric->find("gpu");
      if (gpu != metric->end() && gpu->is_string() && !metric->contains("GPU_I_ID")) {
        s.short_prefix = name + "{gpu=\"";
        AppendEscaped(&s.short_prefix, gpu->get<std::string>());
        s.short_prefix += "\"} ";
      }
      series_.push_back(std::move(s));
    }
    Series& s = series_[sit->second];
    const auto add_point = [&](const json& p, size_t index) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string()) {
        warnings_.Add("point that is not [unix_seconds, \"value\"] skipped",
                      fmt::format("{}, {}, point {}", at, name, index));
        return;
      }
      const double t = p[0].get<double>();
      if (!(t >= 0 && t < kMaxUnixS)) {
        warnings_.Add("point with a timestamp outside 1970..2200 skipped",
                      fmt::format("{}, {}, point {}: {}", at, name, index, t));
        return;
      }
      double v = 0;
      const std::string& vs = p[1].get_ref<const std::string&>();
      if (!ParseValue(vs, &v)) {
        warnings_.Add("point with a value that is not a number skipped",
                      fmt::format("{}, {}, point {}: '{}'", at, name, index, Excerpt(vs, 30)));
        return;
      }
      const int64_t ts_ms = std::llround(t * 1000);
      if (!s.points.empty() && ts_ms < s.points.back().ts_ms) s.unsorted = true;
      s.points.push_back(Point{ts_ms, v});
    };
    if (rt == "matrix") {
      auto values = item.find("values");
      if (values == item.end() || !values->is_array()) {
        warnings_.Add("series without a values array skipped",
                      fmt::format("{}, result[{}] ({})", at, r, name));
        continue;
      }
      for (size_t i = 0; i < values->size(); ++i) add_point((*values)[i], i);
    } else {
      auto value = item.find("value");
      if (value == item.end()) {
        warnings_.Add("series without a value skipped",
                      fmt::format("{}, result[{}] ({})", at, r, name));
        continue;
      }
      add_point(*value, 0);
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<TelemetrySource>> PromJsonDecoder::Finish(const std::string& default_host) {
  // Hosts in name order; series without a host label are the default host.
  std::map<std::string, std::vector<size_t>> by_host;
  size_t points = 0;
  std::set<std::string> fields;
  std::vector<double> spacings_ms;
  for (size_t i = 0; i < series_.size(); ++i) {
    Series& s = series_[i];
    if (s.unsorted) {
      warnings_.Add("out-of-order points sorted", s.line_prefix.substr(0, 80));
      std::stable_sort(s.points.begin(), s.points.end(),
                       [](const Point& a, const Point& b) { return a.ts_ms < b.ts_ms; });
    }
    // Overlapping documents (a range fetched twice, split ranges sharing an end): one point
    // per timestamp, the first one read.
    size_t kept = 0;
    for (size_t p = 0; p < s.points.size(); ++p) {
      if (kept > 0 && s.points[p].ts_ms == s.points[kept - 1].ts_ms) {
        warnings_.Add("duplicate timestamp skipped",
                      fmt::format("{}at {}", s.line_prefix, FormatIsoMs(s.points[p].ts_ms, true)));
        continue;
      }
      s.points[kept++] = s.points[p];
    }
    s.points.resize(kept);
    if (s.points.empty()) continue;
    if (s.points.size() >= 2 && spacings_ms.size() < 64) {
      std::vector<double> d;
      for (size_t p = 1; p < s.points.size() && p < 512; ++p) {
        d.push_back(static_cast<double>(s.points[p].ts_ms - s.points[p - 1].ts_ms));
      }
      spacings_ms.push_back(Percentile(d, 0.5));
    }
    points += s.points.size();
    fields.insert(s.name);
    by_host[s.host.empty() ? default_host : s.host].push_back(i);
  }
  if (by_host.empty()) {
    return Status::InvalidInput(
        series_.empty() ? "no DCGM_FI_* series in the response"
                        : fmt::format("{} DCGM series but no usable points", series_.size()));
  }
  if (by_host.size() > 4096) return Status::InvalidInput("more than 4096 hosts");

  std::vector<std::string> hosts;
  std::vector<GpuSample> samples;
  samples.reserve(points / std::max<size_t>(fields.size(), 1) + 16);
  std::vector<GpuInfo> infos;
  std::vector<GpuLabels> labels;
  struct Event {
    int64_t ts_ms;
    uint32_t series;
    uint32_t point;
  };
  std::vector<Event> events;
  std::string line;
  for (const auto& [host, indices] : by_host) {
    const auto host_index = static_cast<uint16_t>(hosts.size());
    hosts.push_back(host);
    events.clear();
    for (size_t i : indices) {
      for (size_t p = 0; p < series_[i].points.size(); ++p) {
        events.push_back(
            Event{series_[i].points[p].ts_ms, static_cast<uint32_t>(i), static_cast<uint32_t>(p)});
      }
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return a.ts_ms != b.ts_ms ? a.ts_ms < b.ts_ms : a.series < b.series;
    });
    DcgmScrapeDecoder decoder(host_index);
    std::set<uint32_t> skip_warned;
    for (size_t e = 0; e < events.size();) {
      const int64_t ts = events[e].ts_ms;
      for (; e < events.size() && events[e].ts_ms == ts; ++e) {
        Series& s = series_[events[e].series];
        line.assign(s.primed && !s.short_prefix.empty() ? s.short_prefix : s.line_prefix);
        AppendValue(&line, s.points[events[e].point].value);
        std::string why;
        switch (decoder.Line(line, &why)) {
          case DcgmScrapeDecoder::LineResult::kRead:
            s.primed = true;  // its full labels resolved to a GPU: the short block may follow
            break;
          case DcgmScrapeDecoder::LineResult::kIgnored:
          case DcgmScrapeDecoder::LineResult::kNewTimestamp:
            break;
          case DcgmScrapeDecoder::LineResult::kRepeated:
            warnings_.Add("a second series for one GPU and field at one time skipped",
                          fmt::format("{}at {}", s.line_prefix, FormatIsoMs(ts, true)));
            break;
          case DcgmScrapeDecoder::LineResult::kSkipped:
            if (skip_warned.insert(events[e].series).second) {
              warnings_.Add(why, s.line_prefix.substr(0, 120));
            }
            break;
          case DcgmScrapeDecoder::LineResult::kMalformed:
            warnings_.Add("implausible value skipped",
                          fmt::format("{}at {}: {}", s.line_prefix, FormatIsoMs(ts, true), why));
            break;
        }
      }
      decoder.End(ts, &samples);
    }
    for (const auto& [gpu, info] : decoder.infos()) infos.push_back(info);
    for (const auto& [gpu, l] : decoder.labels()) labels.push_back(GpuLabels{{host_index, gpu}, l});
  }
  if (samples.empty()) return Status::InvalidInput("no usable DCGM samples in the response");
  std::stable_sort(samples.begin(), samples.end(), [](const GpuSample& a, const GpuSample& b) {
    return a.timestamp_ms != b.timestamp_ms ? a.timestamp_ms < b.timestamp_ms : a.key < b.key;
  });

  std::string field_list;
  for (const auto& f : fields) field_list += (field_list.empty() ? "" : " ") + f;
  std::string host_label = "none";
  if (!host_label_counts_.empty()) {
    host_label = std::max_element(host_label_counts_.begin(), host_label_counts_.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; })
                     ->first;
  }
  const double step_ms = spacings_ms.empty() ? 0 : Percentile(spacings_ms, 0.5);
  description_ = fmt::format(
      "prometheus-json: {} series ({}), {} point(s) in {} document(s); {} host(s) by label {}; "
      "samples {} apart",
      series_.size(), field_list, points, documents_, hosts.size(), host_label,
      step_ms > 0 ? fmt::format("{:g} s", step_ms / 1000) : std::string("?"));
  std::vector<std::string> warn = warnings_.Render();
  auto src = std::make_unique<PromSamplesSource>(
      std::move(hosts), std::move(samples), std::move(infos), std::move(labels), std::move(warn));
  return std::unique_ptr<TelemetrySource>(std::move(src));
}

Result<OpenedFile> OpenPromJson(std::unique_ptr<LineReader> reader, const std::string& host) {
  std::string text;
  // A saved response is read whole (it is one JSON line); 4 GiB is far over a server's
  // 11,000 points x series.
  WW_RETURN_IF_ERROR(reader->ReadUpTo(size_t{4} << 30, &text));
  PromJsonDecoder decoder;
  WW_RETURN_IF_ERROR(decoder.AddDocuments(text, reader->path()));
  auto src = decoder.Finish(host);
  if (!src.ok()) return Status::InvalidInput(reader->path() + ": " + src.status().message());
  OpenedFile f;
  f.source = std::move(*src);
  f.description = decoder.Describe();
  return f;
}

}  // namespace ww::ingest
