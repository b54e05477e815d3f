#include "telemetry/nvml/derive.h"

#include <fmt/format.h>

#include "telemetry/fields.h"

namespace ww::nvml {

std::optional<double> MilliwattsToWatts(const std::optional<unsigned>& mw) {
  if (!mw) return std::nullopt;
  return *mw / 1000.0;
}

double BytesToMib(uint64_t bytes) { return static_cast<double>(bytes) / 1048576.0; }

std::optional<double> PercentToRatio(const std::optional<double>& pct) {
  if (!pct) return std::nullopt;
  return *pct / 100.0;
}

MeanPower MeanPowerFromEnergy(uint64_t prev_mj, int64_t prev_read_ns, uint64_t cur_mj,
                              int64_t cur_read_ns) {
  MeanPower out;
  if (cur_read_ns <= prev_read_ns) return out;
  const uint64_t delta_mj = cur_mj - prev_mj;  // wraps at 2^64 like NVML's counter
  const double dt_ms = static_cast<double>(cur_read_ns - prev_read_ns) / 1e6;
  const double mean_w = static_cast<double>(delta_mj) / dt_ms;  // mJ/ms == W
  if (mean_w <= DcgmFieldOf(&GpuSample::power_w).range.hi) {
    out.watts = mean_w;
  } else {
    out.implausible = true;
  }
  return out;
}

CounterRate RateBetween(const CounterRead& prev, const CounterRead& cur, double unit_bytes,
                        double max_bytes_per_s) {
  CounterRate out;
  if (prev.bits != cur.bits) return out;
  double dt_s;
  if (prev.timestamp_us > 0 && cur.timestamp_us > prev.timestamp_us) {
    dt_s = static_cast<double>(cur.timestamp_us - prev.timestamp_us) * 1e-6;
  } else {
    dt_s = static_cast<double>(cur.read_ns - prev.read_ns) * 1e-9;
  }
  if (!(dt_s > 0)) return out;
  const uint64_t mask = cur.bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << cur.bits) - 1);
  const uint64_t delta = (cur.value - prev.value) & mask;
  const double rate = static_cast<double>(delta) * unit_bytes / dt_s;
  if (rate > max_bytes_per_s) {
    out.implausible = true;
  } else {
    out.bytes_per_s = rate;
  }
  return out;
}

std::optional<CounterValue> FieldCounterValue(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return CounterValue{v.value.uiVal, 32};
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return CounterValue{v.value.ulVal, static_cast<int>(sizeof(long) * 8)};
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return CounterValue{v.value.ullVal, 64};
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return CounterValue{v.value.usVal, 16};
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      if (v.value.sllVal < 0) return std::nullopt;
      return CounterValue{static_cast<uint64_t>(v.value.sllVal), 63};
    case NVML_VALUE_TYPE_SIGNED_INT:
      if (v.value.siVal < 0) return std::nullopt;
      return CounterValue{static_cast<uint64_t>(v.value.siVal), 31};
    case NVML_VALUE_TYPE_DOUBLE:
      if (!(v.value.dVal >= 0) || v.value.dVal > 1.8e19) return std::nullopt;
      return CounterValue{static_cast<uint64_t>(v.value.dVal), 64};
    default:
      return std::nullopt;
  }
}

std::optional<double> GpmPercent(nvmlReturn_t rc, double value) {
  if (rc != NVML_SUCCESS || !(value >= 0.0 && value <= 100.0)) return std::nullopt;
  return value;
}

std::optional<int> PstateNumber(nvmlPstates_t p) {
  if (p < 0 || p > NVML_PSTATE_15) return std::nullopt;
  return p;
}

std::string ArchitectureName(nvmlDeviceArchitecture_t a) {
  switch (a) {
    case 2:
      return "kepler";
    case 3:
      return "maxwell";
    case 4:
      return "pascal";
    case 5:
      return "volta";
    case 6:
      return "turing";
    case NVML_DEVICE_ARCH_AMPERE:
      return "ampere";
    case NVML_DEVICE_ARCH_ADA:
      return "ada";
    case NVML_DEVICE_ARCH_HOPPER:
      return "hopper";
    case NVML_DEVICE_ARCH_BLACKWELL:
      return "blackwell";
    case NVML_DEVICE_ARCH_UNKNOWN:
      return "";
    default:
      return fmt::format("arch{}", a);
  }
}

