// The gate's report, rendered: the exit code it deserves, the JSON, and the table with the
// per-rank steps and the fix when steps_equal fails.
#include <fmt/format.h>

#include <cctype>

#include "gate/gate.h"

namespace ww::gate {

int GateExitCode(const GateReport& report, bool strict) {
  if (report.overall == CheckStatus::kFail) return 1;
  if (strict && report.overall == CheckStatus::kWarn) return 1;
  return 0;
}

nlohmann::json GateReportToJson(const GateReport& report) {
  nlohmann::json out;
  out["status"] = std::string(CheckStatusName(report.overall));
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : report.checks) {
    checks.push_back({{"name", c.name},
                      {"status", std::string(CheckStatusName(c.status))},
                      {"reason", c.reason},
                      {"details", c.details}});
  }
  out["checks"] = checks;
  out["summary"] = report.summary;
  return out;
}

std::string FormatGateReport(const JobSpec& spec, const GateReport& report, bool strict) {
  std::string out;
  const auto& s = report.summary;
  out += fmt::format(
      "wattwatch gate {}: {} ranks (DP {}), {} samples, {} tokens, packing {} ({} scope), "
      "sharding {}\n\n",
      spec.spec_path, spec.World(), s.value("data_parallel", 0u), s.value("samples", uint64_t{0}),
      s.value("tokens", uint64_t{0}), PackingName(spec.packing),
      PackingScopeName(spec.packing_scope), ShardingName(spec.sharding));
  out += fmt::format("{:<16} {:<6} {}\n", "CHECK", "STATUS", "REASON");
  for (const auto& c : report.checks) {
    std::string status(CheckStatusName(c.status));
    for (auto& ch : status) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    out += fmt::format("{:<16} {:<6} {}\n", c.name, status, c.reason);
  }
  const auto& steps = report.checks.empty() ? CheckResult{} : report.checks[0];
  if (steps.status == CheckStatus::kFail && !report.plan.ranks.empty()) {
    out += "\nsteps per rank per epoch (the job hangs at the epoch end when these differ):\n";
    out += fmt::format("{:>6} {:>10} {:>14} {:>10} {:>13} {:>7}\n", "rank", "samples", "tokens",
                       "sequences", "micro_batches", "steps");
    for (size_t i = 0; i < report.plan.ranks.size(); ++i) {
      const auto& r = report.plan.ranks[i];
      out += fmt::format("{:>6} {:>10} {:>14} {:>10} {:>13} {:>7}{}\n", i, r.samples, r.tokens,
                         r.bins, r.micro_batches, r.steps,
                         r.steps == report.plan.min_steps ? "  <- fewest" : "");
    }
    out += fmt::format(
        "\nfix: add `max_steps: {}` to the job (every rank stops after the smallest rank's step "
        "count; FSDP/ZeRO-3 cannot use Join){}\n",
        report.plan.equalized_max_steps,
        spec.packing != Packing::kNone && spec.packing_scope == PackingScope::kRank
            ? ", or pack the corpus globally before sharding (packing_scope: global)"
            : "");
  }
  const int code = GateExitCode(report, strict);
  out += fmt::format("\nresult: {} (exit {})\n", CheckStatusName(report.overall), code);
  return out;
}

}  // namespace ww::gate
