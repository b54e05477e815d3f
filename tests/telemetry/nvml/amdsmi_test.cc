// AMD GPUs through the production dlopen path: AmdSmiSource, `devices` and `record` on the fake
// libamd_smi.so (tests/fake_amdsmi), scripted per test; and the end-to-end CLI.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/clock.h"
#include "support/support.h"
#include "telemetry/amdsmi/amdsmi_source.h"
#include "telemetry/nvml/devices_report.h"
#include "telemetry/record/record_loop.h"
#include "telemetry/source_spec.h"

namespace ww::amdsmi {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// Scripts the fake: the same path dlopen'd here is the object AmdSmiLib opens, so both share its
// state. Never dlclosed: a reader blocked in it may outlive the test.
class FakeAmdSmi {
 public:
  FakeAmdSmi() {
    static void* handle = dlopen(FAKE_AMDSMI_LIB, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) throw std::runtime_error(std::string("dlopen fake: ") + dlerror());
    reset_ = reinterpret_cast<void (*)()>(dlsym(handle, "fakeAmdSmiReset"));
    release_ = reinterpret_cast<void (*)()>(dlsym(handle, "fakeAmdSmiRelease"));
    if (reset_ == nullptr || release_ == nullptr) throw std::runtime_error("fake controls missing");
  }
  // Wakes any blocked call, so no reader is left inside the library.
  ~FakeAmdSmi() { release_(); }
  void Script(const std::string& script) {
    reset_();
    setenv("FAKE_AMDSMI_SCRIPT_TEXT", script.c_str(), 1);
  }
  void Release() { release_(); }

 private:
  void (*reset_)() = nullptr;
  void (*release_)() = nullptr;
};

AmdSmiSourceOptions Options(int64_t deadline_ms = 1000) {
  AmdSmiSourceOptions o;
  o.library_path = FAKE_AMDSMI_LIB;
  o.hostname = "amd0";
  o.call_deadline_ms = deadline_ms;
  return o;
}

constexpr const char* kTwoMi300x = R"(
gpus 2
gpu 0 name "AMD Instinct MI300X" bdf 0000:c1:00.0
gpu 1 name "AMD Instinct MI300X" bdf 0000:11:00.0
set * avg_power_w 612
set * cur_power_w 640
set * power_cap_uw 750000000
set * gfx 97
set * umc 41
set * vram_total_mb 196592
set * vram_used_mb 150000
set * hotspot_c 71
set * edge_c 55
set * gfx_mhz 2100
set * mem_mhz 1300
set * energy_ticks 1000000
set * energy_resolution_uj 15.3
unsupported 1 amdsmi_get_gpu_activity
unsupported 1 hotspot
)";

TEST(AmdSmiSourceTest, ReadsEveryFieldInGpuSampleUnits) {
  FakeAmdSmi fake;
  fake.Script(kTwoMi300x);
  auto opened = AmdSmiSource::Open(Options());
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  AmdSmiSource& source = **opened;
  std::vector<GpuSample> samples;
  ASSERT_TRUE(source.Next(&samples).ok());
  ASSERT_EQ(samples.size(), 2u);
  const GpuSample& s = samples[0];
  EXPECT_DOUBLE_EQ(*s.power_w, 612);           // average socket power, W
  EXPECT_DOUBLE_EQ(*s.power_instant_w, 640);   // current socket power, W
  EXPECT_DOUBLE_EQ(*s.power_limit_w, 750);     // power cap, uW -> W
  EXPECT_DOUBLE_EQ(*s.util_gpu_pct, 97);       // gfx_activity
  EXPECT_DOUBLE_EQ(*s.util_mem_pct, 41);       // umc_activity
  EXPECT_DOUBLE_EQ(*s.mem_total_mib, 196592);  // amdsmi "MB" are MiB
  EXPECT_DOUBLE_EQ(*s.mem_used_mib, 150000);
  EXPECT_DOUBLE_EQ(*s.temperature_c, 71);   // hotspot
  EXPECT_DOUBLE_EQ(*s.sm_clock_mhz, 2100);  // gfx clock
  EXPECT_DOUBLE_EQ(*s.mem_clock_mhz, 1300);
  EXPECT_EQ(*s.energy_mj, 15300u);  // 1e6 ticks x 15.3 uJ
  EXPECT_FALSE(s.pstate);
  // GPU 1: activity not supported -> absent, never 0; no hotspot sensor -> edge.
  const GpuSample& t = samples[1];
  EXPECT_FALSE(t.util_gpu_pct);
  EXPECT_FALSE(t.util_mem_pct);
  EXPECT_DOUBLE_EQ(*t.temperature_c, 55);
  EXPECT_EQ(source.support(1, AmdField::kUtilization), FieldSupport::kUnsupported);
  EXPECT_EQ(source.support(0, AmdField::kUtilization), FieldSupport::kSupported);
  EXPECT_NE(source.unsupported_sample_fields(1) & kSampleUtilGpu, 0u);
  const auto infos = source.gpus();
  EXPECT_EQ(infos[0].name, "AMD Instinct MI300X");
  EXPECT_EQ(infos[0].pci_bus_id, "0000:c1:00.0");
  EXPECT_EQ(source.architecture(0), "gfx942");
  EXPECT_EQ(source.backend_info().library_version, "24.7.0.0");
}

