// The pure arithmetic from NVML's units to a GpuSample, table by table, without any library.
#include "telemetry/nvml/derive.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ww::nvml {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr int64_t kMs = 1'000'000;  // ns

TEST(DeriveTest, UnitConversions) {
  EXPECT_DOUBLE_EQ(*MilliwattsToWatts(547120u), 547.12);
  EXPECT_DOUBLE_EQ(*MilliwattsToWatts(0u), 0.0);  // zero is a reading, not absence
  EXPECT_FALSE(MilliwattsToWatts(std::nullopt));
  EXPECT_DOUBLE_EQ(BytesToMib(41285ull << 20), 41285.0);
  EXPECT_DOUBLE_EQ(BytesToMib(512 * 1024), 0.5);
  EXPECT_DOUBLE_EQ(*PercentToRatio(80.0), 0.8);
  EXPECT_FALSE(PercentToRatio(std::nullopt));
}

TEST(DeriveTest, MeanPowerFromEnergyCounter) {
  struct Row {
    uint64_t prev_mj;
    int64_t prev_ns;
    uint64_t cur_mj;
    int64_t cur_ns;
    std::optional<double> want_w;
    bool want_implausible;
    const char* why;
  };
  const Row rows[] = {
      {1'000'000, 0, 1'050'000, 100 * kMs, 500.0, false, "50 J in 100 ms"},
      {1'000'000, 0, 1'000'000, 100 * kMs, 0.0, false, "an idle board draws 0 W, not absent"},
      {kU64Max - 9'999, 0, 40'000, 100 * kMs, 500.0, false, "wraps at 2^64 like NVML's"},
      {900'000'000, 0, 0, 100 * kMs, std::nullopt, true, "went back: driver reload"},
      {0, 0, 10'000'000, 100 * kMs, std::nullopt, true, "100 kW: no board draws that"},
      {0, 0, 500'000, 100 * kMs, 5000.0, false, "5 kW: the readers' power cap, still plausible"},
      {0, 0, 600'000, 100 * kMs, std::nullopt, true, "6 kW: above the power cap, a reset"},
      {1'000, 5 * kMs, 2'000, 5 * kMs, std::nullopt, false, "no time passed"},
      {1'000, 5 * kMs, 2'000, 4 * kMs, std::nullopt, false, "time went back"},
  };
  for (const Row& r : rows) {
    const MeanPower m = MeanPowerFromEnergy(r.prev_mj, r.prev_ns, r.cur_mj, r.cur_ns);
    ASSERT_EQ(m.watts.has_value(), r.want_w.has_value()) << r.why;
    if (r.want_w) {
      EXPECT_NEAR(*m.watts, *r.want_w, 1e-9) << r.why;
    }
    EXPECT_EQ(m.implausible, r.want_implausible) << r.why;
  }
}

TEST(DeriveTest, CounterRates) {
  struct Row {
    CounterRead prev, cur;
    double unit_bytes;
    std::optional<double> want_bytes_per_s;
    bool want_implausible;
    const char* why;
  };
  const double kMax = kMaxPlausiblePcieBytesPerS;
  const Row rows[] = {
      {{1'000, 64, 1'000'000, 0},
       {201'000, 64, 1'100'000, 999 * kMs},
       1.0,
       2e6,
       false,
       "NVML's timestamps (100 ms) win over our read times"},
      {{1'000, 64, 0, 0},
       {201'000, 64, 0, 200 * kMs},
       1.0,
       1e6,
       false,
       "no timestamps: our read times (200 ms)"},
      {{1'000, 64, 5, 0},
       {201'000, 64, 5, 100 * kMs},
       1.0,
       2e6,
       false,
       "timestamps that did not move: our read times"},
      {{4'194'967'296, 32, 0, 0},
       {200'000'000, 32, 0, 100 * kMs},
       1.0,
       3e9,
       false,
       "wraps at 2^32 for a 32-bit value type"},
      {{kU64Max - 99, 64, 0, 0}, {100, 64, 0, 100 * kMs}, 1.0, 2'000, false, "wraps at 2^64"},
      {{0, 64, 0, 0},
       {1'000'000, 64, 0, 1'000 * kMs},
       1024.0,
       1'024'000'000,
       false,
       "NVLink counts KiB: bytes/s = KiB/s * 1024"},
      {{100, 32, 0, 0},
       {200, 64, 0, 100 * kMs},
       1.0,
       std::nullopt,
       false,
       "the width changed: no rate"},
      {{100, 64, 0, 5 * kMs}, {200, 64, 0, 5 * kMs}, 1.0, std::nullopt, false, "no time passed"},
      {{0, 64, 0, 0},
       {kU64Max / 2, 64, 0, 100 * kMs},
       1.0,
       std::nullopt,
       true,
       "beyond any link: a reset, not traffic"},
  };
  for (const Row& r : rows) {
    const CounterRate rate = RateBetween(r.prev, r.cur, r.unit_bytes, kMax);
    ASSERT_EQ(rate.bytes_per_s.has_value(), r.want_bytes_per_s.has_value()) << r.why;
    if (r.want_bytes_per_s) {
      EXPECT_NEAR(*rate.bytes_per_s, *r.want_bytes_per_s, 1e-3) << r.why;
    }
    EXPECT_EQ(rate.implausible, r.want_implausible) << r.why;
  }
}

TEST(DeriveTest, FieldValuesAsCounters) {
  struct Row {
    nvmlValueType_t type;
    nvmlValue_t value;
    std::optional<CounterValue> want;
    const char* why;
  };
  auto v = [](auto setter) {
    nvmlValue_t x{};
    setter(x);
    return x;
  };
  const Row rows[] = {
      {NVML_VALUE_TYPE_UNSIGNED_INT, v([](auto& x) { x.uiVal = 7; }), CounterValue{7, 32}, "u32"},
      {NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, v([](auto& x) { x.ullVal = kU64Max; }),
       CounterValue{kU64Max, 64}, "u64"},
      {NVML_VALUE_TYPE_UNSIGNED_SHORT, v([](auto& x) { x.usVal = 65535; }), CounterValue{65535, 16},
       "u16"},
      {NVML_VALUE_TYPE_UNSIGNED_LONG, v([](auto& x) { x.ulVal = 9; }),
       CounterValue{9, static_cast<int>(sizeof(long) * 8)}, "unsigned long: the ABI's width"},
      {NVML_VALUE_TYPE_SIGNED_LONG_LONG, v([](auto& x) { x.sllVal = 5; }), CounterValue{5, 63},
       "s64 wraps at 2^63"},
      {NVML_VALUE_TYPE_SIGNED_LONG_LONG, v([](auto& x) { x.sllVal = -1; }), std::nullopt,
       "a negative counter is no counter"},
      {NVML_VALUE_TYPE_SIGNED_INT, v([](auto& x) { x.siVal = -3; }), std::nullopt, "negative s32"},
      {NVML_VALUE_TYPE_DOUBLE, v([](auto& x) { x.dVal = 12.0; }), CounterValue{12, 64}, "double"},
      {NVML_VALUE_TYPE_DOUBLE, v([](auto& x) { x.dVal = std::nan(""); }), std::nullopt, "NaN"},
      {NVML_VALUE_TYPE_DOUBLE, v([](auto& x) { x.dVal = -1.0; }), std::nullopt, "negative"},
      {42, v([](auto& x) { x.ullVal = 1; }), std::nullopt, "a type NVML does not define"},
  };
  for (const Row& r : rows) {
    nvmlFieldValue_t f{};
    f.valueType = r.type;
    f.value = r.value;
    const auto got = FieldCounterValue(f);
    ASSERT_EQ(got.has_value(), r.want.has_value()) << r.why;
    if (r.want) {
      EXPECT_EQ(got->value, r.want->value) << r.why;
      EXPECT_EQ(got->bits, r.want->bits) << r.why;
    }
  }
}

TEST(DeriveTest, GpmPstateAndArchitecture) {
  EXPECT_EQ(GpmPercent(NVML_SUCCESS, 50.0), 50.0);
  EXPECT_EQ(GpmPercent(NVML_SUCCESS, 0.0), 0.0);
  EXPECT_EQ(GpmPercent(NVML_SUCCESS, 100.0), 100.0);
  EXPECT_FALSE(GpmPercent(NVML_SUCCESS, 100.5));
  EXPECT_FALSE(GpmPercent(NVML_SUCCESS, -0.5));
  EXPECT_FALSE(GpmPercent(NVML_SUCCESS, std::nan("")));
  EXPECT_FALSE(GpmPercent(NVML_ERROR_NOT_SUPPORTED, 50.0));
  EXPECT_EQ(PstateNumber(0), 0);
  EXPECT_EQ(PstateNumber(15), 15);
  EXPECT_FALSE(PstateNumber(NVML_PSTATE_UNKNOWN));
  EXPECT_FALSE(PstateNumber(16));
  EXPECT_FALSE(PstateNumber(-1));
  EXPECT_EQ(ArchitectureName(NVML_DEVICE_ARCH_HOPPER), "hopper");
  EXPECT_EQ(ArchitectureName(NVML_DEVICE_ARCH_AMPERE), "ampere");
  EXPECT_EQ(ArchitectureName(2), "kepler");
  EXPECT_EQ(ArchitectureName(NVML_DEVICE_ARCH_UNKNOWN), "");
  EXPECT_EQ(ArchitectureName(42), "arch42");
}

// A GPU's raw readings over ticks, through DeriveSample as NvmlSource uses it.
TEST(DeriveTest, SampleOverTicks) {
  DeriveState state;
  RawReadings raw;
  raw.power_mw = 547'120;
  raw.power_limit_mw = 700'000;
  raw.util_gpu_pct = 91;
  raw.mem_used_bytes = 41285ull << 20;
  raw.pstate = 2;
  raw.clock_event_reasons = 0x4;
  raw.energy_mj = 1'000'000;
  raw.energy_read_ns = 1'000 * kMs;
  raw.pcie_tx_bytes = CounterRead{0, 64, 0, 1'000 * kMs};
  raw.nvlink_rx_kib = CounterRead{0, 64, 0, 1'000 * kMs};
  raw.gpm_sm_pct = 80;

  GpuSample first;
  DeriveNotes notes = DeriveSample(raw, &state, &first);
  EXPECT_DOUBLE_EQ(*first.power_w, 547.12);
  EXPECT_DOUBLE_EQ(*first.power_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*first.util_gpu_pct, 91.0);
  EXPECT_FALSE(first.util_mem_pct);  // not read: absent
  EXPECT_DOUBLE_EQ(*first.mem_used_mib, 41285.0);
  EXPECT_EQ(*first.pstate, 2);
  EXPECT_EQ(*first.clock_event_reasons, 0x4u);
  EXPECT_EQ(*first.energy_mj, 1'000'000u);
  EXPECT_DOUBLE_EQ(*first.sm_activity_ratio, 0.8);
  // Derived from two readings: absent on the first.
  EXPECT_FALSE(first.power_mean_w);
  EXPECT_FALSE(first.pcie_tx_bytes_per_s);
  EXPECT_FALSE(first.nvlink_rx_bytes_per_s);
  EXPECT_FALSE(notes.energy_went_back || notes.counter_jumped);

  // 100 ms later: 50 J, 200 MB over PCIe, 100 MiB over NVLink. No PCIe read this tick.
  raw.energy_mj = 1'050'000;
  raw.energy_read_ns = 1'100 * kMs;
  raw.pcie_tx_bytes.reset();
  raw.nvlink_rx_kib = CounterRead{102'400, 64, 0, 1'100 * kMs};
  GpuSample second;
  notes = DeriveSample(raw, &state, &second);
  EXPECT_NEAR(*second.power_mean_w, 500.0, 1e-9);
  EXPECT_NEAR(*second.nvlink_rx_bytes_per_s, 1048576000.0, 1e-3);
  EXPECT_FALSE(second.pcie_tx_bytes_per_s);  // not read: absent, and the previous read is kept

  // The next PCIe rate spans the gap exactly: 300 MB over the 200 ms since the last read.
  raw.pcie_tx_bytes = CounterRead{300'000'000, 64, 0, 1'200 * kMs};
  raw.energy_mj = 0;  // driver reload
  raw.energy_read_ns = 1'200 * kMs;
  GpuSample third;
  notes = DeriveSample(raw, &state, &third);
  EXPECT_NEAR(*third.pcie_tx_bytes_per_s, 1.5e9, 1e-3);
  EXPECT_FALSE(third.power_mean_w);
  EXPECT_TRUE(notes.energy_went_back);
  EXPECT_EQ(notes.energy_from_mj, 1'050'000u);
  EXPECT_EQ(notes.energy_to_mj, 0u);

  // After the reload the counter counts from its new base.
  raw.energy_mj = 50'000;
  raw.energy_read_ns = 1'300 * kMs;
  raw.pcie_tx_bytes = CounterRead{kU64Max / 2, 64, 0, 1'300 * kMs};  // a reset of its own
  GpuSample fourth;
  notes = DeriveSample(raw, &state, &fourth);
  EXPECT_NEAR(*fourth.power_mean_w, 500.0, 1e-9);
  EXPECT_FALSE(notes.energy_went_back);
  EXPECT_FALSE(fourth.pcie_tx_bytes_per_s);
  EXPECT_TRUE(notes.counter_jumped);
}

}  // namespace
}  // namespace ww::nvml
