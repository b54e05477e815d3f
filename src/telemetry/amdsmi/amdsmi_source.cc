// AmdSmiSource (amdsmi_source.h): opening AMD SMI under a deadline, one reader per GPU run by the
// DeadlinePool each tick, and the units of amdsmi.h turned into a GpuSample.
#include "telemetry/amdsmi/amdsmi_source.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "core/host.h"
#include "telemetry/amdsmi/rocm_smi_api.h"
#include "telemetry/nvml/deadline_pool.h"

namespace ww::amdsmi {

using nvml::BootWithin;
using nvml::DeadlinePool;

const char* AmdFieldName(AmdField field) {
  switch (field) {
    case AmdField::kPowerDraw:
      return "power.draw";
    case AmdField::kPowerInstant:
      return "power.instant";
    case AmdField::kEnergy:
      return "energy";
    case AmdField::kPowerLimit:
      return "power.limit";
    case AmdField::kUtilization:
      return "utilization";
    case AmdField::kSmClock:
      return "clocks.sm";
    case AmdField::kMemClock:
      return "clocks.mem";
    case AmdField::kTemperature:
      return "temperature";
    case AmdField::kMemory:
      return "memory";
    case AmdField::kCount:
      break;
  }
  return "?";
}

namespace {

using SupportArray = std::array<FieldSupport, kAmdFieldCount>;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// AMD SMI's "no value" for 16- and 32-bit readings (gpu_metrics fields it could not fill).
bool NotAvailable(uint64_t v) { return v == 0xFFFF || v == 0xFFFFFFFF; }

// "0000:c1:00.0" from amdsmi's BDF id: domain in bits 63..32, bus 15..8, device 7..3, function
// 2..0 (bits 31..28 are the partition, not part of the PCI address).
std::string BdfText(uint64_t bdf) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", static_cast<unsigned>(bdf >> 32),
                     static_cast<unsigned>((bdf >> 8) & 0xFF),
                     static_cast<unsigned>((bdf >> 3) & 0x1F), static_cast<unsigned>(bdf & 0x7));
}

struct Identity {
  std::string name, pci_bus_id, serial, architecture;
};

// One tick of one GPU, in amdsmi's units already converted to GpuSample's.
struct Reading {
  std::optional<Identity> identity;  // the first successful run only
  GpuSample sample;                  // readings only; key and timestamp set by the source
  SupportArray support{};
  std::vector<std::string> errors;  // calls that failed other than NOT_SUPPORTED
  int64_t latency_ns = 0;
};

// One GPU's reader: a DeadlinePool job. Publishes the call it is in so a stuck one can be named.
// One subclass per library (AMD SMI, ROCm SMI); both have 0 for success and 2 for not supported.
class GpuReader : public DeadlinePool::Job {
 public:
  void Run() override {
    const int64_t t0 = SteadyNs();
    Reading r;
    r.support = support_;
    // An identity read by a run that missed its deadline was never taken by the source: it is
    // carried forward (the source resets it once taken).
    r.identity = std::move(result_.identity);
    if (!identified_) {
      r.identity = ReadIdentity();
      identified_ = true;
    }
    ReadAll(r);
    support_ = r.support;
    r.latency_ns = SteadyNs() - t0;
    result_ = std::move(r);
  }

  Reading& result() { return result_; }
  // "amdsmi_get_power_info" and how long it has run, or "an AMD SMI call" between calls.
  std::string CallName(int64_t* running_ns) const {
    const char* call = call_.load(std::memory_order_acquire);
    *running_ns = SteadyNs() - started_ns_.load(std::memory_order_relaxed);
    return call != nullptr ? call : "an AMD SMI call";
  }

 protected:
  virtual Identity ReadIdentity() = 0;
  virtual void ReadAll(Reading& r) = 0;
  virtual bool IsUnsupported(uint32_t rc) const = 0;
  virtual std::string ErrorText(uint32_t rc) const = 0;

