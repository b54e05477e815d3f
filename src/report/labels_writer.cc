#include "report/labels_writer.h"

#include <charconv>

#include "core/timefmt.h"

namespace ww::report {

LabelsCsvWriter::LabelsCsvWriter(std::FILE* out, std::vector<std::string> hosts, bool with_zone)
    : out_(out), hosts_(std::move(hosts)), with_zone_(with_zone) {
  buf_ = "host,timestamp,gpu,state\n";
}

LabelsCsvWriter::~LabelsCsvWriter() { Flush(); }

void LabelsCsvWriter::OnLabel(const triage::LabeledSample& l) {
  buf_ += l.key.host < hosts_.size() ? hosts_[l.key.host] : std::to_string(l.key.host);
  buf_ += ',';
  AppendIsoMs(buf_, l.timestamp_ms, with_zone_);
  buf_ += ',';
  char num[8];
  auto [end, ec] = std::to_chars(num, num + sizeof(num), l.key.gpu);
  buf_.append(num, end);
  buf_ += ',';
  buf_ += StateName(l.state);
  buf_ += '\n';
  if (buf_.size() > (1 << 20)) Flush();
}

void LabelsCsvWriter::Release() {
  Flush();
  out_ = nullptr;
}

void LabelsCsvWriter::Flush() {
  if (out_ == nullptr) {
    buf_.clear();
    return;
  }
  if (!buf_.empty()) {
    std::fwrite(buf_.data(), 1, buf_.size(), out_);
    buf_.clear();
  }
  std::fflush(out_);
}

}  // namespace ww::report
