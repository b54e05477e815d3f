// CPU cost of reading every field of 8 GPUs from the fake libnvidia-ml.so.1
// (WATTWATCH_NVML_LIB must point at it; bench/nvml.sh sets everything up).
//   BM_NvmlSourceTick:   NvmlSource::Next (readers on the deadline pool, derived values).
//   BM_DirectSequential: the same NVML calls made inline on one thread with no deadline, the
//                        floor any poller pays for the library itself.
// Both report process CPU time (all threads) per GPU-sample in the counter cpu_us_per_gpu_sample;
// the Python ctypes reference (nvitop/gpustat style) runs from bench/nvml.sh in the same run.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>

#include "telemetry/nvml/nvml_source.h"

namespace {

constexpr int kGpus = 8;

double ProcessCpuUs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
         ru.ru_stime.tv_usec;
}

void BM_NvmlSourceTick(benchmark::State& state) {
  ww::nvml::NvmlSourceOptions o;
  o.call_deadline_ms = 1000;
  auto src = ww::nvml::NvmlSource::Open(o);
  if (!src.ok()) {
    state.SkipWithError(src.status().message().c_str());
    return;
  }
  std::vector<ww::GpuSample> out;
  out.reserve(kGpus);
  const double cpu0 = ProcessCpuUs();
  for (auto _ : state) {
    out.clear();
    benchmark::DoNotOptimize(src.value()->Next(&out).ok());
  }
  const double per = (ProcessCpuUs() - cpu0) / (static_cast<double>(state.iterations()) * kGpus);
  state.counters["cpu_us_per_gpu_sample"] = per;
  state.counters["gpus"] = static_cast<double>(src.value()->gpu_count());
}
BENCHMARK(BM_NvmlSourceTick)->UseRealTime()->MinTime(2.0);

void BM_DirectSequential(benchmark::State& state) {
  using namespace ww::nvml;
  auto lib = NvmlLib::Load("");
  if (!lib.ok()) {
    state.SkipWithError(lib.status().message().c_str());
    return;
  }
  const NvmlLib& L = *lib.value();
  unsigned n = 0;
  L.DeviceGetCount(&n);
  std::vector<nvmlDevice_t> dev(n);
  for (unsigned i = 0; i < n; ++i) L.DeviceGetHandleByIndex(i, &dev[i]);
  const double cpu0 = ProcessCpuUs();
  for (auto _ : state) {
    for (unsigned i = 0; i < n; ++i) {
      unsigned u;
      unsigned long long ull;
      nvmlUtilization_t util;
      nvmlMemory_t mem;
      nvmlPstates_t p;
      L.DeviceGetPowerUsage(dev[i], &u);
      L.DeviceGetTotalEnergyConsumption(dev[i], &ull);
      L.DeviceGetEnforcedPowerLimit(dev[i], &u);
      L.DeviceGetUtilizationRates(dev[i], &util);
      L.DeviceGetClockInfo(dev[i], NVML_CLOCK_SM, &u);
      L.DeviceGetClockInfo(dev[i], NVML_CLOCK_MEM, &u);
      L.DeviceGetCurrentClocksEventReasons(dev[i], &ull);
      L.DeviceGetTemperature(dev[i], NVML_TEMPERATURE_GPU, &u);
      L.DeviceGetMemoryInfo(dev[i], &mem);
      L.DeviceGetPerformanceState(dev[i], &p);
      nvmlFieldValue_t fv[5] = {};
      fv[0].fieldId = NVML_FI_DEV_POWER_INSTANT;
      fv[1].fieldId = NVML_FI_DEV_PCIE_COUNT_TX_BYTES;
      fv[2].fieldId = NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
      fv[3].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
      fv[3].scopeId = kNvmlScopeAllLinks;
      fv[4].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
      fv[4].scopeId = kNvmlScopeAllLinks;
      L.DeviceGetFieldValues(dev[i], 5, fv);
      benchmark::DoNotOptimize(fv);
    }
  }
  state.counters["cpu_us_per_gpu_sample"] =
      (ProcessCpuUs() - cpu0) / (static_cast<double>(state.iterations()) * n);
}
BENCHMARK(BM_DirectSequential)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
