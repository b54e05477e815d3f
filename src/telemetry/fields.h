// The DCGM fields wattwatch reads and writes, written once: for each, its name (the metric name
// dcgm-exporter and Prometheus use), DCGM field id, `dcgmi dmon` column tag, unit, the GpuSample
// member it fills, its plausible range (core/sample_ranges.h) and the # HELP text dcgm-exporter
// prints. The dcgm-exporter reader and its live scraper, the Prometheus API reader and client
// (which fetches exactly these names), the dcgmi dmon reader, the DCGM writers and NVML
// derivation all read this table: a field added here is read, fetched and written everywhere.
// Elsewhere in src/ a field is named through its row (DcgmFieldOf), never spelled out again.
// Thread-safety: the table is immutable; every function may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/sample.h"
#include "core/sample_ranges.h"

namespace ww {

// Every DCGM field name starts with this.
inline constexpr std::string_view kDcgmFieldPrefix = "DCGM_FI_";

// How a field's value lands in a GpuSample.
enum class DcgmFieldKind : uint8_t {
  kValue,          // into `member`, as read
  kUtil,           // into `member` (utilization); a scrape with it needs no kGrActive estimate
  kEnforcedLimit,  // into `member` (the power limit), ahead of a kMgmtLimit of the same scrape
  kMgmtLimit,      // into `member` unless the scrape had the enforced limit
  kGrActive,       // into `member`; utilization = 100 x it when the scrape has no kUtil
  kEnergy,         // energy_mj: the cumulative energy counter
  kReasons,        // clock_event_reasons: the NVML bitmask
  kFbFree,         // no member: framebuffer total = used + free (+ reserved) when total is absent
  kFbReserved,     // no member: see kFbFree
};

// How dcgm-exporter prints a value: integer fields without decimals, doubles with them.
enum class DcgmPrinted : uint8_t { kInt, kFloat };

struct DcgmFieldDef {
  const char* name;      // kDcgmFieldPrefix, then "DEV_..." or "PROF_..."
  int id;                // DCGM field id, as `dcgmi dmon -e` takes it
  const char* dmon_tag;  // `dcgmi dmon` column header; nullptr: not read from dmon logs
  DcgmFieldKind kind;
  std::optional<double> GpuSample::*member;  // nullptr for kEnergy, kReasons, kFbFree, kFbReserved
  PlausibleRange range;  // a value outside is a bad reading (both bounds plausible)
  const char* unit;      // DCGM's unit of the value
  // Position in dcgm-exporter's output (its default counters' order), 1 first; 0: the DCGM
  // writers do not write the field.
  int exporter_order;
  DcgmPrinted printed;
  const char* help;  // dcgm-exporter's # HELP text; nullptr when exporter_order is 0
};

// The table, in the order the readers list the fields they found.
std::span<const DcgmFieldDef> DcgmFields();

// Index into DcgmFields() of the field named `name` (the full name); -1 when wattwatch does not
// read it.
int DcgmFieldIndex(std::string_view name);

// The first row that fills `member` (the one to fetch or write for it). The member must have one.
const DcgmFieldDef& DcgmFieldOf(std::optional<double> GpuSample::*member);

// The first row with DCGM field id `id`. The id must have one.
const DcgmFieldDef& DcgmFieldById(int id);

// The row whose dmon_tag is `tag` (upper case); nullptr when none.
const DcgmFieldDef* DcgmFieldByDmonTag(std::string_view tag);

// The rows the DCGM writers write, in dcgm-exporter's order.
std::span<const DcgmFieldDef* const> DcgmExporterFields();

// The other vendors' exporters, as series of the DCGM table: AMD's device-metrics-exporter
// (ROCm/device-metrics-exporter: gpu_power_usage, gpu_gfx_activity, ... with gpu_id and hostname
// labels) and Intel Gaudi's metric exporter (habanalabs_power_mW, habanalabs_utilization, ...).
// A scrape of either reads as a dcgm-exporter scrape: each series lands in its DCGM row's member,
// its value times `scale` (mW -> W, bytes -> MiB). One series per DCGM row and vendor (a scrape
// naming one row twice would read as two scrapes): AMD's gpu_package_power, which MI3xx boards
// export beside gpu_power_usage, is not read.
struct ExporterSeriesDef {
  const char* vendor;     // "amd", "gaudi"
  const char* name;       // the exporter's metric name
  const char* dcgm_name;  // the DcgmFieldDef it stands for
  double scale;           // value x scale = the DCGM row's unit
};
std::span<const ExporterSeriesDef> ExporterSeries();
// The row of metric `name`; nullptr when none.
const ExporterSeriesDef* ExporterSeriesByName(std::string_view name);

}  // namespace ww
