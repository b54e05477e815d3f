// The scenario catalogue: the built-in scenarios (names, phases, hosts, models) and the
// stretching of phases at coarse sampling. The physics that runs them is simulator.cc.
#include <fmt/format.h>

#include <algorithm>

#include "core/sample_ranges.h"
#include "telemetry/gpu_models.h"
#include "telemetry/sim/simulator.h"

namespace ww::sim {
namespace {

// Spin power from the board table (gpu_models.cc): a rank polling in NCCL keeps the clocks up
// with almost no SM work. The public figure where there is one (an A100 ~35 % of its limit, an
// H100 ~20 %, a V100 ~23 %, a T4 57 %, a GB200 ~21 %); 0 for the others: idle + 12 % of the range.
double SpinPowerW(const GpuModel& m) { return m.spin_typical_w; }

GpuModelParams FromTable(const GpuModel& m) {
  return {std::string(m.name),        m.tdp_w,         m.idle_w,           m.max_sm_clock_mhz,
          m.idle_sm_clock_mhz,        m.mem_clock_mhz, m.memory_total_mib, SpinPowerW(m),
          m.devices_per_power_reading};
}

}  // namespace

// ---------------------------------------------------------------- coarse sampling

// A phase must span enough samples to be seen at all: at 15-30 s sampling (dcgm-exporter's
// default collection, W&B's system metrics) a 12 s launch or a 4 s lead of the late ranks would
// fall between two readings. Phases are stretched to kMinPhaseIntervals samples and a hang's
// lead to kMinLeadIntervals; nothing changes at 1 s sampling or finer, so the scenarios keep
// their shapes there. A checkpoint is never stretched past what a checkpoint takes.
void FitPhasesToInterval(ScenarioConfig* c) {
  const double interval_s = static_cast<double>(c->interval_ms) / 1000.0;
  if (interval_s <= 1.0) return;
  constexpr double kMinPhaseIntervals = 8;
  constexpr double kMinLeadIntervals = 3;
  constexpr double kMaxCheckpointS = 600;  // well below triage's --max-checkpoint-s
  for (Phase& p : c->phases) {
    double want = kMinPhaseIntervals * interval_s;
    if (p.kind == PhaseKind::kCheckpointAll || p.kind == PhaseKind::kCheckpointRank0) {
      want = std::min(want, kMaxCheckpointS);
    }
    p.duration_s = std::max(p.duration_s, want);
    if (p.kind == PhaseKind::kHangSpin) {
      p.lead_s = std::max(p.lead_s, kMinLeadIntervals * interval_s);
      p.duration_s = std::max(p.duration_s, p.lead_s + want);
    }
  }
}

std::vector<std::string> ScenarioNames() {
  std::vector<std::string> names = {
      "healthy",   "starvation",          "checkpoint-all", "checkpoint-rank0",
      "hang-spin", "hang-exit",           "multi-host",     "field-report",
      "straggler", "straggler-throttled", "host-crash"};
  for (auto& n : VerdictScenarioNames()) names.push_back(std::move(n));
  return names;
}

std::vector<std::string> VerdictScenarioNames() {
  return {"single-gpu",    "single-gpu-nopower", "end-tail",        "end-tail-held",
          "off-gpu-stall", "partial-hang",       "steady-midpower", "eval-pass"};
}

std::vector<std::string> DroppableFields() {
  return {"memory.used",        "power.draw",  "utilization.gpu",
          "utilization.memory", "power.limit", "name"};
}

namespace {

// The honest-verdict scenarios (issue 14), kept apart from the others. False: not one of them.
bool MakeVerdictScenario(const std::string& name, ScenarioConfig& c) {
  using K = PhaseKind;
  auto prologue = [&] {
    c.phases.push_back({K::kNoProcess, 5, {}});
    c.phases.push_back({K::kLaunch, 12, {}});
    c.phases.push_back({K::kLoad, 6, {}});
  };
  const int world = c.hosts * c.gpus_per_host;
  if (name == "single-gpu") {
    // One GPU serving/evaluating: heavy batches, an evaluation pass of small kernels (pegged
    // utilization at low power, like a spin), a pause holding the model, more work.
    prologue();
    c.phases.push_back({K::kSoloWork, 60, {}});
    c.phases.push_back({K::kSoloSmallKernels, 90, {}});
    c.phases.push_back({K::kQuietHeld, 30, {}});
    c.phases.push_back({K::kSoloWork, 40, {}});
    c.phases.push_back({K::kNoProcess, 10, {}});
  } else if (name == "single-gpu-nopower") {
    // A hyper-parameter search on one GPU logged without power: trials, pauses holding the
    // model, a process exit and a relaunch between trials.
    prologue();
    c.phases.push_back({K::kSoloWork, 50, {}});
    c.phases.push_back({K::kQuietHeld, 20, {}});
    c.phases.push_back({K::kSoloSmallKernels, 30, {}});
    c.phases.push_back({K::kNoProcess, 15, {}});
    c.phases.push_back({K::kLaunch, 10, {}});
    c.phases.push_back({K::kLoad, 6, {}});
    c.phases.push_back({K::kSoloWork, 50, {}});
    c.phases.push_back({K::kNoProcess, 10, {}});
    c.drop_fields.push_back("power.draw");
  } else if (name == "steady-midpower") {
    // A team's own logger on 8 GPUs: minutes of steady compute at half the board's power, flat,
    // 100 % utilization (an FP32 GEMM), logged without the name, the limit or memory. A range
    // learned from the log alone once read it as every rank spinning: a false hang.
    prologue();
    c.phases.push_back({K::kSteadyMidPower, 240, {}});
    c.phases.push_back({K::kNoProcess, 10, {}});
    for (const char* f : {"name", "power.limit", "memory.used"}) c.drop_fields.push_back(f);
  } else if (name == "eval-pass") {
    // Training with an evaluation pass every so often (HF Trainer's eval_steps): every rank runs
    // forward-only batches together at moderate power with host-side gaps, holding the model.
    // Bursts and gaps, as data starvation shows them, but work: the GPUs are not waiting.
    prologue();
    c.phases.push_back({K::kTrain, 60, {}});
    c.phases.push_back({K::kEvalPass, 90, {}});
    c.phases.push_back({K::kTrain, 60, {}});
    c.phases.push_back({K::kEvalPass, 60, {}});
    c.phases.push_back({K::kTrain, 40, {}});
    c.phases.push_back({K::kNoProcess, 8, {}});
  } else if (name == "end-tail") {
    // A DDP run ends; the log goes on for minutes with the GPUs at their idle floor. Logged
    // without memory.used, nothing shows the processes left (the field failure: "all ranks
    // saving" for minutes).
    prologue();
    c.phases.push_back({K::kTrain, 60, {}});
    c.phases.push_back({K::kCheckpointRank0, 30, {}});
    c.phases.push_back({K::kTrain, 40, {}});
    c.phases.push_back({K::kNoProcess, 180, {}});
    c.drop_fields.push_back("memory.used");
  } else if (name == "end-tail-held") {
    // Training, a sharded checkpoint, training, then the log ends while the processes still
    // hold their memory without kernels (the job was stopped after the log): idle, not a save.
    prologue();
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kCheckpointAll, 30, {}});
    c.phases.push_back({K::kTrain, 40, {}});
    c.phases.push_back({K::kQuietHeld, 90, {}});
  } else if (name == "off-gpu-stall") {
    // A real sharded checkpoint, then every rank stuck off the GPU past --max-checkpoint-s.
    prologue();
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kCheckpointAll, 30, {}});
    c.phases.push_back({K::kTrain, 40, {}});
    c.phases.push_back({K::kOffGpuStall, 420, {}});
    c.phases.push_back({K::kNoProcess, 10, {}});
    c.max_checkpoint_s = 300;
  } else if (name == "partial-hang") {
    // A rank-0 checkpoint (one quiet rank, the others spin: stays a checkpoint), then one
    // pipeline stage (the upper half of the ranks) stuck quiet while the others spin.
    prologue();
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kCheckpointRank0, 40, {}});
    c.phases.push_back({K::kTrain, 40, {}});
    std::vector<int> stage;
    for (int r = world / 2; r < world; ++r) stage.push_back(r);
    c.phases.push_back({K::kPartialHang, 420, stage});
    c.phases.push_back({K::kNoProcess, 10, {}});
    c.max_checkpoint_s = 300;
  } else {
    return false;
  }
  return true;
}

}  // namespace

