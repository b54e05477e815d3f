// Writes a simulated scenario to disk: the logs in the chosen --format (one file per host, or one
// for a job-wide format) and the truth files (per-sample states, hang episodes).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/timefmt.h"
#include "telemetry/sim/simulator.h"

namespace ww::sim {

Result<std::vector<std::string>> WriteScenario(const ScenarioConfig& config,
                                               const WriteOptions& options) {
  Simulator sim(config);
  const OutputFormat& format = options.format != nullptr ? *options.format : DefaultOutputFormat();
  if (Status st = CheckOutputInterval(format, config.interval_ms); !st.ok()) return st;
  const bool job_wide = format.writer->job_wide;
  const std::string ext = format.writer->extension;
  std::vector<std::string> paths = options.out_paths;
  if (paths.empty()) {
    if (options.out_dir.empty()) return Status::InvalidInput("give --out or --out-dir");
    std::error_code ec;
    std::filesystem::create_directories(options.out_dir, ec);
    if (ec) {
      return Status::IoError(fmt::format("{}: cannot create: {}", options.out_dir, ec.message()));
    }
    if (job_wide) {
      paths.push_back(options.out_dir + "/" + config.name + ext);
    } else {
      for (const auto& h : sim.host_names()) {
        paths.push_back(fmt::format("{}/{}{}", options.out_dir, h, ext));
      }
    }
  }
  const size_t want = job_wide ? 1 : sim.host_names().size();
  if (paths.size() != want) {
    return Status::InvalidInput(
        job_wide ? fmt::format("--format {} writes every host into one file: give one --out "
                               "file or --out-dir",
                               format.name)
                 : fmt::format("scenario '{}' has {} hosts: give {} --out files or --out-dir",
                               config.name, want, want));
  }
  std::vector<std::FILE*> files;
  auto close_all = [&] {
    for (std::FILE* f : files) std::fclose(f);
  };
  for (const auto& p : paths) {
    std::FILE* f = std::fopen(p.c_str(), "w");
    if (!f) {
      close_all();
      return Status::IoError(fmt::format("{}: cannot write", p));
    }
    files.push_back(f);
  }
  std::FILE* truth = nullptr;
  if (!options.truth_csv.empty()) {
    truth = std::fopen(options.truth_csv.c_str(), "w");
    if (!truth) {
      close_all();
      return Status::IoError(fmt::format("{}: cannot write", options.truth_csv));
    }
    std::fputs("host,timestamp,gpu,state\n", truth);
  }
  write::WriterContext context;
  context.hosts = sim.host_names();
  context.model_name = sim.ModelNameAsLogged();
  context.start_unix_ms = config.start_unix_ms;
  context.interval_ms = config.interval_ms;
  context.uuid = [&sim](GpuKey key) { return sim.GpuUuid(key); };
  context.interleave_job_lines = options.interleave_job_lines;
  context.nvsmi_minimal_columns = options.minimal_columns;
  std::vector<std::unique_ptr<write::SampleWriter>> writers;
  writers.reserve(files.size());
  for (std::FILE* f : files) writers.push_back(format.writer->make(f, context));
  std::vector<GpuSample> samples;
  std::vector<std::vector<GpuSample>> by_host(job_wide ? 1 : sim.host_names().size());
  std::vector<TruthLabel> labels;
  std::string line;
  while (sim.NextTick(&samples, &labels)) {
    for (auto& h : by_host) h.clear();
    for (const GpuSample& s : samples) by_host[job_wide ? 0 : s.key.host].push_back(s);
    for (size_t h = 0; h < writers.size(); ++h) writers[h]->WriteTick(by_host[h]);
    if (truth) {
      for (const TruthLabel& l : labels) {
        line.clear();
        line += sim.host_names()[l.key.host];
        line += ',';
        AppendIsoMs(line, l.timestamp_ms);
        line += fmt::format(",{},{}\n", l.key.gpu, StateName(l.state));
        std::fputs(line.c_str(), truth);
      }
    }
    samples.clear();
    labels.clear();
  }
  Status written = Status::Ok();
  for (size_t h = 0; h < writers.size(); ++h) {
    Status st = writers[h]->Finish();
    if (st.ok() && std::ferror(files[h])) st = Status::IoError("write failed");
    if (!st.ok() && written.ok()) {
      written = Status::IoError(fmt::format("{}: {}", paths[h], st.message()));
    }
  }
  close_all();
  if (truth) std::fclose(truth);
  if (!written.ok()) return written;
  if (!options.truth_json.empty()) {
    nlohmann::json hangs = nlohmann::json::array();
    for (const TruthHang& h : sim.truth_hangs()) {
      nlohmann::json culprits = nlohmann::json::array();
      for (GpuKey k : h.culprits) {
        culprits.push_back({{"host", sim.host_names()[k.host]}, {"gpu", k.gpu}});
      }
      hangs.push_back({{"start", FormatIsoMs(h.start_ms)},
                       {"end", FormatIsoMs(h.end_ms)},
                       {"culprits", culprits}});
    }
    const double c = sim.truth_compute_seconds(), m = sim.truth_comm_seconds();
    nlohmann::json j = {{"scenario", config.name},
                        {"model", config.model.name},
                        {"interval_ms", config.interval_ms},
                        {"hang_episodes", hangs},
                        {"comm_share", c + m > 0 ? m / (c + m) : 0.0}};
    if (config.straggler_rank >= 0) {
      const int g = config.straggler_rank % config.gpus_per_host;
      j["straggler"] = {{"host", sim.host_names()[config.straggler_rank / config.gpus_per_host]},
                        {"gpu", g},
                        {"slowdown", config.straggler_slowdown},
                        {"throttled", config.straggler_throttled}};
    }
    std::FILE* f = std::fopen(options.truth_json.c_str(), "w");
    if (!f) return Status::IoError(fmt::format("{}: cannot write", options.truth_json));
    std::fputs(j.dump(2).c_str(), f);
    std::fputs("\n", f);
    std::fclose(f);
  }
  return paths;
}

}  // namespace ww::sim