  // Runs one library call with the tracker set; returns its status.
  template <typename F>
  uint32_t Call(const char* name, F&& f) {
    started_ns_.store(SteadyNs(), std::memory_order_relaxed);
    call_.store(name, std::memory_order_release);
    const uint32_t rc = f();
    call_.store(nullptr, std::memory_order_release);
    return rc;
  }
  // Records what a call said about a field: success, not supported, or an error (left unknown).
  bool Answer(Reading& r, AmdField field, const char* name, uint32_t rc) {
    FieldSupport& s = r.support[static_cast<int>(field)];
    if (rc == 0) {
      s = FieldSupport::kSupported;
      return true;
    }
    if (IsUnsupported(rc)) {
      s = FieldSupport::kUnsupported;
    } else {
      r.errors.push_back(fmt::format("{} failed: {}", name, ErrorText(rc)));
    }
    return false;
  }
  static void Unsupported(Reading& r, AmdField field) {
    r.support[static_cast<int>(field)] = FieldSupport::kUnsupported;
  }

 private:
  bool identified_ = false;
  SupportArray support_{};
  Reading result_;
  std::atomic<const char*> call_{nullptr};
  std::atomic<int64_t> started_ns_{0};
};

class AmdSmiReader final : public GpuReader {
 public:
  AmdSmiReader(std::shared_ptr<AmdSmiLib> lib, amdsmi_processor_handle handle)
      : lib_(std::move(lib)), handle_(handle) {}

 private:
  bool IsUnsupported(uint32_t rc) const override {
    return rc == AMDSMI_STATUS_NOT_SUPPORTED || rc == AMDSMI_STATUS_NOT_YET_IMPLEMENTED;
  }
  std::string ErrorText(uint32_t rc) const override { return lib_->ErrorText(rc); }

  Identity ReadIdentity() override {
    const AmdSmiLib& L = *lib_;
    Identity id;
    if (L.GetGpuAsicInfo != nullptr) {
      amdsmi_asic_info_t asic{};
      if (Call("amdsmi_get_gpu_asic_info", [&] { return L.GetGpuAsicInfo(handle_, &asic); }) ==
          AMDSMI_STATUS_SUCCESS) {
        asic.market_name[sizeof(asic.market_name) - 1] = '\0';
        asic.asic_serial[sizeof(asic.asic_serial) - 1] = '\0';
        id.name = asic.market_name;
        id.serial = asic.asic_serial;
        if (asic.target_graphics_version != 0 && asic.target_graphics_version != ~uint64_t{0}) {
          id.architecture = fmt::format("gfx{:x}", asic.target_graphics_version);
        }
      }
    }
    if (id.name.empty() && L.GetGpuBoardInfo != nullptr) {
      amdsmi_board_info_t board{};
      if (Call("amdsmi_get_gpu_board_info", [&] { return L.GetGpuBoardInfo(handle_, &board); }) ==
          AMDSMI_STATUS_SUCCESS) {
        board.product_name[sizeof(board.product_name) - 1] = '\0';
        id.name = board.product_name;
      }
    }
    if (L.GetGpuBdfId != nullptr) {
      uint64_t bdf = 0;
      if (Call("amdsmi_get_gpu_bdf_id", [&] { return L.GetGpuBdfId(handle_, &bdf); }) ==
          AMDSMI_STATUS_SUCCESS) {
        id.pci_bus_id = BdfText(bdf);
      }
    }
    return id;
  }

