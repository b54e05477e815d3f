#include "telemetry/nvml/nvml_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "core/host.h"
#include "telemetry/nvml/deadline_pool.h"
#include "telemetry/nvml/derive.h"

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

int64_t EffectiveCallDeadlineMs(const NvmlSourceOptions& options) {
  if (options.call_deadline_ms > 0) return options.call_deadline_ms;
  return std::clamp<int64_t>(options.sampling_interval_ms, 20, 1000);
}

namespace {

using SupportArray = std::array<Support, kNvmlFieldCount>;

constexpr int kMaxEventsPerTick = 256;

// Steady time for naming how long a call has been stuck: real time even on a ManualClock, like
// the pool's deadline.
int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Where a reader is calling NVML: the entry point, and an argument worth naming when one entry
// point is called for two fields ("nvmlDeviceGetClockInfo(SM)"). Static objects only, so a
// pointer to one can be published to the sampling thread without ownership.
struct CallSite {
  NvmlEntry entry;
  const char* argument;  // nullptr: none
};
template <NvmlEntry E, const char* Argument = nullptr>
inline constexpr CallSite kCallSite{E, Argument};
inline constexpr char kSm[] = "SM";
inline constexpr char kMem[] = "MEM";

// The call a reader is in, published so the sampling thread can name a stuck call. Written by
// the reader's pool thread, read by the sampling thread (atomics, no lock).
class CallTracker {
 public:
  void Enter(const CallSite* site) {
    started_ns_.store(SteadyNs(), std::memory_order_relaxed);
    site_.store(site, std::memory_order_release);
  }
  void Leave() { site_.store(nullptr, std::memory_order_release); }
  // "nvmlDeviceGetPowerUsage" (the symbol bound for it) and how long it has run, or "an NVML
  // call" between calls.
  std::string Name(const NvmlLib& lib, int64_t* running_ns = nullptr) const {
    const CallSite* site = site_.load(std::memory_order_acquire);
    if (running_ns != nullptr) {
      *running_ns = SteadyNs() - started_ns_.load(std::memory_order_relaxed);
    }
    if (site == nullptr) return "an NVML call";
    const char* symbol = lib.Symbol(site->entry);
    return site->argument != nullptr ? fmt::format("{}({})", symbol, site->argument) : symbol;
  }

 private:
  std::atomic<const CallSite*> site_{nullptr};
  std::atomic<int64_t> started_ns_{0};
};

// The caller's clock, shared with the readers so that a reader stuck past the source's lifetime
// never uses a dead clock: the source nulls it on the way out.
struct SharedClock {
  std::mutex mu;
  Clock* clock = nullptr;
  int64_t NowNs() {
    std::lock_guard<std::mutex> lock(mu);
    return clock != nullptr ? clock->NowMonotonicNs() : 0;
  }
};

// A pool job that calls NVML through the entry-point table: every call names its entry point
// once (NvmlEntry::kX), and the function and the symbol in messages both come from the table.
class NvmlReader : public DeadlinePool::Job {
 public:
  NvmlReader(std::shared_ptr<NvmlLib> lib, std::shared_ptr<SharedClock> clock)
      : lib_(std::move(lib)), clock_(std::move(clock)) {}
  const CallTracker& tracker() const { return tracker_; }