TEST(AmdSmiSourceTest, Mi250xSecondGcdHasNoPowerNotZeroWatts) {
  FakeAmdSmi fake;
  fake.Script(
      "gpus 4\ngcds_per_socket 2\nset * avg_power_w 480\nset 1 avg_power_w 0\n"
      "set 3 avg_power_w 65535\n");
  auto opened = AmdSmiSource::Open(Options());
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::vector<GpuSample> samples;
  ASSERT_TRUE((*opened)->Next(&samples).ok());
  ASSERT_EQ(samples.size(), 4u);  // every GCD is a GPU, two per package
  EXPECT_DOUBLE_EQ(*samples[0].power_w, 480);
  EXPECT_FALSE(samples[1].power_w);  // reads 0 W: the package's power is on GCD 0
  EXPECT_DOUBLE_EQ(*samples[2].power_w, 480);
  EXPECT_FALSE(samples[3].power_w);  // reads N/A (0xFFFF)
  EXPECT_EQ((*opened)->support(1, AmdField::kPowerDraw), FieldSupport::kUnsupported);
  EXPECT_TRUE(samples[1].util_gpu_pct);  // the rest of that GCD is read as usual
}

TEST(AmdSmiSourceTest, HungCallIsReportedAndOtherGpusKeepBeingSampled) {
  FakeAmdSmi fake;
  fake.Script("gpus 3\nset * avg_power_w 400\nblock 1 amdsmi_get_power_info\n");
  auto opened = AmdSmiSource::Open(Options(/*deadline_ms=*/50));
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  AmdSmiSource& source = **opened;
  for (int tick = 0; tick < 3; ++tick) {
    std::vector<GpuSample> samples;
    ASSERT_TRUE(source.Next(&samples).ok());
    ASSERT_EQ(samples.size(), 3u);
    EXPECT_DOUBLE_EQ(*samples[0].power_w, 400) << tick;
    EXPECT_DOUBLE_EQ(*samples[2].power_w, 400) << tick;
    EXPECT_FALSE(samples[1].power_w) << tick;
    const LiveGpuStatus& st = source.last_status()[1];
    EXPECT_TRUE(st.stale);
    EXPECT_THAT(st.stale_reason, HasSubstr("amdsmi_get_power_info"));
    EXPECT_THAT(st.stale_reason,
                HasSubstr(tick == 0 ? "did not return within 50 ms" : "still blocked after"));
  }
  EXPECT_EQ(source.health().samples_stale, 3u);
  EXPECT_THAT(source.warnings(), Contains(HasSubstr("GPU 1 is stale: amdsmi_get_power_info")));
  fake.Release();  // the call returns; the GPU answers again within a few ticks
  bool recovered = false;
  for (int tick = 0; tick < 50 && !recovered; ++tick) {
    std::vector<GpuSample> samples;
    ASSERT_TRUE(source.Next(&samples).ok());
    recovered = !source.last_status()[1].stale && samples[1].power_w.has_value();
  }
  EXPECT_TRUE(recovered);
  // What the blocked first run learned (the GPU's identity) arrives with the late reading.
  EXPECT_EQ(source.gpus()[1].pci_bus_id, "0000:11:00.0");
}

TEST(AmdSmiSourceTest, OpenErrorsAreNormalStatesWithClearMessages) {
  FakeAmdSmi fake;
  AmdSmiSourceOptions o = Options();
  o.library_path = "/nonexistent/libamd_smi.so";
  auto none = AmdSmiSource::Open(o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(none.status().message(), HasSubstr("cannot load AMD SMI"));
  EXPECT_THAT(none.status().message(), HasSubstr("--amdsmi-lib"));

  fake.Script("version 25 0\n");
  auto newer = AmdSmiSource::Open(Options());
  ASSERT_FALSE(newer.ok());
  EXPECT_THAT(newer.status().message(), HasSubstr("is version 25.0.0.0"));
  EXPECT_THAT(newer.status().message(), HasSubstr("version 24.7.x only"));

  fake.Script("driver absent\n");
  auto driver = AmdSmiSource::Open(Options());
  ASSERT_FALSE(driver.ok());
  EXPECT_THAT(driver.status().message(), HasSubstr("amdgpu kernel driver is not loaded"));
  EXPECT_THAT(driver.status().message(), HasSubstr("AMDSMI_STATUS_DRIVER_NOT_LOADED"));

  fake.Script("gpus 0\n");
  auto empty = AmdSmiSource::Open(Options());
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("no AMD GPU"));
}