  void ReadAll(Reading& r) override {
    const AmdSmiLib& L = *lib_;
    GpuSample& s = r.sample;
    if (L.GetPowerInfo != nullptr) {
      amdsmi_power_info_t p{};
      const char* name = "amdsmi_get_power_info";
      const amdsmi_status_t rc = Call(name, [&] { return L.GetPowerInfo(handle_, &p); });
      if (Answer(r, AmdField::kPowerDraw, name, rc)) {
        // 0 W is not a reading a powered GPU gives: the second GCD of an MI250X package says 0
        // or N/A for the package's power, which the first GCD reports.
        if (!NotAvailable(p.average_socket_power) && p.average_socket_power != 0) {
          s.power_w = p.average_socket_power;
        } else {
          Unsupported(r, AmdField::kPowerDraw);
        }
        if (!NotAvailable(p.current_socket_power) && p.current_socket_power != 0) {
          s.power_instant_w = p.current_socket_power;
          r.support[static_cast<int>(AmdField::kPowerInstant)] = FieldSupport::kSupported;
        } else {
          Unsupported(r, AmdField::kPowerInstant);
        }
      } else {
        r.support[static_cast<int>(AmdField::kPowerInstant)] =
            r.support[static_cast<int>(AmdField::kPowerDraw)];
      }
    } else {
      Unsupported(r, AmdField::kPowerDraw);
      Unsupported(r, AmdField::kPowerInstant);
    }
    if (L.GetPowerCapInfo != nullptr) {
      amdsmi_power_cap_info_t cap{};
      const char* name = "amdsmi_get_power_cap_info";
      if (Answer(r, AmdField::kPowerLimit, name,
                 Call(name, [&] { return L.GetPowerCapInfo(handle_, 0, &cap); })) &&
          cap.power_cap != 0) {
        s.power_limit_w = static_cast<double>(cap.power_cap) / 1e6;  // uW
      }
    } else {
      Unsupported(r, AmdField::kPowerLimit);
    }
    if (L.GetGpuActivity != nullptr) {
      amdsmi_engine_usage_t u{};
      const char* name = "amdsmi_get_gpu_activity";
      if (Answer(r, AmdField::kUtilization, name,
                 Call(name, [&] { return L.GetGpuActivity(handle_, &u); }))) {
        if (u.gfx_activity <= 100) s.util_gpu_pct = u.gfx_activity;
        if (u.umc_activity <= 100) s.util_mem_pct = u.umc_activity;
      }
    } else {
      Unsupported(r, AmdField::kUtilization);
    }
    if (L.GetClockInfo != nullptr) {
      amdsmi_clk_info_t c{};
      const char* name = "amdsmi_get_clock_info(GFX)";
      if (Answer(r, AmdField::kSmClock, name,
                 Call(name, [&] { return L.GetClockInfo(handle_, AMDSMI_CLK_TYPE_GFX, &c); })) &&
          !NotAvailable(c.clk)) {
        s.sm_clock_mhz = c.clk;
      }
      c = amdsmi_clk_info_t{};
      name = "amdsmi_get_clock_info(MEM)";
      if (Answer(r, AmdField::kMemClock, name,
                 Call(name, [&] { return L.GetClockInfo(handle_, AMDSMI_CLK_TYPE_MEM, &c); })) &&
          !NotAvailable(c.clk)) {
        s.mem_clock_mhz = c.clk;
      }
    } else {
      Unsupported(r, AmdField::kSmClock);
      Unsupported(r, AmdField::kMemClock);
    }
    if (L.GetTempMetric != nullptr) {
      // Hotspot (junction) first: MI300 has no edge sensor, and hotspot is what throttles.
      // amdsmi_get_temp_metric gives degrees C (its implementation divides the kernel's
      // millidegrees by 1000, whatever the header's comment says).
      int64_t temp = 0;
      const char* name = "amdsmi_get_temp_metric(HOTSPOT)";
      amdsmi_status_t rc = Call(name, [&] {
        return L.GetTempMetric(handle_, AMDSMI_TEMPERATURE_TYPE_HOTSPOT, AMDSMI_TEMP_CURRENT,
                               &temp);
      });
      if (rc == AMDSMI_STATUS_NOT_SUPPORTED) {
        name = "amdsmi_get_temp_metric(EDGE)";
        rc = Call(name, [&] {
          return L.GetTempMetric(handle_, AMDSMI_TEMPERATURE_TYPE_EDGE, AMDSMI_TEMP_CURRENT, &temp);
        });
      }
      if (Answer(r, AmdField::kTemperature, name, rc) &&
          !NotAvailable(static_cast<uint64_t>(temp))) {
        s.temperature_c = static_cast<double>(temp);
      }
    } else {
      Unsupported(r, AmdField::kTemperature);
    }
    if (L.GetGpuVramUsage != nullptr) {
      amdsmi_vram_usage_t v{};
      const char* name = "amdsmi_get_gpu_vram_usage";
      if (Answer(r, AmdField::kMemory, name,
                 Call(name, [&] { return L.GetGpuVramUsage(handle_, &v); }))) {
        // amdsmi's "MB" are bytes / (1024 * 1024): MiB already.
        s.mem_total_mib = v.vram_total;
        s.mem_used_mib = v.vram_used;
      }
    } else {
      Unsupported(r, AmdField::kMemory);
    }
    if (L.GetEnergyCount != nullptr) {
      uint64_t ticks = 0;
      uint64_t timestamp_ns = 0;
      float resolution_uj = 0;
      const char* name = "amdsmi_get_energy_count";
      if (Answer(r, AmdField::kEnergy, name,
                 Call(name,
                      [&] {
                        return L.GetEnergyCount(handle_, &ticks, &resolution_uj, &timestamp_ns);
                      })) &&
          resolution_uj > 0) {
        s.energy_mj = static_cast<uint64_t>(static_cast<double>(ticks) * resolution_uj / 1000.0);
      }
    } else {
      Unsupported(r, AmdField::kEnergy);
    }
  }

