// What the NVML readers do in one run (nvml_readers.h): a GPU's fields, identity, memory, field
// values and GPM metrics; the Xid events waiting in the event set.
#include "telemetry/nvml/nvml_readers.h"

#include <fmt/format.h>

#include <iterator>

namespace ww::nvml::readers {

GpuReading GpuReader::ReadAll() {
  GpuReading r;
  const int64_t t0 = SteadyNs();
  if (dev_ == nullptr) r.lost = true;
  if (!r.lost && !identity_done_) ReadIdentity(r);
  RawReadings& raw = r.raw;
  unsigned u = 0;
  unsigned long long ull = 0;
  using E = NvmlEntry;
  using F = NvmlField;

  if (ReadField<E::kDeviceGetPowerUsage>(F::kPowerDraw, r, dev_, &u)) raw.power_mw = u;
  if (ReadField<E::kDeviceGetTotalEnergyConsumption>(F::kEnergy, r, dev_, &ull)) {
    raw.energy_mj = ull;
    raw.energy_read_ns = clock_->NowNs();
  }
  if (ReadField<E::kDeviceGetEnforcedPowerLimit>(F::kPowerLimit, r, dev_, &u)) {
    raw.power_limit_mw = u;
  }
  nvmlUtilization_t util{};
  if (ReadField<E::kDeviceGetUtilizationRates>(F::kUtilization, r, dev_, &util)) {
    raw.util_gpu_pct = util.gpu;
    raw.util_mem_pct = util.memory;
  }
  if (ReadField<E::kDeviceGetClockInfo, kSm>(F::kSmClock, r, dev_, NVML_CLOCK_SM, &u)) {
    raw.sm_clock_mhz = u;
  }
  if (ReadField<E::kDeviceGetClockInfo, kMem>(F::kMemClock, r, dev_, NVML_CLOCK_MEM, &u)) {
    raw.mem_clock_mhz = u;
  }
  if (ReadField<E::kDeviceGetCurrentClocksEventReasons>(F::kClockEventReasons, r, dev_, &ull)) {
    raw.clock_event_reasons = ull;
  }
  if (ReadField<E::kDeviceGetTemperature>(F::kTemperature, r, dev_, NVML_TEMPERATURE_GPU, &u)) {
    raw.temperature_c = u;
  }
  if (!r.lost) ReadMemory(r);
  nvmlPstates_t p = NVML_PSTATE_UNKNOWN;
  if (ReadField<E::kDeviceGetPerformanceState>(F::kPstate, r, dev_, &p)) {
    raw.pstate = PstateNumber(p);
  }
  if (!r.lost) ReadFieldValues(r);
  if (!r.lost) ReadGpm(r);

  if (r.lost) {
    // A lost GPU answers nothing; drop anything read before the loss showed.
    GpuReading lost;
    lost.lost = true;
    lost.identity = std::move(r.identity);
    r = std::move(lost);
  }
  r.support = support_;
  r.latency_ns = SteadyNs() - t0;
  return r;
}

void GpuReader::ReadIdentity(GpuReading& r) {
  using E = NvmlEntry;
  GpuReading::Identity id;
  auto lost = [&](nvmlReturn_t rc) {
    if (rc == NVML_ERROR_GPU_IS_LOST) r.lost = true;
    return r.lost;
  };
  if (Has<E::kDeviceGetName>()) {
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    const nvmlReturn_t rc = Call<E::kDeviceGetName>(dev_, buf, unsigned{sizeof(buf)});
    if (lost(rc)) return;
    if (rc == NVML_SUCCESS) id.name = buf;
  }
  if (Has<E::kDeviceGetUUID>()) {
    char buf[NVML_DEVICE_UUID_BUFFER_SIZE] = {};
    const nvmlReturn_t rc = Call<E::kDeviceGetUUID>(dev_, buf, unsigned{sizeof(buf)});
    if (lost(rc)) return;
    if (rc == NVML_SUCCESS) id.uuid = buf;
  }
  if (Has<E::kDeviceGetPciInfo>()) {
    nvmlPciInfo_t pci{};
    const nvmlReturn_t rc = Call<E::kDeviceGetPciInfo>(dev_, &pci);
    if (lost(rc)) return;
    pci.busId[sizeof(pci.busId) - 1] = '\0';
    if (rc == NVML_SUCCESS) id.pci_bus_id = pci.busId;
  }
  if (Has<E::kDeviceGetArchitecture>()) {
    nvmlDeviceArchitecture_t a = NVML_DEVICE_ARCH_UNKNOWN;
    const nvmlReturn_t rc = Call<E::kDeviceGetArchitecture>(dev_, &a);
    if (lost(rc)) return;
    if (rc == NVML_SUCCESS) id.arch = a;
  }
  if (events_ != nullptr) {
    unsigned long long types = nvmlEventTypeXidCriticalError;
    if (Has<E::kDeviceGetSupportedEventTypes>()) {
      const nvmlReturn_t rc = Call<E::kDeviceGetSupportedEventTypes>(dev_, &types);
      if (lost(rc)) return;
      if (rc != NVML_SUCCESS) types = 0;
    }
    if ((types & nvmlEventTypeXidCriticalError) != 0) {
      const nvmlReturn_t rc =
          Call<E::kDeviceRegisterEvents>(dev_, nvmlEventTypeXidCriticalError, events_);
      if (lost(rc)) return;
      if (rc == NVML_SUCCESS) id.xid = Support::kSupported;
    }
  }
  arch_ = id.arch;
  arch_known_ = id.arch != NVML_DEVICE_ARCH_UNKNOWN;
  identity_done_ = true;
  r.identity = std::move(id);
}

void GpuReader::ReadMemory(GpuReading& r) {
  if (Has<NvmlEntry::kDeviceGetMemoryInfoV2>() && !mem_v2_unsupported_) {
    nvmlMemory_v2_t m{};
    m.version = nvmlMemory_v2;
    const nvmlReturn_t rc = Call<NvmlEntry::kDeviceGetMemoryInfoV2>(dev_, &m);
    if (rc == NVML_SUCCESS) {
      sup(NvmlField::kMemory) = Support::kSupported;
      r.raw.mem_used_bytes = m.used;
      r.raw.mem_total_bytes = m.total;
      return;
    }
    if (rc == NVML_ERROR_GPU_IS_LOST) {
      r.lost = true;
      return;
    }
    // Older drivers: the v2 struct is unknown to them; fall back to v1 from now on.
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND ||
        rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
      mem_v2_unsupported_ = true;
    } else {
      return;  // a failed read: absent this tick
    }
  }
  nvmlMemory_t m{};
  if (ReadField<NvmlEntry::kDeviceGetMemoryInfo>(NvmlField::kMemory, r, dev_, &m)) {
    r.raw.mem_used_bytes = m.used;
    r.raw.mem_total_bytes = m.total;
  }
}

