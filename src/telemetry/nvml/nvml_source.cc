#include "telemetry/nvml/nvml_source.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/host.h"

namespace ww::nvml {

const char* NvmlFieldName(NvmlField field) {
  switch (field) {
    case NvmlField::kPowerDraw:
      return "power.draw";
    case NvmlField::kPowerInstant:
      return "power.instant";
    case NvmlField::kEnergy:
      return "energy";
    case NvmlField::kPowerLimit:
      return "power.limit";
    case NvmlField::kUtilization:
      return "utilization";
    case NvmlField::kSmClock:
      return "clocks.sm";
    case NvmlField::kMemClock:
      return "clocks.mem";
    case NvmlField::kClockEventReasons:
      return "clocks_event_reasons";
    case NvmlField::kTemperature:
      return "temperature";
    case NvmlField::kMemory:
      return "memory";
    case NvmlField::kPstate:
      return "pstate";
    case NvmlField::kPcieTx:
      return "pcie.tx";
    case NvmlField::kPcieRx:
      return "pcie.rx";
    case NvmlField::kNvlinkTx:
      return "nvlink.tx";
    case NvmlField::kNvlinkRx:
      return "nvlink.rx";
    case NvmlField::kGpm:
      return "gpm";
    case NvmlField::kXid:
      return "xid";
    case NvmlField::kCount:
      break;
  }
  return "?";
}

namespace {

using SupportArray = std::array<Support, kNvmlFieldCount>;

// GPM needs its two samples more than 100 ms apart (NVML GPM documentation).
constexpr int64_t kGpmMinGapNs = 100'000'000;
// Beyond these a counter delta is a reset (driver reload), not traffic or power.
constexpr double kMaxPlausiblePowerW = 20'000;
constexpr double kMaxPlausiblePcieBytesPerS = 1e12;
constexpr double kMaxPlausibleNvlinkBytesPerS = 1e13;
constexpr int kMaxEventsPerTick = 256;

// One reading of a cumulative NVML counter.
struct CounterRead {
  uint64_t value = 0;
  int bits = 64;             // the counter wraps at 2^bits (from the NVML value type)
  int64_t timestamp_us = 0;  // NVML's timestamp of the value; 0 when not given
  int64_t read_ns = 0;       // our monotonic time of the read
};

// Everything one worker read from one GPU in one job, in NVML units.
struct GpuReading {
  bool lost = false;
  std::optional<unsigned> power_mw, power_instant_mw, limit_mw, temp_c, sm_mhz, mem_mhz;
  std::optional<unsigned> util_gpu, util_mem;
  std::optional<unsigned long long> energy_mj;
  int64_t energy_read_ns = 0;
  std::optional<unsigned long long> reasons;
  std::optional<unsigned long long> mem_used_bytes, mem_total_bytes;
  std::optional<int> pstate;
  std::optional<CounterRead> pcie_tx, pcie_rx, nvlink_tx, nvlink_rx;
  std::optional<double> gpm_sm_pct, gpm_occupancy_pct, gpm_tensor_pct, gpm_dram_pct;
  SupportArray support{};
  int64_t latency_ns = 0;
  // Set by the first job that reaches the device: who it is, and whether Xid events were
  // registered for it. Read by the worker (not at Open) so a hung call here has a deadline too.
  struct Identity {
    std::string name, uuid, pci_bus_id;
    nvmlDeviceArchitecture_t arch = NVML_DEVICE_ARCH_UNKNOWN;
    Support xid = Support::kUnsupported;
  };
  std::optional<Identity> identity;
};

struct XidEvent {
  size_t gpu;
  uint64_t xid;
};

// A worker's mailbox. Guarded by Hub::mu except the atomics, which the sampling thread reads to
// name the call a stuck worker is in.
struct Slot {
  uint64_t requested = 0;        // tick the worker was asked to run
  uint64_t completed = 0;        // last tick it finished
  bool busy = false;             // requested and not yet completed
  bool unread = false;           // `reading` holds a result the sampling thread has not taken
  GpuReading reading;            // result of `completed` (GPU workers)
  std::vector<XidEvent> events;  // result of `completed` (the event worker)
  std::string event_error;
  std::atomic<const char*> current_call{nullptr};
  std::atomic<int64_t> call_started_ns{0};
};

// State shared by the sampling thread and every worker; workers hold it by shared_ptr so a
// detached stuck worker keeps it alive.
struct Hub {
  std::mutex mu;
  std::condition_variable done;  // the sampling thread waits here for a tick's jobs
  std::condition_variable work;  // idle pool threads wait here for jobs
  bool stop = false;
  std::vector<std::unique_ptr<Slot>> slots;
  std::deque<size_t> queue;  // slots to read this tick, in order
  std::vector<bool> in_job;  // per pool thread: inside a job (maybe stuck in NVML)

  std::mutex clock_mu;
  Clock* clock = nullptr;  // nulled when the source goes away; workers read time through Now()

  int64_t Now() {
    std::lock_guard<std::mutex> lock(clock_mu);
    return clock != nullptr ? clock->NowMonotonicNs() : 0;
  }
};

// Steady time for the call deadline only: it bounds how long a real driver call may take, which
// is real time even when the source runs on a ManualClock.
int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One slot's work for a tick, run by whichever pool thread takes it. A slot is never given to two
// threads at once (the sampling thread does not dispatch a busy slot), so its state needs no lock.
class SlotJob {
 public:
  virtual ~SlotJob() = default;
  // Reads (outside Hub::mu), then stores the result in the slot under Hub::mu.
  virtual void RunTick(uint64_t tick) = 0;
};

// Calls made for one GPU. Owned by the pool threads (shared_ptr captured by each).
class GpuWorker final : public SlotJob {
 public:
  GpuWorker(std::shared_ptr<NvmlLib> lib, std::shared_ptr<Hub> hub, size_t slot,
            nvmlDevice_t device, nvmlEventSet_t events)
      : lib_(std::move(lib)), hub_(std::move(hub)), slot_(slot), dev_(device), events_(events) {
    support_.fill(Support::kUnknown);
    support_[static_cast<int>(NvmlField::kXid)] = Support::kUnknown;  // decided by the source
  }

