// End to end: the real `wattwatch devices` and `wattwatch record` binary against the fake
// libnvidia-ml.so.1 (WATTWATCH_NVML_LIB), and without any NVML at all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/support.h"
#include "telemetry/record/record_writer.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ww::testing::ReadFile;

struct CmdResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class CliTest : public ww::testing::TestDirFixture {
 protected:
  // Runs wattwatch with the fake library and `script` (if non-empty) in its environment; stdout
  // and stderr apart, since the tests tell the report from the diagnostics.
  CmdResult Wattwatch(const std::string& args, const std::string& script,
                      const std::string& lib = FAKE_NVML_LIB) {
    std::string env = "env -u FAKE_NVML_SCRIPT_TEXT TZ=UTC WATTWATCH_NVML_LIB='" + lib + "' ";
    if (!script.empty()) {
      const fs::path sp = dir_ / "script.txt";
      ww::testing::WriteFile(sp.string(), script);
      env += "FAKE_NVML_SCRIPT='" + sp.string() + "' ";
    }
    const fs::path out = dir_ / "stdout.txt";
    const fs::path err = dir_ / "stderr.txt";
    CmdResult r;
    r.exit_code = ww::testing::RunCommand(env + ww::testing::WattwatchBinary() + " " + args +
                                          " >'" + out.string() + "' 2>'" + err.string() + "'");
    r.out = ReadFile(out.string());
    r.err = ReadFile(err.string());
    return r;
  }
};

constexpr const char* kTwoGpus = R"(
gpus 2
gpu 0 name "NVIDIA H100 80GB HBM3" uuid GPU-0000aaaa arch hopper
gpu 1 name "NVIDIA A100-SXM4-80GB" uuid GPU-1111bbbb arch ampere
set * power_mw 547120
set * power_limit_mw 700000
set * util_gpu 91
unsupported 1 temperature
)";

TEST_F(CliTest, DevicesJsonListsModelsLimitsAndSupport) {
  CmdResult r = Wattwatch("devices --json", kTwoGpus);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["gpus"][0]["uuid"], "GPU-0000aaaa");
  EXPECT_EQ(j["gpus"][0]["architecture"], "hopper");
  EXPECT_EQ(j["gpus"][0]["power_limit_w"], 700.0);
  auto has = [](const nlohmann::json& list, const std::string& f) {
    for (const auto& x : list) {
      if (x == f) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(j["gpus"][0]["supported"], "gpm"));
  EXPECT_TRUE(has(j["gpus"][0]["supported"], "power.instant"));
  EXPECT_TRUE(has(j["gpus"][0]["supported"], "xid"));
  EXPECT_TRUE(has(j["gpus"][1]["unsupported"], "gpm"));
  EXPECT_TRUE(has(j["gpus"][1]["unsupported"], "temperature"));
  EXPECT_TRUE(has(j["gpus"][0]["supported"], "temperature"));
}

TEST_F(CliTest, DevicesTextNamesEachGpu) {
  CmdResult r = Wattwatch("devices", kTwoGpus);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("GPU 0  NVIDIA H100 80GB HBM3  GPU-0000aaaa"));
  EXPECT_THAT(r.out, HasSubstr("power limit 700.00 W"));
  EXPECT_THAT(r.out, HasSubstr("unsupported: temperature gpm"));
}

TEST_F(CliTest, NoNvmlIsOneClearMessageAndExit2) {
  for (const char* cmd : {"devices", "record --out x.csv --duration-s 1"}) {
    CmdResult r = Wattwatch(cmd, "", "/nonexistent/libnvidia-ml.so.1");
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_THAT(r.err, HasSubstr("cannot load NVML")) << cmd;
    EXPECT_THAT(r.err, HasSubstr("--nvml-lib PATH")) << cmd;
    EXPECT_THAT(r.err, HasSubstr("WATTWATCH_NVML_LIB")) << cmd;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  CmdResult nodrv = Wattwatch("devices", "driver absent\n");
  EXPECT_EQ(nodrv.exit_code, 2);
  EXPECT_THAT(nodrv.err, HasSubstr("Driver Not Loaded"));
  CmdResult nogpu = Wattwatch("devices", "gpus 0\n");
  EXPECT_EQ(nogpu.exit_code, 2);
  EXPECT_THAT(nogpu.err, HasSubstr("no GPU"));
}

TEST_F(CliTest, RecordWritesNvidiaSmiCsvEveryTick) {
  const fs::path out = dir_ / "node0.csv";
  CmdResult r =
      Wattwatch("record --interval-ms 100 --duration-s 1 --out " + out.string(), kTwoGpus);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::stringstream ss(ReadFile(out.string()));
  std::string line;
  std::getline(ss, line);
  EXPECT_EQ(line + "\n", ww::record::NvsmiCsvHeader());
  int rows[2] = {0, 0};
  while (std::getline(ss, line)) {
    if (line.find(", 0, NVIDIA H100 80GB HBM3, GPU-0000aaaa, 547.12 W, 700.00 W, 91 %") !=
        std::string::npos) {
      ++rows[0];
    }
    if (line.find(", 1, NVIDIA A100-SXM4-80GB, GPU-1111bbbb, 547.12 W") != std::string::npos) {
      EXPECT_THAT(line, HasSubstr("[Not Supported]"));  // its temperature
      ++rows[1];
    }
  }
  // 1 s at 100 ms: 10 ticks (a loaded CI machine may slip one).
  EXPECT_GE(rows[0], 9);
  EXPECT_LE(rows[0], 11);
  EXPECT_EQ(rows[0], rows[1]);
}

TEST_F(CliTest, RecordJsonlHasEveryFieldAndReportsAHungGpu) {
  const fs::path out = dir_ / "node0.jsonl";
  CmdResult r = Wattwatch(
      "record --format jsonl --interval-ms 100 --duration-s 1 --deadline-ms 50 "
      "--hostname node0 --out " +
          out.string(),
      std::string(kTwoGpus) +
          "at 300 block 1 nvmlDeviceGetPowerUsage 0.4\n"
          "at 200 xid 0 79\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("GPU 1 (GPU-1111bbbb) is stale: nvmlDeviceGetPowerUsage"));
  EXPECT_THAT(r.err, HasSubstr("Xid 79"));
  std::stringstream ss(ReadFile(out.string()));
  std::string line;
  int stale = 0, fresh = 0, xid = 0, mean = 0;
  while (std::getline(ss, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["host"], "node0");
    EXPECT_TRUE(j.contains("power_instant_w"));
    if (j["stale"] == true) {
      ++stale;
      EXPECT_EQ(j["index"], 1);
      EXPECT_TRUE(j["power_w"].is_null());
    } else {
      ++fresh;
      EXPECT_EQ(j["power_w"], 547.12);
    }
    if (!j["power_mean_w"].is_null()) {
      ++mean;
      // Real time here: the fake counts whole milliseconds, so +-1 ms in 100 ms.
      EXPECT_NEAR(j["power_mean_w"].get<double>(), 547.12, 25.0);
    }
    if (!j["xids"].empty()) {
      ++xid;
      EXPECT_EQ(j["xids"][0], 79);
    }
  }
  EXPECT_GE(stale, 2);  // 400 ms hung at 100 ms ticks
  EXPECT_GE(fresh, 14);
  EXPECT_EQ(xid, 1);
  EXPECT_GE(mean, 12);
}

TEST_F(CliTest, RecordRejectsBadMaxSize) {
  CmdResult r =
      Wattwatch("record --out " + (dir_ / "x.csv").string() + " --max-size 12Q", kTwoGpus);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--max-size \"12Q\""));
}

}  // namespace
