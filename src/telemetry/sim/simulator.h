// The simulator: a training job on N hosts x G GPUs, as a timeline of job phases (launch, model
// load, training, data starvation, checkpoints, hangs), with the ground truth of every sample.
//
// It models what the sensors do, not just the states: power.draw is a ~1 s moving average of the
// instantaneous power (simulated at 10 ms), utilization.gpu is the busy fraction of the last
// sample period, SM clocks fall after a few seconds without kernels, a power cap throttles clocks
// and sets the sw_power_cap event reason, memory follows process start, model load and exit.
// Everything is deterministic for a given seed.
// Thread-safety: a Simulator is used by one thread; separate instances are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/state.h"
#include "core/status.h"
#include "telemetry/sim/output_format.h"
#include "telemetry/source.h"

namespace ww::sim {

enum class PhaseKind {
  kNoProcess,        // no process on any GPU
  kLaunch,           // processes hold a CUDA context, no kernels (launch, data prep)
  kLoad,             // model weights move to the GPUs
  kTrain,            // compute interleaved with collectives
  kStarved,          // compute bursts separated by waits for the input pipeline
  kCheckpointAll,    // every rank saves its shard (GPUs mostly idle, D2H copies)
  kCheckpointRank0,  // rank 0 saves; the other ranks spin in the next collective
  kHangSpin,         // epoch-end imbalance: `ranks` run extra steps while the others wait, then
                     // every rank spins forever in mismatched collectives; culprits = `ranks`
  kHangExit,         // `ranks` exit (crash); the others spin in a collective; culprits = `ranks`
  // Honest verdicts (issue 14): jobs and stalls whose telemetry proves less.
  kSoloWork,          // one GPU working alone (inference, evaluation): compute, no collectives
  kSoloSmallKernels,  // one GPU pegged at low power by small kernels (eval, tiny batches): compute
  kQuietHeld,         // processes alive holding memory, no kernels (a server waiting for
                      // requests, or the log ends before the job exits): idle
  kOffGpuStall,       // every rank quiet holding memory, processes alive, stuck off the GPU (a
                      // data loader deadlock, a hung filesystem): a hang without culprits
  kPartialHang,       // `ranks` (one pipeline stage) hold memory quietly, the others spin in a
                      // collective they never leave: a hang, culprits = `ranks`
  kSteadyMidPower,    // every rank computing at about half its board's power, flat, 100 %
                      // utilization (an FP32 GEMM without tensor cores, a memory-bound kernel)
  kHostCrash,         // the hosts of `ranks` crash: their GPUs send no sample from then on (the
                      // node and its logger are gone); the others spin in a collective they never
                      // leave: a hang, culprits = `ranks`
  kEvalPass,          // an evaluation pass: every rank runs forward-only batches together, bursts
                      // of kernels at moderate power with short host-side gaps between them
                      // (metrics, the next batch), memory held, no gradient collectives: compute
};

struct Phase {
  PhaseKind kind;
  double duration_s;
  std::vector<int> ranks;  // global ranks (host * gpus_per_host + gpu) the phase singles out
  double lead_s = 4.0;     // kHangSpin: how long the late ranks compute before they spin
};

struct GpuModelParams {
  std::string name;
  double tdp_w;
  double idle_w;
  double max_sm_clock_mhz;
  double idle_sm_clock_mhz;
  double mem_clock_mhz;
  double memory_total_mib;
  // Board power of a rank spinning in a collective (pegged utilization, a polling kernel), in W;
  // 0: idle + 12 % of the range. It differs by generation: an A100 spins at ~35 % of its limit,
  // an H100 at ~20 % (the real 8xH100 traces: ~150 W), so triage must learn it from the trace.
  double spin_w = 0;
  // Devices per power reading (an MI250X package: 2 GCDs): the power and limit are the
  // package's, on its first device; the others report none (amd-smi's N/A).
  int devices_per_power_reading = 1;
};

struct ScenarioConfig {
  std::string name;
  int hosts = 1;
  int gpus_per_host = 8;
  int64_t interval_ms = 100;
  GpuModelParams model;
  double power_cap_w = 0;       // 0: the model's TDP
  double comm_fraction = 0.25;  // share of a training step spent in collectives
  double step_s = 1.5;
  uint64_t seed = 1;
  // Samples carry DCGM's PROF activity fields (engine, SM, occupancy, tensor, DRAM; NVLink and
  // PCIe bytes), averaged over the sample interval as DCGM does. nvidia-smi formats drop them.
  bool activity_counters = true;
  // A straggler (scenarios straggler, straggler-throttled): this global rank computes each step
  // straggler_slowdown times as long as the others, which wait for it in the step's collective;
  // throttled: because its board is power capped (lower power, sw_power_cap set). -1: none.
  int straggler_rank = -1;
  double straggler_slowdown = 1;
  bool straggler_throttled = false;
  int64_t start_unix_ms = 1763465360000;  // 2025-11-18T11:29:20Z
  std::vector<Phase> phases;
  // Fields the log does not have (nvidia-smi query names: memory.used, power.draw,
  // utilization.gpu, utilization.memory): left out of every sample, as a query without them.
  std::vector<std::string> drop_fields;
  // The triage options the scenario needs to be judged (0: the defaults): the off-GPU stall and
  // the partial hang are hangs only past --max-checkpoint-s, kept short here.
  double max_checkpoint_s = 0;
};

// A ground-truth hang: [start_ms, end_ms) on the job, and its culprit GPUs.
struct TruthHang {
  int64_t start_ms;
  int64_t end_ms;
  std::vector<GpuKey> culprits;
};

struct TruthLabel {
  int64_t timestamp_ms;
  GpuKey key;
  GpuState state;
};

// Names of built-in scenarios: healthy, starvation, checkpoint-all, checkpoint-rank0, hang-spin,
// hang-exit, multi-host, field-report, straggler, straggler-throttled, host-crash, and the
// honest-verdict ones (VerdictScenarioNames).
std::vector<std::string> ScenarioNames();

// single-gpu, single-gpu-nopower, end-tail (memory.used not logged), end-tail-held,
// off-gpu-stall, partial-hang (these two need --max-checkpoint-s 300), steady-midpower, eval-pass.
std::vector<std::string> VerdictScenarioNames();

// The field names drop_fields accepts.
std::vector<std::string> DroppableFields();

struct ScenarioOptions {
  std::string model;  // a known model name or match ("h100"), or "" for the default
  int hosts = 0;      // 0: the scenario's default
  int gpus_per_host = 0;
  int64_t interval_ms = 100;
  double power_cap_w = 0;
  uint64_t seed = 1;
  std::vector<std::string> drop_fields;  // added to the scenario's own (see ScenarioConfig)
  bool activity_counters = true;
};

// Builds a named scenario. Unknown names and models are errors listing the valid ones.
// A model absent from the table can be given as "NAME:TDP_W:IDLE_W".
Result<ScenarioConfig> MakeScenario(const std::string& name, const ScenarioOptions& options);

// Stretches phases (and a hang's lead) so each spans enough samples at coarse sampling (above
// 1 s: at least 8 intervals a phase, 3 a lead; checkpoints at most 600 s). MakeScenario calls it;
// a hand-made config may too. No change at 1 s sampling or finer.
void FitPhasesToInterval(ScenarioConfig* config);

// Runs the simulation. Samples come out tick by tick, every host's GPUs per tick.
class Simulator {
 public:
  explicit Simulator(ScenarioConfig config);
  ~Simulator();