void GpuReader::ReadFieldValues(GpuReading& r) {
  struct Wanted {
    NvmlField field;
    unsigned id;
    unsigned scope;
  };
  static constexpr Wanted kFields[] = {
      {NvmlField::kPowerInstant, NVML_FI_DEV_POWER_INSTANT, 0},
      {NvmlField::kPcieTx, NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0},
      {NvmlField::kPcieRx, NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 0},
      {NvmlField::kNvlinkTx, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, kNvmlScopeAllLinks},
      {NvmlField::kNvlinkRx, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, kNvmlScopeAllLinks},
  };
  constexpr int kMax = static_cast<int>(std::size(kFields));
  nvmlFieldValue_t values[kMax];
  NvmlField which[kMax];
  int n = 0;
  for (const Wanted& w : kFields) {
    if (!Want<NvmlEntry::kDeviceGetFieldValues>(w.field, r)) continue;
    values[n] = nvmlFieldValue_t{};
    values[n].fieldId = w.id;
    values[n].scopeId = w.scope;
    which[n] = w.field;
    ++n;
  }
  if (n == 0) return;
  const nvmlReturn_t rc = Call<NvmlEntry::kDeviceGetFieldValues>(dev_, n, values);
  const int64_t read_ns = clock_->NowNs();
  if (rc != NVML_SUCCESS) {
    for (int i = 0; i < n; ++i) Accept(which[i], rc, r);
    return;
  }
  for (int i = 0; i < n; ++i) {
    const nvmlFieldValue_t& v = values[i];
    if (!Accept(which[i], v.nvmlReturn, r)) continue;
    const std::optional<CounterValue> val = FieldCounterValue(v);
    if (!val) continue;
    if (which[i] == NvmlField::kPowerInstant) {
      if (val->value <= 0xffffffffu) r.raw.power_instant_mw = static_cast<unsigned>(val->value);
      continue;
    }
    const CounterRead c{val->value, val->bits, v.timestamp, read_ns};
    switch (which[i]) {
      case NvmlField::kPcieTx:
        r.raw.pcie_tx_bytes = c;
        break;
      case NvmlField::kPcieRx:
        r.raw.pcie_rx_bytes = c;
        break;
      case NvmlField::kNvlinkTx:
        r.raw.nvlink_tx_kib = c;
        break;
      case NvmlField::kNvlinkRx:
        r.raw.nvlink_rx_kib = c;
        break;
      default:
        break;
    }
  }
}