  ~GpuWorker() {
    for (nvmlGpmSample_t s : gpm_) {
      if (s != nullptr && lib_->GpmSampleFree != nullptr) lib_->GpmSampleFree(s);
    }
  }

  void RunTick(uint64_t tick) override {
    Slot& slot = *hub_->slots[slot_];
    GpuReading reading = ReadAll(slot);
    std::lock_guard<std::mutex> lock(hub_->mu);
    slot.reading = std::move(reading);
    slot.unread = true;
    slot.completed = tick;
    slot.busy = false;
  }
  // Keeps the Xid event worker (which frees the event set) alive while this GPU may register.
  void KeepAlive(std::shared_ptr<SlotJob> events) { keep_alive_ = std::move(events); }

 private:
  Support& sup(NvmlField f) { return support_[static_cast<int>(f)]; }

  // Marks the call in flight so a stuck call can be named, then makes it.
  template <typename Fn>
  nvmlReturn_t Call(Slot& slot, const char* name, Fn&& fn) {
    slot.call_started_ns.store(SteadyNs(), std::memory_order_relaxed);
    slot.current_call.store(name, std::memory_order_release);
    const nvmlReturn_t rc = fn();
    slot.current_call.store(nullptr, std::memory_order_release);
    return rc;
  }

  // Applies a return code to a field's support; true when the value is usable.
  bool Accept(NvmlField f, nvmlReturn_t rc, GpuReading& r) {
    if (rc == NVML_SUCCESS) {
      sup(f) = Support::kSupported;
      return true;
    }
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
      sup(f) = Support::kUnsupported;
    } else if (rc == NVML_ERROR_GPU_IS_LOST) {
      r.lost = true;
    }
    return false;
  }

  // True when the field should be read this tick; marks it unsupported when the library lacks
  // the entry point.
  bool Want(NvmlField f, const void* fn) {
    if (fn == nullptr) sup(f) = Support::kUnsupported;
    return sup(f) != Support::kUnsupported;
  }

