// `wattwatch record`: samples every GPU through NVML and writes an nvidia-smi-format log.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>

#include "commands.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "telemetry/nvml/nvml_source.h"
#include "telemetry/record/nvml_rows.h"
#include "telemetry/record/record_writer.h"

namespace ww::app {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void OnStopSignal(int) { g_stop.store(true); }

// "64M", "1G", "500k", "1048576" -> bytes (binary multiples). nullopt when malformed.
std::optional<uint64_t> ParseSize(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit == "" || unit == "B") return v;
  if (unit == "K" || unit == "KB" || unit == "KIB") return v << 10;
  if (unit == "M" || unit == "MB" || unit == "MIB") return v << 20;
  if (unit == "G" || unit == "GB" || unit == "GIB") return v << 30;
  return std::nullopt;
}

}  // namespace

void AddRecordCommand(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string out;
    int64_t interval_ms = 100;
    double duration_s = 0;
    std::string format = "csv";
    std::string max_size;
    int keep = 5;
    std::string nvml_lib;
    int64_t deadline_ms = 0;
    std::string hostname;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "record",
      "Sample every GPU on this host through NVML and write a log. CSV is exactly nvidia-smi's "
      "`--query-gpu=timestamp,index,name,uuid,power.draw,power.limit,utilization.gpu,"
      "utilization.memory,clocks.sm,clocks.mem,temperature.gpu,memory.used,memory.total,pstate,"
      "clocks_event_reasons.sw_power_cap --format=csv` (same header, units, local timestamps), "
      "so `wattwatch triage` and other tools read it; --format jsonl writes every field "
      "(instant and exact mean power, energy, PCIe/NVLink rates, GPM, Xid, stale flags). Each "
      "tick is written as it is read: a kill loses at most the tick in flight. A GPU whose NVML "
      "call hangs is logged as [N/A] and reported on stderr; the others keep being sampled.\n\n"
      "Example:\n  wattwatch record --interval-ms 100 --duration-s 600 --out node0.csv\n"
      "  wattwatch record --format jsonl --max-size 256M --out /var/log/gpu.jsonl\n\n"
      "Stops after --duration-s, or on Ctrl-C / SIGTERM.\n"
      "Exit codes: 0 recorded; 2 bad flags, unwritable file, or no NVML library / driver / GPU "
      "(the message says which and how to point wattwatch at a library).");
  cmd->add_option("--out", opts->out, "Log file to write (truncated)")->required();
  cmd->add_option("--interval-ms", opts->interval_ms, "Sampling interval")
      ->check(CLI::Range(int64_t{10}, int64_t{3600000}));
  cmd->add_option("--duration-s", opts->duration_s, "Stop after this long (default: until killed)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--format", opts->format, "csv (nvidia-smi) or jsonl (every field)")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  cmd->add_option("--max-size", opts->max_size,
                  "Rotate FILE to FILE.1 ... when it would exceed this size (e.g. 64M, 1G)");
  cmd->add_option("--keep", opts->keep, "Rotated files to keep")->check(CLI::Range(1, 1000));
  cmd->add_option("--nvml-lib", opts->nvml_lib,
                  "Path of libnvidia-ml.so.1 (default: $WATTWATCH_NVML_LIB, else the loader path)");
  cmd->add_option("--deadline-ms", opts->deadline_ms,
                  "Longest wait for a GPU's NVML calls before it is logged stale (default: the "
                  "interval, at most 1000)")
      ->check(CLI::Range(int64_t{1}, int64_t{600000}));
  cmd->add_option("--hostname", opts->hostname, "Host name in JSONL records (default: this host)");

  cmd->callback([opts, exit_code] {
    record::RecordWriterOptions wo;
    wo.path = opts->out;
    wo.format = opts->format == "jsonl" ? record::RecordFormat::kJsonl : record::RecordFormat::kCsv;
    wo.keep_files = opts->keep;
    if (!opts->max_size.empty()) {
      auto size = ParseSize(opts->max_size);
      if (!size || *size == 0) {
        std::fprintf(stderr,
                     "wattwatch record: --max-size \"%s\" is not a size (use e.g. 64M, 1G, 500K)\n",
                     opts->max_size.c_str());
        *exit_code = kExitBadInput;
        return;
      }
      wo.max_size_bytes = *size;
    }

    nvml::NvmlSourceOptions so;
    so.library_path = opts->nvml_lib;
    so.hostname = opts->hostname;
    so.call_deadline_ms = opts->deadline_ms;  // 0: nvml::EffectiveCallDeadlineMs
    so.sampling_interval_ms = opts->interval_ms;
    auto opened = nvml::NvmlSource::Open(so);
    if (!opened.ok()) {
      std::fprintf(stderr, "wattwatch record: %s\n", opened.status().message().c_str());
      *exit_code = kExitBadInput;
      return;
    }
    nvml::NvmlSource& src = *opened.value();
    auto writer = record::RecordWriter::Open(wo);
    if (!writer.ok()) {
      std::fprintf(stderr, "wattwatch record: %s\n", writer.status().message().c_str());
      *exit_code = kExitBadInput;
      return;
    }

    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    Clock* clock = SystemClock();
    std::vector<GpuInfo> infos;
    const int64_t interval_ns = opts->interval_ms * 1'000'000;
    const int64_t start_ns = clock->NowMonotonicNs();
    const int64_t end_ns =
        opts->duration_s > 0 ? start_ns + static_cast<int64_t>(opts->duration_s * 1e9) : INT64_MAX;
    std::vector<GpuSample> samples;
    size_t warnings_shown = 0;
    uint64_t ticks = 0;
    int64_t next_ns = start_ns;
    while (!g_stop.load()) {
      samples.clear();
      if (Status st = src.Next(&samples); !st.ok()) {
        std::fprintf(stderr, "wattwatch record: %s\n", st.message().c_str());
        *exit_code = kExitBadInput;
        return;
      }
      infos = src.gpus();  // names and UUIDs arrive with each GPU's first answer
      const auto rows = record::RowsForTick(src, samples, infos);
      if (Status st = writer.value()->WriteTick(rows); !st.ok()) {
        std::fprintf(stderr, "wattwatch record: %s\n", st.message().c_str());
        *exit_code = kExitBadInput;
        return;
      }
      ++ticks;
      const auto warnings = src.warnings();
      if (warnings.size() < warnings_shown) warnings_shown = 0;  // the source trimmed its list
      for (; warnings_shown < warnings.size(); ++warnings_shown) {
        std::fprintf(stderr, "wattwatch record: %s\n", warnings[warnings_shown].c_str());
      }
      next_ns += interval_ns;
      const int64_t now = clock->NowMonotonicNs();
      if (next_ns < now) next_ns = now;  // a slow tick: skip ahead rather than burst
      if (next_ns >= end_ns) break;
      // Sleep in slices so Ctrl-C stops within 100 ms.
      while (!g_stop.load() && clock->NowMonotonicNs() < next_ns) {
        clock->SleepUntilMonotonicNs(std::min(next_ns, clock->NowMonotonicNs() + 100'000'000));
      }
    }
    std::fprintf(stderr, "wattwatch record: %llu ticks x %zu GPUs to %s (%llu stale GPU-samples)\n",
                 static_cast<unsigned long long>(ticks), infos.size(), opts->out.c_str(),
                 static_cast<unsigned long long>(src.stale_samples()));
    *exit_code = kExitOk;
  });
}

}  // namespace ww::app