Result<ScenarioConfig> MakeScenario(const std::string& name, const ScenarioOptions& options) {
  ScenarioConfig c;
  c.name = name;
  c.seed = options.seed;
  c.activity_counters = options.activity_counters;
  c.interval_ms = options.interval_ms;
  if (c.interval_ms < 10 || c.interval_ms > 60000) {
    return Status::InvalidInput(
        fmt::format("--interval-ms {}: must be between 10 and 60000", c.interval_ms));
  }
  // Model.
  std::string model = options.model;
  if (model.empty()) model = name == "field-report" ? "b300" : "h100";
  if (std::count(model.begin(), model.end(), ':') == 2) {
    auto a = model.find(':');
    auto b = model.find(':', a + 1);
    try {
      c.model = {model.substr(0, a),
                 std::stod(model.substr(a + 1, b - a - 1)),
                 std::stod(model.substr(b + 1)),
                 1900,
                 300,
                 2600,
                 98304};
    } catch (...) {
      return Status::InvalidInput(fmt::format("--model '{}': expected NAME:TDP_W:IDLE_W", model));
    }
    // Below the readers' power cap, or the simulated logs would be read as bad cells.
    if (!(c.model.tdp_w > c.model.idle_w * 2 && c.model.idle_w > 0 &&
          c.model.tdp_w < kPowerRangeW.hi)) {
      return Status::InvalidInput(
          fmt::format("--model '{}': need 0 < 2*IDLE_W < TDP_W < {}", model, kPowerRangeW.hi));
    }
  } else if (auto m = LookupGpuModel(model)) {
    c.model = FromTable(*m);
  } else {
    std::string known;
    for (const auto& k : KnownGpuModels()) known += fmt::format(" {}", k.match);
    return Status::InvalidInput(
        fmt::format("--model '{}': unknown; use one of{} or NAME:TDP_W:IDLE_W for any other GPU",
                    model, known));
  }
  c.power_cap_w = options.power_cap_w;
  if (c.power_cap_w < 0 || (c.power_cap_w > 0 && c.power_cap_w < c.model.idle_w * 1.5)) {
    return Status::InvalidInput(
        fmt::format("--power-cap-w {}: must be above 1.5x the idle power ({} W)", c.power_cap_w,
                    c.model.idle_w));
  }
  if (c.power_cap_w > c.model.tdp_w) {
    // A board cannot be capped above its own limit; a cap above it would simulate power no
    // board draws.
    return Status::InvalidInput(fmt::format("--power-cap-w {}: above the {}'s TDP ({} W)",
                                            c.power_cap_w, c.model.name, c.model.tdp_w));
  }
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> u01(0, 1);
  c.comm_fraction = 0.12 + 0.3 * u01(rng);
  // A 30B-class model under FSDP: a step is seconds (the field report: ~53k tok/s on 16 GPUs,
  // 64 x 4096 tokens per step, ~5 s).
  c.step_s = 2.0 + 4.0 * u01(rng);

  const int default_hosts =
      (name == "multi-host" || name == "field-report" || name == "host-crash") ? 2 : 1;
  c.hosts = options.hosts > 0 ? options.hosts : default_hosts;
  const bool one_gpu_scenario = name == "single-gpu" || name == "single-gpu-nopower";
  c.gpus_per_host = options.gpus_per_host > 0 ? options.gpus_per_host : (one_gpu_scenario ? 1 : 8);
  if (c.hosts > 64 || c.gpus_per_host > 16) {
    return Status::InvalidInput("at most 64 hosts of 16 GPUs");
  }
  const int world = c.hosts * c.gpus_per_host;
  // A culprit rank that is not rank 0, chosen by the seed.
  const int culprit = world > 1 ? 1 + static_cast<int>(u01(rng) * (world - 1)) : 0;
  using K = PhaseKind;
  auto prologue = [&] {
    c.phases.push_back({K::kNoProcess, 5, {}});
    c.phases.push_back({K::kLaunch, 12, {}});
    c.phases.push_back({K::kLoad, 6, {}});
  };
  if (name == "healthy") {
    prologue();
    c.phases.push_back({K::kTrain, 150, {}});
    c.phases.push_back({K::kNoProcess, 8, {}});
  } else if (name == "starvation") {
    prologue();
    c.phases.push_back({K::kTrain, 40, {}});
    c.phases.push_back({K::kStarved, 80, {}});
    c.phases.push_back({K::kTrain, 40, {}});
    c.phases.push_back({K::kNoProcess, 8, {}});
  } else if (name == "checkpoint-all") {
    prologue();
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kCheckpointAll, 30, {}});
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kCheckpointAll, 90, {}});
    c.phases.push_back({K::kTrain, 30, {}});
    c.phases.push_back({K::kNoProcess, 8, {}});
  } else if (name == "checkpoint-rank0") {
    prologue();
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kCheckpointRank0, 20, {}});
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kCheckpointRank0, 150, {}});  // longer than any hang confirmation
    c.phases.push_back({K::kTrain, 30, {}});
    c.phases.push_back({K::kNoProcess, 8, {}});
  } else if (name == "hang-spin") {
    prologue();
    c.phases.push_back({K::kTrain, 60, {}});
    c.phases.push_back({K::kHangSpin, 240, {culprit}, 3 + 3 * u01(rng)});
    c.phases.push_back({K::kNoProcess, 10, {}});
  } else if (name == "hang-exit") {
    prologue();
    c.phases.push_back({K::kTrain, 60, {}});
    c.phases.push_back({K::kHangExit, 200, {culprit}});
    c.phases.push_back({K::kNoProcess, 10, {}});
  } else if (name == "multi-host") {
    prologue();
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kCheckpointRank0, 40, {}});
    c.phases.push_back({K::kTrain, 50, {}});
    c.phases.push_back({K::kStarved, 40, {}});
    c.phases.push_back({K::kTrain, 30, {}});
    c.phases.push_back({K::kHangExit, 150, {world - 1 - culprit % c.gpus_per_host}});
    c.phases.push_back({K::kNoProcess, 10, {}});
  } else if (name == "field-report") {
    // Qwen3-32B full fine-tuning on 16 GPUs: train, a rank-0 checkpoint, train, then the
    // epoch-end deadlock from per-rank tokenization imbalance until NCCL's watchdog fires.
    prologue();
    c.phases.push_back({K::kTrain, 90, {}});
    c.phases.push_back({K::kCheckpointRank0, 45, {}});
    c.phases.push_back({K::kTrain, 60, {}});
    c.phases.push_back({K::kHangSpin, 300, {world / 2 + 3}, 4});
    c.phases.push_back({K::kNoProcess, 10, {}});
  } else if (name == "host-crash") {
    // The last host goes down mid-training (a kernel panic, a lost network): its GPUs and its
    // logger fall silent, the other hosts' ranks wait for it in a collective until the end.
    // With one host, its last GPU's log stops instead.
    prologue();
    c.phases.push_back({K::kTrain, 60, {}});
    std::vector<int> down;
    for (int r = (c.hosts - 1) * c.gpus_per_host; r < world; ++r) down.push_back(r);
    if (c.hosts == 1) down = {world - 1};
    if (world < 2) return Status::InvalidInput("host-crash needs at least two GPUs");
    c.phases.push_back({K::kHostCrash, 200, down});
  } else if (name == "straggler" || name == "straggler-throttled") {
    // One rank consistently slower (a degraded board, a power cap): the others wait for it in
    // every step's collective.
    prologue();
    c.phases.push_back({K::kTrain, 300, {}});
    c.phases.push_back({K::kNoProcess, 8, {}});
    c.straggler_rank = culprit;
    c.straggler_slowdown = 1.25 + 0.2 * u01(rng);
    c.straggler_throttled = name == "straggler-throttled";
  } else if (!MakeVerdictScenario(name, c)) {
    std::string names;
    for (const auto& n : ScenarioNames()) names += " " + n;
    return Status::InvalidInput(fmt::format("unknown scenario '{}'; one of:{}", name, names));
  }
  for (const Phase& p : c.phases) {
    for (int r : p.ranks) {
      if (r < 0 || r >= world) return Status::Internal("scenario rank out of range");
    }
  }
  const std::vector<std::string> droppable = DroppableFields();
  for (const std::string& f : options.drop_fields) {
    if (std::find(droppable.begin(), droppable.end(), f) == droppable.end()) {
      std::string known;
      for (const auto& d : droppable) known += " " + d;
      return Status::InvalidInput(fmt::format(
          "--drop-columns: '{}' is not a field the simulator can leave out; one of:{}", f, known));
    }
    if (std::find(c.drop_fields.begin(), c.drop_fields.end(), f) == c.drop_fields.end()) {
      c.drop_fields.push_back(f);
    }
  }
  FitPhasesToInterval(&c);
  return c;
}

}  // namespace ww::sim
