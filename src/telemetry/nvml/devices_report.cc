#include "telemetry/nvml/devices_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "telemetry/source_spec.h"

namespace ww::nvml {

DevicesReport BuildDevicesReport(const LiveGpuSource& source,
                                 const std::vector<GpuSample>& samples) {
  DevicesReport report;
  const LiveBackendInfo backend = source.backend_info();
  report.host = source.hosts().front();
  report.backend = backend.backend;
  report.driver_version = backend.driver_version;
  report.library_version = backend.library_version;
  report.nvml_library = backend.library;
  const std::vector<GpuInfo> infos = source.gpus();
  const std::vector<LiveGpuStatus>& status = source.last_status();
  for (size_t i = 0; i < infos.size(); ++i) {
    DeviceEntry g;
    g.index = i;
    g.name = infos[i].name;
    g.uuid = infos[i].uuid;
    g.pci_bus_id = infos[i].pci_bus_id;
    g.architecture = source.architecture(i);
    if (i < samples.size()) {
      g.power_limit_w = samples[i].power_limit_w;
      g.mem_total_mib = samples[i].mem_total_mib;
    }
    for (const auto& [name, support] : source.field_support(i)) {
      switch (support) {
        case Support::kSupported:
          g.supported.push_back(name);
          break;
        case Support::kUnsupported:
          g.unsupported.push_back(name);
          break;
        case Support::kUnknown:
          g.unknown.push_back(name);
          break;
      }
    }
    if (i < status.size()) {
      g.stale = status[i].stale;
      g.stale_reason = status[i].stale_reason;
      g.lost = status[i].lost;
    }
    report.gpus.push_back(std::move(g));
  }
  return report;
}

Result<DevicesReport> ReadDevicesReport(const DevicesOptions& options) {
  auto opened = OpenLiveGpuSource(options.source, options.nvml, options.amdsmi_lib);
  if (!opened.ok()) return opened.status();
  LiveGpuSource& source = *opened.value();
  std::vector<GpuSample> samples;
  if (Status st = source.Next(&samples); !st.ok()) return st;
  return BuildDevicesReport(source, samples);
}

namespace {

std::string OrUnknown(const std::string& s) { return s.empty() ? "?" : s; }

}  // namespace

std::string RenderDevicesText(const DevicesReport& report) {
  const std::string library = report.library_version.empty()
                                  ? report.backend
                                  : report.backend + " " + report.library_version;
  std::string text = fmt::format("host {}  driver {}  {} {}\n", report.host,
                                 OrUnknown(report.driver_version), library, report.nvml_library);
  for (const DeviceEntry& g : report.gpus) {
    const std::string limit =
        g.power_limit_w ? fmt::format("{:.2f} W", *g.power_limit_w) : std::string("[N/A]");
    const std::string state = g.lost    ? "  [GPU is lost]"
                              : g.stale ? "  [stale: " + g.stale_reason + "]"
                                        : "";
    const std::string memory =
        g.mem_total_mib ? fmt::format("  memory {:.0f} MiB", *g.mem_total_mib) : std::string();
    text += fmt::format("GPU {}  {}  {}  {}  {}  power limit {}{}{}\n", g.index, OrUnknown(g.name),
                        g.uuid, g.pci_bus_id, OrUnknown(g.architecture), limit, memory, state);
    text += fmt::format("  supported:   {}\n", fmt::join(g.supported, " "));
    if (!g.unsupported.empty()) {
      text += fmt::format("  unsupported: {}\n", fmt::join(g.unsupported, " "));
    }
    if (!g.unknown.empty()) text += fmt::format("  unknown:     {}\n", fmt::join(g.unknown, " "));
  }
  return text;
}

std::string RenderDevicesJson(const DevicesReport& report) {
  nlohmann::ordered_json out;
  out["host"] = report.host;
  out["driver_version"] = report.driver_version;
  out["nvml_library"] = report.nvml_library;
  out["backend"] = report.backend;
  out["library_version"] = report.library_version;
  out["gpus"] = nlohmann::json::array();
  for (const DeviceEntry& g : report.gpus) {
    nlohmann::ordered_json j;
    j["index"] = g.index;
    j["name"] = g.name;
    j["uuid"] = g.uuid;
    j["pci_bus_id"] = g.pci_bus_id;
    j["architecture"] = g.architecture;
    j["power_limit_w"] = g.power_limit_w ? nlohmann::ordered_json(*g.power_limit_w) : nullptr;
    j["mem_total_mib"] = g.mem_total_mib ? nlohmann::ordered_json(*g.mem_total_mib) : nullptr;
    j["supported"] = g.supported;
    j["unsupported"] = g.unsupported;
    j["unknown"] = g.unknown;
    j["stale"] = g.stale;
    j["lost"] = g.lost;
    if (g.stale) j["stale_reason"] = g.stale_reason;
    out["gpus"].push_back(std::move(j));
  }
  return out.dump(2) + "\n";
}

}  // namespace ww::nvml
