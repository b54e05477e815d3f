// The devices report: its renderers on hand-built models (pure), and the model built from the
// fake NVML through the production dlopen path.
#include "telemetry/nvml/devices_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "fake_nvml/fake_nvml_helper.h"

namespace ww::nvml {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

DevicesReport TwoGpus() {
  DevicesReport r;
  r.host = "node7";
  r.driver_version = "550.54.15";
  r.nvml_library = "/lib/libnvidia-ml.so.1";
  DeviceEntry h100;
  h100.index = 0;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.uuid = "GPU-0000aaaa";
  h100.pci_bus_id = "00000000:18:00.0";
  h100.architecture = "hopper";
  h100.power_limit_w = 700.0;
  h100.supported = {"power.draw", "gpm"};
  DeviceEntry stuck;
  stuck.index = 1;
  stuck.unknown = {"power.draw", "gpm"};
  stuck.stale = true;
  stuck.stale_reason = "nvmlDeviceGetName did not return within 100 ms";
  r.gpus = {h100, stuck};
  return r;
}

TEST(DevicesReportTest, TextHasOneHeaderAndTwoToFourLinesPerGpu) {
  DevicesReport r = TwoGpus();
  r.gpus[0].unsupported = {"temperature"};
  EXPECT_EQ(RenderDevicesText(r),
            "host node7  driver 550.54.15  NVML /lib/libnvidia-ml.so.1\n"
            "GPU 0  NVIDIA H100 80GB HBM3  GPU-0000aaaa  00000000:18:00.0  hopper  power limit "
            "700.00 W\n"
            "  supported:   power.draw gpm\n"
            "  unsupported: temperature\n"
            "GPU 1  ?      ?  power limit [N/A]  [stale: nvmlDeviceGetName did not return within "
            "100 ms]\n"
            "  supported:   \n"
            "  unknown:     power.draw gpm\n");
}

TEST(DevicesReportTest, TextMarksALostGpuAndAnUnknownDriver) {
  DevicesReport r = TwoGpus();
  r.driver_version.clear();
  r.gpus[1].stale = false;
  r.gpus[1].lost = true;
  const std::string text = RenderDevicesText(r);
  EXPECT_THAT(text, HasSubstr("driver ?  NVML"));
  EXPECT_THAT(text, HasSubstr("power limit [N/A]  [GPU is lost]\n"));
  EXPECT_THAT(text, Not(HasSubstr("stale")));
}

TEST(DevicesReportTest, JsonHasEveryKeyNullForAbsentAndAReasonOnlyWhenStale) {
  const auto j = nlohmann::json::parse(RenderDevicesJson(TwoGpus()));
  EXPECT_EQ(j["host"], "node7");
  EXPECT_EQ(j["driver_version"], "550.54.15");
  EXPECT_EQ(j["nvml_library"], "/lib/libnvidia-ml.so.1");
  ASSERT_EQ(j["gpus"].size(), 2u);
  const auto& g0 = j["gpus"][0];
  EXPECT_EQ(g0["index"], 0);
  EXPECT_EQ(g0["architecture"], "hopper");
  EXPECT_EQ(g0["power_limit_w"], 700.0);
  EXPECT_EQ(g0["supported"], nlohmann::json({"power.draw", "gpm"}));
  EXPECT_EQ(g0["unsupported"], nlohmann::json::array());
  EXPECT_EQ(g0["stale"], false);
  EXPECT_FALSE(g0.contains("stale_reason"));
  const auto& g1 = j["gpus"][1];
  EXPECT_TRUE(g1["power_limit_w"].is_null());
  EXPECT_EQ(g1["name"], "");
  EXPECT_EQ(g1["stale"], true);
  EXPECT_EQ(g1["stale_reason"], "nvmlDeviceGetName did not return within 100 ms");
  // Keys in the documented order (docs/nvml.md), which `jq` users see.
  const auto ordered = nlohmann::ordered_json::parse(RenderDevicesJson(TwoGpus()));
  std::vector<std::string> keys;
  for (const auto& [k, v] : ordered["gpus"][1].items()) keys.push_back(k);
  EXPECT_THAT(keys, ElementsAre("index", "name", "uuid", "pci_bus_id", "architecture",
                                "power_limit_w", "mem_total_mib", "supported", "unsupported",
                                "unknown", "stale", "lost", "stale_reason"));
}

TEST(DevicesReportTest, ReadFromTheFakeLibrary) {
  ww::testing::FakeNvml fake;
  fake.Script(
      "gpus 2\ngpu 1 name \"NVIDIA A100-SXM4-80GB\" arch ampere\nset * power_limit_mw 650000\n"
      "unsupported 1 temperature\nat 0 block 0 nvmlDeviceGetName 0.3\n");
  DevicesOptions o;
  EXPECT_EQ(o.nvml.call_deadline_ms, 2000);  // the devices command's default, declared once
  o.nvml.library_path = FAKE_NVML_LIB;
  o.nvml.hostname = "node7";
  o.nvml.call_deadline_ms = 100;
  auto r = ReadDevicesReport(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->host, "node7");
  EXPECT_EQ(r->driver_version, "550.54.15");
  EXPECT_EQ(r->nvml_library, FAKE_NVML_LIB);
  ASSERT_EQ(r->gpus.size(), 2u);
  const DeviceEntry& stuck = r->gpus[0];
  EXPECT_TRUE(stuck.stale);
  EXPECT_THAT(stuck.stale_reason, HasSubstr("nvmlDeviceGetName"));
  EXPECT_TRUE(stuck.supported.empty());
  EXPECT_FALSE(stuck.power_limit_w);
  const DeviceEntry& a100 = r->gpus[1];
  EXPECT_EQ(a100.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(a100.architecture, "ampere");
  EXPECT_DOUBLE_EQ(*a100.power_limit_w, 650.0);
  EXPECT_THAT(a100.supported, Contains("power.draw"));
  EXPECT_THAT(a100.unsupported, Contains("temperature"));
  EXPECT_THAT(a100.unsupported, Contains("gpm"));               // Ampere: no GPM
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // let the blocked call return
}

TEST(DevicesReportTest, NoLibraryIsTheOpenError) {
  DevicesOptions o;
  o.source = "nvml";
  o.nvml.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto r = ReadDevicesReport(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("cannot load NVML"));
}

}  // namespace
}  // namespace ww::nvml
