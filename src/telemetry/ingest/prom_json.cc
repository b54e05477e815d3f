// Reads Prometheus API responses (prom_json.h): a hand scan of the plain shape (json_scan.h), the
// DOM path for anything else, and the source that decodes the points one timestamp at a time.
#include "telemetry/ingest/prom_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/stats.h"
#include "core/timefmt.h"
#include "telemetry/fields.h"
#include "telemetry/ingest/dcgm_exporter.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/json_scan.h"

namespace ww::ingest {
namespace {

using nlohmann::json;

constexpr double kMaxUnixS = 7258118400.0;  // 2200-01-01: later is a unit mistake, not a time

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
bool ParsePromJsonValue(std::string_view s, double* out) {
  if (FastDecimal(s.data(), s.data() + s.size(), out)) return true;
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

// One series in the source: resolved once, then its points read in time order.
struct Stream {
  std::string line_prefix;
  std::vector<PromPoint> points;
  size_t next = 0;
  DcgmScrapeDecoder::LineResult resolved = DcgmScrapeDecoder::LineResult::kIgnored;
  DcgmScrapeDecoder::SeriesRef ref;
  std::string why;
  bool warned = false;
};

struct HostStreams {
  std::unique_ptr<DcgmScrapeDecoder> decoder;
  std::vector<Stream> streams;  // series index order: the order a timestamp's points decode in
};

// Decodes one timestamp per Next(), host by host (GPU order within a host), so its batches come
// in (time, host, GPU) order, and warns as it reads (warnings() is complete once drained).
class PromSamplesSource final : public TelemetrySource {
 public:
  PromSamplesSource(std::vector<std::string> hosts, std::vector<HostStreams> streams,
                    std::vector<GpuInfo> infos, std::vector<GpuLabels> labels, Warnings warnings)
      : hosts_(std::move(hosts)),
        by_host_(std::move(streams)),
        infos_(std::move(infos)),
        labels_(std::move(labels)),
        warnings_(std::move(warnings)) {}

  Status Next(std::vector<GpuSample>* out) override {
    const size_t before = out->size();
    while (out->size() == before) {
      int64_t ts = INT64_MAX;
      for (const HostStreams& h : by_host_) {
        for (const Stream& c : h.streams) {
          if (c.next < c.points.size()) ts = std::min(ts, c.points[c.next].ts_ms);
        }
      }
      if (ts == INT64_MAX) return Status::Ok();
      for (HostStreams& h : by_host_) Step(&h, ts, out);
    }
    return Status::Ok();
  }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override { return infos_; }
  std::vector<std::string> warnings() const override { return warnings_.Render(); }
  std::vector<GpuLabels> gpu_labels() const override { return labels_; }

 private:
  void Step(HostStreams* h, int64_t ts, std::vector<GpuSample>* out) {
    std::string why;
    bool any = false;
    for (Stream& c : h->streams) {
      if (c.next >= c.points.size() || c.points[c.next].ts_ms != ts) continue;
      any = true;
      const double value = c.points[c.next++].value;
      switch (c.resolved) {
        case DcgmScrapeDecoder::LineResult::kSkipped:
          if (!c.warned) warnings_.Add(c.why, c.line_prefix.substr(0, 120));
          c.warned = true;
          continue;
        case DcgmScrapeDecoder::LineResult::kMalformed:
          warnings_.Add("implausible value skipped",
                        fmt::format("{}at {}: {}", c.line_prefix, FormatIsoMs(ts, true), c.why));
          continue;
        default:
          break;
      }
      switch (h->decoder->Store(c.ref, std::nullopt, value, &why)) {
        case DcgmScrapeDecoder::LineResult::kRepeated:
          warnings_.Add("a second series for one GPU and field at one time skipped",
                        fmt::format("{}at {}", c.line_prefix, FormatIsoMs(ts, true)));
          break;
        case DcgmScrapeDecoder::LineResult::kMalformed:
          warnings_.Add("implausible value skipped",
                        fmt::format("{}at {}: {}", c.line_prefix, FormatIsoMs(ts, true), why));
          break;
        default:
          break;
      }
    }
    if (any) h->decoder->End(ts, out);
  }

  std::vector<std::string> hosts_;
  std::vector<HostStreams> by_host_;
  std::vector<GpuInfo> infos_;
  std::vector<GpuLabels> labels_;
  Warnings warnings_;
};

}  // namespace

bool LooksLikePromJson(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && IsJsonSpace(text[i])) ++i;
  if (i >= text.size() || text[i] != '{') return false;
  return text.find("\"status\"") != std::string_view::npos &&
         (text.find("\"resultType\"") != std::string_view::npos ||
          text.find("\"errorType\"") != std::string_view::npos);
}

Status PromJsonDecoder::AddDocuments(std::string_view text, const std::string& where) {
  size_t pos = 0;
  int in_text = 0;
  for (;;) {
    while (pos < text.size() && IsJsonSpace(text[pos])) ++pos;
    if (pos >= text.size()) break;
    ++in_text;
    if (text[pos] != '{') {
      return Status::InvalidInput(
          fmt::format("{}: byte {}: expected a Prometheus API response (a JSON object), found '{}'",
                      where, pos, Excerpt(text.substr(pos), 40)));
    }
    // The plain shape is read by structure, which finds the document's end too; anything
    // else is cut out by brackets and read through the DOM.
    size_t used = 0;
    if (ScanDocument(text.substr(pos), fmt::format("{}: document {}", where, in_text), &used)) {
      ++documents_;
      pos += used;
      continue;
    }
    const size_t end = JsonValueEnd(text, pos);
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

int64_t PromJsonDecoder::SeriesFor(const json& metric, const std::string& at, size_t r) {
  auto name_it = metric.find("__name__");
  if (name_it == metric.end() || !name_it->is_string()) {
    warnings_.Add(
        "series without __name__ skipped (save raw DCGM series, not an expression's result)",
        fmt::format("{}, result[{}]", at, r));
    return -1;
  }
  const std::string name = name_it->get<std::string>();
  const bool dcgm = name.rfind(kDcgmFieldPrefix, 0) == 0;
  if (!dcgm && ExporterSeriesByName(name) == nullptr) {  // AMD's and Gaudi's read as DCGM rows
    warnings_.Add("non-DCGM series skipped", ValidUtf8(name));
    return -1;
  }
  std::string host;
  std::string prefix = name + "{";
  bool first = true;
  for (const char* k : {"Hostname", "hostname", "instance"}) {
    auto h = metric.find(k);
    if (h != metric.end() && h->is_string() && !h->get<std::string>().empty()) {
      host = ValidUtf8(h->get<std::string>());
      ++host_label_counts_[k];
      break;
    }
  }
  bool bad_label = false;
  for (const auto& [k, v] : metric.items()) {
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
    return -1;
  }
  prefix += "} ";
  auto [sit, inserted] = series_index_.try_emplace(host + '\n' + prefix, series_.size());
  if (inserted) {
    Series s;
    s.host = host;
    s.line_prefix = prefix;
    s.name = dcgm ? name.substr(kDcgmFieldPrefix.size()) : name;
    s.metric = name;
    series_.push_back(std::move(s));
  }
  return static_cast<int64_t>(sit->second);
}

bool PromJsonDecoder::ScanDocument(std::string_view doc, const std::string& at, size_t* used) {
  // What to put back when the document turns out not to be the plain shape.
  const size_t series_before = series_.size();
  struct Touched {
    size_t series;
    size_t points;
    bool unsorted;
  };
  std::vector<Touched> touched;
  Warnings warnings_before = warnings_;
  std::map<std::string, int64_t> host_counts_before = host_label_counts_;
  const auto undo = [&] {
    for (auto t = touched.rbegin(); t != touched.rend(); ++t) {
      series_[t->series].points.resize(t->points);
      series_[t->series].unsorted = t->unsorted;
    }
    for (size_t i = series_before; i < series_.size(); ++i) {
      series_index_.erase(series_[i].host + '\n' + series_[i].line_prefix);
    }
    series_.resize(series_before);
    warnings_ = std::move(warnings_before);
    host_label_counts_ = std::move(host_counts_before);
    return false;
  };

  // The fast path: any shape but the plain one answers false and leaves the document to the DOM.
  JsonCursor in(doc);
  std::string_view key;
  std::string_view word;
  bool seen_status = false;
  bool seen_data = false;
  bool seen_warnings = false;
  bool scanned_vector = false;
  // One point, [unix_seconds, "value"], into series s (nullptr: a skipped series, read past).
  const auto point = [&](Series* s) {
    double t = 0;
    double v = 0;
    if (!in.Eat('[') || !in.Number(&t) || !in.Eat(',') || !in.PlainString(&word) || !in.Eat(']')) {
      return false;
    }
    if (!(t >= 0 && t < kMaxUnixS) || !ParsePromJsonValue(word, &v)) return false;
    if (s != nullptr) {
      const int64_t ts_ms = std::llround(t * 1000);
      if (!s->points.empty() && ts_ms < s->points.back().ts_ms) s->unsorted = true;
      s->points.push_back(Point{ts_ms, v});
    }
    return true;
  };
  const auto item = [&](bool matrix, size_t r) {
    if (!in.Eat('{') || !in.PlainString(&key) || key != "metric" || !in.Eat(':') || !in.At('{') ||
        !in.Value(&word)) {
      return false;
    }
    // The labels of one series: small next to its points, so the DOM is cheap here.
    const json metric = json::parse(word.begin(), word.end(), nullptr, false);
    if (!metric.is_object()) return false;
    const int64_t index = SeriesFor(metric, at, r);
    Series* s = nullptr;
    if (index >= 0) {
      s = &series_[static_cast<size_t>(index)];
      if (static_cast<size_t>(index) < series_before) {
        touched.push_back(Touched{static_cast<size_t>(index), s->points.size(), s->unsorted});
      }
    }
    if (!in.Eat(',') || !in.PlainString(&key) || key != (matrix ? "values" : "value") ||
        !in.Eat(':')) {
      return false;
    }
    if (matrix) {
      if (!in.Eat('[')) return false;
      if (!in.Eat(']')) {
        do {
          if (!point(s)) return false;
        } while (in.Eat(','));
        if (!in.Eat(']')) return false;
      }
    } else if (!point(s)) {
      return false;
    }
    return in.Eat('}');
  };
  const auto data = [&] {
    if (!in.Eat('{')) return false;
    bool matrix = false;
    bool seen_type = false;
    bool seen_result = false;
    do {
      if (!in.PlainString(&key) || !in.Eat(':')) return false;
      if (key == "resultType") {
        if (seen_type || !in.PlainString(&word) || (word != "matrix" && word != "vector"))
          return false;
        matrix = word == "matrix";
        scanned_vector = !matrix;
        seen_type = true;
      } else if (key == "result") {
        if (!seen_type || seen_result || !in.Eat('[')) return false;
        seen_result = true;
        if (in.Eat(']')) continue;
        size_t r = 0;
        do {
          if (!item(matrix, r++)) return false;
        } while (in.Eat(','));
        if (!in.Eat(']')) return false;
      } else if (!in.Value(&word)) {
        return false;
      }
    } while (in.Eat(','));
    return seen_result && in.Eat('}');
  };

  if (!in.Eat('{')) return false;
  do {
    if (!in.PlainString(&key) || !in.Eat(':')) return undo();
    if (key == "status") {
      if (seen_status || !in.PlainString(&word) || word != "success") return undo();
      seen_status = true;
    } else if (key == "data") {
      if (seen_data || !data()) return undo();
      seen_data = true;
    } else if (key == "warnings") {
      if (seen_warnings || !in.Eat('[')) return undo();
      seen_warnings = true;
      if (!in.Eat(']')) {
        do {
          if (!in.PlainString(&word)) return undo();
          warnings_.Add("server warning (partial data?)", std::string(word));
        } while (in.Eat(','));
        if (!in.Eat(']')) return undo();
      }
    } else if (!in.Value(&word)) {
      return undo();
    }
  } while (in.Eat(','));
  if (!in.Eat('}') || !seen_status || !seen_data) return undo();
  vector_documents_ += scanned_vector ? 1 : 0;
  *used = in.consumed();
  return true;
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
      if (s.is_string()) {
        warnings_.Add("server warning (partial data?)",
                      EscapeForTerminal(s.get_ref<const std::string&>(), 300));
      }
    }
  }
  const std::string status = j["status"].get<std::string>();
  if (status != "success") {
    const auto str = [&](const char* k) {
      auto it = j.find(k);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string("?");
    };
    return Status::InvalidInput(fmt::format(
        "{}: Prometheus answered status \"{}\" ({}): {}", at, EscapeForTerminal(status, 100),
        EscapeForTerminal(str("errorType"), 100), EscapeForTerminal(str("error"))));
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
  if (rt == "vector") ++vector_documents_;
  for (size_t r = 0; r < result->size(); ++r) {
    const json& item = (*result)[r];
    const auto metric = item.is_object() ? item.find("metric") : item.end();
    if (!item.is_object() || metric == item.end() || !metric->is_object()) {
      warnings_.Add("result without a metric object skipped", fmt::format("{}, result[{}]", at, r));
      continue;
    }
    const int64_t index = SeriesFor(*metric, at, r);
    if (index < 0) continue;
    Series& s = series_[static_cast<size_t>(index)];
    const std::string& name = s.metric;
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
      if (!ParsePromJsonValue(vs, &v)) {
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
        series_.empty() ? fmt::format("no {}* series in the response", kDcgmFieldPrefix)
                        : fmt::format("{} DCGM series but no usable points", series_.size()));
  }
  if (by_host.size() > 4096) {
    // Host indices are 16 bits and the engine keeps a row per host: fleet pages its queries
    // by host far below this (fleet_query.h).
    return Status::InvalidInput(fmt::format(
        "{} hosts in one answer: more than 4096 (query fewer hosts at once)", by_host.size()));
  }

  std::vector<std::string> hosts;
  std::vector<HostStreams> by_host_streams;
  std::vector<GpuInfo> infos;
  std::vector<GpuLabels> labels;
  bool any_sample = false;
  std::string line;
  for (const auto& [host, indices] : by_host) {
    const auto host_index = static_cast<uint16_t>(hosts.size());
    hosts.push_back(host);
    HostStreams h;
    h.decoder = std::make_unique<DcgmScrapeDecoder>(host_index, kept_labels_);
    for (size_t i : indices) {
      Stream c;
      c.line_prefix = std::move(series_[i].line_prefix);
      c.points = std::move(series_[i].points);
      h.streams.push_back(std::move(c));
    }
    // Resolve in the order the series' first points come (GPUs known only by UUID are numbered
    // in that order), series order within one timestamp.
    std::vector<size_t> order(h.streams.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return h.streams[a].points.front().ts_ms < h.streams[b].points.front().ts_ms;
    });
    for (size_t k : order) {
      Stream& c = h.streams[k];
      line = c.line_prefix;
      line.push_back('0');
      c.resolved = h.decoder->Series(line, &c.ref, &c.why);
      any_sample |= c.resolved == DcgmScrapeDecoder::LineResult::kRead;
    }
    for (auto& [kind, detail] : h.decoder->TakeNotes()) warnings_.Add(kind, detail);
    // Fields wattwatch does not read take no part, as their lines did not.
    std::erase_if(h.streams, [](const Stream& c) {
      return c.resolved == DcgmScrapeDecoder::LineResult::kIgnored;
    });
    for (const auto& [gpu, info] : h.decoder->infos()) infos.push_back(info);
    for (const auto& [gpu, l] : h.decoder->labels()) {
      labels.push_back(GpuLabels{{host_index, gpu}, l});
    }
    by_host_streams.push_back(std::move(h));
  }
  if (!any_sample) return Status::InvalidInput("no usable DCGM samples in the response");

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
  auto src = std::make_unique<PromSamplesSource>(std::move(hosts), std::move(by_host_streams),
                                                 std::move(infos), std::move(labels),
                                                 std::move(warnings_));
  warnings_ = Warnings();
  return std::unique_ptr<TelemetrySource>(std::move(src));
}

Result<OpenedFile> OpenPromJson(std::unique_ptr<LineReader> reader, const std::string& host) {
  std::string text;
  // A saved response is read whole (it is one JSON line); 4 GiB is far over a server's
  // 11,000 points x series.
  WW_RETURN_IF_ERROR(reader->ReadUpTo(size_t{4} << 30, &text));
  PromJsonDecoder decoder;
  WW_RETURN_IF_ERROR(decoder.AddDocuments(text, reader->path()));
  std::string().swap(text);  // the points are decoded; the text is not needed any more
  auto src = decoder.Finish(host);
  if (!src.ok()) return Status::InvalidInput(reader->path() + ": " + src.status().message());
  return OpenedFileOf(std::move(*src), decoder.Describe());
}

// --format prometheus-json: recognized from the first 4 KiB (one JSON line, often longer than a
// line reader takes). A response holds its own hosts, so it must be the only file.
namespace {
constexpr DetectRule kPromJsonDetect[] = {
    {0, DetectRule::kHead, [](const DetectLine& l) { return LooksLikePromJson(l.text); }},
};
}  // namespace

extern const Format kPromJsonFormat;
const Format kPromJsonFormat{
    "prometheus-json", "Prometheus query_range JSON", kPromJsonDetect,
    [](const OpenRequest& r, std::unique_ptr<LineReader> lines) -> Result<OpenedFile> {
      if (r.host_index != 0 || r.options.multiple_files) {
        return Status::InvalidInput(fmt::format(
            "{}: a Prometheus JSON response holds its own hosts (by Hostname/instance); give it "
            "alone, or concatenate the responses into one file",
            r.path));
      }
      return OpenPromJson(std::move(lines), r.host);
    },
    write::kPromJsonWriters};

}  // namespace ww::ingest