namespace {

// The rate since the previous read of one counter; moves *prev on when this tick read it (an
// absent read keeps prev, so the next rate spans the gap exactly).
std::optional<double> Advance(std::optional<CounterRead>* prev,
                              const std::optional<CounterRead>& cur, double unit_bytes,
                              double max_bytes_per_s, bool* jumped) {
  if (!cur) return std::nullopt;
  const std::optional<CounterRead> before = *prev;
  *prev = cur;
  if (!before) return std::nullopt;
  const CounterRate r = RateBetween(*before, *cur, unit_bytes, max_bytes_per_s);
  *jumped |= r.implausible;
  return r.bytes_per_s;
}

std::optional<double> AsDouble(const std::optional<unsigned>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

}  // namespace

DeriveNotes DeriveSample(const RawReadings& raw, DeriveState* state, GpuSample* s) {
  DeriveNotes notes;
  s->power_w = MilliwattsToWatts(raw.power_mw);
  s->power_instant_w = MilliwattsToWatts(raw.power_instant_mw);
  s->power_limit_w = MilliwattsToWatts(raw.power_limit_mw);
  s->util_gpu_pct = AsDouble(raw.util_gpu_pct);
  s->util_mem_pct = AsDouble(raw.util_mem_pct);
  s->sm_clock_mhz = AsDouble(raw.sm_clock_mhz);
  s->mem_clock_mhz = AsDouble(raw.mem_clock_mhz);
  s->temperature_c = AsDouble(raw.temperature_c);
  if (raw.mem_used_bytes) s->mem_used_mib = BytesToMib(*raw.mem_used_bytes);
  if (raw.mem_total_bytes) s->mem_total_mib = BytesToMib(*raw.mem_total_bytes);
  s->pstate = raw.pstate;
  if (raw.clock_event_reasons) s->clock_event_reasons = *raw.clock_event_reasons;

  if (raw.energy_mj) {
    s->energy_mj = *raw.energy_mj;
    if (state->energy_mj) {
      const MeanPower mean = MeanPowerFromEnergy(*state->energy_mj, state->energy_read_ns,
                                                 *raw.energy_mj, raw.energy_read_ns);
      s->power_mean_w = mean.watts;
      if (mean.implausible) {
        notes.energy_went_back = true;
        notes.energy_from_mj = *state->energy_mj;
        notes.energy_to_mj = *raw.energy_mj;
      }
    }
    state->energy_mj = *raw.energy_mj;
    state->energy_read_ns = raw.energy_read_ns;
  }

  s->pcie_tx_bytes_per_s = Advance(&state->pcie_tx_bytes, raw.pcie_tx_bytes, 1.0,
                                   kMaxPlausiblePcieBytesPerS, &notes.counter_jumped);
  s->pcie_rx_bytes_per_s = Advance(&state->pcie_rx_bytes, raw.pcie_rx_bytes, 1.0,
                                   kMaxPlausiblePcieBytesPerS, &notes.counter_jumped);
  const double max_nvlink_bytes_per_s = DcgmFieldOf(&GpuSample::nvlink_tx_bytes_per_s).range.hi;
  s->nvlink_tx_bytes_per_s = Advance(&state->nvlink_tx_kib, raw.nvlink_tx_kib, 1024.0,
                                     max_nvlink_bytes_per_s, &notes.counter_jumped);
  s->nvlink_rx_bytes_per_s = Advance(&state->nvlink_rx_kib, raw.nvlink_rx_kib, 1024.0,
                                     max_nvlink_bytes_per_s, &notes.counter_jumped);

  s->sm_activity_ratio = PercentToRatio(raw.gpm_sm_pct);
  s->sm_occupancy_ratio = PercentToRatio(raw.gpm_occupancy_pct);
  s->tensor_activity_ratio = PercentToRatio(raw.gpm_tensor_pct);
  s->dram_bw_util_ratio = PercentToRatio(raw.gpm_dram_bw_pct);
  return notes;
}

}  // namespace ww::nvml
