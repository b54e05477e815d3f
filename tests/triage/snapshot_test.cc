// The one-snapshot verdict (triage/snapshot.h) and the board table it reads
// (telemetry/gpu_models.h): table rows for boards, names as nvidia-smi/DCGM print them, and the
// signatures public hang threads report (../shared/traces/hangs/SOURCES.md).
#include "triage/snapshot.h"

#include <gtest/gtest.h>

#include "telemetry/gpu_models.h"

namespace ww::triage {
namespace {

struct NameCase {
  std::string name;
  std::optional<double> limit_w, mem_mib;
  std::string board;  // "" : no match
};

TEST(BoardTable, NamesAsToolsPrintThem) {
  const std::vector<NameCase> cases = {
      {"NVIDIA H100 80GB HBM3", {}, {}, "NVIDIA H100 80GB HBM3"},
      {"NVIDIA H100 PCIe", {}, {}, "NVIDIA H100 PCIe"},
      {"NVIDIA H100 NVL", {}, {}, "NVIDIA H100 NVL"},
      {"NVIDIA GB200", {}, {}, "NVIDIA GB200"},  // not the B200 its name contains
      {"NVIDIA B200", {}, {}, "NVIDIA B200"},
      {"NVIDIA GB300", {}, {}, "NVIDIA GB300"},
      {"NVIDIA B300 SXM6 AC", {}, {}, "NVIDIA B300 SXM6 AC"},
      {"NVIDIA GB10", {}, {}, "NVIDIA GB10"},
      {"Tesla T4", {}, {}, "Tesla T4"},
      {"NVIDIA L4", {}, {}, "NVIDIA L4"},
      {"NVIDIA L40", {}, {}, "NVIDIA L40"},
      {"NVIDIA L40S", {}, {}, "NVIDIA L40S"},
      {"NVIDIA A10", {}, {}, "NVIDIA A10"},
      {"NVIDIA A10G", {}, {}, "NVIDIA A10G"},
      {"NVIDIA A100-SXM4-40GB", {}, {}, "NVIDIA A100-SXM4-40GB"},
      {"NVIDIA A100-PCIE-40GB", {}, {}, "NVIDIA A100-PCIE-40GB"},
      {"NVIDIA A100 80GB PCIe", {}, {}, "NVIDIA A100 80GB PCIe"},
      {"NVIDIA H20", {}, {}, "NVIDIA H20"},
      {"NVIDIA H200", {}, {}, "NVIDIA H200"},
      {"NVIDIA H200 NVL", {}, {}, "NVIDIA H200 NVL"},
      {"NVIDIA GH200 480GB", {}, {}, "NVIDIA GH200 480GB"},
      {"NVIDIA GeForce RTX 4090", {}, {}, "NVIDIA GeForce RTX 4090"},
      {"NVIDIA RTX A6000", {}, {}, "NVIDIA RTX A6000"},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition",
       {},
       {},
       "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"},
      {"NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
       {},
       {},
       "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"},
      {"Tesla V100-SXM2-16GB", {}, {}, "Tesla V100-SXM2-16GB"},
      {"Tesla V100-PCIE-32GB", {}, {}, "Tesla V100-PCIE-32GB"},
      // nvidia-smi cuts long names in its table: the boards the rest can be, picked by memory.
      {"Tesla V100-SXM2...", {300}, {16130}, "Tesla V100-SXM2-16GB"},
      {"Tesla V100-SXM2...", {300}, {32510}, "Tesla V100-SXM2-32GB"},
      {"NVIDIA A100-SXM...", {400}, {81920}, "NVIDIA A100-SXM4-80GB"},
      {"NVIDIA H100 80G...", {}, {}, "NVIDIA H100 80GB HBM3"},
      // No name: a limit and a memory total only one kind of board has.
      {"", {70}, {15360}, "Tesla T4"},
      {"NVIDIA GeForce ...", {450}, {24564}, "NVIDIA GeForce RTX 4090"},
      {"", {700}, {}, ""},  // a limit alone fits H100, H200, H800 and more
      // AMD Instinct as amd-smi / rocm-smi print it, marketing names and PCI device ids.
      {"AMD Instinct MI300X", {}, {}, "AMD Instinct MI300X"},
      {"AMD Instinct MI300X OAM", {}, {}, "AMD Instinct MI300X"},
      {"0x74a1", {}, {}, "AMD Instinct MI300X"},
      {"AMD Instinct MI300A", {}, {}, "AMD Instinct MI300A"},
      {"0x74a0", {}, {}, "AMD Instinct MI300A"},
      {"AMD Instinct MI250X/MI250", {}, {}, "AMD Instinct MI250X"},
      {"AMD Instinct MI250", {}, {}, "AMD Instinct MI250"},
      {"0x740c", {}, {}, "AMD Instinct MI250X"},
      {"Instinct MI210", {}, {}, "AMD Instinct MI210"},
      {"0x740f", {}, {}, "AMD Instinct MI210"},
      {"AMD Instinct MI325X", {}, {}, "AMD Instinct MI325X"},
      {"0x74a5", {}, {}, "AMD Instinct MI325X"},
      {"AMD Instinct MI355X", {}, {}, "AMD Instinct MI355X"},
      {"", {750}, {196592}, "AMD Instinct MI300X"},
      // Intel Gaudi as hl-smi prints it.
      {"HL-225", {}, {}, "HL-225"},
      {"HL-325L", {}, {}, "HL-325L"},
      {"Intel Gaudi 3", {}, {}, "HL-325L"},
      {"", {900}, {131072}, "HL-325L"},
      // The other vendors' rows leave NVIDIA's limit-and-memory matches as they were: a Gaudi 2
      // is 600 W and 96 GB like an RTX PRO 6000, an MI355X 1400 W and 288 GB like a GB300.
      {"", {600}, {97887}, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"},
      {"", {1400}, {284208}, "NVIDIA GB300"},
      {"", {1000}, {183359}, "NVIDIA B200"},
      {"Acme Accelerator X1", {}, {}, ""},
      {"", {}, {}, ""},
  };
  for (const auto& c : cases) {
    const auto m = MatchBoard(c.name, c.limit_w, c.mem_mib);
    if (c.board.empty()) {
      EXPECT_FALSE(m.has_value()) << c.name << " -> " << (m ? m->model->name : "");
    } else {
      ASSERT_TRUE(m.has_value()) << c.name;
      EXPECT_EQ(m->model->name, c.board) << c.name;
    }
  }
}

TEST(BoardTable, EveryRowIsConsistentAndSourced) {
  for (const GpuModel& m : KnownGpuModels()) {
    SCOPED_TRACE(std::string(m.name));
    EXPECT_GT(m.tdp_w, 2 * m.idle_w);
    EXPECT_LE(m.spin_lo_w, m.spin_hi_w);
    EXPECT_LT(m.spin_hi_w, m.compute_lo_w) << "a wait must sit below work";
    EXPECT_LT(m.compute_lo_w, m.tdp_w);
    EXPECT_GE(m.spin_lo_w, m.idle_w);
    EXPECT_FALSE(m.source.empty());
    EXPECT_EQ(m.spin_derived, m.source.find("spin measured") == std::string_view::npos &&
                                  m.source.find("spin:") == std::string_view::npos)
        << m.source;
    // Each board's own name finds it (no other row's key shadows it).
    const auto self = MatchBoard(m.name);
    ASSERT_TRUE(self.has_value());
    EXPECT_EQ(self->model->name, m.name);
  }
  // The public hang numbers (SOURCES.md) sit inside their boards' bands.
  auto band = [](std::string_view name) { return *LookupGpuModel(name); };
  for (double w : {65.0, 76.0}) {
    EXPECT_LE(w, band("Tesla V100-SXM2-16GB").spin_hi_w);
  }
  for (double w : {40.0, 41.0}) EXPECT_LE(w, band("Tesla T4").spin_hi_w);
  for (double w : {100.0, 150.0, 157.0}) EXPECT_LE(w, band("NVIDIA H100 80GB HBM3").spin_hi_w);
  for (double w : {232.0, 280.0}) EXPECT_LE(w, band("NVIDIA GB200").spin_hi_w);
  EXPECT_LE(15.0, band("NVIDIA GB10").spin_hi_w);
  // ROCm/rccl PR #1600: MI250X ranks waiting at 120-130 W (per package, on its first GCD).
  for (double w : {120.0, 130.0}) {
    EXPECT_LE(w, band("AMD Instinct MI250X").spin_hi_w);
    EXPECT_GE(w, band("AMD Instinct MI250X").spin_lo_w);
  }
  EXPECT_EQ(band("AMD Instinct MI250X").devices_per_power_reading, 2);
  EXPECT_FALSE(band("AMD Instinct MI250X").spin_derived);
  EXPECT_GE(68.2, band("Tesla T4").compute_lo_w) << "the loaded T4 of the ericsson scrape";
  EXPECT_GE(984.0, band("NVIDIA GB200").compute_lo_w);
  EXPECT_LT(MaxMeasuredSpinPowerW(), 400) << "no board was measured waiting at 400 W";
}

SnapshotReading R(uint16_t gpu, std::string name, std::optional<double> power,
                  std::optional<double> limit, std::optional<double> util,
                  std::optional<double> mem) {
  SnapshotReading r;
  r.key = {0, gpu};
  r.name = std::move(name);
  r.power_w = power;
  r.power_limit_w = limit;
  r.util_pct = util;
  r.mem_used_mib = mem;
  return r;
}

struct JudgeCase {
  std::string what;
  std::vector<SnapshotReading> readings;
  HangVerdict verdict;
  std::vector<uint16_t> culprits = {};
  int world_size = 0;
};

TEST(JudgeSnapshot, Table) {
  const std::string t4 = "Tesla T4", v100 = "Tesla V100-SXM2...", h100 = "NVIDIA H100 80GB HBM3";
  const std::vector<JudgeCase> cases = {
      {"T4s stuck at 57 % of the cap (accelerate#233)",
       {R(0, t4, 41, 70, 100, 2566), R(1, t4, 40, 70, 100, 1624), R(2, t4, 41, 70, 100, 1624)},
       HangVerdict::kSuspected},
      {"V100s frozen at 65-76 W (pytorch#22671)",
       {R(0, v100, 76, 300, 100, 11304), R(1, v100, 65, 300, 100, 11312),
        R(2, v100, 66, 300, 100, 11314)},
       HangVerdict::kSuspected},
      {"H100 training: every rank computing",
       {R(0, h100, 560, 700, 97, 60000), R(1, h100, 548, 700, 95, 60000)},
       HangVerdict::kNone},
      {"H100 rank-0 save: the others wait on the quiet rank (partial signature)",
       {R(0, h100, 150, 700, 3, 60000), R(1, h100, 152, 700, 100, 60000),
        R(2, h100, 155, 700, 100, 60000)},
       HangVerdict::kSuspected,
       {0}},
      {"idle node", {R(0, h100, 72, 700, 0, 17), R(1, h100, 71, 700, 0, 17)}, HangVerdict::kNone},
      {"loaded but quiet",
       {R(0, h100, 125, 700, 0, 40000), R(1, h100, 123, 700, 0, 40000)},
       HangVerdict::kNone},
      {"one rank still computing while the others wait: a straggler, not stuck",
       {R(0, h100, 560, 700, 98, 60000), R(1, h100, 150, 700, 100, 60000)},
       HangVerdict::kNone},
      {"a lone pegged GPU with no peer (small kernels look the same)",
       {R(0, h100, 150, 700, 100, 60000), R(1, h100, 70, 700, 0, 10)},
       HangVerdict::kUnknown},
      {"... unless the job is known to have peers",
       {R(0, h100, 150, 700, 100, 60000)},
       HangVerdict::kSuspected,
       {},
       8},
      {"GB200 wedged at 232-280 W (marin#7344)",
       {R(0, "NVIDIA GB200", 232, 1200, 100, 150000), R(1, "NVIDIA GB200", 280, 1200, 100, 150000)},
       HangVerdict::kSuspected},
      {"unknown board at 400 W pegged: work, whatever the board",
       {R(0, "", 400, {}, 100, {}), R(1, "", 398, {}, 100, {})},
       HangVerdict::kNone},
      {"unknown board, no limit, pegged at 150 W: cannot be placed",
       {R(0, "", 150, {}, 100, 60000), R(1, "", 151, {}, 100, 60000)},
       HangVerdict::kUnknown},
      {"unknown board with a limit, at 20 % of it",
       {R(0, "Acme X1", 120, 600, 100, 60000), R(1, "Acme X1", 118, 600, 100, 60000)},
       HangVerdict::kSuspected},
      {"between the bands: a collective moving data or light work",
       {R(0, h100, 300, 700, 100, 60000), R(1, h100, 310, 700, 100, 60000)},
       HangVerdict::kUnknown},
      {"no utilization logged",
       {R(0, h100, 150, 700, {}, 60000), R(1, h100, 150, 700, {}, 60000)},
       HangVerdict::kUnknown},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const SnapshotVerdict v = JudgeSnapshot(c.readings, Thresholds{}, c.world_size);
    std::string reasons;
    for (const auto& r : v.reasons) reasons += r + " | ";
    EXPECT_EQ(HangVerdictName(v.verdict), std::string(HangVerdictName(c.verdict))) << reasons;
    std::vector<uint16_t> culprits;
    for (GpuKey k : v.culprits) culprits.push_back(k.gpu);
    EXPECT_EQ(culprits, c.culprits);
    EXPECT_FALSE(v.reasons.empty());
    ASSERT_EQ(v.gpus.size(), c.readings.size());
  }
}

TEST(JudgeSnapshot, CountersThatSeeWorkOutrankPower) {
  // An MD code pegged at 27 % of an H100's limit: power alone is inside the wait band, but the
  // memory controller and PCIe are busy.
  auto md = [](uint16_t g) {
    SnapshotReading r = R(g, "NVIDIA H100 80GB HBM3", 160, 700, 100, 9000);
    r.util_mem_pct = 6;
    r.pcie_bytes_per_s = 2e9;
    return r;
  };
  EXPECT_EQ(JudgeSnapshot(std::vector{md(0), md(1)}, Thresholds{}).verdict, HangVerdict::kNone);
  // SM activity of a polling kernel says wait even where power is unclear.
  auto poll = [](uint16_t g) {
    SnapshotReading r = R(g, "NVIDIA H100 80GB HBM3", 300, 700, 100, 60000);
    r.sm_activity = 0.02;
    return r;
  };
  EXPECT_EQ(JudgeSnapshot(std::vector{poll(0), poll(1)}, Thresholds{}).verdict,
            HangVerdict::kSuspected);
}

}  // namespace
}  // namespace ww::triage
