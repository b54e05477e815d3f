#include "telemetry/source_spec.h"

#include <fmt/format.h>

#include "telemetry/amdsmi/amdsmi_source.h"
#include "telemetry/ingest/dcgm_exporter_live.h"
#include "telemetry/ingest/open.h"
#include "telemetry/nvml/nvml_source.h"
#include "telemetry/sim/simulator.h"

namespace ww {
namespace {

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<std::unique_ptr<LiveGpuSource>> OpenAmdSmi(const nvml::NvmlSourceOptions& options,
                                                  const std::string& amdsmi_lib,
                                                  amdsmi::AmdLibrary library) {
  amdsmi::AmdSmiSourceOptions ao;
  ao.library = library;
  ao.library_path = amdsmi_lib;
  ao.hostname = options.hostname;
  ao.clock = options.clock;
  ao.call_deadline_ms = options.call_deadline_ms;
  ao.sampling_interval_ms = options.sampling_interval_ms;
  ao.init_deadline_ms = options.init_deadline_ms;
  auto s = amdsmi::AmdSmiSource::Open(ao);
  if (!s.ok()) return s.status();
  return std::unique_ptr<LiveGpuSource>(std::move(*s));
}

}  // namespace

Result<std::unique_ptr<LiveGpuSource>> OpenLiveGpuSource(const std::string& backend,
                                                         const nvml::NvmlSourceOptions& options,
                                                         const std::string& amdsmi_lib) {
  if (backend == "amdsmi") {
    return OpenAmdSmi(options, amdsmi_lib, amdsmi::AmdLibrary::kAmdSmiElseRocmSmi);
  }
  if (backend == "rocm-smi") return OpenAmdSmi(options, amdsmi_lib, amdsmi::AmdLibrary::kRocmSmi);
  auto nv = nvml::NvmlSource::Open(options);
  if (nv.ok()) return std::unique_ptr<LiveGpuSource>(std::move(*nv));
  if (backend != "auto") return nv.status();
  // Whatever NVML's reason (no library, no driver, no GPU), AMD SMI is asked next: a host may
  // carry both vendors' libraries and only one vendor's GPUs.
  auto amd = OpenAmdSmi(options, amdsmi_lib, amdsmi::AmdLibrary::kAmdSmiElseRocmSmi);
  if (amd.ok()) return amd;
  return Status::Unavailable(fmt::format("no GPU library can be used here. NVML: {} AMD SMI: {}",
                                         nv.status().message(), amd.status().message()));
}

Result<OpenedSource> OpenSourceSpec(const std::string& spec, const SourceSpecOptions& options) {
  OpenedSource out;
  out.label = spec;
  if (spec == "nvml" || spec == "amdsmi" || spec == "rocm-smi" || spec == "auto") {
    nvml::NvmlSourceOptions no;
    no.library_path = options.nvml_lib;
    no.hostname = options.hostname;
    no.clock = options.clock;
    no.call_deadline_ms = options.call_deadline_ms;
    auto s = OpenLiveGpuSource(spec, no, options.amdsmi_lib);
    if (!s.ok()) return s.status();
    out.gpus = s->get();
    out.nvml = dynamic_cast<nvml::NvmlSource*>(s->get());
    out.label = out.nvml != nullptr                              ? "nvml"
                : out.gpus->backend_info().backend == "ROCm SMI" ? "rocm-smi"
                                                                 : "amdsmi";
    out.source = std::move(*s);
    out.live = true;
    return out;
  }
  if (spec.rfind("dcgm-exporter:", 0) == 0) {
    ingest::DcgmExporterLiveOptions lo;
    lo.url = spec.substr(14);
    lo.hostname = options.hostname;
    lo.clock = options.clock;
    lo.call_deadline_ms = options.call_deadline_ms;
    auto s = ingest::OpenDcgmExporterLive(lo);
    if (!s.ok()) return s.status();
    out.source = std::move(*s);
    out.live = true;  // sampled now, every --interval-ms, as NVML is
    return out;
  }
  if (spec.rfind("replay:", 0) == 0) {
    const auto files = SplitComma(spec.substr(7));
    if (files.empty()) {
      return Status::InvalidInput("--source replay:FILE[,FILE...] needs at least one file");
    }
    auto s = OpenTelemetryFiles(files);  // any format triage reads, recognized by content
    if (!s.ok()) return s.status();
    out.source = std::move(s->source);
    return out;
  }
  if (spec.rfind("sim:", 0) == 0) {
    auto cfg = sim::MakeScenario(spec.substr(4), sim::ScenarioOptions{});
    if (!cfg.ok()) return Status::InvalidInput("--source: " + cfg.status().message());
    out.source = sim::MakeSimSource(std::move(*cfg));
    return out;
  }
  return Status::InvalidInput(fmt::format(
      "--source: unknown source '{}' (expected auto, nvml, amdsmi, rocm-smi, dcgm-exporter:URL, "
      "replay:FILE[,FILE...] or "
      "sim:SCENARIO)",
      spec));
}

const char* SourceSpecHelp() {
  return "  auto                      this host's GPUs: NVML, else AMD SMI, else ROCm SMI "
         "(default)\n  "
         "nvml                      this host's NVIDIA GPUs, read live every --interval-ms\n  "
         "amdsmi                    this host's AMD GPUs: AMD SMI, else ROCm SMI\n  "
         "rocm-smi                  this host's AMD GPUs through ROCm SMI only\n  "
         "dcgm-exporter:URL         scrape this node's dcgm-exporter (http://localhost:9400) "
         "every --interval-ms instead of opening NVML\n  "
         "replay:FILE[,FILE...]     nvidia-smi logs (one per host), replayed at --speed\n  "
         "sim:SCENARIO              a simulated job (healthy, hang-spin, checkpoint-rank0, ...)\n";
}

}  // namespace ww
