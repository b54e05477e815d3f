// The format registry: every telemetry format wattwatch reads, one row each, defined in its
// reader's file. The order here is the order of --help, the docs and the "not recognized"
// message; detection order is each rule's priority (format.h).
#include "telemetry/ingest/format.h"

namespace ww::ingest {

extern const Format kNvidiaSmiFormat;     // nvsmi_log.cc
extern const Format kDcgmiDmonFormat;     // dcgmi_dmon.cc
extern const Format kDcgmExporterFormat;  // dcgm_exporter.cc
extern const Format kWandbFormat;         // wandb.cc
extern const Format kSmiTableFormat;      // smi_table.cc
extern const Format kCustomCsvFormat;     // custom_csv.cc
extern const Format kPromJsonFormat;      // prom_json.cc
extern const Format kGpustatFormat;       // gpustat.cc
extern const Format kAmdSmiFormat;        // amd_smi.cc
extern const Format kRocmSmiFormat;       // amd_smi.cc
extern const Format kRocmSplitFormat;     // amd_smi.cc (pairing and join: amd_split.cc)
extern const Format kWideFormat;          // custom_csv.cc
extern const Format kLlviewFormat;        // ws_table.cc
extern const Format kTableFormat;         // ws_table.cc
extern const Format kHlSmiFormat;         // hl_smi.cc

namespace {
constexpr const Format* kFormats[] = {
    &kNvidiaSmiFormat, &kDcgmiDmonFormat, &kDcgmExporterFormat, &kWandbFormat,  &kSmiTableFormat,
    &kCustomCsvFormat, &kPromJsonFormat,  &kGpustatFormat,      &kAmdSmiFormat, &kRocmSmiFormat,
    &kRocmSplitFormat, &kWideFormat,      &kLlviewFormat,       &kTableFormat,  &kHlSmiFormat,
};
}  // namespace

std::span<const Format* const> Formats() { return kFormats; }

}  // namespace ww::ingest
