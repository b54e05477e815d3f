// Board knowledge: what each board people train and serve on (NVIDIA, AMD Instinct, Intel Gaudi)
// draws idle, while a rank waits in a collective (a spin: utilization pegged, almost no SM work)
// and while it computes, with the source of each number. The table (gpu_models.cc) is the one
// place these numbers live: the triage calibration, the one-snapshot verdict and the simulator
// all read it. A board missing here still works: triage then learns the range from the log
// itself, and says so.
//
// Matching (MatchBoard): by the name as nvidia-smi, DCGM and W&B print it ("NVIDIA H100 80GB
// HBM3", "Tesla V100-SXM2-16GB", the truncated "Tesla V100-SXM2..."), as amd-smi/rocm-smi print
// it ("AMD Instinct MI300X", "AMD Instinct MI250X/MI250", "0x74a1") and as hl-smi prints it
// ("HL-225"), on token boundaries and longest key first (so "NVIDIA GB200" is a GB200, not a
// B200); else by power limit and memory total when exactly one kind of board has both (when
// boards of several vendors fit, the NVIDIA ones: name-less logs come from NVIDIA's tools).
// Thread-safety: the table is immutable after first use; every function may be called from any
// thread.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ww {

enum class GpuVendor { kNvidia, kAmd, kIntel };

struct GpuModel {
  std::string_view name;   // as the vendor's tool (nvidia-smi, amd-smi, hl-smi) prints it
  std::string_view match;  // the key `simulate --model` takes (and the primary name key)
  double tdp_w;            // default board power limit
  double idle_w;           // no process, clocks down
  double max_sm_clock_mhz;
  double idle_sm_clock_mhz;
  double mem_clock_mhz;
  double memory_total_mib;  // 0: not reported (unified memory)
  // Idle with a CUDA context held (P0, no kernels).
  double context_w = 0;
  // The band a rank waiting in a collective draws (utilization pegged): spin_lo_w..spin_hi_w.
  // A polling kernel can read as low as the idle floor (a DGX-1 V100 hang read idle power), so
  // the lower edge is informative only; the upper edge is what separates a wait from work.
  double spin_lo_w = 0;
  double spin_hi_w = 0;
  // Sustained dense compute draws at least this (an FP32 GEMM or a memory-bound kernel can sit
  // at half the limit; a tensor-core GEMM near the limit).
  double compute_lo_w = 0;
  // A typical spin reading (the simulator's level): the public figure where there is one.
  double spin_typical_w = 0;
  // Where the numbers come from: the data sheet for the limit and memory; a public hang thread
  // or measured trace for the spin band; "derived" where a number follows a rule (below).
  std::string_view source;
  bool spin_derived = true;  // no public measurement of this board's spin: the band is derived
  // Further name keys (normalized: lower case, without "nvidia"/"tesla"/"geforce"/"quadro").
  std::span<const std::string_view> keys = {};
  GpuVendor vendor = GpuVendor::kNvidia;
  // Devices that share one power reading: an MI250/MI250X OAM package holds two GCDs, each a
  // device of its own, and the package's power (and limit) is reported on the first GCD, the
  // second reading N/A. The watts above are then per package, the memory per device (GCD).
  int devices_per_power_reading = 1;
};

// The power limits a board of a known model can be set to: NVIDIA's SXM boards allow limits from
// roughly a third of the default (H100: 200-700 W, A100: 150-400 W, B200: 400-1000 W) up to the
// default TDP. The range is kept wide (a quarter of the TDP to 10 % above it) so that an odd but
// real setting is not called implausible; a logged limit outside it is a misread or a unit slip
// (a 2000 W H100), not a board setting.
inline constexpr double kMinPowerLimitFracOfTdp = 0.25;
inline constexpr double kMaxPowerLimitFracOfTdp = 1.10;

struct PowerLimitRange {
  double min_w;
  double max_w;
};
PowerLimitRange PlausiblePowerLimits(const GpuModel& model);

const std::vector<GpuModel>& KnownGpuModels();

// How a board was recognized.
enum class BoardMatchKind {
  kName,           // the name, whole or on token boundaries
  kTruncatedName,  // a name nvidia-smi cut ("Tesla V100-SXM2..."): the boards it can be
  kLimitMemory,    // no usable name: power limit and memory total fit one kind of board
};

struct BoardMatch {
  const GpuModel* model = nullptr;
  BoardMatchKind kind = BoardMatchKind::kName;
  // "name", "truncated name 'Tesla V100-SXM2...'", "power limit 300 W and 16130 MiB"
  std::string how;
};

// The board for a name (may be empty), a logged power limit and a memory total (either may be
// absent). nullopt: no board fits; the caller learns from the log and says so.
std::optional<BoardMatch> MatchBoard(std::string_view name, std::optional<double> limit_w = {},
                                     std::optional<double> memory_total_mib = {});

// The table entry for a name (MatchBoard by name alone), if any.
std::optional<GpuModel> LookupGpuModel(std::string_view name);

// The highest power any board was measured drawing while waiting in a collective (the upper
// edges of the bands that are not derived: a GB200 at 232-280 W). With a margin, a pegged
// reading above it is taken for work when the board is unknown.
double MaxMeasuredSpinPowerW();
// The wait ceiling for a board the table does not know: the highest measured wait with a 20 %
// margin (derived bands of larger boards are not measurements, and a false hang kills a healthy
// job): a pegged reading above it is taken for work.
double UnknownBoardSpinCeilingW();

}  // namespace ww
