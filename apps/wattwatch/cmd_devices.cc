// `wattwatch devices`: the GPUs NVML sees, their model, power limit and supported fields.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/exit_codes.h"
#include "telemetry/nvml/nvml_source.h"

namespace ww::app {

void AddDevicesCommand(CLI::App& app, int* exit_code) {
  struct Opts {
    bool json = false;
    std::string nvml_lib;
    int64_t deadline_ms = 2000;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "devices",
      "List the GPUs NVML sees on this host: model, UUID, PCI bus id, architecture, enforced "
      "power limit, and which telemetry fields each one supports (power, energy, clocks, "
      "throttle reasons, PCIe/NVLink counters, GPM, Xid events).\n\n"
      "Example:\n  wattwatch devices\n  wattwatch devices --json | jq '.gpus[].supported'\n"
      "  WATTWATCH_NVML_LIB=/opt/nvidia/libnvidia-ml.so.1 wattwatch devices\n\n"
      "Exit codes: 0 listed; 2 no NVML library, no driver or no GPU (the message says which "
      "and how to point wattwatch at a library).");
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of text");
  cmd->add_option("--nvml-lib", opts->nvml_lib,
                  "Path of libnvidia-ml.so.1 (default: $WATTWATCH_NVML_LIB, else the loader path)");
  cmd->add_option("--deadline-ms", opts->deadline_ms,
                  "Longest wait for a GPU's NVML calls before it is reported stale")
      ->check(CLI::Range(1, 600000));
  cmd->callback([opts, exit_code] {
    nvml::NvmlSourceOptions o;
    o.library_path = opts->nvml_lib;
    o.call_deadline_ms = opts->deadline_ms;
    auto opened = nvml::NvmlSource::Open(o);
    if (!opened.ok()) {
      std::fprintf(stderr, "wattwatch devices: %s\n", opened.status().message().c_str());
      *exit_code = kExitBadInput;
      return;
    }
    nvml::NvmlSource& src = *opened.value();
    // One read of everything learns what each GPU supports.
    std::vector<GpuSample> samples;
    if (Status st = src.Next(&samples); !st.ok()) {
      std::fprintf(stderr, "wattwatch devices: %s\n", st.message().c_str());
      *exit_code = kExitBadInput;
      return;
    }
    const auto infos = src.gpus();
    const auto& status = src.last_status();
    nlohmann::ordered_json out;
    out["host"] = src.hosts().front();
    out["driver_version"] = src.driver_version();
    out["nvml_library"] = src.lib().path();
    out["gpus"] = nlohmann::json::array();
    std::string text =
        fmt::format("host {}  driver {}  NVML {}\n", src.hosts().front(),
                    src.driver_version().empty() ? "?" : src.driver_version(), src.lib().path());
    for (size_t i = 0; i < infos.size(); ++i) {
      const GpuSample* s = i < samples.size() ? &samples[i] : nullptr;
      std::vector<std::string> yes, no, unknown;
      for (int f = 0; f < nvml::kNvmlFieldCount; ++f) {
        const auto field = static_cast<nvml::NvmlField>(f);
        const char* name = nvml::NvmlFieldName(field);
        switch (src.support(i, field)) {
          case nvml::Support::kSupported:
            yes.push_back(name);
            break;
          case nvml::Support::kUnsupported:
            no.push_back(name);
            break;
          case nvml::Support::kUnknown:
            unknown.push_back(name);
            break;
        }
      }
      nlohmann::ordered_json g;
      g["index"] = i;
      g["name"] = infos[i].name;
      g["uuid"] = infos[i].uuid;
      g["pci_bus_id"] = infos[i].pci_bus_id;
      g["architecture"] = src.architecture(i);
      if (s != nullptr && s->power_limit_w) {
        g["power_limit_w"] = *s->power_limit_w;
      } else {
        g["power_limit_w"] = nullptr;
      }
      g["supported"] = yes;
      g["unsupported"] = no;
      g["unknown"] = unknown;
      g["stale"] = status[i].stale;
      g["lost"] = status[i].lost;
      if (status[i].stale) g["stale_reason"] = status[i].stale_reason;
      out["gpus"].push_back(g);

      text +=
          fmt::format("GPU {}  {}  {}  {}  {}  power limit {}{}\n", i,
                      infos[i].name.empty() ? "?" : infos[i].name, infos[i].uuid,
                      infos[i].pci_bus_id, src.architecture(i).empty() ? "?" : src.architecture(i),
                      s != nullptr && s->power_limit_w ? fmt::format("{:.2f} W", *s->power_limit_w)
                                                       : std::string("[N/A]"),
                      status[i].lost    ? "  [GPU is lost]"
                      : status[i].stale ? "  [stale: " + status[i].stale_reason + "]"
                                        : "");
      text += fmt::format("  supported:   {}\n", fmt::join(yes, " "));
      if (!no.empty()) text += fmt::format("  unsupported: {}\n", fmt::join(no, " "));
      if (!unknown.empty()) text += fmt::format("  unknown:     {}\n", fmt::join(unknown, " "));
    }
    if (opts->json) {
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << text;
    }
    *exit_code = kExitOk;
  });
}

}  // namespace ww::app