  std::shared_ptr<AmdSmiLib> lib_;
  amdsmi_processor_handle handle_;
};

// ROCm SMI: fewer readings (no instant power, clocks or energy here), other units (uW, bytes,
// millidegrees); GPUs by index.
class RocmSmiReader final : public GpuReader {
 public:
  RocmSmiReader(std::shared_ptr<RocmSmiLib> lib, uint32_t index)
      : lib_(std::move(lib)), index_(index) {}

 private:
  bool IsUnsupported(uint32_t rc) const override {
    return rc == kRsmiNotSupported || rc == kRsmiNotYetImplemented;
  }
  std::string ErrorText(uint32_t rc) const override { return lib_->ErrorText(rc); }

  Identity ReadIdentity() override {
    const RocmSmiLib& L = *lib_;
    Identity id;
    if (L.DevNameGet != nullptr) {
      char name[256] = {};
      if (Call("rsmi_dev_name_get", [&] { return L.DevNameGet(index_, name, sizeof name); }) ==
          kRsmiSuccess) {
        name[sizeof name - 1] = '\0';
        id.name = name;
      }
    }
    if (L.DevPciIdGet != nullptr) {
      uint64_t bdf = 0;
      if (Call("rsmi_dev_pci_id_get", [&] { return L.DevPciIdGet(index_, &bdf); }) ==
          kRsmiSuccess) {
        id.pci_bus_id = BdfText(bdf);
      }
    }
    return id;
  }

