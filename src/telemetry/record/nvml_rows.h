// Glue between a live source (NVML, AMD SMI) and RecordWriter: which CSV columns a GPU cannot
// provide, and the rows of one tick. Thread-safety: same as the source (one thread at a time).
#pragma once

#include <cstdint>
#include <vector>

#include "telemetry/live_gpu_source.h"
#include "telemetry/record/record_writer.h"

namespace ww::record {

// CsvColumn bits for the fields the library reported as not supported on this GPU.
uint32_t UnsupportedColumns(const LiveGpuSource& source, size_t gpu);

// One row per sample of the last Next(); pointers borrow samples, infos and source.
std::vector<RecordRow> RowsForTick(const LiveGpuSource& source,
                                   const std::vector<GpuSample>& samples,
                                   const std::vector<GpuInfo>& infos);

}  // namespace ww::record
