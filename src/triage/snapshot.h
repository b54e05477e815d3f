// The one-snapshot verdict, pure: what on-call engineers have when a job looks stuck is one
// `nvidia-smi` table, one dcgm-exporter scrape, or a log shorter than a hang takes to confirm.
// That cannot confirm a hang (nothing shows the wait lasting), but it can show its signature:
// every rank of the job pegged at 100 % utilization while drawing the power its board draws
// waiting in a collective (gpu_models.h), or some ranks waiting so while others sit at 0 %
// holding memory, never joining. Each GPU is placed against its own board's bands, and the job
// is `suspected`, `none` or `unknown` (when the board, the power or the utilization cannot place
// a reading: the verdict then says what is missing rather than guessing).
// No I/O, no clocks, no state: table-tested in tests/triage/snapshot_test.cc.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/sample.h"
#include "triage/classifier.h"

namespace ww::triage {

// The hang verdict of a triage, in the JSON as `hang_verdict`.
enum class HangVerdict : uint8_t {
  kNone,       // the log shows no hang (long enough to, or a snapshot of work or idle)
  kSuspected,  // a snapshot (or a log under hang_confirm_s) fits a collective wait
  kConfirmed,  // a hang lasted hang_confirm_s
  kUnknown,    // the evidence cannot support a verdict (what is missing is said)
};
const char* HangVerdictName(HangVerdict v);  // "none", "suspected", "confirmed", "unknown"

// One GPU's reading: the one snapshot, or the typical reading of a short log (power and
// utilization averaged, the rest the latest).
struct SnapshotReading {
  GpuKey key;
  std::string name;  // as logged; "" when not
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<double> util_pct;
  std::optional<double> util_mem_pct;
  std::optional<double> mem_used_mib;
  std::optional<double> mem_total_mib;
  std::optional<double> temperature_c;
  std::optional<double> sm_activity;
  std::optional<double> pcie_bytes_per_s;    // tx + rx, when logged
  std::optional<double> nvlink_bytes_per_s;  // tx + rx, when logged
};

enum class SnapshotState : uint8_t {
  kNoProcess,  // no process holds memory: not part of the job
  kQuiet,      // a process holds memory, no kernels: saving, loading, or never joined
  kWaiting,    // pegged at its board's spin power: waiting in a collective
  kWorking,    // kernels at working power, or moving memory / bytes
  kUnclear,    // pegged between the board's spin band and its compute band
  kUnknown,    // the reading cannot be placed (no utilization, or power with no board or limit)
};
const char* SnapshotStateName(SnapshotState s);

struct SnapshotGpu {
  GpuKey key;
  SnapshotState state = SnapshotState::kUnknown;
  std::string board;  // the matched board's name, "" when unknown
  // "41 W of 70 W (59 %), 100 %, 2566 MiB: inside the band a Tesla T4 draws waiting (10-48 W)"
  std::string text;
};

struct SnapshotVerdict {
  HangVerdict verdict = HangVerdict::kUnknown;
  std::vector<SnapshotGpu> gpus;     // in the order of the readings
  std::vector<std::string> reasons;  // why suspected / none / unknown, in words
  std::vector<GpuKey> culprits;      // suspected: the quiet ranks that never joined
  std::vector<std::string> missing;  // unknown: the fields or knowledge that would place it
};

// world_size: ranks in the job (0: the GPUs holding a process in the readings). A lone GPU pegged
// at low power with no peer is no collective wait (small kernels look the same).
SnapshotVerdict JudgeSnapshot(std::span<const SnapshotReading> readings, const Thresholds& t,
                              int world_size = 0);

}  // namespace ww::triage