  GpuReading ReadAll(Slot& slot) {
    GpuReading r;
    const int64_t t0 = SteadyNs();
    const NvmlLib& L = *lib_;
    if (dev_ == nullptr) {
      r.lost = true;
    }
    if (!r.lost && !identity_done_) ReadIdentity(slot, r);
    unsigned u = 0;
    unsigned long long ull = 0;

    if (!r.lost &&
        Want(NvmlField::kPowerDraw, reinterpret_cast<const void*>(L.DeviceGetPowerUsage))) {
      if (Accept(NvmlField::kPowerDraw,
                 Call(slot, "nvmlDeviceGetPowerUsage",
                      [&] { return L.DeviceGetPowerUsage(dev_, &u); }),
                 r)) {
        r.power_mw = u;
      }
    }
    if (!r.lost && Want(NvmlField::kEnergy,
                        reinterpret_cast<const void*>(L.DeviceGetTotalEnergyConsumption))) {
      if (Accept(NvmlField::kEnergy,
                 Call(slot, "nvmlDeviceGetTotalEnergyConsumption",
                      [&] { return L.DeviceGetTotalEnergyConsumption(dev_, &ull); }),
                 r)) {
        r.energy_mj = ull;
        r.energy_read_ns = hub_->Now();
      }
    }
    if (!r.lost && Want(NvmlField::kPowerLimit,
                        reinterpret_cast<const void*>(L.DeviceGetEnforcedPowerLimit))) {
      if (Accept(NvmlField::kPowerLimit,
                 Call(slot, "nvmlDeviceGetEnforcedPowerLimit",
                      [&] { return L.DeviceGetEnforcedPowerLimit(dev_, &u); }),
                 r)) {
        r.limit_mw = u;
      }
    }
    if (!r.lost &&
        Want(NvmlField::kUtilization, reinterpret_cast<const void*>(L.DeviceGetUtilizationRates))) {
      nvmlUtilization_t util{};
      if (Accept(NvmlField::kUtilization,
                 Call(slot, "nvmlDeviceGetUtilizationRates",
                      [&] { return L.DeviceGetUtilizationRates(dev_, &util); }),
                 r)) {
        r.util_gpu = util.gpu;
        r.util_mem = util.memory;
      }
    }
    if (!r.lost && Want(NvmlField::kSmClock, reinterpret_cast<const void*>(L.DeviceGetClockInfo))) {
      if (Accept(NvmlField::kSmClock,
                 Call(slot, "nvmlDeviceGetClockInfo(SM)",
                      [&] { return L.DeviceGetClockInfo(dev_, NVML_CLOCK_SM, &u); }),
                 r)) {
        r.sm_mhz = u;
      }
    }
    if (!r.lost &&
        Want(NvmlField::kMemClock, reinterpret_cast<const void*>(L.DeviceGetClockInfo))) {
      if (Accept(NvmlField::kMemClock,
                 Call(slot, "nvmlDeviceGetClockInfo(MEM)",
                      [&] { return L.DeviceGetClockInfo(dev_, NVML_CLOCK_MEM, &u); }),
                 r)) {
        r.mem_mhz = u;
      }
    }
    if (!r.lost && Want(NvmlField::kClockEventReasons,
                        reinterpret_cast<const void*>(L.DeviceGetCurrentClocksEventReasons))) {
      if (Accept(NvmlField::kClockEventReasons,
                 Call(slot, "nvmlDeviceGetCurrentClocksEventReasons",
                      [&] { return L.DeviceGetCurrentClocksEventReasons(dev_, &ull); }),
                 r)) {
        r.reasons = ull;
      }
    }
    if (!r.lost &&
        Want(NvmlField::kTemperature, reinterpret_cast<const void*>(L.DeviceGetTemperature))) {
      if (Accept(NvmlField::kTemperature,
                 Call(slot, "nvmlDeviceGetTemperature",
                      [&] { return L.DeviceGetTemperature(dev_, NVML_TEMPERATURE_GPU, &u); }),
                 r)) {
        r.temp_c = u;
      }
    }
    if (!r.lost) ReadMemory(slot, r);
    if (!r.lost &&
        Want(NvmlField::kPstate, reinterpret_cast<const void*>(L.DeviceGetPerformanceState))) {
      nvmlPstates_t p = NVML_PSTATE_UNKNOWN;
      if (Accept(NvmlField::kPstate,
                 Call(slot, "nvmlDeviceGetPerformanceState",
                      [&] { return L.DeviceGetPerformanceState(dev_, &p); }),
                 r) &&
          p >= 0 && p <= NVML_PSTATE_15) {
        r.pstate = p;
      }
    }
    if (!r.lost) ReadFieldValues(slot, r);
    if (!r.lost) ReadGpm(slot, r);

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

  void ReadIdentity(Slot& slot, GpuReading& r) {
    const NvmlLib& L = *lib_;
    GpuReading::Identity id;
    auto lost = [&](nvmlReturn_t rc) {
      if (rc == NVML_ERROR_GPU_IS_LOST) r.lost = true;
      return r.lost;
    };
    if (L.DeviceGetName != nullptr) {
      char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
      const nvmlReturn_t rc =
          Call(slot, "nvmlDeviceGetName", [&] { return L.DeviceGetName(dev_, buf, sizeof(buf)); });
      if (lost(rc)) return;
      if (rc == NVML_SUCCESS) id.name = buf;
    }
    if (L.DeviceGetUUID != nullptr) {
      char buf[NVML_DEVICE_UUID_BUFFER_SIZE] = {};
      const nvmlReturn_t rc =
          Call(slot, "nvmlDeviceGetUUID", [&] { return L.DeviceGetUUID(dev_, buf, sizeof(buf)); });
      if (lost(rc)) return;
      if (rc == NVML_SUCCESS) id.uuid = buf;
    }
    if (L.DeviceGetPciInfo != nullptr) {
      nvmlPciInfo_t pci{};
      const nvmlReturn_t rc =
          Call(slot, "nvmlDeviceGetPciInfo", [&] { return L.DeviceGetPciInfo(dev_, &pci); });
      if (lost(rc)) return;
      pci.busId[sizeof(pci.busId) - 1] = '\0';
      if (rc == NVML_SUCCESS) id.pci_bus_id = pci.busId;
    }
    if (L.DeviceGetArchitecture != nullptr) {
      nvmlDeviceArchitecture_t a = NVML_DEVICE_ARCH_UNKNOWN;
      const nvmlReturn_t rc = Call(slot, "nvmlDeviceGetArchitecture",
                                   [&] { return L.DeviceGetArchitecture(dev_, &a); });
      if (lost(rc)) return;
      if (rc == NVML_SUCCESS) id.arch = a;
    }
    if (events_ != nullptr) {
      unsigned long long types = nvmlEventTypeXidCriticalError;
      if (L.DeviceGetSupportedEventTypes != nullptr) {
        const nvmlReturn_t rc = Call(slot, "nvmlDeviceGetSupportedEventTypes",
                                     [&] { return L.DeviceGetSupportedEventTypes(dev_, &types); });
        if (lost(rc)) return;
        if (rc != NVML_SUCCESS) types = 0;
      }
      if ((types & nvmlEventTypeXidCriticalError) != 0) {
        const nvmlReturn_t rc = Call(slot, "nvmlDeviceRegisterEvents", [&] {
          return L.DeviceRegisterEvents(dev_, nvmlEventTypeXidCriticalError, events_);
        });
        if (lost(rc)) return;
        if (rc == NVML_SUCCESS) id.xid = Support::kSupported;
      }
    }
    arch_ = id.arch;
    arch_known_ = id.arch != NVML_DEVICE_ARCH_UNKNOWN;
    identity_done_ = true;
    r.identity = std::move(id);
  }

  void ReadMemory(Slot& slot, GpuReading& r) {
    const NvmlLib& L = *lib_;
    if (L.DeviceGetMemoryInfoV2 != nullptr && !mem_v2_unsupported_) {
      nvmlMemory_v2_t m{};
      m.version = nvmlMemory_v2;
      const nvmlReturn_t rc = Call(slot, "nvmlDeviceGetMemoryInfo_v2",
                                   [&] { return L.DeviceGetMemoryInfoV2(dev_, &m); });
      if (rc == NVML_SUCCESS) {
        sup(NvmlField::kMemory) = Support::kSupported;
        r.mem_used_bytes = m.used;
        r.mem_total_bytes = m.total;
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
    if (!Want(NvmlField::kMemory, reinterpret_cast<const void*>(L.DeviceGetMemoryInfo))) return;
    nvmlMemory_t m{};
    if (Accept(
            NvmlField::kMemory,
            Call(slot, "nvmlDeviceGetMemoryInfo", [&] { return L.DeviceGetMemoryInfo(dev_, &m); }),
            r)) {
      r.mem_used_bytes = m.used;
      r.mem_total_bytes = m.total;
    }
  }

  // Unsigned value of a field and the width it wraps at; nullopt for a negative or odd type.
  static std::optional<std::pair<uint64_t, int>> Unsigned(const nvmlFieldValue_t& v) {
    switch (v.valueType) {
      case NVML_VALUE_TYPE_UNSIGNED_INT:
        return std::pair<uint64_t, int>{v.value.uiVal, 32};
      case NVML_VALUE_TYPE_UNSIGNED_LONG:
        return std::pair<uint64_t, int>{v.value.ulVal, static_cast<int>(sizeof(long) * 8)};
      case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        return std::pair<uint64_t, int>{v.value.ullVal, 64};
      case NVML_VALUE_TYPE_UNSIGNED_SHORT:
        return std::pair<uint64_t, int>{v.value.usVal, 16};
      case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (v.value.sllVal < 0) return std::nullopt;
        return std::pair<uint64_t, int>{static_cast<uint64_t>(v.value.sllVal), 63};
      case NVML_VALUE_TYPE_SIGNED_INT:
        if (v.value.siVal < 0) return std::nullopt;
        return std::pair<uint64_t, int>{static_cast<uint64_t>(v.value.siVal), 31};
      case NVML_VALUE_TYPE_DOUBLE:
        if (!(v.value.dVal >= 0) || v.value.dVal > 1.8e19) return std::nullopt;
        return std::pair<uint64_t, int>{static_cast<uint64_t>(v.value.dVal), 64};
      default:
        return std::nullopt;
    }
  }

  void ReadFieldValues(Slot& slot, GpuReading& r) {
    struct Want_ {
      NvmlField field;
      unsigned id;
      unsigned scope;
    };
    static constexpr Want_ kFields[] = {
        {NvmlField::kPowerInstant, NVML_FI_DEV_POWER_INSTANT, 0},
        {NvmlField::kPcieTx, NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0},
        {NvmlField::kPcieRx, NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 0},
        {NvmlField::kNvlinkTx, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, kNvmlScopeAllLinks},
        {NvmlField::kNvlinkRx, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, kNvmlScopeAllLinks},
    };
    constexpr int kMax = static_cast<int>(std::size(kFields));
    const NvmlLib& L = *lib_;
    nvmlFieldValue_t values[kMax];
    NvmlField which[kMax];
    int n = 0;
    for (const Want_& w : kFields) {
      if (!Want(w.field, reinterpret_cast<const void*>(L.DeviceGetFieldValues))) continue;
      values[n] = nvmlFieldValue_t{};
      values[n].fieldId = w.id;
      values[n].scopeId = w.scope;
      which[n] = w.field;
      ++n;
    }
    if (n == 0) return;
    const nvmlReturn_t rc = Call(slot, "nvmlDeviceGetFieldValues",
                                 [&] { return L.DeviceGetFieldValues(dev_, n, values); });
    const int64_t read_ns = hub_->Now();
    if (rc != NVML_SUCCESS) {
      for (int i = 0; i < n; ++i) Accept(which[i], rc, r);
      return;
    }
    for (int i = 0; i < n; ++i) {
      const nvmlFieldValue_t& v = values[i];
      if (!Accept(which[i], v.nvmlReturn, r)) continue;
      const auto val = Unsigned(v);
      if (!val) continue;
      if (which[i] == NvmlField::kPowerInstant) {
        if (val->first <= 0xffffffffu) r.power_instant_mw = static_cast<unsigned>(val->first);
        continue;
      }
      CounterRead c{val->first, val->second, v.timestamp, read_ns};
      switch (which[i]) {
        case NvmlField::kPcieTx:
          r.pcie_tx = c;
          break;
        case NvmlField::kPcieRx:
          r.pcie_rx = c;
          break;
        case NvmlField::kNvlinkTx:
          r.nvlink_tx = c;
          break;
        case NvmlField::kNvlinkRx:
          r.nvlink_rx = c;
          break;
        default:
          break;
      }
    }
  }

  void ReadGpm(Slot& slot, GpuReading& r) {
    const NvmlLib& L = *lib_;
    Support& s = sup(NvmlField::kGpm);
    if (s == Support::kUnsupported) return;
    if (!gpm_probed_) {
      gpm_probed_ = true;
      if ((arch_known_ && arch_ < NVML_DEVICE_ARCH_HOPPER) || L.GpmQueryDeviceSupport == nullptr ||
          L.GpmSampleAlloc == nullptr || L.GpmSampleGet == nullptr || L.GpmMetricsGet == nullptr ||
          L.GpmSampleFree == nullptr) {
        s = Support::kUnsupported;
        return;
      }
      nvmlGpmSupport_t q{};
      q.version = NVML_GPM_SUPPORT_VERSION;
      const nvmlReturn_t rc = Call(slot, "nvmlGpmQueryDeviceSupport",
                                   [&] { return L.GpmQueryDeviceSupport(dev_, &q); });
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
        if (Call(slot, "nvmlGpmSampleAlloc", [&] { return L.GpmSampleAlloc(&g); }) !=
            NVML_SUCCESS) {
          s = Support::kUnsupported;
          return;
        }
      }
    }
    const int64_t now = hub_->Now();
    if (have_prev_ && now - prev_ns_ <= kGpmMinGapNs) return;  // too close: keep the older sample
    const nvmlReturn_t rc =
        Call(slot, "nvmlGpmSampleGet", [&] { return L.GpmSampleGet(dev_, gpm_[cur_]); });
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
      const nvmlReturn_t mrc =
          Call(slot, "nvmlGpmMetricsGet", [&] { return L.GpmMetricsGet(get.get()); });
      if (Accept(NvmlField::kGpm, mrc, r)) {
        auto metric = [&](int i) -> std::optional<double> {
          if (get->metrics[i].nvmlReturn != NVML_SUCCESS) return std::nullopt;
          const double v = get->metrics[i].value;
          if (!(v >= 0.0 && v <= 100.0)) return std::nullopt;
          return v;
        };
        r.gpm_sm_pct = metric(0);
        r.gpm_occupancy_pct = metric(1);
        r.gpm_tensor_pct = metric(2);
        r.gpm_dram_pct = metric(3);
      }
    }
    have_prev_ = true;
    prev_ns_ = now;
    cur_ ^= 1;
  }

  std::shared_ptr<NvmlLib> lib_;
  std::shared_ptr<Hub> hub_;
  size_t slot_;
  nvmlDevice_t dev_;
  nvmlEventSet_t events_;  // shared Xid set, owned by the event worker; may be null
  std::shared_ptr<SlotJob> keep_alive_;
  bool identity_done_ = false;
  nvmlDeviceArchitecture_t arch_ = NVML_DEVICE_ARCH_UNKNOWN;
  bool arch_known_ = false;
  SupportArray support_{};
  bool mem_v2_unsupported_ = false;
  bool gpm_probed_ = false;
  nvmlGpmSample_t gpm_[2] = {nullptr, nullptr};
  int cur_ = 0;
  bool have_prev_ = false;
  int64_t prev_ns_ = 0;
};

// Drains the Xid event set without waiting. Owned by its thread.
class EventWorker final : public SlotJob {
 public:
  EventWorker(std::shared_ptr<NvmlLib> lib, std::shared_ptr<Hub> hub, size_t slot,
              nvmlEventSet_t set, std::unordered_map<nvmlDevice_t, size_t> gpu_of)
      : lib_(std::move(lib)),
        hub_(std::move(hub)),
        slot_(slot),
        set_(set),
        gpu_of_(std::move(gpu_of)) {}
  ~EventWorker() {
    if (set_ != nullptr && lib_->EventSetFree != nullptr) lib_->EventSetFree(set_);
  }

