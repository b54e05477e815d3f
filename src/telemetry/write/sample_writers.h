// Writers of GpuSamples in the formats other tools produce, so the simulator can hand wattwatch
// (and everyone else's tools) the files people actually have; one WriterRow per format (below),
// each in the file of its writer.
//
// Every writer is fed the same samples, one sampling tick at a time (the GPUs of one tick, GPU
// order), and writes each reading as the real tool prints it: its names, units and number
// formats. An absent reading is written as the tool writes a missing one (N/A, an empty cell,
// no series), never as 0. Per-host formats get one writer per host; a job-wide format
// (WriterRow::job_wide: a Prometheus server's view, LLview's job table) one for the whole job.
// Ownership: a writer does not own its FILE; writer rows are constants with static storage.
// Thread-safety: a writer, one thread at a time; rows are immutable, any thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/status.h"

namespace ww::write {

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

// One format `simulate --format` writes: a row defined in the file that implements the writer,
// attached to the row of the format that reads its files back (ingest/format.h,
// Format::writers). Everything that enumerates the simulator's formats (--format parsing, its
// help, file extensions, the job-wide and interval checks; sim/output_format.h) loops over them.
struct WriterRow {
  const char* name = nullptr;  // --format NAME; nullptr: the name of the format reading it back
  int order = 0;               // position in --format's list and --help (unique; a test checks)
  const char* extension = "";  // of --out-dir's files: ".csv"
  bool job_wide = false;       // every host in one file (a Prometheus server's view): one writer
  // Why the sampling interval must be whole seconds, for the error; nullptr: any interval.
  const char* whole_seconds_because = nullptr;
  // What it writes, for --help ('\n' continues on a line of its own); nullptr: not listed.
  const char* help = nullptr;
  // An example's arguments for --help, `{}` standing for the format's name; nullptr: none.
  const char* example = nullptr;
  std::unique_ptr<SampleWriter> (*make)(std::FILE* out, const WriterContext& context) = nullptr;
};

// The rows, each array defined in its writers' file and attached to its reader's Format row.
extern const WriterRow kNvidiaSmiWriters[2];     // nvsmi_writers.cc: the CSV, in a shell loop
extern const WriterRow kDcgmiDmonWriters[1];     // dcgm_writers.cc
extern const WriterRow kDcgmExporterWriters[2];  // dcgm_writers.cc: with and without times
extern const WriterRow kPromJsonWriters[2];      // dcgm_writers.cc: query_range, OpenMetrics
extern const WriterRow kWandbWriters[2];         // wandb_writer.cc: CSV, JSON lines
extern const WriterRow kSmiTableWriters[1];      // smi_table_writer.cc
extern const WriterRow kCustomCsvWriters[2];     // custom_csv_writers.cc: a row per GPU, per tick
extern const WriterRow kGpustatWriters[1];       // gpustat_writer.cc
extern const WriterRow kWideWriters[1];          // wide_power_writer.cc
extern const WriterRow kLlviewWriters[1];        // llview_writer.cc
extern const WriterRow kAmdSmiWriters[3];        // amd_writers.cc: monitor --csv, metric --json,
                                                 // the monitor table
extern const WriterRow kRocmSmiWriters[2];       // amd_writers.cc: --csv, --json, in a loop
extern const WriterRow kHlSmiWriters[1];         // hl_smi_writer.cc

}  // namespace ww::write
