// `wattwatch record`: flags and signals only; the loop is src/telemetry/record/record_loop.h.

#include <atomic>
#include <cstdio>
#include <map>
#include <string>

#include "commands.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "core/signals.h"
#include "output_flags.h"
#include "telemetry/record/record_loop.h"

namespace ww::app {

void AddRecordCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<record::RecordOptions>();
  auto force = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "record",
      "Sample every GPU on this host through NVML (AMD GPUs: AMD SMI, see docs/amd.md) and write "
      "a log. CSV is exactly nvidia-smi's "
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
  cmd->add_option("--out", opts->writer.path, "Log file to write (truncated)")->required();
  AddForceFlag(cmd, force.get());
  cmd->add_option("--interval-ms", opts->interval_ms, "Sampling interval")
      ->check(CLI::Range(int64_t{10}, int64_t{3600000}))
      ->capture_default_str();
  cmd->add_option("--duration-s", opts->duration_s, "Stop after this long (default: until killed)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--format", opts->writer.format, "csv (nvidia-smi) or jsonl (every field)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, record::RecordFormat>{
          {"csv", record::RecordFormat::kCsv}, {"jsonl", record::RecordFormat::kJsonl}}))
      ->option_text("csv|jsonl (default: csv)");
  cmd->add_option("--max-size", opts->max_size,
                  "Rotate FILE to FILE.1 ... when it would exceed this size (e.g. 64M, 1G)");
  cmd->add_option("--keep", opts->writer.keep_files, "Rotated files to keep")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--source", opts->source,
                  "auto (NVML, else AMD SMI, else ROCm SMI), nvml, amdsmi or rocm-smi")
      ->check(CLI::IsMember({"auto", "nvml", "amdsmi", "rocm-smi"}))
      ->capture_default_str();
  cmd->add_option("--amdsmi-lib", opts->amdsmi_lib,
                  "Path of libamd_smi.so (default: $WATTWATCH_AMDSMI_LIB, else the loader path)");
  cmd->add_option("--nvml-lib", opts->nvml.library_path,
                  "Path of libnvidia-ml.so.1 (default: $WATTWATCH_NVML_LIB, else the loader path)");
  cmd->add_option("--deadline-ms", opts->deadline_ms,
                  "Longest wait for a GPU's NVML calls before it is logged stale (default: the "
                  "interval, at most 1000)")
      ->check(CLI::Range(int64_t{1}, int64_t{600000}));
  cmd->add_option("--hostname", opts->nvml.hostname,
                  "Host name in JSONL records (default: this host)");

  cmd->callback([opts, force, exit_code] {
    if (!OutputsAllowed("record", {}, {{"--out", opts->writer.path}}, *force)) {
      *exit_code = kExitBadInput;
      return;
    }
    // SIGINT/SIGTERM/SIGHUP stop the loop after the current tick, so the log ends on a whole row.
    StopSignals signals;

    auto note = [](const std::string& line) {
      std::fprintf(stderr, "wattwatch record: %s\n", line.c_str());
    };
    auto summary = record::Record(*opts, *SystemClock(), signals.pending(), note);
    if (!summary.ok()) {
      note(summary.status().message());
      *exit_code = kExitBadInput;
      return;
    }
    note(summary->Describe(opts->writer.path));
    *exit_code = kExitOk;
  });
}

}  // namespace ww::app