  void RunTick(uint64_t tick) override {
    Slot& slot = *hub_->slots[slot_];
    {
      std::vector<XidEvent> events;
      std::string error;
      for (int i = 0; i < kMaxEventsPerTick; ++i) {
        nvmlEventData_t data{};
        slot.call_started_ns.store(SteadyNs(), std::memory_order_relaxed);
        slot.current_call.store("nvmlEventSetWait", std::memory_order_release);
        const nvmlReturn_t rc = lib_->EventSetWait(set_, &data, 0);
        slot.current_call.store(nullptr, std::memory_order_release);
        if (rc == NVML_ERROR_TIMEOUT) break;
        if (rc != NVML_SUCCESS) {
          error = lib_->ErrorText(rc);
          break;
        }
        if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
        const auto it = gpu_of_.find(data.device);
        if (it != gpu_of_.end()) events.push_back({it->second, data.eventData});
      }
      std::lock_guard<std::mutex> lock(hub_->mu);
      slot.events = std::move(events);
      slot.event_error = std::move(error);
      slot.completed = tick;
      slot.busy = false;
    }
  }

 private:
  std::shared_ptr<NvmlLib> lib_;
  std::shared_ptr<Hub> hub_;
  size_t slot_;
  nvmlEventSet_t set_;
  std::unordered_map<nvmlDevice_t, size_t> gpu_of_;
};

// A pool thread: takes slots off the tick's queue until it is empty, then tells the sampling
// thread. One thread usually reads every GPU of a tick (two context switches per tick, not two
// per GPU); the sampling thread wakes another only when the queue stalls behind a slow call.
void PoolLoop(std::shared_ptr<Hub> hub, std::shared_ptr<std::vector<std::shared_ptr<SlotJob>>> jobs,
              size_t self) {
  std::unique_lock<std::mutex> lock(hub->mu);
  for (;;) {
    hub->work.wait(lock, [&] { return hub->stop || !hub->queue.empty(); });
    if (hub->stop) return;
    while (!hub->queue.empty() && !hub->stop) {
      const size_t s = hub->queue.front();
      hub->queue.pop_front();
      const uint64_t tick = hub->slots[s]->requested;
      hub->in_job[self] = true;
      lock.unlock();
      (*jobs)[s]->RunTick(tick);
      lock.lock();
      hub->in_job[self] = false;
    }
    hub->done.notify_all();
  }
}

std::string ArchName(nvmlDeviceArchitecture_t a) {
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

// Rate of a cumulative counter between two reads, in units/s, handling wrap at the counter's
// width. Updates *prev. nullopt on the first read, on a width change, or on an implausible jump.
std::optional<double> CounterRate(std::optional<CounterRead>& prev,
                                  const std::optional<CounterRead>& cur, double unit_bytes,
                                  double max_bytes_per_s, bool* reset) {
  if (!cur) return std::nullopt;  // keep prev: the next rate spans the gap exactly
  std::optional<CounterRead> p = prev;
  prev = cur;
  if (!p || p->bits != cur->bits) return std::nullopt;
  double dt_s;
  if (p->timestamp_us > 0 && cur->timestamp_us > p->timestamp_us) {
    dt_s = static_cast<double>(cur->timestamp_us - p->timestamp_us) * 1e-6;
  } else {
    dt_s = static_cast<double>(cur->read_ns - p->read_ns) * 1e-9;
  }
  if (!(dt_s > 0)) return std::nullopt;
  const uint64_t mask = cur->bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << cur->bits) - 1);
  const uint64_t delta = (cur->value - p->value) & mask;
  const double rate = static_cast<double>(delta) * unit_bytes / dt_s;
  if (rate > max_bytes_per_s) {
    *reset = true;
    return std::nullopt;
  }
  return rate;
}

}  // namespace

