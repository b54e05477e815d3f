#include "telemetry/ingest/dcgm_exporter_live.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>

#include "telemetry/fields.h"
#include "telemetry/ingest/dcgm_exporter.h"
#include "telemetry/ingest/http_fetch.h"
#include "telemetry/ingest/text.h"

namespace ww::ingest {
namespace {

class DcgmExporterLive final : public TelemetrySource {
 public:
  DcgmExporterLive(const DcgmExporterLiveOptions& o, const std::string& scheme_host_port,
                   std::string path, std::string url_host)
      : o_(o),
        clock_(o.clock ? o.clock : SystemClock()),
        path_(std::move(path)),
        url_host_(std::move(url_host)),
        client_(scheme_host_port),
        decoder_(0) {
    const auto d = std::chrono::milliseconds(std::max<int64_t>(o.call_deadline_ms, 1));
    client_.set_connection_timeout(d);
    client_.set_read_timeout(d);
    client_.set_write_timeout(d);
    client_.set_keep_alive(true);
  }

  // One scrape into *out; false with *why when the exporter gave no DCGM readings.
  bool Scrape(std::vector<GpuSample>* out, std::string* why) {
    HttpFetchLimits limits;
    limits.total_timeout_ms = std::max<int64_t>(o_.call_deadline_ms, 1);
    limits.max_body_bytes = o_.max_body_bytes;
    Result<HttpFetched> res =
        BoundedGet(client_, path_, {}, {}, limits, fmt::format("dcgm-exporter at {}", o_.url));
    if (!res.ok()) {
      *why = res.status().code() == StatusCode::kUnavailable
                 ? fmt::format("dcgm-exporter at {} did not answer: {}", o_.url,
                               res.status().message())
                 : res.status().message();
      return false;
    }
    if (res->status != 200) {
      *why = fmt::format("dcgm-exporter at {} answered HTTP {}", o_.url, res->status);
      return false;
    }
    const std::string& body = res->body;
    size_t pos = 0;
    int64_t read = 0;
    while (pos < body.size()) {
      size_t nl = body.find('\n', pos);
      if (nl == std::string::npos) nl = body.size();
      std::string_view line(body.data() + pos, nl - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      pos = nl + 1;
      std::string w;
      const auto result = decoder_.Line(line, &w);
      for (auto& [kind, detail] : decoder_.TakeNotes()) warnings_.Add(kind, o_.url + ": " + detail);
      switch (result) {
        case DcgmScrapeDecoder::LineResult::kRead:
          ++read;
          break;
        case DcgmScrapeDecoder::LineResult::kRepeated:
        case DcgmScrapeDecoder::LineResult::kNewTimestamp:
          // One scrape is one tick: a repeat (a second body) is not ours to split.
          warnings_.Add("repeated series in one scrape skipped", Excerpt(line, 80));
          break;
        case DcgmScrapeDecoder::LineResult::kSkipped:
          warnings_.Add(w, o_.url);
          break;
        case DcgmScrapeDecoder::LineResult::kMalformed:
          warnings_.Add("malformed DCGM line skipped",
                        fmt::format("{}: '{}'", w, Excerpt(line, 60)));
          break;
        case DcgmScrapeDecoder::LineResult::kIgnored:
          break;
      }
    }
    decoder_.End(clock_->NowUnixMs(), out);
    if (read == 0) {
      *why = fmt::format("dcgm-exporter at {} answered without {}* readings", o_.url,
                         kDcgmFieldPrefix);
      return false;
    }
    return true;
  }

  Status Next(std::vector<GpuSample>* out) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<GpuSample> got;
    std::string why;
    const bool ok = Scrape(&got, &why);
    health_.last_read_latency_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    if (ok) {
      if (failing_) warnings_.Add("dcgm-exporter answers again", o_.url);
      failing_ = false;
      health_.last_success_unix_ms = clock_->NowUnixMs();
      for (const auto& s : got) known_[s.key.gpu] = true;
      out->insert(out->end(), got.begin(), got.end());
      return Status::Ok();
    }
    if (!failing_) warnings_.Add("dcgm-exporter stopped answering (stale samples)", why);
    failing_ = true;
    const int64_t now = clock_->NowUnixMs();
    for (const auto& [gpu, seen] : known_) {
      GpuSample s;
      s.timestamp_ms = now;
      s.key = GpuKey{0, gpu};
      out->push_back(s);
      ++health_.samples_stale;
    }
    if (known_.empty()) return Status::Unavailable(why);
    return Status::Ok();
  }

  Status Open() {
    std::vector<GpuSample> first;
    std::string why;
    if (!Scrape(&first, &why)) return Status::Unavailable(why);
    for (const auto& s : first) known_[s.key.gpu] = true;
    hosts_ = {!o_.hostname.empty()           ? o_.hostname
              : !decoder_.hostname().empty() ? decoder_.hostname()
                                             : url_host_};
    return Status::Ok();
  }

  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override {
    std::vector<GpuInfo> out;
    for (const auto& [gpu, info] : decoder_.infos()) out.push_back(info);
    return out;
  }
  std::vector<GpuLabels> gpu_labels() const override {
    std::vector<GpuLabels> out;
    for (const auto& [gpu, l] : decoder_.labels()) out.push_back(GpuLabels{{0, gpu}, l});
    return out;
  }
  std::vector<std::string> warnings() const override { return warnings_.Render(); }
  SourceHealth health() const override { return health_; }

 private:
  DcgmExporterLiveOptions o_;
  Clock* clock_;
  std::string path_;
  std::string url_host_;
  httplib::Client client_;
  DcgmScrapeDecoder decoder_;
  std::vector<std::string> hosts_;
  std::map<uint16_t, bool> known_;
  Warnings warnings_;
  SourceHealth health_;
  bool failing_ = false;
};

}  // namespace

Result<std::unique_ptr<TelemetrySource>> OpenDcgmExporterLive(
    const DcgmExporterLiveOptions& options) {
  const std::string& url = options.url;
  const size_t scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidInput(fmt::format(
        "--source dcgm-exporter:{}: expected http://HOST:PORT[/metrics] (dcgm-exporter listens "
        "on :9400)",
        url));
  }
  const size_t path_at = url.find('/', scheme_end + 3);
  const std::string hostport = path_at == std::string::npos ? url : url.substr(0, path_at);
  const std::string path = path_at == std::string::npos ? "/metrics" : url.substr(path_at);
  std::string host = hostport.substr(scheme_end + 3);
  if (host.empty()) return Status::InvalidInput("--source dcgm-exporter:" + url + ": no host");
  auto src = std::make_unique<DcgmExporterLive>(options, hostport, path, host);
  WW_RETURN_IF_ERROR(src->Open());
  return std::unique_ptr<TelemetrySource>(std::move(src));
}

}  // namespace ww::ingest
