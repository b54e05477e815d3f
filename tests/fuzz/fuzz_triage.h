// Shared by the telemetry fuzz targets (ingest, gpustat, layouts, ws_table): the fuzzer's bytes
// as a file in memory (the readers open paths), and one whole triage of it, so whatever a reader
// lets through must also be safe for the engine and the report.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "report/triage_report.h"
#include "telemetry/ingest/open.h"
#include "triage/engine.h"
#include "triage/run.h"

namespace ww::fuzz {

// The bytes in a memfd; path() is "/proc/self/fd/N", or "" when it could not be written.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size, const char* name)
      : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) return;
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// Opens the file with these options, triages it to the end and renders the report.
inline void TriageOnce(const std::string& path, const IngestOptions& options) {
  auto in = OpenTelemetryFiles({path}, options);
  if (!in.ok()) return;
  triage::TriageEngine engine;
  Status st = triage::RunToEnd(*in->source, engine);
  for (const auto& d : in->inputs) (void)d.Text();
  if (!st.ok()) return;
  auto report = report::MakeReport(engine, in->source->hosts(), in->source->warnings());
  (void)report::RenderText(report);
  (void)report::RenderJson(report).dump();
}

}  // namespace ww::fuzz