  void ReadAll(Reading& r) override {
    const RocmSmiLib& L = *lib_;
    GpuSample& s = r.sample;
    Unsupported(r, AmdField::kPowerInstant);
    Unsupported(r, AmdField::kEnergy);
    Unsupported(r, AmdField::kSmClock);
    Unsupported(r, AmdField::kMemClock);
    uint64_t u64 = 0;
    uint32_t u32 = 0;
    const char* name = "rsmi_dev_power_ave_get";
    if (L.DevPowerAveGet == nullptr) {
      Unsupported(r, AmdField::kPowerDraw);
    } else if (Answer(r, AmdField::kPowerDraw, name,
                      Call(name, [&] { return L.DevPowerAveGet(index_, 0, &u64); }))) {
      if (u64 != 0) {
        s.power_w = static_cast<double>(u64) / 1e6;  // uW
      } else {
        Unsupported(r, AmdField::kPowerDraw);  // the second GCD of an MI250X package
      }
    }
    name = "rsmi_dev_power_cap_get";
    if (L.DevPowerCapGet == nullptr) {
      Unsupported(r, AmdField::kPowerLimit);
    } else if (Answer(r, AmdField::kPowerLimit, name,
                      Call(name, [&] { return L.DevPowerCapGet(index_, 0, &u64); })) &&
               u64 != 0) {
      s.power_limit_w = static_cast<double>(u64) / 1e6;  // uW
    }
    name = "rsmi_dev_busy_percent_get";
    if (L.DevBusyPercentGet == nullptr) {
      Unsupported(r, AmdField::kUtilization);
    } else if (Answer(r, AmdField::kUtilization, name,
                      Call(name, [&] { return L.DevBusyPercentGet(index_, &u32); })) &&
               u32 <= 100) {
      s.util_gpu_pct = u32;
      if (L.DevMemoryBusyPercentGet != nullptr &&
          Call("rsmi_dev_memory_busy_percent_get",
               [&] { return L.DevMemoryBusyPercentGet(index_, &u32); }) == kRsmiSuccess &&
          u32 <= 100) {
        s.util_mem_pct = u32;
      }
    }
    name = "rsmi_dev_memory_total_get";
    if (L.DevMemoryTotalGet == nullptr || L.DevMemoryUsageGet == nullptr) {
      Unsupported(r, AmdField::kMemory);
    } else if (Answer(r, AmdField::kMemory, name, Call(name, [&] {
                        return L.DevMemoryTotalGet(index_, kRsmiMemTypeVram, &u64);
                      }))) {
      s.mem_total_mib = static_cast<double>(u64) / (1024.0 * 1024.0);  // bytes
      if (Call("rsmi_dev_memory_usage_get", [&] {
            return L.DevMemoryUsageGet(index_, kRsmiMemTypeVram, &u64);
          }) == kRsmiSuccess) {
        s.mem_used_mib = static_cast<double>(u64) / (1024.0 * 1024.0);
      }
    }
    if (L.DevTempMetricGet == nullptr) {
      Unsupported(r, AmdField::kTemperature);
    } else {
      int64_t milli_c = 0;
      name = "rsmi_dev_temp_metric_get(JUNCTION)";
      uint32_t rc = Call(name, [&] {
        return L.DevTempMetricGet(index_, kRsmiTempTypeJunction, kRsmiTempCurrent, &milli_c);
      });
      if (IsUnsupported(rc)) {
        name = "rsmi_dev_temp_metric_get(EDGE)";
        rc = Call(name, [&] {
          return L.DevTempMetricGet(index_, kRsmiTempTypeEdge, kRsmiTempCurrent, &milli_c);
        });
      }
      if (Answer(r, AmdField::kTemperature, name, rc)) {
        s.temperature_c = static_cast<double>(milli_c) / 1000.0;  // millidegrees
      }
    }
  }

  std::shared_ptr<RocmSmiLib> lib_;
  uint32_t index_;
};

// What a library's boot yields: one reader per GPU, and which library answered.
struct Opened {
  LiveBackendInfo backend;
  std::vector<std::shared_ptr<GpuReader>> readers;
};

Result<Opened> OpenAmdSmiLib(const std::string& library_path) {
  Status status;
  std::shared_ptr<AmdSmiLib> lib;
  std::vector<amdsmi_processor_handle> handles;
  auto loaded = AmdSmiLib::Load(library_path);
  if (!loaded.ok()) {
    status = loaded.status();
  } else {
    lib = std::move(loaded).value();
    const AmdSmiLib& L = *lib;
    uint32_t sockets = 0;
    amdsmi_status_t rc = L.GetSocketHandles(&sockets, nullptr);
    std::vector<amdsmi_socket_handle> socket_handles(sockets);
    if (rc == AMDSMI_STATUS_SUCCESS && sockets > 0) {
      rc = L.GetSocketHandles(&sockets, socket_handles.data());
      socket_handles.resize(std::min<size_t>(sockets, socket_handles.size()));
    }
    for (size_t i = 0; rc == AMDSMI_STATUS_SUCCESS && i < socket_handles.size(); ++i) {
      uint32_t n = 0;
      rc = L.GetProcessorHandles(socket_handles[i], &n, nullptr);
      if (rc != AMDSMI_STATUS_SUCCESS || n == 0) continue;
      std::vector<amdsmi_processor_handle> p(n);
      rc = L.GetProcessorHandles(socket_handles[i], &n, p.data());
      p.resize(std::min<size_t>(n, p.size()));
      handles.insert(handles.end(), p.begin(), p.end());
    }
    if (rc != AMDSMI_STATUS_SUCCESS) {
      status = Status::Unavailable(
          fmt::format("cannot use AMD SMI: enumerating GPUs on {} failed: {}. {}", L.path(),
                      L.ErrorText(rc), kAmdSmiHowToPoint));
    } else if (handles.empty()) {
      status = Status::Unavailable(fmt::format(
          "no AMD GPU: AMD SMI ({}, version {}) is loaded, but it reports 0 GPUs on this host "
          "(check `amd-smi list` and that the amdgpu driver is loaded)",
          L.path(), L.version()));
    }
  }
  if (!status.ok()) return status;
  Opened out;
  out.backend = LiveBackendInfo{"AMD SMI", lib->path(), "", lib->version()};
  for (amdsmi_processor_handle h : handles)
    out.readers.push_back(std::make_shared<AmdSmiReader>(lib, h));
  return out;
}