 protected:
  template <NvmlEntry E>
  bool Has() const {
    return (*lib_).*NvmlEntryTraits<E>::kMember != nullptr;
  }
  // Calls entry point E (NVML_ERROR_FUNCTION_NOT_FOUND when the library lacks it), publishing
  // the call site while it runs.
  template <NvmlEntry E, const char* Argument = nullptr, typename... Args>
  nvmlReturn_t Call(Args... args) {
    const auto fn = (*lib_).*NvmlEntryTraits<E>::kMember;
    if (fn == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
    tracker_.Enter(&kCallSite<E, Argument>);
    const nvmlReturn_t rc = fn(args...);
    tracker_.Leave();
    return rc;
  }

  std::shared_ptr<NvmlLib> lib_;
  std::shared_ptr<SharedClock> clock_;
  CallTracker tracker_;
};

// Everything one run read from one GPU.
struct GpuReading {
  bool lost = false;
  RawReadings raw;
  SupportArray support{};
  int64_t latency_ns = 0;
  // Set by the first run that reaches the device: who it is, and whether Xid events were
  // registered for it. Read by the reader (not at Open) so a hung call here has a deadline too.
  struct Identity {
    std::string name, uuid, pci_bus_id;
    nvmlDeviceArchitecture_t arch = NVML_DEVICE_ARCH_UNKNOWN;
    Support xid = Support::kUnsupported;
  };
  std::optional<Identity> identity;
};

// The calls made for one GPU. Shared by the pool and the source; see DeadlinePool for who may
// touch it when.
class GpuReader final : public NvmlReader {
 public:
  GpuReader(std::shared_ptr<NvmlLib> lib, std::shared_ptr<SharedClock> clock, nvmlDevice_t device,
            nvmlEventSet_t events)
      : NvmlReader(std::move(lib), std::move(clock)), dev_(device), events_(events) {
    support_.fill(Support::kUnknown);
  }

  ~GpuReader() override {
    for (nvmlGpmSample_t s : gpm_) {
      if (s != nullptr && lib_->GpmSampleFree != nullptr) lib_->GpmSampleFree(s);
    }
  }

  void Run() override {
    GpuReading next = ReadAll();
    // A run that finished after its round's deadline was never taken; what it learned about the
    // GPU itself (identity, Xid registration) still holds, so it rides along with this one.
    if (result_.identity && !next.identity) next.identity = std::move(result_.identity);
    result_ = std::move(next);
  }
  // The last run's result; the source takes the identity out of it (see Learn).
  GpuReading& result() { return result_; }
  // Keeps the Xid event reader (which frees the event set) alive while this GPU may register.
  void KeepAlive(std::shared_ptr<DeadlinePool::Job> events) { keep_alive_ = std::move(events); }

 private:
  Support& sup(NvmlField f) { return support_[static_cast<int>(f)]; }

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

  // True when `f` is worth asking this run through entry point E: the GPU answers and neither
  // the device nor the library said the field is unsupported.
  template <NvmlEntry E>
  bool Want(NvmlField f, const GpuReading& r) {
    if (!Has<E>()) sup(f) = Support::kUnsupported;
    return !r.lost && sup(f) != Support::kUnsupported;
  }

  // The field-read helper: one field through entry point E, unless known unsupported; true when
  // the value it wrote through `args` is usable.
  template <NvmlEntry E, const char* Argument = nullptr, typename... Args>
  bool ReadField(NvmlField f, GpuReading& r, Args... args) {
    if (!Want<E>(f, r)) return false;
    return Accept(f, Call<E, Argument>(args...), r);
  }