struct NvmlSource::Impl {
  std::shared_ptr<NvmlLib> lib;
  std::shared_ptr<Hub> hub;
  Clock* clock = nullptr;
  int64_t deadline_ns = 0;
  std::vector<std::string> hosts;
  std::string driver_version;
  std::vector<GpuInfo> infos;
  std::vector<std::string> archs;
  std::vector<SupportArray> support;
  std::vector<Support> xid_support;
  bool have_event_worker = false;
  std::vector<std::thread> threads;  // the pool: one thread per slot, so every slot can be stuck

  // Per GPU, across ticks.
  struct Prev {
    std::optional<uint64_t> energy_mj;
    int64_t energy_ns = 0;
    std::optional<CounterRead> pcie_tx, pcie_rx, nvlink_tx, nvlink_rx;
    bool was_stale = false;
    bool was_lost = false;
  };
  std::vector<Prev> prev;
  std::vector<NvmlGpuStatus> status;
  std::vector<std::string> warnings;
  uint64_t tick = 0;
  int64_t last_tick_latency_us = 0;
  uint64_t stale_samples = 0;

  void Warn(std::string w) {
    // Bounded: a flapping GPU must not grow memory without limit in a week-long record.
    if (warnings.size() >= 10000) warnings.erase(warnings.begin(), warnings.begin() + 5000);
    warnings.push_back(std::move(w));
  }
  // Takes what a reading says about the GPU itself (not its telemetry), once.
  void Learn(size_t i, GpuReading& r) {
    if (r.identity) {
      GpuInfo& info = infos[i];
      info.name = r.identity->name;
      info.uuid = r.identity->uuid;
      info.pci_bus_id = r.identity->pci_bus_id;
      archs[i] = ArchName(r.identity->arch);
      if (have_event_worker) xid_support[i] = r.identity->xid;
      r.identity.reset();
    }
    support[i] = r.support;
  }
  std::string GpuLabel(size_t i) const {
    return infos[i].uuid.empty() ? fmt::format("GPU {}", i)
                                 : fmt::format("GPU {} ({})", i, infos[i].uuid);
  }
};