// probe_driver: start ROCm SMI only where the amdgpu driver's KFD is present. Its rsmi_init
// prints to stderr on a host without one, which a fallback tried on every NVIDIA-less host must
// not do; asked for by name (--source rocm-smi), it is started regardless.
Result<Opened> OpenRocmSmiLib(const std::string& library_path, bool probe_driver) {
  struct stat st {};
  if (probe_driver && ::stat("/sys/class/kfd", &st) != 0) {
    return Status::Unavailable(
        "no AMD GPU: the amdgpu driver is not loaded (/sys/class/kfd is absent), so ROCm SMI was "
        "not started");
  }
  auto loaded = RocmSmiLib::Load(library_path);
  if (!loaded.ok()) return loaded.status();
  std::shared_ptr<RocmSmiLib> lib = std::move(loaded).value();
  uint32_t count = 0;
  const rsmi_status_t rc = lib->NumMonitorDevices(&count);
  if (rc != kRsmiSuccess) {
    return Status::Unavailable(
        fmt::format("cannot use ROCm SMI: rsmi_num_monitor_devices on {} failed: {}", lib->path(),
                    lib->ErrorText(rc)));
  }
  if (count == 0) {
    return Status::Unavailable(fmt::format(
        "no AMD GPU: ROCm SMI ({}) is loaded, but it reports 0 GPUs on this host (check "
        "`rocm-smi` and that the amdgpu driver is loaded)",
        lib->path()));
  }
  Opened out;
  out.backend = LiveBackendInfo{"ROCm SMI", lib->path(), "", ""};
  for (uint32_t i = 0; i < count; ++i)
    out.readers.push_back(std::make_shared<RocmSmiReader>(lib, i));
  return out;
}

struct Boot {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Result<Opened> opened = Status::Unavailable("not opened");
};

void RunBoot(const std::shared_ptr<Boot>& boot, const AmdSmiSourceOptions& options) {
  Result<Opened> opened = Status::Unavailable("");
  if (options.library == AmdLibrary::kRocmSmi) {
    opened = OpenRocmSmiLib(options.rocm_smi_library_path, /*probe_driver=*/false);
  } else {
    opened = OpenAmdSmiLib(options.library_path);
    if (!opened.ok() && options.library == AmdLibrary::kAmdSmiElseRocmSmi) {
      // ROCm before 6.0, and Debian, ship only ROCm SMI.
      auto rsmi = OpenRocmSmiLib(options.rocm_smi_library_path, /*probe_driver=*/true);
      opened = rsmi.ok()
                   ? std::move(rsmi)
                   : Result<Opened>(Status::Unavailable(fmt::format(
                         "{} ROCm SMI: {}", opened.status().message(), rsmi.status().message())));
    }
  }
  std::lock_guard<std::mutex> lock(boot->mu);
  boot->opened = std::move(opened);
  boot->done = true;
  boot->cv.notify_all();
}

}  // namespace