  GpuReading ReadAll() {
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

  void ReadIdentity(GpuReading& r) {
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

  void ReadMemory(GpuReading& r) {
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

  void ReadFieldValues(GpuReading& r) {
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

  void ReadGpm(GpuReading& r) {
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

  nvmlDevice_t dev_;
  nvmlEventSet_t events_;  // shared Xid set, owned by the event reader; may be null
  std::shared_ptr<DeadlinePool::Job> keep_alive_;
  GpuReading result_;
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

struct XidEvent {
  size_t gpu;
  uint64_t xid;
};

// Drains the Xid event set without waiting.
class EventReader final : public NvmlReader {
 public:
  EventReader(std::shared_ptr<NvmlLib> lib, std::shared_ptr<SharedClock> clock, nvmlEventSet_t set,
              std::unordered_map<nvmlDevice_t, size_t> gpu_of)
      : NvmlReader(std::move(lib), std::move(clock)), set_(set), gpu_of_(std::move(gpu_of)) {}
  ~EventReader() override {
    if (set_ != nullptr && lib_->EventSetFree != nullptr) lib_->EventSetFree(set_);
  }

  void Run() override {
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
  // For the source, after a round reported this reader done.
  std::vector<XidEvent> TakeEvents() { return std::exchange(events_, {}); }
  const std::string& error() const { return error_; }

 private:
  nvmlEventSet_t set_;
  std::unordered_map<nvmlDevice_t, size_t> gpu_of_;
  std::vector<XidEvent> events_;
  std::string error_;
};

}  // namespace

struct NvmlSource::Impl {
  std::shared_ptr<NvmlLib> lib;
  std::shared_ptr<SharedClock> shared_clock;
  Clock* clock = nullptr;
  int64_t deadline_ns = 0;
  std::vector<std::string> hosts;
  std::string driver_version;
  std::vector<GpuInfo> infos;
  std::vector<std::string> archs;
  std::vector<SupportArray> support;
  std::vector<Support> xid_support;
  std::vector<std::shared_ptr<GpuReader>> readers;  // pool slot i = GPU i
  std::shared_ptr<EventReader> event_reader;        // pool slot infos.size(); may be null
  std::unique_ptr<DeadlinePool> pool;
  std::vector<DeadlinePool::Outcome> outcomes;

  // Per GPU, across ticks.
  struct Prev {
    DeriveState derive;
    bool was_stale = false;
    bool was_lost = false;
  };
  std::vector<Prev> prev;
  std::vector<NvmlGpuStatus> status;
  std::vector<std::string> warnings;
  SourceHealth health;

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
      archs[i] = ArchitectureName(r.identity->arch);
      if (event_reader) xid_support[i] = r.identity->xid;
      r.identity.reset();
    }
    support[i] = r.support;
  }
  std::string GpuLabel(size_t i) const {
    return infos[i].uuid.empty() ? fmt::format("GPU {}", i)
                                 : fmt::format("GPU {} ({})", i, infos[i].uuid);
  }
  // Why slot s has no result this tick.
  std::string StaleReason(const CallTracker& tracker, DeadlinePool::Outcome outcome) const {
    int64_t running_ns = 0;
    const std::string call = tracker.Name(*lib, &running_ns);
    if (outcome == DeadlinePool::Outcome::kStillBusy) {
      return fmt::format("{} still blocked after {} ms", call, running_ns / 1'000'000);
    }
    return fmt::format("{} did not return within {} ms", call, deadline_ns / 1'000'000);
  }
};

NvmlSource::NvmlSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

// What Open() needs from NVML before readers exist: the library, the GPU handles, the driver
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
      status = Status::Unavailable(fmt::format("cannot use NVML: {} on {} failed: {}. {}",
                                               L.Symbol(NvmlEntry::kDeviceGetCount), L.path(),
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
          handle_errors.push_back(fmt::format("GPU {}: {} failed: {}; it is reported lost", i,
                                              L.Symbol(NvmlEntry::kDeviceGetHandleByIndex),
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
  impl->shared_clock = std::make_shared<SharedClock>();
  impl->shared_clock->clock = impl->clock;
  impl->deadline_ns = EffectiveCallDeadlineMs(options) * 1'000'000;
  impl->hosts = {options.hostname.empty() ? LocalHostName() : options.hostname};
  impl->driver_version = boot->driver_version;
  for (std::string& e : boot->handle_errors) impl->Warn(std::move(e));
  const size_t count = boot->devices.size();

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

  // The event reader owns the set and frees it after the GPU readers, which only register on it.
  if (events != nullptr) {
    impl->event_reader =
        std::make_shared<EventReader>(impl->lib, impl->shared_clock, events, std::move(gpu_of));
  }
  std::vector<std::shared_ptr<DeadlinePool::Job>> jobs;
  for (size_t i = 0; i < count; ++i) {
    auto r = std::make_shared<GpuReader>(impl->lib, impl->shared_clock, boot->devices[i], events);
    if (impl->event_reader) r->KeepAlive(impl->event_reader);
    impl->readers.push_back(r);
    jobs.push_back(std::move(r));
  }
  if (impl->event_reader) jobs.push_back(impl->event_reader);
  impl->pool = std::make_unique<DeadlinePool>(std::move(jobs));
  return std::unique_ptr<NvmlSource>(new NvmlSource(std::move(impl)));
}

NvmlSource::~NvmlSource() {
  {
    // The caller's clock may die with us; a reader stuck past this point must not use it.
    std::lock_guard<std::mutex> lock(impl_->shared_clock->mu);
    impl_->shared_clock->clock = nullptr;
  }
  impl_->pool.reset();  // joins idle threads, detaches stuck ones (they keep their readers)
}

Status NvmlSource::Next(std::vector<GpuSample>* out) {
  using Outcome = DeadlinePool::Outcome;
  Impl& I = *impl_;
  const int64_t t0 = SteadyNs();
  const int64_t timestamp_ms = I.clock->NowUnixMs();
  const size_t n = I.infos.size();

  I.pool->RunRound(std::chrono::nanoseconds(I.deadline_ns), &I.outcomes);

  if (I.event_reader) {
    const Outcome o = I.outcomes[n];
    if (o != Outcome::kDone) {
      I.Warn(fmt::format("Xid events not read this tick: {}",
                         I.StaleReason(I.event_reader->tracker(), o)));
    } else if (!I.event_reader->error().empty()) {
      I.Warn(fmt::format("reading Xid events failed: {}", I.event_reader->error()));
    }
  }
  std::vector<XidEvent> events;
  if (I.event_reader && I.outcomes[n] == Outcome::kDone) events = I.event_reader->TakeEvents();

  bool any_reading = false;
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
    for (uint64_t xid : st.xids) {
      I.Warn(fmt::format("{}: Xid {} critical error", I.GpuLabel(i), xid));
    }

    if (I.outcomes[i] != Outcome::kDone) {
      st.stale = true;
      st.stale_reason = I.StaleReason(I.readers[i]->tracker(), I.outcomes[i]);
      ++I.health.samples_stale;
      if (!prev.was_stale) I.Warn(fmt::format("{} is stale: {}", I.GpuLabel(i), st.stale_reason));
      prev.was_stale = true;
      out->push_back(s);
      continue;
    }
    if (prev.was_stale) I.Warn(fmt::format("{} answers again", I.GpuLabel(i)));
    prev.was_stale = false;
    GpuReading& r = I.readers[i]->result();
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
    any_reading = true;

    const DeriveNotes notes = DeriveSample(r.raw, &prev.derive, &s);
    if (notes.energy_went_back) {
      I.Warn(
          fmt::format("{}: energy counter went from {} to {} mJ (driver reload?); no mean "
                      "power this tick",
                      I.GpuLabel(i), notes.energy_from_mj, notes.energy_to_mj));
    }
    if (notes.counter_jumped) {
      I.Warn(
          fmt::format("{}: a PCIe/NVLink byte counter jumped implausibly (reset?); no rate this "
                      "tick",
                      I.GpuLabel(i)));
    }
    out->push_back(s);
  }
  I.health.last_read_latency_us = (SteadyNs() - t0) / 1000;
  if (any_reading) I.health.last_success_unix_ms = timestamp_ms;
  return Status::Ok();
}

const std::vector<std::string>& NvmlSource::hosts() const { return impl_->hosts; }
std::vector<GpuInfo> NvmlSource::gpus() const { return impl_->infos; }
std::vector<std::string> NvmlSource::warnings() const { return impl_->warnings; }
SourceHealth NvmlSource::health() const { return impl_->health; }
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
int64_t NvmlSource::last_tick_latency_us() const { return impl_->health.last_read_latency_us; }
uint64_t NvmlSource::stale_samples() const { return impl_->health.samples_stale; }

}  // namespace ww::nvml
