// The NVML readers behind NvmlSource (nvml_source.h): one per GPU, reading every field through
// the entry-point table (nvml_api.h) and learning which fields the device supports, and one that
// drains Xid events. Each is a DeadlinePool job; the source runs them with a deadline per tick and
// turns their raw readings into samples (derive.h). Internal to telemetry/nvml/.
//
// Ownership: a reader holds (by shared_ptr) the library and the shared clock, so a reader stuck in
// a driver call past the source's lifetime still has them. Thread-safety: a reader's Run() is
// called by its pool thread; what it publishes for the sampling thread is said at each member
// (CallTracker: atomics; results: handed over by DeadlinePool, see its header).
#pragma once

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "telemetry/nvml/deadline_pool.h"
#include "telemetry/nvml/derive.h"
#include "telemetry/nvml/nvml_api.h"
#include "telemetry/nvml/nvml_source.h"

namespace ww::nvml::readers {

using SupportArray = std::array<Support, kNvmlFieldCount>;

inline constexpr int kMaxEventsPerTick = 256;

// Steady time for naming how long a call has been stuck: real time even on a ManualClock, like
// the pool's deadline.
inline int64_t SteadyNs() {
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

  GpuReading ReadAll();
  void ReadIdentity(GpuReading& r);
  void ReadMemory(GpuReading& r);
  void ReadFieldValues(GpuReading& r);
  void ReadGpm(GpuReading& r);

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

  void Run() override;
  // For the source, after a round reported this reader done.
  std::vector<XidEvent> TakeEvents() { return std::exchange(events_, {}); }
  const std::string& error() const { return error_; }

 private:
  nvmlEventSet_t set_;
  std::unordered_map<nvmlDevice_t, size_t> gpu_of_;
  std::vector<XidEvent> events_;
  std::string error_;
};

}  // namespace ww::nvml::readers