struct AmdSmiSource::Impl {
  LiveBackendInfo backend;
  Clock* clock = nullptr;
  int64_t deadline_ns = 0;
  std::vector<std::string> hosts;
  std::vector<GpuInfo> infos;
  std::vector<std::string> archs;
  std::vector<SupportArray> support;
  std::vector<std::shared_ptr<GpuReader>> readers;
  std::unique_ptr<DeadlinePool> pool;
  std::vector<DeadlinePool::Outcome> outcomes;
  std::vector<LiveGpuStatus> status;
  std::vector<bool> was_stale;
  std::vector<std::string> warnings;
  SourceHealth health;

  void Warn(std::string w) {
    if (warnings.size() >= 10000) warnings.erase(warnings.begin(), warnings.begin() + 5000);
    warnings.push_back(std::move(w));
  }
  std::string GpuLabel(size_t i) const {
    return infos[i].pci_bus_id.empty() ? fmt::format("GPU {}", i)
                                       : fmt::format("GPU {} ({})", i, infos[i].pci_bus_id);
  }
};

AmdSmiSource::AmdSmiSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<AmdSmiSource>> AmdSmiSource::Open(const AmdSmiSourceOptions& options) {
  auto boot = std::make_shared<Boot>();
  if (!BootWithin(boot, options.init_deadline_ms,
                  [options](const std::shared_ptr<Boot>& b) { RunBoot(b, options); })) {
    return Status::Unavailable(fmt::format(
        "cannot use AMD SMI / ROCm SMI: loading it, its init or the GPU enumeration did not "
        "return within {} ms (a hung driver; check `amd-smi list` and dmesg)",
        std::max<int64_t>(1, options.init_deadline_ms)));
  }
  if (!boot->opened.ok()) return boot->opened.status();

  auto impl = std::make_unique<Impl>();
  impl->backend = boot->opened->backend;
  impl->clock = options.clock != nullptr ? options.clock : SystemClock();
  impl->deadline_ns =
      (options.call_deadline_ms > 0 ? options.call_deadline_ms
                                    : std::clamp<int64_t>(options.sampling_interval_ms, 20, 1000)) *
      1'000'000;
  impl->hosts = {options.hostname.empty() ? LocalHostName() : options.hostname};
  const size_t count = boot->opened->readers.size();
  impl->infos.resize(count);
  impl->archs.resize(count);
  impl->support.assign(count, SupportArray{});
  impl->status.resize(count);
  impl->was_stale.assign(count, false);
  std::vector<std::shared_ptr<DeadlinePool::Job>> jobs;
  for (size_t i = 0; i < count; ++i) {
    impl->infos[i].key = GpuKey{0, static_cast<uint16_t>(i)};
    impl->readers.push_back(boot->opened->readers[i]);
    jobs.push_back(boot->opened->readers[i]);
  }
  impl->pool = std::make_unique<DeadlinePool>(std::move(jobs));
  return std::unique_ptr<AmdSmiSource>(new AmdSmiSource(std::move(impl)));
}

AmdSmiSource::~AmdSmiSource() {
  impl_->pool.reset();  // joins idle threads, detaches stuck ones (they keep their readers)
}

