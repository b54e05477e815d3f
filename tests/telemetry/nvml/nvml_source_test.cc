// NvmlSource against the fake libnvidia-ml.so.1, reached through the production dlopen path.
#include "telemetry/nvml/nvml_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fake_nvml/fake_nvml_helper.h"

namespace ww::nvml {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ww::testing::FakeNvml;
using ww::testing::FakeTime;

constexpr int64_t kStartUnixMs = 1712297839000;

class NvmlSourceTest : public ::testing::Test {
 protected:
  NvmlSourceTest() : clock_(kStartUnixMs), time_(&fake_, &clock_) {}

  std::unique_ptr<NvmlSource> Open(const std::string& script, int64_t deadline_ms = 300) {
    fake_.Script(script);
    NvmlSourceOptions o;
    o.library_path = FAKE_NVML_LIB;
    o.hostname = "node7";
    o.clock = &clock_;
    o.call_deadline_ms = deadline_ms;
    auto r = NvmlSource::Open(o);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  Status OpenStatus(const std::string& script, const std::string& path = FAKE_NVML_LIB) {
    fake_.Script(script);
    NvmlSourceOptions o;
    o.library_path = path;
    o.clock = &clock_;
    auto r = NvmlSource::Open(o);
    return r.ok() ? Status::Ok() : r.status();
  }

  // One tick at script time t_ms.
  std::vector<GpuSample> At(NvmlSource& src, int64_t t_ms) {
    time_.To(t_ms);
    std::vector<GpuSample> out;
    EXPECT_TRUE(src.Next(&out).ok());
    return out;
  }

  FakeNvml fake_;
  ManualClock clock_;
  FakeTime time_;
};

constexpr const char* kFullScript = R"(
gpus 2
gpu 0 name "NVIDIA H100 80GB HBM3" uuid GPU-0000aaaa arch hopper pci 00000000:18:00.0
gpu 1 name "NVIDIA A100-SXM4-80GB" uuid GPU-1111bbbb arch ampere
set * power_mw 547120
set * power_limit_mw 700000
set * util_gpu 91
set * util_mem 40
set * sm_mhz 1980
set * mem_mhz 2619
set * clock_reasons 0x4
set * temp_c 45
set * mem_used_mib 41285
set * mem_total_mib 81559
set * pstate 2
set * energy_mj 1000000
set * pcie_tx_bytes_per_s 2000000000
set * pcie_rx_bytes_per_s 500000000
set * nvlink_tx_kib_per_s 1000000
set * nvlink_rx_kib_per_s 2000000
set * gpm_sm_util 80
set * gpm_sm_occupancy 50
set * gpm_tensor_util 60
set * gpm_dram_bw_util 30
)";

TEST_F(NvmlSourceTest, ReadsEveryFieldInWattwatchUnits) {
  auto src = Open(kFullScript);
  ASSERT_TRUE(src);
  auto first = At(*src, 2000);
  ASSERT_EQ(first.size(), 2u);
  const GpuSample& s = first[0];
  EXPECT_EQ(s.timestamp_ms, kStartUnixMs + 2000);
  EXPECT_EQ(s.key, (GpuKey{0, 0}));
  EXPECT_DOUBLE_EQ(*s.power_w, 547.12);  // mW -> W
  EXPECT_DOUBLE_EQ(*s.power_instant_w, 547.12);
  EXPECT_DOUBLE_EQ(*s.power_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*s.util_gpu_pct, 91);
  EXPECT_DOUBLE_EQ(*s.util_mem_pct, 40);
  EXPECT_DOUBLE_EQ(*s.sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(*s.mem_clock_mhz, 2619);
  EXPECT_DOUBLE_EQ(*s.temperature_c, 45);
  EXPECT_DOUBLE_EQ(*s.mem_used_mib, 41285);  // bytes -> MiB
  EXPECT_DOUBLE_EQ(*s.mem_total_mib, 81559);
  EXPECT_EQ(*s.pstate, 2);
  EXPECT_EQ(*s.clock_event_reasons, 0x4u);
  EXPECT_EQ(*s.energy_mj, 1000000u + 1094240u);  // 547.12 W for 2 s = 1094.24 J
  // Derived values need two readings.
  EXPECT_FALSE(s.power_mean_w);
  EXPECT_FALSE(s.pcie_tx_bytes_per_s);
  EXPECT_FALSE(s.nvlink_tx_bytes_per_s);
  EXPECT_FALSE(s.sm_activity_ratio);

  auto second = At(*src, 2150);
  const GpuSample& t = second[0];
  EXPECT_NEAR(*t.power_mean_w, 547.12, 1e-9);  // delta mJ / delta ms
  EXPECT_NEAR(*t.pcie_tx_bytes_per_s, 2e9, 1);
  EXPECT_NEAR(*t.pcie_rx_bytes_per_s, 5e8, 1);
  EXPECT_NEAR(*t.nvlink_tx_bytes_per_s, 1e6 * 1024, 1);  // KiB/s -> bytes/s
  EXPECT_NEAR(*t.nvlink_rx_bytes_per_s, 2e6 * 1024, 1);
  EXPECT_NEAR(*t.sm_activity_ratio, 0.80, 1e-9);  // percent -> ratio
  EXPECT_NEAR(*t.sm_occupancy_ratio, 0.50, 1e-9);
  EXPECT_NEAR(*t.tensor_activity_ratio, 0.60, 1e-9);
  EXPECT_NEAR(*t.dram_bw_util_ratio, 0.30, 1e-9);
  // GPM is Hopper-and-newer: the A100 has none of it, and says so.
  EXPECT_FALSE(second[1].sm_activity_ratio);
  EXPECT_EQ(src->support(1, NvmlField::kGpm), Support::kUnsupported);
  EXPECT_EQ(src->support(0, NvmlField::kGpm), Support::kSupported);
  EXPECT_TRUE(second[1].power_mean_w);
  EXPECT_FALSE(src->last_status()[0].stale);
  EXPECT_GE(src->last_status()[0].read_latency_us, 0);
}

TEST_F(NvmlSourceTest, OneSecondAverageInstantAndExactMeanPowerDiffer) {
  auto src = Open("gpus 1\nset 0 power_mw 100000\nat 1000 set 0 power_mw 600000\n");
  ASSERT_TRUE(src);
  At(*src, 1000);
  auto s = At(*src, 1500);
  EXPECT_DOUBLE_EQ(*s[0].power_instant_w, 600.0);
  EXPECT_DOUBLE_EQ(*s[0].power_w, 350.0);        // trailing 1 s: half at 100 W, half at 600 W
  EXPECT_NEAR(*s[0].power_mean_w, 600.0, 1e-9);  // exactly what was drawn since the last read
}

TEST_F(NvmlSourceTest, IdentityHostAndArchitecture) {
  auto src = Open(kFullScript);
  ASSERT_TRUE(src);
  EXPECT_THAT(src->hosts(), ElementsAre("node7"));
  EXPECT_TRUE(src->gpus()[0].name.empty());  // identity is read by each GPU's first job
  At(*src, 100);
  auto gpus = src->gpus();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].uuid, "GPU-0000aaaa");
  EXPECT_EQ(gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(gpus[1].key, (GpuKey{0, 1}));
  EXPECT_EQ(src->architecture(0), "hopper");
  EXPECT_EQ(src->architecture(1), "ampere");
  EXPECT_EQ(src->driver_version(), "550.54.15");
  // Versioned entry points are preferred over their old names.
  EXPECT_EQ(src->lib().BoundSymbol("Init"), "nvmlInit_v2");
  EXPECT_EQ(src->lib().BoundSymbol("DeviceGetCount"), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(src->lib().BoundSymbol("EventSetWait"), "nvmlEventSetWait_v2");
  EXPECT_EQ(src->lib().BoundSymbol("DeviceGetCurrentClocksEventReasons"),
            "nvmlDeviceGetCurrentClocksEventReasons");
}

TEST_F(NvmlSourceTest, UnsupportedFieldsAreAbsentReportedAndNotAskedAgain) {
  auto src = Open(R"(
gpus 2
unsupported 0 power_instant
unsupported 0 temperature
unsupported 0 pcie
unsupported 0 memory
unsupported 0 clock_reasons
unsupported 0 energy
unsupported 0 gpm
unsupported 0 xid
)");
  ASSERT_TRUE(src);
  for (int64_t t : {1000, 1200, 1400}) {
    auto s = At(*src, t);
    EXPECT_FALSE(s[0].power_instant_w);
    EXPECT_FALSE(s[0].temperature_c);
    EXPECT_FALSE(s[0].pcie_tx_bytes_per_s);
    EXPECT_FALSE(s[0].mem_used_mib);
    EXPECT_FALSE(s[0].mem_total_mib);
    EXPECT_FALSE(s[0].clock_event_reasons);
    EXPECT_FALSE(s[0].energy_mj);
    EXPECT_FALSE(s[0].power_mean_w);
    EXPECT_FALSE(s[0].sm_activity_ratio);
    EXPECT_TRUE(s[0].power_w);  // the rest still reads
    EXPECT_TRUE(s[0].util_gpu_pct);
    EXPECT_TRUE(s[1].temperature_c);  // the other GPU supports it
    EXPECT_TRUE(s[1].mem_used_mib);
  }
  EXPECT_EQ(src->support(0, NvmlField::kTemperature), Support::kUnsupported);
  EXPECT_EQ(src->support(0, NvmlField::kPcieTx), Support::kUnsupported);
  EXPECT_EQ(src->support(0, NvmlField::kMemory), Support::kUnsupported);
  EXPECT_EQ(src->support(0, NvmlField::kXid), Support::kUnsupported);
  EXPECT_EQ(src->support(0, NvmlField::kPowerDraw), Support::kSupported);
  EXPECT_EQ(src->support(1, NvmlField::kTemperature), Support::kSupported);
  EXPECT_EQ(src->support(1, NvmlField::kXid), Support::kSupported);
  // Unsupported is learned once: GPU 0 was asked for its temperature on the first tick only.
  EXPECT_EQ(fake_.Calls("nvmlDeviceGetTemperature"), 1u + 3u);
}

TEST_F(NvmlSourceTest, ZeroIsAReadingNotAbsence) {
  auto src = Open("gpus 1\nset 0 util_gpu 0\nset 0 power_mw 0\nset 0 temp_c 0\n");
  ASSERT_TRUE(src);
  auto s = At(*src, 1000);
  ASSERT_TRUE(s[0].util_gpu_pct);
  EXPECT_EQ(*s[0].util_gpu_pct, 0);
  ASSERT_TRUE(s[0].power_w);
  EXPECT_EQ(*s[0].power_w, 0);
  ASSERT_TRUE(s[0].temperature_c);
}

TEST_F(NvmlSourceTest, LostGpuHasNoReadingsAndOthersContinue) {
  auto src = Open("gpus 2\nat 1000 lost 1\n");
  ASSERT_TRUE(src);
  auto before = At(*src, 500);
  EXPECT_TRUE(before[1].power_w);
  EXPECT_FALSE(src->last_status()[1].lost);
  auto after = At(*src, 1500);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_TRUE(src->last_status()[1].lost);
  EXPECT_FALSE(after[1].power_w);
  EXPECT_FALSE(after[1].util_gpu_pct);
  EXPECT_FALSE(after[1].energy_mj);
  EXPECT_TRUE(after[0].power_w);
  EXPECT_FALSE(src->last_status()[0].lost);
  bool warned = false;
  for (const auto& w : src->warnings())
    warned |= w.find("GPU 1") != std::string::npos && w.find("lost") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST_F(NvmlSourceTest, BlockedCallMarksOnlyThatGpuStaleAndRecovers) {
  auto src = Open("gpus 2\nat 1000 block 1 nvmlDeviceGetUtilizationRates 1.5\n", 200);
  ASSERT_TRUE(src);
  At(*src, 500);
  const auto t0 = std::chrono::steady_clock::now();
  auto s = At(*src, 1000);
  const auto waited = std::chrono::steady_clock::now() - t0;
  // Bounded by the deadline, not by the 1.5 s the driver call hangs.
  EXPECT_LT(waited, std::chrono::milliseconds(1200));
  EXPECT_TRUE(src->last_status()[1].stale);
  EXPECT_THAT(src->last_status()[1].stale_reason, HasSubstr("nvmlDeviceGetUtilizationRates"));
  EXPECT_FALSE(s[1].power_w);  // a stale sample carries no readings, not half of them
  EXPECT_TRUE(s[0].power_w);
  EXPECT_FALSE(src->last_status()[0].stale);

  // While the call is stuck, later ticks do not wait for it again.
  const auto t1 = std::chrono::steady_clock::now();
  s = At(*src, 1100);
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::milliseconds(150));
  EXPECT_TRUE(src->last_status()[1].stale);
  EXPECT_THAT(src->last_status()[1].stale_reason, HasSubstr("still blocked"));
  EXPECT_TRUE(s[0].power_w);

  // Once the call returns, the GPU answers again.
  bool recovered = false;
  for (int i = 0; i < 60 && !recovered; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s = At(*src, 1200 + i);
    recovered = !src->last_status()[1].stale;
  }
  EXPECT_TRUE(recovered);
  EXPECT_TRUE(s[1].power_w);
  EXPECT_GE(src->stale_samples(), 2u);
}

TEST_F(NvmlSourceTest, CallBlockedForeverDoesNotStallDestruction) {
  auto src = Open("gpus 2\nat 1000 block 0 nvmlDeviceGetPowerUsage forever\n", 100);
  ASSERT_TRUE(src);
  At(*src, 1000);
  EXPECT_TRUE(src->last_status()[0].stale);
  const auto t0 = std::chrono::steady_clock::now();
  src.reset();  // the stuck worker is detached; exit must not wait for it either
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
}

TEST_F(NvmlSourceTest, HungIdentityCallIsStaleNotAHang) {
  auto src = Open("gpus 2\nat 0 block 1 nvmlDeviceGetName 0.5\n", 100);
  ASSERT_TRUE(src);
  auto s = At(*src, 10);
  EXPECT_TRUE(src->last_status()[1].stale);
  EXPECT_THAT(src->last_status()[1].stale_reason, HasSubstr("nvmlDeviceGetName"));
  EXPECT_EQ(src->gpus()[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(src->gpus()[1].name.empty());  // not known yet
  EXPECT_TRUE(s[0].power_w);
  bool recovered = false;
  for (int i = 0; i < 40 && !recovered; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    At(*src, 20 + i);
    recovered = !src->last_status()[1].stale;
  }
  EXPECT_TRUE(recovered);
  EXPECT_EQ(src->gpus()[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(src->support(1, NvmlField::kXid), Support::kSupported);
}

TEST_F(NvmlSourceTest, XidEventsReachTheirGpuOnce) {
  auto src = Open("gpus 2\nat 300 xid 0 79\nat 400 xid 1 48\nat 450 xid 1 63\n");
  ASSERT_TRUE(src);
  At(*src, 200);
  EXPECT_TRUE(src->last_status()[0].xids.empty());
  At(*src, 500);
  EXPECT_THAT(src->last_status()[0].xids, ElementsAre(79u));
  EXPECT_THAT(src->last_status()[1].xids, ElementsAre(48u, 63u));
  At(*src, 600);
  EXPECT_TRUE(src->last_status()[0].xids.empty());
  EXPECT_TRUE(src->last_status()[1].xids.empty());
}

TEST_F(NvmlSourceTest, EnergyCounterWrapAt64BitsKeepsExactMeanPower) {
  // At t=1000 the counter reads 2^64 - 10000 mJ; 100 ms at 500 W later it has wrapped to 40000.
  auto src = Open("gpus 1\nset 0 power_mw 500000\nset 0 energy_mj 18446744073709041616\n");
  ASSERT_TRUE(src);
  auto a = At(*src, 1000);
  EXPECT_EQ(*a[0].energy_mj, 18446744073709541616u);
  auto b = At(*src, 1100);
  EXPECT_EQ(*b[0].energy_mj, 40000u);
  EXPECT_NEAR(*b[0].power_mean_w, 500.0, 1e-9);
}

TEST_F(NvmlSourceTest, PcieCounterWrapsAtItsValueTypeWidth) {
  // Reported as NVML_VALUE_TYPE_UNSIGNED_INT: wraps at 2^32 between the two reads.
  auto src = Open(
      "gpus 1\ncounter_bits 0 pcie 32\nset 0 pcie_tx_bytes_per_s 3000000000\n"
      "set 0 pcie_tx_bytes 1194967296\n");
  ASSERT_TRUE(src);
  At(*src, 1000);           // 4194967296
  auto b = At(*src, 1100);  // 4494967296 mod 2^32 = 200000000
  ASSERT_TRUE(b[0].pcie_tx_bytes_per_s);
  EXPECT_NEAR(*b[0].pcie_tx_bytes_per_s, 3e9, 1);
}

TEST_F(NvmlSourceTest, EnergyCounterResetIsNotAPowerSpike) {
  auto src =
      Open("gpus 1\nset 0 power_mw 500000\nset 0 energy_mj 900000000\nat 1050 set 0 energy_mj 0\n");
  ASSERT_TRUE(src);
  At(*src, 1000);
  auto b = At(*src, 1100);
  EXPECT_FALSE(b[0].power_mean_w);  // the counter went back: no value, and a warning
  bool warned = false;
  for (const auto& w : src->warnings()) warned |= w.find("energy counter") != std::string::npos;
  EXPECT_TRUE(warned);
  auto c = At(*src, 1200);
  EXPECT_NEAR(*c[0].power_mean_w, 500.0, 1e-9);
}

TEST_F(NvmlSourceTest, GpmNeedsSamplesMoreThan100MsApart) {
  auto src = Open("gpus 1\nset 0 gpm_sm_util 40\nat 1100 set 0 gpm_sm_util 80\n");
  ASSERT_TRUE(src);
  EXPECT_FALSE(At(*src, 1000)[0].sm_activity_ratio);  // first GPM sample
  EXPECT_FALSE(At(*src, 1050)[0].sm_activity_ratio);  // 50 ms: too close
  EXPECT_FALSE(At(*src, 1100)[0].sm_activity_ratio);  // exactly 100 ms: not more than
  auto s = At(*src, 1150);                            // 150 ms after the first sample
  ASSERT_TRUE(s[0].sm_activity_ratio);
  // Mean over [1000, 1150]: 100 ms at 40 %, 50 ms at 80 %.
  EXPECT_NEAR(*s[0].sm_activity_ratio, (0.4 * 100 + 0.8 * 50) / 150, 1e-9);
}

TEST_F(NvmlSourceTest, NoLibraryNamesWhatIsMissingAndHowToPoint) {
  Status st = OpenStatus("gpus 1", "/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_THAT(st.message(), HasSubstr("--nvml-lib PATH"));
  EXPECT_THAT(st.message(), HasSubstr("WATTWATCH_NVML_LIB"));
}

TEST_F(NvmlSourceTest, LibraryWithoutNvmlSymbolsIsRejected) {
  Status st = OpenStatus("gpus 1", "libz.so.1");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("does not export nvmlInit_v2"));
  EXPECT_THAT(st.message(), HasSubstr("--nvml-lib"));
}

TEST_F(NvmlSourceTest, NoDriverSaysSo) {
  Status st = OpenStatus("driver absent\n");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("NVML_ERROR_DRIVER_NOT_LOADED"));
  EXPECT_THAT(st.message(), HasSubstr("kernel driver is not loaded"));
  EXPECT_THAT(st.message(), HasSubstr("WATTWATCH_NVML_LIB"));
}

TEST_F(NvmlSourceTest, NoGpuSaysSo) {
  Status st = OpenStatus("gpus 0\n");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("no GPU"));
  EXPECT_THAT(st.message(), HasSubstr("0 GPUs"));
}

TEST_F(NvmlSourceTest, EnvironmentVariablePointsAtTheLibrary) {
  fake_.Script("gpus 3\n");
  setenv("WATTWATCH_NVML_LIB", FAKE_NVML_LIB, 1);
  NvmlSourceOptions o;
  o.clock = &clock_;
  auto r = NvmlSource::Open(o);
  unsetenv("WATTWATCH_NVML_LIB");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value()->gpu_count(), 3u);
  EXPECT_EQ(r.value()->lib().path(), FAKE_NVML_LIB);
}

// Every stuck call is named by the symbol the table bound, not by a name typed at the call site:
// a versioned symbol (nvmlDeviceGetPciInfo_v3) and a call whose argument matters (SM clock).
TEST_F(NvmlSourceTest, StaleReasonNamesTheVersionedSymbolThatWasBound) {
  auto src = Open("gpus 2\nat 0 block 1 nvmlDeviceGetPciInfo_v3 0.4\n", 100);
  ASSERT_TRUE(src);
  EXPECT_EQ(src->lib().BoundSymbol("DeviceGetPciInfo"), "nvmlDeviceGetPciInfo_v3");
  At(*src, 10);
  ASSERT_TRUE(src->last_status()[1].stale);
  EXPECT_THAT(src->last_status()[1].stale_reason,
              HasSubstr("nvmlDeviceGetPciInfo_v3 did not return within 100 ms"));
  bool recovered = false;
  for (int i = 0; i < 40 && !recovered; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    At(*src, 20 + i);
    recovered = !src->last_status()[1].stale;
  }
  EXPECT_TRUE(recovered);
  EXPECT_EQ(src->gpus()[1].pci_bus_id, "00000000:19:00.0");
}

TEST_F(NvmlSourceTest, StaleReasonNamesTheClockAskedFor) {
  auto src = Open("gpus 1\nat 1000 block 0 nvmlDeviceGetClockInfo 0.3\n", 100);
  ASSERT_TRUE(src);
  At(*src, 500);
  At(*src, 1000);
  ASSERT_TRUE(src->last_status()[0].stale);
  EXPECT_THAT(src->last_status()[0].stale_reason, HasSubstr("nvmlDeviceGetClockInfo(SM)"));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
}

// An older driver exports only the older names: the table binds them, reads go through them, and
// a message about a stuck call names the one bound.
TEST_F(NvmlSourceTest, OlderDriverBindsAndNamesTheFallbackSymbols) {
  FakeNvml legacy(FAKE_NVML_LEGACY_LIB);
  legacy.Script(
      "gpus 1\nset 0 clock_reasons 0x4\nset 0 mem_used_mib 100\nat 300 xid 0 79\n"
      "at 1000 block 0 nvmlDeviceGetCurrentClocksThrottleReasons 0.3\n");
  NvmlSourceOptions o;
  o.library_path = FAKE_NVML_LEGACY_LIB;
  o.clock = &clock_;
  o.call_deadline_ms = 100;
  auto r = NvmlSource::Open(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  NvmlSource& src = *r.value();
  const NvmlLib& lib = src.lib();
  EXPECT_EQ(lib.BoundSymbol("DeviceGetCurrentClocksEventReasons"),
            "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(lib.BoundSymbol("DeviceGetPciInfo"), "nvmlDeviceGetPciInfo_v2");
  EXPECT_EQ(lib.BoundSymbol("EventSetWait"), "nvmlEventSetWait");
  EXPECT_EQ(lib.BoundSymbol("DeviceGetMemoryInfoV2"), "");
  EXPECT_STREQ(lib.Symbol(NvmlEntry::kDeviceGetMemoryInfoV2), "nvmlDeviceGetMemoryInfo_v2");

  std::vector<GpuSample> out;
  legacy.SetTimeMs(200);
  ASSERT_TRUE(src.Next(&out).ok());
  EXPECT_EQ(*out[0].clock_event_reasons, 0x4u);  // through the throttle-reasons name
  EXPECT_DOUBLE_EQ(*out[0].mem_used_mib, 100);   // through nvmlDeviceGetMemoryInfo (v1)
  EXPECT_EQ(src.gpus()[0].pci_bus_id, "00000000:18:00.0");
  legacy.SetTimeMs(500);
  out.clear();
  ASSERT_TRUE(src.Next(&out).ok());
  EXPECT_THAT(src.last_status()[0].xids, ElementsAre(79u));  // through nvmlEventSetWait (v1)

  legacy.SetTimeMs(1000);
  out.clear();
  ASSERT_TRUE(src.Next(&out).ok());
  ASSERT_TRUE(src.last_status()[0].stale);
  EXPECT_THAT(src.last_status()[0].stale_reason,
              HasSubstr("nvmlDeviceGetCurrentClocksThrottleReasons did not return"));
  EXPECT_THAT(src.last_status()[0].stale_reason, Not(HasSubstr("EventReasons")));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
}

TEST_F(NvmlSourceTest, HealthThroughTheTelemetrySourceInterface) {
  auto opened = Open("gpus 2\nat 1000 block 1 nvmlDeviceGetPowerUsage 0.3\nat 2000 lost *\n", 100);
  ASSERT_TRUE(opened);
  const TelemetrySource& src = *opened;
  SourceHealth h = src.health();
  EXPECT_EQ(h.samples_stale, 0u);
  EXPECT_EQ(h.last_read_latency_us, -1);  // nothing read yet
  EXPECT_EQ(h.last_success_unix_ms, 0);

  At(*opened, 500);
  h = src.health();
  EXPECT_EQ(h.samples_stale, 0u);
  EXPECT_GE(h.last_read_latency_us, 0);
  EXPECT_EQ(h.last_success_unix_ms, kStartUnixMs + 500);

  At(*opened, 1000);  // GPU 1 stuck: one stale GPU-sample; GPU 0 still read
  h = src.health();
  EXPECT_EQ(h.samples_stale, 1u);
  EXPECT_GE(h.last_read_latency_us, 100'000 / 2);  // waited for the deadline, about 100 ms
  EXPECT_EQ(h.last_success_unix_ms, kStartUnixMs + 1000);
  EXPECT_EQ(opened->stale_samples(), h.samples_stale);
  EXPECT_EQ(opened->last_tick_latency_us(), h.last_read_latency_us);

  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  At(*opened, 2000);  // every GPU lost: no readings, so no success
  h = src.health();
  EXPECT_EQ(h.last_success_unix_ms, kStartUnixMs + 1000);
  EXPECT_EQ(h.samples_stale, 1u);
}

TEST(EffectiveCallDeadlineTest, ExplicitElseTheIntervalWithinBounds) {
  struct Row {
    int64_t deadline_ms, interval_ms, want_ms;
  };
  for (const Row& r : {Row{250, 100, 250}, Row{0, 100, 100}, Row{0, 10, 20}, Row{0, 5000, 1000},
                       Row{0, 500, 500}}) {
    NvmlSourceOptions o;
    o.call_deadline_ms = r.deadline_ms;
    o.sampling_interval_ms = r.interval_ms;
    EXPECT_EQ(EffectiveCallDeadlineMs(o), r.want_ms) << r.deadline_ms << " " << r.interval_ms;
  }
  EXPECT_EQ(EffectiveCallDeadlineMs(NvmlSourceOptions{}), 500);  // the default source's
}

}  // namespace
}  // namespace ww::nvml
