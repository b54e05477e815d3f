// `wattwatch triage`: flags and printing only; the work is in src/triage and src/report
// (report/triage_run.h: the pipeline).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "core/exit_codes.h"
#include "output_flags.h"
#include "report/html_report.h"
#include "report/triage_report.h"
#include "report/triage_run.h"
#include "telemetry/ingest/open.h"
#include "telemetry/ingest/prom_client.h"
#include "triage/host_clock.h"
#include "triage_flags.h"

namespace ww::app {
namespace {

struct TriageFlags {
  std::vector<std::string> files;
  bool json = false;
  std::string json_out;
  std::string labels;
  std::string html;
  bool fail_on_hang = false;
  std::string query;
  std::string format = "auto";
  std::vector<std::string> map;
  std::string wide;      // --wide METRIC
  std::string split_id;  // --split-id COLUMN
  int year = 0;          // --year YYYY
  int64_t interval_ms = 0;
  triage::TriageOptions triage;  // --hang-confirm-s, --max-checkpoint-s bind here (one default)
  std::string color = "auto";
  // --prometheus URL instead of files (AddPrometheusFlags, OpenPrometheusInput).
  std::string prometheus;
  std::string start, end, selector, step;
  std::string prometheus_vendor = "nvidia";  // --prometheus-vendor
  std::vector<std::string> prometheus_headers;
  std::string prometheus_token_file;
  std::vector<std::string> host_offsets;  // HOST=SECONDS
  bool force = false;
};

// The DCGM series of --start..--end from a Prometheus server, as the one input of this triage.
Result<OpenedInputs> OpenPrometheusInput(const TriageFlags& f) {
  if (!f.files.empty()) {
    return Status::InvalidInput("--prometheus reads a server, not files: give one or the other");
  }
  if (f.start.empty() || f.end.empty()) {
    return Status::InvalidInput("--prometheus needs --start and --end (RFC 3339 or Unix seconds)");
  }
  ingest::PromRangeQuery q;
  auto start = ingest::ParsePromTimeMs(f.start);
  if (!start.ok()) return Status::InvalidInput("--start: " + start.status().message());
  auto end = ingest::ParsePromTimeMs(f.end);
  if (!end.ok()) return Status::InvalidInput("--end: " + end.status().message());
  q.start_ms = *start;
  q.end_ms = *end;
  q.selector = f.selector;
  q.vendor = f.prometheus_vendor;
  if (!f.step.empty()) {
    auto step = ingest::ParsePromDurationMs(f.step);
    if (!step.ok()) return Status::InvalidInput("--step: " + step.status().message());
    q.step_ms = *step;
  }
  ingest::PromHttpOptions ho;
  for (const auto& h : f.prometheus_headers) {
    WW_RETURN_IF_ERROR(ingest::ParseHeaderFlag(h, &ho.headers));
  }
  if (!f.prometheus_token_file.empty()) {
    WW_RETURN_IF_ERROR(ingest::ReadTokenFile(f.prometheus_token_file, &ho.headers));
  }
  auto http = ingest::MakePromHttp(f.prometheus, ho);
  if (!http.ok()) return http.status();
  auto fetched = ingest::FetchDcgmRange(**http, q);
  if (!fetched.ok()) return fetched.status();
  OpenedInputs out;
  out.source = std::move(fetched->source);
  InputDescription d;
  d.path = "prometheus";
  d.format = "prometheus";
  d.fixed = fetched->description;
  out.inputs.push_back(std::move(d));
  return out;
}

void AddPrometheusFlags(CLI::App* cmd, TriageFlags* f) {
  cmd->add_option("--prometheus", f->prometheus,
                  "read the DCGM series from this Prometheus (http(s)://HOST:PORT[/PATH]) "
                  "instead of files; with --start and --end");
  cmd->add_option("--start", f->start, "--prometheus: start of the range (RFC 3339 or Unix s)");
  cmd->add_option("--end", f->end, "--prometheus: end of the range (RFC 3339 or Unix s)");
  cmd->add_option("--selector", f->selector,
                  "--prometheus: label matchers for the DCGM series, e.g. "
                  "'{job=\"dcgm\",Hostname=~\"node1.*\"}'");
  cmd->add_option("--prometheus-vendor", f->prometheus_vendor,
                  "--prometheus: whose exporter stored the series: nvidia (dcgm-exporter, the "
                  "default), amd (device-metrics-exporter: gpu_power_usage, gpu_gfx_activity, "
                  "...), gaudi (habanalabs_power_mW, habanalabs_utilization, ...)")
      ->check(CLI::IsMember({"nvidia", "amd", "gaudi"}));
  cmd->add_option("--step", f->step,
                  "--prometheus: query step (15s, 1m); default: the series' own scrape interval, "
                  "so every stored sample is read once");
  cmd->add_option("--prometheus-header", f->prometheus_headers,
                  "--prometheus: 'Name: value' sent with every request (repeatable), e.g. "
                  "'Authorization: Bearer TOKEN'");
  cmd->add_option("--prometheus-token-file", f->prometheus_token_file,
                  "--prometheus: send 'Authorization: Bearer <first line of this file>'")
      ->check(CLI::ExistingFile);
}

// Outputs that would go wrong before any work: two things on stdout, an output over an input.
bool TriageOutputsAllowed(const TriageFlags& f) {
  if (f.json && f.labels == "-") {
    std::cerr << "wattwatch triage: --json and --labels - both print on standard output; write "
                 "the labels to a file (--labels labels.csv) or the JSON to one (--json-out)\n";
    return false;
  }
  std::vector<std::string> inputs = f.files;
  if (!f.prometheus_token_file.empty()) inputs.push_back(f.prometheus_token_file);
  return OutputsAllowed("triage", inputs,
                        {{"--json-out", f.json_out}, {"--labels", f.labels}, {"--html", f.html}},
                        f.force);
}

// The triage and its outputs; an error is a bad input (exit 2), said once by the caller.
Result<int> RunTriage(const TriageFlags& f) {
  IngestOptions io;
  io.replay.query = f.query;
  io.replay.interval_ms = f.interval_ms;
  io.replay.triage_fields_only = true;
  auto format = ParseInputFormat(f.format);
  if (!format.ok()) return format.status();
  io.format = *format;
  io.wide_metric = f.wide;
  io.split_id = f.split_id;
  io.year = f.year;
  for (const auto& m : f.map) WW_RETURN_IF_ERROR(ParseMapFlag(m, &io.map));
  report::TriageRunOptions ro;
  for (const auto& spec : f.host_offsets) {
    auto o = triage::ParseHostOffset(spec);
    if (!o.ok()) return o.status();
    ro.host_offsets_s[o->first] = o->second;
  }
  ro.host_offsets_given = !f.host_offsets.empty();
  ro.open = [&f, io]() -> Result<OpenedInputs> {
    return f.prometheus.empty() ? OpenTelemetryFiles(f.files, io) : OpenPrometheusInput(f);
  };
  ro.rereadable =
      f.prometheus.empty() && std::find(f.files.begin(), f.files.end(), "-") == f.files.end();
  ro.labels = f.labels;
  ro.timeline = !f.html.empty();
  ro.triage = f.triage;
  auto run = report::RunTriagePipeline(ro);
  if (!run.ok()) return run.status();
  const report::TriageReport& rep = run->report;
  if (!f.json_out.empty()) {
    std::ofstream out(f.json_out);
    out << report::RenderJson(rep).dump(2) << "\n";
    if (!out) return Status::IoError(f.json_out + ": cannot write");
  }
  if (!f.html.empty()) {
    report::HtmlOptions ho;
    ho.inputs = f.prometheus.empty() ? f.files : std::vector<std::string>{f.prometheus};
    WW_RETURN_IF_ERROR(report::WriteHtmlReport(f.html, rep, run->timeline(), ho));
  }
  if (f.json) {
    std::cout << report::RenderJson(rep).dump(2) << "\n";
  } else if (f.labels != "-") {
    const bool color = f.color == "always" || (f.color == "auto" && isatty(STDOUT_FILENO));
    // What each file was read as, so a wrong guess (a column, a unit, the format) is visible.
    for (const auto& in : run->inputs().inputs) {
      if (in.format != "nvidia-smi" || !in.compression.empty()) {
        std::cout << "input " << in.Text() << "\n";
      }
    }
    std::cout << report::RenderText(rep, color);
  }
  if (f.fail_on_hang && !rep.hang_episodes.empty()) return kExitHang;
  return kExitOk;
}

}  // namespace

void AddTriageCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<TriageFlags>();
  CLI::App* cmd = app.add_subcommand(
      "triage",
      "Say what every GPU of a job was doing over time: compute, communication, data_starved, "
      "checkpoint, hang or idle, with hang episodes, their culprit ranks and the GPU-hours they "
      "wasted.");
  cmd->footer(std::string(R"(Input: nvidia-smi logs as you have them, one file per host of one job:
  nvidia-smi --query-gpu=timestamp,index,name,power.draw,power.limit,utilization.gpu,\
             utilization.memory,memory.used --format=csv -lms 100 > $(hostname).csv
Any column order or subset, with or without units/header (then pass --query), or
`nvidia-smi dmon` output. Also, recognized from the content: `dcgmi dmon` text (pass
--interval-ms), dcgm-exporter /metrics scrapes, W&B system metrics (CSV, JSON lines),
`nvidia-smi` tables in a loop (a Slurm .out), CSVs with your own column names (--map),
gpustat output in a loop, one-column-per-GPU frames (--wide METRIC), LLview job tables,
whitespace tables (--map, --split-id), Intel Gaudi hl-smi CSVs (--year when the file has
no full date: hl-smi cuts the year), any of them gzip- or zstd-compressed; `-` reads
standard input. A header repeated before every sample is skipped. Host = file name without
extension (same-named files from different folders: a/node0, b/node0). An output flag given an
input log or an existing telemetry log is refused (a glob after --html), unless --force.

Why power: utilization reads 100 % while an NCCL collective spins in a deadlock; board power
does not lie. Every hang comes with the reasons, so you can check the call by eye.

Examples:
  wattwatch triage node0.csv node1.csv
  wattwatch triage node*.csv --json > triage.json
  wattwatch triage gpu.csv --labels labels.csv --fail-on-hang
  wattwatch triage node*.csv --html report.html   # open it in any browser, offline
  wattwatch triage gpu.dmon --interval-ms 100     # dcgmi dmon -e 155,203,1002 -d 100
  wattwatch triage metrics.prom --interval-ms 30000   # curl :9400/metrics in a loop
  wattwatch triage mylog.csv --map power=board_w --map time=t
  wattwatch triage --prometheus http://prom:9090 --start 2026-11-18T01:00:00Z \
      --end 2026-11-18T03:00:00Z --selector '{Hostname=~"node1[0-3]"}' --html incident.html
  wattwatch triage incident.json      # curl .../api/v1/query_range?... > incident.json
  wattwatch triage gpustat.log --interval-ms 2000   # while sleep 2; do gpustat; done
  wattwatch triage wandb_power.csv --wide power     # ,timestamp,GPU 0,...,GPU 7
  wattwatch triage GPU_9438058_node.dat             # LLview: hosts from nodeid
  wattwatch triage gpu.txt --map power=watts --split-id node_gpu
  wattwatch triage hl.csv --year 2026    # hl-smi -Q timestamp,module_id,... -f csv -l 1

Formats (--format; recognized from the content unless given):
)") + InputFormatHelp() +
              R"(

Exit codes: 0 triage ran; 2 unusable input (the message names file, line and field);
3 a hang was found and --fail-on-hang was given.)");
  cmd->add_option(
         "files", flags->files,
         "telemetry logs in any format listed below, one per host ('-': standard input; or "
         "--prometheus URL)")
      ->check(ExistingFileOrStdin());
  AddPrometheusFlags(cmd, flags.get());
  AddForceFlag(cmd, &flags->force);
  cmd->add_flag("--json", flags->json, "print the result as JSON instead of the summary");
  cmd->add_option("--json-out", flags->json_out, "also write the JSON result to this file");
  cmd->add_option("--labels", flags->labels,
                  "write one `host,timestamp,gpu,state` row per input sample ('-': stdout)");
  cmd->add_option(
      "--html", flags->html,
      "also write a self-contained HTML timeline (swimlanes, power, zoom) to this file");
  cmd->add_flag("--fail-on-hang", flags->fail_on_hang, "exit 3 when a hang was found");
  cmd->add_option("--query", flags->query,
                  "the --query-gpu list of a headerless (csv,noheader) log");
  cmd->add_option("--format", flags->format,
                  "auto (default: recognized from the content) or one of " + InputFormatNames())
      ->check(
          [](const std::string& v) {
            auto f = ParseInputFormat(v);
            return f.ok() ? std::string() : f.status().message();
          },
          "FORMAT");
  cmd->add_option("--wide", flags->wide,
                  "what one-column-per-GPU columns without a metric in their name hold ('GPU 0', "
                  "'gpu.3'): power (W), util (%), memory_used (MiB), temperature (C), mem_util, "
                  "memory_total, sm_clock, mem_clock, power_limit")
      ->check(CLI::IsMember({"power", "util", "memory_used", "temperature", "mem_util",
                             "memory_total", "sm_clock", "mem_clock", "power_limit"}));
  cmd->add_option("--split-id", flags->split_id,
                  "COLUMN of a whitespace table holding '<host>_<gpu>' (as LLview's nodeid): "
                  "hosts and GPUs from it");
  cmd->add_option("--year", flags->year,
                  "the year of timestamps whose year the tool cut (hl-smi prints 'UTC 202'), "
                  "when the file has no full date")
      ->check(CLI::Range(1970, 2199));
  cmd->add_option("--map", flags->map,
                  "FIELD=COLUMN for a home-made CSV (repeatable): time, gpu, uuid, name, power, "
                  "power_limit, util, mem_util, memory_used, memory_total, temperature, "
                  "sm_clock, mem_clock");
  cmd->add_option("--interval-ms", flags->interval_ms,
                  "sampling interval of a log without timestamps (dcgmi dmon -d, scrapes of "
                  "dcgm-exporter, nvidia-smi tables without date lines)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}));
  AddHangConfirmFlag(cmd, &flags->triage.hang_confirm_s);
  AddMaxCheckpointFlag(cmd, &flags->triage.max_checkpoint_s);
  AddWorldSizeFlag(cmd, &flags->triage.world_size);
  cmd->add_option("--host-offset", flags->host_offsets,
                  "HOST=SECONDS added to that host's timestamps (repeatable), to correct a clock "
                  "skew the summary notes");
  cmd->add_option("--color", flags->color, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->callback([flags, exit_code] {
    if (flags->files.empty() && flags->prometheus.empty()) {
      std::cerr << "wattwatch triage: give telemetry files or --prometheus URL\n";
      *exit_code = kExitBadInput;
      return;
    }
    if (!TriageOutputsAllowed(*flags)) {
      *exit_code = kExitBadInput;
      return;
    }
    const Result<int> rc = RunTriage(*flags);
    if (!rc.ok()) std::cerr << "wattwatch triage: " << rc.status().message() << "\n";
    *exit_code = rc.ok() ? *rc : kExitBadInput;
  });
}

}  // namespace ww::app