void GpuReader::ReadGpm(GpuReading& r) {
  using E = NvmlEntry;
  Support& s = sup(NvmlField::kGpm);
  if (s == Support::kUnsupported) return;
  if (!gpm_probed_) {
    gpm_probed_ = true;
    if ((arch_known_ && arch_ < NVML_DEVICE_ARCH_HOPPER) || !Has<E::kGpmQueryDeviceSupport>() ||
        !Has<E::kGpmSampleAlloc>() || !Has<E::kGpmSampleGet>() || !Has<E::kGpmMetricsGet>() ||
        !Has<E::kGpmSampleFree>()) {
      s = Support::kUnsupported;
      return;
    }
    nvmlGpmSupport_t q{};
    q.version = NVML_GPM_SUPPORT_VERSION;
    const nvmlReturn_t rc = Call<E::kGpmQueryDeviceSupport>(dev_, &q);
    if (rc == NVML_ERROR_GPU_IS_LOST) {
      r.lost = true;
      gpm_probed_ = false;
      return;
    }
    if (rc != NVML_SUCCESS || q.isSupportedDevice == 0) {
      s = Support::kUnsupported;
      return;
    }
    for (nvmlGpmSample_t& g : gpm_) {
      if (Call<E::kGpmSampleAlloc>(&g) != NVML_SUCCESS) {
        s = Support::kUnsupported;
        return;
      }
    }
  }
  const int64_t now = clock_->NowNs();
  if (have_prev_ && now - prev_ns_ <= kGpmMinGapNs) return;  // too close: keep the older sample
  const nvmlReturn_t rc = Call<E::kGpmSampleGet>(dev_, gpm_[cur_]);
  if (rc != NVML_SUCCESS) {
    Accept(NvmlField::kGpm, rc, r);
    have_prev_ = false;
    return;
  }
  s = Support::kSupported;  // the device answers GPM; metrics follow from the next sample
  if (have_prev_) {
    auto get = std::make_unique<nvmlGpmMetricsGet_t>();
    get->version = NVML_GPM_METRICS_GET_VERSION;
    get->numMetrics = 4;
    get->sample1 = gpm_[cur_ ^ 1];
    get->sample2 = gpm_[cur_];
    get->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
    get->metrics[1].metricId = NVML_GPM_METRIC_SM_OCCUPANCY;
    get->metrics[2].metricId = NVML_GPM_METRIC_ANY_TENSOR_UTIL;
    get->metrics[3].metricId = NVML_GPM_METRIC_DRAM_BW_UTIL;
    if (Accept(NvmlField::kGpm, Call<E::kGpmMetricsGet>(get.get()), r)) {
      auto metric = [&](int i) {
        return GpmPercent(get->metrics[i].nvmlReturn, get->metrics[i].value);
      };
      r.raw.gpm_sm_pct = metric(0);
      r.raw.gpm_occupancy_pct = metric(1);
      r.raw.gpm_tensor_pct = metric(2);
      r.raw.gpm_dram_bw_pct = metric(3);
    }
  }
  have_prev_ = true;
  prev_ns_ = now;
  cur_ ^= 1;
}

void EventReader::Run() {
  // Appends: events drained by a run that finished after its deadline reach the next round.
  if (events_.size() > 16 * kMaxEventsPerTick) events_.clear();  // nobody is taking them
  error_.clear();
  for (int i = 0; i < kMaxEventsPerTick; ++i) {
    nvmlEventData_t data{};
    const nvmlReturn_t rc = Call<NvmlEntry::kEventSetWait>(set_, &data, 0u);
    if (rc == NVML_ERROR_TIMEOUT) break;
    if (rc != NVML_SUCCESS) {
      error_ = lib_->ErrorText(rc);
      break;
    }
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    const auto it = gpu_of_.find(data.device);
    if (it != gpu_of_.end()) events_.push_back({it->second, data.eventData});
  }
}

}  // namespace ww::nvml::readers
