// Reader-only throughput: opens one telemetry file as `wattwatch triage` does (format detected
// from the content) and drains its source without the triage engine, so the figure is the
// reader's own. bench/ingest_throughput.sh runs it next to the whole `triage` command, on one
// core, and takes the CPU seconds and peak RSS from /usr/bin/time.
// usage: ingest_bench FILE [INTERVAL_MS] [WIDE_METRIC]  (WIDE_METRIC: --wide, e.g. power)
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "telemetry/ingest/open.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: ingest_bench FILE [INTERVAL_MS] [WIDE_METRIC]\n");
    return 2;
  }
  ww::IngestOptions options;
  if (argc > 2) options.replay.interval_ms = std::atoll(argv[2]);
  if (argc > 3) options.wide_metric = argv[3];
  auto opened = ww::OpenTelemetryFile(argv[1], "node0", 0, options);
  if (!opened.ok()) {
    fmt::print(stderr, "ingest_bench: {}\n", opened.status().message());
    return 1;
  }
  int64_t samples = 0;
  double power_sum = 0;  // read every sample, so nothing is optimized away
  std::vector<ww::GpuSample> batch;
  for (;;) {
    batch.clear();
    const ww::Status st = opened->source->Next(&batch);
    if (!st.ok()) {
      fmt::print(stderr, "ingest_bench: {}\n", st.message());
      return 1;
    }
    if (batch.empty()) break;
    samples += static_cast<int64_t>(batch.size());
    for (const auto& s : batch) power_sum += s.power_w.value_or(0);
  }
  fmt::print("{} samples, {} warning kind(s), mean power {:.1f} W\n", samples,
             opened->source->warnings().size(), samples > 0 ? power_sum / samples : 0.0);
  return 0;
}
