#include "triage/snapshot.h"

#include <fmt/format.h>

#include <algorithm>

#include "telemetry/gpu_models.h"

namespace ww::triage {
namespace {

// Without a known board, a logged limit still places power: measured waits sit at 14-26 % of the
// limit on every board but the T4 (which is in the table), work at half of it and above.
constexpr double kUnknownBoardSpinMaxFrac = 0.26;
constexpr double kUnknownBoardWorkMinFrac = 0.5;

std::string Mib(double v) { return fmt::format("{:.0f} MiB", v); }

struct Placed {
  SnapshotState state;
  std::string why;
};

Placed PlacePegged(const SnapshotReading& r, const GpuModel* board, const Thresholds& t,
                   std::vector<std::string>* missing) {
  // Counters that see work directly outrank power.
  if (r.sm_activity) {
    if (*r.sm_activity < t.spin_sm_activity_max) {
      return {SnapshotState::kWaiting,
              fmt::format("SM activity {:.2f}: a polling kernel", *r.sm_activity)};
    }
    if (*r.sm_activity >= t.spin_sm_activity_band_max) {
      return {SnapshotState::kWorking, fmt::format("SM activity {:.2f}", *r.sm_activity)};
    }
  }
  if (r.util_mem_pct && *r.util_mem_pct >= t.spin_mem_util_max_pct) {
    return {SnapshotState::kWorking,
            fmt::format("memory utilization {:.0f} %: it moves memory", *r.util_mem_pct)};
  }
  for (const auto& [bytes, what] :
       {std::pair{r.pcie_bytes_per_s, "PCIe"}, std::pair{r.nvlink_bytes_per_s, "NVLink"}}) {
    if (bytes && *bytes >= t.spin_link_bytes_per_s_max) {
      return {SnapshotState::kWorking, fmt::format("{} traffic {:.0f} MB/s", what, *bytes / 1e6)};
    }
  }
  if (!r.power_w) {
    missing->push_back("power.draw");
    return {SnapshotState::kUnknown, "no power reading: spinning or computing cannot be told"};
  }
  const double p = *r.power_w;
  if (board != nullptr) {
    const std::string bands =
        fmt::format("{} waits in a collective at {:.0f}-{:.0f} W{}, computes at >= {:.0f} W",
                    board->name, board->spin_lo_w, board->spin_hi_w,
                    board->spin_derived ? " (derived)" : "", board->compute_lo_w);
    if (p <= board->spin_hi_w) return {SnapshotState::kWaiting, "inside the band: " + bands};
    if (p >= board->compute_lo_w) return {SnapshotState::kWorking, "working power: " + bands};
    return {SnapshotState::kUnclear,
            "between the bands (a collective moving data, or light "
            "work): " +
                bands};
  }
  const double ceiling = UnknownBoardSpinCeilingW();
  if (p > ceiling) {
    return {SnapshotState::kWorking,
            fmt::format("no board was measured waiting above {:.0f} W", ceiling)};
  }
  if (r.power_limit_w && *r.power_limit_w > 0) {
    const double frac = p / *r.power_limit_w;
    if (frac <= kUnknownBoardSpinMaxFrac) {
      return {SnapshotState::kWaiting,
              fmt::format("{:.0f} % of its limit: where measured waits sit (14-26 %) on an "
                          "unknown board",
                          100 * frac)};
    }
    if (frac >= kUnknownBoardWorkMinFrac) {
      return {SnapshotState::kWorking, fmt::format("{:.0f} % of its limit", 100 * frac)};
    }
    return {
        SnapshotState::kUnclear,
        fmt::format("{:.0f} % of its limit on an unknown board: a wait or light work", 100 * frac)};
  }
  missing->push_back("power.limit or a known board name");
  return {SnapshotState::kUnknown, "unknown board and no power.limit: its power cannot be placed"};
}

SnapshotGpu PlaceGpu(const SnapshotReading& r, const Thresholds& t,
                     std::vector<std::string>* missing) {
  SnapshotGpu g;
  g.key = r.key;
  const auto match = MatchBoard(r.name, r.power_limit_w, r.mem_total_mib);
  const GpuModel* board = match ? match->model : nullptr;
  if (board != nullptr) g.board = std::string(board->name);
  std::string numbers;
  if (r.power_w) {
    numbers = fmt::format("{:.0f} W", *r.power_w);
    if (r.power_limit_w && *r.power_limit_w > 0) {
      numbers += fmt::format(" of {:.0f} W ({:.0f} %)", *r.power_limit_w,
                             100 * *r.power_w / *r.power_limit_w);
    }
  } else {
    numbers = "power -";
  }
  numbers += r.util_pct ? fmt::format(", {:.0f} %", *r.util_pct) : ", utilization -";
  if (r.mem_used_mib) numbers += ", " + Mib(*r.mem_used_mib);
  if (r.temperature_c) numbers += fmt::format(", {:.0f} °C", *r.temperature_c);

  const bool no_process = r.mem_used_mib && *r.mem_used_mib < t.process_mem_mib;
  Placed p;
  if (!r.util_pct) {
    missing->push_back("utilization.gpu");
    p = {SnapshotState::kUnknown, "no utilization reading"};
  } else if (*r.util_pct >= t.spin_util_pct) {
    p = PlacePegged(r, board, t, missing);
  } else if (*r.util_pct >= t.low_util_pct) {
    p = {SnapshotState::kWorking, "kernels part of the time"};
  } else if (no_process) {
    p = {SnapshotState::kNoProcess, "no process"};
  } else if (r.mem_used_mib) {
    p = {SnapshotState::kQuiet, "holds memory without kernels"};
  } else {
    p = {SnapshotState::kNoProcess, "no kernels (memory not logged)"};
  }
  g.state = p.state;
  g.text = numbers + ": " + p.why;
  return g;
}

}  // namespace

const char* HangVerdictName(HangVerdict v) {
  switch (v) {
    case HangVerdict::kNone:
      return "none";
    case HangVerdict::kSuspected:
      return "suspected";
    case HangVerdict::kConfirmed:
      return "confirmed";
    case HangVerdict::kUnknown:
      break;
  }
  return "unknown";
}

const char* SnapshotStateName(SnapshotState s) {
  switch (s) {
    case SnapshotState::kNoProcess:
      return "no process";
    case SnapshotState::kQuiet:
      return "quiet, holding memory";
    case SnapshotState::kWaiting:
      return "waiting";
    case SnapshotState::kWorking:
      return "working";
    case SnapshotState::kUnclear:
      return "unclear";
    case SnapshotState::kUnknown:
      break;
  }
  return "unknown";
}

SnapshotVerdict JudgeSnapshot(std::span<const SnapshotReading> readings, const Thresholds& t,
                              int world_size) {
  SnapshotVerdict v;
  std::vector<std::string> missing;
  int waiting = 0, working = 0, quiet = 0, unclear = 0, unknown = 0, in_job = 0;
  for (const SnapshotReading& r : readings) {
    v.gpus.push_back(PlaceGpu(r, t, &missing));
    switch (v.gpus.back().state) {
      case SnapshotState::kNoProcess:
        continue;
      case SnapshotState::kQuiet:
        ++quiet;
        break;
      case SnapshotState::kWaiting:
        ++waiting;
        break;
      case SnapshotState::kWorking:
        ++working;
        break;
      case SnapshotState::kUnclear:
        ++unclear;
        break;
      case SnapshotState::kUnknown:
        ++unknown;
        break;
    }
    ++in_job;
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());

  if (readings.empty()) {
    v.verdict = HangVerdict::kUnknown;
    v.reasons.push_back("no GPU readings");
    return v;
  }
  if (working > 0) {
    v.verdict = HangVerdict::kNone;
    v.reasons.push_back(fmt::format(
        "{} of {} GPUs working{}: a job with a rank computing is not stuck as a whole", working,
        in_job, waiting > 0 ? fmt::format(" while {} wait on them", waiting) : ""));
    return v;
  }
  if (waiting == 0) {
    if (unknown > 0 || unclear > 0) {
      v.verdict = HangVerdict::kUnknown;
      v.missing = missing;
      v.reasons.push_back(fmt::format("{} GPU{} pegged whose readings cannot be placed",
                                      unknown + unclear, unknown + unclear == 1 ? "" : "s"));
      return v;
    }
    v.verdict = HangVerdict::kNone;
    v.reasons.push_back(quiet > 0
                            ? fmt::format("no kernels running ({} GPU{} holding memory: a save or "
                                          "a stall off the GPU looks the same in one snapshot)",
                                          quiet, quiet == 1 ? "" : "s")
                            : "no GPU is running kernels");
    return v;
  }
  if (unknown > 0 || unclear > 0) {
    v.verdict = HangVerdict::kUnknown;
    v.missing = missing;
    v.reasons.push_back(fmt::format(
        "{} GPU{} at their board's waiting power, but {} pegged between waiting and working or "
        "unplaced",
        waiting, waiting == 1 ? "" : "s", unknown + unclear));
    return v;
  }
  // Every GPU of the job waits or sits quiet holding memory.
  const int ranks = std::max(world_size, in_job);
  if (ranks <= 1) {
    v.verdict = HangVerdict::kUnknown;
    v.missing.push_back("--world-size");
    v.reasons.push_back(
        "one GPU pegged at its waiting power with no peer in the readings: a lone GPU is not "
        "waiting in a collective (small kernels look the same); pass --world-size N if it is one "
        "rank of a larger job");
    return v;
  }
  v.verdict = HangVerdict::kSuspected;
  for (const SnapshotGpu& g : v.gpus) {
    if (g.state == SnapshotState::kQuiet) v.culprits.push_back(g.key);
  }
  v.reasons.push_back(fmt::format(
      "{} of {} GPUs pegged at 100 % utilization drawing the power their board draws waiting in "
      "a collective{}",
      waiting, in_job,
      quiet > 0 ? fmt::format("; {} {} memory at 0 % without joining (the rank{} the others "
                              "wait on)",
                              quiet, quiet == 1 ? "holds" : "hold", quiet == 1 ? "" : "s")
                : ": nobody is left computing"));
  if (quiet > 0) {
    v.reasons.push_back(
        "a rank saving a checkpoint while the others wait looks the same in one snapshot; a "
        "save ends within minutes, a hang does not");
  }
  if (world_size > in_job) {
    v.reasons.push_back(fmt::format("{} of the job's {} ranks are not in the readings",
                                    world_size - in_job, world_size));
  }
  v.reasons.push_back("one snapshot cannot confirm a hang: a wait that lasts is what makes one");
  return v;
}

}  // namespace ww::triage
