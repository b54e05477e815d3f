// Writers of GpuSamples in the formats other tools produce, so the simulator can hand wattwatch
// (and everyone else's tools) the files people actually have: nvidia-smi CSV, `dcgmi dmon` text,
// dcgm-exporter scrapes, a Prometheus /api/v1/query_range response, OpenMetrics for
// `promtool tsdb create-blocks-from openmetrics`, W&B system metrics CSV, the default
// `nvidia-smi` table in a loop, and a home-made logging script's CSV.
//
// Every writer is fed the same samples, one sampling tick at a time (the GPUs of one tick, GPU
// order), and writes each reading as the real tool prints it: its names, units and number
// formats. An absent reading is written as the tool writes a missing one (N/A, an empty cell,
// no series), never as 0. Per-host formats get one writer per host; the Prometheus formats
// (a server holds every host) get one writer for the whole job.
// Ownership: a writer does not own its FILE. Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/sample.h"
#include "core/status.h"

namespace ww::write {

enum class OutputFormat {
  kNvidiaSmiCsv,      // nvidia-smi --query-gpu=... --format=csv -lms N
  kDcgmiDmon,         // dcgmi dmon -e 155,160,203,204,252,250,150,100,101 -d N
  kDcgmExporter,      // while sleep N; do curl -s node:9400/metrics; done, with scrape times
  kDcgmExporterCurl,  // the same without timestamps (as the exporter serves them; --interval-ms)
  kPrometheusJson,    // curl .../api/v1/query_range?query={__name__=~"DCGM_FI_.*"}...
  kOpenMetrics,       // input of promtool tsdb create-blocks-from openmetrics
  kWandb,             // W&B run system metrics exported as CSV
  kWandbJsonl,        // the same as JSON lines (run.history(stream="system") saved as records)
  kSmiTable,          // nvidia-smi -l N (the default table) in a job's .out
  kCustomCsv,         // ts,gpu_id,power_w,power_limit_w,util_pct,mem_used_mib (a home-made script)
  kCustomCsvWide,     // time,gpu0_power_w,gpu0_util_pct,...,gpu1_power_w,...: a column per GPU
  kNvidiaSmiLoop,     // while true; do nvidia-smi --query-gpu=name,pci.bus_id,... --format=csv;
                      // sleep N; done: the header before every sample, GPUs by bus id
  kGpustat,           // while sleep N; do gpustat --show-power; done (host line, GPU lines)
  kWidePower,         // a W&B power panel pivoted by pandas: ,timestamp,GPU 0,...,GPU 7 (W)
  kLlview,            // LLview/JuRepTool GPU_<jobid>_node.dat: every host in one table
};

// "nvidia-smi", "dcgmi-dmon", "dcgm-exporter", "dcgm-exporter-curl", "prometheus-json",
// "openmetrics", "wandb", "wandb-jsonl", "smi-table", "custom-csv", "custom-csv-wide",
// "nvidia-smi-loop", "gpustat", "wide-power", "llview". Unknown names are an error listing the
// valid ones.
Result<OutputFormat> ParseOutputFormat(std::string_view name);
const char* OutputFormatName(OutputFormat f);
std::string OutputFormatNames();
// File name extension for --out-dir: ".csv", ".dmon", ".prom", ".json", ".om", ".txt".
const char* OutputFormatExtension(OutputFormat f);
// True for formats that hold every host in one file (a Prometheus server's view).
bool OutputFormatIsJobWide(OutputFormat f);
// The sampling intervals a format can carry: smi-table's date line has 1 s resolution, so its
// interval must be whole seconds. An error names the format and the interval.
Status CheckOutputInterval(OutputFormat f, int64_t interval_ms);

// What a writer knows about the job besides the samples.
struct WriterContext {
  std::vector<std::string> hosts;  // indexed by GpuKey::host
  std::string model_name;
  int64_t start_unix_ms = 0;  // when the run started (W&B _runtime counts from it)
  int64_t interval_ms = 0;
  std::function<std::string(GpuKey)> uuid;
  // smi-table: print a training script's progress line between tables, as in a Slurm .out.
  bool interleave_job_lines = false;
  // nvidia-smi: only timestamp, power.draw, utilization.gpu, memory.used (no index).
  bool nvsmi_minimal_columns = false;
};

class SampleWriter {
 public:
  virtual ~SampleWriter() = default;
  // One sampling tick: the GPUs' samples of this writer's host (all hosts for a job-wide
  // format), GPU order. The tick's time is its earliest sample's timestamp.
  virtual void WriteTick(const std::vector<GpuSample>& samples) = 0;
  // Writes what the format holds until the end (Prometheus formats) and the trailer.
  virtual Status Finish() = 0;
};

// The PCI bus id dcgm-exporter and nvidia-smi print for a GPU ("00000000:18:00.0"): the bus
// numbers of an 8-GPU HGX board, so files look like what people have.
std::string SimulatedPciBusId(int gpu);

std::unique_ptr<SampleWriter> MakeSampleWriter(OutputFormat format, std::FILE* out,
                                               const WriterContext& context);

}  // namespace ww::write