TEST(AmdSmiSourceTest, AutoPicksNvmlElseAmdSmi) {
  FakeAmdSmi fake;
  fake.Script("gpus 2\n");
  nvml::NvmlSourceOptions o;
  o.library_path = "/nonexistent/libnvidia-ml.so.1";
  o.hostname = "amd0";
  auto opened = OpenLiveGpuSource("auto", o, FAKE_AMDSMI_LIB);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_EQ((*opened)->backend_info().backend, "AMD SMI");

  o.library_path = FAKE_NVML_LIB;
  setenv("FAKE_NVML_SCRIPT_TEXT", "gpus 1\n", 1);
  auto nv = OpenLiveGpuSource("auto", o, FAKE_AMDSMI_LIB);
  ASSERT_TRUE(nv.ok()) << nv.status().message();
  EXPECT_EQ((*nv)->backend_info().backend, "NVML");
  unsetenv("FAKE_NVML_SCRIPT_TEXT");

  o.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto neither = OpenLiveGpuSource("auto", o, "/nonexistent/libamd_smi.so");
  ASSERT_FALSE(neither.ok());
  EXPECT_THAT(neither.status().message(), HasSubstr("cannot load NVML"));
  EXPECT_THAT(neither.status().message(), HasSubstr("cannot load AMD SMI"));
}

// The real ROCm SMI (Debian's librocm-smi64-1, scripts/install-deps.sh) through the production
// path, on this GPU-less machine: "no AMD GPU" is a normal state with one clear message.
TEST(RocmSmiTest, RealLibraryWithoutAmdGpuIsAClearNormalState) {
  void* real = dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_LOCAL);
  if (real == nullptr) {
    GTEST_SKIP() << "librocm_smi64.so.1 is not installed (apt package librocm-smi64-1; "
                    "scripts/install-deps.sh installs it)";
  }
  dlclose(real);
  unsetenv("WATTWATCH_ROCM_SMI_LIB");
  AmdSmiSourceOptions o = Options();
  o.library = AmdLibrary::kRocmSmi;
  auto opened = AmdSmiSource::Open(o);
  if (opened.ok()) GTEST_SKIP() << "this machine has an AMD GPU";
  EXPECT_EQ(opened.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(opened.status().message(), HasSubstr("ROCm SMI"));
  EXPECT_THAT(opened.status().message(), HasSubstr("no AMD GPU"));
  EXPECT_EQ(opened.status().message().find('\n'), std::string::npos);

  // --source amdsmi without libamd_smi falls back to ROCm SMI, and says so.
  o.library = AmdLibrary::kAmdSmiElseRocmSmi;
  o.library_path = "/nonexistent/libamd_smi.so";
  auto fallback = AmdSmiSource::Open(o);
  ASSERT_FALSE(fallback.ok());
  EXPECT_THAT(fallback.status().message(), HasSubstr("cannot load AMD SMI"));
  // As a fallback it is not even started without the amdgpu driver: its rsmi_init would print to
  // stderr on every host without an AMD GPU.
  EXPECT_THAT(fallback.status().message(),
              HasSubstr("ROCm SMI: no AMD GPU: the amdgpu driver is not loaded (/sys/class/kfd is "
                        "absent), so ROCm SMI was not started"));
}

TEST(AmdSmiDevicesTest, ListsBoardsWithBusIdLimitAndMemory) {
  FakeAmdSmi fake;
  fake.Script(kTwoMi300x);
  nvml::DevicesOptions o;
  o.source = "amdsmi";
  o.amdsmi_lib = FAKE_AMDSMI_LIB;
  o.nvml.hostname = "amd0";
  auto r = nvml::ReadDevicesReport(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->backend, "AMD SMI");
  EXPECT_EQ(r->nvml_library, FAKE_AMDSMI_LIB);
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_EQ(r->gpus[1].name, "AMD Instinct MI300X");
  EXPECT_EQ(r->gpus[1].pci_bus_id, "0000:11:00.0");
  EXPECT_DOUBLE_EQ(*r->gpus[1].power_limit_w, 750);
  EXPECT_DOUBLE_EQ(*r->gpus[1].mem_total_mib, 196592);
  EXPECT_THAT(r->gpus[1].unsupported, Contains("utilization"));
  EXPECT_THAT(r->gpus[0].supported, Contains("utilization"));
  const std::string text = nvml::RenderDevicesText(*r);
  EXPECT_THAT(text, HasSubstr("driver ?  AMD SMI 24.7.0.0 " FAKE_AMDSMI_LIB "\n"));
  EXPECT_THAT(text, HasSubstr("GPU 1  AMD Instinct MI300X    0000:11:00.0  gfx942  power limit "
                              "750.00 W  memory 196592 MiB\n"));
}

