// Fuzzes what the HTTP clients do with a peer's body: `triage --prometheus` (FetchDcgmRange over
// a PromHttp that answers every request with the input: status from the first byte, body the
// rest, so the scrape-interval, query_range, label and series readers all see hostile JSON) and
// `--source dcgm-exporter:` (the scrape decoder over the input as one exposition body). Any body
// must give a source or an error value, never an exception, and every message must be printable
// (no raw newlines or terminal escapes: EscapeForTerminal).
// The transport's own bounds (total deadline, body cap after decompression) are tested against
// hostile servers in tests/telemetry/ingest/http_fetch_test.cc; the corpus
// (tests/fuzz/corpus/prom_http_body/) runs as a test.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "telemetry/ingest/dcgm_exporter.h"
#include "telemetry/ingest/prom_client.h"

namespace {

class EchoProm final : public ww::ingest::PromHttp {
 public:
  EchoProm(int status, std::string body) : status_(status), body_(std::move(body)) {}
  ww::Result<ww::ingest::HttpReply> Get(const std::string&,
                                        const std::multimap<std::string, std::string>&) override {
    if (++calls_ > 64) return ww::Status::Unavailable("enough");
    return ww::ingest::HttpReply{status_, body_};
  }
  const std::string& url() const override { return url_; }

 private:
  int status_;
  std::string body_;
  std::string url_ = "http://fuzz";
  int calls_ = 0;
};

void CheckMessage(const std::string& m) {
  if (m.empty()) std::abort();
  for (char c : m) {
    if (c == '\x1b') std::abort();  // a terminal escape from the peer reached the message
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const int kStatus[] = {200, 400, 422, 503};
  const int status = kStatus[data[0] % 4];
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (int64_t step_ms : {int64_t{0}, int64_t{500}, int64_t{15000}}) {
    EchoProm http(status, body);
    ww::ingest::PromRangeQuery q;
    q.start_ms = 1700000000000;
    q.end_ms = 1700000060000;
    q.step_ms = step_ms;
    auto fetched = ww::ingest::FetchDcgmRange(http, q);
    if (!fetched.ok()) {
      CheckMessage(fetched.status().message());
      continue;
    }
    std::vector<ww::GpuSample> batch;
    for (int i = 0; i < 1000; ++i) {
      batch.clear();
      if (!fetched->source->Next(&batch).ok() || batch.empty()) break;
    }
  }
  ww::ingest::DcgmScrapeDecoder decoder(0);
  size_t pos = 0;
  while (pos < body.size()) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string::npos) nl = body.size();
    std::string why;
    (void)decoder.Line(std::string_view(body).substr(pos, nl - pos), &why);
    pos = nl + 1;
  }
  return 0;
}
