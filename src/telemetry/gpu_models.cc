#include "telemetry/gpu_models.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>

namespace ww {
namespace {

// Rules for the numbers no public source gives (marked derived in `source`):
//   context_w    = idle + 7.5 % of (TDP - idle): a context holds P0 clocks (measured: an H100
//                  reads 122-125 W with a context against 70-75 W without, the real traces).
//   spin band    = idle .. idle + 20 % of (TDP - idle): measured waits sit at 14-20 % of the
//                  limit on H100 (100-157 W of 700), 22-26 % on V100 SXM2 (65-76 W of 300) and
//                  ~20 % on GB200 (232-280 W of 1200); the T4 (57 %) is the exception, measured.
//                  A derived band stays low on purpose: a wait missed is a note, a false hang
//                  kills a healthy job under `wattwatch run`.
//   compute_lo_w = idle + 45 % of (TDP - idle): an FP32 GEMM without tensor cores or a
//                  memory-bound kernel draws about half the limit; tensor-core GEMMs near it.
constexpr double kContextShare = 0.075;
constexpr double kSpinHiShare = 0.20;
constexpr double kComputeLoShare = 0.45;

using Keys = std::span<const std::string_view>;

struct Row {
  std::string_view name, match;
  double tdp_w, idle_w, max_sm, idle_sm, mem_clock, mem_mib;
  std::string_view source;
  Keys keys = {};
  GpuVendor vendor = GpuVendor::kNvidia;
  int devices_per_power_reading = 1;
};

GpuModel Derived(const Row& r) {
  const double range = r.tdp_w - r.idle_w;
  GpuModel m{r.name,
             r.match,
             r.tdp_w,
             r.idle_w,
             r.max_sm,
             r.idle_sm,
             r.mem_clock,
             r.mem_mib,
             /*context_w=*/r.idle_w + kContextShare * range,
             /*spin_lo_w=*/r.idle_w,
             /*spin_hi_w=*/r.idle_w + kSpinHiShare * range,
             /*compute_lo_w=*/r.idle_w + kComputeLoShare * range,
             /*spin_typical_w=*/0,
             r.source,
             /*spin_derived=*/true,
             r.keys,
             r.vendor,
             r.devices_per_power_reading};
  return m;
}

// A board with a measured spin: the band and a typical reading from public numbers.
// derived: the band is another board's measurement carried over (same silicon and power).
GpuModel Measured(const Row& r, double spin_lo_w, double spin_hi_w, double typical_w,
                  double compute_lo_w = 0, bool derived = false) {
  GpuModel m = Derived(r);
  m.spin_lo_w = spin_lo_w;
  m.spin_hi_w = spin_hi_w;
  m.spin_typical_w = typical_w;
  if (compute_lo_w > 0) m.compute_lo_w = compute_lo_w;
  m.spin_derived = derived;
  return m;
}

// Name keys beyond each row's `match` (normalized, see Normalize).
constexpr std::array<std::string_view, 2> kV100Sxm2_16{"v100-sxm2-16gb", "v100-sxm2"};
constexpr std::array<std::string_view, 1> kV100Sxm2_32{"v100-sxm2-32gb"};
constexpr std::array<std::string_view, 2> kV100Pcie16{"v100-pcie-16gb", "v100-pcie"};
constexpr std::array<std::string_view, 1> kV100Pcie32{"v100-pcie-32gb"};
constexpr std::array<std::string_view, 1> kV100S{"v100s-pcie-32gb"};
constexpr std::array<std::string_view, 2> kV100Sxm3{"v100-sxm3-32gb", "v100-sxm3"};
constexpr std::array<std::string_view, 1> kA100Pcie40{"a100-pcie-40gb"};
constexpr std::array<std::string_view, 3> kA100Pcie80{"a100 80gb pcie", "a100-pcie-80gb",
                                                      "a100 pcie"};
constexpr std::array<std::string_view, 2> kA100Sxm40{"a100-sxm4-40gb", "a100-sxm"};
constexpr std::array<std::string_view, 1> kA100Sxm80{"a100-sxm4-80gb"};
constexpr std::array<std::string_view, 2> kA800Sxm{"a800-sxm4-80gb", "a800-sxm"};
constexpr std::array<std::string_view, 2> kA800Pcie{"a800 80gb pcie", "a800 pcie"};
constexpr std::array<std::string_view, 1> kA4000{"rtx a4000"};
constexpr std::array<std::string_view, 1> kA5000{"rtx a5000"};
constexpr std::array<std::string_view, 1> kA6000{"rtx a6000"};
constexpr std::array<std::string_view, 1> k3090{"rtx 3090"};
constexpr std::array<std::string_view, 1> k4090{"rtx 4090"};
constexpr std::array<std::string_view, 1> k5090{"rtx 5090"};
constexpr std::array<std::string_view, 3> kPro6000{"rtx pro 6000 blackwell",
                                                   "rtx pro 6000 blackwell server edition",
                                                   "rtx pro 6000 blackwell workstation edition"};
constexpr std::array<std::string_view, 2> kPro6000MaxQ{
    "rtx pro 6000 blackwell max-q workstation edition", "rtx pro 6000 blackwell max-q"};
constexpr std::array<std::string_view, 1> kH100Pcie{"h100 pcie"};
constexpr std::array<std::string_view, 4> kH100Sxm{"h100 80gb hbm3", "h100 sxm", "h100 sxm5",
                                                   "h100-sxm5-80gb"};
constexpr std::array<std::string_view, 1> kH100Nvl{"h100 nvl"};
constexpr std::array<std::string_view, 1> kH800Pcie{"h800 pcie"};
constexpr std::array<std::string_view, 1> kH200Nvl{"h200 nvl"};
constexpr std::array<std::string_view, 2> kGh200{"gh200 480gb", "gh200 144g hbm3e"};
constexpr std::array<std::string_view, 1> kB300{"b300 sxm6 ac"};
// AMD: the PCI device ids amd-smi prints when it has no market name (pci.ids: 740f MI210,
// 740c MI250X/MI250, 74a0 MI300A, 74a1 MI300X, 74a5 MI325X).
constexpr std::array<std::string_view, 1> kMi210{"0x740f"};
constexpr std::array<std::string_view, 1> kMi250x{"0x740c"};
constexpr std::array<std::string_view, 1> kMi300a{"0x74a0"};
constexpr std::array<std::string_view, 1> kMi300x{"0x74a1"};
constexpr std::array<std::string_view, 1> kMi325x{"0x74a5"};
// Intel Gaudi: hl-smi's name is the module's part number.
constexpr std::array<std::string_view, 2> kGaudi2{"hl-225", "gaudi 2"};
constexpr std::array<std::string_view, 2> kGaudi3{"hl-325l", "gaudi 3"};
constexpr auto kAmd = GpuVendor::kAmd;
constexpr auto kIntel = GpuVendor::kIntel;

std::vector<GpuModel> BuildTable() {
  // Limits and memory: NVIDIA's data sheets (the default power limit nvidia-smi shows; memory
  // as nvidia-smi's memory.total). Idle: typical no-process readings; measured where noted.
  // The first six rows are the ones the simulator's scenarios were tuned on: keep their numbers.
  std::vector<GpuModel> t = {
      Derived({"NVIDIA B300 SXM6 AC", "b300", 1100, 140, 2032, 345, 3996, 275040,
               "data sheet (HGX B300: 1100 W); spin derived", kB300}),
      Derived({"NVIDIA B200", "b200", 1000, 130, 1965, 345, 3996, 183359,
               "data sheet (HGX B200: 1000 W, 180 GB); spin derived"}),
      Measured({"NVIDIA H200", "h200", 700, 75, 1980, 345, 3201, 143771,
                "data sheet (H200 SXM: 700 W, 141 GB); spin as the H100's (same board power)"},
               75, 170, 140, 450, true),
      // ranks 1-7 of the real 8xH100 traces wait at 150-157 W while rank 0 saves; NeMo#9291 hung
      // at ~100 W (healthy 500-690 W); nccl#968 ~70 W on an A100/H100-class job.
      Measured({"NVIDIA H100 80GB HBM3", "h100", 700, 70, 1980, 345, 2619, 81559,
                "data sheet (H100 SXM5: 700 W, 80 GB); spin measured: real 8xH100 traces "
                "150-157 W, NVIDIA-NeMo/Speech#9291 ~100 W, NVIDIA/nccl#968 ~70 W",
                kH100Sxm},
               70, 170, 140, 450),
      // nccl#968: ~70 W on an A100/H100-class job; the upper edge is the simulator's assumption
      // (35 % of the limit), not a measurement.
      Measured({"NVIDIA A100-SXM4-80GB", "a100", 400, 55, 1410, 210, 1593, 81920,
                "data sheet (A100 SXM4: 400 W, 80 GB); spin: NVIDIA/nccl#968 ~70 W, upper edge "
                "derived (35 % of the limit)",
                kA100Sxm80},
               55, 150, 140),
      Derived({"NVIDIA L40S", "l40s", 350, 35, 2520, 210, 9001, 46068,
               "data sheet (L40S: 350 W, 48 GB); spin derived"}),

      // Volta. pytorch/pytorch#22671: a hung V100-SXM2-16GB job at 65-76 W of 300 W and 100 %;
      // Theano/libgpuarray#387: a hung DGX-1 V100 job at idle power.
      Measured({"Tesla V100-SXM2-16GB", "v100", 300, 40, 1530, 135, 877, 16160,
                "data sheet (V100 SXM2: 300 W); spin measured: pytorch/pytorch#22671 65-76 W, "
                "Theano/libgpuarray#387 idle power",
                kV100Sxm2_16},
               40, 90, 70, 150),
      Measured({"Tesla V100-SXM2-32GB", "v100-sxm2-32gb", 300, 40, 1530, 135, 877, 32510,
                "data sheet (V100 SXM2 32 GB: 300 W); spin as the 16 GB board's", kV100Sxm2_32},
               40, 90, 70, 150, true),
      Derived({"Tesla V100-PCIE-16GB", "v100-pcie-16gb", 250, 25, 1380, 135, 877, 16160,
               "data sheet (V100 PCIe: 250 W); spin derived", kV100Pcie16}),
      Derived({"Tesla V100-PCIE-32GB", "v100-pcie-32gb", 250, 25, 1380, 135, 877, 32510,
               "data sheet (V100 PCIe 32 GB: 250 W); spin derived", kV100Pcie32}),
      Derived({"Tesla V100S-PCIE-32GB", "v100s", 250, 25, 1597, 135, 1107, 32510,
               "data sheet (V100S PCIe: 250 W); spin derived", kV100S}),
      Derived({"Tesla V100-SXM3-32GB", "v100-sxm3", 350, 50, 1597, 135, 958, 32510,
               "data sheet (V100 SXM3, DGX-2: 350 W); spin derived", kV100Sxm3}),
      // Turing. huggingface/accelerate#233: T4s stuck at 40-41 W of 70 W (57 %) and 100 %; a T4
      // under load runs at its cap (cncf ericsson-ccd scrape: 68.2 W at 91 %).
      Measured({"Tesla T4", "t4", 70, 10, 1590, 300, 5001, 15360,
                "data sheet (T4: 70 W, 16 GB); spin measured: huggingface/accelerate#233 "
                "40-41 W; compute: cncf ericsson-ccd dcgm-exporter scrape 68.2 W at 91 %"},
               10, 48, 40.5, 55),
      // Ampere.
      Derived({"NVIDIA A10", "a10", 150, 15, 1695, 210, 6251, 23028,
               "data sheet (A10: 150 W, 24 GB); spin derived"}),
      Derived({"NVIDIA A10G", "a10g", 300, 25, 1710, 210, 6251, 23028,
               "data sheet (A10G, AWS G5: 300 W limit, 24 GB); spin derived"}),
      Derived({"NVIDIA A30", "a30", 165, 30, 1440, 210, 1215, 24576,
               "data sheet (A30: 165 W, 24 GB); spin derived"}),
      Derived({"NVIDIA A40", "a40", 300, 30, 1740, 210, 7251, 46068,
               "data sheet (A40: 300 W, 48 GB); spin derived"}),
      Derived({"NVIDIA A100-PCIE-40GB", "a100-pcie-40gb", 250, 35, 1410, 210, 1215, 40960,
               "data sheet (A100 PCIe 40 GB: 250 W); spin derived", kA100Pcie40}),
      Derived({"NVIDIA A100 80GB PCIe", "a100-pcie-80gb", 300, 45, 1410, 210, 1512, 81920,
               "data sheet (A100 PCIe 80 GB: 300 W); spin derived", kA100Pcie80}),
      Measured({"NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb", 400, 55, 1410, 210, 1215, 40960,
                "data sheet (A100 SXM4 40 GB: 400 W); spin as the 80 GB board's", kA100Sxm40},
               55, 150, 140, 0, true),
      Measured({"NVIDIA A800-SXM4-80GB", "a800", 400, 55, 1410, 210, 1593, 81920,
                "data sheet (A800 SXM4: 400 W); spin as the A100 SXM4's", kA800Sxm},
               55, 150, 140, 0, true),
      Derived({"NVIDIA A800 80GB PCIe", "a800-pcie", 300, 45, 1410, 210, 1512, 81920,
               "data sheet (A800 PCIe: 300 W); spin derived", kA800Pcie}),
      Derived({"NVIDIA RTX A4000", "rtx-a4000", 140, 10, 1560, 210, 7001, 16376,
               "data sheet (RTX A4000: 140 W, 16 GB); spin derived", kA4000}),
      Derived({"NVIDIA RTX A5000", "rtx-a5000", 230, 15, 1695, 210, 8001, 24564,
               "data sheet (RTX A5000: 230 W, 24 GB); spin derived", kA5000}),
      Derived({"NVIDIA RTX A6000", "rtx-a6000", 300, 20, 1800, 210, 8001, 49140,
               "data sheet (RTX A6000: 300 W, 48 GB); spin derived", kA6000}),
      Derived({"NVIDIA GeForce RTX 3090", "rtx-3090", 350, 20, 2100, 210, 9751, 24576,
               "data sheet (RTX 3090: 350 W, 24 GB); spin derived", k3090}),
      // Ada.
      Derived({"NVIDIA GeForce RTX 4090", "rtx-4090", 450, 20, 2520, 210, 10501, 24564,
               "data sheet (RTX 4090: 450 W, 24 GB); spin derived", k4090}),
      // cncf kops conformance scrape: two idle L4s at 16.4 W.
      Derived({"NVIDIA L4", "l4", 72, 16, 2040, 210, 6251, 23034,
               "data sheet (L4: 72 W, 24 GB); idle measured (cncf kops scrape 16.4 W); spin "
               "derived"}),
      Derived({"NVIDIA L40", "l40", 300, 30, 2490, 210, 9001, 46068,
               "data sheet (L40: 300 W, 48 GB); spin derived"}),
      // Hopper.
      Derived({"NVIDIA H100 PCIe", "h100-pcie", 350, 45, 1755, 345, 1593, 81559,
               "data sheet (H100 PCIe: 350 W, 80 GB); spin derived", kH100Pcie}),
      Derived({"NVIDIA H100 NVL", "h100-nvl", 400, 60, 1785, 345, 2619, 95830,
               "data sheet (H100 NVL: 400 W, 94 GB); spin derived", kH100Nvl}),
      Measured({"NVIDIA H800", "h800", 700, 70, 1980, 345, 2619, 81559,
                "data sheet (H800 SXM: 700 W, 80 GB); spin as the H100 SXM's"},
               70, 170, 140, 450, true),
      Derived({"NVIDIA H800 PCIe", "h800-pcie", 350, 45, 1755, 345, 1593, 81559,
               "data sheet (H800 PCIe: 350 W); spin derived", kH800Pcie}),
      Derived({"NVIDIA H20", "h20", 400, 60, 1980, 345, 2619, 97871,
               "data sheet (H20: 400 W, 96 GB); spin derived"}),
      Derived({"NVIDIA H200 NVL", "h200-nvl", 600, 70, 1785, 345, 3201, 143771,
               "data sheet (H200 NVL: 600 W, 141 GB); spin derived", kH200Nvl}),
      Derived({"NVIDIA GH200 480GB", "gh200", 900, 90, 1980, 345, 2619, 97871,
               "data sheet (GH200 superchip: 450-1000 W configurable, 900 W default module "
               "limit assumed; 96 GB HBM3); spin derived",
               kGh200}),
      // Blackwell. marin-community/marin#7344: 512 GB200s wedged in NCCL at 232-280 W per GPU
      // and 100 %, SM clock unchanged at 1950 MHz; healthy 984 W at 98.5 %.
      Measured({"NVIDIA GB200", "gb200", 1200, 150, 2062, 345, 3996, 189471,
                "data sheet (GB200 NVL72: up to 1200 W per GPU, 186 GB); spin measured: "
                "marin-community/marin#7344 232-280 W; idle derived"},
               150, 300, 256, 600),
      Derived({"NVIDIA GB300", "gb300", 1400, 160, 2062, 345, 3996, 284208,
               "data sheet (GB300 NVL72: up to 1400 W per GPU, 288 GB); spin derived"}),
      Derived({"NVIDIA GeForce RTX 5090", "rtx-5090", 575, 25, 2407, 210, 14001, 32607,
               "data sheet (RTX 5090: 575 W, 32 GB); spin derived", k5090}),
      Derived({"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000", 600, 30, 2430,
               210, 14001, 97887, "data sheet (RTX PRO 6000 Blackwell: 600 W, 96 GB); spin derived",
               kPro6000}),
      Derived({"NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx-pro-6000-max-q", 300,
               25, 2280, 210, 14001, 97887,
               "data sheet (RTX PRO 6000 Blackwell Max-Q: 300 W, 96 GB); spin derived",
               kPro6000MaxQ}),
      // vllm-project/vllm#46097: four DGX Spark GB10s hung under TP=4 at ~15 W, SM ~96 %, memory
      // utilization 0 %. The GB10 is a 140 W system-on-chip with unified memory.
      Measured({"NVIDIA GB10", "gb10", 140, 5, 2418, 208, 0, 0,
                "DGX Spark spec (GB10 SoC 140 W, unified memory: no memory.total); spin "
                "measured: vllm-project/vllm#46097 ~15 W; idle derived"},
               5, 25, 15, 60),

      // AMD Instinct. Limits are the Typical Board Power of AMD's product pages (the default cap
      // amd-smi shows), memory the HBM per device as amd-smi reports VRAM total; engine clocks the
      // data sheets' peak. No data sheet gives idle power: the idle figures are assumed (typical
      // no-process readings), and the bands follow from them by the rules above.
      // MI250/MI250X: one OAM package holds two GCDs, each its own device (rank). Power and the
      // limit are the package's (560 W: 500 W TBP, 560 W peak, the cap rocm-smi reports), read on
      // the first GCD; the second reads N/A. So the watts and the spin band are per package and
      // the memory (64 GB) per GCD; the simulator leaves the second GCD's power empty.
      // ROCm/rccl PR #1600: an MI250X hang, the frozen rank at 0 W while the waiting ranks held
      // 120-130 W.
      Derived({"AMD Instinct MI210", "mi210", 300, 40, 1700, 500, 1600, 65536,
               "data sheet (AMD Instinct MI210 PCIe: 300 W TBP, 64 GB HBM2e, 1700 MHz); idle "
               "assumed; spin derived",
               kMi210, kAmd}),
      Measured({"AMD Instinct MI250X", "mi250x", 560, 90, 1700, 500, 1600, 65536,
                "data sheet (AMD Instinct MI250X OAM: 500 W TBP, 560 W peak, per package of two "
                "GCDs; 128 GB HBM2e, 64 GB per GCD); spin measured: ROCm/rccl PR #1600 waiting "
                "ranks 120-130 W, the frozen rank 0 W; idle assumed",
                kMi250x, kAmd, 2},
               90, 150, 125),
      Measured({"AMD Instinct MI250", "mi250", 560, 90, 1700, 500, 1600, 65536,
                "data sheet (AMD Instinct MI250 OAM: 500 W TBP, 560 W peak, per package of two "
                "GCDs; 128 GB HBM2e, 64 GB per GCD); spin as the MI250X's (same package power)",
                Keys{}, kAmd, 2},
               90, 150, 125, 0, true),
      Derived({"AMD Instinct MI300X", "mi300x", 750, 140, 2100, 500, 1300, 196608,
               "data sheet (AMD Instinct MI300X OAM: 750 W TBP, 192 GB HBM3, 2100 MHz); idle "
               "assumed; spin derived",
               kMi300x, kAmd}),
      Derived({"AMD Instinct MI300A", "mi300a", 550, 100, 2100, 500, 1300, 0,
               "data sheet (AMD Instinct MI300A APU: 550 W TBP, 760 W peak liquid-cooled; 128 GB "
               "HBM3 shared with the CPU: no VRAM total of its own); idle assumed; spin derived",
               kMi300a, kAmd}),
      Derived({"AMD Instinct MI325X", "mi325x", 1000, 160, 2100, 500, 1500, 262144,
               "data sheet (AMD Instinct MI325X OAM: 1000 W TBP, 256 GB HBM3E, 2100 MHz); idle "
               "assumed; spin derived",
               kMi325x, kAmd}),
      Derived({"AMD Instinct MI355X", "mi355x", 1400, 200, 2400, 500, 2000, 294912,
               "data sheet (AMD Instinct MI355X OAM, liquid-cooled: 1400 W TBP, 288 GB HBM3E, "
               "2400 MHz); idle assumed; spin derived",
               Keys{}, kAmd}),
      // Intel Gaudi. hl-smi names the module (HL-225, HL-325L). Limits and memory: Intel's Gaudi 2
      // and Gaudi 3 white papers (memory as hl-smi's memory.total); Gaudi has no SM clock, the
      // clocks are nominal and only the simulator reads them; idle assumed.
      Derived({"HL-225", "gaudi2", 600, 100, 1800, 800, 1600, 98304,
               "Intel Gaudi 2 white paper (HL-225 OAM: 600 W, 96 GB HBM2E; hl-smi memory.total "
               "98304 MiB); idle assumed; spin derived",
               kGaudi2, kIntel}),
      Derived({"HL-325L", "gaudi3", 900, 150, 1800, 800, 1900, 131072,
               "Intel Gaudi 3 white paper (HL-325L air-cooled OAM: 900 W, 128 GB HBM2e; hl-smi -p "
               "sets 450-850 W); idle assumed; spin derived",
               kGaudi3, kIntel}),
  };
  return t;
}

// Lower case, without the vendor and line words the tools put before the model (NVIDIA, Tesla,
// AMD Instinct, Intel), spaces collapsed; "..." (nvidia-smi's truncation) removed and reported.
std::string Normalize(std::string_view name, bool* truncated) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  *truncated = false;
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  for (std::string_view dots : {"...", "\xe2\x80\xa6"}) {
    if (s.size() >= dots.size() && s.compare(s.size() - dots.size(), dots.size(), dots) == 0) {
      s.resize(s.size() - dots.size());
      *truncated = true;
    }
  }
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    std::string_view word(s.data() + i, j - i);
    if (!word.empty() && word != "nvidia" && word != "tesla" && word != "geforce" &&
        word != "quadro" && word != "amd" && word != "instinct" && word != "intel" &&
        word != "habana") {
      if (!out.empty()) out += ' ';
      out += word;
    }
    i = j;
  }
  return out;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// key occurs in s on token boundaries (not "b200" inside "gb200", not "a10" in "a100").
bool ContainsToken(std::string_view s, std::string_view key) {
  for (size_t pos = s.find(key); pos != std::string_view::npos; pos = s.find(key, pos + 1)) {
    const bool left = pos == 0 || !IsWordChar(s[pos - 1]);
    const size_t end = pos + key.size();
    const bool right = end == s.size() || !IsWordChar(s[end]);
    if (left && right) return true;
  }
  return false;
}

// The match key as a name key: "rtx-a4000" is written "rtx a4000" in names.
std::string MatchAsKey(std::string_view match) {
  std::string k(match);
  if (k.rfind("rtx-", 0) == 0) std::replace(k.begin(), k.end(), '-', ' ');
  if (k.size() > 5 && (k.ends_with("-pcie") || k.ends_with("-nvl"))) {
    k[k.rfind('-')] = ' ';
  }
  return k;
}

template <typename F>
void ForEachKey(const GpuModel& m, F&& f) {
  f(MatchAsKey(m.match));
  for (std::string_view k : m.keys) f(std::string(k));
}

bool Near(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(a, b); }

// Among candidates, the ones a logged limit and memory total fit (either may be absent).
std::vector<const GpuModel*> FitLimitMemory(const std::vector<const GpuModel*>& in,
                                            std::optional<double> limit_w,
                                            std::optional<double> mem_mib) {
  std::vector<const GpuModel*> out;
  for (const GpuModel* m : in) {
    if (limit_w && *limit_w > 0) {
      const PowerLimitRange r = PlausiblePowerLimits(*m);
      if (*limit_w < r.min_w || *limit_w > r.max_w) continue;
    }
    if (mem_mib && *mem_mib > 0 && m->memory_total_mib > 0 &&
        !Near(*mem_mib, m->memory_total_mib, 0.04)) {
      continue;
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace

const std::vector<GpuModel>& KnownGpuModels() {
  static const std::vector<GpuModel> models = BuildTable();
  return models;
}

PowerLimitRange PlausiblePowerLimits(const GpuModel& model) {
  return {kMinPowerLimitFracOfTdp * model.tdp_w, kMaxPowerLimitFracOfTdp * model.tdp_w};
}

std::optional<BoardMatch> MatchBoard(std::string_view name, std::optional<double> limit_w,
                                     std::optional<double> memory_total_mib) {
  const auto& table = KnownGpuModels();
  bool truncated = false;
  const std::string norm = Normalize(name, &truncated);
  if (!norm.empty()) {
    // The longest key on token boundaries wins; a whole-name match beats any.
    const GpuModel* best = nullptr;
    size_t best_len = 0;
    for (const GpuModel& m : table) {
      ForEachKey(m, [&](const std::string& key) {
        size_t len = 0;
        if (key == norm) {
          len = 1000;
        } else if (ContainsToken(norm, key)) {
          len = key.size();
        }
        if (len > best_len) {
          best = &m;
          best_len = len;
        }
      });
    }
    if (best != nullptr && !truncated) return BoardMatch{best, BoardMatchKind::kName, "name"};
    if (truncated) {
      // The boards whose names begin with what is left; the limit and memory pick among them.
      std::vector<const GpuModel*> cands;
      for (const GpuModel& m : table) {
        bool fits = false;
        ForEachKey(m, [&](const std::string& key) { fits = fits || key.rfind(norm, 0) == 0; });
        if (fits) cands.push_back(&m);
      }
      if (best != nullptr && std::find(cands.begin(), cands.end(), best) == cands.end()) {
        cands.push_back(best);
      }
      std::vector<const GpuModel*> fit = FitLimitMemory(cands, limit_w, memory_total_mib);
      if (fit.empty()) fit = cands;
      // Boards that differ only in memory size share their power numbers: any of them will do.
      if (!fit.empty() && std::all_of(fit.begin(), fit.end(), [&](const GpuModel* m) {
            return m->tdp_w == fit[0]->tdp_w && m->spin_hi_w == fit[0]->spin_hi_w;
          })) {
        return BoardMatch{fit[0], BoardMatchKind::kTruncatedName,
                          fmt::format("truncated name '{}'", name)};
      }
    }
  }
  // No usable name: a limit and a memory total that exactly one kind of board has.
  if (!limit_w || *limit_w <= 0 || !memory_total_mib || *memory_total_mib <= 0) {
    return std::nullopt;
  }
  std::vector<const GpuModel*> fit;
  for (const GpuModel& m : table) {
    if (Near(*limit_w, m.tdp_w, 0.02) && m.memory_total_mib > 0 &&
        Near(*memory_total_mib, m.memory_total_mib, 0.04)) {
      fit.push_back(&m);
    }
  }
  // Boards of several vendors fit (an RTX PRO 6000 and a Gaudi 2 are both 600 W and 96 GB): the
  // NVIDIA ones, as before the other vendors' rows; name-less logs come from NVIDIA's tools.
  if (std::any_of(fit.begin(), fit.end(),
                  [](const GpuModel* m) { return m->vendor == GpuVendor::kNvidia; })) {
    std::erase_if(fit, [](const GpuModel* m) { return m->vendor != GpuVendor::kNvidia; });
  }
  if (fit.empty() || !std::all_of(fit.begin(), fit.end(), [&](const GpuModel* m) {
        return m->spin_hi_w == fit[0]->spin_hi_w && m->idle_w == fit[0]->idle_w;
      })) {
    return std::nullopt;
  }
  return BoardMatch{
      fit[0], BoardMatchKind::kLimitMemory,
      fmt::format("power limit {:.0f} W and {:.0f} MiB", *limit_w, *memory_total_mib)};
}

std::optional<GpuModel> LookupGpuModel(std::string_view name) {
  if (auto m = MatchBoard(name)) return *m->model;
  return std::nullopt;
}

double MaxMeasuredSpinPowerW() {
  static const double max_w = [] {
    double w = 0;
    for (const GpuModel& m : KnownGpuModels()) {
      if (!m.spin_derived) w = std::max(w, m.spin_hi_w);
    }
    return w;
  }();
  return max_w;
}

double UnknownBoardSpinCeilingW() { return 1.2 * MaxMeasuredSpinPowerW(); }

}  // namespace ww