NvmlSource::NvmlSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

// What Open() needs from NVML before workers exist: the library, the GPU handles, the driver
// version and the Xid event set. Filled by a boot thread so that a hung nvmlInit or handle
// lookup has a deadline like every other call.
struct Boot {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::shared_ptr<NvmlLib> lib;
  std::vector<nvmlDevice_t> devices;
  std::vector<std::string> handle_errors;
  std::string driver_version;
  nvmlEventSet_t events = nullptr;
};

void RunBoot(const std::shared_ptr<Boot>& boot, const std::string& library_path) {
  Status status;
  auto loaded = NvmlLib::Load(library_path);
  std::shared_ptr<NvmlLib> lib;
  std::vector<nvmlDevice_t> devices;
  std::vector<std::string> handle_errors;
  std::string driver_version;
  nvmlEventSet_t events = nullptr;
  if (!loaded.ok()) {
    status = loaded.status();
  } else {
    lib = std::move(loaded).value();
    const NvmlLib& L = *lib;
    unsigned count = 0;
    const nvmlReturn_t crc = L.DeviceGetCount(&count);
    if (crc != NVML_SUCCESS) {
      status = Status::Unavailable(
          fmt::format("cannot use NVML: nvmlDeviceGetCount on {} failed: {}. {}", L.path(),
                      L.ErrorText(crc), kNvmlHowToPoint));
    } else if (count == 0) {
      status = Status::Unavailable(fmt::format(
          "no GPU: NVML ({}) is loaded and the driver answers, but it reports 0 GPUs on this host "
          "(check `nvidia-smi -L`; CUDA_VISIBLE_DEVICES does not apply to NVML). If this is the "
          "wrong library: {}",
          L.path(), kNvmlHowToPoint));
    } else {
      if (L.SystemGetDriverVersion != nullptr) {
        char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
        if (L.SystemGetDriverVersion(buf, sizeof(buf)) == NVML_SUCCESS) driver_version = buf;
      }
      devices.assign(count, nullptr);
      for (unsigned i = 0; i < count; ++i) {
        const nvmlReturn_t hrc = L.DeviceGetHandleByIndex(i, &devices[i]);
        if (hrc != NVML_SUCCESS) {
          devices[i] = nullptr;
          handle_errors.push_back(
              fmt::format("GPU {}: nvmlDeviceGetHandleByIndex failed: {}; it is reported lost", i,
                          L.ErrorText(hrc)));
        }
      }
      if (L.EventSetCreate != nullptr && L.DeviceRegisterEvents != nullptr &&
          L.EventSetWait != nullptr && L.EventSetCreate(&events) != NVML_SUCCESS) {
        events = nullptr;
      }
    }
  }
  std::lock_guard<std::mutex> lock(boot->mu);
  boot->status = std::move(status);
  boot->lib = std::move(lib);
  boot->devices = std::move(devices);
  boot->handle_errors = std::move(handle_errors);
  boot->driver_version = std::move(driver_version);
  boot->events = events;
  boot->done = true;
  boot->cv.notify_all();
}

}  // namespace

Result<std::unique_ptr<NvmlSource>> NvmlSource::Open(const NvmlSourceOptions& options) {
  auto boot = std::make_shared<Boot>();
  std::thread boot_thread([boot, path = options.library_path] { RunBoot(boot, path); });
  {
    std::unique_lock<std::mutex> lock(boot->mu);
    const int64_t wait_ms = std::max<int64_t>(1, options.init_deadline_ms);
    if (!boot->cv.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return boot->done; })) {
      lock.unlock();
      boot_thread.detach();  // it owns `boot`; a hung driver call must not hang us
      return Status::Unavailable(fmt::format(
          "cannot use NVML: loading it, nvmlInit or the GPU enumeration did not return within {} "
          "ms (a hung driver; check `nvidia-smi` and dmesg for Xid errors)",
          wait_ms));
    }
  }
  boot_thread.join();
  if (!boot->status.ok()) return boot->status;

  auto impl = std::make_unique<Impl>();
  impl->lib = boot->lib;
  impl->clock = options.clock != nullptr ? options.clock : SystemClock();
  impl->deadline_ns = std::max<int64_t>(1, options.call_deadline_ms) * 1'000'000;
  impl->hosts = {options.hostname.empty() ? LocalHostName() : options.hostname};
  impl->driver_version = boot->driver_version;
  for (std::string& e : boot->handle_errors) impl->Warn(std::move(e));
  const size_t count = boot->devices.size();

  auto hub = std::make_shared<Hub>();
  hub->clock = impl->clock;
  impl->hub = hub;
  impl->infos.resize(count);
  impl->archs.resize(count);
  impl->support.assign(count, SupportArray{});
  impl->xid_support.assign(count, Support::kUnknown);
  impl->prev.resize(count);
  impl->status.resize(count);
  std::unordered_map<nvmlDevice_t, size_t> gpu_of;
  for (size_t i = 0; i < count; ++i) {
    impl->infos[i].key = GpuKey{0, static_cast<uint16_t>(i)};
    if (boot->devices[i] != nullptr) gpu_of[boot->devices[i]] = i;
  }
  nvmlEventSet_t events = boot->events;
  if (events == nullptr) impl->xid_support.assign(count, Support::kUnsupported);

  for (size_t i = 0; i < count; ++i) hub->slots.push_back(std::make_unique<Slot>());
  if (events != nullptr) hub->slots.push_back(std::make_unique<Slot>());
  // The event worker owns the set and frees it after the GPU workers, which only register on it.
  auto jobs = std::make_shared<std::vector<std::shared_ptr<SlotJob>>>();
  std::shared_ptr<EventWorker> event_worker;
  if (events != nullptr) {
    event_worker = std::make_shared<EventWorker>(impl->lib, hub, count, events, std::move(gpu_of));
  }
  for (size_t i = 0; i < count; ++i) {
    auto w = std::make_shared<GpuWorker>(impl->lib, hub, i, boot->devices[i], events);
    if (event_worker) w->KeepAlive(event_worker);
    jobs->push_back(std::move(w));
  }
  if (event_worker) {
    impl->have_event_worker = true;
    jobs->push_back(std::move(event_worker));
  }
  // As many threads as slots: even with every slot's call stuck, none waits for a thread.
  hub->in_job.assign(jobs->size(), false);
  for (size_t t = 0; t < jobs->size(); ++t) {
    impl->threads.emplace_back([hub, jobs, t] { PoolLoop(hub, jobs, t); });
  }
  return std::unique_ptr<NvmlSource>(new NvmlSource(std::move(impl)));
}

