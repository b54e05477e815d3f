// `wattwatch devices`: flags only; the report is telemetry/nvml/devices_report.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "core/exit_codes.h"
#include "telemetry/nvml/devices_report.h"

namespace ww::app {

void AddDevicesCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<nvml::DevicesOptions>();
  CLI::App* cmd = app.add_subcommand(
      "devices",
      "List the GPUs NVML (or, on AMD hosts, AMD SMI) sees on this host: model, UUID, PCI bus id, "
      "architecture, enforced power limit, memory, and which telemetry fields each one supports "
      "(power, energy, clocks, "
      "throttle reasons, PCIe/NVLink counters, GPM, Xid events).\n\n"
      "Example:\n  wattwatch devices\n  wattwatch devices --json | jq '.gpus[].supported'\n"
      "  WATTWATCH_NVML_LIB=/opt/nvidia/libnvidia-ml.so.1 wattwatch devices\n\n"
      "Exit codes: 0 listed; 2 no NVML library, no driver or no GPU (the message says which "
      "and how to point wattwatch at a library).");
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of text");
  cmd->add_option("--source", opts->source,
                  "auto (NVML, else AMD SMI, else ROCm SMI), nvml, amdsmi or rocm-smi")
      ->check(CLI::IsMember({"auto", "nvml", "amdsmi", "rocm-smi"}))
      ->capture_default_str();
  cmd->add_option("--amdsmi-lib", opts->amdsmi_lib,
                  "Path of libamd_smi.so (default: $WATTWATCH_AMDSMI_LIB, else the loader path)");
  cmd->add_option("--nvml-lib", opts->nvml.library_path,
                  "Path of libnvidia-ml.so.1 (default: $WATTWATCH_NVML_LIB, else the loader path)");
  cmd->add_option("--deadline-ms", opts->nvml.call_deadline_ms,
                  "Longest wait for a GPU's NVML calls before it is reported stale")
      ->check(CLI::Range(int64_t{1}, int64_t{600000}))
      ->capture_default_str();
  cmd->callback([opts, exit_code] {
    auto report = nvml::ReadDevicesReport(*opts);
    if (!report.ok()) {
      std::fprintf(stderr, "wattwatch devices: %s\n", report.status().message().c_str());
      *exit_code = kExitBadInput;
      return;
    }
    std::cout << (opts->json ? nvml::RenderDevicesJson(*report) : nvml::RenderDevicesText(*report));
    *exit_code = kExitOk;
  });
}

}  // namespace ww::app
