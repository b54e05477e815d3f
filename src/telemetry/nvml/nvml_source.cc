// NvmlSource (nvml_source.h): opening NVML under a deadline (the boot thread), and each tick's
// round of the readers (nvml_readers.h) turned into samples, statuses and warnings.
#include "telemetry/nvml/nvml_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "core/host.h"
#include "telemetry/nvml/deadline_pool.h"
#include "telemetry/nvml/derive.h"
#include "telemetry/nvml/nvml_readers.h"

namespace ww::nvml {

using readers::CallTracker;
using readers::EventReader;
using readers::GpuReader;
using readers::GpuReading;
using readers::SharedClock;
using readers::SteadyNs;
using readers::SupportArray;
using readers::XidEvent;

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
  if (!BootWithin(
          boot, options.init_deadline_ms,
          [path = options.library_path](const std::shared_ptr<Boot>& b) { RunBoot(b, path); })) {
    return Status::Unavailable(fmt::format(
        "cannot use NVML: loading it, nvmlInit or the GPU enumeration did not return within {} "
        "ms (a hung driver; check `nvidia-smi` and dmesg for Xid errors)",
        std::max<int64_t>(1, options.init_deadline_ms)));
  }
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
uint32_t NvmlSource::unsupported_sample_fields(size_t gpu) const {
  auto no = [&](NvmlField f) { return support(gpu, f) == Support::kUnsupported; };
  uint32_t mask = 0;
  if (no(NvmlField::kPowerDraw)) mask |= kSamplePower;
  if (no(NvmlField::kPowerLimit)) mask |= kSamplePowerLimit;
  if (no(NvmlField::kUtilization)) mask |= kSampleUtilGpu | kSampleUtilMem;
  if (no(NvmlField::kSmClock)) mask |= kSampleSmClock;
  if (no(NvmlField::kMemClock)) mask |= kSampleMemClock;
  if (no(NvmlField::kTemperature)) mask |= kSampleTemperature;
  if (no(NvmlField::kMemory)) mask |= kSampleMemUsed | kSampleMemTotal;
  if (no(NvmlField::kPstate)) mask |= kSamplePstate;
  if (no(NvmlField::kClockEventReasons)) mask |= kSampleClockEventReasons;
  return mask;
}
std::vector<std::pair<std::string, FieldSupport>> NvmlSource::field_support(size_t gpu) const {
  std::vector<std::pair<std::string, FieldSupport>> out;
  for (int f = 0; f < kNvmlFieldCount; ++f) {
    const auto field = static_cast<NvmlField>(f);
    out.emplace_back(NvmlFieldName(field), support(gpu, field));
  }
  return out;
}
LiveBackendInfo NvmlSource::backend_info() const {
  return LiveBackendInfo{"NVML", impl_->lib->path(), impl_->driver_version, ""};
}
const std::string& NvmlSource::driver_version() const { return impl_->driver_version; }
const NvmlLib& NvmlSource::lib() const { return *impl_->lib; }
int64_t NvmlSource::last_tick_latency_us() const { return impl_->health.last_read_latency_us; }
uint64_t NvmlSource::stale_samples() const { return impl_->health.samples_stale; }

}  // namespace ww::nvml