Status AmdSmiSource::Next(std::vector<GpuSample>* out) {
  using Outcome = DeadlinePool::Outcome;
  Impl& I = *impl_;
  const int64_t t0 = SteadyNs();
  const int64_t timestamp_ms = I.clock->NowUnixMs();
  const size_t n = I.infos.size();
  I.pool->RunRound(std::chrono::nanoseconds(I.deadline_ns), &I.outcomes);
  bool any_reading = false;
  for (size_t i = 0; i < n; ++i) {
    LiveGpuStatus& st = I.status[i];
    st = LiveGpuStatus{};
    if (I.outcomes[i] != Outcome::kDone) {
      GpuSample s;
      s.timestamp_ms = timestamp_ms;
      s.key = I.infos[i].key;
      int64_t running_ns = 0;
      const std::string call = I.readers[i]->CallName(&running_ns);
      st.stale = true;
      st.stale_reason =
          I.outcomes[i] == Outcome::kStillBusy
              ? fmt::format("{} still blocked after {} ms", call, running_ns / 1'000'000)
              : fmt::format("{} did not return within {} ms", call, I.deadline_ns / 1'000'000);
      ++I.health.samples_stale;
      if (!I.was_stale[i]) I.Warn(fmt::format("{} is stale: {}", I.GpuLabel(i), st.stale_reason));
      I.was_stale[i] = true;
      out->push_back(s);
      continue;
    }
    if (I.was_stale[i]) I.Warn(fmt::format("{} answers again", I.GpuLabel(i)));
    I.was_stale[i] = false;
    Reading& r = I.readers[i]->result();
    if (r.identity) {
      I.infos[i].name = r.identity->name;
      I.infos[i].uuid = r.identity->serial;
      I.infos[i].pci_bus_id = r.identity->pci_bus_id;
      I.archs[i] = r.identity->architecture;
      r.identity.reset();
    }
    I.support[i] = r.support;
    for (const std::string& e : r.errors) I.Warn(fmt::format("{}: {}", I.GpuLabel(i), e));
    st.read_latency_us = r.latency_ns / 1000;
    GpuSample s = r.sample;
    s.timestamp_ms = timestamp_ms;
    s.key = I.infos[i].key;
    any_reading = true;
    out->push_back(s);
  }
  I.health.last_read_latency_us = (SteadyNs() - t0) / 1000;
  if (any_reading) I.health.last_success_unix_ms = timestamp_ms;
  return Status::Ok();
}

const std::vector<std::string>& AmdSmiSource::hosts() const { return impl_->hosts; }
std::vector<GpuInfo> AmdSmiSource::gpus() const { return impl_->infos; }
std::vector<std::string> AmdSmiSource::warnings() const { return impl_->warnings; }
SourceHealth AmdSmiSource::health() const { return impl_->health; }
const std::vector<LiveGpuStatus>& AmdSmiSource::last_status() const { return impl_->status; }
size_t AmdSmiSource::gpu_count() const { return impl_->infos.size(); }
FieldSupport AmdSmiSource::support(size_t gpu, AmdField field) const {
  if (gpu >= impl_->support.size() || field == AmdField::kCount) return FieldSupport::kUnknown;
  return impl_->support[gpu][static_cast<int>(field)];
}
uint32_t AmdSmiSource::unsupported_sample_fields(size_t gpu) const {
  auto no = [&](AmdField f) { return support(gpu, f) == FieldSupport::kUnsupported; };
  uint32_t mask = kSamplePstate | kSampleClockEventReasons;  // AMD SMI has neither
  if (no(AmdField::kPowerDraw)) mask |= kSamplePower;
  if (no(AmdField::kPowerLimit)) mask |= kSamplePowerLimit;
  if (no(AmdField::kUtilization)) mask |= kSampleUtilGpu | kSampleUtilMem;
  if (no(AmdField::kSmClock)) mask |= kSampleSmClock;
  if (no(AmdField::kMemClock)) mask |= kSampleMemClock;
  if (no(AmdField::kTemperature)) mask |= kSampleTemperature;
  if (no(AmdField::kMemory)) mask |= kSampleMemUsed | kSampleMemTotal;
  return mask;
}
std::vector<std::pair<std::string, FieldSupport>> AmdSmiSource::field_support(size_t gpu) const {
  std::vector<std::pair<std::string, FieldSupport>> out;
  for (int f = 0; f < kAmdFieldCount; ++f) {
    const auto field = static_cast<AmdField>(f);
    out.emplace_back(AmdFieldName(field), support(gpu, field));
  }
  return out;
}
std::string AmdSmiSource::architecture(size_t gpu) const {
  return gpu < impl_->archs.size() ? impl_->archs[gpu] : std::string();
}
LiveBackendInfo AmdSmiSource::backend_info() const { return impl_->backend; }

}  // namespace ww::amdsmi