class AmdSmiRecordTest : public ww::testing::TestDirFixture {};

TEST_F(AmdSmiRecordTest, RecordWritesEveryReadingInItsUnitAndUnsupportedAsSuch) {
  FakeAmdSmi fake;
  fake.Script(kTwoMi300x);
  record::RecordOptions o;
  o.source = "amdsmi";
  o.amdsmi_lib = FAKE_AMDSMI_LIB;
  o.nvml.hostname = "amd0";
  o.writer.path = (dir_ / "amd.csv").string();
  o.interval_ms = 10;
  o.duration_s = 0.02;
  auto summary = record::Record(o, *SystemClock(), nullptr, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->gpus, 2u);
  const std::string csv = ww::testing::ReadFile(o.writer.path);
  std::vector<std::string> lines;
  std::istringstream in(csv);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_GE(lines.size(), 3u);
  // power.draw, power.limit, util.gpu, util.mem, clocks.sm, clocks.mem, temperature,
  // memory.used, memory.total, pstate, sw_power_cap
  EXPECT_THAT(lines[1], HasSubstr(", 0, AMD Instinct MI300X, "));
  EXPECT_THAT(lines[1], HasSubstr("612.00 W, 750.00 W, 97 %, 41 %, 2100 MHz, 1300 MHz, 71, "
                                  "150000 MiB, 196592 MiB, [Not Supported], [Not Supported]"));
  EXPECT_THAT(lines[2], HasSubstr("750.00 W, [Not Supported], [Not Supported], 2100 MHz"));
  EXPECT_THAT(lines[2], Not(HasSubstr(" 0 %")));
}

// The real binary: `devices`, `record` and `check` on the fake through WATTWATCH_AMDSMI_LIB,
// with `--source auto` finding no NVML.
TEST_F(AmdSmiRecordTest, CliDevicesAndRecordOnAmd) {
  const fs::path script = dir_ / "script.txt";
  ww::testing::WriteFile(script.string(), kTwoMi300x);
  const std::string env =
      "env -u FAKE_AMDSMI_SCRIPT_TEXT TZ=UTC "
      "WATTWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 "
      "WATTWATCH_AMDSMI_LIB='" FAKE_AMDSMI_LIB
      "' "
      "FAKE_AMDSMI_SCRIPT_TEXT=\"$(cat '" +
      script.string() + "')\" ";
  const fs::path out = dir_ / "out.txt";
  ASSERT_EQ(ww::testing::RunCommand(env + ww::testing::WattwatchBinary() + " devices --json >'" +
                                    out.string() + "' 2>&1"),
            0)
      << ww::testing::ReadFile(out.string());
  const auto j = nlohmann::json::parse(ww::testing::ReadFile(out.string()));
  EXPECT_EQ(j["backend"], "AMD SMI");
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["pci_bus_id"], "0000:c1:00.0");
  EXPECT_EQ(j["gpus"][0]["mem_total_mib"], 196592.0);
  const fs::path csv = dir_ / "node.csv";
  ASSERT_EQ(ww::testing::RunCommand(env + ww::testing::WattwatchBinary() +
                                    " record --source amdsmi --interval-ms 10 --duration-s 0.02 "
                                    "--out '" +
                                    csv.string() + "' >'" + out.string() + "' 2>&1"),
            0)
      << ww::testing::ReadFile(out.string());
  EXPECT_THAT(ww::testing::ReadFile(csv.string()), HasSubstr("612.00 W, 750.00 W, 97 %"));
  // check (as top, watch and run) opens the same source through --source auto.
  ASSERT_EQ(
      ww::testing::RunCommand(env + ww::testing::WattwatchBinary() +
                              " check --seconds 1 --interval-ms 100 >'" + out.string() + "' 2>&1"),
      0)
      << ww::testing::ReadFile(out.string());
  EXPECT_THAT(ww::testing::ReadFile(out.string()), HasSubstr("1 host, 2 GPUs"));
}

}  // namespace
}  // namespace ww::amdsmi