NvmlSource::~NvmlSource() {
  Impl& I = *impl_;
  std::vector<bool> stuck(I.threads.size(), false);
  {
    std::lock_guard<std::mutex> lock(I.hub->mu);
    I.hub->stop = true;
    for (size_t i = 0; i < I.threads.size(); ++i) stuck[i] = I.hub->in_job[i];
    I.hub->work.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(I.hub->clock_mu);
    I.hub->clock = nullptr;  // the caller's clock may die with us; a stuck worker must not use it
  }
  for (size_t i = 0; i < I.threads.size(); ++i) {
    // A worker blocked inside NVML cannot be joined without hanging exit; it owns its state.
    if (stuck[i]) {
      I.threads[i].detach();
    } else {
      I.threads[i].join();
    }
  }
}

Status NvmlSource::Next(std::vector<GpuSample>* out) {
  Impl& I = *impl_;
  const int64_t t0 = SteadyNs();
  const uint64_t tick = ++I.tick;
  const int64_t timestamp_ms = I.clock->NowUnixMs();
  const size_t n = I.infos.size();
  const size_t nslots = I.hub->slots.size();

  std::vector<GpuReading> readings(n);
  std::vector<bool> got(nslots, false);
  std::vector<std::string> stale_reason(nslots);
  std::vector<XidEvent> events;
  std::string event_error;
  {
    std::unique_lock<std::mutex> lock(I.hub->mu);
    std::vector<bool> dispatched(nslots, false);
    for (size_t s = 0; s < nslots; ++s) {
      Slot& slot = *I.hub->slots[s];
      if (slot.busy) {
        const char* call = slot.current_call.load(std::memory_order_acquire);
        const int64_t since = slot.call_started_ns.load(std::memory_order_relaxed);
        stale_reason[s] =
            fmt::format("{} still blocked after {} ms", call != nullptr ? call : "an NVML call",
                        (t0 - since) / 1'000'000);
        continue;
      }
      // A result that came back after its tick's deadline: its readings are too old to use,
      // but what it learned about the GPU (identity, Xid registration, support) still holds.
      if (s < n && slot.unread) I.Learn(s, slot.reading);
      slot.unread = false;
      slot.requested = tick;
      slot.busy = true;
      dispatched[s] = true;
      I.hub->queue.push_back(s);
    }
    I.hub->work.notify_one();
    const auto now = std::chrono::steady_clock::now();
    const auto deadline = now + std::chrono::nanoseconds(I.deadline_ns);
    // A queue that has not moved for this long sits behind a slow or stuck call: another pool
    // thread takes the rest, so one hung GPU costs the others at most this much.
    const auto stall = std::chrono::nanoseconds(std::max<int64_t>(1'000'000, I.deadline_ns / 20));
    const auto all_done = [&] {
      for (size_t s = 0; s < nslots; ++s) {
        if (dispatched[s] && I.hub->slots[s]->completed != tick) return false;
      }
      return true;
    };
    size_t queued = I.hub->queue.size();
    auto moved_at = now;
    for (;;) {
      const auto t = std::chrono::steady_clock::now();
      if (I.hub->queue.size() != queued) {
        queued = I.hub->queue.size();
        moved_at = t;
      }
      if (queued > 0 && t - moved_at >= stall) {
        I.hub->work.notify_one();
        moved_at = t;
      }
      const auto until = queued > 0 ? std::min(deadline, moved_at + stall) : deadline;
      if (I.hub->done.wait_until(lock, until, all_done)) break;
      if (std::chrono::steady_clock::now() >= deadline) break;
    }
    for (size_t s = 0; s < nslots; ++s) {
      Slot& slot = *I.hub->slots[s];
      if (!dispatched[s]) continue;
      if (slot.completed == tick) {
        got[s] = true;
        if (s < n) {
          readings[s] = std::move(slot.reading);
          slot.unread = false;
        } else {
          events = std::move(slot.events);
          event_error = std::move(slot.event_error);
        }
      } else {
        const char* call = slot.current_call.load(std::memory_order_acquire);
        stale_reason[s] =
            fmt::format("{} did not return within {} ms", call != nullptr ? call : "an NVML call",
                        I.deadline_ns / 1'000'000);
      }
    }
  }

  if (I.have_event_worker) {
    if (!got[n]) {
      I.Warn(fmt::format("Xid events not read this tick: {}", stale_reason[n]));
    } else if (!event_error.empty()) {
      I.Warn(fmt::format("reading Xid events failed: {}", event_error));
    }
  }

  out->reserve(out->size() + n);
  for (size_t i = 0; i < n; ++i) {
    NvmlGpuStatus& st = I.status[i];
    Impl::Prev& prev = I.prev[i];
    st = NvmlGpuStatus{};
    GpuSample s;
    s.timestamp_ms = timestamp_ms;
    s.key = I.infos[i].key;
    for (const XidEvent& e : events) {
      if (e.gpu == i) st.xids.push_back(e.xid);
    }
    for (uint64_t xid : st.xids)
      I.Warn(fmt::format("{}: Xid {} critical error", I.GpuLabel(i), xid));

    if (!got[i]) {
      st.stale = true;
      st.stale_reason = stale_reason[i];
      ++I.stale_samples;
      if (!prev.was_stale) I.Warn(fmt::format("{} is stale: {}", I.GpuLabel(i), st.stale_reason));
      prev.was_stale = true;
      out->push_back(s);
      continue;
    }
    if (prev.was_stale) I.Warn(fmt::format("{} answers again", I.GpuLabel(i)));
    prev.was_stale = false;
    GpuReading& r = readings[i];
    I.Learn(i, r);
    st.read_latency_us = r.latency_ns / 1000;
    if (r.lost) {
      st.lost = true;
      if (!prev.was_lost) {
        I.Warn(
            fmt::format("{} is lost (NVML_ERROR_GPU_IS_LOST): it has fallen off the bus or "
                        "otherwise become inaccessible",
                        I.GpuLabel(i)));
      }
      prev.was_lost = true;
      out->push_back(s);
      continue;
    }
    prev.was_lost = false;

    auto w = [](const std::optional<unsigned>& mw) -> std::optional<double> {
      if (!mw) return std::nullopt;
      return *mw / 1000.0;
    };
    auto d = [](const auto& v) -> std::optional<double> {
      if (!v) return std::nullopt;
      return static_cast<double>(*v);
    };
    s.power_w = w(r.power_mw);
    s.power_instant_w = w(r.power_instant_mw);
    s.power_limit_w = w(r.limit_mw);
    s.util_gpu_pct = d(r.util_gpu);
    s.util_mem_pct = d(r.util_mem);
    s.sm_clock_mhz = d(r.sm_mhz);
    s.mem_clock_mhz = d(r.mem_mhz);
    s.temperature_c = d(r.temp_c);
    if (r.mem_used_bytes) s.mem_used_mib = static_cast<double>(*r.mem_used_bytes) / 1048576.0;
    if (r.mem_total_bytes) s.mem_total_mib = static_cast<double>(*r.mem_total_bytes) / 1048576.0;
    s.pstate = r.pstate;
    if (r.reasons) s.clock_event_reasons = *r.reasons;
    if (r.energy_mj) {
      s.energy_mj = *r.energy_mj;
      if (prev.energy_mj && r.energy_read_ns > prev.energy_ns) {
        const uint64_t delta_mj = *r.energy_mj - *prev.energy_mj;  // wraps at 2^64 like NVML's
        const double dt_ms = static_cast<double>(r.energy_read_ns - prev.energy_ns) / 1e6;
        const double mean_w = static_cast<double>(delta_mj) / dt_ms;  // mJ/ms == W
        if (mean_w <= kMaxPlausiblePowerW) {
          s.power_mean_w = mean_w;
        } else {
          I.Warn(
              fmt::format("{}: energy counter went from {} to {} mJ (driver reload?); no mean "
                          "power this tick",
                          I.GpuLabel(i), *prev.energy_mj, *r.energy_mj));
        }
      }
      prev.energy_mj = r.energy_mj;
      prev.energy_ns = r.energy_read_ns;
    }
    bool reset = false;
    s.pcie_tx_bytes_per_s =
        CounterRate(prev.pcie_tx, r.pcie_tx, 1.0, kMaxPlausiblePcieBytesPerS, &reset);
    s.pcie_rx_bytes_per_s =
        CounterRate(prev.pcie_rx, r.pcie_rx, 1.0, kMaxPlausiblePcieBytesPerS, &reset);
    s.nvlink_tx_bytes_per_s =
        CounterRate(prev.nvlink_tx, r.nvlink_tx, 1024.0, kMaxPlausibleNvlinkBytesPerS, &reset);
    s.nvlink_rx_bytes_per_s =
        CounterRate(prev.nvlink_rx, r.nvlink_rx, 1024.0, kMaxPlausibleNvlinkBytesPerS, &reset);
    if (reset) {
      I.Warn(
          fmt::format("{}: a PCIe/NVLink byte counter jumped implausibly (reset?); no rate this "
                      "tick",
                      I.GpuLabel(i)));
    }
    auto ratio = [](const std::optional<double>& pct) -> std::optional<double> {
      if (!pct) return std::nullopt;
      return *pct / 100.0;
    };
    s.sm_activity_ratio = ratio(r.gpm_sm_pct);
    s.sm_occupancy_ratio = ratio(r.gpm_occupancy_pct);
    s.tensor_activity_ratio = ratio(r.gpm_tensor_pct);
    s.dram_bw_util_ratio = ratio(r.gpm_dram_pct);
    out->push_back(s);
  }
  I.last_tick_latency_us = (SteadyNs() - t0) / 1000;
  return Status::Ok();
}

const std::vector<std::string>& NvmlSource::hosts() const { return impl_->hosts; }
std::vector<GpuInfo> NvmlSource::gpus() const { return impl_->infos; }
std::vector<std::string> NvmlSource::warnings() const { return impl_->warnings; }
size_t NvmlSource::gpu_count() const { return impl_->infos.size(); }
const std::vector<NvmlGpuStatus>& NvmlSource::last_status() const { return impl_->status; }
Support NvmlSource::support(size_t gpu, NvmlField field) const {
  if (gpu >= impl_->infos.size() || field == NvmlField::kCount) return Support::kUnknown;
  if (field == NvmlField::kXid) return impl_->xid_support[gpu];
  return impl_->support[gpu][static_cast<int>(field)];
}
std::string NvmlSource::architecture(size_t gpu) const {
  return gpu < impl_->archs.size() ? impl_->archs[gpu] : std::string();
}
const std::string& NvmlSource::driver_version() const { return impl_->driver_version; }
const NvmlLib& NvmlSource::lib() const { return *impl_->lib; }
int64_t NvmlSource::last_tick_latency_us() const { return impl_->last_tick_latency_us; }
uint64_t NvmlSource::stale_samples() const { return impl_->stale_samples; }

}  // namespace ww::nvml
