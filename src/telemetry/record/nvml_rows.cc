#include "telemetry/record/nvml_rows.h"

namespace ww::record {

uint32_t UnsupportedColumns(const LiveGpuSource& source, size_t gpu) {
  const uint32_t no = source.unsupported_sample_fields(gpu);
  uint32_t mask = 0;
  if ((no & kSamplePower) != 0) mask |= kColPowerDraw;
  if ((no & kSamplePowerLimit) != 0) mask |= kColPowerLimit;
  if ((no & kSampleUtilGpu) != 0) mask |= kColUtilGpu;
  if ((no & kSampleUtilMem) != 0) mask |= kColUtilMem;
  if ((no & kSampleSmClock) != 0) mask |= kColSmClock;
  if ((no & kSampleMemClock) != 0) mask |= kColMemClock;
  if ((no & kSampleTemperature) != 0) mask |= kColTemperature;
  if ((no & kSampleMemUsed) != 0) mask |= kColMemUsed;
  if ((no & kSampleMemTotal) != 0) mask |= kColMemTotal;
  if ((no & kSamplePstate) != 0) mask |= kColPstate;
  if ((no & kSampleClockEventReasons) != 0) mask |= kColSwPowerCap;
  return mask;
}

std::vector<RecordRow> RowsForTick(const LiveGpuSource& source,
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
