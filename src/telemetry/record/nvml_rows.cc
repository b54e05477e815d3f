#include "telemetry/record/nvml_rows.h"

namespace ww::record {

uint32_t UnsupportedColumns(const nvml::NvmlSource& source, size_t gpu) {
  using nvml::NvmlField;
  using nvml::Support;
  auto no = [&](NvmlField f) { return source.support(gpu, f) == Support::kUnsupported; };
  uint32_t mask = 0;
  if (no(NvmlField::kPowerDraw)) mask |= kColPowerDraw;
  if (no(NvmlField::kPowerLimit)) mask |= kColPowerLimit;
  if (no(NvmlField::kUtilization)) mask |= kColUtilGpu | kColUtilMem;
  if (no(NvmlField::kSmClock)) mask |= kColSmClock;
  if (no(NvmlField::kMemClock)) mask |= kColMemClock;
  if (no(NvmlField::kTemperature)) mask |= kColTemperature;
  if (no(NvmlField::kMemory)) mask |= kColMemUsed | kColMemTotal;
  if (no(NvmlField::kPstate)) mask |= kColPstate;
  if (no(NvmlField::kClockEventReasons)) mask |= kColSwPowerCap;
  return mask;
}

std::vector<RecordRow> RowsForTick(const nvml::NvmlSource& source,
                                   const std::vector<GpuSample>& samples,
                                   const std::vector<GpuInfo>& infos) {
  std::vector<RecordRow> rows;
  rows.reserve(samples.size());
  const auto& status = source.last_status();
  const std::string& host = source.hosts().front();
  for (const GpuSample& s : samples) {
    const size_t gpu = s.key.gpu;
    RecordRow r;
    r.sample = &s;
    r.info = gpu < infos.size() ? &infos[gpu] : nullptr;
    r.host = host;
    r.unsupported_mask = UnsupportedColumns(source, gpu);
    if (gpu < status.size()) {
      r.stale = status[gpu].stale;
      r.stale_reason = status[gpu].stale_reason;
      r.lost = status[gpu].lost;
      r.xids = &status[gpu].xids;
    }
    rows.push_back(r);
  }
  return rows;
}

}  // namespace ww::record
