// Glue between NvmlSource and RecordWriter: which CSV columns a GPU cannot provide, and the rows
// of one tick. Thread-safety: same as NvmlSource (one thread at a time).
#pragma once

#include <cstdint>
#include <vector>

#include "telemetry/nvml/nvml_source.h"
#include "telemetry/record/record_writer.h"

namespace ww::record {

// CsvColumn bits for the fields NVML reported as not supported on this GPU.
uint32_t UnsupportedColumns(const nvml::NvmlSource& source, size_t gpu);

// One row per sample of the last NvmlSource::Next(); pointers borrow samples, infos and source.
std::vector<RecordRow> RowsForTick(const nvml::NvmlSource& source,
                                   const std::vector<GpuSample>& samples,
                                   const std::vector<GpuInfo>& infos);

}  // namespace ww::record
