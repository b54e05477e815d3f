// What the sample writers share: a tick's time, ctime's date, a writer of text that checks its
// writes, the factory of a writer row. Internal to write/.
// Ownership: a TextWriter does not own its FILE. Thread-safety: the functions are pure; a
// TextWriter, like every SampleWriter, is used by one thread at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/sample.h"
#include "telemetry/write/sample_writers.h"

namespace ww::write {

// A tick's time: its earliest sample's timestamp. `samples` is not empty.
inline int64_t TickMs(const std::vector<GpuSample>& samples) {
  int64_t at_ms = samples.front().timestamp_ms;
  for (const GpuSample& s : samples) at_ms = std::min(at_ms, s.timestamp_ms);
  return at_ms;
}

// The time as ctime prints it, in UTC: "Fri Apr  5 06:17:19 2024" (nvidia-smi's and gpustat's
// date lines).
inline std::string CtimeUtc(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[64];
  std::strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", &tm);
  return date;
}

// A writer that writes its text as it goes; a short write shows at Finish.
class TextWriter : public SampleWriter {
 public:
  explicit TextWriter(std::FILE* out) : out_(out) {}
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 protected:
  void Write(const std::string& text) {
    ok_ &= std::fwrite(text.data(), 1, text.size(), out_) == text.size();
  }

 private:
  std::FILE* out_;
  bool ok_ = true;
};

// WriterRow::make of a writer constructed as W(out, context, kArgs...), or W(out, kArgs...) when
// it needs nothing of the job.
template <class W, auto... kArgs>
std::unique_ptr<SampleWriter> Make(std::FILE* out, const WriterContext& context) {
  if constexpr (std::is_constructible_v<W, std::FILE*, const WriterContext&, decltype(kArgs)...>) {
    return std::make_unique<W>(out, context, kArgs...);
  } else {
    return std::make_unique<W>(out, kArgs...);
  }
}

}  // namespace ww::write