  // Appends the next tick (all GPUs of all hosts) to *samples and their truth to *truth.
  // Returns false once the scenario is over.
  bool NextTick(std::vector<GpuSample>* samples, std::vector<TruthLabel>* truth);

  const ScenarioConfig& config() const { return config_; }
  const std::vector<std::string>& host_names() const { return host_names_; }
  std::vector<TruthHang> truth_hangs() const;
  // Truth seconds of communication and of compute over the whole run, per GPU summed.
  double truth_comm_seconds() const { return truth_comm_s_; }
  double truth_compute_seconds() const { return truth_compute_s_; }
  std::string GpuUuid(GpuKey key) const;
  // The GPU name the logs carry: the model's, or "" when the scenario drops "name".
  std::string ModelNameAsLogged() const;

 private:
  struct GpuSim;
  struct Instant {
    GpuState truth;
    bool busy;
    double power_w;
    double mem_mib;
    double util_mem_pct;
    bool process;
    bool reporting = true;  // false: the GPU's host is down, no sample (kHostCrash)
  };
  // What the SMs, tensor pipes, DRAM and links do at one instant (DCGM PROF fields).
  struct Activity {
    double gr = 0, sm = 0, occupancy = 0, tensor = 0, dram = 0;
    double nvlink_bytes_per_s = 0, pcie_bytes_per_s = 0;
  };
  Activity ActivityOf(const Instant& in, const GpuSim& gpu) const;
  Instant InstantAt(int rank, double t_s);
  int PhaseIndexAt(double t_s, double* phase_start_s) const;
  void DropFields(GpuSample* sample) const;  // config_.drop_fields

  ScenarioConfig config_;
  std::vector<std::string> host_names_;
  std::vector<std::unique_ptr<GpuSim>> gpus_;
  std::mt19937_64 rng_;
  std::vector<double> phase_starts_s_;
  double total_s_ = 0;
  double t_s_ = 0;  // simulated time
  int64_t tick_ = 0;
  double truth_comm_s_ = 0;
  double truth_compute_s_ = 0;
  double sum_comm_jitter_ = 0;
  std::vector<double> starved_wait_s_;   // per phase: wait for each batch in kStarved
  std::vector<double> starved_burst_s_;  // per phase: compute per batch in kStarved
};

// A TelemetrySource over a simulated scenario (for `watch --source sim:NAME`).
std::unique_ptr<TelemetrySource> MakeSimSource(ScenarioConfig config);

}  // namespace ww::sim

namespace ww::sim {

struct WriteOptions {
  const OutputFormat* format = nullptr;  // nullptr: DefaultOutputFormat()
  // One per host (one for the whole job in a job-wide format: prometheus-json, openmetrics),
  // or empty with out_dir.
  std::vector<std::string> out_paths;
  std::string out_dir;     // writes DIR/<host><ext> (DIR/<scenario><ext> for a job-wide format)
  std::string truth_csv;   // host,timestamp,gpu,state
  std::string truth_json;  // hang episodes with culprits, communication share
  bool minimal_columns = false;       // timestamp, power.draw, utilization.gpu, memory.used
  bool interleave_job_lines = false;  // smi-table: a training script's lines between tables
};

// Runs the scenario to its end and writes the logs in options.format, and the truth files.
// Returns the log paths.
Result<std::vector<std::string>> WriteScenario(const ScenarioConfig& config,
                                               const WriteOptions& options);

}  // namespace ww::sim
