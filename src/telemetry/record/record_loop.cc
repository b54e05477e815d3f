#include "telemetry/record/record_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>

#include "telemetry/pacer.h"
#include "telemetry/record/nvml_rows.h"
#include "telemetry/source_spec.h"

namespace ww::record {

std::string RecordSummary::Describe(std::string_view path) const {
  return fmt::format("{} ticks x {} GPUs to {} ({} stale GPU-samples, {} ticks skipped)", ticks,
                     gpus, path, stale_samples, dropped_ticks);
}

Result<uint64_t> ParseSizeBytes(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidInput(
        fmt::format("--max-size \"{}\" is not a size (use e.g. 64M, 1G, 500K)", text));
  };
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    if (v > (UINT64_MAX - 9) / 10) return bad();
    v = v * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == 0) return bad();
  std::string unit(text.substr(i));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  if (unit == "K" || unit == "KB" || unit == "KIB") shift = 10;
  if (unit == "M" || unit == "MB" || unit == "MIB") shift = 20;
  if (unit == "G" || unit == "GB" || unit == "GIB") shift = 30;
  // A size that would not fit in 64 bits after the multiple is as wrong as a bad unit.
  if (shift < 0 || v == 0 || v > (UINT64_MAX >> shift)) return bad();
  return v << shift;
}

Result<RecordSummary> RunRecordLoop(LiveGpuSource& source, RecordWriter& writer, Clock& clock,
                                    const RecordOptions& options, const std::atomic<int>* stop,
                                    const RecordNote& note) {
  constexpr int64_t kStopCheckNs = 100'000'000;  // Ctrl-C stops within 100 ms
  Pacer pacer = Pacer::Live(clock, options.interval_ms);
  const int64_t start_ns = pacer.DueNs();  // the grid's first point: 1 s at 100 ms is 10 ticks
  const int64_t end_ns =
      options.duration_s > 0
          ? start_ns + static_cast<int64_t>(
                           std::min(options.duration_s * 1e9, static_cast<double>(INT64_MAX / 2)))
          : INT64_MAX;
  auto stopped = [stop] { return stop != nullptr && stop->load() != 0; };
  RecordSummary summary;
  std::vector<GpuSample> samples;
  std::vector<GpuInfo> infos;
  size_t warnings_shown = 0;
  while (WaitUntil(clock, pacer.DueNs(), kStopCheckNs, stopped)) {
    pacer.Begin();
    samples.clear();
    if (Status st = source.Next(&samples); !st.ok()) return st;
    infos = source.gpus();  // names and UUIDs arrive with each GPU's first answer
    if (Status st = writer.WriteTick(RowsForTick(source, samples, infos)); !st.ok()) return st;
    ++summary.ticks;
    const auto warnings = source.warnings();
    if (warnings.size() < warnings_shown) warnings_shown = 0;  // the source trimmed its list
    for (; warnings_shown < warnings.size(); ++warnings_shown) {
      if (note) note(warnings[warnings_shown]);
    }
    if (pacer.DueNs() >= end_ns) break;
  }
  summary.dropped_ticks = pacer.dropped_ticks();
  summary.gpus = infos.size();
  summary.stale_samples = source.health().samples_stale;
  return summary;
}

Result<RecordSummary> Record(const RecordOptions& options, Clock& clock,
                             const std::atomic<int>* stop, const RecordNote& note) {
  RecordWriterOptions wo = options.writer;
  if (!options.max_size.empty()) {
    auto size = ParseSizeBytes(options.max_size);
    if (!size.ok()) return size.status();
    wo.max_size_bytes = *size;
  }
  nvml::NvmlSourceOptions so = options.nvml;
  so.clock = &clock;
  so.call_deadline_ms = options.deadline_ms;  // 0: nvml::EffectiveCallDeadlineMs
  so.sampling_interval_ms = options.interval_ms;
  auto source = OpenLiveGpuSource(options.source, so, options.amdsmi_lib);
  if (!source.ok()) return source.status();
  auto writer = RecordWriter::Open(wo);
  if (!writer.ok()) return writer.status();
  return RunRecordLoop(**source, **writer, clock, options, stop, note);
}

}  // namespace ww::record
